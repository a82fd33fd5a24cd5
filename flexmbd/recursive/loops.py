"""LoopSystem: the recursive (CFA) formulation of a model with closed loops.

``compile_loops(model)`` (also ``model.compile("recursive")`` when the topology
has cut joints) builds the spanning tree's :class:`~flexmbd.recursive.RecursiveSystem`
and the cut-joint equations (:mod:`flexmbd.constraints.cut`), and handles them
with a :class:`~flexmbd.constraints.projection.Projector`.

Forward dynamics at a state ``(q, v, t)``:

1. the tree solver gives the unconstrained accelerations ``v̇_free = M^-1 F``
   (O(N));
2. the constraint Jacobian ``J`` (cut joints and drivers) is factored by pivoted
   QR: independent rows, normal directions ``C`` (with the weak directions of a
   singular configuration);
3. ``(C M^-1 C^T) μ = a - C v̇_free`` with the columns ``M^-1 C^T`` from the
   tree solver (``solve_mass``, one O(N) solve per independent constraint: the
   mass matrix is never formed); ``v̇ = v̇_free + M^-1 C^T μ``;
4. the multipliers ``λ = P R^-1 μ`` are the cut joints' constraint-force
   components; for the reactions the cut-joint wrenches ``D^T λ`` are applied to
   the two bodies of each cut joint as external wrenches (and driver forces as
   joint forces) in one more pass of the tree solver, so every tree joint's
   reaction is consistent with them.

Integration (:meth:`LoopSystem.simulate`): fixed-step RK4 with the position and
velocity correction after every step (``projection="step"``), or scipy's adaptive
RK45 / DOP853 with the correction applied to the state before the equations of
motion are formed in every right-hand-side evaluation (``projection="rhs"``, the
paper's scheme, needed because an adaptive stepper's state cannot be modified).
``Results.stats`` holds per sample the rank, the regular rank, the number of
weak (tangent-projected) directions, a boolean mask of discarded equations
(``stats["discarded"]``, (nt, m), column order ``meta["constraint_names"]``), the
position and velocity violations and the integration wall time so far
(``stats["cpu_time"]``, s); ``extra["lambda"]`` the multipliers,
the cut joints' own coordinates are ``res.joint(name).q`` (continuous angles; filled
by :func:`flexmbd.results.complete`) and
``extra["driver:<name>"]`` the drive forces.

Compiled loops (rigid trees whose loads are gravity and the compiled force elements of
:mod:`flexmbd.recursive._nbforces` -- SDAs with rigid or ground ends and a constant
actuator force, constant point forces and torques, constant joint forces --, cut joints
without applied forces, no driver, coordinates with ``dq/dt = v``; a time function or a
user force law keeps the Python path, about 10x the CPU time of the Andrews squeezer's
run): between two QRs of a regular
configuration the projector's fast path -- the rows the last QR selected, Cholesky
solves of ``J_I M^-1 J_I^T`` and ``J_I J_I^T`` -- runs in one compiled call
(:mod:`flexmbd.recursive._nbloops`): :meth:`LoopSystem.forward_dynamics` (with every
reaction: the cut-joint wrenches go into the tree pass), the position and velocity
correction (:meth:`LoopSystem.project`), a whole RK4 step with ``projection="step"`` and
constant ``tau``, and the output samples. Each checks that the pivoted QR at the
corrected state would choose the same rows with a margin; otherwise the Python path with
its QR decides (singular configurations, rank changes). The adaptive integrators
correct the state inside every evaluation: there the compiled correction keeps the same
rank check (a state where the QR's decision could differ goes to the QR, so the error
control sees the rank changes), and a DOP853, RK45 or RK23 step is one compiled call
(:func:`flexmbd.recursive._nbloops.loop_rk_step`, scipy's stages and step control;
scipy's own code redoes a step where the QR must decide).

Flexible bodies on the loops: the tree solver is the CFA with flexible bodies
(:mod:`flexmbd.recursive.flexible`; modal coordinates are tree coordinates, updated by
the position correction like the joint coordinates). A cut joint attached to a deforming
frame (interface or node) is evaluated on the deformed frame: its relative pose, its
Jacobian over joint *and* modal speeds (the tree's own kinematics at unit speeds of the
joints and flexible bodies on the loop) and the velocity terms of the frame's motion;
its constraint wrenches act through that frame and load the modes
(``body_series[<body>].modal`` keeps the modal histories). The rows, the wrenches, the
projected solve and the correction between two QRs are compiled
(:mod:`flexmbd.recursive._nbflexcut`, :attr:`LoopSystem.flex_compiled`), and so are the
adaptive steps (the blocks of :mod:`flexmbd.recursive._nbloops` with the row evaluator
of :mod:`flexmbd.recursive._nbflexrk`); the Python
versions (``_FlexCutConstraints._eval_py``, ``FlexTree.frame_wrench``, the projector's
own steps) are the references they are tested against. Geometric stiffening inside a
loop is loop-aware: the stiffening loads of a body (mean-axis inertia loads from its
accelerations, wrenches at its stiffened interfaces) must be those of the *constrained*
motion, including the cut-joint wrench at an interface. :meth:`LoopSystem.accelerations`
therefore solves the tree again with the cut-joint wrenches of the current multipliers
applied (they enter the interface loads through
:meth:`flexmbd.recursive.flexible.FlexTree.frame_wrench`) and corrects the multipliers
by the projection until the accelerations settle (``_loop_stiffening``: a fixed point,
or the affine solve where it does not contract; compiled inside the projected solve as
:func:`flexmbd.recursive._nbflexcut.flex_loop_stiffening`, the same steps in the same
order, against which ``_loop_stiffening`` stays the reference). The result equals the
absolute formulation's with its interface loads at the current reactions
(tests/recursive/test_flexible_loops.py).
"""

from __future__ import annotations

import functools
import time as _time
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from .. import _nbjoints as _J
from .. import topology as topo
from ..checkpoint import check_checkpoint, run
from ..constraints.cut import (
    CutJointConstraints,
    CutWrenches,
    JointDriver,
    joint_force_on_cut,
    needs_loops,
)
from ..constraints.projection import (
    DEFAULT_RTOL,
    METHODS,
    ProjectionInfo,
    Projector,
    QRBasis,
    qr_basis,
)
from ..dynamics import (
    DEFERRED,
    CoordinateLayout,
    ForwardDynamics,
    forward_dynamics_result,
    forward_dynamics_states,
)
from ..errors import FlexmbdError, ModelError
from ..integrators.registry import check_options, check_times, resolve
from ..integrators.stepper import (
    ExplicitStepper,
    explicit_integrator,
    index_slice,
    json_options,
    rk4,
    rk4_stability,
    rk_tableau,
    tau_function,
)
from ..model.flexible import FlexibleBody
from ..model.forces import Gravity, JointForce
from ..results import Results
from . import _kernels as K
from . import _nbflexblock as _FB
from . import _nbflexcut as _FC
from . import _nbflexrk as _FR
from . import _nbforces as _NF
from . import _nbloops as _NL
from . import _nbsingle as _NS
from . import _nbtimed as _NT
from .energy import energy_histories
from .flexible import body_series, frame_constants, frame_motion
from .system import RecursiveSystem

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .._typing import Array, ArrayLike, StrPath
    from ..model import Joint, Model

__all__ = ["LoopSystem", "compile_loops", "needs_loops"]

#: the compiled correction hands over to the QR where the pivoted QR's rank decision is
#: within a factor _GUARD of the rank threshold (or it would choose other rows)
_GUARD = 4.0
_new = object.__new__
#: the tree solution's multipliers in a loop's result (none: the tree has no constraints;
#: one empty array shared by every result, nothing in it to change)
_NO_LAM = np.zeros(0)


def _call(entries, i, kernel, args):
    """``kernel(*args)``, by the entry point of the compiled version that the first call
    with these argument types ran (kept in ``entries[i]`` with the kernel): a
    single-state call's arguments have the same types at every call (the model's
    arrays and contiguous float64 / int64 state, row and output arrays of fixed
    dimensions), so numba's dispatcher resolves their types only once (for the 35 arrays
    of the cut arguments that costs more than unboxing them). Where no compiled version
    has exactly these types (a read-only state array at the first call) or ``kernel`` is
    not a numba dispatcher, every call goes through ``kernel``."""
    kept = entries[i]
    if kept is not None and kept[0] is kernel:
        return kept[1](*args)
    out = kernel(*args)
    entry = kernel
    if hasattr(kernel, "overloads"):
        cres = kernel.overloads.get(tuple(kernel.typeof_pyval(a) for a in args))
        entry = kernel if cres is None else cres.entry_point
    entries[i] = (kernel, entry)
    return out


#: no table values that are functions of time (the RK4 kernels' ``TT, tix``)
_NO_TT, _NO_TIX = np.zeros((1, 0)), np.zeros((0, 2), np.int64)


def compile_loops(model: Model, **options: Any) -> LoopSystem:
    """A :class:`LoopSystem` of ``model`` (recursive formulation with cut joints/drivers)."""
    return LoopSystem(model, **options)


class _TreeView:
    """The model seen without its cut joints (what the tree solver compiles).

    Forwards everything to the model except ``joints()`` (tree joints only),
    ``topology()`` (of the tree) and ``forces()`` (JointForces on cut joints are
    applied by the loop layer; an internal element carries cut-joint wrenches).
    """

    def __init__(self, model, cut_joints, wrench_element):
        object.__setattr__(self, "_model", model)
        ids = {id(j) for j in cut_joints}
        object.__setattr__(self, "_cut_ids", ids)
        object.__setattr__(self, "_wrenches", wrench_element)
        object.__setattr__(self, "_topo", None)

    def __getattr__(self, name):
        return getattr(self._model, name)

    def joints(self):
        return [j for j in self._model.joints() if id(j) not in self._cut_ids]

    def forces(self):
        out = [
            f
            for f in self._model.forces()
            if not (isinstance(f, JointForce) and id(f.joint) in self._cut_ids)
        ]
        return out + [self._wrenches]

    def topology(self):
        rev = self._model.revision
        if self._topo is not None and self._topo[0] == rev:
            return self._topo[1]
        joints = self.joints()
        index = {id(self._model.ground): 0}
        index.update({id(b): i + 1 for i, b in enumerate(self._model.bodies())})
        J = np.zeros((2, len(joints)), dtype=int)
        for k, j in enumerate(joints):
            J[0, k], J[1, k] = index[id(j.parent)], index[id(j.child)]
        t = topo.analyze(J, weights=[j.n_constraints for j in joints])
        object.__setattr__(self, "_topo", (rev, t))
        return t


class LoopSystem:
    """A model with closed loops in tree joint coordinates (see the module docstring).

    Parameters
    ----------
    model : flexmbd.Model
    algorithm : {"serialized", "general"}
        Tree solver algorithm.
    method : {"qr", "baumgarte", "moore-penrose", "none"}
        Constraint handling (:class:`~flexmbd.constraints.projection.Projector`).
    rtol : float
        Relative rank threshold of the pivoted QR (default 1e-6).
    tangent_projection : bool
        Project the accelerations on the regular-rank tangent space while the rank
        is dropped (singular configurations; eq. 31 of Wang et al.).
    position_tol, max_newton : float, int
        Position correction (Newton in the normal space) options.
    h : float, optional
        Step for the Baumgarte coefficients (``method="baumgarte"``; set by
        :meth:`simulate` from ``dt`` when not given).
    """

    #: Name of the formulation, as ``Model.compile`` and ``simulate`` take it.
    formulation = "recursive"

    def __init__(
        self,
        model: Model,
        algorithm: str = "serialized",
        method: str = "qr",
        rtol: float = DEFAULT_RTOL,
        tangent_projection: bool = True,
        position_tol: float = 1e-13,
        max_newton: int = 5,
        h: float | None = None,
    ) -> None:
        if method not in METHODS:
            raise ModelError(f"LoopSystem: method must be one of {METHODS}, got {method!r}")
        self.model = model
        model.validate()
        self.cut_joints = model.cut_joints()
        self.drivers = [d for d in model.component_objects(JointDriver)]
        self._flexible = any(isinstance(b, FlexibleBody) for b in model.bodies())
        self._wrench_element = _FlexCutWrenches() if self._flexible else CutWrenches()
        self.view = _TreeView(model, self.cut_joints, self._wrench_element)
        self.tree = RecursiveSystem(self.view, algorithm=algorithm)
        self.tree.applied_by_caller = (self._wrench_element,)
        self.algorithm = algorithm
        cls = _FlexCutConstraints if self._flexible else CutJointConstraints
        self.constraints = cls(
            self.tree, self.cut_joints, self.drivers, topology=self.view.topology()
        )
        if self._flexible:
            self._wrench_element.sides = self.constraints.sides
        self.modal_slices = self.tree.modal_slices
        self.constraint_names = list(self.constraints.names)
        self._options = dict(
            method=method,
            rtol=rtol,
            tangent_projection=tangent_projection,
            position_tol=position_tol,
            max_newton=max_newton,
            h=h,
        )
        self.projector = self._make_projector(h)
        self.coordinates, self.speeds = self.tree.coordinates, self.tree.speeds
        self.nq, self.nv = self.tree.nq, self.tree.nv
        self.joint_names = [j.name for j in model.joints()]
        self._jindex = {n: i for i, n in enumerate(self.joint_names)}
        self._tree_rows = np.array([self._jindex[n] for n in self.tree.joint_names], dtype=int)
        # the cut joints' rows of the reactions (the compiled samples' CUTF rows go there)
        self._cut_rows_reac = np.array([self._jindex[c.name] for c in self.constraints.cuts])
        self._reac_cols = (index_slice(self._tree_rows), index_slice(self._cut_rows_reac))
        tl = self.tree.layout
        self.layout = CoordinateLayout.build(
            "recursive",
            self.nq,
            self.nv,
            self.coordinates,
            self.speeds,
            self.joint_names,
            tl.body_names,
            joints=tl.joints,
            modal=tl.modal,
        )
        self._cut_jf = {}
        for f in model.forces():
            if isinstance(f, JointForce) and f.joint in self.cut_joints:
                self._cut_jf.setdefault(f.joint.name, []).append(f)
        self.floating = self.tree.floating
        self._ic = None
        self._comp = None
        self._zero_tau = np.zeros(self.nv)
        self._flex_args_memo = None  # (flex_rk4_args)
        self._flex_on = True
        #: ``(revision, q, qd, qdd, body accelerations)`` of the last output samples
        #: (:meth:`results_from`), for :meth:`body_accelerations`
        self._accel_memo = None

    def _make_projector(self, h=None):
        o = dict(self._options)
        if h is not None:
            o["h"] = h
        if o["method"] == "baumgarte" and o["h"] is None:
            o["h"] = 1e-3
        return Projector(self.constraints, **o)

    @property
    def compile_options(self) -> dict:
        """The constraint options this system was compiled with (a copy): ``method``,
        ``rtol``, ``tangent_projection``, ``position_tol``, ``max_newton``, ``h``."""
        return dict(self._options)

    # -- names -------------------------------------------------------------------------
    def multipliers(self, lam: ArrayLike, joint: Joint | str) -> Array:
        """The entries of ``lam`` (a result's ``.lam``) of one cut joint or driver."""
        return np.asarray(lam)[..., self._rows(joint)]

    def _rows(self, name):
        name = getattr(name, "name", name)
        for c in self.constraints.cuts:
            if c.name == name:
                return c.rows
        for i, d in enumerate(self.constraints.drivers):
            if d.name == name or d.joint.name == name:
                r = self.constraints.n_cut_rows + i
                return slice(r, r + 1)
        raise ModelError(
            f"{name!r} is neither a cut joint nor a driver; cut joints: "
            f"{[c.name for c in self.constraints.cuts]}"
        )

    def _pair(self, c, Rc_, pc, F):
        return _pair_frames(c, Rc_, pc, F) if self._flexible else _pair(c, Rc_, pc, F)

    def modal(self, q: ArrayLike, name: str) -> Array:
        """Modal coordinates (or speeds) of flexible body ``name`` (see the tree's ``modal``)."""
        return self.tree.modal(q, name)

    # -- pass-through to the tree ------------------------------------------------------
    def solve_mass(self, q: ArrayLike, rhs: ArrayLike) -> Array:
        """``M(q)^-1 rhs`` by the tree's CFA."""
        return self.tree.solve_mass(q, rhs)

    def body_states(self, q: ArrayLike, qd: ArrayLike | None = None) -> Any:
        return self.tree.body_states(q, qd)

    def body_motion(self, q: ArrayLike, qd: ArrayLike) -> dict[str, tuple[Array, ...]]:
        """World poses and twists of every body over a history (the tree's
        :meth:`~flexmbd.recursive.system.RecursiveSystem.body_motion`)."""
        return self.tree.body_motion(q, qd)

    def body_accelerations(
        self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike
    ) -> dict[str, tuple[Array, Array]] | None:
        """``{body name: (alpha_world (nt, 3), a_origin_world (nt, 3))}`` of the output
        samples ``q, qd, qdd`` (nt, ...) of the last :meth:`results_from` (the forward
        dynamics of each sample computed them: rad/s^2, m/s^2, world axes, the body frame
        origin); None for another history (the joint series then differentiate the
        twists: :mod:`flexmbd.joint_states`) or for flexible bodies."""
        memo = self._accel_memo
        if memo is None or memo[0] != self.model.revision:
            return None
        q, qd, qdd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, qdd))
        if not all(np.array_equal(a, b) for a, b in zip(memo[1:4], (q, qd, qdd))):
            return None
        acc = memo[4].copy()  # rows in layout.body_names order
        return {n: (acc[:, i, :3], acc[:, i, 3:]) for i, n in enumerate(self.layout.body_names)}

    def kinetic_energy(self, q: ArrayLike, qd: ArrayLike) -> float:
        return self.tree.kinetic_energy(q, qd)

    def potential_energy(self, q: ArrayLike, t: float = 0.0) -> float:
        self._wrench_element.current = []
        return self.tree.potential_energy(q, t)

    def powers(
        self, q: ArrayLike, qd: ArrayLike, t: float = 0.0, tau: ArrayLike | None = None
    ) -> dict[str, float] | None:
        """Powers (W) of the tree's elements
        (:meth:`flexmbd.recursive.system.RecursiveSystem.powers`); the ideal loop
        constraints do no work (drivers' work shows in ``numerical_dissipation``)."""
        self._wrench_element.current = []
        return self.tree.powers(q, qd, t, tau)

    def potential_energies(self, q: ArrayLike, t: float = 0.0) -> dict[str, float]:
        """``{"gravity", "spring"}`` (J) of the tree
        (:meth:`flexmbd.recursive.system.RecursiveSystem.potential_energies`)."""
        self._wrench_element.current = []
        return self.tree.potential_energies(q, t)

    def energy_samples(
        self, t: ArrayLike, q: ArrayLike, qd: ArrayLike, tau: ArrayLike | None = None
    ) -> dict[str, Array] | None:
        """Energies (J) and powers (W) of the tree over a history, or None
        (:meth:`flexmbd.recursive.system.RecursiveSystem.energy_samples`; the ideal loop
        constraints do no work). A loop through flexible bodies whose projected solve is
        compiled (:meth:`_flex_direct`: gravity the only load, no cut-joint forces or
        drivers) takes the flexible tree's one compiled call over the history
        (:meth:`flexmbd.recursive.flexible.FlexTree.energy_samples`) unless
        :attr:`flex_compiled` is off."""
        self._wrench_element.current = []
        q, qd = np.atleast_2d(np.asarray(q, float)), np.atleast_2d(np.asarray(qd, float))
        if (
            self.flex_compiled
            and q.shape[1] == self.nq
            and qd.shape[1] == self.nv
            and self.tree.flex_single_args()  # (refreshes the tree first)
            and self._flex_direct()
        ):
            return self.tree.flex.energy_samples(t, q, qd, tau, caller=True)
        return self.tree.energy_samples(t, q, qd, tau)

    def qdot(self, q: ArrayLike, qd: ArrayLike) -> Array:
        return self.tree.qdot(q, qd)

    def normalize(self, q: ArrayLike) -> Array:
        return self.tree.normalize(q)

    def mass_matrix(self, q: ArrayLike) -> Array:
        return self.tree.mass_matrix(q)

    # -- initial state -----------------------------------------------------------------
    def initial_state(
        self,
        q: ArrayLike | None = None,
        qd: ArrayLike | None = None,
        t: float = 0.0,
        tol: float = 1e-12,
        max_iter: int = 50,
    ) -> tuple[Array, Array]:
        """Assembled ``(q, qd)``: the joints' ``q0``/``qd0`` corrected onto the constraints.

        Raises :class:`~flexmbd.errors.ModelError` naming the violated cut joints if
        the configuration cannot be assembled (the loops do not close).
        """
        q = self.tree.q0() if q is None else np.asarray(q, dtype=float)
        qd = self.tree.qd0() if qd is None else np.asarray(qd, dtype=float)
        P = Projector(
            self.constraints,
            rtol=self._options["rtol"],
            position_tol=tol * 1e-2,
            max_newton=max_iter,
            tangent_projection=False,
        )
        q = P.correct_positions(self.tree.normalize(q), t)
        phi = self.constraints.phi(q, t)
        if np.abs(phi).max(initial=0.0) > tol * max(1.0, np.abs(q).max(initial=0.0)):
            bad = sorted(
                {self.constraint_names[i].split(":")[0] for i in np.flatnonzero(np.abs(phi) > tol)}
            )
            raise ModelError(
                f"model {self.model.name!r}: the initial configuration does not close the loops "
                f"at {bad} (largest violation {np.abs(phi).max():.3g}); give joint q0 values "
                f"closer to an assembled configuration"
            )
        qd = P.correct_velocities(q, qd, t)
        return q, qd

    def q0(self) -> Array:
        if self._ic is None or self._ic[0] != self.model.revision:
            self._ic = (self.model.revision, self.initial_state())
        return self._ic[1][0].copy()

    def qd0(self) -> Array:
        if self._ic is None or self._ic[0] != self.model.revision:
            self._ic = (self.model.revision, self.initial_state())
        return self._ic[1][1].copy()

    # -- dynamics ----------------------------------------------------------------------
    def project(
        self, q: ArrayLike, qd: ArrayLike, t: float = 0.0, projector: Projector | None = None
    ) -> tuple[Array, Array]:
        """Position then velocity correction of a state (no-op for Baumgarte/none).

        Between two QRs of a regular configuration the compiled correction
        (:func:`._nbloops.loop_correct`) does the projector's Newton and velocity steps on
        the rows it selected; where the selection does not hold (rank changes, singular
        configurations) the projector's QR path decides."""
        P = projector or self.projector
        if self.flex_compiled:
            out = self._flex_project(q, qd, P)
            if out is not None:
                return out
        c = self._compiled(clock=True)  # (the correction reads no force table)
        sel = P.selection() if c is not None else None
        if sel is not None:
            q = np.array(q, dtype=float)
            qd = np.array(qd, dtype=float)
            ws = self._ws
            st = _NL.loop_correct(
                c[2], q, qd, sel, P.position_tol, P.max_newton, P.rtol, _GUARD, *ws
            )
            if st == 0:
                return q, qd
        return P.correct(q, qd, t)

    def _flex_project(self, q, qd, P):
        """:meth:`project` of a loop through flexible bodies by the compiled correction
        (:func:`._nbflexcut.flex_correct`) on the projector's rows, or None (the QR path:
        no selection, drivers, a retraction other than ``q += dv``, or the kernel's
        refusal)."""
        c = self.constraints
        if not (c.compiled_flex and c.compiled_retraction and not c.drivers):
            return None
        sel = P.selection()
        if sel is None:
            return None
        q = np.array(q, dtype=float)
        qd = np.array(qd, dtype=float)
        if q.shape != (self.nq,) or qd.shape != (self.nv,):
            return None
        sI, sC, sFt, sFs, _ = c.sides()
        work, (cI, E, F, G), pspeeds = c.flex_work()
        cw = _NL.correct_work(self.nv, c.m, sel.shape[0])
        st = _FC.flex_correct(
            self.tree.flex.work, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work,
            c.flex_outputs(), np.zeros(self.nv), q, qd, sel, P.position_tol, P.max_newton,
            P.rtol, _GUARD, cw,
        )  # fmt: skip
        return (q, qd) if st == 0 else None

    def rank_is_stable(self, q: ArrayLike, t: float = 0.0, eps: float = 1e-3) -> bool:
        """Whether the cut equations' Jacobian has the same rank (the projector's
        threshold) at ``q`` and at a configuration ``eps`` (rad or m, relative to
        ``max |q|``) away in a fixed pseudo-random direction: False at or next to a
        singular configuration (the rank grows off it) and for sets that are redundant
        only on the constraint manifold (Bricard's mechanism). ``q += dq`` coordinates."""
        q = np.asarray(q, dtype=float)
        rtol = self._options["rtol"]
        r0 = qr_basis(self.constraints.jacobian(q, t), rtol).rank
        dq = np.random.default_rng(12345).standard_normal(q.shape[0])
        dq *= eps * max(1.0, float(np.abs(q).max(initial=0.0))) / np.abs(dq).max(initial=1.0)
        return qr_basis(self.constraints.jacobian(q + dq, t), rtol).rank == r0

    def project_rows(self, Y: Array, projector: Projector | None = None) -> Array:
        """Position and velocity correction of the states ``Y`` (n, nq + nv) in place by
        the compiled correction on the projector's rows (one call,
        :func:`._nbloops.loop_correct_rows`); returns a status per row: 0 done, nonzero
        where the projector's QR must correct the row (left unchanged)."""
        P = projector or self.projector
        status = np.ones(len(Y), dtype=np.int64)
        if self._flexible:
            return self._flex_project_rows(Y, P, status)
        c = self._compiled()
        sel = P.selection() if c is not None else None
        if sel is None or not Y.flags.c_contiguous or Y.dtype != float:
            return status
        _NL.loop_correct_rows(
            c[2], Y, sel, P.position_tol, P.max_newton, P.rtol, _GUARD, self._ws, status
        )
        return status

    def project_samples(
        self,
        Y: Array,
        tau: Array | None = None,
        projector: Projector | None = None,
        t: ArrayLike | None = None,
    ) -> tuple[Array, dict | None]:
        """:meth:`project_rows` of the output states ``Y`` (n, nq + nv) and the output
        sample at each corrected state, in one compiled call
        (:func:`._nbloops.loop_correct_samples`): ``(status, rows)``, ``status`` as
        :meth:`project_rows`; ``rows``: ``qdd`` (n, nv), ``lam`` (n, m), tree reactions
        ``reac`` (n, tree joints, 6), body accelerations ``acc`` (n, bodies, 6), cut
        wrenches ``cutF`` (n, cuts, 6, child axes), ``viol`` (n, 3: position and velocity
        violation, 1 where the sample is complete), or None with every status nonzero
        where :meth:`project_rows` would do nothing. ``tau``: constant joint forces
        (nv,), N m or N, or None (zero). ``t`` (n,): the states' times (s), for loads
        that are functions of time (one compiled call per state, its values of time set
        first: :meth:`set_time`); without it such loads give None."""
        P = projector or self.projector
        n = len(Y)
        status = np.ones(n, dtype=np.int64)
        if self._flexible:  # (the samples after the correction: results_from's)
            return self._flex_project_rows(Y, P, status), None
        c = self._compiled() if t is None else self._compiled(timed=True)
        sel = P.selection() if c is not None else None
        if sel is None or not Y.flags.c_contiguous or Y.dtype != float:
            return status, None
        TAU = np.zeros((n, self.nv))
        if tau is not None:
            TAU[:] = tau
        nj, nb, nc = (
            len(self.tree.joint_names),
            len(self.layout.body_names),
            len(self.constraints.cuts),
        )
        rows = dict(
            qdd=np.empty((n, self.nv)),
            lam=np.empty((n, self.constraints.m)),
            reac=np.empty((n, nj, 6)),
            acc=np.empty((n, nb, 6)),
            cutF=np.empty((n, nc, 6)),
            viol=np.zeros((n, 3)),
        )
        ok = np.zeros(n, dtype=bool)
        timed = t is not None and self._comp[2]
        for a, b in [(i, i + 1) for i in range(n)] if timed else [(0, n)]:
            if timed:
                self.set_time(c, t[a])
            _NL.loop_correct_samples(
                c[0], c[1], c[2], c[3], self._clab, Y[a:b], TAU[a:b], sel, P.position_tol,
                P.max_newton, P.rtol, _GUARD, self._ws, self._body_row, status[a:b],
                *(rows[k][a:b] for k in ("qdd", "lam", "reac", "acc", "cutF", "viol")), ok[a:b],
            )  # fmt: skip
        rows["viol"][:, 2] = ok
        return status, rows

    def _compiled(self, timed=False, clock=False):
        """``(Ib, buf, cut arguments, force table)`` when the compiled loop applies (rigid
        tree whose force elements :meth:`RecursiveSystem.compiled_forces` covers, cut
        joints without applied forces, no driver, ``q += dv``), else None; rebuilt when
        the model changes. A table with values that are functions of time
        (:meth:`tabulated_forces`) only for ``timed`` (the RK4 kernels, which set them
        per stage), else None; with ``clock``, also a table whose only value of time is
        its clock (the time of users' compiled laws, which the adaptive kernels set per
        stage: :func:`._nbforces.set_clock`)."""
        rev = self.model.revision
        if self._comp is None or self._comp[0] != rev:
            self._comp = (rev, *self._build_compiled())
        ok = timed or not self._comp[2] or (clock and self._comp[3])
        return self._comp[1] if ok else None

    def _build_compiled(self):
        """``(arguments of :meth:`_compiled` or None, whether table values depend on
        time, whether the only such value is the table's clock)``."""
        out, timed, clock = None, False, False
        c = self.constraints
        if (
            not self._flexible
            and not self._cut_jf
            and c.m
            and c.compiled_rows
            and self.tree.nq == self.tree.nv
        ):
            ignore = (self._wrench_element,)
            self.tree.fix_free_lengths(self.q0(), self.qd0())  # the assembled state
            packed = self.tree.packed_rigid(ignore=ignore, forces=True, timed=True)
            tab = self.tree.tabulated_forces((), ignore) if packed is not None else None
            if tab is not None:
                Ib, buf, self._body_row = packed
                timed = len(tab[2]) > 0
                rows, cols = tab[2][:, 0], tab[2][:, 1]
                clock = timed and bool(np.all(tab[0][0][rows, 0] == _NF.ULAW) and not cols.any())
                out = (Ib, buf, c.compiled_args(), tab[0])
                ground = self.model.ground
                self._clab = np.array(
                    [
                        [0 if b is ground else self.tree.label(b) for b in (cut.P, cut.C)]
                        for cut in c.cuts
                    ],
                    dtype=np.int64,
                )
                m = c.m
                self._ws = (np.zeros(m), np.zeros((m, self.nv)), np.zeros(m))
                self._reac_ws = np.zeros((len(self.tree.joint_names), 6))
        return out, timed, clock

    def _compiled_at(self, t):
        """:meth:`_compiled` for one evaluation at the time ``t`` (s): a table with values
        of time (users' compiled laws' clock, Python functions of time) is admitted, with
        those values at ``t`` written first (:meth:`set_time`)."""
        c = self._compiled(timed=True)
        if c is not None and self._comp[2]:
            self.set_time(c, t)
        return c

    def set_time(self, c: tuple, t: float) -> None:
        """Write the table values that are functions of time, evaluated at ``t`` (s), into
        the force table of the compiled arguments ``c`` (:meth:`compiled_rk4` with
        ``timed=True``): the clock of users' compiled laws (:func:`set_clock`) and the
        time functions (``JointForce.of_time`` drives, actuator forces ``fa(t)``, point
        loads of time) by one Python call each at ``t``, as the Python path's evaluation
        at ``t`` calls them (:meth:`RecursiveSystem.write_timed`). Nothing for a table
        without values of time."""
        comp = self._compiled(timed=True)
        if comp is None or not self._comp[2]:
            return
        if self._comp[3]:  # only the clock: no Python call
            set_clock(c[3], t)
            return
        self.tree.write_timed(c[3], t, (self._wrench_element,))

    def compiled_rk4(self, timed: bool = False, clock: bool = False) -> tuple | None:
        """The arguments of the compiled loop (:mod:`._nbloops`) for the stepper, or None:
        ``(Ib, buf, cut arguments, force table, zero joint forces, (phi, J, gamma)
        workspaces, reaction workspace, cut joints' body labels, body rows)``. A table
        with values that are functions of time, which the caller tabulates
        (:meth:`tabulated_forces`) for the RK4 kernels, only for ``timed=True`` (else
        None); ``clock=True`` also admits a table whose only value of time is its clock
        (users' compiled laws), which the caller sets to the time of each evaluation
        (the adaptive kernels :func:`._nbloops.loop_rk_step`, :func:`set_clock`)."""
        c = self._compiled(timed, clock)
        if c is None:
            return None
        return (*c, self._zero_tau, self._ws, self._reac_ws, self._clab, self._body_row)

    def tabulated_forces(self, times: ArrayLike) -> tuple | None:
        """``(table, TT, tix)`` of the tree's force table without the cut-joint wrenches
        (:meth:`RecursiveSystem.tabulated_forces`) over the time grid ``times`` (s): the
        values that are functions of time, for the compiled RK4 kernels."""
        return self.tree.tabulated_forces(times, (self._wrench_element,))

    def timed_tabulator(self) -> Callable | None:
        """:meth:`RecursiveSystem.timed_tabulator` of the tree's force table without the
        cut-joint wrenches (the table of :meth:`compiled_rk4`): a function ``tab(times)
        -> (table, TT, tix)`` that tabulates the values of time at the times ``times``
        (s) by one Python call per function and time."""
        return self.tree.timed_tabulator((self._wrench_element,))

    def _compiled_sample(self, q, qd, tau, P, viol, t=0.0):
        """An output sample at the time ``t`` (s) by the compiled loop: violations into
        ``viol`` and the forward dynamics, where the QR at this state would select the
        projector's rows with a margin (then its rank statistics are those rows'); else
        None."""
        c = self._compiled_at(t)
        sel = P.selection() if c is not None and P.method == "qr" else None
        if sel is None:
            return None
        q = np.ascontiguousarray(q, dtype=float)
        qd = np.ascontiguousarray(qd, dtype=float)
        if q.shape != (self.nq,) or qd.shape != (self.nv,):
            return None
        if not _NL.loop_sample(c[2], q, qd, sel, P.rtol, _GUARD, *self._ws, viol):
            return None
        return self._compiled_forward_dynamics(q, qd, tau, P, t)

    def _compiled_samples(self, q, qd, taus, P, qdd, reac, lam, stats, acc, given=None):
        """Output samples by one compiled call (:func:`._nbloops.loop_samples`) into the
        result arrays: every sample where the QR would select the projector's rows with
        a margin (their rank statistics are those rows'); ``given``: the rows the
        compiled RK4 steps already wrote (:meth:`_LoopStepper.fused_samples`), taken as
        they are. Returns the mask of the samples done (the others take the per-sample
        path)."""
        nt = q.shape[0]
        done = np.zeros(nt, dtype=bool)
        c = self._compiled(timed=True)  # (the given rows: the RK4 steps set their loads)
        out = (qdd, lam, reac, acc, stats)
        if self._flexible and nt and q.shape[1] == self.nq and qd.shape[1] == self.nv:
            c = None  # (no rigid compiled loop: the flexible loop's samples)
            if given is not None:
                done = self._given_samples(given, out, done)
            done = self._flex_samples(q, qd, taus, P, out, done)
        sel = P.selection() if c is not None and P.method == "qr" and nt else None
        if sel is None or q.shape[1] != self.nq or qd.shape[1] != self.nv:
            if done.any():
                self._sample_stats(P, stats, done)
            return done
        if given is not None:
            done = self._given_samples(given, out, done)
        todo = np.flatnonzero(~done)
        if len(todo) and self._compiled() is not None:  # (loads of time: per sample)
            nd = len(todo)
            TAU = np.zeros((nd, self.nv))
            for a, i in enumerate(todo):
                if taus[i] is not None:
                    TAU[a] = taus[i]
            m, nt_j = self.constraints.m, len(self.tree.joint_names)
            QDD, LAM = np.empty((nd, self.nv)), np.empty((nd, m))
            REAC = np.empty((nd, nt_j, 6))
            ACC = np.empty((nd, len(self.layout.body_names), 6))
            CUTF = np.empty((nd, len(self.constraints.cuts), 6))
            VIOL, ok = np.zeros((nd, 2)), np.zeros(nd, dtype=bool)
            _NL.loop_samples(
                c[0], c[1], c[2], c[3], self._clab, np.ascontiguousarray(q[todo], dtype=float),
                np.ascontiguousarray(qd[todo], dtype=float), TAU, sel, P.rtol, _GUARD, self._ws,
                self._reac_ws, self._body_row, QDD, LAM, REAC, ACC, CUTF, VIOL, ok,
            )  # fmt: skip
            arrays = (QDD[ok], LAM[ok], REAC[ok], ACC[ok], CUTF[ok], VIOL[ok])
            self._put_samples(todo[ok], *arrays, out)
            done[todo[ok]] = True
        if done.any():
            self._sample_stats(P, stats, done)
        return done

    @staticmethod
    def _sample_stats(P, stats, done):
        """The rank statistics of the compiled samples ``done`` (a mask): those of the
        projector's rows (:meth:`Projector.selection_used`)."""
        P.selection_used()
        info = P.info
        stats["rank"][done], stats["regular_rank"][done] = info.rank, info.regular_rank
        stats["n_weak"][done] = info.n_weak
        stats["discarded"][done] = info.discarded

    def _put_samples(self, idx, QDD, LAM, REAC, ACC, CUTF, VIOL, out):
        """Rows ``idx`` (indices or a slice) of the result arrays ``out = (qdd, lam,
        reactions, body accelerations, stats)`` from the compiled samples (tree reactions
        ``REAC``, cut wrenches ``CUTF``, violations ``VIOL`` (n, >= 2))."""
        qdd, lam, reac, acc, stats = out
        qdd[idx], lam[idx], acc[idx] = QDD, LAM, ACC
        tree, cut = self._reac_columns()
        rows = reac[idx]  # (a view for a slice: the rows are written in place)
        rows[...] = 0.0
        rows[:, tree], rows[:, cut] = REAC, CUTF
        if not isinstance(idx, slice):
            reac[idx] = rows
        stats["position_violation"][idx] = VIOL[:, 0]
        stats["velocity_violation"][idx] = VIOL[:, 1]

    def _reac_columns(self):
        """``(tree rows, cut rows)`` of the reactions array (slices where contiguous)."""
        return self._reac_cols

    def _compiled_inputs(self, q, qd, tau, P, t):
        """``(compiled arguments, projector rows, q, qd, tau)`` as contiguous float arrays
        for the compiled loop kernels at the time ``t`` (s), or None (no compiled loop, no
        row selection yet, or arrays of other shapes: the Python path decides and
        reports)."""
        c = self._compiled_at(t)
        sel = P.selection() if c is not None else None
        if sel is None:
            return None
        state = self._state_arrays(q, qd, tau)
        return None if state is None else (c, sel, *state)

    def _state_arrays(self, q, qd, tau):
        """``(q, qd, tau)`` as contiguous float arrays of one state's shapes (``tau`` None:
        zeros), or None (other shapes: the Python path decides and reports)."""
        q = np.ascontiguousarray(q, dtype=float)
        qd = np.ascontiguousarray(qd, dtype=float)
        tv = self._zero_tau if tau is None else np.ascontiguousarray(tau, dtype=float)
        if q.shape != (self.nq,) or qd.shape != (self.nv,) or tv.shape != (self.nv,):
            return None
        return q, qd, tv

    def _compiled_forward_dynamics(self, q, qd, tau, P, t=0.0):
        """:meth:`forward_dynamics` at the time ``t`` (s) by
        :func:`._nbloops.loop_forward_dynamics` with the reactions of every joint in the
        same compiled call (:func:`._nbsingle.loop_forward_dynamics_rows`), or None. The
        result's ``projection`` and ``tree`` are built on first access
        (``flexmbd.dynamics.DEFERRED``, :func:`_loop_parts`) from this call's
        record of the projector's info."""
        args = self._compiled_inputs(q, qd, tau, P, t)
        if args is None:
            return None
        c, sel, q, qd, tv = args
        plan = self._fd_plan(sel.shape[0])
        shapes, tview, head, wsr, mid, tail, layouts = plan[5]
        qdd, lam = np.empty(self.nv), np.empty(shapes[0])
        acc, reac = np.empty(shapes[2]), np.empty(shapes[3])
        if tview is None:  # tree rows not contiguous: the tree reactions an owned array
            rows = np.empty(shapes[1])
            wsr = (*wsr, rows)
        else:  # their rows of reac (a slice); the kernel's tree rows: kept scratch
            rows = tview
        call = (*head, q, qd, tv, sel, qdd, lam, *wsr, acc, *mid, reac, *tail)
        st = _call(plan[6], 0, _NS.loop_forward_dynamics_rows, call)
        if st != 0:
            return None
        info = P.selection_used(True)
        # forward_dynamics_result's fields, inline, with the deferred parts
        out = _new(ForwardDynamics)
        d = out.__dict__
        d["qdd"], d["reactions"], d["body_accelerations"] = qdd, reac, acc
        d["layout"], d["lam"] = layouts[0], lam
        d[DEFERRED] = (_loop_parts, info, qdd, acc, reac, rows, layouts[1])
        return out

    def _fd_plan(self, k):
        """What :meth:`_compiled_forward_dynamics` and :meth:`_compiled_accelerations` read
        once per compiled loop and row count ``k``: ``(scratch of
        :func:`._nbloops.stage_work`, tree rows and cut rows of the reactions (int64), cut
        wrench scratch, (m, tree reactions, body accelerations and reactions shapes),
        what the forward dynamics reads, the compiled entry points of the two kernels
        (:func:`_call`))``; what the forward dynamics reads: ``(the shapes, the slice of
        the tree rows in the reactions or None where those rows are not contiguous, the
        constant arguments of :func:`._nbsingle.loop_forward_dynamics_rows` before ``q``,
        between ``lam`` and ``acc`` (with a slice: up to the kernel's tree reactions
        scratch ``reac_t``; else up to ``reac_t``), between ``acc`` and ``reac``, after
        ``reac``, (the system's and the tree's layouts))``."""
        memo = getattr(self, "_fd_memo", None)
        if memo is not None and memo[0] is self._comp and memo[1] == k:
            return memo[2]
        c = self._comp[1]
        Ib = c[0]
        sw = _NL.stage_work(k, Ib[K.IB_NV], Ib[K.IB_N1])
        nt = len(self.tree.joint_names)
        shapes = (
            self.constraints.m,
            (nt, 6),
            (len(self.layout.body_names), 6),
            (len(self.joint_names), 6),
        )
        tree_rows = np.ascontiguousarray(self._tree_rows, dtype=np.int64)
        cut_rows = np.ascontiguousarray(self._cut_rows_reac, dtype=np.int64)
        cutF = np.empty((len(self.constraints.cuts), 6))
        sl = index_slice(tree_rows)
        plan = (
            sw,
            tree_rows,
            cut_rows,
            cutF,
            shapes,
            (
                shapes,
                sl if isinstance(sl, slice) else None,
                (*c, self._clab),
                (*self._ws, np.empty(shapes[1])) if isinstance(sl, slice) else self._ws,
                (self._body_row, cutF, sw),
                (tree_rows, cut_rows),
                (self.layout, self.tree.layout),
            ),
            [None, None],
        )
        self._fd_memo = (self._comp, k, plan)
        return plan

    def _forward_dynamics_of(self, qdd, lam, reac_t, acc, cutF, info):
        """The :class:`~flexmbd.dynamics.ForwardDynamics` of the compiled arrays (tree
        reactions ``reac_t``, cut wrenches ``cutF``, projection statistics ``info``)."""
        tree_rows, cut_rows = self._reac_columns()
        reac = np.zeros((len(self.joint_names), 6))
        reac[tree_rows] = reac_t
        reac[cut_rows] = cutF
        tree = forward_dynamics_result(qdd, reac_t, acc, self.tree.layout, np.zeros(0))
        return forward_dynamics_result(qdd, reac, acc, self.layout, lam, info, tree)

    def weak_forward_dynamics(
        self, q: Array, qd: Array, tau: Array | None, t: float, P: Projector
    ) -> ForwardDynamics:
        """:meth:`forward_dynamics` at a state where the projector's QR decides (weak
        directions): accelerations and multipliers by the QR (:meth:`accelerations`, the
        same call as an RK4 stage there), the reactions of those multipliers by one
        compiled call (:func:`._nbloops.loop_reactions`) where the compiled loop
        applies, else the Python path. ``q`` (nq,), ``qd`` (nv,), ``tau`` (nv,) N or N m,
        ``t`` (s)."""
        c = self._compiled_at(t)
        if c is None or tau is not None and np.shape(tau) != (self.nv,):
            return self.forward_dynamics(q, qd, tau, t, P)
        qdd, lam = self.accelerations(q, qd, tau, t, P)
        info = P.info.snapshot()
        q = np.ascontiguousarray(q, dtype=float)
        qd = np.ascontiguousarray(qd, dtype=float)
        tv = self._zero_tau if tau is None else np.ascontiguousarray(tau, dtype=float)
        reac_t = np.empty((len(self.tree.joint_names), 6))
        acc = np.empty((len(self.layout.body_names), 6))
        cutF = np.empty((len(self.constraints.cuts), 6))
        st = _NL.loop_reactions(
            c[0], c[1], c[2], c[3], self._clab, q, qd, tv, np.ascontiguousarray(lam), *self._ws,
            reac_t, acc, self._body_row, cutF,
        )  # fmt: skip
        if st != 0:
            return self.forward_dynamics(q, qd, tau, t, P)
        return self._forward_dynamics_of(qdd, lam, reac_t, acc, cutF, info)

    def weak_rk4_step(
        self, y: Array, h: float, tau: Array | None, P: Projector, sample: bool = False
    ) -> tuple[Array, tuple | None] | None:
        """One RK4 step (``h`` s) from a weak state ``y = (q, qd)`` (the projector's last
        correction left weak directions) by one compiled call
        (:func:`._nbloops.loop_rk4_step_weak`: every stage the projector's QR path, the
        tangent projection on ``[Q_n, Q_w]``), joint forces ``tau`` (nv,) N or N m (None:
        zero). Returns the uncorrected end state and, with ``sample``, the start state's
        ``(position violation, velocity violation, ForwardDynamics)`` (what
        :meth:`results_from` takes as ``samples``); None where the Python path must run
        (no compiled loop, no regular rank yet, a pivot or rank decision within
        round-off of a tie, the continued weak directions of an exactly singular
        state, a failed solve)."""
        c = self._compiled()
        if c is None or P.method != "qr" or P.regular_rank is None:
            return None
        m, nv = self.constraints.m, self.nv
        tv = self._zero_tau if tau is None else np.ascontiguousarray(tau, dtype=float)
        y = np.array(y, dtype=float)
        if y.shape != (2 * nv,) or tv.shape != (nv,):
            return None
        qdd, lam = np.empty(nv), np.empty(m)
        reac_t = np.empty((len(self.tree.joint_names), 6))
        acc = np.empty((len(self.layout.body_names), 6))
        cutF = np.empty((len(self.constraints.cuts), 6))
        viol, stats = np.zeros(2), np.zeros(m + 2, dtype=np.int64)
        st = _NL.loop_rk4_step_weak(
            c[0], c[1], c[2], c[3], self._clab, self._body_row, y, h, tv, P.rtol,
            P.regular_rank, P.weak_memory(), P.tangent_projection, self._ws, self._reac_ws,
            sample, qdd, lam, reac_t, acc, cutF, viol, stats,
        )  # fmt: skip
        if st != 0:
            return None
        if not sample:
            return y, None
        rank, r0 = int(stats[0]), int(stats[1])
        discarded = np.zeros(m, dtype=bool)
        discarded[stats[2 + rank :]] = True
        info = replace(
            P.info,
            rank=rank,
            regular_rank=max(P.regular_rank, rank),
            n_weak=r0 - rank if P.tangent_projection else 0,
            discarded=discarded,
        )
        fd = self._forward_dynamics_of(qdd, lam, reac_t, acc, cutF, info)
        return y, (float(viol[0]), float(viol[1]), fd)

    def weak_correct(self, y: Array, P: Projector) -> Array | None:
        """The projector's correction (:meth:`Projector.correct`) of ``y = (q, qd)``
        where its last corrected state had weak directions, by one compiled call
        (:func:`._nbloops.loop_correct_weak`: the Newton steps and the velocity
        correction on the QR of each iterate), recorded in the projector
        (:meth:`Projector.corrected`). Returns the corrected state, or None where the
        projector's own correction must run (no compiled loop, a decision within
        round-off of a tie, an exactly singular state, no convergence)."""
        c = self._compiled()
        if c is None or P.method != "qr" or P.regular_rank is None or P.selection() is not None:
            return None
        m, nv = self.constraints.m, self.nv
        y = np.array(y, dtype=float)
        if y.shape != (2 * nv,):
            return None
        Jb, Q, R = np.empty((m, nv)), np.empty((nv, m)), np.empty((m, m))
        perm, d, out = np.empty(m, dtype=np.int64), np.empty(m), np.zeros(5)
        st = _NL.loop_correct_weak(
            c[2], y[:nv], y[nv:], P.rtol, P.regular_rank, P.weak_memory(),
            P.tangent_projection, P.position_tol, P.max_newton, P.velocity_tol, *self._ws, Jb,
            Q, R, perm, d, out,
        )  # fmt: skip
        if st != 0:
            return None
        mn = int(np.count_nonzero(d >= 0.0))  # min(nv, rows kept by the QR)
        b = QRBasis(Jb, Q[:, :mn], R[:mn], perm, int(out[0]), int(out[1]), d[:mn], P.rtol)
        P.corrected(b, int(out[2]), out[3], out[4])
        return y

    def _compiled_accelerations(self, q, qd, tau, P, t=0.0):
        """``(qdd, lam)`` at the time ``t`` (s) by :func:`._nbloops.loop_accelerations`
        (:func:`._nbsingle.loop_accelerations_kept`: its scratch kept), or None (Python
        path)."""
        args = self._compiled_inputs(q, qd, tau, P, t)
        if args is None:
            return None
        c, sel, q, qd, tv = args
        qdd = np.empty(self.nv)
        lam = np.empty(self.constraints.m)
        plan = self._fd_plan(sel.shape[0])
        sw, entries = plan[0], plan[-1]
        call = (*c, q, qd, tv, sel, qdd, lam, *self._ws, self._reac_ws, sw)
        st = _call(entries, 1, _NS.loop_accelerations_kept, call)
        if st != 0:
            return None
        P.selection_used()
        return qdd, lam

    def _applied_cut(self, q, qd, t):
        """Applied JointForce wrenches of cut joints as (body, point, n, f) items."""
        items = []
        if not self._cut_jf:
            return items
        rel = self.constraints.relative(q, qd, t)
        for c, (R, d, Vrel, _D, Rc_, pc) in zip(self.constraints.cuts, rel):
            for jf in self._cut_jf.get(c.name, ()):
                F = joint_force_on_cut(c, jf, t, R, d, Vrel)
                items += self._pair(c, Rc_, pc, F)
        return items

    def _free(self, q, qd, tau, t):
        """Unconstrained tree accelerations (the tree solver's lean path when it has one)."""
        return self.tree.qdd(q, qd, tau, t)

    @property
    def flex_compiled(self) -> bool:
        """Loops through flexible bodies: True (default) takes the compiled cut-joint rows,
        cut wrenches, projected solve and correction (:mod:`._nbflexcut`) where they apply;
        False the Python reference path (same equations, agreeing to round-off). Always
        False for rigid loops (their own compiled paths)."""
        return self._flexible and self._flex_on

    @flex_compiled.setter
    def flex_compiled(self, on: bool) -> None:
        self._flex_on = bool(on)
        if self._flexible:
            c = self.constraints
            c.compiled_flex = self._flex_on and not any(cut.screw for cut in c.cuts)
            self._wrench_element.compiled = self._flex_on

    def _flex_direct(self):
        """Whether :func:`._nbflexcut.flex_loop_accelerations` describes this loop (per
        model revision): compiled rows, no drivers, no cut-joint forces, gravity the only
        force element, no reversed or screw tree joint (with geometric stiffening: its
        loop-aware iteration, :func:`._nbflexcut.flex_loop_stiffening`)."""
        key = self.model.revision
        memo = getattr(self, "_flex_ok", None)
        if memo is not None and memo[0] == key:
            return memo[1]
        c = self.constraints
        Ia = self.tree.arrays.Ia
        ok = (
            self._flexible
            and c.compiled_flex
            and not c.drivers
            and not self._cut_jf
            and self.algorithm == "serialized"
            and all(isinstance(f, Gravity) for f in self.model.forces())
            and not np.any(Ia[K.I_REV, 1:])
            and not np.any(Ia[K.I_JT, 1:] == _J.SCREW)
        )
        self._flex_ok = (key, ok)
        return ok

    def _flex_accelerations(self, q, qd, tau, P):
        """``(qdd, lam)`` of a loop through flexible bodies by one compiled call
        (:func:`._nbflexcut.flex_loop_accelerations`) with the projector's independent rows
        of the last corrected state, or None (the Python path decides)."""
        if not self.flex_compiled or callable(tau):
            return None
        # (refreshes the tree first: the checks read its stiffening switches)
        MI, grav, use_grav, reac, tol, max_iter, info = self.tree.flex_single_args()
        if not self._flex_direct():
            return None
        sel = P.selection()
        state = None if sel is None else self._state_arrays(q, qd, tau)
        if state is None:
            return None
        q, qd, tv = state
        c = self.constraints
        sI, sC, sFt, sFs, _ = c.sides()
        work, (cI, E, F, G), pspeeds = c.flex_work()
        nv, m, k = self.nv, c.m, sel.shape[0]
        qdd, lam = np.empty(nv), np.empty(m)
        # the rows and the solve's scratch: kept per row count and size (only qdd, lam are
        # returned)
        kept = getattr(self, "_flex_scratch", None)
        if kept is None or kept[0] != (k, m, nv):
            kept = self._flex_scratch = (
                (k, m, nv),
                c.flex_outputs(),
                (np.empty(nv), np.zeros((1, 6)), np.empty((nv, k)), np.empty((nv, k))),
                (np.empty((k, nv)), np.empty((k, nv)), np.zeros((k, k))),
                (np.empty(k), np.empty(k), np.empty(k)),
                self._flex_stiff_work(self._flex_wrench_work()),
            )
        _, out, cols, rows, small, sw = kept
        st = _FC.flex_loop_accelerations(
            self.tree.flex.work, MI, grav, use_grav, reac, tol, max_iter, info, q, qd, tv, sel,
            sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work, out, *cols, *rows, *small, qdd, lam,
            self._stiff_loop, sw,
        )  # fmt: skip
        if st != 0:
            return None
        P.selection_used()
        return qdd, lam

    def flex_rk4_args(self, tau: Array | None, P: Projector) -> tuple | None:
        """The arguments of :func:`._nbflexblock.flex_loop_rk4_block` before its state
        ``y`` (the RK4 steps of a loop through flexible bodies with constant joint and
        modal forces ``tau`` (nv,) or None, on the projector ``P``'s rows of the last QR),
        or None where the compiled stages or correction do not apply (the Python steps on
        :meth:`accelerations` and :meth:`project` then decide; :meth:`_flex_parts`).
        Kept for the same rows, ``tau`` object, projector and model revision."""
        memo = self._flex_args_memo
        if memo is not None and memo[0] == self.model.revision and self.flex_compiled:
            if memo[1] is P.selection() and memo[2] is tau and memo[3] is P:
                return memo[4]
        parts = self._flex_parts(P)
        if parts is None:
            return None
        head, sel, rows, solve, zv, cw, _ = parts
        tv = self._zero_tau if tau is None else np.ascontiguousarray(tau, dtype=float)
        if tv.shape != (self.nv,):
            return None
        a = (*head, tv, sel, *rows, solve, zv, P.position_tol, P.max_newton, P.rtol, _GUARD,
             cw)  # fmt: skip
        self._flex_args_memo = (self.model.revision, sel, tau, P, a)
        return a

    def flex_rhs(self, y: Array, tau: Array | None, P: Projector) -> Array | None:
        """The adaptive integrators' right-hand side ``(v, qdd)`` (2 nv,) at ``y`` (2 nv,)
        of a loop through flexible bodies, the correction inside the evaluation, by one
        compiled call (:func:`._nbflexblock.flex_loop_rhs`: the operations of
        :meth:`project` then :meth:`accelerations` on the projector ``P``'s rows, bit for
        bit), constant joint and modal forces ``tau`` (nv,) or None; None where
        :meth:`flex_rk4_args` does not apply or the kernel hands over (the QR decides)."""
        a = self.flex_rk4_args(tau, P)
        if a is None:
            return None
        y = np.ascontiguousarray(y, dtype=float)
        if y.shape != (2 * self.nv,):
            return None
        f = np.empty(y.shape[0])
        if _FB.flex_loop_rhs(*a, y, f) != 0:
            return None
        P.selection_used()  # (as accelerations() records)
        return f

    def flex_rk_args(self, tau: Array | None, P: Projector) -> tuple | None:
        """The leading arguments (``Ib`` ... the reaction workspace) of the adaptive block
        :func:`._nbloops.loop_rk_block` for a loop through flexible bodies: ``Ib`` None,
        the tree's workspace, the cut rows' arguments, the force-table argument of
        :func:`._nbflexrk.flex_rk_forces` (whose row evaluator is
        :func:`._nbflexrk.flex_loop_eval`, the evaluations of :meth:`flex_rhs`), the joint
        and modal forces ``tau`` (nv,) or None (zeros), the projector ``P``'s rows of the
        last QR and its correction settings; None where :meth:`flex_rk4_args` does not
        apply."""
        a = self.flex_rk4_args(tau, P)
        if a is None:
            return None
        T, MI, grav, use_grav, reac, tol, max_iter, info, tv, sel = a[:10]
        rows = a[10:21]
        solve, zv, ptol, max_newton, rtol, guard, cw = a[21:]
        fargs = _FR.flex_rk_forces(MI, grav, use_grav, tol, max_iter, info, solve, zv, cw)
        return (None, T, rows, fargs, tv, sel, ptol, max_newton, rtol, guard, rows[-1], reac)

    def _flex_forward_dynamics(self, q, qd, tau, P):
        """:meth:`forward_dynamics` of a loop through flexible bodies by one compiled call
        (:func:`._nbflexblock.flex_loop_forward_dynamics`: the operations of
        :func:`._nbflexblock.flex_loop_samples` at one state -- the projected solve, the
        cut wrenches and the tree's reactions with them applied -- and the reactions of
        every joint), or None: not :meth:`_flex_parts`, other shapes, a failed solve, or a
        state where the QR would not select the projector's rows with a margin (the
        Python path decides). As for the rigid loops' compiled call, the result's
        ``projection`` and ``tree`` (whose accelerations are the loop's) are built on
        first access (``flexmbd.dynamics.DEFERRED``, :func:`_loop_parts`)."""
        plan = self._flex_fd_plan(P)
        if plan is None:
            return None
        state = self._state_arrays(q, qd, tau)
        if state is None:
            return None
        head, kept, shapes, tree_rows, rows, entries = plan
        wrench, body_row, accl, REAC, CUTF, VIOL = kept
        QDD, LAM, ACC = np.empty(shapes[0]), np.empty(shapes[1]), np.zeros(shapes[2])
        reac = np.empty(shapes[3])
        smp = (wrench, body_row, accl, QDD, LAM, REAC, ACC, CUTF, VIOL)
        call = (*head, smp, *state, reac, *rows)
        if _call(entries, 0, _FB.flex_loop_forward_dynamics, call) != 0:
            return None
        info = P.selection_used(True)
        if tree_rows is None:  # (not contiguous: the tree reactions owned)
            tree_rows = REAC[0].copy()
        out = _new(ForwardDynamics)
        d = out.__dict__
        d["qdd"], d["reactions"], d["body_accelerations"] = QDD[0], reac, ACC[0]
        d["layout"], d["lam"] = self.layout, LAM[0]
        d[DEFERRED] = (_loop_parts, info, QDD[0], ACC[0], reac, tree_rows, self.tree.layout)
        return out

    def _flex_fd_plan(self, P):
        """What :meth:`_flex_forward_dynamics` reads once per model revision, projector,
        row selection and :attr:`_FlexCutConstraints.compiled_flex` switch, or None (not
        :meth:`_flex_parts`): ``(the arguments of
        :func:`._nbflexblock.flex_loop_forward_dynamics` before ``smp``, the kept part of
        ``smp`` (wrench scratch, body rows, scratch, tree reactions, cut wrenches,
        violations), the shapes of the accelerations, multipliers, body accelerations and
        reactions, the slice of the tree rows in the reactions or None where not
        contiguous, (tree rows, cut rows) int64, the compiled entry (:func:`_call`))``."""
        sel = P.selection()
        memo = getattr(self, "_flex_fd_memo", None)
        key = (self.model.revision, P, self.constraints.compiled_flex)
        if sel is not None and memo is not None and memo[0] == key and memo[1] is sel:
            return memo[2]
        parts = self._flex_parts(P)
        if parts is None:
            return None
        head, sel, rows, solve, _, _, wrench = parts
        nc = len(self.constraints.cuts)
        kept = (
            wrench, *self.flex_body_rows(), np.empty((1, len(self.tree.joint_names), 6)),
            np.empty((1, nc, 6)), np.zeros((1, 3)),
        )  # fmt: skip
        shapes = (
            (1, self.nv),
            (1, self.constraints.m),
            (1, len(self.layout.body_names), 6),
            (len(self.joint_names), 6),
        )
        tree_rows = index_slice(self._tree_rows)
        plan = (
            (*head, sel, *rows, solve, P.rtol, _GUARD),
            kept,
            shapes,
            tree_rows if type(tree_rows) is slice else None,
            (
                np.ascontiguousarray(self._tree_rows, dtype=np.int64),
                np.ascontiguousarray(self._cut_rows_reac, dtype=np.int64).reshape(nc),
            ),
            [None],
        )
        self._flex_fd_memo = (key, sel, plan)
        return plan

    def _flex_sample_arrays(self, parts, Q, QD, TAU, P):
        """``(QDD, LAM, REAC, ACC, CUTF, VIOL)`` of the states ``Q, QD`` (nt, nv; C order)
        with the joint and modal forces ``TAU`` (nt, nv) by one compiled call
        (:func:`._nbflexblock.flex_loop_samples` on :meth:`_flex_parts`' ``parts``): tree
        reactions (nt, tree joints, 6), body accelerations in the layout's rows (nt,
        bodies, 6), cut wrenches (nt, cuts, 6), violations (nt, 3) whose last column is 1
        where the sample is complete (0: the QR decides)."""
        head, sel, rows, solve, _, _, wrench = parts
        nt, nv, c = Q.shape[0], self.nv, self.constraints
        QDD, LAM = np.empty((nt, nv)), np.empty((nt, c.m))
        REAC = np.empty((nt, len(self.tree.joint_names), 6))
        ACC = np.zeros((nt, len(self.layout.body_names), 6))
        CUTF = np.empty((nt, len(c.cuts), 6))
        VIOL = np.zeros((nt, 3))
        smp = (wrench, *self.flex_body_rows(), QDD, LAM, REAC, ACC, CUTF, VIOL)
        _FB.flex_loop_samples(*head, sel, *rows, solve, P.rtol, _GUARD, smp, Q, QD, TAU)
        return QDD, LAM, REAC, ACC, CUTF, VIOL

    def flex_body_rows(self) -> tuple[Array, Array]:
        """The body rows and scratch of the compiled samples of a loop through flexible
        bodies.

        ``(body_row, scratch)`` of :func:`._nbflexblock.flex_loop_samples`: ``body_row``
        (N + 1,) int64 the row in ``layout.body_names`` of the tree's body of label ``k``
        (labels 1 to N; entry 0 unused), and a scratch (N + 1, 6) of the tree's body
        accelerations in label order; kept per model revision."""
        key = self.model.revision
        memo = getattr(self, "_flex_rows_memo", None)
        if memo is not None and memo[0] == key:
            return memo[1]
        names = self.layout.body_names
        tree = self.tree
        n1 = tree.n_bodies + 1
        rows = np.zeros(n1, dtype=np.int64)
        for k in range(1, n1):
            rows[k] = names.index(tree.label_bodies[k].name)
        out = (rows, np.zeros((n1, 6)))
        self._flex_rows_memo = (key, out)
        return out

    def flex_sample_work(self, P: Projector) -> tuple | None:
        """The kept part of the compiled samples' arguments of a loop through flexible
        bodies, or None.

        ``(wrench scratch, body_row, scratch)``: the start of the sample rows ``smp`` of
        :func:`._nbflexblock.flex_loop_rk4_block` and
        :func:`._nbflexblock.flex_loop_samples` (the rows follow) for the projector
        ``P``'s rows; None where :meth:`_flex_parts` does not apply."""
        parts = self._flex_parts(P)
        return None if parts is None else (parts[6], *self.flex_body_rows())

    def _flex_project_rows(self, Y, P, status):
        """:meth:`project_rows` of a loop through flexible bodies
        (:func:`._nbflexblock.flex_correct_rows`) where :meth:`_flex_parts` applies; the
        status per row, all 1 (not done) else."""
        parts = self._flex_parts(P)
        if parts is None or not Y.flags.c_contiguous or Y.dtype != float:
            return status
        head, sel, rows, _, zv, cw, _ = parts
        _FB.flex_correct_rows(
            head[0], *rows, zv, sel, P.position_tol, P.max_newton, P.rtol, _GUARD, cw, Y, status
        )
        return status

    def _flex_parts(self, P):
        """What the compiled blocks and samples of a loop through flexible bodies take
        (:mod:`._nbflexblock`): ``(flex_forward_dynamics' arguments (T ... info), the
        projector's rows, flex_cuts_eval's (sI ... out), solve scratch, zeros (nv,),
        correct_work, wrench scratch)``, or None: :attr:`flex_compiled` off, not
        :meth:`_flex_direct`, ``nq != nv``, drivers, a retraction other than ``q += dv``,
        no row selection yet. The scratch is allocated per row count and kept."""
        sel = P.selection() if self.flex_compiled else None
        if sel is None:
            return None
        head = (self.tree.flex.work, *self.tree.flex_single_args())
        c = self.constraints
        ok = (
            self._flex_direct()
            and self.tree.nq == self.tree.nv
            and c.compiled_retraction
            and not c.drivers
        )
        if not ok:
            return None
        nv, m, k = self.nv, c.m, sel.shape[0]
        kept = getattr(self, "_flex_block_ws", None)
        stiff = self._stiff_loop
        if kept is None or kept[0] != (k, m, stiff):
            wrench = self._flex_wrench_work()
            solve = (
                np.empty(nv), np.zeros((1, 6)), np.empty((nv, k)), np.empty((nv, k)),
                np.empty((k, nv)), np.empty((k, nv)), np.zeros((k, k)), np.empty(k),
                np.empty(k), np.empty(k), np.empty(nv), np.empty(m), np.empty((4, 2 * nv)),
                np.empty(2 * nv), np.empty(2 * nv), stiff, self._flex_stiff_work(wrench),
            )  # fmt: skip
            ws = (c.flex_outputs(), solve, np.zeros(nv), _NL.correct_work(nv, m, k), wrench)
            kept = self._flex_block_ws = ((k, m, stiff), ws)
        out, solve, zv, cw, wrench = kept[1]
        sI, sC, sFt, sFs, _ = c.sides()
        work, (cI, E, F, G), pspeeds = c.flex_work()
        rows = (sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work, out)
        return head, sel, rows, solve, zv, cw, wrench

    def _flex_wrench_work(self):
        """Scratch of the cut wrenches' application (:func:`._nbflexcut.cut_items`,
        :func:`._nbflexcut.flex_frame_wrenches`): ``(items (2 nc, 10), zq (nmax,), w6,
        Rb (3, 3), rb (3,))``."""
        nc = len(self.constraints.cuts)
        return (
            np.zeros((2 * nc, 10)), np.zeros(max(self.tree.flex.nmax, 1)),
            np.zeros((_FC.NW6, 6)), np.zeros((3, 3)), np.zeros(3),
        )  # fmt: skip

    def _flex_stiff_work(self, wrench):
        """Scratch ``sw`` of :func:`._nbflexcut.flex_loop_stiffening` (its arrays after the
        wrench scratch ``wrench`` of :meth:`_flex_wrench_work`, which it shares)."""
        nv, m, nc = self.nv, self.constraints.m, len(self.constraints.cuts)
        return (
            *wrench, np.zeros((nc, 6)), np.empty(nv), np.empty(nv), np.empty(m), np.empty(m),
            np.empty(m), np.empty(m), np.empty((m, m)), np.zeros(m, dtype=np.int64),
        )  # fmt: skip

    def _flex_samples(self, q, qd, taus, P, out, done):
        """:meth:`_compiled_samples` of a loop through flexible bodies: the samples not
        ``done`` (a mask) by one compiled call (:func:`._nbflexblock.flex_loop_samples`)
        where :meth:`_flex_parts` applies; the mask ``done`` with those done."""
        todo = np.flatnonzero(~done)
        parts = self._flex_parts(P) if len(todo) else None
        if parts is None:
            return done
        nt = len(todo)
        TAU = np.zeros((nt, self.nv))
        for a, i in enumerate(todo):
            if taus[i] is not None:
                TAU[a] = taus[i]
        if nt == q.shape[0]:
            Q, QD = np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(qd, dtype=float)
        else:
            Q = np.ascontiguousarray(q[todo], dtype=float)
            QD = np.ascontiguousarray(qd[todo], dtype=float)
        QDD, LAM, REAC, ACC, CUTF, VIOL = self._flex_sample_arrays(parts, Q, QD, TAU, P)
        ok = VIOL[:, 2] == 1.0
        a = index_slice(np.flatnonzero(ok))
        idx = index_slice(todo[ok])
        self._put_samples(idx, QDD[a], LAM[a], REAC[a], ACC[a], CUTF[a], VIOL[a], out)
        done[idx] = True
        return done

    def _given_samples(self, given, out, done):
        """The rows of the output samples that the compiled RK4 steps wrote (``given``:
        :meth:`_LoopStepper.fused_samples`, rows complete where ``viol[:, 2]`` is 1) into
        the result arrays ``out`` (:meth:`_put_samples`); the mask ``done`` with them."""
        n = min(len(done), len(given["viol"]))
        idx = index_slice(np.flatnonzero(given["viol"][:n, 2] == 1.0))
        done[idx] = True
        rows = ("qdd", "lam", "reac", "acc", "cutF")
        self._put_samples(idx, *(given[k][idx] for k in rows), given["viol"][idx], out)
        return done

    def accelerations(
        self,
        q: ArrayLike,
        qd: ArrayLike,
        tau: Any | None = None,
        t: float = 0.0,
        projector: Projector | None = None,
        compiled: bool = False,
    ) -> tuple[Array, Array]:
        """``(qdd, lam)``: constrained accelerations and multipliers (no reactions).

        ``compiled=True``: one compiled call (:func:`._nbsingle.loop_accelerations_kept`)
        where it applies (rigid tree, gravity, a regular configuration after a
        correction); the same equations, agreeing to round-off. Loops through flexible
        bodies take their compiled call (:func:`._nbflexcut.flex_loop_accelerations`) in
        the same cases unless :attr:`flex_compiled` is off."""
        P = projector or self.projector
        if compiled:
            fast = self._compiled_accelerations(q, qd, tau, P, t)
            if fast is not None:
                return fast
        if self._flexible:
            fast = self._flex_accelerations(q, qd, tau, P)
            if fast is not None:
                return fast
        q = np.asarray(q, dtype=float)
        qd = np.asarray(qd, dtype=float)
        self._wrench_element.current = self._applied_cut(q, qd, t)
        try:
            vf = np.array(self._free(q, qd, tau, t), dtype=float)
        finally:
            self._wrench_element.current = []
        if self.constraints.m == 0:
            return vf, np.zeros(0)
        minv = _cached_minv(lambda X: self.tree.solve_mass(q, X))
        qdd, lam = P.accelerations(q, qd, t, vf, minv)
        if self._stiff_loop:
            qdd, lam = self._loop_stiffening(q, qd, tau, t, P, minv, qdd, lam)
        return qdd, lam

    @property
    def _stiff_loop(self):
        fl = getattr(self.tree, "flex", None)
        return bool(self._flexible and fl is not None and fl.any_stiff)

    def _loop_stiffening(
        self, q, qd, tau, t, P, minv, qdd, lam, tol=_FC.LOOP_STIFF_TOL, max_iter=_FC.LOOP_STIFF_ITER
    ):
        """Loop-aware geometric stiffening: the tree solver's stiffening loads (mean-axis
        inertia loads from the body accelerations, interface wrenches) must see the
        cut-joint wrenches and the constrained accelerations.

        ``g(lam)``: the tree solved with the cut-joint wrenches of ``lam`` applied (its
        stiffening loads then use those wrenches and its own accelerations), projected on
        the constraints, gives the multiplier correction ``dlam``; the loop-aware solution
        is ``g(lam) = 0``. ``g`` is affine in ``lam`` (the stiffening forces are linear in the
        loads). Fixed-point steps ``lam += g(lam)`` contract with a factor of the order of
        the strain; where a cut joint constrains the flexible body through its stiff
        directions (the out-of-plane rows of a planar loop closed by a universal joint)
        the multipliers are large and the iteration need not contract: then ``g`` is
        solved as the affine map it is (its columns from one evaluation per active row).
        """
        scale = 1.0 + float(np.abs(qdd).max())
        base = self._applied_cut(q, qd, t)
        r0 = self.constraints.n_cut_rows
        Jd = self.constraints.jacobian(q, t)[r0:] if len(self.constraints.drivers) else None
        tau0 = np.zeros(self.nv) if tau is None else np.array(tau, dtype=float)

        def g(lam):
            items = list(base)
            rel = self.constraints.relative(q, qd, t)
            for c, (_R, _d, _V, D, Rc_, pc) in zip(self.constraints.cuts, rel):
                items += self._pair(c, Rc_, pc, D.T @ lam[c.rows])
            tau_k = tau0 if Jd is None else tau0 + Jd.T @ lam[r0:]
            self._wrench_element.current = items
            try:
                v = np.array(self._free(q, qd, tau_k, t), dtype=float)
            finally:
                self._wrench_element.current = []
            return P.accelerations(q, qd, t, v, minv)

        change_prev = np.inf
        for _ in range(max_iter):
            qdd_new, dlam = g(lam)
            change = float(np.abs(qdd_new - qdd).max())
            if change <= tol * scale:
                return qdd_new, lam + dlam
            if change > 0.5 * change_prev:
                break
            lam, qdd, change_prev = lam + dlam, qdd_new, change
        else:
            qdd, dlam = g(lam)
        # affine solve of g(lam) = 0 on the active rows (Newton with exact columns)
        act = np.flatnonzero(dlam != 0.0) if np.any(dlam) else np.arange(len(lam))
        for _ in range(3):
            h = 1e-3 * (1.0 + float(np.abs(lam).max()))
            G = np.empty((len(act), len(act)))
            for j, i in enumerate(act):
                e = lam.copy()
                e[i] += h
                G[:, j] = (g(e)[1][act] - dlam[act]) / h
            step = np.linalg.lstsq(G, -dlam[act], rcond=None)[0]
            lam = lam.copy()
            lam[act] += step
            qdd_new, dlam = g(lam)
            change = float(np.abs(qdd_new - qdd).max())
            qdd = qdd_new
            if change <= tol * scale:
                break
        return qdd, lam + dlam

    # contract: the signature of every formulation's forward_dynamics (flexmbd.dynamics)
    def forward_dynamics(
        self,
        q: ArrayLike,
        qd: ArrayLike,
        tau: ArrayLike | None = None,
        t: float = 0.0,
        projector: Projector | None = None,
    ) -> ForwardDynamics:
        """Accelerations, multipliers and every joint reaction (tree and cut) at one state.

        ``q`` (nq,), ``qd`` (nv,), ``tau`` (nv,) joint forces along the tree speeds,
        ``t`` (s). Returns a :class:`~flexmbd.dynamics.ForwardDynamics` with ``lam``
        (cut-joint rows then drivers, ``constraint_names``), ``projection`` (rank,
        discarded rows) and ``tree`` (the tree solution with the cut-joint wrenches
        applied). Many states: :meth:`forward_dynamics_batch`.
        """
        P = projector or self.projector
        # the compiled loop first: it takes arrays of one state's shapes only (else None)
        if self._flexible:
            fast = self._flex_forward_dynamics(q, qd, tau, P) if self.flex_compiled else None
        else:
            fast = self._compiled_forward_dynamics(q, qd, tau, P, t)
        if fast is not None:
            return fast
        q = np.asarray(q, dtype=float)
        qd = np.asarray(qd, dtype=float)
        if q.ndim != 1 or qd.ndim != 1:
            raise ModelError(
                f"forward_dynamics takes one state (q ({self.nq},), qd ({self.nv},)); got "
                f"{q.shape}, {qd.shape}: use forward_dynamics_batch(Q, QD, TAU) for many"
            )
        qdd, lam = self.accelerations(q, qd, tau, t, P)
        info = P.info.snapshot()
        reac = np.zeros((len(self.joint_names), 6))
        items = self._applied_cut(q, qd, t)  # applied cut-joint forces
        tau_tot = np.zeros(self.nv) if tau is None else np.array(tau, dtype=float)
        if self.constraints.m:
            rel = self.constraints.relative(q, qd, t)
            for c, (R, d, Vrel, D, Rc_, pc) in zip(self.constraints.cuts, rel):
                F = D.T @ lam[c.rows]
                for jf in self._cut_jf.get(c.name, ()):
                    F = F + joint_force_on_cut(c, jf, t, R, d, Vrel)
                reac[self._jindex[c.name]] = F
                items += self._pair(c, Rc_, pc, D.T @ lam[c.rows])
            J = self.constraints.jacobian(q, t)
            r0 = self.constraints.n_cut_rows
            if len(self.constraints.drivers):
                tau_tot += J[r0:].T @ lam[r0:]
        self._wrench_element.current = items
        try:
            fd = self.tree.forward_dynamics(q, qd, tau_tot, t)
        finally:
            self._wrench_element.current = []
        reac[self._tree_rows] = fd.reactions[: len(self._tree_rows)]
        return ForwardDynamics(
            qdd, reac, fd.body_accelerations, self.layout, lam, projection=info, tree=fd
        )

    def forward_dynamics_batch(
        self,
        Q: ArrayLike,
        QD: ArrayLike,
        TAU: ArrayLike | None = None,
        t: float | ArrayLike = 0.0,
        projector: Projector | None = None,
    ) -> ForwardDynamics:
        """:meth:`forward_dynamics` of many states ``Q`` (n, nq), ``QD`` (n, nv), ``TAU``
        (n, nv) / (nv,) / None, ``t`` scalar or (n,): one
        :class:`~flexmbd.dynamics.ForwardDynamics` with a leading state axis
        (``projection`` and ``tree``: lists, one per state)."""
        sizes = (
            self.nv,
            len(self.joint_names),
            len(self.layout.body_names),
            len(self.constraint_names),
        )

        def one(q, qd, tau, t):
            return self.forward_dynamics(q, qd, tau, t, projector)

        return forward_dynamics_states(one, Q, QD, TAU, t, self.nv, sizes, self.layout, True)

    # -- simulation --------------------------------------------------------------------
    def simulate(
        self,
        t_end: float,
        dt: float | None = None,
        integrator: str | None = None,
        q0: ArrayLike | None = None,
        qd0: ArrayLike | None = None,
        t0: float = 0.0,
        rtol: float = 1e-8,
        atol: float = 1e-10,
        projection: str | None = None,
        method: str | None = None,
        tau: Any | None = None,
        t_eval: ArrayLike | None = None,
        substeps: int = 1,
        progress: bool | None = None,
        checkpoint: StrPath | None = None,
        every: int = 100,
        overwrite: bool = False,
        max_step: float = np.inf,
        **unknown: Any,
    ) -> Results:
        """Integrate from the assembled initial state to ``t_end``; returns Results.

        ``integrator``: ``"rk4"`` (fixed step ``dt / substeps``, output every ``dt``)
        or ``"rk45"`` / ``"dop853"`` (adaptive, tolerances ``rtol``/``atol``, output
        every ``dt`` or at ``t_eval``). ``projection``: ``"step"`` (after every RK4
        step; default for RK4) or ``"rhs"`` (before every evaluation; default and
        required for the adaptive ones). ``method`` overrides the constraint method
        for this run (``"qr"``, ``"baumgarte"`` with α = 1/h, β = √2/h, h the
        integration step, ``"moore-penrose"``, ``"none"``). ``tau`` joint forces
        (array or ``tau(t, q, qd)``). ``max_step`` (s): the largest step the adaptive
        integrators attempt (a stiff model's first attempts can reach far beyond the
        stability limit of its stiffest mode). ``progress``: progress bar (None: automatic).
        ``checkpoint``: HDF5 file written every ``every`` output samples with the
        integrator's and the projector's state (:mod:`flexmbd.checkpoint`; continue
        with ``fm.resume(path)``, bit-identical); an existing file is refused unless
        ``overwrite=True``. Unknown options raise :class:`~flexmbd.errors.ModelError`
        listing the valid ones.
        """
        where = f"model {self.model.name!r} (recursive, closed loops): simulate"
        check_options(unknown, self.simulate, where, exclude=("unknown",))
        spec, _ = resolve(integrator, "recursive", dt)
        check_times(t_end, dt, spec, where, t0=t0, every=every)
        integrator = spec.name
        if checkpoint is not None:
            check_checkpoint(checkpoint, overwrite)  # before any work
        st = self.stepper(
            t_end,
            dt=dt,
            integrator=integrator,
            q0=q0,
            qd0=qd0,
            t0=t0,
            rtol=rtol,
            atol=atol,
            projection=projection,
            method=method,
            tau=tau,
            t_eval=t_eval,
            substeps=substeps,
            max_step=max_step,
        )
        # contract: the driver call of every simulate (flexmbd.checkpoint.run)
        return run(
            st,
            t_end,
            checkpoint=checkpoint,
            every=every,
            progress=progress,
            desc=f"{st.integrator} {self.model.name}",
            overwrite=overwrite,
        )

    # contract: the options of simulate, which it passes on (fm.resume rebuilds the
    # stepper from them)
    def stepper(
        self,
        t_end: float,
        dt: float | None = None,
        integrator: str = "rk4",
        q0: ArrayLike | None = None,
        qd0: ArrayLike | None = None,
        t0: float = 0.0,
        rtol: float = 1e-8,
        atol: float = 1e-10,
        projection: str | None = None,
        method: str | None = None,
        tau: Any | None = None,
        t_eval: ArrayLike | None = None,
        substeps: int = 1,
        initial: bool = True,
        max_step: float = np.inf,
    ) -> Any:
        """The integrator of :meth:`simulate` as a stepper (:mod:`flexmbd.checkpoint`);
        ``initial=False`` leaves the state to ``load_state_dict``."""
        options = dict(
            t_end=t_end,
            dt=dt,
            integrator=integrator,
            t0=t0,
            rtol=rtol,
            atol=atol,
            projection=projection,
            method=method,
            tau=tau,
            t_eval=t_eval,
            substeps=substeps,
            max_step=max_step,
        )
        integrator = explicit_integrator(integrator, dt, t0, t_end, "LoopSystem.simulate: ")
        adaptive = integrator != "rk4"
        projection = projection or ("rhs" if adaptive else "step")
        if adaptive and projection == "step":
            raise ModelError(
                "adaptive integrators correct the state inside every evaluation: "
                "use projection='rhs'"
            )
        h = dt / int(substeps) if dt is not None else None
        note = "" if adaptive else rk4_stability(self.tree.max_modal_frequency(), h, 3)
        opts = dict(self._options)
        if method is not None:
            opts["method"] = method
        if opts["method"] == "baumgarte" and opts["h"] is None:
            opts["h"] = h if h is not None else 1e-3
        P = Projector(self.constraints, **opts)
        st = _LoopStepper(
            self,
            P,
            projection,
            tau,
            t_end,
            dt=dt,
            integrator=integrator,
            t0=t0,
            rtol=rtol,
            atol=atol,
            t_eval=t_eval,
            substeps=substeps,
            max_step=max_step,
        )
        st.options = json_options(options)
        st.stability_note = note
        if initial:
            if q0 is None and qd0 is None:
                q, qd = self.initial_state(t=t0)
            else:
                q, qd = self.initial_state(q0, qd0, t=t0)
            st.start(np.concatenate([q, qd]))
        return st

    def violations(self, q: Array, qd: Array, t: float) -> tuple[float, float, Array]:
        """``(position violation, velocity violation, J)`` at one state: the max-norms of
        ``Phi(q, t)`` (m,; m or rad) and ``J qd + Phi_t`` (m,; m/s or rad/s), and the
        constraint Jacobian ``J`` (m, nv) they used."""
        phi = self.constraints.phi(q, t)
        J = self.constraints.jacobian(q, t)
        pv = np.abs(phi).max(initial=0.0)
        vv = np.abs(J @ qd + self.constraints.phi_t(q, t)).max(initial=0.0)
        return float(pv), float(vv), J

    def results_from(
        self,
        t: Array,
        y: Array,
        tau_f: Any,
        meta: dict,
        P: Projector,
        safe: bool = False,
        given: dict | None = None,
        samples: dict | None = None,
    ) -> Results:
        """:class:`~flexmbd.Results` of the output samples ``t`` (nt,), states ``y``
        (nt, nq + nv) (accelerations, every reaction, multipliers, projection statistics
        evaluated per sample, or taken from ``given``: the rows the compiled RK4 steps
        wrote, or from ``samples``: ``{i: (position violation, velocity violation,
        ForwardDynamics)}`` the stepper evaluated at sample ``i``; ``safe``: failures
        leave NaN rows)."""
        nq, nv, m = self.nq, self.nv, self.constraints.m
        nt = len(t)
        q, qd = y[:, :nq], y[:, nq:]
        # (rows the compiled samples do not write are NaN, set after them: no fill of
        # the whole (nt, joints, 6) arrays)
        qdd = np.empty((nt, nv))
        reac = np.empty((nt, len(self.joint_names), 6))
        lam = np.empty((nt, m))
        stats = {k: np.zeros(nt, dtype=int) for k in ("rank", "regular_rank", "n_weak")}
        stats["discarded"] = np.zeros((nt, m), dtype=bool)
        stats["position_violation"] = np.zeros(nt)
        stats["velocity_violation"] = np.zeros(nt)
        extra = {}
        viol = np.zeros(2)
        acc = np.empty((nt, len(self.layout.body_names), 6))
        const = getattr(tau_f, "constant", False)  # (None or an array: no call per sample)
        taus = [tau_f(t[i], q[i], qd[i]) for i in range(nt)] if const is False else [const] * nt
        done = self._compiled_samples(q, qd, taus, P, qdd, reac, lam, stats, acc, given)
        if not done.all():
            for a in (qdd, reac, lam, acc):
                a[~done] = np.nan
        for i in np.flatnonzero(~done).tolist():  # (the compiled rows are in place)
            if samples is not None and i in samples:
                pv, vv, fd = samples[i]
                viol[:] = pv, vv
            else:
                fd = self._compiled_sample(q[i], qd[i], taus[i], P, viol, t[i])
            if fd is None:
                pv, vv, J = self.violations(q[i], qd[i], t[i])
                viol[:] = pv, vv
                if m and P.method in ("qr",):
                    P.basis(q[i], t[i], J=J)  # a corrected state: rows and rank
                try:
                    fd = self.forward_dynamics(q[i], qd[i], taus[i], t[i], P)
                except FlexmbdError:
                    if not safe:
                        raise
                    stats["position_violation"][i], stats["velocity_violation"][i] = viol
                    continue
            stats["position_violation"][i], stats["velocity_violation"][i] = viol
            _put_sample(i, fd, qdd, reac, lam, acc, stats)
        if const is None or (const is False and all(x is None for x in taus)):
            tau = None
        elif const is not False:
            tau = np.tile(np.asarray(const, dtype=float), (nt, 1))
        else:
            tau = np.array([np.zeros(self.nv) if x is None else x for x in taus], dtype=float)
        # the joint series of the cut joints take these exact body accelerations
        # (fill_joint_states asks body_accelerations with the results' arrays)
        qdd0 = np.where(np.all(np.isfinite(qdd), axis=1)[:, None], qdd, 0.0)
        self._accel_memo = (
            None if self._flexible else (self.model.revision, q.copy(), qd.copy(), qdd0, acc)
        )
        if given is not None and "en" in given:
            # the samples' own kinematics rows: the energies and the cut joints' series
            # read them instead of a kinematics pass per sample
            hist = (given[k] for k in ("rw", "pw", "vel", "en"))
            self.tree.keep_history(q, qd, *hist, given["viol"][:, 2] == 1.0)
        energy = energy_histories(self, t, q, qd, tau)
        extra["lambda"] = lam
        bodies = body_series(self.tree, q)
        for k, d in enumerate(self.constraints.drivers):
            extra[f"driver:{d.name}"] = lam[:, self.constraints.n_cut_rows + k]
        fields = dict(energy=energy, stats=stats, extra=extra, meta=meta, bodies=bodies)
        return Results.from_system(self, t, q, qd, qdd, reac, **fields)


def _loop_parts(info, qdd, acc, reac, rows, layout):
    """``(projection, tree)`` of a compiled loop's result
    (``flexmbd.dynamics.DEFERRED``): the projection statistics of the call's
    record ``info`` (:meth:`ProjectionInfo.record`, its own ``discarded`` mask) and the
    spanning tree's solution (accelerations ``qdd``, body accelerations ``acc``, the
    tree's ``layout``, no multipliers) whose reactions are the tree rows ``rows`` of the
    reactions ``reac`` (a slice: a read-only view) or the array ``rows`` the call owns."""
    if type(rows) is slice:
        rows = reac[rows]
        rows.flags.writeable = False
    tree = forward_dynamics_result(qdd, rows, acc, layout, _NO_LAM)
    return ProjectionInfo.from_record(info), tree


def _put_sample(i, fd, qdd, reac, lam, acc, stats):
    """Row ``i`` of the result arrays (accelerations, reactions, multipliers, body
    accelerations, projection statistics) from the ForwardDynamics ``fd``."""
    qdd[i], reac[i], lam[i] = fd.qdd, fd.reactions, fd.lam
    acc[i] = fd.body_accelerations
    stats["rank"][i], stats["regular_rank"][i] = fd.rank, fd.regular_rank
    stats["n_weak"][i] = fd.n_weak
    if lam.shape[1]:
        stats["discarded"][i] = fd.discarded


#: the sample rows of the compiled RK4 steps in their kernels' argument order
#: (:func:`._nbloops.loop_rk4_block`, :func:`._nbloops.loop_rk4_step_sampled`)
_SAMPLE_ROWS = ("qdd", "lam", "reac", "acc", "cutF", "viol", "en", "rw", "pw", "vel")

# scipy's step-size control constants (scipy.integrate._ivp.rk)
_SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0


def _cached_minv(minv):
    """``minv`` that returns the last columns again for the same right-hand side (the
    loop-stiffening iteration projects with the same constraint rows at one state)."""
    memo = {}

    def f(X):
        X = np.asarray(X, dtype=float)
        key = memo.get("X")
        if key is not None and key.shape == X.shape and np.array_equal(key, X):
            return memo["Y"]
        Y = minv(X)
        memo["X"], memo["Y"] = X.copy(), Y
        return Y

    return f


def _pair(c, Rc_, pc, F):
    """Wrench F (child axes at the child-frame origin) on C and its opposite on P."""
    n = Rc_ @ F[:3]
    f = Rc_ @ F[3:]
    return [(c.joint.child, pc, n, f), (c.joint.parent, pc, -n, -f)]


def _compiled_dop853():
    """The class :class:`_CompiledDOP853` (built on first use: scipy is imported lazily)."""
    return _compiled_rk("DOP853")


@functools.cache
def _compiled_rk(name: str):
    """scipy's solver class ``name`` (``"DOP853"``, ``"RK45"``, ``"RK23"``) whose steps
    (stages, error norm, step-size control: its ``_step_impl``) run in one compiled call
    (:func:`._nbloops.loop_rk_step`) while the last QR's rows hold; a step where they do
    not, or where a solve fails, is redone by scipy's own code with the stepper's
    right-hand side (the projector's QR decides there). DOP853's dense output runs its
    three extra stages in one compiled call as well. The solver state is scipy's
    (``loop_stepper`` is set by :meth:`_LoopStepper._make_solver`). Built on first use:
    scipy is imported lazily."""
    import scipy.integrate as si

    Solver = getattr(si, name)
    attrs = {"loop_stepper": None, "handed_back": None, "_step_impl": _compiled_step_impl(Solver)}
    attrs["__doc__"] = f"scipy's {name} with its steps by :func:`._nbloops.loop_rk_step`."
    if name == "DOP853":
        attrs["_dense_output_impl"] = _dop853_dense_output_impl
        attrs["Interpolant"] = _dop853_interpolant()
    else:  # (the interpolant of a dense output a compiled block computed)
        from scipy.integrate._ivp.rk import RkDenseOutput

        attrs["Interpolant"] = RkDenseOutput
    return type(f"_Compiled{name}", (Solver,), attrs)


def set_clock(table: tuple, t: float) -> None:
    """Write the time ``t`` (s) into the clock of the force table ``table`` (the time
    its users' compiled laws read: :func:`._nbforces.set_clock`)."""
    fi, ff = table[0], table[1]
    ff[fi[:, 0] == _NF.ULAW, 0] = t


def _loop_selection(solver):
    """``(stepper, compiled arguments, projector, rows)`` of a compiled solver's loop
    stepper; ``rows`` (the last QR's selection) is None where scipy's own code must run:
    no compiled right-hand side, a state the QR has to decide, or per-component
    tolerances."""
    st = solver.loop_stepper
    c = st.system.compiled_rk4(clock=True) if st is not None else None
    P = st.P if st is not None else None
    sel = P.selection() if c is not None and not st.qr_seen else None
    if np.ndim(solver.atol) or np.ndim(solver.rtol):
        sel = None
    return st, c, P, sel


def _compiled_step_impl(Solver):
    """The ``_step_impl`` of :func:`_compiled_rk`'s class on scipy's solver class ``Solver``."""

    def _step_impl(self):
        st, c, P, sel = _loop_selection(self)
        if self.handed_back is not None:  # the step a compiled block handed back
            (status, nfev), self.handed_back = self.handed_back, None
            return _redo_step(self, Solver, st, status, nfev)
        if sel is None:
            return Solver._step_impl(self)
        t = self.t
        n = self.y.shape[0]
        min_step = 10 * np.abs(np.nextafter(t, self.direction * np.inf) - t)
        y_new, f_new, out = np.empty(n), np.empty(n), np.zeros(4)
        tau = st.constant_tau(c)
        A, E3, E5 = rk_tableau(self)
        args = (
            c[0], c[1], c[2], c[3], tau, sel, P.position_tol, P.max_newton, P.rtol, _GUARD,
            c[5], c[6], float(t), np.ascontiguousarray(self.y, dtype=float),
            np.ascontiguousarray(self.f, dtype=float), float(self.h_abs), float(self.t_bound),
            float(self.direction), float(min_step), float(self.max_step), float(self.rtol),
            float(self.atol), A, self.B, self.C, E3, E5, self.K, _SAFETY,
            _MIN_FACTOR, _MAX_FACTOR, float(self.error_exponent), y_new, f_new, out,
        )  # fmt: skip
        rows = st.step_rows(sel)
        if rows is None:
            status = _NL.loop_rk_step(*args)
        else:  # the output sample at the accepted state in the same call
            k = rows["n"]
            status = _NL.loop_rk_step_sampled(*args, c[7], c[8], k, st.i + 1, *rows["out"])
            if status == 0:
                rows["n"] = k + 1
        if status != 0:
            return _redo_step(self, Solver, st, status, int(out[3]))
        self.nfev += int(out[3])
        P.selection_used()
        self.h_previous = float(out[2])
        self.y_old = self.y
        self.t = float(out[0])
        self.y = y_new
        self.h_abs = float(out[1])
        self.f = f_new
        return True, None

    return _step_impl


def _redo_step(solver, Solver, st, status, nfev):
    """A compiled step that returned the nonzero ``status`` after ``nfev`` evaluations:
    scipy's "too small" failure (-1), else the step redone by scipy's ``Solver`` code with
    the QR at every evaluation from now on (the loop stepper ``st``); a loop through
    flexible bodies (:meth:`_LoopStepper._flex_solver_block`) redoes it on ``_f``, whose
    compiled evaluations hand over to the QR one at a time, as scipy's steps there do."""
    solver.nfev += nfev
    if status == -1:
        return False, solver.TOO_SMALL_STEP
    if not st.system.flex_compiled:  # (a flexible loop's evaluations hand over one by one)
        st.qr_seen = True
    return Solver._step_impl(solver)


#: RK45 / RK23 have one error estimator: :func:`._nbloops.loop_rk_step` takes an empty E3
_NO_E3 = np.zeros(0)
#: no quaternion coordinates (:func:`._nbtimed.timed_block`; an adaptive loop has nq == nv)
_NO_QOFF = np.zeros(0, dtype=np.int64)
#: no extra stages of a dense output (RK45, RK23: :func:`._nbloops.loop_rk_block_dense`)
_NO_EXTRA = np.zeros((0, 1))


@functools.cache
def _dop853_interpolant():
    """scipy's DOP853 interpolant evaluated by one compiled call
    (:func:`._nbloops.dop853_interpolate`: the same operations per element, so the
    same values; a call from Python costs a few us instead of scipy's loop of array
    operations)."""
    from scipy.integrate._ivp.rk import Dop853DenseOutput

    def _call_impl(self, t):
        ts = np.atleast_1d(np.asarray(t, dtype=float))
        out = np.empty((ts.shape[0], self.y_old.shape[0]))
        _NL.dop853_interpolate(float(self.t_old), float(self.h), self.y_old, self.F, ts, out)
        return out[0] if np.ndim(t) == 0 else out.T

    return type("_CompiledDenseOutput", (Dop853DenseOutput,), {"_call_impl": _call_impl})


def _dop853_dense_output_impl(self):
    """scipy's DOP853 dense output of the last step with its three extra stages and the
    interpolant's coefficients in one compiled call (:func:`._nbloops.loop_dop853_dense`)
    while the last QR's rows hold; else, or where a stage's solve fails, scipy's own code
    (the stepper's right-hand side)."""
    from scipy.integrate import DOP853

    st, c, P, sel = _loop_selection(self)
    if sel is None:
        return DOP853._dense_output_impl(self)
    F = np.empty((self.D.shape[0] + 3, self.n))
    status = _NL.loop_dop853_dense(
        c[0], c[1], c[2], c[3], st.constant_tau(c), sel, P.position_tol,
        P.max_newton, P.rtol, _GUARD, c[5], c[6], float(self.t_old),
        float(self.h_previous), np.ascontiguousarray(self.y_old, dtype=float),
        np.ascontiguousarray(self.y, dtype=float),
        np.ascontiguousarray(self.f, dtype=float), self.K_extended, self.A_EXTRA,
        self.C_EXTRA, self.D, F,
    )  # fmt: skip
    if status != 0:
        st.qr_seen = True
        return DOP853._dense_output_impl(self)
    self.nfev += len(self.A_EXTRA)  # as scipy's counted evaluations
    P.selection_used()
    return self.Interpolant(self.t_old, self.t, self.y_old, F)


class _LoopStepper(ExplicitStepper):
    """Explicit integration of a :class:`LoopSystem` (stepper contract of
    :mod:`flexmbd.checkpoint`): RK4 with the position and velocity correction after
    every substep, or an adaptive pair with the correction inside every evaluation;
    the projector's memory (regular rank, last weak directions, selected rows) is part
    of the saved state."""

    n_out_rule = "floor"
    t_eval_tol = 1e-12
    record_wall = True
    #: adaptive steps in compiled blocks (:meth:`_solver_block`); False: one compiled call
    #: per step (the same numbers, bit for bit)
    step_blocks = True
    #: a loop through flexible bodies: RK4 in compiled blocks of output intervals
    #: (:meth:`_flex_rk4_block`), the adaptive steps in compiled blocks
    #: (:meth:`_flex_solver_block`; with ``step_blocks = False`` scipy's steps, their
    #: right-hand side in one compiled call, :meth:`LoopSystem.flex_rhs`); False: the
    #: Python steps and evaluations on the same compiled stages and corrections (the same
    #: numbers, bit for bit)
    flex_blocks = True
    #: with output times: the samples there in the compiled blocks
    #: (:meth:`_solver_dense_block`); False: the blocks stop at each output time and the
    #: samples are evaluated after the run (the same numbers, bit for bit)
    dense_blocks = True
    #: adaptive steps of a loop whose loads include Python functions of time in compiled
    #: attempts (:meth:`_timed_solver_block`); False: scipy's steps on
    #: :meth:`_compiled_f` (the reference, the same numbers bit for bit)
    timed_blocks = True
    _timed_failed = None  # the solver time of a step whose functions of time failed

    def __init__(self, system, P, projection, tau, t_end, **kw):
        super().__init__(system, t_end, **kw)
        self.P = P
        self.projection = projection
        self.use_proj = P.method in ("qr", "moore-penrose")
        self.tau_f = tau_function(tau, system.nv)
        self.options = {}
        # the compiled RK4 steps: constant joint forces, projection after every step
        self._tau = None if tau is None or callable(tau) else np.array(tau, dtype=float)
        self._fast_rk4 = (
            not self.adaptive
            and (tau is None or not callable(tau))
            and self.projection == "step"
            and P.method == "qr"
        )
        # the adaptive ones: the compiled correction and accelerations per evaluation
        self._fast_rhs = (
            self.adaptive
            and (tau is None or not callable(tau))
            and self.projection == "rhs"
            and P.method == "qr"
            and self.nq == system.nv
        )
        #: the output samples given by the compiled RK4 steps (their first stage is the
        #: forward dynamics at the sample): built on the first step (:meth:`_sample_rows`)
        self._fused = None
        #: the adaptive run met a state where the QR must decide (a rank change, a singular
        #: configuration, a failed solve): from then on it keeps the QR at every evaluation,
        #: so that its error control sees the rank changes (a stall at a singular
        #: configuration is reported, not crossed); also from a start at or next to a
        #: singular configuration (:meth:`LoopSystem.rank_is_stable`)
        self.qr_seen = False
        #: the output samples at weak states evaluated by the generic RK4 step, whose
        #: first stage is that sample's forward dynamics (:meth:`_weak_sample_stage`)
        self._weak_samples = {}
        #: an adaptive run that outputs every accepted step (``dt`` and ``t_eval`` None):
        #: the compiled DOP853 step writes that sample (:meth:`step_rows`)
        self._every_step = self._fast_rhs and self.t_eval is None and self.use_proj
        #: a run with output times whose compiled blocks write the samples there
        #: (:meth:`_solver_dense_block`)
        self._dense_out = self._fast_rhs and self.t_eval is not None and self.use_proj
        self._steps = None
        #: the last compiled evaluation in such a run: ``(y, rows, f, (corrected y, lam),
        #: compiled arguments, tau)``
        self._last_eval = None
        self._kept = None

    def _f(self, t, y):
        if self._fast_rhs and not self.qr_seen:
            if self.system.flex_compiled:  # (a loop through flexible bodies)
                out = self.system.flex_rhs(y, self._tau, self.P) if self.flex_blocks else None
            else:
                out = self._compiled_f(t, y)
            if out is not None:
                return out
        nq = self.nq
        qq, vv = y[:nq], y[nq:]
        if self.projection == "rhs" and self.use_proj:
            # the QR at every evaluation: an adaptive step's error control must see the
            # rank changes (a stall at a singular configuration is reported, not crossed);
            # a loop through flexible bodies takes its compiled correction between two QRs,
            # which hands over to the QR where the rank decision is not clear
            if self.system.flex_compiled:
                qq, vv = self.system.project(qq, vv, t, self.P)
            else:
                qq, vv = self.P.correct(qq, vv, t)
        acc, _ = self.system.accelerations(qq, vv, self.tau_f(t, qq, vv), t, self.P)
        return np.concatenate([self.system.tree.qdot(qq, vv), acc])

    def _make_solver(self, y0):
        """scipy's solver; DOP853, RK45 and RK23 with their steps by the compiled loop
        (:func:`_compiled_rk`) where the right-hand side is compiled."""
        if self._fast_rhs and not self.system.rank_is_stable(y0[: self.nq], self.t0):
            self.qr_seen = True  # a singular start: the QR at every evaluation
        name, _ = self._solver_class()
        if not (self._fast_rhs and name in ("DOP853", "RK45", "RK23")):
            return ExplicitStepper._make_solver(self, y0)
        kw = {} if self.max_step is None else {"max_step": self.max_step}
        solver = _compiled_rk(name)(
            self._f, self.t0, y0, self.t_end, rtol=self.rtol, atol=self.atol, **kw
        )
        solver.loop_stepper = self
        return solver

    def constant_tau(self, c: tuple) -> Array:
        """The joint forces (nv,) of the compiled kernels: the run's constant ``tau``, or
        the zero vector of the compiled arguments ``c`` (:meth:`LoopSystem.compiled_rk4`)."""
        return c[4] if self._tau is None else self._tau

    def _compiled_f(self, t, y):
        """The right-hand side at the time ``t`` (s) by the compiled loop
        (:func:`._nbloops.loop_rhs`: the compiled correction on the rows of the last QR,
        with its rank check, and the accelerations), or None where the projector's QR
        must decide (rank changes, singular configurations, no selection yet, a failed
        solve). Loads that are Python functions of time are evaluated at ``t`` first
        (:meth:`LoopSystem.set_time`): such a run takes scipy's own steps (the compiled
        steps and blocks set only a clock per stage, :func:`_loop_selection`) on this
        compiled right-hand side."""
        c = self.system.compiled_rk4(timed=True)
        sel = self.P.selection() if c is not None else None
        if sel is None:
            return None
        self.system.set_time(c, t)  # (the values of time at t: scipy's stage time)
        y = np.ascontiguousarray(y, dtype=float)
        out = np.empty(y.shape[0])
        P = self.P
        tau = self.constant_tau(c)
        args = (
            c[0], c[1], c[2], c[3], y, tau, sel, P.position_tol, P.max_newton, P.rtol,
            _GUARD, c[5], c[6], out,
        )  # fmt: skip
        if self._every_step:  # keep the corrected state for the sample after the step
            kept = self._kept or self._kept_ws(y.shape[0], c[5][0].shape[0])
            st = _NL.loop_rhs_keep(*args, *kept)
            self._last_eval = (y, sel, out, kept, c, tau) if st == 0 else None
        else:
            st = _NL.loop_rhs(*args)
        if st != 0:
            self.qr_seen = True
            return None
        P.selection_used()
        P.regular_state(sel)
        return out

    def _kept_ws(self, n, m):
        """The corrected state (n,) and multipliers (m,) of the last compiled evaluation
        (one pair per run: only the step's last evaluation is read)."""
        ws = self._kept
        if ws is None or ws[0].shape[0] != n or ws[1].shape[0] != m:
            ws = self._kept = (np.empty(n), np.empty(m))
        return ws

    def _solver_block(self):
        """A compiled block of adaptive steps (:meth:`ExplicitStepper._solver_block`):
        :func:`._nbloops.loop_rk_block`, or with a sample at every accepted step
        :func:`._nbloops.loop_rk_block_sampled` (its rows in :meth:`step_rows`), where
        the compiled step (:func:`_compiled_rk`) would take the next step; a loop through
        flexible bodies: :meth:`_flex_solver_block`; None else (scipy's own step, a step
        handed back pending). A step the block hands back is redone by the solver's
        ``step()`` with the block's status and evaluations (:func:`_redo_step`)."""
        s = self.solver
        if not self.step_blocks or getattr(s, "loop_stepper", None) is not self:
            return None
        if s.handed_back is not None:
            return None
        if self.system.flex_compiled:
            return self._flex_solver_block()
        _, c, P, sel = _loop_selection(s)
        if sel is None:
            return self._timed_solver_block() if self.timed_blocks else None
        head = (c[0], c[1], c[2], c[3], self.constant_tau(c), sel, P.position_tol,
                P.max_newton, P.rtol, _GUARD, c[5], c[6])  # fmt: skip
        return self._block_run(head, (c[7], c[8]))

    def _flex_solver_block(self):
        """:meth:`_solver_block` of a loop through flexible bodies: the block
        :func:`._nbloops.loop_rk_block` with its row evaluator
        (:func:`._nbflexrk.flex_loop_eval`, the evaluations of :meth:`LoopSystem.flex_rhs`)
        where scipy's step would take every evaluation by :meth:`LoopSystem.flex_rhs`
        (:attr:`flex_blocks`, constant ``tau``, the correction inside the evaluations,
        scalar tolerances, no QR at every evaluation); None else. The samples of the
        accepted states are evaluated after the run (:meth:`finalize`), as on scipy's
        steps. A step handed back is redone by scipy's step on :meth:`_f`, whose
        evaluations hand over to the QR one by one (:func:`_redo_step`)."""
        s = self.solver
        if not (self.flex_blocks and self._fast_rhs) or self.qr_seen:
            return None
        if np.ndim(s.atol) or np.ndim(s.rtol):
            return None
        head = self.system.flex_rk_args(self._tau, self.P)
        return None if head is None else self._block_run(head)

    def _block_run(self, head, sample=None):
        """The block ``run(k, t_stop, win, stall)`` of :meth:`_solver_block` with the
        leading arguments ``head`` of :func:`._nbloops.loop_rk_block` (``Ib`` ... the
        reaction workspace); with ``sample = (cut joints' body labels, body rows)`` and
        a run that outputs every step (:meth:`step_rows`), the sampled block."""
        s, P, sel = self.solver, self.P, head[5]
        A, E3, E5 = rk_tableau(s)

        def run(k, t_stop, win, stall):
            rows = self.step_rows(sel, k) if sample is not None else None
            if rows is not None:  # (room for up to k samples, never past the rows' end)
                k = min(k, len(rows["row"]) - rows["n"])
            n = s.y.shape[0]
            ts = np.array([s.t, s.h_abs], dtype=float)
            y, f = np.array(s.y, dtype=float), np.array(s.f, dtype=float)
            Y, REC, out = np.empty((k, n)), np.empty((k, 4)), np.zeros(3)
            args = (
                *head, ts, y, f, float(s.t_bound), float(s.direction), float(s.max_step),
                float(s.rtol), float(s.atol), A, s.B, s.C, E3, E5, s.K, _SAFETY, _MIN_FACTOR,
                _MAX_FACTOR, float(s.error_exponent), k, t_stop, self.n_steps, win, stall, Y,
                REC, out,
            )  # fmt: skip
            if rows is None:
                done = _NL.loop_rk_block(*args)
            else:  # the output sample of each accepted step in the same call
                j0 = rows["n"]
                done = _NL.loop_rk_block_sampled(*args, *sample, j0, self.i + 1, *rows["out"])
                rows["n"] = j0 + done
            if done:
                P.selection_used()
            if out[0] == _NL.BLOCK_HANDBACK:
                s.handed_back = (int(out[1]), int(out[2]))
            return done, Y, REC, f, out

        return run

    def _timed_solver_block(self):
        """:meth:`_solver_block` of a loop whose force table has Python functions of time
        (``JointForce.of_time`` drives, actuators ``fa(t)``, point loads of time), where
        scipy's step on :meth:`_compiled_f` would take the next step: each attempt by one
        compiled call (:func:`._nbtimed.timed_block`, the correction inside each
        evaluation as :func:`._nbloops.loop_rk_block`), the functions evaluated in Python
        at the attempt's stage times (those of scipy's step) and tabulated for it
        (:meth:`LoopSystem.timed_tabulator`); every-step runs write each accepted step's
        sample as :meth:`_after_solver_step` does. None else."""
        s, system = self.solver, self.system
        st, _, P, _ = _loop_selection(s)
        c = system.compiled_rk4(timed=True) if st is self and not self.qr_seen else None
        sel = P.selection() if c is not None else None
        if sel is None or np.ndim(s.atol) or np.ndim(s.rtol):
            return None
        tau = self.constant_tau(c)
        rhs = (c[0], c[1], c[2], c[3], tau, sel, P.position_tol, P.max_newton, P.rtol,
               _GUARD, c[5], c[6])  # fmt: skip
        tab = system.timed_tabulator()

        def tabulate(times):
            return tab(times)[1:]

        def run(k, t_stop, win, stall):
            if self._timed_failed == s.t:  # (handed back here: step() redoes it)
                return 0, None, None, None, np.array([_NL.BLOCK_HANDBACK, 0.0, 0.0])
            rows = self.step_rows(sel, k)
            after = None
            if rows is not None:
                i0 = self.i + 1
                if rows.get("cuts") is None:
                    rows["cuts"] = _NL.cut_arrays(c[2])

                def after(j, y_new, f_new, yc, lam):
                    r = self.step_rows(sel)
                    n = r["n"]
                    _NL.loop_step_sample(
                        c[0], c[1], c[3], rows["cuts"], c[7], tau, sel, P.rtol, _GUARD, c[5],
                        c[8], y_new, yc, lam, f_new, n, i0 + j, *r["out"],
                    )  # fmt: skip
                    r["n"] = n + 1

            done, Y, REC, f, out = got = _NT.timed_block(
                s, rhs, tabulate, _NO_QOFF, k, t_stop, self.n_steps, win, stall, after
            )
            if done:
                P.selection_used()
                P.regular_state(sel)
            if out[0] == _NL.BLOCK_HANDBACK:
                if out[1] != 0:  # (a failed evaluation, a step below scipy's smallest)
                    s.handed_back = (int(out[1]), int(out[2]))
                else:  # a function of time failed: the step by scipy's code meets it
                    self._timed_failed = float(REC[done - 1, 0]) if done else float(s.t)
            return got

        return run

    def _solver_dense_block(self):
        """A compiled block of adaptive steps with the samples at the output times between
        them (:meth:`ExplicitStepper._solver_dense_block`):
        :func:`._nbloops.loop_rk_block_dense` writes each sample's interpolated state (the
        solver's own interpolant: DOP853's, or RK45's / RK23's ``K^T P`` by BLAS as
        scipy's), its correction and sample into :meth:`dense_rows` (what
        :meth:`finalize` would compute for it, :meth:`_kept_step_samples`), where
        :meth:`_solver_block` would run a block; None else."""
        s = self.solver
        if not (self.dense_blocks and self._dense_out):
            return None
        if self._solver_block() is None:
            return None
        _, c, P, sel = _loop_selection(s)
        if sel is None:  # (functions of time: scipy's dense output between the blocks)
            return None
        A, E3, E5 = rk_tableau(s)
        tau = self.constant_tau(c)
        if hasattr(s, "A_EXTRA"):  # DOP853: the extra stages into K_extended, F (7, n)
            Kx, AX, CX, D, nf = s.K_extended, s.A_EXTRA, s.C_EXTRA, s.D, s.D.shape[0] + 3
        else:  # RK45 / RK23: Q = K^T P (n, order + 1) into F, no extra stages
            Kx, AX, CX, D, nf = s.K, _NO_EXTRA, _NO_E3, s.P, s.P.shape[1]

        def run(k, te, win, stall):
            rows = self.dense_rows(sel, len(te))
            j0 = rows["n"]
            te = te[: len(rows["row"]) - j0]  # (never past the rows' end)
            n = s.y.shape[0]
            ts = np.array([s.t, s.h_abs], dtype=float)
            y, f = np.array(s.y, dtype=float), np.array(s.f, dtype=float)
            Y, REC, out = np.empty((k, n)), np.empty((k, 4)), np.zeros(5)
            SJ, DN = np.zeros(len(te), dtype=np.int64), np.zeros(k, dtype=np.int64)
            F = np.empty((nf, n)) if hasattr(s, "A_EXTRA") else np.empty((n, nf))
            done = _NL.loop_rk_block_dense(
                c[0], c[1], c[2], c[3], tau, sel, P.position_tol, P.max_newton, P.rtol,
                _GUARD, c[5], c[6], ts, y, f, float(s.t_bound), float(s.direction),
                float(s.max_step), float(s.rtol), float(s.atol), A, s.B, s.C, E3, E5, s.K,
                _SAFETY, _MIN_FACTOR, _MAX_FACTOR, float(s.error_exponent), k, self.n_steps,
                win, stall, Y, REC, out, Kx, AX, CX, D, F, te, SJ, DN, c[7],
                c[8], j0, self.i + 1, *rows["out"],
            )  # fmt: skip
            m = int(out[3])
            rows["n"] = j0 + m
            if done:
                P.selection_used()
            if out[0] == _NL.BLOCK_HANDBACK:
                s.handed_back = (int(out[1]), int(out[2]))
            return done, Y, REC, f, out, SJ, DN, F, rows["raw"][j0 : j0 + m]

        return run

    def _after_solver_step(self, solver):
        """An adaptive run that outputs every step, by scipy's step code on the compiled
        right-hand side (RK45, RK23): the step's last evaluation was at its accepted
        state (``solver.y``, the same array), so the sample there takes that
        evaluation's correction and multipliers and adds the rest in one compiled call
        (:func:`._nbloops.loop_step_sample`)."""
        last, self._last_eval = self._last_eval, None
        if last is None or last[0] is not solver.y:
            return
        y, sel, f_new, (yc, lam), c, tau = last
        rows = self.step_rows(sel)
        if rows is None:
            return
        k = rows["n"]
        if rows.get("cuts") is None:
            rows["cuts"] = _NL.cut_arrays(c[2])
        _NL.loop_step_sample(
            c[0], c[1], c[3], rows["cuts"], c[7], tau, sel, self.P.rtol, _GUARD, c[5], c[8], y,
            yc, lam, f_new, k, self.i + 1, *rows["out"],
        )  # fmt: skip
        rows["n"] = k + 1

    def step(self):
        """One output interval; RK4 with projection after every step runs its substeps by
        the compiled loop (:func:`._nbloops.loop_rk4_step`) while the configuration stays
        regular and ``tau`` is None or constant, else the generic path."""
        c, _ = self._rk4_args()
        if c is None:
            return super().step()
        tic = _time.perf_counter()
        t_start = self.t0 + self.i * self.dt
        try:
            y = self._fast_substeps(c, t_start, np.array(self.y, dtype=float))
        except FlexmbdError as err:
            raise self._fail(str(err), t_start, t_start + self.dt) from err
        self._accept(y, t_start)
        self.wall += _time.perf_counter() - tic

    def _rk4_args(self):
        """``(arguments of LoopSystem.compiled_rk4(timed=True) or None, whether table
        values are functions of time)`` of the compiled RK4 steps."""
        c = self.system.compiled_rk4(timed=True) if self._fast_rk4 else None
        return c, c is not None and self.system.compiled_rk4() is None

    def _rk4_block(self, n):
        """Up to ``n`` output intervals by one compiled call
        (:func:`._nbloops.loop_rk4_block`: every substep :func:`._nbloops.loop_rk4_step`,
        the first of each interval writing its output sample) while the projector's rows
        hold; None where :meth:`step` decides (no compiled loop or no row selection yet).
        The wall time of the call is spread evenly over its intervals."""
        c, timed = self._rk4_args()
        if c is None:
            return self._flex_rk4_block(n)
        P = self.P
        sel = P.selection()
        if sel is None:
            return None

        def block(y, Y, k):
            f = self._sample_rows(sel)
            TT, tix = self._stage_table(k) if timed else (_NO_TT, _NO_TIX)
            done = _NL.loop_rk4_block(
                c[0], c[1], c[2], c[3], c[7], c[8], y, self.h, self.substeps, k,
                self.constant_tau(c), sel, P.position_tol, P.max_newton, P.rtol, _GUARD, c[5],
                c[6], self.i, *(f[k] for k in _SAMPLE_ROWS), Y, TT, tix,
            )  # fmt: skip
            for j in range(self.i, self.i + done):
                self._weak_samples.pop(j, None)  # intervals redone by the compiled block
            if done:
                P.regular_state(sel)  # its end states were corrected on sel at full rank
            return done

        return self._run_block(n, block)

    def _flex_rk4_block(self, n):
        """:meth:`_rk4_block` of a loop through flexible bodies: up to ``n`` output
        intervals by one compiled call (:func:`._nbflexblock.flex_loop_rk4_block`: the
        stages and corrections of :meth:`LoopSystem.accelerations` and
        :meth:`LoopSystem.project` on the projector's rows, bit for bit) where
        :meth:`LoopSystem.flex_rk4_args` applies (RK4 with the correction after every
        step, constant ``tau``); None else (:meth:`step` decides). The first stage of each
        interval is the forward dynamics at its start: the block writes that output sample
        (:meth:`_sample_rows`, as :func:`._nbflexblock.flex_loop_samples` would after the
        run, bit for bit); the others are evaluated after the run
        (:meth:`LoopSystem.results_from`)."""
        if not (self._fast_rk4 and self.flex_blocks):
            return None
        P = self.P
        a = self.system.flex_rk4_args(self._tau, P)
        kw = None if a is None else self.system.flex_sample_work(P)
        if kw is None:
            return None
        sel = P.selection()

        def block(y, Y, k):
            f = self._sample_rows(sel)
            smp = (*kw, *(f[k] for k in _SAMPLE_ROWS[:6]))
            done = _FB.flex_loop_rk4_block(*a, y, self.h, self.substeps, k, Y, self.i, smp)
            if done:
                P.selection_used()  # (as the stages' calls of accelerations() record)
            return done

        return self._run_block(n, block)

    def _sample_rows(self, sel):
        """The arrays of the output samples that the compiled steps give (one row per
        output time ``t0 + i dt``, :func:`._nbloops.loop_rk4_step_sampled`; the kernels'
        order :data:`_SAMPLE_ROWS`) for the projector's rows ``sel``; rows of another
        selection are dropped (their rank statistics are another QR's). ``en``, ``rw``,
        ``pw``, ``vel``: each sample's row of the tree's kinematics history
        (:func:`._nbforces.sample_history`; none for a loop through flexible bodies, whose
        block :func:`._nbflexblock.flex_loop_rk4_block` writes the first six)."""
        f = self._fused
        if f is not None and np.array_equal(f["sel"], sel):
            return f
        s, n = self.system, self.n_out + 1
        nb, nj = len(s.layout.body_names), len(s.tree.joint_names)
        n1 = s.tree.n_bodies + 1
        f = dict(
            sel=sel.copy(),
            qdd=np.zeros((n, s.nv)),
            lam=np.zeros((n, s.constraints.m)),
            reac=np.zeros((n, nj, 6)),
            acc=np.zeros((n, nb, 6)),
            cutF=np.zeros((n, len(s.constraints.cuts), 6)),
            viol=np.zeros((n, 3)),
        )
        if not s.flex_compiled:  # (a loop through flexible bodies: no history rows)
            # (read only where viol[:, 2] is 1: not zero-filled, ~1.5 MB at N = 100)
            f.update(
                en=np.empty((n, 7)),
                rw=np.empty((n, n1, 3, 3)),
                pw=np.empty((n, n1, 3)),
                vel=np.empty((n, n1, 6)),
            )
        self._fused = f
        return f

    def step_rows(self, sel: Array, need: int = 1) -> dict | None:
        """The arrays the compiled DOP853 / RK45 / RK23 step writes its output sample into
        (:func:`._nbloops.loop_rk_step_sampled`) when the run outputs every accepted
        step, else None: ``row`` (the output row of each), ``raw`` (the solver's states
        before the correction), ``yc`` (the corrected states), ``qdd``, ``lam``, ``reac``,
        ``acc``, ``cutF``, ``viol`` (as :meth:`LoopSystem.project_samples`' rows), ``en``,
        ``rw``, ``pw``, ``vel`` (each complete sample's kinematics history row,
        :func:`._nbforces.sample_history`; ``out``: these in the kernel's order), ``n``
        (rows written), for the projector's rows
        ``sel`` (samples of another selection are dropped: their rank statistics are
        another QR's). Grown by doubling, and to ``min(need, 256)`` free rows for a block
        of steps (larger zeroed arrays cost more than a further block call)."""
        if not self._every_step:
            return None
        return self._rows(sel, need)

    def dense_rows(self, sel: Array, need: int = 1) -> dict:
        """:meth:`step_rows`' arrays for the samples at the output times of a run with
        ``t_eval`` or ``dt`` that the compiled blocks write
        (:func:`._nbloops.loop_rk_block_dense`; ``raw``: the interpolated states)."""
        return self._rows(sel, need)

    def _rows(self, sel, need):
        """The arrays of :meth:`step_rows` with room for ``need`` more rows."""
        f = self._steps
        key = sel.tobytes()  # (~50x cheaper than np.array_equal for these few rows)
        if f is not None and f["key"] == key and f["n"] + need <= len(f["row"]):
            return f
        if f is not None and f["key"] != key:
            f = None
        s, ny = self.system, self.nq + self.nv
        cap = 64 if f is None else 2 * len(f["row"])
        cap = max(cap, min(need, 256) + (0 if f is None else f["n"]))
        shapes = dict(
            raw=(ny,),
            yc=(ny,),
            qdd=(s.nv,),
            lam=(s.constraints.m,),
            reac=(len(s.tree.joint_names), 6),
            acc=(len(s.layout.body_names), 6),
            cutF=(len(s.constraints.cuts), 6),
            viol=(3,),
        )
        n1 = s.tree.n_bodies + 1
        hist = dict(en=(7,), rw=(n1, 3, 3), pw=(n1, 3), vel=(n1, 6))
        g = {k: np.zeros((cap, *sh)) for k, sh in shapes.items()}
        # (the history rows are read only where viol[:, 2] is 1: not zero-filled)
        g.update({k: np.empty((cap, *sh)) for k, sh in hist.items()})
        shapes.update(hist)
        g["row"] = np.zeros(cap, dtype=np.int64)
        g["n"], g["sel"], g["key"] = 0, sel.copy(), key
        if f is not None:
            for k in (*shapes, "row"):
                g[k][: f["n"]] = f[k][: f["n"]]
            g["n"] = f["n"]
        g["out"] = tuple(g[k] for k in ("row", *shapes))
        self._steps = g
        return g

    def fused_samples(self) -> dict | None:
        """The output samples of the compiled steps (:meth:`_sample_rows`; ``viol[:, 2]``
        1 where a row is complete) while the projector keeps their rows, else None."""
        f = self._fused
        sel = self.P.selection()
        if f is None or sel is None or not np.array_equal(f["sel"], sel):
            return None
        return f

    def _fast_substeps(self, c, t_start, y):
        """The substeps of one output interval from ``y``: compiled while the projector's
        selection holds (the first also writes the output sample at ``y``); a step it
        hands back is corrected by the QR (``NEEDS_QR``) or redone by the generic path
        (a failed stage)."""
        P, nq = self.P, self.nq
        tau = c[4] if self._tau is None else self._tau
        for sub in range(self.substeps):
            t = t_start + sub * self.h
            sel = P.selection()
            st = -1
            TT, tix = _NO_TT, _NO_TIX
            if sel is not None and self._rk4_args()[1]:  # the loads at t, t + h/2, t + h
                _, TT, tix = self.system.tabulated_forces([t, t + 0.5 * self.h, t + self.h])
            if sub == 0:
                self._weak_samples.pop(self.i, None)  # a redone interval
            if sel is not None and sub == 0 and self.i <= self.n_out:
                f, i = self._sample_rows(sel), self.i
                st = _NL.loop_rk4_step_sampled(
                    c[0], c[1], c[2], c[3], c[7], c[8], y,
                    self.h, tau, sel, P.position_tol, P.max_newton, P.rtol, _GUARD, c[5],
                    c[6], *(f[k][i] for k in _SAMPLE_ROWS), TT, tix,
                )  # fmt: skip
            elif sel is not None:
                st = _NL.loop_rk4_step(
                    c[0], c[1], c[2], c[3], y, self.h, tau, sel, P.position_tol,
                    P.max_newton, P.rtol, _GUARD, c[5], c[6], TT, tix,
                )  # fmt: skip
            if st == 0:
                P.regular_state(sel)
                continue
            if st == _NL.NEEDS_QR:
                q, v = P.correct(y[:nq], y[nq:], t + self.h)
                y = np.concatenate([q, v])
                continue
            if sel is None and P.weak_state():
                out = self._weak_step(t, y, tau, sub == 0 and self.i <= self.n_out)
                if out is not None:
                    y = out
                    continue
            f = self._f  # the generic step from the same state
            if sel is None and sub == 0 and self.i <= self.n_out and P.weak_state():
                f = self._weak_sample_stage(t, y)
            y = rk4(f, t, y, self.h, 1, callback=self._rk4_callback())
        return y

    def _weak_step(self, t, y, tau, sample):
        """An RK4 substep from the weak state ``y`` at ``t`` by the compiled QR path
        (:meth:`LoopSystem.weak_rk4_step`), then the projector's correction (compiled
        where it applies, :meth:`LoopSystem.weak_correct`); with
        ``sample`` the output sample ``i`` at ``y`` is kept for the results. None where
        the generic step must run."""
        out = self.system.weak_rk4_step(y, self.h, tau, self.P, sample)
        if out is None:
            return None
        y1, smp = out
        if smp is not None:
            self._weak_samples[self.i] = smp
        y2 = self.system.weak_correct(y1, self.P)
        return self._rk4_callback()(0, t + self.h, y1) if y2 is None else y2

    def _weak_sample_stage(self, t, y):
        """The right-hand side of a generic RK4 step from the output sample ``i`` at a weak
        state ``y`` (time ``t``): the sample's forward dynamics (reactions, multipliers,
        projection statistics: what :meth:`LoopSystem.results_from` would evaluate) is
        kept for the results and its accelerations are the step's first stage (the same
        call as :meth:`_f`'s); the other stages are :meth:`_f`'s."""
        s, nq = self.system, self.nq
        q, v = y[:nq], y[nq:]
        pv, vv, _ = s.violations(q, v, t)
        fd = s.weak_forward_dynamics(q, v, self.tau_f(t, q, v), t, self.P)
        self._weak_samples[self.i] = (pv, vv, fd)
        first = [np.concatenate([s.tree.qdot(q, v), fd.qdd])]

        def f(tt, yy):
            return first.pop() if first else self._f(tt, yy)

        return f

    def _rk4_callback(self):
        nq, system, P = self.nq, self.system, self.P
        tree = system.tree
        correct = self.projection == "step" and self.use_proj

        def after_step(i, t, y):
            y[:nq] = tree.normalize(y[:nq])
            if correct:
                qq, vv = system.project(y[:nq], y[nq:], t, P)
                return np.concatenate([qq, vv])
            return y

        return after_step

    def _stall_hint(self, s):
        """Name the singular configuration of the loops at the solver's state (rank of the
        constraint Jacobian against its regular rank, the joint of the weakest direction)."""
        nq = self.nq
        try:
            q, t = s.y[:nq], float(s.t)
            desc = singularity(self.system, q, t, self.P)
        except Exception:  # noqa: BLE001 - advice must never hide the failure
            desc = ""
        return (
            f"{desc}Where the constraint Jacobian loses rank, the projected right-hand "
            "side changes abruptly and the error estimate cannot be met at a tight atol. "
            "Remedies: loosen atol (e.g. 1e-8), or use integrator='rk4' with a fixed dt "
            "(projection='step', position and velocity correction after every step), or "
            "start away from the singular configuration"
        )

    def meta(self):
        s, P = self.system, self.P
        meta = super().meta()
        meta.update(
            constraint_method=P.method,
            projection=self.projection if self.use_proj else "none",
            rank_rtol=P.rtol,
            tangent_projection=P.tangent_projection,
            constraint_names=s.constraint_names,
            cut_joints=[c.name for c in s.constraints.cuts],
        )
        if P.method == "baumgarte":
            meta.update(baumgarte_alpha=P.alpha, baumgarte_beta=P.beta)
        return meta

    def _extra_state(self):
        st = {"projector": projector_state(self.P), "qr_seen": bool(self.qr_seen)}
        if self._weak_samples:
            st["weak_samples"] = self._weak_samples_state()
        return st

    def _load_extra_state(self, st):
        load_projector_state(self.P, st["projector"])
        self.qr_seen = bool(st.get("qr_seen", False))
        self._weak_samples = self._weak_samples_load(st.get("weak_samples"))

    def _weak_samples_state(self):
        """The weak samples (:meth:`_weak_sample_stage`, :meth:`_weak_step`) as arrays for
        a checkpoint: interval index, violations, accelerations, multipliers, reactions,
        body accelerations and projection statistics, one row per sample."""
        items = sorted(self._weak_samples.items())
        fds = [fd for _, (_, _, fd) in items]
        return {
            "i": np.array([i for i, _ in items], dtype=np.int64),
            "viol": np.array([(pv, vv) for _, (pv, vv, _) in items], dtype=float),
            "qdd": np.array([fd.qdd for fd in fds]),
            "lam": np.array([fd.lam for fd in fds]),
            "reactions": np.array([fd.reactions for fd in fds]),
            "acc": np.array([fd.body_accelerations for fd in fds]),
            "ranks": np.array([(fd.rank, fd.regular_rank, fd.n_weak) for fd in fds], dtype=int),
            "discarded": np.array([fd.discarded for fd in fds], dtype=bool),
        }

    def _weak_samples_load(self, st):
        """Inverse of :meth:`_weak_samples_state` (None: no weak samples)."""
        if st is None:
            return {}
        out, layout = {}, self.system.layout
        for a, i in enumerate(np.asarray(st["i"]).tolist()):
            r, r0, nw = (int(x) for x in st["ranks"][a])
            info = ProjectionInfo(rank=r, regular_rank=r0, n_weak=nw, discarded=st["discarded"][a])
            fd = ForwardDynamics(
                st["qdd"][a], st["reactions"][a], st["acc"][a], layout, st["lam"][a], info
            )
            out[i] = (float(st["viol"][a, 0]), float(st["viol"][a, 1]), fd)
        return out

    def rebuild_kwargs(self):
        s = self.system
        return {
            "formulation": "recursive",
            "compile": {"algorithm": s.algorithm, **s.compile_options},
            "options": self.options,
            "kind": "loop",
        }

    def _project_samples(self, y, t):
        """Correct the output states ``y[1:]`` in place (compiled where the last QR's rows
        hold, else the QR) and return the samples of the compiled correction
        (:meth:`LoopSystem.project_samples`, rows aligned with ``y``, row 0 left to
        :meth:`LoopSystem.results_from`) when every state took it, else None (the QR may
        have chosen other rows: the samples are then evaluated afterwards, as always)."""
        s, P, nq = self.system, self.P, self.nq
        rows = None
        kept = self._kept_step_samples(y, t)
        if kept is not False:
            return kept
        if self._fast_rhs:
            status, rows = s.project_samples(y[1:], self._tau, P, **self._times(t[1:]))
        else:
            status = s.project_rows(y[1:], P)
        for i in np.flatnonzero(status != 0) + 1:
            qq, vv = P.correct(y[i, :nq], y[i, nq:], t[i])
            y[i] = np.concatenate([qq, vv])
        if rows is None or np.any(status != 0):
            return None
        return {k: np.concatenate([np.zeros_like(a[:1]), a]) for k, a in rows.items()}

    def _times(self, t):
        """``{"t": t}`` for :meth:`LoopSystem.project_samples` where the compiled loop's
        table has values of time (the samples' times, s), else no argument."""
        s = self.system
        timed = s.compiled_rk4() is None and s.compiled_rk4(timed=True) is not None
        return {"t": t} if timed else {}

    def _row_samples(self, t):
        """The samples the RK4 steps evaluated (:meth:`fused_samples`, the weak ones),
        rearranged for the recorded rows at the times ``t`` (s): a run that records
        every k-th interval (``record_every``) has row ``r`` at interval ``i(r)``."""
        x = (np.asarray(t, dtype=float) - self.t0) / self.dt
        idx = np.rint(x).astype(int)
        idx[np.abs(x - idx) > 1e-6] = -1  # a row off the output grid: no step sample
        given = self.fused_samples()
        if given is not None:
            n = len(given["viol"])
            rows = index_slice(np.clip(idx, 0, n - 1))  # (a slice: views, no copies)
            given = {k: v[rows] for k, v in given.items() if k != "sel"}
            given["viol"] = given["viol"].copy()  # (the stepper's rows stay as written)
            given["viol"][(idx < 0) | (idx >= n), 2] = 0.0  # no step sample there
        w = self._weak_samples
        return given, {r: w[i] for r, i in enumerate(idx) if i in w}

    def _kept_step_samples(self, y, t):
        """:meth:`_project_samples` where the compiled steps wrote samples
        (:meth:`step_rows`): those output rows take the step's corrected state and sample
        as they are (the rows whose solver state ``y[i]`` is the step's, bit for bit, under
        the projector's current rows); the other rows ``y[1:]`` are corrected and sampled
        by :meth:`LoopSystem.project_samples` (the QR where it refuses, then None as
        there). False when no step sample applies (``y`` untouched)."""
        f, P = self._steps, self.P
        sel = P.selection()
        if f is None or not f["n"] or sel is None or not np.array_equal(f["sel"], sel):
            return False
        n = f["n"]
        row = f["row"][:n]
        fit = (row >= 1) & (row < len(y))
        fit[fit] = np.all(f["raw"][:n][fit] == y[row[fit]], axis=1)
        if not fit.any():
            return False
        keys = ("qdd", "lam", "reac", "acc", "cutF", "viol")
        hist = ("en", "rw", "pw", "vel")  # (the other rows' history: the results' pass)
        given = {k: np.zeros((len(y), *f[k].shape[1:])) for k in (*keys, *hist)}
        rows_i = row[fit]
        idx = index_slice(rows_i)  # (slices: views and block copies)
        src = slice(0, n) if fit.all() else np.flatnonzero(fit)
        y[idx] = f["yc"][src]
        for k in (*keys, *hist):
            given[k][idx] = f[k][src]
        left = np.ones(len(y), dtype=bool)  # (a mask: np.setdiff1d sorts and hashes)
        left[0] = False
        left[rows_i] = False
        rest = np.flatnonzero(left)
        if len(rest):
            Y = np.ascontiguousarray(y[rest])
            status, rows = self.system.project_samples(Y, self._tau, P, **self._times(t[rest]))
            for a in np.flatnonzero(status != 0):
                qq, vv = P.correct(Y[a, : self.nq], Y[a, self.nq :], t[rest[a]])
                Y[a] = np.concatenate([qq, vv])
            y[rest] = Y
            if rows is None or np.any(status != 0):
                return None
            for k in keys:
                given[k][rest] = rows[k]
        return given

    def finalize(self, results, failed=False):
        s, P, nq = self.system, self.P, self.nq
        t = results.t
        y = np.concatenate([results.q, results.qd], axis=1)
        if self.adaptive:
            # the reported states are the corrected ones (the stepper's drift off the
            # manifold never enters the equations of motion)
            if nq != self.nv:  # quaternions (nq == nv: none, normalize is the identity)
                for i in range(1, len(y)):
                    y[i, :nq] = s.tree.normalize(y[i, :nq])
            given = self._project_samples(y, t) if self.use_proj else None
            samples = None
        else:
            given, samples = self._row_samples(t)
        meta = self.meta()
        meta["wall_time"] = self.wall
        res = s.results_from(t, y, self.tau_f, meta, P, safe=failed, given=given, samples=samples)
        for k, v in results.stats.items():  # cpu_time, rhs evaluations, step sizes
            res.stats[k] = v
        return res


def _basis_state(b):
    st = {k: getattr(b, k) for k in ("J", "Q", "R", "perm", "diag")}
    st.update(
        rank=int(b.rank),
        regular_rank=int(b.regular_rank),
        rtol=float(b.rtol),
        Qw_override=b.Qw_override,
    )
    return st


def _basis_load(st):
    return QRBasis(
        np.array(st["J"]),
        np.array(st["Q"]),
        np.array(st["R"]),
        np.array(st["perm"]),
        int(st["rank"]),
        int(st["regular_rank"]),
        np.array(st["diag"]),
        float(st["rtol"]),
        None if st["Qw_override"] is None else np.array(st["Qw_override"]),
    )


def projector_state(P):
    """The memory of a :class:`~flexmbd.constraints.projection.Projector` that later steps
    depend on (regular rank, last weak directions, the cached and the selected QR bases,
    the last info), as a checkpoint state dict."""
    st = {
        "regular_rank": P.regular_rank,
        "last_weak": P._last_weak,
        "info": {
            k: getattr(P.info, k)
            for k in (
                "rank",
                "regular_rank",
                "n_weak",
                "discarded",
                "newton_iterations",
                "position_violation",
                "velocity_violation",
            )
        },
    }
    if P._basis_cache is not None:
        (shape, jbytes, rr, update), b = P._basis_cache
        st["cache"] = {
            "J": np.frombuffer(jbytes, dtype=float).reshape(shape).copy(),
            "regular_rank": rr,
            "update": bool(update),
            "basis": _basis_state(b),
        }
    if P._sel_basis is not None:
        same = P._basis_cache is not None and P._sel_basis is P._basis_cache[1]
        st["selected"] = {
            "same_as_cache": same,
            "basis": None if same else _basis_state(P._sel_basis),
        }
    return st


def load_projector_state(P, st):
    """Restore :func:`projector_state` into a projector built with the same options."""
    rr = st["regular_rank"]
    P.regular_rank = None if rr is None else int(rr)
    P._last_weak = None if st["last_weak"] is None else np.array(st["last_weak"])
    P._last_J = None
    for k, v in st["info"].items():
        setattr(P.info, k, v)
    P._basis_cache = None
    if "cache" in st:
        c = st["cache"]
        J = np.ascontiguousarray(c["J"], dtype=float)
        crr = c["regular_rank"]
        P._basis_cache = (
            (J.shape, J.tobytes(), None if crr is None else int(crr), bool(c["update"])),
            _basis_load(c["basis"]),
        )
    P._sel_basis = None
    if "selected" in st:
        sel = st["selected"]
        P._sel_basis = P._basis_cache[1] if sel["same_as_cache"] else _basis_load(sel["basis"])


# ---------------------------------------------------------------- flexible bodies on loops


def _cx(a, b):
    return np.array(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    )


class _FrameGeometry:
    """A joint frame at configuration ``q`` after the tree kinematics: its world pose and
    how its spatial twist / bias acceleration (world origin) follow from the tree's
    workspace at any speeds (:meth:`motion`).

    On a flexible body the frame deforms: twist ``Phi_F^T V_b + S_F qd``, bias
    ``Phi_F^T a_b + V_F x^ (S_F qd) + sigma_F`` (:mod:`flexmbd.recursive.flexible`,
    section 1); on a rigid body it moves with the body."""

    def __init__(self, tree, body, frame, q):
        self.tree, self.ground, self.flex = tree, body is tree.model.ground, False
        if self.ground:
            self.R, self.p = frame.rotation, np.asarray(frame.position, float)
            return
        k = tree.label(body)
        self.k = k
        fl = tree.flex
        if fl is not None and k in fl.flex_labels:
            self.flex = True
            Rb, rb = fl.body_pose(k, tree.arrays.R3[K.R_W, k], tree.arrays.P3[K.P_W, k])
            self.sq, self.sv = tree.modal_slices[body.name]
            self.body, self.frame = body, frame
            self.q = np.asarray(q)[self.sq].copy()
            self.RF, self.pF, self.S, _ = frame_motion(frame, body, self.q, np.zeros(len(self.q)))
            self.R, self.p = Rb @ self.RF, rb + Rb @ self.pF
        else:
            Rf, pf = tree.joint_frame(k)
            Rk, rk = tree.arrays.R3[K.R_W, k], tree.arrays.P3[K.P_W, k]
            self.R = Rk @ Rf.T @ frame.rotation
            self.p = rk + Rk @ (Rf.T @ (np.asarray(frame.position, float) - pf))
            self.Re, self.pe = Rk.T @ self.R, Rk.T @ (self.p - rk)

    def motion(self, v, bias=True):
        """``(w, vO, alpha, aO)`` world spatial twist and (with ``bias``) bias acceleration
        for the speeds ``v`` the tree kinematics last ran with."""
        z3 = np.zeros(3)
        if self.ground:
            return z3, z3, z3, z3
        tree, k = self.tree, self.k
        if self.flex:
            fl = tree.flex
            qd = np.asarray(v)[self.sv]
            Sq = self.S @ qd
            V = _m2c(self.RF, self.pF, fl.Fw[k, 0]) + Sq
            if bias:
                sig = frame_motion(self.frame, self.body, self.q, qd)[3]
                a = _m2c(self.RF, self.pF, fl.Fw[k, 1]) + _crm(V, Sq) + sig
        else:
            V = _m2c(self.Re, self.pe, tree.arrays.Vv[K.V_VEL, k])
            if bias:
                a = _m2c(self.Re, self.pe, tree.arrays.Vv[K.V_AB, k])
        R, p = self.R, self.p
        w, vo = R @ V[:3], R @ V[3:]
        vO = vo - _cx(w, p)
        if not bias:
            return w, vO, None, None
        alpha = R @ a[:3]
        acc = R @ (a[3:] + _cx(V[:3], V[3:]))  # classical acceleration of the origin
        aO = acc - _cx(alpha, p) - _cx(w, vo)
        return w, vO, alpha, aO


def _m2c(R, p, V):
    """Twist of a parent frame -> the frame with pose (R, p) in it (frame axes)."""
    w = V[:3]
    out = np.empty(6)
    out[:3] = R.T @ w
    out[3:] = R.T @ (V[3:] + _cx(w, p))
    return out


def _crm(V, x):
    out = np.empty(6)
    out[:3] = _cx(V[:3], x[:3])
    out[3:] = _cx(V[:3], x[3:]) + _cx(V[3:], x[:3])
    return out


class _FlexCutWrenches(CutWrenches):
    """Cut-joint wrenches on trees with flexible bodies: each acts through the joint frame
    that carries it (a deforming frame also loads the modes); ``current`` holds
    ``(body, point, n, f, frame)``. The flexible tree reads :meth:`compiled_frames` (one
    compiled call, :func:`._nbflexcut.flex_frame_wrenches`) or else
    :meth:`frame_wrenches`. ``sides``: the side tables of the cut joints' frames
    (:meth:`_FlexCutConstraints.sides`), set by the loop system; ``compiled``: False
    takes the Python path (the reference)."""

    def __init__(self):
        super().__init__()
        self.sides = None
        self.compiled = True

    def wrenches(self, t, state):
        out = []
        for body, point, n, f, _frame in self.current:
            _, r = state.pose(body)
            out.append((body, np.concatenate([n + np.cross(point - r, f), f])))
        return out

    def frame_wrenches(self, t, state):
        return list(self.current)

    def compiled_frames(self):
        """``(side tables, items (m, 10))`` of :func:`._nbflexcut.flex_frame_wrenches` for
        the current wrenches (``items[i] = (side, point, n, f)``, world axes, SI), or None
        (Python path: switched off, or a wrench through a frame that is not a cut joint's)."""
        if not self.compiled or self.sides is None:
            return None
        tables = self.sides()
        index = tables[-1]
        items = np.empty((len(self.current), 10))
        for i, (body, point, n, f, frame) in enumerate(self.current):
            s = index.get((id(body), id(frame)))
            if s is None:
                return None
            items[i, 0] = s
            items[i, 1:4] = point
            items[i, 4:7] = n
            items[i, 7:10] = f
        return tables[:-1], items


class _FlexCutConstraints(CutJointConstraints):
    """Cut-joint equations on a tree with flexible bodies.

    The relative motion of the two cut frames is taken from the tree's own (flexible)
    kinematics: world poses of the deformed frames, their spatial twists and bias
    accelerations (:class:`_FrameGeometry`), and ``J_rel`` (the frames' twists are linear
    in the joint and modal speeds): in :meth:`_eval_py` column by column from the tree
    kinematics at unit speeds, in the compiled rows by one sweep along each frame's path
    after the one kinematics pass at the state. Modal coordinates are updated by the
    retraction like linear joint coordinates. The rows themselves are those of
    :class:`CutJointConstraints`. Evaluated in one compiled call
    (:func:`._nbflexcut.flex_cuts_eval`) unless :attr:`compiled_flex` is off;
    :meth:`_eval_py` is the reference.
    """

    def __init__(self, tree, cut_joints, drivers=(), topology=None):
        super().__init__(tree, cut_joints, drivers, topology)
        # the rigid loops' compiled pass does not apply (the tree's own kinematics does)
        self.compiled = False
        self._flex_rows = not any(c.screw for c in self.cuts)
        self._modal = list(tree.modal_slices.values())
        self._sides = None

    @property
    def compiled_flex(self) -> bool:
        """Rows by :func:`._nbflexcut.flex_cuts_eval` (False: the Python reference
        :meth:`_eval_py`; screw cut joints have no compiled rows). Setting it drops the
        cached evaluation."""
        return self._flex_rows

    @compiled_flex.setter
    def compiled_flex(self, on: bool) -> None:
        self._flex_rows = bool(on)
        self._key = None

    @property
    def compiled_retraction(self) -> bool:
        """Whether the retraction is ``q += dv`` (joint and modal coordinates alike: every
        coordinate rate is its speed, same indices), as the compiled correction takes it."""
        return (
            not self._special
            and self.tree.nq == self._nv
            and np.array_equal(self._lin_q, self._lin_v)
            and all(sq == sv for sq, sv in self._modal)
        )

    def sides(self):
        """Side tables of the cut joints' frames (:mod:`._nbflexcut`; rebuilt when the
        model changes): ``(sI, sC, sFt, sFs, {(id(body), id(frame)): side})``, side ``2 c``
        the parent frame of cut joint ``c``, ``2 c + 1`` its child frame."""
        tree = self.tree
        key = tree.model.revision
        if self._sides is not None and self._sides[0] == key:
            return self._sides[1]
        fl = tree.flex
        nm = fl.nmax
        ns = 2 * len(self.cuts)
        sI = np.zeros((ns, _FC.NSI), np.int64)
        sI[:, _FC.SI_KG] = -1
        sC = np.zeros((ns, 1, 3, 4 + 2 * nm))
        index = {}
        for ci, c in enumerate(self.cuts):
            for side, (body, frame) in enumerate(
                ((c.P, c.joint.parent_frame), (c.C, c.joint.child_frame))
            ):
                s = 2 * ci + side
                index[(id(body), id(frame))] = s
                C = sC[s, 0]
                if body is tree.model.ground:
                    sI[s, _FC.SI_KIND] = _FC.S_GROUND
                    C[:, :3], C[:, 3] = frame.rotation, frame.position
                    continue
                k = tree.label(body)
                sI[s, _FC.SI_K] = k
                if k in fl.flex_labels:
                    n = fl.nf[k]
                    sq, sv = tree.modal_slices[body.name]
                    sI[s, _FC.SI_KIND] = _FC.S_FLEX
                    sI[s, _FC.SI_N], sI[s, _FC.SI_MQ], sI[s, _FC.SI_MV] = n, sq.start, sv.start
                    sI[s, _FC.SI_FX] = fl.fx_of[k]
                    itf = fl.itf.get(k, [])
                    name = getattr(frame, "interface_name", None)
                    if name is not None and name in itf:
                        sI[s, _FC.SI_KG] = 12 + 6 * itf.index(name)
                    C[:] = frame_constants(frame, body, n, nm)
                else:
                    # the frame in e_k: (R_f^T R, R_f^T (p - p_f))
                    Rf, pf = tree.joint_frame(k)
                    sI[s, _FC.SI_KIND] = _FC.S_RIGID
                    C[:, :3] = Rf.T @ frame.rotation
                    C[:, 3] = Rf.T @ (np.asarray(frame.position, float) - pf)
        tables = (sI, sC, np.zeros((ns, 1, 3, 4)), np.zeros((ns, 1, 6, nm + 1)), index)
        self._sides = (key, tables)
        return tables

    def flex_work(self):
        """Scratch of :func:`._nbflexcut.flex_cuts_eval` (allocated once) and the packed
        rows' constants ``(cI, E, F, G)``."""
        w = getattr(self, "_fwork", None)
        if w is None:
            nv, ns = self._nv, 2 * len(self.cuts)
            cI, E, F, G = self._packed[0], self._packed[5], self._packed[6], self._packed[7]
            work = (
                np.zeros(max(nv, 1)),
                np.zeros((ns, 6, nv)),
                np.zeros((6, nv)),
                np.zeros((_FC.NW6, 6)),
                np.zeros((12, 3)),
                np.zeros((max(len(F), 1), 3)),
                np.zeros((3, 3)),
                np.zeros(3),
                np.zeros(3),
            )
            rows = (np.ascontiguousarray(cI[:, [2, 3, 4, 7, 8]]), E, F, G)
            w = self._fwork = (work, rows, np.array(self._path_speeds(), np.int64))
        return w

    def flex_outputs(self) -> tuple:
        """New output arrays of :func:`._nbflexcut.flex_cuts_eval`: ``(phi (m,), J (m, nv),
        gamma (m,), R (nc, 3, 3), d (nc, 3), V_rel (nc, 6), D (cut rows, 6), side poses
        (2 nc, 3, 3), (2 nc, 3), side motions (2 nc, 4, 3))`` (the rows returned and cached
        by :meth:`_eval` are views of them)."""
        m, nv, nc = self.m, self._nv, len(self.cuts)
        return (
            np.zeros(m),
            np.zeros((m, nv)),
            np.zeros(m),
            np.empty((nc, 3, 3)),
            np.empty((nc, 3)),
            np.empty((nc, 6)),
            np.empty((self.n_rows_cut, 6)),
            np.empty((2 * nc, 3, 3)),
            np.empty((2 * nc, 3)),
            np.empty((2 * nc, 4, 3)),
        )

    def _eval(self, q, v, t):
        if not self.compiled_flex:
            return self._eval_py(q, v, t)
        key, hit = self._cached(q, v, t)
        if hit is not None:
            return hit
        q = np.ascontiguousarray(q, dtype=float)
        with_v = v is not None
        nv = self._nv
        vv = np.ascontiguousarray(v, dtype=float) if with_v else np.zeros(nv)
        sI, sC, sFt, sFs, _ = self.sides()
        work, (cI, E, F, G), pspeeds = self.flex_work()
        out = self.flex_outputs()
        phi, J, gamma, Rs, ds, Vrel, D, Rw, pw, _ = out
        _FC.flex_cuts_eval(
            self.tree.flex.work, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, q, vv, with_v, work, out
        )
        rel = [
            (Rs[i], ds[i], Vrel[i] if with_v else None, D[c.rows], Rw[2 * i + 1], pw[2 * i + 1])
            for i, c in enumerate(self.cuts)
        ]
        return self._store(key, q, v, t, phi, J, gamma, rel)

    def retract(self, q, dv):
        q = super().retract(q, dv)
        for sq, sv in self._modal:
            q[sq] += dv[sv]
        return q

    def _path_speeds(self):
        """Speeds that move a cut frame: the tree joints on the paths and the modal speeds
        of the flexible bodies those joints connect (and of the cut joints' bodies)."""
        if getattr(self, "_pspeeds", None) is None:
            tree = self.tree
            idx = set()
            bodies = set()
            for c in self.cuts:
                bodies.update((id(c.P), id(c.C)))
                for (j, _rev, _outb), _s in c.path:
                    if j.name in self._vsl:
                        sl = self._vsl[j.name]
                        idx.update(range(sl.start, sl.stop))
                    bodies.update((id(j.parent), id(j.child)))
            for b in tree.label_bodies[1:]:
                if id(b) in bodies and b.name in tree.modal_slices:
                    sl = tree.modal_slices[b.name].v
                    idx.update(range(sl.start, sl.stop))
            self._pspeeds = sorted(idx)
        return self._pspeeds

    def _eval_py(self, q, v, t):
        key, hit = self._cached(q, v, t)
        if hit is not None:
            return hit
        q = np.asarray(q, dtype=float)
        tree = self.tree
        nv = self._nv
        vv = np.zeros(nv) if v is None else np.asarray(v, dtype=float)
        ends = [((c.P, c.joint.parent_frame), (c.C, c.joint.child_frame)) for c in self.cuts]
        tree.kinematics(q, vv)
        geo = [[_FrameGeometry(tree, b, fr, q) for b, fr in pair] for pair in ends]
        state = [[(g.R, g.p) + g.motion(vv, bias=v is not None) for g in pair] for pair in geo]
        # Jacobian of the frames' spatial twists (world origin): the tree kinematics at unit
        # speeds (only the speeds of the joints and flexible bodies on the cut joints' paths)
        Jw = np.zeros((len(self.cuts), 2, 6, nv))
        e = np.zeros(nv)
        for i in self._path_speeds():
            e[:] = 0.0
            e[i] = 1.0
            tree.kinematics(q, e)
            for ci, pair in enumerate(geo):
                for s_, g in enumerate(pair):
                    w, vO, _, _ = g.motion(e, bias=False)
                    Jw[ci, s_, :3, i] = w
                    Jw[ci, s_, 3:, i] = vO
        m = self.m
        phi = np.zeros(m)
        J = np.zeros((m, nv))
        gamma = np.zeros(m)
        rel = []
        for ci, c in enumerate(self.cuts):
            (Rp_, pp, wP, vOP, alP, aOP), (Rc_, pc, wC, vOC, alC, aOC) = state[ci]
            RcT = Rc_.T
            dJ = Jw[ci, 1] - Jw[ci, 0]
            Jrel = np.zeros((6, nv))
            Jrel[:3] = RcT @ dJ[:3]
            Jrel[3:] = RcT @ (dJ[3:] - _skew_mat(pc) @ dJ[:3])
            bsp = None if v is None else np.concatenate([alC - alP, aOC - aOP])
            # contract: the arguments of constraints.cut's rigid cut rows
            self._cut_rows(
                c,
                Rp_,
                pp,
                Rc_,
                pc,
                Jrel,
                bsp,
                None if v is None else (wP, vOP, wC, vOC),
                phi,
                J,
                gamma,
                rel,
            )
        tree.kinematics(q, vv)
        return self._store(key, q, v, t, phi, J, gamma, rel)


def _skew_mat(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def _pair_frames(c, Rc_, pc, F):
    """As :func:`_pair`, with the joint frame carrying each wrench (flexible trees)."""
    n = Rc_ @ F[:3]
    f = Rc_ @ F[3:]
    j = c.joint
    return [(j.child, pc, n, f, j.child_frame), (j.parent, pc, -n, -f, j.parent_frame)]


def singularity(system, q, t, projector):
    """A sentence on the rank of the loop constraints of ``system`` at ``(q, t)``: the
    numerical rank of the constraint Jacobian (relative threshold of ``projector``)
    against the regular rank, and the cut joint or driver whose rows carry the weakest
    direction (largest share of the left singular vector)."""
    c = system.constraints
    J = np.asarray(c.jacobian(q, t), float)
    if J.size == 0:
        return ""
    U, d, _ = np.linalg.svd(J, full_matrices=False)
    rtol = getattr(projector, "rtol", DEFAULT_RTOL)
    rank = int(np.sum(d > rtol * d[0])) if d[0] > 0 else 0
    regular = max(int(getattr(projector, "regular_rank", 0) or 0), rank)
    k = min(max(regular, 1), len(d)) - 1  # the weakest direction of the regular set
    u = np.abs(U[:, k])
    names = []
    for cut in c.cuts:
        names.append((float(np.sum(u[cut.rows] ** 2)), f"cut joint {cut.name!r}"))
    for i, dr in enumerate(c.drivers):
        r = c.n_cut_rows + i
        names.append((float(u[r] ** 2), f"driver {dr.name!r}"))
    where = max(names)[1] if names else "the loop equations"
    ratio = d[k] / d[0] if d[0] > 0 else 0.0
    state = (
        f"rank {rank} of its regular rank {regular} (deficiency {regular - rank})"
        if rank < regular
        else f"rank {rank}, nearly singular"
    )
    return (
        f"Singular configuration: the {J.shape[0]} loop equations' Jacobian has {state}, "
        f"smallest relevant singular value {ratio:.1e} of the largest, weakest direction "
        f"in {where}. "
    )
