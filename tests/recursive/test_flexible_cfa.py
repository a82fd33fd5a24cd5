"""CFA with flexible bodies (flexmbd/recursive/flexible.py) against independent references.

* the same models compiled to absolute coordinates (flexible bodies as reference +
  modal coordinates, every joint a constraint): body accelerations, modal
  accelerations and every joint reaction agree to <= 1e-9 -- chains, branches at a
  flexible node, a floating flexible base, bodies with two interfaces and node frames,
  reversed joints, rigid + flexible mixed, point forces at deforming frames, joint
  forces, geometric stiffening;
* the dense reference (``algorithm="general"``) equals the serialized kernels to 1e-12;
* very stiff modes (static deflection) reproduce the rigid model;
* a free flexible tree keeps its energy and momentum (4th-order drift of RK4).
"""

import functools

import numpy as np
import pytest
import skfem

import flexmbd as fm
import flexmbd.fem as F

STEEL = dict(E=2.1e11, nu=0.3, rho=7850.0)
A0 = (0.0, 0.025, 0.025)  # centre of the x = 0 face (interface A)


def _end(x):
    return F.Plane((x, 0, 0), (1, 0, 0))


@functools.cache
def beam(n_modes=4, kind="cb", E=STEEL["E"], geometric=True):
    """A reduced beam 1.0 x 0.05 x 0.05 (8 x 2 x 2 hexes), interfaces A (x = 0) and B (x = 1).

    ``cb``: Craig-Bampton on both (A reference, rigid B: 6 constraint modes);
    ``cbA``: Craig-Bampton on A only, B read out; ``nm``: free-free normal modes. Four
    modes by default: whole pairs of the square section's equal bending frequencies
    (three would keep one mode of a pair: a ModeWarning).
    """
    mesh = skfem.MeshHex1.init_tensor(
        np.linspace(0, 1.0, 9), np.linspace(0, 0.05, 3), np.linspace(0, 0.05, 3)
    )
    mat = fm.Material(E=E, nu=STEEL["nu"], rho=STEEL["rho"])
    opts = dict(name="beam", geometric=geometric)
    if kind == "cb":
        strat = fm.CraigBampton(
            n_modes, interfaces={"A": _end(0.0), "B": _end(1.0)}, frame="interface"
        )
        return F.reduce(mesh, mat, strat, **opts)
    if kind == "cbA":
        strat = fm.CraigBampton(n_modes, interfaces={"A": _end(0.0)}, frame="interface")
        return F.reduce(mesh, mat, strat, interfaces={"B": _end(1.0)}, **opts)
    strat = fm.NormalModes(n_modes)
    return F.reduce(mesh, mat, strat, interfaces={"A": _end(0.0), "B": _end(1.0)}, **opts)


# ---------------------------------------------------------------- models


def chain(stiff=False, n_flex=2, rigid_tip=True, gravity=True, kind="cb"):
    """Ground - flexible beams (revolutes at the interfaces, alternating axes) - rigid tip."""
    rb = beam(4, kind)
    m = fm.Model("flex_chain")
    prev, pf = m.ground, A0
    for i in range(n_flex):
        b = fm.FlexibleBody(rb, geometric_stiffening=stiff)
        setattr(m, f"b{i}", b)
        ax = (0, 0, 1) if i % 2 == 0 else (0, 1, 0)
        setattr(
            m, f"j{i}", fm.Revolute(prev, b, axis=ax, parent_frame=pf, child_frame=b.interface("A"))
        )
        prev, pf = b, b.interface("B")
    if rigid_tip:
        m.tip = fm.RigidBody(2.0, (0.01, 0.02, 0.03), com=(0.2, 0.01, 0))
        m.jt = fm.Revolute(prev, m.tip, axis=(1, 0, 0), parent_frame=pf)
    if gravity:
        m.g = fm.Gravity((0, -9.81, 0.5))
    return m


def tree():
    """A floating flexible base (free-free modes) carrying a flexible arm at its interface B
    (spherical) with two rigid bodies at the arm's tip (prismatic, cylindrical through a
    rotated interface frame) and a flexible arm at a mesh node (universal)."""
    rb = beam(4, "cb")
    m = fm.Model("flex_tree")
    m.base = fm.FlexibleBody(beam(4, "nm", E=2.1e9), geometric_stiffening=False)
    m.float = fm.Free(
        m.ground,
        m.base,
        q0=(np.array([0.1, 0.2, 1.0]), np.eye(3)),
        qd0=[0.3, -0.2, 0.5, 0.1, 0.0, -0.2],
    )
    m.l = fm.FlexibleBody(rb, geometric_stiffening=False)
    m.r = fm.FlexibleBody(rb, geometric_stiffening=False)
    m.jl = fm.Spherical(
        m.base, m.l, parent_frame=m.base.interface("B"), child_frame=m.l.interface("A")
    )
    m.jr = fm.Universal(m.base, m.r, parent_frame=m.base.node(3), child_frame=m.r.interface("A"))
    m.t1 = fm.RigidBody(1.0, (0.01, 0.02, 0.03), com=(0.1, 0, 0))
    m.t2 = fm.RigidBody(1.5, (0.02, 0.02, 0.03), com=(0.1, 0.1, 0))
    m.j1 = fm.Prismatic(m.l, m.t1, axis=(1, 0, 0), parent_frame=m.l.interface("B"))
    m.j2 = fm.Cylindrical(
        m.l, m.t2, axis=(0, 1, 0), parent_frame=m.l.interface("B", rotation=(0.3, 0.2, 0.1))
    )
    m.g = fm.Gravity((0, -9.81, 0.5))
    return m


def reversed_and_loaded():
    """Joints declared against the tree direction (the topology reverses them), a rigid
    body between two flexible ones, point forces at a deforming interface and a node.
    (No JointForce: the absolute formulation cannot map one in a model with modal
    coordinates yet.)"""
    rb = beam(4, "cb")
    m = fm.Model("flex_reversed")
    m.b0 = fm.FlexibleBody(rb, geometric_stiffening=False)
    m.mid = fm.RigidBody(3.0, (0.02, 0.03, 0.04), com=(0.1, 0.0, 0.05))
    m.b1 = fm.FlexibleBody(beam(4, "cbA"), geometric_stiffening=False)
    # declared child -> parent: reversed by the topology
    m.j0 = fm.Revolute(
        m.b0, m.ground, axis=(0, 0, 1), parent_frame=m.b0.interface("A"), child_frame=A0
    )
    m.j1 = fm.Universal(
        m.mid,
        m.b0,
        axis1=(1, 0, 0),
        axis2=(0, 1, 0),
        parent_frame=((0.0, 0.0, 0.0), np.eye(3)),
        child_frame=m.b0.interface("B"),
    )
    m.j2 = fm.Revolute(
        m.mid, m.b1, axis=(0, 1, 0), parent_frame=(0.2, 0.0, 0.0), child_frame=m.b1.interface("A")
    )
    m.push = fm.PointForce(m.b1, m.b1.interface("B"), (10.0, -20.0, 5.0))
    m.push2 = fm.PointForce(m.b0, m.b0.node(7), (0.0, 3.0, 1.0), frame="body")
    m.g = fm.Gravity((0, -9.81, 0.0))
    return m


def with_sdas():
    """Spring-damper-actuators with ends at deforming frames: interface B to a rigid
    body, a rigid body to a mesh point, a node to the ground (k, c, fa nonzero)."""
    m = fm.Model("flex_sda")
    m.beam = fm.FlexibleBody(beam(4, "cb"), geometric_stiffening=False)
    m.tip = fm.RigidBody(2.0, (0.1, 0.2, 0.3), com=(0.05, 0.02, -0.01))
    m.arm = fm.RigidBody(1.0, (0.05, 0.06, 0.07), com=(0.1, 0.0, 0.0))
    m.j0 = fm.Revolute(
        m.ground, m.beam, axis=(0.2, 0.1, 1.0), parent_frame=A0, child_frame=m.beam.interface("A")
    )
    m.j1 = fm.Spherical(
        m.beam, m.tip, parent_frame=m.beam.interface("B"), child_frame=(0.01, 0.02, 0.03)
    )
    m.j2 = fm.Revolute(m.ground, m.arm, axis=(0, 0, 1), parent_frame=(0.3, -0.4, 0.0))
    m.s1 = fm.SpringDamperActuator(
        m.beam, m.beam.interface("B"), m.tip, (0.1, 0.05, -0.02), k=3e3, c=20.0, fa=15.0, l0=0.1
    )
    m.s2 = fm.SpringDamperActuator(
        m.arm,
        (0.05, 0.1, 0.0),
        m.beam,
        m.beam.point((0.5, 0.0, 0.05)),
        k=2e3,
        c=10.0,
        fa=lambda t: 5.0 + t,
        l0=0.05,
    )
    m.s3 = fm.SpringDamperActuator(
        m.beam, m.beam.node(3), m.ground, (0.5, 0.4, 0.1), k=1e3, c=5.0, fa=2.0, l0=0.3
    )
    m.g = fm.Gravity((0, -9.81, 0.0))
    return m


def _random_state(rec, rng, scale_q):
    q, qd = rec.q0(), rec.qd0()
    q = rec.normalize(q + 0.5 * rng.normal(size=q.size))
    qd = qd + rng.normal(size=qd.size)
    for _name, (sq, sv) in rec.modal_slices.items():
        n = sq.stop - sq.start
        q[sq] = scale_q * rng.normal(size=n)
        qd[sv] = 10 * scale_q * rng.normal(size=n)
    return q, qd


def _absolute_state(ab, rec, q, qd):
    Q, QD = ab.state_from_bodies(rec.body_states(q, qd))
    for name, (sq, sv) in rec.modal_slices.items():
        Q[ab.modal_slices[name].q] = q[sq]
        QD[ab.modal_slices[name].q] = qd[sv]
    return Q, QD


def _rel(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return float(np.abs(x - y).max() / (1.0 + np.abs(x).max()))


def compare(m, rng, n_states=2, scale_q=1e-3, current_interface_loads=False):
    """Worst relative differences recursive - absolute (body and modal accelerations,
    reactions) and serialized - general."""
    rec = m.compile("recursive")
    gen = m.compile("recursive", algorithm="general")
    ab = m.compile("absolute")
    worst = dict(acc=0.0, modal=0.0, reac=0.0, general=0.0)
    for _ in range(n_states):
        q, qd = _random_state(rec, rng, scale_q)
        fr = rec.forward_dynamics(q, qd)
        fg = gen.forward_dynamics(q, qd)
        worst["general"] = max(
            worst["general"],
            _rel(fr.qdd, fg.qdd),
            _rel(fr.reactions, fg.reactions),
            _rel(rec.cfa_forces(q, qd)[0], gen.cfa_forces(q, qd)[0]),
        )
        Q, QD = _absolute_state(ab, rec, q, qd)
        assert np.abs(ab.constraint(Q)).max() < 1e-12
        fa = ab.forward_dynamics(Q, QD)
        if current_interface_loads:
            # the absolute formulation lags the interface wrenches by one step: update them
            # to the current reactions until the fixed point (what the CFA iterates to)
            for _ in range(40):
                ab.update_interface_loads(Q, fa.lam)
                fa2 = ab.forward_dynamics(Q, QD)
                done = np.abs(fa2.qdd - fa.qdd).max() <= 1e-14 * np.abs(fa.qdd).max()
                fa = fa2
                if done:
                    break
        for b in m.bodies():
            for x, y in zip(fr.body_acceleration(b.name), fa.body_acceleration(b.name)):
                worst["acc"] = max(worst["acc"], _rel(x, y))
            if b.name in rec.modal_slices:
                worst["modal"] = max(
                    worst["modal"], _rel(rec.modal(fr.qdd, b.name), ab.modal(fa.qdd, b.name))
                )
        for j in m.joints():
            worst["reac"] = max(worst["reac"], _rel(fr.reaction(j.name), fa.reaction(j.name)))
    return worst


def _check(worst, tol=1e-9, tol_general=1e-12):
    assert worst["acc"] <= tol and worst["modal"] <= tol and worst["reac"] <= tol, worst
    assert worst["general"] <= tol_general, worst


# ---------------------------------------------------------------- against absolute


def test_chain_with_rigid_tip():
    _check(compare(chain(), np.random.default_rng(0)))


def test_sdas_at_deforming_frames():
    """SDA ends that follow the deformation (interface, mesh point, node): the CFA's
    applied body wrenches and modal forces equal the absolute formulation's."""
    _check(compare(with_sdas(), np.random.default_rng(5), n_states=3, scale_q=3e-3))


def test_tree_floating_flexible_base_and_branches():
    _check(compare(tree(), np.random.default_rng(1)))


def test_reversed_joints_and_point_forces():
    _check(compare(reversed_and_loaded(), np.random.default_rng(2)))


def test_large_modal_amplitudes_exponential_map():
    """Interface rotations of a few 0.01 rad: the exponential map and its rates matter."""
    _check(compare(chain(kind="cbA"), np.random.default_rng(3), scale_q=3e-2))


def test_geometric_stiffening_current_loads():
    """Stiffening with the current inertia loads and interface wrenches (a fixed point the
    CFA iterates; the absolute side's lagged wrenches updated until they agree)."""
    m = chain(stiff=True)
    _check(compare(m, np.random.default_rng(4), scale_q=1e-5, current_interface_loads=True))
    # the stiffening forces are not negligible in this state
    rec = m.compile("recursive")
    off = chain(stiff=False).compile("recursive")
    q, qd = _random_state(rec, np.random.default_rng(4), 1e-5)
    a, b = rec.forward_dynamics(q, qd).qdd, off.forward_dynamics(q, qd).qdd
    assert _rel(a, b) > 1e-6


def test_stiffening_without_interface_loads_matches_fresh_absolute():
    """A single stiffened beam whose tip carries no joint: no interface load enters, and the
    fresh absolute system (no lagged loads yet) is the same equation."""
    _check(
        compare(
            chain(stiff=True, n_flex=1, rigid_tip=False), np.random.default_rng(5), scale_q=1e-4
        )
    )


# ---------------------------------------------------------------- limits and invariants


def _quasi_static(rec, q, qd, iters=4):
    """Modal coordinates with zero modal acceleration (Newton, finite-difference Jacobian)."""
    q = q.copy()
    for _ in range(iters):
        f = rec.forward_dynamics(q, qd).qdd
        cols = [c for sq, sv in rec.modal_slices.values() for c in range(sv.start, sv.stop)]
        qcols = [c for sq, sv in rec.modal_slices.values() for c in range(sq.start, sq.stop)]
        J = np.zeros((len(cols), len(qcols)))
        h = 1e-9
        for i, c in enumerate(qcols):
            qq = q.copy()
            qq[c] += h
            J[:, i] = (rec.forward_dynamics(qq, qd).qdd[cols] - f[cols]) / h
        q[qcols] -= np.linalg.solve(J, f[cols])
    return q


def test_frozen_modes_reproduce_the_rigid_model():
    """Very stiff modes at their quasi-static deflection: joint accelerations and reactions
    of the rigid model with the same inertia (error ~ 1/stiffness)."""
    rb = beam(4, "cbA")
    rb = rb.replace(K_ff=rb.K_ff * 1e6, D_ff=np.zeros_like(rb.K_ff))

    def build(flexible):
        m = fm.Model("frozen")
        prev, pf = m.ground, A0
        for i in range(2):
            if flexible:
                b = fm.FlexibleBody(rb, geometric_stiffening=False)
                cf = b.interface("A")
            else:
                b = fm.RigidBody(rb.mass, rb.inertia_com, com=rb.com)
                cf = A0
            setattr(m, f"b{i}", b)
            setattr(
                m,
                f"j{i}",
                fm.Revolute(
                    prev,
                    b,
                    axis=(0, 0, 1) if i == 0 else (0, 1, 0),
                    parent_frame=pf,
                    child_frame=cf,
                    q0=[0.4 * (i + 1)],
                    qd0=[1.0 - i],
                ),
            )
            prev, pf = b, (b.interface("B") if flexible else (1.0, 0.025, 0.025))
        m.g = fm.Gravity((0, -9.81, 0))
        return m

    flex = build(True).compile("recursive")
    rigid = build(False).compile("recursive")
    q, qd = flex.q0(), flex.qd0()
    q = _quasi_static(flex, q, qd)
    fa, fr = flex.forward_dynamics(q, qd), rigid.forward_dynamics(rigid.q0(), rigid.qd0())
    nj = rigid.nv
    assert np.abs(flex.modal(q, "b0")).max() < 1e-8
    assert _rel(fa.qdd[:nj], fr.qdd) < 1e-6
    assert _rel(fa.reactions, fr.reactions) < 1e-6


def _free_tree():
    m = fm.Model("free_flex")
    m.base = fm.FlexibleBody(
        beam(4, "nm", E=2.1e9),
        geometric_stiffening=False,
        q0=[2e-3, -1e-3, 5e-4, 1e-3],
        qd0=[0.1, 0.2, -0.1, 0.05],
    )
    m.float = fm.Free(m.ground, m.base, qd0=[1.0, -0.7, 1.5, 0.4, 0.1, -0.2])
    m.arm = fm.FlexibleBody(
        beam(2, "cb", E=2.1e9), geometric_stiffening=False, q0=1e-3 * np.arange(8), qd0=np.zeros(8)
    )
    m.hinge = fm.Revolute(
        m.base,
        m.arm,
        axis=(0, 1, 1),
        parent_frame=m.base.interface("B"),
        child_frame=m.arm.interface("A"),
        qd0=[2.0],
    )
    return m


def test_free_flexible_tree_conserves_energy_and_momentum():
    m = _free_tree()
    s = m.compile("recursive")
    drift = []
    for dt in (1e-4, 5e-5):
        res = s.simulate(0.02, dt=dt, integrator="rk4")
        E = res.energy["total"]
        p, h = res.extra["momentum_linear"], res.extra["momentum_angular"]
        drift.append(
            (
                np.abs(E - E[0]).max() / abs(E[0]),
                np.abs(p - p[0]).max() / np.abs(p[0]).max(),
                np.abs(h - h[0]).max() / np.abs(h[0]).max(),
            )
        )
        assert res.body("arm").modal.shape == (len(res.t), 8)
        assert np.ptp(res.body("base").modal) > 1e-4  # the modes move
    (e1, p1, h1), (e2, p2, h2) = drift
    assert max(e1, p1, h1) < 1e-5, drift
    # fourth order: halving the step divides the drift by ~16
    assert e2 < e1 / 8 and p2 < p1 / 8 and h2 < h1 / 8, drift


def test_modal_coordinates_layout_and_results():
    m = chain()
    s = m.compile("recursive")
    assert s.coordinates[-10:] == [("b1", f"q{i + 1}") for i in range(10)]
    assert s.speeds[-1] == ("b1", "q10d")
    assert s.nq == 3 + 20 and s.nv == 3 + 20
    # steel, Craig-Bampton constraint modes up to 5.5 kHz: RK4 needs dt < 2.8 / omega_max
    assert 2.8 / s.max_modal_frequency() < 1e-4
    with pytest.warns(UserWarning, match="stability limit"):
        with pytest.raises(fm.SolverError):
            s.simulate(2e-3, dt=1e-4, integrator="rk4")
    res = s.simulate(4e-4, dt=2e-5, integrator="rk4")
    assert res.body("b0").modal.shape == (21, 10)
    assert np.all(np.isfinite(res.reactions))


def test_results_interface_motions_match_the_absolute_convention():
    """``interface:B.NAME`` of a recursive run = the deformed frame pose of the state; the
    tip interface of b0 carries joint j1 and coincides with b1's interface A."""
    m = chain(rigid_tip=False)
    s = m.compile("recursive")
    res = s.simulate(2e-4, dt=2e-5, integrator="rk4")
    tip = res.body("b0").interfaces["B"]
    base = res.body("b1").interfaces["A"]
    assert tip.shape == (len(res.t), 7)
    assert np.abs(tip[:, :3] - base[:, :3]).max() < 1e-12
    # trajectory() of a deforming frame reads the same extras
    traj = m.b0.interface("B").trajectory(res)
    assert np.abs(traj - tip[:, :3]).max() < 1e-12


def test_joint_forces_on_a_flexible_tree_equal_their_generalized_forces_bit_for_bit():
    """The per-revision plan of the joint forces (spring-damper laws as scalars, other
    laws through ``generalized_force``) adds exactly the elements' own values: a loaded
    flexible chain equals the unloaded chain given those values as ``tau``, bit for bit,
    and a force added after the first calls (new model revision) is read."""
    loaded, free = chain(n_flex=2), chain(n_flex=2)
    loaded.d0 = fm.JointForce.spring_damper(
        loaded.j0, 3.0, 0.7, 0.1, actuator=lambda t: 2.0 * np.sin(3.0 * t)
    )
    loaded.d1 = fm.JointForce.of_time(loaded.j1, lambda t: 0.5 + t)
    loaded.d2 = fm.JointForce(loaded.jt, lambda t, q, qd: -1.3 * q - 0.2 * qd * t)
    loaded.d3 = fm.JointForce.spring_damper(loaded.j0, 0.0, 1.1)  # two forces on one joint
    rl, rf = loaded.compile("recursive"), free.compile("recursive")
    rng = np.random.default_rng(7)
    for t in (0.0, 0.37):
        q, qd = _random_state(rl, rng, 1e-3)
        tau = np.zeros(rl.nv)
        for f in (loaded.d0, loaded.d1, loaded.d2, loaded.d3):
            js = rl.layout.joints[f.joint.name]
            tau[js.v] += f.generalized_force(t, q[js.q], qd[js.v])
        a = rl.forward_dynamics(q, qd, t=t)
        b = rf.forward_dynamics(q, qd, tau, t=t)
        assert np.array_equal(a.qdd, b.qdd)
        assert np.array_equal(a.reactions, b.reactions)
    loaded.d4 = fm.JointForce.spring_damper(loaded.jt, 2.5, 0.0, -0.2)  # new revision
    tau[:] = 0.0
    for f in (loaded.d0, loaded.d1, loaded.d2, loaded.d3, loaded.d4):
        js = rl.layout.joints[f.joint.name]
        tau[js.v] += f.generalized_force(t, q[js.q], qd[js.v])
    assert np.array_equal(
        rl.forward_dynamics(q, qd, t=t).qdd, rf.forward_dynamics(q, qd, tau, t=t).qdd
    )
