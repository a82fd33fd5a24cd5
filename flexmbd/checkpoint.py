"""Checkpoint, resume and failure handling for time integration.

:func:`run` drives any integrator that follows the *stepper contract* below,
records its samples into :class:`~flexmbd.results.Results`, shows a progress bar,
appends results to an HDF5 checkpoint file every ``every`` steps together with
the integrator's complete state, and turns a failure into a
:class:`~flexmbd.errors.SolverError` carrying the partial results (also written to
the checkpoint file when one is given). :func:`resume` continues a checkpointed run
so that the result is **bit-identical** to an uninterrupted run.

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
    ``"stats:K"`` and ``"extra:K"`` (e.g. ``"modal:rod"``, ``"position:crank"``);
    the same keys at every call.
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
    stepper). Without it, pass the stepper to :func:`resume` yourself (for a model:
    compile it again and create the integrator with the same options).

Checkpoint file
---------------
A results HDF5 file (see :mod:`flexmbd.results`, time series resizable) plus a
group ``/checkpoint`` with the integrator ``state`` (datasets, nested groups), and
attributes ``n_samples`` (rows belonging to that state), ``n_steps``, ``t``,
``t_end``, ``every``, ``record_every``, ``status`` (``running``, ``finished`` or
``failed``), ``error`` and ``spec``. ``Results.load("run.h5")`` reads it as results
(after a failure: every sample up to the failure); :func:`resume` cuts the rows
back to ``n_samples`` and restarts from the saved state, the last good one.
"""

import importlib
import json
from pathlib import Path

import numpy as np

from .errors import FlexmbdError, SolverError
from .progress import progress as _progress
from .results import Results, h5_append, h5_read, h5_truncate, h5_write

__all__ = ["run", "resume", "Recorder", "read_checkpoint", "save_state", "load_state"]


# -- sample recorder ------------------------------------------------------------------
_FLOAT_KEYS = ("t", "q", "qd", "qdd", "reactions")

class Recorder:
    """Collects samples into growing numpy arrays (amortized doubling) -> Results."""

    def __init__(self, header):
        self.header = dict(header)
        self._data = {}
        self.n = 0

    def add(self, t, sample):
        row = {"t": np.float64(t)}
        row.update(sample)
        if not self._data:
            for k, v in row.items():
                v = np.asarray(v)
                dtype = np.float64 if k in _FLOAT_KEYS or k.startswith("energy:") else v.dtype
                self._data[k] = np.empty((16,) + v.shape, dtype=dtype)
        elif row.keys() != self._data.keys():
            raise FlexmbdError(
                f"the integrator's sample keys changed: {sorted(row)} vs {sorted(self._data)}"
            )
        for k, v in row.items():
            buf = self._data[k]
            if self.n == len(buf):
                buf = np.concatenate([buf, np.empty_like(buf)])
                self._data[k] = buf
            buf[self.n] = v
        self.n += 1

    def results(self):
        """Results of the samples recorded so far (copies)."""
        h = self.header
        d = {k: v[:self.n].copy() for k, v in self._data.items()}
        nt = self.n
        nq, nv = len(h.get("coordinates", ())), len(h.get("speeds", ()))
        grab = lambda prefix: {k[len(prefix):]: v for k, v in d.items() if k.startswith(prefix)}
        return Results(
            d.get("t", np.zeros(0)), d.get("q", np.zeros((nt, nq))),
            d.get("qd", np.zeros((nt, nv))), d.get("qdd"),
            coordinates=h.get("coordinates", ()), speeds=h.get("speeds", ()),
            joint_names=h.get("joint_names", ()), reactions=d.get("reactions"),
            energy=grab("energy:"), stats=grab("stats:"), extra=grab("extra:"),
            meta=h.get("meta", {}),
        )

    def clear(self):
        self.n = 0


# -- state (nested dicts) in HDF5 -------------------------------------------------------
def save_state(group, state):
    """Write a (nested) state dict into an h5py group: arrays/numbers as datasets."""
    for k, v in state.items():
        k = str(k)
        if isinstance(v, dict):
            save_state(group.create_group(k), v)
        elif isinstance(v, str):
            group.attrs[k] = v
        elif v is None:
            group.attrs[k] = "__none__"
        elif isinstance(v, int) and not isinstance(v, bool) and not -2**63 <= v < 2**63:
            group.attrs[k] = f"__int__{v}"      # e.g. 128-bit random generator states
        else:
            a = np.asarray(v)
            if a.dtype == object:
                raise FlexmbdError(
                    f"state entry {k!r} is not numeric ({type(v).__name__}); state_dict() must "
                    f"return arrays, numbers, strings or nested dicts"
                )
            ds = group.create_dataset(k, data=a)
            ds.attrs["py_type"] = type(v).__name__ if np.isscalar(v) else "ndarray"


def load_state(group):
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


class _Checkpoint:
    """Open checkpoint file: appends samples and replaces the saved state."""

    def __init__(self, path, fresh, meta):
        self.path = Path(path)
        self.h5py = _h5py()
        self.fresh = fresh
        self.meta = meta
        self.initialized = not fresh

    def write(self, rec, stepper, n_steps, status="running", error=None, save=True):
        with self.h5py.File(self.path, "w" if not self.initialized else "a") as f:
            if not self.initialized:
                h5_write(f, rec.results(), resizable=True)
                self.initialized = True
            elif rec.n:
                h5_append(f, rec.results())
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
            cp.attrs["status"] = status
            cp.attrs["error"] = "" if error is None else str(error)
            f.flush()


def read_checkpoint(path):
    """``(results up to the saved state, state dict, attributes)`` of a checkpoint file."""
    h5py = _h5py()
    path = Path(path)
    if not path.exists():
        raise FlexmbdError(f"checkpoint file {str(path)!r} does not exist")
    with h5py.File(path, "r") as f:
        if "checkpoint" not in f or "state" not in f["checkpoint"]:
            raise FlexmbdError(
                f"{str(path)!r} holds no integrator state: it is not a checkpoint written by "
                f"flexmbd.checkpoint.run (or the run failed before its first checkpoint)"
            )
        cp = f["checkpoint"]
        attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in cp.attrs.items()}
        res = h5_read(f, stop=int(attrs["n_samples"]))
        return res, load_state(cp["state"]), attrs


# -- driver ----------------------------------------------------------------------------
def _spec(stepper):
    spec = getattr(stepper, "spec", None)
    return json.dumps(spec() if callable(spec) else None)


def run(stepper, t_end, *, checkpoint=None, every=100, record_every=1, progress=None,
        desc=None, _resume=None):
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
        Progress bar (None: automatic, see :mod:`flexmbd.progress`).

    Raises :class:`SolverError` with ``.partial`` (Results up to the failure) and
    ``.time`` when a step fails or produces non-finite coordinates; the partial
    results are also appended to the checkpoint file, whose saved state stays the
    last good one.
    """
    t_end = float(t_end)
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
        cp = _Checkpoint(checkpoint, fresh=_resume is None,
                         meta={"t_end": t_end, "every": every, "record_every": record_every,
                               "spec": _spec(stepper)})
        if _resume is None:
            cp.write(rec, stepper, n_steps)
    tol = 1e-12 * max(abs(t_end), 1.0)
    t0 = float(stepper.t)
    last_recorded = True
    with _progress(total=max(t_end - t0, 0.0), desc=desc or type(stepper).__name__,
                   enabled=progress, unit="s",
                   bar_format="{l_bar}{bar}| {n:.4g}/{total:.4g} s [{elapsed}<{remaining}]"
                   ) as bar:
        while stepper.t < t_end - tol:
            t_before = float(stepper.t)
            try:
                stepper.step()
                sample = stepper.sample()
                if not (np.all(np.isfinite(sample["q"])) and np.all(np.isfinite(sample["qd"]))):
                    raise SolverError(
                        f"non-finite coordinates or speeds after the step from t = {t_before:.9g}"
                        f" s (the step size may be too large or the model unstable)",
                        time=t_before,
                    )
            except Exception as err:  # noqa: BLE001 - every failure keeps the partial results
                raise _failure(err, rec, prior, cp, stepper, n_steps, t_before) from (
                    None if isinstance(err, SolverError) else err)
            n_steps += 1
            last_recorded = n_steps % record_every == 0
            if last_recorded:
                rec.add(stepper.t, sample)
            if cp is not None and n_steps % every == 0:
                cp.write(rec, stepper, n_steps)
            bar.update(float(stepper.t) - t_before)
        if not last_recorded:
            rec.add(stepper.t, stepper.sample())
        if cp is not None:
            cp.write(rec, stepper, n_steps, status="finished")
            res, _, _ = read_checkpoint(cp.path)
            return res
    return Results.concatenate([prior, rec.results()]) if prior is not None else rec.results()


def _failure(err, rec, prior, cp, stepper, n_steps, t_fail):
    partial = rec.results()
    if cp is not None:
        try:
            cp.write(rec, stepper, n_steps, status="failed", error=err, save=False)
            h5py = _h5py()
            with h5py.File(cp.path, "r") as f:
                partial = h5_read(f)
        except Exception:  # noqa: BLE001 - never hide the original failure
            pass
    elif prior is not None:
        partial = Results.concatenate([prior, partial])
    if isinstance(err, SolverError):
        err.partial = partial
        err.time = t_fail if err.time is None else err.time
        return err
    return SolverError(
        f"integration failed at t = {t_fail:.9g} s: {type(err).__name__}: {err}"
        + (f" (partial results written to {str(cp.path)!r})" if cp is not None else ""),
        partial=partial, time=t_fail,
    )


def resume(path, stepper=None, *, t_end=None, every=None, progress=None):
    """Continue a checkpointed run to its ``t_end`` (or a new one); return all Results.

    ``stepper``: a fresh integrator for the same system and options; when omitted it
    is rebuilt from the ``spec()`` stored in the file. The continuation is
    bit-identical to an uninterrupted run, and the file keeps being checkpointed.
    """
    res, state, attrs = read_checkpoint(path)
    if stepper is None:
        spec = json.loads(attrs.get("spec") or "null")
        if not spec:
            raise FlexmbdError(
                f"{str(path)!r} does not say how to rebuild its integrator (no spec()); pass "
                f"resume(path, stepper) with an integrator built for the same system and options"
            )
        module, _, name = spec["factory"].partition(":")
        factory = importlib.import_module(module)
        for part in name.split("."):
            factory = getattr(factory, part)
        stepper = factory(**spec.get("kwargs", {}))
    stepper.load_state_dict(state)
    with _h5py().File(path, "a") as f:
        h5_truncate(f, int(attrs["n_samples"]))
    return run(stepper, attrs["t_end"] if t_end is None else t_end, checkpoint=path,
               every=attrs["every"] if every is None else every,
               record_every=attrs["record_every"], progress=progress,
               _resume=(res, int(attrs["n_steps"])))
