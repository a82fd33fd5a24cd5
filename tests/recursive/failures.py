"""A failing run on the compiled blocks and on the reference path (the failure tests)."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.integrators.explicit import TreeStepper
from flexmbd.recursive._nbloops import BLOCK_NONFINITE


def failures_on_both_paths(monkeypatch, cls, flag, call):
    """``(fast, ref)``: the :class:`flexmbd.errors.SolverError` that ``call()`` raises with
    the stepper class attribute ``cls.flag`` True (the compiled blocks), then False (the
    reference path); each run must fail so."""
    errs = []
    for on in (True, False):
        monkeypatch.setattr(cls, flag, on)
        with pytest.raises(fm.errors.SolverError) as info:
            call()
        errs.append(info.value)
    return tuple(errs)


def nonfinite_in_block(monkeypatch, module, name, k_arg, call, dense=False, m=8):
    """``(fast, ref)`` of :func:`failures_on_both_paths` on ``TreeStepper.step_blocks``
    with a non-finite accepted state planted at the ``m``-th solver step of both paths:
    the block kernel ``module.name`` (``k_arg`` the index of its step limit ``k``; the
    every-step block's step count, records ``Y`` and ``out`` follow at ``k_arg + 2``,
    ``+ 5``, ``+ 7``, a ``dense`` block's at ``+ 1``, ``+ 4``, ``+ 6`` with ``SJ``, ``DN``
    at ``+ 13``, ``+ 14``) is cut at that step, which it reports non-finite (a dense
    block's samples and dense output of it dropped, as the block's own check returns
    before them), and ``TreeStepper._after_solver_step`` makes the reference's state
    non-finite there; the reference must stop at its planted step."""
    steps, inner = [], getattr(module, name)
    after = TreeStepper._after_solver_step
    i_n0, i_y, i_out = (
        (k_arg + 1, k_arg + 4, k_arg + 6) if dense else (k_arg + 2, k_arg + 5, k_arg + 7)
    )

    def planted_block(*a):
        a = list(a)
        n0 = a[i_n0]  # solver steps before the block
        if not n0 <= m - 1 < n0 + a[k_arg]:
            return inner(*a)
        a[k_arg] = m - n0  # up to the m-th step, which turns non-finite
        done = inner(*a)
        if done == m - n0:
            a[i_y][done - 1, 0] = np.nan
            out = a[i_out]
            out[0] = BLOCK_NONFINITE
            if dense:  # (that step's samples and dense output)
                SJ, DN = a[k_arg + 13], a[k_arg + 14]
                out[3] = np.sum(SJ[: int(out[3])] < done - 1)
                out[4], DN[done - 1] = 0.0, 0
        return done

    def planted_step(self, solver):
        steps.append(1)
        if len(steps) == m:
            solver.y[0] = np.nan
        return after(self, solver)

    monkeypatch.setattr(module, name, planted_block)
    monkeypatch.setattr(TreeStepper, "_after_solver_step", planted_step)
    fast, ref = failures_on_both_paths(monkeypatch, TreeStepper, "step_blocks", call)
    assert len(steps) == m  # the reference stopped at its planted step
    return fast, ref
