"""Independent oracle: recursive Newton-Euler + composite-rigid-body algorithm.

Written from Featherstone's equations (Rigid Body Dynamics Algorithms, 2008,
chapters 5-6) in *world* spatial coordinates (every twist and wrench at the
world origin, world axes), using only the joints' Python methods
(``transform``, ``motion_subspace``, ``bias_acceleration``) and the model's
topology -- nothing from the CFA code, which works in body frames with relative
transforms. Forward dynamics is ``qdd = M^-1 (tau - C)`` with ``M`` from the
CRBA and ``C`` from the RNEA at zero acceleration; reactions come from the RNEA
at the resulting accelerations.
"""

import numpy as np

from flexmbd.model.forces import Gravity, JointForce


def skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def ad(R, p):
    """Twist transform of a frame with pose (R, p): local [w; v] -> world (at the origin)."""
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[3:, 3:] = R
    X[3:, :3] = skew(p) @ R
    return X


def crm(v):
    X = np.zeros((6, 6))
    X[:3, :3] = skew(v[:3])
    X[3:, 3:] = skew(v[:3])
    X[3:, :3] = skew(v[3:])
    return X


def crf(v):
    return -crm(v).T


def compose(a, b):
    return a[0] @ b[0], a[1] + a[0] @ b[1]


def inverse(a):
    return a[0].T, -a[0].T @ a[1]


class Oracle:
    """Featherstone RNEA/CRBA for a flexmbd tree model (world-frame formulation)."""

    def __init__(self, model):
        self.model = model
        topo = model.topology()
        self.joints = model.joints()
        self.bodies = model.bodies()
        self.n = topo.n_bodies
        self.parent = topo.parent
        self.tj = [None] + [self.joints[int(topo.tree_joint[k]) - 1] for k in range(1, self.n + 1)]
        self.rev = [False] + [
            bool(topo.reversed[int(topo.tree_joint[k]) - 1]) for k in range(1, self.n + 1)
        ]
        self.body = [model.ground] + [
            self.bodies[int(topo.original_body[k]) - 1] for k in range(1, self.n + 1)
        ]
        self.label = {id(b): k for k, b in enumerate(self.body)}
        self.qs, self.vs = {}, {}
        nq = nv = 0
        for j in self.joints:
            self.qs[j.name] = slice(nq, nq + j.nq)
            self.vs[j.name] = slice(nv, nv + j.nv)
            nq += j.nq
            nv += j.nv
        self.nq, self.nv = nq, nv
        self.g = sum((f.g for f in model.forces() if isinstance(f, Gravity)), np.zeros(3))

    def kinematics(self, q, qd):
        """World poses of bodies, world spatial S per joint, velocities, joint bias terms."""
        n = self.n
        pose = [(np.eye(3), np.zeros(3))] + [None] * n
        S = [None] * (n + 1)
        vel = [np.zeros(6)] + [None] * n
        cterm = [np.zeros(6)] + [None] * n  # S-dot qd in world coords
        for k in range(1, n + 1):
            j = self.tj[k]
            qj, vj = q[self.qs[j.name]], qd[self.vs[j.name]]
            p = self.parent[k]
            Rt, pt = j.transform(qj)
            pf, cf = j.parent_frame, j.child_frame
            H = j.motion_subspace(qj)
            cb = j.bias_acceleration(qj, vj)
            if not self.rev[k]:
                # world pose of the declared parent frame (on the inboard body)
                Tpf = compose(pose[p], (pf.rotation, pf.position))
                Tc = compose(Tpf, (Rt, pt))  # child frame, world
                pose[k] = compose(Tc, inverse((cf.rotation, cf.position)))
                X = ad(*Tc)
                S[k] = X @ H
                vel[k] = vel[p] + S[k] @ vj
                cterm[k] = X @ cb + crm(vel[k]) @ (S[k] @ vj)
            else:
                Tcf = compose(pose[p], (cf.rotation, cf.position))  # declared child frame
                Ta = compose(Tcf, inverse((Rt, pt)))  # declared parent frame
                pose[k] = compose(Ta, inverse((pf.rotation, pf.position)))
                X = ad(*Tcf)
                S[k] = -X @ H
                vel[k] = vel[p] + S[k] @ vj
                cterm[k] = -X @ cb + crm(vel[p]) @ (S[k] @ vj)
        return pose, S, vel, cterm

    def inertia_world(self, k, pose):
        b = self.body[k]
        Xi = np.linalg.inv(ad(*pose[k]))
        return Xi.T @ b.spatial_inertia() @ Xi

    def external(self, t, q, qd, pose, vel):
        """World wrenches at the origin on each body and joint forces."""
        n = self.n
        fext = [np.zeros(6) for _ in range(n + 1)]
        tau = np.zeros(self.nv)
        oracle = self

        class State:
            def pose(self, body):
                return pose[oracle.label[id(body)]]

            def twist(self, body):
                v = vel[oracle.label[id(body)]]
                R, r = pose[oracle.label[id(body)]]
                return v[:3], v[3:] + np.cross(v[:3], r)

        st = State()
        for k in range(1, n + 1):
            b = self.body[k]
            R, r = pose[k]
            f = b.mass * self.g
            fext[k] += np.concatenate([np.cross(r + R @ b.com_vector, f), f])
        for fe in self.model.forces():
            if isinstance(fe, Gravity):
                continue
            if isinstance(fe, JointForce):
                nm = fe.joint.name
                tau[self.vs[nm]] += fe.generalized_force(t, q[self.qs[nm]], qd[self.vs[nm]])
                continue
            for body, w in fe.wrenches(t, st):
                if body is self.model.ground:
                    continue
                k = self.label[id(body)]
                R, r = pose[k]
                fext[k] += np.concatenate([w[:3] + np.cross(r, w[3:]), w[3:]])
        return fext, tau

    def rnea(self, q, qd, qdd, t=0.0, external=True):
        """Joint forces and joint wrenches (world, at origin) for (q, qd, qdd)."""
        n = self.n
        pose, S, vel, cterm = self.kinematics(q, qd)
        if external:
            fext, _ = self.external(t, q, qd, pose, vel)
        else:
            fext = [np.zeros(6)] * (n + 1)
        acc = [np.zeros(6)] + [None] * n
        f = [None] * (n + 1)
        for k in range(1, n + 1):
            j = self.tj[k]
            acc[k] = acc[self.parent[k]] + S[k] @ qdd[self.vs[j.name]] + cterm[k]
            Iw = self.inertia_world(k, pose)
            f[k] = Iw @ acc[k] + crf(vel[k]) @ (Iw @ vel[k]) - fext[k]
        tau = np.zeros(self.nv)
        for k in range(n, 0, -1):
            j = self.tj[k]
            tau[self.vs[j.name]] = S[k].T @ f[k]
            if self.parent[k] > 0:
                f[self.parent[k]] = f[self.parent[k]] + f[k]
        return tau, f, pose, acc, vel

    def crba(self, q):
        n = self.n
        pose, S, vel, _ = self.kinematics(q, np.zeros(self.nv))
        Ic = [None] + [self.inertia_world(k, pose) for k in range(1, n + 1)]
        for k in range(n, 0, -1):
            if self.parent[k] > 0:
                Ic[self.parent[k]] = Ic[self.parent[k]] + Ic[k]
        M = np.zeros((self.nv, self.nv))
        for k in range(1, n + 1):
            sk = self.vs[self.tj[k].name]
            F = Ic[k] @ S[k]
            M[sk, sk] = S[k].T @ F
            a = self.parent[k]
            while a > 0:
                sa = self.vs[self.tj[a].name]
                M[sa, sk] = S[a].T @ F
                M[sk, sa] = M[sa, sk].T
                a = self.parent[a]
        return M

    def forward(self, q, qd, tau=None, t=0.0):
        """(qdd, reactions (n_joints, 6) in the declared child joint frames, kinematics)."""
        tau = np.zeros(self.nv) if tau is None else np.asarray(tau, dtype=float)
        pose, S, vel, cterm = self.kinematics(q, qd)
        _, tau_app = self.external(t, q, qd, pose, vel)
        C = self.rnea(q, qd, np.zeros(self.nv), t)[0]
        M = self.crba(q)
        qdd = np.linalg.solve(M, tau + tau_app - C)
        _, f, pose, acc, vel = self.rnea(q, qd, qdd, t)
        reac = np.zeros((len(self.joints), 6))
        for k in range(1, self.n + 1):
            j = self.tj[k]
            i = self.joints.index(j)
            if not self.rev[k]:
                Tc = compose(pose[k], (j.child_frame.rotation, j.child_frame.position))
                reac[i] = ad(*Tc).T @ f[k]
            else:
                cf = j.child_frame
                Tc = compose(pose[self.parent[k]], (cf.rotation, cf.position))
                reac[i] = -(ad(*Tc).T @ f[k])
        return qdd, reac, M, (pose, acc, vel)
