"""Closed loops with flexible bodies (LoopSystem on the flexible CFA tree) against the
absolute formulation; a short simulation keeps the constraints and conserves energy
(fourth-order drift)."""

import numpy as np
import pytest

import flexmbd as fm

from .test_flexible_cfa import _rel, beam


def fourbar(coupler_kind="cb", closing="spherical"):
    """Crank and rocker (rigid) and a flexible coupler closed at its interface B."""
    m = fm.Model("flex_fourbar")
    m.crank = fm.RigidBody.rod(2.0, 0.3, axis="x", radius=0.02, origin="end")
    m.coupler = fm.FlexibleBody(beam(3, coupler_kind), geometric_stiffening=False)
    m.rocker = fm.RigidBody.rod(1.5, 0.3, axis="x", radius=0.02, origin="end")
    m.j1 = fm.Revolute(m.ground, m.crank, axis=(0, 0, 1), q0=[np.pi / 2], qd0=[2.0])
    m.j2 = fm.Revolute(m.crank, m.coupler, axis=(0, 0, 1), parent_frame=(0.3, 0, 0),
                       child_frame=m.coupler.interface("A"), q0=[-np.pi / 2])
    m.j3 = fm.Revolute(m.ground, m.rocker, axis=(0, 0, 1), parent_frame=(1.0, 0, 0),
                       q0=[np.pi / 2])
    if closing == "spherical":
        m.j4 = fm.Spherical(m.coupler, m.rocker, parent_frame=m.coupler.interface("B"),
                            child_frame=(0.3, 0, 0))
    else:  # a universal joint whose child frame is the deforming interface
        m.j4 = fm.Universal(m.rocker, m.coupler, axis1=(0, 0, 1), axis2=(0, 1, 0),
                            parent_frame=(0.3, 0, 0), child_frame=m.coupler.interface("B"))
    m.g = fm.Gravity((0, -9.81, 0.3))
    return m


def _state(ls, rng, scale=1e-4):
    q, qd = ls.tree.q0(), ls.tree.qd0()
    for sq, sv in ls.modal_slices.values():
        q[sq] = scale * rng.normal(size=sq.stop - sq.start)
        qd[sv] = 10 * scale * rng.normal(size=sv.stop - sv.start)
    qd[:3] = rng.normal(size=3)
    return ls.initial_state(q, qd)


@pytest.mark.parametrize("closing", ["spherical", "universal"])
def test_flexible_coupler_loop_against_absolute(closing):
    m = fourbar("cbA" if closing == "universal" else "cb", closing)
    ls = m.compile("recursive")
    assert [j.name for j in ls.cut_joints] == ["j4"]
    q, qd = _state(ls, np.random.default_rng(0))
    assert np.abs(ls.constraints.phi(q)).max() < 1e-12
    fr = ls.forward_dynamics(q, qd)
    ab = m.compile("absolute")
    Q, QD = ab.state_from_bodies(ls.body_states(q, qd))
    for name, (sq, sv) in ls.modal_slices.items():
        Q[ab.modal_slices[name].q], QD[ab.modal_slices[name].q] = q[sq], qd[sv]
    assert np.abs(ab.constraint(Q)).max() < 1e-12
    assert np.abs(ab.constraint_jacobian(Q) @ QD).max() < 1e-10
    fa = ab.forward_dynamics(Q, QD)
    for b in m.bodies():
        for x, y in zip(fr.tree.body_acceleration(b.name), fa.body_acceleration(b.name)):
            assert _rel(x, y) <= 1e-9
    assert _rel(ls.modal(fr.qdd, "coupler"), ab.modal(fa.qdd, "coupler")) <= 1e-9
    for j in m.joints():
        assert _rel(fr.reactions[ls._jindex[j.name]], fa.reaction(j.name)) <= 1e-9, j.name


def test_flexible_loop_simulation_energy_and_constraints():
    # three fixed-interface modes (up to 490 Hz): RK4 steps of 1e-4 s resolve them
    m = fourbar("cbA")
    m.g.g = np.zeros(3)
    ls = m.compile("recursive")
    q, qd = _state(ls, np.random.default_rng(1), scale=1e-3)
    drift = []
    for dt in (2e-4, 1e-4):
        res = ls.simulate(0.01, dt=dt, integrator="rk4", q0=q, qd0=qd)
        E = res.energy["total"]
        drift.append(np.abs(E - E[0]).max() / np.abs(E).max())
        assert res.stats["position_violation"].max() < 1e-12
        assert res.extra["modal:coupler"].shape == (len(res.t), 3)
        assert np.ptp(res.extra["modal:coupler"]) > 1e-4
    assert drift[1] < 1e-3 and drift[1] < drift[0] / 8, drift
