"""Adaptive integrators (scipy's RK45 / DOP853 / RK23) of trees with flexible bodies in
compiled blocks (:func:`flexmbd.recursive._flexblock.flex_rk_block`, hooked in
``TreeStepper._solver_block``) against scipy's ``step()`` on the Python right-hand side
(``TreeStepper.step_blocks = False``): the same bits, a flexible pendulum's energy to the
tolerance, resume, stalls and handed-back steps."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.integrators import explicit
from flexmbd.integrators.explicit import TreeStepper
from flexmbd.recursive import _flexblock as FB

from .interrupt import resumes_in_blocks
from .test_flexible_cfa import _free_tree
from .test_flexible_rk4 import flex_chain, pendulum, same_bits


def counted(monkeypatch):
    """``(steps done per block call, Python right-hand side calls)`` from now on."""
    blocks, rhs = [], []
    inner, f = FB.flex_rk_block, TreeStepper._f
    monkeypatch.setattr(FB, "flex_rk_block", lambda *a: blocks.append(inner(*a)) or blocks[-1])
    monkeypatch.setattr(TreeStepper, "_f", lambda self, t, y: rhs.append(t) or f(self, t, y))
    return blocks, rhs


def scipys_steps(monkeypatch, f):
    """``f()`` with scipy's ``step()`` on the Python right-hand side (no block)."""
    with monkeypatch.context() as mp:
        mp.setattr(TreeStepper, "step_blocks", False)
        return f()


def same_run(a, b):
    """:func:`same_bits` and the same step statistics and step count."""
    same_bits(a, b)
    assert a.stats.keys() == b.stats.keys()
    for key in a.stats:
        assert np.array_equal(a.stats[key], b.stats[key], equal_nan=True), key
    assert a.meta["steps"] == b.meta["steps"]


@pytest.mark.parametrize("method", ["RK45", "DOP853", "RK23"])
@pytest.mark.parametrize("stiff", [False, True])
def test_flexible_chain_blocks_equal_scipys_steps(monkeypatch, method, stiff):
    """Two soft beams and a rigid tip, spring-damper laws with constant actuators (two on
    one joint), gravity, constant joint and modal forces, geometric stiffening off and
    on, a sample at every step: q, qd, qdd (modal included), reactions, energies, body
    series and step statistics are scipy's bit for bit, every accepted step ran in the
    blocks and the Python right-hand side only for scipy's start (its first evaluation
    and the initial step's probe)."""
    s = flex_chain(stiff=stiff, act0=1.0).compile("recursive")
    kw = dict(integrator=method, tau=np.linspace(-0.5, 0.5, s.nv))
    t_end = 0.002 if method == "RK23" else 0.006
    ref = scipys_steps(monkeypatch, lambda: s.simulate(t_end, **kw))
    blocks, rhs = counted(monkeypatch)
    res = s.simulate(t_end, **kw)
    same_run(res, ref)
    assert sum(blocks) == res.meta["steps"] > 20
    assert len(rhs) == 2
    assert np.ptp(res.body("b1").modal) > 1e-6  # the modes move


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_floating_flexible_tree_blocks_equal_scipys_steps(monkeypatch, method):
    """A free-floating flexible base (a Free joint: its quaternion renormalized after
    every accepted step, the sample evaluated at the renormalized state) carrying a
    flexible arm: bit for bit, unit quaternions."""
    s = _free_tree().compile("recursive")
    ref = scipys_steps(monkeypatch, lambda: s.simulate(0.004, integrator=method))
    blocks, rhs = counted(monkeypatch)
    res = s.simulate(0.004, integrator=method)
    same_run(res, ref)
    assert sum(blocks) == res.meta["steps"] > 10 and len(rhs) == 2
    o = s.quaternion_offsets[0]
    assert np.abs(np.linalg.norm(res.q[:, o : o + 4], axis=1) - 1.0).max() < 4e-16


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_output_times_take_the_blocks_between_them(monkeypatch, method):
    """With ``dt`` and the samples outside the blocks (``TreeStepper.dense_blocks =
    False``, the reference of tests/recursive/test_flexible_dense.py) the blocks run the
    steps between the output times and scipy's dense output in Python gives the samples
    (DOP853: its 3 extra stages per step that holds samples on the Python right-hand
    side): the same bits."""
    s = flex_chain(act0=1.0).compile("recursive")
    kw = dict(integrator=method, dt=2e-4)
    ref = scipys_steps(monkeypatch, lambda: s.simulate(0.006, **kw))
    monkeypatch.setattr(TreeStepper, "dense_blocks", False)
    blocks, rhs = counted(monkeypatch)
    res = s.simulate(0.006, **kw)
    same_run(res, ref)
    assert sum(blocks) == res.meta["steps"] and len(res.t) == 31
    assert len(rhs) == 2 + (3 * 30 if method == "DOP853" else 0)


def test_loads_of_time_take_no_constant_block(monkeypatch):
    """An actuator that is a function of time (compiled attempts instead:
    tests/recursive/test_flexible_timed.py) or ``tau`` as a function (scipy's steps):
    no block of constant loads; the same model with constant actuators takes the
    blocks."""
    blocks, _ = counted(monkeypatch)
    flex_chain(n=1).compile("recursive").simulate(0.001)
    s = flex_chain(n=1, act0=1.0).compile("recursive")
    s.simulate(0.001, tau=lambda t, q, qd: np.zeros(s.nv))
    assert blocks == []
    res = s.simulate(0.001)
    assert sum(blocks) == res.meta["steps"]


def test_flexible_pendulum_keeps_its_energy_to_the_tolerance():
    """The undamped flexible pendulum (kinetic + gravity + strain energy) by RK45 and
    DOP853 in the blocks: the drift of its total energy relative to the kinetic energy's
    range is of the order of ``rtol`` and proportional to it. (The error control bounds
    each step's local error, not the run's global one: RK45's drift measures 0.93 and
    1.08 ``rtol`` here, DOP853's 0.08 and 0.04.)"""
    s = pendulum().compile("recursive")
    drift = {}
    for method in ("RK45", "DOP853"):
        for rtol in (1e-7, 1e-10):
            res = s.simulate(0.05, integrator=method, rtol=rtol, atol=1e-3 * rtol)
            E, ke = res.energy["total"], res.energy["kinetic"]
            assert np.ptp(res.energy["spring"]) > 0.3 * np.ptp(ke)  # the strain takes part
            drift[method, rtol] = np.abs(E - E[0]).max() / np.ptp(ke)
    for (_, rtol), d in drift.items():
        assert d < 2.0 * rtol, drift
    for method in ("RK45", "DOP853"):  # 1000x the tolerance: ~1000x the drift
        assert 100.0 < drift[method, 1e-7] / drift[method, 1e-10] < 1e4, drift


def test_blocks_resume_bit_for_bit(monkeypatch, tmp_path):
    """A checkpointed RK45 run (every 37 steps) interrupted at its third chunk and
    resumed equals the straight run and scipy's steps bit for bit; the resumed steps
    run in the blocks."""
    m = flex_chain(stiff=True, act0=1.0)
    s = m.compile("recursive")
    kw = dict(integrator="RK45")
    ref = scipys_steps(monkeypatch, lambda: s.simulate(0.006, **kw))
    path = tmp_path / "run.h5"
    resumes_in_blocks(monkeypatch, m, s, 0.006, kw, 37, path, ref, counted, same_run)


def test_a_stall_inside_a_block_fails_as_scipys_steps(monkeypatch):
    """``max_step`` 1e-15 s (below the step floor, 1e-12 of the span): the floor rule's
    stall (20 steps in a row below the floor) inside a block, with scipy's run's error
    class, message, time and partial results."""
    s = flex_chain(n=1, act0=1.0).compile("recursive")
    errs = []
    blocks, _ = counted(monkeypatch)
    for blocks_on in (True, False):
        monkeypatch.setattr(TreeStepper, "step_blocks", blocks_on)
        with pytest.raises(fm.SolverError) as info:
            s.simulate(0.01, integrator="DOP853", max_step=1e-15)
        errs.append(info.value)
    fast, ref = errs
    assert "stalled" in str(fast) and str(fast) == str(ref) and fast.time == ref.time
    assert sum(blocks) == len(fast.partial.t) > 20  # (t0 and the good steps; the stall's)
    same_bits(fast.partial, ref.partial)


def test_a_step_handed_back_is_redone_by_scipy(monkeypatch):
    """A block whose evaluation fails (here the geometric stiffening not converged in
    the block's single allowed iteration) hands the step back: scipy's ``step()`` on the
    Python right-hand side (its own iteration limit) takes it, so the run is scipy's bit
    for bit with no step in a block."""
    s = flex_chain(stiff=True, act0=1.0).compile("recursive")
    ref = scipys_steps(monkeypatch, lambda: s.simulate(0.002))
    monkeypatch.setattr(explicit, "STIFF_MAX_ITER", 1)
    blocks, _ = counted(monkeypatch)
    res = s.simulate(0.002)
    same_run(res, ref)
    assert len(blocks) == res.meta["steps"] and sum(blocks) == 0
