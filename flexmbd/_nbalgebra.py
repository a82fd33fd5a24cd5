"""Small dense algebra for the compiled kernels (numba): explicit loops, no BLAS call.

For the 3- to (6+n)-sized matrices of single bodies, where a BLAS call costs more than
the arithmetic. Used by :mod:`flexmbd.flexible._nbbody` and the absolute engine.
"""

import numpy as np

from ._jit import njit

__all__ = ["cross", "dot", "mm", "mv", "skew", "tv"]


@njit(cache=True)
def mm(A, B):
    """A @ B for small matrices (explicit loops: no BLAS call overhead)."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n))
    for i in range(m):
        for l in range(k):
            a = A[i, l]
            if a != 0.0:
                for j in range(n):
                    C[i, j] += a * B[l, j]
    return C


@njit(cache=True)
def mv(A, x):
    """A @ x for a small matrix."""
    m, k = A.shape
    y = np.zeros(m)
    for i in range(m):
        v = 0.0
        for l in range(k):
            v += A[i, l] * x[l]
        y[i] = v
    return y


# unrolled: the transposed twin of mv, reading A row by row (no transposed copy)
@njit(cache=True)
def tv(A, x):
    """A.T @ x for a small matrix."""
    m, k = A.shape
    y = np.zeros(k)
    for l in range(m):
        a = x[l]
        for i in range(k):
            y[i] += A[l, i] * a
    return y


@njit(cache=True)
def dot(a, b):
    v = 0.0
    for i in range(a.shape[0]):
        v += a[i] * b[i]
    return v


@njit(cache=True)
def skew(a):
    S = np.zeros((3, 3))
    S[0, 1], S[0, 2] = -a[2], a[1]
    S[1, 0], S[1, 2] = a[2], -a[0]
    S[2, 0], S[2, 1] = -a[1], a[0]
    return S


@njit(cache=True)
def cross(a, b):
    out = np.empty(3)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out
