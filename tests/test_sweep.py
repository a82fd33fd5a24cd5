"""Sweeps: case expansion, serial tables, errors, and the same table from a Dask cluster."""

import os
import sys

import numpy as np
import pytest

from flexmbd.errors import FlexmbdError
from flexmbd.results import Results
from flexmbd.sweep import cases, default_summary, sweep

pd = pytest.importorskip("pandas")


def oscillator(omega, zeta, t_end=2.0):
    """Closed-form free decay x = exp(-zeta omega t) cos(omega_d t) as Results."""
    t = np.linspace(0.0, t_end, 201)
    wd = omega * np.sqrt(1 - zeta**2)
    x = np.exp(-zeta * omega * t) * np.cos(wd * t)
    v = np.gradient(x, t)
    return Results(
        t,
        x[:, None],
        v[:, None],
        coordinates=[("spring", "x")],
        speeds=[("spring", "v")],
        joint_names=["spring"],
        reactions=np.zeros((len(t), 1, 6)) + x[:, None, None] * omega**2,
        energy={"total": 0.5 * v**2 + 0.5 * omega**2 * x**2},
    )


def peak_summary(res):
    return {"x_end": float(res.q[-1, 0]), "x_min": float(res.q[:, 0].min())}


def flaky(omega, zeta):
    if zeta > 0.5:
        raise ValueError("overdamped case not supported")
    return oscillator(omega, zeta)


def modes_study(n):
    """A factory that returns metrics directly (no time simulation)."""
    return {"f_sum": float(sum(range(1, n + 1)))}


def pendulum(length, mass):
    """A real flexmbd model: a rod pendulum released at 0.5 rad."""
    import flexmbd as fm

    m = fm.Model("pendulum")
    m.rod = fm.RigidBody.rod(mass, length, origin="end", radius=0.01)
    m.hinge = fm.Revolute(m.ground, m.rod, axis=(0, 0, 1), q0=[0.5])
    m.g = fm.Gravity((0, -9.81, 0))
    return m


PENDULUM_RUN = {"t_end": 0.3, "dt": 1e-3, "integrator": "rk4"}


def test_case_expansion():
    assert cases({"a": [1, 2], "b": ["x", "y"], "c": 3}) == [
        {"a": 1, "b": "x", "c": 3},
        {"a": 1, "b": "y", "c": 3},
        {"a": 2, "b": "x", "c": 3},
        {"a": 2, "b": "y", "c": 3},
    ]
    assert cases([{"a": 1}, {"a": 5}]) == [{"a": 1}, {"a": 5}]
    assert cases(pd.DataFrame({"a": [1, 2], "b": [3.0, 4.0]})) == [
        {"a": 1, "b": 3.0},
        {"a": 2, "b": 4.0},
    ]
    with pytest.raises(FlexmbdError, match="dict of value lists"):
        cases([1, 2])


def test_serial_sweep_table():
    grid = {"omega": [2.0, 5.0, 9.0], "zeta": [0.0, 0.1]}
    table, results = sweep(oscillator, grid, keep_results=True)
    assert len(table) == 6 and list(table[["omega", "zeta"]].iloc[1]) == [2.0, 0.1]
    for (_, row), res in zip(table.iterrows(), results):
        wd = row.omega * np.sqrt(1 - row.zeta**2)
        assert row["q:spring:x"] == pytest.approx(
            np.exp(-row.zeta * row.omega * 2) * np.cos(wd * 2), abs=1e-12
        )
        assert row["max_force:spring"] == pytest.approx(np.sqrt(3) * row.omega**2)
        assert res.meta == {} and len(res) == 201
    assert (table["wall_time"] >= 0).all()
    custom = sweep(oscillator, grid, summarize=peak_summary)
    assert list(custom.columns) == ["omega", "zeta", "x_end", "x_min", "wall_time"]
    assert set(default_summary(results[0])) >= {"t_end", "n_samples", "energy:total"}


def test_dict_factories_and_errors():
    assert list(sweep(modes_study, {"n": [2, 4]})["f_sum"]) == [3.0, 10.0]
    with pytest.raises(FlexmbdError, match="'zeta': 0.9.*overdamped"):
        sweep(flaky, {"omega": [1.0], "zeta": [0.1, 0.9]})
    table = sweep(flaky, {"omega": [1.0], "zeta": [0.1, 0.9, 0.2]}, errors="record")
    assert table["error"].isna().tolist() == [True, False, True]
    assert "overdamped" in table["error"][1] and np.isnan(table["q:spring:x"][1])


def test_dask_cluster_gives_the_serial_table():
    """Two worker *processes* (as on a real cluster): the factories travel by value
    (this test module is not importable in the workers) and flexmbd is imported there."""
    distributed = pytest.importorskip("distributed")
    cloudpickle = pytest.importorskip("cloudpickle")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    grid = {"omega": [2.0, 5.0, 9.0], "zeta": [0.0, 0.2]}
    serial = sweep(oscillator, grid, summarize=peak_summary)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        assert len(client.scheduler_info()["workers"]) == 2
        pids = set(client.run(os.getpid).values())
        assert len(pids) == 2 and os.getpid() not in pids
        table = sweep(oscillator, grid, client=client, summarize=peak_summary)
        recorded = sweep(
            flaky, {"omega": [1.0], "zeta": [0.9, 0.1]}, client=client, errors="record"
        )
        # model factories: every case compiled and simulated on the workers
        models = {"length": [0.5, 1.0], "mass": [1.0, 2.0]}
        remote = sweep(pendulum, models, client=client, simulate=PENDULUM_RUN)
    cols = ["omega", "zeta", "x_end", "x_min"]
    pd.testing.assert_frame_equal(table[cols], serial[cols])
    assert recorded["error"].notna().tolist() == [True, False]
    local = sweep(pendulum, models, simulate=PENDULUM_RUN)
    cols = [c for c in local.columns if c != "wall_time"]
    pd.testing.assert_frame_equal(remote[cols], local[cols])  # same bits
    # physics: the swing does not depend on the mass; a shorter pendulum swings faster
    q = remote["q:hinge:angle"].to_numpy()
    assert q[0] == pytest.approx(q[1], rel=1e-12) and q[2] == pytest.approx(q[3], rel=1e-12)
    assert q[0] < q[2] < 0.5
