r"""The Constraint Force Algorithm for trees of flexible bodies.

Flexible bodies (:class:`~flexmbd.FlexibleBody`, floating frame of reference with
``n`` modal coordinates) enter the recursive formulation with their modal
coordinates as body-internal degrees of freedom: the system coordinates are the
tree joints' coordinates followed by the modal coordinates of every flexible body
(bodies in declaration order, labelled ``(body, "q1") ...``; speeds ``(body,
"q1d") ...``). The tree is still solved in O(N) and every joint reaction is
reported. This module derives the algorithm; the compiled kernels are in
:mod:`._flexkernels` and the dense reference in :mod:`.general`.

Notation
--------
As in Liu, Hu & Zhang (2016) and :mod:`._kernels`: spatial vectors are
``[angular; linear]``; for a frame ``F`` with pose ``(R, p)`` in a frame ``B`` the
wrench transform ``Phi(R, p) = [[R, p~ R], [0, R]]`` maps a wrench at ``F`` (``F``
axes) to the same wrench at ``B`` (``B`` axes) and ``Phi^T`` maps a twist of ``B``
to the twist of a point rigidly attached at ``F``; ``x^`` is the spatial motion
cross product (``crm``). Twists are ``[w; v]`` in the moving frame's axes, ``v``
the velocity of its origin, and accelerations are time derivatives of those
components (the convention of the rigid kernels).

1. Flexible body, deforming attachment frames
---------------------------------------------
Body ``j`` has its floating reference frame ``b`` (the reduction's body frame)
with speeds ``u = [V_b; qd]``, ``V_b = [w; v]`` in body axes, and the FFR
equations of :mod:`flexmbd.flexible.ffr`::

    M_b(q) du/dt + h(q, u) = Q_g + Q_ext - [0; K q + D qd + K_G q] + (joint forces)

An attachment frame ``F`` (an :class:`~flexmbd.model.flexible.InterfaceFrame`, a
node frame or a plain frame, which does not deform) has the pose
``R_F = exp(theta~) R_F0``, ``theta = Theta q``, ``p_F = p_F0 + U q`` in ``b``
(``[Theta; U]`` = the frame's ``modes``: the exponential map is the one the absolute
formulation uses). Its relative angular velocity is ``J_l(theta) Theta qd`` with the
left Jacobian ``J_l = I + b theta~ + c theta~^2`` (``b = (1-cos t)/t^2``,
``c = (t - sin t)/t^3``, ``t = |theta|``), so its twist (``F`` axes) is ::

    V_F = Phi_F^T V_b + S_F qd,       S_F = [R_F^T J_l Theta; R_F^T U]     (6 x n)

and, differentiating (the relative twist of ``F`` in ``b`` is ``S_F qd``; for
any frame pair ``d/dt(Phi^T) x = (Phi^T x) x^ v_rel``) ::

    dV_F/dt = Phi_F^T dV_b/dt + V_F x^ (S_F qd) + S_F qdd + sigma_F,
    sigma_F = (dS_F/dt) qd = [R_F^T (dJ_l/dt) thetad; -R_F^T (w_r x U qd)],
    (dJ_l/dt) thetad = 2 b'(theta.thetad) theta x thetad
                       + 2 c'(theta.thetad) theta x (theta x thetad) + c thetad x (theta x thetad)

(``b', c'`` derivatives with respect to ``t^2``; :func:`._flexkernels.frame_state`).
A wrench ``F`` applied at ``F`` does the virtual power ``F . V_F``: its generalized
force on the body is ``[Phi_F F; S_F^T F]``.

2. Speeds of the inboard joint frame
------------------------------------
As for rigid bodies, the CFA works at the inboard joint frame ``e_j = C`` (the tree
joint's frame on body ``j``, which deforms when it is an interface or node frame).
Change the body speeds to ``u' = [V_C; qd]``: ``u' = T^-1 u`` with ::

    T^-1 = [[Phi_C^T, S_C], [0, I]],      T^-T = [[Phi_C, 0], [S_C^T, I]].

Then ``T^T [Phi_C F; S_C^T F] = [F; 0]`` (a wrench at ``C`` is a plain wrench in
these speeds), the generalized inertia is ``M' = T^T M_b T`` and its inverse ::

    G'_j = T^-1 M_b^-1 T^-T        ((6 + n) square; with L L^T = M_b: G' = B^T B, B = L^-1 T^-T)

3. Outboard joints: the extended shift
--------------------------------------
Child ``k`` hangs from the frame ``P_k`` on body ``j`` (its in frame); the joint moves
``e_k`` relative to ``P_k`` by ``(R_J, p_J)`` with twist ``H_k Qd_k`` (bias ``c_J``).
Eliminating ``V_b`` between ``V_C`` and ``V_P``::

    V_k = Phi_k^T V_C + Psi_k^T qd_j + H_k Qd_k,
    Phi_k = Phi_rel Phi_J,  Phi_rel = Phi_C^-1 Phi_P  (pose of the deformed P_k in the deformed C)
    Psi_k^T = Phi_J^T S_P - Phi_k^T S_C                                        (6 x n_j)

``Psi_k^T qd`` is the twist of ``e_k`` caused by the deformation of body ``j``
between its two joint frames (the interface mode shapes shifted to the child's
joint frame). With the *extended shift* ``Pt_k = [Phi_k; Psi_k]`` ((6+n_j) x 6):

* kinematics ``V_k = Pt_k^T u'_j + H_k Qd_k``, i.e. the paper's eq. (7)
  ``V_k = P^T V_j + H Qd`` with ``P`` replaced by ``Pt``;
* the wrench ``F_k`` at ``e_k`` acts on body ``j`` with the generalized force
  ``-Pt_k F_k`` in the speeds ``u'_j``: it does work on the modes through the
  interface mode shapes.

4. Linear part and bias part
----------------------------
Split every acceleration into a part linear in the unknown accelerations
(joint ``Qdd`` and modal ``qdd``) and a bias part computed with all of them zero
(one outward Newton-Euler pass, :func:`._flexkernels.kinematics`)::

    a_k = Phi_k^T a_j + (bias through b and P_k, sections 1 and 3) + V_k x^ (H Qd) + c_J,
    a_b = Phi_C^-T (a_C - V_C x^ (S_C qd) - sigma_C)      (body-frame bias acceleration)

and the generalized bias force of body ``j`` in the speeds ``u'`` ::

    beta'_j = T^T (M_b [a_b; 0] + h - Q_g - Q_ext + [0; K q + D qd])
            = [Phi_C^-1 beta_r; beta_f - S_C^T Phi_C^-1 beta_r].

Its 6-part is a wrench at ``e_j``; it is absorbed, exactly as the paper's
nonlinear terms (eq. 4), into a bias interbody force accumulated inward,
``fb_j = beta'_r,j + sum_k (Pt_k fb_k)_r``; the modal remainder
``rho_j = beta'_f,j + sum_k Psi_k fb_k`` cannot be carried by the 6-dimensional
joint force and becomes the *modal equivalent control force* ``tf_j = -rho_j``
(plus applied modal forces). With the physical interbody force
``F_k = F_k^eq + fb_k`` the body equations become ::

    M'_j du'_j(lin) = [I; 0] F_j^eq - sum_k Pt_k F_k^eq + [0; tf_j]
    H_k^T F_k^eq = F_Tk = tau_k - H_k^T fb_k                        (eq. 4-5)

5. The CFA system
-----------------
Assembling as in eq. (16) with the block matrix ``P`` whose body rows are ``6+n``
high (``[I; 0]`` in block (j, j), ``-Pt_k`` in block (parent, k)), ``G = diag(G'_j)``
and the modal selector ``E``::

    u' = G (P F + E tf),   P^T u' = H Qdd  =>  W^T P^T u' = 0
    A F_S = -W^T P^T G (P H F_T + E tf),   A = W^T P^T G P W            (eq. 25-29)
    Qdd = H^T P^T u',   qdd_j = E^T u'_j                                 (eq. 28)

``A`` has the sparsity of the rigid case: block-tridiagonal on chains with the
node couplings of eq. (33-36); its blocks are projected inverse generalized
inertias ::

    A_k = W_k^T (G'_k[rr] + Pt_k^T G'_j Pt_k) W_k,     B_k = -W_j^T (G'_j Pt_k)[r] W_k,
    b_ab = W_a^T Pt_a^T G'_j Pt_b W_b     (siblings a, b of node j)

(``[rr]``, ``[r]``: the rows/columns of the six frame speeds). A rigid body is the
case ``n = 0`` (``Pt = Phi``, ``G' = I^-1``). The serialized CFA (odd-even
reduction of the chains, small dense node system) applies unchanged; the extra
cost per flexible body is one Cholesky factorization of ``M_b`` and ``G'`` (O(n^3))
plus O(n^2) per outboard joint, so a tree is solved in O(N) for a fixed number of
modes. The modal forces only enter the right-hand sides (the ``E tf`` terms of
the two passes of :func:`._flexkernels.solve`).

6. Reactions and body accelerations
-----------------------------------
The reaction of joint ``k`` is ``F_k = F_k^eq + fb_k`` at the origin of ``e_k`` in its
axes -- the *deformed* child joint frame -- rotated to the declared child frame
(docs/design/conventions.rst, as the rigid kernels). The floating frame's acceleration
follows from ``dV_C/dt = du'[r] + a_C``:
``dV_b/dt = Phi_C^-T (dV_C/dt - V_C x^ (S_C qd) - sigma_C - S_C qdd)``.

7. Geometric stiffening
-----------------------
``K_G(p) q`` with the load parameters of :mod:`flexmbd.fem.geometric` taken from
mean-axis kinematics (:mod:`flexmbd.flexible.mean_axis`, the same as the absolute
formulation): products of the mean angular velocity ``w + Gamma_w qd``, the mean angular
and origin accelerations ``M_rr0^-1 (M_rr(q) dV_b/dt + M_rf(q) qdd + h_r - C(w_p))``
(origin acceleration minus gravity; ``M_rr, M_rf, h_r`` stored by the bias pass, the
accelerations of the current iterate), and the wrenches applied at the stiffened interfaces
(joints attached through :class:`~flexmbd.model.flexible.InterfaceFrame`; the
Craig-Bampton reference interface has zero unit matrices). The acceleration and
interface-load terms depend on the solution: they would make ``M'`` unsymmetric.
They are kept on the right-hand side (a modal force) and iterated to a fixed point
with the *current* accelerations and reactions -- only the two solve passes are
repeated, the factorization is reused. The contraction factor is of the order
of the strain (``|K_G q| / |M qdd|`` ~ deformation / length), so a few iterations
reach round-off. The absolute formulation takes the same inertia loads at the
current step and the interface wrenches from the previous step (lagged); both
converge to the same equations when its lagged loads are updated to the current
ones (tests/recursive/test_flexible_cfa.py). A wrench applied through a stiffened
interface frame by the loop layer (a cut joint's, :meth:`FlexTree.frame_wrench`) loads that
interface's unit stress state like a tree joint's reaction (a constant modal force within
the tree solve); the loop layer iterates the multipliers (:mod:`flexmbd.constraints.loops`).
``FlexibleBody(geometric_stiffening=False)`` switches the term off per body.
"""

from __future__ import annotations

import numpy as np

from ..flexible.mean_axis import rigid_fit
from ..model.flexible import FlexibleBody, _DeformingFrame
from ..model.forces import Gravity, JointForce, PointForce, PointTorque
from ..model.sda import SpringDamperActuator
from ..series import BodySeries
from ..spatial import rot_to_quat_batch
from . import _flexblock as FB
from . import _flexkernels as FK
from . import _kernels as K
from . import _nbloops as NL
from .general import general_flexible

__all__ = ["FlexTree", "OMEGA_PRODUCTS", "frame_constants", "frame_motion"]

OMEGA_PRODUCTS = ("w1w1", "w2w2", "w3w3", "w1w2", "w2w3", "w1w3")
#: the geometric-stiffening fixed point of one evaluation: relative tolerance of the modal
#: force change and the most iterations (:func:`._flexkernels.forward_dynamics`)
STIFF_TOL, STIFF_MAX_ITER = 1e-13, 100


def _frame_modes(frame, body):
    """(Theta, U) (3, n each) of a frame on ``body`` or None when it does not deform."""
    if not isinstance(body, FlexibleBody) or not isinstance(frame, _DeformingFrame):
        return None
    modes = np.asarray(frame.modes, float)
    if not np.any(modes):
        return None
    return modes[:3], modes[3:]


def frame_constants(frame, body, n, nmax=None):
    """``[R0 | p0 | Theta | U]`` (3, 4 + 2 nmax; ``Theta`` and ``U`` n columns each, zeros
    after them) of a frame on ``body`` with ``n`` modes: its pose in the body frame
    (rotation, position in m) and its rotation and translation mode shapes (rad, m per unit
    modal coordinate; zeros for a frame that does not deform), the constants
    :func:`._flexkernels.frame_state` reads."""
    nmax = n if nmax is None else nmax
    C = np.zeros((3, 4 + 2 * nmax))
    C[:, :3] = np.asarray(frame.rotation, float)
    C[:, 3] = np.asarray(frame.position, float)
    md = _frame_modes(frame, body)
    if md is not None:
        C[:, 4 : 4 + n], C[:, 4 + n : 4 + 2 * n] = md
    return C


def frame_motion(frame, body, q, qd):
    """Pose ``(R, p)`` in the body frame, modal twist matrix ``S`` (6 x n, frame axes) and
    convective term ``sigma`` of a frame on ``body`` at modal coordinates/rates ``(q, qd)``
    (section 1; numpy version of :func:`._flexkernels.frame_state`). Non-deforming
    frames: constant pose, ``S = 0``."""
    R0 = np.asarray(frame.rotation, float)
    p0 = np.asarray(frame.position, float)
    n = len(q)
    if _frame_modes(frame, body) is None:
        return R0, p0, np.zeros((6, n)), np.zeros(6)
    Fc = np.zeros((1, 2, 3, 4 + 2 * n))
    Fc[0, 0] = frame_constants(frame, body, n)
    Ft = np.zeros((1, 2, 3, 4))
    Fs = np.zeros((1, 2, 6, n + 1))
    FK.frame_state(
        Fc,
        0,
        0,
        n,
        np.ascontiguousarray(q, dtype=float),
        np.ascontiguousarray(qd, dtype=float),
        Ft,
        Fs,
    )
    return (
        Ft[0, 0, :, :3].copy(),
        Ft[0, 0, :, 3].copy(),
        Fs[0, 0, :, :n].copy(),
        Fs[0, 0, :, n].copy(),
    )


class FlexTree:
    """Constant data and workspaces of the flexible-body kernels for one RecursiveSystem.

    Built by :class:`~flexmbd.recursive.RecursiveSystem` (which owns the tree arrays);
    refreshed with the system. The system's tree strategy for trees with flexible bodies
    (the rigid one: ``recursive.system._RigidOps``, the same interface): no compiled
    whole-tree entry point (``compiled`` False), one state at a time through
    :meth:`forward`.
    """

    compiled = False

    def __init__(self, system):
        s = system
        n = s.n_bodies
        self.system = s
        self.flex_labels = [
            k for k in range(1, n + 1) if isinstance(s.label_bodies[k], FlexibleBody)
        ]
        nf = [0] * (n + 1)
        for k in self.flex_labels:
            nf[k] = s.label_bodies[k].n_modes
        self.nf = nf
        self.nmax = max(max(nf), 1)
        # flexible bodies sharing a reduced body (and stiffening switch) share their constants
        self.fx_of = {}
        keys = {}
        for k in self.flex_labels:
            b = s.label_bodies[k]
            key = (id(b.reduced), bool(b.geometric_stiffening))
            self.fx_of[k] = keys.setdefault(key, len(keys))
        self.nfx = len(keys)
        # stiffened interfaces per flexible body
        self.itf = {}
        nitf = 0
        for k in self.flex_labels:
            self.itf[k] = self._stiff_interfaces(s.label_bodies[k])
            nitf = max(nitf, len(self.itf[k]))
        self.nitf = nitf
        self._alloc()

    # -- data -------------------------------------------------------------------------
    @staticmethod
    def _stiff_interfaces(body):
        rb = body.reduced
        if not body.geometric_stiffening or rb.kg_unit.shape[0] == 0:
            return []
        names = list(rb.kg_names)
        out = []
        for nm in rb.interface_names:
            keys = [f"{nm}.{c}" for c in ("mx", "my", "mz", "fx", "fy", "fz")]
            if any(k in names and np.any(rb.kg_unit[names.index(k)]) for k in keys):
                out.append(nm)
        return out

    def _alloc(self):
        s = self.system
        n = s.n_bodies
        nm, nfx = self.nmax, max(self.nfx, 1)
        mm = 6 + nm
        self.Fi = np.zeros((FK.NFI, n + 1), np.int64)
        self.Fi[FK.F_IOUT] = -1
        self.Fi[FK.F_IIN] = -1
        self.Fi[FK.F_FX] = -1
        self.Fc = np.zeros((n + 1, 2, 3, 4 + 2 * nm))
        self.Ft = np.zeros((n + 1, 2, 3, 4))
        self.Fs = np.zeros((n + 1, 2, 6, nm + 1))
        self.Fw = np.zeros((n + 1, FK.NW, 6))
        self.Fm = np.zeros((n + 1, FK.NFM, nm))
        self.PsiT = np.zeros((n + 1, 6, nm))
        self.Gp = np.zeros((n + 1, mm, mm))
        self.Zc = np.zeros((n + 1, mm, 6))
        self.Im = np.zeros((nfx, 13))
        self.St = np.zeros((nfx, 3, nm))
        self.Si = np.zeros((nfx, 3, 3, nm))
        self.Pi = np.zeros((nfx, 3, 3, nm, nm))
        self.KD = np.zeros((nfx, 3, nm, nm))
        nkg = 12 + 6 * self.nitf
        self.KG = np.zeros((nfx, nkg, nm, nm))
        self.KQ = np.zeros((n + 1, nkg, nm))
        self.Mb = np.zeros((mm, mm))
        self.Bm = np.zeros((mm + 4, mm))
        self.A3 = np.zeros((4, 3, 3, nm + 6))  # scratch of _flexkernels.ffr_terms
        self.any_stiff = False
        self.info = np.zeros(2, np.int64)  # stiffening iterations of the last call
        self.work = self._pack()

    def refresh(self):
        """(Re-)read frames, invariants and unit stiffness matrices (model revision changed)."""
        s = self.system
        n = s.n_bodies
        Fi, Fc = self.Fi, self.Fc
        Fi[:] = 0
        Fi[FK.F_IOUT] = -1
        Fi[FK.F_IIN] = -1
        Fi[FK.F_FX] = -1
        Fc[:] = 0.0
        modal = s.modal_slices
        for k in self.flex_labels:
            fx = self.fx_of[k]
            b = s.label_bodies[k]
            nk = b.n_modes
            inv = b.invariants()
            Fi[FK.F_NF, k] = nk
            Fi[FK.F_FX, k] = fx
            Fi[FK.F_MQ, k] = modal[b.name].q.start
            Fi[FK.F_MV, k] = modal[b.name].v.start
            self.Im[fx, 0] = inv.mass
            self.Im[fx, 1:4] = inv.c
            self.Im[fx, 4:13] = np.asarray(inv.E0, float).ravel()
            self.St[fx, :, :nk] = inv.St
            self.Si[fx, :, :, :nk] = inv.S
            self.Pi[fx, :, :, :nk, :nk] = inv.P
            self.KD[fx, 0, :nk, :nk] = inv.K
            self.KD[fx, 1, :nk, :nk] = inv.D
            self.KD[fx, 2, :nk, :nk] = inv.Mff
            stiff = bool(b.geometric_stiffening) and b.reduced.kg_unit.shape[0] > 0
            Fi[FK.F_STIFF, k] = int(stiff)
            if stiff:
                rb = b.reduced
                names = list(rb.kg_names)

                def unit(name, rb=rb, names=names, nk=nk):
                    if name in names:
                        return np.asarray(rb.kg_unit[names.index(name)], float)
                    return np.zeros((nk, nk))

                mats = (
                    [unit(x) for x in OMEGA_PRODUCTS]
                    + [unit(f"alpha{i + 1}") for i in range(3)]
                    + [unit(f"a{i + 1}") for i in range(3)]
                )
                for nm_ in self.itf[k]:
                    mats += [unit(f"{nm_}.{c}") for c in ("mx", "my", "mz", "fx", "fy", "fz")]
                self.KG[fx] = 0.0
                self.KG[fx, : len(mats), :nk, :nk] = np.stack(mats)
                # mean-axis load parameters (flexmbd.flexible.mean_axis)
                Minv, Gam = rigid_fit(inv)
                self.Fw[k, FK.W_MI : FK.W_MI + 6] = Minv
                self.Fm[k, FK.FM_GW : FK.FM_GW + 3] = 0.0
                self.Fm[k, FK.FM_GW : FK.FM_GW + 3, :nk] = Gam[:3]
        self.any_stiff = bool(np.any(Fi[FK.F_STIFF]))
        # frames
        for k in range(1, n + 1):
            j = s.label_joints[k]
            rev = bool(s.arrays.Ia[K.I_REV, k])
            out_f = j.parent_frame if rev else j.child_frame
            in_f = j.child_frame if rev else j.parent_frame
            p = int(s.topology.parent[k])
            Ra = s.arrays.R3[K.R_A, k]
            for side, fr, lab in ((FK.FR_OUT, out_f, k), (FK.FR_IN, in_f, p)):
                Fc[k, side, :, 0:3] = fr.rotation @ Ra
                Fc[k, side, :, 3] = np.asarray(fr.position, float)
                body = s.label_bodies[lab] if lab > 0 else None
                md = _frame_modes(fr, body) if lab > 0 else None
                if md is not None:
                    nl = self.nf[lab]
                    Fc[k, side, :, 4 : 4 + nl] = md[0]
                    Fc[k, side, :, 4 + nl : 4 + 2 * nl] = md[1]
                    Fi[FK.F_ODEF if side == FK.FR_OUT else FK.F_IDEF, k] = 1
                # undeformed state (used for non-deforming frames of flexible bodies)
                self.Ft[k, side, :, 0:3] = Fc[k, side, :, 0:3]
                self.Ft[k, side, :, 3] = Fc[k, side, :, 3]
                self.Fs[k, side] = 0.0
                nm_ = getattr(fr, "interface_name", None)
                if lab > 0 and nm_ is not None and nm_ in self.itf.get(lab, []):
                    idx = self.itf[lab].index(nm_)
                    Fi[FK.F_IOUT if side == FK.FR_OUT else FK.F_IIN, k] = idx

    # -- kernel calls -----------------------------------------------------------------
    def _pack(self):
        """The workspace tuple of the drivers (:class:`._flexkernels.FlexWork`, as a plain
        tuple): the system's tree model and workspace, then this object's arrays. Every
        array is allocated once (:meth:`_alloc`, the system's) and written in place."""
        a = self.system.arrays
        return tuple(
            FK.FlexWork(
                a.Ia,
                a.Sa,
                self.Fi,
                a.Mm,
                a.Vv,
                a.R3,
                a.P3,
                a.Tt,
                a.Dn,
                a.Jv,
                self.Fc,
                self.Ft,
                self.Fs,
                self.Fw,
                self.Fm,
                self.PsiT,
                self.Gp,
                self.Zc,
                self.Im,
                self.St,
                self.Si,
                self.Pi,
                self.KD,
                self.KG,
                self.KQ,
                self.Mb,
                self.Bm,
                self.A3,
            )
        )

    def forward(self, q, v, tau, reac, tol=STIFF_TOL, max_iter=STIFF_MAX_ITER):
        """One state through the serialized kernels: joint and modal coordinates ``q``,
        speeds ``v``, joint and modal forces ``tau`` (SI); Q̈ into the ``J_QDD`` row of the
        workspace, joint reactions into ``reac``; returns the kernel status."""
        s = self.system
        a = s.arrays
        Jv = a.Jv
        Jv[K.J_TAU, :] = 0.0
        Jv[K.J_TAU, : len(tau)] = tau
        return FK.forward_dynamics(
            self.work,
            q,
            v,
            a.gravity,
            s.use_gravity,
            reac,
            self.any_stiff,
            tol,
            max_iter,
            self.info,
        )

    def bias_forces(self, q, v):
        """The bias pass of the flexible kernels at ``(q, v)`` after :meth:`kinematics`
        (``F_T`` of the joints, modal equivalent forces, inverse generalized inertias);
        the kernel status (0 or the label of a body whose mass matrix is not positive
        definite)."""
        s = self.system
        return FK.bias_forces(self.work, q, v, s.arrays.gravity, s.use_gravity)

    def kinematics(self, q, v, world=True):
        """Tree and floating-frame kinematics at ``(q, v)`` into the workspace (world
        poses only with ``world``)."""
        FK.kinematics(self.work, q, v, world)

    def body_accelerations(self, out):
        a = self.system.arrays
        FK.body_accelerations(
            a.Ia, self.Fi, a.Vv, a.R3, a.P3, self.Ft, self.Fs, self.Fw, self.Fm, out
        )

    def solve_columns(self, q, cols, out):
        """``M^-1 cols`` (joint and modal speeds) at ``q`` into ``out``; the kernel status."""
        self.kinematics(q, np.zeros(self.system.nv))
        return FK.solve_columns(self.work, q, cols, out)

    def general(self, system, q, v, tau, fext):
        """One state by the dense reference (:func:`~.general.general_flexible`; the
        applied wrenches ``fext`` are read from the workspace): ``(qdd, reactions,
        W F_S, body accelerations, F_T)``."""
        return general_flexible(system, q, v, tau)

    @staticmethod
    def mass_matrix(system, q):
        """``M(q)`` (nv x nv, joint and modal speeds): the inverse of the CFA's ``M^-1``
        columns, symmetrized."""
        Minv = system.solve_mass(q, np.eye(system.nv))
        M = np.linalg.inv(0.5 * (Minv + Minv.T))
        return 0.5 * (M + M.T)

    # -- Python-level quantities (poses, energies) ------------------------------------
    def body_pose(self, k, Rk, rk):
        """Pose of the floating frame of flexible body ``k`` from the world pose of e_k
        (after :meth:`kinematics`)."""
        RC = self.Ft[k, FK.FR_OUT, :, 0:3]
        pC = self.Ft[k, FK.FR_OUT, :, 3]
        R = Rk @ RC.T
        return R, rk - R @ pC

    def body_speeds(self, k):
        """Body-frame twist [w; v] (body axes) of flexible body ``k`` after :meth:`kinematics`."""
        return self.Fw[k, FK.W_VB].copy()

    def frame_wrench(self, k, body, frame, q, point, n, f, fext):
        """A world wrench (moment ``n`` about the world ``point``, force ``f``) acting on
        flexible body ``k`` through ``frame`` (rigidly extended): generalized force
        ``[Phi_F w_F; S_F^T w_F]`` -- its body part into ``fext`` (body axes, about the
        body origin), its modal part into the applied modal forces."""
        s = self.system
        sq = s.modal_slices[body.name].q
        nk = self.nf[k]
        RF, pF, S, _ = frame_motion(frame, body, np.asarray(q)[sq], np.zeros(nk))
        Rb, rb = self.body_pose(k, s.arrays.R3[K.R_W, k], s.arrays.P3[K.P_W, k])
        pw = rb + Rb @ pF
        nF = np.asarray(n, float) + np.cross(np.asarray(point, float) - pw, f)
        wF = np.concatenate([RF.T @ (Rb.T @ nF), RF.T @ (Rb.T @ f)])
        fb = RF @ wF[3:]
        fext[k, :3] += RF @ wF[:3] + np.cross(pF, fb)
        fext[k, 3:] += fb
        self.Fm[k, FK.FM_QAPP, :nk] += S.T @ wF
        nm_ = getattr(frame, "interface_name", None)
        if nm_ is not None and nm_ in self.itf.get(k, ()):
            # a wrench through a stiffened interface (a cut joint's): it loads the unit
            # stress state of that interface like a tree joint's reaction (stiffening_forces)
            wb = np.concatenate([RF @ wF[:3], fb])  # body axes, about the frame origin
            b0 = 12 + 6 * self.itf[k].index(nm_)
            KGw = np.tensordot(wb, self.KG[self.fx_of[k], b0 : b0 + 6, :nk, :nk], axes=1)
            self.Fm[k, FK.FM_QAPP, :nk] -= KGw @ np.asarray(q)[sq]

    def point_force(self, fe, t, q, state, fext, qd=None):
        """Apply the force element ``fe`` at time ``t`` (s), state ``q``, ``qd`` (after a
        kinematics pass with world poses): a PointForce, PointTorque or
        SpringDamperActuator by its row of :meth:`point_loads`
        (:func:`._nbloops.flex_point_load`: wrenches into ``fext``, modal forces at
        deforming frames into the applied modal forces); an element with
        ``frame_wrenches`` (cut-joint wrenches of the loop layer) through the frames that
        carry them. Returns False for any other element."""
        table = self.point_loads()
        e = table["rows"].get(id(fe))
        if e is not None:
            PI, PF, PU, _ = table["P"]
            q = np.ascontiguousarray(q, dtype=float)
            v = np.zeros(self.system.nv) if qd is None else np.ascontiguousarray(qd, dtype=float)
            for row, cols, fn in table["timers"].get(e, ()):
                PF[row, cols] = fn(t)
            if type(fe) is SpringDamperActuator:
                self._free_length(table, e, fe, q, v)
            if NL.flex_point_load(self.work, fext, e, PI, PF, PU, q, v) != 0:
                fe.line_length(np.zeros(3))  # raises: the ends coincide
            return True
        if hasattr(fe, "frame_wrenches"):
            packed = fe.compiled_frames() if hasattr(fe, "compiled_frames") else None
            if packed is not None:
                from . import _nbflexcut as FC  # lazy: loaded with the loop layer

                (sI, sC, sFt, sFs), items = packed
                zq, w6, Rb, rb = self._cut_scratch()
                q = np.ascontiguousarray(q, dtype=float)
                FC.flex_frame_wrenches(self.work, sI, sC, sFt, sFs, q, items, zq, w6, Rb, rb, fext)
                return True
            s = self.system
            for body, point, n, f, frame in fe.frame_wrenches(t, state):
                if body is s.model.ground:
                    continue
                k = s.label(body)
                if k in self.flex_labels:
                    self.frame_wrench(k, body, frame, q, point, n, f, fext)
                else:
                    Rw, rw = s.arrays.R3[K.R_W, k], s.arrays.P3[K.P_W, k]
                    n_o = np.asarray(n, float) + np.cross(np.asarray(point, float) - rw, f)
                    fext[k, :3] += Rw.T @ n_o
                    fext[k, 3:] += Rw.T @ np.asarray(f, float)
            return True
        return False

    def _cut_scratch(self):
        """Scratch of :func:`._nbflexcut.flex_frame_wrenches` (allocated once)."""
        w = getattr(self, "_cutw", None)
        if w is None:
            from . import _nbflexcut as FC

            w = self._cutw = (
                np.zeros(self.nmax),
                np.zeros((FC.NW6, 6)),
                np.zeros((3, 3)),
                np.zeros(3),
            )
        return w

    def _free_length(self, table, e, fe, q, v):
        """Row ``e``'s free length ``l0`` (m) from the SDA ``fe``; a missing one is set to
        the length at ``(q, v)`` (after a kinematics pass with world poses): the first
        evaluation's, as for rigid-point SDAs."""
        PI, PF, PU, _ = table["P"]
        if fe.l0 is None:
            fe.l0 = float(NL.flex_sda_length(self.work, e, PI, PF, PU, q, v))
        PF[e, 8] = fe.l0

    def fix_free_lengths(self, q, v):
        """Set the free length ``l0`` (m) of every SDA of :meth:`point_loads` given
        without one to its length at ``(q, v)`` (the first evaluation's, for a compiled
        block that starts there) and write every SDA's ``l0`` into the table."""
        table = self.point_loads()
        sdas = [(e, fe) for fe, e in table["elements"] if type(fe) is SpringDamperActuator]
        if not sdas:
            return
        q = np.ascontiguousarray(q, dtype=float)
        v = np.ascontiguousarray(v, dtype=float)
        if any(fe.l0 is None for _, fe in sdas):
            self.kinematics(q, v)
        for e, fe in sdas:
            self._free_length(table, e, fe, q, v)

    def _point_end(self, body, point, frame):
        """``(label, flexible, p, U)`` of one end of a point load: a flexible body's
        floating-frame point and the translation modes of a deforming frame (zeros
        else), a rigid body's point in e_k coordinates, a ground point (label 0); None
        for a body outside the tree."""
        s = self.system
        U = np.zeros((3, self.nmax))
        if body is s.model.ground:
            return 0, 0, np.asarray(point, float), U
        k = s.label(body)
        if k is None:
            return None
        if k in self.flex_labels:
            md = _frame_modes(frame, body) if frame is not None else None
            if md is not None:
                U[:, : self.nf[k]] = md[1]
                point = frame.position
            return k, 1, np.asarray(point, float), U
        R0, r0 = s.body_pose(k, np.eye(3), np.zeros(3))  # body frame in e_k
        return k, 0, R0 @ np.asarray(point, float) + r0, U

    def point_loads(self):
        """The point-load table of the kernels (:func:`._nbloops.flex_point_load`) of the
        PointForce, PointTorque and SpringDamperActuator elements of the model (cached
        per model revision): ``{"P": (PI, PF, PU, PT), "rows": {id(element): row},
        "elements": [(element, row)], "timers": {row: [(row, columns, f(t))]}, "timed":
        [(row, column)], "complete": bool}``. ``PT`` (m, 2) int64 lists the ``(row,
        column)`` of the m values that are functions of time (force and torque vectors,
        SDA actuator forces), the order of ``timed``; ``f(t)`` gives their values (N,
        N m; a rigid body's body-axes vector in e_k axes). ``complete``: every force
        element but gravity and joint forces has a row; ``complete_but_caller``: every
        one but those and the system's ``applied_by_caller`` (a closed loop's cut-joint
        wrenches). An SDA's ``l0`` column is set by
        :meth:`fix_free_lengths` (or the first evaluation)."""
        s = self.system
        key = s.model.revision
        cached = getattr(self, "_points", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        PI, PF, PU, elements, timers, timed = [], [], [], [], {}, []
        complete = but_caller = True
        for fe in s.model.forces():
            if isinstance(fe, Gravity | JointForce):
                continue
            row = self._point_row(fe)
            if row is None:
                complete = False
                if not any(fe is c for c in s.applied_by_caller):
                    but_caller = False
                continue
            e = len(PI)
            ints, floats, U, tm = row
            PI.append(ints)
            PF.append(floats)
            PU.append(U)
            elements.append((fe, e))
            if tm is not None:
                cols, fn = tm
                timers[e] = [(e, cols, fn)]
                idx = range(cols.start, cols.stop) if isinstance(cols, slice) else (cols,)
                timed += [(e, c) for c in idx]
        nm = self.nmax
        table = {
            "P": (
                np.array(PI, np.int64).reshape(-1, 6),
                np.array(PF, float).reshape(-1, 10),
                np.array(PU, float).reshape(-1, 2, 3, nm),
                np.array(timed, np.int64).reshape(-1, 2),
            ),
            "rows": {id(fe): e for fe, e in elements},
            "elements": elements,
            "timers": timers,
            "timed": timed,
            "complete": complete,
            "complete_but_caller": but_caller,
        }
        self._points = (key, table)
        return table

    def _point_row(self, fe):
        """``(ints, floats, U (2, 3, nmax), (columns, f(t)) or None)`` of the table row of
        ``fe`` (:meth:`point_loads`), or None."""
        row = np.zeros(10)
        U = np.zeros((2, 3, self.nmax))
        if type(fe) is SpringDamperActuator:
            ends = [
                self._point_end(fe.body_i, fe.point_i, fe.frame_i),
                self._point_end(fe.body_j, fe.point_j, fe.frame_j),
            ]
            if None in ends:
                return None
            (ka, fa, pa, U[0]), (kb, fb, pb, U[1]) = ends
            row[0:3], row[3:6] = pa, pb
            row[6:10] = fe.k, fe.c, np.nan if fe.l0 is None else fe.l0, fe.actuator_force(0.0)
            timer = (9, fe.actuator_force) if callable(fe.fa) else None
            return (NL.P_SDA, ka, kb, fa, fb, 0), row, U, timer
        if type(fe) not in (PointForce, PointTorque):
            return None
        force = type(fe) is PointForce
        end = self._point_end(
            fe.body, fe.point if force else np.zeros(3), fe.attachment if force else None
        )
        if end is None or end[0] == 0:
            return None
        k, flex, p, U[0] = end
        body_axes = fe.frame == "body"
        value = fe.force if force else fe.torque
        R0 = None if flex or not body_axes else self.system.body_pose(k, np.eye(3), np.zeros(3))[0]

        def vector(t):
            x = np.asarray(value(t), dtype=float)
            return R0 @ x if R0 is not None else x

        row[0:3] = p if force else 0.0
        row[3:6] = vector(0.0)
        kind = NL.P_FORCE if force else NL.P_TORQUE
        timer = None if getattr(value, "constant", False) else (slice(3, 6), vector)
        return (kind, k, 0, flex, 0, int(body_axes)), row, U, timer

    def clear_applied(self):
        self.Fm[:, FK.FM_QAPP] = 0.0

    def add_modal_tau(self, tau):
        """Generalized forces along the modal speeds (``tau`` entries of the modal speeds)
        into the applied modal forces."""
        if not hasattr(self, "_tau_idx"):
            s = self.system
            rows, cols, idx = [], [], []
            for k in self.flex_labels:
                sl = s.modal_slices[s.label_bodies[k].name].v
                rows += [k] * self.nf[k]
                cols += list(range(self.nf[k]))
                idx += list(range(sl.start, sl.stop))
            self._tau_idx = (
                np.array(rows, np.int64),
                np.array(cols, np.int64),
                np.array(idx, np.int64),
            )
        rows, cols, idx = self._tau_idx
        t = np.asarray(tau)[idx]
        if t.any():
            self.Fm[rows, FK.FM_QAPP, cols] += t

    def rk4_loads(self, caller: bool = False):
        """The loads of the compiled blocks (:func:`._flexblock.flex_rk4_block`,
        :func:`._flexblock.flex_rk_block`) when the Python path's loads of this tree are
        gravity, joint and modal forces ``tau``, joint spring-damper laws, constant joint
        forces (no two on one speed) and the point loads of :meth:`point_loads` (point
        forces and torques, SDAs with rigid, ground or deforming ends) only, else None (a
        force element or a joint force law evaluated in Python, the tree of a closed-loop
        system unless ``caller``: then the loads its caller applies, the cut-joint
        wrenches, are left out, as for the energies, where ideal cut joints do no work).
        A tuple ``(LI, LF, actuators, MI, modal, constant, points)``: per law, in
        the order the system applies them, its joint coordinate and speed indices ``LI``
        (int64), stiffness, damping and rest coordinate ``LF`` (SI) and actuator function
        of time (``None`` for a constant one, whose value is then ``LF[m, 3]``); ``MI``
        (label, mode, speed index) of every modal speed (:meth:`add_modal_tau`); ``modal``
        (q offset, v offset, modes) of every flexible body (the coordinate rates);
        ``constant``: the speed indices and values (N, N m) of the constant joint forces;
        ``points``: the table of :meth:`point_loads`. Read on the refreshed system."""
        s = self.system
        if s.algorithm != "serialized" or (s.applied_by_caller and not caller):
            return None
        points = self.point_loads()
        if not points["complete_but_caller" if caller else "complete"]:
            return None
        laws, consts, law_v, const_v = [], {}, set(), []
        for f in s.model.forces():
            if isinstance(f, Gravity) or id(f) in points["rows"]:
                continue
            if caller and any(f is c for c in s.applied_by_caller):
                continue
            if not isinstance(f, JointForce) or (f.law is None and f.constant_force is None):
                return None
            sv = s.layout.joints[f.joint.name].v
            if f.law is not None:
                laws.append(f)
                law_v.add(sv.start)
            else:
                consts[sv.start] = f.constant_force
                const_v += range(sv.start, sv.stop)
        # a constant force shares no speed with another force (the kernel adds it first)
        if len(set(const_v)) < len(const_v) or law_v & set(const_v):
            return None
        const = np.zeros(s.nv)
        for start, c in consts.items():
            const[start : start + len(c)] = c
        cidx = np.array([start + i for start, c in consts.items() for i in range(len(c))], np.int64)
        nl = len(laws)
        LI = np.zeros((nl, 2), np.int64)
        LF = np.zeros((nl, 4))
        acts = []
        for m, f in enumerate(laws):
            js = s.layout.joints[f.joint.name]
            LI[m] = js.q.start, js.v.start
            LF[m, :3] = f.law
            fa = f.actuator
            if getattr(fa, "constant", False):
                LF[m, 3] = float(fa(0.0))
                acts.append(None)
            else:
                acts.append(fa)
        MI = np.zeros((0, 3), np.int64)
        for k in self.flex_labels:
            sl = s.modal_slices[s.label_bodies[k].name].v
            rows = [(k, c, sl.start + c) for c in range(self.nf[k])]
            MI = np.concatenate([MI, np.array(rows, np.int64).reshape(-1, 3)])
        modal = np.array(
            [(sq.start, sv.start, sq.stop - sq.start) for sq, sv in s.modal_slices.values()],
            np.int64,
        ).reshape(-1, 3)
        return LI, LF, acts, MI, modal, (cidx, const[cidx]), points

    def energy_samples(self, t, q, qd, tau=None, caller=False):
        """``{"kinetic", "gravity", "spring", "p_damper", "p_actuator", "p_external"}``
        (nt,) each, J and W, of the history ``t`` (nt,) s, ``q`` (nt, nq), ``qd`` (nt,
        nv), joint and modal forces ``tau`` (nt, nv) or None, by one compiled call
        (:func:`._flexblock.flex_energies`, the definitions of
        :meth:`~flexmbd.recursive.RecursiveSystem.energy_samples`, the point loads' as
        :meth:`point_energies`); None when the loads are not those of :meth:`rk4_loads`
        (the per-state methods then apply; ``caller``: the tree of a closed loop, without
        the cut-joint wrenches its caller applies). The actuators and point loads that are
        functions of time are evaluated at ``t`` in Python."""
        loads = self.rk4_loads(caller)
        if loads is None:
            return None
        LI, LF, acts, _, _, (cidx, cval), points = loads
        s = self.system
        Q = np.ascontiguousarray(np.atleast_2d(q), dtype=float)
        V = np.ascontiguousarray(np.atleast_2d(qd), dtype=float)
        nt = len(Q)
        t = np.broadcast_to(np.asarray(t, dtype=float), (nt,))
        FA = np.empty((nt, len(LF)))
        FA[:] = LF[:, 3]
        for m, fa in enumerate(acts):
            if fa is not None:
                FA[:, m] = [float(fa(x)) for x in t]
        FV = self._timed_values(points, t)
        if points["elements"]:
            self.fix_free_lengths(Q[0], V[0])
        TAU = np.zeros((nt, s.nv))
        if tau is not None:
            TAU[:] = np.asarray(tau, dtype=float)
        TAU[:, cidx] += cval  # the constant joint forces
        out = np.empty((nt, 6))
        FB.flex_energies(
            self.work, Q, V, TAU, s.arrays.gravity, s.use_gravity, LI, LF, FA, points["P"], FV,
            out,
        )  # fmt: skip
        keys = ("kinetic", "gravity", "spring", "p_damper", "p_actuator", "p_external")
        return {key: out[:, i].copy() for i, key in enumerate(keys)}

    @staticmethod
    def _timed_values(points, t):
        """``(len(t), m)``: the point-load table's m values of time at the times ``t``."""
        FV = np.empty((len(t), len(points["timed"])))
        c = 0
        for _, _, fn in point_timers(points):
            x = np.array([np.atleast_1d(fn(x)) for x in t]).reshape(len(t), -1)
            FV[:, c : c + x.shape[1]] = x
            c += x.shape[1]
        return FV

    def point_energies(self, t, q, qd):
        """``(spring, p_damper, p_actuator, p_external)`` (J, W) of the point loads of
        :meth:`point_loads` at time ``t`` (s) and the state ``q``, ``qd``: SDA springs
        ``k (l - l0)^2 / 2``, dampers ``c ldot^2``, actuators ``-fa ldot`` with the ends
        following the deformation, point forces ``f . v_P`` and torques ``n . w``
        (:func:`._nbloops.flex_point_energy`, after a kinematics pass); None when a
        force element other than gravity and joint forces has no row."""
        table = self.point_loads()
        if not table["complete"]:
            return None
        q = np.ascontiguousarray(q, dtype=float)
        v = np.ascontiguousarray(qd, dtype=float)
        out = np.zeros(4)
        if not table["elements"]:
            return out
        PI, PF, PU, PT = table["P"]
        if len(PT):
            PF[PT[:, 0], PT[:, 1]] = self._timed_values(table, np.array([float(t)]))[0]
        self.fix_free_lengths(q, v)
        self.kinematics(q, v)
        for _, e in table["elements"]:
            if NL.flex_point_energy(self.work, e, PI, PF, PU, q, v, out) != 0:
                return np.full(4, np.nan)
        return out

    def momentum_samples(self, q, qd):
        """``(linear (nt, 3), angular (nt, 3))`` momentum (kg m/s, kg m^2/s; world axes,
        angular about the world origin) of the history ``q`` (nt, nq), ``qd`` (nt, nv) by
        one compiled call (:func:`._flexblock.flex_momenta`, the definition of
        :meth:`~flexmbd.recursive.RecursiveSystem.momentum`)."""
        Q = np.ascontiguousarray(np.atleast_2d(q), dtype=float)
        V = np.ascontiguousarray(np.atleast_2d(qd), dtype=float)
        out = np.empty((len(Q), 6))
        FB.flex_momenta(self.work, Q, V, out)
        return out[:, :3].copy(), out[:, 3:].copy()


def point_timers(points):
    """The values of time of a point-load table (:meth:`FlexTree.point_loads`) in its
    row order, the order of its ``timed`` columns: ``[(row, columns, f(t)), ...]``."""
    return [x for e in sorted(points["timers"]) for x in points["timers"][e]]


def body_series(system, q):
    """:class:`~flexmbd.results.BodySeries` of every body with modal coordinates over a
    history ``q`` (nt, nq) of a recursive tree ``system``: ``modal`` for each, and the
    floating-frame and interface poses of :func:`flexible_series` where the tree has them."""
    q = np.atleast_2d(np.asarray(q, float))
    out = {name: BodySeries(modal=q[:, sq].copy()) for name, (sq, _) in system.modal_slices.items()}
    if len(q):
        out.update(flexible_series(system, q))
    return out


def _sign_continuous(e):
    """Euler parameters ``e`` (nt, 4) with row ``i`` negated where its product with the
    (possibly negated) row ``i - 1`` is negative, in place: what the loop ``if e[i] @
    e[i - 1] < 0: e[i] = -e[i]`` gives. Negating a row negates its products exactly, so
    only the signs of the products of the rows as given matter: each negative one flips
    the running sign, a zero or NaN one resets it; products near zero (|p| < 1e-9, where
    another rounding could change a sign), zeros and NaN (a failed run's rows) take that
    loop itself."""
    if len(e) < 2:
        return e
    p = np.einsum("ij,ij->i", e[1:], e[:-1])
    if not np.all(np.abs(p) >= 1e-9):
        for i in range(1, len(e)):
            if e[i] @ e[i - 1] < 0:
                e[i] = -e[i]
        return e
    sign = np.cumprod(np.where(p < 0, -1.0, 1.0))
    e[1:] *= sign[:, None]
    return e


def flexible_series(system, q):
    """:class:`~flexmbd.results.BodySeries` of the flexible bodies over a history ``q``
    (nt, nq) of a recursive tree ``system``: ``position`` / ``orientation`` (floating
    frame, world; Euler parameters scalar first, sign-continuous), ``modal`` and
    ``interfaces[NAME]`` (nt, 7): origin and Euler parameters of every deformed interface
    frame (world)."""
    fl = system.flex
    if fl is None:
        return {}
    q = np.atleast_2d(np.asarray(q, float))
    nt = q.shape[0]
    labels = fl.flex_labels
    Rw = np.empty((len(labels), nt, 3, 3))
    rw = np.empty((len(labels), nt, 3))
    Q = np.ascontiguousarray(q)
    FB.flex_frame_history(fl.work, Q, np.zeros(system.nv), np.array(labels, np.int64), Rw, rw)
    R, r = {}, {}
    for j, k in enumerate(labels):  # (fl.body_pose of every row: stacked matmul, same bits)
        RC, pC = fl.Ft[k, FK.FR_OUT, :, 0:3], fl.Ft[k, FK.FR_OUT, :, 3]
        R[k] = Rw[j] @ RC.T
        r[k] = rw[j] - R[k] @ pC

    def quats(Rs):
        # (rot_to_quat of each matrix: the batch computes every row with its operations)
        return _sign_continuous(rot_to_quat_batch(Rs, continuous=False))

    out = {}
    for k in labels:
        b = system.label_bodies[k]
        sq = system.modal_slices[b.name].q
        series = out[b.name] = BodySeries(
            position=r[k], orientation=quats(R[k]), modal=q[:, sq].copy()
        )
        for name in b.reduced.interface_names:
            Rf, pf = b.interface(name).poses(q[:, sq])
            pos = r[k] + np.matmul(R[k], pf[:, :, None])[:, :, 0]
            series.interfaces[name] = np.concatenate([pos, quats(R[k] @ Rf)], axis=1)
    return out
