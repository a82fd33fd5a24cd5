"""The compiled engine's terms at a batch of time nodes in one kernel call.

A collocation grey box (:class:`flexmbd.pyomo.NodeResiduals`) and a shooting step's
sensitivities (:class:`flexmbd.pyomo.shooting.Shooting`) need at each node ``(t_k, q, v,
a, lam)`` the residual ``[F; phi]`` of the absolute formulation, the derivatives ``A_q``
(``dF/dq`` with ``Phi_q`` and ``Phi_q^T``), ``A_v`` (``dF/dv``) and the mass matrix ``M``,
and, for control inputs, the columns ``dF/du``. :func:`node_terms` evaluates them for
all nodes with the engine's own kernel (:func:`.engine._system_terms`, called with the
coefficient tuples ``(0, 1, 0, 1, 0)``, ``(0, 0, 1, 0, 1)`` and ``(1, 0, 0, 0, 0)`` of
:meth:`Engine.terms <flexmbd.absolute.engine.Engine.terms>`, the residual without a
matrix), so the values are those of one :meth:`~flexmbd.absolute.engine.Engine.terms`
call per residual, matrix and input column of each node, bit for bit,
at the cost of one Python-to-kernel call for the whole batch (the engine's model and
workspace tuples hold about a hundred arrays, which every call unboxes). The node's time
functions (driver slot vectors and targets, actuator and load values, the inputs) are
tabulated in Python first, as :meth:`Engine.run <flexmbd.absolute.engine.Engine.run>`
does for its steps.

A module of its own, so that the engine's kernels (and their caches) are not touched.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .engine import Inputs, _constraints, _dense_solve, _system_terms

__all__ = ["NodeTerms", "constraint_blocks", "newmark_newton", "node_terms"]

#: the coefficients ``(aM, aKin, aDin, aK, aD)`` of ``A_q``, ``A_v`` and ``M`` (rows)
NODE_COEFFICIENTS = np.array(
    [[0.0, 1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0, 0.0]]
)


@njit(cache=True)
def node_terms(
    m, inp, ws, S, TG, FA, LF, FAU, LFU, Q, V, A, LAM, co, jac, srow, scol, mats, r_out, vals, Fu
):  # fmt: skip
    """The engine's terms at ``N`` nodes: residuals ``r_out`` (N, n + nc) ``= [R + Phi_q^T
    lam - Q; phi]``; with ``jac`` the matrices of the coefficient rows ``co`` (3, 5) at the
    storage entries ``(srow, scol)`` (-1: an entry the layout keeps zero) in ``vals``
    (3, N, len(srow)) (``mats`` (3, n + nc, width): their scratch in the model's layout);
    and ``Fu`` (N, n, nu): ``F`` after a unit step of each input, whose time functions
    ``FAU``, ``LFU`` (nu, N, ...) are tabulated with that step.
    ``S``, ``TG``, ``FA``, ``LF``: the slot vectors, targets, actuator forces and loads per
    node (first axis 1: the same at every node); ``inp``: the engine's other inputs
    (lagged interface loads, gravity); ``ws``: its workspace (scratch)."""
    N = Q.shape[0]
    n = Q.shape[1]
    nc = LAM.shape[1]
    nu = FAU.shape[0]
    ns = srow.shape[0]
    r = np.empty(n)
    phi = np.empty(nc)
    r2 = np.empty(n)
    phi2 = np.empty(nc)
    yes = N >= 0  # booleans and coefficients as values: Engine.terms' specialization
    no = not yes
    for k in range(N):
        inp_k = Inputs(
            S[k] if S.shape[0] > 1 else S[0],
            TG[k] if TG.shape[0] > 1 else TG[0],
            FA[k] if FA.shape[0] > 1 else FA[0],
            LF[k] if LF.shape[0] > 1 else LF[0],
            inp.itf,
            inp.Kitf,
            inp.g,
            inp.has_g,
        )
        q, v, a, lam = Q[k], V[k], A[k], LAM[k]
        # the residual without the matrices, as Engine.terms(jac=False): with them an SDA's
        # force is summed in another order (its Jacobian's G columns), equal to round-off
        c = co[0]
        _system_terms(
            m, inp_k, ws, q, v, a, lam, c[0], c[1], c[2], c[3], c[4], r, phi, mats[0], no, yes
        )  # fmt: skip
        if jac:
            for s in range(3):
                c = co[s]
                _system_terms(
                    m, inp_k, ws, q, v, a, lam, c[0], c[1], c[2], c[3], c[4], r2, phi2,
                    mats[s], yes, yes,
                )  # fmt: skip
                M = mats[s]
                for p in range(ns):
                    vals[s, k, p] = M[srow[p], scol[p]] if srow[p] >= 0 else 0.0
        for i in range(n):
            r_out[k, i] = r[i]
        for i in range(nc):
            r_out[k, n + i] = phi[i]
        for j in range(nu):
            inp_j = Inputs(
                inp_k.s, inp_k.target, FAU[j, k], LFU[j, k], inp.itf, inp.Kitf, inp.g, inp.has_g
            )
            c = co[0]
            _system_terms(
                m, inp_j, ws, q, v, a, lam, c[0], c[1], c[2], c[3], c[4], r2, phi2, mats[0],
                no, yes,
            )  # fmt: skip
            for i in range(n):
                Fu[k, i, j] = r2[i]


@njit(cache=True)
def newmark_newton(
    m, inp, ws, qp, vp, a, lam, co, rs, tol, max_iter, mat, dense, drow, dcol, gidx, q1, v1, r, phi
):  # fmt: skip
    """Newton iterations of one Newmark step at one node (in place on the accelerations
    ``a`` (n) and multipliers ``lam`` (nc)): ``q = qp + bh2 a``, ``v = vp + gh a`` (``co``
    = ``(1, bh2, gh, bh2, gh)``); the engine's matrix ``A`` and residual at ``(q, v, a,
    lam)`` (:func:`.engine._system_terms` into ``mat``, in the model's layout; the
    compressed one is copied to the dense ``dense`` at its entries ``(drow, dcol)`` from
    ``gidx``, as :meth:`Engine.terms <flexmbd.absolute.engine.Engine.terms>`; ``gidx``
    empty: ``mat`` is dense) and the correction ``dy = A^-1 (-rs [r; phi])`` (LAPACK
    ``dgesv``), until ``max|dy| <= tol (1 + max|(a, lam)|)``. Returns the number of
    iterations, 0 when ``max_iter`` did not converge, ``-k`` when the matrix of
    iteration ``k`` is singular or not finite. ``q1``, ``v1`` (n), ``r`` (n), ``phi``
    (nc): scratch (the last iterate's coordinates and residual)."""
    n = qp.shape[0]
    nc = lam.shape[0]
    rhs = np.empty(n + nc)
    bh2, gh = co[1], co[2]
    yes = n >= 0  # a boolean value: Engine.terms' specialization
    for it in range(1, max_iter + 1):
        for i in range(n):
            q1[i] = qp[i] + bh2 * a[i]
            v1[i] = vp[i] + gh * a[i]
        _system_terms(
            m, inp, ws, q1, v1, a, lam, co[0], co[1], co[2], co[3], co[4], r, phi, mat, yes, yes
        )  # fmt: skip
        for i in range(n):
            rhs[i] = -rs[i] * r[i]
        for i in range(nc):
            rhs[n + i] = -rs[n + i] * phi[i]
        if gidx.shape[0]:
            dense[:, :] = 0.0
            W = mat.shape[1]
            for p in range(gidx.shape[0]):
                g = gidx[p]
                dense[drow[p], dcol[p]] = mat[g // W, g % W]
            M = dense
        else:
            M = mat
        try:
            dy = _dense_solve(M, rhs)
        except Exception:  # LinAlgError: singular or not finite
            return -it
        dmax = 0.0
        for i in range(n + nc):
            if not np.isfinite(dy[i]):
                return -it
            dmax = max(dmax, abs(dy[i]))
        for i in range(n):
            a[i] += dy[i]
        for i in range(nc):
            lam[i] += dy[n + i]
        ymax = 0.0
        for i in range(n):
            ymax = max(ymax, abs(a[i]))
        for i in range(nc):
            ymax = max(ymax, abs(lam[i]))
        if dmax <= tol * (1.0 + ymax):
            return it
    return 0


@njit(cache=True)
def constraint_blocks(m, ws, S, TG, Q, rows, slot, Pq, phi, out):
    """``Phi_q[rows][:, cols]`` at ``M`` states: ``out`` (M, len(rows), ncols) from the
    engine's constraint kernel at the coordinates ``Q`` (M, n) with the slot vectors and
    targets ``S``, ``TG`` per state (first axis 1: the same for all); ``slot`` (len(rows),
    ncols): the storage column of each entry in the compressed row layout (-1: not in the
    row's pattern, 0, as :meth:`Engine.constraint_jacobian
    <flexmbd.absolute.engine.Engine.constraint_jacobian>` gives it). ``Pq`` (nc, width),
    ``phi`` (nc): scratch."""
    nc = phi.shape[0]
    lam = np.zeros(nc)
    for k in range(Q.shape[0]):
        Pq[:, :] = 0.0
        _constraints(
            Q[k], m.bodies.nb, m.joints, S[k] if S.shape[0] > 1 else S[0],
            TG[k] if TG.shape[0] > 1 else TG[0], lam, phi, Pq, ws.Hm, False, m.layout.cmap,
            ws.js,
        )  # fmt: skip
        for i in range(rows.shape[0]):
            for j in range(slot.shape[1]):
                out[k, i, j] = Pq[rows[i], slot[i, j]] if slot[i, j] >= 0 else 0.0


class NodeTerms:
    """:func:`node_terms` of one compiled :class:`~flexmbd.absolute.engine.Engine`.

    The matrices come as values on the engine's fixed block pattern
    ``(rows, cols)`` = :meth:`Engine.newton_pattern
    <flexmbd.absolute.engine.Engine.newton_pattern>` of the (n + nc) square Newton
    matrix (a superset of the non-zeros, the same for any state, time and parameters);
    an entry the engine's compressed layout prunes (zero for the model's geometry) is 0.
    """

    def __init__(self, engine):
        self.engine = engine
        rows, cols = engine.newton_pattern()
        #: the pattern's rows and columns (int arrays) in the (n + nc) square matrix
        self.rows, self.cols = rows, cols
        L = engine.model.layout
        N = L.n + L.nc
        if engine.sparse:  # the compressed storage: (row, column) -> its slot, as Engine._dense
            lc = np.repeat(np.arange(N), np.diff(L.Ap))
            key = np.asarray(L.Ai, np.int64) * N + lc
            order = np.argsort(key)
            want = rows * N + cols
            pos = np.minimum(np.searchsorted(key[order], want), max(len(key) - 1, 0))
            hit = (key[order][pos] == want) if len(key) else np.zeros(len(want), bool)
            flat = np.where(hit, np.asarray(L.gidx, np.int64)[order][pos], -1)
            self._srow = np.where(hit, flat // L.width, -1)
            self._scol = np.where(hit, flat % L.width, -1)
        else:  # the dense storage: the matrix itself
            self._srow, self._scol = rows.copy(), cols.copy()
        self._mats = np.zeros((3, N, L.width))
        if engine.sparse:  # Engine._dense's copy of the compressed layout
            self._dense = (
                np.zeros((N, N)),
                np.asarray(L.Ai, np.int64),
                np.repeat(np.arange(N), np.diff(L.Ap)),
                np.asarray(L.gidx, np.int64),
            )
        else:
            z = np.zeros(0, np.int64)
            self._dense = (np.zeros((0, 0)), z, z, z)

    def constraint_blocks(self, times, q, rows, cols):
        """``Phi_q[rows][:, cols]`` (M, len(rows), len(cols)) at the states ``q`` (M, n)
        and times ``times`` (M,) s (dense blocks of the engine's constraint Jacobian, its
        values as :meth:`Engine.constraint_jacobian
        <flexmbd.absolute.engine.Engine.constraint_jacobian>` gives them) in one compiled
        call."""
        e = self.engine
        cs, L = e.cs, e.model.layout
        rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
        slot = np.full((len(rows), len(cols)), -1, np.int64)
        for i, r in enumerate(rows):
            inrow = L.rcol[L.rptr[r] : L.rptr[r + 1]]
            hit = np.isin(cols, inrow)
            slot[i, hit] = L.cmap[cols[hit]]
        times = np.asarray(times, float)
        if cs.rheonomic:
            S = np.empty((len(times),) + cs.s.shape)
            TG = np.empty((len(times), len(cs.target)))
            for k, t in enumerate(times):
                cs.set_time(float(t))
                S[k], TG[k] = cs.s, cs.target
        else:
            S, TG = cs.s[None], cs.target[None]
        nc = e.system.nc
        out = np.empty((len(times), len(rows), len(cols)))
        constraint_blocks(
            e.model, e.ws, np.ascontiguousarray(S, float), np.ascontiguousarray(TG, float),
            np.ascontiguousarray(q, float), rows, slot, np.zeros((nc, L.width)), np.zeros(nc),
            out,
        )  # fmt: skip
        return out

    def inputs_at(self, t):
        """The engine's :class:`~flexmbd.absolute.engine.Inputs` at time ``t`` (s): driver
        slots and targets, the elements' parameters and time functions (the model's
        current input values), as :meth:`Engine.terms
        <flexmbd.absolute.engine.Engine.terms>` sets them."""
        e = self.engine
        e.cs.set_time(t)
        if not e.ft.empty:
            e.ft.refresh()
            e.ft.at(t)
        return e.inputs()

    def newmark(self, t, qp, vp, a, lam, bh2, gh, rs, tol, max_iter):
        """:func:`newmark_newton` at time ``t`` (s): Newton's iterations of one Newmark step
        (``bh2 = beta h^2`` s^2, ``gh = gamma h`` s; predictors ``qp``, ``vp`` (n);
        rows scaled by ``rs`` (n + nc); tolerance ``tol`` on ``max|dy|`` relative to
        ``1 + max|(a, lam)|``) in one compiled call, in place on ``a`` (n) and ``lam``
        (nc). Returns the iterations, 0 if ``max_iter`` did not converge, ``-k`` for a
        singular matrix at iteration ``k``."""
        e = self.engine
        n, nc = len(qp), len(lam)
        co = np.array([1.0, bh2, gh, bh2, gh])
        return newmark_newton(
            e.model, self.inputs_at(t), e.ws, qp, vp, a, lam, co, rs, float(tol),
            int(max_iter), self._mats[0], *self._dense, np.empty(n), np.empty(n),
            np.empty(n), np.empty(nc),
        )  # fmt: skip

    def evaluate(self, times, q, v, a, lam, u=None, set_inputs=None, jacobian=True, base=None):
        """``(r, (A_q, A_v, M), F_u)`` at the nodes ``times`` (N,) s with unknowns ``q, v,
        a`` (N, n) and ``lam`` (N, nc): ``r`` (N, n + nc) the residuals ``[F; phi]``;
        with ``jacobian`` the three matrices as (N, len(rows)) values on :attr:`rows`,
        :attr:`cols` (``A_q = [[dF/dq, Phi_q^T], [Phi_q, 0]]``, ``A_v`` with ``dF/dv`` in its
        top-left block, ``M`` the mass matrix in its top-left block), else None; ``F_u``
        (N, n, nu) the input columns ``dF/du`` (``u`` (N, nu) the inputs per node, written
        into the model by ``set_inputs(u_k)``; ``F`` is affine in them, so each column is
        the change of ``F`` for a unit step, from ``base`` (N, n); default ``r``'s ``F``).
        The inputs are left at the last node's."""
        e = self.engine
        cs, ft = e.cs, e.ft
        times = np.asarray(times, float)
        N = len(times)
        nu = 0 if u is None else u.shape[1]
        timed = cs.rheonomic
        S = np.empty((N,) + cs.s.shape) if timed else None
        TG = np.empty((N, len(cs.target))) if timed else None
        if not ft.empty:
            ft.refresh()  # the elements' parameters (as Engine.terms before each call)
        FA = np.empty((N, len(ft.fa)))
        LF = np.empty((N,) + ft.F.shape)
        FAU = np.empty((nu, N, len(ft.fa)))
        LFU = np.empty((nu, N) + ft.F.shape)
        for k in range(N):
            t = float(times[k])
            if nu:
                set_inputs(u[k])
            cs.set_time(t)
            if timed:
                S[k] = cs.s
                TG[k] = cs.target
            if not ft.empty:
                ft.at(t)
            FA[k] = ft.fa
            LF[k] = ft.F
            for j in range(nu):
                uj = u[k].copy()
                uj[j] += 1.0
                set_inputs(uj)
                ft.at(t)
                FAU[j, k] = ft.fa
                LFU[j, k] = ft.F
            if nu:
                set_inputs(u[k])
        if nu and not ft.empty:
            ft.at(float(times[-1]))
        if not timed:
            S, TG = cs.s[None], cs.target[None]
        r = np.empty((N, e.system.n + e.system.nc))
        ns = len(self.rows) if jacobian else 0
        vals = np.empty((3, N, ns))
        Fu = np.empty((N, e.system.n, nu))
        c = lambda x: np.ascontiguousarray(x, float)  # noqa: E731
        node_terms(
            e.model, e.inputs(), e.ws, c(S), c(TG), FA, LF, FAU, LFU, c(q), c(v), c(a),
            c(lam), NODE_COEFFICIENTS, bool(jacobian), self._srow[:ns], self._scol[:ns],
            self._mats, r, vals, Fu,
        )  # fmt: skip
        F0 = r[:, : e.system.n] if base is None else np.asarray(base, float)
        return r, ((vals[0], vals[1], vals[2]) if jacobian else None), Fu - F0[:, :, None]
