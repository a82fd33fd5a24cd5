"""Compiled fixed-step RK4 of trees with flexible bodies: output intervals in one call.

:func:`flex_rk4_block` is the flexible counterpart of the rigid
:func:`._nbloops.tree_rk4_block`: the classical RK4 stages of
:class:`flexmbd.integrators.explicit.TreeStepper` around the serialized CFA with flexible
bodies (:func:`._flexkernels.forward_dynamics`, geometric stiffening iterated in it), with
the loads the Python path (:meth:`flexmbd.recursive.RecursiveSystem.qdd`) applies per
evaluation when they are gravity, constant joint and modal forces ``tau``, joint
spring-damper laws (:meth:`flexmbd.JointForce.spring_damper`), constant joint forces and
the point loads of :meth:`flexmbd.recursive.flexible.FlexTree.point_loads` (point forces,
torques, SDAs; the values of time, the laws' actuators among them, tabulated by the
caller on the stage times). Every operation is the Python path's, in its order: the same
bits (tests/recursive/test_flexible_rk4.py, test_flexible_points.py).
"""

import numpy as np

from .._jit import njit
from . import _flexkernels as FK
from . import _kernels as K
from ._nbloops import (  # noqa: F401 - flex_loads re-exported
    _flex_eval,
    _flex_rhs,
    _interval_end,
    _rk4_stage_state,
    _rk4_update,
    flex_loads,
    flex_point_energy,
    tree_rk_block,
    tree_rk_block_dense,
    unit_quaternions,
)


@njit(cache=True)
def flex_rk4_block(T, fargs, y, h, substeps, n_int, tau, qoff, i0, QDD, REAC, done, Yout):
    """Up to ``n_int`` output intervals of ``substeps`` classical RK4 steps of a tree with
    flexible bodies from ``y = (q, v)`` in place (joint and modal coordinates and speeds,
    SI), in one call on the workspace ``T`` (:class:`._flexkernels.FlexWork` as a plain
    tuple). Each evaluation is :func:`._nbloops._flex_eval` (``fargs`` as in
    :func:`._nbloops._flex_rhs`; joint and modal forces ``tau``): the loads of
    :func:`flex_loads` with the values of time of row ``3 (j substeps + sub) + c`` of
    ``FA``, those at the start (c = 0), middle (1) and end (2) of substep ``sub`` of
    interval ``j``; :func:`._flexkernels.forward_dynamics` (stiffening iterations in it);
    ``q' = qdot(q, v)``. The quaternions at the offsets ``qoff`` are renormalized at the
    end of each interval (:func:`._nbloops.unit_quaternions`), as
    :class:`flexmbd.integrators.explicit.TreeStepper` does. The first stage of interval
    ``j`` is the output sample ``i0 + j``: its ``QDD`` (joint and modal accelerations),
    joint reactions ``REAC`` (N, N m, joint frames) and ``done`` rows (none past their
    end); the state at the interval's end goes to ``Yout[j]``. Stops before an interval
    whose evaluation fails (a status of :func:`._nbloops._flex_eval`) or whose end state
    is not finite (``y`` is then that interval's start). Returns the number of intervals
    done."""
    n = y.shape[0]
    nv = QDD.shape[1]
    nq = n - nv
    y0 = np.empty(n)
    ks = np.empty((4, n))
    yy = np.empty(n)
    reac = np.empty((REAC.shape[1], 6))
    for j in range(n_int):
        for i in range(n):
            y0[i] = y[i]
        r = i0 + j
        ok = True
        for sub in range(substeps):
            for s in range(4):
                _rk4_stage_state(y, ks, s, h, yy)
                row = 3 * (j * substeps + sub) + (s + 1) // 2
                sample = s == 0 and sub == 0 and r < QDD.shape[0]
                rr = REAC[r] if sample else reac
                if _flex_eval(T, fargs, row, yy, tau, rr, ks[s]) != 0:
                    ok = False
                    break
                if sample:
                    for i in range(nv):
                        QDD[r, i] = ks[s, nq + i]
                    done[r] = True
            if not ok:
                break
            _rk4_update(y, ks, h)
        if ok:
            unit_quaternions(y, qoff)
        if not _interval_end(y, y0, ok, Yout, j):
            if r < done.shape[0]:
                done[r] = False
            return j
    return n_int


@njit(cache=True)
def flex_energies(T, Q, V, TAU, grav, use_grav, LI, LF, FA, P, FV, out):
    """Energies (J) and powers (W) of the states ``Q``, ``V`` (nt, nq), (nt, nv) of a tree
    with flexible bodies on the workspace ``T`` (:class:`._flexkernels.FlexWork` as a
    plain tuple), the definitions of :meth:`flexmbd.recursive.RecursiveSystem.kinetic_energy`,
    ``potential_energies`` and ``powers`` for the loads of :func:`flex_loads`: per state
    ``out[i] = (kinetic, gravity, spring, p_damper, p_actuator, p_external)``: kinetic
    ``V.I V / 2`` of the rigid bodies plus ``u^T M(q) u / 2`` of the flexible ones
    (``u`` = body-frame twist and modal speeds); gravity ``-g . (m r_c)`` (gravity
    ``grav``, m/s^2, world, when ``use_grav``); spring the strain energies
    ``q^T K q / 2``; p_damper the modal damping ``qd^T D qd``; p_actuator the joint
    forces ``TAU[i] . qd`` plus each spring-damper law's ``(fa - k (q - q0) - c qd) qd``
    (``LI``, ``LF`` as in :func:`flex_loads`, ``FA[i, m]`` the actuator at the state's
    time); p_external zero; plus the terms of the point-load table ``P`` (its values of
    time ``FV[i]`` at the state's time, written into ``PF`` as :func:`flex_loads` does):
    SDA springs, dampers and actuators and the powers of point forces and torques
    (:func:`._nbloops.flex_point_energy`; NaN where an SDA's ends coincide). One
    kinematics pass per state (:func:`._flexkernels.kinematics`); sums in body label
    order."""
    W = FK.FlexWork(*T)
    Ia, Fi, Mm, Vv, R3, P3 = W.Ia, W.Fi, W.Mm, W.Vv, W.R3, W.P3
    Ft, Fw, Im, KD = W.Ft, W.Fw, W.Im, W.KD
    N = Ia.shape[1] - 1
    g = np.zeros(3)
    if use_grav:
        for i in range(3):
            g[i] = grav[i]
    zero3 = np.zeros(3)
    Mb, h = W.Mb, W.Bm[0]
    u = np.empty(Mb.shape[0])
    sb = np.empty(3)
    for s in range(Q.shape[0]):
        q, v = Q[s], V[s]
        FK.kinematics(T, q, v, True)
        ke = 0.0
        gr = 0.0
        spring = 0.0
        damp = 0.0
        for k in range(1, N + 1):
            Rw, rw = R3[K.R_W, k], P3[K.P_W, k]
            nk = Fi[FK.F_NF, k]
            if nk == 0:
                Vk, Ik, mc = Vv[K.V_VEL, k], Mm[K.M_I, k], Vv[K.V_MC, k]
                e = 0.0
                for i in range(6):
                    x = 0.0
                    for j in range(6):
                        x += Ik[i, j] * Vk[j]
                    e += Vk[i] * x
                ke += 0.5 * e
                for i in range(3):  # m r + R (m c), world
                    c = mc[3] * rw[i]
                    for j in range(3):
                        c += Rw[i, j] * mc[j]
                    gr -= g[i] * c
                continue
            fx, mq, mv = Fi[FK.F_FX, k], Fi[FK.F_MQ, k], Fi[FK.F_MV, k]
            qk, qdk = q[mq : mq + nk], v[mv : mv + nk]
            Vb = Fw[k, FK.W_VB]
            FK.ffr_terms(W.Im, W.St, W.Si, W.Pi, KD, fx, nk, qk, qdk, Vb[0:3], Vb[3:6], zero3,
                         Mb, h, W.A3)  # fmt: skip
            mm = 6 + nk
            for i in range(6):
                u[i] = Vb[i]
            for i in range(nk):
                u[6 + i] = qdk[i]
            e = 0.0
            for i in range(mm):
                x = 0.0
                for j in range(mm):
                    x += Mb[i, j] * u[j]
                e += u[i] * x
            ke += 0.5 * e
            # floating frame pose R = Rw RC^T, r = rw - R pC; centre of mass c + St q
            RC, pC = Ft[k, FK.FR_OUT, :, 0:3], Ft[k, FK.FR_OUT, :, 3]
            m = Im[fx, 0]
            for a in range(3):
                x = Im[fx, 1 + a]
                for j in range(nk):
                    x += W.St[fx, a, j] * qk[j]
                sb[a] = x
            for i in range(3):
                Ri0 = Rw[i, 0] * RC[0, 0] + Rw[i, 1] * RC[0, 1] + Rw[i, 2] * RC[0, 2]
                Ri1 = Rw[i, 0] * RC[1, 0] + Rw[i, 1] * RC[1, 1] + Rw[i, 2] * RC[1, 2]
                Ri2 = Rw[i, 0] * RC[2, 0] + Rw[i, 1] * RC[2, 1] + Rw[i, 2] * RC[2, 2]
                ri = rw[i] - (Ri0 * pC[0] + Ri1 * pC[1] + Ri2 * pC[2])
                gr -= g[i] * (m * ri + Ri0 * sb[0] + Ri1 * sb[1] + Ri2 * sb[2])
            for i in range(nk):
                xk = 0.0
                xd = 0.0
                for j in range(nk):
                    xk += KD[fx, 0, i, j] * qk[j]
                    xd += KD[fx, 1, i, j] * qdk[j]
                spring += 0.5 * qk[i] * xk
                damp += qdk[i] * xd
        act = 0.0
        for m in range(LI.shape[0]):
            a = LI[m, 1]
            f = FA[s, m] - LF[m, 0] * (q[LI[m, 0]] - LF[m, 2]) - LF[m, 1] * v[a]
            act += f * v[a]
        for i in range(v.shape[0]):
            act += TAU[s, i] * v[i]
        out[s, 0] = ke
        out[s, 1] = gr
        out[s, 2] = spring
        out[s, 3] = damp
        out[s, 4] = act
        out[s, 5] = 0.0
        PI, PF, PU, PT = P
        for i in range(PT.shape[0]):
            PF[PT[i, 0], PT[i, 1]] = FV[s, i]
        for e in range(PI.shape[0]):
            if flex_point_energy(T, e, PI, PF, PU, q, v, out[s, 2:6]) != 0:
                for i in range(2, 6):
                    out[s, i] = np.nan


@njit(cache=True)
def flex_rk_block(
    T, fargs, tau, ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
    k, t_stop, n_steps, win, stall, Yout, REC, out, i0, QDD, REAC, done, qoff,
):  # fmt: skip
    """:func:`._nbloops.tree_rk_block` of a tree with flexible bodies: up to ``k``
    accepted steps of scipy's RK45 / RK23 / DOP853 on the workspace ``T``
    (:class:`._flexkernels.FlexWork` as a plain tuple) with the right-hand side
    :func:`._nbloops._flex_rhs` (its arguments ``fargs``; joint and modal forces ``tau``
    with the constant joint forces added): the rigid tree's kernel with ``Ib`` None and
    ``fargs`` as its force table, the same arguments, records and stop reasons, no
    energies (they come after the run from :func:`flex_energies`). The quaternions at
    the offsets ``qoff`` of each accepted state are renormalized; accepted step ``j``
    writes the output sample ``i0 + j`` where it is a row of ``QDD``: its joint and modal
    accelerations ``QDD``, joint reactions ``REAC`` (N, N m, joint frames) and ``done``.
    Returns the number of accepted steps."""
    return tree_rk_block(
        None, T, fargs, tau, ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
        A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
        k, t_stop, n_steps, win, stall, Yout, REC, out, i0, QDD, REAC, np.empty((0, 0)),
        done, qoff,
    )  # fmt: skip


@njit(cache=True)
def flex_rk_block_dense(
    T, fargs, tau, ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
    A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
    k, n_steps, win, stall, Yout, REC, out, Kx, A_extra, C_extra, D, F, te, SJ, DN, YS,
    i0, QDD, REAC, done, qoff,
):  # fmt: skip
    """:func:`flex_rk_block` with the output samples at the sorted output times ``te``
    (s) between its steps: the rigid tree's kernel :func:`._nbloops.tree_rk_block_dense`
    on the workspace ``T`` with ``Ib`` None and ``fargs`` (:func:`._nbloops._flex_rhs`'s
    arguments) as its force table (the same arguments, records and stop reasons, no
    energies: those come after the run from :func:`flex_energies`). The steps, DOP853's
    extra stages and each sample are :func:`._nbloops._flex_rhs` evaluations; a sample
    writes its joint and modal accelerations into ``QDD``, its joint reactions (N, N m,
    joint frames) into ``REAC`` and ``done`` (a failed evaluation leaves the row to the
    batch after the run, which meets the failure). Returns the number of accepted
    steps."""
    return tree_rk_block_dense(
        None, T, fargs, tau, ts, y, f, t_bound, direction, max_step, r_tol, a_tol,
        A, B, C, E3, E5, K, safety, min_factor, max_factor, exponent,
        k, n_steps, win, stall, Yout, REC, out, Kx, A_extra, C_extra, D, F, te, SJ, DN, YS,
        i0, QDD, REAC, np.empty((0, 0)), done, qoff,
    )  # fmt: skip


@njit(cache=True)
def flex_momenta(T, Q, V, out):
    """Linear and angular momentum (world axes; angular about the world origin) of the
    states ``Q``, ``V`` (nt, nq), (nt, nv) of a tree with flexible bodies on the workspace
    ``T`` (:class:`._flexkernels.FlexWork` as a plain tuple), the definition of
    :meth:`flexmbd.recursive.RecursiveSystem.momentum`: per state ``out[i] = (p, L)``
    (kg m/s, kg m^2/s), one kinematics pass (:func:`._flexkernels.kinematics`); every
    body's ``h = I V`` (its rigid inertia at ``e_k``, body axes) turned to world axes
    (``p += R h_v``, ``L += R h_w + r x (R h_v)``) in label order, then each flexible
    body's ``M(q) u`` (:func:`._flexkernels.ffr_terms`; ``u`` its floating frame's twist
    and modal speeds) at its floating frame's pose ``R = R_w R_C^T``, ``r = r_w - R p_C``.
    The same sums as the per-state method; the products' rounding may differ from
    numpy's (einsum, BLAS, ``mass_matrix``) in the last bits."""
    W = FK.FlexWork(*T)
    Ia, Fi, Mm, Vv, R3, P3 = W.Ia, W.Fi, W.Mm, W.Vv, W.R3, W.P3
    Ft, Fw = W.Ft, W.Fw
    N = Ia.shape[1] - 1
    zero3 = np.zeros(3)
    Mb, hb = W.Mb, W.Bm[0]
    u = np.empty(Mb.shape[0])
    Mu = np.empty(Mb.shape[0])
    hk, pk, R = np.empty(6), np.empty(3), np.empty((3, 3))
    for s in range(Q.shape[0]):
        q, v = Q[s], V[s]
        FK.kinematics(T, q, v, True)
        p = np.zeros(3)
        L = np.zeros(3)
        for k in range(1, N + 1):
            Rw, rw, Vk, Ik = R3[K.R_W, k], P3[K.P_W, k], Vv[K.V_VEL, k], Mm[K.M_I, k]
            for i in range(6):
                x = 0.0
                for j in range(6):
                    x += Ik[i, j] * Vk[j]
                hk[i] = x
            _add_momentum(Rw, rw, hk, pk, p, L)
        for k in range(1, N + 1):
            nk = Fi[FK.F_NF, k]
            if nk == 0:
                continue
            fx, mq, mv = Fi[FK.F_FX, k], Fi[FK.F_MQ, k], Fi[FK.F_MV, k]
            qk, qdk = q[mq : mq + nk], v[mv : mv + nk]
            Vb = Fw[k, FK.W_VB]
            FK.ffr_terms(W.Im, W.St, W.Si, W.Pi, W.KD, fx, nk, qk, qdk, Vb[0:3], Vb[3:6], zero3,
                         Mb, hb, W.A3)  # fmt: skip
            mm = 6 + nk
            for i in range(6):
                u[i] = Vb[i]
            for i in range(nk):
                u[6 + i] = qdk[i]
            for i in range(6):
                x = 0.0
                for j in range(mm):
                    x += Mb[i, j] * u[j]
                Mu[i] = x
            Rw, rw = R3[K.R_W, k], P3[K.P_W, k]
            RC, pC = Ft[k, FK.FR_OUT, :, 0:3], Ft[k, FK.FR_OUT, :, 3]
            for i in range(3):  # R = Rw RC^T
                for j in range(3):
                    R[i, j] = Rw[i, 0] * RC[j, 0] + Rw[i, 1] * RC[j, 1] + Rw[i, 2] * RC[j, 2]
            r = np.empty(3)
            for i in range(3):
                r[i] = rw[i] - (R[i, 0] * pC[0] + R[i, 1] * pC[1] + R[i, 2] * pC[2])
            _add_momentum(R, r, Mu, pk, p, L)
        for i in range(3):
            out[s, i] = p[i]
            out[s, 3 + i] = L[i]


@njit(cache=True, inline="always")
def _add_momentum(R, r, h, pk, p, L):
    """``p += R h[3:]``, ``L += R h[:3] + r x (R h[3:])``: a body's momentum ``h``
    (angular, linear; body axes) at the pose ``(R, r)`` added to the world sums."""
    for i in range(3):
        pk[i] = R[i, 0] * h[3] + R[i, 1] * h[4] + R[i, 2] * h[5]
    for i in range(3):
        a, b = (i + 1) % 3, (i + 2) % 3
        L[i] += (R[i, 0] * h[0] + R[i, 1] * h[1] + R[i, 2] * h[2]) + (r[a] * pk[b] - r[b] * pk[a])
        p[i] += pk[i]


@njit(cache=True)
def flex_frame_history(T, Q, v, labels, Rout, rout):
    """World poses of the tree frames ``e_k`` of the bodies ``labels`` over the states
    ``Q`` (nt, nq) at the speeds ``v`` (nv,), on the workspace ``T``
    (:class:`._flexkernels.FlexWork` as a plain tuple): ``Rout[j, i]`` (3, 3) and
    ``rout[j, i]`` (3,) (m, world) of label ``labels[j]`` at state ``i``, from one
    :func:`._flexkernels.kinematics` pass per state (the values the per-state kinematics
    leaves in the workspace)."""
    W = FK.FlexWork(*T)
    R3, P3 = W.R3, W.P3
    for i in range(Q.shape[0]):
        FK.kinematics(T, Q[i], v, True)
        for j in range(labels.shape[0]):
            k = labels[j]
            for a in range(3):
                rout[j, i, a] = P3[K.P_W, k, a]
                for b in range(3):
                    Rout[j, i, a, b] = R3[K.R_W, k, a, b]
