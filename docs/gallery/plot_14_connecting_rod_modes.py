"""
Which mode set describes a connecting rod?
==========================================

A connecting rod clamped at the big end and loaded at the small end: several mode
sets of similar size compared with the full finite-element model (frequency errors,
static and truncation errors, transient response). Here: a coarse mesh of the same
rod (``small=True``).

The full script is ``examples/connecting_rod_modes.py`` (its source is at the end of this page);
run it with ``python examples/connecting_rod_modes.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("connecting_rod_modes")
OUT = Path(tempfile.mkdtemp())
table = ex.main(small=True, write=False)
print(table)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/connecting_rod_modes.py
#    :language: python
