"""`flexmbd reduce` on an Abaqus deck, with and without its .mtx matrices."""

import numpy as np
from abaqus_data import rotor_dir

import flexmbd as fm
import flexmbd.fem as F
from flexmbd.cli import main


def test_reduce_abaqus_deck_and_matrices(tmp_path, capsys):
    d = rotor_dir()
    inp = d / "rotorDiscTest.inp"
    out = tmp_path / "rotor.npz"
    rc = main(
        [
            "reduce",
            str(inp),
            "--mass",
            str(d / "rotorDiscTestMASS1.mtx"),
            "--stiffness",
            str(d / "rotorDiscTestSTIF1.mtx"),
            "--strategy",
            "normal",
            "--modes",
            "6",
            "--no-geometric",
            "-o",
            str(out),
        ]
    )
    assert rc == 0
    rb = F.ReducedBody.load(out)
    deck = F.read_abaqus(inp)
    M = F.read_mtx(d / "rotorDiscTestMASS1.mtx", deck, kind="mass")
    K = F.read_mtx(d / "rotorDiscTestSTIF1.mtx", deck, kind="stiffness")
    api = F.reduce(deck.mesh, (M, K), fm.NormalModes(6), geometric=False, stress_modes=False)
    np.testing.assert_allclose(rb.frequencies, api.frequencies, rtol=1e-10)
    assert rb.material_name == "steel" and rb.stress_modes.shape[0] == 115  # deck material
    # the deck alone: flexmbd assembles it with the deck's material (full integration)
    rc = main(
        [
            "reduce",
            str(inp),
            "--strategy",
            "craig-bampton",
            "--modes",
            "4",
            "--interface",
            "L=plane:0,0,0:0,0,1",
            "--no-geometric",
            "--no-stress",
            "-o",
            str(out),
        ]
    )
    assert rc == 0
    own = F.reduce(
        deck.mesh,
        deck.material,
        fm.CraigBampton(4, interfaces={"L": F.Plane((0, 0, 0), (0, 0, 1))}),
        geometric=False,
        stress_modes=False,
    )
    np.testing.assert_allclose(F.ReducedBody.load(out).frequencies, own.frequencies, rtol=1e-10)
    capsys.readouterr()
    # matrices without both files, or without a deck: exit 2 with a message
    assert (
        main(
            [
                "reduce",
                str(inp),
                "--mass",
                str(d / "rotorDiscTestMASS1.mtx"),
                "--strategy",
                "normal",
                "-o",
                str(out),
            ]
        )
        == 2
    )
    assert "--stiffness" in capsys.readouterr().err
    assert main(["reduce", str(tmp_path / "none.inp"), "--strategy", "normal", "-o", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_reduce_nastran_deck_uses_its_material(tmp_path, capsys):
    """`flexmbd reduce x.bdf`: mesh, sets and the MAT1 of the deck, as the Python API."""
    steel = fm.Material(E=2.1e11, nu=0.3, rho=7850.0)
    fe = F.read_mesh(fm.data.mesh("beam_hex"))
    bdf = tmp_path / "beam.bdf"
    F.nastran.write_bdf(bdf, fe, material=steel)
    out = tmp_path / "beam.npz"
    assert (
        main(
            [
                "reduce",
                str(bdf),
                "--strategy",
                "normal",
                "--modes",
                "4",
                "--no-geometric",
                "--no-stress",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    api = F.reduce(
        fm.data.mesh("beam_hex"), steel, fm.NormalModes(4), geometric=False, stress_modes=False
    )
    np.testing.assert_allclose(F.ReducedBody.load(out).frequencies, api.frequencies, rtol=1e-8)
    # --E overrides the deck's modulus: frequencies scale with sqrt(E)
    assert (
        main(
            [
                "reduce",
                str(bdf),
                "--strategy",
                "normal",
                "--modes",
                "4",
                "--E",
                "8.4e11",
                "--no-geometric",
                "--no-stress",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    np.testing.assert_allclose(F.ReducedBody.load(out).frequencies, 2 * api.frequencies, rtol=1e-8)
    capsys.readouterr()
    for name in ("m.mtx", "k.mtx"):
        (tmp_path / name).write_text("1,1,1.0\n")
    assert (
        main(
            [
                "reduce",
                str(bdf),
                "--mass",
                str(tmp_path / "m.mtx"),
                "--stiffness",
                str(tmp_path / "k.mtx"),
                "--strategy",
                "normal",
                "-o",
                str(out),
            ]
        )
        == 2
    )
    assert "Nastran" in capsys.readouterr().err
