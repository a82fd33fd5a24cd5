"""Adaptive RK45 / DOP853 / RK23 of rigid trees in compiled blocks
(``_nbloops.tree_rk_block``: scipy's step in :func:`_nbloops._rk_step` with the compiled
tree forward dynamics at every stage), against scipy's own ``step()`` on the Python
right-hand side (``TreeStepper.step_blocks = False``: the path before the blocks).

The compiled step forms its stage states, update and error norms by the BLAS products
scipy takes (``np.dot``; numba's ``np.dot`` calls scipy's BLAS), so the two paths take
the same steps bit for bit: a sum in another order would change the step sizes by up
to 1 % here (an error estimate near zero, at the start from rest, raised to the power
-1/8 amplifies round-off), and with them every sample.
"""

import time

import numpy as np
import pytest
from numba import cfunc

import flexmbd as fm
from flexmbd.checkpoint import run
from flexmbd.integrators.explicit import TreeStepper, tree_stepper
from flexmbd.integrators.stepper import ExplicitStepper
from flexmbd.recursive import _nbloops as NL
from flexmbd.recursive.energy import energy_histories

from .failures import failures_on_both_paths, nonfinite_in_block
from .interrupt import interrupted_at_chunk, resumes_in_blocks

OUTPUTS = dict(every={}, end={"dt": 0.3}, times={"t_eval": np.linspace(0.01, 0.3, 13)})


def chain(n=4, damped=False):
    """A spatial chain of ``n`` rods on skewed revolute joints under gravity (a
    conservative system unless ``damped``: a spring-damper law on the first joint)."""
    m = fm.Model("chain")
    parent = m.ground
    for k in range(n):
        b = fm.RigidBody.rod(mass=1.0, length=0.5, radius=0.02, origin="end")
        setattr(m, f"rod{k}", b)
        pf = (0.0 if k == 0 else 0.5, 0.0, 0.0)
        joint = fm.Revolute(parent, b, axis=(0.1 * k, 0.3, 1.0), parent_frame=pf, q0=[0.3 * k])
        setattr(m, f"j{k}", joint)
        parent = b
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    if damped:
        m.law = fm.JointForce.spring_damper(m.j0, 5.0, 0.2)
        m.push = fm.PointForce(m.rod1, (0.5, 0.0, 0.0), (0.0, 0.0, 1.0))
    return m


def counted(monkeypatch):
    """Count the compiled blocks (their accepted steps; ``tree_rk_block`` and, with output
    times, ``tree_rk_block_dense``) and the Python right-hand side's evaluations."""
    blocks, python = [], []
    f = TreeStepper._f

    def wrap(inner):
        def block(*a):
            done = inner(*a)
            blocks.append(done)
            return done

        return block

    def rhs(self, t, y):
        python.append(t)
        return f(self, t, y)

    for name in ("tree_rk_block", "tree_rk_block_dense"):
        monkeypatch.setattr(NL, name, wrap(getattr(NL, name)))
    monkeypatch.setattr(TreeStepper, "_f", rhs)
    return blocks, python


def same_run(a, b):
    """Bit for bit: times, states, samples, statistics and energies."""
    for k in ("t", "q", "qd", "qdd", "reactions"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    assert a.stats.keys() == b.stats.keys() and a.energy.keys() == b.energy.keys()
    for k in a.stats:
        np.testing.assert_array_equal(a.stats[k], b.stats[k])
    for k in a.energy:
        np.testing.assert_array_equal(a.energy[k], b.energy[k])
    assert a.meta["steps"] == b.meta["steps"]


def one_step_blocks(monkeypatch):
    """Every compiled block capped at one step (with output times too): one compiled
    call per step."""
    real, dense = ExplicitStepper._block_steps, TreeStepper._solver_dense_block
    monkeypatch.setattr(
        ExplicitStepper, "_block_steps", lambda self, k, *a, **kw: real(self, min(k, 1), *a, **kw)
    )

    def capped(self):
        run = dense(self)
        return None if run is None else lambda k, *a: run(min(k, 1), *a)

    monkeypatch.setattr(TreeStepper, "_solver_dense_block", capped)


@pytest.mark.parametrize("integrator", ["rk45", "dop853", "rk23"])
@pytest.mark.parametrize("output", list(OUTPUTS))
def test_blocks_equal_scipys_steps(monkeypatch, integrator, output):
    """Every step in a compiled block (the Python right-hand side only for scipy's start:
    the first derivative and the initial step's probe; DOP853's dense outputs in the
    block too); the run equals scipy's step() on the Python right-hand side bit for
    bit: times, states, accelerations, reactions, evaluations, step sizes and energies
    (a loaded chain: a spring-damper joint law, a point force, joint forces)."""
    s = chain(4, damped=True).compile("recursive")
    tau = np.array([0.1, 0.0, -0.05, 0.0])
    kw = dict(integrator=integrator, rtol=1e-8, atol=1e-10, tau=tau, **OUTPUTS[output])
    blocks, python = counted(monkeypatch)
    fast = s.simulate(0.3, **kw)
    n = fast.meta["steps"]
    assert n > 10 and sum(blocks) == n and len(python) == 2
    monkeypatch.setattr(TreeStepper, "step_blocks", False)
    blocks.clear()
    ref = s.simulate(0.3, **kw)
    assert not blocks and len(python) > 2 + n
    same_run(fast, ref)


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
def test_block_samples_are_the_forward_dynamics_at_the_states(integrator):
    """A run that outputs every step: the block writes each accepted step's sample from
    the step's last evaluation (at the accepted state), bit for bit the batch forward
    dynamics and energies at the reported states; only the initial sample is left to
    the batch."""
    s = chain(4, damped=True).compile("recursive")
    tau = np.array([0.1, 0.0, -0.05, 0.0])
    st = tree_stepper(s, 0.3, integrator=integrator, tau=tau)
    res = run(st, st.t_end, progress=False)
    nt = len(res.t)
    assert not st._rows[2][0] and st._rows[2][1:nt].all() and st._rows[3][1:nt, 6].all()
    taus = np.tile(tau, (nt, 1))
    fd = s.forward_dynamics_batch(res.q, res.qd, taus, t=res.t)
    np.testing.assert_array_equal(res.qdd, fd.qdd)
    np.testing.assert_array_equal(res.reactions, fd.reactions)
    again = energy_histories(s, res.t, res.q, res.qd, taus)
    for k in again:
        np.testing.assert_array_equal(res.energy[k], again[k])


@pytest.mark.parametrize("integrator", ["rk45", "dop853", "rk23"])
@pytest.mark.parametrize("output", list(OUTPUTS))
def test_one_compiled_call_per_step_gives_the_same_bits(monkeypatch, integrator, output):
    """Blocks of one step (a compiled call per step) and blocks of up to hundreds: the
    same run bit for bit."""
    s = chain(4, damped=True).compile("recursive")
    kw = dict(integrator=integrator, rtol=1e-8, atol=1e-10, **OUTPUTS[output])
    blocks, _ = counted(monkeypatch)
    fast = s.simulate(0.3, **kw)
    few = len(blocks)
    one_step_blocks(monkeypatch)
    blocks.clear()
    ref = s.simulate(0.3, **kw)
    assert few < len(blocks) == ref.meta["steps"] and set(blocks) == {1}
    same_run(fast, ref)


def test_blocks_resume_bit_for_bit(tmp_path, monkeypatch):
    """A checkpointed RK45 run (a sample at every accepted step, a checkpoint every 37
    steps: no block crosses one) equals the run without checkpoints bit for bit;
    interrupted at its third chunk and resumed, it equals it too."""
    m = chain(4, damped=True)
    s = m.compile("recursive")
    kw = dict(integrator="rk45", rtol=1e-11, atol=1e-13)
    ref = s.simulate(0.3, **kw)
    same_run(s.simulate(0.3, checkpoint=tmp_path / "a.h5", every=37, **kw), ref)
    path = tmp_path / "b.h5"
    resumes_in_blocks(monkeypatch, m, s, 0.3, kw, 37, path, ref, counted, same_run)


@pytest.mark.parametrize("max_step", [1e-7, 1e-15])
def test_stall_inside_a_block_fails_as_step_by_step(monkeypatch, max_step):
    """A stall inside a compiled block (``max_step`` forcing tiny steps: at 1e-7 s the
    pace rule after 200 steps, at 1e-15 s, below the step floor 1e-12 of the span, the
    floor rule after 20) fails with the error of scipy's step-by-step run: the same
    class, message and time, and the same partial rows up to the last good step."""
    s = chain(3).compile("recursive")
    blocks, _ = counted(monkeypatch)

    def stalled():
        st = tree_stepper(s, 0.3, integrator="dop853", max_step=max_step)
        run(st, st.t_end, progress=False)

    fast, ref = failures_on_both_paths(monkeypatch, TreeStepper, "step_blocks", stalled)
    assert "stalled" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time and fast.partial is not None
    assert len(fast.partial.t) == (200 if max_step > 1e-12 else 20)  # t0 + the good steps
    assert sum(blocks) == len(fast.partial.t)  # (the good steps and the stall's)
    same_run(fast.partial, ref.partial)


def test_a_non_finite_state_inside_a_block_fails_as_step_by_step(monkeypatch):
    """A non-finite accepted state inside a block (planted at the 8th step, in both
    paths) fails with the error of the step-by-step run -- the same class, message and
    time -- and keeps the same partial rows up to the last good step."""
    m = 8
    s = chain(4).compile("recursive")
    fast, ref = nonfinite_in_block(
        monkeypatch,
        NL,
        "tree_rk_block",
        22,
        lambda: s.simulate(0.3, integrator="dop853", rtol=1e-9, atol=1e-11),
        m=m,
    )
    assert "non-finite state" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time and len(fast.partial.t) == m  # t0 + the good steps
    same_run(fast.partial, ref.partial)


def test_a_step_handed_back_by_a_block_is_redone_by_scipy(monkeypatch):
    """A step the block hands back (a failed tree solve; planted at the 40th step) is
    redone by the solver's ``step()`` on the Python right-hand side, from the state the
    blocks left; the blocks go on after it, and the run equals the run without blocks
    bit for bit."""
    m = 40
    inner = NL.tree_rk_block

    def planted(*a):
        a = list(a)
        n0, k = a[24], a[22]
        if not n0 <= m < n0 + k:
            return inner(*a)
        a[22] = m - n0  # the steps before the m-th, then the handed-back one
        done = inner(*a)
        if done == m - n0 and (done == 0 or a[29][0] == NL.BLOCK_DONE):
            a[29][:3] = NL.BLOCK_HANDBACK, NL.TREE_FAILED, 3.0
        return done

    blocks, python = counted(monkeypatch)
    monkeypatch.setattr(NL, "tree_rk_block", planted)
    s = chain(4).compile("recursive")
    kw = dict(integrator="rk45", rtol=1e-9, atol=1e-11)
    fast = s.simulate(0.3, **kw)
    ev = fast.stats["rhs_evaluations"]
    assert len(python) == 2 + ev[m + 1] - ev[m]  # scipy's start and the redone step
    monkeypatch.setattr(TreeStepper, "step_blocks", False)
    ref = s.simulate(0.3, **kw)
    assert ref.meta["steps"] > m + 1
    same_run(fast, ref)


@pytest.mark.parametrize("integrator,rtol", [("rk45", 1e-7), ("rk45", 1e-10), ("dop853", 1e-10)])
def test_conservative_chain_keeps_its_energy_to_the_tolerance(integrator, rtol):
    """A 10-link chain under gravity alone (no dissipation) in compiled blocks: the total
    energy drifts over 1 s by the order of the tolerance (measured 0.27 rtol for RK45
    at 1e-7, 0.43 at 1e-10, DOP853 0.57 at 1e-10, relative to the largest kinetic
    energy), not more."""
    s = chain(10).compile("recursive")
    res = s.simulate(1.0, integrator=integrator, rtol=rtol, atol=rtol * 1e-2)
    E = res.energy["total"]
    scale = np.abs(res.energy["kinetic"]).max()
    drift = np.abs(E - E[0]).max() / scale
    assert drift < 3 * rtol
    assert res.meta["steps"] > 20


@pytest.mark.parametrize("case", ["callable tau", "python law"])
def test_fallbacks_run_scipys_steps(monkeypatch, case):
    """scipy's step code on the Python right-hand side: a callable ``tau``, a force law
    of the state in Python (loads that are functions of time only: the compiled
    attempts of tests/recursive/test_timed_tables.py)."""
    m, tau = chain(2), None
    if case == "callable tau":
        tau = lambda t, q, qd: [0.1 * np.sin(t), 0.0]  # noqa: E731
    else:
        m.push = fm.JointForce(m.j1, lambda t, q, qd: [0.1 * np.sin(t) - 0.2 * qd[0]])
    s = m.compile("recursive")
    blocks, python = counted(monkeypatch)
    res = s.simulate(0.05, integrator="rk45", tau=tau)
    assert not blocks and len(python) == res.stats["rhs_evaluations"][-1]


def test_rk4_rows_lent_to_the_results_survive_a_continued_run(tmp_path):
    """The RK4 sample rows (accelerations, reactions) that the compiled blocks wrote are
    the results' arrays without a copy; a run continued by the same integrator (a live
    resume to a later end) writes new rows: the first results keep their values (also
    values the user changed), which do not enter the continued run's results, and those
    equal one straight run bit for bit."""
    m = chain(4, damped=True)
    s = m.compile("recursive")
    kw = dict(dt=2e-3, integrator="rk4", substeps=2)
    ref = s.simulate(0.1, **kw)
    path = tmp_path / "r.h5"
    first = s.simulate(0.05, checkpoint=path, **kw)
    n = len(first.t)
    for k in ("t", "q", "qd", "qdd", "reactions"):
        np.testing.assert_array_equal(getattr(first, k), getattr(ref, k)[:n])
    first.qdd[3] += 1.0  # the user's own change to the first results
    first.reactions[-1] *= 2.0
    kept = {k: getattr(first, k).copy() for k in ("qdd", "reactions")}
    out = fm.resume(path, t_end=0.1)
    for k, v in kept.items():
        np.testing.assert_array_equal(getattr(first, k), v)
    for k in ("t", "q", "qd", "qdd", "reactions"):
        np.testing.assert_array_equal(getattr(out, k), getattr(ref, k))


def blocks_equal_python_path(monkeypatch, s, kw):
    """``s.simulate(0.3, **kw)`` in compiled blocks and on the Python path
    (``step_blocks = False``): every accepted step in blocks (DOP853's dense outputs
    too), the Python right-hand side only for scipy's start, the two runs bit for bit.
    Returns the block run."""
    blocks, python = counted(monkeypatch)
    fast = s.simulate(0.3, **kw)
    n = fast.meta["steps"]
    assert n > 10 and sum(blocks) == n and len(python) == 2
    monkeypatch.setattr(TreeStepper, "step_blocks", False)
    ref = s.simulate(0.3, **kw)
    assert len(python) > 2 + n
    same_run(fast, ref)
    return fast


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _driven_law(q, qd, t, which):
    """A spring, a damper and a motor torque 0.4 sin(7 t) (N m): a law of the time."""
    if which == 0:
        return -3.0 * q - 0.1 * qd + 0.4 * np.sin(7.0 * t)
    return -3.0 if which == 1 else -0.1


@pytest.mark.parametrize("integrator", ["rk45", "dop853", "rk23"])
@pytest.mark.parametrize("output", list(OUTPUTS))
def test_compiled_law_of_time_runs_in_blocks_bit_for_bit(monkeypatch, integrator, output):
    """A tree whose only value of time is the clock of a compiled joint law
    (:meth:`flexmbd.JointForce.compiled_law`): every step in compiled blocks (the kernel
    writes each stage's time into the clock), the Python right-hand side only for
    scipy's start (and DOP853's dense outputs), and the run equals scipy's step() on
    the Python right-hand side bit for bit."""
    m = chain(3, damped=True)
    m.motor = fm.JointForce.compiled_law(m.j1, _driven_law)
    s = m.compile("recursive")
    kw = dict(integrator=integrator, rtol=1e-10, atol=1e-12, **OUTPUTS[output])
    fast = blocks_equal_python_path(monkeypatch, s, kw)
    # the law's time matters: the same motor frozen at t = 0 moves the chain otherwise
    m = chain(3, damped=True)
    m.motor = fm.JointForce(m.j1, lambda t, q, qd: -3.0 * q - 0.1 * qd)
    other = m.compile("recursive").simulate(0.3, **kw)
    assert np.abs(other.q[-1] - fast.q[-1]).max() > 1e-4


def floating(gravity=False):
    """A tumbling box (Free joint) carrying a rod on a Spherical joint and a forearm on a
    revolute joint with a spring-damper law: two quaternions in the coordinates."""
    m = fm.Model("floating")
    m.box = fm.RigidBody(2.0, (0.3, 0.2, 0.4))
    m.free = fm.Free(m.ground, m.box, qd0=[0.1, 0.0, -0.2, 0.3, 0.2, 0.1])
    m.arm = fm.RigidBody.rod(mass=1.0, length=0.5, radius=0.02, origin="end")
    m.cup = fm.Spherical(m.box, m.arm, parent_frame=(0.2, 0, 0), qd0=[0.5, -0.3, 0.2])
    m.fore = fm.RigidBody.rod(mass=0.5, length=0.4, radius=0.02, origin="end")
    m.elbow = fm.Revolute(m.arm, m.fore, axis=(0, 0.3, 1.0), parent_frame=(0.5, 0, 0), q0=[0.4])
    if gravity:
        m.g = fm.Gravity((0.0, -9.81, 0.0))
    else:
        m.law = fm.JointForce.spring_damper(m.elbow, 3.0, 0.05)
    return m


@pytest.mark.parametrize("integrator", ["rk45", "dop853", "rk23"])
@pytest.mark.parametrize("output", list(OUTPUTS))
def test_quaternion_trees_run_blocks_bit_for_bit(monkeypatch, integrator, output):
    """A floating base with a Spherical joint: every step in compiled blocks (the
    quaternion rates and the renormalization after each accepted step in the kernel,
    scipy's FSAL derivative kept at the state before it), the Python right-hand side
    only for scipy's start (and DOP853's dense outputs); the run equals scipy's step()
    followed by ``_after_solver_step`` on the Python right-hand side bit for bit, and
    every reported quaternion is unit to round-off."""
    s = floating().compile("recursive")
    assert len(s.quaternion_offsets) == 2
    kw = dict(integrator=integrator, rtol=1e-9, atol=1e-11, **OUTPUTS[output])
    fast = blocks_equal_python_path(monkeypatch, s, kw)
    for o in s.quaternion_offsets:
        norm = np.linalg.norm(fast.q[:, o : o + 4], axis=1)
        assert np.abs(norm - 1.0).max() < 4e-16


def test_quaternion_blocks_resume_bit_for_bit(tmp_path, monkeypatch):
    """A checkpointed RK45 run of the floating tree (a checkpoint every 37 steps),
    interrupted at its third chunk and resumed: the run without checkpoints bit for bit,
    the resumed steps in blocks."""
    m = floating()
    s = m.compile("recursive")
    kw = dict(integrator="rk45", rtol=1e-11, atol=1e-13)
    ref = s.simulate(0.3, **kw)
    path = tmp_path / "q.h5"
    resumes_in_blocks(monkeypatch, m, s, 0.3, kw, 37, path, ref, counted, same_run)


def test_floating_base_in_blocks_conserves_momentum_and_energy():
    """Independent checks of the compiled quaternion steps (DOP853, rtol 1e-10, 1 s of
    tumbling): without gravity (the elbow's spring-damper law an internal load) the
    linear and angular momentum stay constant; in free fall without the law the total
    energy does, both to the order of the tolerance."""
    s = floating().compile("recursive")
    res = s.simulate(1.0, integrator="dop853", rtol=1e-10, atol=1e-12)
    assert res.meta["steps"] > 20
    lin, ang = s.momentum_history(res.q, res.qd)
    for h in (lin, ang):
        assert np.abs(h - h[0]).max() < 1e-8 * np.abs(h[0]).max()
    s = floating(gravity=True).compile("recursive")
    res = s.simulate(1.0, integrator="dop853", rtol=1e-10, atol=1e-12)
    E = res.energy["total"]
    assert np.abs(E - E[0]).max() < 1e-8 * np.abs(res.energy["kinetic"]).max()


# -- output times: the samples in the compiled blocks (tree_rk_block_dense) ----------------
DENSE = dict(
    n30={"dt": 0.01},
    n300={"dt": 0.001},
    irregular={"t_eval": np.sort(np.random.default_rng(3).uniform(0.0, 0.3, 57))},
)


def python_dense_outputs(monkeypatch):
    """Count the dense outputs that scipy computes in Python (``_dense_output_impl`` of
    RK45 / RK23 and of DOP853) and the batch evaluations of samples after the run."""
    from scipy.integrate._ivp.rk import DOP853, RungeKutta

    seen = []
    for cls in (RungeKutta, DOP853):
        inner = cls.__dict__["_dense_output_impl"]

        def dense(self, _inner=inner):
            seen.append("dense")
            return _inner(self)

        monkeypatch.setattr(cls, "_dense_output_impl", dense)
    return seen


def dense_model(name):
    """``(system, tau)``: the loaded chain, the floating tree (quaternions) or the chain
    with a compiled law of time (the clock)."""
    if name == "chain":
        return chain(4, damped=True).compile("recursive"), np.array([0.1, 0.0, -0.05, 0.0])
    if name == "floating":
        return floating().compile("recursive"), None
    m = chain(3, damped=True)
    m.motor = fm.JointForce.compiled_law(m.j1, _driven_law)
    return m.compile("recursive"), None


@pytest.mark.parametrize("model", ["chain", "floating", "law"])
@pytest.mark.parametrize("integrator", ["dop853", "rk45", "rk23"])
@pytest.mark.parametrize("output", list(DENSE))
def test_dense_blocks_write_the_interpolated_samples(monkeypatch, model, integrator, output):
    """Output times inside the compiled blocks (``tree_rk_block_dense``): every step and
    every sample in the block -- the solver's own interpolant (DOP853 with its three
    extra stages), the quaternions renormalized, each sample's accelerations, reactions
    and energies at its time -- with no dense output and no right-hand side in Python
    beyond scipy's start and no sample left to the batch after the run but the initial
    one (300 samples: those of the one step split by the 2000-sample chunk of
    ``advance``, if any, take the Python path). The run equals the blocks stopping at
    each output time with scipy's dense output in Python (``dense_blocks = False``) and
    scipy's step() on the Python right-hand side (``step_blocks = False``) bit for bit:
    times, states, accelerations, reactions, every statistic (the dense outputs'
    evaluations counted), energies and momenta."""
    s, tau = dense_model(model)
    kw = dict(integrator=integrator, rtol=1e-8, atol=1e-10, tau=tau, **DENSE[output])
    blocks, python = counted(monkeypatch)
    dense = python_dense_outputs(monkeypatch)
    st = tree_stepper(s, 0.3, **kw)
    fast = run(st, st.t_end, progress=False)
    nt = len(fast.t)
    assert nt == 1 + (30 if output == "n30" else 300 if output == "n300" else 57)
    assert sum(blocks) == fast.meta["steps"] > 5 and len(python) == 2 and not dense
    assert not st._rows[2][0] and st._rows[2][1:nt].all() and st._rows[3][1:nt, 6].all()
    refs = []
    for attr in ("dense_blocks", "step_blocks"):
        monkeypatch.setattr(TreeStepper, attr, False)
        dense.clear()
        refs.append(s.simulate(0.3, **kw))
        steps_with_samples = len(np.unique(refs[-1].stats["rhs_evaluations"][1:]))
        assert len(dense) == steps_with_samples  # one dense output per step with samples
    for ref in refs:
        same_run(fast, ref)
        if s.floating:
            for k in ("momentum_linear", "momentum_angular"):
                np.testing.assert_array_equal(fast.extra[k], ref.extra[k])


@pytest.mark.parametrize("integrator", ["dop853", "rk45"])
def test_dense_blocks_end_only_equal_the_python_path(monkeypatch, integrator):
    """The end only (``dt`` = the span): the block takes every step and the one sample at
    ``t_end`` (the last step's dense output there), bit for bit the Python path."""
    s, tau = dense_model("floating")
    kw = dict(integrator=integrator, rtol=1e-9, atol=1e-11, tau=tau, dt=0.3)
    blocks, python = counted(monkeypatch)
    dense = python_dense_outputs(monkeypatch)
    fast = s.simulate(0.3, **kw)
    assert len(fast.t) == 2 and sum(blocks) == fast.meta["steps"] and len(python) == 2
    assert not dense
    monkeypatch.setattr(TreeStepper, "dense_blocks", False)
    same_run(fast, s.simulate(0.3, **kw))
    assert len(dense) == 1


@pytest.mark.parametrize("integrator", ["dop853", "rk45"])
def test_dense_blocks_resume_bit_for_bit(tmp_path, monkeypatch, integrator):
    """A floating tree with 300 output times, checkpointed every 37 samples: equal to the
    run without checkpoints; interrupted at the third chunk and resumed, equal to the
    Python path's resumed run bit for bit, and to the uninterrupted run but for DOP853's
    ``rhs_evaluations`` after the resume (a step whose samples the checkpoint split
    computes its dense output again: 3 more evaluations from there on, as on the Python
    path)."""
    m = floating()
    s = m.compile("recursive")
    kw = dict(integrator=integrator, rtol=1e-9, atol=1e-11, dt=1e-3)
    ref = s.simulate(0.3, **kw)
    same_run(s.simulate(0.3, checkpoint=tmp_path / "a.h5", every=37, **kw), ref)
    resumed = []
    for dense in (True, False):
        monkeypatch.setattr(TreeStepper, "dense_blocks", dense)
        path = tmp_path / f"b{dense}.h5"
        with interrupted_at_chunk(monkeypatch) as seen:
            s.simulate(0.3, checkpoint=path, every=37, **kw)
        assert seen[:2] == [37, 37]
        resumed.append(fm.resume(path, model=m))
    same_run(*resumed)
    got = resumed[0]
    for k in ("t", "q", "qd", "qdd", "reactions"):
        np.testing.assert_array_equal(getattr(got, k), getattr(ref, k))
    diff = got.stats["rhs_evaluations"] - ref.stats["rhs_evaluations"]
    assert not diff[:75].any() and set(np.unique(diff)) <= (
        {0, 3} if integrator == "dop853" else {0}
    )


def test_a_stall_inside_a_dense_block_keeps_its_samples(monkeypatch):
    """A stall inside a dense block (``max_step`` 1e-7 s: the pace rule at the 200th step)
    fails with the error of the Python path -- class, message, time -- and the same
    partial rows: the samples before the stall's step, which gets none."""
    s = chain(3).compile("recursive")
    blocks, _ = counted(monkeypatch)
    fast, ref = failures_on_both_paths(
        monkeypatch,
        TreeStepper,
        "dense_blocks",
        lambda: s.simulate(0.3, integrator="dop853", max_step=1e-7, dt=3e-6),
    )
    assert "stalled" in str(fast) and str(fast) == str(ref) and fast.time == ref.time
    assert len(fast.partial.t) == 7  # t0 and the 6 samples before 1.99e-5 s (199 steps)
    same_run(fast.partial, ref.partial)


def test_a_non_finite_state_inside_a_dense_block_fails_as_the_python_path(monkeypatch):
    """A non-finite accepted state inside a dense block (planted at the 8th step in
    both paths: the block's samples of that step dropped, as the block's own check
    returns before them) fails with the Python path's error -- class, message, time --
    and the same partial rows."""
    s = chain(4).compile("recursive")
    fast, ref = nonfinite_in_block(
        monkeypatch,
        NL,
        "tree_rk_block_dense",
        22,
        lambda: s.simulate(0.3, integrator="dop853", rtol=1e-9, atol=1e-11, dt=1e-3),
        dense=True,
    )
    assert "non-finite state" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time and len(fast.partial.t) > 2
    same_run(fast.partial, ref.partial)


def test_quaternion_rows_at_every_step_are_written_in_the_block(monkeypatch):
    """A floating tree that outputs every step: the block writes each sample's
    accelerations, reactions and energies from an evaluation at the renormalized state
    (only the initial sample left to the batch), bit for bit the batch forward dynamics,
    energies and momenta at the reported states."""
    s = floating().compile("recursive")
    st = tree_stepper(s, 0.3, integrator="dop853", rtol=1e-9, atol=1e-11)
    res = run(st, st.t_end, progress=False)
    nt = len(res.t)
    assert not st._rows[2][0] and st._rows[2][1:nt].all() and st._rows[3][1:nt, 6].all()
    taus = np.zeros((nt, s.nv))
    fd = s.forward_dynamics_batch(res.q, res.qd, taus, t=res.t)
    np.testing.assert_array_equal(res.qdd, fd.qdd)
    np.testing.assert_array_equal(res.reactions, fd.reactions)
    again = energy_histories(s, res.t, res.q, res.qd, taus)
    for k in again:
        np.testing.assert_array_equal(res.energy[k], again[k])


def test_blocks_inside_a_step_count_their_time_once(monkeypatch):
    """The stepper's wall time (``meta["wall_time"]``) of a run whose compiled blocks run
    inside ``step()`` between output times (the Python dense output, ``dense_blocks =
    False``: a few samples over many steps, the blocks most of the run) counts each
    block's time once: it is at most the time of the whole ``simulate`` call (counted in
    ``step()`` and again in the block, it was about twice the blocks' time)."""
    monkeypatch.setattr(TreeStepper, "dense_blocks", False)
    s = chain(10).compile("recursive")
    kw = dict(integrator="rk45", dt=0.5, rtol=1e-10, atol=1e-12)
    s.simulate(0.5, **kw)  # (compiled and warm)
    blocks, _ = counted(monkeypatch)
    tic = time.perf_counter()
    res = s.simulate(2.0, **kw)
    elapsed = time.perf_counter() - tic
    assert len(res.t) == 5 and sum(blocks) == res.meta["steps"] > 500
    assert 0.0 < res.meta["wall_time"] <= elapsed
