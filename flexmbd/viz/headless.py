"""Safe off-screen rendering: choose a GL backend without ever crashing the caller.

:func:`configure` (called by every rendering function) decides once per process:

1. A display (``DISPLAY``/``WAYLAND_DISPLAY``) or a user-set
   ``VTK_DEFAULT_OPENGL_WINDOW`` is respected as is.
2. Otherwise, with libEGL present, ``VTK_DEFAULT_OPENGL_WINDOW=vtkEGLRenderWindow``
   is probed first in a child process (:mod:`flexmbd.viz._probe`; the default backend
   would try X first and warn), then the default backend; if that fails and
   ``libOSMesa`` is found, the probe is repeated with
   ``VTK_DEFAULT_OPENGL_WINDOW=vtkOSOpenGLRenderWindow``. A variable is set in this
   process only when its probe rendered (OSMesa's never when OSMesa is absent: that
   would break rendering). With no display, OSMesa present and no libEGL, the OSMesa
   probe goes first.
3. If nothing renders, :class:`RenderingUnavailable` is raised, telling the user to
   run ``scripts/install_system_deps.sh`` (libosmesa6 / libegl1 libgl1-mesa-dri).

The outcome is cached in the process and exported as ``FLEXMBD_GL_PROBED`` so child
processes (sweeps, tests) skip the probe. ``FLEXMBD_GL_PROBE=0`` skips it entirely
(for machines known to render).
"""

from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from ..errors import FlexmbdError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["RenderingUnavailable", "configure", "has_display", "osmesa_available",
           "egl_available", "run_probe"]

_OSMESA_WINDOW = "vtkOSOpenGLRenderWindow"
_EGL_WINDOW = "vtkEGLRenderWindow"
_STATE = {"result": None}


class RenderingUnavailable(FlexmbdError, RuntimeError):
    """Off-screen rendering is impossible here (no usable OpenGL library)."""


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def osmesa_available() -> bool:
    """True when a libOSMesa shared library can be found."""
    return ctypes.util.find_library("OSMesa") is not None


def egl_available() -> bool:
    """True when a libEGL shared library can be found."""
    return ctypes.util.find_library("EGL") is not None


def run_probe(env_overrides: Mapping[str, str] | None = None,
              timeout: float = 120) -> tuple[bool, str]:
    """Run the probe in a child process; return ``(ok, message)``."""
    env = dict(os.environ)
    env.update(env_overrides or {})
    try:
        out = subprocess.run([sys.executable, "-m", "flexmbd.viz._probe"], env=env,
                             capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "the rendering probe timed out"
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("flexmbd-gl-probe")]
    if out.returncode == 0 and lines and lines[-1].startswith("flexmbd-gl-probe ok"):
        return True, lines[-1].split("ok", 1)[1].strip()
    if out.returncode < 0:
        why = f"the probe process died with signal {-out.returncode} (VTK found no GL library)"
    else:
        why = lines[-1] if lines else (out.stderr.strip().splitlines() or ["no output"])[-1]
    return False, why


def configure() -> str:
    """Make off-screen rendering safe in this process, or raise :class:`RenderingUnavailable`."""
    if _STATE["result"] is not None:
        ok, msg = _STATE["result"]
        if ok:
            return msg
        raise RenderingUnavailable(msg)
    inherited = os.environ.get("FLEXMBD_GL_PROBED", "")
    if inherited.startswith("ok") or os.environ.get("FLEXMBD_GL_PROBE", "1") == "0":
        _STATE["result"] = (True, inherited[3:] or "not probed")
        return _STATE["result"][1]
    attempts = [None]
    headless = not has_display() and "VTK_DEFAULT_OPENGL_WINDOW" not in os.environ
    if headless and osmesa_available():
        osmesa = {"VTK_DEFAULT_OPENGL_WINDOW": _OSMESA_WINDOW}
        # without EGL the default backend would only crash: try OSMesa first then
        attempts = [osmesa, None] if not egl_available() else [None, osmesa]
    if headless and egl_available():
        # EGL by name first: the default backend tries X before falling back to EGL and
        # prints a "bad X server connection" warning on every render window
        attempts.insert(0, {"VTK_DEFAULT_OPENGL_WINDOW": _EGL_WINDOW})
    reasons = []
    for overrides in attempts:
        ok, msg = run_probe(overrides)
        if ok:
            os.environ.update(overrides or {})
            os.environ["FLEXMBD_GL_PROBED"] = f"ok:{msg}"
            _STATE["result"] = (True, msg)
            return msg
        name = overrides["VTK_DEFAULT_OPENGL_WINDOW"] if overrides else "default backend"
        reasons.append(f"{name}: {msg}")
    text = (
        "3D rendering is not possible on this machine: " + "; ".join(reasons)
        + ". Install an off-screen OpenGL library with `bash scripts/install_system_deps.sh` "
        "(Debian/Ubuntu: apt-get install libosmesa6, or libegl1 libgl1-mesa-dri)"
        + ("" if has_display() else "; no display is set, so an off-screen library is needed")
        + ". Results, plots (matplotlib) and VTK files (Results.to_vtk) work without it."
    )
    _STATE["result"] = (False, text)
    raise RenderingUnavailable(text)
