"""Joint forces in the compiled absolute engine (:mod:`flexmbd.absolute.force_kernels`).

Oracles: central differences of the engine's own residual (its Jacobians are exact in every
direction at unit Euler parameters), the generic numpy path (:class:`JointForceMap`: the
same residual at random states, the same whole runs), and a hand-derived motion (a
torsion pendulum's period).
"""

import numpy as np
import pytest
from numba import cfunc, typeof

import flexmbd as fm
from flexmbd.absolute import engine
from flexmbd.absolute.engine import Engine
from flexmbd.absolute.force_kernels import joint_forces_add


def chain_model():
    """A revolute-revolute-prismatic chain with a cylindrical joint to a fourth body: a
    torsion spring-damper-actuator (time-dependent actuator), a constant torque, a linear
    spring-damper on the slide and a constant (torque, force) pair on the cylinder."""
    m = fm.Model("joint_forces")
    m.a = fm.RigidBody(2.0, (0.05, 0.2, 0.2), com=(0.3, 0.0, 0.02))
    m.b = fm.RigidBody(1.5, (0.04, 0.1, 0.12), com=(0.25, 0.01, 0.0))
    m.c = fm.RigidBody(0.8, (0.01, 0.02, 0.02), com=(0.0, 0.02, 0.0))
    m.d = fm.RigidBody(0.5, (0.01, 0.01, 0.02), com=(0.0, 0.0, 0.05))
    m.ja = fm.Revolute(m.ground, m.a, axis=(0.0, 0.0, 1.0), parent_frame=(0.0, 0.0, 0.1))
    m.jb = fm.Revolute(m.a, m.b, axis=(0.0, 0.6, 0.8), parent_frame=(0.6, 0.0, 0.0), q0=0.3)
    m.jc = fm.Prismatic(m.b, m.c, axis=(1.0, 0.0, 0.0), parent_frame=(0.2, 0.05, 0.0), q0=0.1)
    m.jd = fm.Cylindrical(m.c, m.d, axis=(0.0, 1.0, 0.0), child_frame=(0.01, 0.0, 0.02))
    m.ta = fm.JointForce.spring_damper(
        m.ja, 40.0, 1.5, q0=0.4, actuator=lambda t: 3.0 * np.sin(5.0 * t)
    )
    m.tb = fm.JointForce(m.jb, [2.5])
    m.fc = fm.JointForce.spring_damper(m.jc, 300.0, 4.0, q0=0.05, actuator=-2.0)
    m.fd = fm.JointForce(m.jd, [0.3, -1.2])
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    return m


@pytest.fixture(scope="module")
def system():
    return chain_model().compile("absolute")


def _random_state(s, rng):
    q = rng.normal(size=s.n)
    qd = rng.normal(size=s.n)
    for i in range(s.nb):
        q[7 * i + 3 : 7 * i + 7] /= np.linalg.norm(q[7 * i + 3 : 7 * i + 7])
    return q, qd


def _jf(ft, q, qd, jac=False):
    """``(Q, -dQ/dq, -dQ/dqd)`` of the compiled joint forces alone (dense layout)."""
    n = len(q)
    Q, AK, AD = np.zeros(n), np.zeros((n, n)), np.zeros((n, n))
    tau = ft.F[len(ft.loads) :]
    cm = np.arange(n)
    joint_forces_add(q, qd, ft.j_int, ft.j_flt, tau, Q, AK, cm, 1.0, 0.0, jac)
    if jac:
        joint_forces_add(q, qd, ft.j_int, ft.j_flt, tau, np.zeros(n), AD, cm, 0.0, 1.0, True)
    return Q, AK, AD


def _jf_differences(ft, q, qd, h=1e-6):
    """Central differences (step ``h``) of the compiled joint forces ``Q`` by ``q`` and
    ``qd``: ``(dQ/dq, dQ/dqd)`` (n, n), the oracle of their exact Jacobians."""
    n = len(q)
    Kfd, Dfd = np.zeros((n, n)), np.zeros((n, n))
    for j in range(n):
        d = np.zeros(n)
        d[j] = h
        Kfd[:, j] = (_jf(ft, q + d, qd)[0] - _jf(ft, q - d, qd)[0]) / (2 * h)
        Dfd[:, j] = (_jf(ft, q, qd + d)[0] - _jf(ft, q, qd - d)[0]) / (2 * h)
    return Kfd, Dfd


def test_engine_supports_joint_forces(system):
    assert Engine.supports(system)
    ft = system.engine().ft
    assert len(ft.jf) == 4
    # a Python law stays on the generic path
    m = chain_model()
    m.py = fm.JointForce(m.jc, lambda t, q, qd: -5.0 * q)
    assert not Engine.supports(m.compile("absolute"))


@pytest.mark.parametrize("seed", range(3))
def test_joint_force_jacobians_equal_central_differences(system, seed):
    """dQ/dq, dQ/dqd of the compiled joint forces = central differences of their Q, at
    random (inconsistent) states: the Jacobians are exact derivatives of the residual."""
    ft = system.engine().ft
    ft.at(0.3)
    rng = np.random.default_rng(seed)
    q, qd = _random_state(system, rng)
    ref = ft.j_flt.copy()
    _, AK, AD = _jf(ft, q, qd, jac=True)
    Kfd, Dfd = _jf_differences(ft, q, qd)
    ft.j_flt[...] = ref
    errK = np.abs(-AK - Kfd).max() / np.abs(Kfd).max()
    errD = np.abs(-AD - Dfd).max() / np.abs(Dfd).max()
    print(f"relative error dQ/dq {errK:.1e}, dQ/dqd {errD:.1e}")
    assert np.abs(Kfd).max() > 1.0 and np.abs(Dfd).max() > 1.0
    assert errK < 1e-6
    assert errD < 1e-6


@pytest.mark.parametrize("seed", range(2))
def test_joint_force_residual_equals_generic_path(system, seed):
    """The engine's residual = the generic path's (JointForceMap) at random states."""
    s = system
    eng = Engine(s)
    rng = np.random.default_rng(20 + seed)
    q, qd = _random_state(s, rng)
    qdd = rng.normal(size=s.n)
    lam = rng.normal(size=s.nc)
    # the generic path unwraps angles against q_ref: give both the same branch
    r, _, _ = eng.terms(q, qd, qdd, lam, 0.37)
    T = s.dae_terms(q, qd, qdd, lam, 0.37)
    rref = T.R + T.PtL - T.Q
    assert np.abs(r - rref).max() <= 1e-12 * np.abs(rref).max()


def test_simulation_equals_generic_path(system):
    """Whole runs (generalized-alpha and Newmark): the compiled engine = the generic path
    to 1e-9 in the positions, and the joint forces' power books the same actuator work."""
    for opts in (
        dict(integrator="generalized-alpha", rho_inf=0.8, dt=2e-3),
        dict(integrator="newmark", beta=0.3, gamma=0.6, dt=2e-3),
    ):
        fast = system.simulate(0.2, tol=1e-11, **opts)
        ref = system.simulate(0.2, tol=1e-11, engine=False, **opts)
        assert fast.stats.get("engine", "compiled") != "generic"
        assert np.abs(fast.q - ref.q).max() <= 1e-9
        assert np.abs(ref.q[-1] - ref.q[0]).max() > 1e-2  # it moves
        a, b = fast.energy["actuator_work"], ref.energy["actuator_work"]
        assert np.abs(b).max() > 1e-3
        assert np.abs(a - b).max() <= 1e-7 * np.abs(b).max()


def test_torsion_pendulum_period():
    """A disc on a vertical revolute joint with a torsion spring (no gravity torque about the
    axis): period 2 pi sqrt(J / k), amplitude kept by the trapezoidal rule (Newmark 1/4)."""
    J, k = 0.02, 8.0
    m = fm.Model("torsion")
    m.disc = fm.RigidBody(1.0, (0.01, 0.01, J))
    m.j = fm.Revolute(m.ground, m.disc, q0=0.5)
    m.spring = fm.JointForce.spring_damper(m.j, k, q0=0.0)
    s = m.compile("absolute")
    assert Engine.supports(s)
    T = 2 * np.pi * np.sqrt(J / k)
    r = s.simulate(T, dt=T / 2000, integrator="newmark", beta=0.25, gamma=0.5, tol=1e-12)
    th = r.joint("j").q[:, 0]
    assert abs(th[-1] - 0.5) < 2e-5  # back at the start after one period
    assert abs(th[len(th) // 2] + 0.5) < 2e-5  # opposite after half of it
    assert abs(np.abs(th).max() - 0.5) < 1e-9


def test_screw_law_kernel_equals_generic_and_differences():
    """A spring-damper on a Screw joint's angle (the turn fixed by the advance): the
    kernel's forces = the generic path's, its Jacobians = central differences. (Models
    with screws run the generic path as a whole: their coordinate rows are not compiled.)"""
    m = fm.Model("screw_law")
    m.nut = fm.RigidBody(0.7, (0.01, 0.01, 0.02), com=(0.02, 0.0, 0.01))
    m.arm = fm.RigidBody(0.4, (0.01, 0.02, 0.02), com=(0.1, 0.0, 0.0))
    m.j0 = fm.Revolute(m.ground, m.arm, axis=(0.0, 1.0, 0.0))
    m.js = fm.Screw(m.arm, m.nut, axis=(0.0, 0.0, 1.0), pitch=0.05, parent_frame=(0.2, 0, 0))
    m.sd = fm.JointForce.spring_damper(m.js, 3.0, 0.2, q0=0.4, actuator=0.7)
    s = m.compile("absolute")
    assert not Engine.supports(s)  # the screw's coordinate row
    ft = Engine(s).ft
    ft.at(0.0)
    rng = np.random.default_rng(5)
    for _ in range(2):
        q, qd = _random_state(s, rng)
        # random (inconsistent) poses: both read the angle the same way
        Q, AK, AD = _jf(ft, q, qd, jac=True)
        T = s.dae_terms(q, qd, np.zeros(s.n), np.zeros(s.nc), 0.0)
        assert np.abs(Q - T.Q).max() <= 1e-12 * np.abs(T.Q).max()
        Kfd, Dfd = _jf_differences(ft, q, qd)
        assert np.abs(Kfd).max() > 0.1 and np.abs(Dfd).max() > 0.01
        assert np.abs(-AK - Kfd).max() <= 1e-6 * np.abs(Kfd).max()
        assert np.abs(-AD - Dfd).max() <= 1e-6 * np.abs(Dfd).max()


def test_wound_spring_follows_the_turns():
    """A motor torque winds a weak torsion spring several turns (q - q0 >> pi): the
    compiled law tracks the branch of the angle as the generic path does (whole runs equal
    to 1e-9), and the generic map's reference (what checkpoints save) is the kernel's."""
    m = fm.Model("wound")
    m.disc = fm.RigidBody(1.0, (0.01, 0.01, 0.02))
    m.j = fm.Revolute(m.ground, m.disc)
    m.sd = fm.JointForce.spring_damper(m.j, 0.5, 0.05, q0=0.0, actuator=10.0)
    s = m.compile("absolute")
    opts = dict(dt=1e-3, integrator="newmark", beta=0.25, gamma=0.5, tol=1e-12)
    fast = s.simulate(0.4, **opts)
    th = fast.joint("j").q[:, 0]
    assert th[-1] > 4 * np.pi  # wound two turns and more
    ref = m.compile("absolute").simulate(0.4, engine=False, **opts)
    assert np.abs(fast.q - ref.q).max() <= 1e-9
    jm = s.force_terms.joint_forces[0]
    assert abs(float(jm.q_ref[0]) - th[-1]) < 1e-6


def test_spring_damper_bad_input():
    """Clear ModelErrors naming the element and the fix."""
    m = fm.Model("bad")
    m.b = fm.RigidBody(1.0, (0.1, 0.1, 0.1))
    m.j = fm.Spherical(m.ground, m.b)
    with pytest.raises(fm.ModelError, match="one coordinate and one speed"):
        fm.JointForce.spring_damper(m.j, 1.0)
    m2 = fm.Model("bad2")
    m2.b = fm.RigidBody(1.0, (0.1, 0.1, 0.1))
    m2.j = fm.Revolute(m2.ground, m2.b)
    with pytest.raises(fm.ModelError, match="stiffness, damping and q0"):
        fm.JointForce.spring_damper(m2.j, "stiff")
    with pytest.raises(fm.ModelError, match="actuator must be"):
        fm.JointForce.spring_damper(m2.j, 1.0, actuator=np.inf)


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _cubic(q, qd, t, which):
    """A hardening torsion spring, a quadratic damper and a motor torque 2 sin(3 t)."""
    if which == 0:
        return -40.0 * q**3 - 0.8 * qd * abs(qd) + 2.0 * np.sin(3.0 * t)
    if which == 1:
        return -120.0 * q**2
    return -1.6 * abs(qd)


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _slide(q, qd, t, which):
    """A linear spring on the slide with a velocity-squared drag."""
    if which == 0:
        return -300.0 * (q - 0.05) - 2.0 * qd * abs(qd)
    if which == 1:
        return -300.0
    return -4.0 * abs(qd)


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _twist(q, qd, t, which):
    """A torsion spring-damper with a harmonic drive on the third joint."""
    if which == 0:
        return -5.0 * q - 0.1 * qd + 0.2 * np.sin(3.0 * t)
    if which == 1:
        return -5.0
    return -0.1


def user_law_model(gravity=True, nlaws=None):
    """A revolute-prismatic chain with compiled laws on both joints; with ``nlaws`` (1-3)
    a third (revolute) joint too, its first ``nlaws`` joints carrying compiled laws (the
    third one :func:`_twist`), the others linear spring-dampers."""
    m = fm.Model("user_laws")
    m.a = fm.RigidBody(2.0, (0.05, 0.2, 0.2), com=(0.3, 0.0, 0.02))
    m.c = fm.RigidBody(0.8, (0.01, 0.02, 0.02), com=(0.0, 0.02, 0.0))
    m.ja = fm.Revolute(m.ground, m.a, axis=(0.0, 0.0, 1.0), q0=0.6)
    m.jc = fm.Prismatic(m.a, m.c, axis=(1.0, 0.0, 0.0), parent_frame=(0.2, 0.05, 0.0), q0=0.1)
    if nlaws is None:
        m.ta = fm.JointForce.compiled_law(m.ja, _cubic)
        m.fc = fm.JointForce.compiled_law(m.jc, _slide)
    else:
        m.d = fm.RigidBody(0.5, (0.01, 0.02, 0.02), com=(0.1, 0.0, 0.0))
        m.jd = fm.Revolute(m.c, m.d, axis=(0.0, 1.0, 0.0), q0=0.2)
        for k, (j, law) in enumerate(((m.ja, _cubic), (m.jc, _slide), (m.jd, _twist))):
            if k < nlaws:
                setattr(m, f"f{k}", fm.JointForce.compiled_law(j, law))
            else:
                setattr(m, f"f{k}", fm.JointForce.spring_damper(j, 30.0, 0.5))
    if gravity:
        m.g = fm.Gravity((0.0, -9.81, 0.0))
    return m


@pytest.mark.filterwarnings("ignore:First-class function type feature is experimental")
def test_compiled_user_laws():
    """Users' numba cfunc laws run inside the compiled engine: exact Jacobians (central
    differences) and whole runs equal to the generic path (the same cfuncs through ctypes)."""
    s = user_law_model().compile("absolute")
    assert Engine.supports(s)
    ft = s.engine().ft
    assert list(ft.j_int[:, 4]) == [_cubic.address, _slide.address]  # the laws by address
    ft.at(0.4)
    rng = np.random.default_rng(7)
    q, qd = _random_state(s, rng)
    ref = ft.j_flt.copy()
    Q, AK, AD = _jf(ft, q, qd, jac=True)
    # the generic path's forces (gravity-free model: the laws alone) at the same state
    s0 = user_law_model(gravity=False).compile("absolute")
    Qg = s0.dae_terms(q, qd, np.zeros(s.n), np.zeros(s.nc), 0.4).Q
    assert np.abs(Q - Qg).max() <= 1e-12 * np.abs(Qg).max()
    Kfd, Dfd = _jf_differences(ft, q, qd)
    ft.j_flt[...] = ref
    assert np.abs(-AK - Kfd).max() <= 1e-6 * np.abs(Kfd).max()
    assert np.abs(-AD - Dfd).max() <= 1e-6 * np.abs(Dfd).max()
    assert np.abs(Q).max() > 1.0
    opts = dict(integrator="generalized-alpha", rho_inf=0.8, dt=2e-3, tol=1e-11)
    fast = s.simulate(0.3, **opts)
    slow = user_law_model().compile("absolute").simulate(0.3, engine=False, **opts)
    assert np.abs(fast.q - slow.q).max() <= 1e-9
    assert np.abs(slow.q[-1] - slow.q[0]).max() > 1e-2


@pytest.mark.filterwarnings("ignore:First-class function type feature is experimental")
def test_any_number_of_compiled_laws_shares_one_engine():
    """The engine calls the users' laws by their addresses (data in the joint-force table),
    so models with one, two and three compiled laws hand the engine arguments of one numba
    type: the step loop compiles (or loads) one version for all of them. Each run equals
    the generic path (the same cfuncs through ctypes)."""
    opts = dict(integrator="generalized-alpha", rho_inf=0.8, dt=2e-3, tol=1e-11)
    kinds, n_run = set(), None
    for n in (1, 2, 3):
        s = user_law_model(nlaws=n).compile("absolute")
        assert Engine.supports(s)
        kinds.add(typeof(s.engine().model))
        fast = s.simulate(0.3, **opts)
        if n_run is None:
            n_run = len(engine._run.signatures)
        assert len(engine._run.signatures) == n_run, engine._run.signatures
        slow = user_law_model(nlaws=n).compile("absolute").simulate(0.3, engine=False, **opts)
        assert np.abs(fast.q - slow.q).max() <= 1e-9
        assert np.abs(slow.q[-1] - slow.q[0]).max() > 1e-2
    assert len(kinds) == 1


def test_compiled_law_bad_input():
    m = fm.Model("bad3")
    m.b = fm.RigidBody(1.0, (0.1, 0.1, 0.1))
    m.j = fm.Revolute(m.ground, m.b)
    with pytest.raises(fm.ModelError, match="numba cfunc"):
        fm.JointForce.compiled_law(m.j, lambda q, qd, t, w: 0.0)
