"""Compiled kinematics of the bodies on closed loops (numba).

Used by :class:`flexmbd.constraints.cut.CutJointConstraints`. For the bodies on
the loops, inboard first, and the tree joint joining each to its inboard body,
one pass from ground outwards computes

* the body's world pose ``(R, r)`` and twist ``(w, vO)`` (``vO``: velocity of the
  body point at the world origin);
* the joint's world motion columns ``Wc`` (angular) and ``Lc`` (linear, at the
  child-frame origin ``o``), signed (``-1`` for a reversed tree joint), and its
  contribution to the spatial bias acceleration (world origin)
  ``s [X (c_j) + V_B x (X H v)]`` (``V_B``: twist of the body carrying the joint's
  child frame).

Joint kinematics are the one compiled branch,
:func:`flexmbd._nbjoints.joint_kinematics`, in the joint's aligned frames
(``Fp``, ``Fc`` here are the aligned joint frames; constants from
:meth:`flexmbd.joint_types.JointType.compiled`, a Screw's column not normalized so that
its speed is the angle rate); they follow :mod:`flexmbd.model.joints` exactly (same coordinates,
speeds, motion subspaces and bias terms); the Python implementation in
:mod:`flexmbd.constraints.cut` is the reference they are tested against.
"""

import numpy as np

from .._jit import njit
from .._nbjoints import REVOLUTE, joint_kinematics

# The scratch layout of :func:`work_arrays`, the one source for :func:`cuts_eval` and the
# Python rows of :class:`flexmbd.constraints.cut.CutJointConstraints` (rows of each array):
# ``w3`` (3-vectors): loop_kinematics [0, W3_FRAMES), cuts_eval's frames and zero
# [W3_FRAMES, W3_ROWS), cut_rows [W3_ROWS, W3_END);
# ``w33`` (3x3): loop_kinematics [0, W33_FRAMES), cuts_eval's frames [W33_FRAMES, W33_RTF),
# cut_rows' ``RtF`` W33_RTF; ``w66`` (6x6): loop_kinematics; ``w6`` (6-vectors):
# loop_kinematics 0, cuts_eval's ``bsp``, ``Vrel`` 1, 2, cut_rows' ``b`` W6_B.
W3_FRAMES, W3_ROWS, W3_END = 16, 20, 32
W33_FRAMES, W33_RTF, W33_END = 7, 11, 12
W66_END = 2
W6_B, W6_END = 3, 4


@njit(cache=True, _nrt=False)
def _cross(a, b, out):
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0] = x
    out[1] = y
    out[2] = z


# unrolled: the Revolute body of loop_kinematics on 3-vectors and 3x3 matrices held as
# tuples (values in registers: stores to the output arrays cannot alias them, so no
# reloads); every sum in the same order as the array code of the other joints, so the
# same numbers bit for bit
@njit(cache=True, inline="always")
def _ld9(m):
    """Row-major 9-tuple of the 3x3 matrix ``m``."""
    return (m[0, 0], m[0, 1], m[0, 2], m[1, 0], m[1, 1], m[1, 2], m[2, 0], m[2, 1], m[2, 2])


@njit(cache=True, inline="always")
def _ld3(M, i):
    """Row-major 9-tuple of the 3x3 matrix ``M[i]``."""
    return _ld9(M[i])


@njit(cache=True, inline="always")
def _mm(a, b):
    """``a b`` (9-tuples)."""
    return (
        a[0] * b[0] + a[1] * b[3] + a[2] * b[6],
        a[0] * b[1] + a[1] * b[4] + a[2] * b[7],
        a[0] * b[2] + a[1] * b[5] + a[2] * b[8],
        a[3] * b[0] + a[4] * b[3] + a[5] * b[6],
        a[3] * b[1] + a[4] * b[4] + a[5] * b[7],
        a[3] * b[2] + a[4] * b[5] + a[5] * b[8],
        a[6] * b[0] + a[7] * b[3] + a[8] * b[6],
        a[6] * b[1] + a[7] * b[4] + a[8] * b[7],
        a[6] * b[2] + a[7] * b[5] + a[8] * b[8],
    )


@njit(cache=True, inline="always")
def _mmT(a, b):
    """``a b^T`` (9-tuples)."""
    return (
        a[0] * b[0] + a[1] * b[1] + a[2] * b[2],
        a[0] * b[3] + a[1] * b[4] + a[2] * b[5],
        a[0] * b[6] + a[1] * b[7] + a[2] * b[8],
        a[3] * b[0] + a[4] * b[1] + a[5] * b[2],
        a[3] * b[3] + a[4] * b[4] + a[5] * b[5],
        a[3] * b[6] + a[4] * b[7] + a[5] * b[8],
        a[6] * b[0] + a[7] * b[1] + a[8] * b[2],
        a[6] * b[3] + a[7] * b[4] + a[8] * b[5],
        a[6] * b[6] + a[7] * b[7] + a[8] * b[8],
    )


@njit(cache=True, inline="always")
def _mv(a, x0, x1, x2):
    """``a x`` (a 9-tuple, x three scalars) as a 3-tuple."""
    return (
        a[0] * x0 + a[1] * x1 + a[2] * x2,
        a[3] * x0 + a[4] * x1 + a[5] * x2,
        a[6] * x0 + a[7] * x1 + a[8] * x2,
    )


@njit(cache=True, inline="always")
def _aff(p, a, x0, x1, x2):
    """``p + a x`` summed from the left (``((p + a0 x0) + a1 x1) + a2 x2`` per row)."""
    return (
        p[0] + a[0] * x0 + a[1] * x1 + a[2] * x2,
        p[1] + a[3] * x0 + a[4] * x1 + a[5] * x2,
        p[2] + a[6] * x0 + a[7] * x1 + a[8] * x2,
    )


@njit(cache=True, inline="always")
def _cr(a0, a1, a2, b0, b1, b2):
    """``a x b`` as a 3-tuple (the operations of :func:`_cross`)."""
    return (a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)


@njit(cache=True, inline="always")
def _revolute_body(i, k, Hc, rev, Fp, fp, Fc, fc, qo, vo, m, q, v, with_v, Rb, rb, wb, vOb,
                   Wc, Lc, oc, bias):  # fmt: skip
    """:func:`loop_kinematics` for loop body ``i`` (inboard ``k``) on a Revolute joint:
    ``Rz(q)``, ``p = 0``, ``c = 0``, the constant columns ``H``; ``A = Fp Rz(q)`` and
    ``a = fp`` without the products by the zeros and ones of ``Rz`` and ``p``."""
    if k < 0:
        Rp = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
        rp = (0.0, 0.0, 0.0)
        wp = (0.0, 0.0, 0.0)
        vOp = (0.0, 0.0, 0.0)
    else:
        Rp = _ld3(Rb, k)
        rp = (rb[k, 0], rb[k, 1], rb[k, 2])
        wp = (wb[k, 0], wb[k, 1], wb[k, 2])
        vOp = (vOb[k, 0], vOb[k, 1], vOb[k, 2])
    cq = np.cos(q[qo[i]])
    sq = np.sin(q[qo[i]])
    F = Fp[i]
    A = (
        F[0, 0] * cq + F[0, 1] * sq, F[0, 0] * -sq + F[0, 1] * cq, F[0, 2],
        F[1, 0] * cq + F[1, 1] * sq, F[1, 0] * -sq + F[1, 1] * cq, F[1, 2],
        F[2, 0] * cq + F[2, 1] * sq, F[2, 0] * -sq + F[2, 1] * cq, F[2, 2],
    )  # fmt: skip
    C = _ld3(Fc, i)
    f0, f1, f2 = fc[i, 0], fc[i, 1], fc[i, 2]
    # (A, a) o Fc^-1 = (A Fc^T, a - A Fc^T fc)
    Rrel = _mmT(A, C)
    t = _mv(Rrel, f0, f1, f2)
    prel = (fp[i, 0] - t[0], fp[i, 1] - t[1], fp[i, 2] - t[2])
    rv = rev[i]
    if rv:  # outboard = declared parent: inverse pose
        Rrel = (Rrel[0], Rrel[3], Rrel[6], Rrel[1], Rrel[4], Rrel[7], Rrel[2], Rrel[5], Rrel[8])
        t = _mv(Rrel, prel[0], prel[1], prel[2])
        prel = (-t[0], -t[1], -t[2])
    Ri = _mm(Rp, Rrel)
    ri = _aff(rp, Rp, prel[0], prel[1], prel[2])
    for r in range(3):
        for s in range(3):
            Rb[i, r, s] = Ri[3 * r + s]
        rb[i, r] = ri[r]
    # world frame of the joint's child frame (on this body, or on the inboard if reversed)
    Rc0 = Rp if rv else Ri
    rc0 = rp if rv else ri
    Rcj = _mm(Rc0, C)
    ocj = _aff(rc0, Rc0, f0, f1, f2)
    sg = -1.0 if rv else 1.0
    _revolute_motion(i, Hc, vo, m, v, with_v, rv, sg, Rcj, ocj, wp, vOp, wb, vOb, Wc, Lc, oc, bias)


@njit(cache=True, inline="always")
def _revolute_motion(i, Hc, vo, m, v, with_v, rv, sg, Rcj, ocj, wp, vOp, wb, vOb, Wc, Lc, oc,
                     bias):  # fmt: skip
    """The columns, twist and bias of a Revolute loop body ``i`` from the world pose
    ``(Rcj, ocj)`` (9-tuple, 3-tuple) of its joint's child frame and the inboard twist
    ``(wp, vOp)`` (world, at the world origin); ``rv``, ``sg``: reversed, its sign."""
    for col in range(m):
        h = Hc[i]
        ang = _mv(Rcj, h[0, col], h[1, col], h[2, col])
        lin = _mv(Rcj, h[3, col], h[4, col], h[5, col])
        for r in range(3):
            Wc[i, r, col] = sg * ang[r]
            Lc[i, r, col] = sg * lin[r]
    for r in range(3):
        oc[i, r] = ocj[r]
    if not with_v:
        for r in range(3):
            wb[i, r] = 0.0
            vOb[i, r] = 0.0
        return
    wj0 = wj1 = wj2 = t30 = t31 = t32 = 0.0
    for col in range(m):
        vc = v[vo[i] + col]
        wj0 += Wc[i, 0, col] * vc
        wj1 += Wc[i, 1, col] * vc
        wj2 += Wc[i, 2, col] * vc
        t30 += Lc[i, 0, col] * vc
        t31 += Lc[i, 1, col] * vc
        t32 += Lc[i, 2, col] * vc
    t4 = _cr(wj0, wj1, wj2, ocj[0], ocj[1], ocj[2])
    uO = (t30 - t4[0], t31 - t4[1], t32 - t4[2])
    wi = (wp[0] + wj0, wp[1] + wj1, wp[2] + wj2)
    vi = (vOp[0] + uO[0], vOp[1] + uO[1], vOp[2] + uO[2])
    for r in range(3):
        wb[i, r] = wi[r]
        vOb[i, r] = vi[r]
    # carrier of the child frame: this body, or the inboard one when reversed
    wB = wp if rv else wi
    vB = vOp if rv else vi
    # X c_j (signed) at the world origin, c_j = 0 (the products kept: the same numbers)
    cw = _mv(Rcj, 0.0, 0.0, 0.0)
    cw = (sg * cw[0], sg * cw[1], sg * cw[2])
    cl = _mv(Rcj, 0.0, 0.0, 0.0)
    t4 = _cr(cw[0], cw[1], cw[2], ocj[0], ocj[1], ocj[2])
    cl = (sg * cl[0] - t4[0], sg * cl[1] - t4[1], sg * cl[2] - t4[2])
    t3 = _cr(wB[0], wB[1], wB[2], wj0, wj1, wj2)
    for r in range(3):
        bias[i, r] = cw[r] + t3[r]
    t3 = _cr(wB[0], wB[1], wB[2], uO[0], uO[1], uO[2])
    t4 = _cr(vB[0], vB[1], vB[2], wj0, wj1, wj2)
    for r in range(3):
        bias[i, 3 + r] = cl[r] + t3[r] + t4[r]


@njit(cache=True, _nrt=False)
def loop_kinematics(
    inb,
    code,
    prm,
    Hc,
    Wcst,
    rev,
    Fp,
    fp,
    Fc,
    fc,
    qo,
    nq,
    vo,
    nv,
    q,
    v,
    with_v,
    Rb,
    rb,
    wb,
    vOb,
    Wc,
    Lc,
    oc,
    bias,
    w3,
    w33,
    w66,
    w6,
):
    """One pass over the loop bodies (see the module docstring); arrays written in place.

    ``w3`` (>= 16, 3), ``w33`` (>= 7, 3, 3), ``w66`` (>= 2, 6, 6), ``w6`` (>= 1, 6): scratch
    (:func:`work_arrays`), overwritten."""
    n = inb.shape[0]
    # scratch from the caller's work arrays (no allocation per call): 3x3 matrices,
    # 6x6 joint constants, 3- and 6-vectors
    Rj, R2, A, Rrel, Rcj, Rp, Rc0 = w33[0], w33[1], w33[2], w33[3], w33[4], w33[5], w33[6]
    H, Wj, cj = w66[0], w66[1], w6[0]
    pj, a, prel, ocj, wj, uO, t3, t4 = w3[0], w3[1], w3[2], w3[3], w3[4], w3[5], w3[6], w3[7]
    rp, wp, vOp, rc0, wB, vB, cw, cl = w3[8], w3[9], w3[10], w3[11], w3[12], w3[13], w3[14], w3[15]
    for i in range(n):
        k = inb[i]
        m = nv[i]
        if code[i] == REVOLUTE:
            _revolute_body(
                i, k, Hc, rev, Fp, fp, Fc, fc, qo, vo, m, q, v, with_v, Rb, rb, wb, vOb,
                Wc, Lc, oc, bias,
            )  # fmt: skip
            continue
        for r in range(3):
            for s in range(3):
                Rp[r, s] = (1.0 if r == s else 0.0) if k < 0 else Rb[k, r, s]
            rp[r] = 0.0 if k < 0 else rb[k, r]
            wp[r] = 0.0 if k < 0 else wb[k, r]
            vOp[r] = 0.0 if k < 0 else vOb[k, r]
        qi = q[qo[i] : qo[i] + nq[i]]
        vi = v[vo[i] : vo[i] + m]
        joint_kinematics(
            code[i], prm[i], prm[i], qi, vi, Rj, pj, H, Wj, cj, R2, True, Hc[i], Wcst[i]
        )
        # declared pose of the child body in the parent body: Fp (Rj, pj) Fc^-1
        for r in range(3):
            for s in range(3):
                A[r, s] = Fp[i, r, 0] * Rj[0, s] + Fp[i, r, 1] * Rj[1, s] + Fp[i, r, 2] * Rj[2, s]
            a[r] = fp[i, r] + Fp[i, r, 0] * pj[0] + Fp[i, r, 1] * pj[1] + Fp[i, r, 2] * pj[2]
        # (A, a) o Fc^-1 = (A Fc^T, a - A Fc^T fc)
        for r in range(3):
            for s in range(3):
                Rrel[r, s] = A[r, 0] * Fc[i, s, 0] + A[r, 1] * Fc[i, s, 1] + A[r, 2] * Fc[i, s, 2]
        for r in range(3):
            prel[r] = a[r] - (Rrel[r, 0] * fc[i, 0] + Rrel[r, 1] * fc[i, 1] + Rrel[r, 2] * fc[i, 2])
        if rev[i]:
            # outboard = declared parent: inverse pose
            for r in range(3):
                for s in range(3):
                    A[r, s] = Rrel[s, r]
            for r in range(3):
                a[r] = -(A[r, 0] * prel[0] + A[r, 1] * prel[1] + A[r, 2] * prel[2])
            for r in range(3):
                prel[r] = a[r]
                for s in range(3):
                    Rrel[r, s] = A[r, s]
        for r in range(3):
            for s in range(3):
                Rb[i, r, s] = Rp[r, 0] * Rrel[0, s] + Rp[r, 1] * Rrel[1, s] + Rp[r, 2] * Rrel[2, s]
            rb[i, r] = rp[r] + Rp[r, 0] * prel[0] + Rp[r, 1] * prel[1] + Rp[r, 2] * prel[2]
        # world frame of the joint's child frame (on this body, or on the inboard if reversed)
        for r in range(3):
            for s in range(3):
                Rc0[r, s] = Rp[r, s] if rev[i] else Rb[i, r, s]
            rc0[r] = rp[r] if rev[i] else rb[i, r]
        for r in range(3):
            for s in range(3):
                Rcj[r, s] = (
                    Rc0[r, 0] * Fc[i, 0, s] + Rc0[r, 1] * Fc[i, 1, s] + Rc0[r, 2] * Fc[i, 2, s]
                )
            ocj[r] = rc0[r] + Rc0[r, 0] * fc[i, 0] + Rc0[r, 1] * fc[i, 1] + Rc0[r, 2] * fc[i, 2]
        sg = -1.0 if rev[i] else 1.0
        for col in range(m):
            for r in range(3):
                Wc[i, r, col] = sg * (
                    Rcj[r, 0] * H[0, col] + Rcj[r, 1] * H[1, col] + Rcj[r, 2] * H[2, col]
                )
                Lc[i, r, col] = sg * (
                    Rcj[r, 0] * H[3, col] + Rcj[r, 1] * H[4, col] + Rcj[r, 2] * H[5, col]
                )
        for r in range(3):
            oc[i, r] = ocj[r]
        if not with_v:
            for r in range(3):
                wb[i, r] = 0.0
                vOb[i, r] = 0.0
            continue
        for r in range(3):
            wj[r] = 0.0
            t3[r] = 0.0
            for col in range(m):
                wj[r] += Wc[i, r, col] * v[vo[i] + col]
                t3[r] += Lc[i, r, col] * v[vo[i] + col]
        _cross(wj, ocj, t4)
        for r in range(3):
            uO[r] = t3[r] - t4[r]
            wb[i, r] = wp[r] + wj[r]
            vOb[i, r] = vOp[r] + uO[r]
        # carrier of the child frame: this body, or the inboard one when reversed
        for r in range(3):
            wB[r] = wp[r] if rev[i] else wb[i, r]
            vB[r] = vOp[r] if rev[i] else vOb[i, r]
        # X c_j (signed) at the world origin
        for r in range(3):
            cw[r] = sg * (Rcj[r, 0] * cj[0] + Rcj[r, 1] * cj[1] + Rcj[r, 2] * cj[2])
            cl[r] = sg * (Rcj[r, 0] * cj[3] + Rcj[r, 1] * cj[4] + Rcj[r, 2] * cj[5])
        _cross(cw, ocj, t4)
        for r in range(3):
            cl[r] -= t4[r]
        _cross(wB, wj, t3)
        for r in range(3):
            bias[i, r] = cw[r] + t3[r]
        _cross(wB, uO, t3)
        _cross(vB, wj, t4)
        for r in range(3):
            bias[i, 3 + r] = cl[r] + t3[r] + t4[r]


@njit(cache=True, inline="always")
def tree_loop_kinematics(lab, inb, Hc, Fc, fc, vo, nv, Rr, Pr, v, with_v, Rb, rb, wb, vOb,
                         Wc, Lc, oc, bias):  # fmt: skip
    """:func:`loop_kinematics` from the tree solver's relative poses of the same state, for
    loops of Revolute joints that are not reversed (:func:`tree_labels`).

    ``lab[0, i]``: the tree label of loop body ``i``, ``lab[1, i]`` 1 where it carries a
    cut joint's frame, else 0; ``Rr``, ``Pr``: the tree's ``R_REL``,
    ``P_REL`` (the pose of each label's joint child frame ``e_k`` in its parent's ``e_p``;
    ``e_0`` = world), as the last tree pass left them. One pass outwards chains the world
    pose of every ``e_k`` (``R_W = R_W,p R_REL``: one 3x3 product per body, no cos/sin);
    the joint's columns, twist and bias follow as in :func:`loop_kinematics`. ``Rb``,
    ``rb`` hold the world pose of ``e_k`` (the joint's child frame), and of the bodies
    that carry a cut frame their own world pose ``(R_W Fc^T, o - R_W Fc^T fc)``: the only
    ones the rows read. The rest is :func:`loop_kinematics`' to round-off."""
    n = inb.shape[0]
    for i in range(n):
        k = inb[i]
        if k < 0:
            Rp = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
            rp = (0.0, 0.0, 0.0)
            wp = (0.0, 0.0, 0.0)
            vOp = (0.0, 0.0, 0.0)
        else:  # Rb, rb hold the inboard's e frame until the end of the pass
            Rp = _ld3(Rb, k)
            rp = (rb[k, 0], rb[k, 1], rb[k, 2])
            wp = (wb[k, 0], wb[k, 1], wb[k, 2])
            vOp = (vOb[k, 0], vOb[k, 1], vOb[k, 2])
        t = lab[0, i]
        Re = _mm(Rp, _ld3(Rr, t))
        oe = _aff(rp, Rp, Pr[t, 0], Pr[t, 1], Pr[t, 2])
        for r in range(3):
            for s in range(3):
                Rb[i, r, s] = Re[3 * r + s]
            rb[i, r] = oe[r]
        _revolute_motion(
            i, Hc, vo, nv[i], v, with_v, False, 1.0, Re, oe, wp, vOp, wb, vOb, Wc, Lc, oc, bias
        )
    for i in range(n):
        if lab[1, i] == 0:
            continue
        # body pose: e_k o (Fc, fc)^-1
        R = _mmT(_ld3(Rb, i), _ld3(Fc, i))
        t3 = _mv(R, fc[i, 0], fc[i, 1], fc[i, 2])
        for r in range(3):
            for s in range(3):
                Rb[i, r, s] = R[3 * r + s]
            rb[i, r] = rb[i, r] - t3[r]


@njit(cache=True, inline="always")
def path_terms(idx, sign, vo, nv, Wc, Lc, oc, bias, pc, RcT, with_v, Jrel, bsp):
    """``J_rel`` (c axes at ``pc``) and the summed spatial bias of one cut joint."""
    for r in range(6):
        bsp[r] = 0.0
        for j in range(Jrel.shape[1]):
            Jrel[r, j] = 0.0
    # the rotation and the lever as values (stores to Jrel cannot alias them)
    Rt = _ld9(RcT)
    for t in range(idx.shape[0]):
        i = idx[t]
        sg = sign[t]
        d0, d1, d2 = pc[0] - oc[i, 0], pc[1] - oc[i, 1], pc[2] - oc[i, 2]
        for col in range(nv[i]):
            w0, w1, w2 = Wc[i, 0, col], Wc[i, 1, col], Wc[i, 2, col]
            va0 = Lc[i, 0, col] + w1 * d2 - w2 * d1
            va1 = Lc[i, 1, col] + w2 * d0 - w0 * d2
            va2 = Lc[i, 2, col] + w0 * d1 - w1 * d0
            ang = _mv(Rt, w0, w1, w2)
            lin = _mv(Rt, va0, va1, va2)
            jc = vo[i] + col
            for r in range(3):
                Jrel[r, jc] += sg * ang[r]
                Jrel[3 + r, jc] += sg * lin[r]
        if with_v:
            for r in range(6):
                bsp[r] += sg * bias[i, r]


@njit(cache=True, inline="always")
def cut_rows(
    E, F, G, Rp, pp, Rc, pc, Jrel, bsp, with_v, wP, vOP, wC, vOC, phi, J, gamma, R, d, Vrel, D,
    w3, RtF, b,
):  # fmt: skip
    """Equations of one cut joint (see :meth:`CutJointConstraints._cut_rows`), in place.

    ``phi`` (m,), ``J`` (m, nv), ``gamma`` (m,) are the joint's row blocks; ``R``,
    ``d``, ``Vrel`` (6,) and ``D`` (m, 6) are returned through the given arrays;
    ``w3`` (>= 12, 3), ``RtF`` (>= rotation rows, 3), ``b`` (6,): scratch.
    """
    nt = E.shape[0]
    nr = F.shape[0]
    x, s_, ww, uw, t1, t2 = w3[0], w3[1], w3[2], w3[3], w3[4], w3[5]
    da, a1, a2, dw, du, sdot = w3[6], w3[7], w3[8], w3[9], w3[10], w3[11]
    for r in range(3):
        for s in range(3):
            R[r, s] = Rp[0, r] * Rc[0, s] + Rp[1, r] * Rc[1, s] + Rp[2, r] * Rc[2, s]
    for r in range(3):
        x[r] = pc[r] - pp[r]
    for r in range(3):
        d[r] = Rp[0, r] * x[0] + Rp[1, r] * x[1] + Rp[2, r] * x[2]
    for r in range(3):
        s_[r] = R[0, r] * d[0] + R[1, r] * d[1] + R[2, r] * d[2]
    for k in range(D.shape[0]):
        for r in range(6):
            D[k, r] = 0.0
    for k in range(nr):
        for r in range(3):
            RtF[k, r] = R[0, r] * F[k, 0] + R[1, r] * F[k, 1] + R[2, r] * F[k, 2]
    for k in range(nt):
        e = E[k]
        phi[k] = e[0] * s_[0] + e[1] * s_[1] + e[2] * s_[2]
        D[k, 0] = e[1] * s_[2] - e[2] * s_[1]
        D[k, 1] = e[2] * s_[0] - e[0] * s_[2]
        D[k, 2] = e[0] * s_[1] - e[1] * s_[0]
        D[k, 3] = e[0]
        D[k, 4] = e[1]
        D[k, 5] = e[2]
    for k in range(nr):
        g = G[k]
        f = RtF[k]
        phi[nt + k] = f[0] * g[0] + f[1] * g[1] + f[2] * g[2]
        D[nt + k, 0] = g[1] * f[2] - g[2] * f[1]
        D[nt + k, 1] = g[2] * f[0] - g[0] * f[2]
        D[nt + k, 2] = g[0] * f[1] - g[1] * f[0]
    m = nt + nr
    nv = Jrel.shape[1]
    for k in range(m):
        # the row of D as values (stores to J cannot alias them)
        e0, e1, e2, e3, e4, e5 = D[k, 0], D[k, 1], D[k, 2], D[k, 3], D[k, 4], D[k, 5]
        for j in range(nv):
            acc = 0.0
            acc += e0 * Jrel[0, j]
            acc += e1 * Jrel[1, j]
            acc += e2 * Jrel[2, j]
            acc += e3 * Jrel[3, j]
            acc += e4 * Jrel[4, j]
            acc += e5 * Jrel[5, j]
            J[k, j] = acc
    if not with_v:
        return
    _cross(wC, pc, t1)
    _cross(wP, pc, t2)
    for r in range(3):
        ww[r] = wC[r] - wP[r]
        uw[r] = vOC[r] + t1[r] - vOP[r] - t2[r]
    for r in range(3):
        Vrel[r] = Rc[0, r] * ww[0] + Rc[1, r] * ww[1] + Rc[2, r] * ww[2]
        Vrel[3 + r] = Rc[0, r] * uw[0] + Rc[1, r] * uw[1] + Rc[2, r] * uw[2]
    w = Vrel[0:3]
    u = Vrel[3:6]
    # bias of the relative acceleration: spatial (world origin) -> c axes at p_c
    dal = bsp[0:3]
    _cross(dal, pc, t1)
    _cross(wC, pc, a1)
    for r in range(3):
        a1[r] += vOC[r]
    _cross(wC, a1, a2)
    for r in range(3):
        da[r] = bsp[3 + r] + t1[r] + a2[r]
    _cross(wP, pc, a1)
    for r in range(3):
        a1[r] += vOP[r]
    _cross(wP, a1, a2)
    for r in range(3):
        da[r] -= a2[r]
    _cross(wC, ww, t1)
    for r in range(3):
        dw[r] = dal[r] - t1[r]
    _cross(wP, uw, t1)
    _cross(wC, uw, t2)
    for r in range(3):
        du[r] = da[r] - t1[r] - t2[r]
    for r in range(3):
        b[r] = Rc[0, r] * dw[0] + Rc[1, r] * dw[1] + Rc[2, r] * dw[2]
        b[3 + r] = Rc[0, r] * du[0] + Rc[1, r] * du[1] + Rc[2, r] * du[2]
    for k in range(m):
        acc = 0.0
        for r in range(6):
            acc += D[k, r] * b[r]
        gamma[k] = -acc
    _cross(s_, w, t1)
    for r in range(3):
        sdot[r] = u[r] + t1[r]
    _cross(sdot, w, t2)
    for k in range(nt):
        gamma[k] -= E[k, 0] * t2[0] + E[k, 1] * t2[1] + E[k, 2] * t2[2]
    for k in range(nr):
        _cross(w, G[k], t1)
        _cross(w, t1, t2)
        gamma[nt + k] -= RtF[k, 0] * t2[0] + RtF[k, 1] * t2[1] + RtF[k, 2] * t2[2]


@njit(cache=True, inline="always")
def _frame_of(i, F, f, Rb, rb, R, p):
    """World pose ``(R, p)`` of the frame ``(F, f)`` (body axes) of loop body ``i``
    (``i < 0``: ground)."""
    for r in range(3):
        for s in range(3):
            if i < 0:
                R[r, s] = F[r, s]
            else:
                R[r, s] = Rb[i, r, 0] * F[0, s] + Rb[i, r, 1] * F[1, s] + Rb[i, r, 2] * F[2, s]
        if i < 0:
            p[r] = f[r]
        else:
            p[r] = rb[i, r] + Rb[i, r, 0] * f[0] + Rb[i, r, 1] * f[1] + Rb[i, r, 2] * f[2]


# unrolled: cuts_eval repeats loop_kinematics' flat argument list on purpose: numba
# kernels take the arrays one by one (CutJointConstraints.compiled_args packs them in
# this order, and recursive/_nbloops.py passes them on inside its compiled loop)
@njit(cache=True, _nrt=False)
def cuts_eval(
    inb,
    code,
    prm,
    Hc,
    Wcst,
    rev,
    Fp,
    fp,
    Fc,
    fc,
    qo,
    nq,
    vo,
    nv,
    Rb,
    rb,
    wb,
    vOb,
    Wc,
    Lc,
    oc,
    bias,
    cI,
    cF,
    cf,
    pidx,
    psgn,
    E,
    F,
    G,
    Dall,
    Rcs,
    pcs,
    work,
    q,
    v,
    with_v,
    phi,
    J,
    gamma,
):
    """Rows of every cut joint at ``(q, v)``: :func:`loop_kinematics`, then per cut joint
    :func:`path_terms` and :func:`cut_rows` (the loop of
    :meth:`flexmbd.constraints.cut.CutJointConstraints._eval` in one call).

    Per cut joint ``c``: ``cI[c] = (loop index of P, of C, first row, translation rows,
    rotation rows, first path entry, path length, first E row, first F/G row)`` (loop
    index -1: ground), ``cF[c, 0|1]``, ``cf[c, 0|1]`` the parent / child joint frame on
    P / C; ``pidx``, ``psgn`` the packed paths, ``E``, ``F``, ``G`` the packed row
    constants. ``phi``, ``J``, ``gamma`` (cut rows first) are written in place, and per
    cut joint its constraint directions ``D`` (rows of ``Dall``, child axes at the child
    frame origin) and the world pose ``(Rcs[c], pcs[c])`` of its child frame.
    ``work``: the scratch arrays of :func:`work_arrays` (no allocation per call).
    """
    w3, w33, w66, w6, Jrel = work
    loop_kinematics(
        inb, code, prm, Hc, Wcst, rev, Fp, fp, Fc, fc, qo, nq, vo, nv, q, v, with_v,
        Rb, rb, wb, vOb, Wc, Lc, oc, bias, w3, w33, w66, w6,
    )  # fmt: skip
    cuts_rows(
        vo, nv, Rb, rb, wb, vOb, Wc, Lc, oc, bias, cI, cF, cf, pidx, psgn, E, F, G, Dall,
        Rcs, pcs, work, with_v, phi, J, gamma,
    )  # fmt: skip


@njit(cache=True, inline="always")
def cuts_rows(vo, nv, Rb, rb, wb, vOb, Wc, Lc, oc, bias, cI, cF, cf, pidx, psgn, E, F, G,
              Dall, Rcs, pcs, work, with_v, phi, J, gamma):  # fmt: skip
    """The part of :func:`cuts_eval` after the loop kinematics (the loop bodies' outputs
    ``Rb`` ... ``bias`` of :func:`loop_kinematics` or :func:`tree_loop_kinematics`): per
    cut joint :func:`path_terms` and :func:`cut_rows`."""
    w3, w33, w66, w6, Jrel = work
    f33, f3 = W33_FRAMES, W3_FRAMES
    Rp, Rc, RcT, R, RtF = w33[f33], w33[f33 + 1], w33[f33 + 2], w33[f33 + 3], w33[W33_RTF]
    pp, pc, d, z3 = w3[f3], w3[f3 + 1], w3[f3 + 2], w3[f3 + 3]
    bsp, Vrel, b = w6[1], w6[2], w6[W6_B]
    cw3 = w3[W3_ROWS:W3_END]
    for r in range(3):
        z3[r] = 0.0
    for c in range(cI.shape[0]):
        iP, iC, r0, nt, nr = cI[c, 0], cI[c, 1], cI[c, 2], cI[c, 3], cI[c, 4]
        po, pl, eo, go = cI[c, 5], cI[c, 6], cI[c, 7], cI[c, 8]
        _frame_of(iP, cF[c, 0], cf[c, 0], Rb, rb, Rp, pp)
        _frame_of(iC, cF[c, 1], cf[c, 1], Rb, rb, Rc, pc)
        for r in range(3):
            for s in range(3):
                RcT[r, s] = Rc[s, r]
        path_terms(
            pidx[po : po + pl], psgn[po : po + pl], vo, nv, Wc, Lc, oc, bias, pc, RcT,
            with_v, Jrel, bsp,
        )  # fmt: skip
        m = nt + nr
        D = Dall[r0 : r0 + m]
        for r in range(3):
            pcs[c, r] = pc[r]
            for s in range(3):
                Rcs[c, r, s] = Rc[r, s]
        wP = z3 if iP < 0 else wb[iP]
        vOP = z3 if iP < 0 else vOb[iP]
        wC = z3 if iC < 0 else wb[iC]
        vOC = z3 if iC < 0 else vOb[iC]
        cut_rows(
            E[eo : eo + nt], F[go : go + nr], G[go : go + nr], Rp, pp, Rc, pc, Jrel, bsp,
            with_v, wP, vOP, wC, vOC, phi[r0 : r0 + m], J[r0 : r0 + m], gamma[r0 : r0 + m],
            R, d, Vrel, D, cw3, RtF, b,
        )  # fmt: skip


def work_arrays(nv):
    """Scratch arrays of :func:`cuts_eval` for ``nv`` tree speeds: ``(w3, w33, w66, w6,
    Jrel)`` (3-vectors, 3x3 matrices, 6x6 matrices, 6-vectors, the relative Jacobian
    (6, nv)), allocated once and passed to every call."""
    return (
        np.zeros((W3_END, 3)),
        np.zeros((W33_END, 3, 3)),
        np.zeros((W66_END, 6, 6)),
        np.zeros((W6_END, 6)),
        np.zeros((6, nv)),
    )
