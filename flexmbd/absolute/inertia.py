"""Rigid-body inertia terms in Euler-parameter coordinates, with exact derivatives.

Per body: coordinates ``q_b = (r, e)`` (origin of the body frame in world, Euler
parameters), mass ``m``, centre of mass ``c`` and inertia ``J = J_c - m c~ c~``
about the body origin, both in body axes. With ``w' = 2 G(e) de`` and
``a' = 2 G(e) dde`` (exact, :mod:`.quaternion`), the virtual-power form of the
Newton-Euler equations about the body origin gives the inertia residual ::

    R_r = m (ddr + A (a' x c + w' x (w' x c)))              (force, world)
    R_e = 2 G^T N',   N' = J a' + w' x J w' + m c x (A^T ddr)  (moment, body axes)

whose ``ddq``-linear part is the symmetric mass matrix ::

    M = [[m I,            -2 m A c~ G],
         [2 m G^T c~ A^T,  4 G^T J G ]]

(``M`` is singular along ``(0, e)``; the normalization constraint completes it).
The equations of motion are ``R(q, qd, qdd) + Phi_q^T lam = Q``.

Exact derivatives (``u = a' x c + w' x (w' x c)``,
``Dw = (w'.c) I + w' c^T - 2 c w'^T = d(w' x (w' x c))/dw'``,
``Lw = w'~ J - (J w')~ = d(w' x J w')/dw'``, ``dw'/de = -2 G(de)``,
``da'/de = -2 G(dde)``)::

    dR_r/de  = m [dAs(e, u) + A (-c~ da'/de + Dw dw'/de)]
    dR_e/de  = 2 TG(N') + 2 G^T [J da'/de + Lw dw'/de + m c~ (G TE(ddr) - G(E^T ddr))]
    dR_r/dde = 2 m A Dw G,   dR_e/dde = 4 G^T Lw G
    dR/dr = dR/dr' = 0

(``A^T ddr = G(e) E(e)^T ddr``, hence its derivative ``G TE(ddr) - G(E^T ddr)``.)
"""

import numpy as np

from ..model.bodies import RigidBody
from .quaternion import TE, TG, Apoly, Emat, Gmat, cross_b, dAs, skew_b

__all__ = ["BodyInertia"]


def _mv(M, v):
    return np.einsum("...ij,...j->...i", M, v)


class BodyInertia:
    """Vectorized inertia data of the rigid bodies: masses (nb,), com (nb,3), J about origin."""

    def __init__(self, bodies):
        self.update(bodies)

    def update(self, bodies):
        # flexible bodies have their own inertia terms (.flexible): zero rigid data here
        rigid = [isinstance(b, RigidBody) for b in bodies]
        self.m = np.array([float(b.mass) if r else 0.0 for b, r in zip(bodies, rigid)])
        self.c = np.array(
            [b.com_vector if r else np.zeros(3) for b, r in zip(bodies, rigid)]
        ).reshape(-1, 3)
        Jc = np.array(
            [b.inertia_matrix if r else np.zeros((3, 3)) for b, r in zip(bodies, rigid)]
        ).reshape(-1, 3, 3)
        C = skew_b(self.c)
        self.Jc = Jc
        self.J = Jc - self.m[:, None, None] * (C @ C)
        nb = len(bodies)
        self.nb = nb
        b7 = 7 * np.arange(nb)
        c7 = np.arange(7)
        self.rows = np.broadcast_to((b7[:, None, None] + c7[None, :, None]), (nb, 7, 7)).ravel()
        self.cols = np.broadcast_to((b7[:, None, None] + c7[None, None, :]), (nb, 7, 7)).ravel()

    def _kin(self, q, qd):
        q = q[: 7 * self.nb].reshape(-1, 7)
        qd = qd[: 7 * self.nb].reshape(-1, 7)
        return q[:, :3], q[:, 3:], qd[:, :3], qd[:, 3:]

    def mass_blocks(self, q):
        """(nb, 7, 7) mass-matrix blocks."""
        _, e, _, _ = self._kin(q, np.zeros_like(q))
        A, G = Apoly(e), Gmat(e)
        C = skew_b(self.c)
        m = self.m[:, None, None]
        M = np.zeros((self.nb, 7, 7))
        M[:, :3, :3] = m * np.eye(3)
        Mre = -2.0 * m * (A @ C @ G)
        M[:, :3, 3:] = Mre
        M[:, 3:, :3] = np.swapaxes(Mre, 1, 2)
        M[:, 3:, 3:] = 4.0 * np.swapaxes(G, 1, 2) @ self.J @ G
        return M

    def residual(self, q, qd, qdd, derivatives=True):
        """Inertia residual (nb*7,) and optionally blocks ``M``, ``dR/dq``, ``dR/dqd`` (nb,7,7)."""
        _, e, _, ed = self._kin(q, qd)
        _, _, rdd, edd = self._kin(np.zeros_like(qdd), qdd)
        m = self.m
        c = self.c
        J = self.J
        A, G, E = Apoly(e), Gmat(e), Emat(e)
        Gt = np.swapaxes(G, 1, 2)
        w = 2.0 * _mv(G, ed)
        a = 2.0 * _mv(G, edd)
        wc = cross_b(w, c)
        u = cross_b(a, c) + cross_b(w, wc)
        Atr = np.einsum("bji,bj->bi", A, rdd)
        Jw = _mv(J, w)
        N = _mv(J, a) + cross_b(w, Jw) + m[:, None] * cross_b(c, Atr)
        Rr = m[:, None] * (rdd + _mv(A, u))
        Re = 2.0 * _mv(Gt, N)
        R = np.concatenate([Rr, Re], axis=1).ravel()
        if not derivatives:
            return R
        nb = self.nb
        C = skew_b(c)
        W = skew_b(w)
        mm = m[:, None, None]
        eye = np.eye(3)
        wdotc = np.einsum("bi,bi->b", w, c)[:, None, None]
        Dw = wdotc * eye + np.einsum("bi,bj->bij", w, c) - 2.0 * np.einsum("bi,bj->bij", c, w)
        Lw = W @ J - skew_b(Jw)
        dw_de = -2.0 * Gmat(ed)
        da_de = -2.0 * Gmat(edd)
        z = np.einsum("bij,bj->bi", TE(rdd), e)  # E^T ddr
        dAtr_de = G @ TE(rdd) - Gmat(z)
        M = np.zeros((nb, 7, 7))
        M[:, :3, :3] = mm * eye
        Mre = -2.0 * mm * (A @ C @ G)
        M[:, :3, 3:] = Mre
        M[:, 3:, :3] = np.swapaxes(Mre, 1, 2)
        M[:, 3:, 3:] = 4.0 * Gt @ J @ G
        K = np.zeros((nb, 7, 7))
        K[:, :3, 3:] = mm * (dAs(e, u) + A @ (-C @ da_de + Dw @ dw_de))
        K[:, 3:, 3:] = 2.0 * TG(N) + 2.0 * Gt @ (J @ da_de + Lw @ dw_de + mm * (C @ dAtr_de))
        D = np.zeros((nb, 7, 7))
        D[:, :3, 3:] = 2.0 * mm * (A @ Dw @ G)
        D[:, 3:, 3:] = 4.0 * Gt @ Lw @ G
        del E
        return R, M, K, D

    def kinetic_energy(self, q, qd):
        """Kinetic energy per body (nb,) (J), with the normalized rotation."""
        _, e, rd, ed = self._kin(q, qd)
        n2 = np.einsum("bi,bi->b", e, e)
        A = Apoly(e) / n2[:, None, None]
        w = 2.0 * _mv(Gmat(e), ed) / n2[:, None]
        vc = rd + _mv(A, cross_b(w, self.c))
        return 0.5 * self.m * np.einsum("bi,bi->b", vc, vc) + 0.5 * np.einsum(
            "bi,bij,bj->b", w, self.Jc, w
        )
