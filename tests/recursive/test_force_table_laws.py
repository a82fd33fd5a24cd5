"""The recursive force table (:mod:`flexmbd.recursive._nbforces`) for the documented
single-state calls and for joint spring-damper laws.

Every comparison is against the Python path, reached by giving the same physics as
Python force laws (a ``JointForce`` with a lambda, a time-function point force), which
the table does not cover. The numbers agree to round-off: the table sums the wrenches
in compiled code in another order than numpy (1e-15 relative seen; 1e-12 asserted).
"""

import models
import numpy as np
import pytest

import flexmbd as fm
from flexmbd.recursive import _nbloops as NL

K_SD, C_SD, Q0_SD, FA_SD = 10.0, 0.1, 0.2, 0.3


def _loads(m, python):
    """SDA, point force, point torque, constant joint torque and a joint spring-damper-
    actuator on the elbow; ``python``: each as an equivalent Python law instead."""
    m.spring = fm.SpringDamperActuator(
        m.ground, (0.5, 0.5, 0.0), m.lower, (1.0, 0.0, 0.0), k=30.0, c=0.5, l0=1.0
    )
    if python:
        m.push = fm.PointForce(m.lower, (0.5, 0.0, 0.0), lambda t: (0.0, 2.0, 0.0))
        m.motor = fm.JointForce(m.shoulder, lambda t, q, qd: np.array([0.2]))
        m.law = fm.JointForce(
            m.elbow,
            lambda t, q, qd: np.array([FA_SD - K_SD * (q[0] - Q0_SD) - C_SD * qd[0]]),
        )
    else:
        m.push = fm.PointForce(m.lower, (0.5, 0.0, 0.0), (0.0, 2.0, 0.0))
        m.motor = fm.JointForce(m.shoulder, [0.2])
        m.law = fm.JointForce.spring_damper(m.elbow, K_SD, C_SD, Q0_SD, FA_SD)
    m.twist = fm.PointTorque(m.upper, (0.0, 0.0, 0.3))
    return m


def pendulum(python=False):
    return _loads(models.double_pendulum(), python).compile("recursive")


def states(s, n=3):
    rng = np.random.default_rng(7)
    Q = s.q0() + rng.normal(scale=0.4, size=(n, s.nq))
    V = rng.normal(scale=1.0, size=(n, s.nv))
    return Q, V


def close(a, b):
    return np.allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, np.max(np.abs(b))))


def test_the_table_covers_every_constant_element_and_the_spring_damper_law():
    s, p = pendulum(), pendulum(python=True)
    assert s.compiled_forces() is not None and s.packed_rigid(forces=True) is not None
    assert p.compiled_forces() is None


def test_forward_dynamics_runs_the_table_and_equals_the_python_path(monkeypatch):
    """``forward_dynamics``, ``forward_dynamics_batch`` and ``inverse_dynamics`` of a
    loaded tree: no force element evaluated in Python; the numbers of the Python path
    (round-off) and bit for bit those of ``qdd_and_reactions`` (the same kernel)."""
    s, p = pendulum(), pendulum(python=True)
    Q, V = states(s)
    tau = np.array([0.05, -0.02])
    ref = [p.forward_dynamics(q, v, tau) for q, v in zip(Q, V, strict=True)]
    calls = []
    for cls in (fm.PointForce, fm.PointTorque, fm.SpringDamperActuator):
        inner = cls.wrenches
        monkeypatch.setattr(cls, "wrenches", lambda *a, _f=inner: calls.append(1) or _f(*a))
    fds = [s.forward_dynamics(q, v, tau) for q, v in zip(Q, V, strict=True)]
    batch = s.forward_dynamics_batch(Q, V, tau)
    inv = [s.inverse_dynamics(q, v, fd.qdd) for q, v, fd in zip(Q, V, fds, strict=True)]
    assert not calls
    for i, (fd, r) in enumerate(zip(fds, ref, strict=True)):
        assert close(fd.qdd, r.qdd) and close(fd.reactions, r.reactions)
        assert close(fd.body_accelerations, r.body_accelerations)
        qdd, reac = s.qdd_and_reactions(Q[i], V[i], tau)
        assert np.array_equal(qdd, fd.qdd) and np.array_equal(reac, fd.reactions)
        assert close(batch.qdd[i], r.qdd) and close(batch.reactions[i], r.reactions)
        # inverse dynamics returns the tau that reproduces qdd on top of the elements
        assert np.allclose(inv[i][0], tau, atol=1e-10)
        assert close(inv[i][0], p.inverse_dynamics(Q[i], V[i], fd.qdd)[0])


def test_spring_damper_law_is_hand_derived():
    """The table's joint law is ``fa - k (q - q0) - c qd``: the accelerations equal an
    unloaded tree's with that joint torque given as ``tau``."""
    m = models.double_pendulum()
    m.law = fm.JointForce.spring_damper(m.elbow, K_SD, C_SD, Q0_SD, FA_SD)
    s, bare = m.compile("recursive"), models.double_pendulum().compile("recursive")
    assert s.compiled_forces() is not None
    q, v = np.array([0.3, 0.7]), np.array([-0.4, 1.1])
    tau = np.array([0.0, FA_SD - K_SD * (q[1] - Q0_SD) - C_SD * v[1]])
    assert np.allclose(s.qdd(q, v), bare.qdd(q, v, tau), rtol=1e-13, atol=1e-13)


def test_tree_rk4_runs_compiled_blocks_with_a_spring_damper_law(monkeypatch):
    """RK4 of the loaded tree with the joint law: whole compiled blocks, the Python
    path's trajectory, and energy balance: kinetic + gravity + SDA spring energy change
    by the work of the actuators and joint forces minus the dampers' dissipation."""
    s, p = pendulum(), pendulum(python=True)
    calls = []
    inner = NL.tree_rk4_block
    monkeypatch.setattr(NL, "tree_rk4_block", lambda *a: calls.append(1) or inner(*a))
    res = s.simulate(1.0, dt=1e-3, integrator="rk4")
    assert calls
    ref = p.simulate(1.0, dt=1e-3, integrator="rk4")
    assert np.allclose(res.q, ref.q, rtol=1e-10, atol=1e-10)
    E = res.energy
    for key in ("total", "damper_work", "actuator_work", "external_work"):
        assert np.abs(E[key] - ref.energy[key]).max() < 1e-12 * np.abs(E["total"]).max()
    assert E["damper_work"][-1] > 1e-3  # the dampers dissipate
    # work-energy balance; the residual is the trapezoidal rule of the works over the
    # 1 ms samples (measured 1.0e-5 of the energy, 2.5e-6 at 0.5 ms: O(dt^2))
    assert np.abs(E["numerical_dissipation"]).max() < 2e-5 * np.abs(E["total"]).max()


def test_closed_loop_with_a_spring_damper_law_stays_compiled():
    """A four-bar with a spring-damper law on a tree joint: ``compiled_rk4`` admits it;
    RK4 and DOP853 give the trajectories of the same law in Python."""

    def four_bar(python):
        m = models.four_bar()
        if python:
            m.law = fm.JointForce(
                m.a, lambda t, q, qd: np.array([0.5 - 4.0 * (q[0] - 1.5) - 0.3 * qd[0]])
            )
        else:
            m.law = fm.JointForce.spring_damper(m.a, 4.0, 0.3, 1.5, 0.5)
        return m.compile("recursive")

    s, p = four_bar(False), four_bar(True)
    assert s.compiled_rk4() is not None and p.compiled_rk4() is None
    for integrator in ("rk4", "dop853"):
        kw = dict(dt=1e-3, integrator=integrator, rtol=1e-10, atol=1e-12)
        a, b = s.simulate(0.3, **kw), p.simulate(0.3, **kw)
        assert np.abs(a.q - b.q).max() < 1e-10, integrator
        assert np.abs(a.reactions - b.reactions).max() < 1e-8 * np.abs(b.reactions).max()


@pytest.mark.parametrize("bad", ["time actuator", "python law"])
def test_laws_outside_the_table_keep_the_python_path(bad):
    m = models.double_pendulum()
    if bad == "time actuator":
        m.law = fm.JointForce.spring_damper(m.elbow, 1.0, 0.1, actuator=lambda t: np.sin(t))
    else:
        m.law = fm.JointForce(m.elbow, lambda t, q, qd: -q)
    s = m.compile("recursive")
    assert s.compiled_forces() is None
    q, v = np.array([0.3, 0.7]), np.array([-0.4, 1.1])
    fa = np.sin(0.5) if bad == "time actuator" else 0.0
    tau = np.array([0.0, fa - (0.7 + 0.1 * 1.1 if bad == "time actuator" else 0.7)])
    bare = models.double_pendulum().compile("recursive")
    assert np.allclose(s.forward_dynamics(q, v, t=0.5).qdd, bare.qdd(q, v, tau), atol=1e-12)


def timed_pendulum(python=False, calls=None):
    """The double pendulum with loads that are functions of time only: a point force in
    body axes, a point torque, an SDA actuator and a joint spring-damper actuator;
    ``python``: plus a zero Python joint law (the whole model on the Python path);
    ``calls``: a list that gets one entry per evaluation of the point force's function."""
    m = models.double_pendulum()

    def push(t):
        if calls is not None:
            calls.append(t)
        return (0.0, 2.0 * np.cos(3.0 * t), 0.1)

    m.push = fm.PointForce(m.lower, (0.5, 0.0, 0.0), push, frame="body")
    m.twist = fm.PointTorque(m.upper, lambda t: (0.0, 0.0, 0.3 * np.sin(t)))
    m.spring = fm.SpringDamperActuator(
        m.ground, (0.5, 0.5, 0.0), m.lower, (1.0, 0.0, 0.0), k=30.0, c=0.5, l0=1.0,
        fa=lambda t: 2.0 * np.cos(t),
    )  # fmt: skip
    m.law = fm.JointForce.spring_damper(m.elbow, K_SD, C_SD, Q0_SD, lambda t: np.sin(2 * t))
    if python:
        m.zero = fm.JointForce(m.shoulder, lambda t, q, qd: np.array([0.0]))
    return m.compile("recursive")


def test_time_functions_are_evaluated_once_per_call_into_the_table(monkeypatch):
    """Single-state calls with loads that are functions of time: each function once per
    call in Python, the loads in the compiled call; the numbers of the Python path.
    ``compiled_forces`` (the constant table: closed loops) is None."""
    calls = []
    s, p = timed_pendulum(calls=calls), timed_pendulum(python=True)
    assert s.compiled_forces() is None and s.timed_forces(0.3) is not None
    assert p.timed_forces(0.3) is None
    Q, V = states(s)
    ts = np.array([0.0, 0.4, 1.3])
    wrenches = []
    inner = fm.PointForce.wrenches
    monkeypatch.setattr(fm.PointForce, "wrenches", lambda *a: wrenches.append(1) or inner(*a))
    calls.clear()
    for q, v, t in zip(Q, V, ts, strict=True):
        fd, ref = s.forward_dynamics(q, v, t=t), p.forward_dynamics(q, v, t=t)
        assert close(fd.qdd, ref.qdd) and close(fd.reactions, ref.reactions)
        assert close(fd.body_accelerations, ref.body_accelerations)
        assert np.array_equal(s.qdd(q, v, t=t), fd.qdd)
        tau = s.inverse_dynamics(q, v, fd.qdd, t=t)[0]
        assert np.allclose(tau, 0.0, atol=1e-10)
    assert len(calls) == 3 * len(ts)  # forward_dynamics, qdd, inverse_dynamics
    batch, ref = s.forward_dynamics_batch(Q, V, t=ts), p.forward_dynamics_batch(Q, V, t=ts)
    assert close(batch.qdd, ref.qdd) and close(batch.reactions, ref.reactions)
    assert len(calls) == 4 * len(ts)  # once per state of the batch
    assert len(wrenches) == 2 * len(ts)  # the Python path's calls only


@pytest.mark.parametrize("integrator", ["rk4", "dop853"])
def test_runs_with_time_functions_equal_the_python_path(monkeypatch, integrator):
    """RK4: compiled blocks with the functions tabulated on the stage times (3 substeps
    per output interval: start, middle and end of each); DOP853: each evaluation with
    the table at its time. The Python path's trajectory, reactions and energies."""
    calls = []
    seen = []
    inner = NL.tree_rk4_block
    monkeypatch.setattr(NL, "tree_rk4_block", lambda *a: calls.append(1) or inner(*a))
    s = timed_pendulum(calls=seen)
    s.timed_forces(0.0)  # the table built
    seen.clear()
    kw = dict(dt=1e-2, integrator=integrator, rtol=1e-10, atol=1e-12)
    if integrator == "rk4":
        kw["substeps"] = 3
    a = s.simulate(0.3, **kw)
    b = timed_pendulum(python=True).simulate(0.3, **kw)
    assert bool(calls) == (integrator == "rk4")
    if integrator == "rk4":  # the stage grid: 3 times per substep (and the energy pass)
        h = 1e-2 / 3
        grid = (np.arange(30)[:, None] * 1e-2 + np.arange(3)[None, :] * h).ravel()
        stages = np.column_stack([grid, grid + 0.5 * h, grid + h]).ravel()
        assert np.array_equal(np.array(seen[: len(stages)]), stages)
    assert np.abs(a.q - b.q).max() < 1e-10
    assert np.abs(a.reactions - b.reactions).max() < 1e-8 * np.abs(b.reactions).max()
    for key in ("total", "damper_work", "actuator_work", "external_work", "spring"):
        scale = np.abs(b.energy["total"]).max()
        assert np.abs(a.energy[key] - b.energy[key]).max() < 1e-9 * scale, key
