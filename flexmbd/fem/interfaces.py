"""Interfaces: node sets that connect a flexible body to joints and loads.

Each interface has a frame at ``origin`` (default: the centroid of its nodes)
and three kinds of coupling (``kind``):

- ``"rigid"`` (RBE2-like): the nodes move as a rigid body with the frame,
  ``u_a = t + theta x (x_a - origin)``; 6 interface DOFs ``q = [theta; t]``.
- ``"distributing"`` (RBE3-like): the frame follows the weighted least-squares
  rigid fit of the node motions, ``q = W u_N``; the nodes deform freely
  otherwise; forces on the frame are spread as ``f_N = W^T w``.
- ``"nodes"``: every node DOF is an interface DOF.

Generalized vectors follow the package convention [angular; linear].
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..errors import MeshError
from .eigen import rigid_modes
from .selectors import as_selector, select

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from .._typing import Array, ArrayLike
    from .mesh import FEMesh

__all__ = ["Interface", "make_interfaces", "interface_transform", "KINDS"]

KINDS = ("rigid", "distributing", "nodes")


class Interface:
    """A named interface: nodes, coupling kind and frame origin."""

    def __init__(
        self,
        name: str,
        nodes: ArrayLike,
        kind: str,
        x_nodes: ArrayLike,
        origin: ArrayLike | None = None,
        selector: Any | None = None,
    ) -> None:
        if kind not in KINDS:
            raise MeshError(
                f"interface {name!r}: unknown interface_kind {kind!r}; use one of {KINDS}"
            )
        self.name, self.kind, self.selector = name, kind, selector
        self.nodes = np.asarray(nodes, dtype=np.int64)
        x = np.asarray(x_nodes, float)
        self.origin = x.mean(axis=0) if origin is None else np.asarray(origin, float)
        self.G = rigid_modes(x, self.origin)  # (3k, 6): u_N = G q
        w = np.ones(len(self.nodes))
        Gw = self.G * np.repeat(w, 3)[:, None]
        A = self.G.T @ Gw
        s = np.linalg.svd(A, compute_uv=False)
        if kind != "nodes" and (len(self.nodes) < 3 or s[-1] <= 1e-10 * s[0]):
            raise MeshError(
                f"interface {name!r}: {len(self.nodes)} node(s) do not fix a frame (they lie on "
                "a line or are fewer than 3); a rigid or distributing interface needs >= 3 "
                "non-collinear nodes — select more nodes or use interface_kind='nodes'"
            )
        self.W = np.linalg.solve(A, Gw.T) if s[-1] > 1e-10 * s[0] else np.linalg.pinv(self.G)
        self.dofs = (3 * self.nodes[:, None] + np.arange(3)).ravel()

    @property
    def n_dofs(self) -> int:
        return 6 if self.kind in ("rigid", "distributing") else len(self.dofs)

    def load(self, wrench: ArrayLike, n_dofs: int) -> Array:
        """Full-space nodal force vector(s) of wrench(es) ``[moment; force]`` (6,) or (6, m)."""
        w = np.asarray(wrench, float)
        F = np.zeros((n_dofs,) + w.shape[1:])
        F[self.dofs] = self.W.T @ w
        return F

    def frame_motion(self, U: Array) -> Array:
        """Frame motion [rotation; translation] (6, m) of displacement columns U (3n, m)."""
        return self.W @ U[self.dofs]

    def describe(self) -> str:
        return (
            f"{self.name}: {self.kind}, {len(self.nodes)} nodes, "
            f"origin {np.round(self.origin, 6).tolist()}"
        )


def make_interfaces(
    fe: FEMesh, spec: Any, kind: str = "rigid", origins: Mapping[str, ArrayLike] | None = None
) -> dict[str, Interface]:
    """Build `Interface` objects from ``{name: selector}`` (ordered)."""
    out = {}
    spec = spec or {}
    if isinstance(spec, (list, tuple)):
        spec = {f"I{i + 1}": s for i, s in enumerate(spec)}
    for name, sel in spec.items():
        k = kind[name] if isinstance(kind, dict) else kind
        org = (origins or {}).get(name)
        if isinstance(sel, Interface):
            out[name] = sel
            continue
        nodes = select(fe, sel, f"interface {name!r}")
        out[name] = Interface(name, nodes, k, fe.nodes[nodes], org, as_selector(sel))
    names = list(out)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            common = np.intersect1d(out[a].nodes, out[b].nodes)
            if len(common):
                raise MeshError(
                    f"interfaces {a!r} and {b!r} share {len(common)} node(s); "
                    "make the selections disjoint"
                )
    return out


def interface_transform(
    n_dofs: int, interfaces: Sequence[Interface], fixed_dofs: ArrayLike | None = ()
) -> tuple[Any, int, dict[str, Array]]:
    """Transformation u = T z from reduced to full DOFs for CB partitioning.

    ``z = [z_i; z_b]``: interior DOFs first (every full DOF that is neither
    eliminated nor a boundary DOF), then the boundary DOFs of each interface in
    order.  ``fixed_dofs`` are removed (zero).  Returns ``(T, n_i, slices)``,
    with ``slices[name]`` the positions of each interface's boundary DOFs in z.
    """
    eliminated = np.zeros(n_dofs, bool)
    eliminated[np.asarray(fixed_dofs, dtype=np.int64)] = True
    masters = {}
    for itf in interfaces.values():
        if itf.kind == "nodes":
            eliminated[itf.dofs] = True
        elif itf.kind == "rigid":
            eliminated[itf.dofs] = True
        else:  # distributing: eliminate 6 master dofs chosen by pivoted QR of W
            _, _, piv = sla.qr(itf.W, pivoting=True, mode="economic")
            m = np.sort(piv[:6])
            masters[itf.name] = m
            eliminated[itf.dofs[m]] = True
    interior = np.nonzero(~eliminated)[0]
    n_i = len(interior)
    rows, cols, vals = [interior], [np.arange(n_i)], [np.ones(n_i)]
    col_of = -np.ones(n_dofs, dtype=np.int64)
    col_of[interior] = np.arange(n_i)
    slices, nb = {}, n_i
    for itf in interfaces.values():
        sl = np.arange(nb, nb + itf.n_dofs)
        slices[itf.name] = sl
        nb += itf.n_dofs
        if itf.kind == "nodes":
            rows.append(itf.dofs)
            cols.append(sl)
            vals.append(np.ones(len(sl)))
        elif itf.kind == "rigid":
            r, c = np.nonzero(itf.G)
            rows.append(itf.dofs[r])
            cols.append(sl[c])
            vals.append(itf.G[r, c])
        else:
            m = masters[itf.name]
            s = np.setdiff1d(np.arange(len(itf.dofs)), m)
            Wm_inv = np.linalg.inv(itf.W[:, m])
            A = -Wm_inv @ itf.W[:, s]  # u_m = A u_s + Wm_inv q
            rr, cc = np.meshgrid(np.arange(6), np.arange(len(s)), indexing="ij")
            rows.append(itf.dofs[m][rr.ravel()])
            cols.append(col_of[itf.dofs[s]][cc.ravel()])
            vals.append(A.ravel())
            rr, cc = np.meshgrid(np.arange(6), np.arange(6), indexing="ij")
            rows.append(itf.dofs[m][rr.ravel()])
            cols.append(sl[cc.ravel()])
            vals.append(Wm_inv.ravel())
    T = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_dofs, nb)
    )
    return T, n_i, slices
