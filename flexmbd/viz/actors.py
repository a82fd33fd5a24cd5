"""The actors of every view, made from numpy arrays: meshes, ground, markers, labels.

Body meshes are coloured through a lookup table (:mod:`flexmbd.viz.colors`); a
:class:`MeshActor` moves its points and colours in place, so an animation writes
the new coordinates into the arrays VTK draws from and rebuilds nothing. The
ground plane, joint markers, frame triads, the label and the colour bar complete
the picture that :class:`~flexmbd.viz.stage.Stage` renders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .._typing import Array, ArrayLike

from .colors import rgb

__all__ = [
    "MeshActor",
    "unstructured_grid",
    "outer_surface",
    "mesh_actor",
    "ground_actor",
    "sphere_actor",
    "cylinder_actor",
    "line_actor",
    "text_actor",
    "scalar_bar",
]

# meshio names of the linear cells: their outer surface is exact (no curved faces)
_LINEAR_CELLS = {
    "vertex",
    "line",
    "triangle",
    "quad",
    "polygon",
    "tetra",
    "hexahedron",
    "wedge",
    "pyramid",
}


def _vtk():
    """Register VTK's OpenGL and FreeType back-ends (once) and return the core modules."""
    import vtkmodules.vtkRenderingFreeType  # noqa: F401 - text
    import vtkmodules.vtkRenderingOpenGL2  # noqa: F401 - render windows
    from vtkmodules import vtkCommonCore, vtkCommonDataModel, vtkRenderingCore

    return vtkCommonCore, vtkCommonDataModel, vtkRenderingCore


def _points(x):
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonCore import vtkPoints

    pts = vtkPoints()
    pts.SetData(numpy_to_vtk(np.ascontiguousarray(x, dtype=float).reshape(-1, 3), deep=1))
    return pts


def unstructured_grid(cells: dict, points: ArrayLike) -> Any:
    """A ``vtkUnstructuredGrid`` of meshio-named cell blocks ``(n_cells, k)`` on ``points``.

    Polygon blocks (no fixed size) are left out.
    """
    from vtkmodules.util.numpy_support import numpy_to_vtk, numpy_to_vtkIdTypeArray
    from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkUnstructuredGrid

    from ..geometry import MESHIO_TO_VTK

    types, offsets, conn, start = [], [np.zeros(1, dtype=np.int64)], [], 0
    for name, c in cells.items():
        if name == "polygon" or len(c) == 0:
            continue
        c = np.asarray(c, dtype=np.int64)
        n, k = c.shape
        types.append(np.full(n, MESHIO_TO_VTK[name], dtype=np.uint8))
        offsets.append(start + k * np.arange(1, n + 1, dtype=np.int64))
        conn.append(c.ravel())
        start += n * k
    grid = vtkUnstructuredGrid()
    grid.SetPoints(_points(points))
    if types:
        ca = vtkCellArray()
        ca.SetData(
            numpy_to_vtkIdTypeArray(np.concatenate(offsets), deep=1),
            numpy_to_vtkIdTypeArray(np.concatenate(conn), deep=1),
        )
        grid.SetCells(numpy_to_vtk(np.concatenate(types), deep=1, array_type=3), ca)
    return grid


def outer_surface(cells: dict, grid: Any) -> tuple[Any, Array, Array] | None:
    """Outer surface ``(vtkPolyData, point ids, cell ids)`` of a linear mesh, else None.

    Drawing the surface instead of the volume mesh saves the mapper extracting it
    again whenever the points move. Quadratic meshes (curved faces) give None.
    """
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkFiltersGeometry import vtkDataSetSurfaceFilter

    if not set(cells) <= _LINEAR_CELLS or grid.GetNumberOfCells() == 0:
        return None
    f = vtkDataSetSurfaceFilter()
    f.SetInputData(grid)
    f.PassThroughPointIdsOn()
    f.PassThroughCellIdsOn()
    f.SetNonlinearSubdivisionLevel(0)
    f.Update()
    surf = f.GetOutput()
    pid = vtk_to_numpy(surf.GetPointData().GetArray("vtkOriginalPointIds")).astype(np.int64)
    cid = vtk_to_numpy(surf.GetCellData().GetArray("vtkOriginalCellIds")).astype(np.int64)
    surf.GetPointData().RemoveArray("vtkOriginalPointIds")
    surf.GetCellData().RemoveArray("vtkOriginalCellIds")
    return surf, pid, cid


class MeshActor:
    """A drawn mesh whose points and scalar field change in place.

    ``pid``/``cid`` pick the drawn points/cells out of the full mesh's (its outer
    surface); None draws them all.
    """

    def __init__(self, actor, data, field=None, on_cells=False, pid=None, cid=None):
        from vtkmodules.util.numpy_support import vtk_to_numpy

        self.actor, self.data, self.field, self.on_cells = actor, data, field, on_cells
        self.pid, self.cid = pid, cid
        self._xyz = vtk_to_numpy(data.GetPoints().GetData())
        self._values = None
        if field is not None:
            attrs = data.GetCellData() if on_cells else data.GetPointData()
            self._values = vtk_to_numpy(attrs.GetArray(field))

    def set_points(self, x: ArrayLike) -> None:
        """New world coordinates ``(n, 3)`` of the full mesh's points."""
        x = np.asarray(x, dtype=float)
        self._xyz[:] = x if self.pid is None else x[self.pid]
        self.data.GetPoints().GetData().Modified()
        self.data.GetPoints().Modified()
        self.data.Modified()

    def set_values(self, v: ArrayLike) -> None:
        """New field values per point (or cell) of the full mesh."""
        if self._values is None:
            return
        v = np.asarray(v, dtype=float)
        idx = self.cid if self.on_cells else self.pid
        self._values[:] = v if idx is None else v[idx]
        attrs = self.data.GetCellData() if self.on_cells else self.data.GetPointData()
        attrs.GetArray(self.field).Modified()
        self.data.Modified()


def mesh_actor(
    cells: dict,
    points: ArrayLike,
    *,
    color: Any = "#aaaaaa",
    field: str | None = None,
    values: ArrayLike | None = None,
    on_cells: bool = False,
    lut: Any = None,
    show_edges: bool = False,
    surface: bool = False,
    wireframe: bool = False,
    opacity: float = 1.0,
) -> MeshActor:
    """Actor of a mesh (meshio cell blocks on ``points`` (n, 3), world frame).

    ``field``/``values`` colour it through ``lut`` (per point, or per cell with
    ``on_cells``), else it has the plain ``color``. ``surface``: draw only the outer
    surface of a linear volume mesh (same picture, cheaper to move).
    """
    from vtkmodules.util.numpy_support import numpy_to_vtk

    _, _, core = _vtk()
    grid = unstructured_grid(cells, points)
    data, pid, cid = grid, None, None
    outer = outer_surface(cells, grid) if surface else None
    if outer is not None:
        data, pid, cid = outer
    if field is not None:
        v = np.asarray(values, dtype=float)
        idx = cid if on_cells else pid
        arr = numpy_to_vtk(np.ascontiguousarray(v if idx is None else v[idx]), deep=1)
        arr.SetName(field)
        (data.GetCellData() if on_cells else data.GetPointData()).AddArray(arr)
    mapper = core.vtkPolyDataMapper() if outer is not None else core.vtkDataSetMapper()
    mapper.SetInputData(data)
    if field is not None:
        mapper.SetLookupTable(lut)
        mapper.SetScalarRange(lut.GetRange())
        mapper.SetUseLookupTableScalarRange(True)
        if on_cells:
            mapper.SetScalarModeToUseCellFieldData()
        else:
            mapper.SetScalarModeToUsePointFieldData()
        mapper.SelectColorArray(field)
        mapper.SetInterpolateScalarsBeforeMapping(True)
        mapper.ScalarVisibilityOn()
    else:
        mapper.ScalarVisibilityOff()
    actor, prop = _actor(mapper, color)
    prop.SetOpacity(float(opacity))
    if wireframe:
        prop.SetRepresentationToWireframe()
    if show_edges:
        prop.EdgeVisibilityOn()
        prop.SetEdgeColor(0.0, 0.0, 0.0)
    return MeshActor(actor, data, field, on_cells, pid, cid)


def _actor(mapper, color):
    """A VTK actor drawing ``mapper`` in ``color``, and its property."""
    _, _, core = _vtk()
    actor = core.vtkActor()
    actor.SetMapper(mapper)
    prop = actor.GetProperty()
    prop.SetColor(rgb(color))
    return actor, prop


def _poly_actor(source, color, lighting=True, edges=None):
    _, _, core = _vtk()
    source.Update()
    mapper = core.vtkPolyDataMapper()
    mapper.SetInputData(source.GetOutput())
    mapper.ScalarVisibilityOff()
    actor, prop = _actor(mapper, color)
    prop.SetLighting(bool(lighting))
    if edges is not None:
        prop.EdgeVisibilityOn()
        prop.SetEdgeColor(rgb(edges))
    actor.PickableOff()
    return actor


def ground_actor(
    bounds: Sequence[float], up: ArrayLike, color: Any = "#ececec", edge_color: Any = "#dddddd"
) -> Any:
    """A faint unlit square (8 x 8 panels) perpendicular to ``up`` just below ``bounds``
    (VTK order ``[x0, x1, y0, y1, z0, z1]``), 1.6 times the diagonal wide."""
    from vtkmodules.vtkFiltersSources import vtkPlaneSource

    up = np.asarray(up, dtype=float)
    up = up / np.linalg.norm(up)
    lo, hi = np.asarray(bounds[::2], dtype=float), np.asarray(bounds[1::2], dtype=float)
    corners = np.array(
        [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )
    size = 1.6 * max(float(np.linalg.norm(hi - lo)), 1e-9)
    centre = 0.5 * (lo + hi)
    centre = centre - (centre @ up - (corners @ up).min()) * up
    # two in-plane directions: the world axis least aligned with up, made orthogonal
    a = np.eye(3)[np.argmin(np.abs(up))]
    e1 = a - (a @ up) * up
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(up, e1)
    src = vtkPlaneSource()
    src.SetOrigin(*(centre - 0.5 * size * (e1 + e2)))
    src.SetPoint1(*(centre + 0.5 * size * (e1 - e2)))
    src.SetPoint2(*(centre + 0.5 * size * (e2 - e1)))
    src.SetResolution(8, 8)
    return _poly_actor(src, color, lighting=False, edges=edge_color)


def sphere_actor(center: ArrayLike, radius: float, color: Any) -> Any:
    """A sphere (joint marker)."""
    from vtkmodules.vtkFiltersSources import vtkSphereSource

    src = vtkSphereSource()
    src.SetCenter(*np.asarray(center, dtype=float))
    src.SetRadius(float(radius))
    src.SetThetaResolution(30)
    src.SetPhiResolution(30)
    return _poly_actor(src, color)


def cylinder_actor(
    center: ArrayLike, direction: ArrayLike, radius: float, height: float, color: Any
) -> Any:
    """A capped cylinder of axis ``direction`` (a joint axis)."""
    from vtkmodules.vtkCommonTransforms import vtkTransform
    from vtkmodules.vtkFiltersGeneral import vtkTransformFilter
    from vtkmodules.vtkFiltersSources import vtkCylinderSource

    d = np.asarray(direction, dtype=float)
    d = d / np.linalg.norm(d)
    src = vtkCylinderSource()  # along y, centred at the origin
    src.SetRadius(float(radius))
    src.SetHeight(float(height))
    src.SetResolution(30)
    axis = np.cross([0.0, 1.0, 0.0], d)
    angle = np.degrees(np.arctan2(np.linalg.norm(axis), d[1]))
    tf = vtkTransform()
    tf.Translate(*np.asarray(center, dtype=float))
    if np.linalg.norm(axis) > 1e-12:
        tf.RotateWXYZ(angle, *axis)
    elif d[1] < 0:
        tf.RotateWXYZ(180.0, 1.0, 0.0, 0.0)
    moved = vtkTransformFilter()
    moved.SetTransform(tf)
    moved.SetInputConnection(src.GetOutputPort())
    return _poly_actor(moved, color)


def line_actor(a: ArrayLike, b: ArrayLike, color: Any, width: float = 3.0) -> Any:
    """A line segment from ``a`` to ``b`` (frame triads)."""
    from vtkmodules.vtkFiltersSources import vtkLineSource

    src = vtkLineSource()
    src.SetPoint1(*np.asarray(a, dtype=float))
    src.SetPoint2(*np.asarray(b, dtype=float))
    actor = _poly_actor(src, color)
    actor.GetProperty().SetLineWidth(float(width))
    return actor


def polyline_actor(points: ArrayLike, color: Any, width: float = 2.0) -> Any:
    """A polyline through ``points`` (n, 3) (a screw joint's thread)."""
    from vtkmodules.vtkFiltersSources import vtkPolyLineSource

    pts = np.asarray(points, dtype=float)
    src = vtkPolyLineSource()
    src.SetNumberOfPoints(len(pts))
    for i, x in enumerate(pts):
        src.SetPoint(i, *x)
    actor = _poly_actor(src, color)
    actor.GetProperty().SetLineWidth(float(width))
    return actor


def text_actor(text: str, window_size: Sequence[int], color: Any = "black") -> Any:
    """A label in the upper left corner, its font size growing slowly with the window."""
    _, _, core = _vtk()
    w, h = window_size
    size = max(6, int(round(7.3 * (np.sqrt(w * h) / 277.0) ** 0.4)))
    actor = core.vtkTextActor()
    actor.SetInput(text)
    actor.SetPosition(5, h - 5)
    prop = actor.GetTextProperty()
    prop.SetFontSize(2 * size)
    prop.SetColor(rgb(color))
    prop.SetFontFamilyToArial()
    prop.SetVerticalJustificationToTop()
    actor.PickableOff()
    return actor


def scalar_bar(lut: Any, title: str, color: Any = "black", font_size: int = 18) -> Any:
    """A horizontal colour bar at the bottom centre (five labels, ``%.3g``; sizes in px)."""
    from vtkmodules.vtkRenderingAnnotation import vtkScalarBarActor

    bar = vtkScalarBarActor()
    bar.SetLookupTable(lut)
    bar.SetMaximumNumberOfColors(lut.GetNumberOfTableValues())
    bar.SetNumberOfLabels(5)
    bar.SetOrientationToHorizontal()
    bar.SetPosition(0.25, 0.03)
    bar.SetWidth(0.5)
    bar.SetHeight(0.08)
    bar.SetLabelFormat("%.3g")
    bar.SetUnconstrainedFontSize(True)
    bar.SetAnnotationTextScaling(False)
    bar.SetTitle(title)
    c = rgb(color)
    for prop in (
        bar.GetLabelTextProperty(),
        bar.GetTitleTextProperty(),
        bar.GetAnnotationTextProperty(),
    ):
        prop.SetColor(c)
        prop.SetFontFamilyToArial()
        prop.SetFontSize(int(font_size))
        prop.SetShadow(False)
        prop.SetItalic(False)
        prop.SetBold(False)
    bar.GetTitleTextProperty().SetJustificationToCentered()
    bar.PickableOff()
    return bar
