"""Joint coordinates, speeds and speed rates of every joint from the bodies' motion.

One map for every formulation: the joint frames' world poses and twists follow from
the bodies' (``system.body_states``, plus the modal coordinates of flexible bodies
for frames that deform), and then

* coordinates ``q`` from the relative pose ``R = R_P^T R_C``,
  ``d = R_P^T (p_C - p_P)`` (:func:`flexmbd.constraints.cut.cut_coordinates`);
  angles are unwrapped along time (continuous, starting on the branch of the joint's
  ``q0``), quaternions kept sign-continuous;
* speeds ``v`` = the projection of the relative twist of the child frame on the
  joint's motion subspace: ``V = [R_C^T (w_C - w_P); R_C^T (v_C - v_P - w_P x (p_C - p_P))]``
  (child axes, the convention of :meth:`flexmbd.model.joints.Joint.motion_subspace`),
  ``v = H^+ V``;
* rates ``qdd``: the time derivative of ``v`` along the trajectory, a central
  directional difference of the speed map in state space, at
  ``(q +/- eps dq/dt, qd +/- eps qdd)`` (exact to O(eps^2)).

:func:`fill_joint_states` fills ``results.extra["joint:NAME:q|qd|qdd"]`` for every
joint whose coordinates are not columns of the results (the joints of the absolute
formulation, cut joints of closed loops); :class:`flexmbd.results.JointHistory`
reads them.
"""

import numpy as np

from .constraints.cut import cut_coordinates
from .model.joints import Cylindrical, Free, Planar, Prismatic, Revolute, Spherical, Universal

__all__ = ["fill_joint_states", "angle_columns"]

_EPS = 1e-6


def angle_columns(joint):
    """Indices of the joint coordinates that are angles (rad), unwrapped along time."""
    if isinstance(joint, (Revolute, Cylindrical)):
        return [0]
    if isinstance(joint, Universal):
        return [0, 1]
    if isinstance(joint, Planar):
        return [2]
    return []


def _modal(system, q, qd, name):
    layout = getattr(system, "layout", None)
    sl = None if layout is None else layout.modal.get(name)
    if sl is None:
        return None, None
    return q[:, sl.q], qd[:, sl.v]


def _body_motion(system, q, qd):
    """``{body name: (R (nt,3,3), r (nt,3), w (nt,3), v (nt,3))}`` world, origin velocity."""
    nt = len(q)
    if hasattr(system, "body_motion"):            # a whole history at once
        return system.body_motion(q, qd)
    out = {}
    for i in range(nt):
        for name, st in system.body_states(q[i], qd[i]).items():
            name = name if isinstance(name, str) else name.name
            if name not in out:
                out[name] = (np.empty((nt, 3, 3)), np.empty((nt, 3)), np.empty((nt, 3)),
                             np.empty((nt, 3)))
            for k in range(4):
                out[name][k][i] = st[k]
    return out


def _frame_motion(frame, body, motion, modal, nt):
    """World pose and twist of ``frame`` on ``body``: ``(R, p, w, v)`` (nt, ...)."""
    if body.name == "ground" or body.name not in motion:
        R = np.broadcast_to(frame.rotation, (nt, 3, 3))
        p = np.broadcast_to(frame.position, (nt, 3))
        z = np.zeros((nt, 3))
        return R, p, z, z
    Rb, rb, wb, vb = motion[body.name]
    qf, qfd = modal.get(body.name, (None, None))
    if hasattr(frame, "pose") and qf is not None and np.any(frame.modes):
        Rf = np.empty((nt, 3, 3))
        pf = np.empty((nt, 3))
        wf = np.empty((nt, 3))
        vf = np.empty((nt, 3))
        for i in range(nt):
            Rf[i], pf[i] = frame.pose(qf[i])
            Ra, pa = frame.pose(qf[i] + _EPS * qfd[i])
            Rm, pm = frame.pose(qf[i] - _EPS * qfd[i])
            W = (Ra - Rm) / (2 * _EPS) @ Rf[i].T
            wf[i] = 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])
            vf[i] = (pa - pm) / (2 * _EPS)
    else:
        Rf = np.broadcast_to(frame.rotation, (nt, 3, 3))
        pf = np.broadcast_to(frame.position, (nt, 3))
        wf = vf = np.zeros((nt, 3))
    R = Rb @ Rf
    s = np.einsum("tij,tj->ti", Rb, pf)
    p = rb + s
    w = wb + np.einsum("tij,tj->ti", Rb, wf)
    v = vb + np.cross(wb, s) + np.einsum("tij,tj->ti", Rb, vf)
    return R, p, w, v


def _relative(joint, motion, modal, nt):
    RP, pP, wP, vP = _frame_motion(joint.parent_frame, joint.parent, motion, modal, nt)
    RC, pC, wC, vC = _frame_motion(joint.child_frame, joint.child, motion, modal, nt)
    Rrel = np.einsum("tji,tjk->tik", RP, RC)
    dp = pC - pP
    d = np.einsum("tji,tj->ti", RP, dp)
    V = np.concatenate([np.einsum("tji,tj->ti", RC, wC - wP),
                        np.einsum("tji,tj->ti", RC, vC - vP - np.cross(wP, dp))], axis=1)
    return Rrel, d, V


def _speeds(joint, qj, V):
    if joint.nv == 0:
        return np.zeros((len(V), 0))
    if isinstance(joint, (Universal,)):
        return np.array([np.linalg.lstsq(joint.motion_subspace(qj[i]), V[i], rcond=None)[0]
                         for i in range(len(V))])
    return V @ np.linalg.pinv(joint.motion_subspace(qj[0] if len(qj) else None)).T


def _angle_about(axis, Rrel):
    """Rotation angles (nt,) of ``Rrel`` about ``axis`` (rotations about that axis)."""
    a = np.asarray(axis, float)
    u1 = np.cross(a, np.eye(3)[int(np.argmin(np.abs(a)))])
    u1 /= np.linalg.norm(u1)
    u2 = np.cross(a, u1)
    Ru1 = Rrel @ u1
    return np.arctan2(Ru1 @ u2, Ru1 @ u1)


def _coordinates(joint, Rrel, d):
    nt = len(Rrel)
    if isinstance(joint, Revolute):                   # vectorized forms of cut_coordinates
        q = _angle_about(joint.axis, Rrel)[:, None]
    elif isinstance(joint, Cylindrical):
        q = np.column_stack([_angle_about(joint.axis, Rrel), d @ joint.axis])
    elif isinstance(joint, Prismatic):
        q = (d @ joint.axis)[:, None]
    else:
        q = np.array([cut_coordinates(joint, Rrel[i], d[i]) for i in range(nt)]).reshape(
            nt, joint.nq)
    for c in angle_columns(joint):
        if nt:
            q0 = float(joint.q0[c])
            q[0, c] += 2 * np.pi * np.round((q0 - q[0, c]) / (2 * np.pi))
            q[:, c] = np.unwrap(q[:, c])
    quat = slice(0, 4) if isinstance(joint, Spherical) else (
        slice(3, 7) if isinstance(joint, Free) else None)
    if quat is not None and nt:
        e = q[:, quat]
        sign = np.concatenate([[1.0], np.sign(np.einsum("ti,ti->t", e[1:], e[:-1]))])
        sign[sign == 0] = 1.0
        e = e * np.cumprod(sign)[:, None]
        if e[0] @ joint.q0[quat] < 0:
            e = -e
        q[:, quat] = e
    return q


def _states(system, q, qd, joints, with_q=True):
    nt = len(q)
    motion = _body_motion(system, q, qd)
    modal = {}
    for j in joints:
        for b in (j.parent, j.child):
            mq, mv = _modal(system, q, qd, b.name)
            if mq is not None:
                modal[b.name] = (mq, mv)
    out = {}
    for j in joints:
        Rrel, d, V = _relative(j, motion, modal, nt)
        qj = _coordinates(j, Rrel, d) if with_q else None
        out[j.name] = (qj, V)
    return out


def fill_joint_states(results, system, joints=None):
    """Fill ``results.extra["joint:NAME:q"]`` (nt, nq), ``":qd"`` and ``":qdd"`` (nt, nv).

    For every joint of ``system.model`` (or ``joints``) whose coordinates are not
    columns of ``results`` (see the module docstring). Returns ``results``.
    """
    model = getattr(system, "model", None)
    if model is None or not hasattr(system, "body_states"):
        return results
    owners = {o for o, _ in results.coordinates}
    joints = [j for j in (model.joints() if joints is None else joints)
              if j.name not in owners]
    nt = len(results.t)
    if not joints or nt == 0:
        return results
    q, qd, qdd = results.q, results.qd, results.qdd
    qdot = getattr(system, "qdot", None)
    dq = np.array([qdot(q[i], qd[i]) for i in range(nt)]) if qdot is not None else qd
    now = _states(system, q, qd, joints)
    ok = np.all(np.isfinite(qdd), axis=1)
    qdd0 = np.where(ok[:, None], qdd, 0.0)
    plus = _states(system, q + _EPS * dq, qd + _EPS * qdd0, joints, with_q=False)
    minus = _states(system, q - _EPS * dq, qd - _EPS * qdd0, joints, with_q=False)
    for j in joints:
        qj, V = now[j.name]
        Vd = (plus[j.name][1] - minus[j.name][1]) / (2 * _EPS)
        v = _speeds(j, qj, V)
        # d/dt (H^+ V) with H constant in child axes; Universal: H(q) changes (lstsq)
        a = _speeds(j, qj, Vd)
        if isinstance(j, Universal):
            qa = qj + _EPS * v
            qm = qj - _EPS * v
            Va = V + _EPS * Vd
            Vm = V - _EPS * Vd
            a = (_speeds(j, qa, Va) - _speeds(j, qm, Vm)) / (2 * _EPS)
        a[~ok] = np.nan
        results.extra[f"joint:{j.name}:q"] = qj
        results.extra[f"joint:{j.name}:qd"] = v
        results.extra[f"joint:{j.name}:qdd"] = a
    return results
