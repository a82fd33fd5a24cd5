"""Output samples of closed-loop runs: the rows the compiled RK4 steps write (their first
stage is the forward dynamics at the sample), the batched energies and the exact
cut-joint rates equal the separate evaluation at the sampled states to round-off."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.checkpoint import run
from flexmbd.integrators.explicit import tree_stepper
from flexmbd.joint_states import fill_joint_states
from flexmbd.recursive.energy import energy_histories

from .test_compiled_loops import planar_four_bar, spatial_ring


def _close(a, b, rel=1e-9):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert np.abs(a - b).max(initial=0.0) <= rel * max(1.0, np.abs(b).max(initial=0.0))


@pytest.mark.parametrize("build", [spatial_ring, planar_four_bar])
def test_fused_samples_equal_forward_dynamics_at_the_samples(build):
    s = build().compile("recursive")
    st = s.stepper(0.05, dt=1e-3)
    res = run(st, st.t_end, progress=False)
    rows = st.fused_samples()
    # every sample but the last is written by the step that starts there (the first
    # one too where the assembly's QR selected the rows already)
    assert rows is not None and rows["viol"][1:-1, 2].all() and rows["viol"][-1, 2] == 0
    for i in range(0, len(res.t), 7):
        fd = s.forward_dynamics(res.q[i], res.qd[i])
        _close(res.qdd[i], fd.qdd)
        _close(res.reactions[i], fd.reactions)
        _close(res.extra["lambda"][i], fd.lam)
        for b in s.layout.body_names:
            for x, y in zip(
                s.body_accelerations(res.q, res.qd, res.qdd)[b], fd.body_acceleration(b)
            ):
                _close(x[i], y)
    # the fused rows are bit for bit the first stage's: the separate batch agrees
    sep = s.results_from(res.t, np.hstack([res.q, res.qd]), st.tau_f, st.meta(), st.P)
    _close(res.qdd, sep.qdd, 1e-12)
    _close(res.reactions, sep.reactions, 1e-12)
    _close(res.stats["velocity_violation"], sep.stats["velocity_violation"], 1e-6)


def test_batched_energies_equal_the_per_state_methods():
    s = spatial_ring().compile("recursive")
    res = s.simulate(0.05, dt=1e-3, tau=0.1 * np.ones(s.nv))
    tau = 0.1 * np.ones((len(res.t), s.nv))
    batch = energy_histories(s, res.t, res.q, res.qd, tau)
    assert s.energy_samples(res.t, res.q, res.qd, tau) is not None
    for i in range(0, len(res.t), 10):
        _close(batch["kinetic"][i], s.kinetic_energy(res.q[i], res.qd[i]), 1e-13)
        pe = s.potential_energies(res.q[i], res.t[i])
        _close(batch["gravity"][i], pe["gravity"], 1e-13)
        p = s.powers(res.q[i], res.qd[i], res.t[i], tau[i])
        assert p["p_actuator"] == pytest.approx(0.1 * res.qd[i].sum(), rel=1e-13, abs=1e-15)
    # energy balance: the applied joint forces' work goes into T + V
    _close(batch["numerical_dissipation"], 0.0, 1e-6)


def test_cut_joint_rates_are_exact_from_the_samples(monkeypatch):
    """The cut joint's ``qdd`` series from the samples' body accelerations equals the
    central differences of its twist (O(eps^2), eps = 1e-6) and the derivative of its
    speed series along the run."""
    s = spatial_ring().compile("recursive")
    res = s.simulate(0.05, dt=1e-3)
    cut = res.joint_series["j[6]"]
    assert s.body_accelerations(res.q, res.qd, res.qdd) is not None
    assert s.body_accelerations(res.q + 1e-3, res.qd, res.qdd) is None  # another history
    exact = cut.qdd.copy()
    monkeypatch.setattr(s, "body_accelerations", lambda *a: None)  # the differences path
    fill_joint_states(res, s)
    _close(exact, res.joint_series["j[6]"].qdd, 1e-8)
    # and the speed series' time derivative (central differences along the run, O(dt^2))
    d = (cut.qd[2:] - cut.qd[:-2]) / (2e-3)
    _close(exact[1:-1], d, 1e-4)


def test_tree_rk4_samples_equal_forward_dynamics_at_the_samples():
    """A tree's RK4 run takes the samples' accelerations and reactions from the first
    stage of the step that starts there: the same numbers as forward_dynamics there."""
    m = fm.Model("chain")
    parent = m.ground
    for k in range(4):
        b = fm.RigidBody.rod(mass=1.0, length=0.5, radius=0.02, origin="end")
        setattr(m, f"rod{k}", b)
        pf = (0.0 if k == 0 else 0.5, 0.0, 0.0)
        joint = fm.Revolute(parent, b, axis=(0.1 * k, 0.3, 1.0), parent_frame=pf, q0=[0.3 * k])
        setattr(m, f"j{k}", joint)
        parent = b
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    s = m.compile("recursive")
    st = tree_stepper(s, 0.05, dt=1e-3, tau=0.05 * np.ones(s.nv))
    res = run(st, st.t_end, progress=False)
    assert st._rows[2][:-1].all() and not st._rows[2][-1]
    for i in range(len(res.t)):
        fd = s.forward_dynamics(res.q[i], res.qd[i], 0.05 * np.ones(s.nv), res.t[i])
        _close(res.qdd[i], fd.qdd, 1e-12)
        _close(res.reactions[i], fd.reactions, 1e-12)
