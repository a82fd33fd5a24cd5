"""Mesh import, node sets, selectors and bad-input errors."""

from pathlib import Path

import meshio
import numpy as np
import pytest
import skfem
from fem_helpers import beam_hex1
from skfem.io.meshio import to_meshio

import flexmbd.fem as F
from flexmbd.errors import MeshError

MESHES = Path(__file__).resolve().parents[2] / "meshes"


@pytest.mark.parametrize(
    "name,cell,sets",
    [
        ("beam_hex.msh", "hexahedron", {"A", "B"}),
        ("beam_tet10.msh", "tetra10", {"A", "B"}),
        ("rod_tet10.msh", "tetra10", {"big_bore", "small_bore"}),
        ("plate_hex.inp", "hexahedron", {"EDGE_X0", "CORNER"}),
    ],
)
def test_shipped_meshes(name, cell, sets):
    fe = F.read_mesh(MESHES / name)
    assert fe.cell_type == cell
    assert sets <= set(fe.node_sets)
    assert (MESHES / name).stat().st_size < 2e6


def test_named_sets_are_the_right_nodes():
    fe = F.read_mesh(MESHES / "beam_tet10.msh")
    xa = fe.nodes[fe.node_sets["A"]]
    assert np.allclose(xa[:, 0], 0.0)  # quadratic nodes mapped by coordinates
    assert len(fe.node_sets["A"]) == len(F.Plane((0, 0, 0), (1, 0, 0))(fe))
    rod = F.read_mesh(MESHES / "rod_tet10.msh")
    r = np.linalg.norm(rod.nodes[rod.node_sets["big_bore"]][:, :2], axis=1)
    assert np.allclose(r, 0.025, atol=1e-4)


@pytest.mark.parametrize("ext", ["vtu", "msh", "inp"])
def test_roundtrip_formats_hex_keeps_volume(tmp_path, ext, steel):
    m = beam_hex1(4, 2)
    mio = to_meshio(m, encode_cell_data=False)
    mio.point_sets = {"END": np.nonzero(mio.points[:, 0] > 0.999)[0]}
    path = tmp_path / f"b.{ext}"
    meshio.write(path, mio, file_format={"msh": "gmsh", "inp": "abaqus"}.get(ext))
    fe = F.read_mesh(path)
    asm = F.FEModel(fe, steel).assembler
    assert asm.volume() == pytest.approx(1.0 * 0.05 * 0.05, rel=1e-12)
    if ext == "inp":  # Abaqus node sets come from the meshio object
        assert len(fe.node_sets["END"]) == 9


def test_quadratic_hex_from_meshio(steel):
    m = skfem.MeshHex2.from_mesh(beam_hex1(3, 1))
    fe = F.read_mesh(to_meshio(m, encode_cell_data=False))
    assert fe.cell_type == "hexahedron27"
    assert F.FEModel(fe, steel).assembler.volume() == pytest.approx(0.0025, rel=1e-12)


def test_hex20_is_rejected():
    pts = np.random.rand(20, 3)
    m = meshio.Mesh(pts, [("hexahedron20", np.arange(20)[None])])
    with pytest.raises(MeshError, match="20-node"):
        F.read_mesh(m)


def test_surface_mesh_and_mixed_cells_rejected():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0], [0, 0, 1.0], [1, 1, 1.0]])
    with pytest.raises(MeshError, match="no volume cells"):
        F.read_mesh(meshio.Mesh(pts, [("triangle", [[0, 1, 2]])]))
    with pytest.raises(MeshError, match="pyramid"):
        F.read_mesh(meshio.Mesh(pts, [("pyramid", [[0, 1, 4, 2, 3]])]))


def test_inverted_element_rejected():
    m = skfem.MeshTet1.init_tensor(np.linspace(0, 1, 3), np.linspace(0, 1, 2), np.linspace(0, 1, 2))
    mio = meshio.Mesh(m.p.T, [("tetra", m.t.T.copy())])
    c = mio.cells[0].data
    x = mio.points
    # orient all elements positively, then flip one
    v = np.einsum(
        "ij,ij->i",
        np.cross(x[c[:, 1]] - x[c[:, 0]], x[c[:, 2]] - x[c[:, 0]]),
        x[c[:, 3]] - x[c[:, 0]],
    )
    c[v < 0] = c[v < 0][:, [0, 2, 1, 3]]
    F.read_mesh(meshio.Mesh(x, [("tetra", c)]))  # consistent: fine
    c[3] = c[3][[0, 2, 1, 3]]
    with pytest.raises(MeshError, match="inverted element"):
        F.read_mesh(meshio.Mesh(x, [("tetra", c)]))


def test_degenerate_element_rejected():
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]])
    with pytest.raises(MeshError, match="degenerate"):
        F.read_mesh(meshio.Mesh(x, [("tetra", [[0, 1, 2, 3]])]))


def test_orphan_points_dropped(steel):
    m = beam_hex1(2, 1)
    mio = to_meshio(m, encode_cell_data=False)
    mio = meshio.Mesh(np.vstack([mio.points, [[5.0, 5, 5]]]), mio.cells)
    fe = F.read_mesh(mio)
    assert fe.n_nodes == m.p.shape[1]


def test_selectors():
    fe = F.read_mesh(beam_hex1(4, 2))
    assert len(F.Plane((0, 0, 0), (1, 0, 0))(fe)) == 9
    assert len(F.Box((0, 0, 0), (0.25, 0.05, 0.05))(fe)) == 18
    assert len(F.Nearest((1, 0, 0), 3)(fe)) == 3
    both = F.Plane((0, 0, 0), (1, 0, 0)) | F.Plane((1, 0, 0), (1, 0, 0))
    assert len(both(fe)) == 18
    edge = F.Plane((0, 0, 0), (1, 0, 0)) & F.Plane((0, 0, 0), (0, 1, 0))
    assert len(edge(fe)) == 3
    cyl = F.Cylinder((0, 0.025, 0.025), (1, 0, 0), 0.025 * np.sqrt(2))
    assert len(cyl(fe)) == 4 * 5  # the four long edges


def test_empty_interface_selection_names_interface(steel):
    with pytest.raises(MeshError, match="interface 'B'.*selects no nodes"):
        F.reduce(
            beam_hex1(4, 1),
            steel,
            F.CraigBampton(
                2, {"A": F.Plane((0, 0, 0), (1, 0, 0)), "B": F.Plane((2, 0, 0), (1, 0, 0))}
            ),
        )


def test_missing_and_bad_material():
    with pytest.raises(MeshError, match="no material"):
        F.reduce(beam_hex1(4, 1), None, F.NormalModes(2))
    with pytest.raises(MeshError, match="Poisson"):
        F.Material(E=1e9, nu=0.5, rho=1000)
    with pytest.raises(MeshError, match="density"):
        F.Material(E=1e9, nu=0.3, rho=-1)


def test_unknown_node_set():
    fe = F.read_mesh(MESHES / "beam_hex.msh")
    with pytest.raises(MeshError, match="available sets"):
        F.NodeSet("nope")(fe)


def test_collinear_rigid_interface_rejected(steel):
    line = F.Plane((0, 0, 0), (1, 0, 0)) & F.Plane((0, 0, 0), (0, 1, 0))
    with pytest.raises(MeshError, match="non-collinear"):
        F.reduce(beam_hex1(4, 2), steel, F.CraigBampton(2, {"A": line}))
