"""Shooting: a simulated trajectory with forward sensitivities (no Pyomo needed).

The absolute formulation's index-3 equations (:mod:`flexmbd.pyomo.residual`) are
integrated with Newmark's rule (``beta``, ``gamma``; default the trapezoidal rule):
at step ``k -> k+1`` the unknowns ``y = (a, lam)`` solve ``r(q, v, a, lam, u, p) = 0``
with ``q = q_k + h v_k + h^2 ((1/2 - beta) a_k + beta a)``, ``v = v_k + h ((1 - gamma)
a_k + gamma a)``. Newton's matrix is ``A = [J_q beta h^2 + J_v gamma h + J_a, J_lam]``
from the node's exact Jacobians. At every converged step the sensitivities with respect
to ``z = (p, theta)`` (free parameters, then input-profile coefficients) follow from the
same matrix::

    A dy/dz = -(J_q dq*/dz + J_v dv*/dz + J_u du/dz + J_p dp/dz)

(``q*``, ``v*``: the predictor parts, which depend on step ``k``'s sensitivities), so a
gradient costs one extra linear solve with an already factored matrix per step -- the
route for long horizons and for ``scipy.optimize``. The initial state is the model's
consistent one; its accelerations and multipliers are differentiated through
``[J_a J_lam; Phi_q 0]``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ConvergenceError, ModelError
from .residual import NodeResiduals, compiled_terms, parameter_columns

__all__ = ["Shooting", "ShootingResult"]


@dataclasses.dataclass
class ShootingResult:
    """A simulated trajectory and its sensitivities.

    ``t`` (N+1,) s; ``q, v, a`` (N+1, n) absolute coordinates and their first and second
    time derivatives; ``lam`` (N+1, nc) multipliers; ``u`` (N+1, nu) inputs (N or N m);
    ``dq, dv, da`` (N+1, n, nz) and ``dlam`` (N+1, nc, nz) derivatives with respect to
    ``z = (p, theta)`` (None without sensitivities); ``iterations`` (N,) Newton
    iterations per step.
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    lam: np.ndarray
    u: np.ndarray
    dq: np.ndarray | None
    dv: np.ndarray | None
    da: np.ndarray | None
    dlam: np.ndarray | None
    iterations: np.ndarray


class Shooting:
    """Simulate a compiled absolute system with forward sensitivities.

    Parameters
    ----------
    system : AbsoluteSystem
        ``model.compile("absolute")`` (exact Jacobians).
    t_end, dt : float
        Horizon and step (s).
    params : sequence of Parameter
        Free parameters (:func:`flexmbd.pyomo.parameters`), in the order of ``p``.
    inputs : sequence of JointInput
        Control inputs, ``nu`` values in total.
    profile : callable, optional
        ``profile(t, theta) -> (u (nu,), du_dtheta (nu, ntheta))``: the inputs at time
        ``t`` (s) from the coefficients ``theta``; needed when ``inputs`` is not empty.
    ntheta : int
        Number of profile coefficients.
    beta, gamma : float
        Newmark parameters.
    tol : float
        Newton tolerance on the correction, relative to ``1 + |y|`` (max norm).
    max_iter : int
        Newton iterations per step before :class:`~flexmbd.errors.ConvergenceError`.
    compiled : bool, optional
        Evaluate the steps' residuals and Jacobians with the system's compiled engine
        (:meth:`~flexmbd.absolute.system.AbsoluteSystem.engine`: the same equations to
        round-off, dense matrices) instead of the Python terms. Default: when the engine
        runs every force element of the model (:meth:`Engine.supports
        <flexmbd.absolute.engine.Engine.supports>`; :class:`~flexmbd.pyomo.JointInput` and
        :class:`~flexmbd.pyomo.ViscousBearing` on Revolute and Prismatic joints are
        compiled laws); True raises :class:`~flexmbd.errors.ModelError` otherwise.
    """

    # contract: the problem parameters shared with collocation.Trajectory's constructor
    def __init__(
        self,
        system,
        t_end,
        dt,
        params=(),
        inputs=(),
        profile=None,
        ntheta=0,
        beta=0.25,
        gamma=0.5,
        tol=1e-11,
        max_iter=30,
        compiled=None,
    ):
        N = int(round(t_end / dt))
        if N < 1:
            raise ModelError(f"Shooting: t_end={t_end} gives no step of dt={dt}")
        self.system = system
        self.h, self.N = float(dt), N
        self.t = self.h * np.arange(N + 1)
        self.params, self.inputs = list(params), list(inputs)
        self.res = NodeResiduals(system, [0.0], self.params, self.inputs, compiled=False)
        self.newton = NodeResiduals(system, [0.0], (), self.inputs, compiled=False)
        if self.res.nu and profile is None:
            raise ModelError("Shooting: inputs given without a profile(t, theta) -> (u, du)")
        self.profile = profile
        self.ntheta = int(ntheta)
        self.beta, self.gamma = float(beta), float(gamma)
        self.tol, self.max_iter = float(tol), int(max_iter)
        self.np = len(self.params)
        self.nz = self.np + self.ntheta
        self.compiled = compiled_terms(system, compiled, "Shooting")

    @property
    def compiled(self) -> bool:
        """True: the steps (and the node residuals of the initial state's sensitivities)
        are evaluated by the compiled engine; can be switched."""
        return self._compiled

    @compiled.setter
    def compiled(self, value):
        self._compiled = self.res.compiled = self.newton.compiled = bool(value)

    def _u(self, t, theta):
        nu = self.res.nu
        if not nu:
            return np.zeros(0), np.zeros((0, self.ntheta))
        u, du = self.profile(t, theta)
        return (np.asarray(u, float).reshape(nu), np.asarray(du, float).reshape(nu, self.ntheta))

    def _jac(self, t, q, v, a, lam, u, with_p):
        r = self.res if with_p else self.newton
        r.times = np.array([t])
        return r.evaluate(r.join(q[None], v[None], a[None], lam[None], u[None]))

    def simulate(self, p=None, theta=None, sensitivities=True):
        """Run the trajectory at parameters ``p`` (np,) and coefficients ``theta``.

        Returns a :class:`ShootingResult`; raises :class:`~flexmbd.errors.ConvergenceError`
        (with ``time``) when Newton fails at a step.
        """
        s, n = self.system, self.res.n
        nc, nu, nz = self.res.nc, self.res.nu, self.nz
        if p is not None:
            self.res.set_parameters(p)
        theta = np.zeros(self.ntheta) if theta is None else np.asarray(theta, float)
        N, h, b, g = self.N, self.h, self.beta, self.gamma
        U = np.zeros((N + 1, nu))
        U[0], du0 = self._u(0.0, theta)
        self.res.set_inputs(U[0])  # the initial accelerations see u(0)
        q0, v0, a0, l0 = s.initial_conditions(fresh=True)
        Q, V, A, L = (np.zeros((N + 1, m)) for m in (n, n, n, nc))
        Q[0], V[0], A[0], L[0] = q0, v0, a0, l0
        sens = sensitivities and nz > 0
        if sens:
            dQ, dV, dA = (np.zeros((N + 1, n, nz)) for _ in range(3))
            dL = np.zeros((N + 1, nc, nz))
            # initial a, lam: [J_a J_lam; Phi_q 0] d(a, lam) = -[J_u du + J_p; 0]
            _, J = self._jac(0.0, q0, v0, a0, l0, U[0], True)
            J = J.tocsc()
            K = sp.vstack(
                [J[:n, 2 * n : 3 * n + nc], sp.hstack([J[n:, :n], sp.csc_matrix((nc, nc))])]
            ).tocsc()
            rhs = np.zeros((n + nc, nz))
            rhs[:n] = -self._rhs_inputs_params(J, du0)[:n]
            y = spla.splu(K).solve(rhs)
            dA[0], dL[0] = y[:n], y[n:]
        its = np.zeros(N, int)
        rs = np.concatenate([np.ones(n), np.full(nc, 1.0 / (b * h * h))])  # row scaling
        for k in range(N):
            t1 = self.t[k + 1]
            qp = Q[k] + h * V[k] + h * h * (0.5 - b) * A[k]
            vp = V[k] + h * (1 - g) * A[k]
            U[k + 1], du = self._u(t1, theta)
            a, lam = A[k].copy(), L[k].copy()
            if self.compiled:  # the whole Newton loop in one compiled call
                self.res.set_inputs(U[k + 1])  # the engine reads them at each evaluation
                it = self.res.node_terms().newmark(
                    t1, qp, vp, a, lam, b * h * h, g * h, rs, self.tol, self.max_iter
                )
                if it <= 0:
                    self._not_converged(t1)
            else:
                for it in range(1, self.max_iter + 1):  # noqa: B007 (count kept)
                    q1, v1 = qp + b * h * h * a, vp + g * h * a
                    r, J = self._jac(t1, q1, v1, a, lam, U[k + 1], False)
                    Mt = self._matrix(J)
                    lu = spla.splu((sp.diags(rs) @ Mt).tocsc())
                    dy = lu.solve(-rs * r)
                    a += dy[:n]
                    lam += dy[n:]
                    if np.max(np.abs(dy)) <= self.tol * (1.0 + np.max(np.abs(np.r_[a, lam]))):
                        break
                else:
                    self._not_converged(t1)
            its[k] = it
            Q[k + 1], V[k + 1], A[k + 1], L[k + 1] = qp + b * h * h * a, vp + g * h * a, a, lam
            s.accept(Q[k + 1], V[k + 1], L[k + 1], t1)
            if sens:
                dqp = dQ[k] + h * dV[k] + h * h * (0.5 - b) * dA[k]
                dvp = dV[k] + h * (1 - g) * dA[k]
                if self.compiled:
                    x = (t1, Q[k + 1], V[k + 1], a, lam)
                    r, lu = self._compiled_step(*x)
                    Jq, Jv, Jp = self._compiled_jacobians(*x, r, U[k + 1], du)
                    y = sla.lu_solve(lu, rs[:, None] * (-(Jq @ dqp + Jv @ dvp) - Jp))
                else:
                    _, J = self._jac(t1, Q[k + 1], V[k + 1], a, lam, U[k + 1], True)
                    J = J.tocsc()
                    lu = spla.splu((sp.diags(rs) @ self._matrix(J)).tocsc())
                    rhs = -(J[:, :n] @ dqp + J[:, n : 2 * n] @ dvp) - self._rhs_inputs_params(J, du)
                    y = lu.solve(rs[:, None] * rhs)
                dA[k + 1], dL[k + 1] = y[:n], y[n:]
                dQ[k + 1] = dqp + b * h * h * y[:n]
                dV[k + 1] = dvp + g * h * y[:n]
        if not sens:
            dQ = dV = dA = dL = None
        return ShootingResult(self.t.copy(), Q, V, A, L, U, dQ, dV, dA, dL, its)

    def _not_converged(self, t1):
        raise ConvergenceError(
            f"Shooting: Newton did not converge at t={t1:.6g} s in {self.max_iter} "
            "iterations; reduce dt",
            time=t1,
        )

    def _compiled_step(self, t, q, v, a, lam, jac=True):
        """Engine residual ``r = [F; phi]`` at one node and (``jac``) the LU factors of the
        row-scaled Newmark matrix ``[J_q beta h^2 + J_v gamma h + J_a, J_lam]`` (its
        constraint rows divided by ``beta h^2``: ``Phi_q``, as the engine assembles it)."""
        bh2, gh = self.beta * self.h * self.h, self.gamma * self.h
        e = self.system.engine()
        r, phi, A = e.terms(q, v, a, lam, t, (1.0, bh2, gh, bh2, gh), jac=jac)
        return np.concatenate([r, phi]), (sla.lu_factor(A, check_finite=False) if jac else None)

    def _compiled_jacobians(self, t, q, v, a, lam, r, u, du):
        """``(J_q, J_v, J_z)`` (n + nc rows) at one node from one compiled call
        (:meth:`~flexmbd.pyomo.residual.NodeResiduals.engine_node`): the residual's
        derivatives in ``q`` and ``v``, the parameter columns
        (:func:`~flexmbd.pyomo.residual.parameter_columns`, engine residuals) and the
        profile columns ``J_u du`` (the residual is affine in the inputs ``u`` (nu,): its
        change for a unit step of each from the step's ``r``, as on the Python path)."""
        n = self.res.n
        _, Aq, Av, Ju = self.res.engine_node(t, q, v, a, lam, u, r[:n])
        Jq = Aq[:, :n]  # F rows: dR/dq + H - dQ/dq; phi rows: Phi_q
        Jv = Av[:, :n].copy()
        Jv[n:] = 0.0  # phi does not depend on v
        Jp = np.zeros((len(r), self.nz))
        if self.np:
            Jp[:, : self.np] = parameter_columns(
                self.params, self.system, lambda: self._compiled_step(t, q, v, a, lam, False)[0], r
            )
        if self.res.nu and self.ntheta:  # (phi does not depend on the inputs)
            Jp[:n, self.np :] = Ju @ du
        return Jq, Jv, Jp

    def _phi_q(self, q, t):
        """Sparse ``Phi_q`` (CSR) at ``q``, ``t``: the engine's on the compiled path."""
        if self.compiled:
            return self.system.engine().constraint_jacobian(q, t)
        return self.system.constraint_jacobian(q, t).tocsr()

    def _matrix(self, J):
        n, nc, b, g, h = self.res.n, self.res.nc, self.beta, self.gamma, self.h
        J = J.tocsc()
        Ja = J[:, :n] * (b * h * h) + J[:, n : 2 * n] * (g * h) + J[:, 2 * n : 3 * n]
        return sp.hstack([Ja, J[:, 3 * n : 3 * n + nc]]).tocsc()

    def _rhs_inputs_params(self, J, du):
        """``J_u du/dz + J_p dp/dz`` (n + nc, nz) at one node."""
        n, nc, nu, np_ = self.res.n, self.res.nc, self.res.nu, self.np
        out = np.zeros((J.shape[0], self.nz))
        c0 = 3 * n + nc
        if np_:
            out[:, :np_] = J[:, c0 + nu : c0 + nu + np_].toarray()
        if nu and self.ntheta:
            out[:, np_:] = J[:, c0 : c0 + nu] @ du
        return out

    # -- outputs --------------------------------------------------------------------------
    def joint_force(self, result, joint, body=None):
        """World-frame force (N) a joint's constraints apply to a body, with derivatives.

        ``F = Phi_q[rows, r_body]^T lam[rows]`` at every node, (N+1, 3), and ``dF/dz``
        (N+1, 3, nz): the multipliers' sensitivities, plus the configuration dependence of
        ``Phi_q`` by a central difference along ``dq/dz`` (zero for a joint whose position
        equations are linear in the body's position, e.g. any joint to the ground).
        ``body``: the body's name (default the joint's child).
        """
        s = self.system
        k = s.layout.joint_row(joint)
        j = s.joints[k]
        name = body or j.child.name
        i = s.layout.body_row(name)
        rows = s.constraints.joint_rows[k]
        cols = slice(7 * i, 7 * i + 3)
        N = len(result.t)
        nz = 0 if result.dlam is None else self.nz
        # the states whose Phi_q block is needed: each node's, then its +- e dq/dz steps
        states, times, steps = [], [], np.zeros((N, nz))
        for m in range(N):
            states.append(result.q[m])
            for c in range(nz):
                d = result.dq[m, :, c]
                e = steps[m, c] = 1e-7 / max(np.max(np.abs(d)), 1e-300)
                states += [result.q[m] + e * d, result.q[m] - e * d]
            times += [result.t[m]] * (1 + 2 * nz)
        if self.compiled:  # all blocks in one compiled call
            c7 = np.arange(7 * i, 7 * i + 3)
            r_ = np.arange(self.res.nc)[rows]
            P_all = self.res.node_terms().constraint_blocks(times, states, r_, c7)
        else:
            P_all = [self._phi_q(q, t)[rows][:, cols].toarray() for q, t in zip(states, times)]
        F = np.zeros((N, 3))
        dF = None if result.dlam is None else np.zeros((N, 3, nz))
        for m in range(N):
            o = m * (1 + 2 * nz)
            P = P_all[o]
            lam = result.lam[m, rows]
            F[m] = P.T @ lam
            if dF is not None:
                dF[m] = P.T @ result.dlam[m, rows]
                for c in range(nz):
                    dP = (P_all[o + 1 + 2 * c] - P_all[o + 2 + 2 * c]) / (2 * steps[m, c])
                    dF[m, :, c] += dP.T @ lam
        return F, dF
