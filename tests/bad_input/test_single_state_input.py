"""The single-state calls (``forward_dynamics``, ``qdd_and_reactions``, ``qdd``) of a rigid
tree, a closed loop and a tree with a flexible body: a ``tau`` of the wrong size is a
ModelError naming tau and the count of speeds (not a numpy broadcasting error), a NaN in
``tau`` makes ``forward_dynamics`` raise a SolverError, and the next clean call is clean."""

import numpy as np
import pytest
import skfem

import flexmbd as fm
import flexmbd.fem as F
from flexmbd.errors import ModelError, SolverError


def chain():
    m = fm.Model("chain")
    prev = m.ground
    for i in range(3):
        b = fm.RigidBody(1.0, (0.1, 0.1, 0.1), com=(0.5, 0, 0))
        setattr(m, f"b{i}", b)
        setattr(m, f"j{i}", fm.Revolute(prev, b, parent_frame=(1.0 if i else 0.0, 0, 0)))
        prev = b
    m.g = fm.Gravity((0, -9.81, 0))
    return m


def loaded_chain():
    """The chain with a spring-damper law and a spring-damper-actuator (compiled force
    table)."""
    m = chain()
    m.sd = fm.JointForce.spring_damper(m.j1, 5.0, 0.2)
    m.sda = fm.SpringDamperActuator(m.b0, (0.5, 0, 0), m.b2, (0.5, 0, 0), k=10.0, c=0.1)
    return m


def four_bar():
    """Planar four-bar of unit rods closed by a cut revolute (coordinates at 45 degrees)."""
    m = chain()
    m.close = fm.Revolute(m.b2, m.ground, parent_frame=(1.0, 0, 0), child_frame=(1.0, 0, 0))
    m.j0.q0, m.j1.q0, m.j2.q0 = [np.pi / 4], [-np.pi / 4 * 2], [-np.pi / 4 * 2]
    return m


def flexible():
    mesh = skfem.MeshHex1.init_tensor(
        np.linspace(0, 1.0, 7), np.linspace(0, 0.05, 2), np.linspace(0, 0.05, 2)
    )
    mat = fm.Material(E=2.1e11, nu=0.3, rho=7850.0)
    strat = fm.CraigBampton(2, interfaces={"A": F.Plane((0, 0, 0), (1, 0, 0))})
    rb = F.reduce(mesh, mat, strat, name="beam")
    m = fm.Model("flex")
    m.b = fm.FlexibleBody(rb)
    m.j = fm.Revolute(m.ground, m.b, child_frame=m.b.interface("A"))
    m.g = fm.Gravity((0, -9.81, 0))
    return m


@pytest.mark.parametrize("build", [chain, loaded_chain, four_bar, flexible])
def test_tau_of_the_wrong_size_names_tau_and_the_speeds(build):
    s = build().compile("recursive")
    q, qd = s.q0(), s.qd0()
    calls = [s.forward_dynamics]
    calls += [getattr(s, n) for n in ("qdd_and_reactions", "qdd") if hasattr(s, n)]
    for call in calls:
        for tau in (np.zeros(s.nv - 1), np.zeros(s.nv + 1), 1.0):
            with pytest.raises(ModelError, match="tau") as err:
                call(q, qd, tau)
            assert str(s.nv) in str(err.value)


@pytest.mark.parametrize("build", [chain, loaded_chain, four_bar, flexible])
def test_a_nan_tau_fails_forward_dynamics_and_the_next_call_is_clean(build):
    s = build().compile("recursive")
    q, qd = s.q0(), s.qd0()
    ref = s.forward_dynamics(q, qd, np.full(s.nv, 0.1))
    tau = np.full(s.nv, 0.1)
    tau[0] = np.nan
    with pytest.raises(SolverError):
        s.forward_dynamics(q, qd, tau)
    again = s.forward_dynamics(q, qd, np.full(s.nv, 0.1))
    assert np.array_equal(again.qdd, ref.qdd) and np.isfinite(ref.qdd).all()
    assert np.array_equal(again.reactions, ref.reactions)
