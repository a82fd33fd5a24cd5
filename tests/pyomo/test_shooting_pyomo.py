"""The shooting trajectory as a Pyomo grey-box (outputs with exact derivatives): IPOPT
identifies a pendulum's bearing friction from its simulated swing."""

import numpy as np
import pytest

pytest.importorskip("pyomo")
pytest.importorskip("cyipopt")


def test_ipopt_recovers_bearing_friction_through_the_shooting_grey_box():
    import flexmbd as fm
    import flexmbd.pyomo as fmo
    from flexmbd.errors import FlexmbdError
    from flexmbd.pyomo.shooting import Shooting

    try:
        pe = fmo.require_pyomo()
    except FlexmbdError as err:
        pytest.skip(str(err))
    from pyomo.contrib.pynumero.interfaces.external_grey_box import ExternalGreyBoxBlock

    from flexmbd.pyomo.greybox import ShootingGreyBox

    m = fm.Model("p")
    m.link = fm.RigidBody(mass=2.0, inertia=np.diag([0.01, 0.2, 0.2]), com=(0.5, 0, 0))
    m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1))
    m.g = fm.Gravity((0, -9.81, 0))
    m.fric = fmo.ViscousBearing(m.hinge, c=0.3)
    P = fmo.parameters(m)
    P.fric.c.free(bounds=(0.0, 1.0))
    sh = Shooting(m.compile("absolute"), 0.6, 0.02, P.free_parameters())
    idx = np.arange(5, 31, 5)  # nodes of the "measurement"

    def outputs(sh, r):  # e3 of the link (sin of half the angle)
        return r.q[idx, 6], r.dq[idx, 6, :]

    meas = sh.simulate([0.3], sensitivities=False).q[idx, 6]
    M = pe.ConcreteModel()
    M.sim = ExternalGreyBoxBlock(external_model=ShootingGreyBox(sh, outputs, len(idx)))
    c = M.sim.inputs["fric.c"]
    c.value, c.lb, c.ub = 0.1, 0.0, 1.0
    y = M.sim.outputs
    M.obj = pe.Objective(expr=sum((y[f"y[{i}]"] - float(meas[i])) ** 2 for i in range(len(idx))))
    pe.SolverFactory("cyipopt").solve(M, tee=False)
    assert abs(pe.value(c) - 0.3) < 1e-5


def test_gauss_newton_and_quasi_newton_trajectory_nlps_agree_on_the_friction():
    """The collocated NLP of a rigid pendulum recovers its bearing friction from exact
    data with either Hessian; Gauss-Newton in fewer IPOPT iterations."""
    import flexmbd as fm
    import flexmbd.pyomo as fmo
    from flexmbd.errors import FlexmbdError, ModelError

    try:
        pe = fmo.require_pyomo()
    except FlexmbdError as err:
        pytest.skip(str(err))
    from flexmbd.pyomo.collocation import Trajectory

    m = fm.Model("p")
    m.link = fm.RigidBody(mass=2.0, inertia=np.diag([0.01, 0.2, 0.2]), com=(0.5, 0, 0))
    m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1))
    m.g = fm.Gravity((0, -9.81, 0))
    m.fric = fmo.ViscousBearing(m.hinge, c=0.3)
    s = m.compile("absolute")
    P = fmo.parameters(m)
    res = s.simulate(
        0.4,
        dt=0.02,
        integrator="newmark",
        beta=0.25,
        gamma=0.5,
        project_velocities=False,
        gauge=False,
        tol=1e-12,
        progress=False,
    )
    meas = res.q[:, 6]  # e3 of the link (sin of half the angle), exact data
    c = P.fric.c
    with pytest.raises(ModelError, match="gauss-newton"):
        Trajectory(s, 0.4, 0.02, params=[c], hessian="newton")
    its = {}
    for hess in ("gauss-newton", "quasi-newton"):
        c.free(bounds=(0.0, 1.0), value=0.1)
        tr = Trajectory(s, 0.4, 0.02, params=[c], hessian=hess)
        tr.m.obj = pe.Objective(
            expr=sum((tr.q(k)[6] - float(meas[k])) ** 2 for k in range(1, tr.N + 1)) * 1e4
        )
        tr.solve()
        assert abs(c.value - 0.3) < 1e-4, hess
        its[hess] = tr.iterations
    assert its["gauss-newton"] < its["quasi-newton"]
