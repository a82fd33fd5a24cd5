"""The compiled closed loop (flexmbd.recursive._nbloops) against the Python path of the
recursive formulation: the same equations, so the same numbers to round-off."""

import numpy as np
import pytest

import flexmbd as fm

from .example_scripts import example


def spatial_ring(n=6, tilt=0.3, seed=3, shift=0.0):
    """A ring of ``n`` rods with tilted revolute axes closed through the ground (one loop,
    5 independent cut equations) under gravity; ``shift``: the rods' body-frame origins
    moved off their joint points by ``shift`` (1, 0.5) in the rod's (y, z) axes (joint
    frames with nonzero positions on the child bodies)."""
    rng = np.random.default_rng(seed)
    nv = n + 1
    rad = 1.0 / (2 * np.sin(np.pi / nv))
    ang = 2 * np.pi * np.arange(nv + 1) / nv
    P = np.column_stack([rad * np.cos(ang), rad * np.sin(ang), np.zeros(nv + 1)])
    P -= P[0]
    m = fm.Model("ring")
    frames = []
    for i in range(n):
        u = P[i + 1] - P[i]
        u /= np.linalg.norm(u)
        Rr = np.column_stack([u, np.cross([0, 0, 1.0], u), [0, 0, 1.0]])
        frames.append((Rr, P[i] + shift * (Rr[:, 1] + 0.5 * Rr[:, 2])))
    m.rod = fm.RigidBody(
        range(n),
        rule=lambda blk, i: fm.RigidBody(mass=1.0, inertia=(0.002, 0.08, 0.08), com=(0.5, 0, 0)),
    )
    axes = []
    for _ in range(nv):
        a = np.array([0, 0, 1.0]) + tilt * rng.standard_normal(3)
        axes.append(a / np.linalg.norm(a))

    def on(i, k):
        Rb, o = frames[i]
        return (Rb.T @ (P[k] - o), Rb.T)

    def joint(blk, k):
        parent = blk.ground if k == 0 else blk.rod[k - 1]
        child = blk.ground if k == n else blk.rod[k]
        pf = (P[k], np.eye(3)) if k == 0 else on(k - 1, k)
        cf = (P[k], np.eye(3)) if k == n else on(k, k)
        return fm.Revolute(parent, child, axis=axes[k], parent_frame=pf, child_frame=cf, cut=k == n)

    m.j = fm.Revolute(range(nv), rule=joint)
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    return m


def planar_four_bar():
    """Planar four-bar closed by a spatial revolute: 5 cut equations, 2 discarded."""
    m = fm.Model("four_bar")
    m.crank = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.coupler = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.rocker = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.a = fm.Revolute(m.ground, m.crank, q0=[1.2])
    m.b = fm.Revolute(m.crank, m.coupler, parent_frame=(1.0, 0, 0), q0=[-1.2])
    m.c = fm.Revolute(m.coupler, m.rocker, parent_frame=(1.0, 0, 0), q0=[-1.94])
    m.d = fm.Revolute(
        m.rocker, m.ground, parent_frame=(1.0, 0, 0), child_frame=(1.0, 0, 0), cut=True
    )
    m.g = fm.Gravity((0, -9.81, 0))
    return m


@pytest.mark.parametrize("build", [spatial_ring, planar_four_bar])
def test_compiled_forward_dynamics_equals_the_python_path(build):
    s = build().compile("recursive")
    q, qd = s.initial_state(qd=np.linspace(0.5, -0.4, s.nv))
    s.project(q, qd)  # a corrected state: the projector's QR selects the rows
    fast = s.forward_dynamics(q, qd)
    # the Python path: accelerations, then the tree with the cut-joint wrenches
    qdd, lam = s.accelerations(q, qd)
    assert np.abs(fast.qdd - qdd).max() <= 1e-11 * np.abs(qdd).max()
    assert np.abs(fast.lam - lam).max() <= 1e-11 * np.abs(lam).max()
    # the multipliers close the loop: J qdd = gamma on the cut rows
    J = s.constraints.jacobian(q)
    gamma = s.constraints.gamma(q, qd)
    assert np.abs(J @ fast.qdd - gamma).max() < 1e-10 * max(1.0, np.abs(gamma).max())
    # reactions: Newton-Euler of the whole system with every reaction, against the
    # Python path's reactions (tree with the cut wrenches as a force element)
    slow = s.forward_dynamics(q, qd, projector=_python_projector(s))
    scale = np.abs(slow.reactions).max()
    assert np.abs(fast.reactions - slow.reactions).max() <= 1e-10 * scale
    acc = np.abs(slow.body_accelerations).max()
    assert np.abs(fast.body_accelerations - slow.body_accelerations).max() <= 1e-10 * acc
    assert fast.rank == slow.rank and np.array_equal(fast.discarded, slow.discarded)


def _python_projector(s):
    """A fresh projector: no selected rows yet, so forward_dynamics takes the QR path."""
    from flexmbd.constraints.projection import Projector

    return Projector(s.constraints)


@pytest.mark.parametrize("build", [spatial_ring, planar_four_bar])
def test_compiled_rk4_run_equals_the_python_run(build):
    s = build().compile("recursive")
    nv = s.nv
    fast = s.simulate(0.2, dt=1e-3, progress=False)
    # joint forces given as a function take the Python path (same zero forces)
    slow = s.simulate(0.2, dt=1e-3, tau=lambda t, q, qd: np.zeros(nv), progress=False)
    assert np.abs(fast.q - slow.q).max() < 1e-11
    assert np.abs(fast.qd - slow.qd).max() < 1e-9
    assert fast.stats["position_violation"].max() < 1e-12
    assert np.array_equal(fast.stats["rank"], slow.stats["rank"])
    np.testing.assert_allclose(fast.reactions, slow.reactions, rtol=0, atol=1e-8)


def test_body_motion_is_body_states_over_a_history():
    s = spatial_ring(4).compile("recursive")
    res = s.simulate(0.02, dt=1e-3, progress=False)
    motion = s.body_motion(res.q, res.qd)
    for i in (0, 7, len(res.t) - 1):
        for name, st in s.body_states(res.q[i], res.qd[i]).items():
            for a, b in zip(motion[name], st):
                np.testing.assert_allclose(a[i], b, rtol=0, atol=1e-14)


def test_the_compiled_rank_check_follows_the_pivoted_qr():
    """The compiled correction keeps its rows only where the projector's pivoted QR would
    choose the same rows with a margin: full rank, a redundant row, a weak direction."""
    from flexmbd.constraints.projection import qr_basis
    from flexmbd.recursive._nbloops import _same_rank_decision

    rng = np.random.default_rng(7)
    rtol, guard = 1e-6, 4.0
    J = rng.standard_normal((5, 8))
    b = qr_basis(J, rtol)
    sel = np.sort(b.perm[: b.rank]).astype(np.int64)
    assert b.rank == 5 and _same_rank_decision(J, sel, rtol, guard)
    # a redundant row: rank 4, the QR's four rows kept, all five refused
    Jr = J.copy()
    Jr[4] = 0.3 * J[0] - 2.0 * J[2]
    b = qr_basis(Jr, rtol)
    sel4 = np.sort(b.perm[: b.rank]).astype(np.int64)
    assert b.rank == 4 and _same_rank_decision(Jr, sel4, rtol, guard)
    assert not _same_rank_decision(Jr, np.arange(5, dtype=np.int64), rtol, guard)
    # other rows than the QR's: refused
    other = np.setdiff1d(np.arange(5), sel4)[:1]
    assert not _same_rank_decision(Jr, np.sort(np.r_[sel4[1:], other]), rtol, guard)
    # a direction just above the threshold (within the margin): refused, the QR decides
    Jw = Jr.copy()
    Jw[4] += 2.0 * rtol * np.abs(J).max() * rng.standard_normal(8)
    assert not _same_rank_decision(Jw, np.arange(5, dtype=np.int64), rtol, guard)
    assert not _same_rank_decision(Jw, sel4, rtol, guard)


def test_the_columns_sweep_is_the_tree_solve_per_column():
    """``_nbloops._tree_columns`` (all columns in one sweep over the bodies) gives the
    tree solver's ``M^-1`` column by column (``solve_mass``: one solve per column) bit
    for bit, and ``M^-1 cols`` of the dense mass matrix."""
    from flexmbd.recursive import _kernels as K
    from flexmbd.recursive import _nbloops as NL

    s = spatial_ring(7).compile("recursive")
    q, qd = s.initial_state(qd=np.linspace(0.5, -0.4, s.nv))
    s.project(q, qd)
    Ib, buf, _, forces, tau, _, reac, *_ = s.compiled_rk4()
    nv = s.nv
    assert NL._tree_free(Ib, buf, forces, q, qd, tau, np.empty(nv), reac) == 0
    cols = np.random.default_rng(5).standard_normal((5, nv))
    n1 = Ib[K.IB_N1]
    out = np.empty((5, nv))
    NL._tree_columns(Ib, buf, cols, out, *(np.empty((5, n1, 6)) for _ in range(3)))
    assert np.array_equal(out, s.tree.solve_mass(q, cols.T).T)
    ref = np.linalg.solve(s.tree.mass_matrix(q), cols.T).T
    assert np.abs(out - ref).max() <= 1e-10 * np.abs(ref).max()


@pytest.mark.parametrize("seed", [21, 22])
def test_the_columns_sweep_on_branched_trees_of_every_joint_kind(seed):
    """``_nbloops._tree_columns`` on a branched tree of every joint kind (no reversed
    joint: its speeds are orthonormal) equals the tree solver's ``M^-1`` column by
    column bit for bit: the chains' elimination with the columns inside each step of the
    schedule, its six-direction steps, the dense node system of the branch points and the
    back substitution of joints that are not diagonal revolute ones take the same
    operations per column as one solve."""
    from flexmbd.recursive import _kernels as K
    from flexmbd.recursive import _nbloops as NL

    from .models import random_state, random_tree

    m = random_tree(seed, 12, reverse=0.0)
    top = m.topology()
    assert max(len(c) for c in top.children) >= 2  # a branch point: a node system
    kinds = {type(j).__name__ for j in m.joints()}
    assert "Revolute" in kinds and {"Spherical", "Universal", "Planar"} & kinds
    s = m.compile("recursive")
    Ib, buf = s.packed_rigid(forces=True)[:2]
    q, qd, tau = random_state(s, seed, scale=0.5)
    nv = s.nv
    qdd, reac = np.empty(nv), np.empty((s.n_bodies + 1, 6))
    assert NL._tree_free(Ib, buf, s.compiled_forces(), q, qd, tau, qdd, reac) == 0
    cols = np.random.default_rng(seed).standard_normal((5, nv))
    n1 = Ib[K.IB_N1]
    out = np.full((5, nv), np.nan)
    NL._tree_columns(Ib, buf, cols, out, *(np.full((5, n1, 6), np.nan) for _ in range(3)))
    assert np.array_equal(out, s.solve_mass(q, cols.T).T)
    ref = np.linalg.solve(s.mass_matrix(q), cols.T).T
    assert np.abs(out - ref).max() <= 1e-9 * np.abs(ref).max()


def test_batch_samples_equal_the_per_state_sample_and_dynamics():
    """``_nbloops.loop_samples`` (the violations and the rank decision from the rows of
    each sample's own accelerations) gives per state what ``loop_forward_dynamics`` gives
    and the violations of the stage's rows, bit for bit, the violations and the rank
    decision of ``loop_sample`` (a separate, explicit evaluation of the rows: to
    round-off); rows that
    the QR would not select (4 of the ring's 5 independent rows) are refused."""
    from flexmbd.recursive import _nbloops as NL
    from flexmbd.recursive.loops import _GUARD

    s = spatial_ring(7).compile("recursive")
    r = s.simulate(0.05, dt=0.01)  # released from rest: gravity moves the ring
    Ib, buf, cargs, forces, tau, ws, reac, clab, body_row = s.compiled_rk4()
    Q, V = np.ascontiguousarray(r.q), np.ascontiguousarray(r.qd)
    n, nv, m = Q.shape[0], s.nv, ws[0].shape[0]
    TAU = np.zeros((n, nv))
    rtol = 1e-10
    shapes = ((nv,), (m,), (reac.shape[0], 6), (int(body_row.max()) + 1, 6), (clab.shape[0], 6))
    for sel, expect in (
        (np.arange(5, dtype=np.int64), True),
        (np.arange(4, dtype=np.int64), False),
    ):
        out = [np.zeros((n, *sh)) for sh in shapes]
        VIOL, ok = np.zeros((n, 2)), np.zeros(n, dtype=bool)
        NL.loop_samples(
            Ib, buf, cargs, forces, clab, Q, V, TAU, sel, rtol, _GUARD, ws, reac, body_row,
            *out, VIOL, ok,
        )  # fmt: skip
        assert ok.all() == expect and ok.any() == expect
        for i in range(n):
            viol = np.zeros(2)
            assert NL.loop_sample(cargs, Q[i], V[i], sel, rtol, _GUARD, *ws, viol) == expect
            # the sample's violations are its stage's rows' (from the tree pass, bit for
            # bit), the explicit rows' of loop_sample to round-off
            np.testing.assert_allclose(VIOL[i], viol, rtol=0, atol=1e-14)
            assert NL._tree_free(Ib, buf, forces, Q[i], V[i], TAU[i], np.empty(nv), reac) == 0
            NL._eval_after_tree(Ib, buf, cargs, Q[i], V[i], *ws)
            assert np.array_equal(VIOL[i], NL._violations(ws[0], ws[1], V[i]))
            if not expect:
                continue
            one = [np.zeros(sh) for sh in shapes]
            st = NL.loop_forward_dynamics(
                Ib, buf, cargs, forces, clab, Q[i], V[i], TAU[i], sel, one[0], one[1], *ws,
                one[2], one[3], body_row, one[4],
            )  # fmt: skip
            assert st == 0
            for a, b in zip(out, one, strict=True):
                assert np.array_equal(a[i], b)


def test_the_stage_scratch_is_written_before_it_is_read():
    """The loop stage and the cut rows take their scratch from the caller (``stage_work``,
    the ``work`` tuple of ``CutJointConstraints.compiled_args``) and allocate nothing:
    with every scratch array filled with NaN before each call, ``_nbloops._stage`` gives
    bit for bit the accelerations and multipliers of ``loop_accelerations`` (fresh
    scratch), state after state (no value carried over from an earlier call)."""
    from flexmbd.recursive import _kernels as K
    from flexmbd.recursive import _nbloops as NL

    s = spatial_ring(7).compile("recursive")
    r = s.simulate(0.05, dt=0.01)
    Ib, buf, cargs, forces, tau, ws, reac, *_ = s.compiled_rk4()
    nv, m = s.nv, ws[0].shape[0]
    sel = np.arange(5, dtype=np.int64)
    sw = NL.stage_work(5, nv, Ib[K.IB_N1])
    for q, v in zip(r.q, r.qd, strict=True):
        q, v = np.ascontiguousarray(q), np.ascontiguousarray(v)
        for a in (*sw, *cargs[-1]):
            a.fill(np.nan)
        qdd, lam = np.empty(nv), np.empty(m)
        assert NL._stage(Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, *ws, reac, sw) == 0
        fresh = {k: np.zeros_like(a) for k, a in (("q", qdd), ("l", lam))}
        for a in cargs[-1]:
            a.fill(0.0)
        st = NL.loop_accelerations(
            Ib, buf, cargs, forces, q, v, tau, sel, fresh["q"], fresh["l"], *ws, reac
        )
        assert st == 0
        assert np.isfinite(qdd).all() and np.array_equal(qdd, fresh["q"])
        assert np.array_equal(lam, fresh["l"])
    # and the rows themselves: the Python path's compiled rows with NaN scratch
    C = s.constraints
    C._key = None
    for a in cargs[-1]:
        a.fill(np.nan)
    a = {k: C._eval(r.q[-1], r.qd[-1], 0.0)[k].copy() for k in ("phi", "J", "gamma")}
    C._key = None
    C.compiled = False
    b = C._eval(r.q[-1], r.qd[-1], 0.0)
    C.compiled = True
    for k in a:
        np.testing.assert_allclose(a[k], b[k], atol=1e-12, err_msg=k)


def test_the_rk4_step_is_classical_rk4_of_the_stages_on_reused_scratch():
    """The compiled RK4 step on caller scratch (``_nbloops._rk4_step`` with
    ``step_work``, as ``loop_rk4_block`` runs every step) is, bit for bit, the classical
    RK4 combination ``y + h/6 (k1 + 2 k2 + 2 k3 + k4)`` of four ``loop_accelerations``
    stages (each with fresh scratch) at ``y``, ``y + h/2 k1``, ``y + h/2 k2``,
    ``y + h k3``, followed by ``loop_correct``: state after state along a run, with every
    scratch array filled with NaN before each step (nothing read before it is written,
    nothing carried over from the step before)."""
    from flexmbd.recursive import _kernels as K
    from flexmbd.recursive import _nbloops as NL
    from flexmbd.recursive.loops import _GUARD

    s = spatial_ring(7).compile("recursive")
    r = s.simulate(0.05, dt=0.01)
    Ib, buf, cargs, forces, tau, ws, reac, *_ = s.compiled_rk4()
    P = s.stepper(0.05, dt=0.01).P
    corr = (P.position_tol, P.max_newton, P.rtol, _GUARD)
    nv, m, h = s.nv, ws[0].shape[0], 0.004
    sel = np.arange(5, dtype=np.int64)
    tw = NL.step_work(5, nv, Ib[K.IB_N1], m)
    scratch = (*tw[:4], *tw[4], *tw[5])
    no_loads = (np.zeros((1, 0)), np.zeros((0, 2), np.int64))  # no loads of time

    def slope(y):
        qdd, lam = np.empty(nv), np.empty(m)
        q, v = y[:nv].copy(), y[nv:].copy()
        st = NL.loop_accelerations(Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, *ws, reac)
        assert st == 0
        return np.concatenate([v, qdd])

    for q, v in zip(r.q, r.qd, strict=True):
        y0 = np.concatenate([q, v])
        for a in scratch:
            a.fill(np.nan)
        y = y0.copy()
        st = NL._rk4_step(Ib, buf, cargs, forces, y, h, tau, sel, *corr, ws, reac, tw, *no_loads, 0)
        assert st == 0
        k1 = slope(y0)
        k2 = slope(y0 + 0.5 * h * k1)
        k3 = slope(y0 + 0.5 * h * k2)
        k4 = slope(y0 + 1.0 * h * k3)
        ref = y0 + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        assert NL.loop_correct(cargs, ref[:nv], ref[nv:], sel, *corr, *ws) == 0
        assert np.isfinite(y).all() and np.array_equal(y, ref)
        assert np.abs(y - y0).max() > 1e-6  # the state moved


def test_correct_and_sample_in_one_pass_equals_the_two_kernels():
    """``_nbloops.loop_correct_samples`` (correction, then the sample at the corrected
    state, per row) equals ``loop_correct_rows`` followed by ``loop_samples`` bit for
    bit: corrected states, statuses, violations, qdd, lambda, reactions, body
    accelerations, cut wrenches; rows the QR must decide (4 of the ring's 5 independent
    rows) are left unchanged and not sampled."""
    from flexmbd.recursive import _nbloops as NL
    from flexmbd.recursive.loops import _GUARD

    s = spatial_ring(7).compile("recursive")
    r = s.simulate(0.05, dt=0.01)
    Ib, buf, cargs, forces, tau, ws, reac, clab, body_row = s.compiled_rk4()
    rng = np.random.default_rng(7)
    Y0 = np.hstack([r.q, r.qd]) + 1e-7 * rng.standard_normal((len(r.t), 2 * s.nv))
    n, nv, m = Y0.shape[0], s.nv, ws[0].shape[0]
    TAU = np.zeros((n, nv))
    shapes = ((nv,), (m,), (reac.shape[0], 6), (int(body_row.max()) + 1, 6), (clab.shape[0], 6))
    corr = (1e-13, 5, 1e-10, _GUARD)
    for sel, expect in (
        (np.arange(5, dtype=np.int64), True),
        (np.arange(4, dtype=np.int64), False),
    ):
        Y, st, ok = Y0.copy(), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        out = [np.zeros((n, *sh)) for sh in shapes]
        VIOL = np.zeros((n, 3))
        NL.loop_correct_samples(
            Ib, buf, cargs, forces, clab, Y, TAU, sel, *corr, ws, body_row, st, *out, VIOL,
            ok,
        )  # fmt: skip
        Y2, st2, ok2 = Y0.copy(), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        NL.loop_correct_rows(cargs, Y2, sel, *corr, ws, st2)
        out2 = [np.zeros((n, *sh)) for sh in shapes]
        VIOL2 = np.zeros((n, 2))
        Q, V = np.ascontiguousarray(Y2[:, :nv]), np.ascontiguousarray(Y2[:, nv:])
        NL.loop_samples(
            Ib, buf, cargs, forces, clab, Q, V, TAU, sel, corr[2], _GUARD, ws, reac, body_row,
            *out2, VIOL2, ok2,
        )  # fmt: skip
        np.testing.assert_array_equal(Y, Y2)
        np.testing.assert_array_equal(st, st2)
        if not expect:  # every row left unchanged and unsampled: the QR corrects them
            assert (st == NL.NEEDS_QR).all() and not ok.any()
            np.testing.assert_array_equal(Y, Y0)
            continue
        assert (st == 0).all() and ok.all()
        assert not np.array_equal(Y, Y0)  # the perturbed states were corrected
        np.testing.assert_array_equal(ok, ok2)
        np.testing.assert_array_equal(VIOL[:, :2], VIOL2)
        assert VIOL[:, 0].max() < 1e-12  # on the constraints after the correction
        for a, b in zip(out, out2, strict=True):
            np.testing.assert_array_equal(a, b)


def test_the_replayed_qr_decision_is_the_projectors():
    """Where the margin test refuses, the compiled check replays the projector's pivoted QR
    (:func:`_qr_selects`): it accepts exactly the QR's rows in the QR's pivot order, and
    never a selection the QR would not make (random Jacobians with near-dependent and
    vanishing rows, both rank thresholds in use)."""
    from flexmbd.constraints.projection import qr_basis
    from flexmbd.recursive._nbloops import _qr_selects

    rng = np.random.default_rng(11)
    accepted = total = 0
    for trial in range(3000):
        m, nv = int(rng.integers(1, 6)), int(rng.integers(2, 8))
        J = rng.standard_normal((m, nv))
        if m > 1 and trial % 2:  # a row close to dependent: 1e-9 ... 1 off
            J[-1] = rng.standard_normal() * J[0] + 10.0 ** rng.uniform(-9, 0) * rng.standard_normal(
                nv
            )
        if trial % 5 == 0:
            J[rng.integers(m)] = 0.0  # a vanishing row (planar loop in space)
        rtol = (1e-6, 3e-2)[trial % 2]
        b = qr_basis(J, rtol)
        if b.rank == 0:
            continue
        sel = np.ascontiguousarray(b.perm[: b.rank], dtype=np.int64)
        total += 1
        accepted += _qr_selects(J, sel, rtol)
        # another order, one row fewer, one row more: never accepted
        for alt in (sel[::-1], sel[:-1], np.r_[sel, b.perm[b.rank : b.rank + 1]]):
            alt = np.ascontiguousarray(alt, dtype=np.int64)
            if len(alt) and not np.array_equal(alt, sel):
                assert not _qr_selects(J, alt, rtol)
    # refusals are only round-off ties of column norms or of the threshold
    assert accepted >= 0.99 * total


def test_inside_the_margin_the_qr_decides_in_compiled_code():
    """A row 2.5 rtol above the threshold: the Cholesky margin test refuses, the replayed QR
    (rank 5, its pivots) accepts, so the compiled path keeps its rows as the QR would."""
    from flexmbd.constraints.projection import qr_basis
    from flexmbd.recursive._nbloops import _margin_decision, _qr_selects, _same_rank_decision

    rng = np.random.default_rng(7)
    rtol, guard = 1e-6, 4.0
    J = rng.standard_normal((5, 8))
    J[4] = 0.3 * J[0] - 2.0 * J[2]
    # a direction normal to the other rows: J[4] pivots first and row 2 (coefficient -2)
    # last, with |R_55| = 2.5 rtol |R_11|
    u = rng.standard_normal(8)
    u -= np.linalg.pinv(J[:4]) @ (J[:4] @ u)
    J[4] += 5.0 * rtol * qr_basis(J, rtol).diag[0] * u / np.linalg.norm(u)
    b = qr_basis(J, rtol)
    sel = np.ascontiguousarray(b.perm[: b.rank], dtype=np.int64)
    assert b.rank == 5 and b.diag[4] < guard * rtol * b.diag[0]
    assert not _margin_decision(J, sel, rtol, guard)
    assert _qr_selects(J, sel, rtol) and _same_rank_decision(J, sel, rtol, guard)
    # the four rows of the pivot order alone: rank 5 is not 4, refused
    assert not _same_rank_decision(J, sel[:4].copy(), rtol, guard)


def test_four_bar_through_its_singular_window_equals_the_python_run():
    """The example's four-bar (rtol 3e-2: a wide singular window) over its first singular
    crossing: the compiled RK4 steps and samples, which now keep the rows where the margin
    test refused and the QR agrees, give the Python run's states, multipliers, reactions
    and rank statistics."""
    from flexmbd.constraints.projection import qr_basis
    from flexmbd.recursive._nbloops import _margin_decision, _qr_selects

    s = _four_bar_example()
    nv = s.nv
    fast = s.simulate(0.8, dt=1e-3, integrator="rk4", progress=False)
    slow = s.simulate(
        0.8, dt=1e-3, integrator="rk4", tau=lambda t, q, qd: np.zeros(nv), progress=False
    )
    # the run crosses the singular configuration (rank 1 of 2, a weak direction) ...
    assert fast.stats["n_weak"].max() == 1
    assert np.array_equal(fast.stats["rank"], slow.stats["rank"])
    assert np.array_equal(fast.stats["n_weak"], slow.stats["n_weak"])
    # ... and has regular samples inside the margin that the replayed QR decided
    J, rtol = s.constraints.jacobian, 3e-2
    regular = np.flatnonzero(fast.stats["n_weak"] == 0)
    sels = {}
    for i in regular:
        Ji = J(fast.q[i])
        b = qr_basis(Ji, rtol)
        sel = np.ascontiguousarray(b.perm[: b.rank], dtype=np.int64)
        if not _margin_decision(Ji, sel, rtol, 4.0):
            sels[i] = _qr_selects(Ji, sel, rtol)
    assert len(sels) >= 20 and all(sels.values())
    assert np.abs(fast.q - slow.q).max() < 1e-10
    assert np.abs(fast.qd - slow.qd).max() < 1e-8
    lam = np.abs(slow.extra["lambda"]).max()
    assert np.abs(fast.extra["lambda"] - slow.extra["lambda"]).max() < 1e-8 * lam
    np.testing.assert_allclose(fast.reactions, slow.reactions, rtol=0, atol=1e-8 * lam)


def _four_bar_example():
    return example("four_bar").build().compile("recursive", rtol=3e-2, tangent_projection=True)


def test_four_bar_weak_samples_are_the_steps_first_stage():
    """At the weak states (rank 1 of 2) the compiled RK4 run's samples come from the
    generic step's first stage: accelerations, multipliers and reactions equal the
    per-sample evaluation (the projector's QR with the tangent projection, then
    forward_dynamics) at the same states, and the trajectory is unchanged by it."""
    from flexmbd.constraints.projection import Projector

    s = _four_bar_example()
    res = s.simulate(0.8, dt=1e-3, integrator="rk4", progress=False)
    weak = np.flatnonzero(res.stats["n_weak"] == 1)
    assert len(weak) >= 10
    # the per-sample evaluation, with the run's regular rank (2) known first
    P = Projector(s.constraints, rtol=3e-2, tangent_projection=True)
    P.basis(res.q[0], 0.0)
    assert P.regular_rank == 2 and not P.weak_state()
    lam = np.abs(res.extra["lambda"]).max()
    for i in weak:
        q, qd, t = res.q[i], res.qd[i], res.t[i]
        P.basis(q, t)
        fd = s.forward_dynamics(q, qd, None, t, P)
        assert fd.n_weak == 1 and fd.rank == 1 and P.weak_state()
        # the same calls on the same state: equal to round-off (a sample without the
        # tangent projection or from another state differs by O(lam))
        np.testing.assert_allclose(res.qdd[i], fd.qdd, rtol=0, atol=1e-12 * lam)
        np.testing.assert_allclose(res.extra["lambda"][i], fd.lam, rtol=0, atol=1e-12 * lam)
        np.testing.assert_allclose(res.reactions[i], fd.reactions, rtol=0, atol=1e-12 * lam)


def test_a_compiled_regular_correction_forgets_the_weak_directions():
    """The four-bar's projector after a weak state keeps its weak direction (for a later
    exactly singular state); a correction on a full-rank selection (the compiled loop's,
    :meth:`Projector.regular_state`) forgets it, as a QR at a regular state does, and a
    selection below the regular rank does not."""
    from flexmbd.constraints.projection import Projector
    from flexmbd.recursive.loops import projector_state

    s = _four_bar_example()
    res = s.simulate(0.8, dt=1e-3, integrator="rk4", progress=False)
    i = int(np.flatnonzero(res.stats["n_weak"] == 1)[0])
    P = Projector(s.constraints, rtol=3e-2, tangent_projection=True)
    sel = P.basis(res.q[0], 0.0).perm[:2].copy()
    b = P.basis(res.q[i], res.t[i])
    assert b.n_weak == 1 and P.weak_state()
    w = projector_state(P)["last_weak"]
    assert w.shape == (s.nv, 1)
    # the kept direction is the weak one: orthogonal to the normal one, unit length
    assert abs(float(b.Qn[:, 0] @ w[:, 0])) < 1e-12 and abs(np.linalg.norm(w) - 1) < 1e-12
    P.regular_state(sel[:1])
    assert projector_state(P)["last_weak"] is w
    P.regular_state(sel)
    assert projector_state(P)["last_weak"] is None


def _squeezer_model():
    return example("andrews_squeezer").build()


def _reversed_four_bar():
    """The planar four-bar with its coupler joint declared coupler -> crank (reversed in
    the tree)."""
    m = planar_four_bar()
    del m.b
    m.b = fm.Revolute(m.coupler, m.crank, child_frame=(1.0, 0, 0), q0=[1.2])
    assert m.topology().reversed.any()
    return m


def _cylindrical_four_bar():
    """The planar four-bar with a Cylindrical joint between coupler and rocker."""
    m = planar_four_bar()
    del m.c
    m.c = fm.Cylindrical(m.coupler, m.rocker, parent_frame=(1.0, 0, 0), q0=[-1.94, 0.0])
    return m


@pytest.mark.parametrize(
    "build, from_tree",
    [
        (spatial_ring, True),
        (lambda: spatial_ring(5, shift=0.3), True),
        (_squeezer_model, True),
        (_reversed_four_bar, False),
        (_cylindrical_four_bar, False),
    ],
)
def test_the_stage_rows_from_the_tree_pass_equal_the_explicit_rows(build, from_tree):
    """After the tree pass of a stage, ``_nbloops._eval_after_tree`` takes the loop
    kinematics from the tree's relative poses (``tree_loop_kinematics``: loops of
    non-reversed Revolute joints, tree labels in the cut arguments); its rows ``phi``,
    ``J``, ``gamma`` and the loop bodies' twists, columns and bias (and the poses of the
    bodies that carry a cut frame) equal the
    explicit ``cuts_eval`` to round-off at random states (the ring; the squeezer, with
    its force table's tree pass). A loop with a non-revolute tree joint has no labels and
    takes the explicit rows, bit for bit; nor has one with a reversed tree joint (which
    the compiled stage does not take at all)."""
    from flexmbd.recursive import _nbloops as NL

    s = build().compile("recursive")
    lab, carries = s.constraints.compiled_args()[33]
    assert (lab > 0).all() == from_tree and (lab < 0).all() != from_tree
    if build is _reversed_four_bar:
        assert s.compiled_rk4() is None  # no compiled stage on a reversed tree joint
        return
    Ib, buf, cargs, forces, tau, ws, reac, *_ = s.compiled_rk4()
    outs = cargs[14:22]
    nv, m = s.nv, ws[0].shape[0]
    rng = np.random.default_rng(7)
    q0, _ = s.initial_state()
    for _ in range(3):
        q = q0 + 0.5 * rng.standard_normal(nv)
        v = rng.standard_normal(nv)
        assert NL._tree_free(Ib, buf, forces, q, v, tau, np.empty(nv), reac) == 0
        a = (np.full(m, np.nan), np.full((m, nv), np.nan), np.full(m, np.nan))
        NL._eval_after_tree(Ib, buf, cargs, q, v, *a)
        got = [o.copy() for o in outs]
        b = (np.zeros(m), np.zeros((m, nv)), np.zeros(m))
        NL._eval(cargs, q, v, True, *b)
        for x, y, name in zip(
            (*a, *got), (*b, *outs), "phi J gamma Rb rb wb vOb Wc Lc oc bias".split(), strict=True
        ):
            if from_tree and name in ("Rb", "rb"):  # the poses of the cut frames' bodies
                assert carries.any()
                x, y = x[carries == 1], y[carries == 1]
            if from_tree:
                np.testing.assert_allclose(
                    x, y, rtol=0, atol=1e-12 * max(1.0, np.abs(y).max()), err_msg=name
                )
            else:
                assert np.array_equal(x, y), name


def test_margin_decision_picks_the_qr_pivots_of_rank_deficient_rows():
    """The left-looking margin test (only the pivots' rows and columns of ``J J^T``) on
    200 random rank-deficient row sets, up to 15 rows of rank up to 7 (the squeezer's
    15 rows of rank 6): it accepts the projector's QR selection (the pivoted Cholesky's
    pivots are the QR's), and refuses it without its last pivot (rank k - 1 is not the
    rank) or with a pivot exchanged for a dependent row (another choice of rows)."""
    from flexmbd.constraints.projection import qr_basis
    from flexmbd.recursive._nbloops import _margin_decision

    rng = np.random.default_rng(11)
    rtol, guard = 1e-6, 4.0  # (the Gram's round-off puts a dependent row's pivot ~1e-8)
    checked = 0
    for _ in range(200):
        m, nv = int(rng.integers(2, 16)), int(rng.integers(2, 10))
        r = int(rng.integers(1, min(m, nv) + 1))
        J = rng.standard_normal((m, r)) @ rng.standard_normal((r, nv))
        b = qr_basis(J, rtol)
        sel = np.ascontiguousarray(b.perm[: b.rank], dtype=np.int64)
        assert b.rank == r and _margin_decision(J, np.sort(sel), rtol, guard)
        assert not _margin_decision(J, np.sort(sel[:-1]), rtol, guard)
        if r < m:
            swapped = np.sort(np.r_[sel[:-1], b.perm[b.rank]]).astype(np.int64)
            assert not _margin_decision(J, swapped, rtol, guard)
            checked += 1
    assert checked > 100
