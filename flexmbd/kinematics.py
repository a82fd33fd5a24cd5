"""Reference (plain Python) kinematics of a model's spanning tree.

Used to place bodies from joint coordinates (initial conditions of the absolute
formulation, viewers, tests). The solvers have their own compiled kernels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ._typing import ArrayLike, Pose

if TYPE_CHECKING:
    from .model import Body, Joint, Model

__all__ = ["joint_pose", "tree_poses", "relative_pose", "pose_inverse", "pose_compose"]


def pose_compose(a: Pose, b: Pose) -> Pose:
    """``a * b`` for poses ``(R, p)`` (frame b given in frame a)."""
    Ra, pa = a
    Rb, pb = b
    return Ra @ Rb, pa + Ra @ pb


def pose_inverse(a: Pose) -> Pose:
    """Inverse of the pose ``(R, p)``."""
    R, p = a
    return R.T, -R.T @ p


def joint_pose(joint: Joint, q: ArrayLike) -> Pose:
    """Pose of the child *body* frame in the parent *body* frame for joint coordinates ``q``."""
    pf, cf = joint.parent_frame, joint.child_frame
    return pose_compose(
        pose_compose((pf.rotation, pf.position), joint.transform(q)),
        pose_inverse((cf.rotation, cf.position)),
    )


def relative_pose(joint: Joint, q: ArrayLike, reversed_: bool = False) -> Pose:
    """Pose of the outboard body in the inboard body frame (handles reversed joints)."""
    P = joint_pose(joint, q)
    return pose_inverse(P) if reversed_ else P


def tree_poses(model: Model, q: Mapping[Joint, ArrayLike] | None = None) -> dict[Body, Pose]:
    """World poses ``{body: (R, r)}`` of every body from tree-joint coordinates.

    ``q`` maps joints to coordinates (default: each joint's ``q0``). Cut joints are
    ignored: a closed loop is only consistent if the given tree coordinates close it.
    """
    topo = model.topology()
    joints = model.joints()
    bodies = model.bodies()
    poses = {model.ground: (np.eye(3), np.zeros(3))}
    for label in range(1, topo.n_bodies + 1):
        body = bodies[int(topo.original_body[label]) - 1]
        k = int(topo.tree_joint[label])
        j = joints[k - 1]
        qj = j.q0 if q is None or j not in q else np.asarray(q[j], dtype=float)
        rev = bool(topo.reversed[k - 1])
        inboard = j.child if rev else j.parent
        poses[body] = pose_compose(poses[inboard], relative_pose(j, qj, rev))
    return poses
