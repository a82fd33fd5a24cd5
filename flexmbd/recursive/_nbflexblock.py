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
Python calls.
"""

from .._jit import njit
from . import _nbflexcut as FC
from . import _nbloops as NL


@njit(cache=True)
def flex_loop_rk4_block(
    T, MI, grav, use_grav, reac, tol, max_iter, info, tau, sel, sI, sC, sFt, sFs, cI, E, F,
    G, pspeeds, work, out, solve, zv, ptol, max_newton, rtol, guard, cw, y, h, substeps,
    n_int, Yout, QDD, LAM,
):  # fmt: skip
    """Up to ``n_int`` output intervals of ``substeps`` RK4 steps of ``y = (q, v)``
    (``q' = v``: ``nq == nv``) in place, each step's stages by
    :func:`._nbflexcut.flex_loop_accelerations` (constant joint and modal forces ``tau``,
    gravity; the rows ``sel``) and its correction by :func:`._nbflexcut.flex_correct`
    (position tolerance ``ptol``, ``max_newton`` steps, the rank test's ``rtol`` and
    ``guard``). The state at the end of interval ``j`` goes to ``Yout[j]``; the first
    stage of its first step is the forward dynamics at its start, whose accelerations and
    multipliers go to ``QDD[j]``, ``LAM[j]`` (rows past their end are not written).

    ``T`` ... ``info``: the tree's arguments of :func:`._nbsingle.flex_forward_dynamics`;
    ``sI`` ... ``out``: the cut rows' (:func:`._nbflexcut.flex_cuts_eval`); ``solve =
    (qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, ks (4, 2 nv), yy (2 nv,), y0 (2 nv,))``
    the solve's and the step's scratch; ``zv``: zeros (nv,); ``cw``:
    :func:`._nbloops.correct_work`. Stops before an interval with a failed stage, a
    correction the QR must decide (:data:`._nbloops.NEEDS_QR`) or a non-finite end state
    (``y`` is then that interval's start: the caller's per-interval path decides).
    Returns the number of intervals done."""
    qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, ks, yy, y0 = solve
    n = y.shape[0]
    nv = n // 2
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
                    Y, A, b, x, r, qdd, lam,
                )  # fmt: skip
                if st != 0:
                    break
                if s == 0 and sub == 0 and j < QDD.shape[0]:
                    for i in range(nv):
                        QDD[j, i] = qdd[i]
                    for i in range(lam.shape[0]):
                        LAM[j, i] = lam[i]
                for i in range(nv):
                    ks[s, i] = yy[nv + i]
                    ks[s, nv + i] = qdd[i]
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
