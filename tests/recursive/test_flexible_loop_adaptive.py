"""Adaptive steps (RK45 / RK23 / DOP853) of closed loops through flexible bodies in the
compiled blocks of ``_nbloops`` (``_LoopStepper._flex_solver_block``, the row evaluator
``_nbflexrk.flex_loop_eval``): the same steps, bit for bit, as scipy's steps with one
compiled right-hand side call per evaluation (``LoopSystem.flex_rhs``,
``_LoopStepper.step_blocks = False``), and the blocks are the path taken."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.recursive import _nbflexrk as FR
from flexmbd.recursive import _nbloops as NL
from flexmbd.recursive.loops import LoopSystem, _LoopStepper

from .interrupt import interrupted_at_chunk
from .test_flexible_loop_kernels import _counting, _loop

RESULTS = ("t", "q", "qd", "qdd", "reactions")


def _same_runs(a, b):
    """Two runs equal bit for bit: states, samples, every statistic but the CPU time."""
    for name in RESULTS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.meta["steps"] == b.meta["steps"]
    for k in a.stats:
        if k != "cpu_time":
            assert np.array_equal(a.stats[k], b.stats[k], equal_nan=True), k


@pytest.mark.parametrize(
    "method, stiff, out",
    [("RK45", False, {}), ("RK45", True, {}), ("RK23", False, {}), ("DOP853", False, {}),
     ("RK45", False, {"dt": 2e-4}), ("DOP853", True, {"dt": 2e-4})],
)  # fmt: skip
def test_blocks_equal_scipys_steps_on_flex_rhs(method, stiff, out, monkeypatch):
    """After scipy's first evaluations (the QR selects the rows) every accepted step runs
    in compiled blocks: :func:`._nbloops.loop_rk_block` calls, two Python calls of
    :meth:`LoopSystem.flex_rhs` (scipy's start; DOP853 with output times: its dense
    output's three extra stages per output step); the run equals scipy's steps on
    ``flex_rhs`` bit for bit (the same evaluations: the block's row evaluator calls
    :func:`._nbflexblock.flex_loop_rhs`, the kernel ``flex_rhs`` calls)."""
    ls, q, qd = _loop("cbA", "spherical", stiff)
    kw = dict(integrator=method, rtol=1e-7, atol=1e-9, q0=q, qd0=qd, **out)
    ls.simulate(0.0002, **kw)  # (compiles every kernel before any is replaced)
    calls = {}
    _counting(monkeypatch, NL, ("loop_rk_block",), calls)
    _counting(monkeypatch, LoopSystem, ("flex_rhs",), calls)
    r1 = ls.simulate(0.001, **kw)
    steps = r1.meta["steps"]
    assert steps >= 8 and calls["loop_rk_block"] >= 1
    extra = 0
    if method == "DOP853" and out:  # (scipy's dense output per step holding output times)
        extra = 3 * (len(r1.t) - 1)
    assert calls["flex_rhs"] <= 2 + extra, calls
    n = dict(calls)
    monkeypatch.setattr(_LoopStepper, "step_blocks", False)
    r0 = ls.simulate(0.001, **kw)
    assert calls["loop_rk_block"] == n["loop_rk_block"]
    stages = {"RK45": 6, "RK23": 3, "DOP853": 12}[method]  # (evaluations of a step)
    assert calls["flex_rhs"] - n["flex_rhs"] >= stages * steps  # (one call per evaluation)
    _same_runs(r1, r0)
    assert np.abs(r1.q[-1] - q).max() > 1e-4  # (the loop moved)


def test_the_row_evaluator_is_keyed_by_its_sources():
    """The blocks of ``_nbloops`` find the flexible loop's evaluator by the field name of
    the force-table argument's marker, which names the evaluator and the digest of the
    kernel sources it compiles from (a cached step compiled with other sources has another
    key: another argument type)."""
    from pathlib import Path

    from flexmbd._jit import kernel_sources_digest

    ls, q, qd = _loop("cbA", "spherical", False)
    P = ls.stepper(0.001, integrator="RK45", q0=q, qd0=qd).P
    ls.project(q, qd, 0.0, P)  # (the QR selects the rows)
    head = ls.flex_rk_args(None, P)
    assert head is not None and head[0] is None and head[2][-1] is head[10]
    marker = head[3][2]
    (key,) = marker.dtype.names
    assert key == FR.KEY and NL.ROW_EVALUATORS[key] is FR.flex_loop_eval
    assert key.endswith(kernel_sources_digest(Path(FR.__file__))[:20])
    # the block's row evaluator on its arguments is LoopSystem.flex_rhs, bit for bit
    y = np.concatenate([q, qd])
    f = np.empty(y.shape[0])
    a = head
    st = FR.flex_loop_eval(a[1], a[2], a[3], y, a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], f)
    assert st == 0 and np.array_equal(f, ls.flex_rhs(y, None, P))


def test_a_handed_back_step_is_redone_by_scipys_step(monkeypatch):
    """A block's evaluation that the QR must decide hands the step back: scipy's step on
    ``_f`` redoes it (its compiled evaluations hand over to the Python path one by one,
    as scipy's steps on ``flex_rhs`` do) and the run equals those steps bit for bit
    (the statistics count the handed-back attempts' evaluations as well)."""
    ls, q, qd = _loop("cbA", "spherical", False)
    kw = dict(integrator="RK45", rtol=1e-7, atol=1e-9, q0=q, qd0=qd)
    ls.simulate(0.0002, **kw)
    # the blocks' rank test with a threshold above every pivot (the QR would select no
    # row): their first evaluation hands every step back (flex_rhs keeps the projector's)
    args = LoopSystem.flex_rk_args

    def refusing(self, tau, P):
        head = args(self, tau, P)
        return None if head is None else (*head[:8], 2.0, *head[9:])

    monkeypatch.setattr(LoopSystem, "flex_rk_args", refusing)
    calls = {}
    _counting(monkeypatch, NL, ("loop_rk_block",), calls)
    r1 = ls.simulate(0.0005, **kw)
    assert calls["loop_rk_block"] >= r1.meta["steps"] - 2  # (each hands its step back)
    monkeypatch.setattr(_LoopStepper, "step_blocks", False)
    r0 = ls.simulate(0.0005, **kw)
    for name in RESULTS:
        assert np.array_equal(getattr(r1, name), getattr(r0, name)), name


def test_blocks_resume_bit_for_bit(tmp_path, monkeypatch):
    """A checkpointed RK45 run (a checkpoint every 23 steps: no block crosses one) equals
    the run without checkpoints bit for bit; interrupted at its third chunk and resumed
    (the projector's state and the solver's from the file), it equals it too, and the
    resumed steps run in blocks."""
    ls, q, qd = _loop("cbA", "spherical", False)
    kw = dict(integrator="RK45", rtol=1e-7, atol=1e-9, q0=q, qd0=qd)
    ref = ls.simulate(0.001, **kw)
    _same_runs(ls.simulate(0.001, checkpoint=tmp_path / "a.h5", every=23, **kw), ref)
    path = tmp_path / "b.h5"
    with interrupted_at_chunk(monkeypatch) as seen:
        ls.simulate(0.001, checkpoint=path, every=23, **kw)
    assert seen[:2] == [23, 23]
    calls = {}
    _counting(monkeypatch, NL, ("loop_rk_block",), calls)
    _same_runs(fm.resume(path), ref)
    assert calls["loop_rk_block"] >= 1


def test_max_step_bounds_the_adaptive_attempts():
    """``max_step`` reaches a closed loop's adaptive steps, as a tree's: DOP853 from the
    flexible four-bar's initial state (scipy's first attempt, about 5e-3 s, is far beyond
    the stability limit of the coupler's modes, and its stages leave the model: the
    failure names the option) runs with every step at most ``max_step``, the constraints
    held; the option is kept for a resume."""
    from flexmbd.errors import SolverError

    from .test_flexible_loops import fourbar

    s = fourbar("cbA").compile("recursive")
    # without it the first attempt leaves the model: a SolverError naming the attempt and
    # the option, the (initial) results kept
    with pytest.raises(SolverError, match="max_step") as failed:
        s.simulate(0.005, integrator="dop853", rtol=1e-6, atol=1e-8)
    assert failed.value.partial is not None and failed.value.partial.t[0] == 0.0
    r = s.simulate(0.005, integrator="dop853", rtol=1e-6, atol=1e-8, max_step=2e-4)
    assert r.t[-1] == pytest.approx(0.005, abs=1e-15)
    assert np.diff(r.t).max() <= 2e-4 * (1.0 + 1e-12) and len(r.t) > 25
    assert r.stats["position_violation"].max() < 1e-10
    assert s.stepper(0.005, integrator="dop853", max_step=2e-4).options["max_step"] == 2e-4
