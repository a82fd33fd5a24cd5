"""RecursiveSystem: a tree model in joint coordinates, solved by the CFA.

``m.compile("recursive")`` returns a :class:`RecursiveSystem`. Coordinates are
the joints' own coordinates (``joint.q``, quaternions scalar first), in the
declaration order of the joints; speeds likewise (``joint.v``: angular velocity
in child axes for Spherical/Free, etc.; names and slices in ``system.layout``).
``forward_dynamics`` (one state; many: ``forward_dynamics_batch``) returns the System
contract's :class:`~flexmbd.dynamics.ForwardDynamics`: the joint accelerations, the
reaction wrench of every joint and every body's acceleration, computed together by the
Constraint Force Algorithm (Liu, Hu, Zhang 2016) in one compiled call:

* ``algorithm="serialized"`` (default): compiled O(N) kernels
  (:mod:`flexmbd.recursive._kernels`), odd-even reduction of chains plus a small
  dense node system (:mod:`flexmbd.recursive.schedule`);
* ``algorithm="general"``: the readable dense reference of eq. (4-29)
  (:mod:`flexmbd.recursive.general`).

Reactions follow docs/design/conventions.rst: the wrench the joint's declared parent exerts on its
declared child through the joint, at the child joint-frame origin, in child
joint-frame axes, ``[n; f]``. It is the CFA's equivalent interbody force
``F = H F_T + W F_S`` plus the velocity-product (bias) part of the Newton-Euler
pass at zero joint acceleration; its motion-direction part ``H^T F_phys`` is the
applied joint force (``tau`` plus JointForce elements).

Decisions (see also the kernels' docstring):

* Tree frames are the joint frames on each outboard body, rotated so that a
  Revolute/Prismatic/Cylindrical axis (a Planar normal) is the local z axis: H is
  then a set of unit vectors and W a 0/1 mask. A joint the topology reversed
  moves its declared parent frame relative to its declared child frame; its
  motion subspace ``-Ad_T H`` is orthonormalized (``H' L``) for the CFA.
* The CFA inverts every body's spatial inertia. A singular one (a rod with zero
  axial inertia, a point mass) is rejected with a ModelError naming the body
  (give it a small inertia about every axis); no NaN ever comes out.
* Closed loops: ``RecursiveSystem`` itself rejects cut joints; ``compile_system``
  (:mod:`flexmbd.recursive.compile`) hands such models to
  :mod:`flexmbd.recursive.loops`, which builds on :meth:`RecursiveSystem.solve_mass`
  (``M^-1`` products by the CFA, O(N) per column), :meth:`inverse_dynamics`
  (``b = M 0 + b``) and :meth:`body_states`.
* Model parameters are re-read (cheaply, no rebuild) whenever ``model.revision``
  changed.

Flexible bodies (:class:`~flexmbd.FlexibleBody`): their modal coordinates follow the
joint coordinates (bodies in declaration order; labels ``(body, "q1")``, speeds
``(body, "q1d")``; :attr:`modal_slices`, :meth:`modal`), and the tree is solved by the
CFA extended to flexible bodies (:mod:`flexmbd.recursive.flexible`: derivation;
:mod:`flexmbd.recursive._flexkernels`: the serialized kernels; the dense reference
in :func:`flexmbd.recursive.general.general_flexible`), still O(N) with every joint
reaction -- at the *deformed* child joint frame. Elastic, modal damping, distributed
gravity, point forces at deforming frames and (switchable) geometric stiffening
enter; ``tau`` entries of the modal speeds are generalized modal forces. A body's
``body_states`` / ``body_acceleration`` refer to its floating reference frame.
Explicit integration must resolve the highest modal frequency
(:meth:`max_modal_frequency`; RK4 warns above its stability limit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import _nbjoints as J
from .._nblaws import law_address
from .._typing import Array, ArrayLike
from ..dynamics import (
    CoordinateLayout,
    ForwardDynamics,
    JointSlice,
    ModalSlice,
    forward_dynamics_result,
)
from ..errors import ModelError, SolverError
from ..flexible.ffr import kinetic_energy, mass_matrix
from ..integrators.registry import check_options, check_times, resolve
from ..joint_states import cross_rows
from ..joint_types import UNIT_DIRECTIONS, joint_type
from ..model.bodies import RigidBody
from ..model.flexible import FlexibleBody
from ..model.forces import Gravity, JointForce, PointForce, PointTorque
from ..model.sda import SpringDamperActuator
from ..spatial import spatial_inertia
from . import _kernels as K
from . import _nbforces as NF
from ._kernels import (
    I_DIAG,
    I_DSLOT,
    I_FIVE,
    I_JROW,
    I_JT,
    I_NC,
    I_NQ,
    I_NV,
    I_ONE,
    I_PARENT,
    I_PERM,
    I_QO,
    I_REV,
    I_VO,
    M_C0,
    M_G,
    M_H,
    M_HC,
    M_I,
    M_K0,
    M_L,
    M_WC,
    NI,
    P_0,
    P_W,
    R_0,
    R_A,
    R_W,
    V_FEXT,
    V_MASK,
    V_MC,
    V_PRM,
    V_VEL,
)
from ._kernels import qdd_reactions as _qdd_reactions
from ._momenta import momenta_history as _momenta_history
from .general import general_cfa
from .schedule import build_schedule

_new = object.__new__
_NO_LAM = np.zeros(0)
_NO_LAM.flags.writeable = False
# empty extras of the compiled single-state entry point (qdd and reactions only)
_E2, _E1, _EI = np.zeros((0, 6)), np.zeros(0), np.zeros(0, np.int64)

if TYPE_CHECKING:
    from ..model import Model
    from ..results import Results

__all__ = ["RecursiveSystem", "ForwardDynamics", "TreeArrays", "TreeModel", "TreeWorkspace"]


def _clock(t):
    """The time ``t`` (s) itself: the force table's clock as a value of time (the column
    0 of its ``ULAW`` rows, :mod:`._nbforces`)."""
    return float(t)


def _code(joint):
    """The joint's code in :mod:`flexmbd.joint_types` (the branch of the compiled kinematics)."""
    return joint_type(joint, "recursive").code


class TreeModel(NamedTuple):
    """The compiled description of a tree (the model of the model/workspace split): ``Ia``
    (integer tables per label: parent, joint code, sizes, offsets, permutations, ...)
    and ``Sa`` (the elimination schedule), built once by :class:`RecursiveSystem` and
    never written afterwards; layouts: the row constants of :mod:`._kernels`."""

    Ia: Array
    Sa: Array


class TreeWorkspace(NamedTuple):
    """The float workspace of one thread running the free algorithms on a
    :class:`TreeModel` (the data of the model/workspace split): ``Mm`` (6x6 blocks per
    label: inertias, projectors, factors), ``Vv`` (6-vectors per label: twists, biases,
    forces), ``R3``/``P3`` (rotations (-) and positions (m) per label), ``Tt``
    (temporaries), ``Dn`` (the dense node system), ``Jv`` (rows over the speeds: tau,
    F_T, qdd) and ``gravity`` (3,) (m/s^2, world). Layouts: the row constants of
    :mod:`._kernels`."""

    Mm: Array
    Vv: Array
    R3: Array
    P3: Array
    Tt: Array
    Dn: Array
    Jv: Array
    gravity: Array

    def replicate(self, n: int) -> tuple[Array, ...]:
        """``n`` independent copies of the arrays (gravity excepted, shared), stacked on
        a leading axis: the per-thread workspaces of the batched kernels."""
        return tuple(np.ascontiguousarray(np.repeat(a[None], n, axis=0)) for a in self[:-1])


class TreeArrays(NamedTuple):
    """A :class:`TreeModel` and a :class:`TreeWorkspace` in one tuple (``Ia``, ``Sa``,
    ``Mm``, ``Vv``, ``R3``, ``P3``, ``Tt``, ``Dn``, ``Jv``, ``gravity``): the arguments of
    the free algorithms (:mod:`._kernels`, :mod:`.general`, :mod:`.flexible`) on the
    system's own workspace."""

    Ia: Array
    Sa: Array
    Mm: Array
    Vv: Array
    R3: Array
    P3: Array
    Tt: Array
    Dn: Array
    Jv: Array
    gravity: Array


class _RigidOps:
    """The rigid-tree kernels behind the interface :class:`~.flexible.FlexTree` offers
    for flexible trees, so that :class:`RecursiveSystem` calls ``self._ops`` instead of
    branching on the body kinds: kinematics, ``M^-1`` columns, refresh, applied loads
    kept in the strategy's workspace, the dense reference (``general``), body
    accelerations, the mass matrix and special point forces.

    ``compiled``: the serialized dynamics of the whole tree is one compiled call on the
    system's packed workspace (the lean single-state entry point, the batched and
    threaded kernels, :meth:`RecursiveSystem.packed_rigid`); a strategy without it
    (:class:`~.flexible.FlexTree`) runs one state at a time through :meth:`forward`."""

    flex_labels = ()
    compiled = True

    def __init__(self, system):
        self.arrays = system.arrays

    def refresh(self):
        pass

    def kinematics(self, q, v, world=True):
        a = self.arrays
        K.kinematics(a.Ia, a.Mm, a.Vv, a.R3, a.P3, a.Tt, q, v, world)

    def solve_columns(self, q, cols, out):
        a = self.arrays
        return K.solve_columns(a.Ia, a.Sa, a.Mm, a.Vv, a.R3, a.P3, a.Tt, a.Dn, q, a.Jv, cols, out)

    def point_force(self, fe, t, q, state, fext, qd=None):
        return False

    def clear_applied(self):
        """No loads are kept beyond ``fext`` and ``tau`` in a rigid tree."""

    def add_modal_tau(self, tau):
        """No modal coordinates in a rigid tree."""

    def general(self, system, q, v, tau, fext):
        """One state by the dense CFA (:func:`~.general.general_cfa`): ``(qdd, reactions,
        W F_S, body accelerations, F_T)``; ``fext`` (N+1, 6) the applied wrenches."""
        return general_cfa(system, q, v, tau, fext.copy())

    def body_accelerations(self, out):
        a = self.arrays
        K.body_accelerations(a.Ia, a.Vv, a.R3, a.P3, out)

    @staticmethod
    def mass_matrix(system, q):
        """``M(q)`` (nv x nv) by Newton-Euler columns (unit accelerations, no loads)."""
        q = np.asarray(q, dtype=float)
        z = np.zeros(system.nv)
        M = np.zeros((system.nv, system.nv))
        for i in range(system.nv):
            e = z.copy()
            e[i] = 1.0
            M[:, i] = system.inverse_dynamics(q, z, e, forces=False)[0]
        return 0.5 * (M + M.T)


class _State:
    """Body poses/twists for force elements (``state.pose(body)``, ``state.twist(body)``).

    Poses and twists of the body frames (for a flexible body: its floating reference
    frame) are taken when the state is built, right after the tree kinematics."""

    def __init__(self, system, Rw, rw, vel):
        self._sys = system
        self._Rw, self._rw, self._vel = Rw, rw, vel
        self._floating = {}
        fl = system.flex
        if fl is not None:
            for k in fl.flex_labels:
                R, r = fl.body_pose(k, Rw[k], rw[k])
                Vb = fl.body_speeds(k)
                self._floating[k] = (R, r, R @ Vb[:3], R @ Vb[3:])

    @property
    def frames(self):
        """``(R_world, r_world)`` of the tree frames e_k (per label) at this state."""
        return self._Rw, self._rw

    def is_flexible(self, k):
        """True when label ``k`` is a flexible body (its pose is its floating frame)."""
        return k in self._floating

    def pose(self, body):
        s = self._sys
        if body is s.model.ground:
            return np.eye(3), np.zeros(3)
        k = s.label(body)
        if k in self._floating:
            return self._floating[k][0].copy(), self._floating[k][1].copy()
        return s.body_pose(k, self._Rw[k], self._rw[k])

    def twist(self, body):
        s = self._sys
        if body is s.model.ground:
            return np.zeros(3), np.zeros(3)
        k = s.label(body)
        if k in self._floating:
            return self._floating[k][2].copy(), self._floating[k][3].copy()
        R, r = s.body_pose(k, self._Rw[k], self._rw[k])
        Rk = self._Rw[k]
        w = Rk @ self._vel[k, :3]
        v = Rk @ self._vel[k, 3:] + np.cross(w, r - self._rw[k])
        return w, v


_MOTION = ((3, 3), (3,), (3,), (3,))


class _MotionHistory(Mapping):
    """:meth:`RecursiveSystem.body_motion`'s mapping ``{body name: (R, r, w, v)}``: the
    entries are new arrays, a rigid body's computed when first read."""

    def __init__(self, label, rigid, floating):
        # label: {body name: tree label}; rigid(k): the rigid body's arrays; floating:
        # {label: (R, r, w, v)} of the flexible bodies
        self._label, self._rigid, self._floating = label, rigid, floating
        self._done = {}

    def __getitem__(self, name):
        k = self._label[name]  # KeyError for another name, as a dict
        if name not in self._done:
            f = self._floating.get(k)
            self._done[name] = tuple(a.copy() for a in f) if f is not None else self._rigid(k)
        return self._done[name]

    def __iter__(self):
        return iter(self._label)

    def __len__(self):
        return len(self._label)


class RecursiveSystem:
    """A tree model in joint coordinates; forward/inverse dynamics by the CFA.

    Parameters
    ----------
    model : flexmbd.Model
    algorithm : {"serialized", "general"}
        Default algorithm of :meth:`forward_dynamics`.

    Raises
    ------
    ModelError
        For closed loops (cut joints: ``model.compile("recursive")`` hands those to
        :class:`flexmbd.recursive.loops.LoopSystem`, which wraps this tree solver),
        unsupported joint types, and bodies with a singular spatial
        inertia (the CFA inverts every body's inertia: give point masses and rods a
        small inertia about every axis).

    Notes
    -----
    A system owns its workspaces: use one system per thread.
    """

    #: Name of the formulation, as ``Model.compile`` and ``simulate`` take it.
    formulation = "recursive"

    def __init__(self, model: Model, algorithm: str = "serialized") -> None:
        if algorithm not in ("serialized", "general"):
            raise ModelError(f"algorithm must be 'serialized' or 'general', got {algorithm!r}")
        self.model = model
        self.algorithm = algorithm
        topo = model.topology()
        joints = model.joints()
        bodies = model.bodies()
        if topo.cut_joints:
            names = [joints[k - 1].name for k in topo.cut_joints]
            raise ModelError(
                f"model {model.name!r} has closed loops (cut joints {names}); RecursiveSystem is "
                "the tree solver: closed loops need the cut-joint constraint equations "
                "(model.compile('recursive') builds a flexmbd.recursive LoopSystem on top of "
                "this solver), or use formulation='absolute'"
            )
        for b in bodies:
            if not isinstance(b, (RigidBody, FlexibleBody)):
                raise ModelError(
                    f"body {b.name!r} ({type(b).__name__}): the recursive formulation handles "
                    "rigid and flexible bodies only; use formulation='absolute'"
                )
        self.topology = topo
        self._joints = joints
        self._bodies = bodies
        n = topo.n_bodies
        self.n_bodies = n
        self.joint_names = [j.name for j in joints]
        # tree joints in declaration order define the coordinate layout
        tree = [k for k in range(1, len(joints) + 1) if k not in set(topo.cut_joints)]
        self.coordinates, self.speeds = [], []
        qoff, voff = {}, {}
        nq = nv = 0
        for k in tree:
            j = joints[k - 1]
            qoff[k], voff[k] = nq, nv
            nq += j.nq
            nv += j.nv
            self.coordinates += [(j.name, lab) for lab in j.coordinate_labels]
            self.speeds += [(j.name, lab) for lab in j.speed_labels]
        # modal coordinates of flexible bodies (declaration order) after the joints
        self.modal_slices = {}
        for b in bodies:
            if isinstance(b, FlexibleBody):
                nm = b.n_modes
                self.modal_slices[b.name] = ModalSlice(
                    b.name, slice(nq, nq + nm), slice(nv, nv + nm)
                )
                self.coordinates += [(b.name, f"q{i + 1}") for i in range(nm)]
                self.speeds += [(b.name, f"q{i + 1}d") for i in range(nm)]
                nq += nm
                nv += nm
        self.nq, self.nv = nq, nv
        self._qslice = {
            joints[k - 1].name: slice(qoff[k], qoff[k] + joints[k - 1].nq) for k in tree
        }
        self._vslice = {
            joints[k - 1].name: slice(voff[k], voff[k] + joints[k - 1].nv) for k in tree
        }
        self.layout = CoordinateLayout.build(
            "recursive",
            nq,
            nv,
            self.coordinates,
            self.speeds,
            self.joint_names,
            [b.name for b in bodies],
            joints={
                name: JointSlice(name, self._qslice[name], self._vslice[name])
                for name in self._qslice
            },
            modal=self.modal_slices,
        )

        # static arrays per label
        Ia = np.zeros((NI, n + 1), np.int64)
        Ia[I_PARENT] = np.asarray(topo.parent, dtype=np.int64)
        self._tree_joint = [None] * (n + 1)
        self._body_of = [None] * (n + 1)
        self._label_of = {}
        body_pos = {id(b): i for i, b in enumerate(bodies)}
        body_row = np.zeros(n + 1, np.int64)  # label -> row of layout.body_names
        for k in range(1, n + 1):
            tj = int(topo.tree_joint[k])
            j = joints[tj - 1]
            self._tree_joint[k] = j
            b = bodies[int(topo.original_body[k]) - 1]
            self._body_of[k] = b
            self._label_of[id(b)] = k
            body_row[k] = body_pos[id(b)]
            Ia[I_JT, k] = _code(j)
            Ia[I_REV, k] = int(bool(topo.reversed[tj - 1]))
            Ia[I_NV, k], Ia[I_NQ, k] = j.nv, j.nq
            Ia[I_NC, k] = 6 - j.nv
            Ia[I_QO, k], Ia[I_VO, k] = qoff[tj], voff[tj]
            Ia[I_JROW, k] = tj - 1
            Ia[I_DIAG, k] = int(not Ia[I_REV, k] and Ia[I_JT, k] not in (J.UNIVERSAL, J.SCREW))
            # block ordering: constraint directions first (5x5 elimination for nc = 5)
            perm = list(range(6))
            if Ia[I_DIAG, k]:
                motion = self._UNIT_H[int(Ia[I_JT, k])]
                perm = [i for i in range(6) if i not in motion] + list(motion)
            Ia[I_PERM : I_PERM + 6, k] = perm
            Ia[I_FIVE, k] = int(bool(Ia[I_DIAG, k]) and j.nv == 1)
        # rigid trees: sequential chain elimination (half the work of odd-even reduction,
        # measured 15-20 % faster per call); the flexible kernels keep the paper's order
        flexible = any(isinstance(b, FlexibleBody) for b in bodies)
        sched = build_schedule(Ia[I_PARENT], order="odd-even" if flexible else "sequential")
        self.schedule = sched
        Ia[I_ONE] = sched.onechild
        Ia[I_PERM : I_PERM + 6, 0] = np.arange(6)
        Ia[I_DSLOT] = -1
        Ia[K.I_DLOC] = -1
        for s0, s1 in zip(sched.blocks[:-1], sched.blocks[1:], strict=True):
            for slot in range(s0, s1):
                Ia[I_DSLOT, sched.dense[slot]] = slot
                Ia[K.I_DLOC, sched.dense[slot]] = slot - s0
        # column 0 (the ground): the node system's width, 6 x its largest block
        Ia[K.I_DLOC, 0] = 6 * max(int(np.diff(sched.blocks).max(initial=1)), 1)
        self._Ia = Ia
        self._body_row = body_row
        self._label_bodies = tuple(self._body_of)
        self._label_joints = tuple(self._tree_joint)
        self._Sa = K.pack_schedule(sched)
        self._n_dense = len(sched.dense)
        self._jt, self._rev = Ia[I_JT], Ia[I_REV]
        self._quat_offsets = [
            int(Ia[I_QO, k]) + (3 if Ia[I_JT, k] == J.FREE else 0)
            for k in range(1, n + 1)
            if Ia[I_JT, k] in (J.SPHERICAL, J.FREE)
        ]
        self._floating = any(
            Ia[I_JT, k] == J.FREE and Ia[I_PARENT, k] == 0 for k in range(1, n + 1)
        )
        self._revision = None
        self._lean = None
        self._motion_memo = None
        self._kin_memo = None
        self._alloc()
        # one int buffer (header, Ia, Sa) for the lean entry point; Ia, Sa are views of it
        self._Ib, self._Ia, self._Sa = K.pack_ints(
            self._Ia, self._Sa, self.nq, self.nv, len(self.joint_names)
        )
        self.tree = TreeModel(self._Ia, self._Sa)
        self.workspace = TreeWorkspace(
            self._Mm, self._Vv, self._R3, self._P3, self._Tt, self._Dn, self._Jv, self._gbuf
        )
        self.arrays = TreeArrays(*self.tree, *self.workspace)
        self._flex = None
        if any(isinstance(b, FlexibleBody) for b in bodies):
            from .flexible import FlexTree  # lazy: the flexible kernels load on first use

            self._flex = FlexTree(self)
        # the tree kernels, rigid or flexible, behind one interface
        self._ops = self._flex if self._flex is not None else _RigidOps(self)
        self._refresh()

    # ------------------------------------------------------------------ setup
    def _alloc(self):
        """One float buffer holds every workspace array (views below): the compiled
        single-state entry point then takes few arguments."""
        n = self.n_bodies
        nd6 = 6 * max(self._n_dense, 1)
        nv1 = max(self.nv, 1)
        self._Ia[K.I_SIZE, 0] = nv1
        self._Ia[K.I_SIZE + 1, 0] = nd6
        layout, total = K.buffer_layout(n, nd6, nv1, int(self._Ia[K.I_DLOC, 0]))
        self._buf = np.zeros(total)
        views = [self._buf[o : o + int(np.prod(sh))].reshape(sh) for o, sh in layout]
        (self._Mm, self._Vv, self._R3, self._P3, self._Tt, self._Dn, self._Jv, self._gbuf) = views
        self._R3[R_W, 0] = np.eye(3)
        self._reac = np.zeros((len(self.joint_names), 6))
        self._reac_shape = self._reac.shape
        self._acc_shape = (len(self._bodies), 6)
        rows = self._body_row[1:]
        self._rows_in_label_order = bool(np.array_equal(rows, np.arange(self._acc_shape[0])))
        self._zero_tau = np.zeros(nv1)

    @staticmethod
    def _aligned(j, code):
        """Rotation of the joint frames making the joint axis (plane normal) local z."""
        return joint_type(j).aligned_frame(j)

    _UNIT_H = UNIT_DIRECTIONS

    def _refresh(self):
        """(Re-)read joint frames, axes and inertias when the model revision changed."""
        if self._revision == self.model.revision:
            return
        joints, bodies = self.model.joints(), self.model.bodies()
        if (
            [id(j) for j in joints] != [id(j) for j in self._joints]
            or [id(b) for b in bodies] != [id(b) for b in self._bodies]
            or self.model.topology().cut_joints != self.topology.cut_joints
        ):
            raise ModelError(
                f"model {self.model.name!r}: bodies or joints were added or removed since it was "
                "compiled; compile it again (parameters of existing components may change freely)"
            )
        topo = self.topology
        n = self.n_bodies
        Ia, Mm, Vv, R3, P3 = self._Ia, self._Mm, self._Vv, self._R3, self._P3
        self._frame = [(np.eye(3), np.zeros(3))] * (n + 1)  # e_k in body k coordinates
        Ras = [np.eye(3)] * (n + 1)
        for k in range(1, n + 1):
            j = self._tree_joint[k]
            rev = bool(Ia[I_REV, k])
            out_f = j.parent_frame if rev else j.child_frame
            Ras[k] = self._aligned(j, int(Ia[I_JT, k]))
            self._frame[k] = (out_f.rotation @ Ras[k], out_f.position.copy())
        for k in range(1, n + 1):
            j = self._tree_joint[k]
            rev = bool(Ia[I_REV, k])
            code = int(Ia[I_JT, k])
            in_f = j.child_frame if rev else j.parent_frame
            p = int(topo.parent[k])
            Rep, pep = self._frame[p]
            Ra = Ras[k]
            R3[R_A, k] = Ra
            R3[R_0, k] = Rep.T @ in_f.rotation @ Ra
            P3[P_0, k] = Rep.T @ (in_f.position - pep)
            nvk = j.nv
            _, prm, Hc, Wc = joint_type(j).compiled(j)
            Vv[V_PRM, k] = prm[:6]
            mask = np.ones(6)
            for i in self._UNIT_H.get(code, ()):
                mask[i] = 0.0
            Mm[M_HC, k], Mm[M_WC, k] = Hc, Wc
            Mm[M_H, k] = Hc
            Vv[V_MASK, k] = mask
            b = self._body_of[k]
            b.validate()
            Rf, pf = self._frame[k]
            P3[K.P_B, k] = -Rf.T @ pf
            if isinstance(b, FlexibleBody):
                # inertia from the modal invariants in the flexible kernels (FlexTree)
                Mm[M_I, k], Mm[M_G, k] = 0.0, np.eye(6)
                Vv[V_MC, k] = 0.0
                Mm[M_C0, k] = Mm[M_K0, k] = 0.0
                Mm[K.M_C0P, k] = Mm[K.M_K0P, k] = Mm[K.M_GP, k] = 0.0
                continue
            m = float(b.mass)
            c = Rf.T @ (b.com_vector - pf)
            Jc = Rf.T @ b.inertia_matrix @ Rf
            Ik = spatial_inertia(m, c, Jc)
            ev = np.linalg.eigvalsh(Ik)
            if not ev[0] > 1e-12 * ev[-1]:
                raise ModelError(
                    f"rigid body {b.name!r}: its spatial inertia is singular (principal moments "
                    f"about the centre of mass {np.linalg.eigvalsh(b.inertia_matrix).tolist()}); "
                    "the constraint force algorithm inverts every body inertia. Give the body a "
                    "small inertia about every axis (e.g. RigidBody.rod(..., radius=r) instead of "
                    "a zero-radius rod, or a small sphere instead of a point mass)"
                )
            G = np.linalg.inv(Ik)
            Mm[M_I, k], Mm[M_G, k] = Ik, 0.5 * (G + G.T)
            Vv[V_MC, k, :3], Vv[V_MC, k, 3] = m * c, m
            if p > 0:
                # constants of the revolute fast path: Phi_k = Phi0 diag(Rz, Rz)
                R0, p0 = R3[R_0, k], P3[P_0, k]
                X0 = np.zeros((6, 6))
                X0[:3, :3] = X0[3:, 3:] = R0
                X0[:3, 3:] = (
                    np.array([[0, -p0[2], p0[1]], [p0[2], 0, -p0[0]], [-p0[1], p0[0], 0]]) @ R0
                )
                Mm[M_C0, k] = Mm[M_G, p] @ X0
                Mm[M_K0, k] = X0.T @ Mm[M_C0, k]
                # the same, permuted into the elimination order for chain links (the
                # revolute joint k and its parent's joint with diagonal projectors)
                pp, pk = Ia[I_PERM : I_PERM + 6, p], Ia[I_PERM : I_PERM + 6, k]
                Mm[K.M_GP, k] = Mm[M_G, k][np.ix_(pk, pk)]
                Mm[K.M_K0P, k] = Mm[M_K0, k][np.ix_(pk, pk)]
                Mm[K.M_C0P, k] = -(Vv[V_MASK, p][:, None] * Mm[M_C0, k] * Vv[V_MASK, k][None, :])[
                    np.ix_(pp, pk)
                ]
            assert code in (J.UNIVERSAL, J.SCREW) or nvk == len(self._UNIT_H[code])
        # force elements
        grav = np.zeros(3)
        self._joint_forces, self._generic = [], []
        tree_ids = {id(j) for j in self._tree_joint[1:]}
        for f in self.model.forces():
            if isinstance(f, Gravity):
                grav = grav + f.g
            elif isinstance(f, JointForce):
                if id(f.joint) not in tree_ids:
                    raise ModelError(f"JointForce {f.name!r} acts on a joint not in the tree")
                self._joint_forces.append(f)
            else:
                self._generic.append(f)
        self._joint_plan = [self._joint_force_plan(f) for f in self._joint_forces]
        self._gbuf[:] = grav
        self._gravity = self._gbuf
        self._use_grav = bool(np.any(grav != 0.0))
        self._Ib[K.IB_GRAV] = int(self._use_grav)
        self._ops.refresh()
        self._revision = self.model.revision
        # lean path of qdd_and_reactions / _raw_accel: no Python work per call
        lean = (
            self._ops.compiled
            and not self._joint_forces
            and not self._generic
            and self.algorithm == "serialized"
        )
        self._lean = self._revision if lean else None

    # ------------------------------------------------------------------ read-only views
    @property
    def floating(self) -> bool:
        """True when a Free joint connects a body to the ground (a free-floating system:
        momentum is kept without external forces)."""
        return self._floating

    @property
    def use_gravity(self) -> bool:
        """True when the model has a non-zero uniform gravity (``arrays.gravity``)."""
        return self._use_grav

    @property
    def label_bodies(self) -> tuple:
        """The body of every tree label (index 0: None, the ground; labels are the
        topology's regular numbering)."""
        return self._label_bodies

    @property
    def label_joints(self) -> tuple:
        """The tree joint whose outboard body has each label (index 0: None)."""
        return self._label_joints

    def label(self, body: Any) -> int | None:
        """Tree label of ``body`` (None for the ground or a body not in this system)."""
        return self._label_of.get(id(body))

    def joint_frame(self, k: int) -> tuple[Array, Array]:
        """``(R, p)``: the tree frame e_k of label ``k`` (the inboard joint frame on the
        body, aligned so the joint axis is local z) in body-k coordinates."""
        return self._frame[k]

    def kinematics(self, q: ArrayLike, qd: ArrayLike) -> tuple[Array, Array, Array]:
        """Tree kinematics at ``(q, qd)`` into the workspace; returns views
        ``(R_world (n+1, 3, 3), r_world (n+1, 3), twist (n+1, 6))`` of the frames e_k."""
        return self._kinematics(q, qd)

    def raise_status(self, status: int, q: ArrayLike) -> None:
        """Raise the :class:`~flexmbd.errors.SolverError` of a failed kernel ``status``
        at ``q`` (it names the joint or body)."""
        self._raise_factor(status, q)

    @property
    def flex(self) -> Any:
        """The flexible-body workspace (:class:`flexmbd.recursive.flexible.FlexTree`), or
        None for a rigid tree."""
        return self._flex

    # ------------------------------------------------------------------ basics
    def q0(self) -> Array:
        """Initial coordinates from the joints' ``q0``."""
        q = np.zeros(self.nq)
        for j in self._tree_joint[1:]:
            q[self._qslice[j.name]] = j.q0
        for b in self._bodies:
            if b.name in self.modal_slices:
                q[self.modal_slices[b.name].q] = b.q0
        return q

    def qd0(self) -> Array:
        """Initial speeds from the joints' ``qd0``."""
        v = np.zeros(self.nv)
        for j in self._tree_joint[1:]:
            v[self._vslice[j.name]] = j.qd0
        for b in self._bodies:
            if b.name in self.modal_slices:
                v[self.modal_slices[b.name].v] = b.qd0
        return v

    def modal(self, q: ArrayLike, name: str) -> Array:
        """Modal coordinates (or speeds, for a speed vector) of flexible body ``name`` in
        ``q`` (also (nt, n) histories)."""
        if name not in self.modal_slices:
            raise ModelError(
                f"body {name!r} is not a flexible body of this system; flexible "
                f"bodies: {list(self.modal_slices)}"
            )
        q = np.asarray(q)
        sq, sv = self.modal_slices[name]
        return q[..., sq] if q.shape[-1] == self.nq else q[..., sv]

    def body_pose(self, k: int, Rk: Array, rk: Array) -> tuple[Array, Array]:
        """``(R, r)`` of the body frame of label ``k`` (world) from the pose ``(Rk, rk)``
        of its tree frame e_k."""
        Rf, pf = self._frame[k]
        R = Rk @ Rf.T
        return R, rk - R @ pf

    def _prepare(self, q, qd, ndim, algorithm, shape_error):
        """The refreshed system's checked state arrays (``ndim`` 1: one state, 2: a
        batch; else ModelError ``shape_error(q, qd)``) and the algorithm name."""
        self._refresh()
        q, qd = self._check_state(q, qd)
        if q.ndim != ndim or qd.ndim != ndim:
            raise ModelError(shape_error(q, qd))
        algorithm = algorithm or self.algorithm
        if algorithm not in ("serialized", "general"):
            raise ModelError(f"algorithm must be 'serialized' or 'general', got {algorithm!r}")
        return q, qd, algorithm

    def _check_state(self, q, qd):
        q = np.asarray(q, dtype=float)
        qd = np.asarray(qd, dtype=float)
        if q.shape[-1] != self.nq or qd.shape[-1] != self.nv:
            raise ModelError(
                f"state sizes: q needs {self.nq} values, qd {self.nv}; got {q.shape}, {qd.shape}"
            )
        return q, qd

    # ------------------------------------------------------------------ forces
    def _kinematics(self, q, qd):
        q = np.ascontiguousarray(q, dtype=float)
        qd = np.ascontiguousarray(qd, dtype=float)
        self._ops.kinematics(q, qd)
        return self._R3[R_W], self._P3[P_W], self._Vv[V_VEL]

    def _joint_force_plan(self, f):
        """What :meth:`_applied` needs of the joint force ``f``, read once per model
        revision: ``(f, q index, v index, (k, c, q0, actuator))`` for a spring-damper law
        (evaluated as scalars) and ``(f, q slice, v slice, None)`` otherwise."""
        name = f.joint.name
        sq, sv = self._qslice[name], self._vslice[name]
        if f.law is None:
            return f, sq, sv, None
        return f, sq.start, sv.start, (*f.law, f.actuator)

    def _applied(self, t, q, qd, tau, fext):
        """Add joint forces (into tau) and force-element wrenches (fext, e_k at O_k; for a
        flexible body about its frame origin in body axes, with the modal forces of point
        forces at deforming frames in the flexible workspace)."""
        for f, sq, sv, law in self._joint_plan:
            if law is None:
                tau[sv] += f.generalized_force(t, q[sq], qd[sv])
            else:  # generalized_force of a spring-damper law, the same operations
                k, c, x0, fa = law
                tau[sv] += float(fa(t)) - k * (q[sq] - x0) - c * qd[sv]
        if self._generic:
            Rw, rw, vel = (x.copy() for x in self._kinematics(q, qd))
            state = _State(self, Rw, rw, vel)
            for fe in self._generic:
                if self._ops.point_force(fe, t, q, state, fext, qd):
                    continue
                for body, w in fe.wrenches(t, state):
                    if body is self.model.ground:
                        continue
                    k = self._label_of[id(body)]
                    R, r = state.pose(body)
                    if state.is_flexible(k):
                        fext[k, :3] += R.T @ w[:3]
                        fext[k, 3:] += R.T @ w[3:]
                        continue
                    n_o = w[:3] + np.cross(r - rw[k], w[3:])
                    fext[k, :3] += Rw[k].T @ n_o
                    fext[k, 3:] += Rw[k].T @ w[3:]

    # ------------------------------------------------------------------ dynamics
    def forward_dynamics(
        self,
        q: ArrayLike,
        qd: ArrayLike,
        tau: ArrayLike | None = None,
        t: float = 0.0,
        algorithm: str | None = None,
    ) -> ForwardDynamics:
        """Joint (and modal) accelerations and every joint reaction at one state.

        ``q`` (nq,), ``qd`` (nv,), ``tau`` (nv,) joint forces along the speeds (N m or
        N; added to the JointForce elements; modal entries are generalized modal
        forces), ``t`` (s) the time for force elements. Returns a
        :class:`~flexmbd.dynamics.ForwardDynamics` (reactions at the child joint frames,
        body accelerations in world axes). Many states: :meth:`forward_dynamics_batch`.
        """
        if (
            algorithm is None
            and self._lean == self.model.revision
            and (tau is None or getattr(tau, "shape", None) == (self.nv,))
        ):
            # fast path: float64 contiguous arrays go straight to the compiled entry point
            # (it checks their sizes); anything else raises TypeError there and takes the
            # general path below, which converts, checks and reports
            qdd = np.empty(self.nv)
            reac = np.empty(self._reac_shape)
            acc = np.empty(self._acc_shape)
            try:
                st = _qdd_reactions(
                    self._Ib,
                    self._buf,
                    q,
                    qd,
                    self._zero_tau if tau is None else tau,
                    qdd,
                    reac,
                    acc,
                    _E2,
                    _E1,
                    self._body_row,
                )
            except TypeError:
                st = None
            if st == 0:
                # unrolled: forward_dynamics_result, inline (its Python call is a
                # twentieth of this call on a 20-link chain)
                out = _new(ForwardDynamics)
                d = out.__dict__
                d["qdd"] = qdd
                d["reactions"] = reac
                d["body_accelerations"] = acc
                d["layout"] = self.layout
                d["lam"] = _NO_LAM
                return out
        elif not self._ops.compiled:
            # flexible tree: one state through the strategy's kernels
            if (algorithm or self.algorithm) == "serialized":
                out = self._strategy_forward(q, qd, tau, t)
                if out is not None:
                    return out
        elif algorithm is None:
            # loaded rigid tree: the compiled force table in the same compiled call
            out = self._table_forward(q, qd, self._zero_tau if tau is None else tau, t)
            if out is not None:
                return out
        q, qd, algorithm = self._prepare(
            q,
            qd,
            1,
            algorithm,
            lambda q, qd: (
                f"forward_dynamics takes one state (q ({self.nq},), qd ({self.nv},)); got "
                f"{q.shape}, {qd.shape}: use forward_dynamics_batch(Q, QD, TAU) for many"
            ),
        )
        if not self._ops.compiled or algorithm == "general":
            return self._batch(
                q[None],
                qd[None],
                None if tau is None else np.asarray(tau, dtype=float)[None],
                np.asarray([t], dtype=float),
                algorithm,
                single=True,
            )
        # rigid tree, serialized, with force elements (or converted arrays): one compiled
        # call on the system's workspace with the applied forces in place
        tv = np.zeros(max(self.nv, 1))
        if tau is not None:
            tau = np.asarray(tau, dtype=float)
            if tau.shape != (self.nv,):
                raise ModelError(f"tau needs {self.nv} values (the speeds); got {tau.shape}")
            tv[: self.nv] = tau
        q, qd = np.ascontiguousarray(q), np.ascontiguousarray(qd)
        out = self._table_forward(q, qd, tv, t)
        if out is not None:
            return out
        fext = self._Vv[V_FEXT]
        fext[:] = 0.0
        if self._joint_forces or self._generic:
            self._applied(t, q, qd, tv, fext)
        qdd = np.empty(self.nv)
        reac = np.empty(self._reac_shape)
        acc = np.empty(self._acc_shape)
        st = K.qdd_reactions(
            self._Ib, self._buf, q, qd, tv, qdd, reac, acc, _E2, _E1, self._body_row
        )
        fext[:] = 0.0
        if st == -4 and np.all(np.isfinite(q)) and np.all(np.isfinite(qd)):
            raise SolverError(
                "forward dynamics produced non-finite accelerations (check tau "
                "and the force elements for NaN/inf)"
            )
        if st != 0:
            self._raise_factor(st, q)
        return forward_dynamics_result(qdd, reac, acc, self.layout, _NO_LAM)

    def _strategy_forward(self, q, qd, tau, t):
        """:meth:`forward_dynamics` (serialized) of a tree without a whole-tree kernel
        (flexible bodies): one state through the strategy's kernels (:meth:`_one_state`),
        the numbers of the batch path (:meth:`_batch`) without its batch arrays. None for
        states of other shapes (the general path reports them)."""
        if self._revision != self.model.revision:
            self._refresh()
        q = np.ascontiguousarray(q, dtype=float)
        qd = np.ascontiguousarray(qd, dtype=float)
        if q.shape != (self.nq,) or qd.shape != (self.nv,):
            return None
        tv = np.zeros(max(self.nv, 1))
        if tau is not None:
            tau = np.asarray(tau, dtype=float)
            if tau.shape != (self.nv,):
                raise ModelError(f"tau needs {self.nv} values (the speeds); got {tau.shape}")
            tv[: self.nv] = tau
        reac = np.zeros(self._reac_shape)
        qdd, _, acc, _ = self._flex_state(q, qd, tv, t, reac, True, nonfinite=True, own=True)
        if self._rows_in_label_order:
            acc = acc[1:]  # (a new array: its rows are the layout's body rows)
        else:
            accb = np.zeros(self._acc_shape)
            accb[self._body_row[1:]] = acc[1:]
            acc = accb
        return forward_dynamics_result(qdd, reac, acc, self.layout, _NO_LAM)

    def _table_forward(self, q, qd, tau, t):
        """:meth:`forward_dynamics` of a loaded rigid tree whose force elements the
        compiled table covers, in one compiled call (:func:`._nbforces.tree_forward`);
        None when it does not apply (no table, other array types or sizes, a failed
        solve: the general path converts, checks and reports)."""
        if self.applied_by_caller or not (self._joint_forces or self._generic):
            return None
        if getattr(tau, "shape", None) != (self.nv,):
            return None  # (the kernel reads a longer tau's first nv values)
        tab = self.timed_forces(t)
        if tab is None or self.algorithm != "serialized":
            return None
        qdd = np.empty(self.nv)
        reac = np.empty(self._reac_shape)
        acc = np.empty(self._acc_shape)
        try:
            st = NF.tree_forward(
                self._Ib, self._buf, q, qd, tau, *tab, qdd, reac, acc, self._body_row
            )
        except TypeError:
            return None
        if st != 0:
            return None
        return forward_dynamics_result(qdd, reac, acc, self.layout, _NO_LAM)

    def cfa_forces(
        self,
        q: ArrayLike,
        qd: ArrayLike,
        tau: ArrayLike | None = None,
        t: float = 0.0,
        algorithm: str | None = None,
    ) -> tuple[Array, Array]:
        """The CFA's internal forces at one state: ``(constraint_forces (n_joints, 6),
        equivalent_control_force (nv,))``.

        ``constraint_forces``: the constraint part ``W F_S`` of the equivalent interbody
        force (eq. 5; ``F_S`` the unknowns of eq. 29), ``[n; f]`` in the joint-frame axes
        of the outboard body (the declared child frame; the declared parent frame for a
        joint the topology reversed), at that frame's origin.
        ``equivalent_control_force``: ``F_T = tau - b`` (eq. 4) along the speeds (for a
        reversed joint with a non-orthonormal relative motion subspace -- Planar, Free
        -- in the orthonormalized speeds ``L v``).
        """
        one = lambda q, qd: "cfa_forces takes one state"  # noqa: E731
        q, qd, algorithm = self._prepare(q, qd, 1, algorithm, one)
        _, fs, ft = self._batch(
            q[None],
            qd[None],
            None if tau is None else np.asarray(tau, dtype=float)[None],
            np.asarray([t], dtype=float),
            algorithm,
            single=True,
            internals=True,
        )
        return fs, ft

    def forward_dynamics_batch(
        self,
        Q: ArrayLike,
        QD: ArrayLike,
        TAU: ArrayLike | None = None,
        t: float | ArrayLike = 0.0,
        algorithm: str | None = None,
    ) -> ForwardDynamics:
        """:meth:`forward_dynamics` of many states in one compiled loop.

        ``Q`` (n, nq), ``QD`` (n, nv), ``TAU`` (n, nv) or (nv,) (broadcast) or None,
        ``t`` scalar or (n,). Returns one :class:`~flexmbd.dynamics.ForwardDynamics`
        whose arrays have a leading state axis (``qdd`` (n, nv), ``reactions``
        (n, n_joints, 6), ...). Only ``qdd`` and the reactions, fastest:
        :meth:`forward_dynamics_arrays`.
        """
        Q, QD, algorithm = self._prepare(
            Q,
            QD,
            2,
            algorithm,
            lambda q, qd: (
                f"forward_dynamics_batch takes Q (n, {self.nq}) and QD "
                f"(n, {self.nv}); got {q.shape}, {qd.shape}"
            ),
        )
        ts = np.broadcast_to(np.asarray(t, dtype=float), (Q.shape[0],))
        return self._batch(Q, QD, TAU, ts, algorithm, single=False)

    def _batch(self, Q, V, tau, ts, algorithm, single, internals=False):
        Q = np.ascontiguousarray(Q)
        V = np.ascontiguousarray(V)
        ns = Q.shape[0]
        if V.shape[0] != ns:
            raise ModelError(f"batch sizes of q ({ns}) and qd ({V.shape[0]}) differ")
        nv1 = max(self.nv, 1)
        TAU = np.zeros((ns, nv1))
        if tau is not None:
            try:
                TAU[:, : self.nv] = np.broadcast_to(np.asarray(tau, dtype=float), (ns, self.nv))
            except ValueError:
                raise ModelError(
                    f"tau needs {self.nv} values per state (the speeds); got {np.shape(tau)}"
                ) from None
        has_fext = bool(self._generic)
        FEXT = np.zeros((ns if has_fext else 1, self.n_bodies + 1, 6))
        compiled = self._ops.compiled and algorithm == "serialized"
        if (self._joint_forces or self._generic) and compiled:
            self._batch_loads(Q, V, TAU, FEXT, ts, has_fext)
        nj = len(self.joint_names)
        QDD = np.zeros((ns, nv1))
        REAC = np.zeros((ns, nj, 6))
        FS = np.zeros((ns, self.n_bodies + 1, 6))
        ACC = np.zeros((ns, self.n_bodies + 1, 6))
        FTs = np.zeros((ns, nv1))
        if not compiled:
            for s in range(ns):
                QDD[s, : self.nv], FS[s], ACC[s], FTs[s, : self.nv] = self._one_state(
                    Q[s], V[s], TAU[s], ts[s], algorithm, REAC[s]
                )
        else:
            FE = FEXT if has_fext else np.zeros((ns, self.n_bodies + 1, 6))
            self._parallel(1, Q, V, TAU, QDD, REAC, (FE, FS, ACC, FTs))
        # constraint part W F_S: rotate aligned axes back to the joint frame axes
        Ra = self._R3[R_A]
        FSj = np.zeros((ns, nj, 6))
        rows = self._Ia[I_JROW]
        for k in range(1, self.n_bodies + 1):
            FSj[:, rows[k], :3] = FS[:, k, :3] @ Ra[k].T
            FSj[:, rows[k], 3:] = FS[:, k, 3:] @ Ra[k].T
        # body accelerations from label order to the layout's body order
        ACCb = np.zeros((ns, len(self._bodies), 6))
        ACCb[:, self._body_row[1:]] = ACC[:, 1:]
        qdd, ft = QDD[:, : self.nv], FTs[:, : self.nv]
        if not np.all(np.isfinite(qdd)):
            raise SolverError("forward dynamics produced non-finite accelerations")
        if single:
            out = ForwardDynamics(qdd[0], REAC[0], ACCb[0], self.layout, _NO_LAM)
            return (out, FSj[0], ft[0]) if internals else out
        return ForwardDynamics(qdd, REAC, ACCb, self.layout, np.zeros((ns, 0)))

    def _batch_loads(self, Q, V, TAU, FEXT, ts, has_fext):
        """The force elements' loads of the states ``Q``, ``V`` at the times ``ts`` added
        to ``TAU`` and ``FEXT`` (e_k axes at O_k): by the compiled table in one call
        (:func:`._nbforces.table_loads`) when it covers the elements, else from Python
        state by state (:meth:`_applied`)."""
        entry = self._own_table()
        if entry is not None:
            ns = Q.shape[0]
            F = FEXT if has_fext else np.zeros((ns, self.n_bodies + 1, 6))
            T = TAU.copy()
            if not entry[1]:  # no function of time: every state in one call
                st = NF.table_loads(self._Ib, self._buf, Q, V, T, F, *entry[0])
            else:  # the time functions evaluated per state, the loads compiled
                st = 0
                for s in range(ns):
                    tab = self.timed_forces(ts[s])
                    sl = slice(s, s + 1)
                    st = st or NF.table_loads(self._Ib, self._buf, Q[sl], V[sl], T[sl], F[sl], *tab)
            if st == 0:
                TAU[:] = T
                return
            F[:] = 0.0  # coincident SDA points: the Python path reports them
        for s in range(Q.shape[0]):
            self._applied(ts[s], Q[s], V[s], TAU[s], FEXT[s if has_fext else 0])

    def _one_state(self, q, v, tau, t, algorithm, reac, full=True, internals=True):
        """One state through the tree strategy's kernels (serialized) or the dense
        reference (general), the applied loads in the workspace for the call: returns
        ``(qdd (nv,), W F_S (N+1, 6), body accelerations (N+1, 6), F_T (nv,))`` (with
        ``full=False`` the serialized path returns ``qdd`` and None for the rest; with
        ``internals=False`` None for ``W F_S`` and ``F_T``) and the reactions into
        ``reac``. ``tau`` (nv,) or longer; joint forces are added to a copy."""
        ops = self._ops
        nv = self.nv
        if algorithm == "serialized" and not (full and internals):
            return self._flex_state(q, v, tau, t, reac, full)
        fext = self._Vv[V_FEXT]
        fext[:] = 0.0
        ops.clear_applied()
        tv = np.zeros(max(nv, 1))
        tv[:nv] = tau[:nv]
        try:
            if self._joint_forces or self._generic:
                self._applied(t, q, v, tv, fext)
            ops.add_modal_tau(tv[:nv])
            if algorithm == "general":
                qdd, reac[:], FS, acc, ft = ops.general(self, q, v, tv[:nv], fext)
                return qdd, FS, acc, ft
            st = ops.forward(q, v, tv, reac)
            if st != 0:
                self._raise_factor(st, q)
            Jv = self._Jv
            if not full:
                return Jv[K.J_QDD, :nv].copy(), None, None, None
            acc = np.zeros((self.n_bodies + 1, 6))
            ops.body_accelerations(acc)
            if not internals:
                return Jv[K.J_QDD, :nv].copy(), None, acc, None
            return Jv[K.J_QDD, :nv].copy(), self._Vv[K.V_BX].copy(), acc, Jv[K.J_FT, :nv].copy()
        finally:
            fext[:] = 0.0
            ops.clear_applied()

    def _flex_state(self, q, v, tau, t, reac, full, nonfinite=False, own=False):
        """:meth:`_one_state` (serialized, ``internals=False``) in one compiled call
        (:func:`._nbsingle.flex_forward_dynamics`): the loads, the strategy's forward
        dynamics and, with ``full``, the body accelerations; the same kernels on the same
        values. ``(qdd, None, body accelerations (N+1, 6) or None, None)``, the reactions
        into ``reac``. A non-finite acceleration is returned as it is, or raises
        SolverError with ``nonfinite``. ``own``: ``tau`` is the caller's own float array
        of ``max(nv, 1)`` values, which the loads may change (else a copy is made)."""
        ops = self._ops
        nv = self.nv
        if own:
            tv = tau
        else:
            tv = np.zeros(max(nv, 1))
            tv[:nv] = tau[:nv]
        memo = getattr(self, "_flex_memo", None)
        if memo is None or memo[0] != self._revision:
            memo = self._flex_memo = self._flex_plan()
        _, MI, kernel, nonfinite_status, tol, max_iter = memo
        qdd = np.empty(nv)
        acc = np.zeros((self.n_bodies + 1, 6)) if full else _E2
        args = (ops.work, q, v, tv, MI, self.arrays.gravity, self._use_grav, reac)
        more = (ops.any_stiff, tol, max_iter, ops.info, qdd, acc, full)
        if self._joint_forces or self._generic:
            fext = self._Vv[V_FEXT]
            fext[:] = 0.0
            ops.clear_applied()
            try:
                self._applied(t, q, v, tv, fext)
                st = kernel(*args, *more, False)
            finally:
                fext[:] = 0.0
                ops.clear_applied()
        else:
            st = kernel(*args, *more, True)
        if st == nonfinite_status:
            if nonfinite:
                raise SolverError("forward dynamics produced non-finite accelerations")
        elif st != 0:
            self._raise_factor(st, q)
        return qdd, None, (acc if full else None), None

    def flex_single_args(self) -> tuple:
        """The constant arguments of :func:`._nbsingle.flex_forward_dynamics` for this tree
        with flexible bodies (refreshed with the model): ``(MI, gravity (3,) m/s^2, use
        gravity, reactions scratch (joints, 6), stiffening tolerance, iterations, info)``;
        ``MI`` the modal speeds' rows as in :meth:`_flex_state`. For callers that compose
        the single-state kernel with more compiled work (the loop layer)."""
        self._refresh()
        memo = getattr(self, "_flex_memo", None)
        if memo is None or memo[0] != self._revision:
            memo = self._flex_memo = self._flex_plan()
        _, MI, _, _, tol, max_iter = memo
        reac = getattr(self, "_flex_reac", None)
        if reac is None or reac.shape != self._reac_shape:
            reac = self._flex_reac = np.zeros(self._reac_shape)
        return MI, self.arrays.gravity, self._use_grav, reac, tol, max_iter, self._ops.info

    def _flex_plan(self):
        """What :meth:`_flex_state` reads once per model revision: ``(revision, MI,
        kernel, its non-finite status, stiffening tolerance, iterations)``; ``MI`` (int64
        rows ``(label, mode, speed index)``) the modal speeds, as the flexible tree's
        ``add_modal_tau`` adds their forces (flexible bodies in label order)."""
        from . import _nbsingle as NS  # lazy: the flexible kernels load on first use
        from .flexible import STIFF_MAX_ITER, STIFF_TOL

        ops = self._ops
        rows = []
        for k in ops.flex_labels:
            sl = self.modal_slices[self.label_bodies[k].name].v
            rows += [(k, j, sl.start + j) for j in range(ops.nf[k])]
        MI = np.array(rows, dtype=np.int64).reshape(-1, 3)
        return (self._revision, MI, NS.flex_forward_dynamics, NS.NONFINITE, STIFF_TOL,
                STIFF_MAX_ITER)  # fmt: skip

    def forward_dynamics_arrays(
        self, Q: ArrayLike, V: ArrayLike, TAU: ArrayLike | None = None, threads: int = 1
    ) -> tuple[Array, Array]:
        """Lean batched forward dynamics: ``(qdd (n, nv), reactions (n, nj, 6))``.

        For throughput: one compiled loop over the states (no Python work per
        state). ``threads > 1`` splits the batch over that many threads, each with
        its own workspace (``None``: numba's thread count for batches of at least
        256 states; it pays only when cores are idle). Force elements other than
        gravity (and JointForce) go through :meth:`forward_dynamics`. Raises
        SolverError on failure.
        """
        self._refresh()
        if self._generic or self._joint_forces or not self._ops.compiled:
            fd = self.forward_dynamics_batch(Q, V, TAU)
            return fd.qdd, fd.reactions
        Q = np.ascontiguousarray(Q, dtype=float)
        V = np.ascontiguousarray(V, dtype=float)
        ns = Q.shape[0]
        TAU = np.zeros((ns, self.nv)) if TAU is None else np.ascontiguousarray(TAU, dtype=float)
        if Q.shape != (ns, self.nq) or V.shape != (ns, self.nv) or TAU.shape != (ns, self.nv):
            raise ModelError(
                f"batch shapes: Q (n, {self.nq}), V and TAU (n, {self.nv}); got "
                f"{Q.shape}, {V.shape}, {TAU.shape}"
            )
        QDD = np.zeros((ns, self.nv))
        REAC = np.zeros((ns, len(self.joint_names), 6))
        if threads is None:
            import numba

            threads = numba.get_num_threads() if ns >= 256 else 1
        threads = max(1, min(int(threads), ns))
        if threads == 1:
            # one compiled loop on the system's packed workspace
            status = np.full(2, -1, np.int64)
            K.qdd_reactions_batch(self._Ib, self._buf, Q, V, TAU, QDD, REAC, status)
            if status[0] >= 0:
                self._raise_factor(int(status[1]), Q[int(status[0])])
            return QDD, REAC
        # one compiled entry point for every thread count (each entry point costs
        # its own compilation): chunk c of the batch runs on workspace copy c
        self._parallel(threads, Q, V, TAU, QDD, REAC, None)
        return QDD, REAC

    def _parallel(self, threads, Q, V, TAU, QDD, REAC, extra):
        """The batched rigid kernel on ``threads`` workspaces (chunk c of the batch on
        copy c); ``extra``: ``(FEXT, FS, ACC, FT)`` (per-state wrenches in, constraint
        forces, body accelerations and F_T out) or None. Raises the first failure."""
        full = extra is not None
        if not full:
            d3 = np.zeros((1, 1, 6))
            extra = (d3, d3, d3, np.zeros((1, 1)))
        status = np.full((threads, 2), -1, np.int64)
        K.forward_dynamics_qdd_parallel(
            *self.tree,
            *self._thread_workspaces(threads),
            Q,
            V,
            TAU,
            self._gravity,
            self._use_grav,
            QDD,
            REAC,
            status,
            *extra,
            full,
        )
        bad = status[status[:, 0] >= 0]
        if len(bad):
            self._raise_factor(int(bad[0, 1]), Q[int(bad[0, 0])])

    def _thread_workspaces(self, threads):
        """Workspace copies for ``threads`` chunks (constants included), cached; one
        thread uses the system's own workspace."""
        if threads == 1:
            return tuple(a[None] for a in self.workspace[:-1])
        key = (threads, self._revision)
        if getattr(self, "_tws_key", None) != key:
            self._tws = self.workspace.replicate(threads)
            self._tws_key = key
        return self._tws

    def qdd_and_reactions(
        self, q: ArrayLike, qd: ArrayLike, tau: ArrayLike | None = None, t: float = 0.0
    ) -> tuple[Array, Array]:
        """Lean single-state call: ``(qdd (nv,), reactions (n_joints, 6))`` as new arrays.

        Same numbers as :meth:`forward_dynamics` without the result object (for
        control loops and benchmarks).
        """
        if self._lean == self.model.revision and (
            tau is None or getattr(tau, "shape", None) == (self.nv,)
        ):
            # fast path: float64 contiguous arrays go straight to the compiled entry
            # point (it checks their sizes); anything else raises TypeError there and
            # takes the general path below, which converts, checks and reports
            qdd = np.empty(self.nv)
            reac = np.empty(self._reac_shape)
            # unrolled: the compiled call of _raw_accel's lean path, inline: a shared
            # helper would add a Python call to this few-microsecond entry point
            try:
                if (
                    _qdd_reactions(
                        self._Ib,
                        self._buf,
                        q,
                        qd,
                        self._zero_tau if tau is None else tau,
                        qdd,
                        reac,
                        _E2,
                        _E2,
                        _E1,
                        _EI,
                    )
                    == 0
                ):
                    return qdd, reac
            except TypeError:
                pass
        return self._raw_accel(q, qd, tau, t, reactions=True)

    def qdd(
        self, q: ArrayLike, qd: ArrayLike, tau: ArrayLike | None = None, t: float = 0.0
    ) -> Array:
        """Accelerations only (nv,), a new array: the lean call the integrators make
        (same numbers as :meth:`forward_dynamics`)."""
        return self._raw_accel(q, qd, tau, t)

    def _raw_accel(self, q, qd, tau=None, t=0.0, reactions=False):
        """Lean single-state forward dynamics for integrators: returns qdd (new array)."""
        if (
            self._lean == self.model.revision
            and not reactions
            and (tau is None or getattr(tau, "shape", None) == (self.nv,))
        ):
            qdd = np.empty(self.nv)
            try:
                if (
                    _qdd_reactions(
                        self._Ib,
                        self._buf,
                        q,
                        qd,
                        self._zero_tau if tau is None else tau,
                        qdd,
                        self._reac,
                        _E2,
                        _E2,
                        _E1,
                        _EI,
                    )
                    == 0
                ):
                    return qdd
            except TypeError:
                pass
        if self._revision != self.model.revision:
            self._refresh()
        if not self._ops.compiled or self.algorithm == "general":
            q = np.ascontiguousarray(q, dtype=float)
            qd = np.ascontiguousarray(qd, dtype=float)
            tv = np.zeros(self.nv) if tau is None else np.asarray(tau, dtype=float)
            if q.shape != (self.nq,) or qd.shape != (self.nv,) or tv.shape != (self.nv,):
                raise ModelError(
                    f"state sizes: q needs {self.nq} values, qd and tau {self.nv}; got "
                    f"{q.shape}, {qd.shape}, {tv.shape}"
                )
            reac = np.empty(self._reac_shape)
            qdd = self._one_state(q, qd, tv, t, self.algorithm, reac, full=False)[0]
            return (qdd, reac) if reactions else qdd
        applied = self._joint_forces or self._generic
        if applied:
            out = self._compiled_applied(q, qd, tau, reactions, t)
            if out is not None:
                return out
            tv = np.zeros(max(self.nv, 1))
            if tau is not None:
                tau = np.asarray(tau, dtype=float)
                if tau.shape != (self.nv,):
                    raise ModelError(f"tau needs {self.nv} values (the speeds); got {tau.shape}")
                tv[: self.nv] = tau
            self._applied(t, q, qd, tv, self._Vv[V_FEXT])
            tau = tv
        elif tau is None:
            tau = self._zero_tau
        # writable contiguous float64 copies (the entry point's signature)
        q, qd, tau = (np.array(x, dtype=float) for x in (q, qd, tau))
        if (
            q.shape != (self.nq,)
            or qd.shape != (self.nv,)
            or tau.ndim != 1
            or tau.shape[0] not in (self.nv, max(self.nv, 1))  # (padded: no speeds)
        ):
            raise ModelError(
                f"state sizes: q needs {self.nq} values, qd and tau {self.nv}; got "
                f"{q.shape}, {qd.shape}, {tau.shape}"
            )
        qdd = np.empty(self.nv)
        reac = np.empty(self._reac.shape)
        st = K.qdd_reactions(self._Ib, self._buf, q, qd, tau, qdd, reac, _E2, _E2, _E1, _EI)
        if applied:
            self._Vv[V_FEXT] = 0.0
        if st != 0:
            self._raise_factor(st, q)
        return (qdd, reac) if reactions else qdd

    def _compiled_applied(self, q, qd, tau, reactions, t=0.0):
        """:meth:`_raw_accel` with the force elements in compiled code
        (:func:`._nbforces.tree_qdd`), or None (an element needs Python, other shapes, a
        failed solve: the Python path reports). Not for a tree inside a closed-loop
        system: its cut-joint wrenches (``applied_by_caller``) are Python loads."""
        tab = self.timed_forces(t)
        if tab is None:
            return None
        q = np.ascontiguousarray(q, dtype=float)
        qd = np.ascontiguousarray(qd, dtype=float)
        tv = self._zero_tau if tau is None else np.ascontiguousarray(tau, dtype=float)
        if q.shape != (self.nq,) or qd.shape != (self.nv,) or tv.shape != (self.nv,):
            return None
        qdd = np.empty(self.nv)
        reac = np.empty(self._reac.shape)
        if NF.tree_qdd(self._Ib, self._buf, q, qd, tv, *tab, qdd, reac) != 0:
            return None
        return (qdd, reac) if reactions else qdd

    def _raise_factor(self, st, q):
        if not np.all(np.isfinite(q)):
            # not a singular inertia: the state itself blew up before this evaluation
            raise SolverError(
                f"non-finite coordinates reached the forward dynamics (q = "
                f"{np.round(q, 6).tolist()}): the state blew up, e.g. an explicit step beyond "
                "the stability limit of the stiffest mode, a force returning NaN or an "
                "unstable model; reduce dt (or use integrator='rk45' or an implicit one), or "
                "check the applied forces"
            )
        if st == -2:
            raise SolverError(
                f"the geometric-stiffening fixed point did not converge at q = "
                f"{np.round(q, 6).tolist()} (loads far beyond the linear range of the modes, "
                "or a non-physical state); switch it off with "
                "FlexibleBody(geometric_stiffening=False) or check the state"
            )
        if st > 0 and self._Ia[K.I_PARENT, st] >= 0 and st in self._ops.flex_labels:
            b = self._body_of[st]
            raise SolverError(
                f"flexible body {b.name!r} (or its joint {self._tree_joint[st].name!r}): the "
                f"generalized mass or constraint-force block is not positive definite at q = "
                f"{np.round(q, 6).tolist()}"
            )
        if st > 0:
            j = self._tree_joint[st]
            raise SolverError(
                f"constraint-force block of joint {j.name!r} is not positive definite at q = "
                f"{np.round(q, 6).tolist()} (singular inertia or non-finite state)"
            )
        raise SolverError(
            "the dense node system of the CFA is not positive definite "
            f"at q = {np.round(q, 6).tolist()}"
        )

    def solve_mass(self, q: ArrayLike, rhs: ArrayLike) -> Array:
        """``M(q)^-1 rhs`` by the CFA (one factorization, O(N) per column).

        ``rhs`` (nv,) or (nv, m). A building block for cut-joint constraints:
        with the equivalent control force ``F_T = rhs`` the CFA returns ``M^-1 F_T``.
        """
        self._refresh()
        q = np.ascontiguousarray(q, dtype=float)
        rhs = np.asarray(rhs, dtype=float)
        if q.shape != (self.nq,) or rhs.shape[0] != self.nv:
            raise ModelError(
                f"solve_mass: q needs {self.nq} values and rhs {self.nv} rows; got "
                f"{q.shape}, {rhs.shape}"
            )
        cols = np.array(rhs.reshape(self.nv, -1), dtype=float)
        # reversed joints (and screws) work with orthonormal speeds L v: F_T' = L^-T F_T
        rev = [
            k
            for k in range(1, self.n_bodies + 1)
            if (self._Ia[I_REV, k] or self._Ia[I_JT, k] == J.SCREW) and self._Ia[I_NV, k]
        ]
        if rev:
            self._kinematics(q, np.zeros(self.nv))
            for k in rev:
                nvk = self._Ia[I_NV, k]
                sl = slice(self._Ia[I_VO, k], self._Ia[I_VO, k] + nvk)
                cols[sl] = np.linalg.solve(self._Mm[M_L, k, :nvk, :nvk].T, cols[sl])
        out = np.empty_like(cols)
        st = self._ops.solve_columns(q, cols, out)
        if st != 0:
            self._raise_factor(st, q)
        return out.reshape(rhs.shape)

    def inverse_dynamics(
        self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, t: float = 0.0, forces: bool = True
    ) -> Array:
        """Joint forces ``tau`` (nv,) that produce ``qdd``: ``M qdd + b(q, qd)``.

        ``b`` includes gravity and the force elements (JointForce elements are
        subtracted: ``tau`` is what must be added to them) unless ``forces=False``.
        Returns ``(tau, reactions)``.
        """
        self._refresh()
        q, qd = self._check_state(q, qd)
        qdd = np.ascontiguousarray(qdd, dtype=float)
        if qd.ndim != 1 or qdd.shape != (self.nv,):
            raise ModelError(f"inverse_dynamics takes one state: qd and qdd with {self.nv} values")
        if not self._ops.compiled:
            return self._inverse_dynamics_by_solves(q, qd, qdd, t, forces)
        tau_app = np.zeros(max(self.nv, 1))
        fext = self._Vv[V_FEXT]
        fext[:] = 0.0
        if forces and (self._joint_forces or self._generic):
            q, qd = np.ascontiguousarray(q), np.ascontiguousarray(qd)
            self._batch_loads(q[None], qd[None], tau_app[None], fext[None], [t], True)
        tau = np.zeros(max(self.nv, 1))
        reac = np.zeros((len(self.joint_names), 6))
        K.inverse_dynamics(
            self._Ia,
            self._Mm,
            self._Vv,
            self._R3,
            self._P3,
            self._Tt,
            np.ascontiguousarray(q),
            np.ascontiguousarray(qd),
            qdd,
            self._Jv,
            self._gravity,
            self._use_grav and forces,
            tau,
            reac,
        )
        fext[:] = 0.0
        return tau[: self.nv] - tau_app[: self.nv], reac

    def _inverse_dynamics_by_solves(self, q, qd, qdd, t, forces):
        """Without a compiled inverse dynamics (flexible bodies): ``tau = M (qdd -
        qdd(tau=0))`` with ``M`` from CFA solves (O(N^2) per call; for tests and the loop
        layer, not for speed)."""
        M = self.mass_matrix(q)
        use, gen, jf, plan = self._use_grav, self._generic, self._joint_forces, self._joint_plan
        if not forces:
            self._use_grav, self._generic, self._joint_forces, self._joint_plan = False, [], [], []
        try:
            q0 = self._raw_accel(q, qd, None, t)
            tau = M @ (qdd - q0)
            _, reac = self._raw_accel(q, qd, tau, t, reactions=True)
        finally:
            self._use_grav, self._generic, self._joint_forces = use, gen, jf
            self._joint_plan = plan
        return tau, reac

    def mass_matrix(self, q: ArrayLike) -> Array:
        """Joint-space mass matrix (nv x nv) by Newton-Euler columns (for tests; with
        flexible bodies the inverse of the CFA's ``M^-1`` columns)."""
        self._refresh()
        return self._ops.mass_matrix(self, q)

    # ------------------------------------------------------------------ states
    def _kin(self, q, qd):
        self._refresh()
        q, qd = self._check_state(q, qd)
        return self._kinematics(q, qd)

    def body_states(
        self, q: ArrayLike, qd: ArrayLike | None = None
    ) -> dict[str, tuple[Array, Array, Array, Array]]:
        """``{body_name: (R, r, w_world, v_origin_world)}`` of every body."""
        qd = np.zeros(self.nv) if qd is None else qd
        Rw, rw, vel = self._kin(q, qd)
        st = _State(self, Rw, rw, vel)
        out = {}
        for k in range(1, self.n_bodies + 1):
            b = self._body_of[k]
            R, r = st.pose(b)
            w, v = st.twist(b)
            out[b.name] = (R, r, w, v)
        return out

    def body_motion(self, q: ArrayLike, qd: ArrayLike) -> Mapping[str, tuple[Array, ...]]:
        """``{body name: (R (nt, 3, 3), r (nt, 3), w (nt, 3), v (nt, 3))}`` over a history
        ``q`` (nt, nq), ``qd`` (nt, nv): world pose, angular velocity and the velocity of
        the body point at the world origin (world axes), as :meth:`body_states` per state.
        The tree kinematics of every state in one compiled call; a rigid body's frame
        change over the history when its entry is first read (the joint series of a
        closed loop read the cut joints' bodies only)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        memo = self._motion_memo  # the joint states ask for the same history repeatedly
        if (
            memo is not None
            and memo[0] == self.model.revision
            and np.array_equal(memo[1], q)
            and np.array_equal(memo[2], qd)
        ):
            return self._motion_history(*memo[3])
        out = self._body_motion(q, qd)
        self._motion_memo = (self.model.revision, q.copy(), qd.copy(), out)
        return self._motion_history(*out)

    def _motion_history(self, Rw, rw, vel, floating):
        label = {self._body_of[k].name: k for k in range(1, self.n_bodies + 1)}
        return _MotionHistory(label, lambda k: self._rigid_motion(k, Rw, rw, vel), floating)

    def _rigid_motion(self, k, Rw, rw, vel):
        """``(R, r, w, v)`` over a history of the rigid body of label ``k`` from the
        kinematics of its tree frame (``Rw``, ``rw``, ``vel``: :meth:`_kinematics_history`)."""
        Rf, pf = self._frame[k]
        Rk, rk = Rw[:, k], rw[:, k]
        R = Rk @ np.asarray(Rf).T
        r = rk - R @ np.asarray(pf)
        w = np.einsum("tij,tj->ti", Rk, vel[:, k, :3])
        v = np.einsum("tij,tj->ti", Rk, vel[:, k, 3:]) + cross_rows(w, r - rk)
        return R, r, w, v

    def _body_motion(self, q, qd):
        """Tree kinematics per state: ``(Rw, rw, vel, {label: floating (R, r, w, v)})``,
        the frames e_k of the history (:meth:`_kinematics_history`) and the floating
        frames of the flexible bodies (the strategy's workspace after each state's
        kinematics)."""
        nt, n = len(q), self.n_bodies
        ops = self._ops
        floating = {k: tuple(np.empty((nt, *s)) for s in _MOTION) for k in ops.flex_labels}
        if floating:
            Rw = np.empty((nt, n + 1, 3, 3))
            rw = np.empty((nt, n + 1, 3))
            vel = np.empty((nt, n + 1, 6))
            for i in range(nt):
                Rw[i], rw[i], vel[i] = self._kin(q[i], qd[i])
                for k, (R, r, w, v) in floating.items():
                    R[i], r[i] = ops.body_pose(k, Rw[i, k], rw[i, k])
                    Vb = ops.body_speeds(k)
                    w[i], v[i] = R[i] @ Vb[:3], R[i] @ Vb[3:]
        else:
            Rw, rw, vel, _ = self._kinematics_history(q, qd)
        return Rw, rw, vel, floating

    def _kinematics_history(self, q, qd):
        """``(Rw (nt, N+1, 3, 3), rw (nt, N+1, 3), vel (nt, N+1, 6))``: the tree kinematics
        (the workspace's ``R_W``, ``P_W``, ``V_VEL``) of every state of a history, with
        the table energies of each state (:meth:`_table_energy`, ``(nt, 4)`` or None);
        kept for the same history (the energies and the joint series of one run ask for
        it in turn)."""
        out = self._history(q, qd)
        return out[:4]

    def _history(self, q, qd):
        """:meth:`_kinematics_history` and the kinetic and gravity energies (nt, 2) of
        the states (None where the kinematics ran per state: flexible bodies)."""
        memo = self._kin_memo
        if (
            memo is not None
            and memo[0] == self.model.revision
            and np.array_equal(memo[1], q)
            and np.array_equal(memo[2], qd)
        ):
            return memo[3]
        nt, n = len(q), self.n_bodies
        Rw = np.empty((nt, n + 1, 3, 3))
        rw = np.empty((nt, n + 1, 3))
        vel = np.empty((nt, n + 1, 6))
        table = np.empty((nt, 4)) if self._generic and self._ops.compiled else None
        tab = self.compiled_forces() if table is not None else None
        if table is not None and tab is None:
            table = None
        E = None
        if self._ops.compiled and not self._ops.flex_labels:
            # every state in one compiled call (the same kinematics and table energies)
            self._refresh()
            Q, QD = (np.ascontiguousarray(x, dtype=float) for x in self._check_state(q, qd))
            ft = tab if tab is not None else self._no_table()
            E = np.empty((nt, 2))
            g = np.ascontiguousarray(self._gravity, dtype=float)
            bad = NF.kinematics_history(
                self._Ia, self._Mm, self._Vv, self._R3, self._P3, self._Tt, Q, QD, Rw, rw,
                vel, g, E, self.nv, *ft, table if table is not None else np.zeros((1, 4)),
                table is not None,
            )  # fmt: skip
            if bad:
                table = None
        else:
            for i in range(nt):
                Rw[i], rw[i], vel[i] = self._kin(q[i], qd[i])
                if table is not None:
                    e = self._table_energy(qd[i])
                    if e is None:
                        table = None
                    else:
                        table[i] = e
        out = (Rw, rw, vel, table, E)
        self._kin_memo = (self.model.revision, q.copy(), qd.copy(), out)
        return out

    def keep_history(
        self, q: Array, qd: Array, Rw: Array, rw: Array, vel: Array, en: Array, given: Array
    ) -> None:
        """Keep the kinematics history of the states ``q`` (nt, nq), ``qd`` (nt, nv) that
        the energies and the joint series of a run read next (:meth:`energy_samples`,
        :meth:`body_motion`) in the rows a compiled run wrote at those very states
        (:func:`._nbforces.sample_history`: world poses ``Rw`` (nt, N + 1, 3, 3), ``rw``,
        twists ``vel`` in e_k axes and ``en = (kinetic, gravity, four force-table terms,
        ok)`` (nt, 7), J and W; the same operations as the history's own pass, so the
        same numbers), valid where ``given`` (nt,); the other rows are computed into them
        by that pass. The arrays are kept, not copied. Nothing for flexible bodies, the
        Python path or rows of another length."""
        if self._ops.flex_labels or not self._ops.compiled:
            return
        q = np.atleast_2d(np.asarray(q, dtype=float))
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        nt = len(q)
        if not (len(given) == len(Rw) == len(en) == nt):
            return
        done = np.asarray(given, dtype=bool) & (en[:, 6] == 1.0)
        if not done.any():
            return
        table_kept = bool(self._generic) and self.compiled_forces() is not None
        out = [Rw, rw, vel, en[:, 2:6] if table_kept else None, en[:, :2]]
        if not done.all():
            todo = np.flatnonzero(~done)
            rest = self._history(q[todo], qd[todo])
            for a, b in zip(out, rest, strict=True):
                if a is not None and b is not None:
                    a[todo] = b
            if rest[3] is None:
                out[3] = None
        self._kin_memo = (self.model.revision, q.copy(), qd.copy(), tuple(out))

    def _timed_history(self, t, q, qd):
        """``(table energies (nt, 4), (kinetic, gravity) (nt, 2))`` of the states ``q``,
        ``qd`` at the times ``t`` with the force table's functions of time evaluated per
        state (:meth:`timed_forces`; one compiled kinematics pass each), or ``(None,
        None)`` when the table has no such value or does not cover the elements. (The
        elements a wrapping system applies are left out: a closed loop's cut-joint
        wrenches do no work.)"""
        entry = self._table_entry(())
        if entry is None or not entry[1] or self._ops.flex_labels:
            return None, None
        Q, QD = (np.ascontiguousarray(x, dtype=float) for x in self._check_state(q, qd))
        nt, n1 = len(Q), self.n_bodies + 1
        Rw, rw, vel = np.empty((1, n1, 3, 3)), np.empty((1, n1, 3)), np.empty((1, n1, 6))
        E, table = np.empty((nt, 2)), np.empty((nt, 4))
        g = np.ascontiguousarray(self._gravity, dtype=float)
        for i in range(nt):
            tab = self._set_timed(entry, t[i])
            bad = NF.kinematics_history(
                self._Ia, self._Mm, self._Vv, self._R3, self._P3, self._Tt, Q[i : i + 1],
                QD[i : i + 1], Rw, rw, vel, g, E[i : i + 1], self.nv, *tab, table[i : i + 1],
                True,
            )  # fmt: skip
            if bad:
                return None, None
        return table, E

    def energy_samples(
        self,
        t: ArrayLike,
        q: ArrayLike,
        qd: ArrayLike,
        tau: ArrayLike | None = None,
        rows: Array | None = None,
    ) -> dict[str, Array] | None:
        """The energies (J) and powers (W) of :meth:`kinetic_energy`,
        :meth:`potential_energies` and :meth:`powers` over a history ``t`` (nt,) s, ``q``
        (nt, nq), ``qd`` (nt, nv), ``tau`` (nt, nv) N / N m or None, from one kinematics
        pass per state: ``{"kinetic", "gravity", "spring", "p_damper", "p_actuator",
        "p_external"}`` (nt,) each. None for flexible bodies or force elements outside
        the compiled table (the per-state methods then apply). ``rows`` (>= nt, 7): the
        samples' ``(kinetic, gravity, table energies, ok)`` that the compiled RK4 steps
        wrote (:func:`._nbforces.sample_energies`), taken where ``ok`` is 1. Flexible
        bodies: one compiled call over the history when the loads are gravity, joint and
        modal forces and joint spring-damper laws
        (:meth:`flexmbd.recursive.flexible.FlexTree.energy_samples`; ``rows`` unused)."""
        self._refresh()
        if self._ops.flex_labels and self.algorithm == "serialized":
            q, qd = self._check_state(np.atleast_2d(q), np.atleast_2d(qd))
            return self._ops.energy_samples(t, q, qd, tau)
        if self._ops.flex_labels or not self._ops.compiled:
            return None
        q = np.atleast_2d(np.asarray(q, dtype=float))
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        q, qd = self._check_state(q, qd)
        nt = len(q)
        given = np.zeros(nt, dtype=bool)
        if rows is not None:
            n = min(nt, len(rows))
            given[:n] = rows[:n, 6] == 1.0
        E = np.empty((nt, 6))
        idx = np.flatnonzero(given)
        E[idx] = rows[idx, :6] if len(idx) else 0.0
        if not given.all():
            todo = slice(None) if not given.any() else np.flatnonzero(~given)
            tt = np.broadcast_to(np.asarray(t, dtype=float), (nt,))[todo]
            table, Et = self._timed_history(tt, q[todo], qd[todo])
            if table is None:
                _, _, _, table, Et = self._history(q[todo], qd[todo])
            if self._generic and table is None:
                return None
            E[todo, :2] = Et
            if table is not None:
                E[todo, 2:] = table
        table = E[:, 2:] if self._generic else None
        ke, grav = E[:, 0].copy(), E[:, 1].copy()
        p_act = np.zeros(nt)
        t_ = np.broadcast_to(np.asarray(t, dtype=float), (nt,))
        for f in self._joint_forces:
            sq, sv = self._qslice[f.joint.name], self._vslice[f.joint.name]
            if f.constant_force is not None:  # the whole history at once
                p_act += qd[:, sv] @ f.constant_force
                continue
            if f.law is not None:
                k, c, x0 = f.law  # the law's formula, elementwise over the history
                qj, vj = q[:, sq.start], qd[:, sv.start]
                if getattr(f.actuator, "constant", False):
                    fa = float(f.actuator(0.0))
                else:  # a function of time: one call per sample
                    fa = np.array([float(f.actuator(x)) for x in t_])
                p_act += (fa - k * (qj - x0) - c * vj) * vj
                continue
            if f.user_law is not None and sq.stop - sq.start == 1 == sv.stop - sv.start:
                # the compiled law over the history in one call (no ctypes call per state)
                qj, vj = (np.ascontiguousarray(x[:, s.start]) for x, s in ((q, sq), (qd, sv)))
                tj = np.ascontiguousarray(t_, dtype=float)
                NF.user_law_power(law_address(f), qj, vj, tj, p_act)
                continue
            for i in range(nt):
                p_act[i] += float(f.generalized_force(t_[i], q[i, sq], qd[i, sv]) @ qd[i, sv])
        if tau is not None:
            p_act += np.einsum("ti,ti->t", np.asarray(tau, dtype=float), qd)
        out = {"kinetic": ke, "gravity": grav, "spring": np.zeros(nt)}
        out.update(p_damper=np.zeros(nt), p_actuator=p_act, p_external=np.zeros(nt))
        if table is not None:
            out["spring"] = table[:, 0].copy()
            out["p_damper"] += table[:, 1]
            tau_c = self._table_entry(())[0][2]  # the table's constant joint forces
            out["p_actuator"] += table[:, 2] - qd @ tau_c[: self.nv]
            out["p_external"] += table[:, 3]
        return out

    def kinetic_energy(self, q: ArrayLike, qd: ArrayLike) -> float:
        """Kinetic energy (J)."""
        Rw, rw, vel = self._kin(q, qd)
        Im = self._Mm[M_I]
        e = float(0.5 * np.einsum("ki,kij,kj->", vel[1:], Im[1:], vel[1:]))
        for _k, u, inv, qk in self._flex_speeds(q, qd):
            e += float(kinetic_energy(inv, qk, u))
        return e

    def _flex_speeds(self, q, qd):
        """(label, body-frame speeds (w, v, qd), invariants, modal q) of the flexible bodies
        (after the kinematics of the state)."""
        out = []
        for k in self._ops.flex_labels:
            b = self._body_of[k]
            sq, sv = self.modal_slices[b.name]
            u = np.concatenate([self._ops.body_speeds(k), np.asarray(qd)[sv]])
            out.append((k, u, b.invariants(), np.asarray(q)[sq]))
        return out

    def potential_energy(self, q: ArrayLike, t: float = 0.0) -> float:
        """Gravity plus the force elements' potentials plus strain energy (J)."""
        e = self.potential_energies(q, t)
        return e["gravity"] + e["spring"]

    def powers(
        self, q: ArrayLike, qd: ArrayLike, t: float = 0.0, tau: ArrayLike | None = None
    ) -> dict[str, float] | None:
        """``{"p_damper", "p_actuator", "p_external"}`` (W) at one state, the definitions
        of :class:`flexmbd.absolute.energy.EnergyMeter`: dissipated by SDA dampers
        (``c ldot^2``) and modal damping (``dq_f^T D dq_f``); delivered by SDA actuators,
        JointForce elements and the applied joint forces ``tau`` (``tau^T qd``); delivered
        by other force elements (``sum F_b^T V_b``). A tree with flexible bodies: its point
        loads' terms with the ends following the deformation
        (:meth:`~flexmbd.recursive.flexible.FlexTree.point_energies`), ``None`` when
        another force element acts on it."""
        pe = None
        if self._ops.flex_labels and self._generic:
            pe = self._ops.point_energies(t, q, qd)
            if pe is None:
                return None
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        out = {"p_damper": 0.0, "p_actuator": 0.0, "p_external": 0.0}
        for f in self._joint_forces:
            vj = qd[self._vslice[f.joint.name]]
            out["p_actuator"] += float(
                f.generalized_force(t, q[self._qslice[f.joint.name]], vj) @ vj
            )
        if tau is not None:
            out["p_actuator"] += float(np.asarray(tau, float) @ qd)
        Rw, rw, vel = self._kin(q, qd)
        for _, u, inv, _ in self._flex_speeds(q, qd):
            out["p_damper"] += float(u[6:] @ inv.D @ u[6:])
        e = self._table_energy(qd)
        if e is not None:
            out["p_damper"] += e[1]
            out["p_actuator"] += e[2] - float(self.compiled_forces()[2][: self.nv] @ qd)
            out["p_external"] += e[3]
        if pe is not None:
            out["p_damper"] += pe[1]
            out["p_actuator"] += pe[2]
            out["p_external"] += pe[3]
        elif self._generic and e is None:
            st = _State(self, Rw.copy(), rw.copy(), vel.copy())
            for fe in self._generic:
                if hasattr(fe, "damper_power"):
                    out["p_damper"] += float(fe.damper_power(t, st))
                    out["p_actuator"] += float(fe.actuator_power(t, st))
                    continue
                for body, w in fe.wrenches(t, st):
                    if body is not self.model.ground:
                        om, v = st.twist(body)
                        out["p_external"] += float(w[:3] @ om + w[3:] @ v)
        return out

    def potential_energies(self, q: ArrayLike, t: float = 0.0) -> dict[str, float]:
        """``{"gravity": ..., "spring": ...}`` (J), the definitions of
        :class:`flexmbd.absolute.energy.EnergyMeter`: ``gravity`` the potential of uniform
        gravity, ``spring`` the force elements' potentials (SDA springs
        ``k (l - l0)^2 / 2``; on a tree with flexible bodies with the SDA ends following the
        deformation, :meth:`~flexmbd.recursive.flexible.FlexTree.point_energies`) plus the
        flexible bodies' strain energy ``q_f^T K q_f / 2``."""
        Rw, rw, vel = self._kin(q, np.zeros(self.nv))
        mc = self._Vv[V_MC]
        g = -float(
            np.sum(mc[1:, 3] * (rw[1:] @ self._gravity))
            + np.einsum("kij,kj,i->", Rw[1:], mc[1:, :3], self._gravity)
        )
        spring = 0.0
        for k, _, inv, qk in self._flex_speeds(q, np.zeros(self.nv)):
            R, r = self._ops.body_pose(k, Rw[k], rw[k])
            Sbar = inv.c + inv.St @ qk
            g -= float(self._gravity @ (inv.mass * r + R @ Sbar))
            spring += 0.5 * float(qk @ inv.K @ qk)  # strain energy
        e = self._table_energy(np.zeros(self.nv))
        pe = None
        if self._ops.flex_labels and self._generic:  # SDA ends following the deformation
            pe = self._ops.point_energies(t, q, np.zeros(self.nv))
        if e is not None:
            spring += e[0]
        elif pe is not None:
            spring += pe[0]
        elif self._generic:
            st = _State(self, Rw.copy(), rw.copy(), vel.copy())
            for fe in self._generic:
                spring += float(fe.potential(t, st))
        return {"gravity": float(g), "spring": float(spring)}

    def momentum(self, q: ArrayLike, qd: ArrayLike) -> tuple[Array, Array]:
        """``(linear, angular)`` momentum in world axes; angular about the world origin."""
        Rw, rw, vel = self._kin(q, qd)
        h = np.einsum("kij,kj->ki", self._Mm[M_I, 1:], vel[1:])
        p = np.einsum("kij,kj->ki", Rw[1:], h[:, 3:])
        ang = np.einsum("kij,kj->ki", Rw[1:], h[:, :3]) + np.cross(rw[1:], p)
        p, ang = p.sum(axis=0), ang.sum(axis=0)
        for k, u, inv, qk in self._flex_speeds(q, qd):
            R, r = self._ops.body_pose(k, Rw[k], rw[k])
            Mu = mass_matrix(inv, qk) @ u
            pk = R @ Mu[3:6]
            p = p + pk
            ang = ang + np.cross(r, pk) + R @ Mu[:3]
        return p, ang

    def momentum_history(self, q: ArrayLike, qd: ArrayLike) -> tuple[Array, Array]:
        """:meth:`momentum` over a history ``q`` (nt, nq), ``qd`` (nt, nv): ``(linear
        (nt, 3), angular (nt, 3))`` in world axes, angular about the world origin; the
        kinematics and momenta of every state in compiled calls for a rigid tree
        (:func:`._momenta.momenta_history`: the same numbers as :meth:`momentum` per
        state), every state's momenta in one compiled
        call with flexible bodies (:meth:`~flexmbd.recursive.flexible.FlexTree.momentum_samples`:
        :meth:`momentum`'s sums, their products rounded in the compiled order, within a
        few units of the last place of the largest term), one state at a time otherwise."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        self._refresh()
        batch = getattr(self._ops, "momentum_samples", None) if self._ops.flex_labels else None
        if batch is not None:
            q, qd = self._check_state(q, qd)
            if q.ndim != 2 or qd.shape[0] != q.shape[0]:
                raise ModelError(
                    f"momentum_history: q and qd need one row per state; got {q.shape}, {qd.shape}"
                )
            return batch(q, qd)
        if self._ops.flex_labels or not self._ops.compiled:
            mom = [self.momentum(a, b) for a, b in zip(q, qd, strict=True)]
            lin = np.array([m[0] for m in mom]).reshape(len(q), 3)
            return lin, np.array([m[1] for m in mom]).reshape(len(q), 3)
        Rw, rw, vel, _ = self._kinematics_history(*self._check_state(q, qd))
        out = np.zeros((len(Rw), 6))
        Mi = np.ascontiguousarray(self._Mm[M_I, 1:])
        if Mi.shape[0]:
            _momenta_history(Mi, Rw, rw, vel, out)
        return out[:, :3].copy(), out[:, 3:].copy()

    def packed_rigid(
        self, ignore: tuple = (), forces: bool = False, timed: bool = False
    ) -> tuple[Array, Array, Array] | None:
        """``(Ib, buf, body_row)``, the packed model ints, the float workspace of the
        compiled single-state entry point and the row of each label's body in
        ``layout.body_names``, when one compiled call gives this tree's dynamics:
        rigid bodies, the serialized solver, gravity the only load (force elements in
        ``ignore`` excepted: the caller applies them; with ``forces``, also the elements
        of :meth:`compiled_forces`, whose table the caller passes to the kernels; with
        ``timed`` too, also loads that are functions of time, which the caller tabulates:
        :meth:`tabulated_forces`), no reversed joint or screw (whose ``M^-1`` columns need
        a change of speeds).
        Otherwise None. The workspace is this system's own: one thread at a time."""
        self._refresh()
        loads = self._joint_forces or any(all(f is not g for g in ignore) for f in self._generic)
        if (
            not self._ops.compiled
            or self.algorithm != "serialized"
            or (loads and (not forces or self._table_for(ignore, timed) is None))
        ):
            return None
        Ia = self._Ia
        for k in range(1, self.n_bodies + 1):
            if Ia[I_NV, k] and (Ia[I_REV, k] or Ia[I_JT, k] == J.SCREW):
                return None
        return self._Ib, self._buf, self._body_row

    #: force elements a wrapping system applies itself (the cut-joint wrenches of
    #: :class:`~flexmbd.recursive.loops.LoopSystem`): :meth:`compiled_forces` skips them
    applied_by_caller: tuple = ()

    def compiled_forces(self, ignore: tuple = ()) -> tuple | None:
        """The force table of :mod:`._nbforces` (``(fi, ff, tau_c, scratch)``) covering every force
        element of this rigid tree but gravity (which the tree solver applies) and those
        in ``ignore``: SDAs with rigid or ground ends and a constant actuator force,
        constant point forces and torques (world or body axes), constant joint forces and
        :meth:`~flexmbd.JointForce.spring_damper` laws with a constant actuator force.
        None when an element needs Python (a user force law, a flexible body) or is a
        function of time (those the single-state calls evaluate through
        :meth:`timed_forces`). An SDA without ``l0`` gets its length at ``q0()`` (a closed
        loop fixes it at its assembled initial state first: :meth:`fix_free_lengths`)."""
        entry = self._table_entry(ignore)
        return None if entry is None or entry[1] else entry[0]

    def _own_table(self):
        """``(table, timers)`` of the force table with every element (:meth:`_table_entry`),
        or None (no table, or a wrapping system applies loads itself)."""
        return None if self.applied_by_caller else self._table_entry(())

    def timed_forces(self, t: float = 0.0) -> tuple | None:
        """The force table of :meth:`compiled_forces` with the elements given as functions
        of time only (point force and torque vectors, SDA and joint spring-damper
        actuator forces) evaluated at ``t`` (s) in Python and written into its rows: the
        table of one state's call (:meth:`forward_dynamics`, :meth:`qdd`, ...). None when
        an element needs Python at every state (a user force law ``f(t, q, qd)``, a
        flexible body) or a wrapping system applies loads itself. The returned arrays are
        the system's own and change with the next call."""
        entry = self._own_table()
        return None if entry is None else self._set_timed(entry, t)

    @staticmethod
    def _set_timed(entry, t):
        """The table of ``entry = (table, timers)`` with its functions of time evaluated
        at ``t`` (s) written into its float rows."""
        tab, timers = entry
        ff = tab[1]
        for e, cols, fn in timers:
            ff[e, cols] = float(t) if fn is _clock else fn(t)
        return tab

    def write_timed(self, table: tuple, t: float, ignore: tuple | None = None) -> None:
        """Write the values of the force table that are functions of time, evaluated at
        ``t`` (s) by one Python call each (as :meth:`timed_forces`), into ``table``: the
        arrays of :meth:`tabulated_forces` for the same ``ignore`` (a wrapping system's
        copy of them included: the rows and columns are the same)."""
        entry = self._own_table() if ignore is None else self._table_entry(ignore)
        if entry is not None:
            self._set_timed((table, entry[1]), t)

    def tabulated_forces(self, times: ArrayLike, ignore: tuple | None = None) -> tuple | None:
        """``(table, TT, tix)`` for a compiled run over the time grid ``times`` (s): the
        table of :meth:`timed_forces`, ``TT`` (len(times), m) the m table values that are
        functions of time tabulated on the grid (one Python call per function and time)
        and ``tix`` (m, 2) int64 their ``(row, column)`` in the table's float rows, which
        the kernel overwrites per stage (:func:`._nbloops.tree_rk4_block`). m is 0 when
        no value depends on time. None as for :meth:`timed_forces`. ``ignore``: the
        table of a wrapping system without these elements (and ``applied_by_caller``,
        as :meth:`compiled_forces`), for the kernels of the wrapping system."""
        tab = self.timed_tabulator(ignore)
        return None if tab is None else tab(times)

    def timed_tabulator(self, ignore: tuple | None = None) -> Callable | None:
        """A function ``tab(times) -> (table, TT, tix)``: :meth:`tabulated_forces` of this
        model revision with its rows and columns found once (for runs that tabulate
        again at every step: :func:`._nbtimed.timed_block`); the functions of time are
        called by time, each time's in the table's order (the order of the calls of
        :meth:`timed_forces` at those times). None as for :meth:`tabulated_forces`."""
        entry = self._own_table() if ignore is None else self._table_entry(ignore)
        if entry is None:
            return None
        table, timers = entry
        cols, funcs = [], []
        for e, c, fn in timers:
            idx = range(c.start, c.stop) if isinstance(c, slice) else (c,)
            cols += [(e, i) for i in idx]
            w = len(idx)
            funcs.append((len(cols) - w, len(cols), w > 1 or isinstance(c, slice), fn))
        tix = np.array(cols, dtype=np.int64).reshape(-1, 2)

        def tab(times):
            times = np.asarray(times, dtype=float)
            TT = np.empty((len(times), len(tix)))
            for r, t in enumerate(times.tolist()):
                for a, b, block, fn in funcs:
                    if fn is _clock:  # the table's clock: the times themselves
                        TT[r, a:b] = t
                    elif block:
                        TT[r, a:b] = fn(t)
                    else:
                        TT[r, a] = fn(t)
            return table, TT, tix

        return tab

    def _table_for(self, ignore, timed):
        """The table of :meth:`compiled_forces` (``timed``: with values that are functions
        of time, :meth:`timed_forces`' table before its values are set), or None."""
        entry = self._table_entry(ignore)
        return None if entry is None or (entry[1] and not timed) else entry[0]

    def _table_entry(self, ignore):
        """``(table, timers)`` of :meth:`_force_table` for ``ignore`` (cached per model
        revision), or None."""
        self._refresh()
        ignore = tuple(ignore) + tuple(self.applied_by_caller)
        key = (self.model.revision, tuple(id(f) for f in ignore))
        cached = getattr(self, "_ftab", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        entry = self._force_table(ignore) if self._ops.compiled else None
        self._ftab = (key, entry)
        return entry

    def _force_table(self, ignore):
        """``(table, timers)``: the table's arrays and, for each row value that is a
        function of time, ``(row, columns, f(t))``; None when an element needs Python."""
        tau_c = np.zeros(max(self.nv, 1))
        fi, ff, timers = [], [], []
        for f in self._joint_forces:
            if f.constant_force is not None:
                tau_c[self._vslice[f.joint.name]] += f.constant_force
                continue
            law = f.law is not None or f.user_law is not None
            rows = [self._law_row(f)] if law else self._time_rows(f)
            if rows is None or None in rows:
                return None
            for row in rows:
                self._table_append(fi, ff, timers, row)
        for fe in self._generic:
            if any(fe is g for g in ignore):
                continue
            row = self._force_row(fe)
            if row is None:
                return None
            self._table_append(fi, ff, timers, row)
        fi = np.array(fi, dtype=np.int64).reshape(-1, 4)
        ff = np.array(ff, dtype=float).reshape(-1, NF.NF)
        return (fi, ff, tau_c, NF.scratch()), tuple(timers)

    @staticmethod
    def _table_append(fi, ff, timers, row):
        """Append a row ``(ints, floats[, (columns, f(t))])`` to the table lists."""
        if len(row) > 2:
            timers.append((len(ff), *row[2]))
        fi.append(row[0])
        ff.append(row[1])

    def _no_table(self):
        """An empty force table (the arguments of :func:`._nbforces.kinematics_history`
        without table energies)."""
        return (
            np.zeros((0, 4), dtype=np.int64),
            np.zeros((0, NF.NF)),
            np.zeros(max(self.nv, 1)),
            NF.scratch(),
        )

    def _table_energy(self, qd):
        """``(spring, p_damper, p_actuator, p_external)`` of the compiled force table at
        the state of the last kinematics pass (:func:`._nbforces.table_energy`), or None
        (no generic element, an element the table does not cover, coincident points)."""
        if not self._generic or not self._ops.compiled:
            return None
        tab = self.compiled_forces()
        if tab is None:
            return None
        out = np.zeros(4)
        qd = np.ascontiguousarray(qd, dtype=float)
        if NF.table_energy(self._R3, self._P3, self._Vv, qd, self.nv, *tab, out) != 0:
            return None
        return out

    def fix_free_lengths(self, q: ArrayLike, qd: ArrayLike) -> None:
        """Set the free length ``l0`` (m) of every SDA given without one to its length at
        the state ``(q, qd)`` (the initial state: what the Python path does at its first
        evaluation)."""
        todo = [f for f in self._generic if isinstance(f, SpringDamperActuator) and f.l0 is None]
        if todo:
            Rw, rw, vel = (x.copy() for x in self._kinematics(q, qd))
            state = _State(self, Rw, rw, vel)
            for fe in todo:
                fe.free_length(state)

    def _ek_point(self, body, s):
        """``(label, point)``: a body-frame point in the coordinates of the tree frame e_k
        of the body's label (world coordinates and label 0 for the ground); None for a
        body outside this rigid tree."""
        if body is self.model.ground:
            return 0, np.asarray(s, dtype=float)
        k = self._label_of.get(id(body))
        if k is None or not isinstance(body, RigidBody):
            return None
        Rf, pf = self._frame[k]
        return k, Rf.T @ (np.asarray(s, dtype=float) - pf)

    def _law_row(self, f):
        """The table row ``(ints, floats[, (column, f(t))])`` of a
        :meth:`~flexmbd.JointForce.spring_damper` law or a
        :meth:`~flexmbd.JointForce.compiled_law` on a one-coordinate joint (the joint's own
        coordinate and speed, as the Python law reads them), or None. A compiled law's
        row has the time as its value of time (column 0, :func:`_clock`)."""
        if f.law is None and f.user_law is None:
            return None
        sq, sv = self._qslice[f.joint.name], self._vslice[f.joint.name]
        if sq.stop - sq.start != 1 or sv.stop - sv.start != 1:
            return None
        row = np.zeros(NF.NF)
        if f.user_law is not None:
            return (NF.ULAW, sq.start, sv.start, law_address(f)), row, (0, _clock)
        fa = f.actuator
        row[0:4] = (*f.law[:2], f.law[2], float(fa(0.0)))
        ints = (NF.JLAW, sq.start, sv.start, 0)
        if getattr(fa, "constant", False):
            return ints, row
        return ints, row, (3, lambda t: float(fa(t)))

    def _time_rows(self, f):
        """The table rows of a :meth:`~flexmbd.JointForce.of_time` drive on a joint of
        several speeds, one joint law per speed without spring and damper (its actuator
        the drive's value along that speed, a function of time), or None (another law)."""
        if f.time_force is None:
            return None
        sq, sv = self._qslice[f.joint.name], self._vslice[f.joint.name]
        rows = []
        for i in range(sv.stop - sv.start):
            ints = (NF.JLAW, sq.start, sv.start + i, 0)
            row = np.zeros(NF.NF)
            rows.append((ints, row, (3, lambda t, i=i: float(f.time_force(t)[i]))))
        return rows

    def _force_row(self, fe):
        """One row ``(ints, floats)`` of the force table for ``fe``, or None."""
        row = np.zeros(NF.NF)
        if isinstance(fe, SpringDamperActuator):
            if fe.deforming_ends():
                return None
            ends = [
                self._ek_point(b, p) for b, p in ((fe.body_i, fe.point_i), (fe.body_j, fe.point_j))
            ]
            if None in ends:
                return None
            if fe.l0 is None:
                self.fix_free_lengths(self.q0(), self.qd0())
            row[0:3], row[3:6] = ends[0][1], ends[1][1]
            row[6:10] = fe.k, fe.c, fe.l0, fe.actuator_force(0.0)
            ints = (NF.SDA, ends[0][0], ends[1][0], 0)
            if callable(fe.fa):
                return ints, row, (9, fe.actuator_force)
            return ints, row
        if isinstance(fe, PointForce | PointTorque):
            value = fe.force if isinstance(fe, PointForce) else fe.torque
            end = self._ek_point(fe.body, getattr(fe, "point", np.zeros(3)))
            if end is None or end[0] == 0:
                return None
            k, p = end
            body_axes = fe.frame == "body"
            Rf = self._frame[k][0]

            def vector(t):
                v = value(t)
                return Rf.T @ v if body_axes else v

            row[3:6] = vector(0.0)
            row[0:3] = p if isinstance(fe, PointForce) else 0.0
            ints = (NF.FORCE if isinstance(fe, PointForce) else NF.TORQUE, k, 0, int(body_axes))
            if getattr(value, "constant", False):
                return ints, row
            return ints, row, (slice(3, 6), vector)
        return None

    def max_modal_frequency(self) -> float:
        """Highest modal circular frequency (rad/s) of the flexible bodies' ``(K, M_ff)``
        (0 without flexible bodies): explicit steps need ``dt`` well below
        ``2.8 / max_modal_frequency()`` (RK4's stability limit)."""
        w = 0.0
        for b in self._bodies:
            if isinstance(b, FlexibleBody):
                inv = b.invariants()
                if inv.n_modes:
                    ev = np.linalg.eigvals(np.linalg.solve(inv.Mff, inv.K)).real
                    w = max(w, float(np.sqrt(max(ev.max(), 0.0))))
        return w

    # ------------------------------------------------------------------ integration
    def qdot(self, q: ArrayLike, qd: ArrayLike) -> Array:
        """Coordinate rates for speeds (quaternion rates for Spherical/Free)."""
        out = np.empty(self.nq)
        K.qdot_all(
            self._Ia,
            self._Vv,
            np.ascontiguousarray(q, dtype=float),
            np.ascontiguousarray(qd, dtype=float),
            out,
        )
        for sq, sv in self.modal_slices.values():
            out[sq] = qd[sv]
        return out

    @property
    def quaternion_offsets(self) -> tuple[int, ...]:
        """Offsets in ``q`` of the Euler parameters ``(e0, e1, e2, e3)`` of the Spherical
        and Free joints (the four values :meth:`normalize` scales to unit norm)."""
        return tuple(self._quat_offsets)

    def normalize(self, q: ArrayLike) -> Array:
        """Project quaternion coordinates on unit norm (returns a copy)."""
        q = np.array(q, dtype=float)
        for o in self._quat_offsets:
            q[..., o : o + 4] /= np.linalg.norm(q[..., o : o + 4], axis=-1, keepdims=True)
        return q

    def simulate(
        self,
        t_end: float,
        dt: float | None = None,
        integrator: str | None = None,
        q0: ArrayLike | None = None,
        qd0: ArrayLike | None = None,
        t0: float = 0.0,
        **options: Any,
    ) -> Results:
        """Integrate from ``(q0, qd0)`` (default: the joints' initial values) to ``t_end`` (s).

        ``integrator``: ``"rk4"`` (default with ``dt``), ``"rk45"`` (default without),
        ``"dop853"``, ``"rk23"``. See :func:`flexmbd.integrators.explicit.simulate_recursive`
        for the options (``rtol``, ``atol``, ``t_eval``, ``method``, ``progress``, ``tau``,
        ``checkpoint``, ``every``); unknown ones raise :class:`~flexmbd.errors.ModelError`.
        """
        from ..integrators.explicit import simulate_recursive

        where = f"model {self.model.name!r} (recursive): simulate"
        spec, _ = resolve(integrator, "recursive", dt)
        check_options(options, simulate_recursive, where)
        check_times(t_end, dt, spec, where, t0=t0, every=options.get("every"))
        return simulate_recursive(
            self, t_end, dt=dt, integrator=spec.name, q0=q0, qd0=qd0, t0=t0, **options
        )
