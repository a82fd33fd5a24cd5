"""Joint rates of the absolute formulation, exact from the relative twist's derivative.

At one state of the recursive formulation (joint coordinates), the absolute state of the
same bodies is built; its forward dynamics gives ``qdd`` of the body coordinates, from
which :func:`flexmbd.joint_states.fill_joint_states` recovers every joint's coordinates,
speeds and rates. They equal the recursive formulation's own joint accelerations (the
two formulations agree to round-off here, DESIGN oracle 2): no difference quotient is
left in the rates.
"""

import numpy as np
import pytest
from models import double_pendulum, flexible_pendulum

from flexmbd.joint_states import _exp_rates, rotvec_batch
from flexmbd.results import Results
from flexmbd.spatial import rotvec_to_rot


def _cols(table, name):
    return [i for i, (o, _) in enumerate(table) if o == name]


def _joint_states_at(model, q, qd):
    rec, ab = model.compile("recursive"), model.compile("absolute")
    qa, qda = ab.state_from_bodies(rec.body_states(q, qd))
    for name, sl in rec.modal_slices.items():  # deformation: the same modal state
        qa[ab.modal_slices[name].q] = q[sl.q]
        qda[ab.modal_slices[name].v] = qd[sl.v]
    fa, fr = ab.forward_dynamics(qa, qda), rec.forward_dynamics(q, qd)
    res = Results(
        [0.0],
        qa[None],
        qda[None],
        fa.qdd[None],
        coordinates=ab.coordinates,
        speeds=ab.speeds,
        joint_names=ab.joint_names,
        reactions=fa.reactions[None],
    )
    res.system = ab
    return rec, res, fr


@pytest.mark.parametrize(
    "build, tol",
    [
        # measured 1.2e-14 (elbow) and 2.6e-16 (hinge on the deforming interface A); the
        # central difference of the twist map it replaces gave 1e-11 and 3e-14
        (lambda: double_pendulum(elbow_axis=(0.2, 0.3, 1.0)), 1e-13),
        (flexible_pendulum, 1e-13),
    ],
)
def test_absolute_joint_rates_equal_recursive_accelerations(build, tol):
    model = build()
    rec = model.compile("recursive")
    rng = np.random.default_rng(3)
    q0 = rec.q0() if callable(rec.q0) else rec.q0  # flexible systems: a method
    q = q0 + 0.01 * rng.standard_normal(rec.nq)
    q[:1] += 0.4
    qd = rng.standard_normal(rec.nv) * np.where(np.arange(rec.nv) < 2, 1.5, 0.05)
    rec, res, fr = _joint_states_at(model, q, qd)
    scale = 1 + np.abs(fr.qdd).max()
    for j in model.joints():
        h = res.joint(j.name)
        np.testing.assert_allclose(h.q[0], q[_cols(rec.coordinates, j.name)], atol=1e-12)
        np.testing.assert_allclose(h.qd[0], qd[_cols(rec.speeds, j.name)], atol=1e-12)
        err = np.abs(h.qdd[0] - fr.qdd[_cols(rec.speeds, j.name)]).max() / scale
        assert err < tol, (j.name, err)


@pytest.mark.parametrize("amp", [0.7, 1e-5])
def test_exponential_map_rates_are_exact(amp):
    """Angular velocity/acceleration of exp(theta(t)) against the rotation matrices'
    own derivatives (a smooth curve; fourth-order differences, h = 1e-3), small angles
    included (the series branch)."""
    t0, h = 0.3, 1e-3

    def th(t):
        return amp * np.array([np.sin(t), np.cos(2 * t), t**2])

    def dth(t):
        return amp * np.array([np.cos(t), -2 * np.sin(2 * t), 2 * t])

    def ddth(t):
        return amp * np.array([-np.sin(t), -4 * np.cos(2 * t), 2.0])

    def stencil(f):
        return (f(t0 - 2 * h) - 8 * f(t0 - h) + 8 * f(t0 + h) - f(t0 + 2 * h)) / (12 * h)

    def R(t):
        return rotvec_to_rot(th(t))

    def w_of(t):
        return _exp_rates(th(t)[None], dth(t)[None], None)[0][0]

    W = stencil(R) @ R(t0).T
    w_ref = 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])
    w, al = _exp_rates(th(t0)[None], dth(t0)[None], ddth(t0)[None])
    np.testing.assert_allclose(rotvec_batch(th(t0)[None])[0], R(t0), atol=1e-15)
    np.testing.assert_allclose(w[0], w_ref, atol=1e-10 * amp)
    np.testing.assert_allclose(al[0], stencil(w_of), atol=1e-9 * amp)


def test_joint_series_twice_are_the_same():
    """The joint series of a run's cut joints asked again (the pseudo-inverses of the
    constant motion subspaces and the revolute joints' perpendicular bases then come
    from their memos) are the first ones bit for bit, and the memo is the pseudo-inverse
    of that subspace."""
    import sys
    from pathlib import Path

    from flexmbd import joint_states as JS
    from flexmbd.joint_states import fill_joint_states

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import andrews_squeezer as sq

    JS._PINV.clear()
    s = sq.build(False).compile("recursive")
    res = s.simulate(0.01, dt=1e-3, integrator="rk4")
    first = {k: (j.q.copy(), j.qd.copy(), j.qdd.copy()) for k, j in res.joint_series.items()}
    assert set(first) == {"E3", "E4", "E6"} and JS._PINV
    for H_key, P in JS._PINV.items():
        shape, raw = H_key
        H = np.frombuffer(raw).reshape(shape)
        np.testing.assert_array_equal(P, np.linalg.pinv(H))
    res.joint_series.clear()
    fill_joint_states(res, s)
    for k, (q, qd, qdd) in first.items():
        js = res.joint_series[k]
        np.testing.assert_array_equal(js.q, q)
        np.testing.assert_array_equal(js.qd, qd)
        np.testing.assert_array_equal(js.qdd, qdd)
    assert np.ptp(first["E3"][0]) > 1e-3  # (a moving joint, rad)
