"""Flexible bodies: a reduced finite-element body as a model component.

A :class:`FlexibleBody` wraps a :class:`flexmbd.fem.ReducedBody` (modes, modal
invariants, interface mode shapes, stress modes, unit geometric stiffness). Its
configuration is the body frame (floating frame of reference, the convention of
the reduction: mean axes for free-free bases, the reference interface for
Craig-Bampton) plus ``n_modes`` modal coordinates.

Joints and force elements attach to

* ``body.interface(name)``: an :class:`InterfaceFrame` that moves and rotates with
  the deformation through the interface mode shapes (``modes``, 6 x n,
  ``[rotation; translation]`` per unit modal coordinate, body axes);
* ``body.node(i)`` / ``body.point(xyz)``: a :class:`NodeFrame` at a mesh node that
  translates with the node's displacement and rotates with the body frame (solid
  elements have no nodal rotations);
* a plain :class:`Frame`: fixed to the undeformed body frame.

``FlexibleBody.from_mesh`` is lazy: the mesh is reduced on first use and kept
(``cache="body.npz"`` also keeps it on disk and reuses it when the inputs match).

Deforming frames: an interface frame's motion per unit modal coordinate
(:meth:`FlexibleBody.interface_modes`) is the one the reduction stored: the
least-squares rigid fit of the mode shapes at its nodes (exact for rigid interfaces),
rotations with ``u = t + theta x r``; it rotates by the exponential map
of ``modes[:3] @ q`` (:mod:`flexmbd.flexible.rotation`). A node frame translates with
its node and keeps the body-frame axes.

Formulations: the absolute one (:mod:`flexmbd.absolute.flexible`) handles flexible
bodies, joints at their frames and :class:`~flexmbd.PointForce` loads at them; results
keep ``res.body(NAME).modal`` and ``res.body(NAME).interfaces[ITF]`` (world pose of every
interface frame, ``(nt, 7)``). Nodal fields on demand: :meth:`FlexibleBody.displacements`
and :meth:`FlexibleBody.stresses` of ``res.body(name).modal``; world paths of frames:
``body.point(xyz).trajectory(res)``.

Choice of frame
---------------
The modal coordinates are linear in the floating frame, so the frame is part of the
model. Without geometric stiffening a linear floating-frame model depends on the frame
as soon as axial forces matter: in Simeon's slider-crank (``examples/
flexible_slider_crank.py``, rod at 150 rad/s) the mean-axis and chord-frame models
agree with each other, while the frame clamped at the pinned end (a Craig-Bampton
``frame="interface"`` basis) deflects 20 % more, because the joint force at the far
end then acts on a chord that rotates with the deformation (a spurious string
stiffness ``F / L``). Geometric stiffening removes most of the difference and brings the
meshed rod to a nonlinear reference within ~1 % (absolute formulation, 0.01 s: mean-axis
Craig-Bampton 1.1 %, normal modes 0.7 %, static-correction modes and Ritz vectors 0.8 %;
the recursive formulation, whose stiffening loads include the cut joint's wrench
(:mod:`flexmbd.recursive.loops`), 1.2 %, 0.7 % and 0.8 %).

The stiffening stress is weighted by load parameters taken from *mean-axis*
(Tisserand) kinematics of the body's current state, not from the frame's own motion
(:mod:`flexmbd.flexible.mean_axis`): the mean angular velocity ``w + Gamma_w qd``
(``Gamma`` the mass-weighted rigid fit of the modes) and the accelerations that give
the unit inertia loads the resultant of the body's actual inertia forces. A frame
clamped at a pinned interface turns with the elastic vibration; these parameters do
not, and the stiffening load set is in equilibrium with the joint forces in every
frame. So any basis can be stiffened (``NormalModes``, ``StaticCorrection``,
``RitzVectors``, ``CraigBampton`` in either frame); for a mean-axis basis the
parameters equal the frame's motion up to terms of the order of the deformation.

A frame clamped at a *pinned* interface still carries the vibration in its own motion:
the chord's rotation relative to it is part of the (linear) modal coordinates. The
slider-crank rod stiffened in such a frame (it blew up at 7.7 ms while the stiffening
loads followed the frame) now runs through, but it needs a smaller step and stays
further from the reference: 8 % at dt = 2.5e-5 s, 2.0 % at 1.25e-5 s, 1.9 % at
6.25e-6 s (mean axes: 1.1 % at every one of these steps); the recursive formulation
(current, not lagged, interface wrenches; RK4 at 6.25e-6 s) gives 2.0 %. So the gap is
neither the time step nor the lagged wrenches, and it is not the truncation of the
basis: with 16 instead of 10 modes the clamped frame moves *away* (3.1 %: the rod-slider
axial vibration, ~2.9 kHz, then grows in the joint force at A; damped, the frames differ
as with 10 modes; docs/guide/stiffening.rst) while mean axes improve (0.82 %).
Unstiffened, the two frames differ by 25 % of the peak (38 % and 13 % off): stiffening
removes all but ~1 % of the frame dependence. Statically the two frames agree to 0.36 %
(end tension) and 0.07 % (axial body load). The dynamic difference (1.36 % of the peak)
has two parts of about equal size: the rod-slider axial vibration, which the unit stress
states carry as a load at B while the rod's axial inertia is distributed along it (with
that vibration damped in both frames the difference is 0.62 %, and 0.014 % with Young's
modulus x 16), and the linearized rotation of the clamped basis's rigid part ``Gamma q``
(~0.017 rad at the rod's deflection): the stiffening terms supply its second-order work
exactly (derivation in docs/guide/stiffening.rst) but its kinematics are wrong at third
order (the chord A-B is longer by ``v_B^2 / 2L``), which no choice of loads removes and a
mean-axis basis, without rigid part, does not have.
Prefer mean axes (or a frame where the body is driven or built in, like a hub) for
fast, strongly vibrating bodies; ``pprint()`` says so for a stiffened body clamped at
an interface that a joint lets rotate. The default ``CraigBampton(frame="auto")`` makes
this choice: :meth:`FlexibleBody.from_mesh` reduces inside the model and resolves it from
the joints at the reference interface (:func:`auto_frame`: mean axes for a stiffened body
whose reference interface a joint leaves free to rotate, the interface frame when a joint
builds it in or without stiffening); ``pprint()`` states the choice and its reason.

An explicit ``CraigBampton(..., frame="interface")`` on a stiffened ``from_mesh`` body whose
reference interface a joint lets rotate is integrated with *exact* kinematics of the
basis's rigid part (:func:`pinned_interface_map`): with ``[theta; t] = Gamma q`` and
``Phi_e = Phi - R Gamma``, the positions ``x = r + A (t + R(theta) (x0 + Phi_e q))`` (of
which the linear clamped model is the first-order truncation) are those of the mean-axis
body with modes ``Phi_e`` whose frame is the clamped frame moved by ``Gamma q``. The body
is reduced with the same columns on mean axes and integrated in that frame; the interface
frame asked for is its deformed reference interface (``res.body(name).interfaces[ref]``,
:attr:`FlexibleBody.clamped_interface`), ``position`` / ``orientation`` are the mean-axis
frame's, ``q`` keeps its meaning to first order (stresses exactly). The slider-crank rod
in that frame: 1.15 % from the reference (2.02 % with the linearized rigid part);
docs/guide/stiffening.rst.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import FlexmbdError, ModelError
from ..flexible import ModalInvariants
from ..joint_types import joint_type
from ..spatial import quat_from_rotvec_batch, quat_to_rot_batch, rotvec_to_rot
from .bodies import Body, Frame, _as_rotation
from .component import Component, as_floats, is_real

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from .._typing import Array, ArrayLike, Pose, StrPath
    from ..fem.material import Material
    from ..fem.reduced import ReducedBody
    from ..flexible.ffr import ModalInvariants
    from ..results import Results
    from . import Model

__all__ = [
    "FlexibleBody",
    "InterfaceFrame",
    "NodeFrame",
    "stiffening_hint",
    "auto_frame",
    "pinned_interface_map",
    "reference_joints",
    "leaves_rotation_free",
]


class FlexibleBody(Body):
    """A flexible body in the floating frame of reference.

    Parameters
    ----------
    reduced : ReducedBody or path to its ``.npz``
        The reduced body (``flexmbd.fem.reduce``).
    q0, qd0 : array_like, optional
        Initial modal coordinates and rates (default zero).
    geometric_stiffening : bool
        Add the load-weighted unit geometric stiffness (dynamic stiffening) when
        the reduced body has it (default True).
    """

    #: ``"modal_matrices"``: a :meth:`set_modal_matrices` call
    parameter_attributes = ("modal_matrices",)

    def __init__(
        self,
        reduced: ReducedBody | StrPath | None = None,
        *,
        q0: ArrayLike | None = None,
        qd0: ArrayLike | None = None,
        geometric_stiffening: bool = True,
        name: str | None = None,
        doc: str | None = None,
        _lazy: Any = None,
    ) -> None:
        super().__init__(name=name, doc=doc)
        object.__setattr__(self, "_reduced", None)
        object.__setattr__(self, "_lazy", _lazy)
        object.__setattr__(self, "_inv", None)
        if reduced is not None:
            self._set_reduced(reduced)
        elif _lazy is None:
            raise ModelError(
                "FlexibleBody: give a ReducedBody (or its .npz path), or use "
                "FlexibleBody.from_mesh(mesh, material, modes=...)"
            )
        self.geometric_stiffening = bool(geometric_stiffening)
        self._q0_spec, self._qd0_spec = q0, qd0

    # -- construction -----------------------------------------------------------------
    @classmethod
    def from_reduced(cls, reduced: ReducedBody | StrPath, **kw: Any) -> FlexibleBody:
        """From a :class:`ReducedBody` or the path of its ``.npz`` file."""
        return cls(reduced, **kw)

    @classmethod
    def from_mesh(
        cls,
        mesh: Any,
        material: Material | None,
        modes: Any,
        *,
        cache: StrPath | None = None,
        reduce_options: dict[str, Any] | None = None,
        **kw: Any,
    ) -> FlexibleBody:
        """Reduce ``mesh`` with ``material`` and the mode strategy ``modes`` on first use.

        ``reduce_options`` are passed to :func:`flexmbd.fem.reduce` (``interfaces``,
        ``rayleigh``, ``zeta``, ...). With ``cache`` (a ``.npz`` path) the reduced body
        is stored and reused while mesh file, material and strategy are unchanged.

        A Craig-Bampton ``frame="auto"`` (its default) is resolved when the body is
        reduced, from its joints at that moment (:func:`auto_frame`): mean axes for a
        stiffened body whose reference interface a joint lets rotate, the interface
        frame when a joint builds it in or without stiffening. ``pprint()`` states the
        choice and the reason.
        """
        if material is None:
            raise ModelError(
                "FlexibleBody.from_mesh: give a material, e.g. "
                "fm.Material(E=2.1e11, nu=0.3, rho=7850)"
            )
        return cls(None, _lazy=(mesh, material, modes, cache, dict(reduce_options or {})), **kw)

    def _set_reduced(self, reduced):
        self.__dict__.pop("_hmax", None)
        if isinstance(reduced, (str, Path)):
            from ..fem import ReducedBody

            reduced = ReducedBody.load(reduced)
        for attr in ("modes", "St", "Sij", "Pij", "K_ff"):
            if not hasattr(reduced, attr):
                raise ModelError(
                    f"FlexibleBody {self.local_name!r}: {type(reduced).__name__} is "
                    f"not a ReducedBody (no {attr!r})"
                )
        object.__setattr__(self, "_reduced", reduced)
        object.__setattr__(self, "_inv", None)

    @property
    def is_reduced(self) -> bool:
        """True when the reduction is available (given, loaded or already computed);
        reading it never starts a lazy reduction."""
        return self._reduced is not None

    @property
    def reduced(self) -> ReducedBody:
        """The :class:`ReducedBody` (reduced now if built lazily)."""
        if self._reduced is None:
            self._set_reduced(self._reduce())
        return self._reduced

    def _reduce(self):
        from ..fem import ReducedBody, reduce

        mesh, material, strategy, cache, opts = self._lazy
        strategy = self._resolved_strategy()
        key = _cache_key(mesh, material, strategy, opts)
        if cache is not None and Path(cache).exists():
            rb = ReducedBody.load(cache)
            if key in rb.notes:
                return rb
        rb = reduce(mesh, material, strategy, name=self._name, **opts)
        if cache is not None:
            rb = rb.replace(notes=(*rb.notes, key))
            rb.save(cache)
        return rb

    def _resolved_strategy(self):
        """The lazy strategy with a Craig-Bampton ``frame="auto"`` made explicit from the
        body's attachments now (:func:`auto_frame`)."""
        strategy, opts = self._lazy[2], self._lazy[4]
        frame = getattr(strategy, "frame", None)
        stiffened = self.geometric_stiffening and bool(opts.get("geometric", True))
        if frame == "auto":
            frame, reason = auto_frame(self, strategy.reference_name, stiffened)
            return strategy.with_frame(frame, reason)
        if frame == "interface" and stiffened:
            reason = pinned_interface_map(self, strategy.reference_name)
            if reason:
                return strategy.with_frame("mean-axis", reason)
        return strategy

    # -- data for the formulations ----------------------------------------------------
    @property
    def n_modes(self) -> int:
        return self.reduced.n_modes

    @property
    def mass(self) -> float:
        """Total mass (kg)."""
        return float(self.reduced.mass)

    @property
    def q0(self) -> Array:
        """Initial modal coordinates."""
        return self._modal(self._q0_spec, "q0")

    @property
    def qd0(self) -> Array:
        """Initial modal rates."""
        return self._modal(self._qd0_spec, "qd0")

    def _modal(self, spec, what):
        n = self.n_modes
        if spec is None:
            return np.zeros(n)

        v = np.atleast_1d(as_floats(spec))
        if v.shape != (n,) or not np.all(np.isfinite(v)):
            raise ModelError(
                f"FlexibleBody {self.local_name!r}: {what} must have {n} modal "
                f"values (finite), got {spec!r}"
            )
        return v

    @property
    def clamped_interface(self) -> str | None:
        """The interface whose frame the user chose as body frame when the body is
        integrated in mean axes instead (:func:`pinned_interface_map`: a stiffened
        ``CraigBampton(..., frame="interface")`` pinned at its reference interface), else
        None. Its world pose over a run is ``res.body(name).interfaces[NAME]``; the body's
        ``position`` / ``orientation`` are then the mean-axis frame's (reduces a lazy
        body)."""
        rb = self.reduced
        if any(n.startswith(_MAP_NOTE) for n in rb.notes):
            return str(rb.reference)
        return None

    def interface_modes(self, name: str) -> Array:
        """Frame motion ``[rotation; translation]`` (6, n) of interface ``name`` per unit mode.

        The reduction's own (``ReducedBody.interface(name)``): the least-squares rigid
        fit of the mode shapes at the interface nodes, ``u_a = t + theta x (x_a -
        origin)`` (exact for rigid interfaces), the one convention of
        :mod:`flexmbd.fem.reduced`.
        """
        return np.asarray(self.reduced.interface(name)[3], float)

    def invariants(self) -> ModalInvariants:
        """:class:`flexmbd.flexible.ModalInvariants` of the body (cached)."""
        if self._inv is None:
            rb = self.reduced
            # contract: ReducedBody's invariant fields under ModalInvariants' names
            inv = ModalInvariants(
                mass=float(rb.mass),
                c=np.asarray(rb.first_moment, float),
                E0=np.asarray(rb.second_moment, float),
                St=np.asarray(rb.St, float),
                S=np.asarray(rb.Sij, float),
                P=np.asarray(rb.Pij, float),
                K=np.asarray(rb.K_ff, float),
                D=np.asarray(rb.D_ff, float),
            )
            inv.validate(f"FlexibleBody {self.local_name!r}")
            object.__setattr__(self, "_inv", inv)
        return self._inv

    def set_modal_matrices(self, K: ArrayLike | None = None, D: ArrayLike | None = None) -> None:
        """Replace the modal stiffness ``K`` and damping ``D`` (n_modes x n_modes, in the
        units of the modal coordinates: N/m and N s/m per unit modal amplitude) of
        :meth:`invariants`; None keeps one. Compiled systems update them in place (the
        change ``"modal_matrices"`` of :attr:`parameter_attributes`)."""
        import dataclasses

        inv = self.invariants()
        new = dataclasses.replace(
            inv,
            K=inv.K if K is None else np.asarray(K, float),
            D=inv.D if D is None else np.asarray(D, float),
        )
        new.validate(f"FlexibleBody {self.local_name!r}")
        object.__setattr__(self, "_inv", new)
        root = self.model()
        if root is not None:
            root.mark_changed(self, "modal_matrices")

    def displacements(self, modal: ArrayLike) -> Array:
        """Nodal displacements (..., n_nodes, 3) in body axes for modal coordinates (..., n)
        (e.g. ``res.body(name).modal``): reconstruction through the reduced body's modes."""
        modal = np.asarray(modal, float)
        U = modal @ np.asarray(self.reduced.modes, float).T
        return U.reshape(modal.shape[:-1] + (-1, 3))

    def stresses(self, modal: ArrayLike) -> Array:
        """Voigt nodal stresses (..., n_nodes, 6) for modal coordinates (..., n)."""
        modal = np.asarray(modal, float)
        S = np.asarray(self.reduced.stress_modes, float)
        if S.shape[0] == 0:
            raise ModelError(
                f"FlexibleBody {self.local_name!r}: the reduced body has no stress "
                f"modes (reduce(..., stress_modes=True))"
            )
        return np.einsum("nkm,...m->...nk", S, modal)

    def geometric_stiffness(
        self,
        omega: ArrayLike,
        alpha: ArrayLike,
        a: ArrayLike,
        interface_forces: Mapping[str, ArrayLike] | None = None,
    ) -> Array:
        """Modal geometric stiffness (n x n) for the current inertia and interface loads.

        Zero when ``geometric_stiffening`` is off or the reduced body has no unit
        matrices. Arguments as :meth:`ReducedBody.geometric_stiffness` (body axes).
        """
        rb = self.reduced
        if not self.geometric_stiffening or rb.kg_unit.shape[0] == 0:
            return np.zeros((self.n_modes, self.n_modes))
        return rb.geometric_stiffness(omega, alpha, a, interface_forces)

    # -- attachment frames ------------------------------------------------------------
    def interface(self, name: str, rotation: ArrayLike | None = None) -> InterfaceFrame:
        """Frame at interface ``name`` moving with the interface mode shapes."""
        return InterfaceFrame(self, name, rotation)

    def node(self, index: int, rotation: ArrayLike | None = None) -> NodeFrame:
        """Frame at mesh node ``index`` (translates with the node)."""
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
            raise ModelError(
                f"FlexibleBody {self.local_name!r}: node index {index!r} must be an "
                "int (a node number); for a position use body.point((x, y, z))"
            )
        if self._reduced is not None and not 0 <= index < len(self._reduced.nodes):
            raise ModelError(
                f"FlexibleBody {self.local_name!r}: node {index} is not a node of "
                f"the mesh (0..{len(self._reduced.nodes) - 1})"
            )
        return NodeFrame(self, int(index), rotation)

    def point(
        self, xyz: ArrayLike, rotation: ArrayLike | None = None, tol: float | None = None
    ) -> NodeFrame:
        """Frame at the mesh node nearest to ``xyz`` (m, body frame).

        ModelError if no node lies within ``tol`` (m; default: the largest element
        diameter, the farthest any point of the mesh can be from its nearest node):
        a point off the body (wrong units, wrong frame) is refused, not snapped.
        """
        try:
            x = np.asarray(xyz, float)
        except (TypeError, ValueError):
            x = np.zeros(0)
        if x.shape != (3,) or not np.isfinite(x).all():
            raise ModelError(
                f"FlexibleBody {self.local_name!r}: point {xyz!r} must be three "
                "finite coordinates (m, body frame)"
            )
        nodes = np.asarray(self.reduced.nodes, float)
        d2 = ((nodes - x) ** 2).sum(axis=1)
        i = int(np.argmin(d2))
        dist = float(np.sqrt(d2[i]))
        if tol is None:
            limit = self._element_size()
        else:
            if not is_real(tol) or tol < 0:
                raise ModelError(
                    f"FlexibleBody {self.local_name!r}: point tol={tol!r} must be "
                    "a distance >= 0 (m)"
                )
            limit = float(tol)
        if dist > limit:
            lo, hi = nodes.min(axis=0), nodes.max(axis=0)
            raise ModelError(
                f"FlexibleBody {self.local_name!r}: point {x.tolist()} is {dist:.4g} m from the "
                f"nearest mesh node {i} at {np.round(nodes[i], 6).tolist()} (tolerance "
                f"{limit:.3g} m); the mesh spans {np.round(lo, 6).tolist()} .. "
                f"{np.round(hi, 6).tolist()} m in body axes: check the coordinates, their "
                "units and frame (body frame of the reduction), or pass tol="
            )
        return NodeFrame(self, i, rotation)

    def _element_size(self):
        """Largest element diameter (m) of the mesh (cached)."""
        if "_hmax" not in self.__dict__:
            rb = self.reduced
            nodes = np.asarray(rb.nodes, float)
            cells = np.asarray(rb.cells, dtype=np.int64)
            if cells.ndim == 2 and cells.size:
                x = nodes[cells]  # (n_cells, n_loc, 3)
                h = float(np.linalg.norm(x.max(axis=1) - x.min(axis=1), axis=1).max())
            else:
                h = 1e-6 * float(np.linalg.norm(np.ptp(nodes, axis=0)))
            self.__dict__["_hmax"] = h
        return self.__dict__["_hmax"]

    def validate(self) -> None:
        if self._reduced is None:
            return  # checked when reduced
        self.invariants()

    def summary(self) -> str:
        if self._reduced is None:
            strategy = self._lazy[2] if self._lazy else None
            try:  # the count without the mesh (nodes interfaces need it: not shown)
                plan = f": {strategy.describe()}" if hasattr(strategy, "describe") else ""
            except FlexmbdError:
                plan = ""
            if getattr(strategy, "frame", None) in ("auto", "interface"):
                resolved = self._resolved_strategy()
                if resolved is not strategy:
                    plan += f"; {resolved.frame_reason}"
            return f"FlexibleBody (not reduced yet{plan})"
        rb = self.reduced
        on = bool(self.geometric_stiffening and rb.kg_unit.shape[0])
        stiff = "geometric stiffening from mean-axis loads" if on else "no geometric stiffening"
        why = next((n for n in rb.notes if n.startswith(_FRAME_NOTES)), "")
        return (
            f"FlexibleBody m={self.mass:.6g} kg, {rb.describe()} "
            f"({rb.strategy}), frame: {rb.frame}{f' ({why})' if why else ''}, "
            f"{stiff}{self._frame_note(on)}"
        )

    def _frame_note(self, stiffened):
        """For a stiffened body whose frame is clamped at an interface that a joint lets
        rotate: the joint's name and the advice of the module docs ('Choice of frame')."""
        rb = self.reduced
        ref = str(rb.reference or "")
        if not stiffened or not ref or rb.support != "clamped":
            return ""
        pins, clamps = reference_joints(self, ref)
        if not pins or clamps:
            return ""
        return (
            f"; frame clamped at an interface pinned by {', '.join(pins)}: the modes "
            "carry the deflection as a linearized rotation, right to second order with "
            "stiffening, not beyond (slider-crank rod: 2.0 % against 1.1 % in mean "
            "axes); prefer frame='mean-axis' (what the default frame='auto' chooses "
            "here, and what FlexibleBody.from_mesh integrates for frame='interface') for "
            "fast mechanisms (FlexibleBody docs, 'Choice of frame')"
        )


class _DeformingFrame(Frame):
    """A frame on a flexible body whose pose follows modal coordinates linearly."""

    def __init__(
        self, body: FlexibleBody, rotation: ArrayLike | None, *, name: str | None = None
    ) -> None:
        Component.__init__(self, name=name)
        if not isinstance(body, FlexibleBody):
            raise ModelError(f"{type(self).__name__}: body must be a FlexibleBody")

        object.__setattr__(self, "body", body)
        object.__setattr__(self, "_rot", _as_rotation(rotation, f"frame on {body.local_name!r}"))

    @property
    def rotation(self) -> Array:
        return self._rot

    def trajectory(self, results: Results) -> Array:
        """World positions (nt, 3) of the deformed frame origin over a :class:`Results`
        history (needs the body's ``position``, ``orientation`` and ``modal`` series)."""
        name = self.body.name
        series = results.body_series.get(name)
        if series is None or any(
            v is None for v in (series.position, series.orientation, series.modal)
        ):
            raise ModelError(f"results have no pose/modal history of body {name!r}")
        r, qf = series.position, series.modal
        R = quat_to_rot_batch(series.orientation)
        p = self.position + qf @ self.modes[3:].T
        return r + np.einsum("tij,tj->ti", R, p)

    def pose(self, q: ArrayLike) -> Pose:
        """``(R, p)`` of the deformed frame in body axes for modal coordinates ``q``.

        Rotation by the exponential map of the modal rotation ``modes[:3] @ q``.
        """
        d = self.modes @ np.asarray(q, float)
        return rotvec_to_rot(d[:3]) @ self._rot, self.position + d[3:]

    def poses(self, q: ArrayLike) -> tuple[Array, Array]:
        """:meth:`pose` of every row of a modal history ``q`` (nt, n): ``R`` (nt, 3, 3) and
        ``p`` (nt, 3), body axes; per row the operations of :meth:`pose` (the same bits),
        the Euler parameters and rotation matrices in batches
        (:func:`~flexmbd.spatial.quat_from_rotvec_batch`, ``quat_to_rot_batch``)."""
        q = np.atleast_2d(np.asarray(q, float))
        modes = self.modes
        d = np.array([modes @ x for x in q]).reshape(len(q), 6)
        e = quat_from_rotvec_batch(d[:, :3])
        return quat_to_rot_batch(e) @ self._rot, self.position + d[:, 3:]


class InterfaceFrame(_DeformingFrame):
    """Frame of a reduced body's interface: origin and modes from the reduction."""

    def __init__(
        self,
        body: FlexibleBody,
        interface: str,
        rotation: ArrayLike | None = None,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(body, rotation, name=name)
        object.__setattr__(self, "interface_name", str(interface))
        if body.is_reduced:
            body.reduced.interface(interface)  # raises a clear error for unknown names

    @property
    def position(self) -> Array:
        return np.asarray(self.body.reduced.interface(self.interface_name)[1], float)

    @property
    def modes(self) -> Array:
        """(6, n) rotation and translation of the frame per unit modal coordinate
        (:meth:`FlexibleBody.interface_modes`)."""
        return self.body.interface_modes(self.interface_name)

    def summary(self) -> str:
        return f"interface {self.interface_name!r} of {self.body.name}"


class NodeFrame(_DeformingFrame):
    """Frame at a mesh node: translates with the node, rotates with the body frame."""

    def __init__(
        self,
        body: FlexibleBody,
        index: int,
        rotation: ArrayLike | None = None,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(body, rotation, name=name)
        object.__setattr__(self, "node_index", int(index))

    @property
    def position(self) -> Array:
        nodes = self.body.reduced.nodes
        if not 0 <= self.node_index < len(nodes):
            raise ModelError(
                f"node {self.node_index} is not a node of {self.body.name!r} ({len(nodes)} nodes)"
            )
        return np.asarray(nodes[self.node_index], float)

    @property
    def modes(self) -> Array:
        i = self.node_index
        Phi = self.body.reduced.modes
        out = np.zeros((6, Phi.shape[1]))
        out[3:] = Phi[3 * i : 3 * i + 3]
        return out

    def summary(self) -> str:
        return f"node {self.node_index} of {self.body.name}"


def _cache_key(mesh, material, strategy, opts):
    h = hashlib.sha256()
    if isinstance(mesh, (str, Path)) and Path(mesh).exists():
        h.update(Path(mesh).read_bytes())
    else:
        h.update(repr(mesh).encode())
    h.update(repr(material).encode())
    h.update(repr(strategy).encode())
    h.update(json.dumps(opts, sort_keys=True, default=repr).encode())
    return "cache-key:" + h.hexdigest()


def leaves_rotation_free(joint: Any) -> bool:
    """True when ``joint`` lets its frames rotate relative to each other: fewer than three
    rotational constraint rows in the joint table (:mod:`flexmbd.joint_types`; Revolute,
    Cylindrical, Screw, Universal, Spherical, Planar, Free), False for Fixed and
    Prismatic."""
    return len(joint_type(joint).rows(joint)[1]) < 3


def reference_joints(body: FlexibleBody, ref: str) -> tuple[list[str], list[str]]:
    """Names of the joints of ``body``'s model at its interface ``ref``: ``(pins,
    clamps)``, those that leave rotation free and those that do not
    (:func:`leaves_rotation_free`); both empty outside a model."""
    model = body.model()
    pins, clamps = [], []
    for j in model.joints() if model is not None else ():
        if any(
            isinstance(fr, InterfaceFrame) and fr.body is body and fr.interface_name == ref
            for fr in (j.parent_frame, j.child_frame)
        ):
            (pins if leaves_rotation_free(j) else clamps).append(j.name)
    return pins, clamps


_MAP_NOTE = "frame='interface' -> integrated in mean axes"
_FRAME_NOTES = ("frame='auto'", _MAP_NOTE)


def pinned_interface_map(body: FlexibleBody, ref: str) -> str:
    """Why a stiffened ``body`` with an explicit Craig-Bampton ``frame="interface"`` is
    integrated as its mean-axis equivalent, or ``""`` when it is not.

    It is when a joint that leaves rotation free attaches the reference interface ``ref``,
    none builds it in (:func:`reference_joints`) and no driver prescribes it (a driven
    hub keeps its frame: the interface frame is where the body is driven). The clamped
    frame with exact kinematics of its rigid part, ``x = r + A (t + R(theta) (x0 + Phi_e q))`` with
    ``[theta; t] = Gamma q`` (:func:`flexmbd.flexible.mean_axis.rigid_fit`) and
    ``Phi_e = Phi - R Gamma``, *is* the mean-axis body whose frame is the clamped frame
    moved by ``Gamma q`` (module docs, 'Choice of frame'): the body is reduced with the
    same Craig-Bampton columns projected on mean axes and integrated in that frame; the
    interface frame is its deformed reference interface.
    """
    pins, clamps = reference_joints(body, ref)
    if not pins or clamps or _driven(body, pins):
        return ""
    return (
        f"{_MAP_NOTE}: stiffened, reference interface {ref!r} pinned by {', '.join(pins)}; "
        "the interface frame with exact rigid kinematics (moved by the rigid fit Gamma q, "
        "modes Phi - R Gamma) is this mean-axis body; the interface frame is its deformed "
        f"interface {ref!r} (results: interfaces[{ref!r}])"
    )


def _driven(body: FlexibleBody, joints: list[str]) -> bool:
    """True when a driver of ``body``'s model (a component with a ``joint``, e.g.
    :class:`flexmbd.constraints.JointDriver`) prescribes one of the named joints."""
    model = body.model()
    if model is None:
        return False
    return any(
        getattr(getattr(c, "joint", None), "name", None) in joints
        for c in model.component_objects(Component)
        if hasattr(c, "coordinate")
    )


def auto_frame(body: FlexibleBody, ref: str, stiffened: bool) -> tuple[str, str]:
    """The frame of a Craig-Bampton ``frame="auto"`` for ``body`` (reference interface
    ``ref``) and why: ``("mean-axis" | "interface", reason)``.

    Mean axes when the body is geometrically stiffened (``stiffened``) and a joint that
    leaves rotation free attaches its reference interface -- a frame clamped there is
    stiffened right to second order only (module docs, 'Choice of frame') -- and when a
    stiffened body's reference interface has no joint (yet), the rule of a reduction
    outside a model (:func:`flexmbd.fem.strategies.resolve_auto_frame`). The interface
    frame when a joint locks the reference interface's rotation (built in: the clamped
    frame is the natural one) or without stiffening.
    """
    pins, clamps = reference_joints(body, ref)
    head = "frame='auto' -> "
    if not stiffened:
        return "interface", f"{head}interface {ref!r}: no geometric stiffening"
    if clamps:
        return "interface", (
            f"{head}interface {ref!r}: stiffened, reference interface {ref!r} built in by "
            f"{', '.join(clamps)}"
        )
    if pins:
        return "mean-axis", (
            f"{head}mean axes: stiffened, reference interface {ref!r} pinned by {', '.join(pins)}"
        )
    return "mean-axis", (
        f"{head}mean axes: stiffened, reference interface {ref!r} not attached by a joint "
        "when reduced"
    )


def stiffening_hint(model: Model) -> str:
    """Advice for a failed run of ``model`` with geometrically stiffened flexible bodies:
    their names and how to tell whether stiffening is involved; "" when there are none.

    Stiffening itself is frame-independent (module docs, 'Choice of frame'); what stays
    approximate is that the interface wrenches weighting it are lagged by one step in the
    absolute formulation, which needs a step that resolves the joint forces' changes.
    """
    names = [
        b.name
        for b in model.component_objects(FlexibleBody)
        if b.geometric_stiffening and b.is_reduced and b.reduced.kg_unit.shape[0]
    ]
    if not names:
        return ""
    many = len(names) > 1
    return (
        f"flexible bod{'ies' if many else 'y'} {', '.join(map(repr, names))} "
        f"{'are' if many else 'is'} geometrically stiffened (load parameters from "
        "mean-axis kinematics, interface wrenches lagged by one step); to tell whether "
        "stiffening is involved, repeat the run with a smaller step or with "
        "geometric_stiffening=False (FlexibleBody docs, 'Choice of frame')"
    )
