r"""Flexible bodies in absolute coordinates: reference frame (r, e) plus modal coordinates.

Coordinates of a flexible body ``b``: its frame origin ``r`` and Euler parameters ``e``
(7 coordinates, in the rigid block of the coordinate vector like every body) and its
``n`` modal coordinates ``q_f`` (in the modal block after all ``7 nb`` reference
coordinates, bodies in declaration order). The floating-frame equations of
:mod:`flexmbd.flexible.ffr` are written for body-axes kinematic quantities ::

    w = 2 G(e) de,   alpha = 2 G(e) dde,   a = A(e)^T ddr,   g_b = A(e)^T g

(``G``, ``A`` the polynomial Euler-parameter matrices of :mod:`.quaternion`; the
origin acceleration ``a`` in body axes removes every term of the quadratic velocity
vector that carries the origin velocity, see :func:`flexmbd.flexible.ffr.inertia_terms`).
With the body-axes generalized force ::

    F = F_in(q_f, dq_f, w, alpha, a, ddq_f) + K q_f + D dq_f + K_G(p) q_f

(inertia, elastic, modal damping, geometric stiffening) the virtual power
``dphi' . F_w + dr' . F_v + dq_f . F_f`` with ``dphi' = 2 G de`` and ``dr' = A^T dr``
gives the residual in absolute coordinates ::

    R_r = A(e) F_v,   R_e = 2 G(e)^T F_w,   R_f = F_f

and gravity the generalized force ``Q = [A Qg_v; 2 G^T Qg_w; Qg_f]`` with the exact
distributed ``Qg(q_f, g_b)`` of the invariants (:func:`~flexmbd.flexible.ffr.gravity_terms`).

Exact Jacobians (chain rule through the body-axes quantities) ::

    dw/dde = dalpha/ddde = 2 G(e),  dw/de = -2 G(de),  dalpha/de = -2 G(dde),
    da/dddr = A^T,  da/de = G TE(ddr) - G(E^T ddr)  (same for g_b with g),
    d(A F_v)/de |F fixed = dAs(e, F_v),   d(2 G^T F_w)/de |F fixed = 2 TG(F_w)

so ``dR/dddq`` (the "mass" block), ``dR/ddq`` and ``dR/dq`` are assembled from the
partial derivatives of ``F`` (:func:`~flexmbd.flexible.ffr.inertia_terms`) and the
geometric-stiffness terms below. Without stiffening ``dR/dddq`` is the symmetric mass
matrix ``T^T M(q_f) T`` (``T`` the map above); the load-dependent part makes it slightly
unsymmetric.

Geometric stiffening (dynamic stiffening, review eq. 19-21)
-----------------------------------------------------------
``K_G(p) = sum_k p_k K_k`` with the unit matrices of the reduction
(:mod:`flexmbd.fem.geometric`) and the load parameters, all in body axes:

* the six products ``w_i w_j`` of the mean-axis angular velocity ``w_p = w + Gamma_w dq_f``
  and the mean-axis accelerations ``[alpha_p; a_p] = M_rr0^-1 (F_r - C(w_p))``
  (``a_p - g_b`` for the origin), with ``F_r`` the *current* inertia resultant (first six
  rows of ``F_in``, unknowns of the Newton iteration): :mod:`flexmbd.flexible.mean_axis`,
  which makes the stiffening the same in every body frame;
* the wrenches the surroundings apply at the body's non-reference interfaces
  (joint reactions through interface frames), **lagged by one step**: taken from the
  reactions of the last accepted step (:meth:`FlexibleSet.set_interface_loads`; the
  static solver updates them with every Newton iterate). Reference-interface
  wrenches of a Craig-Bampton body are the support reactions of the unit stress
  states and do not enter.

The current-state loads enter the Newton matrix exactly, by the chain rule through
``F_r`` (whose partial derivatives ``inertia_terms`` returns) and ``w_p``:
``d(K_G q) = K_G dq + H (dF_r - dC/dw dw_p) + (Kw q) dp/dw dw_p`` with
``H = [Kal q, Ka q] M_rr0^-1``, so the modal accelerations and rates enter too
(mean_axis docs); ``dg_b/de`` through ``-Ka q``; the lagged interface wrenches are
constants within a step. ``FlexibleBody(geometric_stiffening=False)`` (or a reduced
body without unit matrices) switches the term off for that body.

Energies: kinetic ``u^T M u / 2`` with the body-frame speeds, strain ``q^T K q / 2``
(reported in the ``spring`` potential), gravity ``-g . (m r + A Sbar)``, modal damping
power ``dq^T D dq``. The stiffening forces are not derived from a potential and
their work shows up in the numerical-dissipation balance.
"""

import numpy as np

from ..flexible.ffr import gravity_terms, inertia_terms, kinetic_energy
from ..flexible.ffr import mass_matrix as ffr_mass_matrix
from ..flexible.mean_axis import centrifugal_resultant, rigid_fit, stiffening_weights
from ..model.bodies import Ground
from ..spatial import skew
from .quaternion import TE, TG, Apoly, Emat, Gmat, dAs

__all__ = ["FlexibleSet", "FlexSDA", "InterfaceLoadTable", "OMEGA_PRODUCTS", "interface_wrenches"]

OMEGA_PRODUCTS = ("w1w1", "w2w2", "w3w3", "w1w2", "w2w3", "w1w3")


def _dAtr(e, x):
    """``d(A(e)^T x)/de`` (3, 4) for a fixed world vector ``x`` (``A^T x = G(e) E(e)^T x``)."""
    z = TE(x) @ e  # E(e)^T x
    return Gmat(e) @ TE(x) - Gmat(z)


def _dp_dw(w):
    """Derivative (6, 3) of the six angular-velocity products w.r.t. ``w``."""
    w1, w2, w3 = w
    return np.array(
        [[2 * w1, 0, 0], [0, 2 * w2, 0], [0, 0, 2 * w3], [w2, w1, 0], [0, w3, w2], [w3, 0, w1]],
        dtype=float,
    )


def _block_index(d):
    """Rows and columns (row-major) of the dense COO block on body data ``d``'s
    coordinates (``d.idx``, 7 + n)."""
    n = len(d.idx)
    return np.repeat(d.idx, n), np.tile(d.idx, n)


def _joined(blocks):
    """One COO triplet (int64 rows, int64 columns, values) of the ``(rows, cols, vals)``
    blocks (empty arrays for none)."""
    if not blocks:
        z = np.zeros(0)
        return z.astype(np.int64), z.astype(np.int64), z
    rows, cols, vals = zip(*blocks)
    return (
        np.concatenate(rows).astype(np.int64),
        np.concatenate(cols).astype(np.int64),
        np.concatenate(vals),
    )


class _FlexData:
    """Constant data of one flexible body in a compiled system."""

    def __init__(self, body, index, col0):
        self.body = body
        self.index = index  # body position (rigid block 7*index)
        self.col0 = col0  # first modal column
        inv = body.invariants()
        self.inv = inv
        self.n = inv.n_modes
        self.K = np.asarray(inv.K, float)
        self.D = np.asarray(inv.D, float)
        n = self.n
        self.idx = np.concatenate([7 * index + np.arange(7), col0 + np.arange(n)])
        rb = body.reduced
        names = list(rb.kg_names)
        on = bool(body.geometric_stiffening) and rb.kg_unit.shape[0] > 0
        self.stiffening = on

        def unit(name):
            if name in names:
                return np.asarray(rb.kg_unit[names.index(name)], float)
            return np.zeros((n, n))

        if on:
            self.Kw = np.stack([unit(k) for k in OMEGA_PRODUCTS])
            self.Kal = np.stack([unit(f"alpha{i + 1}") for i in range(3)])
            self.Ka = np.stack([unit(f"a{i + 1}") for i in range(3)])
            self.Kbody = np.concatenate([self.Kw, self.Kal, self.Ka])  # stiffening_weights order
            # interface wrench unit matrices (non-reference interfaces present in kg_names)
            # interfaces with non-zero unit matrices (a Craig-Bampton reference interface
            # carries the support reactions of the unit states: its matrices are zero)
            comps = ("mx", "my", "mz", "fx", "fy", "fz")
            self.itf_names = [
                nm for nm in rb.interface_names if any(np.any(unit(f"{nm}.{c}")) for c in comps)
            ]
            comps = ("mx", "my", "mz", "fx", "fy", "fz")
            self.Kitf = (
                np.stack([unit(f"{nm}.{c}") for nm in self.itf_names for c in comps])
                if self.itf_names
                else np.zeros((0, n, n))
            )
        else:
            self.itf_names = []
            self.Kitf = np.zeros((0, n, n))
        # M_rr0^-1 and the rigid fit of the modes (mean-axis load parameters)
        self.fit = rigid_fit(inv)
        self.itf_load = np.zeros(len(self.Kitf))  # lagged interface wrench components
        self.K_itf = np.zeros((n, n))

    def set_interface_loads(self, loads):
        """``loads``: dict interface name -> wrench [m; f] (body axes) applied by the
        surroundings."""
        v = np.zeros(len(self.Kitf))
        for k, nm in enumerate(self.itf_names):
            if nm in loads:
                v[6 * k : 6 * k + 6] = loads[nm]
        self.itf_load = v
        self.K_itf = np.tensordot(v, self.Kitf, axes=1) if len(v) else np.zeros((self.n, self.n))


class InterfaceLoadTable:
    """Where joint reactions load the stiffened interfaces of flexible bodies.

    One row per (joint, side) whose frame is an :class:`~flexmbd.InterfaceFrame` with a
    lagged load (``d.itf_names`` of a body with geometric stiffening), in the order of the
    joints, child frame before parent frame. The load vector ``v`` concatenates the
    wrench components ``[m; f]`` (body axes) of every such interface, body by body
    (``load_off``: first component of each flexible body, ``6 len(d.itf_names)`` of them).
    Built once per system; its arrays feed the compiled engine
    (:class:`~flexmbd.absolute.engine.Interfaces`), :func:`interface_wrenches` is the
    numpy reference.
    """

    def __init__(self, joints, flex):
        self.load_off = np.zeros(len(flex), np.int64)
        o = 0
        for kf, d in enumerate(flex):
            self.load_off[kf] = o
            o += 6 * len(d.itf_names)
        self.n_load = o
        rows = []
        for k, j in enumerate(joints):
            for fr, sign in ((j.child_frame, 1.0), (j.parent_frame, -1.0)):
                name = getattr(fr, "interface_name", None)
                for kf, d in enumerate(flex):
                    if fr.body is not d.body or name not in d.itf_names:
                        continue
                    off = self.load_off[kf] + 6 * d.itf_names.index(name)
                    X = np.asarray(fr.modes, float)[3:]
                    rows.append((k, sign, d.index, off, fr.position, X, d.col0, d.n))
        m = len(rows)
        self.joint = np.array([r[0] for r in rows], np.int64)
        self.sign = np.array([r[1] for r in rows], float)
        self.body = np.array([r[2] for r in rows], np.int64)
        self.off = np.array([r[3] for r in rows], np.int64)
        self.s0 = np.array([r[4] for r in rows], float).reshape(m, 3)
        self.X = (
            np.ascontiguousarray(np.concatenate([r[5].ravel() for r in rows]))
            if rows
            else np.zeros(0)
        )
        self.X_off = np.concatenate([[0], np.cumsum([3 * r[7] for r in rows])]).astype(np.int64)
        self.col0 = np.array([r[6] for r in rows], np.int64)
        self.n = np.array([r[7] for r in rows], np.int64)

    def __len__(self):
        return len(self.joint)


def interface_wrenches(tab, q, R, r, reac, FC, pC):
    """Interface wrenches of the joints (numpy reference of the compiled engine's).

    ``tab``: :class:`InterfaceLoadTable`; ``q`` coordinates; ``R`` (nb, 3, 3), ``r``
    (nb, 3): body rotations and frame origins (world, m); ``reac`` (nj, 6): joint
    reactions ``[n; f]`` (N m, N) on the child in the child joint frame, whose rotation
    and origin in the world are ``FC`` (nj, 3, 3) and ``pC`` (nj, 3). Returns the load
    vector ``v`` (``tab.n_load``): per interface the wrench ``[m; f]`` its joints apply
    to the body, in body axes, about the deformed interface origin.
    """
    v = np.zeros(tab.n_load)
    for c in range(len(tab.joint)):
        k, b, n = tab.joint[c], tab.body[c], tab.n[c]
        X = tab.X[tab.X_off[c] : tab.X_off[c] + 3 * n].reshape(3, n)
        qf = q[tab.col0[c] : tab.col0[c] + n]
        n_w, f_w = FC[k] @ reac[k, :3], FC[k] @ reac[k, 3:]
        p_itf = r[b] + R[b] @ (tab.s0[c] + X @ qf)
        n_w = tab.sign[c] * (n_w + np.cross(pC[k] - p_itf, f_w))
        f_w = tab.sign[c] * f_w
        o = tab.off[c]
        v[o : o + 3] += R[b].T @ n_w
        v[o + 3 : o + 6] += R[b].T @ f_w
    return v


class FlexibleSet:
    """All flexible bodies of an absolute system: residual blocks, mass blocks, gravity, energies.

    ``bodies``: the system's body list; ``nb`` bodies in total; modal columns start at
    ``7 nb``. Attributes ``flex`` (list of :class:`_FlexData`), ``n_modal`` (total).
    """

    def __init__(self, bodies, flexible_bodies, index):
        self.nb = len(bodies)
        col = 7 * self.nb
        self.flex = []
        for b in flexible_bodies:
            d = _FlexData(b, index[id(b)], col)
            self.flex.append(d)
            col += d.n
        self.n_modal = col - 7 * self.nb
        self.by_index = {d.index: d for d in self.flex}

    def __len__(self):
        return len(self.flex)

    # -- kinematic quantities --------------------------------------------------------
    @staticmethod
    def _split(d, q, qd=None, qdd=None):
        i = d.index
        e = q[7 * i + 3 : 7 * i + 7]
        qf = q[d.col0 : d.col0 + d.n]
        out = [e, qf]
        for x in (qd, qdd):
            if x is not None:
                out += [x[7 * i : 7 * i + 3], x[7 * i + 3 : 7 * i + 7], x[d.col0 : d.col0 + d.n]]
        return out

    def modal(self, q, d):
        """Modal coordinates of flexible body data ``d``."""
        return q[d.col0 : d.col0 + d.n]

    # -- residual and Jacobians ------------------------------------------------------
    def body_residual(self, d, q, qd, qdd, g=None, derivatives=True):
        """Residual ``R_b`` (7+n) of one body and its blocks ``dR/dddq, dR/dq, dR/ddq``."""
        e, qf, rd, ed, qfd, rdd, edd, qfdd = self._split(d, q, qd, qdd)
        inv = d.inv
        n = d.n
        A, G = Apoly(e), Gmat(e)
        w = 2.0 * G @ ed
        al = 2.0 * G @ edd
        a = A.T @ rdd
        gb = A.T @ (np.zeros(3) if g is None else g)
        res = inertia_terms(inv, qf, qfd, w, al, a, qfdd, derivatives=derivatives)
        F = res[0] if derivatives else res
        F = F.copy()
        F[6:] += d.K @ qf + d.D @ qfd
        if d.stiffening:
            # load parameters from mean-axis kinematics (flexmbd.flexible.mean_axis)
            Minv, Gam = d.fit
            p, wp = stiffening_weights(inv, qfd, w, F[:6], gb, d.fit)
            KG = np.tensordot(p, d.Kbody, axes=1) + d.K_itf
            F[6:] += KG @ qf
        R = np.concatenate([A @ F[3:6], 2.0 * G.T @ F[:3], F[6:]])
        if not derivatives:
            return R
        _, Mb, Fq, Fqd, Fw = res
        Fq = Fq.copy()
        Fqd = Fqd.copy()
        Fw = Fw.copy()
        Fal = Mb[:, :3].copy()
        Fa = Mb[:, 3:6].copy()
        Fqdd = Mb[:, 6:].copy()
        Fg = np.zeros((6 + n, 3))
        Fq[6:] += d.K
        Fqd[6:] += d.D
        if d.stiffening:
            # f_G = K_G(p) q with p from (w_p, M_rr0^-1 (F_r - C(w_p))): chain rule through
            # the inertia resultant F_r (rows :6, untouched by stiffening)
            dC = centrifugal_resultant(inv, wp, derivative=True)[1]
            Ga = np.einsum("kij,j->ik", d.Ka, qf)
            H = np.hstack([np.einsum("kij,j->ik", d.Kal, qf), Ga]) @ Minv
            B = np.einsum("kij,j->ik", d.Kw, qf) @ _dp_dw(wp) - H @ dC
            Fq[6:] += KG + H @ Fq[:6]
            Fqd[6:] += H @ Fqd[:6] + B @ Gam[:3]
            Fw[6:] += H @ Fw[:6] + B
            Fal[6:] += H @ Fal[:6]
            Fa[6:] += H @ Fa[:6]
            Fqdd[6:] += H @ Fqdd[:6]
            Fg[6:] -= Ga

        def out(X):  # rows [w; v; f] of body-axes derivatives -> rows [r; e; f]
            return np.concatenate([A @ X[3:6], 2.0 * G.T @ X[:3], X[6:]])

        N = 7 + n
        M = np.zeros((N, N))
        M[:, :3] = out(Fa) @ A.T
        M[:, 3:7] = out(Fal) @ (2.0 * G)
        M[:, 7:] = out(Fqdd)
        D = np.zeros((N, N))
        D[:, 3:7] = out(Fw) @ (2.0 * G)
        D[:, 7:] = out(Fqd)
        K = np.zeros((N, N))
        dFe = Fw @ (-2.0 * Gmat(ed)) + Fal @ (-2.0 * Gmat(edd)) + Fa @ _dAtr(e, rdd)
        if g is not None and d.stiffening:
            dFe = dFe + Fg @ _dAtr(e, g)
        K[:, 3:7] = out(dFe)
        K[:3, 3:7] += dAs(e, F[3:6])
        K[3:7, 3:7] += 2.0 * TG(F[:3])
        K[:, 7:] = out(Fq)
        return R, M, K, D

    def residual(self, q, qd, qdd, g=None, derivatives=True):
        """Residual contributions (added into a full-length vector) and COO blocks."""
        R = np.zeros(len(q))
        blocks = ([], [], [])  # M, K, D
        for d in self.flex:
            out = self.body_residual(d, q, qd, qdd, g, derivatives)
            if derivatives:
                r, *MKD = out
                rows, cols = _block_index(d)
                for b, X in zip(blocks, MKD):
                    b.append((rows, cols, X.ravel()))
            else:
                r = out
            R[d.idx] += r
        if not derivatives:
            return R
        return (R, *(_joined(b) for b in blocks))

    def mass_triplets(self, q, stiffening=False):
        """COO triplets of the mass blocks (symmetric ``T^T M T``; with ``stiffening`` the
        exact ``dR/dddq`` including the load-dependent geometric-stiffness coupling)."""
        blocks = []
        for d in self.flex:
            if stiffening and d.stiffening:
                z = np.zeros_like(q)
                _, M, _, _ = self.body_residual(d, q, z, z, None, True)
            else:
                M = self.mass_block(d, q)
            blocks.append((*_block_index(d), M.ravel()))
        return _joined(blocks)

    def mass_block(self, d, q):
        """Symmetric mass block (7+n) of body data ``d`` in absolute coordinates."""
        e, qf = self._split(d, q)
        A, G = Apoly(e), Gmat(e)
        Mb = ffr_mass_matrix(d.inv, qf)
        n = d.n
        T = np.zeros((6 + n, 7 + n))  # body-axes speeds (w, v, dq) per absolute rates
        T[:3, 3:7] = 2.0 * G
        T[3:6, :3] = A.T
        T[6:, 7:] = np.eye(n)
        return T.T @ Mb @ T

    # -- gravity ---------------------------------------------------------------------
    def gravity(self, q, g, Q, jacobian=False):
        """Add the distributed gravity forces to ``Q``; return COO triplets of ``dQ/dq``."""
        blocks = []
        for d in self.flex:
            e, qf = self._split(d, q)
            A, G = Apoly(e), Gmat(e)
            gb = A.T @ g
            Qg, Qq, Qgg = gravity_terms(d.inv, qf, gb)
            Q[d.idx] += np.concatenate([A @ Qg[3:6], 2.0 * G.T @ Qg[:3], Qg[6:]])
            if not jacobian:
                continue
            n = d.n
            N = 7 + n
            dQe = Qgg @ _dAtr(e, g)

            def out(X, A=A, G=G):
                return np.concatenate([A @ X[3:6], 2.0 * G.T @ X[:3], X[6:]])

            K = np.zeros((N, N))
            K[:, 3:7] = out(dQe)
            K[:3, 3:7] += dAs(e, Qg[3:6])
            K[3:7, 3:7] += 2.0 * TG(Qg[:3])
            K[:, 7:] = out(Qq)
            blocks.append((*_block_index(d), K.ravel()))
        return _joined(blocks) if jacobian else None

    def gravity_potential(self, q, g):
        out = 0.0
        for d in self.flex:
            e, qf = self._split(d, q)
            A = Apoly(e) / float(e @ e)
            r = q[7 * d.index : 7 * d.index + 3]
            Sbar = d.inv.c + d.inv.St @ qf
            out -= float(g @ (d.inv.mass * r + A @ Sbar))
        return out

    # -- energies --------------------------------------------------------------------
    def body_speeds(self, d, q, qd):
        """Body-frame speeds ``(w, v, dq_f)`` (body axes) with the normalized rotation."""
        e, qf, rd, ed, qfd = self._split(d, q, qd)
        n2 = float(e @ e)
        A = Apoly(e) / n2
        w = 2.0 * Gmat(e) @ ed / n2
        return np.concatenate([w, A.T @ rd, qfd])

    def kinetic_energy(self, q, qd):
        return sum(
            kinetic_energy(d.inv, self.modal(q, d), self.body_speeds(d, q, qd)) for d in self.flex
        )

    def strain_energy(self, q):
        return sum(0.5 * float(self.modal(q, d) @ d.K @ self.modal(q, d)) for d in self.flex)

    def damping_power(self, qd):
        return sum(float(self.modal(qd, d) @ d.D @ self.modal(qd, d)) for d in self.flex)

    def world_omega(self, d, q, qd):
        i = d.index
        e, ed = q[7 * i + 3 : 7 * i + 7], qd[7 * i + 3 : 7 * i + 7]
        return 2.0 * Emat(e) @ ed


class FlexPointForce:
    """A :class:`~flexmbd.PointForce` at a deforming frame (interface or node) of a flexible body.

    The point ``P = r + A (s0 + U q_f)`` (``U`` the frame's translation modes) moves with
    the deformation; a world force ``f`` (``frame="world"``) or a force fixed in the body
    reference axes ``f = A f_b`` (``frame="body"``) gives, by virtual power
    ``f . dP = f . (dr + dphi x rho + A U dq_f)`` with ``rho = A (s0 + U q_f)``::

        Q_r = f,   Q_e = 2 E(e)^T (rho x f),   Q_f = U^T A^T f.

    Jacobians (the element sees the normalized rotation; ``dphi = 2 E de``)::

        world:  dQ_e/de = 2 TE(n) + 2 E^T f~ rho~ 2E,       dQ_e/dq_f = -2 E^T f~ A U,
                dQ_f/de = U^T A^T f~ 2E,                    dQ_f/dq_f = 0
        body:   dQ_e/de = 2 TE(n) - 2 E^T n~ 2E,  dQ_r/de = -f~ 2E,
                dQ_e/dq_f = -2 E^T A f_b~ U,       dQ_f = 0 (U^T f_b constant)

    with ``n = rho x f``.
    """

    def __init__(self, element, data):
        self.el = element
        self.d = data
        fr = element.attachment
        self.s0 = np.asarray(fr.position, float)
        self.U = np.asarray(fr.modes, float)[3:]

    def _kin(self, q):
        d = self.d
        i = d.index
        e = q[7 * i + 3 : 7 * i + 7]
        n2 = float(e @ e)
        A = Apoly(e) / n2
        E = Emat(e)
        qf = q[d.col0 : d.col0 + d.n]
        s = self.s0 + self.U @ qf
        return e, A, E, qf, s

    def force(self, t, q):
        e, A, E, qf, s = self._kin(q)
        fv = self.el.force(t)
        f = A @ fv if self.el.frame == "body" else fv
        return f, A @ s, A, E

    def evaluate(self, t, q, Q, jacobian=False):
        d = self.d
        i = d.index
        f, rho, A, E = self.force(t, q)
        n = np.cross(rho, f)
        Q[7 * i : 7 * i + 3] += f
        Q[7 * i + 3 : 7 * i + 7] += 2.0 * E.T @ n
        Q[d.col0 : d.col0 + d.n] += self.U.T @ (A.T @ f)
        if not jacobian:
            return None

        e = q[7 * i + 3 : 7 * i + 7]
        E2 = 2.0 * E
        N = 7 + d.n
        K = np.zeros((N, N))
        AU = A @ self.U
        if self.el.frame == "body":
            K[:3, 3:7] = -skew(f) @ E2
            K[3:7, 3:7] = 2.0 * TE(n) - E2.T @ skew(n) @ E2
            fb = A.T @ f
            K[3:7, 7:] = -E2.T @ A @ skew(fb) @ self.U
        else:
            K[3:7, 3:7] = 2.0 * TE(n) + E2.T @ skew(f) @ skew(rho) @ E2
            K[3:7, 7:] = -E2.T @ skew(f) @ AU
            K[7:, 3:7] = self.U.T @ A.T @ skew(f) @ E2
        del e
        return (*_block_index(d), K.ravel())

    def power(self, t, q, qd):
        d = self.d
        i = d.index
        f, rho, A, E = self.force(t, q)
        w = (
            2.0
            * E
            @ qd[7 * i + 3 : 7 * i + 7]
            / float(q[7 * i + 3 : 7 * i + 7] @ q[7 * i + 3 : 7 * i + 7])
        )
        vP = qd[7 * i : 7 * i + 3] + np.cross(w, rho) + A @ (self.U @ qd[d.col0 : d.col0 + d.n])
        return float(f @ vP)


class FlexSDA:
    """A :class:`~flexmbd.SpringDamperActuator` with an end at a deforming frame.

    Each end ``b`` (``i``, ``j``) is the point ``P_b = r_b + A_b s_b``, ``s_b = s0 + U_b q_f``
    (``U_b`` the frame's translation modes; empty for a rigid end or a point fixed in
    the floating frame; ``P_b`` the fixed point for a ground end). With the end's
    coordinates ``z_b = (r_b, e_b, q_fb)`` and (unit ``e``, ``dphi = 2 E de``)::

        G_b = dP_b/dz_b = dv_P/dzd_b = [I, -rho~ 2E, A U],     rho = A s,
        v_P = rd + w x rho + A U q_fd,   w = 2 E(e) ed,
        V_b = dv_P/dz_b = [0, rho~ 2E(ed) - w~ rho~ 2E - (A U q_fd)~ 2E, w~ A U].

    ``d = P_j - P_i`` (end signs ``sd = (-1, +1)``), ``l = |d|``, ``u = d / l``,
    ``ldot = u . dd``, ``f = k (l - l0) + c ldot + fa(t)``, ``g = f u``; end ``a`` gets the
    world force ``F_a = sF_a g`` with ``sF = (+1, -1)`` and the generalized force
    ``Q_a = G_a^T F_a`` (as :class:`FlexPointForce`). Exact Jacobians
    (``P = I - u u^T``)::

        df/dz_b  = sd_b [(k u + c P dd / l)^T G_b + c u^T V_b]
        dg/dz_b  = u df/dz_b + sd_b (f / l) P G_b
        dQ_a/dz_b  = sF_a G_a^T dg/dz_b + delta_ab K_geo(F_a)
        dQ_a/dzd_b = sF_a sd_b c G_a^T u u^T G_b

    ``K_geo(F)`` is the derivative of ``G^T`` for a fixed world force, the world-force
    Jacobian of :class:`FlexPointForce`. Returned as COO triplets of ``dQ/dq`` and
    ``dQ/dqd`` (the convention of ``AbsoluteSystem.generalized_forces``).
    """

    def __init__(self, element, index, by_index):
        self.el = element
        self.ends = []
        deform = {end: fr for end, _, fr in element.deforming_ends()}
        for end, body, point in (
            (0, element.body_i, element.point_i),
            (1, element.body_j, element.point_j),
        ):
            if isinstance(body, Ground):
                self.ends.append(None)
                continue
            i = index[id(body)]
            fr = deform.get(end)
            d = by_index.get(i)
            if fr is not None and d is not None:
                U = np.asarray(fr.modes, float)[3:]
                s0 = np.asarray(fr.position, float)
                cols = np.arange(d.col0, d.col0 + d.n)
            else:
                U = np.zeros((3, 0))
                s0 = np.asarray(point, float)
                cols = np.zeros(0, dtype=np.int64)
            idx = np.concatenate([7 * i + np.arange(7), cols]).astype(np.int64)
            self.ends.append((i, s0, U, cols, idx))
        self.points = (np.asarray(element.point_i, float), np.asarray(element.point_j, float))

    def _end(self, k, q, qd):
        """Point, velocity, ``G``, ``V``, arm ``rho`` and ``(A, E, A U)`` of end ``k``."""
        e_ = self.ends[k]
        if e_ is None:
            z = np.zeros(3)
            return self.points[k], z, None, None, None, None
        i, s0, U, cols, idx = e_
        e = q[7 * i + 3 : 7 * i + 7]
        ed = qd[7 * i + 3 : 7 * i + 7]
        A = Apoly(e) / float(e @ e)
        E2 = 2.0 * Emat(e)
        rho = A @ (s0 + U @ q[cols])
        AU = A @ U
        w = E2 @ ed
        vf = AU @ qd[cols]
        vP = qd[7 * i : 7 * i + 3] + np.cross(w, rho) + vf

        Rs = skew(rho)
        n = 7 + len(cols)
        G = np.zeros((3, n))
        G[:, :3] = np.eye(3)
        G[:, 3:7] = -Rs @ E2
        G[:, 7:] = AU
        V = np.zeros((3, n))
        Ws = skew(w)
        V[:, 3:7] = Rs @ (2.0 * Emat(ed)) - Ws @ Rs @ E2 - skew(vf) @ E2
        V[:, 7:] = Ws @ AU
        return q[7 * i : 7 * i + 3] + rho, vP, G, V, rho, (E2, AU)

    def kinematics(self, q, qd):
        """``(d, dd, l, ends)`` with ``ends`` the per-end tuples of :meth:`_end`."""
        ends = [self._end(k, q, qd) for k in range(2)]
        d = ends[1][0] - ends[0][0]
        return d, ends[1][1] - ends[0][1], self.el.line_length(d), ends

    def length(self, q):
        """Current length ``l`` (m) with the deformed attachment points."""
        return self.kinematics(q, np.zeros_like(q))[2]

    def evaluate(self, t, q, qd, Q, jacobian=False):
        """Add ``Q``; with ``jacobian`` return the triplets ``(dQ/dq, dQ/dqd)``."""
        el = self.el
        d, dd, length, ends = self.kinematics(q, qd)
        u = d / length
        ldot = float(u @ dd)
        k, c = el.k, el.c
        f = el.line_force(t, length, ldot)
        g = f * u
        sF, sd = (1.0, -1.0), (-1.0, 1.0)
        for a in range(2):
            if self.ends[a] is not None:
                Q[self.ends[a][4]] += ends[a][2].T @ (sF[a] * g)
        if not jacobian:
            return None

        P = np.eye(3) - np.outer(u, u)
        a_vec = k * u + (c / length) * (P @ dd)
        dg = {}
        for b in range(2):
            if self.ends[b] is None:
                continue
            G, V = ends[b][2], ends[b][3]
            df = sd[b] * (a_vec @ G + c * (u @ V))
            dg[b] = np.outer(u, df) + sd[b] * (f / length) * (P @ G)
        Kr, Kc, Kv, Cr, Cc, Cv = [], [], [], [], [], []
        for a in range(2):
            if self.ends[a] is None:
                continue
            Ga, idx_a = ends[a][2], self.ends[a][4]
            for b in range(2):
                if self.ends[b] is None:
                    continue
                Gb, idx_b = ends[b][2], self.ends[b][4]
                K = sF[a] * (Ga.T @ dg[b])
                C = (sF[a] * sd[b] * c) * np.outer(Ga.T @ u, u @ Gb)
                if a == b:
                    F = sF[a] * g
                    rho = ends[a][4]
                    E2, AU = ends[a][5]
                    Fs = skew(F)
                    K[3:7, 3:7] += 2.0 * TE(np.cross(rho, F)) + E2.T @ Fs @ skew(rho) @ E2
                    K[3:7, 7:] += -E2.T @ Fs @ AU
                    K[7:, 3:7] += AU.T @ Fs @ E2
                Kr.append(np.repeat(idx_a, len(idx_b)))
                Kc.append(np.tile(idx_b, len(idx_a)))
                Kv.append(K.ravel())
                Cr.append(Kr[-1])
                Cc.append(Kc[-1])
                Cv.append(C.ravel())
        cat = np.concatenate
        return (cat(Kr), cat(Kc), cat(Kv)), (cat(Cr), cat(Cc), cat(Cv))

    def energies(self, t, q, qd):
        """``(spring potential, damper power >= 0, actuator power)``."""
        el = self.el
        d, dd, length, _ = self.kinematics(q, qd)
        ldot = float(d @ dd) / length
        e = length - el.free_length()
        return 0.5 * el.k * e * e, el.c * ldot * ldot, -el.actuator_force(t) * ldot

    def tension_at(self, t, q, qd):
        """Force along the line ``f`` (N, positive in tension) and the unit vector ``u``."""
        el = self.el
        d, dd, length, _ = self.kinematics(q, qd)
        u = d / length
        return el.line_force(t, length, float(u @ dd)), u
