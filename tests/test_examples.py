"""Examples double as regression tests (each runs headless with small settings)."""

import importlib.util
import io
from contextlib import redirect_stdout
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_flagship_prints_summary_and_resolved_topology():
    mod = load("flagship")
    buf = io.StringIO()
    with redirect_stdout(buf):
        m = mod.main()
    text = buf.getvalue()
    assert "5 bodies, 7 joints" in text
    # two loops, cut at the joints adding the fewest equations first (the spherical)
    assert [j.name for j in m.cut_joints()] == ["j_close", "j_pin"]
    assert "cut joints: ['j_close', 'j_pin']" in text


def test_readme_example_runs_and_both_formulations_agree():
    """The README's fifteen lines run, and CFA (RK4) and absolute (generalized-alpha) agree."""
    import re

    import numpy as np

    text = (EXAMPLES.parent / "README.md").read_text()
    code = re.search(r"## Fifteen lines\s+```python\n(.*?)```", text, re.S).group(1)
    ns = {}
    with redirect_stdout(io.StringIO()):
        exec(compile(code, "README.md", "exec"), ns)
    res, res2 = ns["res"], ns["res2"]
    # the pendulum swings: the elbow moves far from its initial angle
    assert np.ptp(res.joint("elbow").q) > 0.5
    # same physics in both formulations: shoulder reaction history (second-order vs 4th-order
    # integrators at dt = 1e-3 differ by O(dt^2) ~ 1e-6 relative over the first second)
    k = res.t <= 1.0
    r1, r2 = res.reaction("shoulder")[k], res2.reaction("shoulder")[k]
    assert np.abs(r1 - r2).max() < 1e-4 * np.abs(r1).max()
