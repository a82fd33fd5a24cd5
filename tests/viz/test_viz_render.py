"""Real images: off-screen snapshots, GIF/MP4 animations, mode shapes.

Every test looks at the pixels: the share of non-background pixels, colour changes
between frames (a beam bending more and more, coloured on one fixed range), the
number of frames written.
"""

import numpy as np
import pytest
from viz_images import body_mask, drawn_share, viridis_values

import flexmbd as fm
from flexmbd.errors import FlexmbdError
from flexmbd.results import Results, attach_geometry, attach_tree_poses
from flexmbd.viz.demo import beam_geometry, swinging_beam_results

iio = pytest.importorskip("imageio.v3")
SMALL = (320, 240)


def pendulum():
    m = fm.Model("pendulum")
    m.link = fm.RigidBody.rod(1.0, 1.0, origin="end", radius=0.02)
    m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1), q0=[0.3])
    return m


def test_show_model_draws_glyphs_and_joints(gl, tmp_path):
    m = pendulum()
    img = fm.viz.show(m, file=tmp_path / "m.png", window_size=SMALL, view="xy")
    assert img.shape == (240, 320, 3)
    assert (tmp_path / "m.png").stat().st_size > 1000
    assert drawn_share(img) > 0.01
    with_joint_red = ((img[..., 0] > 150) & (img[..., 1] < 90) & (img[..., 2] < 90)).mean()
    assert with_joint_red > 0.0005  # the red joint marker is visible
    no_joints = fm.viz.show(m, window_size=SMALL, view="xy", joints=False)
    assert (
        (no_joints[..., 0] > 150) & (no_joints[..., 1] < 90) & (no_joints[..., 2] < 90)
    ).mean() < with_joint_red


def test_show_results_follows_the_motion(gl):
    m = pendulum()
    t = np.linspace(0, 1, 5)
    q = np.linspace(-1.0, 1.0, 5)[:, None]
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
    a = body_mask(fm.viz.show(res, t=0.0, window_size=SMALL, view="xy", joints=False))
    b = body_mask(fm.viz.show(res, t=1.0, window_size=SMALL, view="xy", joints=False))
    assert a.mean() > 0.005 and b.mean() > 0.005
    overlap = (a & b).sum() / max(a.sum(), 1)
    assert overlap < 0.5  # the rod moved (+-1 rad) between snapshots
    # joint coordinates only: the model places the bodies, the results stay untouched
    bare = Results(
        t,
        q,
        np.zeros_like(q),
        coordinates=[("hinge", "angle")],
        speeds=[("hinge", "rate")],
        joint_names=["hinge"],
    )
    c = body_mask(
        fm.viz.show(bare, t=1.0, model=m, window_size=SMALL, view="xy", joints=False, frames=True)
    )
    assert (c & b).sum() / b.sum() > 0.8
    assert bare.extra == {} and bare.geometry == {}


def test_gif_frames_count_and_colour_range_change(gl, tmp_path):
    res = swinging_beam_results(nt=10)
    n = fm.viz.animate(res, tmp_path / "run.gif", window_size=SMALL, view="xy")
    assert n == 10
    frames = iio.imread(tmp_path / "run.gif", index=None)
    assert frames.shape[0] == 10
    shares = [drawn_share(f) for f in frames]
    assert min(shares) > 0.01
    # the bending grows linearly in time on one fixed colour range: the top of the map
    # seen in each frame follows it (purple at t = 0, yellow at the end)
    top = np.array([np.percentile(viridis_values(f), 99) for f in frames])
    assert top[0] < 0.1 and top[-1] > 0.8
    assert np.corrcoef(top, np.linspace(0, 1, 10))[0, 1] > 0.9
    assert not np.array_equal(frames[0], frames[5])  # time label and pose change


def test_mp4_von_mises(gl, tmp_path):
    res = swinging_beam_results(nt=8)
    n = fm.viz.animate(res, tmp_path / "run.mp4", field="von_mises", window_size=SMALL)
    assert n == 8
    frames = (
        iio.imread(tmp_path / "run.mp4", index=None, plugin="pyav")
        if _has_pyav()
        else _ffmpeg_frames(tmp_path / "run.mp4")
    )
    assert len(frames) == 8
    assert drawn_share(frames[-1], tol=30) > 0.01
    top = [np.percentile(viridis_values(f), 99) for f in frames]
    assert top[0] < 0.15 and top[-1] > 0.8


def _has_pyav():
    try:
        import av  # noqa: F401
    except ImportError:
        return False
    return True


def _ffmpeg_frames(path):
    import imageio.v2 as imageio

    with imageio.get_reader(path, format="FFMPEG") as r:
        return [np.asarray(f) for f in r]


def test_plot_mode_and_animate_mode(gl, tmp_path):
    g = beam_geometry()
    img = fm.viz.plot_mode(g, 1, file=tmp_path / "mode1.png", window_size=SMALL)
    assert drawn_share(img) > 0.02
    assert viridis_values(img).max() > 0.9  # the tip reaches the top colour
    n = fm.viz.animate_mode(g, 2, tmp_path / "mode2.gif", n_frames=6, window_size=SMALL)
    frames = iio.imread(tmp_path / "mode2.gif", index=None)
    assert n == 6 and len(frames) == 6
    assert not np.array_equal(body_mask(frames[1]), body_mask(frames[4]))  # +- stretch
    for bad in (0, 3):
        with pytest.raises(FlexmbdError, match="numbered 1..2"):
            fm.viz.plot_mode(g, bad)


def test_animate_rejects_bad_input(gl, tmp_path):
    res = swinging_beam_results(nt=3)
    with pytest.raises(FlexmbdError, match="unknown field"):
        fm.viz.animate(res, tmp_path / "x.gif", field="temperature")
    with pytest.raises(FlexmbdError, match=".gif or .mp4"):
        fm.viz.animate(res, tmp_path / "x.bmp")
    res.geometry.clear()
    with pytest.raises(FlexmbdError, match="attach_geometry"):
        fm.viz.animate(res, tmp_path / "x.gif")


def test_gallery_flexible_beam(gl, tmp_path):
    """The gallery example end to end on a real Craig-Bampton body (flexmbd.fem)."""
    import importlib.util
    from pathlib import Path

    import flexmbd.fem  # noqa: F401

    path = Path(__file__).resolve().parents[2] / "examples" / "gallery_flexible_beam.py"
    spec = importlib.util.spec_from_file_location("gallery_flexible_beam", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    res, written = mod.main(small=True, out=tmp_path)
    for p in written:
        assert p.stat().st_size > 500
    mode1 = iio.imread(tmp_path / "beam_mode1.png")
    assert drawn_share(mode1) > 0.02
    swing = iio.imread(tmp_path / "beam_swing.gif", index=None)
    assert len(swing) == 8
    # von Mises colours: unloaded at t = 0 (all purple), loaded later (higher values)
    top = [np.percentile(viridis_values(f), 99) for f in swing]
    assert top[0] < 0.1 and max(top) > 0.7
    # the stored stress modes reproduce ReducedBody.von_mises through the geometry
    from flexmbd.geometry import BodyGeometry

    body = mod.reduce_beam()
    g = BodyGeometry.from_arrays(res.geometry["beam"])
    q = res.body("beam").modal[3]
    np.testing.assert_allclose(g.von_mises(q), body.von_mises(q), rtol=1e-12)
    assert (tmp_path / "beam_swing" / "beam_swing.pvd").exists()


def test_mode_plots_for_every_reduction_strategy(gl, tmp_path):
    """plot_mode/animate_mode on real reduced bodies of every strategy: mode number,
    frequency and kind in the label, a drawn and coloured mesh."""
    import skfem

    from flexmbd.viz.render import _mode_info

    mesh = skfem.MeshHex1.init_tensor(
        np.linspace(0, 1.0, 9), np.linspace(0, 0.05, 3), np.linspace(0, 0.05, 3)
    )
    steel = fm.Material(E=2.1e11, nu=0.3, rho=7850.0)
    end = lambda x: fm.fem.Plane((x, 0, 0), (1, 0, 0))
    tip = fm.fem.PointLoad(end(1.0), force=(0.0, 1.0, 0.0))
    strategies = {
        "normal": fm.NormalModes(3, fixed=end(0.0)),
        "static-correction": fm.StaticCorrection(2, [tip], fixed=end(0.0)),
        "fixed-interface": fm.CraigBampton(2, {"A": end(0.0), "B": end(1.0)}),
        "ritz": fm.RitzVectors(3, tip, fixed=end(0.0)),
    }
    for kind, strategy in strategies.items():
        rb = fm.fem.reduce(mesh, steel, strategy, stress_modes=False, geometric=False, name=kind)
        label = _mode_info(rb, 1)[2]
        assert label.startswith("mode 1: ") and f" Hz ({rb.mode_kind[0]})" in label, label
        assert any(kind in k.lower() for k in rb.mode_kind), (kind, rb.mode_kind)
        img = fm.viz.plot_mode(rb, 1, file=tmp_path / f"{kind}.png", window_size=SMALL)
        assert drawn_share(img) > 0.02 and viridis_values(img).max() > 0.8, kind
    n = fm.viz.animate_mode(rb, 2, tmp_path / "ritz2.gif", n_frames=4, window_size=SMALL)
    assert n == 4 and len(iio.imread(tmp_path / "ritz2.gif", index=None)) == 4
