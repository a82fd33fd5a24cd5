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
