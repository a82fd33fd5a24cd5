"""FlexibleBody component: lazy reduction, cache, invariants, attachment frames."""

from pathlib import Path

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.flexible import ffr

MESH = Path(__file__).resolve().parents[2] / "meshes" / "beam_hex.msh"
STEEL = dict(E=2.1e11, nu=0.3, rho=7850.0)


@pytest.fixture(scope="module")
def beam(tmp_path_factory):
    cache = tmp_path_factory.mktemp("fb") / "beam.npz"
    body = fm.FlexibleBody.from_mesh(
        MESH,
        fm.Material(**STEEL),
        fm.CraigBampton(4, interfaces={"A": "A", "B": "B"}, frame="interface"),
        cache=cache,
    )
    return body, cache


def test_lazy_reduction_and_disk_cache(beam):
    # a body of its own (the module's shared one may be reduced already by another test,
    # in whatever order they run), with the shared cache file: whichever of the two is
    # reduced first writes the cache, and the other one reads it
    shared, cache = beam
    body = fm.FlexibleBody.from_mesh(
        MESH,
        fm.Material(**STEEL),
        fm.CraigBampton(4, interfaces={"A": "A", "B": "B"}, frame="interface"),
        cache=cache,
    )
    assert body._reduced is None and "not reduced" in body.summary()
    # 4 fixed-interface modes + 6 constraint modes of B (A is the reference frame)
    assert body.n_modes == 10 and cache.exists()
    assert body.reduced.mode_kind.count("constraint") == 6
    assert np.array_equal(shared.reduced.modes, body.reduced.modes)


def test_invariants_give_the_rigid_inertia_and_mass(beam):
    body, _ = beam
    inv = body.invariants()
    assert np.isclose(inv.mass, 7850 * 1.0 * 0.05 * 0.05, rtol=1e-12)
    M = ffr.mass_matrix(inv, np.zeros(body.n_modes))
    assert np.allclose(M[:3, :3], body.reduced.inertia_origin, rtol=1e-12)
    assert np.allclose(M[6:, 6:], body.reduced.M_ff, rtol=1e-12)
    # the body frame sits on interface A (x = 0 face) with Craig-Bampton's default
    assert np.allclose(body.interface("A").position, [0, 0.025, 0.025])


def test_interface_and_node_frames_move_with_the_modes(beam):
    body, _ = beam
    fa, fb = body.interface("A"), body.interface("B")
    assert np.allclose(fa.modes, 0, atol=1e-10)  # reference interface does not deform
    q = 1e-3 * np.arange(1, 11)
    R, p = fb.pose(q)
    assert np.allclose(p, fb.position + fb.modes[3:] @ q)
    tip = body.point((1.0, 0.025, 0.025))
    assert np.allclose(tip.position, [1.0, 0.025, 0.025], atol=1e-12)
    assert np.allclose(
        tip.modes[3:], body.reduced.modes[3 * tip.node_index : 3 * tip.node_index + 3]
    )
    with pytest.raises(fm.MeshError, match="no interface 'C'"):
        body.interface("C")


def test_modal_initial_values_and_stiffening_switch(beam):
    body, _ = beam
    with pytest.raises(fm.ModelError, match="10 modal values"):
        _ = fm.FlexibleBody(body.reduced, q0=[1.0]).q0
    off = fm.FlexibleBody(body.reduced, geometric_stiffening=False)
    assert not off.geometric_stiffness((0, 0, 10.0), (0, 0, 0), (0, 0, 0)).any()
    on = fm.FlexibleBody(body.reduced)
    assert on.geometric_stiffness((0, 0, 10.0), (0, 0, 0), (0, 0, 0)).any()


def test_bad_input():
    with pytest.raises(fm.ModelError, match="give a material"):
        fm.FlexibleBody.from_mesh(MESH, None, fm.NormalModes(4))
    with pytest.raises(fm.ModelError, match="give a ReducedBody"):
        fm.FlexibleBody()
