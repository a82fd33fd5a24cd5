"""CFA (general and serialized) against an independent RNEA/CRBA oracle.

Oracle 3 of docs/design/oracles.rst: the paper validates its CFA against a recursive
algorithm to 1e-12; tests/recursive/oracle.py is written from Featherstone's
equations in world coordinates, sharing no code with the CFA kernels.
"""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.errors import ModelError, SolverError
from flexmbd.recursive import RecursiveSystem, build_schedule

from .models import chain, random_state, random_tree
from .oracle import Oracle

TOL = 1e-12


def rel(a, b):
    return np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(np.linalg.norm(b), 1e-300)


CASES = [
    (seed, n, floating)
    for seed, n in [(0, 1), (1, 2), (2, 5), (3, 8), (4, 12), (5, 16), (6, 20), (7, 20), (8, 20)]
    for floating in (False, True)
]


@pytest.mark.parametrize("seed,n,floating", CASES)
def test_general_serialized_oracle_agree(seed, n, floating):
    m = random_tree(seed, n, floating=floating, forces=n > 2)
    s = m.compile("recursive")
    q, qd, tau = random_state(s, seed)
    ser = s.forward_dynamics(q, qd, tau)
    gen = s.forward_dynamics(q, qd, tau, algorithm="general")
    qdd, reac, _, _ = Oracle(m).forward(q, qd, tau)
    assert rel(ser.qdd, qdd) < TOL
    assert rel(gen.qdd, qdd) < TOL
    assert rel(ser.reactions, reac) < TOL
    assert rel(gen.reactions, reac) < TOL
    fs_ser, ft_ser = s.cfa_forces(q, qd, tau)
    fs_gen, ft_gen = s.cfa_forces(q, qd, tau, algorithm="general")
    assert rel(fs_ser, fs_gen) < TOL * 10 or np.allclose(fs_ser, 0)
    assert rel(ft_ser, ft_gen) < TOL * 10


def test_random_trees_cover_all_joint_types_and_reversals():
    kinds, reversed_ = set(), 0
    for seed, n, floating in CASES:
        m = random_tree(seed, n, floating=floating)
        kinds |= {type(j).__name__ for j in m.joints()}
        reversed_ += int(m.topology().reversed.sum())
    assert kinds == {
        "Revolute",
        "Prismatic",
        "Cylindrical",
        "Universal",
        "Spherical",
        "Planar",
        "Fixed",
        "Free",
    }
    assert reversed_ > 10


@pytest.mark.parametrize("seed", [11, 12])
def test_mass_matrix_solve_mass_and_inverse_dynamics(seed):
    m = random_tree(seed, 10, floating=seed % 2 == 0, forces=True)
    s = m.compile("recursive")
    q, qd, tau = random_state(s, seed)
    o = Oracle(m)
    M = o.crba(q)
    assert rel(s.mass_matrix(q), M) < TOL
    X = np.random.default_rng(seed).normal(size=(s.nv, 3))
    assert rel(s.solve_mass(q, X), np.linalg.solve(M, X)) < 1e-11
    fd = s.forward_dynamics(q, qd, tau)
    tau_id, reac = s.inverse_dynamics(q, qd, fd.qdd)
    assert rel(tau_id, tau) < 1e-10
    assert rel(reac, fd.reactions) < 1e-10


@pytest.mark.parametrize("n", [100, 200])
def test_long_chain_equation_of_motion_residual(n):
    """cond(M) grows fast on long chains: compare the residual, not the accelerations."""
    m = chain(n)
    s = m.compile("recursive")
    rng = np.random.default_rng(n)
    q, qd, tau = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    fd = s.forward_dynamics(q, qd, tau)
    tau_id, reac = s.inverse_dynamics(q, qd, fd.qdd)
    b = s.inverse_dynamics(q, qd, np.zeros(n))[0]
    M = s.mass_matrix(q)
    # backward error: residual relative to |M| |qdd| + |b| + |tau|
    scale = np.linalg.norm(M, 2) * np.abs(fd.qdd).max() + np.abs(b).max() + np.abs(tau).max()
    assert np.abs(tau_id - tau).max() < 1e-10 * scale
    # constraint-direction forces amplify the (ill-conditioned) acceleration error
    assert rel(reac, fd.reactions) < 1e-4
    if n == 100:  # the world-frame oracle's Newton-Euler pass
        tau_o = Oracle(m).rnea(q, qd, fd.qdd)[0]
        assert np.abs(tau_o - tau).max() < 1e-9 * scale


def test_batched_equals_single_calls():
    m = random_tree(21, 9, floating=True, forces=True)
    s = m.compile("recursive")
    states = [random_state(s, k) for k in range(5)]
    Q = np.array([x[0] for x in states])
    V = np.array([x[1] for x in states])
    T = np.array([x[2] for x in states])
    fb = s.forward_dynamics_batch(Q, V, T)
    assert fb.qdd.shape == (5, s.nv) and fb.reactions.shape == (5, len(s.joint_names), 6)
    for i in range(5):
        fi = s.forward_dynamics(Q[i], V[i], T[i])
        assert np.array_equal(fb.qdd[i], fi.qdd)
        assert np.array_equal(fb.reactions[i], fi.reactions)
        assert np.allclose(fb.body_acceleration("b3")[1][i], fi.body_acceleration("b3")[1])


def test_reaction_motion_part_is_the_applied_joint_force():
    """H^T (reaction) = tau + JointForce for non-reversed joints (reaction in child frame)."""
    m = random_tree(31, 8, reverse=0.0, forces=True)
    s = m.compile("recursive")
    q, qd, tau = random_state(s, 31)
    fd = s.forward_dynamics(q, qd, tau)
    jf = {f.joint.name: f for f in m.forces() if isinstance(f, fm.JointForce)}
    for j in m.joints():
        sl = s._vslice[j.name]
        applied = tau[sl].copy()
        if j.name in jf:
            applied += jf[j.name].generalized_force(0.0, q[s._qslice[j.name]], qd[sl])
        H = j.motion_subspace(q[s._qslice[j.name]])
        assert np.allclose(H.T @ fd.reaction(j.name), applied, atol=1e-10)


def test_newton_euler_residual_of_every_body():
    """Each body's momentum balance closes with the reported reactions (public outputs only)."""
    m = random_tree(41, 12, floating=True, forces=False)
    s = m.compile("recursive")
    q, qd, tau = random_state(s, 41)
    fd = s.forward_dynamics(q, qd, tau)
    states = s.body_states(q, qd)
    g = m.g.g
    wrench = {b.name: np.zeros(6) for b in m.bodies()}  # [moment about world origin; force]
    for j in m.joints():
        R, r = (np.eye(3), np.zeros(3)) if j.child is m.ground else states[j.child.name][:2]
        Rc = R @ j.child_frame.rotation
        pc = r + R @ j.child_frame.position
        rc = fd.reaction(j.name)
        f = Rc @ rc[3:]
        n = Rc @ rc[:3] + np.cross(pc, f)
        if j.child is not m.ground:
            wrench[j.child.name] += np.concatenate([n, f])
        if j.parent is not m.ground:
            wrench[j.parent.name] -= np.concatenate([n, f])
    scale = 0.0
    for b in m.bodies():
        R, r, w, v = states[b.name]
        alpha, a_o = fd.body_acceleration(b.name)
        c = r + R @ b.com_vector
        rc = R @ b.com_vector
        a_c = a_o + np.cross(alpha, rc) + np.cross(w, np.cross(w, rc))
        Jw = R @ b.inertia_matrix @ R.T
        F = wrench[b.name].copy()
        F[3:] += b.mass * g
        F[:3] += np.cross(c, b.mass * g)
        force_res = b.mass * a_c - F[3:]
        moment_c = F[:3] - np.cross(c, F[3:])
        moment_res = Jw @ alpha + np.cross(w, Jw @ w) - moment_c
        scale = max(scale, np.abs(F).max())
        assert np.abs(force_res).max() < 1e-10 * scale
        assert np.abs(moment_res).max() < 1e-10 * scale


def test_static_chain_root_reaction_carries_the_weight():
    m = chain(12, gravity=(0.0, -9.81, 0.0), alternate=False)
    s = m.compile("recursive")
    q = np.zeros(12)
    q[0] = -np.pi / 2  # hanging straight down
    fd = s.forward_dynamics(q, np.zeros(12))
    assert np.allclose(fd.qdd, 0.0, atol=1e-12)
    R = s.body_states(q)["l0"][0]
    f_world = R @ fd.reaction("j0")[3:]
    assert np.allclose(f_world, [0.0, 12 * 1.0 * 9.81, 0.0], rtol=1e-13, atol=1e-12)
    # a horizontal chain held by gravity-compensating torques: root force = weight too
    q = np.zeros(12)
    tau, _ = s.inverse_dynamics(q, np.zeros(12), np.zeros(12))
    fd = s.forward_dynamics(q, np.zeros(12), tau)
    assert np.abs(fd.qdd).max() < 1e-10
    assert np.allclose(fd.reaction("j0")[3:], [0.0, 12 * 9.81, 0.0], rtol=1e-12)
    assert np.isclose(fd.reaction("j0")[2], tau[0])


def test_body_acceleration_against_oracle():
    m = random_tree(51, 7, floating=True, forces=True)
    s = m.compile("recursive")
    q, qd, tau = random_state(s, 51)
    fd = s.forward_dynamics(q, qd, tau)
    o = Oracle(m)
    _, _, _, (pose, acc, vel) = o.forward(q, qd, tau)
    for k in range(1, o.n + 1):
        b = o.body[k]
        R, r = pose[k]
        w, vs = vel[k][:3], vel[k][3:]
        al, a_s = acc[k][:3], acc[k][3:]
        v_o = vs + np.cross(w, r)
        a_true = a_s + np.cross(al, r) + np.cross(w, v_o)
        alpha, a_o = fd.body_acceleration(b.name)
        assert np.allclose(alpha, al, rtol=1e-11, atol=1e-11)
        assert np.allclose(a_o, a_true, rtol=1e-11, atol=1e-11)


# ------------------------------------------------------------------ tree shapes


def star_with_chains(n_children=7, length=6, sub=True):
    m = fm.Model("star")
    m.hub = fm.RigidBody(5.0, (0.3, 0.4, 0.5))
    m.f = fm.Free(m.ground, m.hub)
    for c in range(n_children):
        prev = m.hub
        for i in range(length if c % 3 else 1):  # some single-body branches
            b = fm.RigidBody(1.0 + 0.1 * i, (0.01, 0.02, 0.02), com=(0.1, 0.0, 0.0))
            setattr(m, f"c{c}_{i}", b)
            ang = 2 * np.pi * c / n_children
            pf = (0.3 * np.cos(ang), 0.3 * np.sin(ang), 0.0) if prev is m.hub else (0.2, 0, 0)
            setattr(
                m, f"jc{c}_{i}", fm.Revolute(prev, b, axis=(0, i % 2, (i + 1) % 2), parent_frame=pf)
            )
            if sub and i == 2 and c % 2:  # a chain off a chain
                prev2 = b
                for k in range(4):
                    b2 = fm.RigidBody(0.5, (0.01, 0.01, 0.01), com=(0.05, 0, 0))
                    setattr(m, f"s{c}_{k}", b2)
                    setattr(m, f"js{c}_{k}", fm.Spherical(prev2, b2, parent_frame=(0.1, 0.1, 0)))
                    prev2 = b2
            prev = b
    m.g = fm.Gravity((0, 0, -9.81))
    return m


def test_many_children_chains_off_chains_single_body_branches():
    m = star_with_chains()
    s = m.compile("recursive")
    sch = s.schedule
    assert len(sch.node_children) >= 7 and len(sch.steps) > 10
    q, qd, tau = random_state(s, 3)
    ser = s.forward_dynamics(q, qd, tau)
    gen = s.forward_dynamics(q, qd, tau, algorithm="general")
    qdd, reac, _, _ = Oracle(m).forward(q, qd, tau)
    assert rel(ser.qdd, qdd) < TOL and rel(gen.qdd, qdd) < TOL
    assert rel(ser.reactions, reac) < TOL and rel(gen.reactions, reac) < TOL


def test_schedule_of_a_chain_is_odd_even_reduction():
    n = 37
    parent = np.arange(-1, n)
    sch = build_schedule(parent)
    assert sch.levels == int(np.ceil(np.log2(n)))
    assert len(sch.steps) == n - 1 and sch.dense.tolist() == [1]  # one survivor
    assert sorted(sch.steps[:, 0].tolist() + [1]) == list(range(1, n + 1))
    # first level eliminates every second joint, each between its two neighbours
    first = sch.steps[: n // 2]
    assert np.all(first[:, 1] == first[:, 0] - 1)
    assert np.all((first[:, 2] == first[:, 0] + 1) | (first[:, 2] == -1))


def test_sequential_schedule_one_neighbour_per_step():
    n = 37
    parent = np.arange(-1, n)
    sch = build_schedule(parent, order="sequential")
    # an unbranched chain: from both ends towards the middle joint m, which survives;
    # leaf-up steps (left neighbour) alternate with top-down steps (right neighbour)
    m = (n - 1) // 2 + 1
    assert sch.dense.tolist() == [m]
    up = sch.steps[sch.steps[:, 2] == -1]
    down = sch.steps[sch.steps[:, 1] == -1]
    assert len(up) + len(down) == len(sch.steps) == n - 1
    assert up[:, 0].tolist() == list(range(n, m, -1)) and np.all(up[:, 1] == up[:, 0] - 1)
    assert down[:, 0].tolist() == list(range(1, m)) and np.all(down[:, 2] == down[:, 0] + 1)
    assert sch.steps[0].tolist() == [n, n - 1, -1] and sch.steps[1].tolist() == [1, -1, 2]
    # chains between node-related joints: top down, the upper boundary stays the left
    # neighbour; chains below nodes: from the leaf up
    m = star_with_chains()
    s = m.compile("recursive")
    seq, oe = s.schedule, build_schedule(s._Ia[0], order="odd-even")
    assert sorted(seq.steps[:, 0]) == sorted(oe.steps[:, 0])
    assert seq.dense.tolist() == oe.dense.tolist()
    for i, l, r in seq.steps:
        assert l < 0 or r < 0 or s.topology.parent[r] == i


@pytest.mark.parametrize("seed,n,floating", [(3, 8, True), (7, 20, False)])
def test_odd_even_and_sequential_elimination_agree(seed, n, floating):
    """Rigid trees eliminate their chains sequentially; the kernels take either order."""
    from flexmbd.recursive import _kernels as K

    m = random_tree(seed, n, floating=floating)
    s = m.compile("recursive")
    q, qd, tau = random_state(s, seed)
    qdd, reac = s.qdd_and_reactions(q, qd, tau)
    oe = K.pack_schedule(build_schedule(s._Ia[0], order="odd-even"))
    Ib = K.pack_ints(s._Ia, oe, s.nq, s.nv, len(s.joint_names))[0]
    Ib[K.IB_GRAV] = s._Ib[K.IB_GRAV]
    qdd2, reac2 = np.empty(s.nv), np.empty_like(reac)
    e2, e1, ei = np.zeros((0, 6)), np.zeros(0), np.zeros(0, np.int64)
    assert K.qdd_reactions(Ib, s._buf, q, qd, tau, qdd2, reac2, e2, e2, e1, ei) == 0
    assert rel(qdd2, qdd) < TOL and rel(reac2, reac) < TOL


# ------------------------------------------------------------------ bad input


def test_singular_body_inertia_is_rejected_with_its_name():
    m = fm.Model("rod")
    m.rod = fm.RigidBody.rod(1.0, 1.0, origin="end")  # zero axial inertia
    m.j = fm.Revolute(m.ground, m.rod, axis=(0, 0, 1))
    with pytest.raises(ModelError, match="'rod'.*singular"):
        m.compile("recursive")
    m2 = fm.Model("bob")
    m2.bob = fm.RigidBody(1.0, com=(1.0, 0, 0))  # point mass
    m2.j = fm.Revolute(m2.ground, m2.bob)
    with pytest.raises(ModelError, match="'bob'"):
        m2.compile("recursive")


def test_closed_loop_is_rejected_clearly():
    m = fm.Model("loop")
    m.a = fm.RigidBody(1.0, (0.1, 0.1, 0.1))
    m.b = fm.RigidBody(1.0, (0.1, 0.1, 0.1))
    m.j1 = fm.Revolute(m.ground, m.a)
    m.j2 = fm.Revolute(m.a, m.b, parent_frame=(1, 0, 0))
    m.j3 = fm.Revolute(m.b, m.ground, parent_frame=(1, 0, 0), child_frame=(2, 0, 0))
    with pytest.raises(ModelError, match="closed loops"):
        RecursiveSystem(m)  # m.compile("recursive") hands loops to the constraint layer


def test_parameters_are_re_read_after_a_change():
    m = random_tree(61, 5, forces=True)
    s = m.compile("recursive")
    q, qd, tau = random_state(s, 61)
    before = s.forward_dynamics(q, qd, tau).qdd
    m.b2.mass = 7.5
    after = s.forward_dynamics(q, qd, tau).qdd
    assert rel(after, before) > 1e-3
    assert rel(after, Oracle(m).forward(q, qd, tau)[0]) < TOL


def test_structural_change_after_compile_asks_for_a_new_compile():
    m = chain(3)
    s = m.compile("recursive")
    m.extra = fm.RigidBody(1.0, (0.1, 0.1, 0.1))
    m.jx = fm.Revolute(m.l2, m.extra, parent_frame=(0.3, 0, 0))
    with pytest.raises(ModelError, match="compile it again"):
        s.forward_dynamics(np.zeros(3), np.zeros(3))


def test_bad_state_sizes_and_non_finite_states():
    s = chain(3).compile("recursive")
    with pytest.raises(ModelError, match="q needs 3"):
        s.forward_dynamics(np.zeros(4), np.zeros(3))
    with pytest.raises(SolverError):
        s.forward_dynamics(np.array([np.nan, 0, 0]), np.zeros(3))
    with pytest.raises(ModelError, match="state sizes"):
        s.qdd_and_reactions(np.zeros(3), np.zeros(3), np.zeros(2))
    with pytest.raises(ModelError, match="batch shapes"):
        s.forward_dynamics_arrays(np.zeros((4, 3)), np.zeros((4, 2)))


def test_lean_and_threaded_batches_equal_forward_dynamics():
    m = chain(7)
    s = m.compile("recursive")
    rng = np.random.default_rng(4)
    Q, V, T = (rng.normal(size=(9, 7)) for _ in range(3))
    ref = s.forward_dynamics_batch(Q, V, T)
    for threads in (1, 2):
        qdd, reac = s.forward_dynamics_arrays(Q, V, T, threads=threads)
        assert np.array_equal(qdd, ref.qdd) and np.array_equal(reac, ref.reactions)
    qdd, reac = s.qdd_and_reactions(Q[3], V[3], T[3])
    assert np.array_equal(qdd, ref.qdd[3]) and np.array_equal(reac, ref.reactions[3])


def test_lean_call_converts_other_inputs_and_checks_sizes():
    """The compiled entry point takes float64 contiguous arrays only; anything else
    (lists, read-only, strided, other dtypes) goes through the converting path."""
    s = chain(4).compile("recursive")
    q, qd, tau = np.random.default_rng(1).normal(size=(3, 4))
    ref = s.qdd_and_reactions(q, qd, tau)
    frozen = q.copy()
    frozen.flags.writeable = False
    strided = np.stack([qd, qd], axis=1)[:, 0]
    for args in [
        (list(q), list(qd), list(tau)),
        (frozen, strided, np.broadcast_to(tau, (4,))),
        (q.astype(np.float32).astype(np.float64), qd, tau.astype(np.float32)),
    ]:
        qdd, reac = s.qdd_and_reactions(*args)
        assert np.allclose(qdd, ref[0], rtol=1e-6) and np.allclose(reac, ref[1], rtol=1e-6)
    assert np.array_equal(s.qdd_and_reactions(list(q), qd, tau)[0], ref[0])
    assert np.array_equal(s._raw_accel(q, qd, tau), ref[0])
    assert np.array_equal(s.qdd_and_reactions(q, qd)[0], s.forward_dynamics(q, qd).qdd)
    for bad in [
        (np.zeros(5), qd, tau),
        (q, qd[:3], tau),
        (q, qd, np.zeros(3)),
        (np.stack([q, q], axis=1), qd, tau),
    ]:
        with pytest.raises(ModelError, match="state sizes"):
            s.qdd_and_reactions(*bad)
        with pytest.raises(ModelError, match="state sizes"):
            s._raw_accel(*bad)


def _mechanism(m, kind, i):
    """Add mechanism ``i`` hinged to the ground at (0.5 i, 0, 0) to model ``m`` (names
    prefixed with ``kind`` and ``i``): ``hub`` a body with three branches (a node, so
    several dense joints), ``chain`` five links, ``pendulum`` one body."""
    x, pre = 0.5 * i, f"{kind}{i}"
    inertia = (0.01, 0.02, 0.03)

    def body(name, mass=1.0):
        b = fm.RigidBody(mass, inertia, com=(0.1, 0.02, 0.0))
        setattr(m, f"{pre}_{name}", b)
        return b

    def joint(name, parent, child, axis, frame):
        setattr(m, f"{pre}_j{name}", fm.Revolute(parent, child, axis=axis, parent_frame=frame))

    first = body("0", 2.0)
    joint("0", m.ground, first, (0, 0, 1), (x, 0, 0))
    if kind == "hub":
        for c in range(3):
            prev = first
            for i in range(1 + c):
                b = body(f"{c}_{i}")
                joint(f"{c}_{i}", prev, b, (0, i % 2, (i + 1) % 2), (0.2, 0.1 * c, 0))
                prev = b
    elif kind == "chain":
        prev = first
        for i in range(1, 5):
            b = body(str(i))
            joint(str(i), prev, b, (0, i % 2, (i + 1) % 2), (0.2, 0, 0))
            prev = b


def _mechanisms(kinds):
    m = fm.Model("side_by_side")
    for i, kind in enumerate(kinds):
        _mechanism(m, kind, i)
    m.g = fm.Gravity((0, -9.81, -3.0))
    return m


def test_node_system_is_one_block_per_subtree_of_the_ground():
    """Mechanisms hinged side by side to the ground share no moving body: the CFA's
    node system has one diagonal block per subtree (factored block by block, its storage
    6 nd x (6 x the largest block + 1) instead of quadratic in the number of subtrees),
    and each mechanism moves as it does alone (the dense reference agrees too)."""
    kinds = ["chain", "hub", "pendulum", "hub", "chain", "pendulum"]
    s = _mechanisms(kinds).compile("recursive")
    sch = s.schedule
    dense = sch.dense.tolist()
    assert len(sch.blocks) == len(kinds) + 1 and sch.blocks[0] == 0
    root = s._Ia[0].copy()  # each dense joint's subtree: the child of the ground above it
    for k in range(1, len(root)):
        root[k] = k if root[k] == 0 else root[root[k]]
    groups = [
        {int(root[k]) for k in dense[a:b]}
        for a, b in zip(sch.blocks[:-1], sch.blocks[1:], strict=True)
    ]
    assert all(len(g) == 1 for g in groups) and len(set.union(*groups)) == len(kinds)
    sizes = np.diff(sch.blocks)
    assert sizes.max() > 1  # the hubs leave several coupled joints
    assert s.arrays.Dn.shape == (6 * len(dense), 6 * sizes.max() + 1)
    rng = np.random.default_rng(4)
    q, qd, tau = rng.normal(size=s.nq), rng.normal(size=s.nv), rng.normal(size=s.nv)
    fd = s.forward_dynamics(q, qd, tau)
    gen = s.forward_dynamics(q, qd, tau, algorithm="general")
    assert rel(gen.qdd, fd.qdd) < TOL and rel(gen.reactions, fd.reactions) < TOL
    # each mechanism alone: the same accelerations and reactions, joint by joint
    for i, kind in enumerate(kinds):
        alone = _mechanism_alone(kind, i)
        a = alone.compile("recursive")
        idx = [s.layout.joint_names.index(n) for n in a.layout.joint_names]
        v = [s.layout.speeds.index(sp) for sp in a.layout.speeds]  # (revolute: q as v)
        fa = a.forward_dynamics(q[v], qd[v], tau[v])
        assert rel(fa.qdd, fd.qdd[v]) < 1e-13 and rel(fa.reactions, fd.reactions[idx]) < 1e-13


def _mechanism_alone(kind, i):
    m = fm.Model("alone")
    _mechanism(m, kind, i)
    m.g = fm.Gravity((0, -9.81, -3.0))
    return m
