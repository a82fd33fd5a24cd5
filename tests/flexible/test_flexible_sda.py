"""Spring-damper-actuators with ends at deforming frames of flexible bodies (absolute).

* exact Jacobians of the element (reference and modal coordinates, both ends) against
  central differences, alone and inside the full Newton residual;
* a cantilever pulled at its tip interface by an SDA to the ground: the static
  deflection is the full finite-element deflection under the SDA's force;
* a pinned beam swinging on an SDA: total energy (with the SDA potential) conserved to
  the integrator's order without damping, decreasing with damping;
* the clear error for a frame of another body.

The recursive formulation's SDAs at deforming frames are checked against the absolute one in
``tests/recursive/test_flexible_cfa.py``.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from flex_helpers import STEEL, beam_mesh, central_jacobian, end, rel_err, small_beam
from test_absolute_jacobians import flexible_model, random_state, residual

import flexmbd as fm
from flexmbd.errors import ModelError
from flexmbd.fem import FEModel

TOL = 1e-7
A0 = (0.0, 0.025, 0.025)  # centre of the x = 0 face (interface A)


def _dense(trip, shape):
    r, c, v = trip
    return sp.coo_matrix((v, (r, c)), shape=shape).toarray()


def _add_sdas(m):
    """An SDA from interface B to the tip body, one from the arm to a mesh point of the
    beam (end j deforming), one from a node of the beam to the ground; k, c, fa nonzero."""
    m.s1 = fm.SpringDamperActuator(
        m.beam, m.beam.interface("B"), m.tip, (0.1, 0.05, -0.02), k=3e3, c=20.0, fa=15.0, l0=0.1
    )
    m.s2 = fm.SpringDamperActuator(
        m.arm,
        fm.Frame(m.arm, (0.05, 0.1, 0.0)),
        m.beam,
        m.beam.point((0.5, 0.0, 0.05)),
        k=2e3,
        c=10.0,
        fa=lambda t: 5.0 + t,
        l0=0.05,
    )
    m.s3 = fm.SpringDamperActuator(
        m.beam, m.beam.node(3), m.ground, (0.5, 0.4, 0.1), k=1e3, c=5.0, fa=2.0
    )
    return m


def sda_only_model():
    """The joints of ``flexible_model`` with the three SDAs as the only force elements."""
    rb = small_beam(3, "cb")
    m = fm.Model("flex_sda")
    m.beam = fm.FlexibleBody(rb, geometric_stiffening=False)
    m.tip = fm.RigidBody(2.0, (0.1, 0.2, 0.3), com=(0.05, 0.02, -0.01))
    m.arm = fm.RigidBody(1.0, (0.05, 0.06, 0.07), com=(0.1, 0.0, 0.0))
    m.j0 = fm.Revolute(
        m.ground, m.beam, axis=(0.2, 0.1, 1.0), parent_frame=A0, child_frame=m.beam.interface("A")
    )
    m.j1 = fm.Spherical(
        m.beam, m.tip, parent_frame=m.beam.interface("B"), child_frame=(0.01, 0.02, 0.03)
    )
    m.j2 = fm.Universal(
        m.beam,
        m.arm,
        axis1=(1, 0, 0),
        axis2=(0, 1, 0),
        parent_frame=m.beam.point((0.5, 0.05, 0.05)),
        child_frame=(0.2, 0, 0),
    )
    return _add_sdas(m)


@pytest.fixture(scope="module")
def sda_system():
    s = sda_only_model().compile("absolute")
    assert len(s._flex_sda) == 3 and not s._sda
    return s


def test_routing_and_free_length(sda_system):
    s = sda_system
    ends = [[e is not None and len(e[3]) > 0 for e in fs.ends] for fs in s._flex_sda]
    assert ends == [[True, False], [False, True], [True, False]]
    # the default free length is the initial (deformed) length
    s3 = s._flex_sda[2]
    assert s3.el.l0 == pytest.approx(s3.length(s.q0()), rel=1e-14)


@pytest.mark.parametrize("seed", range(3))
def test_sda_jacobians_alone(sda_system, seed):
    """dQ/dq and dQ/dqd of the SDAs (the only applied forces) vs central differences."""
    s = sda_system
    rng = np.random.default_rng(seed)
    q, qd, _, _ = random_state(s, rng)
    t = 0.3
    _, KQ, DQ = s.generalized_forces(q, qd, t, jacobian=True)
    n = s.n
    Kfd = central_jacobian(lambda x: s.generalized_forces(x, qd, t), q)
    Dfd = central_jacobian(lambda x: s.generalized_forces(q, x, t), qd)
    r, f = slice(0, s.n_rigid), slice(s.n_rigid, n)
    for name, A, B in (("K", _dense(KQ, (n, n)), Kfd), ("D", _dense(DQ, (n, n)), Dfd)):
        for rr in (r, f):
            for cc in (r, f):
                assert rel_err(A[rr, cc], B[rr, cc]) < TOL, (name, rr, cc)
        assert np.abs(A[f]).max() > 0  # the modal forces respond


@pytest.mark.parametrize("seed", range(2))
def test_newton_blocks_with_sdas(seed):
    """The full Newton residual of ``flexible_model`` (gravity, point loads, stiffening,
    damping) with the SDAs added."""
    s = _add_sdas(flexible_model()).compile("absolute")
    rng = np.random.default_rng(20 + seed)
    q, qd, qdd, lam = random_state(s, rng)
    T = s.dae_terms(q, qd, qdd, lam, 0.3)
    n = s.n
    K = _dense(T.Kin, (n, n)) + _dense(T.H, (n, n)) - _dense(T.KQ, (n, n))
    D = _dense(T.Din, (n, n)) - _dense(T.DQ, (n, n))
    Kfd = central_jacobian(lambda x: residual(s, x, qd, qdd, lam, 0.3), q)
    Dfd = central_jacobian(lambda x: residual(s, q, x, qdd, lam, 0.3), qd)
    r, f = slice(0, s.n_rigid), slice(s.n_rigid, n)
    for name, A, B in (("K", K, Kfd), ("D", D, Dfd)):
        for rr in (r, f):
            for cc in (r, f):
                assert rel_err(A[rr, cc], B[rr, cc]) < TOL, (name, rr, cc)


def test_static_cantilever_pulled_by_sda_equals_full_fe():
    mesh = beam_mesh(8, 2)
    mat = fm.Material(**STEEL)
    strat = fm.CraigBampton(
        4,
        interfaces={"A": end(0.0), "B": end(1.0)},
        interface_kind={"A": "rigid", "B": "distributing"},
        frame="interface",
    )
    rb = fm.fem.reduce(mesh, mat, strat, name="beam")
    m = fm.Model("cantilever_sda")
    m.beam = fm.FlexibleBody(rb, geometric_stiffening=False)
    m.fix = fm.Fixed(m.ground, m.beam, parent_frame=A0, child_frame=m.beam.interface("A"))
    anchor = np.array([1.3, -0.6, 0.2])
    m.s = fm.SpringDamperActuator(
        m.beam, m.beam.interface("B"), m.ground, anchor, k=2e6, l0=0.3, c=50.0, fa=300.0
    )
    s = m.compile("absolute")
    st = s.static_equilibrium()
    qf = s.modal(st.q, "beam")
    assert np.abs(qf).max() > 0
    u = rb.displacement(qf)
    # the SDA's force at equilibrium, on the deformed tip interface (the beam frame is fixed)
    fs = s._flex_sda[0]
    f, n = fs.tension_at(0.0, st.q, np.zeros(s.n))
    F = f * n  # end i is pulled towards the anchor
    assert f > 1e3
    R = s.rotation(st.q, "beam")
    Fb = R.T @ F
    model = FEModel(mesh, mat)
    itfs = model.interfaces({"A": end(0.0), "B": end(1.0)}, {"A": "rigid", "B": "distributing"})
    load = itfs["B"].load(np.concatenate([np.zeros(3), Fb]), model.n_dofs)
    free = np.setdiff1d(np.arange(model.n_dofs), itfs["A"].dofs)
    U = np.zeros(model.n_dofs)
    U[free] = spla.spsolve(model.K[free][:, free].tocsc(), load[free])
    U = U.reshape(-1, 3)
    assert np.abs(u - U).max() < 1e-8 * np.abs(U).max()


def _swing(c, dt):
    rb = small_beam(3, "cb", E=2.1e9)
    m = fm.Model("swing_sda")
    m.beam = fm.FlexibleBody(rb, geometric_stiffening=False)
    m.j = fm.Revolute(
        m.ground,
        m.beam,
        axis=(0, 0, 1),
        parent_frame=A0,
        child_frame=m.beam.interface("A"),
        q0=[0.2],
        qd0=[-1.0],
    )
    m.s = fm.SpringDamperActuator(
        m.beam, m.beam.interface("B"), m.ground, (1.0, 0.6, 0.1), k=2e4, c=c, l0=0.4
    )
    s = m.compile("absolute")
    return s.simulate(0.05, dt=dt, integrator="generalized-alpha", rho_inf=1.0)


def test_energy_balance_of_a_beam_on_an_sda():
    drift = []
    for dt in (4e-4, 2e-4):
        res = _swing(0.0, dt)
        E = res.energy["total"]
        assert np.abs(res.body("beam").modal).max() > 1e-6  # the modes respond
        assert res.energy["spring"].max() > 1.0  # the SDA potential is counted
        drift.append(np.abs(E - E[0]).max() / E[0])
    # second order: ~1e-5 and ~3.4e-6 (ratio ~3)
    assert drift[0] < 1e-4 and drift[1] < drift[0] / 2.5, drift
    res = _swing(50.0, 2e-4)
    E = res.energy["total"]
    assert E[-1] < E[0] - 0.05 * abs(E[0])
    # the damper's work accounts for the loss (trapezoidal power integration)
    loss = E[0] - E[-1]
    assert abs(res.energy["damper_work"][-1] - loss) < 0.02 * loss


def test_frame_of_another_body_is_a_clear_error():
    m = fm.Model("bad")
    m.beam = fm.FlexibleBody(small_beam(3, "cb"))
    m.arm = fm.RigidBody(1.0, (0.05, 0.06, 0.07))
    with pytest.raises(ModelError, match="frame of body 'beam'.*pass a frame of 'arm'"):
        fm.SpringDamperActuator(m.arm, m.beam.interface("B"), m.beam, (0, 0, 0), k=1.0)
    # a frame of a rigid body stands for its origin and uses the rigid (batched) element
    m.s = fm.SpringDamperActuator(
        m.arm, fm.Frame(m.arm, (0.1, 0.2, 0.0)), m.ground, (1, 1, 1), k=1.0
    )
    assert np.allclose(m.s.point_i, (0.1, 0.2, 0.0)) and not m.s.deforming_ends()
