"""Compiled force elements of a rigid recursive tree (numba): spring-damper-actuators,
point forces and torques, constant joint forces (gravity stays in the tree solver).

A force table (built by :meth:`flexmbd.recursive.system.RecursiveSystem.compiled_forces`)
is the tuple ``(fi, ff, tau_c, S)``:

* ``fi`` (n, 4) int64 rows ``(kind, label_a, label_b, body_axes)``: ``kind`` is
  :data:`SDA`, :data:`FORCE` or :data:`TORQUE`; labels are tree labels (0: the ground);
  ``body_axes`` 1 when the load's vector is given in the axes of its body;
* ``ff`` (n, 10) float rows: for an SDA the two attachment points (m; in the axes of the
  tree frame e_k at its origin O_k, world coordinates for a ground end), ``k`` (N/m),
  ``c`` (N s/m), ``l0`` (m), ``fa`` (N, tension positive); for a point force the point
  (e_k coordinates) and the force (N, world axes or e_k axes); for a torque the torque
  (N m, world axes or e_k axes) in columns 3-5;
  for a joint law (``JLAW``, the int row ``(JLAW, q index, speed index, 0)``) the
  stiffness ``k``, damping ``c``, ``q0`` and actuator force ``fa`` of
  :meth:`flexmbd.JointForce.spring_damper` in columns 0-3 (:func:`joint_law_force`);
  for a user's compiled law (``ULAW``, the int row ``(ULAW, q index, speed index,
  address)``: the address of the numba ``cfunc`` of :meth:`flexmbd.JointForce.compiled_law`)
  the time ``t`` (s) of the evaluation in column 0, the table's *clock* (written by
  whoever knows the time: :func:`set_clock`, or as a table value that is a function of
  time), and the force ``law(q, qd, t, 0)`` (:func:`flexmbd._nblaws.user_law`);
* ``tau_c`` (nv,) the sum of the constant joint forces (N or N m along the tree speeds);
* ``S`` (9, 3) scratch (the kernels run without numba's reference counting, as the tree
  solver's entry points do: they allocate nothing).

:func:`apply_forces` adds the wrenches to the tree's external loads ``fext`` (e_k axes,
moments about O_k: the convention of :func:`flexmbd.recursive._kernels.bias_forces`)
after a kinematics pass with world poses, and ``tau_c`` to the joint forces. The SDA law
``f = k (l - l0) + c ldot + fa`` is :func:`sda_line_force`, the model's
:meth:`flexmbd.SpringDamperActuator.line_force` in compiled form.
"""

import numpy as np

from .._jit import njit
from .._nblaws import user_law
from . import _kernels as K

#: kinds of the rows of a force table
SDA, FORCE, TORQUE, JLAW, ULAW = 0, 1, 2, 3, 4
#: columns of the float rows
NF = 10


def empty_table(nv: int) -> tuple:
    """A force table without elements for a tree of ``nv`` speeds."""
    return (np.zeros((0, 4), np.int64), np.zeros((0, NF)), np.zeros(max(nv, 1)), scratch())


def scratch() -> np.ndarray:
    """The scratch array of a force table."""
    return np.zeros((9, 3))


@njit(cache=True, inline="always")
def sda_line_force(k, c, l0, fa, length, ldot):
    """Force along an SDA's line ``f = k (l - l0) + c ldot + fa`` (N, positive in
    tension) at length ``l`` (m) and rate ``ldot`` (m/s)."""
    return k * (length - l0) + c * ldot + fa


@njit(cache=True, inline="always")
def joint_law_force(k, c, q0, fa, qj, qdj):
    """Force of a joint spring-damper-actuator ``fa - k (q - q0) - c qd`` (N m or N, along
    the joint speed) at the joint coordinate ``q`` (rad or m) and speed ``qd``: the law of
    :meth:`flexmbd.JointForce.spring_damper` in compiled form (same operation order)."""
    return fa - k * (qj - q0) - c * qdj


@njit(cache=True)
def user_law_power(address, qj, qdj, t, out):
    """``out[i] += law(q_i, qd_i, t_i, 0) qd_i`` (W): the power of a user's compiled law at
    ``address`` (:func:`flexmbd._nblaws.user_law`) over a history of its joint's coordinate
    ``qj``, speed ``qdj`` and times ``t`` (s), each (nt,)."""
    for i in range(qj.shape[0]):
        out[i] += user_law(address, qj[i], qdj[i], t[i]) * qdj[i]


@njit(cache=True, inline="always")
def set_clock(fi, ff, t):
    """Write the time ``t`` (s) into the table's clock (column 0 of its ``ULAW`` rows)."""
    for e in range(fi.shape[0]):
        if fi[e, 0] == ULAW:
            ff[e, 0] = t


@njit(cache=True, inline="always")
def _end(R3, P3, Vv, k, p, P, vP, rho, w):
    """World position ``P``, velocity ``vP`` and arm ``rho = P - O_k`` of the point ``p``
    (e_k coordinates; world for the ground, ``k = 0``)."""
    if k == 0:
        for i in range(3):
            P[i] = p[i]
            vP[i] = 0.0
            rho[i] = 0.0
        return
    Rk = R3[K.R_W, k]
    rk = P3[K.P_W, k]
    tw = Vv[K.V_VEL, k]
    for i in range(3):
        rho[i] = Rk[i, 0] * p[0] + Rk[i, 1] * p[1] + Rk[i, 2] * p[2]
        w[i] = Rk[i, 0] * tw[0] + Rk[i, 1] * tw[1] + Rk[i, 2] * tw[2]
        vP[i] = Rk[i, 0] * tw[3] + Rk[i, 1] * tw[4] + Rk[i, 2] * tw[5]
    for i in range(3):
        P[i] = rk[i] + rho[i]
    vP[0] += w[1] * rho[2] - w[2] * rho[1]
    vP[1] += w[2] * rho[0] - w[0] * rho[2]
    vP[2] += w[0] * rho[1] - w[1] * rho[0]


@njit(cache=True, inline="always")
def _sda_line(R3, P3, Vv, a, b, row, Pa, Pb, va, vb, ra, rb, w, g):
    """``(length (m), ldot (m/s))`` of the SDA of table ``row`` between labels ``a`` and
    ``b`` (end points ``row[0:3]``, ``row[3:6]`` in body axes) at the last kinematics
    pass; ``g`` <- the unit vector from end a to end b (world), the ends' world points,
    velocities and offsets into ``Pa, va, ra`` / ``Pb, vb, rb``. A length below 1e-12 m
    (coincident ends) leaves ``g`` unnormalized and ``ldot`` 0."""
    _end(R3, P3, Vv, a, row[0:3], Pa, va, ra, w)
    _end(R3, P3, Vv, b, row[3:6], Pb, vb, rb, w)
    ll = 0.0
    for i in range(3):
        g[i] = Pb[i] - Pa[i]
        ll += g[i] * g[i]
    length = np.sqrt(ll)
    if length < 1e-12:
        return length, 0.0
    ldot = 0.0
    for i in range(3):
        g[i] /= length
        ldot += g[i] * (vb[i] - va[i])
    return length, ldot


@njit(cache=True, inline="always")
def _world_vector(R3, k, v, body_fixed, g):
    """``g`` <- the force or torque ``v`` (3,) of a table row in world axes: rotated by
    label ``k``'s world rotation when ``body_fixed``, else as given."""
    Rk = R3[K.R_W, k]
    for i in range(3):
        g[i] = v[i]
        if body_fixed:
            g[i] = Rk[i, 0] * v[0] + Rk[i, 1] * v[1] + Rk[i, 2] * v[2]


@njit(cache=True, inline="always")
def _add_wrench(R3, fext, k, rho, f, n):
    """``fext[k] += [R^T (n + rho x f); R^T f]`` (world force ``f`` at the arm ``rho`` from
    O_k, world torque ``n``); nothing for the ground."""
    if k == 0:
        return
    Rk = R3[K.R_W, k]
    m0 = n[0] + rho[1] * f[2] - rho[2] * f[1]
    m1 = n[1] + rho[2] * f[0] - rho[0] * f[2]
    m2 = n[2] + rho[0] * f[1] - rho[1] * f[0]
    for i in range(3):
        fext[k, i] += Rk[0, i] * m0 + Rk[1, i] * m1 + Rk[2, i] * m2
        fext[k, 3 + i] += Rk[0, i] * f[0] + Rk[1, i] * f[1] + Rk[2, i] * f[2]


@njit(cache=True, _nrt=False)
def apply_forces(R3, P3, Vv, fext, tau, nv, q, v, fi, ff, tau_c, S):
    """Add the force table's wrenches to ``fext``, ``tau_c`` and the joint laws at the
    state ``q``, ``v`` to ``tau[:nv]`` (after a kinematics pass with world poses; ``S``
    the table's scratch). Returns 0, or 1 when
    an SDA's points coincide (no line of action: the caller reports it through the
    Python path)."""
    for i in range(nv):
        tau[i] += tau_c[i]
    Pa, Pb, va, vb, ra, rb, g, zero, w = S[0], S[1], S[2], S[3], S[4], S[5], S[6], S[7], S[8]
    for i in range(3):
        zero[i] = 0.0
    for e in range(fi.shape[0]):
        kind, a, b = fi[e, 0], fi[e, 1], fi[e, 2]
        row = ff[e]
        if kind == JLAW:
            tau[b] += joint_law_force(row[0], row[1], row[2], row[3], q[a], v[b])
            continue
        if kind == ULAW:
            tau[b] += user_law(fi[e, 3], q[a], v[b], row[0])
            continue
        if kind == SDA:
            length, ldot = _sda_line(R3, P3, Vv, a, b, row, Pa, Pb, va, vb, ra, rb, w, g)
            if length < 1e-12:
                return 1
            f = sda_line_force(row[6], row[7], row[8], row[9], length, ldot)
            for i in range(3):
                g[i] *= f
            _add_wrench(R3, fext, a, ra, g, zero)
            for i in range(3):
                g[i] = -g[i]
            _add_wrench(R3, fext, b, rb, g, zero)
            continue
        _world_vector(R3, a, row[3:6], fi[e, 3], g)
        if kind == FORCE:
            _end(R3, P3, Vv, a, row[0:3], Pa, va, ra, w)
            _add_wrench(R3, fext, a, ra, g, zero)
        else:
            _add_wrench(R3, fext, a, zero, zero, g)
    return 0


@njit(cache=True, _nrt=False)
def tree_loaded(Ib, buf, q, v, tau, fi, ff, tau_c, S, reac, kin, refactor):
    """The serialized tree solver with the force table applied: kinematics with world
    poses (``kin``; else the caller ran it and put its own wrenches into ``fext``), the
    loads into ``fext`` and the joint forces ``tau + tau_c``, bias forces, factor (with
    ``refactor``; else the workspace holds this state's factorization), solve,
    reactions ``reac``; the accelerations are in the workspace's ``J_QDD`` row and
    ``fext`` is zero again afterwards. Returns the solver's status, or -1 for coincident
    SDA points."""
    Ia, Sa = K.unpack_ints(Ib)
    Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
    nv = Ib[K.IB_NV]
    n1 = Ib[K.IB_N1]
    for i in range(nv):
        Jw[K.J_TAU, i] = tau[i]
    if kin:
        K.kinematics(Ia, Mm, Vv, R3, P3, Tt, q, v, True)
    fext = Vv[K.V_FEXT]
    st = apply_forces(R3, P3, Vv, fext, Jw[K.J_TAU], nv, q, v, fi, ff, tau_c, S)
    if st == 0:
        K.bias_forces(Ia, Mm, Vv, R3, P3, grav, Ib[K.IB_GRAV] != 0, Jw)
        if refactor:
            st = K.factor(Ia, Sa, Mm, Vv, R3, P3, Tt, Dn)
        if st == 0:
            K.solve(Ia, Sa, Mm, Vv, R3, P3, Dn, Jw)
            K.reversed_frames(Ia, R3, P3)
            K.reactions_into(Ia, Vv, R3, P3, reac)
    else:
        st = -1
    for k in range(n1):
        for i in range(6):
            fext[k, i] = 0.0
    return st


@njit(cache=True, _nrt=False)
def tree_qdd(Ib, buf, q, v, tau, fi, ff, tau_c, S, qdd, reac):
    """Accelerations ``qdd`` (nv,) and joint reactions ``reac`` of the rigid tree with the
    force table applied (:func:`tree_loaded`) in one call. Returns its status."""
    st = tree_loaded(Ib, buf, q, v, tau, fi, ff, tau_c, S, reac, True, True)
    if st == 0:
        Ia, Sa = K.unpack_ints(Ib)
        Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
        for i in range(Ib[K.IB_NV]):
            qdd[i] = Jw[K.J_QDD, i]
    return st


@njit(cache=True, _nrt=False)
def tree_forward(Ib, buf, q, v, tau, fi, ff, tau_c, S, qdd, reac, acc, body_row):
    """:func:`tree_qdd` plus the body accelerations ``acc[body_row[k]]`` (world axes,
    ``[alpha; a_origin]``): the whole result of ``forward_dynamics`` of a loaded rigid
    tree in one call. Returns the solver's status, -1 for coincident SDA points, -3 for
    wrong sizes, -4 for non-finite accelerations."""
    nv = Ib[K.IB_NV]
    n1 = Ib[K.IB_N1]
    if (
        q.shape[0] != Ib[K.IB_NQ]
        or v.shape[0] != nv
        or tau.shape[0] < nv
        or qdd.shape[0] != nv
        or reac.shape[0] != Ib[K.IB_NJ]
        or body_row.shape[0] != n1
    ):
        return -3
    st = tree_loaded(Ib, buf, q, v, tau, fi, ff, tau_c, S, reac, True, True)
    if st != 0:
        return st
    Ia, Sa = K.unpack_ints(Ib)
    Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
    for i in range(nv):
        qdd[i] = Jw[K.J_QDD, i]
        if not np.isfinite(qdd[i]):
            return -4
    for k in range(1, n1):
        K._body_acceleration(Vv, R3, P3, k, acc[body_row[k]])
    return 0


@njit(cache=True, _nrt=False)
def table_loads(Ib, buf, Q, V, TAU, FEXT, fi, ff, tau_c, S):
    """The force table's loads of the states ``Q[s]``, ``V[s]`` (a kinematics pass with
    world poses each): wrenches added to ``FEXT[s]`` (e_k axes, moments about O_k),
    ``tau_c`` and the joint laws to ``TAU[s]``. Returns 0, or ``s + 1`` for coincident
    SDA points at state ``s`` (the loop stops)."""
    Ia, Sa = K.unpack_ints(Ib)
    Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
    nv = Ib[K.IB_NV]
    for s in range(Q.shape[0]):
        K.kinematics(Ia, Mm, Vv, R3, P3, Tt, Q[s], V[s], True)
        if apply_forces(R3, P3, Vv, FEXT[s], TAU[s], nv, Q[s], V[s], fi, ff, tau_c, S) != 0:
            return s + 1
    return 0


@njit(cache=True, _nrt=False)
def table_energy(R3, P3, Vv, qd, nv, fi, ff, tau_c, S, out):
    """Energy terms of the force table at the state of the last kinematics pass (world
    poses): ``out = (spring, p_damper, p_actuator, p_external)`` -- SDA springs
    ``k (l - l0)^2 / 2`` (J); dissipated by the dampers ``c ldot^2``; delivered by the
    actuators ``-fa ldot`` and the constant joint forces ``tau_c^T qd``; delivered by
    the point forces ``f . v_P`` and torques ``n . w`` (W): the definitions of
    :meth:`flexmbd.recursive.system.RecursiveSystem.powers`. Returns 1 for coincident
    SDA points, else 0."""
    Pa, Pb, va, vb, ra, rb, g, w = S[0], S[1], S[2], S[3], S[4], S[5], S[6], S[8]
    spring = 0.0
    pd = 0.0
    pa = 0.0
    pe = 0.0
    for i in range(nv):
        pa += tau_c[i] * qd[i]
    for e in range(fi.shape[0]):
        kind, a = fi[e, 0], fi[e, 1]
        row = ff[e]
        if kind == JLAW or kind == ULAW:  # a joint law's power: with the JointForce elements
            continue
        if kind == SDA:
            b = fi[e, 2]
            length, ldot = _sda_line(R3, P3, Vv, a, b, row, Pa, Pb, va, vb, ra, rb, w, g)
            if length < 1e-12:
                return 1
            ext = length - row[8]
            spring += 0.5 * row[6] * ext * ext
            pd += row[7] * ldot * ldot
            pa -= row[9] * ldot
            continue
        _world_vector(R3, a, row[3:6], fi[e, 3], g)
        _end(R3, P3, Vv, a, row[0:3], Pa, va, ra, w)  # va: velocity of the point
        if kind == FORCE:
            for i in range(3):
                pe += g[i] * va[i]
        else:
            for i in range(3):
                pe += g[i] * w[i]
    out[0] = spring
    out[1] = pd
    out[2] = pa
    out[3] = pe
    return 0


@njit(cache=True, _nrt=False)
def kinematics_history(
    Ia, Mm, Vv, R3, P3, Tt, Q, QD, RW, PW, VEL, g, E, nv, fi, ff, tau_c, S, table, with_table
):  # fmt: skip
    """The tree kinematics with world poses of every state ``Q[s]``, ``QD[s]`` of a
    history in one call: ``RW[s]``, ``PW[s]``, ``VEL[s]`` the workspace's ``R_W``,
    ``P_W``, ``V_VEL`` after state ``s`` (frames e_k, world axes; body twists in e_k
    axes), ``E[s] = (kinetic, gravity)`` energies (J; ``sum V^T I V / 2`` and
    ``-sum (m r_k + R_k m c) . g`` over the bodies, gravity ``g`` m/s^2 world) and, with
    ``with_table``, the force table's :func:`table_energy` into ``table[s]``
    (:func:`_history_row` per state). Returns 0, or ``s + 1`` when the table energy of
    state ``s`` failed (coincident SDA points; the table rows from ``s`` on are then
    undefined)."""
    n1 = Ia.shape[1]
    bad = 0
    for s in range(Q.shape[0]):
        K.kinematics(Ia, Mm, Vv, R3, P3, Tt, Q[s], QD[s], True)
        st = _history_row(
            Mm, Vv, R3, P3, n1, QD[s], g, nv, fi, ff, tau_c, S, RW[s], PW[s], VEL[s], E[s],
            table[s], with_table and bad == 0,
        )  # fmt: skip
        if st != 0:
            bad = s + 1
    return bad


@njit(cache=True, inline="always")
def _history_row(
    Mm, Vv, R3, P3, n1, qd, g, nv, fi, ff, tau_c, S, RW, PW, VEL, E, table, with_table
):  # fmt: skip
    """One state's row of :func:`kinematics_history` from the workspace after its
    kinematics with world poses: ``RW``, ``PW``, ``VEL`` (the workspace's ``R_W``,
    ``P_W``, ``V_VEL`` of the nodes ``0 ... n1 - 1``), ``E = (kinetic, gravity)``
    (:func:`body_energies`) and, with ``with_table``, the force table's
    :func:`table_energy` into ``table``. Returns 0, or 1 where that failed."""
    for k in range(n1):
        for i in range(3):
            PW[k, i] = P3[K.P_W, k, i]
            for j in range(3):
                RW[k, i, j] = R3[K.R_W, k, i, j]
        for i in range(6):
            VEL[k, i] = Vv[K.V_VEL, k, i]
    E[0], E[1] = body_energies(Mm, Vv, R3, P3, g, n1)
    if with_table:
        return table_energy(R3, P3, Vv, qd, nv, fi, ff, tau_c, S, table)
    return 0


@njit(cache=True, _nrt=False)
def sample_history(Ib, buf, v, forces, en, RW, PW, VEL):
    """The row of :func:`kinematics_history` of an output sample from the tree pass at
    its state (speeds ``v``) in the packed workspace (``Ib``, ``buf``), after its world
    poses: ``RW``, ``PW``, ``VEL`` (the workspace's ``R_W``, ``P_W``, ``V_VEL``) and ``en
    = (kinetic, gravity, spring, p_damper, p_actuator, p_external, ok)`` (J, W; the
    force table ``forces``' :func:`table_energy`; ``ok`` 0 where that failed) -- the same
    operations on the same values as :func:`kinematics_history` of that state, so the
    same numbers, without a second kinematics pass."""
    Ia, Sa = K.unpack_ints(Ib)
    Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
    fi, ff, tau_c, S = forces
    st = _history_row(
        Mm, Vv, R3, P3, Ib[K.IB_N1], v, grav, Ib[K.IB_NV], fi, ff, tau_c, S, RW, PW, VEL,
        en[0:2], en[2:6], True,
    )  # fmt: skip
    en[6] = 1.0 if st == 0 else 0.0


@njit(cache=True, inline="always")
def body_energies(Mm, Vv, R3, P3, g, n1):
    """``(kinetic, gravity)`` energies (J) of the bodies ``1 ... n1 - 1`` at the state of
    the last kinematics pass with world poses: ``sum V^T I V / 2`` and ``-sum (m r_k +
    R_k m c) . g`` (gravity ``g`` m/s^2, world)."""
    ke = 0.0
    pg = 0.0
    for k in range(1, n1):
        Ik = Mm[K.M_I, k]
        w = Vv[K.V_VEL, k]
        for i in range(6):
            a = 0.0
            for j in range(6):
                a += Ik[i, j] * w[j]
            ke += w[i] * a
        mc = Vv[K.V_MC, k]
        Rk = R3[K.R_W, k]
        pk = P3[K.P_W, k]
        for i in range(3):
            pg += mc[3] * pk[i] * g[i]
            for j in range(3):
                pg += Rk[i, j] * mc[j] * g[i]
    return 0.5 * ke, -pg


@njit(cache=True, _nrt=False)
def sample_energies(Ib, buf, v, fi, ff, tau_c, S, out):
    """The energies of the state of the last tree pass in the packed workspace (``Ib``,
    ``buf``; speeds ``v``), after the world poses: ``out = (kinetic, gravity, spring,
    p_damper, p_actuator, p_external, ok)`` (:func:`body_energies`, the force table's
    :func:`table_energy`; ``ok`` 0 where that failed)."""
    Ia, Sa = K.unpack_ints(Ib)
    Mm, Vv, R3, P3, Tt, Dn, Jw, grav = K._views(Ia, buf)
    n1 = Ib[K.IB_N1]
    for k in range(1, n1):
        K.world_pose(R3, P3, k, Ia[K.I_PARENT, k])
    out[0], out[1] = body_energies(Mm, Vv, R3, P3, grav, n1)
    st = table_energy(R3, P3, Vv, v, Ib[K.IB_NV], fi, ff, tau_c, S, out[2:6])
    out[6] = 1.0 if st == 0 else 0.0
