"""One Results shape for every (formulation, integrator) pair the registry offers.

The README's double pendulum, a planar four-bar (a closed loop: a cut joint in the
recursive formulation) and the README's flexible pendulum (small) run with every pair;
the same Results calls work on every run (joint coordinates, speeds, rates and
reactions of every joint, cut joints included; body poses; fixed energy fields;
solver statistics), and the runs agree across formulations within the integrators'
errors. Joint speeds computed from the bodies' twists are checked against the time
derivative of the joint coordinates, and angles are continuous across +-pi.
"""

import numpy as np
import pytest
from models import double_pendulum, flexible_pendulum, four_bar

import flexmbd as fm
from flexmbd.integrators import registry
from flexmbd.results import ENERGY_FIELDS

PAIRS = registry.valid_pairs()
REF = ("recursive", "dop853")


def _run_all(build, t_end, dt, **kw):
    out = {}
    for formulation, name in PAIRS:
        opts = dict(kw.get(formulation, {}))
        out[(formulation, name)] = build().simulate(
            t_end, dt=dt, integrator=name, formulation=formulation, **opts
        )
    return out


@pytest.fixture(scope="module")
def pendulum_runs():
    return double_pendulum(), _run_all(double_pendulum, 0.2, 1e-3)


@pytest.fixture(scope="module")
def four_bar_runs():
    return four_bar(), _run_all(four_bar, 0.2, 1e-3)


def _check_shape(model, res):
    nt = len(res.t)
    for j in model.joints():
        h = res.joint(j.name)
        assert h.q.shape == (nt, j.nq) and h.qd.shape == (nt, j.nv), j.name
        assert h.qdd.shape == (nt, j.nv) and h.reaction.shape == (nt, 6), j.name
        assert np.all(np.isfinite(h.q)) and np.all(np.isfinite(h.qd)), j.name
        assert np.all(np.isfinite(h.qdd)) and np.all(np.isfinite(h.reaction)), j.name
        # speeds are the rates of the (continuous) angles: central differences, O(dt^2)
        dq = np.gradient(h.q[:, 0], res.t)
        assert np.abs(dq[1:-1] - h.qd[1:-1, 0]).max() < 2e-3 * (1 + np.abs(h.qd).max())
    for b in model.bodies():
        assert res.body(b.name).position.shape == (nt, 3)
        assert res.body(b.name).orientation.shape == (nt, 4)
    for k in ENERGY_FIELDS:
        v = res.energies[k]
        assert v is None or v.shape == (nt,)
    for k in ("kinetic", "potential", "total"):
        assert res.energies[k] is not None
    np.testing.assert_allclose(
        res.energies.total, res.energies.kinetic + res.energies.potential, atol=1e-12
    )
    assert res.stats, "solver statistics in every formulation"
    if res.meta["formulation"] == "absolute":
        assert np.all(res.stats["newton_iterations"][1:] >= 0)
    else:
        assert np.all(np.diff(res.stats["rhs_evaluations"]) >= 0)
        assert np.all(res.stats["step_size"][1:] > 0)


def _agree(model, runs, tol_q, tol_r, tol_x, tol_qd=None, tol_qdd=None):
    ref = runs[REF]
    tol_qd = 50 * tol_q if tol_qd is None else tol_qd
    tol_qdd = 500 * tol_q if tol_qdd is None else tol_qdd
    for key, res in runs.items():
        _check_shape(model, res)
        for j in model.joints():
            a, b = res.joint(j.name), ref.joint(j.name)
            assert np.abs(a.q[-1] - b.q[-1]).max() < tol_q, (key, j.name)
            assert np.abs(a.qd[-1] - b.qd[-1]).max() < tol_qd, (key, j.name)
            assert np.abs(a.qdd[-1] - b.qdd[-1]).max() < tol_qdd, (key, j.name)
            assert np.abs(a.reaction[-1] - b.reaction[-1]).max() < tol_r, (key, j.name)
        for bdy in model.bodies():
            d = res.body(bdy.name).position[-1] - ref.body(bdy.name).position[-1]
            assert np.abs(d).max() < tol_x, (key, bdy.name)


def test_double_pendulum_same_results_in_every_pair(pendulum_runs):
    model, runs = pendulum_runs
    assert len(runs) == 7
    _agree(model, runs, tol_q=1e-4, tol_r=5e-3, tol_x=1e-4)


def test_four_bar_cut_joint_in_every_pair(four_bar_runs):
    """The cut joint's coordinates, continuous, agree with the absolute formulation's."""
    model, runs = four_bar_runs
    _agree(model, runs, tol_q=1e-4, tol_r=5e-2, tol_x=1e-4)
    for res in runs.values():
        # loop closure read from the joint coordinates: the four angles sum to 0 (mod 2 pi)
        s = sum(res.joint(j).q[:, 0] for j in "abcd")
        k = np.round(s / (2 * np.pi))
        assert np.abs(s - 2 * np.pi * k).max() < 1e-6
        assert np.all(k == k[0])


def test_cut_joint_history_is_saved(four_bar_runs, tmp_path):
    model, runs = four_bar_runs
    res = runs[("recursive", "rk4")]
    owners = {o for o, _ in res.coordinates}
    cut = [j.name for j in model.joints() if j.name not in owners]
    assert cut, "the four-bar has a cut joint in the recursive formulation"
    res.save(tmp_path / "run.h5")
    back = fm.Results.load(tmp_path / "run.h5")  # no system: read from the file
    for name in cut:
        np.testing.assert_array_equal(back.joint(name).q, res.joint(name).q)
        np.testing.assert_array_equal(back.joint(name).qd, res.joint(name).qd)


def test_system_simulate_gives_body_poses_and_joints():
    m = double_pendulum()
    for formulation in ("recursive", "absolute"):
        res = m.compile(formulation).simulate(0.02, dt=1e-3)
        assert res.body("lower").position.shape == (len(res.t), 3)
        assert res.joint("elbow").q.shape == (len(res.t), 1)


def test_angles_are_continuous_past_pi():
    """A pendulum spinning over the top: the absolute formulation's joint angle leaves
    (-pi, pi] continuously and matches the recursive formulation's."""

    def spinner():
        m = fm.Model("spinner")
        m.link = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
        m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1), q0=[3.0], qd0=[10.0])
        return m

    a = spinner().simulate(0.5, dt=1e-3, integrator="rk4")
    b = spinner().simulate(0.5, dt=1e-3, integrator="generalized-alpha")
    qa, qb = a.joint("hinge").q[:, 0], b.joint("hinge").q[:, 0]
    assert qa[-1] == pytest.approx(8.0, abs=1e-9)  # free spin, no gravity
    assert qb[0] == pytest.approx(3.0, abs=1e-12)
    # generalized-alpha's phase error of a free rotation: ~2.3e-8 rad per step at dt = 1e-3
    assert np.abs(qa - qb).max() < 2e-5
    assert np.all(np.diff(qb) > 0)
    # the speed of the index-3 scheme's state (error ~2e-6 rad/s), read through the map
    np.testing.assert_allclose(b.joint("hinge").qd[:, 0], 10.0, atol=1e-5)
    w = b.system.body_states(b.q[-1], b.qd[-1])["link"][2]  # world angular velocity
    assert b.joint("hinge").qd[-1, 0] == pytest.approx(w[2], abs=1e-12)


def test_flexible_pendulum_in_every_pair():
    model = flexible_pendulum()
    runs = _run_all(flexible_pendulum, 0.02, 1e-4)
    n = model.beam.n_modes
    for res in runs.values():
        assert res.body("beam").modal.shape == (len(res.t), n)
        d = res.body("beam").modal[-1] - runs[REF].body("beam").modal[-1]
        assert np.abs(d).max() < 5e-6  # measured 1.9e-6 (implicit)
    # Angles, positions and modal coordinates agree closely (measured: 7e-7 rad, 2e-8 m).
    # Speeds, rates and reactions of the implicit schemes differ more (measured 1.5e-3
    # rad/s, 1.9 rad/s^2 of 45, 1.6 N of 24 N at t = 0.02 s): at dt = 1e-4 they do not
    # resolve the stiff constraint (interface) modes, whose coordinates times their
    # stiffness make the hinge force; the three implicit schemes agree with each other.
    ref = runs[REF].joint("hinge")
    _agree(
        model,
        runs,
        tol_q=5e-6,
        tol_x=1e-7,
        tol_qd=5e-3,
        tol_qdd=0.1 * np.abs(ref.qdd[-1]).max(),
        tol_r=0.1 * np.abs(ref.reaction[-1]).max(),
    )
