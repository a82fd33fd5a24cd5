"""Joints: kinematics shared by the recursive and absolute formulations.

A joint connects a *parent frame* fixed on the parent body and a *child frame*
fixed on the child body. Its coordinates ``q`` (``nq``) describe the child frame
relative to the parent frame; its speeds ``v`` (``nv``) are chosen so that the
relative twist of the child frame, ``[w; v]`` in child-frame axes at the
child-frame origin, is ``H(q) @ v`` with a motion subspace ``H`` of
orthonormal columns (as the CFA requires, Liu-Hu-Zhang 2016, section 1; the Screw's
single column ``[a; h a]`` is the exception, which the solvers scale). Each class
points to its entry of the joint table (:mod:`flexmbd.joint_types`).
``W = constraint_subspace(q)`` is its orthonormal complement. At ``q = neutral``
the two frames coincide.

Joint reaction convention (docs/design/conventions.rst): the wrench the parent exerts on the child
through the joint, at the child-frame origin, in child-frame axes, ``[n; f]``.

Per joint type:

========== ==== ==== ==================================================================
type        nq   nv   coordinates / speeds
========== ==== ==== ==================================================================
Revolute     1    1   angle about ``axis`` (rad) / its rate
Prismatic    1    1   displacement along ``axis`` (m) / its rate
Cylindrical  2    2   angle, displacement about/along ``axis``
Universal    2    2   angle about ``axis1`` (parent frame), then about ``axis2`` (child)
Spherical    4    3   Euler parameters (scalar first) / angular velocity in child axes
Planar       3    3   x, y in the plane, angle about ``normal`` / angular rate and
                      in-plane velocity components in child axes
Fixed        0    0   -
Free         7    6   position (m) and Euler parameters of the child frame in the
                      parent frame / twist ``[w; v]`` in child axes
Screw        1    1   angle about ``axis`` (rad; advance ``pitch / (2 pi)`` m per rad)
========== ==== ==== ==================================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._typing import Array, ArrayLike, Pose
from ..errors import ModelError
from ..joint_types import JOINT_TYPES, perp_basis
from ..spatial import (
    orthonormal_complement,
    quat_conjugate,
    quat_from_rotvec,
    quat_integrate,
    quat_multiply,
    quat_rate_matrix,
    quat_to_rot,
    quat_to_rotvec,
    rot_to_quat,
    rotation_matrix,
    skew,
)
from .bodies import Body, as_frame
from .component import Component, as_floats

__all__ = [
    "Joint",
    "Revolute",
    "Prismatic",
    "Cylindrical",
    "Universal",
    "Spherical",
    "Planar",
    "Fixed",
    "Free",
    "Screw",
]


def _unit(axis, owner):
    a = as_floats(axis)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ModelError(f"{owner}: axis must be 3 numbers, got {axis!r}")
    n = np.linalg.norm(a)
    if n < 1e-12:
        raise ModelError(f"{owner}: axis has zero length; give a direction such as (0, 0, 1)")
    return a / n


class Joint(Component):
    """Base class of joints.

    Parameters
    ----------
    parent, child : Body
        The two bodies; ``parent`` is the inboard one as written (the topology may
        reverse a joint; the solvers handle that).
    parent_frame, child_frame : Frame, 3-vector or (position, rotation), optional
        Joint frames on the parent and the child (default: body origins).
    q0, qd0 : array_like, optional
        Initial coordinates and speeds (default: neutral, zero).
    cut : bool
        Prefer this joint as a cut joint when it closes a loop.
    """

    kind = "joint"
    joint_type = None
    nq = 0
    nv = 0
    coordinate_labels = ()
    speed_labels = ()

    def __init__(
        self,
        parent: Body,
        child: Body,
        *,
        parent_frame: Any = None,
        child_frame: Any = None,
        q0: ArrayLike | None = None,
        qd0: ArrayLike | None = None,
        cut: bool = False,
        name: str | None = None,
        doc: str | None = None,
    ) -> None:
        super().__init__(name=name, doc=doc)
        owner = f"{type(self).__name__} joint"
        for role, b in (("parent", parent), ("child", child)):
            if not isinstance(b, Body):
                raise ModelError(
                    f"{owner}: {role} must be a body (e.g. m.ground or a RigidBody), "
                    f"got {type(b).__name__}"
                )
        if parent is child:
            raise ModelError(f"{owner}: parent and child are the same body {parent.name!r}")
        self.parent = parent
        self.child = child
        self.parent_frame = as_frame(parent_frame, parent, owner)
        self.child_frame = as_frame(child_frame, child, owner)
        self.cut = bool(cut)
        self.q0 = self.neutral() if q0 is None else self._check_q(q0)
        self.qd0 = np.zeros(self.nv) if qd0 is None else self._check_v(qd0)

    # -- values -----------------------------------------------------------------------
    @property
    def n_constraints(self) -> int:
        """Number of constraint equations (6 - nv)."""
        return 6 - self.nv

    def neutral(self) -> Array:
        """Coordinates at which the child frame coincides with the parent frame."""
        return np.zeros(self.nq)

    def _check_q(self, q):
        q = np.atleast_1d(as_floats(q))
        if q.shape != (self.nq,) or not np.all(np.isfinite(q)):
            raise ModelError(
                f"joint {self.local_name!r} ({type(self).__name__}): q0 must have {self.nq} "
                f"finite values {list(self.coordinate_labels)}, got {q.tolist()}"
            )
        return self.normalize(q)

    def _check_v(self, v):
        v = np.atleast_1d(as_floats(v))
        if v.shape != (self.nv,) or not np.all(np.isfinite(v)):
            raise ModelError(
                f"joint {self.local_name!r} ({type(self).__name__}): qd0 must have {self.nv} "
                f"finite values {list(self.speed_labels)}, got {v.tolist()}"
            )
        return v

    def normalize(self, q: ArrayLike) -> Array:
        """Project coordinates on their manifold (unit quaternions); identity otherwise."""
        return np.asarray(q, dtype=float)

    # -- kinematics -------------------------------------------------------------------
    def transform(self, q: ArrayLike) -> Pose:
        """``(R, p)``: child frame orientation and origin in parent-frame coordinates
        (the joint type's transform, :mod:`flexmbd.joint_types`)."""
        if self.joint_type is None:
            raise NotImplementedError(f"{type(self).__name__} has no entry in the joint table")
        q = np.zeros(0) if q is None else np.asarray(q, dtype=float)
        R, p = self.joint_type.transforms(self, q.reshape(1, self.nq))
        return R[0], p[0]

    def motion_subspace(self, q: ArrayLike) -> Array:
        """``H`` (6 x nv): relative twist of the child frame in child axes is ``H @ v``."""
        raise NotImplementedError

    def constraint_subspace(self, q: ArrayLike) -> Array:
        """``W`` (6 x (6-nv)): orthonormal complement of ``H``."""
        return orthonormal_complement(self.motion_subspace(q))

    def bias_acceleration(self, q: ArrayLike, v: ArrayLike) -> Array:
        """``dH/dt @ v`` in child axes: the velocity-product part of the relative acceleration."""
        return np.zeros(6)

    def qdot(self, q: ArrayLike, v: ArrayLike) -> Array:
        """Coordinate rates ``dq/dt`` for speeds ``v`` (differ from v for Spherical/Planar/Free)."""
        return np.asarray(v, dtype=float).copy()

    def integrate(self, q: ArrayLike, v: ArrayLike, dt: float) -> Array:
        """Coordinates after constant speeds ``v`` for ``dt`` (exact on the manifold)."""
        return np.asarray(q, dtype=float) + dt * self.qdot(q, v)

    def difference(self, q0: ArrayLike, q1: ArrayLike) -> Array:
        """Speeds ``v`` with ``integrate(q0, v, 1) == q1`` (inverse of :meth:`integrate`)."""
        return np.asarray(q1, dtype=float) - np.asarray(q0, dtype=float)

    def summary(self) -> str:
        return f"{type(self).__name__}({self.parent.name} -> {self.child.name})"


class _ConstantSubspaceJoint(Joint):
    """Joints whose ``H`` is constant in child axes."""

    def motion_subspace(self, q: ArrayLike | None = None) -> Array:
        return self._H

    def constraint_subspace(self, q: ArrayLike | None = None) -> Array:
        return self._W

    def _set_subspace(self, H):
        self._H = np.asarray(H, dtype=float).reshape(6, -1)
        self._W = orthonormal_complement(self._H)


class Revolute(_ConstantSubspaceJoint):
    """Rotation about ``axis`` (unit vector in the joint frames, default z)."""

    joint_type = JOINT_TYPES["Revolute"]

    nq = nv = 1
    coordinate_labels = ("angle",)
    speed_labels = ("rate",)

    def __init__(
        self, parent: Body, child: Body, axis: ArrayLike = (0.0, 0.0, 1.0), **kw: Any
    ) -> None:
        self.axis = _unit(axis, "Revolute joint")
        self._set_subspace(np.concatenate([self.axis, np.zeros(3)]))
        super().__init__(parent, child, **kw)


class Prismatic(_ConstantSubspaceJoint):
    """Translation along ``axis`` (default x)."""

    joint_type = JOINT_TYPES["Prismatic"]

    nq = nv = 1
    coordinate_labels = ("displacement",)
    speed_labels = ("velocity",)

    def __init__(
        self, parent: Body, child: Body, axis: ArrayLike = (1.0, 0.0, 0.0), **kw: Any
    ) -> None:
        self.axis = _unit(axis, "Prismatic joint")
        self._set_subspace(np.concatenate([np.zeros(3), self.axis]))
        super().__init__(parent, child, **kw)


class Cylindrical(_ConstantSubspaceJoint):
    """Rotation about and translation along ``axis`` (default z)."""

    joint_type = JOINT_TYPES["Cylindrical"]

    nq = nv = 2
    coordinate_labels = ("angle", "displacement")
    speed_labels = ("rate", "velocity")

    def __init__(
        self, parent: Body, child: Body, axis: ArrayLike = (0.0, 0.0, 1.0), **kw: Any
    ) -> None:
        self.axis = _unit(axis, "Cylindrical joint")
        H = np.zeros((6, 2))
        H[:3, 0] = self.axis
        H[3:, 1] = self.axis
        self._set_subspace(H)
        super().__init__(parent, child, **kw)


class Screw(_ConstantSubspaceJoint):
    """Helical joint: rotation ``angle`` about ``axis`` with the advance ``h * angle`` along it.

    Parameters
    ----------
    parent, child : Body
    axis : 3-vector
        Screw axis in the joint frames (default z).
    pitch : float
        Advance of the child along ``axis`` per revolution (m/rev, the lead of the
        thread); ``h = pitch / (2 pi)`` (m/rad) is the advance per radian. Positive:
        right-handed (a positive rotation about ``axis`` advances along ``+axis``).

    One coordinate, the angle (rad); its rate is the speed. The relative twist of the
    child frame is ``H v`` with ``H = [axis; h axis]`` (child axes), not of unit length:
    the recursive formulation works with ``sqrt(1 + h^2) v`` along the unit column.
    """

    joint_type = JOINT_TYPES["Screw"]
    nq = nv = 1
    coordinate_labels = ("angle",)
    speed_labels = ("rate",)

    def __init__(
        self,
        parent: Body,
        child: Body,
        axis: ArrayLike = (0.0, 0.0, 1.0),
        pitch: float = 0.0,
        **kw: Any,
    ) -> None:
        self.axis = _unit(axis, "Screw joint")
        pitch = float(pitch)
        if not np.isfinite(pitch):
            raise ModelError(f"Screw joint: pitch must be a finite number (m/rev), got {pitch!r}")
        self.pitch = pitch
        self.h = pitch / (2.0 * np.pi)
        self._set_subspace(np.concatenate([self.axis, self.h * self.axis]))
        super().__init__(parent, child, **kw)


class Universal(Joint):
    """Rotation ``q[0]`` about ``axis1`` (parent frame) then ``q[1]`` about ``axis2`` (child frame).

    The axes must be orthogonal. ``R = Rot(axis1, q0) @ Rot(axis2, q1)``.
    """

    joint_type = JOINT_TYPES["Universal"]

    nq = nv = 2
    coordinate_labels = ("angle1", "angle2")
    speed_labels = ("rate1", "rate2")

    def __init__(
        self,
        parent: Body,
        child: Body,
        axis1: ArrayLike = (1.0, 0.0, 0.0),
        axis2: ArrayLike = (0.0, 1.0, 0.0),
        **kw: Any,
    ) -> None:
        self.axis1 = _unit(axis1, "Universal joint")
        self.axis2 = _unit(axis2, "Universal joint")
        if abs(self.axis1 @ self.axis2) > 1e-9:
            raise ModelError(
                f"Universal joint: axis1 {self.axis1.tolist()} and axis2 {self.axis2.tolist()} "
                f"must be orthogonal"
            )
        super().__init__(parent, child, **kw)

    def _a1_child(self, q):
        return rotation_matrix(self.axis2, q[1]).T @ self.axis1

    def motion_subspace(self, q: ArrayLike) -> Array:
        H = np.zeros((6, 2))
        H[:3, 0] = self._a1_child(q)
        H[:3, 1] = self.axis2
        return H

    def bias_acceleration(self, q: ArrayLike, v: ArrayLike) -> Array:
        c = np.zeros(6)
        c[:3] = v[0] * v[1] * np.cross(self._a1_child(q), self.axis2)
        return c


class Spherical(Joint):
    """Ball joint: Euler parameters ``(e0..e3)``; speeds = angular velocity in child axes."""

    joint_type = JOINT_TYPES["Spherical"]

    nq, nv = 4, 3
    coordinate_labels = ("e0", "e1", "e2", "e3")
    speed_labels = ("wx", "wy", "wz")
    _H = np.vstack([np.eye(3), np.zeros((3, 3))])
    _W = np.vstack([np.zeros((3, 3)), np.eye(3)])

    def __init__(self, parent: Body, child: Body, **kw: Any) -> None:
        q0 = kw.get("q0")
        if q0 is not None and np.shape(q0) == (3, 3):
            kw["q0"] = rot_to_quat(q0)
        super().__init__(parent, child, **kw)

    def neutral(self) -> Array:
        return np.array([1.0, 0.0, 0.0, 0.0])

    def normalize(self, q: ArrayLike) -> Array:
        q = np.asarray(q, dtype=float)
        return q / np.linalg.norm(q)

    def motion_subspace(self, q: ArrayLike | None = None) -> Array:
        return self._H

    def constraint_subspace(self, q: ArrayLike | None = None) -> Array:
        return self._W

    def qdot(self, q: ArrayLike, v: ArrayLike) -> Array:
        return quat_rate_matrix(q) @ v

    def integrate(self, q: ArrayLike, v: ArrayLike, dt: float) -> Array:
        return quat_integrate(q, v, dt)

    def difference(self, q0: ArrayLike, q1: ArrayLike) -> Array:
        return quat_to_rotvec(quat_multiply(quat_conjugate(q0), q1))


class Planar(_ConstantSubspaceJoint):
    """Planar joint: translation in the plane normal to ``normal`` and rotation about it.

    Coordinates ``(x, y, angle)``: the child origin is at ``x u1 + y u2`` in the
    parent frame (``u1, u2, normal`` right-handed; by default the in-plane axes of
    the joint frame when ``normal`` is a frame axis) and rotated by ``angle``.
    Speeds ``(rate, v1, v2)``: angular rate and the child-origin velocity along
    ``u1, u2`` **in child axes**, so that ``H`` is constant.
    """

    joint_type = JOINT_TYPES["Planar"]

    nq = nv = 3
    coordinate_labels = ("x", "y", "angle")
    speed_labels = ("rate", "v1", "v2")

    def __init__(
        self, parent: Body, child: Body, normal: ArrayLike = (0.0, 0.0, 1.0), **kw: Any
    ) -> None:
        self.normal = _unit(normal, "Planar joint")
        for k in range(3):
            if abs(abs(self.normal[k]) - 1.0) < 1e-12:
                self.u1 = np.roll(np.eye(3)[k], 1) * 1.0
                self.u2 = np.cross(self.normal, self.u1)
                break
        else:
            self.u1, self.u2 = perp_basis(self.normal)
        H = np.zeros((6, 3))
        H[:3, 0] = self.normal
        H[3:, 1] = self.u1
        H[3:, 2] = self.u2
        self._set_subspace(H)
        super().__init__(parent, child, **kw)

    def qdot(self, q: ArrayLike, v: ArrayLike) -> Array:
        c, s = np.cos(q[2]), np.sin(q[2])
        return np.array([c * v[1] - s * v[2], s * v[1] + c * v[2], v[0]])

    def integrate(self, q: ArrayLike, v: ArrayLike, dt: float) -> Array:
        # exact for constant body-frame speeds (SE(2) exponential)
        th = v[0] * dt
        a, b = v[1] * dt, v[2] * dt
        if abs(th) < 1e-8:
            s_over, c_over = 1.0 - th * th / 6.0, th / 2.0
        else:
            s_over, c_over = np.sin(th) / th, (1.0 - np.cos(th)) / th
        dx = s_over * a - c_over * b
        dy = c_over * a + s_over * b
        c, s = np.cos(q[2]), np.sin(q[2])
        return np.array([q[0] + c * dx - s * dy, q[1] + s * dx + c * dy, q[2] + th])

    def difference(self, q0: ArrayLike, q1: ArrayLike) -> Array:
        th = q1[2] - q0[2]
        c, s = np.cos(q0[2]), np.sin(q0[2])
        dx = c * (q1[0] - q0[0]) + s * (q1[1] - q0[1])
        dy = -s * (q1[0] - q0[0]) + c * (q1[1] - q0[1])
        if abs(th) < 1e-8:
            s_over, c_over = 1.0 - th * th / 6.0, th / 2.0
        else:
            s_over, c_over = np.sin(th) / th, (1.0 - np.cos(th)) / th
        det = s_over**2 + c_over**2
        a = (s_over * dx + c_over * dy) / det
        b = (-c_over * dx + s_over * dy) / det
        return np.array([th, a, b])


class Fixed(_ConstantSubspaceJoint):
    """Rigid connection (no relative motion)."""

    joint_type = JOINT_TYPES["Fixed"]

    nq = nv = 0

    def __init__(self, parent: Body, child: Body, **kw: Any) -> None:
        self._set_subspace(np.zeros((6, 0)))
        super().__init__(parent, child, **kw)


class Free(_ConstantSubspaceJoint):
    """Six-degree-of-freedom joint (floating base).

    Coordinates: child-frame origin in the parent frame (m) and Euler parameters
    ``(e0, e1, e2, e3)``; speeds: twist ``[w; v]`` of the child frame in child axes.
    ``q0`` may also be given as ``(position, rotation)``.
    """

    joint_type = JOINT_TYPES["Free"]

    nq, nv = 7, 6
    coordinate_labels = ("x", "y", "z", "e0", "e1", "e2", "e3")
    speed_labels = ("wx", "wy", "wz", "vx", "vy", "vz")

    def __init__(self, parent: Body, child: Body, **kw: Any) -> None:
        q0 = kw.get("q0")
        if isinstance(q0, tuple) and len(q0) == 2:
            p, R = q0
            R = np.asarray(R, dtype=float)
            e = rot_to_quat(R) if R.shape == (3, 3) else R
            kw["q0"] = np.concatenate([np.asarray(p, dtype=float), e])
        self._set_subspace(np.eye(6))
        super().__init__(parent, child, **kw)

    def neutral(self) -> Array:
        return np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])

    def normalize(self, q: ArrayLike) -> Array:
        q = np.array(q, dtype=float)
        q[3:] /= np.linalg.norm(q[3:])
        return q

    def qdot(self, q: ArrayLike, v: ArrayLike) -> Array:
        R = quat_to_rot(q[3:])
        return np.concatenate([R @ v[3:], quat_rate_matrix(q[3:]) @ v[:3]])

    def integrate(self, q: ArrayLike, v: ArrayLike, dt: float) -> Array:
        # SE(3) exponential for a constant body twist
        w, u = np.asarray(v[:3]) * dt, np.asarray(v[3:]) * dt
        R = quat_to_rot(q[3:])
        e = quat_multiply(q[3:], quat_from_rotvec(w))
        return np.concatenate([q[:3] + R @ (_se3_left_jacobian(w) @ u), e / np.linalg.norm(e)])

    def difference(self, q0: ArrayLike, q1: ArrayLike) -> Array:
        e = quat_multiply(quat_conjugate(q0[3:]), q1[3:])
        w = quat_to_rotvec(e)
        dp = quat_to_rot(q0[3:]).T @ (np.asarray(q1[:3]) - np.asarray(q0[:3]))
        return np.concatenate([w, np.linalg.solve(_se3_left_jacobian(w), dp)])


def _se3_left_jacobian(w):
    """``V(w)`` with ``p = V u`` for the SE(3) exponential of the twist ``(w, u)``."""
    th = np.linalg.norm(w)
    K = skew(w)
    if th < 1e-8:
        return np.eye(3) + 0.5 * K + K @ K / 6.0
    return np.eye(3) + (1 - np.cos(th)) / th**2 * K + (th - np.sin(th)) / th**3 * (K @ K)
