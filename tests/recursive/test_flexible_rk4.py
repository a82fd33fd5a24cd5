"""RK4 of trees with flexible bodies in compiled blocks
(:func:`flexmbd.recursive._flexblock.flex_rk4_block`, hooked in ``TreeStepper._rk4_block``)
against the Python RK4 path (``TreeStepper._rk4_block`` returning None: the stage loop in
Python, the loads applied from Python per evaluation): the same bits, conservation of a
flexible pendulum's energy, resume, failures."""

import warnings

import numpy as np
import pytest
import skfem

import flexmbd as fm
import flexmbd.fem as F
from flexmbd.integrators.explicit import TreeStepper
from flexmbd.recursive import _flexblock as FB

from .interrupt import interrupted_at_chunk
from .test_flexible_cfa import A0, _end, _free_tree, beam

SOFT = 2.1e9  # a hundredth of steel's modulus: RK4 steps of 1e-4 s are stable


def flex_chain(n=2, stiff=False, loads=True, tip=True, act0=None):
    """``n`` soft Craig-Bampton beams on revolutes about alternating axes at their
    deforming interfaces, a rigid tip, gravity; with ``loads`` spring-damper laws on the
    joints (a constant actuator, an actuator of time, ``act0`` on the first joint if
    given, two laws on one joint). Four fixed-interface modes: whole pairs of the square
    section's equal bending frequencies (three keep one mode of a pair: a ModeWarning)."""
    rb = beam(4, "cb", E=SOFT)
    m = fm.Model("flex_chain_rk4")
    prev, pf = m.ground, A0
    for i in range(n):
        b = fm.FlexibleBody(rb, geometric_stiffening=stiff, q0=1e-4 * np.arange(rb.n_modes))
        setattr(m, f"b{i}", b)
        ax = (0, 0, 1) if i % 2 == 0 else (0, 1, 0)
        j = fm.Revolute(prev, b, axis=ax, parent_frame=pf, child_frame=b.interface("A"))
        setattr(m, f"j{i}", j)
        prev, pf = b, b.interface("B")
        if loads:
            act = (act0 or (lambda t: 3.0 * np.sin(40.0 * t))) if i == 0 else 1.5
            setattr(m, f"sd{i}", fm.JointForce.spring_damper(j, 20.0, 0.7, 0.1 * i, act))
    if tip:
        m.tip = fm.RigidBody(2.0, (0.01, 0.02, 0.03), com=(0.2, 0.01, 0))
        m.jt = fm.Revolute(prev, m.tip, axis=(1, 0, 0), parent_frame=pf, qd0=[1.0])
        if loads:
            m.sdt = fm.JointForce.spring_damper(m.jt, 4.0, 0.0, -0.2)
            m.sdt2 = fm.JointForce.spring_damper(m.jt, 0.0, 0.3)  # two laws on one joint
    m.g = fm.Gravity((0, -9.81, 0.5))
    return m


def counted(monkeypatch):
    """The compiled flexible blocks' calls (intervals asked for) from now on."""
    calls, inner = [], FB.flex_rk4_block
    monkeypatch.setattr(FB, "flex_rk4_block", lambda *a: calls.append(a[5]) or inner(*a))
    return calls


def python_path(monkeypatch, f):
    """``f()`` with the Python RK4 stage loop (no compiled block)."""
    with monkeypatch.context() as mp:
        mp.setattr(TreeStepper, "_rk4_block", lambda self, n: None)
        return f()


def same_bits(a, b):
    assert np.array_equal(a.t, b.t)
    for key in ("q", "qd", "qdd", "reactions"):
        assert np.array_equal(getattr(a, key), getattr(b, key)), key
    assert a.body_series.keys() == b.body_series.keys()
    for name in a.body_series:
        assert np.array_equal(a.body(name).modal, b.body(name).modal)
    for key in a.energy:
        assert np.array_equal(a.energy[key], b.energy[key], equal_nan=True), key


@pytest.mark.parametrize(
    "stiff, substeps, tau", [(False, 1, None), (True, 1, "const"), (False, 2, "const")]
)
def test_flexible_chain_blocks_equal_the_python_path(monkeypatch, stiff, substeps, tau):
    """Spring-damper laws (an actuator of time), gravity, constant joint and modal
    forces, geometric stiffening on and off, substeps: the compiled block's samples
    (q, qd, qdd with the modal accelerations, reactions, energies) are the Python
    path's bit for bit, and every interval ran in the blocks."""
    s = flex_chain(stiff=stiff).compile("recursive")
    if tau == "const":
        tau = np.linspace(-0.5, 0.5, s.nv)  # joint torques and modal forces
    kw = dict(dt=2e-4, integrator="rk4", substeps=substeps, tau=tau)
    ref = python_path(monkeypatch, lambda: s.simulate(0.03, **kw))
    calls = counted(monkeypatch)
    res = s.simulate(0.03, **kw)
    assert sum(calls) == len(res.t) - 1  # every interval in a block
    same_bits(res, ref)
    assert np.ptp(res.body("b1").modal) > 1e-5  # the modes move
    if stiff:  # the stiffening changes the motion: the iterations ran
        plain = flex_chain(stiff=False).compile("recursive").simulate(0.03, **kw)
        assert not np.array_equal(plain.q, res.q)


def test_floating_flexible_tree_blocks_equal_the_python_path(monkeypatch):
    """A free-floating flexible base (Free joint: quaternion coordinates renormalized at
    the end of every interval) carrying a flexible arm: bit for bit."""
    s = _free_tree().compile("recursive")
    kw = dict(dt=1e-4, integrator="rk4")
    ref = python_path(monkeypatch, lambda: s.simulate(0.01, **kw))
    calls = counted(monkeypatch)
    res = s.simulate(0.01, **kw)
    assert sum(calls) == len(res.t) - 1
    same_bits(res, ref)
    o = s.quaternion_offsets[0]
    assert np.abs(np.linalg.norm(res.q[:, o : o + 4], axis=1) - 1.0).max() < 4e-16


def test_loads_outside_the_block_keep_the_python_path(monkeypatch):
    """A user's force element (Python ``wrenches``), a Python joint force law or tau as a
    function of time: no block, the Python path's numbers (point forces, torques and
    SDAs take the blocks: test_flexible_points.py)."""
    from .test_flexible_points import Drag

    m = flex_chain(n=1)
    m.drag = Drag(m.tip)
    s = m.compile("recursive")
    calls = counted(monkeypatch)
    s.simulate(0.002, dt=2e-4, integrator="rk4")
    m2 = flex_chain(n=1)
    m2.law = fm.JointForce(m2.j0, lambda t, q, qd: -2.0 * q)
    m2.compile("recursive").simulate(0.002, dt=2e-4, integrator="rk4")
    s3 = flex_chain(n=1).compile("recursive")
    s3.simulate(0.002, dt=2e-4, integrator="rk4", tau=lambda t, q, qd: np.zeros(s3.nv))
    assert calls == []
    # the same model without the Python-only load takes the block
    flex_chain(n=1).compile("recursive").simulate(0.002, dt=2e-4, integrator="rk4")
    assert sum(calls) == 10


def test_constant_joint_forces_take_the_block(monkeypatch):
    """Constant joint forces (``JointForce(joint, values)``) beside spring-damper laws:
    in the block, bit for bit; one sharing its joint with a law (the Python path adds
    them in model order) keeps the Python path."""
    m = flex_chain(n=2, loads=False)
    m.motor = fm.JointForce(m.j0, [0.8])
    m.law = fm.JointForce.spring_damper(m.j1, 10.0, 0.3)
    m.tip_motor = fm.JointForce(m.jt, [-0.3])
    s = m.compile("recursive")
    kw = dict(dt=2e-4, integrator="rk4", tau=np.linspace(-0.5, 0.5, s.nv))
    ref = python_path(monkeypatch, lambda: s.simulate(0.01, **kw))
    calls = counted(monkeypatch)
    res = s.simulate(0.01, **kw)
    assert sum(calls) == len(res.t) - 1
    same_bits(res, ref)
    m.law2 = fm.JointForce.spring_damper(m.j0, 1.0, 0.0)  # shares j0 with the motor
    calls.clear()
    m.compile("recursive").simulate(0.002, dt=2e-4, integrator="rk4")
    assert calls == []


def pendulum():
    """One soft Craig-Bampton beam on a revolute at its interface A, gravity, no damping:
    a conservative system (kinetic + gravity + strain energy)."""
    return flex_chain(n=1, loads=False, tip=False)


def test_flexible_pendulum_conserves_energy_and_converges_to_fourth_order():
    """The undamped flexible pendulum in the compiled blocks: total energy (kinetic +
    gravity + strain ``q^T K q / 2``) constant to the RK4 error, and RK4's order: halving
    the step divides the state's error (differences of successive halvings) by about 16.
    The energy drift falls faster, by about 32: it is RK4's amplitude error of the
    modes, a loss of ``(h omega)^6 / 72`` of a mode's energy per step, fifth order over a
    fixed time; bounded by the whole elastic energy (at most twice the largest strain
    energy) in the stiffest mode."""
    s = pendulum().compile("recursive")
    w = s.max_modal_frequency()  # rad/s
    assert 2.8 / w > 7e-4  # the steps below are stable
    drift, bound, ends = [], [], []
    for dt in (1e-4, 5e-5, 2.5e-5):
        res = s.simulate(0.05, dt=dt, integrator="rk4")
        E, ke = res.energy["total"], res.energy["kinetic"]
        assert np.ptp(res.energy["spring"]) > 0.3 * np.ptp(ke)  # the strain energy takes part
        drift.append(np.abs(E - E[0]).max() / np.ptp(ke))
        elastic = 2.0 * res.energy["spring"].max() / np.ptp(ke)
        bound.append(0.05 / dt * (dt * w) ** 6 / 72.0 * elastic)
        ends.append(np.concatenate([res.q[-1], res.qd[-1]]))
    assert all(d < b for d, b in zip(drift, bound)), (drift, bound)
    assert 16.0 < drift[0] / drift[1] < 40.0 and 16.0 < drift[1] / drift[2] < 40.0, drift
    e1, e2 = np.abs(ends[0] - ends[1]).max(), np.abs(ends[1] - ends[2]).max()
    assert 12.0 < e1 / e2 < 20.0, (e1, e2)


def damped_chain():
    """Two soft beams with 3 % modal damping (the modal damping power), the loads of
    :func:`flex_chain`, geometric stiffening on the second; 4 fixed-interface modes keep
    whole the pair of equal frequencies (140 Hz) of the square section."""
    mesh = skfem.MeshHex1.init_tensor(
        np.linspace(0, 1.0, 9), np.linspace(0, 0.05, 3), np.linspace(0, 0.05, 3)
    )
    strat = fm.CraigBampton(4, interfaces={"A": _end(0.0), "B": _end(1.0)}, frame="interface")
    mat = fm.Material(E=SOFT, nu=0.3, rho=7850.0)
    rb = F.reduce(mesh, mat, strat, name="beam", geometric=True, zeta=np.full(10, 0.03))
    m = fm.Model("damped_chain")
    m.b0 = fm.FlexibleBody(rb, geometric_stiffening=False, qd0=0.01 * np.ones(10))
    m.j0 = fm.Revolute(m.ground, m.b0, parent_frame=A0, child_frame=m.b0.interface("A"))
    m.b1 = fm.FlexibleBody(rb, qd0=-0.02 * np.ones(10))
    m.j1 = fm.Revolute(
        m.b0, m.b1, axis=(0, 1, 0), parent_frame=m.b0.interface("B"),
        child_frame=m.b1.interface("A"), qd0=[1.5],
    )  # fmt: skip
    m.sd0 = fm.JointForce.spring_damper(m.j0, 20.0, 0.7, 0.0, lambda t: np.cos(30.0 * t))
    m.sd1 = fm.JointForce.spring_damper(m.j1, 5.0, 0.1, 0.2)
    m.g = fm.Gravity((0, -9.81, 0.5))
    return m


@pytest.mark.parametrize("case", ["damped", "stiff", "floating"])
def test_compiled_energies_equal_the_per_state_definitions(case):
    """``energy_samples`` of a flexible tree (one compiled call,
    ``_flexblock.flex_energies``) against the per-state Python definitions
    (``kinetic_energy``: ``u^T M(q) u / 2`` by the FFR mass matrix; ``potential_energies``;
    ``powers``) on the samples of a run: the same values to round-off, the damping power
    ``qd^T D qd`` of the modes included."""
    m = {"damped": damped_chain, "stiff": lambda: flex_chain(stiff=True), "floating": _free_tree}
    s = m[case]().compile("recursive")
    tau = np.linspace(-0.5, 0.5, s.nv)
    res = s.simulate(0.004, dt=2e-4, integrator="rk4", tau=tau)
    t, q, qd = res.t, res.q, res.qd
    TAU = np.tile(tau, (len(t), 1))
    got = s.energy_samples(t, q, qd, TAU)
    pe = [s.potential_energies(q[i], t[i]) for i in range(len(t))]
    pw = [s.powers(q[i], qd[i], t[i], TAU[i]) for i in range(len(t))]
    ref = {
        "kinetic": [s.kinetic_energy(q[i], qd[i]) for i in range(len(t))],
        "gravity": [p["gravity"] for p in pe],
        "spring": [p["spring"] for p in pe],
        **{key: [p[key] for p in pw] for key in ("p_damper", "p_actuator", "p_external")},
    }
    scale = max(np.abs(ref[k]).max() for k in ref)
    for key, r in ref.items():
        assert np.abs(got[key] - np.array(r)).max() <= 1e-14 * scale, key
    assert np.abs(ref["spring"]).max() > 1e-4 * scale  # the strain energy takes part
    if case == "damped":
        assert np.min(ref["p_damper"]) > 0.0
    assert np.array_equal(res.energy["kinetic"], got["kinetic"])  # the results' energies


def test_checkpoint_resume_is_bit_for_bit(monkeypatch, tmp_path):
    """A checkpointed block run interrupted between chunks and resumed equals the
    straight run (and the Python path) bit for bit."""
    m = flex_chain(stiff=True)
    s = m.compile("recursive")
    kw = dict(dt=2e-4, integrator="rk4")
    ref = python_path(monkeypatch, lambda: s.simulate(0.02, **kw))
    path = tmp_path / "run.h5"
    calls = counted(monkeypatch)
    with interrupted_at_chunk(monkeypatch) as seen:
        s.simulate(0.02, checkpoint=path, every=37, **kw)
    assert seen[:2] == [37, 37]
    res = fm.resume(path, model=m)
    same_bits(res, ref)
    assert sum(calls) == 100  # 2 x 37 before the interruption, 26 after the resume


def test_failures_inside_a_block_fail_as_the_python_path(monkeypatch):
    """An actuator that raises from t = 0.01 s and a step beyond the stability limit
    (a runaway or a non-finite state): the block stops before the failing interval and the run fails
    with the Python path's error class, message, time and partial results."""

    def actuator(t):
        if t > 0.01:
            raise fm.ModelError("actuator table ends at 0.01 s")
        return 1.0

    cases = [
        (flex_chain(n=1, act0=actuator).compile("recursive"), 2e-4, 51),
        (flex_chain(n=1).compile("recursive"), 1.5e-3, 3),  # unstable
    ]
    calls = counted(monkeypatch)
    for s, dt, n_good in cases:
        errs = []
        for path in (python_path, None):

            def run(s=s, dt=dt):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # (the stability-limit warning)
                    with pytest.raises(fm.SolverError) as info:
                        s.simulate(0.05, dt=dt, integrator="rk4")
                return info.value

            errs.append(path(monkeypatch, run) if path else run())
        a, b = errs
        assert str(a) == str(b) and a.time == b.time
        same_bits(a.partial, b.partial)
        assert len(a.partial.t) >= n_good, len(a.partial.t)
    assert calls[0] == 50  # the intervals before the actuator's failure in one block
