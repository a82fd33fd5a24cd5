"""The `flexmbd` command: each subcommand against the Python API it wraps."""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from flexmbd.cli import main, parse_selector
from flexmbd.errors import FlexmbdError
from flexmbd.results import Results
from flexmbd.viz.demo import swinging_beam_results

ROOT = Path(__file__).resolve().parents[1]
BEAM = ROOT / "meshes" / "beam_hex.msh"


@pytest.fixture(scope="module")
def gl():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gl_probe.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        pytest.skip(f"off-screen rendering unavailable: {out.stdout.strip()[-200:]}")


def test_entry_point_help():
    out = subprocess.run(
        [sys.executable, "-m", "flexmbd.cli", "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0
    for cmd in ("reduce", "compare-modes", "info", "simulate", "render", "probe-gl"):
        assert cmd in out.stdout


def test_selectors():
    import flexmbd.fem as F

    assert isinstance(parse_selector("plane:0,0,0:1,0,0"), F.Plane)
    assert isinstance(parse_selector("box:0,0,0:1,1,1"), F.Box)
    assert isinstance(parse_selector("sphere:0,0,0:0.1"), F.Sphere)
    assert isinstance(parse_selector("nearest:1,0,0"), F.Nearest)
    assert isinstance(parse_selector("big_bore"), F.NodeSet)
    with pytest.raises(FlexmbdError, match="3 comma-separated numbers"):
        parse_selector("plane:0,0:1,0,0")


def test_reduce_and_info_match_the_api(tmp_path, capsys):
    import flexmbd.fem as F

    out = tmp_path / "beam.npz"
    rc = main(
        [
            "reduce",
            str(BEAM),
            "--strategy",
            "craig-bampton",
            "--modes",
            "10",
            "--interface",
            "A=A",
            "--interface",
            "B=B",
            "--no-geometric",
            "-o",
            str(out),
        ]
    )
    assert rc == 0
    body = F.ReducedBody.load(out)
    api = F.reduce(
        str(BEAM),
        F.Material(E=2.1e11, nu=0.3, rho=7850.0),
        F.CraigBampton(4, {"A": F.NodeSet("A"), "B": F.NodeSet("B")}),
        geometric=False,
    )
    assert body.n_modes == 10 and body.interface_names == ("A", "B")
    np.testing.assert_allclose(body.frequencies, api.frequencies, rtol=1e-10)
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "10 modes" in text and "A: rigid, 25 nodes" in text and "B: rigid" in text
    assert text.count("fixed-interface") >= 4 and "constraint" in text


def test_reduce_frame_option(tmp_path, capsys):
    """--frame: auto (default) is the interface frame without geometric stiffness and mean
    axes with it (joints unknown); explicit choices are kept; the reason is printed."""
    import flexmbd.fem as F

    base = ["reduce", str(BEAM), "--modes", "8", "--interface", "A=A", "--no-stress"]
    supports = {}
    for extra in ([], ["--no-geometric"], ["--frame", "interface"]):
        out = tmp_path / f"b{len(supports)}.npz"
        assert main([*base, *extra, "-o", str(out)]) == 0
        supports[" ".join(extra)] = F.ReducedBody.load(out).support
    text = capsys.readouterr().out
    assert supports == {"": "free", "--no-geometric": "clamped", "--frame interface": "clamped"}
    assert "frame='auto' -> mean axes: geometric stiffness computed" in text
    assert main([*base, "--frame", "clamped", "-o", str(tmp_path / "x.npz")]) == 2


def test_compare_modes_table(tmp_path, capsys):
    import flexmbd.fem  # noqa: F401

    pd = pytest.importorskip("pandas")
    csv = tmp_path / "t.csv"
    rc = main(
        [
            "compare-modes",
            str(BEAM),
            "--modes",
            "8",
            "--fixed",
            "A",
            "--load",
            "B:0,1000,0",
            "--strategies",
            "normal,ritz",
            "--steps",
            "20",
            "--n-freq",
            "3",
            "-o",
            str(csv),
        ]
    )
    assert rc == 0
    table = pd.read_csv(csv)
    assert list(table["strategy"])[:2] == ["normal(8)", "ritz(8)"]
    ritz = table[table["strategy"] == "ritz(8)"].iloc[0]
    assert ritz["static_err"] < 1e-6  # the load's own Ritz vector: exact statics
    assert "ritz(8)" in capsys.readouterr().out


def test_errors_exit_2_with_a_message(tmp_path, capsys):
    assert main(["info", str(tmp_path / "missing.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["reduce", str(BEAM), "--strategy", "ritz", "-o", str(tmp_path / "x.npz")]) == 2
    assert "needs a load" in capsys.readouterr().err


def test_simulate_saves_the_results_a_script_makes(tmp_path, capsys):
    script = tmp_path / "demo.py"
    script.write_text(
        textwrap.dedent("""
        from flexmbd.viz.demo import swinging_beam_results
        results = swinging_beam_results(nt=5)
    """)
    )
    out = tmp_path / "run.h5"
    assert main(["simulate", str(script), "-o", str(out)]) == 0
    assert Results.load(out).equals(swinging_beam_results(nt=5))
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "swinging_beam" in text and "beam (117 nodes, 2 modes)" in text


PENDULUM_SCRIPT = """
import flexmbd as fm

def build():
    m = fm.Model("pendulum")
    m.link = fm.RigidBody.rod(1.0, 1.0, origin="end", radius=0.02)
    m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1), q0=[0.5])
    m.g = fm.Gravity((0, -9.81, 0))
    return m
"""


def test_simulate_a_model_script(tmp_path):
    import flexmbd.integrators.implicit  # noqa: F401

    script = tmp_path / "pendulum.py"
    script.write_text(PENDULUM_SCRIPT)
    out = tmp_path / "p.npz"
    assert (
        main(
            [
                "simulate",
                str(script),
                "-o",
                str(out),
                "--t-end",
                "0.2",
                "--dt",
                "0.01",
                "--integrator",
                "newmark",
            ]
        )
        == 0
    )
    res = Results.load(out)
    assert res.t[-1] == pytest.approx(0.2) and "link" in res.geometry
    assert res.body("link").position.shape == (21, 3)


def test_simulate_checkpoint_and_resume(tmp_path):
    """A run checkpointed to 0.2 s and resumed by the CLI to 0.4 s equals a 0.4 s run."""
    script = tmp_path / "pendulum.py"
    script.write_text(PENDULUM_SCRIPT)
    cp = tmp_path / "cp.h5"
    common = ["--dt", "0.01", "--integrator", "rk4", "--no-geometry"]
    assert (
        main(
            [
                "simulate",
                str(script),
                "-o",
                str(tmp_path / "a.npz"),
                "--t-end",
                "0.2",
                "--checkpoint",
                str(cp),
                "--every",
                "5",
                *common,
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "simulate",
                str(script),
                "-o",
                str(tmp_path / "b.npz"),
                "--resume",
                str(cp),
                "--t-end",
                "0.4",
            ]
        )
        == 0
    )
    assert (
        main(["simulate", str(script), "-o", str(tmp_path / "c.npz"), "--t-end", "0.4", *common])
        == 0
    )
    resumed, direct = Results.load(tmp_path / "b.npz"), Results.load(tmp_path / "c.npz")
    assert resumed.t[-1] == pytest.approx(0.4)
    for name in ("t", "q", "qd", "qdd", "reactions"):
        assert np.array_equal(getattr(resumed, name), getattr(direct, name)), name


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_simulate_failure_keeps_the_partial_results(tmp_path, capsys):
    """An explicit step far beyond the stability limit of a stiff spring fails; the CLI
    saves the results up to the failure and exits with status 2."""
    script = tmp_path / "stiff.py"
    script.write_text(
        textwrap.dedent("""
        import flexmbd as fm

        def build():
            m = fm.Model("stiff")
            m.mass = fm.RigidBody.box(1.0, (0.1, 0.1, 0.1))
            m.slide = fm.Prismatic(m.ground, m.mass, axis=(1, 0, 0), q0=[0.01])
            m.spring = fm.JointForce(m.slide, lambda t, q, qd: -1e8 * q)
            return m
    """)
    )
    out = tmp_path / "partial.npz"
    assert (
        main(
            [
                "simulate",
                str(script),
                "-o",
                str(out),
                "--t-end",
                "1.0",
                "--dt",
                "0.01",
                "--integrator",
                "rk4",
                "--no-geometry",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "partial results" in err and "error" in err
    res = Results.load(out)
    assert 0 < res.t[-1] < 1.0 and np.all(np.isfinite(res.q))


def test_render_gif_and_png(tmp_path, gl):
    iio = pytest.importorskip("imageio.v3")
    path = swinging_beam_results(nt=6).save(tmp_path / "run.h5")
    assert (
        main(
            [
                "render",
                str(path),
                "-o",
                str(tmp_path / "run.gif"),
                "--size",
                "160x120",
                "--view",
                "xy",
            ]
        )
        == 0
    )
    frames = iio.imread(tmp_path / "run.gif", index=None)
    assert frames.shape == (6, 120, 160, 3)
    assert (
        main(
            [
                "render",
                str(path),
                "-o",
                str(tmp_path / "snap.png"),
                "--size",
                "160x120",
                "--time",
                "0.5",
                "--field",
                "none",
            ]
        )
        == 0
    )
    img = iio.imread(tmp_path / "snap.png")
    assert (np.abs(img[..., :3].astype(int) - 255).max(axis=-1) > 8).mean() > 0.01


def test_simulate_adds_poses_to_joint_coordinate_results(tmp_path):
    script = tmp_path / "hand.py"
    script.write_text(
        textwrap.dedent("""
        import numpy as np
        import flexmbd as fm
        from flexmbd.results import Results

        model = fm.Model("pendulum")
        model.link = fm.RigidBody.rod(1.0, 1.0, origin="end")
        model.hinge = fm.Revolute(model.ground, model.link, axis=(0, 0, 1))
        t = np.linspace(0, 1, 4)
        results = Results(t, t[:, None], np.ones((4, 1)), coordinates=[("hinge", "angle")],
                          speeds=[("hinge", "rate")], joint_names=["hinge"])
    """)
    )
    out = tmp_path / "hand.h5"
    assert main(["simulate", str(script), "-o", str(out)]) == 0
    res = Results.load(out)
    R = res.body("link").rotation
    np.testing.assert_allclose(R[:, 0, 0], np.cos(res.t), atol=1e-14)  # rotated by q
    assert "link" in res.geometry
