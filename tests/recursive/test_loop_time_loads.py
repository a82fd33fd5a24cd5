"""Closed loops with loads that are functions of time in the compiled RK4 kernels
(``_nbloops.loop_rk4_block`` and the per-interval ``loop_rk4_step[_sampled]`` take the
values tabulated on the stage times): the Python path's numbers, energy balance."""

import models
import numpy as np
import pytest

import flexmbd as fm
from flexmbd.recursive import _nbloops as NL
from flexmbd.recursive import loops as L


def timed_four_bar(python=False, frozen=False):
    """The four-bar with a point force on the coupler ``(0, 3 cos 5t, 0)`` N and an SDA
    from ground to the rocker with actuator force ``fa = 2 sin 4t`` N; ``python``: plus a
    zero Python joint law (the whole model on the Python QR path); ``frozen``: both
    functions replaced by their values at t = 0."""
    m = models.four_bar()
    push = (lambda t: (0.0, 3.0, 0.0)) if frozen else (lambda t: (0.0, 3.0 * np.cos(5 * t), 0.0))
    fa = (lambda t: 0.0) if frozen else (lambda t: 2.0 * np.sin(4.0 * t))
    m.push = fm.PointForce(m.coupler, (0.5, 0.0, 0.0), push)
    m.spring = fm.SpringDamperActuator(
        m.ground, (0.5, 1.5, 0.0), m.rocker, (0.5, 0.0, 0.0), k=20.0, c=0.4, l0=1.0, fa=fa
    )
    if python:
        m.zero = fm.JointForce(m.a, lambda t, q, qd: np.array([0.0]))
    return m.compile("recursive")


def counting(monkeypatch, name):
    calls = []
    inner = getattr(NL, name)
    monkeypatch.setattr(NL, name, lambda *a: calls.append(1) or inner(*a))
    return calls


def assert_same_run(a, b):
    """q to 1e-10 (m, rad), reactions and energies to round-off of their scale."""
    assert np.abs(a.q - b.q).max() < 1e-10
    assert np.abs(a.reactions - b.reactions).max() < 1e-12 * np.abs(b.reactions).max()
    scale = np.abs(b.energy["total"]).max()
    for key in ("total", "damper_work", "actuator_work", "external_work"):
        assert np.abs(a.energy[key] - b.energy[key]).max() < 1e-12 * scale, key


@pytest.mark.parametrize("substeps", [1, 3])
def test_loop_rk4_blocks_with_time_functions_are_the_python_path(monkeypatch, substeps):
    """RK4 of the four-bar with a point force and an SDA actuator that are functions of
    time: the compiled blocks run (``compiled_rk4()`` None: the constant table of the
    other kernels; ``compiled_rk4(timed=True)`` given), their trajectory, reactions and
    energies are the Python path's, the work-energy balance holds, and the loads act
    (the run differs from one with the functions frozen at t = 0)."""
    s, p = timed_four_bar(), timed_four_bar(python=True)
    assert s.compiled_rk4() is None and s.compiled_rk4(timed=True) is not None
    assert p.compiled_rk4(timed=True) is None
    blocks = counting(monkeypatch, "loop_rk4_block")
    kw = dict(dt=1e-3, integrator="rk4", substeps=substeps)
    a = s.simulate(0.3, **kw)
    assert blocks
    b = p.simulate(0.3, **kw)
    assert_same_run(a, b)
    E = a.energy
    assert np.abs(E["actuator_work"]).max() > 1e-3 and np.abs(E["external_work"]).max() > 1e-4
    # work-energy balance (measured 1.7e-9 of the energy at dt = 1 ms)
    assert np.abs(E["numerical_dissipation"]).max() < 1e-8 * np.abs(E["total"]).max()
    frozen = timed_four_bar(frozen=True).simulate(0.3, **kw)
    assert np.abs(frozen.q - a.q).max() > 1e-4


def test_loop_rk4_per_interval_steps_with_time_functions(monkeypatch):
    """The per-interval compiled path (``loop_rk4_step_sampled`` for the first substep,
    ``loop_rk4_step`` for the others, the time values at t, t + h/2, t + h of each
    substep) gives the Python path's run too."""
    monkeypatch.setattr(L._LoopStepper, "_rk4_block", lambda self, n: None)
    sampled = counting(monkeypatch, "loop_rk4_step_sampled")
    steps = counting(monkeypatch, "loop_rk4_step")
    kw = dict(dt=2e-3, integrator="rk4", substeps=2)
    a = timed_four_bar().simulate(0.1, **kw)
    assert len(sampled) >= 40 and len(steps) >= 40
    assert_same_run(a, timed_four_bar(python=True).simulate(0.1, **kw))
