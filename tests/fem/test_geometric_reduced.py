"""Geometric stiffening against beam theory; ReducedBody npz round trip; the example."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg as sla
from fem_helpers import RHO, E, H, L, beam_hex1, beam_hex2, end
from scipy.optimize import brentq

import flexmbd.fem as F
from flexmbd.errors import MeshError

EI = E * H**4 / 12
PCR = np.pi**2 * EI / (4 * L**2)  # cantilever, dead axial tip load


def cantilever_axial_hz(P):
    """First bending frequency of a cantilever under an axial dead tip load P (tension > 0)."""

    def det(beta):
        p = P / EI
        s = np.sqrt(p * p + 4 * beta**4)
        a, b = np.sqrt((p + s) / 2), np.sqrt((s - p) / 2)

        def rows(x):
            ch, sh, c, sn = np.cosh(a * x), np.sinh(a * x), np.cos(b * x), np.sin(b * x)
            return np.array(
                [
                    [ch, sh, c, sn],
                    [a * sh, a * ch, -b * sn, b * c],
                    [a * a * ch, a * a * sh, -b * b * c, -b * b * sn],
                    [a**3 * sh, a**3 * ch, b**3 * sn, -(b**3) * c],
                ]
            )

        r0, rl = rows(0.0), rows(L)
        return np.linalg.det(np.array([r0[0], r0[1], rl[2], EI * rl[3] - P * rl[1]]))

    bs = np.linspace(0.3, 3.0, 300)
    d = [det(b) for b in bs]
    i = next(k for k in range(len(bs) - 1) if np.sign(d[k]) != np.sign(d[k + 1]))
    beta = brentq(det, bs[i], bs[i + 1])
    return beta**2 * np.sqrt(EI / (RHO * H * H)) / (2 * np.pi)


@pytest.fixture(scope="module")
def cb_beam(steel):
    return F.reduce(
        beam_hex2(20, 1), steel, F.CraigBampton(6, {"A": end(0), "B": end(L)}, frame="interface")
    )


@pytest.mark.parametrize("load", [0.5, -0.5, 0.25, -0.8])
def test_axial_load_changes_bending_frequency_as_beam_theory(cb_beam, load):
    P = load * PCR
    Kg = cb_beam.geometric_stiffness(interface_forces={"B": [0, 0, 0, P, 0, 0]})
    f = np.sqrt(sla.eigh(cb_beam.K_ff + Kg, cb_beam.M_ff, eigvals_only=True)[0]) / (2 * np.pi)
    f0 = np.sqrt(sla.eigh(cb_beam.K_ff, cb_beam.M_ff, eigvals_only=True)[0]) / (2 * np.pi)
    assert (f > f0) == (P > 0)  # tension stiffens, compression softens
    assert f == pytest.approx(cantilever_axial_hz(P), rel=0.01)


def test_euler_buckling_from_unit_kg(cb_beam):
    Kg1 = cb_beam.geometric_stiffness(interface_forces={"B": [0, 0, 0, -1.0, 0, 0]})
    lam = sla.eigvals(cb_beam.K_ff, -Kg1)
    lam = np.sort(lam.real[(np.abs(lam.imag) < 1e-6 * np.abs(lam)) & (lam.real > 0)])
    assert lam[0] == pytest.approx(PCR, rel=0.01)


def test_reference_interface_wrench_is_a_reaction(cb_beam):
    Kg = cb_beam.geometric_stiffness(interface_forces={"A": [1, 2, 3, 4, 5, 6]})
    assert np.abs(Kg).max() == 0.0


def test_centrifugal_stiffening_of_spinning_cantilever(steel):
    # hub at x=0, spin about z: centrifugal tension raises the out-of-plane bending frequency
    rb = F.reduce(beam_hex1(16, 1), steel, F.NormalModes(4, fixed=end(0)), stress_modes=False)
    Om = 2 * np.pi * 30.0
    Kg = rb.geometric_stiffness(omega=(0, 0, Om))
    f0 = np.sqrt(sla.eigh(rb.K_ff, rb.M_ff, eigvals_only=True)) / (2 * np.pi)
    f = np.sqrt(sla.eigh(rb.K_ff + Kg, rb.M_ff, eigvals_only=True)) / (2 * np.pi)
    # Southwell: f^2 = f0^2 + k Om^2/(2 pi)^2 with k ~ 1.19 for the out-of-plane first mode
    k = (f[1] ** 2 - f0[1] ** 2) / (Om / (2 * np.pi)) ** 2
    assert 1.1 < k < 1.3


def test_free_body_kg_inertia_relief_is_consistent(steel):
    # the free-free (inertia relief) basis and the clamped basis agree for a balanced load set:
    # pulling both ends apart with equal forces
    mesh = beam_hex2(12, 1)
    itf = {"A": end(0), "B": end(L)}
    rb = F.reduce(mesh, steel, F.NormalModes(2), interfaces=itf, stress_modes=False)
    Kg = rb.geometric_stiffness(
        interface_forces={"A": [0, 0, 0, -1e5, 0, 0], "B": [0, 0, 0, 1e5, 0, 0]}
    )
    assert np.all(np.diag(Kg) > 0)  # tension stiffens bending


def test_npz_round_trip_exact(tmp_path, steel):
    rb = F.reduce(
        beam_hex1(8, 1),
        steel,
        F.CraigBampton(3, {"A": end(0), "B": end(L)}, frame="interface"),
        zeta=0.01,
        name="beam",
    )
    path = tmp_path / "beam.npz"
    rb.save(path)
    rl = F.ReducedBody.load(path)
    for k in (
        "modes",
        "Pij",
        "Sij",
        "St",
        "M_ff",
        "K_ff",
        "D_ff",
        "kg_unit",
        "stress_modes",
        "interface_modes",
        "nodes",
        "cells",
        "frequencies",
        "zeta",
    ):
        assert np.array_equal(getattr(rb, k), getattr(rl, k)), k
    for k in (
        "name",
        "frame",
        "strategy",
        "reference",
        "cell_type",
        "mode_kind",
        "mode_label",
        "interface_names",
        "kg_names",
    ):
        assert getattr(rb, k) == getattr(rl, k), k
    assert rl.mass == rb.mass
    assert np.array_equal(
        rl.geometric_stiffness(omega=(1, 2, 3)), rb.geometric_stiffness(omega=(1, 2, 3))
    )
    bad = tmp_path / "bad.npz"
    np.savez(bad, schema=np.array("other/9"))
    with pytest.raises(MeshError, match="schema"):
        F.ReducedBody.load(bad)


def test_stress_modes_and_von_mises(steel):
    rb = F.reduce(beam_hex1(8, 1), steel, F.NormalModes(2, fixed=end(0)), geometric=False)
    assert rb.stress_modes.shape == (rb.n_nodes, 6, 2)
    vm = rb.von_mises([1.0, 0.0])
    root = np.abs(rb.nodes[:, 0]) < 1e-9
    assert vm[root].mean() > 5 * vm[np.abs(rb.nodes[:, 0] - L) < 1e-9].mean()


def test_connecting_rod_example_small():
    path = Path(__file__).resolve().parents[2] / "examples" / "connecting_rod_modes.py"
    spec = importlib.util.spec_from_file_location("connecting_rod_modes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t = mod.main(small=True, write=False)
    rows = {r["strategy"]: r for _, r in t.iterrows()}
    clamped = rows["NormalModes(8) clamped"]
    assert clamped["freq_err_max"] < 1e-8  # the clamped normal modes are the reference modes
    assert rows["StaticCorrection(2+6) clamped"]["static_err"] < 1e-9
    assert rows["RitzVectors(8) clamped"]["static_err"] < 1e-9
    assert rows["CraigBampton(2, rigid)"]["static_err"] < 1e-2
    assert rows["NormalModes(8) free-free"]["static_err"] > 0.1
