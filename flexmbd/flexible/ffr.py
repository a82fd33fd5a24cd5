r"""Floating-frame-of-reference body equations from modal invariants.

A material point of a flexible body with undeformed body-frame position
:math:`x_0` sits at

.. math:: x = r + R\,(x_0 + \Phi(x_0)\,q),\qquad s = x_0 + \Phi q,

with :math:`r, R` the body frame (origin, orientation), :math:`q` the modal
coordinates and :math:`\Phi` the mode shapes. With body-frame speeds
:math:`u = (\omega, v, \dot q)` (angular velocity and origin velocity in body axes,
``[angular; linear; modal]`` as everywhere in flexmbd) the body-frame velocity of
the point is :math:`L u = -\tilde s\,\omega + v + \Phi\dot q` and its inertial
acceleration in body axes

.. math:: a = \dot v + \omega\times v + \dot\omega\times s
              + \omega\times(\omega\times s) + 2\,\omega\times\Phi\dot q + \Phi\ddot q .

The principle of virtual power :math:`\int\rho\,L^T a\,dV = \dots` gives the body
equations

.. math:: M(q)\,\dot u + h(u, q) = Q_{ext} - [0; 0; K q + D\dot q],

with :math:`M = \int\rho L^T L\,dV` and :math:`h = \int\rho L^T(\omega\times v +
\omega\times(\omega\times s) + 2\omega\times\Phi\dot q)\,dV`. Every integral is a
polynomial in :math:`q` whose coefficients are the *modal invariants*
(Shabana's inertia shape integrals), computed once:

=========  =====================  ===========================================
symbol     shape                  definition
=========  =====================  ===========================================
``mass``   ()                     :math:`\int\rho\,dV`
``c``      (3,)                   :math:`\int\rho\,x_0\,dV` (first moment)
``E0``     (3, 3)                 :math:`\int\rho\,x_0 x_0^T\,dV` (second moments)
``St``     (3, n)                 :math:`\int\rho\,\Phi\,dV`
``S``      (3, 3, n)              ``S[i, j] =`` :math:`\int\rho\,x_{0i}\Phi^{(j)}\,dV`
``P``      (3, 3, n, n)           ``P[i, j] =`` :math:`\int\rho\,\Phi^{(i)T}\Phi^{(j)}\,dV`
=========  =====================  ===========================================

(:math:`\Phi^{(j)}` is the j-th Cartesian component row of the mode field.) The
modal mass is :math:`M_{ff} = \sum_i P_{ii}`. With these the blocks are, with
the deformed first moment :math:`\bar S = c + S_t q` and second moments
:math:`E = E_0 + (Sq) + (Sq)^T + [q^T P_{ij} q]`:

* :math:`M_{\omega\omega} = J = \mathrm{tr}(E) I - E` (inertia about the origin),
  :math:`M_{\omega v} = \tilde{\bar S}`, :math:`M_{vv} = m I`, :math:`M_{vf} = S_t`,
  :math:`M_{ff} = \sum_i P_{ii}`,
  :math:`(M_{\omega f})_{a} = \epsilon_{abc}(S_{bc} + q^T P_{bc})`;
* :math:`h_\omega = \bar S\times(\omega\times v) + \omega\times J\omega
  + 2(\omega\,\mathrm{tr}\,G - G^T\omega)`, :math:`G = \int\rho\,s\,\dot u^T`;
* :math:`h_v = m\,\omega\times v + \omega\times(\omega\times\bar S) + 2\,\omega\times S_t\dot q`;
* :math:`h_f = S_t^T(\omega\times v) + \sum_{ab}(\tilde\omega^2)_{ab}(S_{ba} + P_{ab}q)
  + 2\sum_{ac}\tilde\omega_{ac}P_{ac}\dot q`.

A uniform gravity :math:`g_b` (body axes) gives :math:`Q = [\bar S\times g_b;\ m g_b;\
S_t^T g_b]`. With no modes (n = 0) everything reduces to the rigid body about
its frame origin. This module is shared by the absolute and recursive
formulations; they map :math:`u` to their own coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ModelError
from ..spatial import skew

if TYPE_CHECKING:
    from typing import Any

    from .._typing import Array, ArrayLike

__all__ = [
    "ModalInvariants",
    "mass_matrix",
    "velocity_forces",
    "gravity_forces",
    "kinetic_energy",
    "second_moments",
    "inertia_terms",
    "gravity_terms",
]

# Levi-Civita symbol
_EPS = np.zeros((3, 3, 3))
_EPS[0, 1, 2] = _EPS[1, 2, 0] = _EPS[2, 0, 1] = 1.0
_EPS[0, 2, 1] = _EPS[2, 1, 0] = _EPS[1, 0, 2] = -1.0


@dataclass(frozen=True)
class ModalInvariants:
    """Modal invariants of a flexible body (see the module docstring for definitions).

    ``K`` and ``D`` are the modal stiffness and damping (n x n); SI units
    throughout (kg, m; mode shapes dimensionless per unit modal coordinate).
    """

    mass: float
    c: np.ndarray
    E0: np.ndarray
    St: np.ndarray
    S: np.ndarray
    P: np.ndarray
    K: np.ndarray
    D: np.ndarray

    @property
    def n_modes(self) -> int:
        return self.St.shape[1]

    @property
    def Mff(self) -> Array:
        """Modal mass matrix (n x n)."""
        return self.P[0, 0] + self.P[1, 1] + self.P[2, 2]

    def validate(self, owner: str = "flexible body") -> None:
        n = self.n_modes
        shapes = {
            "c": (3,),
            "E0": (3, 3),
            "St": (3, n),
            "S": (3, 3, n),
            "P": (3, 3, n, n),
            "K": (n, n),
            "D": (n, n),
        }
        for k, shp in shapes.items():
            if np.shape(getattr(self, k)) != shp:
                raise ModelError(
                    f"{owner}: invariant {k} has shape {np.shape(getattr(self, k))}, expected {shp}"
                )
        if not self.mass > 0:
            raise ModelError(f"{owner}: mass must be positive, got {self.mass}")

    @classmethod
    def from_particles(
        cls,
        m: ArrayLike,
        x0: ArrayLike,
        phi: ArrayLike,
        K: ArrayLike | None = None,
        D: ArrayLike | None = None,
    ) -> ModalInvariants:
        """Invariants of point masses ``m`` (N,) at ``x0`` (N, 3) with modes ``phi`` (N, 3, n).

        A discrete body: exact for lumped-mass models and used to test the
        consistent-mass invariants computed by :mod:`flexmbd.fem`.
        """
        m = np.asarray(m, dtype=float)
        x0 = np.asarray(x0, dtype=float)
        phi = np.asarray(phi, dtype=float)
        n = phi.shape[2]
        return cls(
            mass=float(m.sum()),
            c=m @ x0,
            E0=np.einsum("p,pi,pj->ij", m, x0, x0),
            St=np.einsum("p,pik->ik", m, phi),
            S=np.einsum("p,pi,pjk->ijk", m, x0, phi),
            P=np.einsum("p,pik,pjl->ijkl", m, phi, phi),
            K=np.zeros((n, n)) if K is None else np.asarray(K, dtype=float),
            D=np.zeros((n, n)) if D is None else np.asarray(D, dtype=float),
        )


def second_moments(inv: ModalInvariants, q: Array) -> tuple[Array, Array]:
    """Deformed first moment ``S̄`` (3,) and second moments ``E`` (3, 3) at modal coordinates q."""
    Sq = inv.S @ q  # (3, 3): Sq[i, j] = ∫ρ x0_i u_j
    E = inv.E0 + Sq + Sq.T + np.einsum("k,ijkl,l->ij", q, inv.P, q)
    return inv.c + inv.St @ q, E


def mass_matrix(inv: ModalInvariants, q: Array) -> Array:
    """Body mass matrix (6+n) for speeds ``(ω, v, q̇)`` in body axes."""
    n = inv.n_modes
    Sbar, E = second_moments(inv, q)
    M = np.zeros((6 + n, 6 + n))
    M[:3, :3] = np.trace(E) * np.eye(3) - E
    M[:3, 3:6] = skew(Sbar)
    M[3:6, :3] = skew(Sbar).T
    M[3:6, 3:6] = inv.mass * np.eye(3)
    if n:
        # (M_wf)_a = eps_abc (S_bc + q^T P_bc)
        A = inv.S + np.einsum("k,ijkl->ijl", q, inv.P)  # A[b, c] = S_bc + q^T P_bc
        Mwf = np.einsum("abc,bcl->al", _EPS, A)
        M[:3, 6:] = Mwf
        M[6:, :3] = Mwf.T
        M[3:6, 6:] = inv.St
        M[6:, 3:6] = inv.St.T
        M[6:, 6:] = inv.Mff
    return M


def velocity_forces(inv: ModalInvariants, q: Array, u: Array) -> Array:
    """Quadratic velocity vector ``h`` (6+n) for speeds ``u = (ω, v, q̇)`` in body axes."""
    n = inv.n_modes
    w, v, qd = u[:3], u[3:6], u[6:]
    Sbar, E = second_moments(inv, q)
    J = np.trace(E) * np.eye(3) - E
    wxv = np.cross(w, v)
    h = np.zeros(6 + n)
    h[:3] = np.cross(Sbar, wxv) + np.cross(w, J @ w)
    h[3:6] = inv.mass * wxv + np.cross(w, np.cross(w, Sbar))
    if n:
        # G = ∫ρ s u̇^T = (S q̇) + [q^T P_ij q̇]
        G = inv.S @ qd + np.einsum("k,ijkl,l->ij", q, inv.P, qd)
        h[:3] += 2.0 * (w * np.trace(G) - G.T @ w)
        h[3:6] += 2.0 * np.cross(w, inv.St @ qd)
        W = skew(w)
        W2 = W @ W
        # sum_ab W2_ab (S_ba + P_ab q) + 2 sum_ac W_ac P_ac q̇ + St^T (w x v)
        h[6:] = (
            inv.St.T @ wxv
            + np.einsum("ab,bak->k", W2, inv.S)
            + np.einsum("ab,abkl,l->k", W2, inv.P, q)
            + 2.0 * np.einsum("ac,ackl,l->k", W, inv.P, qd)
        )
    return h


def gravity_forces(inv: ModalInvariants, q: Array, g_body: Array) -> Array:
    """Generalized gravity force (6+n) for gravity ``g_body`` (m/s^2) in body axes."""
    n = inv.n_modes
    Sbar = inv.c + inv.St @ q
    Q = np.zeros(6 + n)
    Q[:3] = np.cross(Sbar, g_body)
    Q[3:6] = inv.mass * g_body
    if n:
        Q[6:] = inv.St.T @ g_body
    return Q


def kinetic_energy(inv: ModalInvariants, q: Array, u: Array) -> float:
    """Kinetic energy ½ uᵀ M(q) u (J)."""
    return 0.5 * u @ mass_matrix(inv, q) @ u


# -- body-axes inertia forces with exact partial derivatives ---------------------------------
#
# With the origin acceleration written in body axes, a = A^T r'' (= v' + w x v for body-axes
# origin velocity v), every term of h that carries v drops out:
#     M(q)[alpha; v'; q''] + h(q, (w, v, q')) = M(q)[alpha; a; q''] + h(q, (w, 0, q'))
# because the v-parts of h are exactly M[:, v] (w x v). This is the form the
# absolute formulation uses (it has no body-axes origin velocity). Notation as in the
# module docstring plus  Y_k[a, b] = int rho Phi_a^(k) s_b = S[b, a, k] + P[a, b, k, :] q
# and Z_k[a, b] = int rho Phi_a^(k) u'_b = P[a, b, k, :] q'. Then
#
#   F_w = J alpha + Sbar~ a + Mwf q'' + w x J w + 2 (w tr G - G^T w)
#   F_v = -Sbar~ alpha + m a + St q'' + w x (w x Sbar) + 2 w x St q'
#   F_f = Mwf^T alpha + St^T a + Mff q'' + sum_ab W2_ab Y[a, b, :] + 2 sum_ab W_ab Z[a, b, :]
#
# (W = w~, W2 = W W, G = int rho s u'^T = sum_k Y_k^T q'_k). Partial derivatives:
#
#   dJ/dq_k = 2 tr(Y_k) I - Y_k - Y_k^T,  dSbar/dq_k = St_k,
#   dMwf[a, l]/dq_k = eps_abc P[b, c, k, l]
#   dF_w/dq_k = dJ_k (alpha + ...) ... (see inertia_terms),
#   dF_f/dq [l, k] = sum_ab (W2 - alpha~)_ab P[a, b, k, l]
#   dF_w/dw  = W J - (J w)~ + 2 (tr G I - G^T)
#   dF_v/dw  = (w . Sbar) I + w Sbar^T - 2 Sbar w^T - 2 (St q')~
#   dF_f,k/dw = (Y_k + Y_k^T - 2 tr Y_k I) w - 2 axial(Z_k),  axial(Z)_c = eps_cab Z_ab
#   dF_w/dq'_l = 2 (w tr Y_l - Y_l w),  dF_v/dq' = 2 W St,
#   dF_f/dq' [k, l] = 2 sum_ab W_ab P[a, b, k, l]
#   dF/d(alpha, a, q'') = M(q)


def _axial_eps(Z):
    """``out[c, ...] = eps_cab Z[a, b, ...]`` (twice the axial vector of the skew part)."""
    return np.stack([Z[1, 2] - Z[2, 1], Z[2, 0] - Z[0, 2], Z[0, 1] - Z[1, 0]])


def inertia_terms(
    inv: ModalInvariants,
    q: Array,
    qd: Array,
    w: Array,
    alpha: Array,
    a: Array,
    qdd: Array,
    derivatives: bool = True,
) -> Any:
    """Inertia forces ``F`` (6+n) in body axes and their exact partial derivatives.

    ``F = M(q) [alpha; a; qdd] + h(q, (w, 0, qd))`` with ``w``, ``alpha`` the angular
    velocity and acceleration of the body frame and ``a`` the acceleration of its
    origin, all in body axes (see the comment block above this function). Returns
    ``F`` or ``(F, M, F_q, F_qd, F_w)`` with ``M = dF/d(alpha, a, qdd)`` (6+n x 6+n),
    ``F_q`` (6+n x n), ``F_qd`` (6+n x n) and ``F_w`` (6+n x 3).
    """
    n = inv.n_modes
    q = np.asarray(q, float)
    qd = np.asarray(qd, float)
    w = np.asarray(w, float)
    alpha = np.asarray(alpha, float)
    a = np.asarray(a, float)
    qdd = np.asarray(qdd, float)
    M = mass_matrix(inv, q)
    ud = np.concatenate([alpha, a, qdd])
    F = M @ ud
    Sbar, E = second_moments(inv, q)
    J = np.trace(E) * np.eye(3) - E
    W = skew(w)
    W2 = W @ W
    Jw = J @ w
    F[:3] += np.cross(w, Jw)
    F[3:6] += np.cross(w, np.cross(w, Sbar))
    if n:
        # Y[a, b, k] = int rho Phi_a^(k) s_b ; Z[a, b, k] = int rho Phi_a^(k) u'_b
        Y = np.transpose(inv.S, (1, 0, 2)) + np.einsum("abkl,l->abk", inv.P, q)
        Z = np.einsum("abkl,l->abk", inv.P, qd)
        G = np.einsum("abk,k->ba", Y, qd)  # G[i, j] = int rho s_i u'_j
        Stqd = inv.St @ qd
        F[:3] += 2.0 * (w * np.trace(G) - G.T @ w)
        F[3:6] += 2.0 * np.cross(w, Stqd)
        F[6:] += np.einsum("ab,abk->k", W2, Y) + 2.0 * np.einsum("ab,abk->k", W, Z)
    if not derivatives:
        return F
    F_q = np.zeros((6 + n, n))
    F_qd = np.zeros((6 + n, n))
    F_w = np.zeros((6 + n, 3))
    F_w[:3] = W @ J - skew(Jw)
    F_w[3:6] = (w @ Sbar) * np.eye(3) + np.outer(w, Sbar) - 2.0 * np.outer(Sbar, w)
    if n:
        eye = np.eye(3)
        trY = np.einsum("aak->k", Y)
        # dJ/dq_k (3, 3, n)
        dJ = 2.0 * trY[None, None, :] * eye[:, :, None] - Y - np.transpose(Y, (1, 0, 2))
        Pe = _axial_eps(inv.P)  # Pe[a, k, l] = eps_abc P[b, c, k, l]
        # F_w
        F_q[:3] = (
            np.einsum("ijk,j->ik", dJ, alpha)
            + np.cross(inv.St.T, a).T
            + np.einsum("akl,l->ak", Pe, qdd)
            + np.cross(w[:, None].T, np.einsum("ijk,j->ki", dJ, w)).T
            + 2.0 * (np.outer(w, np.einsum("aak->k", Z)) - np.einsum("abk,a->bk", Z, w))
        )
        F_q[3:6] = (
            np.cross(alpha[None, :], inv.St.T).T
            + np.cross(w[None, :], np.cross(w[None, :], inv.St.T)).T
        )
        F_q[6:] = np.einsum("ab,abkl->lk", W2 - skew(alpha), inv.P)
        F_qd[:3] = 2.0 * (np.outer(w, trY) - np.einsum("abl,b->al", Y, w))
        F_qd[3:6] = 2.0 * W @ inv.St
        F_qd[6:] = 2.0 * np.einsum("ab,abkl->kl", W, inv.P)
        F_w[:3] += 2.0 * (np.trace(G) * eye - G.T)
        F_w[3:6] -= 2.0 * skew(Stqd)
        F_w[6:] = (
            np.einsum("abk,b->ka", Y, w)
            + np.einsum("bak,b->ka", Y, w)
            - 2.0 * np.outer(trY, w)
            - 2.0 * _axial_eps(Z).T
        )
    return F, M, F_q, F_qd, F_w


def gravity_terms(inv: ModalInvariants, q: Array, g_body: Array) -> tuple[Array, Array, Array]:
    """Gravity force ``Qg`` (6+n) and its derivatives ``dQg/dq`` (6+n x n), ``dQg/dg`` (6+n x 3)."""
    n = inv.n_modes
    Q = gravity_forces(inv, q, g_body)
    Sbar = inv.c + inv.St @ q
    Qq = np.zeros((6 + n, n))
    if n:
        Qq[:3] = np.cross(inv.St.T, g_body).T
    Qg = np.zeros((6 + n, 3))
    Qg[:3] = skew(Sbar)
    Qg[3:6] = inv.mass * np.eye(3)
    Qg[6:] = inv.St.T
    return Q, Qq, Qg
