"""Shared model builders and finite-difference helpers for the absolute-formulation tests."""

import numpy as np

import flexmbd as fm


def central_jacobian(f, x, h=1e-4):
    """Fourth-order central-difference Jacobian of ``f`` at ``x`` (columns = coordinates).

    Truncation error O(h^4), round-off O(eps |f| / h): about 1e-12 relative at h = 1e-4.
    """
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        d = np.zeros_like(x)
        d[k] = h
        fp1, fm1 = np.asarray(f(x + d)), np.asarray(f(x - d))
        fp2, fm2 = np.asarray(f(x + 2 * d)), np.asarray(f(x - 2 * d))
        cols.append((8 * (fp1 - fm1) - (fp2 - fm2)) / (12 * h))
    return np.array(cols).T


def rel_err(A, B):
    A, B = np.asarray(A), np.asarray(B)
    return float(np.abs(A - B).max() / max(np.abs(B).max(), 1e-300))


def random_unit_state(system, rng):
    """Random (q, qd) with unit Euler parameters (not necessarily consistent)."""
    q = rng.normal(size=system.n).reshape(-1, 7)
    q[:, 3:] /= np.linalg.norm(q[:, 3:], axis=1, keepdims=True)
    qd = rng.normal(size=system.n)
    return q.ravel(), qd


def all_joints_model(rng=None, sda=True, joint_force=False):
    """A tree with every joint type, offset centres of mass, rotated joint frames, loads."""
    rng = np.random.default_rng(7) if rng is None else rng
    m = fm.Model("all_joints")
    kinds = [
        lambda p, c, **kw: fm.Revolute(p, c, axis=(0.3, 0.2, 1.0), **kw),
        lambda p, c, **kw: fm.Prismatic(p, c, axis=(1.0, 0.4, 0.1), **kw),
        lambda p, c, **kw: fm.Cylindrical(p, c, axis=(0.1, 1.0, 0.2), **kw),
        lambda p, c, **kw: fm.Universal(p, c, axis1=(1, 0, 0), axis2=(0, 1, 0), **kw),
        lambda p, c, **kw: fm.Spherical(p, c, **kw),
        lambda p, c, **kw: fm.Planar(p, c, normal=(0, 0, 1), **kw),
        lambda p, c, **kw: fm.Fixed(p, c, **kw),
        lambda p, c, **kw: fm.Free(p, c, **kw),
    ]
    prev = m.ground
    bodies = []
    for k, make in enumerate(kinds):
        J = np.diag(rng.uniform(0.8, 1.2, 3))
        b = fm.RigidBody(
            rng.uniform(0.5, 2.0),
            J + 0.05 * (np.ones((3, 3)) - np.eye(3)),
            com=rng.normal(scale=0.2, size=3),
        )
        setattr(m, f"b{k}", b)
        pf = (rng.normal(scale=0.3, size=3), rng.normal(scale=0.5, size=3))
        cf = (rng.normal(scale=0.3, size=3), rng.normal(scale=0.5, size=3))
        setattr(m, f"j{k}", make(prev, b, parent_frame=pf, child_frame=cf))
        bodies.append(b)
        prev = b
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    m.pf = fm.PointForce(bodies[2], (0.1, 0.2, 0.3), (1.0, -2.0, 0.5), frame="body")
    m.pt = fm.PointTorque(bodies[4], (0.3, -0.1, 0.2), frame="body")
    if sda:
        m.sda = fm.SpringDamperActuator(
            bodies[1],
            (0.2, 0.1, 0.0),
            bodies[5],
            (0.0, -0.3, 0.1),
            k=150.0,
            c=7.0,
            l0=0.4,
            fa=lambda t: 3.0 + t,
        )
        m.sda_g = fm.SpringDamperActuator(
            m.ground, (1.0, 1.0, 0.0), bodies[3], (0.1, 0.0, 0.2), k=80.0, c=2.0
        )
    if joint_force:
        m.jf0 = fm.JointForce(
            m.j0,
            lambda t, q, qd: np.array([-5.0 * q[0] - 0.7 * qd[0] + 1.0]),
            dfdq=lambda t, q, qd: np.array([[-5.0]]),
            dfdqd=lambda t, q, qd: np.array([[-0.7]]),
        )
        m.jf2 = fm.JointForce(m.j2, [0.4, -1.2])
        m.jf3 = fm.JointForce(
            m.j3,
            lambda t, q, qd: np.array([-2.0 * q[0], -1.5 * qd[1]]),
            dfdq=lambda t, q, qd: np.array([[-2.0, 0.0], [0.0, 0.0]]),
            dfdqd=lambda t, q, qd: np.array([[0.0, 0.0], [0.0, -1.5]]),
        )
    return m


def newton_euler_residual(system, model, q, qd, fd, t=0.0):
    """Largest Newton-Euler imbalance (N or N m) of any body with the reported reactions.

    For every body: ``sum of applied wrenches + joint reactions (as child) - reactions of
    the joints where it is the parent - inertia wrench``, about the centre of mass in
    world axes. Independent of how the reactions were computed.
    """
    from flexmbd.absolute.forces import BodyState

    st = BodyState(system.index, q, qd)
    states = system.body_states(q, qd)
    tot = {b.name: np.zeros(6) for b in model.bodies()}  # [n about com; f]
    com = {}
    for b in model.bodies():
        R, r, w, v = states[b.name]
        com[b.name] = r + R @ b.com_vector

    def add(body, F, at):
        """Add a wrench [n; f] given about point ``at`` (world) to ``body`` (about its com)."""
        if body is model.ground:
            return
        n, f = F[:3], F[3:]
        tot[body.name][:3] += n + np.cross(at - com[body.name], f)
        tot[body.name][3:] += f

    for f in model.forces():
        from flexmbd.model.forces import JointForce

        if isinstance(f, JointForce):
            continue  # included in the reactions (the joint's motion-direction part)
        for b, F in f.wrenches(t, st):
            add(b, F, st.r[system.index[id(b)]])
    for k, j in enumerate(model.joints()):
        Rc = np.eye(3) if j.child is model.ground else states[j.child.name][0]
        rc = np.zeros(3) if j.child is model.ground else states[j.child.name][1]
        FC = Rc @ j.child_frame.rotation
        pC = rc + Rc @ j.child_frame.position
        W = fd.reactions[k]
        Fw = np.concatenate([FC @ W[:3], FC @ W[3:]])
        add(j.child, Fw, pC)
        add(j.parent, -Fw, pC)
    worst = 0.0
    for b in model.bodies():
        R, r, w, v = states[b.name]
        alpha, a0 = fd.body_acceleration(b.name)
        rc = R @ b.com_vector
        ac = a0 + np.cross(alpha, rc) + np.cross(w, np.cross(w, rc))
        Jw = R @ b.inertia_matrix @ R.T
        inert = np.concatenate([Jw @ alpha + np.cross(w, Jw @ w), float(b.mass) * ac])
        worst = max(worst, float(np.abs(tot[b.name] - inert).max()))
    return worst
