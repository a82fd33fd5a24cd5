"""Energy fields of the recursive formulation: the absolute formulation's definitions.

At one state (joint coordinates, mapped to the absolute body coordinates of the same
motion), ``kinetic``, ``gravity``, ``spring``, ``potential`` and ``total`` of the
recursive System equal the absolute :class:`~flexmbd.absolute.energy.EnergyMeter`'s, on
the flexible pendulum (strain energy) with an SDA and on the double pendulum with an SDA
(spring potential); and a run of every (formulation, integrator) pair fills them.
"""

import numpy as np
import pytest
from models import double_pendulum, flexible_pendulum

import flexmbd as fm
from flexmbd.integrators import registry
from flexmbd.recursive.energy import energy_histories

FIELDS = ("kinetic", "gravity", "spring", "potential", "total")


def _sda_pendulum():
    m = double_pendulum(elbow_axis=(0.2, 0.3, 1.0))
    m.s = fm.SpringDamperActuator(
        m.ground, (0.5, 0.5, 0.1), m.lower, (0.6, 0.05, 0.0), k=40.0, c=3.0, l0=0.9, fa=2.5
    )
    return m


def _sda_flexible():
    p = flexible_pendulum()
    p.s = fm.SpringDamperActuator(
        p.beam,
        fm.Frame(p.beam, (1.0, 0.025, 0.025)),
        p.ground,
        (1.2, -0.3, 0.05),
        k=2e3,
        c=5.0,
        l0=0.2,
    )
    return p


@pytest.mark.parametrize("build", [_sda_pendulum, _sda_flexible])
def test_recursive_energies_equal_absolute_at_the_same_state(build):
    model = build()
    rec, ab = model.compile("recursive"), model.compile("absolute")
    rng = np.random.default_rng(7)
    q0 = rec.q0() if callable(rec.q0) else rec.q0
    q = q0 + 0.02 * rng.standard_normal(rec.nq)
    q[:1] += 0.5
    qd = rng.standard_normal(rec.nv) * np.where(np.arange(rec.nv) < 2, 1.5, 0.05)
    for sl in rec.modal_slices.values():  # a visibly deformed beam
        q[sl.q] = 1e-3 * rng.standard_normal(q[sl.q].shape)
    qa, qda = ab.state_from_bodies(rec.body_states(q, qd))
    for name, sl in rec.modal_slices.items():
        qa[ab.modal_slices[name].q] = q[sl.q]
        qda[ab.modal_slices[name].v] = qd[sl.v]
    ref = ab.energy_meter().state(qa, qda, 0.0)
    got = energy_histories(rec, np.zeros(1), q[None], qd[None])
    for k in FIELDS:
        assert got[k][0] == pytest.approx(ref[k], rel=1e-11, abs=1e-11), k
    assert abs(ref["spring"]) > 1e-3 and abs(ref["gravity"]) > 1e-2  # both fields at work


def test_every_pair_fills_gravity_and_spring():
    """The same fields in both formulations over a short run of the SDA pendulum; the
    recursive runs agree with the absolute ones within the integrators' errors."""
    runs = {
        pair: _sda_pendulum().simulate(0.05, dt=1e-3, integrator=pair[1], formulation=pair[0])
        for pair in registry.valid_pairs()
    }
    ref = runs[("recursive", "dop853")].energies
    for pair, res in runs.items():
        e = res.energies
        for k in FIELDS:
            assert e[k] is not None and e[k].shape == res.t.shape, (pair, k)
        np.testing.assert_allclose(e.potential, e.gravity + e.spring, atol=1e-12)
        for k in ("gravity", "spring"):
            assert abs(e[k][-1] - ref[k][-1]) < 1e-4 * (1 + abs(ref[k][-1])), (pair, k)


WORKS = ("damper_work", "actuator_work", "external_work", "numerical_dissipation")


def test_works_agree_across_formulations_and_close_the_balance():
    """The SDA pendulum (damper, actuator, spring) with a JointForce and a point force:
    every formulation reports the same works (the trapezoidal rule over the samples,
    dt = 1e-3) within 0.2 %, and the energy balance closes at second order."""

    def build():
        m = _sda_pendulum()
        m.t2 = fm.JointForce(m.elbow, lambda t, q, qd: np.array([-2.0 * q[0] - 0.3 * qd[0]]))
        m.push = fm.PointForce(m.upper, (0.5, 0.0, 0.0), force=(1.0, 1.5, 0.0))
        return m

    runs = {
        pair: build().simulate(0.1, dt=1e-3, integrator=pair[1], formulation=pair[0])
        for pair in (
            ("recursive", "rk4"),
            ("recursive", "dop853"),
            ("absolute", "generalized-alpha"),
            ("absolute", "newmark"),
        )
    }
    ref = runs[("recursive", "dop853")].energies
    for k in WORKS[:3]:
        assert abs(ref[k][-1]) > 1e-3, k  # every work is at play
    for pair, res in runs.items():
        e = res.energies
        for k in WORKS:
            assert e[k] is not None and e[k].shape == res.t.shape, (pair, k)
        for k in WORKS[:3]:
            assert abs(e[k][-1] - ref[k][-1]) < 2e-3 * abs(ref[k][-1]), (pair, k)
    # the balance closes: RK4's remainder is the works' O(h^2) quadrature error
    # (measured -6.9e-6 J at dt = 1e-3, -1.7e-6 J at 5e-4, of 0.022 J dissipated)
    rk4 = runs[("recursive", "rk4")].energies
    half = build().simulate(0.1, dt=5e-4, integrator="rk4").energies
    assert np.abs(rk4.numerical_dissipation).max() < 5e-4 * abs(rk4.damper_work[-1])
    ratio = rk4.numerical_dissipation[-1] / half.numerical_dissipation[-1]
    assert 3.5 < ratio < 4.5
