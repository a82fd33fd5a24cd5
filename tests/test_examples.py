"""Examples double as regression tests (each runs headless with small settings)."""

import importlib.util
import io
import os
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TESTS = ROOT / "tests"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _viz_images():
    spec = importlib.util.spec_from_file_location("viz_images", TESTS / "viz" / "viz_images.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def gl():
    """Off-screen rendering works here (probed in a child process: VTK segfaults
    instead of raising without a GL library); skip otherwise."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gl_probe.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        pytest.skip(f"off-screen rendering unavailable (probe exit {out.returncode})")
    os.environ["FLEXMBD_GL_PROBED"] = "ok:" + out.stdout.split("ok", 1)[-1].strip()


def test_flagship_flexible_slider_crank_renders_a_gif(gl, tmp_path):
    """The first README command, small: summary, topology, result line, real GIF frames."""
    import numpy as np

    iio = pytest.importorskip("imageio.v3")
    img = _viz_images()
    mod = load("flagship")
    buf = io.StringIO()
    gif, png = tmp_path / "flagship.gif", tmp_path / "flagship.png"
    with redirect_stdout(buf):
        out = mod.main(t_end=0.012, frames=8, gif=gif, png=png)
    text = buf.getvalue()
    m = out["model"]
    assert "3 bodies, 4 joints" in text and "10 modes" in text
    # the loop is closed automatically, at the joint with the fewest equations
    assert [j.name for j in m.cut_joints()] == ["j_a"] and "cut joints: ['j_a']" in text
    assert "240 generalized-alpha steps" in text and "peak rod midpoint deflection" in text
    # the rod bends (about a millimetre at the midpoint within the first quarter turn)
    d = np.abs(out["deflection"])
    assert 2e-4 < d.max() < 5e-3 and d[0] < 1e-9
    # the GIF: 8 frames of drawn mechanism, moving, the colours of the rod changing
    frames = iio.imread(gif, index=None)
    assert out["frames"] == 8 and frames.shape[0] == 8
    shares = [img.drawn_share(f) for f in frames]
    assert min(shares) > 0.02
    # colour-map values of the rod (the label above and the colour bar below cut off)
    top = [np.percentile(_viridis(mechanism(f)), 99) for f in frames]
    assert top[0] < 0.1 and max(top) > 0.6  # undeformed at t = 0, then bending
    masks = [img.body_mask(mechanism(f)) for f in frames]
    assert (masks[0] ^ masks[4]).mean() > 0.01  # the mechanism moved
    still = iio.imread(png)
    assert img.drawn_share(still) > 0.02 and len(img.colored(mechanism(still))) > 500


def mechanism(frame):
    """The picture without the time label (top 8 %) and the colour bar (bottom 20 %)."""
    h = frame.shape[0]
    return frame[int(0.08 * h) : int(0.8 * h)]


def _viridis(region):
    """Colour-map value in [0, 1] of the saturated pixels (matched by RGB direction)."""
    import numpy as np
    from matplotlib import colormaps

    lut = colormaps["viridis"](np.linspace(0.0, 1.0, 256))[:, :3]
    lut /= np.linalg.norm(lut, axis=1, keepdims=True)
    px = region[..., :3].reshape(-1, 3).astype(float)
    px = px[(px.max(axis=1) - px.min(axis=1)) > 40]
    if not len(px):
        return np.zeros(1)
    px /= np.linalg.norm(px, axis=1, keepdims=True)
    return np.argmax(px @ lut.T, axis=1) / 255.0


def test_flagship_agrees_with_the_validated_slider_crank():
    """The flagship's rod (cut at the spherical joint A, automatic) moves as the model of
    examples/flexible_slider_crank.py (cut at the universal joint B, declared), whose
    stiffened meshed rod is within 1.1 % of a geometrically exact reference."""
    import numpy as np

    flag = load("flagship")
    with redirect_stdout(io.StringIO()):
        out = flag.main(t_end=0.01, render=False)
    ref = load("flexible_slider_crank")
    model = ref.build(ref.fe_rod())
    res, _ = ref.simulate(model, 0.01, dt=5e-5, rho_inf=0.9)
    d_ref = ref.midpoint_deflection(model, res)
    d = out["deflection"]
    assert np.abs(d - d_ref).max() < 1e-6 * np.abs(d_ref).max()


def test_make_simeon_rod_writes_the_shipped_mesh(tmp_path):
    """The mesh generator's ``main`` writes the rod and reads it back: the same 549 nodes
    (30 quadratic hexahedra, 0.30 x 0.008 x 0.008 m) as the shipped
    ``meshes/rod_simeon_hex27.vtu``."""
    import meshio

    mod = load("make_simeon_rod")
    with redirect_stdout(io.StringIO()):
        path = mod.main(tmp_path / "rod.vtu")
    shipped = meshio.read(mod.MESH)
    written = meshio.read(path)
    assert written.points.shape == shipped.points.shape == (549, 3)
    assert np.array_equal(written.points, shipped.points)


# -- every example: a --quick option and its run time at defaults ------------------------
SCRIPTS = sorted(p.stem for p in EXAMPLES.glob("*.py") if p.stem != "make_simeon_rod")


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_has_quick_settings_and_states_its_cpu_time(name):
    """``--quick`` gives the small settings the tests use (keyword arguments of main);
    the module docstring states the CPU time at defaults and with --quick."""
    import inspect
    import re

    mod = load(name)
    params = inspect.signature(mod.main).parameters
    assert set(mod.QUICK) <= set(params), f"{name}: QUICK names unknown main() arguments"
    assert mod.settings(["--quick"]) == mod.QUICK and mod.settings([]) == {}
    with pytest.raises(SystemExit):  # a mistyped option is refused, not ignored
        mod.settings(["--quik"])
    doc = mod.__doc__
    assert re.search(r"CPU time.*defaults", doc, re.S | re.I), f"{name}: no CPU time stated"
    assert "--quick" in doc


@pytest.mark.slow
def test_four_bar_quick_runs_as_a_script(tmp_path):
    """The command line of an example: ``python examples/four_bar.py --quick`` runs the
    singular-configuration study at its small settings and prints the force error."""
    env = dict(
        os.environ,
        FLEXMBD_PROGRESS="0",
        MPLBACKEND="Agg",
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "four_bar.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    import re

    err = [
        float(x)
        for x in re.findall(r"cut-joint force error vs 1-dof reference: (\S+) N", out.stdout)
    ]
    # with the tangent projection the cut force follows the 1-dof reference (Wang et al.
    # 2025, Fig. 5); without it the accelerations drift after the singular configuration
    assert len(err) == 2 and err[0] < 1e-8 and err[1] > 1.0


@pytest.mark.slow
@pytest.mark.parametrize("name", SCRIPTS)
def test_every_example_runs_quick_as_a_script(name, tmp_path):
    env = dict(
        os.environ,
        FLEXMBD_PROGRESS="0",
        MPLBACKEND="Agg",
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-2000:]


# -- README: every python block runs as written, each in its own empty directory --------
def readme_blocks():
    """``[(section heading, code)]`` of every python block of the README."""
    import re

    text = (ROOT / "README.md").read_text()
    out = []
    for m in re.finditer(r"```python\n(.*?)```", text, re.S):
        heads = re.findall(r"^## (.+)$", text[: m.start()], re.M)
        out.append((heads[-1] if heads else "", m.group(1)))
    return out


@pytest.fixture(scope="module")
def readme(tmp_path_factory):
    """Run every README python block in a fresh temporary working directory (not the
    repository): ``{heading: (namespace, directory)}``. Without off-screen rendering
    the animations are skipped (the rest runs)."""
    import flexmbd.viz
    from flexmbd.viz.headless import RenderingUnavailable, configure

    out = {}
    cwd = os.getcwd()
    with pytest.MonkeyPatch.context() as mp:
        try:
            configure()
        except RenderingUnavailable:
            mp.setattr(flexmbd.viz, "animate", lambda *a, **k: 0, raising=False)
        for k, (heading, code) in enumerate(readme_blocks()):
            where = tmp_path_factory.mktemp(f"readme{k}")
            ns = {}
            os.chdir(where)
            try:
                with redirect_stdout(io.StringIO()):
                    exec(compile(code, f"README.md ({heading})", "exec"), ns)
            finally:
                os.chdir(cwd)
            out[heading] = (ns, where)
    return out


def test_every_readme_python_block_runs_in_a_temporary_directory(readme):
    assert list(readme) == [h for h, _ in readme_blocks()]
    assert {"Fifteen lines", "A flexible body", "Everyday use"} <= set(readme)
    assert not (ROOT / "pendulum.gif").exists() and not (ROOT / "run.h5").exists()


def test_readme_example_runs_and_both_formulations_agree(readme):
    """The README's fifteen lines run, and CFA (RK4) and absolute (generalized-alpha) agree."""
    import numpy as np

    ns, _ = readme["Fifteen lines"]
    res, res2 = ns["res"], ns["res2"]
    # the pendulum swings: the elbow moves far from its initial angle
    assert np.ptp(res.joint("elbow").q) > 0.5
    # same physics in both formulations: shoulder reaction history (second-order vs 4th-order
    # integrators at dt = 1e-3 differ by O(dt^2) ~ 1e-6 relative over the first second)
    k = res.t <= 1.0
    r1, r2 = res.reaction("shoulder")[k], res2.reaction("shoulder")[k]
    assert np.abs(r1 - r2).max() < 1e-4 * np.abs(r1).max()


def test_readme_flexible_body_block(readme):
    """The README's flexible-body block runs outside the repository (the mesh comes
    with the package); the pendulum swings and bends, and the GIF is written."""
    import numpy as np

    ns, where = readme["A flexible body"]
    run, tip = ns["run"], ns["tip"]
    # released horizontally: the tip falls by tens of centimetres in 0.5 s ...
    assert tip[0, 1] - tip[:, 1].min() > 0.2
    # ... and the beam bends (modal coordinates move)
    assert np.abs(run.body("beam").modal).max() > 0
    # first clamped bending pair: Euler-Bernoulli 41.78 Hz; the 40x4x4 linear hexahedra
    # are stiffer in bending (44.05 Hz)
    f = ns["beam"].frequencies
    assert f[0] == pytest.approx(f[1], rel=1e-9) and 41.78 < f[0] < 1.06 * 41.78
    if _renders():
        assert (where / "pendulum.gif").stat().st_size > 10_000


def test_readme_everyday_block(readme):
    """Files, VTK frames (at most 200 by default), checkpoint/resume and a sweep."""
    import numpy as np

    import flexmbd as fm

    ns, where = readme["Everyday use"]
    assert fm.Results.load(where / "run.h5").equals(fm.Results.load(where / "run.h5"))
    first = fm.Results.load(where / "run.h5")
    assert len(first.t) == 1001
    # 1001 samples -> stride 6 -> 167 frames, the first sample included
    vtus = sorted((where / "out").glob("run_*.vtu"))
    assert len(vtus) == 167
    pvd = (where / "out" / "run.pvd").read_text()
    assert pvd.count("<DataSet") == 167 and 'timestep="0.0"' in pvd
    if _renders():
        assert (where / "run.gif").stat().st_size > 10_000
    # the resumed checkpointed run is complete to t = 2 s
    res = ns["res"]
    assert res.t[-1] == pytest.approx(2.0) and len(res.t) == 2001
    # a free pendulum (k = 0) conserves energy under generalized-alpha to O(dt^2)
    e = res.energy.get("total")
    if e is not None:
        assert np.ptp(e) < 1e-2 * np.abs(first.energy["kinetic"]).max()
    # the sweep: 4 cases, one row each; the spring changes the motion
    table = ns["table"]
    assert len(table) == 4 and set(table["length"]) == {0.5, 1.0}
    q_end = table.set_index(["length", "k"])["q:hinge:angle"]
    assert abs(q_end[(1.0, 1.0)] - q_end[(1.0, 10.0)]) > 1e-3


def _renders():
    from flexmbd.viz.headless import RenderingUnavailable, configure

    try:
        configure()
        return True
    except RenderingUnavailable:
        return False
