"""Compiled momenta of a rigid tree's history: the floating base's linear and angular
momentum of every output sample in one call, with the operations (and so the bits) of
numpy's ``einsum`` products in :meth:`flexmbd.recursive.RecursiveSystem.momentum`."""

import numpy as np

from .._jit import njit


@njit(cache=True)
def momenta_history(Mi, Rw, rw, vel, out):
    """Linear and angular momentum (kg m/s, kg m^2/s; world axes, angular about the world
    origin) of each state of a rigid tree's kinematics history: ``Mi`` (N, 6, 6) the
    bodies' spatial inertias at their tree frames (body axes), ``Rw`` (nt, N+1, 3, 3),
    ``rw`` (nt, N+1, 3) and ``vel`` (nt, N+1, 6) the world poses and body-axes twists of
    the tree frames (row 0 the ground, unused); ``out[t] = (p, L)``. Per body ``h = I V``,
    ``p_k = R h_v``, ``L_k = R h_w + r x p_k``, summed in label order: the sums in the
    order numpy's ``einsum`` takes them (6 terms in turn; 3 terms as ``(t0 + t2) + t1``)
    and ``sum`` over the bodies in turn, so the same bits as the per-state method."""
    nt, n = Rw.shape[0], Rw.shape[1] - 1
    h = np.empty(6)
    pk = np.empty(3)
    for s in range(nt):
        for k in range(1, n + 1):
            I, V, R, r = Mi[k - 1], vel[s, k], Rw[s, k], rw[s, k]
            for i in range(6):
                x = 0.0
                for j in range(6):
                    x += I[i, j] * V[j]
                h[i] = x
            for i in range(3):
                pk[i] = (R[i, 0] * h[3] + R[i, 2] * h[5]) + R[i, 1] * h[4]
            for i in range(3):
                a, b = (i + 1) % 3, (i + 2) % 3
                L = ((R[i, 0] * h[0] + R[i, 2] * h[2]) + R[i, 1] * h[1]) + (
                    r[a] * pk[b] - r[b] * pk[a]
                )
                if k == 1:
                    out[s, i], out[s, 3 + i] = pk[i], L
                else:
                    out[s, i] += pk[i]
                    out[s, 3 + i] += L
