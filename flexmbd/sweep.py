"""Parameter sweeps: many simulations, serially or on a Dask cluster, into one table.

>>> import flexmbd as fm                                             # doctest: +SKIP
>>> def factory(k, c):                                               # doctest: +SKIP
...     m = build_model(k=k, c=c)
...     return m
>>> df = fm.sweep(factory, {"k": [1e3, 1e4], "c": [0.0, 5.0]},      # doctest: +SKIP
...               simulate={"t_end": 1.0, "dt": 1e-3, "integrator": "newmark"})

``model_factory(**case)`` may return

* a :class:`~flexmbd.model.Model`: it is simulated with ``model.simulate(**simulate)``;
* a :class:`~flexmbd.results.Results`: used as it is (the factory ran the simulation);
* a dict of numbers: taken as the case's summary (mode-selection studies, anything
  that is not a time simulation).

Each Results is reduced to one row by ``summarize(results) -> dict`` (default
:func:`default_summary`). With ``client`` (a ``dask.distributed.Client``, local or
remote) the cases run as Dask tasks (factory, summarize and parameters must then
be picklable: module-level functions, not lambdas, for process-based workers); the
table is the same as a serial run's, in the order of the cases.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import FlexmbdError
from .model import Model
from .progress import progress as _progress

if TYPE_CHECKING:
    from .results import Results

__all__ = ["sweep", "cases", "default_summary"]


def cases(parameters: Any) -> list[dict[str, Any]]:
    """List of ``{name: value}`` dicts from a grid dict, a list of dicts or a DataFrame.

    A dict of sequences is expanded as a Cartesian product (first name varies slowest);
    scalars in it are held fixed.

    >>> cases({"k": [1, 2], "c": 0.5})
    [{'k': 1, 'c': 0.5}, {'k': 2, 'c': 0.5}]
    """
    if hasattr(parameters, "to_dict") and hasattr(parameters, "columns"):
        return [dict(r) for r in parameters.to_dict(orient="records")]
    if isinstance(parameters, dict):
        names = list(parameters)
        values = [
            v if isinstance(v, (list, tuple, np.ndarray, range)) else [v]
            for v in parameters.values()
        ]
        return [dict(zip(names, combo)) for combo in itertools.product(*values)]
    out = list(parameters)
    if not all(isinstance(c, dict) for c in out):
        raise FlexmbdError(
            "sweep parameters: give a dict of value lists (grid), a list of dicts "
            "(one per case) or a pandas DataFrame (one row per case)"
        )
    return out


def default_summary(res: Results) -> dict[str, float]:
    """Final time, final coordinates and energies, peak joint reaction forces and moments."""
    out = {"t_end": float(res.t[-1]) if len(res.t) else np.nan, "n_samples": len(res.t)}
    if not len(res.t):
        return out
    for i, (owner, lab) in enumerate(res.coordinates):
        out[f"q:{owner}:{lab}"] = float(res.q[-1, i])
    for k, v in res.energy.items():
        out[f"energy:{k}"] = float(v[-1])
    for k, name in enumerate(res.joint_names):
        r = res.reactions[:, k, :]
        out[f"max_force:{name}"] = float(np.linalg.norm(r[:, 3:], axis=1).max())
        out[f"max_moment:{name}"] = float(np.linalg.norm(r[:, :3], axis=1).max())
    if "newton_iterations" in res.stats:
        out["newton_iterations"] = int(np.sum(res.stats["newton_iterations"]))
    return out


def _run_case(factory, case, simulate, summarize, keep):
    """One case: ``(summary, results or None, error text or None, wall time)``."""
    from .results import Results

    tic = time.perf_counter()
    try:
        out = factory(**case)
        res = None
        if isinstance(out, Model):
            res = out.simulate(**(simulate or {}))
        elif isinstance(out, Results):
            res = out
        elif isinstance(out, dict):
            summary = dict(out)
        else:
            raise FlexmbdError(
                f"model_factory returned {type(out).__name__}; return a Model, Results or a "
                f"dict of numbers"
            )
        if res is not None:
            summary = (summarize or default_summary)(res)
        err = None
    except Exception as e:  # noqa: BLE001 - recorded or re-raised by the caller
        summary, res, err = {}, getattr(e, "partial", None), f"{type(e).__name__}: {e}"
    return summary, (res if keep else None), err, time.perf_counter() - tic


def sweep(
    model_factory: Callable[..., Any],
    parameters: Any,
    client: Any = None,
    *,
    simulate: Mapping[str, Any] | None = None,
    summarize: Callable[[Results], Mapping[str, float]] | None = None,
    keep_results: bool = False,
    errors: str = "raise",
    progress: bool | None = None,
) -> Any:
    """Run ``model_factory`` over parameter cases; return one pandas DataFrame.

    Parameters
    ----------
    model_factory : callable
        ``model_factory(**case)`` -> Model, Results or dict (module docstring).
    parameters : dict, list of dicts or DataFrame
        The cases (see :func:`cases`).
    client : dask.distributed.Client, optional
        Run the cases as Dask tasks; default serial in this process.
    simulate : dict, optional
        Keyword arguments of ``Model.simulate`` (``t_end``, ``dt``, ``integrator``...).
    summarize : callable, optional
        ``summarize(results) -> dict`` of scalars; default :func:`default_summary`.
    keep_results : bool
        Also return the list of Results: ``(table, results)``.
    errors : "raise" or "record"
        A failing case raises :class:`FlexmbdError` naming it, or is recorded in an
        ``error`` column (its other columns NaN) and the sweep goes on.
    progress : bool or None
        Progress bar over cases (None: automatic, see :mod:`flexmbd.progress`).

    The table has one row per case, in case order: the parameters, the summary
    columns, ``error`` (when recording) and ``wall_time`` (s).
    """
    try:
        import pandas as pd
    except ImportError as err:  # pragma: no cover - optional extra
        raise FlexmbdError("sweep gathers a DataFrame: pip install 'flexmbd[io]'") from err
    if errors not in ("raise", "record"):
        raise FlexmbdError(f"sweep: errors={errors!r}; use 'raise' or 'record'")
    todo = cases(parameters)
    outs = [None] * len(todo)
    with _progress(total=len(todo), desc="sweep", enabled=progress, unit="case") as bar:
        if client is None:
            for i, case in enumerate(todo):
                outs[i] = _run_case(model_factory, case, simulate, summarize, keep_results)
                bar.update(1)
                if errors == "raise" and outs[i][2] is not None:
                    break
        else:
            from dask.distributed import as_completed

            futures = [
                client.submit(
                    _run_case, model_factory, case, simulate, summarize, keep_results, pure=False
                )
                for case in todo
            ]
            index = {f.key: i for i, f in enumerate(futures)}
            for fut in as_completed(futures):
                outs[index[fut.key]] = fut.result()
                bar.update(1)
    for case, out in zip(todo, outs):
        if out is not None and out[2] is not None and errors == "raise":
            raise FlexmbdError(f"sweep case {case} failed: {out[2]}")
    rows = []
    for case, (summary, _, err, wall) in zip(todo, outs):
        row = dict(case)
        clash = set(row) & set(summary)
        if clash:
            raise FlexmbdError(f"summary keys {sorted(clash)} clash with parameter names")
        row.update(summary)
        if errors == "record":
            row["error"] = err
        row["wall_time"] = wall
        rows.append(row)
    table = pd.DataFrame(rows)
    if keep_results:
        return table, [o[1] for o in outs]
    return table
