"""Closed loops at weak states (near singular configurations) in compiled code: the
projector's QR, its tangent-projection stage and its correction replayed by
:mod:`flexmbd.recursive._nbloops` equal the Python path's (issue 13 item 3)."""

import numpy as np
import pytest

from flexmbd.constraints.projection import Projector, qr_basis
from flexmbd.recursive import _nbloops as NL
from flexmbd.recursive.loops import load_projector_state, projector_state

from .example_scripts import example

RTOL = 3e-2


def _four_bar():
    return example("four_bar").build().compile("recursive", rtol=RTOL, tangent_projection=True)


@pytest.fixture(scope="module")
def four_bar_run():
    s = _four_bar()
    return s, s.simulate(0.8, dt=1e-3, integrator="rk4", progress=False)


def _random_jacobian(rng):
    m, nv = int(rng.integers(1, 6)), int(rng.integers(2, 8))
    J = rng.standard_normal((m, nv))
    for r in range(1, m):
        kind = rng.integers(0, 4)
        if kind == 1:  # near-dependent on the rows before it
            J[r] = rng.standard_normal(r) @ J[:r] + 10.0 ** rng.uniform(-9, 0) * J[r]
        elif kind == 2:  # vanishing (an out-of-plane row of a planar loop)
            J[r] = 0.0
    return J


def test_the_compiled_qr_is_the_projectors_qr():
    """``_weak_qr`` on random Jacobians (near-dependent and vanishing rows, a regular
    rank given) gives ``qr_basis``'s rank, weak directions, pivots, ``|R_kk|``, leading
    ``Q`` and ``R`` columns, with the projector's cap of the rank at stage states; it
    refuses only near ties (< 2 % of the cases)."""
    rng = np.random.default_rng(7)
    n, refused = 2000, 0
    for _ in range(n):
        J = _random_jacobian(rng)
        m, nv = J.shape
        rtol = (1e-6, RTOL)[int(rng.integers(0, 2))]
        r_reg = int(rng.integers(1, m + 1))
        update = bool(rng.integers(0, 2))
        Q, R, perm, d = np.empty((nv, m)), np.empty((m, m)), np.empty(m, np.int64), np.empty(m)
        rank, r0 = NL._weak_qr(J, rtol, r_reg, False, True, update, Q, R, perm, d)
        if rank < 0:
            refused += 1
            continue
        b = qr_basis(J, rtol, regular_rank=r_reg)
        if not update and b.rank > r_reg:  # Projector.basis(update=False)
            b.rank = b.regular_rank = r_reg
        assert (rank, r0) == (b.rank, b.regular_rank)
        assert np.array_equal(perm[:r0], b.perm[:r0])
        mn = len(b.diag)
        np.testing.assert_allclose(d[:mn], b.diag, rtol=1e-12, atol=1e-14 * b.diag[0])
        k = mn if update else r0
        # column c's direction is fixed to round-off over |R_cc| / |R_11| (a weak one's
        # conditioning): compare it with that tolerance
        cond = b.diag[0] / np.maximum(b.diag[:k], 1e-300 * b.diag[0])
        assert np.all(np.abs(Q[:, :k] - b.Q[:, :k]) <= 1e-13 * cond + 1e-13)
        assert np.all(np.abs(R[:k, :k] - b.R[:k, :k]) <= (1e-13 * cond + 1e-13) * b.diag[0])
        if update:
            assert np.array_equal(perm, b.perm)
            tol = 1e-13 * np.append(cond, np.ones(m - mn)) + 1e-13
            assert np.all(np.abs(R[:mn] - b.R) <= tol * b.diag[0])
    assert refused < 0.02 * n


def test_an_exactly_singular_state_is_left_to_the_projector():
    """Below the trust limit of a weak direction (``|R_22| < 1e-11 |R_11|``) the
    projector continues its remembered weak directions: the compiled QR refuses there,
    and without a memory it reports the state's own rank."""
    from flexmbd.constraints import projection

    assert NL._DIRECTION_EPS == projection._DIRECTION_EPS  # the same trust limit
    J = np.array([[2.0, 0.0, 0.0], [1.0, 1e-12, 0.0]])
    b = qr_basis(J, 1e-6, regular_rank=2)
    assert (b.rank, b.regular_rank) == (1, 1)
    Q, R, perm, d = np.empty((3, 2)), np.empty((2, 2)), np.empty(2, np.int64), np.empty(2)
    assert NL._weak_qr(J, 1e-6, 2, True, True, False, Q, R, perm, d) == (-1, -1)
    assert NL._weak_qr(J, 1e-6, 2, False, True, False, Q, R, perm, d) == (1, 1)


def _weak_states(s, res):
    weak = np.flatnonzero(res.stats["n_weak"] == 1)
    assert len(weak) >= 10
    P = Projector(s.constraints, rtol=RTOL, tangent_projection=True)
    P.basis(res.q[0], 0.0)
    assert P.regular_rank == 2
    return weak, P


def test_the_weak_step_and_correction_are_the_projectors(four_bar_run):
    """At the four-bar's weak states (rank 1 of 2): the compiled RK4 step's first stage
    is the projector's tangent-projected accelerations and multipliers, its end state
    the Python RK4 step's, and the compiled correction gives the projector's corrected
    state, regular rank, weak direction, selection and statistics.

    Tolerance: the weak direction's equation is ~theta times the coupler's deviation,
    so round-off in the constraint values (compiled against Python, ~1e-16) moves the
    multipliers by ~3e-16/theta^3 (the example's docstring); the samples here are at
    theta >= 1.4e-2, giving < 1e-9 of the multipliers' scale. Without the tangent
    projection, or on another state, the multipliers differ by O(lam)."""
    s, res = four_bar_run
    weak, P = _weak_states(s, res)
    h = 1e-3
    lam_scale = np.abs(res.extra["lambda"]).max()
    nv = s.nv
    for i in weak:
        q, qd, t = res.q[i], res.qd[i], res.t[i]
        y = np.concatenate([q, qd])
        P.basis(q, t)
        assert P.weak_state() and P.weak_memory()
        Pp = Projector(s.constraints, rtol=RTOL, tangent_projection=True)
        load_projector_state(Pp, projector_state(P))

        def f(tt, yy, Pp=Pp):
            a, _ = s.accelerations(yy[:nv], yy[nv:], None, tt, Pp)
            return np.concatenate([yy[nv:], a])

        qdd, lam = s.accelerations(q, qd, None, t, Pp)
        k1 = f(t, y)
        k2 = f(t + h / 2, y + h / 2 * k1)
        k3 = f(t + h / 2, y + h / 2 * k2)
        k4 = f(t + h, y + h * k3)
        y1 = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out = s.weak_rk4_step(y, h, None, P, sample=True)
        assert out is not None
        yc, (pv, vv, fd) = out
        assert fd.rank == 1 and fd.n_weak == 1 and fd.regular_rank == 2
        np.testing.assert_allclose(fd.qdd, qdd, rtol=0, atol=1e-9 * lam_scale)
        np.testing.assert_allclose(fd.lam, lam, rtol=0, atol=1e-9 * lam_scale)
        np.testing.assert_allclose(yc, y1, rtol=0, atol=1e-13)
        assert pv < 1e-14 and vv < 1e-12
        # the correction of that end state
        qp, vp = Pp.correct(y1[:nv], y1[nv:], t + h)
        yw = s.weak_correct(y1, P)
        assert yw is not None
        np.testing.assert_allclose(yw[:nv], qp, rtol=0, atol=1e-14)
        np.testing.assert_allclose(yw[nv:], vp, rtol=0, atol=1e-11)
        assert P.regular_rank == Pp.regular_rank == 2
        assert P.weak_state() == Pp.weak_state()
        assert (P.selection() is None) == (Pp.selection() is None)
        for a in ("rank", "regular_rank", "n_weak", "newton_iterations"):
            assert getattr(P.info, a) == getattr(Pp.info, a)
        assert np.array_equal(P.info.discarded, Pp.info.discarded)
        wa, wb = projector_state(P)["last_weak"], projector_state(Pp)["last_weak"]
        assert (wa is None) == (wb is None)
        if wa is not None:
            np.testing.assert_allclose(wa, wb, rtol=0, atol=1e-9)


def _count_successes(monkeypatch, *names):
    """Count the calls of the compiled kernels ``names`` of ``_nbloops`` that return 0
    (the kernel took the step; other codes hand it back to Python)."""
    calls = dict.fromkeys(names, 0)
    for name in names:
        fun = getattr(NL, name)

        def counted(*a, _fun=fun, _name=name):
            st = _fun(*a)
            calls[_name] += st == 0
            return st

        monkeypatch.setattr(NL, name, counted)
    return calls


def _agrees_with_the_python_run(s, fast, q_tol, qd_tol, lam_rtol):
    """``fast`` (a 0.8 s RK4 run of ``s``) against the same run on the Python path (the
    joint forces as a function): identical rank statistics, states within ``q_tol`` rad
    and ``qd_tol`` rad/s, multipliers and reactions within ``lam_rtol`` of the largest
    multiplier."""
    nv = s.nv
    slow = s.simulate(
        0.8, dt=1e-3, integrator="rk4", tau=lambda t, q, qd: np.zeros(nv), progress=False
    )
    for k in ("rank", "regular_rank", "n_weak", "discarded"):
        assert np.array_equal(fast.stats[k], slow.stats[k])
    assert np.abs(fast.q - slow.q).max() < q_tol
    assert np.abs(fast.qd - slow.qd).max() < qd_tol
    lam = np.abs(slow.extra["lambda"]).max()
    assert np.abs(fast.extra["lambda"] - slow.extra["lambda"]).max() < lam_rtol * lam
    np.testing.assert_allclose(fast.reactions, slow.reactions, rtol=0, atol=lam_rtol * lam)


def test_the_run_takes_the_compiled_weak_path_and_equals_the_python_run(four_bar_run, monkeypatch):
    """The four-bar's RK4 run steps from its weak states by the compiled weak step and
    correction (every weak state here), and its states, multipliers, reactions and rank
    statistics are the Python run's (joint forces as a function: no compiled path), to
    the tolerance the weak states' conditioning allows (see above)."""
    s, slow_ref = four_bar_run
    calls = _count_successes(monkeypatch, "loop_rk4_step_weak", "loop_correct_weak")
    fast = s.simulate(0.8, dt=1e-3, integrator="rk4", progress=False)
    n_weak = int(np.count_nonzero(fast.stats["n_weak"]))
    assert n_weak >= 10
    assert calls["loop_rk4_step_weak"] == calls["loop_correct_weak"] == n_weak
    _agrees_with_the_python_run(s, fast, q_tol=1e-10, qd_tol=1e-8, lam_rtol=1e-8)
    np.testing.assert_array_equal(fast.q, slow_ref.q)  # the counters changed nothing


def test_a_run_recording_every_other_interval_keeps_its_samples_rows():
    """``run(..., record_every=2)``: the samples the RK4 steps evaluated (compiled and
    weak ones) belong to the recorded rows' own states: accelerations and multipliers
    equal the per-sample evaluation there (they were the rows of other intervals,
    ~17 rad/s^2 off, before)."""
    from flexmbd.checkpoint import run

    s = _four_bar()
    st = s.stepper(0.8, dt=1e-3, integrator="rk4")
    res = run(st, st.t_end, progress=False, record_every=2)
    assert len(res.t) == 401 and np.allclose(np.diff(res.t), 2e-3)
    weak, P = _weak_states(s, res)
    lam_scale = np.abs(res.extra["lambda"]).max()
    for i in range(len(res.t)):
        P.basis(res.q[i], res.t[i])
        fd = s.forward_dynamics(res.q[i], res.qd[i], None, res.t[i], P)
        assert fd.n_weak == res.stats["n_weak"][i]
        np.testing.assert_allclose(res.qdd[i], fd.qdd, rtol=0, atol=1e-9 * lam_scale)
        np.testing.assert_allclose(res.extra["lambda"][i], fd.lam, rtol=0, atol=1e-9 * lam_scale)


def test_a_checkpoint_keeps_the_weak_samples(tmp_path, monkeypatch):
    """The RK4 stepper's state (what a checkpoint saves, through HDF5) holds its weak
    samples: a stepper restored from it gives the same results without evaluating any
    sample again in Python."""
    h5py = pytest.importorskip("h5py")
    from flexmbd.checkpoint import load_state, run, save_state

    s = _four_bar()
    st = s.stepper(0.8, dt=1e-3, integrator="rk4")
    ref = run(st, st.t_end, progress=False)
    n_weak = int(np.count_nonzero(ref.stats["n_weak"]))
    state = st.state_dict()
    assert len(state["system"]["weak_samples"]["i"]) == n_weak >= 10
    with h5py.File(tmp_path / "state.h5", "w") as f:
        save_state(f.create_group("s"), state)
    with h5py.File(tmp_path / "state.h5", "r") as f:
        loaded = load_state(f["s"])
    again = s.stepper(0.8, dt=1e-3, integrator="rk4")
    again.load_state_dict(loaded)

    def no_python_sample(*a, **k):
        raise AssertionError("a sample evaluated again in Python")

    monkeypatch.setattr(s, "forward_dynamics", no_python_sample)
    monkeypatch.setattr(s, "weak_forward_dynamics", no_python_sample)
    res = again.finalize(ref)
    assert np.array_equal(res.qdd, ref.qdd)
    assert np.array_equal(res.extra["lambda"], ref.extra["lambda"])
    assert np.array_equal(res.reactions, ref.reactions)
    for k in ("rank", "regular_rank", "n_weak", "discarded", "position_violation"):
        assert np.array_equal(res.stats[k], ref.stats[k])


def test_without_the_tangent_projection_the_compiled_weak_path_is_the_python_one(
    monkeypatch,
):
    """The example's second run (no tangent projection, the paper's Fig. 5): at rank 1
    the weak row is dropped (``C = Q_n``), in the compiled steps and corrections as in
    the Python run; states, multipliers and statistics agree (here without the weak
    direction's conditioning: ~1e-13 in the states)."""
    s = example("four_bar").build().compile("recursive", rtol=RTOL, tangent_projection=False)
    calls = _count_successes(monkeypatch, "loop_rk4_step_weak")
    fast = s.simulate(0.8, dt=1e-3, integrator="rk4", progress=False)
    low = int(np.count_nonzero(fast.stats["rank"] < 2))
    assert low >= 10 and calls["loop_rk4_step_weak"] == low and fast.stats["n_weak"].max() == 0
    _agrees_with_the_python_run(s, fast, q_tol=1e-12, qd_tol=1e-11, lam_rtol=1e-9)
