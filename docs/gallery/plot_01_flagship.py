"""
Flagship: a flexible slider-crank, from mesh to animation
=========================================================

A rigid crank turning at 150 rad/s drives an elastic steel connecting rod (a mesh of
30 quadratic hexahedra reduced to 10 Craig-Bampton modes in mean axes, geometric
stiffening on) that pushes a slider. The loop is found and cut automatically and the
absolute formulation integrates it with generalized-alpha. Here: a third of a crank
revolution (the full example runs one revolution).

The full script is ``examples/flagship.py`` (its source is at the end of this page);
run it with ``python examples/flagship.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("flagship")
OUT = Path(tempfile.mkdtemp())
res = ex.main(t_end=0.014, frames=12, gif=OUT / "flagship.gif", png=OUT / "flagship.png")
show_files(OUT / "flagship.png", OUT / "flagship.gif")

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/flagship.py
#    :language: python
