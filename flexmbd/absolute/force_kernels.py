r"""Force elements of the compiled absolute engine: tables and numba kernels.

The compiled Newton engine (:mod:`.engine`) evaluates these elements inside its step,
with their exact Jacobians in the Newton matrix:

* :class:`~flexmbd.SpringDamperActuator` with rigid ends, ground ends and ends at
  deforming frames of flexible bodies (interface, node or point frames whose position
  moves with the modal coordinates);
* :class:`~flexmbd.PointForce` and :class:`~flexmbd.PointTorque` in world or body axes,
  at body points or deforming frames;
* uniform :class:`~flexmbd.Gravity` (in :mod:`.engine` itself).

Every attachment is one point ``P = r + A (s0 + U q_f)`` of a body (``U`` the frame's
translation modes, 3 x 0 for a rigid point; ``P = s0`` on the ground). Its coordinate
Jacobian and the velocity derivative, for ``z = (r, e, q_f)`` (``dphi = 2 E de``)::

    G = dP/dz = d(vP)/d(zd) = [I, -rho~ 2E, A U],     rho = A (s0 + U q_f),
    V = d(vP)/dz = [0, rho~ 2E(ed) - w~ rho~ 2E - (A U q_fd)~ 2E, w~ A U],   w = 2 E ed.

Spring-damper-actuator (the derivation of :class:`.flexible.FlexSDA`, ends ``a``, ``b``
with signs ``sF = (+1, -1)`` of the end forces and ``sd = (-1, +1)`` in ``d = P_j - P_i``;
``u = d/l``, ``P = I - u u^T``, ``f = k (l - l0) + c ldot + f_a(t)``, ``g = f u``)::

    Q_a = sF_a G_a^T g,
    dQ_a/dz_b  = sF_a G_a^T [u df_b + sd_b (f/l) P G_b] + delta_ab K_geo(sF_a g),
    df_b = sd_b [(k u + c P dd / l)^T G_b + c u^T V_b],
    dQ_a/dzd_b = sF_a sd_b c (G_a^T u)(u^T G_b),

with ``K_geo(F)`` the derivative of ``G^T F`` at fixed world force ``F``::

    K_geo[e, e] = 2 TE(rho x F) + 2E^T F~ rho~ 2E,  K_geo[e, f] = -2E^T F~ A U,
    K_geo[f, e] = (A U)^T F~ 2E.

Point loads: world force ``f_w``, body-axes force ``f_b`` (``f = f_w + A f_b``), world
torque ``n_w`` and body-axes torque ``n_b`` (``n = n_w + A n_b``)::

    Q_r = f,  Q_e = 2E^T (rho x f + n),  Q_f = U^T A^T f,
    world force: K_geo(f_w);   body force: dQ_r/de = -f~ 2E,
                 dQ_e/de = 2 TE(rho x f) - 2E^T (rho x f)~ 2E,  dQ_e/dq_f = -2E^T A f_b~ U,
    world torque: dQ_e/de = 2 TE(n_w);   body torque: 2 TE(A n_b) - 2E^T (A n_b)~ 2E.

These are the formulas of the generic path (:mod:`.forces`, :mod:`.flexible`), which
stays the test oracle (``tests/absolute/test_engine_forces.py``: residuals and Newton
matrices equal to round-off, Jacobians equal to central differences).

Time functions (``fa(t)`` of an SDA, ``force(t)``/``torque(t)`` of a load) are Python
callables of time only: the engine evaluates them once per step (tabulated per block of
steps in the compiled loop), never inside a Newton iteration.

A coincident pair of SDA attachment points (length 0, no line of action) makes the
residual non-finite: the engine's step fails (``ConvergenceError``) where the generic path
raises a :class:`~flexmbd.errors.ModelError`.
"""

import numpy as np

from .._jit import njit
from .._nblaws import law_address, law_value
from ..errors import ModelError

__all__ = [
    "ForceTable",
    "forces_add",
    "joint_forces_add",
    "interface_force_loads",
    "force_energies",
    "joint_force_kind",
]

# integer columns of the SDA table: body, modal count, first modal column, offset in U
_SB, _SN, _SC, _SO = 0, 2, 4, 6
# integer columns of the load table
_LB, _LN, _LC, _LO = 0, 1, 2, 3


@njit(cache=True, _nrt=False, inline="always")
def _end_kin(b, s0, nf, col0, U, q, qd, P, vP, G, V, rho, AU, E2, w, wk):
    """Point ``P``, velocity ``vP`` and (with ``G`` rows) ``G``, ``V`` (3, 7 + nf) of one
    attachment; ``rho``, ``A U`` (3, nf), ``2E`` (3, 4) and ``w`` for the geometric terms.
    Ground (``b < 0``): ``P = s0``, ``vP = 0``. ``wk`` (6, 3, 4): scratch (the kernel
    allocates nothing); on return ``wk[0, :, :3]`` holds the body's rotation matrix."""
    if b < 0:
        for i in range(3):
            P[i] = s0[i]
            vP[i] = 0.0
        return
    c7 = 7 * b
    e0, e1, e2, e3 = q[c7 + 3], q[c7 + 4], q[c7 + 5], q[c7 + 6]
    n2 = e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3
    d = e0 * e0 - e1 * e1 - e2 * e2 - e3 * e3
    A = wk[0]
    A[0, 0] = (d + 2 * e1 * e1) / n2
    A[1, 1] = (d + 2 * e2 * e2) / n2
    A[2, 2] = (d + 2 * e3 * e3) / n2
    A[0, 1] = 2 * (e1 * e2 - e0 * e3) / n2
    A[1, 0] = 2 * (e1 * e2 + e0 * e3) / n2
    A[0, 2] = 2 * (e1 * e3 + e0 * e2) / n2
    A[2, 0] = 2 * (e1 * e3 - e0 * e2) / n2
    A[1, 2] = 2 * (e2 * e3 - e0 * e1) / n2
    A[2, 1] = 2 * (e2 * e3 + e0 * e1) / n2
    # 2 E(e) and 2 E(ed)
    E2[0, 0], E2[0, 1], E2[0, 2], E2[0, 3] = -2 * e1, 2 * e0, -2 * e3, 2 * e2
    E2[1, 0], E2[1, 1], E2[1, 2], E2[1, 3] = -2 * e2, 2 * e3, 2 * e0, -2 * e1
    E2[2, 0], E2[2, 1], E2[2, 2], E2[2, 3] = -2 * e3, -2 * e2, 2 * e1, 2 * e0
    d0, d1, d2, d3 = qd[c7 + 3], qd[c7 + 4], qd[c7 + 5], qd[c7 + 6]
    Ed = wk[1]
    Ed[0, 0], Ed[0, 1], Ed[0, 2], Ed[0, 3] = -2 * d1, 2 * d0, -2 * d3, 2 * d2
    Ed[1, 0], Ed[1, 1], Ed[1, 2], Ed[1, 3] = -2 * d2, 2 * d3, 2 * d0, -2 * d1
    Ed[2, 0], Ed[2, 1], Ed[2, 2], Ed[2, 3] = -2 * d3, -2 * d2, 2 * d1, 2 * d0
    s = wk[4, 0]
    for i in range(3):
        v = s0[i]
        for l in range(nf):
            v += U[i, l] * q[col0 + l]
        s[i] = v
    vf = wk[4, 1]
    vf[0] = vf[1] = vf[2] = 0.0
    for i in range(3):
        rho[i] = A[i, 0] * s[0] + A[i, 1] * s[1] + A[i, 2] * s[2]
        w[i] = E2[i, 0] * d0 + E2[i, 1] * d1 + E2[i, 2] * d2 + E2[i, 3] * d3
        for l in range(nf):
            v = A[i, 0] * U[0, l] + A[i, 1] * U[1, l] + A[i, 2] * U[2, l]
            AU[i, l] = v
            vf[i] += v * qd[col0 + l]
    for i in range(3):
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        P[i] = q[c7 + i] + rho[i]
        vP[i] = qd[c7 + i] + (w[i1] * rho[i2] - w[i2] * rho[i1]) + vf[i]
    if G.shape[0] == 0:
        return
    # G = [I, -rho~ 2E, A U];  V = [0, rho~ 2E(ed) - w~ rho~ 2E - vf~ 2E, w~ A U]
    Rs = wk[2]
    Rs[0, 0], Rs[0, 1], Rs[0, 2] = 0.0, -rho[2], rho[1]
    Rs[1, 0], Rs[1, 1], Rs[1, 2] = rho[2], 0.0, -rho[0]
    Rs[2, 0], Rs[2, 1], Rs[2, 2] = -rho[1], rho[0], 0.0
    # W~ Rs + vf~ : the matrix multiplying 2E in V
    WR = wk[3]
    for i in range(3):
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        for j in range(3):
            WR[i, j] = w[i1] * Rs[i2, j] - w[i2] * Rs[i1, j]
    WR[0, 1] -= vf[2]
    WR[0, 2] += vf[1]
    WR[1, 0] += vf[2]
    WR[1, 2] -= vf[0]
    WR[2, 0] -= vf[1]
    WR[2, 1] += vf[0]
    for i in range(3):
        for j in range(3):
            G[i, j] = 1.0 if i == j else 0.0
            V[i, j] = 0.0
        for j in range(4):
            g = 0.0
            v = 0.0
            for l in range(3):
                g -= Rs[i, l] * E2[l, j]
                v += Rs[i, l] * Ed[l, j] - WR[i, l] * E2[l, j]
            G[i, 3 + j] = g
            V[i, 3 + j] = v
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        for l in range(nf):
            G[i, 7 + l] = AU[i, l]
            V[i, 7 + l] = w[i1] * AU[i2, l] - w[i2] * AU[i1, l]


@njit(cache=True, _nrt=False, inline="always")
def _geo_add(F, rho, E2, AU, nf, c, K, M):
    """``K += c K_geo(F)``: derivative of ``G^T F`` at fixed world force ``F`` (rows and
    columns ``z = (r, e, q_f)`` of one attachment); ``M`` (3, >= 3): scratch."""
    n0 = rho[1] * F[2] - rho[2] * F[1]
    n1 = rho[2] * F[0] - rho[0] * F[2]
    n2 = rho[0] * F[1] - rho[1] * F[0]
    _TE_add(n0, n1, n2, 2.0 * c, K)
    # F~ rho~ = rho F^T - (F.rho) I
    Fr = F[0] * rho[0] + F[1] * rho[1] + F[2] * rho[2]
    for i in range(3):
        for j in range(3):
            M[i, j] = rho[i] * F[j]
        M[i, i] -= Fr
    _sandwich_add(E2, M, c, K)
    if nf == 0:
        return
    for l in range(nf):
        # F~ (A U)_l
        x0 = F[1] * AU[2, l] - F[2] * AU[1, l]
        x1 = F[2] * AU[0, l] - F[0] * AU[2, l]
        x2 = F[0] * AU[1, l] - F[1] * AU[0, l]
        for j in range(4):
            v = E2[0, j] * x0 + E2[1, j] * x1 + E2[2, j] * x2
            K[3 + j, 7 + l] -= c * v
            # (A U)^T F~ 2E = -(F~ A U)^T 2E
            K[7 + l, 3 + j] -= c * v


@njit(cache=True, _nrt=False, inline="always")
def _TE_add(x, y, z, c, K):
    """``K[3:7, 3:7] += c TE((x, y, z))`` with ``E(e)^T a = TE(a) e``."""
    K[3, 4] -= c * x
    K[3, 5] -= c * y
    K[3, 6] -= c * z
    K[4, 3] += c * x
    K[4, 5] -= c * z
    K[4, 6] += c * y
    K[5, 3] += c * y
    K[5, 4] += c * z
    K[5, 6] -= c * x
    K[6, 3] += c * z
    K[6, 4] -= c * y
    K[6, 5] += c * x


@njit(cache=True, _nrt=False, inline="always")
def _sandwich_add(E2, M, c, K):
    """``K[3:7, 3:7] += c (2E)^T M (2E)``."""
    for j in range(4):
        for a in range(4):
            v = 0.0
            for i in range(3):
                ea = E2[i, a]
                if ea != 0.0:
                    mj = M[i, 0] * E2[0, j] + M[i, 1] * E2[1, j] + M[i, 2] * E2[2, j]
                    v += ea * mj
            K[3 + a, 3 + j] += c * v


@njit(cache=True, inline="always")
def _forces_sizes(s_int, l_int):
    """``(N, nu)`` of :func:`forces_add_into`'s scratch: ``N = 7 +`` the largest modal
    count of an SDA end or point load, ``nu = max(that count, 1)``."""
    nmax = 0
    for e in range(s_int.shape[0]):
        nmax = max(nmax, s_int[e, _SN], s_int[e, _SN + 1])
    for e in range(l_int.shape[0]):
        nmax = max(nmax, l_int[e, _LN])
    return 7 + nmax, max(nmax, 1)


@njit(cache=True)
def forces_scratch(s_int, l_int):
    """The float and int scratch of :func:`forces_add_into` for these force tables (with
    the Jacobian's share), allocated once per run."""
    N, nu = _forces_sizes(s_int, l_int)
    return np.empty(16 * N + N * N + 6 * nu + 132), np.empty((4, N), np.int64)


@njit(cache=True)
def forces_add(q, qd, s_int, s_flt, s_U, s_fa, l_int, l_flt, l_U, l_F, Q, Amat, cm, aK, aD, jac):
    """Add the generalized forces of the SDAs and point loads to ``Q`` (n) and, with
    ``jac``, ``-(aK dQ/dq + aD dQ/dqd)`` to ``Amat`` (the engine's Newton matrix, column
    ``j`` stored in slot ``cm[j]``: :func:`flexmbd.absolute._sparse.kkt_layout`).

    ``s_int`` (m, 9): per end (``i``, ``j``) body (-1 ground), modal count, first modal
    column, offset in ``s_U``; then 1 when the element's Jacobian enters the matrix.
    ``s_flt`` (m, 9): ``s0_i``, ``s0_j`` (m, body frame; world for a ground end), ``k``,
    ``c``, ``l0``. ``s_fa`` (m,): actuator forces at this step. ``l_int`` (p, 7): body,
    modal count, first modal column, offset in ``l_U``, force in body axes, torque in body
    axes, Jacobian flag; ``l_flt`` (p, 3): ``s0``; ``l_F`` (p, 6): force and torque."""
    buf, idx = forces_scratch(s_int, l_int)
    forces_add_into(
        q, qd, s_int, s_flt, s_U, s_fa, l_int, l_flt, l_U, l_F, Q, Amat, cm, aK, aD, jac, buf, idx
    )  # fmt: skip


@njit(cache=True, _nrt=False)
def forces_add_into(
    q, qd, s_int, s_flt, s_U, s_fa, l_int, l_flt, l_U, l_F, Q, Amat, cm, aK, aD, jac, buf, idx
):  # fmt: skip
    """:func:`forces_add` with its scratch ``buf``, ``idx`` from :func:`forces_scratch`
    (allocates nothing: callable from kernels compiled without reference counting)."""
    N, nu = _forces_sizes(s_int, l_int)
    ng = 6 * N if jac else 0
    o = 0
    G = buf[o : o + ng].reshape(2, ng // (2 * N), N)
    o += ng
    V = buf[o : o + ng].reshape(2, ng // (2 * N), N)
    o += ng
    Gu = buf[o : o + 2 * N].reshape(2, N)
    o += 2 * N
    h = buf[o : o + 2 * N].reshape(2, N)
    o += 2 * N
    K = buf[o : o + N * N].reshape(N, N)
    o += N * N
    AU = buf[o : o + 6 * nu].reshape(2, 3, nu)
    o += 6 * nu
    E2 = buf[o : o + 24].reshape(2, 3, 4)
    o += 24
    wk = buf[o : o + 72].reshape(6, 3, 4)  # _end_kin's scratch, then 3-vectors and 3 x 3
    o += 72
    v3 = buf[o : o + 36].reshape(12, 3)  # P, vP, rho, w (2 x 3 each), d, dd, u, F
    _forces_into(
        q, qd, s_int, s_flt, s_U, s_fa, l_int, l_flt, l_U, l_F, Q, Amat, cm, aK, aD, jac,
        v3[0:2], v3[2:4], G, V, v3[4:6], AU, E2, v3[6:8], idx, h, K, Gu,
        v3[8], v3[9], v3[10], v3[11], wk,
    )  # fmt: skip


@njit(cache=True, _nrt=False, inline="always")
def _sda_block_add(Ga, Gb, gua, hb, sa, c2, na, nb_, ra, sb, Amat, K, geo, aK):
    """One end pair's block of an SDA's Newton-matrix terms, subtracted from ``Amat``:
    ``sa gua hb^T + c2 Ga^T Gb`` (+ ``aK K`` with ``geo``: the geometric term of an end
    with itself); rows ``ra`` (coordinates), column slots ``sb``. ``G[:, :3]`` is the
    identity (the ends' translation columns), so those entries need no product."""
    for i in range(na):
        ri = ra[i]
        gi = sa * gua[i]
        if i < 3:
            for j in range(nb_):
                v = gi * hb[j] + c2 * Gb[i, j]
                if geo:
                    v += aK * K[i, j]
                Amat[ri, sb[j]] -= v
        else:
            a0, a1, a2 = Ga[0, i], Ga[1, i], Ga[2, i]
            for j in range(3):
                v = gi * hb[j] + c2 * Ga[j, i]
                if geo:
                    v += aK * K[i, j]
                Amat[ri, sb[j]] -= v
            for j in range(3, nb_):
                v = gi * hb[j] + c2 * (a0 * Gb[0, j] + a1 * Gb[1, j] + a2 * Gb[2, j])
                if geo:
                    v += aK * K[i, j]
                Amat[ri, sb[j]] -= v


@njit(cache=True, _nrt=False)
def _forces_into(
    q, qd, s_int, s_flt, s_U, s_fa, l_int, l_flt, l_U, l_F, Q, Amat, cm, aK, aD, jac,
    P, vP, G, V, rho, AU, E2, w, idx, h, K, Gu, d, dd, u, F, wk,
):  # fmt: skip
    """:func:`forces_add` with its scratch arrays: the kernel allocates nothing and runs
    without numba's reference counting (``_nrt=False``: no atomic increment and decrement
    per array view and argument; 2 ends x ~10 views per SDA per call).

    The SDA Jacobian in rank-one form: with ``Gu = G^T u`` and
    ``h_b = aK (df_b - sd_b (f/l) Gu_b) + aD sd_b c Gu_b``, the block of ends ``a, b`` is
    ``sF_a [Gu_a h_b^T + aK sd_b (f/l) G_a^T G_b]`` (+ ``aK K_geo`` for ``a = b``), the
    module docstring's ``dQ_a/dz_b`` and ``dQ_a/dzd_b`` combined."""
    m = s_int.shape[0]
    p = l_int.shape[0]
    sF = (1.0, -1.0)
    sd = (-1.0, 1.0)
    for el in range(m):
        for k in range(2):
            b = s_int[el, _SB + k]
            nf = s_int[el, _SN + k]
            o = s_int[el, _SO + k]
            Ue = s_U[o : o + 3 * nf].reshape(3, nf)
            _end_kin(
                b,
                s_flt[el, 3 * k : 3 * k + 3],
                nf,
                s_int[el, _SC + k],
                Ue,
                q,
                qd,
                P[k],
                vP[k],
                G[k],
                V[k],
                rho[k],
                AU[k],
                E2[k],
                w[k],
                wk,
            )
            if b >= 0:
                for i in range(7):
                    idx[k, i] = 7 * b + i
                for i in range(nf):
                    idx[k, 7 + i] = s_int[el, _SC + k] + i
                for i in range(7 + nf):
                    idx[2 + k, i] = cm[idx[k, i]]
        ll = 0.0
        ld = 0.0
        for i in range(3):
            d[i] = P[1, i] - P[0, i]
            dd[i] = vP[1, i] - vP[0, i]
            ll += d[i] * d[i]
        length = np.sqrt(ll)
        if length < 1e-12:
            Q[0] = np.nan
            return
        for i in range(3):
            u[i] = d[i] / length
            ld += u[i] * dd[i]
        kk, cc, l0 = s_flt[el, 6], s_flt[el, 7], s_flt[el, 8]
        f = kk * (length - l0) + cc * ld + s_fa[el]
        use_jac = jac and s_int[el, 8] != 0
        for a in range(2):
            if s_int[el, _SB + a] < 0:
                continue
            if not use_jac:
                _Gt_add_nojac(
                    s_int[el, _SB + a],
                    s_int[el, _SN + a],
                    s_int[el, _SC + a],
                    rho[a],
                    AU[a],
                    E2[a],
                    sF[a] * f,
                    u,
                    Q,
                )
                continue
            na = 7 + s_int[el, _SN + a]
            for i in range(na):
                Q[idx[a, i]] += (
                    sF[a] * f * (G[a, 0, i] * u[0] + G[a, 1, i] * u[1] + G[a, 2, i] * u[2])
                )
        if not use_jac:
            continue
        # df_b = sd_b [(k u + c P dd / l)^T G_b + c u^T V_b] ; P = I - u u^T
        Pdd = wk[5, 0]
        udd = u[0] * dd[0] + u[1] * dd[1] + u[2] * dd[2]
        for i in range(3):
            Pdd[i] = dd[i] - u[i] * udd
        fl = f / length
        for b in range(2):
            if s_int[el, _SB + b] < 0:
                continue
            nb_ = 7 + s_int[el, _SN + b]
            for j in range(nb_):
                g0, g1, g2 = G[b, 0, j], G[b, 1, j], G[b, 2, j]
                ug = u[0] * g0 + u[1] * g1 + u[2] * g2
                uv = u[0] * V[b, 0, j] + u[1] * V[b, 1, j] + u[2] * V[b, 2, j]
                df = sd[b] * (
                    kk * ug + (cc / length) * (Pdd[0] * g0 + Pdd[1] * g1 + Pdd[2] * g2) + cc * uv
                )
                Gu[b, j] = ug
                h[b, j] = aK * (df - sd[b] * fl * ug) + aD * (sd[b] * cc * ug)
        for a in range(2):
            if s_int[el, _SB + a] < 0:
                continue
            na = 7 + s_int[el, _SN + a]
            for i in range(na):
                for j in range(na):
                    K[i, j] = 0.0
            for i in range(3):
                F[i] = sF[a] * f * u[i]
            _geo_add(F, rho[a], E2[a], AU[a], s_int[el, _SN + a], 1.0, K, wk[2])
            for b in range(2):
                if s_int[el, _SB + b] < 0:
                    continue
                nb_ = 7 + s_int[el, _SN + b]
                _sda_block_add(
                    G[a], G[b], Gu[a], h[b], sF[a], aK * sF[a] * sd[b] * fl, na, nb_, idx[a],
                    idx[2 + b], Amat, K, a == b, aK,
                )  # fmt: skip
    # point loads
    for el in range(p):
        b = l_int[el, _LB]
        nf = l_int[el, _LN]
        c0 = l_int[el, _LC]
        o = l_int[el, _LO]
        Ue = l_U[o : o + 3 * nf].reshape(3, nf)
        _end_kin(
            b,
            l_flt[el],
            nf,
            c0,
            Ue,
            q,
            qd,
            P[0],
            vP[0],
            G[0, :0],
            V[0, :0],
            rho[0],
            AU[0],
            E2[0],
            w[0],
            wk,
        )
        fbody = l_int[el, 4] != 0
        tbody = l_int[el, 5] != 0
        # world force and torque: A of the body (_end_kin's)
        c7 = 7 * b
        A = wk[0]
        fv = wk[5, 0]
        nv = wk[5, 1]
        for i in range(3):
            if fbody:
                fv[i] = A[i, 0] * l_F[el, 0] + A[i, 1] * l_F[el, 1] + A[i, 2] * l_F[el, 2]
            else:
                fv[i] = l_F[el, i]
            if tbody:
                nv[i] = A[i, 0] * l_F[el, 3] + A[i, 1] * l_F[el, 4] + A[i, 2] * l_F[el, 5]
            else:
                nv[i] = l_F[el, 3 + i]
        r0 = rho[0]
        mom = wk[5, 2]
        for i in range(3):
            i1 = (i + 1) % 3
            i2 = (i + 2) % 3
            mom[i] = r0[i1] * fv[i2] - r0[i2] * fv[i1] + nv[i]
            Q[c7 + i] += fv[i]
        for j in range(4):
            Q[c7 + 3 + j] += E2[0, 0, j] * mom[0] + E2[0, 1, j] * mom[1] + E2[0, 2, j] * mom[2]
        for l in range(nf):
            Q[c0 + l] += AU[0, 0, l] * fv[0] + AU[0, 1, l] * fv[1] + AU[0, 2, l] * fv[2]
        if not (jac and l_int[el, 6] != 0):
            continue
        Nl = 7 + nf
        for i in range(Nl):
            for j in range(Nl):
                K[i, j] = 0.0
        if fbody:
            # dQ_r/de = -f~ 2E ; dQ_e/de = 2 TE(n) - 2E^T n~ 2E (n = rho x f);
            # dQ_e/dq_f = -2E^T A f_b~ U
            for i in range(3):
                i1 = (i + 1) % 3
                i2 = (i + 2) % 3
                for j in range(4):
                    K[i, 3 + j] -= fv[i1] * E2[0, i2, j] - fv[i2] * E2[0, i1, j]
            n0 = mom[0] - nv[0]
            n1 = mom[1] - nv[1]
            n2 = mom[2] - nv[2]
            _TE_add(n0, n1, n2, 2.0, K)
            Mn = wk[2]
            Mn[0, 0], Mn[1, 1], Mn[2, 2] = 0.0, 0.0, 0.0
            Mn[0, 1], Mn[0, 2], Mn[1, 0] = -n2, n1, n2
            Mn[1, 2], Mn[2, 0], Mn[2, 1] = -n0, -n1, n0
            _sandwich_add(E2[0], Mn, -1.0, K)
            fb = l_F[el, 0:3]
            for l in range(nf):
                # (f_b~ U)_l, then A, then 2E^T
                x0 = fb[1] * Ue[2, l] - fb[2] * Ue[1, l]
                x1 = fb[2] * Ue[0, l] - fb[0] * Ue[2, l]
                x2 = fb[0] * Ue[1, l] - fb[1] * Ue[0, l]
                y0 = A[0, 0] * x0 + A[0, 1] * x1 + A[0, 2] * x2
                y1 = A[1, 0] * x0 + A[1, 1] * x1 + A[1, 2] * x2
                y2 = A[2, 0] * x0 + A[2, 1] * x1 + A[2, 2] * x2
                for j in range(4):
                    K[3 + j, 7 + l] -= E2[0, 0, j] * y0 + E2[0, 1, j] * y1 + E2[0, 2, j] * y2
        else:
            _geo_add(fv, r0, E2[0], AU[0], nf, 1.0, K, wk[2])
        _TE_add(nv[0], nv[1], nv[2], 2.0, K)
        if tbody:
            Mn = wk[2]
            Mn[0, 0], Mn[1, 1], Mn[2, 2] = 0.0, 0.0, 0.0
            Mn[0, 1], Mn[0, 2], Mn[1, 0] = -nv[2], nv[1], nv[2]
            Mn[1, 2], Mn[2, 0], Mn[2, 1] = -nv[0], -nv[1], nv[0]
            _sandwich_add(E2[0], Mn, -1.0, K)
        for i in range(Nl):
            ri = c7 + i if i < 7 else c0 + i - 7
            for j in range(Nl):
                cj = c7 + j if j < 7 else c0 + j - 7
                Amat[ri, cm[cj]] -= aK * K[i, j]


@njit(cache=True, _nrt=False, inline="always")
def _Gt_add_nojac(b, nf, c0, rho, AU, E2, s, u, Q):
    """``Q[z] += G^T (s u)`` without forming ``G`` (the residual-only evaluation)."""
    c7 = 7 * b
    F0, F1, F2 = s * u[0], s * u[1], s * u[2]
    Q[c7] += F0
    Q[c7 + 1] += F1
    Q[c7 + 2] += F2
    n0 = rho[1] * F2 - rho[2] * F1
    n1 = rho[2] * F0 - rho[0] * F2
    n2 = rho[0] * F1 - rho[1] * F0
    for j in range(4):
        Q[c7 + 3 + j] += E2[0, j] * n0 + E2[1, j] * n1 + E2[2, j] * n2
    for l in range(nf):
        Q[c0 + l] += AU[0, l] * F0 + AU[1, l] * F1 + AU[2, l] * F2


@njit(cache=True)
def _rot(e):
    """Rotation matrix of the normalized Euler parameters ``e``."""
    A = np.empty((3, 3))
    _rot_to(e, A)
    return A


@njit(cache=True)
def _rot_to(e, A):
    """``A`` = the rotation matrix of the Euler parameters ``e`` (normalized here)."""
    e0, e1, e2, e3 = e[0], e[1], e[2], e[3]
    n2 = e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3
    d = e0 * e0 - e1 * e1 - e2 * e2 - e3 * e3
    A[0, 0] = (d + 2 * e1 * e1) / n2
    A[1, 1] = (d + 2 * e2 * e2) / n2
    A[2, 2] = (d + 2 * e3 * e3) / n2
    A[0, 1] = 2 * (e1 * e2 - e0 * e3) / n2
    A[1, 0] = 2 * (e1 * e2 + e0 * e3) / n2
    A[0, 2] = 2 * (e1 * e3 + e0 * e2) / n2
    A[2, 0] = 2 * (e1 * e3 - e0 * e2) / n2
    A[1, 2] = 2 * (e2 * e3 - e0 * e1) / n2
    A[2, 1] = 2 * (e2 * e3 + e0 * e1) / n2


# columns of the joint-force tables (:class:`ForceTable`)
_JI, _JJ, _JK, _JJAC, _JU = 0, 1, 2, 3, 4  # j_int: parent, child, kind, Jacobian, law address
_JP, _Jp, _JC, _Jc, _JHW, _JHP = 0, 9, 12, 21, 24, 30  # j_flt: frames, wrench and speed rows
_JKK, _JCC, _JQ0, _JA, _JU1, _JU2, _JH, _JREF = 36, 37, 38, 39, 42, 45, 48, 49
#: width of the joint-force float table
J_FLT = 50
#: kinds: constant wrench, spring-damper on a revolute angle, a prismatic displacement,
#: a screw angle
JF_CONST, JF_REVOLUTE, JF_PRISMATIC, JF_SCREW = 0, 1, 2, 3


@njit(cache=True)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True)
def _body_frame(b, q, qd, A, r, w, v, E2, Ed2):
    """Rotation, origin, angular velocity, velocity, ``2E(e)`` and ``2E(ed)`` of body
    ``b`` (ground, ``b < 0``: identity and zeros)."""
    if b < 0:
        for i in range(3):
            for j in range(3):
                A[i, j] = 1.0 if i == j else 0.0
            r[i] = 0.0
            w[i] = 0.0
            v[i] = 0.0
        return
    c7 = 7 * b
    _rot_to(q[c7 + 3 : c7 + 7], A)
    e0, e1, e2, e3 = q[c7 + 3], q[c7 + 4], q[c7 + 5], q[c7 + 6]
    E2[0, 0], E2[0, 1], E2[0, 2], E2[0, 3] = -2 * e1, 2 * e0, -2 * e3, 2 * e2
    E2[1, 0], E2[1, 1], E2[1, 2], E2[1, 3] = -2 * e2, 2 * e3, 2 * e0, -2 * e1
    E2[2, 0], E2[2, 1], E2[2, 2], E2[2, 3] = -2 * e3, -2 * e2, 2 * e1, 2 * e0
    d0, d1, d2, d3 = qd[c7 + 3], qd[c7 + 4], qd[c7 + 5], qd[c7 + 6]
    Ed2[0, 0], Ed2[0, 1], Ed2[0, 2], Ed2[0, 3] = -2 * d1, 2 * d0, -2 * d3, 2 * d2
    Ed2[1, 0], Ed2[1, 1], Ed2[1, 2], Ed2[1, 3] = -2 * d2, 2 * d3, 2 * d0, -2 * d1
    Ed2[2, 0], Ed2[2, 1], Ed2[2, 2], Ed2[2, 3] = -2 * d3, -2 * d2, 2 * d1, 2 * d0
    for i in range(3):
        r[i] = q[c7 + i]
        v[i] = qd[c7 + i]
        w[i] = E2[i, 0] * d0 + E2[i, 1] * d1 + E2[i, 2] * d2 + E2[i, 3] * d3


@njit(cache=True)
def _mv(A, x, out):
    """``out = A x`` (3x3 times 3)."""
    for i in range(3):
        out[i] = A[i, 0] * x[0] + A[i, 1] * x[1] + A[i, 2] * x[2]


@njit(cache=True)
def _skew_to(a, out):
    """``out = a~`` (3x3)."""
    out[0, 0], out[0, 1], out[0, 2] = 0.0, -a[2], a[1]
    out[1, 0], out[1, 1], out[1, 2] = a[2], 0.0, -a[0]
    out[2, 0], out[2, 1], out[2, 2] = -a[1], a[0], 0.0


@njit(cache=True)
def _mm_add(A, B, out, c):
    """``out += c A B`` (3x3 times 3 x k)."""
    for i in range(3):
        for l in range(B.shape[1]):
            out[i, l] += c * (A[i, 0] * B[0, l] + A[i, 1] * B[1, l] + A[i, 2] * B[2, l])


@njit(cache=True)
def _joint_force(el, q, qd, j_int, j_flt, j_in, Q, Amat, cm, aK, aD, jac, S, V, M3, B6):
    r"""One joint force (see :func:`joint_forces_add`); returns its power ``tau . qd`` (W).
    Scratch: ``S`` (2, 3, 3), ``V`` (24, 3), ``M3`` (8, 3, 3), ``B6`` (14, 7, 7)."""
    ends = (j_int[el, _JI], j_int[el, _JJ])  # parent i, child j
    kind = j_int[el, _JK]
    A, E2, Ed2 = S, B6[0, :3, :4], B6[1, :3, :4]
    Ep, Edp = B6[2, :3, :4], B6[3, :3, :4]
    r0, r1, w0, w1, v0, v1 = V[0], V[1], V[2], V[3], V[4], V[5]
    _body_frame(ends[0], q, qd, A[0], r0, w0, v0, Ep, Edp)
    _body_frame(ends[1], q, qd, A[1], r1, w1, v1, E2, Ed2)
    T = j_flt[el]
    FP, FC = M3[0], M3[1]
    for i in range(3):
        for j in range(3):
            FP[i, j] = A[0, i, 0] * T[_JP + j] + A[0, i, 1] * T[_JP + 3 + j]
            FP[i, j] += A[0, i, 2] * T[_JP + 6 + j]
            FC[i, j] = A[1, i, 0] * T[_JC + j] + A[1, i, 1] * T[_JC + 3 + j]
            FC[i, j] += A[1, i, 2] * T[_JC + 6 + j]
    pP, rho, sig, Nh, Fh, hpw, hpv = V[6], V[7], V[8], V[9], V[10], V[11], V[12]
    om, y, t1, t2, c1, c2, c3 = V[13], V[14], V[15], V[16], V[17], V[18], V[19]
    _mv(A[0], T[_Jp : _Jp + 3], pP)
    _mv(A[1], T[_Jc : _Jc + 3], rho)  # p_C - r_j
    for i in range(3):
        pP[i] += r0[i]
        sig[i] = r1[i] + rho[i] - r0[i]  # p_C - r_i
    _mv(FC, T[_JHW : _JHW + 3], Nh)  # world wrench per unit tau
    _mv(FC, T[_JHW + 3 : _JHW + 6], Fh)
    _mv(FC, T[_JHP : _JHP + 3], hpw)  # world speed row
    _mv(FC, T[_JHP + 3 : _JHP + 6], hpv)
    _cross(w1, rho, t1)
    _cross(w0, sig, t2)
    qdv = 0.0
    for i in range(3):
        om[i] = w1[i] - w0[i]
        y[i] = v1[i] - v0[i] + t1[i] - t2[i]
        qdv += hpw[i] * om[i] + hpv[i] * y[i]  # joint speed
    # derivatives of tau w.r.t. x_b = [dphi; dr] and V_b = [w; v] (b: 0 parent, 1 child)
    Dtx, DtV = B6[4, :2, :6], B6[5, :2, :6]
    Dtx[:, :] = 0.0
    DtV[:, :] = 0.0
    tau = 1.0
    if kind != JF_CONST:
        kk, cc = T[_JKK], T[_JCC]
        dq = B6[6, :2, :6]
        dq[:, :] = 0.0
        aP, cu1, pu1, pu2 = V[20], V[21], V[22], V[23]
        if kind == JF_PRISMATIC:
            _mv(FP, T[_JA : _JA + 3], aP)
            qj = 0.0
            for i in range(3):
                qj += aP[i] * (r1[i] + rho[i] - pP[i])
            _cross(aP, sig, t1)
            _cross(rho, aP, t2)
            for i in range(3):
                dq[0, i] = t1[i]
                dq[0, 3 + i] = -aP[i]
                dq[1, i] = t2[i]
                dq[1, 3 + i] = aP[i]
        else:
            _mv(FC, T[_JU1 : _JU1 + 3], cu1)
            _mv(FP, T[_JU1 : _JU1 + 3], pu1)
            _mv(FP, T[_JU2 : _JU2 + 3], pu2)
            xx = cu1[0] * pu1[0] + cu1[1] * pu1[1] + cu1[2] * pu1[2]
            yy = cu1[0] * pu2[0] + cu1[1] * pu2[1] + cu1[2] * pu2[2]
            qj = np.arctan2(yy, xx)
            hh = T[_JH]
            if kind == JF_SCREW and hh != 0.0:
                _mv(FP, T[_JA : _JA + 3], aP)
                sh = 0.0
                for i in range(3):
                    sh += aP[i] * (r1[i] + rho[i] - pP[i])
                qj += 2 * np.pi * np.round((sh / hh - qj) / (2 * np.pi))
            else:
                qj += 2 * np.pi * np.round((T[_JREF] - qj) / (2 * np.pi))
                T[_JREF] = qj  # the branch follows the motion (steps turn < pi)
            r2 = xx * xx + yy * yy
            for i in range(3):
                t2[i] = (xx * pu2[i] - yy * pu1[i]) / r2
            _cross(cu1, t2, t1)
            for i in range(3):
                dq[0, i] = -t1[i]
                dq[1, i] = t1[i]
        u = j_int[el, _JU]
        if u != 0:  # the address of a user's compiled law: its value and derivatives
            tau = law_value(u, qj, qdv, j_in[1], 0)
            kk = -law_value(u, qj, qdv, j_in[1], 1)
            cc = -law_value(u, qj, qdv, j_in[1], 2)
        else:
            tau = j_in[0] - kk * (qj - T[_JQ0]) - cc * qdv
        # d qd / dx, d qd / dV
        hw_ = V[20]  # aP no longer needed
        _cross(hpv, w0, hw_)
        _cross(hpw, om, c1)
        _cross(hpv, y, c2)
        _cross(hpv, om, t2)
        _cross(rho, t2, c3)
        _cross(rho, hpv, t1)
        _cross(sig, hpv, t2)
        for i in range(3):
            Dtx[1, i] = -kk * dq[1, i] - cc * (c1[i] + c2[i] + c3[i])
            Dtx[1, 3 + i] = -kk * dq[1, 3 + i] + cc * hw_[i]
            Dtx[0, i] = -kk * dq[0, i]
            Dtx[0, 3 + i] = -kk * dq[0, 3 + i] - cc * hw_[i]
            DtV[1, i] = -cc * (hpw[i] + t1[i])
            DtV[1, 3 + i] = -cc * hpv[i]
            DtV[0, i] = cc * (hpw[i] + t2[i])
            DtV[0, 3 + i] = cc * hpv[i]
    f, n = V[21], V[22]
    for i in range(3):
        f[i] = Fh[i] * tau
        n[i] = Nh[i] * tau
    # wrenches about the body origins: child [n + rho x f; f], parent -[n + sig x f; f]
    Mw = B6[7, :2, :3]
    _cross(rho, f, t1)
    _cross(sig, f, t2)
    for i in range(3):
        Mw[1, i] = n[i] + t1[i]
        Mw[0, i] = -(n[i] + t2[i])
    sgn = (-1.0, 1.0)
    for k in range(2):
        b = ends[k]
        if b < 0:
            continue
        Ek = Ep if k == 0 else E2
        c7 = 7 * b
        for i in range(3):
            Q[c7 + i] += sgn[k] * f[i]
        for l in range(4):
            Q[c7 + 3 + l] += Ek[0, l] * Mw[k, 0] + Ek[1, l] * Mw[k, 1] + Ek[2, l] * Mw[k, 2]
    if not (jac and j_int[el, _JJAC] != 0):
        return tau * qdv
    # body-level blocks K_ab = dF_a/dx_b, C_ab = dF_a/dV_b (F = [moment; force])
    fs, ns, Rs = M3[3], M3[4], M3[5]
    _skew_to(f, fs)
    _skew_to(n, ns)
    _skew_to(rho, Rs)
    Kb, Cb = B6[8, :6, :6], B6[9, :6, :6]
    G, Gd = B6[10], B6[11]
    dFq, dFd = B6[12], B6[13]
    dF = B6[0, 3:6, :6]
    dN = B6[1, 3:6, :6]
    dS = B6[2, 3:6, :6]
    cF = B6[3, 3:6, :6]
    cN = B6[4, 3:6, :6]
    for bk in range(2):
        if ends[bk] < 0:
            continue
        Eb = Ep if bk == 0 else E2
        Edb = Edp if bk == 0 else Ed2
        for i in range(3):
            for j in range(6):
                dF[i, j] = Fh[i] * Dtx[bk, j]
                dN[i, j] = Nh[i] * Dtx[bk, j]
                cF[i, j] = Fh[i] * DtV[bk, j]
                cN[i, j] = Nh[i] * DtV[bk, j]
                dS[i, j] = 0.0
        if bk == 1:  # f, n turn with the child; p_C moves with it: dsig = [-rho~, I]
            for i in range(3):
                for j in range(3):
                    dF[i, j] -= fs[i, j]
                    dN[i, j] -= ns[i, j]
                    dS[i, j] = -Rs[i, j]
                dS[i, 3 + i] = 1.0
        else:
            for i in range(3):
                dS[i, 3 + i] = -1.0
        for ak in range(2):
            a = ends[ak]
            if a < 0:
                continue
            Ea = Ep if ak == 0 else E2
            arm = rho if ak == 1 else sig
            s_ = sgn[ak]
            for i in range(3):
                i1 = (i + 1) % 3
                i2 = (i + 2) % 3
                for j in range(6):
                    # moment rows: dn + arm~ df ; force rows: df
                    Kb[i, j] = dN[i, j] + arm[i1] * dF[i2, j] - arm[i2] * dF[i1, j]
                    Cb[i, j] = cN[i, j] + arm[i1] * cF[i2, j] - arm[i2] * cF[i1, j]
                    Kb[3 + i, j] = dF[i, j]
                    Cb[3 + i, j] = cF[i, j]
            if ak == 1:
                if bk == 1:  # the child's own arm rho turns: f~ rho~ dphi
                    _mm_add(fs, Rs, Kb[:3, :3], 1.0)
            else:  # the parent's arm sig = p_C - r_i: -f~ dsig
                _mm_add(fs, dS, Kb[:3], -1.0)
            # to the coordinates (r, e) of a and b (:func:`.forces.map_jacobians`)
            for i in range(6):
                for j in range(3):
                    dFq[i, j] = s_ * Kb[i, 3 + j]
                    dFd[i, j] = s_ * Cb[i, 3 + j]
                for j in range(4):
                    x1 = 0.0
                    x2 = 0.0
                    for l in range(3):
                        x1 += Kb[i, l] * Eb[l, j] - Cb[i, l] * Edb[l, j]
                        x2 += Cb[i, l] * Eb[l, j]
                    dFq[i, 3 + j] = s_ * x1
                    dFd[i, 3 + j] = s_ * x2
            for j in range(7):
                for i in range(3):
                    G[i, j] = dFq[3 + i, j]
                    Gd[i, j] = dFd[3 + i, j]
                for i in range(4):
                    G[3 + i, j] = Ea[0, i] * dFq[0, j] + Ea[1, i] * dFq[1, j] + Ea[2, i] * dFq[2, j]
                    Gd[3 + i, j] = (
                        Ea[0, i] * dFd[0, j] + Ea[1, i] * dFd[1, j] + Ea[2, i] * dFd[2, j]
                    )
            if ak == bk:
                _TE_add(Mw[ak, 0], Mw[ak, 1], Mw[ak, 2], 2.0, G)
            ra, cb = 7 * a, 7 * ends[bk]
            for i in range(7):
                for j in range(7):
                    Amat[ra + i, cm[cb + j]] -= aK * G[i, j] + aD * Gd[i, j]
    return tau * qdv


@njit(cache=True)
def joint_forces_add(q, qd, j_int, j_flt, j_in, Q, Amat, cm, aK, aD, jac):
    r"""Add the generalized forces of the joint forces (:class:`~flexmbd.JointForce`) to
    ``Q`` and, with ``jac``, ``-(aK dQ/dq + aD dQ/dqd)`` to ``Amat``; returns their power
    ``sum tau . qd`` (W).

    A joint force is the wrench ``W = h tau`` (child joint-frame axes, ``h`` the motion
    subspace column over its squared length: :func:`flexmbd.joint_types.wrench_from_force`)
    at the child frame's origin ``p_C``, on the child, its opposite on the parent. With
    ``f = F_C h_f tau``, ``n = F_C h_n tau`` (world), ``rho = p_C - r_j``,
    ``sigma = p_C - r_i``, the body wrenches about the body origins are::

        F_j = [n + rho x f; f],   F_i = -[n + sigma x f; f],
        joint speed  qd = hp_w . (w_j - w_i) + hp_v . (v_j + w_j x rho - v_i - w_i x sigma)

    (``hp_w``, ``hp_v`` = ``F_C H^T / |H|^2``, world). ``tau`` is 1 for a constant wrench
    (``h`` holds it) or ``tau = j_tau - k (q - q0) - c qd`` for the spring-damper law of a
    Revolute (angle ``atan2(F_C u1 . F_P u2, F_C u1 . F_P u1)``, unwrapped against the last
    evaluation), a Screw (the same angle, its turn fixed by the advance) or a Prismatic
    (``q = F_P a . (p_C - p_P)``) joint. Exact derivatives (``x = [dphi; dr]``)::

        dq/dphi_j = -dq/dphi_i = F_C u1 x (x_c F_P u2 - y_c F_P u1) / (x_c^2 + y_c^2)   angle
        dq/dx_i = [F_P a x sigma; -F_P a],  dq/dx_j = [rho x F_P a; F_P a]             slide
        dqd/dx_j = [hp_w x om + hp_v x y + rho x (hp_v x om); -hp_v x w_i],
        dqd/dx_i = [0; hp_v x w_i],  dqd/dV_j = [hp_w + rho x hp_v; hp_v],
        dqd/dV_i = -[hp_w + sigma x hp_v; hp_v]

    (``om = w_j - w_i``, ``y`` the bracket of ``qd``); ``f``, ``n`` and ``rho`` turn with the
    child. The body blocks ``dF_a/dx_b``, ``dF_a/dV_b`` map to Euler parameters as in
    :func:`flexmbd.absolute.forces.map_jacobians` (plus ``2 TE(moment)`` on ``(e_a, e_a)``).
    A :meth:`~flexmbd.JointForce.compiled_law` replaces the linear law: ``tau``,
    ``-k`` and ``-c`` are its value and derivatives ``law(q, qd, t, 0..2)``, called through
    the address in the element's ``j_int`` row (:func:`flexmbd._nblaws.law_value`; 0: the
    linear law). ``j_int`` (m, 5), ``j_flt`` (m, :data:`J_FLT`): :class:`ForceTable`;
    ``j_in`` (m, 6): the actuator value (column 0) and the time (column 1)."""
    S, V, M3, B6 = joint_forces_scratch()
    return joint_forces_add_into(q, qd, j_int, j_flt, j_in, Q, Amat, cm, aK, aD, jac, S, V, M3, B6)


@njit(cache=True)
def joint_forces_scratch():
    """The scratch ``S, V, M3, B6`` of :func:`joint_forces_add_into` (which zeroes it)."""
    return np.empty((2, 3, 3)), np.empty((24, 3)), np.empty((8, 3, 3)), np.empty((14, 7, 7))


@njit(cache=True, _nrt=False)
def joint_forces_add_into(q, qd, j_int, j_flt, j_in, Q, Amat, cm, aK, aD, jac, S, V, M3, B6):
    """:func:`joint_forces_add` with its scratch from :func:`joint_forces_scratch` (zeroed
    here; allocates nothing: callable from kernels compiled without reference counting);
    returns the power (W)."""
    V[:] = 0.0
    M3[:] = 0.0
    B6[:] = 0.0
    pw = 0.0
    for el in range(j_int.shape[0]):
        pw += _joint_force(
            el, q, qd, j_int, j_flt, j_in[el], Q, Amat, cm, aK, aD, jac, S, V, M3, B6
        )
    return pw


@njit(cache=True, inline="always")
def _sda_ends(el, q, qd, s_int, s_flt, s_U, P, vP, G0, rho, AU, E2, w, wk):
    """World positions ``P[k]`` and velocities ``vP[k]`` (m, m/s) of SDA ``el``'s two ends
    (:func:`_end_kin` without Jacobians; the other arrays its scratch)."""
    for k in range(2):
        nf = s_int[el, _SN + k]
        o = s_int[el, _SO + k]
        _end_kin(
            s_int[el, _SB + k],
            s_flt[el, 3 * k : 3 * k + 3],
            nf,
            s_int[el, _SC + k],
            s_U[o : o + 3 * nf].reshape(3, nf),
            q,
            qd,
            P[k],
            vP[k],
            G0,
            G0,
            rho,
            AU,
            E2,
            w,
            wk,
        )


@njit(cache=True)
def _sda_tension(el, q, qd, s_int, s_flt, s_U, fa, u):
    """Tension ``f = k (l - l0) + c ldot + f_a`` (N) of SDA ``el``; its unit vector from end
    ``i`` to end ``j`` into ``u`` (world)."""
    P = np.empty((2, 3))
    vP = np.empty((2, 3))
    G0 = np.zeros((0, 7))
    rho = np.zeros(3)
    AU = np.zeros((3, max(1, s_int[el, _SN], s_int[el, _SN + 1])))
    E2 = np.zeros((3, 4))
    w = np.zeros(3)
    wk = np.empty((6, 3, 4))
    _sda_ends(el, q, qd, s_int, s_flt, s_U, P, vP, G0, rho, AU, E2, w, wk)
    ll = 0.0
    for i in range(3):
        u[i] = P[1, i] - P[0, i]
        ll += u[i] * u[i]
    length = np.sqrt(ll)
    ld = 0.0
    for i in range(3):
        u[i] /= length
        ld += u[i] * (vP[1, i] - vP[0, i])
    return s_flt[el, 6] * (length - s_flt[el, 8]) + s_flt[el, 7] * ld + fa


@njit(cache=True)
def interface_force_loads(
    q, qd, s_int, s_flt, s_U, fa, l_int, l_F, i_int, U, U_off, load_off, f_n, f_o3, v, Kitf
):
    """Add the point forces and SDA end forces at stiffened interfaces to the lagged
    interface loads ``v`` and their stiffness ``Kitf`` (after
    :func:`flexmbd.absolute.engine._interface_loads` set the joints' part): the force
    ``[0; A^T f]`` (body axes, at the interface origin) of each row of ``i_int`` (kind 0: a
    point load, 1: an SDA end; element; end; flexible body; first component of the
    interface in ``v``), and ``v_c U_c`` for each component it changes, as
    :meth:`flexmbd.absolute.system.AbsoluteSystem.update_interface_loads` does with the
    step's time functions ``fa``, ``l_F`` and rates ``qd``."""
    u = np.empty(3)
    fw = np.empty(3)
    for r in range(i_int.shape[0]):
        kind, el, end, kf, o = i_int[r, 0], i_int[r, 1], i_int[r, 2], i_int[r, 3], i_int[r, 4]
        if kind == 0:
            b = l_int[el, _LB]
            A = _rot(q[7 * b + 3 : 7 * b + 7])
            for i in range(3):
                if l_int[el, 4] != 0:  # body axes
                    fw[i] = A[i, 0] * l_F[el, 0] + A[i, 1] * l_F[el, 1] + A[i, 2] * l_F[el, 2]
                else:
                    fw[i] = l_F[el, i]
        else:
            b = s_int[el, _SB + end]
            A = _rot(q[7 * b + 3 : 7 * b + 7])
            f = _sda_tension(el, q, qd, s_int, s_flt, s_U, fa[el], u)
            sF = 1.0 if end == 0 else -1.0
            for i in range(3):
                fw[i] = sF * f * u[i]
        nf = f_n[kf]
        ko = f_o3[kf] // 9
        lo = load_off[kf]
        u0 = U_off[kf]
        for i in range(3):
            dv = A[0, i] * fw[0] + A[1, i] * fw[1] + A[2, i] * fw[2]
            c = o + 3 + i
            v[c] += dv
            base = u0 + (c - lo) * nf * nf
            for a in range(nf * nf):
                Kitf[ko + a] += dv * U[base + a]


@njit(cache=True)
def force_energies(Q, Qd, s_int, s_flt, s_U, FA, l_int, l_flt, l_U, LF, out, j_int, j_flt):
    """Per sample ``t``: SDA spring energy, damper power ``c ldot^2``, actuator power
    ``-f_a ldot`` plus the joint forces' ``tau . qd`` (as the generic path books them) and
    the power of the point loads ``f . vP + n . w`` into ``out`` (nt, 4). ``FA`` (nt or 1,
    m) and ``LF`` (nt or 1, p + joint forces, 6): the time functions per sample; ``j_int``,
    ``j_flt``: the joint-force tables (their unwrapping references move along)."""
    nt = Q.shape[0]
    m = s_int.shape[0]
    p = l_int.shape[0]
    nmax = 1
    for e in range(m):
        nmax = max(nmax, s_int[e, _SN], s_int[e, _SN + 1])
    for e in range(p):
        nmax = max(nmax, l_int[e, _LN])
    P = np.empty((2, 3))
    vP = np.empty((2, 3))
    G0 = np.zeros((0, 7))
    rho = np.zeros(3)
    AU = np.zeros((3, nmax))
    E2 = np.zeros((3, 4))
    w = np.zeros(3)
    wk = np.empty((6, 3, 4))
    Qj = np.zeros(Q.shape[1])
    Aj = np.zeros((0, 0))
    cmj = np.zeros(0, np.int64)
    for t in range(nt):
        q = Q[t]
        qd = Qd[t]
        tf = t if FA.shape[0] > 1 else 0
        tl = t if LF.shape[0] > 1 else 0
        sp = 0.0
        pdmp = 0.0
        pact = 0.0
        pext = 0.0
        for el in range(m):
            _sda_ends(el, q, qd, s_int, s_flt, s_U, P, vP, G0, rho, AU, E2, w, wk)
            ll = 0.0
            dl = 0.0
            for i in range(3):
                di = P[1, i] - P[0, i]
                ll += di * di
                dl += di * (vP[1, i] - vP[0, i])
            length = np.sqrt(ll)
            ldot = dl / length
            x = length - s_flt[el, 8]
            sp += 0.5 * s_flt[el, 6] * x * x
            pdmp += s_flt[el, 7] * ldot * ldot
            pact -= FA[tf, el] * ldot
        for el in range(p):
            b = l_int[el, _LB]
            nf = l_int[el, _LN]
            o = l_int[el, _LO]
            _end_kin(
                b,
                l_flt[el],
                nf,
                l_int[el, _LC],
                l_U[o : o + 3 * nf].reshape(3, nf),
                q,
                qd,
                P[0],
                vP[0],
                G0,
                G0,
                rho,
                AU,
                E2,
                w,
                wk,
            )
            A = _rot(q[7 * b + 3 : 7 * b + 7])
            for i in range(3):
                fi = 0.0
                ni = 0.0
                for j in range(3):
                    fi += A[i, j] * LF[tl, el, j]
                    ni += A[i, j] * LF[tl, el, 3 + j]
                if l_int[el, 4] == 0:
                    fi = LF[tl, el, i]
                if l_int[el, 5] == 0:
                    ni = LF[tl, el, 3 + i]
                pext += fi * vP[0, i] + ni * w[i]
        if j_int.shape[0]:
            pact += joint_forces_add(q, qd, j_int, j_flt, LF[tl, p:], Qj, Aj, cmj, 0.0, 0.0, False)
        out[t, 0] = sp
        out[t, 1] = pdmp
        out[t, 2] = pact
        out[t, 3] = pext


#: joint types whose motion subspace is constant in child axes (a constant joint force
#: is then a constant wrench in the child joint frame)
_CONST_H = ("Revolute", "Prismatic", "Cylindrical", "Screw", "Planar", "Fixed", "Free")
_LAW_KIND = {"Revolute": JF_REVOLUTE, "Prismatic": JF_PRISMATIC, "Screw": JF_SCREW}


def joint_force_kind(el):
    """The compiled kind of the :class:`~flexmbd.JointForce` ``el`` (:data:`JF_CONST`, a
    spring-damper kind) or -1 when the engine cannot evaluate it (a Python law)."""
    name = type(el.joint).__name__
    if el.law is not None or el.user_law is not None:
        return _LAW_KIND.get(name, -1)
    if el.constant_force is not None and name in _CONST_H:
        return JF_CONST
    return -1


class ForceTable:
    """The force elements of an absolute system as the engine's flat arrays.

    Built from :class:`~flexmbd.absolute.system.AbsoluteSystem`'s element lists (rigid
    SDAs, :class:`.flexible.FlexSDA`, point forces and torques incl. those at deforming
    frames). Parameters (``k``, ``c``, ``l0``, the Jacobian switch) are re-read by
    :meth:`refresh`; time functions are tabulated by :meth:`at` / :meth:`tabulate`.
    """

    def __init__(self, system):
        from ..model.forces import PointForce, PointTorque

        s = system
        self.system = s
        self.exact = s.jacobian_mode == "exact"
        ends = []  # per SDA: ((body, s0, U) for i and j, element)
        terms = s.force_terms
        for f in terms.sda_batch.el if terms.sda_batch is not None else ():
            ee = []
            for body, pt in ((f.body_i, f.point_i), (f.body_j, f.point_j)):
                b = s.index.get(id(body), -1)
                ee.append((b, np.asarray(pt, float), np.zeros((3, 0)), 0))
            ends.append((ee, f))
        for fs in terms.flex_sda:
            ee = []
            for k, pt in enumerate(fs.points):
                x = fs.ends[k]
                if x is None:
                    ee.append((-1, np.asarray(pt, float), np.zeros((3, 0)), 0))
                else:
                    i, s0, U, cols, _ = x
                    ee.append(
                        (
                            i,
                            np.asarray(s0, float),
                            np.asarray(U, float),
                            int(cols[0]) if len(cols) else 0,
                        )
                    )
            ends.append((ee, fs.el))
        self.sda = [el for _, el in ends]
        m = len(ends)
        self.s_int = np.zeros((m, 9), np.int64)
        self.s_flt = np.zeros((m, 9))
        Us = []
        o = 0
        for r, (ee, _) in enumerate(ends):
            for k, (b, s0, U, c0) in enumerate(ee):
                nf = U.shape[1]
                self.s_int[r, [_SB + k, _SN + k, _SC + k, _SO + k]] = (b, nf, c0, o)
                self.s_flt[r, 3 * k : 3 * k + 3] = s0
                Us.append(U.ravel())
                o += U.size
        self.s_U = np.ascontiguousarray(np.concatenate(Us)) if Us else np.zeros(0)
        # point loads
        flex_pf = {id(x.el): x for x in terms.flex_point_forces}
        loads = [f for f in s.forces if type(f) in (PointForce, PointTorque)]
        self.loads = loads
        p = len(loads)
        self.l_int = np.zeros((p, 7), np.int64)
        self.l_flt = np.zeros((p, 3))
        Ul = []
        o = 0
        for r, f in enumerate(loads):
            b = s.index[id(f.body)]
            U = np.zeros((3, 0))
            c0 = 0
            if id(f) in flex_pf:
                x = flex_pf[id(f)]
                U, c0 = np.asarray(x.U, float), x.d.col0
                self.l_flt[r] = x.s0
            elif type(f) is PointForce:
                self.l_flt[r] = f.point
            self.l_int[r] = (
                b,
                U.shape[1],
                c0,
                o,
                type(f) is PointForce and f.frame == "body",
                type(f) is PointTorque and f.frame == "body",
                self.exact and f.has_jacobian,
            )
            Ul.append(U.ravel())
            o += U.size
        self.l_U = np.ascontiguousarray(np.concatenate(Ul)) if Ul else np.zeros(0)
        # joint forces: their time functions follow the point loads in F (column 0)
        self.jf = [jm.el for jm in terms.joint_forces]
        self._jmaps = list(terms.joint_forces)
        self.j_int = np.zeros((len(self.jf), 5), np.int64)
        self.j_flt = np.zeros((len(self.jf), J_FLT))
        self._refs = [None] * len(self.jf)
        for r, el in enumerate(self.jf):
            self._joint_row(r, el)
        self.i_int = self._interface_rows(terms, len(ends) - len(terms.flex_sda))
        self.refresh()
        self.fa = self._fa(0.0)
        self.F = self._loads(0.0)

    def _joint_row(self, r, el):
        """Row ``r`` of the joint-force tables for the :class:`~flexmbd.JointForce` ``el``."""
        from ..joint_types import perp_basis

        s = self.system
        j = el.joint
        kind = joint_force_kind(el)
        if kind < 0:
            raise ModelError(
                f"JointForce {el.name!r}: the compiled engine takes constant forces on joints "
                f"with a constant motion subspace and JointForce.spring_damper laws on "
                f"Revolute/Prismatic/Screw joints; use engine=False for this one"
            )
        # a user's compiled law by its address (the element keeps the cfunc alive)
        u = 0 if el.user_law is None else law_address(el)
        self.j_int[r] = (s.index.get(id(j.parent), -1), s.index.get(id(j.child), -1), kind, 0, u)
        T = self.j_flt[r]
        T[_JP : _JP + 9] = np.asarray(j.parent_frame.rotation, float).ravel()
        T[_Jp : _Jp + 3] = j.parent_frame.position
        T[_JC : _JC + 9] = np.asarray(j.child_frame.rotation, float).ravel()
        T[_Jc : _Jc + 3] = j.child_frame.position
        H = np.asarray(j.motion_subspace(j.q0), float).reshape(6, -1)
        n2 = np.einsum("ij,ij->j", H, H)
        if kind == JF_CONST:
            T[_JHW : _JHW + 6] = (H / n2) @ el.constant_force
            T[_JHP : _JHP + 6] = T[_JHW : _JHW + 6]  # its power W . V_rel = tau . qd
        else:
            T[_JHW : _JHW + 6] = H[:, 0] / n2[0]
            T[_JHP : _JHP + 6] = H[:, 0] / n2[0]
            if el.law is not None:
                T[_JKK], T[_JCC], T[_JQ0] = el.law
            a = np.asarray(j.axis, float)
            T[_JA : _JA + 3] = a
            if kind != JF_PRISMATIC:
                u1, u2 = perp_basis(a)
                T[_JU1 : _JU1 + 3] = u1
                T[_JU2 : _JU2 + 3] = u2
                T[_JH] = getattr(j, "h", 0.0)
            T[_JREF] = float(np.asarray(j.q0, float).ravel()[0])

    def _interface_rows(self, terms, n_rigid_sda):
        """Rows ``(kind, element, end, flexible body, first component in v)`` of the point
        forces (kind 0) and SDA ends (kind 1) at stiffened interfaces
        (:func:`interface_force_loads`)."""
        s = self.system
        flex = s.flexible.flex
        rows = []
        if not any(d.itf_names for d in flex):
            return np.zeros((0, 5), np.int64)
        load_off = s.interface_load_table().load_off
        for kf, d in enumerate(flex):
            if not d.itf_names:
                continue

            def comp(name, d=d, o=int(load_off[kf])):
                return o + 6 * d.itf_names.index(name)

            for r, f in enumerate(self.loads):
                fp = next((x for x in terms.flex_point_forces if x.el is f), None)
                name = getattr(f.attachment, "interface_name", None)
                if fp is not None and fp.d is d and name in d.itf_names:
                    rows.append((0, r, 0, kf, comp(name)))
            for r, fs in enumerate(terms.flex_sda):
                for a in (0, 1):
                    name = getattr((fs.el.frame_i, fs.el.frame_j)[a], "interface_name", None)
                    e_ = fs.ends[a]
                    if e_ is not None and e_[0] == d.index and name in d.itf_names:
                        rows.append((1, n_rigid_sda + r, a, kf, comp(name)))
        return np.array(rows, np.int64).reshape(-1, 5)

    def _sync_references(self):
        """One unwrapping reference per angle law: the generic path's map
        (:class:`.forces.JointForceMap` ``q_ref``, which checkpoints save and load) views
        the table's entry, which the kernel advances; a new ``q_ref`` set from outside (a
        loaded checkpoint, a generic step) is copied in first."""
        for r, jm in enumerate(self._jmaps):
            if self.j_int[r, _JK] in (JF_REVOLUTE, JF_SCREW) and jm.q_ref is not self._refs[r]:
                self.j_flt[r, _JREF] = float(np.asarray(jm.q_ref, float).ravel()[0])
                self._refs[r] = jm.q_ref = self.j_flt[r, _JREF : _JREF + 1]

    def couplings(self):
        """Body pairs each element couples (for the Newton matrix's pattern)."""
        return [list(r) for r in self.s_int[:, :2]] + [list(r) for r in self.j_int[:, :2]]

    @property
    def empty(self):
        return len(self.sda) == 0 and len(self.loads) == 0 and len(self.jf) == 0

    def refresh(self):
        """Re-read the mutable element parameters (SDA ``k``, ``c``, ``l0``, the joint laws'
        ``(k, c, q0)``, the Jacobian switch)."""
        for r, el in enumerate(self.sda):
            self.s_flt[r, 6] = el.k
            self.s_flt[r, 7] = el.c
            self.s_flt[r, 8] = el.free_length()
            self.s_int[r, 8] = self.exact and el.has_jacobian
        for r, el in enumerate(self.jf):
            self.j_int[r, _JJAC] = self.exact and el.has_jacobian
            if el.law is not None:  # a law's constants may be parameters (ViscousBearing.c)
                T = self.j_flt[r]
                T[_JKK], T[_JCC], T[_JQ0] = el.law
        self._sync_references()

    def _fa(self, t):
        return np.array([e.actuator_force(t) for e in self.sda], float)

    def _loads(self, t):
        from ..model.forces import PointForce

        p = len(self.loads)
        F = np.zeros((p + len(self.jf), 6))
        for r, f in enumerate(self.loads):
            if type(f) is PointForce:
                F[r, :3] = f.force(t)
            else:
                F[r, 3:] = f.torque(t)
        for r, el in enumerate(self.jf):
            if el.actuator is not None:
                F[p + r, 0] = el.actuator(t)
            F[p + r, 1] = t  # for compiled laws
        return F

    def at(self, t):
        """Time functions at ``t``: ``(fa (m,), F (p, 6))`` (kept in :attr:`fa`, :attr:`F`)."""
        if self.sda:
            self.fa = self._fa(t)
        if self.loads or self.jf:
            self.F = self._loads(t)
        return self.fa, self.F

    def tabulate(self, times):
        """``(FA (nt or 1, m), LF (nt or 1, p, 6))`` over ``times`` (first axis 1: constant)."""
        from ..model.forces import PointForce

        timed_a = any(callable(e.fa) for e in self.sda)
        FA = (
            np.array([self._fa(t) for t in times])
            if timed_a
            else self._fa(times[0] if len(times) else 0.0)[None]
        )
        timed_l = any(
            not getattr(f.force if type(f) is PointForce else f.torque, "constant", False)
            for f in self.loads
        ) or any(
            el.user_law is not None
            or (el.actuator is not None and not getattr(el.actuator, "constant", False))
            for el in self.jf
        )
        LF = (
            np.array([self._loads(t) for t in times])
            if timed_l and len(times)
            else self._loads(times[0] if len(times) else 0.0)[None]
        )
        return (
            np.ascontiguousarray(FA.reshape(len(FA), len(self.sda))),
            np.ascontiguousarray(LF.reshape(len(LF), len(self.loads) + len(self.jf), 6)),
        )
