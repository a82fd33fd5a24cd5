"""
Tensegrity form-finding by dynamic relaxation
=============================================

Example 2 of Kan, Peng and Chen (2017): a two-stage class-1 tensegrity of 6 bars and
21 cables modelled as spring-damper-actuators, released out of balance; the dampers
dissipate the energy and it settles. Here: 1 s of the 20 s relaxation.

The full script is ``examples/tensegrity.py`` (its source is at the end of this page);
run it with ``python examples/tensegrity.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("tensegrity")
OUT = Path(tempfile.mkdtemp())
out = ex.main(out_dir=str(OUT), t_end=1.0, table_steps=5, plot=True)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/tensegrity.py
#    :language: python
