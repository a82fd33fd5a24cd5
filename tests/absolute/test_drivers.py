"""Rheonomic joint drivers in the absolute formulation."""

import numpy as np
import pytest
from abs_helpers import central_jacobian, rel_err

import flexmbd as fm
from flexmbd.constraints import JointDriver


def _driven_model(kind, coordinate):
    rng = np.random.default_rng(3)
    m = fm.Model("driven")
    m.a = fm.RigidBody(1.0, (0.3, 0.3, 0.3), com=(0.2, 0.1, 0))
    m.b = fm.RigidBody(2.0, (0.2, 0.25, 0.3), com=(0.1, 0, 0.1))
    pose = (np.array([0.1, 0.2, 0.3]), fm.spatial.rotvec_to_rot([0.2, 0.1, 0.3]))
    m.ja = fm.Free(m.ground, m.a, q0=pose)
    frames = dict(
        parent_frame=(rng.normal(size=3), rng.normal(size=3)),
        child_frame=(rng.normal(size=3), rng.normal(size=3)),
    )
    joint = {
        "revolute": lambda: fm.Revolute(m.a, m.b, axis=(0.2, 0.3, 1.0), **frames),
        "prismatic": lambda: fm.Prismatic(m.a, m.b, axis=(1.0, 0.2, 0.1), **frames),
        "cylindrical": lambda: fm.Cylindrical(m.a, m.b, axis=(0.1, 1.0, 0.2), **frames),
        "universal": lambda: fm.Universal(m.a, m.b, **frames),
        "planar": lambda: fm.Planar(m.a, m.b, normal=(0, 0, 1), **frames),
    }[kind]()
    m.jb = joint
    m.drive = JointDriver(
        joint,
        lambda t: 0.3 + 0.5 * np.sin(2 * t),
        lambda t: 1.0 * np.cos(2 * t),
        lambda t: -2.0 * np.sin(2 * t),
        coordinate=coordinate,
    )
    return m


CASES = [
    ("revolute", 0),
    ("prismatic", 0),
    ("cylindrical", 0),
    ("cylindrical", 1),
    ("universal", 0),
    ("universal", 1),
    ("planar", 0),
    ("planar", 1),
    ("planar", 2),
]


@pytest.mark.parametrize("kind,coordinate", CASES)
def test_driver_derivatives(kind, coordinate):
    rng = np.random.default_rng(1)
    s = _driven_model(kind, coordinate).compile("absolute")
    cs = s.constraints
    q = rng.normal(size=s.n)
    qd = rng.normal(size=s.n)
    t = 0.37
    phi, P = cs.evaluate(q, t=t)
    Pd = np.zeros((s.nc, s.n))
    np.add.at(Pd, (P[0], P[1]), P[2])
    assert rel_err(Pd, central_jacobian(lambda x: cs.evaluate(x, False, t), q)) < 1e-7
    pt = cs.phi_t(q, t)
    fd_t = central_jacobian(lambda x: cs.evaluate(q, False, x[0]), np.array([t]))[:, 0]
    assert np.abs(pt - fd_t).max() < 1e-8 * (1 + np.abs(fd_t).max())
    # gamma = -d2/ds2 Phi(q + s qd, t + s)
    h = 1e-4
    d2 = (
        cs.evaluate(q + h * qd, False, t + h)
        - 2 * cs.evaluate(q, False, t)
        + cs.evaluate(q - h * qd, False, t - h)
    ) / h**2
    assert rel_err(cs.gamma(q, qd, t), -d2) < 1e-6
    # the driven coordinate follows f(t) at consistent states
    s2 = _driven_model(kind, coordinate)
    sy = s2.compile("absolute")
    q0, qd0, qdd0, lam0 = sy.initial_conditions(t0=t)
    assert np.abs(sy.constraint(q0, t)).max() < 1e-11
    P0 = sy.constraint_jacobian(q0, t)
    assert np.abs(P0 @ qd0 - sy.constraint_velocity_rhs(q0, t)).max() < 1e-10
    assert np.abs(P0 @ qdd0 - sy.constraints.gamma(q0, qd0, t)).max() < 1e-9


def test_driven_pendulum_torque_and_motion():
    """Pendulum driven at theta = 0.2 + 0.8 sin(3t): the drive torque is I f'' + m g c cos f."""
    m = fm.Model("driven_pendulum")
    mass, c, Iz = 2.0, 0.6, 0.2
    m.link = fm.RigidBody(mass, (0.01, Iz, Iz), com=(c, 0, 0))
    m.hinge = fm.Revolute(m.ground, m.link, q0=[0.0])
    m.g = fm.Gravity((0, -9.81, 0))
    f = lambda t: 0.2 + 0.8 * np.sin(3 * t)
    fdd = lambda t: -7.2 * np.sin(3 * t)
    m.drive = JointDriver(m.hinge, f, lambda t: 2.4 * np.cos(3 * t), fdd)
    s = m.compile("absolute")
    res = s.simulate(1.0, dt=0.01, integrator="generalized-alpha", rho_inf=0.8, tol=1e-10)
    ang = np.array([np.arctan2(*s.rotation(q, "link")[[1, 0], 0]) for q in res.q])
    assert np.abs(ang - f(res.t)).max() < 1e-10  # position-level constraint at every step
    tau = res.extra["driver:drive"]
    ref = (Iz + mass * c * c) * fdd(res.t) + mass * 9.81 * c * np.cos(f(res.t))
    # index-3 generalized-alpha: the multipliers start with an O(h) transient that the
    # numerical damping removes (Arnold & Bruls 2007); afterwards they are accurate
    assert np.abs(tau[50:] - ref[50:]).max() < 2e-3 * np.abs(ref).max()
    # exact at a consistent state through forward dynamics
    t = 0.41
    q, qd, qdd, lam = s.initial_conditions(t0=t)
    fd = s.forward_dynamics(q, qd, t=t)
    ref_t = (Iz + mass * c * c) * fdd(t) + mass * 9.81 * c * np.cos(f(t))
    assert abs(s.driver_forces(fd.lam)["drive"] - ref_t) < 1e-9
    assert abs(fd.body_acceleration("link")[0][2] - fdd(t)) < 1e-9
    # the drive torque is the motion-direction part of the joint's reaction
    assert abs(fd.reaction("hinge")[2] - ref_t) < 1e-9
