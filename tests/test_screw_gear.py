"""Screw joint and gear / rack-and-pinion coupling against hand-derived motion.

Closed forms (no friction, start at rest):

* a body of mass ``m`` and axial inertia ``I`` on a vertical screw of advance
  ``h = pitch / (2 pi)`` m/rad, gravity ``g`` along ``-axis``: the energy
  ``T = (m h^2 + I) theta'^2 / 2``, ``V = m g h theta`` give
  ``theta'' = -m g h / (m h^2 + I)``; the joint transmits the torque ``I theta''``
  and the axial force ``m (g + h theta'')``;
* two rotors ``I_a``, ``I_b`` with ``q_b = r q_a`` and a torque ``T`` on ``a``:
  ``q_a'' = T / (I_a + r^2 I_b)``; the coupling torque on ``b`` is ``I_b q_b''``;
* rack and pinion (pinion ``I_p``, rack mass ``m_r``, radius ``r``):
  ``theta'' = T / (I_p + m_r r^2)``, rack force ``m_r r theta''``.
"""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.errors import ModelError

G = 9.81
M, IZ, PITCH = 2.0, 0.03, 0.05
H = PITCH / (2 * np.pi)
THDD = -M * G * H / (M * H * H + IZ)


def _screw_model():
    m = fm.Model("screw")
    m.nut = fm.RigidBody(mass=M, inertia=np.diag([0.01, 0.02, IZ]))
    m.s = fm.Screw(m.ground, m.nut, axis=(0, 0, 1), pitch=PITCH)
    m.g = fm.Gravity((0, 0, -G))
    return m


def _run(m, formulation, t_end, dt=1e-3):
    if formulation == "absolute":
        return m.simulate(
            t_end=t_end, dt=dt, formulation="absolute", integrator="generalized-alpha"
        )
    return m.simulate(t_end=t_end, dt=dt, formulation="recursive", integrator="rk4")


def test_screw_kinematics_and_table():
    m = _screw_model()
    R, p = m.s.transform([2.0])
    assert np.allclose(R, fm.spatial.rotation_matrix((0, 0, 1), 2.0), atol=1e-15)
    assert np.allclose(p, [0, 0, 2.0 * H], atol=1e-15)
    assert m.s.n_constraints == 5
    from flexmbd.joint_types import joint_coordinates

    # coordinates from a pose: the advance picks the turn (continuous beyond pi)
    th = 7.5
    assert joint_coordinates(m.s, *m.s.transform([th]))[0] == pytest.approx(th, abs=1e-12)


@pytest.mark.parametrize("formulation", ["recursive", "absolute"])
def test_screw_falls_as_closed_form(formulation):
    if formulation == "recursive":
        fd = (
            _screw_model()
            .compile(formulation="recursive")
            .forward_dynamics(np.zeros(1), np.zeros(1))
        )
        assert fd.qdd[0] == pytest.approx(THDD, rel=1e-13)
        assert fd.reactions[0, 2] == pytest.approx(IZ * THDD, rel=1e-13)
    t_end = 1.2  # theta reaches -3.7 rad: past -pi, stays continuous
    res = _run(_screw_model(), formulation, t_end)
    q = res.joint("s").q[:, 0]
    exact = 0.5 * THDD * res.t**2
    tol = 1e-10 if formulation == "recursive" else 2e-6  # rk4 exact on t^2; alpha O(dt^2)
    assert np.max(np.abs(q - exact)) < tol * max(1.0, abs(exact[-1]))
    assert exact[-1] < -np.pi
    reac = res.joint("s").reaction[-1]
    assert reac[2] == pytest.approx(IZ * THDD, rel=1e-5)  # torque about the axis
    assert reac[5] == pytest.approx(M * (G + H * THDD), rel=1e-5)  # axial force


def _gear_model(ratio=-2.5, Ia=0.2, Ib=0.05, T=1.3):
    m = fm.Model("gears")
    m.a = fm.RigidBody(mass=1.0, inertia=np.diag([0.1, 0.1, Ia]))
    m.b = fm.RigidBody(mass=1.0, inertia=np.diag([0.1, 0.1, Ib]))
    m.ja = fm.Revolute(m.ground, m.a, axis=(0, 0, 1))
    m.jb = fm.Revolute(m.ground, m.b, axis=(0, 0, 1), parent_frame=(0.3, 0, 0))
    m.gear = fm.GearCoupling(m.ja, m.jb, ratio=ratio)
    m.tq = fm.JointForce(m.ja, lambda t, q, v: np.array([T]))
    return m


@pytest.mark.parametrize("formulation", ["recursive", "absolute"])
def test_gear_pair_closed_form(formulation):
    ratio, Ia, Ib, T = -2.5, 0.2, 0.05, 1.3
    qdd_a = T / (Ia + ratio**2 * Ib)
    res = _run(_gear_model(ratio, Ia, Ib, T), formulation, 0.5)
    tol = 1e-10 if formulation == "recursive" else 2e-6
    qa, qb = res.joint("ja").q[:, 0], res.joint("jb").q[:, 0]
    assert np.max(np.abs(qa - 0.5 * qdd_a * res.t**2)) < tol
    assert np.max(np.abs(qb - ratio * qa)) < 1e-9
    # the coupling torque on b accelerates b alone; a joint reaction includes the joint
    # forces along it (motor + coupling on a)
    assert res.joint("jb").reaction[-1, 2] == pytest.approx(Ib * ratio * qdd_a, rel=1e-5)
    assert res.joint("ja").reaction[-1, 2] == pytest.approx(Ia * qdd_a, rel=1e-5)


@pytest.mark.parametrize("formulation", ["recursive", "absolute"])
def test_rack_and_pinion_closed_form(formulation):
    Ip, mr, r, T = 0.02, 3.0, 0.04, 0.5
    m = fm.Model("rack")
    m.pinion = fm.RigidBody(mass=1.0, inertia=np.diag([0.01, 0.01, Ip]))
    m.rack = fm.RigidBody(mass=mr, inertia=np.diag([0.01, 0.01, 0.01]))
    m.jp = fm.Revolute(m.ground, m.pinion, axis=(0, 0, 1))
    m.jr = fm.Prismatic(m.ground, m.rack, axis=(1, 0, 0), parent_frame=(0, -r, 0))
    m.mesh = fm.GearCoupling.rack_and_pinion(m.jp, m.jr, radius=r)
    m.tq = fm.JointForce(m.jp, lambda t, q, v: np.array([T]))
    thdd = T / (Ip + mr * r * r)
    res = _run(m, formulation, 0.5)
    tol = 1e-10 if formulation == "recursive" else 5e-6  # relative
    exact = 0.5 * thdd * res.t**2
    assert np.max(np.abs(res.joint("jp").q[:, 0] - exact)) < tol * exact[-1]
    assert np.max(np.abs(res.joint("jr").q[:, 0] - r * res.joint("jp").q[:, 0])) < 1e-9
    # generalized-alpha converges at second order: 2.2e-5 at dt = 1e-3, 5.4e-6 at dt / 2
    rel = 1e-9 if formulation == "recursive" else 5e-5
    assert res.joint("jr").reaction[-1, 3] == pytest.approx(mr * r * thdd, rel=rel)


def _screw_loop(cut):
    """Turntable A (Revolute about z) carrying nut B on a Prismatic along z; B also on a
    Screw to ground: a closed loop. B turns with A and advances h theta:
    ``theta'' = -m_B g h / (I_A + I_B + m_B h^2)``."""
    m = fm.Model("screw_loop")
    m.A = fm.RigidBody(mass=1.0, inertia=np.diag([0.05, 0.05, 0.04]))
    m.B = fm.RigidBody(mass=M, inertia=np.diag([0.01, 0.02, IZ]))
    m.r = fm.Revolute(m.ground, m.A, axis=(0, 0, 1))
    m.p = fm.Prismatic(m.A, m.B, axis=(0, 0, 1), cut=(cut == "p"))
    m.s = fm.Screw(m.ground, m.B, axis=(0, 0, 1), pitch=PITCH, cut=(cut == "s"))
    m.g = fm.Gravity((0, 0, -G))
    return m


@pytest.mark.parametrize("cut", ["s", "p"])
@pytest.mark.parametrize("formulation", ["recursive", "absolute"])
def test_screw_in_closed_loop(formulation, cut):
    thdd = -M * G * H / (0.04 + IZ + M * H * H)
    res = _run(_screw_loop(cut), formulation, 0.6)
    tol = 1e-8 if formulation == "recursive" else 2e-6
    for name in ("r", "s"):
        q = res.joint(name).q[:, 0]
        assert np.max(np.abs(q - 0.5 * thdd * res.t**2)) < tol
    assert np.max(np.abs(res.joint("p").q[:, 0] - H * res.joint("r").q[:, 0])) < 1e-8


def test_coupling_bad_input():
    m = _screw_model()
    m.b = fm.RigidBody(mass=1.0, inertia=np.eye(3))
    m.sp = fm.Spherical(m.ground, m.b)
    with pytest.raises(ModelError, match="cannot be coupled"):
        fm.GearCoupling(m.s, m.sp, ratio=1.0)
    m.c = fm.RigidBody(mass=1.0, inertia=np.eye(3))
    m.rc = fm.Revolute(m.ground, m.c)
    with pytest.raises(ModelError, match="ratio"):
        fm.GearCoupling(m.s, m.rc, ratio=0.0)
    with pytest.raises(ModelError, match="pitch"):
        fm.Screw(m.ground, m.b, pitch=float("nan"))


@pytest.mark.parametrize("formulation", ["recursive", "absolute"])
def test_screw_joint_force(formulation):
    """A generalized force T on the screw angle (virtual work T dtheta) and a spring:
    ``(I + m h^2) theta'' = T - k theta``, from rest at theta = 0."""
    T, k = 0.4, 3.0
    m = fm.Model("screw_drive")
    m.nut = fm.RigidBody(mass=M, inertia=np.diag([0.01, 0.02, IZ]))
    m.s = fm.Screw(m.ground, m.nut, axis=(1, 0, 0), pitch=-PITCH)
    m.f = fm.JointForce(
        m.s,
        lambda t, q, v: np.array([T - k * q[0]]),
        dfdq=lambda t, q, v: np.array([[-k]]),
        dfdqd=lambda t, q, v: np.zeros((1, 1)),
    )
    Ieff = 0.01 + M * H * H  # axial inertia about x: 0.01
    w = np.sqrt(k / Ieff)
    res = _run(m, formulation, 0.5)
    exact = T / k * (1 - np.cos(w * res.t))
    tol = 1e-8 if formulation == "recursive" else 2e-4  # rk4: 3e-9; alpha: O(dt^2)
    assert np.max(np.abs(res.joint("s").q[:, 0] - exact)) < tol * np.max(np.abs(exact))
    # the nut advances along -x for a positive turn (negative pitch)
    R, p = m.s.transform(res.joint("s").q[-1])
    assert p[0] == pytest.approx(-H * res.joint("s").q[-1, 0], rel=1e-14)


def test_viewer_draws_screw_thread():
    """The viewer's screw marker: a helix of radius ``size`` about the joint axis, over
    the length of the axis cylinder (5 size)."""
    from flexmbd.viz.render import _helix

    d = np.array([0.0, 1.0, 1.0]) / np.sqrt(2)
    o = np.array([0.1, 0.2, 0.3])
    P = _helix(o, d, 0.01)
    rel = P - o
    along = rel @ d
    radial = np.linalg.norm(rel - np.outer(along, d), axis=1)
    assert np.allclose(radial, 0.01, rtol=1e-12)
    assert along.min() == pytest.approx(-0.025) and along.max() == pytest.approx(0.025)
