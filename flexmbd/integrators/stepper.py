"""The explicit stepper: fixed-step RK4 and scipy's adaptive Runge-Kutta pairs on
``y' = f(t, y)``, ``y = [q; qd]``, following the stepper contract of
:mod:`flexmbd.checkpoint` (bit-identical resume).

Generic over the system: a formulation subclasses :class:`ExplicitStepper` with its
right-hand side and result assembly (the tree in :mod:`flexmbd.integrators.explicit`,
closed loops in :mod:`flexmbd.recursive.loops`). This module imports no formulation, so
every formulation can build on it (see ``docs/architecture.md``). Stall detection,
solver state save/restore and the JSON form of a run's options live here as well.
"""

from __future__ import annotations

import functools
import time as _time
from typing import TYPE_CHECKING

import numpy as np

from ..errors import FlexmbdError, ModelError, SolverError
from ..monitor import BLOCK_STEPS, GrowthMonitor

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .._typing import Array, ArrayLike
    from ..results import Results

__all__ = [
    "rk_tableau",
    "EXPLICIT",
    "explicit_integrator",
    "rk4_stability",
    "rk4",
    "ExplicitStepper",
    "solver_state",
    "load_solver_state",
    "json_options",
    "restore_options",
    "tau_function",
]


#: the explicit integrators: fixed-step RK4 and scipy's embedded Runge-Kutta pairs
EXPLICIT = ("rk4", "rk45", "dop853", "rk23")


def explicit_integrator(
    integrator: str | None,
    dt: float | None,
    t0: float,
    t_end: float,
    where: str = "",
    hint: str = "",
) -> str:
    """The lower-case name of the explicit ``integrator`` (None: ``"rk4"``), checked with
    the output interval ``dt`` (s; RK4 needs one) and the times ``t0 < t_end`` (s).

    ``where`` starts and ``hint`` ends the refusal of a name that is not explicit."""
    name = (integrator or "rk4").lower()
    if name not in EXPLICIT:
        raise ModelError(
            f"{where}integrator {name!r} is not explicit; use 'rk4', 'rk45' or 'dop853'{hint}"
        )
    if name == "rk4" and (dt is None or dt <= 0):
        raise ModelError("integrator 'rk4' needs a step dt > 0")
    if t_end <= t0:
        raise ModelError(f"t_end ({t_end}) must be greater than t0 ({t0})")
    return name


def rk4_stability(wmax: float, h: float, stacklevel: int = 2) -> str:
    """``""`` when the RK4 step ``h`` (s) is within the stability limit ``2.8 / wmax`` of
    the stiffest mode (``wmax`` rad/s); otherwise a UserWarning (``stacklevel`` counted
    from the caller) and the clause a failure report appends."""
    if not wmax * h > 2.8:
        return ""
    import warnings

    warnings.warn(
        f"RK4 step {h:.3g} s is above the stability limit {2.8 / wmax:.3g} s of the "
        f"stiffest mode (omega = {wmax:.4g} rad/s): reduce dt (or use substeps / "
        "integrator='rk45'), or drop high modes",
        stacklevel=stacklevel + 1,
    )
    return (
        f"; the RK4 step {h:.3g} s is above the stability limit {2.8 / wmax:.3g} s of "
        "the stiffest mode: reduce dt (or use substeps / integrator='rk45')"
    )


def tau_function(tau: Any, nv: int) -> Callable[[float, Array, Array], Array | None]:
    """Joint forces along the ``nv`` speeds as a function ``tau_f(t, q, qd)`` (N, N m):
    ``tau`` None (no forces: None), a constant array (nv,) or a function of ``(t, q, qd)``.
    For None and an array the function's ``constant`` attribute is that value (a history
    needs no call per sample)."""
    if tau is None:

        def f(t, q, qd):
            return None

        f.constant = None
        return f
    if callable(tau):
        return lambda t, q, qd: np.asarray(tau(t, q, qd), dtype=float)
    arr = np.asarray(tau, dtype=float)
    if arr.shape != (nv,):
        raise ModelError(f"tau must have {nv} values (one per speed) or be a function")

    def g(t, q, qd):
        return arr

    g.constant = arr
    return g


def index_slice(idx: Array) -> Array | slice:
    """The ascending index array ``idx`` as a slice where it is a contiguous run (rows of
    a result then go by views and block copies instead of gathers and scatters), else
    ``idx`` itself."""
    n = len(idx)
    if n and idx[-1] - idx[0] == n - 1 and (n < 3 or np.all(np.diff(idx) == 1)):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def rk4(
    f: Callable[[float, Array], Array],
    t0: float,
    y0: ArrayLike,
    h: float,
    n_steps: int,
    callback: Callable[[int, float, Array], Any] | None = None,
) -> Array:
    """Classical fixed-step RK4 for ``dy/dt = f(t, y)``; ``callback(i, t, y)`` after each step
    may return a replacement ``y`` (projection). Returns the final ``y``."""
    y = np.asarray(y0, dtype=float).copy()
    t = t0
    for i in range(n_steps):
        k1 = f(t, y)
        k2 = f(t + 0.5 * h, y + 0.5 * h * k1)
        k3 = f(t + 0.5 * h, y + 0.5 * h * k2)
        k4 = f(t + h, y + h * k3)
        y = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        t = t0 + (i + 1) * h
        if callback is not None:
            r = callback(i, t, y)
            if r is not None:
                y = r
    return y


# stall detection of the adaptive steppers (ExplicitStepper._check_progress)
STALL_WINDOW = 200  # solver steps per pace check
STALL_STEPS = 1e6  # more steps than this still needed at the current pace: a stall
STALL_H_FLOOR = 1e-12  # step sizes below this fraction of the run's span


#: why a compiled block of adaptive steps stopped (``out[0]`` of
#: :meth:`ExplicitStepper._solver_block`; the kernels, flexmbd.recursive._nbloops, take
#: these values from here): its steps done, ``t_bound`` or the stop time reached; a step
#: handed back to the solver's ``step()``; a non-finite accepted state; the stall rule's
#: verdict; a sample left to :meth:`ExplicitStepper.step` (:meth:`_solver_dense_block`)
BLOCK_DONE, BLOCK_HANDBACK, BLOCK_NONFINITE, BLOCK_STALL, BLOCK_SAMPLE = 0, 1, 2, 3, 4
_BLOCK_CAP = 512  # the largest block (accepted steps)

# -- steppers (the checkpoint contract of flexmbd.checkpoint) ----------------------------
_SOLVER_STATE = (
    "t",
    "y",
    "t_old",
    "y_old",
    "f",
    "h_abs",
    "h_previous",
    "nfev",
    "njev",
    "nlu",
    "status",
)
_SOLVER_ARRAYS = ("K", "K_extended")  # restored in place (K is a view of K_extended)
_CALLABLE = "__callable__"


def solver_state(solver):
    """Dynamic state of a scipy ``RK23``/``RK45``/``DOP853`` solver (exact copies)."""
    out = {}
    for k in _SOLVER_STATE:
        v = getattr(solver, k)
        out[k] = v.copy() if isinstance(v, np.ndarray) and v.ndim else v
    for k in _SOLVER_ARRAYS:
        if hasattr(solver, k):
            out[k] = getattr(solver, k).copy()
    return out


def load_solver_state(solver, state):
    """Restore :func:`solver_state` into a solver built with the same function and options."""
    for k in _SOLVER_STATE:
        v = state[k]
        setattr(solver, k, np.array(v) if isinstance(v, np.ndarray) and v.ndim else v)
    for k in _SOLVER_ARRAYS:
        if k in state:
            getattr(solver, k)[...] = state[k]


def json_options(options):
    """Options of a run as JSON values (arrays as lists, functions marked, q0/qd0 dropped:
    a resumed run starts from the saved state)."""
    out = {}
    for k, v in options.items():
        if k in ("q0", "qd0", "checkpoint", "every", "progress", "overwrite"):
            continue
        if callable(v):
            out[k] = _CALLABLE
        elif isinstance(v, np.ndarray):
            out[k] = v.tolist()
        elif isinstance(v, np.generic):
            out[k] = v.item()
        else:
            out[k] = v
    return out


def restore_options(options, overrides, what):
    """Inverse of :func:`json_options`: functions come from ``overrides`` (named in the error)."""
    opts = dict(options)
    opts.update(overrides)
    missing = [k for k, v in opts.items() if isinstance(v, str) and v == _CALLABLE]
    if missing:
        raise FlexmbdError(
            f"{what}: the checkpointed run used functions for {missing}, which a file cannot "
            f"hold; pass them again: fm.resume(path, model=m, "
            + ", ".join(f"{k}=..." for k in missing)
            + ")"
        )
    return opts


@functools.cache
def _is_dop853_dense(cls: type) -> bool:
    """Whether ``cls`` is scipy's ``Dop853DenseOutput`` or a subclass (by the class names
    along its MRO: scipy is imported lazily)."""
    return "Dop853DenseOutput" in {c.__name__ for c in cls.__mro__}


def _interpolant(solver):
    """The class of the adaptive ``solver``'s dense output: its ``Interpolant`` where it
    names one, else scipy's (``Dop853DenseOutput`` for DOP853, ``RkDenseOutput`` for
    RK45 / RK23)."""
    cls = getattr(solver, "Interpolant", None)
    if cls is None:
        from scipy.integrate._ivp.rk import Dop853DenseOutput, RkDenseOutput

        cls = Dop853DenseOutput if hasattr(solver, "A_EXTRA") else RkDenseOutput
    return cls


class ExplicitStepper:
    """One explicit integration of ``y' = f(t, y)``, ``y = [q; qd]``, following the
    stepper contract of :mod:`flexmbd.checkpoint` (bit-identical resume).

    ``integrator="rk4"``: a step is one output interval ``dt`` made of ``substeps`` RK4
    steps. Adaptive (``"rk45"``, ``"dop853"``, ``"rk23"``; scipy's embedded pairs): with
    output times (``t_eval``, or every ``dt``) a step advances to the next output time
    (dense output, as many solver steps as needed), otherwise it is one solver step.
    The state saved at a checkpoint is the solver's complete state (step size, stage
    derivatives, counters), so a resumed run takes exactly the same steps.

    Subclasses give the system: :meth:`_f` (the right-hand side), the hooks after a
    step and :meth:`finalize` (accelerations, reactions and energies at the samples,
    computed after the run in one pass, as without a checkpoint).
    """

    n_out_rule = "round"  # how rk4 counts its output intervals (see _n_out)
    checks_finite = True
    record_wall = False  # sample stats["cpu_time"]: integration wall time so far (s)
    t_eval_tol = 1e-9  # relative tolerance of the last output time
    #: the compiled block of :meth:`_solver_dense_block` also does what a subclass's
    #: :meth:`_dense_sample` does to a sample (else a subclass that overrides it takes
    #: its samples by :meth:`step`)
    dense_sample_in_block = False

    def __init__(
        self,
        system: Any,
        t_end: float,
        dt: float | None = None,
        integrator: str = "rk4",
        t0: float = 0.0,
        rtol: float = 1e-8,
        atol: float = 1e-10,
        t_eval: ArrayLike | None = None,
        method: str | None = None,
        substeps: int = 1,
        max_step: float = np.inf,
    ) -> None:
        integrator = (integrator or "rk4").lower()
        self.system = system
        self.integrator = integrator
        self.t0 = float(t0)
        self.t_end = float(t_end)
        self.dt = None if dt is None else float(dt)
        self.substeps = int(substeps)
        self.rtol, self.atol, self.max_step = rtol, atol, max_step
        self.method = method
        self.adaptive = integrator != "rk4"
        self.nq, self.nv = system.nq, system.nv
        self.t = self.t0
        self.y = None
        self.i = 0  # rk4: output intervals done; adaptive: samples done
        self.n_steps = 0  # adaptive: solver steps
        self.wall = 0.0
        self.solver = None
        self._dense = None
        self._monitor = False  # runaway check (flexmbd.monitor), built on first use
        self._window = None  # stall detection: (step, t) at the window start, low steps
        self._block_stop = None  # the interval where the last compiled RK4 block stopped
        if self.adaptive:
            self.t_eval = self._output_times(t_eval)
        else:
            self.h = self.dt / self.substeps
            self.n_out = self._n_out()

    # -- set-up ---------------------------------------------------------------------------
    def _n_out(self):
        t0, t_end, dt = self.t0, self.t_end, self.dt
        if self.n_out_rule == "floor":
            return int(np.floor((t_end - t0) / dt + 1e-9))
        n_out = int(round((t_end - t0) / dt))
        if abs(t0 + n_out * dt - t_end) > 1e-9 * max(1.0, abs(t_end)):
            n_out = int(np.floor((t_end - t0) / dt + 1e-9))
        return n_out

    def _output_times(self, t_eval):
        t0, t_end, dt = self.t0, self.t_end, self.dt
        if t_eval is None and dt is not None:
            n_out = int(np.floor((t_end - t0) / dt + 1e-9))
            t_eval = t0 + dt * np.arange(1, n_out + 1)
            if t_eval.size == 0 or t_eval[-1] < t_end - self.t_eval_tol * max(1.0, t_end):
                t_eval = np.append(t_eval, t_end)
        elif t_eval is not None:
            t_eval = np.asarray(t_eval, dtype=float)
            t_eval = t_eval[t_eval > t0]
        return t_eval

    def _solver_class(self):
        from scipy import integrate as si

        name = self.method or {"rk45": "RK45", "dop853": "DOP853", "rk23": "RK23"}[self.integrator]
        return name, getattr(si, name)

    def _make_solver(self, y0):
        _, cls = self._solver_class()
        kw = {} if self.max_step is None else {"max_step": self.max_step}
        return cls(self._f, self.t0, y0, self.t_end, rtol=self.rtol, atol=self.atol, **kw)

    def start(self, y0: ArrayLike) -> ExplicitStepper:
        """Initial state ``y0 = [q0; qd0]`` (consistent, normalized)."""
        self.y = np.asarray(y0, dtype=float)
        self.t = self.t0
        if self.adaptive:
            try:
                self.solver = self._make_solver(self.y)
            except FlexmbdError as err:
                raise SolverError(f"{err} at t = {self.t0:.6g} s", time=self.t0) from err
        return self

    # -- hooks of the system ---------------------------------------------------------------
    def _f(self, t, y):
        raise NotImplementedError

    def _rk4_callback(self):
        return None

    def _after_rk4(self, y):
        return y

    def _after_solver_step(self, solver):
        pass

    def _rk4_block(self, n):
        """RK4 only: up to ``n`` output intervals in one compiled call, or None (then
        :meth:`step` runs the next one). Returns ``(Y, W)``: the states at the ends of
        the intervals done (k, nq + nv) and the integration wall time (s) after each,
        with ``i``, ``t``, ``y`` and ``wall`` advanced past them (k = 0: none done, the
        next interval needs :meth:`step`)."""
        return None

    def _solver_block(self):
        """Adaptive runs: a compiled block of solver steps from the solver's state, or None
        (then :meth:`_solver_step` takes the next step by the solver's ``step()``). The
        block is a function ``run(k, t_stop, win, stall)`` that takes up to ``k``
        accepted steps without touching the solver (except its stage array ``K``), as
        :func:`flexmbd.recursive._nbloops.loop_rk_block` does: it stops after the step
        that reaches ``t_bound`` or ``t_stop`` (s), at a step it hands back (the solver's
        ``step()`` then redoes it), after a non-finite state or a stall verdict
        (``win``, ``stall``: :meth:`_stall_arrays`). It returns ``(done, Y (k, n), REC (k,
        4), f, out)``: the states of the accepted steps, their ``(t, next h_abs, h,
        evaluations)``, the last step's derivative and the stop reason ``out[0]``."""
        return None

    def _stall_arrays(self):
        """The stall rule's state and limits for a compiled block (:meth:`_check_progress`):
        ``win = (first step of the window, its t, steps in a row below the floor)``,
        ``stall = (step floor (s), steps below it, window steps, further steps allowed,
        t_end (s))``."""
        if self._window is None:  # (as _check_progress sets it at the next step)
            self._window = (self.n_steps, float(self.solver.t), 0)
        span = abs(self.t_end - self.t0)
        limits = (STALL_H_FLOOR * span, STALL_WINDOW // 10, STALL_WINDOW, STALL_STEPS)
        return np.array(self._window, dtype=float), np.array([*limits, self.t_end])

    def _block_steps(self, k, t_stop=np.inf, chunks=None, pending=None):
        """Up to ``k`` solver steps by :meth:`_solver_block` (stopping after the step that
        reaches ``t_stop``, s), the solver then in the state its own ``step()`` leaves;
        with ``chunks`` a rows chunk ``(t, y, wall, counters)`` of the accepted steps is
        appended to it (after the rows ``pending``, :meth:`_flush_rows`; the block's wall
        time spread evenly over its steps; without ``chunks`` the caller, :meth:`step`,
        times the block). Returns the number of accepted steps (0: the
        next step needs :meth:`_solver_step`), None when no block ran; raises as
        :meth:`_solver_step` at a non-finite state or a stall (the rows before it are in
        ``chunks``)."""
        run = self._solver_block() if k > 0 else None
        if run is None:
            return None
        if pending is not None:
            self._flush_rows(chunks, pending)
        s = self.solver
        tic = _time.perf_counter()
        win, stall = self._stall_arrays()
        done, Y, REC, f, out = run(int(k), float(t_stop), win, stall)
        seconds = _time.perf_counter() - tic
        if chunks is None:  # (called inside step(), which times itself)
            seconds = 0.0
        if not done:
            self.wall += seconds
            return 0
        T = REC[:done, 0]
        t_prev, nfev = s.t, s.nfev
        self._take_block(done, Y, REC, f, win)
        failed = out[0] in (BLOCK_NONFINITE, BLOCK_STALL)
        rows = done - 1 if failed else done
        if chunks is not None and rows:
            W = self.wall + seconds * np.arange(1, rows + 1) / done
            C = np.empty((rows, 2))
            C[:, 0] = nfev + np.cumsum(REC[:rows, 3])
            C[:, 1] = np.abs(np.diff(T[:rows], prepend=t_prev))
            chunks.append((T[:rows], Y[:rows], W, C))
            self.i += rows
            self.t, self.y = float(T[rows - 1]), Y[rows - 1].copy()
        self.wall += seconds
        if failed:
            self._step_checks(s)  # the same error as the step by step() (raises)
        return done

    def _take_block(self, done, Y, REC, f, win, extra=0):
        """The solver's state after the ``done`` accepted steps of a compiled block (their
        states ``Y``, records ``REC``, the last derivative ``f``; ``extra`` evaluations
        beside the steps': dense outputs), as its own ``step()`` leaves it, and the
        stall window ``win`` the block updated."""
        s = self.solver
        T = REC[:done, 0]
        s.t_old = float(T[-2]) if done > 1 else s.t
        s.y_old = Y[done - 2].copy() if done > 1 else s.y
        s.t, s.y, s.f = float(T[-1]), Y[done - 1].copy(), f
        s.h_abs, s.h_previous = float(REC[done - 1, 1]), float(REC[done - 1, 2])
        s.nfev = s.nfev + int(REC[:done, 3].sum()) + int(extra)
        if s.direction * (s.t - s.t_bound) >= 0:
            s.status = "finished"
        self.n_steps += done
        self._dense = None
        self._window = (int(win[0]), float(win[1]), int(win[2]))

    def _solver_dense_block(self):
        """Adaptive runs with output times: a compiled block of solver steps that also
        gives the output samples at the times its steps cover (dense output and
        interpolant in the block), or None (then :meth:`step` takes the next output time).
        The block is a function ``run(k, te, win, stall)`` as :meth:`_solver_block`'s
        (no stop time: it stops after the step that covers the last output time ``te``
        (s), or before a sample it leaves to :meth:`step`) that returns ``(done, Y, REC,
        f, out, SJ, DN, F, YS)``: :meth:`_solver_block`'s values, ``out[3]`` the samples
        written, their interpolated states ``YS`` and steps ``SJ``, ``DN`` (done,) 1 where
        a step computed its dense output (``len(A_EXTRA)`` evaluations, none without), and ``F`` the
        interpolant's coefficients of the last step where ``out[4]`` is 1."""
        return None

    def _dense_steps(self, n, chunks):
        """Up to ``n`` output times by :meth:`_solver_dense_block`, a rows chunk ``(t, y,
        wall, counters)`` of its samples appended to ``chunks`` (the same rows as
        :meth:`step` and :meth:`_covered_samples` give, the block's wall time spread over
        its steps), the solver then in the state its own ``step()`` leaves, with the last
        step's dense output kept where the block computed it. Returns the number of
        samples (0: steps without one), None when no block ran (:meth:`step` decides);
        raises as :meth:`_block_steps`."""
        te_all, s = self.t_eval, self.solver
        if te_all is None or n <= 0 or self.i >= te_all.size or s.status != "running":
            return None
        if te_all[self.i] <= s.t + 1e-12:  # (the last step's own dense output: step)
            return None
        if not self.dense_sample_in_block and (
            self._dense_sample.__func__ is not ExplicitStepper._dense_sample
        ):
            return None
        run = self._solver_dense_block()
        if run is None:
            return None
        tic = _time.perf_counter()
        win, stall = self._stall_arrays()
        t_prev, nfev = s.t, s.nfev
        done, Y, REC, f, out, SJ, DN, F, YS = run(
            _BLOCK_CAP, te_all[self.i : self.i + n], win, stall
        )
        seconds = _time.perf_counter() - tic
        if not done:
            self.wall += seconds
            return None
        extra = len(getattr(s, "A_EXTRA", ())) * DN[:done]  # (RK45, RK23: none)
        self._take_block(done, Y, REC, f, win, extra.sum())
        m = int(out[3])
        if m:
            T = te_all[self.i : self.i + m]
            C = np.empty((m, 2))
            C[:, 0] = (nfev + np.cumsum(REC[:done, 3] + extra))[SJ[:m]]
            C[:, 1] = np.abs(np.diff(REC[:done, 0], prepend=t_prev))[SJ[:m]]
            W = self.wall + seconds * (SJ[:m] + 1) / done
            chunks.append((T, YS, W, C))
            self.i += m
            self.t, self.y = float(T[-1]), YS[-1].copy()
        self.wall += seconds
        if out[4] == 1.0:  # the last step's dense output, as dense_output() gives it
            self._dense = _interpolant(s)(s.t_old, s.t, s.y_old, F)
        if out[0] in (BLOCK_NONFINITE, BLOCK_STALL):
            self._step_checks(s)  # the same error as the step by step() (raises)
        return m

    def _stage_times(self, k):
        """The stage times (s) of the next ``k`` output intervals: start, middle and end of
        each RK4 substep, ``3 (j substeps + sub) + c`` (the times of the Python RK4 step)."""
        h, n = self.h, self.substeps
        starts = self.t0 + (self.i + np.arange(k)) * self.dt
        sub = (starts[:, None] + np.arange(n)[None, :] * h).ravel()
        return np.column_stack([sub, sub + 0.5 * h, sub + h]).ravel()

    def _stage_table(self, k):
        """``(TT, tix)`` of the system's ``tabulated_forces``
        (:meth:`flexmbd.RecursiveSystem.tabulated_forces`) on the stage times of
        the next ``k`` output intervals (:meth:`_stage_times`)."""
        _, TT, tix = self.system.tabulated_forces(self._stage_times(k))
        return TT, tix

    def _run_block(self, n, block):
        """Up to ``n`` output intervals by ``block(y, Y, k)``, a compiled RK4 block that
        advances ``y`` over ``k`` intervals in place, writes their end states into ``Y``
        and returns how many it did; its wall time is spread evenly over them, and a
        block that stopped early makes :meth:`step` take the next interval. Returns
        :meth:`_rk4_block`'s ``(Y[:done], wall times)``, or None for no interval (the
        end, or the block stopped before this one: :meth:`step` decides)."""
        k = min(int(n), self.n_out - self.i)
        if k <= 0 or self._block_stop == self.i:
            return None
        tic = _time.perf_counter()
        y = np.array(self.y, dtype=float)
        Y = np.empty((k, y.shape[0]))
        done = block(y, Y, k)
        seconds = _time.perf_counter() - tic
        W = self.wall + seconds * np.arange(1, done + 1) / max(done, 1)
        self._block_stop = self.i + done if done < k else None
        if done:
            self.y = Y[done - 1].copy()
            self.i += done
            self.t = self.t0 + self.i * self.dt
            self.wall = float(W[-1])
        else:
            self.wall += seconds
        return Y[:done], W

    def _dense_sample(self, y):
        return y

    def _fail(self, msg, t_start, t_end):
        """The error of the step from ``t_start`` (the last good state) to ``t_end``:
        ``err.time`` is ``t_end``, the time the integration could not reach (as for a
        Newton failure of the implicit integrators)."""
        note = getattr(self, "stability_note", "")  # RK4 above its stability limit
        return SolverError(
            f"{msg}: the step from t = {t_start:.6g} s to {t_end:.6g} s failed; "
            f"the results up to the last good sample are in err.partial{note}",
            time=t_end,
        )

    # -- contract --------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        if not self.adaptive:
            return self.i >= self.n_out
        if self.t_eval is None:
            return self.solver.status != "running"
        return self.i >= self.t_eval.size or (
            self.solver.status != "running" and self.t_eval[self.i] > self.solver.t + 1e-12
        )

    def set_t_end(self, t_end: float) -> None:
        if abs(float(t_end) - self.t_end) <= 1e-12 * max(1.0, abs(self.t_end)):
            return
        if self.adaptive:
            raise FlexmbdError(
                f"an adaptive run ({self.integrator}) cannot change its end time "
                f"({self.t_end:.6g} s) on resume: its last step is fitted to it; start a new run"
            )
        self.t_end = float(t_end)
        self.n_out = self._n_out()

    def step(self) -> None:
        tic = _time.perf_counter()
        if self.adaptive:
            self._step_adaptive()
        else:
            t_start = self.t0 + self.i * self.dt
            try:
                y = rk4(
                    self._f, t_start, self.y, self.h, self.substeps, callback=self._rk4_callback()
                )
            except FlexmbdError as err:
                raise self._fail(str(err), t_start, t_start + self.dt) from err
            self._accept(self._after_rk4(y), t_start)
        self.wall += _time.perf_counter() - tic

    def _accept(self, y, t_start):
        """Take ``y`` as the state at the end of the RK4 output interval that starts at
        ``t_start`` (s); a non-finite state is a failure of that interval."""
        if not np.all(np.isfinite(y)):
            raise self._fail(
                "non-finite state (a step beyond the stability limit of the "
                "stiffest mode, or an unstable model: reduce dt)",
                t_start,
                t_start + self.dt,
            )
        self.y = y
        self.i += 1
        self.t = self.t0 + self.i * self.dt

    def _solver_step(self):
        s = self.solver
        try:
            msg = s.step()
        except FlexmbdError as err:
            # the step attempted from s.t (its size at most h_abs)
            h = float(s.h_abs)
            msg = str(err)
            if isinstance(err, SolverError):
                msg += (
                    f" (in an adaptive step attempt of {h:.3g} s: an attempt past the "
                    "stability limit of the model's fastest modes can leave the model; "
                    "simulate(..., max_step=...) bounds the attempts)"
                )
            raise self._fail(msg, float(s.t), float(s.t + s.direction * h)) from err
        if s.status == "failed":
            raise self._fail(
                f"adaptive stepper failed ({msg}; tighten the model or loosen rtol/atol)",
                float(s.t),
                float(s.t),
            )
        self.n_steps += 1
        self._dense = None
        self._after_solver_step(s)
        self._step_checks(s)

    def _step_checks(self, s):
        """The checks after an accepted solver step: a finite state and progress."""
        if not np.all(np.isfinite(s.y)):
            raise self._fail(
                "non-finite state (an unstable model, or forces returning NaN)",
                float(s.t_old),
                float(s.t),
            )
        self._check_progress(s)

    def _check_progress(self, s):
        """Stall detection of the adaptive stepper (cheap: a comparison per step, a pace
        check every ``STALL_WINDOW`` steps). Fails when the step size stays below
        ``STALL_H_FLOOR`` times the run's span for ``STALL_WINDOW // 10`` steps in a row, or
        when at the pace of the last window the run would need more than ``STALL_STEPS``
        further steps."""
        span = abs(self.t_end - self.t0)
        if self._window is None:
            self._window = (self.n_steps - 1, float(s.t_old), 0)
        n0, t_w, low = self._window
        low = low + 1 if s.h_abs < STALL_H_FLOOR * span else 0
        self._window = (n0, t_w, low)
        why = None
        if low >= STALL_WINDOW // 10:
            why = f"its step size stayed below {STALL_H_FLOOR:g} of the run's span for {low} steps"
        elif self.n_steps - n0 >= STALL_WINDOW:
            pace = (float(s.t) - t_w) / (self.n_steps - n0)
            left = abs(self.t_end - float(s.t))
            if left > 0 and (pace <= 0 or left / pace > STALL_STEPS):
                need = "never" if pace <= 0 else f"~{left / pace:.2g} more steps"
                why = (
                    f"the last {self.n_steps - n0} steps advanced {float(s.t) - t_w:.3g} s "
                    f"(at this pace it would take {need} to reach t_end = "
                    f"{self.t_end:g} s)"
                )
            self._window = (self.n_steps, float(s.t), 0)
        if why is not None:
            name = self._solver_class()[0]
            msg = (
                f"{name} stalled at t = {float(s.t):.6g} s after {self.n_steps} steps and "
                f"{s.nfev} evaluations: {why}; step size {s.h_abs:.3g} s (rtol={self.rtol:g}, "
                f"atol={self.atol:g}). {self._stall_hint(s)}"
            )
            raise SolverError(
                msg + "; the results up to the last good sample are in err.partial", time=float(s.t)
            )

    def _stall_hint(self, s):
        """Cause and remedy of a stall (subclasses add what they know about the system)."""
        return (
            "Remedies: loosen atol/rtol, use the fixed-step integrator='rk4', or an implicit "
            "integrator (formulation='absolute') for stiff models"
        )

    def _step_adaptive(self):
        s = self.solver
        if self.t_eval is None:
            self._solver_step()
            self.t = s.t
            self.y = s.y.copy()
            self.i += 1
            return
        te = self.t_eval[self.i]
        while not te <= s.t + 1e-12:
            if s.status != "running":
                raise self._fail("the solver ended before the output time", float(s.t), float(te))
            if not self._block_steps(_BLOCK_CAP, te):
                self._solver_step()
        if self._dense is None:
            self._dense = s.dense_output()
        self.y = self._dense_sample(self._dense(te))
        self.t = float(te)
        self.i += 1

    def _step_rows(self, chunks, n):
        """Up to ``n`` accepted steps of an adaptive run without output times, a row each
        (``t``, ``y``, wall time, counters: what :meth:`step` and :meth:`_counters` give per
        step, without their per-call overhead) appended to ``chunks`` as :meth:`advance`
        gathers them: by compiled blocks (:meth:`_block_steps`) where the system has them,
        else step by step. Returns the number of steps taken."""
        s = self.solver
        T, Y, W, C = rows = ([], [], [], [])
        count = 0
        try:
            tic = _time.perf_counter()
            while s.status == "running" and count < n:
                got = self._block_steps(n - count, chunks=chunks, pending=rows)
                if got is not None:
                    tic = _time.perf_counter()
                if got:
                    count += got
                    continue
                self._solver_step()
                self.t = s.t
                self.y = s.y.copy()  # (a new self.y per step, never changed in place)
                self.i += 1
                toc = _time.perf_counter()
                self.wall += toc - tic
                tic = toc
                T.append(self.t)
                Y.append(self.y)
                W.append(self.wall)
                h = s.step_size
                C.append((s.nfev, np.nan if h is None else h))
                count += 1
        finally:
            self._flush_rows(chunks, rows)
        return count

    @staticmethod
    def _flush_rows(chunks, rows):
        """Move the rows ``(t, y, wall, counters)`` gathered in lists into ``chunks``."""
        T, Y, W, C = rows
        if T:
            chunks.append((list(T), np.array(Y), list(W), np.array(C, dtype=float)))
            for r in rows:
                r.clear()

    def _covered_samples(self, n):
        """Adaptive runs with output times and DOP853's interpolant (elementwise in the
        times: the same numbers as one time at a time): the further output times (up to
        ``n``) that the last step's dense output covers, evaluated in one call; ``(t (k,),
        Y (k, nq + nv))`` with ``i``, ``t``, ``y`` advanced past them, or None."""
        s, dense = self.solver, self._dense
        if self.t_eval is None or n <= 0 or not _is_dop853_dense(type(dense)):
            return None
        j = m = self.i
        hi = min(self.t_eval.size, j + n)
        while m < hi and self.t_eval[m] <= s.t + 1e-12:  # (what step would take next)
            m += 1
        if m <= j:
            return None
        te = self.t_eval[j:m]
        Y = dense(te).T
        if self._dense_sample.__func__ is ExplicitStepper._dense_sample:  # the identity
            Y = np.array(Y)  # (one copy instead of a Python call per sample)
        else:
            Y = np.array([self._dense_sample(y) for y in Y])
        self.y = Y[-1].copy()
        self.t = float(te[-1])
        self.i = m
        return te, Y

    def _counters(self):
        """Solver statistics at the current sample: right-hand-side evaluations so far
        and the last step size (s)."""
        if not self.adaptive:
            return 4 * self.substeps * self.i, self.h
        s = self.solver
        h = getattr(s, "step_size", None)
        return int(getattr(s, "nfev", 0)), np.nan if h is None else float(h)

    def sample(self) -> dict[str, Any]:
        out = {"q": self.y[: self.nq], "qd": self.y[self.nq :]}
        if self.record_wall:
            out["stats:cpu_time"] = self.wall
        out["stats:rhs_evaluations"], out["stats:step_size"] = self._counters()
        return out

    @property
    def n_total(self) -> int | None:
        if not self.adaptive:
            return self.n_out
        return None if self.t_eval is None else self.t_eval.size

    def advance(self, n: int | None = None) -> tuple[dict[str, Any], BaseException | None]:
        """Up to ``n`` steps in one loop (all that remain for None): ``(rows, error)``."""
        # chunks of rows: (t (k,), y (k, nq + nv), wall (k,), counters (k, 2))
        chunks = []
        count = 0
        err = None
        n = BLOCK_STEPS if n is None else n  # the runaway check runs between blocks
        # an adaptive run without output times: a row per solver step, gathered in lists
        # (a few us per step less than a chunk each; the values are the same)
        steps = self.adaptive and self.t_eval is None
        try:
            if steps:
                count = self._step_rows(chunks, n)
            while not steps and not self.done and count < n:
                if self.adaptive:  # output times in a compiled block of steps
                    got = self._dense_steps(n - count, chunks)
                    if got is not None:
                        count += got
                        continue
                block = None if self.adaptive else self._rk4_block(n - count)
                if block is not None and len(block[0]):
                    Y, W = block  # intervals i - k + 1 ... i, compiled in one call
                    k = len(Y)
                    done = self.i - k + 1 + np.arange(k)
                    cnt = np.column_stack([4.0 * self.substeps * done, np.full(k, self.h)])
                    chunks.append((self.t0 + done * self.dt, Y, W, cnt))
                    count += k
                    continue
                self.step()
                cnt = np.array([self._counters()], dtype=float)
                chunks.append(([self.t], self.y.copy()[None], [self.wall], cnt))
                count += 1
                more = self._covered_samples(n - count) if self.adaptive else None
                if more is not None:  # the further output times of the same step
                    k = len(more[0])
                    chunks.append((more[0], more[1], np.full(k, self.wall), np.repeat(cnt, k, 0)))
                    count += k
        except Exception as exc:  # noqa: BLE001 - the driver reports it with the rows
            err = exc
        ny = self.nq + self.nv
        T = np.concatenate([np.asarray(c[0], dtype=float) for c in chunks] or [np.zeros(0)])
        Y = np.concatenate([np.reshape(c[1], (-1, ny)) for c in chunks] or [np.zeros((0, ny))])
        W = np.concatenate([np.asarray(c[2], dtype=float) for c in chunks] or [np.zeros(0)])
        C = np.concatenate([c[3] for c in chunks] or [np.zeros((0, 2))])
        if count:
            if self._monitor is False:
                self._monitor = GrowthMonitor.for_system(self.system)
            if self._monitor is not None:
                j, runaway = self._monitor.check(T, Y[:, : self.nq])
                if runaway is not None:
                    T, Y, W, C, err = T[:j], Y[:j], W[:j], C[:j], runaway
        rows = {"t": T, "q": Y[:, : self.nq], "qd": Y[:, self.nq :]}
        if self.record_wall:
            rows["stats:cpu_time"] = W
        rows["stats:rhs_evaluations"] = C[:, 0].astype(np.int64)
        rows["stats:step_size"] = C[:, 1]
        return rows, err

    def header(self) -> dict[str, Any]:
        s = self.system
        return {
            "coordinates": s.coordinates,
            "speeds": s.speeds,
            "joint_names": s.joint_names,
            "meta": self.meta(),
        }

    def meta(self) -> dict[str, Any]:
        s = self.system
        meta = {
            "formulation": "recursive",
            "integrator": self.integrator,
            "model": s.model.name,
            "algorithm": s.algorithm,
        }
        if self.adaptive:
            meta.update(
                rtol=self.rtol, atol=self.atol, method=self._solver_class()[0], steps=self.n_steps
            )
        else:
            meta["dt"] = self.dt
        return meta

    def state_dict(self) -> dict[str, Any]:
        st = {
            "t": self.t,
            "y": self.y.copy(),
            "i": self.i,
            "n_steps": self.n_steps,
            "wall": self.wall,
            "t_end": self.t_end,
        }
        if self.adaptive:
            st["solver"] = solver_state(self.solver)
        extra = self._extra_state()
        if extra:
            st["system"] = extra
        return st

    def load_state_dict(self, st: dict[str, Any]) -> None:
        self.t, self.i, self.n_steps, self.wall = st["t"], st["i"], st["n_steps"], st["wall"]
        self.y = np.array(st["y"], dtype=float)
        if self.adaptive:
            if abs(st["t_end"] - self.t_end) > 1e-12 * max(1.0, abs(self.t_end)):
                raise FlexmbdError("the adaptive run's end time differs from the checkpoint's")
            if self.solver is None:
                self.solver = self._make_solver(np.array(st["solver"]["y"], dtype=float))
            load_solver_state(self.solver, st["solver"])
            self._dense = None
        self._load_extra_state(st.get("system", {}))

    def _extra_state(self):
        return {}

    def _load_extra_state(self, st):
        pass

    def spec(self) -> dict[str, Any]:
        return {
            "factory": "flexmbd.integrators.explicit:rebuild",
            "needs_model": True,
            "model": self.system.model.name,
            "kwargs": self.rebuild_kwargs(),
        }

    def rebuild_kwargs(self) -> dict[str, Any] | None:
        raise NotImplementedError

    def finalize(self, results: Results, failed: bool = False) -> Results | None:
        raise NotImplementedError


_NO_E3 = np.zeros(0)


def rk_tableau(s: Any) -> tuple[Array, Array, Array]:
    """``(A, E3, E5)`` of scipy's explicit Runge-Kutta solver ``s`` (``RK45``, ``RK23``,
    ``DOP853``) as the compiled blocks take them: ``A`` C-contiguous (DOP853's is a view
    of a larger table; its layout would compile every block kernel a second time),
    ``E3`` empty for RK45 / RK23 (their one error estimator ``E`` is ``E5``)."""
    E3, E5 = (s.E3, s.E5) if hasattr(s, "E5") else (_NO_E3, s.E)
    return np.ascontiguousarray(s.A), E3, E5
