"""Mode-set strategies: normal modes, static correction, Craig-Bampton, Ritz vectors.

Every strategy has the same interface: ``strategy.build(model, interfaces=None)``
returns a `ModeSet` — full-space mode shapes, their kinds and labels, the
floating-frame convention, and the static solver whose supports match that
convention (used for the unit geometric-stiffness load cases).

Mode counts (`flexmbd.fem.modecount`): each strategy names its parts —
``NormalModes(n_modes)``, ``StaticCorrection(n_normal, loads)``,
``CraigBampton(n_fixed, interfaces)``, ``RitzVectors(n_vectors, load)`` — and
``n_total(model=None)`` / ``describe(model=None)`` give the total, e.g.
"8 fixed-interface + 6 constraint = 14 modes".  ``StaticCorrection`` and
``CraigBampton`` also take ``n_total=`` (keyword) instead, the meaning of
``flexmbd reduce --modes``.

Floating-frame conventions
--------------------------
free-free bases
    (``NormalModes(n_modes)``, ``StaticCorrection(..., fixed=None)``,
    ``RitzVectors(..., fixed=None)``, ``CraigBampton(..., frame="mean-axis")``)
    *mean axes*: every mode is M-orthogonal to the six rigid-body modes, i.e.
    ``int rho u dV = 0`` and ``int rho x0 x u dV = 0``.  Static shapes use
    inertia relief (the load minus its rigid-body d'Alembert part).
clamped bases (``fixed=selector``)
    the body frame is attached to the fixed nodes: every mode is zero there.
``CraigBampton(..., frame="interface")``
    the body frame is the frame of the *reference interface* (``reference=``,
    default the first one).  Its constraint modes are the rigid-body modes
    relative to that frame and are dropped (rigid / distributing: its 6 frame
    DOFs; nodes: the 6 least-squares rigid motions of its nodes), so every
    mode leaves the reference frame fixed.  `ReducedBody.info` prints this.
    A stiffened ``FlexibleBody.from_mesh`` body whose reference interface a
    joint lets rotate is reduced on mean axes instead and integrated there: the
    clamped frame with exact kinematics of its rigid part
    (:func:`flexmbd.model.flexible.pinned_interface_map`).
``CraigBampton(..., frame="auto")`` (default)
    one of the two above, chosen where the body's use is known
    (`resolve_auto_frame`): a :class:`flexmbd.FlexibleBody` built with
    ``from_mesh`` reduces inside its model and takes mean axes when it is
    geometrically stiffened and a joint that leaves rotation free attaches its
    reference interface, the interface frame otherwise; a reduction outside a
    model (`flexmbd.fem.reduce`, ``flexmbd reduce``) takes mean axes when it
    computes geometric stiffness and the interface frame when it does not.  A
    direct ``build`` (no stiffening) takes the interface frame.  The choice and
    its reason are in the mode set's notes (`ReducedBody.info`).
"""

from __future__ import annotations

import copy
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..errors import MeshError, SolverError
from .eigen import SPDFactor, eigsh_shift_invert
from .interfaces import Interface, interface_transform
from .modecount import count_text, count_text_from_kinds, whole_count
from .selectors import as_selector, select

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .._typing import Array, ArrayLike
    from .model import FEModel

    Loads = Any  # interface names, PointLoad objects, selectors or {name: load}

__all__ = [
    "NormalModes",
    "StaticCorrection",
    "CraigBampton",
    "RitzVectors",
    "ModeSet",
    "PointLoad",
    "Strategy",
    "load_columns",
    "constraint_count",
    "resolve_auto_frame",
    "CB_FRAMES",
]

CB_FRAMES = ("auto", "interface", "mean-axis")
"""The frame choices of `CraigBampton` (``"auto"`` resolved by `resolve_auto_frame`)."""

_FRAME_COMPONENTS = ("rx", "ry", "rz", "tx", "ty", "tz")


mode_count = whole_count  # the count check, shared with modecount.py


def check_mode_count(n, available, what, model, fix):
    """MeshError before any eigen solve if ``n`` modes exceed the ``available`` DOFs."""
    if n > available:
        raise MeshError(
            f"{what}={n} asks for more modes than mesh {model.fe.source!r} can give: it has "
            f"{model.n_dofs} DOFs, {available} available for these modes ({fix}); ask for "
            f"at most {available}, typically far fewer (a few dozen), or refine the mesh"
        )


class ModeSet:
    """Result of a strategy: mode shapes (3n x m) in the body frame and bookkeeping.

    ``description`` is the mode count as text ("8 fixed-interface + 6 constraint = 14
    modes"), taken before any re-diagonalization; default from ``kinds``.
    """

    def __init__(
        self,
        Phi,
        kinds,
        labels,
        frame,
        support,
        static,
        reference=None,
        interfaces=None,
        strategy="",
        notes=(),
        description=None,
    ):
        self.Phi = np.asarray(Phi, float)
        self.kinds, self.labels = list(kinds), list(labels)
        self.frame, self.support, self.static = frame, support, static
        self.reference, self.interfaces = reference, dict(interfaces or {})
        self.strategy, self.notes = strategy, list(notes)
        self.description = description or count_text_from_kinds(self.kinds)
        self.mix = [""] * self.Phi.shape[1]
        self.timings = {}  # cost of the strategy's steps (s), merged into ReducedBody.timings


class PointLoad:
    """A load on selected nodes, spread like a distributing (RBE3) interface.

    ``force`` (3,) and ``moment`` (3,) about the nodes' centroid; with neither
    given, the six unit wrenches (moments x, y, z; forces x, y, z).
    """

    def __init__(
        self,
        selector: Any,
        force: ArrayLike | None = None,
        moment: ArrayLike | None = None,
        name: str | None = None,
    ) -> None:
        self.selector, self.name = selector, name
        self.force = None if force is None else np.asarray(force, float)
        self.moment = None if moment is None else np.asarray(moment, float)

    def vectors(self, model: FEModel, name: str) -> tuple[Array, list[str]]:
        """Full-space nodal force vectors (3n, k) (N) of the load and their labels."""
        nodes = select(model.fe, self.selector, f"load {name!r}")
        itf = Interface(name, nodes, "nodes", model.fe.nodes[nodes])
        if self.force is None and self.moment is None:
            W = np.eye(6)
            labels = [f"{name}.{c}" for c in ("mx", "my", "mz", "fx", "fy", "fz")]
        else:
            m = np.zeros(3) if self.moment is None else self.moment
            f = np.zeros(3) if self.force is None else self.force
            W = np.concatenate([m, f])[:, None]
            labels = [name]
        return itf.load(W, model.n_dofs), labels


def resolve_loads(model, loads, interfaces, where):
    """Full-space load vectors (3n x m) and labels from a load specification.

    Items: an interface name (its six unit wrenches), a `PointLoad`, or an
    array (3n,) / (3n, m).
    """
    if loads is None:
        raise MeshError(f"{where}: no loads given")
    if isinstance(loads, (str, PointLoad, np.ndarray)):
        loads = [loads]
    if isinstance(loads, dict):
        loads = [
            PointLoad(v, name=k) if not isinstance(v, PointLoad) else v for k, v in loads.items()
        ]
    cols, labels = [], []
    for k, item in enumerate(loads):
        if isinstance(item, str):
            if item not in interfaces:
                raise MeshError(
                    f"{where}: load {item!r} is not an interface name; interfaces: "
                    f"{sorted(interfaces) or 'none'} (pass interfaces= to reduce)"
                )
            itf = interfaces[item]
            cols.append(itf.load(np.eye(6), model.n_dofs))
            labels += [f"{item}.{c}" for c in ("mx", "my", "mz", "fx", "fy", "fz")]
        elif isinstance(item, PointLoad):
            F, lab = item.vectors(model, item.name or f"P{k + 1}")
            cols.append(F)
            labels += lab
        else:
            try:
                F = np.asarray(item, float)
            except (TypeError, ValueError):
                F = np.zeros(0)
            if F.ndim not in (1, 2) or F.size == 0:
                raise MeshError(
                    f"{where}: load {item!r} is not an interface name, a PointLoad "
                    "or an array of nodal forces (3n,) / (3n, m)"
                )
            F = F.reshape(F.shape[0], -1)
            if F.shape[0] != model.n_dofs:
                raise MeshError(
                    f"{where}: load array has {F.shape[0]} rows; the mesh has "
                    f"{model.n_dofs} DOFs (3 per node, node-interleaved)"
                )
            if not np.isfinite(F).all():
                raise MeshError(
                    f"{where}: load array {k + 1} has non-finite (NaN or inf) "
                    "entries; give finite forces (N)"
                )
            cols.append(F)
            labels += (
                [f"F{k + 1}.{j}" for j in range(F.shape[1])] if F.shape[1] > 1 else [f"F{k + 1}"]
            )
    return np.hstack(cols), labels


def load_columns(loads):
    """Number of load vectors in a load specification (see `resolve_loads`), no mesh needed.

    An interface name or a `PointLoad` without force and moment: its 6 unit wrenches; a
    `PointLoad` with force or moment: 1; an array (3n,) / (3n, m): 1 / m.
    """
    if loads is None:
        return 0
    if isinstance(loads, (str, PointLoad, np.ndarray)):
        loads = [loads]
    if isinstance(loads, dict):
        loads = [v if isinstance(v, PointLoad) else PointLoad(v, name=k) for k, v in loads.items()]
    n = 0
    for item in loads:
        if isinstance(item, str):
            n += 6
        elif isinstance(item, PointLoad):
            n += 6 if item.force is None and item.moment is None else 1
        else:
            try:
                shape = np.shape(np.asarray(item, float))
            except (TypeError, ValueError):
                shape = ()
            n += int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return n


def m_gram_schmidt(V, M, basis=None, tol=1e-8):
    """M-orthonormalize the columns of V (twice, modified G-S), also against ``basis``.

    Columns whose M-norm falls below ``tol`` times their original norm are dropped.
    Returns (Q, kept_indices).
    """
    Q, kept = [], []
    B = basis if basis is not None and basis.shape[1] else None
    MB = M @ B if B is not None else None
    for j in range(V.shape[1]):
        v = V[:, j].copy()
        n0 = np.sqrt(max(v @ (M @ v), 0.0))
        if n0 == 0.0:
            continue
        for _ in range(2):
            if B is not None:
                v -= B @ (MB.T @ v)
            for q, mq in Q:
                v -= q * (mq @ v)
        nv = np.sqrt(max(v @ (M @ v), 0.0))
        if nv <= tol * n0:
            continue
        v /= nv
        Q.append((v, M @ v))
        kept.append(j)
    if not Q:
        return np.zeros((V.shape[0], 0)), kept
    return np.column_stack([q for q, _ in Q]), kept


def rayleigh_ritz(Phi, K, M):
    """Re-diagonalize: eigenvectors X of the reduced problem; returns (lam, Phi X, X)."""
    Kr, Mr = Phi.T @ (K @ Phi), Phi.T @ (M @ Phi)
    Kr, Mr = 0.5 * (Kr + Kr.T), 0.5 * (Mr + Mr.T)
    lam, X = sla.eigh(Kr, Mr)
    return lam, Phi @ X, X


class _Clamped:
    """Factor and solves of a body with fixed node DOFs removed."""

    def __init__(self, model, fixed_nodes):
        n = model.n_dofs
        fixed = model.dofs_of(fixed_nodes)
        mask = np.ones(n, bool)
        mask[fixed] = False
        self.free = np.nonzero(mask)[0]
        if len(self.free) == 0:
            raise MeshError(
                f"fixed nodes of mesh {model.fe.source!r}: every one of its "
                f"{model.fe.n_nodes} nodes is fixed, nothing is left to deform; "
                "select only the supported face (e.g. fm.fem.Plane(...))"
            )
        self.n = n
        self.Kff = model.K[self.free][:, self.free]
        self.Mff = model.M[self.free][:, self.free]
        self.factor = SPDFactor(self.Kff, model.backend, name="clamped stiffness (fixed nodes)")

    def solve(self, F):
        F = np.asarray(F, float)
        U = np.zeros_like(F)
        U[self.free] = self.factor.solve(F[self.free])
        return U

    def eig(self, k, where=None):
        groups = None if where is None else (where, 0)
        lam, V = eigsh_shift_invert(self.Kff, self.Mff, k, 0.0, self.factor, whole_groups=groups)
        Phi = np.zeros((self.n, V.shape[1]))
        Phi[self.free] = V
        return lam, Phi


class Strategy:
    """Base class; subclasses implement ``build(model, interfaces)``."""

    orthonormalize = False
    interfaces = None
    interface_kind = "rigid"
    # a strategy of one kind of mode: (attribute holding the count, kind of mode)
    _count: tuple[str, str] | None = None

    @property
    def n(self) -> int:
        """Alias of the count of a strategy of one kind of mode (``n_modes``,
        ``n_vectors``: the names before the count had one meaning)."""
        if self._count is None:
            raise AttributeError(f"{type(self).__name__} has no single count n: see n_total()")
        return getattr(self, self._count[0])

    def _parts(self, model=None):
        """``[(count, kind of mode), ...]`` of the basis (one part by default)."""
        return [(self.n, self._count[1])]

    def _fixed_nodes(self, model):
        if self.fixed is None:
            return None
        return select(model.fe, self.fixed, f"{type(self).__name__} fixed nodes")

    def _normal(self, model, n, fixed_nodes):
        """Normal modes (free-free, rigid modes removed, or clamped) and the static solver."""
        where = f"{type(self).__name__}: " + (
            "n_modes" if isinstance(self, NormalModes) else "n_normal"
        )
        if fixed_nodes is None:
            check_mode_count(
                n, model.n_dofs - 6, where, model, "minus the 6 rigid-body modes of the free body"
            )
            sigma, factor, relieved = model.free_solver()
            lam, V = eigsh_shift_invert(
                model.K, model.M, n + 6, sigma, factor, whole_groups=(where, 6)
            )
            zero = np.abs(lam) < 1e-4 * abs(sigma) + 1e-12 * abs(lam).max()
            nz = int(zero.sum())
            if nz != 6 or not zero[:6].all():
                raise MeshError(
                    f"mesh {model.fe.source!r}: expected 6 rigid-body modes, found {nz} near-zero "
                    "eigenvalues; the mesh may have disconnected parts or free nodes — check "
                    "the mesh or constrain it with fixed="
                )
            V = relieved.project(V[:, 6:])
            V = V / np.sqrt(np.einsum("ij,ij->j", V, model.M @ V))
            return lam[6:], V, relieved.solve, "free"
        cl = _Clamped(model, fixed_nodes)
        check_mode_count(
            n,
            len(cl.free),
            where,
            model,
            f"{len(fixed_nodes)} fixed nodes remove {3 * len(fixed_nodes)}",
        )
        lam, V = cl.eig(n, where)
        return lam, V, cl.solve, "clamped"

    @staticmethod
    def _frame_text(support):
        if support == "free":
            return (
                "mean axes: modes M-orthogonal to the rigid-body modes "
                "(int rho u dV = 0, int rho x0 x u dV = 0); static shapes by inertia relief"
            )
        return "attached to the fixed nodes: every mode is zero there (clamped basis)"

    def build(self, model: FEModel, interfaces: Mapping[str, Interface] | None = None) -> ModeSet:
        """The `ModeSet` (mode shapes, body frame, bookkeeping) of this strategy on the
        finite-element ``model`` with the given interfaces (body frame per the module
        docstring)."""
        raise NotImplementedError(f"{type(self).__name__}.build")

    def n_total(self, model: FEModel | None = None) -> int:
        """Total number of modes of the basis: the one meaning of a mode count.

        ``model`` (`FEModel`) is needed only where the count depends on the mesh
        (Craig-Bampton with ``"nodes"`` interfaces).
        """
        return sum(n for n, _ in self._parts(model))

    def describe(self, model: FEModel | None = None) -> str:
        """The mode count as text, e.g. "8 fixed-interface + 6 constraint = 14 modes"."""
        return count_text(self._parts(model), self._n_loads())

    def _n_loads(self):
        return None


class NormalModes(Strategy):
    """The ``n_modes`` lowest normal modes, free-free (rigid modes removed) or clamped.

    Parameters
    ----------
    n_modes : int
        Number of modes (>= 1), the total of the basis (first positional argument).
    fixed : selector, optional
        Clamped basis; default free-free (mean axes, inertia relief).

    >>> NormalModes(n_modes=8)
    NormalModes(n_modes=8, fixed=None)
    >>> NormalModes(8).describe()
    '8 normal modes'
    """

    def __init__(self, n_modes: int, fixed: Any = None, orthonormalize: bool = False) -> None:
        self.n_modes = mode_count(n_modes, "NormalModes: n_modes")
        self.fixed, self.orthonormalize = fixed, orthonormalize

    _count = ("n_modes", "normal")

    def __repr__(self):
        return f"NormalModes(n_modes={self.n_modes}, fixed={self.fixed!r})"

    def build(self, model: FEModel, interfaces: Mapping[str, Interface] | None = None) -> ModeSet:
        lam, V, static, support = self._normal(model, self.n_modes, self._fixed_nodes(model))
        return ModeSet(
            V,
            ["normal"] * V.shape[1],
            [f"normal {i + 1}" for i in range(V.shape[1])],
            self._frame_text(support),
            support,
            static,
            interfaces=interfaces,
            strategy=repr(self),
            description=self.describe(),
        )


class StaticCorrection(Strategy):
    """Normal modes plus static correction modes for unit loads (review eq. 1-6).

    The static shapes are M-orthogonalized against the normal modes by
    Gram-Schmidt, scaled to unit modal mass (a well-conditioned modal mass,
    review after eq. 3) and, with ``orthonormalize=True`` (default), the whole
    set is re-diagonalized by the reduced eigenproblem (eq. 4-6).

    The total is ``n_normal`` plus one static mode per load vector (6 per interface
    name or wrench-free `PointLoad`, 1 per `PointLoad` with a force or moment, m per
    (3n, m) array); a static shape already in the span of the others is dropped and
    the build notes it.

    Parameters
    ----------
    n_normal : int
        Number of normal modes (>= 0; first positional argument).
    loads : interface name, `PointLoad`, array (3n,) / (3n, m), or a list of them
    fixed : selector, optional
        Clamped basis; default free-free (mean axes, inertia relief).
    n_total : int, optional (keyword only)
        The total instead of ``n_normal``: ``n_normal = n_total - static modes``
        (what ``flexmbd reduce --modes`` means).

    >>> StaticCorrection(n_normal=6, loads=[PointLoad("tip", force=(0, 1, 0)),
    ...                                     PointLoad("tip", force=(0, 0, 1)),
    ...                                     PointLoad("mid", force=(0, 1, 0)),
    ...                                     PointLoad("mid", force=(0, 0, 1))]).describe()
    '6 normal + 4 static-correction = 10 modes'
    """

    def __init__(
        self,
        n_normal: int | None = None,
        loads: Loads = None,
        fixed: Any = None,
        orthonormalize: bool = True,
        *,
        n_total: int | None = None,
    ) -> None:
        if loads is None:
            raise MeshError(
                "StaticCorrection: no loads given; give loads=, e.g. loads=['B'] "
                "(an interface) or loads=fm.fem.PointLoad(selector, force=(0, 0, 1))"
            )
        self.loads, self.fixed = loads, fixed
        self.orthonormalize = orthonormalize
        n_static = load_columns(loads)
        if (n_normal is None) == (n_total is None):
            raise MeshError(
                "StaticCorrection: give exactly one of n_normal (normal modes) and "
                "n_total (normal + static-correction modes)"
            )
        if n_total is not None:
            n_total = mode_count(n_total, "StaticCorrection: n_total")
            if n_total < n_static:
                raise MeshError(
                    f"StaticCorrection: n_total={n_total} is fewer than the {n_static} "
                    f"static-correction modes of loads {loads!r}; ask for at least {n_static} "
                    "(the rest are normal modes) or give fewer loads"
                )
            n_normal = n_total - n_static
        # 0 normal modes: the static correction modes alone
        self.n_normal = mode_count(n_normal, "StaticCorrection: n_normal", minimum=0)
        self.n_static = n_static

    def _parts(self, model=None):
        return [(self.n_normal, "normal"), (self.n_static, "static-correction")]

    def __repr__(self):
        return (
            f"StaticCorrection(n_normal={self.n_normal}, loads={self.loads!r}, "
            f"fixed={self.fixed!r})"
        )

    def build(self, model: FEModel, interfaces: Mapping[str, Interface] | None = None) -> ModeSet:
        fixed = self._fixed_nodes(model)
        lam, V, static, support = self._normal(model, self.n_normal, fixed)
        F, labels = resolve_loads(model, self.loads, interfaces or {}, "StaticCorrection")
        S = static(F)
        Q, kept = m_gram_schmidt(S, model.M, basis=V)
        notes = []
        if len(kept) < S.shape[1]:
            dropped = [labels[j] for j in range(S.shape[1]) if j not in kept]
            notes.append(f"static modes {dropped} dropped: already in the span of the others")
        Phi = np.hstack([V, Q])
        kinds = ["normal"] * V.shape[1] + ["static-correction"] * Q.shape[1]
        labs = [f"normal {i + 1}" for i in range(V.shape[1])]
        labs += [f"static {labels[j]}" for j in kept]
        text = count_text([(V.shape[1], "normal"), (Q.shape[1], "static-correction")])
        return ModeSet(
            Phi,
            kinds,
            labs,
            self._frame_text(support),
            support,
            static,
            interfaces=interfaces,
            strategy=repr(self),
            notes=notes,
            description=text,
        )


class RitzVectors(Strategy):
    """Load-dependent Ritz vectors (review eq. 9-12).

    ``K phi_1 = F`` (static deflection), then ``K phi_i = M phi_{i-1}``, each
    M-orthogonalized (Gram-Schmidt, twice) against the previous vectors and
    M-normalized.  A load with several columns gives block Ritz vectors.
    Free-free: inertia relief and mean axes; ``fixed``: clamped.

    Parameters
    ----------
    n_vectors : int
        Number of Ritz vectors (>= 1), the total of the basis (first positional argument).
    load : interface name, `PointLoad`, array (3n,) / (3n, m), or a list of them
    fixed : selector, optional
        Clamped basis; default free-free.

    >>> RitzVectors(n_vectors=8, load=["A"]).describe()
    '8 Ritz vectors (6 loads)'
    """

    def __init__(
        self, n_vectors: int, load: Loads, fixed: Any = None, orthonormalize: bool = False
    ) -> None:
        self.n_vectors = mode_count(n_vectors, "RitzVectors: n_vectors")
        self.load, self.fixed = load, fixed
        self.orthonormalize = orthonormalize

    _count = ("n_vectors", "Ritz")

    def _n_loads(self):
        return load_columns(self.load)

    def __repr__(self):
        return f"RitzVectors(n_vectors={self.n_vectors}, load={self.load!r}, fixed={self.fixed!r})"

    def build(self, model: FEModel, interfaces: Mapping[str, Interface] | None = None) -> ModeSet:
        fixed = self._fixed_nodes(model)
        if fixed is None:
            _, _, relieved = model.free_solver()
            static, support = relieved.solve, "free"
        else:
            static, support = _Clamped(model, fixed).solve, "clamped"
        F, labels = resolve_loads(model, self.load, interfaces or {}, "RitzVectors")
        available = model.n_dofs - 6 if fixed is None else model.n_dofs - 3 * len(fixed)
        check_mode_count(
            self.n_vectors,
            available,
            "RitzVectors: n_vectors",
            model,
            "minus the 6 rigid-body modes" if fixed is None else "minus fixed DOFs",
        )
        X = static(F)
        Q = np.zeros((model.n_dofs, 0))
        blocks = 0
        while Q.shape[1] < self.n_vectors:
            Qn, kept = m_gram_schmidt(X, model.M, basis=Q)
            if Qn.shape[1] == 0:
                break
            Q = np.hstack([Q, Qn[:, : self.n_vectors - Q.shape[1]]])
            blocks += 1
            X = static(model.M @ Qn)
        if Q.shape[1] < self.n_vectors:
            raise SolverError(
                f"RitzVectors: only {Q.shape[1]} independent vectors from loads "
                f"{labels}; ask for fewer"
            )
        labs = [f"Ritz {i + 1}" for i in range(Q.shape[1])]
        return ModeSet(
            Q,
            ["Ritz"] * Q.shape[1],
            labs,
            self._frame_text(support),
            support,
            static,
            interfaces=interfaces,
            strategy=repr(self),
            description=count_text([(Q.shape[1], "Ritz")], F.shape[1]),
        )


def constraint_count(itfs, ref):
    """Number of Craig-Bampton constraint modes kept for the interfaces ``itfs``.

    6 per rigid/distributing interface and 3 per node of a ``"nodes"`` interface, except
    the reference ``ref``: its 6 rigid-body motions are the body frame's and are dropped
    (a ``"nodes"`` reference keeps its node motions with zero least-squares rigid part).
    """
    n = 0
    for name, itf in itfs.items():
        if itf.kind == "nodes":
            n += sla.null_space(itf.W).shape[1] if name == ref else 3 * len(itf.nodes)
        elif name != ref:
            n += 6
    return n


class CraigBampton(Strategy):
    """Craig-Bampton: fixed-interface normal modes plus interface constraint modes.

    The total is ``n_fixed`` plus the constraint modes, which follow from the
    interfaces: 6 per rigid/distributing interface besides the reference (whose 6
    rigid-body motions are the body frame's), 3 per node of a ``"nodes"`` interface
    (the reference one minus its 6 rigid motions); see `n_constraint`, `describe`.

    Parameters
    ----------
    n_fixed : int
        Number of fixed-interface normal modes (>= 0; first positional argument;
        0 = the constraint modes alone, Guyan).
    interfaces : dict name -> selector (ordered)
    interface_kind : "rigid" | "distributing" | "nodes", or dict name -> kind
    reference : str, optional
        Interface whose frame is the body frame (default: the first).
    frame : "auto" | "interface" | "mean-axis"
        ``"interface"``: the reference interface's 6 rigid-body constraint modes
        are dropped, the body frame is attached to it.  ``"mean-axis"``: every
        mode is M-orthogonalized against the rigid-body modes (the reference's
        constraint modes are dropped as dependent; the set spans the same
        deformations).  ``"auto"`` (default): one of the two, chosen from the
        body's use (module docstring, `resolve_auto_frame`): mean axes for a
        geometrically stiffened body whose reference interface a joint lets
        rotate (or, outside a model, whenever geometric stiffness is computed),
        the interface frame otherwise.
    origins : dict name -> (3,), optional
        Interface frame origins (default: centroid of the interface nodes).
    n_total : int, optional (keyword only)
        The total instead of ``n_fixed``: ``n_fixed = n_total - constraint modes``
        (what ``flexmbd reduce --modes`` means); fewer than the constraint modes is
        refused with the number the interfaces need.

    >>> cb = CraigBampton(n_fixed=8, interfaces={"A": "A", "B": "B"})
    >>> cb.describe()
    '8 fixed-interface + 6 constraint = 14 modes'
    >>> CraigBampton(n_total=14, interfaces={"A": "A", "B": "B"}).n_fixed
    8
    """

    def __init__(
        self,
        n_fixed: int | None = None,
        interfaces: Mapping[str, Any] | None = None,
        interface_kind: str | Mapping[str, str] = "rigid",
        reference: str | None = None,
        frame: str = "auto",
        origins: Mapping[str, ArrayLike] | None = None,
        orthonormalize: bool = False,
        *,
        n_total: int | None = None,
    ) -> None:
        if not interfaces:
            raise MeshError(
                "CraigBampton: give at least one interface, "
                "e.g. interfaces={'A': fm.fem.Plane((0,0,0), (1,0,0))}"
            )
        if frame not in CB_FRAMES:
            raise MeshError(
                f"CraigBampton: frame={frame!r}; use 'auto' (default), 'interface' or 'mean-axis'"
            )
        if (n_fixed is None) == (n_total is None):
            raise MeshError(
                "CraigBampton: give exactly one of n_fixed (fixed-interface modes) "
                "and n_total (fixed-interface + constraint modes)"
            )
        if not isinstance(interfaces, dict):
            raise MeshError(
                f"CraigBampton: interfaces must be a dict name -> selector, got "
                f"{type(interfaces).__name__}; e.g. interfaces={{'A': 'A'}}"
            )
        self.interfaces = interfaces
        self.interface_kind, self.reference, self.frame = interface_kind, reference, frame
        self.origins, self.orthonormalize = origins, orthonormalize
        self.frame_reason = ""  # why "auto" became self.frame (`with_frame`)
        self.n_fixed = (
            None if n_fixed is None else mode_count(n_fixed, "CraigBampton: n_fixed", minimum=0)
        )
        self.n_total_given = (
            None if n_total is None else mode_count(n_total, "CraigBampton: n_total")
        )
        if n_total is not None and not self._needs_mesh():
            self.n_fixed = self._fixed_from_total(self.n_constraint())

    def with_frame(self, frame: str, reason: str = "") -> CraigBampton:
        """A copy with the explicit ``frame`` ("interface" or "mean-axis") and the reason
        for it, which the mode set's notes keep (`ReducedBody.info`)."""
        if frame not in CB_FRAMES[1:]:
            raise MeshError(
                f"CraigBampton.with_frame: frame={frame!r}; use 'interface' or 'mean-axis'"
            )
        new = copy.copy(self)
        new.frame, new.frame_reason = frame, str(reason)
        return new

    @property
    def reference_name(self) -> str:
        """Name of the reference interface (``reference``, default the first interface)."""
        return self._ref()

    def _kind(self, name):
        k = self.interface_kind
        return k.get(name, "rigid") if isinstance(k, dict) else k

    def _needs_mesh(self):
        return any(self._kind(nm) == "nodes" for nm in self.interfaces)

    def _ref(self):
        return self.reference or next(iter(self.interfaces))

    def n_constraint(self, model: FEModel | None = None) -> int:
        """Number of constraint modes (see the class docstring); ``"nodes"`` interfaces
        need the `FEModel` ``model`` (their node counts)."""
        if not self._needs_mesh():
            return 6 * sum(1 for nm in self.interfaces if nm != self._ref())
        if model is None:
            raise MeshError(
                "CraigBampton: the constraint modes of 'nodes' interfaces are 3 per "
                "node; pass the FE model (n_constraint(model), n_total(model), "
                "describe(model)) to count them"
            )
        itfs = model.interfaces(self.interfaces, self.interface_kind, self.origins)
        return constraint_count(itfs, self._ref())

    def _fixed_from_total(self, n_c):
        n_fixed = self.n_total_given - n_c
        if n_fixed < 0:
            raise MeshError(
                f"CraigBampton: n_total={self.n_total_given} is fewer than the {n_c} constraint "
                f"modes the interfaces {list(self.interfaces)} need (reference "
                f"{self._ref()!r} is the body frame); ask for at least {n_c} modes, or use "
                "fewer interfaces"
            )
        return n_fixed

    def _parts(self, model=None):
        n_c = self.n_constraint(model)
        n_fixed = self.n_fixed if self.n_fixed is not None else self._fixed_from_total(n_c)
        return [(n_fixed, "fixed-interface"), (n_c, "constraint")]

    def __repr__(self):
        names = list(self.interfaces)
        count = (
            f"n_fixed={self.n_fixed}"
            if self.n_total_given is None
            else f"n_total={self.n_total_given}"
        )
        return (
            f"CraigBampton({count}, interfaces={names}, "
            f"interface_kind={self.interface_kind!r}, frame={self.frame!r})"
        )

    def build(self, model: FEModel, interfaces: Mapping[str, Interface] | None = None) -> ModeSet:
        itfs = model.interfaces(self.interfaces, self.interface_kind, self.origins)
        extra = {k: v for k, v in (interfaces or {}).items() if k not in itfs}
        ref = self.reference or next(iter(itfs))
        if ref not in itfs:
            raise MeshError(f"CraigBampton: reference interface {ref!r} is not one of {list(itfs)}")
        K, M = model.K, model.M
        tim, t0 = {}, time.perf_counter()
        T, n_i, slices = interface_transform(model.n_dofs, itfs)
        if n_i == 0:
            raise MeshError(
                f"CraigBampton: the interfaces {list(itfs)} take every node of mesh "
                f"{model.fe.source!r}; nothing is left inside to deform; select "
                "only the connection faces"
            )
        n_c = constraint_count(itfs, ref)
        n_fixed = self.n_fixed if self.n_fixed is not None else self._fixed_from_total(n_c)
        check_mode_count(
            n_fixed,
            n_i,
            "CraigBampton: n_fixed",
            model,
            f"{model.n_dofs - n_i} belong to the interfaces",
        )
        Ti, Tb = T[:, :n_i].tocsc(), T[:, n_i:].tocsc()
        KTb = K @ Tb
        if Ti.nnz == n_i:
            # no distributing interface: the interior columns just select DOFs, so the
            # interior blocks are submatrices (no triple products T^T K T)
            interior = Ti.indices
            Kii, Mii = K[interior][:, interior], M[interior][:, interior]
            Kib = KTb[interior].toarray()
        else:
            Kii, Mii = (Ti.T @ K @ Ti).tocsr(), (Ti.T @ M @ Ti).tocsr()
            Kib = (Ti.T @ KTb).toarray()
        Kbb = (Tb.T @ KTb).toarray()
        tim["partition"], t0 = time.perf_counter() - t0, time.perf_counter()
        # one factorization of K_ii serves the constraint modes, the shift-invert eigen
        # solve (sigma = 0) and every later static solve (unit geometric-stiffness loads)
        factor = SPDFactor(Kii, model.backend, name="Craig-Bampton interior stiffness K_ii")
        tim["factor"], t0 = time.perf_counter() - t0, time.perf_counter()
        Psi_i = -factor.solve(Kib)
        tim["constraint_modes"], t0 = time.perf_counter() - t0, time.perf_counter()
        lam, Vi = eigsh_shift_invert(
            Kii, Mii, n_fixed, 0.0, factor, whole_groups=("CraigBampton: n_fixed", 0)
        )
        tim["eigen"], t0 = time.perf_counter() - t0, time.perf_counter()
        Phi_fixed = Ti @ Vi
        Psi = Ti @ Psi_i + Tb.toarray()
        nb = Psi.shape[1]
        # Schur complement on the boundary, for static solves with the reference held:
        # boundary unknowns ub = Bsel y (rigid/distributing reference: its 6 DOFs are zero;
        # nodes reference: its node motions with zero least-squares rigid part, W u = 0)
        S = Kbb + Kib.T @ Psi_i
        S = 0.5 * (S + S.T)
        blocks = []
        for name, itf in itfs.items():
            pos = slices[name] - n_i
            if name != ref:
                blocks.append((pos, np.eye(len(pos))))
            elif itf.kind == "nodes":
                blocks.append((pos, sla.null_space(itf.W)))
        ncol = sum(b.shape[1] for _, b in blocks)
        Bsel = np.zeros((nb, ncol))
        c0 = 0
        for pos, b in blocks:
            Bsel[pos, c0 : c0 + b.shape[1]] = b
            c0 += b.shape[1]

        cols, kinds, labels = (
            [Phi_fixed],
            ["fixed-interface"] * Vi.shape[1],
            [f"fixed-interface {i + 1}" for i in range(Vi.shape[1])],
        )
        for name, itf in itfs.items():
            pos = slices[name] - n_i
            if itf.kind == "nodes":
                comp = [f"{name}.n{a}.{c}" for a in itf.nodes for c in "xyz"]
            else:
                comp = [f"{name}.{c}" for c in _FRAME_COMPONENTS]
            if name == ref:
                if itf.kind != "nodes":
                    continue  # its 6 frame DOFs are the rigid-body motions: dropped
                Z = sla.null_space(itf.W)  # node motions with zero least-squares rigid part
                cols.append(Psi[:, pos] @ Z)
                kinds += ["constraint"] * Z.shape[1]
                labels += [f"{name}.deform {j + 1}" for j in range(Z.shape[1])]
                continue
            cols.append(Psi[:, pos])
            kinds += ["constraint"] * len(pos)
            labels += comp
        Phi = np.hstack(cols)

        Sf = sla.cho_factor(Bsel.T @ S @ Bsel) if ncol else None

        def clamped_static(F):
            F = np.asarray(F, float)
            one = F.ndim == 1
            F = F.reshape(len(F), -1)
            fh = T.T @ F
            ui0 = factor.solve(fh[:n_i])
            ub = np.zeros((nb, F.shape[1]))
            if Sf is not None:
                rb = fh[n_i:] - Kib.T @ ui0
                ub = Bsel @ sla.cho_solve(Sf, Bsel.T @ rb)
            U = Ti @ (ui0 + Psi_i @ ub) + Tb @ ub
            return U[:, 0] if one else U

        kind_ref = itfs[ref].kind
        notes = [self.frame_reason] if self.frame_reason else []
        if self.frame == "auto":  # a bare build computes no stiffening: the interface frame
            notes.append(
                "frame='auto' -> 'interface' (built without geometric stiffness; "
                "flexmbd.fem.strategies.resolve_auto_frame)"
            )
        if self.frame != "mean-axis":
            what = (
                "its 6 frame constraint modes are the rigid-body modes and are dropped"
                if kind_ref != "nodes"
                else "the 6 least-squares rigid motions of its nodes "
                "are dropped (its nodes still deform relative to that frame)"
            )
            frame = (
                f"attached to interface {ref!r} ({kind_ref}): {what}; every mode leaves "
                "that interface frame fixed"
            )
            static, support = clamped_static, "clamped"
        else:
            _, _, relieved = model.free_solver()
            Phi = relieved.project(Phi)
            frame = (
                "mean axes: Craig-Bampton modes M-orthogonalized against the rigid-body "
                f"modes (reference interface {ref!r} constraint modes dropped as dependent)"
            )
            static, support = relieved.solve, "free"
        all_itfs = dict(itfs)
        all_itfs.update(extra)
        text = count_text(
            [(Vi.shape[1], "fixed-interface"), (Phi.shape[1] - Vi.shape[1], "constraint")]
        )
        # contract: ModeSet's positional fields in its constructor's order
        ms = ModeSet(
            Phi,
            kinds,
            labels,
            frame,
            support,
            static,
            reference=ref,
            interfaces=all_itfs,
            strategy=repr(self),
            notes=notes,
            description=text,
        )
        ms.fixed_interface_lam = lam
        tim["assemble_basis"] = time.perf_counter() - t0
        ms.timings = tim
        return ms


def resolve_auto_frame(strategy: Any, geometric: bool) -> Any:
    """``strategy`` with a Craig-Bampton ``frame="auto"`` made explicit, outside a model.

    The rule when the body's joints are not known (`flexmbd.fem.reduce`, ``flexmbd
    reduce``): mean axes when the reduction computes geometric stiffness (``geometric``)
    -- a frame clamped at a reference interface that a joint lets rotate is stiffened
    right to second order only (FlexibleBody docs, 'Choice of frame'), mean axes in
    every attachment -- and the interface frame when it does not. A body reduced by
    ``FlexibleBody.from_mesh`` inside a model uses its joints instead
    (:func:`flexmbd.model.flexible.auto_frame`). Other strategies and explicit frames
    are returned unchanged.
    """
    if not isinstance(strategy, CraigBampton) or strategy.frame != "auto":
        return strategy
    if geometric:
        return strategy.with_frame(
            "mean-axis",
            "frame='auto' -> mean axes: geometric stiffness computed, joints unknown "
            "(reduced outside a model); give frame='interface' for a body built in at "
            f"interface {strategy.reference_name!r}",
        )
    return strategy.with_frame(
        "interface",
        f"frame='auto' -> interface {strategy.reference_name!r}: no geometric stiffness",
    )


def as_strategy(obj):
    if isinstance(obj, Strategy):
        return obj
    raise MeshError(
        f"strategy must be NormalModes, StaticCorrection, CraigBampton or "
        f"RitzVectors, got {type(obj).__name__}"
    )


def sparse_selection(n, idx):
    return sp.csr_matrix((np.ones(len(idx)), (idx, np.arange(len(idx)))), shape=(n, len(idx)))


_ = as_selector  # re-exported helper used by callers
