"""Typed time histories of one body or joint (:class:`BodySeries`, :class:`JointSeries`)
held by :class:`flexmbd.results.Results`, and the reader of the schema-1 ``extra`` keys.

They sit below :mod:`flexmbd.results` so that the modules filling them
(:mod:`flexmbd.joint_states`, the formulations) need not import the results module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._typing import Array, ArrayLike

__all__ = ["BodySeries", "JointSeries", "split_legacy_extra"]


@dataclass
class BodySeries:
    """Time histories of one body (first axis time, ``None`` when not stored).

    Attributes
    ----------
    position : (nt, 3) array or None
        World position of the body frame origin (m).
    orientation : (nt, 4) array or None
        Euler parameters body -> world, scalar first, sign-continuous.
    modal : (nt, n_modes) array or None
        Modal coordinates of a flexible body.
    interfaces : dict of (nt, 7) arrays
        Interface name -> world origin (m) and Euler parameters of the deformed
        interface frame.
    """

    position: Array | None = None
    orientation: Array | None = None
    modal: Array | None = None
    interfaces: dict[str, Array] = field(default_factory=dict)

    def arrays(self) -> dict[str, Array]:
        """Every stored history by its file name (``position``, ``interface__NAME``...)."""
        out = {k: getattr(self, k) for k in _BODY_KEYS if getattr(self, k) is not None}
        out.update({f"interface__{k}": v for k, v in self.interfaces.items()})
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, ArrayLike]) -> BodySeries:
        """Inverse of :meth:`arrays`."""
        b = cls(**{k: np.asarray(arrays[k]) for k in _BODY_KEYS if k in arrays})
        b.interfaces = {
            k[len("interface__") :]: np.asarray(v)
            for k, v in arrays.items()
            if k.startswith("interface__")
        }
        return b

    def map(self, f: Any) -> BodySeries:
        """A new BodySeries with ``f(array)`` applied to every history (e.g. a time slice)."""
        return BodySeries.from_arrays({k: f(v) for k, v in self.arrays().items()})


@dataclass
class JointSeries:
    """Coordinates ``q`` (nt, nq), speeds ``qd`` and rates ``qdd`` (nt, nv) of one joint
    that owns no columns of ``Results.q`` (see :mod:`flexmbd.joint_states`)."""

    q: Array
    qd: Array
    qdd: Array

    def arrays(self) -> dict[str, Array]:
        """``{"q": ..., "qd": ..., "qdd": ...}``."""
        return {"q": self.q, "qd": self.qd, "qdd": self.qdd}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, ArrayLike]) -> JointSeries:
        """Inverse of :meth:`arrays`."""
        return cls(*(np.asarray(arrays[k]) for k in _JOINT_KEYS))

    def map(self, f: Any) -> JointSeries:
        """A new JointSeries with ``f(array)`` applied to ``q``, ``qd`` and ``qdd``."""
        return JointSeries(f(self.q), f(self.qd), f(self.qdd))


_BODY_KEYS = ("position", "orientation", "modal")
_JOINT_KEYS = ("q", "qd", "qdd")


def split_legacy_extra(
    extra: Mapping[str, ArrayLike],
) -> tuple[dict[str, Array], dict[str, BodySeries], dict[str, JointSeries]]:
    """Split ``extra`` keys of the schema-1 layout into typed series.

    ``"position:B"``, ``"orientation:B"``, ``"modal:B"`` and ``"interface:B.NAME"`` go to
    :class:`BodySeries` of body ``B``, ``"joint:J:q|qd|qdd"`` to :class:`JointSeries` of
    joint ``J`` (complete triples only); the rest stays ``extra``. Returns
    ``(extra, bodies, joints)``. Reads files written before schema 2 and samples of
    steppers that still name their histories so.
    """
    rest: dict[str, Array] = {}
    bodies: dict[str, dict[str, Array]] = {}
    joints: dict[str, dict[str, Array]] = {}
    for k, v in extra.items():
        kind, _, name = k.partition(":")
        if kind in _BODY_KEYS and name:
            bodies.setdefault(name, {})[kind] = np.asarray(v)
        elif kind == "interface" and "." in name:
            body, _, itf = name.partition(".")
            bodies.setdefault(body, {})[f"interface__{itf}"] = np.asarray(v)
        elif kind == "joint" and name.rpartition(":")[2] in _JOINT_KEYS:
            jname, _, what = name.rpartition(":")
            joints.setdefault(jname, {})[what] = np.asarray(v)
        else:
            rest[k] = np.asarray(v)
    out_j = {}
    for j, d in joints.items():
        if all(k in d for k in _JOINT_KEYS):
            out_j[j] = JointSeries.from_arrays(d)
        else:
            rest.update({f"joint:{j}:{k}": v for k, v in d.items()})
    return rest, {b: BodySeries.from_arrays(d) for b, d in bodies.items()}, out_j
