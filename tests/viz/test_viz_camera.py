"""The default view puts gravity down: camera up vector and what the image shows.

Oracles: ``up = -g/|g|`` read from the plotter's camera; in the image a hanging
pendulum's bob is below its pivot, and a pendulum released horizontally falls
towards the bottom of the picture.
"""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.results import Results, attach_geometry, attach_tree_poses
from flexmbd.viz.camera import auto_view, gravity_of

SMALL = (320, 240)


def pendulum(g=(0.0, -9.81, 0.0), q0=-np.pi / 2 + 0.4):
    m = fm.Model("pendulum")
    m.link = fm.RigidBody.rod(1.0, 1.0, origin="end", radius=0.03)
    m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1), q0=[q0])
    if g is not None:
        m.g = fm.Gravity(g)
    return m


# -- numbers only ---------------------------------------------------------------------
def test_auto_view_up_is_minus_gravity_and_looks_at_the_plane_of_motion():
    rng = np.random.default_rng(0)
    pts = np.column_stack(
        [rng.uniform(-1, 1, 200), rng.uniform(-1, 0, 200), rng.uniform(-0.01, 0.01, 200)]
    )  # motion in the xy plane
    for g in [(0, -9.81, 0), (0, 0, -9.81), (3.0, -4.0, 0.0)]:
        toward, up = auto_view(pts, np.array(g, float))
        assert np.allclose(up, -np.asarray(g) / np.linalg.norm(g), atol=1e-15)
        assert abs(np.linalg.norm(toward) - 1) < 1e-12
    # gravity -y, motion in xy: the camera faces the plane (mostly along +z), 15 deg up
    toward, up = auto_view(pts, np.array([0, -9.81, 0.0]))
    assert toward[2] > 0.9 and toward[1] == pytest.approx(np.sin(np.radians(15)))
    # horizontal motion (xz plane, gravity -y): looked at from 35 deg above
    toward, up = auto_view(pts[:, [0, 2, 1]], np.array([0, -9.81, 0.0]))
    assert toward[1] == pytest.approx(np.sin(np.radians(35)))
    # no gravity: up is the middle principal axis (y here), the normal z faces the camera
    toward, up = auto_view(pts, None)
    assert np.allclose(up, [0, 1, 0], atol=0.05) and toward[2] > 0.9


def test_gravity_of_models_and_results():
    assert np.array_equal(gravity_of(pendulum()), [0, -9.81, 0])
    assert gravity_of(pendulum(g=None)) is None
    m = pendulum(g=(0, 0, -9.81))
    res = Results(
        [0.0],
        [[0.1]],
        [[0.0]],
        coordinates=[("hinge", "angle")],
        speeds=[("hinge", "rate")],
        joint_names=["hinge"],
    )
    attach_geometry(res, m)  # stored with the drawing data
    assert res.meta["gravity"] == [0.0, 0.0, -9.81]
    assert np.array_equal(gravity_of(res), [0, 0, -9.81])


# -- images ---------------------------------------------------------------------------
@pytest.mark.parametrize("g", [(0, -9.81, 0), (0, 0, -9.81), (-9.81, 0, 0)])
def test_camera_up_is_opposite_to_gravity(gl, g):
    p = fm.viz.plotter(pendulum(g=g), window_size=SMALL)
    try:
        up = np.asarray(p.camera.up)
        assert np.allclose(up / np.linalg.norm(up), -np.asarray(g) / 9.81, atol=1e-12)
        # the camera looks across gravity (not along it), from slightly above
        d = np.subtract(p.camera.position, p.camera.focal_point)
        d /= np.linalg.norm(d)
        assert d @ (-np.asarray(g) / 9.81) == pytest.approx(np.sin(np.radians(15)), abs=1e-9)
    finally:
        p.close()


def _red(img):
    return (img[..., 0] > 150) & (img[..., 1] < 90) & (img[..., 2] < 90)


def _body(img):
    """Drawn, not red (joint marker), not white."""
    return (np.abs(img.astype(int) - 255).max(axis=-1) > 8) & ~_red(img)


@pytest.mark.parametrize("g", [(0, -9.81, 0), (0, 0, -9.81)])
def test_hanging_pendulum_bob_is_below_its_pivot_in_the_image(gl, g):
    """Rod hinged about z at the origin, hanging 23 deg from the downward vertical
    (for g = -z: the hinge axis is then vertical and the rod swings in the horizontal
    plane; use a y hinge so that it hangs)."""
    m = fm.Model("pendulum")
    m.link = fm.RigidBody.rod(1.0, 1.0, origin="end", radius=0.03)
    axis = (0, 0, 1) if g[1] else (0, 1, 0)
    q0 = -np.pi / 2 + 0.4 if g[1] else np.pi / 2 - 0.4  # rod x-axis towards -y or -z
    m.hinge = fm.Revolute(m.ground, m.link, axis=axis, q0=[q0])
    m.g = fm.Gravity(g)
    img = fm.viz.show(m, window_size=SMALL, axes=False, ground=False)
    rows, cols = np.nonzero(_red(img))
    pivot = np.array([rows.mean(), cols.mean()])
    r, c = np.nonzero(_body(img))
    far = np.argmax((r - pivot[0]) ** 2 + (c - pivot[1]) ** 2)  # the bob: farthest pixel
    drop = r[far] - pivot[0]  # image rows grow downwards
    assert drop > 0.25 * SMALL[1]
    # 23 deg from the vertical: the bob is much further down than sideways
    assert abs(c[far] - pivot[1]) < drop


def test_falling_pendulum_goes_down_in_the_animation(gl, tmp_path):
    """Released horizontally under gravity -y: the lowest drawn point of the rod moves
    towards the bottom of the frames (it did go *up* with the former z-up view)."""
    iio = pytest.importorskip("imageio.v3")
    m = pendulum(q0=0.0)
    t = np.linspace(0.0, 1.0, 6)
    q = np.linspace(0.0, -np.pi / 2, 6)[:, None]
    res = Results(
        t,
        q,
        np.zeros_like(q),
        coordinates=[("hinge", "angle")],
        speeds=[("hinge", "rate")],
        joint_names=["hinge"],
    )
    attach_tree_poses(res, m)
    attach_geometry(res, m)
    n = fm.viz.animate(res, tmp_path / "fall.gif", window_size=SMALL, ground=False, axes=False)
    assert n == 6
    frames = iio.imread(tmp_path / "fall.gif", index=None)[..., :3]
    top = int(0.1 * SMALL[1])  # below the time label
    lowest = [np.nonzero(_body(f[top:]))[0].max() for f in frames]
    assert all(b >= a for a, b in zip(lowest, lowest[1:])) and lowest[2] > lowest[0]
    assert lowest[-1] - lowest[0] > 0.3 * SMALL[1]


def test_default_view_draws_ground_and_triad(gl):
    """With gravity the default picture has the faint ground and the grey axes triad;
    without them, fewer pixels are drawn."""
    m = pendulum()
    full = fm.viz.show(m, window_size=SMALL)
    bare = fm.viz.show(m, window_size=SMALL, axes=False, ground=False)
    ground = np.abs(full.astype(int) - [236, 236, 236]).max(axis=-1) <= 3
    assert (
        ground.mean() > 0.05
        and (np.abs(bare.astype(int) - [236, 236, 236]).max(axis=-1) <= 3).mean() < 0.01
    )
    corner = (slice(int(0.75 * SMALL[1]), None), slice(0, int(0.25 * SMALL[0])))
    grey = lambda im: (np.abs(im[corner].astype(int) - 80).max(axis=-1) < 40).sum()
    assert grey(full) > 20 and grey(bare) == 0
