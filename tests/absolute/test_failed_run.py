"""A failed run of the compiled engine keeps every completed step (issue: chainfail).

The 50-body SDA chain of ``benchmarks/bench_absolute.py`` (Newmark, dt = 0.01 s, no
velocity projection) runs to t = 2.56 s and fails in the step to 2.57 s: the speeds have
drifted off the velocity constraints (the free end whips), Newton diverges in that step
(residual 1.97e5 -> 1.2e43 in eight iterations) and the Newton matrix at its last iterate
is singular (condition number ~1e52 by a dense SVD; the first iterate's matrix has
condition ~1.6e6). The compiled loop used to raise from inside its block of steps, which
lost the block: the error said t = 0 s and ``partial`` held the initial row only.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import flexmbd as fm

KW = dict(
    dt=0.01,
    integrator="newmark",
    beta=0.25,
    gamma=0.5,
    tol=1e-7,
    max_iter=50,
    energy=False,
    project_velocities=False,
)
#: the step of the 50-chain (dt = 0.01 s) whose Newton iteration diverges
FAILED_STEP = 257


def _chain(n=50):
    """The SDA chain of ``benchmarks/bench_absolute.py`` with ``n`` links."""
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        import bench_absolute
    finally:
        del sys.path[0]
    return bench_absolute.chain(n)


def _simulate(model, t_end, **extra):
    s = model.compile("absolute")
    s.initial_conditions()
    return s.simulate(t_end, **KW, **extra)


def _assert_rows_kept(partial, good):
    """``partial`` holds every completed step, bit-identical to the successful run ``good``."""
    assert len(partial.t) == FAILED_STEP == len(good.t)
    assert np.array_equal(partial.t, good.t)
    for name in ("q", "qd", "qdd"):
        assert np.array_equal(getattr(partial, name), getattr(good, name)), name
    assert np.array_equal(partial.extra["lambda"], good.extra["lambda"])
    assert np.array_equal(partial.stats["newton_iterations"], good.stats["newton_iterations"])


@pytest.fixture(scope="module")
def chain_runs():
    model = _chain()
    good = _simulate(model, (FAILED_STEP - 1) * KW["dt"])
    with pytest.raises(fm.ConvergenceError) as info:
        _simulate(model, 3.0)
    return model, good, info.value


def test_failed_block_keeps_completed_steps(chain_runs):
    """The failure in the middle of one compiled block (2000 steps): the error is a
    :class:`ConvergenceError` at the failing step's time, ``partial`` ends at the last good
    state (t = 2.56 s) and its rows equal those of a run that stops there, bit for bit."""
    _, good, err = chain_runs
    dt = KW["dt"]
    assert err.time == pytest.approx(FAILED_STEP * dt, abs=1e-12)
    assert err.partial.t[-1] == pytest.approx((FAILED_STEP - 1) * dt, abs=1e-12)
    _assert_rows_kept(err.partial, good)


def test_failed_checkpointed_run_keeps_completed_steps(chain_runs, tmp_path):
    """The same failure in a checkpointed run (blocks of 100 steps): the two blocks before
    the failing one and the failing block's completed steps are all kept, bitwise."""
    model, good, _ = chain_runs
    path = tmp_path / "chain.h5"
    with pytest.raises(fm.ConvergenceError) as info:
        _simulate(model, 3.0, checkpoint=path, every=100)
    err = info.value
    assert err.time == pytest.approx(FAILED_STEP * KW["dt"], abs=1e-12)
    _assert_rows_kept(err.partial, good)


def test_failed_dense_run_keeps_completed_steps():
    """The dense solve path (one pendulum link: 13 unknowns, LAPACK): Newmark with
    dt = 0.3 s does not converge in its third step (the link swings through ~0.6 rad per
    step); the error names that step's time and the two completed steps are kept,
    bit-identical to a run that stops before it."""
    model = _chain(1)
    kw = dict(KW, dt=0.3)
    s = model.compile("absolute")
    assert not s.engine().sparse
    s.initial_conditions()
    with pytest.raises(fm.ConvergenceError) as info:
        s.simulate(3.0, **kw)
    err = info.value
    assert err.time == pytest.approx(0.9, abs=1e-12)
    s = model.compile("absolute")
    s.initial_conditions()
    good = s.simulate(0.6, **kw)
    assert len(err.partial.t) == 3 == len(good.t)
    for name in ("q", "qd", "qdd"):
        assert np.array_equal(getattr(err.partial, name), getattr(good, name)), name


def _velocity_drift(model, q, qd, t):
    """``max |Phi_q qd - nu|``: how far the speeds violate the velocity constraints."""
    s = model.compile("absolute")
    return float(np.abs(s.constraint_jacobian(q, t) @ qd - s.constraint_velocity_rhs(q, t)).max())


def test_chain_failure_is_unprojected_velocity_drift(chain_runs):
    """Why the 50-chain's Newton diverges: without the velocity projection, Newmark's
    trapezoidal rule lets the speeds drift off the velocity constraints and the whip of
    the free end amplifies it (~5e-3 at 2 s, ~12 at 2.56 s); the Newton matrix is then
    singular only at the diverging iterates. With the projection (the default for this
    scheme) a step of 0.002 s runs through the whip to 3 s on consistent speeds."""
    model, good, err = chain_runs
    k2 = int(np.searchsorted(good.t, 2.0 - 1e-9))
    early = _velocity_drift(model, good.q[k2], good.qd[k2], good.t[k2])
    late = _velocity_drift(model, err.partial.q[-1], err.partial.qd[-1], err.partial.t[-1])
    assert early < 1e-2 and late > 1.0 > 100 * early
    kw = dict(KW, dt=0.002, project_velocities=True)
    s = model.compile("absolute")
    s.initial_conditions()
    res = s.simulate(3.0, **kw)
    assert res.t[-1] == pytest.approx(3.0)
    assert _velocity_drift(model, res.q[-1], res.qd[-1], 3.0) < 1e-8 * np.abs(res.qd[-1]).max()


def _relative_angles(q):
    """Joint angles (rad) of the planar chain from its bodies' Euler parameters (about z)."""
    phi = 2.0 * np.arctan2(q[:, 6::7], q[:, 3::7])
    rel = np.diff(np.concatenate([np.zeros((len(q), 1)), phi], axis=1), axis=1)
    return (rel + np.pi) % (2.0 * np.pi) - np.pi


def test_chain_whip_against_recursive():
    """The 50-chain through its whip (projected Newmark, dt = 2 and 1 ms) against the
    recursive formulation (RK45, rtol = atol = 1e-9): the joint angles converge at second
    order (error ratio ~4 at t = 2 s: 1.26e-4 / 3.14e-5 rad measured) and agree within
    5e-3 rad at 3 s, after the free end's ~100 rad/s whip at 2.55 s."""
    model = _chain()
    times = np.array([2.0, 3.0])
    ref = model.compile("recursive").simulate(3.0, rtol=1e-9, atol=1e-9, t_eval=times)
    ref_q = np.asarray(ref.q)[[int(np.searchsorted(ref.t, t - 1e-9)) for t in times]]
    err = []
    for dt in (0.002, 0.001):
        s = model.compile("absolute")
        s.initial_conditions()
        res = s.simulate(3.0, **dict(KW, dt=dt, project_velocities=True))
        rows = [int(np.searchsorted(res.t, t - 1e-9)) for t in times]
        err.append(np.abs(_relative_angles(res.q[rows]) - ref_q).max(axis=1))
    ratio = err[0][0] / err[1][0]
    assert 3.0 < ratio < 5.0
    assert err[1][1] < 5e-3
