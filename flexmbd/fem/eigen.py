"""Sparse symmetric factorizations and shift-invert eigen solvers.

`SPDFactor` factorizes a sparse symmetric positive-definite matrix once and
solves many right-hand sides.  Backends (``backend="auto"`` takes the first
one that is importable, in this order):

- ``"cholmod"``: supernodal CHOLMOD (BLAS-3, uses the system's BLAS: OpenBLAS)
  through scikit-sparse (`sksparse.cholmod`).  The symbolic analysis (fill-
  reducing ordering, supernodal structure) is cached by sparsity pattern and
  reused: refactoring a matrix with the same pattern (``K_ii`` then
  ``K_ii - sigma M_ii``, ``K + c M`` ...) only does the numeric phase
  (`SPDFactor.refactor`, or automatically through the pattern cache);
- ``"cholespy"``: CHOLMOD inside the cholespy wheel (simplicial, reference
  BLAS: ~8-20x slower to factor than ``"cholmod"`` on 3-D meshes);
- ``"superlu"``: scipy's SuperLU with the symmetric options (MMD on A^T+A, no
  pivoting, SymmetricMode) — always available, slowest;
- ``"dense"``: LAPACK Cholesky, for small matrices (``"auto"`` below
  `DENSE_MAX` rows) and as the test reference.

The environment variable ``FLEXMBD_SPD_BACKEND`` overrides what ``"auto"``
picks (e.g. to benchmark the fallbacks).

`eigsh_shift_invert` solves ``K x = lam M x`` in shift-invert mode with such
a factor of ``K - sigma M``: by default with `block_shift_invert` (block
Lanczos with full reorthogonalization: one multi-right-hand-side solve per
block of ~k/2 vectors — a supernodal solve costs about the same for 1 and 8
right-hand sides, so this halves the passes over the factor compared with
ARPACK's single-vector Lanczos), or with ARPACK (``method="arpack"``, the
factor as ``OPinv``).  Shifts: ``sigma = 0`` for constrained
problems (the factor of K is then reused for static solves); for free-free
problems `free_shift` picks ``sigma = -1e-8 * max(K_ii / M_ii)``, i.e. relative
to the top of the spectrum, so ``K - sigma M`` stays well conditioned (cond
~1e8) whatever the units, and far below the first elastic eigenvalue.  (An
absolute small shift such as -10 makes the factor numerically singular for
stiff models; the tests check the fast path against dense references.)

Equal eigenvalues (symmetric structures: the two bending modes of a square section)
leave the eigenvectors' basis of their subspace to round-off, which differs between
solvers, machines and even processes (BLAS kernels' summation order).  `eigsh_shift_invert`
returns such groups in a basis fixed by the subspace alone (`canonical_groups`), so a
model's modal coordinates are the same in every run; a mode count that splits a group
(the subspace itself then is round-off's choice) gets a `ModeWarning`.
"""

from __future__ import annotations

import os
import warnings
import zlib
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import MeshError, ModeWarning, SolverError
from ._threads import fem_threads
from .backends import _ORDER, _have, available_backends

if TYPE_CHECKING:
    from typing import Any

    from .._typing import Array, ArrayLike

__all__ = [
    "SPDFactor",
    "eigsh_shift_invert",
    "block_shift_invert",
    "eigh_dense",
    "canonical_groups",
    "free_shift",
    "rigid_modes",
    "RelievedSolver",
    "available_backends",
    "resolve_backend",
    "DENSE_MAX",
    "add_on_pattern",
]

DENSE_MAX = 600  # "auto" uses dense LAPACK Cholesky up to this many rows
GROUP_RTOL = 1e-7  # eigenvalues this close (relative) form one group: round-off splits
# (dense LAPACK: up to ~5e-9 on a 1620-DOF beam) are far below it, physical ones far above
METIS_MIN = 5000  # CHOLMOD orders larger matrices with METIS directly


def check_backend(backend):
    """MeshError unless ``backend`` names a factorization backend flexmbd knows."""
    known = ("auto", *_ORDER, "dense")
    if not isinstance(backend, str) or backend not in known:
        raise MeshError(
            f"backend={backend!r} is not a factorization backend; use one of "
            f"{', '.join(repr(b) for b in known)}"
        )
    return backend


def resolve_backend(backend: str, n: int | None) -> str:
    """The concrete backend ``"auto"`` stands for at size ``n`` (others unchanged)."""
    if backend != "auto":
        return backend
    env = os.environ.get("FLEXMBD_SPD_BACKEND", "").strip().lower()
    if env and env != "auto":
        return env
    if n <= DENSE_MAX:
        return "dense"
    return available_backends()[0]


class _SymbolicCache:
    """CHOLMOD symbolic analyses keyed by sparsity pattern (a few most recent)."""

    def __init__(self, size=4):
        self.size, self._d = size, OrderedDict()

    @staticmethod
    def key(A):
        return (A.shape[0], A.nnz, zlib.crc32(A.indptr), zlib.crc32(A.indices))

    def get(self, A):
        k = self.key(A)
        hit = self._d.get(k)
        if hit is not None:
            indptr, indices, sym = hit
            if np.array_equal(indptr, A.indptr) and np.array_equal(indices, A.indices):
                self._d.move_to_end(k)
                return sym
        return None

    def put(self, A, sym):
        self._d[self.key(A)] = (A.indptr.copy(), A.indices.copy(), sym)
        while len(self._d) > self.size:
            self._d.popitem(last=False)

    def clear(self):
        self._d.clear()


SYMBOLIC_CACHE = _SymbolicCache()


def _lower_csc(A):
    """Lower triangle of the symmetric A as CSC with sorted int32 indices (what CHOLMOD reads).

    A CSR matrix is read as the CSC matrix of its transpose (the same matrix, A
    being symmetric), so no format conversion is needed.  Stored zeros are kept:
    the pattern, not the values, keys the symbolic analysis.
    """
    if not (sp.isspmatrix_csr(A) or sp.isspmatrix_csc(A)):
        A = sp.csc_matrix(A)
    if not A.has_sorted_indices:
        A = A.copy()
        A.sort_indices()
    n = A.shape[0]
    indptr = A.indptr
    major = np.repeat(np.arange(n, dtype=np.int32), np.diff(indptr))
    keep = A.indices >= major
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(major[keep], minlength=n), out=ptr[1:])
    itype = np.int32 if ptr[-1] < 2**31 - 1 else np.int64
    L = sp.csc_matrix(
        (
            A.data[keep].astype(np.float64, copy=False),
            A.indices[keep].astype(itype, copy=False),
            ptr.astype(itype),
        ),
        shape=A.shape,
    )
    L.has_sorted_indices = True
    return L


def add_on_pattern(
    A: sp.csr_matrix, B: sp.csr_matrix, alpha: float = 1.0, beta: float = 1.0
) -> sp.csr_matrix:
    """``alpha A + beta B`` (CSR) on the union of the *stored* patterns, zeros kept.

    scipy's ``A + B`` drops entries that happen to be zero, which changes the
    pattern and defeats the reuse of a symbolic factorization (`SPDFactor.refactor`).
    """
    A, B = sp.coo_matrix(A), sp.coo_matrix(B)
    C = sp.coo_matrix(
        (
            np.concatenate([alpha * A.data, beta * B.data]),
            (np.concatenate([A.row, B.row]), np.concatenate([A.col, B.col])),
        ),
        shape=A.shape,
    ).tocsr()
    C.sum_duplicates()
    return C


class SPDFactor:
    """Factorization of a sparse symmetric positive-definite matrix.

    Parameters
    ----------
    A : sparse matrix (n x n), symmetric positive definite
    backend : {"auto", "cholmod", "cholespy", "superlu", "dense"}
        ``"auto"``: dense LAPACK up to `DENSE_MAX` rows, else the first of
        cholmod > cholespy > superlu that is importable.
    name : str
        Used in error messages.
    symbolic : optional
        CHOLMOD only: the symbolic analysis of a matrix with *exactly* the same
        lower-triangle pattern (prefer `refactor`, which checks the pattern); by
        default the module's pattern cache is consulted.

    Attributes
    ----------
    backend : str
        The concrete backend used.
    symbolic : object or None
        CHOLMOD symbolic analysis (reusable for matrices of the same pattern).
    """

    def __init__(
        self, A: Any, backend: str = "auto", name: str = "matrix", symbolic: Any | None = None
    ) -> None:
        if not sp.issparse(A):
            A = sp.csc_matrix(A)
        n = A.shape[0]
        self.n, self.name = n, name
        backend = resolve_backend(backend, n)
        if backend in ("cholmod", "cholespy") and not _have(backend):
            raise SolverError(
                f"{name}: factorization backend {backend!r} is not installed; "
                f"available: {available_backends()}"
            )
        self.backend = backend
        self.symbolic = None
        if backend in ("cholespy", "superlu"):
            A = sp.csc_matrix(A)
        if backend == "dense":
            try:
                with fem_threads():
                    self._c = sla.cho_factor(A.toarray(), lower=True, check_finite=False)
            except np.linalg.LinAlgError as exc:
                raise SolverError(
                    f"{name}: not positive definite ({exc}); is the body "
                    "constrained against rigid-body motion?"
                ) from exc
        elif backend == "cholmod":
            self._factor_cholmod(_lower_csc(A), symbolic)
        elif backend == "cholespy":
            from cholespy import CholeskySolverD, MatrixType

            A.sort_indices()
            d = A.diagonal()
            if not (d > 0).all():
                raise SolverError(f"{name}: non-positive diagonal entry; the matrix is not SPD")
            self._c = CholeskySolverD(
                n,
                A.indptr.astype(np.int32),
                A.indices.astype(np.int32),
                np.ascontiguousarray(A.data, dtype=np.float64),
                MatrixType.CSC,
            )
        elif backend == "superlu":
            self._c = spla.splu(
                A,
                permc_spec="MMD_AT_PLUS_A",
                diag_pivot_thresh=0.0,
                options={"SymmetricMode": True},
            )
        else:
            raise ValueError(
                f"unknown factorization backend {backend!r}; use one of "
                f"'auto', {', '.join(repr(b) for b in _ORDER)}, 'dense'"
            )

    def _factor_cholmod(self, L, symbolic):
        from sksparse.cholmod import CholmodError, analyze

        if symbolic is None:
            symbolic = SYMBOLIC_CACHE.get(L)
        if symbolic is None:
            # supernodal always: BLAS-3 speed, and a clear error for indefinite matrices
            # (the simplicial LDL^T would factor them silently).  Ordering: METIS nested
            # dissection for large matrices (CHOLMOD's "default" would run AMD first and
            # then METIS anyway on 3-D meshes: +30 % analysis time at 95k DOF)
            order = "metis" if L.shape[0] > METIS_MIN else "default"
            with fem_threads():
                try:
                    symbolic = analyze(L, mode="supernodal", ordering_method=order)
                except Exception:  # a CHOLMOD built without METIS
                    symbolic = analyze(L, mode="supernodal", ordering_method="default")
            SYMBOLIC_CACHE.put(L, symbolic)
        self.symbolic = symbolic
        self._pattern = (L.indptr, L.indices)
        try:
            with fem_threads():
                self._c = symbolic.cholesky(L)
        except CholmodError as exc:
            raise SolverError(
                f"{self.name}: CHOLMOD factorization failed ({exc}); the matrix is "
                "not positive definite — is the body constrained against "
                "rigid-body motion?"
            ) from exc

    def refactor(self, A: Any, name: str | None = None) -> SPDFactor:
        """A new `SPDFactor` of ``A`` (same pattern) reusing this one's symbolic analysis.

        For backends without a separate symbolic phase this is a fresh factorization.
        """
        name = name or self.name
        if self.backend != "cholmod":
            return SPDFactor(A, self.backend, name)
        L = _lower_csc(A)
        ok = L.shape[0] == self.n and self._pattern_ok(L)
        return SPDFactor(L, "cholmod", name, symbolic=self.symbolic if ok else None)

    def _pattern_ok(self, L):
        indptr, indices = self._pattern
        return np.array_equal(indptr, L.indptr) and np.array_equal(indices, L.indices)

    def solve(self, B: Array) -> Array:
        """Solve A X = B for a vector or a (n, k) block."""
        B = np.asarray(B, dtype=np.float64)
        if self.backend == "dense":
            with fem_threads():
                X = sla.cho_solve(self._c, B, check_finite=False)
        elif self.backend == "cholmod":
            with fem_threads():
                X = self._c.solve_A(B)
        elif self.backend == "cholespy":
            Bc = np.ascontiguousarray(B)
            X = np.empty_like(Bc)
            self._c.solve(Bc, X)
        else:
            X = self._c.solve(B)
        if not np.isfinite(X).all():
            raise SolverError(f"{self.name}: solve produced non-finite values (singular matrix?)")
        return X

    def operator(self) -> spla.LinearOperator:
        return spla.LinearOperator(
            (self.n, self.n), matvec=self.solve, matmat=self.solve, dtype=np.float64
        )


def free_shift(K: Any, M: Any) -> float:
    """Negative shift for free-free problems, relative to the top of the spectrum."""
    dk, dm = K.diagonal(), M.diagonal()
    ok = dm > 0
    lam_top = float(np.max(dk[ok] / dm[ok])) if ok.any() else float(np.max(dk))
    return -1e-8 * lam_top


def eigh_dense(K: Any, M: Any, k: int | None, skip: int = 0) -> tuple[Array, Array]:
    """Reference: the lowest ``k`` eigenpairs (after ``skip``) with LAPACK."""
    Kd = K.toarray() if sp.issparse(K) else np.asarray(K)
    Md = M.toarray() if sp.issparse(M) else np.asarray(M)
    with fem_threads():
        lam, V = sla.eigh(Kd, Md, subset_by_index=[skip, skip + k - 1])
    return lam, V


def _m_orthonormalize(W, V, MV, M, MW=None):
    """M-orthonormalize the block W against the M-orthonormal V (MV = M V) and within itself.

    Classical block Gram-Schmidt, twice, then an eigen-decomposition of the
    scaled Gram matrix (SVQB); repeated until orthogonal to ~1e-12.  ``M W`` is
    recomputed after every scaling: updating it by the same recurrences loses
    accuracy when the projected block is small.  Returns (W, M W); columns that
    are numerically dependent are dropped.
    """
    if MW is None:
        MW = M @ W
    for _ in range(4):
        for _ in range(2):
            if V.shape[1]:
                C = MV.T @ W
                W = W - V @ C
                MW = MW - MV @ C
        G = W.T @ MW
        G = 0.5 * (G + G.T)
        dg = np.sqrt(np.maximum(np.diag(G), 1e-300))
        d, U = np.linalg.eigh(G / np.outer(dg, dg))
        keep = d > 1e-13 * max(d.max(), 1e-300)
        W = W @ ((U[:, keep] / np.sqrt(d[keep])) / dg[:, None])
        MW = M @ W
        err = np.abs(W.T @ MW - np.eye(W.shape[1])).max() if W.shape[1] else 0.0
        if V.shape[1] and W.shape[1]:
            err = max(err, np.abs(MV.T @ W).max())
        if err < 1e-12:
            break
    return W, MW


class _Columns:
    """Column-growing (n, m) array with amortized O(1) appends (no re-stacking).

    Column-major, so that appending a block writes contiguous memory.
    """

    def __init__(self, n, capacity):
        self.a = np.empty((n, max(1, capacity)), order="F")
        self.m = 0

    def append(self, B):
        k = B.shape[1]
        if self.m + k > self.a.shape[1]:
            a = np.empty((self.a.shape[0], max(2 * self.a.shape[1], self.m + k)), order="F")
            a[:, : self.m] = self.a[:, : self.m]
            self.a = a
        self.a[:, self.m : self.m + k] = B
        self.m += k

    @property
    def view(self):
        return self.a[:, : self.m]


def block_shift_invert(
    K: Any,
    M: Any,
    k: int,
    factor: SPDFactor,
    sigma: float = 0.0,
    block: int | None = None,
    tol: float = 1e-10,
    max_blocks: int | None = None,
    seed: int = 12345,
    name: str = "K",
) -> tuple[Array, Array, dict[str, Any]]:
    """Lowest ``k`` eigenpairs of K x = lam M x by block shift-invert Lanczos (Rayleigh-Ritz).

    The Krylov space of ``OP = (K - sigma M)^-1 M`` is built ``block`` vectors
    at a time — one multi-right-hand-side solve per block: a supernodal
    Cholesky solve is bound by reading the factor, so a block of b vectors
    costs far less than b single solves — kept M-orthonormal with full
    reorthogonalization.  The projected operator ``T = V^T M OP V`` (accurate
    relative to its largest eigenvalues, i.e. to the lowest lam) is
    diagonalized.  As ``OP V_i`` lies in the span of the blocks up to ``i + 1``,
    the residual of a Ritz pair ``(theta, V y)`` is ``R y_last`` with ``R`` the
    next block before normalization; converged when every wanted pair has
    ``||OP x - theta x||_M <= tol * theta`` (``x`` M-normalized).

    The Krylov degree, not the block size, sets the convergence here: 8-10
    blocks for 8 modes to 1e-10 whatever the block size, so the default block
    is ``ceil(k / 2)`` (2..8) — about half the factor passes of single-vector
    Lanczos and half the solves of a block of k.

    Returns (lam ascending, X M-orthonormal, info dict).
    """
    n = K.shape[0]
    b = int(block or min(max(-(-k // 2), 2), 8))
    b = max(1, min(b, n))
    max_blocks = max_blocks or max(30, 6 * (k // b + 2))
    rng = np.random.default_rng(seed)
    W = factor.solve(M @ rng.standard_normal((n, b)))
    nsolve0 = b
    MW = None
    V, MV = _Columns(n, 12 * b), _Columns(n, 12 * b)
    T = np.empty((0, 0))
    nsolve, rel, it = nsolve0, np.inf, 0
    theta, Y = np.empty(0), np.empty((0, 0))
    for _ in range(max_blocks):
        it += 1
        W, MW = _m_orthonormalize(W, V.view, MV.view, M, MW)
        if W.shape[1] == 0:  # invariant subspace: the Ritz pairs are exact
            break
        Z = factor.solve(MW)  # OP W
        nsolve += W.shape[1]
        m0 = V.m
        V.append(W)
        MV.append(MW)
        Tc = MV.view.T @ Z  # new block column of T
        Tn = np.empty((V.m, V.m))
        Tn[:m0, :m0] = T
        Tn[:, m0:] = Tc
        Tn[m0:, :m0] = Tc[:m0].T
        Tn[m0:, m0:] = 0.5 * (Tc[m0:] + Tc[m0:].T)
        T = Tn
        W = Z - V.view @ Tc  # next block before normalization: OP V - V T lives here
        MW = M @ W
        if V.m < k:
            continue
        th, Yall = np.linalg.eigh(T)
        theta, Y = th[::-1][:k], Yall[:, ::-1][:, :k]
        G = W.T @ MW
        ylast = Y[m0:]
        rn = np.sqrt(np.abs(np.einsum("ij,ik,kj->j", ylast, G, ylast)))
        rel = float(np.max(rn / np.maximum(np.abs(theta), 1e-300)))
        if rel <= tol or V.m >= n:
            break
    else:
        raise SolverError(
            f"{name}: block eigen solver did not converge for {k} modes "
            f"(relative residual {rel:.1e} after {it} blocks of {b})"
        )
    if len(theta) < k:
        raise SolverError(f"{name}: only {len(theta)} eigenpairs found, {k} requested")
    lam = sigma + 1.0 / theta
    order = np.argsort(lam)
    X = V.view @ Y[:, order]
    return lam[order], X, {"blocks": it, "block": b, "solves": nsolve, "residual": rel}


EIGEN_METHOD = "block"  # "block" | "arpack": sparse eigen method of `eigsh_shift_invert`


def eigsh_shift_invert(
    K: Any,
    M: Any,
    k: int,
    sigma: float = 0.0,
    factor: SPDFactor | None = None,
    backend: str = "auto",
    tol: float | None = None,
    name: str = "K",
    method: str = "auto",
    whole_groups: tuple[str, int] | None = None,
) -> tuple[Array, Array]:
    """Lowest ``k`` eigenpairs of K x = lam M x by shift-invert.

    Returns eigenvalues ascending and M-normalized eigenvectors (columns); groups of
    equal eigenvalues in the basis of `canonical_groups` (the same in every run).
    ``factor`` (an `SPDFactor` of ``K - sigma M``) is reused when given.

    method : "auto" | "block" | "arpack" | "dense"
        ``"auto"``: dense LAPACK for small problems (<= `DENSE_MAX` rows), else
        `EIGEN_METHOD` (block shift-invert Krylov, `block_shift_invert`;
        ARPACK's Lanczos with ``"arpack"``).
    tol : float, optional
        Relative residual (block, default 1e-10) or ARPACK's tolerance (default 0:
        machine precision).
    whole_groups : (where, skip), optional
        Also solve for eigenpair ``k + 1`` and, if pairs ``k`` and ``k + 1`` have equal
        eigenvalues (the count splits a group), for the rest of that group: the vectors
        kept are then the first of the whole group's canonical basis (the same in every
        run, but a convention, not physics), with a `ModeWarning` naming ``where`` (the
        user's mode count: ``k - skip``) and the counts that keep the group whole.
    """
    n = K.shape[0]
    if k == 0:  # e.g. a Craig-Bampton set of constraint modes only (Guyan)
        return np.zeros(0), np.zeros((n, 0))
    kk = k + 1 if whole_groups is not None and k + 1 < n else k
    lam, V = _lowest_pairs(K, M, kk, sigma, factor, backend, tol, name, method)
    while kk > k and _same(lam[k - 1], lam[-1]) and kk < n - 1:
        # the count splits a group: solve for the whole group, so that the vectors kept
        # are the first of its canonical basis (a fixed choice, not round-off's)
        kk = min(n - 1, k + 2 * (kk - k) + 2)
        lam, V = _lowest_pairs(K, M, kk, sigma, factor, backend, tol, name, method)
    if kk > k:
        _warn_split(lam, k, *whole_groups)
    lam, V = canonical_groups(lam, V)
    return lam[:k], V[:, :k]


def _lowest_pairs(K, M, k, sigma, factor, backend, tol, name, method):
    """`eigsh_shift_invert`'s eigenpairs as the solver returns them (ascending)."""
    n = K.shape[0]
    if method == "auto":
        method = "dense" if (k >= n - 1 or n <= DENSE_MAX) else EIGEN_METHOD
    if method == "dense" or k >= n - 1:
        return eigh_dense(K, M, min(k, n))
    with fem_threads():
        if factor is None:
            A = K - sigma * M if sigma != 0.0 else K
            factor = SPDFactor(A, backend=backend, name=name)
        if method == "block":
            lam, V, _ = block_shift_invert(
                K, M, k, factor, sigma, tol=1e-10 if tol is None else tol, name=name
            )
            return lam, V
        if method != "arpack":
            raise ValueError(
                f"unknown eigen method {method!r}; use 'auto', 'block', 'arpack' or 'dense'"
            )
        v0 = np.random.default_rng(12345).standard_normal(n)
        ncv = min(n, max(2 * k + 1, k + 20))
        try:
            lam, V = spla.eigsh(
                K,
                k=k,
                M=M,
                sigma=sigma,
                OPinv=factor.operator(),
                which="LM",
                tol=0.0 if tol is None else tol,
                v0=v0,
                ncv=ncv,
            )
        except spla.ArpackNoConvergence as exc:
            raise SolverError(f"{name}: eigen solver did not converge for {k} modes") from exc
    order = np.argsort(lam)
    lam, V = lam[order], V[:, order]
    V = V / np.sqrt(np.einsum("ij,ij->j", V, M @ V))
    return lam, V


def _same(a: float, b: float, rtol: float = GROUP_RTOL) -> bool:
    """Two eigenvalues equal to round-off (relative to the larger)."""
    return abs(b - a) <= rtol * max(abs(a), abs(b))


def eigen_groups(lam: Array, rtol: float = GROUP_RTOL) -> list[tuple[int, int]]:
    """``[(start, stop), ...]``: runs of the ascending ``lam`` whose neighbours are equal
    to ``rtol`` (relative), two or more long."""
    groups, start = [], 0
    for i in range(1, len(lam) + 1):
        if i == len(lam) or not _same(lam[i - 1], lam[i], rtol):
            if i - start > 1:
                groups.append((start, i))
            start = i
    return groups


def _probe(n: int, c: int) -> Array:
    """``n x c`` fixed, generic vectors (no random state): ``cos((i + 1) a_j)`` with
    incommensurate ``a_j``."""
    a = np.sqrt(np.arange(2.0, 2.0 + c)) * np.pi / 7.0
    return np.cos(np.outer(np.arange(1.0, n + 1.0), a))


def canonical_groups(lam: Array, V: Array, rtol: float = GROUP_RTOL) -> tuple[Array, Array]:
    """The eigenvectors of each group of equal eigenvalues (`eigen_groups`) in the basis
    ``W = V Q`` of their subspace whose projections ``W^T G`` on fixed vectors ``G``
    (`_probe`) are upper triangular with a positive diagonal.  Any orthonormal basis
    ``V S`` of the same subspace gives the same ``W`` (QR of ``S^T V^T G``), so the
    basis no longer depends on the solver's round-off; M-orthonormality is kept.
    Vectors of distinct eigenvalues are returned as they are."""
    V = np.array(V, dtype=float, copy=True)
    for a, b in eigen_groups(lam, rtol):
        C = V[:, a:b].T @ _probe(V.shape[0], b - a)
        Q, R = np.linalg.qr(C)
        Q = Q * np.where(np.diag(R) < 0.0, -1.0, 1.0)
        V[:, a:b] = V[:, a:b] @ Q
    return lam, V


def _warn_split(lam: Array, k: int, where: str, skip: int) -> None:
    """`ModeWarning` when eigenpair ``k`` (0-based: the first not kept) equals pair ``k - 1``
    (``lam`` holds the whole group)."""
    if k == 0 or not _same(lam[k - 1], lam[k]):
        return
    first = k - 1
    while first > 0 and _same(lam[first - 1], lam[first]):
        first -= 1
    f = np.sqrt(max(lam[k - 1], 0.0)) / (2.0 * np.pi)
    last = k
    while last + 1 < len(lam) and _same(lam[last], lam[last + 1]):
        last += 1
    warnings.warn(
        f"{where}: {k - skip} modes split a group of equal natural frequencies "
        f"({f:.6g} Hz, modes {first - skip + 1}-{last - skip + 1}): the modes kept are "
        "the first of the group's canonical basis (flexmbd.fem.eigen.canonical_groups), "
        "a convention rather than physics, so results depend on it; ask for "
        f"{first - skip} or {last - skip + 1} modes (whole groups)",
        ModeWarning,
        stacklevel=4,
    )


def rigid_modes(nodes: ArrayLike, origin: ArrayLike | None = (0.0, 0.0, 0.0)) -> Array:
    """Rigid-body modes (3n x 6), columns [rotation x, y, z; translation x, y, z].

    ``u = t + theta x (x - origin)`` — the package's [angular; linear] order.
    """
    r = np.asarray(nodes, float) - np.asarray(origin, float)
    n = len(r)
    R = np.zeros((n, 3, 6))
    # theta x r for unit theta_j (e_x x r = (0, -r_z, r_y), ...)
    R[:, 1, 0], R[:, 2, 0] = -r[:, 2], r[:, 1]
    R[:, 0, 1], R[:, 2, 1] = r[:, 2], -r[:, 0]
    R[:, 0, 2], R[:, 1, 2] = -r[:, 1], r[:, 0]
    R[:, 0, 3] = R[:, 1, 4] = R[:, 2, 5] = 1.0
    return R.reshape(3 * n, 6)


class RelievedSolver:
    """Static solves of a free-floating body with inertia relief (mean-axis convention).

    Solves ``K u = F - M R a`` with ``a`` such that the load is self-equilibrated
    and ``R^T M u = 0`` (no mean translation or rotation: the body frame is
    the mean-axis frame).  Uses the factor of ``K - sigma M`` (sigma < 0) and
    iterative refinement; converges like ``|sigma| / lam_7`` per iteration.
    """

    def __init__(
        self, K: Any, M: Any, R: Array, factor: SPDFactor | None, name: str = "body"
    ) -> None:
        self.K, self.M, self.R, self.factor, self.name = K, M, R, factor, name
        self.MR = M @ R
        self.A = R.T @ self.MR

    def project(self, U: Array) -> Array:
        """Remove rigid content M-orthogonally: U - R (R^T M R)^-1 R^T M U."""
        return U - self.R @ np.linalg.solve(self.A, self.MR.T @ U)

    def relieve(self, F: Array) -> Array:
        """Self-equilibrated part of the load F (inertia relief)."""
        return F - self.MR @ np.linalg.solve(self.A, self.R.T @ F)

    def solve(self, F: Array, tol: float = 1e-12, maxit: int = 40) -> Array:
        F = np.asarray(F, float)
        one = F.ndim == 1
        F = F.reshape(len(F), -1)
        n0 = np.linalg.norm(F, axis=0)
        F = self.relieve(F)
        nr = np.linalg.norm(F, axis=0)
        F[:, nr <= 1e-10 * n0] = 0.0  # purely rigid-body loads: no deformation
        scale = np.maximum(np.linalg.norm(F, axis=0), 1e-300)
        U = np.zeros_like(F)
        for _ in range(maxit):
            r = F - self.K @ U
            if (np.linalg.norm(r, axis=0) <= tol * scale).all():
                break
            dU = self.project(self.factor.solve(r))
            U += dU
            if (
                np.linalg.norm(dU, axis=0) <= tol * np.maximum(np.linalg.norm(U, axis=0), 1e-300)
            ).all():
                break
        res = np.linalg.norm(F - self.K @ U, axis=0) / scale
        if res.max() > 1e-6:
            raise SolverError(
                f"{self.name}: inertia-relief static solve did not converge "
                f"(relative residual {res.max():.1e})"
            )
        return U[:, 0] if one else U
