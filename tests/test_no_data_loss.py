"""Nothing the user has is lost: checkpoints shared by two processes, re-runs without
resume, writes into bad places, interrupted writes, resumes with another model."""

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from models import Oscillator, pendulum

from flexmbd.checkpoint import read_checkpoint, resume, run
from flexmbd.cli import main
from flexmbd.errors import FileError, ModelError
from flexmbd.results import Results

h5py = pytest.importorskip("h5py")
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# a process that checkpoints a slow oscillator run (each step waits) and signals when
# its first checkpoint is on disk; it finishes once the file "go" exists
HOLDER = textwrap.dedent("""
    import sys, time, pathlib
    from flexmbd.checkpoint import run
    sys.path.insert(0, sys.argv[4])
    from models import Oscillator

    cp, go, started = (pathlib.Path(a) for a in sys.argv[1:4])

    class Slow(Oscillator):
        def step(self):
            if self.t > 0.05:
                started.write_text("yes")
                while not go.exists():
                    time.sleep(0.02)
            super().step()

    res = run(Slow(), 0.5, checkpoint=cp, every=2)
    print(len(res))
""")


def _digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def holder(tmp_path):
    """A second process running a checkpointed :class:`Oscillator` (``HOLDER``), stopped
    after its first checkpoint: ``(process, checkpoint path, go file)``; always ended."""
    cp, go, started = tmp_path / "shared.h5", tmp_path / "go", tmp_path / "started"
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(cp), str(go), str(started), str(TESTS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLEXMBD_PROGRESS": "0"},
    )
    try:
        deadline = time.time() + 120
        while not started.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.time() < deadline, "the first process did not start"
            time.sleep(0.05)
        yield proc, cp, go
    finally:
        if proc.poll() is None:
            go.write_text("go")
            try:
                proc.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


@pytest.fixture
def saved(tmp_path):
    """A finished checkpointed oscillator run: ``(checkpoint path, its sha256)``."""
    cp = tmp_path / "run.h5"
    run(Oscillator(), 0.3, checkpoint=cp, every=5)
    return cp, _digest(cp)


def test_a_second_process_cannot_touch_the_first_ones_checkpoint(holder):
    proc, cp, go = holder
    before = _digest(cp)
    for overwrite in (False, True):
        with pytest.raises(FileError, match="in use by another run") as info:
            run(Oscillator(), 0.2, checkpoint=cp, every=5, overwrite=overwrite)
        assert str(proc.pid) in str(info.value)  # names the holder
    with pytest.raises(FileError, match="in use"):
        resume(cp, Oscillator())
    assert _digest(cp) == before  # not even opened for writing
    go.write_text("go")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err  # the first run finished
    res = Results.load(cp)
    assert int(out) == len(res) == 51 and res.t[-1] == pytest.approx(0.5)
    assert read_checkpoint(cp)[2]["status"] == "finished"
    assert not (cp.parent / "shared.h5.lock").exists()  # released on exit


def test_a_killed_run_leaves_no_lock_that_blocks_its_resume(holder):
    proc, cp, _ = holder
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert (cp.parent / "shared.h5.lock").exists()  # the stale lock file...
    saved = read_checkpoint(cp)[2]["n_steps"]
    res = resume(cp, Oscillator(), t_end=0.5)  # ...is taken over
    assert res.t[-1] == pytest.approx(0.5) and saved >= 4
    ref = run(Oscillator(), 0.5)
    np.testing.assert_array_equal(res.q, ref.q)  # and the resume is exact


def test_rerunning_without_resume_keeps_the_saved_work(saved):
    cp, before = saved
    with pytest.raises(FileError) as info:
        run(Oscillator(), 0.3, checkpoint=cp, every=5)
    msg = str(info.value)
    assert "run.h5" in msg and "resume" in msg and "overwrite=True" in msg
    assert _digest(cp) == before
    # overwrite=True replaces it, and only with a complete new file
    res = run(Oscillator(x=2.0), 0.3, checkpoint=cp, every=5, overwrite=True)
    assert Results.load(cp).equals(res) and res.q[0, 0] == 2.0


def test_an_overwrite_that_fails_before_its_first_checkpoint_keeps_the_old_file(saved, tmp_path):
    class BadState(Oscillator):
        def state_dict(self):
            raise RuntimeError("state not serializable")

    cp, before = saved
    with pytest.raises(RuntimeError):
        run(BadState(), 0.3, checkpoint=cp, every=5, overwrite=True)
    assert _digest(cp) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]  # no temp, no lock


def test_results_save_replaces_a_file_only_with_a_complete_one(tmp_path, monkeypatch):
    import flexmbd.results as R

    t = np.linspace(0, 1, 5)
    res = Results(t, t[:, None], t[:, None], coordinates=[("j", "a")], speeds=[("j", "r")])
    for name in ("old.h5", "old.npz"):
        path = res.save(tmp_path / name)
        before = _digest(path)

        def broken(*a, **k):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(R, "h5_write", broken)
        monkeypatch.setattr(R.np, "savez", broken)
        with pytest.raises(FileError, match=name):
            res.take(slice(0, 2)).save(path)
        monkeypatch.undo()
        assert _digest(path) == before and Results.load(path).equals(res)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.h5", "old.npz"]


def test_simulate_into_a_missing_directory_fails_before_the_work(tmp_path, capsys):
    script = tmp_path / "model.py"
    marker = tmp_path / "ran"
    script.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n")
    assert main(["simulate", str(script), "-o", "/nonexistent/dir/run.h5", "--t-end", "1"]) == 2
    err = capsys.readouterr().err
    assert "/nonexistent/dir" in err and "does not exist" in err and not marker.exists()


@pytest.mark.skipif(
    os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only directories"
)
def test_read_only_directory_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        t = np.zeros(2)
        with pytest.raises(FileError, match="not writable"):
            Results(t, t[:, None], t[:, None]).save(ro / "r.h5")
        with pytest.raises(FileError, match="not writable"):
            run(Oscillator(), 0.1, checkpoint=ro / "cp.h5")
    finally:
        ro.chmod(0o700)


def test_cli_rerun_with_the_same_checkpoint_refuses_then_resumes(tmp_path, capsys):
    script = tmp_path / "pendulum.py"
    script.write_text(
        textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        from models import pendulum as build
    """)
    )
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
    before = _digest(cp)
    capsys.readouterr()
    assert (
        main(
            [
                "simulate",
                str(script),
                "-o",
                str(tmp_path / "b.npz"),
                "--t-end",
                "0.4",
                "--checkpoint",
                str(cp),
                *common,
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--resume" in err and "--overwrite" in err and _digest(cp) == before
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
    assert Results.load(tmp_path / "b.npz").t[-1] == pytest.approx(0.4)


def test_resume_with_other_parameters_is_refused_unless_allowed(tmp_path):
    build = pendulum

    cp = tmp_path / "run.h5"
    build(1.0).simulate(0.1, dt=0.01, integrator="rk4", checkpoint=cp, every=3)
    before = _digest(cp)
    with pytest.raises(ModelError, match="link.mass") as info:
        resume(cp, model=build(3.0), t_end=0.2)
    assert "allow_model_change=True" in str(info.value) and _digest(cp) == before
    same = resume(cp, model=build(1.0), t_end=0.2)  # the same model: accepted
    ref = build(1.0).simulate(0.2, dt=0.01, integrator="rk4")
    np.testing.assert_array_equal(same.q, ref.q)
    # explicitly allowed: continues with the new model, whose energies are recomputed
    cp2 = tmp_path / "run2.h5"
    build(1.0).simulate(0.1, dt=0.01, integrator="rk4", checkpoint=cp2, every=3)
    other = resume(cp2, model=build(3.0), t_end=0.2, allow_model_change=True)
    assert other.t[-1] == pytest.approx(0.2)
    np.testing.assert_allclose(
        other.energy["kinetic"][1:4] / ref.energy["kinetic"][1:4], 3.0, rtol=1e-12
    )
