"""Accelerations and reactions against independent references.

* a planar double pendulum and the seed slider-crank written in minimal
  coordinates (d'Alembert / Lagrange: ``M(q) qdd = Q - sum m J^T (dJ/dt qd)``);
* the Newton-Euler balance of every body with the reported joint reactions, for a
  tree with every joint type and for the closed-loop slider-crank.
"""

import numpy as np
import pytest
from abs_helpers import all_joints_model, newton_euler_residual

import flexmbd as fm
from flexmbd.spatial import rotation_matrix


def u(a):
    return np.array([np.cos(a), np.sin(a)])


def up(a):
    return np.array([-np.sin(a), np.cos(a)])


# -- double pendulum ---------------------------------------------------------------
L1, C1, C2 = 1.2, 0.5, 0.4
M1, M2, I1, I2 = 2.0, 1.5, 0.3, 0.2
G = 9.81
K_T, C_T = 7.0, 0.8  # torsion spring/damper on joint 2
KS, CS, L0S, FA = 40.0, 3.0, 0.9, 2.5  # SDA ground (0.5, 0.5) -> body 2 at (0.3, 0.1)
PG, P2 = np.array([0.5, 0.5]), np.array([0.3, 0.1])


def double_pendulum_model():
    m = fm.Model("double_pendulum")
    m.b1 = fm.RigidBody(M1, (0.1, 0.2, I1), com=(C1, 0, 0))
    m.b2 = fm.RigidBody(M2, (0.05, 0.2, I2), com=(C2, 0, 0))
    m.j1 = fm.Revolute(m.ground, m.b1)
    m.j2 = fm.Revolute(m.b1, m.b2, parent_frame=(L1, 0, 0))
    m.g = fm.Gravity((0, -G, 0))
    m.t2 = fm.JointForce(
        m.j2,
        lambda t, q, qd: np.array([-K_T * q[0] - C_T * qd[0]]),
        dfdq=lambda t, q, qd: np.array([[-K_T]]),
        dfdqd=lambda t, q, qd: np.array([[-C_T]]),
    )
    m.s = fm.SpringDamperActuator(
        m.ground, (PG[0], PG[1], 0), m.b2, (P2[0], P2[1], 0), k=KS, c=CS, l0=L0S, fa=FA
    )
    return m


def double_pendulum_reference(q, qd):
    """qdd of the relative angles from d'Alembert's principle in minimal coordinates."""
    p1, p2 = q[0], q[0] + q[1]
    w1, w2 = qd[0], qd[0] + qd[1]
    # com Jacobians (2x2) and their convective parts dJ/dt qd
    J1 = np.column_stack([C1 * up(p1), np.zeros(2)])
    d1 = -C1 * u(p1) * w1**2
    J2 = np.column_stack([L1 * up(p1) + C2 * up(p2), C2 * up(p2)])
    d2 = -L1 * u(p1) * w1**2 - C2 * u(p2) * w2**2
    j1, j2 = np.array([1.0, 0.0]), np.array([1.0, 1.0])
    M = M1 * J1.T @ J1 + M2 * J2.T @ J2 + I1 * np.outer(j1, j1) + I2 * np.outer(j2, j2)
    Q = M1 * J1.T @ np.array([0, -G]) + M2 * J2.T @ np.array([0, -G])
    Q -= M1 * J1.T @ d1 + M2 * J2.T @ d2
    Q[1] += -K_T * q[1] - C_T * qd[1]
    # SDA: attachment point on body 2 and its Jacobian
    R2 = np.array([[np.cos(p2), -np.sin(p2)], [np.sin(p2), np.cos(p2)]])
    P = L1 * u(p1) + R2 @ P2
    JP = np.column_stack(
        [
            L1 * up(p1) + np.array([[0, -1], [1, 0]]) @ (R2 @ P2),
            np.array([[0, -1], [1, 0]]) @ (R2 @ P2),
        ]
    )
    dvec = P - PG
    length = np.linalg.norm(dvec)
    uu = dvec / length
    ldot = uu @ (JP @ qd)
    f = KS * (length - L0S) + CS * ldot + FA
    Q += JP.T @ (-f * uu)
    return np.linalg.solve(M, Q)


@pytest.mark.parametrize("seed", range(4))
def test_double_pendulum_against_minimal_coordinates(seed):
    rng = np.random.default_rng(seed)
    m = double_pendulum_model()
    s = m.compile("absolute")
    q, qd = rng.uniform(-2, 2, 2), rng.uniform(-3, 3, 2)
    p1, p2 = q[0], q[0] + q[1]
    states = {
        "b1": (rotation_matrix((0, 0, 1), p1), np.zeros(3), np.array([0, 0, qd[0]]), np.zeros(3)),
        "b2": (
            rotation_matrix((0, 0, 1), p2),
            np.append(L1 * u(p1), 0.0),
            np.array([0, 0, qd[0] + qd[1]]),
            np.append(L1 * up(p1) * qd[0], 0.0),
        ),
    }
    Q, QD = s.state_from_bodies(states)
    assert np.abs(s.constraint(Q)).max() < 1e-14
    fd = s.forward_dynamics(Q, QD, t=0.0)
    ref = double_pendulum_reference(q, qd)
    a1, _ = fd.body_acceleration("b1")
    a2, o2 = fd.body_acceleration("b2")
    assert abs(a1[2] - ref[0]) < 1e-10 * (1 + abs(ref[0]))
    assert abs(a2[2] - (ref[0] + ref[1])) < 1e-10 * (1 + abs(ref).max())
    a_joint2 = L1 * (up(p1) * ref[0] - u(p1) * qd[0] ** 2)
    assert np.allclose(o2[:2], a_joint2, atol=1e-10 * (1 + abs(ref).max()))
    assert newton_euler_residual(s, m, Q, QD, fd) < 1e-9
    # the torsion spring's torque is part of joint 2's reported reaction (about the axis)
    tau = -K_T * q[1] - C_T * qd[1]
    W2 = fd.reaction("j2")
    assert abs(W2[2] - tau) < 1e-9


# -- slider-crank (the seed's data) ---------------------------------------------------
def slider_crank(k, c, fa):
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import sda_slider_crank

    return sda_slider_crank.build(k=k, c=c, fa=fa)


def slider_crank_reference(th, thd, k, c, fa, l0, F=1000.0):
    """Crank angular acceleration of the 1-dof model (links 2 m, 50 kg, I = 15; slider 1 kg)."""
    s, co = np.sin(th), np.cos(th)
    m_eff = 15 + 50 * 1 + 15 + 50 * (9 * s * s + co * co) + 1.0 * 16 * s * s
    dm = 50 * 16 * s * co + 1.0 * 32 * s * co
    l, ldot = 2 * co, -2 * s * thd
    f = k * (l - l0) + c * ldot + fa
    Q = F * (-4 * s) + f * 2 * s
    return (Q - 0.5 * dm * thd**2) / m_eff


@pytest.mark.parametrize("th,thd", [(0.7, 0.0), (0.3, -2.0), (1.2, 1.5), (-0.5, 3.0)])
def test_slider_crank_against_one_dof_model(th, thd):
    k, c, fa = 2e4, 300.0, 150.0
    m = slider_crank(k, c, fa)
    s = m.compile("absolute")
    l0 = m.sda.l0
    Rz = lambda a: rotation_matrix((0, 0, 1), a)
    states = {
        "crank": (
            Rz(th),
            np.array([np.cos(th), np.sin(th), 0]),
            np.array([0, 0, thd]),
            np.array([-np.sin(th), np.cos(th), 0]) * thd,
        ),
        "rod": (
            Rz(-th),
            np.array([3 * np.cos(th), np.sin(th), 0]),
            np.array([0, 0, -thd]),
            np.array([-3 * np.sin(th), np.cos(th), 0]) * thd,
        ),
        "slider": (
            np.eye(3),
            np.array([4 * np.cos(th), 0, 0]),
            np.zeros(3),
            np.array([-4 * np.sin(th), 0, 0]) * thd,
        ),
    }
    Q, QD = s.state_from_bodies(states)
    assert np.abs(s.constraint(Q)).max() < 1e-14
    fd = s.forward_dynamics(Q, QD)
    ref = slider_crank_reference(th, thd, k, c, fa, l0)
    assert abs(fd.body_acceleration("crank")[0][2] - ref) < 1e-10 * (1 + abs(ref))
    assert abs(fd.body_acceleration("rod")[0][2] + ref) < 1e-10 * (1 + abs(ref))
    assert newton_euler_residual(s, m, Q, QD, fd) < 1e-8


@pytest.mark.parametrize("seed", range(3))
def test_newton_euler_balance_every_joint_type(seed):
    """Reactions of every joint type close each body's Newton-Euler balance."""
    rng = np.random.default_rng(seed)
    m = all_joints_model(rng, joint_force=True)
    for j in m.joints():
        if j.nq:
            j.q0 = j.normalize(j.neutral() + 0.4 * rng.normal(size=j.nq))
            j.qd0 = rng.normal(size=j.nv)
    s = m.compile("absolute")
    q, qd = s.q0(), s.qd0()
    fd = s.forward_dynamics(q, qd, t=0.3)
    assert newton_euler_residual(s, m, q, qd, fd, t=0.3) < 1e-9
    # acceleration constraints hold
    P = s.constraint_jacobian(q)
    assert np.abs(P @ fd.qdd - s.constraints.gamma(q, qd)).max() < 1e-10


def test_reaction_child_is_ground():
    """A joint written with the ground as child reports the wrench on the ground."""
    m = fm.Model("flip")
    m.b = fm.RigidBody(2.0, (0.1, 0.1, 0.1), com=(0.5, 0, 0))
    m.j = fm.Revolute(m.b, m.ground)
    m.g = fm.Gravity((0, -9.81, 0))
    s = m.compile("absolute")
    q, qd = s.q0(), s.qd0()
    fd = s.forward_dynamics(q, qd)
    assert newton_euler_residual(s, m, q, qd, fd) < 1e-10
