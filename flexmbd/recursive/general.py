"""The general (dense) form of the Constraint Force Algorithm, eq. (4-29).

Readable reference implementation: it assembles the system matrices of eq.
(16)-(22) explicitly, for the whole tree at once:

* ``P`` (6N x 6N): identity blocks on the diagonal and ``-Phi_c`` in block row of
  the parent ``p`` and block column of the child ``c`` (eq. 10, 13, 17-21), so that
  the dynamics read ``P F = I V̇`` and the kinematics ``P^T V̇ = H Q̈`` (eq. 16);
* ``H = diag(H_k)``, ``W = diag(W_k)``, ``I = diag(I_k)``;

then solves ``A F_S = -B F_T`` with ``A = W^T P^T I^-1 P W`` and
``B = W^T P^T I^-1 P H`` (eq. 26-27) by a dense factorization and recovers
``Q̈ = H^T P^T I^-1 (P H F_T + P W F_S)`` (eq. 28). Cost O(N^3); used for tests,
teaching and the scaling benchmark. The velocity terms (equivalent control force
``F_T = tau - b``, eq. 4) and the bias part of the reactions come from the same
Newton-Euler pass as the serialized path.
"""

import numpy as np
import scipy.linalg as sla

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


def assemble(system):
    """Dense ``P, H, W, I^-1`` for the current kinematics in the workspace."""
    Ia, Mm, R3, P3 = system._Ia, system._Mm, system._R3, system._P3
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
            P[6 * (p - 1):6 * p, r] = -_phi(R3[K.R_REL, k], P3[K.P_REL, k])
        Ginv[r, r] = Mm[K.M_G, k]
        Wk = Mm[K.M_WC, k] if Ia[K.I_DIAG, k] else Mm[K.M_W, k]
        H[r, ih:ih + nv[k]] = Mm[K.M_H, k, :, :nv[k]]
        W[r, iw:iw + nc[k]] = Wk[:, :nc[k]]
        hcol[k], wcol[k] = ih, iw
        ih += nv[k]
        iw += nc[k]
    return P, H, W, Ginv, hcol, wcol


def general_cfa(system, q, qd, tau, fext):
    """Forward dynamics of one state by the dense CFA.

    Returns ``(qdd, reactions, W F_S per label (N+1, 6), body-origin accelerations
    [alpha; a] in world axes per label (N+1, 6), F_T)``
    with the conventions of :class:`~flexmbd.recursive.system.ForwardDynamics`.
    """
    Ia, Mm, Vv, R3, P3 = system._Ia, system._Mm, system._Vv, system._R3, system._P3
    n = system.n_bodies
    nv, vo, rev = Ia[K.I_NV], Ia[K.I_VO], Ia[K.I_REV]
    q = np.ascontiguousarray(q, dtype=float)
    qd = np.ascontiguousarray(qd, dtype=float)
    K.kinematics(Ia, Mm, Vv, R3, P3, system._Tt, q, qd)
    Jv = np.zeros((4, max(system.nv, 1)))
    Jv[K.J_TAU, :system.nv] = tau
    Vv[K.V_FEXT] = fext
    K.bias_forces(Ia, Mm, Vv, R3, P3, system._gravity, system._use_grav, Jv)
    Vv[K.V_FEXT] = 0.0
    FT = Jv[K.J_FT]
    P, H, W, Ginv, hcol, wcol = assemble(system)
    ft = np.zeros(H.shape[1])
    for k in range(1, n + 1):
        ft[hcol[k]:hcol[k] + nv[k]] = FT[vo[k]:vo[k] + nv[k]]
    PtGP = P.T @ Ginv @ P                       # P^T I^-1 P
    A = W.T @ PtGP @ W                          # eq. (26)
    B = W.T @ PtGP @ H
    if A.shape[0]:
        fs = sla.cho_solve(sla.cho_factor(A), -B @ ft)   # eq. (27)
    else:
        fs = np.zeros(0)
    F = H @ ft + W @ fs                         # eq. (22)
    Vd = Ginv @ (P @ F)                         # P F = I V̇
    qdd_h = H.T @ (P.T @ Vd)                    # eq. (23) / (28)
    qdd = np.zeros(system.nv)
    FS = np.zeros((n + 1, 6))
    acc = np.zeros((n + 1, 6))
    Wf = (W @ fs).reshape(n, 6) if n else np.zeros((0, 6))
    for k in range(1, n + 1):
        x = qdd_h[hcol[k]:hcol[k] + nv[k]]
        if rev[k]:
            x = sla.solve_triangular(Mm[K.M_L, k, :nv[k], :nv[k]], x)
        qdd[vo[k]:vo[k] + nv[k]] = x
        FS[k] = Wf[k - 1]
        Vv[K.V_AF, k] = Vd[6 * (k - 1):6 * k]
    K.body_accelerations(Ia, Vv, R3, P3, acc)
    # reactions: equivalent force + bias force
    Vv[K.V_FE, 1:] = F.reshape(n, 6)
    K.reversed_frames(Ia, R3, P3)
    reac = np.zeros((len(system.joint_names), 6))
    K.reactions_into(Ia, Vv, R3, P3, reac)
    return qdd, reac, FS, acc, FT[:system.nv].copy()
