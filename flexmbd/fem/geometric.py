"""Unit geometric-stiffness matrices (review eq. 19-21; Wallrapp; Banerjee-Lemak).

The stress state of a floating body is linear in a few load parameters.
For each unit parameter we solve the static stress state on the full mesh,
assemble ``K_G(sigma)`` (form ``sigma_ij d_i u_k d_j v_k``) and project it on
the modes.  At run time the body's geometric stiffness is the load-weighted
sum (`ReducedBody.geometric_stiffness`).

Load parameters (body axes; x0 = undeformed position relative to the body origin):

- six angular-velocity products ``(w1^2, w2^2, w3^2, w1 w2, w2 w3, w1 w3)``:
  body force ``-rho w x (w x x0)``;
- three angular accelerations ``alpha``: ``-rho alpha x x0``;
- three linear accelerations ``a`` of the body origin (use ``a - g`` for
  gravity): ``-rho a``;
- per interface, the six components of the wrench ``[moment; force]`` the
  surroundings apply at the interface frame, spread on its nodes with the
  distributing weights ``W^T``.

Supports (documented convention): a clamped basis (fixed nodes, or a
Craig-Bampton reference interface) solves with that support, so the
reactions there follow from equilibrium and the reference interface's own
unit wrenches give zero; a free-free (mean-axis) basis uses inertia relief,
which gives the exact stress whenever the supplied loads are in equilibrium.
Body forces are applied as consistent nodal loads ``M b(x_nodes)`` — exact
because ``b`` is linear in ``x0``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .._typing import Array
    from .assembly import Assembler
    from .interfaces import Interface
    from .model import FEModel

__all__ = [
    "OMEGA_PRODUCTS",
    "unit_load_vectors",
    "unit_geometric_stiffness",
    "project_scalar",
    "project_pattern_data",
]

OMEGA_PRODUCTS = ("w1w1", "w2w2", "w3w3", "w1w2", "w2w3", "w1w3")
_PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (0, 2))


def omega_matrices():
    """C^k with w x (w x x) = sum_k p_k C^k x for the six products p_k."""
    out = []
    for i, j in _PAIRS:
        C = np.zeros((3, 3))
        if i == j:
            C[i, i] = 1.0
            C -= np.eye(3)
        else:
            C[i, j] = C[j, i] = 1.0
        out.append(C)
    return out


def unit_load_vectors(model: FEModel, interfaces: Sequence[Interface]) -> tuple[Array, list[str]]:
    """Full-space unit load vectors (3n x L) and their names."""
    x = model.fe.nodes
    n = len(x)
    cols, names = [], []
    for C, nm in zip(omega_matrices(), OMEGA_PRODUCTS):
        b = -(x @ C.T)
        cols.append(b.ravel())
        names.append(nm)
    for i in range(3):
        e = np.zeros(3)
        e[i] = 1.0
        b = -np.cross(e, x)
        cols.append(b.ravel())
        names.append(f"alpha{i + 1}")
    for i in range(3):
        b = np.zeros((n, 3))
        b[:, i] = -1.0
        cols.append(b.ravel())
        names.append(f"a{i + 1}")
    B = np.column_stack(cols)
    F = model.M @ B  # consistent nodal loads of the (linear) body forces
    cols = [F]
    for name, itf in interfaces.items():
        cols.append(itf.load(np.eye(6), model.n_dofs))
        names += [f"{name}.{c}" for c in ("mx", "my", "mz", "fx", "fy", "fz")]
    return np.hstack(cols), names


def project_scalar(Kg: sp.spmatrix, Phi: Array) -> Array:
    """Phi^T (Kg (x) I3) Phi for a scalar (n_nodes x n_nodes) matrix Kg."""
    m = Phi.shape[1]
    P = Phi.reshape(-1, 3 * m)  # node-major: columns (component, mode)
    KP = Kg @ P
    out = np.zeros((m, m))
    for j in range(3):
        out += P[:, j * m : (j + 1) * m].T @ KP[:, j * m : (j + 1) * m]
    return 0.5 * (out + out.T)


def project_pattern_data(assembler: Assembler, data: Array, Phi: Array) -> Array:
    """Projections ``Phi^T (K_g (x) I3) Phi`` (k, m, m) of scalar matrices given by their
    data (nnz_s, k) on the assembler's node pattern — no n x n matrix is formed twice."""
    indptr, indices, _ = assembler.pattern()
    n = assembler.n_nodes
    Phi = np.ascontiguousarray(Phi)
    out = np.zeros((data.shape[1], Phi.shape[1], Phi.shape[1]))
    for k in np.nonzero(np.any(data != 0.0, axis=0))[0]:  # zero load cases project to zero
        Kg = sp.csr_matrix((np.ascontiguousarray(data[:, k]), indices, indptr), shape=(n, n))
        out[k] = project_scalar(Kg, Phi)
    return out


def unit_geometric_stiffness(
    model: FEModel,
    modeset: Any,
    timings: dict[str, float] | None = None,
) -> tuple[Array, list[str], Array]:
    """Projected unit K_G matrices, shape (L, m, m), their names and the static states.

    All unit load cases are solved together (one multi-right-hand-side solve
    with the factor the mode set already holds), their stresses and element
    geometric stiffnesses evaluated in one pass over the elements, and each
    assembled scalar matrix projected on the modes.
    """
    tim, t0 = {}, time.perf_counter()
    F, names = unit_load_vectors(model, modeset.interfaces)
    U = modeset.static(F)
    tim["static"], t0 = time.perf_counter() - t0, time.perf_counter()
    data = model.assembler.geometric_data(U)
    tim["assemble"], t0 = time.perf_counter() - t0, time.perf_counter()
    out = project_pattern_data(model.assembler, data, modeset.Phi)
    tim["project"] = time.perf_counter() - t0
    if timings is not None:
        timings.update(tim)
    return out, names, U
