"""Body coordinates of the absolute formulation and initial values from joint coordinates.

Per body, in declaration order, 7 coordinates ``(x, y, z, e0, e1, e2, e3)``: the
world position of the body-frame origin and the Euler parameters (scalar first) of
the body axes. Their time derivatives are the 7 "speeds" of the formulation.

Initial values come from the joints' ``q0``/``qd0`` through the spanning tree
(:func:`flexmbd.kinematics.tree_poses`, and the relative twists ``H qd0``); cut
joints are then closed by Newton's method (:mod:`.statics`).
"""

import numpy as np

from ..kinematics import relative_pose
from ..spatial import rot_to_quat
from .quaternion import Emat

__all__ = ["COORD_LABELS", "SPEED_LABELS", "tree_state", "pack", "twist_to_qd"]

COORD_LABELS = ("x", "y", "z", "e0", "e1", "e2", "e3")
SPEED_LABELS = ("xd", "yd", "zd", "e0d", "e1d", "e2d", "e3d")


def pack(R, r):
    """7 coordinates of a pose."""
    return np.concatenate([np.asarray(r, dtype=float), rot_to_quat(R)])


def twist_to_qd(e, w, v):
    """Coordinate rates of a body with Euler parameters ``e`` and world twist ``(w, v)``."""
    # w = 2 E(e) ed with e . ed = 0  ->  ed = E(e)^T w / 2 (E E^T = I for unit e)
    return np.concatenate([np.asarray(v, dtype=float), 0.5 * Emat(np.asarray(e)).T @ w])


def tree_state(model, bodies, index):
    """Approximate ``(q, qd)`` from the joints' initial values through the spanning tree."""
    topo = model.topology()
    joints = model.joints()
    nb = len(bodies)
    q = np.zeros(7 * nb)
    qd = np.zeros(7 * nb)
    pose = {id(model.ground): (np.eye(3), np.zeros(3))}
    twist = {id(model.ground): (np.zeros(3), np.zeros(3))}
    for label in range(1, topo.n_bodies + 1):
        body = bodies[int(topo.original_body[label]) - 1]
        k = int(topo.tree_joint[label])
        j = joints[k - 1]
        rev = bool(topo.reversed[k - 1])
        inboard = j.child if rev else j.parent
        Ra, ra = pose[id(inboard)]
        wa, va = twist[id(inboard)]
        Rr, pr = relative_pose(j, j.q0, rev)
        Rb, rb = Ra @ Rr, ra + Ra @ pr
        pose[id(body)] = (Rb, rb)
        # relative twist of the child frame in child-frame axes at its origin
        Vrel = j.motion_subspace(j.q0) @ j.qd0 if j.nv else np.zeros(6)
        if rev:  # inboard = child of the joint, outboard = parent
            Rc, rc = Ra, ra
        else:
            Rc, rc = Rb, rb
        FC = Rc @ j.child_frame.rotation
        pC = rc + Rc @ j.child_frame.position
        wrel, vrel = FC @ Vrel[:3], FC @ Vrel[3:]
        vpt_a = va + np.cross(wa, pC - ra)  # inboard point at p_C
        if not rev:
            wb = wa + wrel
            vpt_b = vpt_a + vrel
        else:
            wb = wa - wrel
            vpt_b = vpt_a - vrel
        vb = vpt_b + np.cross(wb, rb - pC)
        twist[id(body)] = (wb, vb)
    for b in bodies:
        i = index[id(b)]
        R, r = pose[id(b)]
        w, v = twist[id(b)]
        q[7 * i : 7 * i + 7] = pack(R, r)
        qd[7 * i : 7 * i + 7] = twist_to_qd(q[7 * i + 3 : 7 * i + 7], w, v)
    return q, qd
