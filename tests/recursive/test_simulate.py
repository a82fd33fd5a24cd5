"""Explicit integration of recursive systems: conservation laws, failures, example."""

import io
from contextlib import redirect_stdout

import numpy as np
import pytest

from flexmbd.errors import ModelError, SolverError

from .example_scripts import example
from .models import chain, random_state, random_tree


def test_free_floating_momentum_conserved_over_10_s():
    m = random_tree(3, 7, floating=True, gravity=False)
    s = m.compile("recursive")
    q, qd, _ = random_state(s, 3, scale=0.5)
    res = s.simulate(10.0, dt=0.05, integrator="rk45", q0=q, qd0=qd, rtol=1e-10, atol=1e-12)
    assert res.t[-1] == pytest.approx(10.0)
    lin, ang = res.extra["momentum_linear"], res.extra["momentum_angular"]
    assert np.abs(lin[0]).max() > 0.1 and np.abs(ang[0]).max() > 0.1
    assert np.abs(lin - lin[0]).max() < 1e-7 * np.abs(lin[0]).max()
    assert np.abs(ang - ang[0]).max() < 1e-7 * np.abs(ang[0]).max()
    e = res.energy["total"]
    assert np.abs(e - e[0]).max() < 1e-7 * abs(e[0])
    # quaternions stay on the manifold
    assert np.allclose(np.linalg.norm(res.joint("j0").q[:, 3:], axis=1), 1.0, atol=1e-12)


def test_rk4_energy_drift_is_fourth_order():
    m = chain(4, gravity=(0.0, -9.81, 0.0))
    s = m.compile("recursive")
    q0 = np.array([0.3, -0.2, 0.5, 0.1])
    drift = []
    for dt in (0.004, 0.002):
        res = s.simulate(1.0, dt=dt, integrator="rk4", q0=q0, qd0=np.zeros(4))
        e = res.energy["total"]
        drift.append(np.abs(e - e[0]).max())
    assert drift[1] < drift[0] / 10  # ~16 for fourth order
    assert res.qdd.shape == (501, 4) and res.reactions.shape == (501, 4, 6)


def test_rk4_and_adaptive_agree_and_results_hold_histories():
    m = random_tree(8, 5, forces=True)
    s = m.compile("recursive")
    q, qd, _ = random_state(s, 8, scale=0.3)
    a = s.simulate(0.5, dt=0.001, integrator="rk4", q0=q, qd0=qd)
    b = m.simulate(0.5, dt=0.05, integrator="rk45", q0=q, qd0=qd, rtol=1e-11, atol=1e-12)
    assert np.allclose(a.q[::50], b.q, atol=1e-7)
    fd = s.forward_dynamics(b.q[-1], b.qd[-1], t=0.5)
    assert np.allclose(b.qdd[-1], fd.qdd) and np.allclose(b.reactions[-1], fd.reactions)
    assert b.reaction("j2").shape == (len(b.t), 6)


def test_failure_raises_solver_error_with_partial_results():
    s = chain(3).compile("recursive")

    def tau(t, q, qd):
        return np.full(3, np.nan) if t > 0.0505 else np.zeros(3)

    with pytest.raises(SolverError) as info:
        s.simulate(0.2, dt=0.01, integrator="rk4", tau=tau)
    err = info.value
    assert err.partial is not None and err.partial.t[-1] == pytest.approx(0.05)
    assert err.time == pytest.approx(0.06)  # the end of the step that failed
    with pytest.raises(ModelError, match="newmark.*not offered.*rk4"):
        s.simulate(0.1, dt=0.01, integrator="newmark")


def load_example():
    return example("space_robot")


def test_space_robot_example(tmp_path):
    mod = load_example()
    buf = io.StringIO()
    with redirect_stdout(buf):
        res = mod.main(t_end=0.2, dt=0.002, out=tmp_path)
    text = buf.getvalue()
    assert "13 bodies, 13 joints" in text and "momentum check" in text
    assert len(list(tmp_path.glob("*.png"))) == 3
    assert np.abs(res.extra["momentum_linear"]).max() < 1e-8
    assert np.abs(res.extra["momentum_angular"]).max() < 1e-8
    assert np.abs(res.joint("arm1.joint[0]").q).max() > 1e-6  # the arms moved
    # general CFA = serialized CFA on the robot (the paper's 1e-12 check)
    s = res_system = mod.build().compile("recursive")
    fd = res_system.forward_dynamics(res.q[-1], res.qd[-1], t=res.t[-1])
    fg = s.forward_dynamics(res.q[-1], res.qd[-1], t=res.t[-1], algorithm="general")
    assert np.linalg.norm(fd.qdd - fg.qdd) < 1e-12 * np.linalg.norm(fg.qdd)
    assert np.linalg.norm(fd.reactions - fg.reactions) < 1e-12 * np.linalg.norm(fg.reactions)


def test_t_eval_progress_and_constant_tau(capsys):
    s = chain(2).compile("recursive")
    res = s.simulate(
        0.3, integrator="dop853", t_eval=[0.1, 0.2, 0.3], tau=[0.5, -0.2], progress=True
    )
    assert np.allclose(res.t, [0.0, 0.1, 0.2, 0.3])
    assert "100 %" in capsys.readouterr().err
    fd = s.forward_dynamics(res.q[2], res.qd[2], [0.5, -0.2])
    assert np.allclose(res.qdd[2], fd.qdd)
