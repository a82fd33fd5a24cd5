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
round-off floor (``eps`` times the force terms plus ``eps |q| / (beta' h^2)`` for the
scaled constraints) or a correction below round-off also ends the iteration: the
residual of an over-tight ``tol`` cannot drop further in floating point.

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
``extra["position:<body>"]``, ``extra["orientation:<body>"]``; energies as in
:mod:`flexmbd.absolute.energy`. A Newton failure raises
:class:`~flexmbd.errors.ConvergenceError` with ``partial`` (the results up to the
last accepted step) and ``time``.
"""

import time as _time

import numpy as np

from ..constraints.redundancy import KKTSolver
from ..errors import ConvergenceError, ModelError
from ..results import Results

__all__ = ["Scheme", "newmark", "hht", "generalized_alpha", "integrate"]


class Scheme:
    """Parameters of one implicit scheme (see the module docstring)."""

    def __init__(self, name, beta, gamma, alpha_m=0.0, alpha_f=0.0, hht_alpha=0.0):
        self.name = name
        self.beta = float(beta)
        self.gamma = float(gamma)
        self.alpha_m = float(alpha_m)
        self.alpha_f = float(alpha_f)
        self.hht_alpha = float(hht_alpha)

    @property
    def beta_p(self):
        return self.beta * (1 - self.alpha_f) / (1 - self.alpha_m)

    @property
    def gamma_p(self):
        return self.gamma * (1 - self.alpha_f) / (1 - self.alpha_m)

    def as_dict(self):
        return {"scheme": self.name, "beta": self.beta, "gamma": self.gamma,
                "alpha_m": self.alpha_m, "alpha_f": self.alpha_f, "hht_alpha": self.hht_alpha}


def newmark(beta=0.25, gamma=0.5):
    """Newmark scheme (``beta``, ``gamma``) = the seed paper's (alpha, delta)."""
    if not (0 < beta <= 0.5 and 0 <= gamma <= 1):
        raise ModelError(f"Newmark: need 0 < beta <= 1/2 and 0 <= gamma <= 1, got {beta}, {gamma}")
    return Scheme("newmark", beta, gamma)


def hht(alpha=-0.05, form="acceleration"):
    """HHT-alpha with ``alpha`` in [-1/3, 0]; ``form`` "acceleration" (default) or "force"."""
    if not (-1.0 / 3.0 <= alpha <= 0.0):
        raise ModelError(f"HHT: alpha must lie in [-1/3, 0], got {alpha}")
    b, g = (1 - alpha) ** 2 / 4, 0.5 - alpha
    if form == "acceleration":
        return Scheme("hht", b, g, alpha_m=0.0, alpha_f=-alpha)
    if form == "force":
        return Scheme("hht-force", b, g, hht_alpha=alpha)
    raise ModelError(f"HHT: form must be 'acceleration' or 'force', got {form!r}")


def generalized_alpha(rho_inf=0.8):
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


def integrate(system, t_end, dt, integrator="newmark", *, beta=None, gamma=None, alpha=None,
              rho_inf=None, tol=1e-8, rtol=0.0, max_iter=25, t0=0.0, q0=None, qd0=None,
              form=None, energy=True, gauge=True, project_velocities="auto", callback=None,
              engine="auto"):
    """Integrate ``system`` from ``t0`` to ``t_end`` with fixed step ``dt`` (see module docstring).

    ``q0``/``qd0`` override the initial state (made consistent first). ``callback``
    is called as ``callback(t, q, qd)`` after each accepted step. ``gauge``: remove
    the component of the Euler-parameter rates along ``e`` after each step (see the
    module docstring). ``project_velocities``: True, False or "auto" (on when the
    scheme has no numerical dissipation, ``gamma' = 1/2``). ``engine``: "auto" (default)
    runs the Newton iterations in the compiled engine (:mod:`flexmbd.absolute.engine`)
    when the model allows it, False always uses the generic sparse path.
    """
    from ..absolute.statics import consistent_initial_conditions

    sch = make_scheme(integrator, beta, gamma, alpha, rho_inf, form)
    h = float(dt)
    if not h > 0:
        raise ModelError(f"time step must be positive, got {dt!r}")
    nsteps = int(round((t_end - t0) / h))
    if nsteps < 1:
        raise ModelError(f"t_end={t_end} gives no step of dt={dt} from t0={t0}")
    system.refresh()
    n, nc = system.n, system.nc
    # redundant joint equations are removed from the Newton system by QR row selection
    kkt = KKTSolver(n)
    if q0 is None and qd0 is None:
        q, qd, qdd, lam = system.initial_conditions(t0=t0)
    else:
        qi = system.q0() if q0 is None else np.asarray(q0, float)
        qdi = system.qd0() if qd0 is None else np.asarray(qd0, float)
        q, qd, qdd, lam = consistent_initial_conditions(system, qi, qdi, t=t0)
    if hasattr(system, "update_interface_loads"):  # lagged loads of the geometric stiffening
        system.update_interface_loads(q, lam, t0)
    a = qdd.copy()
    nt = nsteps + 1
    Tq = np.zeros((nt, n))
    Tqd = np.zeros((nt, n))
    Tqdd = np.zeros((nt, n))
    Tlam = np.zeros((nt, nc))
    reac = np.zeros((nt, len(system.joints), 6))
    iters = np.zeros(nt, dtype=np.int64)
    resid = np.zeros(nt)
    hist = np.full((nt, max_iter + 1), np.nan)
    viol = np.zeros(nt)
    wall = np.zeros(nt)
    meter = None
    if energy:
        from ..absolute.energy import EnergyAccumulator

        meter = EnergyAccumulator(system.energy_meter(), nt)
    times = t0 + h * np.arange(nt)
    nj = system.constraints.n_joint_rows

    def store(i, q, qd, qdd, lam, t):
        Tq[i], Tqd[i], Tqdd[i], Tlam[i] = q, qd, qdd, lam
        reac[i] = system.reactions(q, qd, lam, t)
        phi = system.constraint(q, t)
        viol[i] = float(np.abs(phi[:nj]).max()) if nj else 0.0
        if meter is not None:
            meter.record(i, q, qd, t, h)

    def store_fast(i, q, qd, qdd, lam):
        Tq[i], Tqd[i], Tqdd[i], Tlam[i] = q, qd, qdd, lam
        reac[i] = eng.reactions(q, lam)

    store(0, q, qd, qdd, lam, t0)
    bp, gp = sch.beta_p, sch.gamma_p
    am, af, ah = sch.alpha_m, sch.alpha_f, sch.hht_alpha
    cM = 1.0 / (1.0 + ah)
    # HHT memory: (Phi_q^T lam - Q)_n; at t0 equals -R_0 (equations of motion)
    mem = None
    hhtw = ah != 0.0
    if hhtw:
        T0 = system.dae_terms(q, qd, qdd, lam, t0, jacobian=False, split=True)
        mem = _to_wrenches(system, q, T0.Rv + T0.PtL - T0.Q)
    sc = 1.0 / (bp * h * h)
    if project_velocities == "auto":
        project = abs(gp - 0.5) < 1e-12
    else:
        project = bool(project_velocities)
    eng = None
    if engine and not hhtw and hasattr(system, "flexible"):
        from ..absolute.engine import Engine

        use = engine is True or (engine == "auto" and Engine.supports(system, sch))
        if use and engine == "auto":
            # redundant joint equations need the generic path's QR row selection
            P = system.constraint_jacobian(q, t0).toarray()
            use = np.linalg.matrix_rank(P) == nc
        if use:
            eng = system.engine()
            eng.refresh_interface_loads()
            if meter is not None:  # energies of the engine's models: after the run, batched
                meter = _BatchEnergy(eng, nt)
            reac[0] = eng.reactions(q, lam)

    def results(stop):
        if isinstance(meter, _BatchEnergy):
            meter.compute(Tq[:stop], Tqd[:stop], h)
        return _results(system, sch, h, times[:stop], Tq[:stop], Tqd[:stop], Tqdd[:stop],
                        Tlam[:stop], reac[:stop], iters[:stop], resid[:stop], hist[:stop],
                        viol[:stop], wall[:stop], meter, stop, tol, rtol)

    if eng is not None:
        return _integrate_engine(system, eng, sch, h, times, q, qd, qdd, lam, a, Tq, Tqd, Tqdd,
                                 Tlam, reac, iters, resid, hist, viol, wall, store_fast, results,
                                 tol, rtol, max_iter, project, gauge, callback)

    for i in range(1, nt):
        t1 = times[i]
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
                r1 = cM * (T.R - T.Rv) + T.Rv + T.PtL - T.Q - ah * cM * _from_wrenches(
                    system, q1, mem)
            else:
                r1 = T.R + T.PtL - T.Q
            res = np.concatenate([r1, sc * T.phi])
            nr = float(np.linalg.norm(res))
            if scale is None:
                scale = float(np.linalg.norm(T.Q))
            hist[i, k] = nr
            if not np.isfinite(nr):
                break
            floor = 2.2e-16 * (np.linalg.norm(cM * T.R) + np.linalg.norm(T.PtL) + float(
                np.linalg.norm(T.Q)) + sc * np.sqrt(nc) * max(1.0, float(np.abs(q1).max())))
            if nr <= tol + rtol * scale or tiny or nr <= 10.0 * floor:
                # round-off floor: the residual cannot drop further in floating point
                converged = True
                break
            if k == max_iter:
                break
            if hhtw:
                A = system.iteration_matrix(T, cM, cM * bp * h * h, gp * h, bp * h * h, gp * h,
                                            aKinv=(1.0 - cM) * bp * h * h,
                                            extra=_memory_jacobian(system, mem,
                                                                   -ah * cM * bp * h * h))
            else:
                A = system.iteration_matrix(T, 1.0, bp * h * h, gp * h, bp * h * h, gp * h)
            try:
                dx = kkt.factor(A).solve(-res)
            except RuntimeError:
                break
            x_qdd += dx[:n]
            x_lam += dx[n:]
            tiny = bool(np.linalg.norm(dx[:n]) <= 1e-13 * (1.0 + np.linalg.norm(x_qdd))
                        and np.linalg.norm(dx[n:]) <= 1e-13 * (1.0 + np.linalg.norm(x_lam)))
        if not converged:
            part = results(i)
            raise ConvergenceError(
                f"{sch.name}: Newton did not converge at t = {t1:.6g} s (step {i}) in {k} "
                f"iterations; residual {hist[i, k]:.3e} > tol {tol:.1e} + rtol*scale. Reduce dt, "
                f"loosen tol, or check the force-element Jacobians", partial=part, time=float(t1))
        a_new = ((1 - af) * x_qdd + af * qdd - am * a) / (1 - am)
        q = q_pred + bp * h * h * x_qdd
        qd = v_pred + gp * h * x_qdd
        if project:
            qd = _project_velocities(system, q, qd, t1)
        elif gauge:
            qd = _remove_gauge(system, q, qd)
        a, qdd, lam = a_new, x_qdd, x_lam
        if hhtw:
            mem = _to_wrenches(system, q, T.Rv + T.PtL - T.Q)
        iters[i] = k
        resid[i] = hist[i, k]
        system.accept(q, qd, lam, t1)
        wall[i] = _time.perf_counter() - tic
        store(i, q, qd, qdd, lam, t1)
        if callback is not None:
            callback(t1, q, qd)
    return results(nt)


def _integrate_engine(system, eng, sch, h, times, q, qd, qdd, lam, a, Tq, Tqd, Tqdd, Tlam,
                      reac, iters, resid, hist, viol, wall, store, results, tol, rtol, max_iter,
                      project, gauge, callback):
    """The step loop of :func:`integrate` with the Newton iterations in the compiled engine."""
    bp, gp = sch.beta_p, sch.gamma_p
    am, af = sch.alpha_m, sch.alpha_f
    be, ga = sch.beta, sch.gamma
    bh2, gh, sc = bp * h * h, gp * h, 1.0 / (bp * h * h)
    lagged = eng.itf_lagged
    t_clock = _time.perf_counter
    if not (lagged or project or callback is not None):
        # the whole loop compiled (no Python work between steps)
        tic = t_clock()
        failed = eng.run(q, qd, qdd, a, lam, times, h, sch, tol, rtol, max_iter, gauge, Tq, Tqd,
                         Tqdd, Tlam, reac, iters, resid, hist, viol)
        stop = failed if failed else len(times)
        wall[1:stop] = (t_clock() - tic) / max(stop - 1, 1)
        if failed:
            part = results(failed)
            k = iters[failed]
            raise ConvergenceError(
                f"{sch.name}: Newton did not converge at t = {times[failed]:.6g} s (step "
                f"{failed}) in {k} iterations; residual {hist[failed, k]:.3e} > tol {tol:.1e} + "
                f"rtol*scale. Reduce dt, loosen tol, or check the force-element Jacobians",
                partial=part, time=float(times[failed]))
        return results(len(times))
    for i in range(1, len(times)):
        t1 = float(times[i])
        tic = t_clock()
        a_part = (af * qdd - am * a) / (1 - am)
        q_pred = q + h * qd + h * h * (0.5 - be) * a + h * h * be * a_part
        v_pred = qd + h * (1 - ga) * a + h * ga * a_part
        x_qdd = qdd.copy()
        x_lam = lam.copy()
        try:
            status, k, vi = eng.newton(q_pred, v_pred, x_qdd, x_lam, t1, bh2, gh, sc, tol, rtol,
                                       max_iter, hist[i])
        except np.linalg.LinAlgError:
            part = results(i)
            raise ConvergenceError(
                f"{sch.name}: singular Newton matrix at t = {t1:.6g} s (step {i}) in the compiled "
                f"engine (redundant or singular joint equations?); run with engine=False to use "
                f"the generic path with QR row selection", partial=part, time=t1) from None
        if status != 1:
            part = results(i)
            raise ConvergenceError(
                f"{sch.name}: Newton did not converge at t = {t1:.6g} s (step {i}) in {k} "
                f"iterations; residual {hist[i, k]:.3e} > tol {tol:.1e} + rtol*scale. Reduce dt, "
                f"loosen tol, or check the force-element Jacobians", partial=part, time=t1)
        a = ((1 - af) * x_qdd + af * qdd - am * a) / (1 - am)
        q = q_pred + bh2 * x_qdd
        qd = v_pred + gh * x_qdd
        if project:
            qd = eng.project(q, qd, t1)
        elif gauge:
            qd = _remove_gauge(system, q, qd)
        qdd, lam = x_qdd, x_lam
        iters[i] = k
        resid[i] = hist[i, k]
        viol[i] = vi
        if lagged:
            system.accept(q, qd, lam, t1)
            eng.refresh_interface_loads()
        wall[i] = t_clock() - tic
        store(i, q, qd, qdd, lam)
        if callback is not None:
            callback(t1, q, qd)
    return results(len(times))


class _BatchEnergy:
    """Energies of an engine-run model (gravity, rigid and flexible bodies) after the run."""

    def __init__(self, eng, nt):
        from ..absolute.energy import EnergyMeter

        self.eng = eng
        self.arr = {k: np.zeros(nt) for k in EnergyMeter.KEYS}

    def compute(self, Q, Qd, h):
        from ..absolute.energy import EnergyMeter

        meter = EnergyMeter(self.eng.system)
        kin, grav, spring, pd = self.eng.energies(Q, Qd)
        nt = len(Q)
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
        arr["actuator_work"][:] = 0.0
        arr["external_work"][:] = 0.0
        arr["numerical_dissipation"][:] = arr["total"][0] - w - arr["total"]
        del meter


def _to_wrenches(system, q, F):
    """Generalized forces (7nb,) -> body forces and world moments (nb, 6) = [f; E(e) F_e / 2]."""
    from ..absolute.quaternion import Emat

    nb = system.nb
    e = q[: 7 * nb].reshape(nb, 7)[:, 3:]
    Fb = F[: 7 * nb].reshape(nb, 7)
    nvec = 0.5 * np.einsum("bij,bj->bi", Emat(e), Fb[:, 3:]) / np.einsum("bi,bi->b", e, e)[:, None]
    return np.concatenate([Fb[:, :3], nvec], axis=1), F[7 * nb:].copy()


def _from_wrenches(system, q, W):
    """Body wrenches (nb, 6) -> generalized forces [f; 2 E(e)^T n] (7nb,)."""
    from ..absolute.quaternion import Emat

    nb = system.nb
    W, Wf = W
    e = q[: 7 * nb].reshape(nb, 7)[:, 3:]
    return np.concatenate([np.concatenate([W[:, :3], 2.0 * np.einsum("bji,bj->bi", Emat(e),
                                                                          W[:, 3:])],
                                          axis=1).ravel(), Wf])


def _memory_jacobian(system, W, coef):
    """COO triplets of ``coef * d(2 E(e)^T n)/de = coef * 2 TE(n)`` on the (e, e) blocks."""
    from ..absolute.forces import map_te_terms

    r, c, v = map_te_terms(W[0][:, 3:], system.nb)
    return [(r, c, coef * v)]


def _project_velocities(system, q, qd, t):
    """Mass-orthogonal velocity projection (:func:`flexmbd.absolute.statics.project_velocities`)."""
    from ..absolute.statics import project_velocities

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

    ``{"interface:BODY.NAME": (nt, 7)}`` with the deformed frame origin (m) and its Euler
    parameters (scalar first, sign-continuous), both world: the frame rotates by the
    exponential map of its rotation modes times the modal coordinates (vectorized).
    """
    from ..absolute.quaternion import Apoly
    from ..spatial import rot_to_quat

    out = {}
    q = np.atleast_2d(q)
    for d in system.flexible.flex:
        rb = d.body.reduced
        i = d.index
        e = q[:, 7 * i + 3: 7 * i + 7]
        e = e / np.linalg.norm(e, axis=1, keepdims=True)
        A = Apoly(e)
        r = q[:, 7 * i: 7 * i + 3]
        qf = q[:, d.col0: d.col0 + d.n]
        for name in rb.interface_names:
            fr = d.body.interface(name)
            X = fr.modes
            pos = r + np.einsum("tij,tj->ti", A, fr.position + qf @ X[3:].T)
            th = qf @ X[:3].T
            t = np.linalg.norm(th, axis=1)
            half = 0.5 * t
            k = np.where(t > 1e-8, np.sin(half) / np.where(t > 1e-8, t, 1.0),
                         0.5 - t * t / 48.0)
            qd = np.concatenate([np.cos(half)[:, None], k[:, None] * th], axis=1)
            quat = _qmul(_qmul(e, qd), rot_to_quat(fr.rotation)[None, :])
            flips = np.concatenate([[1.0], np.sign(np.einsum("ti,ti->t", quat[1:], quat[:-1]))])
            flips[flips == 0] = 1.0
            quat = quat * np.cumprod(flips)[:, None]
            if quat[0, 0] < 0:
                quat = -quat
            out[f"interface:{d.body.name}.{name}"] = np.concatenate([pos, quat], axis=1)
    return out


def _qmul(a, b):
    """Batched quaternion product (scalar first)."""
    a0, av = a[:, :1], a[:, 1:]
    b0, bv = b[:, :1], b[:, 1:]
    return np.concatenate([a0 * b0 - np.sum(av * bv, axis=1, keepdims=True),
                           a0 * bv + b0 * av + np.cross(av, bv)], axis=1)


def _results(system, sch, h, t, q, qd, qdd, lam, reac, iters, resid, hist, viol, wall, meter,
             stop, tol, rtol):
    extra = {"lambda": lam}
    for d, r in zip(system.drivers, system.constraints.driver_rows):
        extra[f"driver:{d.name}"] = -lam[:, r]
    for i, b in enumerate(system.bodies):
        extra[f"position:{b.name}"] = q[:, 7 * i: 7 * i + 3]
        extra[f"orientation:{b.name}"] = q[:, 7 * i + 3: 7 * i + 7]
    flex = getattr(system, "flexible", None)
    if flex is not None:
        for d in flex.flex:
            extra[f"modal:{d.body.name}"] = q[:, d.col0: d.col0 + d.n]
        extra.update(interface_motions(system, q))
    energy = {k: v[:stop] for k, v in meter.arr.items()} if meter is not None else {}
    meta = {"model": system.model.name, "formulation": "absolute", "integrator": sch.name,
            "dt": h, "tol": tol, "rtol": rtol, **sch.as_dict()}
    return Results(t, q, qd, qdd, coordinates=system.coordinates, speeds=system.speeds,
                   joint_names=system.joint_names, reactions=reac, energy=energy,
                   stats={"newton_iterations": iters, "residual": resid, "residual_norms": hist,
                          "constraint_violation": viol, "step_time": wall},
                   extra=extra, meta=meta)
