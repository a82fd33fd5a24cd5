"""Checkpoint / resume with a toy integrator, failures with partial results, progress bars.

The toy (an adaptive embedded Runge-Kutta integrator of a randomly forced Duffing
oscillator) has every kind of state a real integrator carries: coordinates, an
adaptive step size, FSAL derivative memory, counters and a random generator.
Resuming must reproduce an uninterrupted run bit for bit.
"""

import io
import os

import numpy as np
import pytest

from flexmbd.checkpoint import load_state, read_checkpoint, resume, run, save_state
from flexmbd.errors import SolverError
from flexmbd.progress import NullBar, progress, progress_enabled
from flexmbd.results import Results

h5py = pytest.importorskip("h5py")


class Toy:
    """x'' + c x' + k x + a x^3 = f(t) with piecewise random forcing; Bogacki-Shampine 3(2)."""

    def __init__(self, seed=0, k=40.0, c=0.3, a=5.0, tol=1e-6, blow_up_at=None):
        self.k, self.c, self.a, self.tol = k, c, a, tol
        self.blow_up_at = blow_up_at
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.t = 0.0
        self.y = np.array([1.0, 0.0])
        self.h = 1e-3
        self.force = self.rng.normal()
        self.fsal = None
        self.n_rejected = 0

    def f(self, t, y):
        return np.array([y[1], self.force - self.c * y[1] - self.k * y[0] - self.a * y[0] ** 3])

    def step(self):
        if self.blow_up_at is not None and self.t >= self.blow_up_at:
            self.y = self.y * np.nan  # a diverging step
        while True:
            h, t, y = self.h, self.t, self.y
            k1 = self.fsal if self.fsal is not None else self.f(t, y)
            k2 = self.f(t + h / 2, y + h / 2 * k1)
            k3 = self.f(t + 3 * h / 4, y + 3 * h / 4 * k2)
            y3 = y + h * (2 * k1 + 3 * k2 + 4 * k3) / 9
            k4 = self.f(t + h, y3)
            err = np.max(np.abs(h * (-5 * k1 / 72 + k2 / 12 + k3 / 9 - k4 / 8)))
            fac = 0.9 * (self.tol / max(err, 1e-300)) ** (1 / 3)
            self.h = h * min(3.0, max(0.2, fac))
            if err <= self.tol or not np.isfinite(err):
                break
            self.n_rejected += 1
        self.t, self.y, self.fsal = t + h, y3, k4
        if self.rng.random() < 0.05:  # forcing jumps at random
            self.force = self.rng.normal()
            self.fsal = None

    def sample(self):
        x, v = self.y
        return {
            "q": self.y[:1],
            "qd": self.y[1:],
            "qdd": self.f(self.t, self.y)[1:],
            "energy:total": 0.5 * v * v + 0.5 * self.k * x * x + 0.25 * self.a * x**4,
            "stats:rejected": np.int64(self.n_rejected),
            "extra:force": self.force,
        }

    def header(self):
        return {
            "coordinates": [("x", "x")],
            "speeds": [("x", "v")],
            "joint_names": [],
            "meta": {"model": "duffing", "integrator": "bs23"},
        }

    def state_dict(self):
        return {
            "t": self.t,
            "y": self.y.copy(),
            "h": self.h,
            "force": self.force,
            "fsal": self.fsal,
            "n_rejected": self.n_rejected,
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, s):
        self.t, self.y, self.h, self.force = s["t"], np.array(s["y"]), s["h"], s["force"]
        self.fsal = None if s["fsal"] is None else np.array(s["fsal"])
        self.n_rejected = s["n_rejected"]
        self.rng.bit_generator.state = s["rng"]

    def spec(self):
        return {"factory": "test_checkpoint:Toy", "kwargs": {"seed": self.seed}}


class Interrupted(BaseException):
    """Simulates a killed process (not an Exception: run() must not catch it)."""


class Killer(Toy):
    def __init__(self, kill_after, **kw):
        super().__init__(**kw)
        self.kill_after, self.n = kill_after, 0

    def step(self):
        self.n += 1
        if self.n > self.kill_after:
            raise Interrupted
        super().step()


def test_uninterrupted_run_records_every_step():
    res = run(Toy(), 2.0)
    assert res.t[0] == 0.0 and res.t[-1] >= 2.0 - 1e-12
    assert len(res) > 100 and np.all(np.diff(res.t) > 0)
    assert res.stats["rejected"].dtype == np.int64 and res.extra["force"].shape == (len(res),)


def test_resume_is_bit_identical(tmp_path):
    ref = run(Toy(seed=3), 2.0)
    path = tmp_path / "run.h5"
    with pytest.raises(Interrupted):
        run(Killer(kill_after=333, seed=3), 2.0, checkpoint=path, every=50)
    partial, state, attrs = read_checkpoint(path)
    assert attrs["status"] == "running" and attrs["n_steps"] == 300
    assert len(partial) == 301
    with h5py.File(path, "r") as f:  # samples beyond the state are cut on resume
        assert f["t"].shape[0] == 301
    res = resume(path, Toy(seed=3))
    for name in ("t", "q", "qd", "qdd"):
        np.testing.assert_array_equal(getattr(res, name), getattr(ref, name))
    np.testing.assert_array_equal(res.energy["total"], ref.energy["total"])
    np.testing.assert_array_equal(res.stats["rejected"], ref.stats["rejected"])
    assert Results.load(path).equals(res)  # the file holds the whole run
    assert read_checkpoint(path)[2]["status"] == "finished"


def test_resume_rebuilds_the_integrator_from_its_spec_and_extends(tmp_path):
    ref = run(Toy(seed=5), 1.5)
    path = tmp_path / "run.h5"
    run(Toy(seed=5), 1.0, checkpoint=path, every=7)
    res = resume(path, t_end=1.5)  # no stepper: spec() rebuilds it
    np.testing.assert_array_equal(res.t, ref.t)
    np.testing.assert_array_equal(res.q, ref.q)


def test_resume_with_sparse_recording(tmp_path):
    ref = run(Toy(seed=7), 1.0, record_every=4)
    path = tmp_path / "run.h5"
    with pytest.raises(Interrupted):
        run(Killer(kill_after=150, seed=7), 1.0, checkpoint=path, every=10, record_every=4)
    assert read_checkpoint(path)[2]["every"] == 12  # a multiple of record_every
    res = resume(path, Toy(seed=7))
    np.testing.assert_array_equal(res.t, ref.t)
    np.testing.assert_array_equal(res.qd, ref.qd)


def test_failure_raises_with_partial_results_and_writes_them(tmp_path):
    with pytest.raises(SolverError) as info:
        run(Toy(blow_up_at=0.5), 1.0)
    err = info.value
    assert "non-finite" in str(err) and 0.5 <= err.time < 0.6
    # err.time: the end of the step that failed; the partial results end at its start
    assert 0.5 <= err.partial.t[-1] < err.time and len(err.partial) > 10

    path = tmp_path / "fail.h5"
    with pytest.raises(SolverError) as info:
        run(Toy(blow_up_at=0.5), 1.0, checkpoint=path, every=20)
    on_disk = Results.load(path)
    assert on_disk.equals(info.value.partial)  # everything up to the failure
    _, state, attrs = read_checkpoint(path)
    assert attrs["status"] == "failed" and "non-finite" in attrs["error"]
    assert np.all(np.isfinite(state["y"])) and attrs["n_samples"] <= len(on_disk)


def test_exceptions_of_other_kinds_are_wrapped():
    class Broken(Toy):
        def step(self):
            if self.t > 0.1:
                raise np.linalg.LinAlgError("Singular matrix")
            super().step()

    with pytest.raises(SolverError, match="LinAlgError: Singular matrix") as info:
        run(Broken(), 1.0)
    assert isinstance(info.value.__cause__, np.linalg.LinAlgError)
    assert info.value.partial.t[-1] > 0.1


def test_nested_state_round_trip(tmp_path):
    state = {
        "a": 1,
        "b": 2.5,
        "c": np.arange(3.0),
        "d": {"e": "x", "f": None, "g": True},
        "rng": np.random.default_rng(1).bit_generator.state,
    }
    with h5py.File(tmp_path / "s.h5", "w") as f:
        save_state(f.create_group("s"), state)
    with h5py.File(tmp_path / "s.h5", "r") as f:
        back = load_state(f["s"])
    assert back["a"] == 1 and type(back["a"]) is int and back["b"] == 2.5
    assert back["d"] == {"e": "x", "f": None, "g": True}
    np.testing.assert_array_equal(back["c"], state["c"])
    g = np.random.default_rng(0)
    g.bit_generator.state = back["rng"]
    assert g.random() == np.random.default_rng(1).random()


def test_progress_is_quiet_by_default_and_can_be_forced(monkeypatch):
    monkeypatch.setenv("FLEXMBD_PROGRESS", "0")
    assert not progress_enabled()
    with progress(5, "x") as bar:
        assert isinstance(bar, NullBar)
        bar.update(5)
    monkeypatch.setenv("FLEXMBD_PROGRESS", "1")
    assert progress_enabled()
    pytest.importorskip("tqdm")
    out = io.StringIO()
    with progress(4, "steps", file=out) as bar:
        bar.update(4)
    assert "steps" in out.getvalue() and "4/4" in out.getvalue()
    monkeypatch.delenv("FLEXMBD_PROGRESS")
    assert progress_enabled() == os.isatty(2)
    assert progress_enabled(False) is False
