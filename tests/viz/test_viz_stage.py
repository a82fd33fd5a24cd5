"""The VTK scene (flexmbd.viz.stage): baked layers give the very pixels of the full
scene, moving points in place equals drawing afresh, colour tables come from the
cache without matplotlib, and animations import neither pyvista.plotting nor pyplot."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flexmbd.viz import render
from flexmbd.viz.actors import mesh_actor, scalar_bar
from flexmbd.viz.colors import colormap_table, lookup_table
from flexmbd.viz.demo import beam_geometry

SMALL = (320, 240)
ROOT = Path(__file__).resolve().parents[2]


def _beam_stage(q):
    """A stage with the demo beam bent by ``q`` (colour = displacement), a label, the
    colour bar, the ground below and the axes triad; returns (stage, actor, geometry)."""
    g = beam_geometry()
    st = render._stage(SMALL, anti_aliasing=False)
    x, u = g.points(q, scale=1.0), g.displacement(q)
    lut = lookup_table("viridis", (0.0, 0.1))
    m = mesh_actor(
        g.cells, x, field="displacement", values=np.linalg.norm(u, axis=1), lut=lut, surface=True
    )
    st.add(m.actor)
    bar = st.add(scalar_bar(lut, "displacement [m]"))
    render._label(st, "t = 0.5000 s")
    bounds = render._padded(g.nodes.min(axis=0) - 0.2, g.nodes.max(axis=0) + 0.2)
    up = render._set_view(st, "auto", bounds, gravity=np.array([0.0, -9.81, 0.0]))
    ground = render._decorate(st, bounds, up, np.array([0.0, -9.81, 0.0]), True, None)
    return st, m, g, bar, ground


def test_baked_layers_give_the_pixels_of_the_full_scene(gl):
    st, m, g, bar, ground = _beam_stage([1.0, 0.0])
    try:
        assert ground is not None  # seen from above: it can be baked
        st.render()
        full = st.image()
        st.bake(behind=[ground], above=[bar])
        st.render()
        baked = st.image()
        np.testing.assert_array_equal(baked, full)
        # and after moving the beam in place, the same as a stage drawn afresh there
        q = [0.5, 0.2]
        m.set_points(g.points(q))
        m.set_values(np.linalg.norm(g.displacement(q), axis=1))
        st.render()
        moved = st.image()
    finally:
        st.close()
    fresh, *_ = _beam_stage(q)
    try:
        fresh.render()
        again = fresh.image()
    finally:
        fresh.close()
    # VTK keeps the coordinate shift of the first upload of the points, so a few edge
    # pixels of the moved beam may round the other way than in a fresh drawing
    differ = np.any(moved != again, axis=-1)
    assert differ.sum() <= 10, differ.sum()
    moved_pixels = np.any(moved != full, axis=-1).sum()
    assert moved_pixels > 500  # the beam did move and change colour


def test_colour_table_is_matplotlibs_and_is_cached(tmp_path, monkeypatch):
    from matplotlib import colormaps

    monkeypatch.setenv("FLEXMBD_CACHE_DIR", str(tmp_path))
    want = np.round(255 * colormaps["viridis"](np.linspace(0, 1, 256))).astype(np.uint8)
    code = (
        "import sys, numpy as np\n"
        "from flexmbd.viz.colors import colormap_table\n"
        "t = colormap_table('viridis', 256)\n"
        "print('mpl' if 'matplotlib' in sys.modules else 'none', "
        "','.join(map(str, t.ravel())))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    outs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert outs[0][0] == "mpl" and outs[1][0] == "none"  # the 2nd process reads the cache
    for _, values in outs:
        np.testing.assert_array_equal(
            np.array(values.split(","), dtype=np.uint8).reshape(256, 4), want
        )
    assert len(json.loads((tmp_path / "colormaps.json").read_text())) == 1
    # in a process that imported matplotlib the table is asked of it (custom maps)
    np.testing.assert_array_equal(colormap_table("viridis"), want)


def test_unknown_colour_map_is_a_flexmbd_error():
    from flexmbd.errors import FlexmbdError

    with pytest.raises(FlexmbdError, match="unknown colour map"):
        lookup_table("no-such-map", (0, 1))


def test_animate_imports_neither_pyvista_plotting_nor_pyplot(gl, tmp_path):
    code = (
        "import sys\n"
        "import flexmbd as fm\n"
        "from flexmbd.viz.demo import swinging_beam_results\n"
        f"n = fm.viz.animate(swinging_beam_results(nt=4), {str(tmp_path / 'a.gif')!r}, "
        "window_size=(160, 120))\n"
        "print(n, sorted(m for m in ('pyvista.plotting', 'matplotlib.pyplot', "
        "'pyvista') if m in sys.modules))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), FLEXMBD_PROGRESS="0")
    out = (
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    assert out == "4 []"


def test_plotter_holds_the_same_scene(gl):
    """fm.viz.plotter draws the stage's actors on a pyvista.Plotter: same pixels as
    show() up to anti-aliasing (both multisample), camera kept on the first render."""
    import flexmbd as fm
    from flexmbd.viz.demo import swinging_beam_results

    res = swinging_beam_results(nt=4)
    p = fm.viz.plotter(res, window_size=SMALL, view="xy")
    try:
        cam = (p.camera.position, p.camera.focal_point)
        img = np.asarray(p.screenshot(return_img=True))[..., :3]
        assert (p.camera.position, p.camera.focal_point) == cam
    finally:
        p.close()
    still = fm.viz.show(res, window_size=SMALL, view="xy")
    close = (np.abs(img.astype(int) - still).max(axis=-1) <= 40).mean()
    assert close > 0.97
