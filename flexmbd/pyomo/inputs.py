"""Joint force elements whose values an optimizer sets: a control input and a bearing.

Both are :class:`~flexmbd.JointForce` elements with exact Jacobians, so every
formulation and integrator treats them like any other joint force. On a joint with one
coordinate and one speed (Revolute, Prismatic, Screw) each is also a linear
spring-damper-actuator law (:attr:`~flexmbd.JointForce.law`, the element's ``actuator``),
which the compiled absolute engine evaluates in its step (its force table re-reads ``c``
and the input at every evaluation) and the recursive formulation in its force table.

* :class:`JointInput` -- the force/torque along a joint's speeds is the attribute ``u``
  (nv,) (N or N m), set per time node by the grey-box block or by a profile ``u(t)``.
* :class:`ViscousBearing` -- friction torque/force ``-c qd`` on a joint (``c`` in
  N m s/rad or N s/m), a parameter of :mod:`flexmbd.pyomo.parameters`.

This module does not import Pyomo.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import ModelError
from ..model.forces import JointForce

__all__ = ["JointInput", "ViscousBearing"]


class JointInput(JointForce):
    """Control force/torque ``u`` (nv,) along a joint's speeds (N or N m).

    Parameters
    ----------
    joint : Joint
        The driven joint.
    u : array_like or callable, optional
        Initial value (nv,) or a profile ``u(t)`` (default zero). The grey-box block
        overwrites the value node by node; :meth:`set_profile` installs a profile for
        a simulation.
    """

    def __init__(self, joint, u=None, *, name: str | None = None, doc: str | None = None):
        super().__init__(joint, self._force, dfdq=self._dfdq, dfdqd=self._dfdqd, name=name, doc=doc)
        object.__setattr__(self, "_profile", None)
        object.__setattr__(self, "_u", np.zeros(joint.nv))
        if _one_speed(joint):  # the actuator term of a law without spring and damper
            self.actuator = self._actuator
        if callable(u):
            self.set_profile(u)
        elif u is not None:
            self.set_value(u)

    @property
    def nv(self) -> int:
        return self.joint.nv

    def set_value(self, u) -> None:
        """Constant value (nv,) from now on (removes a profile); no model revision bump."""
        a = np.atleast_1d(np.asarray(u, float))
        if a.shape != (self.joint.nv,) or not np.all(np.isfinite(a)):
            raise ModelError(
                f"JointInput {self.name!r}: give {self.joint.nv} finite values "
                f"(N or N m), got {u!r}"
            )
        object.__setattr__(self, "_profile", None)
        object.__setattr__(self, "_u", a)

    def set_profile(self, profile: Callable[[float], np.ndarray]) -> None:
        """A profile ``u(t)`` (t in s, returns nv values) for simulations."""
        if not callable(profile):
            raise ModelError(f"JointInput {self.name!r}: the profile must be a function u(t)")
        object.__setattr__(self, "_profile", profile)

    def value(self, t: float) -> np.ndarray:
        """The input at time ``t`` (nv,)."""
        if self._profile is not None:
            return np.atleast_1d(np.asarray(self._profile(t), float))
        return self._u

    @property
    def law(self):
        """``(0, 0, 0)``: no spring, no damper (one-speed joints; else None, a Python law)."""
        return (0.0, 0.0, 0.0) if _one_speed(self.joint) else None

    def _actuator(self, t):
        return float(self.value(t)[0])

    def _force(self, t, q, qd):
        return self.value(t)

    def _dfdq(self, t, q, qd):
        return np.zeros((self.joint.nv, self.joint.nq))

    def _dfdqd(self, t, q, qd):
        return np.zeros((self.joint.nv, self.joint.nv))

    def summary(self) -> str:
        return f"JointInput on {self.joint.name}"


class ViscousBearing(JointForce):
    """Bearing friction ``f = -c qd`` along a joint's speeds.

    Parameters
    ----------
    joint : Joint
        The joint (revolute: ``c`` in N m s/rad; prismatic: N s/m).
    c : float
        Friction coefficient (>= 0).
    """

    parameter_attributes = ("c",)

    def __init__(self, joint, c: float, *, name: str | None = None, doc: str | None = None):
        super().__init__(joint, self._force, dfdq=self._dfdq, dfdqd=self._dfdqd, name=name, doc=doc)
        try:
            c = float(c)
        except (TypeError, ValueError):
            c = float("nan")
        if not (np.isfinite(c) and c >= 0):
            raise ModelError(
                f"ViscousBearing on {joint.local_name!r}: c must be a finite "
                "number >= 0 (N m s/rad)"
            )
        self.c = c
        if _one_speed(joint):  # a law without spring and actuator
            self.actuator = _no_actuator

    @property
    def law(self):
        """``(0, c, 0)``: the damper of a linear law (one-speed joints; else None, a
        Python law). Read at every evaluation, so a new ``c`` needs no rebuild."""
        return (0.0, self.c, 0.0) if _one_speed(self.joint) else None

    def _force(self, t, q, qd):
        return -self.c * np.asarray(qd, float)

    def _dfdq(self, t, q, qd):
        return np.zeros((self.joint.nv, self.joint.nq))

    def _dfdqd(self, t, q, qd):
        return -self.c * np.eye(self.joint.nv)

    def summary(self) -> str:
        return f"ViscousBearing on {self.joint.name} (c = {self.c:g})"


def _one_speed(joint) -> bool:
    """Whether ``joint`` has one coordinate and one speed (a law's joint)."""
    return joint.nv == 1 and joint.nq == 1


def _no_actuator(t):
    return 0.0


_no_actuator.constant = True  # the compiled engine evaluates it once
