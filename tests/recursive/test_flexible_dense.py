"""Output times of adaptive runs (RK45 / DOP853 / RK23) of trees with flexible bodies
inside the compiled blocks (:func:`flexmbd.recursive._flexblock.flex_rk_block_dense`,
hooked in ``TreeStepper._solver_dense_block``) against the blocks stopping at each output
time with scipy's dense output in Python (``TreeStepper.dense_blocks = False``) and
scipy's ``step()`` on the Python right-hand side (``step_blocks = False``): the same bits;
resume, stalls and non-finite states; and the momenta of a flexible floating tree's
samples in one compiled pass (:func:`flexmbd.recursive._flexblock.flex_momenta`)."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.checkpoint import run
from flexmbd.integrators.explicit import TreeStepper, tree_stepper
from flexmbd.recursive import _flexblock as FB

from .failures import failures_on_both_paths, nonfinite_in_block
from .interrupt import interrupted_at_chunk
from .test_flexible_adaptive import same_run
from .test_flexible_cfa import _free_tree
from .test_flexible_rk4 import flex_chain
from .test_tree_adaptive import python_dense_outputs

T_END = {"RK45": 0.006, "DOP853": 0.006, "RK23": 0.002}


def counted(monkeypatch):
    """``(steps of each dense block call, steps of each plain block call, Python
    right-hand side calls)`` from now on."""
    dense, plain, rhs = [], [], []
    inner, inner_plain, f = FB.flex_rk_block_dense, FB.flex_rk_block, TreeStepper._f
    monkeypatch.setattr(FB, "flex_rk_block_dense", lambda *a: dense.append(inner(*a)) or dense[-1])
    monkeypatch.setattr(FB, "flex_rk_block", lambda *a: plain.append(inner_plain(*a)) or plain[-1])
    monkeypatch.setattr(TreeStepper, "_f", lambda self, t, y: rhs.append(t) or f(self, t, y))
    return dense, plain, rhs


def model(name):
    """``(system, simulate options)``: two soft beams and a rigid tip with spring-damper
    laws, gravity and constant joint and modal forces, or the free-floating flexible
    tree (a Free joint's quaternion)."""
    if name == "chain":
        s = flex_chain(stiff=True, act0=1.0).compile("recursive")
        return s, dict(tau=np.linspace(-0.5, 0.5, s.nv))
    return _free_tree().compile("recursive"), {}


def outputs(name, t_end):
    return {
        "n30": dict(dt=t_end / 30),
        "irregular": dict(t_eval=np.sort(np.random.default_rng(3).uniform(0, t_end, 57))),
        "end": dict(t_eval=[0.0, t_end]),
    }[name]


def same_momenta(a, b):
    for k in ("momentum_linear", "momentum_angular"):
        assert a.extra.keys() == b.extra.keys()
        if k in a.extra:
            np.testing.assert_array_equal(a.extra[k], b.extra[k])


@pytest.mark.parametrize("name", ["chain", "free"])
@pytest.mark.parametrize("method", ["RK45", "DOP853", "RK23"])
@pytest.mark.parametrize("output", ["n30", "irregular", "end"])
def test_dense_blocks_write_the_interpolated_samples(monkeypatch, name, method, output):
    """Every step and every sample in the dense blocks -- the solver's own interpolant
    (DOP853: its three extra stages on the compiled right-hand side), the quaternions
    renormalized, each sample's joint and modal accelerations and reactions -- with no
    plain block, no dense output and no right-hand side in Python beyond scipy's start
    (2 calls), and no sample left to the batch after the run but the initial one. The
    run equals both reference paths bit for bit: times, states, accelerations,
    reactions, energies, body modal series, every statistic (the dense outputs'
    evaluations counted), the step count and the momenta."""
    s, kw = model(name)
    t_end = T_END[method]
    kw = dict(integrator=method, **kw, **outputs(output, t_end))
    dense, plain, rhs = counted(monkeypatch)
    py_dense = python_dense_outputs(monkeypatch)
    st = tree_stepper(s, t_end, **kw)
    fast = run(st, st.t_end, progress=False)
    nt = len(fast.t)
    assert nt == {"n30": 31, "irregular": 58, "end": 2}[output]
    assert sum(dense) == fast.meta["steps"] > 10 and not plain and len(rhs) == 2
    assert not py_dense
    assert not st._rows[2][0] and st._rows[2][1:nt].all()
    for attr in ("dense_blocks", "step_blocks"):
        with monkeypatch.context() as mp:
            mp.setattr(TreeStepper, attr, False)
            py_dense.clear()
            ref = s.simulate(t_end, **kw)
        with_samples = len(np.unique(ref.stats["rhs_evaluations"][1:]))
        assert len(py_dense) == with_samples  # one Python dense output per such step
        same_run(fast, ref)
        same_momenta(fast, ref)


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_dense_blocks_resume_bit_for_bit(tmp_path, monkeypatch, method):
    """The floating flexible tree with 300 output times, checkpointed every 37 samples:
    equal to the run without checkpoints; interrupted at the third chunk and resumed,
    equal to the resumed run of the Python dense output bit for bit, and to the
    uninterrupted run but for DOP853's ``rhs_evaluations`` after the resume (the step
    the checkpoint split computes its dense output again: 3 more evaluations from there
    on, on both paths)."""
    m = _free_tree()
    s = m.compile("recursive")
    kw = dict(integrator=method, dt=0.004 / 300)
    ref = s.simulate(0.004, **kw)
    same_run(s.simulate(0.004, checkpoint=tmp_path / "a.h5", every=37, **kw), ref)
    resumed = []
    for on in (True, False):
        monkeypatch.setattr(TreeStepper, "dense_blocks", on)
        path = tmp_path / f"b{on}.h5"
        with interrupted_at_chunk(monkeypatch) as seen:
            s.simulate(0.004, checkpoint=path, every=37, **kw)
        assert seen[:2] == [37, 37]
        resumed.append(fm.resume(path, model=m))
    same_run(*resumed)
    same_momenta(*resumed)
    got = resumed[0]
    for k in ("t", "q", "qd", "qdd", "reactions"):
        np.testing.assert_array_equal(getattr(got, k), getattr(ref, k))
    diff = got.stats["rhs_evaluations"] - ref.stats["rhs_evaluations"]
    assert not diff[:75].any()
    assert set(np.unique(diff)) <= ({0, 3} if method == "DOP853" else {0})


def test_a_stall_inside_a_dense_block_keeps_its_samples(monkeypatch):
    """A stall inside a dense block (``max_step`` 1e-9 s: the pace rule) fails with the
    error of the Python dense output -- class, message, time -- and the same partial
    rows: the samples before the stall's step."""
    s, kw = model("chain")
    dense, _, _ = counted(monkeypatch)
    fast, ref = failures_on_both_paths(
        monkeypatch,
        TreeStepper,
        "dense_blocks",
        lambda: s.simulate(0.01, integrator="DOP853", max_step=1e-9, dt=3e-8, **kw),
    )
    assert dense  # the fast run stalled in a dense block
    assert "stalled" in str(fast) and str(fast) == str(ref) and fast.time == ref.time
    assert len(fast.partial.t) > 2
    same_run(fast.partial, ref.partial)


def test_a_non_finite_state_inside_a_dense_block_fails_as_the_python_path(monkeypatch):
    """A non-finite accepted state inside a dense block (planted at the 8th step in both
    paths: the block's samples of that step dropped, as the block's own check returns
    before them) fails with the Python path's error -- class, message, time -- and the
    same partial rows."""
    s, kw = model("chain")
    fast, ref = nonfinite_in_block(
        monkeypatch,
        FB,
        "flex_rk_block_dense",
        21,
        lambda: s.simulate(0.006, integrator="DOP853", dt=5e-5, **kw),
        dense=True,
    )
    assert "non-finite state" in str(fast) and str(fast) == str(ref)
    assert fast.time == ref.time and len(fast.partial.t) > 2
    same_run(fast.partial, ref.partial)


def test_flexible_momenta_in_one_compiled_pass(monkeypatch):
    """``momentum_history`` of the floating flexible tree: one compiled call
    (:func:`flex_momenta`, no per-state ``momentum``), equal to the per-state method up to
    the rounding of its products (measured: at most 6.5e-16 of the largest momentum
    component; asserted 8 eps), and the momenta are conserved (no external load) to the
    integration tolerance; rows of q and qd that do not match are refused."""
    s = _free_tree().compile("recursive")
    res = s.simulate(0.004, integrator="DOP853", rtol=1e-10, atol=1e-12, dt=0.004 / 200)
    calls = []
    per_state = type(s).momentum
    monkeypatch.setattr(type(s), "momentum", lambda *a: calls.append(1) or per_state(*a))
    lin, ang = s.momentum_history(res.q, res.qd)
    assert not calls
    np.testing.assert_array_equal(lin, res.extra["momentum_linear"])
    np.testing.assert_array_equal(ang, res.extra["momentum_angular"])
    ref = [per_state(s, a, b) for a, b in zip(res.q, res.qd)]
    for got, want in ((lin, np.array([r[0] for r in ref])), (ang, np.array([r[1] for r in ref]))):
        scale = np.abs(want).max()
        assert scale > 10.0 and np.abs(got - want).max() <= 8 * np.finfo(float).eps * scale
        assert np.abs(got - got[0]).max() < 1e-7 * scale  # conserved
    with pytest.raises(fm.errors.ModelError, match="one row per state"):
        s.momentum_history(res.q, res.qd[:-1])


def test_rigid_momenta_history_equals_the_per_state_method(monkeypatch):
    """``momentum_history`` of a rigid floating tree (a Free and a Spherical joint) by the
    compiled pass (:func:`flexmbd.recursive._momenta.momenta_history`) equals the
    per-state :meth:`momentum` (numpy's einsum products) bit for bit over a run's
    history, one row and a slice; without loads the momenta are conserved."""
    from flexmbd.recursive import _momenta

    from .test_tree_adaptive import floating

    s = floating().compile("recursive")
    res = s.simulate(0.3, integrator="DOP853", rtol=1e-10, atol=1e-12, dt=1e-3)
    calls = []
    inner = _momenta.momenta_history
    monkeypatch.setattr(
        "flexmbd.recursive.system._momenta_history", lambda *a: calls.append(1) or inner(*a)
    )
    for rows in (slice(None), slice(0, 1), slice(100, 103)):
        lin, ang = s.momentum_history(res.q[rows], res.qd[rows])
        ref = [s.momentum(a, b) for a, b in zip(res.q[rows], res.qd[rows])]
        np.testing.assert_array_equal(lin, np.array([r[0] for r in ref]))
        np.testing.assert_array_equal(ang, np.array([r[1] for r in ref]))
    assert len(calls) == 3
    np.testing.assert_array_equal(
        res.extra["momentum_linear"], s.momentum_history(res.q, res.qd)[0]
    )
    for k in ("momentum_linear", "momentum_angular"):
        p = res.extra[k]
        assert np.abs(p).max() > 0.1 and np.abs(p - p[0]).max() < 1e-8 * np.abs(p).max()


def _series_per_state(s, q):
    """The flexible bodies' floating-frame poses and interface frames per state, as
    ``flexible_series`` computed them before its batches: the per-state kinematics,
    ``FlexTree.body_pose``, ``_DeformingFrame.pose``, ``rot_to_quat`` and the
    sign-continuity loop."""
    from flexmbd.spatial import rot_to_quat

    def continuous(e):
        for i in range(1, len(e)):
            if e[i] @ e[i - 1] < 0:
                e[i] = -e[i]
        return e

    fl, out = s.flex, {}
    for k in fl.flex_labels:
        b = s.label_bodies[k]
        sq = s.modal_slices[b.name].q
        R, r, itf = [], [], {n: [] for n in b.reduced.interface_names}
        for x in q:
            Rw, rw, _ = s.kinematics(x, np.zeros(s.nv))
            Rk, rk = fl.body_pose(k, Rw[k], rw[k])
            R.append(Rk)
            r.append(rk)
            for n in itf:
                Rf, pf = b.interface(n).pose(x[sq])
                itf[n].append((rk + Rk @ pf, Rk @ Rf))
        out[b.name] = (np.array(r), continuous(np.array([rot_to_quat(m) for m in R])))
        for n, v in itf.items():
            e = continuous(np.array([rot_to_quat(m) for _, m in v]))
            out[b.name, n] = np.concatenate([np.array([p for p, _ in v]), e], axis=1)
    return out


@pytest.mark.parametrize("name", ["chain", "free"])
def test_body_series_batches_equal_the_per_state_poses(name):
    """The flexible bodies' series of a run (floating-frame position and Euler
    parameters, every interface frame's origin and Euler parameters) from the batched
    pass (``_flexblock.flex_frame_history``, stacked ``matmul``,
    ``spatial.quat_from_rotvec_batch``, the vectorized sign continuity) equal the
    per-state poses (the code before the batches) bit for bit."""
    s, kw = model(name)
    res = s.simulate(0.004, integrator="RK45", dt=0.004 / 150, **kw)
    ref = _series_per_state(s, res.q)
    for body, ser in res.body_series.items():
        r, e = ref[body]
        np.testing.assert_array_equal(ser.position, r)
        np.testing.assert_array_equal(ser.orientation, e)
        assert ser.interfaces
        for n, v in ser.interfaces.items():
            np.testing.assert_array_equal(v, ref[body, n])


def test_sign_continuity_is_the_loop():
    """``_sign_continuous`` equals the row-by-row loop on random rows (products near zero
    included: they take the loop), smooth paths with random sign flips, rows of NaN
    (a failed run's: the loop does not flip after them) and 0 / 1 rows."""
    from flexmbd.recursive.flexible import _sign_continuous

    rng = np.random.default_rng(5)

    def loop(e):
        e = e.copy()
        for i in range(1, len(e)):
            if e[i] @ e[i - 1] < 0:
                e[i] = -e[i]
        return e

    flips = 0
    for trial in range(60):
        n = int(rng.integers(0, 300))
        th = np.cumsum(rng.normal(size=n) * 0.2)
        ax = rng.normal(size=3)
        e = np.column_stack([np.cos(th / 2), np.sin(th / 2)[:, None] * ax / np.linalg.norm(ax)])
        e *= np.where(rng.random(n) < 0.3, -1.0, 1.0)[:, None]
        if trial % 3 == 0:
            e = rng.normal(size=(n, 4))
        if trial % 5 == 1 and n > 10:
            e[n // 2 :] = np.nan  # (a failed run's rows)
        want = loop(e)
        flips += int(np.sum(want != e))
        np.testing.assert_array_equal(_sign_continuous(e.copy()), want)
    assert flips > 100
    e = np.array([[1.0, 0, 0, 0], [-1.0, 0, 0, 0], [np.nan, 0, 0, 0], [-1.0, 0, 0, 0]])
    np.testing.assert_array_equal(_sign_continuous(e.copy()), loop(e))
