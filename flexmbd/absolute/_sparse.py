r"""Compiled sparse LU of the absolute engine's Newton matrix (issue 13 item 4).

The Newton matrix of an implicit step of the absolute formulation,
``[[K, Phi_q^T], [Phi_q, 0]]`` (``K`` the mass / stiffness / damping iteration matrix,
in general non-symmetric through velocity-dependent forces), has a fixed pattern: which
body couples with which (inertia blocks, force elements, joint rows) does not change
during a run. This module factors it in compiled code, in time and memory that grow
with the number of non-zeros of the factors, not with ``(n + nc)^2``:

* :func:`analyze` (Python, once per pattern): a fill-reducing column order, COLAMD of
  SuperLU (SciPy) on the pattern; the row order is left to the numeric factorization;
* :func:`factor` (numba): left-looking LU with partial pivoting (Gilbert-Peierls: a
  depth-first search of the factor's graph gives each column's pattern, then a sparse
  triangular solve; threshold pivoting that prefers the diagonal, ``|a_kk| >= 0.1 max``);
* :func:`refactor` (numba): the numeric factorization again with the pattern and pivot
  sequence of the last :func:`factor` (no search, no pivot choice) as long as every
  pivot passes the same threshold test against its column; otherwise (status 0) the
  caller factors with partial pivoting again: static pivoting with a safe fallback,
  which :func:`refactor_or_factor` starts at the refused elimination step (the steps
  before it keep their pivots and values: a pivot that passes through zero late in the
  elimination costs only the columns after it); a refused reference pivot is first
  replaced by the alternative pivots of its step (:func:`_alternative`: the reference
  matrix factored with that pivot row excluded at the step, built once per step), a
  refactorization again;
* :func:`set_reference` / :func:`restore_reference` (numba): keep the pattern and pivots
  of one factorization (a reference matrix: the engine's Newton matrix at the model's
  initial state) and put them back, so that a caller can start every solve from the same
  pivots (:func:`refactor_or_factor`): each solve's arithmetic then depends only on its
  matrix, never on which matrices were factored before;
* :func:`solve` (numba): the two triangular solves, optionally followed by iterative
  refinement steps (residual from the original matrix).

The factors live in one :class:`LUWork` tuple of flat arrays allocated once per pattern
(capacities from the analysis' fill, with margin); every kernel works in place.

The engine assembles the matrix in a column-compressed dense array (:func:`kkt_layout`):
entry ``(i, j)`` is stored at ``[i, cmap[j]]``, where ``cmap`` gives columns that never
share a row the same slot (a greedy colouring of the column groups: each body's
coordinates keep consecutive slots), so the assembly kernels write with one index
lookup and the storage is ``(n + nc) x W`` with ``W`` a few bodies wide;
:func:`gather` copies it into the CSC values of the factorization.
"""

from typing import NamedTuple

import numpy as np

from .._jit import njit

__all__ = [
    "KKTLayout",
    "LUWork",
    "analyze",
    "csc_matvec",
    "factor",
    "dense_layout",
    "gather",
    "kkt_layout",
    "pattern_csc",
    "refactor",
    "refactor_cost",
    "refactor_or_factor",
    "restore_reference",
    "set_reference",
    "solve",
]

#: threshold of partial pivoting: the diagonal (or the previous pivot) is kept while
#: ``|pivot| >= PIVOT_TOL * max |candidate|`` of its column
PIVOT_TOL = 0.1


class LUWork(NamedTuple):
    """Pattern, column order and factor storage of one sparse matrix (all flat arrays).

    ``Ap, Ai`` the CSC pattern of ``A`` (n x n); ``Q[k]``: the column of ``A`` eliminated
    at step ``k``; ``Lp, Li, Lx``: unit lower factor by step (row indices of ``A``, the
    unit diagonal not stored); ``Up, Ui, Ux``: upper factor by step (row indices are
    steps, in a topological order of the column's solve), ``Ud`` its diagonal;
    ``P[k]``: the row of ``A`` pivoted at step ``k``, ``pinv`` its inverse;
    ``x, xi, mark, stack, pstack``: scratch of the factorization; ``stat``:
    ``[factorizations, refactorizations, refactor rejections, capacity, pivots,
    reference, refused step]`` (``pivots``: what the factors hold: 0 nothing, 1 the
    reference pattern and pivots put back by :func:`restore_reference`, of the reference
    number ``reference``, 2 those of the last :func:`factor`; ``refused step``: the step
    whose pivot the last refused :func:`refactor` rejected; then ``alternative
    refactorizations``: those with the alternative pivots below, and ``alternative
    builds``); ``rLp, rLi, rUp, rUi, rP``: the reference pattern and pivots, ``rAx``
    the reference matrix's values, ``rstat[0]`` 1 when set and ``rstat[1]`` the number
    of the last :func:`set_reference`; ``alt``: two alternative patterns and pivots,
    each of one refused reference step (:func:`refactor_or_factor`), a row of
    ``[state, step, excluded row, reference, Lp, Up, P, Li, Ui]`` (:func:`_alt_parts`;
    state 1 built, -1 no such factorization, 0 none); the reference and alternative
    arrays are shared by the
    works of one analysis."""

    n: int
    Ap: np.ndarray
    Ai: np.ndarray
    Q: np.ndarray
    Lp: np.ndarray
    Li: np.ndarray
    Lx: np.ndarray
    Up: np.ndarray
    Ui: np.ndarray
    Ux: np.ndarray
    Ud: np.ndarray
    P: np.ndarray
    pinv: np.ndarray
    x: np.ndarray
    xi: np.ndarray
    mark: np.ndarray
    stack: np.ndarray
    pstack: np.ndarray
    rwork: np.ndarray
    stat: np.ndarray
    rLp: np.ndarray
    rLi: np.ndarray
    rUp: np.ndarray
    rUi: np.ndarray
    rP: np.ndarray
    rstat: np.ndarray
    rAx: np.ndarray
    alt: np.ndarray


def _stat(cap):
    return np.array([0, 0, 0, cap, 0, 0, 0, 0, 0], np.int64)


def fresh_work(w):
    """A :class:`LUWork` with ``w``'s pattern, column order and reference pivots (shared)
    and its own (zeroed) factor storage and scratch (no new analysis)."""
    z = np.zeros_like
    return LUWork(
        w.n, w.Ap, w.Ai, w.Q, z(w.Lp), z(w.Li), z(w.Lx), z(w.Up), z(w.Ui), z(w.Ux), z(w.Ud),
        z(w.P), -np.ones(w.n, np.int64), z(w.x), z(w.xi), z(w.mark), z(w.stack), z(w.pstack),
        z(w.rwork), _stat(w.Li.shape[0]), w.rLp, w.rLi, w.rUp, w.rUi, w.rP, w.rstat,
        w.rAx, w.alt,
    )  # fmt: skip


def pattern_csc(rows, cols, n):
    """CSC pattern ``(indptr, indices)`` of an ``n x n`` matrix from entry coordinates
    (duplicates merged, indices sorted in each column)."""
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    if len(rows) and (rows.min() < 0 or cols.min() < 0 or max(rows.max(), cols.max()) >= n):
        raise ValueError(f"pattern_csc: entry outside the {n} x {n} matrix")
    key = np.unique(cols * n + rows)
    c, r = np.divmod(key, n)
    indptr = np.zeros(n + 1, np.int64)
    np.add.at(indptr, c + 1, 1)
    return np.cumsum(indptr), r.astype(np.int64)


def analyze(indptr, indices, n, margin=3.0, order="COLAMD"):
    """Column order and factor storage of a pattern (Python, once per pattern).

    The order is SuperLU's ``order`` (``permc_spec`` of ``scipy.sparse.linalg.splu``:
    COLAMD, or ``MMD_AT_PLUS_A``, a minimum degree order of ``A + A^T``) on the pattern
    with reproducible random values, which also estimates the fill; the capacities of
    ``L`` and ``U`` are that fill times ``margin`` plus ``n``, and for another order
    than COLAMD the largest a factor of order ``n`` can hold (``n (n - 1) / 2``: the
    pivoting fill of such an order has no bound from the analysis). Returns a
    :class:`LUWork`."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as sla

    indptr = np.ascontiguousarray(indptr, np.int64)
    indices = np.ascontiguousarray(indices, np.int64)
    nnz = int(indptr[-1])
    rng = np.random.default_rng(12345)
    vals = rng.uniform(0.5, 1.5, nnz) * rng.choice((-1.0, 1.0), nnz)
    A = sp.csc_matrix((vals, indices, indptr), shape=(n, n))
    A = A + sp.identity(n, format="csc") * (2.0 * np.abs(A).sum(axis=0).max())
    lu = sla.splu(A.tocsc(), permc_spec=order)
    Q = np.argsort(lu.perm_c).astype(np.int64)
    cap = int(margin * (lu.L.nnz + lu.U.nnz)) + 4 * n + 16
    if order != "COLAMD":
        cap = max(cap, n * (n - 1) // 2 + 16)
    return LUWork(
        n=int(n),
        Ap=indptr,
        Ai=indices,
        Q=Q,
        Lp=np.zeros(n + 1, np.int64),
        Li=np.zeros(cap, np.int64),
        Lx=np.zeros(cap),
        Up=np.zeros(n + 1, np.int64),
        Ui=np.zeros(cap, np.int64),
        Ux=np.zeros(cap),
        Ud=np.zeros(n),
        P=np.zeros(n, np.int64),
        pinv=-np.ones(n, np.int64),
        x=np.zeros(n),
        xi=np.zeros(n, np.int64),
        mark=np.zeros(n, np.int64),
        stack=np.zeros(n, np.int64),
        pstack=np.zeros(n, np.int64),
        rwork=np.zeros(2 * n),
        stat=_stat(cap),
        rLp=np.zeros(n + 1, np.int64),
        rLi=np.zeros(cap, np.int64),
        rUp=np.zeros(n + 1, np.int64),
        rUi=np.zeros(cap, np.int64),
        rP=np.zeros(n, np.int64),
        rstat=np.zeros(2, np.int64),
        rAx=np.zeros(nnz),
        alt=np.zeros((2, 5 + 3 * n + 2 + 2 * cap), np.int64),
    )


def refactor_cost(w):
    """Multiply-adds of one :func:`refactor` with ``w``'s reference pattern (the ``L``
    column lengths over the ``U`` entries) plus its non-zeros; 0 when no reference is set."""
    if w.rstat[0] != 1:
        return 0
    n = w.n
    lens = np.diff(w.rLp)
    return int(lens[w.rUi[: w.rUp[n]]].sum() + w.rLp[n] + w.rUp[n])


@njit(cache=True)
def _reach(j, Ap, Ai, Lp, Li, pinv, mark, tag, xi, stack, pstack):
    """Rows reached from column ``j`` of A in the graph of L (depth-first, iterative):
    written to ``xi[top:]`` in topological order; returns ``top``."""
    n = xi.shape[0]
    top = n
    for t in range(Ap[j], Ap[j + 1]):
        i0 = Ai[t]
        if mark[i0] == tag:
            continue
        head = 0
        stack[0] = i0
        while head >= 0:
            i = stack[head]
            s = pinv[i]
            if mark[i] != tag:
                mark[i] = tag
                pstack[head] = Lp[s] if s >= 0 else 0
            done = True
            if s >= 0:
                end = Lp[s + 1]
                p = pstack[head]
                while p < end:
                    r = Li[p]
                    p += 1
                    if mark[r] != tag:
                        pstack[head] = p
                        head += 1
                        stack[head] = r
                        done = False
                        break
                if done:
                    pstack[head] = end
            if done:
                head -= 1
                top -= 1
                xi[top] = i
    return top


@njit(cache=True)
def factor(w, Ax):
    """LU with partial pivoting of the matrix with values ``Ax`` (on ``w``'s pattern).

    Left-looking (Gilbert-Peierls) in the column order ``w.Q``; the pivot of each column
    is its diagonal entry when ``|a| >= PIVOT_TOL max |candidates|``, else the largest
    candidate. Returns 1, or 0 when a column has no non-zero candidate (structurally or
    numerically singular), or -1 when the factors outgrow their capacity."""
    return _factor_from(w, Ax, 0, -1)


@njit(cache=True)
def _factor_from(w, Ax, k0, skip):
    """:func:`factor` from step ``k0`` on: steps ``0 .. k0 - 1`` keep the factors that
    :func:`refactor` computed for them (pattern, pivots, values), the later steps are
    factored with partial pivoting. The factors of a refused :func:`refactor` are exact
    up to its refused step (``w.stat[6]``), so resuming there costs only the columns
    from it on; ``k0 = 0`` is the whole factorization. Row ``skip`` (>= 0) is no
    candidate at step ``k0`` (:func:`_alternative`)."""
    n = w.n
    Ap, Ai, Q = w.Ap, w.Ai, w.Q
    Lp, Li, Lx, Up, Ui, Ux, Ud = w.Lp, w.Li, w.Lx, w.Up, w.Ui, w.Ux, w.Ud
    P, pinv, x, xi, mark = w.P, w.pinv, w.x, w.xi, w.mark
    cap = Li.shape[0]
    w.stat[0] += 1
    w.stat[4] = 0
    for i in range(n):
        pinv[i] = -1
        mark[i] = -1
        x[i] = 0.0
    for k in range(k0):
        pinv[P[k]] = k
    lnz = Lp[k0] if k0 > 0 else 0
    unz = Up[k0] if k0 > 0 else 0
    for k in range(k0, n):
        Lp[k] = lnz
        Up[k] = unz
        j = Q[k]
        top = _reach(j, Ap, Ai, Lp, Li, pinv, mark, k, xi, w.stack, w.pstack)
        for t in range(Ap[j], Ap[j + 1]):
            x[Ai[t]] = Ax[t]
        if unz + (n - top) > cap or lnz + (n - top) > cap:
            return -1
        # sparse triangular solve L x = A[:, j] over the reach, in topological order
        for t in range(top, n):
            i = xi[t]
            s = pinv[i]
            if s < 0:
                continue
            xs = x[i]
            Ui[unz] = s
            Ux[unz] = xs
            unz += 1
            x[i] = 0.0
            if xs != 0.0:
                for p in range(Lp[s], Lp[s + 1]):
                    x[Li[p]] -= Lx[p] * xs
        # pivot: the diagonal row if it passes the threshold, else the largest candidate
        amax = 0.0
        ipiv = -1
        no = skip if k == k0 else -1
        for t in range(top, n):
            i = xi[t]
            if pinv[i] < 0 and i != no:
                a = abs(x[i])
                if a > amax:
                    amax = a
                    ipiv = i
        if ipiv < 0 or amax == 0.0:
            return 0
        if pinv[j] < 0 and mark[j] == k and j != no and abs(x[j]) >= PIVOT_TOL * amax:
            ipiv = j
        piv = x[ipiv]
        Ud[k] = piv
        P[k] = ipiv
        pinv[ipiv] = k
        for t in range(top, n):
            i = xi[t]
            if pinv[i] < 0:
                Li[lnz] = i
                Lx[lnz] = x[i] / piv
                lnz += 1
            x[i] = 0.0
    Lp[n] = lnz
    Up[n] = unz
    w.stat[4] = 2
    return 1


@njit(cache=True)
def set_reference(w, Ax):
    """Factor ``Ax`` (:func:`factor`) and keep its pattern, pivots and values ``Ax`` as
    the reference of every work sharing ``w``'s analysis (:func:`restore_reference`).
    Returns the status of :func:`factor`; the reference (and any alternative of it,
    :func:`_alternative`) is cleared unless it is 1."""
    st = factor(w, Ax)
    w.rstat[0] = 0
    w.alt[:, 0] = 0
    if st != 1:
        return st
    _copy_pattern(w.n, w.Lp, w.Up, w.Li, w.Ui, w.P, w.rLp, w.rUp, w.rLi, w.rUi, w.rP)
    for t in range(Ax.shape[0]):
        w.rAx[t] = Ax[t]
    w.rstat[0] = 1
    w.rstat[1] += 1
    return 1


@njit(cache=True)
def restore_reference(w):
    """Put the reference pattern and pivots (:func:`set_reference`) into ``w``'s factors
    (the values are then computed by :func:`refactor`). Returns False when none is set."""
    if w.rstat[0] != 1:
        return False
    _copy_pattern(w.n, w.rLp, w.rUp, w.rLi, w.rUi, w.rP, w.Lp, w.Up, w.Li, w.Ui, w.P)
    for k in range(w.n):
        w.pinv[w.P[k]] = k
    w.stat[4] = 1
    w.stat[5] = w.rstat[1]
    return True


@njit(cache=True, inline="always")
def _copy_pattern(n, Lp, Up, Li, Ui, P, Lp2, Up2, Li2, Ui2, P2):
    """Copy a factorization's pattern and row pivots (column pointers of ``L`` and ``U``,
    their row indices, ``P``) into the second set: the reference of
    :func:`set_reference` and back (:func:`restore_reference`)."""
    for k in range(n + 1):
        Lp2[k] = Lp[k]
        Up2[k] = Up[k]
    for t in range(Lp[n]):
        Li2[t] = Li[t]
    for t in range(Up[n]):
        Ui2[t] = Ui[t]
    for k in range(n):
        P2[k] = P[k]


@njit(cache=True)
def refactor_or_factor(w, Ax, fresh):
    """Factors of ``Ax``: with ``fresh`` (or no factors yet) a :func:`refactor` with the
    reference pivots (:func:`restore_reference`), otherwise with the last pivots; a
    :func:`factor` with partial pivoting when there are no pivots to reuse. When the
    refactorization with the reference pivots is refused at a step, it goes on from that
    step with the step's alternative pivots (:func:`_alternative`; ``w.stat[4]`` 3 then);
    when that (or a refactorization with the last pivots) is refused, partial pivoting
    from the refused step on (the steps before it keep their pivots and values:
    :func:`_factor_from`). The result depends on ``Ax`` and the reference (or the pivots
    it started from) only. Returns the status of the last kernel run (1: factors
    ready).

    The reference is not copied again when the factors already hold it (the last
    factorizations were refactorizations from it: a step's first solve then costs no
    copy of the pattern)."""
    held = w.stat[4] == 1 and w.rstat[0] == 1 and w.stat[5] == w.rstat[1]
    if (fresh and not held) or w.stat[4] == 0:
        if not restore_reference(w):
            return factor(w, Ax)
    on_reference = w.stat[4] == 1
    if refactor(w, Ax) == 1:
        return 1
    k0 = w.stat[6]
    if on_reference:
        start = _alternative(w, Ax, k0)
        if start >= 0:
            w.stat[7] += 1
            if _refactor_from(w, Ax, start) == 1:
                w.stat[4] = 3
                return 1
            k0 = w.stat[6]
    return _factor_from(w, Ax, k0, -1)


@njit(cache=True, inline="always")
def _alt_parts(w, slot):
    """Views of alternative ``slot`` of ``w.alt``: ``(head, Lp, Up, P, Li, Ui)``; ``head``
    ``[state, step, excluded row, reference, used last]``."""
    n = w.n
    cap = w.Li.shape[0]
    a = w.alt[slot]
    o = 5 + 3 * n + 2
    return a[:5], a[5 : 6 + n], a[6 + n : 7 + 2 * n], a[7 + 2 * n : o], a[o : o + cap], a[o + cap :]


@njit(cache=True)
def _alternative(w, Ax, k0):
    """Put the alternative pattern and pivots of the reference's refused step ``k0`` into
    ``w``'s factors; returns the step from which :func:`_refactor_from` must compute
    values (``k0``, or 0 right after building the alternative), or -1 when there is none.

    The alternative: the reference matrix (``w.rAx``) refactorized with the reference
    pivots up to step ``k0``, then factored with partial pivoting from ``k0`` on with the
    reference's pivot row of step ``k0`` excluded there (the next candidate is taken).
    It is a function of the reference and ``k0`` only (built once and kept, for two
    steps at a time, in the arrays shared by the analysis' works), so a solve that uses
    it still depends on its own matrix only. ``w``'s factors hold those of ``Ax``'s
    refused refactorization: exact before ``k0``, where the alternative's pattern and
    pivots equal the reference's."""
    n = w.n
    slot = -1
    for c in range(2):
        if w.alt[c, 0] != 0 and w.alt[c, 1] == k0 and w.alt[c, 3] == w.rstat[1]:
            slot = c
    start = k0
    if slot < 0:  # build it, in the slot not used last, in w's factors (Ax's values after)
        slot = 1 if w.alt[0, 4] == 1 else 0
        head, aLp, aUp, aP, aLi, aUi = _alt_parts(w, slot)
        keep = (w.stat[0], w.stat[1], w.stat[2], w.stat[6])
        restore_reference(w)
        st = _refactor_from(w, w.rAx, 0)
        if st == 1:
            st = _factor_from(w, w.rAx, k0, w.rP[k0])
        if st != 1:  # the reference again, refused at k0: the caller goes on from there
            restore_reference(w)
            _refactor_from(w, Ax, 0)
        w.stat[0], w.stat[1], w.stat[2], w.stat[6] = keep
        w.stat[8] += 1
        head[0] = 1 if st == 1 else -1
        head[1] = k0
        head[2] = w.rP[k0]
        head[3] = w.rstat[1]
        if st == 1:
            _copy_pattern(n, w.Lp, w.Up, w.Li, w.Ui, w.P, aLp, aUp, aLi, aUi, aP)
            start = 0
    head, aLp, aUp, aP, aLi, aUi = _alt_parts(w, slot)
    w.alt[slot, 4] = 1
    w.alt[1 - slot, 4] = 0
    if head[0] < 0:
        return -1
    if start > 0:  # the alternative from k0 on (before it: the reference's)
        Lp, Up = w.Lp, w.Up
        for t in range(Lp[k0], aLp[n]):
            w.Li[t] = aLi[t]
        for t in range(Up[k0], aUp[n]):
            w.Ui[t] = aUi[t]
        for k in range(k0, n):
            Lp[k + 1] = aLp[k + 1]
            Up[k + 1] = aUp[k + 1]
            w.P[k] = aP[k]
    for k in range(n):
        w.pinv[w.P[k]] = k
    return start


@njit(cache=True)
def refactor(w, Ax):
    """Numeric LU of ``Ax`` with the pattern and pivot sequence of the last
    :func:`factor` (KLU's refactorization). Returns 1, or 0 when a pivot fails the
    threshold test ``|pivot| >= PIVOT_TOL max |column|`` or vanishes (the factors are
    then unusable: run :func:`factor`)."""
    return _refactor_from(w, Ax, 0)


@njit(cache=True, inline="always")
def _refactor_from(w, Ax, k0):
    """:func:`refactor` from step ``k0`` on (the factors' values before it are kept)."""
    n = w.n
    Ap, Ai, Q = w.Ap, w.Ai, w.Q
    Lp, Li, Lx, Up, Ui, Ux, Ud = w.Lp, w.Li, w.Lx, w.Up, w.Ui, w.Ux, w.Ud
    P, x = w.P, w.x
    w.stat[1] += 1
    for k in range(k0, n):
        j = Q[k]
        for t in range(Ap[j], Ap[j + 1]):
            x[Ai[t]] = Ax[t]
        for p in range(Up[k], Up[k + 1]):
            s = Ui[p]
            i = P[s]
            xs = x[i]
            Ux[p] = xs
            x[i] = 0.0
            if xs != 0.0:
                for t in range(Lp[s], Lp[s + 1]):
                    x[Li[t]] -= Lx[t] * xs
        ip = P[k]
        piv = x[ip]
        x[ip] = 0.0
        # the column of L and its largest entry in one pass (x cleared); the threshold
        # test after it (a refused pivot leaves factors that :func:`factor` replaces)
        amax = 0.0
        if piv != 0.0:
            for t in range(Lp[k], Lp[k + 1]):
                i = Li[t]
                xi = x[i]
                amax = max(amax, abs(xi))
                Lx[t] = xi / piv
                x[i] = 0.0
        if not (piv != 0.0 and abs(piv) >= PIVOT_TOL * amax):
            for t in range(Lp[k], Lp[k + 1]):
                x[Li[t]] = 0.0
            w.stat[2] += 1
            w.stat[4] = 0
            w.stat[6] = k
            return 0
        Ud[k] = piv
    return 1


@njit(cache=True)
def _lu_solve(w, b, out):
    """``out = A^-1 b`` with the factors (b unchanged; ``w.rwork`` is scratch)."""
    n = w.n
    y = w.rwork[:n]
    z = w.rwork[n:]
    for i in range(n):
        y[i] = b[i]
    Lp, Li, Lx, P = w.Lp, w.Li, w.Lx, w.P
    for k in range(n):
        yk = y[P[k]]
        z[k] = yk
        if yk != 0.0:
            for t in range(Lp[k], Lp[k + 1]):
                y[Li[t]] -= Lx[t] * yk
    Up, Ui, Ux, Ud = w.Up, w.Ui, w.Ux, w.Ud
    for k in range(n - 1, -1, -1):
        zk = z[k] / Ud[k]
        z[k] = zk
        if zk != 0.0:
            for t in range(Up[k], Up[k + 1]):
                z[Ui[t]] -= Ux[t] * zk
    Q = w.Q
    for k in range(n):
        out[Q[k]] = z[k]


@njit(cache=True)
def csc_matvec(Ap, Ai, Ax, x, out):
    """``out = A x`` for a CSC matrix."""
    out[:] = 0.0
    for j in range(Ap.shape[0] - 1):
        xj = x[j]
        if xj != 0.0:
            for t in range(Ap[j], Ap[j + 1]):
                out[Ai[t]] += Ax[t] * xj


@njit(cache=True)
def solve(w, Ax, b, out, refine=1):
    """``out = A^-1 b`` from the factors of ``Ax``, then ``refine`` steps of iterative
    refinement (residual ``b - A out`` with the original ``Ax``). Returns the relative
    residual ``|b - A out|_inf / (|A|_inf |out|_inf + |b|_inf)`` after the last step
    (0.0 when ``refine`` is 0: not computed)."""
    n = w.n
    _lu_solve(w, b, out)
    rel = 0.0
    if refine <= 0:
        return rel
    r = np.empty(n)
    d = np.empty(n)
    Ap, Ai = w.Ap, w.Ai
    anorm = np.zeros(n)
    for j in range(n):
        for t in range(Ap[j], Ap[j + 1]):
            anorm[Ai[t]] += abs(Ax[t])
    an = anorm.max()
    bn = np.abs(b).max()
    for _ in range(refine):
        csc_matvec(Ap, Ai, Ax, out, r)
        for i in range(n):
            r[i] = b[i] - r[i]
        _lu_solve(w, r, d)
        for i in range(n):
            out[i] += d[i]
    csc_matvec(Ap, Ai, Ax, out, r)
    rn = 0.0
    for i in range(n):
        rn = max(rn, abs(b[i] - r[i]))
    den = an * np.abs(out).max() + bn
    rel = rn / den if den > 0.0 else rn
    return rel


class KKTLayout(NamedTuple):
    """Compressed storage of a Newton matrix ``[[K, Phi_q^T], [Phi_q, 0]]`` (``n`` + ``nc``).

    ``cmap[j]``: the slot of column ``j`` (``0 <= cmap < width``); ``Ap, Ai``: the CSC
    pattern; ``gidx[t]``: flat index ``i * width + cmap[j]`` of CSC entry ``t`` in the
    compressed array; ``rptr, rcol``: for constraint row ``p`` its coordinate columns
    ``rcol[rptr[p]:rptr[p + 1]]`` (ascending)."""

    n: int
    nc: int
    width: int
    cmap: np.ndarray
    Ap: np.ndarray
    Ai: np.ndarray
    gidx: np.ndarray
    rptr: np.ndarray
    rcol: np.ndarray


def dense_layout(n, nc):
    """The identity layout (``cmap[j] = j``, every row full): the dense Newton matrix,
    without a CSC pattern (solved densely)."""
    N = n + nc
    return KKTLayout(
        n=n,
        nc=nc,
        width=N,
        cmap=np.arange(N, dtype=np.int64),
        Ap=np.zeros(N + 1, np.int64),
        Ai=np.zeros(0, np.int64),
        gidx=np.zeros(0, np.int64),
        rptr=np.arange(nc + 1, dtype=np.int64) * n,
        rcol=np.tile(np.arange(n, dtype=np.int64), nc),
    )


def kkt_layout(n, nc, body_cols, row_bodies, couplings):
    """Pattern and compressed storage of a Newton matrix from its body structure.

    ``body_cols``: per body, its coordinate columns (int arrays; every coordinate in
    exactly one body); ``row_bodies``: per constraint row, the bodies whose coordinates
    it involves; ``couplings``: groups of bodies whose coordinates couple in ``K``
    (force elements, the rows' second derivatives; each body with itself is implied).
    The pattern is block-dense over coupled bodies (a superset of the non-zeros).
    Returns a :class:`KKTLayout`."""
    nb = len(body_cols)
    body_cols = [np.asarray(c, np.int64) for c in body_cols]
    owner = -np.ones(n, np.int64)
    for b, c in enumerate(body_cols):
        if np.any(owner[c] >= 0):
            raise ValueError("kkt_layout: a coordinate belongs to two bodies")
        owner[c] = b
    if np.any(owner < 0):
        raise ValueError("kkt_layout: a coordinate belongs to no body")
    if len(row_bodies) != nc:
        raise ValueError(f"kkt_layout: {len(row_bodies)} constraint rows given, nc = {nc}")
    adj = [{b} for b in range(nb)]
    for grp in couplings:
        g = [int(b) for b in grp if b >= 0]
        for a in g:
            adj[a].update(g)
    body_rows = [[] for _ in range(nb)]  # constraint rows touching each body
    for p, bs in enumerate(row_bodies):
        for b in {int(b) for b in bs if b >= 0}:
            body_rows[b].append(p)
    # the pattern: K blocks, Phi_q and its transpose
    rows, cols = [], []
    for a in range(nb):
        for b in adj[a]:
            r, c = np.meshgrid(body_cols[a], body_cols[b], indexing="ij")
            rows.append(r.ravel())
            cols.append(c.ravel())
    rptr = np.zeros(nc + 1, np.int64)
    rcol = []
    for p, bs in enumerate(row_bodies):
        cc = np.sort(np.concatenate([body_cols[b] for b in {int(b) for b in bs if b >= 0}] or [[]]))
        cc = cc.astype(np.int64)
        rcol.append(cc)
        rptr[p + 1] = rptr[p] + len(cc)
        rows += [np.full(len(cc), n + p), cc]
        cols += [cc, np.full(len(cc), n + p)]
    N = n + nc
    Ap, Ai = pattern_csc(np.concatenate(rows), np.concatenate(cols), N)
    # colouring of the column groups (bodies: consecutive slots; rows: one slot each):
    # groups that share a row need disjoint slots
    groups = [body_cols[b] for b in range(nb)] + [np.array([n + p]) for p in range(nc)]
    row_sets = []  # the groups present in each row class
    for a in range(nb):
        row_sets.append(sorted(adj[a]) + [nb + p for p in body_rows[a]])
    for bs in row_bodies:
        row_sets.append(sorted({int(b) for b in bs if b >= 0}))
    member = [[] for _ in groups]
    for k, rs in enumerate(row_sets):
        for g in rs:
            member[g].append(k)
    base = -np.ones(len(groups), np.int64)
    cmap = np.zeros(N, np.int64)
    width = 0
    for g, cols_g in enumerate(groups):
        w = len(cols_g)
        taken = set()
        for k in member[g]:
            for h in row_sets[k]:
                if base[h] >= 0:
                    taken.update(range(base[h], base[h] + len(groups[h])))
        s0 = 0
        while any(s in taken for s in range(s0, s0 + w)):
            s0 += 1
        base[g] = s0
        cmap[cols_g] = s0 + np.arange(w)
        width = max(width, s0 + w)
    ccol = np.repeat(np.arange(N, dtype=np.int64), np.diff(Ap))
    return KKTLayout(
        n=n,
        nc=nc,
        width=int(width),
        cmap=cmap,
        Ap=Ap,
        Ai=Ai,
        gidx=Ai * width + cmap[ccol],
        rptr=rptr,
        rcol=np.concatenate(rcol).astype(np.int64) if rcol else np.zeros(0, np.int64),
    )


@njit(cache=True)
def gather(Acomp, gidx, Ax):
    """CSC values ``Ax[t] = Acomp.flat[gidx[t]]`` from the compressed matrix."""
    flat = Acomp.ravel()
    for t in range(gidx.shape[0]):
        Ax[t] = flat[gidx[t]]


@njit(cache=True)
def kkt_full_row_rank(w, layout, Pq, A, Ax, rtol):
    """The rank test of :func:`full_row_rank` in compiled code on a Newton-matrix layout:
    ``Pq`` (nc x width) holds ``P`` in ``layout``'s compressed rows (as the engine's
    constraint kernel writes it); ``[[s I, P^T], [P, 0]]`` (``s = max |P|``) is written
    to ``A`` (scratch, the layout's compressed storage), gathered to ``Ax`` and factored
    with partial pivoting on ``w``'s pattern (:func:`factor`: history-free, the same
    pivots on every call with the same ``P``). Returns 1 for full row rank, 0 when a
    pivot vanishes or falls below ``rtol`` times the largest, -1 when the factors
    exceed ``w``'s capacity (no answer). ``layout``'s pattern must hold the diagonal of
    the first ``n`` columns."""
    n, nc = layout.n, layout.nc
    cm, rptr, rcol = layout.cmap, layout.rptr, layout.rcol
    scale = 0.0
    for a in range(nc):
        for t in range(rptr[a], rptr[a + 1]):
            scale = max(scale, abs(Pq[a, cm[rcol[t]]]))
    if scale == 0.0:
        scale = 1.0
    A[:, :] = 0.0
    for j in range(n):
        A[j, cm[j]] = scale
    for a in range(nc):
        ka = cm[n + a]
        for t in range(rptr[a], rptr[a + 1]):
            j = rcol[t]
            v = Pq[a, cm[j]]
            A[n + a, cm[j]] = v
            A[j, ka] = v
    gather(A, layout.gidx, Ax)
    st = factor(w, Ax)
    if st <= 0:
        return st
    dmin = np.inf
    dmax = 0.0
    for k in range(w.n):
        d = abs(w.Ud[k])
        dmin = min(dmin, d)
        dmax = max(dmax, d)
    return 1 if dmin > rtol * dmax else 0


def has_diagonal(Ap, Ai, n):
    """True when the CSC pattern ``Ap, Ai`` holds the entries ``(j, j)``, ``j < n``."""
    cols = np.repeat(np.arange(len(Ap) - 1), np.diff(Ap))
    return bool(np.count_nonzero((Ai == cols) & (cols < n)) == n)


def full_row_rank(P, dense_max=60, rtol=1e-10):
    """True when the constraint Jacobian ``P`` (nc x n, SciPy sparse or dense) has full
    row rank: ``numpy.linalg.matrix_rank`` up to ``dense_max`` rows; above, SuperLU of
    ``[[I, P^T], [P, 0]]`` (nonsingular exactly when ``P`` has full row rank), rank
    deficient when a pivot falls below ``rtol`` times the largest (redundant joint
    equations give pivots at round-off)."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as sla

    nc, n = P.shape
    if nc <= dense_max:
        Pd = P.toarray() if sp.issparse(P) else np.asarray(P)
        return bool(np.linalg.matrix_rank(Pd) == nc)
    P = sp.csr_matrix(P)
    P.sum_duplicates()
    scale = abs(P).max() or 1.0
    K = _kkt_identity(P, scale)
    try:
        lu = sla.splu(K, permc_spec="COLAMD")
    except RuntimeError:  # exactly singular
        return False
    d = np.abs(lu.U.diagonal())
    return bool(d.min() > rtol * d.max())


def _kkt_identity(P, scale):
    """``[[scale I, P^T], [P, 0]]`` (CSC) of a CSR ``P`` (nc x n, sorted indices) built
    from its index arrays: column ``j < n`` holds the diagonal, then column ``j`` of
    ``P`` (rows ``n + i``); column ``n + i`` holds row ``i`` of ``P``."""
    import scipy.sparse as sp

    nc, n = P.shape
    Pc = P.tocsc()
    Pc.sort_indices()
    start = Pc.indptr[:-1]
    rows = np.concatenate([np.insert(Pc.indices + n, start, np.arange(n)), P.indices])
    vals = np.concatenate([np.insert(Pc.data, start, scale), P.data])
    cnt = np.concatenate([np.diff(Pc.indptr) + 1, np.diff(P.indptr)])
    ptr = np.concatenate([[0], np.cumsum(cnt)])
    return sp.csc_matrix((vals, rows, ptr), shape=(n + nc, n + nc))
