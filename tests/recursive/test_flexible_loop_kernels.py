"""Closed loops through flexible bodies in compiled code (flexmbd.recursive._nbflexcut):
the cut-joint rows, the cut wrenches through deforming frames and the projected solve
agree with the Python reference path (``LoopSystem.flex_compiled = False``) to round-off,
and they are the path taken by default."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.checkpoint import run
from flexmbd.recursive import _flexkernels as FK
from flexmbd.recursive import _nbflexblock as FB
from flexmbd.recursive import _nbflexcut as FC
from flexmbd.recursive import _nbsingle as NS
from flexmbd.recursive.loops import LoopSystem, _LoopStepper

from .test_flexible_cfa import beam
from .test_flexible_loops import _state, _stiffened_loop, fourbar

CASES = [("cbA", "spherical", False), ("cb", "universal", False), ("cb", "spherical", True)]


def _loop(kind, closing, stiff, seed=1):
    ls = fourbar(kind, closing, stiffening=stiff).compile("recursive")
    q, qd = _state(ls, np.random.default_rng(seed), scale=1e-3, speed=5.0)
    return ls, q, qd


def _close(x, y, rtol):
    """|x - y| within ``rtol`` of the largest |y| (round-off of sums in another order)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    return np.abs(x - y).max() <= rtol * max(np.abs(y).max(), 1e-300)


@pytest.mark.parametrize("kind, closing, stiff", CASES)
def test_compiled_rows_agree_with_the_python_rows(kind, closing, stiff):
    ls, q, qd = _loop(kind, closing, stiff)
    c = ls.constraints
    assert c.compiled_flex
    for v in (qd, None):
        c.compiled_flex = True
        a = c._eval(q, v, 0.0)
        c.compiled_flex = False
        b = c._eval(q, v, 0.0)
        c.compiled_flex = True
        # measured: 2e-16 (phi, J) ... 6e-15 (gamma) of the largest entry
        for name in ("phi", "J") + (("gamma",) if v is not None else ()):
            assert _close(a[name], b[name], 1e-13), name
        # phi of a closed state is round-off itself: compare it with the frames' scale
        assert np.abs(a["phi"] - b["phi"]).max() <= 1e-15
        for ra, rb in zip(a["rel"], b["rel"]):
            for x, y in zip(ra, rb):
                assert (x is None) == (y is None)
                if x is not None:
                    assert np.abs(x - y).max() <= 1e-13 * (1.0 + np.abs(y).max())
    # the modal columns are there (the coupler's interface moves with its modes)
    sv = ls.modal_slices["coupler"].v
    assert np.abs(c.jacobian(q)[:, sv]).max() > 1e-2


def branched(stiffening=False):
    """Two loops through two flexible beams (not assembled: the rows at any state). ``b0``
    (Craig-Bampton at A and B) on a revolute to ground, ``b1`` on b0's interface B, a rigid
    arm on a universal joint at a point of b0 (a frame that does not deform), a rigid
    rocker on a revolute declared rocker -> ground (reversed in the tree); closed by
    spherical joints from b1's interface B to the arm (``j3``: their common ancestor is
    b0) and to the rocker (``j5``)."""
    m = fm.Model("flex_branch")
    m.b0 = fm.FlexibleBody(beam(4, "cb"), geometric_stiffening=stiffening)
    m.b1 = fm.FlexibleBody(beam(4, "cbA"), geometric_stiffening=stiffening)
    m.arm = fm.RigidBody.rod(1.0, 0.5, axis="x", radius=0.02, origin="end")
    m.rocker = fm.RigidBody.rod(1.5, 0.3, axis="x", radius=0.02, origin="end")
    m.j0 = fm.Revolute(m.ground, m.b0, axis=(0, 0, 1), child_frame=m.b0.interface("A"))
    m.j1 = fm.Revolute(
        m.b0, m.b1, axis=(0, 0, 1), parent_frame=m.b0.interface("B"),
        child_frame=m.b1.interface("A"), q0=[2.0],
    )  # fmt: skip
    m.j2 = fm.Universal(
        m.b0, m.arm, axis1=(0, 0, 1), axis2=(0, 1, 0), parent_frame=(0.5, 0.025, 0.025),
        q0=[1.0, 0.1],
    )  # fmt: skip
    m.j3 = fm.Spherical(m.b1, m.arm, parent_frame=m.b1.interface("B"), child_frame=(0.5, 0, 0))
    m.j4 = fm.Revolute(m.rocker, m.ground, axis=(0, 0, 1), child_frame=(1.0, 1.0, 0))
    m.j5 = fm.Spherical(m.rocker, m.b1, parent_frame=(0.3, 0, 0), child_frame=m.b1.interface("B"))
    m.g = fm.Gravity((0, -9.81, 0.3))
    return m


@pytest.mark.parametrize("stiff", [False, True])
def test_cut_columns_through_flexible_parents(stiff):
    """The compiled rows' Jacobian (columns by one sweep along each cut frame's path: world
    twists of the joint subspaces, of a flexible parent's modal shifts ``Psi_k^T`` and of
    ``S_F - S_C``) on two loops through a flexible parent (by a deforming and by a rigid in
    frame), with a flexible common ancestor, a reversed and a two-speed joint: the Python
    rows (tree kinematics at unit speeds, one pass per speed) to round-off at states far
    from closure, and ``J v`` the central difference of ``phi`` along ``v``."""
    ls = branched(stiff).compile("recursive")
    c = ls.constraints
    assert [j.name for j in ls.cut_joints] == ["j3", "j5"] and c.compiled_flex
    rng = np.random.default_rng(4)
    h = 1e-6
    for _ in range(4):
        q = ls.tree.q0() + rng.normal(size=ls.nv)
        for sq, _sv in ls.modal_slices.values():
            q[sq] = 1e-2 * rng.normal(size=sq.stop - sq.start)
        v = rng.normal(size=ls.nv)
        c.compiled_flex = True
        a = c._eval(q, v, 0.0)
        c.compiled_flex = False
        b = c._eval(q, v, 0.0)
        c.compiled_flex = True
        # measured 3.6e-16 (J), 2.3e-16 (phi) and 7.9e-16 (gamma) of the largest entry
        for name in ("phi", "J", "gamma"):
            assert _close(a[name], b[name], 1e-13), name
        fd = (c.phi(c.retract(q, h * v)) - c.phi(c.retract(q, -h * v))) / (2 * h)
        # measured 1.2e-10 of the largest rate (the differences' truncation and round-off)
        assert _close(a["J"] @ v, fd, 1e-8)
    J = a["J"]
    # b0's modes move both frames of j3 (b1 through its deforming interface, the arm through
    # its rigid frame) and j5's child frame; the reversed rocker only j5's parent frame
    sv0 = ls.modal_slices["b0"].v
    assert np.abs(J[:3, sv0]).max() > 0.1 and np.abs(J[3:, sv0]).max() > 0.1
    j4 = [i for i, (owner, _) in enumerate(ls.speeds) if owner == "j4"]
    assert len(j4) == 1 and np.abs(J[3:, j4]).max() > 0.1 and not J[:3, j4].any()


def test_compiled_cut_wrenches_equal_frame_wrench():
    """Wrenches through both cut frames, one of them the coupler's stiffened interface:
    the compiled kernel puts the same body wrenches and modal forces (with the interface's
    geometric-stiffening term) into the tree workspace as FlexTree.frame_wrench."""
    ls, q, qd = _loop("cb", "spherical", True)
    sI = ls.constraints.sides()[0]
    assert (sI[:, FC.SI_KIND] == FC.S_FLEX).sum() == 1 and sI[:, FC.SI_KG].max() >= 12
    tree, fl = ls.tree, ls.tree.flex
    el = ls._wrench_element
    rng = np.random.default_rng(4)
    j = ls.cut_joints[0]
    items = [
        (j.child, rng.normal(size=3), rng.normal(size=3), rng.normal(size=3), j.child_frame),
        (j.parent, rng.normal(size=3), rng.normal(size=3), rng.normal(size=3), j.parent_frame),
    ]
    out = []
    for compiled in (True, False):
        el.compiled = compiled
        el.current = items
        fext = np.zeros((tree.n_bodies + 1, 6))
        fl.clear_applied()
        tree.kinematics(q, qd)
        assert fl.point_force(el, 0.0, q, None, fext, qd)
        out.append((fext.copy(), fl.Fm[:, FK.FM_QAPP].copy()))
        fl.clear_applied()
    el.current, el.compiled = [], True
    (fa, ma), (fb, mb) = out
    assert np.abs(fb).max() > 0.1 and np.abs(mb).max() > 1e-3
    assert _close(fa, fb, 1e-14) and _close(ma, mb, 1e-13)


@pytest.mark.parametrize("kind, closing, stiff", CASES)
def test_forward_dynamics_agrees_with_the_python_path(kind, closing, stiff, monkeypatch):
    """The documented call: one compiled call (:func:`_nbflexblock.flex_loop_forward_dynamics`;
    with stiffening its loop-aware iteration inside), against the Python path; the
    deferred projection statistics and tree solution are those of the call."""
    ls, q, qd = _loop(kind, closing, stiff)
    q, qd = ls.project(q, qd)
    assert ls.projector.selection() is not None  # a corrected regular state: rows known
    ls.forward_dynamics(q, qd)  # (compiles the kernel before it is replaced)
    calls = {}
    _counting(monkeypatch, FB, ("flex_loop_forward_dynamics",), calls)
    fa = ls.forward_dynamics(q, qd)
    assert calls["flex_loop_forward_dynamics"] == 1
    ls.flex_compiled = False
    fb = ls.forward_dynamics(q, qd)
    ls.flex_compiled = True
    assert calls["flex_loop_forward_dynamics"] == 1
    # measured 1e-14 (qdd), 5e-14 (reactions, multipliers) of the largest entry
    assert _close(fa.qdd, fb.qdd, 1e-12)
    assert _close(fa.lam, fb.lam, 1e-12)
    assert _close(fa.reactions, fb.reactions, 1e-12)
    assert _close(fa.body_accelerations, fb.body_accelerations, 1e-12)
    assert (fa.rank, fa.regular_rank, fa.n_weak) == (fb.rank, fb.regular_rank, fb.n_weak)
    assert np.array_equal(fa.discarded, fb.discarded)
    # the tree solution with the cut wrenches applied (compiled: the loop's accelerations)
    assert _close(fa.tree.qdd, fb.tree.qdd, 1e-12)
    assert _close(fa.tree.reactions, fb.tree.reactions, 1e-12)


@pytest.mark.parametrize(
    "kind, closing, n_free", [("cbA", "spherical", 3), ("cbA", "universal", 13)]
)
def test_stiffened_loop_is_the_python_iteration_compiled(kind, closing, n_free, monkeypatch):
    """Loop-aware stiffening in one compiled call (:func:`_nbflexcut.flex_loop_stiffening`
    inside :func:`_nbflexblock.flex_loop_forward_dynamics`) at the states of the oracles of
    test_flexible_loops.py (absolute formulation, self-consistency), after a correction:
    no Python iteration; against it (``flex_compiled = False``) to round-off. The
    spherical loop's fixed point converges in two steps (3 tree solves in Python); the
    universal one's does not contract and both paths solve the affine equation by Newton
    steps (13 tree solves in Python: the free one, 2 fixed-point steps, then 2 Newton steps
    of 4 finite-difference columns and the step each)."""
    _, ls, q, qd, _ = _stiffened_loop(kind, closing)
    q, qd = ls.project(q, qd)
    ls.forward_dynamics(q, qd)  # (compiles the kernel before it is replaced)
    calls = {}
    _counting(monkeypatch, FB, ("flex_loop_forward_dynamics",), calls)
    _counting(monkeypatch, LoopSystem, ("_loop_stiffening",), calls)
    fa = ls.forward_dynamics(q, qd)
    assert calls == {"flex_loop_forward_dynamics": 1, "_loop_stiffening": 0}
    free = ls._free
    n = [0]

    def counted(*args):
        n[0] += 1
        return free(*args)

    monkeypatch.setattr(ls, "_free", counted)
    ls.flex_compiled = False
    fb = ls.forward_dynamics(q, qd)
    ls.flex_compiled = True
    assert calls == {"flex_loop_forward_dynamics": 1, "_loop_stiffening": 1}
    assert n[0] == n_free
    # measured 1.6e-14 and 4.0e-15 (qdd), 1.3e-13 and 2.0e-14 (lam), 8.4e-14 and 2.0e-14
    # (reactions), 1.4e-14 and 1.2e-12 (body accelerations: the universal loop's
    # multipliers are 3.5e5 N) of the largest entry
    assert _close(fa.qdd, fb.qdd, 1e-12)
    assert _close(fa.lam, fb.lam, 1e-12)
    assert _close(fa.reactions, fb.reactions, 1e-12)
    assert _close(fa.body_accelerations, fb.body_accelerations, 1e-11)
    # the constraints' accelerations hold (the iteration's tolerance)
    J = ls.constraints.jacobian(q)
    assert np.abs(J @ fa.qdd - ls.constraints.gamma(q, qd)).max() <= 1e-8 * (
        1.0 + np.abs(fa.qdd).max()
    )


def _stage_args(ls, q, qd):
    """The compiled stage's arguments of a corrected loop (:meth:`LoopSystem._flex_parts`)
    and a random torque (nv,)."""
    parts = ls._flex_parts(ls.projector)
    assert parts is not None
    return parts, np.random.default_rng(3).normal(size=qd.shape)


@pytest.mark.parametrize("kind, closing, stiff", CASES)
def test_columns_on_the_free_factor_are_the_tree_columns(kind, closing, stiff):
    """``Y = M^-1 J^T`` of the stage (:func:`_nbflexcut.factored_columns`: the factor of
    the free solve at ``(q, v)``, after the cut rows' kinematics passes) bit for bit as
    :func:`_flexkernels.solve_columns` (its own kinematics, bias pass and factorization at
    ``(q, 0)``), at a state with large modal rates and joint forces; ``J M^-1 J^T`` is
    symmetric (``M`` is) to round-off."""
    ls, q, qd = _loop(kind, closing, stiff)
    q, qd = ls.project(q, qd)
    (head, sel, rows, solve, *_), tau = _stage_args(ls, q, qd)
    T, MI, grav, use_grav, reac, tol, max_iter, info = head
    qf, acc = solve[0], solve[1]
    st = NS.flex_forward_dynamics(
        T, q, qd, tau, MI, grav, use_grav, reac, stiff, tol, max_iter, info, qf, acc, False,
        True,
    )  # fmt: skip
    assert st == 0
    FC.flex_cuts_eval(T, *rows[:9], q, qd, True, *rows[9:])
    JT = np.ascontiguousarray(rows[10][1].T)
    assert np.abs(JT).max() > 0.1
    Ya, Yb = np.empty_like(JT), np.empty_like(JT)
    FC.factored_columns(T, JT, Ya)
    assert FK.solve_columns(T, q, JT, Yb) == 0
    assert np.array_equal(Ya, Yb)
    A = JT.T @ Ya
    assert _close(A, A.T, 1e-12)


@pytest.mark.parametrize("kind, closing, stiff", CASES)
def test_stage_rows_on_the_free_solve_kinematics(kind, closing, stiff):
    """The stage's rows (:func:`_nbflexcut._cuts_eval` without a kinematics pass of its own,
    on the free solve's at ``(q, v)``: its bias pass, factorization, stiffening and solve
    leave the kinematic rows as they are) bit for bit the rows of a fresh pass
    (:func:`_nbflexcut.flex_cuts_eval`), at a state with large modal rates and joint forces,
    after a kinematics pass at another state."""
    ls, q, qd = _loop(kind, closing, stiff)
    q, qd = ls.project(q, qd)
    (head, sel, rows, solve, *_), tau = _stage_args(ls, q, qd)
    T, MI, grav, use_grav, reac, tol, max_iter, info = head
    fresh = ls.constraints.flex_outputs()
    FC.flex_cuts_eval(T, *rows[:9], q, qd, True, rows[9], fresh)
    FK.kinematics(T, q + 0.1, 2.0 * qd, True)
    FC._cuts_eval(T, *rows[:9], q + 0.1, 2.0 * qd, True, rows[9], rows[10], False)
    assert np.abs(rows[10][1] - fresh[1]).max() > 1e-3  # (another state's rows)
    st = NS.flex_forward_dynamics(
        T, q, qd, tau, MI, grav, use_grav, reac, stiff, tol, max_iter, info, solve[0],
        solve[1], False, True,
    )  # fmt: skip
    assert st == 0 and (info[0] > 0) == stiff
    FC._cuts_eval(T, *rows[:9], q, qd, True, rows[9], rows[10], False)
    for a, b in zip(rows[10], fresh):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("kind, closing", [("cbA", "spherical"), ("cbA", "universal")])
def test_stiffening_g_on_the_free_factor_is_the_full_tree_solve(kind, closing):
    """Each ``g(lam)`` of the loop-aware stiffening (:func:`_nbflexcut._stiff_g`) solves
    the stiffened tree with the cut wrenches of ``lam`` on the kinematics and factor the
    stage left (:func:`_nbsingle.flex_factored_dynamics`): bit for bit the full tree solve
    (``factored=False``: its own kinematics pass and factorization), also after other
    ``g`` of either kind; the wrenches of ``lam`` matter (the correction of ``lam = 0`` is
    about ``lam``)."""
    _, ls, q, qd = _stiffened_loop(kind, closing)[:4]
    q, qd = ls.project(q, qd)
    (head, sel, rows, solve, *_), tau = _stage_args(ls, q, qd)
    T, MI, grav, use_grav, reac, tol, max_iter, info = head
    sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work, out = rows
    qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, *_, stiff, sw = solve
    assert stiff
    st = FC.flex_loop_accelerations(
        T, MI, grav, use_grav, reac, tol, max_iter, info, q, qd, tau, sel, sI, sC, sFt, sFs,
        cI, E, F, G, pspeeds, work, out, qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, stiff, sw,
    )  # fmt: skip
    assert st == 0 and np.abs(lam).max() > 1.0
    ga = (T, MI, grav, use_grav, reac, tol, max_iter, info, q, qd, tau, sel, sI, sC, sFt, sFs,
          cI, out, acc, C, Y, A, b, x, r, sw)  # fmt: skip
    rng = np.random.default_rng(5)
    lams = [lam.copy(), lam * (1.0 + 0.1 * rng.normal(size=lam.shape)), 0.0 * lam]
    res = {}
    for factored in (True, False, True, False):
        for i, li in enumerate(lams):
            qn, dl = np.empty_like(qdd), np.empty_like(lam)
            assert FC._stiff_g(ga, li, qn, dl, factored) == 0
            if i in res:
                assert np.array_equal(qn, res[i][0]) and np.array_equal(dl, res[i][1])
            res[i] = qn, dl
    # at the converged lam the correction is small; from lam = 0 it is about lam itself
    assert np.abs(res[0][1]).max() < 1e-6 * np.abs(lam).max()
    assert np.abs(res[2][1] - res[0][1]).max() > 0.5 * np.abs(lam).max()


def _counting(monkeypatch, module, names, calls):
    """Count the Python calls of the kernels ``names`` of ``module`` (only after they
    compiled: a kernel that is a numba global of another must not be replaced before that
    one compiles, or a cold cache would type the wrapper)."""

    def counted(name):
        f = getattr(module, name)

        def wrapper(*args):
            calls[name] += 1
            return f(*args)

        return wrapper

    for name in names:
        calls[name] = 0
        monkeypatch.setattr(module, name, counted(name))


@pytest.mark.parametrize("stiff", [False, True])
def test_the_compiled_path_is_taken(stiff, monkeypatch):
    """Default path: after the first interval (no row selection yet: the QR) the RK4
    steps run in compiled blocks (:func:`_nbflexblock.flex_loop_rk4_block`) and the output
    samples in one compiled call (:func:`_nbflexblock.flex_loop_samples`): no Python call
    of the stage or correction kernels, nor of the loop-aware stiffening iteration.
    ``flex_blocks = False``: the Python steps call the same kernels, bit for bit.
    ``flex_compiled = False``: none of them, and the runs agree to round-off."""
    ls, q, qd = _loop("cbA", "spherical", stiff)
    kw = dict(dt=1e-4, integrator="rk4", q0=q, qd0=qd)
    ls.simulate(0.0003, **kw)  # (compiles every kernel before any is replaced)
    assert _LoopStepper.flex_blocks
    calls = {}
    _counting(monkeypatch, FB, ("flex_loop_rk4_block", "flex_loop_samples"), calls)
    kernels = ("flex_loop_accelerations", "flex_frame_wrenches", "flex_correct")
    _counting(monkeypatch, FC, kernels, calls)
    _counting(monkeypatch, LoopSystem, ("_loop_stiffening",), calls)
    r1 = ls.simulate(0.001, **kw)
    assert calls["flex_loop_rk4_block"] >= 1 and calls["flex_loop_samples"] == 1
    assert calls["flex_loop_accelerations"] == 0 and calls["flex_correct"] == 0, calls
    # (the first interval, before a QR selected rows: the Python stages' tree solves apply
    # the cut-wrench element, empty, once per stage; with stiffening the Python iteration
    # applies it once more per step of its own)
    assert calls["_loop_stiffening"] <= (4 if stiff else 0), calls
    if not stiff:
        assert calls["flex_frame_wrenches"] <= 4, calls
    monkeypatch.setattr(_LoopStepper, "flex_blocks", False)
    r0 = ls.simulate(0.001, **kw)
    assert calls["flex_loop_accelerations"] >= 36  # 4 stages x 9 steps after the first
    assert calls["flex_correct"] >= 9
    # the same kernels on the same values: the steps and samples bit for bit
    for name in ("q", "qd", "qdd", "reactions"):
        assert np.array_equal(getattr(r1, name), getattr(r0, name)), name
    n = dict(calls)
    ls.flex_compiled = False
    r2 = ls.simulate(0.001, **kw)
    # (the Python path: the reference iteration at every stage with stiffening)
    assert calls["_loop_stiffening"] - n.pop("_loop_stiffening") >= (40 if stiff else 0)
    calls.pop("_loop_stiffening")
    assert calls == n
    # measured 8e-16 (q), 1.4e-13 of the largest speed (qd) after 10 steps
    assert np.abs(r1.q - r2.q).max() <= 1e-13
    assert _close(r1.qd, r2.qd, 1e-11)
    assert _close(r1.reactions, r2.reactions, 1e-10)
    assert _close(r1.extra["lambda"], r2.extra["lambda"], 1e-10)
    for k in ("rank", "regular_rank", "n_weak", "discarded"):
        assert np.array_equal(r1.stats[k], r2.stats[k]), k


@pytest.mark.parametrize("stiff", [False, True])
def test_compiled_samples_are_the_documented_calls(stiff):
    """Every output sample of a compiled run equals the documented per-state calls at
    its state (the projector's QR there first, as the per-sample path does): accelerations
    and multipliers bit for bit (the same kernel on the same rows), reactions to round-off
    (the cut wrenches ``D^T lam`` summed in another order: measured 5.6e-16 of the largest
    reaction), the same rank statistics, the violations of ``LoopSystem.violations``, the
    energies of ``kinetic_energy`` and ``potential_energies`` (one compiled call over the
    history: measured 9e-16 of the largest energy). With stiffening the loop-aware
    iteration runs inside both."""
    ls, q, qd = _loop("cbA", "spherical", stiff)
    r = ls.simulate(0.002, dt=1e-4, integrator="rk4", q0=q, qd0=qd)
    P = ls.projector
    for i in range(len(r.t)):
        qi, vi, ti = r.q[i], r.qd[i], r.t[i]
        pv, vv, J = ls.violations(qi, vi, ti)
        P.basis(qi, ti, J=J)
        fd = ls.forward_dynamics(qi, vi, None, ti, P)
        assert np.array_equal(r.qdd[i], fd.qdd)
        assert np.array_equal(r.extra["lambda"][i], fd.lam)
        assert _close(r.reactions[i], fd.reactions, 1e-14)
        for k in ("rank", "regular_rank", "n_weak"):
            assert r.stats[k][i] == getattr(fd, k), k
        assert np.array_equal(r.stats["discarded"][i], fd.discarded)
        assert r.stats["position_violation"][i] == pv
        # (J v summed in another order than numpy's product)
        assert abs(r.stats["velocity_violation"][i] - vv) <= 1e-15 * max(1.0, np.abs(vi).max())
        ke = ls.kinetic_energy(qi, vi)
        pe = ls.potential_energies(qi, ti)
        scale = abs(r.energy["total"][i])
        assert abs(r.energy["kinetic"][i] - ke) <= 1e-14 * scale
        assert abs(r.energy["gravity"][i] - pe["gravity"]) <= 1e-14 * scale
        assert abs(r.energy["spring"][i] - pe["spring"]) <= 1e-14 * scale
    # ideal cut joints and gravity: no works; the balance is the run's own drift
    for k in ("damper_work", "actuator_work", "external_work"):
        assert not np.any(r.energy[k])
    nd = r.energy["numerical_dissipation"]
    assert np.array_equal(nd, r.energy["total"][0] - r.energy["total"])


@pytest.mark.parametrize("kind, closing, stiff", CASES)
def test_compiled_correction_agrees_with_the_projector(kind, closing, stiff):
    """A perturbed state corrected by the compiled Newton and velocity steps on the
    projector's rows and by the projector itself (QR): the same state to round-off
    (measured <= 1e-22 in q, 2.2e-16 in qd), on the constraint manifold."""
    ls, q, qd = _loop(kind, closing, stiff)
    q, qd = ls.project(q, qd)
    rng = np.random.default_rng(2)
    q2 = q + 1e-6 * rng.normal(size=q.shape)
    qd2 = qd + 1e-3 * rng.normal(size=qd.shape)
    a = ls._flex_project(q2, qd2, ls.projector)
    assert a is not None
    b = ls.projector.correct(q2, qd2, 0.0)
    assert np.abs(a[0] - b[0]).max() <= 1e-14
    assert np.abs(a[1] - b[1]).max() <= 1e-13 * np.abs(b[1]).max()
    c = ls.constraints
    assert np.abs(c.phi(a[0])).max() <= 1e-14
    assert np.abs(c.jacobian(a[0]) @ a[1]).max() <= 1e-12 * np.abs(a[1]).max()


@pytest.mark.parametrize("stiff", [False, True])
def test_adaptive_run_agrees_with_the_python_path(stiff, monkeypatch):
    """RK45 (a correction at every stage): after the first QR the steps run in compiled
    blocks whose evaluations are :func:`_nbflexblock.flex_loop_rhs`
    (``test_flexible_loop_adaptive.py``), and the output states are corrected by one call
    (:func:`_nbflexblock.flex_correct_rows`), bit for bit with the Python steps and
    evaluations on the same kernels (``flex_blocks = False``). Against the Python path:
    the same number of accepted steps; the step sizes follow the error estimates, which
    see the round-off of the two paths (measured 1.2e-8 of the run in the step times),
    and the end states agree to round-off."""
    ls, q, qd = _loop("cbA", "spherical", stiff)
    kw = dict(integrator="RK45", rtol=1e-7, atol=1e-9, q0=q, qd0=qd)
    ls.simulate(0.0002, **kw)  # (compiles every kernel before any is replaced)
    calls = {}
    _counting(monkeypatch, FB, ("flex_loop_rhs", "flex_correct_rows"), calls)
    _counting(monkeypatch, FC, ("flex_loop_accelerations", "flex_correct"), calls)
    r1 = ls.simulate(0.001, **kw)
    # (from Python: scipy's initial-step evaluation, after the first one's QR; the
    # blocks' evaluations are compiled calls)
    assert calls["flex_loop_rhs"] == 1 and calls["flex_correct_rows"] == 1, calls
    # (the first evaluation only: the QR corrects, then the Python call of the solve)
    assert calls["flex_loop_accelerations"] <= 1 and calls["flex_correct"] == 0, calls
    monkeypatch.setattr(_LoopStepper, "flex_blocks", False)
    r0 = ls.simulate(0.001, **kw)
    assert calls["flex_loop_accelerations"] >= 6 * (len(r1.t) - 2)
    for name in ("t", "q", "qd", "qdd", "reactions"):
        assert np.array_equal(getattr(r1, name), getattr(r0, name)), name
    ls.flex_compiled = False
    r2 = ls.simulate(0.001, **kw)
    ls.flex_compiled = True
    assert len(r1.t) == len(r2.t) and r1.t[-1] == r2.t[-1]
    assert np.abs(r1.t - r2.t).max() <= 1e-7 * r1.t[-1]
    # measured 4.4e-16 (q), 4.1e-13 of the largest speed (qd)
    assert np.abs(r1.q[-1] - r2.q[-1]).max() <= 1e-12
    assert _close(r1.qd[-1], r2.qd[-1], 1e-9)


def test_stiffening_newton_solve_and_its_hand_over():
    """The Newton steps' square solve (:func:`_nbflexcut._lu_solve`, where the reference
    takes least squares): a nonsingular system to round-off of ``np.linalg.solve`` (only
    the leading ``n`` block read); a singular one refused (the caller hands over to the
    Python path, whose least squares decide)."""
    rng = np.random.default_rng(3)
    G = rng.normal(size=(5, 5))
    x = rng.normal(size=5)
    ref = np.linalg.solve(G[:4, :4], x[:4])
    Gw, xw = G.copy(), x.copy()
    assert FC._lu_solve(Gw, xw, 4)
    assert _close(xw[:4], ref, 1e-13)
    assert xw[4] == x[4] and np.array_equal(Gw[4], G[4])
    G[:4, 3] = G[:4, 0] + 2.0 * G[:4, 1]  # rank 3
    assert not FC._lu_solve(G, x.copy(), 4)


@pytest.mark.parametrize("kind, closing, stiff", CASES)
def test_forward_dynamics_is_the_stage_then_the_full_tree_solve(kind, closing, stiff):
    """The documented call's tree reactions solve the tree with the cut wrenches on the
    stage's kinematics and factorization (:func:`_nbsingle.flex_factored_dynamics`): bit
    for bit the operations of the call before, composed here from the kernels -- the stage
    (:func:`_nbflexcut.flex_loop_accelerations`), the cut wrenches on the cut frames
    (:func:`_nbflexcut.cut_items`, :func:`_nbflexcut.flex_frame_wrenches`), then a full
    tree solve with its own kinematics pass and factorization
    (:func:`_nbsingle.flex_forward_dynamics`); the reactions of every joint and the body
    accelerations in the layout's rows as that solve gives them."""
    ls, q, qd = _loop(kind, closing, stiff)
    q, qd = ls.project(q, qd)
    (head, sel, rows, solve, _, _, wrench), tau = _stage_args(ls, q, qd)
    fd = ls.forward_dynamics(q, qd, tau)
    T, MI, grav, use_grav, reac_f, tol, max_iter, info = head
    sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work, out = rows
    qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, *_, st_, sw = solve
    assert st_ == stiff
    st = FC.flex_loop_accelerations(
        T, MI, grav, use_grav, reac_f, tol, max_iter, info, q, qd, tau, sel, sI, sC, sFt, sFs,
        cI, E, F, G, pspeeds, work, out, qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, stiff, sw,
    )  # fmt: skip
    assert st == 0
    items, zq, w6, Rb, rb = wrench
    nc = len(ls.constraints.cuts)
    cutF = np.empty((nc, 6))
    FC.cut_items(cI, out[6], out[7], out[8], lam, cutF, items)
    W = FK.FlexWork(*T)
    fext = W.Vv[FK.V_FEXT]  # (the workspace's applied wrenches and modal forces)
    fext[...] = 0.0
    W.Fm[:, FK.FM_QAPP] = 0.0
    FC.flex_frame_wrenches(T, sI, sC, sFt, sFs, q, items, zq, w6, Rb, rb, fext)
    reac_t = np.empty((len(ls.tree.joint_names), 6))
    accl = np.zeros((ls.tree.n_bodies + 1, 6))
    st = NS.flex_forward_dynamics(
        T, q, qd, tau, MI, grav, use_grav, reac_t, stiff, tol, max_iter, info, np.empty(ls.nv),
        accl, True, False,
    )  # fmt: skip
    fext[...] = 0.0
    assert st == 0
    assert np.array_equal(fd.qdd, qdd) and np.array_equal(fd.lam, lam)
    reac = np.zeros((len(ls.joint_names), 6))
    reac[ls._tree_rows] = reac_t
    reac[[ls._jindex[c.name] for c in ls.constraints.cuts]] = cutF
    assert np.abs(cutF).max() > 1.0
    assert np.array_equal(fd.reactions, reac)
    body_row, _ = ls.flex_body_rows()
    assert np.array_equal(fd.body_accelerations[body_row[1:]], accl[1:])
    assert np.array_equal(fd.tree.reactions, reac_t)  # (the deferred tree solution)


@pytest.mark.parametrize("stiff", [False, True])
def test_rk4_block_samples_are_the_documented_call(stiff, monkeypatch):
    """The output sample at the start of each interval of the RK4 block is the block's
    first stage there (:func:`_nbflexblock.flex_loop_rk4_block` writes it): bit for bit
    the documented ``forward_dynamics`` at the recorded (corrected) state on the run's
    projector, and the samples after the run (:func:`_nbflexblock.flex_loop_samples`)
    are only the two the block does not start: the first interval's (before a QR
    selected rows) and the last output time's."""
    ls, q, qd = _loop("cbA", "spherical", stiff)
    kw = dict(dt=1e-4, integrator="rk4", q0=q, qd0=qd)
    ls.simulate(0.0003, **kw)  # (compiles every kernel before any is replaced)
    n_rows = []
    samples = FB.flex_loop_samples

    def counted(*args):
        n_rows.append(args[-3].shape[0])
        return samples(*args)

    monkeypatch.setattr(FB, "flex_loop_samples", counted)
    st = ls.stepper(0.001, **kw)
    res = run(st, st.t_end, progress=False)
    assert len(res.t) == 11 and n_rows == [2]  # (before: one call of all 11 states)
    rows = st.fused_samples()
    assert rows["viol"][1:-1, 2].all() and not rows["viol"][[0, -1], 2].any()
    P = st.P
    for i in range(len(res.t)):
        fd = ls.forward_dynamics(res.q[i], res.qd[i], projector=P)
        assert np.array_equal(res.qdd[i], fd.qdd), i
        assert np.array_equal(res.extra["lambda"][i], fd.lam), i
        assert np.array_equal(res.reactions[i], fd.reactions), i
        if 0 < i < len(res.t) - 1:
            assert np.array_equal(rows["acc"][i], fd.body_accelerations), i
        pv, vv, _ = ls.violations(res.q[i], res.qd[i], res.t[i])
        assert res.stats["position_violation"][i] == pytest.approx(pv, abs=1e-15)
        assert res.stats["velocity_violation"][i] == pytest.approx(vv, rel=1e-6, abs=1e-14)
        assert res.stats["rank"][i] == fd.rank == 3
    assert n_rows == [2]  # (the documented call: its own kernel)


def test_forward_dynamics_reads_a_changed_model():
    """The documented call keeps what it reads per model revision, projector and rows: a
    changed parameter (the crank's mass) is read, and the compiled call agrees with the
    Python path before and after the change."""
    m = fourbar("cbA", "spherical")
    ls = m.compile("recursive")
    q, qd = _state(ls, np.random.default_rng(1), scale=1e-3, speed=5.0)
    q, qd = ls.project(q, qd)
    out = []
    for mass in (m.crank.mass, 3.0 * m.crank.mass):
        m.crank.mass = mass
        fa = ls.forward_dynamics(q, qd)
        ls.flex_compiled = False
        fb = ls.forward_dynamics(q, qd)
        ls.flex_compiled = True
        assert _close(fa.qdd, fb.qdd, 1e-12) and _close(fa.reactions, fb.reactions, 1e-12)
        out.append(fa)
    # (the heavier crank: its own acceleration changes by a few percent)
    assert abs(out[1].qdd[0] - out[0].qdd[0]) > 0.01 * abs(out[0].qdd[0])
