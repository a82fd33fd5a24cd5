"""The flexmbd.pyomo examples at their small settings (need the "pyomo" extra)."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("pyomo")
pytest.importorskip("cyipopt")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))


@pytest.fixture(autouse=True)
def _ready():
    import flexmbd.pyomo as fmo
    from flexmbd.errors import FlexmbdError

    try:
        fmo.require_pyomo()
    except FlexmbdError as err:
        pytest.skip(str(err))


def test_identification_recovers_damping_and_friction_within_2_percent(tmp_path):
    import pyomo_identification as ex

    out = ex.main(**ex.QUICK, outdir=tmp_path)
    assert abs(out["error"]["zeta"]) < 0.02
    assert abs(out["error"]["c"]) < 0.02
    assert out["iterations"] < 100
    assert (tmp_path / "pyomo_identification.png").stat().st_size > 10_000
