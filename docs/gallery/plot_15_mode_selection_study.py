"""
Mode selection on the flexible slider-crank
===========================================

The four reduction strategies compared on Simeon's slider-crank against a converged
reference: the error of the rod's midpoint deflection versus the number of modal
coordinates. Here: 4 ms and 4 or 8 modes; the numbers of the full study are in
:doc:`/benchmarks`.

The full script is ``examples/mode_selection_study.py`` (its source is at the end of this page);
run it with ``python examples/mode_selection_study.py``.
"""

# %%
# Run the example with small settings; its pictures are written to a temporary
# directory and shown below.
import tempfile
from pathlib import Path

from gallery_files import load_example, pictures, show_files  # noqa: F401 (docs helpers)

ex = load_example("mode_selection_study")
OUT = Path(tempfile.mkdtemp())
out = ex.main(
    t_end=0.004, dt=1.25e-5, mode_counts=(4, 8), reference_modes=24, chain_segments=0, outdir=OUT
)
pictures(OUT)

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/mode_selection_study.py
#    :language: python
