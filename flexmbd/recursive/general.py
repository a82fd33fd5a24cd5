"""The general (dense) form of the Constraint Force Algorithm, eq. (4-29).

Readable reference implementation: it assembles the system matrices of eq.
(16)-(22) explicitly, for the whole tree at once:

* ``P`` (6N x 6N): identity blocks on the diagonal and ``-Phi_c`` in block row of
  the parent ``p`` and block column of the child ``c`` (eq. 10, 13, 17-21), so that
  the dynamics read ``P F = I V̇`` and the kinematics ``P^T V̇ = H Q̈`` (eq. 16);
* ``H = diag(H_k)``, ``W = diag(W_k)``, ``I = diag(I_k)``;

then solves ``A F_S = -B F_T`` with ``A = W^T P^T I^-1 P W`` and
``B = W^T P^T I^-1 P H`` (eq. 26-27) by a dense factorization and recovers
``Q̈ = H^T P^T I^-1 (P H F_T + P W F_S)`` (eq. 28); the body accelerations it returns
solve the kinematics ``P^T V̇ = H Q̈`` (as the kernels). Cost O(N^3); used for tests,
teaching and the scaling benchmark. The velocity terms (equivalent control force
``F_T = tau - b``, eq. 4) and the bias part of the reactions come from the same
Newton-Euler pass as the serialized path.
"""

import numpy as np
import scipy.linalg as sla

from ..joint_types import SCREW
from . import _kernels as K

__all__ = ["general_cfa", "assemble"]


def _phi(R, p):
    """6x6 wrench transform e_k -> e_p (the paper's C(p,k) P̂ combination)."""
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[3:, 3:] = R
    px = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
    X[:3, 3:] = px @ R
    return X


def _kinematic(P, rhs):
    """Body accelerations ``V̇`` from ``P^T V̇ = rhs`` (eq. 16 with ``rhs = H Q̈``): ``P``
    is unit block upper triangular (parents before children), so this is the forward
    pass ``V̇_k = Phi_k^T V̇_p + H_k Q̈_k`` of the serialized kernels' ``kinematic_acc``."""
    return sla.solve_triangular(P, rhs, trans="T", lower=False, unit_diagonal=True)


def assemble(system):
    """Dense ``P, H, W, I^-1`` for the current kinematics in the workspace."""
    arr = system.arrays
    Ia, Mm, R3, P3 = arr.Ia, arr.Mm, arr.R3, arr.P3
    parent, nv, nc = Ia[K.I_PARENT], Ia[K.I_NV], Ia[K.I_NC]
    n = system.n_bodies
    P = np.eye(6 * n)
    Ginv = np.zeros((6 * n, 6 * n))
    H = np.zeros((6 * n, int(nv[1:].sum())))
    W = np.zeros((6 * n, int(nc[1:].sum())))
    ih = iw = 0
    hcol, wcol = {}, {}
    for k in range(1, n + 1):
        r = slice(6 * (k - 1), 6 * k)
        p = parent[k]
        if p > 0:
            P[6 * (p - 1) : 6 * p, r] = -_phi(R3[K.R_REL, k], P3[K.P_REL, k])
        Ginv[r, r] = Mm[K.M_G, k]
        Wk = Mm[K.M_WC, k] if Ia[K.I_DIAG, k] else Mm[K.M_W, k]
        H[r, ih : ih + nv[k]] = Mm[K.M_H, k, :, : nv[k]]
        W[r, iw : iw + nc[k]] = Wk[:, : nc[k]]
        hcol[k], wcol[k] = ih, iw
        ih += nv[k]
        iw += nc[k]
    return P, H, W, Ginv, hcol, wcol


def _joint_solution(system, qdd_h, hcol, WF):
    """Joint accelerations ``qdd`` (nv,; modal entries zero) from the stacked
    ``H^T`` accelerations ``qdd_h`` (label ``k`` from column ``hcol[k]``; speeds ``L v``
    of reversed joints and screws mapped back by ``L^-1``) and the constraint forces
    ``W F_S`` per label (N+1, 6) from the stacked ``WF`` (6 N,)."""
    a = system.arrays
    Ia, Mm = a.Ia, a.Mm
    n = system.n_bodies
    nv, vo = Ia[K.I_NV], Ia[K.I_VO]
    rev = (Ia[K.I_REV] != 0) | (Ia[K.I_JT] == SCREW)  # speeds L v (see _nbjoints)
    qdd = np.zeros(system.nv)
    FS = np.zeros((n + 1, 6))
    FS[1:] = WF.reshape(n, 6)
    for k in range(1, n + 1):
        x = qdd_h[hcol[k] : hcol[k] + nv[k]]
        if rev[k]:
            x = sla.solve_triangular(Mm[K.M_L, k, : nv[k], : nv[k]], x)
        qdd[vo[k] : vo[k] + nv[k]] = x
    return qdd, FS


def general_cfa(system, q, qd, tau, fext):
    """Forward dynamics of one state by the dense CFA.

    Returns ``(qdd, reactions, W F_S per label (N+1, 6), body-origin accelerations
    [alpha; a] in world axes per label (N+1, 6), F_T)``
    with the conventions of :class:`~flexmbd.recursive.system.ForwardDynamics`.
    """
    arr = system.arrays
    Ia, Mm, Vv, R3, P3 = arr.Ia, arr.Mm, arr.Vv, arr.R3, arr.P3
    n = system.n_bodies
    nv, vo = Ia[K.I_NV], Ia[K.I_VO]
    q = np.ascontiguousarray(q, dtype=float)
    qd = np.ascontiguousarray(qd, dtype=float)
    K.kinematics(Ia, Mm, Vv, R3, P3, system.arrays.Tt, q, qd, True)
    Jv = np.zeros((4, max(system.nv, 1)))
    Jv[K.J_TAU, : system.nv] = tau
    Vv[K.V_FEXT] = fext
    K.bias_forces(Ia, Mm, Vv, R3, P3, system.arrays.gravity, system.use_gravity, Jv)
    Vv[K.V_FEXT] = 0.0
    FT = Jv[K.J_FT]
    P, H, W, Ginv, hcol, wcol = assemble(system)
    ft = np.zeros(H.shape[1])
    for k in range(1, n + 1):
        ft[hcol[k] : hcol[k] + nv[k]] = FT[vo[k] : vo[k] + nv[k]]
    PtGP = P.T @ Ginv @ P  # P^T I^-1 P
    A = W.T @ PtGP @ W  # eq. (26)
    B = W.T @ PtGP @ H
    if A.shape[0]:
        fs = sla.cho_solve(sla.cho_factor(A), -B @ ft)  # eq. (27)
    else:
        fs = np.zeros(0)
    F = H @ ft + W @ fs  # eq. (22)
    qdd_h = H.T @ (P.T @ (Ginv @ (P @ F)))  # eq. (23) / (28): P F = I V̇
    Vd = _kinematic(P, H @ qdd_h)  # the returned V̇ from the joints' (eq. 16)
    qdd, FS = _joint_solution(system, qdd_h, hcol, W @ fs)
    acc = np.zeros((n + 1, 6))
    for k in range(1, n + 1):
        Vv[K.V_AF, k] = Vd[6 * (k - 1) : 6 * k]
    K.body_accelerations(Ia, Vv, R3, P3, acc)
    # reactions: equivalent force + bias force
    Vv[K.V_FE, 1:] = F.reshape(n, 6)
    K.reversed_frames(Ia, R3, P3)
    reac = np.zeros((len(system.joint_names), 6))
    K.reactions_into(Ia, Vv, R3, P3, reac)
    return qdd, reac, FS, acc, FT[: system.nv].copy()


def general_flexible(system, q, qd, tau):
    """Dense CFA for trees with flexible bodies (:mod:`flexmbd.recursive.flexible`, section 5).

    Same kinematics and bias pass as the serialized kernels; then the block matrices
    with ``6 + n_k`` rows per body -- ``[I; 0]`` in block (k, k), ``-[Phi_k; Psi_k]`` in
    block (parent, k) -- the block-diagonal inverse generalized inertia ``G`` and the
    modal selector ``E``, and ::

        A F_S = -W^T P^T G (P H F_T + E tf),   u' = G (P F + E tf),   Qdd = H^T P^T u'

    by dense factorizations. Geometric stiffening: the same fixed point as the kernels.
    Returns ``(qdd, reactions, W F_S per label, body accelerations, F_T)``.
    """
    from . import _flexkernels as FK  # lazy: the flexible kernels load on first use

    fl = system.flex
    arr = system.arrays
    Ia, Mm, Vv, R3, P3 = arr.Ia, arr.Mm, arr.Vv, arr.R3, arr.P3
    Jv = system.arrays.Jv
    n = system.n_bodies
    nv = system.nv
    nvj, vo, parent = Ia[K.I_NV], Ia[K.I_VO], Ia[K.I_PARENT]
    q = np.ascontiguousarray(q, dtype=float)
    qd = np.ascontiguousarray(qd, dtype=float)
    Jv[:] = 0.0
    Jv[K.J_TAU, :nv] = tau
    fl.kinematics(q, qd, True)
    st = fl.bias_forces(q, qd)
    if st != 0:
        system.raise_status(st, q)
    nf = fl.nf
    m = [6 + nf[k] for k in range(n + 1)]
    ro = np.concatenate([[0], np.cumsum(m[1:])])
    nr = int(ro[-1])
    P = np.zeros((nr, 6 * n))
    G = np.zeros((nr, nr))
    H = np.zeros((6 * n, int(nvj[1:].sum())))
    W = np.zeros((6 * n, int(Ia[K.I_NC, 1:].sum())))
    ft = np.zeros(H.shape[1])
    ih = iw = 0
    hcol = {}
    for k in range(1, n + 1):
        r0 = int(ro[k - 1])
        c = slice(6 * (k - 1), 6 * k)
        P[r0 : r0 + 6, c] = np.eye(6)
        p = parent[k]
        if p > 0:
            rp = int(ro[p - 1])
            P[rp : rp + 6, c] = -_phi(R3[K.R_REL, k], P3[K.P_REL, k])
            P[rp + 6 : rp + m[p], c] = -fl.PsiT[k, :, : nf[p]].T
        if nf[k]:
            G[r0 : r0 + m[k], r0 : r0 + m[k]] = fl.Gp[k, : m[k], : m[k]]
        else:
            G[r0 : r0 + 6, r0 : r0 + 6] = Mm[K.M_G, k]
        Wk = Mm[K.M_WC, k] if Ia[K.I_DIAG, k] else Mm[K.M_W, k]
        H[c, ih : ih + nvj[k]] = Mm[K.M_H, k, :, : nvj[k]]
        W[c, iw : iw + Ia[K.I_NC, k]] = Wk[:, : Ia[K.I_NC, k]]
        ft[ih : ih + nvj[k]] = Jv[K.J_FT, vo[k] : vo[k] + nvj[k]]
        hcol[k] = ih
        ih += nvj[k]
        iw += Ia[K.I_NC, k]
    PtGP = P.T @ G @ P
    A = W.T @ PtGP @ W
    Afac = sla.cho_factor(A) if A.shape[0] else None
    rig = np.concatenate([np.arange(ro[k - 1], ro[k - 1] + 6) for k in range(1, n + 1)])
    mod = np.setdiff1d(np.arange(nr), rig)

    def dense_solve():
        tf = np.zeros(nr)
        for k in range(1, n + 1):
            if nf[k]:
                r0 = int(ro[k - 1])
                kg = fl.Fm[k, FK.FM_KGQ, : nf[k]] if fl.Fi[FK.F_STIFF, k] else 0.0
                tf[r0 + 6 : r0 + m[k]] = fl.Fm[k, FK.FM_TF0, : nf[k]] - kg
        rhs = -W.T @ (P.T @ (G @ (P @ (H @ ft) + tf)))
        fs = sla.cho_solve(Afac, rhs) if Afac is not None else np.zeros(0)
        F = H @ ft + W @ fs
        ud = G @ (P @ F + tf)
        Qdd = H.T @ (P.T @ ud)
        # the rigid rows of u' from the joints' and the modal accelerations (eq. 16)
        ud[rig] = _kinematic(P[rig], H @ Qdd - P[mod].T @ ud[mod])
        # write the solution where the kernels keep it (accelerations, forces)
        for k in range(1, n + 1):
            r0 = int(ro[k - 1])
            Vv[K.V_AF, k] = ud[r0 : r0 + 6]
            fl.Fm[k, FK.FM_UDF, : nf[k]] = ud[r0 + 6 : r0 + m[k]]
            Vv[K.V_FE, k] = F[6 * (k - 1) : 6 * k]
        return fs, Qdd

    if fl.any_stiff:
        FK.stiffening_products(Ia, fl.Fi, fl.KG, fl.Fm, fl.KQ, q)
        FK.stiffening_forces(Ia, fl.Fi, Vv, R3, P3, fl.Ft, fl.Fs, fl.Fw, fl.Fm, fl.KQ, 0, True)
        for _ in range(100):
            dense_solve()
            change = FK.stiffening_forces(
                Ia, fl.Fi, Vv, R3, P3, fl.Ft, fl.Fs, fl.Fw, fl.Fm, fl.KQ, 0, False
            )
            scale = max(
                float(np.abs(fl.Fm[:, FK.FM_TF0]).max() + np.abs(fl.Fm[:, FK.FM_KGQ]).max()), 1e-300
            )
            if change <= 1e-13 * scale:
                break
        else:
            system.raise_status(-2, q)
    fs, Qdd = dense_solve()
    qdd, FS = _joint_solution(system, Qdd, hcol, W @ fs)
    for k in range(1, n + 1):
        if nf[k]:
            mv = fl.Fi[FK.F_MV, k]
            qdd[mv : mv + nf[k]] = fl.Fm[k, FK.FM_UDF, : nf[k]]
    acc = np.zeros((n + 1, 6))
    fl.body_accelerations(acc)
    K.reversed_frames(Ia, R3, P3)
    reac = np.zeros((len(system.joint_names), 6))
    K.reactions_into(Ia, Vv, R3, P3, reac)
    return qdd, reac, FS, acc, Jv[K.J_FT, :nv].copy()
