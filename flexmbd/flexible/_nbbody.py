r"""Compiled floating-frame body terms: the one set both formulations call.

The equations are those of :mod:`flexmbd.flexible.ffr` (its numpy functions are the test
oracle of this module, ``tests/flexible/test_nbbody.py``); the notation follows it.

Invariant layout
----------------
Every kernel here takes the invariants of one body as the same set of arrays (SI units,
body axes; ``n`` modes; shapes as :class:`flexmbd.flexible.ffr.ModalInvariants`):

==========  ===============  ==================================================
argument    shape            meaning
==========  ===============  ==================================================
``mass``    ()               body mass (kg)
``c``       (3,)             first moment :math:`\int\rho x_0` (kg m)
``E0``      (3, 3)           second moments :math:`\int\rho x_0 x_0^T` (kg m^2)
``St``      (3, n)           :math:`\int\rho\Phi` (:math:`\bar S = c + S_t q`)
``S``       (3, 3, n)        :math:`S_{ijk} = \int\rho x_{0i}\Phi_j^{(k)}`
``P``       (3, 3, n, n)     :math:`P_{abkl} = \int\rho\Phi_a^{(k)}\Phi_b^{(l)}`
``Mff``     (n, n)           modal mass :math:`\sum_a P_{aakl}`
``Kff``     (n, n)           modal stiffness (N m / unit modal coordinate^2)
``Dff``     (n, n)           modal damping
``Kw``      (6, n, n)        unit geometric stiffness per angular-velocity product
                             ``w0^2, w1^2, w2^2, w0 w1, w1 w2, w0 w2``
``Kal``     (3, n, n)        unit geometric stiffness per angular acceleration
``Ka``      (3, n, n)        per origin acceleration minus gravity (body axes)
``Kitf``    (n, n)           interface-load geometric stiffness (current loads)
==========  ===============  ==================================================

Each may be a view into a formulation's own storage: the absolute engine slices
concatenated flat arrays (offsets per body), the recursive kernels pass views of
arrays padded to the largest mode count. A rigid body is the case ``n = 0``.

Body-axes terms (any formulation): with the contractions
``Y[a, b, k] = S[b, a, k] + P[a, b, k, :] q`` and ``Z[a, b, k] = P[a, b, k, :] qd``
(:func:`contract`), the deformed first moment, inertia about the origin and the other
``q``/``qd``/``w``-dependent pieces (:func:`body_state`), the mass matrix
(:func:`mass_matrix`) and the inertia forces
``F = M(q) [alpha; a; qdd] + h(q, (w, 0, qd))`` (:func:`inertia_forces`) with their
exact partial derivatives (:func:`inertia_derivatives`). With body-frame origin
velocity ``v`` and gravity ``g_b`` (body axes), ``h(q, (w, v, qd)) - Q_g`` is
``inertia_forces`` at ``alpha = 0``, ``a = w x v - g_b``, ``qdd = 0`` (the recursive
formulation's bias force).

Absolute (Euler-parameter) coordinates: :func:`flex_block`, :func:`flex_gravity`,
:func:`rigid_block`, :func:`rigid_gravity` map those terms to the coordinates
``(r, e, q_f)`` with their Jacobians for Newton's method; :func:`mean_axis_fit`,
:func:`centrifugal` and :func:`centrifugal_dw` give the mean-axis load parameters of
geometric stiffening (:mod:`flexmbd.flexible.mean_axis`).
"""

from typing import NamedTuple

import numpy as np

from .._jit import njit
from .._nbrotation import (
    Apoly_to,
    Gmat_to,
    TG_add,
    TG_to,
    dAs_to,
    dAtr_to,
)

__all__ = [
    "contract",
    "body_state",
    "mass_matrix",
    "inertia_forces",
    "inertia_derivatives",
    "bias_forces",
    "flex_mass",
    "flex_block",
    "FlexScratch",
    "flex_scratch",
    "flex_gravity",
    "rigid_block",
    "rigid_gravity",
    "mean_axis_fit",
    "centrifugal",
    "centrifugal_dw",
]


# -- body-axes terms -----------------------------------------------------------------------
@njit(cache=True, inline="always")
def contract(S, P, q, qd, Y, Z):
    """``Y[a, b, k] = S[b, a, k] + sum_l P[a, b, k, l] q_l`` and
    ``Z[a, b, k] = sum_l P[a, b, k, l] qd_l`` (3, 3, n) (``Y_k[a, b] = int rho Phi_a^(k)
    s_b``, ``Z_k[a, b] = int rho Phi_a^(k) u'_b``). Summed as ``P[b, a, l, k]`` (the same
    integral, contiguous in ``k``). Loops run to ``n = len(q)``: ``S``, ``P``, ``Y``, ``Z``
    may be padded to more modes."""
    n = q.shape[0]
    for i in range(3):
        for j in range(3):
            for k in range(n):
                Y[i, j, k] = S[j, i, k]
                Z[i, j, k] = 0.0
            for l in range(n):
                ql = q[l]
                qdl = qd[l]
                for k in range(n):
                    p = P[j, i, l, k]
                    Y[i, j, k] += p * ql
                    Z[i, j, k] += p * qdl


@njit(cache=True, inline="always")
def body_state(c, E0, St, S, q, qd, w, Y, Sbar, Stqd, J, Mwf, Gm, W, W2, Jw):
    """The ``q``, ``qd``, ``w``-dependent pieces of the body terms, from :func:`contract`'s
    ``Y``: ``Sbar = c + St q``, ``Stqd = St qd``, ``J = tr(E) I - E`` (inertia about the
    origin), ``Mwf[a, l] = eps_abc Y[c, b, l]``, ``Gm = int rho s u'^T``, ``W = w~``,
    ``W2 = W W``, ``Jw = J w``. Returns ``tr Gm``."""
    n = q.shape[0]
    for i in range(3):
        v = 0.0
        vd = 0.0
        for l in range(n):
            v += St[i, l] * q[l]
            vd += St[i, l] * qd[l]
        Sbar[i] = c[i] + v
        Stqd[i] = vd
    # E = int rho s s^T = E0 + Sq + Sq^T + Pqq;  sum_k Y[i,j,k] q_k = Sq^T + Pqq
    for i in range(3):
        for j in range(3):
            v = 0.0
            for k in range(n):
                v += S[i, j, k] * q[k] + Y[i, j, k] * q[k]
            J[i, j] = E0[i, j] + v
    trE = J[0, 0] + J[1, 1] + J[2, 2]
    for i in range(3):
        for j in range(3):
            J[i, j] = -J[i, j]
        J[i, i] += trE
    for l in range(n):
        Mwf[0, l] = Y[2, 1, l] - Y[1, 2, l]
        Mwf[1, l] = Y[0, 2, l] - Y[2, 0, l]
        Mwf[2, l] = Y[1, 0, l] - Y[0, 1, l]
    for i in range(3):
        for j in range(3):
            Gm[i, j] = 0.0
    for k in range(n):
        for i in range(3):
            for j in range(3):
                Gm[i, j] += Y[j, i, k] * qd[k]
    W[0, 0], W[0, 1], W[0, 2] = 0.0, -w[2], w[1]
    W[1, 0], W[1, 1], W[1, 2] = w[2], 0.0, -w[0]
    W[2, 0], W[2, 1], W[2, 2] = -w[1], w[0], 0.0
    for i in range(3):
        for j in range(3):
            v = 0.0
            for l in range(3):
                if W[i, l] != 0.0:
                    v += W[i, l] * W[l, j]
            W2[i, j] = v
        Jw[i] = J[i, 0] * w[0] + J[i, 1] * w[1] + J[i, 2] * w[2]
    return Gm[0, 0] + Gm[1, 1] + Gm[2, 2]


@njit(cache=True, inline="always")
def mass_matrix(mass, St, Mff, Sbar, J, Mwf, M):
    """Body mass matrix ``M`` ((6+n) square, written into ``M[:6+n, :6+n]``) for speeds
    ``(w, v, qd)`` in body axes, from :func:`body_state`'s ``Sbar``, ``J``, ``Mwf`` (3, n);
    ``St`` and ``Mff`` may be padded to more modes."""
    n = Mwf.shape[1]
    for i in range(6 + n):
        for j in range(6 + n):
            M[i, j] = 0.0
    for i in range(3):
        for j in range(3):
            M[i, j] = J[i, j]
        M[3 + i, 3 + i] = mass
    # M_wv = Sbar~, M_vw = Sbar~^T
    M[0, 4], M[0, 5] = -Sbar[2], Sbar[1]
    M[1, 3], M[1, 5] = Sbar[2], -Sbar[0]
    M[2, 3], M[2, 4] = -Sbar[1], Sbar[0]
    for i in range(3):
        for j in range(3):
            M[3 + j, i] = M[i, 3 + j]
    for l in range(n):
        for i in range(3):
            M[i, 6 + l] = Mwf[i, l]
            M[6 + l, i] = Mwf[i, l]
            M[3 + i, 6 + l] = St[i, l]
            M[6 + l, 3 + i] = St[i, l]
        for k in range(n):
            M[6 + k, 6 + l] = Mff[k, l]


@njit(cache=True, inline="always")
def inertia_forces(mass, St, Mff, Y, Z, Sbar, Stqd, J, Mwf, Gm, trG, W, W2, Jw, w, al, a, qdd, F):
    """Inertia forces ``F = M(q) [al; a; qdd] + h(q, (w, 0, qd))`` (6+n) in body axes
    (``al``, ``a``: angular acceleration of the frame and acceleration of its origin,
    body axes), from :func:`contract` and :func:`body_state`::

        F_w = J al + Sbar x a + Mwf qdd + w x J w + 2 (w tr G - G^T w)
        F_v = al x Sbar + m a + St qdd + w x (w x Sbar) + 2 w x St qd
        F_f = Mwf^T al + St^T a + Mff qdd + W^2 : Y_k + 2 W : Z_k
    """
    n = qdd.shape[0]
    for i in range(3):
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        mq = 0.0
        for l in range(n):
            mq += Mwf[i, l] * qdd[l]
        jal = J[i, 0] * al[0] + J[i, 1] * al[1] + J[i, 2] * al[2]
        gtw = Gm[0, i] * w[0] + Gm[1, i] * w[1] + Gm[2, i] * w[2]
        F[i] = (
            (jal + (Sbar[i1] * a[i2] - Sbar[i2] * a[i1]))
            + mq
            + ((w[i1] * Jw[i2] - w[i2] * Jw[i1]) + 2.0 * (w[i] * trG - gtw))
        )
    t0 = w[1] * Sbar[2] - w[2] * Sbar[1]
    t1 = w[2] * Sbar[0] - w[0] * Sbar[2]
    t2 = w[0] * Sbar[1] - w[1] * Sbar[0]
    t3 = (t0, t1, t2)
    for i in range(3):
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        sq = 0.0
        for l in range(n):
            sq += St[i, l] * qdd[l]
        F[3 + i] = (
            ((al[i1] * Sbar[i2] - al[i2] * Sbar[i1]) + mass * a[i])
            + sq
            + ((w[i1] * t3[i2] - w[i2] * t3[i1]) + 2.0 * (w[i1] * Stqd[i2] - w[i2] * Stqd[i1]))
        )
    for k in range(n):
        mq = 0.0
        for l in range(n):
            mq += Mff[k, l] * qdd[l]
        v = 0.0
        for i in range(3):
            for j in range(3):
                v += W2[i, j] * Y[i, j, k] + 2.0 * W[i, j] * Z[i, j, k]
        F[6 + k] = (
            (
                (Mwf[0, k] * al[0] + Mwf[1, k] * al[1] + Mwf[2, k] * al[2])
                + (St[0, k] * a[0] + St[1, k] * a[1] + St[2, k] * a[2])
            )
            + mq
        ) + v


@njit(cache=True, _nrt=False)
def inertia_derivatives(
    St, P, Y, Z, Sbar, Stqd, J, Gm, trG, W, W2, Jw, w, al, a, qdd, Fq, Fqd, Fwd, ws, T1
):
    """Exact partial derivatives of :func:`inertia_forces` (body axes): ``Fq = dF/dq``,
    ``Fqd = dF/dqd`` ((6+n) x n) and ``Fwd = dF/dw`` ((6+n) x 3); ``dF/d(al, a, qdd)`` is
    the mass matrix. ``ws`` (3, 3, 3) and ``T1`` (n, n) scratch (no allocation).
    Formulas: the comment block above :func:`flexmbd.flexible.ffr.inertia_terms`."""
    n = qdd.shape[0]
    Wa = ws[0]
    dJ = ws[1]
    col = ws[2, 0]
    dJw = ws[2, 1]
    # dF_w/dw = W J - (J w)~ + 2 (tr G I - G^T)
    for i in range(3):
        for j in range(3):
            v = 0.0
            for l in range(3):
                if W[i, l] != 0.0:
                    v += W[i, l] * J[l, j]
            Fwd[i, j] = v
    Fwd[0, 1] += Jw[2]
    Fwd[0, 2] -= Jw[1]
    Fwd[1, 0] -= Jw[2]
    Fwd[1, 2] += Jw[0]
    Fwd[2, 0] += Jw[1]
    Fwd[2, 1] -= Jw[0]
    for i in range(3):
        for j in range(3):
            Fwd[i, j] += 2.0 * ((trG if i == j else 0.0) - Gm[j, i])
    # dF_v/dw = w Sbar^T - 2 Sbar w^T + (w.Sbar) I - 2 (St qd)~
    wS = w[0] * Sbar[0] + w[1] * Sbar[1] + w[2] * Sbar[2]
    for i in range(3):
        for j in range(3):
            Fwd[3 + i, j] = w[i] * Sbar[j] - 2.0 * (Sbar[i] * w[j])
        Fwd[3 + i, i] += wS
    Fwd[3, 1] -= 2.0 * -Stqd[2]
    Fwd[3, 2] -= 2.0 * Stqd[1]
    Fwd[4, 0] -= 2.0 * Stqd[2]
    Fwd[4, 2] -= 2.0 * -Stqd[0]
    Fwd[5, 0] -= 2.0 * -Stqd[1]
    Fwd[5, 1] -= 2.0 * Stqd[0]
    for i in range(3):
        for j in range(3):
            Wa[i, j] = W2[i, j]
    Wa[0, 1] -= -al[2]
    Wa[0, 2] -= al[1]
    Wa[1, 0] -= al[2]
    Wa[1, 2] -= -al[0]
    Wa[2, 0] -= -al[1]
    Wa[2, 1] -= al[0]
    for k in range(n):
        trY = Y[0, 0, k] + Y[1, 1, k] + Y[2, 2, k]
        trZ = Z[0, 0, k] + Z[1, 1, k] + Z[2, 2, k]
        # dJ_k = 2 tr(Y_k) I - Y_k - Y_k^T
        for i in range(3):
            for j in range(3):
                dJ[i, j] = -Y[i, j, k] - Y[j, i, k]
            dJ[i, i] += 2.0 * trY
        s0, s1, s2 = St[0, k], St[1, k], St[2, k]
        for i in range(3):
            col[i] = dJ[i, 0] * al[0] + dJ[i, 1] * al[1] + dJ[i, 2] * al[2]
            dJw[i] = dJ[i, 0] * w[0] + dJ[i, 1] * w[1] + dJ[i, 2] * w[2]
        # + St_k x a
        col[0] += s1 * a[2] - s2 * a[1]
        col[1] += s2 * a[0] - s0 * a[2]
        col[2] += s0 * a[1] - s1 * a[0]
        # + Pe[:, k, :] qdd  (Pe[a, k, l] = eps_abc P[b, c, k, l])
        for l in range(n):
            col[0] += (P[1, 2, k, l] - P[2, 1, k, l]) * qdd[l]
            col[1] += (P[2, 0, k, l] - P[0, 2, k, l]) * qdd[l]
            col[2] += (P[0, 1, k, l] - P[1, 0, k, l]) * qdd[l]
        # + w x (dJ_k w)
        col[0] += w[1] * dJw[2] - w[2] * dJw[1]
        col[1] += w[2] * dJw[0] - w[0] * dJw[2]
        col[2] += w[0] * dJw[1] - w[1] * dJw[0]
        for i in range(3):
            zw = Z[0, i, k] * w[0] + Z[1, i, k] * w[1] + Z[2, i, k] * w[2]
            Fq[i, k] = col[i] + 2.0 * (w[i] * trZ - zw)
        # F_v: alpha x St_k + w x (w x St_k)
        ws0 = w[1] * s2 - w[2] * s1
        ws1 = w[2] * s0 - w[0] * s2
        ws2 = w[0] * s1 - w[1] * s0
        Fq[3, k] = al[1] * s2 - al[2] * s1 + w[1] * ws2 - w[2] * ws1
        Fq[4, k] = al[2] * s0 - al[0] * s2 + w[2] * ws0 - w[0] * ws2
        Fq[5, k] = al[0] * s1 - al[1] * s0 + w[0] * ws1 - w[1] * ws0
        # dF_w/dqd_k = 2 (w tr Y_k - Y_k w)
        for i in range(3):
            yw = Y[i, 0, k] * w[0] + Y[i, 1, k] * w[1] + Y[i, 2, k] * w[2]
            Fqd[i, k] = 2.0 * (w[i] * trY - yw)
        # dF_f,k/dw = (Y_k + Y_k^T - 2 tr Y_k I) w - 2 axial(Z_k)
        for i in range(3):
            v = -2.0 * trY * w[i]
            for j in range(3):
                v += (Y[i, j, k] + Y[j, i, k]) * w[j]
            Fwd[6 + k, i] = v
        Fwd[6 + k, 0] -= 2.0 * (Z[1, 2, k] - Z[2, 1, k])
        Fwd[6 + k, 1] -= 2.0 * (Z[2, 0, k] - Z[0, 2, k])
        Fwd[6 + k, 2] -= 2.0 * (Z[0, 1, k] - Z[1, 0, k])
        # dF_v/dqd = 2 W St
        for i in range(3):
            v = 0.0
            for l in range(3):
                if W[i, l] != 0.0:
                    v += W[i, l] * St[l, k]
            Fqd[3 + i, k] = 2.0 * v
    # modal rows: dF_f,l/dq_k = (W^2 - al~) : P_..kl ;  dF_f,k/dqd_l = 2 W : P_..kl
    # (accumulated over (i, j) in the same order as a per-entry sum; contiguous in l)
    for k in range(n):
        for l in range(n):
            T1[k, l] = 0.0
            Fqd[6 + k, l] = 0.0
    for i in range(3):
        for j in range(3):
            wa = Wa[i, j]
            wd = 2.0 * W[i, j]
            for k in range(n):
                for l in range(n):
                    p = P[i, j, k, l]
                    T1[k, l] += wa * p
                    Fqd[6 + k, l] += wd * p
    for k in range(n):
        for l in range(n):
            Fq[6 + l, k] = T1[k, l]


@njit(cache=True, inline="always")
def bias_forces(mass, c, E0, St, S, P, Mff, q, qd, w, v, gb, M, h, ws):
    """Mass matrix ``M`` ((6+n) square) and ``h(q, (w, v, qd)) - Q_gravity`` (6+n) of a
    body for body-frame speeds ``(w, v, qd)`` and gravity ``gb`` (m/s^2), all in body axes:
    :func:`inertia_forces` at ``al = 0``, ``a = w x v - gb``, ``qdd = 0``. The invariants
    may be padded to more modes than ``n = len(q)``; ``ws`` (4, 3, 3, >= n + 6) scratch."""
    n = q.shape[0]
    Y = ws[0]
    Z = ws[1]
    Mwf = ws[2, 0, :, 0:n]
    qdd = ws[2, 1, 0, 0:n]
    for l in range(n):
        qdd[l] = 0.0
    Sbar = ws[2, 1, 1, 0:3]
    Stqd = ws[2, 1, 2, 0:3]
    Jw = ws[2, 2, 0, 0:3]
    al = ws[2, 2, 1, 0:3]
    a = ws[2, 2, 2, 0:3]
    J = ws[3, 0, :, 0:3]
    Gm = ws[3, 1, :, 0:3]
    W = ws[3, 2, :, 0:3]
    W2 = ws[3, 2, :, 3:6]
    contract(S, P, q, qd, Y, Z)
    trG = body_state(c, E0, St, S, q, qd, w, Y, Sbar, Stqd, J, Mwf, Gm, W, W2, Jw)
    mass_matrix(mass, St, Mff, Sbar, J, Mwf, M)
    al[0] = 0.0
    al[1] = 0.0
    al[2] = 0.0
    a[0] = w[1] * v[2] - w[2] * v[1] - gb[0]
    a[1] = w[2] * v[0] - w[0] * v[2] - gb[1]
    a[2] = w[0] * v[1] - w[1] * v[0] - gb[2]
    inertia_forces(mass, St, Mff, Y, Z, Sbar, Stqd, J, Mwf, Gm, trG, W, W2, Jw, w, al, a, qdd, h)


# -- mean-axis load parameters of geometric stiffening (flexmbd.flexible.mean_axis) ---------
@njit(cache=True, _nrt=False)
def mean_axis_fit(mass, c, E0, S, St, Mi, Gw, W):
    """``Mi = M_rr0^-1`` (6, 6) and the rotation rows ``Gw`` (3, n) of the rigid fit
    ``Gamma = M_rr0^-1 M_rf0`` (Gauss-Jordan with partial pivoting on [M_rr0 | I | M_rf0]);
    ``W`` (6, 12 + n) scratch (no allocation)."""
    n = St.shape[1]
    for i in range(6):
        for j in range(12 + n):
            W[i, j] = 0.0
    tr = E0[0, 0] + E0[1, 1] + E0[2, 2]
    for i in range(3):
        for j in range(3):
            W[i, j] = -E0[i, j]
        W[i, i] += tr
        W[3 + i, 3 + i] = mass
    # M_wv = c~, M_vw = c~^T
    W[0, 4], W[0, 5], W[1, 3], W[1, 5], W[2, 3], W[2, 4] = -c[2], c[1], c[2], -c[0], -c[1], c[0]
    for i in range(3):
        for j in range(3):
            W[3 + j, i] = W[i, 3 + j]
    for i in range(6):
        W[i, 6 + i] = 1.0
    for l in range(n):
        W[0, 12 + l] = S[1, 2, l] - S[2, 1, l]
        W[1, 12 + l] = S[2, 0, l] - S[0, 2, l]
        W[2, 12 + l] = S[0, 1, l] - S[1, 0, l]
        for i in range(3):
            W[3 + i, 12 + l] = St[i, l]
    m = 12 + n
    for col in range(6):
        piv = col
        for r in range(col + 1, 6):
            if abs(W[r, col]) > abs(W[piv, col]):
                piv = r
        if piv != col:
            for j in range(m):
                t = W[col, j]
                W[col, j] = W[piv, j]
                W[piv, j] = t
        d = 1.0 / W[col, col]
        for j in range(m):
            W[col, j] *= d
        for r in range(6):
            if r != col:
                f = W[r, col]
                if f != 0.0:
                    for j in range(m):
                        W[r, j] -= f * W[col, j]
    for i in range(6):
        for j in range(6):
            Mi[i, j] = W[i, 6 + j]
    for i in range(3):
        for l in range(n):
            Gw[i, l] = W[i, 12 + l]


@njit(cache=True, _nrt=False)
def centrifugal(J0, c, w, out):
    """``out = [w x J0 w; w x (w x c)]``."""
    j0 = J0[0, 0] * w[0] + J0[0, 1] * w[1] + J0[0, 2] * w[2]
    j1 = J0[1, 0] * w[0] + J0[1, 1] * w[1] + J0[1, 2] * w[2]
    j2 = J0[2, 0] * w[0] + J0[2, 1] * w[1] + J0[2, 2] * w[2]
    out[0] = w[1] * j2 - w[2] * j1
    out[1] = w[2] * j0 - w[0] * j2
    out[2] = w[0] * j1 - w[1] * j0
    x0 = w[1] * c[2] - w[2] * c[1]
    x1 = w[2] * c[0] - w[0] * c[2]
    x2 = w[0] * c[1] - w[1] * c[0]
    out[3] = w[1] * x2 - w[2] * x1
    out[4] = w[2] * x0 - w[0] * x2
    out[5] = w[0] * x1 - w[1] * x0


@njit(cache=True, _nrt=False)
def centrifugal_dw(J0, c, w, dC):
    """``dC/dw`` (6, 3) of :func:`centrifugal`: ``[W J0 - (J0 w)~; (w.c) I + w c^T - 2 c w^T]``."""
    Jw0 = J0[0, 0] * w[0] + J0[0, 1] * w[1] + J0[0, 2] * w[2]
    Jw1 = J0[1, 0] * w[0] + J0[1, 1] * w[1] + J0[1, 2] * w[2]
    Jw2 = J0[2, 0] * w[0] + J0[2, 1] * w[1] + J0[2, 2] * w[2]
    for j in range(3):
        dC[0, j] = w[1] * J0[2, j] - w[2] * J0[1, j]
        dC[1, j] = w[2] * J0[0, j] - w[0] * J0[2, j]
        dC[2, j] = w[0] * J0[1, j] - w[1] * J0[0, j]
    dC[0, 1] += Jw2
    dC[0, 2] -= Jw1
    dC[1, 0] -= Jw2
    dC[1, 2] += Jw0
    dC[2, 0] += Jw1
    dC[2, 1] -= Jw0
    wc = w[0] * c[0] + w[1] * c[1] + w[2] * c[2]
    for i in range(3):
        for j in range(3):
            dC[3 + i, j] = w[i] * c[j] - 2.0 * c[i] * w[j]
        dC[3 + i, i] += wc


# -- absolute (Euler-parameter) coordinates -----------------------------------------------
@njit(cache=True, _nrt=False)
def rigid_block(m, c, J, e, ed, rdd, edd, R, M, K, D, ws, jac):
    """Inertia residual ``R`` (7) of a rigid body in absolute coordinates ``(r, e)`` and its
    blocks ``M = dR/dqdd``, ``K = dR/dq``, ``D = dR/dqd`` (7, 7; only the entries with
    ``e`` columns and the ``r, r`` mass are written): the equations of
    :mod:`flexmbd.absolute.inertia` (its numpy ``BodyInertia.residual`` is the test
    oracle), mass ``m``, first moment per mass ``c`` and inertia ``J`` about the origin
    (body axes). ``ws`` (29, 4) scratch; ``jac`` False: ``R`` only.

    Deliberately unrolled kernel: the ``n = 0`` case of :func:`flex_block` (no
    stiffening, no modes) written out with explicit 3-vector loops and no allocation,
    because it runs once per rigid body per Newton iteration."""
    A = ws[0:3, 0:3]
    G = ws[3:6, :]
    Apoly_to(e, A)
    Gmat_to(e, 1.0, G)
    w0 = 2.0 * (G[0, 0] * ed[0] + G[0, 1] * ed[1] + G[0, 2] * ed[2] + G[0, 3] * ed[3])
    w1 = 2.0 * (G[1, 0] * ed[0] + G[1, 1] * ed[1] + G[1, 2] * ed[2] + G[1, 3] * ed[3])
    w2 = 2.0 * (G[2, 0] * ed[0] + G[2, 1] * ed[1] + G[2, 2] * ed[2] + G[2, 3] * ed[3])
    a0 = 2.0 * (G[0, 0] * edd[0] + G[0, 1] * edd[1] + G[0, 2] * edd[2] + G[0, 3] * edd[3])
    a1 = 2.0 * (G[1, 0] * edd[0] + G[1, 1] * edd[1] + G[1, 2] * edd[2] + G[1, 3] * edd[3])
    a2 = 2.0 * (G[2, 0] * edd[0] + G[2, 1] * edd[1] + G[2, 2] * edd[2] + G[2, 3] * edd[3])
    c0, c1, c2 = c[0], c[1], c[2]
    # wc = w x c, u = a x c + w x wc
    x0 = w1 * c2 - w2 * c1
    x1 = w2 * c0 - w0 * c2
    x2 = w0 * c1 - w1 * c0
    u0 = (a1 * c2 - a2 * c1) + (w1 * x2 - w2 * x1)
    u1 = (a2 * c0 - a0 * c2) + (w2 * x0 - w0 * x2)
    u2 = (a0 * c1 - a1 * c0) + (w0 * x1 - w1 * x0)
    t0 = A[0, 0] * rdd[0] + A[1, 0] * rdd[1] + A[2, 0] * rdd[2]
    t1 = A[0, 1] * rdd[0] + A[1, 1] * rdd[1] + A[2, 1] * rdd[2]
    t2 = A[0, 2] * rdd[0] + A[1, 2] * rdd[1] + A[2, 2] * rdd[2]
    j0 = J[0, 0] * w0 + J[0, 1] * w1 + J[0, 2] * w2
    j1 = J[1, 0] * w0 + J[1, 1] * w1 + J[1, 2] * w2
    j2 = J[2, 0] * w0 + J[2, 1] * w1 + J[2, 2] * w2
    N0 = (
        (J[0, 0] * a0 + J[0, 1] * a1 + J[0, 2] * a2) + (w1 * j2 - w2 * j1) + m * (c1 * t2 - c2 * t1)
    )
    N1 = (
        (J[1, 0] * a0 + J[1, 1] * a1 + J[1, 2] * a2) + (w2 * j0 - w0 * j2) + m * (c2 * t0 - c0 * t2)
    )
    N2 = (
        (J[2, 0] * a0 + J[2, 1] * a1 + J[2, 2] * a2) + (w0 * j1 - w1 * j0) + m * (c0 * t1 - c1 * t0)
    )
    for i in range(3):
        R[i] = m * (rdd[i] + (A[i, 0] * u0 + A[i, 1] * u1 + A[i, 2] * u2))
    for j in range(4):
        R[3 + j] = 2.0 * (G[0, j] * N0 + G[1, j] * N1 + G[2, j] * N2)
    if not jac:
        return
    Cm = ws[6:9, 0:3]  # c~
    Dw = ws[9:12, 0:3]  # (w.c) I + w c^T - 2 c w^T
    Lw = ws[12:15, 0:3]  # W J - (J w)~
    T1 = ws[15:18, :]  # scratch 3x4
    T2 = ws[18:21, :]  # scratch 3x4
    T3 = ws[21:24, :]  # scratch 3x4
    Cm[0, 0], Cm[0, 1], Cm[0, 2] = 0.0, -c2, c1
    Cm[1, 0], Cm[1, 1], Cm[1, 2] = c2, 0.0, -c0
    Cm[2, 0], Cm[2, 1], Cm[2, 2] = -c1, c0, 0.0
    wv = (w0, w1, w2)
    cv = (c0, c1, c2)
    wdc = w0 * c0 + w1 * c1 + w2 * c2
    for i in range(3):
        for j in range(3):
            Dw[i, j] = wv[i] * cv[j] - 2.0 * (cv[i] * wv[j])
        Dw[i, i] += wdc
    # Lw = W J - (Jw)~  (W J: rows w x J[:, j])
    for j in range(3):
        Lw[0, j] = w1 * J[2, j] - w2 * J[1, j]
        Lw[1, j] = w2 * J[0, j] - w0 * J[2, j]
        Lw[2, j] = w0 * J[1, j] - w1 * J[0, j]
    Lw[0, 1] -= -j2
    Lw[0, 2] -= j1
    Lw[1, 0] -= j2
    Lw[1, 2] -= -j0
    Lw[2, 0] -= -j1
    Lw[2, 1] -= j0
    for i in range(3):
        M[i, i] = m
    # Mre = -2 m A C G ; T1 = C G
    for i in range(3):
        for j in range(4):
            T1[i, j] = Cm[i, 0] * G[0, j] + Cm[i, 1] * G[1, j] + Cm[i, 2] * G[2, j]
    for i in range(3):
        for j in range(4):
            v = -2.0 * m * (A[i, 0] * T1[0, j] + A[i, 1] * T1[1, j] + A[i, 2] * T1[2, j])
            M[i, 3 + j] = v
            M[3 + j, i] = v
    # M_ee = 4 G^T J G ; T1 = J G
    for i in range(3):
        for j in range(4):
            T1[i, j] = J[i, 0] * G[0, j] + J[i, 1] * G[1, j] + J[i, 2] * G[2, j]
    for a in range(4):
        for j in range(4):
            M[3 + a, 3 + j] = 4.0 * (G[0, a] * T1[0, j] + G[1, a] * T1[1, j] + G[2, a] * T1[2, j])
    # dw_de = -2 G(ed) -> T2 ; da_de = -2 G(edd) -> T3
    Gmat_to(ed, -2.0, T2)
    Gmat_to(edd, -2.0, T3)
    # K_re = m (dAs(e, u) + A (-C da_de + Dw dw_de))
    uu = ws[24, 0:3]
    uu[0], uu[1], uu[2] = u0, u1, u2
    dAs_to(e, uu, 1.0, T1)
    for i in range(3):
        for j in range(4):
            y = 0.0
            for l in range(3):
                y += A[i, l] * (
                    (-(Cm[l, 0] * T3[0, j] + Cm[l, 1] * T3[1, j] + Cm[l, 2] * T3[2, j]))
                    + (Dw[l, 0] * T2[0, j] + Dw[l, 1] * T2[1, j] + Dw[l, 2] * T2[2, j])
                )
            K[i, 3 + j] = m * (T1[i, j] + y)
    # K_ee = 2 TG(N) + 2 G^T (J da_de + Lw dw_de + m C dAtr_de)
    T4 = ws[26:29, :]
    dAtr_to(e, rdd, T4)
    for i in range(3):
        for j in range(4):
            T1[i, j] = (
                (J[i, 0] * T3[0, j] + J[i, 1] * T3[1, j] + J[i, 2] * T3[2, j])
                + (Lw[i, 0] * T2[0, j] + Lw[i, 1] * T2[1, j] + Lw[i, 2] * T2[2, j])
                + m * (Cm[i, 0] * T4[0, j] + Cm[i, 1] * T4[1, j] + Cm[i, 2] * T4[2, j])
            )
    for a in range(4):
        for j in range(4):
            K[3 + a, 3 + j] = 2.0 * (G[0, a] * T1[0, j] + G[1, a] * T1[1, j] + G[2, a] * T1[2, j])
    NN = ws[25, 0:3]
    NN[0], NN[1], NN[2] = N0, N1, N2
    TG_add(NN, 2.0, K, 3, 3)
    # D_re = 2 m A Dw G ; D_ee = 4 G^T Lw G
    for i in range(3):
        for j in range(4):
            T2[i, j] = Dw[i, 0] * G[0, j] + Dw[i, 1] * G[1, j] + Dw[i, 2] * G[2, j]
            T3[i, j] = Lw[i, 0] * G[0, j] + Lw[i, 1] * G[1, j] + Lw[i, 2] * G[2, j]
    for i in range(3):
        for j in range(4):
            D[i, 3 + j] = 2.0 * m * (A[i, 0] * T2[0, j] + A[i, 1] * T2[1, j] + A[i, 2] * T2[2, j])
    for a in range(4):
        for j in range(4):
            D[3 + a, 3 + j] = 4.0 * (G[0, a] * T3[0, j] + G[1, a] * T3[1, j] + G[2, a] * T3[2, j])


class FlexScratch(NamedTuple):
    """Scratch of :func:`flex_block` and :func:`flex_gravity` for bodies of up to ``nf``
    modes (:func:`flex_scratch`), built once per run: the kernels allocate nothing and run
    without reference counting. Small fixed-size blocks are stacked (``m33``: 3 x 3
    matrices, ``v3``: 3-vectors, ``m34``: 3 x 4 matrices); every size-dependent array has
    its own flat buffer, of which a kernel takes the leading ``rows * cols`` entries as a
    contiguous matrix (:func:`_mat`)."""

    m33: np.ndarray  # (10, 3, 3)
    v3: np.ndarray  # (15, 3)
    m34: np.ndarray  # (9, 3, 4)
    Mi: np.ndarray  # (6, 6)
    v6: np.ndarray  # (2, 6)
    TGw: np.ndarray  # (4, 4)
    dC: np.ndarray  # (6, 3)
    Y: np.ndarray
    Z: np.ndarray
    Mwf: np.ndarray
    Mff: np.ndarray
    F: np.ndarray
    Gw: np.ndarray
    KG: np.ndarray
    Mb: np.ndarray
    Fq: np.ndarray
    Fqd: np.ndarray
    Fwd: np.ndarray
    Fg: np.ndarray
    kq: np.ndarray
    G6: np.ndarray
    Hs: np.ndarray
    Bw: np.ndarray
    buf: np.ndarray
    dFe: np.ndarray
    fit: np.ndarray
    T1: np.ndarray


def flex_scratch(nf: int) -> FlexScratch:
    """A :class:`FlexScratch` for flexible bodies of up to ``nf`` modes (``nf >= 0``)."""
    n = max(int(nf), 1)
    N6 = 6 + n
    z = np.zeros
    return FlexScratch(
        z((10, 3, 3)), z((15, 3)), z((9, 3, 4)), z((6, 6)), z((2, 6)), z((4, 4)), z((6, 3)),
        z(9 * n), z(9 * n), z(3 * n), z(n * n), z(N6), z(3 * n), z(n * n), z(N6 * N6),
        z(N6 * n), z(N6 * n), z(N6 * 3), z(N6 * 3), z(6 * n), z(6 * n), z(6 * n), z(3 * n),
        z((7 + n) * max(n, 4)), z(N6 * 4), z(6 * (12 + n)), z(n * n),
    )  # fmt: skip


@njit(cache=True, inline="always", _nrt=False)
def _mat(buf, rows, cols):
    """The leading ``rows * cols`` entries of the flat buffer ``buf`` as a C-contiguous
    (rows, cols) matrix (a view)."""
    return buf[0 : rows * cols].reshape(rows, cols)


@njit(cache=True, _nrt=False)
def flex_block(
    mass,
    cv,
    E0,
    St,
    S,
    P,
    Pt,
    Kff,
    Dff,
    stiff,
    Kw,
    Kal,
    Ka,
    Kitf,
    g,
    e,
    qf,
    ed,
    qfd,
    rdd,
    edd,
    qfdd,
    R,
    M,
    K,
    D,
    derivatives,
    sc,
):
    """Inertia, elastic, damping and geometric-stiffening residual ``R`` (7+n) of a
    flexible body in absolute coordinates ``(r, e, q_f)`` (rows ``[r; e; f]``: world force,
    Euler-parameter moment ``G2^T F_w``, modal forces) and, with ``derivatives``, its
    blocks ``M = dR/dqdd``, ``K = dR/dq``, ``D = dR/dqd`` ((7+n) square; the columns of
    ``r`` in ``K`` and ``D`` are not written: zero them first), exact. The
    body-axes terms are :func:`inertia_forces` / :func:`inertia_derivatives` at
    ``w = 2 G(e) de``, ``al = 2 G(e) dde``, ``a = A(e)^T rdd``; with ``stiff`` the
    stiffening force ``K_G(p) q`` of the mean-axis load parameters ``p`` (angular
    velocity products, angular acceleration, origin acceleration minus gravity ``g``
    (world), interface loads through ``Kitf``) is added to the modal rows with its chain
    rule. Invariants: the layout in the module docstring; ``sc`` a :class:`FlexScratch`
    for at least ``n`` modes (no allocation, no reference counting). Port of
    ``flexmbd.absolute.flexible.FlexibleSet.body_residual``."""
    n = qf.shape[0]
    N6 = 6 + n
    m33 = sc.m33  # A, J, Gm, W, W2, scratch (3), J0
    A, J, Gm, W, W2, J0 = m33[0], m33[1], m33[2], m33[3], m33[4], m33[8]
    v3 = sc.v3
    w, al, a, gb, Sbar, Jw, Stqd = v3[0], v3[1], v3[2], v3[3], v3[4], v3[5], v3[6]
    wp, alp, ap = v3[7], v3[8], v3[9]
    m34 = sc.m34
    G2, Gd, Gdd, dA1, dA2 = m34[0], m34[1], m34[2], m34[3], m34[4]
    Apoly_to(e, A)
    Gmat_to(e, 2.0, G2)
    for i in range(3):
        w[i] = G2[i, 0] * ed[0] + G2[i, 1] * ed[1] + G2[i, 2] * ed[2] + G2[i, 3] * ed[3]
        al[i] = G2[i, 0] * edd[0] + G2[i, 1] * edd[1] + G2[i, 2] * edd[2] + G2[i, 3] * edd[3]
    for i in range(3):
        a[i] = A[0, i] * rdd[0] + A[1, i] * rdd[1] + A[2, i] * rdd[2]
        gb[i] = A[0, i] * g[0] + A[1, i] * g[1] + A[2, i] * g[2]
    Y = sc.Y[0 : 9 * n].reshape(3, 3, n)
    Z = sc.Z[0 : 9 * n].reshape(3, 3, n)
    contract(S, P, qf, qfd, Y, Z)  # (Pt: the engine's transposed copy, not needed)
    Mwf = _mat(sc.Mwf, 3, n)
    trG = body_state(cv, E0, St, S, qf, qfd, w, Y, Sbar, Stqd, J, Mwf, Gm, W, W2, Jw)
    Mff = _mat(sc.Mff, n, n)
    for k in range(n):
        for l in range(n):
            Mff[k, l] = 0.0
    for i in range(3):
        for k in range(n):
            for l in range(n):
                Mff[k, l] += P[i, i, k, l]
    F = sc.F[0:N6]
    inertia_forces(mass, St, Mff, Y, Z, Sbar, Stqd, J, Mwf, Gm, trG, W, W2, Jw, w, al, a, qfdd, F)
    Fw = F[0:3]
    Fv = F[3:6]
    Ff = F[6:]
    # + K q + D qd
    for k in range(n):
        kq = 0.0
        dq = 0.0
        for l in range(n):
            kq += Kff[k, l] * qf[l]
            dq += Dff[k, l] * qfd[l]
        Ff[k] += kq + dq
    Mi = sc.Mi
    Gw = _mat(sc.Gw, 3, n)
    KG = _mat(sc.KG, n, n)
    if stiff:
        # load parameters from mean-axis kinematics (flexmbd.flexible.mean_axis):
        # w_p = w + Gamma_w qd, [al_p; a_p] = M_rr0^-1 ([Fw; Fv] - C(w_p))
        mean_axis_fit(mass, cv, E0, S, St, Mi, Gw, _mat(sc.fit, 6, 12 + n))
        for i in range(3):
            v = w[i]
            for l in range(n):
                v += Gw[i, l] * qfd[l]
            wp[i] = v
        trE0 = E0[0, 0] + E0[1, 1] + E0[2, 2]
        for i in range(3):
            for j in range(3):
                J0[i, j] = -E0[i, j]
            J0[i, i] += trE0
        Cr = sc.v6[0]
        centrifugal(J0, cv, wp, Cr)
        Xr = sc.v6[1]
        for i in range(3):
            Xr[i] = Fw[i] - Cr[i]
            Xr[3 + i] = Fv[i] - Cr[3 + i]
        for i in range(3):
            v1 = 0.0
            v2 = 0.0
            for j in range(6):
                v1 += Mi[i, j] * Xr[j]
                v2 += Mi[3 + i, j] * Xr[j]
            alp[i] = v1
            ap[i] = v2 - gb[i]
        for i in range(n):
            for j in range(n):
                KG[i, j] = Kitf[i, j]
        for i in range(n):
            for j in range(n):
                v = 0.0
                v += wp[0] * wp[0] * Kw[0, i, j]
                v += wp[1] * wp[1] * Kw[1, i, j]
                v += wp[2] * wp[2] * Kw[2, i, j]
                v += wp[0] * wp[1] * Kw[3, i, j]
                v += wp[1] * wp[2] * Kw[4, i, j]
                v += wp[0] * wp[2] * Kw[5, i, j]
                for k in range(3):
                    v += alp[k] * Kal[k, i, j] + ap[k] * Ka[k, i, j]
                KG[i, j] += v
        for i in range(n):
            v = 0.0
            for j in range(n):
                v += KG[i, j] * qf[j]
            Ff[i] += v
    for i in range(3):
        R[i] = A[i, 0] * Fv[0] + A[i, 1] * Fv[1] + A[i, 2] * Fv[2]
    for j in range(4):
        R[3 + j] = G2[0, j] * Fw[0] + G2[1, j] * Fw[1] + G2[2, j] * Fw[2]
    for k in range(n):
        R[7 + k] = Ff[k]
    if not derivatives:
        return
    # -- derivatives (body axes): columns al (0:3), a (3:6), qdd (6:) of the mass matrix
    Mb = _mat(sc.Mb, N6, N6)
    mass_matrix(mass, St, Mff, Sbar, J, Mwf, Mb)
    Fal = Mb[:, 0:3]
    Fa = Mb[:, 3:6]
    Fqdd = Mb[:, 6:]
    Fq = _mat(sc.Fq, N6, n)
    Fqd = _mat(sc.Fqd, N6, n)
    Fwd = _mat(sc.Fwd, N6, 3)
    inertia_derivatives(
        St, P, Y, Z, Sbar, Stqd, J, Gm, trG, W, W2, Jw, w, al, a, qfdd, Fq, Fqd, Fwd, m33[5:8],
        _mat(sc.T1, n, n),
    )  # fmt: skip
    for k in range(n):
        for l in range(n):
            Fq[6 + l, k] += Kff[l, k]
            Fqd[6 + k, l] += Dff[k, l]
    Fg = _mat(sc.Fg, N6, 3)
    for i in range(N6):
        for c in range(3):
            Fg[i, c] = 0.0
    if stiff:
        # f_G = K_G(p) q; chain rule through the inertia resultant (rows :6, which the
        # stiffening does not touch): d f_G = K_G dq + H (dF_r - dC dw_p) + KwQ dw_p,
        # H = [Kal q, Ka q] M_rr0^-1 (n x 6), dw_p = dw + Gamma_w dqd
        kq = _mat(sc.kq, 6, n)
        for k in range(6):
            for i in range(n):
                v = 0.0
                for j in range(n):
                    v += Kw[k, i, j] * qf[j]
                kq[k, i] = v
        G6 = _mat(sc.G6, n, 6)
        for k in range(3):
            for i in range(n):
                gal = 0.0
                ga = 0.0
                for j in range(n):
                    gal += Kal[k, i, j] * qf[j]
                    ga += Ka[k, i, j] * qf[j]
                G6[i, k] = gal
                G6[i, 3 + k] = ga
                Fg[6 + i, k] -= ga
        Hs = _mat(sc.Hs, n, 6)
        for i in range(n):
            for r in range(6):
                v = 0.0
                for j in range(6):
                    v += G6[i, j] * Mi[j, r]
                Hs[i, r] = v
        dC = sc.dC
        centrifugal_dw(J0, cv, wp, dC)
        Bw = _mat(sc.Bw, n, 3)
        for i in range(n):
            Bw[i, 0] = kq[0, i] * (2 * wp[0]) + kq[3, i] * wp[1] + kq[5, i] * wp[2]
            Bw[i, 1] = kq[1, i] * (2 * wp[1]) + kq[3, i] * wp[0] + kq[4, i] * wp[2]
            Bw[i, 2] = kq[2, i] * (2 * wp[2]) + kq[4, i] * wp[1] + kq[5, i] * wp[0]
            for c in range(3):
                v = 0.0
                for r in range(6):
                    v -= Hs[i, r] * dC[r, c]
                Bw[i, c] += v
        for i in range(n):
            for j in range(n):
                v = KG[i, j]
                vd = 0.0
                vdd = 0.0
                for r in range(6):
                    h = Hs[i, r]
                    v += h * Fq[r, j]
                    vd += h * Fqd[r, j]
                    vdd += h * Fqdd[r, j]
                for c in range(3):
                    vd += Bw[i, c] * Gw[c, j]
                Fq[6 + i, j] += v
                Fqd[6 + i, j] += vd
                Fqdd[6 + i, j] += vdd
            for c in range(3):
                v1 = Bw[i, c]
                v2 = 0.0
                v3 = 0.0
                for r in range(6):
                    h = Hs[i, r]
                    v1 += h * Fwd[r, c]
                    v2 += h * Fal[r, c]
                    v3 += h * Fa[r, c]
                Fwd[6 + i, c] += v1
                Fal[6 + i, c] += v2
                Fa[6 + i, c] += v3
    buf = _mat(sc.buf, 7 + n, max(n, 4))
    none = m33[0, 0:0, 0:0]
    _out_into(A, G2, Fa, A.T, M, 0, buf)
    _out_into(A, G2, Fal, G2, M, 3, buf)
    _out_into(A, G2, Fqdd, none, M, 7, buf)
    _out_into(A, G2, Fwd, G2, D, 3, buf)
    _out_into(A, G2, Fqd, none, D, 7, buf)
    # dF/de = Fw' (-2 G(ed)) + Fal (-2 G(edd)) + Fa dA^T rdd/de (+ Fg dA^T g/de)
    Gmat_to(ed, -2.0, Gd)
    Gmat_to(edd, -2.0, Gdd)
    dAtr_to(e, rdd, dA1)
    if stiff:
        dAtr_to(e, g, dA2)
    dFe = _mat(sc.dFe, N6, 4)
    for i in range(N6):
        for j in range(4):
            x1 = Fwd[i, 0] * Gd[0, j] + Fwd[i, 1] * Gd[1, j] + Fwd[i, 2] * Gd[2, j]
            x2 = Fal[i, 0] * Gdd[0, j] + Fal[i, 1] * Gdd[1, j] + Fal[i, 2] * Gdd[2, j]
            x3 = Fa[i, 0] * dA1[0, j] + Fa[i, 1] * dA1[1, j] + Fa[i, 2] * dA1[2, j]
            v = (x1 + x2) + x3
            if stiff:
                v += Fg[i, 0] * dA2[0, j] + Fg[i, 1] * dA2[1, j] + Fg[i, 2] * dA2[2, j]
            dFe[i, j] = v
    _out_into(A, G2, dFe, none, K, 3, buf)
    dAs_to(e, Fv, 1.0, dA1)
    for i in range(3):
        for j in range(4):
            K[i, 3 + j] += dA1[i, j]
    TG_add(Fw, 2.0, K, 3, 3)
    _out_into(A, G2, Fq, none, K, 7, buf)


@njit(cache=True, _nrt=False, any_layout=True)
def _out_into(A, G2, X, Bm, Out, c0, buf):
    """Out[:, c0:c0+m] = [A X_v; G2^T X_w; X_f] @ Bm (Bm empty: identity), through buf."""
    N = X.shape[0] + 1
    c = X.shape[1]
    for l in range(c):
        for i in range(3):
            buf[i, l] = A[i, 0] * X[3, l] + A[i, 1] * X[4, l] + A[i, 2] * X[5, l]
        for i in range(4):
            buf[3 + i, l] = G2[0, i] * X[0, l] + G2[1, i] * X[1, l] + G2[2, i] * X[2, l]
        for i in range(7, N):
            buf[i, l] = X[i - 1, l]
    if Bm.shape[0] == 0:
        for i in range(N):
            for l in range(c):
                Out[i, c0 + l] = buf[i, l]
        return
    m = Bm.shape[1]
    for i in range(N):
        for j in range(m):
            v = 0.0
            for l in range(c):
                v += buf[i, l] * Bm[l, j]
            Out[i, c0 + j] = v


@njit(cache=True, _nrt=False)
def flex_gravity(mass, cv, St, g, e, qf, Q, Kq, jac, sc):
    """Distributed gravity (port of FlexibleSet.gravity): adds Q (7+n) and, with ``jac``,
    dQ/dq (7+n, 7+n); ``sc`` a :class:`FlexScratch` (no allocation)."""
    n = qf.shape[0]
    A = sc.m33[9]
    m34 = sc.m34
    G, dAtr, T, dS = m34[5], m34[6], m34[7], m34[8]
    TGw = sc.TGw
    v3 = sc.v3
    gb, Sbar, Qw, Qv, c = v3[10], v3[11], v3[12], v3[13], v3[14]
    Apoly_to(e, A)
    Gmat_to(e, 1.0, G)
    for i in range(3):
        gb[i] = A[0, i] * g[0] + A[1, i] * g[1] + A[2, i] * g[2]
    for i in range(3):
        v = 0.0
        for l in range(n):
            v += St[i, l] * qf[l]
        Sbar[i] = cv[i] + v
    for i in range(3):
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        Qw[i] = Sbar[i1] * gb[i2] - Sbar[i2] * gb[i1]
        Qv[i] = mass * gb[i]
    for i in range(3):
        Q[i] += A[i, 0] * Qv[0] + A[i, 1] * Qv[1] + A[i, 2] * Qv[2]
    for j in range(4):
        Q[3 + j] += 2.0 * (G[0, j] * Qw[0] + G[1, j] * Qw[1] + G[2, j] * Qw[2])
    for k in range(n):
        Q[7 + k] += St[0, k] * gb[0] + St[1, k] * gb[1] + St[2, k] * gb[2]
    if not jac:
        return
    # dQg/dg (body axes) = [Sbar~; m I; St^T], through d(A^T g)/de; rows [r; e; f]
    dAtr_to(e, g, dAtr)
    for j in range(4):
        T[0, j] = -Sbar[2] * dAtr[1, j] + Sbar[1] * dAtr[2, j]
        T[1, j] = Sbar[2] * dAtr[0, j] - Sbar[0] * dAtr[2, j]
        T[2, j] = -Sbar[1] * dAtr[0, j] + Sbar[0] * dAtr[1, j]
    dAs_to(e, Qv, 1.0, dS)
    TG_to(Qw, 2.0, TGw)
    for i in range(3):
        for j in range(4):
            v = 0.0
            for l in range(3):
                if A[i, l] != 0.0:
                    v += A[i, l] * (mass * dAtr[l, j])
            Kq[i, 3 + j] += v + dS[i, j]
    for a in range(4):
        for j in range(4):
            v = 0.0
            for l in range(3):
                if G[l, a] != 0.0:
                    v += G[l, a] * T[l, j]
            Kq[3 + a, 3 + j] += 2.0 * v + TGw[a, j]
    for k in range(n):
        for j in range(4):
            v = 0.0
            for l in range(3):
                if St[l, k] != 0.0:
                    v += St[l, k] * dAtr[l, j]
            Kq[7 + k, 3 + j] += v
    # dQg/dq_f: [St_k x gb; 0; 0]
    for k in range(n):
        for i in range(3):
            i1 = (i + 1) % 3
            i2 = (i + 2) % 3
            c[i] = St[i1, k] * gb[i2] - St[i2, k] * gb[i1]
        for j in range(4):
            Kq[3 + j, 7 + k] += 2.0 * (G[0, j] * c[0] + G[1, j] * c[1] + G[2, j] * c[2])


@njit(cache=True, _nrt=False)
def rigid_gravity(m, c, g, e, Q, Kq, ws, jac):
    """Gravity on a rigid body (port of forces.GravityBatch with the map of
    forces.map_blocks): mass ``m`` (kg), first moment per mass ``c`` (m, body axes),
    gravity ``g`` (m/s^2, world); adds the generalized force to ``Q`` (7) and, with
    ``jac``, its derivative by the coordinates to ``Kq`` (7, 7). ``ws`` (3, 4) scratch;
    no allocation (it runs once per rigid body per Newton iteration)."""
    n2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]
    A = ws[0:3, 0:3]
    Apoly_to(e, A)
    Rc0 = (A[0, 0] * c[0] + A[0, 1] * c[1] + A[0, 2] * c[2]) / n2
    Rc1 = (A[1, 0] * c[0] + A[1, 1] * c[1] + A[1, 2] * c[2]) / n2
    Rc2 = (A[2, 0] * c[0] + A[2, 1] * c[1] + A[2, 2] * c[2]) / n2
    f0, f1, f2 = m * g[0], m * g[1], m * g[2]
    nv0 = Rc1 * f2 - Rc2 * f1
    nv1 = Rc2 * f0 - Rc0 * f2
    nv2 = Rc0 * f1 - Rc1 * f0
    E = ws  # Emat(e)
    e0, e1, e2, e3 = e[0], e[1], e[2], e[3]
    E[0, 0], E[0, 1], E[0, 2], E[0, 3] = -e1, e0, -e3, e2
    E[1, 0], E[1, 1], E[1, 2], E[1, 3] = -e2, e3, e0, -e1
    E[2, 0], E[2, 1], E[2, 2], E[2, 3] = -e3, -e2, e1, e0
    Q[0] += f0
    Q[1] += f1
    Q[2] += f2
    for j in range(4):
        Q[3 + j] += 2.0 * (E[0, j] * nv0 + E[1, j] * nv1 + E[2, j] * nv2)
    if not jac:
        return
    # 4 E^T (f~ Rc~) E + 2 TE(nv), f~ Rc~ = Rc f^T - (f . Rc) I
    fR = f0 * Rc0 + f1 * Rc1 + f2 * Rc2
    for a in range(4):
        ua = E[0, a] * Rc0 + E[1, a] * Rc1 + E[2, a] * Rc2
        for b in range(4):
            vb = f0 * E[0, b] + f1 * E[1, b] + f2 * E[2, b]
            ee = E[0, a] * E[0, b] + E[1, a] * E[1, b] + E[2, a] * E[2, b]
            Kq[3 + a, 3 + b] += 4.0 * (ua * vb - fR * ee)
    # TE(nv)
    Kq[3, 4] -= 2.0 * nv0
    Kq[3, 5] -= 2.0 * nv1
    Kq[3, 6] -= 2.0 * nv2
    Kq[4, 3] += 2.0 * nv0
    Kq[4, 5] -= 2.0 * nv2
    Kq[4, 6] += 2.0 * nv1
    Kq[5, 3] += 2.0 * nv1
    Kq[5, 4] += 2.0 * nv2
    Kq[5, 6] -= 2.0 * nv0
    Kq[6, 3] += 2.0 * nv2
    Kq[6, 4] -= 2.0 * nv1
    Kq[6, 5] += 2.0 * nv0


@njit(cache=True)
def flex_mass(mass, cv, E0, St, S, P, qf):
    """Mass matrix (6+n) for body-frame speeds ``(w, v, qd)`` (allocating; energies)."""
    n = qf.shape[0]
    Y = np.empty((3, 3, n))
    Z = np.empty((3, 3, n))
    contract(S, P, qf, qf, Y, Z)  # (Z and the rate terms are not used)
    m33 = np.empty((4, 3, 3))
    v3 = np.zeros((4, 3))
    Mwf = np.empty((3, n))
    J = m33[0]
    Sbar = v3[1]
    body_state(cv, E0, St, S, qf, qf, v3[0], Y, Sbar, v3[2], J, Mwf, m33[1], m33[2], m33[3], v3[3])
    Mff = np.zeros((n, n))
    for i in range(3):
        for k in range(n):
            for l in range(n):
                Mff[k, l] += P[i, i, k, l]
    M = np.empty((6 + n, 6 + n))
    mass_matrix(mass, St, Mff, Sbar, J, Mwf, M)
    return M
