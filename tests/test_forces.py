"""Force elements: wrenches and their exact Jacobians against central differences."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd import spatial as sp

rng = np.random.default_rng(3)


class State:
    """Body poses and twists for the generic force-element interface."""

    def __init__(self, poses, twists):
        self.poses, self.twists = poses, twists

    def pose(self, b):
        return self.poses[b]

    def twist(self, b):
        return self.twists[b]

    def perturbed(self, b, dx):
        poses = dict(self.poses)
        R, r = poses[b]
        poses[b] = (sp.rotvec_to_rot(dx[:3]) @ R, r + dx[3:])
        return State(poses, self.twists)


def model_with_forces():
    m = fm.Model()
    m.a = fm.RigidBody(2.0, (0.1, 0.2, 0.3), com=(0.3, -0.1, 0.2))
    m.b = fm.RigidBody(1.5, (0.2, 0.2, 0.1), com=(0.0, 0.4, 0.0))
    m.ja = fm.Free(m.ground, m.a)
    m.jb = fm.Spherical(m.a, m.b)
    m.g = fm.Gravity((0.3, -9.81, 0.5))
    m.fw = fm.PointForce(m.a, (0.5, 0.1, -0.2), (1.0, 2.0, 3.0))
    m.fb = fm.PointForce(m.b, (0.1, 0.5, 0.2), lambda t: (np.sin(t), 2.0, -1.0), frame="body")
    m.tw = fm.PointTorque(m.a, (0.5, -1.0, 2.0))
    m.tb = fm.PointTorque(m.b, (1.0, 0.0, -0.5), frame="body")
    return m


def random_state(m):
    poses = {b: (sp.rotvec_to_rot(rng.normal(size=3)), rng.normal(size=3)) for b in m.bodies()}
    twists = {b: (rng.normal(size=3), rng.normal(size=3)) for b in m.bodies()}
    return State(poses, twists)


def total(element, t, state, body):
    F = np.zeros(6)
    for b, w in element.wrenches(t, state):
        if b is body:
            F += w
    return F


@pytest.mark.parametrize("name", ["g", "fw", "fb", "tw", "tb"])
def test_wrench_jacobians_match_central_differences(name):
    m = model_with_forces()
    el = getattr(m, name)
    st = random_state(m)
    t = 0.4
    K = {(bi, bj): Kij for bi, bj, Kij, _ in el.jacobians(t, st)}
    h = 1e-6
    for bi in m.bodies():
        for bj in m.bodies():
            fd = np.zeros((6, 6))
            for k in range(6):
                dx = np.zeros(6)
                dx[k] = h
                fd[:, k] = (
                    total(el, t, st.perturbed(bj, dx), bi) - total(el, t, st.perturbed(bj, -dx), bi)
                ) / (2 * h)
            exact = K.get((bi, bj), np.zeros((6, 6)))
            assert np.allclose(exact, fd, atol=1e-7 * max(1.0, np.abs(fd).max()))


def test_point_force_wrench_is_moment_about_origin():
    m = model_with_forces()
    st = random_state(m)
    R, _ = st.pose(m.a)
    ((_, F),) = m.fw.wrenches(0.0, st)
    assert np.allclose(F[:3], np.cross(R @ [0.5, 0.1, -0.2], [1.0, 2.0, 3.0]))


def test_gravity_potential_gradient_is_minus_the_force():
    m = model_with_forces()
    st = random_state(m)
    h = 1e-6
    for b in m.bodies():
        F = total(m.g, 0.0, st, b)
        for k in range(6):
            dx = np.zeros(6)
            dx[k] = h
            dV = m.g.potential(0, st.perturbed(b, dx)) - m.g.potential(0, st.perturbed(b, -dx))
            assert np.isclose(-dV / (2 * h), F[k], atol=1e-6)


def test_joint_force_constant_and_callable():
    m = model_with_forces()
    jf = fm.JointForce(m.jb, [1.0, 2.0, 3.0])
    assert np.allclose(jf.generalized_force(0, None, None), [1, 2, 3])
    dq, dqd = jf.generalized_jacobians(0, np.zeros(4), np.zeros(3))
    assert dq.shape == (3, 4) and not dq.any() and dqd.shape == (3, 3)
    k = 5.0
    sd = fm.JointForce(
        m.ja,
        lambda t, q, qd: -k * qd,
        dfdq=lambda t, q, qd: np.zeros((6, 7)),
        dfdqd=lambda t, q, qd: -k * np.eye(6),
    )
    assert sd.has_jacobian
    assert np.allclose(sd.generalized_force(0, None, np.ones(6)), -5.0)
