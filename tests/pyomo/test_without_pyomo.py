"""flexmbd.pyomo's numpy parts work without Pyomo; the Pyomo parts say what to install."""

import subprocess
import sys
import textwrap


def test_without_pyomo_parameters_work_and_greybox_names_the_extra():
    code = textwrap.dedent("""
        import sys
        sys.modules["pyomo"] = None          # as if Pyomo were not installed
        import numpy as np
        import flexmbd as fm
        import flexmbd.pyomo as fmo
        from flexmbd.errors import FlexmbdError
        m = fm.Model("p")
        m.link = fm.RigidBody(mass=2.0, inertia=np.diag([0.01, 0.2, 0.2]), com=(0.5, 0, 0))
        m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1))
        m.g = fm.Gravity((0, -9.81, 0))
        P = fmo.parameters(m)
        P.link.mass.free(bounds=(1.0, 3.0))
        s = m.compile("absolute")
        res = fmo.NodeResiduals(s, [0.0], P.free_parameters())
        q, qd, qdd, lam = s.initial_conditions()
        r, J = res.evaluate(res.join(q[None], qd[None], qdd[None], lam[None]), [2.0])
        assert np.abs(r).max() < 1e-9, r          # the consistent state solves the residual
        from flexmbd.pyomo.shooting import Shooting
        sim = Shooting(s, 0.04, 0.01, P.free_parameters()).simulate([2.0])
        assert sim.dq.shape == (5, s.n, 1) and np.abs(sim.q[-1] - q).max() > 1e-4
        try:
            import flexmbd.pyomo.greybox
        except FlexmbdError as err:
            assert "flexmbd[pyomo]" in str(err)
            print("OK")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("OK")
