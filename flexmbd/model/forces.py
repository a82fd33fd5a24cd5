"""Force elements: one interface for every formulation.

A force element acting on bodies reports, for the current body states,

* ``wrenches(t, state)``: a list of ``(body, F)`` with ``F = [n; f]`` (N m, N) in
  **world axes about the body-frame origin**;
* ``jacobians(t, state)``: a list of ``(body_i, body_j, K, C)`` with
  ``K = dF_i/dx_j`` and ``C = dF_i/dV_j`` (6x6), where ``x_j = [dphi; dr]`` is a
  small world-axes rotation and translation of body j's frame and
  ``V_j = [w; v]`` its world-axes twist (angular velocity and velocity of its
  origin); None when the element has no exact Jacobian;
* ``potential(t, state)``: stored energy (J), 0 for non-conservative elements.

``state`` is any object with ``state.pose(body) -> (R, r)`` (body axes -> world,
origin in world) and ``state.twist(body) -> (w, v)``. Each formulation maps these
body-level quantities to its own coordinates (absolute: Euler parameters;
recursive: joint Jacobians), so an element's physics and Jacobians are written
once. Joint-space elements (:class:`JointForce`) act on joint speeds directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._typing import Array, ArrayLike
from ..errors import ModelError
from ..spatial import skew
from .bodies import Body, Frame, Ground, RigidBody
from .component import Component, as_floats
from .joints import Joint

__all__ = ["ForceElement", "Gravity", "PointForce", "PointTorque", "JointForce"]


def _vector_function(value, owner, what):
    """Constant 3-vector or callable ``f(t)`` -> callable returning a 3-array."""
    if callable(value):

        def fun(t):
            return np.asarray(value(t), dtype=float)

        fun.constant = False
        return fun
    v = as_floats(value)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ModelError(f"{owner}: {what} must be 3 numbers or a function of time, got {value!r}")

    def const(t):
        return v

    const.constant = True  # the compiled engine evaluates it once, not per step
    return const


class ForceElement(Component):
    """Base class of force elements (see the module docstring for the interface)."""

    kind = "force"
    #: True when :meth:`jacobians` returns exact derivatives
    has_jacobian = False

    def bodies(self) -> tuple[Body, ...]:
        """Bodies this element acts on."""
        return ()

    def wrenches(self, t: float, state: Any) -> Any:
        return []

    def jacobians(self, t: float, state: Any) -> Any:
        return None

    def potential(self, t: float, state: Any) -> float:
        return 0.0


class Gravity(ForceElement):
    """Uniform gravity ``g`` (m/s^2, world axes) on every body of the model.

    Rigid bodies get ``m g`` at their centre of mass; flexible bodies get the
    exact distributed load from their mass invariants (handled by the formulation).
    """

    has_jacobian = True
    parameter_attributes = ("g",)

    def __init__(
        self, g: ArrayLike = (0.0, 0.0, -9.81), *, name: str | None = None, doc: str | None = None
    ) -> None:
        super().__init__(name=name, doc=doc)
        g = as_floats(g)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ModelError(f"Gravity: g must be 3 numbers (m/s^2), got {g!r}")
        self.g = g

    def _rigid_bodies(self):
        m = self.model()
        return [] if m is None else [b for b in m.bodies() if isinstance(b, RigidBody)]

    def bodies(self) -> tuple[Body, ...]:
        return tuple(self._rigid_bodies())

    def wrenches(self, t: float, state: Any) -> Any:
        out = []
        for b in self._rigid_bodies():
            R, _ = state.pose(b)
            f = float(b.mass) * self.g
            out.append((b, np.concatenate([np.cross(R @ b.com_vector, f), f])))
        return out

    def jacobians(self, t: float, state: Any) -> Any:
        out = []
        for b in self._rigid_bodies():
            R, _ = state.pose(b)
            K = np.zeros((6, 6))
            K[:3, :3] = skew(float(b.mass) * self.g) @ skew(R @ b.com_vector)
            out.append((b, b, K, np.zeros((6, 6))))
        return out

    def potential(self, t: float, state: Any) -> float:
        e = 0.0
        for b in self._rigid_bodies():
            R, r = state.pose(b)
            e -= float(b.mass) * self.g @ (r + R @ b.com_vector)
        return e

    def summary(self) -> str:
        return f"Gravity g={self.g.tolist()} m/s^2"


class PointForce(ForceElement):
    """Force ``force`` (N) at ``point`` (m, body frame) of ``body``.

    ``force`` is a 3-vector or a function of time; ``frame="world"`` (default)
    keeps its direction fixed in space, ``frame="body"`` makes it follow the body.
    ``point`` may also be a frame on ``body``; on a flexible body an interface or node
    frame (``body.interface("B")``, ``body.node(i)``) moves with the deformation and the
    force does work on the modal coordinates (formulations that support it read
    ``attachment``; the others use the frame's undeformed position).
    """

    has_jacobian = True

    def __init__(
        self,
        body: Body,
        point: ArrayLike | Frame = (0.0, 0.0, 0.0),
        force: ArrayLike | Callable[[float], ArrayLike] = (0.0, 0.0, 0.0),
        *,
        frame: str = "world",
        name: str | None = None,
        doc: str | None = None,
    ) -> None:
        super().__init__(name=name, doc=doc)
        owner = "PointForce"
        if not isinstance(body, Body) or isinstance(body, Ground):
            raise ModelError(f"{owner}: body must be a non-ground body, got {body!r}")
        if frame not in ("world", "body"):
            raise ModelError(f"{owner}: frame must be 'world' or 'body', got {frame!r}")
        self.body = body
        self.attachment = None
        if isinstance(point, Frame):
            if point.body is not body:
                raise ModelError(
                    f"{owner}: the frame is on body {point.body.name!r}, expected one "
                    f"on {body.name!r}"
                )
            self.attachment = point
            point = point.position
        p = as_floats(point)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise ModelError(
                f"{owner}: point must be 3 finite coordinates (m, body frame), got {point!r}"
            )
        self.point = p
        self.force = _vector_function(force, owner, "force")
        self.frame = frame

    def bodies(self) -> tuple[Body, ...]:
        return (self.body,)

    def _world(self, t, state):
        R, _ = state.pose(self.body)
        f = self.force(t)
        return R, R @ self.point, (R @ f if self.frame == "body" else f)

    def wrenches(self, t: float, state: Any) -> Any:
        _, rp, f = self._world(t, state)
        return [(self.body, np.concatenate([np.cross(rp, f), f]))]

    def jacobians(self, t: float, state: Any) -> Any:
        _, rp, f = self._world(t, state)
        K = np.zeros((6, 6))
        if self.frame == "world":
            K[:3, :3] = skew(f) @ skew(rp)
        else:
            K[:3, :3] = -skew(np.cross(rp, f))
            K[3:, :3] = -skew(f)
        return [(self.body, self.body, K, np.zeros((6, 6)))]


class PointTorque(ForceElement):
    """Torque ``torque`` (N m) on ``body``, constant or a function of time, world or body axes."""

    has_jacobian = True

    def __init__(
        self,
        body: Body,
        torque: ArrayLike | Callable[[float], ArrayLike] = (0.0, 0.0, 0.0),
        *,
        frame: str = "world",
        name: str | None = None,
        doc: str | None = None,
    ) -> None:
        super().__init__(name=name, doc=doc)
        if not isinstance(body, Body) or isinstance(body, Ground):
            raise ModelError(f"PointTorque: body must be a non-ground body, got {body!r}")
        if frame not in ("world", "body"):
            raise ModelError(f"PointTorque: frame must be 'world' or 'body', got {frame!r}")
        self.body = body
        self.torque = _vector_function(torque, "PointTorque", "torque")
        self.frame = frame

    def bodies(self) -> tuple[Body, ...]:
        return (self.body,)

    def _n(self, t, state):
        n = self.torque(t)
        if self.frame == "body":
            R, _ = state.pose(self.body)
            n = R @ n
        return n

    def wrenches(self, t: float, state: Any) -> Any:
        return [(self.body, np.concatenate([self._n(t, state), np.zeros(3)]))]

    def jacobians(self, t: float, state: Any) -> Any:
        K = np.zeros((6, 6))
        if self.frame == "body":
            K[:3, :3] = -skew(self._n(t, state))
        return [(self.body, self.body, K, np.zeros((6, 6)))]


class JointForce(ForceElement):
    """Generalized force on a joint's speeds (torque on a revolute, force on a prismatic).

    ``force`` is a constant array of the joint's ``nv`` values or a function
    ``f(t, q, qd)`` of time and the joint's own coordinates and speeds. Optional
    ``dfdq(t, q, qd)`` and ``dfdqd(t, q, qd)`` give its exact Jacobians (nv x nq,
    nv x nv) for implicit integrators.
    """

    #: the constant force (nv,) when ``force`` was given as numbers, else None
    constant_force: Array | None = None
    #: ``(stiffness, damping, q0)`` of a :meth:`spring_damper` law, else None
    law: tuple[float, float, float] | None = None
    #: the numba ``cfunc`` of a :meth:`compiled_law`, else None
    user_law: Any = None
    #: ``f(t)`` (nv,) of a :meth:`of_time` drive (a function of time only), else None
    time_force: Callable[[float], Array] | None = None
    #: numba signature of a :meth:`compiled_law`: ``law(q, qd, t, which)``
    LAW_SIGNATURE = "float64(float64, float64, float64, int64)"

    def __init__(
        self,
        joint: Joint,
        force: Callable[..., ArrayLike],
        *,
        dfdq: Callable[..., ArrayLike] | None = None,
        dfdqd: Callable[..., ArrayLike] | None = None,
        name: str | None = None,
        doc: str | None = None,
    ) -> None:
        super().__init__(name=name, doc=doc)
        if not isinstance(joint, Joint):
            raise ModelError(f"JointForce: first argument must be a joint, got {joint!r}")
        self.joint = joint
        #: the actuator term ``f_a(t)`` (N or N m) of a :meth:`spring_damper` law, else None
        self.actuator: Callable[[float], float] | None = None
        if callable(force):
            self._f = force
        else:
            f = np.atleast_1d(as_floats(force))
            if f.shape != (joint.nv,) or not np.all(np.isfinite(f)):
                raise ModelError(
                    f"JointForce on {joint.local_name!r}: give {joint.nv} values (finite, N or "
                    f"N m) or a function f(t, q, qd), got {force!r}"
                )
            self._f = lambda t, q, qd: f
            self.constant_force = f
        self.dfdq = dfdq
        self.dfdqd = dfdqd
        self.has_jacobian = not callable(force) or (dfdq is not None and dfdqd is not None)

    @classmethod
    def spring_damper(
        cls,
        joint: Joint,
        stiffness: float = 0.0,
        damping: float = 0.0,
        q0: float = 0.0,
        actuator: float | Callable[[float], float] = 0.0,
        *,
        name: str | None = None,
        doc: str | None = None,
    ) -> JointForce:
        """Linear spring-damper-actuator along a one-speed joint's coordinate.

        ``tau = actuator(t) - stiffness (q - q0) - damping qd`` (N m and rad for an angle,
        N and m for a displacement; ``actuator`` a number or a function of time only). The
        law is known in closed form, so the compiled absolute engine evaluates it, with its
        exact Jacobians, inside its step (Revolute and Prismatic joints: a model with a
        Screw or a GearCoupling runs the engine-free path, whose coordinate rows the engine
        does not take), and the recursive formulation in its compiled force table (an
        actuator given as a function of time is evaluated once per call in Python);
        elsewhere it is the Python law ``f(t, q, qd)`` with ``dfdq``/``dfdqd``.
        """
        if not isinstance(joint, Joint) or joint.nv != 1 or joint.nq != 1:
            raise ModelError(
                f"JointForce.spring_damper: needs a joint with one coordinate and one speed "
                f"(Revolute, Prismatic, Screw), got {joint!r}"
            )
        try:
            k, c, x0 = (float(x) for x in (stiffness, damping, q0))
        except (TypeError, ValueError):
            k = c = x0 = np.nan
        if not all(np.isfinite((k, c, x0))):
            raise ModelError(
                f"JointForce.spring_damper on {joint.local_name!r}: stiffness, damping and q0 "
                f"must be finite numbers, got {(stiffness, damping, q0)!r}"
            )
        if callable(actuator):
            fa = actuator
        else:
            try:
                a0 = float(actuator)
            except (TypeError, ValueError):
                a0 = np.nan
            if not np.isfinite(a0):
                raise ModelError(
                    f"JointForce.spring_damper on {joint.local_name!r}: actuator must be a "
                    f"finite number or a function of time, got {actuator!r}"
                )

            def fa(t):
                return a0

            fa.constant = True  # the compiled engine evaluates it once

        def force(t, q, qd):
            return np.array([float(fa(t)) - k * (q[0] - x0) - c * qd[0]])

        el = cls(
            joint,
            force,
            dfdq=lambda t, q, qd: np.array([[-k]]),
            dfdqd=lambda t, q, qd: np.array([[-c]]),
            name=name,
            doc=doc,
        )
        el.law = (k, c, x0)
        el.actuator = fa
        return el

    @classmethod
    def of_time(
        cls,
        joint: Joint,
        force: Callable[[float], ArrayLike],
        *,
        name: str | None = None,
        doc: str | None = None,
    ) -> JointForce:
        """A drive given as a function of time only: ``force(t)`` (t in s) returns the
        joint's ``nv`` values (N m along an angular speed, N along a linear one; a number
        for a one-speed joint).

        Unlike a law ``f(t, q, qd)``, which the recursive formulation evaluates in Python
        at every state, a function of time joins the compiled force tables: the recursive
        formulation tabulates it on the stage times of its compiled RK4 blocks (one
        Python call per time), and on a one-speed joint (Revolute, Prismatic, Screw) it is
        the actuator term of :meth:`spring_damper` without spring and damper, which the
        absolute engine evaluates inside its step. A value of the wrong size or not
        finite raises :class:`~flexmbd.errors.ModelError` naming the joint (``force(0)``
        is checked when the drive is made; during a run the error ends it with a
        :class:`~flexmbd.errors.SolverError` that keeps the results so far)::

            m.drive = fm.JointForce.of_time(m.shoulder, lambda t: 2.0 * np.sin(t))
        """
        if not isinstance(joint, Joint):
            raise ModelError(f"JointForce.of_time: first argument must be a joint, got {joint!r}")
        if not callable(force):
            raise ModelError(
                f"JointForce.of_time on {joint.local_name!r}: force must be a function "
                f"f(t) of time (s) returning {joint.nv} value(s) (N or N m), got {force!r}; "
                f"a constant force is JointForce(joint, values)"
            )
        nv = joint.nv

        def values(t):
            v = np.ravel(np.asarray(force(t), dtype=float))
            if v.shape != (nv,) or not np.all(np.isfinite(v)):
                raise ModelError(
                    f"JointForce.of_time on {joint.local_name!r}: f({float(t)!r}) must return "
                    f"{nv} finite value(s) (N or N m), got {v!r}"
                )
            return v

        values(0.0)  # checked once here: a wrong size fails where the drive is made
        if nv == 1 and joint.nq == 1:

            def scalar(t):
                v = force(t)  # a Python or numpy float: no array round trip (tabulation)
                if isinstance(v, float | np.floating) and math.isfinite(v):
                    return float(v)
                return values(t)[0]

            el = cls.spring_damper(joint, actuator=scalar, name=name, doc=doc)
        else:
            el = cls(joint, lambda t, q, qd: values(t), name=name, doc=doc)
            el.has_jacobian = True  # no dependence on q, qd: zero Jacobians
        el.time_force = values
        return el

    @classmethod
    def compiled_law(
        cls, joint: Joint, law: Any, *, name: str | None = None, doc: str | None = None
    ) -> JointForce:
        """A force law ``tau(q, qd, t)`` (N m or N) along a one-speed joint's coordinate,
        given as a numba ``cfunc`` that both formulations call inside their compiled code.

        ``law`` has the signature :attr:`LAW_SIGNATURE`, ``law(q, qd, t, which)``: the
        force for ``which == 0``, its derivative ``dtau/dq`` for 1 and ``dtau/dqd`` for 2
        (exact derivatives: they enter the Newton matrix)::

            from numba import cfunc

            @cfunc(fm.JointForce.LAW_SIGNATURE)
            def cubic(q, qd, t, which):
                if which == 0:
                    return -50.0 * q**3 - 0.5 * qd
                return -150.0 * q**2 if which == 1 else -0.5

            m.spring = fm.JointForce.compiled_law(m.hinge, cubic)

        Revolute, Prismatic and Screw joints (angles unwrapped as for
        :meth:`spring_damper`). The absolute engine takes it on Revolute and Prismatic
        joints and calls it by its address (one compiled engine for any number of laws;
        a model with a Screw or a GearCoupling runs the engine-free path). The
        recursive formulation's compiled force table calls it by its address with the
        time of each evaluation (``forward_dynamics``, ``qdd``, the batch and inverse
        dynamics, the RK4 blocks of trees and closed loops, the adaptive closed-loop
        steps, the closed loops' single-state calls and output samples once the
        projector has its rows, the energies' law power); elsewhere (a flexible body or
        a Python law in the model, a closed loop's evaluations that the projector's QR
        decides, its weak-direction RK4 steps) the same function is called through
        ``ctypes`` (a Python call per evaluation, the same numbers). The element keeps
        ``law`` alive: compiled code holds its address.
        """
        call = getattr(law, "ctypes", None)
        if not isinstance(joint, Joint) or joint.nv != 1 or joint.nq != 1:
            raise ModelError(
                f"JointForce.compiled_law: needs a joint with one coordinate and one speed "
                f"(Revolute, Prismatic, Screw), got {joint!r}"
            )
        if not callable(call):
            raise ModelError(
                f"JointForce.compiled_law on {joint.local_name!r}: law must be a numba cfunc "
                f"with the signature {cls.LAW_SIGNATURE!r} (@numba.cfunc(fm.JointForce."
                f"LAW_SIGNATURE)), got {law!r}"
            )
        el = cls(
            joint,
            lambda t, q, qd: np.array([call(float(q[0]), float(qd[0]), float(t), 0)]),
            dfdq=lambda t, q, qd: np.array([[call(float(q[0]), float(qd[0]), float(t), 1)]]),
            dfdqd=lambda t, q, qd: np.array([[call(float(q[0]), float(qd[0]), float(t), 2)]]),
            name=name,
            doc=doc,
        )
        el.user_law = law
        return el

    def generalized_force(self, t: float, q: ArrayLike, qd: ArrayLike) -> Array:
        """Force along the joint speeds (N or N m), shape (nv,)."""
        return np.atleast_1d(np.asarray(self._f(t, q, qd), dtype=float))

    def generalized_jacobians(self, t: float, q: ArrayLike, qd: ArrayLike) -> tuple[Array, Array]:
        """``(df/dq, df/dqd)`` for the joint's own coordinates; zeros for a constant force."""
        nv, nq = self.joint.nv, self.joint.nq
        if self.dfdq is not None:
            return np.asarray(self.dfdq(t, q, qd)), np.asarray(self.dfdqd(t, q, qd))
        return np.zeros((nv, nq)), np.zeros((nv, nv))

    def summary(self) -> str:
        return f"JointForce on {self.joint.name}"
