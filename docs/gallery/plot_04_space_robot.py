"""
Free-floating space robot (CFA)
===============================

The free-floating two-arm robot of Liu, Hu and Zhang (2016, section 4): a 400 kg
hexagonal base carrying two six-link arms driven by joint torques, solved with the
Constraint Force Algorithm, which returns every joint reaction with the accelerations.
No external load acts, so linear and angular momentum must stay zero. Here: 1 s of the
10 s run.

The full script is ``examples/space_robot.py`` (its source is at the end of this page);
run it with ``python examples/space_robot.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("space_robot")
OUT = Path(tempfile.mkdtemp())
res = ex.main(t_end=1.0, dt=0.002, out=str(OUT), show=False)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/space_robot.py
#    :language: python
