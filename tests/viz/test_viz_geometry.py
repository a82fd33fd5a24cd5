"""Deformed-mesh reconstruction, von Mises, inertia glyphs, geometry adapters (no rendering)."""

import numpy as np
import pytest

from flexmbd.errors import FlexmbdError
from flexmbd.geometry import (
    BodyGeometry,
    deformed_points,
    inertia_box,
    reduced_body_geometry,
    von_mises,
)
from flexmbd.results import quat_to_rot_batch, rot_to_quat_batch
from flexmbd.spatial import rotation_matrix
from flexmbd.viz.demo import beam_geometry


def test_deformed_points_is_pose_times_modal_sum():
    g = beam_geometry()
    rng = np.random.default_rng(0)
    q = rng.normal(size=2)
    R = rotation_matrix(np.array([1.0, 2.0, 3.0]) / np.sqrt(14), 0.7)
    r = np.array([0.3, -1.0, 2.0])
    x = deformed_points(g.nodes, g.modes, q, R, r, scale=3.0)
    # node by node: r + R (X + 3 (q0 phi0 + q1 phi1))
    for n in (0, 17, len(g.nodes) - 1):
        u = 3.0 * (q[0] * g.modes[3 * n : 3 * n + 3, 0] + q[1] * g.modes[3 * n : 3 * n + 3, 1])
        np.testing.assert_allclose(x[n], r + R @ (g.nodes[n] + u), atol=1e-14)
    # no modal coordinates: a rigid placement preserves distances
    x0 = deformed_points(g.nodes, g.modes, None, R, r)
    d = lambda p: np.linalg.norm(p[0] - p[-1])
    assert d(x0) == pytest.approx(d(g.nodes), rel=1e-14)


def test_von_mises_of_known_stress_states():
    # uniaxial sigma -> |sigma|; pure shear tau -> sqrt(3) tau; hydrostatic -> 0
    S = np.array([[5.0, 0, 0, 0, 0, 0], [0, 0, 0, 2.0, 0, 0], [7.0, 7.0, 7.0, 0, 0, 0]])
    vm = von_mises(S.reshape(-1, 1), [1.0])
    np.testing.assert_allclose(vm, [5.0, 2.0 * np.sqrt(3.0), 0.0], atol=1e-12)


def test_beam_stress_modes_give_bending_stress():
    g = beam_geometry(E=1.0)
    vm = g.von_mises([1.0, 0.0])
    y = g.nodes[:, 1]
    np.testing.assert_allclose(vm, np.abs(y) * 0.2, atol=1e-14)  # |E y kappa|


def test_inertia_box_reproduces_mass_properties():
    rng = np.random.default_rng(1)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    edges = np.array([0.6, 0.2, 0.1])
    m = 3.0
    moments = (
        m
        / 12
        * np.array(
            [
                edges[1] ** 2 + edges[2] ** 2,
                edges[0] ** 2 + edges[2] ** 2,
                edges[0] ** 2 + edges[1] ** 2,
            ]
        )
    )
    J = Q @ np.diag(moments) @ Q.T
    com = np.array([0.1, 0.2, -0.3])
    box = inertia_box(m, J, com)
    assert np.allclose(box.nodes.mean(axis=0), com)
    # the box's own edges and inertia equal the body's
    P = box.nodes - com
    got_edges = sorted(np.linalg.norm(P[[1, 3, 4]] - P[0], axis=1))
    np.testing.assert_allclose(got_edges, sorted(edges), rtol=1e-12)
    a, b, c = np.linalg.norm(P[1] - P[0]), np.linalg.norm(P[3] - P[0]), np.linalg.norm(P[4] - P[0])
    Jbox_principal = m / 12 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    np.testing.assert_allclose(sorted(Jbox_principal), sorted(moments), rtol=1e-12)


def test_inertia_box_of_point_mass_and_slender_rod_is_visible():
    cube = inertia_box(7850.0, np.zeros((3, 3)))
    assert np.ptp(cube.nodes, axis=0) == pytest.approx([1.0, 1.0, 1.0])
    rod = inertia_box(1.0, [0.0, 1 / 12, 1 / 12])  # 1 m rod along x, zero radius
    ext = np.ptp(rod.nodes, axis=0)
    assert ext[0] == pytest.approx(1.0) and ext[1] == pytest.approx(0.06)


def test_arrays_round_trip_and_validation():
    g = beam_geometry()
    h = BodyGeometry.from_arrays(g.to_arrays())
    for key in ("nodes", "modes", "stress_modes", "frequencies"):
        np.testing.assert_array_equal(getattr(h, key), getattr(g, key))
    np.testing.assert_array_equal(h.cells["hexahedron"], g.cells["hexahedron"])
    with pytest.raises(FlexmbdError, match="3 \\* 3 = 9"):
        BodyGeometry(np.zeros((3, 3)), {"triangle": [[0, 1, 2]]}, modes=np.zeros((6, 1)))
    with pytest.raises(FlexmbdError, match="0-based"):
        BodyGeometry(np.zeros((3, 3)), {"triangle": [[1, 2, 3]]})
    with pytest.raises(FlexmbdError, match="unsupported cell type"):
        BodyGeometry(np.zeros((3, 3)), {"banana": [[0, 1, 2]]})


def test_adapter_reads_a_scikit_fem_mesh_in_vtk_order():
    import skfem

    mesh = skfem.MeshHex.init_tensor(
        np.linspace(0, 1, 3), np.linspace(0, 0.2, 2), np.linspace(0, 0.1, 2)
    )

    class Reduced:  # attribute names an FE reduction may use
        pass

    rb = Reduced()
    rb.mesh = mesh
    rb.Phi = np.zeros((3 * mesh.p.shape[1], 1))
    rb.frequencies = np.array([12.5])
    g = reduced_body_geometry(rb)
    grid = g.to_pyvista()
    vols = grid.compute_cell_sizes(length=False, area=False)["Volume"]
    np.testing.assert_allclose(vols.sum(), 0.02, rtol=1e-12)  # not twisted
    assert np.all(vols > 0)
    assert g.n_modes == 1 and g.frequencies[0] == 12.5


def test_quaternion_batches_are_continuous_and_inverse():
    ang = np.linspace(0, 4 * np.pi, 50)  # two turns: e0 changes sign along the way
    R = np.array([rotation_matrix(np.array([0, 0, 1.0]), a) for a in ang])
    E = rot_to_quat_batch(R)
    assert np.all(np.einsum("ij,ij->i", E[1:], E[:-1]) > 0)
    np.testing.assert_allclose(quat_to_rot_batch(E), R, atol=1e-13)


def test_visuals_urdf_shapes_and_mesh_files(tmp_path):
    import pyvista as pv

    from flexmbd.geometry import body_geometry, visual_geometry

    R = rotation_matrix(np.array([0, 0, 1.0]), np.pi / 2)
    box = visual_geometry(
        {"type": "box", "size": (0.4, 0.2, 0.1), "position": (1, 2, 3), "rotation": R}
    )
    np.testing.assert_allclose(np.ptp(box.nodes, axis=0), [0.2, 0.4, 0.1], atol=1e-12)
    np.testing.assert_allclose(box.nodes.mean(axis=0), [1, 2, 3], atol=1e-12)
    cyl = visual_geometry({"type": "cylinder", "radius": 0.1, "length": 0.5})
    assert np.ptp(cyl.nodes[:, 2]) == pytest.approx(0.5)  # URDF cylinders along z
    pv.Sphere(radius=0.3).save(tmp_path / "ball.stl")
    both = visual_geometry(
        [
            {"type": "sphere", "radius": 0.05},
            {"type": "mesh", "filename": str(tmp_path / "ball.stl"), "scale": (2, 2, 2)},
        ]
    )
    assert np.ptp(both.nodes[:, 0]) == pytest.approx(1.2, rel=1e-2)  # tessellated sphere
    with pytest.raises(FlexmbdError, match="does not exist"):
        visual_geometry(str(tmp_path / "missing.stl"))

    import flexmbd as fm

    b = fm.RigidBody.box(1.0, (0.4, 0.2, 0.1), visual=str(tmp_path / "ball.stl"))
    assert body_geometry(b).n_cells > 100  # the visual wins
    b.visual = None
    assert body_geometry(b).cells["hexahedron"].shape == (1, 8)  # else the inertia box


def test_magnified_shapes_stay_on_their_interfaces():
    """anchored_frame_data: the deformation is magnified about the rigid placement that
    best fits the interface nodes (both beam ends here), so that the magnified beam keeps
    its ends where the joints are; colours get the true (unmagnified) displacement."""
    from flexmbd.geometry import anchored_frame_data, frame_data, rigid_fit
    from flexmbd.viz.demo import swinging_beam_results

    # the fit recovers a rigid map exactly, and follows the body frame where it is free
    rng = np.random.default_rng(1)
    R = rotation_matrix(np.array([1.0, -2.0, 0.5]) / np.sqrt(5.25), 1.1)
    X = rng.normal(size=(6, 3))
    Rf, cx, c = rigid_fit(X, 0.3 + X @ R.T, R)
    np.testing.assert_allclose(c + (X - cx) @ Rf.T, 0.3 + X @ R.T, atol=1e-12)
    line = np.outer(np.arange(3.0), [1.0, 0, 0])  # collinear points
    np.testing.assert_allclose(rigid_fit(line, line @ R.T, R)[0], R, atol=1e-12)

    res = swinging_beam_results(nt=6)
    res.body("beam").modal[:, 1] = 0.0  # bending only (a stretch moves the ends)
    g = BodyGeometry.from_arrays(res.geometry["beam"])
    x = g.nodes[:, 0]
    faces = [x == 0.0, x == x.max()]
    g.extras["anchor_nodes"] = np.flatnonzero(faces[0] | faces[1])
    geoms = {"beam": g}
    i = 4
    plain = frame_data(res, geoms, i)["beam"]
    same = anchored_frame_data(res, geoms, i, 1.0)["beam"]
    np.testing.assert_allclose(same[0], plain[0], atol=1e-14)  # scale 1: the true shape
    big = anchored_frame_data(res, geoms, i, 20.0)["beam"]
    framed = frame_data(res, geoms, i, 20.0)["beam"]
    off = lambda d, f: np.linalg.norm(d[0][f].mean(0) - plain[0][f].mean(0))
    mid = np.abs(x - x.max() / 2) < 1e-9
    # the end centres stay near their joints, the middle bows out 20 times its deflection
    bow = off(big, mid)
    assert bow > 0.01 and max(off(big, f) for f in faces) < 0.1 * bow
    # magnified about the body frame (clamped at x = 0) the free end flies off instead
    assert off(framed, faces[1]) > 2 * bow
    # colours: the true displacement relative to the fitted placement (scale-free)
    np.testing.assert_allclose(big[1], same[1], atol=1e-14)
    np.testing.assert_allclose(big[0] - same[0], 19.0 * same[1], atol=1e-12)
