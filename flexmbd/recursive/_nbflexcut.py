"""Compiled cut joints of closed loops through flexible bodies (numba).

The equations of :class:`flexmbd.recursive.loops._FlexCutConstraints` (its ``_eval_py``
is the reference) and the wrenches of its cut joints applied through the frames that
carry them (:meth:`flexmbd.recursive.flexible.FlexTree.frame_wrench` is the reference),
each in one allocation-free call on the flexible tree's own workspace (a
:class:`._flexkernels.FlexWork` as a plain tuple).

A *side* is one frame of a cut joint (``2 c``: the parent frame of cut joint ``c`` on its
parent body, ``2 c + 1``: the child frame on its child body). Per side, the int row
``sI[s]`` (``SI_*`` columns: kind, label ``k``, modes ``n``, first modal coordinate, first
modal speed, first stiffening row of its stiffened interface or -1, constants index
``fx``) and the frame constants ``sC[s, 0]`` (3, 4 + 2 nmax):

* kind ``S_GROUND``: the frame's world pose ``[R | p]``;
* ``S_RIGID``: its pose ``[R_e | p_e]`` in the tree frame ``e_k`` of body ``k``;
* ``S_FLEX``: ``[R0 | p0 | Theta | U]`` in the floating frame of flexible body ``k``
  (:func:`flexmbd.recursive.flexible.frame_constants`; zero modes for a frame that does not
  deform), read by :func:`._flexkernels.frame_state` (its state into ``sFt[s]``, ``sFs[s]``).

The twist of a frame is linear in the joint and modal speeds. Its columns (world axes, at
the world origin) come from the one kinematics pass at the state
(:func:`._flexkernels.kinematics`: world poses, ``Psi_k^T``, ``S_C``), by one sweep from
the frame's body up its path (:func:`_side_columns`); the rows are the rigid loops'
(:func:`flexmbd.constraints._nbloop.cut_rows`).
"""

import numpy as np

from .._jit import njit
from ..constraints._nbloop import cut_rows
from . import _flexkernels as FK
from . import _nbloops as NL
from . import _nbsingle as NS
from ._kernels import I_NV, I_PARENT, I_VO, P_W, R_W, V_AB, V_FEXT, V_VEL, _m2c, joint_twist

S_GROUND, S_RIGID, S_FLEX = 0, 1, 2
#: columns of the side table ``sI``
(SI_KIND, SI_K, SI_N, SI_MQ, SI_MV, SI_KG, SI_FX) = range(7)
NSI = 7
#: rows of the 6-vector scratch ``w6``
W6_V, W6_A, W6_S, W6_T, W6_B, W6_BSP, W6_VREL, W6_WF = range(8)
NW6 = 8
#: the loop-aware stiffening's tolerance (relative to ``1 + max |qdd|``) and fixed-point
#: steps (:meth:`flexmbd.recursive.loops.LoopSystem._loop_stiffening`'s defaults)
LOOP_STIFF_TOL, LOOP_STIFF_ITER = 1e-10, 8
#: status of :func:`flex_loop_accelerations`: the stiffening's affine solve met a
#: singular Jacobian (the Python path's least squares decides)
STIFF_SINGULAR = -5


@njit(cache=True, inline="always")
def _body_frame(R3, P3, Ft, k, Rb, rb):
    """Floating frame ``(Rb, rb)`` (world) of flexible body ``k`` from the world pose of
    its tree frame e_k (:meth:`flexmbd.recursive.flexible.FlexTree.body_pose`)."""
    Rk = R3[R_W, k]
    rk = P3[P_W, k]
    RC = Ft[k, FK.FR_OUT, :, 0:3]
    pC = Ft[k, FK.FR_OUT, :, 3]
    for i in range(3):
        for j in range(3):
            Rb[i, j] = Rk[i, 0] * RC[j, 0] + Rk[i, 1] * RC[j, 1] + Rk[i, 2] * RC[j, 2]
    for i in range(3):
        rb[i] = rk[i] - (Rb[i, 0] * pC[0] + Rb[i, 1] * pC[1] + Rb[i, 2] * pC[2])


@njit(cache=True, inline="always")
def _side_pose(R3, P3, Ft, s, sI, sC, sFt, Rb, rb, R, p):
    """World pose ``(R, p)`` of side ``s`` (after a kinematics pass with world poses and,
    for a flexible side, its frame state in ``sFt[s]``)."""
    kind = sI[s, SI_KIND]
    C = sC[s, 0]
    if kind == S_GROUND:
        for i in range(3):
            for j in range(3):
                R[i, j] = C[i, j]
            p[i] = C[i, 3]
        return
    k = sI[s, SI_K]
    if kind == S_RIGID:
        Rk = R3[R_W, k]
        rk = P3[P_W, k]
        for i in range(3):
            for j in range(3):
                R[i, j] = Rk[i, 0] * C[0, j] + Rk[i, 1] * C[1, j] + Rk[i, 2] * C[2, j]
            p[i] = rk[i] + (Rk[i, 0] * C[0, 3] + Rk[i, 1] * C[1, 3] + Rk[i, 2] * C[2, 3])
        return
    _body_frame(R3, P3, Ft, k, Rb, rb)
    RF = sFt[s, 0, :, 0:3]
    pF = sFt[s, 0, :, 3]
    for i in range(3):
        for j in range(3):
            R[i, j] = Rb[i, 0] * RF[0, j] + Rb[i, 1] * RF[1, j] + Rb[i, 2] * RF[2, j]
        p[i] = rb[i] + (Rb[i, 0] * pF[0] + Rb[i, 1] * pF[1] + Rb[i, 2] * pF[2])


@njit(cache=True, inline="always")
def _side_twist(Vv, Fw, s, sI, sC, sFt, sFs, u, bias, w6):
    """Twist ``w6[W6_V]`` (frame axes) of side ``s`` at the speeds ``u`` of the last
    kinematics pass, with ``bias`` also its bias acceleration ``w6[W6_A]``: a rigid body's
    frame moves with e_k, a flexible body's deforms (twist ``Phi_F^T V_b + S_F qd``, bias
    ``Phi_F^T a_b + V_F x^ (S_F qd) + sigma_F``, :mod:`flexmbd.recursive.flexible`
    section 1). False for a ground side (no motion)."""
    kind = sI[s, SI_KIND]
    if kind == S_GROUND:
        return False
    k = sI[s, SI_K]
    V = w6[W6_V]
    a = w6[W6_A]
    if kind == S_RIGID:
        C = sC[s, 0]
        _m2c(C[:, 0:3], C[:, 3], Vv[V_VEL, k], V)
        if bias:
            _m2c(C[:, 0:3], C[:, 3], Vv[V_AB, k], a)
        return True
    n, mv = sI[s, SI_N], sI[s, SI_MV]
    RF = sFt[s, 0, :, 0:3]
    pF = sFt[s, 0, :, 3]
    S = sFs[s, 0]
    Sq = w6[W6_S]
    _m2c(RF, pF, Fw[k, FK.W_VB], V)
    FK._smul(S, n, u[mv : mv + n], Sq)
    for i in range(6):
        V[i] += Sq[i]
    if bias:
        _m2c(RF, pF, Fw[k, FK.W_ABB], a)
        FK._crm_add(V, Sq, a, 1.0)
        for i in range(6):
            a[i] += S[i, n]
    return True


@njit(cache=True, inline="always")
def _world_twist(R, p, V, vo, out):
    """``out[0:3]`` = ``R V_w`` (angular velocity), ``out[3:6]`` = ``R V_v - w x p`` (the
    velocity of the frame point at the world origin); ``vo`` receives ``R V_v``."""
    for i in range(3):
        out[i] = R[i, 0] * V[0] + R[i, 1] * V[1] + R[i, 2] * V[2]
        vo[i] = R[i, 0] * V[3] + R[i, 1] * V[4] + R[i, 2] * V[5]
    out[3] = vo[0] - (out[1] * p[2] - out[2] * p[1])
    out[4] = vo[1] - (out[2] * p[0] - out[0] * p[2])
    out[5] = vo[2] - (out[0] * p[1] - out[1] * p[0])


@njit(cache=True, inline="always")
def _world_bias(R, p, V, a, w, vo, out):
    """World bias accelerations of a frame with pose ``(R, p)``, twist ``V`` and bias
    ``a`` (frame axes): ``out[0:3]`` angular, ``out[3:6]`` of the frame point at the world
    origin (classical acceleration of the frame origin ``R (a_v + V_w x V_v)`` minus
    ``alpha x p + w x vo``)."""
    c0 = a[3] + (V[1] * V[5] - V[2] * V[4])
    c1 = a[4] + (V[2] * V[3] - V[0] * V[5])
    c2 = a[5] + (V[0] * V[4] - V[1] * V[3])
    for i in range(3):
        out[i] = R[i, 0] * a[0] + R[i, 1] * a[1] + R[i, 2] * a[2]
    for i in range(3):
        out[3 + i] = R[i, 0] * c0 + R[i, 1] * c1 + R[i, 2] * c2
    out[3] -= (out[1] * p[2] - out[2] * p[1]) + (w[1] * vo[2] - w[2] * vo[1])
    out[4] -= (out[2] * p[0] - out[0] * p[2]) + (w[2] * vo[0] - w[0] * vo[2])
    out[5] -= (out[0] * p[1] - out[1] * p[0]) + (w[0] * vo[1] - w[1] * vo[0])


@njit(cache=True, inline="always")
def _side_columns(W, s, top, sI, sFs, Rw, pw, e, w6, Jc):
    """The twist columns ``Jc[:, i] = d(w, vO)/d v_i`` (world axes, :func:`_world_twist`)
    of side ``s`` (world pose ``Rw[s]``, ``pw[s]``) for the speeds on its path up to the
    label ``top`` (excluded), after the kinematics pass at the state with world poses.

    The twist of ``e_j`` is ``V_j = Phi_j^T V_p + Psi_j^T qd_p + S_j v_j``
    (:func:`._flexkernels._kinematics`), so in world axes
    ``V_j^W = V_p^W + Ad_j (S_j v_j + Psi_j^T qd_p)`` with ``Ad_j`` the transform of ``e_j``'s
    world pose: the columns of the joint speeds ``v_j`` are ``Ad_j S_j`` (the subspace by
    :func:`._kernels.joint_twist` of the unit speeds, ``e``: zeros (nv,), left zero), those of a
    flexible parent's modal speeds ``Ad_j Psi_j^T``. A flexible side's twist is
    ``X_F V_b + S_F qd_k`` with ``V_b = X_C^-1 (V_k - S_C qd_k)`` (:func:`_side_twist`):
    its own modal columns are ``Ad_F S_F - Ad_k S_C``. A rigid side moves with ``e_k``."""
    kind = sI[s, SI_KIND]
    if kind == S_GROUND:
        return
    k = sI[s, SI_K]
    V = w6[W6_V]
    col = w6[W6_B]
    vo = w6[W6_T]
    if kind == S_FLEX:
        n, mv = sI[s, SI_N], sI[s, SI_MV]
        S = sFs[s, 0]
        SC = W.Fs[k, FK.FR_OUT]
        cC = w6[W6_A]
        for a in range(n):
            for r in range(6):
                V[r] = S[r, a]
            _world_twist(Rw[s], pw[s], V, vo, col)
            for r in range(6):
                V[r] = SC[r, a]
            _world_twist(W.R3[R_W, k], W.P3[P_W, k], V, vo, cC)
            for r in range(6):
                Jc[r, mv + a] = col[r] - cC[r]
    Fi = W.Fi
    j = k
    while j != top:
        p = W.Ia[I_PARENT, j]
        nvj, o = W.Ia[I_NV, j], W.Ia[I_VO, j]
        Rj = W.R3[R_W, j]
        pj = W.P3[P_W, j]
        for a in range(nvj):
            e[o + a] = 1.0
            joint_twist(W.Ia, W.Mm, j, e[o : o + nvj], w6[W6_S], V)
            e[o + a] = 0.0
            _world_twist(Rj, pj, V, vo, col)
            for r in range(6):
                Jc[r, o + a] = col[r]
        npk = Fi[FK.F_NF, p]
        if npk > 0:
            PT = W.PsiT[j]
            mvp = Fi[FK.F_MV, p]
            for a in range(npk):
                for r in range(6):
                    V[r] = PT[r, a]
                _world_twist(Rj, pj, V, vo, col)
                for r in range(6):
                    Jc[r, mvp + a] = col[r]
        j = p


@njit(cache=True, _nrt=False)
def flex_cuts_eval(T, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, q, v, with_v, work, out):
    """Rows of every cut joint of a loop through flexible bodies at ``(q, v)`` (the
    compiled :meth:`flexmbd.recursive.loops._FlexCutConstraints._eval_py`).

    ``T``: the flexible tree's workspace tuple; ``sI``, ``sC``, ``sFt``, ``sFs``: the side
    table (module doc); ``cI[c] = (first row, translation rows, rotation rows, first E row,
    first F/G row)`` and the packed row constants ``E``, ``F``, ``G`` of
    :mod:`flexmbd.constraints.cut`; ``pspeeds``: the speeds that move a cut frame (the
    columns of ``J`` that can be nonzero);
    ``v`` the speeds (zeros without ``with_v``: then no bias, gamma untouched).
    ``work = (e (nv,), Jw (2 nc, 6, nv), Jrel (6, nv), w6 (NW6, 6), w3 (12, 3), RtF
    (>= rotation rows, 3), Rb (3, 3), rb (3,), zero (3,))`` scratch; ``out = (phi (m,),
    J (m, nv), gamma (m,), Rs (nc, 3, 3), ds (nc, 3), Vrel (nc, 6), D (rows, 6), Rw
    (2 nc, 3, 3), pw (2 nc, 3), Mw (2 nc, 4, 3))`` written in place: the rows, per cut
    joint ``R``, ``d``, ``V_rel`` and the constraint directions of :meth:`CutJointConstraints
    ._cut_rows`, per side its world pose and ``(w, vO, alpha, aO)``. The tree workspace is
    left at ``(q, v)`` with world poses."""
    _cuts_eval(T, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, q, v, with_v, work, out, True)


@njit(cache=True, inline="always")
def _cuts_eval(T, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, q, v, with_v, work, out, kin):
    """:func:`flex_cuts_eval`; without ``kin`` on the kinematics at ``(q, v)`` with world
    poses that the workspace holds (a forward-dynamics pass at ``(q, v)``: its bias pass,
    factorization, solves and reactions leave the kinematic rows as they are)."""
    e, Jw, Jrel, w6, w3, RtF, Rb, rb, z3 = work
    phi, J, gamma, Rs, ds, Vrel, D, Rw, pw, Mw = out
    W = FK.FlexWork(*T)
    ns = sI.shape[0]
    nv = Jw.shape[2]
    # frame states of the flexible sides (their modal twist matrices depend on q only)
    for s in range(ns):
        if sI[s, SI_KIND] == S_FLEX:
            n, mq, mv = sI[s, SI_N], sI[s, SI_MQ], sI[s, SI_MV]
            FK.frame_state(sC, s, 0, n, q[mq : mq + n], v[mv : mv + n], sFt, sFs)
    # the state itself: poses, twists, biases (and every e_k's world pose, Psi_k^T, S_C)
    if kin:
        FK.kinematics(T, q, v, True)
    vo = w6[W6_T]
    col = w6[W6_B]
    for s in range(ns):
        R = Rw[s]
        p = pw[s]
        _side_pose(W.R3, W.P3, W.Ft, s, sI, sC, sFt, Rb, rb, R, p)
        Ms = Mw[s]
        for r in range(4):
            for i in range(3):
                Ms[r, i] = 0.0
        if _side_twist(W.Vv, W.Fw, s, sI, sC, sFt, sFs, v, with_v, w6):
            _world_twist(R, p, w6[W6_V], vo, col)
            for i in range(3):
                Ms[0, i] = col[i]
                Ms[1, i] = col[3 + i]
            if with_v:
                _world_bias(R, p, w6[W6_V], w6[W6_A], Ms[0], vo, col)
                for i in range(3):
                    Ms[2, i] = col[i]
                    Ms[3, i] = col[3 + i]
    # the twist columns (world axes) of the speeds that move a cut frame: each side's along
    # its path up to the cut joint's common ancestor (the speeds above it move both frames
    # alike and drop out of J_rel; the columns of other cut joints' paths stay zero)
    for j in range(nv):
        e[j] = 0.0
    for s in range(ns):
        for t in range(pspeeds.shape[0]):
            i = pspeeds[t]
            for r in range(6):
                Jw[s, r, i] = 0.0
    Ia = W.Ia
    for c in range(cI.shape[0]):
        a = sI[2 * c, SI_K] if sI[2 * c, SI_KIND] != S_GROUND else 0
        b = sI[2 * c + 1, SI_K] if sI[2 * c + 1, SI_KIND] != S_GROUND else 0
        while a != b:  # regular labels: a parent's label is below its children's
            if a > b:
                a = Ia[I_PARENT, a]
            else:
                b = Ia[I_PARENT, b]
        _side_columns(W, 2 * c, a, sI, sFs, Rw, pw, e, w6, Jw[2 * c])
        _side_columns(W, 2 * c + 1, a, sI, sFs, Rw, pw, e, w6, Jw[2 * c + 1])
    for r in range(6):
        for j in range(nv):
            Jrel[r, j] = 0.0
    bsp = w6[W6_BSP]
    for c in range(cI.shape[0]):
        r0, nt, nr, eo, go = cI[c, 0], cI[c, 1], cI[c, 2], cI[c, 3], cI[c, 4]
        sp, sc = 2 * c, 2 * c + 1
        Rc = Rw[sc]
        pc = pw[sc]
        # J_rel: the relative twist columns in the child frame's axes at its origin
        for t in range(pspeeds.shape[0]):
            j = pspeeds[t]
            d0 = Jw[sc, 0, j] - Jw[sp, 0, j]
            d1 = Jw[sc, 1, j] - Jw[sp, 1, j]
            d2 = Jw[sc, 2, j] - Jw[sp, 2, j]
            l0 = Jw[sc, 3, j] - Jw[sp, 3, j] - (pc[1] * d2 - pc[2] * d1)
            l1 = Jw[sc, 4, j] - Jw[sp, 4, j] - (pc[2] * d0 - pc[0] * d2)
            l2 = Jw[sc, 5, j] - Jw[sp, 5, j] - (pc[0] * d1 - pc[1] * d0)
            for r in range(3):
                Jrel[r, j] = Rc[0, r] * d0 + Rc[1, r] * d1 + Rc[2, r] * d2
                Jrel[3 + r, j] = Rc[0, r] * l0 + Rc[1, r] * l1 + Rc[2, r] * l2
        MP = Mw[sp]
        MC = Mw[sc]
        for i in range(3):
            bsp[i] = MC[2, i] - MP[2, i]
            bsp[3 + i] = MC[3, i] - MP[3, i]
        m = nt + nr
        cut_rows(
            E[eo : eo + nt], F[go : go + nr], G[go : go + nr], Rw[sp], pw[sp], Rc, pc, Jrel,
            bsp, with_v, MP[0], MP[1], MC[0], MC[1], phi[r0 : r0 + m], J[r0 : r0 + m],
            gamma[r0 : r0 + m], Rs[c], ds[c], Vrel[c], D[r0 : r0 + m], w3, RtF, w6[W6_VREL],
        )  # fmt: skip


@njit(cache=True, _nrt=False)
def flex_frame_wrenches(T, sI, sC, sFt, sFs, q, items, zq, w6, Rb, rb, fext):
    """Apply cut-joint wrenches through the frames that carry them (the compiled
    :meth:`flexmbd.recursive.flexible.FlexTree.frame_wrench` and its rigid-body branch)
    after a kinematics pass with world poses: ``items[i] = (side, point (3), n (3), f
    (3))``, a moment ``n`` about the world ``point`` and a force ``f`` (world axes). A
    rigid body's wrench goes into ``fext`` (e_k axes about its origin); a flexible body's
    generalized force ``[Phi_F w_F; S_F^T w_F]`` into ``fext`` (body axes, about the body
    origin) and the applied modal forces, plus ``-K_G(w_F) q`` through a stiffened
    interface. ``zq``: zeros (nmax,) (frame states at zero modal rates)."""
    W = FK.FlexWork(*T)
    wF = w6[W6_WF]
    t3 = w6[W6_T]
    for it in range(items.shape[0]):
        s = int(items[it, 0])
        pt = items[it, 1:4]
        nn = items[it, 4:7]
        f = items[it, 7:10]
        kind = sI[s, SI_KIND]
        if kind == S_GROUND:
            continue
        k = sI[s, SI_K]
        if kind == S_RIGID:
            Rk = W.R3[R_W, k]
            rk = W.P3[P_W, k]
            d0, d1, d2 = pt[0] - rk[0], pt[1] - rk[1], pt[2] - rk[2]
            t3[0] = nn[0] + (d1 * f[2] - d2 * f[1])
            t3[1] = nn[1] + (d2 * f[0] - d0 * f[2])
            t3[2] = nn[2] + (d0 * f[1] - d1 * f[0])
            for i in range(3):
                fext[k, i] += Rk[0, i] * t3[0] + Rk[1, i] * t3[1] + Rk[2, i] * t3[2]
            for i in range(3):
                fext[k, 3 + i] += Rk[0, i] * f[0] + Rk[1, i] * f[1] + Rk[2, i] * f[2]
            continue
        n, mq = sI[s, SI_N], sI[s, SI_MQ]
        qk = q[mq : mq + n]
        FK.frame_state(sC, s, 0, n, qk, zq[:n], sFt, sFs)
        RF = sFt[s, 0, :, 0:3]
        pF = sFt[s, 0, :, 3]
        S = sFs[s, 0]
        _body_frame(W.R3, W.P3, W.Ft, k, Rb, rb)
        # the moment about the frame origin p_w = r_b + R_b p_F
        for i in range(3):
            t3[i] = pt[i] - (rb[i] + (Rb[i, 0] * pF[0] + Rb[i, 1] * pF[1] + Rb[i, 2] * pF[2]))
        m0 = nn[0] + (t3[1] * f[2] - t3[2] * f[1])
        m1 = nn[1] + (t3[2] * f[0] - t3[0] * f[2])
        m2 = nn[2] + (t3[0] * f[1] - t3[1] * f[0])
        # w_F = [R_F^T R_b^T n_F; R_F^T R_b^T f] (frame axes)
        for i in range(3):
            t3[i] = Rb[0, i] * m0 + Rb[1, i] * m1 + Rb[2, i] * m2
        for i in range(3):
            wF[i] = RF[0, i] * t3[0] + RF[1, i] * t3[1] + RF[2, i] * t3[2]
        for i in range(3):
            t3[i] = Rb[0, i] * f[0] + Rb[1, i] * f[1] + Rb[2, i] * f[2]
        for i in range(3):
            wF[3 + i] = RF[0, i] * t3[0] + RF[1, i] * t3[1] + RF[2, i] * t3[2]
        # body axes: f_b = R_F w_f, n_b = R_F w_n (about the frame origin)
        wb = w6[W6_B]
        for i in range(3):
            wb[i] = RF[i, 0] * wF[0] + RF[i, 1] * wF[1] + RF[i, 2] * wF[2]
            wb[3 + i] = RF[i, 0] * wF[3] + RF[i, 1] * wF[4] + RF[i, 2] * wF[5]
        fext[k, 0] += wb[0] + (pF[1] * wb[5] - pF[2] * wb[4])
        fext[k, 1] += wb[1] + (pF[2] * wb[3] - pF[0] * wb[5])
        fext[k, 2] += wb[2] + (pF[0] * wb[4] - pF[1] * wb[3])
        for i in range(3):
            fext[k, 3 + i] += wb[3 + i]
        Qa = W.Fm[k, FK.FM_QAPP]
        for j in range(n):
            acc = 0.0
            for r in range(6):
                acc += S[r, j] * wF[r]
            Qa[j] += acc
        b0 = sI[s, SI_KG]
        if b0 >= 0:
            # through a stiffened interface: -K_G(w_b) q (stiffening_forces' interface term)
            KG = W.KG[sI[s, SI_FX]]
            for r in range(n):
                acc = 0.0
                for j in range(n):
                    kg = 0.0
                    for c in range(6):
                        kg += wb[c] * KG[b0 + c, r, j]
                    acc += kg * qk[j]
                Qa[r] -= acc


@njit(cache=True, inline="always")
def cut_items(cI, D, Rw, pw, lam, cutf, items):
    """The cut joints' wrenches ``cutf[c] = D_c^T lam_c`` (N m, N; child joint-frame axes
    at its origin) of the multipliers ``lam`` and their pairs on the cut frames as
    :func:`flex_frame_wrenches` items (``items[2 c]`` on the child side, ``items[2 c + 1]``
    the opposite on the parent side, at the child frame's origin, world axes), from the
    rows ``D`` and the side poses ``Rw``, ``pw`` of :func:`flex_cuts_eval`."""
    for c in range(cI.shape[0]):
        r0, m = cI[c, 0], cI[c, 1] + cI[c, 2]
        for a in range(6):
            s = 0.0
            for k in range(m):
                s += D[r0 + k, a] * lam[r0 + k]
            cutf[c, a] = s
        Rc = Rw[2 * c + 1]
        pc = pw[2 * c + 1]
        for side in range(2):
            it = items[2 * c + side]
            sg = 1.0 if side == 0 else -1.0
            it[0] = 2 * c + 1 - side
            for a in range(3):
                it[1 + a] = pc[a]
                it[4 + a] = sg * (
                    Rc[a, 0] * cutf[c, 0] + Rc[a, 1] * cutf[c, 1] + Rc[a, 2] * cutf[c, 2]
                )
                it[7 + a] = sg * (
                    Rc[a, 0] * cutf[c, 3] + Rc[a, 1] * cutf[c, 4] + Rc[a, 2] * cutf[c, 5]
                )


@njit(cache=True)
def _stiff_g(ga, lam_in, qn, dl, factored):
    """``g(lam_in)`` of :meth:`flexmbd.recursive.loops.LoopSystem._loop_stiffening`: the
    stiffened tree solved with the cut-joint wrenches of ``lam_in`` applied
    (:func:`cut_items`, :func:`flex_frame_wrenches`, :func:`._nbsingle.flex_forward_dynamics`
    with its stiffening), then projected on the rows ``sel`` (the factor ``A`` of
    :func:`flex_loop_accelerations`): the accelerations ``qn`` (nv,) and the multiplier
    correction ``dl`` (m,). ``ga``: :func:`flex_loop_stiffening`'s arguments ``T`` ...
    ``sw`` as a tuple. The workspace must hold world poses at ``q``; with ``factored``
    also the kinematics at ``(q, v)`` and the factorization at ``q`` (after
    :func:`flex_loop_accelerations`' solves and every ``g``): the tree solve is then
    :func:`._nbsingle.flex_factored_dynamics` (the same values without the kinematics
    pass and factorization). Returns the tree solve's status."""
    (T, MI, grav, use_grav, reac, tol, max_iter, info, q, v, tau, sel, sI, sC, sFt, sFs, cI,
     out, acc, C, Y, A, b, x, r, sw) = ga  # fmt: skip
    items, zq, w6, Rb, rb, cutf = sw[0], sw[1], sw[2], sw[3], sw[4], sw[5]
    gamma, D, Rw, pw = out[2], out[6], out[7], out[8]
    W = FK.FlexWork(*T)
    fext = W.Vv[V_FEXT]
    cut_items(cI, D, Rw, pw, lam_in, cutf, items)
    for k in range(fext.shape[0]):
        for a in range(6):
            fext[k, a] = 0.0
    NS._clear_applied(W.Fm)
    flex_frame_wrenches(T, sI, sC, sFt, sFs, q, items, zq, w6, Rb, rb, fext)
    if factored:
        st = NS.flex_factored_dynamics(
            T, q, v, tau, MI, grav, use_grav, reac, True, tol, max_iter, info, qn, acc, False,
            False,
        )  # fmt: skip
    else:
        st = NS.flex_forward_dynamics(
            T, q, v, tau, MI, grav, use_grav, reac, True, tol, max_iter, info, qn, acc, False,
            False,
        )  # fmt: skip
    for k in range(fext.shape[0]):
        for a in range(6):
            fext[k, a] = 0.0
    if st != 0:
        return st
    k = sel.shape[0]
    for a in range(k):
        b[a] = gamma[sel[a]]
    NL._refined_solve(C, Y, A, b, qn, x, r, k, qn.shape[0])
    for i in range(dl.shape[0]):
        dl[i] = 0.0
    for a in range(k):
        dl[sel[a]] = x[a]
    return 0


@njit(cache=True, inline="always")
def _max_change(x, y):
    """``max |x - y|``."""
    d = 0.0
    for i in range(x.shape[0]):
        d = max(d, abs(x[i] - y[i]))
    return d


@njit(cache=True)
def _lu_solve(G, x, n):
    """The solution ``y`` of ``G[:n, :n] y = x[:n]`` into ``x`` by Gaussian elimination
    with partial pivoting (``G`` overwritten); False where a pivot is below ``n eps`` of
    ``max |G|`` (singular: the caller hands over)."""
    big = 0.0
    for i in range(n):
        for j in range(n):
            big = max(big, abs(G[i, j]))
    small = n * 2.220446049250313e-16 * big
    for c in range(n):
        p = c
        for i in range(c + 1, n):
            if abs(G[i, c]) > abs(G[p, c]):
                p = i
        if not abs(G[p, c]) > small:
            return False
        if p != c:
            for j in range(n):
                G[c, j], G[p, j] = G[p, j], G[c, j]
            x[c], x[p] = x[p], x[c]
        for i in range(c + 1, n):
            f = G[i, c] / G[c, c]
            for j in range(c, n):
                G[i, j] -= f * G[c, j]
            x[i] -= f * x[c]
    for c in range(n - 1, -1, -1):
        s = x[c]
        for j in range(c + 1, n):
            s -= G[c, j] * x[j]
        x[c] = s / G[c, c]
    return True


@njit(cache=True)
def flex_loop_stiffening(
    T, MI, grav, use_grav, reac, tol, max_iter, info, q, v, tau, sel, sI, sC, sFt, sFs, cI,
    out, acc, C, Y, A, b, x, r, qdd, lam, sw,
):  # fmt: skip
    """Loop-aware geometric stiffening of ``(qdd, lam)`` in place (the compiled
    :meth:`flexmbd.recursive.loops.LoopSystem._loop_stiffening`, its steps in its order):
    fixed-point steps ``lam += g(lam)`` (:func:`_stiff_g`) while they contract, else the
    affine equation ``g(lam) = 0`` on its active rows by Newton steps with
    finite-difference columns (a square solve, :func:`_lu_solve`, where the reference
    takes least squares). Every ``g`` solves the tree on the factorization of
    :func:`flex_loop_accelerations`' free solve (the same ``q``). ``sw = (items, zq, w6,
    Rb, rb, cutf (nc, 6), qn, qn2 (nv,), dl, dl2, lt, gs (m,), Gm (m, m), act (m,)
    int)``. Returns 0, a tree solve's status or :data:`STIFF_SINGULAR`."""
    qn, qn2, dl, dl2, lt, gs, Gm, act = sw[6], sw[7], sw[8], sw[9], sw[10], sw[11], sw[12], sw[13]
    ga = (T, MI, grav, use_grav, reac, tol, max_iter, info, q, v, tau, sel, sI, sC, sFt, sFs,
          cI, out, acc, C, Y, A, b, x, r, sw)  # fmt: skip
    nv = qdd.shape[0]
    m = lam.shape[0]
    scale = 0.0
    for i in range(nv):
        scale = max(scale, abs(qdd[i]))
    scale = LOOP_STIFF_TOL * (1.0 + scale)
    change_prev = np.inf
    broke = False
    for _it in range(LOOP_STIFF_ITER):
        st = _stiff_g(ga, lam, qn, dl, True)
        if st != 0:
            return st
        change = _max_change(qn, qdd)
        if change <= scale:
            for i in range(nv):
                qdd[i] = qn[i]
            for i in range(m):
                lam[i] += dl[i]
            return 0
        if change > 0.5 * change_prev:
            broke = True
            break
        for i in range(m):
            lam[i] += dl[i]
        for i in range(nv):
            qdd[i] = qn[i]
        change_prev = change
    if not broke:
        st = _stiff_g(ga, lam, qdd, dl, True)
        if st != 0:
            return st
    # the affine solve of g(lam) = 0 on the active rows (Newton with exact columns)
    na = 0
    for i in range(m):
        if dl[i] != 0.0:
            act[na] = i
            na += 1
    if na == 0:
        for i in range(m):
            act[i] = i
        na = m
    for _it in range(3):
        h = 0.0
        for i in range(m):
            h = max(h, abs(lam[i]))
        h = 1e-3 * (1.0 + h)
        for j in range(na):
            for i in range(m):
                lt[i] = lam[i]
            lt[act[j]] += h
            st = _stiff_g(ga, lt, qn2, dl2, True)
            if st != 0:
                return st
            for i in range(na):
                Gm[i, j] = (dl2[act[i]] - dl[act[i]]) / h
        for i in range(na):
            gs[i] = -dl[act[i]]
        if not _lu_solve(Gm, gs, na):
            return STIFF_SINGULAR
        for i in range(na):
            lam[act[i]] += gs[i]
        st = _stiff_g(ga, lam, qn, dl, True)
        if st != 0:
            return st
        change = _max_change(qn, qdd)
        for i in range(nv):
            qdd[i] = qn[i]
        if change <= scale:
            break
    for i in range(m):
        lam[i] += dl[i]
    return 0


@njit(cache=True, _nrt=False)
def factored_columns(T, cols, out):
    """``M^-1 cols`` (nv, k; joint and modal speeds) into ``out`` on the factor the
    workspace ``T`` already holds at ``q`` (:func:`._flexkernels.solve_columns` without
    its kinematics, bias pass and factorization): one :func:`._flexkernels.solve` per
    column. The factor is that of any forward-dynamics pass at ``q``: the generalized
    inertias, shifts, joint subspaces and the CFA blocks depend on ``q`` only (a kinematics
    pass of :func:`flex_cuts_eval` at the same ``q`` rewrites the same values).
    Leaves ``J_FT``, ``FM_TF`` and the solve's rows at the last column."""
    W = FK.FlexWork(*T)
    Ia, Fi, Fm, Jv = W.Ia, W.Fi, W.Fm, W.Jv
    nv = cols.shape[0]
    N = Ia.shape[1] - 1
    for c in range(cols.shape[1]):
        for i in range(nv):
            Jv[FK.J_FT, i] = cols[i, c]
        for k in range(1, N + 1):
            mv = Fi[FK.F_MV, k]
            for j in range(Fi[FK.F_NF, k]):
                Fm[k, FK.FM_TF, j] = cols[mv + j, c]
        FK.solve(W.Ia, W.Sa, W.Fi, W.Mm, W.Vv, W.R3, W.P3, W.Dn, W.Gp, W.PsiT, W.Fm, W.Jv)
        for i in range(nv):
            out[i, c] = Jv[FK.J_QDD, i]


@njit(cache=True)
def flex_loop_accelerations(
    T, MI, grav, use_grav, reac, tol, max_iter, info, q, v, tau, sel, sI, sC, sFt, sFs, cI,
    E, F, G, pspeeds, work, out, qf, acc, JT, Yc, C, Y, A, b, x, r, qdd, lam, stiff, sw,
):  # fmt: skip
    """Constrained accelerations ``qdd`` and multipliers ``lam`` of a loop through flexible
    bodies at ``(q, v)`` with the independent rows ``sel`` of the last corrected state (the
    compiled :meth:`flexmbd.constraints.projection.Projector.accelerations` between two
    QRs): the free accelerations by :func:`._nbsingle.flex_forward_dynamics` (joint and
    modal forces ``tau``, gravity), the rows by :func:`flex_cuts_eval` on its kinematics
    pass, ``Y = M^-1 J_I^T`` by :func:`factored_columns` on its factor, then the rigid
    loops' solve on them (:func:`._nbloops._gram_factor`, :func:`._nbloops._refined_solve`:
    the Cholesky factor of ``J_I Y`` and ``lam_I`` with one step of iterative refinement).
    Scratch: ``qf`` (nv,), ``acc`` (1, 6), ``JT``, ``Yc`` (nv, k), ``C``, ``Y`` (k, nv),
    ``A`` (k, k), ``b``, ``x``, ``r`` (k,). With ``stiff`` (a tree with geometric
    stiffening) the free solve is stiffened and :func:`flex_loop_stiffening` (scratch
    ``sw``) makes the stiffening loads see the cut-joint wrenches; without, ``sw`` is not
    read. Returns 0, the status of a failed tree solve or of the stiffening, or -1 when
    ``J_I Y`` is not positive definite (the caller takes the QR path)."""
    st = NS.flex_forward_dynamics(
        T, q, v, tau, MI, grav, use_grav, reac, stiff, tol, max_iter, info, qf, acc, False,
        True,
    )  # fmt: skip
    if st != 0:
        return st
    # the rows on the free solve's kinematics (the same pass at (q, v))
    _cuts_eval(T, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, q, v, True, work, out, False)
    J = out[1]
    gamma = out[2]
    nv = qdd.shape[0]
    k = sel.shape[0]
    for a in range(k):
        b[a] = gamma[sel[a]]
        for i in range(nv):
            C[a, i] = J[sel[a], i]
            JT[i, a] = J[sel[a], i]
    # Y on the free solve's factor (the same q)
    factored_columns(T, JT, Yc)
    for a in range(k):
        for i in range(nv):
            Y[a, i] = Yc[i, a]
    if NL._gram_factor(C, Y, A, k, nv) <= 0.0:
        return -1
    for i in range(nv):
        qdd[i] = qf[i]
    NL._refined_solve(C, Y, A, b, qdd, x, r, k, nv)
    for i in range(lam.shape[0]):
        lam[i] = 0.0
    for a in range(k):
        lam[sel[a]] = x[a]
    if stiff:
        return flex_loop_stiffening(
            T, MI, grav, use_grav, reac, tol, max_iter, info, q, v, tau, sel, sI, sC, sFt,
            sFs, cI, out, acc, C, Y, A, b, x, r, qdd, lam, sw,
        )  # fmt: skip
    return 0


# unrolled: the control flow of _nbloops._correct (Newton steps, rank test, velocity step,
# its helpers reused) with the flexible rows: _correct's row evaluation is the rigid
# loops' _eval of their packed tuple; one kernel for both needs a dispatch on that
# tuple's type in _nbloops (a change of every loop kernel's build, left for its own run)
@njit(cache=True)
def flex_correct(
    T, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, work, out, zv, q, v, sel, tol, max_newton,
    rtol, guard, cw,
):  # fmt: skip
    """Position (normal-space Newton, minimum-norm steps on the rows ``sel``) then velocity
    correction of ``(q, v)`` in place on a loop through flexible bodies (cut joints only,
    ``q += dv`` retraction of joint and modal coordinates): the projector's steps between
    two QRs (:func:`._nbloops.loop_correct` with the rows of :func:`flex_cuts_eval`).
    ``zv``: zeros (nv,); ``cw``: :func:`._nbloops.correct_work`. Returns 0, or
    :data:`._nbloops.NEEDS_QR` (``q``, ``v`` unchanged: the caller corrects with the QR)."""
    q0, A, dq, Jv = cw
    phi = out[0]
    J = out[1]
    nv = v.shape[0]
    k = sel.shape[0]
    for j in range(nv):
        q0[j] = q[j]
    flex_cuts_eval(T, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, q, zv, False, work, out)
    for it in range(max_newton + 1):
        NL._gram(J, sel, A)
        lo, hi = NL._chol(A, k)
        if lo <= 0.0:
            for j in range(nv):
                q[j] = q0[j]
            return NL.NEEDS_QR
        if it == max_newton:
            break  # not converged: the factor at the last iterate serves the velocities
        NL._min_norm_step(J, sel, A, phi, dq)
        step = 0.0
        for j in range(nv):
            q[j] -= dq[j]
            step = max(step, abs(dq[j]))
        if step <= tol:
            break  # the Jacobian from before this step serves the velocities
        flex_cuts_eval(T, sI, sC, sFt, sFs, cI, E, F, G, pspeeds, q, zv, False, work, out)
    if not NL._same_rank_decision(J, sel, rtol, guard):
        for j in range(nv):
            q[j] = q0[j]
        return NL.NEEDS_QR
    # velocities: v -= J_I^T (J_I J_I^T)^-1 J_I v
    for r in range(Jv.shape[0]):
        Jv[r] = 0.0
    for a in range(k):
        s = 0.0
        for j in range(nv):
            s += J[sel[a], j] * v[j]
        Jv[sel[a]] = s
    NL._min_norm_step(J, sel, A, Jv, dq)
    for j in range(nv):
        v[j] -= dq[j]
    return 0
