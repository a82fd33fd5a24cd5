"""Exact Jacobians of the flexible-body terms of the absolute formulation vs central differences.

Every new term: inertia (rigid-elastic coupling, quadratic velocity forces), elastic and
damping forces, distributed gravity, geometric stiffening (current inertia loads and
lagged interface wrenches), joints at deforming interface and node frames (points and
directions, through the exponential map of the rotation modes), their Hessian
``d(Phi_q^T lam)/dq``, the acceleration right-hand side and point loads at deforming
frames.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from flex_helpers import central_jacobian, rel_err, small_beam

import flexmbd as fm

TOL = 1e-7


def _dense(trip, shape):
    r, c, v = trip
    return sp.coo_matrix((v, (r, c)), shape=shape).toarray()


def flexible_model(stiffening=True, damping=True, loads=True):
    """Beam (soft steel-like, so that every term has a comparable size) hanging from a
    revolute joint at interface A, a rigid body on a spherical joint at interface B, a
    universal joint from a node to a second rigid body, gravity and (``loads``) point
    loads."""
    rb = small_beam(3, "cb", rayleigh=(0.5, 1e-3) if damping else None)
    m = fm.Model("flex_jac")
    m.beam = fm.FlexibleBody(rb, geometric_stiffening=stiffening)
    m.tip = fm.RigidBody(2.0, (0.1, 0.2, 0.3), com=(0.05, 0.02, -0.01))
    m.arm = fm.RigidBody(1.0, (0.05, 0.06, 0.07), com=(0.1, 0.0, 0.0))
    m.j0 = fm.Revolute(
        m.ground,
        m.beam,
        axis=(0.2, 0.1, 1.0),
        parent_frame=(0, 0.025, 0.025),
        child_frame=m.beam.interface("A"),
    )
    m.j1 = fm.Revolute(
        m.beam,
        m.tip,
        axis=(0.3, 1.0, 0.2),
        parent_frame=m.beam.interface("B", rotation=(0.1, -0.2, 0.3)),
        child_frame=((0.01, 0.02, 0.03), (0.2, 0.1, 0.0)),
    )
    m.j2 = fm.Universal(
        m.beam,
        m.arm,
        axis1=(1, 0, 0),
        axis2=(0, 1, 0),
        parent_frame=m.beam.point((0.5, 0.05, 0.05)),
        child_frame=(0.2, 0, 0),
    )
    m.g = fm.Gravity((0.3, -9.81, 0.5))
    if not loads:
        return m
    m.f1 = fm.PointForce(m.beam, m.beam.interface("B"), (10.0, -20.0, 5.0))
    m.f2 = fm.PointForce(m.beam, m.beam.point((0.75, 0.0, 0.05)), (3.0, 4.0, -2.0), frame="body")
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


@pytest.fixture(scope="module")
def system():
    s = flexible_model().compile("absolute")
    d = s.flexible.flex[0]
    assert d.stiffening and d.itf_names == ["B"]
    d.set_interface_loads({"B": np.array([0.5, -0.3, 0.2, 40.0, -25.0, 30.0])})
    return s


def residual(s, q, qd, qdd, lam, t=0.0):
    T = s.dae_terms(q, qd, qdd, lam, t, jacobian=False)
    return T.R + T.PtL - T.Q


@pytest.mark.parametrize("seed", range(3))
def test_newton_jacobian_blocks(system, seed):
    s = system
    rng = np.random.default_rng(seed)
    q, qd, qdd, lam = random_state(s, rng)
    T = s.dae_terms(q, qd, qdd, lam, 0.3)
    n = s.n
    K = _dense(T.Kin, (n, n)) + _dense(T.H, (n, n)) - _dense(T.KQ, (n, n))
    D = _dense(T.Din, (n, n)) - _dense(T.DQ, (n, n))
    M = _dense(T.M, (n, n))
    Kfd = central_jacobian(lambda x: residual(s, x, qd, qdd, lam, 0.3), q)
    # the residual is a polynomial of degree 2 in qd (damping; quadratic velocity and
    # centrifugal stiffening terms) and linear in qdd: the fourth-order difference is
    # exact for them at any step, and a unit step keeps the round-off of the large
    # stiffness terms (eps |R| / h, ~1e-7 of the damping block at h = 1e-4) out
    Dfd = central_jacobian(lambda x: residual(s, q, x, qdd, lam, 0.3), qd, h=1.0)
    Mfd = central_jacobian(lambda x: residual(s, q, qd, x, lam, 0.3), qdd, h=1.0)
    # blockwise: modal stiffness (1e5..1e8) and reference blocks have very different scales
    r, f = slice(0, s.n_rigid), slice(s.n_rigid, n)
    for name, A, B in (("K", K, Kfd), ("D", D, Dfd), ("M", M, Mfd)):
        for rr in (r, f):
            for cc in (r, f):
                assert rel_err(A[rr, cc], B[rr, cc]) < TOL, (name, rr, cc)


@pytest.mark.parametrize("seed", range(3))
def test_constraint_jacobian_and_gamma(system, seed):
    s = system
    rng = np.random.default_rng(10 + seed)
    q, qd, qdd, _ = random_state(s, rng)
    P = s.constraint_jacobian(q).toarray()
    Pfd = central_jacobian(lambda x: s.constraint(x), q)
    assert rel_err(P, Pfd) < TOL
    # gamma: d2/dt2 Phi(q + t qd + t^2/2 qdd) = Phi_q qdd - gamma
    h = 1e-3

    def phi(tt):
        return s.constraint(q + tt * qd + 0.5 * tt * tt * qdd)

    d2 = (-phi(2 * h) + 16 * phi(h) - 30 * phi(0) + 16 * phi(-h) - phi(-2 * h)) / (12 * h * h)
    g = s.constraints.gamma(q, qd)
    assert rel_err(P @ qdd - g, d2) < 1e-6


def test_flexible_slots_are_exercised(system):
    cs = system.constraints
    kinds = {(fs.point, fs.n) for fs in cs.fslots}
    assert (True, 9) in kinds and (False, 9) in kinds  # points and directions of interface B


def test_mass_matrix_and_forward_dynamics_consistency(system):
    s = system
    rng = np.random.default_rng(5)
    q, qd, qdd, lam = random_state(s, rng)
    # symmetric mass = dR/dddq without the stiffening coupling
    s2 = flexible_model(stiffening=False).compile("absolute")
    T = s2.dae_terms(q, qd, qdd, lam)
    M = _dense(T.M, (s.n, s.n))
    Ms = s2.mass_matrix(q).toarray()
    assert rel_err(M, Ms) < 1e-12 and rel_err(Ms, Ms.T) < 1e-13
    # forward dynamics satisfies the residual and the acceleration constraints
    fd = s.forward_dynamics(q, qd)
    r = residual(s, q, qd, fd.qdd, fd.lam)
    assert np.abs(r).max() < 1e-8 * max(
        1.0, np.abs(s.dae_terms(q, qd, fd.qdd, fd.lam, jacobian=False).R).max()
    )
