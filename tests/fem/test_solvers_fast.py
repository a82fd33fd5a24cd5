"""Fast paths: factorization backends, block eigen solver, symbolic reuse, unit K_G projection."""

import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
from fem_helpers import beam_hex1, end

import flexmbd.fem as F
from flexmbd.errors import SolverError
from flexmbd.fem.assembly import Assembler
from flexmbd.fem.eigen import (
    SYMBOLIC_CACHE,
    SPDFactor,
    add_on_pattern,
    available_backends,
    block_shift_invert,
    eigsh_shift_invert,
    free_shift,
    resolve_backend,
)
from flexmbd.fem.geometric import project_pattern_data, project_scalar

BACKENDS = ["cholmod", "cholespy", "superlu", "dense"]


def _need(backend):
    # cholespy is a required dependency (pyproject.toml): missing, the test fails; only
    # CHOLMOD (scikit-sparse, the optional "fast" extra) may be absent
    if backend == "cholmod" and backend not in available_backends():
        pytest.skip("scikit-sparse (CHOLMOD, optional extra 'fast') not installed")


@pytest.fixture(scope="module")
def clamped(steel):
    """Clamped 24x2x2 hex beam: 864 free DOFs (above the dense threshold)."""
    model = F.FEModel(beam_hex1(24, 2), steel)
    free = np.setdiff1d(np.arange(model.n_dofs), model.dofs_of(end(0)(model.fe)))
    return model, model.K[free][:, free], model.M[free][:, free]


def _dense_shift_invert(K, M, k, sigma=0.0):
    """Reference: eigenvalues of (K - sigma M)^-1 M by dense Cholesky (accurate for low lam).

    Plain ``eigh(K, M)`` is only accurate to eps * cond(K) relative (~2e-9 here).
    """
    L = np.linalg.cholesky((K - sigma * M).toarray())
    Li = sla.solve_triangular(L, np.eye(len(L)), lower=True)
    th = np.linalg.eigvalsh(Li @ M.toarray() @ Li.T)[::-1][:k]
    return np.sort(sigma + 1.0 / th)


@pytest.mark.parametrize("method", ["block", "arpack"])
def test_all_backends_give_the_same_eigenvalues(clamped, method):
    _, K, M = clamped
    ref = _dense_shift_invert(K, M, 8)
    got = {}
    for backend in BACKENDS:
        if backend in ("cholmod", "cholespy") and backend not in available_backends():
            continue
        f = SPDFactor(K, backend)
        assert f.backend == backend
        lam, V = eigsh_shift_invert(K, M, 8, 0.0, f, method=method)
        assert np.allclose(lam, ref, rtol=1e-9, atol=0)
        assert np.abs(V.T @ (M @ V) - np.eye(8)).max() < 1e-10
        r = K @ V - (M @ V) * lam
        assert np.linalg.norm(r, axis=0).max() <= 1e-7 * np.linalg.norm(K @ V, axis=0).max()
        got[backend] = lam
    assert {"superlu", "dense"} <= set(got)
    for lam in got.values():
        assert np.allclose(lam, got["superlu"], rtol=1e-9, atol=0)


def test_auto_backend_order(clamped, monkeypatch):
    monkeypatch.delenv("FLEXMBD_SPD_BACKEND", raising=False)
    _, K, _ = clamped
    assert resolve_backend("auto", 100) == "dense"
    best = available_backends()[0]
    assert SPDFactor(K).backend == best
    assert available_backends()[-1] == "superlu"
    if "cholmod" in available_backends():
        assert best == "cholmod"


def test_cholmod_rejects_indefinite_and_singular(steel):
    _need("cholmod")
    model = F.FEModel(beam_hex1(24, 2), steel)  # free-free: K is singular
    with pytest.raises(SolverError, match="not positive definite"):
        SPDFactor(model.K, "cholmod")


def test_cholmod_symbolic_reuse(clamped):
    _need("cholmod")
    _, K, M = clamped
    SYMBOLIC_CACHE.clear()
    f = SPDFactor(K, "cholmod")
    g = f.refactor(add_on_pattern(K, M, 1.0, 1e5))
    assert g.symbolic is f.symbolic  # same pattern: numeric phase only
    h = SPDFactor(K.copy(), "cholmod")  # found again through the pattern cache
    assert h.symbolic is f.symbolic
    b = np.random.default_rng(0).standard_normal((K.shape[0], 3))
    A = (K + 1e5 * M).toarray()
    assert np.abs(A @ g.solve(b) - b).max() <= 1e-8 * np.abs(b).max()
    # a different pattern gets its own analysis (never a wrong reuse)
    D = sp.diags(K.diagonal()).tocsr()
    d = f.refactor(D)
    assert d.symbolic is not f.symbolic
    assert np.allclose(d.solve(b), b / K.diagonal()[:, None])


def test_add_on_pattern_keeps_zeros():
    A = sp.csr_matrix(
        (np.array([2.0, 1.0, 1.0, 3.0]), np.array([0, 1, 0, 1]), np.array([0, 2, 4])), shape=(2, 2)
    )
    B = sp.identity(2, format="csr")
    C = add_on_pattern(A, B, 1.0, -1.0)  # the off-diagonal stays stored
    C2 = add_on_pattern(C, -C, 1.0, 1.0)  # all zero, all stored
    assert C.nnz == 4 and C2.nnz == 4 and np.all(C2.data == 0)
    assert np.allclose(C.toarray(), A.toarray() - np.eye(2))


def test_block_solver_free_free_rigid_modes(steel):
    model = F.FEModel(beam_hex1(24, 2), steel)
    K, M = model.K, model.M
    sigma = free_shift(K, M)
    f = SPDFactor(add_on_pattern(K, M, 1.0, -sigma))
    lam, V, info = block_shift_invert(K, M, 12, f, sigma)
    ref = _dense_shift_invert(K, M, 12, sigma)
    assert np.abs(lam[:6]).max() < 1e-6 * lam[6]  # six rigid-body modes
    assert np.allclose(lam[6:], ref[6:], rtol=1e-9)
    assert np.abs(V.T @ (M @ V) - np.eye(12)).max() < 1e-10
    assert info["residual"] <= 1e-10


def test_block_solver_handles_degenerate_pairs_and_block_sizes(clamped):
    _, K, M = clamped
    f = SPDFactor(K)
    ref = _dense_shift_invert(K, M, 10)  # bending pairs are double (square section)
    for b in (1, 2, 3, 8, 16):
        lam, V, _ = block_shift_invert(K, M, 10, f, block=b)
        assert np.allclose(lam, ref, rtol=1e-9), b


def test_geometric_data_of_uniform_stress_matches_constant_stress_form(steel):
    fe = F.read_mesh(beam_hex1(3, 1))
    A = Assembler(fe, steel)
    Gd = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 0.2], [0.1, 0.4, 2.0]]) * 1e-4
    U = np.column_stack([(fe.nodes @ Gd.T).ravel(), 2 * (fe.nodes @ Gd.T).ravel()])
    eps = 0.5 * (Gd + Gd.T)
    sig = 2 * steel.mu * eps + steel.lam * np.trace(eps) * np.eye(3)
    data = A.geometric_data(U)
    ref = A.geometric_scalar_from_stress(sig).toarray()
    for k in range(2):
        Kg = A._scalar_csr(np.ascontiguousarray(data[:, k])).toarray()
        assert np.abs(Kg - (k + 1) * ref).max() <= 1e-12 * np.abs(ref).max()
    # projection on modes without forming the 3n x 3n matrix
    Phi = np.random.default_rng(2).standard_normal((3 * fe.n_nodes, 4))
    P = project_pattern_data(A, data, Phi)
    full = sp.kron(sp.csr_matrix(ref), sp.identity(3)).toarray()
    assert np.allclose(P[0], Phi.T @ full @ Phi, rtol=1e-12, atol=1e-12 * np.abs(P[0]).max())
    assert np.allclose(P[1], 2 * project_scalar(sp.csr_matrix(ref), Phi))


def test_fast_vector_mass_equals_kron(steel):
    model = F.FEModel(beam_hex1(3, 1), steel)
    M = model.M
    assert abs(M - sp.kron(model.Ms, sp.identity(3))).max() == 0
    assert M.has_sorted_indices and model.K.has_sorted_indices
    Kc = model.K.copy()
    Kc.sort_indices()
    assert np.array_equal(Kc.indices, model.K.indices)


def test_blas_thread_limit_before_cholmod_is_loaded():
    """Limiting OpenBLAS threads must not expose BLAS symbols that CHOLMOD would bind to."""
    _need("cholmod")
    code = (
        "import numpy as np, scipy.sparse.linalg\n"
        "from flexmbd.fem._threads import blas_threads, openblas_pools\n"
        "with blas_threads(1):\n"
        "    pass\n"
        "import scipy.sparse as sp\n"
        "from sksparse.cholmod import cholesky\n"
        "T = sp.diags([-1.0, 2.1, -1.0], [-1, 0, 1], shape=(24, 24))\n"
        "I = sp.identity(24)\n"
        "A = sp.csc_matrix(sp.kron(sp.kron(T, I), I) + sp.kron(sp.kron(I, T), I)\n"
        "                  + sp.kron(sp.kron(I, I), T))  # 3-D Laplacian: dense supernodes\n"
        "f = cholesky(A, mode='supernodal')\n"
        "x = f(np.ones(A.shape[0]))\n"
        "assert abs(A @ x - 1).max() < 1e-8\n"
        "print('ok', len(openblas_pools()))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ok")
