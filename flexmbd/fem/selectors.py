"""Geometric and named node selectors for interfaces, supports and loads.

A selector is called with an `FEMesh` and returns sorted scikit-fem node
numbers.  Anything accepted where a selector is expected:

- a selector object (`Plane`, `Box`, `Cylinder`, `Sphere`, `Nearest`, `NodeSet`, `Nodes`),
  combined with ``|`` (union) and ``&`` (intersection);
- a string: the name of a node set read from the mesh file;
- an integer array: node numbers.

Tolerances default to 1e-6 of the mesh bounding-box diagonal.

>>> import skfem
>>> from flexmbd.fem import read_mesh
>>> fe = read_mesh(skfem.MeshHex1.init_tensor([0, .5, 1], [0, 1], [0, 1]))
>>> Plane((0, 0, 0), (1, 0, 0))(fe).tolist()    # the four nodes at x = 0
[0, 1, 6, 7]
>>> fe.mesh.p[:, [0, 1, 6, 7]].T.tolist()          # scikit-fem numbers y fastest, z slowest
[[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import MeshError

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

    from .._typing import ArrayLike
    from .mesh import FEMesh

__all__ = ["Plane", "Box", "Cylinder", "Sphere", "Nearest", "NodeSet", "Nodes", "select"]


def _vec3(value, what, unit=False):
    """``value`` as a finite 3-vector (unit length if ``unit``); MeshError naming ``what``."""
    try:
        v = np.asarray(value, float)
    except (TypeError, ValueError):
        v = np.zeros(0)
    if v.shape != (3,) or not np.isfinite(v).all():
        raise MeshError(f"{what}={value!r} must be three finite numbers (x, y, z) in metres")
    if unit:
        n = np.linalg.norm(v)
        if n == 0.0:
            raise MeshError(f"{what}={value!r} is the zero vector; give a direction")
        v = v / n
    return v


def _positive(value, what, allow_none=False):
    if value is None and allow_none:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        f = float("nan")
    if isinstance(value, bool) or not np.isfinite(f) or f < 0 or (f == 0 and not allow_none):
        raise MeshError(
            f"{what}={value!r} must be a finite number {'>= 0' if allow_none else '> 0'} (metres)"
        )
    return f


class Selector:
    def __call__(self, fe: FEMesh) -> NDArray[np.intp]:
        raise NotImplementedError

    def __or__(self, other):
        return _Combine(self, other, np.union1d, "|")

    def __and__(self, other):
        return _Combine(self, other, np.intersect1d, "&")

    def _tol(self, fe):
        return self.tol if self.tol is not None else 1e-6 * fe.size()


class _Combine(Selector):
    def __init__(self, a, b, op, sym):
        self.a, self.b, self.op, self.sym = a, b, op, sym

    def __call__(self, fe):
        return self.op(_nodes(fe, self.a), _nodes(fe, self.b))

    def __repr__(self):
        return f"({self.a!r} {self.sym} {self.b!r})"


class Plane(Selector):
    """Nodes within ``tol`` of the plane through ``point`` with normal ``normal``."""

    def __init__(self, point: ArrayLike, normal: ArrayLike, tol: float | None = None) -> None:
        self.point = _vec3(point, "Plane: point")
        self.normal = _vec3(normal, "Plane: normal", unit=True)
        self.tol = _positive(tol, "Plane: tol", allow_none=True)

    def __call__(self, fe: FEMesh) -> NDArray[np.intp]:
        d = (fe.nodes - self.point) @ self.normal
        return np.nonzero(np.abs(d) <= self._tol(fe))[0]

    def __repr__(self):
        return f"Plane(point={self.point.tolist()}, normal={self.normal.tolist()})"


class Box(Selector):
    """Nodes inside the axis-aligned box [lo, hi] (inclusive, widened by ``tol``)."""

    def __init__(self, lo: ArrayLike, hi: ArrayLike, tol: float | None = None) -> None:
        self.lo, self.hi = _vec3(lo, "Box: lo"), _vec3(hi, "Box: hi")
        if (self.lo > self.hi).any():
            raise MeshError(
                f"Box: lo={self.lo.tolist()} exceeds hi={self.hi.tolist()} in some "
                "coordinate; give the lower corner first"
            )
        self.tol = _positive(tol, "Box: tol", allow_none=True)

    def __call__(self, fe: FEMesh) -> NDArray[np.intp]:
        t = self._tol(fe)
        x = fe.nodes
        return np.nonzero(((x >= self.lo - t) & (x <= self.hi + t)).all(axis=1))[0]

    def __repr__(self):
        return f"Box(lo={self.lo.tolist()}, hi={self.hi.tolist()})"


class Cylinder(Selector):
    """Nodes on the cylinder surface (default) or inside it.

    Parameters
    ----------
    point, axis : array_like
        A point on the axis and the axis direction.
    radius : float
    tol : float, optional
        Radial tolerance for ``surface=True``.
    surface : bool
        True: ``abs(r - radius) <= tol`` (a bore); False: ``r <= radius + tol``.
    length : (float, float), optional
        Axial range (along ``axis`` from ``point``).
    """

    def __init__(
        self,
        point: ArrayLike,
        axis: ArrayLike,
        radius: float,
        tol: float | None = None,
        surface: bool = True,
        length: float | None = None,
    ) -> None:
        self.point = _vec3(point, "Cylinder: point")
        self.axis = _vec3(axis, "Cylinder: axis", unit=True)
        self.radius = _positive(radius, "Cylinder: radius")
        self.tol = _positive(tol, "Cylinder: tol", allow_none=True)
        self.surface, self.length = surface, length

    def __call__(self, fe: FEMesh) -> NDArray[np.intp]:
        t = self._tol(fe)
        d = fe.nodes - self.point
        s = d @ self.axis
        r = np.linalg.norm(d - np.outer(s, self.axis), axis=1)
        ok = np.abs(r - self.radius) <= t if self.surface else r <= self.radius + t
        if self.length is not None:
            ok &= (s >= self.length[0] - t) & (s <= self.length[1] + t)
        return np.nonzero(ok)[0]

    def __repr__(self):
        return (
            f"Cylinder(point={self.point.tolist()}, axis={self.axis.tolist()}, "
            f"radius={self.radius}, surface={self.surface})"
        )


class Sphere(Selector):
    """Nodes within ``radius`` of ``center``."""

    def __init__(self, center: ArrayLike, radius: float) -> None:
        self.center = _vec3(center, "Sphere: center")
        self.radius, self.tol = _positive(radius, "Sphere: radius"), None

    def __call__(self, fe: FEMesh) -> NDArray[np.intp]:
        return np.nonzero(np.linalg.norm(fe.nodes - self.center, axis=1) <= self.radius)[0]

    def __repr__(self):
        return f"Sphere(center={self.center.tolist()}, radius={self.radius})"


class Nearest(Selector):
    """The ``n`` nodes nearest to ``point``."""

    def __init__(self, point: ArrayLike, n: int = 1) -> None:
        self.point = _vec3(point, "Nearest: point")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise MeshError(f"Nearest: n={n!r} must be a whole number of nodes >= 1")
        self.n = int(n)

    def __call__(self, fe: FEMesh) -> NDArray[np.intp]:
        d = np.linalg.norm(fe.nodes - self.point, axis=1)
        return np.sort(np.argsort(d, kind="stable")[: self.n])

    def __repr__(self):
        return f"Nearest(point={self.point.tolist()}, n={self.n})"


class NodeSet(Selector):
    """A named node set of the mesh (gmsh physical group, Abaqus NSET/ELSET, ...)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, fe: FEMesh) -> NDArray[np.int64]:
        if self.name not in fe.node_sets:
            raise MeshError(
                f"node set {self.name!r} is not in mesh {fe.source!r}; "
                f"available sets: {sorted(fe.node_sets) or 'none'}"
            )
        return np.asarray(fe.node_sets[self.name], dtype=np.int64)

    def __repr__(self):
        return f"NodeSet({self.name!r})"


class Nodes(Selector):
    """Explicit scikit-fem node numbers."""

    def __init__(self, ids: ArrayLike) -> None:
        a = np.asarray(ids)
        if a.dtype.kind not in "iu" and not (
            a.size == 0 or (a.dtype.kind == "f" and np.all(a == np.round(a)))
        ):
            raise MeshError(
                f"Nodes: {ids!r} must be node numbers (integers); for a named set "
                "give its name, for a region a selector such as Plane or Box"
            )
        self.ids = np.unique(a.astype(np.int64).ravel())

    def __call__(self, fe: FEMesh) -> NDArray[np.int64]:
        if len(self.ids) and (self.ids.min() < 0 or self.ids.max() >= fe.n_nodes):
            raise MeshError(
                f"node numbers out of range 0..{fe.n_nodes - 1}: "
                f"{self.ids[(self.ids < 0) | (self.ids >= fe.n_nodes)][:5].tolist()}"
            )
        return self.ids

    def __repr__(self):
        return f"Nodes({len(self.ids)} nodes)"


def as_selector(obj):
    if isinstance(obj, Selector):
        return obj
    if isinstance(obj, str):
        return NodeSet(obj)
    if callable(obj):
        return _Callable(obj)
    return Nodes(obj)


class _Callable(Selector):
    """f(x) -> boolean mask over node coordinates (n_nodes, 3)."""

    def __init__(self, f):
        self.f = f

    def __call__(self, fe):
        return np.nonzero(np.asarray(self.f(fe.nodes), dtype=bool))[0]

    def __repr__(self):
        return f"<callable {getattr(self.f, '__name__', 'selector')}>"


def _nodes(fe, obj):
    return np.unique(np.asarray(as_selector(obj)(fe), dtype=np.int64))


def select(fe: FEMesh, selector: Any, name: str | None = "selection") -> NDArray[np.int64]:
    """Node numbers selected by ``selector``; MeshError naming ``name`` if none."""
    ids = _nodes(fe, selector)
    if len(ids) == 0:
        lo, hi = fe.bounding_box()
        raise MeshError(
            f"{name}: {as_selector(selector)!r} selects no nodes of mesh {fe.source!r} "
            f"(bounding box {np.round(lo, 6).tolist()} .. {np.round(hi, 6).tolist()}); check the "
            "coordinates and units, or widen tol"
        )
    return ids
