r"""Load parameters of geometric stiffening from mean-axis (Tisserand) kinematics.

The unit geometric-stiffness matrices of a reduced body (:mod:`flexmbd.fem.geometric`)
are the stresses of unit *quasi-static* loads: the rigid-body inertia field
``b(x0) = -rho (a + alpha x x0 + w x (w x x0))`` (body axes, ``x0`` the undeformed position
relative to the body origin) and the wrenches at the interfaces. At run time they are
weighted by load parameters ``p = (w_i w_j, alpha, a - g_b, wrenches)``. This module says
which ``(w, alpha, a)`` to use, so that the result does not depend on where the body
frame is attached.

Why the frame's own motion is wrong
-----------------------------------
With the frame's ``(w, alpha, a)`` the parameters are right only when the frame follows
the body's mean rigid motion (mean axes). A frame clamped at a *pinned* interface turns
with the elastic vibration: a bending vibration ``q ~ sin(Omega t)`` of the rod rotates the
clamped frame by ``theta ~ Gamma q`` and its angular acceleration holds ``Omega^2 theta``,
compensated in the true acceleration field by the modal accelerations ``Phi qdd``, which
the unit loads do not contain. The load set is then not in equilibrium with the joint
forces, the support of the unit states absorbs the difference, and the stress (hence
``K_G``) oscillates with the vibration: a parametric excitation that made the stiffened
slider-crank rod in a pinned-end frame blow up within 8 ms.

Mean-axis parameters
--------------------
Let ``R(x0) = [-x0~, I]`` (the velocity of ``x0`` per body twist ``[w; v]``), and the rigid
block and modal coupling of the FFR mass matrix (:mod:`.ffr`) at ``q = 0``::

    M_rr0 = int rho R^T R = [[J0, c~], [c~^T, m I]],     M_rf0 = int rho R^T Phi = [M_wf(0); S_t].

*Angular velocity.* The rigid motion that fits the modal displacement best in the mass
norm, ``min int rho |Phi q - t - theta x x0|^2``, has the normal equations
``M_rr0 [theta; t] = M_rf0 q``: ``[theta; t] = Gamma q`` with ``Gamma = M_rr0^-1 M_rf0``
(``6 x n``; zero for a mean-axis basis, whose modes are mass-orthogonal to the rigid
modes). The mean (Tisserand) frame is the body frame moved by ``Gamma q``; its angular
velocity, to first order in the deformation, is ::

    w_p = w + Gamma_w qd            (Gamma_w: the three rotation rows of Gamma)

*Accelerations.* ``(alpha_p, a_p)`` are chosen so that the unit-load field with ``w_p``
has the resultant of the body's actual inertia forces. The actual field (inertial
acceleration ``A(x0)`` of the material point, body axes, :mod:`.ffr`) has the resultant
about the body origin ::

    F_r = [int rho s x A; int rho A] = M_r(q) du/dt + h_r(q, u)     (rows [w; v] of the FFR
                                                                    inertia forces F_in)

and the field ``a + alpha x x0 + w_p x (w_p x x0)`` has ``M_rr0 [alpha; a] + C(w_p)``,
``C(w) = [w x J0 w; w x (w x c)]``. Equating them ::

    [alpha_p; a_p] = M_rr0^-1 (F_r - C(w_p)),        a-parameter: a_p - g_b.

This is the mass-weighted least-squares projection of the actual acceleration field on
the rigid accelerations with angular velocity ``w_p`` (its normal equations are the same
``int rho R^T (.)``). Properties:

1. *Equilibrium.* The rigid rows of the body's equations say ``F_r = Q_r`` (gravity,
   joint and applied wrenches). With these parameters the stiffening loads (inertia
   minus gravity, interface wrenches, reference reaction) are in equilibrium exactly, so
   a clamped basis (its support then carries the true reference reaction) and a
   free-free basis (inertia relief then adds nothing) give the same stress.
2. *Mean axes are unchanged.* For a mean-axis basis at ``q = 0``,
   ``F_r = M_rr0 [alpha; a] + C(w)`` and ``Gamma = 0``: ``(w_p, alpha_p, a_p) = (w, alpha,
   a)`` up to terms of the order of the deformation.
3. *The vibration cancels.* In any frame ``F_r = M_rr0 [alpha; a] + M_rf0 qdd + (velocity
   terms) + O(q)``: ``[alpha_p; a_p] = [alpha; a] + Gamma qdd + ...``; the frame's
   vibration ``theta'' `` and the rigid part ``Gamma qdd`` of the modal accelerations cancel.
4. *Frame independence.* ``F_r`` is a physical wrench (it changes only with the reference
   point and axes, like the unit loads' ``x0``), ``w_p`` is the physical mean angular
   velocity, and the family of fields is the same in every frame; so every frame of the
   same body gets the same load field, to the order of the deformation.

Exact derivatives (the Newton matrix of the absolute formulation): with
``Minv = M_rr0^-1``, ``H = [sum_k Kal_k q, sum_k Ka_k q] Minv`` (``n x 6``) and the partial
derivatives of ``F_r`` that :func:`.ffr.inertia_terms` returns, the stiffening force
``f_G = K_G(p) q`` has ::

    d f_G = K_G dq + H (dF_r - dC/dw dw_p) + (sum_k (Kw_k q) dp_k/dw) dw_p,
    dw_p = dw + Gamma_w dqd,
    dC/dw = [W J0 - (J0 w)~; (w . c) I + w c^T - 2 c w^T]   (W = w~).

In particular ``d f_G / d(alpha, a, qdd) = H M_r(q)`` (the modal accelerations now enter
the stiffening force: the coupling the frame's vibration used to carry).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..spatial import skew

if TYPE_CHECKING:
    from .._typing import Array
    from .ffr import ModalInvariants

__all__ = [
    "rigid_mass0",
    "rigid_fit",
    "mean_axis_parameters",
    "centrifugal_resultant",
    "stiffening_weights",
]


def rigid_mass0(inv: ModalInvariants) -> Array:
    """Rigid block ``M_rr0`` (6, 6) of the FFR mass matrix at ``q = 0`` (speeds ``[w; v]``,
    body axes, about the body origin; kg m^2, kg m, kg)."""
    M = np.zeros((6, 6))
    E0 = np.asarray(inv.E0, float)
    M[:3, :3] = np.trace(E0) * np.eye(3) - E0
    M[:3, 3:] = skew(inv.c)
    M[3:, :3] = skew(inv.c).T
    M[3:, 3:] = inv.mass * np.eye(3)
    return M


def rigid_fit(inv: ModalInvariants) -> tuple[Array, Array]:
    """``(Minv, Gamma)``: ``M_rr0^-1`` (6, 6) and the rigid fit ``Gamma = M_rr0^-1 M_rf0``
    (6, n) of the modes (rotation rows first; dimensionless per unit modal coordinate for
    the rotation, m for the translation)."""
    Minv = np.linalg.inv(rigid_mass0(inv))
    n = inv.n_modes
    Mrf = np.zeros((6, n))
    if n:
        S = np.asarray(inv.S, float)
        Mrf[0] = S[1, 2] - S[2, 1]
        Mrf[1] = S[2, 0] - S[0, 2]
        Mrf[2] = S[0, 1] - S[1, 0]
        Mrf[3:] = inv.St
    return Minv, Minv @ Mrf


def centrifugal_resultant(
    inv: ModalInvariants, w: Array, derivative: bool = False
) -> Array | tuple[Array, Array]:
    """``C(w) = [w x J0 w; w x (w x c)]`` (6,) and, with ``derivative``, ``dC/dw`` (6, 3)."""
    w = np.asarray(w, float)
    J0 = rigid_mass0(inv)[:3, :3]
    c = np.asarray(inv.c, float)
    J0w = J0 @ w
    C = np.concatenate([np.cross(w, J0w), np.cross(w, np.cross(w, c))])
    if not derivative:
        return C
    dC = np.zeros((6, 3))
    dC[:3] = skew(w) @ J0 - skew(J0w)
    dC[3:] = (w @ c) * np.eye(3) + np.outer(w, c) - 2.0 * np.outer(c, w)
    return C, dC


def mean_axis_parameters(
    inv: ModalInvariants,
    qd: Array,
    w: Array,
    F_r: Array,
    g_b: Array | None = None,
    fit: tuple[Array, Array] | None = None,
) -> tuple[Array, Array, Array]:
    """Load parameters of geometric stiffening from mean-axis kinematics (module docs).

    Parameters
    ----------
    inv : ModalInvariants
    qd : (n,) modal rates; w : (3,) angular velocity of the body frame (rad/s, body axes)
    F_r : (6,) inertia resultant ``[moment about the body origin; force]`` (body axes; the
        first six rows of :func:`flexmbd.flexible.ffr.inertia_terms`), N m and N
    g_b : (3,) gravity in body axes (m/s^2), optional
    fit : the output of :func:`rigid_fit` (computed when not given)

    Returns
    -------
    w_p, alpha_p, a_p_minus_g : (3,) each, rad/s, rad/s^2, m/s^2 (body axes)
    """
    Minv, Gamma = rigid_fit(inv) if fit is None else fit
    w_p = np.asarray(w, float) + Gamma[:3] @ np.asarray(qd, float)
    x = Minv @ (np.asarray(F_r, float) - centrifugal_resultant(inv, w_p))
    a = x[3:] if g_b is None else x[3:] - np.asarray(g_b, float)
    return w_p, x[:3], a


def stiffening_weights(
    inv: ModalInvariants,
    qd: Array,
    w: Array,
    F_r: Array,
    g_b: Array | None = None,
    fit: tuple[Array, Array] | None = None,
) -> tuple[Array, Array]:
    """Weights of the body-load unit geometric-stiffness matrices from the body's state.

    The one formula of the stiffening loads (module docs); the absolute formulation's
    residual calls it, and the compiled kernels (absolute engine, recursive tree) are
    transcriptions of it. ``K_G = sum_k p[k] K_k + (interface wrenches)`` with the unit
    matrices ``K_k`` of :mod:`flexmbd.fem.geometric` in the order
    ``(w1w1, w2w2, w3w3, w1w2, w2w3, w1w3, alpha1..3, a1..3)``.

    Parameters
    ----------
    inv : ModalInvariants of the body (any frame: clamped at an interface or mean axes)
    qd : (n,) modal rates (1/s per modal coordinate)
    w : (3,) angular velocity of the body frame, rad/s, body axes
    F_r : (6,) current inertia resultant ``[moment about the body origin; force]`` (N m, N;
        body axes; the first six rows of :func:`flexmbd.flexible.ffr.inertia_terms`)
    g_b : (3,) gravity in body axes (m/s^2), optional
    fit : the output of :func:`rigid_fit` (computed when not given)

    Returns
    -------
    p : (12,) the six products of the mean angular velocity ``w_p`` (rad^2/s^2), the mean
        angular acceleration (rad/s^2) and the mean origin acceleration minus gravity
        (m/s^2), body axes
    w_p : (3,) the mean (Tisserand) angular velocity ``w + Gamma_w qd`` (rad/s)
    """
    w_p, al, a = mean_axis_parameters(inv, qd, w, F_r, g_b, fit)
    x, y, z = w_p
    p = np.concatenate([[x * x, y * y, z * z, x * y, y * z, x * z], al, a])
    return p, w_p
