"""Bad input to files, checkpoints, results and the command line: one table.

Every case must give a named flexmbd error (API) or exit status 2 with one line on
standard error and no traceback (CLI), and the message must name the input (the file
or the option). Wording is not pinned. Every case is trivially fast (no simulation
runs longer than a fraction of a second; the subprocess cases have a timeout), and
the cases that concern writing also check that nothing was done before the refusal.
"""

import os
import subprocess
import sys
from pathlib import Path

import io_cases as C
import numpy as np
import pytest

from flexmbd.checkpoint import read_checkpoint, resume, run
from flexmbd.cli import main
from flexmbd.errors import FileError, FlexmbdError, ModelError
from flexmbd.results import Results

ROOT = Path(__file__).resolve().parents[2]
BEAM = ROOT / "meshes" / "beam_hex.msh"


def _reduced_body(path):
    from flexmbd.fem import ReducedBody

    return ReducedBody.load(path)


def _flexible_body(path):
    import flexmbd as fm

    return fm.FlexibleBody(str(path))


# -- loaders x corruptions ---------------------------------------------------------------
# loader name -> (good-file maker, how to load, expected error)
LOADERS = {
    "Results.load": (lambda tmp: C.results_file(tmp, ".h5"), Results.load, FileError),
    "Results.load(npz)": (lambda tmp: C.results_file(tmp, ".npz"), Results.load, FileError),
    "read_checkpoint": (C.checkpoint_file, read_checkpoint, FileError),
    "resume": (C.checkpoint_file, lambda p: resume(p), FileError),
    "ReducedBody.load": (C.reduced_file, _reduced_body, FileError),
    "FlexibleBody(path)": (C.reduced_file, _flexible_body, FileError),
}
CLI_LOADERS = {
    "cli-info-results": (lambda tmp: C.results_file(tmp, ".h5"), lambda p, tmp: ["info", str(p)]),
    "cli-info-body": (C.reduced_file, lambda p, tmp: ["info", str(p)]),
    "cli-render": (
        lambda tmp: C.results_file(tmp, ".h5"),
        lambda p, tmp: ["render", str(p), "-o", str(tmp / "out.gif")],
    ),
    "cli-resume": (
        C.checkpoint_file,
        lambda p, tmp: [
            "simulate",
            str(C.pendulum_script(tmp)),
            "-o",
            str(tmp / "out.h5"),
            "--resume",
            str(p),
        ],
    ),
}


def _loader_cases():
    cases = []
    for lname, (good, load, error) in LOADERS.items():
        corruptions = dict(C.CORRUPTIONS)
        if lname in ("read_checkpoint", "resume"):
            corruptions.update(C.CHECKPOINT_ONLY)
        if "Body" in lname:
            corruptions.update(C.BODY_ONLY)
            corruptions.pop("inconsistent-lengths")  # a results-file defect
        for cname, spoil in corruptions.items():
            cases.append(pytest.param(good, spoil, load, error, id=f"{lname}-{cname}"))
    return cases


@pytest.mark.parametrize("good, spoil, load, error", _loader_cases())
def test_damaged_file_raises_a_named_error(tmp_path, good, spoil, load, error):
    path = spoil(tmp_path, good(tmp_path))
    before = _snapshot(path)
    with pytest.raises(error) as info:
        load(path)
    assert isinstance(info.value, FlexmbdError)
    assert path.name in str(info.value)
    assert _snapshot(path) == before  # a failed load changes nothing


def _cli_loader_cases():
    picked = (
        "truncated",
        "empty",
        "random-bytes",
        "foreign-h5",
        "foreign-npz",
        "pickled-npz",
        "directory",
        "missing",
        "other-kind",
    )
    return [
        pytest.param(good, C.CORRUPTIONS[c], argv, id=f"{n}-{c}")
        for n, (good, argv) in CLI_LOADERS.items()
        for c in picked
        if not (n == "cli-info-body" and c == "other-kind")  # info reads both kinds
        and not (n == "cli-info-results" and c == "other-kind")
    ]


@pytest.mark.parametrize("good, spoil, argv", _cli_loader_cases())
def test_cli_on_a_damaged_file_exits_2_with_one_line(tmp_path, capsys, good, spoil, argv):
    path = spoil(tmp_path, good(tmp_path))
    _expect_cli_error(capsys, argv(path, tmp_path), path.name)


# -- writing: paths that cannot take the file ---------------------------------------------
def _save(suffix, where, format=None):
    def case(tmp):
        target = {
            "missing-dir": tmp / "no" / "such" / f"r{suffix}",
            "is-directory": _mkdir(tmp / f"dir{suffix}"),
            "parent-is-file": _touch(tmp / "file") / f"r{suffix}",
            "unknown-extension": tmp / f"r{suffix}",
        }[where]
        return (lambda: C.small_results().save(target, format=format)), target

    return case


def _checkpoint_run(where):
    def case(tmp):
        target = {
            "missing-dir": tmp / "no" / "cp.h5",
            "is-directory": _mkdir(tmp / "cpdir"),
            "parent-is-file": _touch(tmp / "file") / "cp.h5",
            "existing-file": C.checkpoint_file(tmp, "old.h5"),
        }[where]
        return (lambda: run(C.Oscillator(), 0.1, checkpoint=target)), target

    return case


def _simulate(where):
    def case(tmp):
        import flexmbd as fm

        m = fm.Model("pendulum")
        m.link = fm.RigidBody.rod(1.0, 1.0, origin="end")
        m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1))
        target = {
            "missing-dir": tmp / "no" / "cp.h5",
            "is-directory": _mkdir(tmp / "cpdir"),
            "parent-is-file": _touch(tmp / "file") / "cp.h5",
            "existing-file": C.checkpoint_file(tmp, "old.h5"),
        }[where]
        return (
            lambda: m.simulate(0.05, dt=0.01, integrator=INTEGRATOR[where], checkpoint=target)
        ), target

    return case


INTEGRATOR = {
    "missing-dir": "rk4",
    "is-directory": "newmark",
    "parent-is-file": "rk45",
    "existing-file": "newmark",
}


def _resume_changed_model(change):
    def case(tmp):
        import flexmbd as fm

        def build(mass=1.0, g=-9.81, axis=(0, 0, 1), k=5.0):
            m = fm.Model("pendulum")
            m.link = fm.RigidBody.rod(mass, 1.0, origin="end", radius=0.02)
            m.hinge = fm.Revolute(m.ground, m.link, axis=axis, q0=[0.5])
            m.g = fm.Gravity((0, g, 0))
            m.spring = fm.JointForce(m.hinge, lambda t, q, qd: -k * q)
            return m

        cp = tmp / "run.h5"
        build().simulate(0.05, dt=0.01, integrator="rk4", checkpoint=cp, every=2)
        other = {
            "mass": dict(mass=2.0),
            "gravity": dict(g=-1.62),
            "spring": dict(k=6.0),
            "axis": dict(axis=(0, 0, -1)),
        }[change]
        return (lambda: resume(cp, model=build(**other), t_end=0.1)), cp

    return case


API_CASES = [
    *[
        pytest.param(_save(s, w), FileError, id=f"save{s}-{w}")
        for s in (".h5", ".npz")
        for w in ("missing-dir", "is-directory", "parent-is-file")
    ],
    *[
        pytest.param(_save(s, "unknown-extension"), FileError, id=f"save-extension{s or '-none'}")
        for s in (".txt", "", ".csv")
    ],
    pytest.param(
        _save(".h5", "unknown-extension", format="mat"), FlexmbdError, id="save-unknown-format"
    ),
    *[
        pytest.param(_checkpoint_run(w), FileError, id=f"run-checkpoint-{w}")
        for w in ("missing-dir", "is-directory", "parent-is-file", "existing-file")
    ],
    *[
        pytest.param(_simulate(w), FileError, id=f"simulate-checkpoint-{w}")
        for w in ("missing-dir", "is-directory", "parent-is-file", "existing-file")
    ],
    *[
        pytest.param(_resume_changed_model(c), ModelError, id=f"resume-changed-{c}")
        for c in ("mass", "gravity", "spring", "axis")
    ],
]


@pytest.mark.parametrize("make, error", API_CASES)
def test_unusable_path_or_model_is_refused(tmp_path, make, error):
    call, name = make(tmp_path)
    before = _snapshot(name) if isinstance(name, Path) else None
    with pytest.raises(error) as info:
        call()
    assert str(getattr(name, "name", name)) in str(info.value)
    if before is not None:
        assert _snapshot(name) == before  # an existing file is untouched
    assert not list(tmp_path.rglob("*.tmp*"))  # no temporary file left behind


# -- the command line: flags x bad values, paths -------------------------------------------
def _reduce(*extra, mesh=BEAM):
    return lambda tmp: [
        "reduce",
        str(mesh),
        "--strategy",
        "normal",
        "-o",
        str(tmp / "b.npz"),
        *extra,
    ]


def _compare(*extra):
    return lambda tmp: ["compare-modes", str(BEAM), "--fixed", "A", "--load", "B:0,1,0", *extra]


def _render(*extra):
    return lambda tmp: ["render", str(C.results_file(tmp)), "-o", str(tmp / "a.gif"), *extra]


def _sim(*extra, out="r.h5"):
    return lambda tmp: [
        "simulate",
        str(C.pendulum_script(tmp)),
        "-o",
        str(tmp / out),
        "--integrator",
        "rk4",
        *extra,
    ]


BAD_VALUES = {
    # reduce / compare-modes
    "reduce --modes 0": (_reduce("--modes", "0"), "--modes"),
    "reduce --modes -3": (_reduce("--modes", "-3"), "--modes"),
    "reduce --modes 2.5": (_reduce("--modes", "2.5"), "--modes"),
    "reduce --modes x": (_reduce("--modes", "x"), "--modes"),
    "reduce --E 0": (_reduce("--E", "0"), "E=0"),
    "reduce --E=-1e9": (_reduce("--E=-1e9"), "E=-1"),
    "reduce --E nan": (_reduce("--E", "nan"), "--E"),
    "reduce --E steel": (_reduce("--E", "steel"), "--E"),
    "reduce --nu 0.5": (_reduce("--nu", "0.5"), "nu=0.5"),
    "reduce --nu -1": (_reduce("--nu", "-1"), "nu=-1"),
    "reduce --nu inf": (_reduce("--nu", "inf"), "--nu"),
    "reduce --rho 0": (_reduce("--rho", "0"), "rho"),
    "reduce --rho -7850": (_reduce("--rho", "-7850"), "rho"),
    "reduce --material unobtainium": (_reduce("--material", "unobtainium"), "unobtainium"),
    "reduce --strategy magic": (_reduce("--strategy", "magic"), "magic"),
    "reduce --interface-kind glue": (_reduce("--interface-kind", "glue"), "glue"),
    "reduce --interface A": (_reduce("--interface", "A"), "--interface"),
    "reduce --fixed plane:0,0:1,0,0": (_reduce("--fixed", "plane:0,0:1,0,0"), "plane:0,0"),
    "reduce --fixed sphere:0,0,0": (_reduce("--fixed", "sphere:0,0,0"), "sphere:0,0,0"),
    "reduce ritz without --load": (
        lambda tmp: ["reduce", str(BEAM), "--strategy", "ritz", "-o", str(tmp / "b.npz")],
        "ritz",
    ),
    "reduce --load B:1,2": (_reduce("--load", "B:1,2"), "--load"),
    "reduce missing mesh": (_reduce(mesh="missing.msh"), "missing.msh"),
    "reduce missing mesh (craig-bampton)": (
        lambda tmp: ["reduce", str(tmp / "missing.msh"), "-o", str(tmp / "b.npz")],
        "missing.msh",
    ),
    "reduce mesh is a directory": (
        lambda tmp: ["reduce", str(tmp), "-o", str(tmp / "b.npz")],
        str(Path("x").name),
    ),
    "reduce -o x.txt": (
        lambda tmp: ["reduce", str(BEAM), "--strategy", "normal", "-o", str(tmp / "x.txt")],
        "x.txt",
    ),
    "reduce -o missing dir": (
        lambda tmp: ["reduce", str(BEAM), "--strategy", "normal", "-o", str(tmp / "no" / "b.npz")],
        "no",
    ),
    "compare --n-freq 0": (_compare("--n-freq", "0"), "--n-freq"),
    "compare --n-freq -1": (_compare("--n-freq", "-1"), "--n-freq"),
    "compare --steps 0": (_compare("--steps", "0"), "--steps"),
    "compare --modes 0": (_compare("--modes", "0"), "--modes"),
    "compare without --fixed": (lambda tmp: ["compare-modes", str(BEAM)], "--fixed"),
    "compare -o x.txt": (lambda tmp: _compare("-o", str(tmp / "x.txt"))(tmp), "x.txt"),
    "compare --figure missing dir": (
        lambda tmp: _compare("--figure", str(tmp / "no" / "f.png"))(tmp),
        "f.png",
    ),
    "compare missing mesh": (
        lambda tmp: ["compare-modes", "gone.msh", "--fixed", "A", "--load", "B:0,1,0"],
        "gone.msh",
    ),
    # render
    "render --fps 0": (_render("--fps", "0"), "--fps"),
    "render --fps -5": (_render("--fps", "-5"), "--fps"),
    "render --fps ten": (_render("--fps", "ten"), "--fps"),
    "render --stride 0": (_render("--stride", "0"), "--stride"),
    "render --stride -2": (_render("--stride", "-2"), "--stride"),
    "render --max-frames 0": (_render("--max-frames", "0"), "--max-frames"),
    "render --scale nan": (_render("--scale", "nan"), "--scale"),
    "render --scale inf": (_render("--scale", "inf"), "--scale"),
    "render --scale -inf": (_render("--scale", "-inf"), "--scale"),
    "render --scale big": (_render("--scale", "big"), "--scale"),
    "render --time nan": (_render("--time", "nan"), "--time"),
    "render --size 0x0": (_render("--size", "0x0"), "--size"),
    "render --size big": (_render("--size", "big"), "--size"),
    "render --field heat": (_render("--field", "heat"), "heat"),
    "render -o x.txt": (
        lambda tmp: ["render", str(C.results_file(tmp)), "-o", str(tmp / "x.txt")],
        "x.txt",
    ),
    "render -o missing dir": (
        lambda tmp: ["render", str(C.results_file(tmp)), "-o", str(tmp / "no" / "a.gif")],
        "a.gif",
    ),
    "render missing results": (
        lambda tmp: ["render", "gone.h5", "-o", str(tmp / "a.gif")],
        "gone.h5",
    ),
    # simulate
    "simulate --t-end 0": (_sim("--t-end", "0"), "--t-end"),
    "simulate --t-end -1": (_sim("--t-end", "-1"), "--t-end"),
    "simulate --t-end nan": (_sim("--t-end", "nan"), "--t-end"),
    "simulate --t-end inf": (_sim("--t-end", "inf"), "--t-end"),
    "simulate --t-end one": (_sim("--t-end", "one"), "--t-end"),
    "simulate --dt 0": (_sim("--t-end", "1", "--dt", "0"), "--dt"),
    "simulate --dt nan": (_sim("--t-end", "1", "--dt", "nan"), "--dt"),
    "simulate --dt -1e-3": (_sim("--t-end", "1", "--dt", "-1e-3"), "--dt"),
    "simulate --every 0": (_sim("--t-end", "1", "--every", "0"), "--every"),
    "simulate --formulation lagrange": (_sim("--formulation", "lagrange"), "lagrange"),
    "simulate missing script": (lambda tmp: ["simulate", str(tmp / "gone.py")], "gone.py"),
    "simulate -o missing dir": (
        _sim("--t-end", "0.1", "--dt", "0.01", out="nonexistent/dir/run.h5"),
        "run.h5",
    ),
    "simulate -o x.txt": (_sim("--t-end", "0.1", "--dt", "0.01", out="x.txt"), "x.txt"),
    "simulate -o no extension": (_sim("--t-end", "0.1", "--dt", "0.01", out="run"), "run"),
    "simulate -o directory": (
        lambda tmp: _sim("--t-end", "0.1", out=_mkdir(tmp / "d.h5"))(tmp),
        "d.h5",
    ),
    "simulate --checkpoint directory": (
        lambda tmp: _sim("--t-end", "0.1", "--dt", "0.01", "--checkpoint", str(tmp))(tmp),
        str(Path("x").name),
    ),
    "simulate --checkpoint missing dir": (
        lambda tmp: _sim(
            "--t-end", "0.1", "--dt", "0.01", "--checkpoint", str(tmp / "no" / "cp.h5")
        )(tmp),
        "cp.h5",
    ),
    "simulate --checkpoint existing": (
        lambda tmp: _sim(
            "--t-end", "0.1", "--dt", "0.01", "--checkpoint", str(C.checkpoint_file(tmp, "keep.h5"))
        )(tmp),
        "keep.h5",
    ),
    "simulate -o is the checkpoint": (
        lambda tmp: _sim(
            "--t-end", "0.1", "--dt", "0.01", "--checkpoint", str(tmp / "same.h5"), out="same.h5"
        )(tmp),
        "same.h5",
    ),
    "simulate --resume missing": (
        lambda tmp: _sim("--resume", str(tmp / "gone.h5"))(tmp),
        "gone.h5",
    ),
    "simulate --resume and other --checkpoint": (
        lambda tmp: _sim(
            "--resume", str(C.checkpoint_file(tmp, "a.h5")), "--checkpoint", str(tmp / "b.h5")
        )(tmp),
        "--checkpoint",
    ),
    "simulate script raises": (
        lambda tmp: [
            "simulate",
            str(C.script(tmp, "raise RuntimeError('boom')\n", "bad.py")),
            "-o",
            str(tmp / "r.h5"),
        ],
        "bad.py",
    ),
    "simulate script syntax error": (
        lambda tmp: [
            "simulate",
            str(C.script(tmp, "def (:\n", "syntax.py")),
            "-o",
            str(tmp / "r.h5"),
        ],
        "syntax.py",
    ),
    "simulate script defines nothing": (
        lambda tmp: [
            "simulate",
            str(C.script(tmp, "x = 1\n", "empty.py")),
            "-o",
            str(tmp / "r.h5"),
        ],
        "empty.py",
    ),
    "info missing": (lambda tmp: ["info", str(tmp / "gone.npz")], "gone.npz"),
    "unknown command": (lambda tmp: ["explode"], "explode"),
}
#: cases refused before the script runs (the script would leave a marker)
BEFORE_SCRIPT = [k for k in BAD_VALUES if k.startswith("simulate") and "script" not in k]


@pytest.mark.parametrize("name", list(BAD_VALUES))
def test_cli_bad_value_exits_2_with_one_line(tmp_path, capsys, name):
    make, needle = BAD_VALUES[name]
    argv = make(tmp_path)
    if needle == "x":  # the directory's own name
        needle = tmp_path.name
    _expect_cli_error(capsys, argv, needle)
    if name in BEFORE_SCRIPT:
        assert not C.marker_ran(tmp_path), "refused only after the script's work"
    assert not list(tmp_path.rglob("*.tmp*"))


SUBPROCESS = [
    ["render", "gone.h5", "-o", "a.gif", "--fps", "0"],
    ["render", "gone.h5", "-o", "a.gif", "--scale", "nan"],
    ["reduce", "missing.msh", "-o", "b.npz"],
    ["info", "."],
    ["simulate", "gone.py", "-o", "/nonexistent/dir/run.h5"],
    ["compare-modes", str(BEAM), "--n-freq", "0"],
]


@pytest.mark.parametrize(
    "argv", SUBPROCESS, ids=[" ".join(a[:2]) + " " + a[-1] for a in SUBPROCESS]
)
def test_cli_process_exits_2_without_traceback(tmp_path, argv):
    out = subprocess.run(
        [sys.executable, "-m", "flexmbd.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


# -- helpers -------------------------------------------------------------------------------
def _expect_cli_error(capsys, argv, needle):
    capsys.readouterr()
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and "unexpected error" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert needle in lines[0], lines[0]


def _snapshot(path):
    path = Path(path)
    if path.is_file():
        return path.read_bytes()
    if path.is_dir():
        return sorted(p.name for p in path.iterdir())
    return None


def _mkdir(path):
    path.mkdir()
    return path


def _touch(path):
    path.write_text("a file")
    return path


def test_the_table_covers_at_least_ninety_cases():
    n = (
        len(_loader_cases())
        + len(_cli_loader_cases())
        + len(API_CASES)
        + len(BAD_VALUES)
        + len(SUBPROCESS)
    )
    assert n >= 90


def test_nu_zero_and_E_given_are_kept(tmp_path, capsys):
    """--nu 0 is a valid Poisson's ratio: the body gets nu = 0 (it was replaced by steel's
    0.3), and --E replaces the material's modulus."""
    from flexmbd.fem import ReducedBody

    out = tmp_path / "b.npz"
    assert (
        main(
            [
                "reduce",
                str(BEAM),
                "--strategy",
                "normal",
                "--modes",
                "2",
                "--nu",
                "0",
                "--E",
                "7e10",
                "--no-geometric",
                "--no-stress",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.strip().endswith(f"wrote {out}")
    np.testing.assert_array_equal(ReducedBody.load(out).material, [7e10, 0.0, 7850.0])


# -- help: plain text, a description per command, the script contract, the columns --------
COMMANDS = ("reduce", "compare-modes", "info", "simulate", "render", "probe-gl")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_plain_text_with_a_description(capsys, command):
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    for markup in ("``", ":func:", ":class:", ":mod:", ":meth:", "::"):
        assert markup not in text, (command, markup)
    description = text.split("\n\n")[1]  # after the usage block
    assert not description.startswith(("positional", "options")), command


def test_simulate_help_states_the_script_contract(capsys):
    main(["simulate", "--help"])
    text = capsys.readouterr().out
    for name in ("results", "model", "main()", "build()", "__main__", "--resume", "--overwrite"):
        assert name in text


def test_compare_modes_help_explains_every_column(capsys):
    pytest.importorskip("flexmbd.fem")
    main(["compare-modes", "--help"])
    text = capsys.readouterr().out
    for column in (
        "freq_err_max",
        "static_err",
        "trunc_load",
        "trunc_static",
        "transient_err",
        "time_s",
        "n_modes",
    ):
        assert f"\n  {column}" in text, column


def test_reduced_body_in_hdf5_is_written_and_described(tmp_path, capsys):
    """reduce -o body.h5 writes HDF5 (atomically, through a temporary .h5 file) and
    `flexmbd info` recognizes it as a reduced body."""
    from flexmbd.fem import ReducedBody

    out = tmp_path / "b.h5"
    assert (
        main(
            [
                "reduce",
                str(BEAM),
                "--strategy",
                "normal",
                "--modes",
                "2",
                "--no-geometric",
                "--no-stress",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert out.read_bytes()[:4] == b"\x89HDF" and ReducedBody.load(out).n_modes == 2
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    assert "2 modes" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.h5"]
