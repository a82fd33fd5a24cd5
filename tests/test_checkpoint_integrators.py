"""Checkpoint / resume of the real integrators, failures with partial results, progress.

Every run is interrupted (a ``BaseException``, as a killed process: nothing catches it)
between two checkpoints, resumed with ``fm.resume`` and compared bit for bit
(``np.array_equal``) with an uninterrupted run without checkpoint: coordinates,
speeds, accelerations, reactions, multipliers, energies, Newton statistics and every
extra. Timing statistics (``step_time``, ``cpu_time``, ``meta["wall_time"]``) are the
only columns allowed to differ.
"""

import numpy as np
import pytest
import skfem
from models import double_pendulum

import flexmbd as fm
import flexmbd.checkpoint as cpm
from flexmbd.checkpoint import read_checkpoint
from flexmbd.errors import ConvergenceError, FlexmbdError, SolverError
from flexmbd.results import Results

h5py = pytest.importorskip("h5py")

TIMING = {"step_time", "cpu_time"}


class Interrupted(BaseException):
    """A killed process (not an Exception: the integrators must not catch it)."""


class Kill:
    """Joint forces ``tau(t, q, qd) = 0`` that interrupt the run once, at ``t >= at``."""

    def __init__(self, at, nv):
        self.at, self.nv, self.armed = at, nv, True

    def __call__(self, t, q, qd):
        if self.armed and t >= self.at:
            self.armed = False
            raise Interrupted
        return np.zeros(self.nv)


def assert_same(a, b):
    """Bitwise equality of two Results (timing columns aside)."""
    for name in ("t", "q", "qd", "qdd", "reactions"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for group in ("energy", "stats", "extra"):
        da, db = getattr(a, group), getattr(b, group)
        assert da.keys() == db.keys(), group
        for k in da:
            if k in TIMING:
                assert da[k].shape == db[k].shape, k
                continue
            assert da[k].dtype == db[k].dtype, k
            assert np.array_equal(da[k], db[k], equal_nan=da[k].dtype.kind == "f"), (group, k)
    strip = lambda m: {k: v for k, v in m.items() if k != "wall_time"}
    assert strip(a.meta) == strip(b.meta)


# ---------------------------------------------------------------- models
def pendulum():
    """A spatial double pendulum (rigid tree, two revolutes; the elbow axis tilted)."""
    return double_pendulum(elbow_axis=(0.2, 0.3, 1.0))


def four_bar():
    """A planar four-bar (one cut joint; QR projection after every RK4 step)."""
    m = fm.Model("four_bar")
    m.crank = fm.RigidBody.rod(1.0, 1.0, origin="end", radius=0.01)
    m.coupler = fm.RigidBody.rod(1.0, 1.0, origin="end", radius=0.01)
    m.rocker = fm.RigidBody.rod(1.0, 1.0, origin="end", radius=0.01)
    m.j1 = fm.Revolute(m.ground, m.crank, q0=[np.pi / 3], qd0=[1.0])
    m.j2 = fm.Revolute(m.crank, m.coupler, parent_frame=(1.0, 0, 0), q0=[-np.pi / 3])
    m.j3 = fm.Revolute(m.ground, m.rocker, parent_frame=(1.0, 0, 0), q0=[np.pi / 3])
    m.j4 = fm.Revolute(m.coupler, m.rocker, parent_frame=(1.0, 0, 0), child_frame=(1.0, 0, 0))
    m.g = fm.Gravity((0, -9.81, 0))
    return m


_BEAM = {}


def beam():
    """A reduced steel beam 1.0 x 0.05 x 0.05 m (8 x 2 x 2 hexes), Craig-Bampton, 3 modes,
    interfaces A (x = 0) and B (x = 1)."""
    if "rb" not in _BEAM:
        mesh = skfem.MeshHex1.init_tensor(
            np.linspace(0, 1.0, 9), np.linspace(0, 0.05, 3), np.linspace(0, 0.05, 3)
        )
        end = lambda x: fm.fem.Plane((x, 0, 0), (1, 0, 0))
        strat = fm.CraigBampton(3, interfaces={"A": end(0.0), "B": end(1.0)}, frame="interface")
        _BEAM["rb"] = fm.fem.reduce(
            mesh, fm.Material(E=2.1e11, nu=0.3, rho=7850.0), strat, name="beam"
        )
    return _BEAM["rb"]


def flexible_pendulum():
    """A flexible beam on a revolute with a rigid tip mass, under gravity."""
    m = fm.Model("flexible_pendulum")
    m.beam = fm.FlexibleBody(beam(), geometric_stiffening=False)
    m.hinge = fm.Revolute(
        m.ground, m.beam, axis=(0, 0, 1), child_frame=m.beam.interface("A"), q0=[-0.3]
    )
    m.tip = fm.RigidBody(2.0, (0.01, 0.02, 0.03), com=(0.1, 0, 0))
    m.weld = fm.Fixed(m.beam, m.tip, parent_frame=m.beam.interface("B"))
    m.g = fm.Gravity((0, -9.81, 0))
    return m


def interrupted(build, path, every, t_kill, nv, **sim):
    """Run ``build()`` with a checkpoint until a :class:`Kill` at ``t_kill``."""
    with pytest.raises(Interrupted):
        build().simulate(checkpoint=path, every=every, tau=Kill(t_kill, nv), **sim)


# ---------------------------------------------------------------- bit-identical resume
def test_rigid_tree_rk4_resume_is_bit_identical(tmp_path):
    sim = dict(t_end=0.5, dt=1e-3, integrator="rk4")
    nv = 2
    ref = pendulum().simulate(tau=Kill(np.inf, nv), **sim)
    path = tmp_path / "run.h5"
    interrupted(pendulum, path, 40, 0.2371, 2, **sim)
    rows, state, attrs = read_checkpoint(path)
    assert attrs["status"] == "running" and attrs["n_steps"] == 200 and len(rows) == 201
    part = Results.load(path)  # a running file: the rows of the last checkpoint
    assert len(part) == 201 and np.isnan(part.qdd).all() and np.array_equal(part.q, ref.q[:201])
    res = fm.resume(path)  # the live run of this process
    assert_same(res, ref)
    assert Results.load(path).equals(res)  # the file holds the finalized results
    assert read_checkpoint(path)[2]["status"] == "finished"
    assert res.body("lower").position.shape == (501, 3)  # poses on request, as simulate


def test_uninterrupted_checkpointed_runs_equal_plain_runs(tmp_path):
    for i, sim in enumerate(
        [
            dict(t_end=0.3, dt=1e-3, integrator="rk4"),
            dict(t_end=0.3, dt=0.01, integrator="rk45"),
            dict(t_end=0.3, dt=1e-3, integrator="generalized-alpha"),
            dict(t_end=0.1, dt=1e-3, integrator="hht", form="force"),
            dict(t_end=0.2, dt=1e-3, integrator="newmark"),
        ]
    ):
        ref = pendulum().simulate(**sim)
        res = pendulum().simulate(checkpoint=tmp_path / f"r{i}.h5", every=7, **sim)
        assert_same(res, ref)


def test_rigid_tree_rk45_resume_rebuilds_the_model(tmp_path):
    """Adaptive steps (step size, FSAL derivative, dense output) continue exactly, in a
    'new process': the live run is forgotten and the model built again."""
    sim = dict(t_end=1.0, dt=0.01, integrator="rk45", rtol=1e-9, atol=1e-11)
    ref = pendulum().simulate(tau=Kill(np.inf, 2), **sim)
    path = tmp_path / "run.h5"
    interrupted(pendulum, path, 30, 0.655, 2, **sim)
    cpm._LIVE.clear()
    with pytest.raises(FlexmbdError, match="model=m"):
        fm.resume(path)
    with pytest.raises(FlexmbdError, match="tau"):
        fm.resume(path, model=pendulum())  # the function must be given again
    with pytest.raises(FlexmbdError, match="coordinates differ"):
        fm.resume(path, model=four_bar(), tau=Kill(np.inf, 2))
    with pytest.raises(FlexmbdError, match="cannot change its end"):
        fm.resume(path, model=pendulum(), tau=Kill(np.inf, 2), t_end=2.0)
    res = fm.resume(path, model=pendulum(), tau=Kill(np.inf, 2))
    assert_same(res, ref)
    assert res.meta["steps"] == ref.meta["steps"] > 60


def test_closed_loop_rk4_with_projection_resume(tmp_path):
    sim = dict(t_end=0.3, dt=1e-3, integrator="rk4")
    ref = four_bar().simulate(tau=Kill(np.inf, 3), **sim)
    assert ref.meta["cut_joints"] == ["j4"] and ref.stats["position_violation"].max() < 1e-12
    path = tmp_path / "loop.h5"
    interrupted(four_bar, path, 25, 0.1304, 3, **sim)
    state = read_checkpoint(path)[1]
    assert "projector" in state["system"] and state["system"]["projector"]["regular_rank"] == 2
    cpm._LIVE.clear()
    res = fm.resume(path, model=four_bar(), tau=Kill(np.inf, 3))
    assert_same(res, ref)


def test_closed_loop_rk45_resume(tmp_path):
    sim = dict(t_end=0.3, dt=0.01, integrator="rk45")
    ref = four_bar().simulate(tau=Kill(np.inf, 3), **sim)
    path = tmp_path / "loop45.h5"
    interrupted(four_bar, path, 8, 0.187, 3, **sim)
    assert_same(fm.resume(path), ref)


def _interrupt_third_engine_run(monkeypatch):
    """Make the third call of ``Engine.run`` (the third block of steps) raise
    ``Interrupted``; returns the real ``Engine.run``."""
    from flexmbd.absolute.engine import Engine

    calls = {"n": 0}
    real = Engine.run

    def killing_run(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise Interrupted
        return real(self, *a, **kw)

    monkeypatch.setattr(Engine, "run", killing_run)
    return real


def test_generalized_alpha_engine_resume_and_extension(tmp_path, monkeypatch):
    """The compiled engine runs in blocks of ``every`` steps: same bits as one block, and
    an interrupted run (killed at the start of the third block) resumes exactly; a
    finished run extends to a later end as if it had run there directly."""
    from flexmbd.absolute.engine import Engine

    sim = dict(dt=1e-3, integrator="generalized-alpha")
    ref = pendulum().simulate(t_end=0.2, **sim)
    assert ref.energy and "numerical_dissipation" in ref.energy
    path = tmp_path / "ga.h5"
    real = _interrupt_third_engine_run(monkeypatch)
    with pytest.raises(Interrupted):
        pendulum().simulate(t_end=0.2, checkpoint=path, every=30, **sim)
    monkeypatch.setattr(Engine, "run", real)
    assert read_checkpoint(path)[2]["n_steps"] == 60
    assert read_checkpoint(path)[1]["mode"] == "compiled"
    res = fm.resume(path)
    assert_same(res, ref)
    longer = pendulum().simulate(t_end=0.35, **sim)
    cpm._LIVE.clear()
    assert_same(fm.resume(path, model=pendulum(), t_end=0.35), longer)


def test_generalized_alpha_generic_path_resume(tmp_path):
    """The sparse Newton path (QR row selection, energy integrals) with a callback that
    interrupts the run between two checkpoints."""
    sim = dict(t_end=0.1, dt=1e-3, integrator="generalized-alpha", engine=False)
    ref = pendulum().simulate(callback=lambda t, q, qd: None, **sim)
    assert ref.stats["newton_iterations"][1:].min() >= 1
    path = tmp_path / "generic.h5"

    def kill(t, q, qd):
        if abs(t - 0.047) < 5e-4:
            raise Interrupted

    with pytest.raises(Interrupted):
        pendulum().simulate(checkpoint=path, every=20, callback=kill, **sim)
    state = read_checkpoint(path)[1]
    assert state["mode"] == "generic" and "energy" in state
    cpm._LIVE.clear()
    res = fm.resume(path, model=pendulum(), callback=lambda t, q, qd: None)
    assert_same(res, ref)


def test_flexible_body_recursive_and_absolute_resume(tmp_path, monkeypatch):
    # recursive formulation, adaptive steps resolving the modes
    # (hinge angle + 9 Craig-Bampton modes: 3 fixed-interface, 6 constraint modes of B)
    sim = dict(t_end=0.02, dt=1e-3, integrator="rk45")
    ref = flexible_pendulum().simulate(tau=Kill(np.inf, 10), **sim)
    assert ref.body("beam").modal.shape == (21, 9) and np.ptp(ref.body("beam").modal) > 0
    path = tmp_path / "flex_rec.h5"
    interrupted(flexible_pendulum, path, 6, 0.0133, 10, **sim)
    assert_same(fm.resume(path), ref)
    # absolute formulation, generalized-alpha in the compiled engine
    from flexmbd.absolute.engine import Engine

    sim = dict(t_end=0.06, dt=1e-3, integrator="generalized-alpha")
    ref = flexible_pendulum().simulate(**sim)
    assert "B" in ref.body("beam").interfaces and ref.energy["spring"].max() > 0
    real, calls = Engine.run, {"n": 0}

    def killing_run(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 4:
            raise Interrupted
        return real(self, *a, **kw)

    path = tmp_path / "flex_abs.h5"
    monkeypatch.setattr(Engine, "run", killing_run)
    with pytest.raises(Interrupted):
        flexible_pendulum().simulate(checkpoint=path, every=11, **sim)
    monkeypatch.setattr(Engine, "run", real)
    cpm._LIVE.clear()
    assert_same(fm.resume(path, model=flexible_pendulum()), ref)


# ---------------------------------------------------------------- failures
def test_force_turning_nan_keeps_partial_results_in_the_file(tmp_path):
    def tau(t, q, qd):
        return np.full(2, np.nan) if t > 0.1205 else np.zeros(2)

    path = tmp_path / "nan.h5"
    with pytest.raises(SolverError) as info:
        pendulum().simulate(0.5, dt=1e-3, integrator="rk4", tau=tau, checkpoint=path, every=50)
    err = info.value
    # the step from 0.120 s to 0.121 s fails (err.time: the time it could not reach)
    assert err.time == pytest.approx(0.121) and err.partial.t[-1] == pytest.approx(0.120)
    assert str(path) in str(err)
    assert np.isfinite(err.partial.qdd).all() and np.isfinite(err.partial.reactions).all()
    on_disk = Results.load(path)
    assert on_disk.equals(err.partial) and len(on_disk) == 121
    _, state, attrs = read_checkpoint(path)
    assert attrs["status"] == "failed" and attrs["n_steps"] == 100  # last good checkpoint
    assert np.isfinite(state["y"]).all()
    # the same failure without a checkpoint
    with pytest.raises(SolverError) as info:
        pendulum().simulate(0.5, dt=1e-3, integrator="rk4", tau=tau)
    assert_same(info.value.partial, err.partial)


def test_newton_divergence_with_a_too_large_step(tmp_path):
    path = tmp_path / "newton.h5"
    with pytest.raises(ConvergenceError, match="Newton did not converge") as info:
        pendulum().simulate(
            2.0, dt=0.25, integrator="newmark", max_iter=3, checkpoint=path, every=2
        )
    err = info.value
    # the failed step was to reach err.time; the partial results end one step before
    assert err.partial.t[-1] == pytest.approx(err.time - 0.25) and len(err.partial) >= 1
    assert Results.load(path).equals(err.partial)
    assert read_checkpoint(path)[2]["status"] == "failed"


def test_explicit_step_beyond_the_stability_limit_fails_cleanly(tmp_path):
    path = tmp_path / "unstable.h5"
    # which failure is met first (a non-finite state, or a mass block that is no longer
    # positive definite) depends on round-off; what matters is the class, the partial
    # results and the advice
    with pytest.warns(UserWarning, match="stability limit"):
        with pytest.raises(SolverError) as info:
            flexible_pendulum().simulate(0.5, dt=2e-3, integrator="rk4", checkpoint=path, every=10)
    err = info.value
    # whichever check stops it first (the runaway check, a non-finite state, a singular
    # matrix), the error advises a smaller step and keeps the results so far
    assert "reduce" in str(err) and "step" in str(err)
    # (the runaway check stops it at the second step: 3e6 m of elastic displacement)
    assert err.partial.t[-1] == pytest.approx(err.time - 2e-3) and len(err.partial) >= 2
    assert np.isfinite(err.partial.q).all()
    assert Results.load(path).equals(err.partial)


def test_singular_system_names_the_body_and_the_joint(tmp_path):
    """A point mass on a spherical joint: its rotations have no inertia."""

    def point_on_ball():
        m = fm.Model("singular")
        m.dot = fm.RigidBody(1.0, (0.0, 0.0, 0.0))
        m.ball = fm.Spherical(m.ground, m.dot)
        m.g = fm.Gravity((0, -9.81, 0))
        return m

    # the recursive formulation inverts every body inertia: refused when compiling
    with pytest.raises(fm.ModelError, match="rigid body 'dot'.*singular"):
        point_on_ball().simulate(0.1, dt=1e-3, integrator="rk4")
    # the absolute formulation meets a singular system at the initial state
    path = tmp_path / "singular.h5"
    with pytest.raises(
        SolverError,
        match=r"'dot' can move \(dot.e1, dot.e2, dot.e3\).*"
        r"joint\(s\) 'ball'.*point mass",
    ) as info:
        point_on_ball().simulate(0.1, dt=1e-3, integrator="generalized-alpha", checkpoint=path)
    err = info.value
    assert err.time == 0.0 and len(err.partial) == 1 and str(path) in str(err)
    assert np.isnan(err.partial.qdd).all() and err.partial.system is not None
    assert Results.load(path).equals(err.partial)


# ---------------------------------------------------------------- progress
def test_progress_bar_is_shown_on_request_and_silenced_by_the_environment(monkeypatch, capsys):
    pytest.importorskip("tqdm")
    monkeypatch.setenv("FLEXMBD_PROGRESS", "1")
    pendulum().simulate(0.2, dt=1e-3, integrator="generalized-alpha")
    err = capsys.readouterr().err
    assert "generalized-alpha double_pendulum" in err and "100 %" in err
    monkeypatch.setenv("FLEXMBD_PROGRESS", "0")
    pendulum().simulate(0.2, dt=1e-3, integrator="rk4")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("integrator", ["hht", "newmark"])
def test_absolute_closed_loop_resume_in_a_new_process(tmp_path, integrator):
    """HHT (its memory of the previous step's forces) and Newmark on the four-bar in the
    absolute formulation, interrupted by a callback between two checkpoints."""
    sim = dict(t_end=0.12, dt=1e-3, integrator=integrator, formulation="absolute")
    ref = four_bar().simulate(callback=lambda t, q, qd: None, **sim)
    path = tmp_path / f"{integrator}.h5"

    def kill(t, q, qd):
        if abs(t - 0.071) < 5e-4:
            raise Interrupted

    with pytest.raises(Interrupted):
        four_bar().simulate(checkpoint=path, every=16, callback=kill, **sim)
    assert read_checkpoint(path)[2]["n_steps"] == 64
    cpm._LIVE.clear()
    assert_same(fm.resume(path, model=four_bar(), callback=lambda t, q, qd: None), ref)


def test_flagship_flexible_loop_with_stiffening_resumes(tmp_path):
    """The flagship's flexible slider-crank (meshed rod, mean axes, geometric stiffening:
    lagged interface loads in the state; a driver; a cut joint), Newton in the compiled
    engine, interrupted between two checkpoints and resumed in a 'new process'."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "flagship", Path(__file__).resolve().parents[1] / "examples" / "flagship.py"
    )
    flag = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flag)
    sim = dict(t_end=0.004, dt=5e-5, integrator="generalized-alpha", rho_inf=0.9)
    ref = flag.build().simulate(callback=lambda t, q, qd: None, **sim)
    assert np.ptp(ref.body("rod").modal) > 0

    def kill(t, q, qd):
        if abs(t - 0.00262) < 2e-5:
            raise Interrupted

    path = tmp_path / "flagship.h5"
    with pytest.raises(Interrupted):
        flag.build().simulate(checkpoint=path, every=25, callback=kill, **sim)
    _, state, attrs = read_checkpoint(path)
    assert attrs["n_steps"] == 50 and state["mode"] == "engine"
    cpm._LIVE.clear()
    assert_same(fm.resume(path, model=flag.build(), callback=lambda t, q, qd: None), ref)


def test_flagship_compiled_loop_with_stiffening_resumes_bit_identical(tmp_path, monkeypatch):
    """The flagship in the compiled step loop (lagged interface loads updated inside
    ``Engine.run``, stored to the bodies after each block): an interrupted checkpointed run
    resumes to the same bits as the uninterrupted run, which agrees with the per-step path
    (interface loads from ``update_interface_loads`` in Python, forced by a callback) to
    round-off."""
    import importlib.util
    from pathlib import Path

    from flexmbd.absolute.engine import Engine

    spec = importlib.util.spec_from_file_location(
        "flagship", Path(__file__).resolve().parents[1] / "examples" / "flagship.py"
    )
    flag = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flag)
    sim = dict(t_end=0.004, dt=5e-5, integrator="generalized-alpha", rho_inf=0.9)
    ref = flag.build().simulate(**sim)
    steps = flag.build().simulate(callback=lambda t, q, qd: None, **sim)
    assert np.abs(ref.q - steps.q).max() <= 1e-11
    modal = ref.body("rod").modal
    assert np.abs(modal - steps.body("rod").modal).max() <= 1e-9 * np.abs(modal).max()
    path = tmp_path / "flagship_compiled.h5"
    real = _interrupt_third_engine_run(monkeypatch)
    with pytest.raises(Interrupted):
        flag.build().simulate(checkpoint=path, every=25, **sim)
    monkeypatch.setattr(Engine, "run", real)
    _, state, attrs = read_checkpoint(path)
    assert attrs["n_steps"] == 50 and state["mode"] == "compiled"
    cpm._LIVE.clear()
    assert_same(fm.resume(path, model=flag.build()), ref)
