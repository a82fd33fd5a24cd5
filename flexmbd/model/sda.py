"""Spring-damper-actuator (SDA) between two points of two bodies, with exact Jacobians.

Kan, Peng & Chen, *Rigid body system dynamic with the accurate Jacobian matrix of
spring-damper-actuator*, Chinese J. Theor. Appl. Mech. 49(5), 2017 (the seed).
The paper works in Euler-parameter coordinates directly (its appendix B); here the
element is written once at the body level (the generic force-element interface of
:mod:`flexmbd.model.forces`) and each formulation maps it to its coordinates.

Derivation (world axes throughout)
----------------------------------
Attachment points ``P_i = r_i + R_i s_i``, ``P_j = r_j + R_j s_j``; arms
``rho_i = R_i s_i``, ``rho_j = R_j s_j``. With ``d = P_j - P_i``::

    l = |d|,  u = d / l,  dd = dP_j/dt - dP_i/dt,  dP/dt = v + w x rho,
    ldot = u . dd,
    f = k (l - l0) + c ldot + f_a(t)          (f > 0: tension)

The element pulls ``P_i`` towards ``P_j`` with ``g = f u`` and ``P_j`` the other
way, so the wrenches about the body origins are ``F_i = [rho_i x g; g]`` and
``F_j = [-rho_j x g; -g]``.

Derivatives of ``g`` (``P = I - u u^T`` the projector normal to the line)::

    dg/dd  = k u u^T + (c/l) u dd^T P + (f/l) P        (not symmetric when c != 0)
    dg/ddd = c u u^T

and of the kinematic quantities for a small world rotation ``dphi`` and
translation ``dr`` of a body (``x = [dphi; dr]``, ``V = [w; v]``)::

    dP/dx    = [-rho~, I],       d(dP/dt)/dx = [-w~ rho~, 0],
    d(dP/dt)/dV = [-rho~, I],    d(rho_i x g)/dphi_i (g fixed) = g~ rho_i~.

Hence, with ``D_b = [-rho_b~, I]`` and ``Dd_b = [-w_b~ rho_b~, 0]`` and the sign
``s_j = +1``, ``s_i = -1`` of each end in ``d``::

    dg/dx_b = s_b (dg/dd D_b + dg/ddd Dd_b),     dg/dV_b = s_b dg/ddd D_b
    K_ib = [rho_i~ dg/dx_b; dg/dx_b] + delta_ib [g~ rho_i~, 0; 0, 0]
    K_jb = -[rho_j~ dg/dx_b; dg/dx_b] - delta_jb [g~ rho_j~, 0; 0, 0]
    C_ib = [rho_i~ dg/dV_b; dg/dV_b],  C_jb = -[rho_j~ dg/dV_b; dg/dV_b]

These are the exact partial derivatives; the absolute formulation turns them into
the paper's ``dQ/dq`` and ``dQ/dqdot`` in Euler parameters
(:mod:`flexmbd.absolute.forces`), adding the derivative of the map itself.

Mapping in the recursive (joint-coordinate) formulation
--------------------------------------------------------
With body twists ``V_b = J_b(q) qd`` (world axes, at the body origin) the
generalized force is ``Q = sum_b J_b^T F_b`` and its exact Jacobians are::

    dQ/dqd = sum_{a,b} J_a^T C_ab J_b
    dQ/dq  = sum_{a,b} J_a^T (K_ab X_b + C_ab dV_b/dq) + sum_a (dJ_a^T/dq) F_a

with ``X_b = dx_b/dq`` the body's small-displacement Jacobian (equal to
``J_b`` for the joint types whose ``qdot = v``) and ``dV_b/dq = (dJ_b/dq) qd``.
The last two terms are formulation geometry, identical for every element.

Ends at deforming frames of flexible bodies
-------------------------------------------
An end may be given as a frame of its body instead of a point. A frame of a rigid
body (or a plain :class:`~flexmbd.Frame`) stands for its origin, fixed in the body
frame. An interface or node frame of a :class:`~flexmbd.FlexibleBody`
(``body.interface("B")``, ``body.node(i)``, ``body.point(xyz)``) moves with the
deformation: ``P = r + A (s0 + U q_f)`` with ``U`` the frame's translation modes, and
the element does work on the modal coordinates (``Q_f = U^T A^T F``). The absolute
formulation applies such ends exactly, with exact Jacobians
(:class:`flexmbd.absolute.flexible.FlexSDA`); the recursive formulation applies them
as body wrenches plus modal forces ``U^T f_b`` (explicit integrators need no Jacobian).
The body-level :meth:`wrenches` and :meth:`jacobians` below use the frame's undeformed
position; the formulations do not call them for deforming ends.

Energy bookkeeping
------------------
``potential`` is the spring energy ``k (l - l0)^2 / 2``; the damper dissipates
``c ldot^2`` (W) and the actuator delivers ``-f_a ldot`` (W) to the bodies
(:meth:`damper_power`, :meth:`actuator_power`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._typing import ArrayLike
from ..errors import ModelError
from ..spatial import skew
from .bodies import Body, Frame, Ground
from .component import as_floats, is_real
from .forces import ForceElement

__all__ = ["SpringDamperActuator"]


class SpringDamperActuator(ForceElement):
    """Linear spring, damper and actuator acting along the line between two points.

    Parameters
    ----------
    body_i, body_j : Body
        The two bodies (one may be ``m.ground``).
    point_i, point_j : array_like or Frame
        Attachment points (m) in the body frames (fixed in the floating frame of a
        flexible body), or frames of ``body_i`` / ``body_j``: a frame of a rigid body
        stands for its origin; an interface or node frame of a flexible body
        (``m.beam.interface("B")``, ``m.beam.node(i)``, ``m.beam.point(xyz)``) moves
        with the deformation (module docstring).
    k : float
        Stiffness (N/m), ``>= 0``.
    c : float
        Damping (N s/m), ``>= 0``.
    l0 : float, optional
        Free length (m). Default: the length at the initial configuration, taken
        the first time a formulation compiles the model (then stored).
    fa : float or callable
        Actuator force (N, positive = tension, pulling the points together), a
        constant or ``fa(t)``.
    exact_jacobian : bool
        When False, implicit integrators and the static solver leave this element's
        Jacobian out of the Newton matrix (the seed paper's comparison); the forces
        are unchanged.

    The force along the line is ``f = k (l - l0) + c ldot + fa(t)``, positive in
    tension. See the module docstring for the derivation of the Jacobians.
    """

    parameter_attributes = ("k", "c", "l0")

    def __init__(
        self,
        body_i: Body,
        point_i: ArrayLike | Frame,
        body_j: Body,
        point_j: ArrayLike | Frame,
        k: float,
        c: float = 0.0,
        l0: float | None = None,
        fa: float | Callable[[float], float] = 0.0,
        *,
        exact_jacobian: bool = True,
        name: str | None = None,
        doc: str | None = None,
    ) -> None:
        super().__init__(name=name, doc=doc)
        owner = "SpringDamperActuator"
        for role, b in (("body_i", body_i), ("body_j", body_j)):
            if not isinstance(b, Body):
                raise ModelError(f"{owner}: {role} must be a body (or m.ground), got {b!r}")
        if body_i is body_j:
            raise ModelError(
                f"{owner}: both ends are on body {body_i.local_name!r}; "
                f"an element inside one rigid body does nothing"
            )
        if isinstance(body_i, Ground) and isinstance(body_j, Ground):
            raise ModelError(f"{owner}: both ends are on the ground")
        self.body_i = body_i
        self.body_j = body_j
        self.frame_i = self._frame(point_i, body_i, "point_i", "body_i")
        self.frame_j = self._frame(point_j, body_j, "point_j", "body_j")
        self.point_i = self._point(point_i, "point_i")
        self.point_j = self._point(point_j, "point_j")
        for what, v in (("k", k), ("c", c)):
            if not is_real(v) or v < 0:
                raise ModelError(f"{owner}: {what} must be a non-negative number, got {v!r}")
        self.k = float(k)
        self.c = float(c)
        if l0 is not None and (not is_real(l0) or l0 < 0):
            raise ModelError(f"{owner}: l0 must be a non-negative length (m) or None, got {l0!r}")
        self.l0 = None if l0 is None else float(l0)
        if not callable(fa) and not is_real(fa):
            raise ModelError(f"{owner}: fa must be a number (N) or a function of time")
        self.fa = fa
        self.exact_jacobian = bool(exact_jacobian)

    def _frame(self, p, body, what, role):
        """The deforming frame given for one end (None for a point or a fixed frame)."""
        if not isinstance(p, Frame):
            return None
        if p.body is not body:
            label = f" {self.name!r}" if self.name else ""
            raise ModelError(
                f"SpringDamperActuator{label}: {what} is a frame of body {p.body.name!r} but "
                f"{role} is {body.name!r}; pass a frame of {body.name!r} (e.g. "
                f"{body.name}.interface(...) / .point(...) on a flexible body) or a point "
                f"(3 coordinates, m, in the frame of {body.name!r})"
            )
        return p if hasattr(p, "modes") and hasattr(p, "pose") else None

    def deforming_ends(self) -> list[Any]:
        """``(end, body, frame)`` for each end at a frame that moves with the deformation of
        a flexible body (``end`` 0 for ``i``, 1 for ``j``); empty for a rigid-point SDA."""
        out = []
        for end, body, fr in ((0, self.body_i, self.frame_i), (1, self.body_j, self.frame_j)):
            if fr is not None and np.any(np.asarray(fr.modes, float)[3:]):
                out.append((end, body, fr))
        return out

    @staticmethod
    def _point(p, what):
        if isinstance(p, Frame):
            p = p.position
        a = as_floats(p)
        if a.shape != (3,) or not np.all(np.isfinite(a)):
            raise ModelError(f"SpringDamperActuator: {what} must be 3 coordinates (m), got {p!r}")
        return a

    # the integrators read has_jacobian: the switch removes the element from the matrix
    @property
    def has_jacobian(self) -> bool:
        return self.exact_jacobian

    def bodies(self) -> tuple[Body, ...]:
        return tuple(b for b in (self.body_i, self.body_j) if not isinstance(b, Ground))

    # -- geometry ---------------------------------------------------------------------
    def _end(self, state, body, point):
        if isinstance(body, Ground):
            return point.copy(), np.zeros(3), np.zeros(3), np.zeros(3)
        R, r = state.pose(body)
        w, v = state.twist(body)
        rho = R @ point
        return r + rho, rho, w, v + np.cross(w, rho)

    def _kin(self, state):
        Pi, rho_i, wi, vPi = self._end(state, self.body_i, self.point_i)
        Pj, rho_j, wj, vPj = self._end(state, self.body_j, self.point_j)
        d = Pj - Pi
        length = self.line_length(d)
        dd = vPj - vPi
        return d, dd, length, rho_i, rho_j, wi, wj

    def actuator_force(self, t: float) -> float:
        """Actuator force ``fa(t)`` (N, positive = tension) at time ``t`` (s), the third
        term of the line force ``f = k (l - l0) + c ldot + fa(t)``."""
        return float(self.fa(t)) if callable(self.fa) else float(self.fa)

    def line_length(self, d: ArrayLike) -> float:
        """Length ``l = |d|`` (m) of the line ``d = P_j - P_i`` (world); a ModelError when
        the attachment points coincide (no line of action)."""
        length = float(np.linalg.norm(d))
        if length < 1e-12:
            raise ModelError(
                f"SpringDamperActuator {self.name!r}: the attachment points coincide (length 0); "
                f"the line of action is undefined"
            )
        return length

    def line_force(
        self, t: float, length: float, ldot: float, state: ArrayLike | None = None
    ) -> float:
        """Force along the line ``f = k (l - l0) + c ldot + fa(t)`` (N, positive in tension)
        at length ``l`` (m) and rate ``ldot`` (m/s); ``state`` fixes a missing ``l0`` (see
        :meth:`free_length`)."""
        return self.k * (length - self.free_length(state)) + self.c * ldot + self.actuator_force(t)

    def free_length(self, state: Any = None) -> float:
        """``l0``; fixed from ``state`` (the initial configuration) on first use when None."""
        if self.l0 is None:
            if state is None:
                raise ModelError(
                    f"SpringDamperActuator {self.name!r}: l0 not set yet; "
                    f"compile the model or give l0"
                )
            self.l0 = self.length(state)
        return self.l0

    def length(self, state: Any) -> float:
        """Current length ``l`` (m)."""
        return self._kin(state)[2]

    def length_rate(self, state: Any) -> float:
        """``dl/dt`` (m/s)."""
        d, dd, length = self._kin(state)[:3]
        return float(d @ dd) / length

    def tension(self, t: float, state: Any) -> float:
        """Force along the line ``f = k (l - l0) + c ldot + fa(t)`` (N, positive in tension)."""
        d, dd, length = self._kin(state)[:3]
        return self.line_force(t, length, float(d @ dd) / length, state)

    # -- force-element interface ------------------------------------------------------
    def wrenches(self, t: float, state: Any) -> Any:
        d, dd, length, rho_i, rho_j, _, _ = self._kin(state)
        u = d / length
        g = self.line_force(t, length, u @ dd, state) * u
        out = []
        if not isinstance(self.body_i, Ground):
            out.append((self.body_i, np.concatenate([np.cross(rho_i, g), g])))
        if not isinstance(self.body_j, Ground):
            out.append((self.body_j, np.concatenate([-np.cross(rho_j, g), -g])))
        return out

    def jacobians(self, t: float, state: Any) -> Any:
        d, dd, length, rho_i, rho_j, wi, wj = self._kin(state)
        u = d / length
        ldot = float(u @ dd)
        f = self.line_force(t, length, ldot, state)
        g = f * u
        P = np.eye(3) - np.outer(u, u)
        dg_dd = self.k * np.outer(u, u) + (self.c / length) * np.outer(u, P @ dd) + (f / length) * P
        dg_ddd = self.c * np.outer(u, u)
        ends = []
        for sign, body, rho, w in ((-1.0, self.body_i, rho_i, wi), (1.0, self.body_j, rho_j, wj)):
            if isinstance(body, Ground):
                continue
            Rs, Ws = skew(rho), skew(w)
            D = np.hstack([-Rs, np.eye(3)])
            Dd = np.hstack([-Ws @ Rs, np.zeros((3, 3))])
            dgx = sign * (dg_dd @ D + dg_ddd @ Dd)
            dgV = sign * (dg_ddd @ D)
            ends.append((body, rho, dgx, dgV))
        out = []
        gs = skew(g)
        for fsign, body, rho in ((1.0, self.body_i, rho_i), (-1.0, self.body_j, rho_j)):
            if isinstance(body, Ground):
                continue
            Rs = skew(rho)
            for other, _, dgx, dgV in ends:
                K = fsign * np.vstack([Rs @ dgx, dgx])
                C = fsign * np.vstack([Rs @ dgV, dgV])
                if other is body:
                    K[:3, :3] += fsign * (gs @ Rs)
                out.append((body, other, K, C))
        return out

    def potential(self, t: float, state: Any) -> float:
        e = self.length(state) - self.free_length(state)
        return 0.5 * self.k * e * e

    def damper_power(self, t: float, state: Any) -> float:
        """Power dissipated by the damper, ``c ldot^2`` (W, >= 0)."""
        ld = self.length_rate(state)
        return self.c * ld * ld

    def actuator_power(self, t: float, state: Any) -> float:
        """Power the actuator delivers to the bodies, ``-fa(t) ldot`` (W)."""
        return -self.actuator_force(t) * self.length_rate(state)

    def summary(self) -> str:
        bi = self.body_i.name
        bj = self.body_j.name
        return f"SpringDamperActuator {bi} -> {bj}, k={self.k:.6g} N/m, c={self.c:.6g} N s/m"
