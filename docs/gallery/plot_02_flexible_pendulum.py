"""
Flexible pendulum
=================

A 1 m steel beam (the shipped hexahedral mesh ``meshes/beam_hex.msh``) reduced to
Craig-Bampton modes with its x = 0 face as a rigid interface, hinged there and
released from the horizontal under gravity (-y). Here: 4 modes and 0.1 s; the full
example runs 8 modes for 1 s.

The full script is ``examples/flexible_pendulum.py`` (its source is at the end of this page);
run it with ``python examples/flexible_pendulum.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("flexible_pendulum")
OUT = Path(tempfile.mkdtemp())
out = ex.main(t_end=0.1, n_modes=4, outdir=OUT)
show_files(OUT / "flexible_pendulum.png")

# %%
# The deformed beam at the end of the run, drawn 200 times magnified and coloured
# by the true displacement magnitude (m).
import flexmbd as fm

fm.viz.show(
    out["results"],
    file=OUT / "pendulum_end.png",
    model=out["model"],
    scale=200.0,
    view="xy",
    window_size=(640, 400),
)
show_files(OUT / "pendulum_end.png")

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/flexible_pendulum.py
#    :language: python
