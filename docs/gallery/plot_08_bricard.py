"""
Bricard's mechanism: redundant and still mobile
===============================================

Five rods and the ground close a loop of six revolute joints with zero mobility by
Grübler's count, yet the mechanism moves with one degree of freedom: one constraint is
always redundant and the QR projection discards it by itself. Here: 1 s of the 10 s
run; the total energy must stay constant.

The full script is ``examples/bricard.py`` (its source is at the end of this page);
run it with ``python examples/bricard.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("bricard")
OUT = Path(tempfile.mkdtemp())
out = ex.main(t_end=1.0, dt=2e-3, outdir=OUT, plot=True)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/bricard.py
#    :language: python
