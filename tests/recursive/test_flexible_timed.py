"""Adaptive RK45 / DOP853 / RK23 runs of trees with flexible bodies whose loads include
Python functions of time (spring-damper laws' actuators and ``of_time`` drives, point
forces, point torques and SDA actuators of time) in compiled attempts
(``_nbtimed.timed_block`` on the flexible right-hand side, ``TreeStepper.
_flex_timed_solver_block``): Python tabulates the functions at each attempt's stage
times ``t + c h``, one compiled call takes the attempt.

The reference is the path before (``TreeStepper.timed_blocks`` False): scipy's ``step()``
on the Python right-hand side, the functions evaluated at each evaluation's time. The
attempts take the same operations on the same numbers: the runs are equal bit for bit
and the functions are called at the same times in the same order.
"""

import math

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.checkpoint import run
from flexmbd.integrators.explicit import TreeStepper, tree_stepper
from flexmbd.recursive import _flexblock as FB

from .failures import failures_on_both_paths
from .interrupt import interrupted_at_chunk
from .test_flexible_adaptive import same_run
from .test_flexible_cfa import _free_tree
from .test_flexible_rk4 import flex_chain
from .test_timed_tables import both_paths, counted

OUTPUTS = dict(every={}, dt={"dt": 5e-4})  # (s)
METHODS = ["RK45", "DOP853", "RK23"]


def recorder(seen, name, f):
    """``f`` recording its calls ``(name, t)`` in the list ``seen``; ``f`` itself for
    ``seen`` None (a checkpoint's model fingerprint reads the functions and their
    closures)."""
    if seen is None:
        return f

    def g(t):
        seen.append((name, float(t)))
        return f(t)

    return g


def timed_flex_chain(seen, stiff=False, drive=None):
    """Two soft beams and a rigid tip (:func:`flex_chain`) with loads of time, each
    recording its calls in ``seen`` (:func:`recorder`): the first joint's law actuator
    (``drive`` if given), an SDA between the beams' interfaces with an actuator of
    time, a point force of time at a deforming interface and a point torque of time on
    the second beam; plus a constant point force (no calls)."""
    act = drive or (lambda t: 3.0 * math.sin(40.0 * t))
    m = flex_chain(n=2, stiff=stiff, act0=recorder(seen, "act", act))
    b0, b1 = m.b0, m.b1
    fa = recorder(seen, "sda", lambda t: 1.0 + 20.0 * t)
    m.sda = fm.SpringDamperActuator(b0, b0.interface("A"), b1, b1.interface("B"), 300.0, 2.0,
                                    fa=fa)  # fmt: skip
    push = recorder(seen, "push", lambda t: (0.0, 2.0 * math.sin(60.0 * t), 1.0))
    m.push = fm.PointForce(b1, b1.interface("B"), push)
    m.still = fm.PointForce(m.tip, (0.1, 0.0, 0.0), (1.0, 0.0, 0.0))
    m.tor = fm.PointTorque(b1, recorder(seen, "torque", lambda t: (30.0 * t, 0.1, 0.2)))
    return m


def timed_free_tree(seen):
    """A free-floating flexible base (quaternion coordinates) carrying a flexible arm,
    driven at the hinge by an ``of_time`` drive, with a point force of time on the arm."""
    m = _free_tree()
    m.drive = fm.JointForce.of_time(
        m.hinge, recorder(seen, "drive", lambda t: 5.0 * math.cos(90 * t))
    )
    push = recorder(seen, "push", lambda t: (0.0, 0.0, 3.0 * t))
    m.push = fm.PointForce(m.arm, m.arm.interface("B"), push)
    return m


def attempts_equal_scipys_steps(monkeypatch, model, seen, nf, t_end, kw):
    """Both paths of ``model`` (:func:`..test_timed_tables.both_paths`): bit for bit, the
    functions' calls (``nf`` per evaluation, then the samples' after the run), every
    accepted step in compiled attempts; returns ``(results, Python right-hand side
    evaluations)``."""
    s = model.compile("recursive")
    counters = counted(monkeypatch, TreeStepper)
    runs = both_paths(monkeypatch, TreeStepper, lambda: s.simulate(t_end, **kw), seen, counters)
    (ref, calls_ref, n_ref, _), (res, calls, n_python, steps) = runs[False], runs[True]
    same_run(res, ref)
    assert calls == calls_ref and len(calls) >= nf * res.stats["rhs_evaluations"][-1]
    assert steps == res.meta["steps"] > 10
    assert n_ref >= res.stats["rhs_evaluations"][-1]
    return res, n_python


@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("stiff", [False, True])
def test_flexible_attempts_equal_scipys_steps(monkeypatch, method, output, stiff):
    """Two soft beams (geometric stiffening off and on) with a law's actuator, an SDA
    actuator, a point force and a point torque of time: bit for bit the path before (q,
    qd, qdd with the modal accelerations, reactions, body series, energies, step
    statistics), the functions called at the same times in the same order (rejected
    attempts included), the Python right-hand side only for scipy's start and DOP853's
    dense outputs."""
    seen = []
    t_end = 0.002 if method == "RK23" else 0.005
    kw = dict(integrator=method, **OUTPUTS[output])
    res, n_python = attempts_equal_scipys_steps(
        monkeypatch, timed_flex_chain(seen, stiff), seen, 4, t_end, kw
    )
    dense = 3 * (len(res.t) - 1) if output == "dt" and method == "DOP853" else 0
    assert 2 <= n_python <= 2 + dense


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_floating_flexible_attempts_equal_scipys_steps(monkeypatch, method):
    """A free-floating flexible base (its quaternion renormalized after each accepted
    step) with an ``of_time`` drive and a point force of time: bit for bit, the same
    calls, unit quaternions."""
    seen = []
    res, n_python = attempts_equal_scipys_steps(
        monkeypatch, timed_free_tree(seen), seen, 2, 0.004, dict(integrator=method)
    )
    assert n_python == 2
    o = timed_free_tree([]).compile("recursive").quaternion_offsets[0]
    assert np.abs(np.linalg.norm(res.q[:, o : o + 4], axis=1) - 1.0).max() < 4e-16


def test_the_loads_of_time_move_the_tree():
    """The functions of time act (no vacuous equality): the same chain with the values of
    time frozen at 0 s moves otherwise."""
    res = timed_flex_chain([]).compile("recursive").simulate(0.005, integrator="RK45")
    m = flex_chain(n=2, act0=0.0)
    b0, b1 = m.b0, m.b1
    m.sda = fm.SpringDamperActuator(b0, b0.interface("A"), b1, b1.interface("B"), 300.0, 2.0,
                                    fa=1.0)  # fmt: skip
    m.push = fm.PointForce(b1, b1.interface("B"), (0.0, 0.0, 1.0))
    m.still = fm.PointForce(m.tip, (0.1, 0.0, 0.0), (1.0, 0.0, 0.0))
    m.tor = fm.PointTorque(b1, (0.0, 0.1, 0.2))
    frozen = m.compile("recursive").simulate(0.005, integrator="RK45")
    assert np.abs(res.body("b1").modal[-1] - frozen.body("b1").modal[-1]).max() > 1e-6
    assert np.abs(res.q[-1] - frozen.q[-1]).max() > 3e-5


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_a_failing_function_fails_as_scipys_steps(monkeypatch, method):
    """A law's actuator that turns NaN, or raises, after 2 ms: the same error (message,
    time, partial rows) as the path before; the failing step is handed back to scipy's
    ``step()``, which meets the failure."""

    def nan_later(t):
        return math.nan if t > 0.002 else 3.0 * math.sin(40.0 * t)

    s = timed_flex_chain([], drive=nan_later).compile("recursive")
    fast, ref = failures_on_both_paths(
        monkeypatch, TreeStepper, "timed_blocks", lambda: s.simulate(0.005, integrator=method)
    )
    assert str(fast) == str(ref) and fast.time == ref.time > 0.002
    assert len(fast.partial.t) > 2
    same_run(fast.partial, ref.partial)

    def raises_later(t):
        if t > 0.002:
            raise ValueError("actuator table ends at 2 ms")
        return 3.0 * math.sin(40.0 * t)

    s = timed_flex_chain([], drive=raises_later).compile("recursive")
    fast, ref = failures_on_both_paths(
        monkeypatch, TreeStepper, "timed_blocks", lambda: s.simulate(0.005, integrator=method)
    )
    assert "actuator table ends" in str(fast) and str(fast) == str(ref)
    assert isinstance(fast.__cause__, ValueError) and len(fast.partial.t) > 2
    same_run(fast.partial, ref.partial)


def test_a_stall_fails_as_scipys_steps(monkeypatch):
    """A stall (``max_step`` forcing tiny steps: the pace rule) fails with the error of
    the path before: message, time and partial rows, every step in attempts."""
    s = timed_flex_chain([]).compile("recursive")

    def stalled():
        st = tree_stepper(s, 0.005, integrator="RK45", max_step=1e-10)
        run(st, st.t_end, progress=False)

    blocks, _ = counted(monkeypatch, TreeStepper)
    fast, ref = failures_on_both_paths(monkeypatch, TreeStepper, "timed_blocks", stalled)
    assert "stalled" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time and len(fast.partial.t) == 200
    assert sum(blocks) == len(fast.partial.t)
    same_run(fast.partial, ref.partial)


def test_a_run_resumes_bit_for_bit(tmp_path, monkeypatch):
    """A checkpointed RK45 run, interrupted at its third chunk and resumed, equals the
    uninterrupted run bit for bit, the resumed steps in compiled attempts."""
    m = timed_flex_chain(None)
    s = m.compile("recursive")
    ref = s.simulate(0.005, integrator="RK45")
    assert ref.meta["steps"] > 3 * 10
    path = tmp_path / "t.h5"
    with interrupted_at_chunk(monkeypatch) as got:
        s.simulate(0.005, integrator="RK45", checkpoint=path, every=10)
    assert got[:2] == [10, 10]
    blocks, _ = counted(monkeypatch, TreeStepper)
    same_run(fm.resume(path, model=m), ref)
    assert sum(blocks) == ref.meta["steps"] - 2 * 10


def test_no_constant_block_for_loads_of_time(monkeypatch):
    """Loads of time take the attempts, not the constant loads' block
    (``_flexblock.flex_rk_block``); ``tau`` as a function keeps scipy's steps."""
    blocks, _ = counted(monkeypatch, TreeStepper)
    const = []
    inner = FB.flex_rk_block
    monkeypatch.setattr(FB, "flex_rk_block", lambda *a: const.append(inner(*a)) or const[-1])
    res = timed_flex_chain([]).compile("recursive").simulate(0.002, integrator="RK45")
    assert const == [] and sum(blocks) == res.meta["steps"] > 0
    del blocks[:]
    s = timed_flex_chain([]).compile("recursive")
    s.simulate(0.001, tau=lambda t, q, qd: np.zeros(s.nv))
    assert blocks == [] and const == []


def test_a_state_that_blows_up_fails_as_scipys_steps(monkeypatch):
    """An actuator of 1e305 N m from 2 ms: an evaluation in the attempt fails (the
    flexible forward dynamics' solve), the step is handed back to scipy's ``step()``,
    which raises the error of the path before (message, time, partial rows)."""

    def huge_later(t):
        return 1e305 if t > 0.002 else 3.0 * math.sin(40.0 * t)

    s = timed_flex_chain(None, drive=huge_later).compile("recursive")
    blocks, _ = counted(monkeypatch, TreeStepper)
    fast, ref = failures_on_both_paths(
        monkeypatch, TreeStepper, "timed_blocks", lambda: s.simulate(0.005, integrator="RK45")
    )
    assert "not positive definite" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time > 0.002 and len(fast.partial.t) > 2
    assert sum(blocks) == len(fast.partial.t) - 1  # (the steps before the failing one)
    same_run(fast.partial, ref.partial)
