"""The compiled engine equals the numpy reference of the absolute formulation."""

import sys
from pathlib import Path

import numpy as np
import pytest
from flex_helpers import small_beam
from test_absolute_jacobians import flexible_model, random_state

from flexmbd.absolute.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from models import stiffened_pendulum  # noqa: E402


@pytest.fixture(scope="module")
def system():
    s = flexible_model(loads=False).compile("absolute")
    s.flexible.flex[0].set_interface_loads({"B": np.array([0.5, -0.3, 0.2, 40.0, -25.0, 30.0])})
    return s


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_engine_terms_equal_reference(system, seed, sparse):
    s = system
    eng = Engine(s, sparse=sparse)  # dense storage, or the sparse solve's compressed layout
    rng = np.random.default_rng(seed)
    q, qd, qdd, lam = random_state(s, rng)
    coefs = rng.uniform(0.5, 2.0, 5)
    r, phi, A = eng.terms(q, qd, qdd, lam, 0.2, coefs)
    T = s.dae_terms(q, qd, qdd, lam, 0.2)
    Aref = s.iteration_matrix(T, *coefs).toarray()
    rref = T.R + T.PtL - T.Q
    assert np.abs(r - rref).max() <= 1e-12 * np.abs(rref).max()
    assert np.abs(phi - T.phi).max() <= 1e-13
    assert np.abs(A - Aref).max() <= 1e-12 * np.abs(Aref).max()
    # blockwise too (reference rows are small next to the modal stiffness)
    n7 = s.n_rigid
    assert np.abs(A[:n7, :n7] - Aref[:n7, :n7]).max() <= 1e-11 * np.abs(Aref[:n7, :n7]).max()


def test_engine_reactions_equal_reference(system):
    s = system
    eng = Engine(s)
    rng = np.random.default_rng(4)
    q, qd, qdd, lam = random_state(s, rng)
    assert np.allclose(
        eng.reactions(q, lam), s.constraints.reactions(q, lam), rtol=1e-12, atol=1e-10
    )


def hanging_model():
    """The beam hanging from a rigid arm by a revolute joint whose child frame is the
    beam's interface B (a deforming child frame that carries the lagged load); the beam's
    reference interface A is free. A double pendulum under gravity, released with the
    beam turning at 3 rad/s about the arm."""
    return stiffened_pendulum(small_beam(3, "cb"))


@pytest.mark.parametrize("which", ["parent", "child"])
@pytest.mark.parametrize("seed", range(2))
def test_compiled_interface_loads_equal_reference(system, which, seed):
    """The lagged interface loads the compiled step loop sets (wrench vector and the
    stiffness ``sum v_k K_k``) equal ``update_interface_loads`` (numpy reference) at
    random states: interface B as a joint's parent frame (flexible_model) and as a joint's
    deforming child frame (hanging_model)."""
    s = system if which == "parent" else hanging_model().compile("absolute")
    eng = Engine(s)
    d = s.flexible.flex[0]
    assert eng.itf_lagged and d.itf_names == ["B"]
    rng = np.random.default_rng(seed)
    q, _, _, lam = random_state(s, rng)
    v, K = eng.interface_loads(q, lam)
    s.update_interface_loads(q, lam)
    assert np.abs(d.itf_load).max() > 1.0  # the joint loads the interface
    assert np.allclose(v, d.itf_load, rtol=1e-12, atol=1e-12 * np.abs(d.itf_load).max())
    Kref = d.K_itf.ravel()
    assert np.abs(K - Kref).max() <= 1e-12 * np.abs(Kref).max()


def test_compiled_loop_updates_interface_loads_like_python_steps():
    """The compiled step loop (interface loads updated inside it) and the per-step Python
    path (``update_interface_loads`` after each step, forced by a callback) integrate the
    same trajectory; the loads stored after the compiled run are those of its last state."""
    m = hanging_model()
    runs = {}
    for mode in ("compiled", "python"):
        s = m.compile("absolute")
        cb = (lambda t, q, qd: None) if mode == "python" else None
        res = s.simulate(0.05, dt=1e-3, integrator="generalized-alpha", rho_inf=0.8, callback=cb)
        runs[mode] = (s, res)
    (s, rc), (_, rp) = runs["compiled"], runs["python"]
    assert np.abs(rc.q - rp.q).max() <= 1e-9 * np.abs(rp.q).max()
    modal = rc.q[:, s.n_rigid :]
    assert np.abs(rc.q[:, s.n_rigid :] - rp.q[:, s.n_rigid :]).max() <= 1e-7 * np.abs(modal).max()
    d = s.flexible.flex[0]
    stored = d.itf_load.copy()
    s.update_interface_loads(rc.q[-1], rc.extra["lambda"][-1], rc.t[-1])
    assert np.abs(stored).max() > 1.0
    assert np.allclose(stored, d.itf_load, rtol=1e-10, atol=1e-10 * np.abs(stored).max())
