"""Pyomo-style model API: registration, indexed components, blocks, validation, pprint."""

import io

import numpy as np
import pytest

import flexmbd as fm


def two_arm_space_robot():
    """Free-floating hexagonal-prism base with two identical 6-link arms from one Block rule."""
    m = fm.Model("space_robot")
    m.base = fm.RigidBody.hexagonal_prism(400.0, side=0.8, length=1.2, axis="z")
    m.float = fm.Free(m.ground, m.base)

    def arm(b, mount):
        b.links = fm.RigidBody(
            range(6),
            rule=lambda blk, i: fm.RigidBody.rod(5.0, 0.5, axis="x", radius=0.03, origin="end"),
        )
        b.joints = fm.Revolute(
            range(6),
            rule=lambda blk, i: fm.Revolute(
                mount.body if i == 0 else blk.links[i - 1],
                blk.links[i],
                axis=(0, 0, 1) if i % 2 == 0 else (0, 1, 0),
                parent_frame=mount if i == 0 else (0.5, 0, 0),
            ),
        )

    m.arm1 = fm.Block(rule=arm, mount=fm.Frame(m.base, (0.8, 0, 0.3)))
    m.arm2 = fm.Block(rule=arm, mount=fm.Frame(m.base, (-0.8, 0, 0.3), (0, 0, np.pi)))
    return m


def test_attribute_assignment_names_components():
    m = fm.Model("m")
    m.crank = fm.RigidBody(1.0, (0.1, 0.1, 0.1))
    m.j1 = fm.Revolute(m.ground, m.crank)
    assert m.crank.name == "crank" and m.j1.name == "j1"
    assert m.ground.name == "ground"
    assert m.bodies() == [m.crank] and m.joints() == [m.j1]
    assert m.component_objects(fm.RigidBody) == [m.crank]
    assert m.body("crank") is m.crank and m.joint("j1") is m.j1


def test_replace_and_delete_update_the_model():
    m = fm.Model()
    m.a = fm.RigidBody(1.0)
    with pytest.warns(UserWarning, match="replacing component 'a'"):
        m.a = fm.RigidBody(2.0)
    assert [float(b.mass) for b in m.bodies()] == [2.0]
    del m.a
    assert m.bodies() == []
    with pytest.raises(fm.ModelError, match="already belongs"):
        b = fm.RigidBody(1.0)
        m.x = b
        m.y = b


def test_indexed_components_and_rules():
    m = fm.Model()
    m.links = fm.RigidBody(range(4), rule=lambda b, i: fm.RigidBody(1.0 + i))
    m.joints_ = fm.Revolute(
        range(4), rule=lambda b, i: fm.Revolute(b.ground if i == 0 else b.links[i - 1], b.links[i])
    )
    assert [b.name for b in m.bodies()] == [f"links[{i}]" for i in range(4)]
    assert float(m.links[3].mass) == 4.0 and len(m.links) == 4
    assert m.topology().cut_joints == ()
    with pytest.raises(fm.ModelError, match="has no member 7"):
        m.links[7]
    with pytest.raises(fm.ModelError, match="must return a RigidBody"):
        m.bad = fm.RigidBody(range(2), rule=lambda b, i: fm.Revolute(b.ground, b.links[0]))


def test_same_block_rule_instanced_twice_and_pprint_space_robot():
    m = two_arm_space_robot()
    assert len(m.bodies()) == 13 and len(m.joints()) == 13
    assert m.arm1.links[2].name == "arm1.links[2]"
    assert m.arm2.joints[0].parent is m.base
    buf = io.StringIO()
    m.pprint(buf)
    text = buf.getvalue()
    assert "13 bodies, 13 joints" in text
    assert "cut joints: none (tree)" in text
    assert "tree degrees of freedom: 18" in text
    t = m.topology()
    # regular labels: parent label < child label, leaves (arm tips) highest
    assert all(t.parent[k] < k for k in range(1, 14))
    tips = {
        t.body_map[m.bodies().index(m.arm1.links[5])],
        t.body_map[m.bodies().index(m.arm2.links[5])],
    }
    assert tips == {12, 13}


def test_mutable_parameters_bump_revision():
    m = fm.Model()
    m.a = fm.RigidBody(1.0)
    r = m.revision
    m.a.mass = 3.0
    assert m.revision > r


def test_loops_are_cut_at_the_joint_adding_fewest_equations():
    m = fm.Model()
    m.a = fm.RigidBody(1.0, (1, 1, 1))
    m.b = fm.RigidBody(1.0, (1, 1, 1))
    m.c = fm.RigidBody(1.0, (1, 1, 1))
    m.j1 = fm.Revolute(m.ground, m.a)
    m.s = fm.Spherical(m.a, m.b)  # 3 equations
    m.j3 = fm.Revolute(m.b, m.c)
    m.j4 = fm.Revolute(m.c, m.ground)  # 5 equations
    assert [j.name for j in m.cut_joints()] == ["s"]
    m.j3.cut = True
    assert [j.name for j in m.cut_joints()] == ["j3"]


def test_rigid_body_shape_helpers():
    b = fm.RigidBody.box(12.0, (1.0, 2.0, 3.0))
    assert np.allclose(np.diag(b.inertia_matrix), [13.0, 10.0, 5.0])
    r = fm.RigidBody.rod(3.0, 2.0, axis="y", origin="end")
    assert np.allclose(r.com_vector, [0, 1, 0]) and r.inertia_matrix[1, 1] == 0.0
    h = fm.RigidBody.hexagonal_prism(1.0, side=1.0, length=0.0)
    # regular hexagon: polar moment 5/12 m a^2, in-plane half of it
    assert np.allclose(np.diag(h.inertia_matrix), [5 / 24, 5 / 24, 5 / 12])
    c = fm.RigidBody.cylinder(2.0, 0.5, 1.0, axis="x")
    assert np.isclose(c.inertia_matrix[0, 0], 0.25)
    s = fm.RigidBody.sphere(5.0, 1.0)
    assert np.isclose(s.inertia_matrix[2, 2], 2.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(mass=0.0), "mass must be a positive"),
        (dict(mass=-1.0), "mass must be a positive"),
        (dict(mass=1.0, inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]), "not symmetric"),
        (dict(mass=1.0, inertia=(-1, 1, 1)), "positive semi-definite"),
        (dict(mass=1.0, inertia=(1, 1, 3)), "triangle inequality"),
        (dict(mass=1.0, com=(0, 0)), "com must be 3"),
        (dict(mass=1.0, inertia=(1, 2)), "inertia must be a 3x3"),
    ],
)
def test_bad_bodies_raise_clear_errors(kwargs, match):
    with pytest.raises(fm.ModelError, match=match):
        fm.RigidBody(**kwargs)


def test_validation_errors_name_the_component():
    m = fm.Model("v")
    m.a = fm.RigidBody(1.0)
    stray = fm.RigidBody(1.0)
    m.j = fm.Revolute(m.ground, m.a)
    m.k = fm.Revolute(m.a, stray)
    with pytest.raises(fm.ModelError, match="joint 'k'.*not in model"):
        m.validate()
    del m.k
    m.island = fm.RigidBody(1.0)
    with pytest.raises(fm.ModelError, match=r"\['island'\] have no path to ground"):
        m.topology()
    with pytest.raises(fm.ModelError, match="unknown formulation"):
        m.j2 = fm.Free(m.ground, m.island)
        m.compile("lagrangian")
    with pytest.raises(fm.ModelError, match="Frame on 'a'.*3 numbers"):
        fm.Frame(m.a, (0, 1))
    with pytest.raises(fm.ModelError, match="unit norm"):
        fm.Frame(m.a, (0, 0, 0), (1.0, 1.0, 0, 0))


def test_force_elements_validate_input():
    m = fm.Model()
    m.a = fm.RigidBody(1.0)
    m.j = fm.Revolute(m.ground, m.a)
    with pytest.raises(fm.ModelError, match="non-ground"):
        fm.PointForce(m.ground, (0, 0, 0), (1, 0, 0))
    with pytest.raises(fm.ModelError, match="give 1 values"):
        fm.JointForce(m.j, [1.0, 2.0])
    with pytest.raises(fm.ModelError, match="g must be 3"):
        fm.Gravity((0, 9.81))


def test_simulate_results_give_body_poses_on_request():
    m = fm.Model()
    m.a = fm.RigidBody.rod(1.0, 1.0, radius=0.02, origin="end")
    m.j = fm.Revolute(m.ground, m.a, parent_frame=(0, 1.0, 0))
    m.g = fm.Gravity((0, -9.81, 0))
    res = m.simulate(0.2, dt=1e-3, integrator="rk4")
    assert "a" not in res.body_series and not res.extra  # lazy
    th = res.joint("j").q[:, 0]
    e = res.body("a").orientation
    assert np.allclose(2 * np.arctan2(e[:, 3], e[:, 0]), th, atol=1e-12)
    assert np.allclose(res.body("a").position, [0, 1.0, 0], atol=1e-14)


def test_a_change_deep_in_a_block_reaches_compiled_systems():
    """mark_changed travels from a member of an indexed component in a sub-block up to the
    model: a compiled system then gives the numbers of a freshly built model."""

    def build(mass):
        m = fm.Model()

        def arm(b):
            b.links = fm.RigidBody(
                range(2), rule=lambda blk, i: fm.RigidBody.rod(1.0, 1.0, radius=0.02, origin="end")
            )
            b.joints = fm.Revolute(
                range(2),
                rule=lambda blk, i: fm.Revolute(
                    m.ground if i == 0 else blk.links[0],
                    blk.links[i],
                    parent_frame=(0, 0, 0) if i == 0 else (1.0, 0, 0),
                ),
            )

        m.arm = fm.Block(rule=arm)
        m.arm.links[1].mass = mass
        m.g = fm.Gravity((0, -9.81, 0))
        return m

    m = build(1.0)
    s = m.compile("recursive")
    q, qd = np.array([0.3, -0.4]), np.array([0.5, 1.0])
    before = s.forward_dynamics(q, qd).qdd
    r = m.revision
    m.arm.links[1].mass = 3.0
    assert m.revision == r + 1
    after = s.forward_dynamics(q, qd).qdd
    fresh = build(3.0).compile("recursive").forward_dynamics(q, qd).qdd
    np.testing.assert_array_equal(after, fresh)
    assert np.abs(after - before).max() > 1e-3
    loose = fm.Block()  # a block outside any model: a change has no model to tell
    loose.b = fm.RigidBody(1.0)
    loose.b.mass = 2.0
    assert float(loose.b.mass) == 2.0 and loose.model() is None
