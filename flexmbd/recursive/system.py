"""RecursiveSystem: a tree model in joint coordinates, solved by the CFA.

``m.compile("recursive")`` returns a :class:`RecursiveSystem`. Coordinates are
the joints' own coordinates (``joint.q``, quaternions scalar first), in the
declaration order of the joints; speeds likewise (``joint.v``: angular velocity
in child axes for Spherical/Free, etc.). ``forward_dynamics`` returns the joint
accelerations and the reaction wrench of every joint, computed together by the
Constraint Force Algorithm (Liu, Hu, Zhang 2016):

* ``algorithm="serialized"`` (default): compiled O(N) kernels
  (:mod:`flexmbd.recursive._kernels`), odd-even reduction of chains plus a small
  dense node system (:mod:`flexmbd.recursive.schedule`);
* ``algorithm="general"``: the readable dense reference of eq. (4-29)
  (:mod:`flexmbd.recursive.general`).

Reactions follow DESIGN.md: the wrench the joint's declared parent exerts on its
declared child through the joint, at the child joint-frame origin, in child
joint-frame axes, ``[n; f]``. It is the CFA's equivalent interbody force
``F = H F_T + W F_S`` plus the velocity-product (bias) part of the Newton-Euler
pass at zero joint acceleration; its motion-direction part ``H^T F_phys`` is the
applied joint force.
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelError, SolverError
from ..model.bodies import RigidBody
from ..model.forces import Gravity, JointForce
from ..model.joints import (
    Cylindrical,
    Fixed,
    Free,
    Planar,
    Prismatic,
    Revolute,
    Spherical,
    Universal,
)
from ..spatial import spatial_inertia
from . import _kernels as K
from . import _nbjoints as J
from .schedule import build_schedule

__all__ = ["RecursiveSystem", "ForwardDynamics", "compile_system"]

_CODES = [
    (Revolute, J.REVOLUTE),
    (Prismatic, J.PRISMATIC),
    (Cylindrical, J.CYLINDRICAL),
    (Universal, J.UNIVERSAL),
    (Spherical, J.SPHERICAL),
    (Planar, J.PLANAR),
    (Free, J.FREE),
    (Fixed, J.FIXED),
]


def _code(joint):
    for cls, code in _CODES:
        if type(joint) is cls:
            return code
    for cls, code in _CODES:
        if isinstance(joint, cls):
            return code
    raise ModelError(
        f"joint {joint.name!r}: type {type(joint).__name__} is not supported by the recursive "
        f"formulation; use one of {[c.__name__ for c, _ in _CODES]} or formulation='absolute'"
    )


def compile_system(model, **options):
    """Compile a tree model into a :class:`RecursiveSystem` (see its docstring)."""
    return RecursiveSystem(model, **options)


class ForwardDynamics:
    """Result of :meth:`RecursiveSystem.forward_dynamics` (single state or batch).

    Attributes
    ----------
    qdd : ndarray (nv,) or (n, nv)
        Joint accelerations (order of ``system.speeds``).
    reactions : ndarray (n_joints, 6) or (n, n_joints, 6)
        Reaction wrench of every joint (order of ``system.joint_names``), ``[n; f]``.
    constraint_forces : ndarray (n_joints, 6) or (n, n_joints, 6)
        The CFA unknowns ``F_S`` (first ``6 - nv`` entries of each row; the rest 0)
        in the tree frame of each joint's outboard body.
    equivalent_control_force : ndarray (nv,) or (n, nv)
        ``F_T = tau - b`` (eq. 4) in the joints' speeds.
    """

    def __init__(self, system, qdd, reactions, fs, acc, ft, q, qd):
        self._sys = system
        self.qdd = qdd
        self.reactions = reactions
        self.constraint_forces = fs
        self.equivalent_control_force = ft
        self._acc = acc
        self._q = q
        self._qd = qd

    def reaction(self, name):
        """Reaction wrench ``[n; f]`` (6,) or (n, 6) of joint ``name``."""
        return self.reactions[..., self._sys._joint_index(name), :]

    def body_acceleration(self, name):
        """``(alpha_world, a_origin_world)`` of body ``name``: angular acceleration and
        the acceleration of the body-frame origin, world axes (3,) or (n, 3)."""
        return self._sys._body_acceleration(name, self._q, self._qd, self._acc)


class _State:
    """Body poses/twists for force elements (``state.pose(body)``, ``state.twist(body)``)."""

    def __init__(self, system, Rw, rw, vel):
        self._sys = system
        self._Rw, self._rw, self._vel = Rw, rw, vel

    def pose(self, body):
        s = self._sys
        if body is s.model.ground:
            return np.eye(3), np.zeros(3)
        k = s._label_of[id(body)]
        return s._body_pose(k, self._Rw[k], self._rw[k])

    def twist(self, body):
        s = self._sys
        if body is s.model.ground:
            return np.zeros(3), np.zeros(3)
        k = s._label_of[id(body)]
        R, r = s._body_pose(k, self._Rw[k], self._rw[k])
        Rk = self._Rw[k]
        w = Rk @ self._vel[k, :3]
        v = Rk @ self._vel[k, 3:] + np.cross(w, r - self._rw[k])
        return w, v


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
        For closed loops (cut joints; coming in the closed-loop issue), flexible
        bodies, unsupported joint types, and bodies with a singular spatial inertia
        (the CFA inverts every body's inertia: give point masses and rods a small
        inertia about every axis).
    """

    formulation = "recursive"

    def __init__(self, model, algorithm="serialized"):
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
                f"model {model.name!r} has closed loops (cut joints {names}); closed loops need "
                "the cut-joint constraint equations of the recursive formulation (coming: they "
                "will use RecursiveSystem.solve_mass), or use formulation='absolute'"
            )
        for b in bodies:
            if not isinstance(b, RigidBody):
                raise ModelError(
                    f"body {b.name!r} ({type(b).__name__}): the recursive formulation handles "
                    "rigid bodies only for now (flexible bodies: coming); use "
                    "formulation='absolute'"
                )
        self.topology = topo
        self._joints = joints
        self._bodies = bodies
        n = topo.n_bodies
        self.n_bodies = n
        self.joint_names = [j.name for j in joints]
        self._jindex = {name: i for i, name in enumerate(self.joint_names)}
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
        self.nq, self.nv = nq, nv
        self._qslice = {joints[k - 1].name: slice(qoff[k], qoff[k] + joints[k - 1].nq)
                        for k in tree}
        self._vslice = {joints[k - 1].name: slice(voff[k], voff[k] + joints[k - 1].nv)
                        for k in tree}

        # static arrays per label
        parent = np.asarray(topo.parent, dtype=np.int64).copy()
        jt = np.zeros(n + 1, np.int64)
        rev = np.zeros(n + 1, np.int64)
        nvj = np.zeros(n + 1, np.int64)
        nqj = np.zeros(n + 1, np.int64)
        qo = np.zeros(n + 1, np.int64)
        vo = np.zeros(n + 1, np.int64)
        jrow = np.zeros(n + 1, np.int64)
        self._tree_joint = [None] * (n + 1)
        self._body_of = [None] * (n + 1)
        self._label_of = {}
        for k in range(1, n + 1):
            tj = int(topo.tree_joint[k])
            j = joints[tj - 1]
            self._tree_joint[k] = j
            b = bodies[int(topo.original_body[k]) - 1]
            self._body_of[k] = b
            self._label_of[id(b)] = k
            jt[k] = _code(j)
            rev[k] = int(bool(topo.reversed[tj - 1]))
            nvj[k], nqj[k] = j.nv, j.nq
            qo[k], vo[k] = qoff[tj], voff[tj]
            jrow[k] = tj - 1
        self._jt, self._rev = jt, rev
        nc = 6 - nvj
        nc[0] = 0
        sched = build_schedule(parent)
        self.schedule = sched
        doff = np.full(n + 1, -1, np.int64)
        o = 0
        for k in sched.dense:
            doff[k] = o
            o += nc[k]
        self._n_dense = o
        self._static = dict(parent=parent, jt=jt, rev=rev, nv=nvj, nc=nc, qo=qo, vo=vo, nqj=nqj,
                            jrow=jrow, doff=doff)
        self._floating = any(isinstance(j, Free) and parent[k] == 0
                             for k, j in enumerate(self._tree_joint) if k > 0)
        self._revision = None
        self._alloc()
        self._refresh()

    # ------------------------------------------------------------------ setup
    def _alloc(self):
        n = self.n_bodies
        z = np.zeros
        eye3 = np.zeros((n + 1, 3, 3))
        eye3[0] = np.eye(3)
        nd = max(self._n_dense, 1)
        nvt = max(self.nv, 1)
        self._ws = (
            z((n + 1, 3, 3)), z((n + 1, 3)), eye3, z((n + 1, 3)),           # 0-3
            z((n + 1, 6, 6)), z((n + 1, 6, 6)), z((n + 1, 6, 6)),          # 4-6 H W L
            z((n + 1, 6)), z((n + 1, 6)),                                  # 7-8 cJ vel
            z((3, 3)), z(3), z((3, 3)), z(6), z((6, 6)),                   # 9-13
            z((n + 1, 6)), z((n + 1, 6)), z(6),                            # 14-16 ab fb vj
            z((n + 1, 6, 6)), z((n + 1, 6, 6)), z((n + 1, 6, 6)),          # 17-19 U Y A
            z((n + 1, 6, 6)), z((n + 1, 6, 6)), z((n + 1, 6, 6)),          # 20-22 D Cr Csl
            z((n + 1, 6, 6)), z((6, 6)), z((nd, nd)), z((6, 6)),           # 23-26 Csr T1 Md Zr
            z((n + 1, 6)), z((n + 1, 6)), z((n + 1, 6)), z(nd),            # 27-30 Fe af bx bd
            z((n + 1, 3, 3)), z((n + 1, 3)), z(nvt), z(nvt),               # 31-34
        )
        self._FT = z(nvt)
        self._b = z(nvt)
        self._fext0 = z((n + 1, 6))

    def _refresh(self):
        """(Re-)read joint frames, axes and inertias when the model revision changed."""
        if self._revision == self.model.revision:
            return
        topo = self.topology
        n = self.n_bodies
        prm = np.zeros((n + 1, 9))
        Hc = np.zeros((n + 1, 6, 6))
        Wc = np.zeros((n + 1, 6, 6))
        R0 = np.zeros((n + 1, 3, 3))
        p0 = np.zeros((n + 1, 3))
        Im = np.zeros((n + 1, 6, 6))
        G = np.zeros((n + 1, 6, 6))
        mass = np.zeros(n + 1)
        mc = np.zeros((n + 1, 3))
        self._frame = [(np.eye(3), np.zeros(3))] * (n + 1)   # e_k in body k coordinates
        for k in range(1, n + 1):
            j = self._tree_joint[k]
            rev = bool(self._rev[k])
            out_f, in_f = (j.parent_frame, j.child_frame) if rev else (j.child_frame, j.parent_frame)
            self._frame[k] = (out_f.rotation.copy(), out_f.position.copy())
        self._gravity = np.zeros(3)
        for k in range(1, n + 1):
            j = self._tree_joint[k]
            rev = bool(self._rev[k])
            in_f = j.child_frame if rev else j.parent_frame
            p = int(topo.parent[k])
            Rep, pep = self._frame[p]
            R0[k] = Rep.T @ in_f.rotation
            p0[k] = Rep.T @ (in_f.position - pep)
            code = self._jt[k]
            if code in (J.REVOLUTE, J.PRISMATIC, J.CYLINDRICAL):
                prm[k, :3] = j.axis
            elif code == J.UNIVERSAL:
                prm[k, :3], prm[k, 3:6] = j.axis1, j.axis2
            elif code == J.PLANAR:
                prm[k, :3], prm[k, 3:6], prm[k, 6:9] = j.u1, j.u2, j.normal
            nvk = j.nv
            if code == J.UNIVERSAL:
                Hc[k, :3, 1] = j.axis2
                Wc[k, 3:, 1:4] = np.eye(3)
            else:
                Hc[k, :, :nvk] = j.motion_subspace(j.q0)
                Wc[k, :, :6 - nvk] = j.constraint_subspace(j.q0)
            b = self._body_of[k]
            b.validate()
            Rf, pf = self._frame[k]
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
            Im[k], G[k] = Ik, np.linalg.inv(Ik)
            G[k] = 0.5 * (G[k] + G[k].T)
            mass[k], mc[k] = m, m * c
        st = self._static
        sc = self.schedule
        self._mdl = (
            st["parent"], st["jt"], st["rev"], prm, Hc, Wc, st["nv"], st["nc"], st["qo"],
            st["vo"], st["nqj"], R0, p0, Im, G, mass, mc, sc.onechild, sc.steps, sc.dense,
            st["doff"], sc.links, sc.node_children, sc.siblings, st["jrow"],
        )
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
        self._gravity = grav
        self._use_grav = bool(np.any(grav != 0.0))
        self._revision = self.model.revision

    # ------------------------------------------------------------------ basics
    def q0(self):
        """Initial coordinates from the joints' ``q0``."""
        q = np.zeros(self.nq)
        for j in self._tree_joint[1:]:
            q[self._qslice[j.name]] = j.q0
        return q

    def qd0(self):
        """Initial speeds from the joints' ``qd0``."""
        v = np.zeros(self.nv)
        for j in self._tree_joint[1:]:
            v[self._vslice[j.name]] = j.qd0
        return v

    def _joint_index(self, name):
        try:
            return self._jindex[name]
        except KeyError:
            raise ModelError(f"no joint {name!r}; joints: {self.joint_names}") from None

    def _label(self, name):
        for k in range(1, self.n_bodies + 1):
            if self._body_of[k].name == name:
                return k
        raise ModelError(f"no body {name!r}; bodies: {[b.name for b in self._bodies]}")

    def _body_pose(self, k, Rk, rk):
        Rf, pf = self._frame[k]
        R = Rk @ Rf.T
        return R, rk - R @ pf

    def _check_state(self, q, qd):
        q = np.asarray(q, dtype=float)
        qd = np.asarray(qd, dtype=float)
        if q.shape[-1] != self.nq or qd.shape[-1] != self.nv:
            raise ModelError(
                f"state sizes: q needs {self.nq} values, qd {self.nv}; got {q.shape}, {qd.shape}")
        return q, qd

    # ------------------------------------------------------------------ forces
    def _applied(self, t, q, qd, tau, fext):
        """Fill joint forces (into tau) and generic force-element wrenches (fext)."""
        for f in self._joint_forces:
            name = f.joint.name
            tau[self._vslice[name]] += f.generalized_force(t, q[self._qslice[name]],
                                                           qd[self._vslice[name]])
        if self._generic:
            K.kinematics(self._mdl, self._ws, q, qd)
            Rw, rw, vel = self._ws[2], self._ws[3], self._ws[8]
            state = _State(self, Rw.copy(), rw.copy(), vel.copy())
            for fe in self._generic:
                for body, w in fe.wrenches(t, state):
                    if body is self.model.ground:
                        continue
                    k = self._label_of[id(body)]
                    R, r = state.pose(body)
                    n_o = w[:3] + np.cross(r - rw[k], w[3:])
                    fext[k, :3] += Rw[k].T @ n_o
                    fext[k, 3:] += Rw[k].T @ w[3:]

    # ------------------------------------------------------------------ dynamics
    def forward_dynamics(self, q, qd, tau=None, t=0.0, algorithm=None):
        """Joint accelerations and every joint reaction for the state ``(q, qd)``.

        ``q`` (nq,) or (n, nq), ``qd`` (nv,) or (n, nv), ``tau`` joint forces along
        the speeds (added to JointForce elements), ``t`` time for force elements.
        A batch runs in one compiled loop. Returns :class:`ForwardDynamics`.
        """
        self._refresh()
        q, qd = self._check_state(q, qd)
        algorithm = algorithm or self.algorithm
        single = q.ndim == 1
        Q = np.ascontiguousarray(np.atleast_2d(q))
        V = np.ascontiguousarray(np.atleast_2d(qd))
        ns = Q.shape[0]
        if V.shape[0] != ns:
            raise ModelError(f"batch sizes of q ({ns}) and qd ({V.shape[0]}) differ")
        TAU = np.zeros((ns, max(self.nv, 1)))
        if tau is not None:
            TAU[:, :self.nv] = np.broadcast_to(np.asarray(tau, dtype=float), (ns, self.nv))
        FEXT = np.zeros((ns, self.n_bodies + 1, 6))
        ts = np.broadcast_to(np.asarray(t, dtype=float), (ns,))
        if self._joint_forces or self._generic:
            for s in range(ns):
                self._applied(ts[s], Q[s], V[s], TAU[s], FEXT[s])
        nj = len(self.joint_names)
        QDD = np.zeros((ns, max(self.nv, 1)))
        REAC = np.zeros((ns, nj, 6))
        FS = np.zeros((ns, self.n_bodies + 1, 6))
        ACC = np.zeros((ns, self.n_bodies + 1, 6))
        FTs = np.zeros((ns, max(self.nv, 1)))
        if algorithm == "general":
            from .general import general_cfa

            for s in range(ns):
                QDD[s, :self.nv], REAC[s], FS[s], ACC[s], FTs[s, :self.nv] = general_cfa(
                    self, Q[s], V[s], TAU[s, :self.nv], FEXT[s])
        else:
            bad, st = K.forward_dynamics_batch(self._mdl, self._ws, Q, V, TAU, FEXT,
                                               self._gravity, self._use_grav, self._FT, self._b,
                                               QDD, REAC, FS, ACC)
            if bad >= 0:
                self._raise_factor(st, Q[bad])
            if ns == 1:
                FTs[0] = self._FT
        FSj = np.zeros((ns, nj, 6))
        for k in range(1, self.n_bodies + 1):
            FSj[:, self._mdl[24][k]] = FS[:, k]
        out = ForwardDynamics(self, QDD[:, :self.nv], REAC, FSj, ACC, FTs[:, :self.nv], Q, V)
        if single:
            out.qdd, out.reactions = out.qdd[0], out.reactions[0]
            out.constraint_forces = out.constraint_forces[0]
            out.equivalent_control_force = out.equivalent_control_force[0]
            out._acc, out._q, out._qd = ACC[0], Q[0], V[0]
        if not np.all(np.isfinite(out.qdd)):
            raise SolverError("forward dynamics produced non-finite accelerations")
        return out

    def _raw_accel(self, q, qd, tau=None, t=0.0):
        """Lean single-state forward dynamics for integrators: returns qdd (copy)."""
        self._refresh()
        n1 = max(self.nv, 1)
        tv = self._tau_buf if hasattr(self, "_tau_buf") else np.zeros(n1)
        self._tau_buf = tv
        tv[:] = 0.0
        if tau is not None:
            tv[:self.nv] = tau
        fext = self._fext0
        if self._joint_forces or self._generic:
            fext = np.zeros_like(self._fext0)
            self._applied(t, q, qd, tv, fext)
        if self.algorithm == "general":
            from .general import general_cfa

            return general_cfa(self, q, qd, tv[:self.nv], fext)[0]
        qdd = np.zeros(n1)
        reac = self._reac_buf if hasattr(self, "_reac_buf") else np.zeros(
            (len(self.joint_names), 6))
        self._reac_buf = reac
        st = K.forward_dynamics(self._mdl, self._ws, np.ascontiguousarray(q, dtype=float),
                                np.ascontiguousarray(qd, dtype=float), tv, fext, self._gravity,
                                self._use_grav, self._FT, self._b, qdd, reac)
        if st != 0:
            self._raise_factor(st, q)
        return qdd[:self.nv]

    def _raise_factor(self, st, q):
        if st > 0:
            j = self._tree_joint[st]
            raise SolverError(
                f"constraint-force block of joint {j.name!r} is not positive definite at q = "
                f"{np.round(q, 6).tolist()} (singular inertia or non-finite state)")
        raise SolverError("the dense node system of the CFA is not positive definite "
                          f"at q = {np.round(q, 6).tolist()}")

    def _body_acceleration(self, name, q, qd, acc):
        k = self._label(name)
        batched = acc.ndim == 3
        Qs = np.atleast_2d(q)
        Vs = np.atleast_2d(qd)
        A = acc if batched else acc[None]
        alphas, accs = [], []
        for s in range(A.shape[0]):
            K.kinematics(self._mdl, self._ws, Qs[s], Vs[s])
            Rk, rk, vk = self._ws[2][k], self._ws[3][k], self._ws[8][k]
            w, v = vk[:3], vk[3:]
            a_o = A[s, k, 3:] + np.cross(w, v)         # e_k origin, e_k axes
            R, r = self._body_pose(k, Rk, rk)
            alpha = Rk @ A[s, k, :3]
            ww = Rk @ w
            d = r - rk
            a = Rk @ a_o + np.cross(alpha, d) + np.cross(ww, np.cross(ww, d))
            alphas.append(alpha)
            accs.append(a)
        alphas, accs = np.array(alphas), np.array(accs)
        return (alphas, accs) if batched else (alphas[0], accs[0])

    def solve_mass(self, q, rhs):
        """``M(q)^-1 rhs`` by the CFA (one factorization, O(N) per column).

        ``rhs`` (nv,) or (nv, m). A building block for cut-joint constraints:
        with the equivalent control force ``F_T = rhs`` the CFA returns ``M^-1 F_T``.
        """
        self._refresh()
        q = np.asarray(q, dtype=float)
        rhs = np.asarray(rhs, dtype=float)
        cols = rhs.reshape(self.nv, -1)
        zero = np.zeros(self.nv)
        K.kinematics(self._mdl, self._ws, q, zero)
        st = K.factor(self._mdl, self._ws)
        if st != 0:
            self._raise_factor(st, q)
        out = np.empty_like(cols)
        FT = np.zeros(max(self.nv, 1))
        qdd = np.zeros(max(self.nv, 1))
        L = self._ws[6]
        for c in range(cols.shape[1]):
            FT[:self.nv] = cols[:, c]
            # speeds of reversed joints: F_T' = L^-T F_T
            for k in range(1, self.n_bodies + 1):
                if self._rev[k] and self._mdl[6][k]:
                    sl = slice(self._mdl[9][k], self._mdl[9][k] + self._mdl[6][k])
                    nvk = self._mdl[6][k]
                    FT[sl] = np.linalg.solve(L[k, :nvk, :nvk].T, cols[sl, c])
            K.solve(self._mdl, self._ws, FT, qdd)
            out[:, c] = qdd[:self.nv]
        return out.reshape(rhs.shape)

    def inverse_dynamics(self, q, qd, qdd, t=0.0, forces=True):
        """Joint forces ``tau`` (nv,) that produce ``qdd``: ``M qdd + b(q, qd)``.

        ``b`` includes gravity and the force elements (JointForce elements are
        subtracted: ``tau`` is what must be added to them) unless ``forces=False``.
        Returns ``(tau, reactions)``.
        """
        self._refresh()
        q, qd = self._check_state(q, qd)
        qdd = np.asarray(qdd, dtype=float)
        tau_app = np.zeros(max(self.nv, 1))
        fext = np.zeros((self.n_bodies + 1, 6))
        if forces:
            self._applied(t, q, qd, tau_app, fext)
        tau = np.zeros(max(self.nv, 1))
        reac = np.zeros((len(self.joint_names), 6))
        K.inverse_dynamics(self._mdl, self._ws, q, qd, np.ascontiguousarray(qdd), fext,
                           self._gravity, self._use_grav and forces, tau, reac)
        return tau[:self.nv] - tau_app[:self.nv], reac

    def mass_matrix(self, q):
        """Joint-space mass matrix (nv x nv) by Newton-Euler columns (for tests)."""
        self._refresh()
        q = np.asarray(q, dtype=float)
        z = np.zeros(self.nv)
        M = np.zeros((self.nv, self.nv))
        for i in range(self.nv):
            e = z.copy()
            e[i] = 1.0
            M[:, i] = self.inverse_dynamics(q, z, e, forces=False)[0]
        return 0.5 * (M + M.T)

    # ------------------------------------------------------------------ states
    def _kin(self, q, qd):
        self._refresh()
        q, qd = self._check_state(q, qd)
        K.kinematics(self._mdl, self._ws, q, qd)
        return self._ws[2], self._ws[3], self._ws[8]

    def body_states(self, q, qd=None):
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

    def kinetic_energy(self, q, qd):
        """Kinetic energy (J)."""
        Rw, rw, vel = self._kin(q, qd)
        Im = self._mdl[13]
        return float(0.5 * np.einsum("ki,kij,kj->", vel[1:], Im[1:], vel[1:]))

    def potential_energy(self, q, t=0.0):
        """Gravity plus the force elements' potentials (J)."""
        Rw, rw, vel = self._kin(q, np.zeros(self.nv))
        e = 0.0
        mass, mc = self._mdl[15], self._mdl[16]
        for k in range(1, self.n_bodies + 1):
            e -= self._gravity @ (mass[k] * rw[k] + Rw[k] @ mc[k])
        if self._generic:
            st = _State(self, Rw.copy(), rw.copy(), vel.copy())
            for fe in self._generic:
                e += float(fe.potential(t, st))
        return float(e)

    def momentum(self, q, qd):
        """``(linear, angular)`` momentum in world axes; angular about the world origin."""
        Rw, rw, vel = self._kin(q, qd)
        Im = self._mdl[13]
        lin = np.zeros(3)
        ang = np.zeros(3)
        for k in range(1, self.n_bodies + 1):
            h = Im[k] @ vel[k]
            p = Rw[k] @ h[3:]
            lin += p
            ang += Rw[k] @ h[:3] + np.cross(rw[k], p)
        return lin, ang

    # ------------------------------------------------------------------ integration
    def qdot(self, q, qd):
        """Coordinate rates for speeds (quaternion rates for Spherical/Free)."""
        out = np.empty(self.nq)
        K_qdot(self._mdl, q, qd, out)
        return out

    def normalize(self, q):
        """Project quaternion coordinates on unit norm (in place on a copy)."""
        q = np.array(q, dtype=float)
        for k in range(1, self.n_bodies + 1):
            code = self._jt[k]
            if code in (J.SPHERICAL, J.FREE):
                o = self._mdl[8][k] + (3 if code == J.FREE else 0)
                q[..., o:o + 4] /= np.linalg.norm(q[..., o:o + 4], axis=-1, keepdims=True)
        return q

    def simulate(self, t_end, dt=None, integrator="rk4", q0=None, qd0=None, t0=0.0, **options):
        """Integrate from ``(q0, qd0)`` (default: the joints' initial values) to ``t_end``.

        See :func:`flexmbd.integrators.explicit.simulate_recursive` for the options
        (``rtol``, ``atol``, ``t_eval``, ``method``, ``progress``, ``tau``).
        """
        from ..integrators.explicit import simulate_recursive

        return simulate_recursive(self, t_end, dt=dt, integrator=integrator, q0=q0, qd0=qd0,
                                  t0=t0, **options)


def K_qdot(mdl, q, v, out):
    """Python wrapper of the compiled coordinate-rate kernel."""
    _qdot_all(mdl, q, v, out)


from numba import njit  # noqa: E402


@njit(cache=True)
def _qdot_all(mdl, q, v, out):
    parent, jt, prm, qo, vo, nqj, nv = mdl[0], mdl[1], mdl[3], mdl[8], mdl[9], mdl[10], mdl[6]
    for k in range(1, parent.shape[0]):
        J.joint_qdot(jt[k], prm[k], q[qo[k]:qo[k] + nqj[k]], v[vo[k]:vo[k] + nv[k]],
                     out[qo[k]:qo[k] + nqj[k]])
