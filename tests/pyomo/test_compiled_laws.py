"""ViscousBearing and JointInput as compiled laws of the absolute engine.

On a joint with one coordinate and one speed each element is a linear law (``law``,
``actuator``) that the engine's force table evaluates; its Python law stays the
reference. Runs without Pyomo.
"""

import numpy as np
import pytest

import flexmbd as fm
import flexmbd.pyomo as fmo
from flexmbd.absolute.engine import Engine


def pendulum(joint="revolute"):
    m = fm.Model("p")
    m.link = fm.RigidBody(mass=2.0, inertia=np.diag([0.01, 0.2, 0.2]), com=(0.5, 0, 0))
    if joint == "revolute":
        m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1))
    else:
        m.hinge = fm.Prismatic(m.ground, m.link, axis=(1, 0, 0))
    return m


def nodes(res, s, rng):
    q0 = s.initial_conditions()[0]
    q = np.tile(q0, (res.N, 1)) + 1e-2 * rng.standard_normal((res.N, s.n))
    q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    return res.join(
        q,
        *(rng.standard_normal((res.N, k)) for k in (s.n, s.n, s.nc)),
        rng.standard_normal((res.N, res.nu)),
    )


def engine_and_python(res, X):
    out = {}
    for c in (True, False):
        res.compiled = c
        r, J = res.evaluate(X)
        out[c] = (r, J.toarray())
    return out[True], out[False]


@pytest.mark.parametrize("joint", ["revolute", "prismatic"])
def test_the_laws_reproduce_the_python_forces_and_jacobians_bit_for_bit(joint):
    """The law's formula ``fa(t) - k (q - q0) - c qd`` (the engine's and the recursive
    table's operations) gives the element's Python force and Jacobians exactly."""
    m = pendulum(joint)
    m.fric = fmo.ViscousBearing(m.hinge, 0.37)
    m.u = fmo.JointInput(m.hinge, lambda t: [2.0 * np.sin(3.0 * t)])
    rng = np.random.default_rng(4)
    for el in (m.fric, m.u):
        k, c, x0 = el.law
        for t, q, qd in rng.standard_normal((20, 3)):
            f = el.generalized_force(t, [q], [qd])
            dq, dqd = el.generalized_jacobians(t, [q], [qd])
            assert float(el.actuator(t)) - k * (q - x0) - c * qd == f[0]
            assert (-k, -c) == (dq[0, 0], dqd[0, 0])
    assert m.fric.law == (0.0, 0.37, 0.0) and m.u.law == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("joint", ["revolute", "prismatic"])
def test_engine_bearing_equals_its_python_law(joint):
    """Residual and Jacobian of a pendulum whose only force is the bearing: engine vs
    Python terms to round-off; the bearing's column dF/dv moves with c."""
    rng = np.random.default_rng(5)
    m = pendulum(joint)
    m.fric = fmo.ViscousBearing(m.hinge, 0.8)
    s = m.compile("absolute")
    assert Engine.supports(s)
    res = fmo.NodeResiduals(s, [0.0, 0.1])
    X = nodes(res, s, rng)
    (r1, J1), (r0, J0) = engine_and_python(res, X)
    assert np.abs(r1 - r0).max() < 1e-13 * np.abs(r0).max()
    assert np.abs(J1 - J0).max() < 1e-13 * np.abs(J0).max()
    e = s.engine()
    m.fric.c = 1.8  # a parameter write: same engine, new c
    s.refresh()
    assert s.engine() is e
    (r2, J2), (r3, J3) = engine_and_python(res, X)
    assert np.abs(r2 - r3).max() < 1e-13 * np.abs(r3).max()
    assert np.abs(J2 - J3).max() < 1e-13 * np.abs(J3).max()
    n = s.n  # the node's v columns follow its q columns
    # the bearing's damping -c qd along the joint speed: dF/dv moves with c
    assert np.abs(J2[:n, n : 2 * n] - J1[:n, n : 2 * n]).max() > 0.5


@pytest.mark.parametrize("joint", ["revolute", "prismatic"])
def test_engine_input_equals_its_python_law(joint):
    """A JointInput value and profile: engine residual and Jacobian (its input columns
    included) equal the Python terms' to round-off; a new value reaches the engine at
    the next evaluation, without a rebuild."""
    rng = np.random.default_rng(6)
    m = pendulum(joint)
    m.u = fmo.JointInput(m.hinge)
    s = m.compile("absolute")
    assert Engine.supports(s)
    res = fmo.NodeResiduals(s, [0.0, 0.1, 0.2], (), [m.u])
    X = nodes(res, s, rng)
    (r1, J1), (r0, J0) = engine_and_python(res, X)
    assert np.abs(r1 - r0).max() < 1e-13 * np.abs(r0).max()
    assert np.abs(J1 - J0).max() < 1e-13 * np.abs(J0).max()
    q, v, a, lam, u = res.split(X)
    e = s.engine()
    F = []
    for val in (0.0, 3.0):
        m.u.set_value([val])
        F.append(e.terms(q[0], v[0], a[0], lam[0], 0.0, jac=False)[0])
    assert s.engine() is e
    gen = s.generalized_forces(q[0], v[0], 0.0)
    m.u.set_value([0.0])
    gen0 = s.generalized_forces(q[0], v[0], 0.0)
    dF = -(F[1] - F[0])  # F = R - Q + ...: the input's generalized force
    assert np.abs(dF - (gen - gen0)).max() < 1e-13 * np.abs(gen - gen0).max()
    m.u.set_profile(lambda t: [4.0 * t])
    f_at = [e.terms(q[0], v[0], a[0], lam[0], t, jac=False)[0] for t in (0.0, 0.5)]
    assert np.abs((f_at[0] - f_at[1]) - 2.0 * dF / 3.0).max() < 1e-13 * np.abs(dF).max()


def test_multi_speed_joints_keep_the_python_law():
    """On a joint with more than one speed the elements are Python laws (no compiled
    form): the engine declines the model, the node residuals take the Python terms."""
    m = fm.Model("p")
    m.link = fm.RigidBody(mass=2.0, inertia=np.diag([0.01, 0.2, 0.2]), com=(0.5, 0, 0))
    m.slide = fm.Cylindrical(m.ground, m.link, axis=(1, 0, 0))
    m.fric = fmo.ViscousBearing(m.slide, 0.3)
    m.u = fmo.JointInput(m.slide)
    assert m.fric.law is None and m.fric.actuator is None
    assert m.u.law is None and m.u.actuator is None
    s = m.compile("absolute")
    assert not Engine.supports(s)
    assert not fmo.NodeResiduals(s, [0.0], (), [m.u]).compiled


def test_the_examples_take_the_compiled_path():
    """pyomo_identification (bearing, flexible pendulum) and pyomo_slew (hub input, hub
    and strip): the node residuals of their collocation NLPs and their shooting run on
    the compiled engine."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import pyomo_identification as ident
    import pyomo_slew as slew

    from flexmbd.pyomo.shooting import Shooting

    m, P = ident.build(ident.reduced_strip(2))
    s = m.compile("absolute")
    P.bearing.c.free()
    assert fmo.NodeResiduals(s, [0.0, 0.1], P.free_parameters()).compiled
    assert Shooting(s, 0.1, 0.05, P.free_parameters()).compiled
    m = slew.build(slew.reduced_strip(2))
    s = m.compile("absolute")
    assert fmo.NodeResiduals(s, [0.0, 0.1], (), [m.torque]).compiled
    sh = Shooting(s, 0.1, 0.05, (), [m.torque], lambda t, th: (np.zeros(1), np.zeros((1, 0))))
    assert sh.compiled
