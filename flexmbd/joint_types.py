"""The table of joint types: one entry per type, read by the model and every formulation.

A joint type is described once here (plain numpy, below :mod:`flexmbd.model` and the
formulations): its integer code (the branch of the compiled kinematics,
:func:`flexmbd._nbjoints.joint_kinematics`), ``nq``/``nv``, which
coordinates are angles or quaternions, its constraint rows in the joint frames,
its packed parameters and its coordinates from a relative pose. The joint classes of
:mod:`flexmbd.model.joints` point to their entry (``Joint.joint_type``); the
recursive tree solver, the cut-joint (loop) constraints, the absolute formulation,
the joint histories of results and the viewers loop over it.

Constraint rows (joint frames; ``R`` the child frame's rotation in the parent
frame, ``d`` its origin):

* translational rows, unit vectors ``e``: the child origin does not move along ``e``;
* rotational pairs ``(f, g)``: ``f . (R g) = 0``, ``f`` in parent axes, ``g`` in child
  axes (at the neutral pose ``f ⟂ g``);
* the screw row (Screw only): ``a . d - h theta = 0``.

Each formulation writes these rows in its own variables (cut joints:
:mod:`flexmbd.constraints.cut`; absolute coordinates: :mod:`flexmbd.absolute.constraints`).

========== ==== ==== ================================================================
type        code  nq  nv  coordinates
========== ==== ==== ================================================================
Fixed        0    0   0   -
Revolute     1    1   1   angle about ``axis`` (rad)
Prismatic    2    1   1   displacement along ``axis`` (m)
Cylindrical  3    2   2   angle, displacement
Universal    4    2   2   angle about ``axis1``, then about ``axis2``
Spherical    5    4   3   Euler parameters
Planar       6    3   3   x, y in the plane, angle about the normal
Free         7    7   6   position, Euler parameters
Screw        8    1   1   angle about ``axis`` (rad); the child advances ``h * angle``
========== ==== ==== ================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._typing import Array
from .errors import ModelError
from .spatial import (
    orthonormal_complement,
    quat_to_rot_batch,
    rot_to_quat_batch,
    rotation_matrices,
)

__all__ = [
    "JointType",
    "JOINT_TYPES",
    "joint_type",
    "perp_basis",
    "joint_coordinates",
    "speeds_from_twist",
    "wrench_from_force",
    "FIXED",
    "REVOLUTE",
    "PRISMATIC",
    "CYLINDRICAL",
    "UNIVERSAL",
    "SPHERICAL",
    "PLANAR",
    "FREE",
    "SCREW",
]

# the codes of the compiled kinematics branch (one table: never write them again elsewhere)
FIXED, REVOLUTE, PRISMATIC, CYLINDRICAL, UNIVERSAL, SPHERICAL, PLANAR, FREE, SCREW = range(9)


def perp_basis(a: Any) -> tuple[Array, Array]:
    """Unit vectors ``u1, u2`` completing the unit vector ``a`` to a right-handed triad
    ``(u1, u2, a)``: ``u1 = a x e_k / |a x e_k|`` (``e_k`` the coordinate axis least
    aligned with ``a``), ``u2 = a x u1``."""
    a = np.asarray(a, dtype=float)
    k = int(np.argmin(np.abs(a)))
    e = np.zeros(3)
    e[k] = 1.0
    u1 = np.cross(a, e)
    u1 /= np.linalg.norm(u1)
    return u1, np.cross(a, u1)


# motion directions (rows of [w; v]) of the types whose H is a set of unit vectors in
# the aligned frames
UNIT_DIRECTIONS = {
    FIXED: (),
    REVOLUTE: (2,),
    PRISMATIC: (5,),
    CYLINDRICAL: (2, 5),
    SPHERICAL: (0, 1, 2),
    PLANAR: (2, 3, 4),
    FREE: (0, 1, 2, 3, 4, 5),
}

_E = np.eye(3)
_NO_ROT = [(_E[2], _E[1]), (_E[0], _E[2]), (_E[1], _E[0])]  # (f, g): f . R g


@dataclass(frozen=True)
class JointType:
    """One joint type (see the module docstring).

    Attributes
    ----------
    name, code : str, int
        Class name and the branch of the compiled kinematics.
    nq, nv : int
        Numbers of coordinates and speeds.
    angles : tuple of int
        Coordinates that are angles (rad): continuous along time, unwrapped.
    quat : int
        Offset of the Euler parameters in ``q`` (-1: none).
    rate_is_speed : bool
        ``dq/dt == v`` (coordinates updated linearly).
    drivable : tuple of int
        Coordinates that a :class:`~flexmbd.constraints.JointDriver` or a
        :class:`~flexmbd.GearCoupling` may prescribe (each with ``dq_i/dt = v_i``,
        Planar's in-plane coordinates excepted, which the drivers treat exactly).
    """

    name: str
    code: int
    nq: int
    nv: int
    angles: tuple = ()
    quat: int = -1
    rate_is_speed: bool = True
    drivable: tuple = ()
    couplable: tuple = field(default=())

    # -- per type data ---------------------------------------------------------------
    def rows(self, joint: Any) -> tuple[list[Array], list[tuple[Array, Array]], list[str]]:
        """Constraint rows ``(translations e, rotations (f, g), labels)`` (joint frames).

        A Screw adds one more row, ``a . d - h theta`` (label ``"screw"``), not part of
        this list (see :meth:`screw_lead`).
        """
        return _ROWS[self.code](joint)

    def params(self, joint: Any) -> Array:
        """Parameters (9,) of the compiled kinematics for the joint's own (not aligned) frames:
        axis (or ``axis1``, ``axis2``; ``u1, u2, normal`` for Planar; ``axis, h`` for Screw,
        ``h`` in m/rad)."""
        p = np.zeros(9)
        if self.code in (REVOLUTE, PRISMATIC, CYLINDRICAL):
            p[:3] = joint.axis
        elif self.code == SCREW:
            p[:3] = joint.axis
            p[3] = joint.h
        elif self.code == UNIVERSAL:
            p[:3], p[3:6] = joint.axis1, joint.axis2
        elif self.code == PLANAR:
            p[:3], p[3:6], p[6:] = joint.u1, joint.u2, joint.normal
        return p

    def aligned_frame(self, joint: Any) -> Array:
        """Rotation of the joint frames that makes the joint axis (plane normal) local z, as
        the compiled kinematics evaluates Revolute, Prismatic, Cylindrical, Screw and Planar."""
        if self.code in (REVOLUTE, PRISMATIC, CYLINDRICAL, SCREW):
            a = np.asarray(joint.axis, dtype=float)
            u1, u2 = perp_basis(a)
            return np.column_stack([u1, u2, a])
        if self.code == PLANAR:
            return np.column_stack([joint.u1, joint.u2, joint.normal])
        return np.eye(3)

    def compiled(self, joint: Any, unit: bool = True) -> tuple[Array, Array, Array, Array]:
        """Constants of the compiled kinematics in the aligned frames ``Ra`` (3, 3):
        ``(Ra, prm (9,), Hc (6, 6), Wc (6, 6))``.

        ``Hc``'s first ``nv`` columns hold the constant motion directions (unit vectors;
        Universal: its second axis, the first is computed from ``q``), ``Wc``'s first
        ``6 - nv`` columns their orthonormal complement. A Screw's column is
        ``[e_z; h e_z]``, divided by ``sqrt(1 + h^2)`` when ``unit`` (the tree solver
        then works with the speed ``sqrt(1 + h^2) v``); ``prm[3] = h``. Universal:
        ``prm = (axis1, axis2)``.
        """
        Ra = self.aligned_frame(joint)
        prm = np.zeros(9)
        Hc = np.zeros((6, 6))
        Wc = np.zeros((6, 6))
        if self.code == UNIVERSAL:
            prm[:3], prm[3:6] = joint.axis1, joint.axis2
            Hc[:3, 1] = joint.axis2
            Wc[3:, 1:4] = np.eye(3)
        elif self.code == SCREW:
            h = float(joint.h)
            prm[3] = h
            col = np.array([0.0, 0.0, 1.0, 0.0, 0.0, h])
            Hc[:, 0] = col / np.hypot(1.0, h) if unit else col
            Wc[:, :5] = orthonormal_complement(col[:, None])
        else:
            motion = UNIT_DIRECTIONS[self.code]
            for c, i in enumerate(motion):
                Hc[i, c] = 1.0
            for c, i in enumerate(i for i in range(6) if i not in motion):
                Wc[i, c] = 1.0
        return Ra, prm, Hc, Wc

    def screw_lead(self, joint: Any) -> float:
        """Advance per radian ``h`` (m/rad) of a Screw; 0 for every other type."""
        return float(joint.h) if self.code == SCREW else 0.0

    def transforms(self, joint: Any, Q: Array) -> tuple[Array, Array]:
        """Child-frame poses in the parent frame for coordinates ``Q`` (nt, nq):
        ``R`` (nt, 3, 3), ``p`` (nt, 3) (m)."""
        return _TRANSFORMS[self.code](joint, np.asarray(Q, dtype=float).reshape(len(Q), self.nq))

    def raw_coordinates(self, joint: Any, R: Array, d: Array) -> Array:
        """Coordinates (nt, nq) from relative poses (nt, 3, 3), (nt, 3), angles in (-pi, pi]."""
        return _COORDS[self.code](joint, R, d)


_PERP: dict = {}


def _angle_about(axis, R):
    """Rotation angles (nt,) of ``R`` (nt, 3, 3) about ``axis`` (rotations about that axis)."""
    key = np.asarray(axis, dtype=float).tobytes()
    basis = _PERP.get(key)
    if basis is None:  # (perp_basis: two np.cross calls, ~50 us; kept per axis)
        if len(_PERP) > 256:
            _PERP.clear()
        basis = _PERP[key] = perp_basis(axis)
    u1, u2 = basis
    Ru1 = R @ u1
    return np.arctan2(Ru1 @ u2, Ru1 @ u1)


def _c_fixed(j, R, d):
    return np.zeros((len(R), 0))


def _c_revolute(j, R, d):
    return _angle_about(j.axis, R)[:, None]


def _c_prismatic(j, R, d):
    return (d @ j.axis)[:, None]


def _c_cylindrical(j, R, d):
    return np.column_stack([_angle_about(j.axis, R), d @ j.axis])


def _c_universal(j, R, d):
    # R = Rot(a1, q0) Rot(a2, q1); a3 = a1 x a2
    a1, a2 = j.axis1, j.axis2
    a3 = np.cross(a1, a2)
    Ra2 = R @ a2
    Rta1 = np.swapaxes(R, -1, -2) @ a1
    return np.column_stack([np.arctan2(Ra2 @ a3, Ra2 @ a2), np.arctan2(Rta1 @ a3, Rta1 @ a1)])


def _c_spherical(j, R, d):
    return rot_to_quat_batch(R, continuous=False)


def _c_planar(j, R, d):
    return np.column_stack([d @ j.u1, d @ j.u2, _angle_about(j.normal, R)])


def _c_free(j, R, d):
    return np.column_stack([d, rot_to_quat_batch(R, continuous=False)])


def _c_screw(j, R, d):
    th = _angle_about(j.axis, R)
    if j.h != 0.0:
        # the advance along the axis fixes the turn: continuous without unwrapping
        th = th + 2 * np.pi * np.round((d @ j.axis / j.h - th) / (2 * np.pi))
    return th[:, None]


def _r_fixed(j):
    return list(_E), list(_NO_ROT), ["x", "y", "z", "rx", "ry", "rz"]


def _r_revolute(j):
    u1, u2 = perp_basis(j.axis)
    return list(_E), [(u1, j.axis), (u2, j.axis)], ["x", "y", "z", "r1", "r2"]


def _r_prismatic(j):
    u1, u2 = perp_basis(j.axis)
    return [u1, u2], [(u1, j.axis), (u2, j.axis), (u1, u2)], ["t1", "t2", "r1", "r2", "r3"]


def _r_cylindrical(j):
    u1, u2 = perp_basis(j.axis)
    return [u1, u2], [(u1, j.axis), (u2, j.axis)], ["t1", "t2", "r1", "r2"]


def _r_universal(j):
    return list(_E), [(j.axis1, j.axis2)], ["x", "y", "z", "r"]


def _r_spherical(j):
    return list(_E), [], ["x", "y", "z"]


def _r_planar(j):
    n = j.normal
    return [n], [(j.u1, n), (j.u2, n)], ["n", "r1", "r2"]


def _r_free(j):
    return [], [], []


def _eye(nt):
    return np.broadcast_to(np.eye(3), (nt, 3, 3)).copy()


def _t_fixed(j, Q):
    return _eye(len(Q)), np.zeros((len(Q), 3))


def _t_revolute(j, Q):
    return rotation_matrices(j.axis, Q[:, 0]), np.zeros((len(Q), 3))


def _t_prismatic(j, Q):
    return _eye(len(Q)), j.axis * Q[:, :1]


def _t_cylindrical(j, Q):
    return rotation_matrices(j.axis, Q[:, 0]), j.axis * Q[:, 1:2]


def _t_universal(j, Q):
    return (
        rotation_matrices(j.axis1, Q[:, 0]) @ rotation_matrices(j.axis2, Q[:, 1]),
        np.zeros((len(Q), 3)),
    )


def _t_spherical(j, Q):
    return quat_to_rot_batch(Q), np.zeros((len(Q), 3))


def _t_planar(j, Q):
    return rotation_matrices(j.normal, Q[:, 2]), Q[:, :1] * j.u1 + Q[:, 1:2] * j.u2


def _t_free(j, Q):
    return quat_to_rot_batch(Q[:, 3:]), Q[:, :3].copy()


def _t_screw(j, Q):
    return rotation_matrices(j.axis, Q[:, 0]), j.axis * (j.h * Q[:, :1])


_TRANSFORMS = {
    FIXED: _t_fixed,
    REVOLUTE: _t_revolute,
    PRISMATIC: _t_prismatic,
    CYLINDRICAL: _t_cylindrical,
    UNIVERSAL: _t_universal,
    SPHERICAL: _t_spherical,
    PLANAR: _t_planar,
    FREE: _t_free,
    SCREW: _t_screw,
}
_ROWS = {
    FIXED: _r_fixed,
    REVOLUTE: _r_revolute,
    PRISMATIC: _r_prismatic,
    CYLINDRICAL: _r_cylindrical,
    UNIVERSAL: _r_universal,
    SPHERICAL: _r_spherical,
    PLANAR: _r_planar,
    FREE: _r_free,
    SCREW: _r_cylindrical,
}
_COORDS = {
    FIXED: _c_fixed,
    REVOLUTE: _c_revolute,
    PRISMATIC: _c_prismatic,
    CYLINDRICAL: _c_cylindrical,
    UNIVERSAL: _c_universal,
    SPHERICAL: _c_spherical,
    PLANAR: _c_planar,
    FREE: _c_free,
    SCREW: _c_screw,
}

JOINT_TYPES: dict[str, JointType] = {
    t.name: t
    for t in (
        JointType("Fixed", FIXED, 0, 0),
        JointType("Revolute", REVOLUTE, 1, 1, angles=(0,), drivable=(0,), couplable=(0,)),
        JointType("Prismatic", PRISMATIC, 1, 1, drivable=(0,), couplable=(0,)),
        JointType("Cylindrical", CYLINDRICAL, 2, 2, angles=(0,), drivable=(0, 1), couplable=(0, 1)),
        JointType("Universal", UNIVERSAL, 2, 2, angles=(0, 1), drivable=(0, 1)),
        JointType("Spherical", SPHERICAL, 4, 3, quat=0, rate_is_speed=False),
        JointType("Planar", PLANAR, 3, 3, angles=(2,), rate_is_speed=False, drivable=(0, 1, 2)),
        JointType("Free", FREE, 7, 6, quat=3, rate_is_speed=False),
        JointType("Screw", SCREW, 1, 1, angles=(0,), drivable=(0,), couplable=(0,)),
    )
}
"""Every joint type by class name."""

BY_CODE: list[JointType] = sorted(JOINT_TYPES.values(), key=lambda t: t.code)


def joint_type(joint: Any, formulation: str | None = None) -> JointType:
    """The :class:`JointType` of ``joint`` (a :class:`~flexmbd.Joint`), or a ModelError."""
    t = getattr(joint, "joint_type", None)
    if not isinstance(t, JointType):
        where = f" in the {formulation} formulation" if formulation else ""
        raise ModelError(
            f"joint {getattr(joint, 'name', joint)!r}: type {type(joint).__name__} is not in the "
            f"joint table{where}; use one of {sorted(JOINT_TYPES)}"
        )
    return t


def joint_coordinates(joint: Any, R: Any, d: Any, ref: Any = None) -> Array:
    """Joint coordinates from relative poses of the child frame in the parent frame.

    Parameters
    ----------
    joint : Joint
    R : array (3, 3) or (nt, 3, 3)
        Child-frame orientation in parent-frame axes.
    d : array (3,) or (nt, 3)
        Child-frame origin in the parent frame (m).
    ref : array (nq,), optional
        Coordinates the first sample stays close to (default the joint's ``q0``).

    Returns
    -------
    array (nq,) or (nt, nq)
        Angles continuous along the samples (unwrapped, the first on the branch
        nearest ``ref``), Euler parameters sign-continuous (the first with
        ``e . ref >= 0``). Exact on configurations that satisfy the joint's
        constraints.
    """
    R = np.asarray(R, dtype=float)
    single = R.ndim == 2
    R = R.reshape(-1, 3, 3)
    d = np.asarray(d, dtype=float).reshape(-1, 3)
    t = joint_type(joint)
    q = np.array(t.raw_coordinates(joint, R, d), dtype=float).reshape(len(R), t.nq)
    ref = np.asarray(joint.q0 if ref is None else ref, dtype=float)
    nt = len(q)
    if nt:
        for c in t.angles:
            if t.code == SCREW and joint.h != 0.0:
                continue  # the advance along the axis already fixed the turn
            q[0, c] += 2 * np.pi * np.round((ref[c] - q[0, c]) / (2 * np.pi))
            q[:, c] = np.unwrap(q[:, c])
        if t.quat >= 0:
            sl = slice(t.quat, t.quat + 4)
            e = q[:, sl]
            sign = np.concatenate([[1.0], np.sign(np.einsum("ti,ti->t", e[1:], e[:-1]))])
            sign[sign == 0] = 1.0
            e = e * np.cumprod(sign)[:, None]
            if e[0] @ ref[sl] < 0:
                e = -e
            q[:, sl] = e
    return q[0] if single else q


def speeds_from_twist(H: Any, V: Any) -> Array:
    """Joint speeds ``v`` of a relative twist ``V`` (6,) with ``V = H v`` (least squares).

    ``H`` (6, nv) has orthogonal columns for every type of the table (orthonormal but
    for the Screw's ``[a; h a]``), so ``v = H^T V / |H_i|^2`` column by column.
    """
    H = np.asarray(H, dtype=float)
    return (H.T @ np.asarray(V, dtype=float)) / np.einsum("ij,ij->j", H, H)


def wrench_from_force(H: Any, tau: Any) -> Array:
    """A wrench ``W`` (6,) along the motion subspace with ``H^T W = tau``: ``H tau / |H_i|^2``
    (the generalized joint force ``tau`` as a wrench on the child, child axes)."""
    H = np.asarray(H, dtype=float)
    return H @ (np.asarray(tau, dtype=float) / np.einsum("ij,ij->j", H, H))
