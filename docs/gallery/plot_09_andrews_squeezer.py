"""
Andrews' squeezing mechanism
============================

The seven-body benchmark of Hairer and Wanner with the Test Set's reference
solution, modelled with the model API (tree-joint coordinates, cut joints found
automatically). Here: 3 ms of the 30 ms run at a looser tolerance.

The full script is ``examples/andrews_squeezer.py`` (its source is at the end of this page);
run it with ``python examples/andrews_squeezer.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("andrews_squeezer")
OUT = Path(tempfile.mkdtemp())
out = ex.main(t_end=0.003, rtol=1e-9, atol=1e-11, outdir=OUT, plot=True)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/andrews_squeezer.py
#    :language: python
