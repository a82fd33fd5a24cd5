"""Modal stress recovery over a run against the full finite-element static stress."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla
from fem_helpers import NU, E, beam_hex1, end

import flexmbd.fem as F
from flexmbd.errors import MeshError
from flexmbd.fem.stress_history import stress_history, von_mises
from flexmbd.results import BodySeries, Results


@pytest.fixture(scope="module")
def case(steel):
    model = F.FEModel(beam_hex1(20, 2), steel)
    tip = F.PointLoad(end(1.0), force=(0.0, 1e4, 0.0))
    rb = F.reduce(
        None,
        strategy=F.StaticCorrection(3, loads=tip, fixed=end(0.0)),
        model=model,
        geometric=False,
        name="beam",
    )
    # full FE: the clamped static solution of the same tip load and its nodal stress
    f = tip.vectors(model, "tip")[0][:, 0]
    fixed = model.dofs_of(model.fe.select(end(0.0)))
    free = np.setdiff1d(np.arange(model.n_dofs), fixed)
    u = np.zeros(model.n_dofs)
    u[free] = spla.spsolve(model.K[free][:, free].tocsc(), f[free])
    sigma = model.assembler.nodal_stress(u)[:, :, 0]
    q_static = np.linalg.solve(rb.K_ff, rb.modes.T @ f)
    # a quasi-static run: the load factor sin(2 pi t), peak +1 at t = 0.25, -1 at 0.75
    t = np.linspace(0.0, 1.0, 101)
    lam = np.sin(2 * np.pi * t)
    Q = lam[:, None] * q_static
    res = Results(t, np.zeros((101, 0)), np.zeros((101, 0)), bodies={"beam": BodySeries(modal=Q)})
    return model, rb, sigma, lam, res


def test_history_equals_the_full_fe_static_stress(case, tmp_path):
    model, rb, sigma, lam, res = case
    root = model.fe.select(end(0.0))
    top = root[np.argmax(model.fe.nodes[root, 1])]
    nodes = [int(top), 7, 100]
    h = stress_history(res, rb, nodes=nodes, elements=[0])
    assert h.stress.shape == (101, 4, 6)
    scale = np.abs(sigma).max()
    np.testing.assert_allclose(
        h.stress[:, :3], lam[:, None, None] * sigma[nodes], rtol=0, atol=1e-8 * scale
    )
    el = model.fe.meshio_cells()[0]
    np.testing.assert_allclose(
        h.stress[:, 3], lam[:, None] * sigma[el].mean(0), rtol=0, atol=1e-8 * scale
    )
    # the root's top fibre: the bending stress peaks at t = 0.25 or 0.75 by its sign
    env = h.envelope()
    s_top = sigma[top, 0]
    assert abs(s_top) > 0.5 * scale
    assert env["sxx"]["max"][0] == pytest.approx(abs(s_top), rel=1e-8)
    assert env["sxx"]["t_max"][0] == (0.25 if s_top > 0 else 0.75)
    assert env["sxx"]["min"][0] == pytest.approx(-abs(s_top), rel=1e-8)
    assert env["von_mises"]["max"][0] == pytest.approx(von_mises(sigma[top]), rel=1e-8)
    assert env["von_mises"]["t_max"][0] == 0.25  # |lam| = 1 first at t = 0.25
    # Hooke: the strain gives the stress back
    e = h.strain[25, 0]
    G = E / (2 * (1 + NU))
    lam_l = E * NU / ((1 + NU) * (1 - 2 * NU))
    s = np.concatenate([2 * G * e[:3] + lam_l * e[:3].sum(), G * e[3:]])
    np.testing.assert_allclose(s, h.stress[25, 0], rtol=0, atol=1e-9 * scale)


def test_files(case, tmp_path):
    model, rb, sigma, lam, res = case
    h5py = pytest.importorskip("h5py")
    import meshio

    h = stress_history(res, rb, nodes=[3, 50])
    p = h.to_csv(tmp_path / "s.csv")
    head = p.read_text().splitlines()[0].split(",")
    data = np.loadtxt(p, delimiter=",", skiprows=1)
    assert head[:2] == ["t", "node3.sxx"] and "node50.von_mises" in head
    assert np.array_equal(data[:, 0], res.t)
    assert np.array_equal(data[:, head.index("node50.sxy")], h.stress[:, 1, 5])
    assert np.array_equal(data[:, head.index("node3.gxz")], h.strain[:, 0, 4])
    h.to_hdf5(tmp_path / "s.h5")
    with h5py.File(tmp_path / "s.h5") as f:
        assert np.array_equal(f["stress"][()], h.stress)
        assert np.array_equal(f["envelope/von_mises/max"][()], h.envelope()["von_mises"]["max"])
        assert [s.decode() for s in f["locations"][()]] == ["node 3", "node 50"]
    files = h.to_vtk(tmp_path / "vtk" / "beam", stride=25)
    assert len(files) == 5 + 2  # samples 0, 25, 50, 75, 100; envelope; pvd
    m = meshio.read(files[1])  # t = 0.25: the full static stress on every node
    np.testing.assert_allclose(
        m.point_data["stress"], sigma, rtol=0, atol=1e-8 * np.abs(sigma).max()
    )
    env = meshio.read(files[-2])
    np.testing.assert_allclose(
        env.point_data["von_mises_max"], von_mises(sigma), rtol=0, atol=1e-8 * np.abs(sigma).max()
    )
    assert np.all(env.point_data["t_von_mises_max"] == 0.25)


def test_bad_requests(case):
    model, rb, sigma, lam, res = case
    with pytest.raises(MeshError, match="node 99999"):
        stress_history(res, rb, nodes=[99999])
    with pytest.raises(MeshError, match="no modal coordinates"):
        stress_history(res, rb, name="other")
    no_stress = F.ReducedBody.from_matrices(rb.nodes, rb.modes, model.M, model.K)
    with pytest.raises(MeshError, match="stress modes"):
        stress_history(res, no_stress, name="beam")


def test_flexible_body_of_a_simulated_model():
    """The model path: a FlexibleBody's run gives the same stresses as FlexibleBody.stresses."""
    from pathlib import Path

    import flexmbd as fm

    mesh = Path(__file__).resolve().parents[2] / "meshes" / "beam_hex.msh"
    steel = fm.Material(E=2.1e11, nu=0.3, rho=7850.0)
    beam = fm.fem.reduce(
        mesh, steel, fm.CraigBampton(2, interfaces={"A": "A"}), name="beam", geometric=False
    )
    p = fm.Model("flexible_pendulum")
    p.beam = fm.FlexibleBody(beam)
    p.hinge = fm.Revolute(
        p.ground,
        p.beam,
        axis=(0, 0, 1),
        parent_frame=(0, 0.025, 0.025),
        child_frame=p.beam.interface("A"),
    )
    p.g = fm.Gravity((0, -9.81, 0))
    run = p.simulate(t_end=0.01, dt=1e-3, integrator="generalized-alpha")
    nodes = beam.interface("A")[2][:4]
    h = fm.fem.stress_history(run, p.beam, nodes=nodes)
    ref = p.beam.stresses(run.body("beam").modal)[:, nodes]
    assert np.abs(ref).max() > 0
    np.testing.assert_allclose(h.stress, ref, rtol=1e-13, atol=0)
    assert h.locations[0] == f"node {nodes[0]}"
