"""Reading a volume mesh: a file (by suffix), a meshio mesh or a scikit-fem mesh.

:func:`read_mesh` is the front door of :mod:`flexmbd.fem.mesh`: Abaqus ``.inp`` files go
to :mod:`flexmbd.fem.abaqus` and Nastran ``.bdf``/``.nas`` files to
:mod:`flexmbd.fem.nastran_bdf` (their readers keep the sets meshio drops), every other
file to meshio. The readers build on :mod:`flexmbd.fem.mesh`, so this dispatch lives
above them and the mesh module imports no reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MeshError
from .abaqus import read_abaqus
from .mesh import FEMesh, _from_meshio, _skfem_named_sets, check_elements
from .nastran_bdf import read_bdf

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["read_mesh"]


def read_mesh(
    source: Any, node_sets: Mapping[str, Any] | None = None, check: bool = True
) -> FEMesh:
    """Read a volume mesh into an `FEMesh`.

    Parameters
    ----------
    source : str | Path | meshio.Mesh | skfem.Mesh | FEMesh
        A file meshio reads (gmsh .msh 2/4, .vtu, Abaqus .inp, MED, Nastran,
        ...), a meshio mesh, or a scikit-fem mesh.
    node_sets : dict, optional
        Extra named node sets (scikit-fem node numbers).
    check : bool
        Check for inverted or degenerate elements (cheap, vectorized).
    """
    if isinstance(source, FEMesh):
        fe = source
    elif isinstance(source, (str, Path)):
        fe = _from_file(Path(source))
    else:
        import skfem

        if isinstance(source, skfem.Mesh):  # no meshio import (0.2 s) for scikit-fem meshes
            fe = FEMesh(source, {}, "skfem")
            _ = fe.cell_type  # raises for unsupported types
            fe.node_sets.update(_skfem_named_sets(source))
        else:
            import meshio

            if not isinstance(source, meshio.Mesh):
                raise MeshError(
                    f"mesh: cannot read a {type(source).__name__}; give a file "
                    "path, a meshio.Mesh or a scikit-fem mesh"
                )
            fe = _from_meshio(source, "meshio")
    if node_sets:
        for k, v in node_sets.items():
            try:
                ids = np.unique(np.asarray(v, dtype=np.int64))
            except (TypeError, ValueError):
                raise MeshError(
                    f"mesh {fe.source!r}: node set {k!r} must be node numbers (integers), got {v!r}"
                ) from None
            if len(ids) and (ids[0] < 0 or ids[-1] >= fe.n_nodes):
                raise MeshError(
                    f"mesh {fe.source!r}: node set {k!r} has node numbers outside "
                    f"0..{fe.n_nodes - 1}, e.g. "
                    f"{ids[(ids < 0) | (ids >= fe.n_nodes)][:5].tolist()}"
                )
            fe.node_sets[k] = ids
    if check:
        check_elements(fe)
    return fe


def _from_file(path):
    import meshio

    if path.suffix.lower() == ".inp" and path.exists():  # sets, surfaces, instances, lines
        return read_abaqus(path).mesh
    if not path.exists():
        raise MeshError(
            f"mesh file {str(path)!r} does not exist; check the path "
            f"(working directory: {Path.cwd()})"
        )
    if path.suffix.lower() in (".bdf", ".nas"):  # our reader keeps the sets (SET1, ASET)
        return read_bdf(path).mesh
    try:
        m = meshio.read(str(path))
    except (Exception, SystemExit) as exc:  # meshio raises many kinds (gmsh: sys.exit)
        raise MeshError(
            f"mesh file {str(path)!r}: meshio could not read it ({exc}); "
            "export it as gmsh .msh, .vtu or Abaqus .inp"
        ) from exc
    return _from_meshio(m, str(path))
