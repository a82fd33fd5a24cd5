"""Adaptive closed-loop runs (DOP853 / RK45 / RK23) with loads that are Python functions
of time (``JointForce.of_time``): scipy's steps on the compiled right-hand side, the
functions evaluated in Python at each evaluation's time (:meth:`LoopSystem.set_time`).

The bitwise oracle is the same drive as a user's compiled law (a cfunc, the table's
``ULAW`` row, whose clock the compiled steps set per stage): the drive's value is the
same number (``math.sin`` in Python, ``np.sin`` in numba: both libm's ``sin``), added to
the same joint force, so both runs take the same operations. The projector's Python
path (a Python law ``f(t, q, qd)``) solves the cut rows in another operation order: it
agrees to round-off per evaluation, and adaptive error control carries that to the
tolerance's scale.
"""

import math

import models
import numpy as np
import pytest
from numba import cfunc

import flexmbd as fm
from flexmbd.errors import SolverError
from flexmbd.recursive import loops as L

AMP, W = 0.5, 3.0  # N m, rad/s


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _drive_law(q, qd, t, which):
    return AMP * np.sin(W * t) if which == 0 else 0.0


def _drive(t):
    return AMP * math.sin(W * t)


def four_bar(kind, seen=None):
    m = models.four_bar()
    seen = [] if seen is None else seen
    if kind == "of_time":
        m.drive = fm.JointForce.of_time(m.a, lambda t: seen.append(float(t)) or _drive(t))
    elif kind == "cfunc":
        m.drive = fm.JointForce.compiled_law(m.a, _drive_law)
    else:  # a Python law of (t, q, qd): the projector's Python path
        m.drive = fm.JointForce(m.a, lambda t, q, qd: [_drive(t)])
    return m.compile("recursive")


KW = dict(rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize(
    "integrator,dt",
    [("rk45", None), ("rk45", 0.05), ("dop853", None), ("dop853", 0.05), ("rk23", 0.05)],
)
def test_drives_of_time_equal_the_compiled_law_bit_for_bit(integrator, dt):
    s, ref, py = four_bar("of_time"), four_bar("cfunc"), four_bar("python")
    assert s.compiled_rk4(clock=True) is None  # the compiled steps refuse the table
    kw = dict(integrator=integrator, dt=dt, **KW)
    a, b, p = s.simulate(0.5, **kw), ref.simulate(0.5, **kw), py.simulate(0.5, **kw)
    assert np.array_equal(a.t, b.t) and np.array_equal(a.q, b.q)
    assert np.array_equal(a.stats["rhs_evaluations"], b.stats["rhs_evaluations"])
    assert np.array_equal(a.reactions, b.reactions) and np.array_equal(a.qdd, b.qdd)
    if integrator == "dop853" and dt is not None:
        # scipy's own DOP853 dense output (extra stages by np.dot) on the compiled
        # right-hand side vs the compiled blocks' loop sums: the interpolated velocities
        # differ in the last bits before the velocity correction (positions are equal)
        assert np.abs(a.qd - b.qd).max() <= 4 * np.finfo(float).eps * np.abs(b.qd).max()
    else:
        assert np.array_equal(a.qd, b.qd)
    assert np.abs(a.q[-1] - a.q[0]).max() > 1e-2  # the drive moves the mechanism
    assert np.abs(a.q - p.q).max() < 1e-7  # the Python path, to the tolerance's scale


def test_the_drive_is_called_at_each_evaluation_and_sample_time(monkeypatch):
    """One Python call of the drive per right-hand side evaluation, at its time, and at
    the samples (forward dynamics, energies): the compiled attempts
    (``_LoopStepper.timed_blocks``) call it at the times, in the order, of scipy's steps
    on the compiled right-hand side (``timed_blocks = False``), and run the Python
    forward dynamics only where the compiled law's run takes it too (the projector's
    first QR)."""
    seen, calls, python = [], [], []
    f = L._LoopStepper._f
    monkeypatch.setattr(L._LoopStepper, "_f", lambda st, t, y: calls.append(t) or f(st, t, y))
    acc = L.LoopSystem.accelerations
    monkeypatch.setattr(
        L.LoopSystem, "accelerations", lambda *a, **k: python.append(a[4]) or acc(*a, **k)
    )
    s, ref = four_bar("of_time", seen), four_bar("cfunc")
    for integrator, dt in (("rk45", None), ("dop853", 0.05)):
        runs = {}
        for blocks in (False, True):
            seen.clear(), calls.clear()
            monkeypatch.setattr(L._LoopStepper, "timed_blocks", blocks)
            r = s.simulate(0.5, integrator=integrator, dt=dt, **KW)
            runs[blocks] = (r, list(seen), list(calls))
        (r0, seen0, calls0), (r, seen1, calls1) = runs[False], runs[True]
        n_eval = r.stats["rhs_evaluations"][-1]  # (cumulative at each sample)
        assert n_eval == r0.stats["rhs_evaluations"][-1] == len(calls0)
        assert seen1 == seen0  # the same calls, in the same order
        assert set(seen0) == set(calls0) | set(r.t.tolist())
        steps = set(calls0)
        assert len([t for t in seen0 if t in steps]) >= n_eval
        # Python evaluations: scipy's first two, DOP853's dense outputs (3 each)
        dense = 3 * (len(r.t) - 1) if dt else 0
        assert len(calls1) <= 2 + dense
        python.clear()
        s.simulate(0.5, integrator=integrator, dt=dt, **KW)
        n_python = len(python)
        python.clear()
        ref.simulate(0.5, integrator=integrator, dt=dt, **KW)
        assert n_python == len(python) <= 2


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
def test_a_failing_drive_reports_as_the_python_path(integrator):
    """A drive that turns NaN (or raises) stops the run with the drive's own error, as
    scipy's steps on the Python right-hand side did."""

    def nan_later(t):
        return math.nan if t > 0.2 else _drive(t)

    def raises_later(t):
        if t > 0.2:
            raise ValueError("drive table ends at 0.2 s")
        return _drive(t)

    for fn, err, text in (
        (nan_later, SolverError, "JointForce.of_time on 'a'"),
        (raises_later, ValueError, "drive table ends"),
    ):
        m = models.four_bar()
        m.drive = fm.JointForce.of_time(m.a, fn)
        with pytest.raises(err, match=text):
            m.compile("recursive").simulate(0.5, integrator=integrator, **KW)


class _Interrupted(BaseException):
    """A killed process (not an Exception: the integrators must not catch it)."""


_CALLS = [0]  # (a global: the resumed model's fingerprint reads the function, not this)


def _killing_drive(t):
    _CALLS[0] += 1
    if _CALLS[0] == 40:
        raise _Interrupted
    return _drive(t)


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
def test_a_checkpointed_run_resumes_bit_for_bit(tmp_path, integrator):
    """A run killed inside the drive's 40th call (mid-run: scipy's first step size
    trial already evaluates at the run's end) resumes from its last checkpoint to the
    uninterrupted run's numbers."""
    pytest.importorskip("h5py")
    _CALLS[0] = 0
    m = models.four_bar()
    m.drive = fm.JointForce.of_time(m.a, _killing_drive)
    sim = dict(dt=0.01, integrator=integrator, **KW)
    ref = four_bar("of_time").simulate(0.3, **sim)
    path = tmp_path / "timed.h5"
    with pytest.raises(_Interrupted):
        m.compile("recursive").simulate(0.3, checkpoint=path, every=2, **sim)
    res = fm.resume(path)
    for name in ("t", "q", "qd", "qdd", "reactions"):
        assert np.array_equal(getattr(res, name), getattr(ref, name)), name


def test_single_state_calls_evaluate_the_drive_at_the_calls_time():
    """``forward_dynamics`` at ``t``: the loop kernels once the projector has its rows,
    the drive called once at ``t``; the compiled law's numbers bit for bit."""
    seen = []
    s, ref = four_bar("of_time", seen), four_bar("cfunc")
    q, qd = s.project(*s.initial_state())
    ref.project(*ref.initial_state())
    qd = qd + 0.3
    seen.clear()
    a, b = s.forward_dynamics(q, qd, t=0.2), ref.forward_dynamics(q, qd, t=0.2)
    assert seen == [0.2]
    assert np.array_equal(a.qdd, b.qdd) and np.array_equal(a.lam, b.lam)
    assert not np.array_equal(a.qdd, s.forward_dynamics(q, qd, t=0.0).qdd)
