"""The System contract shared by every formulation: coordinate layout and dynamics result.

Every compiled system (:class:`~flexmbd.recursive.RecursiveSystem`, the closed-loop
:class:`~flexmbd.constraints.loops.LoopSystem` and
:class:`~flexmbd.absolute.AbsoluteSystem`) offers

* ``system.layout`` -- a :class:`CoordinateLayout`: where each joint's, each body's
  rigid and each flexible body's modal coordinates live in ``q`` / ``qd``;
* ``system.forward_dynamics(q, qd, tau=None, t=0.0)`` -- one state, a
  :class:`ForwardDynamics`;
* ``system.forward_dynamics_batch(Q, QD, TAU=None, t=0.0)`` -- many states, a
  :class:`ForwardDynamics` whose arrays have a leading state axis.

Conventions (docs/design/conventions.rst): a joint reaction is the wrench ``[n; f]``
(N m; N) the joint's declared parent exerts on its declared child through the joint, at
the child joint-frame origin, in child joint-frame axes. A body acceleration is
``[alpha; a]`` in world axes (rad/s^2; m/s^2): angular acceleration and acceleration of
the body-frame origin (a flexible body: of its floating reference frame).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ._typing import Array
from .errors import ModelError

__all__ = [
    "ModalSlice",
    "JointSlice",
    "BodySlice",
    "CoordinateLayout",
    "ForwardDynamics",
    "forward_dynamics_result",
    "forward_dynamics_states",
]

_EMPTY = MappingProxyType({})


@dataclass(frozen=True)
class ModalSlice:
    """Where one flexible body's modal coordinates live: ``q[sl.q]``, ``qd[sl.v]``.

    Unpacks as ``sq, sv = sl`` (coordinates slice, speeds slice).
    """

    body: str
    q: slice
    v: slice

    @property
    def n(self) -> int:
        """Number of modal coordinates."""
        return self.q.stop - self.q.start

    def __iter__(self) -> Iterator[slice]:
        return iter((self.q, self.v))


@dataclass(frozen=True)
class JointSlice:
    """Where one joint's own coordinates live in ``q`` (``.q``) and ``qd`` (``.v``)."""

    joint: str
    q: slice
    v: slice

    def __iter__(self) -> Iterator[slice]:
        return iter((self.q, self.v))


@dataclass(frozen=True)
class BodySlice:
    """Where one body's rigid reference coordinates live (absolute formulation: 3
    position + 4 Euler parameters in ``q``; their rates in ``qd``)."""

    body: str
    q: slice
    v: slice

    def __iter__(self) -> Iterator[slice]:
        return iter((self.q, self.v))


def _frozen(d: Mapping | None) -> Mapping:
    return MappingProxyType(dict(d)) if d else _EMPTY


@dataclass(frozen=True)
class CoordinateLayout:
    """The coordinates of a compiled system, by name (read by results, viz, checkpoints).

    Attributes
    ----------
    formulation : str
        ``"recursive"`` or ``"absolute"``.
    nq, nv : int
        Sizes of ``q`` and ``qd``.
    coordinates, speeds : tuple of (owner, label)
        Label of every entry of ``q`` / ``qd``.
    joint_names : tuple of str
        Joints in declaration order (rows of ``reactions``).
    body_names : tuple of str
        Bodies in declaration order, ground excluded (rows of ``body_accelerations``).
    joints : Mapping[str, JointSlice]
        Joints whose own coordinates are state coordinates (the recursive spanning-tree
        joints); empty in the absolute formulation.
    bodies : Mapping[str, BodySlice]
        Bodies whose rigid pose is a block of state coordinates (absolute formulation);
        empty in the recursive one.
    modal : Mapping[str, ModalSlice]
        Flexible bodies' modal coordinates (declaration order), in both formulations.
    """

    formulation: str
    nq: int
    nv: int
    coordinates: tuple
    speeds: tuple
    joint_names: tuple
    body_names: tuple
    joints: Mapping[str, JointSlice] = field(default_factory=lambda: _EMPTY)
    bodies: Mapping[str, BodySlice] = field(default_factory=lambda: _EMPTY)
    modal: Mapping[str, ModalSlice] = field(default_factory=lambda: _EMPTY)

    @classmethod
    def build(
        cls,
        formulation: str,
        nq: int,
        nv: int,
        coordinates,
        speeds,
        joint_names,
        body_names,
        joints=None,
        bodies=None,
        modal=None,
    ) -> CoordinateLayout:
        """A layout from plain lists/dicts (copied into immutable containers)."""
        return cls(
            formulation,
            int(nq),
            int(nv),
            tuple(map(tuple, coordinates)),
            tuple(map(tuple, speeds)),
            tuple(joint_names),
            tuple(body_names),
            _frozen(joints),
            _frozen(bodies),
            _frozen(modal),
        )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_jrow", {n: i for i, n in enumerate(self.joint_names)})
        object.__setattr__(self, "_brow", {n: i for i, n in enumerate(self.body_names)})

    def joint_row(self, name: Any) -> int:
        """Row of joint ``name`` (or a joint object) in ``reactions``."""
        name = getattr(name, "name", name)
        try:
            return self._jrow[name]
        except KeyError:
            raise ModelError(f"no joint {name!r}; joints: {list(self.joint_names)}") from None

    def body_row(self, name: Any) -> int:
        """Row of body ``name`` (or a body object) in ``body_accelerations``."""
        name = getattr(name, "name", name)
        try:
            return self._brow[name]
        except KeyError:
            raise ModelError(f"no body {name!r}; bodies: {list(self.body_names)}") from None

    def modal_slice(self, name: Any) -> ModalSlice:
        """The :class:`ModalSlice` of flexible body ``name``."""
        name = getattr(name, "name", name)
        try:
            return self.modal[name]
        except KeyError:
            raise ModelError(
                f"body {name!r} is not a flexible body of this system; flexible "
                f"bodies: {list(self.modal)}"
            ) from None

    def modal_coordinates(self, x: Any, name: Any) -> Array:
        """Modal coordinates (``x`` of length nq) or speeds/accelerations (length nv) of
        flexible body ``name``; also (nt, n) histories."""
        x = np.asarray(x)
        sl = self.modal_slice(name)
        return x[..., sl.q] if x.shape[-1] == self.nq else x[..., sl.v]


@dataclass(frozen=True, eq=False)
class ForwardDynamics:
    """Result of ``forward_dynamics`` in every formulation (one state, or a batch from
    ``forward_dynamics_batch``: then every array has a leading state axis).

    Attributes
    ----------
    qdd : ndarray (nv,)
        Accelerations along the system's speeds (``layout.speeds``; absolute
        formulation: second derivatives of its coordinates).
    reactions : ndarray (n_joints, 6)
        Reaction wrench ``[n; f]`` of every joint, rows in ``layout.joint_names`` order:
        parent on child, at the child joint-frame origin, child joint-frame axes.
    body_accelerations : ndarray (n_bodies, 6)
        ``[alpha; a_origin]`` of every body, world axes, rows in ``layout.body_names``.
    layout : CoordinateLayout
        The system's coordinate layout (names and slices).
    lam : ndarray (m,)
        Constraint multipliers (absolute: every constraint row; closed loops: cut-joint
        rows then drivers, order of ``system.constraint_names``; a tree: empty).
    projection : ProjectionInfo or None
        Closed loops: rank, regular rank, weak directions and discarded rows of the
        constraint Jacobian at this state (a result of the compiled loop builds it on
        first access, from the values this call recorded).
    tree : ForwardDynamics or None
        Closed loops: the spanning tree's result with the cut-joint wrenches applied
        (its ``qdd`` and ``body_accelerations`` are this result's arrays; from the
        compiled loop, built on first access, its ``reactions`` a read-only view of
        the tree joints' rows of :attr:`reactions` where those rows are contiguous).
    """

    qdd: Array
    reactions: Array
    body_accelerations: Array
    layout: CoordinateLayout
    lam: Array = field(default_factory=lambda: np.zeros(0))
    projection: Any = None
    tree: ForwardDynamics | None = None

    # -- named access ------------------------------------------------------------------
    @property
    def joint_names(self) -> tuple:
        """Joint names (rows of :attr:`reactions`)."""
        return self.layout.joint_names

    def reaction(self, name: Any) -> Array:
        """Reaction wrench ``[n; f]`` (6,) (batch: (n, 6)) of joint ``name``."""
        return self.reactions[..., self.layout.joint_row(name), :]

    @property
    def reactions_by_name(self) -> dict[str, Array]:
        """``{joint name: [n; f]}`` of every joint."""
        return {n: self.reactions[..., i, :] for i, n in enumerate(self.layout.joint_names)}

    def body_acceleration(self, name: Any) -> tuple[Array, Array]:
        """``(alpha_world, a_origin_world)`` (3,) each (batch: (n, 3)) of body ``name``."""
        a = self.body_accelerations[..., self.layout.body_row(name), :]
        return a[..., :3].copy(), a[..., 3:].copy()

    @property
    def modal_accelerations(self) -> dict[str, Array]:
        """``{flexible body: modal accelerations}`` (slices of :attr:`qdd`)."""
        return {n: self.qdd[..., s.v] for n, s in self.layout.modal.items()}

    def modal_acceleration(self, name: Any) -> Array:
        """Modal accelerations of flexible body ``name``."""
        return self.qdd[..., self.layout.modal_slice(name).v]

    # -- closed loops --------------------------------------------------------------------
    @property
    def rank(self) -> int | None:
        """Rank of the constraint Jacobian (closed loops; else None)."""
        return None if self.projection is None else self.projection.rank

    @property
    def regular_rank(self) -> int | None:
        """Rank away from singular configurations (closed loops; else None)."""
        return None if self.projection is None else self.projection.regular_rank

    @property
    def n_weak(self) -> int | None:
        """Number of weak (tangent-projected) directions (closed loops; else None)."""
        return None if self.projection is None else self.projection.n_weak

    @property
    def discarded(self) -> Array | None:
        """Mask (m,) of the constraint rows dropped as dependent (closed loops; else None)."""
        return None if self.projection is None else self.projection.discarded


_new = object.__new__

#: the ``__dict__`` key of a result's deferred parts: a :class:`ForwardDynamics` built
#: with ``(build, *args)`` there instead of ``projection`` and ``tree`` gets both from
#: ``build(*args)`` on the first access of either; ``args`` must hold the values of the
#: call that made the result (nothing a later call changes), so that the deferred fields
#: are those of this call
DEFERRED = "_deferred"


class _OnAccess:
    """A non-data descriptor for :attr:`ForwardDynamics.projection` and ``.tree``: an
    instance's own value where it has one; else, where the result holds deferred parts
    (``DEFERRED``), both built once and kept in the instance; else None (the field's
    default, also the value on the class)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return None
        d = obj.__dict__
        parts = d.get(DEFERRED)
        if parts is not None:
            d["projection"], d["tree"] = parts[0](*parts[1:])
            d.pop(DEFERRED, None)
        return d.get(self.name)


# after @dataclass: the generated __init__ keeps the default None of both fields
ForwardDynamics.projection = _OnAccess("projection")  # type: ignore[assignment]
ForwardDynamics.tree = _OnAccess("tree")  # type: ignore[assignment]


def forward_dynamics_result(
    qdd: Array,
    reactions: Array,
    body_accelerations: Array,
    layout: CoordinateLayout,
    lam: Array,
    projection: Any = None,
    tree: ForwardDynamics | None = None,
) -> ForwardDynamics:
    """A :class:`ForwardDynamics` built without the dataclass ``__init__`` (same fields,
    same frozen instance): for the single-state hot paths, where the generated frozen
    ``__init__`` costs a tenth of a 20-body call."""
    out = _new(ForwardDynamics)
    d = out.__dict__
    d["qdd"] = qdd
    d["reactions"] = reactions
    d["body_accelerations"] = body_accelerations
    d["layout"] = layout
    d["lam"] = lam
    if projection is not None or tree is not None:
        d["projection"] = projection
        d["tree"] = tree
    return out


def forward_dynamics_states(
    one: Any,
    Q: Any,
    QD: Any,
    TAU: Any,
    t: Any,
    n_tau: int,
    sizes: tuple[int, int, int, int],
    layout: CoordinateLayout,
    lists: bool = False,
) -> ForwardDynamics:
    """The batch of a formulation's ``forward_dynamics_batch``: ``one(q, qd, tau, t)`` (a
    :class:`ForwardDynamics` of one state) at every row of ``Q`` (n, nq), ``QD`` (n, nv),
    ``TAU`` (n, n_tau) / (n_tau,) / None (N, N m), ``t`` (s) scalar or (n,).

    ``sizes``: ``(nv, n_joints, n_bodies, m)`` of the stacked arrays; ``lists``: keep
    every state's ``projection`` and ``tree`` (closed loops)."""
    Q = np.atleast_2d(np.asarray(Q, dtype=float))
    QD = np.atleast_2d(np.asarray(QD, dtype=float))
    n = Q.shape[0]
    if QD.shape[0] != n:
        raise ModelError(f"batch sizes of Q ({n}) and QD ({QD.shape[0]}) differ")
    ts = np.broadcast_to(np.asarray(t, dtype=float), (n,))
    taus = [None] * n if TAU is None else np.broadcast_to(np.asarray(TAU, dtype=float), (n, n_tau))
    out = [one(Q[i], QD[i], taus[i], float(ts[i])) for i in range(n)]
    nv, nj, nb, m = sizes
    return ForwardDynamics(
        np.array([f.qdd for f in out]).reshape(n, nv),
        np.array([f.reactions for f in out]).reshape(n, nj, 6),
        np.array([f.body_accelerations for f in out]).reshape(n, nb, 6),
        layout,
        np.array([f.lam for f in out]).reshape(n, m),
        projection=[f.projection for f in out] if lists else None,
        tree=[f.tree for f in out] if lists else None,
    )
