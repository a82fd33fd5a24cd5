"""FFR body equations from invariants against a brute-force particle body."""

import numpy as np
import pytest

from flexmbd import spatial as sp
from flexmbd.flexible import ffr

rng = np.random.default_rng(11)


def particle_body(n_modes=4, n_particles=30):
    m = rng.uniform(0.5, 2.0, n_particles)
    x0 = rng.normal(size=(n_particles, 3))
    phi = 0.3 * rng.normal(size=(n_particles, 3, n_modes))
    return m, x0, phi, ffr.ModalInvariants.from_particles(m, x0, phi)


def L_matrix(x0p, phip, q):
    s = x0p + phip @ q
    return np.hstack([-sp.skew(s), np.eye(3), phip]), s


@pytest.mark.parametrize("n_modes", [0, 1, 4])
def test_mass_matrix_equals_particle_sum(n_modes):
    m, x0, phi, inv = particle_body(n_modes)
    q = rng.normal(size=n_modes)
    M = sum(mp * L.T @ L for mp, (L, _) in zip(m, (L_matrix(a, b, q) for a, b in zip(x0, phi))))
    assert np.allclose(ffr.mass_matrix(inv, q), M, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("n_modes", [0, 3])
def test_velocity_forces_equal_particle_sum(n_modes):
    m, x0, phi, inv = particle_body(n_modes)
    q, u = rng.normal(size=n_modes), rng.normal(size=6 + n_modes)
    w, v, qd = u[:3], u[3:6], u[6:]
    h = np.zeros(6 + n_modes)
    for mp, a, b in zip(m, x0, phi):
        L, s = L_matrix(a, b, q)
        h += mp * L.T @ (np.cross(w, v) + np.cross(w, np.cross(w, s)) + 2 * np.cross(w, b @ qd))
    assert np.allclose(ffr.velocity_forces(inv, q, u), h, rtol=1e-12, atol=1e-11)


def test_body_equations_match_true_particle_accelerations():
    """M u̇ + h equals Σ m Lᵀ a with a the particle accelerations of the real motion."""
    n = 3
    m, x0, phi, inv = particle_body(n, 12)
    R0, r0 = sp.rotvec_to_rot(rng.normal(size=3)), rng.normal(size=3)
    q0, u, ud = rng.normal(size=n), rng.normal(size=6 + n), rng.normal(size=6 + n)
    w, v, qd = u[:3], u[3:6], u[6:]
    wd, vd, qdd = ud[:3], ud[3:6], ud[6:]

    def positions(t):
        R = R0 @ sp.rotvec_to_rot(t * w + 0.5 * t * t * wd)
        r = r0 + t * R0 @ v + 0.5 * t * t * R0 @ (vd + np.cross(w, v))
        q = q0 + t * qd + 0.5 * t * t * qdd
        return np.array([r + R @ (a + b @ q) for a, b in zip(x0, phi)])

    h = 1e-3
    acc = (positions(h) - 2 * positions(0.0) + positions(-h)) / h**2  # exact for quadratics
    # the motion above is exact to second order, so accelerations at t=0 are exact up to O(h^2)
    lhs = np.zeros(6 + n)
    for mp, a, b, ap in zip(m, x0, phi, acc):
        L, _ = L_matrix(a, b, q0)
        lhs += mp * L.T @ (R0.T @ ap)
    rhs = ffr.mass_matrix(inv, q0) @ ud + ffr.velocity_forces(inv, q0, u)
    assert np.allclose(lhs, rhs, rtol=1e-5, atol=1e-5 * np.abs(rhs).max())


def test_rigid_limit_is_spatial_inertia():
    m, x0, phi, inv = particle_body(0)
    com = inv.c / inv.mass
    Ic = (
        inv.E0.trace() * np.eye(3)
        - inv.E0
        - inv.mass * (com @ com * np.eye(3) - np.outer(com, com))
    )
    assert np.allclose(
        ffr.mass_matrix(inv, np.zeros(0)), sp.spatial_inertia(inv.mass, com, Ic), atol=1e-12
    )


def test_gravity_force_is_particle_sum():
    m, x0, phi, inv = particle_body(2)
    q, g = rng.normal(size=2), np.array([0.1, -9.81, 0.3])
    Q = sum(mp * L.T @ g for mp, (L, _) in zip(m, (L_matrix(a, b, q) for a, b in zip(x0, phi))))
    assert np.allclose(ffr.gravity_forces(inv, q, g), Q, atol=1e-12)
