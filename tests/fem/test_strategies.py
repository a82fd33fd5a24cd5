"""Strategy properties: exact static responses, Ritz vectors, frames, orthonormalization."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla
from fem_helpers import beam_hex1, end

import flexmbd.fem as F
from flexmbd.errors import MeshError
from flexmbd.fem.strategies import _Clamped


@pytest.fixture(scope="module")
def model(steel):
    return F.FEModel(beam_hex1(16, 2), steel)


def build(model, strategy, **kw):
    return F.reduce(None, strategy=strategy, model=model, stress_modes=False, geometric=False, **kw)


def clamped_full(model, fixed_nodes, Fv):
    return _Clamped(model, fixed_nodes).solve(Fv)


def reduced_static(model, Phi, Fv):
    Kr = Phi.T @ (model.K @ Phi)
    return Phi @ np.linalg.solve(Kr, Phi.T @ Fv)


def test_craig_bampton_all_interface_dofs_exact_static(model):
    A, B = end(0), end(1)
    rb = build(model, F.CraigBampton(2, {"A": A, "B": B}, interface_kind="nodes"))
    nodesA, nodesB = A(model.fe), B(model.fe)
    rng = np.random.default_rng(1)
    Fv = np.zeros(model.n_dofs)
    Fv[model.dofs_of(nodesB)] = rng.standard_normal(3 * len(nodesB))  # any interface load
    # full model with the least-squares frame of A held (W_A u = 0), by a dense KKT solve
    W = model.interfaces({"A": A}, "nodes")["A"].W
    C = np.zeros((6, model.n_dofs))
    C[:, model.dofs_of(nodesA)] = W
    kkt = np.block([[model.K.toarray(), C.T], [C, np.zeros((6, 6))]])
    u = np.linalg.solve(kkt, np.r_[Fv, np.zeros(6)])[: model.n_dofs]
    ur = reduced_static(model, rb.modes, Fv)
    assert np.linalg.norm(ur - u) <= 1e-9 * np.linalg.norm(u)
    assert "attached to interface 'A'" in rb.frame
    assert np.abs(rb.interface("A")[3]).max() < 1e-12  # frame of A fixed
    # the K_G static solver uses the same support
    ms = F.CraigBampton(2, {"A": A, "B": B}, interface_kind="nodes").build(model)
    assert np.linalg.norm(ms.static(Fv) - u) <= 1e-9 * np.linalg.norm(u)


def test_craig_bampton_rigid_reproduces_rigid_interface_static(model):
    A, B = end(0), end(1)
    rb = build(model, F.CraigBampton(2, {"A": A, "B": B}))
    kinds = rb.mode_kind
    assert kinds.count("constraint") == 6 and kinds.count("fixed-interface") == 2
    # interface B: six frame DOFs; a wrench on its frame is reproduced exactly
    _, origin, nodes, modes_B = rb.interface("B")
    from flexmbd.fem.interfaces import Interface

    itf = Interface("B", nodes, "rigid", model.fe.nodes[nodes])
    Fv = itf.load([0, 0, 0, 10.0, 20.0, 30.0], model.n_dofs)
    ur = reduced_static(model, rb.modes, Fv)
    # full model with interface B rigid: solve in the CB transformed space
    from flexmbd.fem.interfaces import interface_transform

    itfs = model.interfaces({"A": A, "B": B})
    T, n_i, sl = interface_transform(model.n_dofs, itfs)
    keep = np.r_[np.arange(n_i), sl["B"]]
    Th = T[:, keep]
    Kh = (Th.T @ model.K @ Th).tocsc()
    u = Th @ spla.spsolve(Kh, Th.T @ Fv)
    assert np.linalg.norm(ur - u) <= 1e-9 * np.linalg.norm(u)


def test_craig_bampton_with_constraint_modes_only_is_guyan(model):
    """n_modes = 0: the constraint modes alone (Guyan's static condensation) reproduce the
    interface static responses exactly, like the full set; a negative count is refused."""
    A, B = end(0), end(1)
    guyan = build(model, F.CraigBampton(0, {"A": A, "B": B}))
    full = build(model, F.CraigBampton(3, {"A": A, "B": B}))
    assert guyan.mode_kind == ("constraint",) * 6
    _, _, nodes, _ = guyan.interface("B")
    from flexmbd.fem.interfaces import Interface

    Fv = Interface("B", nodes, "rigid", model.fe.nodes[nodes]).load(
        [1.0, -2.0, 3.0, 10.0, 20.0, 30.0], model.n_dofs
    )
    ug, uf = reduced_static(model, guyan.modes, Fv), reduced_static(model, full.modes, Fv)
    assert np.linalg.norm(ug - uf) <= 1e-9 * np.linalg.norm(uf)
    with pytest.raises(MeshError, match="n_fixed=-1"):
        F.CraigBampton(-1, {"A": A})


def test_craig_bampton_distributing_and_mean_axis(model):
    A, B = end(0), end(1)
    rb = build(model, F.CraigBampton(3, {"A": A, "B": B}, interface_kind="distributing"))
    _, _, _, mA = rb.interface("A")
    assert np.abs(mA).max() < 1e-12  # reference frame fixed (weighted mean of its nodes)
    rm = build(model, F.CraigBampton(3, {"A": A, "B": B}, frame="mean-axis"))
    assert np.abs(rm.St).max() < 1e-10
    assert "mean axes" in rm.frame


def test_static_correction_exact_for_its_unit_loads(model):
    A, B = end(0), end(1)
    nodesA = A(model.fe)
    rb = build(model, F.StaticCorrection(4, [F.PointLoad(B)], fixed=A))
    from flexmbd.fem.interfaces import Interface

    nodesB = B(model.fe)
    itf = Interface("B", nodesB, "nodes", model.fe.nodes[nodesB])
    for j in range(6):
        Fv = itf.load(np.eye(6)[j], model.n_dofs)
        u = clamped_full(model, nodesA, Fv)
        assert np.linalg.norm(reduced_static(model, rb.modes, Fv) - u) <= 1e-9 * np.linalg.norm(u)
    # re-diagonalized (review eq. 4-6)
    assert np.allclose(rb.M_ff, np.eye(rb.n_modes), atol=1e-9)
    off = rb.K_ff - np.diag(np.diag(rb.K_ff))
    assert np.abs(off).max() < 1e-8 * np.abs(rb.K_ff).max()
    assert "static-correction" in " ".join(rb.mode_mix + rb.mode_kind)


def test_static_correction_free_free_inertia_relief(model):
    B = end(1)
    rb = build(model, F.StaticCorrection(4, [F.PointLoad(B, force=(0, 1, 0))]))
    assert np.abs(rb.St).max() < 1e-10  # mean axes kept
    assert rb.n_modes == 5


def test_first_ritz_vector_is_normalized_static_deflection(model):
    A, B = end(0), end(1)
    load = F.PointLoad(B, force=(0, 1.0, 0))
    rb = build(model, F.RitzVectors(5, load, fixed=A))
    from flexmbd.fem.interfaces import Interface

    nodesB = B(model.fe)
    Fv = Interface("B", nodesB, "nodes", model.fe.nodes[nodesB]).load(
        [0, 0, 0, 0, 1, 0], model.n_dofs
    )
    u = clamped_full(model, A(model.fe), Fv)
    u /= np.sqrt(u @ (model.M @ u))
    phi1 = rb.modes[:, 0] * np.sign(rb.modes[:, 0] @ u)
    assert np.linalg.norm(phi1 - u) <= 1e-10 * np.linalg.norm(u)
    assert np.allclose(rb.M_ff, np.eye(5), atol=1e-10)


def test_orthonormalize_option_and_labels(model):
    A, B = end(0), end(1)
    rb = build(model, F.CraigBampton(2, {"A": A, "B": B}), orthonormalize=True)
    assert np.allclose(rb.M_ff, np.eye(rb.n_modes), atol=1e-9)
    assert np.allclose(rb.frequencies, rb.mode_frequencies, rtol=1e-8)
    text = rb.info(file=open("/dev/null", "w"))
    assert "reference" in text and "dropped" in text


def test_modal_damping(model):
    rb = build(model, F.NormalModes(3, fixed=end(0)), zeta=0.02)
    w = 2 * np.pi * rb.frequencies
    assert np.allclose(np.diag(rb.D_ff), 2 * 0.02 * w, rtol=1e-8)
    rr = build(model, F.NormalModes(3, fixed=end(0)), rayleigh=(1.0, 1e-4))
    assert np.allclose(rr.D_ff, rr.M_ff + 1e-4 * rr.K_ff)


def test_reduction_progress_bar_names_the_stages(model, monkeypatch, capsys):
    """A progress bar over the reduction stages on request (tests are quiet otherwise)."""
    pytest.importorskip("tqdm")
    monkeypatch.setenv("FLEXMBD_PROGRESS", "1")
    build(model, F.NormalModes(3), name="beam")
    err = capsys.readouterr().err
    assert "reduce beam" in err and "5/5" in err
    monkeypatch.setenv("FLEXMBD_PROGRESS", "0")
    build(model, F.NormalModes(3), name="beam")
    assert capsys.readouterr().err == ""
