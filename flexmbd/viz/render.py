"""Views of models and results: snapshots, mode shapes and animations.

The picture is described once, as the VTK actors of :mod:`flexmbd.viz.stage`
(bodies, colour bar, label, joint markers, ground, axes triad) placed by
:func:`_draw`; off-screen it is rendered with VTK alone (no ``pyvista.plotting``,
no matplotlib.pyplot), on screen and in :func:`plotter` on a ``pyvista.Plotter``.

Every function works headless: rendering is off-screen whenever a ``file`` is
given or no display exists, after :func:`flexmbd.viz.headless.configure` made sure
a GL library is usable (it raises :class:`~flexmbd.viz.headless.RenderingUnavailable`
instead of letting VTK crash). Images are returned as ``(height, width, 3)`` uint8
arrays, so they can be checked or post-processed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import FlexmbdError
from ..geometry import (
    BodyGeometry,
    anchored_frame_data,
    body_geometry,
    frame_data,
    reduced_body_geometry,
)
from ..joint_types import perp_basis
from .camera import auto_view, gravity_of
from .headless import configure, has_display

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._typing import ArrayLike, StrPath
    from ..model import Model
    from ..results import Results

__all__ = ["show", "plotter", "animate", "plot_mode", "animate_mode", "FrameWriter"]

BACKGROUND = "white"
_PALETTE = ["#a0a8b4", "#b4aca0", "#a8b4a4", "#b0a4b0", "#b4b0a0", "#a4b0b0", "#aaaaaa"]  # pale
_FIELDS = ("displacement", "von_mises")
GROUND_COLOR = "#ececec"  # the faint ground plane (unlit, below the mechanism)
AXES_COLOR = "#505050"  # the axes triad (grey: kept apart from the colour map)


# -- stage and writer ------------------------------------------------------------------
def _stage(window_size, off_screen=True, anti_aliasing=True):
    """A :class:`~flexmbd.viz.stage.Stage`: off-screen and VTK only, or on the window of
    an interactive ``pyvista.Plotter`` (``off_screen=False``)."""
    configure()
    from .stage import Stage

    if off_screen:
        s = Stage(window_size, BACKGROUND)
        if anti_aliasing:  # stills; animations skip it (doubles the software-GL cost)
            s.window.SetMultiSamples(4)
        return s
    import pyvista as pv

    p = pv.Plotter(off_screen=False, window_size=list(window_size))
    p.set_background(BACKGROUND)
    return Stage.of_plotter(p)


class FrameWriter:
    """Write frames to ``.gif`` (Pillow) or ``.mp4`` (imageio-ffmpeg); ``len()`` = frames.

    Frames are encoded as they come: an MP4 streams them to ffmpeg; a GIF frame is
    mapped at once to 256 colours and the palette frames are written at
    :meth:`close`. With :meth:`set_palette` (what :func:`animate` does, from a few
    frames spread over the run) every frame uses that one palette: about 1 ms a
    frame to map and little to encode, since Pillow then stores only the
    rectangle that changed. Without it each frame gets its own palette (Pillow's
    fast octree, a few milliseconds). A GIF stores identical consecutive frames
    once with their durations added (Pillow does this), so it may hold fewer
    frames than were appended; the views here always change a label between frames.
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
                raise FlexmbdError(
                    "GIF animations need Pillow: pip install 'flexmbd[viz]'"
                ) from err
            self._gif = []
            self._palette = None
        elif suffix in (".mp4", ".mov", ".avi", ".mkv"):
            try:
                import imageio.v2 as imageio
                import imageio_ffmpeg  # noqa: F401
            except ImportError as err:  # pragma: no cover - optional extra
                raise FlexmbdError(
                    "video files need imageio and imageio-ffmpeg: pip install 'flexmbd[viz]'"
                ) from err
            self._w = imageio.get_writer(
                self.path,
                fps=fps,
                codec="libx264",
                quality=7,
                macro_block_size=16,
                pixelformat="yuv420p",
            )
        else:
            raise FlexmbdError(f"unsupported animation file {str(self.path)!r}; use .gif or .mp4")
        self.n = 0

    def set_palette(self, samples: Sequence[ArrayLike]) -> None:
        """Use one 256-colour palette, made from the sample frames, for every GIF frame.

        ``samples``: ``(h, w, 3)`` uint8 images showing the colours to expect
        (frames spread over the animation). Ignored for videos.
        """
        if self._gif is None or not len(samples):
            return
        from PIL import Image

        tile = np.vstack([np.asarray(x)[..., :3] for x in samples])
        self._palette = Image.fromarray(np.ascontiguousarray(tile, dtype=np.uint8)).quantize(
            256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE
        )

    def append(self, image: ArrayLike) -> None:
        """Add one ``(h, w, 3)`` (or RGBA) uint8 frame."""
        image = np.ascontiguousarray(np.asarray(image)[..., :3], dtype=np.uint8)
        if self._gif is not None:
            from PIL import Image

            im = Image.fromarray(image)
            if self._palette is not None:
                self._gif.append(im.quantize(palette=self._palette, dither=Image.Dither.NONE))
            else:
                self._gif.append(
                    im.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
                )
        else:
            self._w.append_data(image)
        self.n += 1

    def close(self) -> None:
        """Finish the file (a GIF is written here)."""
        if self._gif is not None:
            frames, self._gif = self._gif, None
            if frames:
                frames[0].save(
                    self.path,
                    save_all=True,
                    append_images=frames[1:],
                    duration=1000.0 / self.fps,
                    loop=0,
                )
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
        res = res.take(slice(None))  # new dicts (array views): leave the caller's untouched
    if not res.geometry and model is not None:
        attach_geometry(res, model)
    if not res.geometry:
        raise FlexmbdError(
            "these results carry no body geometry; call flexmbd.results.attach_geometry(res, "
            "model) or pass model=..."
        )
    missing = [b for b in res.geometry if not res.has_poses([b])]
    if missing and model is not None:
        attach_tree_poses(res, model)
    elif missing:
        import warnings

        warnings.warn(
            f"bodies {missing} have no stored poses and are drawn at the origin; "
            f"pass model=... or fill them with flexmbd.results.attach_body_poses",
            stacklevel=3,
        )
    geoms = {b: BodyGeometry.from_arrays(d) for b, d in res.geometry.items()}
    return _Scene(geoms, results=res, about=about)


class _Drawn:
    """A body's drawn mesh (:class:`~flexmbd.viz.stage.MeshActor`) and its coloured field."""

    def __init__(self, mesh, field):
        self.mesh, self.field = mesh, field


def _add_bodies(st, scene, data, field, clim, cmap, show_edges, surface=False):
    """Add one actor per body (and one colour bar); return ``({name: _Drawn}, bar)``
    (``bar`` None without a coloured field).
    ``surface``: draw the outer surface of linear volume meshes (cheaper to move; the
    same picture)."""
    from .actors import mesh_actor, scalar_bar
    from .colors import lookup_table

    actors, lut = {}, None
    for k, (name, g) in enumerate(scene.geoms.items()):
        x, u, vm = data[name]
        color = _PALETTE[k % len(_PALETTE)] if g.color is None else g.color
        if field is not None and g.flexible:
            if lut is None:
                lut = lookup_table(cmap, clim)
            on_cells = field == "von_mises" and g.stress_on_cells
            values = np.linalg.norm(u, axis=1) if field == "displacement" else vm
            m = mesh_actor(
                g.cells,
                x,
                field=field,
                values=values,
                on_cells=on_cells,
                lut=lut,
                show_edges=show_edges,
                surface=surface,
            )
            actors[name] = _Drawn(m, field)
        else:
            m = mesh_actor(
                g.cells, x, color=color, show_edges=show_edges and g.flexible, surface=surface
            )
            actors[name] = _Drawn(m, None)
        st.add(m.actor)
    bar = None if lut is None else st.add(scalar_bar(lut, _FIELD_TITLES[field]))
    return actors, bar


_KEEP_BYTES = 256 * 2**20  # animate: frames kept between its two passes (bytes)
_FIELD_TITLES = {"displacement": "displacement [m]", "von_mises": "von Mises [Pa]"}


def _update_bodies(scene, actors, data):
    """Move every body's points (and colours) to those of ``data``, in place."""
    for name, d in actors.items():
        x, u, vm = data[name]
        d.mesh.set_points(x)
        if d.field == "displacement":
            d.mesh.set_values(np.linalg.norm(u, axis=1))
        elif d.field == "von_mises":
            d.mesh.set_values(vm)


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
# fixed views: direction from the focal point to the camera, and the screen's up
_FIXED = {
    "iso": ((1, 1, 1), (0, 0, 1)),
    "xy": ((0, 0, 1), (0, 1, 0)),
    "yx": ((0, 0, -1), (1, 0, 0)),
    "xz": ((0, -1, 0), (0, 0, 1)),
    "zx": ((0, 1, 0), (1, 0, 0)),
    "yz": ((1, 0, 0), (0, 0, 1)),
    "zy": ((-1, 0, 0), (0, 1, 0)),
}


def _set_view(st, view, bounds, zoom=1.0, points=None, gravity=None):
    """Point the camera; ``"auto"`` (see :mod:`flexmbd.viz.camera`) puts ``-gravity`` up
    and looks at the plane of motion of ``points``. Returns the screen's up vector."""
    if view not in VIEWS:
        raise FlexmbdError(f"unknown view {view!r}; use one of {list(VIEWS)}")
    if view == "auto":
        pts = np.reshape(bounds, (3, 2)).T if points is None else points
        toward, up = auto_view(pts, gravity)
    else:
        toward, up = (np.asarray(v, dtype=float) for v in _FIXED[view])
        toward = toward / np.linalg.norm(toward)
    lo, hi = np.asarray(bounds[::2]), np.asarray(bounds[1::2])
    centre = 0.5 * (lo + hi)
    dist = max(float(np.linalg.norm(hi - lo)), 1e-9)
    return st.look(centre, centre + dist * toward, up, bounds, zoom)


def _decorate(st, bounds, up, gravity, axes, ground):
    """Axes triad (lower left) and, with gravity, the ground below the mechanism.

    Returns the ground actor when the camera sees it from above (then nothing
    inside ``bounds`` can be hidden by it), else None."""
    from .actors import ground_actor

    seen = None
    if ground if ground is not None else gravity is not None:
        normal = up if gravity is None else -gravity / np.linalg.norm(gravity)
        g = st.add(ground_actor(bounds, normal, GROUND_COLOR))
        corners = np.array(
            [[x, y, z] for x in bounds[0:2] for y in bounds[2:4] for z in bounds[4:6]]
        )
        if np.asarray(st.camera.GetPosition()) @ normal > (corners @ normal).min():
            seen = g
    if axes:
        st.add_axes(AXES_COLOR)
    st.renderer.ResetCameraClippingRange()
    return seen


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
            "field='displacement'"
        )


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


def _joint_markers(st, model, world, size):
    """Small spheres at joint origins and axis cylinders for joints with an ``axis``."""
    from .actors import cylinder_actor, polyline_actor, sphere_actor

    for j in model.joints():
        Rp, rp = world[j.parent]
        pf = j.parent_frame
        origin = rp + Rp @ pf.position
        st.add(sphere_actor(origin, 1.5 * size, "#d04040"))
        axis = getattr(j, "axis", None)
        if axis is not None:
            d = Rp @ pf.rotation @ np.asarray(axis, dtype=float)
            st.add(cylinder_actor(origin, d, 0.5 * size, 5.0 * size, "#d04040"))
            if getattr(j, "pitch", None) is not None:  # a Screw: its thread as a helix
                st.add(polyline_actor(_helix(origin, d, size), "#d04040", 2.0))


def _helix(origin, d, size, turns=3, n=90):
    """Points (n, 3) of a helix of radius ``size`` and ``turns`` turns around the unit
    direction ``d``, centred on ``origin`` over the length of a joint's axis cylinder."""
    u1, u2 = perp_basis(d / np.linalg.norm(d))
    t = np.linspace(0.0, 2 * np.pi * turns, n)
    s = np.linspace(-2.5 * size, 2.5 * size, n)
    return (
        origin
        + size * (np.cos(t)[:, None] * u1 + np.sin(t)[:, None] * u2)
        + s[:, None] * d / np.linalg.norm(d)
    )


def _frame_triads(st, poses, size):
    from .actors import line_actor

    for R, r in poses:
        for k, c in enumerate(("red", "green", "blue")):
            st.add(line_actor(r, r + size * R[:, k], c, 3.0))


def _label(st, text):
    """A black label in the upper left corner (a plain text actor: a corner annotation
    searches its font size again whenever its text changes, ~17 ms a frame)."""
    from .actors import text_actor

    return st.add(text_actor(text, st.window_size, "black"))


def _set_text(actor, text):
    """Change a label made by :func:`_label`."""
    actor.SetInput(text)


def _finish(st, file, off_screen):
    """Render off-screen: the image (saved to ``file`` if given); else show interactively."""
    if off_screen:
        try:
            st.render()
            img = st.image()
            if file is not None:
                _save_image(img, file)
        finally:
            st.close()
        return img
    st.plotter.show()
    return None


def _save_image(img, file):
    from PIL import Image

    try:
        Image.fromarray(img).save(str(file))
    except (ValueError, KeyError) as err:  # unknown suffix
        raise FlexmbdError(f"cannot write image {str(file)!r} ({err}); use .png or .jpg") from err


# -- public -------------------------------------------------------------------------------
def plotter(
    obj: Any,
    t: float | None = None,
    *,
    model: Model | None = None,
    field: str | None = "displacement",
    scale: float = 1.0,
    joints: bool = True,
    frames: bool = False,
    glyphs: bool = True,
    view: str = "auto",
    window_size: tuple[int, int] = (800, 600),
    cmap: str = "viridis",
    show_edges: bool = False,
    off_screen: bool = True,
    zoom: float = 1.0,
    clim: tuple[float, float] | None = None,
    about: str = "interfaces",
    axes: bool = True,
    ground: bool | None = None,
) -> Any:
    """A ``pyvista.Plotter`` holding the drawing of :func:`show`, not yet rendered.

    Add your own actors, move the camera (``p.camera``), then ``p.show()`` or
    ``p.screenshot(file)``. Arguments as :func:`show`. The drawing is the same
    VTK scene :func:`show` renders (:mod:`flexmbd.viz.stage`), put on the
    plotter's window.
    """
    return _on_plotter(obj, t, _Drawing.of(locals()), window_size, off_screen)


@dataclass(frozen=True)
class _Drawing:
    """The drawing options of :func:`show` and :func:`plotter` (their keyword arguments
    of the same names; see :func:`show`)."""

    model: Any = None
    field: str | None = "displacement"
    scale: float = 1.0
    joints: bool = True
    frames: bool = False
    glyphs: bool = True
    view: str = "auto"
    cmap: str = "viridis"
    show_edges: bool = False
    zoom: float = 1.0
    clim: Any = None
    about: str = "interfaces"
    axes: bool = True
    ground: bool | None = None

    @classmethod
    def of(cls, args: dict) -> _Drawing:
        """The options among a public function's arguments (its ``locals()``)."""
        return cls(**{f.name: args[f.name] for f in fields(cls)})


def _on_plotter(obj, t, d, window_size, off_screen):
    """A ``pyvista.Plotter`` with the drawing ``d`` of ``obj`` (see :func:`plotter`)."""
    configure()
    import pyvista as pv

    from .stage import Stage

    p = pv.Plotter(off_screen=off_screen, window_size=list(window_size))
    p.set_background(BACKGROUND)
    try:
        _draw(Stage.of_plotter(p), obj, t, d)
    except BaseException:
        p.close()
        raise
    p.renderer.camera_set = True  # keep our camera on the first render
    return p


def _draw(st, obj, t, d):
    """Draw :func:`show`'s picture of ``obj`` with the options ``d`` (:class:`_Drawing`) on
    the stage ``st`` (not rendered)."""
    model, scale, clim = d.model, d.scale, d.clim
    field = _field_arg(d.field)
    world = None
    label = None
    if _is_results(obj):
        scene = _scene_of_results(obj, model, d.about)
        i = obj.index_at(t)
        data = scene.data(i, scale)
        label = f"t = {obj.t[i]:.4f} s{_scale_note(scale)}"
        poses = [frame_pose(scene.results, b, i) for b in scene.geoms]
        if model is not None and d.joints:
            world = _tree_world(model, obj, i)
        gravity = gravity_of(model) if model is not None else gravity_of(obj)
        # the plane of motion from a dozen samples of the whole run
        ks = np.unique(np.linspace(0, len(obj.t) - 1, 12).astype(int))
        motion = np.vstack([_sample_points(scene.data(k, scale), 100) for k in ks])
    elif hasattr(obj, "bodies") and hasattr(obj, "joints"):
        model = obj
        scene, world = _scene_of_model(obj, d.glyphs)
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
    if clim is None and field:
        clim = _field_range(scene, [data], field)
    _add_bodies(st, scene, data, field, clim, d.cmap, d.show_edges)
    bounds = _bounds([data])
    size = 0.03 * np.linalg.norm(np.subtract(bounds[1::2], bounds[::2]))
    if d.joints and world is not None and model is not None:
        _joint_markers(st, model, world, size)
    if d.frames:
        _frame_triads(st, poses, 2 * size)
    if label:
        _label(st, label)
    points = _sample_points(data) if motion is None else np.vstack([motion, _sample_points(data)])
    up = _set_view(st, d.view, bounds, d.zoom, points, gravity)
    _decorate(st, bounds, up, gravity, d.axes, d.ground)


# contract: show repeats plotter's keyword parameters (the two documented public
# signatures) and hands them to the same _Drawing
def show(
    obj: Any,
    t: float | None = None,
    file: StrPath | None = None,
    *,
    model: Model | None = None,
    field: str | None = "displacement",
    scale: float = 1.0,
    joints: bool = True,
    frames: bool = False,
    glyphs: bool = True,
    view: str = "auto",
    window_size: tuple[int, int] = (800, 600),
    cmap: str = "viridis",
    show_edges: bool = False,
    off_screen: bool | None = None,
    zoom: float = 1.0,
    clim: tuple[float, float] | None = None,
    about: str = "interfaces",
    axes: bool = True,
    ground: bool | None = None,
) -> Any:
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
        Save a PNG (or JPEG, TIFF, BMP by suffix). Off-screen when given.
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
    d = _Drawing.of(locals())
    _field_arg(field)  # a wrong field fails before any window opens
    if not off_screen:
        _on_plotter(obj, t, d, window_size, False).show()
        return None
    st = _stage(window_size)
    try:
        _draw(st, obj, t, d)
    except BaseException:
        st.close()
        raise
    return _finish(st, file, True)


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


def animate(
    results: Results,
    file: StrPath,
    scale: float = 1.0,
    field: str | None = "displacement",
    *,
    model: Model | None = None,
    fps: float = 20,
    stride: int | None = None,
    max_frames: int | None = 200,
    view: str = "auto",
    window_size: tuple[int, int] = (640, 480),
    cmap: str = "viridis",
    clim: tuple[float, float] | None = None,
    show_edges: bool = False,
    zoom: float = 1.0,
    about: str = "interfaces",
    axes: bool = True,
    ground: bool | None = None,
) -> int:
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

    The scene is built once, in VTK directly (:mod:`flexmbd.viz.stage`); every frame
    moves the mesh points and colours in place and goes to the file as it is
    rendered (without multisampling, which doubles the cost of software rendering).
    A GIF uses one 256-colour palette made from five frames spread over the run
    (the first, the last, the one with the largest field value...).
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
    # first pass: extent, colour range and plane of motion; the frames are kept for
    # the second when they fit in _KEEP_BYTES (a large mesh times hundreds of frames
    # would not fit in memory: they are computed again then)
    lo, hi, fmax, motion, peak, fpeak = None, None, 0.0, [], None, -1.0
    per_frame = 8 * sum(
        7 * len(g.nodes) + (g.n_cells if g.stress_on_cells else 0) for g in scene.geoms.values()
    )
    kept = {} if per_frame * len(idx) <= _KEEP_BYTES else None
    for i in idx:
        data = scene.data(i, scale)
        if kept is not None:
            kept[i] = data
        lo, hi = _extent(data, lo, hi)
        if field:
            fi = _field_max(scene, data, field) or 0.0
            fmax = max(fmax, fi)
            if fi > fpeak:
                peak, fpeak = i, fi
        motion.append(_sample_points(data, max(20, 4000 // len(idx))))
    bounds = _padded(lo, hi)
    if clim is None and field:
        clim = [0.0, fmax if fmax > 0 else 1.0]
    gravity = gravity_of(model) if model is not None else gravity_of(results)
    data = kept[idx[0]] if kept else scene.data(idx[0], scale)
    st = _stage(window_size, anti_aliasing=False)
    try:
        actors, bar = _add_bodies(st, scene, data, field, clim, cmap, show_edges, surface=True)
        note = _scale_note(scale)
        text = _label(st, f"t = {results.t[idx[0]]:.4f} s{note}")
        up = _set_view(st, view, bounds, zoom, np.vstack(motion), gravity)
        below = _decorate(st, bounds, up, gravity, axes, ground)
        # still layers (ground, colour bar, triad) are rendered once, not every frame
        st.bake(behind=[below] if below is not None else [], above=[bar] if bar is not None else [])

        def frame(i, again=False):
            d = None if kept is None else (kept.get(i) if again else kept.pop(i, None))
            _update_bodies(scene, actors, scene.data(i, scale) if d is None else d)
            _set_text(text, f"t = {results.t[i]:.4f} s{note}")
            st.render()
            return st.image()

        with FrameWriter(file, fps) as w:
            if w.path.suffix.lower() == ".gif":
                w.set_palette([frame(i, again=True) for i in _palette_frames(idx, peak)])
            for i in idx:
                w.append(frame(i))
            n = len(w)
    finally:
        st.close()
    return n


def _palette_frames(idx, peak):
    """Sample indices whose colours make an animation's GIF palette: the first, the
    last, three between, and the one with the largest field value (``peak``)."""
    picks = {idx[int(round(f * (len(idx) - 1)))] for f in (0.0, 0.25, 0.5, 0.75, 1.0)}
    if peak is not None:
        picks.add(peak)
    return sorted(picks)


def _mode_info(rb, k):
    """Geometry, 0-based column and label of mode number ``k`` (1-based, as ``info()``)."""
    g = reduced_body_geometry(rb)
    if not g.flexible:
        raise FlexmbdError("this body has no mode shapes")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= g.n_modes:
        raise FlexmbdError(
            f"mode number {k!r} out of range: the body has {g.n_modes} modes, "
            f"numbered 1..{g.n_modes} as in its info() table"
        )
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


def plot_mode(
    reduced_body: Any,
    k: int,
    file: StrPath | None = None,
    scale: float | None = None,
    field: str | None = "displacement",
    *,
    undeformed: bool = True,
    view: str = "auto",
    window_size: tuple[int, int] = (800, 600),
    cmap: str = "viridis",
    show_edges: bool = True,
    off_screen: bool | None = None,
) -> Any:
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
    st = _stage(window_size, off_screen)
    try:
        _add_bodies(
            st,
            scene,
            data,
            field,
            _field_range(scene, [data], field) if field else None,
            cmap,
            show_edges,
        )
        if undeformed:
            from .actors import mesh_actor

            st.add(mesh_actor(g.cells, g.nodes, color="gray", wireframe=True, opacity=0.4).actor)
        _label(st, label)
        both = [data, {"b": (g.nodes, None, None)}]
        _set_view(st, view, _bounds(both), points=np.vstack([_sample_points(d) for d in both]))
    except BaseException:
        st.close()
        raise
    if st.plotter is not None:
        st.plotter.renderer.camera_set = True
    return _finish(st, file, off_screen)


def animate_mode(
    reduced_body: Any,
    k: int,
    file: StrPath,
    scale: float | None = None,
    field: str | None = "displacement",
    *,
    n_frames: int = 24,
    fps: float = 12,
    view: str = "auto",
    window_size: tuple[int, int] = (640, 480),
    cmap: str = "viridis",
    show_edges: bool = True,
) -> int:
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
        datas.append({"body": (g.points(q, scale=s), s * g.displacement(q), s * g.von_mises(q))})
    clim = _field_range(scene, datas, field) if field else None
    st = _stage(window_size, anti_aliasing=False)
    try:
        actors, bar = _add_bodies(st, scene, datas[0], field, clim, cmap, show_edges, surface=True)
        text = _label(st, label)
        _set_view(
            st, view, _bounds(datas), points=np.vstack([_sample_points(d, 200) for d in datas])
        )
        st.bake(above=[bar] if bar is not None else [])

        def frame(i):
            _update_bodies(scene, actors, datas[i])
            _set_text(text, f"{label}, phase {360 * i // n_frames} deg")
            st.render()
            return st.image()

        with FrameWriter(file, fps) as w:
            if w.path.suffix.lower() == ".gif":
                # quarter periods: undeformed, both extremes (all colours)
                w.set_palette(
                    [frame(i) for i in sorted({0, len(datas) // 4, (3 * len(datas)) // 4})]
                )
            for i in range(len(datas)):
                w.append(frame(i))
            n = len(w)
    finally:
        st.close()
    return n
