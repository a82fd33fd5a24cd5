"""Spatial algebra identities (CFA paper eq. 1-3, quaternion kinematics)."""

import numpy as np
import pytest

from flexmbd import spatial as sp

rng = np.random.default_rng(1)


def random_rot():
    return sp.quat_to_rot(sp.rot_to_quat(sp.rotvec_to_rot(rng.normal(size=3) * 2)))


def test_skew_is_cross_product_and_unskew_inverts():
    a, b = rng.normal(size=3), rng.normal(size=3)
    assert np.allclose(sp.skew(a) @ b, np.cross(a, b), atol=1e-15)
    assert np.allclose(sp.unskew(sp.skew(a)), a, atol=1e-15)


def test_shift_composes_and_inverts():
    a, b = rng.normal(size=3), rng.normal(size=3)
    assert np.allclose(sp.shift(a) @ sp.shift(b), sp.shift(a + b), atol=1e-15)
    assert np.allclose(sp.shift(a) @ sp.shift(-a), np.eye(6), atol=1e-15)


def test_shift_moves_wrench_and_twist_consistently():
    # point A = B + p on one rigid body
    p = rng.normal(size=3)
    F_A = rng.normal(size=6)  # [n; f] at A
    V_B = rng.normal(size=6)  # [w; v] at B
    F_B = sp.shift(p) @ F_A
    V_A = sp.shift(p).T @ V_B
    # moment about B of a force f at A is n_A + p x f
    assert np.allclose(F_B[:3], F_A[:3] + np.cross(p, F_A[3:]), atol=1e-14)
    # velocity at A = v_B + w x p
    assert np.allclose(V_A[3:], V_B[3:] + np.cross(V_B[:3], p), atol=1e-14)
    # power is the same at both points
    assert np.isclose(F_A @ V_A, F_B @ V_B, rtol=1e-13)


def test_spatial_inertia_is_parallel_axis_and_paper_shift():
    m, c = 2.5, rng.normal(size=3)
    A = rng.normal(size=(3, 3))
    Ic = A @ A.T
    I_O = sp.spatial_inertia(m, c, Ic)
    I_C = np.zeros((6, 6))
    I_C[:3, :3] = Ic
    I_C[3:, 3:] = m * np.eye(3)
    # paper: I_O = S I_C S^T with S the shift from the com to O
    assert np.allclose(I_O, sp.shift(c) @ I_C @ sp.shift(c).T, atol=1e-13)
    # parallel-axis theorem
    assert np.allclose(I_O[:3, :3], Ic + m * (c @ c * np.eye(3) - np.outer(c, c)), atol=1e-13)
    assert np.allclose(I_O, I_O.T, atol=1e-14)


def test_quaternion_round_trips_and_products():
    for _ in range(50):
        R = random_rot()
        e = sp.rot_to_quat(R)
        assert np.isclose(np.linalg.norm(e), 1.0, atol=1e-15)
        assert np.allclose(sp.quat_to_rot(e), R, atol=1e-14)
        phi = sp.quat_to_rotvec(e)
        assert np.allclose(sp.rotvec_to_rot(phi), R, atol=1e-13)
        e2 = sp.rot_to_quat(random_rot())
        assert np.allclose(
            sp.quat_to_rot(sp.quat_multiply(e, e2)), R @ sp.quat_to_rot(e2), atol=1e-14
        )
        assert np.allclose(sp.quat_multiply(e, sp.quat_conjugate(e)), [1, 0, 0, 0], atol=1e-15)


def test_small_and_half_turn_rotation_vectors():
    for phi in (np.array([1e-10, 0, 0]), np.array([0, 0, np.pi]), np.array([0, 1e-9, 2e-9])):
        assert np.allclose(sp.quat_to_rotvec(sp.quat_from_rotvec(phi)), phi, atol=1e-14)
    assert np.allclose(sp.rotation_matrix((0, 0, 1), np.pi / 2) @ [1, 0, 0], [0, 1, 0], atol=1e-15)


def test_quaternion_rate_matrix_matches_body_angular_velocity():
    e = sp.rot_to_quat(random_rot())
    w = rng.normal(size=3)
    h = 1e-6
    de = (sp.quat_integrate(e, w, h) - sp.quat_integrate(e, w, -h)) / (2 * h)
    assert np.allclose(de, sp.quat_rate_matrix(e) @ w, atol=1e-9)
    # exact exponential: R(t) = R0 expm(t [w])
    t = 0.37
    assert np.allclose(
        sp.quat_to_rot(sp.quat_integrate(e, w, t)),
        sp.quat_to_rot(e) @ sp.rotvec_to_rot(w * t),
        atol=1e-14,
    )


def test_motion_and_force_transforms_are_dual():
    R, p = random_rot(), rng.normal(size=3)
    X = sp.motion_transform(R, p)
    V_B, F_A = rng.normal(size=6), rng.normal(size=6)
    V_A = X @ V_B
    F_B = sp.force_transform(R, p) @ F_A
    assert np.isclose(V_A @ F_A, V_B @ F_B, rtol=1e-13)
    # velocity of frame A's origin seen from B's twist
    assert np.allclose(R @ V_A[3:], V_B[3:] + np.cross(V_B[:3], p), atol=1e-14)


@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 6])
def test_orthonormal_complement(k):
    Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    H = Q[:, :k]
    W = sp.orthonormal_complement(H)
    assert W.shape == (6, 6 - k)
    assert np.allclose(W.T @ W, np.eye(6 - k), atol=1e-14)
    assert np.allclose(H.T @ W, 0, atol=1e-14)


def test_is_rotation_rejects_reflections():
    assert sp.is_rotation(random_rot())
    assert not sp.is_rotation(np.diag([1.0, 1.0, -1.0]))
    assert not sp.is_rotation(2 * np.eye(3))


def test_quat_from_rotvec_batch_is_the_per_row_function_bit_for_bit():
    """Rows of rotation vectors from 1e-12 rad (the Taylor branch below 1e-8) to 10 rad,
    zero and exactly on the branch: the batch equals :func:`quat_from_rotvec` row by row
    bit for bit, and its rows are unit quaternions of the rotations (an independent
    oracle: ``quat_to_rot`` against Rodrigues' formula)."""
    from flexmbd.spatial import quat_from_rotvec, quat_from_rotvec_batch, quat_to_rot

    rng = np.random.default_rng(7)
    phi = rng.normal(size=(3000, 3)) * 10.0 ** rng.uniform(-12, 1, size=(3000, 1))
    phi[0] = 0.0
    phi[1] = [1e-8, 0.0, 0.0]
    phi[-1] = [0.3, -1.2, 2.0]
    got = quat_from_rotvec_batch(phi)
    np.testing.assert_array_equal(got, np.array([quat_from_rotvec(x) for x in phi]))
    assert got.shape == (3000, 4) and quat_from_rotvec_batch(np.zeros((0, 3))).shape == (0, 4)
    x = phi[-1]
    th = np.linalg.norm(x)
    k = sp.skew(x / th)
    rodrigues = np.eye(3) + np.sin(th) * k + (1 - np.cos(th)) * k @ k
    np.testing.assert_allclose(quat_to_rot(got[-1]), rodrigues, atol=1e-14)
