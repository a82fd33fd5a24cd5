"""Flexible bodies in the absolute formulation against independent references.

* frozen modes (very stiff) reproduce the rigid body;
* a free flexible body conserves momentum and energy within the integrator's order;
* a clamped-free beam under a static tip load reproduces the full finite-element
  deflection of the same mesh (Craig-Bampton with the tip interface: exact);
* the small-amplitude vibration of a pinned beam has the finite-element eigenfrequency.
"""

import numpy as np
import scipy.linalg as sla
from flex_helpers import STEEL, beam_mesh, end, small_beam

import flexmbd as fm
from flexmbd.fem import FEModel
from flexmbd.fem.interfaces import interface_transform
from flexmbd.flexible import ffr
from flexmbd.results import quat_to_rot_batch

A0 = (0.0, 0.025, 0.025)  # centre of the x = 0 face (interface A)


def _pendulum(body):
    m = fm.Model("pendulum")
    m.beam = body
    frame = body.interface("A") if isinstance(body, fm.FlexibleBody) else A0
    m.j = fm.Revolute(
        m.ground, m.beam, axis=(0, 0, 1), parent_frame=A0, child_frame=frame, q0=[0.3], qd0=[-1.0]
    )
    m.g = fm.Gravity((0, -9.81, 0))
    return m


def test_frozen_modes_reproduce_the_rigid_body():
    """Stiff modes: the flexible pendulum converges to the rigid one; both are integrated with
    O(h^2) errors of their own, so the difference shrinks four-fold per halving of dt."""
    rb = small_beam(3, "cb")
    rb = rb.replace(K_ff=rb.K_ff * 1e4)  # eigenfrequencies x 100: frozen modes (sag ~ 2e-8 m)
    diffs = []
    for dt in (2e-3, 1e-3):
        flex = _pendulum(fm.FlexibleBody(rb))
        rigid = _pendulum(fm.RigidBody(rb.mass, rb.inertia_com, com=rb.com))
        opts = dict(dt=dt, integrator="generalized-alpha", rho_inf=0.8)
        rf = flex.simulate(0.2, **opts)
        rr = rigid.simulate(0.2, **opts)
        assert np.abs(rf.body("beam").modal).max() < 1e-8
        # the deformed tip interface stays on the rigid tip to the frozen deflection
        assert np.abs(rf.body("beam").interfaces["B"][:, :3] - _rigid_tip(rf)).max() < 1e-8
        # the released beam starts undeformed: its stiff modes ring (amplitude ~ sag, but
        # accelerations and reactions O(1)) until the scheme's dissipation (rho_inf = 0.8) has
        # removed them; compare the reactions after that transient
        late = rf.t > 0.1
        dreac = np.abs(rf.reactions[late] - rr.reactions[late]).max() / np.abs(rr.reactions).max()
        diffs.append(np.abs(_rigid_tip(rf) - _rigid_tip(rr)).max())
        assert rf.stats["newton_iterations"][1:].max() <= 3
    assert dreac < 1e-5
    assert diffs[1] < 3e-7 and diffs[1] < diffs[0] / 3.5, diffs


def _rigid_tip(res):
    R = quat_to_rot_batch(res.body("beam").orientation)
    return res.body("beam").position + R @ np.array([1.0, 0.025, 0.025])


def _momenta(s, q, qd):
    d = s.flexible.flex[0]
    i = d.index
    r = q[7 * i : 7 * i + 3]
    R = s.rotation(q, "beam")
    u = s.flexible.body_speeds(d, q, qd)
    Mu = ffr.mass_matrix(d.inv, q[d.col0 : d.col0 + d.n]) @ u
    p = R @ Mu[3:6]
    return p, np.cross(r, p) + R @ Mu[:3]


def test_free_body_conserves_momentum_and_energy():
    rb = small_beam(4, "nm", E=2.1e9)  # free-free normal modes, mean axes
    errs = []
    for dt in (4e-4, 2e-4):
        m = fm.Model("free")
        m.beam = fm.FlexibleBody(
            rb, geometric_stiffening=False, q0=[2e-3, -1e-3, 5e-4, 1e-3], qd0=[0.1, 0.2, -0.1, 0.05]
        )
        m.j = fm.Free(m.ground, m.beam, qd0=[3.0, -2.0, 5.0, 0.4, 0.1, -0.2])
        s = m.compile("absolute")
        res = s.simulate(0.04, dt=dt, integrator="generalized-alpha", rho_inf=1.0)
        p0, H0 = _momenta(s, res.q[0], res.qd[0])
        dp = max(np.abs(_momenta(s, q, qd)[0] - p0).max() for q, qd in zip(res.q, res.qd))
        dH = max(np.abs(_momenta(s, q, qd)[1] - H0).max() for q, qd in zip(res.q, res.qd))
        E = res.energy["total"]
        errs.append(
            (dp / np.linalg.norm(p0), dH / np.linalg.norm(H0), np.abs(E - E[0]).max() / E[0])
        )
    (p1, h1, e1), (p2, h2, e2) = errs
    assert max(p1, h1, e1) < 2e-3
    # second order: halving the step divides the drift by ~4
    assert p2 < p1 / 3 and h2 < h1 / 3 and e2 < e1 / 3


def test_static_tip_load_equals_full_fe():
    mesh = beam_mesh(8, 2)
    mat = fm.Material(**STEEL)
    strat = fm.CraigBampton(
        4,
        interfaces={"A": end(0.0), "B": end(1.0)},
        interface_kind={"A": "rigid", "B": "distributing"},
        frame="interface",
    )
    rb = fm.fem.reduce(mesh, mat, strat, name="beam")
    f = np.array([150.0, -1000.0, 400.0])
    m = fm.Model("cantilever")
    m.beam = fm.FlexibleBody(rb, geometric_stiffening=False)
    m.fix = fm.Fixed(m.ground, m.beam, parent_frame=A0, child_frame=m.beam.interface("A"))
    m.load = fm.PointForce(m.beam, m.beam.interface("B"), f)
    s = m.compile("absolute")
    st = s.static_equilibrium()
    q = s.modal(st.q, "beam")
    u = rb.displacement(q)
    # full FE: A nodes clamped, the force spread on B like the distributing interface
    model = FEModel(mesh, mat)
    itfs = model.interfaces({"A": end(0.0), "B": end(1.0)}, {"A": "rigid", "B": "distributing"})
    F = itfs["B"].load(np.concatenate([np.zeros(3), f]), model.n_dofs)
    free = np.setdiff1d(np.arange(model.n_dofs), itfs["A"].dofs)
    import scipy.sparse.linalg as spla

    U = np.zeros(model.n_dofs)
    U[free] = spla.spsolve(model.K[free][:, free].tocsc(), F[free])
    U = U.reshape(-1, 3)
    assert np.abs(u - U).max() < 1e-9 * np.abs(U).max()
    # the interface frame follows the same deflection (translation and rotation: least-squares
    # rigid fit of the B nodes, u = t + theta x (x - origin)); beam-theory sign of the rotation
    RB, pB = m.beam.interface("B").pose(q)
    nB = itfs["B"].nodes
    xB = model.fe.nodes[nB] - itfs["B"].origin
    G = np.zeros((len(nB), 3, 6))
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1.0
        G[:, :, k] = np.cross(e, xB)
        G[:, k, 3 + k] = 1.0
    fit = np.linalg.lstsq(G.reshape(-1, 6), U[nB].ravel(), rcond=None)[0]
    assert np.allclose(pB - rb.interface("B")[1], fit[3:], rtol=1e-8, atol=1e-14)
    theta = np.array([RB[2, 1] - RB[1, 2], RB[0, 2] - RB[2, 0], RB[1, 0] - RB[0, 1]]) / 2
    assert np.allclose(theta, fit[:3], rtol=1e-6, atol=1e-12)
    assert theta[2] < 0  # a -y tip force turns the tip about -z (this coarse mesh locks)
    react = st.reaction("fix")  # parent (ground) on child (beam) at interface A
    assert np.allclose(react[3:], -f, rtol=1e-9)


def _pinned_fe_mode(mesh, mat):
    """In-plane pinned-free eigenmode of the full FE model (A face rigid, rotating about z)."""
    model = FEModel(mesh, mat)
    itfs = model.interfaces({"A": end(0.0)}, "rigid")
    T, n_i, sl = interface_transform(model.n_dofs, itfs)
    keep = np.r_[np.arange(n_i), sl["A"][2]]  # interior DOFs + rotation about z of frame A
    Tk = T[:, keep]
    K = (Tk.T @ model.K @ Tk).toarray()
    M = (Tk.T @ model.M @ Tk).toarray()
    lam, V = sla.eigh(K, M)
    U = Tk @ V
    for k in range(1, len(lam)):
        u = U[:, k].reshape(-1, 3)
        if np.abs(u[:, 1]).max() > 10 * np.abs(u[:, 2]).max():  # first in-plane flexible mode
            return np.sqrt(lam[k]) / (2 * np.pi), U[:, k], V[-1, k], model
    raise AssertionError("no in-plane mode")


def test_pinned_beam_frequency_matches_fe():
    mesh = beam_mesh(8, 2)
    mat = fm.Material(**STEEL)
    f_fe, u, _, model = _pinned_fe_mode(mesh, mat)
    rb = small_beam(10, "cbA")  # same mesh: CB with A (reference), 10 fixed-interface modes
    # initial state = the FE mode: the rotation th of the A face (fitted to its nodes: the
    # face is rigid) as joint angle, the deformation relative to the A frame as modes
    x = model.fe.nodes - np.array(A0)
    nA = np.abs(x[:, 0]) < 1e-12
    ez = np.cross([0.0, 0.0, 1.0], x)
    U = u.reshape(-1, 3)
    th = float(np.sum(U[nA] * ez[nA]) / np.sum(ez[nA] * ez[nA]))
    rel = U - th * ez
    assert np.abs(rel[nA]).max() < 1e-10 * np.abs(U).max()
    Phi = rb.modes
    MPhi = model.M @ Phi
    qm = np.linalg.solve(Phi.T @ MPhi, MPhi.T @ rel.ravel())
    eps = 2e-4 / np.abs(u).max()
    m = fm.Model("pinned")
    m.beam = fm.FlexibleBody(rb, q0=eps * qm)
    m.j = fm.Revolute(
        m.ground,
        m.beam,
        axis=(0, 0, 1),
        parent_frame=A0,
        child_frame=m.beam.interface("A"),
        q0=[eps * th],
    )
    period = 1.0 / f_fe
    h = period / 60
    res = m.simulate(3.2 * period, dt=h, integrator="generalized-alpha", rho_inf=1.0)
    R = quat_to_rot_batch(res.body("beam").orientation)
    ang = np.arctan2(R[:, 1, 0], R[:, 0, 0])
    y = ang - 0.5 * (ang.max() + ang.min())
    t = res.t
    k = np.nonzero(np.sign(y[1:]) != np.sign(y[:-1]))[0]
    tz = t[k] - y[k] * (t[k + 1] - t[k]) / (y[k + 1] - y[k])
    f_sim = 0.5 * (len(tz) - 1) / (tz[-1] - tz[0])
    # trapezoidal rule (rho_inf = 1): omega_h = (2/h) atan(omega h / 2)
    f_expect = np.arctan(np.pi * f_fe * h) / (np.pi * h)
    assert len(tz) >= 5
    assert abs(f_sim / f_expect - 1) < 2e-3, (f_sim, f_expect, f_fe)
    assert res.stats["newton_iterations"][1:].max() <= 3


def test_reaction_at_a_deforming_child_frame():
    """A rigid block welded to the tip interface of a cantilever: the reaction of the block on
    the beam, reported at the deformed tip frame in its (rotated) axes, is the block's weight
    and its moment there."""
    rb = small_beam(4, "cb")
    m = fm.Model("tip_block")
    m.beam = fm.FlexibleBody(rb)
    m.block = fm.RigidBody(50.0, (0.2, 0.3, 0.4), com=(0.1, -0.05, 0.02))
    m.fix = fm.Fixed(m.ground, m.beam, parent_frame=A0, child_frame=m.beam.interface("A"))
    m.weld = fm.Fixed(
        m.block, m.beam, parent_frame=(0.0, 0.0, 0.0), child_frame=m.beam.interface("B")
    )
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    s = m.compile("absolute")
    st = s.static_equilibrium()
    qf = s.modal(st.q, "beam")
    RB, pB = m.beam.interface("B").pose(qf)
    FB = s.rotation(st.q, "beam") @ RB  # world axes of the deformed tip frame
    assert abs(FB[1, 0]) > 5e-4  # it did rotate (~0.05 degrees)
    W = st.reaction("weld")
    f = np.array([0.0, -9.81 * 50.0, 0.0])
    rc = s.body_states(st.q, 0 * st.q)["block"]
    com = rc[1] + rc[0] @ np.array([0.1, -0.05, 0.02])
    pw = s.body_states(st.q, 0 * st.q)["beam"][1] + s.rotation(st.q, "beam") @ pB
    assert np.allclose(W[3:], FB.T @ f, rtol=1e-9, atol=1e-9)
    assert np.allclose(W[:3], FB.T @ np.cross(com - pw, f), rtol=1e-8, atol=1e-8)
