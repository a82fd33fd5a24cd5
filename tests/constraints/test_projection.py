"""flexmbd.constraints.projection on small constraint sets written here.

Oracles: the dense KKT system, the tangent-space equations (eq. 21-23), the
orthogonality relations of the QR bases (eq. 14-15), and for the planar four-bar
of the QR paper an independent one-degree-of-freedom model (tests/constraints/
fourbar_dense.py).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from flexmbd.constraints.projection import Constraints, Projector, qr_basis
from flexmbd.errors import SolverError

sys.path.insert(0, str(Path(__file__).parent))
import fourbar_dense as fb  # noqa: E402

rng = np.random.default_rng(7)


def random_spd(n):
    A = rng.standard_normal((n, n))
    return A @ A.T + n * np.eye(n)


# -- QR bases ------------------------------------------------------------------------------
def test_basis_orthogonality_and_row_selection():
    J = rng.standard_normal((3, 7))
    J = np.vstack([J, 2.0 * J[0] - J[2], J[1]])  # two modelling redundancies (first kind)
    b = qr_basis(J)
    assert b.rank == 3 and b.discarded.size == 2
    Qn, Qt = b.Qn, b.tangent()
    assert Qt.shape == (7, 4)
    np.testing.assert_allclose(Qn @ Qn.T + Qt @ Qt.T, np.eye(7), atol=1e-13)  # eq. 14
    np.testing.assert_allclose(Qn.T @ Qt, 0, atol=1e-13)
    np.testing.assert_allclose(J @ Qt, 0, atol=1e-12)  # tangent space
    # eq. 15: the independent rows are R_n^T Q_n^T
    Pn = b.perm[: b.rank]
    np.testing.assert_allclose(J[Pn], b.R[:3, :3].T @ Qn.T, atol=1e-12)
    assert np.linalg.matrix_rank(J[b.independent]) == 3


def test_relative_threshold_is_scale_free_and_configurable():
    J = np.array([[1.0, 0, 0], [0, 1e-5, 0]])
    assert qr_basis(J, rtol=1e-6).rank == 2
    assert qr_basis(J, rtol=1e-4).rank == 1
    assert qr_basis(1e8 * J, rtol=1e-6).rank == 2  # relative: scaling does not matter
    assert qr_basis(1e-8 * J, rtol=1e-4).rank == 1


def test_weak_directions_reported_against_regular_rank():
    theta = 1e-9  # four-bar next to theta = 0
    q = np.array([theta, 0.0, theta])
    b = qr_basis(fb.jac(q, 0), rtol=1e-6, regular_rank=2)
    assert b.rank == 1 and b.regular_rank == 2 and b.weak.tolist() == [0]
    # the weak direction is the limit of the vanishing row's direction, not noise
    w = b.Qw[:, 0] * np.sign(b.Qw[1, 0])
    np.testing.assert_allclose(w, np.array([-1.0, 2.0, 1.0]) / np.sqrt(6), atol=1e-8)


def test_non_finite_jacobian_raises():
    with pytest.raises(SolverError, match="non-finite"):
        qr_basis(np.array([[np.nan, 1.0]]))


# -- accelerations ---------------------------------------------------------------------------
def _kkt(M, F, J, gamma):
    n, m = M.shape[0], J.shape[0]
    K = np.block([[M, J.T], [J, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.concatenate([F, gamma]))
    return sol[:n], -sol[n:]


@pytest.mark.parametrize("n,m", [(6, 2), (9, 5), (4, 4)])
def test_accelerations_equal_kkt_and_tangent_form(n, m):
    M = random_spd(n)
    J = rng.standard_normal((m, n))
    F = rng.standard_normal(n)
    gam = rng.standard_normal(m)
    c = Constraints(lambda q, t: J @ q, lambda q, t: J, gamma=lambda q, v, t: gam)
    P = Projector(c)
    q = np.zeros(n)
    vd, lam = P.accelerations(q, q, 0.0, np.linalg.solve(M, F), lambda X: np.linalg.solve(M, X))
    vd_ref, lam_ref = _kkt(M, F, J, gam)
    np.testing.assert_allclose(vd, vd_ref, rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(lam, lam_ref, rtol=1e-9, atol=1e-10)
    vd2, lam2 = P.accelerations_tangent(q, q, 0.0, M, F)  # eq. 21-23
    np.testing.assert_allclose(vd2, vd_ref, rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(lam2, lam_ref, rtol=1e-9, atol=1e-10)


def test_redundant_rows_change_nothing_but_are_reported():
    n = 6
    M = random_spd(n)
    J0 = rng.standard_normal((3, n))
    F = rng.standard_normal(n)
    gam0 = rng.standard_normal(3)
    J = np.vstack([J0, J0[0] + J0[1], 3 * J0[2]])  # consistent redundant rows
    gam = np.concatenate([gam0, [gam0[0] + gam0[1], 3 * gam0[2]]])
    c = Constraints(
        lambda q, t: J @ q, lambda q, t: J, gamma=lambda q, v, t: gam, names=list("abcde")
    )
    P = Projector(c)
    z = np.zeros(n)
    vd, lam = P.accelerations(z, z, 0.0, np.linalg.solve(M, F), lambda X: np.linalg.solve(M, X))
    vd_ref, lam_ref = _kkt(M, F, J0, gam0)
    np.testing.assert_allclose(vd, vd_ref, atol=1e-11)
    np.testing.assert_allclose(J.T @ lam, J0.T @ lam_ref, atol=1e-10)  # same generalized force
    assert P.info.rank == 3 and P.info.discarded.sum() == 2
    assert np.all(lam[P.info.discarded] == 0)
    # Baumgarte and Moore-Penrose variants use minimum-norm solves and survive too
    for method in ("baumgarte", "moore-penrose"):
        Pm = Projector(c, method=method, h=1e-3)
        vdm, _ = Pm.accelerations(z, z, 0.0, np.linalg.solve(M, F), lambda X: np.linalg.solve(M, X))
        np.testing.assert_allclose(vdm, vd_ref, atol=1e-9)


def test_baumgarte_uses_automatic_coefficients():
    h = 0.01
    n = 3
    c = Constraints(
        lambda q, t: np.array([q[0] - 1.0]),
        lambda q, t: np.array([[1.0, 0, 0]]),
        gamma=lambda q, v, t: np.zeros(1),
    )
    P = Projector(c, method="baumgarte", h=h)
    assert P.alpha == pytest.approx(1 / h) and P.beta == pytest.approx(np.sqrt(2) / h)
    q = np.array([1.1, 0, 0])
    v = np.array([0.5, 0, 0])
    vd, _ = P.accelerations(q, v, 0.0, np.zeros(n), lambda X: X)
    # q'' + 2 alpha q' + beta^2 (q - 1) = 0 (eq. 29: 2/h and 2/h^2)
    assert vd[0] == pytest.approx(-2 / h * 0.5 - 2 / h**2 * 0.1)


# -- corrections -----------------------------------------------------------------------------
def test_position_correction_is_a_normal_space_newton_iteration():
    q = fb.Q0 + np.array([0.02, -0.01, 0.015])
    P = Projector(fb.CONSTRAINTS, max_newton=8)
    qc = P.correct_positions(q)
    assert np.abs(fb.phi(qc, 0)).max() < 1e-14
    # the correction is in the normal space at the (nearby) start: small tangential part
    b = P.basis(q)
    dq = qc - q
    assert np.linalg.norm(b.tangent().T @ dq) < 0.05 * np.linalg.norm(dq)
    assert P.info.newton_iterations <= 5


def test_moore_penrose_projection_is_minimum_norm():
    # one linear constraint: the minimum-norm correction is the orthogonal projection
    a = np.array([1.0, 2.0, 2.0])
    c = Constraints(lambda q, t: np.array([a @ q - 3.0]), lambda q, t: a[None, :])
    P = Projector(c, method="moore-penrose")
    q = np.array([1.0, 1.0, 1.0])
    qc = P.correct_positions(q)
    np.testing.assert_allclose(qc, q - (a @ q - 3.0) / (a @ a) * a, atol=1e-14)
    Pq = Projector(c, method="qr")
    np.testing.assert_allclose(Pq.correct_positions(q), qc, atol=1e-14)


def test_velocity_correction_satisfies_rheonomic_constraint():
    J = rng.standard_normal((2, 5))
    phit = np.array([0.3, -1.0])
    c = Constraints(lambda q, t: J @ q + phit * t, lambda q, t: J, phi_t=lambda q, t: phit)
    P = Projector(c)
    v = rng.standard_normal(5)
    vc = P.correct_velocities(np.zeros(5), v, 0.0)
    np.testing.assert_allclose(J @ vc + phit, 0, atol=1e-13)
    # eq. 28: only the normal-space component changed
    Qt = qr_basis(J).tangent()
    np.testing.assert_allclose(Qt.T @ vc, Qt.T @ v, atol=1e-13)


# -- the paper's planar four-bar ------------------------------------------------------------
def test_four_bar_multipliers_match_one_dof_reference():
    """Through the first singular configuration (theta = 0 at t ~ 0.41 s)."""
    t, q, v, a, lam, rank = fb.simulate(t_end=0.6, dt=1e-3, rtol=1e-2)
    th, thd, thdd, lam_ref = fb.reference(t)
    assert rank.min() == 1  # the singular window was met
    far = np.abs(np.sin(th)) >= 1e-2
    assert np.abs(lam - lam_ref)[far].max() < 1e-8
    assert np.abs(q[:, 0] - th).max() < 1e-10
    np.testing.assert_allclose(a[:, 0], thdd, atol=1e-8)
    assert np.abs(q[:, 1]).max() < 1e-12  # the coupler stays horizontal


def test_four_bar_without_tangent_projection_drifts():
    """The paper's Fig. 5: dropping the weak row distorts the accelerations, not the constraints."""
    kw = dict(t_end=0.6, dt=1e-3, rtol=1e-2)
    t, q, v, a, lam, rank = fb.simulate(tangent_projection=False, **kw)
    _, q2, v2, a2, lam2, _ = fb.simulate(tangent_projection=True, **kw)
    th, thd, thdd, lam_ref = fb.reference(t)
    a_ref = np.column_stack([thdd, 0 * thdd, thdd])
    window = rank == 1
    assert window.any()
    assert np.abs(a - a_ref)[window].max() > 0.1  # distorted while singular
    assert np.abs(a2 - a_ref).max() < 1e-8  # projected: not distorted
    after = t > 0.45
    assert np.abs(q[after, 0] - th[after]).max() > 1e-8  # the motion has drifted ...
    assert np.abs(q2[after, 0] - th[after]).max() < 1e-10
    assert max(np.abs(fb.phi(x, 0)).max() for x in q[after]) < 1e-12  # ... constraints hold
