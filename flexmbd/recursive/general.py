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
    mdl, ws = system._mdl, system._ws
    parent, nv, nc, G = mdl[0], mdl[6], mdl[7], mdl[14]
    Rrel, prel, Hs, Ws = ws[0], ws[1], ws[4], ws[5]
    n = system.n_bodies
    P = np.eye(6 * n)
    Ginv = np.zeros((6 * n, 6 * n))
    ncols_h = int(nv[1:].sum())
    ncols_w = int(nc[1:].sum())
    H = np.zeros((6 * n, ncols_h))
    W = np.zeros((6 * n, ncols_w))
    ih = iw = 0
    hcol, wcol = {}, {}
    for k in range(1, n + 1):
        r = slice(6 * (k - 1), 6 * k)
        p = parent[k]
        if p > 0:
            P[6 * (p - 1):6 * p, r] = -_phi(Rrel[k], prel[k])
        Ginv[r, r] = G[k]
        H[r, ih:ih + nv[k]] = Hs[k, :, :nv[k]]
        W[r, iw:iw + nc[k]] = Ws[k, :, :nc[k]]
        hcol[k], wcol[k] = ih, iw
        ih += nv[k]
        iw += nc[k]
    return P, H, W, Ginv, hcol, wcol


def general_cfa(system, q, qd, tau, fext):
    """Forward dynamics of one state by the dense CFA.

    Returns ``(qdd, reactions, F_S per label (N+1, 6), accelerations (N+1, 6), F_T)``
    with the conventions of :class:`~flexmbd.recursive.system.ForwardDynamics`.
    """
    mdl, ws = system._mdl, system._ws
    n = system.n_bodies
    nv, nc, vo, rev = mdl[6], mdl[7], mdl[9], mdl[2]
    K.kinematics(mdl, ws, q, qd)
    FT = np.zeros(max(system.nv, 1))
    b = np.zeros(max(system.nv, 1))
    taup = np.zeros(max(system.nv, 1))
    taup[:system.nv] = tau
    K.bias_forces(mdl, ws, qd, fext, system._gravity, system._use_grav, taup, FT, b)
    P, H, W, Ginv, hcol, wcol = assemble(system)
    # F_T in the order of the columns of H (labels)
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
    L = ws[6]
    for k in range(1, n + 1):
        x = qdd_h[hcol[k]:hcol[k] + nv[k]]
        if rev[k]:
            x = sla.solve_triangular(L[k, :nv[k], :nv[k]], x)
        qdd[vo[k]:vo[k] + nv[k]] = x
        FS[k, :nc[k]] = fs[wcol[k]:wcol[k] + nc[k]]
        acc[k] = Vd[6 * (k - 1):6 * k] + ws[14][k]
    # reactions: equivalent force + bias force
    ws[27][1:] = F.reshape(n, 6)
    K.reversed_frames(mdl, ws)
    reac = np.zeros((len(system.joint_names), 6))
    K.reactions_into(mdl, ws, reac)
    return qdd, reac, FS, acc, FT[:system.nv]
