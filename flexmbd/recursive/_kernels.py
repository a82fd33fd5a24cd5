"""Allocation-free numba kernels of the serialized Constraint Force Algorithm.

Notation follows Liu, Hu and Zhang (2016). Bodies are indexed by their regular
label ``k = 1..N`` (``parent[k] < k``; index 0 is ground); the tree joint of body
``k`` is joint ``k``. Every quantity of body ``k`` is expressed in its tree frame
``e_k`` (the joint frame on body ``k``, origin ``O_k``):

* ``Phi_k`` (the paper's ``C P̂``): wrench at ``O_k`` in ``e_k`` -> wrench at ``O_p``
  in ``e_p``; its transpose maps twists of ``e_p`` to ``e_k``;
* ``G_k = I_k^-1`` (inverse spatial inertia about ``O_k``);
* kinematics ``V̇_k = Phi_k^T V̇_p + H_k Q̈_k``, dynamics ``F_k = I_k V̇_k + sum_c Phi_c F_c``
  (eq. 7), with the equivalent interbody force ``F_k = H_k F_Tk + W_k F_Sk`` (eq. 5);
* the constraint-force equations ``A F_S = -B F_T`` (eq. 27, 29) have the blocks
  ``A_k = W_k^T (G_k + Phi_k^T G_p Phi_k) W_k`` (eq. 32, 37),
  ``D_k = -W_p^T G_p Phi_k W_k`` between body k's joint and its parent's joint
  (eq. 31, 34, 35), and between siblings a, b of a node
  ``b_ab = W_a^T Phi_a^T G_p Phi_b W_b`` (eq. 36).

The solve is split into ``factor`` (depends on q only: eliminations of the
matrices) and ``solve`` (right-hand sides), so ``M^-1 x`` for many x costs one
factorization. Chains are reduced by block odd-even (cyclic) reduction following
a schedule computed once from the topology; the unknowns of nodes (and the last
survivor of each chain) form a small dense system solved by Cholesky (eq. 41-44).

Workspaces are allocated once per System; no kernel allocates.
"""

import numpy as np
from numba import njit

from ._nbjoints import joint_kinematics, reverse_joint

# ---------------------------------------------------------------- small helpers


@njit(cache=True, inline="always")
def _f2p(R, p, f, out):
    """out = Phi f: wrench at O_k (e_k axes) -> at O_p (e_p axes). p = O_k in e_p."""
    nx = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2]
    ny = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2]
    nz = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2]
    fx = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    fy = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    fz = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    out[0] = nx + p[1] * fz - p[2] * fy
    out[1] = ny + p[2] * fx - p[0] * fz
    out[2] = nz + p[0] * fy - p[1] * fx
    out[3] = fx
    out[4] = fy
    out[5] = fz


@njit(cache=True, inline="always")
def _f2p_add(R, p, f, out, s):
    """out += s * Phi f."""
    nx = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2]
    ny = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2]
    nz = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2]
    fx = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    fy = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    fz = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    out[0] += s * (nx + p[1] * fz - p[2] * fy)
    out[1] += s * (ny + p[2] * fx - p[0] * fz)
    out[2] += s * (nz + p[0] * fy - p[1] * fx)
    out[3] += s * fx
    out[4] += s * fy
    out[5] += s * fz


@njit(cache=True, inline="always")
def _m2c(R, p, v, out):
    """out = Phi^T v: twist of e_p (e_p axes, at O_p) -> at O_k in e_k axes."""
    wx = v[0]
    wy = v[1]
    wz = v[2]
    ux = v[3] + wy * p[2] - wz * p[1]
    uy = v[4] + wz * p[0] - wx * p[2]
    uz = v[5] + wx * p[1] - wy * p[0]
    out[0] = R[0, 0] * wx + R[1, 0] * wy + R[2, 0] * wz
    out[1] = R[0, 1] * wx + R[1, 1] * wy + R[2, 1] * wz
    out[2] = R[0, 2] * wx + R[1, 2] * wy + R[2, 2] * wz
    out[3] = R[0, 0] * ux + R[1, 0] * uy + R[2, 0] * uz
    out[4] = R[0, 1] * ux + R[1, 1] * uy + R[2, 1] * uz
    out[5] = R[0, 2] * ux + R[1, 2] * uy + R[2, 2] * uz


@njit(cache=True, inline="always")
def _matvec6(M, x, out):
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += M[i, j] * x[j]
        out[i] = s


@njit(cache=True)
def _chol(A, n):
    """In-place lower Cholesky of A[:n,:n]; returns False if not positive definite."""
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        A[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / d
    return True


@njit(cache=True, inline="always")
def _chol_solve_vec(Lm, n, x):
    """Solve (L L^T) y = x in place, x a 1-d view."""
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= Lm[i, k] * x[k]
        x[i] = s / Lm[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= Lm[k, i] * x[k]
        x[i] = s / Lm[i, i]


@njit(cache=True, inline="always")
def _chol_solve_cols(Lm, n, X, m):
    """Solve (L L^T) Y = X[:n, :m] in place (columns)."""
    for c in range(m):
        for i in range(n):
            s = X[i, c]
            for k in range(i):
                s -= Lm[i, k] * X[k, c]
            X[i, c] = s / Lm[i, i]
        for i in range(n - 1, -1, -1):
            s = X[i, c]
            for k in range(i + 1, n):
                s -= Lm[k, i] * X[k, c]
            X[i, c] = s / Lm[i, i]


# ---------------------------------------------------------------- kinematics


@njit(cache=True)
def kinematics(mdl, ws, q, v):
    """Relative poses, world poses, H, W, L, joint bias and body twists."""
    (parent, jt, rev, prm, Hc, Wc, nv, nc, qo, vo, nqj, R0, p0, Im, G, mass, mc,
     onechild) = mdl[:18]
    (Rrel, prel, Rw, rw, H, W, L, cJ, vel) = ws[:9]
    tR = ws[9]
    tp = ws[10]
    t3 = ws[11]
    t6 = ws[12]
    Q = ws[13]
    N = parent.shape[0] - 1
    for k in range(1, N + 1):
        n_v = nv[k]
        qk = q[qo[k]:qo[k] + nqj[k]]
        vk = v[vo[k]:vo[k] + n_v]
        joint_kinematics(jt[k], prm[k], qk, vk, Hc[k], Wc[k], tR, tp, H[k], W[k], cJ[k], t3)
        if rev[k]:
            reverse_joint(n_v, tR, tp, H[k], W[k], cJ[k], L[k], Q, t6)
        # pose of e_k in e_p: (R0, p0) o (tR, tp)
        Rk = Rrel[k]
        A0 = R0[k]
        for i in range(3):
            for j in range(3):
                Rk[i, j] = A0[i, 0] * tR[0, j] + A0[i, 1] * tR[1, j] + A0[i, 2] * tR[2, j]
            prel[k, i] = p0[k, i] + A0[i, 0] * tp[0] + A0[i, 1] * tp[1] + A0[i, 2] * tp[2]
        pk = parent[k]
        Rp = Rw[pk]
        for i in range(3):
            for j in range(3):
                Rw[k, i, j] = Rp[i, 0] * Rk[0, j] + Rp[i, 1] * Rk[1, j] + Rp[i, 2] * Rk[2, j]
            rw[k, i] = rw[pk, i] + Rp[i, 0] * prel[k, 0] + Rp[i, 1] * prel[k, 1] + Rp[i, 2] * prel[k, 2]
        # twist: v_k = Phi^T v_p + S v  (S = H L for reversed, H otherwise)
        _m2c(Rk, prel[k], vel[pk], vel[k])
        Hk = H[k]
        if rev[k]:
            Lk = L[k]
            for j in range(n_v):
                s = 0.0
                for m in range(j, n_v):
                    s += Lk[j, m] * vk[m]
                t6[j] = s
            for i in range(6):
                s = 0.0
                for j in range(n_v):
                    s += Hk[i, j] * t6[j]
                vel[k, i] += s
        else:
            for i in range(6):
                s = 0.0
                for j in range(n_v):
                    s += Hk[i, j] * vk[j]
                vel[k, i] += s


@njit(cache=True)
def bias_forces(mdl, ws, v, fext, grav, use_grav, tau, FT, bvec):
    """Newton-Euler pass at zero joint acceleration (the paper's nonlinear terms b).

    Writes the bias accelerations ``ab`` and bias interbody forces ``fb`` (the
    joint wrenches needed for Q̈ = 0 under velocity products, gravity and
    external wrenches ``fext`` in e_k axes at O_k), ``b = S^T fb`` and the
    equivalent control force of eq. (4): ``F_T = tau - b`` (in the orthonormal
    speeds: ``L^-T tau - H^T fb``).
    """
    (parent, jt, rev, prm, Hc, Wc, nv, nc, qo, vo, nqj, R0, p0, Im, G, mass, mc,
     onechild) = mdl[:18]
    (Rrel, prel, Rw, rw, H, W, L, cJ, vel) = ws[:9]
    t6 = ws[12]
    ab = ws[14]
    fb = ws[15]
    vj = ws[16]
    N = parent.shape[0] - 1
    for i in range(6):
        ab[0, i] = 0.0
    for k in range(1, N + 1):
        pk = parent[k]
        _m2c(Rrel[k], prel[k], ab[pk], ab[k])
        # joint relative twist vJ = v_k - Phi^T v_p
        _m2c(Rrel[k], prel[k], vel[pk], t6)
        for i in range(6):
            vj[i] = vel[k, i] - t6[i]
        w = vel[k]
        # a += c_J + v_k x vJ
        ab[k, 0] += cJ[k, 0] + w[1] * vj[2] - w[2] * vj[1]
        ab[k, 1] += cJ[k, 1] + w[2] * vj[0] - w[0] * vj[2]
        ab[k, 2] += cJ[k, 2] + w[0] * vj[1] - w[1] * vj[0]
        ab[k, 3] += cJ[k, 3] + w[1] * vj[5] - w[2] * vj[4] + w[4] * vj[2] - w[5] * vj[1]
        ab[k, 4] += cJ[k, 4] + w[2] * vj[3] - w[0] * vj[5] + w[5] * vj[0] - w[3] * vj[2]
        ab[k, 5] += cJ[k, 5] + w[0] * vj[4] - w[1] * vj[3] + w[3] * vj[1] - w[4] * vj[0]
        # f = I a + v x* (I v) - fext - gravity
        Ik = Im[k]
        _matvec6(Ik, ab[k], fb[k])
        _matvec6(Ik, w, t6)
        h0 = t6[0]
        h1 = t6[1]
        h2 = t6[2]
        h3 = t6[3]
        h4 = t6[4]
        h5 = t6[5]
        fb[k, 0] += w[1] * h2 - w[2] * h1 + w[4] * h5 - w[5] * h4 - fext[k, 0]
        fb[k, 1] += w[2] * h0 - w[0] * h2 + w[5] * h3 - w[3] * h5 - fext[k, 1]
        fb[k, 2] += w[0] * h1 - w[1] * h0 + w[3] * h4 - w[4] * h3 - fext[k, 2]
        fb[k, 3] += w[1] * h5 - w[2] * h4 - fext[k, 3]
        fb[k, 4] += w[2] * h3 - w[0] * h5 - fext[k, 4]
        fb[k, 5] += w[0] * h4 - w[1] * h3 - fext[k, 5]
        if use_grav:
            # m g at the com: g in e_k axes = Rw^T g
            Rk = Rw[k]
            gx = Rk[0, 0] * grav[0] + Rk[1, 0] * grav[1] + Rk[2, 0] * grav[2]
            gy = Rk[0, 1] * grav[0] + Rk[1, 1] * grav[1] + Rk[2, 1] * grav[2]
            gz = Rk[0, 2] * grav[0] + Rk[1, 2] * grav[1] + Rk[2, 2] * grav[2]
            m = mass[k]
            c = mc[k]
            fb[k, 0] -= c[1] * gz - c[2] * gy
            fb[k, 1] -= c[2] * gx - c[0] * gz
            fb[k, 2] -= c[0] * gy - c[1] * gx
            fb[k, 3] -= m * gx
            fb[k, 4] -= m * gy
            fb[k, 5] -= m * gz
    for k in range(N, 0, -1):
        pk = parent[k]
        if pk > 0:
            _f2p_add(Rrel[k], prel[k], fb[k], fb[pk], 1.0)
        n_v = nv[k]
        o = vo[k]
        Hk = H[k]
        for j in range(n_v):
            s = 0.0
            for i in range(6):
                s += Hk[i, j] * fb[k, i]
            t6[j] = s
        if rev[k]:
            # b = L^T H^T fb ; F_T' = L^-T tau - H^T fb
            Lk = L[k]
            for j in range(n_v):
                s = 0.0
                for m in range(j + 1):
                    s += Lk[m, j] * t6[m]
                bvec[o + j] = s
            for j in range(n_v):
                s = tau[o + j]
                for m in range(j):
                    s -= Lk[m, j] * FT[o + m]
                FT[o + j] = s / Lk[j, j]
            for j in range(n_v):
                FT[o + j] -= t6[j]
        else:
            for j in range(n_v):
                bvec[o + j] = t6[j]
                FT[o + j] = tau[o + j] - t6[j]


# ---------------------------------------------------------------- CFA: factor


@njit(cache=True)
def factor(mdl, ws):
    """Assemble the blocks of A (eq. 32-38) and eliminate them: chains by
    odd-even reduction, then the dense node system (Cholesky). Returns 0 or the
    label of a body whose block is not positive definite."""
    (parent, jt, rev, prm, Hc, Wc, nv, nc, qo, vo, nqj, R0, p0, Im, G, mass, mc,
     onechild, steps, dset, doff, dlinks, nodech, sibs) = mdl[:24]
    (Rrel, prel, Rw, rw, H, W, L, cJ, vel) = ws[:9]
    t6 = ws[12]
    U = ws[17]
    Y = ws[18]
    A = ws[19]
    D = ws[20]
    Cr = ws[21]
    Csl = ws[22]
    Csr = ws[23]
    T1 = ws[24]
    Md = ws[25]
    N = parent.shape[0] - 1
    for k in range(1, N + 1):
        n = nc[k]
        pk = parent[k]
        Wk = W[k]
        Gk = G[k]
        # T1 = G_k W_k ; A = W^T T1
        for j in range(n):
            for i in range(6):
                s = 0.0
                for m in range(6):
                    s += Gk[i, m] * Wk[m, j]
                T1[i, j] = s
        Ak = A[k]
        for i in range(n):
            for j in range(i, n):
                s = 0.0
                for m in range(6):
                    s += Wk[m, i] * T1[m, j]
                Ak[i, j] = s
        if pk > 0:
            # U = Phi W (e_p axes), Y = G_p U, A += U^T Y, D = -W_p^T Y
            Uk = U[k]
            Yk = Y[k]
            Gp = G[pk]
            for j in range(n):
                for i in range(6):
                    t6[i] = Wk[i, j]
                _f2p(Rrel[k], prel[k], t6, T1[:, 0])
                for i in range(6):
                    Uk[i, j] = T1[i, 0]
            for j in range(n):
                for i in range(6):
                    s = 0.0
                    for m in range(6):
                        s += Gp[i, m] * Uk[m, j]
                    Yk[i, j] = s
            for i in range(n):
                for j in range(i, n):
                    s = 0.0
                    for m in range(6):
                        s += Uk[m, i] * Yk[m, j]
                    Ak[i, j] += s
            Wp = W[pk]
            Dk = D[k]
            for i in range(nc[pk]):
                for j in range(n):
                    s = 0.0
                    for m in range(6):
                        s += Wp[m, i] * Yk[m, j]
                    Dk[i, j] = -s
        for i in range(n):
            for j in range(i):
                Ak[i, j] = Ak[j, i]
    # couplings along single-child links
    for k in range(1, N + 1):
        c = onechild[k]
        if c > 0:
            for i in range(nc[k]):
                for j in range(nc[c]):
                    Cr[k, i, j] = D[c, i, j]
    # odd-even reduction of the chains
    for s_ in range(steps.shape[0]):
        i = steps[s_, 0]
        l = steps[s_, 1]
        r = steps[s_, 2]
        ni = nc[i]
        Ai = A[i]
        if not _chol(Ai, ni):
            return i
        if l >= 0:
            nl = nc[l]
            # Csl[i] = C_{l,i}^T (ni x nl): solve A_i Z = C_li^T
            Z = Csl[i]
            for a in range(ni):
                for b in range(nl):
                    Z[a, b] = Cr[l, b, a]
            Zs = T1
            for a in range(ni):
                for b in range(nl):
                    Zs[a, b] = Z[a, b]
            _chol_solve_cols(Ai, ni, Zs, nl)
            # A_l -= C_li Zs
            Al = A[l]
            for a in range(nl):
                for b in range(nl):
                    s = 0.0
                    for m in range(ni):
                        s += Z[m, a] * Zs[m, b]
                    Al[a, b] -= s
        if r >= 0:
            nr = nc[r]
            Z2 = Csr[i]
            for a in range(ni):
                for b in range(nr):
                    Z2[a, b] = Cr[i, a, b]
            Zr = ws[26]
            for a in range(ni):
                for b in range(nr):
                    Zr[a, b] = Z2[a, b]
            _chol_solve_cols(Ai, ni, Zr, nr)
            Ar = A[r]
            for a in range(nr):
                for b in range(nr):
                    s = 0.0
                    for m in range(ni):
                        s += Z2[m, a] * Zr[m, b]
                    Ar[a, b] -= s
            if l >= 0:
                nl = nc[l]
                Z = Csl[i]
                for a in range(nl):
                    for b in range(nr):
                        s = 0.0
                        for m in range(ni):
                            s += Z[m, a] * Zr[m, b]
                        Cr[l, a, b] = -s
    # dense node system
    nd = 0
    for t in range(dset.shape[0]):
        nd += nc[dset[t]]
    for a in range(nd):
        for b in range(nd):
            Md[a, b] = 0.0
    for t in range(dset.shape[0]):
        k = dset[t]
        o = doff[k]
        for a in range(nc[k]):
            for b in range(nc[k]):
                Md[o + a, o + b] = A[k, a, b]
    for t in range(dlinks.shape[0]):
        k = dlinks[t, 0]
        r = dlinks[t, 1]
        ok = doff[k]
        orr = doff[r]
        for a in range(nc[k]):
            for b in range(nc[r]):
                Md[ok + a, orr + b] = Cr[k, a, b]
                Md[orr + b, ok + a] = Cr[k, a, b]
    for t in range(nodech.shape[0]):
        c = nodech[t]
        pk = parent[c]
        op = doff[pk]
        oc = doff[c]
        for a in range(nc[pk]):
            for b in range(nc[c]):
                Md[op + a, oc + b] = D[c, a, b]
                Md[oc + b, op + a] = D[c, a, b]
    for t in range(sibs.shape[0]):
        a_ = sibs[t, 0]
        b_ = sibs[t, 1]
        oa = doff[a_]
        ob = doff[b_]
        Ua = U[a_]
        Yb = Y[b_]
        for a in range(nc[a_]):
            for b in range(nc[b_]):
                s = 0.0
                for m in range(6):
                    s += Ua[m, a] * Yb[m, b]
                Md[oa + a, ob + b] = s
                Md[ob + b, oa + a] = s
    if not _chol(Md, nd):
        return -1
    return 0


# ---------------------------------------------------------------- CFA: solve


@njit(cache=True)
def solve(mdl, ws, FT, qdd):
    """Given the equivalent control forces F_T (orthonormal speeds), compute the
    constraint forces F_S (eq. 29 via the factorization), the equivalent
    interbody forces F, the linear accelerations V̇ and Q̈ (eq. 28)."""
    (parent, jt, rev, prm, Hc, Wc, nv, nc, qo, vo, nqj, R0, p0, Im, G, mass, mc,
     onechild, steps, dset, doff, dlinks, nodech, sibs) = mdl[:24]
    (Rrel, prel, Rw, rw, H, W, L, cJ, vel) = ws[:9]
    t6 = ws[12]
    A = ws[19]
    Csl = ws[22]
    Csr = ws[23]
    Md = ws[25]
    Fe = ws[27]   # H F_T, later F
    af = ws[28]   # free accelerations, later V̇
    bx = ws[29]   # right-hand side X, later F_S
    bd = ws[30]
    N = parent.shape[0] - 1
    # e_k = H_k F_Tk ; z_k = e_k - sum_c Phi_c e_c ; a_k = G_k z_k
    for k in range(1, N + 1):
        Hk = H[k]
        o = vo[k]
        for i in range(6):
            s = 0.0
            for j in range(nv[k]):
                s += Hk[i, j] * FT[o + j]
            Fe[k, i] = s
            af[k, i] = s
    for k in range(N, 0, -1):
        pk = parent[k]
        if pk > 0:
            _f2p_add(Rrel[k], prel[k], Fe[k], af[pk], -1.0)
    for k in range(1, N + 1):
        for i in range(6):
            t6[i] = af[k, i]
        _matvec6(G[k], t6, af[k])
    # X_k = -W_k^T (a_k - Phi^T a_p)
    for k in range(1, N + 1):
        pk = parent[k]
        if pk > 0:
            _m2c(Rrel[k], prel[k], af[pk], t6)
            for i in range(6):
                t6[i] = af[k, i] - t6[i]
        else:
            for i in range(6):
                t6[i] = af[k, i]
        Wk = W[k]
        for j in range(nc[k]):
            s = 0.0
            for i in range(6):
                s += Wk[i, j] * t6[i]
            bx[k, j] = -s
    # forward: odd-even reduction of the right-hand sides
    for s_ in range(steps.shape[0]):
        i = steps[s_, 0]
        l = steps[s_, 1]
        r = steps[s_, 2]
        ni = nc[i]
        for a in range(ni):
            t6[a] = bx[i, a]
        _chol_solve_vec(A[i], ni, t6)
        if l >= 0:
            Z = Csl[i]
            for b in range(nc[l]):
                s = 0.0
                for m in range(ni):
                    s += Z[m, b] * t6[m]
                bx[l, b] -= s
        if r >= 0:
            Z2 = Csr[i]
            for b in range(nc[r]):
                s = 0.0
                for m in range(ni):
                    s += Z2[m, b] * t6[m]
                bx[r, b] -= s
    # dense node system
    nd = 0
    for t in range(dset.shape[0]):
        k = dset[t]
        o = doff[k]
        for a in range(nc[k]):
            bd[o + a] = bx[k, a]
        nd += nc[k]
    _chol_solve_vec(Md, nd, bd)
    for t in range(dset.shape[0]):
        k = dset[t]
        o = doff[k]
        for a in range(nc[k]):
            bx[k, a] = bd[o + a]
    # back substitution along the chains (reverse schedule)
    for s_ in range(steps.shape[0] - 1, -1, -1):
        i = steps[s_, 0]
        l = steps[s_, 1]
        r = steps[s_, 2]
        ni = nc[i]
        for a in range(ni):
            t6[a] = bx[i, a]
        if l >= 0:
            Z = Csl[i]
            for a in range(ni):
                s = 0.0
                for b in range(nc[l]):
                    s += Z[a, b] * bx[l, b]
                t6[a] -= s
        if r >= 0:
            Z2 = Csr[i]
            for a in range(ni):
                s = 0.0
                for b in range(nc[r]):
                    s += Z2[a, b] * bx[r, b]
                t6[a] -= s
        _chol_solve_vec(A[i], ni, t6)
        for a in range(ni):
            bx[i, a] = t6[a]
    # eq. 28: F = H F_T + W F_S ; V̇ = G (F - sum Phi F_c) ; Q̈ = H^T (V̇ - Phi^T V̇_p)
    for k in range(1, N + 1):
        Wk = W[k]
        for i in range(6):
            s = Fe[k, i]
            for j in range(nc[k]):
                s += Wk[i, j] * bx[k, j]
            Fe[k, i] = s
            af[k, i] = s
    for k in range(N, 0, -1):
        pk = parent[k]
        if pk > 0:
            _f2p_add(Rrel[k], prel[k], Fe[k], af[pk], -1.0)
    for k in range(1, N + 1):
        for i in range(6):
            t6[i] = af[k, i]
        _matvec6(G[k], t6, af[k])
    for k in range(1, N + 1):
        pk = parent[k]
        if pk > 0:
            _m2c(Rrel[k], prel[k], af[pk], t6)
            for i in range(6):
                t6[i] = af[k, i] - t6[i]
        else:
            for i in range(6):
                t6[i] = af[k, i]
        Hk = H[k]
        o = vo[k]
        n_v = nv[k]
        for j in range(n_v):
            s = 0.0
            for i in range(6):
                s += Hk[i, j] * t6[i]
            qdd[o + j] = s
        if rev[k]:
            # qdd = L^-1 qdd' (L upper triangular)
            Lk = L[k]
            for j in range(n_v - 1, -1, -1):
                s = qdd[o + j]
                for m in range(j + 1, n_v):
                    s -= Lk[j, m] * qdd[o + m]
                qdd[o + j] = s / Lk[j, j]


# ---------------------------------------------------------------- drivers


@njit(cache=True)
def reactions_into(mdl, ws, out):
    """Physical joint reactions = F (equivalent) + fb (bias), tree frame e_k.

    Reversed joints are reported for the declared direction: the wrench of the
    declared parent (outboard body k) on the declared child, at the declared
    child frame origin in its axes."""
    parent = mdl[0]
    rev = mdl[2]
    jrow = mdl[24]
    Rrel = ws[0]
    prel = ws[1]
    fb = ws[15]
    Fe = ws[27]
    Rd = ws[31]
    pd = ws[32]
    N = parent.shape[0] - 1
    for k in range(1, N + 1):
        r = jrow[k]
        n0 = Fe[k, 0] + fb[k, 0]
        n1 = Fe[k, 1] + fb[k, 1]
        n2 = Fe[k, 2] + fb[k, 2]
        f0 = Fe[k, 3] + fb[k, 3]
        f1 = Fe[k, 4] + fb[k, 4]
        f2 = Fe[k, 5] + fb[k, 5]
        if rev[k]:
            # declared child frame c (on the inboard body) in e_k: pose (Rd, pd)
            R = Rd[k]
            p = pd[k]
            m0 = n0 - (p[1] * f2 - p[2] * f1)
            m1 = n1 - (p[2] * f0 - p[0] * f2)
            m2 = n2 - (p[0] * f1 - p[1] * f0)
            for i in range(3):
                out[r, i] = -(R[0, i] * m0 + R[1, i] * m1 + R[2, i] * m2)
                out[r, 3 + i] = -(R[0, i] * f0 + R[1, i] * f1 + R[2, i] * f2)
        else:
            out[r, 0] = n0
            out[r, 1] = n1
            out[r, 2] = n2
            out[r, 3] = f0
            out[r, 4] = f1
            out[r, 5] = f2


@njit(cache=True)
def reversed_frames(mdl, ws):
    """Pose of the declared child frame (on the inboard body) in e_k, reversed joints."""
    parent = mdl[0]
    rev = mdl[2]
    R0 = mdl[11]
    p0 = mdl[12]
    Rrel = ws[0]
    prel = ws[1]
    Rd = ws[31]
    pd = ws[32]
    N = parent.shape[0] - 1
    for k in range(1, N + 1):
        if rev[k]:
            # frame c in e_p is (R0, p0); e_k in e_p is (Rrel, prel)
            # c in e_k = Rrel^T (R0, p0 - prel)
            for i in range(3):
                for j in range(3):
                    Rd[k, i, j] = (Rrel[k, 0, i] * R0[k, 0, j] + Rrel[k, 1, i] * R0[k, 1, j]
                                   + Rrel[k, 2, i] * R0[k, 2, j])
                pd[k, i] = (Rrel[k, 0, i] * (p0[k, 0] - prel[k, 0])
                            + Rrel[k, 1, i] * (p0[k, 1] - prel[k, 1])
                            + Rrel[k, 2, i] * (p0[k, 2] - prel[k, 2]))


@njit(cache=True)
def forward_dynamics(mdl, ws, q, v, tau, fext, grav, use_grav, FT, bvec, qdd, reac):
    """Full serialized CFA: kinematics, F_T, factor, solve, reactions. Returns status."""
    kinematics(mdl, ws, q, v)
    bias_forces(mdl, ws, v, fext, grav, use_grav, tau, FT, bvec)
    st = factor(mdl, ws)
    if st != 0:
        return st
    solve(mdl, ws, FT, qdd)
    reversed_frames(mdl, ws)
    reactions_into(mdl, ws, reac)
    return 0


@njit(cache=True)
def forward_dynamics_batch(mdl, ws, Q, V, TAU, FEXT, grav, use_grav, FT, bvec, QDD, REAC,
                           FS, ACC):
    """Loop of :func:`forward_dynamics` over states (rows); ``FS`` gets the
    constraint forces (N+1, 6) and ``ACC`` the linear accelerations V̇ + bias
    accelerations (true spatial accelerations of e_k, body axes)."""
    nb = Q.shape[0]
    bx = ws[29]
    af = ws[28]
    ab = ws[14]
    for s in range(nb):
        st = forward_dynamics(mdl, ws, Q[s], V[s], TAU[s], FEXT[s], grav, use_grav, FT, bvec,
                              QDD[s], REAC[s])
        if st != 0:
            return s, st
        for k in range(bx.shape[0]):
            for i in range(6):
                FS[s, k, i] = bx[k, i]
                ACC[s, k, i] = af[k, i] + ab[k, i]
    return -1, 0


@njit(cache=True)
def inverse_dynamics(mdl, ws, q, v, qdd, fext, grav, use_grav, tau, reac):
    """Recursive Newton-Euler: tau = M qdd + b (uses the tree kinematics)."""
    (parent, jt, rev, prm, Hc, Wc, nv, nc, qo, vo, nqj, R0, p0, Im, G, mass, mc,
     onechild) = mdl[:18]
    (Rrel, prel, Rw, rw, H, W, L, cJ, vel) = ws[:9]
    t6 = ws[12]
    ab = ws[14]
    fb = ws[15]
    FT = ws[33]
    bvec = ws[34]
    Fe = ws[27]
    af = ws[28]
    kinematics(mdl, ws, q, v)
    for i in range(tau.shape[0]):
        FT[i] = 0.0
    bias_forces(mdl, ws, v, fext, grav, use_grav, FT, FT, bvec)
    # linear part: V̇_k = Phi^T V̇_p + S qdd ; F_k = I V̇_k + sum Phi F_c
    for i in range(6):
        af[0, i] = 0.0
    N = parent.shape[0] - 1
    for k in range(1, N + 1):
        pk = parent[k]
        _m2c(Rrel[k], prel[k], af[pk], af[k])
        n_v = nv[k]
        o = vo[k]
        if rev[k]:
            Lk = L[k]
            for j in range(n_v):
                s = 0.0
                for m in range(j, n_v):
                    s += Lk[j, m] * qdd[o + m]
                t6[j] = s
        else:
            for j in range(n_v):
                t6[j] = qdd[o + j]
        Hk = H[k]
        for i in range(6):
            s = 0.0
            for j in range(n_v):
                s += Hk[i, j] * t6[j]
            af[k, i] += s
        _matvec6(Im[k], af[k], Fe[k])
    for k in range(N, 0, -1):
        pk = parent[k]
        if pk > 0:
            _f2p_add(Rrel[k], prel[k], Fe[k], Fe[pk], 1.0)
        n_v = nv[k]
        o = vo[k]
        Hk = H[k]
        for j in range(n_v):
            s = 0.0
            for i in range(6):
                s += Hk[i, j] * Fe[k, i]
            t6[j] = s
        if rev[k]:
            Lk = L[k]
            for j in range(n_v):
                s = 0.0
                for m in range(j + 1):
                    s += Lk[m, j] * t6[m]
                tau[o + j] = s + bvec[o + j]
        else:
            for j in range(n_v):
                tau[o + j] = t6[j] + bvec[o + j]
    reversed_frames(mdl, ws)
    reactions_into(mdl, ws, reac)
