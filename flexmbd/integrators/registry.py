"""One registry of integrators and formulations: names parsed once, options checked once.

Every entry point that integrates (``Model.simulate``, the systems' ``simulate``)
resolves its ``integrator`` and ``formulation`` arguments here:

* names are case-insensitive, ``_``, ``-`` and spaces are the same
  (``"HHT"``, ``"generalized_alpha"``, ``"Gen-Alpha"``);
* the formulation follows from the integrator when it is not given (implicit
  integrators run the absolute formulation, explicit ones the recursive one) and
  the integrator from the formulation (``rk4`` with a step, ``rk45`` without one,
  ``generalized-alpha`` for the absolute formulation);
* a pair that is not offered, an unknown name or an unknown keyword option raises a
  :class:`~flexmbd.errors.ModelError` that lists the valid choices;
* times are checked before any work: ``t_end`` and ``dt`` finite numbers, ``dt``
  positive and not longer than the run, at most :data:`MAX_STEPS` steps, ``every``
  a positive integer.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ModelError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

#: Largest number of steps (or output intervals) a run may ask for; beyond it a typo in
#: ``dt`` is far more likely than a deliberate run, and the results would not fit memory.
MAX_STEPS = 50_000_000


@dataclass(frozen=True)
class Integrator:
    """One integrator: canonical ``name``, accepted ``aliases``, ``kind`` ("explicit" or
    "implicit"), the ``formulations`` that offer it, and whether it needs a step ``dt``."""

    name: str
    aliases: tuple
    kind: str
    formulations: tuple
    needs_dt: bool
    summary: str


INTEGRATORS = (
    Integrator(
        "rk4",
        ("runge-kutta", "runge-kutta-4"),
        "explicit",
        ("recursive",),
        True,
        "classical 4th-order Runge-Kutta, fixed step dt (s) / substeps",
    ),
    Integrator(
        "rk45",
        ("dopri5", "dormand-prince"),
        "explicit",
        ("recursive",),
        False,
        "adaptive Dormand-Prince 5(4) (scipy), tolerances rtol/atol",
    ),
    Integrator(
        "dop853",
        ("dop8",),
        "explicit",
        ("recursive",),
        False,
        "adaptive Dormand-Prince 8(5,3) (scipy), tolerances rtol/atol",
    ),
    Integrator(
        "rk23",
        ("bogacki-shampine",),
        "explicit",
        ("recursive",),
        False,
        "adaptive Bogacki-Shampine 3(2) (scipy), tolerances rtol/atol",
    ),
    Integrator(
        "newmark",
        ("trapezoidal",),
        "implicit",
        ("absolute",),
        True,
        "Newmark beta/gamma (average acceleration by default), index-3 DAE",
    ),
    Integrator(
        "hht",
        ("hht-alpha", "hilber-hughes-taylor"),
        "implicit",
        ("absolute",),
        True,
        "Hilber-Hughes-Taylor alpha in [-1/3, 0], index-3 DAE",
    ),
    Integrator(
        "generalized-alpha",
        ("genalpha", "gen-alpha", "generalised-alpha"),
        "implicit",
        ("absolute",),
        True,
        "Chung-Hulbert generalized-alpha, spectral radius rho_inf, index-3 DAE",
    ),
)

FORMULATIONS = {
    "recursive": ("cfa", "joint", "relative"),
    "absolute": ("dae", "cartesian"),
}


def _key(text):
    return " ".join(str(text).strip().lower().replace("_", "-").replace(" ", "-").split())


_BY_NAME = {_key(a): i for i in INTEGRATORS for a in (i.name, *i.aliases)}
_FORMULATION = {_key(a): f for f, aliases in FORMULATIONS.items() for a in (f, *aliases)}


def valid_pairs() -> list[tuple[str, str]]:
    """``[(formulation, integrator name), ...]`` of every pair that is offered."""
    return [(f, i.name) for i in INTEGRATORS for f in i.formulations]


def integrator(name: str) -> Integrator:
    """The :class:`Integrator` called ``name`` (case-insensitive, aliases accepted)."""
    if isinstance(name, Integrator):
        return name
    found = _BY_NAME.get(_key(name)) if isinstance(name, str) else None
    if found is None:
        names = ", ".join(repr(i.name) for i in INTEGRATORS)
        raise ModelError(f"unknown integrator {name!r}; choose one of {names}")
    return found


def formulation(name: str) -> str:
    """The canonical formulation name (``"recursive"`` or ``"absolute"``) of ``name``."""
    found = _FORMULATION.get(_key(name)) if isinstance(name, str) else None
    if found is None:
        raise ModelError(
            f"unknown formulation {name!r}; choose 'recursive' (joint "
            f"coordinates, CFA) or 'absolute' (body coordinates, DAE)"
        )
    return found


def resolve(
    integrator_name: str | None = None, formulation_name: str | None = None, dt: float | None = None
) -> tuple[Integrator, str]:
    """``(Integrator, formulation)`` for the arguments of a ``simulate`` call.

    The missing one follows from the other (see the module docstring); a pair that is
    not offered raises a :class:`~flexmbd.errors.ModelError` naming the ones that are.
    """
    form = None if formulation_name is None else formulation(formulation_name)
    if integrator_name is None:
        if form == "absolute":
            integrator_name = "generalized-alpha"
        else:
            integrator_name = "rk45" if dt is None else "rk4"
    spec = integrator(integrator_name)
    if form is None:
        form = spec.formulations[0]
    if form not in spec.formulations:
        offered = ", ".join(repr(i.name) for i in INTEGRATORS if form in i.formulations)
        raise ModelError(
            f"integrator {spec.name!r} ({spec.kind}) is not offered by the {form} formulation; "
            f"with formulation={form!r} use {offered}, or drop formulation= to run "
            f"{spec.name!r} in the {spec.formulations[0]} formulation"
        )
    return spec, form


# arguments every simulate entry takes itself (not options passed through)
_POSITIONAL = {"self", "system", "t_end", "dt", "integrator", "formulation"}


@functools.cache
def _keywords(target: Callable[..., Any]) -> tuple[str, ...]:
    """The names ``target`` takes by keyword (its signature, read once per function:
    ``inspect.signature`` costs ~0.1 ms, paid by every ``simulate`` call otherwise)."""
    params = inspect.signature(target).parameters
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p for p, v in params.items() if v.kind in kinds)


def check_options(
    options: Mapping[str, Any],
    target: Callable[..., Any],
    where: str,
    *,
    exclude: Iterable[str] = (),
) -> None:
    """Reject keyword ``options`` that ``target`` (the function that receives them) does
    not take, with a :class:`~flexmbd.errors.ModelError` listing the valid ones."""
    exclude = set(exclude) | _POSITIONAL
    # a bound method's function: the cache must not keep its instance alive
    valid = sorted(p for p in _keywords(getattr(target, "__func__", target)) if p not in exclude)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ModelError(
            f"{where}: unknown option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; valid options are "
            f"{', '.join(valid)}"
        )


def _number(value, name, where):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ModelError(f"{where}: {name} must be a number of seconds, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ModelError(f"{where}: {name} must be finite, got {value}")
    return value


def check_times(
    t_end: float,
    dt: float | None,
    spec: Any,
    where: str,
    *,
    t0: float = 0.0,
    every: int | None = None,
) -> None:
    """Check ``t_end``, ``dt`` (s), ``every`` of a run of integrator ``spec`` before any work.

    ``dt`` must be positive, at most ``t_end - t0`` and give at most :data:`MAX_STEPS`
    steps; ``every`` (checkpoint interval, steps) a positive integer.
    """
    t_end = _number(t_end, "t_end", where)
    t0 = _number(t0, "t0", where)
    if t_end <= t0:
        raise ModelError(f"{where}: t_end ({t_end} s) must be greater than the start time ({t0} s)")
    if dt is None:
        if spec.needs_dt:
            raise ModelError(
                f"{where}: integrator {spec.name!r} needs a step: pass dt "
                f"(s), e.g. dt={(t_end - t0) / 1000:.3g}"
            )
    else:
        dt = _number(dt, "dt", where)
        if dt <= 0:
            raise ModelError(f"{where}: dt must be positive, got {dt} s")
        span = t_end - t0
        if dt > span * (1 + 1e-12):
            raise ModelError(
                f"{where}: dt ({dt} s) is longer than the run ({span} s from "
                f"t = {t0} s); choose dt <= {span:.6g} s"
            )
        n = span / dt
        if n > MAX_STEPS:
            raise ModelError(
                f"{where}: dt = {dt:.3g} s gives {n:.3g} steps over {span} s, "
                f"more than {MAX_STEPS:.0e}; choose a larger dt"
            )
    if every is not None and (
        isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1
    ):
        raise ModelError(
            f"{where}: every must be a positive whole number of steps between "
            f"checkpoints, got {every!r}"
        )
