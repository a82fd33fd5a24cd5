"""`ReducedBody`: a reduced flexible body and its ``.npz`` (or HDF5) file.

npz / HDF5 schema, version ``flexmbd.reduced/2`` (strings as numpy str arrays / HDF5 strings)
------------------------------------------------------------------------------------------
==========================  ===============  =============================================
key                         shape            meaning
==========================  ===============  =============================================
schema                      ()               "flexmbd.reduced/2"
name, strategy, frame       ()               body name, strategy repr, frame convention
mode_count                  ()               the mode count as text, e.g. "8 fixed-interface
                                             + 6 constraint = 14 modes" (optional: files
                                             without it count ``mode_kind``)
support                     ()               "free" (mean axes) or "clamped"
reference                   ()               reference interface name or ""
material                    (3,) + name      E, nu, rho; ``material_name``
nodes                       (n, 3)           undeformed node coordinates (skfem order)
cells, cell_type            (e, k), ()       connectivity in meshio/VTK order, cell type
modes                       (3n, m)          mode shapes, node-interleaved
mode_kind, mode_label       (m,)             normal / static-correction / constraint /
                                             fixed-interface / Ritz; readable label
mode_mix                    (m,)             composition after re-diagonalization or ""
frequencies                 (m,)             eigenfrequencies (Hz) of (K_ff, M_ff)
mode_frequencies            (m,)             Rayleigh quotient of each mode (Hz)
mass, first_moment, ...     see invariants   mass, first_moment, second_moment,
                                             inertia_origin, com, inertia_com,
                                             St, Sij, Pij, M_ff, K_ff, D_ff
damping                     (2,) + zeta      Rayleigh (alpha, beta); ``zeta`` (m,) or empty
interface_names, _kinds     (k,)             interfaces in order
interface_origins           (k, 3)           frame origins (body axes)
interface_nodes, _offsets   (sum,), (k+1,)   node numbers of each interface (CSR-like)
interface_modes             (k, 6, m)        frame motion [rotation; translation] per mode:
                                             least-squares rigid fit at the interface
                                             nodes, ``u = t + theta x (x - origin)``
stress_modes                (n, 6, m)        Voigt stress (xx,yy,zz,yz,xz,xy) per unit mode
kg_names                    (L,)             unit-load names (see flexmbd.fem.geometric)
kg_unit                     (L, m, m)        projected unit geometric stiffness
kg_convention               ()               support used for the unit stress states
timings_keys, _values       (t,)             cost of each step (s)
notes                       (q,)             remarks printed by info()
==========================  ===============  =============================================
Missing optional arrays (stress modes, K_G) are stored with a leading 0 dimension.

Sign convention (one, everywhere): an interface's rotation ``theta`` moves its nodes by
``theta x (x - origin)``, and an interface moment ``m`` does work ``m . theta``; the
unit geometric stiffness ``kg_unit`` of the load ``"NAME.mx"`` belongs to a positive
moment about x in that sense. Files of schema ``flexmbd.reduced/1`` stored the
rotations with the opposite sign (``u = (x - origin) x theta``); :meth:`ReducedBody.load`
converts them (rotation rows of ``interface_modes`` and the interface-moment
``kg_unit`` negated).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from ..errors import FlexmbdError, MeshError
from ..fileio import READ_ERRORS, check_readable, read_failure, sniff
from .from_matrices import reduced_from_matrices
from .modecount import count_text_from_kinds
from .sid import write_sid
from .stress_history import von_mises

if TYPE_CHECKING:
    from .._typing import Array, ArrayLike, StrPath

__all__ = ["ReducedBody", "SCHEMA"]

SCHEMA = "flexmbd.reduced/2"
_OLD_SCHEMAS = ("flexmbd.reduced/1",)
# the floating-frame invariants (see ReducedBody.invariants)
_INVARIANTS = (
    "first_moment",
    "second_moment",
    "inertia_origin",
    "com",
    "inertia_com",
    "St",
    "Sij",
    "Pij",
    "M_ff",
    "K_ff",
    "D_ff",
)
_ARRAYS = (
    "nodes",
    "cells",
    "modes",
    "frequencies",
    "mode_frequencies",
    *_INVARIANTS,
    "damping",
    "zeta",
    "interface_origins",
    "interface_nodes",
    "interface_offsets",
    "interface_modes",
    "stress_modes",
    "kg_unit",
)
_STRINGS = (
    "name",
    "strategy",
    "frame",
    "support",
    "reference",
    "cell_type",
    "material_name",
    "kg_convention",
    "mode_count",
)
_STRLISTS = (
    "mode_kind",
    "mode_label",
    "mode_mix",
    "interface_names",
    "interface_kinds",
    "kg_names",
    "notes",
)


def _is_h5(path):
    return str(path).lower().endswith((".h5", ".hdf5"))


def _h5py(path):
    try:
        import h5py
    except ImportError as err:  # pragma: no cover - h5py is an optional extra
        raise MeshError(f"{path}: HDF5 files need h5py: pip install 'flexmbd[io]'") from err
    return h5py


def _h5_array(ds):
    v = ds[()]
    if isinstance(v, bytes):
        return np.array(v.decode())
    if isinstance(v, np.ndarray) and v.dtype.kind in "OS":
        return np.array(
            [x.decode() if isinstance(x, bytes) else str(x) for x in v.ravel()], dtype=str
        ).reshape(v.shape)
    return np.asarray(v)


def _empty() -> Array:
    return np.zeros((0,))


def _frozen(value: Any) -> Array:
    """A read-only view of ``value`` as an array (the caller's array stays writable)."""
    v = np.asarray(value).view()
    v.flags.writeable = False
    return v


@dataclass(frozen=True, kw_only=True, eq=False)
class ReducedBody:
    """A flexible body reduced to a few modes: a typed, frozen value.

    Build it with `flexmbd.fem.reduce` or, from matrices and mode shapes computed
    elsewhere, with :meth:`from_matrices`; :meth:`replace` gives a changed copy. The
    fields are the keys of the file table in the module docstring (SI units, body
    axes): the basis (``nodes``, ``cells``, ``modes``, ``mode_kind`` ...), the
    invariants (``mass``, ``first_moment`` ... ``M_ff``, ``K_ff``, ``D_ff``), the
    interfaces (``interface_names``, ``interface_modes`` in the one sign convention
    of the module docstring ...), ``stress_modes`` and the unit geometric stiffness
    (``kg_names``, ``kg_unit``). Arrays are read-only; name lists are tuples.
    """

    mass: float
    material: Array
    nodes: Array = field(default_factory=_empty)
    cells: Array = field(default_factory=_empty)
    modes: Array = field(default_factory=_empty)
    frequencies: Array = field(default_factory=_empty)
    mode_frequencies: Array = field(default_factory=_empty)
    first_moment: Array = field(default_factory=_empty)
    second_moment: Array = field(default_factory=_empty)
    inertia_origin: Array = field(default_factory=_empty)
    com: Array = field(default_factory=_empty)
    inertia_com: Array = field(default_factory=_empty)
    St: Array = field(default_factory=_empty)
    Sij: Array = field(default_factory=_empty)
    Pij: Array = field(default_factory=_empty)
    M_ff: Array = field(default_factory=_empty)
    K_ff: Array = field(default_factory=_empty)
    D_ff: Array = field(default_factory=_empty)
    damping: Array = field(default_factory=_empty)
    zeta: Array = field(default_factory=_empty)
    interface_origins: Array = field(default_factory=_empty)
    interface_nodes: Array = field(default_factory=_empty)
    interface_offsets: Array = field(default_factory=_empty)
    interface_modes: Array = field(default_factory=_empty)
    stress_modes: Array = field(default_factory=_empty)
    kg_unit: Array = field(default_factory=_empty)
    name: str = ""
    strategy: str = ""
    frame: str = ""
    support: str = ""
    reference: str = ""
    cell_type: str = ""
    material_name: str = ""
    kg_convention: str = ""
    mode_count: str = ""
    mode_kind: tuple[str, ...] = ()
    mode_label: tuple[str, ...] = ()
    mode_mix: tuple[str, ...] = ()
    interface_names: tuple[str, ...] = ()
    interface_kinds: tuple[str, ...] = ()
    kg_names: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        put = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        for k in _ARRAYS:
            put(k, _frozen(getattr(self, k)))
        for k in _STRINGS:
            put(k, str(getattr(self, k)))
        for k in _STRLISTS:
            put(k, tuple(str(x) for x in getattr(self, k)))
        put("mass", float(self.mass))
        put("material", _frozen(np.asarray(self.material, float)))
        put("timings", dict(self.timings))

    def replace(self, **changes: Any) -> ReducedBody:
        """A copy with the given fields changed (``rb.replace(K_ff=100 * rb.K_ff)``)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_matrices(
        cls, nodes: ArrayLike, modes: ArrayLike, M: Any = None, K: Any = None, **options: Any
    ) -> ReducedBody:
        """A body from a reduced model given directly: mode shapes at nodes, mass and
        stiffness (full or reduced), interfaces, damping, invariants (SI units).

        See `flexmbd.fem.from_matrices.reduced_from_matrices` for every option.
        """
        return reduced_from_matrices(cls, nodes, modes, M, K, **options)

    # -- sizes and views -------------------------------------------------------------------
    @property
    def n_modes(self) -> int:
        """Total number of modes (columns of ``modes``), every kind included."""
        return self.modes.shape[1]

    def n_total(self) -> int:
        """Total number of modes, as `Strategy.n_total` (same as ``n_modes``)."""
        return self.n_modes

    def describe(self) -> str:
        """The mode count as text, e.g. "8 fixed-interface + 6 constraint = 14 modes".

        The strategy's parts before any re-diagonalization (stored as ``mode_count``);
        a body without it (given matrices, older files) counts ``mode_kind``.
        """
        return self.mode_count or count_text_from_kinds(self.mode_kind)

    @property
    def n_nodes(self) -> int:
        """Number of finite-element nodes."""
        return self.nodes.shape[0]

    def interface(self, name: str) -> tuple[str, Array, Array, Array]:
        """``(kind, origin (3,) m, nodes, modes (6, m))`` of interface ``name``; ``modes``
        ``[rotation; translation]`` per unit modal coordinate, ``u = t + theta x r``."""
        if name not in self.interface_names:
            raise MeshError(
                f"body {self.name!r}: no interface {name!r}; interfaces: {self.interface_names}"
            )
        k = self.interface_names.index(name)
        o = self.interface_offsets
        return (
            self.interface_kinds[k],
            self.interface_origins[k],
            self.interface_nodes[o[k] : o[k + 1]],
            self.interface_modes[k],
        )

    def displacement(self, q: ArrayLike) -> Array:
        """Nodal displacements (n, 3) for modal coordinates q (m,)."""
        return (self.modes @ np.asarray(q, float)).reshape(-1, 3)

    def stress(self, q: ArrayLike) -> Array:
        """Voigt nodal stress (n, 6) for modal coordinates q."""
        if self.stress_modes.shape[0] == 0:
            raise MeshError(
                f"body {self.name!r} was reduced without stress modes "
                "(reduce(..., stress_modes=True))"
            )
        return self.stress_modes @ np.asarray(q, float)

    def von_mises(self, q: ArrayLike) -> Array:
        """Von Mises stress (n,) (Pa) at the nodes for modal coordinates q."""
        return von_mises(self.stress(q))

    # -- geometric stiffness ---------------------------------------------------------------
    def geometric_stiffness(
        self,
        omega: ArrayLike = (0, 0, 0),
        alpha: ArrayLike = (0, 0, 0),
        a: ArrayLike = (0, 0, 0),
        interface_forces: Mapping[str, ArrayLike] | None = None,
    ) -> Array:
        """Load-weighted sum of the unit geometric stiffness matrices (m x m).

        Parameters
        ----------
        omega, alpha : (3,)
            Angular velocity and acceleration of the body frame, body axes.
        a : (3,)
            Acceleration of the body origin minus gravity, body axes.
        interface_forces : dict name -> (6,) [moment; force], optional
            Wrenches applied to the body at the interface frames (body axes).
        """
        if self.kg_unit.shape[0] == 0:
            raise MeshError(
                f"body {self.name!r} was reduced without geometric stiffness "
                "(reduce(..., geometric=True))"
            )
        w = np.asarray(omega, float)
        coef = dict(
            zip(
                ("w1w1", "w2w2", "w3w3", "w1w2", "w2w3", "w1w3"),
                (w[0] * w[0], w[1] * w[1], w[2] * w[2], w[0] * w[1], w[1] * w[2], w[0] * w[2]),
            )
        )
        for i in range(3):
            coef[f"alpha{i + 1}"] = float(alpha[i])
            coef[f"a{i + 1}"] = float(a[i])
        for name, wr in (interface_forces or {}).items():
            if name not in self.interface_names:
                raise MeshError(
                    f"body {self.name!r}: geometric_stiffness got forces for unknown "
                    f"interface {name!r}; interfaces: {self.interface_names}"
                )
            wr = np.asarray(wr, float)
            for c, v in zip(("mx", "my", "mz", "fx", "fy", "fz"), wr):
                coef[f"{name}.{c}"] = float(v)
        weights = np.array([coef.get(k, 0.0) for k in self.kg_names])
        return np.tensordot(weights, self.kg_unit, axes=1)

    # -- report ----------------------------------------------------------------------------
    def info(self, file: IO[str] | None = None) -> str:
        """Print (and return) the mode table, frame convention and interface list."""
        lines = [
            f"ReducedBody {self.name!r}: {self.n_modes} modes, {self.n_nodes} nodes "
            f"({self.cell_type}), mass {self.mass:.6g} kg",
            f"  modes    : {self.describe()}",
            f"  strategy : {self.strategy}",
            f"  frame    : {self.frame}",
            f"  K_G      : {self.kg_convention or 'not computed'}",
            "  mode  kind               label                          f_mode (Hz)  "
            "f_reduced (Hz)  mix",
        ]
        for i in range(self.n_modes):
            lines.append(
                f"  {i + 1:4d}  {self.mode_kind[i]:<18} {self.mode_label[i][:30]:<30} "
                f"{self.mode_frequencies[i]:11.4f}  {self.frequencies[i]:14.4f}  "
                f"{self.mode_mix[i]}"
            )
        lines.append("  interfaces:")
        if not self.interface_names:
            lines.append("    (none)")
        for k, nm in enumerate(self.interface_names):
            o = self.interface_offsets
            ref = "  <- body frame (reference)" if nm == self.reference else ""
            lines.append(
                f"    {nm}: {self.interface_kinds[k]}, {o[k + 1] - o[k]} nodes, origin "
                f"{np.round(self.interface_origins[k], 6).tolist()}{ref}"
            )
        for note in self.notes:
            lines.append(f"  note: {note}")
        text = "\n".join(lines)
        print(text, file=file)
        return text

    def __repr__(self) -> str:
        return (
            f"ReducedBody({self.name!r}, {self.describe()}, mass={self.mass:.6g}, "
            f"interfaces={self.interface_names})"
        )

    # -- persistence -----------------------------------------------------------------------
    def save(self, path: StrPath) -> None:
        """Write the body to one file (schema `SCHEMA`): ``.h5``/``.hdf5`` as HDF5 (one dataset
        per key of the table above, the schema also as the file attribute ``schema``; needs
        h5py), anything else as ``.npz``."""
        data = {
            "schema": np.array(SCHEMA),
            "mass": np.array(self.mass),
            "material": self.material,
            "timings_keys": np.array(list(self.timings), dtype=str),
            "timings_values": np.array(list(self.timings.values()), dtype=float),
        }
        for k in _ARRAYS:
            data[k] = getattr(self, k)
        for k in _STRINGS:
            data[k] = np.array(getattr(self, k))
        for k in _STRLISTS:
            data[k] = np.array(getattr(self, k), dtype=str)
        if _is_h5(path):
            h5py = _h5py(path)
            with h5py.File(path, "w") as f:
                f.attrs["schema"] = SCHEMA
                for k, v in data.items():
                    if v.dtype.kind == "U":
                        f.create_dataset(k, data=v.astype(object), dtype=h5py.string_dtype())
                    else:
                        f.create_dataset(k, data=v)
            return
        np.savez_compressed(path, **data)

    def to_sid(self, path: StrPath, nodes: Sequence[int] = ()) -> None:
        """Export as FEMBS standard input data text (`flexmbd.fem.sid.write_sid`)."""
        write_sid(self, path, nodes)

    @classmethod
    def load(cls, path: StrPath) -> ReducedBody:
        """Read a body written by `save` (``.npz`` or HDF5); checks the schema version.

        The format is recognized by content. A missing, empty, truncated or foreign
        file raises :class:`~flexmbd.errors.FileError` naming it; another schema
        version :class:`~flexmbd.errors.MeshError`.
        """
        path = check_readable(path, "reduced body file")
        hint = "a reduced body is written by ReducedBody.save or `flexmbd reduce -o body.npz`"
        kind = sniff(path)
        if kind not in ("npz", "hdf5"):
            raise read_failure(path, "reduced body file", ValueError(kind), hint)
        try:
            if kind == "hdf5":
                h5py = _h5py(path)
                with h5py.File(path, "r") as f:
                    if "schema" not in f.attrs:
                        if "flexmbd_header" in f.attrs:
                            hint = "it is a results file: load it with flexmbd.Results.load"
                        raise KeyError("schema")
                    z = {k: _h5_array(f[k]) for k in f.keys()}
                    z["schema"] = np.array(str(f.attrs["schema"]))
                body = cls._from_store(path, z)
            else:
                with np.load(path, allow_pickle=False) as z:
                    if "schema" not in z.files:
                        if "__header__" in z.files:
                            hint = "it is a results file: load it with flexmbd.Results.load"
                        raise KeyError("schema")
                    body = cls._from_store(path, z)
            m, n = body.modes.shape[1], 3 * body.n_nodes
            if (
                body.modes.shape[0] != n
                or len(body.frequencies) != m
                or body.M_ff.shape != (m, m)
                or body.K_ff.shape != (m, m)
            ):
                raise ValueError(
                    f"inconsistent arrays (modes {body.modes.shape} for "
                    f"{body.n_nodes} nodes, M_ff {body.M_ff.shape})"
                )
            return body
        except FlexmbdError:
            raise
        except READ_ERRORS as err:
            raise read_failure(path, "reduced body file", err, hint) from None

    @classmethod
    def _from_store(cls, path, z):
        schema = str(z["schema"]) if "schema" in z else "?"
        if schema != SCHEMA and schema not in _OLD_SCHEMAS:
            raise MeshError(
                f"{path}: schema {schema!r} is not {SCHEMA!r}; re-run reduce() "
                "with this flexmbd version"
            )
        fields = {k: z[k] for k in _ARRAYS}
        if schema == "flexmbd.reduced/1":  # rotations stored as u = r x theta
            fields["interface_modes"] = np.array(fields["interface_modes"], float)
            fields["interface_modes"][:, :3] *= -1.0
            moments = [
                i
                for i, n in enumerate(z["kg_names"])
                if str(n).rpartition(".")[2] in ("mx", "my", "mz")
            ]
            if moments:
                fields["kg_unit"] = np.array(fields["kg_unit"], float)
                fields["kg_unit"][moments] *= -1.0
        fields.update({k: str(z[k]) for k in _STRINGS if k in z or k != "mode_count"})
        fields.update({k: [str(s) for s in z[k]] for k in _STRLISTS})
        fields["mass"] = float(z["mass"])
        fields["material"] = z["material"]
        fields["timings"] = dict(
            zip([str(s) for s in z["timings_keys"]], z["timings_values"].tolist())
        )
        return cls(**fields)

    def invariants(self) -> dict[str, Any]:
        """The floating-frame invariants by name (``mass`` kg, ``first_moment`` ...,
        ``M_ff``, ``K_ff``, ``D_ff``), for the multibody side."""
        d = {k: getattr(self, k) for k in _INVARIANTS}
        d["mass"] = self.mass
        return d
