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
* rates ``qdd``: the time derivative of ``v`` along the trajectory, a central
  directional difference of the speed map in state space, at
  ``(q +/- eps dq/dt, qd +/- eps qdd)`` (exact to O(eps^2)).

:func:`fill_joint_states` fills ``results.extra["joint:NAME:q|qd|qdd"]`` for every
joint whose coordinates are not columns of the results (the joints of the absolute
formulation, cut joints of closed loops); :class:`flexmbd.results.JointHistory`
reads them.
"""

import numpy as np

from .joint_types import UNIVERSAL, joint_coordinates, joint_type

__all__ = ["fill_joint_states", "angle_columns"]

_EPS = 1e-6


def angle_columns(joint):
    """Indices of the joint coordinates that are angles (rad), unwrapped along time."""
    return list(joint_type(joint).angles)


def _modal(system, q, qd, name):
    sl = getattr(system, "modal_slices", {}).get(name)
    if sl is None:
        return None, None
    sq, sv = sl if isinstance(sl, tuple) else (sl, sl)
    return q[:, sq], qd[:, sv]


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
    if joint_type(joint).code == UNIVERSAL:        # H(q) changes with q
        return np.array([np.linalg.lstsq(joint.motion_subspace(qj[i]), V[i], rcond=None)[0]
                         for i in range(len(V))])
    return V @ np.linalg.pinv(joint.motion_subspace(qj[0] if len(qj) else None)).T


def _coordinates(joint, Rrel, d):
    return joint_coordinates(joint, Rrel, d)


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
        if joint_type(j).code == UNIVERSAL:
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
