"""The Pyomo grey-box block: a flexmbd model's equations of motion at time nodes.

:class:`DynamicsGreyBox` is a PyNumero ``ExternalGreyBoxModel`` whose inputs are the
unknowns of the nodes (``q, v, a, lam, u`` of :class:`~flexmbd.pyomo.NodeResiduals`) and
the free parameters, and whose equality constraints are the index-3 residuals
``F = 0``, ``phi = 0`` of every node, with the exact sparse Jacobian.

Why one block for all nodes rather than one block per node: the parameters are shared by
every node and their derivatives need a rebuild of the compiled system per parameter
(2 ms for the flexible pendulum); one block does that rebuild once per Jacobian for the
whole trajectory, where per-node blocks would repeat it at every node (N times the work),
and PyNumero's per-block overhead is paid once. A single node is ``times=[t]``.

Needs Pyomo and cyipopt (``pip install "flexmbd[pyomo]"``); imported lazily by
:mod:`flexmbd.pyomo`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import require_pyomo

require_pyomo()

from pyomo.contrib.pynumero.interfaces.external_grey_box import (  # noqa: E402
    ExternalGreyBoxModel,
)

__all__ = ["DynamicsGreyBox", "GaussNewtonDynamicsGreyBox", "ShootingGreyBox"]


class DynamicsGreyBox(ExternalGreyBoxModel):
    """PyNumero grey-box model of :class:`~flexmbd.pyomo.NodeResiduals`.

    Input names: ``"q[k,i]"``, ``"v[k,i]"``, ``"a[k,i]"``, ``"lam[k,j]"``, ``"u[k,l]"``
    (node ``k`` of the residuals' times, coordinate ``i``, constraint row ``j``, input
    ``l``) and the free parameters' names; equality constraint names
    ``"F[k,i]"`` and ``"phi[k,j]"``.
    """

    def __init__(self, residuals):
        self.res = residuals
        r = residuals
        names = []
        for k in range(r.N):
            names += [f"q[{k},{i}]" for i in range(r.n)]
            names += [f"v[{k},{i}]" for i in range(r.n)]
            names += [f"a[{k},{i}]" for i in range(r.n)]
            names += [f"lam[{k},{j}]" for j in range(r.nc)]
            names += [f"u[{k},{j}]" for j in range(r.nu)]
        names += [p.name for p in r.params]
        self._inputs = names
        self._eqs = [
            f"{w}[{k},{i}]"
            for k in range(r.N)
            for w, m in (("F", r.n), ("phi", r.nc))
            for i in range(m)
        ]
        self._z = None
        self._cache = None
        self.n_evaluations = 0

    def input_names(self):
        return self._inputs

    def equality_constraint_names(self):
        return self._eqs

    def output_names(self):
        return []

    def set_input_values(self, input_values):
        self._z = np.asarray(input_values, float).copy()

    def _eval(self):
        if self._cache is None or not np.array_equal(self._cache[0], self._z):
            nX = self.res.N * self.res.nx
            r, J = self.res.evaluate(self._z[:nX], self._z[nX:])
            self.n_evaluations += 1
            self._cache = (self._z.copy(), r, J)
        return self._cache[1], self._cache[2]

    def evaluate_equality_constraints(self):
        return self._eval()[0]

    def evaluate_jacobian_equality_constraints(self):
        # PyNumero needs one sparsity pattern for all evaluations: the first Jacobian's
        # (explicit zeros kept); later ones are mapped onto it
        J = sp.coo_matrix(self._eval()[1])
        ncol = J.shape[1]
        key = J.row.astype(np.int64) * ncol + J.col
        if getattr(self, "_pattern", None) is None:
            order = np.argsort(key)
            self._pattern = (key[order], J.row[order], J.col[order])
            return sp.coo_matrix((J.data[order], (J.row[order], J.col[order])), shape=J.shape)
        pk, pr, pc = self._pattern
        pos = np.searchsorted(pk, key)
        pos = np.minimum(pos, len(pk) - 1)
        inside = pk[pos] == key
        if not np.all(inside | (J.data == 0.0)):
            raise RuntimeError(
                "flexmbd.pyomo: the residual Jacobian gained entries outside "
                "its first sparsity pattern"
            )
        vals = np.zeros(len(pk))
        np.add.at(vals, pos[inside], J.data[inside])
        return sp.coo_matrix((vals, (pr, pc)), shape=J.shape)


class GaussNewtonDynamicsGreyBox(DynamicsGreyBox):
    """:class:`DynamicsGreyBox` with a zero Hessian of its constraints (Gauss-Newton).

    IPOPT then runs with ``hessian_approximation="exact"`` on the Lagrangian Hessian
    ``H = d2f/dx2 + sum_i y_i d2c_i/dx2`` with the grey-box terms (the residuals'
    curvature, weighted by their multipliers ``y_i``) left out: the objective's own
    Hessian (exact, from Pyomo) and the linear Newmark relations are kept. Near a solution
    with small multipliers (an output-error fit, a terminal-state cost) this is the
    generalized Gauss-Newton method: locally fast where the limited-memory quasi-Newton
    update stalls (its dual infeasibility plateaus near 1e-5).
    """

    def set_equality_constraint_multipliers(self, eq_con_multiplier_values):
        self._y = np.asarray(eq_con_multiplier_values, float).copy()

    def evaluate_hessian_equality_constraints(self):
        n = len(self._inputs)
        return sp.coo_matrix((np.zeros(0), (np.zeros(0, int), np.zeros(0, int))), shape=(n, n))


class ShootingGreyBox(ExternalGreyBoxModel):
    """PyNumero grey-box model of a simulated trajectory: outputs with exact derivatives.

    Inputs: the free parameters' names, then ``"theta[i]"`` (the input-profile
    coefficients) of a :class:`~flexmbd.pyomo.shooting.Shooting`. Outputs: ``outputs(sh,
    result) -> (y (ny,), dy/dz (ny, nz))`` of one simulation with sensitivities (e.g.
    marker positions, joint forces at chosen times), named ``output_names`` (default
    ``"y[i]"``). Every evaluation at new inputs is one simulation; the route for long
    horizons and ``parmest``-style identification with few parameters.
    """

    def __init__(self, shooting, outputs, ny, output_names=None):
        self.sh = shooting
        self.fun = outputs
        self._inputs = [p.name for p in shooting.params] + [
            f"theta[{i}]" for i in range(shooting.ntheta)
        ]
        self._outputs = list(output_names or [f"y[{i}]" for i in range(ny)])
        self._z = None
        self._cache = None
        self.n_simulations = 0

    def input_names(self):
        return self._inputs

    def equality_constraint_names(self):
        return []

    def output_names(self):
        return self._outputs

    def set_input_values(self, input_values):
        self._z = np.asarray(input_values, float).copy()

    def _eval(self):
        if self._cache is None or not np.array_equal(self._cache[0], self._z):
            npar = self.sh.np
            res = self.sh.simulate(self._z[:npar], self._z[npar:])
            y, dy = self.fun(self.sh, res)
            self.n_simulations += 1
            self._cache = (self._z.copy(), np.asarray(y, float), np.asarray(dy, float))
        return self._cache[1], self._cache[2]

    def evaluate_outputs(self):
        return self._eval()[0]

    def evaluate_jacobian_outputs(self):
        dy = self._eval()[1]
        r, c = np.indices(dy.shape)  # dense: one fixed pattern
        return sp.coo_matrix((dy.ravel(), (r.ravel(), c.ravel())), shape=dy.shape)
