"""Inertia invariants of a floating-frame body (the standard inertia shape integrals).

With ``Phi`` (3n x m) in node-interleaved order, ``Phi_j = Phi[j::3]`` the
j-th component rows and ``M_s`` the scalar mass (so ``M = M_s (x) I3``):

====================  ==========================================  ==============
name                  definition                                  shape
====================  ==========================================  ==============
mass                  ``m = int rho dV = 1^T M_s 1``              ()
first_moment          ``c_i = int rho x0_i dV``                   (3,)
second_moment         ``J0_ij = int rho x0_i x0_j dV``            (3, 3)
inertia_origin        ``tr(J0) I - J0`` (about the body origin)   (3, 3)
com, inertia_com      centre of mass; inertia about it            (3,), (3, 3)
St                    ``St_j = int rho Phi_j dV``                 (3, m)
Sij                   ``S_ij = int rho x0_i Phi_j dV``            (3, 3, m)
Pij                   ``P_ij = int rho Phi_i^T Phi_j dV``         (3, 3, m, m)
M_ff, K_ff            ``Phi^T M Phi``, ``Phi^T K Phi``            (m, m)
====================  ==========================================  ==============

With the consistent mass these are exact integrals over the mesh volume,
because the undeformed position ``x0`` is interpolated exactly by the
isoparametric shape functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from typing import Any

    from .._typing import Array

__all__ = ["inertia_invariants", "rigid_inertia"]


def rigid_inertia(Ms: Any, nodes: Array) -> tuple[float, Array, Array, Array, Array, Array]:
    """mass, first moment, second moment, inertia about origin, com, inertia about com."""
    x = np.asarray(nodes, float)
    X = np.column_stack([np.ones(len(x)), x])
    G = X.T @ (Ms @ X)
    G = 0.5 * (G + G.T)
    m, c, J0 = G[0, 0], G[0, 1:], G[1:, 1:]
    I_o = np.trace(J0) * np.eye(3) - J0
    com = c / m
    I_c = I_o - m * (com @ com * np.eye(3) - np.outer(com, com))
    return m, c, J0, I_o, com, I_c


def inertia_invariants(Ms: Any, K: Any, nodes: Array, Phi: Array) -> dict[str, Any]:
    """All invariants as a dict (see the module docstring)."""
    m, c, J0, I_o, com, I_c = rigid_inertia(Ms, nodes)
    x = np.asarray(nodes, float)
    nm = Phi.shape[1]
    P3 = np.ascontiguousarray(Phi).reshape(len(x), 3, nm)  # node-major components
    MsP = (Ms @ P3.reshape(len(x), 3 * nm)).reshape(len(x), 3, nm)  # one product with M_s
    X = np.column_stack([np.ones(len(x)), x])  # (n_nodes, 4)
    A = np.einsum("na,njm->ajm", X, MsP, optimize=True)  # (4, 3, m)
    St = A[0]
    Sij = A[1:]
    # Pij[i, j] = Phi_i^T M_s Phi_j: one (3m x n) (n x 3m) product
    Pij = (
        (P3.reshape(len(x), 3 * nm).T @ MsP.reshape(len(x), 3 * nm))
        .reshape(3, nm, 3, nm)
        .transpose(0, 2, 1, 3)
        .copy()
    )
    M_ff = Pij[0, 0] + Pij[1, 1] + Pij[2, 2]
    K_ff = Phi.T @ (K @ Phi)
    return {
        "mass": float(m),
        "first_moment": c,
        "second_moment": J0,
        "inertia_origin": I_o,
        "com": com,
        "inertia_com": I_c,
        "St": St,
        "Sij": Sij,
        "Pij": Pij,
        "M_ff": 0.5 * (M_ff + M_ff.T),
        "K_ff": 0.5 * (K_ff + K_ff.T),
    }
