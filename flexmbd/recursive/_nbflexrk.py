"""Compiled adaptive steps of closed loops through flexible bodies (numba).

The blocks of scipy's RK45 / RK23 / DOP853 steps of :mod:`flexmbd.recursive._nbloops`
(:func:`._nbloops.loop_rk_block`: stages, error norm, step-size control, stall rule and
hand-back, written once for every system) take a loop through flexible bodies when its
row evaluator is :func:`flex_loop_eval`, the right-hand side that
:meth:`flexmbd.recursive.loops.LoopSystem.flex_rhs` calls from Python
(:func:`._nbflexblock.flex_loop_rhs`: the compiled correction on the projector's rows,
then the projected accelerations). ``_nbloops`` cannot import this module (it imports
``_nbloops``): it finds the evaluator by the key :data:`KEY` that the force-table
argument carries (:func:`flex_rk_forces`, :func:`._nbloops.add_row_evaluator`). The key
holds the digest of the kernel sources the evaluator compiles from
(:func:`flexmbd._jit.kernel_sources_digest`), so a step of ``_nbloops`` cached with
another version of them is not taken.
"""

from pathlib import Path

import numpy as np

from .._jit import kernel_sources_digest, njit
from . import _nbflexblock as FB
from . import _nbloops as NL

#: the row evaluator's key: its name and the digest of the kernel sources it compiles from
KEY = "flex_loop_eval_" + kernel_sources_digest(Path(__file__))[:20]
#: the empty record array whose field name is :data:`KEY` (the force-table argument's
#: third entry)
_MARKER = np.zeros(0, dtype=[(KEY, np.int8)])
#: an empty force table (no clock for the steps to set: :func:`._nbforces.set_clock`)
_NO_TABLE = (np.zeros((0, 1), dtype=np.int64), np.zeros((0, 1)))


@njit(cache=True)
def flex_loop_eval(T, rows, fargs, y, tau, sel, ptol, max_newton, rtol, guard, ws, reac, f):
    """The row evaluator of a loop through flexible bodies in the adaptive blocks of
    :mod:`._nbloops` (:func:`._nbloops.add_row_evaluator`): :func:`._nbflexblock
    .flex_loop_rhs` at ``y = (q, v)`` (2 nv,; SI joint and modal coordinates and speeds)
    into ``f = (v, qdd)``, the correction inside the evaluation on the rows ``sel`` with
    the position tolerance ``ptol`` (m or rad), ``max_newton`` steps and the rank test's
    ``rtol`` and ``guard``; ``T`` the tree's workspace, ``rows`` the cut rows' arguments
    (``sI`` ... ``out`` of :func:`._nbflexcut.flex_cuts_eval`), ``fargs`` those of
    :func:`flex_rk_forces`, ``reac`` the tree reactions' scratch (``ws`` unused: the rows'
    outputs are the last of ``rows``). Returns :func:`._nbflexblock.flex_loop_rhs`'s
    status (0; :data:`._nbloops.NEEDS_QR` or a failed solve: ``f`` undefined)."""
    MI, grav, use_grav, tol, max_iter, info, solve, zv, cw = fargs[3:]
    sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work, out = rows
    return FB.flex_loop_rhs(
        T, MI, grav, use_grav, reac, tol, max_iter, info, tau, sel, sI, sC, sFt, sFs, cI, E, F,
        G, pspeeds, work, out, solve, zv, ptol, max_newton, rtol, guard, cw, y, f,
    )  # fmt: skip


NL.add_row_evaluator(KEY, flex_loop_eval)


def flex_rk_forces(MI, grav, use_grav, tol, max_iter, info, solve, zv, cw) -> tuple:
    """The force-table argument of :func:`._nbloops.loop_rk_block` for a loop through
    flexible bodies: an empty force table, the marker of :func:`flex_loop_eval` and that
    evaluator's arguments (the tree's stiffening and loads ``MI`` ... ``info`` of
    :meth:`flexmbd.recursive.flexible.FlexTree.flex_single_args`, the solve's scratch
    ``solve``, zeros ``zv`` (nv,) and :func:`._nbloops.correct_work` ``cw``)."""
    return (*_NO_TABLE, _MARKER, MI, grav, use_grav, tol, max_iter, info, solve, zv, cw)
