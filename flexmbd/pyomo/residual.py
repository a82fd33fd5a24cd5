"""Residuals of the index-3 equations of motion at time nodes, with exact sparse Jacobians.

At a node ``t_k`` of a trajectory the absolute formulation's DAE reads

    F(q, v, a, lam, u, p) = R(q, v, a) - Q(q, v, t_k; u, p) + Phi_q(q)^T lam = 0   (n)
    phi(q, t_k) = 0                                                                 (nc)

with ``R`` the inertia (and elastic, modal-damping) residual, ``Q`` the applied forces,
``Phi_q`` the constraint Jacobian (joints, drivers, Euler-parameter normalizations), ``u``
the control inputs (:class:`~flexmbd.pyomo.JointInput` values at the node) and ``p`` the
free parameters (:mod:`flexmbd.pyomo.parameters`). The unknowns of node ``k`` are laid
out as ``x_k = [q (n), v (n), a (n), lam (nc), u (nu)]``; the parameters follow all nodes.

Jacobians:

* ``q, v, a, lam``: the exact ones the implicit integrators use
  (:meth:`flexmbd.absolute.system.AbsoluteSystem.dae_terms`):
  ``dF/dq = dR/dq - dQ/dq + d(Phi_q^T lam)/dq``, ``dF/dv = dR/dv - dQ/dv``,
  ``dF/da = M``, ``dF/dlam = Phi_q^T``, ``dphi/dq = Phi_q``.
* ``u`` and ``p``: ``F`` is affine in each input and in each offered parameter (forces are
  linear in torques, damping ratios, spring and damper constants, masses), so
  ``dF/dp = (F(p + dp) - F(p)) / dp`` is exact up to rounding for any ``dp``; a parameter
  declared with ``affine=False`` gets a central difference with ``dp = 1e-6 max(1, |p|)``
  instead (the documented fallback).

Needs every force element to have exact Jacobians and flexible bodies without geometric
stiffening (whose lagged interface loads are integrator state, not a function of the
node's unknowns): :class:`NodeResiduals` raises a :class:`~flexmbd.errors.ModelError`
otherwise. This module does not import Pyomo.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError

if TYPE_CHECKING:
    from ..absolute.system import AbsoluteSystem

__all__ = ["NodeResiduals", "parameter_columns"]


class NodeResiduals:
    """Residuals and Jacobians of a compiled absolute system at a list of time nodes.

    Parameters
    ----------
    system : AbsoluteSystem
        ``model.compile("absolute")``.
    times : array_like
        The node times (s), (N,).
    params : sequence of Parameter
        The free parameters (their order is the order of ``p``).
    inputs : sequence of JointInput
        The control inputs (their ``nv`` values per node, in this order).
    compiled : bool, optional
        Evaluate the nodes with the system's compiled engine
        (:meth:`~flexmbd.absolute.system.AbsoluteSystem.engine`: the same equations to
        round-off; the Jacobian's pattern is the engine's block pattern,
        :meth:`~flexmbd.absolute.engine.Engine.newton_pattern`, fixed for the model)
        instead of the Python terms. Default: when the engine runs every force element
        (:meth:`Engine.supports <flexmbd.absolute.engine.Engine.supports>`); True raises
        :class:`~flexmbd.errors.ModelError` otherwise. The attribute can be switched.
    """

    def __init__(self, system, times, params=(), inputs=(), compiled=None):
        if getattr(system, "formulation", None) != "absolute":
            raise ModelError(
                "flexmbd.pyomo: compile the model with formulation='absolute' "
                "(the grey-box block uses its exact residual Jacobians)"
            )
        self.system = system
        self.times = np.atleast_1d(np.asarray(times, float))
        self.params = list(params)
        self.inputs = list(inputs)
        self._check()
        system.refresh()
        self.n, self.nc = system.n, system.nc
        self.nu = sum(i.joint.nv for i in self.inputs)
        self.np = len(self.params)
        self.N = len(self.times)
        self.nx = 3 * self.n + self.nc + self.nu  # unknowns of one node
        self.nr = self.n + self.nc  # equations of one node
        #: True: the nodes are evaluated by the compiled engine
        self.compiled = compiled_terms(system, compiled, "NodeResiduals")
        self._pattern = None  # the engine's Newton-matrix pattern, split by blocks

    def _check(self):
        from ..model.flexible import FlexibleBody

        m = self.system.model
        for b in m.bodies():
            if isinstance(b, FlexibleBody) and b.geometric_stiffening:
                raise ModelError(
                    f"flexmbd.pyomo: flexible body {b.name!r} has geometric stiffening on; its "
                    "lagged interface loads are not a function of one node's unknowns. Build it "
                    "with FlexibleBody(..., geometric_stiffening=False)"
                )
        if self.system.jacobian_mode != "exact":
            raise ModelError("flexmbd.pyomo: compile with jacobian='exact'")
        for f in m.forces():
            if not getattr(f, "has_jacobian", True):
                raise ModelError(
                    f"flexmbd.pyomo: force element {f.name!r} has no exact Jacobian; give its "
                    "derivatives (e.g. JointForce(..., dfdq=, dfdqd=)) or use JointInput / "
                    "ViscousBearing"
                )

    # -- layout ---------------------------------------------------------------------------
    def split(self, X):
        """``(q, v, a, lam, u)`` arrays (N, .) from the node unknowns ``X`` (N * nx,)."""
        X = np.asarray(X, float).reshape(self.N, self.nx)
        n, nc = self.n, self.nc
        return (
            X[:, :n],
            X[:, n : 2 * n],
            X[:, 2 * n : 3 * n],
            X[:, 3 * n : 3 * n + nc],
            X[:, 3 * n + nc :],
        )

    def join(self, q, v, a, lam, u=None):
        """Node unknowns ``X`` (N * nx,) from histories (N, .)."""
        if u is None:
            u = np.zeros((self.N, self.nu))
        return np.concatenate(
            [np.reshape(x, (self.N, -1)) for x in (q, v, a, lam, u)], axis=1
        ).ravel()

    def set_parameters(self, p):
        """Write the parameter values ``p`` (np,) into the model and refresh the system."""
        for par, val in zip(self.params, np.asarray(p, float)):
            if par.value != val:
                par.value = val
        self.system.refresh()

    def set_inputs(self, u):
        i = 0
        for inp in self.inputs:
            inp.set_value(u[i : i + inp.joint.nv])
            i += inp.joint.nv

    # -- evaluation -----------------------------------------------------------------------
    def _node(self, k, q, v, a, lam, u, jacobian):
        if self.compiled:
            return self._engine_node(k, q, v, a, lam, u, jacobian)
        s = self.system
        self.set_inputs(u)
        T = s.dae_terms(q, v, a, lam, self.times[k], jacobian=jacobian)
        F = T.R - T.Q + T.PtL
        return np.concatenate([F, T.phi]), T

    def residual(self, X, p=None):
        """Stacked residuals (N * (n + nc),) at the node unknowns ``X`` and parameters ``p``."""
        if p is not None:
            self.set_parameters(p)
        q, v, a, lam, u = self.split(X)
        return np.concatenate(
            [self._node(k, q[k], v[k], a[k], lam[k], u[k], False)[0] for k in range(self.N)]
        )

    def evaluate(self, X, p=None):
        """``(r, J)``: residuals and the sparse Jacobian (N (n+nc) x (N nx + np)) in CSR."""
        if p is not None:
            self.set_parameters(p)
        n, nc, nx, nr = self.n, self.nc, self.nx, self.nr
        q, v, a, lam, u = self.split(X)
        rs, rows, cols, vals = [], [], [], []

        def put(r0, c0, trip, transpose=False):
            rr, cc, vv = trip
            if transpose:
                rr, cc = cc, rr
            rows.append(np.asarray(rr) + r0)
            cols.append(np.asarray(cc) + c0)
            vals.append(np.asarray(vv, float))

        for k in range(self.N):
            r, T = self._node(k, q[k], v[k], a[k], lam[k], u[k], True)
            rs.append(r)
            R0, C0 = k * nr, k * nx
            if self.compiled:
                for rr, cc, vv in T:
                    rows.append(rr + R0)
                    cols.append(cc + C0)
                    vals.append(vv)
                continue
            put(R0, C0, T.Kin)
            put(R0, C0, (T.KQ[0], T.KQ[1], -np.asarray(T.KQ[2])))
            put(R0, C0, T.H)
            put(R0, C0 + n, T.Din)
            put(R0, C0 + n, (T.DQ[0], T.DQ[1], -np.asarray(T.DQ[2])))
            put(R0, C0 + 2 * n, T.M)
            put(R0, C0 + 3 * n, T.Phq, transpose=True)
            put(R0 + n, C0, T.Phq)
            # inputs: F is affine in u -> one extra force evaluation per input component
            if self.nu:
                Q0 = T.Q
                for j in range(self.nu):
                    uj = u[k].copy()
                    uj[j] += 1.0
                    self.set_inputs(uj)
                    Qj = self.system.generalized_forces(q[k], v[k], self.times[k])
                    d = -(Qj - Q0)
                    rows.append(R0 + np.arange(n))  # dense column: a fixed pattern
                    cols.append(np.full(n, C0 + 3 * n + nc + j))
                    vals.append(d)
                self.set_inputs(u[k])
        r = np.concatenate(rs)
        if self.np:
            Jp = self.parameter_jacobian(X, r)
            pr, pc = np.indices(Jp.shape)  # dense columns: a fixed pattern
            rows.append(pr.ravel())
            cols.append(self.N * nx + pc.ravel())
            vals.append(Jp.ravel())
        J = sp.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(self.N * nr, self.N * nx + self.np),
        )
        J.sum_duplicates()
        return r, J

    def _engine_node(self, k, q, v, a, lam, u, jacobian):
        """:meth:`_node` by the compiled engine: ``(r, blocks)``, ``blocks`` the node's
        Jacobian as triplets ``(rows, cols, values)`` in the node's unknowns (q, v, a, lam,
        u) on the engine's fixed pattern (None without ``jacobian``)."""
        e, t = self.system.engine(), self.times[k]
        self.set_inputs(u)
        F, phi, _ = e.terms(q, v, a, lam, t, (0.0, 0.0, 0.0, 0.0, 0.0), jac=False)
        r = np.concatenate([F, phi])
        if not jacobian:
            return r, None
        n, nc = self.n, self.nc
        if self._pattern is None:
            pr, pc = e.newton_pattern()
            top, left = pr < n, pc < n
            self._pattern = (
                (pr[top & left], pc[top & left]),  # J: dF/dq, dF/dv, M
                (pr[top & ~left], pc[top & ~left]),  # Phi_q^T
                (pr[~top & left], pc[~top & left]),  # Phi_q
            )
        (jr, jc), (tr, tc), (br, bc) = self._pattern
        Aq, Av = self.engine_derivatives(t, q, v, a, lam)
        Am = e.terms(q, v, a, lam, t, (1.0, 0.0, 0.0, 0.0, 0.0))[2]  # M
        blocks = [
            (jr, jc, Aq[jr, jc]),
            (jr, jc + n, Av[jr, jc]),
            (jr, jc + 2 * n, Am[jr, jc]),
            (tr, tc + 2 * n, Aq[tr, tc]),  # lam columns follow q, v, a (3 n - n)
            (br, bc, Aq[br, bc]),
        ]
        Fu = self.engine_input_columns(t, q, v, a, lam, u, F)
        for j in range(self.nu):
            blocks.append((np.arange(n), np.full(n, 3 * n + nc + j), Fu[:, j]))
        return r, blocks

    def engine_derivatives(self, t, q, v, a, lam):
        """``(A_q, A_v)`` ((n + nc) square) at one node from the compiled engine's Newton
        matrix: ``A_q[:n, :n] = dF/dq`` with ``A_q[n:, :n] = Phi_q`` (and ``Phi_q^T`` in
        the multiplier columns), ``A_v[:n, :n] = dF/dv`` (its constraint rows are not
        derivatives: ``phi`` does not depend on ``v``)."""
        e = self.system.engine()
        Aq = e.terms(q, v, a, lam, t, (0.0, 1.0, 0.0, 1.0, 0.0))[2]
        Av = e.terms(q, v, a, lam, t, (0.0, 0.0, 1.0, 0.0, 1.0))[2]
        return Aq, Av

    def engine_input_columns(self, t, q, v, a, lam, u, F):
        """``dF/du`` (n, nu) at one node by the compiled engine: ``F`` is affine in the
        inputs ``u`` (nu,), so each column is the change of ``F`` (its value at ``u``) for
        a unit step of one input; the inputs are set back to ``u``."""
        e = self.system.engine()
        out = np.zeros((self.n, self.nu))
        for j in range(self.nu):
            uj = u.copy()
            uj[j] += 1.0
            self.set_inputs(uj)
            out[:, j] = e.terms(q, v, a, lam, t, (0.0, 0.0, 0.0, 0.0, 0.0), jac=False)[0] - F
        if self.nu:
            self.set_inputs(u)
        return out

    def parameter_jacobian(self, X, r=None):
        """Dense ``dr/dp`` (N (n+nc) x np): exact for affine parameters, else central FD."""
        if r is None:
            r = self.residual(X)
        return parameter_columns(self.params, self.system, lambda: self.residual(X), r)


def compiled_terms(system: AbsoluteSystem, compiled: bool | None, who: str) -> bool:
    """Whether ``who`` evaluates the DAE terms of the absolute ``system`` by the compiled
    engine: ``compiled=None`` where :meth:`Engine.supports
    <flexmbd.absolute.engine.Engine.supports>` the model, else as asked. Raises
    ``ModelError`` naming ``who`` and the fix for ``compiled=True`` on a model the
    engine does not run."""
    from ..absolute.engine import Engine

    ok = Engine.supports(system)
    if compiled and not ok:
        raise ModelError(
            f"flexmbd.pyomo {who}(compiled=True): the compiled engine does not run this model "
            "(a force element it does not compile, e.g. a Python joint law, or a Screw or "
            "GearCoupling); leave compiled=None"
        )
    return ok if compiled is None else bool(compiled)


def parameter_columns(params, system, residual, r):
    """Dense ``dr/dp`` (len(r) x len(params)) of ``residual()`` (evaluated at the model's
    current parameter values; ``r`` its value at the current ones): one evaluation at
    ``p + dp`` (``dp = max(|p|, 1e-3)``) for an affine parameter, exact up to rounding;
    a central difference with ``dp = 1e-6 max(1, |p|)`` otherwise. Every parameter is
    restored and ``system`` refreshed after its column."""
    out = np.zeros((r.size, len(params)))
    for m, par in enumerate(params):
        p0 = par.value
        if par.affine:
            dp = max(abs(p0), 1e-3)
            par.value = p0 + dp
            system.refresh()
            out[:, m] = (residual() - r) / dp
        else:
            dp = 1e-6 * max(1.0, abs(p0))
            par.value = p0 + dp
            system.refresh()
            rp = residual()
            par.value = p0 - dp
            system.refresh()
            out[:, m] = (rp - residual()) / (2 * dp)
        par.value = p0
        system.refresh()
    return out
