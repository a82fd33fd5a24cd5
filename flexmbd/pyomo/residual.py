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
        :meth:`~flexmbd.absolute.engine.Engine.newton_pattern`, fixed for the model; all
        nodes in one compiled call, :class:`~flexmbd.absolute.nodes.NodeTerms`) instead of
        the Python terms. Default: when the engine runs every force element
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
        self._nodes = None  # NodeTerms of the system's engine (compiled path)
        self._pattern = None  # the node's Jacobian pattern on the engine's (compiled path)

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
        s = self.system
        self.set_inputs(u)
        T = s.dae_terms(q, v, a, lam, self.times[k], jacobian=jacobian)
        F = T.R - T.Q + T.PtL
        return np.concatenate([F, T.phi]), T

    def residual(self, X, p=None):
        """Stacked residuals (N * (n + nc),) at the node unknowns ``X`` and parameters ``p``."""
        if p is not None:
            self.set_parameters(p)
        if self.compiled:
            return self._engine_nodes(X, False)[0]
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

        for k in range(0 if self.compiled else self.N):
            r, T = self._node(k, q[k], v[k], a[k], lam[k], u[k], True)
            rs.append(r)
            R0, C0 = k * nr, k * nx
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
        if self.compiled:
            r, (rr, cc, vv) = self._engine_nodes(X, True)
            rows.append(rr)
            cols.append(cc)
            vals.append(vv)
        else:
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

    def _engine_nodes(self, X, jacobian):
        """The compiled path of :meth:`residual` / :meth:`evaluate`: one
        :class:`~flexmbd.absolute.nodes.NodeTerms` call for all nodes; ``(r, J)`` with
        ``J`` the nodes' triplets ``(rows, cols, values)`` in the stacked layout (None
        without ``jacobian``)."""
        q, v, a, lam, u = self.split(X)
        nt = self.node_terms()
        r, mats, Fu = nt.evaluate(self.times, q, v, a, lam, u, self.set_inputs, jacobian)
        r = r.ravel()
        if not jacobian:
            return r, None
        n, nc, nx, nr, N = self.n, self.nc, self.nx, self.nr, self.N
        if self._pattern is None:
            top, left = nt.rows < n, nt.cols < n
            jm, tm, bm = top & left, top & ~left, ~top & left
            pr, pc = nt.rows, nt.cols
            # the node's blocks in its unknowns (q, v, a, lam, u): dF/dq, dF/dv, M, Phi_q^T
            # (lam columns follow q, v, a: 3 n - n), Phi_q; then the input columns
            rows = np.concatenate([pr[jm], pr[jm], pr[jm], pr[tm], pr[bm]])
            cols = np.concatenate([pc[jm], pc[jm] + n, pc[jm] + 2 * n, pc[tm] + 2 * n, pc[bm]])
            pick = [(0, jm), (1, jm), (2, jm), (0, tm), (0, bm)]
            ui = np.arange(n)
            rows = np.concatenate([rows, np.tile(ui, self.nu)])  # dense input columns
            cols = np.concatenate([cols, np.repeat(3 * n + nc + np.arange(self.nu), n)])
            self._pattern = (rows, cols, pick)
        rows, cols, pick = self._pattern
        vals = np.concatenate(
            [mats[s][:, m] for s, m in pick] + [Fu.transpose(0, 2, 1).reshape(N, -1)], axis=1
        )
        k = np.arange(N)[:, None]
        return r, ((rows + nr * k).ravel(), (cols + nx * k).ravel(), vals.ravel())

    def node_terms(self):
        """The :class:`~flexmbd.absolute.nodes.NodeTerms` of the system's current compiled
        engine (made again when the system has a new one)."""
        from ..absolute.nodes import NodeTerms

        e = self.system.engine()
        if self._nodes is None or self._nodes.engine is not e:
            self._nodes = NodeTerms(e)
            self._pattern = None
        return self._nodes

    def engine_node(self, t, q, v, a, lam, u, F=None):
        """``(r, A_q, A_v, dF/du)`` at one node (time ``t`` s, unknowns ``q, v, a`` (n),
        ``lam`` (nc), inputs ``u`` (nu)) from one compiled call
        (:class:`~flexmbd.absolute.nodes.NodeTerms`): ``r = [F; phi]``; ``A_q`` ((n + nc)
        square) ``= [[dF/dq, Phi_q^T], [Phi_q, 0]]``; ``A_v`` with ``dF/dv`` in its top-left
        block (its constraint rows are not derivatives: ``phi`` does not depend on ``v``);
        ``dF/du`` (n, nu), exact (``F`` is affine in ``u``): the change of ``F`` for a unit
        step of each input, from ``F`` (n; default the residual's). The inputs are left at
        ``u``."""
        nt = self.node_terms()
        one = lambda x: np.asarray(x, float)[None]  # noqa: E731
        r, (vq, vv, _), Fu = nt.evaluate(
            [t], one(q), one(v), one(a), one(lam), one(u), self.set_inputs,
            base=None if F is None else one(F),
        )  # fmt: skip
        m = self.n + self.nc
        Aq, Av = np.zeros((m, m)), np.zeros((m, m))
        Aq[nt.rows, nt.cols] = vq[0]
        Av[nt.rows, nt.cols] = vv[0]
        return r[0], Aq, Av, Fu[0]

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
