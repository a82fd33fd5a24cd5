"""Output samples of closed-loop runs: the rows the compiled RK4 steps write (their first
stage is the forward dynamics at the sample), the batched energies and the exact
cut-joint rates equal the separate evaluation at the sampled states to round-off."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.checkpoint import run
from flexmbd.integrators.explicit import tree_stepper
from flexmbd.joint_states import fill_joint_states
from flexmbd.recursive.energy import energy_histories

from .failures import failures_on_both_paths
from .interrupt import interrupted_at_chunk
from .oracle import Oracle, ad, compose
from .test_compiled_forces import loaded_four_bar
from .test_compiled_loops import planar_four_bar, spatial_ring


def _close(a, b, rel=1e-9):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert np.abs(a - b).max(initial=0.0) <= rel * max(1.0, np.abs(b).max(initial=0.0))


@pytest.mark.parametrize("build", [spatial_ring, planar_four_bar])
def test_fused_samples_equal_forward_dynamics_at_the_samples(build):
    s = build().compile("recursive")
    st = s.stepper(0.05, dt=1e-3)
    res = run(st, st.t_end, progress=False)
    rows = st.fused_samples()
    # every sample but the last is written by the step that starts there (the first
    # one too where the assembly's QR selected the rows already)
    assert rows is not None and rows["viol"][1:-1, 2].all() and rows["viol"][-1, 2] == 0
    for i in range(0, len(res.t), 7):
        fd = s.forward_dynamics(res.q[i], res.qd[i])
        _close(res.qdd[i], fd.qdd)
        _close(res.reactions[i], fd.reactions)
        _close(res.extra["lambda"][i], fd.lam)
        for b in s.layout.body_names:
            for x, y in zip(
                s.body_accelerations(res.q, res.qd, res.qdd)[b], fd.body_acceleration(b)
            ):
                _close(x[i], y)
    # the fused rows are bit for bit the first stage's: the separate batch agrees
    sep = s.results_from(res.t, np.hstack([res.q, res.qd]), st.tau_f, st.meta(), st.P)
    _close(res.qdd, sep.qdd, 1e-12)
    _close(res.reactions, sep.reactions, 1e-12)
    _close(res.stats["velocity_violation"], sep.stats["velocity_violation"], 1e-6)


def test_batched_energies_equal_the_per_state_methods():
    s = spatial_ring().compile("recursive")
    res = s.simulate(0.05, dt=1e-3, tau=0.1 * np.ones(s.nv))
    tau = 0.1 * np.ones((len(res.t), s.nv))
    batch = energy_histories(s, res.t, res.q, res.qd, tau)
    assert s.energy_samples(res.t, res.q, res.qd, tau) is not None
    for i in range(0, len(res.t), 10):
        _close(batch["kinetic"][i], s.kinetic_energy(res.q[i], res.qd[i]), 1e-13)
        pe = s.potential_energies(res.q[i], res.t[i])
        _close(batch["gravity"][i], pe["gravity"], 1e-13)
        p = s.powers(res.q[i], res.qd[i], res.t[i], tau[i])
        assert p["p_actuator"] == pytest.approx(0.1 * res.qd[i].sum(), rel=1e-13, abs=1e-15)
    # energy balance: the applied joint forces' work goes into T + V
    _close(batch["numerical_dissipation"], 0.0, 1e-6)


def test_cut_joint_rates_are_exact_from_the_samples(monkeypatch):
    """The cut joint's ``qdd`` series from the samples' body accelerations equals the
    central differences of its twist (O(eps^2), eps = 1e-6) and the derivative of its
    speed series along the run."""
    s = spatial_ring().compile("recursive")
    res = s.simulate(0.05, dt=1e-3)
    cut = res.joint_series["j[6]"]
    assert s.body_accelerations(res.q, res.qd, res.qdd) is not None
    assert s.body_accelerations(res.q + 1e-3, res.qd, res.qdd) is None  # another history
    exact = cut.qdd.copy()
    monkeypatch.setattr(s, "body_accelerations", lambda *a: None)  # the differences path
    fill_joint_states(res, s)
    _close(exact, res.joint_series["j[6]"].qdd, 1e-8)
    # and the speed series' time derivative (central differences along the run, O(dt^2))
    d = (cut.qd[2:] - cut.qd[:-2]) / (2e-3)
    _close(exact[1:-1], d, 1e-4)


def test_tree_rk4_samples_equal_forward_dynamics_at_the_samples():
    """A tree's RK4 run takes the samples' accelerations and reactions from the first
    stage of the step that starts there: the same numbers as forward_dynamics there."""
    s = _chain().compile("recursive")
    st = tree_stepper(s, 0.05, dt=1e-3, tau=0.05 * np.ones(s.nv))
    res = run(st, st.t_end, progress=False)
    assert st._rows[2][:-1].all() and not st._rows[2][-1]
    for i in range(len(res.t)):
        fd = s.forward_dynamics(res.q[i], res.qd[i], 0.05 * np.ones(s.nv), res.t[i])
        _close(res.qdd[i], fd.qdd, 1e-12)
        _close(res.reactions[i], fd.reactions, 1e-12)


def _same_corrected_samples(res, ref, stats):
    """``res`` equals ``ref`` bit for bit: times, states, accelerations, reactions,
    multipliers, the statistics ``stats``, both violations (each < 1e-9: corrected
    states lie on the constraints) and every energy."""
    for k in ("t", "q", "qd", "qdd", "reactions"):
        np.testing.assert_array_equal(getattr(res, k), getattr(ref, k))
    np.testing.assert_array_equal(res.extra["lambda"], ref.extra["lambda"])
    for k in stats:
        np.testing.assert_array_equal(res.stats[k], ref.stats[k])
    for k in ("position_violation", "velocity_violation"):
        np.testing.assert_array_equal(res.stats[k], ref.stats[k])
        assert res.stats[k].max() < 1e-9
    for k in ref.energy:
        np.testing.assert_array_equal(res.energy[k], ref.energy[k])


def _chain(n=4):
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
    return m


@pytest.mark.parametrize("substeps", [1, 3])
def test_compiled_rk4_blocks_equal_the_per_interval_steps(monkeypatch, substeps):
    """Many RK4 output intervals in one compiled call (the stepper's ``_rk4_block``) give
    the per-interval path's states and samples: the loop's the very same bits (the same
    step kernels), the tree's Python RK4 to round-off; every sample's accelerations and
    reactions are forward_dynamics' there (1e-12)."""
    from flexmbd.integrators.explicit import TreeStepper
    from flexmbd.recursive.loops import _LoopStepper

    ring = spatial_ring().compile("recursive")
    tree = _chain().compile("recursive")
    tau = 0.05 * np.ones(tree.nv)
    runs = {}
    for blocks in (True, False):
        if not blocks:
            monkeypatch.setattr(_LoopStepper, "_rk4_block", lambda self, n: None)
            monkeypatch.setattr(TreeStepper, "_rk4_block", lambda self, n: None)
        st = ring.stepper(0.04, dt=1e-3 * substeps, substeps=substeps)
        loop = run(st, st.t_end, progress=False)
        ts = tree_stepper(tree, 0.04, dt=1e-3 * substeps, substeps=substeps, tau=tau)
        if blocks:
            assert ts._compiled_tree() is not None
        runs[blocks] = (loop, run(ts, ts.t_end, progress=False))
    (lb, tb), (lp, tp) = runs[True], runs[False]
    for a, b in ((lb, lp),):
        np.testing.assert_array_equal(a.t, b.t)
        for k in ("q", "qd", "qdd", "reactions"):
            np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
        np.testing.assert_array_equal(a.extra["lambda"], b.extra["lambda"])
    np.testing.assert_array_equal(tb.t, tp.t)
    for k in ("q", "qd", "qdd", "reactions"):
        _close(getattr(tb, k), getattr(tp, k), 1e-12)
    for i in range(len(tb.t)):
        fd = tree.forward_dynamics(tb.q[i], tb.qd[i], tau, tb.t[i])
        _close(tb.qdd[i], fd.qdd, 1e-12)
        _close(tb.reactions[i], fd.reactions, 1e-12)
    # the loop's samples: the compiled per-state evaluation's (1e-12) and the Python
    # path's forward dynamics (its QR projection: 1e-9, as above)
    sep = ring.results_from(lb.t, np.hstack([lb.q, lb.qd]), lambda *a: None, {}, st.P)
    for k in ("qdd", "reactions"):
        _close(getattr(lb, k), getattr(sep, k), 1e-12)
    _close(lb.extra["lambda"], sep.extra["lambda"], 1e-12)
    for i in range(0, len(lb.t), 5):
        fd = ring.forward_dynamics(lb.q[i], lb.qd[i])
        _close(lb.qdd[i], fd.qdd)
        _close(lb.reactions[i], fd.reactions)
        _close(lb.extra["lambda"][i], fd.lam)


def test_kinematics_history_in_one_call_equals_the_per_state_kinematics():
    """The history's tree kinematics and force-table energies in one compiled call are
    the per-state kinematics' and table energies' bit for bit (squeezer: an SDA)."""
    from .test_compiled_forces import _squeezer

    mod = _squeezer()
    s = mod.build().compile("recursive")
    res = s.simulate(0.01, dt=1e-3, integrator="dop853", rtol=1e-9, atol=1e-11)
    tree = s.tree
    Rw, rw, vel, table = tree._kinematics_history(res.q, res.qd)
    assert table is not None
    for i in range(len(res.t)):
        R1, r1, v1 = tree._kin(res.q[i], res.qd[i])
        np.testing.assert_array_equal(Rw[i], R1)
        np.testing.assert_array_equal(rw[i], r1)
        np.testing.assert_array_equal(vel[i], v1)
        np.testing.assert_array_equal(table[i], tree._table_energy(res.qd[i]))
        pe = s.potential_energies(res.q[i], res.t[i])
        _close(res.energy["spring"][i], pe["spring"], 1e-13)
        _close(res.energy["kinetic"][i], s.kinetic_energy(res.q[i], res.qd[i]), 1e-13)


def test_squeezer_compiled_dense_output_equals_scipys(monkeypatch):
    """DOP853's dense output with its three extra stages in one compiled call: the same
    steps, evaluations and samples as scipy's own interpolant (to round-off: sums in
    another order), the Test Set's angles to 8+ digits at t = 0.03 s with 300 samples,
    and every sample's accelerations and reactions forward_dynamics' there."""
    from scipy.integrate import DOP853

    from flexmbd.recursive.loops import _compiled_dop853

    from .test_compiled_forces import _squeezer

    mod = _squeezer()
    s = mod.build().compile("recursive")
    kw = dict(dt=1e-4, integrator="dop853", rtol=1e-9, atol=1e-11)
    fast = s.simulate(0.03, **kw)
    monkeypatch.setattr(_compiled_dop853(), "_dense_output_impl", DOP853._dense_output_impl)
    ref = s.simulate(0.03, **kw)
    assert len(fast.t) == 301 and fast.meta["steps"] == ref.meta["steps"]
    np.testing.assert_array_equal(fast.stats["rhs_evaluations"], ref.stats["rhs_evaluations"])
    for k in ("q", "qd", "qdd"):
        _close(getattr(fast, k), getattr(ref, k), 1e-11)
    got = mod.angles(fast)
    assert min(mod.digits(got[a], mod.REFERENCE[a]) for a in mod.ANGLES) >= 8.0
    for i in range(3, len(fast.t), 37):
        fd = s.forward_dynamics(fast.q[i], fast.qd[i], t=fast.t[i])
        _close(fast.qdd[i], fd.qdd, 1e-12)
        _close(fast.reactions[i], fd.reactions, 1e-12)


def test_tree_block_energies_equal_the_per_state_methods():
    """The energies the compiled tree RK4 writes at its samples (kinetic, gravity and the
    force table's: SDA spring, damper, actuator and point-load powers) are the per-state
    methods' there; the last sample (no step starts there) by the batch."""
    from .test_compiled_forces import loaded_four_bar

    s = loaded_four_bar(closed=False).compile("recursive")
    st = tree_stepper(s, 0.03, dt=1e-3)
    assert st._compiled_tree() is not None
    res = run(st, st.t_end, progress=False)
    en = st._rows[3]
    assert en[:-1, 6].all() and en[-1, 6] == 0.0  # every sample but the last
    for i in range(len(res.t)):
        _close(res.energy["kinetic"][i], s.kinetic_energy(res.q[i], res.qd[i]), 1e-13)
        pe = s.potential_energies(res.q[i], res.t[i])
        _close(res.energy["gravity"][i], pe["gravity"], 1e-13)
        _close(res.energy["spring"][i], pe["spring"], 1e-13)
    # the powers: the batch over the same history (no rows) gives the same works
    again = energy_histories(s, res.t, res.q, res.qd)
    for k in ("damper_work", "actuator_work", "external_work", "total"):
        _close(res.energy[k], again[k], 1e-13)


def test_compiled_interpolant_is_scipys_dop853_interpolant():
    """The compiled DOP853 interpolant (``_nbloops.dop853_interpolate`` behind the
    compiled loop's dense output) gives scipy's ``Dop853DenseOutput`` values bit for bit,
    for one time and for many at once."""
    from scipy.integrate._ivp.rk import Dop853DenseOutput

    from flexmbd.recursive.loops import _compiled_dop853

    rng = np.random.default_rng(11)
    F, y_old = rng.standard_normal((7, 9)), rng.standard_normal(9)
    ref = Dop853DenseOutput(0.3, 0.3125, y_old, F)
    got = _compiled_dop853().Interpolant(0.3, 0.3125, y_old, F)
    assert isinstance(got, Dop853DenseOutput)
    ts = np.linspace(0.3, 0.3125, 13)
    assert got(ts).shape == (9, 13) and np.array_equal(got(ts), ref(ts))
    assert got(0.301).shape == (9,) and np.array_equal(got(0.301), ref(0.301))


def test_squeezer_samples_corrected_and_evaluated_in_one_call(monkeypatch):
    """An adaptive run's interpolated states corrected and sampled in one compiled pass
    (``LoopSystem.project_samples``): the reported states, accelerations, reactions,
    multipliers, violations, rank statistics and energies are bit for bit those of the
    correction (``project_rows``) followed by the samples' own evaluation."""
    from flexmbd.recursive.loops import LoopSystem

    from .test_compiled_forces import _squeezer

    s = _squeezer().build().compile("recursive")
    kw = dict(dt=1e-4, integrator="dop853", rtol=1e-9, atol=1e-11)
    calls = []
    fused = LoopSystem.project_samples

    def counted(self, Y, tau=None, projector=None):
        out = fused(self, Y, tau, projector)
        calls.append(bool(out[1] is not None and out[1]["viol"][:, 2].all()))
        return out

    monkeypatch.setattr(LoopSystem, "project_samples", counted)
    fast = s.simulate(0.03, **kw)
    assert calls == [True]  # every interpolated sample took the one-call path

    def separate(self, Y, tau=None, projector=None):
        return self.project_rows(Y, projector), None

    monkeypatch.setattr(LoopSystem, "project_samples", separate)
    ref = s.simulate(0.03, **kw)
    _same_corrected_samples(fast, ref, ("rank", "regular_rank", "n_weak", "discarded"))


@pytest.mark.parametrize(
    "integrator, kernel, j",
    [("dop853", "loop_rk_step_sampled", -15), ("rk45", "loop_rk_step_sampled", -15)],
)
def test_squeezer_samples_at_accepted_steps_from_the_step_itself(
    monkeypatch, integrator, kernel, j
):
    """An adaptive run that outputs every accepted step (``dt`` and ``t_eval`` None): the
    sample at the step's accepted state takes the correction, accelerations and
    multipliers of the step's last evaluation there and adds its violations, rank
    decision and reactions in the same compiled call as the step
    (``loop_rk_step_sampled``: scipy's DOP853 / RK45 step compiled). The run's steps, the
    reported corrected states, accelerations, reactions, multipliers, violations, rank
    statistics and energies are bit for bit those of the correction and sample after the
    run (``project_samples`` of every output state)."""
    from flexmbd.recursive import _nbloops as NL
    from flexmbd.recursive.loops import LoopSystem, _LoopStepper

    from .test_compiled_forces import _squeezer

    s = _squeezer().build().compile("recursive")
    kw = dict(integrator=integrator, rtol=1e-9, atol=1e-11)
    after = []
    fused = LoopSystem.project_samples

    def counted(self, Y, tau=None, projector=None):
        after.append(len(Y))
        return fused(self, Y, tau, projector)

    monkeypatch.setattr(LoopSystem, "project_samples", counted)
    monkeypatch.setattr(_LoopStepper, "step_blocks", False)  # (blocks: the next tests)
    sampled = []
    step = getattr(NL, kernel)

    def counted_step(*a):
        st = step(*a)
        sampled.append(st in (0, None) and a[-5][a[j], 2] == 1.0)  # (VIOL, then EN ... VEL)
        return st

    monkeypatch.setattr(NL, kernel, counted_step)
    fast = s.simulate(0.03, **kw)
    n = len(fast.t) - 1
    assert n == fast.meta["steps"] > 50  # a sample at every accepted step
    assert len(sampled) == n and all(sampled)  # each written at its step, complete
    assert after == []  # no row left to correct and sample after the run
    rows_of = _LoopStepper.step_rows

    def every_third_missing(self, sel):  # as after a resume: some rows without a sample
        return None if self.i % 3 == 0 else rows_of(self, sel)

    monkeypatch.setattr(_LoopStepper, "step_rows", every_third_missing)
    mixed = s.simulate(0.03, **kw)
    assert after == [(n + 2) // 3]  # only the rows without a step sample after the run
    monkeypatch.setattr(_LoopStepper, "step_rows", lambda self, sel: None)
    ref = s.simulate(0.03, **kw)
    assert after[1:] == [n]  # the path before: every output state after the run
    for res in (fast, mixed):
        _same_corrected_samples(
            res, ref, ("rank", "regular_rank", "n_weak", "discarded", "rhs_evaluations")
        )


@pytest.mark.parametrize("integrator, rtol, digits", [("rk45", 1e-9, 8.0), ("rk23", 1e-6, 5.5)])
def test_squeezer_compiled_rk_step_follows_scipys_step(monkeypatch, integrator, rtol, digits):
    """RK45 / RK23 of a compiled loop take their steps in one compiled call each
    (``loop_rk_step_sampled``: scipy's stages, error norm and step-size control) and
    follow scipy's own ``_step_impl`` on the same compiled right-hand side: the same
    number of steps and evaluations, the step sizes and states to round-off (the sums
    run in another order than numpy's BLAS dot products; the error estimate, a
    difference of the stages ~1e8 times smaller than the stages, amplifies that to
    ~1e-7 of a step size over the run), the Test Set angles to the digits the tolerance
    gives (8+ for RK45 at rtol 1e-9)."""
    import scipy.integrate as si

    from flexmbd.recursive import _nbloops as NL
    from flexmbd.recursive.loops import _compiled_rk, _LoopStepper

    from .test_compiled_forces import _squeezer

    monkeypatch.setattr(_LoopStepper, "step_blocks", False)  # one compiled call per step
    mod = _squeezer()
    s = mod.build().compile("recursive")
    kw = dict(integrator=integrator, rtol=rtol, atol=1e-11)
    calls = []
    step = NL.loop_rk_step_sampled

    def counted(*a):
        calls.append(1)
        return step(*a)

    monkeypatch.setattr(NL, "loop_rk_step_sampled", counted)
    fast = s.simulate(0.03, **kw)
    assert type(s.stepper(0.03, **kw).solver).__name__ == f"_Compiled{integrator.upper()}"
    monkeypatch.setattr(_compiled_rk(integrator.upper()), "_step_impl", si.RK45._step_impl)
    ref = s.simulate(0.03, **kw)
    n = fast.meta["steps"]
    assert len(calls) == n == ref.meta["steps"] > 50  # every step compiled, as many as scipy's
    ev = "rhs_evaluations"
    np.testing.assert_array_equal(fast.stats[ev], ref.stats[ev])  # same rejected attempts
    h, h_ref = np.diff(fast.t), np.diff(ref.t)
    assert np.abs(h / h_ref - 1.0).max() < 1e-5
    assert np.abs(fast.q - ref.q).max() < 1e-7 * np.abs(ref.q).max()
    for res in (fast, ref):
        got = mod.angles(res)
        assert min(mod.digits(got[a], mod.REFERENCE[a]) for a in mod.ANGLES) >= digits


def test_result_rows_by_slices_and_cross_products_keep_the_values():
    """The result assembly's helpers: ``index_slice`` turns a contiguous ascending run of
    rows into a slice (views and block copies) and leaves any other index array as it
    is; the joint series' row-wise cross product gives numpy.cross's values bit for bit
    (the same products and differences)."""
    from flexmbd.integrators.stepper import index_slice
    from flexmbd.joint_states import cross_rows

    assert index_slice(np.arange(3, 9)) == slice(3, 9)
    assert index_slice(np.array([4])) == slice(4, 5)
    for idx in (np.array([0, 2, 3]), np.array([2, 1, 0, 3]), np.array([0, 2, 1, 3])):
        assert np.array_equal(index_slice(idx), idx)
    assert len(index_slice(np.zeros(0, dtype=int))) == 0
    rng = np.random.default_rng(7)
    a = rng.standard_normal((50, 3)) * 10.0 ** rng.uniform(-6, 6, (50, 1))
    b = rng.standard_normal((50, 3))
    np.testing.assert_array_equal(cross_rows(a, b), np.cross(a, b))
    np.testing.assert_array_equal(cross_rows(a, b[0]), np.cross(a, b[0]))  # broadcast
    c = rng.standard_normal((50, 6)) * np.exp(rng.uniform(-46, 46, (50, 6)))
    np.testing.assert_array_equal(cross_rows(c[:, 3:], a), np.cross(c[:, 3:], a))  # strided


# -- adaptive steps in compiled blocks (_nbloops.loop_rk_block[_sampled]) ------------------
_BLOCK_KERNELS = (
    "loop_rk_block",
    "loop_rk_block_sampled",
    "loop_rk_block_dense",
    "loop_rk_step",
    "loop_rk_step_sampled",
)


def _count_kernels(monkeypatch):
    """Wrap the compiled adaptive step and block kernels: ``{name: [return values]}``."""
    from flexmbd.recursive import _nbloops as NL

    calls = {name: [] for name in _BLOCK_KERNELS}

    def counted(name, kernel):
        def call(*a):
            r = kernel(*a)
            calls[name].append(r)
            return r

        return call

    for name in _BLOCK_KERNELS:
        monkeypatch.setattr(NL, name, counted(name, getattr(NL, name)))
    return calls


def _run_arrays(res):
    """Every array of a loop run's results but the timings (name -> array): samples,
    multipliers, statistics, energies and the joint series (cut joints included)."""
    out = {k: getattr(res, k) for k in ("t", "q", "qd", "qdd", "reactions")}
    out.update({f"extra:{k}": v for k, v in res.extra.items()})
    out.update({f"stats:{k}": v for k, v in res.stats.items() if k != "cpu_time"})
    out.update({f"energy:{k}": v for k, v in res.energy.items()})
    for name in res.joint_names:
        js = res.joint(name)
        out.update({f"{name}:{a}": getattr(js, a) for a in ("q", "qd", "qdd")})
    return out


def _same_run(res, ref):
    """``res`` equals ``ref`` bit for bit in every array of :func:`_run_arrays`, and in
    its solver steps."""
    a, b = _run_arrays(res), _run_arrays(ref)
    assert a.keys() == b.keys()
    for k in a:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), k
    assert res.meta["steps"] == ref.meta["steps"]


@pytest.mark.parametrize("integrator", ["dop853", "rk45"])
def test_adaptive_blocks_equal_the_per_step_path(monkeypatch, integrator):
    """An adaptive loop run takes its steps in compiled blocks (``loop_rk_block``; with a
    sample at every accepted step ``loop_rk_block_sampled``; with output times
    ``loop_rk_block_dense``), Python bringing scipy's
    solver to the state its ``step()`` leaves after each block. Every result is bit for
    bit that of one compiled call per step (``step_blocks = False``): a sample at every
    accepted step, the end only (dense output of the last step) and 17 output times
    (interpolated) -- states, accelerations, reactions, multipliers, rank statistics,
    violations, evaluations, step sizes, energies and the joint series."""
    from flexmbd.recursive.loops import _LoopStepper

    from .test_compiled_forces import _squeezer

    s = _squeezer().build().compile("recursive")
    calls = _count_kernels(monkeypatch)
    kw = dict(integrator=integrator, rtol=1e-9, atol=1e-11)
    outputs = dict(every={}, end={"dt": 0.03}, times={"t_eval": np.linspace(1e-3, 0.03, 17)})
    for label, out in outputs.items():
        for v in calls.values():
            v.clear()
        fast = s.simulate(0.03, **kw, **out)
        n = fast.meta["steps"]
        block = "loop_rk_block_sampled" if label == "every" else "loop_rk_block"
        if label != "every":
            block = "loop_rk_block_dense"  # (the samples between the steps in the block)
        assert n > 50 and sum(calls[block]) == n  # every step in a block
        assert len(calls[block]) <= (6 if label == "every" else 17)
        if label == "every" and n > 256:  # (the sample rows grow between two blocks)
            assert len(calls[block]) >= 2
        assert not calls["loop_rk_step"] and not calls["loop_rk_step_sampled"]
        monkeypatch.setattr(_LoopStepper, "step_blocks", False)
        ref = s.simulate(0.03, **kw, **out)
        monkeypatch.setattr(_LoopStepper, "step_blocks", True)
        step = "loop_rk_step_sampled" if label == "every" else "loop_rk_step"
        assert len(calls[step]) == n  # the reference: one compiled call per step
        _same_run(fast, ref)


def test_adaptive_blocks_resume_bit_for_bit(tmp_path, monkeypatch):
    """A checkpointed RK45 run of the squeezer (a sample at every accepted step, a
    checkpoint every 37 steps: no block crosses one) equals the run without checkpoints
    bit for bit; interrupted at its third chunk and resumed, it equals it too."""

    from .test_compiled_forces import _squeezer

    s = _squeezer().build().compile("recursive")
    kw = dict(integrator="rk45", rtol=1e-9, atol=1e-11)
    ref = s.simulate(0.03, **kw)
    _same_run(s.simulate(0.03, checkpoint=tmp_path / "a.h5", every=37, **kw), ref)

    path = tmp_path / "b.h5"
    with interrupted_at_chunk(monkeypatch) as seen:
        s.simulate(0.03, checkpoint=path, every=37, **kw)
    assert seen[:2] == [37, 37]
    _same_run(fm.resume(path), ref)


@pytest.mark.parametrize("max_step", [1e-9, 1e-15])
def test_stall_inside_a_block_fails_as_step_by_step(monkeypatch, max_step):
    """A stall inside a compiled block (``max_step`` forcing tiny steps: at 1e-9 s the
    pace rule after 200 steps, at 1e-15 s, below the step floor 1e-12 of the span, the
    floor rule after 20) fails with the error of the step-by-step run: the same class, message and
    time, and the same partial rows (states and samples) up to the last good step."""
    from flexmbd.recursive.loops import _LoopStepper

    from .test_compiled_forces import _squeezer

    s = _squeezer().build().compile("recursive")
    calls = _count_kernels(monkeypatch)

    def stalled():
        st = s.stepper(0.03, integrator="dop853", rtol=1e-9, atol=1e-11)
        st.solver.max_step = max_step  # (simulate takes no max_step: planted)
        run(st, st.t_end, progress=False)

    fast, ref = failures_on_both_paths(monkeypatch, _LoopStepper, "step_blocks", stalled)
    assert "stalled" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time and fast.partial is not None
    assert len(fast.partial.t) == (200 if max_step > 1e-12 else 20)  # t0 + the good steps
    assert sum(calls["loop_rk_block_sampled"]) == len(fast.partial.t)  # (with the stall's)
    _same_run(fast.partial, ref.partial)


@pytest.mark.parametrize(
    "integrator, out",
    [("dop853", {}), ("dop853", {"dt": 0.03})]
    + [(integrator, {"dt": 1e-4}) for integrator in ("dop853", "rk45")],
)
def test_a_step_handed_back_by_a_block_is_redone_as_step_by_step(monkeypatch, integrator, out):
    """A block that meets a state its rows cannot decide hands the step back (its status
    and the attempt's evaluations), and the solver's ``step()`` redoes it by scipy's code
    with the QR, as after a refused compiled step. Planted at the 40th step (a
    ``NEEDS_QR`` after 3 evaluations) in both paths, the run with blocks equals the run
    step by step bit for bit, a sample at every step, the end only and 300 interpolated
    samples (DOP853, RK45; the block's samples before the step handed back in its
    rows, the later ones by the output times' path one at a time)."""
    from flexmbd.recursive import _nbloops as NL
    from flexmbd.recursive import loops
    from flexmbd.recursive.loops import _LoopStepper

    from .test_compiled_forces import _squeezer

    m, redone = 40, []

    def plant(name, k_at, n_at, out_at):
        kernel = getattr(NL, name)

        def call(*a):
            a = list(a)
            if name.startswith("loop_rk_step"):  # one call per step: the m-th refuses
                redone.append(None)
                if len(redone) == m + 1:
                    a[out_at][3] = 3.0
                    return NL.NEEDS_QR
                return kernel(*a)
            n0, k = a[n_at], a[k_at]
            if not n0 <= m < n0 + k:
                return kernel(*a)
            a[k_at] = m - n0  # the steps before the m-th, then the handed-back one
            done = kernel(*a)
            if done == m - n0 and (done == 0 or a[out_at][0] == NL.BLOCK_DONE):
                a[out_at][:3] = NL.BLOCK_HANDBACK, NL.NEEDS_QR, 3.0
            return done

        monkeypatch.setattr(NL, name, call)

    for name in ("loop_rk_block", "loop_rk_block_sampled"):
        plant(name, 30, 32, 37)
    plant("loop_rk_block_dense", 30, 31, 36)
    for name in ("loop_rk_step", "loop_rk_step_sampled"):
        plant(name, None, None, 34)
    real_redo, redos = loops._redo_step, []

    def counted_redo(solver, Solver, st, status, nfev):
        redos.append((status, nfev))
        return real_redo(solver, Solver, st, status, nfev)

    monkeypatch.setattr(loops, "_redo_step", counted_redo)
    s = _squeezer().build().compile("recursive")
    kw = dict(integrator=integrator, rtol=1e-9, atol=1e-11, **out)
    fast = s.simulate(0.03, **kw)
    assert redos == [(NL.NEEDS_QR, 3)]  # handed back once, then the QR at every step
    monkeypatch.setattr(_LoopStepper, "step_blocks", False)
    redone.clear()
    ref = s.simulate(0.03, **kw)
    assert redos[1:] == [(NL.NEEDS_QR, 3)] and len(redone) == m + 1
    _same_run(fast, ref)


def test_a_non_finite_state_inside_a_block_fails_as_step_by_step(monkeypatch):
    """A non-finite accepted state inside a block (planted at the 30th step, after its
    sample, in both paths) fails with the error of the step-by-step run -- the same
    class, message and time -- and keeps the same partial rows up to the last good step."""
    from flexmbd.recursive import _nbloops as NL
    from flexmbd.recursive.loops import _LoopStepper

    from .test_compiled_forces import _squeezer

    m, steps = 30, []
    block, step = NL.loop_rk_block_sampled, NL.loop_rk_step_sampled

    def planted_block(*a):
        a = list(a)
        n0 = a[32]
        if not n0 <= m - 1 < n0 + a[30]:
            return block(*a)
        a[30] = m - n0  # up to the m-th step, which turns non-finite
        done = block(*a)
        if done == m - n0:
            a[35][done - 1, 0] = np.nan
            a[37][0] = NL.BLOCK_NONFINITE
        return done

    def planted_step(*a):
        st = step(*a)
        steps.append(st)
        if len(steps) == m:
            a[32][0] = np.nan  # the accepted y_new
        return st

    monkeypatch.setattr(NL, "loop_rk_block_sampled", planted_block)
    monkeypatch.setattr(NL, "loop_rk_step_sampled", planted_step)
    s = _squeezer().build().compile("recursive")
    fast, ref = failures_on_both_paths(
        monkeypatch,
        _LoopStepper,
        "step_blocks",
        lambda: s.simulate(0.03, integrator="dop853", rtol=1e-9, atol=1e-11),
    )
    assert len(steps) == m  # the reference stopped at its planted step
    assert "non-finite state" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time and len(fast.partial.t) == m  # t0 + the good steps
    _same_run(fast.partial, ref.partial)


def _cut_wrench_oracle(model, cuts, reac_rows):
    """The independent oracle (tests/recursive/oracle.py: Featherstone's RNEA in world
    coordinates) of the loop model's tree with each cut joint's wrench as a load: ``+F``
    on its child and ``-F`` on its parent, ``F`` the cut joint's reaction row (child
    axes at the child frame origin); ``reac_rows``: those rows of one sample."""

    class WithCuts(Oracle):
        def external(self, t, q, qd, pose, vel):
            fext, tau = super().external(t, q, qd, pose, vel)
            for c, F in zip(cuts, reac_rows, strict=True):
                j = c.joint
                W = np.linalg.solve(ad(*_child_frame(self, pose, j)).T, F)  # world, at 0
                for body, sign in ((j.child, 1.0), (j.parent, -1.0)):
                    if body is not model.ground:
                        fext[self.label[id(body)]] += sign * W
            return fext, tau

    return WithCuts(model)


def _child_frame(orc, pose, j):
    """World pose of joint ``j``'s child frame."""
    k = orc.label[id(j.child)]
    return compose(pose[k], (j.child_frame.rotation, j.child_frame.position))


def _ring30():
    return spatial_ring(30)


@pytest.mark.parametrize("build", [spatial_ring, _ring30, loaded_four_bar])
def test_sample_reactions_are_the_newton_euler_wrenches_of_the_reported_motion(build):
    """The reactions of a loop run's samples (the compiled RK4 block's first stages:
    one Newton-Euler sweep with the stage's accelerations, ``_nbloops._tree_rnea_cuts``)
    against the independent oracle's RNEA of the tree at the reported ``q``, ``qd``,
    ``qdd`` with the cut wrenches as loads: every tree joint's reaction to 1e-11 of the
    largest, also on a 30-body ring (an ill-conditioned mass matrix); and the joint forces
    the oracle needs for that motion are the applied ones (none on the rings, the drive's
    1.3 N m on the four-bar) to the residual of the stage's accelerations in the equations
    of motion (of the largest reaction: 2e-12 on the 6-body ring, 3e-9 on the 30-body
    ring, growing with the mass matrix's condition number; 5e-15 on the four-bar). The
    former second tree solve with the cut wrenches put that residual into the
    accelerations instead: its reactions were 3e-9 off this RNEA on the 30-body ring."""
    model = build()
    s = model.compile("recursive")
    st = s.stepper(0.04, dt=2e-3)
    res = run(st, st.t_end, progress=False)
    assert st.fused_samples()["viol"][1:-1, 2].all()  # the samples came from the block
    cuts = s.constraints.cuts
    cut_rows = [s.joint_names.index(c.joint.name) for c in cuts]
    tau_app = np.zeros(s.nv)
    if build is loaded_four_bar:
        tau_app[0] = 1.3
    for i in range(1, len(res.t) - 1, 4):
        R = res.reactions[i]
        orc = _cut_wrench_oracle(model, cuts, R[cut_rows])
        tau, f, pose, _, _ = orc.rnea(res.q[i], res.qd[i], res.qdd[i], res.t[i])
        scale = np.abs(R).max()
        for k in range(1, orc.n + 1):
            j = orc.tj[k]
            ref = ad(*_child_frame(orc, pose, j)).T @ f[k]
            assert np.abs(R[s.joint_names.index(j.name)] - ref).max() <= 1e-11 * scale
        assert np.abs(tau[: s.nv] - tau_app).max() <= 1e-8 * scale  # (the cut: last)


def _count_history_rows(monkeypatch):
    """The number of states of each call of ``_nbforces.kinematics_history`` (the
    results' history pass) from now on: a list that the calls append to."""
    from flexmbd.recursive import _nbforces as NF

    rows = []
    history = NF.kinematics_history

    def _counted(*a):
        rows.append(len(a[6]))  # (the states Q)
        return history(*a)

    monkeypatch.setattr(NF, "kinematics_history", _counted)
    return rows


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
def test_adaptive_sample_kinematics_rows_are_the_history_pass(monkeypatch, integrator):
    """An adaptive run that outputs every accepted step (the squeezer, its samples
    written by the compiled blocks) writes each sample's row of the tree's kinematics
    history too (``_nbforces.sample_history`` at the step's corrected state): the world
    poses, twists and energies are the history pass's at the reported states bit for
    bit, the run's energies equal ``energy_histories``' recomputation by that pass bit
    for bit, and the results run the pass only for the rows no step sampled (the
    first)."""
    from .test_compiled_forces import _squeezer

    rows = _count_history_rows(monkeypatch)
    s = _squeezer().build().compile("recursive")
    st = s.stepper(0.03, integrator=integrator, rtol=1e-9, atol=1e-11)
    res = run(st, st.t_end, progress=False)
    n = len(res.t)
    f = st.step_rows(st.P.selection())
    k = f["n"]
    assert k == n - 1 > 50 and (f["row"][:k] == np.arange(1, n)).all()
    assert f["viol"][:k, 2].all() and f["en"][:k, 6].all()
    assert rows == [1]  # the results' pass: the first row only
    tree = s.tree
    tree._kin_memo = tree._motion_memo = None  # (the pass computes every row again)
    Rw, rw, vel, _ = tree._kinematics_history(res.q, res.qd)
    assert rows == [1, n]
    np.testing.assert_array_equal(f["rw"][:k], Rw[1:])
    np.testing.assert_array_equal(f["pw"][:k], rw[1:])
    np.testing.assert_array_equal(f["vel"][:k], vel[1:])
    ref = s.energy_samples(res.t, res.q, res.qd, None)
    for key in ("kinetic", "gravity", "spring"):
        np.testing.assert_array_equal(res.energy[key], ref[key])
    np.testing.assert_array_equal(f["en"][:k, 0], ref["kinetic"][1:])
    total = energy_histories(s, res.t, res.q, res.qd, None)["total"]
    np.testing.assert_array_equal(res.energy["total"], total)
    assert np.ptp(res.energy["kinetic"]) > 1.0  # (a moving mechanism: J)


@pytest.mark.parametrize("build", [spatial_ring, loaded_four_bar])
def test_sample_kinematics_rows_are_the_history_pass(monkeypatch, build):
    """Each RK4 sample of a loop run writes its row of the tree's kinematics history in
    the compiled block (``_nbforces.sample_history``): the world poses, twists and
    kinetic, gravity and force-table energies are the history pass's
    (``_nbforces.kinematics_history``) at the same states bit for bit, the run's energies
    equal ``energy_samples``' recomputation by that pass bit for bit, and the results
    run that pass only for the rows no step sampled (the first, before the first QR
    selected the rows, and the last)."""
    rows = _count_history_rows(monkeypatch)
    s = build().compile("recursive")
    st = s.stepper(0.04, dt=2e-3)
    res = run(st, st.t_end, progress=False)
    f = st.fused_samples()
    assert f["viol"][1:-1, 2].all() and f["en"][1:-1, 6].all()
    assert rows == [2]  # the results' pass: the first and the last sample's rows only
    n = len(res.t)
    tree = s.tree
    tree._kin_memo = tree._motion_memo = None  # (the pass computes every row again)
    Rw, rw, vel, table = tree._kinematics_history(res.q, res.qd)
    assert rows == [2, n]
    np.testing.assert_array_equal(f["rw"][1 : n - 1], Rw[1:-1])
    np.testing.assert_array_equal(f["pw"][1 : n - 1], rw[1:-1])
    np.testing.assert_array_equal(f["vel"][1 : n - 1], vel[1:-1])
    tau = np.zeros((n, s.nv))
    ref = s.energy_samples(res.t, res.q, res.qd, tau)
    for k in ("kinetic", "gravity", "spring"):
        np.testing.assert_array_equal(res.energy[k], ref[k])
    np.testing.assert_array_equal(f["en"][1 : n - 1, 2:6], table[1:-1])
    if build is loaded_four_bar:  # its force table: springs, dampers, actuators, loads
        assert np.abs(table).max() > 0.1 and np.abs(res.energy["spring"]).max() > 0.1
    total = energy_histories(s, res.t, res.q, res.qd, None)["total"]
    np.testing.assert_array_equal(res.energy["total"], total)


def _count_correct_samples(monkeypatch):
    """The number of states of each call of ``_nbloops.loop_correct_samples`` (the
    interpolated samples corrected and sampled after the run) from now on."""
    from flexmbd.recursive import _nbloops as NL

    rows = []
    kernel = NL.loop_correct_samples

    def _counted(*a):
        rows.append(len(a[5]))  # (the states Y)
        return kernel(*a)

    monkeypatch.setattr(NL, "loop_correct_samples", _counted)
    return rows


#: the squeezer's tolerances (rtol, atol) per adaptive integrator in the output tests
#: (RK23 looser: 1101 steps over 30 ms, 11150 at rtol 1e-9)
_TOLS = {"dop853": (1e-9, 1e-11), "rk45": (1e-9, 1e-11), "rk23": (1e-6, 1e-8)}


def _count_dense_outputs(monkeypatch):
    """A list that gets an entry per dense output computed in Python from now on: DOP853's
    compiled one (``_nbloops.loop_dop853_dense``) or RK45's / RK23's (scipy's
    ``RungeKutta._dense_output_impl``, ``K^T P``)."""
    from scipy.integrate._ivp.rk import RungeKutta

    from flexmbd.recursive import _nbloops as NL

    dense = []
    real_dop, real_rk = NL.loop_dop853_dense, RungeKutta._dense_output_impl
    monkeypatch.setattr(NL, "loop_dop853_dense", lambda *a: dense.append(1) or real_dop(*a))
    monkeypatch.setattr(RungeKutta, "_dense_output_impl", lambda s: dense.append(1) or real_rk(s))
    return dense


@pytest.mark.parametrize("integrator", ["dop853", "rk45", "rk23"])
@pytest.mark.parametrize("times", ["30", "300", "irregular"])
def test_dense_blocks_write_the_interpolated_samples(monkeypatch, times, integrator):
    """DOP853, RK45 and RK23 with output times between their steps (``dt`` of 30 and 300
    samples, 57 irregular ``t_eval``): the compiled blocks (``loop_rk_block_dense``) take
    every step, compute the dense output of each step that holds samples (DOP853's extra
    stages; RK45's / RK23's ``K^T P`` by BLAS), and interpolate, correct and sample
    there, writing each sample's rows and its kinematics history row in the block.
    Every result is bit for bit that of the path that stops a block at each output
    time and corrects and samples after the run (``dense_blocks = False``), and that of
    one compiled call per step; the results correct no sample and run the history pass
    for the first row only (300 samples: also the few of a step an ``advance`` chunk
    boundary splits, left to the output times' path)."""
    from flexmbd.recursive.loops import _LoopStepper

    from .test_compiled_forces import _squeezer

    s = _squeezer().build().compile("recursive")
    out = {
        "30": {"dt": 1e-3},
        "300": {"dt": 1e-4},
        "irregular": {"t_eval": np.sort(np.random.default_rng(3).uniform(0.0, 0.03, 57))},
    }[times]
    rtol, atol = _TOLS[integrator]
    kw = dict(integrator=integrator, rtol=rtol, atol=atol, **out)
    # compile the blocks first: a kernel compiled while `loop_dop853_dense` is the counting
    # lambda below would find a Python function as its callee (an empty cache, any order)
    s.simulate(0.002, integrator=integrator, rtol=rtol, atol=atol, t_eval=[0.0, 0.001, 0.0015])
    calls = _count_kernels(monkeypatch)
    dense = _count_dense_outputs(monkeypatch)
    corrected = _count_correct_samples(monkeypatch)
    history = _count_history_rows(monkeypatch)
    fast = s.simulate(0.03, **kw)
    n, k = fast.meta["steps"], len(fast.t) - 1
    assert n > 50 and k in (30, 300, 57)
    assert sum(calls["loop_rk_block_dense"]) == n and not calls["loop_rk_block"]
    if times == "300":  # (chunks of BLOCK_STEPS samples: a step they split)
        assert len(dense) <= 2 and sum(corrected) <= 4 and history == [1 + sum(corrected)]
    else:
        assert not dense and not corrected and history == [1]
    refs = []
    for flag in ("dense_blocks", "step_blocks"):
        monkeypatch.setattr(_LoopStepper, flag, False)
        for v in (*calls.values(), dense, corrected, history):
            v.clear()
        refs.append(s.simulate(0.03, **kw))
        assert not calls["loop_rk_block_dense"] and corrected == [k]
        # a dense output per step that holds samples (its evaluation count in their rows)
        assert len(dense) == len(np.unique(fast.stats["rhs_evaluations"][1:]))
        monkeypatch.setattr(_LoopStepper, flag, True)
    for ref in refs:
        _same_run(fast, ref)
    if integrator == "dop853":
        assert fast.stats["rhs_evaluations"][-1] > 12 * n  # (the extra stages counted)


@pytest.mark.parametrize("integrator", ["dop853", "rk45", "rk23"])
def test_dense_blocks_resume_bit_for_bit(tmp_path, monkeypatch, integrator):
    """A checkpointed DOP853 / RK45 / RK23 run of the squeezer with 300 interpolated
    samples (a checkpoint every 37 samples: the blocks stop there, the samples of a step
    split by it taken from the kept dense output) equals the run without checkpoints bit
    for bit. Interrupted at its third chunk and resumed, it equals the resumed run of the
    path that samples after the run (``dense_blocks = False``) bit for bit, and the run
    without checkpoints -- DOP853 but for the evaluation counts after the resume (both
    paths compute the dense output of the step the checkpoint split again: three more;
    RK45's and RK23's take no evaluation)."""
    from flexmbd.recursive.loops import _LoopStepper

    from .test_compiled_forces import _squeezer

    s = _squeezer().build().compile("recursive")
    rtol, atol = _TOLS[integrator]
    kw = dict(integrator=integrator, rtol=rtol, atol=atol, dt=1e-4)
    ref = s.simulate(0.03, **kw)
    _same_run(s.simulate(0.03, checkpoint=tmp_path / "a.h5", every=37, **kw), ref)

    resumed = []
    for dense in (True, False):
        monkeypatch.setattr(_LoopStepper, "dense_blocks", dense)
        path = tmp_path / f"b{dense}.h5"
        with interrupted_at_chunk(monkeypatch) as seen:
            s.simulate(0.03, checkpoint=path, every=37, **kw)
        assert seen[:2] == [37, 37]
        resumed.append(fm.resume(path))
    _same_run(*resumed)
    if integrator != "dop853":
        _same_run(resumed[0], ref)
        return
    a, b = _run_arrays(resumed[0]), _run_arrays(ref)
    for key in a:
        x, y = np.asarray(a[key]), np.asarray(b[key])
        if key == "stats:rhs_evaluations":  # (the split step's dense output again)
            assert np.array_equal(x[:75], y[:75]) and set(x[75:] - y[75:]) <= {0, 3}
        else:
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), key


@pytest.mark.parametrize("integrator", ["dop853", "rk45", "rk23"])
def test_a_stall_inside_a_dense_block_keeps_its_samples(monkeypatch, integrator):
    """A stall inside a block with output times (``max_step`` 1e-9 s: the pace rule after
    200 steps, 2e-7 s) fails as the path that samples after the run: the same error,
    time and partial rows -- the interpolated samples the block wrote before the
    stall."""
    from flexmbd.recursive.loops import _LoopStepper

    from .test_compiled_forces import _squeezer

    s = _squeezer().build().compile("recursive")
    calls = _count_kernels(monkeypatch)
    t_eval = np.linspace(2e-8, 6e-7, 30)
    rtol, atol = _TOLS[integrator]

    def stalled():
        st = s.stepper(0.03, integrator=integrator, rtol=rtol, atol=atol, t_eval=t_eval)
        st.solver.max_step = 1e-9  # (simulate takes no max_step: planted)
        run(st, st.t_end, progress=False)

    fast, ref = failures_on_both_paths(monkeypatch, _LoopStepper, "dense_blocks", stalled)
    assert sum(calls["loop_rk_block_dense"]) == 200  # (the blocks' run; none in the other)
    assert "stalled" in str(fast) and str(fast) == str(ref) and fast.time == ref.time
    # t0 and the 9 samples before 2e-7 s (the stall's step reaches the 10th: no sample)
    assert len(fast.partial.t) == 10 and fast.partial.t[-1] == t_eval[8]
    _same_run(fast.partial, ref.partial)
