"""The single-state calls of recursive systems: the flexible trees' ``forward_dynamics``
(one pass of the strategy's kernels) and the closed loops' single-state calls with a
user's compiled law (the loop kernels with the law's clock set to the call's time)."""

import models
import numpy as np
import pytest
from numba import cfunc

import flexmbd as fm
from flexmbd.recursive import _nbsingle as NS

K, C, Q0, FA = 4.0, 0.3, 1.5, 0.7  # N m/rad, N m s/rad, rad, N m


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _linear(q, qd, t, which):
    """``JointForce.spring_damper(K, C, Q0, FA)`` as a compiled law (the same operations
    as the force table's joint law: ``fa - k (q - q0) - c qd``)."""
    if which == 0:
        return FA - K * (q - Q0) - C * qd
    return -K if which == 1 else -C


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _driven(q, qd, t, which):
    """A cubic spring, a damper and a motor torque 0.5 sin(3 t) (N m)."""
    if which == 0:
        return -4.0 * (q - 1.5) ** 3 - 0.3 * qd + 0.5 * np.sin(3.0 * t)
    return -12.0 * (q - 1.5) ** 2 if which == 1 else -0.3


def _arm_on_beam():
    """The flexible pendulum's beam carrying a rigid arm declared before it (body rows
    then differ from the tree labels)."""
    m = fm.Model("arm_on_beam")
    m.arm = fm.RigidBody.rod(mass=1.0, length=0.5, radius=0.02, origin="end")
    m.beam = fm.FlexibleBody(models.flexible_pendulum().beam.reduced)
    m.hinge = fm.Revolute(
        m.ground,
        m.beam,
        axis=(0, 0, 1),
        parent_frame=(0, 0.025, 0.025),
        child_frame=m.beam.interface("A"),
    )
    m.elbow = fm.Revolute(m.beam, m.arm, axis=(0, 1, 0), parent_frame=(0.5, 0.0, 0.0))
    m.g = fm.Gravity((0, -9.81, 0))
    return m


@pytest.mark.parametrize("build", [models.flexible_pendulum, _arm_on_beam])
def test_flexible_tree_single_state_is_the_batch_path_bit_for_bit(build):
    """A flexible tree's ``forward_dynamics`` (one state through the strategy's kernels)
    equals the batch path (the former single-state path) bit for bit, with joint and
    modal forces, a time and a scalar ``tau``; bad shapes raise the contract's errors."""
    s = build().compile("recursive")
    rng = np.random.default_rng(2)
    for k in range(3):
        q = s.q0() + 0.01 * rng.normal(size=s.nq)
        qd = 0.1 * rng.normal(size=s.nv)
        tau = 0.1 * rng.normal(size=s.nv) if k else 0.25
        one = s.forward_dynamics(q, qd, tau, t=0.1 * k)
        ref = s.forward_dynamics_batch(q[None], qd[None], tau, t=0.1 * k)
        for name in ("qdd", "reactions", "body_accelerations"):
            assert np.array_equal(getattr(one, name), getattr(ref, name)[0]), name
        assert one.lam.shape == (0,) and one.projection is None and one.tree is None
    with pytest.raises(fm.ModelError, match="tau needs"):
        s.forward_dynamics(q, qd, np.zeros(s.nv + 1))
    with pytest.raises(fm.ModelError, match="forward_dynamics_batch"):
        s.forward_dynamics(np.zeros((2, s.nq)), np.zeros((2, s.nv)))


def _four_bar(law):
    m = models.four_bar()
    if law == "table":
        m.spring = fm.JointForce.spring_damper(m.a, K, C, Q0, actuator=FA)
    else:
        m.spring = fm.JointForce.compiled_law(m.a, law)
    return m.compile("recursive")


def _recorded(s, seen):
    el = s.model.spring
    inner = el.generalized_force
    el.generalized_force = lambda t, *a: seen.append(float(t)) or inner(t, *a)


def _assembled(s):
    q, qd = s.initial_state(qd=np.array([0.5, -0.3, 0.2]))
    return s.project(q, qd)  # a corrected state: the projector selects its rows


def test_loop_single_state_calls_run_a_compiled_law_compiled(monkeypatch):
    """The four-bar with a compiled law on a tree joint: ``forward_dynamics`` and
    ``accelerations(compiled=True)`` run the loop kernels (no Python call of the law) and
    equal, bit for bit, the same law as a ``spring_damper`` force-table row."""
    law, table, seen = _four_bar(_linear), _four_bar("table"), []
    _recorded(law, seen)
    calls = []
    inner = NS.loop_forward_dynamics_rows
    monkeypatch.setattr(NS, "loop_forward_dynamics_rows", lambda *a: calls.append(1) or inner(*a))
    q, qd = _assembled(law)
    q2, qd2 = _assembled(table)
    assert np.array_equal(q, q2) and np.array_equal(qd, qd2)
    rng = np.random.default_rng(4)
    for t in (0.0, 0.3):
        tau = rng.normal(size=law.nv)
        a, b = law.forward_dynamics(q, qd, tau, t=t), table.forward_dynamics(q, qd, tau, t=t)
        for name in ("qdd", "lam", "reactions", "body_accelerations"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert np.array_equal(a.tree.reactions, b.tree.reactions)
        acc_a = law.accelerations(q, qd, tau, t=t, compiled=True)
        acc_b = table.accelerations(q, qd, tau, t=t, compiled=True)
        assert all(np.array_equal(x, y) for x, y in zip(acc_a, acc_b, strict=True))
    assert len(calls) == 4 and not seen


def test_loop_single_state_calls_read_the_time_of_the_call():
    """A law of time (a motor torque 0.5 sin(3 t)): the compiled ``forward_dynamics`` at
    each time equals the Python path (the cfunc through ``ctypes``, the projector's QR)
    to the round-off of the constraint solve; other times, other accelerations."""
    s, seen = _four_bar(_driven), []
    _recorded(s, seen)
    p = _four_bar(_driven)
    from flexmbd.constraints.projection import Projector

    q, qd = _assembled(s)
    out = {}
    for t in (0.0, 0.4, 1.1):
        a = s.forward_dynamics(q, qd, t=t)
        b = p.forward_dynamics(q, qd, t=t, projector=Projector(p.constraints))
        assert np.abs(a.qdd - b.qdd).max() <= 1e-12 * np.abs(b.qdd).max()
        assert np.abs(a.reactions - b.reactions).max() <= 1e-12 * np.abs(b.reactions).max()
        out[t] = a.qdd
    assert not seen
    assert not np.array_equal(out[0.0], out[0.4])
