"""The compiled sparse LU of the absolute engine (flexmbd.absolute._sparse, issue 13 item 4).

Against SciPy/LAPACK: solutions of random sparse systems (non-symmetric, with zero
diagonal entries that need row pivoting), of saddle-point matrices and of the engine's
own Newton matrices (a chain of rods with spring-damper-actuators, the seed 002
slider-crank); the refactorization reuses the pattern and pivots and refuses a pivot
that fails the threshold test; a singular matrix is reported, not solved.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from flexmbd.absolute import _sparse as S


def _csc(A):
    """Pattern and values of a dense matrix on the pattern of its non-zeros."""
    n = A.shape[0]
    Ap, Ai = S.pattern_csc(*np.nonzero(A), n)
    cols = np.repeat(np.arange(n), np.diff(Ap))
    return Ap, Ai, np.ascontiguousarray(A[Ai, cols])


def _random_matrix(rng, n, zero_diag):
    A = sp.random(n, n, density=min(1.0, 4.0 / n), random_state=rng).toarray()
    A += np.diag(rng.uniform(-1.0, 1.0, n))
    if zero_diag:
        idx = rng.choice(n, n // 3, replace=False)
        A[idx, idx] = 0.0
    return A


def _dominant_system(n=50):
    """A diagonally dominant sparse test matrix of order ``n`` (seeded): the generator
    (for right-hand sides), ``n``, the dense matrix, its CSC arrays, each entry's column
    and the analysis of its pattern."""
    rng = np.random.default_rng(21)
    A = _random_matrix(rng, n, True) + np.diag(rng.uniform(2.0, 3.0, n))
    Ap, Ai, Ax = _csc(A)
    cols = np.repeat(np.arange(n), np.diff(Ap))
    return rng, n, A, Ap, Ai, Ax, cols, S.analyze(Ap, Ai, n)


@pytest.mark.parametrize("zero_diag", [False, True])
def test_factor_solves_random_systems_like_lapack(zero_diag):
    rng = np.random.default_rng(7)
    solved = 0
    for _ in range(12):
        n = int(rng.integers(5, 150))
        A = _random_matrix(rng, n, zero_diag)
        Ap, Ai, Ax = _csc(A)
        w = S.analyze(Ap, Ai, n)
        status = S.factor(w, Ax)
        if np.linalg.matrix_rank(A) < n:
            assert status == 0  # singular: reported, not solved
            continue
        assert status == 1
        b = rng.standard_normal(n)
        x = np.zeros(n)
        rel = S.solve(w, Ax, b, x, 1)
        ref = np.linalg.solve(A, b)
        assert rel < 1e-14
        assert np.abs(x - ref).max() <= 1e-14 * np.linalg.cond(A) * np.abs(ref).max()
        solved += 1
    assert solved >= 6


def test_saddle_point_matrix_needs_and_gets_row_pivoting():
    """[[K, G^T], [G, 0]]: the zero block has no diagonal pivot; the factors are exact."""
    rng = np.random.default_rng(3)
    n, m = 40, 15
    K = sp.random(n, n, density=0.1, random_state=rng).toarray() + 5 * np.eye(n)
    G = sp.random(m, n, density=0.15, random_state=rng).toarray()
    G[np.arange(m), rng.choice(n, m, replace=False)] += 1.0
    A = np.block([[K, G.T], [G, np.zeros((m, m))]])
    Ap, Ai, Ax = _csc(A)
    w = S.analyze(Ap, Ai, n + m)
    assert S.factor(w, Ax) == 1
    assert set(w.P[: n + m]) == set(range(n + m))  # a permutation of the rows
    b = rng.standard_normal(n + m)
    x = np.zeros(n + m)
    S.solve(w, Ax, b, x, 0)
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=0, atol=1e-11)


def test_refactor_reuses_pivots_and_rejects_a_bad_one():
    rng = np.random.default_rng(11)
    n = 60
    A = _random_matrix(rng, n, False) + 3 * np.eye(n)
    Ap, Ai, Ax = _csc(A)
    w = S.analyze(Ap, Ai, n)
    assert S.factor(w, Ax) == 1
    # nearby values (the next Newton iteration): same pattern, same pivots, exact factors
    Ax2 = Ax * (1 + 0.01 * rng.standard_normal(Ax.shape))
    A2 = np.zeros((n, n))
    A2[Ai, np.repeat(np.arange(n), np.diff(Ap))] = Ax2
    P = w.P.copy()
    assert S.refactor(w, Ax2) == 1
    np.testing.assert_array_equal(w.P, P)
    b = rng.standard_normal(n)
    x = np.zeros(n)
    S.solve(w, Ax2, b, x, 0)
    np.testing.assert_allclose(x, np.linalg.solve(A2, b), rtol=0, atol=1e-11)
    # the first pivot's entry made tiny: refused (the caller factors again with pivoting)
    j = w.Q[0]
    Ax3 = Ax2.copy()
    t = Ap[j] + np.searchsorted(Ai[Ap[j] : Ap[j + 1]], w.P[0])
    Ax3[t] = 1e-12
    rejected = w.stat[2]
    assert S.refactor(w, Ax3) == 0
    assert w.stat[2] == rejected + 1
    assert S.factor(w, Ax3) == 1
    A3 = A2.copy()
    A3[Ai[t], j] = 1e-12
    S.solve(w, Ax3, b, x, 1)
    np.testing.assert_allclose(x, np.linalg.solve(A3, b), rtol=1e-9, atol=1e-9)


def test_reference_pivots_start_every_fresh_solve():
    """The reference pattern and pivots (set_reference) are shared by the works of one
    analysis; a fresh solve refactorizes with them whatever was factored before (so each
    solve depends on its own matrix only), falls back to a pivoting factorization when a
    reference pivot fails its test, and the next fresh solve starts from the reference
    again; the solutions are exact."""
    rng, n, A, Ap, Ai, Ax, cols, base = _dominant_system()
    assert S.set_reference(S.fresh_work(base), Ax) == 1
    assert base.rstat[0] == 1
    P_ref = base.rP.copy()
    w = S.fresh_work(base)  # another work of the same analysis: same reference
    b = rng.standard_normal(n)
    x = np.zeros(n)

    def solve(vals, fresh):
        st = S.refactor_or_factor(w, vals, fresh)
        assert st == 1
        S.solve(w, vals, b, x, 0)
        M = np.zeros((n, n))
        M[Ai, cols] = vals
        ref = np.linalg.solve(M, b)
        np.testing.assert_allclose(x, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
        return x.copy()

    near = Ax * (1 + 0.01 * rng.standard_normal(Ax.shape))
    x1 = solve(near, True)
    assert tuple(w.stat[:3]) == (0, 1, 0) and w.stat[4] == 1  # refactorized, reference
    np.testing.assert_array_equal(w.P, P_ref)
    # a reference pivot made tiny: refused, factored with pivoting (other pivots)
    # (a step without updates from earlier ones, so its pivot is the entry itself, and
    # with entries below it)
    no_updates = np.diff(base.rUp) == 0
    below = np.diff(base.rLp) > 0
    k = int(np.flatnonzero(no_updates & below)[0])
    bad = near.copy()
    j = base.Q[k]
    t = Ap[j] + np.searchsorted(Ai[Ap[j] : Ap[j + 1]], P_ref[k])
    bad[t] = 1e-14
    xb = solve(bad, True)
    # refused at k, then the alternative pivots of step k (built once from the reference
    # matrix, the reference's pivot row of step k excluded there): no pivoting factorization
    # refused at k; then the alternative pivots of step k (built once from the reference
    # matrix, with the reference's pivot row of step k excluded there); the tiny entry
    # makes that row fail later in the alternative too (at k2), so partial pivoting from
    # k2 on: the reference's pivots before k, the alternative's before k2
    k2 = int(w.stat[6])
    assert tuple(w.stat[:3]) == (1, 3, 2) and w.stat[4] == 2 and k2 > k
    assert tuple(w.stat[7:9]) == (1, 1) and tuple(base.alt[0, :3]) == (1, k, P_ref[k])
    np.testing.assert_array_equal(w.P[:k], P_ref[:k])
    assert w.P[k] != P_ref[k]
    # the alternative is a function of the reference and k only: built again from
    # scratch in another work, the same pivots
    alt = S.fresh_work(base)
    S.restore_reference(alt)
    assert S.refactor(alt, bad) == 0 and alt.stat[6] == k
    base.alt[:, 0] = 0
    assert S._alternative(alt, bad, k) == 0
    np.testing.assert_array_equal(alt.P[:k2], w.P[:k2])
    w3 = S.fresh_work(base)  # another work, the alternative kept: the same bits
    assert S.refactor_or_factor(w3, bad, True) == 1 and w3.stat[8] == 0
    x3 = np.zeros(n)
    S.solve(w3, bad, b, x3, 0)
    np.testing.assert_array_equal(x3, xb)
    solve(bad, False)  # the next solve of the step: its own pivots again
    assert tuple(w.stat[:3]) == (1, 4, 2)
    # the next fresh solve: the reference again, the same bits as before
    np.testing.assert_array_equal(solve(near, True), x1)
    np.testing.assert_array_equal(w.P, P_ref)
    # no reference (a singular reference matrix): a fresh solve factors with pivoting
    other = S.analyze(Ap, Ai, n)
    assert S.set_reference(S.fresh_work(other), np.zeros_like(Ax)) == 0
    assert other.rstat[0] == 0
    w2 = S.fresh_work(other)
    assert S.refactor_or_factor(w2, near, True) == 1 and tuple(w2.stat[:2]) == (1, 0)


def test_refused_refactorization_resumes_at_the_refused_step():
    """A reference pivot failing its test late in the elimination: the steps before it
    keep the reference pivots and values, partial pivoting takes over from that step on
    (only those columns are factored again); the solution is exact and is that of the
    same matrix whatever the work held before (each solve depends on its own matrix).
    The reference (set on another matrix) has an early pivot off the diagonal where a
    pivoting factorization from scratch takes the diagonal: the kept pivots are the
    reference's, not a new factorization's."""
    rng, n, A, Ap, Ai, Ax, cols, base = _dominant_system()
    # an early step without updates whose column has an entry in a row not pivoted yet
    # (the pivots are the diagonal: dominant); that entry 5 (the largest), and in the
    # reference matrix the diagonal small: the reference pivots that entry
    first = S.fresh_work(base)
    assert S.factor(first, Ax) == 1
    np.testing.assert_array_equal(first.P, base.Q)
    for s in np.flatnonzero(np.diff(first.Up) == 0):
        j0 = base.Q[s]
        rows = Ai[Ap[j0] : Ap[j0 + 1]]
        rows = rows[~np.isin(rows, base.Q[: s + 1])]
        if len(rows):
            r0 = int(rows[0])
            break
    Aref = A.copy()
    Aref[j0, j0] = 0.01
    Aref[r0, j0] = A[r0, j0] = 5.0
    Ax = np.ascontiguousarray(A[Ai, cols])
    assert S.set_reference(S.fresh_work(base), np.ascontiguousarray(Aref[Ai, cols])) == 1
    P_ref = base.rP.copy()
    assert P_ref[s] == r0
    scratch = S.fresh_work(base)
    assert S.factor(scratch, Ax) == 1 and scratch.P[s] == j0  # from scratch: the diagonal
    b = rng.standard_normal(n)
    ref = np.linalg.solve(A, b)
    sols = []
    for warm in (False, True):
        w = S.fresh_work(base)
        if warm:  # other factors held before (a pivoting factorization of another matrix)
            assert S.factor(w, Ax[::-1].copy()) == 1
        S.restore_reference(w)
        assert S.refactor(w, Ax) == 0
        k = int(w.stat[6])
        assert S._factor_from(w, Ax, k, -1) == 1  # refactor_or_factor's last resort
        assert tuple(w.stat[:3]) == (1 + warm, 1, 1) and w.stat[4] == 2  # refused at k
        assert k > max(s, n // 2)  # late: most columns keep the reference
        np.testing.assert_array_equal(w.P[:k], P_ref[:k])  # with P[s] == r0
        assert w.P[k] != P_ref[k]  # the refused pivot is not taken
        x = np.zeros(n)
        S.solve(w, Ax, b, x, 0)
        np.testing.assert_allclose(x, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
        sols.append(x.copy())
        # refactor_or_factor: the alternative pivots of step k (or, where the alternative
        # is refused too, pivoting from its refused step): the reference's before k
        w = S.fresh_work(base)
        if warm:
            assert S.factor(w, Ax[::-1].copy()) == 1
        assert S.refactor_or_factor(w, Ax, True) == 1
        # refused at k, then the alternative: passed (3) or refused too (2)
        assert w.stat[4] in (2, 3) and w.stat[2] == 1 + (w.stat[4] == 2) and w.stat[6] >= k
        np.testing.assert_array_equal(w.P[:k], P_ref[:k])
        assert w.P[k] != P_ref[k]
        S.solve(w, Ax, b, x, 0)
        np.testing.assert_allclose(x, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
        sols.append(x.copy())
    np.testing.assert_array_equal(sols[0], sols[2])
    np.testing.assert_array_equal(sols[1], sols[3])


def test_kkt_layout_colours_columns_without_collisions():
    """Columns that share a row get different slots; body columns stay consecutive."""
    rng = np.random.default_rng(5)
    nb = 12
    sizes = rng.integers(7, 12, nb)
    n = int(sizes.sum())
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    body_cols = [np.arange(s, s + z) for s, z in zip(starts, sizes)]
    row_bodies = [[i - 1, i] for i in range(nb) for _ in range(5)] + [[i] for i in range(nb)]
    nc = len(row_bodies)
    L = S.kkt_layout(n, nc, body_cols, row_bodies, [(i, i + 1) for i in range(nb - 1)])
    N = n + nc
    assert L.width < N / 3  # compressed
    cols = np.repeat(np.arange(N), np.diff(L.Ap))
    slots = L.cmap[cols]
    key = L.Ai * L.width + slots
    assert len(np.unique(key)) == len(key)  # no two entries of one row in one slot
    np.testing.assert_array_equal(key, L.gidx)
    for c in body_cols:
        np.testing.assert_array_equal(np.diff(L.cmap[c]), 1)
    # gather reproduces the matrix written in compressed form
    vals = rng.standard_normal(len(L.Ai))
    Ac = np.zeros((N, L.width))
    Ac[L.Ai, slots] = vals
    Ax = np.zeros(len(L.Ai))
    S.gather(Ac, L.gidx, Ax)
    np.testing.assert_array_equal(Ax, vals)
    # the coordinate columns of each constraint row
    for p in range(nc):
        want = np.sort(np.concatenate([body_cols[b] for b in set(row_bodies[p]) if b >= 0]))
        np.testing.assert_array_equal(L.rcol[L.rptr[p] : L.rptr[p + 1]], want)


def test_bad_layout_input_is_refused():
    with pytest.raises(ValueError, match="no body"):
        S.kkt_layout(8, 0, [np.arange(7)], [], [])
    with pytest.raises(ValueError, match="outside"):
        S.pattern_csc([0, 5], [0, 1], 4)


def _engine_matrix(model, seed):
    """The compiled engine's dense Newton matrix at a perturbed consistent state."""
    from flexmbd.absolute.engine import Engine

    s = model.compile("absolute")
    q, qd, qdd, lam = s.initial_conditions()
    rng = np.random.default_rng(seed)
    coefs = (1.0, 0.25e-4, 0.5e-2, 0.25e-4, 0.5e-2)  # Newmark, h = 0.01 s
    qd = qd + 0.1 * rng.standard_normal(s.n)
    lam = lam + rng.standard_normal(s.nc)
    return Engine(s).terms(q, qd, qdd, lam, 0.0, coefs)[2]


@pytest.mark.parametrize("which", ["chain", "slider_crank"])
def test_engine_newton_matrices(which):
    """The engine's own KKT matrices (non-symmetric: SDA damping, velocity terms)."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(root / "benchmarks"), str(root / "examples")]
    try:
        if which == "chain":
            import bench_absolute

            A = _engine_matrix(bench_absolute.chain(12), 1)
        else:
            import sda_slider_crank

            A = _engine_matrix(sda_slider_crank.build(2e4, 50.0), 2)
    finally:
        del sys.path[:2]
    assert np.abs(A - A.T).max() > 1e-8  # genuinely non-symmetric
    N = A.shape[0]
    Ap, Ai, Ax = _csc(A)
    w = S.analyze(Ap, Ai, N)
    assert S.factor(w, Ax) == 1
    b = np.random.default_rng(0).standard_normal(N)
    x = np.zeros(N)
    rel = S.solve(w, Ax, b, x, 1)
    assert rel < 1e-14
    ref = np.linalg.solve(A, b)
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-9 * np.abs(ref).max())
    assert S.refactor(w, Ax) == 1
    S.solve(w, Ax, b, x, 0)
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-9 * np.abs(ref).max())


@pytest.mark.parametrize("which", ["rigid", "flexible"])
def test_sparse_engine_runs_like_the_generic_path(which, monkeypatch):
    """Whole compiled runs through the compressed layout and the sparse LU (forced with
    ``MAX_DENSE = 0``, ``SPARSE_BLOCK_FRACTION = 1``): the generic path's trajectories,
    reactions and Newton counts."""
    from test_engine_forces import flexible_model, rigid_model

    from flexmbd.absolute import engine as E

    monkeypatch.setattr(E, "MAX_DENSE", 0)
    monkeypatch.setattr(E, "SPARSE_BLOCK_FRACTION", 1.0)
    s = (rigid_model() if which == "rigid" else flexible_model()).compile("absolute")
    assert s.engine().sparse and s.engine().model.layout.width < s.n + s.nc
    opts = (
        dict(integrator="newmark", beta=0.25, gamma=0.5, dt=0.01)
        if which == "rigid"
        else dict(integrator="generalized-alpha", rho_inf=0.8, dt=1e-3)
    )
    fast = s.simulate(20 * opts["dt"], tol=1e-10, **opts)
    ref = s.simulate(20 * opts["dt"], tol=1e-10, engine=False, **opts)
    assert np.abs(fast.q - ref.q).max() <= 1e-8 * np.abs(ref.q).max()
    assert np.abs(fast.reactions - ref.reactions).max() <= 1e-6 * np.abs(ref.reactions).max()
    np.testing.assert_array_equal(
        fast.stats["newton_iterations"][1:], ref.stats["newton_iterations"][1:]
    )


def test_modified_newton_converges_to_the_full_newton_steps():
    """The opt-in modified Newton of the sparse LU (Engine.modified_newton: a step's later
    corrections reuse its factors) converges to the same steps as full Newton within the
    Newton tolerance, with at least as many corrections, never more than one extra per
    step on this model; full Newton is the default."""
    from test_engine_forces import rigid_model

    s = rigid_model().compile("absolute")
    eng = s.engine()
    assert eng.sparse and not eng.modified_newton
    opts = dict(integrator="newmark", beta=0.25, gamma=0.5, dt=0.01, tol=1e-10)
    full = s.simulate(40 * opts["dt"], **opts)
    eng.modified_newton = True
    mod = s.simulate(40 * opts["dt"], **opts)
    eng.modified_newton = False
    assert np.abs(mod.q - full.q).max() <= 1e-8 * np.abs(full.q).max()
    assert np.abs(mod.reactions - full.reactions).max() <= 1e-6 * np.abs(full.reactions).max()
    k_full = full.stats["newton_iterations"][1:]
    k_mod = mod.stats["newton_iterations"][1:]
    assert np.all(k_mod >= k_full) and np.all(k_mod <= k_full + 1)
    assert k_mod.sum() > k_full.sum()  # the reuse is exercised (the counts differ)


def test_full_row_rank_finds_redundant_rows():
    """The sparse rank test of the engine's admission (redundant joint rows) agrees with
    the SVD rank on full-rank and on redundant Jacobians."""
    rng = np.random.default_rng(4)
    P = sp.random(40, 90, density=0.08, random_state=rng, format="csr")
    P = P + sp.csr_matrix(
        (np.ones(40), (np.arange(40), rng.choice(90, 40, replace=False))), (40, 90)
    )
    assert np.linalg.matrix_rank(P.toarray()) == 40
    assert S.full_row_rank(P, dense_max=0)
    R = sp.vstack([P, P[3] - 2.0 * P[17]]).tocsr()  # one redundant row
    assert not S.full_row_rank(R, dense_max=0)
    assert not S.full_row_rank(R)  # the dense test agrees


def test_default_solver_follows_the_block_structure():
    """The engine picks the sparse LU for many small bodies and dense LAPACK when one
    body's block (a flexible body's modes) is a large part of the Newton matrix, where
    the dense solve was measured faster (flexible pendulum: sparse 1.06-1.67x dense)."""
    from test_engine_forces import flexible_model, rigid_model

    from flexmbd.absolute.engine import MAX_DENSE, SPARSE_BLOCK_FRACTION, prefers_sparse

    assert not prefers_sparse(MAX_DENSE - 6, 6, [7])  # small: dense
    assert prefers_sparse(7 * 50, 6 * 50, [7] * 50)  # a chain: sparse
    n_big = int(SPARSE_BLOCK_FRACTION * 100) + 1
    assert not prefers_sparse(94, 6, [n_big, 7])  # one large block: dense
    # seed slider-crank (3 rigid bodies, 41 unknowns): sparse; a beam with 9 modes and a
    # rigid body (33 unknowns, a block of 16): dense
    rigid, flexible = (m.compile("absolute") for m in (rigid_model(), flexible_model()))
    assert (rigid.n + rigid.nc, rigid.engine().sparse) == (41, True)
    assert (flexible.n + flexible.nc, flexible.engine().sparse) == (33, False)


def _rod_chain(n, duplicate=False):
    """``n`` rods on revolute joints about z (spring-damper-actuators between neighbours,
    gravity); ``duplicate``: a second, identical revolute between rods 1 and 2 (its five
    joint equations repeat the first's: Phi_q loses full row rank by five)."""
    import flexmbd as fm

    m = fm.Model(f"rods{n}")
    prev, pf = m.ground, (0.0, 0.0, 0.0)
    for i in range(n):
        b = fm.RigidBody(1.0, (0.001, 0.02, 0.02), com=(0.25, 0, 0))
        setattr(m, f"b{i}", b)
        setattr(m, f"j{i}", fm.Revolute(prev, b, parent_frame=pf, q0=[0.3 if i == 0 else 0.05]))
        if i:
            sda = fm.SpringDamperActuator(prev, (0.25, 0.1, 0), b, (0.25, 0.1, 0), k=5e3, c=20.0)
            setattr(m, f"s{i}", sda)
        if duplicate and i == 2:
            m.j_dup = fm.Revolute(prev, b, parent_frame=pf, q0=[0.05])
        prev, pf = b, (0.5, 0.0, 0.0)
    m.g = fm.Gravity((0, -9.81, 0))
    return m


@pytest.mark.parametrize("n", [8, 16])
def test_engine_admission_rank_test_compiled(n, monkeypatch):
    """The engine admission's compiled rank test (:meth:`Engine.admission`, the factors of
    ``[[s I, P^T], [P, 0]]`` on the engine's own LU pattern) agrees with the SVD rank and
    with :func:`full_row_rank` on a full-rank chain and on the same chain with one joint
    duplicated (five redundant rows); its ``Phi`` is the constraint kernel's, bitwise.
    The answer for the last ``Phi_q`` is kept: the same state again runs no rank test,
    another state does."""
    import flexmbd.absolute.engine as E

    tests = []
    compiled = E.kkt_full_row_rank
    monkeypatch.setattr(E, "kkt_full_row_rank", lambda *a: tests.append(1) or compiled(*a))

    def scipy_path(P):  # the compiled test answers: SciPy's path is not taken
        raise AssertionError("admission fell back to the SciPy rank test")

    for dup in (False, True):
        s = _rod_chain(n, dup).compile("absolute")
        eng = s.engine()
        assert eng.sparse  # the compiled test runs on the sparse LU's pattern
        q = s.q0()
        q[7::7] += 0.01  # off the joints' values: a non-zero violation
        with monkeypatch.context() as mp:
            mp.setattr(E, "full_row_rank", scipy_path)
            phi, full = eng.admission(q, 0.0)
            assert len(tests) == 1 and eng.admission(q, 0.0)[1] == full and len(tests) == 1
            eng._rank_memo = (None, False)  # the test itself again: history-free
            again = eng.admission(q, 0.0)[1]
            assert len(tests) == 2
            q2 = q.copy()
            q2[14::7] -= 0.02  # positions only: the same Phi_q (kept answer)
            assert eng.admission(q2, 0.0)[1] == full and len(tests) == 2
            q2[10::7] += 0.01  # Euler parameters: another Phi_q
            assert eng.admission(q2, 0.0)[1] == full and len(tests) == 3
        tests.clear()
        P = eng.constraint_jacobian(q, 0.0)
        np.testing.assert_array_equal(phi, eng.constraint(q, 0.0))
        assert np.abs(phi).max() > 1e-3
        assert (np.linalg.matrix_rank(P.toarray()) == s.nc) == (not dup)
        assert full == (not dup) == S.full_row_rank(P) == S.full_row_rank(P, dense_max=0)
        assert again == full  # history-free: the same answer again


def test_reference_pivots_choose_the_cheaper_column_order():
    """Up to ``MAX_ORDER_CHOICE`` unknowns the reference pivots are set in two analyses
    (COLAMD and a minimum degree order of ``A + A^T``) and the engine keeps the one whose
    refactorization costs fewer multiply-adds: on the seed slider-crank (41 unknowns) the
    minimum degree order, with the same solutions as LAPACK; the choice depends on the
    model only (a second engine makes it again) and runs stay bitwise equal between
    engines; a 20-body chain (260 unknowns) keeps COLAMD alone."""
    import sys
    from pathlib import Path

    from flexmbd.absolute import engine as E

    root = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(root / "benchmarks"), str(root / "examples")]
    try:
        import bench_absolute
        import sda_slider_crank

        crank = sda_slider_crank.build(2e4, 0.0)
        chain = bench_absolute.chain(20)
    finally:
        del sys.path[:2]
    bh2, gh = 0.25e-4, 0.5e-2
    runs = []
    for _ in range(2):
        s = crank.compile("absolute")
        q, qd, qdd, lam = s.initial_conditions()
        eng = s.engine()
        assert eng.sparse and s.n + s.nc <= E.MAX_ORDER_CHOICE
        eng.reference_pivots(bh2, gh)
        costs = [S.refactor_cost(an) for an in eng._analyses]
        assert len(costs) == 2 and min(costs) > 0
        assert costs[1] < 0.7 * costs[0]  # minimum degree: 1825 vs COLAMD's 3046
        assert eng._lu is eng._analyses[1] and eng.ws.lu.rLp is eng._lu.rLp
        # the kept analysis solves the Newton matrix at the initial state like LAPACK
        A = eng.terms(q, qd, qdd, lam, 0.0, (1.0, bh2, gh, bh2, gh))[2]
        Ap, Ai, Ax = _csc(A)
        L = eng.model.layout
        Ad = np.zeros_like(A)
        cols = np.repeat(np.arange(len(L.Ap) - 1), np.diff(L.Ap))
        Ad[L.Ai, cols] = 1.0
        assert np.all(Ad[A != 0.0] == 1.0)  # the layout's pattern holds the matrix
        w = S.fresh_work(eng._lu)
        Ax = A[L.Ai, cols].copy()
        assert S.refactor_or_factor(w, Ax, True) == 1 and w.stat[2] == 0  # reference kept
        b = np.random.default_rng(3).standard_normal(A.shape[0])
        x = np.zeros_like(b)
        S.solve(w, Ax, b, x, 0)
        ref = np.linalg.solve(A, b)
        np.testing.assert_allclose(x, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
        res = s.simulate(0.2, dt=0.01, integrator="newmark", beta=0.25, gamma=0.5)
        runs.append(res.q)
    np.testing.assert_array_equal(runs[0], runs[1])
    s = chain.compile("absolute")
    s.initial_conditions()
    eng = s.engine()
    assert s.n + s.nc > E.MAX_ORDER_CHOICE
    eng.reference_pivots(bh2, gh)
    assert len(eng._analyses) == 1 and eng._lu is eng._analyses[0]


def test_alternative_pivots_keep_runs_history_free(tmp_path):
    """The 50-body SDA chain swings a reference pivot through zero (refused
    refactorizations within 100 steps): every refused step refactorizes with its
    alternative pivots (built once per step from the reference matrix), no pivoting
    factorization; a checkpointed run (blocks of 7 steps, each with a new workspace and
    the alternatives already built) is bitwise the plain run."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(root / "benchmarks")]
    try:
        import bench_absolute

        chain = bench_absolute.chain(50)
    finally:
        del sys.path[:1]
    kw = dict(dt=0.01, integrator="newmark", beta=0.25, gamma=0.5, tol=1e-7, max_iter=50,
              energy=False, project_velocities=False)  # fmt: skip
    s = chain.compile("absolute")
    s.initial_conditions()
    eng = s.engine()
    made = []
    make = eng._workspace
    eng._workspace = lambda n, nc, lu: made.append(make(n, nc, lu)) or made[-1]
    ref = s.simulate(1.0, **kw)
    st = made[-1].lu.stat
    assert eng.sparse and st[2] > 0  # refused reference pivots
    assert st[0] == 0 and st[7] == st[2] and st[8] >= 1  # all by alternatives, built here
    built = eng._lu.alt[:, :4].copy()
    assert (built[:, 0] == 1).any()
    s2 = chain.compile("absolute")
    s2.initial_conditions()
    res = s2.simulate(1.0, checkpoint=tmp_path / "run.h5", every=7, **kw)
    np.testing.assert_array_equal(res.q, ref.q)
    np.testing.assert_array_equal(res.qd, ref.qd)
    np.testing.assert_array_equal(res.stats["newton_iterations"], ref.stats["newton_iterations"])


def _kkt_called(lu):
    """The package kernels a compiled call of the engine's ``_kkt_solve`` types with the
    workspace's ``lu`` (None: the dense solve), from its typing (no run)."""
    from numba import njit, typeof

    from flexmbd.absolute import engine as E

    @njit
    def call(A, rhs, gidx, lu, Ax):
        return E._kkt_solve(A, rhs, gidx, lu, Ax, False)

    args = (np.eye(2), np.ones(2), np.zeros(2, np.int64), lu, np.zeros(2))
    call.compile(tuple(typeof(a) for a in args))
    cres = call.overloads[call.signatures[0]]
    return {
        t.dispatcher.py_func.__name__
        for t in cres.type_annotation.typemap.values()
        if hasattr(t, "dispatcher")
    }


def test_the_dense_solve_types_no_sparse_kernel():
    """The engine's dense/sparse choice is made on the type of the workspace's ``lu``: a
    dense model's kernels neither type nor compile the sparse LU (the cold flagship:
    ~22 s CPU less), a sparse one's call it."""
    assert not _kkt_called(None) & {"refactor_or_factor", "solve", "factor", "gather"}
    w = _dominant_system(6)[-1]
    assert {"refactor_or_factor", "solve", "gather"} <= _kkt_called(S.fresh_work(w))


def test_the_dense_solve_is_numbas_lapack_solve():
    """The engine's dense Newton solve (``_dense_solve``: LAPACK ``dgesv`` through numba's
    C entry) gives numba's compiled ``np.linalg.solve`` to the bit and raises its
    ``LinAlgError`` for a singular matrix and for a non-finite entry; the dense
    ``_kkt_solve`` types it (not numba's generic solve)."""
    from numba import njit

    from flexmbd.absolute import engine as E

    @njit
    def numba_solve(A, b):
        return np.linalg.solve(A, b)

    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 17, 52):
        A = rng.standard_normal((n, n)) + np.diag(rng.uniform(0.0, 3.0, n))
        b = rng.standard_normal(n)
        np.testing.assert_array_equal(E._dense_solve(A, b), numba_solve(A, b))
    np.testing.assert_array_equal(E._dense_solve(A[:, ::-1], b), numba_solve(A[:, ::-1], b))
    singular = np.ones((3, 3))
    bad = np.eye(3)
    bad[1, 2] = np.nan
    for M, rhs, message in (
        (singular, np.ones(3), "singular"),
        (bad, np.ones(3), "infs or NaNs"),
        (np.eye(3), np.array([1.0, np.inf, 0.0]), "infs or NaNs"),
    ):
        for f in (E._dense_solve, numba_solve):
            with pytest.raises(np.linalg.LinAlgError, match=message):
                f(M, rhs)
    assert "_dense_solve" in _kkt_called(None)


def test_python_kkt_solve_is_the_compiled_solve():
    """`engine.kkt_solve` (Python callers: the velocity projection) solves dense and
    sparse layouts alike, and equals LAPACK."""
    from flexmbd.absolute import engine as E

    rng, n, A, _Ap, Ai, _Ax, cols, w = _dominant_system(12)
    b = rng.standard_normal(n)
    gidx = np.ravel_multi_index((Ai, cols), (n, n)).astype(np.int64)
    ref = np.linalg.solve(A, b)
    dense = E.kkt_solve(A, b, gidx, None, np.zeros(0), False)
    sparse = E.kkt_solve(A, b, gidx, S.fresh_work(w), np.zeros(len(Ai)), True)
    np.testing.assert_allclose(dense, ref, rtol=0, atol=1e-13 * np.abs(ref).max())
    np.testing.assert_allclose(sparse, ref, rtol=0, atol=1e-13 * np.abs(ref).max())
