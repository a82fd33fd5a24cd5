"""The same rigid trees compiled both ways: accelerations and reactions agree (<= 1e-9)."""

import numpy as np
import pytest
from abs_helpers import all_joints_model

import flexmbd as fm
import flexmbd.recursive  # noqa: F401  (a required part: fail, never skip)


def _compare(m, rng, t=0.2, n_states=3):
    rec = m.compile("recursive")
    ab = m.compile("absolute")
    worst_a = worst_r = 0.0
    for _ in range(n_states):
        q = rec.normalize(rec.q0() + 0.3 * rng.normal(size=len(rec.q0())))
        qd = rng.normal(size=len(rec.qd0()))
        fr = rec.forward_dynamics(q, qd, t=t)
        states = rec.body_states(q, qd)
        Q, QD = ab.state_from_bodies(states)
        assert np.abs(ab.constraint(Q)).max() < 1e-12
        fa = ab.forward_dynamics(Q, QD, t=t)
        for b in m.bodies():
            for x, y in zip(fr.body_acceleration(b.name), fa.body_acceleration(b.name)):
                worst_a = max(worst_a, float(np.abs(x - y).max() / (1 + np.abs(x).max())))
        for j in m.joints():
            x, y = fr.reaction(j.name), fa.reaction(j.name)
            worst_r = max(worst_r, float(np.abs(x - y).max() / (1 + np.abs(x).max())))
    return worst_a, worst_r


@pytest.mark.parametrize("seed", range(3))
def test_every_joint_type_with_force_elements(seed):
    rng = np.random.default_rng(seed)
    m = all_joints_model(rng, sda=True, joint_force=True)
    a, r = _compare(m, rng)
    assert a <= 1e-9 and r <= 1e-9


def test_branched_tree_with_floating_base():
    rng = np.random.default_rng(5)
    m = fm.Model("branched")
    m.base = fm.RigidBody(5.0, (0.5, 0.6, 0.7), com=(0.1, 0, 0))
    m.float = fm.Free(m.ground, m.base, q0=(np.array([0.0, 0.0, 1.0]), np.eye(3)))
    for side, y in (("l", 0.4), ("r", -0.4)):
        prev, pf = m.base, (0.0, y, 0.0)
        for k in range(3):
            b = fm.RigidBody(1.0, (0.02, 0.05, 0.05), com=(0.25, 0, 0))
            setattr(m, f"{side}{k}", b)
            setattr(
                m,
                f"j{side}{k}",
                fm.Revolute(prev, b, axis=(0, 0, 1) if k % 2 else (0, 1, 0), parent_frame=pf),
            )
            setattr(m, f"tau{side}{k}", fm.JointForce(getattr(m, f"j{side}{k}"), [0.5 * (k + 1)]))
            prev, pf = b, (0.5, 0.0, 0.0)
    m.g = fm.Gravity((0, 0, -9.81))
    m.push = fm.PointForce(m.l2, (0.5, 0, 0), (1.0, 2.0, -3.0))
    m.spring = fm.SpringDamperActuator(m.l2, (0.5, 0, 0), m.r2, (0.5, 0, 0), k=50.0, c=2.0)
    a, r = _compare(m, rng)
    assert a <= 1e-9 and r <= 1e-9


def test_closed_loop_slider_crank_against_recursive_loops():
    """The seed's slider-crank (a loop: the recursive side cuts a joint) agrees to 1e-9."""
    import os
    import sys

    sys.path.insert(
        0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    )
    import sda_slider_crank as sc

    m = sc.build(k=2e4, c=300.0, fa=150.0)
    m.j_crank.qd0 = np.array([1.3])
    rec = m.compile("recursive")
    assert hasattr(rec, "project"), "the recursive formulation lost its loop support"
    ab = m.compile("absolute")
    q, qd = rec.q0(), rec.qd0()
    fr = rec.forward_dynamics(q, qd, t=0.0)
    Q, QD = ab.state_from_bodies(rec.body_states(q, qd))
    assert np.abs(ab.constraint(Q)).max() < 1e-12
    fa = ab.forward_dynamics(Q, QD)
    for b in m.bodies():
        for x, y in zip(fr.tree.body_acceleration(b.name), fa.body_acceleration(b.name)):
            assert np.abs(x - y).max() <= 1e-9 * (1 + np.abs(x).max())
    for j in m.joints():
        x, y = fr.reaction(j.name), fa.reaction(j.name)
        assert np.abs(x - y).max() <= 1e-9 * (1 + np.abs(x).max())


def test_driver_against_recursive_loops():
    from flexmbd.constraints import JointDriver

    m = fm.Model("driven_double")
    m.a = fm.RigidBody(1.0, (0.05, 0.1, 0.1), com=(0.4, 0, 0))
    m.b = fm.RigidBody(0.8, (0.05, 0.1, 0.1), com=(0.3, 0, 0))
    m.ja = fm.Revolute(m.ground, m.a, q0=[0.3], qd0=[-0.7])
    m.jb = fm.Revolute(m.a, m.b, parent_frame=(0.8, 0, 0), q0=[0.2])
    m.g = fm.Gravity((0, -9.81, 0))
    m.drive = JointDriver.constant_speed(m.jb, 2.0)
    rec = m.compile("recursive")
    ab = m.compile("absolute")
    q, qd = rec.q0(), rec.qd0()
    fr = rec.forward_dynamics(q, qd, t=0.0)
    Q, QD = ab.state_from_bodies(rec.body_states(q, qd))
    fa = ab.forward_dynamics(Q, QD, t=0.0)
    for j in m.joints():
        assert np.allclose(fr.reaction(j.name), fa.reaction(j.name), atol=1e-9)
    assert abs(float(fr.lam[-1]) - ab.driver_forces(fa.lam)["drive"]) < 1e-9
