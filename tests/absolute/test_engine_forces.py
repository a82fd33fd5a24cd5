"""Force elements in the compiled absolute engine (:mod:`flexmbd.absolute.force_kernels`).

Oracles: the generic numpy path (residual and Newton matrix equal to round-off at random
states), central differences of the engine's own residual (its Jacobians are exact), and
whole simulations equal to the generic path's to the Newton tolerance.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.absolute.engine import Engine
from flexmbd.absolute.force_kernels import forces_add

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "flexible"))
from flex_helpers import small_beam  # noqa: E402


def rigid_model():
    """The seed's SDA slider-crank plus a damped SDA to the ground with a time-dependent
    actuator, a body-axes point force and world/body-axes torques."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import sda_slider_crank as ex

    m = ex.build(k=2e4, c=30.0, fa=5.0)
    m.spring2 = fm.SpringDamperActuator(
        m.ground,
        (0.3, 1.2, 0.1),
        m.rod,
        (0.5, 0.02, 0.0),
        k=800.0,
        c=12.0,
        fa=lambda t: 20.0 * np.sin(3.0 * t),
    )
    m.f_body = fm.PointForce(
        m.rod, (0.4, 0.05, -0.02), lambda t: (5.0 * t, -3.0, 1.0), frame="body"
    )
    m.n_world = fm.PointTorque(m.crank, (0.0, 0.0, 40.0))
    m.n_body = fm.PointTorque(m.rod, (1.0, -2.0, 30.0), frame="body")
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    return m


def flexible_model():
    """A beam on a revolute joint with SDAs at its deforming interface and point frames (to
    the ground, to a rigid body), a rigid-rigid SDA, and point loads at deforming frames in
    world and body axes."""
    rb = small_beam(3, "cb", rayleigh=(0.5, 1e-3))
    m = fm.Model("flex_forces")
    m.beam = fm.FlexibleBody(rb, geometric_stiffening=False)
    m.tip = fm.RigidBody(2.0, (0.1, 0.2, 0.3), com=(0.05, 0.02, -0.01))
    m.j0 = fm.Revolute(
        m.ground,
        m.beam,
        axis=(0.0, 0.0, 1.0),
        parent_frame=(0, 0.025, 0.025),
        child_frame=m.beam.interface("A"),
    )
    m.j1 = fm.Spherical(
        m.beam, m.tip, parent_frame=m.beam.interface("B"), child_frame=(0.05, 0.0, 0.0)
    )
    m.s_ground = fm.SpringDamperActuator(
        m.ground, (1.0, 0.8, 0.3), m.beam, m.beam.interface("B"), k=3e3, c=20.0, fa=15.0
    )
    m.s_tip = fm.SpringDamperActuator(
        m.beam, m.beam.point((0.5, 0.05, 0.05)), m.tip, (0.1, 0.1, 0.0), k=2e3, c=8.0
    )
    m.s_rigid = fm.SpringDamperActuator(
        m.tip, (0.0, 0.1, 0.0), m.ground, (1.5, 0.5, 0.0), k=500.0, c=3.0
    )
    m.f1 = fm.PointForce(m.beam, m.beam.interface("B"), (10.0, -20.0, 5.0))
    m.f2 = fm.PointForce(m.beam, m.beam.point((0.75, 0.0, 0.05)), (3.0, 4.0, -2.0), frame="body")
    m.f3 = fm.PointForce(m.tip, (0.02, 0.0, 0.01), (1.0, 2.0, 3.0), frame="body")
    m.g = fm.Gravity((0.3, -9.81, 0.5))
    return m


def random_state(s, rng, modal=2e-3):
    q = rng.normal(size=s.n)
    qd = rng.normal(size=s.n)
    qdd = rng.normal(size=s.n)
    for i in range(s.nb):
        q[7 * i + 3 : 7 * i + 7] /= np.linalg.norm(q[7 * i + 3 : 7 * i + 7])
    q[s.n_rigid :] *= modal
    qd[s.n_rigid :] *= 10 * modal
    qdd[s.n_rigid :] *= 100 * modal
    lam = rng.normal(size=s.nc) * 10
    return q, qd, qdd, lam


@pytest.fixture(scope="module", params=["rigid", "flexible"])
def system(request):
    m = rigid_model() if request.param == "rigid" else flexible_model()
    return m.compile("absolute")


def test_engine_supports_force_elements(system):
    assert Engine.supports(system)
    ft = system.engine().ft
    assert len(ft.sda) + len(ft.loads) >= 5


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_terms_equal_generic_path(system, seed, sparse):
    """Residual and Newton matrix of the engine = the generic path's, to round-off (dense
    storage and the compressed layout of the sparse solve)."""
    s = system
    eng = Engine(s, sparse=sparse)
    rng = np.random.default_rng(seed)
    q, qd, qdd, lam = random_state(s, rng)
    coefs = rng.uniform(0.5, 2.0, 5)
    t = 0.37
    r, phi, A = eng.terms(q, qd, qdd, lam, t, coefs)
    T = s.dae_terms(q, qd, qdd, lam, t)
    Aref = s.iteration_matrix(T, *coefs).toarray()
    rref = T.R + T.PtL - T.Q
    assert np.abs(r - rref).max() <= 1e-12 * np.abs(rref).max()
    assert np.abs(A - Aref).max() <= 1e-12 * np.abs(Aref).max()
    # the applied forces alone (the residual with and without them)
    Q = T.Q
    assert np.abs(Q).max() > 1.0


def _forces(ft, q, qd, jac=False):
    """``(Q, -dQ/dq, -dQ/dqd)`` of the compiled SDAs and point loads alone."""
    n = len(q)
    Q = np.zeros(n)
    AK = np.zeros((n, n))
    AD = np.zeros((n, n))
    args = (ft.s_int, ft.s_flt, ft.s_U, ft.fa, ft.l_int, ft.l_flt, ft.l_U, ft.F)
    cm = np.arange(n)  # the dense layout
    forces_add(q, qd, *args, Q, AK, cm, 1.0, 0.0, jac)
    if jac:
        forces_add(q, qd, *args, np.zeros(n), AD, cm, 0.0, 1.0, True)
    return Q, AK, AD


@pytest.mark.parametrize("seed", range(2))
def test_force_jacobians_equal_central_differences(system, seed):
    """``dQ/dq`` and ``dQ/dqd`` of the compiled force elements vs central differences of
    their ``Q`` (exact in every direction at unit Euler parameters)."""
    s = system
    ft = s.engine().ft
    ft.at(0.21)
    rng = np.random.default_rng(10 + seed)
    q, qd, _, _ = random_state(s, rng)
    n = s.n
    _, AK, AD = _forces(ft, q, qd, jac=True)
    Kfd = np.zeros((n, n))
    Dfd = np.zeros((n, n))
    for j in range(n):
        d = np.zeros(n)
        d[j] = 1e-6
        Kfd[:, j] = (_forces(ft, q + d, qd)[0] - _forces(ft, q - d, qd)[0]) / 2e-6
        Dfd[:, j] = (_forces(ft, q, qd + d)[0] - _forces(ft, q, qd - d)[0]) / 2e-6
    errK = np.abs(-AK - Kfd).max() / np.abs(Kfd).max()
    errD = np.abs(-AD - Dfd).max() / np.abs(Dfd).max()
    print(f"relative error dQ/dq {errK:.1e}, dQ/dqd {errD:.1e}")
    assert np.abs(Kfd).max() > 1.0 and np.abs(Dfd).max() > 1.0
    # central differences with h = 1e-6: round-off eps |Q| / h ~ 1e-7 of the damping entries
    assert errK < 1e-6
    assert errD < 1e-6


def test_simulation_equals_generic_path(system):
    """Whole runs: the compiled engine and the generic path (its oracle) give the same
    trajectories to the Newton tolerance, and the same energy balance (spring energy,
    damper, actuator and external works)."""
    rigid = system.model.name == "sda_slider_crank"
    opts = (
        dict(integrator="newmark", beta=0.25, gamma=0.5, dt=0.01)
        if rigid
        else dict(integrator="generalized-alpha", rho_inf=0.8, dt=1e-3)
    )
    t_end = 20 * opts["dt"]
    fast = system.simulate(t_end, tol=1e-10, **opts)
    ref = system.simulate(t_end, tol=1e-10, engine=False, **opts)
    scale = np.abs(ref.q).max()
    assert np.abs(fast.q - ref.q).max() <= 1e-8 * scale
    assert np.abs(fast.reactions - ref.reactions).max() <= 1e-6 * np.abs(ref.reactions).max()
    for key in ("spring", "damper_work", "actuator_work", "external_work", "total"):
        a, b = fast.energy[key], ref.energy[key]
        assert np.abs(a - b).max() <= 1e-7 * max(1.0, np.abs(b).max()), key
    assert np.abs(ref.energy["external_work"]).max() > 1e-2  # the loads do work
    assert np.abs(ref.energy["damper_work"]).max() > 1e-9
    stats = fast.stats["newton_iterations"][1:]
    assert np.array_equal(stats, ref.stats["newton_iterations"][1:])


def test_compiled_constraint_terms_and_one_evaluation_per_run(system, monkeypatch):
    """Phi and Phi_q from the compiled constraint kernel equal the Python evaluation to
    round-off; a run on the engine (``engine="auto"``) evaluates them once before its
    first step (the admission's rank test and the initial violation share the call)."""
    s = system
    eng = s.engine()
    rng = np.random.default_rng(4)
    for t in (0.0, 0.61):
        q = random_state(s, rng)[0]
        phi, P = eng.constraint_and_jacobian(q, t)
        ref, Pref = s.constraint(q, t), s.constraint_jacobian(q, t).toarray()
        assert np.abs(phi - ref).max() <= 1e-14 * max(1.0, np.abs(ref).max())
        assert np.abs(P.toarray() - Pref).max() <= 1e-14 * np.abs(Pref).max()
        np.testing.assert_array_equal(eng.constraint(q, t), phi)
        np.testing.assert_array_equal(eng.constraint_jacobian(q, t).toarray(), P.toarray())
    calls = []
    terms = Engine._constraint_terms
    monkeypatch.setattr(
        Engine, "_constraint_terms", lambda self, q, t: calls.append(t) or terms(self, q, t)
    )
    res = s.simulate(2e-3, dt=1e-3, integrator="newmark", engine="auto")
    assert len(calls) == 1  # two before: the rank test's Phi_q, then Phi
    assert res.stats["constraint_violation"][0] < 1e-10


def test_exact_jacobian_switch_kept():
    """``exact_jacobian=False`` leaves the SDA out of the engine's Newton matrix, as the
    generic path does (the seed paper's comparison: more Newton corrections)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import sda_slider_crank as ex

    its = {}
    for exact in (True, False):
        s = ex.build(k=1e5, exact_jacobian=exact).compile("absolute")
        assert Engine.supports(s)
        r = s.simulate(
            0.2, dt=0.01, integrator="newmark", beta=0.25, gamma=0.5, tol=1e-7, energy=False
        )
        g = s.simulate(
            0.2,
            dt=0.01,
            integrator="newmark",
            beta=0.25,
            gamma=0.5,
            tol=1e-7,
            energy=False,
            engine=False,
        )
        assert np.array_equal(r.stats["newton_iterations"], g.stats["newton_iterations"])
        its[exact] = r.stats["newton_iterations"][1:].mean()
    assert its[False] > its[True]


def test_rigid_block_equals_numpy_reference():
    """The compiled rigid-body block (:func:`flexmbd.flexible._nbbody.rigid_block`) equals
    the numpy reference :meth:`flexmbd.absolute.inertia.BodyInertia.residual` to round-off
    (residual, mass matrix and both Jacobian blocks) at random states."""
    from flexmbd.absolute.inertia import BodyInertia
    from flexmbd.flexible._nbbody import rigid_block

    rng = np.random.default_rng(3)
    for _ in range(5):
        m = rng.uniform(0.5, 3.0)
        c = rng.normal(size=3)
        B = rng.normal(size=(3, 3))
        J = B @ B.T + np.eye(3)
        e = rng.normal(size=4)
        e /= np.linalg.norm(e)
        ed, rdd, edd = rng.normal(size=4), rng.normal(size=3), rng.normal(size=4)
        inertia = BodyInertia([])
        inertia.m, inertia.c, inertia.J, inertia.nb = np.array([m]), c[None], J[None], 1
        q = np.concatenate([np.zeros(3), e])
        qd = np.concatenate([np.zeros(3), ed])
        qdd = np.concatenate([rdd, edd])
        R, M, K, D = inertia.residual(q, qd, qdd)
        ref = [R, M[0], K[0], D[0]]
        out = [np.zeros(7), np.zeros((7, 7)), np.zeros((7, 7)), np.zeros((7, 7))]
        rigid_block(m, c, J, e, ed, rdd, edd, *out, np.zeros((29, 4)), True)
        for a, b in zip(out, ref):
            assert np.abs(a - b).max() <= 1e-13 * max(1.0, np.abs(b).max())
        r_only = np.zeros(7)
        rigid_block(m, c, J, e, ed, rdd, edd, r_only, *out[1:], np.zeros((29, 4)), False)
        assert np.abs(r_only - ref[0]).max() <= 1e-13 * np.abs(ref[0]).max()
