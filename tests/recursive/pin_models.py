"""Build the Pinocchio twin of a flexmbd tree (peer checks and benchmarks only).

Supported: Revolute, Prismatic, Spherical, Free joints declared parent -> child in
topological order. Pinocchio's joint frame i is our child joint frame; its
placement is our parent joint frame seen from the parent's joint frame.
Conventions: pin quaternions are (x, y, z, w), free-flyer speeds [v; w], forces
``data.f`` [linear; angular] -- we convert at the boundary.
"""

import numpy as np


def _se3(pin, R, p):
    return pin.SE3(np.asarray(R, dtype=float), np.asarray(p, dtype=float))


def to_pinocchio(model):
    import pinocchio as pin

    import flexmbd as fm

    pm = pin.Model()
    jid = {id(model.ground): 0}
    frame = {id(model.ground): (np.eye(3), np.zeros(3))}
    qmap, vmap = [], []  # per joint: (flexmbd slice, pin slice, kind)
    iq = iv = 0
    for j in model.joints():
        pR, pp = frame[id(j.parent)]
        Rpf, ppf = j.parent_frame.rotation, j.parent_frame.position
        placement = _se3(pin, pR.T @ Rpf, pR.T @ (ppf - pp))
        if isinstance(j, fm.Revolute):
            jm = pin.JointModelRevoluteUnaligned(np.asarray(j.axis, dtype=float))
            kind = "rev"
        elif isinstance(j, fm.Prismatic):
            jm = pin.JointModelPrismaticUnaligned(np.asarray(j.axis, dtype=float))
            kind = "rev"
        elif isinstance(j, fm.Spherical):
            jm = pin.JointModelSpherical()
            kind = "sph"
        elif isinstance(j, fm.Free):
            jm = pin.JointModelFreeFlyer()
            kind = "free"
        else:
            raise TypeError(type(j).__name__)
        k = pm.addJoint(jid[id(j.parent)], jm, placement, j.name)
        b = j.child
        Rc, pc = j.child_frame.rotation, j.child_frame.position
        com = Rc.T @ (b.com_vector - pc)
        J = Rc.T @ b.inertia_matrix @ Rc
        pm.appendBodyToJoint(k, pin.Inertia(float(b.mass), com, J), pin.SE3.Identity())
        jid[id(b)] = k
        frame[id(b)] = (Rc, pc)
        qmap.append((slice(iq, iq + j.nq), kind))
        vmap.append(slice(iv, iv + j.nv))
        iq += j.nq
        iv += j.nv
    g = sum((f.g for f in model.forces() if isinstance(f, fm.Gravity)), np.zeros(3))
    pm.gravity = pin.Motion(np.asarray(g, dtype=float), np.zeros(3))
    return pm, (qmap, vmap)


def q_to_pin(maps, q):
    qmap, _ = maps
    out = np.array(q, dtype=float)
    for sl, kind in qmap:
        x = q[sl]
        if kind == "sph":
            out[sl] = [x[1], x[2], x[3], x[0]]
        elif kind == "free":
            out[sl] = [x[0], x[1], x[2], x[4], x[5], x[6], x[3]]
    return out


def v_to_pin(maps, v):
    """Speeds (and forces/accelerations along speeds) to pin's order."""
    qmap, vmap = maps
    out = np.array(v, dtype=float)
    for (_, kind), sl in zip(qmap, vmap, strict=True):
        if kind == "free":
            x = v[sl]
            out[sl] = np.concatenate([x[3:], x[:3]])
    return out


def v_from_pin(maps, v):
    qmap, vmap = maps
    out = np.array(v, dtype=float)
    for (_, kind), sl in zip(qmap, vmap, strict=True):
        if kind == "free":
            x = v[sl]
            out[sl] = np.concatenate([x[3:], x[:3]])
    return out
