"""Beam frequencies against beam theory; rigid-body invariants against the analytic box."""

import numpy as np
import pytest
from fem_helpers import RHO, H, L, beam_hex1, beam_hex2, eb_cantilever_hz, eb_free_hz, end

import flexmbd.fem as F
from flexmbd.fem.invariants import rigid_inertia


def clamped_f1(mesh, steel):
    return F.reduce(
        mesh, steel, F.NormalModes(2, fixed=end(0)), stress_modes=False, geometric=False
    ).frequencies[0]


def test_cantilever_converges_quadratic_within_half_percent(steel):
    ref = eb_cantilever_hz()
    errs = [abs(clamped_f1(beam_hex2(nx, 1), steel) / ref - 1) for nx in (5, 10, 20)]
    assert errs[0] > errs[1] > errs[2] or errs[2] < 1e-3
    assert errs[-1] < 0.005


def test_cantilever_linear_hex_converges_from_above(steel):
    ref = eb_cantilever_hz()
    f = [clamped_f1(beam_hex1(nx, ny), steel) for nx, ny in ((10, 1), (20, 2), (40, 4))]
    assert f[0] > f[1] > f[2] > ref * 0.995
    assert f[2] / ref - 1 < 0.06  # trilinear hexes lock in bending: slow convergence


def test_free_free_bending_and_six_rigid_modes(steel):
    rb = F.reduce(beam_hex2(20, 1), steel, F.NormalModes(4), stress_modes=False, geometric=False)
    f = rb.frequencies
    # Euler-Bernoulli 266.6 Hz; shear and rotary inertia lower it slightly (Timoshenko)
    assert f[0] == pytest.approx(eb_free_hz(), rel=0.01)
    assert f[0] < eb_free_hz()
    assert f[1] == pytest.approx(f[0], rel=1e-8)  # y/z symmetric section
    # mean axes: no rigid content
    assert np.abs(rb.St).max() < 1e-10 * rb.mass**0.5
    S = rb.Sij  # int rho x0 x u dV = eps_kij S_ij = 0
    rot = np.array([S[1, 2] - S[2, 1], S[2, 0] - S[0, 2], S[0, 1] - S[1, 0]])
    assert np.abs(rot).max() < 1e-10 * rb.mass**0.5


@pytest.mark.parametrize("kind", ["hex8", "hex27"])
def test_rigid_invariants_equal_analytic_box(kind, steel):
    mesh = beam_hex1(6, 2) if kind == "hex8" else beam_hex2(6, 2)
    mesh = mesh.translated((0.3, -0.2, 0.1))
    model = F.FEModel(mesh, steel)
    m, c, J0, I_o, com, I_c = rigid_inertia(model.Ms, model.fe.nodes)
    a, b, d = L, H, H
    mass = RHO * a * b * d
    centre = np.array([0.3 + a / 2, -0.2 + b / 2, 0.1 + d / 2])
    assert m == pytest.approx(mass, rel=1e-12)
    assert np.allclose(com, centre, rtol=1e-12, atol=0)
    Ic = mass / 12 * np.diag([b * b + d * d, a * a + d * d, a * a + b * b])
    assert np.abs(I_c - Ic).max() <= 1e-12 * np.abs(Ic).max()
    Io = Ic + mass * (centre @ centre * np.eye(3) - np.outer(centre, centre))
    assert np.abs(I_o - Io).max() <= 1e-12 * np.abs(Io).max()
    assert np.abs(J0 - (np.trace(Io) / 2 * np.eye(3) - Io)).max() <= 1e-12 * np.abs(J0).max()


def test_invariant_definitions_against_direct_sums(steel):
    rb = F.reduce(beam_hex1(6, 1), steel, F.NormalModes(3), stress_modes=False, geometric=False)
    model = F.FEModel(beam_hex1(6, 1), steel)
    M = model.M.toarray()
    Phi, x = rb.modes, rb.nodes
    e = [np.tile(np.eye(3)[j], rb.n_nodes) for j in range(3)]
    for j in range(3):
        assert np.allclose(rb.St[j], e[j] @ M @ Phi, atol=1e-12)
        for i in range(3):
            xi = np.zeros_like(e[j])
            xi[j::3] = x[:, i]
            assert np.allclose(rb.Sij[i, j], xi @ M @ Phi, atol=1e-12)
    P = sum(rb.Pij[i, i] for i in range(3))
    assert np.allclose(P, Phi.T @ M @ Phi, atol=1e-12)
    assert np.allclose(rb.M_ff, np.eye(3), atol=1e-10)
    assert np.allclose(rb.first_moment, rb.mass * rb.com)
