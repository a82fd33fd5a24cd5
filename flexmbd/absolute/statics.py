"""Static equilibrium and consistent initial conditions in absolute coordinates.

Static equilibrium: Newton's method on the dynamic residual without inertia
(``qd = qdd = 0``)::

    R(q, 0, 0) + Phi_q(q)^T lam - Q(q, 0, t) = 0,     Phi(q) = 0

(``R(q, 0, 0)`` vanishes for rigid bodies; for flexible bodies it holds the elastic
forces ``K q_f`` and the geometric stiffening of gravity) with the exact Jacobian
``[[dR/dq + d(Phi_q^T lam)/dq - dQ/dq, Phi_q^T], [Phi_q, 0]]``
(force elements whose Jacobian is switched off are left out of it, as in the
dynamic solver: the seed paper's comparison). Systems with unconstrained
rigid-body motions (e.g. a free-floating tensegrity) have a singular Jacobian; the
``regularization`` option turns the iteration into Levenberg-Marquardt
(``mu I`` added to the coordinate block, adapted; the converged solution is
unchanged).

Consistent initial conditions from approximate values: positions by Newton's
method on ``Phi(q) = 0`` with the minimum-norm correction
``dq = -Phi_q^T (Phi_q Phi_q^T)^-1 Phi``; velocities by the mass-orthogonal
projection on ``Phi_q qd = 0`` (the smallest change of kinetic energy);
accelerations and multipliers from the
augmented system ``[M Phi_q^T; Phi_q 0] [qdd; lam] = [Q - R(q, qd, 0); gamma]``.
"""

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..constraints.redundancy import KKTSolver
from ..errors import ConvergenceError, ModelError, SolverError
from ..integrators.convergence import newton_converged
from ..results import Results
from .quaternion import Emat

__all__ = [
    "StaticResult",
    "static_equilibrium",
    "consistent_initial_conditions",
    "static_residual",
    "project_velocities",
]


class StaticResult:
    """Static equilibrium: ``q``, ``lam``, ``reactions``, ``iterations``, ``residual_norms``,
    ``converged``."""

    def __init__(self, system, q, lam, norms, converged, t=0.0):
        self._system = system
        self.q = q
        self.lam = lam
        self.residual_norms = np.asarray(norms)
        self.iterations = len(norms) - 1
        self.converged = converged
        self.reason = None if converged else "iteration limit"
        self.reactions = system.reactions(q, np.zeros_like(q), lam, t)

    @property
    def residual(self):
        return float(self.residual_norms[-1])

    def reaction(self, name):
        return self.reactions[self._system.layout.joint_row(name)]

    def __repr__(self):
        state = "converged" if self.converged else "NOT converged"
        return (
            f"<StaticResult {state} in {self.iterations} iterations, residual {self.residual:.3e}>"
        )


def _kkt(n, Phq, nc):
    pr, pc, pv = Phq
    return pr, pc, pv


def static_equilibrium(
    system, q, t=0.0, tol=1e-10, max_iter=50, regularization=0.0, raise_on_failure=True
):
    """Newton's method for the static equilibrium; returns a :class:`StaticResult`.

    ``tol`` bounds the 2-norm of ``[Phi_q^T lam - Q; Phi]``, or each part is within its
    round-off floor (:mod:`flexmbd.integrators.convergence`, unit scaling). With
    ``regularization = mu > 0`` the iteration is Levenberg-Marquardt: ``mu I`` is
    added to the coordinate block, a step is accepted only if it lowers the
    residual norm (``mu`` is then divided by 3, otherwise multiplied by 10 and the
    step retried), which handles singular directions (free rigid-body motions,
    mechanisms stiffened only by prestress) and starts far from equilibrium; near
    the solution ``mu`` shrinks and the convergence is quadratic. ``iterations``
    counts linear solves. On failure a :class:`~flexmbd.errors.ConvergenceError` is
    raised whose ``partial`` is the last iterate (or it is returned with
    ``converged=False`` when ``raise_on_failure`` is False).
    """
    n, nc = system.n, system.nc
    q = np.array(q, dtype=float)
    qd = np.zeros(n)
    lam = np.zeros(nc)
    mu = float(regularization)

    def evaluate(q, lam):
        # lagged interface loads of the geometric stiffening follow the iterate
        system.update_interface_loads(q, lam, t)
        T = system.dae_terms(q, qd, np.zeros(n), lam, t, jacobian=True)
        # R(q, 0, 0): zero for rigid bodies, elastic forces of flexible bodies
        res = np.concatenate([T.R + T.PtL - T.Q, T.phi])
        return T, res, float(np.linalg.norm(res))

    def converged(q, T, res):
        # the implicit integrators' rule with unit scaling: within tol, or force and
        # constraint rows each at their own round-off floor (stiff springs: k eps L)
        size = sum(float(np.linalg.norm(x)) for x in (T.R, T.PtL, T.Q))
        qs = max(1.0, float(np.abs(q).max())) if n else 1.0
        r, phi = float(np.linalg.norm(res[:n])), float(np.linalg.norm(res[n:]))
        return newton_converged(r, phi, 1.0, tol, size, nc, qs) > 0

    T, res, nr = evaluate(q, lam)
    norms = [nr]
    solves = 0
    reason = "iteration limit"
    while np.isfinite(nr) and not converged(q, T, res) and solves < max_iter:
        A = system.iteration_matrix(T, 0.0, 1.0, 0.0, 1.0, 0.0)
        if mu:
            A = A + sp.diags(np.concatenate([np.full(n, mu), np.zeros(nc)]), format="csc")
        solves += 1
        try:
            dx = _lu(A.tocsc(), n).solve(-res)
        except RuntimeError:
            if not mu:
                reason = "singular Newton matrix"
                break
            mu *= 10.0
            continue
        if not np.all(np.isfinite(dx)):
            reason = "non-finite step"
            break
        q_new, lam_new = q + dx[:n], lam + dx[n:]
        T_new, res_new, nr_new = evaluate(q_new, lam_new)
        if mu and not nr_new < nr:
            mu *= 10.0
            continue
        q, lam, T, res, nr = q_new, lam_new, T_new, res_new, nr_new
        if mu:
            mu /= 3.0
        norms.append(nr)
    if np.isfinite(nr) and converged(q, T, res):
        r = StaticResult(system, q, lam, norms, True, t)
        r.iterations = solves
        return r
    result = StaticResult(system, q, lam, norms, False, t)
    result.iterations = solves
    result.reason = reason
    if raise_on_failure:
        raise ConvergenceError(
            f"static equilibrium of model {system.model.name!r}: Newton did not converge "
            f"({reason}, {solves} solves, residual {norms[-1]:.3e} > tol {tol:.1e}); a singular or "
            f"inexact Jacobian (force-element Jacobian switched off?), free rigid-body motions "
            f"(use regularization=...) or a configuration far from equilibrium",
            partial=result,
            time=t,
        )
    return result


def static_residual(system, q, t=0.0):
    """Norm of the body-wrench imbalance at ``q`` at rest, after the best multipliers (N, N m).

    ``Q`` minus the least-squares constraint forces ``Phi_q^T lam``, mapped back to
    world wrenches ``[n; f]`` per body (``n = E(e) r_e / 2``); returns the 2-norm.
    """
    n = system.n
    T = system.dae_terms(q, np.zeros(n), np.zeros(n), np.zeros(system.nc), t, jacobian=False)
    P = sp.csr_matrix((T.Phq[2], (T.Phq[0], T.Phq[1])), shape=(system.nc, n))
    F = T.Q - T.R  # applied minus elastic forces (T.R is zero for rigid bodies at rest)
    lam = spla.lsqr(P.T, F, atol=1e-15, btol=1e-15, iter_lim=10 * (n + system.nc))[0]
    res = F - P.T @ lam
    n7 = 7 * system.nb
    r = res[:n7].reshape(-1, 7)
    e = np.asarray(q, float)[:n7].reshape(-1, 7)[:, 3:]
    nvec = 0.5 * np.einsum("bij,bj->bi", Emat(e), r[:, 3:])
    return float(np.linalg.norm(np.concatenate([nvec.ravel(), r[:, :3].ravel(), res[n7:]])))


def consistent_initial_conditions(system, q, qd, tol=1e-12, max_iter=30, t=0.0):
    """``(q, qd, qdd, lam)`` satisfying position, velocity and acceleration constraints at ``t``."""
    n, nc = system.n, system.nc
    q = system.normalize(q)
    qd = np.array(qd, dtype=float)
    cs = system.constraints
    # modal coordinates are weighted 1e6 times the reference coordinates in the minimum-norm
    # correction: the bodies' modal initial values stay (nearly) as given
    weights = np.ones(n)
    weights[7 * system.nb :] = 1e6
    for _ in range(max_iter):
        phi, Phq = cs.evaluate(q, t=t)
        if np.linalg.norm(phi) <= tol:
            break
        A = _min_norm_matrix(Phq, n, nc, weights)
        dx = _lu(A, n).solve(np.concatenate([np.zeros(n), -phi]))
        q = q + dx[:n]
    else:
        phi = cs.evaluate(q, jacobian=False, t=t)
        worst = _worst_joints(system, phi)
        raise ModelError(
            f"model {system.model.name!r}: inconsistent initial configuration — the joint "
            f"equations cannot be closed from the joints' q0 (|Phi| = {np.linalg.norm(phi):.3e}; "
            f"largest violations at {worst}); give q0 values that (nearly) close the loops"
        )
    try:
        qd = project_velocities(system, q, qd, t)
        fd = system.forward_dynamics(q, qd, t=t)
    except SolverError as err:
        raise singular_motion_error(system, q, qd, t, err) from None
    return q, qd, fd.qdd, fd.lam


def singular_motion_error(system, q, qd, t, err):
    """A :class:`SolverError` for a singular ``[M Phi_q^T; Phi_q 0]`` at ``(q, t)`` that
    names the bodies moving without mass or inertia and the joints that leave them free
    (from the null space of the dense matrix, systems up to 3000 unknowns), with the
    state as one-sample partial results."""
    n, nc = system.n, system.nc
    what = ""
    if n + nc <= 3000:
        M = system.mass_matrix(q).toarray()
        pr, pc, pv = system.constraints.evaluate(q, t=t)[1]
        P = np.zeros((nc, n))
        np.add.at(P, (pr, pc), pv)
        A = np.block([[M, P.T], [P, np.zeros((nc, nc))]])
        _, sv, vt = np.linalg.svd(A)
        null = vt[sv <= 1e-12 * max(sv[0], 1.0)][:, :n]
        if null.size:
            w = np.abs(null).max(axis=0)
            coords = [system.coordinates[i] for i in np.flatnonzero(w > 0.1 * w.max())]
            bodies = list(dict.fromkeys(owner for owner, _ in coords))
            joints = [
                j.name for j in system.joints if j.parent.name in bodies or j.child.name in bodies
            ]
            labels = ", ".join(f"{o}.{lbl}" for o, lbl in coords)
            what = (
                f": {' and '.join(repr(b) for b in bodies)} can move "
                f"({labels}) without mass or inertia"
                + (
                    f", left free by joint(s) {', '.join(repr(j) for j in joints)}"
                    if joints
                    else ""
                )
                + "; give every body mass and inertia about every axis its joints leave "
                "free (a small sphere instead of a point mass) or constrain that motion"
            )
    if not what:
        what = f" ({err}); a body may lack mass or inertia in a direction its joints leave free"
    partial = Results.from_system(
        system,
        np.array([float(t)]),
        np.asarray(q, float)[None],
        np.asarray(qd, float)[None],
        np.full((1, system.n), np.nan),
        meta={"model": system.model.name, "formulation": "absolute"},
    )
    return SolverError(
        f"model {system.model.name!r}: the equations of motion are singular at "
        f"t = {float(t):.6g} s{what}",
        partial=partial,
        time=float(t),
    )


def project_velocities(system, q, qd, t=0.0):
    """Mass-orthogonal projection of ``qd`` on ``Phi_q qd = nu`` (``nu = -Phi_t``, drivers).

    Solves ``[M Phi_q^T; Phi_q 0] [dqd; mu] = [0; nu - Phi_q qd]``: the smallest change
    in the kinetic-energy metric (the Euler-parameter gauge direction, where
    ``M e = 0``, is fixed by the normalization rows ``e . de = 0``).
    """
    n, nc = system.n, system.nc
    mr, mc, mv = system.mass_triplets(q)
    pr, pc, pv = system.constraints.evaluate(q, t=t)[1]
    rows = np.concatenate([mr, pr + n, pc])
    cols = np.concatenate([mc, pc, pr + n])
    vals = np.concatenate([mv, pv, pv])
    A = sp.csc_matrix((vals, (rows, cols)), shape=(n + nc, n + nc))
    viol = np.bincount(pr, weights=pv * np.asarray(qd)[pc], minlength=nc)
    viol += system.constraints.phi_t(q, t)
    dx = _lu(A, n).solve(np.concatenate([np.zeros(n), -viol]))
    return np.asarray(qd, dtype=float) + dx[:n]


def _min_norm_matrix(Phq, n, nc, weights=None):
    pr, pc, pv = Phq
    rows = np.concatenate([np.arange(n), pr + n, pc])
    cols = np.concatenate([np.arange(n), pc, pr + n])
    vals = np.concatenate([np.ones(n) if weights is None else weights, pv, pv])
    return sp.csc_matrix((vals, (rows, cols)), shape=(n + nc, n + nc))


def _lu(A, n):
    """Factor a KKT matrix; redundant joint equations are dropped by pivoted QR
    (:class:`flexmbd.constraints.redundancy.KKTSolver`)."""
    return KKTSolver(n).factor(A)


def _worst_joints(system, phi):
    out = []
    for k, j in enumerate(system.joints):
        sl = system.constraints.joint_rows[k]
        if sl.stop > sl.start:
            out.append((float(np.abs(phi[sl]).max()), j.name))
    out.sort(reverse=True)
    return [f"{name} ({v:.2e})" for v, name in out[:3]]
