"""AbsoluteSystem API: states, statics, consistent initial conditions, parameters, bad input."""

import os
import sys

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.spatial import rotation_matrix

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples")))


def pendulum_with_spring(k=30.0):
    m = fm.Model("spring_pendulum")
    m.link = fm.RigidBody(2.0, (0.01, 0.2, 0.2), com=(0.5, 0, 0))
    m.hinge = fm.Revolute(m.ground, m.link, q0=[0.0])
    m.g = fm.Gravity((0, -9.81, 0))
    # vertical spring from (1, 1) to the tip, free length 0.5
    m.s = fm.SpringDamperActuator(m.ground, (1.0, 1.0, 0), m.link, (1.0, 0, 0), k=k, c=1.0, l0=0.5)
    return m


def test_compile_and_layout():
    s = pendulum_with_spring().compile("absolute")
    assert isinstance(s, fm.absolute.AbsoluteSystem)
    assert s.n == 7 and s.nc == 6
    assert s.coordinates[:3] == [("link", "x"), ("link", "y"), ("link", "z")]
    assert s.speeds[3] == ("link", "e0d")
    assert s.joint_names == ["hinge"]


def test_body_states_round_trip():
    rng = np.random.default_rng(0)
    s = pendulum_with_spring().compile("absolute")
    R = rotation_matrix((0, 0, 1), 0.7)
    states = {"link": (R, np.array([0.1, 0.2, 0.3]), rng.normal(size=3), rng.normal(size=3))}
    q, qd = s.state_from_bodies(states)
    back = s.body_states(q, qd)["link"]
    for a, b in zip(states["link"], back):
        assert np.allclose(a, b, atol=1e-14)


def test_static_equilibrium_pendulum_spring():
    """Static angle: gravity moment balances the spring (checked by the virtual-work residual)."""
    m = pendulum_with_spring(k=30.0)
    s = m.compile("absolute")
    st = s.static_equilibrium(tol=1e-11)
    assert st.converged and st.iterations <= 8
    R = s.rotation(st.q, "link")
    th = np.arctan2(R[1, 0], R[0, 0])

    def energy(a):
        tip = np.array([np.cos(a), np.sin(a)])
        l = np.linalg.norm(tip - np.array([1.0, 1.0]))
        return 0.5 * 30.0 * (l - 0.5) ** 2 + 2.0 * 9.81 * 0.5 * np.sin(a)

    h = 1e-5
    assert abs((energy(th + h) - energy(th - h)) / (2 * h)) < 1e-6
    assert (energy(th + h) - 2 * energy(th) + energy(th - h)) / h**2 > 0  # a minimum
    assert fm.absolute.static_residual(s, st.q) < 1e-9
    # the hinge reaction carries the weight and the spring force
    assert st.reaction("hinge").shape == (6,)


def test_static_without_jacobian_fails_with_partial():
    m = pendulum_with_spring(k=3e4)
    m.s.exact_jacobian = False
    m.g.g = np.zeros(3)
    s = m.compile("absolute")
    with pytest.raises(fm.ConvergenceError) as info:
        s.static_equilibrium(max_iter=20)
    assert info.value.partial is not None and not info.value.partial.converged


def test_consistent_initial_conditions_close_the_loop():
    import sda_slider_crank as sc

    m = sc.build(k=2e4)
    m.j_guide.q0 = np.array([2.5])  # far from the closing value 4 cos(45 deg) = 2.83
    m.j_crank.qd0 = np.array([1.0])
    s = m.compile("absolute")
    q, qd, qdd, lam = s.initial_conditions()
    assert np.abs(s.constraint(q)).max() < 1e-12
    P = s.constraint_jacobian(q)
    assert np.abs(P @ qd).max() < 1e-12
    assert np.abs(P @ qdd - s.constraints.gamma(q, qd)).max() < 1e-9
    w = s.body_states(q, qd)["crank"][2]
    assert abs(w[2]) > 0.1  # the given speed survives the projection


def test_inconsistent_configuration_is_named():
    m = fm.Model("impossible")
    m.a = fm.RigidBody(1.0, (0.1, 0.1, 0.1))
    m.j1 = fm.Revolute(m.ground, m.a, child_frame=(-1.0, 0, 0))
    m.j2 = fm.Spherical(m.ground, m.a, parent_frame=(5.0, 0, 0), child_frame=(1.0, 0, 0))
    with pytest.raises(fm.FlexmbdError, match="j2|singular|inconsistent"):
        m.compile("absolute").initial_conditions()


def test_parameters_are_re_read():
    m = pendulum_with_spring()
    s = m.compile("absolute")
    q, qd = s.q0(), s.qd0()
    a1 = s.forward_dynamics(q, qd).qdd.copy()
    m.link.mass = 4.0
    a2 = s.forward_dynamics(q, qd).qdd
    assert not np.allclose(a1, a2)
    m.s.k = 0.0
    m.s.c = 0.0
    m.g.g = np.array([0.0, 0.0, 0.0])
    assert np.allclose(s.forward_dynamics(q, qd).qdd, 0.0, atol=1e-12)


def test_sda_default_free_length_is_initial_length():
    m = fm.Model("l0")
    m.b = fm.RigidBody(1.0, (0.1, 0.1, 0.1))
    m.j = fm.Prismatic(m.ground, m.b, axis=(1, 0, 0), q0=[0.7])
    m.s = fm.SpringDamperActuator(m.ground, (0, 0, 0), m.b, (0, 0, 0), k=100.0)
    s = m.compile("absolute")
    assert abs(m.s.l0 - 0.7) < 1e-14
    assert np.allclose(s.forward_dynamics(s.q0(), s.qd0()).qdd, 0.0, atol=1e-12)


def test_bad_input_messages():
    with pytest.raises(fm.ModelError, match="non-negative"):
        fm.SpringDamperActuator(fm.Model("x").ground, (0, 0, 0), fm.RigidBody(1.0), (0, 0, 0), k=-1)
    m = fm.Model("bad")
    m.b = fm.RigidBody(1.0, (0.1, 0.1, 0.1))
    m.j = fm.Revolute(m.ground, m.b)
    with pytest.raises(fm.ModelError, match="same body|one rigid body"):
        fm.SpringDamperActuator(m.b, (0, 0, 0), m.b, (1, 0, 0), k=1.0)
    with pytest.raises(fm.ModelError, match="dt"):
        m.compile("absolute").simulate(1.0)
    with pytest.raises(fm.ModelError, match="jacobian"):
        m.compile("absolute", jacobian="approximate")


def _double_hinge():
    """A pendulum hinged to the ground twice by the same revolute joint: 5 of its 10 joint
    equations are redundant."""
    m = fm.Model("redundant")
    m.a = fm.RigidBody(1.0, (0.1, 0.1, 0.1), com=(0.5, 0, 0))
    m.j1 = fm.Revolute(m.ground, m.a)
    m.j2 = fm.Revolute(m.ground, m.a)
    m.g = fm.Gravity((0, -9.81, 0))
    return m


def test_redundant_joints_are_removed_by_qr_row_selection():
    # the same hinge twice: 5 of the 10 joint equations are redundant; the KKT systems
    # drop them (flexmbd.constraints.redundancy) instead of failing
    s = _double_hinge().compile("absolute")
    q, qd, qdd, lam = s.initial_conditions()
    res = s.simulate(0.01, dt=1e-3, integrator="newmark")
    assert res.stats["constraint_violation"].max() < 1e-10
    single = fm.Model("single")
    single.a = fm.RigidBody(1.0, (0.1, 0.1, 0.1), com=(0.5, 0, 0))
    single.j1 = fm.Revolute(single.ground, single.a)
    single.g = fm.Gravity((0, -9.81, 0))
    ref = single.compile("absolute").forward_dynamics(q, qd)
    np.testing.assert_allclose(s.forward_dynamics(q, qd).qdd, ref.qdd, atol=1e-10)


def test_engine_true_refuses_redundant_joint_equations_before_any_step():
    # the same hinge twice: engine="auto" takes the generic path (QR row selection);
    # engine=True (the engine required) refuses with the reason and the fix instead of a
    # singular Newton matrix at the first step
    from flexmbd.integrators.implicit import integrate

    s = _double_hinge().compile("absolute")
    with pytest.raises(fm.ModelError) as err:
        integrate(s, 0.01, 1e-3, engine=True)
    assert "redundant" in str(err.value) and "engine='auto'" in str(err.value)
    res = integrate(s, 0.01, 1e-3, engine="auto")
    assert res.meta["path"] == "generic"
    assert res.stats["constraint_violation"].max() < 1e-10
