"""Nastran input and output: bulk-data meshes, OP4 and DMIG matrices (text readers, no extras).

- `read_bdf` / `write_bdf`: solid meshes with sets and the material
  (:mod:`flexmbd.fem.nastran_bdf`);
- `read_op4` / `write_op4`: OUTPUT4 text matrices; `read_dmig` / `write_dmig`:
  DMIG cards of punch files (:mod:`flexmbd.fem.nastran_matrices`);
- `node_dof_matrix`: a DMIG matrix on (grid, component) labels as the
  3-DOF-per-node matrix of a mesh (node-interleaved, flexmbd's order), ready for
  `ReducedBody.from_matrices` or a comparison with flexmbd's own assembly.

Binary OP2 is not read: pyNastran (the maintained reader) requires numpy < 2,
which conflicts with this package's stack; export matrices as OP4 text or DMIG.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..errors import MeshError
from .nastran_bdf import BDFModel, read_bdf, write_bdf
from .nastran_matrices import DMIGMatrix, read_dmig, read_op4, write_dmig, write_op4
from .reduced import ReducedBody

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

    from .._typing import ArrayLike
    from .reduced import ReducedBody

__all__ = [
    "read_bdf",
    "write_bdf",
    "BDFModel",
    "read_op4",
    "write_op4",
    "read_dmig",
    "write_dmig",
    "DMIGMatrix",
    "node_dof_matrix",
    "node_dof_labels",
    "craig_bampton_body",
]


def node_dof_labels(grid_ids: ArrayLike) -> NDArray[np.int64]:
    """(3n, 2) labels (grid, component 1-3) of the translational DOFs, node-interleaved."""
    g = np.asarray(grid_ids, dtype=np.int64)
    return np.column_stack([np.repeat(g, 3), np.tile([1, 2, 3], len(g))])


def node_dof_matrix(dmig: DMIGMatrix, grid_ids: ArrayLike, source: str = "DMIG") -> sp.csr_matrix:
    """The square DMIG matrix on the translational DOFs of ``grid_ids`` (3n x 3n CSR).

    Rows/columns follow ``grid_ids`` (e.g. `BDFModel.grid_ids`, the mesh's node
    order), components 1-3 interleaved.  Rotational components (4-6) must carry
    no entries (solid elements); DOFs of the mesh absent from the matrix are
    zero rows (e.g. constrained grids).  Raises `MeshError` when the matrix has
    translational DOFs of grids outside the mesh, or rotational entries.
    """
    if not isinstance(dmig, DMIGMatrix):
        raise MeshError(
            f"{source}: node_dof_matrix needs a DMIGMatrix (read_dmig), got {type(dmig).__name__}"
        )
    A = dmig.matrix.tocoo()
    rot = (dmig.rows[A.row, 1] > 3) | (dmig.cols[A.col, 1] > 3)
    if np.any(rot & (A.data != 0)):
        raise MeshError(
            f"{source}: matrix {dmig.name} has entries on rotational components "
            "(4-6); solid meshes have 3 DOFs per grid"
        )
    labels = node_dof_labels(grid_ids)
    index = {(int(g), int(c)): i for i, (g, c) in enumerate(labels)}
    keep = ~rot
    try:
        r = np.array([index[(int(g), int(c))] for g, c in dmig.rows[A.row[keep]]], dtype=np.int64)
        c = np.array([index[(int(g), int(c))] for g, c in dmig.cols[A.col[keep]]], dtype=np.int64)
    except KeyError as exc:
        raise MeshError(
            f"{source}: matrix {dmig.name} has DOF (grid, component) {exc.args[0]} "
            f"that is not a node of the mesh ({len(labels) // 3} nodes); the matrix "
            "does not fit the mesh"
        ) from None
    n = len(labels)
    return sp.csr_matrix((A.data[keep], (r, c)), shape=(n, n))


def _rows_in_mesh_order(phi, grid_ids, what):
    """g-set rows (ascending GRID id; 3 or 6 per grid) -> (3n, a) in mesh node order."""
    A = phi.toarray() if sp.issparse(phi) else np.asarray(phi, float)
    n = len(grid_ids)
    if A.ndim != 2 or A.shape[0] not in (3 * n, 6 * n):
        raise MeshError(
            f"{what}: {A.shape[0] if A.ndim == 2 else A.shape} rows do not fit the "
            f"mesh's {n} grids (3 or 6 rows per grid, ascending GRID id)"
        )
    per = A.shape[0] // n
    A = A.reshape(n, per, -1)[:, :3]
    rank = np.argsort(np.argsort(grid_ids))  # position of each mesh node's id among sorted ids
    return A[rank].reshape(3 * n, -1)


def craig_bampton_body(
    deck: BDFModel | None,
    phi: Any,
    maa: Any,
    kaa: Any,
    *,
    mgg: Any | None = None,
    nodal_mass: Any | None = None,
    interfaces: Any | None = None,
    interface_kind: str | None = None,
    name: str | None = None,
    **options: Any,
) -> ReducedBody:
    """`ReducedBody` of a Nastran Craig-Bampton (superelement / ASET) reduction.

    Parameters
    ----------
    deck : BDFModel
        The component's mesh (`read_bdf`): node positions and sets.
    phi : (3n or 6n, a) array or sparse (e.g. an OP4 matrix)
        The reduction basis at every grid (boundary constraint modes and
        fixed-interface modes), rows in ascending GRID id (3 or 6 per grid),
        columns in the order of ``maa``/``kaa``.
    maa, kaa : DMIGMatrix or (a, a)
        Reduced mass and stiffness on the a-set (boundary DOFs and modal SPOINTs),
        e.g. ``MAAX``/``KAAX`` of a punch file.
    mgg : DMIGMatrix or (3n, 3n), optional
        The full mass on the mesh's grids (DMIG labels or mesh order): exact
        inertia invariants. Without it give ``nodal_mass`` (lumped approximation)
        or ``invariants=`` (see `ReducedBody.from_matrices`).
    interfaces : dict name -> node numbers, optional
        Default: one interface ``"ASET"`` with the grids of ``maa``'s boundary DOFs,
        ``"rigid"`` when they are 3 or more, else ``"nodes"``.
    options
        Passed to `ReducedBody.from_matrices` (damping, names, ...).

    Units are the deck's: SI expected.
    """
    src = name or deck.mesh.source
    Phi = _rows_in_mesh_order(phi, deck.grid_ids, f"craig_bampton_body({src!r}): phi")
    mats = []
    for what, A in (("maa", maa), ("kaa", kaa)):
        A = A.matrix if isinstance(A, DMIGMatrix) else A
        A = A.toarray() if sp.issparse(A) else np.asarray(A, float)
        if A.shape != (Phi.shape[1], Phi.shape[1]):
            raise MeshError(
                f"craig_bampton_body({src!r}): {what} has shape {A.shape} but phi "
                f"has {Phi.shape[1]} columns; the matrices do not fit the basis"
            )
        mats.append(A)
    if isinstance(mgg, DMIGMatrix):
        mgg = node_dof_matrix(mgg, deck.grid_ids, f"craig_bampton_body({src!r}): mgg")
    if mgg is not None:
        Mg = sp.csr_matrix(mgg)
        if Mg.shape != (Phi.shape[0], Phi.shape[0]):
            raise MeshError(
                f"craig_bampton_body({src!r}): mgg has shape {Mg.shape}, expected "
                f"{(Phi.shape[0], Phi.shape[0])} (3 translational DOFs per grid)"
            )
        Mr = Phi.T @ (Mg @ Phi)
        if np.abs(Mr - mats[0]).max() > 1e-6 * np.abs(mats[0]).max():
            raise MeshError(
                f"craig_bampton_body({src!r}): maa differs from phi^T mgg phi "
                f"(max {np.abs(Mr - mats[0]).max():.3g}); the files do not belong "
                "together (or their DOF orders differ)"
            )
    if interfaces is None:
        interfaces = {}
        if isinstance(maa, DMIGMatrix):
            grids = np.unique(maa.rows[maa.rows[:, 1] > 0, 0])
            grids = grids[np.isin(grids, deck.grid_ids)]
            if len(grids):
                interfaces = {"ASET": deck.nodes_of(grids)}
    if interface_kind is None:
        interface_kind = {k: "rigid" if len(v) >= 3 else "nodes" for k, v in interfaces.items()}
    if mgg is None and nodal_mass is None and "invariants" not in options:
        raise MeshError(
            f"craig_bampton_body({src!r}): the reduced mass alone does not give the "
            "floating-frame invariants; give mgg= (the full mass, e.g. MGG as OP4 or "
            "DMIG) or nodal_mass= (lumped point masses, an approximation)"
        )
    return ReducedBody.from_matrices(
        deck.mesh.nodes,
        Phi,
        mats[0] if mgg is None else mgg,
        mats[1],
        nodal_mass=nodal_mass,
        interfaces=interfaces,
        interface_kind=interface_kind,
        name=src,
        strategy=options.pop("strategy", "Nastran Craig-Bampton (a-set matrices)"),
        cells=deck.mesh.meshio_cells(),
        cell_type=deck.mesh.cell_type,
        **options,
    )
