"""QR-based constraint projection: independent constraints, normal/tangent bases, corrections.

One module used by every formulation and integrator (Wang et al. 2025, "QR-based
constraint violation correction of closed-loop multibody systems with singular
configurations", eq. 8-31; Yu & Hong 1998, section 5, eq. 29-39).

The constraints are given as callables (see :class:`Constraints`): positions
``Φ(q, t)`` (m), the Jacobian ``J = Φ_q`` (m x nv) with respect to the *speeds*
``v`` (``dΦ/dt = J v + Φ_t``), ``Φ_t`` and the acceleration right-hand side
``γ`` with ``J v̇ = γ``. Coordinates ``q`` may differ from the speeds (Euler
parameters): a ``retract(q, dv)`` map moves ``q`` along a speed-space increment.
Products with the inverse mass matrix come from a function ``minv(X)`` (the O(N)
tree solver in the recursive formulation), so the mass matrix is never formed.

Independent constraints and bases (eq. 8-15)
---------------------------------------------
Column-pivoted QR of the transposed Jacobian, ``J^T P = Q R``. The diagonal of R
decreases in magnitude; **the numerical rank is the number of diagonal entries
with |R_kk| > rtol |R_11|** (relative threshold, default ``rtol = 1e-6``; the paper
used an absolute 5e-5 on O(1) Jacobians and reports that 1e-4 flags the singular
configuration too early). The first ``rank`` pivoted rows are the independent
constraints, the others are *discarded* (reported); ``Q_n = Q[:, :rank]`` is an
orthonormal basis of the normal space and its orthogonal complement ``Q_t`` of the
tangent space. ``Q_t`` is never formed unless asked for (:meth:`QRBasis.tangent`).

Both kinds of redundant constraints are handled the same way:

* first kind (modelling): the row is a combination of others everywhere;
  ``|R_kk|`` is at round-off level all the time;
* second kind (singular configuration): the rank drops transiently. The
  projector remembers the *regular rank* ``r0`` (the largest rank seen); while
  the current rank ``r`` is below it, the ``r0 - r`` *weak* directions
  ``Q[:, r:r0]`` -- which stay well defined and continuous through the singular
  point, because they are normalized directions, not the vanishing rows -- are
  kept as the constraint ``Q_w^T v̇ = 0``: the accelerations are projected on the
  tangent space of the regular-rank constraint set (eq. 31, "tangent
  projection"), switched on automatically when the rank drops. Without it (the
  paper's Fig. 5) the weak rows are simply dropped and the accelerations acquire
  a spurious component along the branch that only exists at the singular point.

Multipliers come back for every row: ``λ = P R^-1 μ`` with ``μ`` the force
components along the orthonormal normal directions, zero on discarded rows.

Equations of motion in the tangent space (eq. 16-23)
----------------------------------------------------
With ``C = [Q_n, Q_w]^T`` (orthonormal rows) and the normal accelerations
``a_n = R_nn^-T P_n^T γ`` (eq. 17), the accelerations satisfy ``C v̇ = a`` and
``M v̇ = F + C^T μ``. Two equivalent solvers:

* :meth:`Projector.accelerations` (Lagrange form, products with ``M^-1`` only):
  ``(C M^-1 C^T) μ = a - C v̇_free``, ``v̇ = v̇_free + M^-1 C^T μ``;
* :meth:`Projector.accelerations_tangent` (eq. 21-23 with a dense ``M``):
  ``v̇ = Q_t (Q_t^T M Q_t)^-1 Q_t^T (F - M Q_n a) + Q_n a``.

Corrections (eq. 25-29)
-----------------------
Positions: Newton steps in the normal space, ``Δq = -Q_n R_nn^-T P_n^T Φ``
(eq. 25-27, a few iterations until ``|Φ| <= position_tol``); velocities:
``v <- v - Q_n (Q_n^T v - R_nn^-T P_n^T (-Φ_t))`` (eq. 28-29; the paper's eq. 28
has ``q`` for ``q̇``).

Alternatives (Yu & Hong 1998, section 5)
----------------------------------------
* Baumgarte stabilization (eq. 29-32) with the automatic coefficients
  ``α = 1/h``, ``β = √2/h``: ``J v̇ = γ - 2α (J v + Φ_t) - β² Φ``;
* Moore-Penrose minimum-norm coordinate projection (eq. 35-39):
  ``Δq = -J^+ Φ``, ``Δv = -J^+ (J v + Φ_t)``.

Both use the full Jacobian with minimum-norm (pseudo-inverse) solves, as
classically done, so redundant constraints do not make them fail.

>>> import numpy as np
>>> from flexmbd.constraints.projection import qr_basis
>>> J = np.array([[1.0, 0, 0], [2.0, 0, 0], [0, 1.0, 0]])   # row 2 = 2 x row 1
>>> b = qr_basis(J)
>>> b.rank, sorted(b.independent.tolist()), b.discarded.tolist()
(2, [1, 2], [0])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as sla
from scipy.linalg import lapack as _lapack

from ..errors import SolverError

_new = object.__new__

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from numpy.typing import NDArray

    from .._typing import Array, ArrayLike

__all__ = [
    "DEFAULT_RTOL",
    "Constraints",
    "QRBasis",
    "qr_basis",
    "Projector",
    "ProjectionInfo",
    "METHODS",
]

#: Default relative rank threshold: |R_kk| <= DEFAULT_RTOL * |R_11| counts as zero.
DEFAULT_RTOL = 1e-6
#: Below this relative size a weak direction is round-off noise and is not trusted.
_DIRECTION_EPS = 1e-11
#: Constraint-handling methods of :class:`Projector`.
METHODS = ("qr", "baumgarte", "moore-penrose", "none")


class Constraints:
    """Constraint equations as callables (the interface the projector works on).

    Parameters
    ----------
    phi : callable ``phi(q, t) -> (m,)``
        Position-level constraint values.
    jacobian : callable ``jacobian(q, t) -> (m, nv)``
        ``Φ_q`` with respect to the speeds: ``dΦ/dt = J v + Φ_t``.
    phi_t : callable ``phi_t(q, t) -> (m,)``, optional
        Explicit time derivative (rheonomic constraints); default zero.
    gamma : callable ``gamma(q, v, t) -> (m,)``, optional
        Right-hand side of ``J v̇ = γ`` (``γ = -(J̇ v + Φ̇_t)``). Default: central
        differences of ``J v + Φ_t`` along the motion (accurate to ~1e-8 only; give
        the exact one).
    retract : callable ``retract(q, dv) -> q``, optional
        Move the coordinates by the speed-space increment ``dv`` (default ``q + dv``).
    names : sequence of str, optional
        A label per row, used when reporting discarded equations.
    """

    def __init__(
        self,
        phi: Callable[[Array, float], ArrayLike],
        jacobian: Callable[[Array, float], ArrayLike],
        phi_t: Callable[[Array, float], ArrayLike] | None = None,
        gamma: Callable[[Array, Array, float], ArrayLike] | None = None,
        retract: Callable[[Array, Array], Array] | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        self._phi = phi
        self._jac = jacobian
        self._phi_t = phi_t
        self._gamma = gamma
        self._retract = retract
        self.names = None if names is None else list(names)

    def phi(self, q: ArrayLike, t: float = 0.0) -> Array:
        return np.atleast_1d(np.asarray(self._phi(q, t), dtype=float))

    def jacobian(self, q: ArrayLike, t: float = 0.0) -> Array:
        return np.atleast_2d(np.asarray(self._jac(q, t), dtype=float))

    def phi_t(self, q: ArrayLike, t: float = 0.0) -> Array:
        if self._phi_t is None:
            return np.zeros(self.jacobian(q, t).shape[0])
        return np.atleast_1d(np.asarray(self._phi_t(q, t), dtype=float))

    def gamma(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> Array:
        if self._gamma is not None:
            return np.atleast_1d(np.asarray(self._gamma(q, v, t), dtype=float))
        h = 1e-6
        f = lambda s: (
            self.jacobian(self.retract(q, s * v), t + s) @ v
            + self.phi_t(self.retract(q, s * v), t + s)
        )
        return -(f(h) - f(-h)) / (2 * h)

    def retract(self, q: ArrayLike, dv: ArrayLike) -> Array:
        if self._retract is None:
            return np.asarray(q, dtype=float) + dv
        return self._retract(q, dv)


@dataclass
class QRBasis:
    """Column-pivoted QR of ``J^T`` split into independent / weak / discarded rows.

    Attributes
    ----------
    rank : int
        Numerical rank (``|R_kk| > rtol |R_11|``).
    regular_rank : int
        Rank of the regular configurations (``>= rank``); ``regular_rank - rank``
        weak directions are near-singular (second-kind redundancy).
    perm : ndarray
        Pivot order of the rows of ``J``.
    independent, weak, discarded : ndarray of int
        Row indices of ``J`` (original order): the first ``rank`` pivots; the next
        ``regular_rank - rank``; the rest together with the weak ones, i.e. every
        row whose equation is not used as such.
    Qn : ndarray (nv, rank)
        Orthonormal basis of the normal space of the independent rows.
    Qw : ndarray (nv, n_weak)
        Orthonormal weak normal directions (empty outside singular configurations).
    R : ndarray (k, m)
        The triangular factor (``k = min(nv, m)``), columns in pivot order.
    diag : ndarray
        ``|R_kk|``.
    """

    J: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    perm: np.ndarray
    rank: int
    regular_rank: int
    diag: np.ndarray
    rtol: float
    Qw_override: np.ndarray | None = field(default=None, repr=False)

    @property
    def m(self) -> int:
        return self.J.shape[0]

    @property
    def n(self) -> int:
        return self.J.shape[1]

    @property
    def Qn(self) -> Array:
        return self.Q[:, : self.rank]

    @property
    def Qw(self) -> Array:
        if self.Qw_override is not None:
            return self.Qw_override
        return self.Q[:, self.rank : self.regular_rank]

    @property
    def independent(self) -> NDArray[np.intp]:
        return np.sort(self.perm[: self.rank])

    @property
    def weak(self) -> NDArray[np.intp]:
        return np.sort(self.perm[self.rank : self.regular_rank])

    @property
    def discarded(self) -> NDArray[np.intp]:
        return np.sort(self.perm[self.rank :])

    @property
    def n_weak(self) -> int:
        return self.regular_rank - self.rank

    def discarded_mask(self) -> NDArray[np.bool_]:
        """Boolean (m,) mask of the discarded rows."""
        mask = np.zeros(self.m, dtype=bool)
        mask[self.perm[self.rank :]] = True
        return mask

    def normal_components(self, rhs: ArrayLike, k: int | None = None) -> Array:
        """``R_kk^-T P_k^T rhs``: components along ``Q[:, :k]`` of ``x`` with ``J x = rhs``."""
        k = self.rank if k is None else k
        if k == 0:
            return np.zeros(0)
        return _tri_solve(self.R[:k, :k], np.asarray(rhs, dtype=float)[self.perm[:k]], 1)

    def multipliers(self, mu: ArrayLike) -> Array:
        """Row multipliers ``λ`` (original order) with ``J^T λ = Q[:, :k] mu``, zero on the rest."""
        k = len(mu)
        lam = np.zeros(self.m)
        if k:
            lam[self.perm[:k]] = _tri_solve(self.R[:k, :k], np.asarray(mu, dtype=float), 0)
        return lam

    def tangent(self, k: int | None = None) -> Array:
        """Orthonormal tangent basis ``Q_t`` (nv, nv - k) (complement of ``Q[:, :k]``)."""
        k = self.regular_rank if k is None else k
        if k == 0:
            return np.eye(self.n)
        basis = self.Q[:, :k]
        if self.Qw_override is not None and k > self.rank:
            basis = np.hstack([self.Qn, self.Qw_override])
        Qf, _ = np.linalg.qr(np.hstack([basis, np.eye(self.n)]), mode="reduced")
        Qf = Qf[:, : self.n]
        return Qf[:, k:]


def qr_basis(
    J: ArrayLike, rtol: float = DEFAULT_RTOL, regular_rank: int | None = None, atol: float = 1e-300
) -> QRBasis:
    """:class:`QRBasis` of the Jacobian ``J`` (m x nv) by column-pivoted QR of ``J^T``.

    ``rtol`` is the relative rank threshold (``|R_kk| <= rtol |R_11|`` is zero);
    ``regular_rank`` the rank expected away from singular configurations (weak
    directions are reported between ``rank`` and it).
    """
    J = np.atleast_2d(np.asarray(J, dtype=float))
    m, n = J.shape
    if m == 0 or n == 0:
        return QRBasis(J, np.zeros((n, 0)), np.zeros((0, m)), np.arange(m), 0, 0, np.zeros(0), rtol)
    if not np.all(np.isfinite(J)):
        raise SolverError(
            "constraint Jacobian has non-finite entries (NaN/inf); check the "
            "joint coordinates and the constraint functions"
        )
    # rows that vanish (e.g. the out-of-plane equations of a planar loop modelled in
    # space) are discarded before the factorization, which then works on the rest
    norms = np.abs(J).max(axis=1)
    kept = norms > 1e-14 * max(norms.max(), atol)
    keep = np.flatnonzero(kept)
    if keep.size == 0:
        return QRBasis(J, np.zeros((n, 0)), np.zeros((0, m)), np.arange(m), 0, 0, np.zeros(0), rtol)
    if keep.size < m:
        Qk, Rk, pk = _pivoted_qr(J[keep].T)
        drop = np.flatnonzero(~kept)  # ascending, as np.setdiff1d(arange(m), keep)
        perm = np.concatenate([keep[pk], drop])
        R = np.hstack([Rk, np.zeros((Rk.shape[0], drop.size))])
        Q = Qk
    else:
        Q, R, perm = _pivoted_qr(J.T)
    d = np.abs(np.diag(R))
    if d.size == 0 or d[0] <= atol:
        rank = 0
    else:
        # leading entries above the threshold (pivoted QR keeps |R_kk| non-increasing)
        rank = int(np.argmin(np.append(d > rtol * d[0], False)))
    r0 = rank if regular_rank is None else max(rank, min(int(regular_rank), len(d)))
    # weak directions must still be resolvable above round-off to be trusted
    while r0 > rank and d[r0 - 1] <= _DIRECTION_EPS * max(d[0], atol):
        r0 -= 1
    return QRBasis(J, Q, R, np.asarray(perm), rank, r0, d, rtol)


@dataclass
class ProjectionInfo:
    """What the projector did at one evaluation (collected into ``Results.stats``)."""

    rank: int = 0
    regular_rank: int = 0
    n_weak: int = 0
    discarded: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    newton_iterations: int = 0
    position_violation: float = 0.0
    velocity_violation: float = 0.0

    def snapshot(self) -> ProjectionInfo:
        """A copy with its own ``discarded`` mask (what a result keeps of the projector's
        info at its evaluation; the projector's own info changes at the next one)."""
        return ProjectionInfo.from_record(self.__dict__)

    def record(self) -> dict:
        """The field values now, as a dict whose ``discarded`` is the same array (not
        copied): a :meth:`snapshot` deferred to :meth:`from_record`, for an info whose
        mask the next evaluation replaces and never writes (the projector's)."""
        return self.__dict__.copy()

    @staticmethod
    def from_record(values: dict) -> ProjectionInfo:
        """A :class:`ProjectionInfo` of the field ``values`` (:meth:`record`) with its own
        ``discarded`` mask."""
        out = _new(ProjectionInfo)
        d = values.copy()
        d["discarded"] = d["discarded"].copy()
        out.__dict__ = d
        return out


class Projector:
    """Constraint handling for one constrained system (stateful: tracks the regular rank).

    Parameters
    ----------
    constraints : :class:`Constraints` (or any object with the same methods)
    method : {"qr", "baumgarte", "moore-penrose", "none"}
        ``"qr"``: independent constraints by pivoted QR, normal-space Newton
        position correction, velocity correction, tangent-space accelerations;
        ``"baumgarte"``: Baumgarte stabilization with ``α = 1/h``, ``β = √2/h``
        (no projection); ``"moore-penrose"``: minimum-norm coordinate projection;
        ``"none"``: accelerations only (drift left alone).
    rtol : float
        Relative rank threshold (``|R_kk| <= rtol |R_11|``).
    tangent_projection : bool
        Keep the weak directions of a dropped rank as ``Q_w^T v̇ = 0`` (eq. 31).
        Automatically active only while the rank is below the regular rank.
    position_tol, velocity_tol : float
        Convergence tolerance of the position Newton iteration (max-norm of the
        step, coordinate units), and the velocity residual below which no velocity
        correction is applied.
    max_newton : int
        Maximum Newton iterations of the position correction (the paper used 3).
    h : float, optional
        Step size for the Baumgarte coefficients (required for ``"baumgarte"``).
    fast_rows : bool
        Between two corrected states in a regular configuration, reuse the rows the
        last QR found independent and solve with Cholesky factorizations of
        ``J_I J_I^T`` / ``J_I M^-1 J_I^T`` instead of a new pivoted QR (the same
        equations; one QR per step instead of one per evaluation). The QR is used
        whenever the last corrected state had weak (near-singular) directions.
    """

    def __init__(
        self,
        constraints: Any,
        method: str = "qr",
        rtol: float = DEFAULT_RTOL,
        tangent_projection: bool = True,
        position_tol: float = 1e-13,
        velocity_tol: float = 0.0,
        max_newton: int = 5,
        h: float | None = None,
        baumgarte: tuple[float, float] | None = None,
        fast_rows: bool = True,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"Projector: method must be one of {METHODS}, got {method!r}")
        self.c = constraints
        self.method = method
        self.rtol = float(rtol)
        self.tangent_projection = bool(tangent_projection)
        self.position_tol = float(position_tol)
        self.velocity_tol = float(velocity_tol)
        self.max_newton = int(max_newton)
        self.h = h
        if baumgarte is not None:
            self.alpha, self.beta = baumgarte
        elif h is not None:
            self.alpha, self.beta = 1.0 / h, np.sqrt(2.0) / h
        else:
            self.alpha = self.beta = None
        if method == "baumgarte" and self.alpha is None:
            raise ValueError(
                "Projector(method='baumgarte') needs the step size h "
                "(alpha = 1/h, beta = sqrt(2)/h) or baumgarte=(alpha, beta)"
            )
        self.regular_rank = None
        self._last_weak = None
        self._last_J = None
        self._basis_cache = None
        self._sel_basis = None
        self._sel_memo = None  # (basis, selection, discarded mask): _selection_memo
        self.fast_rows = bool(fast_rows)
        self.info = ProjectionInfo()

    # -- bases ------------------------------------------------------------------------
    def basis(
        self, q: ArrayLike, t: float = 0.0, J: ArrayLike | None = None, update: bool = True
    ) -> QRBasis:
        """:class:`QRBasis` at ``(q, t)``.

        ``update=True`` (states on the constraint manifold: after the position
        correction) may raise the regular rank. Other states (Runge-Kutta stages,
        Newton iterates) are off the manifold, where a set that is redundant on the
        manifold can look independent (Bricard's mechanism: the sixth joint's
        redundant equation gets |R_kk| ~ the distance to the manifold); there the
        rank is capped at the regular rank.
        """
        J = self.c.jacobian(q, t) if J is None else J
        key = (J.shape, J.tobytes(), self.regular_rank, update)
        if self._basis_cache is not None and self._basis_cache[0] == key:
            b = self._basis_cache[1]
            self._set_info(b)
            return b
        b = qr_basis(J, self.rtol, regular_rank=self.regular_rank)
        return self._adopt(b, update)

    def _adopt(self, b, update):
        """The regular rank, weak-direction memory, statistics and cache after the QR
        ``b`` of :meth:`basis` (``update``: at a corrected state)."""
        J = b.J
        if self.regular_rank is None:
            self.regular_rank = b.rank
        elif update:
            self.regular_rank = max(b.rank, self.regular_rank)
        elif b.rank > self.regular_rank:
            b.rank = b.regular_rank = self.regular_rank
        r0 = self.regular_rank if self.regular_rank is not None else b.rank
        if r0 > b.regular_rank and self._last_weak is not None and self.tangent_projection:
            # exactly at the singular point the weak directions are round-off noise:
            # continue them from the last trusted ones, orthogonalized against Q_n
            Wl = self._last_weak
            Wl = Wl - b.Qn @ (b.Qn.T @ Wl)
            Qw, Rw = np.linalg.qr(Wl)
            keep = np.abs(np.diag(Rw)) > 1e-3
            if np.any(keep):
                b.Qw_override = Qw[:, keep]
                b.regular_rank = b.rank + int(np.count_nonzero(keep))
        if update and b.n_weak:
            self._last_weak = b.Qw.copy()
        elif update and b.rank >= r0:
            self._last_weak = None
        self._set_info(b)
        self._basis_cache = ((J.shape, J.tobytes(), self.regular_rank, update), b)
        if update:
            self._sel_basis = b
        return b

    def corrected(
        self,
        b: QRBasis,
        newton_iterations: int,
        position_violation: float,
        velocity_violation: float,
    ) -> None:
        """Record a correction (:meth:`correct`) done by a compiled loop whose corrected
        state's QR is ``b`` (as :func:`qr_basis` with this projector's regular rank
        gives it): the regular rank, the weak directions and the selected rows as
        :meth:`basis` at that state would leave them, and the statistics of the
        correction (Newton iterations, max-norms of the position (m or rad) and velocity
        (m/s or rad/s) violations) in :attr:`info`."""
        self._adopt(b, True)
        self.info.newton_iterations = int(newton_iterations)
        self.info.position_violation = float(position_violation)
        self.info.velocity_violation = float(velocity_violation)

    def _selection(self):
        """Independent rows of the last corrected state if it was regular (else None)."""
        b = self._sel_basis
        if b is None or not self.fast_rows or b.n_weak or b.rank == 0:
            return None
        return b.perm[: b.rank]

    def selection(self) -> NDArray[np.intp] | None:
        """The independent rows (pivot order) of the last corrected state when it was
        regular and ``fast_rows`` is on (method ``"qr"``), else None: the rows a compiled
        loop solves with, as :meth:`accelerations` does between two QRs. The same int64
        array at every call until the next correction (read it, do not write it)."""
        if self.method != "qr":
            return None
        return self._selection_memo()[1] if self.fast_rows else None

    def _selection_memo(self):
        """``(basis, selection or None, discarded mask (read-only))`` of the last
        corrected state's basis, kept until the next correction (its rank and rows do
        not change after :meth:`_adopt`)."""
        b = self._sel_basis
        memo = self._sel_memo
        if memo is not None and memo[0] is b:
            return memo
        sel = None
        if b is not None and not b.n_weak and b.rank != 0:
            sel = np.ascontiguousarray(b.perm[: b.rank], dtype=np.int64)
        mask = None
        if b is not None:
            mask = b.discarded_mask()
            mask.flags.writeable = False
        self._sel_memo = (b, sel, mask)
        return self._sel_memo

    def selection_used(self, record: bool = False) -> dict | None:
        """Record in :attr:`info` that an evaluation used :meth:`selection` (rank and
        discarded rows of the basis it came from), as :meth:`accelerations` does; with
        ``record``, return :meth:`ProjectionInfo.record` of :attr:`info` then (the
        evaluation's statistics for a result that builds them later)."""
        self._set_info(self._sel_basis, self._selection_memo()[2])
        return self.info.record() if record else None

    def weak_state(self) -> bool:
        """True when the last corrected state (:meth:`correct`) had weak directions
        (rank below the regular rank, near a singular configuration)."""
        b = self._sel_basis
        return b is not None and b.n_weak > 0

    def weak_memory(self) -> bool:
        """True when the projector remembers weak directions (:meth:`basis` continues them
        through an exactly singular state, where its own weak directions are round-off)."""
        return self._last_weak is not None

    def regular_state(self, sel: ArrayLike) -> None:
        """Record that a compiled loop corrected a state on the rows ``sel`` (from
        :meth:`selection`) at full rank: as a QR there would (:meth:`basis`), forget the
        remembered weak directions once the rank is back at the regular rank, so that a
        later exactly singular state is not continued from a passage long past."""
        if self.regular_rank is not None and len(sel) >= self.regular_rank:
            self._last_weak = None

    def _set_info(self, b, discarded=None):
        """Record the rank, weak directions and discarded rows (``discarded``: a kept
        mask of ``b``'s, else a new one) of the basis ``b`` in :attr:`info`."""
        self.info.rank = b.rank
        self.info.regular_rank = max(self.regular_rank or 0, b.rank)
        self.info.n_weak = b.n_weak if self.tangent_projection else 0
        self.info.discarded = b.discarded_mask() if discarded is None else discarded

    def _normal_rows(self, b):
        """Orthonormal constraint rows ``C`` (k x nv) used for the accelerations."""
        if self.tangent_projection and b.n_weak:
            return np.hstack([b.Qn, b.Qw]).T
        return b.Qn.T

    # -- corrections ------------------------------------------------------------------
    def correct_positions(self, q: ArrayLike, t: float = 0.0) -> Array:
        """Newton iterations in the normal space (eq. 25-27); returns the corrected ``q``.

        Iterates until the Newton step is below ``position_tol`` (max-norm, in the
        units of the coordinates) or ``max_newton`` steps were taken. The step, not
        the residual, is measured: near a singular configuration a residual of
        1e-12 can hide a coordinate error of 1e-12 / |R_kk|.
        """
        q = np.asarray(q, dtype=float)
        phi = self.c.phi(q, t)
        self.info.newton_iterations = 0
        if self.method in ("none", "baumgarte") or phi.size == 0:
            self.info.position_violation = _norm(phi)
            return q
        for it in range(1, self.max_newton + 1):
            J = self.c.jacobian(q, t)
            sel = self._selection()
            if self.method == "moore-penrose":
                dq = -_pinv_solve(J, phi)
            elif sel is not None:
                # regular configuration, rows known: the same minimum-norm Newton step
                # from the independent rows by Cholesky (no QR)
                JI = J[sel]
                dq = -JI.T @ _spd_solve(JI @ JI.T, phi[sel])
            else:
                b = self.basis(q, t, J=J, update=False)
                k = (
                    b.regular_rank
                    if (self.tangent_projection and b.Qw_override is None)
                    else b.rank
                )
                dq = -b.Q[:, :k] @ b.normal_components(phi, k)
            self.info.newton_iterations = it
            self.info.position_violation = _norm(phi)
            q = self.c.retract(q, dq)
            if _norm(dq) <= self.position_tol:
                # converged (quadratically: the residual after this step is negligible);
                # the Jacobian from before the step serves the velocity correction
                self._last_J = (q, J)
                break
            phi = self.c.phi(q, t)
            self.info.position_violation = _norm(phi)
        return q

    def correct_velocities(
        self, q: ArrayLike, v: ArrayLike, t: float = 0.0, basis: QRBasis | None = None
    ) -> Array:
        """Velocity correction (eq. 28-29, or minimum norm); returns the corrected ``v``."""
        v = np.asarray(v, dtype=float)
        J = self.c.jacobian(q, t) if basis is None else basis.J
        res = J @ v + self.c.phi_t(q, t)
        self.info.velocity_violation = _norm(res)
        if self.method in ("none", "baumgarte") or _norm(res) <= self.velocity_tol:
            return v
        if self.method == "moore-penrose":
            v = v - _pinv_solve(J, res)
        else:
            b = self.basis(q, t, J=J) if basis is None else basis
            # near a singular configuration the weak rows are corrected too, like the
            # positions: their normal velocity (-Phi_t_w - R_rw^T a_r) / R_ww is a ratio of
            # two small but exactly computed quantities (zero for scleronomic rows)
            k = b.regular_rank if (self.tangent_projection and b.Qw_override is None) else b.rank
            Qk = b.Q[:, :k]
            a = b.normal_components(-self.c.phi_t(q, t), k)
            v = v - Qk @ (Qk.T @ v - a)
        self.info.velocity_violation = _norm(J @ v + self.c.phi_t(q, t))
        return v

    def correct(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> tuple[Array, Array]:
        """Positions then velocities, as done before forming the equations of motion."""
        self._last_J = None
        q = self.correct_positions(q, t)
        basis = None
        if self._last_J is not None and self._last_J[0] is q and self.method == "qr":
            basis = self.basis(q, t, J=self._last_J[1])
        v = self.correct_velocities(q, v, t, basis=basis)
        return q, v

    # -- accelerations ----------------------------------------------------------------
    def accelerations(
        self,
        q: ArrayLike,
        v: ArrayLike,
        t: float,
        vdot_free: Array,
        minv: Callable[[Array], Array],
        basis: QRBasis | None = None,
    ) -> tuple[Array, Array]:
        """Constrained accelerations from the unconstrained ones and ``M^-1`` products.

        ``vdot_free = M^-1 F`` (nv,), ``minv(X)`` returns ``M^-1 X`` for an
        (nv, k) array. Returns ``(vdot, lam)``: accelerations and one multiplier per
        constraint row (``M v̇ = F + J^T λ``), zero on discarded rows.
        """
        vdot_free = np.asarray(vdot_free, dtype=float)
        gamma = self.c.gamma(q, v, t)
        J = self.c.jacobian(q, t) if basis is None else basis.J
        if J.shape[0] == 0:
            return vdot_free.copy(), np.zeros(0)
        sel = self._selection() if basis is None and self.method == "qr" else None
        if sel is not None:
            # regular configuration: the independent rows found by the last QR at a
            # corrected state, used directly (Cholesky of J_I M^-1 J_I^T, no QR)
            JI = J[sel]
            Y = _minv_columns(minv, JI.T)
            try:
                c = sla.cho_factor(JI @ Y, check_finite=False)
            except np.linalg.LinAlgError:
                c = None
            if c is not None:
                lam_i = sla.cho_solve(c, gamma[sel] - JI @ vdot_free, check_finite=False)
                vdot = vdot_free + Y @ lam_i
                # one step of iterative refinement (long chains: ill-conditioned M)
                d = sla.cho_solve(c, gamma[sel] - JI @ vdot, check_finite=False)
                lam_i += d
                vdot += Y @ d
                lam = np.zeros(J.shape[0])
                lam[sel] = lam_i
                self._set_info(self._sel_basis)
                return vdot, lam
        if self.method in ("baumgarte", "moore-penrose", "none"):
            if self.method == "baumgarte":
                gamma = (
                    gamma
                    - 2.0 * self.alpha * (J @ v + self.c.phi_t(q, t))
                    - self.beta**2 * self.c.phi(q, t)
                )
            Y = _minv_columns(minv, J.T)
            A = J @ Y
            lam = _lstsq(A, gamma - J @ vdot_free)
            # minimum-norm solves use every row: none is discarded; the rank is reported
            self.info.rank = self.info.regular_rank = int(np.linalg.matrix_rank(A))
            self.info.n_weak = 0
            self.info.discarded = np.zeros(J.shape[0], dtype=bool)
            return vdot_free + Y @ lam, lam
        b = self.basis(q, t, J=J, update=False) if basis is None else basis
        C = self._normal_rows(b)
        a = np.zeros(C.shape[0])
        a[: b.rank] = b.normal_components(gamma)
        Y = _minv_columns(minv, C.T)
        A = C @ Y
        mu = _spd_solve(A, a - C @ vdot_free)
        vdot = vdot_free + Y @ mu
        d = _spd_solve(A, a - C @ vdot)  # one step of iterative refinement
        mu = mu + d
        vdot = vdot + Y @ d
        if C.shape[0] > b.rank and b.Qw_override is not None:
            # weak directions continued from the last step: express in Q[:, :r0]
            mu_full = np.concatenate(
                [mu[: b.rank], b.Q[:, b.rank : b.regular_rank].T @ (b.Qw_override @ mu[b.rank :])]
            )
        else:
            mu_full = mu
        return vdot, b.multipliers(mu_full)

    def accelerations_tangent(
        self,
        q: ArrayLike,
        v: ArrayLike,
        t: float,
        M: ArrayLike,
        F: ArrayLike,
        basis: QRBasis | None = None,
    ) -> tuple[Array, Array]:
        """Accelerations by the tangent-space equations of motion (eq. 21-23), dense ``M``.

        Returns ``(vdot, lam)`` like :meth:`accelerations`.
        """
        M = np.asarray(M, dtype=float)
        F = np.asarray(F, dtype=float)
        J = self.c.jacobian(q, t) if basis is None else basis.J
        if J.shape[0] == 0:
            return np.linalg.solve(M, F), np.zeros(0)
        b = self.basis(q, t, J=J, update=False) if basis is None else basis
        C = self._normal_rows(b)
        gamma = self.c.gamma(q, v, t)
        a = np.zeros(C.shape[0])
        a[: b.rank] = b.normal_components(gamma)
        Qn = C.T
        Qt = _complement(Qn)
        Mbar = Qt.T @ M @ Qt  # eq. 21
        Fbar = Qt.T @ (F - M @ (Qn @ a))
        at = _spd_solve(Mbar, Fbar) if Qt.shape[1] else np.zeros(0)  # eq. 22
        vdot = Qt @ at + Qn @ a  # eq. 23
        mu = Qn.T @ (M @ vdot - F)
        if C.shape[0] > b.rank and b.Qw_override is not None:
            mu = np.concatenate(
                [mu[: b.rank], b.Q[:, b.rank : b.regular_rank].T @ (b.Qw_override @ mu[b.rank :])]
            )
        return vdot, b.multipliers(mu)


# -- small linear-algebra helpers ---------------------------------------------------------
def _pivoted_qr(A):
    """Economic column-pivoted QR ``A P = Q R`` by LAPACK (dgeqp3/dorgqr; low call overhead)."""
    n, m = A.shape
    k = min(n, m)
    A = np.array(A, dtype=float, order="F")
    lwork = int(_lapack.dgeqp3(A, lwork=-1)[3][0])
    qr, jpvt, tau, _, info = _lapack.dgeqp3(A, lwork=max(lwork, 3 * m + 1))
    if info != 0:  # pragma: no cover - LAPACK argument errors only
        return sla.qr(A, mode="economic", pivoting=True, check_finite=False)
    R = np.triu(qr[:k, :])
    Q, _, info = _lapack.dorgqr(qr[:, :k], tau[:k])
    return Q, R, jpvt[:m] - 1


def _tri_solve(R, b, trans):
    """Solve ``R x = b`` (trans=0) or ``R^T x = b`` (trans=1), R upper triangular."""
    x, info = _lapack.dtrtrs(R, b, lower=0, trans=trans)
    if info != 0:
        # an exactly zero pivot: R is singular; fall back to least squares
        A = R.T if trans else R
        return np.linalg.lstsq(A, b, rcond=None)[0]
    return x


def _norm(x):
    x = np.asarray(x)
    return float(np.max(np.abs(x))) if x.size else 0.0


def _minv_columns(minv, X):
    Y = np.asarray(minv(X), dtype=float)
    return Y.reshape(X.shape)


def _spd_solve(A, b):
    if A.shape[0] == 0:
        return np.zeros(0)
    try:
        c = sla.cho_factor(0.5 * (A + A.T), check_finite=False)
        return sla.cho_solve(c, b, check_finite=False)
    except np.linalg.LinAlgError:
        return _lstsq(A, b)


def _lstsq(A, b):
    if A.shape[0] == 0:
        return np.zeros(0)
    return np.linalg.lstsq(A, b, rcond=1e-12)[0]


def _pinv_solve(J, r):
    """Minimum-norm ``x`` with ``J x = r`` (Moore-Penrose, eq. 39; redundant rows allowed)."""
    return np.linalg.lstsq(J, r, rcond=1e-12)[0]


def _complement(Qn):
    n, k = Qn.shape
    if k == 0:
        return np.eye(n)
    Qf, _ = np.linalg.qr(np.hstack([Qn, np.eye(n)]))
    return Qf[:, k:n]
