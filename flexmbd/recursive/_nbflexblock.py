"""Compiled RK4 blocks of closed loops through flexible bodies (numba).

The output intervals of :class:`flexmbd.recursive.loops._LoopStepper`'s RK4 with the
correction after every step, for a loop whose projected solve is compiled
(:meth:`flexmbd.recursive.loops.LoopSystem._flex_direct`), in one call: every stage is
:func:`._nbflexcut.flex_loop_accelerations` and every correction
:func:`._nbflexcut.flex_correct`, on the projector's rows of the last QR; the classical
RK4 stage states and update are the rigid loops' (:func:`._nbloops._rk4_stage_state`,
:func:`._nbloops._rk4_update`), the end of an interval their
:func:`._nbloops._interval_end`. No physics of its own: the same operations, in the same
order, as the Python steps on those kernels (:meth:`~flexmbd.recursive.loops.LoopSystem
.accelerations`, :meth:`~flexmbd.recursive.loops.LoopSystem.project`), without their
Python calls. The output samples (:func:`flex_loop_samples`), the documented single-state
call (:func:`flex_loop_forward_dynamics`) and the block's samples at the start of its
intervals (the first stage there is that sample's forward dynamics) share the operations
after the stage (:func:`_sample_rows`), so that all three give the same numbers.
"""

from .._jit import njit
from . import _flexkernels as FK
from . import _nbflexcut as FC
from . import _nbloops as NL
from . import _nbsingle as NS
from ._kernels import V_FEXT


@njit(cache=True)
def flex_loop_rk4_block(
    T, MI, grav, use_grav, reac, tol, max_iter, info, tau, sel, sI, sC, sFt, sFs, cI, E, F,
    G, pspeeds, work, out, solve, zv, ptol, max_newton, rtol, guard, cw, y, h, substeps,
    n_int, Yout, i0, smp,
):  # fmt: skip
    """Up to ``n_int`` output intervals of ``substeps`` RK4 steps of ``y = (q, v)``
    (``q' = v``: ``nq == nv``) in place, each step's stages by
    :func:`._nbflexcut.flex_loop_accelerations` (constant joint and modal forces ``tau``,
    gravity; the rows ``sel``) and its correction by :func:`._nbflexcut.flex_correct`
    (position tolerance ``ptol``, ``max_newton`` steps, the rank test's ``rtol`` and
    ``guard``). The state at the end of interval ``j`` goes to ``Yout[j]``. The first
    stage of interval ``j`` is the forward dynamics at its start (the corrected end of
    the interval before): it also writes the output sample ``i0 + j`` of ``smp``
    (:func:`flex_loop_samples`' rows, none past their end) by :func:`_sample_rows`, the
    operations of :func:`flex_loop_samples` after its stage.

    ``T`` ... ``info``: the tree's arguments of :func:`._nbsingle.flex_forward_dynamics`;
    ``sI`` ... ``out``: the cut rows' (:func:`._nbflexcut.flex_cuts_eval`); ``solve =
    (qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, ks (4, 2 nv), yy (2 nv,), y0 (2 nv,),
    stiff, sw)`` the solve's and the step's scratch (``stiff``, ``sw``: the geometric
    stiffening switch and scratch of :func:`._nbflexcut.flex_loop_accelerations`); ``zv``:
    zeros (nv,); ``cw``: :func:`._nbloops.correct_work`. Stops before an interval with a
    failed stage, a correction the QR must decide (:data:`._nbloops.NEEDS_QR`) or a
    non-finite end state (``y`` is then that interval's start: the caller's per-interval
    path decides).
    Returns the number of intervals done."""
    qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, ks, yy, y0, stiff, sw = solve
    n = y.shape[0]
    nv = n // 2
    n_smp = smp[3].shape[0]
    for j in range(n_int):
        for i in range(n):
            y0[i] = y[i]
        st = 0
        for sub in range(substeps):
            for s in range(4):
                NL._rk4_stage_state(y, ks, s, h, yy)
                st = FC.flex_loop_accelerations(
                    T, MI, grav, use_grav, reac, tol, max_iter, info, yy[:nv], yy[nv:], tau,
                    sel, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work, out, qf, acc, JT, Yc, C,
                    Y, A, b, x, r, qdd, lam, stiff, sw,
                )  # fmt: skip
                if st != 0:
                    break
                for i in range(nv):
                    ks[s, i] = yy[nv + i]
                    ks[s, nv + i] = qdd[i]
                if s == 0 and sub == 0 and i0 + j < n_smp:
                    _sample_rows(
                        T, MI, grav, use_grav, tol, max_iter, info, sel, sI, sC, sFt, sFs, cI,
                        out, qf, qdd, lam, stiff, rtol, guard, yy[:nv], yy[nv:], tau, smp,
                        i0 + j,
                    )  # fmt: skip
            if st != 0:
                break
            NL._rk4_update(y, ks, h)
            st = FC.flex_correct(
                T, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work, out, zv, y[:nv], y[nv:], sel,
                ptol, max_newton, rtol, guard, cw,
            )  # fmt: skip
            if st != 0:
                break
        if not NL._interval_end(y, y0, st == 0, Yout, j):
            return j
    return n_int


@njit(cache=True)
def flex_loop_samples(
    T, MI, grav, use_grav, reac, tol, max_iter, info, sel, sI, sC, sFt, sFs, cI, E, F, G,
    pspeeds, work, out, solve, rtol, guard, smp, Q, V, TAU,
):  # fmt: skip
    """Output samples of a loop through flexible bodies at the states ``Q`` (n, nq), ``V``
    (n, nv) with the joint and modal forces ``TAU`` (n, nv), in one call: per state the
    documented :meth:`flexmbd.recursive.loops.LoopSystem.forward_dynamics` on the rows
    ``sel`` of the last QR, the stage :func:`._nbflexcut.flex_loop_accelerations` then
    :func:`_sample_rows` (row ``i`` of ``smp``; ``VIOL[i, 2]`` 0 where a solve failed or
    the QR would not select ``sel`` with a margin: the caller's Python path decides).
    ``solve``: :func:`flex_loop_rk4_block`'s scratch; ``smp = (wrench, body_row, accl,
    QDD, LAM, REAC, ACC, CUTF, VIOL)``: ``wrench = (items (2 nc, 10), zq (nmax,), w6
    (NW6, 6), Rb (3, 3), rb (3,))`` and ``accl`` (N+1, 6) scratch, ``body_row`` (N+1,)
    int64 the row of body label ``k`` in ``ACC[i]``, then the rows as
    :func:`_sample_rows` writes them."""
    qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, _ks, _yy, _y0, stiff, sw = solve
    VIOL = smp[8]
    for i in range(Q.shape[0]):
        VIOL[i, 2] = 0.0
        st = FC.flex_loop_accelerations(
            T, MI, grav, use_grav, reac, tol, max_iter, info, Q[i], V[i], TAU[i], sel, sI, sC,
            sFt, sFs, cI, E, F, G, pspeeds, work, out, qf, acc, JT, Yc, C, Y, A, b, x, r, qdd,
            lam, stiff, sw,
        )  # fmt: skip
        if st == 0:
            _sample_rows(
                T, MI, grav, use_grav, tol, max_iter, info, sel, sI, sC, sFt, sFs, cI, out, qf,
                qdd, lam, stiff, rtol, guard, Q[i], V[i], TAU[i], smp, i,
            )  # fmt: skip


@njit(cache=True, inline="always")
def _sample_rows(
    T, MI, grav, use_grav, tol, max_iter, info, sel, sI, sC, sFt, sFs, cI, out, qf, qdd, lam,
    stiff, rtol, guard, q, v, tau, smp, i,
):  # fmt: skip
    """Row ``i`` of the output samples ``smp`` (:func:`flex_loop_samples`) right after
    the stage :func:`._nbflexcut.flex_loop_accelerations` at ``(q, v)`` with ``tau`` gave
    ``qdd`` and ``lam``: violations ``VIOL[i, :2] = (max |phi|, max |J v|)`` (m or rad,
    m/s or rad/s); where the QR would select ``sel`` with a margin
    (:func:`._nbloops._same_rank_decision`), accelerations ``QDD[i]``, multipliers
    ``LAM[i]``, the cut joints' wrenches ``CUTF[i, c] = D_c^T lam_c`` (N m, N; child
    joint-frame axes at its origin), then the tree solved with them applied through the
    cut frames (:func:`._nbflexcut.flex_frame_wrenches`, then
    :func:`._nbsingle.flex_factored_dynamics` on the stage's kinematics and factor at
    ``(q, v)``, loads kept): the tree joints' reactions ``REAC[i]`` and the world body
    accelerations ``ACC[i, body_row[k]]`` (k = 1 ... N; other rows not written), and
    ``VIOL[i, 2] = 1`` when all of it succeeded (else 0). ``qf``: scratch (nv,)."""
    wrench, body_row, accl, QDD, LAM, REAC, ACC, CUTF, VIOL = smp
    items, zq, w6, Rb, rb = wrench
    phi, J, D, Rw, pw = out[0], out[1], out[6], out[7], out[8]
    VIOL[i, 2] = 0.0
    VIOL[i, 0], VIOL[i, 1] = NL._violations(phi, J, v)
    if not NL._same_rank_decision(J, sel, rtol, guard):
        return
    for j in range(qdd.shape[0]):
        QDD[i, j] = qdd[j]
    for j in range(lam.shape[0]):
        LAM[i, j] = lam[j]
    # the cut wrenches and their pairs on the cut frames (the workspace is at (q, v) with
    # world poses and the factor at q: flex_cuts_eval's or the stiffening's last pass)
    # unrolled: the wrenches' application and tree solve of _nbflexcut._stiff_g, here with
    # the body accelerations and into the sample's rows (a shared helper is an edit of
    # _nbflexcut, whose cut rows another change of this round rewrites)
    W = FK.FlexWork(*T)
    fext = W.Vv[V_FEXT]
    FC.cut_items(cI, D, Rw, pw, lam, CUTF[i], items)
    for k in range(fext.shape[0]):
        for a in range(6):
            fext[k, a] = 0.0
    NS._clear_applied(W.Fm)
    FC.flex_frame_wrenches(T, sI, sC, sFt, sFs, q, items, zq, w6, Rb, rb, fext)
    st = NS.flex_factored_dynamics(
        T, q, v, tau, MI, grav, use_grav, REAC[i], stiff, tol, max_iter, info, qf, accl, True,
        False,
    )  # fmt: skip
    for k in range(fext.shape[0]):
        for a in range(6):
            fext[k, a] = 0.0
    if st != 0:
        return
    for k in range(1, body_row.shape[0]):
        r = body_row[k]
        for a in range(6):
            ACC[i, r, a] = accl[k, a]
    VIOL[i, 2] = 1.0


@njit(cache=True)
def flex_loop_rhs(
    T, MI, grav, use_grav, reac, tol, max_iter, info, tau, sel, sI, sC, sFt, sFs, cI, E, F,
    G, pspeeds, work, out, solve, zv, ptol, max_newton, rtol, guard, cw, y, f,
):  # fmt: skip
    """Right-hand side ``f = (v, qdd)`` (``q' = v``) of the adaptive integrators at ``y``
    with the correction inside the evaluation (``projection="rhs"``) on a loop through
    flexible bodies: :func:`._nbflexcut.flex_correct` of a copy of ``y`` (the scratch
    ``y0`` of ``solve``), then :func:`._nbflexcut.flex_loop_accelerations` at the
    corrected state (arguments as :func:`flex_loop_rk4_block`). Returns 0,
    :data:`._nbloops.NEEDS_QR` or the failure of a solve (the caller's Python path then
    decides; ``f`` undefined)."""
    qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, _ks, _yy, yc, stiff, sw = solve
    n = y.shape[0]
    nv = n // 2
    for i in range(n):
        yc[i] = y[i]
    st = FC.flex_correct(
        T, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work, out, zv, yc[:nv], yc[nv:], sel, ptol,
        max_newton, rtol, guard, cw,
    )  # fmt: skip
    if st != 0:
        return st
    st = FC.flex_loop_accelerations(
        T, MI, grav, use_grav, reac, tol, max_iter, info, yc[:nv], yc[nv:], tau, sel, sI, sC,
        sFt, sFs, cI, E, F, G, pspeeds, work, out, qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam,
        stiff, sw,
    )  # fmt: skip
    if st != 0:
        return st
    for i in range(nv):
        f[i] = yc[nv + i]
        f[nv + i] = qdd[i]
    return 0


@njit(cache=True)
def flex_correct_rows(
    T, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work, out, zv, sel, ptol, max_newton, rtol,
    guard, cw, Y, status,
):  # fmt: skip
    """:func:`._nbflexcut.flex_correct` of every state ``Y[i] = (q, v)`` (``nq == nv``) in
    place on the rows ``sel`` of the last QR; ``status[i]`` its return (0, or
    :data:`._nbloops.NEEDS_QR`: the row is unchanged and the caller's QR corrects it)."""
    nv = Y.shape[1] // 2
    for i in range(Y.shape[0]):
        status[i] = FC.flex_correct(
            T, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work, out, zv, Y[i, :nv], Y[i, nv:],
            sel, ptol, max_newton, rtol, guard, cw,
        )  # fmt: skip


@njit(cache=True)
def flex_loop_forward_dynamics(
    T, MI, grav, use_grav, reac_f, tol, max_iter, info, sel, sI, sC, sFt, sFs, cI, E, F, G,
    pspeeds, work, out, solve, rtol, guard, smp, q, v, tau, reac, tree_rows, cut_rows,
):  # fmt: skip
    """The documented :meth:`flexmbd.recursive.loops.LoopSystem.forward_dynamics` of a loop
    through flexible bodies at one state ``(q, v)`` with the joint and modal forces
    ``tau`` (nv,): :func:`flex_loop_samples`' operations into row 0 of ``smp``, then
    ``reac`` (every joint, 6) zero but row ``tree_rows[a]`` the tree joint ``a``'s
    reaction and row ``cut_rows[c]`` the cut joint ``c``'s wrench (N m, N; child
    joint-frame axes at its origin). Returns 0, or 1 where :func:`flex_loop_samples`
    would leave the row to the caller's Python path (``reac`` then undefined)."""
    qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, _ks, _yy, _y0, stiff, sw = solve
    REAC, CUTF, VIOL = smp[5], smp[7], smp[8]
    VIOL[0, 2] = 0.0
    st = FC.flex_loop_accelerations(
        T, MI, grav, use_grav, reac_f, tol, max_iter, info, q, v, tau, sel, sI, sC, sFt, sFs,
        cI, E, F, G, pspeeds, work, out, qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, stiff,
        sw,
    )  # fmt: skip
    if st != 0:
        return 1
    _sample_rows(
        T, MI, grav, use_grav, tol, max_iter, info, sel, sI, sC, sFt, sFs, cI, out, qf, qdd,
        lam, stiff, rtol, guard, q, v, tau, smp, 0,
    )  # fmt: skip
    if VIOL[0, 2] != 1.0:
        return 1
    # unrolled: the rows of _nbsingle.loop_forward_dynamics_rows (the rigid loops'); a
    # helper shared with it is an edit of _nbsingle, which every loop kernel recompiles
    for k in range(reac.shape[0]):
        for a in range(6):
            reac[k, a] = 0.0
    for t in range(tree_rows.shape[0]):
        k = tree_rows[t]
        for a in range(6):
            reac[k, a] = REAC[0, t, a]
    for c in range(cut_rows.shape[0]):
        k = cut_rows[c]
        for a in range(6):
            reac[k, a] = CUTF[0, c, a]
    return 0
