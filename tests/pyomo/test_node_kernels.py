"""One compiled call per batch of nodes (flexmbd.absolute.nodes) against the per-node
Engine.terms calls it replaces: the same kernel with the same coefficients, so residuals,
matrices, input columns, Newmark iterates and constraint blocks are equal bit for bit.
Models: a rigid pendulum (dense Newton matrix; SDA, bearing, input), a four-link chain
(the compressed layout and sparse LU; two inputs, a timed SDA actuator) and a driven
crank (rheonomic slot vectors). Runs without Pyomo."""

import numpy as np
import pytest
import scipy.linalg as sla
from test_residual_jacobians import rigid_pendulum

import flexmbd as fm
import flexmbd.absolute.nodes as nodes_module
import flexmbd.pyomo as fmo
from flexmbd.absolute.nodes import NODE_COEFFICIENTS, NodeTerms
from flexmbd.errors import ConvergenceError
from flexmbd.pyomo.shooting import Shooting


def rigid():
    """The pendulum of test_residual_jacobians (bearing, input, spring) with its free
    parameters and input."""
    m, _, P = rigid_pendulum()
    return m, P, [m.u]


def chain():
    m = fm.Model("chain")
    prev = m.ground
    for i in range(4):
        b = fm.RigidBody.rod(mass=1.0, length=0.5, radius=0.02, origin="end")
        setattr(m, f"b{i}", b)
        x = 0.5 if i else 0.0
        setattr(m, f"j{i}", fm.Revolute(prev, b, parent_frame=(x, 0, 0), q0=[0.2]))
        prev = b
    m.g = fm.Gravity((0, -9.81, 0))
    m.fric = fmo.ViscousBearing(m.j1, 0.2)
    m.u = fmo.JointInput(m.j0)
    m.u2 = fmo.JointInput(m.j2)
    m.sda = fm.SpringDamperActuator(
        m.ground, (0.3, 0.3, 0), m.b3, (0.5, 0, 0), k=20.0, c=1.0, fa=lambda t: 3.0 * np.sin(t)
    )
    P = fmo.parameters(m)
    for p in (P.fric.c, P.sda.k):
        p.free()
    return m, P, [m.u, m.u2]


def driven():
    m = fm.Model("drv")
    m.crank = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.link = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.a = fm.Revolute(m.ground, m.crank)
    m.b = fm.Revolute(m.crank, m.link, parent_frame=(1.0, 0, 0))
    m.drv = fm.JointDriver(m.a, lambda t: 0.5 * t + 0.1 * t * t)
    m.g = fm.Gravity((0, -9.81, 0))
    m.fric = fmo.ViscousBearing(m.b, 0.1)
    P = fmo.parameters(m)
    P.fric.c.free()
    return m, P, []


MODELS = {"rigid": (rigid, False), "chain": (chain, True), "driven": (driven, True)}
TIMES = np.linspace(0.0, 0.15, 16)


def setup(name):
    build, sparse = MODELS[name]
    m, P, inputs = build()
    s = m.compile("absolute")
    res = fmo.NodeResiduals(s, TIMES, P.free_parameters(), inputs)
    assert res.compiled and s.engine().sparse == sparse
    rng = np.random.default_rng(7)
    N, n = res.N, s.n
    q = np.tile(s.initial_conditions()[0], (N, 1)) + 1e-2 * rng.standard_normal((N, n))
    for b in range(s.nb):
        q[:, 7 * b + 3 : 7 * b + 7] /= np.linalg.norm(q[:, 7 * b + 3 : 7 * b + 7], axis=1)[:, None]
    X = res.join(
        q, *(rng.standard_normal((N, k)) for k in (n, n, s.nc)), rng.standard_normal((N, res.nu))
    )
    return s, res, X


def per_node_reference(res, X):
    """The previous compiled path: per node one ``Engine.terms`` call for the residual
    (no matrix), one per matrix (``A_q``, ``A_v``, ``M``: the coefficient rows of
    NODE_COEFFICIENTS) and one per input component at ``u + e_j``."""
    e = res.system.engine()
    q, v, a, lam, u = res.split(X)
    out = []
    for k, t in enumerate(res.times):
        res.set_inputs(u[k])
        F, phi, _ = e.terms(q[k], v[k], a[k], lam[k], t, (0.0,) * 5, jac=False)
        terms = [e.terms(q[k], v[k], a[k], lam[k], t, tuple(c)) for c in NODE_COEFFICIENTS]
        mats = [x[2] for x in terms]
        Fu = np.zeros((res.n, res.nu))
        for j in range(res.nu):
            uj = u[k].copy()
            uj[j] += 1.0
            res.set_inputs(uj)
            Fu[:, j] = e.terms(q[k], v[k], a[k], lam[k], t, (0.0,) * 5, jac=False)[0] - F
        res.set_inputs(u[k])
        out.append((np.concatenate([F, phi]), mats, Fu, terms[0][0]))
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_node_terms_equal_the_per_node_engine_calls_bit_for_bit(name):
    s, res, X = setup(name)
    ref = per_node_reference(res, X)
    nt = NodeTerms(s.engine())
    q, v, a, lam, u = res.split(X)
    r, mats, Fu = nt.evaluate(res.times, q, v, a, lam, u, res.set_inputs)
    r0, _, _ = nt.evaluate(res.times, q, v, a, lam, u, res.set_inputs, jacobian=False)
    assert np.array_equal(r0, r)
    n = res.n
    # with the matrices an SDA's force is summed in another order: the residual without
    # them (the kernel's first call per node) differs in the last bit at some of the
    # chain's nodes (not at these of the rigid pendulum; the driven crank has no SDA)
    differs = [not np.array_equal(x[0][:n], x[3]) for x in ref]
    assert any(differs) == (name == "chain")
    for k, (rk, mk, Fuk, _) in enumerate(ref):
        assert np.array_equal(r[k], rk)
        assert np.array_equal(Fu[k], Fuk)
        for vals, dense in zip(mats, mk):
            assert np.array_equal(vals[k], dense[nt.rows, nt.cols])
            # the pattern holds every non-zero of the engine's matrix
            off = dense.copy()
            off[nt.rows, nt.cols] = 0.0
            assert not off.any()
        # A_q carries Phi_q and its transpose, A_v dF/dv, M the mass matrix (top left:
        # the first body's translational block is its mass)
        Aq, Av, M = mk
        assert np.array_equal(Aq[n:, :n], Aq[:n, n:].T)
        assert np.abs(Av[:n, :n]).max() > 0
        assert np.array_equal(M[:3, :3], s.inertia.m[0] * np.eye(3))
    if res.nu:  # the inputs are left at the last node's
        assert np.array_equal(np.concatenate([i.value(0.0) for i in res.inputs]), u[-1])


@pytest.mark.parametrize("name", list(MODELS))
def test_node_residuals_are_one_kernel_call_and_equal_the_per_node_assembly(name, monkeypatch):
    s, res, X = setup(name)
    ref = per_node_reference(res, X)
    calls = []
    kernel = nodes_module.node_terms
    monkeypatch.setattr(nodes_module, "node_terms", lambda *a: calls.append(1) or kernel(*a))
    r, J = res.evaluate(X)
    assert len(calls) == 1 + len(res.params)  # the nodes, then one residual per parameter
    assert np.array_equal(res.residual(X), r) and len(calls) == 2 + len(res.params)
    # the Jacobian of the previous path, assembled from the per-node matrices
    n, nc, nx, nr = res.n, res.nc, res.nx, res.nr
    e = s.engine()
    pr, pc = e.newton_pattern()
    top, left = pr < n, pc < n
    rows, cols, vals = [], [], []
    for k, (rk, (Aq, Av, M), Fu, _) in enumerate(ref):
        assert np.array_equal(r[k * nr : (k + 1) * nr], rk)
        for mask, mat, dc in ((top & left, Aq, 0), (top & left, Av, n), (top & left, M, 2 * n)):
            rows.append(k * nr + pr[mask])
            cols.append(k * nx + pc[mask] + dc)
            vals.append(mat[pr[mask], pc[mask]])
        for mask, dc in ((top & ~left, 2 * n), (~top & left, 0)):
            rows.append(k * nr + pr[mask])
            cols.append(k * nx + pc[mask] + dc)
            vals.append(Aq[pr[mask], pc[mask]])
        for j in range(res.nu):
            rows.append(k * nr + np.arange(n))
            cols.append(np.full(n, k * nx + 3 * n + nc + j))
            vals.append(Fu[:, j])
    Jr = J.toarray()[:, : res.N * nx]
    J0 = np.zeros_like(Jr)
    J0[np.concatenate(rows), np.concatenate(cols)] = np.concatenate(vals)
    assert np.array_equal(Jr, J0)
    # and the parameter columns: differences of kernel residuals
    p = np.array([par.value for par in res.params])
    assert np.array_equal(J.toarray()[:, res.N * nx :], res.parameter_jacobian(X, r))
    res.set_parameters(p)


def newmark_reference(e, t, qp, vp, a, lam, bh2, gh, rs, tol, max_iter):
    """Shooting's previous step: per iteration ``Engine.terms`` and SciPy's LU."""
    n = len(qp)
    for it in range(1, max_iter + 1):
        r, phi, A = e.terms(qp + bh2 * a, vp + gh * a, a, lam, t, (1.0, bh2, gh, bh2, gh))
        dy = sla.lu_solve(sla.lu_factor(A, check_finite=False), -rs * np.concatenate([r, phi]))
        a += dy[:n]
        lam += dy[n:]
        if np.max(np.abs(dy)) <= tol * (1.0 + np.max(np.abs(np.r_[a, lam]))):
            return it
    return 0


@pytest.mark.parametrize("name", list(MODELS))
def test_newmark_step_equals_the_per_iteration_engine_calls_bit_for_bit(name):
    s, res, X = setup(name)
    e = s.engine()
    nt = NodeTerms(e)
    q0, v0, a0, l0 = s.initial_conditions(fresh=True)
    h, b, g = 0.01, 0.25, 0.5
    rs = np.concatenate([np.ones(s.n), np.full(s.nc, 1.0 / (b * h * h))])
    for t in (0.01, 0.02):
        qp = q0 + h * v0 + h * h * (0.5 - b) * a0
        vp = v0 + h * (1 - g) * a0
        x0, x1 = (a0.copy(), l0.copy()), (a0.copy(), l0.copy())
        it0 = newmark_reference(e, t, qp, vp, *x0, b * h * h, g * h, rs, 1e-11, 30)
        it1 = nt.newmark(t, qp, vp, *x1, b * h * h, g * h, rs, 1e-11, 30)
        assert it1 == it0 > 1
        assert np.array_equal(x1[0], x0[0]) and np.array_equal(x1[1], x0[1])
        q0, v0, a0, l0 = qp + b * h * h * x1[0], vp + g * h * x1[0], x1[0], x1[1]
    # no convergence within max_iter: 0, and Shooting raises ConvergenceError
    a, lam = a0.copy(), l0.copy()
    assert nt.newmark(0.03, q0, v0, a, lam, b * h * h, g * h, rs, 1e-300, 2) == 0
    sh = Shooting(s, 0.02, 0.01, max_iter=1)
    with pytest.raises(ConvergenceError, match="did not converge at t=0.01"):
        sh.simulate()
    # a non-finite state: -k at its first iteration
    a[0] = np.nan
    assert nt.newmark(0.03, q0, v0, a, lam, b * h * h, g * h, rs, 1e-11, 30) == -1


@pytest.mark.parametrize("name", ["rigid", "driven"])
def test_constraint_blocks_equal_the_engines_jacobian_bit_for_bit(name):
    s, res, X = setup(name)
    e = s.engine()
    q = res.split(X)[0]
    rows = np.arange(s.constraints.n_joint_rows)
    for cols in (np.arange(7), np.arange(s.n)[::-1]):
        P = NodeTerms(e).constraint_blocks(res.times, q, rows, cols)
        for k, t in enumerate(res.times):
            ref = e.constraint_jacobian(q[k], t)[rows][:, cols].toarray()
            assert np.array_equal(P[k], ref) and np.abs(ref).max() > 0
