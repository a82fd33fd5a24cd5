"""What a body looks like, and its deformed shape: numpy only (PyVista/meshio on demand).

A :class:`BodyGeometry` is a mesh in the body frame (``nodes`` (n, 3) and
connectivity blocks keyed by meshio cell type, in meshio/VTK node order) plus, for
a flexible body, its mode shapes ``modes`` (3 n, n_modes; node-interleaved
``[u1x u1y u1z u2x ...]``) and optionally stress modes. The world position of a
node for body pose ``(R, r)`` and modal coordinates ``q`` is

    x = r + R (X + scale * Phi_X q)

and the elastic displacement shown as ``displacement`` is ``R Phi_X q`` (rigid
motion excluded). Stress modes ``stress_modes`` (6 n or 6 n_cells, n_modes) give
the Cauchy stress ``sigma = Psi q`` per node (or cell) in Voigt order with the
three normal stresses first (the order of the shear terms does not matter for
von Mises).

Sources: :func:`reduced_body_geometry` (any reduced flexible body, adapter below),
:func:`body_geometry` (model bodies: flexible mesh, rigid visuals or a glyph box
with the body's mass and principal inertia).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import FlexmbdError
from .fem.stress_history import von_mises as equivalent_stress
from .model.forces import Gravity
from .spatial import quat_to_rot_batch

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from ._typing import Array, ArrayLike, StrPath
    from .results import Results

__all__ = [
    "BodyGeometry",
    "deformed_points",
    "modal_displacement",
    "von_mises",
    "deformed_mesh",
    "inertia_box",
    "box_geometry",
    "body_geometry",
    "reduced_body_geometry",
    "write_vtk_series",
    "MESHIO_TO_VTK",
    "VTK_TO_MESHIO",
    "rigid_fit",
    "anchored_frame_data",
    "gravity_of",
]

# meshio cell type -> VTK cell type id (the linear and quadratic types we meet)
MESHIO_TO_VTK = {
    "vertex": 1,
    "line": 3,
    "triangle": 5,
    "polygon": 7,
    "quad": 9,
    "tetra": 10,
    "hexahedron": 12,
    "wedge": 13,
    "pyramid": 14,
    "line3": 21,
    "triangle6": 22,
    "quad8": 23,
    "tetra10": 24,
    "hexahedron20": 25,
    "quad9": 28,
    "hexahedron27": 29,
}
VTK_TO_MESHIO = {v: k for k, v in MESHIO_TO_VTK.items()}
_NODES_PER_CELL = {
    "vertex": 1,
    "line": 2,
    "triangle": 3,
    "quad": 4,
    "tetra": 4,
    "hexahedron": 8,
    "wedge": 6,
    "pyramid": 5,
    "line3": 3,
    "triangle6": 6,
    "quad8": 8,
    "tetra10": 10,
    "hexahedron20": 20,
    "quad9": 9,
    "hexahedron27": 27,
}


def _cell_name(cell_type):
    if isinstance(cell_type, str):
        name = {
            "tet": "tetra",
            "hex": "hexahedron",
            "tri": "triangle",
            "tetra4": "tetra",
            "hexahedron8": "hexahedron",
            "triangle3": "triangle",
            "quad4": "quad",
        }.get(cell_type, cell_type)
        if name in MESHIO_TO_VTK:
            return name
    elif int(cell_type) in VTK_TO_MESHIO:
        return VTK_TO_MESHIO[int(cell_type)]
    raise FlexmbdError(
        f"unsupported cell type {cell_type!r}; use a meshio name such as 'tetra', "
        f"'hexahedron', 'triangle' or 'tetra10' (or the VTK id)"
    )


@dataclass
class BodyGeometry:
    """Mesh of one body in its body frame, with optional modes (see the module doc)."""

    nodes: np.ndarray
    cells: dict
    modes: np.ndarray = None
    stress_modes: np.ndarray = None
    frequencies: np.ndarray = None
    color: np.ndarray = None
    extras: dict = field(default_factory=dict)

    def __post_init__(self):
        self.nodes = np.asarray(self.nodes, dtype=float).reshape(-1, 3)
        cells = {}
        for ct, conn in dict(self.cells).items():
            name = _cell_name(ct)
            conn = np.asarray(conn, dtype=np.int64)
            k = _NODES_PER_CELL.get(name)
            conn = conn.reshape(-1, k) if k else conn
            if conn.size and (conn.min() < 0 or conn.max() >= len(self.nodes)):
                raise FlexmbdError(
                    f"{name} connectivity refers to node {int(conn.max())} but the mesh has "
                    f"{len(self.nodes)} nodes (connectivity must be 0-based)"
                )
            cells[name] = conn
        self.cells = cells
        n = len(self.nodes)
        if self.modes is not None:
            self.modes = np.asarray(self.modes, dtype=float)
            if self.modes.ndim == 1:
                self.modes = self.modes[:, None]
            if self.modes.shape[0] != 3 * n:
                raise FlexmbdError(
                    f"mode shapes have {self.modes.shape[0]} rows; a mesh of {n} nodes needs "
                    f"3 * {n} = {3 * n} (node-interleaved x, y, z)"
                )
        if self.stress_modes is not None:
            self.stress_modes = np.asarray(self.stress_modes, dtype=float)
            if self.stress_modes.ndim == 1:
                self.stress_modes = self.stress_modes[:, None]
            if self.stress_modes.shape[0] not in (6 * n, 6 * self.n_cells):
                raise FlexmbdError(
                    f"stress modes have {self.stress_modes.shape[0]} rows; expected 6 per node "
                    f"({6 * n}) or 6 per cell ({6 * self.n_cells})"
                )
        if self.frequencies is not None:
            self.frequencies = np.asarray(self.frequencies, dtype=float)

    # -- properties ----------------------------------------------------------------------
    @property
    def n_modes(self) -> int:
        return 0 if self.modes is None else self.modes.shape[1]

    @property
    def n_cells(self) -> int:
        return sum(len(c) for c in self.cells.values())

    @property
    def flexible(self) -> bool:
        return self.n_modes > 0

    @property
    def stress_on_cells(self) -> bool:
        """True when stress modes are given per cell rather than per node."""
        return (
            self.stress_modes is not None
            and self.stress_modes.shape[0] == 6 * self.n_cells
            and self.stress_modes.shape[0] != 6 * len(self.nodes)
        )

    # -- kinematics ----------------------------------------------------------------------
    def displacement(self, q: ArrayLike | None) -> Array:
        """Elastic displacement (n, 3) in body axes for modal coordinates ``q``."""
        return modal_displacement(self.modes, q, len(self.nodes))

    def points(
        self,
        q: ArrayLike | None = None,
        R: ArrayLike | None = None,
        r: ArrayLike | None = None,
        scale: float = 1.0,
    ) -> Array:
        """World node positions (n, 3) for pose ``(R, r)`` and modal coordinates ``q``."""
        return deformed_points(self.nodes, self.modes, q, R, r, scale)

    def von_mises(self, q: ArrayLike | None) -> Array:
        """Von Mises stress per node (or cell) for modal coordinates ``q`` (zeros if none)."""
        if self.stress_modes is None or q is None:
            n = self.n_cells if self.stress_on_cells else len(self.nodes)
            return np.zeros(n)
        return von_mises(self.stress_modes, q)

    # -- conversions ---------------------------------------------------------------------
    def to_arrays(self) -> dict[str, Any]:
        """Flat ``dict str -> array`` (the Results ``geometry`` entry)."""
        out = {"nodes": self.nodes}
        out.update({f"cells:{k}": v for k, v in self.cells.items()})
        for key in ("modes", "stress_modes", "frequencies", "color"):
            v = getattr(self, key)
            if v is not None:
                out[key] = np.asarray(v)
        out.update({f"extra:{k}": np.asarray(v) for k, v in self.extras.items()})
        return out

    @classmethod
    def from_arrays(cls, d: Mapping[str, Any]) -> BodyGeometry:
        """Inverse of :meth:`to_arrays`."""
        cells = {k[6:]: v for k, v in d.items() if k.startswith("cells:")}
        extras = {k[6:]: v for k, v in d.items() if k.startswith("extra:")}
        return cls(
            d["nodes"],
            cells,
            d.get("modes"),
            d.get("stress_modes"),
            d.get("frequencies"),
            d.get("color"),
            extras,
        )

    def to_pyvista(self, points: ArrayLike | None = None) -> Any:
        """A ``pyvista.UnstructuredGrid`` (points default to the undeformed nodes)."""
        import pyvista as pv

        cells = {MESHIO_TO_VTK[k]: v for k, v in self.cells.items() if k != "polygon"}
        pts = self.nodes if points is None else points
        return pv.UnstructuredGrid(cells, np.array(pts, dtype=float))


# -- numerics --------------------------------------------------------------------------
def modal_displacement(Phi: ArrayLike | None, q: ArrayLike | None, n_nodes: int) -> Array:
    """``(Phi @ q).reshape(n_nodes, 3)``; zeros when ``Phi`` or ``q`` is None."""
    if Phi is None or q is None or np.size(q) == 0:
        return np.zeros((n_nodes, 3))
    q = np.asarray(q, dtype=float)
    if Phi.shape[1] != q.shape[-1]:
        raise FlexmbdError(f"{q.shape[-1]} modal coordinates given for {Phi.shape[1]} mode shapes")
    return (Phi @ q).reshape(n_nodes, 3)


def deformed_points(
    nodes: ArrayLike,
    Phi: ArrayLike | None,
    q: ArrayLike | None,
    R: ArrayLike | None = None,
    r: ArrayLike | None = None,
    scale: float = 1.0,
) -> Array:
    """World positions ``r + R (X + scale * Phi q)`` of the nodes (n, 3)."""
    X = np.asarray(nodes, dtype=float).reshape(-1, 3)
    x = X + scale * modal_displacement(None if Phi is None else np.asarray(Phi), q, len(X))
    if R is not None:
        x = x @ np.asarray(R, dtype=float).T
    if r is not None:
        x = x + np.asarray(r, dtype=float)
    return x


def von_mises(stress_modes: ArrayLike, q: ArrayLike) -> Array:
    """Von Mises stress (Pa) of ``sigma = stress_modes @ q`` (Voigt, normal components
    first), one value per row of six (:func:`flexmbd.fem.stress_history.von_mises`)."""
    s = (np.asarray(stress_modes) @ np.asarray(q, dtype=float)).reshape(-1, 6)
    return equivalent_stress(s)


def deformed_mesh(
    nodes: ArrayLike,
    cells: Any,
    cell_type: str | None = None,
    Phi: ArrayLike | None = None,
    q: ArrayLike | None = None,
    R: ArrayLike | None = None,
    r: ArrayLike | None = None,
    scale: float = 1.0,
    stress_modes: ArrayLike | None = None,
) -> Any:
    """Deformed full mesh of a reduced flexible body as a ``pyvista.UnstructuredGrid``.

    Parameters
    ----------
    nodes : (n, 3) array
        Undeformed node coordinates in the body frame.
    cells : (n_cells, k) int array, or dict ``cell type -> connectivity``
        0-based connectivity in meshio/VTK node order.
    cell_type : str or int
        meshio name (``"tetra"``, ``"hexahedron"``, ...) or VTK id, when ``cells``
        is an array.
    Phi : (3 n, m) array, optional
        Mode shapes, node-interleaved.
    q : (m,) array, optional
        Modal coordinates.
    R, r : optional
        Pose of the body frame (rotation body -> world, origin in world).
    scale : float
        Displacement magnification.
    stress_modes : (6 n or 6 n_cells, m) array, optional
        Stress modes; adds ``von_mises``.

    Point data: ``displacement`` (elastic, world axes, scaled) and
    ``displacement_magnitude``; ``von_mises`` (point or cell data) with stress modes.
    """
    if not isinstance(cells, dict):
        if cell_type is None:
            raise FlexmbdError("deformed_mesh: give cell_type with a connectivity array")
        cells = {cell_type: cells}
    g = BodyGeometry(nodes, cells, Phi, stress_modes)
    grid = g.to_pyvista(g.points(q, R, r, scale))
    u = scale * g.displacement(q)
    if R is not None:
        u = u @ np.asarray(R, dtype=float).T
    grid.point_data["displacement"] = u
    grid.point_data["displacement_magnitude"] = np.linalg.norm(u, axis=1)
    if stress_modes is not None and q is not None:
        data = grid.cell_data if g.stress_on_cells else grid.point_data
        data["von_mises"] = g.von_mises(q)
    return grid


# -- rigid bodies: glyphs and visuals ----------------------------------------------------
def inertia_box(
    mass: float,
    inertia: ArrayLike,
    com: ArrayLike = (0.0, 0.0, 0.0),
    min_ratio: float = 0.06,
    density: float = 7850.0,
) -> BodyGeometry:
    """Hexahedron with the mass and principal inertia of a rigid body (body frame).

    Edge lengths of the homogeneous box with moments ``I1, I2, I3``:
    ``a_i = sqrt(6 (I_j + I_k - I_i) / m)``, along the principal axes, centred at
    the centre of mass. Thin directions get at least ``min_ratio`` times the longest
    edge; a point mass becomes a cube of steel-like ``density``.
    """
    J = np.asarray(inertia, dtype=float)
    if J.shape == (3,):
        J = np.diag(J)
    ev, V = np.linalg.eigh(0.5 * (J + J.T))
    ev = np.clip(ev, 0.0, None)
    tot = ev.sum()
    edges = np.sqrt(np.clip(6.0 * (tot - 2.0 * ev) / float(mass), 0.0, None))
    if edges.max() <= 0:
        edges = np.full(3, (float(mass) / density) ** (1.0 / 3.0))
    edges = np.maximum(edges, min_ratio * edges.max())
    if np.linalg.det(V) < 0:
        V[:, 2] = -V[:, 2]
    return box_geometry(0.5 * edges, V, com)


# corners of the cube [-1, 1]^3 in the node order of a hexahedron cell
_CUBE = np.array(
    [
        [-1, -1, -1],
        [1, -1, -1],
        [1, 1, -1],
        [-1, 1, -1],
        [-1, -1, 1],
        [1, -1, 1],
        [1, 1, 1],
        [-1, 1, 1],
    ],
    dtype=float,
)


def box_geometry(
    half_edges: ArrayLike, rotation: ArrayLike | None = None, center: ArrayLike | None = None
) -> BodyGeometry:
    """A box as one hexahedron: half edge lengths (3,) (m) along the columns of
    ``rotation`` (body axes; default the body frame's), centred at ``center`` (m, body
    frame; default the origin)."""
    nodes = _CUBE * np.asarray(half_edges, dtype=float)
    if rotation is not None:
        nodes = nodes @ np.asarray(rotation, dtype=float).T
    if center is not None:
        nodes = nodes + np.asarray(center, dtype=float)
    return BodyGeometry(nodes, {"hexahedron": np.arange(8)[None, :]})


def _from_pyvista(mesh):
    """BodyGeometry of any PyVista dataset (cells by VTK type)."""
    ug = mesh.cast_to_unstructured_grid()
    cells = {}
    for vtk_type, conn in ug.cells_dict.items():
        if int(vtk_type) in VTK_TO_MESHIO:
            cells[VTK_TO_MESHIO[int(vtk_type)]] = conn
    if not cells:  # polygons only: triangulate
        ug = mesh.triangulate().cast_to_unstructured_grid()
        cells = {"triangle": ug.cells_dict[5]}
    return BodyGeometry(np.asarray(ug.points, dtype=float), cells)


def _read_mesh_file(path, scale=(1.0, 1.0, 1.0)):
    path = str(path)
    if path.startswith("package://"):
        raise FlexmbdError(
            f"cannot resolve visual {path!r}: ROS package paths are not supported; give a file path"
        )
    if not os.path.exists(path):
        raise FlexmbdError(f"visual mesh file {path!r} does not exist")
    import pyvista as pv

    g = _from_pyvista(pv.read(path))
    g.nodes = g.nodes * np.asarray(scale, dtype=float)
    return g


def _urdf_shape(item):
    import pyvista as pv

    kind = item.get("type")
    if kind == "box":
        g = _from_pyvista(pv.Box(bounds=np.ravel([(-s / 2, s / 2) for s in item["size"]])))
    elif kind == "cylinder":  # URDF cylinders lie along z
        g = _from_pyvista(
            pv.Cylinder(
                radius=item["radius"], height=item["length"], direction=(0, 0, 1), resolution=24
            ).triangulate()
        )
    elif kind == "sphere":
        g = _from_pyvista(pv.Sphere(radius=item["radius"], theta_resolution=16, phi_resolution=12))
    elif kind == "mesh":
        g = _read_mesh_file(item["filename"], item.get("scale", (1.0, 1.0, 1.0)))
    else:
        return None
    R = np.asarray(item.get("rotation", np.eye(3)), dtype=float)
    p = np.asarray(item.get("position", np.zeros(3)), dtype=float)
    g.nodes = g.nodes @ R.T + p
    return g


def merge(geoms):
    """One BodyGeometry from several rigid pieces (modes are dropped)."""
    geoms = [g for g in geoms if g is not None]
    if not geoms:
        return None
    if len(geoms) == 1:
        return geoms[0]
    nodes, cells, off = [], {}, 0
    for g in geoms:
        nodes.append(g.nodes)
        for k, c in g.cells.items():
            cells.setdefault(k, []).append(c + off)
        off += len(g.nodes)
    return BodyGeometry(np.vstack(nodes), {k: np.vstack(v) for k, v in cells.items()})


def visual_geometry(visual):
    """BodyGeometry of a rigid body's ``visual`` (file, PyVista mesh, URDF list, dict)."""
    if visual is None:
        return None
    if isinstance(visual, BodyGeometry):
        return visual
    if isinstance(visual, (str, Path)):
        return _read_mesh_file(visual)
    if isinstance(visual, dict):
        if "nodes" in visual:
            return BodyGeometry.from_arrays(visual)
        return _urdf_shape(visual)
    if isinstance(visual, (list, tuple)):
        return merge([visual_geometry(v) for v in visual])
    if hasattr(visual, "cast_to_unstructured_grid"):
        return _from_pyvista(visual)
    raise FlexmbdError(
        f"cannot draw visual of type {type(visual).__name__}; give a mesh file path, a PyVista "
        f"mesh, URDF visual dicts or a BodyGeometry"
    )


# -- reduced flexible bodies (adapter) ---------------------------------------------------
def _first_attr(obj, names):
    for n in names:
        v = obj.get(n) if isinstance(obj, dict) else getattr(obj, n, None)
        if v is not None:
            return v
    return None


def reduced_body_geometry(rb: Any) -> BodyGeometry:
    """BodyGeometry of a reduced flexible body (adapter to :mod:`flexmbd.fem`).

    Accepts a :class:`BodyGeometry`, or any object or dict exposing

    * the mesh: ``mesh`` (a scikit-fem Mesh, converted with
      ``skfem.io.meshio.to_meshio`` for correct node order, or a meshio Mesh), or
      ``nodes`` / ``cells`` / ``cell_type``;
    * the mode shapes: ``modes``, ``Phi`` or ``mode_shapes`` (3 n x m, node-interleaved);
    * optionally ``stress_modes`` ((6 n, m), or (n, 6, m) as
      :class:`flexmbd.fem.ReducedBody` stores them, Voigt xx, yy, zz, yz, xz, xy) and
      ``mode_frequencies`` or ``frequencies`` (Hz).

    :class:`flexmbd.fem.ReducedBody` (``nodes``, ``cells`` in meshio/VTK order,
    ``cell_type``, ``modes``, ``stress_modes``, ``mode_frequencies``) is read directly;
    arrays it stores empty (no stress modes) count as absent.
    """
    if isinstance(rb, BodyGeometry):
        return rb
    if hasattr(rb, "geometry") and callable(rb.geometry):
        g = rb.geometry()
        if isinstance(g, BodyGeometry):
            return g
    nodes = _first_attr(rb, ("nodes", "points"))
    cells = _first_attr(rb, ("cells",))
    cell_type = _first_attr(rb, ("cell_type",))
    mesh = _first_attr(rb, ("mesh",))
    if (nodes is None or cells is None) and mesh is not None:
        nodes, cells, cell_type = _mesh_parts(mesh)
    if nodes is None or cells is None:
        raise FlexmbdError(
            f"cannot find the mesh of {type(rb).__name__}: expected attributes nodes/cells/"
            f"cell_type or mesh"
        )
    if not isinstance(cells, dict):
        if cell_type is None:
            raise FlexmbdError(f"{type(rb).__name__}: cells given without cell_type")
        if isinstance(cell_type, np.ndarray):
            cell_type = str(cell_type)
        cells = {cell_type: cells}
    nodes = np.asarray(nodes, dtype=float)
    if nodes.ndim == 2 and nodes.shape[0] == 3 and nodes.shape[1] != 3:
        nodes = nodes.T
    modes = _nonempty(_first_attr(rb, ("modes", "Phi", "mode_shapes", "phi")))
    stress = _nonempty(_first_attr(rb, ("stress_modes", "Psi")))
    if stress is not None and stress.ndim == 3:  # (n, 6, m) as flexmbd.fem stores them
        stress = stress.reshape(-1, stress.shape[-1])
    # the Rayleigh quotient of each mode (flexmbd.fem: mode_frequencies) labels that mode
    freqs = _nonempty(_first_attr(rb, ("mode_frequencies", "frequencies", "freqs")))
    extras = {}
    inodes = _nonempty(_first_attr(rb, ("interface_nodes",)))
    if inodes is not None:  # where the joints attach: magnified shapes stay on them
        extras["anchor_nodes"] = np.unique(np.asarray(inodes, dtype=np.int64))
    return BodyGeometry(nodes, cells, modes, stress, freqs, extras=extras)


def _nonempty(a):
    """None for missing or zero-length arrays (flexmbd.fem stores absent data as empty)."""
    if a is None:
        return None
    a = np.asarray(a)
    return None if a.size == 0 else a


def _mesh_parts(mesh):
    if hasattr(mesh, "cells_dict") and hasattr(mesh, "points"):  # meshio
        return mesh.points, dict(mesh.cells_dict), None
    if hasattr(mesh, "p") and hasattr(mesh, "t"):  # scikit-fem
        from skfem.io.meshio import to_meshio

        m = to_meshio(mesh)
        return m.points, dict(m.cells_dict), None
    raise FlexmbdError(f"unknown mesh type {type(mesh).__name__}")


def body_geometry(body: Any, glyph: bool = True) -> BodyGeometry | None:
    """BodyGeometry of a model body: flexible mesh + modes, rigid visual, or glyph box.

    A flexible body is recognized by a ``reduced`` or ``reduced_body`` attribute (or
    method) giving its reduced body; rigid bodies use ``visual`` or a glyph.
    """
    # flexible bodies of the model layer: the reduced body (adapter, see module doc)
    for attr in ("reduced", "reduced_body"):
        rb = getattr(body, attr, None)
        if callable(rb) and not hasattr(rb, "modes"):
            rb = rb()
        if rb is not None:
            return reduced_body_geometry(rb)
    visual = getattr(body, "visual", None)
    if visual is not None:
        return visual_geometry(visual)
    if glyph and hasattr(body, "mass") and hasattr(body, "inertia_matrix"):
        return inertia_box(body.mass, body.inertia_matrix, body.com_vector)
    return None


# -- VTK time series ----------------------------------------------------------------------
def body_pose_at(results, name, i):
    """``(R, r)`` of body ``name`` at sample ``i`` (identity when not stored)."""
    series = results.body_series.get(name)
    pos = None if series is None else series.position
    ori = None if series is None else series.orientation
    R = np.eye(3) if ori is None else quat_to_rot_batch(ori[i])
    r = np.zeros(3) if pos is None else np.asarray(pos[i], dtype=float)
    return R, r


def frame_data(results, geoms, i, scale=1.0):
    """Per body: world points, displacement (world, scaled), von Mises at sample ``i``."""
    out = {}
    for name, g in geoms.items():
        R, r = body_pose_at(results, name, i)
        series = results.body_series.get(name)
        modal = None if series is None else series.modal
        q = None if modal is None or not g.flexible else modal[i]
        u = scale * g.displacement(q) @ R.T
        out[name] = (g.points(q, R, r, scale), u, g.von_mises(q))
    return out


def rigid_fit(
    X: ArrayLike, P: ArrayLike, R: ArrayLike | None = None, tie: float = 1e-3
) -> tuple[Array, Array, Array]:
    """Rigid map ``x -> c + Rf (x - cx)`` that best fits points ``X`` (m, 3, body
    axes) onto ``P`` (m, 3, world) in least squares (Kabsch); a rotation left free by
    the points (collinear, fewer than three) follows ``R`` (the body frame: three
    pseudo-points weighted ``tie``). Returns ``(Rf, cx, c)``."""
    X = np.asarray(X, float)
    P = np.asarray(P, float)
    cx, c = X.mean(axis=0), P.mean(axis=0)
    H = (X - cx).T @ (P - c)
    if R is not None:
        size = max(float(np.ptp(X, axis=0).max()), 1e-12)
        H = H + tie * size**2 * len(X) * np.asarray(R, float).T
    U, _, Vt = np.linalg.svd(H)
    d = np.sign(np.linalg.det(Vt.T @ U.T)) or 1.0
    Rf = Vt.T @ np.diag([1.0, 1.0, d]) @ U.T
    return Rf, cx, c


def anchored_frame_data(
    results: Results, geoms: Mapping[str, BodyGeometry], i: int, scale: float
) -> dict[str, Any]:
    """As :func:`frame_data`, with the magnified deformation of a flexible body taken
    about the rigid placement that best fits its interface nodes (``anchor_nodes``:
    where the joints attach), so that a drawing magnified ``scale`` times keeps the
    body on its joints. The displacement returned (for colours) is the true one
    relative to that placement, not magnified."""
    out = frame_data(results, geoms, i, 1.0)
    for name, g in geoms.items():
        anchors = g.extras.get("anchor_nodes")
        x, u, vm = out[name]
        if not g.flexible or anchors is None or not len(anchors):
            if scale != 1:
                out[name] = frame_data(results, {name: g}, i, scale)[name]
                out[name] = (out[name][0], out[name][1] / scale, vm)
            continue
        R, _ = body_pose_at(results, name, i)
        anchors = np.asarray(anchors, dtype=np.int64)
        Rf, cx, c = rigid_fit(g.nodes[anchors], x[anchors], R)
        base = c + (g.nodes - cx) @ Rf.T
        rel = x - base
        out[name] = (base + scale * rel, rel, vm)
    return out


def write_vtk_series(
    results: Results,
    path: StrPath,
    stride: int = 1,
    scale: float = 1.0,
    bodies: Sequence[str] | None = None,
) -> list[Path]:
    """Implementation of :meth:`flexmbd.results.Results.to_vtk`."""
    import meshio

    path = Path(path)
    if path.suffix != ".pvd":
        path = path.with_suffix(".pvd")
    names = list(results.geometry) if bodies is None else list(bodies)
    if not names:
        raise FlexmbdError(
            "these results carry no body geometry; call flexmbd.results.attach_geometry(res, "
            "model) first"
        )
    geoms = {n: BodyGeometry.from_arrays(results.geometry[n]) for n in names}
    path.parent.mkdir(parents=True, exist_ok=True)
    stem = path.stem
    files = []
    entries = []
    for frame, i in enumerate(range(0, len(results.t), max(int(stride), 1))):
        data = frame_data(results, geoms, i, scale)
        pts, disp, vm_pt = [], [], []
        cells, body_id, vm_cell = [], [], []
        off = 0
        for b, name in enumerate(names):
            g = geoms[name]
            x, u, vm = data[name]
            pts.append(x)
            disp.append(u)
            vm_pt.append(np.zeros(len(x)) if g.stress_on_cells else vm)
            c0 = 0
            for ct, conn in g.cells.items():
                cells.append((ct, conn + off))
                body_id.append(np.full(len(conn), b, dtype=np.int32))
                vm_cell.append(
                    vm[c0 : c0 + len(conn)] if g.stress_on_cells else vm[conn].mean(axis=1)
                )
                c0 += len(conn)
            off += len(x)
        disp = np.vstack(disp)
        point_data = {
            "displacement": disp,
            "displacement_magnitude": np.linalg.norm(disp, axis=1),
            "von_mises": np.concatenate(vm_pt),
        }
        fn = path.with_name(f"{stem}_{frame:05d}.vtu")
        meshio.write_points_cells(
            fn,
            np.vstack(pts),
            cells,
            point_data=point_data,
            cell_data={"body_id": body_id, "von_mises": vm_cell},
        )
        files.append(fn)
        entries.append(
            f'    <DataSet timestep="{float(results.t[i])!r}" group="" part="0" file="{fn.name}"/>'
        )
    body_list = ", ".join(f"{k}={n}" for k, n in enumerate(names))
    path.write_text(
        '<?xml version="1.0"?>\n'
        f"<!-- flexmbd results; body_id: {body_list} -->\n"
        '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">\n'
        "  <Collection>\n" + "\n".join(entries) + "\n  </Collection>\n</VTKFile>\n"
    )
    return files


def gravity_of(obj: Any) -> Array | None:
    """Gravity vector (3,) in m/s^2, world axes, of a model or results, or None.

    A :class:`~flexmbd.model.Model` sums its :class:`~flexmbd.Gravity` elements;
    results use ``meta["gravity"]`` (stored by
    :func:`flexmbd.results.attach_geometry`) or the model of the system that made
    them. None when there is no gravity (or it is zero).
    """
    if obj is None:
        return None
    forces = getattr(obj, "forces", None)
    if callable(forces) and hasattr(obj, "bodies"):
        gs = [np.asarray(f.g, dtype=float) for f in forces() if isinstance(f, Gravity)]
        g = np.sum(gs, axis=0) if gs else None
    else:
        meta = getattr(obj, "meta", None) or {}
        g = meta.get("gravity")
        if g is None:
            model = getattr(getattr(obj, "system", None), "model", None)
            return gravity_of(model) if model is not None else None
        g = np.asarray(g, dtype=float)
    if g is None or g.shape != (3,) or not np.all(np.isfinite(g)) or not np.any(g):
        return None
    return g
