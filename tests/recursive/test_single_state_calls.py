"""The single-state calls of recursive systems: the flexible trees' ``forward_dynamics``
(one pass of the strategy's kernels) and the closed loops' single-state calls with a
user's compiled law (the loop kernels with the law's clock set to the call's time)."""

import models
import numpy as np
import pytest
from numba import cfunc

import flexmbd as fm
from flexmbd.recursive import _nbsingle as NS

from .example_scripts import example

K, C, Q0, FA = 4.0, 0.3, 1.5, 0.7  # N m/rad, N m s/rad, rad, N m


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _linear(q, qd, t, which):
    """``JointForce.spring_damper(K, C, Q0, FA)`` as a compiled law (the same operations
    as the force table's joint law: ``fa - k (q - q0) - c qd``)."""
    if which == 0:
        return FA - K * (q - Q0) - C * qd
    return -K if which == 1 else -C


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _driven(q, qd, t, which):
    """A cubic spring, a damper and a motor torque 0.5 sin(3 t) (N m)."""
    if which == 0:
        return -4.0 * (q - 1.5) ** 3 - 0.3 * qd + 0.5 * np.sin(3.0 * t)
    return -12.0 * (q - 1.5) ** 2 if which == 1 else -0.3


def _arm_on_beam():
    """The flexible pendulum's beam carrying a rigid arm declared before it (body rows
    then differ from the tree labels)."""
    m = fm.Model("arm_on_beam")
    m.arm = fm.RigidBody.rod(mass=1.0, length=0.5, radius=0.02, origin="end")
    m.beam = fm.FlexibleBody(models.flexible_pendulum().beam.reduced)
    m.hinge = fm.Revolute(
        m.ground,
        m.beam,
        axis=(0, 0, 1),
        parent_frame=(0, 0.025, 0.025),
        child_frame=m.beam.interface("A"),
    )
    m.elbow = fm.Revolute(m.beam, m.arm, axis=(0, 1, 0), parent_frame=(0.5, 0.0, 0.0))
    m.g = fm.Gravity((0, -9.81, 0))
    return m


@pytest.mark.parametrize("build", [models.flexible_pendulum, _arm_on_beam])
def test_flexible_tree_single_state_is_the_batch_path_bit_for_bit(build):
    """A flexible tree's ``forward_dynamics`` (one state through the strategy's kernels)
    equals the batch path (the former single-state path) bit for bit, with joint and
    modal forces and a time; bad shapes (a scalar ``tau`` too, as for rigid trees) raise
    the contract's errors."""
    s = build().compile("recursive")
    rng = np.random.default_rng(2)
    for k in range(3):
        q = s.q0() + 0.01 * rng.normal(size=s.nq)
        qd = 0.1 * rng.normal(size=s.nv)
        tau = 0.1 * rng.normal(size=s.nv) if k else np.full(s.nv, 0.25)
        one = s.forward_dynamics(q, qd, tau, t=0.1 * k)
        ref = s.forward_dynamics_batch(q[None], qd[None], tau, t=0.1 * k)
        for name in ("qdd", "reactions", "body_accelerations"):
            assert np.array_equal(getattr(one, name), getattr(ref, name)[0]), name
        assert one.lam.shape == (0,) and one.projection is None and one.tree is None
    for bad in (np.zeros(s.nv + 1), 0.25):
        with pytest.raises(fm.ModelError, match="tau needs"):
            s.forward_dynamics(q, qd, bad)
    with pytest.raises(fm.ModelError, match="forward_dynamics_batch"):
        s.forward_dynamics(np.zeros((2, s.nq)), np.zeros((2, s.nv)))


def _four_bar(law):
    m = models.four_bar()
    if law == "table":
        m.spring = fm.JointForce.spring_damper(m.a, K, C, Q0, actuator=FA)
    else:
        m.spring = fm.JointForce.compiled_law(m.a, law)
    return m.compile("recursive")


def _recorded(s, seen):
    el = s.model.spring
    inner = el.generalized_force
    el.generalized_force = lambda t, *a: seen.append(float(t)) or inner(t, *a)


def _assembled(s):
    q, qd = s.initial_state(qd=np.array([0.5, -0.3, 0.2]))
    return s.project(q, qd)  # a corrected state: the projector selects its rows


def test_loop_single_state_calls_run_a_compiled_law_compiled(monkeypatch):
    """The four-bar with a compiled law on a tree joint: ``forward_dynamics`` and
    ``accelerations(compiled=True)`` run the loop kernels (no Python call of the law) and
    equal, bit for bit, the same law as a ``spring_damper`` force-table row."""
    law, table, seen = _four_bar(_linear), _four_bar("table"), []
    _recorded(law, seen)
    calls = []
    inner = NS.loop_forward_dynamics_rows
    monkeypatch.setattr(NS, "loop_forward_dynamics_rows", lambda *a: calls.append(1) or inner(*a))
    q, qd = _assembled(law)
    q2, qd2 = _assembled(table)
    assert np.array_equal(q, q2) and np.array_equal(qd, qd2)
    rng = np.random.default_rng(4)
    for t in (0.0, 0.3):
        tau = rng.normal(size=law.nv)
        a, b = law.forward_dynamics(q, qd, tau, t=t), table.forward_dynamics(q, qd, tau, t=t)
        for name in ("qdd", "lam", "reactions", "body_accelerations"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert np.array_equal(a.tree.reactions, b.tree.reactions)
        acc_a = law.accelerations(q, qd, tau, t=t, compiled=True)
        acc_b = table.accelerations(q, qd, tau, t=t, compiled=True)
        assert all(np.array_equal(x, y) for x, y in zip(acc_a, acc_b, strict=True))
    assert len(calls) == 4 and not seen


def test_loop_single_state_calls_read_the_time_of_the_call():
    """A law of time (a motor torque 0.5 sin(3 t)): the compiled ``forward_dynamics`` at
    each time equals the Python path (the cfunc through ``ctypes``, the projector's QR)
    to the round-off of the constraint solve; other times, other accelerations."""
    s, seen = _four_bar(_driven), []
    _recorded(s, seen)
    p = _four_bar(_driven)
    from flexmbd.constraints.projection import Projector

    q, qd = _assembled(s)
    out = {}
    for t in (0.0, 0.4, 1.1):
        a = s.forward_dynamics(q, qd, t=t)
        b = p.forward_dynamics(q, qd, t=t, projector=Projector(p.constraints))
        assert np.abs(a.qdd - b.qdd).max() <= 1e-12 * np.abs(b.qdd).max()
        assert np.abs(a.reactions - b.reactions).max() <= 1e-12 * np.abs(b.reactions).max()
        out[t] = a.qdd
    assert not seen
    assert not np.array_equal(out[0.0], out[0.4])


# -- the documented call in one compiled call (_nbsingle) against the former path -------


def _squeezer():
    return example("andrews_squeezer").build()


def _ring():
    from tests.recursive.test_compiled_loops import spatial_ring

    return spatial_ring(6, shift=1.0)


def _four_bar_cut_inside():
    """The four-bar with the cut joint declared between tree joints (``c`` marked cut,
    ``d`` from the ground to the rocker): the tree joints' reaction rows 0, 1, 3 are not
    contiguous."""
    m = fm.Model("four_bar_cut_inside")
    for name in ("crank", "coupler", "rocker"):
        setattr(m, name, fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end"))
    m.a = fm.Revolute(m.ground, m.crank, q0=[np.pi / 2])
    m.b = fm.Revolute(m.crank, m.coupler, parent_frame=(1.0, 0, 0), q0=[-np.pi / 2])
    m.c = fm.Revolute(m.coupler, m.rocker, parent_frame=(1.0, 0, 0), cut=True)
    m.d = fm.Revolute(
        m.ground, m.rocker, parent_frame=(1.0, 0, 0), child_frame=(1.0, 0, 0), q0=[np.pi / 2]
    )
    m.g = fm.Gravity((0, -9.81, 0))
    return m


@pytest.mark.parametrize("build", [models.four_bar, _squeezer, _ring, _four_bar_cut_inside])
def test_loop_forward_dynamics_in_one_call_is_the_former_path_bit_for_bit(build):
    """Closed loops: ``forward_dynamics`` (:func:`_nbsingle.loop_forward_dynamics_rows`:
    the reactions of every joint written in the kernel, the stage scratch kept) equals the
    former path -- :func:`_nbloops.loop_forward_dynamics` with fresh arrays, the
    reactions array assembled in Python -- bit for bit, and so does
    ``accelerations(compiled=True)`` (the kept scratch) against
    :func:`_nbloops.loop_accelerations`; three states, ``tau`` given and None."""
    from flexmbd.recursive import _nbloops as NL

    s = build().compile("recursive")
    P = s.projector
    q, qd = s.project(*s.initial_state())
    rng = np.random.default_rng(5)
    for k in range(3):
        qd = qd + 0.1 * rng.normal(size=s.nv)
        tau = None if k == 0 else rng.normal(size=s.nv)
        fd = s.forward_dynamics(q, qd, tau)
        qdd, lam = s.accelerations(q, qd, tau, compiled=True)
        c, sel, qc, qdc, tv = s._compiled_inputs(q, qd, tau, P, 0.0)
        nt, nb = len(s.tree.joint_names), len(s.layout.body_names)
        ref = [np.empty(s.nv), np.empty(s.constraints.m), np.empty((nt, 6)), np.empty((nb, 6))]
        cutF = np.empty((len(s.constraints.cuts), 6))
        ws = tuple(np.empty_like(a) for a in s._ws)
        args = (c[0], c[1], c[2], c[3], s._clab, qc, qdc, tv, sel, *ref[:2], *ws)
        assert NL.loop_forward_dynamics(*args, *ref[2:], s._body_row, cutF) == 0
        reac = np.zeros((len(s.joint_names), 6))
        reac[s._tree_rows], reac[s._cut_rows_reac] = ref[2], cutF
        assert np.array_equal(fd.qdd, ref[0]) and np.array_equal(fd.lam, ref[1])
        assert np.array_equal(fd.reactions, reac)
        assert np.array_equal(fd.tree.reactions, ref[2])
        assert np.array_equal(fd.body_accelerations, ref[3])
        assert fd.tree.qdd is fd.qdd and fd.tree.body_accelerations is fd.body_accelerations
        assert fd.projection.rank == len(sel) and not fd.projection.discarded[sel].any()
        acc = [np.empty(s.nv), np.empty(s.constraints.m)]
        st = NL.loop_accelerations(*c, qc, qdc, tv, sel, *acc, *ws, np.empty((nt, 6)))
        assert st == 0 and np.array_equal(qdd, acc[0]) and np.array_equal(lam, acc[1])
        assert np.array_equal(qdd, fd.qdd) and np.array_equal(lam, fd.lam)
        q = s.project(q + 0.02 * rng.normal(size=s.nq), qd)[0]


def _same_fd(a, b):
    """Every field of two loop ``ForwardDynamics`` equal bit for bit (the tree solution
    and the projection statistics too)."""
    for k in ("qdd", "lam", "reactions", "body_accelerations"):
        assert np.array_equal(getattr(a, k), getattr(b, k))
    for k in ("qdd", "lam", "reactions", "body_accelerations"):
        assert np.array_equal(getattr(a.tree, k), getattr(b.tree, k))
    assert a.layout is b.layout and a.tree.layout is b.tree.layout
    pa, pb = a.projection.__dict__, b.projection.__dict__
    assert pa.keys() == pb.keys()
    assert all(np.array_equal(pa[k], pb[k]) for k in pa)


@pytest.mark.parametrize("build", [models.four_bar, _squeezer, _ring])
def test_loop_single_state_calls_by_the_kept_entry_point_are_the_dispatcher_calls(build):
    """After the first call, ``forward_dynamics`` and ``accelerations(compiled=True)`` call
    the compiled version's entry point directly (``loops._call``: no type resolution of
    the arguments per call); every result equals the dispatcher's call on the same
    arrays bit for bit, with the projector's statistics recorded as before, and each
    result owns its arrays (the projector's kept discarded mask is copied)."""
    from flexmbd.recursive import loops as L

    s = build().compile("recursive")
    P = s.projector
    q, qd = s.project(*s.initial_state())
    rng = np.random.default_rng(11)
    for k in range(3):
        qd = qd + 0.1 * rng.normal(size=s.nv)
        tau = None if k == 0 else rng.normal(size=s.nv)
        sel = P.selection()
        entries = s._fd_plan(len(sel))[-1]
        entries[:] = [None, None]  # the next calls go through the dispatchers
        fd_disp = s.forward_dynamics(q, qd, tau)
        acc_disp = s.accelerations(q, qd, tau, compiled=True)
        fd_kernel, acc_kernel = entries[0][1], entries[1][1]
        assert fd_kernel is not NS.loop_forward_dynamics_rows  # the entry points, kept
        assert acc_kernel is not NS.loop_accelerations_kept
        assert type(fd_kernel).__name__ == "builtin_function_or_method"
        fd = s.forward_dynamics(q.tolist(), qd, tau)  # (list: a converted state)
        info = P.info.snapshot()
        qdd, lam = s.accelerations(q, qd, tau, compiled=True)
        assert entries[0][1] is fd_kernel and entries[1][1] is acc_kernel
        _same_fd(fd, fd_disp)
        assert np.array_equal(qdd, acc_disp[0]) and np.array_equal(lam, acc_disp[1])
        assert np.array_equal(qdd, fd.qdd) and np.array_equal(lam, fd.lam)
        # the projector's record of the evaluation, as its QR basis gives it
        b = P._sel_basis
        assert np.array_equal(sel, b.perm[: b.rank]) and sel.dtype == np.int64
        assert (info.rank, info.n_weak) == (b.rank, 0)
        assert np.array_equal(P.info.discarded, b.discarded_mask())
        assert fd.projection.discarded is not P.info.discarded
        assert fd.projection.discarded.flags.writeable
        assert fd.tree.lam.size == 0 and L._NO_LAM.size == 0
        q = s.project(q + 0.02 * rng.normal(size=s.nq), qd)[0]


@pytest.mark.parametrize("build", [models.four_bar, _four_bar_cut_inside])
def test_loop_result_projection_and_tree_are_those_of_its_call(build):
    """The compiled loop's result builds ``projection`` and ``tree`` on first access
    (``flexmbd.dynamics.DEFERRED``): read after later calls and a correction
    have changed the projector's statistics, they are the values of the result's own call
    (as a snapshot taken then), built once; the result stays frozen; its tree reactions
    are a read-only view of its tree joints' rows of ``reactions`` where those rows are
    contiguous (the four-bar), else an array of their own; a copy taken before the first
    access builds the same values."""
    import copy
    import dataclasses

    s = build().compile("recursive")
    P = s.projector
    q, qd = s.project(*s.initial_state())
    tau = np.random.default_rng(3).normal(size=s.nv)
    fd = s.forward_dynamics(q, qd, tau)
    assert fd.__dict__.keys() >= {"qdd", "lam"} and "projection" not in fd.__dict__
    now = P.info.snapshot()  # the projector's statistics of this call
    rows = fd.reactions[s._tree_rows].copy()
    kept = copy.copy(fd)
    # later: the projector corrects another state (its Newton iterations) and evaluates
    q2, qd2 = P.correct(q + np.array([0.3, -0.2, 0.4]), qd + 0.3)
    later = s.forward_dynamics(q2, qd2)
    changed = [k for k in now.__dict__ if not np.array_equal(now.__dict__[k], P.info.__dict__[k])]
    assert changed  # (else this test could not tell the call's values from the later ones)
    for f in (fd, kept):
        info = f.projection
        assert f.projection is info and f.tree is f.tree  # built once
        assert info.__dict__.keys() == now.__dict__.keys()
        assert all(np.array_equal(info.__dict__[k], now.__dict__[k]) for k in now.__dict__)
        assert info.discarded is not P.info.discarded and info.discarded.flags.writeable
        assert (f.rank, f.n_weak) == (now.rank, now.n_weak)
        assert np.array_equal(f.tree.reactions, rows) and f.tree.lam.size == 0
        assert f.tree.projection is None and f.tree.tree is None
        assert f.tree.layout is s.tree.layout
    assert fd.tree.qdd is fd.qdd and fd.tree.body_accelerations is fd.body_accelerations
    assert later.projection is not fd.projection and later.tree is not fd.tree
    for name in ("projection", "tree", "qdd", "reactions"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(fd, name, None)
    assert dataclasses.replace(fd).projection is fd.projection
    assert "projection=ProjectionInfo(rank=" in repr(s.forward_dynamics(q, qd, tau))
    view = fd.tree.reactions
    contiguous = build is models.four_bar
    assert contiguous == bool(np.all(np.diff(s._tree_rows) == 1))
    if contiguous:
        assert view.base is fd.reactions and not view.flags.writeable
        with pytest.raises(ValueError):
            view[0, 0] = 1.0
        fd.reactions[0, 0] += 1.0  # a view: the result's own rows
        assert view[0, 0] == fd.reactions[0, 0]
    else:
        assert view.base is None and not np.shares_memory(view, fd.reactions)
    # the class and a tree's result: no loop parts (the dataclass defaults)
    assert fm.dynamics.ForwardDynamics.projection is None
    assert fm.dynamics.ForwardDynamics.tree is None
    t = s.tree.forward_dynamics(q, qd)
    assert t.projection is None and t.tree is None and t.rank is None


def test_projector_selection_is_kept_until_the_next_correction():
    """:meth:`Projector.selection` returns the same rows array until the next correction
    and then the new state's rows (as its QR basis gives them); ``fast_rows=False`` and
    other methods still give None; :meth:`Projector.selection_used` records the kept
    basis's rank and discarded rows."""
    s = _squeezer().compile("recursive")
    P = s.projector
    q, qd = s.project(*s.initial_state())
    sel = P.selection()
    assert P.selection() is sel
    b = P._sel_basis
    assert np.array_equal(sel, b.perm[: b.rank])
    P.fast_rows = False
    assert P.selection() is None
    P.fast_rows = True
    assert P.selection() is sel
    rng = np.random.default_rng(2)
    q2 = s.project(q + 0.3 * rng.normal(size=s.nq), qd)[0]
    P.basis(q2)  # a QR at a corrected state: the projector's new basis
    b2 = P._sel_basis
    assert b2 is not b
    sel2 = P.selection()
    assert sel2 is not sel and np.array_equal(sel2, b2.perm[: b2.rank])
    P.info.discarded = None
    P.selection_used()
    assert np.array_equal(P.info.discarded, b2.discarded_mask())
    assert P.info.rank == b2.rank and P.info.regular_rank == max(P.regular_rank, b2.rank)


def _flex_chain():
    from tests.recursive.test_flexible_rk4 import flex_chain

    return flex_chain(5, stiff=True)


def _flex_robot():
    return example("space_robot_flexible").build()


def _pendulum_pulled():
    """The flexible pendulum with a point force on the beam (modal forces of a load
    applied from Python, in the workspace before the compiled call)."""
    m = models.flexible_pendulum()
    m.pull = fm.PointForce(m.beam, point=m.beam.point((0.5, 0.0, 0.0)), force=(1.0, -20.0, 3.0))
    return m


@pytest.mark.parametrize(
    "build", [models.flexible_pendulum, _arm_on_beam, _flex_chain, _flex_robot, _pendulum_pulled]
)
def test_flexible_single_state_in_one_call_is_the_former_path_bit_for_bit(build):
    """Flexible trees: ``forward_dynamics``, ``qdd_and_reactions`` and ``qdd``
    (:func:`_nbsingle.flex_forward_dynamics`: loads, the strategy's pass, the body
    accelerations and the finite check in one compiled call) equal the former Python
    sequence (``_one_state`` with every output: the loads from Python, the modal forces
    added by the flexible tree, the kernel, the body accelerations kernel) bit for bit:
    the pendulum, a rigid arm on a beam (body rows not in label order), five beams with
    geometric stiffening and spring-damper laws (one of time), the flexible space robot
    (drives of time, a floating base) and a point force on a beam."""
    s = build().compile("recursive")
    rng = np.random.default_rng(6)
    for k in range(3):
        q = s.normalize(s.q0() + 1e-3 * rng.normal(size=s.nq))
        qd = 0.1 * rng.normal(size=s.nv)
        tau = np.zeros(s.nv) if k == 0 else 0.1 * rng.normal(size=s.nv)
        t = 0.01 * k
        fd = s.forward_dynamics(q, qd, tau, t)
        qdd, reac = s.qdd_and_reactions(q, qd, tau, t)
        ref_reac = np.zeros((len(s.joint_names), 6))
        ref_qdd, _, acc, _ = s._one_state(q, qd, tau, t, "serialized", ref_reac)
        ref_acc = np.zeros((len(s.layout.body_names), 6))
        ref_acc[s._body_row[1:]] = acc[1:]
        assert np.array_equal(fd.qdd, ref_qdd) and np.array_equal(fd.reactions, ref_reac)
        assert np.array_equal(fd.body_accelerations, ref_acc)
        assert np.array_equal(qdd, ref_qdd) and np.array_equal(reac, ref_reac)
        assert np.array_equal(s.qdd(q, qd, tau, t), ref_qdd)
        assert np.isfinite(ref_qdd).all() and np.abs(ref_qdd).max() > 0.0


def test_flexible_non_finite_accelerations_raise_in_the_documented_call_only():
    """A NaN or inf in ``tau`` or the state: ``forward_dynamics`` raises SolverError
    (the finite check inside the compiled call); the lean ``qdd_and_reactions`` returns
    the non-finite numbers as before; the workspace's applied modal forces are zero
    afterwards (the next call gives the clean state's numbers)."""
    s = models.flexible_pendulum().compile("recursive")
    q, qd = s.q0(), s.qd0()
    clean = s.forward_dynamics(q, qd)
    for where in ("joint tau", "modal tau", "q", "qd"):
        tau, qq, vv = np.zeros(s.nv), q.copy(), qd.copy()
        {"joint tau": tau, "modal tau": tau[::-1], "q": qq, "qd": vv[::-1]}[where][0] = np.nan
        with pytest.raises(fm.SolverError, match="non-finite accelerations"):
            s.forward_dynamics(qq, vv, tau)
        assert not np.isfinite(s.qdd_and_reactions(qq, vv, tau)[0]).all()
        again = s.forward_dynamics(q, qd)
        assert np.array_equal(again.qdd, clean.qdd)
        assert np.array_equal(again.reactions, clean.reactions)
    tau = np.zeros(s.nv)
    tau[-1] = np.inf
    with pytest.raises(fm.SolverError, match="non-finite accelerations"):
        s.forward_dynamics(q, qd, tau)
