"""
N four-bar mechanisms in series
===============================

The IFToMM benchmark A02: N parallelograms sharing their cranks, all singular at
once whenever the cranks pass the horizontal. Here: N = 4 for 1.1 s (the full
example: N = 40 for 20 s).

The full script is ``examples/n_four_bar.py`` (its source is at the end of this page);
run it with ``python examples/n_four_bar.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("n_four_bar")
OUT = Path(tempfile.mkdtemp())
out = ex.main(N=4, t_end=1.1, dt=2e-3, outdir=OUT, plot=True)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/n_four_bar.py
#    :language: python
