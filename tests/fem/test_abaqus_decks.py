"""Abaqus decks written by the tests: instances, sets, surfaces, element types, .mtx
layouts, units; and bad input — each a MeshError naming the file and the line."""

import warnings

import meshio
import numpy as np
import pytest
import skfem
from skfem.io.meshio import to_meshio

import flexmbd as fm
import flexmbd.fem as F
from flexmbd.errors import MeshError
from flexmbd.fem.assembly import Assembler
from flexmbd.fem.model import FEModel

# a 2 x 1 x 1 block of two C3D8 (Abaqus/VTK node order), 12 nodes, labels 1..12
NODES = [
    (1, 0, 0, 0),
    (2, 1, 0, 0),
    (3, 2, 0, 0),
    (4, 0, 1, 0),
    (5, 1, 1, 0),
    (6, 2, 1, 0),
    (7, 0, 0, 1),
    (8, 1, 0, 1),
    (9, 2, 0, 1),
    (10, 0, 1, 1),
    (11, 1, 1, 1),
    (12, 2, 1, 1),
]
HEXES = [(1, 1, 2, 5, 4, 7, 8, 11, 10), (2, 2, 3, 6, 5, 8, 9, 12, 11)]


def _mesh_lines():
    out = ["*Node"] + [f"{n}, {x}, {y}, {z}" for n, x, y, z in NODES]
    out += ["*Element, type=C3D8R, elset=all"] + [", ".join(map(str, e)) for e in HEXES]
    return out


def assembly_deck(rotate=False):
    lines = ["*Heading", "** two instances of one part", "*Part, name=block"]
    lines += _mesh_lines()
    lines += [
        "*Nset, nset=x0",
        "1, 4, 7, 10",
        "*Elset, elset=second",
        "2",
        "*Surface, type=ELEMENT, name=end",
        "second, S4",
        "*Solid Section, elset=all, material=alu",
        ",",
        "*End Part",
        "*Assembly, name=Assembly",
        "*Instance, name=A, part=block",
        "*End Instance",
        "*Instance, name=B, part=block",
        "0., 0., 5.",
    ]
    if rotate:
        lines += ["0., 0., 5., 0., 0., 6., 90."]
    lines += [
        "*End Instance",
        "*Nset, nset=ends, instance=B, generate",
        "3, 12, 3",
        "*Nset, nset=mixed",
        "A.1, B.1",
        "*Nset, nset=both",
        "mixed, ends",
        "*Surface, type=NODE, name=tip",
        "mixed, 1.0",
        "*End Assembly",
        "*Material, name=alu",
        "*Density",
        "2.7e-09,",
        "*Elastic",
        "70000., 0.33",
    ]
    return "\n".join(lines) + "\n"


def write(tmp_path, text, name="deck.inp"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_instances_sets_surfaces_units(tmp_path):
    """Instance translation and rotation, generate, instance-qualified labels, set
    references, element-face and node surfaces; mm-t-s converted to SI."""
    p = write(tmp_path, assembly_deck(rotate=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # mm-t-s values are plausible in mm-t-s
        deck = F.read_abaqus(p, units="mm-t-s")
    fe = deck.mesh
    assert fe.n_nodes == 24 and fe.n_elements == 4
    idx = deck.node_index()
    x = fe.nodes
    # instance B: translated by (0, 0, 5) mm then turned 90 deg about the z axis through it
    np.testing.assert_allclose(x[idx[("B", 3)]], [0, 2e-3, 5e-3], atol=1e-15)
    np.testing.assert_allclose(x[idx[("A", 3)]], [2e-3, 0, 0], atol=1e-15)
    assert sorted(deck.labels[i] for i in fe.node_sets["ends"]) == [
        ("B", 3),
        ("B", 6),
        ("B", 9),
        ("B", 12),
    ]
    assert sorted(deck.labels[i] for i in fe.node_sets["mixed"]) == [("A", 1), ("B", 1)]
    assert len(fe.node_sets["both"]) == 6 and len(fe.node_sets["tip"]) == 2
    # part sets per instance; face S4 of C3D8 = nodes 2, 6, 7, 3 (local) of element 2
    assert sorted(deck.labels[i] for i in fe.node_sets["A.end"]) == [
        ("A", 3),
        ("A", 6),
        ("A", 9),
        ("A", 12),
    ]
    assert len(fe.node_sets["B.x0"]) == 4 and "x0" not in fe.node_sets  # two instances
    mat = deck.material
    assert (mat.E, mat.rho, mat.nu) == pytest.approx((7e10, 2700.0, 0.33), rel=1e-12)
    # volume 2 x 2 mm^3
    # two separate instances: no FEModel of one body (FEModel refuses a disconnected mesh),
    # but each element's volume is right
    assert Assembler(fe, mat).volume() == pytest.approx(4e-9, rel=1e-12)
    with pytest.raises(MeshError, match="2 separate parts"):
        FEModel(fe, mat)


def test_units_warning_names_file(tmp_path):
    p = write(tmp_path, assembly_deck())
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        _ = F.read_abaqus(p).material  # mm-t-s values read as SI
    units = [w for w in rec if issubclass(w.category, F.UnitsWarning)]
    assert len(units) == 1  # one check (fem.units), not one per layer
    assert "deck.inp" in str(units[0].message) and "mm-t-s" in str(units[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", F.UnitsWarning)
        mat = F.read_abaqus(p, units="mm-t-s").material  # the right system: quiet
    assert mat.rho == pytest.approx(2700.0) and mat.E == pytest.approx(7e10)
    with pytest.raises(MeshError, match="unknown unit system"):
        F.read_abaqus(p, units="furlong")


def test_flat_tet10_deck_matches_meshio_path(tmp_path):
    """A flat C3D10 deck (meshio writes it) reads to the same mesh and frequencies as
    scikit-fem's own quadratic mesh; node sets survive (meshio alone loses them)."""
    m = skfem.MeshTet2.from_mesh(
        skfem.MeshTet1.init_tensor(
            np.linspace(0, 0.2, 4), np.linspace(0, 0.02, 2), np.linspace(0, 0.02, 2)
        )
    )
    mio = to_meshio(m)
    x = np.asarray(mio.points)
    mio.point_sets = {"END": np.nonzero(np.isclose(x[:, 0], 0.0))[0]}
    p = tmp_path / "tet10.inp"
    meshio.write(p, mio, file_format="abaqus")
    text = p.read_text()
    assert "C3D10" in text
    p.write_text(text + "*Material, name=steel\n*Density\n7850.\n*Elastic\n2.1e11, 0.3\n")
    deck = F.read_abaqus(p)
    assert deck.mesh.cell_type == "tetra10" and deck.mesh.n_nodes == m.doflocs.shape[1]
    np.testing.assert_allclose(np.sort(deck.mesh.nodes[deck.mesh.node_sets["END"], 0]), 0.0)
    a = F.reduce(deck.mesh, deck.material, fm.NormalModes(4), stress_modes=False, geometric=False)
    b = F.reduce(m, deck.material, fm.NormalModes(4), stress_modes=False, geometric=False)
    np.testing.assert_allclose(a.frequencies, b.frequencies, rtol=1e-9)


def _block():
    m = skfem.MeshHex1.init_tensor(np.linspace(0, 0.3, 4), [0, 0.05], [0, 0.05])
    return F.read_mesh(m), F.Material(E=2.1e11, nu=0.3, rho=7850.0)


def _deck_for(fe, tmp_path):
    """A flat C3D8 deck of an FEMesh, labels 1..n in mesh order."""
    lines = ["*Node"] + [
        f"{i + 1}, {x:.17g}, {y:.17g}, {z:.17g}" for i, (x, y, z) in enumerate(fe.nodes)
    ]
    lines += ["*Element, type=C3D8"] + [
        f"{e + 1}, " + ", ".join(str(n + 1) for n in c) for e, c in enumerate(fe.meshio_cells())
    ]
    return write(tmp_path, "\n".join(lines) + "\n", "block.inp")


@pytest.mark.parametrize(
    "layout",
    [
        "coord-both",
        "coord-upper",
        "coord-lower-6dof",
        "node-upper",
        "node-lower-6dof",
        "node-both-commas",
    ],
)
def test_mtx_layouts_round_trip(tmp_path, layout):
    """Every .mtx layout reads back to the matrix that was written: one triangle mirrored
    with the diagonal once, rotational DOFs 4-6 dropped, both formats."""
    fe, steel = _block()
    deck = F.read_abaqus(_deck_for(fe, tmp_path))
    K = FEModel(deck.mesh, steel).K.tocoo()
    r, c, v = K.row, K.col, K.data
    keep = {"both": r >= 0, "upper": r <= c, "lower": r >= c}[layout.split("-")[1]]
    r, c, v = r[keep], c[keep], v[keep]
    per = 6 if layout.endswith("6dof") else 3
    lines = []
    if layout.startswith("coord"):
        lines = [
            f"{per * (i // 3) + i % 3 + 1} {per * (j // 3) + j % 3 + 1}  {x:.17e}"
            for i, j, x in zip(r, c, v)
        ]
        if per == 6:  # zero rotational entries as Abaqus writes for solid nodes
            lines += [f"{6 * k + 4} {6 * k + 4}  0.0" for k in range(fe.n_nodes)]
    else:
        sep = ", " if layout.endswith("commas") else " "
        lines = [
            sep.join(
                [str(i // 3 + 1), str(i % 3 + 1), str(j // 3 + 1), str(j % 3 + 1), f"{x:.17e}"]
            )
            for i, j, x in zip(r, c, v)
        ]
        if per == 6:
            lines += [f"{k + 1} 5 {k + 1} 5 0.0" for k in range(fe.n_nodes)]
    p = write(tmp_path, "\n".join(lines) + "\n", "m.mtx")
    A = F.read_mtx(p, deck, kind="stiffness")
    assert abs(A - FEModel(deck.mesh, steel).K).max() <= 1e-15 * abs(K).max()


def test_mtx_units_scale(tmp_path):
    write(tmp_path, "1 1 2.0\n2 2 2.0\n", "k.mtx")
    for kind, units, factor in (
        ("stiffness", "mm-t-s", 1e3),
        ("mass", "mm-t-s", 1e3),
        ("stiffness", "SI", 1.0),
        ("matrix", "mm-t-s", 1.0),
    ):
        A = F.read_mtx(tmp_path / "k.mtx", None, kind=kind, units=units)
        assert A[0, 0] == 2.0 * factor


# -- bad input: (what, deck text transform, line number of the error) ------------------------
def _rotor_like():
    return assembly_deck()


def _replace(old, new):
    return lambda t: t.replace(old, new, 1)


def _line_of(text, needle):
    return text.splitlines().index(needle) + 1


BAD_DECKS = [
    ("unknown element type", _replace("type=C3D8R", "type=S4R"), "*Element, type=S4R, elset=all"),
    (
        "bad element variant",
        _replace("type=C3D8R", "type=C3D8Q"),
        "*Element, type=C3D8Q, elset=all",
    ),
    (
        "too few element nodes",
        _replace("2, 2, 3, 6, 5, 8, 9, 12, 11", "2, 2, 3, 6, 5, 8, 9, 12"),
        "2, 2, 3, 6, 5, 8, 9, 12",
    ),
    (
        "undefined node in element",
        _replace("2, 2, 3, 6, 5, 8, 9, 12, 11", "2, 2, 3, 6, 5, 8, 9, 12, 99"),
        "2, 2, 3, 6, 5, 8, 9, 12, 99",
    ),
    ("bad coordinate", _replace("5, 1, 1, 0", "5, 1, one, 0"), "5, 1, one, 0"),
    ("short node line", _replace("5, 1, 1, 0", "5"), "5"),
    ("duplicate node", _replace("6, 2, 1, 0", "5, 2, 1, 0"), "5, 2, 1, 0"),
    ("missing set in set", _replace("mixed, ends", "mixed, nosuchset"), "mixed, nosuchset"),
    (
        "undefined instance",
        _replace(
            "*Nset, nset=ends, instance=B, generate", "*Nset, nset=ends, instance=C, generate"
        ),
        "*Nset, nset=ends, instance=C, generate",
    ),
    ("bad generate", _replace("3, 12, 3", "12, 3, 3"), "12, 3, 3"),
    ("set member not a node", _replace("1, 4, 7, 10", "1, 4, 7, 99"), "*Nset, nset=x0"),
    (
        "section with missing material",
        _replace("material=alu", "material=steel"),
        "*Solid Section, elset=all, material=steel",
    ),
    ("surface face unknown", _replace("second, S4", "second, S9"), "second, S9"),
    (
        "instance of missing part",
        _replace("*Instance, name=A, part=block", "*Instance, name=A, part=nopart"),
        "*Instance, name=A, part=nopart",
    ),
    ("data before keyword", lambda t: "1, 2, 3\n" + t, "1, 2, 3"),
    ("missing elastic data", _replace("*Elastic\n70000., 0.33", "*Elastic"), "*Elastic"),
]


@pytest.mark.parametrize("what,edit,line", BAD_DECKS, ids=[b[0] for b in BAD_DECKS])
def test_bad_deck_names_file_and_line(tmp_path, what, edit, line):
    text = edit(_rotor_like())
    p = write(tmp_path, text)
    no = _line_of(text, line)
    with pytest.raises(MeshError) as err:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", F.UnitsWarning)
            _ = F.read_abaqus(p, units="mm-t-s").material
    msg = str(err.value)
    assert f"deck.inp:{no}" in msg


def test_missing_file_and_c3d20(tmp_path):
    with pytest.raises(MeshError, match="does not exist"):
        F.read_abaqus(tmp_path / "nope.inp")
    with pytest.raises(MeshError, match="does not exist"):
        F.read_mtx(tmp_path / "nope.mtx")
    # C3D20 is parsed but scikit-fem cannot assemble serendipity hexahedra
    m = skfem.MeshHex1.init_tensor([0, 1], [0, 1], [0, 1])
    x = m.p.T
    mids = [
        (0, 1),
        (1, 2),
        (2, 3),
        (3, 0),
        (4, 5),
        (5, 6),
        (6, 7),
        (7, 4),
        (0, 4),
        (1, 5),
        (2, 6),
        (3, 7),
    ]
    corners = to_meshio(m).cells[0].data[0]
    pts = list(x[corners]) + [(x[corners[a]] + x[corners[b]]) / 2 for a, b in mids]
    lines = ["*Node"] + [f"{i + 1}, {p[0]}, {p[1]}, {p[2]}" for i, p in enumerate(pts)]
    lines += [
        "*Element, type=C3D20R",
        "1, " + ", ".join(str(i) for i in range(1, 16)) + ",",
        ", ".join(str(i) for i in range(16, 21)),
    ]
    p = write(tmp_path, "\n".join(lines) + "\n", "c3d20.inp")
    with pytest.raises(MeshError, match="c3d20.inp:23.*hexahedron20") as err:
        F.read_abaqus(p)
    assert "27-node" in str(err.value)  # the advice


BAD_MTX = [
    ("node/dof too big", "1 1 1.0\n700 700 2.0\n", 2, "does not fit"),
    ("non-number", "1 1 1.0\n2 2 x\n", 2, "not a number"),
    ("field count", "1 1 1.0\n2 2 2 2\n", 2, "fields"),
    ("rotational entry", "1 4 1 4 5.0\n", 1, "rotational"),
    ("unknown node", "1 1 1 1 1.0\n999 1 999 1 1.0\n", 2, "not a node"),
    ("asymmetric", "1 1 1.0\n1 2 1.0\n2 1 3.0\n", None, "not symmetric"),
    ("does not fit", "1 1 1.0\n2 2 1.0\n", None, "does not fit"),
    ("empty", "\n", None, "no matrix entries"),
]


@pytest.mark.parametrize("what,text,line,match", BAD_MTX, ids=[b[0] for b in BAD_MTX])
def test_bad_mtx_names_file_and_line(tmp_path, what, text, line, match):
    fe, _ = _block()
    deck = F.read_abaqus(_deck_for(fe, tmp_path))
    p = write(tmp_path, text, "bad.mtx")
    with pytest.raises(MeshError, match=match) as err:
        F.read_mtx(p, None if what == "asymmetric" else deck)
    assert (f"bad.mtx:{line}" if line else "bad.mtx") in str(err.value)


def test_matrices_that_do_not_fit_the_mesh(tmp_path):
    fe, steel = _block()
    K = FEModel(fe, steel).K
    with pytest.raises(MeshError, match="nodes"):
        F.reduce(fe, (K[:-3, :-3], K[:-3, :-3]), fm.NormalModes(2))
    with pytest.raises(MeshError, match="both M and K"):
        F.reduce(fe, None, fm.NormalModes(2), M=K)


def test_c3d20_completed_to_hex27(tmp_path):
    """A C3D20 deck read with c3d20='hex27' is the 27-node mesh of the same geometry:
    the same frequencies as scikit-fem's own MeshHex2 (affine elements, so the face and
    centre nodes land exactly where the Lagrange mesh has them)."""
    m = skfem.MeshHex2.from_mesh(
        skfem.MeshHex1.init_tensor(
            np.linspace(0, 0.4, 5), np.linspace(0, 0.04, 2), np.linspace(0, 0.03, 2)
        )
    )
    mio = to_meshio(m)
    x, c27 = np.asarray(mio.points), mio.cells[0].data
    used = np.unique(c27[:, :20])
    label = {int(n): i + 1 for i, n in enumerate(used)}
    lines = ["*Node"] + [
        f"{label[int(n)]}, {x[n, 0]:.17g}, {x[n, 1]:.17g}, {x[n, 2]:.17g}" for n in used
    ]
    lines += ["*Element, type=C3D20R, elset=all"]
    for e, c in enumerate(c27[:, :20]):
        ids = [str(label[int(n)]) for n in c]
        lines += [f"{e + 1}, " + ", ".join(ids[:15]) + ",", ", ".join(ids[15:])]
    lines += ["*Nset, nset=root", ", ".join(str(label[int(n)]) for n in used if x[n, 0] == 0.0)]
    p = write(tmp_path, "\n".join(lines) + "\n", "c3d20.inp")
    deck = F.read_abaqus(p, c3d20="hex27")
    fe = deck.mesh
    assert fe.cell_type == "hexahedron27" and fe.n_nodes == m.doflocs.shape[1]
    assert sum(1 for lab in deck.labels if lab[1] < 0) == m.doflocs.shape[1] - len(used)
    assert len(fe.node_sets["root"]) == 8  # the given nodes of the x = 0 face
    steel = F.Material(E=2.1e11, nu=0.3, rho=7850.0)
    a = F.reduce(fe, steel, fm.NormalModes(4), stress_modes=False, geometric=False)
    b = F.reduce(m, steel, fm.NormalModes(4), stress_modes=False, geometric=False)
    np.testing.assert_allclose(a.frequencies, b.frequencies, rtol=1e-10)
    with pytest.raises(MeshError, match="c3d20"):
        F.read_abaqus(p, c3d20="wedge")
