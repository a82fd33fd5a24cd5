"""
Planar four-bar through its singular configuration
==================================================

The parallelogram four-bar of Wang et al. (2025) swings through the configuration
where all bars are collinear and the cut-joint equations lose rank. The QR projection
keeps the motion on the right branch; the cut-joint force is compared with an
independent one-degree-of-freedom reference. Here: 0.8 s of the 10 s run, at twice
the step, and without the spatial four-bar of the full example.

The full script is ``examples/four_bar.py`` (its source is at the end of this page);
run it with ``python examples/four_bar.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("four_bar")
OUT = Path(tempfile.mkdtemp())
out = ex.main(t_end=0.8, dt=2e-3, outdir=OUT, plot=True, spatial_t_end=0)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/four_bar.py
#    :language: python
