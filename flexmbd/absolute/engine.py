r"""Compiled Newton engine of the absolute formulation for small and mid-size systems.

The generic path of :class:`~flexmbd.absolute.system.AbsoluteSystem` assembles every
term from vectorized numpy pieces into sparse matrices (exact, any size, any force
element). For the models that make up most flexible-multibody runs — rigid and
flexible bodies, any joint (drivers included), uniform gravity, spring-damper-actuators
(rigid and deforming ends) and point forces and torques (:mod:`.force_kernels`) — this
module runs
the whole Newton iteration of one implicit step in compiled code (numba, allocation
light, dense LAPACK solve): the same equations, the same exact Jacobians, the same
convergence test as :func:`flexmbd.integrators.implicit.integrate`. Its kernels are
line-by-line ports of the numpy reference (:mod:`.inertia`, :mod:`.flexible`,
:mod:`.constraints`, :mod:`.forces` gravity, :mod:`flexmbd.flexible.ffr`) and are
tested against it (``tests/flexible/test_engine.py``: residuals and Newton matrices
equal to round-off on random states).

Used by the integrators when :func:`Engine.supports` says so (every force element one of
:attr:`Engine.COMPILED_FORCES`, no HHT force form, ``n + nc`` up to ``MAX_DENSE``);
``integrate(..., engine=False)`` forces the generic path. Other force elements
(:class:`~flexmbd.JointForce`, user :class:`~flexmbd.model.forces.ForceElement`
subclasses written in Python) keep the whole model on the generic path: that is the
Python callback path for user force laws, measured at 6.5 ms per step on the seed
slider-crank (one SDA) where the compiled engine takes tens of microseconds
(``benchmarks/bench_forces.py``). The compiled loop (:meth:`Engine.run`) also projects
the velocities after each step when asked (scleronomic models).

Data layout: bodies in system order, the rigid block ``7 nb`` first, then the modal
coordinates; flexible-body invariants concatenated in flat arrays with offsets.
"""

import numpy as np
from numba import njit

from .._nbalgebra import cross as _cross
from .._nbalgebra import dot as _dot
from .._nbalgebra import mm as _mm
from .._nbalgebra import mv as _mv
from .._nbalgebra import tv as _tv
from .._nbrotation import Apoly as _A
from .._nbrotation import Apoly_to as _A_to
from .._nbrotation import Gmat as _G
from .._nbrotation import Smat_add as _Smat_add
from .._nbrotation import dAs_to as _dAs_to
from ..flexible._nbbody import flex_block as _flex_block
from ..flexible._nbbody import flex_gravity as _flex_gravity
from ..flexible._nbbody import flex_mass as _flex_mass
from ..flexible._nbbody import rigid_block as _rigid_block_to
from ..flexible._nbbody import rigid_gravity as _rigid_gravity
from ..flexible.rotation import exp_jets
from ..integrators.convergence import newton_converged
from .force_kernels import ForceTable, force_energies, forces_add

__all__ = ["Engine", "MAX_DENSE"]

MAX_DENSE = 400


# -- body terms, rotations and small algebra: flexmbd.flexible._nbbody, flexmbd._nbrotation,
# flexmbd._nbalgebra (imported above under the names the kernels below use)


@njit(cache=True)
def _slot_s(p, k, s, fs_index, fs_col0, fs_n, fs_point, fs_X, fs_off, q, y, Jyq, Hy):
    """Effective slot vector y (3,), dy/dq_f (3, n) and (direction) Hy; returns flex slot id."""
    f = fs_index[p, k]
    if f < 0:
        y[:] = s[p, k]
        return -1
    n = fs_n[f]
    X = fs_X[fs_off[f] : fs_off[f] + 3 * n].reshape(3, n)
    qf = q[fs_col0[f] : fs_col0[f] + n]
    if fs_point[f]:
        y[:] = s[p, k] + _mv(X, qf)
        Jyq[:, :n] = X
    else:
        th = _mv(X, qf)
        Jy = np.empty((3, 3))
        exp_jets(th, s[p, k].copy(), y, Jy, Hy)
        Jyq[:, :n] = _mm(Jy, X)
    return f


@njit(cache=True)
def _constraints(
    q,
    nb,
    b,
    s,
    sg,
    pt,
    target,
    fs_index,
    fs_col0,
    fs_n,
    fs_point,
    fs_X,
    fs_off,
    lam,
    phi,
    Pq,
    H,
    hessian,
):
    """phi (nc), dense Phi_q (nc, n) and (optionally) H += d(Phi_q^T lam)/dq (n, n)."""
    npm = b.shape[0]
    nmax = 1
    for f in range(fs_n.shape[0]):
        nmax = max(nmax, fs_n[f])
    v3 = np.zeros((14, 3))
    vals = v3[0:4]
    ys = v3[4:8]
    X, Y, mu, jc = v3[8], v3[9], v3[10], v3[11]
    Jq = np.zeros((4, 3, nmax))
    Hs = np.zeros((4, 3, 3, 3))
    fid = np.empty(4, np.int64)
    Ab = np.zeros((4, 3, 3))
    dA = np.zeros((4, 3, 4))
    Bj = np.empty((3, 4))
    ncol = np.zeros(4, np.int64)
    cols = np.zeros((4, 7 + nmax), np.int64)
    Jfull = np.zeros((4, 3, 7 + nmax))
    for p in range(npm):
        for k in range(4):
            bk = b[p, k]
            if fs_index[p, k] < 0:  # rigid slot (inline: a call costs more than the copy)
                fid[k] = -1
                for i in range(3):
                    ys[k, i] = s[p, k, i]
            else:
                fid[k] = _slot_s(
                    p, k, s, fs_index, fs_col0, fs_n, fs_point, fs_X, fs_off, q, ys[k], Jq[k], Hs[k]
                )
            sgk = sg[p, k]
            if bk >= 0:
                e = q[7 * bk + 3 : 7 * bk + 7]
                _A_to(e, Ab[k])
                ptk = pt[p, k]
                for i in range(3):
                    vals[k, i] = sgk * (
                        Ab[k, i, 0] * ys[k, 0]
                        + Ab[k, i, 1] * ys[k, 1]
                        + Ab[k, i, 2] * ys[k, 2]
                        + ptk * q[7 * bk + i]
                    )
                _dAs_to(e, ys[k], sgk, dA[k])
            else:
                for i in range(3):
                    vals[k, i] = sgk * ys[k, i]
        for i in range(3):
            X[i] = vals[0, i] + vals[1, i]
            Y[i] = vals[2, i] + vals[3, i]
        phi[p] = X[0] * Y[0] + X[1] * Y[1] + X[2] * Y[2] - target[p]
        for k in range(4):
            bk = b[p, k]
            if bk < 0:
                continue
            o = Y if k < 2 else X
            c7 = 7 * bk
            for i in range(3):
                Pq[p, c7 + i] += sg[p, k] * pt[p, k] * o[i]
            for j in range(4):
                Pq[p, c7 + 3 + j] += dA[k, 0, j] * o[0] + dA[k, 1, j] * o[1] + dA[k, 2, j] * o[2]
            f = fid[k]
            if f >= 0:
                n = fs_n[f]
                for j in range(n):
                    for r in range(3):
                        v = 0.0
                        for l in range(3):
                            if Ab[k, r, l] != 0.0:
                                v += Ab[k, r, l] * Jq[k, l, j]
                        jc[r] = sg[p, k] * v
                    Pq[p, fs_col0[f] + j] += jc[0] * o[0] + jc[1] * o[1] + jc[2] * o[2]
        if not hessian:
            continue
        lp = lam[p]
        if lp == 0.0:
            continue
        # cross terms lam (Jx^T Jy + Jy^T Jx), slot Jacobians over their own columns
        for k in range(4):
            bk = b[p, k]
            if bk < 0:
                ncol[k] = 0
                continue
            f = fid[k]
            nf = fs_n[f] if f >= 0 else 0
            ncol[k] = 7 + nf
            for i in range(7):
                cols[k, i] = 7 * bk + i
            for r in range(3):
                for i in range(7 + nf):
                    Jfull[k, r, i] = 0.0
                Jfull[k, r, r] = sg[p, k] * pt[p, k]
                for i in range(4):
                    Jfull[k, r, 3 + i] = dA[k, r, i]
            if f >= 0:
                for j in range(nf):
                    cols[k, 7 + j] = fs_col0[f] + j
                for r in range(3):
                    for j in range(nf):
                        Jfull[k, r, 7 + j] = sg[p, k] * (
                            Ab[k, r, 0] * Jq[k, 0, j]
                            + Ab[k, r, 1] * Jq[k, 1, j]
                            + Ab[k, r, 2] * Jq[k, 2, j]
                        )
        for kx in range(2):
            ncx = ncol[kx]
            for ky in range(2, 4):
                ncy = ncol[ky]
                for i in range(ncx):
                    ci = cols[kx, i]
                    for j in range(ncy):
                        cj = cols[ky, j]
                        v = lp * (
                            Jfull[kx, 0, i] * Jfull[ky, 0, j]
                            + Jfull[kx, 1, i] * Jfull[ky, 1, j]
                            + Jfull[kx, 2, i] * Jfull[ky, 2, j]
                        )
                        H[ci, cj] += v
                        H[cj, ci] += v
        # own second derivatives
        for k in range(4):
            bk = b[p, k]
            if bk < 0:
                continue
            o = Y if k < 2 else X
            e = q[7 * bk + 3 : 7 * bk + 7]
            c3 = 7 * bk + 3
            _Smat_add(o, ys[k], lp * sg[p, k], H, c3)
            f = fid[k]
            if f < 0:
                continue
            n = fs_n[f]
            cf = fs_col0[f]
            sgl = lp * sg[p, k]
            for j in range(n):
                for r in range(3):
                    jc[r] = Jq[k, r, j]
                _dAs_to(e, jc, 1.0, Bj)
                for i4 in range(4):
                    v = sgl * (Bj[0, i4] * o[0] + Bj[1, i4] * o[1] + Bj[2, i4] * o[2])
                    H[c3 + i4, cf + j] += v
                    H[cf + j, c3 + i4] += v
            if not fs_point[f]:
                for i in range(3):
                    mu[i] = Ab[k, 0, i] * o[0] + Ab[k, 1, i] * o[1] + Ab[k, 2, i] * o[2]
                Hm = np.zeros((3, 3))
                for i in range(3):
                    Hm += mu[i] * Hs[k, i]
                Xf = fs_X[fs_off[f] : fs_off[f] + 3 * n].reshape(3, n)
                H[cf : cf + n, cf : cf + n] += sgl * _mm(_mm(Xf.T, Hm), Xf)
    # normalization rows
    for i in range(nb):
        e = q[7 * i + 3 : 7 * i + 7]
        phi[npm + i] = 0.5 * (e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3] - 1.0)
        for j in range(4):
            Pq[npm + i, 7 * i + 3 + j] += e[j]
        if hessian:
            li = lam[npm + i]
            for j in range(4):
                H[7 * i + 3 + j, 7 * i + 3 + j] += li


@njit(cache=True)
def _slot_full_jac(p, k, bk, sg, pt, dA, Ab, Jq, fid, fs_n, fs_col0):
    f = fid[k]
    nf = fs_n[f] if f >= 0 else 0
    cols = np.empty(7 + nf, np.int64)
    J = np.zeros((3, 7 + nf))
    for i in range(7):
        cols[i] = 7 * bk + i
    for i in range(3):
        J[i, i] = sg[p, k] * pt[p, k]
    J[:, 3:7] = dA[k]
    if f >= 0:
        for j in range(nf):
            cols[7 + j] = fs_col0[f] + j
        J[:, 7:] = sg[p, k] * _mm(Ab[k], Jq[k, :, :nf])
    return cols, J, 7 + nf


# -- whole-system terms ---------------------------------------------------------------------
@njit(cache=True)
def _system_terms(
    q,
    qd,
    qdd,
    lam,
    nb,
    rm,
    rc,
    rJ,
    isflex,
    f_body,
    f_col0,
    f_n,
    f_mass,
    f_c,
    f_E0,
    f_St,
    f_S,
    f_P,
    f_Pt,
    f_K,
    f_D,
    f_stiff,
    f_Kw,
    f_Kal,
    f_Ka,
    f_Kitf,
    f_o1,
    f_o2,
    f_o3,
    g,
    has_g,
    cb,
    cs,
    csg,
    cpt,
    ctarget,
    fs_index,
    fs_col0,
    fs_n,
    fs_point,
    fs_X,
    fs_off,
    s_int,
    s_flt,
    s_U,
    s_fa,
    l_int,
    l_flt,
    l_U,
    l_F,
    aM,
    aKin,
    aDin,
    aK,
    aD,
    r_out,
    phi,
    Amat,
    jac,
):
    """Residual ``R + Phi_q^T lam - Q`` (n) and ``phi`` (nc); with ``jac`` the KKT matrix
    ``[[aM M + aKin dR/dq + aDin dR/ddq + aK (H - dQ/dq) - aD dQ/ddq, Phi_q^T], [Phi_q, 0]]``.
    Returns the norms (|R|, |PtL|, |Q|) used by the convergence test."""
    n = q.shape[0]
    nc = phi.shape[0]
    R = np.zeros(n)
    Q = np.zeros(n)
    if jac:
        Amat[:, :] = 0.0
    Rb = np.zeros(7)
    Mb = np.zeros((7, 7))
    Kb = np.zeros((7, 7))
    Db = np.zeros((7, 7))
    Kg7 = np.zeros((7, 7))
    Qb = np.zeros(7)
    ws_rb = np.zeros((29, 4))
    for i in range(nb):
        if isflex[i] >= 0:
            continue
        c7 = 7 * i
        e = q[c7 + 3 : c7 + 7]
        Mb[:, :] = 0.0
        Kb[:, :] = 0.0
        Db[:, :] = 0.0
        _rigid_block_to(
            rm[i],
            rc[i],
            rJ[i],
            e,
            qd[c7 + 3 : c7 + 7],
            qdd[c7 : c7 + 3],
            qdd[c7 + 3 : c7 + 7],
            Rb,
            Mb,
            Kb,
            Db,
            ws_rb,
            jac,
        )
        R[c7 : c7 + 7] += Rb
        if has_g:
            Kg7[:, :] = 0.0
            Qb[:] = 0.0
            _rigid_gravity(rm[i], rc[i], g, e, Qb, Kg7)
            Q[c7 : c7 + 7] += Qb
        if jac:
            for a in range(7):
                for bb in range(7):
                    v = aM * Mb[a, bb] + aKin * Kb[a, bb] + aDin * Db[a, bb]
                    if has_g:
                        v -= aK * Kg7[a, bb]
                    Amat[c7 + a, c7 + bb] += v
    for k in range(f_body.shape[0]):
        i = f_body[k]
        nf = f_n[k]
        c7 = 7 * i
        c0 = f_col0[k]
        N = 7 + nf
        idx = np.empty(N, np.int64)
        for j in range(7):
            idx[j] = c7 + j
        for j in range(nf):
            idx[7 + j] = c0 + j
        St = f_St[f_o1[k] : f_o1[k] + 3 * nf].reshape(3, nf)
        S = f_S[f_o2[k] : f_o2[k] + 9 * nf].reshape(3, 3, nf)
        P = f_P[f_o3[k] : f_o3[k] + 9 * nf * nf].reshape(3, 3, nf, nf)
        Pt = f_Pt[f_o3[k] : f_o3[k] + 9 * nf * nf].reshape(3, 3, nf, nf)
        o = f_o3[k] // 9
        Kff = f_K[o : o + nf * nf].reshape(nf, nf)
        Dff = f_D[o : o + nf * nf].reshape(nf, nf)
        Kitf = f_Kitf[o : o + nf * nf].reshape(nf, nf)
        Kw = f_Kw[6 * o : 6 * o + 6 * nf * nf].reshape(6, nf, nf)
        Kal = f_Kal[3 * o : 3 * o + 3 * nf * nf].reshape(3, nf, nf)
        Ka = f_Ka[3 * o : 3 * o + 3 * nf * nf].reshape(3, nf, nf)
        Rf = np.zeros(N)
        Mf = np.zeros((N, N))
        Kf = np.zeros((N, N))
        Df = np.zeros((N, N))
        e = q[c7 + 3 : c7 + 7]
        _flex_block(
            f_mass[k],
            f_c[k],
            f_E0[k],
            St,
            S,
            P,
            Pt,
            Kff,
            Dff,
            f_stiff[k],
            Kw,
            Kal,
            Ka,
            Kitf,
            g,
            e,
            q[c0 : c0 + nf],
            qd[c7 + 3 : c7 + 7],
            qd[c0 : c0 + nf],
            qdd[c7 : c7 + 3],
            qdd[c7 + 3 : c7 + 7],
            qdd[c0 : c0 + nf],
            Rf,
            Mf,
            Kf,
            Df,
            jac,
        )
        for a in range(N):
            R[idx[a]] += Rf[a]
        Kgf = np.zeros((N, N))
        if has_g:
            Qf = np.zeros(N)
            _flex_gravity(f_mass[k], f_c[k], St, g, e, q[c0 : c0 + nf], Qf, Kgf, jac)
            for a in range(N):
                Q[idx[a]] += Qf[a]
        if jac:
            for a in range(N):
                for bb in range(N):
                    v = aM * Mf[a, bb] + aKin * Kf[a, bb] + aDin * Df[a, bb]
                    if has_g:
                        v -= aK * Kgf[a, bb]
                    Amat[idx[a], idx[bb]] += v
    # force elements (SDAs, point loads; :mod:`.force_kernels`)
    if s_int.shape[0] + l_int.shape[0] > 0:
        forces_add(q, qd, s_int, s_flt, s_U, s_fa, l_int, l_flt, l_U, l_F, Q, Amat, aK, aD, jac)
    # constraints
    Pq = np.zeros((nc, n))
    Hm = np.zeros((n, n)) if jac else np.zeros((1, 1))
    _constraints(
        q,
        nb,
        cb,
        cs,
        csg,
        cpt,
        ctarget,
        fs_index,
        fs_col0,
        fs_n,
        fs_point,
        fs_X,
        fs_off,
        lam,
        phi,
        Pq,
        Hm,
        jac,
    )
    PtL = _tv(Pq, lam)
    for a in range(n):
        r_out[a] = R[a] + PtL[a] - Q[a]
    if jac:
        for a in range(n):
            for bb in range(n):
                Amat[a, bb] += aK * Hm[a, bb]
        for a in range(nc):
            for bb in range(n):
                Amat[n + a, bb] = Pq[a, bb]
                Amat[bb, n + a] = Pq[a, bb]
    out = np.empty(3)
    out[0] = np.sqrt((R * R).sum())
    out[1] = np.sqrt((PtL * PtL).sum())
    out[2] = np.sqrt((Q * Q).sum())
    return out


@njit(cache=True)
def _newton(
    q_pred,
    v_pred,
    x_qdd,
    x_lam,
    bh2,
    gh,
    sc,
    tol,
    rtol,
    max_iter,
    hist,
    k_guess,
    nb,
    rm,
    rc,
    rJ,
    isflex,
    f_body,
    f_col0,
    f_n,
    f_mass,
    f_c,
    f_E0,
    f_St,
    f_S,
    f_P,
    f_Pt,
    f_K,
    f_D,
    f_stiff,
    f_Kw,
    f_Kal,
    f_Ka,
    f_Kitf,
    f_o1,
    f_o2,
    f_o3,
    g,
    has_g,
    cb,
    cs,
    csg,
    cpt,
    ctarget,
    fs_index,
    fs_col0,
    fs_n,
    fs_point,
    fs_X,
    fs_off,
    s_int,
    s_flt,
    s_U,
    s_fa,
    l_int,
    l_flt,
    l_U,
    l_F,
    nj,
):
    """Newton iteration of one generalized-alpha / Newmark step (see integrators.implicit).

    Returns (status, k, constraint violation): status 1 converged, 0 iteration limit,
    -1 non-finite residual; ``x_qdd``, ``x_lam`` are updated in place.

    ``k_guess`` (the previous step's number of corrections; < 1: none): at that iteration
    the residual is evaluated first without the Newton matrix, which is only needed if the
    test fails (then the terms are evaluated again with it; the residual is the same to
    the bit). A converging step thus skips the matrix it would not use."""
    n = q_pred.shape[0]
    nc = x_lam.shape[0]
    r = np.zeros(n)
    phi = np.zeros(nc)
    A = np.zeros((n + nc, n + nc))
    res = np.zeros(n + nc)
    q1 = np.empty(n)
    v1 = np.empty(n)
    scale = -1.0
    tiny = False
    # non-literal arguments: the same compiled specialization as Engine.terms
    one = bh2 / bh2
    for k in range(max_iter + 1):
        for i in range(n):
            q1[i] = q_pred[i] + bh2 * x_qdd[i]
            v1[i] = v_pred[i] + gh * x_qdd[i]
        jac = k != k_guess
        norms = _system_terms(
            q1,
            v1,
            x_qdd,
            x_lam,
            nb,
            rm,
            rc,
            rJ,
            isflex,
            f_body,
            f_col0,
            f_n,
            f_mass,
            f_c,
            f_E0,
            f_St,
            f_S,
            f_P,
            f_Pt,
            f_K,
            f_D,
            f_stiff,
            f_Kw,
            f_Kal,
            f_Ka,
            f_Kitf,
            f_o1,
            f_o2,
            f_o3,
            g,
            has_g,
            cb,
            cs,
            csg,
            cpt,
            ctarget,
            fs_index,
            fs_col0,
            fs_n,
            fs_point,
            fs_X,
            fs_off,
            s_int,
            s_flt,
            s_U,
            s_fa,
            l_int,
            l_flt,
            l_U,
            l_F,
            one,
            bh2,
            gh,
            bh2,
            gh,
            r,
            phi,
            A,
            jac,
        )
        nrf = 0.0
        for i in range(n):
            res[i] = r[i]
            nrf += r[i] * r[i]
        nphi = 0.0
        for i in range(nc):
            res[n + i] = sc * phi[i]
            nphi += phi[i] * phi[i]
        nrf = np.sqrt(nrf)
        nphi = np.sqrt(nphi)
        nr = np.sqrt(nrf * nrf + (sc * nphi) * (sc * nphi))
        hist[k] = nr
        if scale < 0.0:
            scale = norms[2]
        viol = 0.0
        for i in range(nj):
            viol = max(viol, abs(phi[i]))
        if not np.isfinite(nr):
            return -1, k, viol
        qmax = 1.0
        for i in range(n):
            qmax = max(qmax, abs(q1[i]))
        # one rule with the generic path (integrators.convergence): force and constraint
        # rows each against their own round-off floor
        if (
            tiny
            or newton_converged(
                nrf, nphi, sc, tol + rtol * scale, norms[0] + norms[1] + norms[2], nc, qmax
            )
            > 0
        ):
            return 1, k, viol
        if k == max_iter:
            return 0, k, viol
        if not jac:  # the guess was wrong: the same terms again, now with the matrix
            _system_terms(
                q1,
                v1,
                x_qdd,
                x_lam,
                nb,
                rm,
                rc,
                rJ,
                isflex,
                f_body,
                f_col0,
                f_n,
                f_mass,
                f_c,
                f_E0,
                f_St,
                f_S,
                f_P,
                f_Pt,
                f_K,
                f_D,
                f_stiff,
                f_Kw,
                f_Kal,
                f_Ka,
                f_Kitf,
                f_o1,
                f_o2,
                f_o3,
                g,
                has_g,
                cb,
                cs,
                csg,
                cpt,
                ctarget,
                fs_index,
                fs_col0,
                fs_n,
                fs_point,
                fs_X,
                fs_off,
                s_int,
                s_flt,
                s_U,
                s_fa,
                l_int,
                l_flt,
                l_U,
                l_F,
                one,
                bh2,
                gh,
                bh2,
                gh,
                r,
                phi,
                A,
                True,
            )
        dx = np.linalg.solve(A, -res)
        x_qdd += dx[:n]
        x_lam += dx[n:]
        nq = np.sqrt((dx[:n] * dx[:n]).sum())
        nl = np.sqrt((dx[n:] * dx[n:]).sum())
        tiny = nq <= 1e-13 * (1.0 + np.sqrt((x_qdd * x_qdd).sum())) and nl <= 1e-13 * (
            1.0 + np.sqrt((x_lam * x_lam).sum())
        )
    return 0, max_iter, 0.0


@njit(cache=True)
def _run(
    q,
    qd,
    qdd,
    a,
    lam,
    times,
    h,
    be,
    ga,
    am,
    af,
    tol,
    rtol,
    max_iter,
    S_all,
    T_all,
    Tq,
    Tqd,
    Tqdd,
    Tlam,
    reac,
    iters,
    resid,
    hist,
    viol,
    nb,
    rm,
    rc,
    rJ,
    isflex,
    f_body,
    f_col0,
    f_n,
    f_mass,
    f_c,
    f_E0,
    f_St,
    f_S,
    f_P,
    f_Pt,
    f_K,
    f_D,
    f_stiff,
    f_Kw,
    f_Kal,
    f_Ka,
    f_Kitf,
    f_o1,
    f_o2,
    f_o3,
    g,
    has_g,
    cb,
    cs,
    csg,
    cpt,
    ctarget,
    fs_index,
    fs_col0,
    fs_n,
    fs_point,
    fs_X,
    fs_off,
    s_int,
    s_flt,
    s_U,
    s_fa,
    l_int,
    l_flt,
    l_U,
    l_F,
    nj,
    r_joint,
    r_side,
    r_sgn,
    r_child,
    r_side_body,
    r_CC,
    r_sC,
    d_joint,
    d_col0,
    d_n,
    d_modes,
    d_off,
    gauge,
    FA_all,
    LF_all,
    project,
):
    """The whole generalized-alpha step loop (see integrators.implicit.integrate): returns the
    index of the first step that failed (status < 1) or 0; ``S_all``/``T_all`` hold the
    rheonomic slot vectors and targets per step (first axis 1: constant)."""
    nt = times.shape[0]
    bp = be * (1 - af) / (1 - am)
    gp = ga * (1 - af) / (1 - am)
    bh2 = bp * h * h
    gh = gp * h
    sc = 1.0 / bh2
    timed = S_all.shape[0] > 1
    k_prev = -1
    n = q.shape[0]
    nc = lam.shape[0]
    if project:  # scratch of the velocity projection (the mass matrix: no stiffening)
        no_stiff = np.zeros_like(f_stiff)
        zn = np.zeros(n)
        zc = np.zeros(nc)
        r_p = np.zeros(n)
        phi_p = np.zeros(nc)
        A_p = np.zeros((n + nc, n + nc))
        rhs = np.zeros(n + nc)
    for i in range(1, nt):
        a_part = (af * qdd - am * a) / (1 - am)
        q_pred = q + h * qd + h * h * (0.5 - be) * a + h * h * be * a_part
        v_pred = qd + h * (1 - ga) * a + h * ga * a_part
        x_qdd = qdd.copy()
        x_lam = lam.copy()
        if timed:
            cs_i = S_all[i]
            tg_i = T_all[i]
        else:
            cs_i = cs
            tg_i = ctarget
        fa_i = FA_all[i] if FA_all.shape[0] > 1 else FA_all[0]
        lf_i = LF_all[i] if LF_all.shape[0] > 1 else LF_all[0]
        status, k, vi = _newton(
            q_pred,
            v_pred,
            x_qdd,
            x_lam,
            bh2,
            gh,
            sc,
            tol,
            rtol,
            max_iter,
            hist[i],
            k_prev,
            nb,
            rm,
            rc,
            rJ,
            isflex,
            f_body,
            f_col0,
            f_n,
            f_mass,
            f_c,
            f_E0,
            f_St,
            f_S,
            f_P,
            f_Pt,
            f_K,
            f_D,
            f_stiff,
            f_Kw,
            f_Kal,
            f_Ka,
            f_Kitf,
            f_o1,
            f_o2,
            f_o3,
            g,
            has_g,
            cb,
            cs_i,
            csg,
            cpt,
            tg_i,
            fs_index,
            fs_col0,
            fs_n,
            fs_point,
            fs_X,
            fs_off,
            s_int,
            s_flt,
            s_U,
            fa_i,
            l_int,
            l_flt,
            l_U,
            lf_i,
            nj,
        )
        iters[i] = k
        resid[i] = hist[i, k]
        if status != 1:
            return i
        k_prev = k
        a = ((1 - af) * x_qdd + af * qdd - am * a) / (1 - am)
        q = q_pred + bh2 * x_qdd
        qd = v_pred + gh * x_qdd
        if project:
            # mass-orthogonal projection on Phi_q qd = 0 (scleronomic; Engine.project)
            _system_terms(
                q,
                zn,
                zn,
                zc,
                nb,
                rm,
                rc,
                rJ,
                isflex,
                f_body,
                f_col0,
                f_n,
                f_mass,
                f_c,
                f_E0,
                f_St,
                f_S,
                f_P,
                f_Pt,
                f_K,
                f_D,
                no_stiff,
                f_Kw,
                f_Kal,
                f_Ka,
                f_Kitf,
                f_o1,
                f_o2,
                f_o3,
                g,
                has_g,
                cb,
                cs_i,
                csg,
                cpt,
                tg_i,
                fs_index,
                fs_col0,
                fs_n,
                fs_point,
                fs_X,
                fs_off,
                s_int,
                s_flt,
                s_U,
                fa_i,
                l_int,
                l_flt,
                l_U,
                lf_i,
                1.0,
                0.0,
                0.0,
                0.0,
                0.0,
                r_p,
                phi_p,
                A_p,
                True,
            )
            for r in range(nc):
                v = 0.0
                for c in range(n):
                    v += A_p[n + r, c] * qd[c]
                rhs[n + r] = -v
            dx = np.linalg.solve(A_p, rhs)
            for c in range(n):
                qd[c] += dx[c]
        elif gauge:  # Euler-parameter rates without their component along e
            for b in range(nb):
                c3 = 7 * b + 3
                ee = 0.0
                ed = 0.0
                for j in range(4):
                    ee += q[c3 + j] * q[c3 + j]
                    ed += q[c3 + j] * qd[c3 + j]
                for j in range(4):
                    qd[c3 + j] -= q[c3 + j] * (ed / ee)
        qdd = x_qdd
        lam = x_lam
        viol[i] = vi
        Tq[i] = q
        Tqd[i] = qd
        Tqdd[i] = qdd
        Tlam[i] = lam
        _reactions(
            q,
            lam,
            nb,
            cb,
            cs_i,
            csg,
            cpt,
            fs_index,
            fs_col0,
            fs_n,
            fs_point,
            fs_X,
            fs_off,
            r_joint,
            r_side,
            r_sgn,
            r_child,
            r_side_body,
            r_CC,
            r_sC,
            d_joint,
            d_col0,
            d_n,
            d_modes,
            d_off,
            reac[i],
        )
    return 0


@njit(cache=True)
def _reactions(
    q,
    lam,
    nb,
    b,
    s,
    sg,
    pt,
    fs_index,
    fs_col0,
    fs_n,
    fs_point,
    fs_X,
    fs_off,
    r_joint,
    r_side,
    r_sgn,
    r_child,
    r_side_body,
    r_CC,
    r_sC,
    d_joint,
    d_col0,
    d_n,
    d_modes,
    d_off,
    out,
):
    """Joint reactions (port of ConstraintSet.reactions) into ``out`` (nj, 6)."""
    npm = b.shape[0]
    nj = out.shape[0]
    Rn = np.empty((nb, 3, 3))
    for i in range(nb):
        e = q[7 * i + 3 : 7 * i + 7]
        n2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]
        _A_to(e, Rn[i])
        for a in range(3):
            for c in range(3):
                Rn[i, a, c] /= n2
    N = np.zeros((nj, 3))
    F = np.zeros((nj, 3))
    nmax = 1
    for f in range(fs_n.shape[0]):
        nmax = max(nmax, fs_n[f])
    v3 = np.zeros((16, 3))
    y, X, Y, pC, nC, d3 = v3[0], v3[1], v3[2], v3[3], v3[4], v3[5]
    As = v3[8:12]
    vals = v3[12:16]
    FC = np.empty((3, 3))
    Jq = np.zeros((3, nmax))
    Hy = np.zeros((3, 3, 3))
    for p in range(npm):
        for k in range(4):
            if fs_index[p, k] < 0:
                for i in range(3):
                    y[i] = s[p, k, i]
            else:
                _slot_s(p, k, s, fs_index, fs_col0, fs_n, fs_point, fs_X, fs_off, q, y, Jq, Hy)
            bk = b[p, k]
            sgk = sg[p, k]
            if bk >= 0:
                for i in range(3):
                    As[k, i] = Rn[bk, i, 0] * y[0] + Rn[bk, i, 1] * y[1] + Rn[bk, i, 2] * y[2]
                    vals[k, i] = sgk * (As[k, i] + pt[p, k] * q[7 * bk + i])
            else:
                for i in range(3):
                    As[k, i] = y[i]
                    vals[k, i] = sgk * y[i]
        for i in range(3):
            X[i] = vals[0, i] + vals[1, i]
            Y[i] = vals[2, i] + vals[3, i]
        side = r_side[p]
        lamp = lam[p] * r_sgn[p]
        j = r_joint[p]
        for k in range(4):
            if b[p, k] != side or b[p, k] < 0:
                continue
            o = Y if k < 2 else X
            for i in range(3):
                i1 = (i + 1) % 3
                i2 = (i + 2) % 3
                dr = sg[p, k] * (As[k, i1] * o[i2] - As[k, i2] * o[i1])
                N[j, i] -= lamp * dr
                F[j, i] -= lamp * sg[p, k] * pt[p, k] * o[i]
    for j in range(nj):
        jb = r_child[j]
        sd = r_side_body[j]
        CC = r_CC[j].copy()
        sC = r_sC[j].copy()
        for m in range(d_joint.shape[0]):
            if d_joint[m] == j:
                n = d_n[m]
                Md = d_modes[d_off[m] : d_off[m] + 6 * n].reshape(6, n)
                qf = q[d_col0[m] : d_col0[m] + n]
                th = _mv(Md[:3], qf)
                Rd = np.empty((3, 3))
                ek = np.zeros(3)
                ys = np.zeros(3)
                Jy = np.zeros((3, 3))
                for c in range(3):
                    ek[:] = 0.0
                    ek[c] = 1.0
                    exp_jets(th, ek, ys, Jy, Hy)
                    Rd[:, c] = ys
                CC = _mm(Rd, r_CC[j])
                sC = r_sC[j] + _mv(Md[3:], qf)
        # child joint frame in the world: FC = Rc CC at pC = rc + Rc sC (ground: Rc = I)
        for a in range(3):
            for c in range(3):
                if jb >= 0:
                    v = 0.0
                    for l in range(3):
                        if Rn[jb, a, l] != 0.0:
                            v += Rn[jb, a, l] * CC[l, c]
                    FC[a, c] = v
                else:
                    FC[a, c] = CC[a, c]
            if jb >= 0:
                pC[a] = q[7 * jb + a] + (
                    Rn[jb, a, 0] * sC[0] + Rn[jb, a, 1] * sC[1] + Rn[jb, a, 2] * sC[2]
                )
            else:
                pC[a] = sC[a]
            d3[a] = pC[a] - (q[7 * sd + a] if sd >= 0 else 0.0)
        for a in range(3):
            a1 = (a + 1) % 3
            a2 = (a + 2) % 3
            nC[a] = N[j, a] - (d3[a1] * F[j, a2] - d3[a2] * F[j, a1])
        for a in range(3):
            out[j, a] = FC[0, a] * nC[0] + FC[1, a] * nC[1] + FC[2, a] * nC[2]
            out[j, 3 + a] = FC[0, a] * F[j, 0] + FC[1, a] * F[j, 1] + FC[2, a] * F[j, 2]


@njit(cache=True)
def _energies(
    Q,
    Qd,
    nb,
    rm,
    rc,
    rJc,
    isflex,
    f_body,
    f_col0,
    f_n,
    f_mass,
    f_c,
    f_E0,
    f_St,
    f_S,
    f_P,
    f_K,
    f_D,
    f_o1,
    f_o2,
    f_o3,
    g,
    out,
):
    """Per sample: kinetic, gravity potential, strain energy, modal damping power -> out (nt, 4)."""
    nt = Q.shape[0]
    for t in range(nt):
        q = Q[t]
        qd = Qd[t]
        kin = 0.0
        grav = 0.0
        strain = 0.0
        pd = 0.0
        for i in range(nb):
            c7 = 7 * i
            e = q[c7 + 3 : c7 + 7]
            n2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]
            A = _A(e) / n2
            w = 2.0 * _mv(_G(e), qd[c7 + 3 : c7 + 7]) / n2
            r = q[c7 : c7 + 3]
            rd = qd[c7 : c7 + 3]
            k = isflex[i]
            if k < 0:
                vc = rd + _mv(A, _cross(w, rc[i]))
                kin += 0.5 * rm[i] * _dot(vc, vc) + 0.5 * _dot(w, _mv(rJc[i], w))
                grav -= rm[i] * _dot(g, r + _mv(A, rc[i]))
                continue
            nf = f_n[k]
            c0 = f_col0[k]
            St = f_St[f_o1[k] : f_o1[k] + 3 * nf].reshape(3, nf)
            S = f_S[f_o2[k] : f_o2[k] + 9 * nf].reshape(3, 3, nf)
            P = f_P[f_o3[k] : f_o3[k] + 9 * nf * nf].reshape(3, 3, nf, nf)
            o = f_o3[k] // 9
            Kff = f_K[o : o + nf * nf].reshape(nf, nf)
            Dff = f_D[o : o + nf * nf].reshape(nf, nf)
            qf = q[c0 : c0 + nf].copy()
            qfd = qd[c0 : c0 + nf].copy()
            u = np.empty(6 + nf)
            u[:3] = w
            u[3:6] = _tv(A, rd)
            u[6:] = qfd
            M = _flex_mass(f_mass[k], f_c[k], f_E0[k], St, S, P, qf)
            kin += 0.5 * _dot(u, _mv(M, u))
            Sbar = f_c[k] + _mv(St, qf)
            grav -= _dot(g, f_mass[k] * r + _mv(A, Sbar))
            strain += 0.5 * _dot(qf, _mv(Kff, qf))
            pd += _dot(qfd, _mv(Dff, qfd))
        out[t, 0] = kin
        out[t, 1] = grav
        out[t, 2] = strain
        out[t, 3] = pd


class Engine:
    """Compiled Newton engine of one :class:`~flexmbd.absolute.system.AbsoluteSystem`.

    Holds the system's data as flat arrays; :meth:`terms` evaluates residual and Newton
    matrix (for tests), :meth:`newton` runs the Newton loop of one implicit step,
    :meth:`reactions` the joint reactions, :meth:`project` the velocity projection.
    """

    def __init__(self, system):
        from ..model.forces import Gravity

        s = system
        self.system = s
        self.nb = s.nb
        inert = s.inertia
        self.rm = np.ascontiguousarray(inert.m, float)
        self.rc = np.ascontiguousarray(inert.c, float)
        self.rJ = np.ascontiguousarray(inert.J, float)
        self.isflex = -np.ones(s.nb, np.int64)
        fl = s.flexible.flex
        for k, d in enumerate(fl):
            self.isflex[d.index] = k
        nfb = len(fl)
        self.f_body = np.array([d.index for d in fl], np.int64)
        self.f_col0 = np.array([d.col0 for d in fl], np.int64)
        self.f_n = np.array([d.n for d in fl], np.int64)
        self.f_mass = np.array([d.inv.mass for d in fl], float)
        self.f_c = np.array([d.inv.c for d in fl], float).reshape(nfb, 3)
        self.f_E0 = np.array([d.inv.E0 for d in fl], float).reshape(nfb, 3, 3)
        cat = lambda xs: (
            np.ascontiguousarray(np.concatenate([np.ravel(x) for x in xs]), float)
            if xs
            else np.zeros(0)
        )
        self.f_St = cat([d.inv.St for d in fl])
        self.f_S = cat([d.inv.S for d in fl])
        self.f_P = cat([d.inv.P for d in fl])
        # P with its mode indices swapped (Pt[a, b, l, k] = P[a, b, k, l]): the contractions
        # P q run as vectorizable column updates, summed in the same order
        self.f_Pt = cat([np.swapaxes(d.inv.P, 2, 3) for d in fl])
        self.f_K = cat([d.K for d in fl])
        self.f_D = cat([d.D for d in fl])
        self.f_stiff = np.array([d.stiffening for d in fl], np.bool_)
        z = [np.zeros((6, d.n, d.n)) for d in fl]
        self.f_Kw = cat([d.Kw if d.stiffening else zz for d, zz in zip(fl, z)])
        self.f_Kal = cat([d.Kal if d.stiffening else zz[:3] for d, zz in zip(fl, z)])
        self.f_Ka = cat([d.Ka if d.stiffening else zz[:3] for d, zz in zip(fl, z)])
        off = np.concatenate([[0], np.cumsum([d.n for d in fl])]).astype(np.int64)
        off2 = np.concatenate([[0], np.cumsum([d.n * d.n for d in fl])]).astype(np.int64)
        self.f_o1 = 3 * off[:-1]
        self.f_o2 = 9 * off[:-1]
        self.f_o3 = 9 * off2[:-1]
        self.f_Kitf = np.zeros(int(off2[-1]))
        self.itf_lagged = any(d.itf_names for d in fl)
        self.refresh_interface_loads()
        grav = [f for f in s.forces if type(f) is Gravity]
        self._grav = grav
        # constraints
        cs = s.constraints
        self.cs = cs
        npm = cs.np
        self.fs_index = -np.ones((npm, 4), np.int64)
        for f, fs in enumerate(cs.fslots):
            self.fs_index[fs.p, fs.k] = f
        self.fs_col0 = np.array([fs.col0 for fs in cs.fslots], np.int64)
        self.fs_n = np.array([fs.n for fs in cs.fslots], np.int64)
        self.fs_point = np.array([fs.point for fs in cs.fslots], np.bool_)
        self.fs_X = cat([fs.X for fs in cs.fslots])
        self.fs_off = np.concatenate([[0], np.cumsum([3 * fs.n for fs in cs.fslots])]).astype(
            np.int64
        )[:-1]
        self.nj = cs.n_joint_rows
        jr = cs._react
        self.r = {k: jr[k] for k in ("joint", "side", "sgn", "child", "side_body", "CC", "sC")}
        dfm = jr["deforming"]
        self.d_joint = np.array([x[0] for x in dfm], np.int64)
        self.d_col0 = np.array([x[2] for x in dfm], np.int64)
        self.d_n = np.array([x[3] for x in dfm], np.int64)
        self.d_modes = cat([x[1].modes for x in dfm])
        self.d_off = np.concatenate([[0], np.cumsum([6 * x[3] for x in dfm])]).astype(np.int64)[:-1]
        self.n_joints = len(cs.joints)
        self.ft = ForceTable(s)
        self.k_prev = -1  # corrections of the last converged step (Newton's guess)

    #: force-element types the engine evaluates in compiled code (:mod:`.force_kernels`)
    COMPILED_FORCES = ("Gravity", "SpringDamperActuator", "PointForce", "PointTorque")

    @staticmethod
    def supports(system, scheme=None):
        """True when every force element is compiled (:attr:`COMPILED_FORCES`: gravity,
        spring-damper-actuators with rigid or deforming ends, point forces and torques) and
        the system is small enough (``n + nc <= MAX_DENSE``)."""
        from ..model.forces import Gravity, PointForce, PointTorque
        from ..model.sda import SpringDamperActuator

        if system.n + system.nc > MAX_DENSE:
            return False
        if getattr(system.constraints, "ncr", 0):  # Screw / GearCoupling rows: generic path
            return False
        ok = (Gravity, SpringDamperActuator, PointForce, PointTorque)
        if any(type(f) not in ok for f in system.forces):
            return False
        if scheme is not None and getattr(scheme, "hht_alpha", 0.0) != 0.0:
            return False
        return True

    def refresh_interface_loads(self):
        """Copy the lagged interface-load stiffness of every flexible body into the engine."""
        o = 0
        for d in self.system.flexible.flex:
            m = d.n * d.n
            self.f_Kitf[o : o + m] = d.K_itf.ravel()
            o += m

    def _g(self):
        if not self._grav:
            return np.zeros(3), False
        return sum(np.asarray(e.g, float) for e in self._grav), True

    def _args(self):
        g, has_g = self._g()
        cs = self.cs
        return (
            self.nb,
            self.rm,
            self.rc,
            self.rJ,
            self.isflex,
            self.f_body,
            self.f_col0,
            self.f_n,
            self.f_mass,
            self.f_c,
            self.f_E0,
            self.f_St,
            self.f_S,
            self.f_P,
            self.f_Pt,
            self.f_K,
            self.f_D,
            self.f_stiff,
            self.f_Kw,
            self.f_Kal,
            self.f_Ka,
            self.f_Kitf,
            self.f_o1,
            self.f_o2,
            self.f_o3,
            g,
            has_g,
            cs.b,
            cs.s,
            cs.sg,
            cs.pt,
            cs.target,
            self.fs_index,
            self.fs_col0,
            self.fs_n,
            self.fs_point,
            self.fs_X,
            self.fs_off,
            *self._ft_args(),
        )

    def _ft_args(self):
        ft = self.ft
        return (ft.s_int, ft.s_flt, ft.s_U, ft.fa, ft.l_int, ft.l_flt, ft.l_U, ft.F)

    def _set_time(self, t):
        self.cs.set_time(t)
        if not self.ft.empty:
            self.ft.refresh()
            self.ft.at(t)

    def terms(self, q, qd, qdd, lam, t, coefs=(1.0, 0.0, 0.0, 0.0, 0.0), jac=True):
        """``(R + Phi_q^T lam - Q, phi, KKT matrix)`` at one state (dense)."""
        s = self.system
        self._set_time(t)
        n, nc = s.n, s.nc
        r = np.zeros(n)
        phi = np.zeros(nc)
        A = np.zeros((n + nc, n + nc))
        _system_terms(
            np.asarray(q, float),
            np.asarray(qd, float),
            np.asarray(qdd, float),
            np.asarray(lam, float),
            *self._args(),
            *map(float, coefs),
            r,
            phi,
            A,
            jac,
        )
        return r, phi, A

    def newton(self, q_pred, v_pred, x_qdd, x_lam, t, bh2, gh, sc, tol, rtol, max_iter, hist):
        """Newton loop of one step (in place on ``x_qdd``, ``x_lam``): (status, k, violation)."""
        self._set_time(t)
        out = _newton(
            q_pred,
            v_pred,
            x_qdd,
            x_lam,
            bh2,
            gh,
            sc,
            tol,
            rtol,
            max_iter,
            hist,
            self.k_prev,
            *self._args(),
            self.nj,
        )
        self.k_prev = out[1] if out[0] == 1 else -1
        return out

    def project(self, q, qd, t):
        """Mass-orthogonal velocity projection on ``Phi_q qd = nu``
        (as statics.project_velocities)."""
        s = self.system
        n, nc = s.n, s.nc
        stiff = self.f_stiff
        self.f_stiff = np.zeros_like(stiff)  # the symmetric mass matrix
        try:
            _, _, A = self.terms(q, np.zeros(n), np.zeros(n), np.zeros(nc), t, (1, 0, 0, 0, 0))
        finally:
            self.f_stiff = stiff
        P = A[n:, :n]
        viol = P @ qd + self.cs.phi_t(q, t)
        dx = np.linalg.solve(A, np.concatenate([np.zeros(n), -viol]))
        return qd + dx[:n]

    def energies(self, Q, Qd):
        """(kinetic, gravity, strain, modal damping power) arrays over a history."""
        g, _ = self._g()
        out = np.zeros((len(Q), 4))
        s = self.system
        _energies(
            np.ascontiguousarray(Q),
            np.ascontiguousarray(Qd),
            self.nb,
            self.rm,
            self.rc,
            np.ascontiguousarray(s.inertia.Jc, float),
            self.isflex,
            self.f_body,
            self.f_col0,
            self.f_n,
            self.f_mass,
            self.f_c,
            self.f_E0,
            self.f_St,
            self.f_S,
            self.f_P,
            self.f_K,
            self.f_D,
            self.f_o1,
            self.f_o2,
            self.f_o3,
            g,
            out,
        )
        return out[:, 0], out[:, 1], out[:, 2], out[:, 3]

    def force_energies(self, times, Q, Qd):
        """``(spring, damper power, actuator power, external power)`` of the compiled force
        elements (SDAs, point loads) over a history (:func:`.force_kernels.force_energies`)."""
        ft = self.ft
        out = np.zeros((len(Q), 4))
        if not ft.empty:
            ft.refresh()
            FA, LF = ft.tabulate(np.asarray(times, float))
            force_energies(
                np.ascontiguousarray(Q),
                np.ascontiguousarray(Qd),
                ft.s_int,
                ft.s_flt,
                ft.s_U,
                FA,
                ft.l_int,
                ft.l_flt,
                ft.l_U,
                LF,
                out,
            )
        return out[:, 0], out[:, 1], out[:, 2], out[:, 3]

    def run(
        self,
        q,
        qd,
        qdd,
        a,
        lam,
        times,
        h,
        scheme,
        tol,
        rtol,
        max_iter,
        gauge,
        Tq,
        Tqd,
        Tqdd,
        Tlam,
        reac,
        iters,
        resid,
        hist,
        viol,
        project=False,
    ):
        """All steps of an integration in compiled code; returns the first failed step or 0.

        ``project``: mass-orthogonal velocity projection after each step (as
        :meth:`project`; scleronomic models only, ``cs.rheonomic`` False).

        Drivers: their time-dependent slot vectors and targets are tabulated per step
        first (``JointDriver`` functions are Python callables)."""
        cs = self.cs
        if cs.rheonomic:
            nt = len(times)
            S_all = np.empty((nt,) + cs.s.shape)
            T_all = np.empty((nt, len(cs.target)))
            for i, t in enumerate(times):
                cs.set_time(float(t))
                S_all[i] = cs.s
                T_all[i] = cs.target
        else:
            S_all = np.empty((1,) + cs.s.shape)
            T_all = np.empty((1, len(cs.target)))
        r = self.r
        ft = self.ft
        if not ft.empty:
            ft.refresh()
        FA_all, LF_all = ft.tabulate(times)
        return _run(
            np.array(q, float),
            np.array(qd, float),
            np.array(qdd, float),
            np.array(a, float),
            np.array(lam, float),
            np.asarray(times, float),
            float(h),
            scheme.beta,
            scheme.gamma,
            scheme.alpha_m,
            scheme.alpha_f,
            float(tol),
            float(rtol),
            int(max_iter),
            S_all,
            T_all,
            Tq,
            Tqd,
            Tqdd,
            Tlam,
            reac,
            iters,
            resid,
            hist,
            viol,
            *self._args(),
            self.nj,
            r["joint"],
            r["side"],
            r["sgn"],
            r["child"],
            r["side_body"],
            r["CC"],
            r["sC"],
            self.d_joint,
            self.d_col0,
            self.d_n,
            self.d_modes,
            self.d_off,
            bool(gauge),
            FA_all,
            LF_all,
            bool(project),
        )

    def reactions(self, q, lam):
        cs = self.cs
        out = np.zeros((self.n_joints, 6))
        r = self.r
        _reactions(
            np.asarray(q, float),
            np.asarray(lam, float),
            self.nb,
            cs.b,
            cs.s,
            cs.sg,
            cs.pt,
            self.fs_index,
            self.fs_col0,
            self.fs_n,
            self.fs_point,
            self.fs_X,
            self.fs_off,
            r["joint"],
            r["side"],
            r["sgn"],
            r["child"],
            r["side_body"],
            r["CC"],
            r["sC"],
            self.d_joint,
            self.d_col0,
            self.d_n,
            self.d_modes,
            self.d_off,
            out,
        )
        return out
