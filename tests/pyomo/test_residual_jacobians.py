"""Exact node-residual Jacobians of flexmbd.pyomo against central finite differences.

Runs without Pyomo (the residuals are plain numpy). The Jacobians are exact on the
Euler-parameter manifold |e| = 1, where every solution lies; the states are random
there (the rigid coordinates perturbed, then the quaternion renormalized).
"""

import numpy as np
import pytest

import flexmbd as fm
import flexmbd.pyomo as fmo
from flexmbd.errors import ModelError


def unit(Q):
    Q = Q.copy()
    Q[:, 3:7] /= np.linalg.norm(Q[:, 3:7], axis=1, keepdims=True)
    return Q


def fd_error(res, X, p):
    """Largest column-wise relative difference between the exact and the FD Jacobian."""
    r, J = res.evaluate(X, p)
    assert np.allclose(r, res.residual(X, p), rtol=0, atol=1e-12 * max(1, abs(r).max()))
    Jd = J.toarray()
    Z = np.concatenate([X, p])
    worst = 0.0
    scale = np.abs(Jd).max()
    for j in range(Z.size):
        h = 1e-6 * max(1.0, abs(Z[j]))
        Zp, Zm = Z.copy(), Z.copy()
        Zp[j] += h
        Zm[j] -= h
        col = (
            res.residual(Zp[: X.size], Zp[X.size :]) - res.residual(Zm[: X.size], Zm[X.size :])
        ) / (2 * h)
        ref = max(np.linalg.norm(col), 1e-3 * scale)
        worst = max(worst, np.linalg.norm(Jd[:, j] - col) / ref)
    res.set_parameters(p)
    return worst


def random_nodes(res, s, rng, dq):
    q0 = s.initial_conditions()[0]
    N = res.N
    return res.join(
        unit(np.tile(q0, (N, 1)) + dq * rng.standard_normal((N, s.n))),
        rng.standard_normal((N, s.n)),
        rng.standard_normal((N, s.n)),
        rng.standard_normal((N, s.nc)),
        rng.standard_normal((N, res.nu)),
    )


def rigid_pendulum():
    m = fm.Model("pend")
    m.link = fm.RigidBody(mass=2.0, inertia=np.diag([0.01, 0.2, 0.2]), com=(0.5, 0, 0))
    m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1))
    m.g = fm.Gravity((0, -9.81, 0))
    m.fric = fmo.ViscousBearing(m.hinge, 0.3)
    m.u = fmo.JointInput(m.hinge)
    m.spring = fm.SpringDamperActuator(m.ground, (0.5, 0.5, 0), m.link, (1.0, 0, 0), k=50.0, c=2.0)
    s = m.compile("absolute")
    P = fmo.parameters(m)
    for p in (P.link.mass, P.fric.c, P.spring.k, P.spring.c):
        p.free()
    return m, s, P


@pytest.mark.parametrize("compiled", [True, False])
def test_rigid_pendulum_jacobian_matches_finite_differences(compiled):
    rng = np.random.default_rng(1)
    m, s, P = rigid_pendulum()
    res = fmo.NodeResiduals(s, [0.0, 0.1], P.free_parameters(), [m.u], compiled=compiled)
    assert res.compiled == compiled
    X = random_nodes(res, s, rng, 1e-2)
    p = np.array([pp.value for pp in P.free_parameters()])
    assert fd_error(res, X, p) < 1e-6


@pytest.fixture(scope="module")
def strip():
    import skfem

    mesh = skfem.MeshHex1.init_tensor(
        np.linspace(0, 1.0, 9), np.linspace(-0.01, 0.01, 2), np.linspace(-0.01, 0.01, 2)
    )
    st = fm.CraigBampton(3, interfaces={"A": fm.fem.Plane((0, 0, 0), (1, 0, 0))})
    return fm.fem.reduce(
        mesh,
        fm.Material(E=2.1e11, nu=0.3, rho=7850.0),
        st,
        name="strip",
        geometric=False,
        zeta=0.01,
    )


def flexible_model(rb):
    m = fm.Model("flex")
    m.beam = fm.FlexibleBody(rb, geometric_stiffening=False)
    m.hinge = fm.Revolute(m.ground, m.beam, axis=(0, 0, 1), child_frame=m.beam.interface("A"))
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    m.fric = fmo.ViscousBearing(m.hinge, 0.3)
    m.u = fmo.JointInput(m.hinge)
    return m


@pytest.mark.parametrize("compiled", [True, False])
def test_flexible_pendulum_jacobian_matches_finite_differences(strip, compiled):
    rng = np.random.default_rng(2)
    m = flexible_model(strip)
    s = m.compile("absolute")
    P = fmo.parameters(m)
    for p in (P.beam.zeta[0], P.beam.zeta[1], P.beam.stiffness_scale, P.fric.c):
        p.free()
    assert P.beam.zeta[0].value == pytest.approx(0.01)  # read from the reduced body
    res = fmo.NodeResiduals(s, [0.0, 0.1], P.free_parameters(), [m.u], compiled=compiled)
    assert res.compiled == compiled
    X = random_nodes(res, s, rng, 1e-3)
    p = np.array([pp.value for pp in P.free_parameters()])
    assert fd_error(res, X, p) < 1e-6


def test_compiled_nodes_equal_the_python_terms_to_round_off(strip):
    """The engine's node residuals and Jacobian (the bearing and the input compiled laws,
    an SDA, gravity; rigid and flexible pendulum, random states, parameters moved) equal
    the Python terms' to round-off, and the engine's fixed pattern holds every non-zero of
    the Python Jacobian."""
    rng = np.random.default_rng(3)
    for m, s, P in (rigid_pendulum(), (*_flex(strip),)):
        res = fmo.NodeResiduals(s, [0.0, 0.05, 0.1], P.free_parameters(), [m.u])
        assert res.compiled  # the default: the engine runs every element
        X = random_nodes(res, s, rng, 1e-3)
        p = 1.3 * np.array([pp.value for pp in P.free_parameters()])
        out = {}
        for c in (True, False):
            res.compiled = c
            r, J = res.evaluate(X, p)
            out[c] = (r, J.toarray(), J.nnz)
        (r1, J1, nnz1), (r0, J0, _) = out[True], out[False]
        assert np.abs(r1 - r0).max() < 1e-13 * np.abs(r0).max()  # measured 3e-16 .. 3e-15
        assert np.abs(J1 - J0).max() < 1e-13 * np.abs(J0).max()  # measured 4e-20 .. 7e-18
        assert not np.any((J1 != 0) & (J0 == 0))
        assert nnz1 >= np.count_nonzero(J0)  # the pattern: every Python non-zero


def _flex(strip):
    m = flexible_model(strip)
    s = m.compile("absolute")
    P = fmo.parameters(m)
    for p in (P.beam.zeta[0], P.fric.c):
        p.free()
    return m, s, P


def test_modal_parameters_change_the_dynamics_as_declared(strip):
    """zeta_i scales the damping of mode i only; the stiffness factor scales K_ff."""
    m = flexible_model(strip)
    s = m.compile("absolute")
    P = fmo.parameters(m)
    q, qd, qdd, lam = s.initial_conditions()
    sl = s.modal_slices["beam"].q
    qd = qd.copy()
    qd[sl] = [1.0, -0.5, 0.2]
    res = fmo.NodeResiduals(s, [0.0])
    F0 = res.residual(res.join(q[None], qd[None], qdd[None], lam[None]))[: s.n][sl]
    P.beam.zeta[0].value = 0.03  # 0.01 -> 0.03
    s.refresh()
    F1 = res.residual(res.join(q[None], qd[None], qdd[None], lam[None]))[: s.n][sl]
    rb = strip
    import scipy.linalg as sla

    lam_, X = sla.eigh(rb.K_ff, rb.M_ff)
    Y = rb.M_ff @ X
    expect = 0.02 * 2 * np.sqrt(lam_[0]) * Y[:, 0] * (Y[:, 0] @ qd[sl])
    np.testing.assert_allclose(F1 - F0, expect, rtol=1e-10, atol=1e-12 * abs(F0).max())


def test_errors_name_the_fix(strip):
    m = fm.Model("stiff")
    m.beam = fm.FlexibleBody(strip)  # geometric stiffening on by default
    m.hinge = fm.Revolute(m.ground, m.beam, axis=(0, 0, 1), child_frame=m.beam.interface("A"))
    with pytest.raises(ModelError, match="geometric_stiffening=False"):
        fmo.NodeResiduals(m.compile("absolute"), [0.0])
    P = fmo.parameters(flexible_model(strip))
    with pytest.raises(ModelError, match="lb <= ub"):
        P.beam.zeta[0].free(bounds=(1.0, 0.0))
    with pytest.raises(ModelError, match="offers"):
        _ = P.beam.nothing
    with pytest.raises(ModelError, match="finite"):
        P.fric.c.value = float("nan")
