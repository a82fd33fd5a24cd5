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
# The same reduced body drawn directly with PyVista: the full mesh deformed by its
# first mode (magnified), coloured by the von Mises stress of that mode shape.
import numpy as np
import pyvista as pv

import flexmbd as fm

body = ex.reduce_beam()
q = np.zeros(body.n_modes)
q[0] = 1.0
grid = fm.viz.deformed_mesh(
    body.nodes,
    body.cells,
    body.cell_type,
    body.modes,
    q,
    scale=0.1 / np.abs(body.modes[:, 0]).max(),
    stress_modes=body.stress_modes.reshape(-1, body.n_modes),
)
plotter = pv.Plotter(window_size=(640, 360))
plotter.add_mesh(
    grid,
    scalars="von_mises",
    show_edges=True,
    cmap="viridis",
    scalar_bar_args={"title": "von Mises stress per unit q1 (Pa)"},
)
plotter.add_axes()
plotter.view_isometric()
plotter.show()

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/gallery_flexible_beam.py
#    :language: python
