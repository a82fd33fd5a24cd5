"""Which mode set is good enough?  `compare_modes` ranks strategies against the full model.

All strategies are judged on the *same clamped structure*: the nodes
``load_case.fixed`` are clamped in the full finite-element model.  A reduced
basis ``Phi`` is augmented with the six rigid-body modes and the clamp is
imposed on the reduced coordinates as a joint would impose it — the
least-squares (RBE3-like) frame of the clamped nodes is fixed.  For a basis
already attached to those nodes this gives ``Phi`` itself; a free-free basis
gets its modes re-referenced to the clamp frame.

Measures (per strategy):

- ``freq_err_max``: max relative error of the first ``n_freq`` eigenfrequencies;
- ``static_err``: relative error (Euclidean, all DOFs) of the static deflection
  under the load;
- ``trunc_load`` (review eq. 8, first term): the part of the load the basis
  cannot represent, ``|F - M Phi M_r^-1 Phi^T F| / |F|`` on the free DOFs, in
  the M^-1 norm (in which ``M Phi M_r^-1 Phi^T`` is an orthogonal projector);
- ``trunc_static`` (eq. 8, second term): the residual flexibility
  ``(K^-1 - Phi K_r^-1 Phi^T) F`` in the energy norm, relative;
- ``transient_err``: max over time of the displacement error of a Newmark
  (average acceleration) run under ``F g(t)``, relative to the max response
  of the full-FE run with the same time steps;
- ``time_s``: wall time of building the basis (factorizations included).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as sla

from ..errors import MeshError
from ._threads import with_fem_threads
from .eigen import SPDFactor, add_on_pattern, eigsh_shift_invert
from .interfaces import Interface
from .model import FEModel
from .reduce import finish_modeset
from .selectors import select
from .strategies import PointLoad, _Clamped, as_strategy, resolve_loads

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from .._typing import Array, ArrayLike
    from .material import Material

__all__ = ["compare_modes", "LoadCase"]


class LoadCase:
    """Clamp, load and time history of the comparison.

    Parameters
    ----------
    fixed : selector
        Clamped nodes of the reference structure.
    load : PointLoad | interface name | array (3n,)
        The load (one vector; several columns are summed).
    pulse : "half-sine" | "step" | callable g(t)
    duration : float, optional
        Pulse length (default half the first clamped period).
    t_end : float, optional
        Simulated time (default 4 first periods).
    n_steps : int
        Newmark steps.
    interfaces : dict name -> selector, optional
        Extra interfaces passed to every strategy (for loads given by name).
    """

    def __init__(
        self,
        fixed: Any,
        load: Any,
        pulse: str | Callable[[Array], Array] = "half-sine",
        duration: float | None = None,
        t_end: float | None = None,
        n_steps: int = 400,
        interfaces: Any | None = None,
    ) -> None:
        self.fixed, self.load, self.pulse = fixed, load, pulse
        self.duration, self.t_end, self.n_steps = duration, t_end, int(n_steps)
        self.interfaces = interfaces

    def g(self, t: ArrayLike, T1: float) -> Array:
        if callable(self.pulse):
            return self.pulse(t)
        d = self.duration or 0.5 * T1
        if self.pulse == "step":
            return np.ones_like(t)
        if self.pulse == "half-sine":
            return np.where(t <= d, np.sin(np.pi * np.minimum(t, d) / d), 0.0)
        raise MeshError(
            f"LoadCase: unknown pulse {self.pulse!r}; use 'half-sine', 'step' or a function of t"
        )


def _newmark(K, M, F, g, dt, solve=None):
    """Average-acceleration Newmark, zero initial state; yields u at each step."""
    c = 4.0 / dt**2
    if solve is None:
        Keff = K + c * M
        fac = sla.cho_factor(Keff)
        solve = lambda r: sla.cho_solve(fac, r)  # noqa: E731
    u = np.zeros(K.shape[0])
    v = np.zeros_like(u)
    a = np.zeros_like(u)
    for gk in g:
        rhs = F * gk + M @ (c * u + (4.0 / dt) * v + a)
        un = solve(rhs)
        an = c * (un - u) - (4.0 / dt) * v - a
        v = v + 0.5 * dt * (a + an)
        u, a = un, an
        yield u


@with_fem_threads
def compare_modes(
    mesh: Any,
    material: Material | None,
    strategies: Sequence[Any] | Mapping[str, Any],
    load_case: LoadCase | None,
    *,
    n_freq: int = 6,
    figure: bool = False,
    names: Sequence[str] | None = None,
    model: FEModel | None = None,
    as_frame: bool = True,
) -> Any:
    """Compare mode-set strategies against the full finite-element model.

    Returns a pandas DataFrame (or a list of dicts if pandas is missing or
    ``as_frame=False``); with ``figure=True`` returns ``(table, fig)``.
    """
    if model is None:
        model = FEModel(mesh, material)
    if isinstance(strategies, dict):
        names, strategies = list(strategies), list(strategies.values())
    strategies = [as_strategy(s) for s in strategies]
    names = names or [repr(s) for s in strategies]
    lc = load_case
    fixed_nodes = select(model.fe, lc.fixed, "compare_modes fixed nodes")
    clamp = Interface("clamp", fixed_nodes, "nodes", model.fe.nodes[fixed_nodes])
    extra = model.interfaces(lc.interfaces) if lc.interfaces else {}
    load = lc.load if not isinstance(lc.load, PointLoad) else [lc.load]
    F, _ = resolve_loads(model, load, extra, "compare_modes")
    F = F.sum(axis=1)
    # full reference: clamped eigenfrequencies, static deflection, Newmark run
    t0 = time.perf_counter()
    cl = _Clamped(model, fixed_nodes)
    lam_full, _ = eigsh_shift_invert(cl.Kff, cl.Mff, n_freq, 0.0, cl.factor)
    f_full = np.sqrt(lam_full) / (2 * np.pi)
    u_full = cl.solve(F)
    free = cl.free
    Mf = SPDFactor(cl.Mff, model.backend, name="clamped mass")  # M^-1 norm of eq. 8
    T1 = 1.0 / f_full[0]
    t_end = lc.t_end or 4.0 * T1
    dt = t_end / lc.n_steps
    tt = dt * np.arange(1, lc.n_steps + 1)
    g = lc.g(tt, T1)
    t_full_static = time.perf_counter() - t0
    # reduced runs first (cheap), full run afterwards compares step by step
    rows, histories = [], []
    for name, strat in zip(names, strategies):
        model.forget_factorizations()  # each strategy pays its own factorizations
        t0 = time.perf_counter()
        ms = strat.build(model, extra)
        finish_modeset(model, ms, strat.orthonormalize)
        t_build = time.perf_counter() - t0
        Phi = ms.Phi
        B = np.hstack([model.R, Phi])
        C = clamp.W @ B[clamp.dofs]
        N = sla.null_space(C)
        Bc = B @ N
        Kr = Bc.T @ (model.K @ Bc)
        Mr = Bc.T @ (model.M @ Bc)
        Kr, Mr = 0.5 * (Kr + Kr.T), 0.5 * (Mr + Mr.T)
        lam_r = sla.eigh(Kr, Mr, eigvals_only=True)
        k = min(n_freq, len(lam_r))
        f_red = np.sqrt(np.maximum(lam_r[:k], 0)) / (2 * np.pi)
        ferr = np.full(n_freq, np.nan)
        ferr[:k] = f_red / f_full[:k] - 1.0
        q = np.linalg.solve(Kr, Bc.T @ F)
        u_r = Bc @ q
        static_err = np.linalg.norm(u_r - u_full) / np.linalg.norm(u_full)
        Fp = (F - model.M @ (Bc @ np.linalg.solve(Mr, Bc.T @ F)))[free]
        trunc_load = np.sqrt(abs(Fp @ Mf.solve(Fp)) / abs(F[free] @ Mf.solve(F[free])))
        e = u_full - u_r
        trunc_static = np.sqrt(abs(e @ (model.K @ e)) / (u_full @ (model.K @ u_full)))
        qs = np.array(list(_newmark(Kr, Mr, Bc.T @ F, g, dt)))
        histories.append((Bc, qs))
        rows.append(
            {
                "strategy": name,
                "n_modes": Phi.shape[1],
                "freq_err_max": float(np.nanmax(np.abs(ferr))),
                "freq_err": ferr,
                "static_err": float(static_err),
                "trunc_load": float(trunc_load),
                "trunc_static": float(trunc_static),
                "transient_err": np.nan,
                "time_s": t_build,
                "frame": ms.frame,
            }
        )
    t0 = time.perf_counter()
    c = 4.0 / dt**2
    # same pattern as K_ff: the symbolic analysis of the clamped factor is reused
    fac = cl.factor.refactor(add_on_pattern(cl.Kff, cl.Mff, 1.0, c), name="Newmark K_eff")
    Ff = F[free]
    errs = np.zeros(len(rows))
    umax = 0.0
    for step, uf in enumerate(_newmark(cl.Kff, cl.Mff, Ff, g, dt, solve=fac.solve)):
        umax = max(umax, np.linalg.norm(uf))
        for r, (Bc, qs) in enumerate(histories):
            ur = Bc @ qs[step]
            d = ur.copy()
            d[free] -= uf
            errs[r] = max(errs[r], np.linalg.norm(d))
    t_full = time.perf_counter() - t0 + t_full_static
    for r in range(len(rows)):
        rows[r]["transient_err"] = float(errs[r] / umax)
    rows.append(
        {
            "strategy": "full FE (reference)",
            "n_modes": len(free),
            "freq_err_max": 0.0,
            "freq_err": np.zeros(n_freq),
            "static_err": 0.0,
            "trunc_load": 0.0,
            "trunc_static": 0.0,
            "transient_err": 0.0,
            "time_s": t_full,
            "frame": "clamped",
            "f_full": f_full,
        }
    )
    for r in rows[:-1]:
        r["f_full"] = f_full
    table = rows
    if as_frame:
        try:
            import pandas as pd

            table = pd.DataFrame(rows)
        except ImportError:  # pragma: no cover
            table = rows
    if figure:
        return table, _figure(rows, f_full)
    return table


def _figure(rows, f_full):
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    red = rows[:-1]
    for r in red:
        ax1.semilogy(
            np.arange(1, len(f_full) + 1),
            np.abs(r["freq_err"]) + 1e-16,
            "o-",
            label=f"{r['strategy'][:40]} ({r['n_modes']})",
        )
    ax1.set_xlabel("clamped mode")
    ax1.set_ylabel("|relative frequency error|")
    ax1.legend(fontsize=7)
    ax1.grid(True, which="both", alpha=0.3)
    keys = ["static_err", "trunc_load", "trunc_static", "transient_err"]
    x = np.arange(len(keys))
    w = 0.8 / max(len(red), 1)
    for i, r in enumerate(red):
        ax2.bar(
            x + i * w,
            [max(r[k], 1e-16) for k in keys],
            w,
            label=f"{r['strategy'][:40]} ({r['n_modes']})",
        )
    ax2.set_yscale("log")
    ax2.set_xticks(x + 0.4 - w / 2)
    ax2.set_xticklabels(keys, fontsize=8)
    ax2.set_ylabel("relative error")
    ax2.grid(True, axis="y", alpha=0.3)
    ax2.legend(fontsize=7)  # every panel says which bar is which
    fig.tight_layout()
    return fig
