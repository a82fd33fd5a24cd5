"""FEMBS SID export: the numbers read back, and each term against the full finite-element
mass (independent of the invariants the export is computed from)."""

import numpy as np
import pytest
from fem_helpers import beam_hex1, end

import flexmbd.fem as F
from flexmbd.fem.geometric import omega_matrices
from flexmbd.fem.invariants import rigid_inertia
from flexmbd.fem.sid import read_sid, sid_terms


@pytest.fixture(scope="module")
def case(steel):
    model = F.FEModel(beam_hex1(8, 1), steel)
    rb = F.reduce(
        None,
        strategy=F.CraigBampton(3, interfaces={"A": end(0.0), "B": end(1.0)}, frame="mean-axis"),
        model=model,
        geometric=False,
        rayleigh=(0.1, 1e-5),
    )
    return model, rb


def test_sid_reads_back_exactly(case, tmp_path):
    _, rb = case
    rb.to_sid(tmp_path / "b.SID_FEM", nodes=[5])
    got = read_sid(tmp_path / "b.SID_FEM")
    ref = sid_terms(rb, nodes=[5])
    assert got["mass"] == rb.mass and len(got["labels"]) == rb.n_modes
    for key, (M0, M1, _) in ((k, v) for k, v in ref.items() if k != "nodes"):
        assert np.array_equal(got[key][0], M0), key
        assert (M1 is None and got[key][1] is None) or np.array_equal(got[key][1], M1), key
    assert len(got["nodes"]) == 3
    for gn, (_, rn) in zip(got["nodes"], ref["nodes"]):
        for key in ("origin", "phi", "psi", "AP"):
            assert np.array_equal(gn[key][0], rn[key][0]), key
    # the terms that are the ReducedBody's own invariants
    assert np.array_equal(got["Me"][0], rb.M_ff) and np.array_equal(got["Ke"][0], rb.K_ff)
    assert np.array_equal(got["De"][0], rb.D_ff)
    assert np.array_equal(got["mdCM"][1][:, 0], rb.St)
    assert np.array_equal(got["J"][0], rb.inertia_origin)
    _, origin, _, modes = rb.interface("B")
    assert np.array_equal(got["nodes"][1]["origin"][0][:, 0], origin)
    assert np.array_equal(got["nodes"][1]["phi"][0], modes[3:])
    assert np.array_equal(got["nodes"][1]["psi"][0], modes[:3])


def test_sid_terms_against_the_full_mass(case):
    model, rb = case
    t = sid_terms(rb)
    x, M, Ms = model.fe.nodes, model.M, model.Ms
    Phi = rb.modes
    m = rb.n_modes
    n = len(x)
    P3 = Phi.reshape(n, 3, m)
    scale = np.abs(rb.M_ff).max()
    # first moment and inertia of the deformed mesh (exact: linear / quadratic in q)
    h = 1e-3
    for k in range(m):
        _, cp, _, Ip, _, _ = rigid_inertia(Ms, x + h * P3[:, :, k])
        _, cm, _, Im, _, _ = rigid_inertia(Ms, x - h * P3[:, :, k])
        np.testing.assert_allclose(
            (cp - cm) / (2 * h), t["mdCM"][1][:, 0, k], rtol=0, atol=1e-10 * rb.mass
        )
        np.testing.assert_allclose(
            (Ip - Im) / (2 * h),
            t["J"][1][:, :, k],
            rtol=0,
            atol=1e-10 * np.abs(rb.inertia_origin).max(),
        )
    # rotation coupling: int rho x cross phi_k = (rotation fields)^T M phi_k
    rot = np.stack([np.cross(e, x).ravel() for e in np.eye(3)], 1)
    np.testing.assert_allclose(t["Cr"][0], (rot.T @ (M @ Phi)).T, rtol=0, atol=1e-10 * scale)
    for k in range(m):
        for i, e in enumerate(np.eye(3)):
            fk = np.cross(P3[:, :, k], e).ravel()  # phi_k x e_i
            # Ge = 2 int Phi^T (phi_k x e_i);  Cr1[l, i, k] = int (phi_k x phi_l)_i
            np.testing.assert_allclose(
                t["Ge"][0][:, 3 * k + i], 2 * Phi.T @ (M @ fk), rtol=0, atol=1e-10 * scale
            )
            np.testing.assert_allclose(
                t["Cr"][1][:, i, k], -Phi.T @ (M @ fk), rtol=0, atol=1e-10 * scale
            )
    # centrifugal: int phi_k . C^p (x + u) for the six angular-velocity products
    for p, C in enumerate(omega_matrices()):
        np.testing.assert_allclose(
            t["Oe"][0][:, p],
            Phi.T @ (M @ (x @ C.T).ravel()),
            rtol=0,
            atol=1e-10 * np.abs(t["Oe"][0]).max(),
        )
        CP = np.einsum("ab,nbl->nal", C, P3).reshape(3 * n, m)
        np.testing.assert_allclose(
            t["Oe"][1][:, p, :], Phi.T @ (M @ CP), rtol=0, atol=1e-10 * scale
        )
