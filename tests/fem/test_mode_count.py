"""One meaning of a mode count: explicit strategy parameters, describe(), totals, CLI = API."""

import io
from pathlib import Path

import numpy as np
import pytest
from fem_helpers import beam_hex1, end

import flexmbd as fm
import flexmbd.fem as F
from flexmbd.cli import main
from flexmbd.errors import MeshError

BEAM = Path(__file__).resolve().parents[2] / "meshes" / "beam_hex.msh"
STEEL = F.Material(E=2.1e11, nu=0.3, rho=7850.0)


@pytest.fixture(scope="module")
def model(steel):
    return F.FEModel(beam_hex1(16, 2), steel)


def build(model, strategy, **kw):
    return F.reduce(None, strategy=strategy, model=model, stress_modes=False, geometric=False, **kw)


def four_loads():
    """Four independent point loads (1 load vector each): y and z at the tip and the middle."""
    return [
        F.PointLoad(end(1.0), force=(0, 1, 0), name="tip_y"),
        F.PointLoad(end(1.0), force=(0, 0, 1), name="tip_z"),
        F.PointLoad(end(0.5), force=(0, 1, 0), name="mid_y"),
        F.PointLoad(end(0.5), force=(0, 0, 1), name="mid_z"),
    ]


def kinds(rb):
    return {k: rb.mode_kind.count(k) for k in dict.fromkeys(rb.mode_kind)}


def test_describe_and_total_of_every_strategy(model):
    """describe() before the build equals the built body's, and n_total() its column count."""
    A, B = end(0.0), end(1.0)
    cases = [
        (F.NormalModes(n_modes=8), "8 normal modes", {"normal": 8}),
        (
            F.StaticCorrection(n_normal=6, loads=four_loads(), orthonormalize=False),
            "6 normal + 4 static-correction = 10 modes",
            {"normal": 6, "static-correction": 4},
        ),
        (
            F.CraigBampton(n_fixed=8, interfaces={"A": A, "B": B}),
            "8 fixed-interface + 6 constraint = 14 modes",
            {"fixed-interface": 8, "constraint": 6},
        ),
        (F.RitzVectors(n_vectors=8, load=four_loads()), "8 Ritz vectors (4 loads)", {"Ritz": 8}),
    ]
    for strategy, text, parts in cases:
        assert strategy.describe() == text
        rb = build(model, strategy)
        total = sum(parts.values())
        assert strategy.n_total() == strategy.n_total(model) == total == rb.n_modes
        assert rb.n_total() == total and kinds(rb) == parts
        assert rb.describe() == text and rb.mode_count == text
        assert text in repr(rb) and f"modes    : {text}" in rb.info(file=io.StringIO())


def test_first_positional_argument_keeps_its_meaning(model):
    """CraigBampton(8, ...) is n_fixed=8, the same basis as n_total=14 (two rigid interfaces,
    the first the body frame: 6 constraint modes); the other strategies alike."""
    itf = {"A": end(0.0), "B": end(1.0)}
    a = build(model, F.CraigBampton(8, itf))
    b = build(model, F.CraigBampton(n_total=14, interfaces=itf))
    assert F.CraigBampton(n_total=14, interfaces=itf).n_fixed == 8
    assert a.n_modes == b.n_modes == 14
    np.testing.assert_allclose(a.frequencies, b.frequencies, rtol=1e-12)
    np.testing.assert_array_equal(a.modes, b.modes)
    s = F.StaticCorrection(n_total=10, loads=four_loads())
    assert s.n_normal == 6 and F.StaticCorrection(6, four_loads()).n_total() == 10
    assert F.NormalModes(8).n_modes == 8 and F.RitzVectors(8, "A").n_vectors == 8
    # three rigid interfaces, a distributing one counted alike: 12 constraint modes
    three = {"A": end(0.0), "M": end(0.5), "B": end(1.0)}
    assert (
        F.CraigBampton(2, three, "distributing").describe()
        == "2 fixed-interface + 12 constraint = 14 modes"
    )


def test_nodes_interfaces_count_from_the_mesh(model):
    """A "nodes" interface has 3 constraint modes per node (the reference one minus its 6
    rigid motions): the count needs the mesh, and the built basis has exactly that many."""
    cb = F.CraigBampton(2, {"A": end(0.0), "B": end(1.0)}, interface_kind="nodes")
    with pytest.raises(MeshError, match="nodes"):
        cb.describe()
    nA, nB = len(end(0.0)(model.fe)), len(end(1.0)(model.fe))
    n_c = 3 * nA - 6 + 3 * nB
    assert cb.n_constraint(model) == n_c and cb.n_total(model) == 2 + n_c
    rb = build(model, cb)
    assert rb.n_modes == 2 + n_c and kinds(rb) == {"fixed-interface": 2, "constraint": n_c}
    assert rb.describe() == cb.describe(model)
    by_total = F.CraigBampton(
        n_total=2 + n_c, interfaces={"A": end(0.0), "B": end(1.0)}, interface_kind="nodes"
    )
    np.testing.assert_allclose(build(model, by_total).frequencies, rb.frequencies, rtol=1e-12)


def test_cli_and_api_agree(tmp_path, capsys):
    """`flexmbd reduce --modes N` is the total for every strategy: the same mesh and
    interfaces through the CLI and the API give the same count and frequencies."""
    ends = {"A": F.NodeSet("A"), "B": F.NodeSet("B")}
    tip = F.PointLoad(F.NodeSet("B"), force=(0, 1000, 0))
    cases = [
        (
            ["--strategy", "craig-bampton", "--interface", "A=A", "--interface", "B=B"],
            F.CraigBampton(n_fixed=8, interfaces=ends),
        ),
        (["--strategy", "normal"], F.NormalModes(n_modes=14)),
        (
            ["--strategy", "static-correction", "--load", "B:0,1000,0"],
            F.StaticCorrection(n_normal=13, loads=[tip]),
        ),
        (["--strategy", "ritz", "--load", "B:0,1000,0"], F.RitzVectors(n_vectors=14, load=tip)),
    ]
    for k, (opts, strategy) in enumerate(cases):
        out = tmp_path / f"b{k}.npz"
        assert (
            main(
                [
                    "reduce",
                    str(BEAM),
                    "--modes",
                    "14",
                    *opts,
                    "--no-geometric",
                    "--no-stress",
                    "-o",
                    str(out),
                ]
            )
            == 0
        )
        cli = F.ReducedBody.load(out)
        api = F.reduce(str(BEAM), STEEL, strategy, geometric=False, stress_modes=False)
        assert cli.n_modes == api.n_modes == strategy.n_total() == 14
        assert cli.describe() == api.describe() == strategy.describe()
        np.testing.assert_allclose(cli.frequencies, api.frequencies, rtol=1e-10)
    capsys.readouterr()
    assert main(["info", str(tmp_path / "b0.npz")]) == 0
    assert "8 fixed-interface + 6 constraint = 14 modes" in capsys.readouterr().out
    # the FlexibleBody pprint line states the total, with the parts
    body = fm.FlexibleBody(F.ReducedBody.load(tmp_path / "b0.npz"), name="beam")
    assert "8 fixed-interface + 6 constraint = 14 modes" in body.summary()


def test_cli_too_few_modes_names_the_constraint_modes(tmp_path, capsys):
    out = tmp_path / "b.npz"
    rc = main(
        [
            "reduce",
            str(BEAM),
            "--strategy",
            "craig-bampton",
            "--modes",
            "4",
            "--interface",
            "A=A",
            "--interface",
            "B=B",
            "-o",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()
    assert "6 constraint modes" in err and "at least 6" in err
    # exactly the constraint modes: Guyan (0 fixed-interface modes)
    assert F.CraigBampton(n_total=6, interfaces={"A": "A", "B": "B"}).n_fixed == 0


@pytest.mark.parametrize("bad", [0, -1, 2.5, "8", None, True])
def test_bad_counts(bad):
    itf = {"A": "A", "B": "B"}
    makers = [
        lambda: F.NormalModes(n_modes=bad),
        lambda: F.RitzVectors(n_vectors=bad, load="A"),
        lambda: F.StaticCorrection(n_total=bad, loads="A"),
        lambda: F.CraigBampton(n_total=bad, interfaces=itf),
    ]
    if bad != 0:  # 0 normal / fixed-interface modes is allowed (static modes alone, Guyan)
        makers += [
            lambda: F.StaticCorrection(n_normal=bad, loads="A"),
            lambda: F.CraigBampton(n_fixed=bad, interfaces=itf),
        ]
    for make in makers:
        with pytest.raises(MeshError):
            make()


def test_one_count_only_and_too_few_static_modes():
    with pytest.raises(MeshError, match="exactly one"):
        F.CraigBampton(4, {"A": "A"}, n_total=10)
    with pytest.raises(MeshError, match="exactly one"):
        F.StaticCorrection(loads="A")
    with pytest.raises(MeshError, match="at least 6"):  # an interface: 6 unit wrenches
        F.StaticCorrection(n_total=5, loads="A")
    assert (
        F.StaticCorrection(n_total=6, loads="A").describe()
        == "0 normal + 6 static-correction = 6 modes"
    )


def test_files_without_the_stored_count_count_mode_kinds(model, tmp_path):
    """A body file written before ``mode_count`` existed loads and counts its mode kinds."""
    rb = build(model, F.CraigBampton(3, {"A": end(0.0), "B": end(1.0)}))
    path = tmp_path / "b.npz"
    rb.save(path)
    with np.load(path) as z:
        old = {k: z[k] for k in z.files if k != "mode_count"}
    np.savez(tmp_path / "old.npz", **old)
    back = F.ReducedBody.load(tmp_path / "old.npz")
    assert (
        back.mode_count == ""
        and back.describe() == rb.describe() == "3 fixed-interface + 6 constraint = 9 modes"
    )
    assert F.ReducedBody.load(path).describe() == rb.describe()
