"""Redundant constraints in saddle-point (KKT) systems of the absolute formulation.

The absolute formulation and its implicit integrators solve, at every Newton
iteration, sparse systems ::

    [ K      Phi_q^T ] [dx ]   [r1]
    [ Phi_q  0       ] [dla] = [r2]

(``K`` the mass or iteration matrix on the ``n`` coordinates). With redundant
joint equations -- a planar mechanism modelled with spatial joints, Bricard's
mechanism, a singular configuration -- ``Phi_q`` loses row rank and the matrix is
singular. :class:`KKTSolver` keeps the QR independent-row selection of
:mod:`flexmbd.constraints.projection` (pivoted QR of ``Phi_q^T`` with the
relative rank threshold): the redundant rows and their multipliers are removed
from the system (their multipliers are reported as zero: one statically
admissible distribution of the joint forces), the independent ones are solved
by sparse LU. The selection is found when the full factorization fails and is
kept while it works (first-kind redundancy is permanent); it is refreshed when
the reduced matrix becomes singular too (the rank changed) or when
:meth:`KKTSolver.reset` is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import SolverError
from .projection import DEFAULT_RTOL, qr_basis

if TYPE_CHECKING:
    from typing import Any

__all__ = ["KKTSolver", "kkt_factor"]


class _Reduced:
    """A factorization of the KKT matrix without the redundant constraint rows."""

    def __init__(self, lu, keep, size):
        self.lu = lu
        self.keep = keep
        self.size = size

    def solve(self, b):
        b = np.asarray(b, dtype=float)
        x = np.zeros(self.size) if b.ndim == 1 else np.zeros((self.size,) + b.shape[1:])
        x[self.keep] = self.lu.solve(b[self.keep])
        return x


class KKTSolver:
    """Factor KKT matrices whose first ``n`` unknowns are coordinates, the rest multipliers.

    ``factor(A)`` returns an object with ``solve(b)``. ``independent`` and
    ``discarded`` hold the constraint rows (0-based, among the multipliers) of the
    current selection (None while the full matrix factors).
    """

    def __init__(self, n: int, rtol: float = DEFAULT_RTOL) -> None:
        self.n = int(n)
        self.rtol = float(rtol)
        self.keep = None
        self.independent = None
        self.discarded = None

    def reset(self) -> None:
        self.keep = self.independent = self.discarded = None

    def _select(self, A):
        n = self.n
        Phi = sp.csr_matrix(A)[n:, :n].toarray()
        b = qr_basis(Phi, self.rtol)
        self.independent = b.independent
        self.discarded = b.discarded
        self.keep = np.concatenate([np.arange(n), n + self.independent])

    def factor(self, A: Any) -> Any:
        A = sp.csc_matrix(A)
        if self.keep is None:
            try:
                return spla.splu(A)
            except RuntimeError:
                self._select(A)
        for attempt in range(2):
            Ar = A[self.keep][:, self.keep].tocsc()
            try:
                return _Reduced(spla.splu(Ar), self.keep, A.shape[0])
            except RuntimeError as err:
                if attempt:
                    raise SolverError(
                        f"KKT matrix singular even without the {len(self.discarded)} redundant "
                        f"constraint rows ({err}); a body may lack mass or inertia in a free "
                        "direction"
                    ) from None
                self._select(A)  # the rank changed: new selection
        raise AssertionError("unreachable")  # pragma: no cover


def kkt_factor(A: Any, n: int, rtol: float = DEFAULT_RTOL) -> Any:
    """One-off :meth:`KKTSolver.factor` of ``A`` (first ``n`` unknowns are coordinates)."""
    return KKTSolver(n, rtol).factor(A)
