"""Compiled closed loops on a rigid tree (numba): the projected forward dynamics and the
position / velocity correction of :class:`flexmbd.recursive.loops.LoopSystem` in one call
each, for regular configurations, with the force elements of a force table
(:mod:`flexmbd.recursive._nbforces`); whole RK4 steps (:func:`loop_rk4_step`) and
DOP853 steps (:func:`loop_rk_step`, the adaptive integrators' correction inside
every evaluation: :func:`loop_rhs`).

Both take the tree's packed model and workspace (``Ib``, ``buf``:
:func:`flexmbd.recursive._kernels.qdd_reactions`), the cut joints' arguments
(:meth:`flexmbd.constraints.cut.CutJointConstraints.compiled_args`, evaluated by
:func:`flexmbd.constraints._nbloop.cuts_eval`) and ``sel``, the independent rows that the
last pivoted QR of the projector found at a corrected state
(:class:`flexmbd.constraints.projection.Projector`, ``fast_rows``). They solve the same
equations as the projector's fast path (Cholesky factorizations of ``J_I J_I^T`` and
``J_I M^-1 J_I^T``, one step of iterative refinement) with the tree solver's ``M^-1``
columns, so a loop costs a few tree solves and no Python.

The correction also checks that the selection still is the one the projector's pivoted
QR would make at the corrected state, with a margin: the pivoted Cholesky of ``J J^T``
(whose pivots are the QR's ``|R_kk|``) picks the same rows, the last of them above
``guard`` times the rank threshold and the next below it divided by ``guard``.
Inside that margin it replays the projector's column-pivoted QR itself
(:func:`_qr_selects`: the same pivots and threshold) and keeps the rows where the QR
would. Otherwise (a weak direction near a singular configuration, a rank change,
another choice of rows, a tie within round-off) it returns a nonzero status and the
caller takes the projector's QR path.
"""

import math

import numpy as np
from numba import types
from numba.extending import overload

from .._jit import njit
from ..constraints._nbloop import _ld9, cuts_eval, cuts_rows, tree_loop_kinematics
from ..integrators.stepper import (  # noqa: F401 - the block stop codes, re-exported
    BLOCK_DONE,
    BLOCK_HANDBACK,
    BLOCK_NONFINITE,
    BLOCK_SAMPLE,
    BLOCK_STALL,
)
from . import _flexkernels as FK
from . import _kernels as K
from ._nbforces import sample_energies, sample_history, set_clock, tree_loaded

#: status codes: the QR path must decide (selection no longer valid), the tree solver
#: failed, a factorization of the constraint rows failed
NEEDS_QR, TREE_FAILED, SINGULAR_ROWS = 1, 2, 3


@njit(cache=True)
def _chol(A, k):
    """In-place Cholesky ``A = L L^T`` (lower triangle); returns min and max pivot, or
    (-1, -1) if ``A`` is not positive definite."""
    lo, hi = np.inf, 0.0
    for j in range(k):
        s = A[j, j]
        for p in range(j):
            s -= A[j, p] * A[j, p]
        if not s > 0.0:
            return -1.0, -1.0
        d = np.sqrt(s)
        A[j, j] = d
        lo, hi = min(lo, d), max(hi, d)
        for i in range(j + 1, k):
            s = A[i, j]
            for p in range(j):
                s -= A[i, p] * A[j, p]
            A[i, j] = s / d
    return lo, hi


@njit(cache=True)
def _chol_solve(L, b, k):
    """Solve ``L L^T x = b`` in place."""
    for i in range(k):
        s = b[i]
        for p in range(i):
            s -= L[i, p] * b[p]
        b[i] = s / L[i, i]
    for i in range(k - 1, -1, -1):
        s = b[i]
        for p in range(i + 1, k):
            s -= L[p, i] * b[p]
        b[i] = s / L[i, i]


@njit(cache=True)
def _gram_factor(C, Y, A, k, nv):
    """``A = C Y^T`` (k x k; ``Y = M^-1 C^T`` by rows), its symmetric part (as the
    projector's factorization sees it) factored in place by :func:`_chol`; returns the
    smallest pivot (< 0: not positive definite)."""
    for a in range(k):
        for b in range(k):
            s = 0.0
            for j in range(nv):
                s += C[a, j] * Y[b, j]
            A[a, b] = s
    for a in range(k):
        for b in range(a):
            s = 0.5 * (A[a, b] + A[b, a])
            A[a, b] = s
            A[b, a] = s
    lo, _ = _chol(A, k)
    return lo


@njit(cache=True)
def _refined_solve(C, Y, A, b, qdd, x, r, k, nv):
    """``x`` (k,) with ``(C M^-1 C^T) x = b - C qdd`` on the factor ``A`` of
    :func:`_gram_factor`, then one step of iterative refinement; ``qdd += Y^T x`` in
    place (``r``: k-vector scratch)."""
    for a in range(k):
        x[a] = 0.0
    for _it in range(2):  # solve, then one step of iterative refinement
        for a in range(k):
            s = b[a]
            for j in range(nv):
                s -= C[a, j] * qdd[j]
            r[a] = s
        _chol_solve(A, r, k)
        for a in range(k):
            x[a] += r[a]
        for j in range(nv):
            s = 0.0
            for a in range(k):
                s += Y[a, j] * r[a]
            qdd[j] += s


@njit(cache=True)
def _gram(J, sel, A):
    """``A = J_I J_I^T`` of the rows ``sel``."""
    k = sel.shape[0]
    nv = J.shape[1]
    for a in range(k):
        for b in range(a + 1):
            s = 0.0
            for j in range(nv):
                s += J[sel[a], j] * J[sel[b], j]
            A[a, b] = s
            A[b, a] = s


@njit(cache=True)
def _min_norm_step(J, sel, L, rhs, out):
    """``out = J_I^T (J_I J_I^T)^-1 rhs_I`` with the factor ``L`` of :func:`_gram`."""
    k = sel.shape[0]
    x = np.empty(k)
    for a in range(k):
        x[a] = rhs[sel[a]]
    _chol_solve(L, x, k)
    for j in range(J.shape[1]):
        s = 0.0
        for a in range(k):
            s += J[sel[a], j] * x[a]
        out[j] = s


@njit(cache=True)
def _same_rank_decision(J, sel, rtol, guard):
    """Whether the projector's pivoted QR of ``J^T`` would select the rows ``sel`` with a
    clear margin: the pivoted Cholesky of ``J J^T`` (its pivots are the QR's ``|R_kk|``)
    picks the rows of ``sel``, its ``k``-th pivot is above ``guard rtol |R_11|`` and the
    next one below ``rtol |R_11| / guard`` (``k = len(sel)``). Where that margin test
    refuses, the projector's own decision is replayed (:func:`_qr_selects`)."""
    if _margin_decision(J, sel, rtol, guard):
        return True
    return _qr_selects(J, sel, rtol)


@njit(cache=True)
def _margin_decision(J, sel, rtol, guard):
    """The margin test of :func:`_same_rank_decision` (pivoted Cholesky of ``J J^T``).

    Left-looking: only the entries of ``J J^T`` that the pivots read are formed (the
    diagonal and each pivot's row and column), each by the same subtractions in the same
    order as the right-looking elimination of the whole Schur complement, so the same
    numbers and the same decision (pivot ``t``'s multipliers ``W[2 + t]``, its row
    ``W[2 + ns + t]``)."""
    m, nv = J.shape
    k = sel.shape[0]
    ns = min(k + 1, m)
    W = np.empty((2 * ns + 2, m))
    d, used = W[0], W[1]  # the remaining pivots A_ss; 1 where a row was taken
    for a in range(m):
        s = 0.0
        for j in range(nv):
            s += J[a, j] * J[a, j]
        d[a] = s
        used[a] = 0.0
    r11 = 0.0
    for step in range(ns):
        best, bi = -1.0, -1
        for a in range(m):
            if used[a] == 0.0 and d[a] > best:
                best, bi = d[a], a
        p = np.sqrt(max(best, 0.0))
        if step == 0:
            r11 = p
            if r11 <= 0.0:
                return False
        if step == k:
            return p <= rtol * r11 / guard
        if p < guard * rtol * r11 or bi < 0:
            return False
        used[bi] = 1.0
        if not _in_sel(sel, bi):
            return False
        _eliminate(J, W, ns, step, bi, best)
    return True


@njit(cache=True, inline="always")
def _in_sel(sel, r):
    """Whether row ``r`` is one of ``sel``."""
    for t in range(sel.shape[0]):
        if sel[t] == r:
            return True
    return False


@njit(cache=True, inline="always")
def _eliminate(J, W, ns, s, bi, best):
    """Step ``s`` of :func:`_margin_decision` with the pivot row ``bi`` (its pivot
    ``best = A_s[bi, bi]``): for every row ``x`` not yet taken, ``A_s[x, bi]`` and
    ``A_s[bi, x]`` from ``(J J^T)[x, bi]`` and the earlier pivots' multipliers and rows,
    the multiplier ``A_s[x, bi] / best``, the row entry, and ``d[x] = A_(s+1)[x, x]``."""
    m, nv = J.shape
    d, used = W[0], W[1]
    F, R = W[2 + s], W[2 + ns + s]
    for x in range(m):
        if used[x] != 0.0:
            continue
        g = 0.0
        for j in range(nv):
            g += J[x, j] * J[bi, j]
        c = g
        r = g
        for t in range(s):
            c -= W[2 + t, x] * W[2 + ns + t, bi]
            r -= W[2 + t, bi] * W[2 + ns + t, x]
        F[x] = c / best
        R[x] = r
        d[x] -= F[x] * r


#: relative round-off margin of :func:`_qr_selects`: a pivot choice between column norms,
#: or a rank decision on ``|R_kk|``, closer than this is left to the projector's QR
_QR_MARGIN = 1e-8
#: dlaqp2's norm-recomputation threshold: sqrt of LAPACK's machine epsilon (2^-53)
_TOL3Z = math.sqrt(2.0**-53)


@njit(cache=True)
def _kept_rows(J, rows):
    """The rows the projector's QR keeps (:func:`flexmbd.constraints.projection.qr_basis`:
    ``max |J_r| > 1e-14 max_r |J_r|``) ascending in ``rows[:mk]``, the dropped ones
    ascending after them; returns ``mk``, or -1 where a row's maximum lies within
    :data:`_QR_MARGIN` of that cut (the QR's own choice)."""
    m, nv = J.shape
    rmax = np.zeros(m)
    top = 0.0
    for r in range(m):
        for j in range(nv):
            rmax[r] = max(rmax[r], abs(J[r, j]))
        top = max(top, rmax[r])
    cut = 1e-14 * max(top, 1e-300)
    mk = 0
    for r in range(m):
        if abs(rmax[r] - cut) <= _QR_MARGIN * cut:
            return -1
        if rmax[r] > cut:
            rows[mk] = r
            mk += 1
    nd = mk
    for r in range(m):
        if not rmax[r] > cut:
            rows[nd] = r
            nd += 1
    return mk


@njit(cache=True)
def _pivoted_qr(J, rows, mk, steps, A, taus, d):
    """``steps`` steps of the column-pivoted Householder QR of ``A = J[rows[:mk]]^T``
    (nv, mk) as LAPACK's dgeqp3/dlaqp2 does it: the pivot is the largest partial column
    norm (the first of equal ones), the norms downdated and recomputed below
    ``sqrt(eps)``. In place: ``A`` holds ``R`` on and above the diagonal and the
    reflectors' vectors below it (``taus[i]``, 0 for none), ``rows[:mk]`` is permuted
    into pivot order, ``d[i] = |R_ii|``. Returns the first step whose pivot lies within
    :data:`_QR_MARGIN` of a tie (``steps`` if none)."""
    nv = J.shape[1]
    vn1 = np.empty(mk)
    vn2 = np.empty(mk)
    for c in range(mk):
        s = 0.0
        for j in range(nv):
            A[j, c] = J[rows[c], j]
            s += A[j, c] * A[j, c]
        vn1[c] = np.sqrt(s)
        vn2[c] = vn1[c]
    tie = steps
    for i in range(steps):
        p = i
        for c in range(i + 1, mk):
            if vn1[c] > vn1[p]:
                p = c
        for c in range(i, mk):
            if c != p and tie == steps and vn1[p] - vn1[c] <= _QR_MARGIN * vn1[p]:
                tie = i
        if p != i:
            for j in range(nv):
                A[j, p], A[j, i] = A[j, i], A[j, p]
            rows[p], rows[i] = rows[i], rows[p]
            vn1[p], vn2[p] = vn1[i], vn2[i]
        # Householder reflector of A[i:, i] (dlarfg): beta = -sign(alpha) |x|
        alpha = A[i, i]
        xn = 0.0
        for j in range(i + 1, nv):
            xn += A[j, i] * A[j, i]
        taus[i] = 0.0
        if xn > 0.0:
            beta = -math.copysign(math.sqrt(alpha * alpha + xn), alpha)
            taus[i] = (beta - alpha) / beta
            f = 1.0 / (alpha - beta)
            for j in range(i + 1, nv):
                A[j, i] *= f
            A[i, i] = 1.0
            for c in range(i + 1, mk):  # A[i:, c] -= tau v (v^T A[i:, c])
                w = 0.0
                for j in range(i, nv):
                    w += A[j, i] * A[j, c]
                w *= taus[i]
                for j in range(i, nv):
                    A[j, c] -= w * A[j, i]
            A[i, i] = beta
        d[i] = abs(A[i, i])
        # downdate the partial column norms (recompute where cancellation hits)
        for c in range(i + 1, mk):
            if vn1[c] != 0.0:
                t = max(1.0 - (abs(A[i, c]) / vn1[c]) ** 2, 0.0)
                if t * (vn1[c] / vn2[c]) ** 2 <= _TOL3Z:
                    s = 0.0
                    for j in range(i + 1, nv):
                        s += A[j, c] * A[j, c]
                    vn1[c] = np.sqrt(s)
                    vn2[c] = vn1[c]
                else:
                    vn1[c] *= np.sqrt(t)
    return tie


@njit(cache=True)
def _qr_selects(J, sel, rtol):
    """Whether the projector's decision (:func:`flexmbd.constraints.projection.qr_basis`:
    rows with ``max |J_r| <= 1e-14 max_r |J_r|`` dropped, column-pivoted Householder QR of
    the rest of ``J^T`` as LAPACK's dgeqp3/dlaqp2 does it (:func:`_pivoted_qr`), rank =
    leading ``|R_kk| > rtol |R_11|``) gives rank ``k = len(sel)`` with the pivots ``sel``
    in that order.

    Any choice within round-off of a tie or of the threshold (:data:`_QR_MARGIN`) gives
    False: the caller then takes the projector's own QR, so a True is the QR's selection
    with certainty. ``J`` (m, nv) is left unchanged."""
    m, nv = J.shape
    k = sel.shape[0]
    cols = np.empty(m, np.int64)
    mk = _kept_rows(J, cols)
    if mk < 0:
        return False
    mn = min(nv, mk)
    if k == 0 or k > mn:
        return False
    steps = min(k + 1, mn)  # the k pivots and the one that must fall below the threshold
    d = np.empty(steps)
    if _pivoted_qr(J, cols, mk, steps, np.empty((nv, mk)), np.empty(steps), d) < k:
        return False  # a pivot chosen within round-off of a tie
    for i in range(k):
        if cols[i] != sel[i]:
            return False
    if d[0] <= 1e-300:
        return False
    thr = rtol * d[0]
    for i in range(steps):
        if abs(d[i] - thr) <= _QR_MARGIN * thr:
            return False
        if i < k and d[i] <= thr:
            return False  # the rank is below k
    return k == mn or d[k] < thr  # the rank is k (else above)


@njit(cache=True)
def correct_work(nv, m, k):
    """Scratch of :func:`_correct` for ``nv`` speeds, ``m`` rows and ``k`` selected rows:
    ``(q0 (nv,), A (k, k), dq (nv,), Jv (m,))``."""
    return (np.empty(nv), np.empty((k, k)), np.empty(nv), np.empty(m))


@njit(cache=True)
def loop_correct(cargs, q, v, sel, tol, max_newton, rtol, guard, phi, J, gamma):
    """Position (normal-space Newton, minimum-norm steps on the rows ``sel``) then
    velocity correction of ``(q, v)`` in place (cut joints only, ``q += dv``
    retraction, scleronomic rows). Returns 0, or :data:`NEEDS_QR` (``q``, ``v`` then
    unchanged: the caller corrects with the QR). (:func:`_correct` with scratch of its
    own.)"""
    cw = correct_work(v.shape[0], J.shape[0], sel.shape[0])
    return _correct(cargs, q, v, sel, tol, max_newton, rtol, guard, phi, J, gamma, cw)


@njit(cache=True, inline="always")
def _copy_into(dst, src):
    """``dst[:] = src`` (1-D, same length) without a temporary."""
    for j in range(dst.shape[0]):
        dst[j] = src[j]


@njit(cache=True)
def _correct(cargs, q, v, sel, tol, max_newton, rtol, guard, phi, J, gamma, cw):
    """:func:`loop_correct` with the scratch ``cw`` of :func:`correct_work` (allocates
    only in the rank test, :func:`_same_rank_decision`)."""
    q0, A, dq, Jv = cw
    nv = v.shape[0]
    k = sel.shape[0]
    _copy_into(q0, q)
    _eval(cargs, q, v, False, phi, J, gamma)
    converged = False
    for _ in range(max_newton):
        _gram(J, sel, A)
        lo, hi = _chol(A, k)
        if lo <= 0.0:
            _copy_into(q, q0)
            return NEEDS_QR
        _min_norm_step(J, sel, A, phi, dq)
        step = 0.0
        for j in range(nv):
            q[j] -= dq[j]
            step = max(step, abs(dq[j]))
        if step <= tol:
            converged = True
            break  # the Jacobian from before this step serves the velocities
        _eval(cargs, q, v, False, phi, J, gamma)
    if not converged:
        _eval(cargs, q, v, False, phi, J, gamma)
        _gram(J, sel, A)
        lo, hi = _chol(A, k)
        if lo <= 0.0:
            _copy_into(q, q0)
            return NEEDS_QR
    # the rank and rows the QR would find at the corrected state, with a margin
    if not _same_rank_decision(J, sel, rtol, guard):
        _copy_into(q, q0)
        return NEEDS_QR
    # velocities: v -= J_I^T (J_I J_I^T)^-1 J_I v
    for r in range(Jv.shape[0]):
        Jv[r] = 0.0
    for a in range(k):
        s = 0.0
        for j in range(nv):
            s += J[sel[a], j] * v[j]
        Jv[sel[a]] = s
    _min_norm_step(J, sel, A, Jv, dq)
    for j in range(nv):
        v[j] -= dq[j]
    return 0


# Without NRT: unpacking the argument tuple costs a reference count increment and
# decrement per array otherwise (~10 ns each, 34 arrays); every callee allocates nothing.
@njit(cache=True, _nrt=False)
def _eval(cargs, q, v, with_v, phi, J, gamma):
    (inb, code, prm, Hc, Wc, rev, Fp, fp, Fc, fc, qo, nq, vo, nvj,
     Rb, rb, wb, vOb, Wcw, Lc, oc, bias, cI, cF, cf, pidx, psgn, E, F, G,
     Dall, Rcs, pcs, lab, work) = cargs  # fmt: skip
    cuts_eval(
        inb, code, prm, Hc, Wc, rev, Fp, fp, Fc, fc, qo, nq, vo, nvj,
        Rb, rb, wb, vOb, Wcw, Lc, oc, bias, cI, cF, cf, pidx, psgn, E, F, G,
        Dall, Rcs, pcs, work, q, v, with_v, phi, J, gamma,
    )  # fmt: skip


@njit(cache=True, _nrt=False)
def _eval_after_tree(Ib, buf, cargs, q, v, phi, J, gamma):
    """:func:`_eval` with speeds right after a tree pass at the same ``(q, v)``: the loop
    kinematics from the tree's relative poses (:func:`tree_loop_kinematics`) where the
    cut joints' arguments allow it (tree labels given), else the explicit pass."""
    (inb, code, prm, Hc, Wc, rev, Fp, fp, Fc, fc, qo, nq, vo, nvj,
     Rb, rb, wb, vOb, Wcw, Lc, oc, bias, cI, cF, cf, pidx, psgn, E, F, G,
     Dall, Rcs, pcs, lab, work) = cargs  # fmt: skip
    if lab[0, 0] < 0:
        _eval(cargs, q, v, True, phi, J, gamma)
        return
    Ia, Sa = K.unpack_ints(Ib)
    Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
    tree_loop_kinematics(
        lab, inb, Hc, Fc, fc, vo, nvj, R3[K.R_REL], P3[K.P_REL], v, True,
        Rb, rb, wb, vOb, Wcw, Lc, oc, bias,
    )  # fmt: skip
    cuts_rows(
        vo, nvj, Rb, rb, wb, vOb, Wcw, Lc, oc, bias, cI, cF, cf, pidx, psgn, E, F, G, Dall,
        Rcs, pcs, work, True, phi, J, gamma,
    )  # fmt: skip


# The tree solver's passes on the packed workspace. Without NRT, like the entry points of
# _kernels: the workspace views share the buffer's memory without reference counting.
@njit(cache=True, _nrt=False)
def _tree_free(Ib, buf, forces, q, v, tau, qdd, reac):
    """Free accelerations ``qdd`` (the serialized CFA) with joint forces ``tau`` and the
    force table ``forces`` (:mod:`._nbforces`)."""
    fi, ff, tau_c, S = forces
    nv = Ib[K.IB_NV]
    if fi.shape[0] == 0:
        Ia, Sa = K.unpack_ints(Ib)
        Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
        for i in range(nv):
            Jw[K.J_TAU, i] = tau[i] + tau_c[i]
        st = K.forward_dynamics(
            Ia, Sa, Mm, Vv, R3, P3, Tt, Dn, q, v, Jw, grav, Ib[K.IB_GRAV] != 0, reac, False
        )
    else:
        st = tree_loaded(Ib, buf, q, v, tau, fi, ff, tau_c, S, reac, True, True)
        Ia, Sa = K.unpack_ints(Ib)
        Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
    for i in range(nv):
        qdd[i] = Jw[K.J_QDD, i]
    return st


@njit(cache=True, _nrt=False)
def _tree_columns(Ib, buf, cols, out, af, bx, Fe):
    """``out = M^-1 cols`` (columns ``cols[c]``, rows of ``out[c]``) by the
    factorization of the last :func:`_tree_free` (the solve reads only the equivalent
    control force ``F_T``; the speeds are orthonormal: no reversed joint, no screw).

    :func:`_kernels.solve <flexmbd.recursive._kernels.solve>` for all columns in one
    sweep over the bodies (each body's matrices loaded once for every column) with the
    scratch ``af``, ``bx``, ``Fe`` (kc, N + 1, 6); the same operations per column, so
    the same values as one solve per column."""
    Ia, Sa = K.unpack_ints(Ib)
    Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
    kc = cols.shape[0]
    N = Ia.shape[1] - 1
    t6 = Vv[K.V_T6, 0]
    tv = Vv[K.V_VJ, 0]
    G = Mm[K.M_G]
    Rr = R3[K.R_REL]
    Pr = P3[K.P_REL]
    # one backward pass: e_k = H F_T ; z_k = e_k - sum_c Phi_c e_c ; a_k = G_k z_k
    for c in range(kc):
        for k in range(N + 1):
            for i in range(6):
                af[c, k, i] = 0.0
    for k in range(N, 0, -1):
        o = Ia[K.I_VO, k]
        pk = Ia[K.I_PARENT, k]
        if Ia[K.I_DIAG, k] and Ia[K.I_JT, k] == K.REVOLUTE:
            Rk = Rr[k]
            z0, z1, z2 = Rk[0, 2], Rk[1, 2], Rk[2, 2]  # loaded once for the columns
            Gk = G[k]
            for c in range(kc):
                ak = af[c, k]
                f = cols[c, o]
                if ak[3] == 0.0 and ak[4] == 0.0 and ak[5] == 0.0:
                    # only revolute children (or none): the torque part alone (the
                    # products by the zero force part add nothing)
                    x0, x1, x2 = ak[0], ak[1], ak[2] + f
                    for i in range(6):
                        ak[i] = Gk[i, 0] * x0 + Gk[i, 1] * x1 + Gk[i, 2] * x2
                else:
                    K._matvec6_vals(Gk, ak[0], ak[1], ak[2] + f, ak[3], ak[4], ak[5], ak)
                if pk > 0:
                    af[c, pk, 0] -= z0 * f
                    af[c, pk, 1] -= z1 * f
                    af[c, pk, 2] -= z2 * f
            continue
        for c in range(kc):
            e = Fe[c, k]
            ak = af[c, k]
            K.joint_force(Ia, Mm, cols[c], k, e)
            for i in range(6):
                t6[i] = ak[i] + e[i]
            K._matvec6(G[k], t6, ak)
            if pk > 0:
                K._f2p_add(Rr[k], Pr[k], e, af[c, pk], -1.0)
    # X_k = -P_k (a_k - Phi^T a_p)
    for k in range(1, N + 1):
        pk = Ia[K.I_PARENT, k]
        if Ia[K.I_DIAG, k]:
            _diag_rhs(Ia, Vv, Rr[k], Pr[k], af, bx, k, pk, kc, t6)
            continue
        for c in range(kc):
            _less_parent(Rr[k], Pr[k], af, c, k, pk, t6)
            K._proj_vec(t6, k, Ia, Mm, Vv, tv, -1.0)
            for a in range(6):
                bx[c, k, a] = tv[Ia[K.I_PERM + a, k]]
    # elimination of the right-hand sides, node system, back substitution (same schedule);
    # bx stays in the elimination order (the next pass reads it in the joint frame's)
    _schedule_columns(Ia, Sa, Mm, Dn, bx, kc)
    # eq. 28: F = H F_T + W F_S ; V̇ = G (F - sum Phi F_c) ; Q̈ = H^T (V̇ - Phi^T V̇_p)
    for c in range(kc):
        for k in range(N + 1):
            for i in range(6):
                af[c, k, i] = 0.0
    for k in range(N, 0, -1):
        pk = Ia[K.I_PARENT, k]
        rd = Ia[K.I_DIAG, k] and Ia[K.I_JT, k] == K.REVOLUTE
        o = Ia[K.I_VO, k]
        Rt = _ld9(Rr[k])  # the joint's transform as values, loaded once for the columns
        Pt = (Pr[k, 0], Pr[k, 1], Pr[k, 2])
        if rd:
            # _node_acc's revolute branch on values: F = b (the joint frame's order,
            # i_n the elimination-order slot of direction n) with the control force
            # about z; its F is not read again
            i0, i1, i2, i3, i4, i5 = _inverse_perm(Ia, k)
            for c in range(kc):
                b = bx[c, k]
                f = (b[i0], b[i1], cols[c, o] + b[i2], b[i3], b[i4], b[i5])
                ak = af[c, k]
                K._matvec6_vals(
                    G[k], ak[0] + f[0], ak[1] + f[1], ak[2] + f[2], ak[3] + f[3],
                    ak[4] + f[4], ak[5] + f[5], ak,
                )  # fmt: skip
                if pk > 0:
                    _f2p_sub(Rt, Pt, f, af[c, pk])
            continue
        p0, p1, p2 = Ia[K.I_PERM, k], Ia[K.I_PERM + 1, k], Ia[K.I_PERM + 2, k]
        p3, p4, p5 = Ia[K.I_PERM + 3, k], Ia[K.I_PERM + 4, k], Ia[K.I_PERM + 5, k]
        for c in range(kc):
            # unrolled: the back substitution of _kernels' solve (eq. 28) per column, kept
            # inline here so that the loop over the columns runs inside the body loop
            # (each body's G, R read once for all columns); the tree's own is per state.
            # bx[c, k] to the joint frame's order here (K.natural_order's copy, no pass
            # of its own)
            b = bx[c, k]
            t6[p0] = b[0]
            t6[p1] = b[1]
            t6[p2] = b[2]
            t6[p3] = b[3]
            t6[p4] = b[4]
            t6[p5] = b[5]
            F = Fe[c, k]
            K._node_acc(G[k], F, t6, af[c, k], False, 0.0)
            if pk > 0:
                _f2p_sub(Rt, Pt, F, af[c, pk])
    for k in range(1, N + 1):
        pk = Ia[K.I_PARENT, k]
        o = Ia[K.I_VO, k]
        rd = Ia[K.I_DIAG, k] and Ia[K.I_JT, k] == K.REVOLUTE
        for c in range(kc):
            if rd:
                s = af[c, k, 2]
                if pk > 0:
                    Rk = Rr[k]
                    s -= Rk[0, 2] * af[c, pk, 0] + Rk[1, 2] * af[c, pk, 1] + Rk[2, 2] * af[c, pk, 2]
                out[c, o] = s
                continue
            _less_parent(Rr[k], Pr[k], af, c, k, pk, t6)
            K.joint_qdd(Ia, Mm, k, t6, out[c])


# K.solve_schedule for the kc columns of bx with the loop over the columns inside each
# step of the schedule: the columns' chains are independent, so the processor overlaps
# them (one column at a time waits on each step's dependent chain); the same operations
# per column, so the same values
@njit(cache=True, inline="always")
def _schedule_columns(Ia, Sa, Mm, Dn, bx, kc):
    """:func:`K.solve_schedule <flexmbd.recursive._kernels.solve_schedule>` of every
    column ``bx[c]`` (kc, N + 1, 6) in place, the loop over the columns inside each step
    of the schedule (the columns' dependent chains overlap)."""
    A = Mm[K.M_A]
    YL = Mm[K.M_YL]
    YR = Mm[K.M_YR]
    ns = Sa[0]
    base = 5
    for s_ in range(ns):
        i, l, r = Sa[base + 3 * s_], Sa[base + 3 * s_ + 1], Sa[base + 3 * s_ + 2]
        five = K._step_five(Ia, i, l, r)
        for c in range(kc):
            K.eliminate_step(A, YL, YR, i, l, r, five, bx[c])
    for c in range(kc):
        K.solve_nodes(Ia, Sa, Dn, bx[c])
    for s_ in range(ns - 1, -1, -1):
        i, l, r = Sa[base + 3 * s_], Sa[base + 3 * s_ + 1], Sa[base + 3 * s_ + 2]
        five = K._step_five(Ia, i, l, r)
        for c in range(kc):
            K.back_step(A, YL, YR, i, l, r, five, bx[c])


@njit(cache=True, inline="always")
def _inverse_perm(Ia, k):
    """The slots ``(i_0, ..., i_5)`` of the directions 0 ... 5 in joint ``k``'s elimination
    order (the inverse of its permutation ``Ia[I_PERM + a, k]``)."""
    i0 = i1 = i2 = i3 = i4 = i5 = 0
    for a in range(6):
        n = Ia[K.I_PERM + a, k]
        if n == 0:
            i0 = a
        elif n == 1:
            i1 = a
        elif n == 2:
            i2 = a
        elif n == 3:
            i3 = a
        elif n == 4:
            i4 = a
        else:
            i5 = a
    return i0, i1, i2, i3, i4, i5


# unrolled: K._f2p_add with s = -1 on the transform held as values (a 9-tuple and a
# 3-tuple, loaded once for all columns: the stores to out cannot alias them)
@njit(cache=True, inline="always")
def _f2p_sub(R, p, f, out):
    """``out -= Phi f`` (``R`` row-major 9-tuple, ``p`` 3-tuple, ``f`` a 6-vector or
    6-tuple; the operations of
    :func:`K._f2p_add <flexmbd.recursive._kernels._f2p_add>` with ``s = -1``)."""
    nx = R[0] * f[0] + R[1] * f[1] + R[2] * f[2]
    ny = R[3] * f[0] + R[4] * f[1] + R[5] * f[2]
    nz = R[6] * f[0] + R[7] * f[1] + R[8] * f[2]
    fx = R[0] * f[3] + R[1] * f[4] + R[2] * f[5]
    fy = R[3] * f[3] + R[4] * f[4] + R[5] * f[5]
    fz = R[6] * f[3] + R[7] * f[4] + R[8] * f[5]
    out[0] += -1.0 * (nx + p[1] * fz - p[2] * fy)
    out[1] += -1.0 * (ny + p[2] * fx - p[0] * fz)
    out[2] += -1.0 * (nz + p[0] * fy - p[1] * fx)
    out[3] += -1.0 * fx
    out[4] += -1.0 * fy
    out[5] += -1.0 * fz


# unrolled: the joint's transform, mask and permutation loaded once for all columns (values:
# the stores to bx cannot alias them); the operations of _less_parent and the diagonal
# branch per column, so the same values
@njit(cache=True, inline="always")
def _diag_rhs(Ia, Vv, Rk, Pk, af, bx, k, pk, kc, t6):
    """``bx[c, k, a] = -mask_i (a_k - Phi_k^T a_p)_i`` (``i`` the joint's permutation of
    ``a``) for every column ``c`` of a diagonal joint ``k`` (parent ``pk``): the right-hand
    sides of :func:`_tree_columns`' chain elimination."""
    mask = Vv[K.V_MASK, k]
    p0, p1, p2 = Ia[K.I_PERM, k], Ia[K.I_PERM + 1, k], Ia[K.I_PERM + 2, k]
    p3, p4, p5 = Ia[K.I_PERM + 3, k], Ia[K.I_PERM + 4, k], Ia[K.I_PERM + 5, k]
    n0, n1, n2 = -mask[p0], -mask[p1], -mask[p2]
    n3, n4, n5 = -mask[p3], -mask[p4], -mask[p5]
    r00, r01, r02 = Rk[0, 0], Rk[0, 1], Rk[0, 2]
    r10, r11, r12 = Rk[1, 0], Rk[1, 1], Rk[1, 2]
    r20, r21, r22 = Rk[2, 0], Rk[2, 1], Rk[2, 2]
    q0, q1, q2 = Pk[0], Pk[1], Pk[2]
    for c in range(kc):
        ak = af[c, k]
        if pk > 0:  # K._m2c, then a_k minus it
            ap = af[c, pk]
            wx = ap[0]
            wy = ap[1]
            wz = ap[2]
            ux = ap[3] + wy * q2 - wz * q1
            uy = ap[4] + wz * q0 - wx * q2
            uz = ap[5] + wx * q1 - wy * q0
            t6[0] = ak[0] - (r00 * wx + r10 * wy + r20 * wz)
            t6[1] = ak[1] - (r01 * wx + r11 * wy + r21 * wz)
            t6[2] = ak[2] - (r02 * wx + r12 * wy + r22 * wz)
            t6[3] = ak[3] - (r00 * ux + r10 * uy + r20 * uz)
            t6[4] = ak[4] - (r01 * ux + r11 * uy + r21 * uz)
            t6[5] = ak[5] - (r02 * ux + r12 * uy + r22 * uz)
        else:
            for i in range(6):
                t6[i] = ak[i]
        b = bx[c, k]
        b[0] = n0 * t6[p0]
        b[1] = n1 * t6[p1]
        b[2] = n2 * t6[p2]
        b[3] = n3 * t6[p3]
        b[4] = n4 * t6[p4]
        b[5] = n5 * t6[p5]


@njit(cache=True, _nrt=False)
def _less_parent(Rk, Pk, af, c, k, pk, t6):
    """``t6 = a_k - Phi_k^T a_p`` of column ``c`` (``af`` (kc, N+1, 6); ``Rk, Pk`` the
    joint's transform from parent ``pk`` to ``k``; ``pk = 0``: the ground, ``a_p = 0``)."""
    if pk > 0:
        K._m2c(Rk, Pk, af[c, pk], t6)
        for i in range(6):
            t6[i] = af[c, k, i] - t6[i]
    else:
        for i in range(6):
            t6[i] = af[c, k, i]


@njit(cache=True)
def stage_work(k, nv, n1):
    """Scratch of :func:`_stage` for ``k`` selected rows, ``nv`` speeds and ``n1`` tree
    nodes: ``(cols, Y, af, bx, Fe, A, lam_i, r, g)`` (the rows ``J_I`` and
    ``M^-1 J_I^T`` (k, nv), the column sweep's (k, n1, 6) scratch, the k x k system and
    three k-vectors), allocated once per step."""
    return (
        np.empty((k, nv)),
        np.empty((k, nv)),
        np.empty((k, n1, 6)),
        np.empty((k, n1, 6)),
        np.empty((k, n1, 6)),
        np.empty((k, k)),
        np.empty(k),
        np.empty(k),
        np.empty(k),
    )


@njit(cache=True)
def loop_accelerations(Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac):
    """Constrained accelerations ``qdd`` (nv,) and multipliers ``lam`` (m,) at ``(q, v)``
    with joint forces ``tau`` and the force table ``forces`` (:mod:`._nbforces`): the
    tree's free accelerations, the cut rows, ``M^-1 J_I^T``
    by the tree solver and the Cholesky solve of ``J_I M^-1 J_I^T`` with one refinement
    step (the projector's fast path). Returns 0, :data:`TREE_FAILED` or
    :data:`SINGULAR_ROWS`. (:func:`_stage` with scratch of its own.)"""
    sw = stage_work(sel.shape[0], Ib[K.IB_NV], Ib[K.IB_N1])
    return _stage(Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac, sw)


# Without NRT (no allocation: the scratch sw of stage_work comes in; no reference counts
# on the argument tuples' arrays).
@njit(cache=True, _nrt=False)
def _stage(Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac, sw):
    """:func:`loop_accelerations` with the scratch ``sw`` of :func:`stage_work`."""
    cols, Y, af, bx, Fe, A, lam_i, r, g = sw
    nv = Ib[K.IB_NV]
    if _tree_free(Ib, buf, forces, q, v, tau, qdd, reac) != 0:
        return TREE_FAILED
    _eval_after_tree(Ib, buf, cargs, q, v, phi, J, gamma)
    k = sel.shape[0]
    for a in range(k):
        for j in range(nv):
            cols[a, j] = J[sel[a], j]
    _tree_columns(Ib, buf, cols, Y, af, bx, Fe)
    if _gram_factor(cols, Y, A, k, nv) < 0.0:
        return SINGULAR_ROWS
    for a in range(k):
        g[a] = gamma[sel[a]]
    _refined_solve(cols, Y, A, g, qdd, lam_i, r, k, nv)
    for a in range(lam.shape[0]):
        lam[a] = 0.0
    for a in range(k):
        lam[sel[a]] = lam_i[a]
    return 0


@njit(cache=True)
def step_work(k, nv, n1, m):
    """Scratch of one RK4 step of :func:`_rk4_step` for ``k`` selected rows, ``nv``
    speeds, ``n1`` tree nodes and ``m`` rows: ``(lam (m,), ks (4, 2 nv), yy (2 nv,),
    acc (nv,), sw, cw)`` with the stage's ``sw`` (:func:`stage_work`) and the
    correction's ``cw`` (:func:`correct_work`); allocated once per block of steps."""
    return (
        np.empty(m),
        np.empty((4, 2 * nv)),
        np.empty(2 * nv),
        np.empty(nv),
        stage_work(k, nv, n1),
        correct_work(nv, m, k),
    )


@njit(cache=True)
def loop_rk4_step(
    Ib, buf, cargs, forces, y, h, tau, sel, tol, max_newton, rtol, guard, ws, reac, TT, tix
):  # fmt: skip
    """One classical RK4 step of ``y = (q, v)`` (``q' = v``) with the accelerations of
    :func:`loop_accelerations` at every stage, then :func:`loop_correct`, in place.
    Table values that are functions of time: ``TT[c, m]`` the value ``m`` at the step's
    start (c = 0), middle (1) and end (2), written into ``forces[1][tix[m, 0], tix[m,
    1]]`` before each stage (:func:`_set_loads`; none for ``tix`` of 0 rows).

    ``ws = (phi, J, gamma)`` workspaces. Returns 0 (``y`` is the corrected state),
    :data:`NEEDS_QR` (``y`` is the uncorrected RK4 result: the caller corrects it with
    the QR) or the failure of a stage (``y`` unchanged: the caller takes the Python
    path). (:func:`_rk4_step` with scratch of its own.)"""
    tw = step_work(sel.shape[0], y.shape[0] // 2, Ib[K.IB_N1], ws[0].shape[0])
    return _rk4_step(
        Ib, buf, cargs, forces, y, h, tau, sel, tol, max_newton, rtol, guard, ws, reac, tw, TT,
        tix, 0,
    )  # fmt: skip


@njit(cache=True)
def _rk4_step(
    Ib, buf, cargs, forces, y, h, tau, sel, tol, max_newton, rtol, guard, ws, reac, tw, TT, tix,
    r0,
):  # fmt: skip
    """:func:`loop_rk4_step` with the scratch ``tw`` of :func:`step_work`, its stage
    values from the rows ``r0 ... r0 + 2`` of ``TT``."""
    st = _rk4_stages(Ib, buf, cargs, forces, y, h, tau, sel, ws, reac, tw, 0, TT, tix, r0)
    if st != 0:
        return st
    phi, J, gamma = ws
    nv = y.shape[0] // 2
    return _correct(cargs, y[:nv], y[nv:], sel, tol, max_newton, rtol, guard, phi, J, gamma, tw[5])


@njit(cache=True)
def loop_rk4_step_sampled(
    Ib, buf, cargs, forces, clab, body_row, y, h, tau, sel, tol, max_newton, rtol, guard, ws,
    reac, qdd, lam, reac_s, acc, cutF, viol, en, rw, pw, vel, TT, tix,
):  # fmt: skip
    """:func:`loop_rk4_step` that also gives the output sample at its start ``y``: the
    first stage's accelerations ``qdd`` and multipliers ``lam`` (the very numbers of
    :func:`loop_forward_dynamics` there), the violations ``viol = (max |phi|, max |J v|,
    ok)`` and, where the QR would select ``sel`` with a margin (:func:`loop_sample`;
    then ``viol[2] = 1``), the tree reactions ``reac_s``, body accelerations ``acc`` and
    cut wrenches ``cutF`` of :func:`_tree_rnea_cuts`, and the sample's row of the
    kinematics history (:func:`._nbforces.sample_history`: world poses ``rw``, ``pw``,
    twists ``vel``, energies ``en``). Returns as :func:`loop_rk4_step` (``viol[2] = 0``
    unless the sample is complete)."""
    tw = step_work(sel.shape[0], y.shape[0] // 2, Ib[K.IB_N1], ws[0].shape[0])
    return _rk4_step_sampled(
        Ib, buf, cargs, forces, clab, body_row, y, h, tau, sel, tol, max_newton, rtol, guard,
        ws, reac, qdd, lam, reac_s, acc, cutF, viol, en, rw, pw, vel, tw, TT, tix, 0,
    )  # fmt: skip


@njit(cache=True)
def _rk4_step_sampled(
    Ib, buf, cargs, forces, clab, body_row, y, h, tau, sel, tol, max_newton, rtol, guard, ws,
    reac, qdd, lam, reac_s, acc, cutF, viol, en, rw, pw, vel, tw, TT, tix, r0,
):  # fmt: skip
    """:func:`loop_rk4_step_sampled` with the scratch ``tw`` of :func:`step_work`, its
    stage values from the rows ``r0 ... r0 + 2`` of ``TT`` (the sample: the first)."""
    phi, J, gamma = ws
    nv = y.shape[0] // 2
    viol[2] = 0.0
    _set_loads(forces, TT, tix, r0)
    st = _stage(
        Ib, buf, cargs, forces, y[:nv], y[nv:], tau, sel, qdd, lam, phi, J, gamma, reac, tw[4]
    )
    if st != 0:
        return st
    viol[0], viol[1] = _violations(phi, J, y[nv:])
    if _same_rank_decision(J, sel, rtol, guard):
        _sample_reactions(Ib, buf, cargs, clab, qdd, lam, cutF, reac_s, acc, body_row)
        sample_history(Ib, buf, y[nv:], forces, en, rw, pw, vel)
        viol[2] = 1.0
    ks = tw[1]
    for i in range(nv):
        ks[0, i] = y[nv + i]
        ks[0, nv + i] = qdd[i]
    st = _rk4_stages(Ib, buf, cargs, forces, y, h, tau, sel, ws, reac, tw, 1, TT, tix, r0)
    if st != 0:
        return st
    return _correct(cargs, y[:nv], y[nv:], sel, tol, max_newton, rtol, guard, phi, J, gamma, tw[5])


# Without NRT (no allocation: the scratch tw of step_work comes in; no reference counts
# on the argument tuples' arrays).
@njit(cache=True, _nrt=False)
def _rk4_stages(Ib, buf, cargs, forces, y, h, tau, sel, ws, reac, tw, s0, TT, tix, r0):
    """The stages ``s0 ... 3`` of an RK4 step from ``y`` (for ``s0 = 1`` the first
    stage's slope ``(v, qdd)`` is already in ``ks[0]`` of the scratch ``tw`` of
    :func:`step_work`), each by :func:`_stage` with the table values of time of row
    ``r0 + (s + 1) // 2`` of ``TT`` (:func:`_set_loads`: start, middle, middle, end),
    then the update of ``y`` in place. Returns 0, or the failure of a stage (``y``
    unchanged)."""
    phi, J, gamma = ws
    lam, ks, yy, acc, sw, _cw = tw
    nv = y.shape[0] // 2
    for s in range(s0, 4):
        _rk4_stage_state(y, ks, s, h, yy)
        _set_loads(forces, TT, tix, r0 + (s + 1) // 2)
        st = _stage(
            Ib, buf, cargs, forces, yy[:nv], yy[nv:], tau, sel, acc, lam, phi, J, gamma, reac, sw
        )
        if st != 0:
            return st
        for i in range(nv):
            ks[s, i] = yy[nv + i]
            ks[s, nv + i] = acc[i]
    _rk4_update(y, ks, h)
    return 0


@njit(cache=True, inline="always")
def _set_loads(forces, TT, tix, row):
    """Write the table values that are functions of time, row ``row`` of ``TT`` (one
    column per value), into the force table's floats ``forces[1][tix[m, 0], tix[m,
    1]]`` (nothing for ``tix`` of 0 rows)."""
    ff = forces[1]
    for m in range(tix.shape[0]):
        ff[tix[m, 0], tix[m, 1]] = TT[row, m]


@njit(cache=True, inline="always")
def _rk4_stage_state(y, ks, s, h, yy):
    """RK4's stage state ``yy`` of stage ``s`` from ``y`` and the slopes ``ks`` (rows
    ``0 ... s - 1``): ``y``, ``y + h/2 k_0``, ``y + h/2 k_1``, ``y + h k_2``."""
    if s == 0:
        for i in range(y.shape[0]):
            yy[i] = y[i]
        return
    c = 1.0 if s == 3 else 0.5
    for i in range(y.shape[0]):
        yy[i] = y[i] + c * h * ks[s - 1, i]


@njit(cache=True, inline="always")
def _rk4_update(y, ks, h):
    """RK4's update of ``y`` in place from the four slopes ``ks``."""
    for i in range(y.shape[0]):
        y[i] = y[i] + (h / 6.0) * (ks[0, i] + 2.0 * ks[1, i] + 2.0 * ks[2, i] + ks[3, i])


@njit(cache=True, inline="always")
def _cut_loads(n1, R3, P3, fext, cI, clab, Dall, Rcs, pcs, lam, cutF):
    """World poses of the bodies ``1 ... n1 - 1`` after a tree pass without them, each
    cut joint's wrench ``cutF[c] = D_c^T lam_c`` (child axes at the child frame origin,
    N m and N) and ``fext`` (e_k axes at O_k) set to these wrenches on the two bodies of
    each cut joint (tree labels ``clab[c] = (P, C)``, 0: ground): ``+F`` on the child,
    ``-F`` on the parent."""
    for k in range(n1):
        for i in range(6):
            fext[k, i] = 0.0
    for c in range(cI.shape[0]):
        r0 = cI[c, 2]
        m = cI[c, 3] + cI[c, 4]
        for i in range(6):
            s = 0.0
            for a in range(m):
                s += Dall[r0 + a, i] * lam[r0 + a]
            cutF[c, i] = s
        Rc = Rcs[c]
        pc = pcs[c]
        F = cutF[c]
        n0 = Rc[0, 0] * F[0] + Rc[0, 1] * F[1] + Rc[0, 2] * F[2]
        n1_ = Rc[1, 0] * F[0] + Rc[1, 1] * F[1] + Rc[1, 2] * F[2]
        n2 = Rc[2, 0] * F[0] + Rc[2, 1] * F[1] + Rc[2, 2] * F[2]
        f0 = Rc[0, 0] * F[3] + Rc[0, 1] * F[4] + Rc[0, 2] * F[5]
        f1 = Rc[1, 0] * F[3] + Rc[1, 1] * F[4] + Rc[1, 2] * F[5]
        f2 = Rc[2, 0] * F[3] + Rc[2, 1] * F[4] + Rc[2, 2] * F[5]
        for side in range(2):
            k = clab[c, side]
            if k == 0:
                continue
            sg = 1.0 if side == 1 else -1.0  # the child gets +F, the parent -F
            Rk = R3[K.R_W, k]
            rk = P3[K.P_W, k]
            d0, d1, d2 = pc[0] - rk[0], pc[1] - rk[1], pc[2] - rk[2]
            m0 = sg * (n0 + d1 * f2 - d2 * f1)
            m1 = sg * (n1_ + d2 * f0 - d0 * f2)
            m2 = sg * (n2 + d0 * f1 - d1 * f0)
            for i in range(3):
                fext[k, i] += Rk[0, i] * m0 + Rk[1, i] * m1 + Rk[2, i] * m2
                fext[k, 3 + i] += sg * (Rk[0, i] * f0 + Rk[1, i] * f1 + Rk[2, i] * f2)


@njit(cache=True, _nrt=False)
def _tree_with_cuts(
    Ib, buf, forces, q, v, tau, cI, clab, Dall, Rcs, pcs, lam, cutF, reac, acc, body_row
):
    """The tree's forward dynamics with the force table ``forces`` and the cut-joint
    wrenches ``D^T lam`` applied to the two bodies of each cut joint (:func:`_cut_loads`):
    tree reactions ``reac``, body accelerations ``acc[body_row[k]]`` and each cut joint's
    wrench ``cutF[c]`` (child axes at the child frame origin). Returns the tree solver's
    status. For multipliers that did not come with their accelerations (the projector's
    QR at a weak state); a sample with both takes :func:`_tree_rnea_cuts`.

    Follows :func:`loop_accelerations` at the same state ``(q, v)`` (every caller's
    order): its tree pass left that state's kinematics and mass factorization in the
    workspace (the cut rows and the ``M^-1`` columns use scratch of their own), so only
    the world poses, the bias forces with the new loads, the solve and the reactions run
    here -- the same operations on the same values as a full pass."""
    Ia, Sa = K.unpack_ints(Ib)
    Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
    n1 = Ib[K.IB_N1]
    for k in range(1, n1):
        K.world_pose(R3, P3, k, Ia[K.I_PARENT, k])
    _cut_loads(n1, R3, P3, Vv[K.V_FEXT], cI, clab, Dall, Rcs, pcs, lam, cutF)
    fi, ff, tau_c, S = forces
    if tree_loaded(Ib, buf, q, v, tau, fi, ff, tau_c, S, reac, False, False) != 0:
        return -1
    for k in range(1, n1):
        K._body_acceleration(Vv, R3, P3, k, acc[body_row[k]])
    return 0


@njit(cache=True, _nrt=False)
def _tree_rnea_cuts(
    Ib, buf, cI, clab, Dall, Rcs, pcs, qdd, lam, cutF, reac, acc, body_row
):  # fmt: skip
    """Tree reactions ``reac``, body accelerations ``acc[body_row[k]]`` and cut wrenches
    ``cutF[c]`` of a sample whose accelerations ``qdd`` (nv,) and multipliers ``lam``
    came from one stage at its state (:func:`_stage`; its tree pass -- kinematics, bias
    accelerations and bias forces with the force table -- still in the workspace): the
    world poses, the cut wrenches as loads (:func:`_cut_loads`), then one recursive
    Newton-Euler sweep with the known accelerations instead of a second tree solve.
    Forward: the body accelerations ``a_k = Phi_k^T a_p + S_k qdd_k`` (e_k axes, without
    the bias accelerations); backward: ``F_k = I_k a_k - fext_k + sum_c Phi_c F_c``, so
    that ``F_k + fb_k`` (``fb`` the stage's bias forces) is the joint's wrench on body k
    (:func:`flexmbd.recursive._kernels.reactions_into`): the reactions are the
    Newton-Euler wrenches of the reported accelerations. The tree solve with the cut
    wrenches (:func:`_tree_with_cuts`) gives the same reactions up to the stage's residual
    in the equations of motion, which it moves into the accelerations instead (round-off
    times the mass matrix's conditioning: ~1e-6 of the largest reaction on a 100-body
    ring)."""
    Ia, Sa = K.unpack_ints(Ib)
    Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
    n1 = Ib[K.IB_N1]
    for k in range(1, n1):
        K.world_pose(R3, P3, k, Ia[K.I_PARENT, k])
    fext = Vv[K.V_FEXT]
    _cut_loads(n1, R3, P3, fext, cI, clab, Dall, Rcs, pcs, lam, cutF)
    af = Vv[K.V_AF]
    Fe = Vv[K.V_FE]
    t6 = Vv[K.V_T6, 0]
    sv = Vv[K.V_VJ, 0]
    for i in range(6):
        af[0, i] = 0.0
    for k in range(1, n1):
        K.kinematic_acc(Ia, Mm, R3, P3, af, qdd, k, t6, sv)
        K._inertia_times(Mm[K.M_I, k], Vv[K.V_MC, k], af[k], Fe[k])
        for i in range(6):
            Fe[k, i] -= fext[k, i]
    for k in range(n1 - 1, 0, -1):
        pk = Ia[K.I_PARENT, k]
        if pk > 0:
            K._f2p_add(R3[K.R_REL, k], P3[K.P_REL, k], Fe[k], Fe[pk], 1.0)
    K.reactions_into(Ia, Vv, R3, P3, reac)
    for k in range(n1):
        for i in range(6):
            fext[k, i] = 0.0
    for k in range(1, n1):
        K._body_acceleration(Vv, R3, P3, k, acc[body_row[k]])


@njit(cache=True, inline="always")
def _sample_reactions(Ib, buf, cargs, clab, qdd, lam, cutF, reac, acc, body_row):
    """:func:`_tree_rnea_cuts` with the cut joints' arrays of ``cargs`` (the reactions
    of a sample right after its stage: accelerations ``qdd`` and multipliers ``lam``)."""
    cI, Dall, Rcs, pcs = cargs[22], cargs[30], cargs[31], cargs[32]
    _tree_rnea_cuts(Ib, buf, cI, clab, Dall, Rcs, pcs, qdd, lam, cutF, reac, acc, body_row)


@njit(cache=True, inline="always")
def _cut_reactions(Ib, buf, forces, cargs, clab, q, v, tau, lam, cutF, reac, acc, body_row):
    """:func:`_tree_with_cuts` with the cut joints' arrays of ``cargs`` (their index
    table, constraint directions and child frame poses): its status."""
    cI, Dall, Rcs, pcs = cargs[22], cargs[30], cargs[31], cargs[32]
    return _tree_with_cuts(
        Ib, buf, forces, q, v, tau, cI, clab, Dall, Rcs, pcs, lam, cutF, reac, acc, body_row
    )


@njit(cache=True, inline="always")
def _interval_end(y, y0, ok, Yout, j):
    """The end of output interval ``j`` of an RK4 block: keeps ``y`` as ``Yout[j]`` when
    ``ok`` and finite, else puts ``y`` back to the interval's start ``y0``. Returns
    whether the interval was kept."""
    n = y.shape[0]
    for i in range(n):
        if not np.isfinite(y[i]):
            ok = False
    if not ok:
        for i in range(n):
            y[i] = y0[i]
        return False
    for i in range(n):
        Yout[j, i] = y[i]
    return True


@njit(cache=True)
def loop_rk4_block(
    Ib, buf, cargs, forces, clab, body_row, y, h, substeps, n_int, tau, sel, tol, max_newton,
    rtol, guard, ws, reac, i0, QDD, LAM, REAC, ACC, CUTF, VIOL, EN, RW, PW, VEL, Yout, TT, tix,
):  # fmt: skip
    """Up to ``n_int`` output intervals of ``substeps`` steps of :func:`loop_rk4_step`
    from ``y`` in place, in one call: the first step of interval ``j`` is
    :func:`loop_rk4_step_sampled` writing the output sample ``i0 + j`` (rows of ``QDD``,
    ``LAM``, ``REAC``, ``ACC``, ``CUTF``, ``VIOL``, ``EN``, ``RW``, ``PW``, ``VEL``; none
    past their end), the state at its end goes to ``Yout[j]``. Table values that are
    functions of time: ``TT[3 (j substeps + sub) + c, m]`` as in :func:`tree_rk4_block`
    (start, middle, end of substep ``sub`` of interval ``j``). Stops before an interval
    with a nonzero step status or a non-finite end state (``y`` is then that interval's
    start: the caller redoes it by the per-interval path, which decides). Returns the
    number of intervals done."""
    n = y.shape[0]
    y0 = np.empty(n)
    tw = step_work(sel.shape[0], n // 2, Ib[K.IB_N1], ws[0].shape[0])
    for j in range(n_int):
        for i in range(n):
            y0[i] = y[i]
        r = i0 + j
        st = 0
        for sub in range(substeps):
            r0 = 3 * (j * substeps + sub)
            if sub == 0 and r < QDD.shape[0]:
                st = _rk4_step_sampled(
                    Ib, buf, cargs, forces, clab, body_row, y, h, tau, sel, tol, max_newton,
                    rtol, guard, ws, reac, QDD[r], LAM[r], REAC[r], ACC[r], CUTF[r], VIOL[r],
                    EN[r], RW[r], PW[r], VEL[r], tw, TT, tix, r0,
                )  # fmt: skip
            else:
                st = _rk4_step(
                    Ib, buf, cargs, forces, y, h, tau, sel, tol, max_newton, rtol, guard, ws,
                    reac, tw, TT, tix, r0,
                )  # fmt: skip
            if st != 0:
                break
        if not _interval_end(y, y0, st == 0, Yout, j):
            return j
    return n_int


@njit(cache=True, _nrt=False)
def unit_quaternions(q, qoff):
    """Scale the quaternions ``q[o : o + 4]`` (``o`` in ``qoff``, int64) to unit norm in
    place: each value divided by ``sqrt(((e0^2 + e1^2) + e2^2) + e3^2)``, the operations of
    numpy's norm in :meth:`flexmbd.recursive.RecursiveSystem.normalize` in its order (the
    Python RK4 path's projection: the same bits)."""
    for m in range(qoff.shape[0]):
        o = qoff[m]
        n = np.sqrt(
            ((q[o] * q[o] + q[o + 1] * q[o + 1]) + q[o + 2] * q[o + 2]) + q[o + 3] * q[o + 3]
        )
        for i in range(4):
            q[o + i] = q[o + i] / n


@njit(cache=True, _nrt=False)
def coordinate_rates(Ib, buf, q, v, out):
    """``out = dq/dt`` (nq,) of the speeds ``v`` at ``q`` of the rigid tree ``(Ib, buf)``:
    :func:`._kernels.qdot_all` (quaternion rates of Spherical and Free joints, ``v``
    itself for the others), as :meth:`flexmbd.recursive.RecursiveSystem.qdot`."""
    Ia, Sa = K.unpack_ints(Ib)
    Vv = K._views(Ia, buf)[1]
    K.qdot_all(Ia, Vv, q, v, out)


@njit(cache=True)
def tree_rk4_block(
    Ib, buf, forces, y, h, substeps, n_int, tau, i0, QDD, REAC, EN, done, Yout, TT, tix, qoff
):  # fmt: skip
    """Up to ``n_int`` output intervals of ``substeps`` classical RK4 steps of the rigid
    tree with the accelerations of :func:`_tree_free` (joint forces ``tau``, the force
    table ``forces``), from ``y = (q, v)`` in place. ``q' = v`` when ``nq == nv``, else
    ``q' = qdot(q, v)`` (:func:`coordinate_rates`: quaternion coordinates of Spherical
    and Free joints) and the quaternions at the offsets ``qoff`` (int64) renormalized at
    the end of each output interval (:func:`unit_quaternions`), as the Python path
    (:class:`flexmbd.integrators.explicit.TreeStepper`) does. Table values that are
    functions of time are tabulated by the caller:
    ``TT[3 (j substeps + sub) + c, m]`` the value ``m`` at the start (c = 0), middle
    (1) and end (2) of substep ``sub`` of interval ``j``, written into
    ``forces[1][tix[m, 0], tix[m, 1]]`` before each stage (none for ``tix`` of 0 rows).
    The first stage of interval ``j`` is the output sample ``i0 + j``: its
    ``QDD``, tree reactions ``REAC``, energies ``EN``
    (:func:`._nbforces.sample_energies`) and ``done`` rows (none past their end); the
    state at the interval's end goes to ``Yout[j]``. Stops before an interval whose tree solve
    fails or whose end state is not finite (``y`` is then that interval's start).
    Returns the number of intervals done."""
    n = y.shape[0]
    nv = Ib[K.IB_NV]
    nq = n - nv
    y0 = np.empty(n)
    ks = np.empty((4, n))
    yy = np.empty(n)
    acc = np.empty(nv)
    rates = np.empty(nq)
    reac = np.empty((REAC.shape[1], 6))
    for j in range(n_int):
        for i in range(n):
            y0[i] = y[i]
        r = i0 + j
        ok = True
        for sub in range(substeps):
            for s in range(4):
                _rk4_stage_state(y, ks, s, h, yy)
                row = 3 * (j * substeps + sub) + (s + 1) // 2
                for m in range(tix.shape[0]):
                    forces[1][tix[m, 0], tix[m, 1]] = TT[row, m]
                sample = s == 0 and sub == 0 and r < QDD.shape[0]
                rr = REAC[r] if sample else reac
                if _tree_free(Ib, buf, forces, yy[:nq], yy[nq:], tau, acc, rr) != 0:
                    ok = False
                    break
                if sample:
                    for i in range(nv):
                        QDD[r, i] = acc[i]
                    fi, ff, tau_c, S = forces
                    sample_energies(Ib, buf, yy[nq:], fi, ff, tau_c, S, EN[r])
                    done[r] = True
                if nq == nv:
                    for i in range(nv):
                        ks[s, i] = yy[nv + i]
                else:
                    coordinate_rates(Ib, buf, yy[:nq], yy[nq:], rates)
                    for i in range(nq):
                        ks[s, i] = rates[i]
                for i in range(nv):
                    ks[s, nq + i] = acc[i]
            if not ok:
                break
            _rk4_update(y, ks, h)
        if ok:
            unit_quaternions(y, qoff)
        if not _interval_end(y, y0, ok, Yout, j):
            if r < done.shape[0]:
                done[r] = False
            return j
    return n_int


@njit(cache=True)
def loop_forward_dynamics(
    Ib, buf, cargs, forces, clab, q, v, tau, sel, qdd, lam, phi, J, gamma, reac, acc,
    body_row, cutF,
):  # fmt: skip
    """:func:`loop_accelerations`, then the Newton-Euler sweep with its accelerations and
    the cut-joint wrenches of ``lam`` (:func:`_tree_rnea_cuts`): every tree reaction, the
    body accelerations and the cut joints' wrenches. Returns 0 or a status of
    :func:`loop_accelerations`."""
    st = loop_accelerations(Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac)
    if st != 0:
        return st
    _sample_reactions(Ib, buf, cargs, clab, qdd, lam, cutF, reac, acc, body_row)
    return 0


@njit(cache=True)
def loop_reactions(
    Ib, buf, cargs, forces, clab, q, v, tau, lam, phi, J, gamma, reac, acc, body_row, cutF
):  # fmt: skip
    """The reactions of given multipliers ``lam`` (m,) at ``(q, v)``: the tree pass and
    the cut rows (the order of :func:`loop_accelerations`), then :func:`_tree_with_cuts`:
    tree reactions ``reac``, body accelerations ``acc``, cut wrenches ``cutF``. For the
    samples whose multipliers the projector's QR solved (weak directions near a singular
    configuration). Returns 0 or :data:`TREE_FAILED`."""
    qdd = np.empty(v.shape[0])
    if _tree_free(Ib, buf, forces, q, v, tau, qdd, reac) != 0:
        return TREE_FAILED
    _eval(cargs, q, v, True, phi, J, gamma)
    st = _cut_reactions(Ib, buf, forces, cargs, clab, q, v, tau, lam, cutF, reac, acc, body_row)
    return 0 if st == 0 else TREE_FAILED


@njit(cache=True)
def loop_sample(cargs, q, v, sel, rtol, guard, phi, J, gamma, viol):
    """Constraint violations of an output sample, ``viol = (max |phi|, max |J v|)``
    (cut joints: scleronomic rows), and whether the projector's QR would select ``sel``
    there with a margin (:func:`_same_rank_decision`)."""
    _eval(cargs, q, v, False, phi, J, gamma)
    viol[0], viol[1] = _violations(phi, J, v)
    return _same_rank_decision(J, sel, rtol, guard)


@njit(cache=True)
def _violations(phi, J, v):
    """``(max |phi|, max |J v|)``: the position and velocity violations of the rows."""
    m, nv = J.shape
    a = 0.0
    b = 0.0
    for r in range(m):
        a = max(a, abs(phi[r]))
        s = 0.0
        for j in range(nv):
            s += J[r, j] * v[j]
        b = max(b, abs(s))
    return a, b


@njit(cache=True)
def loop_rhs(Ib, buf, cargs, forces, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out):
    """Right-hand side of the adaptive integrators' ``y' = (v, qdd)`` with the correction
    inside the evaluation (``projection="rhs"``): :func:`loop_correct` of a copy of ``y``,
    then :func:`loop_accelerations` at the corrected state, ``out = (v, qdd)``. Returns 0,
    :data:`NEEDS_QR` (the rows ``sel`` no longer hold with a margin: the caller corrects
    with the projector's QR) or a failure of :func:`loop_accelerations` (``out`` then
    undefined). A tree (``cargs`` None): :func:`_tree_rhs` (the other loop arguments
    unused). A tree with flexible bodies (``Ib`` None): :func:`_flex_rhs` (``buf`` its
    workspace, ``forces`` its arguments); a loop through flexible bodies (``Ib`` None,
    ``cargs`` its cut rows' arguments): its row evaluator (:func:`_flex_or_none`)."""
    if Ib is None:
        return _flex_or_none(
            Ib, buf, cargs, forces, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out
        )
    if cargs is None:
        return _tree_rhs(Ib, buf, forces, y, tau, reac, out)
    yc = np.empty(y.shape[0])
    lam = np.empty(ws[0].shape[0])
    return loop_rhs_keep(
        Ib, buf, cargs, forces, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out, yc, lam
    )


@njit(cache=True)
def loop_rhs_keep(
    Ib, buf, cargs, forces, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out, yc, lam
):  # fmt: skip
    """:func:`loop_rhs` that keeps the corrected state in ``yc`` (2 nv,) and the
    multipliers in ``lam`` (m,); on return 0 the workspace ``buf`` holds that state's
    tree pass and ``ws`` its cut rows with the speed terms (what an output sample at the
    corrected state reads: :func:`_sample_after_rhs`). A tree (``cargs`` None):
    :func:`_tree_rhs` (``yc``, ``lam`` untouched); with flexible bodies (``Ib`` None):
    :func:`_flex_or_none` (``yc``, ``lam`` untouched)."""
    if Ib is None:
        return _flex_or_none(
            Ib, buf, cargs, forces, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out
        )
    if cargs is None:
        return _tree_rhs(Ib, buf, forces, y, tau, reac, out)
    phi, J, gamma = ws
    nv = y.shape[0] // 2
    _copy_into(yc, y)
    q = yc[:nv]
    v = yc[nv:]
    st = loop_correct(cargs, q, v, sel, tol, max_newton, rtol, guard, phi, J, gamma)
    if st != 0:
        return st
    acc = np.empty(nv)
    st = loop_accelerations(Ib, buf, cargs, forces, q, v, tau, sel, acc, lam, phi, J, gamma, reac)
    if st != 0:
        return st
    for i in range(nv):
        out[i] = v[i]
        out[nv + i] = acc[i]
    return 0


@njit(cache=True)
def loop_rk_step(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    t, y, f, h_abs, t_bound, direction, min_step, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent, y_new, f_new, out,
):  # fmt: skip
    """One accepted step of scipy's explicit Runge-Kutta pairs (their ``_step_impl``,
    rejected attempts included) with :func:`loop_rhs` at every stage, from ``(t, y)``
    with the derivative ``f`` and the proposed step ``h_abs``: ``DOP853`` (its two error
    estimators ``E3``, ``E5``) or, with ``E3`` empty, ``RK45`` / ``RK23`` (their error
    estimator ``E5 = E``, scipy's RMS norm); tableau ``A``, ``B``, ``C`` and error
    ``exponent`` as scipy's solver holds them. ``K`` the stages (scipy's layout, dense
    output reads them), ``y_new``, ``f_new``, and ``out = (t_new, h_abs_next, h,
    evaluations)``.

    Returns 0; -1 when the step fell below ``min_step`` (scipy's "too small" failure);
    or a status of :func:`loop_rhs` (:data:`NEEDS_QR` or a failed solve), after which
    the caller redoes the step by scipy's own code (``K``, ``y_new`` then undefined)."""
    yc = np.empty(y.shape[0])
    lam = np.empty(ws[0].shape[0])
    return _rk_step(
        Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
        t, y, f, h_abs, t_bound, direction, min_step, max_step, r_tol, a_tol,
        A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent, y_new, f_new, out, yc, lam,
    )  # fmt: skip


@njit(cache=True)
def loop_rk_step_sampled(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    t, y, f, h_abs, t_bound, direction, min_step, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent, y_new, f_new, out,
    clab, body_row, j, row, ROW, RAW, YC, QDD, LAM, REAC, ACC, CUTF, VIOL, EN, RW, PW, VEL,
):  # fmt: skip
    """:func:`loop_rk_step` and the output sample at its accepted state (an adaptive
    run that outputs every step) in one call: row ``j`` of ``RAW`` (the accepted
    ``y_new``), ``YC`` (its corrected state ``(q, v)``), ``QDD``, ``LAM``, the tree
    reactions ``REAC``, body accelerations ``ACC``, cut wrenches ``CUTF`` (child axes) and
    ``VIOL`` (position and velocity violations, 1 where the sample is complete), the
    sample's kinematics history row (``EN``, ``RW``, ``PW``, ``VEL``:
    :func:`._nbforces.sample_history`, where complete) and ``ROW[j] = row`` (the output
    row). The step's last evaluation already corrected
    ``y_new`` and solved its accelerations and multipliers (FSAL), so the sample adds
    only its violations, rank decision and the Newton-Euler sweep with the cut wrenches
    (:func:`_sample_after_rhs`): the same operations on the same values as
    :func:`loop_correct_samples` of ``y_new``. Returns :func:`loop_rk_step`'s
    status (the row is written only on 0)."""
    st = _rk_step(
        Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
        t, y, f, h_abs, t_bound, direction, min_step, max_step, r_tol, a_tol,
        A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent, y_new, f_new, out,
        YC[j], LAM[j],
    )  # fmt: skip
    if st != 0:
        return st
    _step_sample(
        Ib, buf, forces, _cut_arrays(cargs), clab, tau, sel, rtol, guard, ws, body_row, y_new,
        f_new, j, row, ROW, RAW, YC, QDD, LAM, REAC, ACC, CUTF, VIOL, EN, RW, PW, VEL,
    )  # fmt: skip
    return 0


#: the names of the DOP853 step before RK45 / RK23 shared it (documentation refers to them)
loop_dop853_step = loop_rk_step
loop_dop853_step_sampled = loop_rk_step_sampled


#: why :func:`loop_rk_block` stopped (``out[0]``; one source with the stepper that reads
#: them, :data:`flexmbd.integrators.stepper.BLOCK_DONE` ...): its ``k`` steps, ``t_bound``
#: or the stop time reached; a step handed back (its nonzero status in ``out[1]``, the
#: evaluations of the attempt in ``out[2]``); a non-finite accepted state; the stall
#: rule's verdict; (:func:`loop_rk_block_dense`) a sample whose dense output or
#: correction the caller must do
_BLOCK_GO = -1


@njit(cache=True)
def loop_rk_block(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
    k, t_stop, n_steps, win, stall, Yout, REC, out,
):  # fmt: skip
    """Up to ``k`` accepted steps of :func:`loop_rk_step` in one call, from the solver
    state ``ts = (t, h_abs)`` (s), ``y``, ``f`` (advanced in place; ``K`` holds the last
    step's stages). Accepted step ``j`` writes ``Yout[j]`` (its state) and ``REC[j] =
    (t_new, h_abs_next, h, evaluations)``. Stops (``out[0]``, :data:`BLOCK_DONE` ...)
    after the step that reaches ``t_bound`` or the stop time ``t_stop`` (``t_stop <=
    t_new + 1e-12``, s), at a nonzero step status (that step is not taken: handed back to
    the caller, which redoes it by scipy's code), after a non-finite accepted state, or
    after a step the stall rule refuses (:func:`_stall_verdict`; ``n_steps`` solver
    steps before the block, ``win`` the stall window, updated, ``stall`` its limits).
    Returns the number of accepted steps."""
    n = y.shape[0]
    y_new, f_new, o4 = np.empty(n), np.empty(n), np.zeros(4)
    yc, lam = np.empty(n), np.empty(ws[0].shape[0])
    for j in range(k):
        code = _block_step(
            Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
            ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
            A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
            y_new, f_new, o4, yc, lam, j, t_stop, n_steps, win, stall, Yout, REC, out,
        )  # fmt: skip
        if code != _BLOCK_GO:
            return j if code == BLOCK_HANDBACK else j + 1
    out[0] = BLOCK_DONE
    return k


@njit(cache=True)
def loop_rk_block_sampled(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
    k, t_stop, n_steps, win, stall, Yout, REC, out, clab, body_row, j0, row0, *rows,
):  # fmt: skip
    """:func:`loop_rk_block` with the output sample of every accepted step (an adaptive
    run that outputs every step): step ``j`` writes row ``j0 + j`` of the sample arrays
    ``rows`` (``ROW, RAW, YC, QDD, LAM, REAC, ACC, CUTF, VIOL, EN, RW, PW, VEL``: what
    :func:`loop_step_sample` takes) for the output row ``row0 + j``, as
    :func:`loop_rk_step_sampled` does (a handed-back step writes none)."""
    return _rk_block_sampled(
        Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
        ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
        A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
        k, t_stop, n_steps, win, stall, Yout, REC, out, clab, body_row, j0, row0, rows,
    )  # fmt: skip


@njit(cache=True)
def _rk_block_sampled(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
    k, t_stop, n_steps, win, stall, Yout, REC, out, clab, body_row, j0, row0, rows,
):  # fmt: skip
    """:func:`loop_rk_block_sampled` with its sample arrays as one tuple ``rows`` (numba
    inlines no callee into a function of ``*args``, :func:`_block_sample`)."""
    n = y.shape[0]
    y_new, f_new, o4 = np.empty(n), np.empty(n), np.zeros(4)
    yc, lam = np.empty(n), np.empty(ws[0].shape[0])
    cuts = _cut_arrays(cargs)
    for j in range(k):
        code = _block_step(
            Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
            ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
            A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
            y_new, f_new, o4, yc, lam, j, t_stop, n_steps, win, stall, Yout, REC, out,
        )  # fmt: skip
        if code == BLOCK_HANDBACK:
            return j
        _block_sample(
            Ib, buf, forces, cuts, clab, tau, sel, rtol, guard, ws, body_row, y_new, yc, lam,
            f_new, j0 + j, row0 + j, rows,
        )  # fmt: skip
        if code != _BLOCK_GO:
            return j + 1
    out[0] = BLOCK_DONE
    return k


@njit(cache=True)
def _block_sample(
    Ib, buf, forces, cuts, clab, tau, sel, rtol, guard, ws, body_row, y_new, yc, lam, f_new,
    j, row, rows,
):  # fmt: skip
    """:func:`loop_step_sample` into row ``j`` of the sample arrays ``rows`` (a tuple,
    unpacked here: a call with ``*rows`` would not be inlined, and a call of
    :func:`loop_step_sample` passes its 30 arguments with their reference counts)."""
    ROW, RAW, YC, QDD, LAM, REAC, ACC, CUTF, VIOL, EN, RW, PW, VEL = rows
    _copy_into(YC[j], yc)
    _copy_into(LAM[j], lam)
    _step_sample(
        Ib, buf, forces, cuts, clab, tau, sel, rtol, guard, ws, body_row, y_new, f_new, j, row,
        ROW, RAW, YC, QDD, LAM, REAC, ACC, CUTF, VIOL, EN, RW, PW, VEL,
    )  # fmt: skip


_IB_N1 = K.IB_N1  # (the block's stage array is named K)
_IB_NV = K.IB_NV


@njit(cache=True)
def loop_rk_block_dense(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
    k, n_steps, win, stall, Yout, REC, out, Kx, A_extra, C_extra, D, F, te, SJ, DN,
    clab, body_row, j0, row0, *rows,
):  # fmt: skip
    """:func:`loop_rk_block` with the output samples at the sorted output times ``te``
    (s) between its steps: after each accepted step that covers some of them (``te[m] <=
    t_new + 1e-12``) the step's dense output, DOP853's as :func:`loop_dop853_dense`
    computes it (the extra stages ``A_extra``, ``C_extra`` into ``Kx``, scipy's
    ``K_extended`` whose first rows are ``K``; the coefficients ``D`` into ``F``) or,
    with no extra stages (``A_extra`` of 0 rows), RK45's / RK23's as :func:`rk_dense`
    (``Kx`` the stages ``K``, ``D`` the solver's ``P``, ``Q`` into ``F``), the
    interpolant at the covered times (:func:`dop853_interpolate`,
    :func:`rk_interpolate`) and each interpolated state's correction and sample as
    :func:`loop_correct_samples` does them (status 0 only), with its kinematics history
    row where complete (:func:`._nbforces.sample_history`): sample ``m`` writes row ``j0
    + m`` of the sample arrays ``rows`` (:func:`loop_rk_block_sampled`'s, ``RAW`` the
    interpolated state) for the output row ``row0 + m``, ``SJ[m]`` its step; ``DN[j]`` 1
    where step ``j`` computed its dense output (DOP853: three evaluations). Stops after the
    sample at ``te[-1]``, at ``t_bound``, after ``k`` steps, before a step it hands back,
    after a non-finite state or a stall verdict (no samples of that step), and before a
    sample whose dense output or correction the caller must do (:data:`BLOCK_SAMPLE`).
    ``out = (stop reason, handed-back status, its evaluations, samples written, 1 where
    ``F`` is the last accepted step's)``. Returns the number of accepted steps."""
    return _rk_block_dense(
        Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
        ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
        A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
        k, n_steps, win, stall, Yout, REC, out, Kx, A_extra, C_extra, D, F, te, SJ, DN,
        clab, body_row, j0, row0, rows,
    )  # fmt: skip


@njit(cache=True)
def _rk_block_dense(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
    k, n_steps, win, stall, Yout, REC, out, Kx, A_extra, C_extra, D, F, te, SJ, DN,
    clab, body_row, j0, row0, rows,
):  # fmt: skip
    """:func:`loop_rk_block_dense` with its sample arrays as one tuple ``rows``."""
    n = y.shape[0]
    y_new, f_new, o4 = np.empty(n), np.empty(n), np.zeros(4)
    yc, lam, y_old = np.empty(n), np.empty(ws[0].shape[0]), np.empty(n)
    nv = n // 2
    sw = stage_work(sel.shape[0], nv, Ib[_IB_N1])
    cw = correct_work(nv, ws[0].shape[0], sel.shape[0])
    m = 0
    out[3], out[4] = 0.0, 0.0
    for j in range(k):
        t_old = ts[0]
        _copy_into(y_old, y)
        DN[j] = 0
        code = _block_step(
            Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
            ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
            A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
            y_new, f_new, o4, yc, lam, j, np.inf, n_steps, win, stall, Yout, REC, out,
        )  # fmt: skip
        if code == BLOCK_HANDBACK:
            return j
        out[4] = 0.0
        if code == BLOCK_NONFINITE or code == BLOCK_STALL:
            return j + 1
        t_new = ts[0]
        hi = m
        while hi < te.shape[0] and te[hi] <= t_new + 1e-12:
            hi += 1
        if hi > m:
            st = _dense_samples(
                Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
                t_old, t_new - t_old, y_old, y, f, Kx, A_extra, C_extra, D, F, te, m, hi, SJ, j,
                clab, body_row, j0, row0, sw, cw, rows,
            )  # fmt: skip
            if st >= 0:
                DN[j] = 1
                out[4] = 1.0
                m = st
            if st != hi:
                out[0], out[3] = BLOCK_SAMPLE, m
                return j + 1
        out[3] = m
        if m == te.shape[0] or code == BLOCK_DONE:
            out[0] = BLOCK_DONE
            return j + 1
    out[0] = BLOCK_DONE
    return k


@njit(cache=True)
def _dense_samples(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    t_old, h, y_old, y, f, Kx, A_extra, C_extra, D, F, te, m, hi, SJ, j,
    clab, body_row, j0, row0, sw, cw, rows,
):  # fmt: skip
    """The samples ``te[m:hi]`` of the accepted step ``j`` from ``t_old`` of length ``h``
    (s; ``y_old`` to ``y`` with the derivative ``f``) for :func:`_rk_block_dense`: its
    dense output, then per time the interpolated state, its correction and sample.
    Returns the index after the last sample written (``hi`` when all are), or -1 when the
    dense output failed (nothing written)."""
    ROW, RAW, YC, QDD, LAM, REAC, ACC, CUTF, VIOL, EN, RW, PW, VEL = rows
    phi, J, gamma = ws
    nv = y.shape[0] // 2
    rk = A_extra.shape[0] == 0  # RK45 / RK23: no extra stages
    if rk:
        rk_dense(Kx, D, F)
    else:
        st = loop_dop853_dense(
            Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
            t_old, h, y_old, y, f, Kx, A_extra, C_extra, D, F,
        )  # fmt: skip
        if st != 0:
            return -1
    for a in range(m, hi):
        r = j0 + a
        if rk:
            rk_interpolate(t_old, h, y_old, F, te[a], RAW[r])
        else:
            dop853_interpolate(t_old, h, y_old, F, te[a : a + 1], RAW[r : r + 1])
        _copy_into(YC[r], RAW[r])
        q, v = YC[r, :nv], YC[r, nv:]
        if _correct(cargs, q, v, sel, tol, max_newton, rtol, guard, phi, J, gamma, cw) != 0:
            return a
        set_clock(forces[0], forces[1], te[a])  # (a compiled law's time: the sample's)
        ok = _sample_at(
            Ib, buf, cargs, forces, clab, q, v, tau, sel, rtol, guard, phi, J, gamma,
            body_row, QDD[r], LAM[r], REAC[r], ACC[r], CUTF[r], VIOL[r], sw,
        )  # fmt: skip
        VIOL[r, 2] = 1.0 if ok else 0.0
        if ok:
            sample_history(Ib, buf, v, forces, EN[r], RW[r], PW[r], VEL[r])
        ROW[r] = row0 + a
        SJ[a] = j
    return hi


@njit(cache=True)
def _block_step(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
    y_new, f_new, o4, yc, lam, j, t_stop, n_steps, win, stall, Yout, REC, out,
):  # fmt: skip
    """Step ``j`` of a :func:`loop_rk_block`: :func:`_rk_step` from ``ts = (t, h_abs)``,
    ``y``, ``f`` with scipy's ``min_step`` at ``t``; an accepted step is recorded and
    becomes the state. Returns :data:`_BLOCK_GO` (go on) or the stop reason (also in
    ``out[0]``). Not inlined: Python passes a call of more than 30 arguments as ``*args``,
    which numba's inliner refuses."""
    t = ts[0]
    min_step = 10.0 * np.abs(np.nextafter(t, direction * np.inf) - t)
    st = _rk_step(
        Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
        t, y, f, ts[1], t_bound, direction, min_step, max_step, r_tol, a_tol,
        A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent, y_new, f_new, o4, yc, lam,
    )  # fmt: skip
    if st != 0:
        out[0], out[1], out[2] = BLOCK_HANDBACK, st, o4[3]
        return BLOCK_HANDBACK
    t_new = o4[0]
    finite = True
    for i in range(y.shape[0]):
        Yout[j, i] = y_new[i]
        y[i] = y_new[i]
        f[i] = f_new[i]
        finite = finite and np.isfinite(y_new[i])
    for i in range(4):
        REC[j, i] = o4[i]
    ts[0], ts[1] = t_new, o4[1]
    code = _BLOCK_GO
    if not finite:
        code = BLOCK_NONFINITE
    elif _stall_verdict(win, n_steps + j + 1, t_new, o4[1], stall):
        code = BLOCK_STALL
    elif direction * (t_new - t_bound) >= 0 or t_stop <= t_new + 1e-12:
        code = BLOCK_DONE
    out[0] = code
    return code


@njit(cache=True, inline="always")
def _stall_verdict(win, n_steps, t, h_abs, stall):
    """The stall rule of ``ExplicitStepper._check_progress`` after solver step ``n_steps``
    (now at ``t`` with the next step size ``h_abs``, s): ``win = (first step, its t,
    steps in a row below the floor)`` the window (updated unless the verdict is a stall:
    the caller replays that step's check for its message), ``stall = (step floor (s),
    steps below it, window steps, further steps allowed, t_end (s))``. True: a stall."""
    low = win[2] + 1.0 if h_abs < stall[0] else 0.0
    if low >= stall[1]:
        return True
    if n_steps - win[0] >= stall[2]:
        pace = (t - win[1]) / (n_steps - win[0])
        left = abs(stall[4] - t)
        if left > 0 and (pace <= 0 or left / pace > stall[3]):
            return True
        win[0], win[1], low = n_steps, t, 0.0
    win[2] = low
    return False


@njit(cache=True, inline="always")
def _tree_rhs(Ib, buf, forces, y, tau, reac, out):
    """Right-hand side ``out = (q', qdd)`` of a rigid tree at ``y = (q, v)``:
    :func:`_tree_free` with the joint forces ``tau`` and the force table ``forces``, its
    tree reactions in ``reac``; ``q' = v`` when ``nq == nv``, else ``qdot(q, v)``
    (:func:`coordinate_rates`: quaternion rates of Spherical and Free joints, as the
    Python right-hand side ``TreeStepper._f``). Returns the tree solver's status
    (``out`` then undefined)."""
    nv = Ib[_IB_NV]
    nq = y.shape[0] - nv
    st = _tree_free(Ib, buf, forces, y[:nq], y[nq:], tau, out[nq:], reac)
    if nq == nv:
        for i in range(nv):
            out[i] = y[nv + i]
    else:
        coordinate_rates(Ib, buf, y[:nq], y[nq:], out[:nq])
    return st


@njit(cache=True, inline="always")
def _renormalized(y, qoff, Yout, j, code, out):
    """The accepted state ``y`` of step ``j`` of an adaptive tree block with its
    quaternion coordinates at ``qoff`` renormalized (:func:`unit_quaternions`, as scipy's
    step and ``TreeStepper._after_solver_step``) and kept as ``Yout[j]``; returns the
    step's stop ``code``, or :data:`BLOCK_NONFINITE` (also into ``out[0]``) when that state
    is not finite. Without quaternion coordinates: ``code``, ``y`` untouched."""
    if qoff.shape[0] == 0:
        return code
    unit_quaternions(y, qoff)
    finite = True
    for i in range(y.shape[0]):
        Yout[j, i] = y[i]
        finite = finite and np.isfinite(y[i])
    if not finite:
        out[0] = BLOCK_NONFINITE
        return BLOCK_NONFINITE
    return code


@njit(cache=True, _nrt=False)
def flex_loads(T, tau, LI, LF, FA, row, MI, P, q, v):
    """The joint and modal forces and the point loads of one evaluation into the
    workspace ``T`` (:class:`._flexkernels.FlexWork` as a plain tuple), as
    :meth:`flexmbd.recursive.RecursiveSystem.qdd` applies them: ``tau`` (joint and modal
    speeds, N, N m, modal forces) plus each spring-damper law ``m`` (joint coordinate and
    speed indices ``LI[m]``; stiffness, damping, rest coordinate ``LF[m]``; actuator
    value ``FA[row, m]``, N or N m): ``tau[v] += fa - k (q - q0) - c qd``, in the order of
    the laws, into row ``J_TAU`` of ``Jv``; then, when the point-load table ``P = (PI, PF,
    PU, PT)`` has rows, a kinematics pass with world poses and each row's wrenches and
    modal forces (:func:`flex_point_load`, in the order of the rows), after writing its
    values that are functions of time, ``PF[PT[i, 0], PT[i, 1]] = FA[row, len(LI) + i]``;
    then the modal entries ``tau[MI[p, 2]]`` into the applied modal forces of label
    ``MI[p, 0]``, mode ``MI[p, 1]`` (all zero when every such entry is zero). The applied
    body wrenches and modal forces are cleared first. Returns 0, or 1 for coincident SDA
    ends (the loads are then incomplete)."""
    W = FK.FlexWork(*T)
    Jv, Fm, Vv = W.Jv, W.Fm, W.Vv
    fext = Vv[K.V_FEXT]
    for k in range(fext.shape[0]):
        for i in range(6):
            fext[k, i] = 0.0
    for k in range(Fm.shape[0]):
        for i in range(Fm.shape[2]):
            Fm[k, FK.FM_QAPP, i] = 0.0
    for i in range(Jv.shape[1]):
        Jv[K.J_TAU, i] = 0.0
    for i in range(tau.shape[0]):
        Jv[K.J_TAU, i] = tau[i]
    for m in range(LI.shape[0]):
        a = LI[m, 1]
        Jv[K.J_TAU, a] += FA[row, m] - LF[m, 0] * (q[LI[m, 0]] - LF[m, 2]) - LF[m, 1] * v[a]
    PI, PF, PU, PT = P
    if PI.shape[0]:
        nl = LI.shape[0]
        for i in range(PT.shape[0]):
            PF[PT[i, 0], PT[i, 1]] = FA[row, nl + i]
        FK.kinematics(T, q, v, True)
        for e in range(PI.shape[0]):
            if flex_point_load(T, fext, e, PI, PF, PU, q, v) != 0:
                return 1
    nonzero = False
    for p in range(MI.shape[0]):
        if Jv[K.J_TAU, MI[p, 2]] != 0.0:
            nonzero = True
    if nonzero:
        for p in range(MI.shape[0]):
            Fm[MI[p, 0], FK.FM_QAPP, MI[p, 1]] += Jv[K.J_TAU, MI[p, 2]]
    return 0


#: kinds of the rows of a flexible tree's point-load table (:func:`flex_point_load`)
P_SDA, P_FORCE, P_TORQUE = 0, 1, 2


@njit(cache=True, inline="always")
def _floating_frame(W, k):
    """World pose ``R`` (3x3 as 9 scalars, row-major) and origin ``r`` of the floating
    frame of flexible label ``k`` after a kinematics pass with world poses: ``R = R_k
    R_C^T``, ``r = r_k - R p_C`` (``R_C``, ``p_C`` the pose of e_k in the body frame), and
    its world angular velocity ``w = R w_b`` and velocity ``v = R v_b``."""
    Rk, rk = W.R3[K.R_W, k], W.P3[K.P_W, k]
    RC, pC = W.Ft[k, FK.FR_OUT, :, 0:3], W.Ft[k, FK.FR_OUT, :, 3]
    Vb = W.Fw[k, FK.W_VB]
    R00 = Rk[0, 0] * RC[0, 0] + Rk[0, 1] * RC[0, 1] + Rk[0, 2] * RC[0, 2]
    R01 = Rk[0, 0] * RC[1, 0] + Rk[0, 1] * RC[1, 1] + Rk[0, 2] * RC[1, 2]
    R02 = Rk[0, 0] * RC[2, 0] + Rk[0, 1] * RC[2, 1] + Rk[0, 2] * RC[2, 2]
    R10 = Rk[1, 0] * RC[0, 0] + Rk[1, 1] * RC[0, 1] + Rk[1, 2] * RC[0, 2]
    R11 = Rk[1, 0] * RC[1, 0] + Rk[1, 1] * RC[1, 1] + Rk[1, 2] * RC[1, 2]
    R12 = Rk[1, 0] * RC[2, 0] + Rk[1, 1] * RC[2, 1] + Rk[1, 2] * RC[2, 2]
    R20 = Rk[2, 0] * RC[0, 0] + Rk[2, 1] * RC[0, 1] + Rk[2, 2] * RC[0, 2]
    R21 = Rk[2, 0] * RC[1, 0] + Rk[2, 1] * RC[1, 1] + Rk[2, 2] * RC[1, 2]
    R22 = Rk[2, 0] * RC[2, 0] + Rk[2, 1] * RC[2, 1] + Rk[2, 2] * RC[2, 2]
    R = (R00, R01, R02, R10, R11, R12, R20, R21, R22)
    r = (
        rk[0] - (R00 * pC[0] + R01 * pC[1] + R02 * pC[2]),
        rk[1] - (R10 * pC[0] + R11 * pC[1] + R12 * pC[2]),
        rk[2] - (R20 * pC[0] + R21 * pC[1] + R22 * pC[2]),
    )
    return R, r, _mat(R, Vb[0], Vb[1], Vb[2]), _mat(R, Vb[3], Vb[4], Vb[5])


@njit(cache=True, inline="always")
def _mat(R, x, y, z):
    """``R (x, y, z)`` of a row-major 3x3 tuple ``R``."""
    return (
        R[0] * x + R[1] * y + R[2] * z,
        R[3] * x + R[4] * y + R[5] * z,
        R[6] * x + R[7] * y + R[8] * z,
    )


@njit(cache=True, inline="always")
def _mat_t(R, x, y, z):
    """``R^T (x, y, z)`` of a row-major 3x3 tuple ``R``."""
    return (
        R[0] * x + R[3] * y + R[6] * z,
        R[1] * x + R[4] * y + R[7] * z,
        R[2] * x + R[5] * y + R[8] * z,
    )


@njit(cache=True, inline="always")
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True, inline="always")
def _ek_rotation(W, k):
    """The world rotation of the tree frame e_k of label ``k`` as a row-major tuple."""
    Rk = W.R3[K.R_W, k]
    return (Rk[0, 0], Rk[0, 1], Rk[0, 2], Rk[1, 0], Rk[1, 1], Rk[1, 2], Rk[2, 0], Rk[2, 1],
            Rk[2, 2])  # fmt: skip


@njit(cache=True, inline="always")
def _point_end(W, k, flex, p, U, q, v):
    """One end of a point load at the last kinematics pass with world poses: ``(R, s, P,
    vP)``: the rotation of the axes the loads go into (row-major 3x3; the floating frame
    of a flexible label, else e_k), the point ``s`` in those axes (``p + U q_f`` on a
    flexible label, ``U`` (3, n) the translation modes of a deforming frame or 0 modes),
    its world position ``P`` and velocity ``vP = v + w x R s + R U qd_f``. ``p`` in e_k
    coordinates on a rigid label, the floating frame's on a flexible one, world on the
    ground (``k = 0``: ``R`` the identity, ``vP = 0``)."""
    if k == 0:
        one = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
        return one, (p[0], p[1], p[2]), (p[0], p[1], p[2]), (0.0, 0.0, 0.0)
    if flex:
        R, r, w, vo = _floating_frame(W, k)
        nk, mq, mv = W.Fi[FK.F_NF, k], W.Fi[FK.F_MQ, k], W.Fi[FK.F_MV, k]
        s0, s1, s2 = p[0], p[1], p[2]
        u0, u1, u2 = 0.0, 0.0, 0.0
        for j in range(U.shape[1] if U.shape[1] < nk else nk):
            s0 += U[0, j] * q[mq + j]
            s1 += U[1, j] * q[mq + j]
            s2 += U[2, j] * q[mq + j]
            u0 += U[0, j] * v[mv + j]
            u1 += U[1, j] * v[mv + j]
            u2 += U[2, j] * v[mv + j]
        s = (s0, s1, s2)
        rho = _mat(R, s0, s1, s2)
        vr = _mat(R, u0, u1, u2)
        wr = _cross(w, rho)
        P = (r[0] + rho[0], r[1] + rho[1], r[2] + rho[2])
        vP = (vo[0] + wr[0] + vr[0], vo[1] + wr[1] + vr[1], vo[2] + wr[2] + vr[2])
        return R, s, P, vP
    R = _ek_rotation(W, k)
    rk = W.P3[K.P_W, k]
    tw = W.Vv[K.V_VEL, k]
    rho = _mat(R, p[0], p[1], p[2])
    w = _mat(R, tw[0], tw[1], tw[2])
    vo = _mat(R, tw[3], tw[4], tw[5])
    wr = _cross(w, rho)
    P = (rk[0] + rho[0], rk[1] + rho[1], rk[2] + rho[2])
    return R, (p[0], p[1], p[2]), P, (vo[0] + wr[0], vo[1] + wr[1], vo[2] + wr[2])


@njit(cache=True, inline="always")
def _add_point_load(W, fext, k, flex, U, s, fb, nb):
    """Add the force ``fb`` at the point ``s`` and the moment ``nb`` (both in the axes of
    :func:`_point_end`) to label ``k``: ``fext[k] += [s x fb + nb; fb]`` (about the
    floating-frame origin on a flexible label, about O_k on a rigid one) and, at a
    deforming frame (``flex``), the modal forces ``U^T fb`` into the applied modal
    forces; nothing for the ground."""
    if k == 0:
        return
    m = _cross(s, fb)
    for i in range(3):
        fext[k, i] += m[i] + nb[i]
        fext[k, 3 + i] += fb[i]
    if flex:
        nk = W.Fi[FK.F_NF, k]
        for j in range(U.shape[1] if U.shape[1] < nk else nk):
            W.Fm[k, FK.FM_QAPP, j] += U[0, j] * fb[0] + U[1, j] * fb[1] + U[2, j] * fb[2]


@njit(cache=True, _nrt=False)
def flex_point_load(T, fext, e, PI, PF, PU, q, v):
    """Row ``e`` of a flexible tree's point-load table at ``(q, v)`` (joint and modal
    coordinates and speeds) after a kinematics pass with world poses on the workspace
    ``T`` (:class:`._flexkernels.FlexWork` as a plain tuple): its wrenches added to
    ``fext`` (N+1, 6) and its modal forces to the applied modal forces. ``PI[e] = (kind,
    label a, label b, a flexible, b flexible, body axes)`` (:data:`P_SDA`, :data:`P_FORCE`,
    :data:`P_TORQUE`; label 0 the ground); ``PF[e]``: an SDA's end points (m: e_k
    coordinates on a rigid label, floating-frame coordinates on a flexible one, world on
    the ground), ``k`` (N/m), ``c`` (N s/m), ``l0`` (m), ``fa`` (N); a force's point and
    vector (N; world, or the body's axes with body axes: e_k axes on a rigid label); a
    torque's vector (N m) in columns 3-5 (body axes: the floating frame's on a flexible
    label); ``PU[e, end]`` (3, nmax) the translation modes
    of each end (zeros where the end does not deform). The SDA force ``f = k (l - l0) +
    c ldot + fa`` pulls end a towards end b. Returns 0, or 1 for coincident SDA ends (no
    line of action)."""
    W = FK.FlexWork(*T)
    kind, a, b = PI[e, 0], PI[e, 1], PI[e, 2]
    fa_, fb_ = PI[e, 3] != 0, PI[e, 4] != 0
    row = PF[e]
    zero = (0.0, 0.0, 0.0)
    if kind == P_SDA:
        Ra, sa, Pa, va = _point_end(W, a, fa_, row[0:3], PU[e, 0], q, v)
        Rb, sb, Pb, vb = _point_end(W, b, fb_, row[3:6], PU[e, 1], q, v)
        d0, d1, d2 = Pb[0] - Pa[0], Pb[1] - Pa[1], Pb[2] - Pa[2]
        length = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if length < 1e-12:
            return 1
        u = (d0 / length, d1 / length, d2 / length)
        ldot = u[0] * (vb[0] - va[0]) + u[1] * (vb[1] - va[1]) + u[2] * (vb[2] - va[2])
        f = row[6] * (length - row[8]) + row[7] * ldot + row[9]
        g = (f * u[0], f * u[1], f * u[2])
        _add_point_load(W, fext, a, fa_, PU[e, 0], sa, _mat_t(Ra, g[0], g[1], g[2]), zero)
        _add_point_load(W, fext, b, fb_, PU[e, 1], sb, _mat_t(Rb, -g[0], -g[1], -g[2]), zero)
        return 0
    R, s, P, vP = _point_end(W, a, fa_, row[0:3], PU[e, 0], q, v)
    x = (row[3], row[4], row[5])  # in the end's axes already with body axes
    if not PI[e, 5]:
        x = _mat_t(R, x[0], x[1], x[2])
    if kind == P_FORCE:
        _add_point_load(W, fext, a, fa_, PU[e, 0], s, x, zero)
    else:
        _add_point_load(W, fext, a, False, PU[e, 0], zero, zero, x)
    return 0


@njit(cache=True, _nrt=False)
def flex_point_energy(T, e, PI, PF, PU, q, v, out):
    """Add the energy terms of row ``e`` of a point-load table (:func:`flex_point_load`)
    at ``(q, v)`` after a kinematics pass with world poses to ``out = (spring, p_damper,
    p_actuator, p_external)`` (J, W): an SDA's ``k (l - l0)^2 / 2``, ``c ldot^2`` and
    ``-fa ldot`` (its ends following the deformation); a force's power ``f . v_P`` (the
    point's velocity with its deformation rate), a torque's ``n . w`` (the angular
    velocity of the floating frame or of the rigid body). Returns 0, or 1 for coincident
    SDA ends (``out`` unchanged)."""
    W = FK.FlexWork(*T)
    kind, a, b = PI[e, 0], PI[e, 1], PI[e, 2]
    row = PF[e]
    if kind == P_SDA:
        _, _, Pa, va = _point_end(W, a, PI[e, 3] != 0, row[0:3], PU[e, 0], q, v)
        _, _, Pb, vb = _point_end(W, b, PI[e, 4] != 0, row[3:6], PU[e, 1], q, v)
        d0, d1, d2 = Pb[0] - Pa[0], Pb[1] - Pa[1], Pb[2] - Pa[2]
        length = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if length < 1e-12:
            return 1
        ldot = (d0 * (vb[0] - va[0]) + d1 * (vb[1] - va[1]) + d2 * (vb[2] - va[2])) / length
        ext = length - row[8]
        out[0] += 0.5 * row[6] * ext * ext
        out[1] += row[7] * ldot * ldot
        out[2] -= row[9] * ldot
        return 0
    R, s, P, vP = _point_end(W, a, PI[e, 3] != 0, row[0:3], PU[e, 0], q, v)
    x = (row[3], row[4], row[5])
    if PI[e, 5]:  # body axes: into world axes
        x = _mat(R, x[0], x[1], x[2])
    if kind == P_FORCE:
        out[3] += x[0] * vP[0] + x[1] * vP[1] + x[2] * vP[2]
        return 0
    if PI[e, 3]:
        w = _floating_frame(W, a)[2]
    else:
        tw = W.Vv[K.V_VEL, a]
        w = _mat(R, tw[0], tw[1], tw[2])
    out[3] += x[0] * w[0] + x[1] * w[1] + x[2] * w[2]
    return 0


@njit(cache=True, _nrt=False)
def flex_sda_length(T, e, PI, PF, PU, q, v):
    """The length (m) of the SDA of row ``e`` of a point-load table
    (:func:`flex_point_load`) after a kinematics pass with world poses."""
    W = FK.FlexWork(*T)
    a, b = PI[e, 1], PI[e, 2]
    row = PF[e]
    Pa = _point_end(W, a, PI[e, 3] != 0, row[0:3], PU[e, 0], q, v)[2]
    Pb = _point_end(W, b, PI[e, 4] != 0, row[3:6], PU[e, 1], q, v)[2]
    d0, d1, d2 = Pb[0] - Pa[0], Pb[1] - Pa[1], Pb[2] - Pa[2]
    return np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)


@njit(cache=True, inline="always")
def _flex_rhs(T, fargs, y, tau, reac, out):
    """Right-hand side ``out = (q', qdd)`` of a tree with flexible bodies at ``y = (q, v)``
    (joint and modal coordinates and speeds, SI) on the workspace ``T``
    (:class:`._flexkernels.FlexWork` as a plain tuple): :func:`_flex_eval` with the
    values of time of row 0 of ``fargs``' ``FA`` (constant ones). ``fargs = (fi, ff, nv,
    gravity (m/s^2, world), use gravity, stiffening, tolerance, max iterations, info, LI,
    LF, FA, MI, modal, P)``: ``fi``, ``ff`` an empty force table (no clock to set),
    ``LI``, ``LF``, ``FA``, ``MI`` and the point-load table ``P`` those of
    :func:`flex_loads`, ``modal`` (q offset, v offset, modes) of each flexible body.
    Returns the status of :func:`_flex_eval` (``out`` then undefined)."""
    return _flex_eval(T, fargs, 0, y, tau, reac, out)


@njit(cache=True, inline="always")
def _flex_eval(T, fargs, row, y, tau, reac, out):
    """One evaluation ``out = (q', qdd)`` of a tree with flexible bodies at ``y = (q,
    v)``: the loads of :func:`flex_loads` (joint and modal forces ``tau``, the values of
    time of row ``row`` of ``FA``), :func:`._flexkernels.forward_dynamics` (its joint
    reactions into ``reac``; the accelerations stay in the workspace's ``J_QDD`` row),
    ``q' = qdot(q, v)`` (:func:`._kernels.qdot_all`, the modal speeds for the modal
    coordinates); ``fargs`` as in :func:`_flex_rhs`. Returns the status of
    :func:`._flexkernels.forward_dynamics`, or -5 for coincident SDA ends (``out`` then
    undefined)."""
    nv = fargs[2]
    grav, use_grav, stiff, tol, max_iter, info = fargs[3:9]
    LI, LF, FA, MI, modal, P = fargs[9:15]
    nq = y.shape[0] - nv
    q, v = y[:nq], y[nq:]
    if flex_loads(T, tau, LI, LF, FA, row, MI, P, q, v) != 0:
        return -5
    st = FK.forward_dynamics(T, q, v, grav, use_grav, reac, stiff, tol, max_iter, info)
    if st != 0:
        return st
    W = FK.FlexWork(*T)
    K.qdot_all(W.Ia, W.Vv, q, v, out[:nq])
    for b in range(modal.shape[0]):
        for i in range(modal[b, 2]):
            out[modal[b, 0] + i] = v[modal[b, 1] + i]
    for i in range(nv):
        out[nq + i] = W.Jv[K.J_QDD, i]
    return 0


#: the row evaluators of closed loops through flexible bodies (:func:`_flex_or_none`), by
#: key: filled by the modules that define them (:func:`add_row_evaluator`)
ROW_EVALUATORS: dict = {}


def add_row_evaluator(key: str, kernel) -> None:
    """Register ``kernel`` as the right-hand side of the adaptive steps of the loops whose
    force-table argument carries ``key`` (:func:`_flex_or_none`): ``kernel(T, cargs,
    fargs, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out)`` returns 0 with
    ``out = y'`` at ``y``, or a nonzero status (:data:`NEEDS_QR`, a failed solve). The key
    names the kernel and the digest of the sources it compiles from, so that a cached
    step of this module compiled with one evaluator is never taken for another."""
    ROW_EVALUATORS[key] = kernel


def _flex_or_none(Ib, T, cargs, fargs, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out):
    """The right-hand side of a system with flexible bodies (``Ib`` None), typed only
    then: numba prunes ``if Ib is None`` only when ``Ib`` is None, so the rigid trees' and
    loops' specializations type this call too, as a stub returning 0 that never runs. A
    tree (``cargs`` None): :func:`_flex_rhs`. A closed loop through flexible bodies: the
    row evaluator (:func:`add_row_evaluator`) whose key is the field name of the record
    array ``fargs[2]`` (``fargs[0]``, ``fargs[1]`` an empty force table), called with the
    arguments as they are."""
    raise NotImplementedError("compiled kernels only")


@overload(_flex_or_none)
def _flex_or_none_impl(
    Ib, T, cargs, fargs, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out
):  # fmt: skip
    if not isinstance(Ib, types.NoneType):

        def stub(Ib, T, cargs, fargs, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out):
            return 0

        return stub
    if isinstance(cargs, types.NoneType):

        def tree(Ib, T, cargs, fargs, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out):
            return _flex_rhs(T, fargs, y, tau, reac, out)

        return tree
    rows = ROW_EVALUATORS[next(iter(fargs.types[2].dtype.fields))]

    def loop(Ib, T, cargs, fargs, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out):
        return rows(T, cargs, fargs, y, tau, sel, tol, max_newton, rtol, guard, ws, reac, out)

    return loop


@njit(cache=True)
def tree_rk_block(
    Ib, buf, forces, tau, ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
    k, t_stop, n_steps, win, stall, Yout, REC, out, i0, QDD, REAC, EN, done, qoff,
):  # fmt: skip
    """:func:`loop_rk_block` of a tree (no cut joint): up to ``k`` accepted steps of
    scipy's RK45 / RK23 / DOP853 (:func:`_rk_step`) with :func:`_tree_rhs` (joint forces
    ``tau``, the force table ``forces``) at every stage, the same arguments, records and
    stop reasons. The quaternions at the offsets ``qoff`` (int64; none: ``q' = v``) of
    each accepted state are renormalized (:func:`unit_quaternions`) before it is
    recorded and becomes the state, as scipy's ``step()`` followed by
    ``TreeStepper._after_solver_step`` leaves it (``f`` stays the step's last
    evaluation, at the state before the renormalization); a state that turns
    non-finite there stops the block (:data:`BLOCK_NONFINITE`). Accepted step ``j``
    also writes the output sample ``i0 + j`` where it is a row of ``QDD`` (none for 0
    rows): its ``QDD`` and tree reactions ``REAC`` from the step's last evaluation (at
    the accepted state), its energies ``EN`` (:func:`._nbforces.sample_energies`) and
    ``done``; with quaternions from an evaluation at the renormalized state
    (:func:`_dense_sample`; a failed one leaves the row to the batch after the run).
    Returns the number of accepted steps. A tree with flexible bodies passes ``Ib``
    None, its workspace as ``buf`` and :func:`_flex_rhs`'s arguments as ``forces``
    (:func:`._flexblock.flex_rk_block`): the steps and samples on :func:`_flex_rhs`, no
    energies (``EN`` not read; they come after the run)."""
    n = y.shape[0]
    nv = _n_speeds(Ib, forces)
    nq = n - nv
    y_new, f_new, o4 = np.empty(n), np.empty(n), np.zeros(4)
    g = np.empty(n)
    reac = np.empty((REAC.shape[1], 6))
    # the loop arguments that a tree's right-hand side does not read
    sel, ws, none = np.empty(0, np.int64), (np.empty(0), np.empty((0, 0)), np.empty(0)), None
    yc, lam = np.empty(0), np.empty(0)
    for j in range(k):
        code = _block_step(
            Ib, buf, none, forces, tau, sel, 0.0, 0, 0.0, 0.0, ws, reac,
            ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
            A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
            y_new, f_new, o4, yc, lam, j, t_stop, n_steps, win, stall, Yout, REC, out,
        )  # fmt: skip
        if code == BLOCK_HANDBACK:
            return j
        code = _renormalized(y, qoff, Yout, j, code, out)
        r = i0 + j
        if r < QDD.shape[0] and not qoff.shape[0]:
            for i in range(nv):
                QDD[r, i] = f_new[nq + i]
            for i in range(reac.shape[0]):
                for c in range(6):
                    REAC[r, i, c] = reac[i, c]
            _step_energies(Ib, buf, forces, y_new[nq:], EN, r)
            done[r] = True
        elif r < QDD.shape[0] and code != BLOCK_NONFINITE:  # at the renormalized state
            _dense_sample(Ib, buf, forces, tau, y, nq, ts[0], QDD, REAC, EN, done, r, g)
        if code != _BLOCK_GO:
            return j + 1
    out[0] = BLOCK_DONE
    return k


def _step_energies(Ib, buf, forces, v, EN, r):
    """The energies ``EN[r]`` of an accepted step's output sample at the speeds ``v``: a
    rigid tree's :func:`._nbforces.sample_energies` (``forces`` its force table, whose
    clock the step's last evaluation left at the step's end); nothing with flexible
    bodies (``Ib`` None; their energies come after the run). Dispatched on ``Ib is None``
    by ``@overload`` (as :func:`_dense_sample`)."""
    raise NotImplementedError("compiled kernels only")


@overload(_step_energies)
def _step_energies_impl(Ib, buf, forces, v, EN, r):
    if isinstance(Ib, types.NoneType):
        return lambda Ib, buf, forces, v, EN, r: None

    def rigid(Ib, buf, forces, v, EN, r):
        fi, ff, tau_c, S = forces
        sample_energies(Ib, buf, v, fi, ff, tau_c, S, EN[r])

    return rigid


@njit(cache=True, inline="always")
def _tree_sample(Ib, buf, forces, tau, y, nq, t, qdd, reac, en, done, r):
    """The output sample ``r`` of a rigid tree at the state ``y = (q, v)`` and the time
    ``t`` (s; the clock of the force table): :func:`_tree_free` into ``qdd`` and the
    tree reactions ``reac``, the energies ``en`` (:func:`._nbforces.sample_energies`)
    and ``done[r]`` where the tree solve succeeded (else the row is left to the batch
    after the run, which meets the failure)."""
    fi, ff, tau_c, S = forces
    set_clock(fi, ff, t)
    if _tree_free(Ib, buf, forces, y[:nq], y[nq:], tau, qdd, reac) == 0:
        sample_energies(Ib, buf, y[nq:], fi, ff, tau_c, S, en)
        done[r] = True


@njit(cache=True)
def tree_dop853_dense(Ib, buf, forces, tau, reac, t_old, h, y_old, y, f, K, A_extra, C_extra, D, F):
    """:func:`loop_dop853_dense` of a tree with the operations of scipy's
    ``_dense_output_impl``: each extra stage's state ``y_old + (K[:s]^T a) h``
    (:func:`_dot_stage`), its evaluation by :func:`_dense_stage` (a rigid tree's
    :func:`_tree_rhs` at scipy's stage time; with flexible bodies, ``Ib`` None,
    :func:`_flex_rhs`) and ``F[3:] = h (D K)`` by BLAS (``np.dot``;
    :func:`_dop853_coefficients`), so the same bits as scipy's dense output on the Python
    right-hand side. Returns 0 or the failed evaluation's status."""
    n = y.shape[0]
    ne = A_extra.shape[0]
    s0 = K.shape[0] - ne
    yy = np.empty(n)
    for e in range(ne):
        s = s0 + e
        _dot_stage(y_old, K, A_extra[e], s, h, yy)
        st = _dense_stage(Ib, buf, forces, t_old + C_extra[e] * h, yy, tau, reac, K[s])
        if st != 0:
            return st
    _dop853_coefficients(h, y_old, y, f, K, np.dot(D, K), F)
    return 0


@njit(cache=True, inline="always")
def _dop853_coefficients(h, y_old, y, f, K, DK, F):
    """DOP853's interpolant coefficients ``F`` (7, n) of the step of length ``h`` (s) from
    ``y_old`` to ``y`` (``f`` the step's last evaluation, ``K`` scipy's ``K_extended``)
    as scipy's ``_dense_output_impl`` forms them: ``dy``, ``h f_old - dy``, ``2 dy - h (f
    + f_old)`` and ``h DK`` (``DK = D K`` (4, n), the caller's product: its summation
    order is the caller's)."""
    for i in range(y.shape[0]):
        dy = y[i] - y_old[i]
        F[0, i] = dy
        F[1, i] = h * K[0, i] - dy
        F[2, i] = 2.0 * dy - h * (f[i] + K[0, i])
    for r in range(DK.shape[0]):
        for i in range(y.shape[0]):
            F[3 + r, i] = h * DK[r, i]


def _dense_stage(Ib, buf, forces, t, y, tau, reac, out):
    """An extra stage ``out = y'`` of a tree's DOP853 dense output at the state ``y`` and
    the stage time ``t`` (s): a rigid tree's :func:`_tree_rhs` with the force table's
    clock at ``t``; with flexible bodies (``Ib`` None) :func:`_flex_rhs` (``buf`` its
    workspace, ``forces`` its arguments; no clock: its loads are constant in time).
    Dispatched on ``Ib is None`` by ``@overload`` (as :func:`_flex_or_none`). Returns the
    evaluation's status."""
    raise NotImplementedError("compiled kernels only")


@overload(_dense_stage)
def _dense_stage_impl(Ib, buf, forces, t, y, tau, reac, out):
    if isinstance(Ib, types.NoneType):
        return lambda Ib, buf, forces, t, y, tau, reac, out: _flex_rhs(
            buf, forces, y, tau, reac, out
        )

    def rigid(Ib, buf, forces, t, y, tau, reac, out):
        set_clock(forces[0], forces[1], t)  # scipy's stage time
        return _tree_rhs(Ib, buf, forces, y, tau, reac, out)

    return rigid


def _dense_sample(Ib, buf, forces, tau, y, nq, t, QDD, REAC, EN, done, r, g):
    """The output sample ``r`` of a tree at the interpolated state ``y = (q, v)`` and the
    time ``t`` (s): a rigid tree's :func:`_tree_sample` (accelerations, reactions,
    energies ``EN[r]``); with flexible bodies (``Ib`` None) one :func:`_flex_rhs` into
    the scratch ``g`` (n,), its joint and modal accelerations into ``QDD[r]``, its joint
    reactions into ``REAC[r]`` and ``done[r]`` where it succeeded (``EN`` not read: the
    energies come after the run). Dispatched on ``Ib is None`` by ``@overload``."""
    raise NotImplementedError("compiled kernels only")


@overload(_dense_sample)
def _dense_sample_impl(Ib, buf, forces, tau, y, nq, t, QDD, REAC, EN, done, r, g):
    if isinstance(Ib, types.NoneType):

        def flexible(Ib, buf, forces, tau, y, nq, t, QDD, REAC, EN, done, r, g):
            if _flex_rhs(buf, forces, y, tau, REAC[r], g) == 0:
                for i in range(g.shape[0] - nq):
                    QDD[r, i] = g[nq + i]
                done[r] = True

        return flexible
    return lambda Ib, buf, forces, tau, y, nq, t, QDD, REAC, EN, done, r, g: _tree_sample(
        Ib, buf, forces, tau, y, nq, t, QDD[r], REAC[r], EN[r], done, r
    )


def _n_speeds(Ib, forces):
    """The number of speeds of a tree: a rigid tree's ``Ib[_IB_NV]``; with flexible bodies
    (``Ib`` None) ``forces[2]`` (joint and modal speeds, :func:`_flex_rhs`'s arguments).
    Dispatched on ``Ib is None`` by ``@overload``."""
    raise NotImplementedError("compiled kernels only")


@overload(_n_speeds)
def _n_speeds_impl(Ib, forces):
    if isinstance(Ib, types.NoneType):
        return lambda Ib, forces: forces[2]
    return lambda Ib, forces: Ib[_IB_NV]


@njit(cache=True)
def tree_rk_block_dense(
    Ib, buf, forces, tau, ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
    k, n_steps, win, stall, Yout, REC, out, Kx, A_extra, C_extra, D, F, te, SJ, DN, YS,
    i0, QDD, REAC, EN, done, qoff,
):  # fmt: skip
    """:func:`tree_rk_block` with the output samples at the sorted output times ``te``
    (s) between its steps, as :func:`loop_rk_block_dense` takes them (no correction):
    after each accepted step that covers some of them (``te[m] <= t_new + 1e-12``) the
    step's dense output, DOP853's (:func:`tree_dop853_dense`: the extra stages
    ``A_extra``, ``C_extra`` into ``Kx``, scipy's ``K_extended`` whose first rows are
    ``K``; the coefficients ``D`` into ``F`` (7, n)) or, with no extra stages
    (``A_extra`` of 0 rows), RK45's / RK23's (:func:`rk_dense`: ``Kx`` the stages
    ``K``, ``D`` the solver's ``P``, ``Q`` into ``F`` (n, order + 1)); per covered time
    ``te[m]`` the interpolated state into ``YS[m]`` (:func:`dop853_interpolate`,
    :func:`rk_interpolate`), its quaternions at ``qoff`` renormalized
    (:func:`unit_quaternions`, as ``TreeStepper._dense_sample``), ``SJ[m]`` its step,
    and the output sample ``i0 + m`` there at the time ``te[m]`` (:func:`_dense_sample`:
    ``QDD``, ``REAC``, ``EN``, ``done``). ``DN[j]`` 1 where step ``j`` computed its dense
    output. Stops after the sample at ``te[-1]``, at ``t_bound``, after ``k`` steps,
    before a step it hands back, after a non-finite state or a stall verdict (no samples
    of that step), and before the samples of a step whose dense output failed (a tree
    solve of an extra stage: :data:`BLOCK_SAMPLE`, the caller's dense output meets the
    failure). ``out = (stop reason, handed-back status, its evaluations, samples
    written, 1 where ``F`` is the last accepted step's)``. Returns the number of accepted
    steps. A tree with flexible bodies passes ``Ib`` None, its workspace as ``buf`` and
    :func:`_flex_rhs`'s arguments as ``forces`` (:func:`._flexblock.flex_rk_block_dense`):
    the steps, extra stages and samples on :func:`_flex_rhs`, no energies (``EN`` not
    read; they come after the run)."""
    n = y.shape[0]
    nq = n - _n_speeds(Ib, forces)
    y_new, f_new, o4 = np.empty(n), np.empty(n), np.zeros(4)
    y_old, g = np.empty(n), np.empty(n)
    reac = np.empty((REAC.shape[1], 6))
    # the loop arguments that a tree's right-hand side does not read
    sel, ws, none = np.empty(0, np.int64), (np.empty(0), np.empty((0, 0)), np.empty(0)), None
    yc, lam = np.empty(0), np.empty(0)
    rk = A_extra.shape[0] == 0  # RK45 / RK23: no extra stages
    m = 0
    out[3], out[4] = 0.0, 0.0
    for j in range(k):
        t_old = ts[0]
        _copy_into(y_old, y)
        DN[j] = 0
        code = _block_step(
            Ib, buf, none, forces, tau, sel, 0.0, 0, 0.0, 0.0, ws, reac,
            ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
            A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
            y_new, f_new, o4, yc, lam, j, np.inf, n_steps, win, stall, Yout, REC, out,
        )  # fmt: skip
        if code == BLOCK_HANDBACK:
            return j
        out[4] = 0.0
        code = _renormalized(y, qoff, Yout, j, code, out)
        if code == BLOCK_NONFINITE or code == BLOCK_STALL:
            return j + 1
        t_new = ts[0]
        hi = m
        while hi < te.shape[0] and te[hi] <= t_new + 1e-12:
            hi += 1
        if hi > m:
            h = t_new - t_old
            if rk:
                rk_dense(Kx, D, F)
            elif tree_dop853_dense(
                Ib, buf, forces, tau, reac, t_old, h, y_old, y, f, Kx, A_extra, C_extra, D, F
            ) != 0:  # fmt: skip
                out[0], out[3] = BLOCK_SAMPLE, m
                return j + 1
            DN[j] = 1
            out[4] = 1.0
            for a in range(m, hi):
                if rk:
                    rk_interpolate(t_old, h, y_old, F, te[a], YS[a])
                else:
                    dop853_interpolate(t_old, h, y_old, F, te[a : a + 1], YS[a : a + 1])
                unit_quaternions(YS[a, :nq], qoff)
                r = i0 + a
                _dense_sample(Ib, buf, forces, tau, YS[a], nq, te[a], QDD, REAC, EN, done, r, g)
                SJ[a] = j
            m = hi
        out[3] = m
        if m == te.shape[0] or code == BLOCK_DONE:
            out[0] = BLOCK_DONE
            return j + 1
    out[0] = BLOCK_DONE
    return k


@njit(cache=True)
def cut_arrays(cargs):
    """The cut joints' arrays of the cut arguments that :func:`loop_step_sample` reads
    (:func:`_cut_arrays`), taken once per run: a call then does not pass (and type) the
    whole ``cargs`` tuple."""
    return _cut_arrays(cargs)


@njit(cache=True, inline="always")
def _cut_arrays(cargs):
    """``(index table, constraint directions, child frame rotations, origins)`` of the cut
    joints in the cut arguments ``cargs`` (what :func:`_tree_rnea_cuts` reads)."""
    return cargs[22], cargs[30], cargs[31], cargs[32]


@njit(cache=True)
def loop_step_sample(
    Ib, buf, forces, cuts, clab, tau, sel, rtol, guard, ws, body_row, y_new, yc, lam, f_new,
    j, row, ROW, RAW, YC, QDD, LAM, REAC, ACC, CUTF, VIOL, EN, RW, PW, VEL,
):  # fmt: skip
    """The output sample at an adaptive step's accepted state ``y_new`` right after the
    step's last evaluation there (:func:`loop_rhs_keep` returned 0 with the corrected
    state ``yc``, the multipliers ``lam`` and ``f_new = (v, qdd)``; scipy's RK45 / RK23
    end every step so): ``yc``, ``lam`` into row ``j`` and the sample's rest as
    :func:`loop_rk_step_sampled` writes it (``cuts``: :func:`cut_arrays`)."""
    _copy_into(YC[j], yc)
    _copy_into(LAM[j], lam)
    _step_sample(
        Ib, buf, forces, cuts, clab, tau, sel, rtol, guard, ws, body_row, y_new, f_new, j, row,
        ROW, RAW, YC, QDD, LAM, REAC, ACC, CUTF, VIOL, EN, RW, PW, VEL,
    )  # fmt: skip


@njit(cache=True, inline="always")
def _step_sample(
    Ib, buf, forces, cuts, clab, tau, sel, rtol, guard, ws, body_row, y_new, f_new, j, row,
    ROW, RAW, YC, QDD, LAM, REAC, ACC, CUTF, VIOL, EN, RW, PW, VEL,
):  # fmt: skip
    """Row ``j`` of an accepted step's sample whose corrected state ``YC[j]`` and
    multipliers ``LAM[j]`` are in place: ``QDD[j]`` from ``f_new``, ``RAW[j] = y_new``,
    ``ROW[j] = row``, :func:`_sample_after_rhs` and, where the sample is complete
    (``VIOL[j, 2] = 1``), its kinematics history row ``EN[j]``, ``RW[j]``, ``PW[j]``,
    ``VEL[j]`` from the tree pass of the step's last evaluation at ``YC[j]``
    (:func:`._nbforces.sample_history`, as :func:`loop_rk4_step_sampled` writes it)."""
    nv = f_new.shape[0] // 2
    for i in range(nv):
        QDD[j, i] = f_new[nv + i]
    _copy_into(RAW[j], y_new)
    ROW[j] = row
    _sample_after_rhs(
        Ib, buf, cuts, clab, YC[j], sel, rtol, guard, ws, body_row, QDD[j], LAM[j], REAC[j],
        ACC[j], CUTF[j], VIOL[j],
    )  # fmt: skip
    if VIOL[j, 2] == 1.0:
        sample_history(Ib, buf, YC[j, nv:], forces, EN[j], RW[j], PW[j], VEL[j])


@njit(cache=True)
def _sample_after_rhs(
    Ib, buf, cuts, clab, yc, sel, rtol, guard, ws, body_row, qdd, lam, reac, acc, cutF, viol
):  # fmt: skip
    """The rest of an output sample at the corrected state ``yc = (q, v)`` right after
    :func:`loop_rhs_keep` returned 0 there (its tree pass in ``buf``, its cut rows in ``ws``,
    its accelerations ``qdd`` and multipliers ``lam``): the violations ``viol[:2]``, the
    rank decision and the reactions (:func:`_tree_rnea_cuts`), as :func:`_sample_at`
    continues after its accelerations; ``viol[2]`` 1 where the sample is complete.
    ``cuts``: the cut joints' ``(index table, constraint directions, child frame
    rotations, origins)`` of the cut arguments (:func:`_cut_arrays`)."""
    phi, J, gamma = ws
    cI, Dall, Rcs, pcs = cuts
    nv = yc.shape[0] // 2
    viol[0], viol[1] = _violations(phi, J, yc[nv:])
    viol[2] = 0.0
    if not _same_rank_decision(J, sel, rtol, guard):
        return
    _tree_rnea_cuts(Ib, buf, cI, clab, Dall, Rcs, pcs, qdd, lam, cutF, reac, acc, body_row)
    viol[2] = 1.0


@njit(cache=True)
def _rk_step(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    t, y, f, h_abs, t_bound, direction, min_step, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent, y_new, f_new, out, yc, lam,
):  # fmt: skip
    """:func:`loop_rk_step` that keeps the corrected state of the accepted ``y_new``
    in ``yc`` and its multipliers in ``lam`` (:func:`loop_rhs_keep`: the step's last
    evaluation)."""
    n = y.shape[0]
    ns = B.shape[0]
    yy = np.empty(n)
    err5 = np.empty(n)
    err3 = np.empty(n)
    nfev = 0
    if h_abs > max_step:
        h_abs = max_step
    elif h_abs < min_step:
        h_abs = min_step
    rejected = False
    while True:
        if h_abs < min_step:
            out[3] = nfev
            return -1
        h = h_abs * direction
        t_new = t + h
        if direction * (t_new - t_bound) > 0:
            t_new = t_bound
        h = t_new - t
        h_abs = abs(h)
        for i in range(n):
            K[0, i] = f[i]
        for s in range(1, ns):
            _dot_stage(y, K, A[s], s, h, yy)
            set_clock(forces[0], forces[1], t + C[s] * h)  # scipy's fun(t + c h, y + dy)
            st = loop_rhs(
                Ib, buf, cargs, forces, yy, tau, sel, tol, max_newton, rtol, guard, ws, reac, K[s]
            )
            nfev += 1
            if st != 0:
                out[3] = nfev
                return st
        d = np.dot(K[:ns].T, B)  # (scipy's rk_step: the same BLAS product)
        for i in range(n):
            y_new[i] = y[i] + h * d[i]
        set_clock(forces[0], forces[1], t + h)
        st = loop_rhs_keep(
            Ib, buf, cargs, forces, y_new, tau, sel, tol, max_newton, rtol, guard, ws, reac,
            f_new, yc, lam,
        )  # fmt: skip
        nfev += 1
        if st != 0:
            out[3] = nfev
            return st
        for i in range(n):
            K[ns, i] = f_new[i]
        if E3.shape[0]:
            error_norm = _dop853_norm(y, y_new, K, E3, E5, h, r_tol, a_tol, err5, err3)
        else:
            error_norm = _rk_norm(y, y_new, K, E5, h, r_tol, a_tol, err5)
        if error_norm < 1.0:
            if error_norm == 0.0:
                factor = max_factor
            else:
                factor = min(max_factor, safety * error_norm**exponent)
            if rejected:
                factor = min(1.0, factor)
            h_abs *= factor
            break
        h_abs *= max(min_factor, safety * error_norm**exponent)
        rejected = True
    out[0] = t_new
    out[1] = h_abs
    out[2] = h
    out[3] = nfev
    return 0


@njit(cache=True, inline="always")
def _dop853_norm(y, y_new, K, E3, E5, h, r_tol, a_tol, err5, err3):
    """scipy's DOP853 error norm of a step of size ``h`` (s) from ``y`` to ``y_new`` with
    the stages ``K``: ``|h| |e5|^2 / sqrt((|e5|^2 + 0.01 |e3|^2) n)`` of the two
    estimators scaled by ``a_tol + max(|y|, |y_new|) r_tol``; the products and norms
    by BLAS as scipy's ``_estimate_error_norm`` takes them (``np.dot``,
    ``np.linalg.norm``: the same bits)."""
    n = y.shape[0]
    d5 = np.dot(K.T, E5)
    d3 = np.dot(K.T, E3)
    for i in range(n):
        scale = a_tol + max(abs(y[i]), abs(y_new[i])) * r_tol
        err5[i] = d5[i] / scale
        err3[i] = d3[i] / scale
    e5 = np.sqrt(np.dot(err5, err5)) ** 2
    e3 = np.sqrt(np.dot(err3, err3)) ** 2
    if e5 == 0.0 and e3 == 0.0:
        return 0.0
    return abs(h) * e5 / np.sqrt((e5 + 0.01 * e3) * n)


@njit(cache=True, inline="always")
def _rk_norm(y, y_new, K, E, h, r_tol, a_tol, err):
    """scipy's ``RungeKutta`` error norm (RK45, RK23) of a step of size ``h`` (s): the
    RMS of ``h sum_j E_j K_j`` scaled by ``a_tol + max(|y|, |y_new|) r_tol``, by BLAS
    as scipy takes it (``np.dot``, ``np.linalg.norm``: the same bits)."""
    n = y.shape[0]
    d = np.dot(K.T, E)
    for i in range(n):
        scale = a_tol + max(abs(y[i]), abs(y_new[i])) * r_tol
        err[i] = d[i] * h / scale
    return np.sqrt(np.dot(err, err)) / n**0.5


@njit(cache=True, inline="always")
def _dot_stage(y, K, a, s, h, out):
    """``out = y + (K[:s]^T a[:s]) h``: the state of a Runge-Kutta stage ``s`` as scipy's
    ``rk_step`` forms it (the product by BLAS, ``np.dot``: the same bits)."""
    d = np.dot(K[:s].T, np.ascontiguousarray(a[:s]))  # (DOP853's tableau: a view)
    for i in range(y.shape[0]):
        out[i] = y[i] + d[i] * h


@njit(cache=True, inline="always")
def _stage_state(y, K, a, s, h, out):
    """``out = y + h sum_{j < s} a_j K_j``: the state of a Runge-Kutta stage ``s``."""
    for i in range(y.shape[0]):
        acc = 0.0
        for j in range(s):
            acc += K[j, i] * a[j]
        out[i] = y[i] + acc * h


@njit(cache=True)
def loop_dop853_dense(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    t_old, h, y_old, y, f, K, A_extra, C_extra, D, F,
):  # fmt: skip
    """The dense output of the last DOP853 step (scipy's ``_dense_output_impl``) in one
    call: the three extra stages ``K[n_stages + 1 + e]`` (scipy's ``K_extended``) by
    :func:`loop_rhs` at ``y_old + h sum_j a_ej K_j``, and the interpolant's coefficients
    ``F`` (7, n): ``dy``, ``h f_old - dy``, ``2 dy - h (f + f_old)``, ``h D K``. Returns 0
    or a status of :func:`loop_rhs` (the caller then takes scipy's own code)."""
    n = y.shape[0]
    ne = A_extra.shape[0]
    s0 = K.shape[0] - ne
    yy = np.empty(n)
    for e in range(ne):
        s = s0 + e
        _stage_state(y_old, K, A_extra[e], s, h, yy)
        set_clock(forces[0], forces[1], t_old + C_extra[e] * h)  # scipy's stage time
        st = loop_rhs(
            Ib, buf, cargs, forces, yy, tau, sel, tol, max_newton, rtol, guard, ws, reac, K[s]
        )
        if st != 0:
            return st
    DK = np.empty((D.shape[0], n))
    for r in range(D.shape[0]):
        for i in range(n):
            acc = 0.0
            for j in range(K.shape[0]):
                acc += D[r, j] * K[j, i]
            DK[r, i] = acc
    _dop853_coefficients(h, y_old, y, f, K, DK, F)
    return 0


@njit(cache=True)
def rk_dense(K, P, Q):
    """The dense output of the last RK45 / RK23 step as scipy's ``_dense_output_impl``
    forms it: ``Q = K^T P`` (n, order + 1) from the step's stages ``K`` (n_stages + 1,
    n) and the solver's ``P`` (the product by BLAS, ``np.dot``: the same bits)."""
    d = np.dot(K.T, P)
    for i in range(Q.shape[0]):
        for c in range(Q.shape[1]):
            Q[i, c] = d[i, c]


@njit(cache=True)
def rk_interpolate(t_old, h, y_old, Q, t, out):
    """scipy's RK45 / RK23 interpolant (``RkDenseOutput``) at the time ``t`` (s): ``out``
    (n,) from ``Q`` (:func:`rk_dense`) of the step from ``t_old`` of length ``h`` and
    its start ``y_old``; the operations of scipy's ``_call_impl`` for one time (``p``
    the running powers of ``x = (t - t_old) / h``, ``h Q p + y_old`` with ``Q p`` by
    BLAS), so the same values."""
    no = Q.shape[1]
    p = np.empty(no)
    x = (t - t_old) / h
    c = x
    p[0] = c
    for k in range(1, no):
        c = c * x
        p[k] = c
    d = np.dot(Q, p)
    for i in range(y_old.shape[0]):
        out[i] = h * d[i] + y_old[i]


@njit(cache=True)
def dop853_interpolate(t_old, h, y_old, F, ts, out):
    """scipy's DOP853 interpolant (``Dop853DenseOutput``) at the times ``ts``:
    ``out[j]`` (n,) from the coefficients ``F`` (7, n) of the step from ``t_old`` of
    length ``h`` and its start ``y_old``; the same operations per element as scipy's
    ``_call_impl`` (Horner in ``x`` and ``1 - x``), so the same values."""
    nf = F.shape[0]
    for j in range(ts.shape[0]):
        x = (ts[j] - t_old) / h
        for i in range(y_old.shape[0]):
            y = 0.0
            for r in range(nf):
                y += F[nf - 1 - r, i]
                if r % 2 == 0:
                    y *= x
                else:
                    y *= 1 - x
            out[j, i] = y + y_old[i]


@njit(cache=True)
def _sample_at(
    Ib, buf, cargs, forces, clab, q, v, tau, sel, rtol, guard, phi, J, gamma, body_row,
    qdd, lam, reac, acc, cutF, viol, sw,
):  # fmt: skip
    """One output sample at ``(q, v)`` (the body of :func:`loop_samples`): the violations
    ``viol`` and, where the QR would select ``sel`` there with a margin,
    :func:`loop_forward_dynamics` into ``qdd``, ``lam``, ``reac``, ``acc``, ``cutF``
    (``sw``: the scratch of :func:`stage_work`). Returns whether the sample is complete."""
    # the accelerations first: their cut rows at (q, v) are the rows the violations
    # and the rank decision read (phi and J do not depend on the speeds), so the
    # sample takes no separate evaluation of them (loop_sample)
    st = _stage(Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac, sw)
    if st == TREE_FAILED:  # no rows evaluated: the violations alone
        loop_sample(cargs, q, v, sel, rtol, guard, phi, J, gamma, viol)
        return False
    viol[0], viol[1] = _violations(phi, J, v)
    if st != 0 or not _same_rank_decision(J, sel, rtol, guard):
        return False
    _sample_reactions(Ib, buf, cargs, clab, qdd, lam, cutF, reac, acc, body_row)
    return True


@njit(cache=True)
def loop_samples(
    Ib, buf, cargs, forces, clab, Q, V, TAU, sel, rtol, guard, ws, reac_ws, body_row,
    QDD, LAM, REAC, ACC, CUTF, VIOL, ok,
):  # fmt: skip
    """Output samples in one call: for each state ``Q[i], V[i]`` with joint forces
    ``TAU[i]`` the violations ``VIOL[i]`` and, where the projector's QR would select the
    rows ``sel`` there with a margin (the test of :func:`loop_sample`, on the rows of the
    accelerations' own evaluation), :func:`loop_forward_dynamics` into ``QDD[i]``,
    ``LAM[i]``, the tree reactions ``REAC[i]``, the body accelerations ``ACC[i]`` and the
    cut wrenches ``CUTF[i]``; ``ok[i]`` False where the caller must take the QR path (the
    rows of such a sample are not read)."""
    phi, J, gamma = ws
    sw = stage_work(sel.shape[0], Ib[K.IB_NV], Ib[K.IB_N1])  # one scratch for every sample
    for i in range(Q.shape[0]):
        ok[i] = _sample_at(
            Ib, buf, cargs, forces, clab, Q[i], V[i], TAU[i], sel, rtol, guard, phi, J, gamma,
            body_row, QDD[i], LAM[i], REAC[i], ACC[i], CUTF[i], VIOL[i], sw,
        )  # fmt: skip


@njit(cache=True)
def loop_correct_rows(cargs, Y, sel, tol, max_newton, rtol, guard, ws, status):
    """:func:`loop_correct` of every state ``Y[i] = (q, v)`` in place; ``status[i]`` its
    return value (:data:`NEEDS_QR`: ``Y[i]`` unchanged, the caller corrects it)."""
    phi, J, gamma = ws
    nv = Y.shape[1] // 2
    for i in range(Y.shape[0]):
        status[i] = loop_correct(
            cargs, Y[i, :nv], Y[i, nv:], sel, tol, max_newton, rtol, guard, phi, J, gamma
        )


@njit(cache=True)
def loop_correct_samples(
    Ib, buf, cargs, forces, clab, Y, TAU, sel, tol, max_newton, rtol, guard, ws, body_row,
    status, QDD, LAM, REAC, ACC, CUTF, VIOL, ok,
):  # fmt: skip
    """:func:`loop_correct_rows` and :func:`loop_samples` in one pass over the output
    states ``Y[i] = (q, v)`` (an adaptive run's interpolated samples): each state is
    corrected in place (``status[i]``: 0, or :data:`NEEDS_QR` with ``Y[i]`` unchanged and
    no sample) and then sampled at its corrected values with joint forces ``TAU[i]``
    (``ok[i]``, ``QDD[i]`` ... ``VIOL[i]`` as in :func:`loop_samples`). The same calls on
    the same values as the two kernels one after the other, so the same numbers; one
    pass saves the second sweep over the rows and a call from Python."""
    phi, J, gamma = ws
    nv = Y.shape[1] // 2
    k = sel.shape[0]
    sw = stage_work(k, nv, Ib[K.IB_N1])  # one scratch for every row
    cw = correct_work(nv, phi.shape[0], k)
    for i in range(Y.shape[0]):
        ok[i] = False
        q, v = Y[i, :nv], Y[i, nv:]
        status[i] = _correct(cargs, q, v, sel, tol, max_newton, rtol, guard, phi, J, gamma, cw)
        if status[i] != 0:
            continue
        ok[i] = _sample_at(
            Ib, buf, cargs, forces, clab, q, v, TAU[i], sel, rtol, guard, phi, J, gamma,
            body_row, QDD[i], LAM[i], REAC[i], ACC[i], CUTF[i], VIOL[i], sw,
        )  # fmt: skip


# -- weak directions: the projector's QR path in compiled code --------------------------
#: status of the weak-state kernels: the projector's own QR must decide (a pivot or rank
#: choice within round-off of a tie, no rank, or the continued weak directions of an
#: exactly singular state)
WEAK_REFUSED = 4
#: the projector's trust limit of a weak direction (``|R_kk|`` relative to ``|R_11|``)
_DIRECTION_EPS = 1e-11


@njit(cache=True)
def _weak_qr(J, rtol, r_reg, has_last, tangent, update, Q, R, perm, d):
    """The projector's QR of ``J^T`` (``Projector.basis`` with regular rank ``r_reg``):
    vanishing rows dropped, column-pivoted Householder QR of the rest as
    :func:`_qr_selects` replays LAPACK's, the rank, the weak directions trusted above
    ``1e-11 |R_11|``; at a stage state (not ``update``) the rank capped at ``r_reg``.
    Writes the pivots ``perm`` (m,; kept rows in pivot order, then the dropped ones
    ascending), ``d = |R_kk|`` (``min(nv, kept)`` leading entries, then -1) and, for
    ``k = min(nv, kept)`` with ``update`` else ``r0``, the leading ``Q[:, :k]``
    (columns of ``Q`` (nv, m)) and ``R[:k]`` (m, m; pivot order, zero columns for the
    dropped rows). Returns ``(rank, r0)`` with ``r0 = rank + n_weak`` (the basis'
    regular rank), or ``(-1, -1)`` where the projector's QR must decide: a pivot or
    rank choice within :data:`_QR_MARGIN` of a tie, rank 0, or the continuation of
    ``has_last`` weak directions (``tangent``) at an exactly singular state."""
    m, nv = J.shape
    mk = _kept_rows(J, perm)
    if mk < 0:
        return -1, -1
    mn = min(nv, mk)
    if mn == 0:
        return -1, -1
    A = np.empty((nv, mk))
    taus = np.empty(mn)
    tie = _pivoted_qr(J, perm, mk, mn, A, taus, d)
    for i in range(mn, d.shape[0]):
        d[i] = -1.0  # no pivot
    if d[0] <= 1e-300:
        return -1, -1
    thr = rtol * d[0]
    rank = 0
    while rank < mn and d[rank] > thr:
        rank += 1
    if rank == 0:
        return -1, -1
    if rank < mn and abs(d[rank] - thr) <= _QR_MARGIN * thr:
        return -1, -1
    if abs(d[rank - 1] - thr) <= _QR_MARGIN * thr:
        return -1, -1
    r0 = max(rank, min(r_reg, mn))
    while r0 > rank and d[r0 - 1] <= _DIRECTION_EPS * d[0]:
        r0 -= 1
    if not update and rank > r_reg:  # off the manifold the rank is capped
        rank = r0 = r_reg
    if max(r_reg, rank) > r0 and has_last and tangent:
        return -1, -1  # the projector continues the last weak directions
    if tie < r0:
        return -1, -1
    nc = mn if update else r0
    for c in range(nc):  # R in pivot order; Q[:, c] = H_0 ... H_c e_c (dorgqr)
        for a in range(nc):
            R[a, c] = A[a, c] if a <= c else 0.0
        for j in range(nv):
            Q[j, c] = 0.0
        Q[c, c] = 1.0
        for i in range(c, -1, -1):
            if taus[i] == 0.0:
                continue
            w = Q[i, c]
            for j in range(i + 1, nv):
                w += A[j, i] * Q[j, c]
            w *= taus[i]
            Q[i, c] -= w
            for j in range(i + 1, nv):
                Q[j, c] -= w * A[j, i]
    if update:
        for a in range(nc):
            for c in range(nc, m):
                R[a, c] = A[a, c] if c < mk else 0.0
    return rank, r0


@njit(cache=True)
def weak_work(m, nv, n1):
    """Scratch of :func:`_weak_stage` for ``m`` rows, ``nv`` speeds and ``n1`` tree
    nodes: ``(Q (nv, m), R (m, m), perm (m,), info (2,), ks (4, 2 nv), yy (2 nv,), acc
    (nv,), lam (m,), d (m,))``."""
    return (
        np.empty((nv, m)),
        np.empty((m, m)),
        np.empty(m, np.int64),
        np.zeros(2, np.int64),
        np.empty((4, 2 * nv)),
        np.empty(2 * nv),
        np.empty(nv),
        np.empty(m),
        np.empty(m),
    )


@njit(cache=True)
def _weak_stage(
    Ib, buf, cargs, forces, q, v, tau, rtol, r_reg, has_last, tangent, qdd, lam, phi, J, gamma,
    reac, ww,
):  # fmt: skip
    """The projector's QR path of the accelerations at ``(q, v)``
    (``Projector.accelerations`` after ``basis(update=False)``): the QR
    (:func:`_weak_qr`), the rows ``C = [Q_n, Q_w]^T`` (``Q_n`` only without the tangent
    projection), ``a = [R_nn^-T P_n^T gamma, 0]``, ``(C M^-1 C^T) mu = a - C qdd_free``
    by Cholesky with one refinement step, ``qdd = qdd_free + M^-1 C^T mu`` and
    ``lam = P R^-1 mu`` (zero on the other rows). The QR's ``(rank, r0)`` go to
    ``ww[3]``. Returns 0, :data:`WEAK_REFUSED`, :data:`TREE_FAILED` or
    :data:`SINGULAR_ROWS`."""
    Q, R, perm, info = ww[0], ww[1], ww[2], ww[3]
    nv = v.shape[0]
    if _tree_free(Ib, buf, forces, q, v, tau, qdd, reac) != 0:
        return TREE_FAILED
    _eval(cargs, q, v, True, phi, J, gamma)
    rank, r0 = _weak_qr(J, rtol, r_reg, has_last, tangent, False, Q, R, perm, ww[8])
    if rank < 0:
        return WEAK_REFUSED
    info[0], info[1] = rank, r0
    k = r0 if tangent else rank
    C = np.empty((k, nv))
    Y = np.empty((k, nv))
    for a in range(k):
        for j in range(nv):
            C[a, j] = Q[j, a]
    n1 = Ib[K.IB_N1]
    _tree_columns(Ib, buf, C, Y, np.empty((k, n1, 6)), np.empty((k, n1, 6)), np.empty((k, n1, 6)))
    A = np.empty((k, k))
    if _gram_factor(C, Y, A, k, nv) < 0.0:
        return SINGULAR_ROWS
    an = np.zeros(k)  # normal components R_nn^-T P_n^T gamma; zero along Q_w
    for a in range(rank):
        s = gamma[perm[a]]
        for b in range(a):
            s -= R[b, a] * an[b]
        an[a] = s / R[a, a]
    mu = np.empty(k)
    _refined_solve(C, Y, A, an, qdd, mu, np.empty(k), k, nv)
    for a in range(lam.shape[0]):
        lam[a] = 0.0
    for a in range(k - 1, -1, -1):  # R_kk x = mu
        s = mu[a]
        for b in range(a + 1, k):
            s -= R[a, b] * mu[b]
        mu[a] = s / R[a, a]
        lam[perm[a]] = mu[a]
    return 0


@njit(cache=True)
def loop_rk4_step_weak(
    Ib, buf, cargs, forces, clab, body_row, y, h, tau, rtol, r_reg, has_last, tangent, ws,
    reac, sampled, qdd, lam, reac_s, acc, cutF, viol, stats,
):  # fmt: skip
    """One classical RK4 step of ``y = (q, v)`` from a weak state (the last correction
    left weak directions), every stage by the projector's QR path (:func:`_weak_stage`),
    in place; no correction (the projector's own follows). The first stage gives the
    sample at ``y``: accelerations ``qdd``, multipliers ``lam``, violations ``viol =
    (max |phi|, max |J v|)``, ``stats = (rank, r0, perm...)`` (m + 2,) and, with
    ``sampled``, the tree reactions ``reac_s``, body accelerations ``acc`` and cut
    wrenches ``cutF``. Returns 0, or a status of :func:`_weak_stage` (``y`` unchanged:
    the caller takes the Python path)."""
    phi, J, gamma = ws
    nv = y.shape[0] // 2
    ww = weak_work(phi.shape[0], nv, Ib[K.IB_N1])
    ks, yy, a_s, lam_s = ww[4], ww[5], ww[6], ww[7]
    st = _weak_stage(
        Ib, buf, cargs, forces, y[:nv], y[nv:], tau, rtol, r_reg, has_last, tangent, qdd, lam,
        phi, J, gamma, reac, ww,
    )  # fmt: skip
    if st != 0:
        return st
    viol[0], viol[1] = _violations(phi, J, y[nv:])
    stats[0], stats[1] = ww[3][0], ww[3][1]
    for a in range(phi.shape[0]):
        stats[2 + a] = ww[2][a]
    if sampled:
        if _cut_reactions(
            Ib, buf, forces, cargs, clab, y[:nv], y[nv:], tau, lam, cutF, reac_s, acc, body_row
        ) != 0:  # fmt: skip
            return TREE_FAILED
    for i in range(nv):
        ks[0, i] = y[nv + i]
        ks[0, nv + i] = qdd[i]
    for s in range(1, 4):
        _rk4_stage_state(y, ks, s, h, yy)
        st = _weak_stage(
            Ib, buf, cargs, forces, yy[:nv], yy[nv:], tau, rtol, r_reg, has_last, tangent, a_s,
            lam_s, phi, J, gamma, reac, ww,
        )  # fmt: skip
        if st != 0:
            return st
        for i in range(nv):
            ks[s, i] = yy[nv + i]
            ks[s, nv + i] = a_s[i]
    _rk4_update(y, ks, h)
    return 0


@njit(cache=True)
def loop_correct_weak(
    cargs, q, v, rtol, r_reg, has_last, tangent, tol, max_newton, vtol, phi, J, gamma, Jb, Q,
    R, perm, d, out,
):  # fmt: skip
    """The projector's correction of ``(q, v)`` in place where its last corrected state
    had weak directions (``Projector.correct`` without row selection): Newton steps
    ``dq = -Q_k R_kk^-T P_k^T phi`` on the QR of every iterate (:func:`_weak_qr`, ``k``
    the regular rank with the tangent projection, else the rank) until ``max |dq| <=
    tol`` or ``max_newton`` steps, the QR of the Jacobian ``Jb`` (the last iterate's
    before its step, or at the end state without convergence) as the corrected state's
    basis (``update``: ``perm``, ``d``, ``Q``, ``R``), then ``v -= Q_k Q_k^T v``
    unless ``max |J v| <= vtol`` (cut joints: scleronomic rows). ``out = (rank, r0,
    Newton iterations, position violation, velocity violation)``. Returns 0, or
    :data:`WEAK_REFUSED` (a decision the QR must take, or no convergence with
    ``max |J v| <= vtol``, where the projector keeps its last basis; ``q``, ``v`` then
    unchanged)."""
    m, nv = J.shape
    q0 = q.copy()
    _eval(cargs, q, v, False, phi, J, gamma)
    pv = 0.0
    its = 0
    converged = False
    refused = False
    x = np.empty(m)
    for it in range(1, max_newton + 1):
        rank, r0 = _weak_qr(J, rtol, r_reg, has_last, tangent, False, Q, R, perm, d)
        if rank < 0:
            refused = True
            break
        k = r0 if tangent else rank
        for a in range(k):  # R_kk^T x = P_k^T phi
            s = phi[perm[a]]
            for b in range(a):
                s -= R[b, a] * x[b]
            x[a] = s / R[a, a]
        its = it
        pv = 0.0
        for r in range(m):
            pv = max(pv, abs(phi[r]))
        step = 0.0
        for j in range(nv):
            s = 0.0
            for a in range(k):
                s += Q[j, a] * x[a]
            q[j] -= s
            step = max(step, abs(s))
        if step <= tol:
            converged = True
            for r in range(m):
                for j in range(nv):
                    Jb[r, j] = J[r, j]
            break
        _eval(cargs, q, v, False, phi, J, gamma)
        pv = 0.0
        for r in range(m):
            pv = max(pv, abs(phi[r]))
    if not converged and not refused:
        # the velocity correction's Jacobian is the end state's (already evaluated)
        for r in range(m):
            for j in range(nv):
                Jb[r, j] = J[r, j]
        refused = not _violations(phi, Jb, v)[1] > vtol
    if not refused:
        rank, r0 = _weak_qr(Jb, rtol, r_reg, has_last, tangent, True, Q, R, perm, d)
        refused = rank < 0
    if refused:
        for j in range(nv):
            q[j] = q0[j]
        return WEAK_REFUSED
    _, vv = _violations(phi, Jb, v)
    if vv > vtol:
        k = r0 if tangent else rank
        for a in range(k):
            s = 0.0
            for j in range(nv):
                s += Q[j, a] * v[j]
            x[a] = s
        for j in range(nv):
            s = 0.0
            for a in range(k):
                s += Q[j, a] * x[a]
            v[j] -= s
        _, vv = _violations(phi, Jb, v)
    out[0], out[1], out[2], out[3], out[4] = rank, r0, its, pv, vv
    return 0
