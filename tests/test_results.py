"""Results: named access, DataFrame, exact npz/HDF5 round trips, VTK series, plots, poses."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.errors import FileError, FlexmbdError
from flexmbd.kinematics import tree_poses
from flexmbd.results import (
    SCHEMA,
    BodySeries,
    JointSeries,
    Results,
    attach_body_poses,
    attach_geometry,
    attach_tree_poses,
    quat_to_rot_batch,
)
from flexmbd.viz.demo import beam_geometry, swinging_beam_results


def rich_results():
    res = swinging_beam_results(nt=7)
    res.stats["rank"] = np.arange(7, dtype=np.int32)
    res.stats["violation"] = np.linspace(0, 1e-12, 7)
    res.extra["tags"] = np.array(["a", "bb", "ccc", "d", "e", "f", "g"])  # unicode survives
    res.meta.update({"dt": 1e-3, "integrator": "generalized-alpha", "rho_inf": 0.8})
    res.reactions = np.random.default_rng(0).normal(size=res.reactions.shape)
    return res


def test_named_access():
    res = rich_results()
    np.testing.assert_array_equal(res.joint("hinge").q[:, 0], res.q[:, 0])
    np.testing.assert_array_equal(res.joint("slide").qd[:, 0], res.qd[:, 1])
    np.testing.assert_array_equal(res.reaction("slide"), res.reactions[:, 1])
    assert res.body("beam").modal.shape == (7, 2)
    R = res.body("beam").rotation
    np.testing.assert_allclose(
        R[:, :2, :2] @ [1, 0],
        np.column_stack([np.cos(res.q[:, 0]), np.sin(res.q[:, 0])]),
        atol=1e-14,
    )
    assert res.body_names() == ["beam", "box"]
    with pytest.raises(FlexmbdError, match="attach_body_poses"):
        _ = res.body("nobody").position
    with pytest.raises(FlexmbdError, match="joints: \\['hinge', 'slide'\\]"):
        res.reaction("j9")


def test_dataframe_columns():
    res = rich_results()
    df = res.to_dataframe()
    assert df.index.name == "t" and len(df) == 7
    assert {
        "q:hinge:angle",
        "qd:slide:v",
        "reaction:hinge:fy",
        "energy:kinetic",
        "stats:rank",
    } <= set(df.columns)
    np.testing.assert_array_equal(df["reaction:hinge:fy"].to_numpy(), res.reactions[:, 0, 4])


@pytest.mark.parametrize("suffix", [".npz", ".h5"])
def test_exact_round_trip(tmp_path, suffix):
    res = rich_results()
    path = res.save(tmp_path / f"run{suffix}")
    back = Results.load(path)
    assert back.equals(res)
    assert back.stats["rank"].dtype == np.int32
    assert back.extra["tags"].tolist() == res.extra["tags"].tolist()
    assert back.meta == json.loads(json.dumps(res.meta))
    np.testing.assert_array_equal(back.geometry["beam"]["modes"], res.geometry["beam"]["modes"])
    # and a second round trip is bitwise identical too (nothing drifts)
    assert Results.load(back.save(tmp_path / f"again{suffix}")).equals(res)


def test_loads_files_of_the_first_schema(tmp_path):
    """Files written before geometry existed (same keys, no geometry__) still load."""
    t = np.linspace(0, 1, 4)
    header = {
        "schema": 1,
        "coordinates": [["j1", "angle"]],
        "speeds": [["j1", "rate"]],
        "joint_names": ["j1"],
        "meta": {"model": "old"},
    }
    np.savez(
        tmp_path / "old.npz",
        __header__=np.array(json.dumps(header)),
        t=t,
        q=t[:, None],
        qd=t[:, None],
        qdd=t[:, None],
        reactions=np.zeros((4, 1, 6)),
        energy__kinetic=t,
        extra__modal__x=t[:, None],
    )
    res = Results.load(tmp_path / "old.npz")
    assert res.meta["model"] == "old" and res.geometry == {}
    np.testing.assert_array_equal(res.joint("j1").q[:, 0], t)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FlexmbdError, match="does not exist"):
        Results.load(tmp_path / "nope.h5")


def test_slice_take_concatenate():
    res = rich_results()
    a, b = res.slice(3), res.take(slice(3, None))
    assert Results.concatenate([a, b]).equals(res)
    assert res.index_at(0.49) == 3 and res.index_at(None) == 6


def test_vtk_series_holds_the_deformed_meshes(tmp_path):
    import meshio

    res = swinging_beam_results(nt=6)
    files = res.to_vtk(tmp_path / "out" / "run.pvd", stride=2, scale=2.0)
    assert len(files) == 3
    root = ET.parse(tmp_path / "out" / "run.pvd").getroot()
    sets = root.findall("./Collection/DataSet")
    assert [float(d.get("timestep")) for d in sets] == pytest.approx(res.t[::2])
    assert [d.get("file") for d in sets] == [f.name for f in files]
    g = beam_geometry()
    last = meshio.read(files[-1])
    i = 4
    R = quat_to_rot_batch(res.body("beam").orientation[i])
    q = res.body("beam").modal[i]
    expected = g.points(q, R, np.zeros(3), scale=2.0)
    n = len(g.nodes)
    np.testing.assert_allclose(last.points[:n], expected, atol=1e-12)
    np.testing.assert_allclose(
        last.point_data["displacement"][:n], 2.0 * g.displacement(q) @ R.T, atol=1e-12
    )
    np.testing.assert_allclose(last.point_data["von_mises"][:n], g.von_mises(q), rtol=1e-12)
    body_id = np.concatenate(last.cell_data["body_id"])
    assert (body_id == 0).sum() == g.n_cells and (body_id == 1).sum() == 1


def test_vtk_series_of_simulated_results_takes_the_model(tmp_path):
    """Results of Model.simulate write VTK without attach_geometry: meshes and poses
    come from their model (the results themselves stay as they were)."""
    import meshio

    m = fm.Model("pendulum")
    m.link = fm.RigidBody.rod(1.0, 1.0, origin="end", radius=0.02)
    m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1), q0=[0.3])
    m.g = fm.Gravity((0, -9.81, 0))
    res = m.simulate(0.05, dt=0.01, integrator="rk4")
    files = res.to_vtk(tmp_path / "p.pvd")
    assert len(files) == 6 and res.geometry == {}
    first, last = meshio.read(files[0]), meshio.read(files[-1])
    assert len(first.points) > 0 and not np.allclose(first.points, last.points)  # it swings


def test_vtk_series_needs_geometry(tmp_path):
    res = swinging_beam_results(nt=2)
    res.geometry.clear()
    with pytest.raises(FlexmbdError, match="attach_geometry"):
        res.to_vtk(tmp_path / "x.pvd")


def test_plot_writes_a_figure(tmp_path):
    pytest.importorskip("matplotlib")
    res = rich_results()
    fig = res.plot("q:*", "reaction:hinge:f?", file=tmp_path / "h.png")
    assert len(fig.axes) == 2
    assert len(fig.axes[0].lines) == 2 and len(fig.axes[1].lines) == 3
    assert (tmp_path / "h.png").stat().st_size > 1000
    with pytest.raises(FlexmbdError, match="no column matches"):
        res.plot("nothing:*")
    import matplotlib.pyplot as plt

    plt.close("all")


def pendulum_chain():
    m = fm.Model("chain")
    m.a = fm.RigidBody.rod(1.0, 1.0, origin="end")
    m.b = fm.RigidBody.rod(1.0, 0.5, origin="end")
    m.j1 = fm.Revolute(m.ground, m.a, axis=(0, 0, 1))
    m.j2 = fm.Revolute(m.a, m.b, axis=(0, 1, 0), parent_frame=(1.0, 0, 0))
    return m


def chain_results(nt=5):
    t = np.linspace(0, 1, nt)
    q = np.column_stack([np.sin(t), 2 * t])
    return Results(
        t,
        q,
        np.zeros_like(q),
        coordinates=[("j1", "angle"), ("j2", "angle")],
        speeds=[("j1", "rate"), ("j2", "rate")],
        joint_names=["j1", "j2"],
    )


def test_tree_poses_and_geometry_from_a_model():
    m = pendulum_chain()
    res = attach_geometry(attach_tree_poses(chain_results(), m), m)
    j1, j2 = m.joints()
    ref = tree_poses(m, {j1: res.q[3, :1], j2: res.q[3, 1:]})
    np.testing.assert_allclose(res.body("b").position[3], ref[m.b][1], atol=1e-14)
    np.testing.assert_allclose(res.body("b").rotation[3], ref[m.b][0], atol=1e-14)
    assert set(res.geometry) == {"a", "b"}
    assert res.geometry["a"]["cells:hexahedron"].shape == (1, 8)


class FakeSystem:
    """Stands in for a compiled System: body_states from tree kinematics."""

    def __init__(self, model, batched):
        self.model, self.batched, self.calls = model, batched, 0

    def body_states(self, q, qd):
        self.calls += 1
        j1, j2 = self.model.joints()
        q = np.asarray(q)
        if q.ndim == 2:
            if not self.batched:
                raise TypeError("one sample at a time")
            out = {}
            for i in range(len(q)):
                for b, (R, r) in tree_poses(self.model, {j1: q[i, :1], j2: q[i, 1:]}).items():
                    R_, r_ = out.setdefault(
                        b.name, (np.empty((len(q), 3, 3)), np.empty((len(q), 3)))
                    )[:2]
                    R_[i], r_[i] = R, r
            return {k: (R_, r_, None, None) for k, (R_, r_) in out.items()}
        return {
            b.name: (R, r, np.zeros(3), np.zeros(3))
            for b, (R, r) in tree_poses(self.model, {j1: q[:1], j2: q[1:]}).items()
        }


@pytest.mark.parametrize("batched", [True, False])
def test_attach_body_poses_from_a_system(batched):
    m = pendulum_chain()
    sys_ = FakeSystem(m, batched)
    res = attach_body_poses(chain_results(), sys_)
    ref = attach_tree_poses(chain_results(), m)
    for b in "ab":
        for kind in ("position", "orientation"):
            np.testing.assert_allclose(
                getattr(res.body_series[b], kind), getattr(ref.body_series[b], kind), atol=1e-14
            )
    assert "ground" not in res.body_series and not res.extra
    assert sys_.calls == (1 if batched else 1 + 5)


# -- file format: schema 2, and schema-1 files (written by the code before it) ----------
DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("suffix", [".npz", ".h5"])
def test_schema1_files_load_into_typed_series(suffix, tmp_path):
    """Files written before schema 2 (histories as ``extra`` keys ``"position:B"``,
    ``"joint:J:q"``...) load into ``body_series`` / ``joint_series``; ``extra`` keeps
    the rest; saved again they are schema 2 and round-trip exactly."""
    if suffix == ".h5":
        pytest.importorskip("h5py")
    res = Results.load(DATA / f"results_schema1{suffix}")
    t = np.linspace(0.0, 0.4, 5)
    th = 0.3 * np.sin(t)
    assert sorted(res.extra) == ["driver:d", "lambda"]
    beam = res.body("beam")
    np.testing.assert_array_equal(beam.position, np.column_stack([t, 2 * t, 0 * t]))
    np.testing.assert_array_equal(beam.modal, np.column_stack([t, t**2]))
    np.testing.assert_allclose(
        beam.rotation[:, :2, :2],
        [[[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]] for a in th],
        atol=1e-15,
    )
    assert list(beam.interfaces) == ["A"] and beam.interfaces["A"].shape == (5, 7)
    cut = res.joint("cut")  # a joint with no columns of q
    np.testing.assert_array_equal(cut.q[:, 0], -th)
    np.testing.assert_array_equal(cut.qd[:, 0], -0.3 * np.cos(t))
    np.testing.assert_array_equal(res.joint("hinge").q[:, 0], th)
    assert res.body_names() == ["beam"]
    back = Results.load(res.save(tmp_path / f"again{suffix}"))
    assert back.equals(res) and back.extra.keys() == res.extra.keys()
    header = (
        json.loads(str(np.load(tmp_path / "again.npz")["__header__"])) if suffix == ".npz" else None
    )
    assert header is None or header["schema"] == SCHEMA == 2


def test_typed_series_slice_take_concatenate_and_save(tmp_path):
    t = np.linspace(0.0, 1.0, 6)
    res = Results(
        t,
        t[:, None],
        t[:, None],
        coordinates=[("j", "x")],
        speeds=[("j", "v")],
        bodies={
            "b": BodySeries(
                position=np.outer(t, [1, 2, 3]),
                modal=t[:, None] ** 2,
                interfaces={"A": np.outer(t, np.arange(7.0))},
            )
        },
        joints={"k": JointSeries(-t[:, None], t[:, None], 0 * t[:, None])},
        extra={"user": 3 * t},
    )
    assert res.extra.keys() == {"user"}
    part = res.slice(3)
    np.testing.assert_array_equal(part.body("b").position, res.body("b").position[:3])
    np.testing.assert_array_equal(part.joint("k").q, -t[:3, None])
    both = Results.concatenate([res.slice(3), res.take(slice(3, None))])
    assert both.equals(res)
    for name in ("r.npz", "r.h5"):
        if name.endswith(".h5"):
            pytest.importorskip("h5py")
        assert Results.load(res.save(tmp_path / name)).equals(res)
    with pytest.raises(FlexmbdError, match="no orientation history"):
        _ = res.body("b").orientation  # not stored, no system to compute it
    bad = Results(t, t[:, None], t[:, None], bodies={"a__b": BodySeries(modal=t[:, None])})
    with pytest.raises(FlexmbdError, match="reserves"):
        bad.save(tmp_path / "bad.npz")


def test_a_newer_schema_is_refused_by_name(tmp_path):
    t = np.zeros(2)
    path = Results(t, t[:, None], t[:, None]).save(tmp_path / "r.npz")
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(str(arrays["__header__"]))
    header["schema"] = SCHEMA + 1
    arrays["__header__"] = np.array(json.dumps(header))
    np.savez(path, **arrays)
    with pytest.raises(FileError, match=f"schema {SCHEMA + 1}.*upgrade"):
        Results.load(path)
