"""Equal eigenvalues (the square beam's pairs of bending modes): the eigenvectors of a
group come back in one basis fixed by their subspace, whatever the solver and its
round-off; a mode count that splits a group gets a ModeWarning with the counts that
keep whole groups."""

import warnings

import numpy as np
import pytest
from fem_helpers import beam_hex1, end

import flexmbd as fm
import flexmbd.fem as F
from flexmbd.errors import ModeWarning
from flexmbd.fem.eigen import canonical_groups, eigen_groups, eigsh_shift_invert


@pytest.fixture(scope="module")
def clamped(steel):
    """Clamped 24 x 2 x 2 hex beam of square section: 648 free DOFs (above the dense
    threshold); its bending modes come in pairs of equal frequency."""
    model = F.FEModel(beam_hex1(24, 2), steel)
    free = np.setdiff1d(np.arange(model.n_dofs), model.dofs_of(end(0)(model.fe)))
    return model.K[free][:, free], model.M[free][:, free]


def test_groups_of_the_square_beam(clamped):
    K, M = clamped
    lam, _ = eigsh_shift_invert(K, M, 8, method="dense")
    assert eigen_groups(lam) == [(0, 2), (2, 4), (5, 7)]  # bending pairs; mode 5: torsion
    assert eigen_groups(np.array([1.0, 2.0, 3.0])) == []


def test_any_basis_of_a_group_gives_the_same_vectors(clamped):
    """``canonical_groups`` of ``V S`` (S orthogonal inside each group, signs flipped)
    is that of ``V`` to round-off: the basis depends on the subspace alone."""
    K, M = clamped
    lam, V = eigsh_shift_invert(K, M, 8)
    rng = np.random.default_rng(3)
    VS = V.copy()
    for a, b in eigen_groups(lam):
        S, _ = np.linalg.qr(rng.standard_normal((b - a, b - a)))
        VS[:, a:b] = V[:, a:b] @ S
    assert np.abs(VS - V).max() > 0.1  # the rotation moved the vectors
    _, W = canonical_groups(lam, VS)
    assert np.abs(W - V).max() < 1e-12 * np.abs(V).max()
    assert np.abs(W.T @ (M @ W) - np.eye(8)).max() < 1e-12  # still M-orthonormal
    r = K @ W - (M @ W) * lam  # still eigenvectors
    assert np.linalg.norm(r, axis=0).max() <= 1e-7 * np.linalg.norm(K @ W, axis=0).max()


def test_every_solver_returns_the_same_pairs(clamped):
    """Dense LAPACK, block Krylov and ARPACK (different round-off, different bases of
    each pair as computed) return the same vectors of every pair."""
    K, M = clamped
    res = {m: eigsh_shift_invert(K, M, 8, method=m) for m in ("dense", "block", "arpack")}
    lam, V = res["dense"]
    for m in ("block", "arpack"):
        for a, b in eigen_groups(lam):
            d = np.abs(res[m][1][:, a:b] - V[:, a:b]).max()
            assert d < 1e-6 * np.abs(V[:, a:b]).max(), (m, a, d)


def square_beam(n, strategy):
    mesh = beam_hex1(8, 2)
    mat = fm.Material(E=2.1e11, nu=0.3, rho=7850.0)
    if strategy == "cb":
        strat = fm.CraigBampton(n, interfaces={"A": end(0.0), "B": end(1.0)})
    elif strategy == "clamped":
        strat = fm.NormalModes(n, fixed=end(0.0))
    else:
        strat = fm.NormalModes(n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rb = F.reduce(mesh, mat, strat, name="beam")
    return rb, [w for w in caught if issubclass(w.category, ModeWarning)]


@pytest.mark.parametrize("strategy", ["cb", "clamped", "free"])
def test_a_count_that_splits_a_pair_warns_with_the_counts_that_keep_it(strategy):
    """Three modes keep one of the second pair of equal bending frequencies: a
    ModeWarning naming the group and the counts 2 or 4 and more; 2 and 4 do not warn.
    A free-free body's count leaves out its 6 rigid-body modes."""
    _, split = square_beam(3, strategy)
    assert len(split) == 1
    text = str(split[0].message)
    assert "modes 3-4" in text and "ask for 2 or 4 modes" in text
    for n in (2, 4):
        assert square_beam(n, strategy)[1] == []
