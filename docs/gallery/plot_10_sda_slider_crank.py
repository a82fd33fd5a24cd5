"""
Slider-crank with a spring-damper-actuator: exact Jacobians
===========================================================

Example 1 of Kan, Peng and Chen (2017): Newton iterations per step with and without
the exact Jacobian of the spring-damper-actuator, as the stiffness and damping grow.
Here: three stiffnesses, two dampings and 15 steps.

The full script is ``examples/sda_slider_crank.py`` (its source is at the end of this page);
run it with ``python examples/sda_slider_crank.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("sda_slider_crank")
OUT = Path(tempfile.mkdtemp())
out = ex.main(
    out_dir=str(OUT),
    k_values=(1e2, 1e4, 1e6),
    c_values=(1e1, 1e4),
    steps=15,
    static_k=(2e4,),
    plot=True,
)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/sda_slider_crank.py
#    :language: python
