"""Nastran text formats: BDF meshes, OP4 and DMIG matrices (files written by the tests).

pyNastran is not used: it requires numpy < 2 (it would downgrade this stack), so the
decks below are written by flexmbd's writers or by hand following the public card
formats (small, large and free field).
"""

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import flexmbd.fem as F
from flexmbd.errors import MeshError
from flexmbd.fem import nastran as N

ROOT = Path(__file__).resolve().parents[2]
STEEL = F.Material(E=2.1e11, nu=0.3, rho=7850.0)


def _freqs(K, M, k=10):
    lam = spla.eigsh(K.tocsc(), k, M.tocsc(), sigma=-1e3, which="LM", return_eigenvectors=False)
    return np.sort(np.sqrt(np.abs(lam))) / (2 * np.pi)


@pytest.mark.parametrize("mesh", ["beam_hex.msh", "beam_tet10.msh"])
def test_bdf_round_trip_gives_the_native_frequencies(mesh, tmp_path):
    fe = F.read_mesh(ROOT / "meshes" / mesh)
    N.write_bdf(tmp_path / "m.bdf", fe, STEEL)
    deck = N.read_bdf(tmp_path / "m.bdf")
    assert deck.mesh.cell_type == fe.cell_type
    assert deck.mesh.n_nodes == fe.n_nodes and deck.mesh.n_elements == fe.n_elements
    assert (deck.material.E, deck.material.nu, deck.material.rho) == (2.1e11, 0.3, 7850.0)
    # GRID ids are node + 1: the node positions match to the 10 digits of a large field
    x0 = fe.nodes[deck.grid_ids - 1]
    assert np.abs(deck.mesh.nodes - x0).max() < 1e-9 * fe.size()
    for name, nodes in fe.node_sets.items():
        got = np.sort(deck.grid_ids[deck.mesh.node_sets[name]] - 1)
        assert np.array_equal(got, np.sort(nodes)), name
    native = F.FEModel(fe, STEEL)
    read = F.FEModel(deck.mesh, deck.material)
    f0, f1 = _freqs(native.K, native.M), _freqs(read.K, read.M)
    assert f0[6] > 10  # six rigid modes, then elastic ones
    np.testing.assert_allclose(f1[6:], f0[6:], rtol=1e-8)
    assert read.Ms.sum() == pytest.approx(native.Ms.sum(), rel=1e-12)


_HAND = """\
$ hand-written deck: executive, case control, small/free/large fields, a rotated system
SOL 103
CEND
SET 7 = 1, 3 THRU 4,
        8
BEGIN BULK
CORD2R  5       0       1.0     2.0     3.0     1.0     2.0     4.0     +C5
+C5     1.0     3.0     3.0
GRID    1       5       0.0     0.0     0.0
GRID    2       5       1.-1    0.0     0.0
GRID,3,5,0.0,0.1,0.0
GRID,4,5,0.1,0.1,0.0
GRID*                  5               5 0.000000000E+00 0.000000000E+00
*        1.000000000E-01
GRID    6       5       0.1     0.0     0.1
GRID    7       5       0.1     0.1     0.1
GRID    8       5       0.0     0.1     0.1
CHEXA   1       10      1       2       4       3       5       6       +
+       7       8
PSOLID  10      20
MAT1    20      2.1+11  8.077+10        7850.0
SET1    3       5       THRU    8
ASET1   123456  1       2
ENDDATA
"""


def test_hand_written_deck(tmp_path):
    p = tmp_path / "hand.bdf"
    p.write_text(_HAND)
    deck = N.read_bdf(p)
    # CORD2R 5: origin (1, 2, 3), z along basic z, x along basic y (C - A = (0, 1, 0))
    x = deck.mesh.nodes[np.argsort(deck.grid_ids)]
    R = np.column_stack([[0, 1, 0], [-1, 0, 0], [0, 0, 1]])
    local = np.array(
        [
            [0, 0, 0],
            [0.1, 0, 0],
            [0, 0.1, 0],
            [0.1, 0.1, 0],
            [0, 0, 0.1],
            [0.1, 0, 0.1],
            [0.1, 0.1, 0.1],
            [0, 0.1, 0.1],
        ]
    )
    np.testing.assert_allclose(x, local @ R.T + [1, 2, 3], atol=1e-15)
    assert deck.material.nu == pytest.approx(2.1e11 / (2 * 8.077e10) - 1, rel=1e-12)
    sets = {k: np.sort(deck.grid_ids[v]).tolist() for k, v in deck.mesh.node_sets.items()}
    assert sets == {"SET1_3": [5, 6, 7, 8], "ASET": [1, 2], "SET_7": [1, 3, 4, 8]}
    # the same cube built directly (basic coordinates) has the same stiffness spectrum
    import meshio

    fe = F.read_mesh(meshio.Mesh(local, [("hexahedron", np.array([[0, 1, 3, 2, 4, 5, 6, 7]]))]))
    a, b = F.FEModel(fe, deck.material), F.FEModel(deck.mesh, deck.material)
    np.testing.assert_allclose(
        np.linalg.eigvalsh(b.K.toarray()), np.linalg.eigvalsh(a.K.toarray()), rtol=1e-10, atol=1e-3
    )


def _deck(tmp_path, body):
    p = tmp_path / "bad.bdf"
    p.write_text("BEGIN BULK\n" + body + "ENDDATA\n")
    return p


_CUBE = "".join(
    f"GRID,{i + 1},,{x},{y},{z}\n"
    for i, (x, y, z) in enumerate(
        [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]
    )
)
_CUBE += "PSOLID,1,1\nMAT1,1,2.1e11,,0.3,7850.\n"


@pytest.mark.parametrize(
    "body, line, what",
    [
        ("GRID,9,,0.,abc,0.\n", 1, "abc"),
        ("CQUAD4,5,1,1,2,3,4\n", 11, "CQUAD4"),
        ("CHEXA,1,1,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20\n", 11, "C3D20|serendipity"),
        ("CPENTA,1,1,1,2,3,5,6,7\n", 11, "wedge"),
        ("CHEXA,1,1,1,2,3,4,5,6,7,99\n", 11, "GRID 99"),
        ("CHEXA,1,7,1,2,3,4,5,6,7,8\n", 11, "property 7"),
        ("CORD1R,3,1,2,3\n", 11, "CORD1R"),
        ("RBE2,9,1,123456,2\n", 11, "RBE2.*ignore"),
    ],
)
def test_malformed_decks_name_file_and_line(tmp_path, body, line, what):
    extra = "".join(f"GRID,{k},,{k}.,0.,0.\n" for k in range(9, 21)) if "20" in body else ""
    text = body if body.startswith("GRID,9") else _CUBE + body + extra
    p = _deck(tmp_path, text)
    with pytest.raises(MeshError, match=what) as err:
        N.read_bdf(p)
    assert f"{p}, line {line + 1}" in str(err.value)


def test_op4_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(1)
    A = rng.standard_normal((9, 9))
    A[2:6] = 0
    A = A + A.T
    B = sp.random(7, 4, density=0.4, random_state=2)
    for fmt in (False, "bigmat", "nonbigmat"):
        N.write_op4(tmp_path / "m.op4", {"KAA": A, "PHIA": B}, sparse=fmt)
        got = N.read_op4(tmp_path / "m.op4")
        assert list(got) == ["KAA", "PHIA"]
        assert np.array_equal(got["KAA"].toarray(), A), fmt
        assert np.array_equal(got["PHIA"].toarray(), B.toarray()), fmt


def test_op4_hand_written_text(tmp_path):
    # 3 x 2, double precision, D exponents; column 2 sparse-free dense from row 2
    text = (
        "       2       3       2       2MAT     1P,3E23.16\n"
        "       1       1       3\n"
        " 1.0000000000000000D+00 2.5000000000000000D-01-3.0000000000000000D+02\n"
        "       2       2       2\n"
        " 4.0000000000000000D+00 5.0000000000000000D+00\n"
        "       3       1       1\n"
        " 1.0000000000000000D+00\n"
    )
    (tmp_path / "h.op4").write_text(text)
    got = N.read_op4(tmp_path / "h.op4")["MAT"].toarray()
    assert np.array_equal(got, [[1.0, 0.0], [0.25, 4.0], [-300.0, 5.0]])
    (tmp_path / "t.op4").write_text(text[:-24])  # no end record
    with pytest.raises(MeshError, match=r"t.op4, line \d+"):
        N.read_op4(tmp_path / "t.op4")
    # column 2 from row 3 runs past the 3 declared rows: its header line is named
    bad = text.replace("       2       2       2\n", "       2       3       2\n")
    (tmp_path / "r.op4").write_text(bad)
    with pytest.raises(MeshError, match=r"r.op4, line 4: matrix 'MAT': row 4 outside 1..3"):
        N.read_op4(tmp_path / "r.op4")


def test_dmig_round_trip_and_matrices_on_the_mesh(tmp_path):
    fe = F.read_mesh(ROOT / "meshes" / "beam_hex.msh")
    model = F.FEModel(fe, STEEL)
    ids = np.arange(1, fe.n_nodes + 1) * 10  # arbitrary GRID ids
    labels = N.node_dof_labels(ids)

    def ten_digits(A):  # what a 16-character large field holds
        A = sp.csr_matrix((A + A.T) / 2)
        A.data = np.array([float(f"{v:.9E}") for v in A.data])
        return A

    K, M = ten_digits(model.K), ten_digits(model.M)
    N.write_dmig(tmp_path / "km.pch", "KAAX", K, labels)
    N.write_dmig(tmp_path / "km.pch", "MAAX", M, labels, mode="a")
    got = N.read_dmig(tmp_path / "km.pch")
    assert got["KAAX"].form == 6
    # order of the labels: grid then component; the mesh's order here
    Kr = N.node_dof_matrix(got["KAAX"], ids)
    Mr = N.node_dof_matrix(got["MAAX"], ids)
    assert abs(Kr - K).max() == 0 and abs(Mr - M).max() == 0
    # a body from these matrices: free-free frequencies equal the native reduction's
    rb = F.reduce(None, strategy=F.NormalModes(4), model=model, geometric=False, stress_modes=False)
    body = F.ReducedBody.from_matrices(fe.nodes, rb.modes, Mr, Kr)
    assert body.mass == pytest.approx(rb.mass, rel=1e-9)
    # ten digits of K break the free body's rigid null space at ~1e-10 |K|: 2e-6 in f
    np.testing.assert_allclose(body.frequencies, rb.frequencies, rtol=1e-5)
    # OP4 keeps 17 digits: the same body from OP4 matrices agrees to round-off
    N.write_op4(tmp_path / "km.op4", {"KGG": model.K, "MGG": model.M}, sparse="bigmat")
    mats = N.read_op4(tmp_path / "km.op4")
    body = F.ReducedBody.from_matrices(fe.nodes, rb.modes, mats["MGG"], mats["KGG"])
    np.testing.assert_allclose(body.frequencies, rb.frequencies, rtol=1e-12)
    # a matrix of another mesh (a grid id the mesh does not have) does not fit
    with pytest.raises(MeshError, match="does not fit"):
        N.node_dof_matrix(got["KAAX"], ids[:-1])


def test_dmig_symmetric_triangles_and_errors(tmp_path):
    p = tmp_path / "s.pch"
    p.write_text(
        "DMIG    KX      0       6       2       0                       0\n"
        "DMIG    KX      1       1               1       1       2.0\n"
        "+       2       1       -1.0\n"
        "DMIG    KX      2       1               2       1       3.0\n"
    )
    k = N.read_dmig(p)["KX"]
    assert np.array_equal(k.matrix.toarray(), [[2.0, -1.0], [-1.0, 3.0]])
    assert k.rows.tolist() == [[1, 1], [2, 1]]
    p.write_text(p.read_text() + "DMIG    KX      1       1               2       1       -2.0\n")
    with pytest.raises(MeshError, match=r"s.pch, line 5.*differ"):
        N.read_dmig(p)
    p.write_text("DMIG    KY      3       1               1       1       2.0\n")
    with pytest.raises(MeshError, match=r"line 1.*before its header"):
        N.read_dmig(p)


def test_craig_bampton_superelement_output(tmp_path):
    """A CB reduction in Nastran's a-set form (boundary grid DOFs + modal SPOINTs), computed
    here with dense linear algebra, written as DMIG (MAAX, KAAX) and OP4 (PHIG, MGG), read
    back into a ReducedBody: invariants equal those of the basis on flexmbd's own mass,
    six rigid modes at ~0 Hz, the elastic ones above the full model's."""
    import scipy.linalg as sla
    import skfem

    fe = F.read_mesh(
        skfem.MeshHex1.init_tensor(
            np.linspace(0, 1, 9), np.linspace(0, 0.1, 3), np.linspace(0, 0.1, 3)
        )
    )
    x = fe.nodes
    ends = {"A": np.nonzero(x[:, 0] < 1e-9)[0], "B": np.nonzero(x[:, 0] > 1 - 1e-9)[0]}
    N.write_bdf(tmp_path / "se.bdf", fe, STEEL, node_sets=ends)
    deck = N.read_bdf(tmp_path / "se.bdf")
    model = F.FEModel(deck.mesh, deck.material)
    K, M = model.K.toarray(), model.M.toarray()
    K, M = (K + K.T) / 2, (M + M.T) / 2
    bnodes = np.sort(np.concatenate([deck.mesh.node_sets["A"], deck.mesh.node_sets["B"]]))
    # a-set order: boundary grids by id, components 1-3, then the modal SPOINTs
    bnodes = bnodes[np.argsort(deck.grid_ids[bnodes])]
    b = (3 * bnodes[:, None] + np.arange(3)).ravel()
    i = np.setdiff1d(np.arange(3 * fe.n_nodes), b)
    nq = 6
    lam, Xi = sla.eigh(K[np.ix_(i, i)], M[np.ix_(i, i)], subset_by_index=[0, nq - 1])
    Psi = np.zeros((3 * fe.n_nodes, len(b) + nq))
    Psi[b, np.arange(len(b))] = 1.0
    Psi[np.ix_(i, np.arange(len(b)))] = -np.linalg.solve(K[np.ix_(i, i)], K[np.ix_(i, b)])
    Psi[np.ix_(i, len(b) + np.arange(nq))] = Xi
    Maa, Kaa = Psi.T @ M @ Psi, Psi.T @ K @ Psi
    Maa, Kaa = (Maa + Maa.T) / 2, (Kaa + Kaa.T) / 2
    labels = np.vstack(
        [
            N.node_dof_labels(deck.grid_ids[bnodes]),
            np.column_stack([900001 + np.arange(nq), np.zeros(nq, int)]),
        ]
    )
    N.write_dmig(tmp_path / "se.pch", "MAAX", Maa, labels)
    N.write_dmig(tmp_path / "se.pch", "KAAX", Kaa, labels, mode="a")
    order = np.argsort(deck.grid_ids)  # g-set rows: ascending GRID id
    rows = (3 * order[:, None] + np.arange(3)).ravel()
    N.write_op4(
        tmp_path / "se.op4",
        {"PHIG": Psi[rows], "MGG": sp.csr_matrix(M[np.ix_(rows, rows)])},
        sparse="bigmat",
    )
    dm, op = N.read_dmig(tmp_path / "se.pch"), N.read_op4(tmp_path / "se.op4")
    assert np.array_equal(dm["MAAX"].rows, labels)
    # the OP4 MGG is in g-set order (ascending GRID id): back to the mesh's order
    Mg = sp.csr_matrix(op["MGG"].toarray()[np.ix_(np.argsort(rows), np.argsort(rows))])
    body = N.craig_bampton_body(deck, op["PHIG"], dm["MAAX"], dm["KAAX"], mgg=Mg)
    from flexmbd.fem.invariants import inertia_invariants

    ref = inertia_invariants(model.Ms, model.K, deck.mesh.nodes, Psi)
    assert body.mass == pytest.approx(7850.0 * 0.01, rel=1e-12)
    for k in ("first_moment", "second_moment", "St", "Sij", "Pij"):
        np.testing.assert_allclose(
            getattr(body, k), ref[k], rtol=0, atol=1e-12 * np.abs(ref[k]).max()
        )
    assert body.interface_names == ("ASET",) and len(body.interface("ASET")[2]) == len(bnodes)
    f = body.frequencies
    assert np.abs(f[:6]).max() < 1e-3 * f[6]  # constraint modes span the rigid motion
    full = np.sqrt(np.abs(sla.eigh(K, M, eigvals_only=True, subset_by_index=[6, 9]))) / 2 / np.pi
    assert np.all(f[6:10] >= full * (1 - 1e-9))  # Rayleigh-Ritz: upper bounds
    assert np.all(f[6:8] < full[:2] * 1.01)  # first bending pair within 1 % (0.56 %)
    # a basis of another size does not fit the matrices
    with pytest.raises(MeshError, match="do not fit"):
        N.craig_bampton_body(deck, op["PHIG"][:, :-1], dm["MAAX"], dm["KAAX"], mgg=Mg)


def test_ignored_cards_are_skipped(tmp_path):
    p = _deck(tmp_path, _CUBE + "CHEXA,1,1,1,2,3,4,5,6,7,8\nRBE2,9,1,123456,2\nCONM2,10,2,,1.0\n")
    deck = N.read_bdf(p, ignore=("RBE2", "CONM2"))
    assert deck.mesh.n_elements == 1 and deck.mesh.n_nodes == 8
    assert deck.material.rho == 7850.0


def test_deck_in_mm_t_mpa_warns_once_naming_file(tmp_path):
    """A MAT1 in N-mm-t values (MPa, t/mm^3) read as SI: one UnitsWarning (the single
    check of fem.units), naming the file and line and the system the values fit."""
    import warnings

    text = _CUBE.replace("MAT1,1,2.1e11,,0.3,7850.", "MAT1,1,2.1e5,,0.3,7.85e-9")
    text += "CHEXA,1,1,1,2,3,4,5,6,7,8\n"
    p = _deck(tmp_path, text)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        deck = N.read_bdf(p)
    units = [w for w in rec if issubclass(w.category, F.UnitsWarning)]
    assert len(units) == 1
    msg = str(units[0].message)
    assert f"{p}, line 11 (MAT1)" in msg and "mm-t-s" in msg
    assert deck.material.E == 2.1e5  # read as given (SI): the warning says so
