"""A whole trajectory as one Pyomo NLP: the grey-box block plus Newmark collocation.

``Trajectory(system, t_end, dt, params=..., inputs=...)`` builds a ``ConcreteModel``
``traj.m`` with one :class:`~flexmbd.pyomo.greybox.DynamicsGreyBox` over the nodes
``t_k = k dt`` (k = 1..N) and the Newmark relations between consecutive nodes as
algebraic Pyomo constraints (``beta = 1/4``, ``gamma = 1/2``: the trapezoidal rule)

    q_{k+1} = q_k + h v_k + h^2 ((1/2 - beta) a_k + beta a_{k+1})
    v_{k+1} = v_k + h ((1 - gamma) a_k + gamma a_{k+1})

These are exactly the equations flexmbd's ``newmark`` integrator solves step by step
(index 3, ``project_velocities=False``), so a simulation of the same model at the same
step is a feasible point of the NLP. Node 0 holds the model's consistent initial state
(``system.initial_conditions()`` at the parameters' values when the NLP is built), as
constants. A user adds an objective (and further constraints) in Pyomo on the variables
``traj.q(k)``, ``traj.v(k)``, ``traj.u(k)``, ``traj.p[name]`` and the algebraic
:meth:`Trajectory.point` positions, then calls :meth:`Trajectory.solve` (cyipopt).

We use our own node set rather than a ``pyomo.dae`` ``ContinuousSet`` so that the
collocation is the integrator's own scheme (and the grey-box block sees whole
trajectories, see :mod:`.greybox`).
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import ModelError, SolverError
from . import require_pyomo
from .residual import NodeResiduals

pe = require_pyomo()

from pyomo.contrib.pynumero.interfaces.external_grey_box import (  # noqa: E402
    ExternalGreyBoxBlock,
)

from .greybox import DynamicsGreyBox, GaussNewtonDynamicsGreyBox  # noqa: E402

__all__ = ["Trajectory"]


class Trajectory:
    """A Pyomo NLP of a flexmbd trajectory (see the module docstring).

    Parameters
    ----------
    system : AbsoluteSystem
        The compiled model (``formulation="absolute"``).
    t_end, dt : float
        Horizon and node spacing (s); ``N = round(t_end / dt)`` nodes after node 0.
    params : sequence of Parameter
        Free parameters (NLP variables with their bounds).
    inputs : sequence of JointInput
        Control inputs (one NLP variable per node and joint speed).
    u_bounds : (lb, ub), optional
        Bounds of every input value (N or N m).
    beta, gamma : float
        Newmark parameters (default: trapezoidal rule).
    initial : (q, v, a, lam) arrays (N+1, .), optional
        Initial guess of the nodes (e.g. a simulation); default the initial state.
    hessian : {"gauss-newton", "quasi-newton"}
        ``"gauss-newton"`` (default): IPOPT's exact-Hessian mode with the grey-box
        constraints' curvature left out (:class:`GaussNewtonDynamicsGreyBox`);
        ``"quasi-newton"``: IPOPT's limited-memory update of the whole Hessian.
    """

    # contract: the problem parameters shared with shooting.Shooting's constructor
    def __init__(
        self,
        system,
        t_end,
        dt,
        params=(),
        inputs=(),
        u_bounds=(None, None),
        beta=0.25,
        gamma=0.5,
        initial=None,
        hessian="gauss-newton",
    ):
        N = int(round(t_end / dt))
        if N < 1:
            raise ModelError(f"Trajectory: t_end={t_end} gives no node of dt={dt}")
        self.h = float(dt)
        self.times = self.h * np.arange(N + 1)
        self.system = system
        self.params = list(params)
        self.inputs = list(inputs)
        self.res = NodeResiduals(system, self.times[1:], self.params, self.inputs)
        r = self.res
        self.beta, self.gamma = beta, gamma
        q0, v0, a0, l0 = system.initial_conditions()
        self.x0 = (q0, v0, a0, l0)
        m = self.m = pe.ConcreteModel()
        if hessian not in ("gauss-newton", "quasi-newton"):
            raise ModelError(
                f"Trajectory: hessian={hessian!r}; use 'gauss-newton' or 'quasi-newton'"
            )
        self.hessian = hessian
        gb = GaussNewtonDynamicsGreyBox if hessian == "gauss-newton" else DynamicsGreyBox
        m.gb = ExternalGreyBoxBlock(external_model=gb(r))
        x = m.gb.inputs
        # initial guess: a given trajectory (q, v, a, lam (N+1, .)) or the initial state
        if initial is None:
            initial = tuple(np.tile(z, (N + 1, 1)) for z in self.x0)
        for k in range(1, N + 1):
            for name, arr in zip(("q", "v", "a", "lam"), initial):
                for i, val in enumerate(arr[k]):
                    x[f"{name}[{k - 1},{i}]"].value = float(val)
            for j in range(r.nu):
                v = x[f"u[{k - 1},{j}]"]
                v.value = 0.0
                v.setlb(u_bounds[0])
                v.setub(u_bounds[1])
        for p in self.params:
            v = x[p.name]
            v.value = p.value
            v.setlb(p.lb)
            v.setub(p.ub)
        h, b, g = self.h, beta, gamma
        m.newmark = pe.ConstraintList()
        for k in range(N):
            for i in range(r.n):
                qk, qn = self._q(k, i), self._q(k + 1, i)
                vk, vn = self._v(k, i), self._v(k + 1, i)
                ak, an = self._a(k, i), self._a(k + 1, i)
                m.newmark.add(qn == qk + h * vk + h * h * ((0.5 - b) * ak + b * an))
                m.newmark.add(vn == vk + h * ((1 - g) * ak + g * an))
        self.N = N
        self.iterations = None
        self.cpu = None

    # -- variables ------------------------------------------------------------------------
    def _var(self, name, k, i, const):
        if k == 0:
            return float(const[i])
        return self.m.gb.inputs[f"{name}[{k - 1},{i}]"]

    def _q(self, k, i):
        return self._var("q", k, i, self.x0[0])

    def _v(self, k, i):
        return self._var("v", k, i, self.x0[1])

    def _a(self, k, i):
        return self._var("a", k, i, self.x0[2])

    def q(self, k):
        """Coordinates at node ``k`` (list of Pyomo variables; floats at node 0)."""
        return [self._q(k, i) for i in range(self.res.n)]

    def v(self, k):
        """Coordinate rates at node ``k``."""
        return [self._v(k, i) for i in range(self.res.n)]

    def u(self, k):
        """Input values at node ``k >= 1`` (Pyomo variables)."""
        return [self.m.gb.inputs[f"u[{k - 1},{j}]"] for j in range(self.res.nu)]

    @property
    def p(self):
        """``{parameter name: Pyomo variable}``."""
        return {p.name: self.m.gb.inputs[p.name] for p in self.params}

    def point(self, k, frame):
        """World position (3 Pyomo expressions) of a point frame at node ``k``.

        ``frame``: a rigid body's marker/frame or a flexible body's ``point(...)`` /
        ``interface(...)``; its position follows ``r + R(e) (x + Phi q_f)``, polynomial in
        the node's coordinates (``R = E(e) G(e)^T``, Euler parameters).
        """
        s = self.system
        body = frame.body
        bi = [b.name for b in s.bodies].index(body.name)
        q = self.q(k)
        r = q[7 * bi : 7 * bi + 3]
        e0, e1, e2, e3 = q[7 * bi + 3 : 7 * bi + 7]
        E = [[-e1, e0, -e3, e2], [-e2, e3, e0, -e1], [-e3, -e2, e1, e0]]
        G = [[-e1, e0, e3, -e2], [-e2, -e3, e0, e1], [-e3, e2, -e1, e0]]
        x = [float(c) for c in np.asarray(frame.position, float)]
        if body.name in s.modal_slices:
            sl = s.modal_slices[body.name].q
            qf = q[sl]
            modes = np.asarray(frame.modes, float)[3:]
            x = [
                x[i] + sum(float(modes[i, j]) * qf[j] for j in range(len(qf)) if modes[i, j] != 0.0)
                for i in range(3)
            ]
        R = [[sum(E[i][m] * G[j][m] for m in range(4)) for j in range(3)] for i in range(3)]
        return [r[i] + sum(R[i][j] * x[j] for j in range(3)) for i in range(3)]

    # -- solution -------------------------------------------------------------------------
    def solve(self, tee=False, options=None):
        """Solve with IPOPT through cyipopt; returns ``self`` (``iterations``, ``cpu`` (s)).

        Raises :class:`~flexmbd.errors.SolverError` if IPOPT does not report an optimum.
        """
        its = []

        def cb(
            nlp,
            problem,
            alg_mod,
            iter_count,
            obj_value,
            inf_pr,
            inf_du,
            mu,
            d_norm,
            regularization_size,
            alpha_du,
            alpha_pr,
            ls_trials,
        ):
            its.append(int(iter_count))
            return True

        solver = pe.SolverFactory("cyipopt", intermediate_callback=cb)
        # quasi-Newton: IPOPT's limited-memory update, whose dual infeasibility stalls
        # near 1e-5 once the objective has converged; "acceptable" (three iterations
        # below acceptable_tol) ends there
        opts = {
            "tol": 1e-7,
            "acceptable_tol": 1e-4,
            "acceptable_iter": 3,
            "max_iter": 300,
            "print_level": 5 if tee else 0,
        }
        opts.update(options or {})
        solver.config.options.update(opts)
        cpu = time.process_time()
        res = solver.solve(self.m, tee=tee)
        self.cpu = time.process_time() - cpu
        self.iterations = max(its) if its else None
        self.status = str(res.solver.termination_condition)
        self.message = str(res.solver.message)
        if self.status != "optimal" and "acceptable" not in self.message.lower():
            raise SolverError(
                f"IPOPT did not converge on the trajectory NLP: {self.message} "
                f"after {self.iterations} iterations"
            )
        for p in self.params:
            p.value = pe.value(self.m.gb.inputs[p.name])
        return self

    def values(self):
        """``(t, q, v, a, lam, u)`` arrays of the (solved) trajectory, node 0 included."""
        x = self.m.gb.inputs
        r = self.res
        out = []
        for name, m, c in (
            ("q", r.n, self.x0[0]),
            ("v", r.n, self.x0[1]),
            ("a", r.n, self.x0[2]),
            ("lam", r.nc, self.x0[3]),
        ):
            arr = np.empty((self.N + 1, m))
            arr[0] = c
            for k in range(1, self.N + 1):
                arr[k] = [pe.value(x[f"{name}[{k - 1},{i}]"]) for i in range(m)]
            out.append(arr)
        u = np.full((self.N + 1, r.nu), np.nan)
        for k in range(1, self.N + 1):
            u[k] = [pe.value(v) for v in self.u(k)]
        return (self.times, *out, u)
