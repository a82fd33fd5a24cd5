"""Force elements mapped to Euler-parameter coordinates.

A force element reports body wrenches ``F_b = [n; f]`` (world axes, about the
body origin) and their body-level Jacobians ``K_ab = dF_a/dx_b``,
``C_ab = dF_a/dV_b`` (:mod:`flexmbd.model.forces`). In absolute coordinates
``q_b = (r, e)``, ``qd_b = (rd, ed)``, with ``x_b = [dphi; dr]`` and
``V_b = [w; v]``::

    dphi = 2 E(e) de,   w = 2 E(e) ed,   v = rd
    Q_r = f,            Q_e = 2 E(e)^T n          (virtual power n.dphi + f.dr)

so that, with ``X_b = dx_b/dq_b = dV_b/dqd_b = [[0, 2E], [I, 0]]`` (6x7) and
``dV_b/dq_b = [[0, -2 E(ed)], [0, 0]]`` (``E(e) ed = -E(ed) e``)::

    dQ_a/dq_b  = B_a^T (K_ab X_b + C_ab dV_b/dq_b) + delta_ab [0, 0; 0, 2 TE(n_a)]
    dQ_a/dqd_b = B_a^T C_ab X_b,          B_a^T = [[0, I], [2 E_a^T, 0]]

(the last term is the derivative of the map ``2 E(e)^T`` itself,
``E(e)^T n = TE(n) e``). The element sees the *normalized* rotation, whose
derivative along ``e`` vanishes exactly as ``2 E(e) e = 0`` does, so these
Jacobians are exact at unit ``e`` in every direction (tests compare them with
central differences of ``Q`` in the 7 coordinates).

Joint forces (:class:`~flexmbd.model.forces.JointForce`) act on joint speeds.
Here they are mapped through the joint's relative twist: with the child frame
``C`` (axes ``F_C``, origin ``p_C``) and the parent frame::

    V_rel = [F_C^T (w_j - w_i); F_C^T (v_j + w_j x (p_C - r_j) - v_i - w_i x (p_C - r_i))]
    v = H^T V_rel,   the wrench H tau in child axes at p_C acts on the child,
                     its opposite on the parent (at the same point)

so the power ``tau . v`` equals the power of the two wrenches. Joint coordinates
for a state-dependent force are recovered from the relative pose (revolute angles
are unwrapped against the last accepted value). Their Jacobians: the constant
part (a follower wrench) exactly; a state-dependent part through the user's
``dfdq``/``dfdqd`` with ``dq = qdot(q, H^T dX_rel)`` (exact on the joint's motion
manifold, i.e. at consistent configurations) and exact ``dv/dx``, ``dv/dV``.
"""

import numpy as np

from ..joint_types import speeds_from_twist, wrench_from_force
from ..model.bodies import Ground
from ..model.forces import JointForce
from ..spatial import skew
from .quaternion import TE, Emat, normalized_rot

__all__ = ["BodyState", "map_wrenches", "map_jacobians", "JointForceMap"]


class BodyState:
    """``state.pose(body)`` / ``state.twist(body)`` for force elements, from (q, qd)."""

    def __init__(self, index, q, qd):
        self.index = index
        nb = len(index)
        self.q_full = np.asarray(q, dtype=float)
        self.qd_full = np.asarray(qd, dtype=float)
        q = self.q_full[: 7 * nb].reshape(-1, 7)
        qd = self.qd_full[: 7 * nb].reshape(-1, 7)
        self.r = q[:, :3]
        self.e = q[:, 3:]
        self.R = normalized_rot(self.e)
        self.E = Emat(self.e)
        self.w = 2.0 * np.einsum("bij,bj->bi", self.E, qd[:, 3:])
        self.v = qd[:, :3]
        self.ed = qd[:, 3:]

    def pose(self, body):
        if isinstance(body, Ground):
            return np.eye(3), np.zeros(3)
        k = self.index[id(body)]
        return self.R[k], self.r[k]

    def twist(self, body):
        if isinstance(body, Ground):
            return np.zeros(3), np.zeros(3)
        k = self.index[id(body)]
        return self.w[k], self.v[k]


def map_wrenches(wrenches, index, state, Q, nacc=None):
    """Add body wrenches to the generalized force ``Q`` (nb*7,); accumulate moments in ``nacc``."""
    Qb = Q[: 7 * len(state.r)].reshape(-1, 7)
    for body, F in wrenches:
        if isinstance(body, Ground):
            continue
        k = index[id(body)]
        Qb[k, :3] += F[3:]
        Qb[k, 3:] += 2.0 * state.E[k].T @ F[:3]
        if nacc is not None:
            nacc[k] += F[:3]


def map_jacobians(blocks, index, state):
    """COO triplets of ``dQ/dq`` and ``dQ/dqd`` from body-level blocks (without the TE term)."""
    rq, cq, vq, vd = [], [], [], []
    c7 = np.arange(7)
    for bi, bj, K, C in blocks:
        if isinstance(bi, Ground) or isinstance(bj, Ground):
            continue
        a, b = index[id(bi)], index[id(bj)]
        Ea2t = 2.0 * state.E[a].T
        Eb2 = 2.0 * state.E[b]
        Edb2 = 2.0 * Emat(state.ed[b])
        # dF/dq_b (6x7) and dF/dqd_b (6x7)
        dFq = np.zeros((6, 7))
        dFq[:, :3] = K[:, 3:]
        dFq[:, 3:] = K[:, :3] @ Eb2 - C[:, :3] @ Edb2
        dFd = np.zeros((6, 7))
        dFd[:, :3] = C[:, 3:]
        dFd[:, 3:] = C[:, :3] @ Eb2
        Gq = np.vstack([dFq[3:], Ea2t @ dFq[:3]])
        Gd = np.vstack([dFd[3:], Ea2t @ dFd[:3]])
        rq.append(np.repeat(7 * a + c7, 7))
        cq.append(np.tile(7 * b + c7, 7))
        vq.append(Gq.ravel())
        vd.append(Gd.ravel())
    if not rq:
        z = np.zeros(0)
        return (z.astype(int), z.astype(int), z), (z.astype(int), z.astype(int), z)
    rows, cols = np.concatenate(rq), np.concatenate(cq)
    return (rows, cols, np.concatenate(vq)), (rows, cols, np.concatenate(vd))


def map_te_terms(nacc, nb):
    """COO triplets of the map-derivative term ``2 TE(n_b)`` on the (e_b, e_b) blocks."""
    c4 = 3 + np.arange(4)
    b7 = 7 * np.arange(nb)
    rows = (b7[:, None, None] + c4[None, :, None]).repeat(4, 2).ravel()
    cols = (b7[:, None, None] + c4[None, None, :]).repeat(4, 1).ravel()
    return rows, cols, (2.0 * TE(nacc)).ravel()


class JointForceMap:
    """Relative kinematics of a joint for :class:`JointForce` in absolute coordinates."""

    def __init__(self, element, index):
        self.el = element
        j = element.joint
        self.joint = j
        self.ib = None if isinstance(j.parent, Ground) else index[id(j.parent)]
        self.jb = None if isinstance(j.child, Ground) else index[id(j.child)]
        self.q_ref = np.array(j.q0, dtype=float)

    def _frames(self, st):
        j = self.joint
        pf, cf = j.parent_frame, j.child_frame

        def world(k, fr):
            if k is None:
                return fr.rotation, fr.position.copy(), np.zeros(3), np.zeros(3), np.zeros(3)
            R = st.R[k]
            return R @ fr.rotation, st.r[k] + R @ fr.position, st.r[k], st.w[k], st.v[k]

        FP, pP, ri, wi, vi = world(self.ib, pf)
        FC, pC, rj, wj, vj = world(self.jb, cf)
        return FP, pP, ri, wi, vi, FC, pC, rj, wj, vj

    def relative(self, st):
        """Joint coordinates, speeds and the frame data at the current state."""
        FP, pP, ri, wi, vi, FC, pC, rj, wj, vj = self._frames(st)
        Rrel = FP.T @ FC
        prel = FP.T @ (pC - pP)
        q = self._coordinates(Rrel, prel)
        Vrel = np.concatenate(
            [FC.T @ (wj - wi), FC.T @ (vj + np.cross(wj, pC - rj) - vi - np.cross(wi, pC - ri))]
        )
        H = self.joint.motion_subspace(q)
        v = speeds_from_twist(H, Vrel)
        return q, v, H, Vrel, (FP, pP, ri, wi, vi, FC, pC, rj, wj, vj)

    def _coordinates(self, Rrel, prel):
        """Joint coordinates from the relative pose, angles on the branch of ``q_ref``
        (:func:`flexmbd.joint_types.joint_coordinates`)."""
        from ..joint_types import joint_coordinates

        return joint_coordinates(self.joint, Rrel, prel, self.q_ref)

    def accept(self, st):
        """Update the unwrapping reference after an accepted step."""
        self.q_ref = self.relative(st)[0]

    def wrenches(self, t, st):
        q, v, H, _, fr = self.relative(st)
        tau = self.el.generalized_force(t, q, v)
        return self._wrenches_from(wrench_from_force(H, tau), fr), q, v, tau

    def wrenches_from(self, Fc, fr):
        """Body wrenches ``[(body index, [n; f] world, about the body origin)]`` of the joint
        wrench ``Fc`` (child joint-frame axes, parent on child) at frame data ``fr``."""
        return self._wrenches_from(Fc, fr)

    def _wrenches_from(self, Fc, fr):
        FP, pP, ri, wi, vi, FC, pC, rj, wj, vj = fr
        n = FC @ Fc[:3]
        f = FC @ Fc[3:]
        out = []
        if self.jb is not None:
            out.append((self.jb, np.concatenate([n + np.cross(pC - rj, f), f])))
        if self.ib is not None:
            out.append((self.ib, np.concatenate([-n - np.cross(pC - ri, f), -f])))
        return out

    def power(self, t, st):
        q, v, _, _, _ = self.relative(st)
        return float(self.el.generalized_force(t, q, v) @ v)

    def jacobians(self, t, st):
        """Body-level blocks ``(a, b, K, C)`` with body indices (None = ground)."""
        q, v, H, Vrel, fr = self.relative(st)
        FP, pP, ri, wi, vi, FC, pC, rj, wj, vj = fr
        tau = self.el.generalized_force(t, q, v)
        # speeds v = Hp V and wrench Hw tau (H^T and H for the orthonormal H of every type
        # but the Screw, whose single column [a; h a] has length^2 1 + h^2)
        n2 = np.einsum("ij,ij->j", H, H)
        Hp, Hw = H.T / n2[:, None], H / n2
        Fc = Hw @ tau
        n, f = FC @ Fc[:3], FC @ Fc[3:]
        ends = {}
        if self.jb is not None:
            ends["j"] = (self.jb, rj)
        if self.ib is not None:
            ends["i"] = (self.ib, ri)
        # derivatives of the world wrench parts (n, f at p_C) w.r.t. each body's x
        # (a) follower part: n, f rotate with the child; p_C moves with the child
        dn = {k: np.zeros((3, 6)) for k in ends}
        df = {k: np.zeros((3, 6)) for k in ends}
        dpc = {k: np.zeros((3, 6)) for k in ends}
        if "j" in ends:
            dn["j"][:, :3] = -skew(n)
            df["j"][:, :3] = -skew(f)
            dpc["j"][:, :3] = -skew(pC - rj)
            dpc["j"][:, 3:] = np.eye(3)
        Cn = {k: np.zeros((3, 6)) for k in ends}
        Cf = {k: np.zeros((3, 6)) for k in ends}
        # (b) state-dependent tau
        dfdq, dfdqd = self.el.generalized_jacobians(t, q, v)
        j = self.joint
        dfdq = np.asarray(dfdq, dtype=float).reshape(j.nv, j.nq)
        dfdqd = np.asarray(dfdqd, dtype=float).reshape(j.nv, j.nv)
        if j.nv:
            nv = j.nv
            Qmap = (
                np.column_stack([j.qdot(q, np.eye(nv)[k]) for k in range(nv)])
                if nv
                else np.zeros((j.nq, 0))
            )
            Xj = np.zeros((6, 6))
            Xj[:3, :3] = FC.T
            Xj[3:, :3] = -FC.T @ skew(pC - rj)
            Xj[3:, 3:] = FC.T
            Xi = Xj.copy()
            Xi[3:, :3] = -FC.T @ skew(pC - ri)
            # dv/dx (positions) and dv/dV
            yv = vj + np.cross(wj, pC - rj) - vi - np.cross(wi, pC - ri)
            dV_dx = {}
            if "j" in ends:
                D = np.zeros((6, 6))
                D[:3, :3] = FC.T @ skew(wj - wi)
                D[3:, :3] = FC.T @ (skew(yv) - (skew(wj) - skew(wi)) @ skew(pC - rj))
                D[3:, 3:] = FC.T @ (-skew(wi))
                dV_dx["j"] = D
            if "i" in ends:
                D = np.zeros((6, 6))
                D[3:, 3:] = FC.T @ skew(wi)
                dV_dx["i"] = D
            # dH/dq by central differences (H is smooth and cheap)
            dHdq = np.zeros((6, nv, j.nq))
            for m in range(j.nq):
                hq = 1e-7
                qp, qm = q.copy(), q.copy()
                qp[m] += hq
                qm[m] -= hq
                dHdq[:, :, m] = (j.motion_subspace(qp) - j.motion_subspace(qm)) / (2 * hq)
            for k, (_, _) in ends.items():
                X = Xj if k == "j" else -Xi
                dq = Qmap @ Hp @ X  # nq x 6
                dv = Hp @ dV_dx[k] + np.einsum("anm,a->nm", dHdq, Vrel) @ dq
                dtau_dx = dfdq @ dq + dfdqd @ dv
                dtau_dV = dfdqd @ (Hp @ X)
                dFc_x = Hw @ dtau_dx + np.einsum("anm,n->am", dHdq, tau) @ dq
                dn[k] += FC @ dFc_x[:3]
                df[k] += FC @ dFc_x[3:]
                Cn[k] += FC @ (Hw @ dtau_dV)[:3]
                Cf[k] += FC @ (Hw @ dtau_dV)[3:]
        out = []
        for a_key, (a, ra) in ends.items():
            sgn = 1.0 if a_key == "j" else -1.0
            for b_key, (b, _) in ends.items():
                K = np.zeros((6, 6))
                K[:3] = dn[b_key] + skew(pC - ra) @ df[b_key] - skew(f) @ dpc[b_key]
                K[3:] = df[b_key]
                if a_key == b_key:
                    # the body's own origin moves: d(-(r_a) x f) = f~ dr_a
                    K[:3, 3:] += skew(f)
                C = np.zeros((6, 6))
                C[:3] = Cn[b_key] + skew(pC - ra) @ Cf[b_key]
                C[3:] = Cf[b_key]
                out.append((a, b, sgn * K, sgn * C))
        return out


def is_joint_force(el):
    return isinstance(el, JointForce)


def map_blocks(a, b, K, C, state):
    """Vectorized :func:`map_jacobians`: body indices ``a``, ``b`` (m,), blocks ``K``, ``C``.

    Returns COO triplets of ``dQ/dq`` and ``dQ/dqd`` (without the TE term).
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    m = len(a)
    if m == 0:
        z = np.zeros(0)
        return (z.astype(int), z.astype(int), z), (z.astype(int), z.astype(int), z)
    Ea2t = 2.0 * np.swapaxes(state.E[a], 1, 2)  # (m,4,3)
    Eb2 = 2.0 * state.E[b]  # (m,3,4)
    Edb2 = 2.0 * Emat(state.ed[b])
    dFq = np.empty((m, 6, 7))
    dFq[:, :, :3] = K[:, :, 3:]
    dFq[:, :, 3:] = K[:, :, :3] @ Eb2 - C[:, :, :3] @ Edb2
    dFd = np.empty((m, 6, 7))
    dFd[:, :, :3] = C[:, :, 3:]
    dFd[:, :, 3:] = C[:, :, :3] @ Eb2
    Gq = np.concatenate([dFq[:, 3:], Ea2t @ dFq[:, :3]], axis=1)
    Gd = np.concatenate([dFd[:, 3:], Ea2t @ dFd[:, :3]], axis=1)
    c7 = np.arange(7)
    rows = np.broadcast_to((7 * a)[:, None, None] + c7[None, :, None], (m, 7, 7)).ravel()
    cols = np.broadcast_to((7 * b)[:, None, None] + c7[None, None, :], (m, 7, 7)).ravel()
    return (rows, cols, Gq.ravel()), (rows, cols, Gd.ravel())


class SDABatch:
    """All :class:`~flexmbd.SpringDamperActuator` elements of a model, evaluated at once.

    Same formulas as :meth:`SpringDamperActuator.wrenches` / ``jacobians`` (see
    :mod:`flexmbd.model.sda`), vectorized over the elements; parameters are read
    from the elements at every call (they are mutable).
    """

    def __init__(self, elements, index):
        from ..model.bodies import Ground as _G

        self.el = list(elements)
        self.ends = np.array(
            [
                [
                    -1 if isinstance(e.body_i, _G) else index[id(e.body_i)],
                    -1 if isinstance(e.body_j, _G) else index[id(e.body_j)],
                ]
                for e in self.el
            ],
            dtype=np.int64,
        ).reshape(-1, 2)

    def _params(self, t, st):
        el = self.el
        k = np.array([e.k for e in el])
        c = np.array([e.c for e in el])
        l0 = np.array([e.free_length(st) for e in el])
        fa = np.array([e.actuator_force(t) for e in el])
        jac = np.array([e.has_jacobian for e in el], dtype=bool)
        pts = np.stack([np.array([e.point_i for e in el]), np.array([e.point_j for e in el])], 1)
        return k, c, l0, fa, jac, pts

    def energies(self, t, st):
        """``(spring potential, damper power >= 0, actuator power)`` summed over the elements."""
        from .quaternion import cross_b

        k, c, l0, fa, _, pts = self._params(t, st)
        ends = self.ends
        live = ends >= 0
        idx = np.where(live, ends, 0)
        R = np.where(live[..., None, None], st.R[idx], np.eye(3))
        rho = np.where(live[..., None], np.einsum("nkij,nkj->nki", R, pts), 0.0)
        P = np.where(live[..., None], st.r[idx] + rho, pts)
        vP = np.where(live[..., None], st.v[idx] + cross_b(st.w[idx], rho), 0.0)
        d = P[:, 1] - P[:, 0]
        length = np.sqrt(np.einsum("ni,ni->n", d, d))
        ldot = np.einsum("ni,ni->n", d, vP[:, 1] - vP[:, 0]) / length
        return (
            float(np.sum(0.5 * k * (length - l0) ** 2)),
            float(np.sum(c * ldot * ldot)),
            float(np.sum(-fa * ldot)),
        )

    def evaluate(self, t, st, Q, nacc=None, jacobian=False, include=None):
        """Add the generalized forces to ``Q``; return body-level blocks ``(a, b, K, C)`` arrays.

        ``include`` (bool per element): which elements enter the Jacobian.
        """
        from .quaternion import cross_b, skew_b

        n = len(self.el)
        k, c, l0, fa, jac, pts = self._params(t, st)
        ends = self.ends
        live = ends >= 0
        idx = np.where(live, ends, 0)
        R = np.where(live[..., None, None], st.R[idx], np.eye(3))
        r = np.where(live[..., None], st.r[idx], 0.0)
        w = np.where(live[..., None], st.w[idx], 0.0)
        v = np.where(live[..., None], st.v[idx], 0.0)
        rho = np.einsum("nkij,nkj->nki", R, pts)
        rho = np.where(live[..., None], rho, 0.0)
        P = r + np.where(live[..., None], rho, pts)
        vP = v + cross_b(w, rho)
        d = P[:, 1] - P[:, 0]
        dd = vP[:, 1] - vP[:, 0]
        length = np.sqrt(np.einsum("ni,ni->n", d, d))
        if np.any(length < 1e-12):
            bad = self.el[int(np.argmin(length))]
            from ..errors import ModelError

            raise ModelError(f"SpringDamperActuator {bad.name!r}: the attachment points coincide")
        u = d / length[:, None]
        ldot = np.einsum("ni,ni->n", u, dd)
        f = k * (length - l0) + c * ldot + fa
        g = f[:, None] * u
        # wrenches: end 0 gets [rho x g; g], end 1 gets [-rho x g; -g]
        sgnF = np.array([1.0, -1.0])
        F = np.empty((n, 2, 6))
        F[:, :, :3] = sgnF[None, :, None] * cross_b(rho, g[:, None, :])
        F[:, :, 3:] = sgnF[None, :, None] * g[:, None, :]
        Qb = Q[: 7 * len(st.r)].reshape(-1, 7)
        for e in range(2):
            m_ = live[:, e]
            bi = ends[m_, e]
            np.add.at(Qb[:, :3], bi, F[m_, e, 3:])
            np.add.at(Qb[:, 3:], bi, 2.0 * np.einsum("nji,nj->ni", st.E[bi], F[m_, e, :3]))
        if not jacobian:
            return None
        sel = jac if include is None else (jac & include)
        if not np.any(sel):
            return None
        if nacc is not None:
            for e in range(2):
                m_ = live[:, e] & sel
                np.add.at(nacc, ends[m_, e], F[m_, e, :3])
        # derivatives
        uu = np.einsum("ni,nj->nij", u, u)
        Pn = np.eye(3) - uu
        Pdd = np.einsum("nij,nj->ni", Pn, dd)
        dg_dd = (
            k[:, None, None] * uu
            + (c / length)[:, None, None] * np.einsum("ni,nj->nij", u, Pdd)
            + (f / length)[:, None, None] * Pn
        )
        dg_ddd = c[:, None, None] * uu
        Rs = skew_b(rho)  # (n,2,3,3)
        Ws = skew_b(w)
        D = np.zeros((n, 2, 3, 6))
        D[..., :3] = -Rs
        D[..., 3:] = np.eye(3)
        Dd = np.zeros((n, 2, 3, 6))
        Dd[..., :3] = -Ws @ Rs
        sgn_end = np.array([-1.0, 1.0])  # d = P_j - P_i
        dgx = sgn_end[None, :, None, None] * (dg_dd[:, None] @ D + dg_ddd[:, None] @ Dd)
        dgV = sgn_end[None, :, None, None] * (dg_ddd[:, None] @ D)
        # K[n, a_end, b_end] (6x6)
        K = np.empty((n, 2, 2, 6, 6))
        C = np.empty((n, 2, 2, 6, 6))
        for ae in range(2):
            fs = sgnF[ae]
            K[:, ae, :, :3] = fs * (Rs[:, ae][:, None] @ dgx)
            K[:, ae, :, 3:] = fs * dgx
            C[:, ae, :, :3] = fs * (Rs[:, ae][:, None] @ dgV)
            C[:, ae, :, 3:] = fs * dgV
            K[:, ae, ae, :3, :3] += fs * (skew_b(g) @ Rs[:, ae])
        pair = live[:, :, None] & live[:, None, :] & sel[:, None, None]
        A = np.broadcast_to(ends[:, :, None], (n, 2, 2))[pair]
        B = np.broadcast_to(ends[:, None, :], (n, 2, 2))[pair]
        return A, B, K[pair], C[pair]


class GravityBatch:
    """Uniform gravity on every rigid body, vectorized (same physics as :class:`~flexmbd.Gravity`).

    ``F = [(R c) x m g; m g]`` about the body origin, ``K_nphi = (m g)~ (R c)~``,
    potential ``-m g . (r + R c)``.
    """

    def __init__(self, elements, inertia):
        self.el = list(elements)
        self.inertia = inertia

    def evaluate(self, st, Q, nacc=None, jacobian=False):
        from .quaternion import cross_b, skew_b

        g = sum(np.asarray(e.g, dtype=float) for e in self.el)
        m = self.inertia.m
        Rc = np.einsum("bij,bj->bi", st.R, self.inertia.c)
        f = m[:, None] * g
        n = cross_b(Rc, f)
        Qb = Q[: 7 * len(st.r)].reshape(-1, 7)
        Qb[:, :3] += f
        Qb[:, 3:] += 2.0 * np.einsum("bji,bj->bi", st.E, n)
        if not jacobian:
            return None
        if nacc is not None:
            nacc += n
        nb = len(m)
        K = np.zeros((nb, 6, 6))
        K[:, :3, :3] = skew_b(f) @ skew_b(Rc)
        idx = np.arange(nb)
        return idx, idx, K, np.zeros((nb, 6, 6))

    def potential(self, st):
        g = sum(np.asarray(e.g, dtype=float) for e in self.el)
        Rc = np.einsum("bij,bj->bi", st.R, self.inertia.c)
        return float(-np.sum(self.inertia.m[:, None] * g * (st.r + Rc)))
