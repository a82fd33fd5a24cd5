"""Euler-parameter algebra of the absolute formulation, vectorized over bodies.

Euler parameters ``e = (e0, e1, e2, e3)`` (scalar first, ``ev = (e1, e2, e3)``).
The classical 3x4 matrices (Nikravesh, *Computer-Aided Analysis of Mechanical
Systems*, ch. 6)::

    E(e) = [-ev, e0 I + ev~]        world angular velocity  w  = 2 E(e) de/dt
    G(e) = [-ev, e0 I - ev~]        body  angular velocity  w' = 2 G(e) de/dt

and the rotation matrix as the *polynomial* ``A(e) = E(e) G(e)^T`` (a rotation only
when ``|e| = 1``). The formulation uses this polynomial form everywhere so that all
derivatives below are exact for any ``e`` (Newton iterates leave the unit sphere
by round-off-sized amounts; the normalization constraint brings them back).

Identities used throughout (all exact, any 4-vectors ``e, x``):

* ``G(e) x = -G(x) e`` and ``E(e) x = -E(x) e``; hence ``G(e) e = 0`` and the
  angular acceleration is ``2 G(e) d2e/dt2`` (the ``G(de) de`` term vanishes);
* ``G(e)^T a = TG(a) e`` with ``TG(a) = [[0, -a^T], [a, -a~]]`` and
  ``E(e)^T a = TE(a) e`` with ``TE(a) = [[0, -a^T], [a, a~]]``;
* ``mu . A(e) s = (TE(mu) e) . (TG(s) e) = 1/2 e^T S(mu, s) e`` with the symmetric
  4x4 ``S(mu, s) = TE(mu)^T TG(s) + TG(s)^T TE(mu)``: the gradient of
  ``mu . A(e) s`` is ``S(mu, s) e`` and its Hessian is ``S(mu, s)``;
* ``d(A(e) s)/de = E(e) TG(s) - E(G(e)^T s)`` (3x4), linear in ``e``; its rows are
  ``(S(unit_k, s) e)^T``.

Functions take arrays with any leading batch shape: ``e`` (..., 4), 3-vectors
(..., 3); they return (..., 3, 4), (..., 4, 4) or (..., 3, 3).
"""

import numpy as np

__all__ = [
    "skew_b",
    "cross_b",
    "Emat",
    "Gmat",
    "TE",
    "TG",
    "Apoly",
    "dAs",
    "Smat",
    "normalized_rot",
]


def cross_b(a, b):
    """Batched cross product of (..., 3) arrays (faster than ``np.cross`` on small batches)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def skew_b(a):
    """Batched cross-product matrices: (..., 3) -> (..., 3, 3)."""
    a = np.asarray(a, dtype=float)
    x, y, z = a[..., 0], a[..., 1], a[..., 2]
    o = np.zeros_like(x)
    return np.stack([o, -z, y, z, o, -x, -y, x, o], axis=-1).reshape(a.shape[:-1] + (3, 3))


def Emat(e):
    """``E(e) = [-ev, e0 I + ev~]`` (..., 3, 4)."""
    e = np.asarray(e, dtype=float)
    e0, e1, e2, e3 = e[..., 0], e[..., 1], e[..., 2], e[..., 3]
    return np.stack([-e1, e0, -e3, e2, -e2, e3, e0, -e1, -e3, -e2, e1, e0], axis=-1).reshape(
        e.shape[:-1] + (3, 4)
    )


def Gmat(e):
    """``G(e) = [-ev, e0 I - ev~]`` (..., 3, 4)."""
    e = np.asarray(e, dtype=float)
    e0, e1, e2, e3 = e[..., 0], e[..., 1], e[..., 2], e[..., 3]
    return np.stack([-e1, e0, e3, -e2, -e2, -e3, e0, e1, -e3, e2, -e1, e0], axis=-1).reshape(
        e.shape[:-1] + (3, 4)
    )


def _T(a, sign):
    a = np.asarray(a, dtype=float)
    x, y, z = a[..., 0], a[..., 1], a[..., 2]
    o = np.zeros_like(x)
    s = sign
    return np.stack(
        [o, -x, -y, -z, x, o, -s * z, s * y, y, s * z, o, -s * x, z, -s * y, s * x, o], axis=-1
    ).reshape(a.shape[:-1] + (4, 4))


def TG(a):
    """``TG(a)`` with ``G(e)^T a = TG(a) e`` (..., 4, 4)."""
    return _T(a, -1.0)


def TE(a):
    """``TE(a)`` with ``E(e)^T a = TE(a) e`` (..., 4, 4)."""
    return _T(a, 1.0)


def Apoly(e):
    """Polynomial rotation matrix ``A(e) = E(e) G(e)^T`` (..., 3, 3)."""
    return Emat(e) @ np.swapaxes(Gmat(e), -1, -2)


def dAs(e, s):
    """``d(A(e) s)/de`` (..., 3, 4) for a body-fixed vector ``s`` (exact for any ``e``)."""
    e = np.asarray(e, dtype=float)
    y = (TG(s) @ e[..., None])[..., 0]  # G(e)^T s
    return Emat(e) @ TG(s) - Emat(y)


def Smat(mu, s):
    """Hessian ``S(mu, s)`` of ``mu . A(e) s`` with respect to ``e`` (..., 4, 4), symmetric."""
    a = np.swapaxes(TE(mu), -1, -2) @ TG(s)
    return a + np.swapaxes(a, -1, -2)


def normalized_rot(e):
    """Rotation matrices of normalized Euler parameters (..., 3, 3)."""
    e = np.asarray(e, dtype=float)
    n = np.linalg.norm(e, axis=-1, keepdims=True)
    return Apoly(e / n)
