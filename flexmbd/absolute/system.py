"""The absolute-coordinate System: index-3 DAE of rigid and flexible bodies in Euler parameters.

Coordinates: 7 per body ``q_b = (r, e)`` (frame origin, Euler parameters; bodies in
declaration order), then the modal coordinates of every flexible body
(``modal_slices[name]``, labels ``q1..qn``). Flexible bodies: :mod:`.flexible`
(floating-frame inertia, elastic and damping forces, distributed gravity, geometric
stiffening); joints and point loads at their deforming interface / node frames:
:mod:`.constraints` (``_FlexSlot``), :class:`.flexible.FlexPointForce` and
:class:`.flexible.FlexSDA` (spring-damper-actuators with an end there). The
integrators run models of rigid and flexible bodies, joints, drivers and gravity in
the compiled engine (:mod:`.engine`), everything else through the generic terms below.

Equations (per body ``q_b = (r, e)``, 7 coordinates; :mod:`.inertia`,
:mod:`.constraints`, :mod:`.forces`)::

    R(q, qd, qdd) + Phi_q(q)^T lam = Q(q, qd, t)          (7 nb equations)
    Phi(q) = 0                                           (joint equations + normalizations)

``R`` is the inertia residual (``M(q) qdd`` plus the quadratic velocity terms),
``Q`` the generalized applied forces of the force elements. Every matrix is
assembled sparse (scipy.sparse) from per-body and per-equation blocks, so a
Newton iteration on a chain costs O(N).

Multiplier signs: the constraint force on the bodies is ``-Phi_q^T lam``.
Reactions (``.reactions``, ``.reaction(name)``) follow docs/design/conventions.rst: the wrench the
parent exerts on the child at the child joint-frame origin in child joint-frame
axes, ``[n; f]``.

Rheonomic drivers (:class:`~flexmbd.constraints.JointDriver`) add one equation
each (:func:`.constraints.driver_primitive`); their multiplier is the drive force
along the coordinate (``-lam``, ``driver_forces``, ``Results.extra["driver:<name>"]``)
and it is part of the driven joint's reaction. For a joint loaded by a
:class:`~flexmbd.JointForce` the reported reaction includes the applied joint
force ``H tau`` (its part along the motion subspace), as the recursive solver
reports it: the total wrench transmitted through the joint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from .._typing import Array, ArrayLike
from ..constraints.cut import JointDriver
from ..constraints.redundancy import KKTSolver
from ..dynamics import (
    BodySlice,
    CoordinateLayout,
    ForwardDynamics,
    ModalSlice,
    forward_dynamics_states,
)
from ..errors import ModelError, SolverError
from ..integrators.registry import check_options, check_times, resolve
from ..model.bodies import Ground, RigidBody
from ..model.flexible import FlexibleBody
from ..model.forces import Gravity, JointForce, PointForce
from ..model.sda import SpringDamperActuator
from .constraints import ConstraintSet
from .coordinates import COORD_LABELS, SPEED_LABELS, pack, tree_state, twist_to_qd
from .energy import EnergyMeter
from .flexible import (
    FlexibleSet,
    FlexPointForce,
    FlexSDA,
    InterfaceLoadTable,
    interface_wrenches,
)
from .forces import (
    BodyState,
    GravityBatch,
    JointForceMap,
    SDABatch,
    map_blocks,
    map_te_terms,
    map_wrenches,
)
from .inertia import BodyInertia
from .quaternion import Emat, normalized_rot
from .statics import consistent_initial_conditions, static_equilibrium

if TYPE_CHECKING:
    from ..model import Model
    from ..results import Results
    from .statics import StaticResult

__all__ = ["AbsoluteSystem", "ForwardDynamics", "DAETerms", "compile_system"]


def compile_system(model, **options):
    """Build an :class:`AbsoluteSystem` of ``model`` (``model.compile("absolute")``)."""
    return AbsoluteSystem(model, **options)


class DAETerms:
    """Residual and (optionally) Jacobian pieces at one state (:meth:`AbsoluteSystem.dae_terms`).

    Attributes: ``R`` inertia residual, ``Q`` applied forces, ``PtL`` = ``Phi_q^T lam``,
    ``phi`` constraints; COO triplets ``M``, ``Kin`` (dR/dq), ``Din`` (dR/dqd),
    ``Phq`` (Phi_q), ``H`` (d(Phi_q^T lam)/dq), ``KQ`` (dQ/dq), ``DQ`` (dQ/dqd).
    """


class ForceTerms(NamedTuple):
    """Groups of force elements of an :class:`AbsoluteSystem` (``system.force_terms``).

    ``gravity``: the batched uniform gravity of the rigid bodies (or None);
    ``gravity_elements``: the Gravity elements; ``sda_batch``: the batched rigid-end
    spring-damper-actuators (or None); ``flex_sda`` / ``flex_point_forces``: elements
    with an end at a deforming frame; ``joint_forces``: JointForce maps (``.el`` the
    element, ``.q_ref`` the unwrapping reference); ``other``: every other element.
    """

    gravity: Any
    gravity_elements: tuple
    sda_batch: Any
    flex_sda: tuple
    flex_point_forces: tuple
    joint_forces: tuple
    other: tuple


class _TauForce:
    """A joint force given as an array (the ``tau`` of :meth:`AbsoluteSystem.forward_dynamics`),
    in the shape :class:`~flexmbd.absolute.forces.JointForceMap` maps."""

    def __init__(self, joint):
        self.joint = joint


def _coo(parts, shape):
    rows = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, int)
    cols = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, int)
    vals = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0)
    return sp.csr_matrix((vals, (rows, cols)), shape=shape)


class AbsoluteSystem:
    """A model compiled to absolute (body) coordinates.

    Built by ``model.compile("absolute", **options)``; the options are the parameters.

    Parameters
    ----------
    model : Model
        The model (validated; its topology is not needed: every joint is a constraint).
    jacobian : {"exact", "no-forces"}
        ``"exact"`` (default) puts every force element's exact Jacobian into the
        Newton matrix except those of elements with ``has_jacobian`` False (e.g. a
        :class:`~flexmbd.SpringDamperActuator` with ``exact_jacobian=False``);
        ``"no-forces"`` leaves all force-element Jacobians out.
    """

    #: Name of the formulation, as ``Model.compile`` and ``simulate`` take it.
    formulation = "absolute"

    def __init__(self, model: Model, jacobian: str = "exact") -> None:
        if jacobian not in ("exact", "no-forces"):
            raise ModelError(
                f"absolute system: jacobian must be 'exact' or 'no-forces', got {jacobian!r}"
            )
        self.model = model
        self.jacobian_mode = jacobian
        self._rev = None
        self._build()

    # -- structure --------------------------------------------------------------------
    def _build(self):
        m = self.model
        m.validate()
        self.bodies = m.bodies()
        for b in self.bodies:
            if not isinstance(b, (RigidBody, FlexibleBody)):
                raise ModelError(
                    f"body {b.name!r} ({type(b).__name__}): the absolute formulation handles rigid "
                    f"and flexible bodies only"
                )
        self.joints = m.joints()
        self.forces = m.forces()
        self.nb = len(self.bodies)
        self.index = {id(b): i for i, b in enumerate(self.bodies)}
        self.n_rigid = 7 * self.nb
        self.inertia = BodyInertia(self.bodies)
        self.flexible = FlexibleSet(
            self.bodies, [b for b in self.bodies if isinstance(b, FlexibleBody)], self.index
        )
        self.n = self.n_rigid + self.flexible.n_modal
        self.modal_slices = {
            d.body.name: ModalSlice(
                d.body.name, slice(d.col0, d.col0 + d.n), slice(d.col0, d.col0 + d.n)
            )
            for d in self.flexible.flex
        }

        self.drivers = m.component_objects(JointDriver)
        flex_cols = {d.index: d.col0 for d in self.flexible.flex}
        self.constraints = ConstraintSet(self.joints, self.index, self.drivers, flex_cols)
        self.nc = self.constraints.n
        self.coordinates = [(b.name, lab) for b in self.bodies for lab in COORD_LABELS]
        self.speeds = [(b.name, lab) for b in self.bodies for lab in SPEED_LABELS]
        for d in self.flexible.flex:
            self.coordinates += [(d.body.name, f"q{k + 1}") for k in range(d.n)]
            self.speeds += [(d.body.name, f"q{k + 1}d") for k in range(d.n)]
        self.joint_names = [j.name for j in self.joints]
        self.layout = CoordinateLayout.build(
            "absolute",
            self.n,
            self.n,
            self.coordinates,
            self.speeds,
            self.joint_names,
            [b.name for b in self.bodies],
            bodies={
                b.name: BodySlice(b.name, slice(7 * i, 7 * i + 7), slice(7 * i, 7 * i + 7))
                for i, b in enumerate(self.bodies)
            },
            modal=self.modal_slices,
        )
        # tau of forward_dynamics: joint forces along every joint's speeds (declaration
        # order), then generalized modal forces
        self._tau_slices, o = [], 0
        for j in self.joints:
            self._tau_slices.append(slice(o, o + j.nv))
            o += j.nv
        self.n_tau = o + self.flexible.n_modal
        self._tau_maps = None
        self._jf = [JointForceMap(f, self.index) for f in self.forces if isinstance(f, JointForce)]
        self._jf_joint = [self.joints.index(jm.joint) for jm in self._jf]
        sdas = [f for f in self.forces if type(f) is SpringDamperActuator]
        # SDAs with an end at a deforming frame of a flexible body: exact, element by element
        self._flex_sda = [
            FlexSDA(f, self.index, self.flexible.by_index) for f in sdas if f.deforming_ends()
        ]
        flex_sda = {id(x.el) for x in self._flex_sda}
        self._sda = [f for f in sdas if id(f) not in flex_sda]
        self._sda_batch = SDABatch(self._sda, self.index) if self._sda else None
        grav = [f for f in self.forces if type(f) is Gravity]
        self._grav_elements = grav
        self._gravity = GravityBatch(grav, self.inertia) if grav else None
        self._flex_pf = []
        for f in self.forces:
            att = getattr(f, "attachment", None)
            if (
                isinstance(f, PointForce)
                and att is not None
                and id(f.body) in self.index
                and self.index[id(f.body)] in self.flexible.by_index
                and hasattr(att, "pose")
                and np.any(att.modes[3:])
            ):
                self._flex_pf.append(
                    FlexPointForce(f, self.flexible.by_index[self.index[id(f.body)]])
                )
        flex_pf = {id(x.el) for x in self._flex_pf}
        self._other = [
            f
            for f in self.forces
            if not isinstance(f, JointForce)
            and type(f) is not SpringDamperActuator
            and type(f) is not Gravity
            and id(f) not in flex_pf
        ]
        q, qd = tree_state(m, self.bodies, self.index)
        qf0 = [d.body.q0 for d in self.flexible.flex]
        qfd0 = [d.body.qd0 for d in self.flexible.flex]
        q = np.concatenate([q] + qf0)
        qd = np.concatenate([qd] + qfd0)
        self._q_tree, self._qd_tree = q, qd
        # free lengths of SDAs default to the initial length
        st = BodyState(self.index, q, qd)
        for fs in self._flex_sda:
            if fs.el.l0 is None:
                fs.el.l0 = fs.length(q)
        for f in self._other + self._sda:
            if getattr(f, "l0", 0.0) is None and hasattr(f, "free_length"):
                f.free_length(st)
        # the components whose parameter_attributes refresh() updates in place
        self._members = {id(c) for c in self.bodies + self.forces}
        self._rev = m.revision
        self._ic = None

    def refresh(self):
        """Re-read the model if it changed since the last call.

        Writes of the ``parameter_attributes`` of this system's bodies and force elements
        (a mass, an SDA's ``k``, ``c``, ``l0``, gravity, modal matrices: see
        :class:`~flexmbd.model.component.Component`) update what depends on them in
        place; any other change (a joint, a frame, a component added) rebuilds the system.
        """
        m = self.model
        if m.revision == self._rev:
            return
        changes = m.changes_since(self._rev)
        if changes is None or not self._update_parameters(changes):
            self._build()

    def _update_parameters(self, changes):
        """Apply parameter writes ``[(component, attribute)]`` in place; False when one of
        them needs a rebuild (nothing is kept then: the caller rebuilds)."""
        changed, rigid, flex = {}, False, set()
        for comp, attr in changes:
            if attr == "doc":
                continue
            if id(comp) not in self._members or attr not in comp.parameter_attributes:
                return False
            if attr == "l0" and comp.l0 is None:  # the default: the initial length
                return False
            changed[id(comp)] = comp
            rigid |= isinstance(comp, RigidBody)
            if isinstance(comp, FlexibleBody):
                flex.add(id(comp))
        for d in self.flexible.flex:
            if id(d.body) in flex and not _update_modal_matrices(d):
                return False
        for comp in changed.values():
            if hasattr(comp, "validate"):  # bodies (as Model.validate checks them)
                comp.validate()
        if rigid:
            self.inertia.update(self.bodies)
        e = getattr(self, "_engine", None)
        if (rigid or flex) and e is not None and e[0] is self.constraints:
            e[1].update_bodies()  # the compiled engine copies masses and modal matrices
        self._rev = self.model.revision
        self._ic = None
        return True

    @property
    def force_terms(self) -> ForceTerms:
        """The force elements as this system evaluates them (read-only view; rebuilt
        with the system): see :class:`ForceTerms`."""
        return ForceTerms(
            self._gravity,
            tuple(self._grav_elements),
            self._sda_batch,
            tuple(self._flex_sda),
            tuple(self._flex_pf),
            tuple(self._jf),
            tuple(self._other),
        )

    def engine(self):
        """The compiled Newton engine of this system (:mod:`.engine`), built once per build."""
        if getattr(self, "_engine", None) is None or self._engine[0] is not self.constraints:
            from .engine import Engine  # lazy: the numba kernels load on first use

            self._engine = (self.constraints, Engine(self))
        return self._engine[1]

    # -- states -----------------------------------------------------------------------
    def body_states(
        self, q: ArrayLike, qd: ArrayLike
    ) -> dict[str, tuple[Array, Array, Array, Array]]:
        """``{body name: (R, r, w_world, v_world)}`` (``v`` of the body-frame origin)."""
        st = BodyState(self.index, q, qd)
        return {
            b.name: (st.R[i].copy(), st.r[i].copy(), st.w[i].copy(), st.v[i].copy())
            for i, b in enumerate(self.bodies)
        }

    def body_motion(self, q, qd):
        """:meth:`body_states` of a whole history at once: ``{body name: (R (nt, 3, 3),
        r (nt, 3), w_world (nt, 3), v_world (nt, 3))}`` for ``q``, ``qd`` (nt, n)."""
        q = np.atleast_2d(np.asarray(q, float))
        qd = np.atleast_2d(np.asarray(qd, float))
        nt, nb = len(q), len(self.bodies)
        st = BodyState(range(nt * nb), q[:, : 7 * nb].reshape(-1), qd[:, : 7 * nb].reshape(-1))
        R = st.R.reshape(nt, nb, 3, 3)
        r, w, v = (a.reshape(nt, nb, 3) for a in (st.r, st.w, st.v))
        return {b.name: (R[:, i], r[:, i], w[:, i], v[:, i]) for i, b in enumerate(self.bodies)}

    def body_accelerations(
        self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike
    ) -> dict[str, tuple[Array, Array]]:
        """``{body name: (alpha_world (nt, 3), a_origin_world (nt, 3))}`` of a history
        ``q, qd, qdd`` (nt, n): ``alpha = 2 E(e) e''`` (``E(e') e' = 0``) and ``r''``."""
        q = np.atleast_2d(np.asarray(q, float))
        qdd = np.atleast_2d(np.asarray(qdd, float))
        nt, nb = len(q), len(self.bodies)
        e = q[:, : 7 * nb].reshape(nt * nb, 7)[:, 3:]
        ab = qdd[:, : 7 * nb].reshape(nt, nb, 7)
        alpha = 2.0 * np.einsum("bij,bj->bi", Emat(e), ab[..., 3:].reshape(-1, 4))
        alpha = alpha.reshape(nt, nb, 3)
        return {b.name: (alpha[:, i], ab[:, i, :3]) for i, b in enumerate(self.bodies)}

    def state_from_bodies(self, states):
        """``(q, qd)`` from ``{body name: (R, r, w, v)}`` (inverse of :meth:`body_states`)."""
        q = np.zeros(self.n)
        qd = np.zeros(self.n)
        for i, b in enumerate(self.bodies):
            R, r, w, v = states[b.name]
            q[7 * i : 7 * i + 7] = pack(R, r)
            qd[7 * i : 7 * i + 7] = twist_to_qd(q[7 * i + 3 : 7 * i + 7], w, v)
        for d in self.flexible.flex:  # modal coordinates: the bodies' initial values
            q[d.col0 : d.col0 + d.n] = d.body.q0
            qd[d.col0 : d.col0 + d.n] = d.body.qd0
        return q, qd

    def modal(self, q: ArrayLike, name: str) -> Array:
        """Modal coordinates of flexible body ``name`` in ``q`` (also works on (nt, n)
        histories)."""
        try:
            sl = self.modal_slices[name]
        except KeyError:
            raise ModelError(
                f"body {name!r} is not a flexible body of this system; flexible "
                f"bodies: {list(self.modal_slices)}"
            ) from None
        return np.asarray(q)[..., sl.q]

    def gravity_vector(self) -> Array | None:
        """Sum of the models' uniform gravity vectors (m/s^2, world), or None."""
        if not self._grav_elements:
            return None
        return sum(np.asarray(e.g, dtype=float) for e in self._grav_elements)

    def initial_conditions(
        self, tol: float = 1e-12, t0: float = 0.0, fresh: bool = False
    ) -> tuple[Array, Array, Array, Array]:
        """Consistent ``(q, qd, qdd, lam)`` at ``t0`` from the joints' ``q0``/``qd0`` (cached;
        ``fresh=True`` recomputes them, e.g. after inputs at ``t0`` changed)."""
        self.refresh()
        if fresh or self._ic is None or self._ic[0] != t0:
            self._ic = (
                t0,
                consistent_initial_conditions(self, self._q_tree, self._qd_tree, tol=tol, t=t0),
            )
        return tuple(x.copy() for x in self._ic[1])

    def q0(self) -> Array:
        """Consistent initial coordinates."""
        return self.initial_conditions()[0]

    def qd0(self) -> Array:
        """Consistent initial coordinate rates."""
        return self.initial_conditions()[1]

    # -- model terms ------------------------------------------------------------------
    def mass_triplets(self, q, stiffening=False):
        """COO triplets of the mass matrix; ``stiffening=True`` gives the exact ``dR/dddq``
        (flexible bodies' load-dependent geometric-stiffness coupling included)."""
        q = np.asarray(q, float)
        M = self.inertia.mass_blocks(q)
        trip = [(self.inertia.rows, self.inertia.cols, M.ravel())]
        if self.flexible.flex:
            trip.append(self.flexible.mass_triplets(q, stiffening))
        return tuple(np.concatenate(x) for x in zip(*trip))

    def mass_matrix(self, q: ArrayLike) -> sp.spmatrix:
        """Sparse (symmetric) mass matrix (n x n)."""
        self.refresh()
        return _coo([self.mass_triplets(q)], (self.n, self.n))

    def constraint(self, q: ArrayLike, t: float = 0.0) -> Array:
        """``Phi(q, t)`` (nc,): joint equations, driver equations, then normalizations."""
        self.refresh()
        return self.constraints.evaluate(np.asarray(q, float), jacobian=False, t=t)

    def constraint_jacobian(self, q: ArrayLike, t: float = 0.0) -> sp.spmatrix:
        """Sparse ``Phi_q`` (nc x 7nb)."""
        self.refresh()
        _, trip = self.constraints.evaluate(np.asarray(q, float), t=t)
        return _coo([trip], (self.nc, self.n))

    def constraint_velocity_rhs(self, q: ArrayLike, t: float = 0.0) -> Array:
        """``nu = -dPhi/dt``: velocity equations ``Phi_q qd = nu`` (zero without drivers)."""
        self.refresh()
        return -self.constraints.phi_t(np.asarray(q, float), t)

    def generalized_forces(self, q, qd, t=0.0, jacobian=False, exclude_jacobian=True):
        """Applied generalized forces ``Q`` (7nb,) and optionally ``(dQ/dq, dQ/dqd)`` triplets.

        Elements whose ``has_jacobian`` is False are left out of the Jacobians (unless
        ``exclude_jacobian`` is False); ``jacobian="no-forces"`` at compile time leaves
        all of them out.
        """
        q = np.asarray(q, float)
        st = BodyState(self.index, q, qd)
        Q = np.zeros(self.n)
        nacc = np.zeros((self.nb, 3)) if jacobian else None
        use_jac = jacobian and self.jacobian_mode == "exact"
        A, B, Ks, Cs = [], [], [], []
        extra_K = []
        if self.flexible.flex and self._grav_elements:
            trip = self.flexible.gravity(q, self.gravity_vector(), Q, jacobian=use_jac)
            if use_jac:
                extra_K.append(trip)
        for fp in self._flex_pf:
            trip = fp.evaluate(t, q, Q, jacobian=use_jac)
            if use_jac:
                extra_K.append(trip)
        extra_D = []
        for fs in self._flex_sda:
            inc = use_jac and (fs.el.has_jacobian or not exclude_jacobian)
            trips = fs.evaluate(t, q, np.asarray(qd, float), Q, jacobian=inc)
            if inc:
                extra_K.append(trips[0])
                extra_D.append(trips[1])
        if self._sda_batch is not None:
            inc = None if exclude_jacobian else np.ones(len(self._sda), dtype=bool)
            blk = self._sda_batch.evaluate(t, st, Q, nacc, jacobian=use_jac, include=inc)
            if blk is not None:
                A.append(blk[0])
                B.append(blk[1])
                Ks.append(blk[2])
                Cs.append(blk[3])
        if self._gravity is not None:
            blk = self._gravity.evaluate(st, Q, nacc, jacobian=use_jac)
            if blk is not None:
                A.append(blk[0])
                B.append(blk[1])
                Ks.append(blk[2])
                Cs.append(blk[3])
        for f in self._other:
            w = f.wrenches(t, st)
            inc = use_jac and (f.has_jacobian or not exclude_jacobian)
            map_wrenches(w, self.index, st, Q, nacc if inc else None)
            if inc:
                jb = f.jacobians(t, st)
                for bi, bj, K, C in jb or ():
                    if isinstance(bi, Ground) or isinstance(bj, Ground):
                        continue
                    A.append([self.index[id(bi)]])
                    B.append([self.index[id(bj)]])
                    Ks.append(np.asarray(K, float)[None])
                    Cs.append(np.asarray(C, float)[None])
        for jm in self._jf:
            w, _, _, _ = jm.wrenches(t, st)
            Qb = Q[: self.n_rigid].reshape(-1, 7)
            for k, F in w:
                Qb[k, :3] += F[3:]
                Qb[k, 3:] += 2.0 * st.E[k].T @ F[:3]
                if use_jac:
                    nacc[k] += F[:3]
            if use_jac:
                for a, b, K, C in jm.jacobians(t, st):
                    A.append([a])
                    B.append([b])
                    Ks.append(K[None])
                    Cs.append(C[None])
        if not jacobian:
            return Q
        if A:
            KQ, DQ = map_blocks(
                np.concatenate(A), np.concatenate(B), np.concatenate(Ks), np.concatenate(Cs), st
            )
        else:
            KQ, DQ = map_blocks([], [], None, None, st)
        te = map_te_terms(nacc, self.nb)
        KQ = tuple(np.concatenate(x) for x in zip(KQ, te, *extra_K))
        if extra_D:
            DQ = tuple(np.concatenate(x) for x in zip(DQ, *extra_D))
        return Q, KQ, DQ

    def dae_terms(self, q, qd, qdd, lam, t=0.0, jacobian=True, split=False):
        """All residual pieces of the DAE at one state, and their Jacobians (:class:`DAETerms`).

        ``split=True`` also returns the velocity part of the inertia residual,
        ``Rv = R(q, qd, 0)``, and its ``q``-derivative ``Kinv`` (for HHT's weighting).
        """
        T = DAETerms()
        q = np.asarray(q, float)
        qd = np.asarray(qd, float)
        qdd = np.asarray(qdd, float)
        if split:
            if jacobian:
                T.Rv, _, T.Kinv, _ = self._inertia(q, qd, np.zeros_like(q), True)
            else:
                T.Rv = self._inertia(q, qd, np.zeros_like(q), False)
        if jacobian:
            T.R, T.M, T.Kin, T.Din = self._inertia(q, qd, qdd, True)
            T.Q, T.KQ, T.DQ = self.generalized_forces(q, qd, t, jacobian=True)
            T.phi, T.Phq = self.constraints.evaluate(q, t=t)
            T.H = self.constraints.hessian_lambda(q, lam, t)
        else:
            T.R = self._inertia(q, qd, qdd, False)
            T.Q = self.generalized_forces(q, qd, t)
            T.phi, T.Phq = self.constraints.evaluate(q, t=t)
        rows, cols, vals = T.Phq
        T.PtL = np.bincount(cols, weights=vals * lam[rows], minlength=self.n)
        return T

    def _inertia(self, q, qd, qdd, derivatives):
        """Inertia residual of all bodies (flexible: with elastic, damping and stiffening
        forces) and, with ``derivatives``, COO triplets of ``dR/dddq``, ``dR/dq``, ``dR/ddq``."""
        n7 = self.n_rigid
        fl = self.flexible
        if not derivatives:
            R = np.zeros(self.n)
            R[:n7] = self.inertia.residual(q, qd, qdd, derivatives=False)
            if fl.flex:
                R += fl.residual(q, qd, qdd, self.gravity_vector(), derivatives=False)
            return R
        Rr, M, K, D = self.inertia.residual(q, qd, qdd, derivatives=True)
        R = np.zeros(self.n)
        R[:n7] = Rr
        ir, ic = self.inertia.rows, self.inertia.cols
        trips = [[(ir, ic, M.ravel())], [(ir, ic, K.ravel())], [(ir, ic, D.ravel())]]
        if fl.flex:
            Rf, Mf, Kf, Df = fl.residual(q, qd, qdd, self.gravity_vector(), derivatives=True)
            R += Rf
            for lst, tr in zip(trips, (Mf, Kf, Df)):
                lst.append(tr)
        out = [tuple(np.concatenate(x) for x in zip(*lst)) for lst in trips]
        return (R, *out)

    def iteration_matrix(self, T, aM, aKin, aDin, aK, aD, scale=1.0, aKinv=0.0, extra=()):
        """Sparse Newton matrix ``[[J, Phi_q^T], [Phi_q, 0]]``.

        ``J = aM M + aKin dR/dq + aDin dR/dqd + aK (H - dQ/dq) - aD dQ/dqd``.

        The constraint blocks are multiplied by ``scale``; ``aKinv`` weights the
        derivative of the velocity part of the inertia residual (``T.Kinv``, HHT);
        ``extra`` is a list of further COO triplets added to the coordinate block.
        """
        n, nc = self.n, self.nc
        parts = []

        def add(trip, a):
            if a != 0.0 and len(trip[2]):
                parts.append((trip[0], trip[1], a * trip[2]))

        add(T.M, aM)
        add(T.Kin, aKin)
        add(T.Din, aDin)
        if aKinv:
            add(T.Kinv, aKinv)
        add(T.H, aK)
        add(T.KQ, -aK)
        add(T.DQ, -aD)
        parts += list(extra)
        pr, pc, pv = T.Phq
        parts.append((pr + n, pc, scale * pv))
        parts.append((pc, pr + n, scale * pv))
        rows = np.concatenate([p[0] for p in parts])
        cols = np.concatenate([p[1] for p in parts])
        vals = np.concatenate([p[2] for p in parts])
        return sp.csc_matrix((vals, (rows, cols)), shape=(n + nc, n + nc))

    # -- dynamics ---------------------------------------------------------------------
    def forward_dynamics(
        self, q: ArrayLike, qd: ArrayLike, tau: ArrayLike | None = None, t: float = 0.0
    ) -> ForwardDynamics:
        """Accelerations, multipliers and joint reactions at one state ``(q, qd, t)``.

        ``q``, ``qd`` (n,) in this system's coordinates (7 per body, then modal);
        ``tau`` (``n_tau``,) optional joint forces along every joint's speeds (joints in
        declaration order, ``joint.nv`` entries each, as a :class:`~flexmbd.JointForce`
        would apply them; N m or N), followed by generalized modal forces of the
        flexible bodies (declaration order). For a tree model without cut joints this is
        the recursive formulation's ``tau`` layout. ``t`` (s) time of the force elements.

        Solves ``[M Phi_q^T; Phi_q 0] [qdd; lam] = [Q + Q_tau - R(q, qd, 0); gamma]``.
        Returns a :class:`~flexmbd.dynamics.ForwardDynamics` (``lam`` every constraint
        row; reactions include the applied joint forces ``H tau``).
        """
        if np.ndim(t) != 0:
            raise ModelError(
                "absolute forward_dynamics(q, qd, tau=None, t=0.0): t must be a scalar time "
                "(many states: forward_dynamics_batch)"
            )
        self.refresh()
        q = np.asarray(q, float)
        qd = np.asarray(qd, float)
        if q.shape != (self.n,) or qd.shape != (self.n,):
            raise ModelError(
                f"absolute forward_dynamics takes one state: q and qd with {self.n} values; got "
                f"{q.shape}, {qd.shape} (many states: forward_dynamics_batch)"
            )
        T = self.dae_terms(q, qd, np.zeros(self.n), np.zeros(self.nc), t, jacobian=False)
        Mtrip = self.mass_triplets(q, stiffening=True)
        pr, pc, pv = T.Phq
        n, nc = self.n, self.nc
        A = sp.csc_matrix(
            (
                np.concatenate([Mtrip[2], pv, pv]),
                (np.concatenate([Mtrip[0], pr + n, pc]), np.concatenate([Mtrip[1], pc, pr + n])),
            ),
            shape=(n + nc, n + nc),
        )
        Qt, tau_j = self._tau_forces(q, qd, tau)
        rhs = np.concatenate([T.Q + Qt - T.R, self.constraints.gamma(q, qd, t)])
        x = _solve(A, rhs, "forward dynamics", n)
        qdd, lam = x[:n], x[n:]
        reac = self.reactions(q, qd, lam, t)
        for k, F in tau_j:
            reac[k] += F
        return ForwardDynamics(qdd, reac, self._body_accelerations(q, qdd), self.layout, lam)

    def forward_dynamics_batch(
        self, Q: ArrayLike, QD: ArrayLike, TAU: ArrayLike | None = None, t: float | ArrayLike = 0.0
    ) -> ForwardDynamics:
        """:meth:`forward_dynamics` of many states ``Q``, ``QD`` (n, self.n), ``TAU``
        (n, n_tau) / (n_tau,) / None, ``t`` scalar or (n,): one
        :class:`~flexmbd.dynamics.ForwardDynamics` with a leading state axis."""
        sizes = (self.n, len(self.joints), self.nb, self.nc)
        one = self.forward_dynamics
        return forward_dynamics_states(one, Q, QD, TAU, t, self.n_tau, sizes, self.layout)

    def _tau_forces(self, q, qd, tau):
        """Generalized forces (n,) of ``tau`` (see :meth:`forward_dynamics`) and the
        applied joint wrenches ``[(joint row, H tau_j)]`` that belong to the reactions."""
        Q = np.zeros(self.n)
        if tau is None:
            return Q, []
        tau = np.asarray(tau, dtype=float)
        if tau.shape != (self.n_tau,):
            raise ModelError(
                f"absolute forward_dynamics: tau needs {self.n_tau} values (the speeds of "
                f"every joint in declaration order, then the modal forces); got {tau.shape}"
            )
        if self._tau_maps is None:
            self._tau_maps = [JointForceMap(_TauForce(j), self.index) for j in self.joints]
        st = BodyState(self.index, q, qd)
        Qb = Q[: self.n_rigid].reshape(-1, 7)
        applied = []
        for k, (jm, sl) in enumerate(zip(self._tau_maps, self._tau_slices)):
            tj = tau[sl]
            if not np.any(tj):
                continue
            _, _, H, _, fr = jm.relative(st)
            Fc = H @ tj
            for b, F in jm.wrenches_from(Fc, fr):
                Qb[b, :3] += F[3:]
                Qb[b, 3:] += 2.0 * st.E[b].T @ F[:3]
            applied.append((k, Fc))
        o = self.n_tau - self.flexible.n_modal
        if self.flexible.n_modal:
            Q[self.n_rigid :] += tau[o:]
        return Q, applied

    def _body_accelerations(self, q, qdd):
        """``[alpha; a_origin]`` (nb, 6), world axes, from the Euler-parameter rates."""
        b = q[: self.n_rigid].reshape(-1, 7)
        bdd = qdd[: self.n_rigid].reshape(-1, 7)
        out = np.empty((self.nb, 6))
        for k in range(self.nb):
            # alpha = 2 E(e) edd (+ 2 E(ed) ed, which vanishes identically)
            out[k, :3] = 2.0 * Emat(b[k, 3:]) @ bdd[k, 3:]
            out[k, 3:] = bdd[k, :3]
        return out

    def reactions(self, q: ArrayLike, qd: ArrayLike, lam: ArrayLike, t: float = 0.0) -> Array:
        """Joint reactions (n_joints, 6) from the multipliers (plus applied joint forces)."""
        out = self.constraints.reactions(np.asarray(q, float), lam, t)
        if self._jf:
            st = BodyState(self.index, q, qd)
            for jm, k in zip(self._jf, self._jf_joint):
                q_j, v_j, H, _, _ = jm.relative(st)
                out[k] += H @ jm.el.generalized_force(t, q_j, v_j)
        return out

    def driver_forces(self, lam: ArrayLike) -> Array:
        """Drive force/torque of every driver along its coordinate (``-lam`` of its row)."""
        return {d.name: -float(lam[r]) for d, r in zip(self.drivers, self.constraints.driver_rows)}

    def accept(self, q, qd, lam=None, t=0.0):
        """Hook called by integrators after an accepted step (joint-angle unwrapping, lagged
        interface loads of the geometric stiffening)."""
        if self._jf:
            st = BodyState(self.index, q, qd)
            for jm in self._jf:
                jm.accept(st)
        if lam is not None:
            self.update_interface_loads(q, lam, t, qd=qd)

    def update_interface_loads(self, q, lam, t=0.0, qd=None):
        """Set the (lagged) interface wrenches of the geometric stiffening from multipliers.

        For every flexible body with stiffening and unit matrices for non-reference
        interfaces: the wrench ``[m; f]`` (body axes, about the interface frame origin)
        that each joint attached through an :class:`~flexmbd.InterfaceFrame` applies
        to the body, from the joint reactions at ``(q, lam)``, plus the point loads and
        spring-damper-actuator forces at interface frames (SDA damping with ``qd``; at
        rest when None).
        """
        flex = [d for d in self.flexible.flex if d.itf_names]
        if not flex:
            return
        q = np.asarray(q, float)
        reac = self.constraints.reactions(q, lam, t)
        st = BodyState(self.index, q, np.zeros_like(q))
        tab = self.interface_load_table()
        FC, pC = self._child_frames(st, q, set(tab.joint.tolist()))
        v = interface_wrenches(tab, q, st.R, st.r, reac, FC, pC)
        for kf, d in enumerate(self.flexible.flex):
            if not d.itf_names:
                continue
            loads = {}
            o = tab.load_off[kf]
            for i, name in enumerate(d.itf_names):
                if np.any(tab.off == o + 6 * i):  # a joint loads this interface
                    loads[name] = v[o + 6 * i : o + 6 * i + 6].copy()
            R = st.R[d.index]
            for fp in self._flex_pf:
                name = getattr(fp.el.attachment, "interface_name", None)
                if fp.d is d and name in d.itf_names:
                    f_w = fp.force(t, q)[0]
                    w = np.concatenate([np.zeros(3), R.T @ f_w])
                    loads[name] = loads.get(name, 0.0) + w
            for fs in self._flex_sda:
                for a, sF in ((0, 1.0), (1, -1.0)):
                    fr = (fs.el.frame_i, fs.el.frame_j)[a]
                    name = getattr(fr, "interface_name", None)
                    e_ = fs.ends[a]
                    if e_ is None or e_[0] != d.index or name not in d.itf_names:
                        continue
                    f, u = fs.tension_at(
                        t, q, np.zeros_like(q) if qd is None else np.asarray(qd, float)
                    )
                    w = np.concatenate([np.zeros(3), R.T @ (sF * f * u)])
                    loads[name] = loads.get(name, 0.0) + w
            d.set_interface_loads(loads)

    def interface_load_table(self) -> InterfaceLoadTable:
        """The joints that load stiffened interfaces (:class:`.flexible.InterfaceLoadTable`,
        built once)."""
        if getattr(self, "_itf_table", None) is None:
            self._itf_table = InterfaceLoadTable(self.joints, self.flexible.flex)
        return self._itf_table

    def _child_frames(self, st, q, joints):
        """Child joint frames ``(FC (nj, 3, 3), pC (nj, 3))`` in the world for the joint
        indices in ``joints`` (others zero); deforming frames follow the modes."""
        nj = len(self.joints)
        FC, pC = np.zeros((nj, 3, 3)), np.zeros((nj, 3))
        flex_bodies = [x.body for x in self.flexible.flex]
        for k in joints:
            j = self.joints[k]
            cb = j.child
            if isinstance(cb, Ground):
                Rc, rc = np.eye(3), np.zeros(3)
                Cc, sc = j.child_frame.rotation, j.child_frame.position
            else:
                ci = self.index[id(cb)]
                Rc, rc = st.R[ci], st.r[ci]
                cf = j.child_frame
                if hasattr(cf, "pose") and cb in flex_bodies:
                    dc = self.flexible.by_index[ci]
                    Cc, sc = cf.pose(q[dc.col0 : dc.col0 + dc.n])
                else:
                    Cc, sc = cf.rotation, cf.position
            FC[k] = Rc @ Cc
            pC[k] = rc + Rc @ sc
        return FC, pC

    # -- energies ---------------------------------------------------------------------
    def kinetic_energy(self, q: ArrayLike, qd: ArrayLike) -> float:
        """Total kinetic energy (J)."""
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        out = float(self.inertia.kinetic_energy(q, qd).sum())
        if self.flexible.flex:
            out += self.flexible.kinetic_energy(q, qd)
        return out

    def energy_meter(self):
        """An :class:`~flexmbd.absolute.energy.EnergyMeter` for this system."""
        return EnergyMeter(self)

    # -- statics and simulation -------------------------------------------------------
    def static_equilibrium(
        self, q: ArrayLike | None = None, t: float = 0.0, **options: Any
    ) -> StaticResult:
        """Static equilibrium from ``q`` (default: the initial configuration), :mod:`.statics`."""
        self.refresh()
        return static_equilibrium(self, self.q0() if q is None else q, t=t, **options)

    def simulate(
        self, t_end: float, dt: float | None = None, integrator: str | None = None, **options: Any
    ) -> Results:
        """Integrate from the consistent initial state to ``t_end`` (s) with step ``dt`` (s).

        ``integrator``: ``"generalized-alpha"`` (default; ``rho_inf``), ``"newmark"``
        (``beta``, ``gamma``) or ``"hht"`` (``alpha`` in [-1/3, 0]); names are
        case-insensitive. See :func:`flexmbd.integrators.implicit.integrate` for the
        Newton options; unknown ones raise :class:`~flexmbd.errors.ModelError`.
        """
        from ..integrators.implicit import integrate

        where = f"model {self.model.name!r} (absolute): simulate"
        spec, _ = resolve(integrator, "absolute", dt)
        check_options(options, integrate, where)
        check_times(t_end, dt, spec, where, t0=options.get("t0", 0.0), every=options.get("every"))
        return integrate(self, t_end, dt, spec.name, **options)

    def normalize(self, q: ArrayLike) -> Array:
        """Euler parameters scaled to unit length (coordinates (7nb,))."""
        q = np.array(q, dtype=float)
        b = q[: self.n_rigid].reshape(-1, 7)
        b[:, 3:] /= np.linalg.norm(b[:, 3:], axis=1, keepdims=True)
        return q

    def rotation(self, q: ArrayLike, name: str) -> Array:
        """Rotation matrix of body ``name`` at ``q``."""
        k = self.layout.body_row(name)
        return normalized_rot(np.asarray(q, float)[7 * k + 3 : 7 * k + 7])


def _update_modal_matrices(d):
    """Re-read the modal stiffness and damping of flexible-body data ``d``
    (:meth:`~flexmbd.FlexibleBody.set_modal_matrices`); False when any other invariant
    changed or the body is stiffened (its data then needs a rebuild)."""
    new, old = d.body.invariants(), d.inv
    same = new.mass == old.mass and all(
        getattr(new, f) is getattr(old, f) for f in ("c", "E0", "St", "S", "P")
    )
    if d.stiffening or not same:
        return False
    d.inv = new
    d.K = np.asarray(new.K, float)
    d.D = np.asarray(new.D, float)
    return True


def _solve(A, b, what, n):
    try:
        lu = KKTSolver(n).factor(A)  # drops redundant joint equations (QR)
    except RuntimeError as err:
        raise SolverError(
            f"{what}: the constraint/mass matrix is singular ({err}); check for redundant joints "
            f"or bodies without mass/inertia in a free direction"
        ) from None
    x = lu.solve(b)
    if not np.all(np.isfinite(x)):
        raise SolverError(f"{what}: the linear solve produced NaN/inf")
    return x
