"""Results: time histories of one simulation, stored as arrays.

One class for every formulation and integrator. Arrays (never lists of per-step
objects):

* ``t`` (nt,) s;
* ``q`` (nt, nq) coordinates, ``qd`` (nt, nv) speeds, ``qdd`` (nt, nv) their rates,
  described by ``coordinates`` and ``speeds`` (lists of ``(owner, label)``: owner is
  a joint name in the recursive formulation, a body name in the absolute one);
* ``reactions`` (nt, n_joints, 6): reaction wrench of every joint (parent on
  child, at the child joint frame origin, child-frame axes, ``[n; f]``), ordered
  as ``joint_names``;
* ``energy``: dict of (nt,) arrays (``kinetic``, ``potential``, ...);
* ``stats``: dict of (nt,) arrays (Newton iterations, residual norms, constraint
  violations, rank, ...);
* ``meta``: dict of scalars/strings (formulation, integrator, dt, model name);
* ``body_series``: dict ``body name ->`` :class:`BodySeries` (``position`` (nt, 3) world
  position of the body frame origin, ``orientation`` (nt, 4) its Euler parameters
  (scalar first), ``modal`` (nt, n_modes) modal coordinates of a flexible body,
  ``interfaces`` ``{name: (nt, 7)}`` world origin and Euler parameters of its deformed
  interface frames);
* ``joint_series``: dict ``joint name ->`` :class:`JointSeries` (``q`` (nt, nq), ``qd``
  and ``qdd`` (nt, nv)) of every joint that owns no columns of ``q`` (cut joints; every
  joint of the absolute formulation), filled by :func:`complete` / on request
  (:func:`flexmbd.joint_states.fill_joint_states`);
* ``extra``: dict of other time series (first axis time): multipliers ``lambda``,
  ``driver:NAME`` drive forces, momenta, user data.

Named access is the same in every formulation: ``res.joint(name).q/.qd/.qdd/.reaction``
(every joint, cut joints included, continuous angles), ``res.body(name).position/
.orientation/.modal`` (poses computed on request from ``res.system``, which every run
attaches), ``res.energies.kinetic`` etc. (:data:`ENERGY_FIELDS`, ``None`` when the
formulation does not compute it) and ``res.stats`` (recursive: ``rhs_evaluations``,
``step_size``, closed loops also ranks and violations; absolute: ``newton_iterations``,
``residual``, ``constraint_violation``...);
* ``geometry``: dict ``body name -> dict of arrays`` describing what to draw
  (not a time series; see :class:`flexmbd.geometry.BodyGeometry`): ``nodes``
  (n, 3) in the body frame, ``cells:<meshio cell type>`` connectivity blocks,
  optionally ``modes`` (3 n, n_modes, node-interleaved), ``stress_modes`` and
  ``frequencies``. Filled by :func:`attach_geometry`; it lets a saved file be
  rendered without the model (``flexmbd render run.h5``).

Files: :meth:`Results.save` writes ``.npz`` (default) or HDF5 (``.h5``, ``.hdf5``);
both round-trip exactly (same arrays, dtypes, names and meta). Layout of the npz
(schema 2): arrays ``t q qd qdd reactions``, ``energy__K``, ``stats__K``,
``extra__K``, ``body__BODY__position|orientation|modal``,
``body__BODY__interface__NAME``, ``joint__JOINT__q|qd|qdd``, ``geometry__BODY__K``
and a JSON ``__header__`` (schema, coordinates, speeds, joint names, meta). The HDF5
file holds the same arrays as datasets ``/t /q /qd /qdd /reactions``, groups
``/energy /stats /extra``, ``/bodies/BODY`` (datasets ``position`` ...,
``interface__NAME``), ``/joints/JOINT`` and ``/geometry/BODY`` and the JSON header
as the root attribute ``flexmbd_header``. Files of schema 1 (the histories as
``extra`` keys ``"position:BODY"``, ``"orientation:BODY"``, ``"modal:BODY"``,
``"interface:BODY.NAME"``, ``"joint:JOINT:q|qd|qdd"``) load into the same fields
(:func:`split_legacy_extra`); a checkpoint file
(:mod:`flexmbd.checkpoint`) is such a file with time-resizable datasets plus a
``/checkpoint`` group, so it loads as Results too.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._typing import Array, ArrayLike
from .errors import FileError, FlexmbdError
from .fileio import READ_ERRORS, atomic_write, check_readable, read_failure, sniff
from .geometry import (
    body_geometry,
    gravity_of,
    reduced_body_geometry,
    visual_geometry,
    write_vtk_series,
)
from .joint_states import fill_joint_states
from .kinematics import tree_poses_batch
from .series import _JOINT_KEYS, BodySeries, JointSeries, split_legacy_extra
from .spatial import quat_to_rot_batch, rot_to_quat_batch  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from .model import Model

__all__ = [
    "Results",
    "JointHistory",
    "BodyHistory",
    "Energies",
    "ENERGY_FIELDS",
    "BodySeries",
    "JointSeries",
    "split_legacy_extra",
    "attach_body_poses",
    "attach_tree_poses",
    "attach_geometry",
    "complete",
]

SCHEMA = 2
HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf")


def _as_series(cls, d):
    return {k: (v if isinstance(v, cls) else cls.from_arrays(v)) for k, v in (d or {}).items()}


class JointHistory:
    """Named view of one joint's time histories (``res.joint("j1").q``)."""

    def __init__(self, res: Results, name: str) -> None:
        self._res = res
        self.name = name

    def _get(self, kind, table, values):
        cols = [i for i, (owner, _) in enumerate(table) if owner == self.name]
        if cols:
            return values[:, cols]
        res = self._res
        if self.name not in res.joint_series and getattr(res, "system", None) is not None:
            fill_joint_states(res, res.system)
        if self.name in res.joint_series:
            return getattr(res.joint_series[self.name], kind)
        raise FlexmbdError(
            f"joint {self.name!r} has no coordinates in these results; joints: {res.joint_names}"
        )

    @property
    def q(self) -> Array:
        """Coordinates (nt, nq_joint); angles (rad) continuous along time."""
        return self._get("q", self._res.coordinates, self._res.q)

    @property
    def qd(self) -> Array:
        """Speeds (nt, nv_joint): the relative twist of the child frame on the joint's
        motion subspace (rad/s, m/s)."""
        return self._get("qd", self._res.speeds, self._res.qd)

    @property
    def qdd(self) -> Array:
        """Speed rates (nt, nv_joint)."""
        return self._get("qdd", self._res.speeds, self._res.qdd)

    @property
    def reaction(self) -> Array:
        """Reaction wrench history (nt, 6)."""
        return self._res.reaction(self.name)


#: The energies every Results answers (J; works accumulated from t0), see
#: :class:`Energies`: ``kinetic``; ``potential = gravity + spring`` (``spring``: springs
#: and strain energy); ``total = kinetic + potential``; ``damper_work`` (dissipated),
#: ``actuator_work``, ``external_work`` (delivered) and ``numerical_dissipation`` (the
#: balance's remainder). A formulation that does not compute one gives ``None``.
ENERGY_FIELDS = (
    "kinetic",
    "potential",
    "gravity",
    "spring",
    "total",
    "damper_work",
    "actuator_work",
    "external_work",
    "numerical_dissipation",
)


class Energies:
    """Energy histories with fixed fields (:data:`ENERGY_FIELDS`), ``None`` when absent
    (``res.energies.kinetic``, ``res.energies["gravity"]``)."""

    def __init__(self, res: Results) -> None:
        self._res = res

    def __getitem__(self, name: str) -> Array | None:
        if name not in ENERGY_FIELDS:
            raise FlexmbdError(f"no energy field {name!r}; fields: {list(ENERGY_FIELDS)}")
        return self._res.energy.get(name)

    def __getattr__(self, name: str) -> Array | None:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except FlexmbdError as err:
            raise AttributeError(str(err)) from None

    def available(self) -> list[str]:
        """The fields these results hold."""
        return [k for k in ENERGY_FIELDS if k in self._res.energy]


class BodyHistory:
    """Named view of one body's time histories (``res.body("rod").modal``)."""

    def __init__(self, res: Results, name: str) -> None:
        self._res = res
        self.name = name

    def _series(self, kind, hint):
        res = self._res
        b = res.body_series.get(self.name)
        system = getattr(res, "system", None)
        if (
            (b is None or getattr(b, kind) is None)
            and kind in ("position", "orientation")
            and system is not None
        ):
            attach_body_poses(res, system)  # computed on first request
            b = res.body_series.get(self.name)
        value = None if b is None else getattr(b, kind)
        if value is None:
            raise FlexmbdError(f"body {self.name!r} has no {kind} history in these results; {hint}")
        return value

    @property
    def modal(self) -> Array:
        """Modal coordinates (nt, n_modes) of a flexible body."""
        return self._series("modal", "it is not a flexible body of this run")

    @property
    def position(self) -> Array:
        """World position of the body frame origin (nt, 3), m."""
        return self._series("position", _POSE_HINT)

    @property
    def orientation(self) -> Array:
        """Euler parameters of the body frame (nt, 4), scalar first."""
        return self._series("orientation", _POSE_HINT)

    @property
    def interfaces(self) -> dict[str, Array]:
        """Deformed interface frames: name -> (nt, 7) world origin and Euler parameters."""
        b = self._res.body_series.get(self.name)
        return {} if b is None else b.interfaces

    @property
    def rotation(self) -> Array:
        """Rotation matrices body -> world (nt, 3, 3), from :attr:`orientation`."""
        return quat_to_rot_batch(self.orientation)


_POSE_HINT = (
    "fill it with flexmbd.results.attach_body_poses(res, system) "
    "(or attach_tree_poses(res, model) for joint coordinates of a tree)"
)


class Results:
    """Time histories of a simulation (see the module docstring)."""

    def __init__(
        self,
        t: ArrayLike,
        q: ArrayLike,
        qd: ArrayLike,
        qdd: ArrayLike | None = None,
        *,
        coordinates: Iterable[tuple[str, str]] = (),
        speeds: Iterable[tuple[str, str]] = (),
        joint_names: Iterable[str] = (),
        reactions: ArrayLike | None = None,
        energy: Mapping[str, ArrayLike] | None = None,
        stats: Mapping[str, ArrayLike] | None = None,
        extra: Mapping[str, ArrayLike] | None = None,
        meta: Mapping[str, Any] | None = None,
        geometry: Mapping[str, Mapping[str, ArrayLike]] | None = None,
        bodies: Mapping[str, BodySeries | Mapping[str, ArrayLike]] | None = None,
        joints: Mapping[str, JointSeries | Mapping[str, ArrayLike]] | None = None,
    ) -> None:
        self.t = np.asarray(t, dtype=float)
        self.q = np.asarray(q, dtype=float)
        self.qd = np.asarray(qd, dtype=float)
        self.qdd = np.zeros_like(self.qd) if qdd is None else np.asarray(qdd, dtype=float)
        self.coordinates = [tuple(c) for c in coordinates]
        self.speeds = [tuple(c) for c in speeds]
        self.joint_names = list(joint_names)
        nt = len(self.t)
        self.reactions = (
            np.zeros((nt, len(self.joint_names), 6))
            if reactions is None
            else np.asarray(reactions, dtype=float)
        )
        self.energy = {k: np.asarray(v, dtype=float) for k, v in (energy or {}).items()}
        self.stats = {k: np.asarray(v) for k, v in (stats or {}).items()}
        extra, legacy_bodies, legacy_joints = split_legacy_extra(extra or {})
        self.extra = extra
        self.body_series: dict[str, BodySeries] = {
            **legacy_bodies,
            **_as_series(BodySeries, bodies),
        }
        self.joint_series: dict[str, JointSeries] = {
            **legacy_joints,
            **_as_series(JointSeries, joints),
        }
        self.meta = dict(meta or {})
        self.geometry = {
            b: {k: np.asarray(v) for k, v in g.items()} for b, g in (geometry or {}).items()
        }

    @classmethod
    def from_system(
        cls,
        system: Any,
        t: ArrayLike,
        q: ArrayLike,
        qd: ArrayLike,
        qdd: ArrayLike | None = None,
        reactions: ArrayLike | None = None,
        **fields: Any,
    ) -> Results:
        """Results of a run of ``system`` (any formulation): its ``coordinates``,
        ``speeds`` and ``joint_names`` label ``q`` (nt, nq), ``qd`` and ``qdd`` (nt, nv)
        and ``reactions`` (nt, n_joints, 6); ``fields`` are the other keyword arguments of
        :class:`Results` (``energy``, ``stats``, ``extra``, ``meta``, ``bodies``, ...)."""
        return cls(
            t,
            q,
            qd,
            qdd,
            coordinates=system.coordinates,
            speeds=system.speeds,
            joint_names=system.joint_names,
            reactions=reactions,
            **fields,
        )

    def __len__(self):
        return len(self.t)

    def __repr__(self):
        span = f"t = {self.t[0]:.6g} .. {self.t[-1]:.6g} s" if len(self.t) else "empty"
        return (
            f"<Results {self.meta.get('model', '')} {span}, {len(self.t)} samples, "
            f"{self.q.shape[1] if self.q.ndim == 2 else 0} coordinates>"
        )

    # -- named access -----------------------------------------------------------------
    def joint(self, name: str) -> JointHistory:
        """:class:`JointHistory` of joint ``name``."""
        return JointHistory(self, name)

    def body(self, name: str) -> BodyHistory:
        """:class:`BodyHistory` of body ``name``."""
        return BodyHistory(self, name)

    @property
    def energies(self) -> Energies:
        """:class:`Energies`: fixed energy fields, ``None`` when not computed."""
        return Energies(self)

    def reaction(self, name: str) -> Array:
        """Reaction wrench history (nt, 6) of joint ``name``, ``[n; f]`` in child joint axes."""
        try:
            k = self.joint_names.index(name)
        except ValueError:
            raise FlexmbdError(
                f"no reaction for joint {name!r}; joints: {self.joint_names}"
            ) from None
        return self.reactions[:, k, :]

    def slice(self, stop: int) -> Results:
        """Results truncated to the first ``stop`` samples (used for partial results)."""
        return Results(
            self.t[:stop],
            self.q[:stop],
            self.qd[:stop],
            self.qdd[:stop],
            coordinates=self.coordinates,
            speeds=self.speeds,
            joint_names=self.joint_names,
            reactions=self.reactions[:stop],
            energy={k: v[:stop] for k, v in self.energy.items()},
            stats={k: v[:stop] for k, v in self.stats.items()},
            extra={k: v[:stop] for k, v in self.extra.items()},
            meta=self.meta,
            geometry=self.geometry,
            bodies={k: b.map(lambda v: v[:stop]) for k, b in self.body_series.items()},
            joints={k: j.map(lambda v: v[:stop]) for k, j in self.joint_series.items()},
        )

    def take(self, index: ArrayLike) -> Results:
        """Results at the samples ``index`` (slice, integer array or boolean mask)."""
        return Results(
            self.t[index],
            self.q[index],
            self.qd[index],
            self.qdd[index],
            coordinates=self.coordinates,
            speeds=self.speeds,
            joint_names=self.joint_names,
            reactions=self.reactions[index],
            energy={k: v[index] for k, v in self.energy.items()},
            stats={k: v[index] for k, v in self.stats.items()},
            extra={k: v[index] for k, v in self.extra.items()},
            meta=self.meta,
            geometry=self.geometry,
            bodies={k: b.map(lambda v: v[index]) for k, b in self.body_series.items()},
            joints={k: j.map(lambda v: v[index]) for k, j in self.joint_series.items()},
        )

    @classmethod
    def concatenate(cls, parts: Sequence[Results]) -> Results:
        """One Results from consecutive pieces with the same columns (header of the first)."""
        parts = [p for p in parts if p is not None]
        if not parts:
            raise FlexmbdError("Results.concatenate: nothing to concatenate")
        first = parts[0]
        cat = lambda get: np.concatenate([get(p) for p in parts], axis=0)
        return cls(
            cat(lambda p: p.t),
            cat(lambda p: p.q),
            cat(lambda p: p.qd),
            cat(lambda p: p.qdd),
            coordinates=first.coordinates,
            speeds=first.speeds,
            joint_names=first.joint_names,
            reactions=cat(lambda p: p.reactions),
            energy={k: cat(lambda p, k=k: p.energy[k]) for k in first.energy},
            stats={k: cat(lambda p, k=k: p.stats[k]) for k in first.stats},
            extra={k: cat(lambda p, k=k: p.extra[k]) for k in first.extra},
            meta=first.meta,
            geometry=first.geometry,
            bodies={
                b: BodySeries.from_arrays(
                    {k: cat(lambda p, b=b, k=k: p.body_series[b].arrays()[k]) for k in s.arrays()}
                )
                for b, s in first.body_series.items()
                if all(b in p.body_series for p in parts)
            },
            joints={
                j: JointSeries(
                    *(cat(lambda p, j=j, k=k: getattr(p.joint_series[j], k)) for k in _JOINT_KEYS)
                )
                for j in first.joint_series
                if all(j in p.joint_series for p in parts)
            },
        )

    def index_at(self, t: float | None) -> int:
        """Index of the sample nearest to time ``t`` (s); ``None`` gives the last one."""
        if len(self.t) == 0:
            raise FlexmbdError("these results are empty")
        if t is None:
            return len(self.t) - 1
        return int(np.argmin(np.abs(self.t - float(t))))

    def body_names(self) -> list[str]:
        """Bodies with stored poses, modal coordinates or geometry (first-seen order)."""
        return list(dict.fromkeys(list(self.body_series) + list(self.geometry)))

    def equals(self, other: Results) -> bool:
        """True when ``other`` holds exactly the same arrays, names and meta (bitwise)."""

        def same(a, b):
            a, b = np.asarray(a), np.asarray(b)
            return (
                a.dtype == b.dtype
                and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
            )

        def same_dict(a, b):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)

        return (
            isinstance(other, Results)
            and all(
                same(getattr(self, n), getattr(other, n))
                for n in ("t", "q", "qd", "qdd", "reactions")
            )
            and self.coordinates == other.coordinates
            and self.speeds == other.speeds
            and self.joint_names == other.joint_names
            and json.dumps(self.meta, sort_keys=True, default=str)
            == json.dumps(other.meta, sort_keys=True, default=str)
            and same_dict(self.energy, other.energy)
            and same_dict(self.stats, other.stats)
            and same_dict(self.extra, other.extra)
            and same_dict(_series_arrays(self), _series_arrays(other))
            and self.geometry.keys() == other.geometry.keys()
            and all(same_dict(self.geometry[b], other.geometry[b]) for b in self.geometry)
        )

    # -- export -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Flat dict ``column name -> (nt,) array``."""
        cols = {"t": self.t}
        for i, (owner, lab) in enumerate(self.coordinates):
            cols[f"q:{owner}:{lab}"] = self.q[:, i]
        for i, (owner, lab) in enumerate(self.speeds):
            cols[f"qd:{owner}:{lab}"] = self.qd[:, i]
            cols[f"qdd:{owner}:{lab}"] = self.qdd[:, i]
        comp = ("nx", "ny", "nz", "fx", "fy", "fz")
        for k, name in enumerate(self.joint_names):
            for c in range(6):
                cols[f"reaction:{name}:{comp[c]}"] = self.reactions[:, k, c]
        for k, v in self.energy.items():
            cols[f"energy:{k}"] = v
        for k, v in self.stats.items():
            if v.ndim == 1:
                cols[f"stats:{k}"] = v
        return cols

    def to_dataframe(self) -> Any:
        """A pandas DataFrame indexed by time (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as err:  # pragma: no cover - pandas is an optional extra
            raise FlexmbdError("to_dataframe needs pandas: pip install 'flexmbd[io]'") from err
        cols = self.to_dict()
        t = cols.pop("t")
        return pd.DataFrame(cols, index=pd.Index(t, name="t"))

    def _arrays(self):
        """Every array under its npz name (the npz schema, also used for HDF5)."""
        arrays = _histories(self, "__")
        for b in list(self.geometry) + list(self.body_series) + list(self.joint_series):
            if "__" in b:
                raise FlexmbdError(f"name {b!r} contains '__', which the file format reserves")
        arrays.update(_series_arrays(self))
        for b, g in self.geometry.items():
            arrays.update({f"geometry__{b}__{k}": v for k, v in g.items()})
        return arrays

    def save(self, path: str | PathLike, format: str | None = None) -> Path:
        """Save to ``.npz`` or HDF5 (``.h5``/``.hdf5``); returns the path written.

        The format comes from the extension; ``format="npz"`` or ``"h5"`` writes
        exactly the named file in that format whatever its extension. Any other
        extension without ``format`` is refused (:class:`~flexmbd.errors.FileError`).
        The directory is checked before writing; the file is written to a temporary
        file next to it and moved over ``path`` when complete, so an existing file is
        replaced only by a complete one. Both formats round-trip exactly with
        :meth:`load`.
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if format is None:
            if suffix in HDF5_SUFFIXES:
                fmt = "h5"
            elif suffix == ".npz":
                fmt = "npz"
            else:
                raise FileError(
                    f"Results.save: cannot tell the format of {str(path)!r} from its extension "
                    f"{suffix or '(none)'!r}; name the file .npz or .h5, or pass format='npz' "
                    f"or 'h5' to write exactly that file"
                )
        else:
            fmt = {"hdf5": "h5"}.get(format, format)
        if fmt not in ("h5", "npz"):
            raise FlexmbdError(
                f"Results.save({str(path)!r}): unknown format {format!r}; use 'npz' or 'h5'"
            )
        arrays = self._arrays()  # refuses reserved names before touching files
        with atomic_write(path, "results file") as tmp:
            if fmt == "h5":
                h5py = _h5py()
                with h5py.File(tmp, "w") as f:
                    h5_write(f, self)
            else:
                header = json.dumps(_header(self), default=str)
                with open(tmp, "wb") as fh:
                    np.savez(fh, __header__=np.array(header), **arrays)
        return path

    @classmethod
    def load(cls, path: str | PathLike) -> Results:
        """Load results written by :meth:`save` (npz or HDF5, by content) or a checkpoint file.

        A missing, empty, truncated or foreign file raises
        :class:`~flexmbd.errors.FileError` naming it.
        """
        path = check_readable(path, "results file")
        kind = sniff(path)
        hint = (
            "flexmbd results are written by Results.save or `flexmbd simulate -o` "
            "(.npz or .h5) and checkpoint files by simulate(checkpoint=...)"
        )
        if kind not in ("hdf5", "npz"):
            raise read_failure(path, "results file", ValueError(kind), hint)
        try:
            if kind == "hdf5":
                h5py = _h5py()
                with h5py.File(path, "r") as f:
                    if "flexmbd_header" not in f.attrs:
                        raise KeyError("flexmbd_header")
                    res = h5_read(f)
            else:
                with np.load(path, allow_pickle=False) as z:
                    if "__header__" not in z.files:
                        raise KeyError("__header__")
                    header = json.loads(str(z["__header__"]))
                    res = cls._from_arrays(header, {k: z[k] for k in z.files if k != "__header__"})
        except FlexmbdError:
            raise
        except READ_ERRORS as err:
            if kind == "npz" and isinstance(err, KeyError) and _is_reduced(path):
                hint = "it is a reduced flexible body: load it with flexmbd.fem.ReducedBody.load"
            raise read_failure(path, "results file", err, hint) from None
        _check_lengths(res, path)
        return res

    @classmethod
    def _from_arrays(cls, header, arrays):
        pick = lambda prefix: {
            k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)
        }

        def nested(prefix):
            out = {}
            for k, v in pick(prefix).items():
                owner, _, key = k.partition("__")
                out.setdefault(owner, {})[key] = v
            return out

        schema = int(header.get("schema", 1))
        if schema > SCHEMA:
            raise FileError(
                f"results file of schema {schema}; this flexmbd reads schemas 1 to "
                f"{SCHEMA}: upgrade flexmbd to read it"
            )
        # schema 1 kept the body and joint histories in extra: split_legacy_extra reads them
        return cls(
            arrays["t"],
            arrays["q"],
            arrays["qd"],
            arrays["qdd"],
            coordinates=header["coordinates"],
            speeds=header["speeds"],
            joint_names=header["joint_names"],
            reactions=arrays["reactions"],
            energy=pick("energy__"),
            stats=pick("stats__"),
            extra=pick("extra__"),
            meta=header["meta"],
            geometry=nested("geometry__"),
            bodies=nested("body__"),
            joints=nested("joint__"),
        )

    def has_poses(self, bodies: Iterable[str]) -> bool:
        """True when every body of ``bodies`` has a stored position history."""
        return all(self.body_series.get(b, BodySeries()).position is not None for b in bodies)

    def to_vtk(
        self,
        path: str | PathLike,
        stride: int | None = None,
        scale: float = 1.0,
        bodies: Iterable[str] | None = None,
        max_frames: int = 200,
    ) -> list[Path]:
        """Write a VTK time series: ``path`` (``.pvd``) plus one ``.vtu`` per frame.

        Frames are every ``stride``-th sample (default: the smallest stride that
        gives at most ``max_frames`` frames, first sample included; ``stride=1``
        writes every sample).

        Every frame merges the bodies that have geometry (see :func:`attach_geometry`)
        into one unstructured grid at their world pose, with point data
        ``displacement`` (elastic displacement in world axes, times ``scale``),
        ``displacement_magnitude``, ``von_mises`` (flexible bodies with stress modes;
        0 elsewhere) and cell data ``body_id`` (index into the ``bodies`` list, written
        as a comment in the .pvd) and ``von_mises`` (per cell: cell stress modes, or the
        mean of the nodal values). ParaView opens the .pvd as an animation.
        Results of ``Model.simulate`` without stored geometry take it (and the body
        poses) from their model, leaving these results unchanged.
        Returns the list of written ``.vtu`` paths. Needs meshio.
        """
        res = self
        model = getattr(getattr(self, "system", None), "model", None)
        if not self.geometry and model is not None:
            res = self.take(slice(None))  # new dicts: the caller's stay as they are
            attach_geometry(res, model)
            if not res.has_poses(res.geometry):
                attach_tree_poses(res, model)
        if stride is None:
            stride = max(1, -(-len(self.t) // max(int(max_frames), 1)))
        return write_vtk_series(res, path, stride=stride, scale=scale, bodies=bodies)

    def plot(
        self,
        *columns: str,
        file: str | PathLike | None = None,
        ax: Any = None,
        title: str | None = None,
    ) -> Any:
        """Plot time histories with matplotlib; returns the Figure.

        ``columns`` are :meth:`to_dict` column names or shell patterns
        (``"q:j1:*"``, ``"reaction:j1:f?"``, ``"energy:*"``); each argument gets its own
        subplot. Default: all coordinates, then every energy. ``file`` saves the figure
        (PNG, PDF, SVG...). Works headless (Agg backend when no display).
        """
        import matplotlib

        if ax is None and not _has_display():
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        cols = self.to_dict()
        t = cols.pop("t")
        if not columns:
            columns = ("q:*",) + (("energy:*",) if self.energy else ())
        groups = []
        for pat in columns:
            names = [c for c in cols if fnmatch.fnmatchcase(c, pat)]
            if not names:
                raise FlexmbdError(
                    f"Results.plot: no column matches {pat!r}; columns are e.g. "
                    f"{list(cols)[:8]} (see Results.to_dict())"
                )
            groups.append((pat, names))
        if ax is None:
            fig, axes = plt.subplots(
                len(groups), 1, sharex=True, squeeze=False, figsize=(7, 2.4 * len(groups) + 0.6)
            )
            axes = axes[:, 0]
        else:
            axes = np.atleast_1d(ax)
            if len(axes) != len(groups):
                raise FlexmbdError(
                    f"Results.plot: {len(groups)} column groups but {len(axes)} axes given"
                )
            fig = axes[0].figure
        for a, (pat, names) in zip(axes, groups):
            for c in names:
                a.plot(t, cols[c], label=c)
            a.set_ylabel(pat)
            a.grid(True, alpha=0.3)
            if len(names) <= 12:
                a.legend(fontsize="small", loc="best")
        axes[-1].set_xlabel("t [s]")
        if title or self.meta.get("model"):
            fig.suptitle(title or str(self.meta.get("model")))
        fig.tight_layout()
        if file is not None:
            fig.savefig(file)
        return fig


def _is_reduced(path):
    try:
        with np.load(path, allow_pickle=False) as z:
            return "schema" in z.files and str(z["schema"]).startswith("flexmbd.reduced")
    except READ_ERRORS:
        return False


def _has_display():
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _h5py():
    try:
        import h5py
    except ImportError as err:  # pragma: no cover - h5py is an optional extra
        raise FlexmbdError("HDF5 files need h5py: pip install 'flexmbd[io]'") from err
    return h5py


# -- HDF5 layout (shared with flexmbd.checkpoint) -------------------------------------
_TIME_SERIES = ("t", "q", "qd", "qdd", "reactions")
_GROUPS = ("energy", "stats", "extra")
#: every entry :func:`h5_write` puts into a group (schema 2)
H5_ENTRIES = _TIME_SERIES + _GROUPS + ("bodies", "joints", "geometry")


def _h5_dataset(group, name, value, resizable):
    value = np.asarray(value)
    attrs = {}
    if value.dtype.kind == "U":  # h5py stores bytes, not numpy unicode
        attrs["numpy_unicode"] = value.dtype.itemsize // 4
        value = np.char.encode(value, "utf-8")
    if resizable and value.ndim >= 1:
        ds = group.create_dataset(name, data=value, maxshape=(None,) + value.shape[1:], chunks=True)
    else:
        ds = group.create_dataset(name, data=value)
    ds.attrs.update(attrs)
    return ds


def _histories(res, sep):
    """The untyped histories of ``res`` by name (``energy{sep}KEY`` for the energies,
    statistics and extra series)."""
    out = {"t": res.t, "q": res.q, "qd": res.qd, "qdd": res.qdd, "reactions": res.reactions}
    for group in ("energy", "stats", "extra"):
        out.update({f"{group}{sep}{k}": v for k, v in getattr(res, group).items()})
    return out


def _series_arrays(res):
    """Typed histories under their npz names (``body__B__K``, ``joint__J__K``)."""
    out = {}
    for b, series in res.body_series.items():
        out.update({f"body__{b}__{k}": v for k, v in series.arrays().items()})
    for j, series in res.joint_series.items():
        out.update({f"joint__{j}__{k}": v for k, v in series.arrays().items()})
    return out


def _header(res):
    """The file header of ``res``: schema, coordinate and joint names, metadata."""
    return {
        "schema": SCHEMA,
        "coordinates": res.coordinates,
        "speeds": res.speeds,
        "joint_names": res.joint_names,
        "meta": res.meta,
    }


def _check_lengths(res, path):
    """Refuse a read ``res`` whose time series do not all have the samples of ``t``."""
    nt = len(res.t)
    series = _histories(res, ":")
    series.update(_series_arrays(res))
    bad = [k for k, v in series.items() if v.ndim == 0 or v.shape[0] != nt]
    if res.t.ndim != 1 or bad:
        raise FileError(
            f"cannot read {str(path)!r} as a results file: its arrays are inconsistent "
            f"({', '.join(bad) or 't'} do not match the {nt} samples of t); the file is "
            f"damaged or was not written by flexmbd"
        )


def _h5_value(ds):
    v = ds[()]
    if "numpy_unicode" in ds.attrs:
        v = np.char.decode(np.asarray(v), "utf-8").astype(f"<U{int(ds.attrs['numpy_unicode'])}")
    return np.asarray(v)


def h5_write(group, res, resizable=False):
    """Write ``res`` into an open h5py group (time series resizable along axis 0 if asked)."""
    group.attrs["flexmbd_header"] = json.dumps(_header(res), default=str)
    for name in _TIME_SERIES:
        _h5_dataset(group, name, getattr(res, name), resizable)
    for gname in _GROUPS:
        g = group.create_group(gname)
        for k, v in getattr(res, gname).items():
            _h5_dataset(g, k, v, resizable)
    for gname, table in (("bodies", res.body_series), ("joints", res.joint_series)):
        g = group.create_group(gname)
        for owner, series in table.items():
            go = g.create_group(owner)
            for k, v in series.arrays().items():
                _h5_dataset(go, k, v, resizable)
    geo = group.create_group("geometry")
    for b, d in res.geometry.items():
        gb = geo.create_group(b)
        for k, v in d.items():
            _h5_dataset(gb, k, v, False)


def _h5_series(res):
    """``{(group, owner): {key: array}}`` of the typed histories of ``res``."""
    out = {("bodies", b): s.arrays() for b, s in res.body_series.items()}
    out.update({("joints", j): s.arrays() for j, s in res.joint_series.items()})
    return out


def h5_append(group, res):
    """Append the samples of ``res`` to the resizable time series written by :func:`h5_write`."""

    def grow(ds, v):
        v = np.asarray(v)
        if "numpy_unicode" in ds.attrs:
            v = np.char.encode(v, "utf-8")
        n = ds.shape[0]
        ds.resize(n + v.shape[0], axis=0)
        ds[n:] = v

    for name in _TIME_SERIES:
        grow(group[name], getattr(res, name))
    for gname in _GROUPS:
        d = getattr(res, gname)
        if set(d) != set(group[gname].keys()):
            raise FlexmbdError(
                f"cannot append results: {gname} keys {sorted(d)} differ from the file's "
                f"{sorted(group[gname].keys())}"
            )
        for k, v in d.items():
            grow(group[gname][k], v)
    series = _h5_series(res)
    stored = {
        (g, o): set(group[g][o].keys())
        for g in ("bodies", "joints")
        if g in group
        for o in group[g]
    }
    if {k: set(v) for k, v in series.items()} != stored:
        raise FlexmbdError(
            f"cannot append results: body/joint histories {sorted(series)} differ from the "
            f"file's {sorted(stored)}"
        )
    for (g, owner), d in series.items():
        for k, v in d.items():
            grow(group[g][owner][k], v)


def h5_truncate(group, n):
    """Cut the resizable time series of a results group to the first ``n`` samples."""
    dsets = [group[name] for name in _TIME_SERIES]
    for gname in _GROUPS:
        dsets += [group[gname][k] for k in group[gname]]
    for gname in ("bodies", "joints"):
        for owner in group.get(gname, {}):
            dsets += [group[gname][owner][k] for k in group[gname][owner]]
    for ds in dsets:
        ds.resize(n, axis=0)


def h5_read(group, stop=None):
    """Results stored in an h5py group by :func:`h5_write` (first ``stop`` samples)."""
    header = json.loads(group.attrs["flexmbd_header"])
    sl = slice(None) if stop is None else slice(0, stop)
    read = lambda ds: _h5_value(ds)[sl] if ds.ndim else _h5_value(ds)
    arrays = {name: read(group[name]) for name in _TIME_SERIES}
    for gname in _GROUPS:
        for k in group[gname]:
            arrays[f"{gname}__{k}"] = read(group[gname][k])
    for gname, prefix in (("bodies", "body"), ("joints", "joint")):
        for owner in group.get(gname, {}):
            for k in group[gname][owner]:
                arrays[f"{prefix}__{owner}__{k}"] = read(group[gname][owner][k])
    if "geometry" in group:
        for b in group["geometry"]:
            for k in group["geometry"][b]:
                arrays[f"geometry__{b}__{k}"] = _h5_value(group["geometry"][b][k])
    return Results._from_arrays(header, arrays)


# -- filling body poses and geometry ----------------------------------------------------
def complete(results: Results | None, system: Any) -> Results | None:
    """The one finishing step of every run (all formulations and integrators).

    Attaches ``system`` (``results.system``: body poses and joint histories on
    request) and fills the coordinates, speeds and rates of the cut joints of closed
    loops (:func:`flexmbd.joint_states.fill_joint_states`; in the absolute formulation
    every joint's are filled on the first ``res.joint(name)`` request, all at once).
    Returns ``results``.
    """
    if results is None or system is None:
        return results
    results.system = system
    model = getattr(system, "model", None)
    if model is not None and hasattr(system, "body_states"):
        owners = {o for o, _ in results.coordinates}
        if any(j.name in owners for j in model.joints()):
            # joint coordinates: only the cut joints are missing, filled now (saved with
            # the results); the absolute formulation's are filled on first request

            fill_joint_states(results, system)
    return results


def attach_body_poses(
    results: Results, system: Any, bodies: Iterable[str] | None = None
) -> Results:
    """Fill ``body_series[B].position`` and ``.orientation`` from a compiled System.

    Uses ``system.body_states(q, qd) -> {body name: (R, r, w_world, v_world)}``. The
    whole history is passed at once first (a System that accepts batches returns
    ``R`` (nt, 3, 3) and ``r`` (nt, 3)); otherwise it is called once per sample.
    ``bodies`` limits the bodies filled. Returns ``results`` (filled in place).
    """
    q, qd = results.q, results.qd
    nt = len(results.t)
    R_all, r_all = {}, {}
    batched = None
    if nt:
        try:
            states = system.body_states(q, qd)
            first = next(iter(states.values()))
            if np.shape(first[0]) == (nt, 3, 3) and np.shape(first[1]) == (nt, 3):
                batched = states
        except Exception:  # noqa: BLE001 - a System that only takes one sample
            batched = None
    if batched is not None:
        for name, st in batched.items():
            R_all[_name(name)] = np.asarray(st[0], dtype=float)
            r_all[_name(name)] = np.asarray(st[1], dtype=float)
    else:
        for i in range(nt):
            for name, st in system.body_states(q[i], qd[i]).items():
                name = _name(name)
                R_all.setdefault(name, np.empty((nt, 3, 3)))[i] = st[0]
                r_all.setdefault(name, np.empty((nt, 3)))[i] = st[1]
    keep = None if bodies is None else {_name(b) for b in bodies}
    for name in R_all:
        if name == "ground" or (keep is not None and name not in keep):
            continue
        _set_pose(results, name, r_all[name], rot_to_quat_batch(R_all[name]))
    return results


def _set_pose(results, name, position, orientation):
    b = results.body_series.setdefault(name, BodySeries())
    b.position, b.orientation = position, orientation


def _name(b):
    return b if isinstance(b, str) else b.name


def attach_tree_poses(results: Results, model: Model) -> Results:
    """Fill body poses from joint coordinates with :func:`flexmbd.kinematics.tree_poses_batch`.

    For results whose coordinates are owned by joints (the recursive formulation of
    a tree or the tree part of a closed loop); the whole history at once (the same
    poses as :func:`flexmbd.kinematics.tree_poses` sample by sample, to round-off).
    Returns ``results``.
    """
    cols = {}
    for j in model.joints():
        idx = [i for i, (owner, _) in enumerate(results.coordinates) if owner == j.name]
        if len(idx) == j.nq and j.nq:
            cols[j] = idx
    nt = len(results.t)
    poses = tree_poses_batch(model, {j: results.q[:, idx] for j, idx in cols.items()}, nt)
    for b in model.bodies():
        R, r = poses[b]
        _set_pose(
            results,
            b.name,
            np.array(np.broadcast_to(r, (nt, 3)), dtype=float),
            rot_to_quat_batch(np.broadcast_to(R, (nt, 3, 3))),
        )
    return results


def attach_geometry(
    results: Results, model: Any, bodies: Iterable[str] | None = None, glyphs: bool = True
) -> Results:
    """Store what to draw for every body in ``results.geometry`` (see the module doc).

    ``model`` is a :class:`~flexmbd.model.Model` or a dict ``body name -> source``
    where a source is a reduced flexible body (:class:`flexmbd.fem.ReducedBody`), a
    :class:`~flexmbd.geometry.BodyGeometry`, a mesh file, a PyVista mesh or URDF
    visual dicts. Flexible bodies of a model give their finite-element mesh and
    modes; rigid bodies their visuals or, with ``glyphs=True``, a box with the body's
    mass and principal moments of inertia. A model's gravity (m/s^2, world axes) goes
    to ``results.meta["gravity"]``, so that views of a saved file put it down.
    Returns ``results``.
    """
    if isinstance(model, dict):
        for name, src in model.items():
            if bodies is not None and name not in bodies:
                continue
            try:
                g = reduced_body_geometry(src)
            except FlexmbdError:
                g = visual_geometry(src)
            results.geometry[_name(name)] = g.to_arrays()
        return results
    for b in model.bodies() if bodies is None else bodies:
        g = body_geometry(b, glyph=glyphs)
        if g is not None:
            results.geometry[b.name] = g.to_arrays()
    g = gravity_of(model)
    if g is not None and "gravity" not in results.meta:  # views put -gravity up
        results.meta["gravity"] = [float(v) for v in g]
    return results
