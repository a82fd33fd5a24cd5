"""The closed-loop examples with small settings (the full runs are marked slow)."""

import importlib.util
import io
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def quiet(f, *a, **kw):
    buf = io.StringIO()
    with redirect_stdout(buf):
        out = f(*a, **kw)
    return out, buf.getvalue()


def test_andrews_squeezer_matches_test_set_to_8_digits(tmp_path):
    mod = load("andrews_squeezer")
    (res, got, worst), text = quiet(mod.main, rtol=1e-9, atol=1e-11, outdir=tmp_path)
    assert worst >= 8.0, text
    assert "digits" in text and (tmp_path / "andrews_squeezer.png").exists()
    # 15 cut equations (3 spatial revolutes), 6 independent: 9 discarded all the time
    assert set(res.stats["rank"].tolist()) == {6}
    assert np.all(res.stats["discarded"].sum(axis=1) == 9)
    assert res.stats["position_violation"].max() < 1e-12
    # initial accelerations of the Test Set (consistent initial values)
    fd = res.meta and mod.build().compile("recursive").forward_dynamics(res.q[0], res.qd[0])
    np.testing.assert_allclose(
        fd.qdd[:2], [14222.4439199541138705911625887, -10666.8329399655854029433719415], rtol=1e-12
    )


def test_four_bar_through_singular_configuration(tmp_path):
    mod = load("four_bar")
    out, text = quiet(mod.main, t_end=0.6, outdir=tmp_path, spatial_t_end=0)
    w, wo = out[True], out[False]
    assert w["singular_samples"] > 0  # the singular window was crossed
    assert w["force_regular"] < 1e-8  # cut-joint multipliers vs 1-dof model
    assert w["force"] < 1e-6
    assert w["angle"] < 1e-10 and w["coupler"] < 1e-12
    # without the tangent projection the accelerations are distorted (Fig. 5)
    assert wo["acceleration"] > 1e3 * max(w["acceleration"], 1e-9)
    assert wo["force_regular"] > 1e-3
    assert (tmp_path / "four_bar_multipliers.png").exists()


def test_spatial_four_bar_with_universal_joints_against_eq_33():
    mod = load("four_bar")
    res = mod.simulate_spatial(0.03)  # one flat (singular) configuration
    e = mod.spatial_errors(res)
    assert e["coordinates"] < 1e-10  # eq. 33
    assert e["reaction_all"] < 1e-4  # analytic cut reaction, 7787.5 N
    assert e["drive_torque"] < 1e-6  # constant kinetic energy
    assert e["ranks"] == [3, 4, 5]  # 5 of 6 regular, 3 at the flat config
    assert max(e["redundant_cut"]) == 3  # "5 cut equations of which 3 redundant"
    assert e["position_violation"] < 1e-12


@pytest.mark.slow
def test_four_bar_ten_seconds():
    mod = load("four_bar")
    res = mod.simulate(10.0, 1e-3)
    e = mod.errors(res)
    assert e["force_regular"] < 1e-8
    assert e["angle"] < 1e-9


def test_bricard_mechanism_is_mobile_with_one_redundant_equation(tmp_path):
    mod = load("bricard")
    (res, drift), text = quiet(mod.main, t_end=0.6, dt=2e-3, outdir=tmp_path)
    assert set(res.stats["rank"].tolist()) == {4}  # 5 cut equations, rank 4
    assert set(res.stats["discarded"].sum(axis=1).tolist()) == {1}
    assert res.energy["kinetic"].max() > 1.0  # it moves (Grübler says 0 dof)
    assert drift < 1e-5  # energy conserved
    assert (tmp_path / "bricard.png").exists()


@pytest.mark.slow
def test_bricard_ten_seconds():
    mod = load("bricard")
    res = mod.simulate(10.0, 2e-3)
    E = res.energy["total"]
    assert np.abs(E - E[0]).max() < 1e-4
    assert res.stats["position_violation"].max() < 1e-12


def test_n_four_bar_through_singular_configurations():
    mod = load("n_four_bar")
    res = mod.simulate(N=4, t_end=1.1, dt=2e-3)
    e = mod.errors(res, 4)
    assert e["crossings"] >= 1  # passes the horizontal
    assert e["angle"] < 1e-8 and e["energy"] < 1e-5
    assert min(e["ranks"]) < 8 and max(e["ranks"]) == 8  # rank drops when horizontal
    # the N = 40 mechanism: 200 cut equations, 80 independent
    res40 = mod.simulate(N=40, t_end=0.02, dt=2e-3)
    e40 = mod.errors(res40, 40)
    assert e40["ranks"] == [80] and e40["discarded"] == [120] and e40["angle"] < 1e-10


@pytest.mark.slow
def test_n_four_bar_forty_twenty_seconds(tmp_path):
    mod = load("n_four_bar")
    (res, e), text = quiet(mod.main, N=40, t_end=20.0, dt=5e-3, outdir=tmp_path)
    assert e["crossings"] >= 4
    assert e["angle"] < 1e-5 and e["energy"] < 1e-3


def test_projection_study_table_and_plots(tmp_path):
    mod = load("projection_study")
    rows, text = quiet(mod.main, four_bar_t_end=0.1, andrews_t_end=0.0005, outdir=tmp_path)
    by = {(r["mechanism"], r["method"]): r for r in rows}
    for mech in ("four_bar", "andrews"):
        for method in ("qr", "moore-penrose"):
            assert by[mech, method]["position"] < 1e-13  # projected every step
        assert by[mech, "baumgarte"]["res"].meta["baumgarte_alpha"] == pytest.approx(
            1 / by[mech, "baumgarte"]["dt"]
        )  # alpha = 1/h, beta = sqrt(2)/h
        assert by[mech, "qr"]["velocity"] < 1e-11
    table = (tmp_path / "projection_study.md").read_text()
    assert table.count("| four_bar |") == 4 and table.count("| andrews |") == 4
    assert (tmp_path / "projection_study_four_bar.png").exists()
    assert (tmp_path / "projection_study_andrews.png").exists()
