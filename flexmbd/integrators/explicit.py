"""Explicit integrators for systems in joint coordinates: fixed-step RK4 and
adaptive Runge-Kutta (scipy's RK45 / DOP853 steppers).

The state is ``(q, qd)``; ``dq/dt = qdot(q, qd)`` (quaternion rates for
Spherical and Free joints) and ``dqd/dt = qdd`` from the system's forward
dynamics. Quaternion coordinates are integrated through their rates and
renormalized after every accepted step (RK4: after each step; adaptive: after
each step of the stepper and at every output sample); the forward dynamics
itself normalizes the quaternions it reads, so the stage values need no
projection. The drift of the norm within one step is of the integrator's order.

Flexible bodies (modal coordinates in the state) make the system stiff: an explicit
step must resolve the highest modal frequency, ``dt * omega_max`` below about 2.8 for
RK4 (its stability limit on the imaginary axis; accuracy wants a few times less), so
choose the mode set with that in mind (Craig-Bampton constraint modes of a stiff
interface are often the highest) or let RK45 find the step. ``max_step`` bounds the
adaptive step.

Output is sampled every ``dt`` (RK4: the step itself, or every ``substeps``
steps of ``dt / substeps``; adaptive: dense output at ``t_eval`` or every ``dt``).
Accelerations and joint reactions at the samples are evaluated afterwards in one
batched call, except where the compiled blocks of a tree wrote them (RK4's first
stages, the adaptive steps' samples at every step or at the output times). A failure
(non-finite state, singular system, stepper failure) raises
:class:`~flexmbd.errors.SolverError` carrying the results up to the last good sample
(``err.partial``) and the time (``err.time``).

Stalls: an adaptive stepper whose step size collapses (typically at a singular
configuration of a closed loop with a tight ``atol``, where the projected
right-hand side changes abruptly) is stopped with a :class:`SolverError` when its
step stays below ``STALL_H_FLOOR`` (1e-12) of the run's span for 20 steps, or when at
the pace of the last ``STALL_WINDOW`` (200) steps it would need more than
``STALL_STEPS`` (1e6) further steps; closed-loop systems name the singular cut joint
and the rank of the constraint Jacobian. Runaways of flexible bodies are checked
between blocks of samples (:mod:`flexmbd.monitor`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..checkpoint import check_checkpoint, run
from ..constraints.cut import needs_loops
from ..errors import FlexmbdError
from ..recursive import _flexblock as _FB
from ..recursive import _nbforces as _NF
from ..recursive import _nbloops as _NL
from ..recursive import _nbtimed as _NT
from ..recursive.energy import energy_histories
from ..recursive.flexible import STIFF_MAX_ITER, STIFF_TOL, body_series, point_timers
from ..results import Results
from .stepper import (
    ExplicitStepper,
    explicit_integrator,
    index_slice,
    json_options,
    restore_options,
    rk4,
    rk4_stability,
    rk_tableau,
    tau_function,
)

if TYPE_CHECKING:
    from typing import Any

    from .._typing import ArrayLike, StrPath

__all__ = ["rk4", "simulate_recursive", "ExplicitStepper", "TreeStepper", "tree_stepper"]


class TreeStepper(ExplicitStepper):
    """:class:`ExplicitStepper` of a :class:`~flexmbd.recursive.RecursiveSystem` (a tree):
    quaternion coordinates renormalized after every step and at every dense sample.

    A rigid tree (quaternion coordinates included) runs RK4 (:meth:`_rk4_block`) and the
    adaptive pairs (:meth:`_solver_block`) in compiled blocks where its loads allow; a
    tree with flexible bodies runs RK4 in compiled blocks (:meth:`_flex_block`) when its
    loads are gravity, constant ``tau``, joint spring-damper laws and constant joint
    forces, and the adaptive pairs (:meth:`_flex_solver_block`; with output times
    :meth:`_flex_dense_run`) when none of those is a function of time, else in compiled
    attempts (:meth:`_flex_timed_solver_block`)."""

    #: adaptive steps of a tree in compiled blocks (:meth:`_solver_block`); False:
    #: scipy's ``step()`` with the Python right-hand side :meth:`_f` (the reference)
    step_blocks = True
    #: with output times: the samples there in the compiled blocks
    #: (:meth:`_solver_dense_block`); False: the blocks stop at each output time, scipy's
    #: dense output gives the sample and the batch after the run its accelerations,
    #: reactions and energies (the same numbers, bit for bit)
    dense_blocks = True
    #: :meth:`_dense_sample` (the quaternions' renormalization) is done by the dense block
    dense_sample_in_block = True
    #: adaptive steps of a tree whose loads include Python functions of time in
    #: compiled attempts (:meth:`_timed_solver_block`, with flexible bodies
    #: :meth:`_flex_timed_solver_block`); False: scipy's ``step()`` on :meth:`_f` (the
    #: reference)
    timed_blocks = True
    _timed_failed = None  # the solver time of a step whose functions of time failed

    # contract: ExplicitStepper's options (passed on)
    def __init__(
        self,
        system: Any,
        t_end: float,
        dt: float | None = None,
        integrator: str = "rk4",
        tau: Any | None = None,
        _options: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(system, t_end, dt=dt, integrator=integrator, **kw)
        self.tau_f = tau_function(tau, system.nv)
        self._tau_arg = tau
        self._tree_args = None  # (model revision, compiled RK4 arguments or None)
        self._flex_args = None  # the same for a tree with flexible bodies
        self._raw = system.qdd
        self._options = _options or {}
        #: RK4: the output sample the next evaluation is at (its first stage), and the
        #: samples' ``(qdd, reactions)`` rows from those evaluations
        self._sample_next = None
        self._rows = None
        self._rows_lent = False  # the rows are the arrays of finalize's results

    def step(self) -> None:
        """One output interval (:meth:`ExplicitStepper.step`); RK4's first stage is the
        forward dynamics at the output sample: its reactions are kept for the results."""
        if not self.adaptive and self.i <= self.n_out:
            self._sample_next = self.i
        try:
            super().step()
        finally:
            self._sample_next = None

    def _compiled_tree(self):
        """``(Ib, buf, force table, joint forces, timed loads, quaternion offsets, clock
        only)`` of the compiled RK4 intervals and adaptive steps
        (:func:`flexmbd.recursive._nbloops.tree_rk4_block`, ``tree_rk_block``) or None: a
        rigid tree (fixed or floating base; RK4 integrates the quaternion coordinates of
        Spherical and Free joints through their rates and renormalizes them as
        :meth:`_after_rk4` does) whose loads the packed tree solver and its force table
        cover, joint forces ``tau`` None or constant. ``clock only``: the table's only
        values of time are its clock (users' compiled laws,
        :meth:`flexmbd.JointForce.compiled_law`), which the adaptive kernels set per
        stage."""
        s = self.system
        if callable(self._tau_arg):
            return None
        key = s.model.revision
        if self._tree_args is not None and self._tree_args[0] == key:
            return self._tree_args[1]
        out = None
        packed = s.packed_rigid(forces=True, timed=True) if hasattr(s, "packed_rigid") else None
        # the force table; loads that are functions of time tabulated per block
        table = s.tabulated_forces(()) if packed is not None else None
        rigid = getattr(s, "flex", None) is None
        if packed is not None and table is not None and rigid:
            tau = np.zeros(s.nv) if self._tau_arg is None else np.array(self._tau_arg, float)
            qoff = np.asarray(s.quaternion_offsets, dtype=np.int64)
            tix = table[2]
            clock = bool(np.all(table[0][0][tix[:, 0], 0] == _NF.ULAW) and not tix[:, 1].any())
            out = (packed[0], packed[1], table[0], tau, len(tix) > 0, qoff, clock)
        self._tree_args = (key, out)
        return out

    def _rk4_block(self, n):
        """Up to ``n`` output intervals by one compiled call
        (:func:`flexmbd.recursive._nbloops.tree_rk4_block`; its first stage of each
        interval is the output sample: ``qdd`` and reactions kept for the results), or
        None (the Python RK4 of :meth:`step`). The call's wall time is spread evenly
        over its intervals. A load's function of time that fails on the block's stage
        times makes the block do nothing: :meth:`step` then runs the intervals one by
        one and reports the failure in its interval, with the results before it."""
        c = self._compiled_tree()
        if c is None:
            return self._flex_block(n)

        def block(y, Y, k):
            qdd, reac, ok, en = self._sample_arrays(self.i)
            try:
                TT, tix = self._stage_table(k) if c[4] else (_NO_TT, _NO_TIX)
            except FlexmbdError:  # a time function failed: step() meets it in its interval
                return 0
            return _NL.tree_rk4_block(
                c[0], c[1], c[2], y, self.h, self.substeps, k, c[3], self.i, qdd, reac, en, ok,
                Y, TT, tix, c[5],
            )  # fmt: skip

        return self._run_block(n, block)

    def _compiled_flex(self):
        """The :class:`_FlexPlan` (workspace, gravity, stiffening, ``tau``, loads,
        quaternion offsets) of the compiled RK4 intervals of a tree with flexible bodies
        (:func:`flexmbd.recursive._flexblock.flex_rk4_block`), or None: a rigid tree,
        joint forces ``tau`` a function, or loads other than gravity, constant ``tau``,
        joint spring-damper laws and constant joint forces
        (:meth:`flexmbd.recursive.flexible.FlexTree.rk4_loads`; those keep the Python RK4
        of :meth:`step`)."""
        s = self.system
        fl = getattr(s, "flex", None)
        if fl is None or callable(self._tau_arg):
            return None
        key = s.model.revision
        if self._flex_args is not None and self._flex_args[0] == key:
            return self._flex_args[1]
        s.packed_rigid()  # (refreshes the system: the model's parameters of this revision)
        loads = fl.rk4_loads()
        out = None
        if loads is not None:
            tau = np.zeros(max(s.nv, 1))
            if self._tau_arg is not None:
                tau[: s.nv] = np.asarray(self._tau_arg, dtype=float)
            cidx, cval = loads[5]
            tau[cidx] += cval  # constant joint forces: ``tau[v] += f`` of the Python path
            qoff = np.asarray(s.quaternion_offsets, dtype=np.int64)
            LI, LF, acts, MI, modal, _, points = loads
            out = _FlexPlan(
                fl.work, s.arrays.gravity, s.use_gravity, fl.any_stiff, fl.info, tau, qoff,
                LI, LF, acts, MI, modal, points["P"], point_timers(points), points["timed"],
            )  # fmt: skip
        self._flex_args = (key, out)
        return out

    def _flex_block(self, n):
        """Up to ``n`` output intervals of a tree with flexible bodies by one compiled call
        (:func:`flexmbd.recursive._flexblock.flex_rk4_block`: the operations of the
        Python RK4 of :meth:`step`, whose first stage of each interval is the output
        sample: ``qdd`` and reactions kept for the results), or None
        (:meth:`_compiled_flex`). The actuator terms of the spring-damper laws that are
        functions of time are evaluated in Python on the block's stage times; one that
        fails ends the block before its interval (:meth:`step` reports it there)."""
        c = self._compiled_flex()
        if c is None:
            return None
        nl = len(c.LF)
        fl = self.system.flex

        def block(y, Y, k):
            qdd, reac, ok, _ = self._sample_arrays(self.i)
            FA = np.empty((3 * self.substeps * k, nl + len(c.P[3])))
            FA[:, :nl] = c.LF[:, 3]
            if any(fa is not None for fa in c.acts) or c.timers:
                times = self._stage_times(k)
                for r, t in enumerate(times):
                    try:
                        _flex_values(c.acts, c.timers, t, FA[r])
                    except FlexmbdError:  # the intervals before; step() meets it in its own
                        k = r // (3 * self.substeps)
                        break
                if k == 0:
                    return 0
            if len(c.P[0]):
                fl.fix_free_lengths(y[: -self.nv], y[-self.nv :])
            fargs = c.fargs(self.nv, FA)
            return _FB.flex_rk4_block(
                c.work, fargs, y, self.h, self.substeps, k, c.tau, c.qoff, self.i, qdd, reac, ok, Y
            )

        return self._run_block(n, block)

    def _solver_block(self):
        """A compiled block of adaptive steps (:meth:`ExplicitStepper._solver_block`) of a
        rigid tree (:meth:`_compiled_tree`; of the values of time only the table's clock,
        which the kernel sets to each stage's time) with scipy's
        ``RK45``, ``RK23`` or ``DOP853`` and scalar tolerances:
        :func:`flexmbd.recursive._nbloops.tree_rk_block` (quaternion coordinates
        renormalized after each accepted step, as :meth:`_after_solver_step`), which
        writes the output sample of every accepted step (its accelerations, reactions
        and energies: the step's last evaluation, or with quaternion coordinates an
        evaluation at the renormalized state) when the run outputs every step; None
        else (scipy's ``step()`` on :meth:`_f`, also for a step the block hands back: a
        failed tree solve or a step below scipy's smallest)."""
        s = self.solver
        if not self.step_blocks or type(s).__name__ not in _BLOCK_SOLVERS:
            return None
        if type(s).__module__.split(".")[0] != "scipy" or np.ndim(s.rtol) or np.ndim(s.atol):
            return None
        c = self._compiled_tree()
        if c is None:
            return self._flex_solver_block()
        if c[4] and not c[6]:  # Python functions of time: tabulated per attempt
            return self._timed_solver_block(c) if self.timed_blocks else None
        rows = self.t_eval is None
        A, E3, E5 = rk_tableau(s)

        def run(k, t_stop, win, stall):
            # a sample at every accepted step (rows i + 1 ...) or none
            (qdd, reac, ok, en), ts, y, f, Y, REC, out = self._block_buffers(
                k, k if rows else None, 3
            )
            done = _NL.tree_rk_block(
                c[0], c[1], c[2], c[3], ts, y, f, float(s.t_bound), float(s.direction),
                float(s.max_step), float(s.rtol), float(s.atol), A, s.B, s.C, E3, E5, s.K,
                _SAFETY, _MIN_FACTOR, _MAX_FACTOR, float(s.error_exponent), k, t_stop,
                self.n_steps, win, stall, Y, REC, out, self.i + 1, qdd, reac, en, ok, c[5],
            )  # fmt: skip
            return done, Y, REC, f, out

        return run

    def _timed_solver_block(self, c):
        """:meth:`_solver_block` of a rigid tree (:meth:`_compiled_tree` ``c``) whose loads
        include Python functions of time: each attempt of each step by one compiled call
        (:func:`flexmbd.recursive._nbtimed.timed_block`), the functions evaluated in
        Python at the attempt's stage times (the times at which scipy's ``step()`` on
        :meth:`_f` evaluates them) and tabulated for it. The output samples are left to
        the batch after the run, as after scipy's steps."""
        system = self.system
        nj = len(system.joint_names)
        ws = (np.empty(0), np.empty((0, 0)), np.empty(0))
        rhs = (c[0], c[1], None, c[2], c[3], np.empty(0, np.int64), 0.0, 0, 0.0, 0.0, ws,
               np.empty((nj, 6)))  # fmt: skip

        tab = system.timed_tabulator()

        def tabulate(times):
            return tab(times)[1:]

        return self._timed_run(rhs, tabulate, c[5])

    def _timed_run(self, rhs, tabulate, qoff, before=None):
        """The block of :meth:`_timed_solver_block` and :meth:`_flex_timed_solver_block`:
        :func:`flexmbd.recursive._nbtimed.timed_block` with the right-hand side's
        arguments ``rhs``, the tabulation ``tabulate(times) -> (TT, tix)`` and the
        quaternion offsets ``qoff``; ``before(y)``, if given, is called with the solver's
        state before each block. A step handed back (a failed function of time, a failed
        evaluation, a step below scipy's smallest) goes to scipy's ``step()``."""
        solver = self.solver

        def run(k, t_stop, win, stall):
            if self._timed_failed == solver.t:  # (handed back here: step() redoes it)
                return 0, None, None, None, np.array([_NL.BLOCK_HANDBACK, 0.0, 0.0])
            if before is not None:
                before(solver.y)
            done, Y, REC, f, out = got = _NT.timed_block(
                solver, rhs, tabulate, qoff, k, t_stop, self.n_steps, win, stall
            )
            if out[0] == _NL.BLOCK_HANDBACK:  # the step's start, once the block is taken
                self._timed_failed = float(REC[done - 1, 0]) if done else float(solver.t)
            return got

        return run

    def _flex_solver_block(self):
        """:meth:`_solver_block` of a tree with flexible bodies whose loads the compiled
        RK4 block covers (:meth:`_compiled_flex`) and none of them a function of time:
        :func:`flexmbd.recursive._flexblock.flex_rk_block` (the evaluation of
        :func:`~flexmbd.recursive._flexblock.flex_rk4_block` in scipy's steps; quaternion
        coordinates renormalized after each accepted step), which writes the
        accelerations (modal included) and reactions of every accepted step's sample when
        the run outputs every step (the energies come after the run, as for RK4); None
        else (scipy's ``step()`` on :meth:`_f`). With output times the samples are
        written by the dense blocks (:meth:`_solver_dense_block`)."""
        c = self._flex_rhs_args()
        if c is None:  # values of time: tabulated per attempt
            return self._flex_timed_solver_block() if self.timed_blocks else None
        s = self.solver
        work, fargs, tau, qoff = c
        rows = self.t_eval is None
        A, E3, E5 = rk_tableau(s)

        def run(k, t_stop, win, stall):
            # a sample at every accepted step (rows i + 1 ...) or none
            (qdd, reac, ok, _), ts, y, f, Y, REC, out = self._block_buffers(
                k, k if rows else None, 3
            )
            self._fix_free_lengths(fargs, y)
            done = _FB.flex_rk_block(
                work, fargs, tau, ts, y, f, float(s.t_bound), float(s.direction),
                float(s.max_step), float(s.rtol), float(s.atol), A, s.B, s.C, E3, E5, s.K,
                _SAFETY, _MIN_FACTOR, _MAX_FACTOR, float(s.error_exponent), k, t_stop,
                self.n_steps, win, stall, Y, REC, out, self.i + 1, qdd, reac, ok, qoff,
            )  # fmt: skip
            return done, Y, REC, f, out

        return run

    def _flex_timed_solver_block(self):
        """:meth:`_solver_block` of a tree with flexible bodies whose loads the compiled
        RK4 block covers (:meth:`_compiled_flex`) with values of time among them (the
        spring-damper laws' actuators, the point loads' values): each attempt of each step
        by one compiled call (:meth:`_timed_run`) with the flexible right-hand side
        :func:`flexmbd.recursive._nbloops._flex_rhs`, the values of time evaluated in
        Python at the attempt's stage times, time by time as :meth:`_f` evaluates them
        (the laws' actuators, then the point loads' values: :func:`_flex_values`). The
        right-hand side reads them from row 0 of its ``FA``, which is also its force
        table's floats (``fargs[1]``, a table of no rows: no clock), so the attempt writes
        each evaluation's row of the tabulated values there by
        :func:`flexmbd.recursive._nbloops._set_loads`. The output samples are left to the
        batch after the run, as after scipy's steps; None for loads the RK4 block does not
        cover."""
        c = self._compiled_flex()
        if c is None:
            return None
        nc = len(c.LF) + len(c.P[3])
        FA = np.empty((1, nc))
        FA[0, : len(c.LF)] = c.LF[:, 3]
        fargs = c.fargs(self.nv, FA, (_NO_TABLE[0], FA))
        ws = (np.empty(0), np.empty((0, 0)), np.empty(0))
        nj = len(self.system.joint_names)
        rhs = (None, c.work, None, fargs, c.tau, np.empty(0, np.int64), 0.0, 0, 0.0, 0.0, ws,
               np.empty((nj, 6)))  # fmt: skip
        tix = np.zeros((nc, 2), np.int64)
        tix[:, 1] = np.arange(nc)

        def tabulate(times):
            TT = np.empty((len(times), nc))
            TT[:] = FA[0]
            for r, t in enumerate(times):
                _flex_values(c.acts, c.timers, t, TT[r])
            return TT, tix

        def before(y):
            self._fix_free_lengths(fargs, y)

        return self._timed_run(rhs, tabulate, c.qoff, before)

    def _fix_free_lengths(self, fargs, y):
        """Before a compiled flexible block from the state ``y``: the free length of every
        SDA of the point-load table given without one set at that state (the first
        evaluation's, as the Python path does)."""
        if len(fargs[-1][0]):
            self.system.flex.fix_free_lengths(y[: -self.nv], y[-self.nv :])

    def _flex_rhs_args(self):
        """``(workspace, right-hand side arguments, tau, quaternion offsets)`` of the
        compiled adaptive steps of a tree with flexible bodies
        (:func:`flexmbd.recursive._nbloops._flex_rhs`: the loads of
        :meth:`_compiled_flex`, none a function of time), or None."""
        c = self._compiled_flex()
        if c is None or any(fa is not None for fa in c.acts) or c.timed:
            return None
        FA = np.ascontiguousarray(c.LF[:, 3].reshape(1, -1))
        return c.work, c.fargs(self.nv, FA), c.tau, c.qoff

    def _solver_dense_block(self):
        """A compiled block of adaptive steps with the output samples at the output times
        between them (:meth:`ExplicitStepper._solver_dense_block`), where
        :meth:`_solver_block` would run a block:
        :func:`flexmbd.recursive._nbloops.tree_rk_block_dense` interpolates each sample
        by the solver's own dense output (DOP853's with its three extra stages, RK45's /
        RK23's ``K^T P``; the operations of scipy's), renormalizes its quaternions
        (:meth:`_dense_sample`) and writes its accelerations, reactions and energies
        into the rows of :meth:`_sample_arrays` (what :meth:`finalize` would compute for
        it); with flexible bodies :meth:`_flex_dense_run` (the energies after the run);
        None else."""
        if not self.dense_blocks or self._solver_block() is None:
            return None
        s, c = self.solver, self._compiled_tree()
        if c is not None and c[4] and not c[6]:  # Python functions of time:
            return None  # scipy's dense output between the blocks
        A, E3, E5 = rk_tableau(s)
        n = s.y.shape[0]
        if hasattr(s, "A_EXTRA"):  # DOP853: the extra stages into K_extended, F (7, n)
            Kx, AX, CX, D = s.K_extended, s.A_EXTRA, s.C_EXTRA, s.D
            F = np.empty((D.shape[0] + 3, n))
        else:  # RK45 / RK23: Q = K^T P (n, order + 1) into F, no extra stages
            Kx, AX, CX, D = s.K, _NO_EXTRA, _NO_E3, s.P
            F = np.empty((n, D.shape[1]))

        if c is None:  # flexible bodies (values of time: scipy's dense output, as above)
            return (
                None
                if self._flex_rhs_args() is None
                else self._flex_dense_run(A, E3, E5, n, Kx, AX, CX, D, F)
            )

        def run(k, te, win, stall):
            (qdd, reac, ok, en), ts, y, f, Y, REC, out = self._block_buffers(k, len(te), 5)
            SJ, DN = np.zeros(len(te), dtype=np.int64), np.zeros(k, dtype=np.int64)
            YS = np.empty((len(te), n))
            done = _NL.tree_rk_block_dense(
                c[0], c[1], c[2], c[3], ts, y, f, float(s.t_bound), float(s.direction),
                float(s.max_step), float(s.rtol), float(s.atol), A, s.B, s.C, E3, E5, s.K,
                _SAFETY, _MIN_FACTOR, _MAX_FACTOR, float(s.error_exponent), k, self.n_steps,
                win, stall, Y, REC, out, Kx, AX, CX, D, F, te, SJ, DN, YS, self.i + 1, qdd,
                reac, en, ok, c[5],
            )  # fmt: skip
            return done, Y, REC, f, out, SJ, DN, F, YS[: int(out[3])]

        return run

    def _flex_dense_run(self, A, E3, E5, n, Kx, AX, CX, D, F):
        """The dense block of :meth:`_solver_dense_block` for a tree with flexible bodies
        (:meth:`_flex_rhs_args`): :func:`flexmbd.recursive._flexblock.flex_rk_block_dense`
        writes each sample's accelerations (modal included) and reactions; the energies
        come after the run, as for the other samples of a flexible tree."""
        s = self.solver
        work, fargs, tau, qoff = self._flex_rhs_args()

        def run(k, te, win, stall):
            (qdd, reac, ok, _), ts, y, f, Y, REC, out = self._block_buffers(k, len(te), 5)
            SJ, DN = np.zeros(len(te), dtype=np.int64), np.zeros(k, dtype=np.int64)
            YS = np.empty((len(te), n))
            self._fix_free_lengths(fargs, y)
            done = _FB.flex_rk_block_dense(
                work, fargs, tau, ts, y, f, float(s.t_bound), float(s.direction),
                float(s.max_step), float(s.rtol), float(s.atol), A, s.B, s.C, E3, E5, s.K,
                _SAFETY, _MIN_FACTOR, _MAX_FACTOR, float(s.error_exponent), k, self.n_steps,
                win, stall, Y, REC, out, Kx, AX, CX, D, F, te, SJ, DN, YS, self.i + 1, qdd,
                reac, ok, qoff,
            )  # fmt: skip
            return done, Y, REC, f, out, SJ, DN, F, YS[: int(out[3])]

        return run

    def _block_buffers(self, k, m, n_out):
        """The buffers of a compiled block of up to ``k`` accepted steps from the solver's
        state: the sample rows ``(qdd, reactions, done, energies)`` holding rows up to
        ``i + m`` (:meth:`_sample_arrays`; :meth:`_no_rows` where ``m`` is None), the
        solver's ``ts = (t, h_abs)`` (s), copies of its state ``y`` and last evaluation
        ``f``, the records ``Y`` (k, n) and ``REC`` (k, 4) and ``out`` (``n_out`` zeros)."""
        s = self.solver
        rows = self._no_rows() if m is None else self._sample_arrays(self.i + m)
        ts = np.array([s.t, s.h_abs], dtype=float)
        y, f = np.array(s.y, dtype=float), np.array(s.f, dtype=float)
        n = y.shape[0]
        return rows, ts, y, f, np.empty((k, n)), np.empty((k, 4)), np.zeros(n_out)

    def _no_rows(self):
        """Sample arrays of no row (a block of a run with output times writes none)."""
        nj = len(self.system.joint_names)
        return np.zeros((0, self.nv)), np.zeros((0, nj, 6)), np.zeros(0, bool), np.zeros((0, 7))

    def _sample_arrays(self, i):
        """The ``(qdd, reactions, done, energies)`` rows of the samples (one per output
        time; energies ``(kinetic, gravity, table energies, ok)`` of the compiled steps:
        :func:`flexmbd.recursive._nbforces.sample_energies`), grown to hold row ``i`` (a
        longer run: ``set_t_end``)."""
        s = self.system
        if self._rows_lent:  # a run continued after finalize: its results keep their
            # rows (and any change made to them); the final results compute those again
            qdd, reac, done, en = self._rows
            self._rows = (np.empty_like(qdd), np.empty_like(reac), np.zeros_like(done), en)
            self._rows_lent = False
        if self._rows is None or len(self._rows[2]) <= i:
            old = self._rows
            if self.adaptive:  # (grown by doubling: the number of steps is not known)
                n = max(i + 1, 64 if old is None else 2 * len(old[2]))
            else:
                n = max(self.n_out + 1, i + 1)
            nj = len(s.joint_names)
            self._rows = (
                np.zeros((n, s.nv)),
                np.zeros((n, nj, 6)),
                np.zeros(n, bool),
                np.zeros((n, 7)),
            )
            for a, b in zip(self._rows, old or ()):
                a[: len(b)] = b[: len(a)]
        return self._rows

    def _f(self, t, y):
        nq = self.nq
        qq, vv = y[:nq], y[nq:]
        tau = self.tau_f(t, qq, vv)
        i = self._sample_next
        if i is None:
            acc = self._raw(qq, vv, tau, t)
        else:  # the sample at the start of the interval: the same qdd, with reactions
            self._sample_next = None
            acc, reac = self.system.qdd_and_reactions(qq, vv, tau, t)
            qdd_rows, reac_rows, done, _ = self._sample_arrays(i)
            if i < len(done):
                qdd_rows[i], reac_rows[i], done[i] = acc, reac, True
        return np.concatenate([self.system.qdot(qq, vv), acc])

    def _after_rk4(self, y):
        y[: self.nq] = self.system.normalize(y[: self.nq])
        return y

    def _after_solver_step(self, s):
        s.y[: self.nq] = self.system.normalize(s.y[: self.nq])

    def _dense_sample(self, y):
        y[: self.nq] = self.system.normalize(y[: self.nq])
        return y

    def rebuild_kwargs(self) -> dict[str, Any]:
        return {
            "formulation": "recursive",
            "compile": {"algorithm": self.system.algorithm},
            "options": self._options,
            "kind": "tree",
        }

    def finalize(self, results: Results, failed: bool = False) -> Results:
        meta = self.meta()
        meta["wall_time"] = self.wall
        y = np.concatenate([results.q, results.qd], axis=1)
        rows = self._rows
        res = _results(self.system, results.t, y, self.tau_f, meta, failed, rows, lend=True)
        self._rows_lent = rows is not None  # (replaced before the stepper writes rows again)
        res.stats.update(results.stats)  # rhs evaluations, step sizes
        return res


def rebuild(model, formulation, compile, options, overrides, kind=None):
    """A fresh explicit stepper of ``model`` for :func:`flexmbd.checkpoint.resume`;
    ``kind``: ``"tree"`` or ``"loop"``, the system of the checkpointed run (a model of
    the other kind has other coordinates and options: refused before compiling)."""
    if kind is not None and (kind == "loop") != bool(needs_loops(model)):
        have = "closed loops or drivers" if kind == "tree" else "no closed loop or driver"
        was = "a tree" if kind == "tree" else "closed loops"
        raise FlexmbdError(
            f"resume: the model's coordinates differ from the checkpointed run's: that run "
            f"integrated {was}, model {model.name!r} has {have}; build the model exactly as "
            f"for the checkpointed run"
        )
    system = model.compile(formulation, **compile)
    opts = restore_options(options, overrides, f"model {model.name!r}")
    if hasattr(system, "stepper"):  # closed loops
        return system.stepper(initial=False, **opts)
    return tree_stepper(system, initial=False, **opts)


# contract: the options of simulate_recursive, which it passes on (fm.resume rebuilds the
# stepper from them; LoopSystem.stepper takes the same)
def tree_stepper(
    system: Any,
    t_end: float,
    dt: float | None = None,
    integrator: str = "rk4",
    q0: ArrayLike | None = None,
    qd0: ArrayLike | None = None,
    t0: float = 0.0,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    t_eval: ArrayLike | None = None,
    method: str | None = None,
    substeps: int = 1,
    tau: Any | None = None,
    max_step: float = np.inf,
    initial: bool = True,
) -> TreeStepper:
    """The :class:`TreeStepper` of :func:`simulate_recursive` (options checked)."""
    options = dict(
        t_end=t_end,
        dt=dt,
        integrator=integrator,
        t0=t0,
        rtol=rtol,
        atol=atol,
        t_eval=t_eval,
        method=method,
        substeps=substeps,
        tau=tau,
        max_step=max_step,
    )
    integrator = explicit_integrator(
        integrator, dt, t0, t_end, hint=" (implicit ones use formulation='absolute')"
    )
    kw = {**options, "integrator": integrator}  # the options with the parsed name
    st = TreeStepper(system, **kw, _options=json_options(options))
    if integrator == "rk4":
        wmax = system.max_modal_frequency() if hasattr(system, "max_modal_frequency") else 0.0
        st.stability_note = rk4_stability(wmax, dt / int(substeps), stacklevel=4)
    if initial:
        q = system.q0() if q0 is None else np.asarray(q0, dtype=float)
        qd = system.qd0() if qd0 is None else np.asarray(qd0, dtype=float)
        st.start(np.concatenate([system.normalize(q), qd]))
    return st


def simulate_recursive(
    system: Any,
    t_end: float,
    dt: float | None = None,
    integrator: str = "rk4",
    q0: ArrayLike | None = None,
    qd0: ArrayLike | None = None,
    t0: float = 0.0,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    t_eval: ArrayLike | None = None,
    method: str | None = None,
    substeps: int = 1,
    tau: Any | None = None,
    progress: bool | None = None,
    max_step: float = np.inf,
    checkpoint: StrPath | None = None,
    every: int = 100,
    overwrite: bool = False,
) -> Results:
    """Integrate a :class:`~flexmbd.recursive.RecursiveSystem` and return Results.

    Parameters
    ----------
    t_end : float
        Final time (s).
    dt : float, optional
        Output interval; for ``"rk4"`` also the step (divided by ``substeps``).
    integrator : {"rk4", "rk45", "dop853"}
        Fixed-step RK4 or scipy's adaptive embedded pairs (``method`` overrides).
    q0, qd0 : array_like, optional
        Initial state (default: the joints' ``q0``, ``qd0``).
    rtol, atol : float
        Tolerances of the adaptive stepper.
    t_eval : array_like, optional
        Output times (adaptive only; default every ``dt``, or the accepted steps).
    tau : array_like or callable ``tau(t, q, qd)``, optional
        Joint forces along the speeds (added to the model's JointForce elements).
    progress : bool or None
        Progress bar on standard error (None: automatic, :mod:`flexmbd.progress`).
    checkpoint : path, optional
        HDF5 checkpoint file written every ``every`` output samples (see
        :mod:`flexmbd.checkpoint`; continue with ``fm.resume(path)``); an existing file
        is refused unless ``overwrite=True``.
    """
    if checkpoint is not None:
        check_checkpoint(checkpoint, overwrite)  # before any work
    st = tree_stepper(
        system,
        t_end,
        dt=dt,
        integrator=integrator,
        q0=q0,
        qd0=qd0,
        t0=t0,
        rtol=rtol,
        atol=atol,
        t_eval=t_eval,
        method=method,
        substeps=substeps,
        tau=tau,
        max_step=max_step,
    )
    # contract: the driver call of every simulate (flexmbd.checkpoint.run)
    return run(
        st,
        t_end,
        checkpoint=checkpoint,
        every=every,
        progress=progress,
        desc=f"{st.integrator} {system.model.name}",
        overwrite=overwrite,
    )


#: up to this many samples without a row from the steps are evaluated one by one
#: (``qdd_and_reactions``) rather than by the batch call, whose parallel set-up costs
#: milliseconds (the last sample of an RK4 run, a short run)
_FEW = 8
_NO_TT, _NO_TIX = np.zeros((1, 0)), np.zeros((0, 2), np.int64)  # no tabulated loads
_NO_E3 = np.zeros(0)  # RK45 / RK23: one error estimator (E), no DOP853 E3


#: an empty rigid force table (``fi``, ``ff``) of the flexible trees' block arguments
_NO_TABLE = (np.zeros((0, 1), np.int64), np.zeros((0, 1)))


class _FlexPlan(NamedTuple):
    """What the compiled blocks of a tree with flexible bodies take
    (:meth:`TreeStepper._compiled_flex`): the flexible workspace, gravity (m/s^2, world)
    and whether it applies, whether any body is stiffened, the stiffening bookkeeping,
    the constant joint forces ``tau`` (N, N m), the quaternion offsets, the joint-law
    table (``LI``, ``LF``, the laws' actuators of time ``acts``), the modal table
    (``MI``, ``modal``), the point-load table ``P`` with its values of time ``timers``
    (:func:`flexmbd.recursive.flexible.point_timers`) and whether any is ``timed``."""

    work: tuple
    gravity: np.ndarray
    use_gravity: bool
    stiff: bool
    info: np.ndarray
    tau: np.ndarray
    qoff: np.ndarray
    LI: np.ndarray
    LF: np.ndarray
    acts: list
    MI: np.ndarray
    modal: tuple
    P: tuple
    timers: list
    timed: bool

    def fargs(self, nv, FA, table=_NO_TABLE):
        """The force arguments of :func:`flexmbd.recursive._nbloops._flex_rhs` with the
        laws' and point loads' values ``FA`` (one row per evaluation) after the rigid
        force ``table`` (none by default)."""
        return (*table, int(nv), self.gravity, self.use_gravity, self.stiff, STIFF_TOL,
                STIFF_MAX_ITER, self.info, self.LI, self.LF, FA, self.MI, self.modal,
                self.P)  # fmt: skip


#: scipy's step-size control constants (scipy.integrate._ivp.rk: SAFETY, MIN_FACTOR,
#: MAX_FACTOR) and the solvers whose steps the compiled block takes
_SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0
_BLOCK_SOLVERS = ("RK45", "RK23", "DOP853")
#: no extra stages of a dense output (RK45, RK23: :func:`._nbloops.tree_rk_block_dense`)
_NO_EXTRA = np.zeros((0, 1))


def _flex_values(acts, timers, t, row):
    """Write the values at the time ``t`` (s) of the loads of a tree with flexible bodies
    that are functions of time into ``row``, as the Python path evaluates them: each
    spring-damper law's actuator ``acts[m]`` (None: a constant one, not called) into
    ``row[m]``, then the point loads' values ``timers`` (``(row, columns, f(t))`` of
    :meth:`flexmbd.recursive.flexible.FlexTree.point_loads`, in table row order) into
    the columns after the laws'."""
    for m, fa in enumerate(acts):
        if fa is not None:
            row[m] = float(fa(t))
    c = len(acts)
    for *_, fn in timers:
        x = np.atleast_1d(fn(t))
        row[c : c + len(x)] = x
        c += len(x)


def _results(system, t, y, tau_f, meta, safe=False, given=None, lend=False):
    """Results with qdd, reactions, energies (and momentum for floating systems); for
    every flexible body its :class:`~flexmbd.results.BodySeries`: modal coordinates,
    floating-frame pose and deformed interface frames (origin and Euler parameters,
    world). ``given``: ``(qdd, reactions, done, energies)`` rows of the samples that the
    RK4 steps' first stages evaluated (:meth:`TreeStepper._sample_arrays`); the others
    in one batch; ``lend``: the results' ``qdd`` and reactions are those rows (views)
    when they cover every sample (no copy; the caller must not write them again)."""
    nq, nv = system.nq, system.nv
    q, qd = y[:, :nq], y[:, nq:]
    nt = len(t)
    tau = np.zeros((nt, nv))
    const = getattr(tau_f, "constant", False)  # (None or an array: no call per sample)
    if const is not False:
        if const is not None:
            tau[:] = const
    else:
        for i in range(nt):
            v = tau_f(t[i], q[i], qd[i])
            if v is not None:
                tau[i] = v
    done = np.zeros(nt, dtype=bool)
    if given is not None:
        done[: len(given[2])] = given[2][:nt]
    if lend and given is not None and len(given[2]) >= nt:
        qdd, reac = given[0][:nt], given[1][:nt]  # the rows not done are filled below
    else:
        qdd = np.empty((nt, nv))
        reac = np.empty((nt, len(system.joint_names), 6))
        if given is not None:
            idx = index_slice(np.flatnonzero(done))  # (views and block copies)
            qdd[idx], reac[idx] = given[0][idx], given[1][idx]
    try:
        todo = np.flatnonzero(~done)
        with np.errstate(invalid="ignore" if safe else "warn", over="ignore" if safe else "warn"):
            if 0 < len(todo) <= _FEW:  # (the batch call's set-up costs more)
                for i in todo:
                    qdd[i], reac[i] = system.qdd_and_reactions(q[i], qd[i], tau[i], t[i])
            elif len(todo):
                fd = system.forward_dynamics_batch(q[todo], qd[todo], tau[todo], t=t[todo])
                qdd[todo], reac[todo] = fd.qdd, fd.reactions
    except FlexmbdError:
        if not safe:
            raise
        qdd = np.full((nt, nv), np.nan)
        reac = np.full((nt, len(system.joint_names), 6), np.nan)
    energy = energy_histories(system, t, q, qd, tau, rows=None if given is None else given[3])
    extra = {}
    if system.floating:
        extra["momentum_linear"], extra["momentum_angular"] = system.momentum_history(q, qd)
    fields = dict(energy=energy, extra=extra, meta=meta, bodies=body_series(system, q))
    return Results.from_system(system, t, q, qd, qdd, reac, **fields)
