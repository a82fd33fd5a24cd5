"""Compiled rotations (numba): the kernels' versions of :mod:`flexmbd.spatial` and
:mod:`flexmbd.absolute.quaternion`.

Scalar-first Euler parameters ``e = (e0, e1, e2, e3)``. :func:`axis_rot` and
:func:`quat_rot` are the allocation-free rotation matrices of the joint kernels. The
Euler-parameter matrices of the absolute formulation follow
:mod:`flexmbd.absolute.quaternion` (same names and definitions, one body at a time):
``G(e)`` (:func:`Gmat`), ``E(e)`` (:func:`Emat`), ``TG``/``TE`` (``G(e)^T a = TG(a) e``),
the polynomial rotation ``A(e) = E G^T`` (:func:`Apoly`, exact derivatives for any
``e``), ``d(A s)/de`` (:func:`dAs`), ``d(A^T x)/de`` (:func:`dAtr`) and the Hessian
``S(mu, s)`` of ``mu . A(e) s`` (:func:`Smat`); the ``*_to`` and ``*_add`` variants write
into (or add to) caller arrays without allocating and equal the others bitwise.
"""

import numpy as np

from ._jit import njit
from ._nbalgebra import mm, mv

__all__ = [
    "axis_rot",
    "quat_rot",
    "Gmat",
    "Emat",
    "Tmat",
    "TG",
    "TE",
    "Apoly",
    "dAs",
    "Smat",
    "dAtr",
    "Apoly_to",
    "Gmat_to",
    "dAtr_to",
    "dAs_to",
    "TG_to",
    "TG_add",
    "Smat_add",
]


@njit(cache=True, inline="always")
def axis_rot(ax, ay, az, th, R):
    """Rodrigues rotation by ``th`` (rad) about the unit axis ``(ax, ay, az)`` into R (3x3)."""
    c = np.cos(th)
    s = np.sin(th)
    t = 1.0 - c
    R[0, 0] = c + t * ax * ax
    R[0, 1] = t * ax * ay - s * az
    R[0, 2] = t * ax * az + s * ay
    R[1, 0] = t * ax * ay + s * az
    R[1, 1] = c + t * ay * ay
    R[1, 2] = t * ay * az - s * ax
    R[2, 0] = t * ax * az - s * ay
    R[2, 1] = t * ay * az + s * ax
    R[2, 2] = c + t * az * az


@njit(cache=True, inline="always")
def quat_rot(e0, e1, e2, e3, R):
    """Rotation matrix of the Euler parameters (normalized first) into R (3x3)."""
    n = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3)
    e0 /= n
    e1 /= n
    e2 /= n
    e3 /= n
    R[0, 0] = 1 - 2 * (e2 * e2 + e3 * e3)
    R[0, 1] = 2 * (e1 * e2 - e0 * e3)
    R[0, 2] = 2 * (e1 * e3 + e0 * e2)
    R[1, 0] = 2 * (e1 * e2 + e0 * e3)
    R[1, 1] = 1 - 2 * (e1 * e1 + e3 * e3)
    R[1, 2] = 2 * (e2 * e3 - e0 * e1)
    R[2, 0] = 2 * (e1 * e3 - e0 * e2)
    R[2, 1] = 2 * (e2 * e3 + e0 * e1)
    R[2, 2] = 1 - 2 * (e1 * e1 + e2 * e2)


# -- Euler-parameter matrices (compiled counterparts of flexmbd.absolute.quaternion) ------
@njit(cache=True)
def Gmat(e):
    e0, e1, e2, e3 = e[0], e[1], e[2], e[3]
    G = np.empty((3, 4))
    G[0, 0], G[0, 1], G[0, 2], G[0, 3] = -e1, e0, e3, -e2
    G[1, 0], G[1, 1], G[1, 2], G[1, 3] = -e2, -e3, e0, e1
    G[2, 0], G[2, 1], G[2, 2], G[2, 3] = -e3, e2, -e1, e0
    return G


@njit(cache=True)
def Emat(e):
    e0, e1, e2, e3 = e[0], e[1], e[2], e[3]
    E = np.empty((3, 4))
    E[0, 0], E[0, 1], E[0, 2], E[0, 3] = -e1, e0, -e3, e2
    E[1, 0], E[1, 1], E[1, 2], E[1, 3] = -e2, e3, e0, -e1
    E[2, 0], E[2, 1], E[2, 2], E[2, 3] = -e3, -e2, e1, e0
    return E


@njit(cache=True)
def Tmat(a, s):
    x, y, z = a[0], a[1], a[2]
    T = np.zeros((4, 4))
    T[0, 1], T[0, 2], T[0, 3] = -x, -y, -z
    T[1, 0], T[1, 2], T[1, 3] = x, -s * z, s * y
    T[2, 0], T[2, 1], T[2, 3] = y, s * z, -s * x
    T[3, 0], T[3, 1], T[3, 2] = z, -s * y, s * x
    return T


@njit(cache=True)
def TG(a):
    return Tmat(a, -1.0)


@njit(cache=True)
def TE(a):
    return Tmat(a, 1.0)


@njit(cache=True)
def Apoly(e):
    """Polynomial rotation matrix (e0^2 - ev.ev) I + 2 ev ev^T + 2 e0 ev~ (= E G^T)."""
    A = np.empty((3, 3))
    Apoly_to(e, A)
    return A


@njit(cache=True)
def dAs(e, s):
    """d(A(e) s)/de (3, 4): [2 e0 s + 2 ev x s, 2 ((ev.s) I + ev s^T - s ev^T - e0 s~)]."""
    e0, e1, e2, e3 = e[0], e[1], e[2], e[3]
    s0, s1, s2 = s[0], s[1], s[2]
    es = e1 * s0 + e2 * s1 + e3 * s2
    D = np.empty((3, 4))
    D[0, 0] = 2 * (e0 * s0 + e2 * s2 - e3 * s1)
    D[1, 0] = 2 * (e0 * s1 + e3 * s0 - e1 * s2)
    D[2, 0] = 2 * (e0 * s2 + e1 * s1 - e2 * s0)
    ev = (e1, e2, e3)
    sv = (s0, s1, s2)
    for i in range(3):
        for j in range(3):
            v = ev[i] * sv[j] - sv[i] * ev[j]
            if i == j:
                v += es
            D[i, 1 + j] = 2 * v
    # - 2 e0 s~
    D[0, 2] += 2 * e0 * s2
    D[0, 3] -= 2 * e0 * s1
    D[1, 1] -= 2 * e0 * s2
    D[1, 3] += 2 * e0 * s0
    D[2, 1] += 2 * e0 * s1
    D[2, 2] -= 2 * e0 * s0
    return D


@njit(cache=True)
def Smat(mu, s):
    """Hessian of mu . A(e) s:
    [[2 mu.s, 2 (s x mu)^T], [2 (s x mu), 2 (mu s^T + s mu^T) - 2 mu.s I]]."""
    ms = mu[0] * s[0] + mu[1] * s[1] + mu[2] * s[2]
    S = np.empty((4, 4))
    S[0, 0] = 2 * ms
    c0 = s[1] * mu[2] - s[2] * mu[1]
    c1 = s[2] * mu[0] - s[0] * mu[2]
    c2 = s[0] * mu[1] - s[1] * mu[0]
    S[0, 1] = S[1, 0] = 2 * c0
    S[0, 2] = S[2, 0] = 2 * c1
    S[0, 3] = S[3, 0] = 2 * c2
    for i in range(3):
        for j in range(3):
            v = 2 * (mu[i] * s[j] + s[i] * mu[j])
            if i == j:
                v -= 2 * ms
            S[1 + i, 1 + j] = v
    return S


@njit(cache=True)
def dAtr(e, x):
    """d(A(e)^T x)/de (3, 4)."""
    z = mv(TE(x), e)
    return mm(Gmat(e), TE(x)) - Gmat(z)


# -- allocation-free variants (write into the caller's arrays; bitwise equal to the above)
@njit(cache=True, any_layout=True)
def Apoly_to(e, A):
    """Polynomial rotation matrix into ``A`` (see :func:`Apoly`)."""
    e0, e1, e2, e3 = e[0], e[1], e[2], e[3]
    d = e0 * e0 - e1 * e1 - e2 * e2 - e3 * e3
    A[0, 0] = d + 2 * e1 * e1
    A[1, 1] = d + 2 * e2 * e2
    A[2, 2] = d + 2 * e3 * e3
    A[0, 1] = 2 * (e1 * e2 - e0 * e3)
    A[1, 0] = 2 * (e1 * e2 + e0 * e3)
    A[0, 2] = 2 * (e1 * e3 + e0 * e2)
    A[2, 0] = 2 * (e1 * e3 - e0 * e2)
    A[1, 2] = 2 * (e2 * e3 - e0 * e1)
    A[2, 1] = 2 * (e2 * e3 + e0 * e1)


@njit(cache=True, any_layout=True)
def Gmat_to(e, c, G):
    """``c G(e)`` into ``G`` (3, 4)."""
    e0, e1, e2, e3 = c * e[0], c * e[1], c * e[2], c * e[3]
    G[0, 0], G[0, 1], G[0, 2], G[0, 3] = -e1, e0, e3, -e2
    G[1, 0], G[1, 1], G[1, 2], G[1, 3] = -e2, -e3, e0, e1
    G[2, 0], G[2, 1], G[2, 2], G[2, 3] = -e3, e2, -e1, e0


@njit(cache=True, any_layout=True)
def dAtr_to(e, x, out):
    """``d(A(e)^T x)/de`` (3, 4) into ``out``: ``G(e) TE(x) - G(TE(x) e)`` (:func:`dAtr`)."""
    x0, x1, x2 = x[0], x[1], x[2]
    T = ((0.0, -x0, -x1, -x2), (x0, 0.0, -x2, x1), (x1, x2, 0.0, -x0), (x2, -x1, x0, 0.0))
    Gt = ((-e[1], e[0], e[3], -e[2]), (-e[2], -e[3], e[0], e[1]), (-e[3], e[2], -e[1], e[0]))
    z0 = T[0][1] * e[1] + T[0][2] * e[2] + T[0][3] * e[3]
    z1 = T[1][0] * e[0] + T[1][2] * e[2] + T[1][3] * e[3]
    z2 = T[2][0] * e[0] + T[2][1] * e[1] + T[2][3] * e[3]
    z3 = T[3][0] * e[0] + T[3][1] * e[1] + T[3][2] * e[2]
    Gz = ((-z1, z0, z3, -z2), (-z2, -z3, z0, z1), (-z3, z2, -z1, z0))
    for i in range(3):
        gi = Gt[i]
        for j in range(4):
            out[i, j] = (
                gi[0] * T[0][j] + gi[1] * T[1][j] + gi[2] * T[2][j] + gi[3] * T[3][j]
            ) - Gz[i][j]


@njit(cache=True, any_layout=True)
def dAs_to(e, s, c, out):
    """``c d(A(e) s)/de`` (3, 4) into ``out`` (see :func:`dAs`)."""
    e0, e1, e2, e3 = e[0], e[1], e[2], e[3]
    s0, s1, s2 = s[0], s[1], s[2]
    es = e1 * s0 + e2 * s1 + e3 * s2
    out[0, 0] = c * (2 * (e0 * s0 + e2 * s2 - e3 * s1))
    out[1, 0] = c * (2 * (e0 * s1 + e3 * s0 - e1 * s2))
    out[2, 0] = c * (2 * (e0 * s2 + e1 * s1 - e2 * s0))
    out[0, 1] = c * (2 * es)
    out[0, 2] = c * (2 * (e1 * s1 - s0 * e2) + 2 * e0 * s2)
    out[0, 3] = c * (2 * (e1 * s2 - s0 * e3) - 2 * e0 * s1)
    out[1, 1] = c * (2 * (e2 * s0 - s1 * e1) - 2 * e0 * s2)
    out[1, 2] = c * (2 * es)
    out[1, 3] = c * (2 * (e2 * s2 - s1 * e3) + 2 * e0 * s0)
    out[2, 1] = c * (2 * (e3 * s0 - s2 * e1) + 2 * e0 * s1)
    out[2, 2] = c * (2 * (e3 * s1 - s2 * e2) - 2 * e0 * s0)
    out[2, 3] = c * (2 * es)


@njit(cache=True, any_layout=True)
def TG_to(x, c, out):
    """``out = c TG(x)`` (4, 4)."""
    x0, x1, x2 = x[0], x[1], x[2]
    out[0, 0], out[0, 1], out[0, 2], out[0, 3] = 0.0, c * -x0, c * -x1, c * -x2
    out[1, 0], out[1, 1], out[1, 2], out[1, 3] = c * x0, 0.0, c * x2, c * -x1
    out[2, 0], out[2, 1], out[2, 2], out[2, 3] = c * x1, c * -x2, 0.0, c * x0
    out[3, 0], out[3, 1], out[3, 2], out[3, 3] = c * x2, c * x1, c * -x0, 0.0


@njit(cache=True, any_layout=True)
def TG_add(x, c, Out, r0, c0):
    """``Out[r0:r0+4, c0:c0+4] += c TG(x)`` (see :func:`Tmat`)."""
    x0, x1, x2 = x[0], x[1], x[2]
    Out[r0, c0 + 1] += c * -x0
    Out[r0, c0 + 2] += c * -x1
    Out[r0, c0 + 3] += c * -x2
    Out[r0 + 1, c0] += c * x0
    Out[r0 + 1, c0 + 2] += c * x2
    Out[r0 + 1, c0 + 3] += c * -x1
    Out[r0 + 2, c0] += c * x1
    Out[r0 + 2, c0 + 1] += c * -x2
    Out[r0 + 2, c0 + 3] += c * x0
    Out[r0 + 3, c0] += c * x2
    Out[r0 + 3, c0 + 1] += c * x1
    Out[r0 + 3, c0 + 2] += c * -x0


@njit(cache=True, any_layout=True)
def Smat_add(mu, s, c, H, r0, k0):
    """``H[r0:r0+4, k0:k0+4] += c S(mu, s)`` (Hessian of mu . A(e) s, see :func:`Smat`;
    ``k0`` the slot of column ``r0`` in a column-compressed layout, ``r0`` when dense)."""
    ms = mu[0] * s[0] + mu[1] * s[1] + mu[2] * s[2]
    c0 = s[1] * mu[2] - s[2] * mu[1]
    c1 = s[2] * mu[0] - s[0] * mu[2]
    c2 = s[0] * mu[1] - s[1] * mu[0]
    H[r0, k0] += c * (2 * ms)
    H[r0, k0 + 1] += c * (2 * c0)
    H[r0 + 1, k0] += c * (2 * c0)
    H[r0, k0 + 2] += c * (2 * c1)
    H[r0 + 2, k0] += c * (2 * c1)
    H[r0, k0 + 3] += c * (2 * c2)
    H[r0 + 3, k0] += c * (2 * c2)
    for i in range(3):
        for j in range(3):
            v = 2 * (mu[i] * s[j] + s[i] * mu[j])
            if i == j:
                v -= 2 * ms
            H[r0 + 1 + i, k0 + 1 + j] += c * v
