r"""Rotation of a deforming frame: the exponential map with exact first and second derivatives.

An interface frame of a flexible body rotates, relative to the body frame, by the
rotation vector :math:`\theta = \Theta q` (its rotation modes times the modal
coordinates) through the exponential map (Rodrigues)

.. math:: y(\theta) = \exp(\tilde\theta)\,s = s + a(\tau)\,\theta\times s
          + b(\tau)\,\big(\theta(\theta\cdot s) - \tau s\big),\qquad \tau = \theta\cdot\theta,

with :math:`a = \sin t / t` and :math:`b = (1 - \cos t)/t^2` (:math:`t = |\theta|`) as
functions of :math:`\tau`. With :math:`c = \theta\times s` (:math:`\nabla c_i = s\times e_i`,
i.e. :math:`dc/d\theta = -\tilde s`), :math:`p_i = \theta_i(\theta\cdot s)` and
:math:`\nabla a = 2a'\theta`, :math:`H_a = 2a' I + 4a''\theta\theta^T` (same for ``b``):

.. math::
   \nabla y_i &= c_i\nabla a + a\nabla c_i + (p_i - \tau s_i)\nabla b
                + b(\nabla p_i - 2 s_i\theta),\\
   H y_i &= \nabla a\nabla c_i^T + \nabla c_i\nabla a^T + c_i H_a
            + \nabla b\,(\nabla p_i - 2 s_i\theta)^T + (\nabla p_i - 2 s_i\theta)\nabla b^T
            + (p_i - \tau s_i) H_b + b\,(e_i s^T + s e_i^T - 2 s_i I).

The scalar functions and their first two ``tau``-derivatives use their Taylor series
for ``tau < 4`` (20 terms: round-off level) and the closed forms beyond. Everything is
written as plain loops so that the compiled kernels of the absolute formulation use
the same code (``numba``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .._jit import njit

if TYPE_CHECKING:
    from .._typing import Array, ArrayLike

__all__ = ["ab_functions", "exp_jets", "exp_apply", "exp_rotation"]


@njit(cache=True, _nrt=False)
def ab_functions(tau):
    """``(a, a', a'', b, b', b'')`` of ``a = sin t / t``, ``b = (1 - cos t)/t^2``.

    Primes are derivatives with respect to ``tau``.
    """
    if tau < 4.0:
        a = 0.0
        a1 = 0.0
        a2 = 0.0
        b = 0.0
        b1 = 0.0
        b2 = 0.0
        # a = sum (-tau)^k / (2k+1)!, b = sum (-tau)^k / (2k+2)!
        fa = 1.0  # 1/(2k+1)!
        fb = 0.5  # 1/(2k+2)!
        sgn = 1.0
        for k in range(20):
            pk = tau**k if k > 0 else 1.0
            a += sgn * fa * pk
            b += sgn * fb * pk
            if k >= 1:
                pk1 = tau ** (k - 1) if k > 1 else 1.0
                a1 += sgn * fa * k * pk1
                b1 += sgn * fb * k * pk1
            if k >= 2:
                pk2 = tau ** (k - 2) if k > 2 else 1.0
                a2 += sgn * fa * k * (k - 1) * pk2
                b2 += sgn * fb * k * (k - 1) * pk2
            sgn = -sgn
            fa /= (2 * k + 2) * (2 * k + 3)
            fb /= (2 * k + 3) * (2 * k + 4)
        return a, a1, a2, b, b1, b2
    t = math.sqrt(tau)
    s = math.sin(t)
    c = math.cos(t)
    a = s / t
    at = (t * c - s) / (t * t)
    att = (-t * t * s - 2.0 * t * c + 2.0 * s) / (t * t * t)
    b = (1.0 - c) / tau
    bt = (t * s - 2.0 * (1.0 - c)) / (t * t * t)
    btt = (t * t * c - 4.0 * t * s + 6.0 * (1.0 - c)) / (tau * tau)
    # d/dtau = d/dt / (2t);  d2/dtau2 = (f_tt t - f_t) / (4 t^3)
    a1 = at / (2.0 * t)
    a2 = (att * t - at) / (4.0 * t * t * t)
    b1 = bt / (2.0 * t)
    b2 = (btt * t - bt) / (4.0 * t * t * t)
    return a, a1, a2, b, b1, b2


@njit(cache=True)
def exp_apply(theta, s):
    """``exp(theta~) s`` (3,)."""
    tau = theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]
    a, _, _, b, _, _ = ab_functions(tau)
    ts = theta[0] * s[0] + theta[1] * s[1] + theta[2] * s[2]
    c0 = theta[1] * s[2] - theta[2] * s[1]
    c1 = theta[2] * s[0] - theta[0] * s[2]
    c2 = theta[0] * s[1] - theta[1] * s[0]
    y = np.empty(3)
    y[0] = s[0] + a * c0 + b * (theta[0] * ts - tau * s[0])
    y[1] = s[1] + a * c1 + b * (theta[1] * ts - tau * s[1])
    y[2] = s[2] + a * c2 + b * (theta[2] * ts - tau * s[2])
    return y


@njit(cache=True, _nrt=False)
def exp_jets(theta, s, y, Jy, Hy):
    """Fill ``y = exp(theta~) s`` (3,), ``Jy = dy/dtheta`` (3, 3), ``Hy[i] = d2 y_i/dtheta2``
    (no allocation: the small intermediates are tuples)."""
    tau = theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]
    a, a1, a2, b, b1, b2 = ab_functions(tau)
    ts = theta[0] * s[0] + theta[1] * s[1] + theta[2] * s[2]
    c = (
        theta[1] * s[2] - theta[2] * s[1],
        theta[2] * s[0] - theta[0] * s[2],
        theta[0] * s[1] - theta[1] * s[0],
    )
    ga = (2.0 * a1 * theta[0], 2.0 * a1 * theta[1], 2.0 * a1 * theta[2])
    gb = (2.0 * b1 * theta[0], 2.0 * b1 * theta[1], 2.0 * b1 * theta[2])
    # dc_i/dtheta_j = (s x e_i)_j = -(s~)_{ij}:  s~ = [[0,-s2,s1],[s2,0,-s0],[-s1,s0,0]]
    dc = ((0.0, s[2], -s[1]), (-s[2], 0.0, s[0]), (s[1], -s[0], 0.0))
    for i in range(3):
        y[i] = s[i] + a * c[i] + b * (theta[i] * ts - tau * s[i])
        pi = theta[i] * ts - tau * s[i]  # p_i - tau s_i
        # grad p_i - 2 s_i theta = e_i ts + theta_i s - 2 s_i theta
        g0 = theta[i] * s[0] - 2.0 * s[i] * theta[0]
        g1 = theta[i] * s[1] - 2.0 * s[i] * theta[1]
        g2 = theta[i] * s[2] - 2.0 * s[i] * theta[2]
        if i == 0:
            g0 += ts
        elif i == 1:
            g1 += ts
        else:
            g2 += ts
        gp = (g0, g1, g2)
        dci = dc[i]
        for j in range(3):
            Jy[i, j] = c[i] * ga[j] + a * dci[j] + pi * gb[j] + b * gp[j]
        for j in range(3):
            for k in range(3):
                h = (
                    ga[j] * dci[k]
                    + dci[j] * ga[k]
                    + c[i] * 4.0 * a2 * theta[j] * theta[k]
                    + gb[j] * gp[k]
                    + gp[j] * gb[k]
                    + pi * 4.0 * b2 * theta[j] * theta[k]
                )
                if j == k:
                    h += c[i] * 2.0 * a1 + pi * 2.0 * b1 - 2.0 * b * s[i]
                if j == i:
                    h += b * s[k]
                if k == i:
                    h += b * s[j]
                Hy[i, j, k] = h


def exp_rotation(theta: ArrayLike) -> Array:
    """Rotation matrix ``exp(theta~)`` (3, 3) (numpy helper)."""
    theta = np.asarray(theta, float)
    R = np.empty((3, 3))
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1.0
        R[:, k] = exp_apply(theta, e)
    return R
