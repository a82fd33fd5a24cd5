"""PyVista views: snapshots, mode shapes and animations of models and results.

Every function works headless: rendering is off-screen whenever a ``file`` is
given or no display exists, after :func:`flexmbd.viz.headless.configure` made sure
a GL library is usable (it raises :class:`~flexmbd.viz.headless.RenderingUnavailable`
instead of letting VTK crash). Images are returned as ``(height, width, 3)`` uint8
arrays, so they can be checked or post-processed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import FlexmbdError
from ..geometry import (
    BodyGeometry,
    anchored_frame_data,
    body_geometry,
    frame_data,
    reduced_body_geometry,
)
from .camera import auto_view, gravity_of
from .headless import configure, has_display

if TYPE_CHECKING:
    from typing import Any

    from .._typing import ArrayLike, StrPath
    from ..model import Model
    from ..results import Results

__all__ = ["show", "plotter", "animate", "plot_mode", "animate_mode", "FrameWriter"]

BACKGROUND = "white"
_PALETTE = ["#a0a8b4", "#b4aca0", "#a8b4a4", "#b0a4b0", "#b4b0a0", "#a4b0b0", "#aaaaaa"]  # pale
_FIELDS = ("displacement", "von_mises")
GROUND_COLOR = "#ececec"          # the faint ground plane (unlit, below the mechanism)
AXES_COLOR = "#505050"            # the axes triad (grey: kept apart from the colour map)


# -- plotter and writer ----------------------------------------------------------------
def _plotter(window_size, off_screen, anti_aliasing=True):
    configure()
    import pyvista as pv

    p = pv.Plotter(off_screen=off_screen, window_size=list(window_size))
    p.set_background(BACKGROUND)
    if not anti_aliasing:      # animations: multisampling doubles the software-GL cost
        p.disable_anti_aliasing()
    return p


class FrameWriter:
    """Write frames to ``.gif`` (Pillow) or ``.mp4`` (imageio-ffmpeg); ``len()`` = frames.

    Frames are encoded as they come: an MP4 streams them to ffmpeg; a GIF frame is
    reduced to its own 256-colour palette at once (Pillow's fast octree quantizer,
    a few milliseconds per frame) and the palette frames are written at
    :meth:`close`. A GIF stores identical consecutive frames once with their
    durations added (Pillow does this), so it may hold fewer frames than were
    appended; the views here always change a label between frames.
    """

    def __init__(self, path: StrPath, fps: float = 20) -> None:
        self.path = Path(path)
        self.fps = float(fps)
        suffix = self.path.suffix.lower()
        self._gif = None
        self._w = None
        if suffix == ".gif":
            try:
                from PIL import Image  # noqa: F401  (imageio's own dependency)
            except ImportError as err:  # pragma: no cover - optional extra
                raise FlexmbdError("GIF animations need Pillow: pip install 'flexmbd[viz]'") \
                    from err
            self._gif = []
        elif suffix in (".mp4", ".mov", ".avi", ".mkv"):
            try:
                import imageio.v2 as imageio
                import imageio_ffmpeg  # noqa: F401
            except ImportError as err:  # pragma: no cover - optional extra
                raise FlexmbdError(
                    "video files need imageio and imageio-ffmpeg: pip install 'flexmbd[viz]'"
                ) from err
            self._w = imageio.get_writer(self.path, fps=fps, codec="libx264", quality=7,
                                         macro_block_size=16, pixelformat="yuv420p")
        else:
            raise FlexmbdError(
                f"unsupported animation file {str(self.path)!r}; use .gif or .mp4"
            )
        self.n = 0

    def append(self, image: ArrayLike) -> None:
        """Add one ``(h, w, 3)`` (or RGBA) uint8 frame."""
        image = np.ascontiguousarray(np.asarray(image)[..., :3], dtype=np.uint8)
        if self._gif is not None:
            from PIL import Image

            self._gif.append(Image.fromarray(image).quantize(
                256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE))
        else:
            self._w.append_data(image)
        self.n += 1

    def close(self) -> None:
        """Finish the file (a GIF is written here)."""
        if self._gif is not None:
            frames, self._gif = self._gif, None
            if frames:
                frames[0].save(self.path, save_all=True, append_images=frames[1:],
                               duration=1000.0 / self.fps, loop=0)
        elif self._w is not None:
            self._w.close()
            self._w = None

    def __len__(self):
        return self.n

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# -- scene --------------------------------------------------------------------------------
class _Scene:
    """Bodies (geometry) with a way to place them at frame ``i``."""

    def __init__(self, geoms, results=None, static_poses=None, about="interfaces"):
        self.geoms = geoms
        self.results = results
        self.static = static_poses or {}
        if about not in ("interfaces", "frame"):
            raise FlexmbdError(f"about={about!r}: use 'interfaces' or 'frame'")
        self.about = about

    def data(self, i, scale):
        """Per body: drawn points (deformation magnified by ``scale``), the true
        (unmagnified) displacement for the colours, von Mises stress."""
        if self.results is not None:
            if self.about == "interfaces":
                return anchored_frame_data(self.results, self.geoms, i, scale)
            d = frame_data(self.results, self.geoms, i, scale)
            if scale not in (0, 1):
                d = {k: (x, u / scale, vm) for k, (x, u, vm) in d.items()}
            return d
        out = {}
        for name, g in self.geoms.items():
            R, r = self.static.get(name, (np.eye(3), np.zeros(3)))
            out[name] = (g.points(None, R, r), np.zeros((len(g.nodes), 3)), g.von_mises(None))
        return out


def _is_results(obj):
    from ..results import Results

    return isinstance(obj, Results)


def _scene_of_model(model, glyphs=True):
    from ..kinematics import tree_poses

    geoms, poses = {}, {}
    world = tree_poses(model)
    for b in model.bodies():
        g = body_geometry(b, glyph=glyphs)
        if g is not None:
            geoms[b.name] = g
            poses[b.name] = world[b]
    return _Scene(geoms, static_poses=poses), world


def _scene_of_results(res, model=None, about="interfaces"):
    from ..results import attach_geometry, attach_tree_poses

    if model is None and not res.geometry:
        # results of Model.simulate know their system, and it its model
        model = getattr(getattr(res, "system", None), "model", None)
    if model is not None:
        res = res.take(slice(None))   # new dicts (array views): leave the caller's untouched
    if not res.geometry and model is not None:
        attach_geometry(res, model)
    if not res.geometry:
        raise FlexmbdError(
            "these results carry no body geometry; call flexmbd.results.attach_geometry(res, "
            "model) or pass model=..."
        )
    missing = [b for b in res.geometry if f"position:{b}" not in res.extra]
    if missing and model is not None:
        attach_tree_poses(res, model)
    elif missing:
        import warnings

        warnings.warn(f"bodies {missing} have no stored poses and are drawn at the origin; "
                      f"pass model=... or fill them with flexmbd.results.attach_body_poses",
                      stacklevel=3)
    geoms = {b: BodyGeometry.from_arrays(d) for b, d in res.geometry.items()}
    return _Scene(geoms, results=res, about=about)


_LINEAR_CELLS = {"vertex", "line", "triangle", "quad", "polygon", "tetra", "hexahedron",
                 "wedge", "pyramid"}


def _outer_surface(g, mesh):
    """The outer surface of a linear volume mesh and its original point and cell ids.

    An animation moves only these points: the mapper of a volume mesh would extract its
    surface again every frame. Quadratic meshes (curved faces) are drawn whole: None.
    """
    if not set(g.cells) <= _LINEAR_CELLS or mesh.n_cells == 0:
        return None
    import pyvista as pv
    from vtkmodules.vtkFiltersGeometry import vtkDataSetSurfaceFilter

    f = vtkDataSetSurfaceFilter()
    f.SetInputData(mesh)
    f.PassThroughPointIdsOn()
    f.PassThroughCellIdsOn()
    f.SetNonlinearSubdivisionLevel(0)
    f.Update()
    surf = pv.wrap(f.GetOutput())
    pid = np.asarray(surf.point_data["vtkOriginalPointIds"]).copy()
    cid = np.asarray(surf.cell_data["vtkOriginalCellIds"]).copy()
    return surf, pid, cid


class _Drawn:
    """A body's drawn mesh: the whole grid, or its outer surface (point/cell ids)."""

    def __init__(self, mesh, field, pid=None, cid=None):
        self.mesh, self.field, self.pid, self.cid = mesh, field, pid, cid

    def points(self, x):
        return x if self.pid is None else x[self.pid]

    def cells(self, v):
        return v if self.cid is None else v[self.cid]


def _add_bodies(p, scene, data, field, clim, cmap, show_edges, surface=False):
    """Add one actor per body; return ``{name: _Drawn}``. ``surface``: draw the outer
    surface of linear volume meshes (cheaper to update; the same picture)."""
    actors = {}
    for k, (name, g) in enumerate(scene.geoms.items()):
        x, u, vm = data[name]
        mesh = g.to_pyvista(x)
        drawn = _Drawn(mesh, None)
        outer = _outer_surface(g, mesh) if surface else None
        if outer is not None:
            drawn = _Drawn(outer[0], None, outer[1], outer[2])
            mesh = drawn.mesh
        color = _PALETTE[k % len(_PALETTE)] if g.color is None else g.color
        if field is not None and g.flexible:
            if field == "displacement":
                mesh.point_data["displacement"] = drawn.points(np.linalg.norm(u, axis=1))
            elif g.stress_on_cells:
                mesh.cell_data["von_mises"] = drawn.cells(vm)
            else:
                mesh.point_data["von_mises"] = drawn.points(vm)
            p.add_mesh(mesh, scalars=field, cmap=cmap, clim=clim, show_edges=show_edges,
                       scalar_bar_args={"title": _FIELD_TITLES[field], "color": "black",
                                        "vertical": False, "position_x": 0.25,
                                        "position_y": 0.03, "width": 0.5, "height": 0.08,
                                        "fmt": "%.3g"})
            drawn.field = field
        else:
            p.add_mesh(mesh, color=color, show_edges=show_edges and g.flexible)
        actors[name] = drawn
    return actors


_FIELD_TITLES = {"displacement": "displacement [m]", "von_mises": "von Mises [Pa]"}


def _update_bodies(scene, actors, data):
    for name, d in actors.items():
        x, u, vm = data[name]
        d.mesh.points = d.points(x)
        if d.field == "displacement":
            d.mesh.point_data["displacement"] = np.linalg.norm(d.points(u), axis=1)
        elif d.field == "von_mises":
            if scene.geoms[name].stress_on_cells:
                d.mesh.cell_data["von_mises"] = d.cells(vm)
            else:
                d.mesh.point_data["von_mises"] = d.points(vm)
        d.mesh.Modified()


def _scale_note(scale):
    """Label suffix that says the drawn deformation is magnified (colours are not)."""
    return "" if scale == 1 else f"  (deformation drawn x {scale:g})"


def _extent(data, lo=None, hi=None):
    """Smallest and largest coordinates (3,), (3,) of a frame's points (grown from lo, hi)."""
    lo = np.full(3, np.inf) if lo is None else lo
    hi = np.full(3, -np.inf) if hi is None else hi
    for x, _, _ in data.values():
        if len(x):
            lo = np.minimum(lo, x.min(axis=0))
            hi = np.maximum(hi, x.max(axis=0))
    return lo, hi


def _padded(lo, hi):
    """VTK bounds ``[x0, x1, y0, y1, z0, z1]`` of the extent with a 5 % margin."""
    if not np.all(np.isfinite(lo)):
        lo, hi = -np.ones(3), np.ones(3)
    pad = 0.05 * max(np.linalg.norm(hi - lo), 1e-9)
    lo, hi = lo - pad, hi + pad
    return [lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]]


def _bounds(datas):
    lo = hi = None
    for data in datas:
        lo, hi = _extent(data, lo, hi)
    return _padded(lo, hi)


VIEWS = ("auto", "iso", "xy", "xz", "yz", "yx", "zx", "zy")


def _set_view(p, view, bounds, zoom=1.0, points=None, gravity=None):
    """Point the camera; ``"auto"`` (see :mod:`flexmbd.viz.camera`) puts ``-gravity`` up
    and looks at the plane of motion of ``points``. Returns the screen's up vector."""
    if view not in VIEWS:
        raise FlexmbdError(f"unknown view {view!r}; use one of {list(VIEWS)}")
    if view == "auto":
        pts = np.reshape(bounds, (3, 2)).T if points is None else points
        toward, up = auto_view(pts, gravity)
        lo, hi = np.asarray(bounds[::2]), np.asarray(bounds[1::2])
        centre = 0.5 * (lo + hi)
        dist = max(float(np.linalg.norm(hi - lo)), 1e-9)
        p.camera.focal_point = tuple(centre)
        p.camera.position = tuple(centre + dist * toward)
        p.camera.up = tuple(up)
    else:
        getattr(p, f"view_{'isometric' if view == 'iso' else view}")(render=False)
    p.reset_camera(render=False, bounds=bounds)
    if zoom != 1.0:
        p.camera.zoom(float(zoom))
    return np.asarray(p.camera.up, dtype=float)


def _ground(p, bounds, up):
    """A faint square plane perpendicular to ``up`` just below ``bounds``."""
    import pyvista as pv

    lo, hi = np.asarray(bounds[::2]), np.asarray(bounds[1::2])
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                        for z in (lo[2], hi[2])])
    h = corners @ up
    size = max(float(np.linalg.norm(hi - lo)), 1e-9)
    centre = 0.5 * (lo + hi)
    centre = centre - (centre @ up - h.min()) * up
    plane = pv.Plane(center=centre, direction=up, i_size=1.6 * size, j_size=1.6 * size,
                     i_resolution=8, j_resolution=8)
    p.add_mesh(plane, color=GROUND_COLOR, lighting=False, show_edges=True,
               edge_color="#dddddd", pickable=False, name="ground")


def _decorate(p, bounds, up, gravity, axes, ground):
    """Axes triad (lower left) and, with gravity, the ground below the mechanism."""
    if ground if ground is not None else gravity is not None:
        _ground(p, bounds, up if gravity is None else -gravity / np.linalg.norm(gravity))
    if axes:
        p.add_axes(interactive=False, line_width=2, color=AXES_COLOR, x_color=AXES_COLOR,
                   y_color=AXES_COLOR, z_color=AXES_COLOR)
    p.reset_camera_clipping_range()


def _axes_overlay(p):
    """Pixels of the axes triad ``(mask, values)``: the triad is an overlay that does
    not change while the camera stays, so an animation renders it once and pastes it
    (its own viewport would cost a second render pass every frame)."""
    with_axes = np.array(p.screenshot(return_img=True))
    p.hide_axes()
    p.render()
    without = np.asarray(p.screenshot(return_img=True))
    mask = np.any(with_axes != without, axis=-1)
    return mask, with_axes[mask]


def _sample_points(data, n=400):
    """At most ``n`` points of every body of one frame (for the principal axes)."""
    out = []
    for x, _, _ in data.values():
        if len(x):
            out.append(x[:: max(1, len(x) // n)])
    return np.vstack(out) if out else np.zeros((0, 3))


def _field_arg(field):
    if field in (None, "none"):
        return None
    if field not in _FIELDS:
        raise FlexmbdError(f"unknown field {field!r}; use 'displacement', 'von_mises' or None")
    return field


def _check_field(scene, field, where):
    """FlexmbdError if ``field="von_mises"`` is asked of flexible bodies without stress modes.

    Without them the stress is not known, and a zero field would be drawn as if it were.
    """
    if field != "von_mises":
        return
    missing = [name for name, g in scene.geoms.items() if g.flexible and g.stress_modes is None]
    if missing:
        raise FlexmbdError(
            f"{where}: field='von_mises' but flexible bod{'ies' if len(missing) > 1 else 'y'} "
            f"{', '.join(map(repr, missing))} {'were' if len(missing) > 1 else 'was'} reduced "
            "without stress modes, so the stress is unknown; reduce with "
            "fm.fem.reduce(..., stress_modes=True) (the default) or draw "
            "field='displacement'")


def _field_max(scene, data, field):
    """Largest value of ``field`` on the flexible bodies of one frame (None: none)."""
    vmax = None
    for name, (_x, u, vm) in data.items():
        if scene.geoms[name].flexible:
            v = np.linalg.norm(u, axis=1) if field == "displacement" else vm
            vmax = max(vmax or 0.0, float(v.max()) if v.size else 0.0)
    return vmax


def _field_range(scene, datas, field):
    vals = [m for m in (_field_max(scene, d, field) for d in datas) if m is not None]
    if not vals:
        return None
    vmax = max(vals)
    return [0.0, vmax if vmax > 0 else 1.0]


def _joint_markers(p, model, world, size):
    """Small spheres at joint origins and axis cylinders for joints with an ``axis``."""
    import pyvista as pv

    for j in model.joints():
        Rp, rp = world[j.parent]
        pf = j.parent_frame
        origin = rp + Rp @ pf.position
        p.add_mesh(pv.Sphere(radius=1.5 * size, center=origin), color="#d04040")
        axis = getattr(j, "axis", None)
        if axis is not None:
            d = Rp @ pf.rotation @ np.asarray(axis, dtype=float)
            p.add_mesh(pv.Cylinder(center=origin, direction=d, radius=0.5 * size,
                                   height=5.0 * size), color="#d04040")


def _frame_triads(p, poses, size):
    import pyvista as pv

    for R, r in poses:
        for k, c in enumerate(("red", "green", "blue")):
            p.add_mesh(pv.Line(r, r + size * R[:, k]), color=c, line_width=3)


def _label(p, text):
    """A black label in the upper left corner (a plain text actor: a corner annotation
    searches its font size again whenever its text changes, ~17 ms a frame)."""
    w, h = p.window_size
    size = max(6, int(round(7.3 * (np.sqrt(w * h) / 277.0) ** 0.4)))
    actor = p.add_text(text, position=(5, h - 5), font_size=size, color="black")
    actor.prop.justification_vertical = "top"
    return actor


def _set_text(actor, text):
    """Change a label made by :func:`_label` (or a corner annotation)."""
    if hasattr(actor, "SetInput"):
        actor.SetInput(text)
    else:  # vtkCornerAnnotation: corner 2 is upper left
        actor.SetText(2, text)


def _finish(p, file, off_screen):
    if off_screen:
        img = p.screenshot(None if file is None else str(file), return_img=True)
        p.close()
        return np.asarray(img)
    p.show()
    return None


# -- public -------------------------------------------------------------------------------
def plotter(obj: Any, t: float | None = None, *, model: Model | None = None,
            field: str | None = "displacement", scale: float = 1.0, joints: bool = True,
            frames: bool = False, glyphs: bool = True, view: str = "auto",
            window_size: tuple[int, int] = (800, 600), cmap: str = "viridis",
            show_edges: bool = False, off_screen: bool = True, zoom: float = 1.0,
            clim: tuple[float, float] | None = None, about: str = "interfaces",
            axes: bool = True, ground: bool | None = None) -> Any:
    """A ``pyvista.Plotter`` holding the drawing of :func:`show`, not yet rendered.

    Add your own actors, move the camera (``p.camera``), then ``p.show()`` or
    ``p.screenshot(file)``. Arguments as :func:`show`.
    """
    field = _field_arg(field)
    world = None
    label = None
    if _is_results(obj):
        scene = _scene_of_results(obj, model, about)
        i = obj.index_at(t)
        data = scene.data(i, scale)
        label = f"t = {obj.t[i]:.4f} s{_scale_note(scale)}"
        poses = [frame_pose(scene.results, b, i) for b in scene.geoms]
        if model is not None and joints:
            world = _tree_world(model, obj, i)
        gravity = gravity_of(model) if model is not None else gravity_of(obj)
        # the plane of motion from a dozen samples of the whole run
        ks = np.unique(np.linspace(0, len(obj.t) - 1, 12).astype(int))
        motion = np.vstack([_sample_points(scene.data(k, scale), 100) for k in ks])
    elif hasattr(obj, "bodies") and hasattr(obj, "joints"):
        model = obj
        scene, world = _scene_of_model(obj, glyphs)
        data = scene.data(0, scale)
        poses = [scene.static[b] for b in scene.geoms]
        gravity = gravity_of(obj)
        motion = None
    else:
        g = reduced_body_geometry(obj)
        scene = _Scene({"body": g})
        data = scene.data(0, scale)
        poses = [(np.eye(3), np.zeros(3))]
        gravity, motion = None, None
    _check_field(scene, field, "show")
    p = _plotter(window_size, off_screen)
    if clim is None and field:
        clim = _field_range(scene, [data], field)
    _add_bodies(p, scene, data, field, clim, cmap, show_edges)
    bounds = _bounds([data])
    size = 0.03 * np.linalg.norm(np.subtract(bounds[1::2], bounds[::2]))
    if joints and world is not None and model is not None:
        _joint_markers(p, model, world, size)
    if frames:
        _frame_triads(p, poses, 2 * size)
    if label:
        _label(p, label)
    points = _sample_points(data) if motion is None else np.vstack([motion,
                                                                    _sample_points(data)])
    up = _set_view(p, view, bounds, zoom, points, gravity)
    _decorate(p, bounds, up, gravity, axes, ground)
    return p


def show(obj: Any, t: float | None = None, file: StrPath | None = None, *,
         model: Model | None = None, field: str | None = "displacement", scale: float = 1.0,
         joints: bool = True, frames: bool = False, glyphs: bool = True,
         view: str = "auto", window_size: tuple[int, int] = (800, 600),
         cmap: str = "viridis", show_edges: bool = False, off_screen: bool | None = None,
         zoom: float = 1.0, clim: tuple[float, float] | None = None,
         about: str = "interfaces", axes: bool = True, ground: bool | None = None) -> Any:
    """Draw a model (initial configuration) or results at time ``t``.

    Parameters
    ----------
    obj : Model, Results or reduced flexible body
        What to draw. Bodies use their FE mesh (flexible), their visuals (URDF
        shapes, mesh files, PyVista meshes) or a box with their mass and principal
        inertia (bare rigid bodies, ``glyphs=True``).
    t : float, optional
        Time of the results snapshot (nearest sample; default the last).
    file : str or Path, optional
        Save a PNG (any image type VTK writes). Off-screen when given.
    model : Model, optional
        For results without stored geometry/poses, and to draw joints.
    field : "displacement", "von_mises" or None
        Colouring of flexible bodies (the true displacement magnitude, whatever
        ``scale``).
    scale : float
        Magnification of the drawn deformation (noted in the label when not 1).
    about : "interfaces" or "frame"
        Results: the deformation drawn and coloured is taken relative to the rigid
        placement that best fits the body's interface nodes (where its joints attach:
        a magnified body stays on its joints), or to its floating frame (mean axes,
        an attached interface...; a magnified body may then drift off its joints).
        Bodies without interfaces always use their frame.
    joints, frames : bool
        Draw joint markers (a model is needed) and body frame triads.
    view : str
        ``"auto"`` (default): up on the screen is opposite to the model's gravity
        (without gravity, the middle principal axis of the drawn points) and the
        camera faces the plane of motion, slightly from the side and above (see
        :mod:`flexmbd.viz.camera`). Fixed views: ``"iso"`` (z up), ``"xy"``,
        ``"xz"``, ``"yz"``...
    zoom : float
        Camera zoom after framing every body (> 1 fills more of the image).
    clim : (float, float), optional
        Colour range (default: that of the drawn field).
    axes : bool
        Draw the world axes triad in the lower left corner.
    ground : bool, optional
        Draw a faint ground plane perpendicular to gravity below the mechanism
        (default: when the model has gravity).

    Returns the image ``(h, w, 3)`` when rendered off-screen, else None.
    :func:`plotter` gives the same drawing as a PyVista plotter.
    """
    off_screen = (file is not None or not has_display()) if off_screen is None else off_screen
    p = plotter(obj, t, model=model, field=field, scale=scale, joints=joints, frames=frames,
                glyphs=glyphs, view=view, window_size=window_size, cmap=cmap,
                show_edges=show_edges, off_screen=off_screen, zoom=zoom, clim=clim,
                about=about, axes=axes, ground=ground)
    return _finish(p, file, off_screen)


def _tree_world(model, res, i):
    """World poses of the model's bodies at sample ``i`` from joint coordinates, or None."""
    from ..kinematics import tree_poses

    q = {}
    for j in model.joints():
        idx = [c for c, (owner, _) in enumerate(res.coordinates) if owner == j.name]
        if len(idx) == j.nq and j.nq:
            q[j] = res.q[i, idx]
    if not q:
        return None
    return tree_poses(model, q)


def frame_pose(results, body, i):
    from ..geometry import body_pose_at

    return body_pose_at(results, body, i)


def animate(results: Results, file: StrPath, scale: float = 1.0, field: str | None = "displacement",
            *, model: Model | None = None, fps: float = 20, stride: int | None = None,
            max_frames: int | None = 200, view: str = "auto",
            window_size: tuple[int, int] = (640, 480), cmap: str = "viridis",
            clim: tuple[float, float] | None = None, show_edges: bool = False, zoom: float = 1.0,
            about: str = "interfaces", axes: bool = True, ground: bool | None = None) -> int:
    """Render results to ``file`` (``.gif`` or ``.mp4``) with a time label.

    Flexible bodies are drawn as their full deformed meshes, reconstructed from the
    body poses (``position:B``/``orientation:B`` extras) and modal coordinates
    (``modal:B``), magnified by ``scale`` (noted in the label) and coloured by
    ``field`` (the true ``"displacement"`` magnitude or ``"von_mises"`` from stress
    modes) on one colour range for the whole animation (``clim`` to override); rigid
    bodies move along. ``about``: the deformation drawn and coloured is relative to the
    rigid placement that best fits each body's interface nodes (``"interfaces"``: a
    magnified body stays on its joints) or to its floating frame (``"frame"``); see
    :func:`show`, also for ``view`` (default ``"auto"``: up opposite to gravity),
    ``axes`` and ``ground``. ``zoom`` > 1 fills more of the image.
    ``stride`` picks every n-th sample (default: at most ``max_frames`` frames).
    The camera is fixed and frames the whole motion. Returns the number of frames.

    The scene is built once; every frame moves the mesh points and colours in place
    and goes to the file as it is rendered (without multisampling, which doubles the
    cost of software rendering).
    """
    if not _is_results(results):
        raise FlexmbdError("animate: give a flexmbd Results object (see fm.viz.show for models)")
    field = _field_arg(field)
    scene = _scene_of_results(results, model, about)
    _check_field(scene, field, "animate")
    nt = len(results.t)
    if nt == 0:
        raise FlexmbdError("animate: the results are empty")
    if stride is None:
        stride = max(1, int(np.ceil(nt / max_frames)))
    idx = list(range(0, nt, max(int(stride), 1)))
    # first pass: extent, colour range and plane of motion (frames are not kept: a
    # large mesh times hundreds of frames would not fit in memory)
    lo, hi, fmax, motion = None, None, 0.0, []
    for i in idx:
        data = scene.data(i, scale)
        lo, hi = _extent(data, lo, hi)
        if clim is None and field:
            fmax = max(fmax, _field_max(scene, data, field) or 0.0)
        motion.append(_sample_points(data, max(20, 4000 // len(idx))))
    bounds = _padded(lo, hi)
    if clim is None and field:
        clim = [0.0, fmax if fmax > 0 else 1.0]
    gravity = gravity_of(model) if model is not None else gravity_of(results)
    data = scene.data(idx[0], scale)
    p = _plotter(window_size, True, anti_aliasing=False)
    try:
        actors = _add_bodies(p, scene, data, field, clim, cmap, show_edges, surface=True)
        note = _scale_note(scale)
        text = _label(p, f"t = {results.t[idx[0]]:.4f} s{note}")
        up = _set_view(p, view, bounds, zoom, np.vstack(motion), gravity)
        _decorate(p, bounds, up, gravity, axes, ground)
        overlay = _axes_overlay(p) if axes else None
        with FrameWriter(file, fps) as w:
            for k, i in enumerate(idx):
                if k:
                    data = scene.data(i, scale)
                _update_bodies(scene, actors, data)
                _set_text(text, f"t = {results.t[i]:.4f} s{note}")
                p.render()
                img = p.screenshot(return_img=True)
                if overlay is not None:
                    img = np.array(img)
                    img[overlay[0]] = overlay[1]
                w.append(img)
            n = len(w)
    finally:
        p.close()
    return n


def _mode_info(rb, k):
    """Geometry, 0-based column and label of mode number ``k`` (1-based, as ``info()``)."""
    g = reduced_body_geometry(rb)
    if not g.flexible:
        raise FlexmbdError("this body has no mode shapes")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= g.n_modes:
        raise FlexmbdError(f"mode number {k!r} out of range: the body has {g.n_modes} modes, "
                           f"numbered 1..{g.n_modes} as in its info() table")
    label = f"mode {k}"
    if g.frequencies is not None and len(g.frequencies) >= k:
        label += f": {g.frequencies[k - 1]:.4g} Hz"
    kinds = rb.get("mode_kind") if isinstance(rb, dict) else getattr(rb, "mode_kind", None)
    if kinds is not None and len(kinds) >= k:
        label += f" ({kinds[k - 1]})"
    return g, k - 1, label


def _auto_scale(g, k, scale):
    if scale is not None:
        return float(scale)
    size = np.linalg.norm(np.ptp(g.nodes, axis=0))
    umax = np.abs(g.modes[:, k]).reshape(-1, 3)
    umax = np.linalg.norm(umax, axis=1).max()
    return 0.1 * size / umax if umax > 0 else 1.0


def _mode_q(g, k, amplitude):
    q = np.zeros(g.n_modes)
    q[k] = amplitude
    return q


def plot_mode(reduced_body: Any, k: int, file: StrPath | None = None, scale: float | None = None,
              field: str | None = "displacement", *, undeformed: bool = True,
              view: str = "auto", window_size: tuple[int, int] = (800, 600),
              cmap: str = "viridis", show_edges: bool = True,
              off_screen: bool | None = None) -> Any:
    """Draw mode number ``k`` (1-based, as in ``ReducedBody.info()``) with its frequency.

    ``scale`` multiplies the mode shape (default: largest displacement = 10 % of the
    mesh size); ``undeformed`` adds the undeformed mesh as a wireframe. Returns the
    image when rendered off-screen.
    """
    field = _field_arg(field)
    g, k, label = _mode_info(reduced_body, k)
    s = _auto_scale(g, k, scale)
    off_screen = (file is not None or not has_display()) if off_screen is None else off_screen
    scene = _Scene({"body": g}, results=None)
    _check_field(scene, field, "plot_mode")
    q = _mode_q(g, k, 1.0)
    data = {"body": (g.points(q, scale=s), s * g.displacement(q), s * g.von_mises(q))}
    p = _plotter(window_size, off_screen)
    _add_bodies(p, scene, data, field, _field_range(scene, [data], field) if field else None,
                cmap, show_edges)
    if undeformed:
        p.add_mesh(g.to_pyvista(), style="wireframe", color="gray", opacity=0.4)
    _label(p, label)
    both = [data, {"b": (g.nodes, None, None)}]
    _set_view(p, view, _bounds(both), points=np.vstack([_sample_points(d) for d in both]))
    return _finish(p, file, off_screen)


def animate_mode(reduced_body: Any, k: int, file: StrPath, scale: float | None = None,
                 field: str | None = "displacement", *, n_frames: int = 24, fps: float = 12,
                 view: str = "auto", window_size: tuple[int, int] = (640, 480),
                 cmap: str = "viridis", show_edges: bool = True) -> int:
    """Animate mode number ``k`` (1-based) over one period of ``sin`` into ``file``.

    Returns the number of frames written.
    """
    field = _field_arg(field)
    g, k, label = _mode_info(reduced_body, k)
    s = _auto_scale(g, k, scale)
    scene = _Scene({"body": g})
    _check_field(scene, field, "animate_mode")
    datas = []
    for i in range(int(n_frames)):
        q = _mode_q(g, k, np.sin(2.0 * np.pi * i / n_frames))
        datas.append({"body": (g.points(q, scale=s), s * g.displacement(q),
                               s * g.von_mises(q))})
    clim = _field_range(scene, datas, field) if field else None
    p = _plotter(window_size, True, anti_aliasing=False)
    actors = _add_bodies(p, scene, datas[0], field, clim, cmap, show_edges, surface=True)
    text = _label(p, label)
    _set_view(p, view, _bounds(datas), points=np.vstack([_sample_points(d, 200)
                                                         for d in datas]))
    try:
        with FrameWriter(file, fps) as w:
            for i, data in enumerate(datas):
                _update_bodies(scene, actors, data)
                _set_text(text, f"{label}, phase {360 * i // n_frames} deg")
                p.render()
                w.append(p.screenshot(return_img=True))
            n = len(w)
    finally:
        p.close()
    return n
