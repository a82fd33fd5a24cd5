"""Assembly against scikit-fem's own forms; eigen fast path against dense references."""

import numpy as np
import pytest
import scipy.sparse as sp
import skfem
from fem_helpers import beam_hex1, end

import flexmbd.fem as F
from flexmbd.fem.assembly import Assembler, elasticity_form, geometric_form, mass_form
from flexmbd.fem.eigen import SPDFactor, eigh_dense, eigsh_shift_invert, free_shift


def meshes():
    h = beam_hex1(3, 1)
    t = skfem.MeshTet1.init_tensor(
        np.linspace(0, 1, 4), np.linspace(0, 0.3, 2), np.linspace(0, 0.2, 3)
    )
    return [h, skfem.MeshHex2.from_mesh(h), t, skfem.MeshTet2.from_mesh(t)]


@pytest.mark.parametrize("mesh", meshes(), ids=["hex8", "hex27", "tet4", "tet10"])
def test_fast_assembly_equals_skfem_forms(mesh, steel):
    fe = F.read_mesh(mesh)
    A = Assembler(fe, steel)
    K, Ms = A.stiffness(), A.scalar_mass()
    b = skfem.Basis(fe.mesh, skfem.ElementVector(fe.mesh.elem()), intorder=A.intorder)
    bs = skfem.Basis(fe.mesh, fe.mesh.elem(), intorder=A.intorder)
    Kr = skfem.asm(elasticity_form(steel.lam, steel.mu), b)
    Mr = skfem.asm(mass_form(steel.rho), bs)
    assert abs(K - Kr).max() <= 1e-13 * abs(Kr).max()
    assert abs(Ms - Mr).max() <= 1e-13 * abs(Mr).max()
    s = np.array([[1.0, 2, 0], [2, 3, 1], [0, 1, -1]])
    Kg, Kgr = A.geometric_scalar_from_stress(s), skfem.asm(geometric_form(s), bs)
    assert abs(Kg - Kgr).max() <= 1e-13 * abs(Kgr).max()
    vol = A.volume()
    assert Ms.sum() == pytest.approx(steel.rho * vol, rel=1e-13)
    Ml = A.scalar_mass(lumped=True)
    assert Ml.sum() == pytest.approx(steel.rho * vol, rel=1e-13)
    assert (Ml.diagonal() > 0).all()


def test_hex8_intorder3_is_exact(steel):
    fe = F.read_mesh(beam_hex1(3, 1))
    K = Assembler(fe, steel).stiffness()
    b6 = skfem.Basis(fe.mesh, skfem.ElementVector(skfem.ElementHex1()))  # default order 6
    K6 = skfem.asm(elasticity_form(steel.lam, steel.mu), b6)
    assert abs(K - K6).max() <= 1e-12 * abs(K6).max()


def test_stress_of_uniform_strain(steel):
    fe = F.read_mesh(
        skfem.MeshTet2.from_mesh(
            skfem.MeshTet1.init_tensor(
                np.linspace(0, 1, 3), np.linspace(0, 1, 3), np.linspace(0, 1, 2)
            )
        )
    )
    A = Assembler(fe, steel)
    U = np.zeros((fe.n_nodes, 3))
    U[:, 0] = 1e-3 * fe.nodes[:, 0]
    s = A.nodal_stress(U.ravel())[:, :, 0]
    assert np.allclose(s[:, 0], (steel.lam + 2 * steel.mu) * 1e-3, rtol=1e-10)
    assert np.allclose(s[:, 1:3], steel.lam * 1e-3, rtol=1e-10)
    assert np.allclose(s[:, 3:], 0, atol=1e-6 * steel.mu * 1e-3)


def _clamped_beam(steel, nx=12):
    model = F.FEModel(beam_hex1(nx, 2), steel)
    fixed = end(0)(model.fe)
    free = np.setdiff1d(np.arange(model.n_dofs), model.dofs_of(fixed))
    return model, model.K[free][:, free].tocsc(), model.M[free][:, free].tocsc()


@pytest.mark.parametrize("backend", ["cholespy", "superlu", "dense"])
def test_factor_backends_agree(backend, steel):
    _, K, _ = _clamped_beam(steel)
    b = np.random.default_rng(0).standard_normal((K.shape[0], 3))
    x = SPDFactor(K, backend).solve(b)
    xr = np.linalg.solve(K.toarray(), b)
    assert np.abs(x - xr).max() <= 1e-8 * np.abs(xr).max()


@pytest.mark.parametrize("backend", ["cholespy", "superlu"])
def test_shift_invert_matches_dense_clamped(backend, steel):
    _, K, M = _clamped_beam(steel)
    lam, V = eigsh_shift_invert(K, M, 6, 0.0, SPDFactor(K, backend))
    lr, _ = eigh_dense(K, M, 6)
    assert np.allclose(lam, lr, rtol=1e-10)
    assert np.allclose(V.T @ (M @ V), np.eye(6), atol=1e-10)


def test_free_free_shift_gives_six_rigid_modes(steel):
    model = F.FEModel(beam_hex1(12, 2), steel)
    K, M = model.K, model.M
    sigma = free_shift(K, M)
    assert sigma < 0
    fac = SPDFactor((K - sigma * M).tocsc(), "cholespy")
    lam, _ = eigsh_shift_invert(K, M, 10, sigma, fac)
    lr, _ = eigh_dense(K, M, 10)
    f = np.sqrt(np.abs(lam)) / (2 * np.pi)
    assert (f[:6] < 1e-5 * f[6]).all()  # six ~zero frequencies (1e-10 in eigenvalue)
    assert np.allclose(lam[6:], lr[6:], rtol=1e-9)
    assert np.abs(lr[:6]).max() < 1e-6 * lr[6]


def test_kron_mass_is_interleaved(steel):
    model = F.FEModel(beam_hex1(2, 1), steel)
    Ms = model.Ms.toarray()
    M = model.M.toarray()
    assert np.allclose(M[0::3, 0::3], Ms) and np.allclose(M[1::3, 1::3], Ms)
    assert np.allclose(M[0::3, 1::3], 0)
    assert sp.issparse(model.K) and model.K.shape == (3 * model.fe.n_nodes,) * 2
