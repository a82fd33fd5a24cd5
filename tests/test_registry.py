"""The integrator registry: names, aliases, formulation/integrator defaults and the checks
every ``simulate`` entry makes before any work (issue #12 item 3, issue #14)."""

import time

import numpy as np
import pytest
from models import double_pendulum, four_bar

import flexmbd as fm
from flexmbd.integrators import registry


@pytest.mark.parametrize(
    "name, canonical",
    [
        ("rk4", "rk4"),
        ("RK4", "rk4"),
        ("RK45", "rk45"),
        ("dopri5", "rk45"),
        ("DOP853", "dop853"),
        ("rk23", "rk23"),
        ("Newmark", "newmark"),
        ("HHT", "hht"),
        ("hht_alpha", "hht"),
        ("generalized-alpha", "generalized-alpha"),
        ("generalized_alpha", "generalized-alpha"),
        ("Gen-Alpha", "generalized-alpha"),
        ("genalpha", "generalized-alpha"),
        (" generalized alpha ", "generalized-alpha"),
    ],
)
def test_names_are_case_insensitive_with_aliases(name, canonical):
    assert registry.integrator(name).name == canonical


@pytest.mark.parametrize(
    "integrator, formulation, dt, expected",
    [
        (None, None, 1e-3, ("rk4", "recursive")),
        (None, None, None, ("rk45", "recursive")),
        (None, "absolute", 1e-3, ("generalized-alpha", "absolute")),
        (None, "Absolute", 1e-3, ("generalized-alpha", "absolute")),
        ("HHT", None, 1e-3, ("hht", "absolute")),
        ("newmark", "absolute", 1e-3, ("newmark", "absolute")),
        ("dop853", "recursive", None, ("dop853", "recursive")),
    ],
)
def test_integrator_and_formulation_follow_each_other(integrator, formulation, dt, expected):
    spec, form = registry.resolve(integrator, formulation, dt)
    assert (spec.name, form) == expected


def test_every_offered_pair_runs_the_double_pendulum():
    """Each (formulation, integrator) pair the registry offers runs the README's double
    pendulum, and all of them agree on the elbow's position after 0.2 s (the step errors of
    the implicit second-order schemes at dt = 1e-3 are ~1e-5 rad)."""
    pairs = registry.valid_pairs()
    assert len(pairs) == 7
    tips = {}
    for formulation, name in pairs:
        m = double_pendulum()
        res = m.simulate(0.2, dt=1e-3, integrator=name.upper(), formulation=formulation)
        assert res.t[-1] == pytest.approx(0.2)
        # the lower body's origin (the elbow) in world coordinates
        elbow = res.body("lower").position[-1]
        tips[(formulation, name)] = elbow
    ref = tips[("recursive", "dop853")]
    for key, p in tips.items():
        assert np.abs(p - ref).max() < 2e-4, key


def test_closed_loop_defaults_and_options():
    m = four_bar()
    res = m.simulate(0.05, dt=1e-3)  # recursive + cut joint, rk4
    assert res.t[-1] == pytest.approx(0.05)
    with pytest.raises(fm.ModelError, match="rho_inf.*valid options.*projection"):
        m.simulate(0.05, dt=1e-3, rho_inf=0.5)
    with pytest.raises(fm.ModelError, match="HHT|hht"):
        m.compile("recursive").simulate(0.05, dt=1e-3, integrator="HHT")


BAD_SIMULATE = [
    # (arguments, what the message must name)
    (dict(t_end=float("nan")), "t_end"),
    (dict(t_end=float("inf")), "t_end"),
    (dict(t_end=-1.0), "t_end"),
    (dict(t_end=0.0), "t_end"),
    (dict(t_end="1.0"), "t_end"),
    (dict(t_end=None), "t_end"),
    (dict(t_end=[1.0]), "t_end"),
    (dict(t_end=True), "t_end"),
    (dict(dt=0.0), "dt"),
    (dict(dt=-1e-3), "dt"),
    (dict(dt=float("nan")), "dt"),
    (dict(dt=float("inf")), "dt"),
    (dict(dt="1e-3"), "dt"),
    (dict(dt=5.0), "dt"),  # longer than the run
    (dict(dt=1e-300), "steps"),  # would never end
    (dict(dt=1e-300, integrator="generalized-alpha"), "steps"),
    (dict(dt=None, integrator="rk4"), "dt"),
    (dict(dt=None, integrator="newmark"), "dt"),
    (dict(every=0, checkpoint="x.h5"), "every"),
    (dict(every=-5), "every"),
    (dict(every=2.5), "every"),
    (dict(integrator="euler"), "euler"),
    (dict(integrator=""), "integrator"),
    (dict(integrator=4), "integrator"),
    (dict(integrator="newmark", formulation="recursive"), "newmark"),
    (dict(integrator="rk4", formulation="absolute"), "rk4"),
    (dict(integrator="dop853", formulation="absolute"), "dop853"),
    (dict(formulation="lagrange"), "lagrange"),
    (dict(formulation=3), "formulation"),
    (dict(rho_infty=0.5, integrator="generalized-alpha"), "rho_infty"),
    (dict(rho_inf=0.5, integrator="rk4"), "rho_inf"),
    (dict(substeps=2, integrator="newmark"), "substeps"),
    (dict(atol=1e-6, integrator="hht"), "atol"),
    (dict(tolerance=1e-6), "tolerance"),
    (dict(projection="rhs"), "projection"),  # tree: no loops to project
    (dict(t0=float("nan")), "t0"),
    (dict(t0=2.0), "t_end"),
]


@pytest.mark.parametrize(
    "kwargs, names", BAD_SIMULATE, ids=[str(sorted(k.items())) for k, _ in BAD_SIMULATE]
)
def test_bad_simulate_arguments_are_refused_before_any_work(kwargs, names, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = dict(t_end=0.1, dt=1e-3)
    args.update(kwargs)
    start = time.process_time()
    with pytest.raises(fm.ModelError, match=names):
        double_pendulum().simulate(**args)
    assert time.process_time() - start < 5.0
    assert not (tmp_path / "x.h5").exists()  # nothing written


def test_system_entry_points_check_too():
    m = double_pendulum()
    rec, ab = m.compile("recursive"), m.compile("absolute")
    with pytest.raises(fm.ModelError, match="rho_inf"):
        rec.simulate(0.1, dt=1e-3, rho_inf=0.5)
    with pytest.raises(fm.ModelError, match="substeps"):
        ab.simulate(0.1, dt=1e-3, substeps=2)
    with pytest.raises(fm.ModelError, match="dt"):
        ab.simulate(0.1, dt=1.0)
    with pytest.raises(fm.ModelError, match="rk4"):
        ab.simulate(0.1, dt=1e-3, integrator="rk4")
    res = ab.simulate(0.01, dt=1e-3)  # default: generalized-alpha
    assert res.meta["integrator"] == "generalized-alpha"
