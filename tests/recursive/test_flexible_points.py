"""Point forces, point torques and spring-damper-actuators on trees with flexible bodies in
the compiled blocks (the point-load table of ``FlexTree.point_loads``, applied by
:func:`flexmbd.recursive._nbloops.flex_point_load` in the blocks' loads and in the Python
path's): the RK4 and adaptive blocks against the Python paths bit for bit, the loads that
keep the Python path, a flexible pendulum held by springs keeping its energy."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.integrators.explicit import TreeStepper
from flexmbd.model.forces import ForceElement
from flexmbd.recursive import _flexblock as FB
from flexmbd.recursive.flexible import FlexTree
from flexmbd.spatial import quat_to_rot

from .test_flexible_rk4 import counted, flex_chain, pendulum, python_path, same_bits


def point_model(timed=True, stiff=False):
    """:func:`flex_chain` (three soft beams, a rigid tip, joint laws, gravity) with every
    kind of point load: an SDA between two beams' deforming interfaces, one from the
    rigid tip to a deforming interface, one from the ground to the tip (no ``l0``: the
    length at the first evaluation); point forces at a deforming interface (world axes),
    at a fixed point of a beam (its body axes) and on the tip; torques on a beam (world
    axes) and on the tip (body axes). With ``timed`` the SDA actuator, the body-axes
    force, the beam's torque and the first joint law's actuator are functions of time."""
    m = flex_chain(n=3, stiff=stiff, act0=None if timed else 1.0)
    b0, b1, b2 = m.b0, m.b1, m.b2
    fa = (lambda t: 1.0 + 20.0 * t) if timed else 1.0
    m.sda = fm.SpringDamperActuator(
        b0, b0.interface("B"), b2, b2.interface("B"), 300.0, 2.0, l0=0.9, fa=fa
    )
    m.sdtip = fm.SpringDamperActuator(m.tip, (0.0, 0.05, 0.0), b1, b1.interface("A"), 80.0, 0.4)
    m.sdg = fm.SpringDamperActuator(m.ground, (0.5, 0.2, 0.1), m.tip, (0.2, 0.0, 0.0), 50.0, 0.5)
    m.push = fm.PointForce(b1, b1.interface("B"), (0.0, 0.0, 2.0))
    fb = (lambda t: (0.0, np.sin(50.0 * t), 1.0)) if timed else (0.0, 0.3, 1.0)
    m.pushb = fm.PointForce(b1, (0.1, 0.0, 0.0), fb, frame="body")
    m.ptip = fm.PointForce(m.tip, (0.1, 0.0, 0.0), (1.0, 0.0, 0.0))
    tq = (lambda t: (30.0 * t, 0.1, 0.2)) if timed else (0.05, 0.1, 0.2)
    m.tor = fm.PointTorque(b2, tq)
    m.tort = fm.PointTorque(m.tip, (0.0, 0.1, 0.2), frame="body")
    return m


def kernel_rows(monkeypatch):
    """The point loads applied from Python (``FlexTree.point_force``, through the
    kernel's table rows) from now on. (The kernel itself stays: other kernels call it.)"""
    rows, inner = [], FlexTree.point_force

    def counted_point_force(self, fe, *a, **k):
        done = inner(self, fe, *a, **k)
        if done and id(fe) in self.point_loads()["rows"]:
            rows.append(self.point_loads()["rows"][id(fe)])
        return done

    monkeypatch.setattr(FlexTree, "point_force", counted_point_force)
    return rows


@pytest.mark.parametrize("stiff, substeps", [(False, 1), (True, 2)])
def test_point_loads_in_rk4_blocks_equal_the_python_path(monkeypatch, stiff, substeps):
    """Every kind of point load (values of time tabulated on the stage times, a free
    length fixed at the first evaluation), geometric stiffening off and on, substeps:
    the blocks' samples are the Python RK4 path's bit for bit (q, qd, qdd with the modal
    accelerations, reactions, body series, energies); every interval ran in the blocks;
    the Python path applies the same rows through the same kernel, four evaluations per
    step; the ground SDA's ``l0`` is the same in both runs (separate models)."""
    kw = dict(dt=2e-4, integrator="rk4", substeps=substeps)
    m_ref = point_model(stiff=stiff)
    rows = kernel_rows(monkeypatch)
    ref = python_path(monkeypatch, lambda: m_ref.compile("recursive").simulate(0.02, **kw))
    n_steps = (len(ref.t) - 1) * substeps
    assert len(rows) >= 8 * 4 * n_steps  # eight rows per evaluation
    m = point_model(stiff=stiff)
    calls = counted(monkeypatch)
    del rows[:]
    res = m.compile("recursive").simulate(0.02, **kw)
    assert sum(calls) == len(res.t) - 1
    assert len(rows) < 8 * 4 * n_steps  # (the rows after the run only)
    same_bits(res, ref)
    assert m.sdg.l0 == m_ref.sdg.l0 > 0.0
    # the loads act: the modal motion differs from the chain's without them
    plain = flex_chain(n=3, stiff=stiff).compile("recursive").simulate(0.02, **kw)
    assert np.abs(plain.body("b1").modal - res.body("b1").modal).max() > 1e-6


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_point_loads_in_adaptive_blocks_equal_scipys_steps(monkeypatch, method):
    """Constant point loads (SDAs with constant actuators, constant forces and torques):
    the adaptive blocks are scipy's ``step()`` on the Python right-hand side bit for
    bit, every accepted step in the blocks."""
    m_ref, m = point_model(timed=False), point_model(timed=False)
    with monkeypatch.context() as mp:
        mp.setattr(TreeStepper, "step_blocks", False)
        ref = m_ref.compile("recursive").simulate(0.003, integrator=method)
    blocks, inner = [], FB.flex_rk_block
    monkeypatch.setattr(FB, "flex_rk_block", lambda *a: blocks.append(inner(*a)) or blocks[-1])
    res = m.compile("recursive").simulate(0.003, integrator=method)
    same_bits(res, ref)
    assert res.meta["steps"] == ref.meta["steps"] and sum(blocks) == res.meta["steps"] > 10


class Drag(ForceElement):
    """A user's force element (Python ``wrenches``): velocity drag on one body."""

    def __init__(self, body):
        super().__init__()
        self.body = body

    def wrenches(self, t, state):
        return [(self.body, np.concatenate([np.zeros(3), -0.1 * state.twist(self.body)[1]]))]


def test_loads_evaluated_in_python_keep_the_python_paths(monkeypatch):
    """A user's force element beside the point loads keeps the Python RK4 (no block, the
    kernel still applies the point loads); values of time take no block of constant
    loads (their compiled attempts: tests/recursive/test_flexible_timed.py)."""
    m = point_model()
    m.drag = Drag(m.tip)
    s = m.compile("recursive")
    assert s.flex.rk4_loads() is None
    calls, rows = counted(monkeypatch), kernel_rows(monkeypatch)
    s.simulate(0.001, dt=2e-4, integrator="rk4")
    assert calls == [] and len(rows) >= 8 * 4 * 5
    blocks, inner = [], FB.flex_rk_block
    monkeypatch.setattr(FB, "flex_rk_block", lambda *a: blocks.append(inner(*a)) or blocks[-1])
    res = point_model().compile("recursive").simulate(0.001, integrator="RK45")
    assert blocks == [] and res.meta["steps"] > 0


def test_flexible_pendulum_on_springs_keeps_its_energy():
    """The undamped soft pendulum (one beam, gravity) held by two undamped SDAs from the
    ground, one to its deforming tip interface, one to a fixed point of the beam (free
    lengths from the first evaluation), in the RK4 blocks: kinetic + gravity + strain
    energy + the springs' ``k (l - l0)^2 / 2`` (the lengths from the results' interface
    poses and body series: an oracle independent of the kernel) is constant to RK4's
    error, which falls by about 32 when the step halves (the modes' amplitude error,
    fifth order over a fixed time, as for the pendulum without springs). A missing or
    wrong modal force of the deforming end would not converge."""
    G1, G2, pb = np.array([1.2, 0.4, 0.1]), np.array([-0.3, 0.5, 0.0]), np.array([0.5, 0.0, 0.0])
    drift = []
    for dt in (5e-5, 2.5e-5):
        m = pendulum()
        b = m.b0
        m.s1 = fm.SpringDamperActuator(m.ground, G1, b, b.interface("B"), 4000.0)
        m.s2 = fm.SpringDamperActuator(m.ground, G2, b, pb, 2500.0)
        res = m.compile("recursive").simulate(0.05, dt=dt, integrator="rk4")
        ser = res.body("b0")
        P1 = ser.interfaces["B"][:, :3]
        P2 = ser.position + np.array([quat_to_rot(x) for x in ser.orientation]) @ pb
        strain = 0.5 * np.einsum("ti,ij,tj->t", ser.modal, b.invariants().K, ser.modal)
        springs = 0.5 * 4000.0 * (np.linalg.norm(P1 - G1, axis=1) - m.s1.l0) ** 2
        springs += 0.5 * 2500.0 * (np.linalg.norm(P2 - G2, axis=1) - m.s2.l0) ** 2
        E = res.energy["kinetic"] + res.energy["gravity"] + strain + springs
        ke = np.ptp(res.energy["kinetic"])
        # the results' spring energy (compiled, the kernel's deformed lengths): the same
        assert np.abs(res.energy["spring"] - (strain + springs)).max() < 1e-12 * E.max()
        assert np.ptp(springs) > 0.1 * ke and np.ptp(strain) > 0.3 * ke  # both take part
        drift.append(np.abs(E - E[0]).max() / ke)
    assert drift[1] < 1e-6 and 16.0 < drift[0] / drift[1] < 40.0, drift


def test_point_load_energies_equal_the_per_state_definitions():
    """Energies and powers of a run with every kind of point load: the compiled history
    (``energy_samples``, one call: SDA springs, dampers and actuators with the ends
    following the deformation, the powers of forces and torques, values of time at each
    sample's time) against the per-state ``kinetic_energy`` / ``potential_energies`` /
    ``powers`` to 1e-13 of the largest value (sums in other orders). The work balance
    closes to the error of the works' trapezoidal rule: the numerical dissipation falls
    by about 4 when the step halves (a missing or wrong power would leave a constant
    part), below 3 % of the damper work at 1e-4 s."""
    diss = []
    for dt in (1e-4, 5e-5):
        s = point_model().compile("recursive")
        res = s.simulate(0.01, dt=dt, integrator="rk4")
        diss.append(np.abs(res.energy["numerical_dissipation"]).max())
        assert diss[-1] < 0.03 * res.energy["damper_work"][-1]
    assert 3.5 < diss[0] / diss[1] < 4.5, diss
    E = s.energy_samples(res.t, res.q, res.qd)
    for key in ("kinetic", "gravity", "spring", "p_damper", "p_actuator", "p_external"):
        assert np.ptp(E[key]) > 0.0, key
    for i in range(0, len(res.t), 40):
        q, qd, t = res.q[i], res.qd[i], res.t[i]
        ref = {"kinetic": s.kinetic_energy(q, qd), **s.potential_energies(q, t)}
        ref.update(s.powers(q, qd, t))
        for key, x in ref.items():
            assert abs(E[key][i] - x) <= 1e-13 * np.abs(E[key]).max(), (key, i)
    assert np.array_equal(res.energy["spring"], E["spring"])
