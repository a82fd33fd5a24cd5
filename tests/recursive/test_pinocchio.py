"""Peer check: Pinocchio (pin) accelerations and joint forces on the same trees.

pin's ``data.f[i]`` after ``rnea(q, v, a)`` is the wrench of the parent on body i
through joint i, in joint frame i about its origin, ordered [linear; angular]
(docs/design/facts.rst); ours is [angular; linear] in the child joint frame.
"""

import numpy as np
import pytest

import flexmbd as fm

from .example_scripts import example
from .models import chain, random_inertia
from .pin_models import q_to_pin, to_pinocchio, v_from_pin, v_to_pin

pin = pytest.importorskip("pinocchio")

TOL = 1e-10


def compare(model, q, qd, tau):
    s = model.compile("recursive")
    fd = s.forward_dynamics(q, qd, tau)
    pm, maps = to_pinocchio(model)
    pd = pm.createData()
    qp, vp, tp = q_to_pin(maps, q), v_to_pin(maps, qd), v_to_pin(maps, tau)
    a = pin.aba(pm, pd, qp, vp, tp)
    pin.rnea(pm, pd, qp, vp, a)
    qdd = v_from_pin(maps, a)
    err_a = np.linalg.norm(fd.qdd - qdd) / np.linalg.norm(qdd)
    forces = np.array(
        [np.concatenate([pd.f[i].angular, pd.f[i].linear]) for i in range(1, pm.njoints)]
    )
    err_f = np.linalg.norm(fd.reactions - forces) / np.linalg.norm(forces)
    return err_a, err_f


@pytest.mark.parametrize("n", [1, 5, 12, 20])
def test_revolute_chain_matches_pinocchio(n):
    m = chain(n)
    rng = np.random.default_rng(n)
    ea, ef = compare(m, rng.normal(size=n), rng.normal(size=n), rng.normal(size=n))
    assert ea < TOL and ef < TOL


def branched_robot(seed, floating):
    """Random branched robot: revolute, prismatic and spherical joints, random frames."""
    rng = np.random.default_rng(seed)
    m = fm.Model("branched")
    bodies = []
    for i in range(14):
        mass = rng.uniform(0.5, 3)
        b = fm.RigidBody(mass, random_inertia(rng, mass), com=rng.normal(scale=0.2, size=3))
        setattr(m, f"b{i}", b)
        inboard = m.ground if i == 0 else bodies[rng.integers(max(0, i - 3), i)]
        kw = dict(
            parent_frame=(rng.normal(scale=0.4, size=3), rng.normal(size=3)),
            child_frame=(rng.normal(scale=0.2, size=3), rng.normal(size=3)),
        )
        if i == 0 and floating:
            j = fm.Free(inboard, b, **kw)
        else:
            kind = rng.choice(["rev", "rev", "pri", "sph"])
            if kind == "rev":
                j = fm.Revolute(inboard, b, axis=rng.normal(size=3), **kw)
            elif kind == "pri":
                j = fm.Prismatic(inboard, b, axis=rng.normal(size=3), **kw)
            else:
                j = fm.Spherical(inboard, b, **kw)
        setattr(m, f"j{i}", j)
        bodies.append(b)
    m.g = fm.Gravity((0.0, 0.0, -9.81))
    return m


@pytest.mark.parametrize("seed,floating", [(1, False), (2, True), (3, True)])
def test_branched_robot_matches_pinocchio(seed, floating):
    m = branched_robot(seed, floating)
    s = m.compile("recursive")
    assert len(s.schedule.node_children) > 0  # really branched
    rng = np.random.default_rng(seed)
    q = s.normalize(rng.normal(size=s.nq))
    ea, ef = compare(m, q, rng.normal(size=s.nv), rng.normal(size=s.nv))
    assert ea < TOL and ef < TOL


def test_space_robot_matches_pinocchio():
    m = example("space_robot").build()
    s = m.compile("recursive")
    rng = np.random.default_rng(5)
    q = s.normalize(rng.normal(size=s.nq))
    qd, tau = rng.normal(size=s.nv), rng.normal(size=s.nv)
    # drives are JointForce elements: give pin the same total joint force
    fd = s.forward_dynamics(q, qd, tau, t=1.0)
    pm, maps = to_pinocchio(m)
    pd = pm.createData()
    total = tau.copy()
    for f in m.forces():
        sl = s._vslice[f.joint.name]
        total[sl] += f.generalized_force(1.0, q[s._qslice[f.joint.name]], qd[sl])
    a = pin.aba(pm, pd, q_to_pin(maps, q), v_to_pin(maps, qd), v_to_pin(maps, total))
    pin.rnea(pm, pd, q_to_pin(maps, q), v_to_pin(maps, qd), a)
    qdd = v_from_pin(maps, a)
    assert np.linalg.norm(fd.qdd - qdd) / np.linalg.norm(qdd) < TOL
    forces = np.array(
        [np.concatenate([pd.f[i].angular, pd.f[i].linear]) for i in range(1, pm.njoints)]
    )
    assert np.linalg.norm(fd.reactions - forces) / np.linalg.norm(forces) < TOL


def _fast_distal_chain(seed):
    """A light, slow first link under four heavy links on skew revolute axes: the
    system's accelerations (up to ~1e4 rad/s^2) dwarf the first link's."""
    rng = np.random.default_rng(seed)
    m = fm.Model("fast_distal")
    prev = m.ground
    for i in range(5):
        mass = 0.2 if i == 0 else 40.0 * i
        b = fm.RigidBody(mass, random_inertia(rng, mass), com=rng.normal(scale=0.2, size=3))
        setattr(m, f"b{i}", b)
        frames = dict(
            parent_frame=(rng.normal(scale=0.4, size=3), rng.normal(size=3)),
            child_frame=(rng.normal(scale=0.2, size=3), rng.normal(size=3)),
        )
        setattr(m, f"j{i}", fm.Revolute(prev, b, axis=rng.normal(size=3), **frames))
        prev = b
    m.g = fm.Gravity((0.0, 0.0, -9.81))
    return m


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_body_accelerations_exact_in_constrained_directions(seed):
    """A revolute joint lets its child's angular acceleration differ from its parent's
    only by ``u qdd + (w_p x u) qd`` (``u`` the world axis): the part normal to ``u`` is
    zero up to round-off of the two bodies' own accelerations (the returned accelerations
    are kinematic, as Pinocchio's forward pass; from the forces they carried round-off of
    the system's scale: up to 3e5 eps of the first link's). Angular accelerations agree
    with Pinocchio's."""
    m = _fast_distal_chain(seed)
    s = m.compile("recursive")
    rng = np.random.default_rng(10 + seed)
    q, tau = rng.normal(size=5), rng.normal(size=5)
    qd = np.array([0.5, 30.0, 40.0, 50.0, 60.0]) * rng.choice([-1.0, 1.0], 5)
    fd = s.forward_dynamics(q, qd, tau)
    pm, maps = to_pinocchio(m)
    pd = pm.createData()
    a = pin.aba(pm, pd, q, qd, tau)
    pin.forwardKinematics(pm, pd, q, qd, a)
    alpha_p, w_p = np.zeros(3), np.zeros(3)
    for i, (j, b) in enumerate(zip(m.joints(), m.bodies(), strict=True)):
        R = pd.oMi[i + 1].rotation  # pin's joint frame i is our child joint frame
        u = R @ (np.asarray(j.axis, dtype=float) / np.linalg.norm(j.axis))
        alpha = fd.body_acceleration(b.name)[0]
        ref = R @ pd.a[i + 1].angular
        assert np.abs(alpha - ref).max() <= TOL * np.abs(ref).max(), b.name
        r = alpha - alpha_p - np.cross(w_p, u) * qd[i]
        r -= u * (u @ r)
        own = np.abs(alpha).max() + np.abs(alpha_p).max() + np.linalg.norm(w_p) * abs(qd[i])
        assert np.abs(r).max() <= 16 * np.finfo(float).eps * own, b.name
        alpha_p, w_p = alpha, R @ pd.v[i + 1].angular
