"""The compiled floating-frame body terms (flexmbd.flexible._nbbody) against the numpy
equations of flexmbd.flexible.ffr (the oracle) and against finite differences."""

import numpy as np
import pytest

from flexmbd.flexible import _nbbody as nb
from flexmbd.flexible import ffr


def _body(rng, n, npart=12):
    """Random lumped-mass body with n modes (exact invariants of point masses)."""
    m = rng.uniform(0.2, 2.0, npart)
    x0 = rng.normal(size=(npart, 3))
    phi = 0.3 * rng.normal(size=(npart, 3, n))
    B = rng.normal(size=(n, n))
    return ffr.ModalInvariants.from_particles(m, x0, phi, K=B @ B.T, D=0.1 * np.eye(n))


def _forces(inv, q, qd, w, al, a, qdd, derivatives=False):
    """Compiled body-axes inertia forces (and derivatives) through the module's pieces."""
    n = inv.n_modes
    Y, Z = np.empty((3, 3, n)), np.empty((3, 3, n))
    nb.contract(inv.S, inv.P, q, qd, Y, Z)
    Sbar, Stqd, Jw = np.empty(3), np.empty(3), np.empty(3)
    J, Gm, W, W2 = (np.empty((3, 3)) for _ in range(4))
    Mwf = np.empty((3, n))
    trG = nb.body_state(
        inv.c, inv.E0, inv.St, inv.S, q, qd, w, Y, Sbar, Stqd, J, Mwf, Gm, W, W2, Jw
    )
    F = np.empty(6 + n)
    args = (Y, Z, Sbar, Stqd, J, Mwf, Gm, trG, W, W2, Jw, w, al, a, qdd)
    nb.inertia_forces(inv.mass, inv.St, inv.Mff, *args, F)
    M = np.empty((6 + n, 6 + n))
    nb.mass_matrix(inv.mass, inv.St, inv.Mff, Sbar, J, Mwf, M)
    if not derivatives:
        return F, M
    Fq, Fqd, Fw = np.empty((6 + n, n)), np.empty((6 + n, n)), np.empty((6 + n, 3))
    nb.inertia_derivatives(
        inv.St, inv.P, Y, Z, Sbar, Stqd, J, Gm, trG, W, W2, Jw, w, al, a, qdd,
        Fq, Fqd, Fw, np.empty((3, 3, 3)), np.empty((n, n)),
    )  # fmt: skip
    return F, M, Fq, Fqd, Fw


def _state(rng, n):
    return [rng.normal(size=k) for k in (n, n, 3, 3, 3, n)]


def _rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


@pytest.mark.parametrize("n", [0, 1, 4])
def test_compiled_terms_equal_numpy_oracle(n):
    """Mass matrix, inertia forces and their exact derivatives equal ffr.inertia_terms
    (numpy) to 1e-12 relative at random states and random invariants."""
    rng = np.random.default_rng(10 + n)
    for _ in range(4):
        inv = _body(rng, n)
        q, qd, w, al, a, qdd = _state(rng, n)
        F, M, Fq, Fqd, Fw = _forces(inv, q, qd, w, al, a, qdd, derivatives=True)
        Fr, Mr, Fqr, Fqdr, Fwr = ffr.inertia_terms(inv, q, qd, w, al, a, qdd)
        assert _rel(M, ffr.mass_matrix(inv, q)) < 1e-12
        assert _rel(M, Mr) < 1e-12
        assert _rel(F, Fr) < 1e-12
        if n:
            assert _rel(Fq, Fqr) < 1e-12
            assert _rel(Fqd, Fqdr) < 1e-12
        assert _rel(Fw, Fwr) < 1e-12


@pytest.mark.parametrize("n", [1, 3])
def test_compiled_derivatives_match_finite_differences(n):
    """dF/dq, dF/dqd, dF/dw of the compiled kernels equal central differences of the
    compiled forces (step 1e-6: truncation ~1e-11 on these quadratic forms)."""
    rng = np.random.default_rng(20 + n)
    inv = _body(rng, n)
    q, qd, w, al, a, qdd = _state(rng, n)
    _, _, Fq, Fqd, Fw = _forces(inv, q, qd, w, al, a, qdd, derivatives=True)
    h = 1e-6
    for arg, D in ((0, Fq), (1, Fqd), (2, Fw)):
        x = [q, qd, w]
        num = np.empty_like(D)
        for j in range(D.shape[1]):
            xp = [v.copy() for v in x]
            xm = [v.copy() for v in x]
            xp[arg][j] += h
            xm[arg][j] -= h
            num[:, j] = (_forces(inv, *xp, al, a, qdd)[0] - _forces(inv, *xm, al, a, qdd)[0]) / (
                2 * h
            )
        assert _rel(D, num) < 1e-8, arg


@pytest.mark.parametrize("n", [0, 2, 5])
def test_bias_forces_equal_numpy_velocity_and_gravity_forces(n):
    """The recursive formulation's body term h(q, (w, v, qd)) - Q_g and M(q) (one call of
    bias_forces) equal ffr.velocity_forces - ffr.gravity_forces and ffr.mass_matrix."""
    rng = np.random.default_rng(30 + n)
    for _ in range(4):
        inv = _body(rng, n)
        q, qd, w, v, gb = rng.normal(size=n), rng.normal(size=n), *rng.normal(size=(3, 3))
        M = np.full((6 + n + 2, 6 + n + 2), np.nan)  # padded, as the kernels' buffers
        h = np.full(6 + n + 2, np.nan)
        ws = np.empty((4, 3, 3, n + 6))
        nb.bias_forces(
            inv.mass, inv.c, inv.E0, inv.St, inv.S, inv.P, inv.Mff, q, qd, w, v, gb, M, h, ws
        )
        u = np.concatenate([w, v, qd])
        ref = ffr.velocity_forces(inv, q, u) - ffr.gravity_forces(inv, q, gb)
        assert _rel(h[: 6 + n], ref) < 1e-12
        assert _rel(M[: 6 + n, : 6 + n], ffr.mass_matrix(inv, q)) < 1e-12


def test_flex_mass_and_rigid_case():
    """flex_mass (energies) equals ffr.mass_matrix; with no modes the body terms are the
    rigid Newton-Euler equations about the frame origin."""
    rng = np.random.default_rng(40)
    inv = _body(rng, 3)
    q = rng.normal(size=3)
    M = nb.flex_mass(inv.mass, inv.c, inv.E0, inv.St, inv.S, inv.P, q)
    assert _rel(M, ffr.mass_matrix(inv, q)) < 1e-12
    rig = _body(rng, 0)
    w, al, a = rng.normal(size=(3, 3))
    F, _ = _forces(rig, np.zeros(0), np.zeros(0), w, al, a, np.zeros(0))
    J = np.trace(rig.E0) * np.eye(3) - rig.E0
    c = rig.c
    assert _rel(F[:3], J @ al + np.cross(w, J @ w) + np.cross(c, a)) < 1e-13
    assert _rel(F[3:], rig.mass * a + np.cross(al, c) + np.cross(w, np.cross(w, c))) < 1e-13
