"""Shooting sensitivities (flexmbd.pyomo.shooting) against finite differences of whole
simulations: parameters of the seed's slider-crank SDA, torque-profile coefficients of a
pendulum with a viscous bearing. Runs without Pyomo."""

import sys
from pathlib import Path

import numpy as np
import pytest

import flexmbd as fm
import flexmbd.pyomo as fmo
from flexmbd.pyomo.shooting import Shooting

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))


def _fd(fun, z, j, rel=1e-3):
    """Central difference of a whole simulation output along z[j] (the outputs are smooth;
    1e-3 relative keeps the Newton tolerance's noise below the truncation error)."""
    e = rel * max(abs(z[j]), 1.0)
    zp, zm = np.array(z, float), np.array(z, float)
    zp[j] += e
    zm[j] -= e
    return (fun(zp) - fun(zm)) / (2 * e)


def test_slider_crank_sda_parameter_sensitivities_match_finite_differences():
    from sda_slider_crank import build

    m = build(k=2e4, c=1e2)
    P = fmo.parameters(m)
    P.sda.k.free(bounds=(0.0, 1e6))
    P.sda.c.free(bounds=(0.0, 1e4))
    sh = Shooting(m.compile("absolute"), 0.2, 0.01, P.free_parameters())
    z0 = np.array([2e4, 1e2])
    res = sh.simulate(z0)
    F, dF = sh.joint_force(res, "j_crank")
    assert np.all(res.iterations <= 5)
    for j in range(2):
        fd = _fd(lambda z: sh.joint_force(sh.simulate(z, sensitivities=False), "j_crank")[0], z0, j)
        assert np.max(np.abs(fd - dF[:, :, j])) < 1e-6 * np.max(np.abs(fd))
        fdq = _fd(lambda z: sh.simulate(z, sensitivities=False).q, z0, j)
        assert np.max(np.abs(fdq - res.dq[:, :, j])) < 1e-6 * np.max(np.abs(fdq))


def test_compiled_steps_equal_the_python_terms_to_round_off():
    """The driven revolution of the design example (its first 20 steps): the compiled path
    (engine residuals, Jacobians and Phi_q) takes the same Newton iterations as the Python
    terms and gives the same trajectory, bearing force and sensitivities to round-off."""
    import pyomo_design as ex

    d, _ = ex.peak_problem(steps_per_rev=60)
    sh = Shooting(d.system, 20 * d.h, d.h, d.params, beta=d.beta, gamma=d.gamma)
    assert sh.compiled  # the engine runs the slider-crank (SDA, push, driver)
    z = np.array([2e4, 1e2])
    out = {}
    for compiled in (True, False):
        sh.compiled = compiled
        r = sh.simulate(z)
        out[compiled] = (r, *sh.joint_force(r, "j_crank"))
    (r1, F1, dF1), (r0, F0, dF0) = out[True], out[False]
    np.testing.assert_array_equal(r1.iterations, r0.iterations)
    assert np.abs(r1.q - r0.q).max() < 1e-14 * np.abs(r0.q).max()  # measured 1.5e-16
    assert np.abs(r1.lam - r0.lam).max() < 1e-12 * np.abs(r0.lam).max()  # 7.6e-15
    assert np.abs(F1 - F0).max() < 1e-12 * np.abs(F0).max()  # 4.4e-14
    assert np.abs(dF1 - dF0).max() < 1e-10 * np.abs(dF0).max()  # 2.4e-12
    assert np.abs(r1.dlam - r0.dlam).max() < 1e-10 * np.abs(r0.dlam).max()


def test_compiled_nodes_and_shooting_need_an_engine_model():
    m = fm.Model("p")
    m.link = fm.RigidBody(mass=2.0, inertia=np.diag([0.01, 0.2, 0.2]), com=(0.5, 0, 0))
    m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1))
    m.fric = fm.JointForce(  # a Python law
        m.hinge,
        lambda t, q, qd: -0.3 * qd,
        dfdq=lambda t, q, qd: np.zeros((1, 1)),
        dfdqd=lambda t, q, qd: np.array([[-0.3]]),
    )
    s = m.compile("absolute")
    assert not fmo.NodeResiduals(s, [0.0]).compiled
    with pytest.raises(fm.errors.ModelError, match="compiled engine does not run this model"):
        fmo.NodeResiduals(s, [0.0], compiled=True)
    assert not Shooting(s, 0.1, 0.01).compiled
    with pytest.raises(fm.errors.ModelError, match="compiled engine does not run this model"):
        Shooting(s, 0.1, 0.01, compiled=True)


def _pendulum_with_input():
    """A pendulum driven by an input profile, with a free bearing friction."""
    m = fm.Model("p")
    m.link = fm.RigidBody(mass=2.0, inertia=np.diag([0.01, 0.2, 0.2]), com=(0.5, 0, 0))
    m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1))
    m.g = fm.Gravity((0, -9.81, 0))
    m.tau = fmo.JointInput(m.hinge)
    m.fric = fmo.ViscousBearing(m.hinge, c=0.3)
    P = fmo.parameters(m)
    P.fric.c.free(bounds=(0.0, 1.0))

    def profile(t, th):  # tau = th0 sin(pi t) + th1 sin(2 pi t)
        b = np.array([np.sin(np.pi * t), np.sin(2 * np.pi * t)])
        return np.array([b @ th]), b[None, :]

    return m, P, profile


def test_compiled_shooting_with_inputs_equals_the_python_terms_to_round_off():
    """Input profile and bearing friction as compiled laws: same Newton iterations,
    trajectory, inputs and sensitivities (friction and profile coefficients) as the
    Python terms to round-off."""
    m, P, profile = _pendulum_with_input()
    sh = Shooting(m.compile("absolute"), 0.5, 0.01, P.free_parameters(), [m.tau], profile, ntheta=2)
    assert sh.compiled and sh.res.compiled  # the engine runs both laws
    out = {}
    for compiled in (True, False):
        sh.compiled = compiled
        assert sh.res.compiled == sh.newton.compiled == compiled
        out[compiled] = sh.simulate([0.3], [4.0, -2.0])
    r1, r0 = out[True], out[False]
    np.testing.assert_array_equal(r1.iterations, r0.iterations)
    np.testing.assert_array_equal(r1.u, r0.u)
    assert np.ptp(r0.q[:, 6]) > 0.05  # it swings
    assert np.abs(r1.q - r0.q).max() < 1e-14 * np.abs(r0.q).max()  # measured 2.2e-16
    assert np.abs(r1.lam - r0.lam).max() < 1e-12 * np.abs(r0.lam).max()  # 4.6e-15
    assert np.abs(r1.dq - r0.dq).max() < 1e-12 * np.abs(r0.dq).max()  # 3.5e-16
    assert np.abs(r1.dlam - r0.dlam).max() < 1e-11 * np.abs(r0.dlam).max()  # 1.9e-14


def test_pendulum_torque_profile_and_friction_sensitivities_match_finite_differences():
    m, P, profile = _pendulum_with_input()
    sh = Shooting(m.compile("absolute"), 0.5, 0.01, P.free_parameters(), [m.tau], profile, ntheta=2)
    z0 = np.array([0.3, 4.0, -2.0])

    def tip(z):
        r = sh.simulate(z[:1], z[1:], sensitivities=False)
        return r.q[:, 3:7]  # the link's Euler parameters (-)

    res = sh.simulate(z0[:1], z0[1:])
    assert np.ptp(res.q[:, 6]) > 0.05  # it swings
    for j in range(3):
        fd = _fd(tip, z0, j)
        assert np.max(np.abs(fd - res.dq[:, 3:7, j])) < 1e-6 * np.max(np.abs(fd))


def test_design_over_one_revolution_finds_the_bound_optimum_and_its_reason(tmp_path):
    import pyomo_design as ex

    out = ex.main(**ex.QUICK, outdir=tmp_path)
    assert out["success"]
    # the seed's SDA (k = 2e4 N/m) triples the peak; the optimum removes it: both design
    # variables on their lower bounds, where the peak's gradient points out of the box
    assert out["peak_opt"] < 0.4 * out["peak_seed"]
    assert out["k"] < 1e-6 * ex.BOUNDS["k"][1] and out["c"] < 1e-6 * ex.BOUNDS["c"][1]
    assert out["gradient"][0] > 0 and out["gradient"][1] > 0
    assert out["peak_opt"] == pytest.approx(out["peak_none"], rel=1e-9)
    # plausibility: the 1 kN push reaches the bearing whole at the in-line positions and
    # at most as push / cos(psi_max) through the inclined rod (quasi-static; 1155 N),
    # inertia at 1 rad/s shifting it by well under 20 %
    psi_max = np.arcsin(ex.R_CRANK / ex.L_ROD)
    assert 1000.0 < out["peak_opt"] < 1.2 * 1000.0 / np.cos(psi_max)
    assert (tmp_path / "pyomo_design.png").stat().st_size > 10_000


@pytest.mark.slow
def test_design_in_the_seed_load_case_lowers_the_peak_to_a_stationary_optimum(tmp_path):
    import pyomo_design as ex

    out = ex.main(**ex.QUICK_SEED, outdir=tmp_path)
    assert out["success"]
    # the optimum's peak is the simulated peak (not just the bound variable) and is lower
    assert out["peak_opt"] < 0.6 * out["peak_seed"]
    # no better design nearby: the peak at perturbed feasible designs is not lower
    sh, first = ex.peak_problem("seed", t_end=ex.QUICK_SEED["t_end"], dt=ex.QUICK_SEED["dt"])
    p = np.array([out["k"], out["c"]])
    for dp in ([1e3, 0.0], [0.0, 100.0], [0.0, -100.0]):
        q = np.clip(p + dp, 0.0, None)
        F, _ = ex.bearing_force(sh, q, sensitivities=False)
        assert np.linalg.norm(F[first:], axis=1).max() >= out["peak_opt"] * (1 - 1e-6)


def test_slew_by_shooting_leaves_less_vibration_than_cycloidal_and_bang_bang(tmp_path):
    import pyomo_slew as ex

    out = ex.main(**ex.QUICK, outdir=tmp_path)
    rows = out["rows"]
    assert out["failure"] is None and "optimized" in rows
    opt, cyc, bang = rows["optimized"], rows["cycloidal"], rows["bang-bang"]
    assert abs(opt["angle"] - 90.0) < 1e-3  # rest to rest, 90 degrees
    assert opt["peak_torque"] <= ex.U_MAX * out["u_bb"] * (1 + 1e-9)  # torque bound
    assert opt["amplitude"] < 0.01 * cyc["amplitude"]
    assert cyc["amplitude"] < 0.1 * bang["amplitude"]
    assert (tmp_path / "pyomo_slew.png").stat().st_size > 10_000
