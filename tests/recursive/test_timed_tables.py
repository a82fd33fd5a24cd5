"""Adaptive RK45 / DOP853 / RK23 runs whose loads include Python functions of time
(``JointForce.of_time`` drives, point loads of time, spring-damper actuators ``fa(t)``)
in compiled attempts (``_nbtimed.timed_block``): each attempt's stage times ``t + c h``
are known before the attempt, so Python evaluates the functions there, tabulates them,
and one compiled call takes the attempt (stages, error norm, accept or reject as scipy).

The reference is the path before (``TreeStepper.timed_blocks`` /
``_LoopStepper.timed_blocks`` False): scipy's ``step()`` on the compiled single-state
forward dynamics (trees) or on the compiled loop right-hand side (loops), the functions
evaluated at each evaluation's time. The attempts take the same operations on the same
numbers, so the runs are equal bit for bit, and the functions are called at the same
times in the same order.
"""

import math
from functools import partial

import models
import numpy as np
import pytest

import flexmbd as fm
from flexmbd.checkpoint import run
from flexmbd.integrators.explicit import TreeStepper, tree_stepper
from flexmbd.recursive import _nbtimed as NT
from flexmbd.recursive import loops as L

from .failures import failures_on_both_paths
from .interrupt import resumes_in_blocks
from .test_tree_adaptive import chain

OUTPUTS = dict(every={}, dt={"dt": 0.05})  # (s)
INTEGRATORS = ["rk45", "dop853", "rk23"]


def _drive(t):
    return 0.8 * math.sin(5.0 * t)


def _push(t):
    return [0.0, 0.0, 2.0 * math.cos(3.0 * t)]


def _act(t):
    return 0.3 + 0.2 * t


def timed_chain(seen=None, fail=None, n=3, spherical=False):
    """:func:`chain` with three loads that are Python functions of time: an ``of_time``
    drive on the first joint, a point force of time on the second rod and a
    spring-damper law whose actuator is a function of time on the last joint, each
    recording its calls ``(name, t)`` in the list ``seen`` if given (else module
    functions: a checkpoint's model fingerprint reads their code); ``fail(t)``, if
    given, replaces the drive's value. ``spherical``: a Spherical joint at the end
    (quaternion coordinates)."""
    m = chain(n)
    if spherical:
        m.tip = fm.RigidBody.rod(mass=0.5, length=0.4, radius=0.02, origin="end")
        m.ball = fm.Spherical(getattr(m, f"rod{n - 1}"), m.tip, parent_frame=(0.5, 0, 0))
    drive, push, act = _drive, _push, _act
    if seen is not None:

        def drive(t):
            seen.append(("drive", float(t)))
            return _drive(t) if fail is None else fail(t)

        def push(t):
            seen.append(("push", float(t)))
            return _push(t)

        def act(t):
            seen.append(("act", float(t)))
            return _act(t)

    m.drive = fm.JointForce.of_time(m.j0, drive)
    m.push = fm.PointForce(m.rod1, (0.5, 0.0, 0.0), push)
    m.sda = fm.JointForce.spring_damper(getattr(m, f"j{n - 1}"), 4.0, 0.3, actuator=act)
    return m


def same_run(a, b):
    """Bit for bit: times, states, samples, statistics (not the CPU time) and energies."""
    for k in ("t", "q", "qd", "qdd", "reactions"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    assert a.stats.keys() == b.stats.keys()
    for k in a.stats:
        if k != "cpu_time":
            np.testing.assert_array_equal(a.stats[k], b.stats[k])
    for k in a.energy:
        np.testing.assert_array_equal(a.energy[k], b.energy[k])
    assert a.meta["steps"] == b.meta["steps"]


def counted(monkeypatch, cls):
    """The accepted steps of the compiled attempts' blocks and the Python right-hand
    side's evaluations (``cls._f``)."""
    blocks, python = [], []
    inner, f = NT.timed_block, cls._f

    def block(*a, **kw):
        got = inner(*a, **kw)
        blocks.append(got[0])
        return got

    monkeypatch.setattr(NT, "timed_block", block)
    monkeypatch.setattr(cls, "_f", lambda self, t, y: python.append(t) or f(self, t, y))
    return blocks, python


def both_paths(monkeypatch, cls, simulate, seen, counters):
    """``{on: (results, the functions' calls, Python right-hand side evaluations,
    accepted steps in compiled attempts)}`` (``counters``: :func:`counted`'s lists)
    of ``simulate()`` on the compiled attempts (True) and on the path before (False),
    each after the same run (the force table's cache holds one table: a run that builds
    it evaluates its functions at 0 s once more, on either path)."""
    out = {}
    simulate()
    for on in (False, True):
        monkeypatch.setattr(cls, "timed_blocks", on)
        blocks, python = counters
        seen.clear(), python.clear(), blocks.clear()
        res = simulate()
        out[on] = (res, list(seen), len(python), sum(blocks))
    return out


@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("spherical", [False, True])
def test_tree_attempts_equal_scipys_steps(monkeypatch, integrator, output, spherical):
    """A rigid tree (with a Spherical joint: the quaternions renormalized after each
    accepted step) with three kinds of functions of time: bit for bit the path before,
    the functions called at the same times in the same order (rejected attempts
    included), the Python right-hand side only for scipy's start and DOP853's dense
    outputs."""
    seen = []
    s = timed_chain(seen, spherical=spherical).compile("recursive")
    kw = dict(integrator=integrator, rtol=1e-9, atol=1e-11, **OUTPUTS[output])
    counters = counted(monkeypatch, TreeStepper)
    runs = both_paths(monkeypatch, TreeStepper, lambda: s.simulate(0.3, **kw), seen, counters)
    (ref, calls_ref, n_ref, _), (res, calls, n_python, steps) = runs[False], runs[True]
    same_run(res, ref)
    assert calls == calls_ref and len(calls) > 3 * res.stats["rhs_evaluations"][-1]
    assert steps == res.meta["steps"] > 10
    assert n_ref >= res.stats["rhs_evaluations"][-1]
    dense = 3 * (len(res.t) - 1) if output == "dt" and integrator == "dop853" else 0
    assert 2 <= n_python <= 2 + dense


def test_the_loads_move_the_tree():
    """The functions of time act: without them the run differs (no vacuous equality)."""
    res = timed_chain().compile("recursive").simulate(0.3, integrator="rk45")
    free = chain(3).compile("recursive").simulate(0.3, integrator="rk45")
    assert np.abs(res.q[-1] - free.q[-1]).max() > 1e-3


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
def test_a_failing_function_fails_as_scipys_steps(monkeypatch, integrator):
    """A drive that turns NaN, or raises, after 0.1 s: the same error (class, message,
    time, partial rows) as the path before; the failing step is handed back to scipy's
    ``step()``, which meets the failure (the functions of that step called again)."""

    def nan_later(t):
        return math.nan if t > 0.1 else 0.8 * math.sin(5.0 * t)

    seen = []
    s = timed_chain(seen, fail=nan_later).compile("recursive")
    fast, ref = failures_on_both_paths(
        monkeypatch,
        TreeStepper,
        "timed_blocks",
        lambda: s.simulate(0.3, integrator=integrator, rtol=1e-9, atol=1e-11),
    )
    assert "JointForce.of_time on 'j0'" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time and len(fast.partial.t) > 2
    same_run(fast.partial, ref.partial)

    def raises_later(t):
        if t > 0.1:
            raise ValueError("drive table ends at 0.1 s")
        return 0.8 * math.sin(5.0 * t)

    s = timed_chain(seen, fail=raises_later).compile("recursive")
    errs = []
    for on in (True, False):
        monkeypatch.setattr(TreeStepper, "timed_blocks", on)
        with pytest.raises(fm.errors.SolverError) as info:
            s.simulate(0.3, integrator=integrator, rtol=1e-9, atol=1e-11)
        errs.append(info.value)
    assert "drive table ends" in str(errs[0]) and str(errs[0]) == str(errs[1])
    assert isinstance(errs[0].__cause__, ValueError) and len(errs[0].partial.t) > 2
    same_run(errs[0].partial, errs[1].partial)


@pytest.mark.parametrize("max_step", [1e-7, 1e-15])
def test_a_stall_fails_as_scipys_steps(monkeypatch, max_step):
    """A stall (``max_step`` forcing tiny steps: the pace rule, the floor rule) fails
    with the error of the path before: class, message, time and partial rows."""
    s = timed_chain().compile("recursive")

    def stalled():
        st = tree_stepper(s, 0.3, integrator="dop853", max_step=max_step)
        run(st, st.t_end, progress=False)

    blocks, _ = counted(monkeypatch, TreeStepper)
    fast, ref = failures_on_both_paths(monkeypatch, TreeStepper, "timed_blocks", stalled)
    assert "stalled" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time
    assert len(fast.partial.t) == (200 if max_step > 1e-12 else 20)
    assert sum(blocks) == len(fast.partial.t)  # (the good steps and the stall's)
    same_run(fast.partial, ref.partial)


def test_a_tree_run_resumes_bit_for_bit(tmp_path, monkeypatch):
    """A checkpointed RK45 run, interrupted at its third chunk and resumed, equals the
    uninterrupted run bit for bit, the resumed steps in compiled attempts."""
    m = timed_chain()
    s = m.compile("recursive")
    kw = dict(integrator="rk45", rtol=1e-10, atol=1e-12)
    ref = s.simulate(0.3, **kw)
    path = tmp_path / "t.h5"
    count = partial(counted, cls=TreeStepper)
    resumes_in_blocks(monkeypatch, m, s, 0.3, kw, 20, path, ref, count, same_run)


def loop_model(seen, extra=True):
    """The four-bar with an ``of_time`` crank drive and (``extra``) a point force of time
    on the coupler, each recording its calls in ``seen``."""
    m = models.four_bar()

    def drive(t):
        seen.append(("drive", float(t)))
        return 2.0 * math.sin(20.0 * t)

    def push(t):
        seen.append(("push", float(t)))
        return [0.0, 1.0 + math.cos(15.0 * t), 0.0]

    m.drive = fm.JointForce.of_time(m.a, drive)
    if extra:
        m.push = fm.PointForce(m.coupler, (0.5, 0.0, 0.0), push)
    return m.compile("recursive")


@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_loop_attempts_equal_scipys_steps(monkeypatch, integrator, output):
    """A closed loop: bit for bit scipy's steps on the compiled right-hand side (samples,
    multipliers, reactions, statistics), the functions called at the same times in the
    same order, the Python right-hand side only for scipy's start and DOP853's dense
    outputs, no return to the QR."""
    seen = []
    s = loop_model(seen)
    rtol = 1e-8 if integrator == "rk23" else 1e-11  # (RK23: fewer steps)
    kw = dict(integrator=integrator, rtol=rtol, atol=rtol * 1e-2, **OUTPUTS[output])
    counters = counted(monkeypatch, L._LoopStepper)

    def sim():
        st = s.stepper(1.0, **kw)
        res = run(st, 1.0, progress=False)
        assert not st.qr_seen
        return res

    runs = both_paths(monkeypatch, L._LoopStepper, sim, seen, counters)
    (ref, calls_ref, n_ref, _), (res, calls, n_python, steps) = runs[False], runs[True]
    same_run(res, ref)
    assert res.extra.keys() == ref.extra.keys() and "lambda" in res.extra
    for k in res.extra:
        np.testing.assert_array_equal(res.extra[k], ref.extra[k])
    assert calls == calls_ref and len(calls) > 2 * res.stats["rhs_evaluations"][-1]
    assert steps == res.meta["steps"] > 10
    assert n_ref >= res.stats["rhs_evaluations"][-1]
    dense = 3 * (len(res.t) - 1) if output == "dt" and integrator == "dop853" else 0
    assert 2 <= n_python <= 2 + dense


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
def test_a_failing_function_of_a_loop_fails_as_scipys_steps(monkeypatch, integrator):
    """A loop's drive that is NaN between 0.2 and 0.45 s (not at the end, where scipy's
    first size trial evaluates): the same error (class, message, time, partial rows) as
    scipy's steps on the compiled right-hand side."""
    m = models.four_bar()
    m.drive = fm.JointForce.of_time(
        m.a, lambda t: math.nan if 0.2 < t < 0.45 else math.sin(3.0 * t)
    )
    s = m.compile("recursive")
    fast, ref = failures_on_both_paths(
        monkeypatch,
        L._LoopStepper,
        "timed_blocks",
        lambda: s.simulate(0.5, integrator=integrator, rtol=1e-9, atol=1e-11),
    )
    assert "JointForce.of_time on 'a'" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time and len(fast.partial.t) > 2
    same_run(fast.partial, ref.partial)


@pytest.mark.parametrize("max_step", [1e-9, 1e-15])
def test_a_loop_stall_fails_as_scipys_steps(monkeypatch, max_step):
    """A loop's stall in the compiled attempts (``max_step`` forcing tiny steps: the pace
    rule, the floor rule): the error of scipy's steps -- class, message, time, partial
    rows."""
    s = loop_model([])
    counters = counted(monkeypatch, L._LoopStepper)

    def stalled():
        st = s.stepper(0.3, integrator="dop853", rtol=1e-9, atol=1e-11)
        st.solver.max_step = max_step  # (the stepper takes no max_step: planted)
        run(st, st.t_end, progress=False)

    fast, ref = failures_on_both_paths(monkeypatch, L._LoopStepper, "timed_blocks", stalled)
    assert "stalled" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time
    assert len(fast.partial.t) == (200 if max_step > 1e-12 else 20)
    assert sum(counters[0]) == len(fast.partial.t)
    same_run(fast.partial, ref.partial)


def test_a_state_that_blows_up_fails_as_scipys_steps(monkeypatch):
    """A point force of time of 1e305 N from 0.1 s: the attempt's tree solve meets the
    non-finite state and hands the step back, scipy's step meets it in the Python
    forward dynamics: the same error (class, message, time, partial rows) as the path
    before."""
    m = chain(3)
    m.push = fm.PointForce(m.rod1, (0.5, 0, 0), lambda t: [0.0, 0.0, 1e305 if t > 0.1 else 0.0])
    s = m.compile("recursive")
    fast, ref = failures_on_both_paths(
        monkeypatch, TreeStepper, "timed_blocks", lambda: s.simulate(0.3, integrator="rk45")
    )
    assert "non-finite" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time > 0.1 and len(fast.partial.t) > 2
    same_run(fast.partial, ref.partial)
