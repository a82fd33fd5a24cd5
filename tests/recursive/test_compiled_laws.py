"""Users' compiled joint laws (:meth:`flexmbd.JointForce.compiled_law`) inside the
recursive formulation's compiled kernels (the ``ULAW`` rows of
:mod:`flexmbd.recursive._nbforces`).

The reference is the Python path: the same cfunc called through ``ctypes`` from a
``JointForce`` with a Python law (what the element did in the recursive formulation
before). The law's Python entry point (``generalized_force``) is wrapped to record the
times it is called at: the compiled calls and steps must not call it.
"""

import models
import numpy as np
import pytest
from numba import cfunc

import flexmbd as fm
from flexmbd.recursive import _nbloops as NL

K3 = 40.0  # N m / rad^3


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _driven(q, qd, t, which):
    """A hardening spring, a linear damper and a motor torque 0.5 sin(3 t) (N m)."""
    if which == 0:
        return -K3 * q**3 - 0.3 * qd + 0.5 * np.sin(3.0 * t)
    return -3.0 * K3 * q**2 if which == 1 else -0.3


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _cubic(q, qd, t, which):
    """A conservative cubic spring ``tau = -K3 q^3`` (potential ``K3 q^4 / 4``)."""
    if which == 0:
        return -K3 * q * q * q
    return -3.0 * K3 * q * q if which == 1 else 0.0


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _four_bar_law(q, qd, t, which):
    if which == 0:
        return -4.0 * (q - 1.5) ** 3 - 0.3 * qd + 0.5 * np.sin(3.0 * t)
    return -12.0 * (q - 1.5) ** 2 if which == 1 else -0.3


def _python_law(law):
    """The cfunc through ctypes as a Python law ``f(t, q, qd)`` (the former path)."""
    call = law.ctypes
    return lambda t, q, qd: np.array([call(float(q[0]), float(qd[0]), float(t), 0)])


def _with_laws(m, joints, law, python, seen):
    for j in joints:
        name = f"law_{j}"
        if python:
            setattr(m, name, fm.JointForce(getattr(m, j), _python_law(law)))
            continue
        el = fm.JointForce.compiled_law(getattr(m, j), law)
        inner = el.generalized_force
        el.generalized_force = lambda t, *a, _f=inner: seen.append(float(t)) or _f(t, *a)
        setattr(m, name, el)
    return m.compile("recursive")


def pendulum(python=False, seen=None, law=_driven):
    m = models.double_pendulum()
    return _with_laws(m, ("shoulder", "elbow"), law, python, [] if seen is None else seen)


def four_bar(python=False, seen=None):
    m = models.four_bar()
    return _with_laws(m, ("a",), _four_bar_law, python, [] if seen is None else seen)


def test_single_state_calls_run_the_law_compiled_bit_for_bit():
    """``forward_dynamics``, ``qdd``, ``forward_dynamics_batch`` at the calls' times: no
    Python call of the law; the numbers of the Python path bit for bit (the same
    machine code of the law, the same additions); ``inverse_dynamics`` returns the
    applied joint forces."""
    seen = []
    s, p = pendulum(seen=seen), pendulum(python=True)
    rng = np.random.default_rng(3)
    Q = s.q0() + rng.normal(scale=0.5, size=(4, 2))
    V = rng.normal(size=(4, 2))
    ts = np.array([0.0, 0.25, 0.7, 1.9])
    tau = np.array([0.4, -0.1])
    for q, v, t in zip(Q, V, ts, strict=True):
        a, b = s.forward_dynamics(q, v, tau, t=t), p.forward_dynamics(q, v, tau, t=t)
        assert np.array_equal(a.qdd, b.qdd) and np.array_equal(a.reactions, b.reactions)
        assert np.array_equal(a.body_accelerations, b.body_accelerations)
        assert np.array_equal(s.qdd(q, v, tau, t=t), a.qdd)
        back = s.inverse_dynamics(q, v, a.qdd, t=t)[0]
        assert np.allclose(back, tau, rtol=0.0, atol=1e-12 * np.abs(a.qdd).max())
    batch, ref = (
        s.forward_dynamics_batch(Q, V, tau, t=ts),
        p.forward_dynamics_batch(Q, V, tau, t=ts),
    )
    assert np.array_equal(batch.qdd, ref.qdd) and np.array_equal(batch.reactions, ref.reactions)
    assert not seen
    # the law depends on the time: a call at another time gives other accelerations
    assert not np.array_equal(s.qdd(Q[0], V[0], tau, t=0.3), s.qdd(Q[0], V[0], tau, t=0.0))


def test_tree_rk4_runs_compiled_blocks_bit_for_bit(monkeypatch):
    """RK4 of the tree: compiled blocks with the law's time tabulated on the stage
    times; no Python call of the law (the energies' law power included); the Python
    path's trajectory, reactions and energies bit for bit."""
    seen, blocks = [], []
    inner = NL.tree_rk4_block
    monkeypatch.setattr(NL, "tree_rk4_block", lambda *a: blocks.append(1) or inner(*a))
    s = pendulum(seen=seen)
    a = s.simulate(0.5, dt=1e-3, integrator="rk4", substeps=2)
    assert a.energy["actuator_work"][-1] != 0.0  # (the energies computed here)
    assert blocks and not seen
    b = pendulum(python=True).simulate(0.5, dt=1e-3, integrator="rk4", substeps=2)
    assert np.array_equal(a.q, b.q) and np.array_equal(a.qd, b.qd)
    assert np.array_equal(a.reactions, b.reactions)
    for key in ("kinetic", "gravity", "actuator_work", "total"):
        assert np.array_equal(a.energy[key], b.energy[key]), key


def test_a_conservative_cubic_law_conserves_energy_to_fourth_order():
    """A cubic spring law on both joints (no damping, no time): kinetic + gravity +
    ``K3 q^4 / 4`` per joint is constant to RK4's order (the drift falls 16-fold per
    halved step; measured 14.9), and the law's power in the energies is ``-d/dt (K3
    q^4 / 4)``: the actuator work (trapezoidal rule over the samples) equals the
    spring energy's loss to O(dt^2) (measured 1.5e-3 J at 4 ms, 3.8e-4 J at 2 ms)."""
    drift, work = [], []
    for dt in (4e-3, 2e-3):
        r = pendulum(law=_cubic).simulate(1.0, dt=dt, integrator="rk4")
        E = r.energy
        spring = (0.25 * K3 * r.q**4).sum(axis=1)
        total = E["kinetic"] + E["gravity"] + spring
        drift.append(np.abs(total - total[0]).max())
        work.append(np.abs(E["actuator_work"] + spring - spring[0]).max())
    assert drift[0] < 1e-6 * np.abs(E["kinetic"]).max()
    assert 12.0 < drift[0] / drift[1] < 20.0
    assert work[0] < 1e-3 * np.abs(spring).max() and 3.5 < work[0] / work[1] < 4.5


def test_closed_loop_rk4_and_adaptive_runs_stay_compiled():
    """The four-bar with the law on a tree joint: RK4 (compiled steps, the law's time
    tabulated per stage) and DOP853 / RK45 (the adaptive kernels set the table's clock
    to scipy's stage times). The law is called from Python only at output samples (and
    the first RK4 step, which the projector's QR takes before its rows are known); the
    trajectories are the Python path's to 1e-12: the compiled loop solves the cut
    rows in another operation order than the projector's Python path, as for any load
    (spring-damper laws: tests/recursive/test_force_table_laws.py)."""
    seen = []
    s, p = four_bar(seen=seen), four_bar(python=True)
    assert s.compiled_rk4(timed=True) is not None and s.compiled_rk4(clock=True) is not None
    assert p.compiled_rk4(timed=True) is None
    dt = 1e-3
    for integrator in ("rk4", "dop853", "rk45"):
        seen.clear()
        kw = dict(dt=dt, integrator=integrator, rtol=1e-10, atol=1e-12)
        a, b = s.simulate(0.3, **kw), p.simulate(0.3, **kw)
        off_grid = set(seen) - set(a.t.tolist())
        assert off_grid <= ({0.5 * dt} if integrator == "rk4" else set()), integrator
        assert len(set(seen)) <= len(a.t) + 1
        assert np.abs(a.q - b.q).max() < 1e-12, integrator
        assert np.abs(a.reactions - b.reactions).max() < 1e-12 * np.abs(b.reactions).max()
        assert np.abs(a.q[-1] - a.q[0]).max() > 1e-3  # the law moves the mechanism


def test_a_law_of_another_signature_is_refused_naming_the_element():
    @cfunc("float64(float64)")
    def one(x):
        return -x

    m = models.double_pendulum()
    m.bad_law = fm.JointForce.compiled_law(m.elbow, one)
    s = m.compile("recursive")
    with pytest.raises(fm.ModelError, match="bad_law.*LAW_SIGNATURE"):
        s.forward_dynamics(s.q0(), s.qd0())
