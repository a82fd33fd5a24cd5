"""Point forces and spring-damper-actuators at a stiffened interface in the compiled step
loop (:func:`flexmbd.absolute.force_kernels.interface_force_loads`).

Oracle: ``AbsoluteSystem.update_interface_loads`` (numpy; the per-step Python path), at
random states and over whole runs.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.absolute.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "flexible"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from flex_helpers import small_beam  # noqa: E402
from models import stiffened_pendulum  # noqa: E402


def loaded_interface_model():
    """A beam (geometric stiffening on) hanging from a rigid arm by a revolute joint at its
    interface B, which also carries an SDA to the ground (damped, with an actuator force),
    a world-axes and a body-axes point force; a double pendulum under gravity."""
    m = stiffened_pendulum(small_beam(3, "cb"), "itf_loaded")
    m.sda = fm.SpringDamperActuator(
        m.ground, (1.2, -0.8, 0.0), m.beam, m.beam.interface("B"), k=4e3, c=25.0, fa=30.0
    )
    m.fw = fm.PointForce(m.beam, m.beam.interface("B"), (40.0, -25.0, 5.0))
    m.fb = fm.PointForce(m.beam, m.beam.interface("B"), (-10.0, 30.0, 0.0), frame="body")
    return m


@pytest.fixture(scope="module")
def system():
    return loaded_interface_model().compile("absolute")


def test_forces_at_interface_run_in_the_compiled_loop(system):
    eng = Engine(system)
    assert Engine.supports(system)
    assert eng.itf_lagged
    assert len(eng.ft.i_int) == 3  # the SDA end and both point forces


@pytest.mark.parametrize("seed", range(3))
def test_interface_loads_equal_reference(system, seed):
    """Loads and their stiffness from the compiled kernels = update_interface_loads (joint
    reaction, SDA tension with damping, point forces) at random states."""
    s = system
    eng = Engine(s)
    eng.ft.at(0.0)
    d = s.flexible.flex[0]
    rng = np.random.default_rng(seed)
    q = rng.normal(size=s.n)
    for i in range(s.nb):
        q[7 * i + 3 : 7 * i + 7] /= np.linalg.norm(q[7 * i + 3 : 7 * i + 7])
    q[s.n_rigid :] *= 2e-3
    qd = rng.normal(size=s.n)
    lam = 10 * rng.normal(size=s.nc)
    v, K = eng.interface_loads(q, lam, qd)
    s.update_interface_loads(q, lam, 0.0, qd=qd)
    ref = d.itf_load
    assert np.abs(ref[3:]).max() > 10.0
    assert np.abs(v - ref).max() <= 1e-12 * np.abs(ref).max()
    Kref = d.K_itf.ravel()
    assert np.abs(K - Kref).max() <= 1e-12 * np.abs(Kref).max()
    # without the forces the loads differ: they are in the kernel's sum
    v0, _ = Engine(loaded_joint_only().compile("absolute")).interface_loads(q, lam)
    assert np.abs(v0 - ref).max() > 1.0


def loaded_joint_only():
    m = loaded_interface_model()
    del m.sda, m.fw, m.fb
    return m


def test_compiled_loop_equals_python_steps_and_generic_path():
    """Whole runs: the compiled loop (loads inside it), the per-step Python update (forced
    by a callback) and the generic path agree to 1e-9 in the positions."""
    runs = {}
    for mode in ("compiled", "python", "generic"):
        s = loaded_interface_model().compile("absolute")
        kw = dict(dt=1e-3, integrator="generalized-alpha", rho_inf=0.8, tol=1e-10)
        if mode == "python":
            kw["callback"] = lambda t, q, qd: None
        if mode == "generic":
            kw["engine"] = False
        runs[mode] = (s, s.simulate(0.05, **kw))
    s, rc = runs["compiled"]
    scale = np.abs(rc.q).max()
    modal = np.abs(rc.q[:, s.n_rigid :]).max()
    assert modal > 1e-6  # the beam deforms
    for other in ("python", "generic"):
        ro = runs[other][1]
        assert np.abs(rc.q - ro.q).max() <= 1e-9 * scale, other
        assert np.abs(rc.q[:, s.n_rigid :] - ro.q[:, s.n_rigid :]).max() <= 1e-6 * modal, other
    d = s.flexible.flex[0]
    stored = d.itf_load.copy()
    s.update_interface_loads(rc.q[-1], rc.extra["lambda"][-1], rc.t[-1], qd=rc.qd[-1])
    assert np.allclose(stored, d.itf_load, rtol=1e-10, atol=1e-10 * np.abs(stored).max())
