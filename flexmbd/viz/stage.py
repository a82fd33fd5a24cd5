"""The drawing in plain VTK: one scene for stills, animations and plotters.

A :class:`Stage` is a render window with one renderer (white background, a
five-light kit) and, optionally, a small second renderer in the lower left corner
holding the world axes triad, whose camera follows the main one. The actors it
shows -- body meshes coloured on a lookup table, the ground plane, joint markers,
frame triads, the label and the colour bar -- come from :mod:`flexmbd.viz.actors`.
:mod:`flexmbd.viz.render` builds every picture on a stage: off-screen stills and
animations on one of its own (VTK only: neither ``pyvista.plotting`` nor
matplotlib's pyplot are imported, which saves about a second per process),
interactive views on the window of a ``pyvista.Plotter`` (:meth:`Stage.of_plotter`).

For animations, :meth:`Stage.bake` renders the still layers (ground, colour bar,
triad) once, so each frame renders only what moves. Images are read straight
from the frame buffer into numpy (``(height, width, 3)`` uint8, top row first).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .actors import _vtk
from .colors import rgb

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .._typing import Array, ArrayLike

__all__ = ["Stage"]


class Stage:
    """A render window with the main renderer (and the axes triad's, see :meth:`add_axes`).

    ``Stage(window_size)`` makes an off-screen window of its own (no
    multisampling: software GL would pay twice for it); :meth:`of_plotter` draws
    on the window of a ``pyvista.Plotter`` instead.
    """

    def __init__(
        self,
        window_size: Sequence[int] = (800, 600),
        background: Any = "white",
        *,
        _renderer: Any = None,
        _window: Any = None,
        _plotter: Any = None,
    ) -> None:
        _, _, core = _vtk()
        self.plotter = _plotter
        if _renderer is None:
            from vtkmodules.vtkRenderingCore import vtkLightKit

            self.window = core.vtkRenderWindow()
            self.window.SetOffScreenRendering(1)
            self.window.SetMultiSamples(0)
            self.window.SetAlphaBitPlanes(1)  # for bake(): what was drawn, per pixel
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
        return cls(
            plotter.window_size,
            _renderer=plotter.renderer,
            _window=plotter.ren_win,
            _plotter=plotter,
        )

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
        for get in (
            "GetXAxisShaftProperty",
            "GetYAxisShaftProperty",
            "GetZAxisShaftProperty",
            "GetXAxisTipProperty",
            "GetYAxisTipProperty",
            "GetZAxisTipProperty",
        ):
            prop = getattr(axes, get)()
            prop.SetColor(c)
            prop.SetLineWidth(2.0)
        for get in ("GetXAxisCaptionActor2D", "GetYAxisCaptionActor2D", "GetZAxisCaptionActor2D"):
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

    def look(
        self,
        focal: ArrayLike,
        position: ArrayLike,
        up: ArrayLike,
        bounds: Sequence[float],
        zoom: float = 1.0,
    ) -> Array:
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
        full = self._read().copy()  # bottom row first, as every layer here
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
