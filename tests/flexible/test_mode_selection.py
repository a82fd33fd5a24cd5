"""The mode-selection study (``examples/mode_selection_study.py``) with small settings.

Physics asserted: two different bases of many modes reach the same limit (the
reference is converged); normal modes alone converge slowly for a rod loaded through
its pins while static correction and Ritz vectors, built from the pin forces, are an
order of magnitude better at the same size; Craig-Bampton with rigid end faces
converges to a different (stiffer) structure than the distributing attachment.
"""

import io
from contextlib import redirect_stdout

from test_flexible_examples import load


def test_mode_selection_small(tmp_path):
    ms = load("mode_selection_study")
    buf = io.StringIO()
    with redirect_stdout(buf):
        out = ms.main(
            t_end=0.004,
            dt=1.25e-5,
            mode_counts=(4, 8),
            reference_modes=24,
            chain_segments=0,
            outdir=tmp_path,
        )
    rows = out["rows"]
    assert out["reference_check"] < 1e-4
    nm4, nm8 = rows[("normal modes", 4)]["err"], rows[("normal modes", 8)]["err"]
    assert nm8 < nm4
    for kind in ("normal + static correction", "Ritz vectors"):
        assert rows[(kind, 8)]["err"] < nm8 / 5, kind
    assert ("Craig-Bampton", 4) not in rows and ("Craig-Bampton", 8) in rows
    assert out["rigid_faces"] > 5 * out["reference_check"]
    assert (tmp_path / "mode_selection.png").stat().st_size > 10_000
    text = (tmp_path / "mode_selection.md").read_text()
    assert "| 8 |" in text and "Ritz vectors" in text and text == out["text"]
