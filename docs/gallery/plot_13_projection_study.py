"""
Constraint handling compared: QR, Baumgarte, Moore-Penrose
==========================================================

The four-bar and Andrews' squeezer integrated with the same fixed-step RK4 and the
four constraint methods of :class:`flexmbd.constraints.Projector`: constraint
violations, energy error and CPU time. Here: short runs.

The full script is ``examples/projection_study.py`` (its source is at the end of this page);
run it with ``python examples/projection_study.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("projection_study")
OUT = Path(tempfile.mkdtemp())
out = ex.main(
    four_bar_t_end=0.3,
    four_bar_dt=1e-3,
    andrews_t_end=0.0005,
    andrews_dt=2e-5,
    outdir=OUT,
    plot=True,
)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/projection_study.py
#    :language: python
