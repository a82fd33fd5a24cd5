"""Colours for the VTK scene: names and hex strings, and colour-map tables.

:func:`colormap_table` gives matplotlib's colour maps as uint8 tables and remembers
them in the user cache, so that drawing in a new process does not import matplotlib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import FlexmbdError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .._typing import Array

__all__ = ["rgb", "colormap_table", "lookup_table"]

_NAMED = {
    "white": (1.0, 1.0, 1.0),
    "black": (0.0, 0.0, 0.0),
    "red": (1.0, 0.0, 0.0),
    "green": (0.0, 0.5, 0.0),
    "blue": (0.0, 0.0, 1.0),
    "gray": (0.5, 0.5, 0.5),
    "grey": (0.5, 0.5, 0.5),
}


def rgb(color: Any) -> tuple[float, float, float]:
    """Colour ``"#rrggbb"``, a basic name, or 3 numbers (0..1, or 0..255) as floats 0..1."""
    if isinstance(color, str):
        c = color.strip().lower()
        if c in _NAMED:
            return _NAMED[c]
        if c.startswith("#") and len(c) == 7:
            try:
                return tuple(int(c[k : k + 2], 16) / 255.0 for k in (1, 3, 5))
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

            from .headless import cache_dir, cache_store

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
        raise FlexmbdError(
            f"unknown colour map {cmap!r}; use a matplotlib name such as "
            f"'viridis', 'plasma' or 'coolwarm'"
        ) from None
    table = np.round(255.0 * cm(np.linspace(0.0, 1.0, int(n)))).astype(np.uint8)
    if key is not None:
        cache_store(path, key, table.ravel().tolist())
    return table


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
