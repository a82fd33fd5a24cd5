"""The real Abaqus/CAE 2019 rotor export: deck, matrices, flexmbd assembly, frequencies, Exudyn."""

from pathlib import Path

import numpy as np
import pytest
import scipy.linalg as sla
from abaqus_data import rotor_dir

import flexmbd as fm
import flexmbd.fem as F
from flexmbd.fem.model import FEModel


@pytest.fixture(scope="module")
def rotor():
    d = rotor_dir()
    deck = F.read_abaqus(d / "rotorDiscTest.inp")
    K = F.read_mtx(d / "rotorDiscTestSTIF1.mtx", deck, kind="stiffness")
    M = F.read_mtx(d / "rotorDiscTestMASS1.mtx", deck, kind="mass")
    return d, deck, M, K


def test_deck_counts_sets_material(rotor):
    _, deck, _, _ = rotor
    fe = deck.mesh
    assert (fe.n_nodes, fe.n_elements, fe.cell_type) == (115, 48, "hexahedron")
    # assembly-level sets on instance rotor-1 (Abaqus labels 78, 77, 43, 111)
    labels = {
        name: [deck.labels[i] for i in fe.node_sets[name]]
        for name in ("BCleft", "BCright", "BCrot", "NodeMiddle")
    }
    assert labels == {
        "BCleft": [("rotor-1", 78)],
        "BCright": [("rotor-1", 77)],
        "BCrot": [("rotor-1", 43)],
        "NodeMiddle": [("rotor-1", 111)],
    }
    np.testing.assert_allclose(fe.nodes[fe.node_sets["BCleft"][0]], [0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(fe.nodes[fe.node_sets["BCright"][0]], [0, 0, 0.5], atol=1e-12)
    # the part set generated 1..115 and the element-face surface of all six sides
    assert len(fe.node_sets["Set-1"]) == 115 and len(fe.node_sets["rotor-1.Set-1"]) == 115
    assert deck.element_sets["_Surface_S2"].tolist() == list(range(12))
    assert "_Surface_S1" not in fe.node_sets  # internal
    mat = deck.material
    assert (mat.name, mat.E, mat.nu, mat.rho) == ("steel", 2.1e11, 0.3, 7850.0)
    assert deck.sections == [("Set-1", "steel")]


def test_matrices_read(rotor):
    _, deck, M, K = rotor
    assert M.shape == K.shape == (345, 345)
    assert M.nnz == 345 and K.nnz == 15833  # lumped mass; the file stores both triangles
    assert abs(K - K.T).max() == 0.0
    # total mass equals rho * V of the mesh
    V = FEModel(deck.mesh, deck.material).assembler.volume()
    assert M.diagonal().sum() / 3 == pytest.approx(7850.0 * V, rel=1e-13)


def test_flexmbd_assembly_vs_abaqus(rotor):
    """flexmbd's own assembly of the deck equals Abaqus' matrices when the integration
    matches: Abaqus C3D8 is selectively reduced (mean-dilatation B-bar), its lumped mass
    is the row sum of the consistent mass.  Full 2x2x2 integration differs by 28 % (the
    volumetric part is stiffer: C3D8 without B-bar is a different element)."""
    _, deck, M, K = rotor
    full = FEModel(deck.mesh, deck.material)
    bbar = FEModel(deck.mesh, deck.material, bbar=True, lumped="row-sum")
    rel = lambda A, B: abs(A - B).max() / abs(B).max()  # noqa: E731
    assert rel(bbar.K, K) < 1e-13  # measured 5.2e-15
    assert rel(bbar.M, M) < 1e-13  # measured 2.6e-15
    assert 0.2 < rel(full.K, K) < 0.35  # measured 0.276
    # consistent mass: same total, same rigid-body inertia, different rows
    assert full.M.sum() / 3 == pytest.approx(M.diagonal().sum() / 3, rel=1e-13)
    assert rel(sp_rows(full.M), M.diagonal()) < 1e-13
    # in frequencies: the matching assembly reproduces Abaqus' spectrum; full integration is
    # 20 % stiffer in the first bending pair of this coarse mesh (1257.6 vs 1046.4 Hz)
    f_abq = _independent_freqs(M, K, 4)
    np.testing.assert_allclose(_independent_freqs(bbar.M, bbar.K, 4), f_abq, rtol=1e-10)
    f_full = _independent_freqs(full.M, full.K, 4)
    assert f_full[0] / f_abq[0] == pytest.approx(1257.56 / 1046.37, rel=1e-4)


def sp_rows(A):
    return np.asarray(A.sum(axis=1)).ravel()


def _independent_freqs(M, K, n):
    lam = sla.eigh(K.toarray(), M.toarray(), eigvals_only=True)
    return np.sqrt(lam[6 : 6 + n]) / (2 * np.pi)  # six rigid-body modes first


def test_free_free_frequencies_from_abaqus_matrices(rotor):
    _, deck, M, K = rotor
    rb = F.reduce(deck.mesh, (M, K), fm.NormalModes(8), name="rotor")
    ref = _independent_freqs(M, K, 8)
    np.testing.assert_allclose(rb.frequencies, ref, rtol=1e-9)
    assert rb.frequencies[0] == pytest.approx(1046.370, abs=1e-3)
    # invariants come from the given (lumped) mass
    assert rb.mass == pytest.approx(M.diagonal().sum() / 3, rel=1e-14)
    np.testing.assert_allclose(rb.M_ff, np.eye(8), atol=1e-10)
    np.testing.assert_allclose(np.diag(rb.K_ff), (2 * np.pi * ref) ** 2, rtol=1e-9)
    assert rb.material_name == "given matrices" and rb.stress_modes.shape[0] == 0


@pytest.mark.parametrize(
    "strategy",
    [
        lambda: fm.StaticCorrection(4, [F.PointLoad("NodeMiddle", force=(1.0, 0, 0))]),
        lambda: fm.CraigBampton(
            4,
            interfaces={
                "left": F.Plane((0, 0, 0), (0, 0, 1)),
                "right": F.Plane((0, 0, 0.5), (0, 0, 1)),
            },
        ),
        lambda: fm.RitzVectors(6, F.PointLoad("NodeMiddle", force=(1.0, 0, 0))),
    ],
)
def test_every_strategy_on_given_matrices(rotor, strategy):
    """Each strategy on (mesh, M, K) equals the same strategy on flexmbd's own matching
    assembly (B-bar, row-sum mass): the matrix path changes nothing but the source."""
    _, deck, M, K = rotor
    a = F.reduce(deck.mesh, M=M, K=K, strategy=strategy(), material=deck.material)
    model = FEModel(deck.mesh, deck.material, bbar=True, lumped="row-sum")
    b = F.reduce(deck.mesh, deck.material, strategy(), model=model)
    np.testing.assert_allclose(a.frequencies, b.frequencies, rtol=1e-8)
    # (bases may differ within repeated eigenvalues of the symmetric rotor: compare
    # basis-independent numbers) reduced matrices are projections of the given M and K
    np.testing.assert_allclose(a.M_ff, a.modes.T @ (M @ a.modes), atol=1e-10 * abs(a.M_ff).max())
    np.testing.assert_allclose(a.K_ff, a.modes.T @ (K @ a.modes), atol=1e-10 * abs(a.K_ff).max())
    assert a.mass == pytest.approx(b.mass, rel=1e-13)
    np.testing.assert_allclose(a.inertia_com, b.inertia_com, rtol=1e-12, atol=1e-13)
    assert a.stress_modes.shape == b.stress_modes.shape and a.stress_modes.shape[0] == 115
    assert a.kg_unit.shape == b.kg_unit.shape and a.kg_unit.shape[0] > 0


def test_interfaces_by_set_name(rotor):
    """A named set of the deck is an interface; a node-set plane union builds the bearing."""
    _, deck, M, K = rotor
    left = F.NodeSet("BCleft") | F.Plane((0, 0, 0), (0, 0, 1))
    rb = F.reduce(deck.mesh, (M, K), fm.CraigBampton(4, interfaces={"left": left}))
    names = rb.interface_names
    assert names == ("left",)
    assert len(rb.interface_nodes) == 9  # the 3x3 end face, BCleft at its centre
    with pytest.raises(fm.MeshError, match="BCmissing"):
        F.reduce(deck.mesh, (M, K), fm.CraigBampton(4, interfaces={"x": "BCmissing"}))


def test_scaled_matrices_and_point_mass(rotor):
    """Exudyn's performance model: K x 1e-2 scales frequencies by 0.1; a 0.1 kg point mass
    raises the total mass by 0.1 kg and moves the centre of mass."""
    _, deck, M, K = rotor
    M2 = M.tolil()
    i = int(np.argmin(np.linalg.norm(deck.mesh.nodes - [0, 0.19598444, 0.15], axis=1)))
    for k in range(3):
        M2[3 * i + k, 3 * i + k] += 0.1
    rb = F.reduce(deck.mesh, (M2.tocsr(), 1e-2 * K), fm.NormalModes(8))
    ref = _independent_freqs(M2.tocsr(), 1e-2 * K, 8)
    np.testing.assert_allclose(rb.frequencies, ref, rtol=1e-9)
    assert rb.mass == pytest.approx(M.diagonal().sum() / 3 + 0.1, rel=1e-14)
    assert rb.com[1] == pytest.approx(0.1 * 0.19598444 / rb.mass, rel=1e-6)


def test_exudyn_fem_interface_agrees(rotor):
    """Exudyn's FEMinterface fed the same files gives the same nodes, matrices and
    free-free frequencies."""
    pytest.importorskip("exudyn")
    from exudyn.FEM import FEMinterface

    d, deck, M, K = rotor
    fem = FEMinterface()
    fem.ImportFromAbaqusInputFile(str(d / "rotorDiscTest.inp"), typeName="Instance", name="rotor-1")
    fem.ReadMassMatrixFromAbaqus(str(d / "rotorDiscTestMASS1.mtx"))
    fem.ReadStiffnessMatrixFromAbaqus(str(d / "rotorDiscTestSTIF1.mtx"))
    np.testing.assert_array_equal(np.asarray(fem.GetNodePositionsAsArray()), deck.mesh.nodes)
    assert abs(fem.GetMassMatrix() - M).max() == 0.0
    assert abs(fem.GetStiffnessMatrix() - K).max() <= 1e-15 * abs(K).max()
    fem.ComputeEigenmodes(8, excludeRigidBodyModes=6, useSparseSolver=True)
    rb = F.reduce(deck.mesh, (M, K), fm.NormalModes(8))
    np.testing.assert_allclose(np.asarray(fem.GetEigenFrequenciesHz()), rb.frequencies, rtol=1e-8)


def test_shipped_rotor_is_the_shared_export():
    """The package's copy of the Abaqus export equals the original in ../shared/data (when
    the repository sits beside it, as in CI)."""
    shared = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "abaqus_rotor"
    if not shared.exists():
        pytest.skip("../shared/data is not beside this checkout")
    for name in ("rotorDiscTest.inp", "rotorDiscTestMASS1.mtx", "rotorDiscTestSTIF1.mtx"):
        assert (rotor_dir() / name).read_bytes() == (shared / name).read_bytes()
