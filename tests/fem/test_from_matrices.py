"""ReducedBody.from_matrices: a reduced model given directly equals the native reduction."""

import numpy as np
import pytest
import scipy.sparse as sp
from fem_helpers import beam_hex1, end

import flexmbd.fem as F
from flexmbd.errors import MeshError, ModelError
from flexmbd.flexible import ModalInvariants

_INV = (
    "first_moment",
    "second_moment",
    "inertia_origin",
    "com",
    "inertia_com",
    "St",
    "Sij",
    "Pij",
    "M_ff",
    "K_ff",
)


@pytest.fixture(scope="module")
def native(steel):
    model = F.FEModel(beam_hex1(8, 1), steel)
    rb = F.reduce(
        None,
        strategy=F.CraigBampton(4, interfaces={"A": end(0.0), "B": end(1.0)}),
        model=model,
        geometric=False,
        rayleigh=(0.5, 1e-5),
    )
    return model, rb


def _rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(np.abs(b).max(), 1e-300)


def test_full_matrices_give_the_native_invariants(native):
    model, rb = native
    A, B = (rb.interface(k)[2] for k in ("A", "B"))
    got = F.ReducedBody.from_matrices(
        model.fe.nodes,
        rb.modes,
        model.M,
        model.K,
        interfaces={"A": A, "B": B},
        interface_kind="rigid",
        rayleigh=(0.5, 1e-5),
        support="clamped",
        reference="A",
    )
    assert got.mass == pytest.approx(rb.mass, rel=1e-13)
    for k in _INV + ("D_ff",):
        assert _rel(getattr(got, k), getattr(rb, k)) < 1e-11, k
    assert _rel(got.interface_modes, rb.interface_modes) < 1e-11
    np.testing.assert_allclose(got.frequencies, rb.frequencies, rtol=1e-10)
    # the body's invariants pass the multibody side's own check
    ModalInvariants(
        mass=got.mass,
        c=got.first_moment,
        E0=got.second_moment,
        St=got.St,
        S=got.Sij,
        P=got.Pij,
        K=got.K_ff,
        D=got.D_ff,
    ).validate("test")


def test_reduced_matrices_with_given_invariants_and_lumped_masses(native):
    model, rb = native
    Mr, Kr = rb.M_ff, rb.K_ff
    inv = {k: getattr(rb, k) for k in ("mass", "first_moment", "second_moment", "St", "Sij", "Pij")}
    got = F.ReducedBody.from_matrices(model.fe.nodes, rb.modes, Mr, Kr, invariants=inv, zeta=0.02)
    for k in _INV:
        assert _rel(getattr(got, k), getattr(rb, k)) < 1e-12, k
    # zeta: every reduced eigenmode gets 2 zeta w of damping
    import scipy.linalg as sla

    lam, X = sla.eigh(Kr, Mr)
    np.testing.assert_allclose(np.diag(X.T @ got.D_ff @ X), 0.04 * np.sqrt(lam), rtol=1e-9)
    # point masses at the nodes: the lumped-mass invariants (mass and first moment exact)
    w = np.asarray(model.Ms.sum(axis=1)).ravel()
    lump = F.ReducedBody.from_matrices(model.fe.nodes, rb.modes, Mr, Kr, nodal_mass=w)
    assert lump.mass == pytest.approx(rb.mass, rel=1e-12)
    np.testing.assert_allclose(lump.first_moment, rb.first_moment, rtol=1e-12)
    np.testing.assert_allclose(
        lump.St,
        np.einsum("n,njm->jm", w, rb.modes.reshape(-1, 3, rb.n_modes)),
        rtol=1e-12,
        atol=1e-12 * np.abs(lump.St).max(),
    )
    assert np.array_equal(lump.M_ff, Mr)


def test_save_load_round_trip(native, tmp_path):
    model, rb = native
    got = F.ReducedBody.from_matrices(model.fe.nodes, rb.modes, model.M, model.K)
    got.save(tmp_path / "b.npz")
    back = F.ReducedBody.load(tmp_path / "b.npz")
    for k in _INV:
        assert np.array_equal(getattr(back, k), getattr(got, k))


def test_bad_input_names_the_argument(native):
    model, rb = native
    x, Phi, M, K = model.fe.nodes, rb.modes, model.M, model.K
    with pytest.raises(ModelError, match="modes"):
        F.ReducedBody.from_matrices(x[:-1], Phi, M, K)
    with pytest.raises(ModelError, match=r"\bM\b.*shape"):
        F.ReducedBody.from_matrices(x, Phi, M[:-3, :-3], K)
    Kn = K.tolil()
    Kn[0, 1] += 1e3 * abs(K).max()
    with pytest.raises(ModelError, match="K is not symmetric"):
        F.ReducedBody.from_matrices(x, Phi, M, Kn.tocsr())
    with pytest.raises(ModelError, match="positive definite"):  # dependent modes
        F.ReducedBody.from_matrices(x, np.column_stack([Phi, Phi[:, :1]]), M, K)
    with pytest.raises(ModelError, match="invariants"):
        F.ReducedBody.from_matrices(x, Phi, rb.M_ff, rb.K_ff)
    with pytest.raises(ModelError, match="scalar mass"):
        F.ReducedBody.from_matrices(
            x, Phi, M + sp.eye(M.shape[0], k=1) * 1e-3 + sp.eye(M.shape[0], k=-1) * 1e-3, K
        )
    with pytest.raises(ModelError, match="Pij"):
        F.ReducedBody.from_matrices(
            x,
            Phi,
            2 * rb.M_ff,
            rb.K_ff,
            invariants={
                k: getattr(rb, k)
                for k in ("mass", "first_moment", "second_moment", "St", "Sij", "Pij")
            },
        )
    with pytest.raises(MeshError, match="frame"):
        F.ReducedBody.from_matrices(x, Phi, M, K, interfaces={"A": [0, 1]}, interface_kind="rigid")


def test_hdf5_schema_round_trip_and_version_check(native, tmp_path):
    h5py = pytest.importorskip("h5py")
    _, rb = native
    rb.save(tmp_path / "b.h5")
    back = F.ReducedBody.load(tmp_path / "b.h5")
    for k in _INV + ("modes", "nodes", "interface_modes", "stress_modes", "D_ff"):
        assert np.array_equal(getattr(back, k), getattr(rb, k)), k
    assert back.mode_kind == rb.mode_kind and back.interface_names == rb.interface_names
    assert back.name == rb.name and back.mass == rb.mass
    with h5py.File(tmp_path / "b.h5", "a") as f:
        f.attrs["schema"] = "flexmbd.reduced/0"
    with pytest.raises(MeshError, match="schema"):
        F.ReducedBody.load(tmp_path / "b.h5")
    np.savez(tmp_path / "old.npz", schema=np.array("flexmbd.reduced/0"))
    with pytest.raises(MeshError, match="schema"):
        F.ReducedBody.load(tmp_path / "old.npz")
