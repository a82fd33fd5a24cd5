"""Force elements in the compiled recursive loop (flexmbd.recursive._nbforces) against the
Python path, which applies the same elements through their ``wrenches`` and
``generalized_force`` methods: the same equations, so the same numbers to round-off."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.constraints.projection import Projector

from .example_scripts import example

ALL = ("sda", "sda_ground", "pw", "pb", "tw", "tb", "drive")


def loaded_four_bar(time_functions=False, c=0.8, fa=2.0, elements=ALL, closed=True):
    """Planar four-bar (closed by a spatial revolute, 2 of 5 cut equations redundant)
    under gravity with every compiled force element: an SDA between two bodies (spring,
    damper, actuator), an SDA to the ground, point forces in world and body axes, point
    torques in world and body axes and a joint torque. ``time_functions``: the same loads
    as functions of time (constant values), which keep the model on the Python path;
    ``elements``: the names of the loads to add; ``closed=False``: the open chain."""

    def f(v):
        return (lambda t: v) if time_functions else v

    m = fm.Model("loaded_four_bar")
    m.crank = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.coupler = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.rocker = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.a = fm.Revolute(m.ground, m.crank, q0=[1.2])
    m.b = fm.Revolute(m.crank, m.coupler, parent_frame=(1.0, 0, 0), q0=[-1.2])
    m.c = fm.Revolute(m.coupler, m.rocker, parent_frame=(1.0, 0, 0), q0=[-1.94])
    if closed:
        m.d = fm.Revolute(
            m.rocker, m.ground, parent_frame=(1.0, 0, 0), child_frame=(1.0, 0, 0), cut=True
        )
    m.g = fm.Gravity((0, -9.81, 0))
    loads = dict(
        sda=lambda: fm.SpringDamperActuator(
            m.crank, (0.7, 0.05, 0.0), m.rocker, (0.4, -0.03, 0.0), k=40.0, c=c, l0=0.6, fa=fa
        ),
        sda_ground=lambda: fm.SpringDamperActuator(
            m.ground, (0.3, 1.5, 0.0), m.coupler, (0.5, 0.0, 0.0), k=25.0, c=c
        ),  # l0 from the initial state
        pw=lambda: fm.PointForce(m.coupler, (0.3, 0.02, 0.0), f([1.5, -2.0, 0.3])),
        pb=lambda: fm.PointForce(m.rocker, (0.6, 0.0, 0.01), f([0.0, 3.0, 0.0]), frame="body"),
        tw=lambda: fm.PointTorque(m.crank, f([0.1, -0.2, 0.7])),
        tb=lambda: fm.PointTorque(m.coupler, f([0.0, 0.0, -0.4]), frame="body"),
        drive=lambda: fm.JointForce(m.a, (lambda t, q, qd: [1.3]) if time_functions else [1.3]),
    )
    for name in elements:
        setattr(m, name, loads[name]())
    return m


def state(s):
    q, qd = s.initial_state(qd=np.linspace(0.5, -0.4, s.nv))
    return s.project(q, qd)  # a corrected state: the projector's QR selects the rows


def test_the_force_table_covers_constant_elements_only():
    s = loaded_four_bar().compile("recursive")
    fi, ff, tau_c, _ = s.compiled_rk4()[3]
    assert fi.shape == (6, 4) and tau_c[0] == 1.3  # 2 SDAs, 2 forces, 2 torques
    s2 = loaded_four_bar(time_functions=True).compile("recursive")
    assert s2.compiled_rk4() is None and s.compiled_rk4() is not None


def test_compiled_forces_equal_the_python_path():
    s = loaded_four_bar().compile("recursive")
    q, qd = state(s)
    fast = s.forward_dynamics(q, qd)
    # the Python path of the same system (no selected rows: the QR path)
    slow = s.forward_dynamics(q, qd, projector=Projector(s.constraints))
    # and of the model with the loads as time functions (force elements in Python)
    s2 = loaded_four_bar(time_functions=True).compile("recursive")
    other = s2.forward_dynamics(q, qd)
    for ref in (slow, other):
        assert np.abs(fast.qdd - ref.qdd).max() <= 1e-12 * np.abs(ref.qdd).max()
        assert np.abs(fast.lam - ref.lam).max() <= 1e-12 * np.abs(ref.lam).max()
        scale = np.abs(ref.reactions).max()
        assert np.abs(fast.reactions - ref.reactions).max() <= 1e-12 * scale
        acc = np.abs(ref.body_accelerations).max()
        assert np.abs(fast.body_accelerations - ref.body_accelerations).max() <= 1e-12 * acc
    qdd, lam = s.accelerations(q, qd, compiled=True)
    assert np.abs(qdd - slow.qdd).max() <= 1e-12 * np.abs(slow.qdd).max()
    # the loads matter: without them the accelerations differ at order one
    bare = loaded_four_bar(elements=()).compile("recursive").forward_dynamics(q, qd)
    assert np.abs(fast.qdd - bare.qdd).max() > 1.0


def test_tree_with_compiled_forces_equals_the_python_path():
    s = loaded_four_bar(closed=False).compile("recursive")
    slow = loaded_four_bar(closed=False, time_functions=True).compile("recursive")
    assert s.compiled_forces() is not None and slow.compiled_forces() is None
    q, qd = s.q0(), np.array([0.5, -0.3, 0.8])
    tau = np.array([0.2, -0.1, 0.05])
    qdd, reac = s.qdd_and_reactions(q, qd, tau)
    qdd_p, reac_p = slow.qdd_and_reactions(q, qd, tau)
    assert np.abs(qdd - qdd_p).max() <= 1e-12 * np.abs(qdd_p).max()
    assert np.abs(reac - reac_p).max() <= 1e-12 * np.abs(reac_p).max()
    assert np.abs(s.qdd(q, qd, tau) - qdd_p).max() <= 1e-12 * np.abs(qdd_p).max()
    # energies and powers at one state: compiled table vs the elements' methods
    pe, pe_p = s.potential_energies(q), slow.potential_energies(q)
    assert abs(pe["spring"] - pe_p["spring"]) <= 1e-13 * abs(pe_p["spring"])
    pw, pw_p = s.powers(q, qd, 0.0, tau), slow.powers(q, qd, 0.0, tau)
    for key in ("p_damper", "p_actuator", "p_external"):
        assert abs(pw[key] - pw_p[key]) <= 1e-13 * max(abs(v) for v in pw_p.values())
    # one state's forward dynamics (Python loads, the documented call) agrees too
    fd = s.forward_dynamics(q, qd, tau)
    assert np.abs(fd.qdd - qdd).max() <= 1e-12 * np.abs(qdd).max()


@pytest.mark.parametrize("integrator", ["rk4", "dop853"])
def test_compiled_run_equals_the_python_run_and_balances_energy(integrator):
    kw = dict(dt=1e-3, integrator=integrator, rtol=1e-10, atol=1e-12)
    fast = loaded_four_bar().compile("recursive").simulate(0.3, **kw)
    slow = loaded_four_bar(time_functions=True).compile("recursive").simulate(0.3, **kw)
    assert np.abs(fast.q - slow.q).max() < 1e-10
    assert np.abs(fast.reactions - slow.reactions).max() < 1e-8 * np.abs(slow.reactions).max()
    E = fast.energy
    # the compiled energy terms of the force table against the elements' own methods
    for key in ("spring", "damper_work", "actuator_work", "external_work", "total"):
        assert np.abs(E[key] - slow.energy[key]).max() < 1e-9 * np.abs(slow.energy[key]).max()
    assert E["damper_work"][-1] > 1e-3  # the dampers dissipate
    # work-energy balance (trapezoidal works over 1 ms samples)
    assert np.abs(E["numerical_dissipation"]).max() < 1e-5 * np.abs(E["total"]).max()


def test_conservative_loads_keep_the_energy():
    s = loaded_four_bar(c=0.0, fa=0.0, elements=("sda", "sda_ground"))
    res = s.compile("recursive").simulate(1.0, dt=1e-3, integrator="rk4")
    E = res.energy["total"]
    exchanged = np.ptp(res.energy["spring"])  # ~24 J between spring, gravity, motion
    assert exchanged > 1.0
    assert np.abs(E - E[0]).max() < 1e-8 * exchanged


def _squeezer():
    return example("andrews_squeezer")


def test_squeezer_compiled_dop853_matches_test_set_and_python_path():
    mod = _squeezer()
    s = mod.build().compile("recursive")
    st = s.stepper(0.03, dt=1e-3, integrator="dop853", rtol=1e-9, atol=1e-11)
    assert type(st.solver).__name__ == "_CompiledDOP853"
    fast = s.simulate(0.03, dt=1e-3, integrator="dop853", rtol=1e-9, atol=1e-11)
    # the Python path: the drive as a function (a user force law)
    slow = (
        mod.build(drive_function=True)
        .compile("recursive")
        .simulate(0.03, dt=1e-3, integrator="dop853", rtol=1e-9, atol=1e-11)
    )
    for res in (fast, slow):
        got = mod.angles(res)
        assert min(mod.digits(got[a], mod.REFERENCE[a]) for a in mod.ANGLES) >= 8.0
    # the same steps to round-off
    assert fast.meta["steps"] == slow.meta["steps"]
    assert np.abs(fast.q - slow.q).max() < 1e-9 * np.abs(slow.q).max()
    assert np.abs(fast.reactions - slow.reactions).max() < 1e-7 * np.abs(slow.reactions).max()
    # work-energy: the constant drive torque's work mom (beta - beta0) is the change of
    # kinetic and spring energy (no gravity, no damper)
    dE = fast.energy["total"] - fast.energy["total"][0]
    beta = fast.joint("beta").q[:, 0]
    assert np.abs(dE - mod.mom * (beta - beta[0])).max() < 1e-8 * np.abs(dE).max()
