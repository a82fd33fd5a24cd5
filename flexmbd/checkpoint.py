"""Checkpoint, resume and failure handling for time integration.

:func:`run` drives any integrator that follows the *stepper contract* below,
records its samples into :class:`~flexmbd.results.Results`, shows a progress bar,
appends results to an HDF5 checkpoint file every ``every`` steps together with
the integrator's complete state, and turns a failure into a
:class:`~flexmbd.errors.SolverError` carrying the partial results (also written to
the checkpoint file when one is given). :func:`resume` continues a checkpointed run
so that the result is **bit-identical** to an uninterrupted run.

Every integrator of flexmbd follows the contract (explicit RK4 / RK45 / DOP853 of
the recursive formulation, trees and closed loops; Newmark, HHT and
generalized-alpha of the absolute formulation, the compiled engine included), so ::

    res = m.simulate(2.0, dt=1e-3, integrator="rk4", checkpoint="run.h5", every=500)
    res = fm.resume("run.h5")            # same process: continues where it stopped
    res = fm.resume("run.h5", model=m)   # new process: the model built as before

Stepper contract
----------------
An integrator object handed to :func:`run` provides:

``t``
    Current time (float, s).
``step()``
    Advance by one (possibly adaptive) step. Raise :class:`SolverError` (or any
    exception: it is wrapped) when the step fails.
``sample()``
    The state to record at the current time: a dict with ``"q"``, ``"qd"`` and
    optionally ``"qdd"``, ``"reactions"`` (n_joints, 6), ``"energy:K"``,
    ``"stats:K"`` and ``"extra:K"`` (e.g. ``"extra:lambda"``; ``"extra:modal:rod"``,
    ``"extra:position:crank"`` fill the typed :class:`~flexmbd.results.BodySeries`);
    the same keys at every call. ``qdd`` and ``reactions`` not sampled are NaN in
    the recorded rows.
``header()``
    ``{"coordinates": [(owner, label)...], "speeds": [...], "joint_names": [...],
    "meta": {...}}`` (JSON-serializable) describing the columns.
``state_dict()``
    Everything the following steps depend on, as a dict of numpy arrays, numbers,
    strings, booleans or nested dicts of those: time, coordinates, speeds, the
    accelerations and auxiliary variables of multistep / generalized-alpha schemes,
    the current (adaptive) step size, error-controller memory, counters and random
    generator states (``rng.bit_generator.state``). Floats must be stored as they
    are (no rounding), so that restoring them gives the same bits.
``load_state_dict(state)``
    Restore exactly that state in an integrator built for the same system and
    options. After ``b.load_state_dict(a.state_dict())``, ``a`` and ``b`` must
    produce bitwise identical steps.
``spec()`` (optional)
    ``{"factory": "package.module:callable", "kwargs": {...}}``: how :func:`resume`
    rebuilds the integrator without help (``callable(**kwargs)`` returns a fresh
    stepper). With ``"needs_model": True`` the factory is also given the model
    (``callable(model=..., **kwargs)``), the one passed to :func:`resume` or the
    live model of the run in this process. Without a spec, pass the stepper to
    :func:`resume` yourself.

Optional extensions (used by the integrators of flexmbd):

``done``
    True when the stepper reached its end (fixed-step schemes end on their last
    whole step); without it the run ends when ``t`` reaches ``t_end``.
``set_t_end(t_end)``
    Called by :func:`run` with the requested end time (a stepper that cannot
    change its end raises :class:`~flexmbd.errors.FlexmbdError`).
``advance(n)``
    Take up to ``n`` steps at once (``None``: all that remain) and return
    ``(rows, error)``: ``rows`` a dict ``{"t": (k,), key: (k, ...)}`` with the sample
    keys of the ``k`` steps completed, ``error`` None or the exception that stopped
    the block after them (the stepper then stays at its last good step). Used
    instead of ``step``/``sample`` for compiled step loops (they run in blocks that
    end on the checkpoints); ``n_total`` (optional) is the number of steps of the
    whole run, for the progress bar.
``checks_finite``
    True when ``step`` itself raises on non-finite coordinates and speeds (the
    driver then skips its own check).
``finalize(results, failed=False)``
    Turn the recorded rows (the whole run, or everything up to a failure) into the
    Results returned to the user: quantities computed after the run from the
    recorded states (accelerations, reactions and energies of the explicit
    integrators, sign-continuous orientations, integrated works). It is called on
    the complete history, so those quantities are the same as in an
    uninterrupted run.

Checkpoint file
---------------
A results HDF5 file (see :mod:`flexmbd.results`, time series resizable) plus a
group ``/checkpoint`` with the integrator ``state`` (datasets, nested groups), and
attributes ``n_samples`` (rows belonging to that state), ``n_steps``, ``t``,
``t_end``, ``every``, ``record_every``, ``status`` (``running``, ``finished`` or
``failed``), ``error``, ``spec`` and ``run_id``. While running, the root holds the
recorded rows; when a stepper with ``finalize`` finishes or fails, the rows move to
``/checkpoint/rows`` and the root holds the finalized results. ``Results.load(
"run.h5")`` reads the root (after a failure: every sample up to the failure);
:func:`resume` moves the rows back, cuts them to ``n_samples`` and restarts from
the saved state, the last good one. ``/checkpoint/model_fingerprint`` (JSON text)
holds :func:`flexmbd.fingerprint.model_fingerprint` of the run's model, when the
stepper has one (``stepper.system.model``).

Safety of the file
------------------
A new run checks the path before any work (:func:`check_checkpoint`): a directory,
a missing or read-only directory, or an existing file are refused (an existing file
is replaced only with ``overwrite=True``, and then only once the new run's first
checkpoint is complete: it is written next to the path and moved over it). While a
run or a resume lasts it holds ``<path>.lock`` (:class:`flexmbd.fileio.FileLock`):
a second process using the same path is refused before it opens the file. The lock
dies with its process, so a killed run can be resumed at once. :func:`resume`
refuses a model whose parameters differ from the checkpointed run's
(``allow_model_change=True`` to continue anyway).
"""

from __future__ import annotations

import importlib
import json
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import FileError, FlexmbdError, ModelError, SolverError
from .fileio import (
    READ_ERRORS,
    FileLock,
    atomic_write,
    check_readable,
    check_writable,
    read_failure,
    sniff,
)
from .fingerprint import fingerprint_difference, model_fingerprint
from .model.flexible import stiffening_hint
from .progress import progress as _progress
from .results import H5_ENTRIES, Results, complete, h5_append, h5_read, h5_truncate, h5_write

if TYPE_CHECKING:
    from typing import Any

    from ._typing import StrPath
    from .model import Model

__all__ = [
    "run",
    "resume",
    "Recorder",
    "read_checkpoint",
    "save_state",
    "load_state",
    "start_failure",
    "check_checkpoint",
]


# -- sample recorder ------------------------------------------------------------------
_FLOAT_KEYS = ("t", "q", "qd", "qdd", "reactions")


class Recorder:
    """Collects samples into growing numpy arrays (amortized doubling) -> Results."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.header = dict(header)
        self._data = {}
        self.n = 0

    def _allocate(self, row, n):
        for k, v in row.items():
            v = np.asarray(v)
            dtype = np.float64 if k in _FLOAT_KEYS or k.startswith("energy:") else v.dtype
            self._data[k] = np.empty((max(n, 16),) + v.shape, dtype=dtype)

    def _grow(self, n_more):
        need = self.n + n_more
        for k, buf in self._data.items():
            if need > len(buf):
                new = np.empty((max(need, 2 * len(buf)),) + buf.shape[1:], dtype=buf.dtype)
                new[: self.n] = buf[: self.n]
                self._data[k] = new

    def add(self, t: float, sample: dict[str, Any]) -> None:
        data = self._data
        if not data:
            row = {"t": np.float64(t)}
            row.update(sample)
            self._allocate(row, 16)
            data = self._data
        elif len(sample) + 1 != len(data) or not all(k in data for k in sample):
            raise FlexmbdError(
                f"the integrator's sample keys changed: {sorted(sample)} vs {sorted(data)}"
            )
        n = self.n
        if n == len(data["t"]):
            self._grow(1)
            data = self._data
        data["t"][n] = t
        for k, v in sample.items():
            data[k][n] = v
        self.n = n + 1

    def add_block(self, rows: dict[str, Any]) -> None:
        """Append ``k`` samples at once: ``rows = {"t": (k,), key: (k, ...)}``."""
        k = len(rows["t"])
        if not k:
            return
        if not self._data:
            self._allocate({key: np.asarray(v)[0] for key, v in rows.items()}, k)
        elif rows.keys() != self._data.keys():
            raise FlexmbdError(
                f"the integrator's sample keys changed: {sorted(rows)} vs {sorted(self._data)}"
            )
        self._grow(k)
        for key, v in rows.items():
            self._data[key][self.n : self.n + k] = v
        self.n += k

    def results(self, copy: bool = True) -> Results:
        """Results of the samples recorded so far (copies, or views of the buffers with
        ``copy=False``); unsampled qdd/reactions are NaN."""
        h = self.header
        d = {k: (v[: self.n].copy() if copy else v[: self.n]) for k, v in self._data.items()}
        nt = self.n
        nq, nv = len(h.get("coordinates", ())), len(h.get("speeds", ()))
        nj = len(h.get("joint_names", ()))
        grab = lambda prefix: {k[len(prefix) :]: v for k, v in d.items() if k.startswith(prefix)}
        qdd = d.get("qdd")
        reac = d.get("reactions")
        return Results(
            d.get("t", np.zeros(0)),
            d.get("q", np.zeros((nt, nq))),
            d.get("qd", np.zeros((nt, nv))),
            np.full((nt, nv), np.nan) if qdd is None else qdd,
            coordinates=h.get("coordinates", ()),
            speeds=h.get("speeds", ()),
            joint_names=h.get("joint_names", ()),
            reactions=np.full((nt, nj, 6), np.nan) if reac is None else reac,
            energy=grab("energy:"),
            stats=grab("stats:"),
            extra=grab("extra:"),
            meta=h.get("meta", {}),
        )

    def clear(self) -> None:
        self.n = 0


# -- state (nested dicts) in HDF5 -------------------------------------------------------
def save_state(group: Any, state: dict[str, Any]) -> None:
    """Write a (nested) state dict into an h5py group: arrays/numbers as datasets."""
    for k, v in state.items():
        k = str(k)
        if isinstance(v, dict):
            save_state(group.create_group(k), v)
        elif isinstance(v, str):
            group.attrs[k] = v
        elif v is None:
            group.attrs[k] = "__none__"
        elif isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
            group.attrs[k] = f"__int__{v}"  # e.g. 128-bit random generator states
        else:
            a = np.asarray(v)
            if a.dtype == object:
                raise FlexmbdError(
                    f"state entry {k!r} is not numeric ({type(v).__name__}); state_dict() must "
                    f"return arrays, numbers, strings or nested dicts"
                )
            ds = group.create_dataset(k, data=a)
            ds.attrs["py_type"] = type(v).__name__ if np.isscalar(v) else "ndarray"


def load_state(group: Any) -> dict[str, Any]:
    """Inverse of :func:`save_state` (Python ints/floats/bools come back as such)."""
    out = {}
    for k, v in group.attrs.items():
        v = str(v)
        out[k] = None if v == "__none__" else int(v[7:]) if v.startswith("__int__") else v
    for k, item in group.items():
        if hasattr(item, "keys"):
            out[k] = load_state(item)
            continue
        v = item[()]
        kind = item.attrs.get("py_type", "ndarray")
        if kind == "int":
            v = int(v)
        elif kind == "float":
            v = float(v)
        elif kind == "bool":
            v = bool(v)
        elif kind != "ndarray":
            v = np.asarray(v)[()]
        out[k] = v
    return out


def _h5py():
    try:
        import h5py
    except ImportError as err:  # pragma: no cover - optional extra
        raise FlexmbdError("checkpoints need h5py: pip install 'flexmbd[io]'") from err
    return h5py


_ROWS = "checkpoint/rows"


def _stash_rows(f):
    """Move the recorded rows from the root to ``/checkpoint/rows`` (links only, no copy)."""
    rows = f.require_group(_ROWS)
    rows.attrs["flexmbd_header"] = f.attrs["flexmbd_header"]
    for name in H5_ENTRIES:
        if name in f:
            f.move(name, f"{_ROWS}/{name}")


def _unstash_rows(f):
    """Undo :func:`_stash_rows`: drop the finalized results, rows back at the root."""
    if _ROWS not in f:
        return
    for name in H5_ENTRIES:
        if name in f:
            del f[name]
    rows = f[_ROWS]
    f.attrs["flexmbd_header"] = rows.attrs["flexmbd_header"]
    for name in list(rows.keys()):
        f.move(f"{_ROWS}/{name}", name)
    del f[_ROWS]


def _rows_group(f):
    return f[_ROWS] if _ROWS in f else f


class _Checkpoint:
    """Open checkpoint file: appends samples and replaces the saved state."""

    def __init__(self, path, fresh, meta, fingerprint=None):
        self.path = Path(path)
        self.h5py = _h5py()
        self.fresh = fresh
        self.meta = meta
        self.fingerprint = fingerprint  # written with the first state (JSON text)
        self.initialized = not fresh

    def write(self, rec, stepper, n_steps, status="running", error=None, save=True):
        if not self.initialized:
            # the first write builds the whole file next to the target and then moves it
            # over the path: an old file (overwrite=True) is replaced only by a complete one
            with atomic_write(self.path, "checkpoint file") as tmp:
                with self.h5py.File(tmp, "w") as f:
                    h5_write(f, rec.results(), resizable=True)
                    self._write_state(f, rec, stepper, n_steps, status, error, save)
            self.initialized = True
            return
        try:
            with self.h5py.File(self.path, "a") as f:
                if rec.n:
                    h5_append(f, rec.results())
                self._write_state(f, rec, stepper, n_steps, status, error, save)
        except OSError as err:
            raise FileError(
                f"cannot write the checkpoint file {str(self.path)!r}: {err}; check the "
                f"directory and the free disk space (or run without checkpoint=)"
            ) from err

    def _write_state(self, f, rec, stepper, n_steps, status, error, save):
        """The rows are in ``f``: clear the recorder, store state and attributes."""
        rec.clear()
        cp = f.require_group("checkpoint")
        if save:
            if "state" in cp:
                del cp["state"]
            save_state(cp.create_group("state"), stepper.state_dict())
            cp.attrs["n_samples"] = f["t"].shape[0]
            cp.attrs["n_steps"] = n_steps
            cp.attrs["t"] = float(stepper.t)
        for k, v in self.meta.items():
            cp.attrs[k] = v
        if self.fingerprint is not None:
            if "model_fingerprint" in cp:
                del cp["model_fingerprint"]
            cp.create_dataset("model_fingerprint", data=np.bytes_(self.fingerprint.encode()))
            self.fingerprint = None
        cp.attrs["status"] = status
        cp.attrs["error"] = "" if error is None else str(error)
        f.flush()

    def rows(self):
        """Every recorded row in the file."""
        with self.h5py.File(self.path, "r") as f:
            return h5_read(_rows_group(f))

    def write_final(self, res):
        """Store the finalized results at the root (the rows move to ``/checkpoint/rows``)."""
        with self.h5py.File(self.path, "a") as f:
            _stash_rows(f)
            h5_write(f, res)
            f.flush()


_CP_HINT = (
    "a checkpoint file is written by simulate(..., checkpoint=path) or "
    "`flexmbd simulate --checkpoint path`"
)


def read_checkpoint(path: StrPath) -> tuple[Results, dict[str, Any], dict[str, Any]]:
    """``(recorded rows up to the saved state, state dict, attributes)`` of a checkpoint file.

    Raises :class:`~flexmbd.errors.FileError` naming the file when it is missing, not
    HDF5, truncated or holds no integrator state.
    """
    path = check_readable(path, "checkpoint file")
    kind = sniff(path)
    if kind != "hdf5":
        raise read_failure(path, "checkpoint file", ValueError(kind), _CP_HINT)
    h5py = _h5py()
    try:
        with h5py.File(path, "r") as f:
            if "checkpoint" not in f or "state" not in f["checkpoint"]:
                raise FileError(
                    f"{str(path)!r} holds no integrator state: it is not a checkpoint written "
                    f"by flexmbd.checkpoint.run (or the run failed before its first "
                    f"checkpoint); {_CP_HINT}"
                )
            cp = f["checkpoint"]
            attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in cp.attrs.items()}
            for key in ("n_samples", "n_steps", "t_end", "every", "record_every"):
                if key not in attrs:
                    raise KeyError(key)
            res = h5_read(_rows_group(f), stop=int(attrs["n_samples"]))
            state = load_state(cp["state"])
            if "model_fingerprint" in cp:
                attrs["model_fingerprint"] = json.loads(cp["model_fingerprint"][()].decode())
    except FlexmbdError:
        raise
    except READ_ERRORS as err:
        raise read_failure(path, "checkpoint file", err, _CP_HINT) from None
    return res, state, attrs


def _describe(path):
    """One phrase on what an existing checkpoint file holds (best effort)."""
    try:
        with _h5py().File(path, "r") as f:
            a = f["checkpoint"].attrs
            return (
                f"a {a['status']} run saved at t = {float(a['t']):.6g} s of "
                f"{float(a['t_end']):.6g} s"
            )
    except Exception:  # noqa: BLE001 - only a description
        return "a file"


def check_checkpoint(path: StrPath, overwrite: bool = False) -> Path:
    """Refuse, before any work, a ``checkpoint=`` path that a new run cannot use.

    Raises :class:`~flexmbd.errors.FileError` when the path is a directory, its
    directory is missing or not writable, another run holds it (``<path>.lock``), or a
    file is already there and ``overwrite`` is false (saved work is never deleted
    silently: resume it with :func:`resume`, or pass ``overwrite=True``). Returns
    ``Path(path)``.
    """
    path = check_writable(path, "checkpoint file")
    with FileLock(path):  # busy: another process runs on this file
        pass
    if path.exists() and not overwrite:
        raise FileError(
            f"the checkpoint file {str(path)!r} already exists ({_describe(path)}); nothing "
            f"was changed. Continue that run with fm.resume({str(path)!r}, model=m) (CLI: "
            f"--resume {path}), or replace it with overwrite=True (CLI: --overwrite), or "
            f"choose another path"
        )
    return path


def _model_of(stepper):
    return getattr(getattr(stepper, "system", None), "model", None)


def _fingerprint(stepper):
    model = _model_of(stepper)
    if model is None or not hasattr(model, "component_objects"):
        return None

    try:
        return json.dumps(model_fingerprint(model), sort_keys=True)
    except Exception:  # noqa: BLE001 - a fingerprint must never stop a run
        return None


# -- live runs of this process (resume without rebuilding the model) -------------------
_LIVE = {}


def _live_key(path):
    return str(Path(path).resolve())


# -- driver ----------------------------------------------------------------------------
def _spec(stepper):
    spec = getattr(stepper, "spec", None)
    return json.dumps(spec() if callable(spec) else None)


_BAR = "{desc}: {percentage:3.0f} %|{bar}| {n:.4g}/{total:.4g} s [{elapsed}<{remaining}]"


def run(
    stepper: Any,
    t_end: float,
    *,
    checkpoint: StrPath | None = None,
    every: int = 100,
    record_every: int = 1,
    progress: bool | None = None,
    desc: str | None = None,
    overwrite: bool = False,
    _resume: Any = None,
) -> Results:
    """Step ``stepper`` until ``t_end``; return :class:`~flexmbd.results.Results`.

    Parameters
    ----------
    stepper : object following the stepper contract (module docstring)
    t_end : float
        Final time (s); the last step may end at ``t_end`` within 1e-12 relative.
    checkpoint : path, optional
        HDF5 checkpoint file (created, or continued by :func:`resume`).
    every : int
        Steps between checkpoints (results appended and state saved); rounded up to
        a multiple of ``record_every``.
    record_every : int
        Record one sample every this many steps (the first and last always).
    progress : bool or None
        Progress bar over simulated time (None: automatic, see
        :mod:`flexmbd.progress`; then shown only once a run lasts a second).
    overwrite : bool
        Replace an existing ``checkpoint`` file (without it an existing file is refused
        with :class:`~flexmbd.errors.FileError`: resume it instead). The old file stays
        until the new run's first checkpoint is complete.

    Raises :class:`SolverError` with ``.partial`` (Results up to the failure) and
    ``.time`` when a step fails or produces non-finite coordinates; the partial
    results are also written to the checkpoint file, whose saved state stays the
    last good one. The checkpoint file is locked (``<checkpoint>.lock``) while the
    run lasts: a second run on the same file is refused before it touches it.
    """
    if checkpoint is None:
        return _run(stepper, t_end, None, every, record_every, progress, desc, _resume)
    with FileLock(checkpoint):
        if _resume is None:
            check_checkpoint(checkpoint, overwrite)
        return _run(stepper, t_end, checkpoint, every, record_every, progress, desc, _resume)


def _run(stepper, t_end, checkpoint, every, record_every, progress, desc, _resume):
    t_end = float(t_end)
    set_end = getattr(stepper, "set_t_end", None)
    if set_end is not None:
        set_end(t_end)
    record_every = max(int(record_every), 1)
    # checkpoints fall on recorded steps: the samples do not depend on ``every``
    every = -(-max(int(every), 1) // record_every) * record_every
    header = stepper.header()
    rec = Recorder(header)
    prior = None
    n_steps = 0
    if _resume is None:
        rec.add(stepper.t, stepper.sample())
    else:
        prior, n_steps = _resume
    cp = None
    if checkpoint is not None:
        meta = {
            "t_end": t_end,
            "every": every,
            "record_every": record_every,
            "spec": _spec(stepper),
        }
        if _resume is None:
            meta["run_id"] = uuid.uuid4().hex
        cp = _Checkpoint(
            checkpoint, fresh=_resume is None, meta=meta, fingerprint=_fingerprint(stepper)
        )
        if _resume is None:
            cp.write(rec, stepper, n_steps)
            _LIVE[_live_key(checkpoint)] = (meta["run_id"], stepper)
    tol = 1e-12 * max(abs(t_end), 1.0)
    has_done = hasattr(stepper, "done")
    checked = bool(getattr(stepper, "checks_finite", False))
    block = getattr(stepper, "advance", None)
    t0 = float(stepper.t)
    last_recorded = True
    show = cp is None and block is not None
    # an automatic bar (a terminal) waits a second: short runs stay quiet
    auto = progress is None and os.environ.get("FLEXMBD_PROGRESS") is None
    with _progress(
        total=max(t_end - t0, 0.0),
        desc=desc or type(stepper).__name__,
        enabled=progress,
        unit="s",
        delay=1.0 if auto else 0.0,
        bar_format=_BAR,
    ) as bar:
        chunk = None
        if show and not _is_null(bar):
            total = getattr(stepper, "n_total", None)
            chunk = max(1, int(total) // 100) if total else every
        while not (stepper.done if has_done else stepper.t >= t_end - tol):
            t_before = float(stepper.t)
            if block is not None:
                n = every - n_steps % every if cp is not None else chunk
                try:
                    rows, err = block(n)
                except Exception as exc:  # noqa: BLE001 - every failure keeps the results
                    rows, err = None, exc
                k = 0 if rows is None else len(rows["t"])
                if k:
                    steps = n_steps + 1 + np.arange(k)
                    keep = steps % record_every == 0
                    rec.add_block(rows if keep.all() else {key: v[keep] for key, v in rows.items()})
                    last_recorded = bool(keep[-1])
                    n_steps += k
                if err is not None:
                    t_fail = float(stepper.t) if k else t_before
                    raise _failure(err, rec, prior, cp, stepper, n_steps, t_fail) from (
                        None if isinstance(err, SolverError) else err
                    )
            else:
                try:
                    stepper.step()
                    sample = stepper.sample()
                    if not checked and not (
                        np.all(np.isfinite(sample["q"])) and np.all(np.isfinite(sample["qd"]))
                    ):
                        raise SolverError(
                            f"non-finite coordinates or speeds after the step from t = "
                            f"{t_before:.9g} s to {float(stepper.t):.9g} s (the step size may "
                            f"be too large or the model unstable: reduce the step)",
                            time=float(stepper.t),
                        )
                except Exception as err:  # noqa: BLE001 - every failure keeps the results
                    raise _failure(err, rec, prior, cp, stepper, n_steps, t_before) from (
                        None if isinstance(err, SolverError) else err
                    )
                n_steps += 1
                last_recorded = n_steps % record_every == 0
                if last_recorded:
                    rec.add(stepper.t, sample)
            if cp is not None and n_steps % every == 0:
                cp.write(rec, stepper, n_steps)
            bar.update(float(stepper.t) - t_before)
        if not last_recorded:
            rec.add(stepper.t, stepper.sample())
    finalize = getattr(stepper, "finalize", None)
    if cp is not None:
        cp.write(rec, stepper, n_steps, status="finished")
        rows = cp.rows()
        if finalize is None:
            return rows
        res = _complete(finalize(rows), stepper)
        cp.write_final(res)
        return res
    rows = rec.results(copy=False)  # the recorder ends here: its buffers are the rows
    if prior is not None:
        rows = Results.concatenate([prior, rows])
    return rows if finalize is None else _complete(finalize(rows), stepper)


def _complete(res, stepper):
    """The finishing step of every formulation (:func:`flexmbd.results.complete`)."""
    return complete(res, getattr(stepper, "system", None))


def start_failure(
    err: BaseException, checkpoint: StrPath | None, overwrite: bool = False
) -> BaseException:
    """``err`` (a :class:`SolverError` raised while an integrator starts, before
    :func:`run`: e.g. a singular system at the initial state) with its partial results
    written to the ``checkpoint`` file, when both are given. That file holds results but
    no integrator state (:func:`resume` says so). An existing file is replaced only with
    ``overwrite`` (atomically), never while another run holds it."""
    if checkpoint is not None and getattr(err, "partial", None) is not None:
        try:
            path = Path(checkpoint)
            with FileLock(path):
                if path.exists() and not overwrite:
                    return err
                err.partial.save(path, format="h5")
        except Exception:  # noqa: BLE001 - never hide the original failure
            return err
        if err.args:
            err.args = (f"{err.args[0]} (partial results written to {str(path)!r})",) + err.args[1:]
    return err


def _is_null(bar):
    return type(bar).__name__ == "NullBar"


def _model_hint(stepper):
    """Advice on the model of a failed run (geometrically stiffened flexible bodies)."""
    model = getattr(getattr(stepper, "system", None), "model", None)
    if model is None:
        return ""

    try:
        return stiffening_hint(model)
    except Exception:  # noqa: BLE001 - advice must never hide the failure
        return ""


def _failure(err, rec, prior, cp, stepper, n_steps, t_fail):
    partial = rec.results()
    if cp is not None:
        try:
            cp.write(rec, stepper, n_steps, status="failed", error=err, save=False)
            partial = cp.rows()
        except Exception:  # noqa: BLE001 - never hide the original failure
            pass
    elif prior is not None:
        partial = Results.concatenate([prior, partial])
    finalize = getattr(stepper, "finalize", None)
    if finalize is not None:
        try:
            partial = finalize(partial, failed=True)
            try:
                partial = _complete(partial, stepper)
            except Exception:  # noqa: BLE001 - joint histories are extras of a failure
                pass
            if cp is not None:
                cp.write_final(partial)
        except Exception:  # noqa: BLE001 - keep the recorded rows
            pass
    where = f" (partial results written to {str(cp.path)!r})" if cp is not None else ""
    hint = _model_hint(stepper)
    if hint:
        where += f". Note: {hint}"
    if isinstance(err, SolverError):
        err.partial = partial
        err.time = t_fail if err.time is None else err.time
        if where and err.args:
            err.args = (str(err.args[0]) + where,) + err.args[1:]
        return err
    return SolverError(
        f"integration failed after t = {t_fail:.9g} s (the last good state): "
        f"{type(err).__name__}: {err}{where}",
        partial=partial,
        time=t_fail,
    )


def resume(
    path: StrPath,
    stepper: Any | None = None,
    *,
    model: Model | None = None,
    t_end: float | None = None,
    every: int | None = None,
    progress: bool | None = None,
    allow_model_change: bool = False,
    **options: Any,
) -> Results:
    """Continue a checkpointed run to its ``t_end`` (or a new one); return all Results.

    Parameters
    ----------
    path : str or Path
        Checkpoint file written by a run with ``checkpoint=path``.
    stepper : optional
        A fresh integrator for the same system and options (contract above).
    model : flexmbd.Model, optional
        For runs started by ``Model.simulate`` / ``System.simulate``: the model built
        as for the original run (a new process). In the process that started the
        run it may be omitted: the run's own integrator is reused.
    t_end : float, optional
        A new end time (fixed-step integrators; s).
    every : int, optional
        New checkpoint interval (steps).
    allow_model_change : bool
        Continue even though the model's parameters differ from those of the
        checkpointed run (its fingerprint, :mod:`flexmbd.fingerprint`); the quantities
        computed after the run (energies, reactions) of the whole history then come
        from the new model. Without it such a model is refused.
    options
        Functions of the original run that a file cannot hold (``tau=...``,
        ``callback=...``) when rebuilding from ``model``.

    The continuation is bit-identical to an uninterrupted run, and the file keeps
    being checkpointed. Raises :class:`~flexmbd.errors.FileError` when the file is
    missing, damaged or in use by another run, :class:`~flexmbd.errors.ModelError`
    when the model's parameters differ from the checkpointed run's, and
    :class:`~flexmbd.errors.FlexmbdError` when the model or the integrator do not
    match.
    """
    path = check_readable(path, "checkpoint file")
    with FileLock(path):
        return _resume(path, stepper, model, t_end, every, progress, allow_model_change, options)


def _resume(path, stepper, model, t_end, every, progress, allow_model_change, options):
    res, state, attrs = read_checkpoint(path)
    if stepper is None:
        stepper = _rebuild(path, attrs, model, options)
    elif model is not None or options:
        raise FlexmbdError("resume: pass either a stepper or a model (with options), not both")
    _check_header(path, res, stepper)
    if not allow_model_change:
        _check_fingerprint(path, attrs, stepper)
    stepper.load_state_dict(state)
    try:
        with _h5py().File(path, "a") as f:
            _unstash_rows(f)
            h5_truncate(f, int(attrs["n_samples"]))
    except OSError as err:
        raise FileError(
            f"cannot continue the checkpoint file {str(path)!r}: {err}; it must "
            f"be writable (permissions, free disk space)"
        ) from err
    _LIVE[_live_key(path)] = (attrs.get("run_id"), stepper)
    system = getattr(stepper, "system", None)
    try:
        out = run(
            stepper,
            attrs["t_end"] if t_end is None else t_end,
            checkpoint=path,
            every=attrs["every"] if every is None else every,
            record_every=attrs["record_every"],
            progress=progress,
            _resume=(res, int(attrs["n_steps"])),
        )
    except SolverError as err:
        if system is not None and err.partial is not None:
            err.partial.system = system
        raise
    if system is not None:
        out.system = system  # body poses on request, as Model.simulate
    return out


def _rebuild(path, attrs, model, options):
    spec = json.loads(attrs.get("spec") or "null")
    if not spec:
        raise FlexmbdError(
            f"{str(path)!r} does not say how to rebuild its integrator (no spec()); pass "
            f"resume(path, stepper) with an integrator built for the same system and options"
        )
    if spec.get("needs_model") and model is None:
        live = _LIVE.get(_live_key(path))
        if live is not None and live[0] == attrs.get("run_id") and not options:
            return live[1]
        raise FlexmbdError(
            f"{str(path)!r} was written by a run of model {spec.get('model')!r} that is not "
            f"alive in this process: build the model as for that run and pass it, "
            f"fm.resume({str(path)!r}, model=m)"
        )
    module, _, name = spec["factory"].partition(":")
    factory = importlib.import_module(module)
    for part in name.split("."):
        factory = getattr(factory, part)
    kwargs = dict(spec.get("kwargs", {}))
    if spec.get("needs_model"):
        kwargs["model"] = model
        kwargs["overrides"] = options
    elif options:
        raise FlexmbdError(f"resume: unexpected options {sorted(options)} for this integrator")
    return factory(**kwargs)


def _check_fingerprint(path, attrs, stepper):
    """Refuse a model whose parameters differ from those of the checkpointed run."""
    old = attrs.get("model_fingerprint")
    new = _fingerprint(stepper)
    if old is None or new is None:
        return
    new = json.loads(new)
    if old.get("digest") == new.get("digest"):
        return
    what = ", ".join(fingerprint_difference(old, new)) or "its parameters"
    raise ModelError(
        f"resume: model {_model_of(stepper).name!r} differs from the model of the run "
        f"checkpointed in {str(path)!r} ({what}); build it exactly as for that run, or pass "
        f"allow_model_change=True (CLI: --allow-model-change) to continue with this model "
        f"(energies and reactions of the whole run are then recomputed with it)"
    )


def _check_header(path, res, stepper):
    h = stepper.header()
    for key, have in (
        ("coordinates", res.coordinates),
        ("speeds", res.speeds),
        ("joint_names", res.joint_names),
    ):
        want = [tuple(x) if isinstance(x, (list, tuple)) else x for x in h.get(key, ())]
        if list(have) != want:
            raise FlexmbdError(
                f"resume: the integrator's {key} differ from those in {str(path)!r} "
                f"({len(want)} vs {len(have)}); rebuild the model exactly as for the "
                f"checkpointed run"
            )
