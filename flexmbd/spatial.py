"""Spatial algebra: skew matrices, rigid shifts, rotations, spatial inertia.

Conventions (docs/design/conventions.rst, CFA paper Liu-Hu-Zhang 2016, eq. 1-3):

* spatial vectors are ``[angular; linear]``: a twist ``V = [w; v]`` and a wrench
  ``F = [n; f]`` (moment first);
* ``shift(p)`` is the paper's 6x6 matrix ``P̂ = [[U, p~], [0, U]]``. For two points
  A and B of one rigid body with ``p`` the vector from B to A,
  ``F_B = shift(p) @ F_A`` moves a wrench from A to B and
  ``V_A = shift(p).T @ V_B`` moves a twist from B to A;
* Euler parameters (unit quaternions) are scalar first ``(e0, e1, e2, e3)`` and
  ``rotation(e)`` maps frame coordinates to parent coordinates: ``x_parent = R x``.

This is the one rotation module of the package (numpy): single values and batches
(``*_batch``, ``rotation_matrices``); the compiled kernels use the numba versions of
:mod:`flexmbd._nbrotation`.
"""

from __future__ import annotations

import numpy as np

from ._typing import Array, ArrayLike

__all__ = [
    "skew",
    "unskew",
    "shift",
    "rotation_matrix",
    "rotation_matrices",
    "motion_transform",
    "force_transform",
    "quat_to_rot",
    "quat_to_rot_batch",
    "rot_to_quat_batch",
    "rot_to_quat",
    "quat_to_rot_batch",
    "rot_to_quat_batch",
    "quat_multiply",
    "quat_conjugate",
    "quat_from_rotvec",
    "quat_from_rotvec_batch",
    "quat_to_rotvec",
    "rotvec_to_rot",
    "rot_to_rotvec",
    "quat_rate_matrix",
    "quat_integrate",
    "spatial_inertia",
    "is_rotation",
    "orthonormal_complement",
]


def skew(p: ArrayLike) -> Array:
    """Cross-product matrix ``p~`` with ``skew(p) @ x == np.cross(p, x)``."""
    x, y, z = p
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def unskew(S: ArrayLike) -> Array:
    """Vector of a (skew) matrix: inverse of :func:`skew` (uses the skew part)."""
    return 0.5 * np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]])


def shift(p: ArrayLike) -> Array:
    """Rigid shift ``P̂ = [[U, p~], [0, U]]`` of the CFA paper (eq. 1).

    With ``p`` the vector from point B to point A (same body, same axes), a wrench
    at A becomes ``shift(p) @ F_A`` at B, and a twist at B becomes
    ``shift(p).T @ V_B`` at A.
    """
    P = np.eye(6)
    P[:3, 3:] = skew(p)
    return P


def motion_transform(R: ArrayLike, p: ArrayLike) -> Array:
    """6x6 map of twists from frame B to frame A.

    Frame A has orientation ``R`` (A axes -> B axes) and origin ``p`` in B
    coordinates. Returns ``X`` with ``V_A = X @ V_B`` where both twists are
    ``[w; v]`` expressed in their own frames at their own origins.
    """
    Rt = np.asarray(R).T
    X = np.zeros((6, 6))
    X[:3, :3] = Rt
    X[3:, 3:] = Rt
    X[3:, :3] = -Rt @ skew(p)
    return X


def force_transform(R: ArrayLike, p: ArrayLike) -> Array:
    """6x6 map of wrenches from frame A to frame B (dual of :func:`motion_transform`).

    ``F_B = force_transform(R, p) @ F_A`` with ``F = [n; f]``; it equals
    ``motion_transform(R, p).T``.
    """
    return motion_transform(R, p).T


def rotation_matrix(axis: ArrayLike, angle: float) -> Array:
    """Rotation by ``angle`` (rad) about the unit ``axis`` (Rodrigues)."""
    return rotation_matrices(axis, np.array([angle], dtype=float))[0]


def rotation_matrices(axis: ArrayLike, angles: ArrayLike) -> Array:
    """Rotations (nt, 3, 3) by ``angles`` (nt,) rad about one ``axis`` (Rodrigues)."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    K = skew(a)
    th = np.asarray(angles, dtype=float)[:, None, None]
    return np.eye(3) + np.sin(th) * K + (1.0 - np.cos(th)) * (K @ K)


def quat_to_rot(e: ArrayLike) -> Array:
    """Rotation matrix of the Euler parameters ``e = (e0, e1, e2, e3)`` (normalized first)."""
    return quat_to_rot_batch(e)


def rot_to_quat(R: ArrayLike) -> Array:
    """Euler parameters of a rotation matrix (Shepperd's method), with ``e0 >= 0``."""
    return rot_to_quat_batch(R, continuous=False)[0]


def quat_multiply(a: ArrayLike, b: ArrayLike) -> Array:
    """Hamilton product ``a * b`` (scalar first): ``R(a*b) = R(a) @ R(b)``."""
    a0, av = a[0], np.asarray(a[1:])
    b0, bv = b[0], np.asarray(b[1:])
    return np.concatenate(([a0 * b0 - av @ bv], a0 * bv + b0 * av + np.cross(av, bv)))


def quat_conjugate(e: ArrayLike) -> Array:
    """Conjugate (inverse for unit quaternions)."""
    return np.array([e[0], -e[1], -e[2], -e[3]])


def quat_from_rotvec(phi: ArrayLike) -> Array:
    """Euler parameters of the rotation vector ``phi`` (axis * angle, rad)."""
    phi = np.asarray(phi, dtype=float)
    th = np.linalg.norm(phi)
    if th < 1e-8:
        # Taylor series: sin(th/2)/th = 1/2 - th^2/48
        s = 0.5 - th * th / 48.0
        c = 1.0 - th * th / 8.0
    else:
        s = np.sin(0.5 * th) / th
        c = np.cos(0.5 * th)
    e = np.concatenate(([c], s * phi))
    return e / np.linalg.norm(e)


def quat_from_rotvec_batch(phi: ArrayLike) -> Array:
    """:func:`quat_from_rotvec` of every row of ``phi`` (nt, 3) (rad): Euler parameters
    (nt, 4), scalar first. The operations of :func:`quat_from_rotvec` per element (the
    norms as ``np.linalg.norm`` takes them, ``sqrt(x . x)`` per row; the same branch at
    1e-8 rad), so the same bits."""
    phi = np.asarray(phi, dtype=float).reshape(-1, 3)
    th = np.sqrt(np.fromiter(map(np.dot, phi, phi), float, len(phi)))
    small = th < 1e-8
    big = np.where(small, 1.0, th)
    e = np.empty((len(phi), 4))
    e[:, 0] = np.where(small, 1.0 - th * th / 8.0, np.cos(0.5 * big))
    e[:, 1:] = np.where(small, 0.5 - th * th / 48.0, np.sin(0.5 * big) / big)[:, None] * phi
    n = np.sqrt(np.fromiter(map(np.dot, e, e), float, len(e)))
    return e / n[:, None]


def quat_to_rotvec(e: ArrayLike) -> Array:
    """Rotation vector (angle in [0, pi]) of Euler parameters."""
    e = np.asarray(e, dtype=float)
    e = e / np.linalg.norm(e)
    if e[0] < 0:
        e = -e
    v = e[1:]
    s = np.linalg.norm(v)
    th = 2.0 * np.arctan2(s, e[0])
    if s < 1e-12:
        return 2.0 * v  # th ~ 2 s, direction v/s
    return (th / s) * v


def rotvec_to_rot(phi: ArrayLike) -> Array:
    """Rotation matrix of a rotation vector (Rodrigues)."""
    return quat_to_rot(quat_from_rotvec(phi))


def rot_to_rotvec(R: ArrayLike) -> Array:
    """Rotation vector of a rotation matrix."""
    return quat_to_rotvec(rot_to_quat(R))


def quat_rate_matrix(e: ArrayLike) -> Array:
    """4x3 matrix ``G`` with ``de/dt = G @ w`` for the body-frame angular velocity ``w``.

    ``G = 0.5 * [[-e1, -e2, -e3], [e0, -e3, e2], [e3, e0, -e1], [-e2, e1, e0]]``,
    i.e. ``de/dt = 0.5 * e * (0, w)``.
    """
    e0, e1, e2, e3 = e
    return 0.5 * np.array([[-e1, -e2, -e3], [e0, -e3, e2], [e3, e0, -e1], [-e2, e1, e0]])


def quat_integrate(e: ArrayLike, w: ArrayLike, dt: float) -> Array:
    """Advance Euler parameters by a constant body-frame angular velocity ``w`` over ``dt``.

    Exact exponential update ``e <- e * exp(w dt / 2)``; the result is unit norm.
    """
    return quat_multiply(e, quat_from_rotvec(np.asarray(w) * dt))


def spatial_inertia(mass: float, com: ArrayLike, inertia_com: ArrayLike) -> Array:
    """6x6 spatial inertia about the frame origin, ``[angular; linear]`` ordering.

    ``mass`` in kg, ``com`` (m) the centre of mass in the frame, ``inertia_com``
    (kg m^2) the 3x3 inertia about the centre of mass in frame axes. This is the
    paper's ``I_O = Ŝ I_C Ŝ^T`` (eq. 3): the parallel-axis theorem in the top-left
    block and ``m c~`` couplings.
    """
    c = np.asarray(com, dtype=float)
    C = skew(c)
    I = np.zeros((6, 6))
    I[:3, :3] = np.asarray(inertia_com, dtype=float) - mass * C @ C
    I[:3, 3:] = mass * C
    I[3:, :3] = -mass * C
    I[3:, 3:] = mass * np.eye(3)
    return I


def is_rotation(R: ArrayLike, tol: float = 1e-9) -> bool:
    """True if ``R`` is a proper orthonormal 3x3 matrix within ``tol``."""
    R = np.asarray(R, dtype=float)
    return (
        R.shape == (3, 3)
        and np.allclose(R.T @ R, np.eye(3), atol=tol)
        and abs(np.linalg.det(R) - 1.0) < tol
    )


def orthonormal_complement(H: ArrayLike) -> Array:
    """Orthonormal basis ``W`` (6 x (6-k)) of the complement of the columns of ``H`` (6 x k).

    ``H`` must have orthonormal columns; then ``H.T @ W = 0`` and ``W.T @ W = U``
    (CFA paper, section 1).
    """
    H = np.asarray(H, dtype=float).reshape(6, -1)
    k = H.shape[1]
    if k == 0:
        return np.eye(6)
    if k == 6:
        return np.zeros((6, 0))
    # complete with the unit vectors least aligned with span(H), then QR
    P = np.eye(6) - H @ H.T
    order = np.argsort(-np.linalg.norm(P, axis=0), kind="stable")
    Q, _ = np.linalg.qr(np.hstack([H, P[:, order]]))
    W = Q[:, k:6]
    W -= H @ (H.T @ W)
    Q2, _ = np.linalg.qr(W)
    # a deterministic sign: largest-magnitude entry of each column positive
    idx = np.argmax(np.abs(Q2), axis=0)
    Q2 = Q2 * np.sign(Q2[idx, np.arange(Q2.shape[1])])
    return Q2


def quat_to_rot_batch(e: ArrayLike) -> Array:
    """Rotation matrices (..., 3, 3) of Euler parameters (..., 4), scalar first (normalized)."""
    e = np.asarray(e, dtype=float)
    e = e / np.linalg.norm(e, axis=-1, keepdims=True)
    e0, e1, e2, e3 = np.moveaxis(e, -1, 0)
    R = np.empty(e.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (e2 * e2 + e3 * e3)
    R[..., 0, 1] = 2 * (e1 * e2 - e0 * e3)
    R[..., 0, 2] = 2 * (e1 * e3 + e0 * e2)
    R[..., 1, 0] = 2 * (e1 * e2 + e0 * e3)
    R[..., 1, 1] = 1 - 2 * (e1 * e1 + e3 * e3)
    R[..., 1, 2] = 2 * (e2 * e3 - e0 * e1)
    R[..., 2, 0] = 2 * (e1 * e3 - e0 * e2)
    R[..., 2, 1] = 2 * (e2 * e3 + e0 * e1)
    R[..., 2, 2] = 1 - 2 * (e1 * e1 + e2 * e2)
    return R


def rot_to_quat_batch(R: ArrayLike, continuous: bool = True) -> Array:
    """Euler parameters (nt, 4) of rotation matrices (nt, 3, 3).

    Shepperd's method of :func:`flexmbd.spatial.rot_to_quat` on every sample at once
    (same branch per sample, ``e0 >= 0``). With ``continuous=True`` the sign of each
    quaternion is then chosen to stay close to the previous one (no jumps between
    ``e`` and ``-e``).
    """
    R = np.asarray(R, dtype=float).reshape(-1, 3, 3)
    n = len(R)
    tr = R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2]
    k = np.argmax(np.column_stack([tr, R[:, 0, 0], R[:, 1, 1], R[:, 2, 2]]), axis=1)
    E = np.empty((n, 4))
    s0 = k == 0
    if s0.any():
        Rs = R[s0]
        e0 = 0.5 * np.sqrt(1.0 + tr[s0])
        E[s0, 0] = e0
        E[s0, 1] = (Rs[:, 2, 1] - Rs[:, 1, 2]) / (4 * e0)
        E[s0, 2] = (Rs[:, 0, 2] - Rs[:, 2, 0]) / (4 * e0)
        E[s0, 3] = (Rs[:, 1, 0] - Rs[:, 0, 1]) / (4 * e0)
    for i in range(3):
        sel = k == i + 1
        if not sel.any():
            continue
        j, m = (i + 1) % 3, (i + 2) % 3
        Rs = R[sel]
        ei = 0.5 * np.sqrt(1.0 + 2 * Rs[:, i, i] - tr[sel])
        E[sel, 1 + i] = ei
        E[sel, 0] = (Rs[:, m, j] - Rs[:, j, m]) / (4 * ei)
        E[sel, 1 + j] = (Rs[:, j, i] + Rs[:, i, j]) / (4 * ei)
        E[sel, 1 + m] = (Rs[:, m, i] + Rs[:, i, m]) / (4 * ei)
    E[E[:, 0] < 0] *= -1.0
    E /= np.sqrt(np.einsum("ij,ij->i", E, E))[:, None]
    if continuous and n > 1:
        # flip where the running sign product says so (the sequential rule, vectorized)
        dots = np.einsum("ij,ij->i", E[1:], E[:-1])
        if np.any(dots == 0.0):  # a half-turn between samples: the rule as written
            for i in range(1, n):
                if E[i] @ E[i - 1] < 0:
                    E[i] = -E[i]
        else:
            sign = np.concatenate([[1.0], np.where(np.cumsum(dots < 0) % 2, -1.0, 1.0)])
            E *= sign[:, None]
    return E
