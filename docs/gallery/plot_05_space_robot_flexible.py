"""
Space robot with flexible arm links
===================================

The same robot with links 2 and 3 of arm 1 made finite-element beams (Craig-Bampton,
4 fixed-interface modes each), solved recursively: the CFA extended to flexible bodies
keeps the modal coordinates as body-internal degrees of freedom. Here: 0.2 s.

The full script is ``examples/space_robot_flexible.py`` (its source is at the end of this page);
run it with ``python examples/space_robot_flexible.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("space_robot_flexible")
OUT = Path(tempfile.mkdtemp())
res_f, res_r = ex.main(t_end=0.2, dt=2e-3, substeps=4, out=str(OUT), show=False)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/space_robot_flexible.py
#    :language: python
