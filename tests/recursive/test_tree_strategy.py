"""The recursive system's model/workspace split and its two tree strategies.

* ``system.tree`` (the integer description) and ``system.workspace`` (the float arrays
  of one thread) are the arrays the free algorithms take; ``replicate`` gives
  independent per-thread copies, and a threaded batch equals the single-thread one;
* body motions over a history (rigid bodies at once, floating frames of flexible
  bodies per state) equal the per-state body states;
* with flexible bodies the forward dynamics is affine in ``tau`` with the CFA's
  ``M^-1`` columns as slope, the mass matrix is their inverse and the inverse dynamics
  (by solves) gives back the accelerations;
* the hot flexible kernels are compiled without reference counting, as the rigid ones
  (with it, the shared recursion steps cost the flexible CFA 6-10 %, see
  benchmarks/RESULTS.md, section bodyterms).
"""

import numpy as np
import pytest

from flexmbd.recursive import _flexkernels as FK
from flexmbd.recursive.system import TreeModel, TreeWorkspace

from . import models
from .test_flexible_cfa import _random_state, chain


def test_model_and_workspace_are_the_free_algorithms_arguments():
    s = models.chain(6).compile("recursive")
    assert isinstance(s.tree, TreeModel) and isinstance(s.workspace, TreeWorkspace)
    assert tuple(s.arrays) == (*s.tree, *s.workspace)  # the same arrays, not copies
    copies = s.workspace.replicate(3)
    assert len(copies) == len(s.workspace) - 1  # gravity is shared
    for c, a in zip(copies, s.workspace):
        assert c.shape == (3, *a.shape) and c.flags.c_contiguous
        np.testing.assert_array_equal(c[1], a)
    copies[0][2] += 1.0  # a thread's workspace is its own
    assert not np.shares_memory(copies[0], s.workspace.Mm)
    rng = np.random.default_rng(3)
    Q, V = rng.normal(size=(40, s.nq)), rng.normal(size=(40, s.nv))
    q1, r1 = s.forward_dynamics_arrays(Q, V, threads=1)
    q2, r2 = s.forward_dynamics_arrays(Q, V, threads=2)
    np.testing.assert_array_equal(q2, q1)
    np.testing.assert_array_equal(r2, r1)


def test_body_motion_of_rigid_and_flexible_bodies_equals_body_states():
    s = chain(rigid_tip=True).compile("recursive")
    rng = np.random.default_rng(7)
    states = [_random_state(s, rng, 1e-3) for _ in range(3)]
    Q = np.array([q for q, _ in states])
    QD = np.array([qd for _, qd in states])
    motion = s.body_motion(Q, QD)
    assert set(motion) == {"b0", "b1", "tip"}
    for i in range(len(Q)):
        for name, st in s.body_states(Q[i], QD[i]).items():
            for a, x in zip(motion[name], st):
                np.testing.assert_allclose(a[i], x, rtol=0, atol=1e-14)


def test_flexible_mass_matrix_and_inverse_dynamics_invert_the_forward_dynamics():
    s = chain(rigid_tip=True).compile("recursive")
    q, qd = _random_state(s, np.random.default_rng(11), 1e-3)
    M = s.mass_matrix(q)
    assert np.array_equal(M, M.T) and np.linalg.eigvalsh(M)[0] > 0
    # forward dynamics is affine in tau with slope M^-1 (the CFA's columns)
    Minv = s.solve_mass(q, np.eye(s.nv))
    q0 = s.qdd(q, qd)  # free accelerations: stiff modes, up to ~1e6 here
    tau = np.random.default_rng(5).normal(size=s.nv)
    d = s.qdd(q, qd, tau) - q0
    np.testing.assert_allclose(d, Minv @ tau, rtol=0, atol=1e-9 * np.abs(d).max())
    np.testing.assert_allclose(M @ Minv, np.eye(s.nv), rtol=0, atol=1e-9)
    # inverse dynamics (by solves for flexible bodies) gives back the accelerations
    qdd = np.random.default_rng(12).normal(size=s.nv)
    tau, _ = s.inverse_dynamics(q, qd, qdd)
    np.testing.assert_allclose(s.qdd(q, qd, tau), qdd, rtol=0, atol=1e-10 * np.abs(q0).max())


@pytest.mark.parametrize(
    "name",
    [
        "kinematics",
        "bias_forces",
        "factor",
        "solve",
        "forward_dynamics",
        "body_accelerations",
        "stiffening_forces",
        "frame_state",
        "ffr_terms",
    ],
)
def test_hot_flexible_kernels_without_reference_counting(name):
    assert getattr(FK, name).targetoptions.get("_nrt") is False
