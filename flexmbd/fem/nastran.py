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

import numpy as np
import scipy.sparse as sp

from ..errors import MeshError
from .nastran_bdf import BDFModel, read_bdf, write_bdf
from .nastran_matrices import DMIGMatrix, read_dmig, read_op4, write_dmig, write_op4

__all__ = ["read_bdf", "write_bdf", "BDFModel", "read_op4", "write_op4", "read_dmig",
           "write_dmig", "DMIGMatrix", "node_dof_matrix", "node_dof_labels"]


def node_dof_labels(grid_ids):
    """(3n, 2) labels (grid, component 1-3) of the translational DOFs, node-interleaved."""
    g = np.asarray(grid_ids, dtype=np.int64)
    return np.column_stack([np.repeat(g, 3), np.tile([1, 2, 3], len(g))])


def node_dof_matrix(dmig, grid_ids, source="DMIG"):
    """The square DMIG matrix on the translational DOFs of ``grid_ids`` (3n x 3n CSR).

    Rows/columns follow ``grid_ids`` (e.g. `BDFModel.grid_ids`, the mesh's node
    order), components 1-3 interleaved.  Rotational components (4-6) must carry
    no entries (solid elements); DOFs of the mesh absent from the matrix are
    zero rows (e.g. constrained grids).  Raises `MeshError` when the matrix has
    translational DOFs of grids outside the mesh, or rotational entries.
    """
    if not isinstance(dmig, DMIGMatrix):
        raise MeshError(f"{source}: node_dof_matrix needs a DMIGMatrix (read_dmig), got "
                        f"{type(dmig).__name__}")
    A = dmig.matrix.tocoo()
    rot = (dmig.rows[A.row, 1] > 3) | (dmig.cols[A.col, 1] > 3)
    if np.any(rot & (A.data != 0)):
        raise MeshError(f"{source}: matrix {dmig.name} has entries on rotational components "
                        "(4-6); solid meshes have 3 DOFs per grid")
    labels = node_dof_labels(grid_ids)
    index = {(int(g), int(c)): i for i, (g, c) in enumerate(labels)}
    keep = ~rot
    try:
        r = np.array([index[(int(g), int(c))] for g, c in dmig.rows[A.row[keep]]], dtype=np.int64)
        c = np.array([index[(int(g), int(c))] for g, c in dmig.cols[A.col[keep]]], dtype=np.int64)
    except KeyError as exc:
        raise MeshError(f"{source}: matrix {dmig.name} has DOF (grid, component) {exc.args[0]} "
                        f"that is not a node of the mesh ({len(labels) // 3} nodes); the matrix "
                        "does not fit the mesh") from None
    n = len(labels)
    return sp.csr_matrix((A.data[keep], (r, c)), shape=(n, n))
