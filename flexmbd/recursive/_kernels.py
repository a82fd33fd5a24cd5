"""Allocation-free numba kernels of the serialized Constraint Force Algorithm.

Notation follows Liu, Hu and Zhang (2016). Bodies are indexed by their regular
label ``k = 1..N`` (``parent[k] < k``; index 0 is ground); the tree joint of body
``k`` is joint ``k``. Every quantity of body ``k`` is expressed in its tree frame
``e_k`` (the joint frame on body ``k``, rotated so that the joint axis is the
local z axis; origin ``O_k``):

* ``Phi_k`` (the paper's ``C P̂``): wrench at ``O_k`` in ``e_k`` -> wrench at ``O_p``
  in ``e_p``; its transpose maps twists of ``e_p`` to ``e_k``;
* ``G_k = I_k^-1`` (inverse spatial inertia about ``O_k``);
* kinematics ``V̇_k = Phi_k^T V̇_p + H_k Q̈_k``, dynamics ``F_k = I_k V̇_k + sum_c Phi_c F_c``
  (eq. 7), equivalent interbody force ``F_k = H_k F_Tk + W_k F_Sk`` (eq. 5).

Embedded blocks. The unknowns of eq. (29) are kept as 6-vectors ``f_k = W_k F_Sk``
(the constraint part of the interbody force) and every block of ``A`` as a 6x6
matrix: with the projector ``P_k = W_k W_k^T`` (a 0/1 diagonal mask for joints
whose axes are frame axes) the paper's blocks become

* ``Ã_k = P_k (G_k + Phi_k^T G_p Phi_k) P_k + (U - P_k)`` (eq. 32/37: the identity on
  the motion directions decouples them, ``f_k`` has no motion component),
* ``D_k = -P_p G_p Phi_k P_k`` between joint k and its parent's joint (eq. 31/34/35),
* ``b_ab = P_a Phi_a^T G_p Phi_b P_b`` between siblings a, b of a node (eq. 36).

``W_k^T Ã_k W_k`` is the paper's ``A_k``; fixed sizes let the compiler unroll
every product. Blocks are stored with the constraint directions first (a
per-joint reordering), so a single-dof joint's blocks are eliminated with 5x5
kernels; the eliminated blocks are factored as LDL^T with the reciprocals of the
pivots on the diagonal (the solves multiply instead of divide). Chains are
eliminated following a schedule computed once from the topology
(:mod:`.schedule`): the paper's odd-even (cyclic) reduction, or, for rigid trees,
one joint after the other from the free ends (unbranched trees from both ends at
once); node unknowns and the last survivor of each chain form a small dense system
(eq. 41-44). A revolute joint that is the only child of a joint with a diagonal
projector (a chain link) has its blocks assembled straight in the elimination
order from constants permuted once (:func:`_revolute_link`).

Numba emits no aliasing information: for the compiler a store to any array may
change any other, so a loop that stores while it reads reloads its operands after
every store. The hot helpers therefore read their operands into locals first and
store once (the 5x5 elimination kernels are written out for that reason, with the
same operations in the same order as their loop forms).

Data layout (few packed arrays keep the call overhead small):

``I`` int (NI, N+1): parent, jtype, reversed, nv, nc, q offset, v offset, nq,
only child, dense slot, reaction row, diagonal-W flag, five-block flag, permutation,
sizes, dense slot within its block (column 0: the node system's width).
``S`` int 1-d: schedule (see :func:`pack_schedule`).
``M`` float (NM, N+1, 6, 6), ``V`` float (NV, N+1, 6), ``R3`` (NR, N+1, 3, 3),
``P3`` (NP, N+1, 3): per-body matrices/vectors (indices below).
``T`` float (NT, 6, 6) scratch. ``Dn`` float (6 nd, w + 1): the dense node system and its
rhs, block diagonal (one block per subtree of the ground, :class:`.schedule.Schedule`):
the rows of every dense joint, each block's columns from 0, the rhs in column ``w``
(6 x the largest block).
``J`` float (4, nv): tau, F_T, b, qdd.
The float arrays are views of one buffer (:func:`buffer_layout`); ``Ib`` (int 1-d)
packs a header (``IB_*``), ``I`` and ``S`` for the single-state entry point
:func:`qdd_reactions`, whose few arguments keep numba's dispatch cheap.

The kernels run without numba's reference counting (``_nrt=False``): they never
allocate, and the atomic increments and decrements NRT emits for every array view
they take cost more than the arithmetic (the whole pass ran 1.6-1.9x slower).
"""

import numpy as np
from numba import prange, types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from .._jit import njit, njit_signature
from .._nbjoints import (
    FIXED,
    PRISMATIC,
    REVOLUTE,
    SCREW,
    joint_kinematics,
    joint_qdot,
    reverse_joint,
    scale_screw,
)

# int rows
(I_PARENT, I_JT, I_REV, I_NV, I_NC, I_QO, I_VO, I_NQ, I_ONE, I_DSLOT, I_JROW, I_DIAG, I_FIVE) = (
    range(13)
)
I_PERM = 13  # rows 13..18: permutation of the 6 directions, constraint directions first
I_SIZE = 19  # column 0: max(nv, 1), then row I_SIZE + 1: 6 * max(n_dense, 1)
I_DLOC = 21  # slot of a dense joint within its block; column 0: 6 * the largest block
NI = 22
# matrices
(
    M_H,
    M_W,
    M_L,
    M_P,
    M_I,
    M_G,
    M_A,
    M_CR,
    M_YL,
    M_YR,
    M_X,
    M_Y,
    M_HC,
    M_WC,
    M_C0,
    M_K0,
    M_C0P,
    M_K0P,
    M_GP,
) = range(19)
NM = 19
# vectors
(
    V_CJ,
    V_VEL,
    V_AB,
    V_FB,
    V_FE,
    V_AF,
    V_BX,
    V_FEXT,
    V_MASK,
    V_PRM,
    V_PRM2,
    V_MC,
    V_T6,
    V_VJ,
    V_G,
    V_SV,
) = range(16)
NV = 16
# 3x3
R_REL, R_W, R_0, R_D, R_A = range(5)
NR = 5
# 3-vectors
P_REL, P_W, P_0, P_D, P_B = range(5)  # P_B: body-frame origin in e_k axes
NP = 5
# scratch matrices
T_R, T_3, T_Q, T_1, T_2 = range(5)
NT = 5
# jv rows
J_TAU, J_FT, J_B, J_QDD = range(4)
# header of the packed int buffer: N + 1, gravity flag, nq, nv, reaction rows; then I, S
IB_N1, IB_GRAV, IB_NQ, IB_NV, IB_NJ = range(5)
IB_HEAD = 5


def pack_schedule(sched):
    """1-d int array: [ns, nd, nl, nn, nsib, steps, dense, links, nodech, sibs]."""
    parts = [
        sched.steps.ravel(),
        sched.dense,
        sched.links.ravel(),
        sched.node_children,
        sched.siblings.ravel(),
    ]
    head = [
        len(sched.steps),
        len(sched.dense),
        len(sched.links),
        len(sched.node_children),
        len(sched.siblings),
    ]
    return np.concatenate([np.asarray(head, np.int64)] + [np.asarray(p, np.int64) for p in parts])


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


# unrolled: _f2p accumulating with a factor (no scratch wrench stored and reloaded)
@njit(cache=True, inline="always")
def _f2p_add(R, p, f, out, s):
    """out += s * Phi f."""
    p0 = p[0]
    p1 = p[1]
    p2 = p[2]
    nx = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2]
    ny = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2]
    nz = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2]
    fx = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    fy = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    fz = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    out[0] += s * (nx + p1 * fz - p2 * fy)
    out[1] += s * (ny + p2 * fx - p0 * fz)
    out[2] += s * (nz + p0 * fy - p1 * fx)
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
    r00 = R[0, 0]
    r01 = R[0, 1]
    r02 = R[0, 2]
    r10 = R[1, 0]
    r11 = R[1, 1]
    r12 = R[1, 2]
    r20 = R[2, 0]
    r21 = R[2, 1]
    r22 = R[2, 2]
    out[0] = r00 * wx + r10 * wy + r20 * wz
    out[1] = r01 * wx + r11 * wy + r21 * wz
    out[2] = r02 * wx + r12 * wy + r22 * wz
    out[3] = r00 * ux + r10 * uy + r20 * uz
    out[4] = r01 * ux + r11 * uy + r21 * uz
    out[5] = r02 * ux + r12 * uy + r22 * uz


@njit(cache=True, inline="always")
def _build_phi(R, p, Xk):
    """Xk = Phi (6x6) = [[R, p~ R], [0, R]]."""
    for i in range(3):
        for j in range(3):
            r = R[i, j]
            Xk[i, j] = r
            Xk[3 + i, 3 + j] = r
            Xk[3 + i, j] = 0.0
    for j in range(3):
        Xk[0, 3 + j] = p[1] * R[2, j] - p[2] * R[1, j]
        Xk[1, 3 + j] = p[2] * R[0, j] - p[0] * R[2, j]
        Xk[2, 3 + j] = p[0] * R[1, j] - p[1] * R[0, j]


# unrolled: x in six locals (a store to out may alias x: the loop would reload it)
@njit(cache=True, inline="always")
def _matvec6(M, x, out):
    """out = M x (x read once into locals: a store to out may alias x for the compiler,
    which would reload x after every row)."""
    x0 = x[0]
    x1 = x[1]
    x2 = x[2]
    x3 = x[3]
    x4 = x[4]
    x5 = x[5]
    for i in range(6):
        out[i] = (
            M[i, 0] * x0 + M[i, 1] * x1 + M[i, 2] * x2 + M[i, 3] * x3 + M[i, 4] * x4 + M[i, 5] * x5
        )


# unrolled: the rigid spatial inertia's structure, 24 products instead of 36
@njit(cache=True, inline="always")
def _inertia_times(Ik, mc, x, out):
    """out = I x for a rigid spatial inertia I = [[J_O, m c~], [-m c~, m 1]] (J_O its
    3x3 block, ``mc = (m c, m)``): 24 products instead of 36."""
    w0 = x[0]
    w1 = x[1]
    w2 = x[2]
    v0 = x[3]
    v1 = x[4]
    v2 = x[5]
    m = mc[3]
    c0 = mc[0]
    c1 = mc[1]
    c2 = mc[2]
    out[0] = Ik[0, 0] * w0 + Ik[0, 1] * w1 + Ik[0, 2] * w2 + (c1 * v2 - c2 * v1)
    out[1] = Ik[1, 0] * w0 + Ik[1, 1] * w1 + Ik[1, 2] * w2 + (c2 * v0 - c0 * v2)
    out[2] = Ik[2, 0] * w0 + Ik[2, 1] * w1 + Ik[2, 2] * w2 + (c0 * v1 - c1 * v0)
    out[3] = m * v0 - (c1 * w2 - c2 * w1)
    out[4] = m * v1 - (c2 * w0 - c0 * w2)
    out[5] = m * v2 - (c0 * w1 - c1 * w0)


@njit(cache=True, inline="always")
def _gravity_in_body(G, k, pk, Rk, grav):
    """Gravity in e_k axes, ``G[k] = R_rel^T G[pk]`` (m/s^2; ``G[0] = grav``, world
    axes, set when ``pk`` is the ground); returns its three components."""
    gp = G[pk]
    if pk == 0:
        gp[0] = grav[0]
        gp[1] = grav[1]
        gp[2] = grav[2]
    gx = Rk[0, 0] * gp[0] + Rk[1, 0] * gp[1] + Rk[2, 0] * gp[2]
    gy = Rk[0, 1] * gp[0] + Rk[1, 1] * gp[1] + Rk[2, 1] * gp[2]
    gz = Rk[0, 2] * gp[0] + Rk[1, 2] * gp[1] + Rk[2, 2] * gp[2]
    gk = G[k]
    gk[0] = gx
    gk[1] = gy
    gk[2] = gz
    return gx, gy, gz


@njit(cache=True, inline="always")
def _sub_gravity(mc, gx, gy, gz, f):
    """f -= [m c x g; m g]: the gravity wrench about O_k of a rigid body (``mc = (m c,
    m)``, kg m and kg) in the uniform field ``g`` (m/s^2, e_k axes) moved to the left
    side of the Newton-Euler equation."""
    m = mc[3]
    f[0] -= mc[1] * gz - mc[2] * gy
    f[1] -= mc[2] * gx - mc[0] * gz
    f[2] -= mc[0] * gy - mc[1] * gx
    f[3] -= m * gx
    f[4] -= m * gy
    f[5] -= m * gz


@njit(cache=True, inline="always")
def _add_gyro(w, h, fe, f):
    """f += w x* h - fe (e_k axes): the velocity-product wrench of the momentum ``h = I w``
    (kg m^2/s, kg m/s) at the twist ``w = (omega, v)`` minus the external wrench ``fe``
    (N m, N); operands read into locals first (a store to f may alias them for the
    compiler)."""
    w0 = w[0]
    w1 = w[1]
    w2 = w[2]
    w3 = w[3]
    w4 = w[4]
    w5 = w[5]
    h0 = h[0]
    h1 = h[1]
    h2 = h[2]
    h3 = h[3]
    h4 = h[4]
    h5 = h[5]
    q0 = f[0] + (w1 * h2 - w2 * h1 + w4 * h5 - w5 * h4 - fe[0])
    q1 = f[1] + (w2 * h0 - w0 * h2 + w5 * h3 - w3 * h5 - fe[1])
    q2 = f[2] + (w0 * h1 - w1 * h0 + w3 * h4 - w4 * h3 - fe[2])
    q3 = f[3] + (w1 * h5 - w2 * h4 - fe[3])
    q4 = f[4] + (w2 * h3 - w0 * h5 - fe[4])
    q5 = f[5] + (w0 * h4 - w1 * h3 - fe[5])
    f[0] = q0
    f[1] = q1
    f[2] = q2
    f[3] = q3
    f[4] = q4
    f[5] = q5


# unrolled: the operand as six values, no scratch vector stored and reloaded
@njit(cache=True, inline="always")
def _matvec6_vals(M, x0, x1, x2, x3, x4, x5, out):
    """out = M x for x given as six values (no scratch vector stored and reloaded)."""
    for i in range(6):
        out[i] = (
            M[i, 0] * x0 + M[i, 1] * x1 + M[i, 2] * x2 + M[i, 3] * x3 + M[i, 4] * x4 + M[i, 5] * x5
        )


@njit(cache=True, inline="always")
def _matmul6(A, B, C):
    """C = A B (6x6)."""
    for i in range(6):
        c0 = c1 = c2 = c3 = c4 = c5 = 0.0
        for k in range(6):
            a = A[i, k]
            c0 += a * B[k, 0]
            c1 += a * B[k, 1]
            c2 += a * B[k, 2]
            c3 += a * B[k, 3]
            c4 += a * B[k, 4]
            c5 += a * B[k, 5]
        C[i, 0] = c0
        C[i, 1] = c1
        C[i, 2] = c2
        C[i, 3] = c3
        C[i, 4] = c4
        C[i, 5] = c5


# unrolled: the transposed twin of _matmul6 (a row of C in six accumulators)
@njit(cache=True, inline="always")
def _matTmul6(A, B, C, s):
    """C = s A^T B (6x6)."""
    for i in range(6):
        c0 = c1 = c2 = c3 = c4 = c5 = 0.0
        for k in range(6):
            a = A[k, i]
            c0 += a * B[k, 0]
            c1 += a * B[k, 1]
            c2 += a * B[k, 2]
            c3 += a * B[k, 3]
            c4 += a * B[k, 4]
            c5 += a * B[k, 5]
        C[i, 0] = s * c0
        C[i, 1] = s * c1
        C[i, 2] = s * c2
        C[i, 3] = s * c3
        C[i, 4] = s * c4
        C[i, 5] = s * c5


@njit(cache=True, inline="always")
def _mirror6(C):
    for i in range(6):
        for j in range(i):
            C[j, i] = C[i, j]


@njit(cache=True, _nrt=False)
def _chol(A, n):
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


@njit(cache=True, _nrt=False)
def _chol_solve(A, n, col):
    for i in range(n):
        s = A[i, col]
        for k in range(i):
            s -= A[i, k] * A[k, col]
        A[i, col] = s / A[i, i]
    for i in range(n - 1, -1, -1):
        s = A[i, col]
        for k in range(i + 1, n):
            s -= A[k, i] * A[k, col]
        A[i, col] = s / A[i, i]


@njit(cache=True, inline="always")
def _proj_rows(M, k, Ia, Mm, Vv, sign):
    """M <- sign * P_k M (P_k = W W^T of joint k)."""
    if Ia[I_DIAG, k]:
        mask = Vv[V_MASK, k]
        for i in range(6):
            if mask[i] == 0.0:
                for j in range(6):
                    M[i, j] = 0.0
            elif sign != 1.0:
                for j in range(6):
                    M[i, j] *= sign
    else:
        P = Mm[M_P, k]
        for j in range(6):
            c0 = M[0, j]
            c1 = M[1, j]
            c2 = M[2, j]
            c3 = M[3, j]
            c4 = M[4, j]
            c5 = M[5, j]
            for i in range(6):
                M[i, j] = sign * (
                    P[i, 0] * c0
                    + P[i, 1] * c1
                    + P[i, 2] * c2
                    + P[i, 3] * c3
                    + P[i, 4] * c4
                    + P[i, 5] * c5
                )


# unrolled: the column twin of _proj_rows (a row of M in six locals)
@njit(cache=True, inline="always")
def _proj_cols(M, k, Ia, Mm, Vv):
    """M <- M P_k."""
    if Ia[I_DIAG, k]:
        mask = Vv[V_MASK, k]
        for j in range(6):
            if mask[j] == 0.0:
                for i in range(6):
                    M[i, j] = 0.0
    else:
        P = Mm[M_P, k]
        for i in range(6):
            r0 = M[i, 0]
            r1 = M[i, 1]
            r2 = M[i, 2]
            r3 = M[i, 3]
            r4 = M[i, 4]
            r5 = M[i, 5]
            for j in range(6):
                M[i, j] = (
                    r0 * P[0, j]
                    + r1 * P[1, j]
                    + r2 * P[2, j]
                    + r3 * P[3, j]
                    + r4 * P[4, j]
                    + r5 * P[5, j]
                )


@njit(cache=True, inline="always")
def _proj_vec(x, k, Ia, Mm, Vv, out, sign):
    """out = sign * P_k x."""
    if Ia[I_DIAG, k]:
        mask = Vv[V_MASK, k]
        for i in range(6):
            out[i] = sign * mask[i] * x[i]
    else:
        P = Mm[M_P, k]
        for i in range(6):
            out[i] = sign * (
                P[i, 0] * x[0]
                + P[i, 1] * x[1]
                + P[i, 2] * x[2]
                + P[i, 3] * x[3]
                + P[i, 4] * x[4]
                + P[i, 5] * x[5]
            )


# ---- size-n block helpers (n = 5 or 6, a literal at every call site so that the
# compiler unrolls): blocks are stored with the constraint directions first, so a
# joint with 5 constraint directions only needs the leading 5x5 part (the trailing
# motion direction is an identity row/column that the elimination never changes).


@njit(cache=True, inline="always")
def _subTvec_n(Z, z, b, n):
    """b[:n] -= Z^T z."""
    for k in range(n):
        zk = z[k]
        for j in range(n):
            b[j] -= Z[k, j] * zk


@njit(cache=True, inline="always")
def _permute_block(M, Ia, ka, kb, T):
    """M <- M[perm_a][:, perm_b] (T scratch 6x6)."""
    for i in range(6):
        for j in range(6):
            T[i, j] = M[i, j]
    for i in range(6):
        pi = Ia[I_PERM + i, ka]
        for j in range(6):
            M[i, j] = T[pi, Ia[I_PERM + j, kb]]


@njit(cache=True, inline="always")
def _step_five(Ia, i, l, r):
    return Ia[I_FIVE, i] != 0 and (l < 0 or Ia[I_FIVE, l] != 0) and (r < 0 or Ia[I_FIVE, r] != 0)


@njit(cache=True, inline="always")
def _ldl(A, n):
    """In-place LDL^T of A[:n,:n] (lower part read). False if not positive definite."""
    for j in range(n):
        for i in range(j, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[k, j]
            A[j, i] = s  # (L D)[i, j], kept above the diagonal
        d = A[j, j]
        if not d > 0.0:
            return False
        inv = 1.0 / d
        A[j, j] = inv
        for i in range(j + 1, n):
            A[i, j] = A[j, i] * inv
    return True


# unrolled: _ldl for n = 5 in locals (the same operations in the same order);
# the revolute chain link's hot block: 13.9 vs 16.4 ns a block with its copy
@njit(cache=True, inline="always")
def _ldl5(A):
    """:func:`_ldl` for n = 5 in locals (the same operations in the same order; the
    scratch L D is not stored): 15 loads, 15 stores instead of a load and a store per
    product."""
    a00 = A[0, 0]
    a10 = A[1, 0]
    a11 = A[1, 1]
    a20 = A[2, 0]
    a21 = A[2, 1]
    a22 = A[2, 2]
    a30 = A[3, 0]
    a31 = A[3, 1]
    a32 = A[3, 2]
    a33 = A[3, 3]
    a40 = A[4, 0]
    a41 = A[4, 1]
    a42 = A[4, 2]
    a43 = A[4, 3]
    a44 = A[4, 4]
    u00 = a00
    u10 = a10
    u20 = a20
    u30 = a30
    u40 = a40
    if not u00 > 0.0:
        return False
    v0 = 1.0 / u00
    l10 = u10 * v0
    l20 = u20 * v0
    l30 = u30 * v0
    l40 = u40 * v0
    u11 = a11 - l10 * u10
    u21 = a21 - l20 * u10
    u31 = a31 - l30 * u10
    u41 = a41 - l40 * u10
    if not u11 > 0.0:
        return False
    v1 = 1.0 / u11
    l21 = u21 * v1
    l31 = u31 * v1
    l41 = u41 * v1
    u22 = a22 - l20 * u20 - l21 * u21
    u32 = a32 - l30 * u20 - l31 * u21
    u42 = a42 - l40 * u20 - l41 * u21
    if not u22 > 0.0:
        return False
    v2 = 1.0 / u22
    l32 = u32 * v2
    l42 = u42 * v2
    u33 = a33 - l30 * u30 - l31 * u31 - l32 * u32
    u43 = a43 - l40 * u30 - l41 * u31 - l42 * u32
    if not u33 > 0.0:
        return False
    v3 = 1.0 / u33
    l43 = u43 * v3
    u44 = a44 - l40 * u40 - l41 * u41 - l42 * u42 - l43 * u43
    if not u44 > 0.0:
        return False
    v4 = 1.0 / u44
    A[0, 0] = v0
    A[1, 0] = l10
    A[2, 0] = l20
    A[3, 0] = l30
    A[4, 0] = l40
    A[1, 1] = v1
    A[2, 1] = l21
    A[3, 1] = l31
    A[4, 1] = l41
    A[2, 2] = v2
    A[3, 2] = l32
    A[4, 2] = l42
    A[3, 3] = v3
    A[4, 3] = l43
    A[4, 4] = v4
    return True


@njit(cache=True, inline="always")
def _unit_lsolve_cols(Lm, B, X, transpose_b, n):
    """X[:n,:n] = L^-1 B (or L^-1 B^T), L unit lower."""
    for i in range(n):
        for c in range(n):
            X[i, c] = B[c, i] if transpose_b else B[i, c]
        for k in range(i):
            lik = Lm[i, k]
            for c in range(n):
                X[i, c] -= lik * X[k, c]


# unrolled: _unit_lsolve_cols for n = 5, a row of X in five scalar accumulators
@njit(cache=True, inline="always")
def _unit_lsolve5_cols(Lm, B, X, transpose_b):
    """:func:`_unit_lsolve_cols` for n = 5, a row of X in scalar accumulators (one
    store per entry)."""
    for i in range(5):
        if transpose_b:
            x0 = B[0, i]
            x1 = B[1, i]
            x2 = B[2, i]
            x3 = B[3, i]
            x4 = B[4, i]
        else:
            x0 = B[i, 0]
            x1 = B[i, 1]
            x2 = B[i, 2]
            x3 = B[i, 3]
            x4 = B[i, 4]
        for k in range(i):
            lik = Lm[i, k]
            x0 -= lik * X[k, 0]
            x1 -= lik * X[k, 1]
            x2 -= lik * X[k, 2]
            x3 -= lik * X[k, 3]
            x4 -= lik * X[k, 4]
        X[i, 0] = x0
        X[i, 1] = x1
        X[i, 2] = x2
        X[i, 3] = x3
        X[i, 4] = x4


@njit(cache=True, inline="always")
def _sub_ydy(Y, Lm, C, n):
    """C[:n,:n] -= Y^T D^-1 Y on and below the diagonal (the upper part of a block is
    never read after its assembly: :func:`_ldl`, the dense system and its Cholesky
    factorization read lower triangles)."""
    for k in range(n):
        dk = Lm[k, k]
        for i in range(n):
            a = Y[k, i] * dk
            for j in range(i + 1):
                C[i, j] -= a * Y[k, j]


# unrolled: _sub_ydy for n = 5 with every operand in a local (in the loop a store
# to C may alias Y: each product would reload and store): 15 vs 23 ns a call
@njit(cache=True, inline="always")
def _sub_ydy5(Y, Lm, C):
    """:func:`_sub_ydy` for n = 5 with every operand in a local (in a loop, a store to C
    may alias Y for the compiler: each product would reload and store)."""
    d0 = Lm[0, 0]
    y00 = Y[0, 0]
    y01 = Y[0, 1]
    y02 = Y[0, 2]
    y03 = Y[0, 3]
    y04 = Y[0, 4]
    z00 = d0 * y00
    z01 = d0 * y01
    z02 = d0 * y02
    z03 = d0 * y03
    z04 = d0 * y04
    d1 = Lm[1, 1]
    y10 = Y[1, 0]
    y11 = Y[1, 1]
    y12 = Y[1, 2]
    y13 = Y[1, 3]
    y14 = Y[1, 4]
    z10 = d1 * y10
    z11 = d1 * y11
    z12 = d1 * y12
    z13 = d1 * y13
    z14 = d1 * y14
    d2 = Lm[2, 2]
    y20 = Y[2, 0]
    y21 = Y[2, 1]
    y22 = Y[2, 2]
    y23 = Y[2, 3]
    y24 = Y[2, 4]
    z20 = d2 * y20
    z21 = d2 * y21
    z22 = d2 * y22
    z23 = d2 * y23
    z24 = d2 * y24
    d3 = Lm[3, 3]
    y30 = Y[3, 0]
    y31 = Y[3, 1]
    y32 = Y[3, 2]
    y33 = Y[3, 3]
    y34 = Y[3, 4]
    z30 = d3 * y30
    z31 = d3 * y31
    z32 = d3 * y32
    z33 = d3 * y33
    z34 = d3 * y34
    d4 = Lm[4, 4]
    y40 = Y[4, 0]
    y41 = Y[4, 1]
    y42 = Y[4, 2]
    y43 = Y[4, 3]
    y44 = Y[4, 4]
    z40 = d4 * y40
    z41 = d4 * y41
    z42 = d4 * y42
    z43 = d4 * y43
    z44 = d4 * y44
    c00 = z00 * y00 + z10 * y10 + z20 * y20 + z30 * y30 + z40 * y40
    c10 = z01 * y00 + z11 * y10 + z21 * y20 + z31 * y30 + z41 * y40
    c11 = z01 * y01 + z11 * y11 + z21 * y21 + z31 * y31 + z41 * y41
    c20 = z02 * y00 + z12 * y10 + z22 * y20 + z32 * y30 + z42 * y40
    c21 = z02 * y01 + z12 * y11 + z22 * y21 + z32 * y31 + z42 * y41
    c22 = z02 * y02 + z12 * y12 + z22 * y22 + z32 * y32 + z42 * y42
    c30 = z03 * y00 + z13 * y10 + z23 * y20 + z33 * y30 + z43 * y40
    c31 = z03 * y01 + z13 * y11 + z23 * y21 + z33 * y31 + z43 * y41
    c32 = z03 * y02 + z13 * y12 + z23 * y22 + z33 * y32 + z43 * y42
    c33 = z03 * y03 + z13 * y13 + z23 * y23 + z33 * y33 + z43 * y43
    c40 = z04 * y00 + z14 * y10 + z24 * y20 + z34 * y30 + z44 * y40
    c41 = z04 * y01 + z14 * y11 + z24 * y21 + z34 * y31 + z44 * y41
    c42 = z04 * y02 + z14 * y12 + z24 * y22 + z34 * y32 + z44 * y42
    c43 = z04 * y03 + z14 * y13 + z24 * y23 + z34 * y33 + z44 * y43
    c44 = z04 * y04 + z14 * y14 + z24 * y24 + z34 * y34 + z44 * y44
    C[0, 0] -= c00
    C[1, 0] -= c10
    C[1, 1] -= c11
    C[2, 0] -= c20
    C[2, 1] -= c21
    C[2, 2] -= c22
    C[3, 0] -= c30
    C[3, 1] -= c31
    C[3, 2] -= c32
    C[3, 3] -= c33
    C[4, 0] -= c40
    C[4, 1] -= c41
    C[4, 2] -= c42
    C[4, 3] -= c43
    C[4, 4] -= c44


@njit(cache=True, inline="always")
def _neg_ydz(Y, Z, Lm, C, n):
    """C[:n,:n] = -Y^T D^-1 Z."""
    for i in range(n):
        for j in range(n):
            C[i, j] = 0.0
    for k in range(n):
        dk = Lm[k, k]
        for i in range(n):
            a = Y[k, i] * dk
            for j in range(n):
                C[i, j] -= a * Z[k, j]


# unrolled: _ldl_forward for n = 5 (x in locals)
@njit(cache=True, inline="always")
def _ldl_forward5(Lm, x):
    """:func:`_ldl_forward` for n = 5 in locals (same operations)."""
    x0 = x[0]
    x1 = x[1] - Lm[1, 0] * x0
    x2 = x[2] - Lm[2, 0] * x0 - Lm[2, 1] * x1
    x3 = x[3] - Lm[3, 0] * x0 - Lm[3, 1] * x1 - Lm[3, 2] * x2
    x4 = x[4] - Lm[4, 0] * x0 - Lm[4, 1] * x1 - Lm[4, 2] * x2 - Lm[4, 3] * x3
    x[0] = x0 * Lm[0, 0]
    x[1] = x1 * Lm[1, 1]
    x[2] = x2 * Lm[2, 2]
    x[3] = x3 * Lm[3, 3]
    x[4] = x4 * Lm[4, 4]


# unrolled: _ldl_back for n = 5 (x in locals)
@njit(cache=True, inline="always")
def _ldl_back5(Lm, x):
    """:func:`_ldl_back` for n = 5 in locals (same operations)."""
    x4 = x[4]
    x3 = x[3] - Lm[4, 3] * x4
    x2 = x[2] - Lm[3, 2] * x3 - Lm[4, 2] * x4
    x1 = x[1] - Lm[2, 1] * x2 - Lm[3, 1] * x3 - Lm[4, 1] * x4
    x0 = x[0] - Lm[1, 0] * x1 - Lm[2, 0] * x2 - Lm[3, 0] * x3 - Lm[4, 0] * x4
    x[0] = x0
    x[1] = x1
    x[2] = x2
    x[3] = x3
    x[4] = x4


# unrolled: _subTvec_n for n = 5 (z in locals)
@njit(cache=True, inline="always")
def _subTvec5(Z, z, b):
    """b[:5] -= Z^T z with z in locals (same operations as :func:`_subTvec_n`)."""
    z0 = z[0]
    z1 = z[1]
    z2 = z[2]
    z3 = z[3]
    z4 = z[4]
    b[0] = b[0] - Z[0, 0] * z0 - Z[1, 0] * z1 - Z[2, 0] * z2 - Z[3, 0] * z3 - Z[4, 0] * z4
    b[1] = b[1] - Z[0, 1] * z0 - Z[1, 1] * z1 - Z[2, 1] * z2 - Z[3, 1] * z3 - Z[4, 1] * z4
    b[2] = b[2] - Z[0, 2] * z0 - Z[1, 2] * z1 - Z[2, 2] * z2 - Z[3, 2] * z3 - Z[4, 2] * z4
    b[3] = b[3] - Z[0, 3] * z0 - Z[1, 3] * z1 - Z[2, 3] * z2 - Z[3, 3] * z3 - Z[4, 3] * z4
    b[4] = b[4] - Z[0, 4] * z0 - Z[1, 4] * z1 - Z[2, 4] * z2 - Z[3, 4] * z3 - Z[4, 4] * z4


# unrolled: _sub_dyx for n = 5 (x in locals)
@njit(cache=True, inline="always")
def _sub_dyx5(Y, x, Lm, z):
    """:func:`_sub_dyx` for n = 5 with x in locals (same operations)."""
    x0 = x[0]
    x1 = x[1]
    x2 = x[2]
    x3 = x[3]
    x4 = x[4]
    z[0] -= Lm[0, 0] * (Y[0, 0] * x0 + Y[0, 1] * x1 + Y[0, 2] * x2 + Y[0, 3] * x3 + Y[0, 4] * x4)
    z[1] -= Lm[1, 1] * (Y[1, 0] * x0 + Y[1, 1] * x1 + Y[1, 2] * x2 + Y[1, 3] * x3 + Y[1, 4] * x4)
    z[2] -= Lm[2, 2] * (Y[2, 0] * x0 + Y[2, 1] * x1 + Y[2, 2] * x2 + Y[2, 3] * x3 + Y[2, 4] * x4)
    z[3] -= Lm[3, 3] * (Y[3, 0] * x0 + Y[3, 1] * x1 + Y[3, 2] * x2 + Y[3, 3] * x3 + Y[3, 4] * x4)
    z[4] -= Lm[4, 4] * (Y[4, 0] * x0 + Y[4, 1] * x1 + Y[4, 2] * x2 + Y[4, 3] * x3 + Y[4, 4] * x4)


@njit(cache=True, inline="always")
def _eliminate(A, Cr, YL, YR, i, l, r, n):
    """Eliminate joint i (neighbours l, r in the chain, -1 for none; the couplings
    C_il = Cr[l]^T and C_ir = Cr[i]): LDL^T of A_i, then the Schur complements
    A_l -= C_il^T A_i^-1 C_il, A_r -= C_ir^T A_i^-1 C_ir and the fill coupling
    C_lr = -C_il^T A_i^-1 C_ir (eq. 39-40). False if A_i is not positive definite."""
    Ai = A[i]
    if not (_ldl5(Ai) if n == 5 else _ldl(Ai, n)):
        return False
    if l >= 0:
        if n == 5:
            _unit_lsolve5_cols(Ai, Cr[l], YL[i], True)  # Y = L^-1 C_il
            _sub_ydy5(YL[i], Ai, A[l])
        else:
            _unit_lsolve_cols(Ai, Cr[l], YL[i], True, n)
            _sub_ydy(YL[i], Ai, A[l], n)
    if r >= 0:
        if n == 5:
            _unit_lsolve5_cols(Ai, Cr[i], YR[i], False)  # L^-1 C_ir
            _sub_ydy5(YR[i], Ai, A[r])
        else:
            _unit_lsolve_cols(Ai, Cr[i], YR[i], False, n)
            _sub_ydy(YR[i], Ai, A[r], n)
        if l >= 0:
            _neg_ydz(YL[i], YR[i], Ai, Cr[l], n)
    return True


@njit(cache=True, inline="always")
def _ldl_forward(Lm, x, n):
    """x[:n] <- D^-1 L^-1 x."""
    for i in range(n):
        t = x[i]
        for k in range(i):
            t -= Lm[i, k] * x[k]
        x[i] = t
    for i in range(n):
        x[i] *= Lm[i, i]


@njit(cache=True, inline="always")
def _ldl_back(Lm, x, n):
    """x[:n] <- L^-T x."""
    for i in range(n - 1, -1, -1):
        t = x[i]
        for k in range(i + 1, n):
            t -= Lm[k, i] * x[k]
        x[i] = t


@njit(cache=True, inline="always")
def _sub_dyx(Y, x, Lm, z, n):
    """z[:n] -= D^-1 Y x."""
    for a in range(n):
        t = 0.0
        for b in range(n):
            t += Y[a, b] * x[b]
        z[a] -= Lm[a, a] * t


# ---------------------------------------------------------------- recursion steps
# (shared with the flexible kernels, flexmbd.recursive._flexkernels)


@njit(cache=True, inline="always")
def joint_frame(Ia, Mm, Vv, k, q, vk, tR, tp, t3, Q, t6):
    """Motion of tree joint ``k`` (both tree kernels): the transform ``(tR, tp)`` between
    its frames, motion subspace ``H``, constraint directions ``W`` and velocity terms
    (:func:`flexmbd._nbjoints.joint_kinematics`), reversed joints, screw scaling and the
    constraint projector ``P = W W^T`` of general joints. ``vk``: its speeds."""
    jt = Ia[I_JT, k]
    n_v = Ia[I_NV, k]
    qo = Ia[I_QO, k]
    qk = q[qo : qo + Ia[I_NQ, k]]
    general = Ia[I_DIAG, k] == 0
    joint_kinematics(
        jt,
        Vv[V_PRM, k],
        Vv[V_PRM2, k],
        qk,
        vk,
        tR,
        tp,
        Mm[M_H, k],
        Mm[M_W, k],
        Vv[V_CJ, k],
        t3,
        general,
        Mm[M_HC, k],
        Mm[M_WC, k],
    )
    if Ia[I_REV, k]:
        reverse_joint(n_v, tR, tp, Mm[M_H, k], Mm[M_W, k], Vv[V_CJ, k], Mm[M_L, k], Q, t6)
    scale_screw(jt, Ia[I_REV, k], Vv[V_PRM, k], Mm[M_L, k])
    if general:
        # projector P = W W^T
        Wk = Mm[M_W, k]
        Pk = Mm[M_P, k]
        ncj = 6 - n_v
        for i in range(6):
            for j in range(6):
                s = 0.0
                for m in range(ncj):
                    s += Wk[i, m] * Wk[j, m]
                Pk[i, j] = s


@njit(cache=True, inline="always")
def world_pose(R3, P3, k, pk):
    """World pose of label ``k``'s frame from its parent's and the relative pose (both tree
    kernels): ``R_W[k] = R_W[pk] R_REL[k]``, ``p_W[k] = p_W[pk] + R_W[pk] p_REL[k]``."""
    Rk = R3[R_REL, k]
    prel = P3[P_REL, k]
    Rp = R3[R_W, pk]
    rwp = P3[P_W, pk]
    for i in range(3):
        for j in range(3):
            R3[R_W, k, i, j] = Rp[i, 0] * Rk[0, j] + Rp[i, 1] * Rk[1, j] + Rp[i, 2] * Rk[2, j]
        P3[P_W, k, i] = rwp[i] + Rp[i, 0] * prel[0] + Rp[i, 1] * prel[1] + Rp[i, 2] * prel[2]


@njit(cache=True, inline="always")
def joint_twist(Ia, Mm, k, vk, t6, sv):
    """Relative twist ``sv = S v`` of joint ``k`` for its speeds ``vk`` (``S = H L`` for
    reversed and screw joints; both tree kernels); ``t6`` scratch."""
    n_v = Ia[I_NV, k]
    Hk = Mm[M_H, k]
    if Ia[I_REV, k] or Ia[I_JT, k] == SCREW:
        Lk = Mm[M_L, k]
        for j in range(n_v):
            s = 0.0
            for m in range(j, n_v):
                s += Lk[j, m] * vk[m]
            t6[j] = s
        for i in range(6):
            s = 0.0
            for j in range(n_v):
                s += Hk[i, j] * t6[j]
            sv[i] = s
    else:
        for i in range(6):
            s = 0.0
            for j in range(n_v):
                s += Hk[i, j] * vk[j]
            sv[i] = s


@njit(cache=True, inline="always")
def joint_project(Ia, Mm, k, f, t6, out):
    """The wrench ``f`` (e_k axes) of label ``k`` on its joint speeds:
    ``out[vo + j] = (S^T f)_j`` with ``S = H L`` (``L`` the reversed/screw scaling, else
    1; N or N m per speed); ``t6`` keeps ``H^T f``."""
    n_v = Ia[I_NV, k]
    o = Ia[I_VO, k]
    Hk = Mm[M_H, k]
    _ht_times(Hk, n_v, f, t6, 0)
    if Ia[I_REV, k] or Ia[I_JT, k] == SCREW:
        Lk = Mm[M_L, k]
        for j in range(n_v):
            s = 0.0
            for m in range(j + 1):
                s += Lk[m, j] * t6[m]
            out[o + j] = s
    else:
        for j in range(n_v):
            out[o + j] = t6[j]


@njit(cache=True, inline="always")
def joint_bias(Ia, Mm, k, f, tau, t6, bvec, FT):
    """Project the bias wrench ``f`` of label ``k`` on its joint (both tree kernels):
    ``b = H^T f`` (``bvec``, with the reversed/screw scaling ``L``) and
    ``F_T = tau - b`` in orthonormal speeds (``FT``); ``t6`` scratch."""
    n_v = Ia[I_NV, k]
    o = Ia[I_VO, k]
    joint_project(Ia, Mm, k, f, t6, bvec)
    if Ia[I_REV, k] or Ia[I_JT, k] == SCREW:
        Lk = Mm[M_L, k]
        for j in range(n_v):
            s = tau[o + j]
            for m in range(j):
                s -= Lk[m, j] * FT[o + m]
            FT[o + j] = s / Lk[j, j]
        for j in range(n_v):
            FT[o + j] -= t6[j]
    else:
        for j in range(n_v):
            FT[o + j] = tau[o + j] - t6[j]


@njit(cache=True, inline="always")
def _relative_acc(R3, P3, af, k, pk, t6):
    """``t6 = a_k - Phi_k^T a_p``: the acceleration of ``e_k`` relative to its parent's
    frame, in e_k axes (``a_0 = 0`` for the ground)."""
    if pk > 0:
        _m2c(R3[R_REL, k], P3[P_REL, k], af[pk], t6)
        for i in range(6):
            t6[i] = af[k, i] - t6[i]
    else:
        for i in range(6):
            t6[i] = af[k, i]


@njit(cache=True, inline="always")
def kinematic_acc(Ia, Mm, R3, P3, af, qdd, k, t6, sv):
    """``af[k] = Phi_k^T af[p] + S_k qdd_k`` (e_k axes, without the bias accelerations):
    the acceleration of e_k from its parent's and its joint's (eq. 16, ``P^T V̇ = H Q̈``),
    so that its relative part in the joint's constrained directions is zero up to
    round-off of its own size (``af[0]`` must be zero: the ground). ``t6``, ``sv``
    scratch 6-vectors."""
    pk = Ia[I_PARENT, k]
    ak = af[k]
    _m2c(R3[R_REL, k], P3[P_REL, k], af[pk], ak)
    o = Ia[I_VO, k]
    if Ia[I_DIAG, k] and Ia[I_JT, k] == REVOLUTE:
        ak[2] += qdd[o]
    else:
        joint_twist(Ia, Mm, k, qdd[o : o + Ia[I_NV, k]], t6, sv)
        for i in range(6):
            ak[i] += sv[i]


@njit(cache=True, inline="always")
def _ht_times(Hk, n_v, x, out, o):
    """``out[o + j] = (H^T x)_j``, j < n_v: a 6-vector (twist or wrench, e_k axes) on the
    joint's motion directions ``H`` (6 x n_v)."""
    for j in range(n_v):
        out[o + j] = (
            Hk[0, j] * x[0]
            + Hk[1, j] * x[1]
            + Hk[2, j] * x[2]
            + Hk[3, j] * x[3]
            + Hk[4, j] * x[4]
            + Hk[5, j] * x[5]
        )


@njit(cache=True, inline="always")
def joint_qdd(Ia, Mm, k, t6, qdd):
    """Joint accelerations of label ``k`` from the relative acceleration ``t6`` of its
    frames (both tree kernels): ``qdd = L^-T H^T t6`` (``L``: reversed/screw scaling)."""
    o = Ia[I_VO, k]
    Hk = Mm[M_H, k]
    n_v = Ia[I_NV, k]
    _ht_times(Hk, n_v, t6, qdd, o)
    if Ia[I_REV, k] or Ia[I_JT, k] == SCREW:
        Lk = Mm[M_L, k]
        for j in range(n_v - 1, -1, -1):
            s = qdd[o + j]
            for m in range(j + 1, n_v):
                s -= Lk[j, m] * qdd[o + m]
            qdd[o + j] = s / Lk[j, j]


@njit(cache=True, inline="always")
def shift_inertia(Ak, Gk, Gp, Xk, Yk):
    """``Y = G_p X`` and the lower triangle of ``A = G_k + X^T Y`` (``X = Phi_k``, the shift
    from label k's frame to its parent's; both tree kernels)."""
    _matmul6(Gp, Xk, Yk)
    for i in range(6):
        for j in range(i + 1):
            Ak[i, j] = Gk[i, j] + (
                Xk[0, i] * Yk[0, j]
                + Xk[1, i] * Yk[1, j]
                + Xk[2, i] * Yk[2, j]
                + Xk[3, i] * Yk[3, j]
                + Xk[4, i] * Yk[4, j]
                + Xk[5, i] * Yk[5, j]
            )


@njit(cache=True, inline="always")
def coupling_block(Cp, Yk, Ia, Mm, Vv, Tt, pk, k):
    """Coupling ``D_k = -P_p Y P_k`` of label ``k`` and its parent ``pk`` into ``Cp``
    (projected, constraint directions first; both tree kernels)."""
    for i in range(6):
        for j in range(6):
            Cp[i, j] = Yk[i, j]
    _proj_rows(Cp, pk, Ia, Mm, Vv, -1.0)
    _proj_cols(Cp, k, Ia, Mm, Vv)
    _permute_block(Cp, Ia, pk, k, Tt[T_2])


@njit(cache=True, inline="always")
def project_inertia(Ak, k, Ia, Mm, Vv, Tt):
    """``A~ = P A P + (U - P)`` of label ``k`` in place, constraint directions first (both
    tree kernels; diagonal joints by permutation)."""
    if Ia[I_DIAG, k]:
        T2 = Tt[T_2]
        for i in range(6):
            for j in range(6):
                T2[i, j] = Ak[i, j]
        nck = Ia[I_NC, k]
        for a in range(6):
            ia = Ia[I_PERM + a, k]
            for b in range(6):
                if a < nck and b < nck:
                    Ak[a, b] = T2[ia, Ia[I_PERM + b, k]]
                else:
                    Ak[a, b] = 1.0 if a == b else 0.0
    else:
        _proj_rows(Ak, k, Ia, Mm, Vv, 1.0)
        _proj_cols(Ak, k, Ia, Mm, Vv)
        P = Mm[M_P, k]
        for i in range(6):
            for j in range(6):
                Ak[i, j] -= P[i, j]
            Ak[i, i] += 1.0


@njit(cache=True, inline="always")
def node_system(Ia, Sa, Mm, Vv, Tt, Dn):
    """The dense node system ``Dn`` after the chain elimination (both tree kernels):
    diagonal blocks, chain links and parent-child node blocks; the sibling blocks are the
    caller's (:func:`sibling_block`). Returns the schedule counts and offsets
    ``(nd, nsib, od, osb)``."""
    A = Mm[M_A]
    Cr = Mm[M_CR]
    Y = Mm[M_Y]
    T1 = Tt[T_1]
    ns = Sa[0]
    base = 5
    nd = Sa[1]
    nl = Sa[2]
    nn = Sa[3]
    nsib = Sa[4]
    od = base + 3 * ns
    ol = od + nd
    on = ol + 2 * nl
    osb = on + nn
    n6 = 6 * nd
    w6 = Ia[I_DLOC, 0]
    for a in range(n6):
        for b in range(w6):
            Dn[a, b] = 0.0
    for t in range(nd):
        k = Sa[od + t]
        o = 6 * Ia[I_DSLOT, k]
        c = 6 * Ia[I_DLOC, k]
        for a in range(6):
            for b in range(6):
                Dn[o + a, c + b] = A[k, a, b]
    for t in range(nl):
        k = Sa[ol + 2 * t]
        r = Sa[ol + 2 * t + 1]
        ok, ck = 6 * Ia[I_DSLOT, k], 6 * Ia[I_DLOC, k]
        orr, cr = 6 * Ia[I_DSLOT, r], 6 * Ia[I_DLOC, r]
        for a in range(6):
            for b in range(6):
                Dn[ok + a, cr + b] = Cr[k, a, b]
                Dn[orr + b, ck + a] = Cr[k, a, b]
    for t in range(nn):
        c = Sa[on + t]
        for a in range(6):
            for b in range(6):
                T1[a, b] = Y[c, a, b]
        _node_block(T1, Ia, Mm, Vv, Tt, Dn, Ia[I_PARENT, c], c, -1.0)
    return nd, nsib, od, osb


@njit(cache=True, inline="always")
def sibling_block(T1, Ia, Mm, Vv, Tt, Dn, a_, b_):
    """Write the coupling ``T1`` of sibling labels ``a_``, ``b_`` (projected, permuted)
    into the node system ``Dn`` and its transpose (both tree kernels)."""
    _node_block(T1, Ia, Mm, Vv, Tt, Dn, a_, b_, 1.0)


@njit(cache=True, inline="always")
def _node_block(T1, Ia, Mm, Vv, Tt, Dn, a_, b_, sign):
    """Write ``sign P_a T1 P_b`` (projected on the constraint spaces of labels ``a_``,
    ``b_``, permuted) into the node system ``Dn`` at block ``(a_, b_)`` and its
    transpose; ``T1`` is overwritten."""
    oa, ca = 6 * Ia[I_DSLOT, a_], 6 * Ia[I_DLOC, a_]
    ob, cb = 6 * Ia[I_DSLOT, b_], 6 * Ia[I_DLOC, b_]
    _proj_rows(T1, a_, Ia, Mm, Vv, sign)
    _proj_cols(T1, b_, Ia, Mm, Vv)
    _permute_block(T1, Ia, a_, b_, Tt[T_2])
    for a in range(6):
        for b in range(6):
            Dn[oa + a, cb + b] = T1[a, b]
            Dn[ob + b, ca + a] = T1[a, b]


@njit(cache=True, inline="always")
def eliminate_chains(Ia, Sa, Mm):
    """Block elimination of the chains in the schedule ``Sa`` (odd-even or sequential;
    LDL^T blocks, five-blocks for joints with one free direction; both tree kernels).
    Returns 0 or the label of a block that is not positive definite."""
    A = Mm[M_A]
    Cr = Mm[M_CR]
    ns = Sa[0]
    base = 5
    YL = Mm[M_YL]
    YR = Mm[M_YR]
    for s_ in range(ns):
        i = Sa[base + 3 * s_]
        l = Sa[base + 3 * s_ + 1]
        r = Sa[base + 3 * s_ + 2]
        if _step_five(Ia, i, l, r):
            if not _eliminate(A, Cr, YL, YR, i, l, r, 5):
                return i
        elif not _eliminate(A, Cr, YL, YR, i, l, r, 6):
            return i
    return 0


@njit(cache=True, inline="always")
def factor_nodes(Ia, Sa, Dn, nd, od):
    """Factor the dense node system ``Dn``: unrolled LDL^T of a single surviving joint's
    block, else Cholesky of each diagonal block (:func:`_node_block_end`; both tree
    kernels). Returns 0 or -1 (not positive definite)."""
    if nd == 1:
        # a single surviving joint (an unbranched chain): unrolled LDL^T of its block
        if Ia[I_FIVE, Sa[od]]:
            return 0 if _ldl(Dn, 5) else -1
        return 0 if _ldl(Dn, 6) else -1
    t = 0
    while t < nd:
        e = _node_block_end(Ia, Sa, od, nd, t)
        if not _chol(Dn[6 * t : 6 * e], 6 * (e - t)):
            return -1
        t = e
    return 0


@njit(cache=True, inline="always")
def _node_block_end(Ia, Sa, od, nd, t):
    """The dense slot after the block of the node system that starts at slot ``t`` (the
    next slot whose joint is first in its block, or ``nd``)."""
    e = t + 1
    while e < nd and Ia[I_DLOC, Sa[od + e]] != 0:
        e += 1
    return e


@njit(cache=True, inline="always")
def solve_schedule(Ia, Sa, Mm, Dn, bx):
    """Solve with the factors of :func:`eliminate_chains` and :func:`factor_nodes`: right
    hand sides ``bx`` (per label, constraint directions first) eliminated along the
    chains, the node system solved, back substitution (both tree kernels)."""
    A = Mm[M_A]
    YL = Mm[M_YL]
    YR = Mm[M_YR]
    ns = Sa[0]
    base = 5
    for s_ in range(ns):
        i, l, r = Sa[base + 3 * s_], Sa[base + 3 * s_ + 1], Sa[base + 3 * s_ + 2]
        eliminate_step(A, YL, YR, i, l, r, _step_five(Ia, i, l, r), bx)
    solve_nodes(Ia, Sa, Dn, bx)
    for s_ in range(ns - 1, -1, -1):  # back substitution along the chains
        i, l, r = Sa[base + 3 * s_], Sa[base + 3 * s_ + 1], Sa[base + 3 * s_ + 2]
        back_step(A, YL, YR, i, l, r, _step_five(Ia, i, l, r), bx)


@njit(cache=True, inline="always")
def eliminate_step(A, YL, YR, i, l, r, five, bx):
    """One step of the schedule's chain elimination on the right-hand sides ``bx`` (per
    label): label ``i``'s forward substitution, its neighbours ``l``, ``r`` (-1: none)
    updated; ``five``: a five-block step (:func:`_step_five`)."""
    z = bx[i]
    if five:
        _ldl_forward5(A[i], z)
        if l >= 0:
            _subTvec5(YL[i], z, bx[l])
        if r >= 0:
            _subTvec5(YR[i], z, bx[r])
    else:
        _ldl_forward(A[i], z, 6)
        if l >= 0:
            _subTvec_n(YL[i], z, bx[l], 6)
        if r >= 0:
            _subTvec_n(YR[i], z, bx[r], 6)


@njit(cache=True, inline="always")
def solve_nodes(Ia, Sa, Dn, bx):
    """The dense node system of the schedule (:func:`factor_nodes`' factors in ``Dn``) for
    the right-hand sides ``bx`` (per label) in place, through ``Dn``'s last column."""
    ns = Sa[0]
    nd = Sa[1]
    od = 5 + 3 * ns
    w6 = Ia[I_DLOC, 0]
    for t in range(nd):
        k = Sa[od + t]
        o = 6 * Ia[I_DSLOT, k]
        for a in range(6):
            Dn[o + a, w6] = bx[k, a]
    if nd == 1:
        x = Dn[:, w6]
        if Ia[I_FIVE, Sa[od]]:
            _ldl_forward(Dn, x, 5)  # row 5 of a five-block is the identity (x[5] = 0)
            _ldl_back(Dn, x, 5)
        else:
            _ldl_forward(Dn, x, 6)
            _ldl_back(Dn, x, 6)
    else:
        t = 0
        while t < nd:
            e = _node_block_end(Ia, Sa, od, nd, t)
            _chol_solve(Dn[6 * t : 6 * e], 6 * (e - t), w6)
            t = e
    for t in range(nd):
        k = Sa[od + t]
        o = 6 * Ia[I_DSLOT, k]
        for a in range(6):
            bx[k, a] = Dn[o + a, w6]


@njit(cache=True, inline="always")
def back_step(A, YL, YR, i, l, r, five, bx):
    """One step of the schedule's back substitution (:func:`eliminate_step` reversed)."""
    z = bx[i]
    if five:
        if l >= 0:
            _sub_dyx5(YL[i], bx[l], A[i], z)
        if r >= 0:
            _sub_dyx5(YR[i], bx[r], A[i], z)
        _ldl_back5(A[i], z)
    else:
        if l >= 0:
            _sub_dyx(YL[i], bx[l], A[i], z, 6)
        if r >= 0:
            _sub_dyx(YR[i], bx[r], A[i], z, 6)
        _ldl_back(A[i], z, 6)


@njit(cache=True, inline="always")
def joint_force(Ia, Mm, FT, k, e):
    """``e = H_k F_T`` (6,): the equivalent control force of joint ``k`` along its motion
    subspace (both tree kernels' solve passes)."""
    Hk = Mm[M_H, k]
    o = Ia[I_VO, k]
    n_v = Ia[I_NV, k]
    for i in range(6):
        s = 0.0
        for j in range(n_v):
            s += Hk[i, j] * FT[o + j]
        e[i] = s


@njit(cache=True, inline="always")
def natural_order(Ia, bx, t6):
    """``bx[k]`` from the elimination order (constraint directions first) back to the
    joint frame's order for every label (both tree kernels' solve passes)."""
    for k in range(1, Ia.shape[1]):
        for a in range(6):
            t6[a] = bx[k, a]
        for a in range(6):
            bx[k, Ia[I_PERM + a, k]] = t6[a]


# ---------------------------------------------------------------- kinematics


@njit(cache=True, _nrt=False)
def kinematics(Ia, Mm, Vv, R3, P3, Tt, q, v, world=True):
    """Relative poses, H, W (general joints), joint bias, body twists and joint
    relative twists S v; world poses only with ``world`` (the dynamics needs none)."""
    N = Ia.shape[1] - 1
    tR = Tt[T_R]
    t3 = Tt[T_3]
    Q = Tt[T_Q]
    tp = Vv[V_T6, 0]
    t6 = Vv[V_VJ, 0]
    for k in range(1, N + 1):
        n_v = Ia[I_NV, k]
        jt = Ia[I_JT, k]
        qo = Ia[I_QO, k]
        vo = Ia[I_VO, k]
        vk = v[vo : vo + n_v]
        Rk = R3[R_REL, k]
        A0 = R3[R_0, k]
        p0 = P3[P_0, k]
        prel = P3[P_REL, k]
        if Ia[I_DIAG, k] and (jt == REVOLUTE or jt == PRISMATIC or jt == FIXED):
            # fast path (no call): Rrel = R0 Rz(q), prel = p0 + R0 (0, 0, d)
            cJ = Vv[V_CJ, k]
            for i in range(6):
                cJ[i] = 0.0
            if jt == REVOLUTE:
                cq = np.cos(q[qo])
                sq = np.sin(q[qo])
                Vv[V_PRM2, k, 0] = cq
                Vv[V_PRM2, k, 1] = sq
                for i in range(3):
                    a0 = A0[i, 0]
                    a1 = A0[i, 1]
                    Rk[i, 0] = cq * a0 + sq * a1
                    Rk[i, 1] = cq * a1 - sq * a0
                    Rk[i, 2] = A0[i, 2]
                    prel[i] = p0[i]
            else:
                d = q[qo] if jt == PRISMATIC else 0.0
                for i in range(3):
                    for j in range(3):
                        Rk[i, j] = A0[i, j]
                    prel[i] = p0[i] + A0[i, 2] * d
        else:
            joint_frame(Ia, Mm, Vv, k, q, vk, tR, tp, t3, Q, t6)
            # pose of e_k in e_p: (R0, p0) o (tR, tp)
            for i in range(3):
                for j in range(3):
                    Rk[i, j] = A0[i, 0] * tR[0, j] + A0[i, 1] * tR[1, j] + A0[i, 2] * tR[2, j]
                prel[i] = p0[i] + A0[i, 0] * tp[0] + A0[i, 1] * tp[1] + A0[i, 2] * tp[2]
        pk = Ia[I_PARENT, k]
        if world:
            world_pose(R3, P3, k, pk)
        # twist: v_k = Phi^T v_p + S v  (S = H L for reversed joints)
        vel = Vv[V_VEL, k]
        sv = Vv[V_SV, k]
        _m2c(Rk, prel, Vv[V_VEL, pk], vel)
        if Ia[I_DIAG, k] and jt == REVOLUTE:
            # S v = v e_z (angular)
            vz = vk[0]
            for i in range(6):
                sv[i] = 0.0
            sv[2] = vz
            vel[2] += vz
        else:
            joint_twist(Ia, Mm, k, vk, t6, sv)
            for i in range(6):
                vel[i] += sv[i]


@njit(cache=True, _nrt=False)
def bias_forces(Ia, Mm, Vv, R3, P3, grav, use_grav, Jv):
    """Newton-Euler pass at zero joint acceleration (the nonlinear terms b of eq. 4).

    Bias accelerations ``ab``, bias interbody forces ``fb`` (velocity products,
    gravity, external wrenches ``fext``), ``b = S^T fb`` and the equivalent
    control force ``F_T = tau - b`` (orthonormal speeds: ``L^-T tau - H^T fb``).
    """
    N = Ia.shape[1] - 1
    t6 = Vv[V_T6, 0]
    vj = Vv[V_VJ, 0]
    ab = Vv[V_AB]
    fb = Vv[V_FB]
    fext = Vv[V_FEXT]
    tau = Jv[J_TAU]
    FT = Jv[J_FT]
    bvec = Jv[J_B]
    for k in range(1, N + 1):
        pk = Ia[I_PARENT, k]
        Rk = R3[R_REL, k]
        pr = P3[P_REL, k]
        _m2c(Rk, pr, ab[pk], ab[k])
        w = Vv[V_VEL, k]
        vj = Vv[V_SV, k]
        c = Vv[V_CJ, k]
        a = ab[k]
        # operands in locals (a store to a may alias them for the compiler)
        w0 = w[0]
        w1 = w[1]
        w2 = w[2]
        w3 = w[3]
        w4 = w[4]
        w5 = w[5]
        s0 = vj[0]
        s1 = vj[1]
        s2 = vj[2]
        s3 = vj[3]
        s4 = vj[4]
        s5 = vj[5]
        a0 = a[0] + (c[0] + w1 * s2 - w2 * s1)
        a1 = a[1] + (c[1] + w2 * s0 - w0 * s2)
        a2 = a[2] + (c[2] + w0 * s1 - w1 * s0)
        a3 = a[3] + (c[3] + w1 * s5 - w2 * s4 + w4 * s2 - w5 * s1)
        a4 = a[4] + (c[4] + w2 * s3 - w0 * s5 + w5 * s0 - w3 * s2)
        a5 = a[5] + (c[5] + w0 * s4 - w1 * s3 + w3 * s1 - w4 * s0)
        a[0] = a0
        a[1] = a1
        a[2] = a2
        a[3] = a3
        a[4] = a4
        a[5] = a5
        # I a and the momentum h = I w with I = [[J_O, m c~], [-m c~, m 1]]
        # (J_O the 3x3 block, mc = m c and m in V_MC)
        Ik = Mm[M_I, k]
        mc = Vv[V_MC, k]
        f = fb[k]
        _inertia_times(Ik, mc, a, f)
        _inertia_times(Ik, mc, w, t6)
        _add_gyro(w, t6, fext[k], f)
        if use_grav:
            # gravity in e_k axes, propagated: g_k = Rrel^T g_p (g_0 = grav)
            gx, gy, gz = _gravity_in_body(Vv[V_G], k, pk, Rk, grav)
            _sub_gravity(mc, gx, gy, gz, f)
    for k in range(N, 0, -1):
        pk = Ia[I_PARENT, k]
        if pk > 0:
            _f2p_add(R3[R_REL, k], P3[P_REL, k], fb[k], fb[pk], 1.0)
        o = Ia[I_VO, k]
        f = fb[k]
        if Ia[I_DIAG, k] and Ia[I_JT, k] == REVOLUTE:
            # b = H^T fb = the moment about the local z axis
            bz = f[2]
            bvec[o] = bz
            FT[o] = tau[o] - bz
            continue
        joint_bias(Ia, Mm, k, f, tau, t6, bvec, FT)


# ---------------------------------------------------------------- CFA: factor


# unrolled: factor's revolute chain link (constant blocks rotated about z in
# closed form instead of the general shift_inertia/coupling_block products)
@njit(cache=True, inline="always")
def _revolute_link(cq, sq, GP, K0P, C0P, Ak, Cp, T):
    """Blocks of a revolute chain link in the permuted order (see :func:`factor`):
    ``Ak[:5, :5] = GP + R^T K0P R`` on and below the diagonal (the part the
    elimination reads; identity row/column 5), ``Cp = C0P R`` with R = Rz' permuted
    (rotations of the index pairs (0, 1) and (2, 3)). Column by column in locals:
    stores are the bottleneck here."""
    for j in range(5):
        # column j of T = K0P R
        if j == 0 or j == 2:
            t0 = cq * K0P[0, j] + sq * K0P[0, j + 1]
            t1 = cq * K0P[1, j] + sq * K0P[1, j + 1]
            t2 = cq * K0P[2, j] + sq * K0P[2, j + 1]
            t3 = cq * K0P[3, j] + sq * K0P[3, j + 1]
            t4 = cq * K0P[4, j] + sq * K0P[4, j + 1]
        elif j == 1 or j == 3:
            t0 = cq * K0P[0, j] - sq * K0P[0, j - 1]
            t1 = cq * K0P[1, j] - sq * K0P[1, j - 1]
            t2 = cq * K0P[2, j] - sq * K0P[2, j - 1]
            t3 = cq * K0P[3, j] - sq * K0P[3, j - 1]
            t4 = cq * K0P[4, j] - sq * K0P[4, j - 1]
        else:
            t0 = K0P[0, 4]
            t1 = K0P[1, 4]
            t2 = K0P[2, 4]
            t3 = K0P[3, 4]
            t4 = K0P[4, 4]
        # rows i >= j of R^T T
        if j == 0:
            Ak[0, 0] = GP[0, 0] + cq * t0 + sq * t1
        if j <= 1:
            Ak[1, j] = GP[1, j] + cq * t1 - sq * t0
        if j <= 2:
            Ak[2, j] = GP[2, j] + cq * t2 + sq * t3
        if j <= 3:
            Ak[3, j] = GP[3, j] + cq * t3 - sq * t2
        Ak[4, j] = GP[4, j] + t4
        Ak[5, j] = 0.0
        Ak[j, 5] = 0.0
    Ak[5, 5] = 1.0
    # D_k = C0P R (column 5 of C0P is zero: the motion direction of joint k)
    for i in range(6):
        c0 = C0P[i, 0]
        c1 = C0P[i, 1]
        c2 = C0P[i, 2]
        c3 = C0P[i, 3]
        c4 = C0P[i, 4]
        Cp[i, 0] = cq * c0 + sq * c1
        Cp[i, 1] = cq * c1 - sq * c0
        Cp[i, 2] = cq * c2 + sq * c3
        Cp[i, 3] = cq * c3 - sq * c2
        Cp[i, 4] = c4
        Cp[i, 5] = 0.0


@njit(cache=True, _nrt=False)
def factor(Ia, Sa, Mm, Vv, R3, P3, Tt, Dn):
    """Assemble the blocks of A (eq. 32-38) and eliminate them: chains by
    odd-even reduction, then the dense node system (Cholesky). Returns 0, the
    label of a body whose block is not positive definite, or -1 (node system)."""
    N = Ia.shape[1] - 1
    A = Mm[M_A]
    Cr = Mm[M_CR]
    X = Mm[M_X]
    Y = Mm[M_Y]
    T1 = Tt[T_1]
    for k in range(1, N + 1):
        pk = Ia[I_PARENT, k]
        Ak = A[k]
        Gk = Mm[M_G, k]
        if (
            pk > 0
            and Ia[I_JT, k] == REVOLUTE
            and Ia[I_DIAG, k]
            and Ia[I_DIAG, pk]
            and Ia[I_ONE, pk] == k
        ):
            # chain link: revolute joint k, only child of a body with a diagonal joint.
            # Ã_k and D_k straight in the elimination order (constraint directions
            # first) from constants permuted once: GP = G_k[pk, pk], K0P = K0[pk, pk],
            # C0P = -(P_p C0 P_k)[pp, pk] (pp, pk: the joints' orders). The joint
            # rotation Rz' = diag(Rz, Rz) commutes with P_k and acts on the index pairs
            # (0, 1) and (2, 3) of the permuted order (index 4, linear z, and 5, the
            # motion direction, are fixed):
            #   Ã_k[:5, :5] = GP + Rz'^T K0P Rz',  D_k = C0P Rz'  (stored in Cr[pk]).
            _revolute_link(
                Vv[V_PRM2, k, 0],
                Vv[V_PRM2, k, 1],
                Mm[M_GP, k],
                Mm[M_K0P, k],
                Mm[M_C0P, k],
                Ak,
                Cr[pk],
                T1,
            )
            continue
        if pk > 0 and Ia[I_DIAG, k] and Ia[I_JT, k] == REVOLUTE:
            # revolute: Phi_k = Phi0_k Rz' (Rz' = diag(Rz, Rz)); with the constants
            # C0 = G_p Phi0 and K0 = Phi0^T G_p Phi0:  Y = C0 Rz',  Phi^T G_p Phi = Rz'^T K0 Rz'
            cq = Vv[V_PRM2, k, 0]
            sq = Vv[V_PRM2, k, 1]
            Yk = Y[k]
            C0 = Mm[M_C0, k]
            K0 = Mm[M_K0, k]
            for i in range(6):
                for b in range(0, 6, 3):
                    y0 = C0[i, b]
                    y1 = C0[i, b + 1]
                    Yk[i, b] = cq * y0 + sq * y1
                    Yk[i, b + 1] = cq * y1 - sq * y0
                    Yk[i, b + 2] = C0[i, b + 2]
                    k0 = K0[i, b]
                    k1 = K0[i, b + 1]
                    T1[i, b] = cq * k0 + sq * k1
                    T1[i, b + 1] = cq * k1 - sq * k0
                    T1[i, b + 2] = K0[i, b + 2]
            for j in range(6):
                for b in range(0, 6, 3):
                    t0 = T1[b, j]
                    t1 = T1[b + 1, j]
                    Ak[b, j] = Gk[b, j] + cq * t0 + sq * t1
                    Ak[b + 1, j] = Gk[b + 1, j] + cq * t1 - sq * t0
                    Ak[b + 2, j] = Gk[b + 2, j] + T1[b + 2, j]
            if Ia[I_ONE, pk] != k:
                # a child of a node: its siblings need Phi_k explicitly
                _build_phi(R3[R_REL, k], P3[P_REL, k], X[k])
        elif pk > 0:
            # X = Phi_k (6x6), Y = G_p X, A = G_k + X^T Y
            Xk = X[k]
            _build_phi(R3[R_REL, k], P3[P_REL, k], Xk)
            Yk = Y[k]
            shift_inertia(Ak, Gk, Mm[M_G, pk], Xk, Yk)
            _mirror6(Ak)
        if pk > 0:
            Yk = Y[k]
            # D_k = -P_p Y P_k  -> coupling (parent, k), stored in Cr[pk] if single child
            c1 = Ia[I_ONE, pk] == k
            if c1:
                Cp = Cr[pk]
                if Ia[I_DIAG, pk] and Ia[I_DIAG, k]:
                    # projection + reordering in one pass: -Y[perm_p, perm_k] on the
                    # constraint directions, zero elsewhere
                    ncp = Ia[I_NC, pk]
                    nck = Ia[I_NC, k]
                    for a in range(6):
                        ia = Ia[I_PERM + a, pk]
                        for b in range(6):
                            if a < ncp and b < nck:
                                Cp[a, b] = -Yk[ia, Ia[I_PERM + b, k]]
                            else:
                                Cp[a, b] = 0.0
                else:
                    coupling_block(Cp, Yk, Ia, Mm, Vv, Tt, pk, k)
        else:
            for i in range(6):
                for j in range(6):
                    Ak[i, j] = Gk[i, j]
        project_inertia(Ak, k, Ia, Mm, Vv, Tt)
    # block elimination of the chains (odd-even or sequential schedule)
    fail = eliminate_chains(Ia, Sa, Mm)
    if fail:
        return fail
    # dense node system
    nd, nsib, od, osb = node_system(Ia, Sa, Mm, Vv, Tt, Dn)
    for t in range(nsib):
        a_ = Sa[osb + 2 * t]
        b_ = Sa[osb + 2 * t + 1]
        _matTmul6(X[a_], Y[b_], T1, 1.0)
        sibling_block(T1, Ia, Mm, Vv, Tt, Dn, a_, b_)
    return factor_nodes(Ia, Sa, Dn, nd, od)


# ---------------------------------------------------------------- CFA: solve


# unrolled: F and a_k + F in six locals (a store may alias them for the compiler)
@njit(cache=True, inline="always")
def _node_acc(Gk, F, b, ak, revolute, ft):
    """The backward step of :func:`solve` at one label: ``F <- F + b`` (equivalent force
    plus the bias of the chain elimination; a diagonal revolute joint, ``revolute``,
    has ``F = b`` with its control force ``ft`` (N m) added about z, the F it held is
    not read) and ``a_k <- G_k (a_k + F)`` (e_k axes)."""
    if revolute:
        f0 = b[0]
        f1 = b[1]
        f2 = ft + b[2]
        f3 = b[3]
        f4 = b[4]
        f5 = b[5]
    else:
        f0 = F[0] + b[0]
        f1 = F[1] + b[1]
        f2 = F[2] + b[2]
        f3 = F[3] + b[3]
        f4 = F[4] + b[4]
        f5 = F[5] + b[5]
    F[0] = f0
    F[1] = f1
    F[2] = f2
    F[3] = f3
    F[4] = f4
    F[5] = f5
    _matvec6_vals(Gk, ak[0] + f0, ak[1] + f1, ak[2] + f2, ak[3] + f3, ak[4] + f4, ak[5] + f5, ak)


@njit(cache=True, _nrt=False)
def solve(Ia, Sa, Mm, Vv, R3, P3, Dn, Jv):
    """Given F_T (row J_FT, orthonormal speeds): constraint forces f = W F_S
    (eq. 29 via the factorization), equivalent forces F and Q̈ (eq. 28, row J_QDD),
    then the linear accelerations V̇ of every e_k from Q̈ (:func:`kinematic_acc`)."""
    N = Ia.shape[1] - 1
    t6 = Vv[V_T6, 0]
    tv = Vv[V_VJ, 0]
    Fe = Vv[V_FE]
    af = Vv[V_AF]
    bx = Vv[V_BX]
    FT = Jv[J_FT]
    qdd = Jv[J_QDD]
    # one backward pass: e_k = H F_T ; z_k = e_k - sum_c Phi_c e_c ; a_k = G_k z_k
    for k in range(N + 1):
        for i in range(6):
            af[k, i] = 0.0
    for k in range(N, 0, -1):
        o = Ia[I_VO, k]
        e = Fe[k]
        ak = af[k]
        pk = Ia[I_PARENT, k]
        if Ia[I_DIAG, k] and Ia[I_JT, k] == REVOLUTE:
            # e = F_T about the local z axis (not stored: the pass of eq. 28 adds it);
            # Phi e = [R e_z F_T; 0]
            f = FT[o]
            _matvec6_vals(Mm[M_G, k], ak[0], ak[1], ak[2] + f, ak[3], ak[4], ak[5], ak)
            if pk > 0:
                Rk = R3[R_REL, k]
                af[pk, 0] -= Rk[0, 2] * f
                af[pk, 1] -= Rk[1, 2] * f
                af[pk, 2] -= Rk[2, 2] * f
            continue
        joint_force(Ia, Mm, FT, k, e)
        for i in range(6):
            t6[i] = ak[i] + e[i]
        _matvec6(Mm[M_G, k], t6, ak)
        if pk > 0:
            _f2p_add(R3[R_REL, k], P3[P_REL, k], e, af[pk], -1.0)
    # X_k = -P_k (a_k - Phi^T a_p)
    for k in range(1, N + 1):
        pk = Ia[I_PARENT, k]
        _relative_acc(R3, P3, af, k, pk, t6)
        if Ia[I_DIAG, k]:
            # P_k a 0/1 mask: projection and reordering in one pass
            mask = Vv[V_MASK, k]
            for a in range(6):
                i = Ia[I_PERM + a, k]
                bx[k, a] = -mask[i] * t6[i]
        else:
            _proj_vec(t6, k, Ia, Mm, Vv, tv, -1.0)
            for a in range(6):
                bx[k, a] = tv[Ia[I_PERM + a, k]]
    # elimination of the right-hand sides, node system, back substitution (same schedule)
    solve_schedule(Ia, Sa, Mm, Dn, bx)
    # back to natural order: f_k = W F_S (6-vector, e_k axes)
    natural_order(Ia, bx, t6)
    # eq. 28: F = H F_T + W F_S ; V̇ = G (F - sum Phi F_c) ; Q̈ = H^T (V̇ - Phi^T V̇_p)
    for k in range(N + 1):
        for i in range(6):
            af[k, i] = 0.0
    for k in range(N, 0, -1):
        F = Fe[k]
        rd = Ia[I_DIAG, k] and Ia[I_JT, k] == REVOLUTE
        _node_acc(Mm[M_G, k], F, bx[k], af[k], rd, FT[Ia[I_VO, k]] if rd else 0.0)
        pk = Ia[I_PARENT, k]
        if pk > 0:
            _f2p_add(R3[R_REL, k], P3[P_REL, k], F, af[pk], -1.0)
    for k in range(1, N + 1):
        pk = Ia[I_PARENT, k]
        o = Ia[I_VO, k]
        if Ia[I_DIAG, k] and Ia[I_JT, k] == REVOLUTE:
            # H = e_z (angular): only the z component of V̇_k - Phi^T V̇_p
            s = af[k, 2]
            if pk > 0:
                Rk = R3[R_REL, k]
                s -= Rk[0, 2] * af[pk, 0] + Rk[1, 2] * af[pk, 1] + Rk[2, 2] * af[pk, 2]
            qdd[o] = s
            continue
        _relative_acc(R3, P3, af, k, pk, t6)
        joint_qdd(Ia, Mm, k, t6, qdd)
    # the returned accelerations of the bodies from the joints' (eq. 16) instead of
    # eq. 28's G (F - sum Phi F_c): those carry round-off of the whole system's scale in
    # every body's constrained directions (af[0] stayed zero: no pass adds to it)
    for k in range(1, N + 1):
        kinematic_acc(Ia, Mm, R3, P3, af, qdd, k, t6, tv)


# ---------------------------------------------------------------- reactions


@njit(cache=True, _nrt=False)
def reactions_into(Ia, Vv, R3, P3, out):
    """Physical joint reactions = F (equivalent) + fb (bias), for the declared joints.

    Non-reversed: rotate from e_k (aligned axes) to the declared child frame (R_A).
    Reversed: the wrench of the declared parent (outboard body k) on the declared
    child, at the declared child frame origin in its axes (pose R_D, P_D in e_k)."""
    N = Ia.shape[1] - 1
    fb = Vv[V_FB]
    Fe = Vv[V_FE]
    for k in range(1, N + 1):
        r = Ia[I_JROW, k]
        n0 = Fe[k, 0] + fb[k, 0]
        n1 = Fe[k, 1] + fb[k, 1]
        n2 = Fe[k, 2] + fb[k, 2]
        f0 = Fe[k, 3] + fb[k, 3]
        f1 = Fe[k, 4] + fb[k, 4]
        f2 = Fe[k, 5] + fb[k, 5]
        if Ia[I_REV, k]:
            R = R3[R_D, k]
            p = P3[P_D, k]
            m0 = n0 - (p[1] * f2 - p[2] * f1)
            m1 = n1 - (p[2] * f0 - p[0] * f2)
            m2 = n2 - (p[0] * f1 - p[1] * f0)
            for i in range(3):
                out[r, i] = -(R[0, i] * m0 + R[1, i] * m1 + R[2, i] * m2)
                out[r, 3 + i] = -(R[0, i] * f0 + R[1, i] * f1 + R[2, i] * f2)
        else:
            R = R3[R_A, k]
            for i in range(3):
                out[r, i] = R[i, 0] * n0 + R[i, 1] * n1 + R[i, 2] * n2
                out[r, 3 + i] = R[i, 0] * f0 + R[i, 1] * f1 + R[i, 2] * f2


@njit(cache=True, _nrt=False)
def reversed_frames(Ia, R3, P3):
    """Pose (R_D, P_D) of the declared child frame in e_k, for reversed joints."""
    N = Ia.shape[1] - 1
    for k in range(1, N + 1):
        if Ia[I_REV, k]:
            Rr = R3[R_REL, k]
            R0 = R3[R_0, k]
            Ra = R3[R_A, k]
            p0 = P3[P_0, k]
            pr = P3[P_REL, k]
            # rotated inboard frame c' in e_k: Rr^T (R0, p0 - prel); declared c = c' Ra^T
            for i in range(3):
                for j in range(3):
                    s = 0.0
                    for m in range(3):
                        t = Rr[0, i] * R0[0, m] + Rr[1, i] * R0[1, m] + Rr[2, i] * R0[2, m]
                        s += t * Ra[j, m]
                    R3[R_D, k, i, j] = s
                P3[P_D, k, i] = (
                    Rr[0, i] * (p0[0] - pr[0])
                    + Rr[1, i] * (p0[1] - pr[1])
                    + Rr[2, i] * (p0[2] - pr[2])
                )


# ---------------------------------------------------------------- drivers


@njit(cache=True, _nrt=False, inline="always")
def forward_dynamics(Ia, Sa, Mm, Vv, R3, P3, Tt, Dn, q, v, Jv, grav, use_grav, reac, world):
    """Full serialized CFA: kinematics, F_T, factor, solve, reactions. Returns status.
    World poses (R_W, P_W) only with ``world`` (accelerations and reactions need none).
    Inlined into the entry points (a call with these many array arguments cost
    ~0.13 us, 7 % of a 5-body chain)."""
    kinematics(Ia, Mm, Vv, R3, P3, Tt, q, v, world)
    bias_forces(Ia, Mm, Vv, R3, P3, grav, use_grav, Jv)
    st = factor(Ia, Sa, Mm, Vv, R3, P3, Tt, Dn)
    if st != 0:
        return st
    solve(Ia, Sa, Mm, Vv, R3, P3, Dn, Jv)
    reversed_frames(Ia, R3, P3)
    reactions_into(Ia, Vv, R3, P3, reac)
    return 0


@njit(cache=True, inline="always")
def _body_acceleration(Vv, R3, P3, k, out):
    """``out = [alpha; a_origin]`` (world axes) of the body of label k (see
    :func:`body_accelerations`)."""
    w = Vv[V_VEL, k]
    al = Vv[V_AF, k]
    ab = Vv[V_AB, k]
    d = P3[P_B, k]
    ax = al[0] + ab[0]
    ay = al[1] + ab[1]
    az = al[2] + ab[2]
    # a_O = v̇ + w x v
    lx = al[3] + ab[3] + w[1] * w[5] - w[2] * w[4]
    ly = al[4] + ab[4] + w[2] * w[3] - w[0] * w[5]
    lz = al[5] + ab[5] + w[0] * w[4] - w[1] * w[3]
    # + alpha x d + w x (w x d)
    cx = w[1] * d[2] - w[2] * d[1]
    cy = w[2] * d[0] - w[0] * d[2]
    cz = w[0] * d[1] - w[1] * d[0]
    lx += ay * d[2] - az * d[1] + w[1] * cz - w[2] * cy
    ly += az * d[0] - ax * d[2] + w[2] * cx - w[0] * cz
    lz += ax * d[1] - ay * d[0] + w[0] * cy - w[1] * cx
    Rw = R3[R_W, k]
    for i in range(3):
        out[i] = Rw[i, 0] * ax + Rw[i, 1] * ay + Rw[i, 2] * az
        out[3 + i] = Rw[i, 0] * lx + Rw[i, 1] * ly + Rw[i, 2] * lz


@njit(cache=True, _nrt=False)
def body_accelerations(Ia, Vv, R3, P3, out):
    """True accelerations of every body-frame origin after a forward-dynamics pass:
    ``out[k] = [alpha; a_origin]`` in world axes (spatial acceleration of e_k is
    ``V̇ + a_bias``; its linear part plus ``w x v`` is the classical acceleration of
    O_k, then shifted to the body origin ``d`` (e_k axes))."""
    N = Ia.shape[1] - 1
    for k in range(1, N + 1):
        _body_acceleration(Vv, R3, P3, k, out[k])


@njit(cache=True, _nrt=False)
def inverse_dynamics(Ia, Mm, Vv, R3, P3, Tt, q, v, qdd, Jv, grav, use_grav, tau, reac):
    """Recursive Newton-Euler: tau = M qdd + b (uses the tree kinematics)."""
    N = Ia.shape[1] - 1
    t6 = Vv[V_T6, 0]
    sv = Vv[V_VJ, 0]
    Fe = Vv[V_FE]
    af = Vv[V_AF]
    kinematics(Ia, Mm, Vv, R3, P3, Tt, q, v, True)
    for i in range(Jv.shape[1]):
        Jv[J_TAU, i] = 0.0
    bias_forces(Ia, Mm, Vv, R3, P3, grav, use_grav, Jv)
    bvec = Jv[J_B]
    for i in range(6):
        af[0, i] = 0.0
    for k in range(1, N + 1):
        pk = Ia[I_PARENT, k]
        _m2c(R3[R_REL, k], P3[P_REL, k], af[pk], af[k])
        o = Ia[I_VO, k]
        joint_twist(Ia, Mm, k, qdd[o : o + Ia[I_NV, k]], t6, sv)
        for i in range(6):
            af[k, i] += sv[i]
        _inertia_times(Mm[M_I, k], Vv[V_MC, k], af[k], Fe[k])
    for k in range(N, 0, -1):
        pk = Ia[I_PARENT, k]
        if pk > 0:
            _f2p_add(R3[R_REL, k], P3[P_REL, k], Fe[k], Fe[pk], 1.0)
        joint_project(Ia, Mm, k, Fe[k], t6, tau)
        o = Ia[I_VO, k]
        for j in range(Ia[I_NV, k]):
            tau[o + j] += bvec[o + j]
    reversed_frames(Ia, R3, P3)
    reactions_into(Ia, Vv, R3, P3, reac)


@njit(cache=True, _nrt=False)
def solve_columns(Ia, Sa, Mm, Vv, R3, P3, Tt, Dn, q, Jv, cols, out):
    """``M^-1 cols`` with one factorization (cols already in orthonormal speeds)."""
    nv = cols.shape[0]
    for i in range(Jv.shape[1]):
        Jv[J_TAU, i] = 0.0
    kinematics(Ia, Mm, Vv, R3, P3, Tt, q, Jv[J_TAU], True)
    st = factor(Ia, Sa, Mm, Vv, R3, P3, Tt, Dn)
    if st != 0:
        return st
    for c in range(cols.shape[1]):
        for i in range(nv):
            Jv[J_FT, i] = cols[i, c]
        solve(Ia, Sa, Mm, Vv, R3, P3, Dn, Jv)
        for i in range(nv):
            out[i, c] = Jv[J_QDD, i]
    return 0


@njit(cache=True, _nrt=False)
def qdot_all(Ia, Vv, q, v, out):
    """Coordinate rates of every joint."""
    N = Ia.shape[1] - 1
    for k in range(1, N + 1):
        qo = Ia[I_QO, k]
        vo = Ia[I_VO, k]
        joint_qdot(
            Ia[I_JT, k],
            q[qo : qo + Ia[I_NQ, k]],
            v[vo : vo + Ia[I_NV, k]],
            out[qo : qo + Ia[I_NQ, k]],
        )


@njit(cache=True, _nrt=False, parallel=True)
def forward_dynamics_qdd_parallel(
    Ia,
    Sa,
    Mt,
    Vt,
    R3t,
    P3t,
    Tt,
    Dt,
    Jt,
    Q,
    V,
    TAU,
    grav,
    use_grav,
    QDD,
    REAC,
    status,
    FEXT,
    FS,
    ACC,
    FTo,
    extra,
):
    """Batch split into one contiguous chunk per workspace copy (leading axis of the
    workspace arrays), chunks run in parallel threads (one chunk: plain loop).

    With ``extra``: per-state external wrenches ``FEXT`` (e_k at O_k) are used and
    ``FS`` (constraint forces ``W F_S``), ``ACC`` (world accelerations of the body
    origins) and ``FTo`` (equivalent control forces) are written; otherwise those
    arrays are ignored (pass 1-element dummies)."""
    nth = Mt.shape[0]
    nb = Q.shape[0]
    nv = QDD.shape[1]
    n1 = Ia.shape[1]
    for c in prange(nth):
        lo = (nb * c) // nth
        hi = (nb * (c + 1)) // nth
        Jv = Jt[c]
        Vv = Vt[c]
        for s in range(lo, hi):
            for i in range(nv):
                Jv[J_TAU, i] = TAU[s, i]
            if extra:
                for k in range(n1):
                    for i in range(6):
                        Vv[V_FEXT, k, i] = FEXT[s, k, i]
            st = forward_dynamics(
                Ia,
                Sa,
                Mt[c],
                Vv,
                R3t[c],
                P3t[c],
                Tt[c],
                Dt[c],
                Q[s],
                V[s],
                Jv,
                grav,
                use_grav,
                REAC[s],
                extra,
            )
            if st != 0:
                status[c, 0] = s
                status[c, 1] = st
                break
            for i in range(nv):
                QDD[s, i] = Jv[J_QDD, i]
            if extra:
                for i in range(nv):
                    FTo[s, i] = Jv[J_FT, i]
                for k in range(n1):
                    for i in range(6):
                        FS[s, k, i] = Vv[V_BX, k, i]
                body_accelerations(Ia, Vv, R3t[c], P3t[c], ACC[s])
        if extra:
            for k in range(n1):
                for i in range(6):
                    Vv[V_FEXT, k, i] = 0.0


# ---------------------------------------------------------------- packed workspace


def buffer_layout(n, nd6, nv1, w6=None):
    """Offsets and shapes of the views of the single float workspace buffer (``nd6``:
    rows of the node system, ``w6`` its block width, default ``nd6``)."""
    w6 = nd6 if w6 is None else w6
    shapes = [
        (NM, n + 1, 6, 6),
        (NV, n + 1, 6),
        (NR, n + 1, 3, 3),
        (NP, n + 1, 3),
        (NT, 6, 6),
        (nd6, w6 + 1),
        (4, nv1),
        (3,),
    ]
    out, o = [], 0
    for sh in shapes:
        size = int(np.prod(sh))
        out.append((o, sh))
        o += size
    return out, o


@intrinsic
def _cview(typingctx, buf, offset, shape):
    """``buf[offset:offset + prod(shape)].reshape(shape)`` for a contiguous 1-d ``buf``,
    without reshape's checks (the layout is ours; see :func:`buffer_layout`): the
    eight reshapes of a call cost ~0.25 us, a fifth of a 5-body chain."""
    ndim = len(shape)
    rtype = types.Array(buf.dtype, ndim, "C")

    def codegen(context, builder, sig, args):
        src = context.make_array(sig.args[0])(context, builder, args[0])
        out = context.make_array(rtype)(context, builder)
        intp = context.get_value_type(types.intp)
        dims = [
            context.cast(builder, d, t, types.intp)
            for d, t in zip(cgutils.unpack_tuple(builder, args[2], ndim), sig.args[2])
        ]
        itemsize = context.get_constant(
            types.intp, context.get_abi_sizeof(context.get_data_type(buf.dtype))
        )
        strides = [None] * ndim
        acc = itemsize
        for i in range(ndim - 1, -1, -1):
            strides[i] = acc
            acc = builder.mul(acc, dims[i])
        data = builder.gep(src.data, [context.cast(builder, args[1], sig.args[1], types.intp)])
        context.populate_array(
            out,
            data=data,
            shape=cgutils.pack_array(builder, dims, intp),
            strides=cgutils.pack_array(builder, strides, intp),
            itemsize=itemsize,
            meminfo=src.meminfo,
            parent=src.parent,
        )
        # a view is a new reference to buf's memory: counted where the caller counts
        # references (NRT kernels; a no-op in the _nrt=False kernels)
        return impl_ret_borrowed(context, builder, rtype, out._getvalue())

    return rtype(buf, offset, shape), codegen


@njit(cache=True, inline="always")
def _views(Ia, buf):
    n1 = Ia.shape[1]
    nv1 = Ia[I_SIZE, 0]
    nd6 = Ia[I_SIZE + 1, 0]
    w6 = Ia[I_DLOC, 0]
    o = 0
    Mm = _cview(buf, o, (NM, n1, 6, 6))
    o += NM * n1 * 36
    Vv = _cview(buf, o, (NV, n1, 6))
    o += NV * n1 * 6
    R3 = _cview(buf, o, (NR, n1, 3, 3))
    o += NR * n1 * 9
    P3 = _cview(buf, o, (NP, n1, 3))
    o += NP * n1 * 3
    Tt = _cview(buf, o, (NT, 6, 6))
    o += NT * 36
    Dn = _cview(buf, o, (nd6, w6 + 1))
    o += nd6 * (w6 + 1)
    Jv = _cview(buf, o, (4, nv1))
    o += 4 * nv1
    grav = _cview(buf, o, (3,))
    return Mm, Vv, R3, P3, Tt, Dn, Jv, grav


def pack_ints(Ia, Sa, nq, nv, nj):
    """``(Ib, Ia, Sa)``: the int buffer of :func:`qdd_reactions` (header, copies of
    ``Ia`` and ``Sa``) and views of its ``Ia`` and ``Sa`` parts."""
    head = np.zeros(IB_HEAD, np.int64)
    head[IB_N1], head[IB_NQ], head[IB_NV], head[IB_NJ] = Ia.shape[1], nq, nv, nj
    Ib = np.concatenate([head, np.ravel(Ia), Sa]).astype(np.int64)
    o = IB_HEAD + Ia.size
    return Ib, Ib[IB_HEAD:o].reshape(Ia.shape), Ib[o:]


@njit(cache=True, inline="always")
def unpack_ints(Ib):
    """Views ``(Ia, Sa)`` of the packed int buffer."""
    n1 = Ib[IB_N1]
    o = IB_HEAD + NI * n1
    return _cview(Ib, IB_HEAD, (NI, n1)), Ib[o:]


@njit(cache=True, _nrt=False)
def qdd_reactions_batch(Ib, buf, Q, V, TAU, QDD, REAC, status):
    """States ``Q[s], V[s], TAU[s]`` one after the other on the packed workspaces (one
    thread, no per-state work outside the pass): ``QDD[s]`` and ``REAC[s]``. On a
    failure ``status = (s, code)`` and the loop stops."""
    Ia, Sa = unpack_ints(Ib)
    nv = Ib[IB_NV]
    Mm, Vv, R3, P3, Tt, Dn, Jv, grav = _views(Ia, buf)
    use_grav = Ib[IB_GRAV] != 0
    for s in range(Q.shape[0]):
        for i in range(nv):
            Jv[J_TAU, i] = TAU[s, i]
        st = forward_dynamics(
            Ia, Sa, Mm, Vv, R3, P3, Tt, Dn, Q[s], V[s], Jv, grav, use_grav, REAC[s], False
        )
        if st != 0:
            status[0] = s
            status[1] = st
            return
        for i in range(nv):
            QDD[s, i] = Jv[J_QDD, i]


@njit(cache=True, _nrt=False)
def constraint_forces_into(Ia, Vv, R3, out):
    """The constraint part ``W F_S`` of every tree joint's equivalent interbody force
    (``V_BX`` after a solve), rotated from the aligned axes of e_k to the joint-frame
    axes of the outboard body (rows ``I_JROW``)."""
    N = Ia.shape[1] - 1
    fs = Vv[V_BX]
    for k in range(1, N + 1):
        r = Ia[I_JROW, k]
        R = R3[R_A, k]
        for i in range(3):
            out[r, i] = R[i, 0] * fs[k, 0] + R[i, 1] * fs[k, 1] + R[i, 2] * fs[k, 2]
            out[r, 3 + i] = R[i, 0] * fs[k, 3] + R[i, 1] * fs[k, 4] + R[i, 2] * fs[k, 5]


@njit_signature(
    "int64(int64[::1], float64[::1], float64[::1], float64[::1], float64[::1], "
    "float64[::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[::1], "
    "int64[::1])",
    cache=True,
    _nrt=False,
)
def qdd_reactions(Ib, buf, q, v, tau, qdd_out, reac_out, acc_out, fs_out, ft_out, body_row):
    """Single state with the packed workspaces: ``qdd`` and every reaction.

    With ``acc_out`` of ``len(body_row) - 1`` rows (else pass empty arrays) also the
    body accelerations (``acc_out[body_row[k]]``, :func:`body_accelerations`): the
    result of ``forward_dynamics`` for the price of the world poses. With ``fs_out`` of
    n_joints rows also the constraint forces ``W F_S`` per joint
    (:func:`constraint_forces_into`) and the equivalent control forces (``ft_out``, nv).

    Returns 0, the status of :func:`forward_dynamics`, -3 if an array has the wrong
    size or -4 for non-finite accelerations (checked with ``acc_out`` only). The
    explicit signature lets the dispatcher reject other array types (TypeError)
    instead of compiling for them: the caller converts and retries.
    """
    Ia, Sa = unpack_ints(Ib)
    nv = Ib[IB_NV]
    n1 = Ib[IB_N1]
    full = acc_out.shape[0] > 0
    cfa = fs_out.shape[0] > 0
    if (
        q.shape[0] != Ib[IB_NQ]
        or v.shape[0] != nv
        or tau.shape[0] < nv
        or qdd_out.shape[0] != nv
        or reac_out.shape[0] != Ib[IB_NJ]
        or reac_out.shape[1] != 6
    ):
        return -3
    if full and (body_row.shape[0] != n1 or acc_out.shape[1] != 6):
        return -3
    if cfa and (ft_out.shape[0] < nv or fs_out.shape[0] != Ib[IB_NJ] or fs_out.shape[1] != 6):
        return -3
    Mm, Vv, R3, P3, Tt, Dn, Jv, grav = _views(Ia, buf)
    for i in range(nv):
        Jv[J_TAU, i] = tau[i]
    st = forward_dynamics(
        Ia, Sa, Mm, Vv, R3, P3, Tt, Dn, q, v, Jv, grav, Ib[IB_GRAV] != 0, reac_out, full
    )
    for i in range(nv):
        qdd_out[i] = Jv[J_QDD, i]
    if st != 0:
        return st
    if full:
        for i in range(nv):
            if not np.isfinite(qdd_out[i]):
                return -4
        for k in range(1, n1):
            _body_acceleration(Vv, R3, P3, k, acc_out[body_row[k]])
    if cfa:
        for i in range(nv):
            ft_out[i] = Jv[J_FT, i]
        constraint_forces_into(Ia, Vv, R3, fs_out)
    return st
