"""
Flexible slider-crank: Simeon's benchmark against the Test Set
==============================================================

Three models of Simeon's slider-crank -- the Test Set's own reduced model entered as
modal data, a meshed rod and a rigid-segment chain -- compared with the published
reference solution. Here: 10 ms and coarse references.

The full script is ``examples/flexible_slider_crank.py`` (its source is at the end of this page);
run it with ``python examples/flexible_slider_crank.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("flexible_slider_crank")
OUT = Path(tempfile.mkdtemp())
out = ex.main(t_end=0.01, testset_dts=(2e-5, 1e-5), n_segments=(10, 20), plot=True, outdir=OUT)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/flexible_slider_crank.py
#    :language: python
