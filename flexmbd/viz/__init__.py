"""3D views (VTK; PyVista plotters for interactive use): models, results, mode shapes
and animations.

>>> import flexmbd as fm                                   # doctest: +SKIP
>>> fm.viz.show(model, file="model.png")   # up = -gravity      # doctest: +SKIP
>>> fm.viz.animate(res, "run.gif", scale=50, field="von_mises")   # doctest: +SKIP
>>> fm.viz.plot_mode(body, 1, file="mode1.png")            # doctest: +SKIP

Rendering functions configure VTK for headless machines first
(:mod:`flexmbd.viz.headless`) and raise :class:`RenderingUnavailable` with the fix
instead of crashing when no OpenGL library is usable. The geometry helpers
(:mod:`flexmbd.geometry`) need only numpy. Every picture is one VTK scene
(:mod:`flexmbd.viz.stage`): off-screen stills and animations render it with VTK alone,
:func:`plotter` and interactive :func:`show` put it on a ``pyvista.Plotter``. VTK and
PyVista are imported on first use.
"""

import importlib

__all__ = [
    "show",
    "animate",
    "plot_mode",
    "animate_mode",
    "deformed_mesh",
    "deformed_points",
    "BodyGeometry",
    "body_geometry",
    "reduced_body_geometry",
    "inertia_box",
    "von_mises",
    "RenderingUnavailable",
    "configure",
    "FrameWriter",
    "plotter",
    "auto_view",
    "gravity_of",
]

_WHERE = {
    "show": "render",
    "animate": "render",
    "plot_mode": "render",
    "animate_mode": "render",
    "FrameWriter": "render",
    "plotter": "render",
    "auto_view": "camera",
    "gravity_of": "camera",
    # numpy-only geometry lives below the results (flexmbd.geometry), re-exported here
    "deformed_mesh": "flexmbd.geometry",
    "deformed_points": "flexmbd.geometry",
    "BodyGeometry": "flexmbd.geometry",
    "body_geometry": "flexmbd.geometry",
    "reduced_body_geometry": "flexmbd.geometry",
    "inertia_box": "flexmbd.geometry",
    "von_mises": "flexmbd.geometry",
    "RenderingUnavailable": "headless",
    "configure": "headless",
}


def __getattr__(name):
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module 'flexmbd.viz' has no attribute {name!r}") from None
    module = module if "." in module else f"{__name__}.{module}"
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
