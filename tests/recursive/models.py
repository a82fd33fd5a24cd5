"""Model builders shared by the recursive-formulation tests and benchmarks."""

import numpy as np

import flexmbd as fm
from flexmbd.spatial import rotvec_to_rot

JOINT_TYPES = (
    "revolute",
    "prismatic",
    "cylindrical",
    "universal",
    "spherical",
    "planar",
    "fixed",
    "free",
)


def random_inertia(rng, mass, size=0.3):
    """A physically valid inertia about the com: a small cloud of point masses + a core."""
    pts = rng.normal(scale=size, size=(6, 3))
    pts -= pts.mean(axis=0)
    w = mass / 6
    J = sum(w * (p @ p * np.eye(3) - np.outer(p, p)) for p in pts)
    return J + 1e-3 * mass * np.eye(3)


def random_frame(rng, scale=0.4):
    return rng.normal(scale=scale, size=3), rotvec_to_rot(rng.normal(size=3))


def make_joint(kind, parent, child, rng, frames=True):
    kw = {}
    if frames:
        kw = dict(parent_frame=random_frame(rng), child_frame=random_frame(rng))
    axis = rng.normal(size=3)
    if kind == "revolute":
        return fm.Revolute(parent, child, axis=axis, **kw)
    if kind == "prismatic":
        return fm.Prismatic(parent, child, axis=axis, **kw)
    if kind == "cylindrical":
        return fm.Cylindrical(parent, child, axis=axis, **kw)
    if kind == "universal":
        a1 = axis / np.linalg.norm(axis)
        a2 = np.cross(a1, rng.normal(size=3))
        return fm.Universal(parent, child, axis1=a1, axis2=a2, **kw)
    if kind == "spherical":
        return fm.Spherical(parent, child, **kw)
    if kind == "planar":
        return fm.Planar(parent, child, normal=axis, **kw)
    if kind == "fixed":
        return fm.Fixed(parent, child, **kw)
    if kind == "free":
        return fm.Free(parent, child, **kw)
    raise ValueError(kind)


def random_tree(
    seed, n, floating=False, types=JOINT_TYPES, reverse=0.25, gravity=True, forces=False, branch=0.5
):
    """Random tree of ``n`` bodies with random frames, inertias and joint types.

    ``branch`` is the probability to attach a body to a random earlier body rather
    than the previous one; ``reverse`` the probability to declare a joint from the
    outboard to the inboard body (the topology then reverses it).
    """
    rng = np.random.default_rng(seed)
    m = fm.Model(f"random{seed}")
    bodies = []
    for i in range(n):
        mass = rng.uniform(0.5, 3.0)
        b = fm.RigidBody(mass, random_inertia(rng, mass), com=rng.normal(scale=0.2, size=3))
        setattr(m, f"b{i}", b)
        bodies.append(b)
        if i == 0:
            inboard = m.ground
            fixed_base = [t for t in types if t != "free"] or ["revolute"]
            kind = "free" if floating else rng.choice(fixed_base)
        else:
            inboard = bodies[i - 1] if rng.random() > branch else bodies[rng.integers(0, i)]
            kind = rng.choice(types)
        if i > 0 and rng.random() < reverse:
            j = make_joint(kind, b, inboard, rng)
        else:
            j = make_joint(kind, inboard, b, rng)
        setattr(m, f"j{i}", j)
    if gravity:
        m.g = fm.Gravity(rng.normal(scale=5.0, size=3))
    if forces:
        m.pf = fm.PointForce(bodies[-1], point=rng.normal(size=3), force=rng.normal(size=3))
        m.pt = fm.PointTorque(bodies[n // 2], torque=rng.normal(size=3), frame="body")
        m.jf = fm.JointForce(m.joints()[-1], rng.normal(size=m.joints()[-1].nv))
    return m


def random_state(system, seed, scale=1.0):
    rng = np.random.default_rng(seed + 1000)
    q = system.normalize(rng.normal(scale=scale, size=system.nq))
    qd = rng.normal(scale=scale, size=system.nv)
    tau = rng.normal(scale=scale, size=system.nv)
    return q, qd, tau


def chain(n, length=0.3, mass=1.0, gravity=(0.0, 0.0, -9.81), alternate=True):
    """Revolute chain: links along x, axes alternating z / y (as in the benchmarks)."""
    m = fm.Model(f"chain{n}")
    prev = m.ground
    for i in range(n):
        b = fm.RigidBody(mass, (0.001, 0.01, 0.01), com=(length / 2, 0, 0))
        setattr(m, f"l{i}", b)
        axis = (0, 0, 1) if (i % 2 == 0 or not alternate) else (0, 1, 0)
        setattr(
            m,
            f"j{i}",
            fm.Revolute(prev, b, axis=axis, parent_frame=(0.0 if i == 0 else length, 0, 0)),
        )
        prev = b
    if gravity is not None:
        m.g = fm.Gravity(gravity)
    return m
