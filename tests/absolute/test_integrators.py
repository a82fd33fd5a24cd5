"""Implicit integrators: order of convergence, energy, statistics, failures."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import flexmbd as fm

TH0 = -np.pi / 2 + 1.0  # one radian from hanging
COM, MASS, IZ = 0.6, 2.0, 0.2


def pendulum():
    m = fm.Model("pendulum")
    m.link = fm.RigidBody(MASS, (0.01, IZ, IZ), com=(COM, 0, 0))
    m.hinge = fm.Revolute(m.ground, m.link, q0=[TH0])
    m.g = fm.Gravity((0, -9.81, 0))
    return m


def reference_angle(t_end):
    I = IZ + MASS * COM**2
    sol = solve_ivp(
        lambda t, y: [y[1], -MASS * 9.81 * COM * np.cos(y[0]) / I],
        [0, t_end],
        [TH0, 0.0],
        rtol=1e-13,
        atol=1e-13,
    )
    return sol.y[0, -1]


@pytest.mark.parametrize(
    "integrator,opts",
    [
        ("newmark", {}),
        ("hht", {"alpha": -0.1}),
        ("generalized-alpha", {"rho_inf": 0.6}),
    ],
)
def test_second_order_convergence(integrator, opts):
    s = pendulum().compile("absolute")
    th = reference_angle(1.0)
    x_ref = np.array([np.cos(th), np.sin(th), 0.0])
    errs = []
    for dt in (0.01, 0.005, 0.0025):
        res = s.simulate(1.0, dt=dt, integrator=integrator, tol=1e-11, energy=False, **opts)
        errs.append(np.linalg.norm(s.rotation(res.q[-1], "link")[:, 0] - x_ref))
    order = np.log2(errs[-2] / errs[-1])
    assert abs(order - 2.0) < 0.1, (errs, order)


def test_force_weighted_hht_is_first_order_with_euler_parameters():
    """Documented limitation of the force-weighted HHT form (a body spinning at constant speed)."""
    m = fm.Model("spin")
    m.b = fm.RigidBody(1.0, (0.3, 0.3, 0.5))
    m.j = fm.Revolute(m.ground, m.b, q0=[0.0], qd0=[3.0])
    s = m.compile("absolute")
    errs = {}
    for form in ("acceleration", "force"):
        e = []
        for dt in (0.02, 0.01):
            res = s.simulate(
                1.0, dt=dt, integrator="hht", alpha=-0.1, form=form, tol=1e-11, energy=False
            )
            x = s.rotation(res.q[-1], "b")[:, 0]
            e.append(np.linalg.norm(x - [np.cos(3.0), np.sin(3.0), 0]))
        errs[form] = np.log2(e[0] / e[1])
    assert abs(errs["acceleration"] - 2) < 0.1
    assert abs(errs["force"] - 1) < 0.2


def test_newmark_energy_drift_bounded():
    """Undamped, unforced spherical pendulum (a precessing top): trapezoidal Newmark keeps the
    energy error bounded (no trend) and of second order in the step."""
    m = fm.Model("top")
    m.top = fm.RigidBody(1.0, (0.02, 0.02, 0.01), com=(0, 0, 0.3))
    m.pivot = fm.Spherical(
        m.ground, m.top, q0=fm.spatial.quat_from_rotvec([0.5, 0.0, 0.0]), qd0=[0.0, 0.0, 40.0]
    )
    m.g = fm.Gravity((0, 0, -9.81))
    s = m.compile("absolute")
    peaks = []
    for dt in (0.01, 0.005):
        res = s.simulate(2.0, dt=dt, integrator="newmark", tol=1e-10)
        E = res.energy["total"]
        drift = np.abs(E - E[0]) / res.energy["kinetic"].max()
        half = len(E) // 2
        assert drift[half:].max() < 2.0 * drift[:half].max()  # bounded, not growing
        peaks.append(drift.max())
        # no dampers/actuators/loads: numerical dissipation is exactly E0 - E
        assert np.allclose(res.energy["numerical_dissipation"], E[0] - E, atol=1e-12)
        assert res.stats["constraint_violation"].max() < 1e-10
    assert peaks[0] < 5e-3
    assert 3.0 < peaks[0] / peaks[1] < 5.0  # O(h^2)


def test_energy_balance_with_damper_actuator_and_load():
    m = fm.Model("balance")
    m.b = fm.RigidBody(2.0, (0.1, 0.2, 0.2), com=(0.4, 0, 0))
    m.j = fm.Revolute(m.ground, m.b, q0=[0.3])
    m.s = fm.SpringDamperActuator(
        m.ground,
        (0.0, -1.0, 0),
        m.b,
        (0.8, 0, 0),
        k=300.0,
        c=4.0,
        fa=lambda t: 20.0 * np.sin(3 * t),
    )
    m.f = fm.PointForce(m.b, (0.8, 0, 0), (0, 5.0, 0))
    m.g = fm.Gravity((0, -9.81, 0))
    s = m.compile("absolute")
    res = s.simulate(1.0, dt=0.004, integrator="newmark", tol=1e-10)
    e = res.energy
    assert e["damper_work"][-1] > 0.1
    assert abs(e["actuator_work"][-1]) > 0.01 and abs(e["external_work"][-1]) > 0.01
    scale = e["damper_work"][-1] + abs(e["actuator_work"]).max() + abs(e["external_work"]).max()
    assert np.abs(e["numerical_dissipation"]).max() < 1e-4 * scale


def test_dissipative_scheme_dissipates():
    s = pendulum().compile("absolute")
    res = s.simulate(1.0, dt=0.02, integrator="generalized-alpha", rho_inf=0.0, tol=1e-10)
    nd = res.energy["numerical_dissipation"]
    assert nd[-1] > 1e-3 * res.energy["kinetic"].max()
    assert np.allclose(nd, res.energy["total"][0] - res.energy["total"])


def test_stats_results_and_reactions():
    s = pendulum().compile("absolute")
    res = s.simulate(0.2, dt=0.01, integrator="newmark", tol=1e-9)
    for key in (
        "newton_iterations",
        "residual",
        "residual_norms",
        "constraint_violation",
        "step_time",
    ):
        assert key in res.stats
    assert res.stats["residual_norms"].shape == (21, 26)
    it = res.stats["newton_iterations"][1:]
    assert it.min() >= 1 and it.max() <= 4
    assert np.all(res.stats["residual"][1:] <= 1e-9)
    assert res.reactions.shape == (21, 1, 6)
    assert res.reaction("hinge").shape == (21, 6)
    assert res.body("link").position.shape == (21, 3)
    assert res.meta["formulation"] == "absolute" and res.meta["integrator"] == "newmark"
    # reactions along the run equal those of forward dynamics at the same states
    fd = s.forward_dynamics(res.q[-1], res.qd[-1], t=res.t[-1])
    assert np.allclose(fd.reaction("hinge"), res.reaction("hinge")[-1], rtol=1e-6, atol=1e-6)


def test_model_simulate_defaults_to_absolute():
    res = pendulum().simulate(0.05, dt=0.01, integrator="generalized-alpha")
    assert res.meta["formulation"] == "absolute"


def test_meta_records_the_path_a_run_took():
    # the whole step loop compiled, the Newton iterations compiled around a Python step
    # loop (a callback), or the engine-free path; the same motion on each
    from flexmbd.integrators.implicit import integrate

    s = pendulum().compile("absolute")
    runs = {
        "compiled": integrate(s, 0.05, 0.01),
        "engine": integrate(s, 0.05, 0.01, callback=lambda t, q, qd: None),
        "generic": integrate(s, 0.05, 0.01, engine=False),
    }
    for path, res in runs.items():
        assert res.meta["path"] == path
        np.testing.assert_allclose(res.q, runs["generic"].q, atol=1e-9)


def test_newton_failure_keeps_partial_results():
    s = pendulum().compile("absolute")
    with pytest.raises(fm.ConvergenceError) as info:
        s.simulate(1.0, dt=0.05, integrator="newmark", tol=1e-14, max_iter=1)
    err = info.value
    assert err.time is not None and err.time > 0
    assert isinstance(err.partial, fm.results.Results)
    assert len(err.partial.t) >= 1 and err.partial.t[-1] < err.time


def test_bad_parameters_named():
    s = pendulum().compile("absolute")
    with pytest.raises(fm.ModelError, match="alpha"):
        s.simulate(0.1, dt=0.01, integrator="hht", alpha=-0.5)
    with pytest.raises(fm.ModelError, match="rho_inf"):
        s.simulate(0.1, dt=0.01, integrator="generalized-alpha", rho_inf=1.5)
    with pytest.raises(fm.ModelError, match="euler.*newmark.*generalized-alpha"):
        s.simulate(0.1, dt=0.01, integrator="euler")


def test_scaling_keeps_small_steps_well_conditioned():
    """The Newton matrix tends to [M Phi_q^T; Phi_q 0] as h -> 0 (no O(h^-2) spread)."""
    s = pendulum().compile("absolute")
    q, qd, qdd, lam = s.initial_conditions()
    conds = []
    for h in (1e-2, 1e-4, 1e-6):
        bp, gp = 0.25, 0.5
        T = s.dae_terms(q, qd, qdd, lam, 0.0, jacobian=True)
        A = s.iteration_matrix(T, 1.0, bp * h * h, gp * h, bp * h * h, gp * h).toarray()
        conds.append(np.linalg.cond(A))
    assert conds[-1] < 10 * conds[0] and conds[-1] < 1e6
    res = s.simulate(2e-5, dt=1e-6, integrator="newmark", tol=1e-9, energy=False)
    assert res.stats["newton_iterations"][1:].max() <= 3
