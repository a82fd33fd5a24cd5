"""Compiled RK4 of rigid trees with quaternion coordinates (floating bases, Spherical
joints; :func:`flexmbd.recursive._nbloops.tree_rk4_block`) and drives given as functions
of time (:meth:`flexmbd.JointForce.of_time`).

The oracle of the compiled blocks is the Python RK4 path of the same run, reached by
giving zero joint forces as a function ``tau(t, q, qd)`` (which the blocks do not take):
the blocks do the same floating-point operations in the same order (the quaternion rates
of ``qdot``, the renormalization ``q / norm(q)`` once per output interval), so every
output is equal bit for bit.
"""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.errors import ModelError, SolverError
from flexmbd.recursive import _nbloops as NL

from .example_scripts import example


def space_robot():
    return example("space_robot")


def robot(drives=True):
    m = space_robot().build()
    if not drives:
        for b in (m.arm1, m.arm2):
            del b.drive
    return m


def spherical_pendulum():
    """A revolute upper link and a spherical lower link under gravity."""
    m = fm.Model("spherical")
    m.upper = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.lower = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.shoulder = fm.Revolute(m.ground, m.upper, q0=[-np.pi / 4])
    m.elbow = fm.Spherical(m.upper, m.lower, parent_frame=(1.0, 0, 0), qd0=[0.5, -1.0, 2.0])
    m.g = fm.Gravity((0, -9.81, 0))
    return m


def pushed_box():
    """A free box driven along its six speeds by a function of time (six table rows)."""
    m = fm.Model("box")
    m.box = fm.RigidBody(2.0, (0.1, 0.2, 0.3))
    m.free = fm.Free(m.ground, m.box, qd0=[0.3, -0.2, 0.5, 0.1, 0.0, 0.2])
    amp = np.array([0.05, -0.02, 0.03, 1.0, 0.5, -0.3])
    m.push = fm.JointForce.of_time(m.free, lambda t: amp * np.cos(3.0 * t))
    return m


def moving_state(s):
    """Initial speeds that move every joint (the robot starts at rest otherwise)."""
    qd = s.qd0()
    qd[:] = np.linspace(-0.5, 0.5, s.nv)
    return qd


def counting(monkeypatch, name):
    calls = []
    inner = getattr(NL, name)
    monkeypatch.setattr(NL, name, lambda *a: calls.append(1) or inner(*a))
    return calls


CASES = {
    "space robot": (lambda: robot(True), 0.1, 0.002, 1),
    "space robot without drives": (lambda: robot(False), 0.1, 0.002, 2),
    "spherical pendulum": (spherical_pendulum, 0.3, 0.01, 3),
    "free box, six-speed drive": (pushed_box, 0.3, 0.01, 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_block_equals_python_rk4_bit_for_bit(monkeypatch, case):
    """q, qd, qdd, reactions, energies and momenta of the compiled blocks equal the
    Python RK4 path's bit for bit; the compiled run is one block call, the Python run
    none."""
    build, t_end, dt, substeps = CASES[case]
    s = build().compile("recursive")
    assert s.quaternion_offsets  # quaternion coordinates: nq > nv
    qd0 = moving_state(s)
    blocks = counting(monkeypatch, "tree_rk4_block")
    a = s.simulate(t_end, dt=dt, integrator="rk4", qd0=qd0, substeps=substeps)
    assert len(blocks) == 1
    blocks.clear()
    b = s.simulate(
        t_end, dt=dt, integrator="rk4", qd0=qd0, substeps=substeps, tau=lambda t, q, qd: 0.0 * qd
    )
    assert not blocks
    for name in ("q", "qd", "qdd", "reactions"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.energy.keys() == b.energy.keys()
    for key in a.energy:
        assert np.array_equal(a.energy[key], b.energy[key]), key
    assert a.extra.keys() == b.extra.keys()
    for key in a.extra:
        assert np.array_equal(a.extra[key], b.extra[key]), key
    # the quaternions are unit after every output interval, and the run moved
    for o in s.quaternion_offsets:
        assert np.abs(np.linalg.norm(a.q[:, o : o + 4], axis=1) - 1.0).max() <= 4e-16
    assert np.abs(a.q[-1] - a.q[0]).max() > 1e-3


def test_renormalization_kernels_equal_the_python_projection():
    """``unit_quaternions`` = :meth:`RecursiveSystem.normalize` and ``coordinate_rates``
    = :meth:`RecursiveSystem.qdot` bit for bit on random states of the space robot."""
    s = robot().compile("recursive")
    Ib, buf, _ = s.packed_rigid(forces=True, timed=True)
    qoff = np.array(s.quaternion_offsets, dtype=np.int64)
    rng = np.random.default_rng(3)
    for _ in range(200):
        q = rng.normal(size=s.nq) * rng.uniform(0.5, 2.0)
        v = rng.normal(size=s.nv)
        ref = s.normalize(q)
        NL.unit_quaternions(q, qoff)
        assert np.array_equal(q, ref)
        out = np.empty(s.nq)
        NL.coordinate_rates(Ib, buf, q, v, out)
        assert np.array_equal(out, s.qdot(q, v))


def test_drive_free_floating_robot_keeps_its_momentum():
    """No external load: the linear and angular momentum of the compiled run stay at
    their initial values (measured 4e-14 of their size over 250 steps: round-off)."""
    s = robot(False).compile("recursive")
    res = s.simulate(0.5, dt=0.002, integrator="rk4", qd0=moving_state(s))
    for key in ("momentum_linear", "momentum_angular"):
        h = res.extra[key]
        assert np.linalg.norm(h[0]) > 1.0
        assert np.abs(h - h[0]).max() <= 1e-12 * np.linalg.norm(h[0])


def test_of_time_drive_equals_the_python_law():
    """The robot's drives given by ``of_time`` (compiled blocks, the drives tabulated)
    and the same functions given as laws ``f(t, q, qd)`` (the example before
    ``of_time``; the Python path): the same numbers bit for bit."""
    sr = space_robot()
    m, py = robot(), robot(False)
    for b, sign in ((py.arm1, 1.0), (py.arm2, -1.0)):

        def law(blk, i, sign=sign):
            f = sr.torque((sign if i == 0 else 1.0) * sr.AMPLITUDES[i])
            return fm.JointForce(blk.joint[i], lambda t, q, qd: np.array([f(t)]))

        b.drive = fm.JointForce(range(6), rule=law)
    sa, sp = m.compile("recursive"), py.compile("recursive")
    assert sa.timed_forces(0.0) is not None and sp.timed_forces(0.0) is None
    a = sa.simulate(0.1, dt=0.002, integrator="rk4")
    b = sp.simulate(0.1, dt=0.002, integrator="rk4")
    for name in ("q", "qd", "qdd", "reactions"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for key in a.energy:
        assert np.array_equal(a.energy[key], b.energy[key]), key
    assert np.abs(a.q[-1, 7:] - a.q[0, 7:]).max() > 1e-4  # the drives moved the arms


def pendulum(drive):
    """A double pendulum with time-driven joints (a sine torque, a cosine torque)."""
    m = fm.Model("driven")
    m.upper = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.lower = fm.RigidBody.rod(mass=0.5, length=0.8, radius=0.02, origin="end")
    m.shoulder = fm.Revolute(m.ground, m.upper, q0=[-0.3])
    m.elbow = fm.Revolute(m.upper, m.lower, parent_frame=(1.0, 0, 0), q0=[0.4])
    m.g = fm.Gravity((0, -9.81, 0))
    m.d1 = drive(m.shoulder, lambda t: 3.0 * np.sin(4.0 * t))
    m.d2 = drive(m.elbow, lambda t: np.array([-1.0 * np.cos(5.0 * t)]))
    return m


def test_formulations_agree_on_a_driven_model():
    """Recursive RK4 (compiled blocks) and the absolute engine (generalized-alpha) on the
    same driven pendulum: the engine's run equals its generic path's, and the absolute
    joint angles converge to the recursive ones at second order (RK4's own error at
    1 ms is far below: the difference is generalized-alpha's, measured 8.0e-6 rad at
    1 ms and 2.0e-6 at 0.5 ms, a ratio of 4.0)."""
    m = pendulum(fm.JointForce.of_time)
    rec = m.compile("recursive").simulate(0.5, dt=1e-3, integrator="rk4")
    ab = m.compile("absolute")
    opts = dict(integrator="generalized-alpha", tol=1e-11)
    fast = ab.simulate(0.5, dt=1e-3, **opts)
    ref = ab.simulate(0.5, dt=1e-3, engine=False, **opts)
    assert fast.stats.get("engine", "compiled") != "generic"
    assert np.abs(fast.q - ref.q).max() <= 1e-9
    half = ab.simulate(0.5, dt=5e-4, **opts)
    for j in ("shoulder", "elbow"):
        d1 = np.abs(rec.joint(j).q - fast.joint(j).q).max()
        d2 = np.abs(rec.joint(j).q - half.joint(j).q[::2]).max()
        assert d1 <= 2e-5 and d2 <= d1 / 3.5, (j, d1, d2)
    assert np.abs(rec.joint("elbow").q[-1] - rec.joint("elbow").q[0]).max() > 0.1


def test_of_time_bad_input_names_the_joint():
    """Not a function, not a joint, a value of the wrong size: a ModelError naming the
    joint where the drive is made; a value that turns non-finite during a run: a
    SolverError naming the joint, with the results up to then."""
    m = spherical_pendulum()
    with pytest.raises(ModelError, match="shoulder.*function"):
        fm.JointForce.of_time(m.shoulder, 2.0)
    with pytest.raises(ModelError, match="joint"):
        fm.JointForce.of_time("shoulder", lambda t: 1.0)
    with pytest.raises(ModelError, match="elbow.*3 finite"):
        fm.JointForce.of_time(m.elbow, lambda t: [1.0, 2.0])  # 3 speeds
    with pytest.raises(ModelError, match="shoulder.*1 finite"):
        fm.JointForce.of_time(m.shoulder, lambda t: np.inf)
    m.nan = fm.JointForce.of_time(m.shoulder, lambda t: np.nan if t > 0.015 else 0.0)
    with pytest.raises(SolverError, match="shoulder.*1 finite") as info:
        m.compile("recursive").simulate(0.05, dt=0.01, integrator="rk4")
    assert info.value.partial is not None and len(info.value.partial.t) >= 2


def test_momentum_history_equals_momentum_per_state():
    """``momentum_history`` (one compiled kinematics pass over the history, what the
    results of a floating run use) = :meth:`momentum` state by state, bit for bit."""
    s = robot(False).compile("recursive")
    res = s.simulate(0.05, dt=0.002, integrator="rk4", qd0=moving_state(s))
    lin, ang = s.momentum_history(res.q, res.qd)
    for i in range(len(res.t)):
        p, h = s.momentum(res.q[i], res.qd[i])
        assert np.array_equal(lin[i], p) and np.array_equal(ang[i], h)
    assert np.array_equal(lin, res.extra["momentum_linear"])
    assert np.array_equal(ang, res.extra["momentum_angular"])
