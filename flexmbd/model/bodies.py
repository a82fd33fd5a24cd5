"""Bodies and frames: ground, rigid bodies with shape helpers, frames (markers).

Inertia convention (docs/design/conventions.rst): mass (kg), centre of mass ``com`` (m) in the body
frame, 3x3 inertia ``inertia`` (kg m^2) about the centre of mass in body axes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._typing import Array, ArrayLike
from ..errors import ModelError
from ..spatial import is_rotation, quat_to_rot, rotvec_to_rot, spatial_inertia
from .component import Component, as_floats, is_real

__all__ = ["Body", "Ground", "RigidBody", "Frame", "as_frame"]


class Body(Component):
    """Base class of ground, rigid and flexible bodies."""

    kind = "body"

    def frame(
        self,
        position: ArrayLike = (0.0, 0.0, 0.0),
        rotation: ArrayLike | None = None,
        name: str | None = None,
    ) -> Frame:
        """A :class:`Frame` fixed on this body at ``position`` (m, body frame)."""
        return Frame(self, position, rotation, name=name)


class Ground(Body):
    """The inertial reference body (body 0); every model has one as ``m.ground``."""

    def __init__(self) -> None:
        super().__init__(name="ground")

    def summary(self) -> str:
        return "Ground"


def _as_inertia(inertia, owner):
    if inertia is None:
        return np.zeros((3, 3))
    J = as_floats(inertia)
    if J.shape == (3,):
        J = np.diag(J)
    if J.shape == (6,):  # Ixx Iyy Izz Ixy Ixz Iyz
        xx, yy, zz, xy, xz, yz = J
        J = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    if J.shape != (3, 3) or not np.all(np.isfinite(J)):
        raise ModelError(
            f"{owner}: inertia must be a 3x3 matrix, 3 principal moments or "
            f"(Ixx, Iyy, Izz, Ixy, Ixz, Iyz); got shape {np.shape(inertia)}"
        )
    return J


def check_inertia(J: Array, owner: str, rtol: float = 1e-9) -> None:
    """Raise :class:`ModelError` unless ``J`` is symmetric PSD and obeys the triangle inequality."""
    scale = max(np.abs(J).max(), 1e-300)
    if not np.allclose(J, J.T, atol=rtol * scale):
        raise ModelError(
            f"{owner}: inertia about the centre of mass is not symmetric: {J.tolist()}"
        )
    ev = np.linalg.eigvalsh(0.5 * (J + J.T))
    if ev[0] < -rtol * scale:
        raise ModelError(
            f"{owner}: inertia is not positive semi-definite (principal moments {ev.tolist()}); "
            f"give moments about the centre of mass in body axes"
        )
    a, b, c = np.sort(ev)
    if a + b < c - rtol * scale:
        raise ModelError(
            f"{owner}: principal moments {ev.tolist()} violate the triangle inequality "
            f"I1 + I2 >= I3: no real mass distribution has them"
        )


class RigidBody(Body):
    """A rigid body.

    Parameters
    ----------
    mass : float
        Mass in kg (> 0).
    inertia : array_like, optional
        Inertia about the centre of mass in body axes (kg m^2): 3x3, three
        principal moments, or ``(Ixx, Iyy, Izz, Ixy, Ixz, Iyz)``. Default zero
        (point mass).
    com : array_like, optional
        Centre of mass in the body frame (m).
    visual : optional
        Anything the viewer can draw (mesh file path, pyvista mesh).

    >>> import flexmbd as fm
    >>> b = fm.RigidBody(mass=2.0, inertia=(0.1, 0.1, 0.2), com=(0.5, 0, 0))
    >>> b.spatial_inertia().shape
    (6, 6)
    """

    parameter_attributes = ("mass", "inertia", "com")

    def __init__(
        self,
        mass: float,
        inertia: ArrayLike | None = None,
        com: ArrayLike = (0.0, 0.0, 0.0),
        *,
        visual: Any = None,
        name: str | None = None,
        doc: str | None = None,
    ) -> None:
        super().__init__(name=name, doc=doc)
        self.mass = mass
        self.inertia = inertia
        self.com = com
        self.visual = visual
        self.validate()

    def validate(self) -> None:
        """Check mass, centre of mass and inertia; raise :class:`ModelError` naming the body."""
        owner = f"rigid body {self.local_name!r}"
        m = self.mass
        if not is_real(m) or m <= 0:
            raise ModelError(f"{owner}: mass must be a positive number of kg, got {m!r}")
        c = as_floats(self.com)
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise ModelError(f"{owner}: com must be 3 finite coordinates (m), got {self.com!r}")
        check_inertia(_as_inertia(self.inertia, owner), owner)

    @property
    def inertia_matrix(self) -> Array:
        """3x3 inertia about the centre of mass in body axes (kg m^2)."""
        return _as_inertia(self.inertia, f"rigid body {self.local_name!r}")

    @property
    def com_vector(self) -> Array:
        """Centre of mass in the body frame as an array (m)."""
        return np.asarray(self.com, dtype=float)

    def spatial_inertia(self) -> Array:
        """6x6 spatial inertia about the body-frame origin, ``[angular; linear]``."""
        return spatial_inertia(float(self.mass), self.com_vector, self.inertia_matrix)

    def summary(self) -> str:
        return f"RigidBody m={float(self.mass):.6g} kg, com={np.round(self.com_vector, 6).tolist()}"

    # -- shape helpers ----------------------------------------------------------------
    @classmethod
    def rod(
        cls,
        mass: float,
        length: float,
        axis: str = "x",
        radius: float = 0.0,
        origin: str = "center",
        **kw: Any,
    ) -> RigidBody:
        """Slender rod (solid cylinder of ``radius``) along ``axis``.

        ``origin="center"`` puts the body frame at the centre of mass,
        ``origin="end"`` at one end (the rod then spans 0..length along ``axis``).
        With ``radius=0`` the axial inertia is zero (a singular spatial inertia).
        """
        a = _axis_index(axis)
        It = mass * length**2 / 12.0 + mass * radius**2 / 4.0
        J = np.full(3, It)
        J[a] = 0.5 * mass * radius**2
        com = np.zeros(3)
        if origin == "end":
            com[a] = 0.5 * length
        elif origin != "center":
            raise ModelError(f"RigidBody.rod: origin must be 'center' or 'end', got {origin!r}")
        return cls(mass, J, com, **kw)

    @classmethod
    def box(cls, mass: float, size: ArrayLike, **kw: Any) -> RigidBody:
        """Solid box with edge lengths ``size = (a, b, c)`` (m), frame at the centre."""
        a, b, c = size
        J = mass / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
        return cls(mass, J, (0.0, 0.0, 0.0), **kw)

    @classmethod
    def cylinder(
        cls, mass: float, radius: float, length: float, axis: str = "z", **kw: Any
    ) -> RigidBody:
        """Solid circular cylinder along ``axis``, frame at the centre."""
        ax = _axis_index(axis)
        J = np.full(3, mass * (3 * radius**2 + length**2) / 12.0)
        J[ax] = 0.5 * mass * radius**2
        return cls(mass, J, (0.0, 0.0, 0.0), **kw)

    @classmethod
    def sphere(cls, mass: float, radius: float, **kw: Any) -> RigidBody:
        """Solid sphere, frame at the centre."""
        return cls(mass, np.full(3, 0.4 * mass * radius**2), (0.0, 0.0, 0.0), **kw)

    @classmethod
    def hexagonal_prism(
        cls, mass: float, side: float, length: float, axis: str = "z", **kw: Any
    ) -> RigidBody:
        """Solid regular hexagonal prism (hexagon ``side`` a, ``length`` along ``axis``).

        Axial moment ``5/12 m a^2``; transverse ``m (5 a^2 / 24 + L^2 / 12)`` (the
        hexagon's in-plane second moments are isotropic). Frame at the centre.
        """
        ax = _axis_index(axis)
        J = np.full(3, mass * (5.0 * side**2 / 24.0 + length**2 / 12.0))
        J[ax] = 5.0 / 12.0 * mass * side**2
        return cls(mass, J, (0.0, 0.0, 0.0), **kw)


def _axis_index(axis):
    if isinstance(axis, str) and axis in "xyz" and len(axis) == 1:
        return "xyz".index(axis)
    if axis in (0, 1, 2):
        return int(axis)
    raise ModelError(f"axis must be 'x', 'y' or 'z', got {axis!r}")


def _as_rotation(rotation, owner):
    if rotation is None:
        return np.eye(3)
    R = as_floats(rotation)
    if not np.all(np.isfinite(R)):
        raise ModelError(
            f"{owner}: rotation {rotation!r} must be finite numbers: a 3x3 rotation "
            "matrix, a rotation vector (3) or unit Euler parameters (4)"
        )
    if R.shape == (3,):  # rotation vector
        return rotvec_to_rot(R)
    if R.shape == (4,):
        if abs(np.linalg.norm(R) - 1.0) > 1e-9:
            raise ModelError(f"{owner}: Euler parameters must have unit norm, got {R.tolist()}")
        return quat_to_rot(R)
    if not is_rotation(R):
        raise ModelError(
            f"{owner}: rotation is not orthonormal with det +1: {R.tolist()}; give a proper "
            f"rotation matrix, a rotation vector (3) or unit Euler parameters (4)"
        )
    return R


class Frame(Component):
    """A frame (marker) fixed on a body.

    ``position`` (m) is the frame origin in body coordinates; ``rotation`` maps
    frame axes to body axes (3x3 matrix, rotation vector, or scalar-first unit
    Euler parameters). Joints and force elements attach to frames.
    """

    kind = "frame"

    def __init__(
        self,
        body: Body,
        position: ArrayLike = (0.0, 0.0, 0.0),
        rotation: ArrayLike | None = None,
        *,
        name: str | None = None,
        doc: str | None = None,
    ) -> None:
        super().__init__(name=name, doc=doc)
        if not isinstance(body, Body):
            raise ModelError(f"Frame: the first argument must be a body, got {type(body).__name__}")
        p = as_floats(position)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise ModelError(f"Frame on {body.local_name!r}: position must be 3 numbers (m)")
        self.body = body
        self.position = p
        self.rotation = _as_rotation(rotation, f"frame on {body.local_name!r}")

    def summary(self) -> str:
        return f"Frame on {self.body.name} at {np.round(self.position, 6).tolist()}"


def as_frame(spec: Any, body: Body, owner: str) -> Frame:
    """Interpret a frame specification attached to ``body``.

    ``spec`` is a :class:`Frame` on ``body``, None (body origin), a 3-vector
    (position, body axes), or a ``(position, rotation)`` pair.
    """
    if isinstance(spec, Frame):
        if spec.body is not body:
            raise ModelError(
                f"{owner}: frame is on body {spec.body.name!r}, expected one on {body.name!r}"
            )
        return spec
    if spec is None:
        return Frame(body)
    if isinstance(spec, tuple) and len(spec) == 2 and np.ndim(spec[0]) == 1:
        return Frame(body, spec[0], spec[1])
    return Frame(body, spec)
