"""Compiled attempts of scipy's explicit Runge-Kutta pairs (RK45, RK23, DOP853) whose
loads include Python functions of time (numba).

The functions cannot run inside a compiled block, but an attempt's stage times are known
before the attempt: ``t + c_s h`` and ``t + h``. The caller (Python) evaluates the
functions there, writes their values into a table ``TT`` (one row per evaluation, one
column per value, :meth:`flexmbd.recursive.RecursiveSystem.tabulated_forces`) and calls
:func:`timed_rk_attempt`, which takes the attempt with the right-hand side of the
adaptive blocks of :mod:`flexmbd.recursive._nbloops` (a rigid tree, or a closed loop
with the correction inside each evaluation) and either records the accepted step as
:func:`flexmbd.recursive._nbloops.loop_rk_block` records its steps or hands a smaller
step size back for a new table. A module of its own: the kernels of ``_nbloops`` and
their caches stay as they are.
"""

import numpy as np

from .._jit import njit
from ..integrators.stepper import rk_tableau
from ._nbforces import set_clock
from ._nbloops import BLOCK_DONE as _DONE
from ._nbloops import (
    BLOCK_HANDBACK,
    BLOCK_NONFINITE,
    BLOCK_STALL,
    _dop853_norm,
    _dot_stage,
    _renormalized,
    _rk_norm,
    _set_loads,
    _stall_verdict,
    loop_rhs,
    loop_rhs_keep,
)

#: :func:`timed_rk_attempt`'s return when the attempt was rejected (the next attempt's
#: size in ``att``; the caller tabulates its stage times and calls again); when the
#: accepted step leaves the block going on
ATTEMPT_REJECTED, ATTEMPT_GO = -2, -1


@njit(cache=True)
def timed_rk_attempt(
    Ib, buf, cargs, forces, tau, sel, tol, max_newton, rtol, guard, ws, reac,
    ts, y, f, t_bound, direction, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
    TT, tix, att, j, t_stop, n_steps, win, stall, Yout, REC, out, y_new, f_new, yc, lam, qoff,
):  # fmt: skip
    """One attempt of a step of scipy's ``RK45`` / ``RK23`` / ``DOP853`` (tableau ``A``,
    ``B``, ``C``, error estimators ``E3``, ``E5`` as :func:`._nbloops.loop_rk_step`
    takes them) from the solver state ``ts = (t, h_abs)`` (s), ``y``, ``f``, with the
    size the caller computed as scipy's ``_step_impl`` does: ``att = (t_new, h,
    h_abs, rejected, evaluations)`` (s, s, s; ``rejected`` 1 after a rejected attempt of
    this step, the evaluations of those attempts). Stage ``s`` (1 ... stages - 1) is
    evaluated at ``t + C[s] h`` with row ``s - 1`` of ``TT``, the end at ``t + h`` with
    row ``stages - 1`` (:func:`._nbloops._set_loads` into the force table's columns
    ``tix``, after the table's clock), by :func:`._nbloops.loop_rhs` (a tree: ``cargs``
    None; the last evaluation by ``loop_rhs_keep``, its corrected state in ``yc``, its
    multipliers in ``lam``), the operations of :func:`._nbloops._rk_step`.

    Rejected: ``att[2]`` the next attempt's ``h_abs``, ``att[3] = 1``, ``att[4]`` the
    evaluations so far; returns :data:`ATTEMPT_REJECTED`. Accepted: as
    :func:`._nbloops._block_step` records step ``j`` (``Yout[j]``, ``REC[j] = (t_new,
    h_abs_next, h, evaluations)``, ``y``, ``f``, ``ts`` advanced, the stall rule with
    ``n_steps``, ``win``, ``stall``), the quaternions at ``qoff`` renormalized as
    :func:`._nbloops.tree_rk_block` does; returns :data:`ATTEMPT_GO` or the block's stop
    code (also in ``out[0]``). A failed evaluation: :data:`~._nbloops.BLOCK_HANDBACK`,
    ``out = (BLOCK_HANDBACK, status, evaluations)`` (the caller redoes the step by
    scipy's code)."""
    n = y.shape[0]
    ns = B.shape[0]
    t = ts[0]
    t_new, h, h_abs = att[0], att[1], att[2]
    nfev = int(att[4])
    yy = np.empty(n)
    err5 = np.empty(n)
    err3 = np.empty(n)
    for i in range(n):
        K[0, i] = f[i]
    st = 0
    for s in range(1, ns):
        _dot_stage(y, K, A[s], s, h, yy)
        set_clock(forces[0], forces[1], t + C[s] * h)
        _set_loads(forces, TT, tix, s - 1)
        st = loop_rhs(
            Ib, buf, cargs, forces, yy, tau, sel, tol, max_newton, rtol, guard, ws, reac, K[s]
        )
        nfev += 1
        if st != 0:
            break
    if st == 0:
        d = np.dot(K[:ns].T, B)
        for i in range(n):
            y_new[i] = y[i] + h * d[i]
        set_clock(forces[0], forces[1], t + h)
        _set_loads(forces, TT, tix, ns - 1)
        st = loop_rhs_keep(
            Ib, buf, cargs, forces, y_new, tau, sel, tol, max_newton, rtol, guard, ws, reac,
            f_new, yc, lam,
        )  # fmt: skip
        nfev += 1
    if st != 0:
        out[0], out[1], out[2] = BLOCK_HANDBACK, st, nfev
        return BLOCK_HANDBACK
    for i in range(n):
        K[ns, i] = f_new[i]
    if E3.shape[0]:
        error_norm = _dop853_norm(y, y_new, K, E3, E5, h, r_tol, a_tol, err5, err3)
    else:
        error_norm = _rk_norm(y, y_new, K, E5, h, r_tol, a_tol, err5)
    if not error_norm < 1.0:  # (a NaN norm rejects, as in _rk_step)
        att[2] = h_abs * max(min_factor, safety * error_norm**exponent)
        att[3] = 1.0
        att[4] = nfev
        return ATTEMPT_REJECTED
    if error_norm == 0.0:
        factor = max_factor
    else:
        factor = min(max_factor, safety * error_norm**exponent)
    if att[3] != 0.0:
        factor = min(1.0, factor)
    h_abs *= factor
    finite = True
    for i in range(n):
        Yout[j, i] = y_new[i]
        y[i] = y_new[i]
        f[i] = f_new[i]
        finite = finite and np.isfinite(y_new[i])
    REC[j, 0], REC[j, 1], REC[j, 2], REC[j, 3] = t_new, h_abs, h, nfev
    ts[0], ts[1] = t_new, h_abs
    code = ATTEMPT_GO
    if not finite:
        code = BLOCK_NONFINITE
    elif _stall_verdict(win, n_steps + j + 1, t_new, h_abs, stall):
        code = BLOCK_STALL
    elif direction * (t_new - t_bound) >= 0 or t_stop <= t_new + 1e-12:
        code = _DONE
    out[0] = code
    return _renormalized(y, qoff, Yout, j, code, out)


#: scipy's step-size factors of its explicit Runge-Kutta pairs (``rk.py``)
_SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0


def timed_block(solver, rhs, tabulate, qoff, k, t_stop, n_steps, win, stall, after=None):
    """Up to ``k`` accepted steps of scipy's ``RK45`` / ``RK23`` / ``DOP853`` ``solver``
    (scalar tolerances) from its state, each attempt by :func:`timed_rk_attempt`: a
    block of :meth:`flexmbd.integrators.stepper.ExplicitStepper._solver_block` (its
    arguments, stop reasons and ``(done, Y, REC, f, out)``). ``rhs``: the first twelve
    arguments of :func:`._nbloops.loop_rhs` (``Ib, buf, cargs, forces, tau, sel, tol,
    max_newton, rtol, guard, ws, reac``); ``tabulate(times)``: ``(TT, tix)``, the force
    table's values of time at an attempt's evaluation times (s), as
    :meth:`flexmbd.recursive.RecursiveSystem.tabulated_forces` gives them; ``qoff``: the
    quaternion offsets (int64) renormalized after each accepted step. Each attempt's
    size is scipy's ``_step_impl``'s (``max_step``, ``min_step``, ``t_bound``), so the
    functions of time are called at the times scipy's own steps evaluate the
    right-hand side, rejected attempts included. A step below ``min_step``, a failed
    evaluation or an exception of ``tabulate`` hands the step back (scipy's ``step()``
    then redoes it and meets the same failure: the functions of that step are called
    again). ``after(j, y_new, f_new, yc, lam)``, if given, is called after accepted step
    ``j`` (its state, derivative, and a loop's corrected state and multipliers of the
    step's last evaluation, whose tree pass and force table values the workspaces still
    hold)."""
    s = solver
    A, E3, E5 = rk_tableau(s)
    B, C, K = s.B, s.C, s.K
    ns = B.shape[0]
    n = s.y.shape[0]
    ts = np.array([s.t, s.h_abs], dtype=float)
    y, f = np.array(s.y, dtype=float), np.array(s.f, dtype=float)
    Y, REC, out = np.empty((k, n)), np.empty((k, 4)), np.zeros(3)
    y_new, f_new = np.empty(n), np.empty(n)
    nc = rhs[10][0].shape[0]  # (a loop's multipliers; a tree: none)
    yc, lam = (np.empty(n), np.empty(nc)) if rhs[2] is not None else (np.empty(0), np.empty(0))
    att = np.zeros(5)
    times = np.empty(ns)
    direction, t_bound = float(s.direction), float(s.t_bound)
    max_step, r_tol, a_tol = float(s.max_step), float(s.rtol), float(s.atol)
    exponent = float(s.error_exponent)
    Cs = C[1:ns]
    for j in range(k):
        t, h_abs = ts[0], ts[1]
        min_step = 10.0 * np.abs(np.nextafter(t, direction * np.inf) - t)
        if h_abs > max_step:
            h_abs = max_step
        elif h_abs < min_step:
            h_abs = min_step
        att[3] = att[4] = 0.0
        while True:
            if h_abs < min_step:  # scipy's "step size too small": its step() says so
                out[0], out[1], out[2] = BLOCK_HANDBACK, -1, att[4]
                return j, Y, REC, f, out
            h = h_abs * direction
            t_new = t + h
            if direction * (t_new - t_bound) > 0:
                t_new = t_bound
            h = t_new - t
            h_abs = np.abs(h)
            times[: ns - 1] = t + Cs * h
            times[ns - 1] = t + h
            try:
                TT = tabulate(times)
            except Exception:  # noqa: BLE001 - scipy's step() meets it again and raises
                out[0], out[1], out[2] = BLOCK_HANDBACK, 0, att[4]
                return j, Y, REC, f, out
            att[0], att[1], att[2] = t_new, h, h_abs
            code = timed_rk_attempt(
                *rhs, ts, y, f, t_bound, direction, r_tol, a_tol,
                A, B, C, E3, E5, K, _SAFETY, _MIN_FACTOR, _MAX_FACTOR, exponent,
                TT[0], TT[1], att, j, t_stop, n_steps, win, stall, Y, REC, out,
                y_new, f_new, yc, lam, qoff,
            )  # fmt: skip
            if code != ATTEMPT_REJECTED:
                break
            h_abs = att[2]
        if code == BLOCK_HANDBACK:
            return j, Y, REC, f, out
        if after is not None:
            after(j, y_new, f_new, yc, lam)
        if code != ATTEMPT_GO:
            return j + 1, Y, REC, f, out
    out[0] = _DONE
    return k, Y, REC, f, out
