"""Cut-joint constraints of the recursive formulation (flexmbd.constraints.cut / loops).

Oracles: finite differences of the constraint functions (Jacobian and gamma of
every joint type as a cut joint, with reversed, spherical, universal, planar and
prismatic tree joints on the loop), the Newton-Euler equations of every body with
all reported reactions, and the absolute formulation on the same model.
"""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.constraints.cut import JointDriver, constraint_rows
from flexmbd.recursive.loops import LoopSystem
from flexmbd.spatial import rotvec_to_rot

CUT_TYPES = {
    "Revolute": lambda p, c, **kw: fm.Revolute(p, c, axis=(0.3, -0.2, 0.9), **kw),
    "Prismatic": lambda p, c, **kw: fm.Prismatic(p, c, axis=(0.1, 0.7, -0.3), **kw),
    "Cylindrical": lambda p, c, **kw: fm.Cylindrical(p, c, axis=(1.0, 0.2, 0.1), **kw),
    "Universal": lambda p, c, **kw: fm.Universal(p, c, axis1=(1, 0, 0), axis2=(0, 0.6, 0.8), **kw),
    "Spherical": lambda p, c, **kw: fm.Spherical(p, c, **kw),
    "Planar": lambda p, c, **kw: fm.Planar(p, c, normal=(0.2, 0.3, 0.9), **kw),
    "Fixed": lambda p, c, **kw: fm.Fixed(p, c, **kw),
}


def _frame(rng):
    return (rng.uniform(-0.4, 0.4, 3), rotvec_to_rot(rng.uniform(-1, 1, 3)))


def _body(rng):
    Rb = rotvec_to_rot(rng.uniform(-1, 1, 3))
    J = Rb @ np.diag(rng.uniform(0.05, 0.1, 3)) @ Rb.T  # physical: I1 + I2 >= I3
    return fm.RigidBody(mass=rng.uniform(0.5, 2.0), inertia=J, com=rng.uniform(-0.2, 0.2, 3))


def loop_model(cut_type, to_ground=False, seed=0):
    """ground -R- b1 -S- b2 -U(reversed)- b3 -P- b4, cut joint b4 -> b1 (or ground)."""
    rng = np.random.default_rng(seed)
    m = fm.Model(f"loop_{cut_type}")
    for name in ("b1", "b2", "b3", "b4"):
        setattr(m, name, _body(rng))
    m.j1 = fm.Revolute(
        m.ground, m.b1, axis=(0, 0, 1), parent_frame=_frame(rng), child_frame=_frame(rng)
    )
    m.j2 = fm.Spherical(m.b1, m.b2, parent_frame=_frame(rng), child_frame=_frame(rng))
    m.j3 = fm.Universal(m.b3, m.b2, parent_frame=_frame(rng), child_frame=_frame(rng))
    m.j4 = fm.Prismatic(
        m.b3, m.b4, axis=(0, 1, 0), parent_frame=_frame(rng), child_frame=_frame(rng)
    )
    other = m.ground if to_ground else m.b1
    m.jc = CUT_TYPES[cut_type](
        m.b4, other, parent_frame=_frame(rng), child_frame=_frame(rng), cut=True
    )
    m.g = fm.Gravity((0.0, -9.81, 0.3))
    return m


def random_state(S, rng):
    q = S.tree.q0() + rng.uniform(-0.5, 0.5, S.nq)
    return S.normalize(q), rng.uniform(-1.5, 1.5, S.nv)


@pytest.mark.parametrize("cut_type", sorted(CUT_TYPES))
@pytest.mark.parametrize("to_ground", [False, True])
def test_jacobian_and_gamma_match_finite_differences(cut_type, to_ground):
    m = loop_model(cut_type, to_ground)
    S = LoopSystem(m)
    assert [j.name for j in S.cut_joints] == ["jc"]
    assert m.topology().reversed[2]  # j3 is reversed in the tree
    C = S.constraints
    assert C.m == 6 - m.jc.nv == len(constraint_rows(m.jc)[2])
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v = random_state(S, rng)
        J = C.jacobian(q).copy()
        h = 1e-6
        Jfd = np.column_stack(
            [
                (C.phi(C.retract(q, h * e)) - C.phi(C.retract(q, -h * e))) / (2 * h)
                for e in np.eye(S.nv)
            ]
        )
        np.testing.assert_allclose(J, Jfd, atol=2e-8 * max(1, np.abs(J).max()))
        a = rng.uniform(-1, 1, S.nv)
        gam = C.gamma(q, v).copy()

        def f(s, q=q, v=v, a=a):
            return C.jacobian(C.retract(q, s * v)) @ (v + s * a)

        h = 1e-5
        d = (f(h) - f(-h)) / (2 * h)
        np.testing.assert_allclose(J @ a - gam, d, atol=2e-7 * max(1, np.abs(d).max()))


def test_driver_rows_are_rheonomic():
    m = loop_model("Spherical")
    w = 2.5
    m.drive = JointDriver(
        m.j1,
        lambda t: 0.3 + w * t + 0.1 * np.sin(t),
        lambda t: w + 0.1 * np.cos(t),
        lambda t: -0.1 * np.sin(t),
    )
    S = LoopSystem(m)
    C = S.constraints
    assert C.names[-1] == "drive:drive"
    rng = np.random.default_rng(3)
    q, v = random_state(S, rng)
    t = 0.7
    a = rng.uniform(-1, 1, S.nv)

    def f(s):
        return C.jacobian(C.retract(q, s * v), t + s) @ (v + s * a) + C.phi_t(
            C.retract(q, s * v), t + s
        )

    h = 1e-5
    d = (f(h) - f(-h)) / (2 * h)
    np.testing.assert_allclose(C.jacobian(q, t) @ a - C.gamma(q, v, t), d, atol=1e-7)
    assert C.phi(q, t)[-1] == pytest.approx(q[0] - (0.3 + w * t + 0.1 * np.sin(t)))


def _newton_euler_residuals(S, q, qd, fd, g):
    """World Newton-Euler residual of every body with all joint reactions and gravity."""
    m = S.model
    states = S.body_states(q, qd)
    wrench = {b.name: np.zeros(6) for b in m.bodies()}  # [moment about origin; force], world

    def frame_world(body, frame):
        if body is m.ground:
            return frame.rotation, frame.position
        R, r = states[body.name][:2]
        return R @ frame.rotation, r + R @ frame.position

    for j in m.joints():
        F = fd.reaction(j.name)
        Rc, pc = frame_world(j.child, j.child_frame)
        n, f = Rc @ F[:3], Rc @ F[3:]
        for body, sgn in ((j.child, 1.0), (j.parent, -1.0)):
            if body is m.ground:
                continue
            r = states[body.name][1]
            wrench[body.name] += sgn * np.concatenate([n + np.cross(pc - r, f), f])
    res = []
    for b in m.bodies():
        R, r, w, v = states[b.name]
        alpha, a0 = fd.tree.body_acceleration(b.name)
        c = R @ b.com_vector
        acom = a0 + np.cross(alpha, c) + np.cross(w, np.cross(w, c))
        Ic = R @ b.inertia_matrix @ R.T
        f_req = b.mass * acom - b.mass * np.asarray(g)
        n_req = Ic @ alpha + np.cross(w, Ic @ w) + np.cross(c, f_req)  # about the origin
        res.append(np.concatenate([n_req, f_req]) - wrench[b.name])
    return np.array(res)


@pytest.mark.parametrize("cut_type", ["Revolute", "Universal", "Spherical", "Planar"])
def test_every_reaction_satisfies_newton_euler(cut_type):
    m = loop_model(cut_type)
    S = LoopSystem(m)
    rng = np.random.default_rng(5)
    q, qd = random_state(S, rng)
    q, qd = S.initial_state(S.tree.q0(), qd)
    fd = S.forward_dynamics(q, qd)
    # accelerations satisfy the constraints
    np.testing.assert_allclose(
        S.constraints.jacobian(q) @ fd.qdd, S.constraints.gamma(q, qd), atol=1e-9
    )
    res = _newton_euler_residuals(S, q, qd, fd, m.g.g)
    assert np.abs(res).max() < 1e-9
    # the cut joint's reaction lies in its constraint directions: no work in its motion
    qc = fm.constraints.cut.cut_coordinates(m.jc, *S.constraints.relative(q)[0][:2])
    H = m.jc.motion_subspace(qc)
    assert np.abs(H.T @ fd.reaction("jc")).max() < 1e-9 * max(1, np.abs(fd.reaction("jc")).max())


def test_agrees_with_absolute_formulation():
    """A non-redundant spatial loop: accelerations and every reaction, both formulations."""
    m = loop_model("Spherical", seed=4)
    S = LoopSystem(m)
    rng = np.random.default_rng(2)
    _, qd = random_state(S, rng)
    q, qd = S.initial_state(S.tree.q0(), qd)
    fd = S.forward_dynamics(q, qd)
    A = m.compile("absolute")
    qa, qda = A.state_from_bodies(S.body_states(q, qd))
    fa = A.forward_dynamics(qa, qda)
    for b in m.bodies():
        al1, a1 = fd.tree.body_acceleration(b.name)
        al2, a2 = fa.body_acceleration(b.name)
        np.testing.assert_allclose(al1, al2, atol=1e-8)
        np.testing.assert_allclose(a1, a2, atol=1e-8)
    for j in m.joints():
        np.testing.assert_allclose(
            fd.reaction(j.name), fa.reaction(j.name), atol=1e-7, err_msg=j.name
        )


def test_redundant_planar_loop_reports_rank_and_discarded_rows(tmp_path):
    m = fm.Model("planar_four_bar")
    for k in (1, 2, 3):
        setattr(m, f"b{k}", fm.RigidBody(1.0, (1e-3, 1 / 12, 1 / 12), com=(0.5, 0, 0)))
    m.j1 = fm.Revolute(m.ground, m.b1, q0=[1.0])
    m.j2 = fm.Revolute(m.b1, m.b2, parent_frame=(1, 0, 0), q0=[-1.0])
    m.j3 = fm.Revolute(m.ground, m.b3, parent_frame=(1, 0, 0), q0=[1.0])
    m.j4 = fm.Revolute(m.b2, m.b3, parent_frame=(1, 0, 0), child_frame=(1, 0, 0), cut=True)
    S = LoopSystem(m)
    q, qd = S.q0(), S.qd0()
    fd = S.forward_dynamics(q, qd)
    assert fd.rank == 2 and fd.discarded.sum() == 3
    discarded = [S.constraint_names[i] for i in np.flatnonzero(fd.discarded)]
    assert sorted(discarded) == ["j4:r1", "j4:r2", "j4:z"]  # the out-of-plane equations
    # over time, in Results.stats, through m.simulate and a file round trip
    res = m.simulate(0.02, dt=1e-3, integrator="rk4")
    assert res.meta["constraint_names"] == S.constraint_names
    assert np.all(res.stats["rank"] == 2) and res.stats["discarded"].shape == (21, 5)
    assert np.all(res.stats["discarded"].sum(axis=1) == 3)
    assert res.stats["position_violation"].max() < 1e-14
    assert res.reaction("j4").shape == (21, 6) and res.extra["lambda"].shape == (21, 5)
    back = fm.Results.load(res.save(tmp_path / "loop.npz"))
    assert back.equals(res)


def test_inconsistent_initial_configuration_is_reported():
    m = loop_model("Revolute", to_ground=True)
    m.j4.q0 = np.array([25.0])  # no assembly reachable from here in a few steps
    with pytest.raises(fm.ModelError, match="does not close the loops"):
        LoopSystem(m).initial_state(max_iter=2)


def _spring_four_bar(cut):
    m = fm.Model("spring_four_bar")
    for k in (1, 2, 3):
        setattr(m, f"b{k}", fm.RigidBody(1.0, (1e-2, 1 / 12, 1 / 12), com=(0.5, 0, 0)))
    m.j1 = fm.Revolute(m.ground, m.b1, q0=[1.0], cut=cut == "j1")
    m.j2 = fm.Revolute(m.b1, m.b2, parent_frame=(1, 0, 0), q0=[-1.0], cut=cut == "j2")
    m.j3 = fm.Revolute(m.ground, m.b3, parent_frame=(1, 0, 0), q0=[1.0], cut=cut == "j3")
    m.j4 = fm.Revolute(m.b2, m.b3, parent_frame=(1, 0, 0), child_frame=(1, 0, 0), cut=cut == "j4")
    m.g = fm.Gravity((0, -9.81, 0))
    # a torsion spring-damper in the coupler-rocker joint
    m.spring = fm.JointForce(m.j4, lambda t, q, qd: -20.0 * (q - 1.0) - 0.5 * qd)
    return m


def test_joint_force_on_a_cut_joint_equals_the_same_force_on_a_tree_joint():
    """The spring sits in the cut joint in one model and in a tree joint in the other."""
    sa, sb = LoopSystem(_spring_four_bar("j4")), LoopSystem(_spring_four_bar("j2"))
    assert [j.name for j in sa.cut_joints] == ["j4"] and [j.name for j in sb.cut_joints] == ["j2"]
    qa = sa.q0()
    for w in (0.0, 1.3):  # at rest, then moving
        v = np.array([w, -w, w])
        fa = sa.forward_dynamics(qa, v)
        # same configuration and motion in the other model's tree coordinates (j1, j3, j4);
        # j4 is the angle of b3 relative to b2
        qb = np.array([qa[0], qa[2], qa[2] - qa[0] - qa[1]])
        vb = np.array([v[0], v[2], v[2] - v[0] - v[1]])
        assert [c[0] for c in sb.coordinates] == ["j1", "j3", "j4"]
        fb = sb.forward_dynamics(qb, vb)
        for b in ("b1", "b2", "b3"):
            np.testing.assert_allclose(
                fa.tree.body_acceleration(b)[0], fb.tree.body_acceleration(b)[0], atol=1e-9
            )
        for j in ("j1", "j2", "j3", "j4"):  # tree and cut joints alike
            np.testing.assert_allclose(fa.reaction(j), fb.reaction(j), atol=1e-8, err_msg=j)


def _other_tree_types(seed=0):
    """ground -Free- b1 -Cylindrical- b2 -Planar(reversed)- b3 -Fixed- b4, cut b4 -> ground."""
    rng = np.random.default_rng(seed)
    m = fm.Model("other_types")
    for name in ("b1", "b2", "b3", "b4"):
        setattr(m, name, _body(rng))
    m.j1 = fm.Free(m.ground, m.b1, parent_frame=_frame(rng), child_frame=_frame(rng))
    m.j2 = fm.Cylindrical(
        m.b1, m.b2, axis=(0.2, 0.5, 1.0), parent_frame=_frame(rng), child_frame=_frame(rng)
    )
    m.j3 = fm.Planar(
        m.b3, m.b2, normal=(0.0, 1.0, 0.0), parent_frame=_frame(rng), child_frame=_frame(rng)
    )
    m.j4 = fm.Fixed(m.b3, m.b4, parent_frame=_frame(rng), child_frame=_frame(rng))
    m.jc = fm.Universal(
        m.b4,
        m.ground,
        axis1=(0, 0, 1),
        axis2=(1, 0, 0),
        parent_frame=_frame(rng),
        child_frame=_frame(rng),
        cut=True,
    )
    return m


def _reversed_revolutes():
    """ground -R- b1 -R(reversed)- b2 -R- b3, cut Spherical b3 -> ground: the compiled
    Revolute body's inverse-pose branch (reversed tree joint) on the loop path."""
    rng = np.random.default_rng(11)
    m = fm.Model("rev_revolutes")
    for name in ("b1", "b2", "b3"):
        setattr(m, name, _body(rng))
    m.j1 = fm.Revolute(
        m.ground, m.b1, axis=(0, 0, 1), parent_frame=_frame(rng), child_frame=_frame(rng)
    )
    m.j2 = fm.Revolute(
        m.b2, m.b1, axis=(0.3, 0.5, 0.8), parent_frame=_frame(rng), child_frame=_frame(rng)
    )
    m.j3 = fm.Revolute(
        m.b2, m.b3, axis=(1, 0, 0.2), parent_frame=_frame(rng), child_frame=_frame(rng)
    )
    m.jc = fm.Spherical(m.b3, m.ground, parent_frame=_frame(rng), child_frame=_frame(rng), cut=True)
    assert m.topology().reversed[1] and not m.topology().reversed[0]
    return m


@pytest.mark.parametrize(
    "build",
    [
        lambda: loop_model("Revolute"),
        lambda: loop_model("Planar", to_ground=True),
        _other_tree_types,
        _reversed_revolutes,
    ],
)
def test_compiled_loop_kinematics_match_the_python_reference(build):
    S = LoopSystem(build())
    C = S.constraints
    assert C.compiled
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, v = random_state(S, rng)
        t = rng.uniform()
        C._key = None
        C.compiled = True
        a = {k: C._eval(q, v, t)[k].copy() for k in ("phi", "J", "gamma")}
        C._key = None
        C.compiled = False
        b = C._eval(q, v, t)
        C.compiled = True
        for k in a:
            np.testing.assert_allclose(a[k], b[k], atol=1e-12, err_msg=k)


def test_other_tree_joint_types_jacobian_and_gamma():
    S = LoopSystem(_other_tree_types())
    C = S.constraints
    rng = np.random.default_rng(8)
    q, v = random_state(S, rng)
    J = C.jacobian(q).copy()
    h = 1e-6
    Jfd = np.column_stack(
        [(C.phi(C.retract(q, h * e)) - C.phi(C.retract(q, -h * e))) / (2 * h) for e in np.eye(S.nv)]
    )
    np.testing.assert_allclose(J, Jfd, atol=2e-8 * max(1, np.abs(J).max()))
    a = rng.uniform(-1, 1, S.nv)

    def f(s):
        return C.jacobian(C.retract(q, s * v)) @ (v + s * a)

    d = (f(1e-5) - f(-1e-5)) / 2e-5
    np.testing.assert_allclose(J @ a - C.gamma(q, v), d, atol=2e-7 * max(1, np.abs(d).max()))
