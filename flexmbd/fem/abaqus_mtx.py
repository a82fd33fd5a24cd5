"""Abaqus ``*MATRIX GENERATE`` / ``*MATRIX OUTPUT`` ``.mtx`` files -> scipy sparse matrices.

Two layouts, detected from the number of fields per line (commas or blanks):

- ``FORMAT=COORDINATE``: ``row, column, value`` with 1-based global DOF
  numbers.  Abaqus numbers the DOFs node by node in its internal node order
  (instances in deck order, nodes in label order: `AbaqusModel.labels`) with
  a fixed number of DOFs per node — 3 for a solid-only model, 6 when the model
  has rotational DOFs; the count is inferred from the matrix size.
- ``FORMAT=MATRIX INPUT`` (the default): ``node_i, dof_i, node_j, dof_j,
  value`` with node labels (``Inst.17`` or, in a single-instance deck, ``17``).

Files may hold one triangle (then mirrored, the diagonal kept once) or both
(kept as given; a both-triangle matrix must be symmetric to round-off).
Rotational DOFs 4-6 of solid nodes carry no entries in a solid model and are
dropped; a non-zero entry coupling to them is an error, as is a node or DOF
that the mesh does not have.  Results are in flexmbd's node-interleaved DOF
order ``3*i + k`` of the mesh nodes ``i`` and in SI units.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..errors import MeshError
from .units import unit_system

if TYPE_CHECKING:
    from .._typing import StrPath
    from .abaqus import AbaqusModel

__all__ = ["read_mtx"]

_SPLIT = re.compile(r"[,\s]+")


def _rows(path):
    """(fields per line, 2-D string array, line numbers) of the data lines."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise MeshError(f"matrix file {str(path)!r} cannot be read ({exc})") from exc
    lines, nos = [], []
    for no, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith("*") or s.startswith("#"):
            continue
        lines.append(_SPLIT.split(s.strip(",")))
        nos.append(no)
    if not lines:
        raise MeshError(f"{path}: no matrix entries (empty file?)")
    n = len(lines[0])
    if n not in (3, 5):
        raise MeshError(
            f"{path}:{nos[0]}: {n} fields per line; an Abaqus .mtx line has 3 "
            "(row, column, value) or 5 (node, dof, node, dof, value)"
        )
    for fields, no in zip(lines, nos):
        if len(fields) != n:
            raise MeshError(f"{path}:{no}: {len(fields)} fields, the file's first line has {n}")
    return n, lines, np.asarray(nos)


def _numbers(path, cols, nos, what):
    try:
        return np.array(cols, dtype=float)
    except ValueError:
        for i, v in enumerate(cols):
            try:
                float(v.replace("D", "E"))
            except ValueError:
                raise MeshError(f"{path}:{nos[i]}: {what} {v!r} is not a number") from None
        return np.array([float(v.replace("D", "E")) for v in cols])


def _integers(path, vals, nos, what):
    bad = np.nonzero((vals != np.round(vals)) | (vals < 1))[0]
    if len(bad):
        raise MeshError(f"{path}:{nos[bad[0]]}: {what} {vals[bad[0]]} is not a positive integer")
    return vals.astype(np.int64)


def read_mtx(
    path: StrPath,
    model: AbaqusModel | None = None,
    *,
    units: str | None = None,
    kind: str = "matrix",
    sym_rtol: float = 1e-6,
) -> sp.csr_matrix:
    """Read an Abaqus ``.mtx`` matrix into a symmetric scipy CSR matrix (SI).

    Parameters
    ----------
    path : str | Path
        The ``.mtx`` file (e.g. ``jobSTIF1.mtx`` or ``jobMASS1.mtx``).
    model : AbaqusModel, optional
        The deck the matrix belongs to: maps Abaqus nodes to mesh nodes and
        checks the size.  Without it the matrix keeps the file's numbering
        (global DOFs, or nodes in label order with 3 DOFs each).
    units : str | UnitSystem, optional
        Unit system of the file (default: the model's, else SI).
    kind : "stiffness" | "mass" | "matrix"
        Scales the entries to SI (force/length or mass units); "matrix" leaves
        them unscaled.
    sym_rtol : float
        Both-triangle files must be symmetric within this relative tolerance.

    Returns
    -------
    scipy.sparse.csr_matrix
        (3 n_nodes, 3 n_nodes) in node-interleaved order of ``model.mesh``.
    """
    path = Path(path)
    if not path.exists():
        raise MeshError(
            f"matrix file {str(path)!r} does not exist; check the path "
            f"(working directory: {Path.cwd()})"
        )
    us = unit_system(
        units if units is not None else (model.units if model is not None else "SI"),
        f"matrix file {str(path)!r}",
    )
    n, lines, nos = _rows(path)
    cols = list(zip(*lines))
    val = _numbers(path, cols[-1], nos, "value")
    if not np.isfinite(val).all():
        i = np.nonzero(~np.isfinite(val))[0][0]
        raise MeshError(f"{path}:{nos[i]}: non-finite matrix entry {val[i]}")
    n_mesh = model.mesh.n_nodes if model is not None else None
    if n == 3:
        r = _integers(path, _numbers(path, cols[0], nos, "row"), nos, "row")
        c = _integers(path, _numbers(path, cols[1], nos, "column"), nos, "column")
        n_glob = int(max(r.max(), c.max()))
        if model is not None:
            n_lab = len(model.deck_labels)
            per = next((d for d in (3, 6) if n_glob <= d * n_lab), None)
            if per is None:
                i = int(np.argmax(np.maximum(r, c)))
                raise MeshError(
                    f"{path}:{nos[i]}: DOF {n_glob} does not fit the {n_lab} nodes of "
                    f"{model.source!r} (3 or 6 DOFs per node); is this the matrix of that deck?"
                )
            node = (np.stack([r, c]) - 1) // per  # Abaqus node index (deck order)
            dof = (np.stack([r, c]) - 1) % per
        else:
            per = 3
            node, dof = (np.stack([r, c]) - 1) // 3, (np.stack([r, c]) - 1) % 3
    else:
        dofs = [_integers(path, _numbers(path, cols[k], nos, "DOF"), nos, "DOF") for k in (1, 3)]
        dof = np.stack(dofs) - 1
        bad = np.nonzero((dof > 5).any(axis=0))[0]
        if len(bad):
            raise MeshError(
                f"{path}:{nos[bad[0]]}: DOF {dof[:, bad[0]].max() + 1} is not a "
                "structural DOF (1-6)"
            )
        if model is not None:
            index = {k: i for i, k in enumerate(model.deck_labels)}
            insts = {k[0] for k in model.deck_labels}
            single = next(iter(insts)) if len(insts) == 1 else None
            node = np.empty((2, len(val)), np.int64)
            for k, col in enumerate((cols[0], cols[2])):
                cache = {}
                for i, tok in enumerate(col):
                    j = cache.get(tok)
                    if j is None:
                        head, dot, tail = tok.rpartition(".")
                        key = (head, int(tail)) if dot and tail.isdigit() else None
                        if key is None:
                            try:
                                key = (single, int(float(tok)))
                            except ValueError:
                                raise MeshError(
                                    f"{path}:{nos[i]}: node {tok!r} is not a node label"
                                ) from None
                        j = index.get(key)
                        if j is None:
                            raise MeshError(
                                f"{path}:{nos[i]}: node {tok} is not a node of "
                                f"{model.source!r}; is this the matrix of that deck?"
                            )
                        cache[tok] = j
                    node[k, i] = j
        else:
            labs = [
                _integers(path, _numbers(path, cols[k], nos, "node"), nos, "node") for k in (0, 2)
            ]
            uniq, inv = np.unique(np.concatenate(labs), return_inverse=True)
            node = inv.reshape(2, -1)
    # rotational DOFs: allowed only with zero entries
    rot = (dof > 2).any(axis=0)
    if rot.any():
        nz = np.nonzero(rot & (val != 0))[0]
        scale = np.abs(val).max()
        big = nz[np.abs(val[nz]) > 1e-12 * scale] if len(nz) else nz
        if len(big):
            raise MeshError(
                f"{path}:{nos[big[0]]}: entry {val[big[0]]:.4g} at a rotational DOF "
                "(4-6); flexmbd bodies are solid meshes with 3 DOFs per node — "
                "export the matrix of the solid part only"
            )
        keep = ~rot
        node, dof, val, nos = node[:, keep], dof[:, keep], val[keep], nos[keep]
    if model is not None:
        sk_of = _deck_to_mesh(model)
        node = sk_of[node]
        if (node < 0).any():
            i = int(np.nonzero((node < 0).any(axis=0))[0][0])
            raise MeshError(
                f"{path}:{nos[i]}: entry at a node that no solid element uses; "
                f"the matrix does not fit the mesh of {model.source!r}"
            )
        size = 3 * n_mesh
    else:
        size = 3 * (int(node.max()) + 1)
    rr, cc = 3 * node[0] + dof[0], 3 * node[1] + dof[1]
    off = rr != cc
    upper, lower = (rr < cc).any(), (rr > cc).any()
    if upper != lower:  # one triangle: mirror, diagonal once
        rr, cc, val = (
            np.concatenate([rr, cc[off]]),
            np.concatenate([cc, rr[off]]),
            np.concatenate([val, val[off]]),
        )
    A = sp.coo_matrix((val, (rr, cc)), shape=(size, size)).tocsr()
    A.sum_duplicates()
    if model is not None:  # a mass or stiffness of the mesh has every diagonal entry
        missing = np.nonzero(A.diagonal() == 0)[0]
        if len(missing):
            lab = model.labels[missing[0] // 3]
            raise MeshError(
                f"{path}: no diagonal entry for {len(missing)} DOF(s) of the mesh of "
                f"{model.source!r}, e.g. direction {missing[0] % 3 + 1} of node {lab[1]}"
                f"{' of instance ' + repr(lab[0]) if lab[0] else ''}; the matrix does not fit "
                "the mesh (another model, or a reduced/constrained matrix?)"
            )
    if upper and lower:
        asym = abs(A - A.T)
        mx = asym.max() if asym.nnz else 0.0
        ref = abs(A).max()
        if mx > sym_rtol * ref:
            raise MeshError(
                f"{path}: matrix not symmetric (max |A - A^T| = {mx:.3g}, "
                f"max |A| = {ref:.3g}); flexmbd needs symmetric mass and stiffness"
            )
        A = (0.5 * (A + A.T)).tocsr()
    scale = {"stiffness": us.stiffness, "mass": us.mass, "matrix": 1.0}.get(kind)
    if scale is None:
        raise MeshError(f"read_mtx: kind={kind!r}; use 'stiffness', 'mass' or 'matrix'")
    if scale != 1.0:
        A = A * scale
    return A.tocsr()


def _deck_to_mesh(model):
    """Mesh node of each Abaqus node in deck order (-1: not in the mesh)."""
    index = {k: i for i, k in enumerate(model.labels)}
    return np.array([index.get(k, -1) for k in model.deck_labels], np.int64)
