"""Joint kinematics: motion subspaces against finite differences of the transforms."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd import spatial as sp

rng = np.random.default_rng(7)


def make(kind):
    a, b = fm.RigidBody(1.0, (1, 1, 1)), fm.RigidBody(1.0, (1, 1, 1))
    ax = rng.normal(size=3)
    if kind is fm.Universal:
        a1 = ax / np.linalg.norm(ax)
        a2 = np.cross(a1, rng.normal(size=3))
        return fm.Universal(a, b, axis1=a1, axis2=a2)
    if kind in (fm.Revolute, fm.Prismatic, fm.Cylindrical):
        return kind(a, b, axis=ax)
    if kind is fm.Planar:
        return fm.Planar(a, b, normal=ax)
    return kind(a, b)


KINDS = [
    fm.Revolute,
    fm.Prismatic,
    fm.Cylindrical,
    fm.Universal,
    fm.Spherical,
    fm.Planar,
    fm.Fixed,
    fm.Free,
]


def random_q(j):
    q = rng.normal(size=j.nq)
    return j.normalize(q) if j.nq else q


def relative_twist(j, q, v, h=1e-6):
    """Twist of the child frame relative to the parent, child axes, by central differences."""
    Rp, pp = j.transform(j.integrate(q, v, h))
    Rm, pm = j.transform(j.integrate(q, v, -h))
    R, _ = j.transform(q)
    w = sp.unskew(R.T @ (Rp - Rm) / (2 * h))
    vel = R.T @ (pp - pm) / (2 * h)
    return np.concatenate([w, vel])


@pytest.mark.parametrize("kind", KINDS)
def test_subspaces_orthonormal_and_complementary(kind):
    j = make(kind)
    q = random_q(j)
    H, W = j.motion_subspace(q), j.constraint_subspace(q)
    assert H.shape == (6, j.nv) and W.shape == (6, 6 - j.nv)
    assert np.allclose(H.T @ H, np.eye(j.nv), atol=1e-13)
    assert np.allclose(W.T @ W, np.eye(6 - j.nv), atol=1e-13)
    assert np.allclose(H.T @ W, 0, atol=1e-13)
    assert j.n_constraints == 6 - j.nv


@pytest.mark.parametrize("kind", KINDS)
def test_relative_twist_is_H_v(kind):
    j = make(kind)
    q, v = random_q(j), rng.normal(size=j.nv)
    assert np.allclose(relative_twist(j, q, v), j.motion_subspace(q) @ v, atol=1e-8)


@pytest.mark.parametrize("kind", KINDS)
def test_qdot_matches_integrate_and_difference_inverts(kind):
    j = make(kind)
    q, v = random_q(j), rng.normal(size=j.nv)
    h = 1e-6
    fd = (j.integrate(q, v, h) - j.integrate(q, v, -h)) / (2 * h)
    assert np.allclose(fd, j.qdot(q, v), atol=1e-8)
    q1 = j.integrate(q, v, 0.7)
    assert np.allclose(j.difference(q, q1), 0.7 * v, atol=1e-11)


@pytest.mark.parametrize("kind", KINDS)
def test_bias_acceleration_is_Hdot_v(kind):
    j = make(kind)
    q, v = random_q(j), rng.normal(size=j.nv)
    h = 1e-6
    # dH/dt v along the motion q(t) = integrate(q, v, t)
    dH = j.motion_subspace(j.integrate(q, v, h)) - j.motion_subspace(j.integrate(q, v, -h))
    assert np.allclose(dH @ v / (2 * h), j.bias_acceleration(q, v), atol=1e-8)


def test_neutral_coordinates_give_identity():
    for kind in KINDS:
        j = make(kind)
        R, p = j.transform(j.neutral())
        assert np.allclose(R, np.eye(3)) and np.allclose(p, 0)


def test_joint_input_errors_name_the_problem():
    a, b = fm.RigidBody(1.0), fm.RigidBody(1.0)
    with pytest.raises(fm.ModelError, match="zero length"):
        fm.Revolute(a, b, axis=(0, 0, 0))
    with pytest.raises(fm.ModelError, match="orthogonal"):
        fm.Universal(a, b, axis1=(1, 0, 0), axis2=(1, 1, 0))
    with pytest.raises(fm.ModelError, match="same body"):
        fm.Revolute(a, a)
    with pytest.raises(fm.ModelError, match="q0 must have 1"):
        fm.Revolute(a, b, q0=[0.1, 0.2])
    with pytest.raises(fm.ModelError, match="orthonormal"):
        fm.Revolute(a, b, parent_frame=((0, 0, 0), 2 * np.eye(3)))
    with pytest.raises(fm.ModelError, match="must be a body"):
        fm.Revolute(a, "b")
