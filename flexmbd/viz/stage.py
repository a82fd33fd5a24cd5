"""The drawing in plain VTK: one scene description for stills, animations and plotters.

A :class:`Stage` is a render window with one renderer (white background, a
five-light kit) and, optionally, a small second renderer in the lower left corner
holding the world axes triad, whose camera follows the main one. The functions
below make the actors every view uses -- body meshes coloured on a lookup table,
the ground plane, joint markers, frame triads, the label and the colour bar --
from numpy arrays. :mod:`flexmbd.viz.render` builds every picture with them:
off-screen stills and animations on a stage of its own (VTK only: neither
``pyvista.plotting`` nor matplotlib's pyplot are imported, which saves about a
second per process), interactive views on the window of a ``pyvista.Plotter``
(:meth:`Stage.of_plotter`).

Points and colours of a mesh change in place (:class:`MeshActor`): an animation
writes the new coordinates into the arrays VTK draws from, so nothing is
rebuilt between frames. Images are read straight from the frame buffer into
numpy (``(height, width, 3)`` uint8, top row first).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import FlexmbdError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .._typing import Array, ArrayLike

__all__ = ["Stage", "MeshActor", "rgb", "colormap_table", "lookup_table", "unstructured_grid",
           "outer_surface", "mesh_actor", "ground_actor", "sphere_actor", "cylinder_actor",
           "line_actor", "text_actor", "scalar_bar"]

_NAMED = {"white": (1.0, 1.0, 1.0), "black": (0.0, 0.0, 0.0), "red": (1.0, 0.0, 0.0),
          "green": (0.0, 0.5, 0.0), "blue": (0.0, 0.0, 1.0), "gray": (0.5, 0.5, 0.5),
          "grey": (0.5, 0.5, 0.5)}
# meshio names of the linear cells: their outer surface is exact (no curved faces)
_LINEAR_CELLS = {"vertex", "line", "triangle", "quad", "polygon", "tetra", "hexahedron",
                 "wedge", "pyramid"}


def _vtk():
    """Register VTK's OpenGL and FreeType back-ends (once) and return the core modules."""
    import vtkmodules.vtkRenderingFreeType  # noqa: F401 - text
    import vtkmodules.vtkRenderingOpenGL2  # noqa: F401 - render windows
    from vtkmodules import vtkCommonCore, vtkCommonDataModel, vtkRenderingCore

    return vtkCommonCore, vtkCommonDataModel, vtkRenderingCore


def rgb(color: Any) -> tuple[float, float, float]:
    """Colour ``"#rrggbb"``, a basic name, or 3 numbers (0..1, or 0..255) as floats 0..1."""
    if isinstance(color, str):
        c = color.strip().lower()
        if c in _NAMED:
            return _NAMED[c]
        if c.startswith("#") and len(c) == 7:
            try:
                return tuple(int(c[k:k + 2], 16) / 255.0 for k in (1, 3, 5))
            except ValueError:
                pass
        try:
            from matplotlib.colors import to_rgb
        except ImportError:  # pragma: no cover - matplotlib is a dependency of the extra
            to_rgb = None
        if to_rgb is not None:
            try:
                return tuple(float(v) for v in to_rgb(c))
            except ValueError:
                pass
        raise FlexmbdError(f"unknown colour {color!r}; use '#rrggbb', a colour name or RGB")
    v = np.asarray(color, dtype=float).ravel()[:3]
    if v.size != 3 or not np.all(np.isfinite(v)) or v.min() < 0:
        raise FlexmbdError(f"colour {color!r}: give 3 numbers in 0..1 (or 0..255)")
    return tuple(float(x) for x in (v / 255.0 if v.max() > 1.0 else v))


def colormap_table(cmap: str, n: int = 256) -> Array:
    """``(n, 4)`` uint8 RGBA colours of matplotlib's colour map ``cmap`` (0 to 1).

    A table is remembered in the user cache (:func:`~flexmbd.viz.headless.cache_dir`,
    ``colormaps.json``) under the name, ``n`` and matplotlib's version, so a later
    process need not import matplotlib (0.1-0.2 s) for it. When matplotlib is
    already imported (a colour map may have been registered) it is asked directly.
    """
    import json
    import os
    import sys

    key, path = None, None
    if "matplotlib" not in sys.modules:
        try:
            from importlib.metadata import version

            from .headless import cache_dir

            key = f"{cmap}|{int(n)}|{version('matplotlib')}"
            path = os.path.join(cache_dir(), "colormaps.json")
            with open(path) as f:
                table = json.load(f).get(key)
            if table is not None:
                return np.asarray(table, dtype=np.uint8).reshape(int(n), 4)
        except Exception:  # noqa: BLE001 - no cache (or no matplotlib): ask matplotlib
            pass
    try:
        from matplotlib import colormaps
    except ImportError as err:  # pragma: no cover - optional extra
        raise FlexmbdError("colour maps need matplotlib: pip install 'flexmbd[viz]'") from err
    try:
        cm = colormaps[cmap]
    except KeyError:
        raise FlexmbdError(f"unknown colour map {cmap!r}; use a matplotlib name such as "
                           f"'viridis', 'plasma' or 'coolwarm'") from None
    table = np.round(255.0 * cm(np.linspace(0.0, 1.0, int(n)))).astype(np.uint8)
    if key is not None:
        _remember(path, key, table.ravel().tolist())
    return table


def _remember(path, key, value):
    """Add ``key: value`` to the JSON file ``path`` (best effort, atomic replace)."""
    import json
    import os

    try:
        try:
            with open(path) as f:
                data = json.load(f)
            data = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            data = {}
        data[key] = value
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError:
        pass


def lookup_table(cmap: str, clim: Sequence[float], n: int = 256) -> Any:
    """A ``vtkLookupTable`` of ``n`` colours of the matplotlib colour map ``cmap`` on ``clim``."""
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonCore import vtkLookupTable

    lut = vtkLookupTable()
    lut.SetNumberOfTableValues(n)
    lut.SetTable(numpy_to_vtk(colormap_table(cmap, n), deep=1, array_type=3))  # uint8
    lut.SetRange(float(clim[0]), float(clim[1]))
    lut.Build()
    return lut


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

    from .geometry import MESHIO_TO_VTK

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
        ca.SetData(numpy_to_vtkIdTypeArray(np.concatenate(offsets), deep=1),
                   numpy_to_vtkIdTypeArray(np.concatenate(conn), deep=1))
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


def mesh_actor(cells: dict, points: ArrayLike, *, color: Any = "#aaaaaa",
               field: str | None = None, values: ArrayLike | None = None,
               on_cells: bool = False, lut: Any = None, show_edges: bool = False,
               surface: bool = False, wireframe: bool = False, opacity: float = 1.0
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
    actor = core.vtkActor()
    actor.SetMapper(mapper)
    prop = actor.GetProperty()
    prop.SetColor(rgb(color))
    prop.SetOpacity(float(opacity))
    if wireframe:
        prop.SetRepresentationToWireframe()
    if show_edges:
        prop.EdgeVisibilityOn()
        prop.SetEdgeColor(0.0, 0.0, 0.0)
    return MeshActor(actor, data, field, on_cells, pid, cid)


def _poly_actor(source, color, lighting=True, edges=None):
    _, _, core = _vtk()
    source.Update()
    mapper = core.vtkPolyDataMapper()
    mapper.SetInputData(source.GetOutput())
    mapper.ScalarVisibilityOff()
    actor = core.vtkActor()
    actor.SetMapper(mapper)
    prop = actor.GetProperty()
    prop.SetColor(rgb(color))
    prop.SetLighting(bool(lighting))
    if edges is not None:
        prop.EdgeVisibilityOn()
        prop.SetEdgeColor(rgb(edges))
    actor.PickableOff()
    return actor


def ground_actor(bounds: Sequence[float], up: ArrayLike, color: Any = "#ececec",
                 edge_color: Any = "#dddddd") -> Any:
    """A faint unlit square (8 x 8 panels) perpendicular to ``up`` just below ``bounds``
    (VTK order ``[x0, x1, y0, y1, z0, z1]``), 1.6 times the diagonal wide."""
    from vtkmodules.vtkFiltersSources import vtkPlaneSource

    up = np.asarray(up, dtype=float)
    up = up / np.linalg.norm(up)
    lo, hi = np.asarray(bounds[::2], dtype=float), np.asarray(bounds[1::2], dtype=float)
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                        for z in (lo[2], hi[2])])
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


def cylinder_actor(center: ArrayLike, direction: ArrayLike, radius: float, height: float,
                   color: Any) -> Any:
    """A capped cylinder of axis ``direction`` (a joint axis)."""
    from vtkmodules.vtkCommonTransforms import vtkTransform
    from vtkmodules.vtkFiltersGeneral import vtkTransformFilter
    from vtkmodules.vtkFiltersSources import vtkCylinderSource

    d = np.asarray(direction, dtype=float)
    d = d / np.linalg.norm(d)
    src = vtkCylinderSource()            # along y, centred at the origin
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
    for prop in (bar.GetLabelTextProperty(), bar.GetTitleTextProperty(),
                 bar.GetAnnotationTextProperty()):
        prop.SetColor(c)
        prop.SetFontFamilyToArial()
        prop.SetFontSize(int(font_size))
        prop.SetShadow(False)
        prop.SetItalic(False)
        prop.SetBold(False)
    bar.GetTitleTextProperty().SetJustificationToCentered()
    bar.PickableOff()
    return bar


class Stage:
    """A render window with the main renderer (and the axes triad's, see :meth:`add_axes`).

    ``Stage(window_size)`` makes an off-screen window of its own (no
    multisampling: software GL would pay twice for it); :meth:`of_plotter` draws
    on the window of a ``pyvista.Plotter`` instead.
    """

    def __init__(self, window_size: Sequence[int] = (800, 600), background: Any = "white",
                 *, _renderer: Any = None, _window: Any = None, _plotter: Any = None) -> None:
        _, _, core = _vtk()
        self.plotter = _plotter
        if _renderer is None:
            from vtkmodules.vtkRenderingCore import vtkLightKit

            self.window = core.vtkRenderWindow()
            self.window.SetOffScreenRendering(1)
            self.window.SetMultiSamples(0)
            self.window.SetAlphaBitPlanes(1)    # for bake(): what was drawn, per pixel
            self.window.SetSize(int(window_size[0]), int(window_size[1]))
            self.renderer = core.vtkRenderer()
            self.renderer.SetBackground(rgb(background))
            self.renderer.AutomaticLightCreationOff()
            self.renderer.RemoveAllLights()
            vtkLightKit().AddLightsToRenderer(self.renderer)
            self.window.AddRenderer(self.renderer)
        else:
            self.window, self.renderer = _window, _renderer
        self.window_size = (int(window_size[0]), int(window_size[1]))
        self._axes = None
        self._observer = None
        self._baked = None

    @classmethod
    def of_plotter(cls, plotter: Any) -> Stage:
        """Draw on the main renderer of a ``pyvista.Plotter``."""
        return cls(plotter.window_size, _renderer=plotter.renderer, _window=plotter.ren_win,
                   _plotter=plotter)

    @property
    def camera(self) -> Any:
        return self.renderer.GetActiveCamera()

    def add(self, actor: Any) -> Any:
        """Add an actor (3-D prop or 2-D overlay) to the main renderer."""
        if self.plotter is not None:
            self.plotter.add_actor(actor, reset_camera=False, render=False)
        else:
            self.renderer.AddViewProp(actor)
        return actor

    def add_axes(self, color: Any = "#505050", viewport=(0.0, 0.0, 0.2, 0.2)) -> None:
        """World axes triad in the lower left corner, turning with the main camera."""
        from vtkmodules.vtkRenderingAnnotation import vtkAxesActor

        _, _, core = _vtk()
        c = rgb(color)
        axes = vtkAxesActor()
        for get in ("GetXAxisShaftProperty", "GetYAxisShaftProperty", "GetZAxisShaftProperty",
                    "GetXAxisTipProperty", "GetYAxisTipProperty", "GetZAxisTipProperty"):
            prop = getattr(axes, get)()
            prop.SetColor(c)
            prop.SetLineWidth(2.0)
        for get in ("GetXAxisCaptionActor2D", "GetYAxisCaptionActor2D",
                    "GetZAxisCaptionActor2D"):
            tp = getattr(axes, get)().GetCaptionTextProperty()
            tp.SetColor(c)
            tp.SetShadow(False)
            tp.SetItalic(False)
        ren = core.vtkRenderer()
        ren.SetViewport(*viewport)
        ren.SetLayer(1)
        ren.InteractiveOff()
        ren.AddViewProp(axes)
        if self.window.GetNumberOfLayers() < 2:
            self.window.SetNumberOfLayers(2)
        self.window.AddRenderer(ren)
        self._axes = ren
        self._observer = self.camera.AddObserver("ModifiedEvent", lambda *_: self._follow())
        self._follow()

    def remove_axes(self) -> None:
        if self._axes is not None:
            self.camera.RemoveObserver(self._observer)
            self.window.RemoveRenderer(self._axes)
            self._axes = self._observer = None

    def _follow(self):
        """Point the triad's camera like the main one, framing the unit axes."""
        main, cam = self.camera, self._axes.GetActiveCamera()
        d = np.subtract(main.GetPosition(), main.GetFocalPoint())
        n = np.linalg.norm(d)
        d = d / n if n > 0 else np.array([0.0, 0.0, 1.0])
        cam.SetFocalPoint(0.0, 0.0, 0.0)
        cam.SetPosition(*(4.0 * d))
        cam.SetViewUp(*main.GetViewUp())
        self._axes.ResetCamera(-1.0, 1.0, -1.0, 1.0, -1.0, 1.0)

    def look(self, focal: ArrayLike, position: ArrayLike, up: ArrayLike,
             bounds: Sequence[float], zoom: float = 1.0) -> Array:
        """Camera from ``position`` toward ``focal`` with ``up``, framing ``bounds``.

        Returns the camera's up vector as set (VTK projects it on the screen).
        """
        cam = self.camera
        cam.SetFocalPoint(*np.asarray(focal, dtype=float))
        cam.SetPosition(*np.asarray(position, dtype=float))
        cam.SetViewUp(*np.asarray(up, dtype=float))
        self.renderer.ResetCamera(*[float(b) for b in bounds])
        if zoom != 1.0:
            cam.Zoom(float(zoom))
        self.renderer.ResetCameraClippingRange()
        return np.asarray(cam.GetViewUp(), dtype=float)

    def render(self) -> None:
        self.window.Render()

    def _read(self, rgba=False):
        """The frame buffer ``(h * w, 3 or 4)`` uint8, bottom row first (OpenGL's order)."""
        from vtkmodules.util.numpy_support import vtk_to_numpy
        from vtkmodules.vtkCommonCore import vtkUnsignedCharArray

        w, h = self.window.GetSize()
        buf = vtkUnsignedCharArray()
        if rgba:
            self.window.GetRGBACharPixelData(0, 0, w - 1, h - 1, 0, buf, 0)
        else:
            self.window.GetPixelData(0, 0, w - 1, h - 1, 0, buf, 0)
        return vtk_to_numpy(buf).reshape(w * h, 4 if rgba else 3)

    def _upright(self, flat):
        w, h = self.window.GetSize()
        return np.ascontiguousarray(flat.reshape(h, w, 3)[::-1])

    def image(self) -> Array:
        """The rendered picture ``(height, width, 3)`` uint8, top row first (a copy),
        with the layers of :meth:`bake` put back."""
        if self._baked is None:
            return self._upright(self._read())
        back, idx, values = self._baked
        frame = self._read(rgba=True)
        drawn = np.flatnonzero(frame[:, 3])
        img = back.copy()
        img[drawn] = frame[drawn, :3]
        img[idx] = values
        return self._upright(img)

    def bake(self, behind: Sequence[Any] = (), above: Sequence[Any] = ()) -> None:
        """Render still props once and leave only what moves to be rendered per frame.

        For a camera that stays (an animation). ``behind``: props that no other
        prop can hide from this camera (the ground, seen from above it) become a
        background picture; ``above``: 2-D overlays (the colour bar) and the axes
        triad become a layer pasted on top. Both leave the scene; :meth:`image`
        puts them back, so the pictures are those of the full scene (the overlays'
        anti-aliased rims keep what was below them at baking). Owned stages only.
        """
        if self.plotter is not None or self._baked is not None:
            return
        ren = self.renderer
        self.render()
        full = self._read().copy()          # bottom row first, as every layer here
        for prop in above:
            prop.VisibilityOff()
        if self._axes is not None:
            self._axes.DrawOff()
        self.render()
        bare = self._read().copy()
        changed = np.flatnonzero(np.any(full != bare, axis=-1))
        values = full[changed]
        props = ren.GetViewProps()
        shown = [props.GetItemAsObject(k) for k in range(props.GetNumberOfItems())]
        shown = [x for x in shown if x.GetVisibility() and all(x is not b for b in behind)]
        for prop in shown:
            prop.VisibilityOff()
        self.render()
        back = self._read().copy()
        for prop in shown:
            prop.VisibilityOn()
        for prop in (*behind, *above):
            ren.RemoveViewProp(prop)
        self.remove_axes()
        ren.SetBackgroundAlpha(0.0)
        self._baked = (back, changed, values)

    def save(self, path: Any) -> None:
        """Write the rendered picture (PNG, or JPEG/TIFF/BMP by suffix) with Pillow."""
        from PIL import Image

        Image.fromarray(self.image()).save(str(path))

    def close(self) -> None:
        """Release the window (an owned one) and the triad."""
        self.remove_axes()
        if self.plotter is None and self.window is not None:
            self.window.Finalize()
            self.window = None
