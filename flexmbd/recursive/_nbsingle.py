"""Compiled single-state entry points of the documented call ``forward_dynamics`` (numba):
every result array of one state in one compiled call, for a closed loop on a rigid tree
(:func:`loop_forward_dynamics_rows`; the lean :func:`loop_accelerations_kept`) and for
a tree with flexible bodies (:func:`flex_forward_dynamics`).

Each runs the same kernels, in the same order and on the same values, as the calls it
replaces (:func:`._nbloops.loop_forward_dynamics` and the Python assembly of the
reactions; the loads, :func:`._flexkernels.forward_dynamics` and
:func:`._flexkernels.body_accelerations` as :meth:`.system.RecursiveSystem._one_state`
calls them), so the results are the same bit for bit. They allocate nothing (compiled
without NRT: the scratch comes in), which saves the reference counting of the argument
tuples' arrays and the scratch allocations of the calls they replace.
"""

from .._jit import njit
from . import _flexkernels as FK
from ._nbloops import _sample_reactions, _stage

#: status of :func:`flex_forward_dynamics`: the solve succeeded but an acceleration is
#: not finite (NaN or inf in the joint forces or the state)
NONFINITE = -9


@njit(cache=True, _nrt=False)
def loop_forward_dynamics_rows(
    Ib, buf, cargs, forces, clab, q, v, tau, sel, qdd, lam, phi, J, gamma, reac_t, acc,
    body_row, cutF, sw, reac, tree_rows, cut_rows,
):  # fmt: skip
    """:func:`._nbloops.loop_forward_dynamics` with the scratch ``sw`` of
    :func:`._nbloops.stage_work` (``len(sel)`` rows) and the system's reactions too:
    accelerations ``qdd`` (nv,), multipliers ``lam`` (m,), tree reactions ``reac_t``
    (tree joints, 6), body accelerations ``acc`` (rows ``body_row[k]``, world axes), cut
    wrenches ``cutF`` (cuts, 6) and ``reac`` (every joint, 6): zero, then row
    ``tree_rows[i]`` the tree joint ``i``'s reaction and row ``cut_rows[c]`` the cut
    joint ``c``'s wrench (N m and N, child joint-frame axes). Returns 0 or a status of
    :func:`._nbloops.loop_accelerations`."""
    st = _stage(Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac_t, sw)
    if st != 0:
        return st
    _sample_reactions(Ib, buf, cargs, clab, qdd, lam, cutF, reac_t, acc, body_row)
    for r in range(reac.shape[0]):
        for i in range(6):
            reac[r, i] = 0.0
    for a in range(tree_rows.shape[0]):
        r = tree_rows[a]
        for i in range(6):
            reac[r, i] = reac_t[a, i]
    for c in range(cut_rows.shape[0]):
        r = cut_rows[c]
        for i in range(6):
            reac[r, i] = cutF[c, i]
    return 0


@njit(cache=True, _nrt=False)
def loop_accelerations_kept(
    Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac, sw
):  # fmt: skip
    """:func:`._nbloops.loop_accelerations` (``qdd`` (nv,), multipliers ``lam`` (m,))
    with the scratch ``sw`` of :func:`._nbloops.stage_work` kept by the caller (the
    same :func:`._nbloops._stage`). Returns its status."""
    return _stage(Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac, sw)


@njit(cache=True, _nrt=False)
def flex_forward_dynamics(
    T, q, v, tau, MI, grav, use_grav, reac, any_stiff, tol, max_iter, info, qdd, acc, with_acc,
    clear_first,
):  # fmt: skip
    """One state of a tree with flexible bodies on the workspace ``T`` (a
    :class:`._flexkernels.FlexWork` as a plain tuple), the applied wrenches in it: the
    applied modal forces zeroed first with ``clear_first`` (else they hold the loads the
    caller applied), then, as :meth:`.system.RecursiveSystem._one_state` does, the
    modal entries of the joint and modal forces ``tau`` (nv,) added to them (``MI``
    rows ``(label, mode, speed index)``; nothing when every entry is zero) and ``tau``
    into row ``J_TAU``; :func:`._flexkernels.forward_dynamics` (reactions into
    ``reac``), ``qdd`` (nv,) from row ``J_QDD`` and, with ``with_acc``, the world
    ``[alpha; a_origin]`` of every body into rows ``1 ...`` of ``acc``
    (:func:`._flexkernels.body_accelerations`); the applied modal forces zeroed last.
    Returns the status of :func:`._flexkernels.forward_dynamics`, or :data:`NONFINITE`
    when it succeeded with an acceleration that is not finite."""
    return _flex_state(
        T, q, v, tau, MI, grav, use_grav, reac, any_stiff, tol, max_iter, info, qdd, acc,
        with_acc, clear_first, False,
    )  # fmt: skip


@njit(cache=True, _nrt=False)
def flex_factored_dynamics(
    T, q, v, tau, MI, grav, use_grav, reac, any_stiff, tol, max_iter, info, qdd, acc, with_acc,
    clear_first,
):  # fmt: skip
    """:func:`flex_forward_dynamics` on a workspace that holds the kinematics at ``(q,
    v)`` and the factorization at ``q`` of an earlier pass: the loads and joint forces of
    this call through :func:`._flexkernels.factored_dynamics` (no kinematics pass, no
    factorization; the same values bit for bit)."""
    return _flex_state(
        T, q, v, tau, MI, grav, use_grav, reac, any_stiff, tol, max_iter, info, qdd, acc,
        with_acc, clear_first, True,
    )  # fmt: skip


@njit(cache=True, inline="always")
def _flex_state(
    T, q, v, tau, MI, grav, use_grav, reac, any_stiff, tol, max_iter, info, qdd, acc, with_acc,
    clear_first, factored,
):  # fmt: skip
    """:func:`flex_forward_dynamics` (``factored``: :func:`flex_factored_dynamics`)."""
    W = FK.FlexWork(*T)
    Fm, Jv = W.Fm, W.Jv
    if clear_first:
        _clear_applied(Fm)
    nonzero = False
    for i in range(MI.shape[0]):
        if tau[MI[i, 2]] != 0.0:
            nonzero = True
    if nonzero:
        for i in range(MI.shape[0]):
            Fm[MI[i, 0], FK.FM_QAPP, MI[i, 1]] += tau[MI[i, 2]]
    for i in range(Jv.shape[1]):
        Jv[FK.J_TAU, i] = 0.0
    nv = qdd.shape[0]
    for i in range(nv):
        Jv[FK.J_TAU, i] = tau[i]
    if factored:
        st = FK.factored_dynamics(T, q, v, grav, use_grav, reac, any_stiff, tol, max_iter, info)
    else:
        st = FK.forward_dynamics(T, q, v, grav, use_grav, reac, any_stiff, tol, max_iter, info)
    if st == 0:
        bad = False
        for i in range(nv):
            x = Jv[FK.J_QDD, i]
            qdd[i] = x
            if x - x != 0.0:  # NaN or inf
                bad = True
        if with_acc:
            FK.body_accelerations(W.Ia, W.Fi, W.Vv, W.R3, W.P3, W.Ft, W.Fs, W.Fw, Fm, acc)
        if bad:
            st = NONFINITE
    _clear_applied(Fm)
    return st


@njit(cache=True, inline="always")
def _clear_applied(Fm):
    """Zero the applied modal forces (row ``FM_QAPP`` of every body)."""
    for k in range(Fm.shape[0]):
        for j in range(Fm.shape[2]):
            Fm[k, FK.FM_QAPP, j] = 0.0
