"""Compiled rotations (numba): the kernels' versions of :mod:`flexmbd.spatial`.

Allocation-free, written into caller-provided arrays; scalar-first Euler parameters.
"""

import numpy as np

from ._jit import njit

__all__ = ["axis_rot", "quat_rot"]


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
