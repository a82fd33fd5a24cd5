"""Cut-joint constraints on the tree joint coordinates (recursive formulation with loops).

The topology (:mod:`flexmbd.topology`) opens every loop at a *cut joint*; the
remaining spanning tree is solved by the Constraint Force Algorithm
(:mod:`flexmbd.recursive`) and every cut joint becomes constraint equations
``Φ(q, t) = 0`` on the tree coordinates ``q`` (Wang et al. 2025, eq. 2-7).

Relative motion of a cut joint
------------------------------
For a cut joint with parent frame ``p`` (on its declared parent body P) and child
frame ``c`` (on its child C), ``R = R_p^T R_c`` and ``d = R_p^T (p_c - p_p)`` are the
relative rotation and position, ``V_rel = [w; u]`` the twist of ``c`` relative
to ``p`` in ``c`` axes at the origin of ``c`` (the joints' convention,
:mod:`flexmbd.model.joints`): ``dR/dt = R w~``, ``dd/dt = R u``. ``V_rel`` is
linear in the tree speeds, ``V_rel = J_rel v``: the columns of the tree joints
between C and the closest common ancestor enter with ``+``, those between P and
it with ``-`` (both as motions of the point ``p_c``).

Equations per joint type
------------------------
Two kinds of scalar equations, with their exact derivatives along ``V_rel``:

* translational ``Φ = e · s``, ``s = R^T d`` (the vector from the parent-frame
  origin to the child-frame origin, in child axes), ``e`` a child-axes unit vector:
  ``dΦ/dt = e·u + w·(e × s)``, i.e. the row ``D = [(e × s)^T, e^T]``, and
  ``d²Φ/dt² = D dV_rel/dt + e · ((u + s × w) × w)``;
* rotational ``Φ = f · (R g)`` with ``f`` fixed in parent axes and ``g`` in child
  axes: ``D = [(g × R^T f)^T, 0]`` and ``d²Φ/dt² = D dV_rel/dt + (R^T f) · (w × (w × g))``.

=========== ====================================================== ======
joint       equations                                              count
=========== ====================================================== ======
Spherical   ``s = 0``                                              3
Revolute    ``s = 0``, ``u_k · (R a) = 0`` (k = 1, 2)              5
Universal   ``s = 0``, ``a1 · (R a2) = 0``                         4
Cylindrical ``u_k · s = 0``, ``u_k · (R a) = 0``                   4
Prismatic   ``u_k · s = 0``, ``u_k · (R a) = u_1 · (R u_2) = 0``   5
Screw       cylindrical + ``a · s - h theta = 0``                  5
Planar      ``n · s = 0``, ``u_k · (R n) = 0``                     3
Fixed       ``s = 0``, no rotation                                 6
Free        none                                                   0
=========== ====================================================== ======

(``u_1, u_2`` complete the joint axis ``a`` (or the plane normal ``n``) to a
right-handed triad (:func:`flexmbd.joint_types.perp_basis`); "no rotation" is
``e_3·(R e_2) = e_1·(R e_3) = e_2·(R e_1) = 0``, whose rows are exactly ``[I 0]`` at
``R = I``. The rows of every type come from the joint table, :mod:`flexmbd.joint_types`.
The screw row ``Φ = a·s - h θ`` (``θ`` the rotation about ``a``, on the branch that
the advance ``a·s / h`` selects) has ``D = [(a × s - h a)^T, a^T]`` and the velocity
terms of its translational part.) On the constraint manifold the
translational rows are ``[0, e^T]`` and the rotational rows are the joint's
constraint-moment directions, so the multipliers are the cut joint's
constraint-force components: its reaction (wrench of the parent on the child at
the child-frame origin in child axes, the convention of
docs/design/conventions.rst) is ``D^T λ``, plus any applied force along the
joint's own motion directions.

The generalized constraint force ``J^T λ = J_rel^T D^T λ`` is the wrench
``D^T λ`` acting on C at the child-frame origin and its opposite acting on P at
the same point; the tree reactions are obtained by applying these wrenches as
external wrenches in one more pass of the tree solver, so every joint reaction is
consistent with the cut-joint forces.

Rheonomic drivers
-----------------
:class:`JointDriver` prescribes one coordinate of a tree joint as a function of
time (``Φ = q_i - f(t)``, ``Φ_t = -f'(t)``, ``γ = f''(t)`` plus the velocity
terms of Planar in-plane coordinates); its multiplier is the joint force that
the drive needs, reported as the motion-direction part of that joint's reaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import ModelError
from ..joint_types import (
    PLANAR,
    REVOLUTE,
    SCREW,
    joint_coordinates,
    joint_type,
    perp_basis,
    speeds_from_twist,
    wrench_from_force,
)
from ..kinematics import relative_pose
from ..model.component import Component
from ..model.forces import ForceElement
from ..model.joints import Joint

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .._typing import Array, ArrayLike

__all__ = [
    "JointDriver",
    "GearCoupling",
    "CutJointConstraints",
    "constraint_rows",
    "cut_coordinates",
    "joint_force_on_cut",
    "needs_loops",
]


def constraint_rows(joint: Joint) -> tuple[list[Any], list[Any], list[str]]:
    """The cut equations of ``joint``: ``(translational e-vectors, rotational (f, g) pairs,
    labels)`` from the joint table (:meth:`flexmbd.joint_types.JointType.rows`); a Screw
    adds the row ``a·s - h theta`` (label ``"screw"``, :class:`_Cut`)."""
    return joint_type(joint, "recursive").rows(joint)


def cut_coordinates(
    joint: Joint, R: ArrayLike, d: ArrayLike, ref: ArrayLike | None = None
) -> Array:
    """Joint coordinates of a cut joint from its relative pose (on the constraint manifold);
    :func:`flexmbd.joint_types.joint_coordinates` (angles on the branch nearest ``ref``)."""
    return joint_coordinates(joint, R, d, ref)


class JointDriver(Component):
    """Prescribe one coordinate of a tree joint as a function of time (rheonomic constraint).

    Parameters
    ----------
    joint : Joint
        A tree joint (not a cut joint) of type Revolute, Prismatic, Cylindrical,
        Universal or Planar.
    position : callable ``f(t)``
        Prescribed coordinate value (rad or m).
    velocity, acceleration : callable, optional
        ``f'(t)`` and ``f''(t)``; default central differences of ``f`` (give them
        for exactness).
    coordinate : int
        Which coordinate of the joint (default 0).

    ``JointDriver.constant_speed(joint, speed, start=q0)`` drives at a constant rate.
    The driver's multiplier (the drive force) is reported as the motion-direction
    part of the joint's reaction, and in ``Results.extra["driver:<name>"]``.
    Drivers are honoured by the recursive formulation.
    """

    kind = "driver"

    def __init__(
        self,
        joint: Joint,
        position: Callable[[float], float],
        velocity: Callable[[float], float] | None = None,
        acceleration: Callable[[float], float] | None = None,
        coordinate: int = 0,
        *,
        name: str | None = None,
        doc: str | None = None,
    ) -> None:
        super().__init__(name=name, doc=doc)
        if not isinstance(joint, Joint):
            raise ModelError(f"JointDriver: first argument must be a joint, got {joint!r}")
        if not joint_type(joint).drivable:
            raise ModelError(
                f"JointDriver on {joint.local_name!r}: {type(joint).__name__} coordinates cannot "
                "be prescribed one by one; drive a Revolute, Prismatic, Cylindrical, Screw, "
                "Universal or Planar joint"
            )
        if not (0 <= int(coordinate) < joint.nq):
            raise ModelError(
                f"JointDriver on {joint.local_name!r}: coordinate must be 0..{joint.nq - 1}"
            )
        if not callable(position):
            raise ModelError("JointDriver: position must be a function of time f(t)")
        self.joint = joint
        self.coordinate = int(coordinate)
        self.position = position
        h = 1e-5
        self.velocity = velocity or (lambda t: (position(t + h) - position(t - h)) / (2 * h))
        self.acceleration = acceleration or (
            lambda t: (position(t + h) - 2 * position(t) + position(t - h)) / (h * h)
        )

    @classmethod
    def constant_speed(
        cls, joint: Joint, speed: float, start: float | None = None, coordinate: int = 0, **kw: Any
    ) -> JointDriver:
        """Drive ``joint`` at constant ``speed`` from ``start`` (default: its ``q0``)."""
        q0 = float(joint.q0[coordinate] if start is None else start)
        w = float(speed)
        return cls(
            joint, lambda t: q0 + w * t, lambda t: w, lambda t: 0.0, coordinate=coordinate, **kw
        )

    def summary(self) -> str:
        return f"JointDriver on {self.joint.name}[{self.coordinate}]"


class GearCoupling(JointDriver):
    """Gear, belt or rack-and-pinion coupling of two joint coordinates.

    The constraint ``q_b - q_b0 = ratio * (q_a - q_a0)`` between coordinate
    ``coordinate_a`` of ``joint_a`` and ``coordinate_b`` of ``joint_b`` (``q0`` their
    initial coordinates). For two Revolute joints (gear wheels of radii ``r_a, r_b``)
    ``ratio = -r_a / r_b`` for an external mesh, ``+r_a / r_b`` for an internal mesh or
    a belt; for rack and pinion (a Revolute pinion of pitch radius ``r`` driving a
    Prismatic rack) ``ratio = r`` (m/rad), see :meth:`rack_and_pinion`.

    It is a kinematic "driver" of ``joint_b`` whose target is the other joint's
    coordinate: in the recursive formulation one more row of the loop constraints
    (:class:`CutJointConstraints`), in the absolute formulation one coordinate
    equation (:mod:`flexmbd.absolute.constraints`). Its multiplier, the force along
    ``q_b`` that the coupling transmits (N m or N), is reported as
    ``Results.extra["driver:<name>"]`` and enters the two joints' reactions as the
    motion-direction parts: ``-lam`` on ``q_b`` and ``ratio * lam`` on ``q_a``.

    Parameters
    ----------
    joint_a, joint_b : Joint
        Tree joints of type Revolute, Prismatic, Cylindrical or Screw.
    ratio : float
        ``dq_b / dq_a`` (dimensionless, or m/rad from a rotation to a translation).
    coordinate_a, coordinate_b : int
        Which coordinates (default 0; 1 is the displacement of a Cylindrical joint).
    """

    kind = "coupling"

    def __init__(
        self,
        joint_a: Joint,
        joint_b: Joint,
        ratio: float,
        coordinate_a: int = 0,
        coordinate_b: int = 0,
        *,
        name: str | None = None,
        doc: str | None = None,
    ) -> None:
        Component.__init__(self, name=name, doc=doc)
        for role, j, c in (("joint_a", joint_a, coordinate_a), ("joint_b", joint_b, coordinate_b)):
            if not isinstance(j, Joint):
                raise ModelError(f"GearCoupling: {role} must be a joint, got {j!r}")
            if int(c) not in joint_type(j).couplable:
                raise ModelError(
                    f"GearCoupling: {role} {j.local_name!r} ({type(j).__name__}) coordinate "
                    f"{c} cannot be coupled; couple a Revolute, Prismatic, Cylindrical or "
                    f"Screw joint coordinate"
                )
        if joint_a is joint_b and int(coordinate_a) == int(coordinate_b):
            raise ModelError("GearCoupling: joint_a and joint_b are the same coordinate")
        ratio = float(ratio)
        if not np.isfinite(ratio) or ratio == 0.0:
            raise ModelError(f"GearCoupling: ratio must be a finite non-zero number, got {ratio}")
        self.joint_a, self.coordinate_a = joint_a, int(coordinate_a)
        self.joint, self.coordinate = joint_b, int(coordinate_b)
        self.ratio = ratio
        zero = lambda t: 0.0  # noqa: E731 - no time dependence
        self.position = self.velocity = self.acceleration = zero

    @property
    def joint_b(self) -> Joint:
        """The second (driven) joint."""
        return self.joint

    @classmethod
    def rack_and_pinion(cls, pinion: Joint, rack: Joint, radius: float, **kw: Any) -> GearCoupling:
        """Rack and pinion: the rack advances ``radius * angle`` (m) as the pinion turns.

        ``pinion`` a Revolute (or Cylindrical/Screw) joint, ``rack`` a Prismatic joint,
        ``radius`` the pitch radius of the pinion (m); the sign of ``radius`` picks the
        direction of the rack along its axis.
        """
        return cls(pinion, rack, radius, **kw)

    def residual(self, qa: float, qb: float) -> float:
        """``(q_b - q_b0) - ratio (q_a - q_a0)`` (rad or m)."""
        return (qb - float(self.joint.q0[self.coordinate])) - self.ratio * (
            qa - float(self.joint_a.q0[self.coordinate_a])
        )

    def summary(self) -> str:
        return (
            f"GearCoupling {self.joint_a.name}[{self.coordinate_a}] -> "
            f"{self.joint.name}[{self.coordinate}] (ratio {self.ratio:g})"
        )


# the compiled loop kernels' argument order: constants (Hc, Wc the joints' constant
# subspaces) and output workspaces (Wc, Lc, oc, bias the tree joints' world axes)
_LOOP_CONSTANTS = tuple("inb code prm Hc Wc rev Fp fp Fc fc qo nq vo nv".split())
_LOOP_OUTPUTS = tuple("Rb rb wb vOb Wc Lc oc bias".split())


def _joint_frames(joint, RP, rP, RC, rC):
    """World placement ``(R_p, p_p, R_c, p_c)`` of ``joint``'s parent and child frames
    from the poses of its two bodies (rotation, origin in m)."""
    Rp = RP @ joint.parent_frame.rotation
    Rc = RC @ joint.child_frame.rotation
    return Rp, rP + RP @ joint.parent_frame.position, Rc, rC + RC @ joint.child_frame.position


class _Cut:
    """Static data of one cut joint: equations and the tree paths of its two bodies."""

    def __init__(self, joint, system, row0):
        self.joint = joint
        self.name = joint.name
        self.P, self.C = joint.parent, joint.child
        self.trans, self.rots, labels = constraint_rows(joint)
        self.screw = joint_type(joint).code == SCREW
        if self.screw:
            labels = list(labels) + ["screw"]
            self.axis, self.h = np.asarray(joint.axis, dtype=float), float(joint.h)
            self.u1, self.u2 = perp_basis(self.axis)
        self.labels = [f"{joint.name}:{lab}" for lab in labels]
        self.m = len(labels)
        self.rows = slice(row0, row0 + self.m)
        self.E = np.array(self.trans, dtype=float).reshape(-1, 3)
        self.F = np.array([f for f, _ in self.rots], dtype=float).reshape(-1, 3)
        self.G = np.array([g for _, g in self.rots], dtype=float).reshape(-1, 3)
        pathC = system.tree_path(self.C)
        pathP = system.tree_path(self.P)
        common = set(pathC) & set(pathP)
        # (tree joint, sign): + for joints moving C (not P), - for joints moving P (not C)
        self.path = [(j, 1.0) for j in pathC if j not in common] + [
            (j, -1.0) for j in pathP if j not in common
        ]


class CutJointConstraints:
    """Constraint equations of the cut joints and drivers of a model, on a tree system.

    Implements the interface of :class:`flexmbd.constraints.projection.Constraints`
    (``phi``, ``jacobian``, ``phi_t``, ``gamma``, ``retract``, ``names``). Only the
    bodies on the loops are needed: their poses, twists, the world motion
    subspaces of the tree joints between them and ground, and the bias of the
    relative acceleration are computed in one pass from ground outwards
    (:meth:`_kinematics`), from the joints' own kinematics (``transform``,
    ``motion_subspace``, ``bias_acceleration``) and the tree topology: the tree
    solver is not needed for the constraints. Values at the last ``(q, v, t)``
    are cached, so the projector's calls cost one pass.

    ``gamma`` needs the relative acceleration of each cut joint at zero tree
    accelerations: with ``X_j`` the world placement of tree joint ``j``'s child
    frame, ``c_j`` its bias acceleration and ``V_B`` the (spatial, world-origin)
    twist of the body carrying that frame, the outboard body's acceleration gets
    ``s_j [X_j (H_j v'_j + c_j) + V_B x (X_j H_j v_j)]`` (``s_j = -1`` for a
    reversed tree joint); summed along the two paths of the cut joint.
    """

    def __init__(
        self,
        tree: Any,
        cut_joints: Sequence[Joint],
        drivers: Sequence[JointDriver] | None = (),
        topology: Any | None = None,
    ) -> None:
        self.tree = tree
        model = tree.model
        self.ground = model.ground
        topo = model.topology() if topology is None else topology
        joints = model.joints()
        bodies = model.bodies()
        # tree joint of every body (the one joining it to its inboard body), reversal
        self._inboard = {}
        self._label = {id(model.ground): 0}
        for label in range(1, topo.n_bodies + 1):
            b = bodies[int(topo.original_body[label]) - 1]
            jn = int(topo.tree_joint[label])
            p = int(topo.parent[label])
            pb = model.ground if p == 0 else bodies[int(topo.original_body[p]) - 1]
            self._inboard[id(b)] = (joints[jn - 1], bool(topo.reversed[jn - 1]), pb)
            self._label[id(b)] = label
        self._qsl, self._vsl = _slices(tree.coordinates), _slices(tree.speeds)
        self.cuts = []
        row = 0
        for j in cut_joints:
            c = _Cut(j, self, row)
            self.cuts.append(c)
            row += c.m
        # bodies on the loops, inboard first (regular labels increase outwards)
        loop = {}
        for c in self.cuts:
            for _j, _rev, b in self.tree_path(c.P) + self.tree_path(c.C):
                loop[id(b)] = b
        self._loop_bodies = sorted(loop.values(), key=lambda b: self._label[id(b)])
        # the compiled rows know no screw row: a screw cut joint takes the Python rows
        self.compiled = not any(c.screw for c in self.cuts)
        self._build_arrays()
        self.drivers = []
        for d in drivers:
            if isinstance(d, GearCoupling) and d.joint_a.name not in self._vsl:
                raise ModelError(
                    f"GearCoupling {d.name!r}: joint {d.joint_a.name!r} is a cut joint; couple "
                    f"tree joints (mark another joint of the loop cut=True)"
                )
            if d.joint.name not in self._vsl:
                raise ModelError(
                    f"JointDriver {d.name!r}: joint {d.joint.name!r} is a cut joint; drive a tree "
                    f"joint (mark another joint of the loop cut=True)"
                )
            self.drivers.append(d)
        self.n_cut_rows = row
        self.m = row + len(self.drivers)
        self.names = [lab for c in self.cuts for lab in c.labels] + [
            f"{d.name}:drive" for d in self.drivers
        ]
        self._nv = tree.nv
        self._key = None
        self._cache = {}
        # coordinate update (retraction): vectorized for joints with dq/dt = v
        lin_q, lin_v, self._special = [], [], []
        for j in joints:
            if j.name not in self._qsl:
                continue
            qs, vs = self._qsl[j.name], self._vsl[j.name]
            if joint_type(j).rate_is_speed:
                lin_q += list(range(qs.start, qs.stop))
                lin_v += list(range(vs.start, vs.stop))
            elif j.nv:
                self._special.append((j, qs, vs))
        self._lin_q = np.array(lin_q, dtype=np.int64)
        self._lin_v = np.array(lin_v, dtype=np.int64)

    def tree_path(self, body: Any) -> list[tuple[Joint, bool, Any]]:
        """Tree joints from ``body`` down to ground, as (joint, reversed, outboard body)."""
        out = []
        while body is not self.ground:
            j, rev, pb = self._inboard[id(body)]
            out.append((j, rev, body))
            body = pb
        return out

    # -- interface of projection.Constraints ---------------------------------------------
    def phi(self, q: ArrayLike, t: float = 0.0) -> Array:
        return self._eval(q, None, t)["phi"]

    def jacobian(self, q: ArrayLike, t: float = 0.0) -> Array:
        return self._eval(q, None, t)["J"]

    def phi_t(self, q: ArrayLike, t: float = 0.0) -> Array:
        out = np.zeros(self.m)
        for i, d in enumerate(self.drivers):
            if not isinstance(d, GearCoupling):
                out[self.n_cut_rows + i] = -float(d.velocity(t))
        return out

    def gamma(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> Array:
        return self._eval(q, v, t)["gamma"]

    def retract(self, q: ArrayLike, dv: ArrayLike) -> Array:
        q = np.array(q, dtype=float)
        q[self._lin_q] += dv[self._lin_v]
        for j, qs, vs in self._special:
            q[qs] = j.integrate(q[qs], dv[vs], 1.0)
        return q

    # -- evaluation ----------------------------------------------------------------------
    def relative(self, q: ArrayLike, v: ArrayLike | None = None, t: float = 0.0) -> Any:
        """Per cut joint: ``(R, d, V_rel, D, R_c, p_c)`` at ``(q, v)`` (V_rel None without v)."""
        return self._eval(q, v, t)["rel"]

    def _kinematics(self, q, v):
        """Poses, twists and joint terms of the loop bodies (world axes).

        Returns ``body -> (R, r, w, vO)`` (``vO``: velocity of the body point at the
        world origin) and ``joint -> (sign, speeds, Wcol, Lcol, o, bias6)`` with the
        joint's world motion columns ``Wcol`` (3 x nv, angular) and ``Lcol`` (linear at
        the child-frame origin ``o``), and its spatial bias contribution (or None).
        """
        ground = self.ground
        z3 = np.zeros(3)
        body = {id(ground): (np.eye(3), z3, z3, z3)}
        joint = {}
        for b in self._loop_bodies:
            j, rev, pb = self._inboard[id(b)]
            Rp, rp, wp, vOp = body[id(pb)]
            qs = self._qsl.get(j.name)
            qj = q[qs] if qs is not None else np.zeros(0)
            Rrel, prel = relative_pose(j, qj, rev)
            R = Rp @ Rrel
            r = rp + Rp @ prel
            if not j.nv:
                body[id(b)] = (R, r, wp, vOp)
                continue
            # world pose of the joint's child frame (on b, or on pb when reversed)
            Rb, rb = (Rp, rp) if rev else (R, r)
            cf = j.child_frame
            Rcj = Rb @ cf.rotation
            ocj = rb + Rb @ cf.position
            H = j.motion_subspace(qj)
            sg = -1.0 if rev else 1.0
            Wc = sg * (Rcj @ H[:3])
            Lc = sg * (Rcj @ H[3:])
            bias = None
            if v is None:
                body[id(b)] = (R, r, z3, z3)
            else:
                vj = v[self._vsl[j.name]]
                wj = Wc @ vj
                uO = Lc @ vj - _cross(wj, ocj)  # relative twist at the world origin
                w = wp + wj
                vO = vOp + uO
                body[id(b)] = (R, r, w, vO)
                # carrier of the joint's child frame: b (declared child) or pb (reversed)
                wB, vB = (wp, vOp) if rev else (w, vO)
                cj = j.bias_acceleration(qj, vj)
                cw = sg * (Rcj @ cj[:3])
                cO = sg * (Rcj @ cj[3:]) - _cross(cw, ocj)
                bias = np.concatenate([cw + _cross(wB, wj), cO + _cross(wB, uO) + _cross(vB, wj)])
            joint[id(j)] = (self._vsl[j.name], Wc, Lc, ocj, bias)
        return body, joint

    def _build_arrays(self):
        """Static arrays of the loop bodies for the compiled pass (:mod:`._nbloop`)."""

        bodies = self._loop_bodies
        n = len(bodies)
        self._li = {id(b): i for i, b in enumerate(bodies)}
        self._li[id(self.ground)] = -1
        A = dict(
            inb=np.zeros(n, np.int64),
            code=np.zeros(n, np.int64),
            prm=np.zeros((n, 9)),
            Hc=np.zeros((n, 6, 6)),
            Wc=np.zeros((n, 6, 6)),
            rev=np.zeros(n, np.bool_),
            Fp=np.zeros((n, 3, 3)),
            fp=np.zeros((n, 3)),
            Fc=np.zeros((n, 3, 3)),
            fc=np.zeros((n, 3)),
            qo=np.zeros(n, np.int64),
            nq=np.zeros(n, np.int64),
            vo=np.zeros(n, np.int64),
            nv=np.zeros(n, np.int64),
        )
        for i, b in enumerate(bodies):
            j, rev, pb = self._inboard[id(b)]
            A["inb"][i] = self._li[id(pb)]
            jt = joint_type(j)
            A["code"][i] = jt.code
            Ra, A["prm"][i], A["Hc"][i], A["Wc"][i] = jt.compiled(j, unit=False)
            A["rev"][i] = rev
            # aligned joint frames (the compiled kinematics' own)
            A["Fp"][i], A["fp"][i] = j.parent_frame.rotation @ Ra, j.parent_frame.position
            A["Fc"][i], A["fc"][i] = j.child_frame.rotation @ Ra, j.child_frame.position
            if j.name in self._qsl:
                A["qo"][i], A["nq"][i] = self._qsl[j.name].start, j.nq
                A["vo"][i], A["nv"][i] = self._vsl[j.name].start, j.nv
        self._arr = A
        # tree labels of the loop bodies where the stage may take the loop kinematics from the
        # tree pass (every tree joint of the loops a Revolute joint, none reversed), else -1;
        # second row: 1 for the bodies that carry a cut joint's frame
        ok = n > 0 and all(c == REVOLUTE for c in A["code"]) and not A["rev"].any()
        lab = np.full((2, max(n, 1)), -1, np.int64)
        if ok:
            lab[0] = [self._label[id(b)] for b in bodies]
            lab[1] = 0
            for c in self.cuts:
                for b in (c.P, c.C):
                    if b is not self.ground:
                        lab[1, self._li[id(b)]] = 1
        self._tree_lab = lab
        self._out = dict(
            Rb=np.zeros((n, 3, 3)),
            rb=np.zeros((n, 3)),
            wb=np.zeros((n, 3)),
            vOb=np.zeros((n, 3)),
            Wc=np.zeros((n, 3, 6)),
            Lc=np.zeros((n, 3, 6)),
            oc=np.zeros((n, 3)),
            bias=np.zeros((n, 6)),
        )
        for c in self.cuts:
            c.idx = np.array([self._li[id(outb)] for (j, _r, outb), _s in c.path], np.int64)
            c.sgn = np.array([sg for _p, sg in c.path], dtype=float)
        self._pack_cuts()

    def _pack_cuts(self):
        """Per-cut constants of :func:`._nbloop.cuts_eval` (every cut joint in one call)."""
        from ._nbloop import work_arrays

        self._work = work_arrays(self.tree.nv)
        nc = len(self.cuts)
        cI = np.zeros((nc, 9), np.int64)
        cF = np.zeros((nc, 2, 3, 3))
        cf = np.zeros((nc, 2, 3))
        po = eo = go = 0
        self.n_rows_cut = sum(c.m for c in self.cuts)
        for i, c in enumerate(self.cuts):
            nt, nr = len(c.E), len(c.F)
            cI[i] = (
                self._li[id(c.P)],
                self._li[id(c.C)],
                c.rows.start,
                nt,
                nr,
                po,
                len(c.idx),
                eo,
                go,
            )
            po, eo, go = po + len(c.idx), eo + nt, go + nr
            for s_, fr in enumerate((c.joint.parent_frame, c.joint.child_frame)):
                cF[i, s_], cf[i, s_] = fr.rotation, fr.position
        cat = np.concatenate
        z3 = np.zeros((0, 3))
        self._packed = (
            cI,
            cF,
            cf,
            cat([c.idx for c in self.cuts] + [np.zeros(0, np.int64)]),
            cat([c.sgn for c in self.cuts] + [np.zeros(0)]),
            np.ascontiguousarray(cat([c.E for c in self.cuts] + [z3])),
            np.ascontiguousarray(cat([c.F for c in self.cuts] + [z3])),
            np.ascontiguousarray(cat([c.G for c in self.cuts] + [z3])),
            np.zeros((self.n_rows_cut, 6)),  # workspaces: D rows, child frame poses
            np.zeros((nc, 3, 3)),
            np.zeros((nc, 3)),
            self._tree_lab,
            self._work,  # scratch of every call (nothing allocated per evaluation)
        )

    @property
    def compiled_rows(self) -> bool:
        """Whether :meth:`compiled_args` describes every row (compiled cut joints, no
        driver) and the retraction is ``q += dv`` (every coordinate rate is its speed)."""
        return (
            self.compiled
            and not self.drivers
            and not self._special
            and len(self._lin_q) == len(self._lin_v) == self._nv
            and np.array_equal(self._lin_q, self._lin_v)
        )

    def compiled_args(self) -> tuple:
        """The leading arguments of :func:`._nbloop.cuts_eval` (loop-body constants, their
        workspaces, the packed cut joints and their output workspaces; the arrays are this
        object's own, reused; before the scratch ``work``, the tree labels of the loop bodies,
        all -1 where the rows may not be taken from the tree pass:
        :func:`._nbloop.tree_loop_kinematics`)."""
        return (*self._loop_constants(), *self._loop_outputs(), *self._packed)

    def _loop_constants(self):
        """Loop-body constants, in the order of the compiled kernels' arguments."""
        A = self._arr
        return tuple(A[k] for k in _LOOP_CONSTANTS)

    def _loop_outputs(self):
        """Loop-body output workspaces, in the order of the compiled kernels' arguments."""
        O = self._out
        return tuple(O[k] for k in _LOOP_OUTPUTS)

    def _cached(self, q, v, t):
        """``(key, cached rows or None)``: the rows of the last evaluation when ``q``, ``t``
        and ``v`` are the same (``v`` None: any cached ``v`` serves)."""
        q = np.asarray(q, dtype=float)
        key = (q.tobytes(), None if v is None else np.asarray(v, dtype=float).tobytes(), float(t))
        if key == self._key or (
            v is None
            and self._key is not None
            and key[0] == self._key[0]
            and key[2] == self._key[2]
        ):
            return key, self._cache
        return key, None

    def _store(self, key, q, v, t, phi, J, gamma, rel):
        """Add the driver rows and keep the evaluation for the next call with ``key``."""
        self._driver_rows(q, v, t, phi, J, gamma)
        self._key = key
        self._cache = {"phi": phi, "J": J, "gamma": gamma, "rel": rel}
        return self._cache

    def _body_state(self, body):
        i = self._li[id(body)]
        if i < 0:
            z = np.zeros(3)
            return np.eye(3), z, z, z
        o = self._out
        return o["Rb"][i], o["rb"][i], o["wb"][i], o["vOb"][i]

    def _eval(self, q, v, t):
        if not self.compiled:
            return self._eval_py(q, v, t)
        key, hit = self._cached(q, v, t)
        if hit is not None:
            return hit
        q = np.asarray(q, dtype=float)
        from . import _nbloop as nb

        with_v = v is not None
        vv = np.ascontiguousarray(v, dtype=float) if with_v else np.zeros(max(self._nv, 1))
        A, O = self._arr, self._out
        qq = np.ascontiguousarray(q)
        w3, w33, w66, w6, Jrel = self._work
        nb.loop_kinematics(
            *self._loop_constants(), qq, vv, with_v, *self._loop_outputs(), w3, w33, w66, w6
        )
        m, nv = self.m, self._nv
        phi = np.zeros(m)
        J = np.zeros((m, nv))
        gamma = np.zeros(m)
        rel = []
        bsp = np.zeros(6)
        for c in self.cuts:
            RP, rP, wP, vOP = self._body_state(c.P)
            RC, rC, wC, vOC = self._body_state(c.C)
            Rp_, pp, Rc_, pc = _joint_frames(c.joint, RP, rP, RC, rC)
            nb.path_terms(
                c.idx,
                c.sgn,
                A["vo"],
                A["nv"],
                O["Wc"],
                O["Lc"],
                O["oc"],
                O["bias"],
                pc,
                np.ascontiguousarray(Rc_.T),
                with_v,
                Jrel,
                bsp,
            )
            R, d, Vrel, D = np.empty((3, 3)), np.empty(3), np.empty(6), np.empty((c.m, 6))
            rows = c.rows
            nb.cut_rows(
                c.E,
                c.F,
                c.G,
                Rp_,
                pp,
                Rc_,
                pc,
                Jrel,
                bsp,
                with_v,
                wP,
                vOP,
                wC,
                vOC,
                phi[rows],
                J[rows],
                gamma[rows],
                R,
                d,
                Vrel,
                D,
                w3[nb.W3_ROWS : nb.W3_END],
                w33[nb.W33_RTF],
                w6[nb.W6_B],
            )
            rel.append((R, d, Vrel if with_v else None, D, Rc_, pc))
        return self._store(key, q, v, t, phi, J, gamma, rel)

    def _eval_py(self, q, v, t):
        """Reference (plain Python) evaluation; the compiled pass must agree with it."""
        key, hit = self._cached(q, v, t)
        if hit is not None:
            return hit
        q = np.asarray(q, dtype=float)
        if v is not None:
            v = np.asarray(v, dtype=float)
        body, joint = self._kinematics(q, v)
        m, nv = self.m, self._nv
        phi = np.zeros(m)
        J = np.zeros((m, nv))
        gamma = np.zeros(m)
        rel = []
        for c in self.cuts:
            RP, rP, wP, vOP = body[id(c.P)]
            RC, rC, wC, vOC = body[id(c.C)]
            Rp_, pp, Rc_, pc = _joint_frames(c.joint, RP, rP, RC, rC)
            # J_rel (c axes at p_c) and the spatial bias of A_C - A_P (world origin)
            Jrel = np.zeros((6, nv))
            bsp = np.zeros(6)
            RcT = Rc_.T
            for (j, _rev, _outb), sign in c.path:
                if not j.nv:
                    continue
                vs, Wc, Lc, ocj, bias = joint[id(j)]
                Va = Lc - _skew(pc - ocj) @ Wc  # w x (p_c - o) per column
                Jrel[:3, vs] += sign * (RcT @ Wc)
                Jrel[3:, vs] += sign * (RcT @ Va)
                if bias is not None:
                    bsp += sign * bias
            vel = None if v is None else (wP, vOP, wC, vOC)
            self._cut_rows(c, Rp_, pp, Rc_, pc, Jrel, bsp, vel, phi, J, gamma, rel)
        return self._store(key, q, v, t, phi, J, gamma, rel)

    @staticmethod
    def _cut_rows(c, Rp_, pp, Rc_, pc, Jrel, bsp, twists, phi, J, gamma, rel):
        """Rows of one cut joint from the frame poses, J_rel and the bias (see module doc)."""
        R = Rp_.T @ Rc_
        d = Rp_.T @ (pc - pp)
        s = R.T @ d
        nt = len(c.E)
        D = np.zeros((c.m, 6))
        RtF = c.F @ R  # rows R^T f
        if nt:
            phi[c.rows.start : c.rows.start + nt] = c.E @ s
            D[:nt, :3] = _crossn(c.E, s)
            D[:nt, 3:] = c.E
        nr = len(c.F)
        if nr:
            phi[c.rows.start + nt : c.rows.start + nt + nr] = np.einsum("ij,ij->i", RtF, c.G)
            D[nt : nt + nr, :3] = _crossn(c.G, RtF)
        if c.screw:
            # a . s - h theta, theta on the branch of the advance a . s / h
            a, h = c.axis, c.h
            Ru1 = R @ c.u1
            th = np.arctan2(c.u2 @ Ru1, c.u1 @ Ru1)
            if h != 0.0:
                th += 2 * np.pi * np.round((a @ s / h - th) / (2 * np.pi))
            phi[c.rows.stop - 1] = a @ s - h * th
            D[-1, :3] = _cross(a, s) - h * a
            D[-1, 3:] = a
        J[c.rows] = D @ Jrel
        Vrel = None
        if twists is not None:
            wP, vOP, wC, vOC = twists
            RcT = Rc_.T
            # world relative twist at p_c: w_w, u_w = v_C(p_c) - v_P(p_c)
            w_w = wC - wP
            u_w = vOC + _cross(wC, pc) - vOP - _cross(wP, pc)
            Vrel = np.concatenate([RcT @ w_w, RcT @ u_w])
            w, u = Vrel[:3], Vrel[3:]
            dalpha = bsp[:3]
            da = (
                bsp[3:]
                + _cross(dalpha, pc)
                + _cross(wC, vOC + _cross(wC, pc))
                - _cross(wP, vOP + _cross(wP, pc))
            )
            dw = dalpha - _cross(wC, w_w)
            du = da - _cross(wP, u_w) - _cross(wC, u_w)
            bias = np.concatenate([RcT @ dw, RcT @ du])
            gc = -(D @ bias)
            sdot = u + _cross(s, w)
            if nt:
                gc[:nt] -= c.E @ _cross(sdot, w)
            if nr:
                gc[nt : nt + nr] -= np.einsum("ij,ij->i", RtF, _crossn(w, _crossn(w, c.G)))
            if c.screw:
                gc[-1] -= c.axis @ _cross(sdot, w)
            gamma[c.rows] = gc
        rel.append((R, d, Vrel, D, Rc_, pc))

    def _driver_rows(self, q, v, t, phi, J, gamma):
        r0 = self.n_cut_rows
        for i, drv in enumerate(self.drivers):
            if isinstance(drv, GearCoupling):
                # q_b - q_b0 - ratio (q_a - q_a0): both coordinates with dq/dt = v
                (ja, ca), (jb, cb) = (drv.joint_a, drv.coordinate_a), (drv.joint, drv.coordinate)
                qa, qb = q[self._qsl[ja.name]][ca], q[self._qsl[jb.name]][cb]
                phi[r0 + i] = drv.residual(qa, qb)
                J[r0 + i, self._vsl[jb.name].start + cb] += 1.0
                J[r0 + i, self._vsl[ja.name].start + ca] -= drv.ratio
                gamma[r0 + i] = 0.0
                continue
            j = drv.joint
            qs, vs = self._qsl[j.name], self._vsl[j.name]
            ci = drv.coordinate
            qj = q[qs]
            phi[r0 + i] = qj[ci] - float(drv.position(t))
            row = np.zeros(j.nv)
            g = float(drv.acceleration(t))
            if joint_type(j).code == PLANAR and ci < 2:
                cth, sth = np.cos(qj[2]), np.sin(qj[2])
                row[1:] = (cth, -sth) if ci == 0 else (sth, cth)
                if v is not None:
                    vj = np.asarray(v)[vs]
                    drow = np.array([0.0, -sth, -cth]) if ci == 0 else np.array([0.0, cth, -sth])
                    g -= vj[0] * (drow @ vj)
            elif joint_type(j).code == PLANAR:
                row[0] = 1.0
            else:
                row[ci] = 1.0
            J[r0 + i, vs] = row
            gamma[r0 + i] = g


def _cross(a, b):
    """Cross product of two 3-vectors (numpy's np.cross has a large fixed overhead)."""
    return np.array(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    )


def _skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def _crossn(a, b):
    """Row-wise cross products; ``a`` and/or ``b`` (k, 3) or (3,)."""
    a = np.asarray(a)
    b = np.asarray(b)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _slices(table):
    out = {}
    for i, (owner, _) in enumerate(table):
        s = out.get(owner)
        out[owner] = slice(i, i + 1) if s is None else slice(s.start, i + 1)
    return out


class CutWrenches(ForceElement):
    """Internal force element carrying cut-joint wrenches to the tree solver.

    ``current`` is a list of ``(body, point, n, f)``: a force ``f`` and a moment
    ``n`` (world axes) acting at the world ``point`` on ``body``; ``wrenches``
    moves them to the body-frame origin (the force-element convention).
    """

    def __init__(self):
        super().__init__(name="<cut-joint wrenches>")
        self.current = []

    def wrenches(self, t, state):
        out = []
        for body, point, n, f in self.current:
            _, r = state.pose(body)
            out.append((body, np.concatenate([n + np.cross(point - r, f), f])))
        return out


def joint_force_on_cut(
    cut: Any, jf: Any, t: float, R: ArrayLike, d: ArrayLike, Vrel: ArrayLike
) -> Array:
    """Wrench (child axes at child origin) of a JointForce acting on a cut joint."""
    j = cut.joint
    qj = cut_coordinates(j, R, d)
    H = j.motion_subspace(qj)
    vj = speeds_from_twist(H, Vrel)
    return wrench_from_force(H, jf.generalized_force(t, qj, vj))


def needs_loops(model: Any) -> bool:
    """True when ``model`` has cut joints or joint drivers: the recursive formulation then
    compiles to a :class:`flexmbd.recursive.LoopSystem` (tree plus cut-joint constraints)."""
    return bool(model.topology().cut_joints) or bool(model.component_objects(JointDriver))
