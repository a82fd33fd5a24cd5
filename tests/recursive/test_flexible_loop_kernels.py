"""Closed loops through flexible bodies in compiled code (flexmbd.recursive._nbflexcut):
the cut-joint rows, the cut wrenches through deforming frames and the projected solve
agree with the Python reference path (``LoopSystem.flex_compiled = False``) to round-off,
and they are the path taken by default."""

import numpy as np
import pytest

from flexmbd.recursive import _flexkernels as FK
from flexmbd.recursive import _nbflexcut as FC

from .test_flexible_loops import _state, fourbar

CASES = [("cbA", "spherical", False), ("cb", "universal", False), ("cb", "spherical", True)]


def _loop(kind, closing, stiff, seed=1):
    ls = fourbar(kind, closing, stiffening=stiff).compile("recursive")
    q, qd = _state(ls, np.random.default_rng(seed), scale=1e-3, speed=5.0)
    return ls, q, qd


def _close(x, y, rtol):
    """|x - y| within ``rtol`` of the largest |y| (round-off of sums in another order)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    return np.abs(x - y).max() <= rtol * max(np.abs(y).max(), 1e-300)


@pytest.mark.parametrize("kind, closing, stiff", CASES)
def test_compiled_rows_agree_with_the_python_rows(kind, closing, stiff):
    ls, q, qd = _loop(kind, closing, stiff)
    c = ls.constraints
    assert c.compiled_flex
    for v in (qd, None):
        c.compiled_flex = True
        a = c._eval(q, v, 0.0)
        c.compiled_flex = False
        b = c._eval(q, v, 0.0)
        c.compiled_flex = True
        # measured: 2e-16 (phi, J) ... 6e-15 (gamma) of the largest entry
        for name in ("phi", "J") + (("gamma",) if v is not None else ()):
            assert _close(a[name], b[name], 1e-13), name
        # phi of a closed state is round-off itself: compare it with the frames' scale
        assert np.abs(a["phi"] - b["phi"]).max() <= 1e-15
        for ra, rb in zip(a["rel"], b["rel"]):
            for x, y in zip(ra, rb):
                assert (x is None) == (y is None)
                if x is not None:
                    assert np.abs(x - y).max() <= 1e-13 * (1.0 + np.abs(y).max())
    # the modal columns are there (the coupler's interface moves with its modes)
    sv = ls.modal_slices["coupler"].v
    assert np.abs(c.jacobian(q)[:, sv]).max() > 1e-2


def test_compiled_cut_wrenches_equal_frame_wrench():
    """Wrenches through both cut frames, one of them the coupler's stiffened interface:
    the compiled kernel puts the same body wrenches and modal forces (with the interface's
    geometric-stiffening term) into the tree workspace as FlexTree.frame_wrench."""
    ls, q, qd = _loop("cb", "spherical", True)
    sI = ls.constraints.sides()[0]
    assert (sI[:, FC.SI_KIND] == FC.S_FLEX).sum() == 1 and sI[:, FC.SI_KG].max() >= 12
    tree, fl = ls.tree, ls.tree.flex
    el = ls._wrench_element
    rng = np.random.default_rng(4)
    j = ls.cut_joints[0]
    items = [
        (j.child, rng.normal(size=3), rng.normal(size=3), rng.normal(size=3), j.child_frame),
        (j.parent, rng.normal(size=3), rng.normal(size=3), rng.normal(size=3), j.parent_frame),
    ]
    out = []
    for compiled in (True, False):
        el.compiled = compiled
        el.current = items
        fext = np.zeros((tree.n_bodies + 1, 6))
        fl.clear_applied()
        tree.kinematics(q, qd)
        assert fl.point_force(el, 0.0, q, None, fext, qd)
        out.append((fext.copy(), fl.Fm[:, FK.FM_QAPP].copy()))
        fl.clear_applied()
    el.current, el.compiled = [], True
    (fa, ma), (fb, mb) = out
    assert np.abs(fb).max() > 0.1 and np.abs(mb).max() > 1e-3
    assert _close(fa, fb, 1e-14) and _close(ma, mb, 1e-13)


@pytest.mark.parametrize("kind, closing, stiff", CASES)
def test_forward_dynamics_agrees_with_the_python_path(kind, closing, stiff):
    ls, q, qd = _loop(kind, closing, stiff)
    q, qd = ls.project(q, qd)
    assert ls.projector.selection() is not None  # a corrected regular state: rows known
    fa = ls.forward_dynamics(q, qd)
    ls.flex_compiled = False
    fb = ls.forward_dynamics(q, qd)
    ls.flex_compiled = True
    # measured 1e-14 (qdd), 5e-14 (reactions, multipliers) of the largest entry
    assert _close(fa.qdd, fb.qdd, 1e-12)
    assert _close(fa.lam, fb.lam, 1e-12)
    assert _close(fa.reactions, fb.reactions, 1e-12)


def test_the_compiled_path_is_taken(monkeypatch):
    """Default path: the RK4 stages call the compiled projected solve, the steps the
    compiled correction, the reactions the compiled wrenches; with ``flex_compiled = False``
    none of them, and both runs agree to round-off."""
    ls, q, qd = _loop("cbA", "spherical", False)
    # (only kernels called from Python: flex_cuts_eval is a numba global of the other two,
    # which would not compile with a cold cache if it were replaced)
    names = ("flex_loop_accelerations", "flex_frame_wrenches", "flex_correct")
    calls = dict.fromkeys(names, 0)

    def counted(name):
        f = getattr(FC, name)

        def wrapper(*args):
            calls[name] += 1
            return f(*args)

        return wrapper

    for name in calls:
        monkeypatch.setattr(FC, name, counted(name))
    r1 = ls.simulate(0.001, dt=1e-4, integrator="rk4", q0=q, qd0=qd)
    assert calls["flex_loop_accelerations"] >= 40  # 4 stages x 10 steps
    assert calls["flex_correct"] >= 5  # after the steps the QR need not decide (9 of 10)
    assert calls["flex_frame_wrenches"] > 0  # the reactions of the output samples
    n = dict(calls)
    ls.flex_compiled = False
    r2 = ls.simulate(0.001, dt=1e-4, integrator="rk4", q0=q, qd0=qd)
    assert calls == n
    # measured 8e-16 (q), 1.4e-13 of the largest speed (qd) after 10 steps
    assert np.abs(r1.q - r2.q).max() <= 1e-13
    assert _close(r1.qd, r2.qd, 1e-11)
    assert _close(r1.reactions, r2.reactions, 1e-10)


@pytest.mark.parametrize("kind, closing, stiff", CASES)
def test_compiled_correction_agrees_with_the_projector(kind, closing, stiff):
    """A perturbed state corrected by the compiled Newton and velocity steps on the
    projector's rows and by the projector itself (QR): the same state to round-off
    (measured <= 1e-22 in q, 2.2e-16 in qd), on the constraint manifold."""
    ls, q, qd = _loop(kind, closing, stiff)
    q, qd = ls.project(q, qd)
    rng = np.random.default_rng(2)
    q2 = q + 1e-6 * rng.normal(size=q.shape)
    qd2 = qd + 1e-3 * rng.normal(size=qd.shape)
    a = ls._flex_project(q2, qd2, ls.projector)
    assert a is not None
    b = ls.projector.correct(q2, qd2, 0.0)
    assert np.abs(a[0] - b[0]).max() <= 1e-14
    assert np.abs(a[1] - b[1]).max() <= 1e-13 * np.abs(b[1]).max()
    c = ls.constraints
    assert np.abs(c.phi(a[0])).max() <= 1e-14
    assert np.abs(c.jacobian(a[0]) @ a[1]).max() <= 1e-12 * np.abs(a[1]).max()


def test_adaptive_run_agrees_with_the_python_path():
    """RK45 (a correction at every stage): the same number of accepted steps; the step
    sizes follow the error estimates, which see the round-off of the two paths (measured
    1.2e-8 of the run in the step times), and the end states agree to round-off."""
    ls, q, qd = _loop("cbA", "spherical", False)
    kw = dict(integrator="RK45", rtol=1e-7, atol=1e-9, q0=q, qd0=qd)
    r1 = ls.simulate(0.001, **kw)
    ls.flex_compiled = False
    r2 = ls.simulate(0.001, **kw)
    ls.flex_compiled = True
    assert len(r1.t) == len(r2.t) and r1.t[-1] == r2.t[-1]
    assert np.abs(r1.t - r2.t).max() <= 1e-7 * r1.t[-1]
    # measured 4.4e-16 (q), 4.1e-13 of the largest speed (qd)
    assert np.abs(r1.q[-1] - r2.q[-1]).max() <= 1e-12
    assert _close(r1.qd[-1], r2.qd[-1], 1e-9)
