"""Sparse symmetric factorizations and shift-invert eigen solvers.

`SPDFactor` factorizes a sparse symmetric positive-definite matrix once and
solves many right-hand sides:

- ``"cholespy"``: CHOLMOD inside the cholespy wheel (default above 2,000 rows);
- ``"superlu"``: scipy's SuperLU with the symmetric options (MMD on A^T+A, no
  pivoting, SymmetricMode) — a fallback when cholespy is missing;
- ``"dense"``: LAPACK Cholesky, for small matrices and as the test reference.

`eigsh_shift_invert` runs ARPACK in shift-invert mode with such a factor of
``K - sigma M`` as ``OPinv``.  Shifts: ``sigma = 0`` for constrained
problems (the factor of K is then reused for static solves); for free-free
problems `free_shift` picks ``sigma = -1e-8 * max(K_ii / M_ii)``, i.e. relative
to the top of the spectrum, so ``K - sigma M`` stays well conditioned (cond
~1e8) whatever the units, and far below the first elastic eigenvalue.  (An
absolute small shift such as -10 makes the factor numerically singular for
stiff models; the tests check the fast path against dense references.)
"""

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import SolverError

__all__ = ["SPDFactor", "eigsh_shift_invert", "eigh_dense", "free_shift", "rigid_modes",
           "RelievedSolver"]


def _have_cholespy():
    try:
        import cholespy  # noqa: F401
        return True
    except ImportError:  # pragma: no cover
        return False


class SPDFactor:
    """Factorization of a sparse symmetric positive-definite matrix.

    Parameters
    ----------
    A : sparse matrix (n x n), symmetric positive definite
    backend : {"auto", "cholespy", "superlu", "dense"}
    name : str
        Used in error messages.
    """

    def __init__(self, A, backend="auto", name="matrix"):
        A = sp.csc_matrix(A)
        n = A.shape[0]
        self.n, self.name = n, name
        if backend == "auto":
            backend = "dense" if n <= 2000 else ("cholespy" if _have_cholespy() else "superlu")
        self.backend = backend
        if backend == "dense":
            try:
                self._c = sla.cho_factor(A.toarray(), lower=True, check_finite=False)
            except np.linalg.LinAlgError as exc:
                raise SolverError(f"{name}: not positive definite ({exc}); is the body "
                                  "constrained against rigid-body motion?") from exc
        elif backend == "cholespy":
            from cholespy import CholeskySolverD, MatrixType
            A.sort_indices()
            d = A.diagonal()
            if not (d > 0).all():
                raise SolverError(f"{name}: non-positive diagonal entry; the matrix is not SPD")
            self._c = CholeskySolverD(n, A.indptr.astype(np.int32), A.indices.astype(np.int32),
                                      np.ascontiguousarray(A.data, dtype=np.float64),
                                      MatrixType.CSC)
        elif backend == "superlu":
            self._c = spla.splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                                options={"SymmetricMode": True})
        else:
            raise ValueError(f"unknown factorization backend {backend!r}")

    def solve(self, B):
        """Solve A X = B for a vector or a (n, k) block."""
        B = np.asarray(B, dtype=np.float64)
        if self.backend == "dense":
            X = sla.cho_solve(self._c, B, check_finite=False)
        elif self.backend == "cholespy":
            Bc = np.ascontiguousarray(B)
            X = np.empty_like(Bc)
            self._c.solve(Bc, X)
        else:
            X = self._c.solve(B)
        if not np.isfinite(X).all():
            raise SolverError(f"{self.name}: solve produced non-finite values (singular matrix?)")
        return X

    def operator(self):
        return spla.LinearOperator((self.n, self.n), matvec=self.solve, matmat=self.solve,
                                   dtype=np.float64)


def free_shift(K, M):
    """Negative shift for free-free problems, relative to the top of the spectrum."""
    dk, dm = K.diagonal(), M.diagonal()
    ok = dm > 0
    lam_top = float(np.max(dk[ok] / dm[ok])) if ok.any() else float(np.max(dk))
    return -1e-8 * lam_top


def eigh_dense(K, M, k, skip=0):
    """Reference: the lowest ``k`` eigenpairs (after ``skip``) with LAPACK."""
    Kd = K.toarray() if sp.issparse(K) else np.asarray(K)
    Md = M.toarray() if sp.issparse(M) else np.asarray(M)
    lam, V = sla.eigh(Kd, Md, subset_by_index=[skip, skip + k - 1])
    return lam, V


def eigsh_shift_invert(K, M, k, sigma=0.0, factor=None, backend="auto", tol=0.0, name="K"):
    """Lowest ``k`` eigenpairs of K x = lam M x by shift-invert Lanczos.

    Returns eigenvalues ascending and M-normalized eigenvectors (columns).
    ``factor`` (an `SPDFactor` of ``K - sigma M``) is reused when given.
    """
    n = K.shape[0]
    if k >= n - 1 or n <= 600:
        lam, V = eigh_dense(K, M, min(k, n))
        return lam, V
    if factor is None:
        A = K - sigma * M if sigma != 0.0 else K
        factor = SPDFactor(A, backend=backend, name=name)
    v0 = np.random.default_rng(12345).standard_normal(n)
    ncv = min(n, max(2 * k + 1, k + 20))
    try:
        lam, V = spla.eigsh(K, k=k, M=M, sigma=sigma, OPinv=factor.operator(), which="LM",
                            tol=tol, v0=v0, ncv=ncv)
    except spla.ArpackNoConvergence as exc:
        raise SolverError(f"{name}: eigen solver did not converge for {k} modes") from exc
    order = np.argsort(lam)
    lam, V = lam[order], V[:, order]
    V = V / np.sqrt(np.einsum("ij,ij->j", V, M @ V))
    return lam, V


def rigid_modes(nodes, origin=(0.0, 0.0, 0.0)):
    """Rigid-body modes (3n x 6), columns [rotation x, y, z; translation x, y, z].

    ``u = t + theta x (x - origin)`` — the package's [angular; linear] order.
    """
    r = np.asarray(nodes, float) - np.asarray(origin, float)
    n = len(r)
    R = np.zeros((n, 3, 6))
    # theta x r for unit theta_j
    R[:, 1, 0], R[:, 2, 0] = r[:, 2], -r[:, 1]
    R[:, 0, 1], R[:, 2, 1] = -r[:, 2], r[:, 0]
    R[:, 0, 2], R[:, 1, 2] = r[:, 1], -r[:, 0]
    R[:, 0, 3] = R[:, 1, 4] = R[:, 2, 5] = 1.0
    return R.reshape(3 * n, 6)


class RelievedSolver:
    """Static solves of a free-floating body with inertia relief (mean-axis convention).

    Solves ``K u = F - M R a`` with ``a`` such that the load is self-equilibrated
    and ``R^T M u = 0`` (no mean translation or rotation: the body frame is
    the mean-axis frame).  Uses the factor of ``K - sigma M`` (sigma < 0) and
    iterative refinement; converges like ``|sigma| / lam_7`` per iteration.
    """

    def __init__(self, K, M, R, factor, name="body"):
        self.K, self.M, self.R, self.factor, self.name = K, M, R, factor, name
        self.MR = M @ R
        self.A = R.T @ self.MR

    def project(self, U):
        """Remove rigid content M-orthogonally: U - R (R^T M R)^-1 R^T M U."""
        return U - self.R @ np.linalg.solve(self.A, self.MR.T @ U)

    def relieve(self, F):
        """Self-equilibrated part of the load F (inertia relief)."""
        return F - self.MR @ np.linalg.solve(self.A, self.R.T @ F)

    def solve(self, F, tol=1e-12, maxit=40):
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
            if (np.linalg.norm(dU, axis=0) <= tol * np.maximum(np.linalg.norm(U, axis=0),
                                                                1e-300)).all():
                break
        res = np.linalg.norm(F - self.K @ U, axis=0) / scale
        if res.max() > 1e-6:
            raise SolverError(f"{self.name}: inertia-relief static solve did not converge "
                              f"(relative residual {res.max():.1e})")
        return U[:, 0] if one else U
