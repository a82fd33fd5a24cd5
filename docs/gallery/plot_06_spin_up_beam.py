"""
Spin-up beam: geometric stiffening
==================================

A 10 m cantilever spun up from rest to 6 rad/s, above its first bending frequency
(Kane, Ryan and Banerjee 1987). Without geometric stiffening the tip deflection grows
without bound; with the unit geometric-stiffness matrices it stays small. Here: the
first 3 s, coarse steps and a coarse rigid-segment reference.

The full script is ``examples/spin_up_beam.py`` (its source is at the end of this page);
run it with ``python examples/spin_up_beam.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("spin_up_beam")
OUT = Path(tempfile.mkdtemp())
out = ex.main(t_end=3.0, dt=2e-2, n_segments=8, plot=True, outdir=OUT)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/spin_up_beam.py
#    :language: python
