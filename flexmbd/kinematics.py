"""Reference (plain Python) kinematics of a model's spanning tree.

Used to place bodies from joint coordinates (initial conditions of the absolute
formulation, viewers, tests). The solvers have their own compiled kernels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ._typing import ArrayLike, Pose
from .spatial import rotation_matrices  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from .model import Body, Joint, Model

__all__ = [
    "joint_pose",
    "tree_poses",
    "relative_pose",
    "pose_inverse",
    "pose_compose",
    "rotation_matrices",
    "joint_transforms",
    "tree_poses_batch",
]


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


# -- whole histories at once (viewers, output of runs) ---------------------------------
def joint_transforms(joint, Q):
    """``joint.transform`` of every row of ``Q`` (nt, nq): ``R`` (nt, 3, 3), ``p`` (nt, 3)
    (the joint type's batched transform, :mod:`flexmbd.joint_types`)."""
    from .joint_types import joint_type

    Q = np.asarray(Q, dtype=float).reshape(len(Q), -1)
    return joint_type(joint).transforms(joint, Q)


def _compose(a, b):
    """Batched :func:`pose_compose`; either pose may be a single (3, 3), (3,) pose."""
    Ra, pa = a
    Rb, pb = b
    return Ra @ Rb, pa + np.einsum("...ij,...j->...i", Ra, pb)


def tree_poses_batch(model, Q, nt):
    """World poses ``{body: (R (nt, 3, 3), r (nt, 3))}`` for ``nt`` samples at once.

    ``Q`` maps joints to coordinate histories (nt, nq); joints not in ``Q`` stay at
    their ``q0``. Same poses as :func:`tree_poses` sample by sample (to round-off).
    """
    topo = model.topology()
    joints = model.joints()
    bodies = model.bodies()
    poses = {model.ground: (np.broadcast_to(np.eye(3), (nt, 3, 3)), np.zeros((nt, 3)))}
    for label in range(1, topo.n_bodies + 1):
        body = bodies[int(topo.original_body[label]) - 1]
        k = int(topo.tree_joint[label])
        j = joints[k - 1]
        qj = Q.get(j) if j in Q else np.broadcast_to(j.q0, (nt, j.nq))
        pf, cf = j.parent_frame, j.child_frame
        rel = _compose(
            _compose((pf.rotation, pf.position), joint_transforms(j, qj)),
            pose_inverse((cf.rotation, cf.position)),
        )
        if bool(topo.reversed[k - 1]):
            Rt = np.swapaxes(rel[0], -1, -2)
            rel = (Rt, -np.einsum("...ij,...j->...i", Rt, rel[1]))
        rev = bool(topo.reversed[k - 1])
        inboard = j.child if rev else j.parent
        poses[body] = _compose(poses[inboard], rel)
    return poses
