"""Fingerprints of a model's parameters: is this the model of that checkpoint?

A checkpoint stores the fingerprint of the model it was run with;
:func:`flexmbd.checkpoint.resume` compares it with the model it is given and refuses
a model whose parameters differ (a resumed run with other masses, stiffnesses or
gravity would silently mix two models, and recompute the energy history of the whole
run with the new one).

The fingerprint hashes, component by component in declaration order, every
attribute of every body, frame, joint and force element: numbers, strings, arrays
(dtype, shape and bytes), the names of referenced components, nested objects (frames,
reduced flexible bodies) and, for functions (``JointForce(joint, f)``), their code,
constants, default arguments and the values captured in closures. Globals a function
reads are not seen: a change of such a global is not detected.
"""

from __future__ import annotations

import hashlib
import json
import types
from typing import TYPE_CHECKING

import numpy as np

from .model.component import Component

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from .model import Model

__all__ = ["model_fingerprint", "fingerprint_difference"]

# names, documentation, caches filled on use (same model, other values), wall times
_SKIP = {
    "_parent_ref",
    "_name",
    "_index",
    "doc",
    "_topology_cache",
    "_revision",
    "_changes",
    "_components",
    "_members",
    "_inv",
    "_itf_modes",
    "_lazy",
    "timings",
}
_MAX_DEPTH = 6


def _feed(h, value, depth, seen):
    """Update hash ``h`` with a canonical description of ``value``."""
    if depth > _MAX_DEPTH:
        h.update(b"<deep>")
        return
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        h.update(repr((type(value).__name__, value)).encode())
    elif isinstance(value, np.generic):
        _feed(h, value.item(), depth, seen)
    elif isinstance(value, np.ndarray):
        h.update(f"nd{value.dtype.str}{value.shape}".encode())
        if value.dtype == object:
            for v in value.ravel():
                _feed(h, v, depth + 1, seen)
        else:
            h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, Component) and value.has_name:
        h.update(f"ref:{value.name}".encode())  # registered: by name
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}{len(value)}".encode())
        for v in value:
            _feed(h, v, depth + 1, seen)
    elif isinstance(value, dict):
        h.update(f"dict{len(value)}".encode())
        for k in sorted(value, key=repr):
            _feed(h, k, depth + 1, seen)
            _feed(h, value[k], depth + 1, seen)
    elif isinstance(value, (types.FunctionType, types.MethodType)):
        _feed_function(h, value, depth, seen)
    elif callable(value) and not hasattr(value, "__dict__"):
        h.update(f"callable:{getattr(value, '__qualname__', type(value).__name__)}".encode())
    elif hasattr(value, "__dict__") or hasattr(value, "__slots__"):
        if id(value) in seen:
            h.update(b"<cycle>")
            return
        seen = seen | {id(value)}
        h.update(f"obj:{type(value).__qualname__}".encode())
        for k, v in sorted(_attributes(value).items()):
            if k in _SKIP:
                continue
            _feed(h, k, depth + 1, seen)
            _feed(h, v, depth + 1, seen)
    else:
        h.update(f"type:{type(value).__qualname__}".encode())


def _attributes(obj):
    out = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for k in getattr(cls, "__slots__", ()):
            if hasattr(obj, k) and k not in out:
                out[k] = getattr(obj, k)
    return {k: v for k, v in out.items() if not isinstance(v, types.ModuleType)}


def _feed_function(h, fn, depth, seen):
    if isinstance(fn, types.MethodType):
        _feed(h, fn.__self__, depth + 1, seen)
        fn = fn.__func__
    code = fn.__code__
    h.update(f"fn:{fn.__qualname__}".encode())
    h.update(code.co_code)
    _feed(h, tuple(c for c in code.co_consts if not isinstance(c, types.CodeType)), depth + 1, seen)
    _feed(h, tuple(code.co_names), depth + 1, seen)
    _feed(h, fn.__defaults__, depth + 1, seen)
    for cell in fn.__closure__ or ():
        try:
            _feed(h, cell.cell_contents, depth + 1, seen)
        except ValueError:  # an empty cell
            h.update(b"<empty cell>")


def _digest(value):
    h = hashlib.sha256()
    _feed(h, value, 0, frozenset())
    return h.hexdigest()[:16]


def model_fingerprint(model: Model) -> dict[str, Any]:
    """``{"digest": hex, "parts": {component name: {attribute: hex}}}`` of ``model``.

    Equal for models built the same way (in any process); different when any
    parameter of a body, frame, joint or force element differs.
    """
    parts = {"model": {"name": _digest(model.name)}}
    for c in model.component_objects(Component):
        attrs = {k: _digest(v) for k, v in sorted(_attributes(c).items()) if k not in _SKIP}
        attrs["class"] = _digest(type(c).__qualname__)
        parts[c.name] = attrs
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]
    return {"digest": digest, "parts": parts}


def fingerprint_difference(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], limit: int = 6
) -> list[str]:
    """Readable list of what differs between two fingerprints (``"link.mass"``,
    ``"spring (removed)"``...), at most ``limit`` entries."""
    a, b = old.get("parts", {}), new.get("parts", {})
    out = []
    for name in list(a) + [n for n in b if n not in a]:
        if name not in b:
            out.append(f"{name} (not in this model)")
        elif name not in a:
            out.append(f"{name} (new in this model)")
        else:
            keys = list(a[name]) + [k for k in b[name] if k not in a[name]]
            out += [f"{name}.{k}" for k in keys if a[name].get(k) != b[name].get(k)]
    if len(out) > limit:
        out = out[:limit] + [f"... ({len(out) - limit} more)"]
    return out
