"""The flexible-body examples with small settings (headless)."""

import importlib.util
import io
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_flexible_pendulum_small(tmp_path):
    mod = load("flexible_pendulum")
    buf = io.StringIO()
    with redirect_stdout(buf):
        out = mod.main(t_end=0.05, n_modes=4, outdir=tmp_path)
    res = out["results"]
    assert "Newton corrections per step" in buf.getvalue()
    assert (tmp_path / "flexible_pendulum.png").exists()
    assert res.stats["newton_iterations"][1:].max() <= 3
    assert res.body("beam").modal.shape == (51, 4)
    # released horizontally: the tip falls like the rigid pendulum, plus a small sag
    assert out["tip"][-1][1] < 0.025 - 1e-2 and 1e-7 < np.abs(out["deflection"]).max() < 1e-4
    E = res.energy["total"]
    assert abs(E[-1] - E[0]) < 1e-5 * abs(res.energy["kinetic"]).max() + 1e-9
    # nodal displacements and stresses on demand from the modal history
    U = out["model"].beam.displacements(res.body("beam").modal)
    assert U.shape == (51, out["reduced"].n_nodes, 3)
    S = out["model"].beam.stresses(res.body("beam").modal[-1])
    assert S.shape == (out["reduced"].n_nodes, 6) and np.abs(S).max() > 0


def test_spin_up_stiffening_bounds_the_deflection():
    mod = load("spin_up_beam")
    with redirect_stdout(io.StringIO()):
        out = mod.main(t_end=14.0, dt=2e-2, n_segments=8, reference=False, plot=False)
    t, w = out["stiffened"]
    # published behaviour: ~ -0.57 m during the spin-up, back to a few cm at t = 14 s
    assert 0.5 < np.abs(w).max() < 0.65 and abs(w[-1]) < 0.05
    tu, wu = out["unstiffened"]
    # runs away above the first bending frequency: stopped (flexmbd.monitor) once the
    # deflection exceeds the beam's length, the results up to then kept
    assert out["unstiffened_failed"] is not None and out["stiffened_failed"] is None
    assert 1.0 < np.abs(wu[-1]) <= 10.01 and tu[-1] < 14.0
    assert np.abs(wu[tu < 5]).max() < 0.6  # ... but not during the slow start


def test_spin_up_matches_the_nonlinear_reference():
    mod = load("spin_up_beam")
    with redirect_stdout(io.StringIO()):
        out = mod.main(t_end=3.0, dt=2e-2, n_segments=8, plot=False)
    assert out["difference"] < 0.02
