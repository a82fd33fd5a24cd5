"""Joint kinematics in numba: transform, motion subspace, bias, manifold update.

Each joint of the spanning tree is described by an integer type code and a row
of parameters ``prm`` (axes). For the tree body ``k`` the kernels need, in the
tree frame ``e_k`` (the joint frame on body ``k``):

* the pose of ``e_k`` in the inboard joint frame (``R``, ``p``);
* an orthonormal motion subspace ``H`` (6 x nv) and its complement ``W``;
* the velocity-product acceleration ``c`` (``d/dt`` of the relative twist minus
  ``H dv/dt``), all ``[angular; linear]``.

Revolute, Prismatic, Cylindrical, Screw and Planar joints are evaluated in
*aligned* frames (joint frames rotated so that the axis or plane normal is local z,
:meth:`flexmbd.joint_types.JointType.aligned_frame`); their H is then a set of unit
vectors and W a 0/1 mask (Screw: ``H = [e_z; h e_z] / sqrt(1 + h^2)``, the speed
scale ``L = sqrt(1 + h^2)`` as for reversed joints). The type codes are those of
:mod:`flexmbd.joint_types`.

A *reversed* tree joint (the topology made the declared child the inboard body)
moves the declared parent frame relative to the declared child frame:
``V = -Ad_T H v`` with ``T`` the declared transform. ``-Ad_T H`` is
orthonormalised as ``H' L`` (``H'`` orthonormal, ``L`` nv x nv); the CFA then
works with the speeds ``L v`` and maps back (``qdd = L^-1 qdd'``).

All functions write into caller-provided arrays (no allocation).
"""

import numpy as np

from ._jit import njit
from ._nbrotation import axis_rot, quat_rot
from .joint_types import (  # noqa: F401 (codes re-exported for the kernels)
    CYLINDRICAL,
    FIXED,
    FREE,
    PLANAR,
    PRISMATIC,
    REVOLUTE,
    SCREW,
    SPHERICAL,
    UNIVERSAL,
)

__all__ = ["joint_kinematics", "reverse_joint", "joint_qdot", "scale_screw"]


@njit(cache=True, inline="always")
def _rot_z(th, R):
    """The rotation by ``th`` (rad) about z into the upper-left 2x2 block of ``R``."""
    cq = np.cos(th)
    sq = np.sin(th)
    R[0, 0] = cq
    R[0, 1] = -sq
    R[1, 0] = sq
    R[1, 1] = cq


@njit(cache=True, inline="always")
def _minus_ad(R, p, w0, w1, w2, u0, u1, u2):
    """``-Ad_T x`` for ``x = [w; u]``, ``Ad_T = [[R, 0], [p~ R, R]]``, as six scalars."""
    wx = R[0, 0] * w0 + R[0, 1] * w1 + R[0, 2] * w2
    wy = R[1, 0] * w0 + R[1, 1] * w1 + R[1, 2] * w2
    wz = R[2, 0] * w0 + R[2, 1] * w1 + R[2, 2] * w2
    ux = R[0, 0] * u0 + R[0, 1] * u1 + R[0, 2] * u2
    uy = R[1, 0] * u0 + R[1, 1] * u1 + R[1, 2] * u2
    uz = R[2, 0] * u0 + R[2, 1] * u1 + R[2, 2] * u2
    return (
        -wx,
        -wy,
        -wz,
        -(ux + p[1] * wz - p[2] * wy),
        -(uy + p[2] * wx - p[0] * wz),
        -(uz + p[0] * wy - p[1] * wx),
    )


@njit(cache=True, inline="always")
def _remove_component(A, k, B, j):
    """Gram-Schmidt step on 6-row columns: ``B[:, j] -= d A[:, k]`` with
    ``d = A[:, k] . B[:, j]`` (``A[:, k]`` of unit length); returns ``d``."""
    d = 0.0
    for i in range(6):
        d += A[i, k] * B[i, j]
    for i in range(6):
        B[i, j] -= d * A[i, k]
    return d


@njit(cache=True, inline="always")
def _normalize_column(A, j):
    """Scale column ``j`` of the 6-row ``A`` to unit length; returns its former norm."""
    nrm = 0.0
    for i in range(6):
        nrm += A[i, j] * A[i, j]
    nrm = np.sqrt(nrm)
    for i in range(6):
        A[i, j] /= nrm
    return nrm


@njit(cache=True)
def joint_kinematics(jt, prm, prm2, q, v, R, p, H, W, c, tmp3, general, Hc, Wc):
    """Declared-direction kinematics of one joint in its *aligned* frames.

    Allocation-free scalar code (see docs/design/architecture.rst); the ``Rz(q)``
    rotation of the Revolute, Cylindrical, Screw and Planar branches is one inlined
    helper.

    The tree frames are the joint frames rotated so that the joint axis is the
    local z axis (Revolute, Prismatic, Cylindrical; the plane normal for Planar,
    with its in-plane axes as x, y). Writes the child-frame pose in the parent
    frame (R, p) and the bias ``c``; for ``general`` joints (Universal, or any
    reversed joint) also H and W from the constants Hc, Wc (Universal: its
    q-dependent first axis).
    """
    for i in range(6):
        c[i] = 0.0
    for i in range(3):
        p[i] = 0.0
        for j in range(3):
            R[i, j] = 1.0 if i == j else 0.0
    if general:
        for i in range(6):
            for j in range(6):
                H[i, j] = Hc[i, j]
                W[i, j] = Wc[i, j]
    if jt == REVOLUTE:
        _rot_z(q[0], R)
    elif jt == PRISMATIC:
        p[2] = q[0]
    elif jt == CYLINDRICAL:
        _rot_z(q[0], R)
        p[2] = q[1]
    elif jt == SCREW:
        # rotation th about z and advance h th along z (prm[3] = h, m/rad)
        _rot_z(q[0], R)
        p[2] = prm[3] * q[0]
    elif jt == UNIVERSAL:
        # R = Rot(a1, q0) Rot(a2, q1); a1 in child axes = Rot(a2, q1)^T a1
        axis_rot(prm[0], prm[1], prm[2], q[0], R)
        R2 = tmp3
        axis_rot(prm[3], prm[4], prm[5], q[1], R2)
        # unrolled: R <- R R2 in place without a temporary 3x3 (allocation-free kernel)
        r00 = R[0, 0] * R2[0, 0] + R[0, 1] * R2[1, 0] + R[0, 2] * R2[2, 0]
        r01 = R[0, 0] * R2[0, 1] + R[0, 1] * R2[1, 1] + R[0, 2] * R2[2, 1]
        r02 = R[0, 0] * R2[0, 2] + R[0, 1] * R2[1, 2] + R[0, 2] * R2[2, 2]
        r10 = R[1, 0] * R2[0, 0] + R[1, 1] * R2[1, 0] + R[1, 2] * R2[2, 0]
        r11 = R[1, 0] * R2[0, 1] + R[1, 1] * R2[1, 1] + R[1, 2] * R2[2, 1]
        r12 = R[1, 0] * R2[0, 2] + R[1, 1] * R2[1, 2] + R[1, 2] * R2[2, 2]
        r20 = R[2, 0] * R2[0, 0] + R[2, 1] * R2[1, 0] + R[2, 2] * R2[2, 0]
        r21 = R[2, 0] * R2[0, 1] + R[2, 1] * R2[1, 1] + R[2, 2] * R2[2, 1]
        r22 = R[2, 0] * R2[0, 2] + R[2, 1] * R2[1, 2] + R[2, 2] * R2[2, 2]
        R[0, 0] = r00
        R[0, 1] = r01
        R[0, 2] = r02
        R[1, 0] = r10
        R[1, 1] = r11
        R[1, 2] = r12
        R[2, 0] = r20
        R[2, 1] = r21
        R[2, 2] = r22
        a1x = R2[0, 0] * prm[0] + R2[1, 0] * prm[1] + R2[2, 0] * prm[2]
        a1y = R2[0, 1] * prm[0] + R2[1, 1] * prm[1] + R2[2, 1] * prm[2]
        a1z = R2[0, 2] * prm[0] + R2[1, 2] * prm[1] + R2[2, 2] * prm[2]
        H[0, 0] = a1x
        H[1, 0] = a1y
        H[2, 0] = a1z
        nx = a1y * prm[5] - a1z * prm[4]
        ny = a1z * prm[3] - a1x * prm[5]
        nz = a1x * prm[4] - a1y * prm[3]
        W[0, 0] = nx
        W[1, 0] = ny
        W[2, 0] = nz
        w01 = v[0] * v[1]
        c[0] = w01 * nx
        c[1] = w01 * ny
        c[2] = w01 * nz
    elif jt == SPHERICAL:
        quat_rot(q[0], q[1], q[2], q[3], R)
    elif jt == PLANAR:
        _rot_z(q[2], R)
        p[0] = q[0]
        p[1] = q[1]
    elif jt == FREE:
        quat_rot(q[3], q[4], q[5], q[6], R)
        p[0] = q[0]
        p[1] = q[1]
        p[2] = q[2]


@njit(cache=True)
def scale_screw(jt, rev, prm, L):
    """Speed scale of a Screw: ``S v = H (L v)`` with the unit ``H`` of the aligned frame.

    Not reversed: ``L = sqrt(1 + h^2)``; reversed: :func:`reverse_joint` built L from
    the unit H, the declared S is ``sqrt(1 + h^2)`` times it.
    """
    if jt != SCREW:
        return
    s = np.sqrt(1.0 + prm[3] * prm[3])
    if rev:
        L[0, 0] *= s
    else:
        L[0, 0] = s


@njit(cache=True)
def reverse_joint(nv, R, p, H, W, c, L, Q, tmp6):
    """Turn declared kinematics into the reversed tree direction, in place.

    On entry (R, p) is the declared child frame in the declared parent frame,
    H, c declared. On exit (R, p) is the inverse pose, H the orthonormal basis
    of ``-Ad_T H``, W its complement, c = ``-Ad_T c`` and L with
    ``-Ad_T H = H L``.
    """
    # S = -Ad_T H, Ad_T = [[R, 0], [p~ R, R]]
    for j in range(nv):
        Q[0, j], Q[1, j], Q[2, j], Q[3, j], Q[4, j], Q[5, j] = _minus_ad(
            R, p, H[0, j], H[1, j], H[2, j], H[3, j], H[4, j], H[5, j]
        )
    c[0], c[1], c[2], c[3], c[4], c[5] = _minus_ad(R, p, c[0], c[1], c[2], c[3], c[4], c[5])
    # S = Q[:, :nv] -> Gram-Schmidt completion to a 6x6 orthonormal basis
    for j in range(nv):
        for i in range(6):
            H[i, j] = Q[i, j]
    used = tmp6
    for i in range(6):
        used[i] = 0.0
    # orthonormalise the nv columns (modified Gram-Schmidt), L = H'^T S
    for j in range(6):
        for i in range(6):
            L[i, j] = 0.0
    for j in range(nv):
        for k in range(j):
            L[k, j] = _remove_component(H, k, H, j)
        L[j, j] = _normalize_column(H, j)
    # complement: pick the unit vectors with the largest residual one by one
    for col in range(nv, 6):
        best = -1.0
        bi = 0
        for cand in range(6):
            if used[cand] != 0.0:
                continue
            # residual norm^2 = 1 - sum_k H[cand,k]^2 (k over current basis)
            s = 1.0
            for k in range(nv):
                s -= H[cand, k] * H[cand, k]
            for k in range(nv, col):
                s -= W[cand, k - nv] * W[cand, k - nv]
            if s > best:
                best = s
                bi = cand
        used[bi] = 1.0
        wc = col - nv
        for i in range(6):
            W[i, wc] = 1.0 if i == bi else 0.0
        for _ in range(2):
            for k in range(nv):
                _remove_component(H, k, W, wc)
            for k in range(wc):
                _remove_component(W, k, W, wc)
        _normalize_column(W, wc)
    # inverse pose: R <- R^T, p <- -R^T p
    px = -(R[0, 0] * p[0] + R[1, 0] * p[1] + R[2, 0] * p[2])
    py = -(R[0, 1] * p[0] + R[1, 1] * p[1] + R[2, 1] * p[2])
    pz = -(R[0, 2] * p[0] + R[1, 2] * p[1] + R[2, 2] * p[2])
    for i in range(3):
        for j in range(i + 1, 3):
            t = R[i, j]
            R[i, j] = R[j, i]
            R[j, i] = t
    p[0] = px
    p[1] = py
    p[2] = pz


@njit(cache=True)
def joint_qdot(jt, q, v, out):
    """Coordinate rates dq/dt for speeds v."""
    if jt == SPHERICAL or jt == FREE:
        o = 3 if jt == FREE else 0
        e0 = q[o]
        e1 = q[o + 1]
        e2 = q[o + 2]
        e3 = q[o + 3]
        w0 = v[0]
        w1 = v[1]
        w2 = v[2]
        out[o] = 0.5 * (-e1 * w0 - e2 * w1 - e3 * w2)
        out[o + 1] = 0.5 * (e0 * w0 - e3 * w1 + e2 * w2)
        out[o + 2] = 0.5 * (e3 * w0 + e0 * w1 - e1 * w2)
        out[o + 3] = 0.5 * (-e2 * w0 + e1 * w1 + e0 * w2)
        if jt == FREE:
            n = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3)
            a0 = e0 / n
            a1 = e1 / n
            a2 = e2 / n
            a3 = e3 / n
            x = v[3]
            y = v[4]
            z = v[5]
            out[0] = (
                (1 - 2 * (a2 * a2 + a3 * a3)) * x
                + 2 * (a1 * a2 - a0 * a3) * y
                + 2 * (a1 * a3 + a0 * a2) * z
            )
            out[1] = (
                2 * (a1 * a2 + a0 * a3) * x
                + (1 - 2 * (a1 * a1 + a3 * a3)) * y
                + 2 * (a2 * a3 - a0 * a1) * z
            )
            out[2] = (
                2 * (a1 * a3 - a0 * a2) * x
                + 2 * (a2 * a3 + a0 * a1) * y
                + (1 - 2 * (a1 * a1 + a2 * a2)) * z
            )
    elif jt == PLANAR:
        cc = np.cos(q[2])
        s = np.sin(q[2])
        out[0] = cc * v[1] - s * v[2]
        out[1] = s * v[1] + cc * v[2]
        out[2] = v[0]
    else:
        for i in range(v.shape[0]):
            out[i] = v[i]
