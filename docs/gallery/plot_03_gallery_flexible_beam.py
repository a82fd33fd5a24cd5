"""
A Craig-Bampton beam: mode shapes and a swinging, bending animation
===================================================================

The shipped beam reduced with 4 fixed-interface modes and the constraint modes of
its far-end interface; three mode shapes drawn with their frequencies, the first one
animated, and the beam swung about z while a tip load bends it (prescribed motion,
coloured by von Mises stress). Small images here.

The full script is ``examples/gallery_flexible_beam.py`` (its source is at the end of this page);
run it with ``python examples/gallery_flexible_beam.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("gallery_flexible_beam")
OUT = Path(tempfile.mkdtemp())
res, written = ex.main(small=True, out=OUT)
show_files(*written)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/gallery_flexible_beam.py
#    :language: python
