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

A successful probe is also remembered across processes in
``$FLEXMBD_CACHE_DIR`` (default ``$XDG_CACHE_HOME/flexmbd`` or ``~/.cache/flexmbd``),
file ``gl-probe.json``, under a key made of the Python executable, the VTK version,
the GL libraries found (libEGL, libOSMesa) and the environment variables that choose
or change the GL backend: the next process with the same key skips the probe child
(~0.5 s CPU). Failures are never remembered (installing a library takes effect at
once). ``FLEXMBD_GL_PROBE_CACHE=0`` turns the file off; delete it after removing GL
drivers by hand.
"""

from __future__ import annotations

import ctypes.util
import functools
import hashlib
import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from ..errors import FlexmbdError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = [
    "RenderingUnavailable",
    "configure",
    "has_display",
    "osmesa_available",
    "egl_available",
    "run_probe",
]

_OSMESA_WINDOW = "vtkOSOpenGLRenderWindow"
_EGL_WINDOW = "vtkEGLRenderWindow"
_STATE = {"result": None}


class RenderingUnavailable(FlexmbdError, RuntimeError):
    """Off-screen rendering is impossible here (no usable OpenGL library)."""


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@functools.cache
def _find_library(name):
    return ctypes.util.find_library(name)  # runs ldconfig: once per process


def osmesa_available() -> bool:
    """True when a libOSMesa shared library can be found."""
    return _find_library("OSMesa") is not None


def egl_available() -> bool:
    """True when a libEGL shared library can be found."""
    return _find_library("EGL") is not None


# variables that choose the GL backend or change what Mesa/VTK load
_KEY_VARS = (
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "VTK_DEFAULT_OPENGL_WINDOW",
    "LD_LIBRARY_PATH",
    "LIBGL_ALWAYS_SOFTWARE",
    "GALLIUM_DRIVER",
    "MESA_LOADER_DRIVER_OVERRIDE",
    "EGL_PLATFORM",
    "__EGL_VENDOR_LIBRARY_FILENAMES",
    "LIBGL_DRIVERS_PATH",
)


def cache_dir() -> str:
    """The user cache directory of flexmbd (``$FLEXMBD_CACHE_DIR``, default
    ``$XDG_CACHE_HOME/flexmbd`` or ``~/.cache/flexmbd``); it may not exist yet."""
    root = os.environ.get("FLEXMBD_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "flexmbd")
    return root


def _cache_file():
    """Path of the cross-process verdict file, or None when caching is off."""
    if os.environ.get("FLEXMBD_GL_PROBE_CACHE", "1") == "0":
        return None
    return os.path.join(cache_dir(), "gl-probe.json")


def _cache_key(attempts):
    """Hash of everything the probe's verdict depends on (see the module doc)."""
    try:
        from importlib.metadata import version

        vtk = version("vtk")
    except Exception:  # noqa: BLE001 - a VTK built from source has no metadata
        vtk = "unknown"
    parts = [
        sys.executable,
        sys.version,
        vtk,
        repr(attempts),
        repr([_find_library("EGL"), _find_library("OSMesa")]),
    ]
    parts += [f"{v}={os.environ.get(v)}" for v in _KEY_VARS]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _cache_read(key):
    path = _cache_file()
    try:
        with open(path) as f:
            entry = json.load(f).get(key)
    except (TypeError, OSError, ValueError, AttributeError):
        return None
    if isinstance(entry, dict) and isinstance(entry.get("message"), str):
        return entry
    return None


def _cache_write(key, overrides, msg):
    """Remember a success (best effort: an unwritable cache only costs the next probe)."""
    path = _cache_file()
    if path is not None:
        cache_store(path, key, {"overrides": overrides or {}, "message": msg})


def cache_store(path: str, key: str, value: Any) -> None:
    """Add ``key: value`` to the JSON cache file ``path`` (best effort: an unwritable
    cache is skipped; the file is replaced atomically, so readers never see half of it)."""
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


def run_probe(
    env_overrides: Mapping[str, str] | None = None, timeout: float = 120
) -> tuple[bool, str]:
    """Run the probe in a child process; return ``(ok, message)``."""
    env = dict(os.environ)
    env.update(env_overrides or {})
    try:
        out = subprocess.run(
            [sys.executable, "-m", "flexmbd.viz._probe"],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
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
    key = _cache_key(attempts)
    hit = _cache_read(key)
    if hit is not None and (hit["overrides"] or None) in attempts:
        os.environ.update(hit["overrides"])
        os.environ["FLEXMBD_GL_PROBED"] = f"ok:{hit['message']}"
        _STATE["result"] = (True, hit["message"])
        return hit["message"]
    reasons = []
    for overrides in attempts:
        ok, msg = run_probe(overrides)
        if ok:
            _cache_write(key, overrides, msg)
            os.environ.update(overrides or {})
            os.environ["FLEXMBD_GL_PROBED"] = f"ok:{msg}"
            _STATE["result"] = (True, msg)
            return msg
        name = overrides["VTK_DEFAULT_OPENGL_WINDOW"] if overrides else "default backend"
        reasons.append(f"{name}: {msg}")
    text = (
        "3D rendering is not possible on this machine: "
        + "; ".join(reasons)
        + ". Install an off-screen OpenGL library with `bash scripts/install_system_deps.sh` "
        "(Debian/Ubuntu: apt-get install libosmesa6, or libegl1 libgl1-mesa-dri)"
        + ("" if has_display() else "; no display is set, so an off-screen library is needed")
        + ". Results, plots (matplotlib) and VTK files (Results.to_vtk) work without it."
    )
    _STATE["result"] = (False, text)
    raise RenderingUnavailable(text)
