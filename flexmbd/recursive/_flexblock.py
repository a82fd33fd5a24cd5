"""Compiled fixed-step RK4 of trees with flexible bodies: output intervals in one call.

:func:`flex_rk4_block` is the flexible counterpart of the rigid
:func:`._nbloops.tree_rk4_block`: the classical RK4 stages of
:class:`flexmbd.integrators.explicit.TreeStepper` around the serialized CFA with flexible
bodies (:func:`._flexkernels.forward_dynamics`, geometric stiffening iterated in it), with
the loads the Python path (:meth:`flexmbd.recursive.RecursiveSystem.qdd`) applies per
evaluation when they are gravity, constant joint and modal forces ``tau`` and joint
spring-damper laws (:meth:`flexmbd.JointForce.spring_damper`; their actuator terms, which
are functions of time, tabulated by the caller on the stage times). Every operation is
the Python path's, in its order: the same bits (tests/recursive/test_flexible_rk4.py).
"""

import numpy as np

from .._jit import njit
from . import _flexkernels as FK
from . import _kernels as K
from ._nbloops import _interval_end, _rk4_stage_state, _rk4_update, unit_quaternions


@njit(cache=True, _nrt=False)
def flex_loads(T, tau, LI, LF, FA, row, MI, q, v):
    """The joint and modal forces of one evaluation into the workspace ``T``
    (:class:`._flexkernels.FlexWork` as a plain tuple), as
    :meth:`flexmbd.recursive.RecursiveSystem.qdd` applies them: ``tau`` (joint and modal
    speeds, N, N m, modal forces) plus each spring-damper law ``m`` (joint coordinate and
    speed indices ``LI[m]``; stiffness, damping, rest coordinate ``LF[m]``; actuator
    value ``FA[row, m]``, N or N m): ``tau[v] += fa - k (q - q0) - c qd``, in the order of
    the laws, into row ``J_TAU`` of ``Jv``; the modal entries ``tau[MI[p, 2]]`` into the
    applied modal forces of label ``MI[p, 0]``, mode ``MI[p, 1]`` (all zero when every such
    entry is zero); the applied body wrenches cleared."""
    W = FK.FlexWork(*T)
    Jv, Fm, Vv = W.Jv, W.Fm, W.Vv
    fext = Vv[K.V_FEXT]
    for k in range(fext.shape[0]):
        for i in range(6):
            fext[k, i] = 0.0
    for k in range(Fm.shape[0]):
        for i in range(Fm.shape[2]):
            Fm[k, FK.FM_QAPP, i] = 0.0
    for i in range(Jv.shape[1]):
        Jv[K.J_TAU, i] = 0.0
    for i in range(tau.shape[0]):
        Jv[K.J_TAU, i] = tau[i]
    for m in range(LI.shape[0]):
        a = LI[m, 1]
        Jv[K.J_TAU, a] += FA[row, m] - LF[m, 0] * (q[LI[m, 0]] - LF[m, 2]) - LF[m, 1] * v[a]
    nonzero = False
    for p in range(MI.shape[0]):
        if Jv[K.J_TAU, MI[p, 2]] != 0.0:
            nonzero = True
    if nonzero:
        for p in range(MI.shape[0]):
            Fm[MI[p, 0], FK.FM_QAPP, MI[p, 1]] += Jv[K.J_TAU, MI[p, 2]]


@njit(cache=True)
def flex_rk4_block(
    T, grav, use_grav, any_stiff, tol, max_iter, info, y, h, substeps, n_int, tau, LI, LF, FA,
    MI, modal, qoff, i0, QDD, REAC, done, Yout,
):  # fmt: skip
    """Up to ``n_int`` output intervals of ``substeps`` classical RK4 steps of a tree with
    flexible bodies from ``y = (q, v)`` in place (joint and modal coordinates and speeds,
    SI), in one call on the workspace ``T`` (:class:`._flexkernels.FlexWork` as a plain
    tuple). Each evaluation: the loads of :func:`flex_loads` (``FA[3 (j substeps + sub)
    + c, m]`` the actuator of law ``m`` at the start (c = 0), middle (1) and end (2) of
    substep ``sub`` of interval ``j``), then :func:`._flexkernels.forward_dynamics`
    (gravity ``grav`` (m/s^2, world) with ``use_grav``; stiffening iterations with
    ``any_stiff`` to relative tolerance ``tol``, at most ``max_iter``; their count into
    ``info[0]``). ``q' = qdot(q, v)``: :func:`._kernels.qdot_all` for the joints, the
    modal speeds for the modal coordinates (``modal[b] = (q offset, v offset, modes)``
    of each flexible body); the quaternions at the offsets ``qoff`` renormalized at the
    end of each interval (:func:`._nbloops.unit_quaternions`), as
    :class:`flexmbd.integrators.explicit.TreeStepper` does. The first stage of interval
    ``j`` is the output sample ``i0 + j``: its ``QDD`` (joint and modal accelerations),
    joint reactions ``REAC`` (N, N m, joint frames) and ``done`` rows (none past their
    end); the state at the interval's end goes to ``Yout[j]``. Stops before an interval
    whose solve fails (a status of :func:`._flexkernels.forward_dynamics`) or whose end
    state is not finite (``y`` is then that interval's start). Returns the number of
    intervals done."""
    W = FK.FlexWork(*T)
    Jv = W.Jv
    n = y.shape[0]
    nv = QDD.shape[1]
    nq = n - nv
    y0 = np.empty(n)
    ks = np.empty((4, n))
    yy = np.empty(n)
    rates = np.empty(nq)
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
                q, v = yy[:nq], yy[nq:]
                flex_loads(T, tau, LI, LF, FA, row, MI, q, v)
                sample = s == 0 and sub == 0 and r < QDD.shape[0]
                rr = REAC[r] if sample else reac
                st = FK.forward_dynamics(
                    T, q, v, grav, use_grav, rr, any_stiff, tol, max_iter, info
                )
                if st != 0:
                    ok = False
                    break
                if sample:
                    for i in range(nv):
                        QDD[r, i] = Jv[K.J_QDD, i]
                    done[r] = True
                K.qdot_all(W.Ia, W.Vv, q, v, rates)
                for b in range(modal.shape[0]):
                    for i in range(modal[b, 2]):
                        rates[modal[b, 0] + i] = v[modal[b, 1] + i]
                for i in range(nq):
                    ks[s, i] = rates[i]
                for i in range(nv):
                    ks[s, nq + i] = Jv[K.J_QDD, i]
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
