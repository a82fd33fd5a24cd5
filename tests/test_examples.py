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
