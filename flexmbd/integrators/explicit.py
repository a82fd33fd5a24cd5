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
batched call. A failure (non-finite state, singular system, stepper failure)
raises :class:`~flexmbd.errors.SolverError` carrying the results up to the last
good sample (``err.partial``) and the time (``err.time``).
"""

import sys
import time as _time

import numpy as np

from ..errors import FlexmbdError, ModelError, SolverError
from ..results import Results

__all__ = ["rk4", "simulate_recursive"]


def _tau_function(tau, nv):
    if tau is None:
        return lambda t, q, qd: None
    if callable(tau):
        return lambda t, q, qd: np.asarray(tau(t, q, qd), dtype=float)
    arr = np.asarray(tau, dtype=float)
    if arr.shape != (nv,):
        raise ModelError(f"tau must have {nv} values (one per speed) or be a function")
    return lambda t, q, qd: arr


def rk4(f, t0, y0, h, n_steps, callback=None):
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


class _Progress:
    def __init__(self, enabled, t0, t1):
        self.enabled, self.t0, self.t1 = enabled, t0, t1
        self.next = 0.1
        self.start = _time.perf_counter()

    def __call__(self, t):
        if not self.enabled:
            return
        frac = (t - self.t0) / max(self.t1 - self.t0, 1e-300)
        if frac >= self.next - 1e-12:
            el = _time.perf_counter() - self.start
            print(f"  t = {t:.4g} s ({100 * frac:.0f} %), {el:.1f} s elapsed", file=sys.stderr)
            while self.next <= frac + 1e-12:
                self.next += 0.1


def simulate_recursive(system, t_end, dt=None, integrator="rk4", q0=None, qd0=None, t0=0.0,
                       rtol=1e-8, atol=1e-10, t_eval=None, method=None, substeps=1, tau=None,
                       progress=False, max_step=np.inf):
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
    progress : bool
        Print progress to standard error.
    """
    integrator = (integrator or "rk4").lower()
    if integrator not in ("rk4", "rk45", "dop853", "rk23"):
        raise ModelError(f"integrator {integrator!r} is not explicit; use 'rk4', 'rk45' or "
                         "'dop853' (implicit ones use formulation='absolute')")
    if integrator == "rk4" and (dt is None or dt <= 0):
        raise ModelError("integrator 'rk4' needs a step dt > 0")
    if t_end <= t0:
        raise ModelError(f"t_end ({t_end}) must be greater than t0 ({t0})")
    nq, nv = system.nq, system.nv
    q = system.q0() if q0 is None else np.asarray(q0, dtype=float)
    qd = system.qd0() if qd0 is None else np.asarray(qd0, dtype=float)
    q = system.normalize(q)
    tau_f = _tau_function(tau, nv)
    raw = system._raw_accel

    def f(t, y):
        qq, vv = y[:nq], y[nq:]
        acc = raw(qq, vv, tau_f(t, qq, vv), t)
        return np.concatenate([system.qdot(qq, vv), acc])

    prog = _Progress(progress, t0, t_end)
    ts, ys = [t0], [np.concatenate([q, qd])]
    meta = {"formulation": "recursive", "integrator": integrator, "model": system.model.name,
            "algorithm": system.algorithm}

    def fail(msg, t_fail):
        partial = _results(system, np.array(ts), np.array(ys), tau_f, meta, safe=True)
        return SolverError(f"{msg} at t = {t_fail:.6g} s; results up to t = {ts[-1]:.6g} s are in "
                           "err.partial", partial=partial, time=t_fail)

    wall = _time.perf_counter()
    if integrator == "rk4":
        wmax = system.max_modal_frequency() if hasattr(system, "max_modal_frequency") else 0.0
        if wmax * dt / int(substeps) > 2.8:
            import warnings

            warnings.warn(
                f"RK4 step {dt / int(substeps):.3g} s is above the stability limit "
                f"{2.8 / wmax:.3g} s of the stiffest mode (omega = {wmax:.4g} rad/s): reduce "
                "dt (or use substeps / integrator='rk45'), or drop high modes", stacklevel=3)
        n_out = int(round((t_end - t0) / dt))
        if abs(t0 + n_out * dt - t_end) > 1e-9 * max(1.0, abs(t_end)):
            n_out = int(np.floor((t_end - t0) / dt + 1e-9))
        h = dt / int(substeps)
        y = ys[0]
        for i in range(n_out):
            t_start = t0 + i * dt
            try:
                y = rk4(f, t_start, y, h, int(substeps))
            except FlexmbdError as err:
                raise fail(str(err), t_start) from err
            y[:nq] = system.normalize(y[:nq])
            if not np.all(np.isfinite(y)):
                raise fail("non-finite state", t_start + dt)
            ts.append(t0 + (i + 1) * dt)
            ys.append(y.copy())
            prog(ts[-1])
        meta["dt"] = dt
    else:
        from scipy import integrate as si

        name = method or {"rk45": "RK45", "dop853": "DOP853", "rk23": "RK23"}[integrator]
        cls = getattr(si, name)
        if t_eval is None and dt is not None:
            n_out = int(np.floor((t_end - t0) / dt + 1e-9))
            t_eval = t0 + dt * np.arange(1, n_out + 1)
            if t_eval.size == 0 or t_eval[-1] < t_end - 1e-9 * max(1.0, t_end):
                t_eval = np.append(t_eval, t_end)
        elif t_eval is not None:
            t_eval = np.asarray(t_eval, dtype=float)
            t_eval = t_eval[t_eval > t0]
        try:
            stepper = cls(f, t0, ys[0], t_end, rtol=rtol, atol=atol, max_step=max_step)
        except FlexmbdError as err:
            raise fail(str(err), t0) from err
        n_steps = 0
        ie = 0
        while stepper.status == "running":
            try:
                msg = stepper.step()
            except FlexmbdError as err:
                raise fail(str(err), stepper.t) from err
            if stepper.status == "failed":
                raise fail(f"adaptive stepper failed ({msg})", stepper.t)
            n_steps += 1
            stepper.y[:nq] = system.normalize(stepper.y[:nq])
            if not np.all(np.isfinite(stepper.y)):
                raise fail("non-finite state", stepper.t)
            if t_eval is None:
                ts.append(stepper.t)
                ys.append(stepper.y.copy())
            else:
                dense = None
                while ie < t_eval.size and t_eval[ie] <= stepper.t + 1e-12:
                    dense = dense or stepper.dense_output()
                    yy = dense(t_eval[ie])
                    yy[:nq] = system.normalize(yy[:nq])
                    ts.append(float(t_eval[ie]))
                    ys.append(yy)
                    ie += 1
            prog(stepper.t)
        meta.update(rtol=rtol, atol=atol, method=name, steps=n_steps)
    meta["wall_time"] = _time.perf_counter() - wall
    return _results(system, np.array(ts), np.array(ys), tau_f, meta)


def _results(system, t, y, tau_f, meta, safe=False):
    """Results with qdd, reactions, energies (and momentum for floating systems); for
    every flexible body its modal coordinates (``extra["modal:<body>"]``), floating-frame
    pose (``position:``/``orientation:``) and deformed interface frames
    (``interface:<body>.<name>``, origin and Euler parameters, world)."""
    nq, nv = system.nq, system.nv
    q, qd = y[:, :nq], y[:, nq:]
    nt = len(t)
    tau = np.zeros((nt, nv))
    for i in range(nt):
        v = tau_f(t[i], q[i], qd[i])
        if v is not None:
            tau[i] = v
    try:
        fd = system.forward_dynamics(q, qd, tau, t=t) if nt else None
        qdd = fd.qdd if nt else np.zeros((0, nv))
        reac = fd.reactions if nt else np.zeros((0, len(system.joint_names), 6))
    except FlexmbdError:
        if not safe:
            raise
        qdd = np.full((nt, nv), np.nan)
        reac = np.full((nt, len(system.joint_names), 6), np.nan)
    ke = np.array([system.kinetic_energy(q[i], qd[i]) for i in range(nt)])
    pe = np.array([system.potential_energy(q[i], t[i]) for i in range(nt)])
    energy = {"kinetic": ke, "potential": pe, "total": ke + pe}
    extra = {}
    for name, (sq, _) in getattr(system, "modal_slices", {}).items():
        extra[f"modal:{name}"] = q[:, sq].copy()
    if getattr(system, "_flex", None) is not None and nt:
        from ..recursive.flexible import flexible_extras

        extra.update(flexible_extras(system, q))
    if system._floating:
        mom = [system.momentum(q[i], qd[i]) for i in range(nt)]
        extra["momentum_linear"] = np.array([m[0] for m in mom]).reshape(nt, 3)
        extra["momentum_angular"] = np.array([m[1] for m in mom]).reshape(nt, 3)
    return Results(t, q, qd, qdd, coordinates=system.coordinates, speeds=system.speeds,
                   joint_names=system.joint_names, reactions=reac, energy=energy, extra=extra,
                   meta=meta)
