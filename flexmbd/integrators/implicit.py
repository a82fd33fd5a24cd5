"""Implicit integrators for the index-3 DAE ``R(q, qd, qdd) + Phi_q^T lam = Q``, ``Phi = 0``.

One Newton engine, three schemes. The unknowns of a step are ``(qdd_{n+1},
lam_{n+1})``; positions and velocities follow from the scheme's update ::

    q_{n+1}  = q_n + h qd_n + h^2 (1/2 - beta) a_n + h^2 beta a_{n+1}
    qd_{n+1} = qd_n + h (1 - gamma) a_n + h gamma a_{n+1}

* **Newmark** (``beta``, ``gamma``; the seed paper's ``alpha``, ``delta``): ``a = qdd``.
  ``beta = 1/4, gamma = 1/2`` is the trapezoidal rule (second order, no numerical
  dissipation); ``gamma > 1/2`` dissipates.
* **Generalized-alpha** (Chung & Hulbert 1993 in the index-3 DAE form of Arnold &
  Bruls 2007): ``a`` is an acceleration-like variable with
  ``(1 - alpha_m) a_{n+1} + alpha_m a_n = (1 - alpha_f) qdd_{n+1} + alpha_f qdd_n``,
  ``a_0 = qdd_0``; the parameters come from the spectral radius at infinity
  ``rho_inf`` in [0, 1]: ``alpha_m = (2 rho - 1)/(rho + 1)``,
  ``alpha_f = rho/(rho + 1)``, ``gamma = 1/2 + alpha_f - alpha_m``,
  ``beta = (gamma + 1/2)^2 / 4`` (second order; ``rho_inf = 1`` is the
  trapezoidal rule).
* **HHT-alpha** (Hilber, Hughes & Taylor 1977), ``alpha`` in [-1/3, 0],
  ``beta = (1 - alpha)^2/4``, ``gamma = 1/2 - alpha``. Default form: the
  generalized-alpha update above with ``alpha_m = 0``, ``alpha_f = -alpha``
  (acceleration weighting, Arnold & Bruls 2007), which is HHT exactly on linear
  problems. ``form="force"`` gives the force-weighted index-3 form of Negrut,
  Rampalli, Ottarsson & Sajdak (2007), ``a = qdd`` and ::

      (M qdd)_{n+1}/(1 + alpha) + F_{n+1} - alpha/(1 + alpha) F_n = 0,
      F = Rv + Phi_q^T lam - Q

  with ``Rv = R(q, qd, 0)`` the quadratic-velocity inertia terms (weighted like
  forces) and ``F_n`` stored as body wrenches (forces and world moments
  ``n_b = E(e_b) F_e / 2``) mapped with the current parameters. In Euler
  parameters this form is only **first order**: part of ``qdd`` (the radial
  ``e . dde = -|de|^2``, with ``M e = 0``) is fixed by the normalization constraint,
  not by a force, so the weighting cannot compensate the ``gamma != 1/2`` update
  (measured on a body spinning at constant speed: error ratio 2.0 per halving of
  the step). The default form is second order (tests).

With ``beta' = beta (1 - alpha_f)/(1 - alpha_m)`` and ``gamma'`` likewise
(``dq/dqdd = beta' h^2``, ``dqd/dqdd = gamma' h``), Newton's method solves ::

    [ M + beta' h^2 (dR/dq + d(Phi_q^T lam)/dq - dQ/dq)
      + gamma' h (dR/dqd - dQ/dqd) ,  Phi_q^T ]  [dqdd]     [ r ]
    [ Phi_q ,                 0    ]  [dlam] = - [ Phi / (beta' h^2) ]

(HHT: ``M`` and ``d(M qdd)/dq`` weighted by ``1/(1 + alpha)``) with the exact
Jacobian of every term (force elements whose Jacobian is switched
off are left out). Dividing the constraint equations by ``beta' h^2`` is the
scaling of Negrut et al. / Bottasso, Dopico & Trainelli (2007): the matrix tends
to the well-conditioned ``[M Phi_q^T; Phi_q 0]`` as ``h -> 0`` instead of an
``O(h^-2)`` spread. Convergence: the 2-norm of the scaled residual
``[r; Phi/(beta' h^2)]`` below ``tol + rtol * scale`` (``scale`` = norm of the
applied forces at the start of the step). The initial guess is the previous
step's ``(qdd, lam)`` (as in the seed paper). ``iterations`` counts Newton
corrections (linear solves) per step; counting residual evaluations instead (the
paper's convention, it seems) adds one. A residual within 10 times its
round-off floor or a correction below round-off also ends the iteration: the
residual of an over-tight ``tol`` cannot drop further in floating point. The force
rows and the constraint rows are judged each against its own floor (``eps`` times the
force terms; ``eps`` times the position scale, independent of ``h``), so that no step
is accepted uncorrected unless both parts are truly satisfied
(:mod:`flexmbd.integrators.convergence`; the compiled engine uses the same rule).
``stats["newton_iterations"] == 0`` marks a step accepted without a correction.

Euler-parameter gauge: the rates' component along ``e`` changes neither the
angular velocity (``w = 2 E(e) de``, ``E(e) e = 0``) nor any force; it is fixed by
the normalization only at position level. With ``gamma = 1/2`` the index-3
scheme leaves it undamped and it was observed to grow without bound (a pendulum,
Newmark 1/4, 1/2, dt = 0.01: Newton failed after 13 s). It is therefore removed
after every step (``gauge=True``, default): ``de <- de - e (e . de)/|e|^2``, which
leaves the physical state untouched.

Velocity drift: with ``gamma' = 1/2`` (Newmark 1/4, 1/2; generalized-alpha with
``rho_inf = 1``) the index-3 scheme does not damp the velocity-constraint
violation ``Phi_q qd`` and it was observed to grow until Newton failed (a
spatial double pendulum, 3.5 s at dt = 0.005). By default (``project_velocities=
"auto"``) such schemes project the velocities after every step, mass-orthogonally
(``min dqd^T M dqd`` subject to ``Phi_q (qd + dqd) = 0``); the kinetic energy it
removes is second order in the violation and shows up in the numerical
dissipation. Dissipative schemes damp the drift themselves and only remove the
gauge.

Results: ``stats["newton_iterations"]``, ``stats["residual"]`` (final norm),
``stats["residual_norms"]`` (nt, max_iter + 1; NaN-padded history per step),
``stats["constraint_violation"]`` (max |Phi| of the joint equations),
``stats["step_time"]`` (s of wall time per step), ``extra["lambda"]``,
``body_series[<body>]`` (pose, modal coordinates, interface frames); energies as in
:mod:`flexmbd.absolute.energy`. A Newton failure raises
:class:`~flexmbd.errors.ConvergenceError` with ``partial`` (the results up to the
last accepted step) and ``time``.
"""

from __future__ import annotations

import time as _time
from typing import TYPE_CHECKING

import numpy as np

from ..absolute.energy import EnergyAccumulator, EnergyMeter
from ..absolute.engine import Engine
from ..absolute.forces import map_te_terms
from ..absolute.quaternion import Apoly, Emat
from ..absolute.statics import consistent_initial_conditions, project_velocities
from ..checkpoint import check_checkpoint, run, start_failure
from ..constraints.redundancy import KKTSolver
from ..errors import ConvergenceError, FlexmbdError, ModelError, SolverError
from ..monitor import BLOCK_STEPS, GrowthMonitor
from ..results import BodySeries, Results
from ..spatial import rot_to_quat
from .convergence import newton_converged
from .stepper import json_options, restore_options

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .._typing import ArrayLike, StrPath

__all__ = ["Scheme", "newmark", "hht", "generalized_alpha", "integrate"]


class Scheme:
    """Parameters of one implicit scheme (see the module docstring)."""

    def __init__(
        self,
        name: str,
        beta: float,
        gamma: float,
        alpha_m: float = 0.0,
        alpha_f: float = 0.0,
        hht_alpha: float = 0.0,
    ) -> None:
        self.name = name
        self.beta = float(beta)
        self.gamma = float(gamma)
        self.alpha_m = float(alpha_m)
        self.alpha_f = float(alpha_f)
        self.hht_alpha = float(hht_alpha)

    @property
    def beta_p(self) -> float:
        return self.beta * (1 - self.alpha_f) / (1 - self.alpha_m)

    @property
    def gamma_p(self) -> float:
        return self.gamma * (1 - self.alpha_f) / (1 - self.alpha_m)

    def as_dict(self) -> dict[str, Any]:
        return {
            "scheme": self.name,
            "beta": self.beta,
            "gamma": self.gamma,
            "alpha_m": self.alpha_m,
            "alpha_f": self.alpha_f,
            "hht_alpha": self.hht_alpha,
        }


#: a step's Newton iteration diverged when its residual norm grew by more than this factor
#: from the first iterate (the compiled engine's singular-matrix failures are told apart)
DIVERGED = 1e3
#: a failed step's advice names the velocity-constraint drift of the last good state when it
#: exceeds this fraction of the largest speed (and velocities are not projected)
VELOCITY_DRIFT = 1e-3


def newmark(beta: float = 0.25, gamma: float = 0.5) -> Scheme:
    """Newmark scheme (``beta``, ``gamma``) = the seed paper's (alpha, delta)."""
    if not (0 < beta <= 0.5 and 0 <= gamma <= 1):
        raise ModelError(f"Newmark: need 0 < beta <= 1/2 and 0 <= gamma <= 1, got {beta}, {gamma}")
    return Scheme("newmark", beta, gamma)


def hht(alpha: float = -0.05, form: str = "acceleration") -> Scheme:
    """HHT-alpha with ``alpha`` in [-1/3, 0]; ``form`` "acceleration" (default) or "force"."""
    if not (-1.0 / 3.0 <= alpha <= 0.0):
        raise ModelError(f"HHT: alpha must lie in [-1/3, 0], got {alpha}")
    b, g = (1 - alpha) ** 2 / 4, 0.5 - alpha
    if form == "acceleration":
        return Scheme("hht", b, g, alpha_m=0.0, alpha_f=-alpha)
    if form == "force":
        return Scheme("hht-force", b, g, hht_alpha=alpha)
    raise ModelError(f"HHT: form must be 'acceleration' or 'force', got {form!r}")


def generalized_alpha(rho_inf: float = 0.8) -> Scheme:
    """Generalized-alpha with spectral radius at infinity ``rho_inf`` in [0, 1]."""
    if not (0.0 <= rho_inf <= 1.0):
        raise ModelError(f"generalized-alpha: rho_inf must lie in [0, 1], got {rho_inf}")
    am = (2 * rho_inf - 1) / (rho_inf + 1)
    af = rho_inf / (rho_inf + 1)
    g = 0.5 + af - am
    return Scheme("generalized-alpha", 0.25 * (g + 0.5) ** 2, g, am, af)


def make_scheme(integrator, beta=None, gamma=None, alpha=None, rho_inf=None, form=None):
    if isinstance(integrator, Scheme):
        return integrator
    name = str(integrator).lower().replace("_", "-")
    if name == "newmark":
        return newmark(0.25 if beta is None else beta, 0.5 if gamma is None else gamma)
    if name in ("hht", "hht-alpha"):
        return hht(-0.05 if alpha is None else alpha, form or "acceleration")
    if name in ("generalized-alpha", "genalpha", "gen-alpha"):
        return generalized_alpha(0.8 if rho_inf is None else rho_inf)
    raise ModelError(
        f"unknown implicit integrator {integrator!r}; use 'newmark', 'hht' or 'generalized-alpha'"
    )


def integrate(
    system: Any,
    t_end: float,
    dt: float,
    integrator: str | Scheme = "newmark",
    *,
    beta: float | None = None,
    gamma: float | None = None,
    alpha: float | None = None,
    rho_inf: float | None = None,
    tol: float = 1e-8,
    rtol: float = 0.0,
    max_iter: int = 25,
    t0: float = 0.0,
    q0: ArrayLike | None = None,
    qd0: ArrayLike | None = None,
    form: str | None = None,
    energy: bool = True,
    gauge: bool = True,
    project_velocities: str | bool = "auto",
    callback: Callable[..., Any] | None = None,
    engine: str = "auto",
    checkpoint: StrPath | None = None,
    every: int = 100,
    progress: bool | None = None,
    overwrite: bool = False,
) -> Results:
    """Integrate ``system`` from ``t0`` to ``t_end`` with fixed step ``dt`` (see module docstring).

    ``q0``/``qd0`` override the initial state (made consistent first). ``callback``
    is called as ``callback(t, q, qd)`` after each accepted step. ``gauge``: remove
    the component of the Euler-parameter rates along ``e`` after each step (see the
    module docstring). ``project_velocities``: True, False or "auto" (on when the
    scheme has no numerical dissipation, ``gamma' = 1/2``). ``engine``: "auto" (default)
    runs the Newton iterations in the compiled engine (:mod:`flexmbd.absolute.engine`)
    when the model allows it, False always uses the generic sparse path, True requires
    the engine (:class:`~flexmbd.errors.ModelError` naming what the engine cannot take:
    a force law, redundant joint equations).
    ``checkpoint``: HDF5 file written every ``every`` steps with the integrator's
    complete state (:mod:`flexmbd.checkpoint`; the compiled step loop then runs in
    blocks of ``every`` steps; continue with ``fm.resume(path)``, bit-identical; an
    existing file is refused unless ``overwrite=True``).
    ``progress``: progress bar (None: automatic, :mod:`flexmbd.progress`).
    """
    if checkpoint is not None:
        check_checkpoint(checkpoint, overwrite)  # before any work
    try:
        st = implicit_stepper(
            system,
            t_end,
            dt,
            integrator,
            beta=beta,
            gamma=gamma,
            alpha=alpha,
            rho_inf=rho_inf,
            tol=tol,
            rtol=rtol,
            max_iter=max_iter,
            t0=t0,
            q0=q0,
            qd0=qd0,
            form=form,
            energy=energy,
            gauge=gauge,
            project_velocities=project_velocities,
            callback=callback,
            engine=engine,
        )
    except SolverError as err:  # e.g. singular at the initial state
        raise start_failure(err, checkpoint, overwrite) from None
    return run(
        st,
        st.t_end,
        checkpoint=checkpoint,
        every=every,
        progress=progress,
        desc=f"{st.sch.name} {system.model.name}",
        overwrite=overwrite,
    )


def implicit_stepper(
    system, t_end, dt, integrator="newmark", *, q0=None, qd0=None, initial=True, **options
):
    """The :class:`ImplicitStepper` of :func:`integrate` (``initial=False``: the state is
    left to ``load_state_dict``)."""
    st = ImplicitStepper(system, t_end, dt, integrator, **options)
    st.options = json_options(dict(t_end=t_end, dt=dt, integrator=integrator, **options))
    if initial:
        st.start(q0, qd0)
    return st


def rebuild(model, formulation, compile, options, overrides):
    """A fresh implicit stepper of ``model`` for :func:`flexmbd.checkpoint.resume`."""
    system = model.compile(formulation, **compile)
    opts = restore_options(options, overrides, f"model {model.name!r}")
    return implicit_stepper(system, initial=False, **opts)


class ImplicitStepper:
    """Fixed-step Newmark / HHT / generalized-alpha integration of an absolute system,
    following the stepper contract of :mod:`flexmbd.checkpoint` (bit-identical resume).

    Three modes, chosen at the start: ``"generic"`` (sparse Newton in Python, any
    model), ``"engine"`` (Newton iterations in the compiled engine, the step loop in
    Python: velocity projection of a rheonomic model, or a callback) and ``"compiled"``
    (the whole step loop in the engine, joint reactions and the interface loads lagged
    from them, point loads and spring-damper-actuators included; :meth:`advance` runs
    blocks of steps). The state holds the scheme's variables
    ``(q, qd, qdd, a, lam)``, the HHT memory, the QR row selection, the energy
    integrals, the joint-angle references and the lagged interface loads of the system.
    """

    checks_finite = False

    def __init__(
        self,
        system,
        t_end,
        dt,
        integrator="newmark",
        *,
        beta=None,
        gamma=None,
        alpha=None,
        rho_inf=None,
        tol=1e-8,
        rtol=0.0,
        max_iter=25,
        t0=0.0,
        form=None,
        energy=True,
        gauge=True,
        project_velocities="auto",
        callback=None,
        engine="auto",
    ):
        self.sch = sch = make_scheme(integrator, beta, gamma, alpha, rho_inf, form)
        h = float(dt)
        if not h > 0:
            raise ModelError(f"time step must be positive, got {dt!r}")
        self.system = system
        self.h, self.t0 = h, float(t0)
        self.t_end = float(t_end)
        self.nsteps = self._count(self.t_end)
        system.refresh()
        self.n, self.nc = system.n, system.nc
        # redundant joint equations are removed from the Newton system by QR row selection
        self.kkt = KKTSolver(self.n)
        self.tol, self.rtol, self.max_iter = tol, rtol, int(max_iter)
        self.energy, self.gauge, self.callback = energy, gauge, callback
        self.engine_option = engine
        self.hhtw = sch.hht_alpha != 0.0
        gp = sch.gamma_p
        self.project = (
            abs(gp - 0.5) < 1e-12 if project_velocities == "auto" else bool(project_velocities)
        )
        self.nj = system.constraints.n_joint_rows
        self.i = 0
        self.wall = 0.0
        self.mode = None
        self.eng = None
        self.meter = None
        self.mem = None
        self.options = {}
        self._a_block = None
        self._monitor = False  # built on first use (flexmbd.monitor)

    def _count(self, t_end):
        nsteps = int(round((t_end - self.t0) / self.h))
        if nsteps < 1:
            raise ModelError(f"t_end={t_end} gives no step of dt={self.h} from t0={self.t0}")
        return nsteps

    @property
    def t(self):
        return self.t0 + self.h * self.i

    @property
    def done(self):
        return self.i >= self.nsteps

    @property
    def n_total(self):
        return self.nsteps

    def set_t_end(self, t_end):
        t_end = float(t_end)
        if t_end != self.t_end:
            nsteps = self._count(t_end)
            if nsteps < self.i:
                raise FlexmbdError(
                    f"t_end={t_end} lies before the run's current time {self.t:.6g} s"
                )
            self.t_end, self.nsteps = t_end, nsteps

    # -- start ------------------------------------------------------------------------------
    def start(self, q0=None, qd0=None):
        """Consistent initial state (the joints' values, or ``q0``/``qd0``) and its sample."""
        system, t0 = self.system, self.t0
        if q0 is None and qd0 is None:
            q, qd, qdd, lam = system.initial_conditions(t0=t0)
        else:
            qi = system.q0() if q0 is None else np.asarray(q0, float)
            qdi = system.qd0() if qd0 is None else np.asarray(qd0, float)
            q, qd, qdd, lam = consistent_initial_conditions(system, qi, qdi, t=t0)
        if hasattr(system, "update_interface_loads"):  # lagged loads of the geometric stiffening
            system.update_interface_loads(q, lam, t0)
        self.q, self.qd, self.qdd, self.lam = q, qd, qdd, lam
        self.a = qdd.copy()
        self.i = 0
        if self.energy:
            self.meter = EnergyAccumulator(system.energy_meter(), 1)
        self.mode, phi = self._choose_mode(q)
        if phi is None:  # the compiled kernel's Phi: round-off of the Python evaluation
            phi = system.constraint(q, t0) if self.mode == "generic" else self.eng.constraint(q, t0)
        viol = float(np.abs(phi[: self.nj]).max()) if self.nj else 0.0
        if self.mode == "generic":
            reac = system.reactions(q, qd, lam, t0)
        else:
            self.eng.refresh_interface_loads()
            reac = self.eng.reactions(q, lam)
        self._row = self._make_row(reac, 0, 0.0, np.full(self.max_iter + 1, np.nan), viol, 0.0)
        if self.hhtw:
            T0 = system.dae_terms(q, qd, qdd, lam, t0, jacobian=False, split=True)
            self.mem = _to_wrenches(system, q, T0.Rv + T0.PtL - T0.Q)
        return self

    def _choose_mode(self, q):
        """The step path ("generic", "engine" or "compiled") and, when the admission test
        evaluated it with the engine's kernel, Phi(q, t0) (else None)."""
        system, engine = self.system, self.engine_option
        if not (engine and not self.hhtw and hasattr(system, "flexible")):
            return "generic", None

        use = engine is True or (engine == "auto" and Engine.supports(system, self.sch))
        phi = None
        if use and engine == "auto":
            # redundant joint equations need the generic path's QR row selection
            # (Phi_q from the engine's compiled kernel: the Python evaluation cost ~1-3 ms)
            phi, use = system.engine().admission(q, self.t0)
        elif use and not system.engine().admission(q, self.t0)[1]:
            raise ModelError(
                f"engine=True: model {system.model.name!r} has redundant joint equations at "
                f"t = {self.t0:g} s (a rank-deficient constraint Jacobian, e.g. a planar loop "
                "of spatial joints); the compiled engine needs independent equations: use "
                "engine='auto' (the generic path selects independent rows by QR) or "
                "engine=False, or model the loop without the redundancy"
            )
        if not use:
            return "generic", None
        self.eng = system.engine()
        self.meter = None  # energies of the engine's models: after the run, batched
        # the compiled loop projects velocities itself (scleronomic models: no drivers)
        project_ok = not self.project or not system.constraints.rheonomic
        if project_ok and self.callback is None:
            return "compiled", phi
        return "engine", phi

    def _make_row(self, reac, k, resid, hist, viol, wall):
        row = {
            "q": self.q,
            "qd": self.qd,
            "qdd": self.qdd,
            "reactions": reac,
            "extra:lambda": self.lam,
            "stats:newton_iterations": np.int64(k),
            "stats:residual": resid,
            "stats:residual_norms": hist,
            "stats:constraint_violation": viol,
            "stats:step_time": wall,
        }
        if self.meter is not None:
            self.meter.record(0, self.q, self.qd, self.t, self.h)
            for key, v in self.meter.arr.items():
                row[f"energy:{key}"] = float(v[0])
        return row

    # -- contract ---------------------------------------------------------------------------
    def sample(self):
        return self._row

    def header(self):
        s = self.system
        meta = {
            "model": s.model.name,
            "formulation": "absolute",
            "integrator": self.sch.name,
            "dt": self.h,
            "tol": self.tol,
            "rtol": self.rtol,
            "path": self.mode,
            **self.sch.as_dict(),
        }
        return {
            "coordinates": s.coordinates,
            "speeds": s.speeds,
            "joint_names": s.joint_names,
            "meta": meta,
        }

    def _fail(self, i, t1, k, resid):
        return ConvergenceError(
            f"{self.sch.name}: Newton did not converge at t = {t1:.6g} s (step {i}) in {k} "
            f"iterations; residual {resid:.3e} > tol {self.tol:.1e} + rtol*scale. Reduce dt, "
            f"loosen tol, or check the force-element Jacobians{self._velocity_hint()}",
            time=float(t1),
        )

    def _velocity_hint(self):
        """Advice for a failed step when the last good state's speeds violate the velocity
        constraints ``Phi_q qd = nu`` (beyond :data:`VELOCITY_DRIFT` of the largest speed)
        and the run does not project them (``project_velocities`` off): Newmark's
        trapezoidal rule does not damp that drift, and a fast motion amplifies it."""
        if self.project or not self.nc:
            return ""
        try:
            q, qd, t = self.q, self.qd, float(self.t)
            v = self.system.constraint_jacobian(q, t) @ qd
            v = v - self.system.constraint_velocity_rhs(q, t)
        except Exception:  # noqa: BLE001 - advice must never hide the failure
            return ""
        drift = float(np.abs(v).max())
        if not drift > VELOCITY_DRIFT * max(1.0, float(np.abs(qd).max())):
            return ""
        return (
            f". The last good state's speeds violate the velocity constraints by up to "
            f"{drift:.3g} (|Phi_q qd - nu|) with project_velocities off: "
            f"project_velocities=True keeps them consistent"
        )

    def _singular(self, i, t1, hist):
        """The error of step ``i`` (ending at ``t1``, s) whose Newton matrix the compiled
        engine could not factor; ``hist`` the step's residual norms up to that solve (NaN
        after). When the residual grew over the iterations, Newton diverged and its
        iterate reached the singular matrix: the step, not the model, is at fault."""
        r = hist[np.isfinite(hist)]
        where = f"at t = {t1:.6g} s (step {i}; the last good state is t = {t1 - self.h:.6g} s)"
        if len(r) > 1 and r[-1] > DIVERGED * r[0]:
            return ConvergenceError(
                f"{self.sch.name}: Newton diverged {where}: the residual grew from "
                f"{r[0]:.3e} to {r[-1]:.3e} in {len(r) - 1} iterations until the Newton "
                f"matrix at the iterate was singular (a diverging iteration, not a singular "
                f"model). Reduce dt or loosen tol{self._velocity_hint()}",
                time=float(t1),
            )
        return ConvergenceError(
            f"{self.sch.name}: singular Newton matrix {where} in the compiled engine "
            f"(redundant or singular joint equations?); run with engine=False to use the "
            f"generic path with QR row selection",
            time=float(t1),
        )

    def step(self):
        if self.mode == "generic":
            self._step_generic()
        else:
            self._step_engine()

    def _step_generic(self):
        system, sch, h = self.system, self.sch, self.h
        n, nc, tol, rtol, max_iter = self.n, self.nc, self.tol, self.rtol, self.max_iter
        q, qd, qdd, a, lam = self.q, self.qd, self.qdd, self.a, self.lam
        bp, gp = sch.beta_p, sch.gamma_p
        am, af, ah = sch.alpha_m, sch.alpha_f, sch.hht_alpha
        cM = 1.0 / (1.0 + ah)
        hhtw, mem = self.hhtw, self.mem
        sc = 1.0 / (bp * h * h)
        i = self.i + 1
        t1 = self.t0 + h * i
        hist = np.full(max_iter + 1, np.nan)
        tic = _time.perf_counter()
        # predictors (the qdd-independent parts of the updates)
        a_part = (af * qdd - am * a) / (1 - am)
        q_pred = q + h * qd + h * h * (0.5 - sch.beta) * a + h * h * sch.beta * a_part
        v_pred = qd + h * (1 - sch.gamma) * a + h * sch.gamma * a_part
        x_qdd = qdd.copy()
        x_lam = lam.copy()
        converged = False
        scale = None
        tiny = False
        k = 0
        for k in range(max_iter + 1):
            q1 = q_pred + bp * h * h * x_qdd
            v1 = v_pred + gp * h * x_qdd
            T = system.dae_terms(q1, v1, x_qdd, x_lam, t1, jacobian=True, split=hhtw)
            if hhtw:
                r1 = (
                    cM * (T.R - T.Rv)
                    + T.Rv
                    + T.PtL
                    - T.Q
                    - ah * cM * _from_wrenches(system, q1, mem)
                )
            else:
                r1 = T.R + T.PtL - T.Q
            res = np.concatenate([r1, sc * T.phi])
            nrf = float(np.linalg.norm(r1))
            nphi = float(np.linalg.norm(T.phi))
            nr = float(np.hypot(nrf, sc * nphi))
            if scale is None:
                scale = float(np.linalg.norm(T.Q))
            hist[k] = nr
            if not np.isfinite(nr):
                break
            size = float(np.linalg.norm(cM * T.R) + np.linalg.norm(T.PtL) + np.linalg.norm(T.Q))
            # the tolerance, or force and constraint rows each within their own round-off
            # floor (integrators.convergence, the rule of the compiled engine too)
            if (
                tiny
                or newton_converged(
                    nrf, nphi, sc, tol + rtol * scale, size, nc, max(1.0, float(np.abs(q1).max()))
                )
                > 0
            ):
                converged = True
                break
            if k == max_iter:
                break
            if hhtw:
                A = system.iteration_matrix(
                    T,
                    cM,
                    cM * bp * h * h,
                    gp * h,
                    bp * h * h,
                    gp * h,
                    aKinv=(1.0 - cM) * bp * h * h,
                    extra=_memory_jacobian(system, mem, -ah * cM * bp * h * h),
                )
            else:
                A = system.iteration_matrix(T, 1.0, bp * h * h, gp * h, bp * h * h, gp * h)
            try:
                dx = self.kkt.factor(A).solve(-res)
            except RuntimeError:
                break
            x_qdd += dx[:n]
            x_lam += dx[n:]
            tiny = bool(
                np.linalg.norm(dx[:n]) <= 1e-13 * (1.0 + np.linalg.norm(x_qdd))
                and np.linalg.norm(dx[n:]) <= 1e-13 * (1.0 + np.linalg.norm(x_lam))
            )
        if not converged:
            raise self._fail(i, t1, k, hist[k])
        a_new = ((1 - af) * x_qdd + af * qdd - am * a) / (1 - am)
        q = q_pred + bp * h * h * x_qdd
        qd = v_pred + gp * h * x_qdd
        if self.project:
            qd = _project_velocities(system, q, qd, t1)
        elif self.gauge:
            qd = _remove_gauge(system, q, qd)
        self.a, self.qdd, self.lam, self.q, self.qd = a_new, x_qdd, x_lam, q, qd
        if hhtw:
            self.mem = _to_wrenches(system, q, T.Rv + T.PtL - T.Q)
        system.accept(q, qd, x_lam, t1)
        wall = _time.perf_counter() - tic
        self.i = i
        phi = system.constraint(q, t1)
        viol = float(np.abs(phi[: self.nj]).max()) if self.nj else 0.0
        self._row = self._make_row(system.reactions(q, qd, x_lam, t1), k, hist[k], hist, viol, wall)
        self.wall += wall
        if self.callback is not None:
            self.callback(t1, q, qd)

    def _step_engine(self):
        system, sch, h, eng = self.system, self.sch, self.h, self.eng
        bp, gp = sch.beta_p, sch.gamma_p
        am, af = sch.alpha_m, sch.alpha_f
        be, ga = sch.beta, sch.gamma
        bh2, gh, sc = bp * h * h, gp * h, 1.0 / (bp * h * h)
        q, qd, qdd, a, lam = self.q, self.qd, self.qdd, self.a, self.lam
        i = self.i + 1
        t1 = float(self.t0 + h * i)
        hist = np.full(self.max_iter + 1, np.nan)
        tic = _time.perf_counter()
        a_part = (af * qdd - am * a) / (1 - am)
        q_pred = q + h * qd + h * h * (0.5 - be) * a + h * h * be * a_part
        v_pred = qd + h * (1 - ga) * a + h * ga * a_part
        x_qdd = qdd.copy()
        x_lam = lam.copy()
        try:
            status, k, vi = eng.newton(
                q_pred,
                v_pred,
                x_qdd,
                x_lam,
                t1,
                bh2,
                gh,
                sc,
                self.tol,
                self.rtol,
                self.max_iter,
                hist,
            )
        except np.linalg.LinAlgError:
            raise self._singular(i, t1, hist) from None
        if status != 1:
            raise self._fail(i, t1, k, hist[k])
        a = ((1 - af) * x_qdd + af * qdd - am * a) / (1 - am)
        q = q_pred + bh2 * x_qdd
        qd = v_pred + gh * x_qdd
        if self.project:
            qd = eng.project(q, qd, t1)
        elif self.gauge:
            qd = _remove_gauge(system, q, qd)
        self.a, self.qdd, self.lam, self.q, self.qd = a, x_qdd, x_lam, q, qd
        if eng.itf_lagged:
            system.accept(q, qd, x_lam, t1)
            eng.refresh_interface_loads()
        wall = _time.perf_counter() - tic
        self.i = i
        self._row = self._make_row(eng.reactions(q, x_lam), k, hist[k], hist, vi, wall)
        self.wall += wall
        if self.callback is not None:
            self.callback(t1, q, qd)

    def advance(self, n=None):
        """Steps in blocks: the compiled loop of the engine (other modes: one step at a time)."""
        if self.mode != "compiled":
            return self._advance_steps(n)
        self._settle()
        i0 = self.i
        # blocks of at most BLOCK_STEPS: the runaway check (flexmbd.monitor) runs between them
        i1 = min(self.nsteps, i0 + (BLOCK_STEPS if n is None else int(n)))
        k = i1 - i0
        nn, nc = self.n, self.nc
        times = self.t0 + self.h * np.arange(i0, i1 + 1)
        Tq, Tqd, Tqdd = np.zeros((k + 1, nn)), np.zeros((k + 1, nn)), np.zeros((k + 1, nn))
        Tlam = np.zeros((k + 1, nc))
        reac = np.zeros((k + 1, len(self.system.joints), 6))
        iters = np.zeros(k + 1, dtype=np.int64)
        resid = np.zeros(k + 1)
        hist = np.full((k + 1, self.max_iter + 1), np.nan)
        viol = np.zeros(k + 1)
        tic = _time.perf_counter()
        failed = self.eng.run(
            self.q,
            self.qd,
            self.qdd,
            self.a,
            self.lam,
            times,
            self.h,
            self.sch,
            self.tol,
            self.rtol,
            self.max_iter,
            self.gauge,
            Tq,
            Tqd,
            Tqdd,
            Tlam,
            reac,
            iters,
            resid,
            hist,
            viol,
            project=self.project,
        )
        singular = failed < 0  # the step's linear solve raised (-i), not Newton (i)
        failed = abs(failed)
        stop = failed if failed else k + 1
        runaway = None
        if stop > 1:
            j, runaway = self._check_growth(times[1:stop], Tq[1:stop])
            if runaway is not None:
                stop = 1 + j
        elapsed = _time.perf_counter() - tic
        wall = np.full(stop - 1, elapsed / max(stop - 1, 1))
        rows = {
            "t": times[1:stop],
            "q": Tq[1:stop],
            "qd": Tqd[1:stop],
            "qdd": Tqdd[1:stop],
            "reactions": reac[1:stop],
            "extra:lambda": Tlam[1:stop],
            "stats:newton_iterations": iters[1:stop],
            "stats:residual": resid[1:stop],
            "stats:residual_norms": hist[1:stop],
            "stats:constraint_violation": viol[1:stop],
            "stats:step_time": wall,
        }
        if stop > 1:
            # the engine does not return its acceleration variable a: it follows from the
            # block's qdd by the same recursion, computed when needed (next block, state)
            self._a_block = (self.a, self.qdd, Tqdd[1:stop])
            self.q, self.qd = Tq[stop - 1].copy(), Tqd[stop - 1].copy()
            self.qdd, self.lam = Tqdd[stop - 1].copy(), Tlam[stop - 1].copy()
            self.i = i0 + stop - 1
            self._row = {key: v[-1] for key, v in rows.items() if key != "t"}
            self.eng.store_interface_loads()  # the loop's lagged loads, for checkpoints
        self.wall += elapsed
        err = runaway
        if failed and err is None and singular:
            err = self._singular(i0 + failed, times[failed], hist[failed])
        elif failed and err is None:
            kf = iters[failed]
            err = self._fail(i0 + failed, times[failed], kf, hist[failed, kf])
        return rows, err

    def _check_growth(self, t, q):
        """Runaway check of a block of samples (:mod:`flexmbd.monitor`): ``(index of the
        first sample beyond the bound, SolverError)`` or ``(None, None)``."""
        if self._monitor is False:
            self._monitor = GrowthMonitor.for_system(self.system)
        if self._monitor is None:
            return None, None
        return self._monitor.check(t, q)

    def _settle(self):
        """The generalized-alpha variable ``a`` after a compiled block (engine recursion)."""
        if self._a_block is None:
            return
        a, qdd, block = self._a_block
        am, af = self.sch.alpha_m, self.sch.alpha_f
        for x in block:
            a = ((1 - af) * x + af * qdd - am * a) / (1 - am)
            qdd = x
        self.a = np.array(a)
        self._a_block = None

    def _advance_steps(self, n):
        rows = []
        ts = []
        err = None
        n = BLOCK_STEPS if n is None else n
        try:
            while not self.done and len(ts) < n:
                self.step()
                ts.append(self.t)
                rows.append(self._row)
        except Exception as exc:  # noqa: BLE001 - the driver reports it with the rows
            err = exc
        if not rows:
            return {"t": np.zeros(0)}, err
        j, runaway = self._check_growth(np.array(ts), np.array([r["q"] for r in rows]))
        if runaway is not None:
            rows, ts, err = rows[:j], ts[:j], runaway
            if not rows:
                return {"t": np.zeros(0)}, err
        out = {"t": np.array(ts, dtype=float)}
        for key in rows[0]:
            out[key] = np.array([r[key] for r in rows])
        return out, err

    # -- state ------------------------------------------------------------------------------
    def state_dict(self):
        self._settle()
        st = {
            "i": self.i,
            "mode": self.mode,
            "t_end": self.t_end,
            "wall": self.wall,
            "q": self.q.copy(),
            "qd": self.qd.copy(),
            "qdd": self.qdd.copy(),
            "a": self.a.copy(),
            "lam": self.lam.copy(),
            "row": {k.replace(":", "__"): v for k, v in self._row.items()},
            "kkt": {
                "keep": self.kkt.keep,
                "independent": self.kkt.independent,
                "discarded": self.kkt.discarded,
            },
            "system": _system_state(self.system),
        }
        if self.mem is not None:
            st["hht_memory"] = {"wrenches": self.mem[0].copy(), "modal": self.mem[1].copy()}
        if self.meter is not None:
            m = self.meter
            st["energy"] = {
                "E0": m.E0,
                "W": dict(m.W),
                "prev": None if m.prev is None else dict(m.prev),
            }
        return st

    def load_state_dict(self, st):
        self._a_block = None
        self.i, self.wall = int(st["i"]), st["wall"]
        self.t_end = st["t_end"]
        self.nsteps = self._count(self.t_end)
        arr = lambda k: np.array(st[k], dtype=float)
        self.q, self.qd, self.qdd, self.a, self.lam = (
            arr("q"),
            arr("qd"),
            arr("qdd"),
            arr("a"),
            arr("lam"),
        )
        mode = st["mode"]
        if mode == "generic":
            self.mode, self.eng = mode, None
        else:
            self.eng = self.system.engine()
            self.mode = mode
        self.meter = None
        if "energy" in st:
            m = EnergyAccumulator(self.system.energy_meter(), 1)
            e = st["energy"]
            m.E0, m.W = e["E0"], dict(e["W"])
            m.prev = None if e["prev"] is None else dict(e["prev"])
            self.meter = m
        self.mem = None
        if "hht_memory" in st:
            hm = st["hht_memory"]
            self.mem = (np.array(hm["wrenches"]), np.array(hm["modal"]))
        k = st["kkt"]
        self.kkt.keep, self.kkt.independent, self.kkt.discarded = (
            k["keep"],
            k["independent"],
            k["discarded"],
        )
        self._row = {key.replace("__", ":", 1): v for key, v in st["row"].items()}
        _load_system_state(self.system, st["system"])
        if self.eng is not None:
            self.eng.refresh_interface_loads()

    def spec(self):
        return {
            "factory": "flexmbd.integrators.implicit:rebuild",
            "needs_model": True,
            "model": self.system.model.name,
            "kwargs": {
                "formulation": "absolute",
                "compile": {"jacobian": self.system.jacobian_mode},
                "options": self.options,
            },
        }

    # -- results ----------------------------------------------------------------------------
    def finalize(self, results, failed=False):
        r = results
        nt = len(r.t)
        meter = None
        if self.energy and self.mode == "generic":
            meter = _Energies(dict(r.energy))
        elif self.energy:
            meter = _BatchEnergy(self.eng, nt)
            meter.compute(r.q, r.qd, self.h, r.t)
        st = r.stats
        return _results(
            self.system,
            r.meta,
            r.t,
            r.q,
            r.qd,
            r.qdd,
            r.extra["lambda"],
            r.reactions,
            st["newton_iterations"],
            st["residual"],
            st["residual_norms"],
            st["constraint_violation"],
            st["step_time"],
            meter,
            nt,
        )


class _Energies:
    def __init__(self, arr):
        self.arr = arr


def _system_state(system):
    """What an absolute system remembers between steps: joint-angle references of the joint
    forces, lagged interface loads of the flexible bodies, stateful force elements."""
    st = {"jf": {str(k): jm.q_ref.copy() for k, jm in enumerate(_joint_force_maps(system))}}
    flex = getattr(system, "flexible", None)
    if flex is not None:
        st["flex"] = {
            str(k): {"itf_load": d.itf_load.copy(), "K_itf": d.K_itf.copy()}
            for k, d in enumerate(flex.flex)
        }
    forces = {
        f.name: f.state_dict()
        for f in system.model.forces()
        if callable(getattr(f, "state_dict", None))
    }
    if forces:
        st["forces"] = forces
    return st


def _load_system_state(system, st):
    for k, jm in enumerate(_joint_force_maps(system)):
        jm.q_ref = np.array(st["jf"][str(k)], dtype=float)
    flex = getattr(system, "flexible", None)
    if flex is not None:
        for k, d in enumerate(flex.flex):
            d.itf_load = np.array(st["flex"][str(k)]["itf_load"], dtype=float)
            d.K_itf = np.array(st["flex"][str(k)]["K_itf"], dtype=float)
    for f in system.model.forces():
        if f.name in st.get("forces", {}):
            f.load_state_dict(st["forces"][f.name])


class _BatchEnergy:
    """Energies of an engine-run model (gravity, rigid and flexible bodies, SDAs, point
    loads) after the run."""

    def __init__(self, eng, nt):
        self.eng = eng
        self.arr = {k: np.zeros(nt) for k in EnergyMeter.KEYS}

    def compute(self, Q, Qd, h, t=None):
        meter = EnergyMeter(self.eng.system)
        kin, grav, spring, pd = self.eng.energies(Q, Qd)
        nt = len(Q)
        t = h * np.arange(nt) if t is None else t
        sp_f, pd_f, pa, pe = self.eng.force_energies(t, Q, Qd)  # SDAs and point loads
        spring = spring + sp_f
        pd = pd + pd_f
        arr = self.arr
        for k in arr:
            arr[k] = arr[k][:nt]
        arr["kinetic"][:] = kin
        arr["gravity"][:] = grav
        arr["spring"][:] = spring
        arr["potential"][:] = grav + spring
        arr["total"][:] = kin + grav + spring
        w = np.zeros(nt)
        if nt > 1:
            w[1:] = np.cumsum(0.5 * h * (pd[1:] + pd[:-1]))
        arr["damper_work"][:] = w
        wa = np.zeros(nt)
        we = np.zeros(nt)
        if nt > 1:
            wa[1:] = np.cumsum(0.5 * h * (pa[1:] + pa[:-1]))
            we[1:] = np.cumsum(0.5 * h * (pe[1:] + pe[:-1]))
        arr["actuator_work"][:] = wa
        arr["external_work"][:] = we
        arr["numerical_dissipation"][:] = arr["total"][0] + wa + we - w - arr["total"]
        del meter


def _to_wrenches(system, q, F):
    """Generalized forces (7nb,) -> body forces and world moments (nb, 6) = [f; E(e) F_e / 2]."""
    nb = system.nb
    e = q[: 7 * nb].reshape(nb, 7)[:, 3:]
    Fb = F[: 7 * nb].reshape(nb, 7)
    nvec = 0.5 * np.einsum("bij,bj->bi", Emat(e), Fb[:, 3:]) / np.einsum("bi,bi->b", e, e)[:, None]
    return np.concatenate([Fb[:, :3], nvec], axis=1), F[7 * nb :].copy()


def _from_wrenches(system, q, W):
    """Body wrenches (nb, 6) -> generalized forces [f; 2 E(e)^T n] (7nb,)."""
    nb = system.nb
    W, Wf = W
    e = q[: 7 * nb].reshape(nb, 7)[:, 3:]
    return np.concatenate(
        [
            np.concatenate(
                [W[:, :3], 2.0 * np.einsum("bji,bj->bi", Emat(e), W[:, 3:])], axis=1
            ).ravel(),
            Wf,
        ]
    )


def _memory_jacobian(system, W, coef):
    """COO triplets of ``coef * d(2 E(e)^T n)/de = coef * 2 TE(n)`` on the (e, e) blocks."""
    r, c, v = map_te_terms(W[0][:, 3:], system.nb)
    return [(r, c, coef * v)]


def _project_velocities(system, q, qd, t):
    """Mass-orthogonal velocity projection (:func:`flexmbd.absolute.statics.project_velocities`)."""
    try:
        return project_velocities(system, q, qd, t)
    except Exception:  # singular: keep the step, remove the gauge only
        return _remove_gauge(system, q, qd)


def _remove_gauge(system, q, qd):
    """Euler-parameter rates without their component along ``e`` (pure gauge: ``E(e) e = 0``)."""
    nb = system.nb
    e = q[: 7 * nb].reshape(nb, 7)[:, 3:]
    qd = qd.copy()
    ed = qd[: 7 * nb].reshape(nb, 7)[:, 3:]
    ed -= e * (np.einsum("bi,bi->b", e, ed) / np.einsum("bi,bi->b", e, e))[:, None]
    return qd


def interface_motions(system, q):
    """World poses of the interface frames of the flexible bodies over a history ``q`` (nt, n).

    ``{(BODY, NAME): (nt, 7)}`` with the deformed frame origin (m) and its Euler
    parameters (scalar first, sign-continuous), both world: the frame rotates by the
    exponential map of its rotation modes times the modal coordinates (vectorized).
    """
    out = {}
    q = np.atleast_2d(q)
    for d in system.flexible.flex:
        rb = d.body.reduced
        i = d.index
        e = q[:, 7 * i + 3 : 7 * i + 7]
        e = e / np.linalg.norm(e, axis=1, keepdims=True)
        A = Apoly(e)
        r = q[:, 7 * i : 7 * i + 3]
        qf = q[:, d.col0 : d.col0 + d.n]
        for name in rb.interface_names:
            fr = d.body.interface(name)
            X = fr.modes
            pos = r + np.einsum("tij,tj->ti", A, fr.position + qf @ X[3:].T)
            th = qf @ X[:3].T
            t = np.linalg.norm(th, axis=1)
            half = 0.5 * t
            k = np.where(t > 1e-8, np.sin(half) / np.where(t > 1e-8, t, 1.0), 0.5 - t * t / 48.0)
            qd = np.concatenate([np.cos(half)[:, None], k[:, None] * th], axis=1)
            quat = _qmul(_qmul(e, qd), rot_to_quat(fr.rotation)[None, :])
            flips = np.concatenate([[1.0], np.sign(np.einsum("ti,ti->t", quat[1:], quat[:-1]))])
            flips[flips == 0] = 1.0
            quat = quat * np.cumprod(flips)[:, None]
            if quat[0, 0] < 0:
                quat = -quat
            out[(d.body.name, name)] = np.concatenate([pos, quat], axis=1)
    return out


def _qmul(a, b):
    """Batched quaternion product (scalar first)."""
    a0, av = a[:, :1], a[:, 1:]
    b0, bv = b[:, :1], b[:, 1:]
    return np.concatenate(
        [a0 * b0 - np.sum(av * bv, axis=1, keepdims=True), a0 * bv + b0 * av + np.cross(av, bv)],
        axis=1,
    )


def _results(system, meta, t, q, qd, qdd, lam, reac, iters, resid, hist, viol, wall, meter, stop):
    """The run's :class:`~flexmbd.results.Results` from its recorded rows; ``meta``: the
    stepper's header (:meth:`ImplicitStepper.header`)."""
    extra = {"lambda": lam}
    for d, r in zip(system.drivers, system.constraints.driver_rows):
        extra[f"driver:{d.name}"] = -lam[:, r]
    bodies = {
        b.name: BodySeries(
            position=q[:, 7 * i : 7 * i + 3], orientation=q[:, 7 * i + 3 : 7 * i + 7]
        )
        for i, b in enumerate(system.bodies)
    }
    flex = getattr(system, "flexible", None)
    if flex is not None:
        for d in flex.flex:
            bodies[d.body.name].modal = q[:, d.col0 : d.col0 + d.n]
        for (name, itf), pose in interface_motions(system, q).items():
            bodies[name].interfaces[itf] = pose
    energy = {k: v[:stop] for k, v in meter.arr.items()} if meter is not None else {}
    stats = {
        "newton_iterations": iters,
        "residual": resid,
        "residual_norms": hist,
        "constraint_violation": viol,
        "step_time": wall,
    }
    fields = dict(energy=energy, stats=stats, extra=extra, meta=dict(meta), bodies=bodies)
    return Results.from_system(system, t, q, qd, qdd, reac, **fields)


def _joint_force_maps(system):
    """The JointForce maps of an absolute system (empty for other systems)."""
    terms = getattr(system, "force_terms", None)
    return terms.joint_forces if terms is not None else ()
