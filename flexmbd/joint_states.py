"""Joint coordinates, speeds and speed rates of every joint from the bodies' motion.

One map for every formulation: the joint frames' world poses and twists follow from
the bodies' (``system.body_states``, plus the modal coordinates of flexible bodies
for frames that deform), and then

* coordinates ``q`` from the relative pose ``R = R_P^T R_C``,
  ``d = R_P^T (p_C - p_P)`` (:func:`flexmbd.joint_types.joint_coordinates`, the one
  map of every formulation); angles are unwrapped along time (continuous, starting on
  the branch of the joint's ``q0``), quaternions kept sign-continuous;
* speeds ``v`` = the projection of the relative twist of the child frame on the
  joint's motion subspace: ``V = [R_C^T (w_C - w_P); R_C^T (v_C - v_P - w_P x (p_C - p_P))]``
  (child axes, the convention of :meth:`flexmbd.model.joints.Joint.motion_subspace`),
  ``v = H^+ V``;
* rates ``qdd`` = the projection of the time derivative of that relative twist:
  ``qdd = H^+ (dV/dt - c(q, v))`` (``c`` the joint's bias acceleration, non-zero for
  joints whose ``H`` turns with ``q``), with
  ``dV/dt = [R_C^T (a_C - a_P - w_C x (w_C - w_P)); R_C^T (u' - w_C x u)]``,
  ``u = v_C - v_P - w_P x d``, ``u' = a_C - a_P - alpha_P x d - w_P x (v_C - v_P)``,
  exact from the bodies' accelerations when the System gives them
  (``system.body_accelerations(q, qd, qdd)``, the absolute formulation); otherwise
  (the cut joints of the recursive formulation) ``dV/dt`` is a central directional
  difference of the twist map in state space, at ``(q +/- eps dq/dt, qd +/- eps qdd)``
  (O(eps^2)).

Frames that deform with a flexible body (interface frames) move with the modal
coordinates: origin ``p0 + X_t q_f`` and rotation ``exp(X_r q_f) R0``, whose angular
velocity and acceleration follow exactly from the left Jacobian of SO(3).

:func:`fill_joint_states` fills ``results.joint_series[NAME]`` for every
joint whose coordinates are not columns of the results (the joints of the absolute
formulation, cut joints of closed loops); :class:`flexmbd.results.JointHistory`
reads them.
"""

import numpy as np

from .joint_types import UNIVERSAL, joint_coordinates, joint_type
from .series import JointSeries

__all__ = ["fill_joint_states", "angle_columns", "cross_rows"]

_EPS = 1e-6


def angle_columns(joint):
    """Indices of the joint coordinates that are angles (rad), unwrapped along time."""
    return list(joint_type(joint).angles)


def _modal(system, q, qd, name, qdd=None):
    """Modal coordinates, speeds (and rates) of flexible body ``name`` over a history."""
    layout = getattr(system, "layout", None)
    sl = None if layout is None else layout.modal.get(name)
    if sl is None:
        return None
    return q[:, sl.q], qd[:, sl.v], (None if qdd is None else qdd[:, sl.v])


def _body_motion(system, q, qd):
    """``{body name: (R (nt,3,3), r (nt,3), w (nt,3), v (nt,3))}`` world, origin velocity."""
    nt = len(q)
    if hasattr(system, "body_motion"):  # a whole history at once
        return system.body_motion(q, qd)
    out = {}
    for i in range(nt):
        for name, st in system.body_states(q[i], qd[i]).items():
            name = name if isinstance(name, str) else name.name
            if name not in out:
                out[name] = (
                    np.empty((nt, 3, 3)),
                    np.empty((nt, 3)),
                    np.empty((nt, 3)),
                    np.empty((nt, 3)),
                )
            for k in range(4):
                out[name][k][i] = st[k]
    return out


def _exp_rates(theta, dtheta, ddtheta):
    """Angular velocity and acceleration (nt, 3) of ``exp(skew(theta))``, spatial axes:
    ``w = J_l(theta) theta'`` and its time derivative (exact, J_l the left Jacobian)."""
    t = np.linalg.norm(theta, axis=1)
    small = t < 1e-4
    ts = np.where(small, 1.0, t)
    a = np.where(small, 0.5 - t**2 / 24, (1 - np.cos(ts)) / ts**2)
    b = np.where(small, 1 / 6 - t**2 / 120, (ts - np.sin(ts)) / ts**3)
    # a'(t)/t and b'(t)/t (their series below 1e-4 rad)
    da = np.where(small, -1 / 12 + t**2 / 180, (ts * np.sin(ts) - 2 * (1 - np.cos(ts))) / ts**4)
    db = np.where(
        small,
        -1 / 60 + t**2 / 1260,
        ((1 - np.cos(ts)) / ts**3 - 3 * (ts - np.sin(ts)) / ts**4) / ts,
    )
    c1 = cross_rows(theta, dtheta)
    c2 = cross_rows(theta, c1)
    w = dtheta + a[:, None] * c1 + b[:, None] * c2
    if ddtheta is None:
        return w, None
    td = np.einsum("ti,ti->t", theta, dtheta)  # t t' = theta . theta'
    e1 = cross_rows(theta, ddtheta)
    al = (
        ddtheta
        + a[:, None] * e1
        + b[:, None] * cross_rows(theta, e1)
        + (da * td)[:, None] * c1
        + (db * td)[:, None] * c2
        + b[:, None] * cross_rows(dtheta, c1)
    )
    return w, al


def cross_rows(a, b):
    """Row-wise cross products ``a x b`` of (nt, 3) vectors (broadcast; any unit): the
    products and differences of :func:`numpy.cross` in the same order (the same values), without its
    axis handling (~15 us per call, a dozen calls per joint series)."""
    if a.shape != b.shape:  # (np.broadcast_arrays costs more than the products here)
        a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape)
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def _frame_motion(frame, body, motion, modal, nt, accel=None):
    """World pose, twist (and acceleration) of ``frame`` on ``body``:
    ``(R, p, w, v, alpha, a)`` (nt, ...); ``alpha, a`` are None without ``accel``
    (``{body name: (alpha, a_origin)}``, world)."""
    if body.name == "ground" or body.name not in motion:
        R = np.broadcast_to(frame.rotation, (nt, 3, 3))
        p = np.broadcast_to(frame.position, (nt, 3))
        z = np.zeros((nt, 3))
        return R, p, z, z, z, z
    Rb, rb, wb, vb = motion[body.name]
    qf, qfd, qfdd = modal.get(body.name, (None, None, None))
    if hasattr(frame, "pose") and qf is not None and np.any(frame.modes):
        X = np.asarray(frame.modes, float)
        theta, pf = qf @ X[:3].T, frame.position + qf @ X[3:].T
        Rf = rotvec_batch(theta) @ frame.rotation
        wf, alf = _exp_rates(theta, qfd @ X[:3].T, None if qfdd is None else qfdd @ X[:3].T)
        vf = qfd @ X[3:].T
        af = None if qfdd is None else qfdd @ X[3:].T
    else:
        return _rigid_frame_motion(frame, body, Rb, rb, wb, vb, nt, accel)
    R = Rb @ Rf
    s = np.einsum("tij,tj->ti", Rb, pf)
    p = rb + s
    wfw, vfw = np.einsum("tij,tj->ti", Rb, wf), np.einsum("tij,tj->ti", Rb, vf)
    w = wb + wfw
    v = vb + cross_rows(wb, s) + vfw
    if accel is None or af is None:
        return R, p, w, v, None, None
    alb, ab = accel[body.name]
    alpha = alb + np.einsum("tij,tj->ti", Rb, alf) + cross_rows(wb, wfw)
    a = (
        ab
        + cross_rows(alb, s)
        + cross_rows(wb, cross_rows(wb, s))
        + 2 * cross_rows(wb, vfw)
        + np.einsum("tij,tj->ti", Rb, af)
    )
    return R, p, w, v, alpha, a


def _rigid_frame_motion(frame, body, Rb, rb, wb, vb, nt, accel):
    """:func:`_frame_motion` of a frame fixed on its body (no modal motion): the body's
    terms only (the frame's own rate terms are zeros; adding them changed nothing but
    the sign of an exact zero)."""
    Rf = np.broadcast_to(frame.rotation, (nt, 3, 3))
    pf = np.broadcast_to(frame.position, (nt, 3))
    R = Rb @ Rf
    s = np.einsum("tij,tj->ti", Rb, pf)
    p = rb + s
    w = wb + 0.0  # (a new array, +0.0 for an exact zero as with the frame's zero rate)
    v = vb + cross_rows(wb, s)
    if accel is None:
        return R, p, w, v, None, None
    alb, ab = accel[body.name]
    a = ab + cross_rows(alb, s) + cross_rows(wb, cross_rows(wb, s))
    return R, p, w, v, alb + 0.0, a


def rotvec_batch(theta):
    """Rotation matrices (nt, 3, 3) ``exp(skew(theta))`` of rotation vectors (nt, 3)."""
    t = np.linalg.norm(theta, axis=1)
    small = t < 1e-4
    ts = np.where(small, 1.0, t)
    s = np.where(small, 1 - t**2 / 6, np.sin(ts) / ts)
    c = np.where(small, 0.5 - t**2 / 24, (1 - np.cos(ts)) / ts**2)
    K = np.zeros((len(theta), 3, 3))
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -theta[:, 2], theta[:, 1], -theta[:, 0]
    K -= np.transpose(K, (0, 2, 1))
    return np.eye(3) + s[:, None, None] * K + c[:, None, None] * (K @ K)


def _relative(joint, motion, modal, nt, accel=None):
    """Relative pose ``(Rrel, d)`` in parent-frame axes, relative twist ``V`` and (with
    ``accel``) its time derivative ``Vd`` in child-frame axes (module docstring)."""
    RP, pP, wP, vP, alP, aP = _frame_motion(
        joint.parent_frame, joint.parent, motion, modal, nt, accel
    )
    RC, pC, wC, vC, alC, aC = _frame_motion(
        joint.child_frame, joint.child, motion, modal, nt, accel
    )
    Rrel = np.einsum("tji,tjk->tik", RP, RC)
    dp = pC - pP
    d = np.einsum("tji,tj->ti", RP, dp)
    Om, u = wC - wP, vC - vP - cross_rows(wP, dp)
    child = lambda x: np.einsum("tji,tj->ti", RC, x)
    V = np.concatenate([child(Om), child(u)], axis=1)
    if alP is None or alC is None:
        return Rrel, d, V, None
    ud = aC - aP - cross_rows(alP, dp) - cross_rows(wP, vC - vP)
    Vd = np.concatenate(
        [child(alC - alP - cross_rows(wC, Om)), child(ud - cross_rows(wC, u))], axis=1
    )
    return Rrel, d, V, Vd


def _speeds(joint, qj, V):
    if joint.nv == 0:
        return np.zeros((len(V), 0))
    if joint_type(joint).code == UNIVERSAL:  # H(q) changes with q
        return np.array(
            [
                np.linalg.lstsq(joint.motion_subspace(qj[i]), V[i], rcond=None)[0]
                for i in range(len(V))
            ]
        )
    return V @ _pinv(joint.motion_subspace(qj[0] if len(qj) else None)).T


_PINV: dict = {}


def _pinv(H):
    """:func:`numpy.linalg.pinv` of a constant motion subspace ``H`` (6, nv), kept per
    matrix (the same array for the same bytes: a joint series asks it twice per joint)."""
    H = np.asarray(H, dtype=float)
    key = (H.shape, H.tobytes())
    out = _PINV.get(key)
    if out is None:
        if len(_PINV) > 256:
            _PINV.clear()
        out = _PINV[key] = np.linalg.pinv(H)
        out.flags.writeable = False
    return out


def _coordinates(joint, Rrel, d):
    return joint_coordinates(joint, Rrel, d)


def _states(system, q, qd, joints, with_q=True, qdd=None):
    """``{joint name: (q_joint or None, V, Vd or None)}`` over a history; ``Vd`` exact when
    ``qdd`` is given and the System gives body accelerations."""
    nt = len(q)
    motion = _body_motion(system, q, qd)
    accel = None
    if qdd is not None and hasattr(system, "body_accelerations"):
        accel = system.body_accelerations(q, qd, qdd)
    modal = {}
    for j in joints:
        for b in (j.parent, j.child):
            m = _modal(system, q, qd, b.name, qdd)
            if m is not None:
                modal[b.name] = m
    out = {}
    for j in joints:
        Rrel, d, V, Vd = _relative(j, motion, modal, nt, accel)
        qj = _coordinates(j, Rrel, d) if with_q else None
        out[j.name] = (qj, V, Vd)
    return out


def _rates(joint, qj, v, Vd):
    """``qdd = H^+ (Vd - c(q, v))`` (nt, nv): joint rates from the twist's derivative."""
    bias = getattr(joint, "bias_acceleration", None)
    if joint_type(joint).code == UNIVERSAL and bias is not None:
        return np.array(
            [
                np.linalg.lstsq(
                    joint.motion_subspace(qj[i]), Vd[i] - bias(qj[i], v[i]), rcond=None
                )[0]
                for i in range(len(Vd))
            ]
        ).reshape(len(Vd), joint.nv)
    return _speeds(joint, qj, Vd)


def fill_joint_states(results, system, joints=None):
    """Fill ``results.joint_series[NAME]``: ``q`` (nt, nq), ``qd`` and ``qdd`` (nt, nv).

    For every joint of ``system.model`` (or ``joints``) whose coordinates are not
    columns of ``results`` (see the module docstring). Returns ``results``.
    """
    model = getattr(system, "model", None)
    if model is None or not hasattr(system, "body_states"):
        return results
    owners = {o for o, _ in results.coordinates}
    joints = [j for j in (model.joints() if joints is None else joints) if j.name not in owners]
    nt = len(results.t)
    if not joints or nt == 0:
        return results
    q, qd, qdd = results.q, results.qd, results.qdd
    ok = np.all(np.isfinite(qdd), axis=1)
    qdd0 = np.where(ok[:, None], qdd, 0.0)
    now = _states(system, q, qd, joints, qdd=qdd0)
    if any(Vd is None for _, _, Vd in now.values()):
        # no body accelerations from this System: the twist's derivative by differences
        qdot = getattr(system, "qdot", None)
        dq = np.array([qdot(q[i], qd[i]) for i in range(nt)]) if qdot is not None else qd
        plus = _states(system, q + _EPS * dq, qd + _EPS * qdd0, joints, with_q=False)
        minus = _states(system, q - _EPS * dq, qd - _EPS * qdd0, joints, with_q=False)
        now = {n: (qj, V, (plus[n][1] - minus[n][1]) / (2 * _EPS)) for n, (qj, V, _) in now.items()}
    for j in joints:
        qj, V, Vd = now[j.name]
        v = _speeds(j, qj, V)
        a = _rates(j, qj, v, Vd)
        a[~ok] = np.nan
        results.joint_series[j.name] = JointSeries(qj, v, a)
    return results
