"""Exact Jacobians of the absolute formulation against central differences (1e-7 relative)."""

import numpy as np
import pytest
import scipy.sparse as sp
from abs_helpers import all_joints_model, central_jacobian, random_unit_state, rel_err

import flexmbd as fm
from flexmbd.absolute.forces import BodyState
from flexmbd.spatial import rotvec_to_rot

TOL = 1e-7


class _State:
    def __init__(self, P, V):
        self.P, self.V = P, V

    def pose(self, b):
        return self.P[b]

    def twist(self, b):
        return self.V[b]


def _dense(trip, shape):
    r, c, v = trip
    return sp.coo_matrix((v, (r, c)), shape=shape).toarray()


@pytest.mark.parametrize("seed", range(5))
def test_sda_body_level_jacobians(seed):
    rng = np.random.default_rng(seed)
    m = fm.Model("sda")
    m.a = fm.RigidBody(1.0, (1, 1, 1))
    m.b = fm.RigidBody(1.0, (1, 1, 1))
    m.ja = fm.Free(m.ground, m.a)
    m.jb = fm.Free(m.a, m.b)
    m.s = fm.SpringDamperActuator(
        m.a,
        rng.normal(size=3),
        m.b,
        rng.normal(size=3),
        k=rng.uniform(1, 1e4),
        c=rng.uniform(0, 100),
        l0=rng.uniform(0.1, 2),
        fa=rng.normal() * 10,
    )
    bodies = [m.a, m.b]
    P = {b: (rotvec_to_rot(rng.normal(size=3)), rng.normal(size=3)) for b in bodies}
    V = {b: (rng.normal(size=3), rng.normal(size=3)) for b in bodies}
    J = {(bi, bj): (K, C) for bi, bj, K, C in m.s.jacobians(0.0, _State(P, V))}
    for bj in bodies:

        def wr_x(x, bj=bj):
            P2 = dict(P)
            R, r = P[bj]
            P2[bj] = (rotvec_to_rot(x[:3]) @ R, r + x[3:])
            w = dict(m.s.wrenches(0.0, _State(P2, V)))
            return np.concatenate([w[b] for b in bodies])

        def wr_v(x, bj=bj):
            V2 = dict(V)
            w, v = V[bj]
            V2[bj] = (w + x[:3], v + x[3:])
            w = dict(m.s.wrenches(0.0, _State(P, V2)))
            return np.concatenate([w[b] for b in bodies])

        Kfd = central_jacobian(wr_x, np.zeros(6))
        Cfd = central_jacobian(wr_v, np.zeros(6))
        K = np.vstack([J[(bi, bj)][0] for bi in bodies])
        C = np.vstack([J[(bi, bj)][1] for bi in bodies])
        assert rel_err(K, Kfd) < TOL
        assert rel_err(C, Cfd) < TOL


def _sda_model(rng, ground_end=False):
    m = fm.Model("sda2")
    m.a = fm.RigidBody(2.0, (1, 2, 3), com=(0.1, 0.2, -0.1))
    m.b = fm.RigidBody(1.0, (1, 1, 1))
    m.ja = fm.Free(m.ground, m.a)
    m.jb = fm.Free(m.a, m.b)
    bi = m.ground if ground_end else m.a
    m.s = fm.SpringDamperActuator(
        bi, rng.normal(size=3), m.b, rng.normal(size=3), k=500.0, c=30.0, l0=0.3, fa=4.0
    )
    return m


@pytest.mark.parametrize("seed,ground_end", [(0, False), (1, False), (2, True), (3, False)])
def test_sda_generalized_jacobians_euler_parameters(seed, ground_end):
    rng = np.random.default_rng(seed)
    s = _sda_model(rng, ground_end).compile("absolute")
    q, qd = random_unit_state(s, rng)
    Q, KQ, DQ = s.generalized_forces(q, qd, 0.3, jacobian=True)
    K = _dense(KQ, (s.n, s.n))
    D = _dense(DQ, (s.n, s.n))
    Kfd = central_jacobian(lambda x: s.generalized_forces(x, qd, 0.3), q)
    Dfd = central_jacobian(lambda x: s.generalized_forces(q, x, 0.3), qd)
    assert rel_err(K, Kfd) < TOL
    assert rel_err(D, Dfd) < TOL
    # the switch leaves the element out of the Newton matrix, not out of the forces
    s.model.s.exact_jacobian = False
    s.refresh()
    Q2, KQ2, _ = s.generalized_forces(q, qd, 0.3, jacobian=True)
    assert np.allclose(Q, Q2)
    assert np.abs(_dense(KQ2, (s.n, s.n))).max() == 0.0


def test_generalized_force_is_virtual_power():
    """Q . qd equals the power of the body wrenches (the map 2 E^T is the dual of w = 2 E ed)."""
    rng = np.random.default_rng(3)
    s = all_joints_model(rng).compile("absolute")
    q, qd = random_unit_state(s, rng)
    Q = s.generalized_forces(q, qd, 0.1)
    st = BodyState(s.index, q, qd)
    p = 0.0
    for f in s.forces:
        for b, F in f.wrenches(0.1, st):
            w, v = st.twist(b)
            p += F[:3] @ w + F[3:] @ v
    assert abs(Q @ qd - p) < 1e-10 * max(1.0, abs(p))


@pytest.mark.parametrize("seed", range(3))
def test_all_force_jacobians(seed):
    rng = np.random.default_rng(seed)
    s = all_joints_model(rng).compile("absolute")
    q, qd = random_unit_state(s, rng)
    _, KQ, DQ = s.generalized_forces(q, qd, 0.2, jacobian=True)
    Kfd = central_jacobian(lambda x: s.generalized_forces(x, qd, 0.2), q)
    Dfd = central_jacobian(lambda x: s.generalized_forces(q, x, 0.2), qd)
    assert rel_err(_dense(KQ, (s.n, s.n)), Kfd) < TOL
    assert rel_err(_dense(DQ, (s.n, s.n)), Dfd) < TOL


@pytest.mark.parametrize("seed", range(3))
def test_constraint_jacobian_hessian_gamma(seed):
    rng = np.random.default_rng(seed)
    s = all_joints_model(rng).compile("absolute")
    cs = s.constraints
    q = rng.normal(size=s.n)  # any e: the polynomial forms are exact everywhere
    qd = rng.normal(size=s.n)
    lam = rng.normal(size=s.nc)
    phi, P = cs.evaluate(q)
    Pd = _dense(P, (s.nc, s.n))
    assert rel_err(Pd, central_jacobian(lambda x: cs.evaluate(x, jacobian=False), q)) < TOL
    H = _dense(cs.hessian_lambda(q, lam), (s.n, s.n))
    Hfd = central_jacobian(lambda x: _dense(cs.evaluate(x)[1], (s.nc, s.n)).T @ lam, q)
    assert rel_err(H, Hfd) < TOL
    assert np.allclose(H, H.T, atol=1e-12 * np.abs(H).max())
    # gamma_i = -qd^T Hess(Phi_i) qd  (second derivative along q + s qd)
    h = 1e-4
    d2 = (cs.evaluate(q + h * qd, False) - 2 * phi + cs.evaluate(q - h * qd, False)) / h**2
    g = cs.gamma(q, qd)
    assert rel_err(g, -d2) < 1e-6  # second differences: truncation-limited


@pytest.mark.parametrize("seed", range(3))
def test_full_dae_jacobian(seed):
    rng = np.random.default_rng(seed)
    s = all_joints_model(rng).compile("absolute")
    q, qd = random_unit_state(s, rng)
    qdd = rng.normal(size=s.n)
    lam = rng.normal(size=s.nc)

    def res(q_, qd_, qdd_):
        T = s.dae_terms(q_, qd_, qdd_, lam, 0.4, jacobian=False)
        return T.R + T.PtL - T.Q

    T = s.dae_terms(q, qd, qdd, lam, 0.4, jacobian=True)
    sh = (s.n, s.n)
    Kq = _dense(T.Kin, sh) + _dense(T.H, sh) - _dense(T.KQ, sh)
    Kd = _dense(T.Din, sh) - _dense(T.DQ, sh)
    assert rel_err(Kq, central_jacobian(lambda x: res(x, qd, qdd), q)) < TOL
    assert rel_err(Kd, central_jacobian(lambda x: res(q, x, qdd), qd)) < TOL
    assert rel_err(_dense(T.M, sh), central_jacobian(lambda x: res(q, qd, x), qdd)) < TOL
    M = s.mass_matrix(q).toarray()
    assert np.allclose(M, M.T, atol=1e-13 * np.abs(M).max())


def test_joint_force_power_and_jacobians():
    """Joint forces: power tau.v preserved; Jacobians exact at consistent configurations."""
    rng = np.random.default_rng(11)
    m = all_joints_model(rng, sda=False, joint_force=True)
    for j in m.joints():
        if j.nq:
            q0 = j.neutral() + 0.3 * rng.normal(size=j.nq)
            j.q0 = j.normalize(q0)
            j.qd0 = rng.normal(size=j.nv)
    s = m.compile("absolute")
    q, qd = s.q0(), s.qd0()
    st = BodyState(s.index, q, qd)
    for jm in s._jf:
        qj, v, H, Vrel, _ = jm.relative(st)
        j = jm.joint
        assert np.allclose(qj, j.q0, atol=1e-9)
        assert np.allclose(v, j.qd0, atol=1e-9)
        w, _, _, tau = jm.wrenches(0.0, st)
        p = sum(F[:3] @ st.w[b] + F[3:] @ st.v[b] for b, F in w)
        assert abs(p - tau @ v) < 1e-10
    _, KQ, DQ = s.generalized_forces(q, qd, 0.0, jacobian=True)
    # compare along directions tangent to the constraint manifold (where exactness is claimed)
    P = s.constraint_jacobian(q).toarray()
    _, _, Vt = np.linalg.svd(P)
    N = Vt[np.linalg.matrix_rank(P) :].T  # null space of Phi_q
    Kfd = central_jacobian(lambda x: s.generalized_forces(x, qd, 0.0), q)
    assert rel_err(_dense(KQ, (s.n, s.n)) @ N, Kfd @ N) < 1e-6
    Dfd = central_jacobian(lambda x: s.generalized_forces(q, x, 0.0), qd)
    assert rel_err(_dense(DQ, (s.n, s.n)), Dfd) < 1e-6
