"""Allocation-free numba kernels of the serialized CFA for trees with flexible bodies.

The derivation is in :mod:`flexmbd.recursive.flexible`; this module follows its
notation. Bodies are indexed by their regular label ``k`` as in
:mod:`._kernels` (whose small helpers, packed arrays and odd-even reduction
layout it reuses); a rigid body is the special case without modes.

Per label ``k`` (body ``k`` and its tree joint ``k``):

* the *out frame* ``C_k`` = the tree-joint frame on body ``k`` (aligned), which
  deforms with body ``k``'s modes when ``k`` is flexible: its pose in the body
  frame ``(R_C, p_C)``, its modal twist matrix ``S_C`` (6 x n_k, C axes) and the
  convective term ``sigma_C = dS_C/dt qd`` (:func:`frame_state`);
* the *in frame* ``P_k`` = the joint frame on the parent ``p``, deforming with
  ``p``'s modes (same quantities with ``p``'s modal coordinates);
* ``e_k = C_k``: twists ``V_k``, linear accelerations ``af`` and bias
  accelerations ``ab`` are those of ``C_k`` (C axes), as for rigid bodies;
* ``PsiT[k]`` (6 x n_p): ``Psi_k^T``, the twist of ``e_k`` per unit modal rate of
  the parent relative to ``e_p``; the extended shift is ``[Phi_k; Psi_k]``;
* ``Gp[k]`` ((6+n_k)^2): inverse generalized inertia of flexible body ``k`` in
  the speeds ``(V_k, qd_k)``; ``Zc[k] = Gp[p] [Phi_k; Psi_k]`` ((6+n_p) x 6).

Float workspace ``Fw`` (rows per label, see the ``W_*`` indices), modal vectors
``Fm`` (``FM_*`` rows), flexible-body constants ``Fc`` and per-body inertia
invariants (``Im`` scalars, ``St``, ``Si``, ``Pi``, ``KD``, ``KG``).

The hot kernels are compiled without numba's reference counting (``_nrt=False``, as
the rigid kernels): with it, every array view and every array argument of an inlined
recursion step costs an atomic increment and decrement (the flexible kinematics of a
20-body chain 14.4 us with, 8.0 us without). Kernels that allocate
(:func:`solve_columns`) keep it.
"""

from typing import NamedTuple

import numpy as np

from .._jit import njit
from ..flexible._nbbody import bias_forces as body_bias_forces
from ..flexible._nbbody import centrifugal
from ._kernels import (
    I_NV,
    I_ONE,
    I_PARENT,
    I_PERM,
    I_VO,
    J_B,
    J_FT,
    J_QDD,
    J_TAU,
    M_A,
    M_CR,
    M_G,
    M_I,
    M_X,
    M_Y,
    P_0,
    P_REL,
    R_0,
    R_REL,
    R_W,
    T_1,
    T_3,
    T_Q,
    T_R,
    V_AB,
    V_AF,
    V_BX,
    V_CJ,
    V_FB,
    V_FE,
    V_FEXT,
    V_G,
    V_MC,
    V_SV,
    V_T6,
    V_VEL,
    V_VJ,
    _add_gyro,
    _body_acceleration,
    _build_phi,
    _chol,
    _f2p,
    _f2p_add,
    _gravity_in_body,
    _m2c,
    _matTmul6,
    _matvec6,
    _mirror6,
    _proj_vec,
    _sub_gravity,
    coupling_block,
    eliminate_chains,
    factor_nodes,
    joint_bias,
    joint_force,
    joint_frame,
    joint_qdd,
    joint_twist,
    kinematic_acc,
    natural_order,
    node_system,
    project_inertia,
    reactions_into,
    reversed_frames,
    shift_inertia,
    sibling_block,
    solve_schedule,
    world_pose,
)

# ---- int rows of Fi (NFI, N+1)
(F_NF, F_MQ, F_MV, F_FX, F_ODEF, F_IDEF, F_STIFF, F_IOUT, F_IIN) = range(9)
NFI = 9
# ---- float workspace rows of Fw (N+1, NW, 6)
(W_VB, W_ABB, W_VP, W_FEB, W_VBD) = range(5)
# stiffened bodies (mean-axis load parameters, flexmbd.flexible.mean_axis): W_WP mean angular
# velocity w_p (first 3), W_HR inertia-resultant velocity terms h_r - C(w_p), W_MR.. the six
# rows of M_rr(q), W_MI.. the six rows of M_rr0^-1 (constant, set by FlexTree.refresh)
W_WP, W_HR, W_MR, W_MI = 5, 6, 7, 13
NW = 19
# ---- modal vectors Fm (N+1, NFM, nmax)
(FM_UDF, FM_RHO, FM_TF, FM_ZF, FM_KGQ, FM_TF0, FM_QAPP, FM_KW, FM_T1) = range(9)
# stiffened bodies: FM_MF.. the six rows of M_rf(q), FM_GW.. the rotation rows of the rigid
# fit Gamma = M_rr0^-1 M_rf0 (constant, set by FlexTree.refresh)
FM_MF, FM_GW = 9, 15
NFM = 18
# ---- frame constants Fc (N+1, 2, 3, 4 + 2 nmax): [R0 | p0 | Theta | U] for the out (0) and
# in (1) frame of label k; frame states Ft (N+1, 2, 3, 4) [R | p] and Fs (N+1, 2, 6, nmax + 1)
# [S | sigma]
FR_OUT, FR_IN = 0, 1
# ---- inertia scalars Im (nfx, 13): mass, c (3), E0 (9)
# ---- stiffening unit matrices KG (nfx, 12 + 6 n_itf, nmax, nmax): w-products (6), alpha (3),
# a (3), then six per stiffened interface


# ---------------------------------------------------------------- workspace tuple


class FlexWork(NamedTuple):
    """Every array of a tree with flexible bodies, in the order the drivers take them:
    the system's tree model and workspace (``Ia`` ... ``Jv``, :class:`~.system.TreeArrays`)
    then :class:`~.flexible.FlexTree`'s (``Fi``: int table, ``F_*`` rows; ``Fc``, ``Ft``,
    ``Fs``: frame constants and states; ``Fw``, ``Fm``: float and modal workspace;
    ``PsiT``, ``Gp``, ``Zc``: modal shifts, inverse generalized inertias, their products;
    ``Im``, ``St``, ``Si``, ``Pi``, ``KD``, ``KG``: inertia invariants, stiffness and damping,
    stiffening unit matrices (SI units, body axes); ``KQ``, ``Mb``, ``Bm``, ``A3``: scratch).

    The drivers (:func:`kinematics`, :func:`bias_forces`, :func:`forward_dynamics`,
    :func:`solve_columns`) take it as a plain ``tuple`` (numba's dispatcher types a plain
    tuple of arrays on its fast path; a NamedTuple argument costs about 6 us more a call)
    and read it through this class inside the kernel (``W = FlexWork(*T)``).
    """

    Ia: np.ndarray
    Sa: np.ndarray
    Fi: np.ndarray
    Mm: np.ndarray
    Vv: np.ndarray
    R3: np.ndarray
    P3: np.ndarray
    Tt: np.ndarray
    Dn: np.ndarray
    Jv: np.ndarray
    Fc: np.ndarray
    Ft: np.ndarray
    Fs: np.ndarray
    Fw: np.ndarray
    Fm: np.ndarray
    PsiT: np.ndarray
    Gp: np.ndarray
    Zc: np.ndarray
    Im: np.ndarray
    St: np.ndarray
    Si: np.ndarray
    Pi: np.ndarray
    KD: np.ndarray
    KG: np.ndarray
    KQ: np.ndarray
    Mb: np.ndarray
    Bm: np.ndarray
    A3: np.ndarray


# ---------------------------------------------------------------- small helpers


@njit(cache=True, inline="always")
def _abc(tau):
    """``b = (1-cos t)/t^2``, ``c = (t - sin t)/t^3`` (t^2 = tau) and their tau-derivatives,
    plus ``a = sin t / t``: series below tau = 1, closed forms above."""
    if tau < 1.0:
        a = 0.0
        b = 0.0
        c = 0.0
        db = 0.0
        dc = 0.0
        fa = 1.0
        fb = 0.5
        fc = 1.0 / 6.0
        pk = 1.0
        pk1 = 0.0
        sg = 1.0
        for k in range(14):
            a += sg * fa * pk
            b += sg * fb * pk
            c += sg * fc * pk
            if k >= 1:
                db += sg * fb * k * pk1
                dc += sg * fc * k * pk1
            pk1 = pk
            pk *= tau
            sg = -sg
            fa /= (2 * k + 2) * (2 * k + 3)
            fb /= (2 * k + 3) * (2 * k + 4)
            fc /= (2 * k + 4) * (2 * k + 5)
        return a, b, c, db, dc
    t = np.sqrt(tau)
    s = np.sin(t)
    co = np.cos(t)
    a = s / t
    b = (1.0 - co) / tau
    c = (t - s) / (tau * t)
    dbt = (t * s - 2.0 * (1.0 - co)) / (tau * t)
    dct = ((1.0 - co) * t - 3.0 * (t - s)) / (tau * tau)
    return a, b, c, dbt / (2.0 * t), dct / (2.0 * t)


# unrolled: J_l = I + b theta~ + c theta~^2 applied in locals to thetad (its cross
# products are reused in sigma) and to every column of Theta
@njit(cache=True, _nrt=False)
def frame_state(Fc, k, side, n, q, qd, Ft, Fs):
    """Pose ``(R, p)`` in body axes of a deforming frame, its modal twist matrix ``S``
    (6 x n, frame axes) and convective term ``sigma = (dS/dt) qd``.

    ``R = exp(theta~) R0``, ``theta = Theta q``, ``p = p0 + U q``; the relative angular
    velocity (body axes) is ``J_l(theta) Theta qd`` with the left Jacobian
    ``J_l = I + b theta~ + c theta~^2``; ``S = [R^T J_l Theta; R^T U]`` and
    ``sigma = [R^T dJ_l/dt thetad; -R^T (w_r x U qd)]`` with
    ``dJ_l/dt thetad = b' 2(theta.thetad) theta x thetad + c' 2(theta.thetad) theta x (theta x
    thetad) + c thetad x (theta x thetad)``.
    """
    C = Fc[k, side]
    R = Ft[k, side, :, 0:3]
    p = Ft[k, side, :, 3]
    S = Fs[k, side]
    th0 = 0.0
    th1 = 0.0
    th2 = 0.0
    d0 = 0.0
    d1 = 0.0
    d2 = 0.0
    u0 = 0.0
    u1 = 0.0
    u2 = 0.0
    for i in range(3):
        p[i] = C[i, 3]
    for j in range(n):
        qj = q[j]
        vj = qd[j]
        th0 += C[0, 4 + j] * qj
        th1 += C[1, 4 + j] * qj
        th2 += C[2, 4 + j] * qj
        d0 += C[0, 4 + j] * vj
        d1 += C[1, 4 + j] * vj
        d2 += C[2, 4 + j] * vj
        for i in range(3):
            p[i] += C[i, 4 + n + j] * qj
        u0 += C[0, 4 + n + j] * vj
        u1 += C[1, 4 + n + j] * vj
        u2 += C[2, 4 + n + j] * vj
    tau = th0 * th0 + th1 * th1 + th2 * th2
    a, b, c, db, dc = _abc(tau)
    # exp(theta~) = I + a theta~ + b theta~^2 ; R = exp R0
    E00 = 1.0 - b * (th1 * th1 + th2 * th2)
    E11 = 1.0 - b * (th0 * th0 + th2 * th2)
    E22 = 1.0 - b * (th0 * th0 + th1 * th1)
    E01 = -a * th2 + b * th0 * th1
    E10 = a * th2 + b * th0 * th1
    E02 = a * th1 + b * th0 * th2
    E20 = -a * th1 + b * th0 * th2
    E12 = -a * th0 + b * th1 * th2
    E21 = a * th0 + b * th1 * th2
    for j in range(3):
        r0 = C[0, j]
        r1 = C[1, j]
        r2 = C[2, j]
        R[0, j] = E00 * r0 + E01 * r1 + E02 * r2
        R[1, j] = E10 * r0 + E11 * r1 + E12 * r2
        R[2, j] = E20 * r0 + E21 * r1 + E22 * r2
    # relative angular velocity w_r = thd + b theta x thd + c theta x (theta x thd)
    x0 = th1 * d2 - th2 * d1
    x1 = th2 * d0 - th0 * d2
    x2 = th0 * d1 - th1 * d0
    y0 = th1 * x2 - th2 * x1
    y1 = th2 * x0 - th0 * x2
    y2 = th0 * x1 - th1 * x0
    w0 = d0 + b * x0 + c * y0
    w1 = d1 + b * x1 + c * y1
    w2 = d2 + b * x2 + c * y2
    # S columns
    for j in range(n):
        t0 = C[0, 4 + j]
        t1 = C[1, 4 + j]
        t2 = C[2, 4 + j]
        a0 = th1 * t2 - th2 * t1
        a1 = th2 * t0 - th0 * t2
        a2 = th0 * t1 - th1 * t0
        b0 = th1 * a2 - th2 * a1
        b1 = th2 * a0 - th0 * a2
        b2 = th0 * a1 - th1 * a0
        j0 = t0 + b * a0 + c * b0
        j1 = t1 + b * a1 + c * b1
        j2 = t2 + b * a2 + c * b2
        v0 = C[0, 4 + n + j]
        v1 = C[1, 4 + n + j]
        v2 = C[2, 4 + n + j]
        for i in range(3):
            S[i, j] = R[0, i] * j0 + R[1, i] * j1 + R[2, i] * j2
            S[3 + i, j] = R[0, i] * v0 + R[1, i] * v1 + R[2, i] * v2
    # sigma
    tt = 2.0 * (th0 * d0 + th1 * d1 + th2 * d2)
    z0 = d1 * x2 - d2 * x1
    z1 = d2 * x0 - d0 * x2
    z2 = d0 * x1 - d1 * x0
    g0 = db * tt * x0 + dc * tt * y0 + c * z0
    g1 = db * tt * x1 + dc * tt * y1 + c * z1
    g2 = db * tt * x2 + dc * tt * y2 + c * z2
    h0 = -(w1 * u2 - w2 * u1)
    h1 = -(w2 * u0 - w0 * u2)
    h2 = -(w0 * u1 - w1 * u0)
    for i in range(3):
        S[i, n] = R[0, i] * g0 + R[1, i] * g1 + R[2, i] * g2
        S[3 + i, n] = R[0, i] * h0 + R[1, i] * h1 + R[2, i] * h2


# unrolled: the inverse of _kernels._m2c / _f2p on six values in locals
@njit(cache=True, inline="always")
def _m2c_inv(R, p, y, out):
    """Inverse of :func:`_m2c`: the twist x (parent axes, at the parent origin) whose
    transform to the frame (R, p) is y: ``x_w = R y_w``, ``x_v = R y_v + p x x_w``."""
    xw0 = R[0, 0] * y[0] + R[0, 1] * y[1] + R[0, 2] * y[2]
    xw1 = R[1, 0] * y[0] + R[1, 1] * y[1] + R[1, 2] * y[2]
    xw2 = R[2, 0] * y[0] + R[2, 1] * y[1] + R[2, 2] * y[2]
    xv0 = R[0, 0] * y[3] + R[0, 1] * y[4] + R[0, 2] * y[5]
    xv1 = R[1, 0] * y[3] + R[1, 1] * y[4] + R[1, 2] * y[5]
    xv2 = R[2, 0] * y[3] + R[2, 1] * y[4] + R[2, 2] * y[5]
    out[0] = xw0
    out[1] = xw1
    out[2] = xw2
    out[3] = xv0 + p[1] * xw2 - p[2] * xw1
    out[4] = xv1 + p[2] * xw0 - p[0] * xw2
    out[5] = xv2 + p[0] * xw1 - p[1] * xw0


@njit(cache=True, inline="always")
def _f2p_inv(R, p, w, out):
    """Inverse of :func:`_f2p`: the wrench at the frame (R, p) (frame axes) equivalent to the
    wrench ``w`` at the parent origin (parent axes):
    ``f = R^T w_f``, ``n = R^T (w_n - p x w_f)``."""
    m0 = w[0] - (p[1] * w[5] - p[2] * w[4])
    m1 = w[1] - (p[2] * w[3] - p[0] * w[5])
    m2 = w[2] - (p[0] * w[4] - p[1] * w[3])
    f0 = w[3]
    f1 = w[4]
    f2 = w[5]
    for i in range(3):
        out[i] = R[0, i] * m0 + R[1, i] * m1 + R[2, i] * m2
        out[3 + i] = R[0, i] * f0 + R[1, i] * f1 + R[2, i] * f2


@njit(cache=True, inline="always")
def _crm_add(V, x, out, s):
    """out += s * (V x^ x) (spatial motion cross product)."""
    out[0] += s * (V[1] * x[2] - V[2] * x[1])
    out[1] += s * (V[2] * x[0] - V[0] * x[2])
    out[2] += s * (V[0] * x[1] - V[1] * x[0])
    out[3] += s * (V[1] * x[5] - V[2] * x[4] + V[4] * x[2] - V[5] * x[1])
    out[4] += s * (V[2] * x[3] - V[0] * x[5] + V[5] * x[0] - V[3] * x[2])
    out[5] += s * (V[0] * x[4] - V[1] * x[3] + V[3] * x[1] - V[4] * x[0])


@njit(cache=True, inline="always")
def _smul(S, n, x, out):
    """out = S[:, :n] x (6-vector)."""
    for i in range(6):
        s = 0.0
        for j in range(n):
            s += S[i, j] * x[j]
        out[i] = s


# ---------------------------------------------------------------- FFR body terms


@njit(cache=True, _nrt=False)
def ffr_terms(Im, St, Si, Pi, KD, fx, n, q, qd, w, v, gb, M, h, A3):
    """Body mass matrix ``M`` ((6+n) square) and ``h - Q_gravity`` ((6+n),) of flexible body
    ``fx`` for body-frame speeds ``(w, v, qd)`` (body axes) and gravity ``gb`` (body axes):
    :func:`flexmbd.flexible._nbbody.bias_forces` on the padded invariant arrays (``Im``
    row: mass, c, E0). ``A3`` (4, 3, 3, nmax + 6) scratch."""
    E0 = A3[3, 0, :, 3:6]  # (slots bias_forces leaves free)
    for a in range(3):
        for b in range(3):
            E0[a, b] = Im[fx, 4 + 3 * a + b]
    body_bias_forces(
        Im[fx, 0], Im[fx, 1:4], E0, St[fx], Si[fx], Pi[fx], KD[fx, 2], q, qd, w, v, gb, M, h, A3
    )


# ---------------------------------------------------------------- kinematics


# unrolled: the flexible twin of _kernels.kinematics (deforming frames, modal shifts
# Psi_k^T); both share the joint helpers (joint_frame, joint_twist, world_pose) and
# the rigid kernel keeps its revolute fast path
@njit(cache=True, _nrt=False)
def _kinematics(Ia, Fi, Mm, Vv, R3, P3, Tt, Fc, Ft, Fs, Fw, PsiT, q, v, world):
    """Frame states, joint kinematics, relative poses (deforming in frames), twists and
    bias accelerations of every ``e_k`` and body frame, ``Psi_k^T``."""
    N = Ia.shape[1] - 1
    tR = Tt[T_R]
    t3 = Tt[T_3]
    Qm = Tt[T_Q]
    tp = Vv[V_T6, 0]
    t6 = Vv[V_VJ, 0]
    vp = Fw[0, W_VP]
    ap = Fw[0, W_FEB]
    # frame states (depend on modal coordinates only)
    for k in range(1, N + 1):
        pk = Ia[I_PARENT, k]
        if Fi[F_ODEF, k]:
            nk = Fi[F_NF, k]
            o = Fi[F_MQ, k]
            ov = Fi[F_MV, k]
            frame_state(Fc, k, FR_OUT, nk, q[o : o + nk], v[ov : ov + nk], Ft, Fs)
        if Fi[F_IDEF, k]:
            npk = Fi[F_NF, pk]
            o = Fi[F_MQ, pk]
            ov = Fi[F_MV, pk]
            frame_state(Fc, k, FR_IN, npk, q[o : o + npk], v[ov : ov + npk], Ft, Fs)
    for k in range(1, N + 1):
        n_v = Ia[I_NV, k]
        vo = Ia[I_VO, k]
        vk = v[vo : vo + n_v]
        pk = Ia[I_PARENT, k]
        Rk = R3[R_REL, k]
        prel = P3[P_REL, k]
        A0 = R3[R_0, k]
        p0 = P3[P_0, k]
        fp = Fi[F_NF, pk] > 0
        if fp:
            # relative pose of the in frame P_k in e_p = C_p (both deformed, body axes of p)
            RC = Ft[pk, FR_OUT, :, 0:3]
            pC = Ft[pk, FR_OUT, :, 3]
            RP = Ft[k, FR_IN, :, 0:3]
            pP = Ft[k, FR_IN, :, 3]
            for i in range(3):
                for j in range(3):
                    A0[i, j] = RC[0, i] * RP[0, j] + RC[1, i] * RP[1, j] + RC[2, i] * RP[2, j]
                p0[i] = (
                    RC[0, i] * (pP[0] - pC[0])
                    + RC[1, i] * (pP[1] - pC[1])
                    + RC[2, i] * (pP[2] - pC[2])
                )
        joint_frame(Ia, Mm, Vv, k, q, vk, tR, tp, t3, Qm, t6)
        for i in range(3):
            for j in range(3):
                Rk[i, j] = A0[i, 0] * tR[0, j] + A0[i, 1] * tR[1, j] + A0[i, 2] * tR[2, j]
            prel[i] = p0[i] + A0[i, 0] * tp[0] + A0[i, 1] * tp[1] + A0[i, 2] * tp[2]
        if world:
            world_pose(R3, P3, k, pk)
        # joint relative twist S v (S = H L for reversed joints)
        sv = Vv[V_SV, k]
        joint_twist(Ia, Mm, k, vk, t6, sv)
        vel = Vv[V_VEL, k]
        ab = Vv[V_AB, k]
        if fp:
            # through the parent's body frame and the deforming in frame
            npk = Fi[F_NF, pk]
            mvp = Fi[F_MV, pk]
            qdp = v[mvp : mvp + npk]
            RP = Ft[k, FR_IN, :, 0:3]
            pP = Ft[k, FR_IN, :, 3]
            SP = Fs[k, FR_IN]
            _m2c(RP, pP, Fw[pk, W_VB], vp)
            _smul(SP, npk, qdp, t6)
            for i in range(6):
                vp[i] += t6[i]
            _m2c(RP, pP, Fw[pk, W_ABB], ap)
            _crm_add(vp, t6, ap, 1.0)
            for i in range(6):
                ap[i] += SP[i, npk]
            # joint: e_k from P (pose tR, tp of e_k in the aligned in frame)
            _m2c(tR, tp, vp, vel)
            _m2c(tR, tp, ap, ab)
            # Psi^T = X_J^T S_P - Phi_k^T S_Cp
            PT = PsiT[k]
            SC = Fs[pk, FR_OUT]
            for j in range(npk):
                for i in range(6):
                    t6[i] = SP[i, j]
                _m2c(tR, tp, t6, vp)
                for i in range(6):
                    t6[i] = SC[i, j]
                _m2c(Rk, prel, t6, ap)
                for i in range(6):
                    PT[i, j] = vp[i] - ap[i]
        else:
            _m2c(Rk, prel, Vv[V_VEL, pk], vel)
            _m2c(Rk, prel, Vv[V_AB, pk], ab)
        for i in range(6):
            vel[i] += sv[i]
        c = Vv[V_CJ, k]
        for i in range(6):
            ab[i] += c[i]
        _crm_add(vel, sv, ab, 1.0)
        if Fi[F_NF, k] > 0:
            # body-frame twist and bias acceleration: V_b = Phi_C^-T (V - S_C qd),
            # a_b = Phi_C^-T (a - V x^ S_C qd - sigma_C)
            nk = Fi[F_NF, k]
            mv = Fi[F_MV, k]
            qdk = v[mv : mv + nk]
            RC = Ft[k, FR_OUT, :, 0:3]
            pC = Ft[k, FR_OUT, :, 3]
            SC = Fs[k, FR_OUT]
            _smul(SC, nk, qdk, t6)
            for i in range(6):
                vp[i] = vel[i] - t6[i]
                ap[i] = ab[i] - SC[i, nk]
            _crm_add(vel, t6, ap, -1.0)
            _m2c_inv(RC, pC, vp, Fw[k, W_VB])
            _m2c_inv(RC, pC, ap, Fw[k, W_ABB])


# ---------------------------------------------------------------- bias forces


@njit(cache=True, _nrt=False)
def _bias_forces(
    Ia,
    Fi,
    Mm,
    Vv,
    R3,
    P3,
    Ft,
    Fs,
    Fw,
    Fm,
    PsiT,
    Gp,
    Im,
    St,
    Si,
    Pi,
    KD,
    Mb,
    Bm,
    A3,
    q,
    v,
    grav,
    use_grav,
    Jv,
):
    """Generalized bias forces (velocity products, gravity, elastic and damping forces,
    external loads) at zero joint and modal accelerations; the inverse generalized
    inertia ``Gp`` of every flexible body; ``F_T`` of the joints and the modal
    equivalent forces ``FM_TF0 = Q_applied - rho`` (stiffening force not included)."""
    N = Ia.shape[1] - 1
    t6 = Vv[V_T6, 0]
    fb = Vv[V_FB]
    fext = Vv[V_FEXT]
    tau = Jv[J_TAU]
    FT = Jv[J_FT]
    bvec = Jv[J_B]
    hb = Fw[0, W_VBD]
    for k in range(1, N + 1):
        pk = Ia[I_PARENT, k]
        # gravity in e_k axes
        gx, gy, gz = _gravity_in_body(Vv[V_G], k, pk, R3[R_REL, k], grav)
        nk = Fi[F_NF, k]
        f = fb[k]
        if nk == 0:
            w = Vv[V_VEL, k]
            a = Vv[V_AB, k]
            Ik = Mm[M_I, k]
            _matvec6(Ik, a, f)
            _matvec6(Ik, w, t6)
            _add_gyro(w, t6, fext[k], f)
            if use_grav:
                _sub_gravity(Vv[V_MC, k], gx, gy, gz, f)
            continue
        # flexible body: FFR terms in the body frame
        fx = Fi[F_FX, k]
        mq = Fi[F_MQ, k]
        mv = Fi[F_MV, k]
        qk = q[mq : mq + nk]
        qdk = v[mv : mv + nk]
        RC = Ft[k, FR_OUT, :, 0:3]
        pC = Ft[k, FR_OUT, :, 3]
        SC = Fs[k, FR_OUT]
        gb = Fw[0, W_FEB]
        for i in range(3):
            gb[i] = 0.0
            if use_grav:
                gb[i] = RC[i, 0] * gx + RC[i, 1] * gy + RC[i, 2] * gz
        Vb = Fw[k, W_VB]
        mm = 6 + nk
        ffr_terms(Im, St, Si, Pi, KD, fx, nk, qk, qdk, Vb[0:3], Vb[3:6], gb, Mb, Bm[0], A3)
        if Fi[F_STIFF, k]:
            # scratch: Bm rows 2 to 5 are free until the inverse inertia below
            _mean_axis_terms(k, Fi, Fw, Fm, Im, fx, nk, qdk, gb, Mb, Bm[0], Bm[3:6, 0:3], Bm[2])
        # beta_b = M [a_b; 0] + h - Qg - Q_ext + [0; K q + D qd]
        ab = Fw[k, W_ABB]
        bb = Bm[1]
        for i in range(mm):
            s = Bm[0, i]
            for j in range(6):
                s += Mb[i, j] * ab[j]
            bb[i] = s
        fe = fext[k]  # external wrench about the body origin, body axes
        for i in range(6):
            bb[i] -= fe[i]
        for i in range(nk):
            s = -Fm[k, FM_QAPP, i]
            for j in range(nk):
                s += KD[fx, 0, i, j] * qk[j] + KD[fx, 1, i, j] * qdk[j]
            bb[6 + i] += s
        # to the e_k speeds: beta'_r = Phi_C^-1 beta_r, beta'_f = beta_f - S_C^T beta'_r
        _f2p_inv(RC, pC, bb, f)
        rho = Fm[k, FM_RHO]
        for j in range(nk):
            s = bb[6 + j]
            for i in range(6):
                s -= SC[i, j] * f[i]
            rho[j] = s
        # inverse generalized inertia Gp = T^-1 M^-1 T^-T, T^-T = [[Phi_C, 0], [S_C^T, I]]
        if not _chol(Mb, mm):
            return k
        G = Gp[k]
        for c in range(mm):
            # column c of T^-T into Bm[2]
            x = Bm[2]
            for i in range(mm):
                x[i] = 0.0
            if c < 6:
                for i in range(6):
                    t6[i] = 0.0
                t6[c] = 1.0
                _f2p(RC, pC, t6, hb)
                for i in range(6):
                    x[i] = hb[i]
                for j in range(nk):
                    x[6 + j] = SC[c, j]
            else:
                x[c] = 1.0
            # forward substitution L y = x (a unit column c >= 6 starts at row c)
            i0 = 0 if c < 6 else c
            for i in range(i0, mm):
                s = x[i]
                for m in range(i0, i):
                    s -= Mb[i, m] * x[m]
                x[i] = s / Mb[i, i]
            for i in range(mm):
                Bm[3 + c, i] = x[i]
        # G = B^T B with B[:, c] = Bm[3 + c] (zero above row c for c >= 6)
        for i in range(mm):
            for j in range(i + 1):
                s = 0.0
                for m in range(i if i >= 6 else 0, mm):
                    s += Bm[3 + i, m] * Bm[3 + j, m]
                G[i, j] = s
                G[j, i] = s
    # inward accumulation: fb_p += Phi_k fb_k ; rho_p += Psi_k fb_k
    for k in range(N, 0, -1):
        pk = Ia[I_PARENT, k]
        if pk > 0:
            _f2p_add(R3[R_REL, k], P3[P_REL, k], fb[k], fb[pk], 1.0)
            npk = Fi[F_NF, pk]
            if npk > 0:
                PT = PsiT[k]
                rho = Fm[pk, FM_RHO]
                f = fb[k]
                for j in range(npk):
                    rho[j] += (
                        PT[0, j] * f[0]
                        + PT[1, j] * f[1]
                        + PT[2, j] * f[2]
                        + PT[3, j] * f[3]
                        + PT[4, j] * f[4]
                        + PT[5, j] * f[5]
                    )
        joint_bias(Ia, Mm, k, fb[k], tau, t6, bvec, FT)
    # modal equivalent forces (applied modal forces are inside rho)
    for k in range(1, N + 1):
        nk = Fi[F_NF, k]
        mv = Fi[F_MV, k]
        for j in range(nk):
            Fm[k, FM_TF0, j] = -Fm[k, FM_RHO, j]
            bvec[mv + j] = Fm[k, FM_RHO, j]
    return 0


# ---------------------------------------------------------------- CFA: factor


# unrolled: the flexible twin of _kernels.factor (blocks with the extended shifts and
# Gp); both share project_inertia, eliminate_chains, node_system and factor_nodes
@njit(cache=True, _nrt=False)
def factor(Ia, Sa, Fi, Mm, Vv, R3, P3, Tt, Dn, Gp, Zc, PsiT):
    """Blocks of A with the extended shifts (flexible parents: ``[Phi_k; Psi_k]`` and the
    inverse generalized inertia ``Gp``), odd-even reduction of the chains, dense node
    system. Returns 0, the label of a block that is not positive definite, or -1."""
    N = Ia.shape[1] - 1
    A = Mm[M_A]
    Cr = Mm[M_CR]
    X = Mm[M_X]
    Y = Mm[M_Y]
    for k in range(1, N + 1):
        pk = Ia[I_PARENT, k]
        Ak = A[k]
        Gk = Gp[k] if Fi[F_NF, k] > 0 else Mm[M_G, k]
        if pk > 0:
            Xk = X[k]
            _build_phi(R3[R_REL, k], P3[P_REL, k], Xk)
            Yk = Y[k]
            npk = Fi[F_NF, pk]
            if npk > 0:
                # Z = Gp_p [Phi; Psi] ; Y = Z[:6] ; A = G_k + Phi^T Z[:6] + Psi^T Z[6:]
                Z = Zc[k]
                Gpp = Gp[pk]
                PT = PsiT[k]
                mp = 6 + npk
                for i in range(mp):
                    for j in range(6):
                        s = 0.0
                        for l in range(6):
                            s += Gpp[i, l] * Xk[l, j]
                        for f in range(npk):
                            s += Gpp[i, 6 + f] * PT[j, f]
                        Z[i, j] = s
                for i in range(6):
                    for j in range(6):
                        Yk[i, j] = Z[i, j]
                for i in range(6):
                    for j in range(i + 1):
                        s = Gk[i, j]
                        for l in range(6):
                            s += Xk[l, i] * Z[l, j]
                        for f in range(npk):
                            s += PT[i, f] * Z[6 + f, j]
                        Ak[i, j] = s
            else:
                shift_inertia(Ak, Gk, Mm[M_G, pk], Xk, Yk)
            _mirror6(Ak)
            # D_k = -P_p Y P_k -> coupling (parent, k), stored in Cr[pk] if single child
            if Ia[I_ONE, pk] == k:
                coupling_block(Cr[pk], Yk, Ia, Mm, Vv, Tt, pk, k)
        else:
            for i in range(6):
                for j in range(6):
                    Ak[i, j] = Gk[i, j]
        project_inertia(Ak, k, Ia, Mm, Vv, Tt)
    return _reduce(Ia, Sa, Fi, Mm, Vv, Tt, Dn, Zc, PsiT)


# unrolled: the tail of _kernels.factor (chains, node system, sibling blocks) with the
# extended-shift coupling of siblings under a flexible parent
@njit(cache=True, _nrt=False)
def _reduce(Ia, Sa, Fi, Mm, Vv, Tt, Dn, Zc, PsiT):
    """Odd-even reduction of the chains and the dense node system (as in
    :func:`flexmbd.recursive._kernels.factor`; sibling blocks through a flexible node
    use the extended shifts)."""
    X = Mm[M_X]
    Y = Mm[M_Y]
    T1 = Tt[T_1]
    fail = eliminate_chains(Ia, Sa, Mm)
    if fail:
        return fail
    nd, nsib, od, osb = node_system(Ia, Sa, Mm, Vv, Tt, Dn)
    for t in range(nsib):
        a_ = Sa[osb + 2 * t]
        b_ = Sa[osb + 2 * t + 1]
        pk = Ia[I_PARENT, a_]
        npk = Fi[F_NF, pk]
        if npk > 0:
            # [Phi_a; Psi_a]^T Zc_b
            Xa = X[a_]
            PT = PsiT[a_]
            Zb = Zc[b_]
            for i in range(6):
                for j in range(6):
                    s = 0.0
                    for l in range(6):
                        s += Xa[l, i] * Zb[l, j]
                    for f in range(npk):
                        s += PT[i, f] * Zb[6 + f, j]
                    T1[i, j] = s
        else:
            _matTmul6(X[a_], Y[b_], T1, 1.0)
        sibling_block(T1, Ia, Mm, Vv, Tt, Dn, a_, b_)
    return factor_nodes(Ia, Sa, Dn, nd, od)


# ---------------------------------------------------------------- CFA: solve


@njit(cache=True, inline="always")
def _apply_g(k, pk, Fi, Mm, Vv, R3, P3, Gp, PsiT, Fm, e, af, t6):
    """Inward step of a solve pass: af[k] (+ modal zf[k]) <- Gp_k ([af[k] + e; tf_k + zf_k]),
    then the parent's accumulators get -Phi_k e and -Psi_k e."""
    nk = Fi[F_NF, k]
    for i in range(6):
        t6[i] = af[k, i] + e[i]
    if nk > 0:
        G = Gp[k]
        zf = Fm[k, FM_ZF]
        tf = Fm[k, FM_TF]
        ud = Fm[k, FM_UDF]
        mm = 6 + nk
        for i in range(mm):
            s = 0.0
            for j in range(6):
                s += G[i, j] * t6[j]
            for j in range(nk):
                s += G[i, 6 + j] * (tf[j] + zf[j])
            if i < 6:
                af[k, i] = s
            else:
                ud[i - 6] = s
    else:
        _matvec6(Mm[M_G, k], t6, af[k])
    if pk > 0:
        _f2p_add(R3[R_REL, k], P3[P_REL, k], e, af[pk], -1.0)
        npk = Fi[F_NF, pk]
        if npk > 0:
            PT = PsiT[k]
            zp = Fm[pk, FM_ZF]
            for j in range(npk):
                zp[j] -= (
                    PT[0, j] * e[0]
                    + PT[1, j] * e[1]
                    + PT[2, j] * e[2]
                    + PT[3, j] * e[3]
                    + PT[4, j] * e[4]
                    + PT[5, j] * e[5]
                )


@njit(cache=True, inline="always")
def _relative(k, pk, Fi, R3, P3, PsiT, Fm, af, t6):
    """t6 = af_k - [Phi_k; Psi_k]^T u'_p (the joint's relative linear acceleration)."""
    if pk > 0:
        _m2c(R3[R_REL, k], P3[P_REL, k], af[pk], t6)
        npk = Fi[F_NF, pk]
        if npk > 0:
            PT = PsiT[k]
            ud = Fm[pk, FM_UDF]
            for i in range(6):
                s = 0.0
                for j in range(npk):
                    s += PT[i, j] * ud[j]
                t6[i] += s
        for i in range(6):
            t6[i] = af[k, i] - t6[i]
    else:
        for i in range(6):
            t6[i] = af[k, i]


@njit(cache=True, inline="always")
def _kinematic(k, pk, Ia, Fi, Mm, R3, P3, PsiT, Fm, af, qdd, t6, sv):
    """``af[k] = [Phi_k; Psi_k]^T u'_p + S_k qdd_k`` (e_k axes): the acceleration of e_k
    from its parent's rigid and modal accelerations and its joint's, the relation
    :func:`_relative` inverts (:func:`flexmbd.recursive._kernels.kinematic_acc` plus the
    parent's deformation); ``af[0]`` zero, ``t6``, ``sv`` scratch."""
    kinematic_acc(Ia, Mm, R3, P3, af, qdd, k, t6, sv)
    npk = Fi[F_NF, pk]
    if pk > 0 and npk > 0:
        PT = PsiT[k]
        ud = Fm[pk, FM_UDF]
        ak = af[k]
        for i in range(6):
            s = 0.0
            for j in range(npk):
                s += PT[i, j] * ud[j]
            ak[i] += s


@njit(cache=True, _nrt=False)
def _clear_passes(N, Fi, af, Fm):
    """Zero the accumulators of a backward pass over labels 0..N: the linear
    accelerations ``af`` of every e_k (V_AF) and the modal sums FM_ZF."""
    for k in range(N + 1):
        for i in range(6):
            af[k, i] = 0.0
        for j in range(Fi[F_NF, k]):
            Fm[k, FM_ZF, j] = 0.0


# unrolled: the flexible twin of _kernels.solve (modal terms, the shifts of eq. 28 in
# _apply_g / _relative, in every pass); the rigid kernel keeps its revolute-chain fast
# path and reads no modal workspace, so neither calls the other
@njit(cache=True, _nrt=False)
def solve(Ia, Sa, Fi, Mm, Vv, R3, P3, Dn, Gp, PsiT, Fm, Jv):
    """Given F_T (row J_FT) and the modal equivalent forces (FM_TF): constraint forces
    f = W F_S, equivalent forces F (V_FE), modal accelerations (FM_UDF) and Q̈ (row
    J_QDD; modal entries included), then the linear accelerations of every e_k (V_AF)
    from them (:func:`_kinematic`)."""
    N = Ia.shape[1] - 1
    t6 = Vv[V_T6, 0]
    tv = Vv[V_VJ, 0]
    Fe = Vv[V_FE]
    af = Vv[V_AF]
    bx = Vv[V_BX]
    FT = Jv[J_FT]
    qdd = Jv[J_QDD]
    _clear_passes(N, Fi, af, Fm)
    for k in range(N, 0, -1):
        e = Fe[k]
        joint_force(Ia, Mm, FT, k, e)
        _apply_g(k, Ia[I_PARENT, k], Fi, Mm, Vv, R3, P3, Gp, PsiT, Fm, e, af, tv)
    for k in range(1, N + 1):
        _relative(k, Ia[I_PARENT, k], Fi, R3, P3, PsiT, Fm, af, t6)
        _proj_vec(t6, k, Ia, Mm, Vv, tv, -1.0)
        for a in range(6):
            bx[k, a] = tv[Ia[I_PERM + a, k]]
    solve_schedule(Ia, Sa, Mm, Dn, bx)
    natural_order(Ia, bx, t6)
    # eq. 28 with the extended shifts
    _clear_passes(N, Fi, af, Fm)
    for k in range(N, 0, -1):
        F = Fe[k]
        for i in range(6):
            F[i] += bx[k, i]
        _apply_g(k, Ia[I_PARENT, k], Fi, Mm, Vv, R3, P3, Gp, PsiT, Fm, F, af, tv)
    for k in range(1, N + 1):
        _relative(k, Ia[I_PARENT, k], Fi, R3, P3, PsiT, Fm, af, t6)
        joint_qdd(Ia, Mm, k, t6, qdd)
        nk = Fi[F_NF, k]
        mv = Fi[F_MV, k]
        for j in range(nk):
            qdd[mv + j] = Fm[k, FM_UDF, j]
    # the bodies' accelerations from the joints' and the modal ones (as the rigid solve)
    for k in range(1, N + 1):
        _kinematic(k, Ia[I_PARENT, k], Ia, Fi, Mm, R3, P3, PsiT, Fm, af, qdd, t6, tv)


# ---------------------------------------------------------------- geometric stiffening


@njit(cache=True, _nrt=False)
def stiffening_products(Ia, Fi, KG, Fm, KQ, q):
    """``KQ[k, i] = K_i q_k`` for every unit geometric-stiffness matrix of stiffened bodies."""
    N = Ia.shape[1] - 1
    for k in range(1, N + 1):
        if not Fi[F_STIFF, k]:
            continue
        nk = Fi[F_NF, k]
        fx = Fi[F_FX, k]
        mq = Fi[F_MQ, k]
        for i in range(KG.shape[1]):
            for a in range(nk):
                s = 0.0
                for b in range(nk):
                    s += KG[fx, i, a, b] * q[mq + b]
                KQ[k, i, a] = s


@njit(cache=True, _nrt=False)
def _body_acc(k, Fi, Vv, Ft, Fs, Fw, Fm, out):
    """Body-frame acceleration ``[alpha_b; dv_b/dt]`` (body axes) of flexible body k after a
    solve: ``Phi_C^-T (af - S_C qdd) + a_b,bias``."""
    nk = Fi[F_NF, k]
    SC = Fs[k, FR_OUT]
    ud = Fm[k, FM_UDF]
    t = Fw[0, W_VP]
    af = Vv[V_AF, k]
    for i in range(6):
        s = af[i]
        for j in range(nk):
            s -= SC[i, j] * ud[j]
        t[i] = s
    _m2c_inv(Ft[k, FR_OUT, :, 0:3], Ft[k, FR_OUT, :, 3], t, out)
    ab = Fw[k, W_ABB]
    for i in range(6):
        out[i] += ab[i]


@njit(cache=True, _nrt=False)
def _mean_axis_terms(k, Fi, Fw, Fm, Im, fx, nk, qd, gb, M, hg, J0, C):
    """Store what the mean-axis load parameters of body k need from the bias pass: the
    rows of ``M_rr(q)``, ``M_rf(q)``, ``w_p = w + Gamma_w qd`` and ``h_r - C(w_p)`` (``hg``:
    ``h - Q_gravity`` of :func:`ffr_terms`; ``M`` before its factorization; scratch
    ``J0`` (3, 3) and ``C`` (6 or more))."""
    for i in range(6):
        for j in range(6):
            Fw[k, W_MR + i, j] = M[i, j]
        for j in range(nk):
            Fm[k, FM_MF + i, j] = M[i, 6 + j]
    Vb = Fw[k, W_VB]
    wp = Fw[k, W_WP]
    for i in range(3):
        s = Vb[i]
        for j in range(nk):
            s += Fm[k, FM_GW + i, j] * qd[j]
        wp[i] = s
    # h_r = (h - Q_g)_r + [Sbar x g_b; m g_b]  (Sbar from M_wv = Sbar~)
    m = Im[fx, 0]
    c0 = M[2, 4]
    c1 = M[0, 5]
    c2 = M[1, 3]
    hr = Fw[k, W_HR]
    hr[0] = hg[0] + (c1 * gb[2] - c2 * gb[1])
    hr[1] = hg[1] + (c2 * gb[0] - c0 * gb[2])
    hr[2] = hg[2] + (c0 * gb[1] - c1 * gb[0])
    for i in range(3):
        hr[3 + i] = hg[3 + i] + m * gb[i]
    # - C(w_p) = -[w_p x J0 w_p; w_p x (w_p x c)]
    tr = Im[fx, 4] + Im[fx, 8] + Im[fx, 12]
    for i in range(3):
        for j in range(3):
            J0[i, j] = -Im[fx, 4 + 3 * i + j]
        J0[i, i] += tr
    centrifugal(J0, Im[fx, 1:4], wp, C)
    for i in range(6):
        hr[i] -= C[i]


@njit(cache=True, _nrt=False)
def stiffening_forces(Ia, Fi, Vv, R3, P3, Ft, Fs, Fw, Fm, KQ, nitf, initial):
    """Modal stiffening forces ``K_G(p) q`` (FM_KGQ) for the current solution: angular
    velocity products, body-frame angular acceleration and origin acceleration minus
    gravity, and the wrenches the joints apply at stiffened interfaces (from the
    reactions ``F + fb``). ``initial``: accelerations of the bias pass, no interface loads.
    Returns the largest change of a stiffening force."""
    N = Ia.shape[1] - 1
    wld = Fw[0, W_VBD]
    acc = Fw[0, W_FEB]
    # interface wrenches per body: Fw rows cannot hold several; accumulate in FM_T1 as
    # 6 * nitf values (nitf <= nmax / 6 is not guaranteed) -> use the weights directly
    change = 0.0
    for k in range(1, N + 1):
        if not Fi[F_STIFF, k]:
            continue
        nk = Fi[F_NF, k]
        kq = Fm[k, FM_KW]
        if initial:
            for i in range(6):
                acc[i] = Fw[k, W_ABB, i]
        else:
            _body_acc(k, Fi, Vv, Ft, Fs, Fw, Fm, acc)
        # mean-axis parameters (flexmbd.flexible.mean_axis): w_p, and
        # [al_p; a_p] = M_rr0^-1 (M_rr acc + M_rf qdd + h_r - C(w_p)); a-parameter a_p - g_b
        wp = Fw[k, W_WP]
        w0 = wp[0]
        w1 = wp[1]
        w2 = wp[2]
        hr = Fw[k, W_HR]
        ud = Fm[k, FM_UDF]
        X = Fw[0, W_VP]
        for i in range(6):
            s = hr[i]
            Mr = Fw[k, W_MR + i]
            for j in range(6):
                s += Mr[j] * acc[j]
            if not initial:
                Mf = Fm[k, FM_MF + i]
                for j in range(nk):
                    s += Mf[j] * ud[j]
            X[i] = s
        for i in range(6):
            s = 0.0
            Mi = Fw[k, W_MI + i]
            for j in range(6):
                s += Mi[j] * X[j]
            acc[i] = s
        RC = Ft[k, FR_OUT, :, 0:3]
        gk = Vv[V_G, k]
        a0 = acc[3] - (RC[0, 0] * gk[0] + RC[0, 1] * gk[1] + RC[0, 2] * gk[2])
        a1 = acc[4] - (RC[1, 0] * gk[0] + RC[1, 1] * gk[1] + RC[1, 2] * gk[2])
        a2 = acc[5] - (RC[2, 0] * gk[0] + RC[2, 1] * gk[1] + RC[2, 2] * gk[2])
        K = KQ[k]
        for j in range(nk):
            kq[j] = (
                w0 * w0 * K[0, j]
                + w1 * w1 * K[1, j]
                + w2 * w2 * K[2, j]
                + w0 * w1 * K[3, j]
                + w1 * w2 * K[4, j]
                + w0 * w2 * K[5, j]
                + acc[0] * K[6, j]
                + acc[1] * K[7, j]
                + acc[2] * K[8, j]
                + a0 * K[9, j]
                + a1 * K[10, j]
                + a2 * K[11, j]
            )
    if not initial:
        Fe = Vv[V_FE]
        fb = Vv[V_FB]
        for k in range(1, N + 1):
            io = Fi[F_IOUT, k]
            ii = Fi[F_IIN, k]
            if io < 0 and ii < 0:
                continue
            for i in range(6):
                wld[i] = Fe[k, i] + fb[k, i]
            if io >= 0:
                # wrench on k at its out frame: body axes about the frame origin
                RC = Ft[k, FR_OUT, :, 0:3]
                K = KQ[k]
                kq = Fm[k, FM_KW]
                for c in range(2):
                    u0 = wld[3 * c]
                    u1 = wld[3 * c + 1]
                    u2 = wld[3 * c + 2]
                    x0 = RC[0, 0] * u0 + RC[0, 1] * u1 + RC[0, 2] * u2
                    x1 = RC[1, 0] * u0 + RC[1, 1] * u1 + RC[1, 2] * u2
                    x2 = RC[2, 0] * u0 + RC[2, 1] * u1 + RC[2, 2] * u2
                    b = 12 + 6 * io + 3 * c
                    for j in range(Fi[F_NF, k]):
                        kq[j] += x0 * K[b, j] + x1 * K[b + 1, j] + x2 * K[b + 2, j]
            if ii >= 0:
                # wrench on the parent at the in frame: -(Phi_C Phi_k F) moved to p_P
                pk = Ia[I_PARENT, k]
                _f2p(R3[R_REL, k], P3[P_REL, k], wld, acc)
                _f2p(Ft[pk, FR_OUT, :, 0:3], Ft[pk, FR_OUT, :, 3], acc, wld)
                pP = Ft[k, FR_IN, :, 3]
                m0 = -(wld[0] - (pP[1] * wld[5] - pP[2] * wld[4]))
                m1 = -(wld[1] - (pP[2] * wld[3] - pP[0] * wld[5]))
                m2 = -(wld[2] - (pP[0] * wld[4] - pP[1] * wld[3]))
                f0 = -wld[3]
                f1 = -wld[4]
                f2 = -wld[5]
                K = KQ[pk]
                kq = Fm[pk, FM_KW]
                b = 12 + 6 * ii
                for j in range(Fi[F_NF, pk]):
                    kq[j] += (
                        m0 * K[b, j]
                        + m1 * K[b + 1, j]
                        + m2 * K[b + 2, j]
                        + f0 * K[b + 3, j]
                        + f1 * K[b + 4, j]
                        + f2 * K[b + 5, j]
                    )
    for k in range(1, N + 1):
        if not Fi[F_STIFF, k]:
            continue
        for j in range(Fi[F_NF, k]):
            d = abs(Fm[k, FM_KW, j] - Fm[k, FM_KGQ, j])
            if d > change:
                change = d
            Fm[k, FM_KGQ, j] = Fm[k, FM_KW, j]
    return change


@njit(cache=True, _nrt=False)
def set_modal_rhs(Ia, Fi, Fm):
    """FM_TF = FM_TF0 - FM_KGQ."""
    N = Ia.shape[1] - 1
    for k in range(1, N + 1):
        for j in range(Fi[F_NF, k]):
            Fm[k, FM_TF, j] = Fm[k, FM_TF0, j] - (Fm[k, FM_KGQ, j] if Fi[F_STIFF, k] else 0.0)


# ---------------------------------------------------------------- drivers


@njit(cache=True, _nrt=False)
def kinematics(T, q, v, world):
    """Frame states, joint kinematics, relative poses (deforming in frames), twists and
    bias accelerations of every ``e_k`` and body frame, ``Psi_k^T`` at ``(q, v)`` (joint
    and modal coordinates and speeds; world poses only with ``world``) into the
    workspace ``T`` (a :class:`FlexWork` as a plain tuple)."""
    W = FlexWork(*T)
    _kinematics(
        W.Ia, W.Fi, W.Mm, W.Vv, W.R3, W.P3, W.Tt, W.Fc, W.Ft, W.Fs, W.Fw, W.PsiT, q, v, world
    )


@njit(cache=True, _nrt=False)
def bias_forces(T, q, v, grav, use_grav):
    """:func:`_bias_forces` on the workspace ``T`` (a :class:`FlexWork` as a plain tuple)
    after :func:`kinematics`; gravity ``grav`` (m/s^2, world axes) with ``use_grav``.
    Returns 0 or the label of a body whose generalized inertia is not positive definite."""
    W = FlexWork(*T)
    return _bias_forces(
        W.Ia,
        W.Fi,
        W.Mm,
        W.Vv,
        W.R3,
        W.P3,
        W.Ft,
        W.Fs,
        W.Fw,
        W.Fm,
        W.PsiT,
        W.Gp,
        W.Im,
        W.St,
        W.Si,
        W.Pi,
        W.KD,
        W.Mb,
        W.Bm,
        W.A3,
        q,
        v,
        grav,
        use_grav,
        W.Jv,
    )


@njit(cache=True, inline="always")
def _factor_at(T, q, v, grav, use_grav, world):
    """Kinematics, bias pass and factorization at ``(q, v)``: the common start of
    :func:`forward_dynamics` and :func:`solve_columns`; the status of the first step that
    fails (0: factored)."""
    kinematics(T, q, v, world)
    st = bias_forces(T, q, v, grav, use_grav)
    if st != 0:
        return st
    W = FlexWork(*T)
    return factor(W.Ia, W.Sa, W.Fi, W.Mm, W.Vv, W.R3, W.P3, W.Tt, W.Dn, W.Gp, W.Zc, W.PsiT)


@njit(cache=True, inline="always")
def _solve_at(W):
    """One :func:`solve` on the factored workspace ``W`` (a :class:`FlexWork`)."""
    solve(W.Ia, W.Sa, W.Fi, W.Mm, W.Vv, W.R3, W.P3, W.Dn, W.Gp, W.PsiT, W.Fm, W.Jv)


@njit(cache=True, _nrt=False)
def forward_dynamics(T, q, v, grav, use_grav, reac, any_stiff, tol, max_iter, info):
    """Full serialized CFA with flexible bodies on the workspace ``T`` (a
    :class:`FlexWork` as a plain tuple; joint forces in row ``J_TAU`` of ``Jv``): Q̈ into
    row ``J_QDD``, joint reactions (N, N m, joint frames) into ``reac``. Status 0, a label
    (block not positive definite), -1 (node system) or -2 (stiffening fixed point not
    converged within ``max_iter`` at relative tolerance ``tol``). The number of
    stiffening iterations goes to ``info[0]``."""
    return _dynamics(T, q, v, grav, use_grav, reac, any_stiff, tol, max_iter, info, False)


@njit(cache=True, _nrt=False)
def factored_dynamics(T, q, v, grav, use_grav, reac, any_stiff, tol, max_iter, info):
    """:func:`forward_dynamics` on a workspace that already holds the kinematics at
    ``(q, v)`` (world poses) and the factorization at ``q`` of an earlier pass (other
    applied loads or joint forces: the factor depends on ``q`` only): the bias pass, the
    stiffening fixed point and the solve, without the kinematics pass and the
    factorization (the same values, bit for bit). Status as :func:`forward_dynamics`."""
    return _dynamics(T, q, v, grav, use_grav, reac, any_stiff, tol, max_iter, info, True)


@njit(cache=True, inline="always")
def _dynamics(T, q, v, grav, use_grav, reac, any_stiff, tol, max_iter, info, factored):
    """:func:`forward_dynamics` (``factored``: :func:`factored_dynamics`)."""
    if factored:
        st = bias_forces(T, q, v, grav, use_grav)
    else:
        st = _factor_at(T, q, v, grav, use_grav, True)
    if st != 0:
        return st
    W = FlexWork(*T)
    Ia, Fi, Vv, R3, P3, Jv = W.Ia, W.Fi, W.Vv, W.R3, W.P3, W.Jv
    Ft, Fs, Fw, Fm, KQ = W.Ft, W.Fs, W.Fw, W.Fm, W.KQ
    status = 0
    if any_stiff:
        stiffening_products(Ia, Fi, W.KG, Fm, KQ, q)
        stiffening_forces(Ia, Fi, Vv, R3, P3, Ft, Fs, Fw, Fm, KQ, 0, True)
        status = -2
        for it in range(max_iter):
            set_modal_rhs(Ia, Fi, Fm)
            _solve_at(W)
            change = stiffening_forces(Ia, Fi, Vv, R3, P3, Ft, Fs, Fw, Fm, KQ, 0, False)
            scale = 0.0
            N = Ia.shape[1] - 1
            for k in range(1, N + 1):
                for j in range(Fi[F_NF, k]):
                    x = abs(Fm[k, FM_TF0, j]) + abs(Fm[k, FM_KGQ, j])
                    if x > scale:
                        scale = x
            info[0] = it + 1
            if change <= tol * scale:
                status = 0
                break
        set_modal_rhs(Ia, Fi, Fm)
        _solve_at(W)
    else:
        set_modal_rhs(Ia, Fi, Fm)
        _solve_at(W)
    # modal equivalent control forces into the F_T row (reported with the joints')
    N = Ia.shape[1] - 1
    for k in range(1, N + 1):
        mv = Fi[F_MV, k]
        for j in range(Fi[F_NF, k]):
            Jv[J_FT, mv + j] = Fm[k, FM_TF, j]
    reversed_frames(Ia, R3, P3)
    reactions_into(Ia, Vv, R3, P3, reac)
    return status


@njit(cache=True, _nrt=False)
def body_accelerations(Ia, Fi, Vv, R3, P3, Ft, Fs, Fw, Fm, out):
    """World ``[alpha; a_origin]`` of every body frame (rigid: the body frame at P_B of
    e_k; flexible: the floating reference frame) after a forward-dynamics pass."""
    N = Ia.shape[1] - 1
    acc = Fw[0, W_FEB]
    for k in range(1, N + 1):
        Rw = R3[R_W, k]
        if Fi[F_NF, k] > 0:
            _body_acc(k, Fi, Vv, Ft, Fs, Fw, Fm, acc)
            Vb = Fw[k, W_VB]
            RC = Ft[k, FR_OUT, :, 0:3]
            lx = acc[3] + Vb[1] * Vb[5] - Vb[2] * Vb[4]
            ly = acc[4] + Vb[2] * Vb[3] - Vb[0] * Vb[5]
            lz = acc[5] + Vb[0] * Vb[4] - Vb[1] * Vb[3]
            # world rotation of the body frame: Rw RC^T
            for i in range(3):
                r0 = Rw[i, 0] * RC[0, 0] + Rw[i, 1] * RC[0, 1] + Rw[i, 2] * RC[0, 2]
                r1 = Rw[i, 0] * RC[1, 0] + Rw[i, 1] * RC[1, 1] + Rw[i, 2] * RC[1, 2]
                r2 = Rw[i, 0] * RC[2, 0] + Rw[i, 1] * RC[2, 1] + Rw[i, 2] * RC[2, 2]
                out[k, i] = r0 * acc[0] + r1 * acc[1] + r2 * acc[2]
                out[k, 3 + i] = r0 * lx + r1 * ly + r2 * lz
            continue
        _body_acceleration(Vv, R3, P3, k, out[k])


@njit(cache=True)
def solve_columns(T, q, cols, out):
    """``M^-1 cols`` (joint and modal speeds; reversed joints in orthonormal speeds) at
    ``q`` on the workspace ``T`` (a :class:`FlexWork` as a plain tuple) into ``out``;
    the kernel status (0 or as :func:`forward_dynamics`)."""
    W = FlexWork(*T)
    Ia, Fi, Fm, Jv = W.Ia, W.Fi, W.Fm, W.Jv
    nv = cols.shape[0]
    N = Ia.shape[1] - 1
    for i in range(Jv.shape[1]):
        Jv[J_TAU, i] = 0.0
    zero = Jv[J_TAU]
    st = _factor_at(T, q, zero, np.zeros(3), False, False)
    if st != 0:
        return st
    for c in range(cols.shape[1]):
        for i in range(nv):
            Jv[J_FT, i] = cols[i, c]
        for k in range(1, N + 1):
            mv = Fi[F_MV, k]
            for j in range(Fi[F_NF, k]):
                Fm[k, FM_TF, j] = cols[mv + j, c]
        _solve_at(W)
        for i in range(nv):
            out[i, c] = Jv[J_QDD, i]
    return 0
