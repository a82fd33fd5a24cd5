"""Volume meshes: meshio / scikit-fem import, named node sets, validity checks.

`FEMesh` wraps a scikit-fem mesh with the node sets an engineer refers to by
name (gmsh physical groups, Abaqus ``*NSET``/``*ELSET``, VTU/MED sets).  Node
numbers are always scikit-fem node numbers (columns of ``mesh.doflocs``); for
quadratic meshes scikit-fem puts vertex nodes first, so file node numbers are
mapped by coordinates on import.

Supported cells: ``tetra`` (tet4), ``tetra10``, ``hexahedron`` (hex8) and
``hexahedron27``.  ``hexahedron20`` (serendipity, Abaqus C3D20) is not
supported by scikit-fem's importer and raises `MeshError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MeshError
from .selectors import select

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

    from .._typing import Array

__all__ = ["FEMesh", "SUPPORTED_CELLS"]

SUPPORTED_CELLS = ("tetra", "tetra10", "hexahedron", "hexahedron27")
_UNSUPPORTED_HINT = {
    "hexahedron20": "20-node serendipity hexahedra (C3D20) are not supported by scikit-fem; "
    "remesh with 27-node (gmsh: Mesh.SecondOrderIncomplete=0) or 8-node hexahedra",
    "wedge": "wedge (prism) cells are not supported for elasticity here; remesh with tetrahedra "
    "or hexahedra",
    "wedge15": "quadratic wedges are not supported; remesh with tetra10",
    "pyramid": "pyramids are not supported; remesh with pure tetrahedra or hexahedra",
    "pyramid13": "pyramids are not supported; remesh with pure tetrahedra or hexahedra",
    "tetra20": "cubic tetrahedra are not supported; use tetra10",
    "hexahedron64": "cubic hexahedra are not supported; use hexahedron27",
}
_VOLUME_CELLS = set(SUPPORTED_CELLS) | set(_UNSUPPORTED_HINT)


@dataclass
class FEMesh:
    """A scikit-fem volume mesh plus named node sets.

    Attributes
    ----------
    mesh : skfem.Mesh
        MeshTet1, MeshTet2, MeshHex1 or MeshHex2.
    node_sets : dict[str, ndarray]
        Named node sets (scikit-fem node numbers).
    source : str
        Where the mesh came from (file name or "meshio"/"skfem").
    """

    mesh: object
    node_sets: dict = field(default_factory=dict)
    source: str = "skfem"

    @property
    def cell_type(self) -> str:
        """meshio name of the cell type ('tetra', 'tetra10', 'hexahedron', 'hexahedron27')."""
        import skfem

        for cls, name in (
            (skfem.MeshTet2, "tetra10"),
            (skfem.MeshHex2, "hexahedron27"),
            (skfem.MeshTet1, "tetra"),
            (skfem.MeshHex1, "hexahedron"),
        ):
            if isinstance(self.mesh, cls):
                return name
        raise MeshError(
            f"mesh from {self.source}: unsupported scikit-fem mesh {type(self.mesh).__name__}"
        )

    @property
    def nodes(self) -> Array:
        """Node coordinates, shape (n_nodes, 3), scikit-fem node order."""
        return self.mesh.doflocs.T

    @property
    def n_nodes(self) -> int:
        return self.mesh.doflocs.shape[1]

    @property
    def n_dofs(self) -> int:
        return 3 * self.n_nodes

    @property
    def n_elements(self) -> int:
        return self.mesh.t.shape[1]

    @property
    def element_nodes(self) -> NDArray[np.int64]:
        """Element connectivity over all element nodes, shape (n_elements, n_loc), skfem order."""
        return self.mesh.dofs.element_dofs.T

    def meshio_cells(self) -> NDArray[np.int64]:
        """Connectivity in meshio/VTK node order (for writing and viewing deformed shapes)."""
        from skfem.io.meshio import to_meshio

        return to_meshio(self.mesh, encode_cell_data=False).cells[0].data

    def to_meshio(self, point_data: dict[str, Any] | None = None) -> Any:
        """meshio.Mesh through scikit-fem's own converter (keeps hex node order right)."""
        from skfem.io.meshio import to_meshio

        return to_meshio(self.mesh, point_data=point_data, encode_cell_data=False)

    def bounding_box(self) -> tuple[Array, Array]:
        x = self.nodes
        return x.min(axis=0), x.max(axis=0)

    def size(self) -> float:
        lo, hi = self.bounding_box()
        return float(np.linalg.norm(hi - lo))

    def select(self, selector: Any, name: str | None = "selection") -> NDArray[np.int64]:
        """Node numbers picked by ``selector`` (see `flexmbd.fem.selectors`)."""
        return select(self, selector, name)

    def __repr__(self):
        return (
            f"FEMesh({self.cell_type}, {self.n_nodes} nodes, {self.n_elements} elements, "
            f"sets={sorted(self.node_sets)}, source={self.source!r})"
        )


def _from_meshio(m, source):
    return _from_meshio_mapped(m, source)[0]


def _from_meshio_mapped(m, source):
    """(FEMesh, file2sk): the mesh and the scikit-fem node of each meshio point (-1: unused)."""
    import skfem
    from skfem.io.meshio import from_meshio

    types = [c.type for c in m.cells]
    vol = [t for t in dict.fromkeys(types) if t in _VOLUME_CELLS]
    if not vol:
        raise MeshError(
            f"mesh {source!r} has no volume cells (found {sorted(set(types))}); "
            "mesh the volume (gmsh: Mesh 3) with tetrahedra or hexahedra"
        )
    bad = [t for t in vol if t not in SUPPORTED_CELLS]
    if bad:
        raise MeshError(
            f"mesh {source!r}: cell type {bad[0]!r} unsupported: {_UNSUPPORTED_HINT[bad[0]]}"
        )
    if len(vol) > 1:
        raise MeshError(
            f"mesh {source!r} mixes volume cell types {vol}; scikit-fem needs one "
            "cell type per mesh: remesh with a single element type"
        )
    ctype = vol[0]
    conn = np.concatenate([c.data for c in m.cells if c.type == ctype]).astype(np.int64)
    points = np.asarray(m.points, dtype=float)
    if points.ndim != 2 or points.shape[1] == 2:
        raise MeshError(f"mesh {source!r} is two-dimensional; a volume mesh is needed")
    if conn.size == 0:
        raise MeshError(
            f"mesh {source!r} has no {ctype} cells (an empty cell block); "
            "mesh the volume (gmsh: Mesh 3) and export it again"
        )
    if conn.min() < 0 or conn.max() >= len(points):
        bad = np.unique(conn[(conn < 0) | (conn >= len(points))])
        raise MeshError(
            f"mesh {source!r}: the {ctype} cells refer to node numbers "
            f"{bad[:5].tolist()} but the mesh has {len(points)} points (0.."
            f"{len(points) - 1}); the file is truncated or its connectivity is "
            "corrupt: export it again"
        )
    check_finite_points(points[np.unique(conn), :3], source)
    used = np.unique(conn)
    # compact: drop points not used by the volume cells (geometry points, orphans)
    newidx = -np.ones(len(points), dtype=np.int64)
    newidx[used] = np.arange(len(used))
    mm = type(m)(points[used, :3], [(ctype, newidx[conn])])
    try:
        skm = from_meshio(mm)
    except Exception as exc:
        raise MeshError(
            f"mesh {source!r}: scikit-fem could not import the {ctype} cells ({exc})"
        ) from exc
    if not isinstance(skm, (skfem.MeshTet1, skfem.MeshHex1)):
        raise MeshError(f"mesh {source!r}: unexpected scikit-fem mesh {type(skm).__name__}")
    # map file point numbers -> skfem node numbers (quadratic meshes are reordered)
    file2sk = -np.ones(len(points), dtype=np.int64)
    if skm.doflocs.shape[1] == len(used) and np.array_equal(skm.doflocs.T, points[used, :3]):
        file2sk[used] = np.arange(len(used))
    else:
        from scipy.spatial import cKDTree

        dist, idx = cKDTree(skm.doflocs.T).query(points[used, :3])
        scale = max(np.ptp(points[used, :3], axis=0).max(), 1e-300)
        if dist.max() > 1e-9 * scale:
            raise MeshError(
                f"mesh {source!r}: could not match file nodes to scikit-fem nodes "
                "(duplicate or coincident nodes?)"
            )
        file2sk[used] = idx
    sets = _named_sets(m, file2sk)
    return FEMesh(skm, sets, source), file2sk


def _named_sets(m, file2sk):
    """Node sets from meshio point sets, cell sets and gmsh physical tags (file numbering)."""
    sets = {}

    def put(name, pts):
        pts = np.asarray(pts, dtype=np.int64).ravel()
        pts = pts[(pts >= 0) & (pts < len(file2sk))]
        mapped = file2sk[pts]
        mapped = mapped[mapped >= 0]
        if name in sets:
            mapped = np.concatenate([sets[name], mapped])
        sets[name] = np.unique(mapped)

    for name, pts in (m.point_sets or {}).items():
        put(name, pts)
    for name, per_block in (m.cell_sets or {}).items():
        if name.startswith("gmsh:"):
            continue
        for block, ids in zip(m.cells, per_block):
            if ids is None or len(ids) == 0:
                continue
            put(name, block.data[np.asarray(ids, dtype=np.int64)])
    phys = m.cell_data.get("gmsh:physical") if m.cell_data else None
    if phys is not None and m.field_data:
        names = {int(v[0]): k for k, v in m.field_data.items()}
        for block, tags in zip(m.cells, phys):
            for tag in np.unique(tags):
                name = names.get(int(tag))
                if name is not None and name not in (m.cell_sets or {}):
                    put(name, block.data[tags == tag])
    return {k: v for k, v in sets.items() if len(v)}


def _skfem_named_sets(skm):
    sets = {}
    try:
        bnd = skm.boundaries or {}
    except Exception:
        bnd = {}
    for name, facets in bnd.items():
        sets[name] = np.unique(skm.dofs.get_facet_dofs(np.asarray(facets)).ravel())
    try:
        sub = skm.subdomains or {}
    except Exception:
        sub = {}
    for name, elems in sub.items():
        sets[name] = np.unique(skm.dofs.element_dofs[:, np.asarray(elems)].ravel())
    return sets


def check_finite_points(points, source):
    """MeshError naming the first nodes whose coordinates are NaN or infinite."""
    bad = np.nonzero(~np.isfinite(points).all(axis=1))[0]
    if len(bad):
        raise MeshError(
            f"mesh {source!r}: {len(bad)} node(s) with non-finite (NaN or inf) "
            f"coordinates, e.g. nodes {bad[:5].tolist()}; fix the mesh file or its "
            "export"
        )


def check_connected(fe):
    """MeshError if the mesh falls into several parts that share no node.

    Each part would move as a rigid body of its own (extra zero-frequency modes that no
    eigen solver or floating frame can handle). Duplicate, unmerged nodes at the
    seams of an assembly are the usual cause (gmsh: ``Coherence``).
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    conn = np.asarray(fe.mesh.t)  # vertex connectivity (n_vertices_per_cell, n_cells)
    nv, ne = conn.shape[1], conn.shape[0]
    rows = np.repeat(np.arange(nv), ne)
    inc = sp.csr_matrix(
        (np.ones(rows.size), (rows, conn.T.ravel())), shape=(nv, fe.mesh.p.shape[1])
    )
    _, labels = connected_components(inc.T @ inc, directed=False)
    parts, sizes = np.unique(labels[np.unique(conn)], return_counts=True)  # vertices only
    count = len(parts)
    if count > 1:
        raise MeshError(
            f"mesh {fe.source!r} is not connected: it has {count} separate parts (vertices per "
            f"part: {sorted(sizes.tolist(), reverse=True)[:6]}) that share no node; merge "
            "duplicate nodes at the seams (gmsh: Coherence) or model each part as its own "
            "body joined by a Fixed joint"
        )


def check_elements(fe):
    """Raise MeshError for inverted, degenerate or tangled elements.

    The Jacobian determinant is evaluated at the element quadrature points.  A
    mesh whose elements are all negatively oriented (a mirrored node-order
    convention) is accepted, since only |det J| enters the integrals; mixed
    signs across a mesh read from a file (meshio/VTK orientation convention),
    zero volume, or sign changes inside an element are errors.  Meshes built
    by scikit-fem itself (``source == 'skfem'``) may mix tetrahedron
    orientations (its generators do); only degenerate or internally
    sign-changing elements are errors there.
    """
    import skfem

    m = fe.mesh
    elem = m.elem()
    if fe.n_elements == 0 or fe.n_nodes == 0:
        raise MeshError(f"mesh {fe.source!r} has no elements; mesh the volume (gmsh: Mesh 3)")
    check_finite_points(fe.nodes, fe.source)
    X, _ = skfem.quadrature.get_quadrature(m.refdom, 2)
    # and at the element corners: a hexahedron collapsed along an edge keeps a positive
    # Jacobian inside but has none at its corners, where stresses are recovered
    X = np.hstack([X, np.asarray(type(m).init_refdom().p, dtype=float)])
    try:
        with np.errstate(all="ignore"):  # degenerate elements divide by zero in the mapping
            det = m.mapping().detDF(X)  # (n_elements, n_points)
    except Exception as exc:  # isoparametric mappings raise "Zero Jacobian determinant"
        raise MeshError(
            f"mesh {fe.source!r}: degenerate element(s) with zero volume (scikit-fem: {exc}); "
            "check for flattened or collapsed elements (all nodes in one plane, coincident "
            "nodes) and remesh or fix them"
        ) from None
    vol_scale = np.abs(det).max() if det.size else 1.0
    tiny = 1e-12 * vol_scale
    pos = (det > tiny).all(axis=1)
    neg = (det < -tiny).all(axis=1)
    bad = np.nonzero(~(pos | neg))[0]
    if len(bad):
        raise MeshError(
            f"mesh {fe.source!r}: {len(bad)} degenerate or distorted element(s) (zero or "
            f"sign-changing Jacobian), e.g. elements {bad[:5].tolist()}; remesh or fix them"
        )
    if pos.any() and neg.any() and fe.source != "skfem":
        few, many = (
            (np.nonzero(neg)[0], "positive")
            if pos.sum() >= neg.sum()
            else (np.nonzero(pos)[0], "negative")
        )
        raise MeshError(
            f"mesh {fe.source!r}: {len(few)} inverted element(s) (Jacobian sign opposite to the "
            f"{many} majority), e.g. elements {few[:5].tolist()}; fix their node order or remesh"
        )
    del elem
