"""Joint constraint library of the absolute formulation.

Every joint becomes ``6 - nv`` scalar equations, each of the one form ::

    Phi_p(q) = X_p(q) . Y_p(q) = 0

where ``X`` and ``Y`` are world vectors, each the sum of up to two *terms*
``sign * (r_b + A(e_b) s)`` (a point of body ``b``) or ``sign * A(e_b) s`` (a
body-fixed direction). Ground terms are constants (``A = I``, ``r = 0``). With
the parent frame ``P`` (origin ``p_P``, axes ``F_P``) and the child frame ``C``:

=========== ======================================================================
joint        equations
=========== ======================================================================
Spherical    ``(p_C - p_P) . e_k = 0`` for the world axes ``k = x, y, z``
Revolute     spherical + ``(F_P u1) . (F_C a) = 0``, ``(F_P u2) . (F_C a) = 0``
Universal    spherical + ``(F_P a1) . (F_C a2) = 0``
Cylindrical  ``(F_P u_k) . (F_C a) = 0`` and ``(F_P u_k) . (p_C - p_P) = 0``, k = 1, 2
Prismatic    cylindrical + ``(F_P u1) . (F_C u2) = 0`` (no rotation about ``a``)
Planar       ``(F_P u_k) . (F_C n) = 0``, k = 1, 2, and ``(F_P n) . (p_C - p_P) = 0``
Fixed        spherical + ``(F_P x).(F_C y) = (F_P y).(F_C z) = (F_P z).(F_C x) = 0``
Free         none
=========== ======================================================================

(``u1, u2`` complete the joint axis ``a`` to an orthonormal triad in the joint
frame.) Each body also carries the normalization ``(e . e - 1) / 2 = 0``.

For ``Phi = X . Y`` with term Jacobians ``J_t = sign [is_point I, dAs(e_b, s)]``
(3 x 7, columns ``(r_b, e_b)``; :mod:`.quaternion`):

* Jacobian: ``Phi_q = sum_{t in X} Y^T J_t + sum_{t in Y} X^T J_t``;
* ``d(Phi_q^T lambda)/dq = lambda [ sum_{x in X, y in Y} (J_x^T J_y + J_y^T J_x)
  + sum_{x in X} sign_x S(Y, s_x) + sum_{y in Y} sign_y S(X, s_y) ]`` (the ``S``
  blocks on the ``(e_b, e_b)`` diagonal block), exact since ``A(e)`` is quadratic;
* velocity right-hand side ``nu = 0`` (scleronomic joints);
* acceleration right-hand side ``gamma = -(2 Xdot . Ydot + Xc . Y + X . Yc)`` with
  the convective parts ``Xc = sum_t sign 2 A(edot_b) s`` (``A(edot)`` the same
  polynomial evaluated at ``edot``: the second derivative of a quadratic form).

Flexible bodies: a slot on a deforming frame of a flexible body (an
:class:`~flexmbd.InterfaceFrame` or :class:`~flexmbd.NodeFrame` whose modes are not
zero) replaces the constant ``s`` by ``y(q_f)``: ``s + U q_f`` for points (``U`` the
frame's translation modes) and ``exp((Theta q_f)~) s`` for directions (``Theta`` its
rotation modes; :mod:`flexmbd.flexible.rotation` gives the exact first and second
derivatives). With ``Y_q = dy/dq_f`` the slot's Jacobian gains the modal columns
``sign A(e) Y_q``; the Hessian ``d(Phi_q^T lam)/dq`` gains the cross terms of those
columns, the ``(e, q_f)`` blocks ``sign [dAs(e, Y_q[:, k])^T o]_k`` (``o`` the other
factor) and, for directions, ``sign Theta^T (sum_i mu_i d2y_i/dtheta2) Theta`` with
``mu = A(e)^T o``; ``gamma`` gains ``2 dAs(e, y') de + A(e) y''`` (``y' = Y_q dq_f``,
``y''`` the second directional derivative along ``Theta dq_f``) and the velocity
``A(e) y'``. Rheonomic (driver) directions must lie on non-deforming frames.

Reactions: the wrench of the constraint on the child body about its origin is
``-lambda (dPhi/dx)^T`` with ``x = [dphi; dr]`` its small world rotation and
translation (``d(A s)/dphi = -(A s)~``); it is moved to the child joint-frame
origin (on a flexible child: the *deformed* frame, ``frame.pose(q_f)``) and expressed in
child joint axes (docs/design/conventions.rst). A joint whose
child is the ground is reported from the parent's side with the sign flipped
(action and reaction: the equations are invariant under a common rigid motion).
"""

import numpy as np

from ..errors import ModelError
from ..joint_types import CYLINDRICAL, PLANAR, PRISMATIC, SCREW, UNIVERSAL, joint_type, perp_basis
from ..model.bodies import Ground
from .quaternion import Apoly, Smat, cross_b, dAs, normalized_rot, skew_b

__all__ = ["ConstraintSet", "joint_primitives"]

_GROUND = -1


class _Prim:
    """One scalar equation ``X . Y = 0``: two slots each (unused slots are zero ground terms)."""

    __slots__ = ("xb", "xs", "xsg", "xpt", "yb", "ys", "ysg", "ypt", "xf", "yf")

    def __init__(self, X, Y):
        X = [tuple(t) + (None,) * (5 - len(t)) for t in X]
        Y = [tuple(t) + (None,) * (5 - len(t)) for t in Y]
        X = list(X) + [(_GROUND, np.zeros(3), 0.0, False, None)] * (2 - len(X))
        Y = list(Y) + [(_GROUND, np.zeros(3), 0.0, False, None)] * (2 - len(Y))
        self.xb = [t[0] for t in X]
        self.xs = [np.asarray(t[1], float) for t in X]
        self.xsg = [float(t[2]) for t in X]
        self.xpt = [bool(t[3]) for t in X]
        self.xf = [t[4] for t in X]
        self.yb = [t[0] for t in Y]
        self.ys = [np.asarray(t[1], float) for t in Y]
        self.ysg = [float(t[2]) for t in Y]
        self.ypt = [bool(t[3]) for t in Y]
        self.yf = [t[4] for t in Y]


def joint_primitives(joint, ib, jb):
    """Primitive equations of ``joint`` between body indices ``ib`` (parent) and ``jb`` (child).

    Index -1 is the ground. Returns a list of :class:`_Prim`, written from the joint
    table's rows (:meth:`flexmbd.joint_types.JointType.rows`): three constrained
    translations as the world-axis rows of a spherical joint, followed by the rotation
    pairs; otherwise the first two rotation pairs, the translations, then the others.
    A Screw's coupling of angle and advance is a coordinate equation (:class:`_CoordRow`).
    """
    pf, cf = joint.parent_frame, joint.child_frame
    sP, CP = pf.position, pf.rotation
    sC, CC = cf.position, cf.rotation

    def point(b, s, sign, fr):
        return (b, s, sign, True, fr)

    def dirP(a):
        return (ib, CP @ a, 1.0, False, pf)

    def dirC(a):
        return (jb, CC @ a, 1.0, False, cf)

    d = [point(jb, sC, 1.0, cf), point(ib, sP, -1.0, pf)]
    eye = np.eye(3)
    trans, rots, _ = joint_type(joint, "absolute").rows(joint)
    rot = [_Prim([dirP(f)], [dirC(g)]) for f, g in rots]
    if len(trans) == 3:
        return [_Prim(d, [(_GROUND, eye[k], 1.0, False)]) for k in range(3)] + rot
    return rot[:2] + [_Prim([dirP(e)], d) for e in trans] + rot[2:]


def coordinate_kind(joint, k):
    """``"shift"`` (m) or ``"angle"`` (rad): the kind of coordinate ``k`` of ``joint``."""
    code = joint_type(joint).code
    return "shift" if code == PRISMATIC or (code == CYLINDRICAL and k == 1) else "angle"


def coordinate_primitives(joint, kind, ib, jb):
    """A joint coordinate as primitives: ``"angle"``: ``[x, y]`` with ``x = cos q``,
    ``y = sin q`` (``(F_P u1).(F_C u1)``, ``(F_P u2).(F_C u1)``, ``u1, u2`` completing the
    axis); ``"shift"``: ``[x]`` with ``x = (F_P a).(p_C - p_P)`` (m)."""
    pf, cf = joint.parent_frame, joint.child_frame
    if kind == "shift":
        d = [(jb, cf.position, 1.0, True, cf), (ib, pf.position, -1.0, True, pf)]
        return [_Prim([(ib, pf.rotation @ joint.axis, 1.0, False, pf)], d)]
    u1, u2 = perp_basis(joint.axis)
    c1 = (jb, cf.rotation @ u1, 1.0, False, cf)
    return [
        _Prim([(ib, pf.rotation @ u1, 1.0, False, pf)], [c1]),
        _Prim([(ib, pf.rotation @ u2, 1.0, False, pf)], [c1]),
    ]


class _CoordRow:
    """One equation linear in joint coordinates: ``sum_i c_i q_i - const = 0``.

    ``terms``: ``(c, kind, aux prim indices, joint index, axis in child joint axes,
    reference angle slot)``. A Screw: ``shift - h angle``; a GearCoupling:
    ``(q_b - q_b0) - ratio (q_a - q_a0)``.
    """

    def __init__(self, terms, const):
        self.terms, self.const = terms, float(const)


def driver_primitive(driver, ib, jb):
    """The rheonomic equation of a :class:`~flexmbd.constraints.JointDriver`.

    Returns ``(prim, kind, data)``: ``kind == "angle"`` with ``data = (slot, C, u1, u2)``
    (the equation ``(F_P w(t)) . (F_C u1) = sin(theta - f(t))`` with
    ``w = cos f u2 - sin f u1`` on the body of ``slot``), or ``kind == "shift"``
    (``(F_P a) . (p_C - p_P) - f(t)``).
    """
    j = driver.joint
    k = driver.coordinate
    pf, cf = j.parent_frame, j.child_frame
    CP, CC = pf.rotation, cf.rotation
    d = [(jb, cf.position, 1.0, True, cf), (ib, pf.position, -1.0, True, pf)]
    zero = np.zeros(3)

    def angle_on_parent(u1, u2):
        _rigid_time_slot(driver, pf)
        prim = _Prim([(ib, zero, 1.0, False, pf)], [(jb, CC @ u1, 1.0, False, cf)])
        return prim, "angle", (0, CP, u1, u2)

    def shift(a):
        return _Prim([(ib, CP @ a, 1.0, False, pf)], d), "shift", None

    code = joint_type(j).code
    if code in (PRISMATIC,) or (code == CYLINDRICAL and k == 1):
        return shift(j.axis)
    if code == PLANAR:
        if k == 2:
            return angle_on_parent(j.u1, j.u2)
        return shift(j.u1 if k == 0 else j.u2)
    if code == UNIVERSAL:
        a1, a2 = j.axis1, j.axis2
        a3 = np.cross(a1, a2)
        if k == 0:  # child's a2 seen from the parent: cos q0 a2 + sin q0 a3
            return angle_on_parent(a2, a3)
        # parent's a1 seen from the child: cos q1 a1 + sin q1 a3; w(t) on the child
        _rigid_time_slot(driver, cf)
        return (
            _Prim([(ib, CP @ a1, 1.0, False, pf)], [(jb, zero, 1.0, False, cf)]),
            "angle",
            (2, CC, a1, a3),
        )
    if k in joint_type(j).drivable:  # Revolute, Cylindrical angle, Screw
        return angle_on_parent(*perp_basis(j.axis))
    raise ModelError(
        f"driver {driver.name!r}: joints of type {type(j).__name__} cannot be driven here"
    )


def _frame_modes(frame, point):
    """Translation (points) or rotation (directions) modes (3, n) of a deforming frame, or None."""
    modes = getattr(frame, "modes", None) if frame is not None else None
    if modes is None or not hasattr(frame, "pose"):
        return None
    X = np.asarray(modes, float)[3:] if point else np.asarray(modes, float)[:3]
    if not X.size or not np.any(X):
        return None
    return X


def _rigid_time_slot(driver, frame):
    if frame is not None and _frame_modes(frame, False) is not None:
        raise ModelError(
            f"driver {driver.name!r}: its time-dependent direction lies on a deforming frame "
            f"({frame.summary()}); drive the joint from a rigid body or a non-deforming frame "
            f"(e.g. the reference interface of a Craig-Bampton body)"
        )


class _FlexSlot:
    """A slot on a deforming frame of a flexible body: ``y(q_f)`` replaces the constant ``s``.

    Points: ``y = s + U q_f``; directions: ``y = exp((Theta q_f)~) s``.
    """

    __slots__ = ("p", "k", "b", "col0", "n", "point", "X")

    def __init__(self, p, k, b, col0, point, X):
        self.p, self.k, self.b, self.col0, self.point, self.X = p, k, b, col0, point, X
        self.n = X.shape[1]


class _FlexState:
    """Per-call values of the flexible slots: effective ``s`` and derivatives of ``y``."""

    def __init__(self, cs, q):
        self.s = cs.s
        self.items = []
        if not cs.fslots:
            return
        from ..flexible.rotation import exp_jets

        self.s = cs.s.copy()
        for fs in cs.fslots:
            qf = q[fs.col0 : fs.col0 + fs.n]
            s0 = cs.s[fs.p, fs.k]
            if fs.point:
                y = s0 + fs.X @ qf
                Yq = fs.X
                Hy = None
            else:
                y = np.empty(3)
                Jy = np.empty((3, 3))
                Hy = np.empty((3, 3, 3))
                exp_jets(fs.X @ qf, s0, y, Jy, Hy)
                Yq = Jy @ fs.X
            self.s[fs.p, fs.k] = y
            self.items.append((fs, y, Yq, Hy))


class ConstraintSet:
    """All joint equations of a model plus the Euler-parameter normalizations, vectorized.

    Rows: joint equations in joint declaration order (``joint_rows[k]`` is the
    slice of joint k), then one normalization row per body. Columns: 7 per body
    ``(x, y, z, e0, e1, e2, e3)``.
    """

    def __init__(self, joints, body_index, drivers=(), flex_cols=None, _prims=None):
        self.joints = list(joints)
        self.drivers = list(drivers)
        self.nb = nb = len({v for v in body_index.values()})
        flex_cols = dict(flex_cols or {})
        prims, rows, self.joint_rows = [], 0, []
        self.joint_ends = []
        for j in self.joints:
            ib = -1 if isinstance(j.parent, Ground) else body_index[id(j.parent)]
            jb = -1 if isinstance(j.child, Ground) else body_index[id(j.child)]
            p = joint_primitives(j, ib, jb)
            if len(p) + (joint_type(j).code == SCREW) != j.n_constraints:  # pragma: no cover
                raise ModelError(
                    f"joint {j.name!r}: {len(p)} equations, expected {j.n_constraints}"
                )
            prims += p
            self.joint_rows.append(slice(rows, rows + len(p)))
            self.joint_ends.append((ib, jb))
            rows += len(p)
        if _prims is not None:  # an auxiliary set of primitives (coordinate equations)
            prims, rows = list(_prims), len(_prims)
        self._angle, self._shift, self.driver_rows, self.driver_joint = [], [], [], []
        coupled = []
        for drv in self.drivers:
            for j in (drv.joint, getattr(drv, "joint_a", drv.joint)):
                if j not in self.joints:
                    raise ModelError(f"driver {drv.name!r}: its joint is not in the model")
            k = self.joints.index(drv.joint)
            if hasattr(drv, "joint_a"):  # a GearCoupling: a coordinate equation below
                coupled.append((len(self.driver_rows), drv))
                self.driver_rows.append(-1)
                self.driver_joint.append(k)
                continue
            ib, jb = self.joint_ends[k]
            prim, kind, data = driver_primitive(drv, ib, jb)
            prims.append(prim)
            (self._angle if kind == "angle" else self._shift).append((rows, drv, data))
            self.driver_rows.append(rows)
            self.driver_joint.append(k)
            rows += 1
        # coordinate equations (Screw, GearCoupling) after the primitive rows
        self.coord_rows, aux, self._aref = [], [], []

        def term(c, j, k, kind=None):
            kk = self.joints.index(j)
            kind = kind or coordinate_kind(j, k)
            ps = coordinate_primitives(j, kind, *self.joint_ends[kk])
            idx = list(range(len(aux), len(aux) + len(ps)))
            aux.extend(ps)
            slot = -1
            if kind == "angle":
                slot = len(self._aref)
                self._aref.append(float(j.q0[k]))
            return (float(c), kind, idx, kk, np.asarray(j.axis, float), slot)

        for j in self.joints:
            if joint_type(j).code == SCREW:
                self.coord_rows.append(
                    _CoordRow([term(1.0, j, 0, "shift"), term(-j.h, j, 0, "angle")], 0.0)
                )
        for i, drv in coupled:
            ja, ca, jb_, cb = drv.joint_a, drv.coordinate_a, drv.joint, drv.coordinate
            self.driver_rows[i] = rows + len(self.coord_rows)
            self.coord_rows.append(
                _CoordRow(
                    [term(1.0, jb_, cb), term(-drv.ratio, ja, ca)],
                    float(jb_.q0[cb]) - drv.ratio * float(ja.q0[ca]),
                )
            )
        self._aref = np.array(self._aref, dtype=float)
        self._aux = ConstraintSet([], body_index, (), flex_cols, _prims=aux) if aux else None
        rows += len(self.coord_rows)
        self.n_joint_rows = rows
        self.n = rows + nb
        npm = len(prims)
        self.np = npm
        self.ncr = len(self.coord_rows)
        # slot arrays: (np, 4) with slots 0,1 = X and 2,3 = Y
        self.b = np.full((npm, 4), -1, dtype=np.int64)
        self.s = np.zeros((npm, 4, 3))
        self.sg = np.zeros((npm, 4))
        self.pt = np.zeros((npm, 4))
        self.fslots = []
        for k, p in enumerate(prims):
            self.b[k] = p.xb + p.yb
            self.s[k] = np.array(p.xs + p.ys)
            self.sg[k] = p.xsg + p.ysg
            self.pt[k] = np.array(p.xpt + p.ypt, dtype=float)
            for j, (bj, fr, ispt) in enumerate(zip(p.xb + p.yb, p.xf + p.yf, p.xpt + p.ypt)):
                if bj < 0 or bj not in flex_cols:
                    continue
                X = _frame_modes(fr, ispt)
                if X is not None:
                    self.fslots.append(_FlexSlot(k, j, bj, flex_cols[bj], ispt, X))
        self.fprims = sorted({fs.p for fs in self.fslots})
        self.live = self.b >= 0
        # rheonomic data (drivers): time derivatives of the slot vectors and targets
        self.s_t = np.zeros_like(self.s)
        self.s_tt = np.zeros_like(self.s)
        self.target = np.zeros(npm)
        self.target_t = np.zeros(npm)
        self.target_tt = np.zeros(npm)
        self.rheonomic = bool(self.drivers)
        self._t = None
        self._build_patterns()
        self._reaction_data(flex_cols)
        self.set_time(0.0)

    def set_time(self, t):
        """Update the drivers' time-dependent vectors and targets to time ``t``."""
        if not self.rheonomic or t == self._t:
            return
        self._t = t
        for row, drv, (slot, C, u1, u2) in self._angle:
            f, fd, fdd = float(drv.position(t)), float(drv.velocity(t)), float(drv.acceleration(t))
            c, sn = np.cos(f), np.sin(f)
            w = c * u2 - sn * u1
            w1 = -(sn * u2 + c * u1)  # dw/df
            self.s[row, slot] = C @ w
            self.s_t[row, slot] = C @ (fd * w1)
            self.s_tt[row, slot] = C @ (fdd * w1 - fd * fd * w)
        for row, drv, _ in self._shift:
            self.target[row] = float(drv.position(t))
            self.target_t[row] = float(drv.velocity(t))
            self.target_tt[row] = float(drv.acceleration(t))

    # -- sparsity patterns ------------------------------------------------------------
    def _build_patterns(self):
        npm, nb = self.np, self.nb
        cols7 = np.arange(7)
        live = self.live
        bb = np.where(live, self.b, 0)
        # Jacobian entries: (np, 4 slots, 7)
        self.jac_rows = np.broadcast_to(np.arange(npm)[:, None, None], (npm, 4, 7))[live].ravel()
        self.jac_cols = (7 * bb[:, :, None] + cols7)[live].ravel()
        # Hessian cross pairs (x slot, y slot): (np, 2, 2, 7, 7)
        bx, by = bb[:, :2], bb[:, 2:]
        pair_live = live[:, :2, None] & live[:, None, 2:]
        r = 7 * bx[:, :, None, None, None] + cols7[None, None, None, :, None]
        c = 7 * by[:, None, :, None, None] + cols7[None, None, None, None, :]
        r = np.broadcast_to(r, (npm, 2, 2, 7, 7))
        c = np.broadcast_to(c, (npm, 2, 2, 7, 7))
        self.pair_live = pair_live
        self.hx_rows = np.concatenate([r[pair_live].ravel(), c[pair_live].ravel()])
        self.hx_cols = np.concatenate([c[pair_live].ravel(), r[pair_live].ravel()])
        # S blocks on (e_b, e_b): (np, 4, 4, 4)
        c4 = 3 + np.arange(4)
        rr = 7 * bb[:, :, None, None] + c4[None, None, :, None]
        cc = 7 * bb[:, :, None, None] + c4[None, None, None, :]
        self.hs_rows = np.broadcast_to(rr, (npm, 4, 4, 4))[live].ravel()
        self.hs_cols = np.broadcast_to(cc, (npm, 4, 4, 4))[live].ravel()
        # normalization rows
        self.norm_rows = np.repeat(self.n_joint_rows + np.arange(nb), 4)
        self.norm_cols = (7 * np.arange(nb)[:, None] + c4).ravel()
        self.normh_rows = (7 * np.arange(nb)[:, None, None] + c4[:, None]).repeat(4, 2).ravel()
        self.normh_cols = (7 * np.arange(nb)[:, None, None] + c4[None, :]).repeat(4, 1).ravel()

    # -- coordinate equations (Screw, GearCoupling) --------------------------------------
    def _coords(self, q, qd=None, update=True):
        """Values, dense gradients (ncr, n_q) and, with ``qd``, gamma of the coordinate rows.

        A coordinate is a primitive ``x`` (shift) or ``theta = atan2(y, x)`` of two
        (angle; on the branch nearest the last value, which ``update`` advances), with
        ``dtheta = (x dy - y dx) / r^2`` and
        ``gamma_theta = (x gamma_y - y gamma_x) / r^2 + 2 (x y' - y x')(x x' + y y') / r^4``.
        Returns ``(phi, G, gamma, parts)``; ``parts`` per angle term ``(x, y, gx, gy)``.
        """
        aux = self._aux
        nq = len(q)
        pa, (r, c, v) = aux.evaluate(q)
        na = aux.np
        Ga = np.zeros((na, nq))
        keep = r < na
        np.add.at(Ga, (r[keep], c[keep]), v[keep])
        ga = aux.gamma(q, qd)[:na] if qd is not None else None
        phi = np.zeros(self.ncr)
        G = np.zeros((self.ncr, nq))
        gam = np.zeros(self.ncr)
        parts = []
        for i, row in enumerate(self.coord_rows):
            phi[i] = -row.const
            for coef, kind, idx, _kk, _a, slot in row.terms:
                if kind == "shift":
                    k = idx[0]
                    phi[i] += coef * pa[k]
                    G[i] += coef * Ga[k]
                    if qd is not None:
                        gam[i] += coef * ga[k]
                    continue
                kx, ky = idx
                x, y = pa[kx], pa[ky]
                r2 = x * x + y * y
                ref = self._aref[slot]
                th = ref + (np.arctan2(y, x) - ref + np.pi) % (2 * np.pi) - np.pi
                if update:
                    self._aref[slot] = th
                phi[i] += coef * th
                G[i] += coef * (x * Ga[ky] - y * Ga[kx]) / r2
                if qd is not None:
                    xd, yd = Ga[kx] @ qd, Ga[ky] @ qd
                    gam[i] += coef * (
                        (x * ga[ky] - y * ga[kx]) / r2
                        + 2 * (x * yd - y * xd) * (x * xd + y * yd) / r2**2
                    )
                parts.append((i, coef, kx, ky, x, y, r2))
        return phi, G, gam, (Ga, parts)

    def _coord_hessian(self, q, mu):
        """Dense ``sum_i mu_i d2(phi_i)/dq2`` of the coordinate rows (exact)."""
        aux = self._aux
        _, _, _, (Ga, parts) = self._coords(q, update=False)
        la = np.zeros(aux.n)
        Hd = np.zeros((len(q), len(q)))
        for i, row in enumerate(self.coord_rows):
            for coef, kind, idx, _kk, _a, _slot in row.terms:
                if kind == "shift":
                    la[idx[0]] += mu[i] * coef
        for i, coef, kx, ky, x, y, r2 in parts:
            w = mu[i] * coef
            la[ky] += w * x / r2
            la[kx] -= w * y / r2
            gx, gy = Ga[kx], Ga[ky]
            Hd -= (
                w
                * (
                    (x * x - y * y) * (np.outer(gx, gy) + np.outer(gy, gx))
                    + 2 * x * y * (np.outer(gy, gy) - np.outer(gx, gx))
                )
                / r2**2
            )
        hr, hc, hv = aux.hessian_lambda(q, la)
        np.add.at(Hd, (hr, hc), hv)
        return Hd

    # -- evaluation -------------------------------------------------------------------
    def _slots(self, r, e, s=None):
        """Values (np,4,3) and e-derivatives (np,4,3,4) of every slot term."""
        s = self.s if s is None else s
        live = self.live
        bb = np.where(live, self.b, 0)
        eb = e[bb]  # (np,4,4)
        A = np.where(live[..., None, None], Apoly(eb), np.eye(3))
        As = np.einsum("pkij,pkj->pki", A, s)
        val = self.sg[..., None] * (As + self.pt[..., None] * np.where(live[..., None], r[bb], 0.0))
        dA = np.where(live[..., None, None], dAs(eb, s), 0.0) * self.sg[..., None, None]
        return val, dA, eb

    def evaluate(self, q, jacobian=True, t=0.0):
        """``Phi`` (n,) and, optionally, the COO triplets of ``Phi_q`` (rows, cols, vals)."""
        self.set_time(t)
        q = np.asarray(q, dtype=float)
        r, e = _split(q, self.nb)
        fl = _FlexState(self, q)
        val, dA, _ = self._slots(r, e, fl.s)
        X = val[:, 0] + val[:, 1]
        Y = val[:, 2] + val[:, 3]
        cphi = G = None
        if self.ncr:
            cphi, G, _, _ = self._coords(q)
        phi = np.concatenate(
            [
                np.einsum("pi,pi->p", X, Y) - self.target,
                np.zeros(0) if cphi is None else cphi,
                0.5 * (np.einsum("bi,bi->b", e, e) - 1),
            ]
        )
        if not jacobian:
            return phi
        other = np.stack([Y, Y, X, X], axis=1)  # (np,4,3)
        jr = self.sg * self.pt  # coefficient of r_b
        vals = np.concatenate(
            [jr[..., None] * other, np.einsum("pkij,pki->pkj", dA, other)], axis=2
        )
        rows = [self.jac_rows, self.norm_rows]
        cols = [self.jac_cols, self.norm_cols]
        data = [vals[self.live].ravel(), e.ravel()]
        if G is not None:
            cr, cc = np.nonzero(G)
            rows.append(self.np + cr)
            cols.append(cc)
            data.append(G[cr, cc])
        for fs, _y, Yq, _ in fl.items:
            # d(slot)/dq_f = sg A(e_b) dy/dq_f
            Ab = Apoly(e[fs.b])
            rows.append(np.full(fs.n, fs.p))
            cols.append(fs.col0 + np.arange(fs.n))
            data.append(self.sg[fs.p, fs.k] * (other[fs.p, fs.k] @ Ab @ Yq))
        return phi, (np.concatenate(rows), np.concatenate(cols), np.concatenate(data))

    def hessian_lambda(self, q, lam, t=0.0):
        """COO triplets of ``d(Phi_q^T lam)/dq`` (symmetric)."""
        self.set_time(t)
        q = np.asarray(q, dtype=float)
        r, e = _split(q, self.nb)
        fl = _FlexState(self, q)
        val, dA, _ = self._slots(r, e, fl.s)
        lp = lam[: self.np]
        X = val[:, 0] + val[:, 1]
        Y = val[:, 2] + val[:, 3]
        # term Jacobians J_t (np,4,3,7)
        J = np.zeros(val.shape[:2] + (3, 7))
        J[..., :, :3] = (self.sg * self.pt)[..., None, None] * np.eye(3)
        J[..., :, 3:] = dA
        cross = np.einsum("p,pxia,pyib->pxyab", lp, J[:, :2], J[:, 2:])  # (np,2,2,7,7)
        cval = cross[self.pair_live].ravel()
        other = np.stack([Y, Y, X, X], axis=1)
        S = Smat(other, fl.s) * (lp[:, None] * self.sg)[..., None, None]
        sval = S[self.live].ravel()
        ln = lam[self.n_joint_rows :]
        nval = (ln[:, None, None] * np.eye(4)).ravel()
        rows = [self.hx_rows, self.hs_rows, self.normh_rows]
        cols = [self.hx_cols, self.hs_cols, self.normh_cols]
        vals = [cval, cval, sval, nval]
        if self.ncr:
            Hd = self._coord_hessian(q, lam[self.np : self.n_joint_rows])
            hr, hc = np.nonzero(Hd)
            rows.append(hr)
            cols.append(hc)
            vals.append(Hd[hr, hc])
        if fl.items:
            self._flex_hessian(fl, e, J, other, lp, rows, cols, vals)
        return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)

    def _flex_hessian(self, fl, e, J, other, lp, rows, cols, vals):
        """Hessian entries that involve modal columns (cross terms and own second derivatives)."""
        by_slot = {(fs.p, fs.k): (fs, y, Yq, Hy) for fs, y, Yq, Hy in fl.items}

        def slot_jac(p, k):
            """(cols, values (3, m)) of the full Jacobian of slot (p, k); modal part separate."""
            b = self.b[p, k]
            if b < 0:
                return None
            c_re = 7 * b + np.arange(7)
            item = by_slot.get((p, k))
            if item is None:
                return c_re, J[p, k], None, None
            fs, _, Yq, _ = item
            Jm = self.sg[p, k] * (Apoly(e[b]) @ Yq)
            return c_re, J[p, k], fs.col0 + np.arange(fs.n), Jm

        def add(rc, cc, block):
            rows.append(np.repeat(rc, len(cc)))
            cols.append(np.tile(cc, len(rc)))
            vals.append(block.ravel())

        for p in self.fprims:
            lam_p = lp[p]
            if lam_p == 0.0:
                continue
            jacs = [slot_jac(p, k) for k in range(4)]
            for x in (0, 1):
                for y in (2, 3):
                    jx, jy = jacs[x], jacs[y]
                    if jx is None or jy is None or (jx[2] is None and jy[2] is None):
                        continue
                    # blocks with at least one modal side: lam (Jx^T Jy + Jy^T Jx)
                    parts = [
                        (jx[0], jx[1], jy[2], jy[3]),
                        (jx[2], jx[3], jy[0], jy[1]),
                        (jx[2], jx[3], jy[2], jy[3]),
                    ]
                    for ca, Ja, cb, Jb in parts:
                        if ca is None or cb is None:
                            continue
                        B = lam_p * (Ja.T @ Jb)
                        add(ca, cb, B)
                        add(cb, ca, B.T)
            for k in range(4):
                item = by_slot.get((p, k))
                if item is None:
                    continue
                fs, y, Yq, Hy = item
                b = fs.b
                o = other[p, k]
                sg = self.sg[p, k] * lam_p
                # (e, q_f): d/dq_k of dAs(e, y)^T o = dAs(e, Yq[:, k])^T o
                Bef = sg * np.einsum("kie,i->ek", dAs(e[b], Yq.T), o)
                ce = 7 * b + 3 + np.arange(4)
                cf = fs.col0 + np.arange(fs.n)
                add(ce, cf, Bef)
                add(cf, ce, Bef.T)
                if Hy is not None:
                    mu = Apoly(e[b]).T @ o
                    Hm = np.einsum("i,ijk->jk", mu, Hy)
                    add(cf, cf, sg * (fs.X.T @ Hm @ fs.X))

    def _time_terms(self, r, e, ed):
        """Values of ``dX/dt``, ``d2X/dt2`` (explicit time) and ``d(dX/dt)/dq qd`` for X and Y."""
        live = self.live
        bb = np.where(live, self.b, 0)
        A = np.where(live[..., None, None], Apoly(e[bb]), np.eye(3))
        v_t = self.sg[..., None] * np.einsum("pkij,pkj->pki", A, self.s_t)
        v_tt = self.sg[..., None] * np.einsum("pkij,pkj->pki", A, self.s_tt)
        edb = np.where(live[..., None], ed[bb], 0.0)
        dA_t = np.where(live[..., None, None], dAs(e[bb], self.s_t), 0.0)
        v_tq = self.sg[..., None] * np.einsum("pkij,pkj->pki", dA_t, edb)
        pair = lambda v: (v[:, 0] + v[:, 1], v[:, 2] + v[:, 3])
        return pair(v_t), pair(v_tt), pair(v_tq)

    def phi_t(self, q, t=0.0):
        """Explicit time derivative ``dPhi/dt`` (n,); velocity equations ``Phi_q qd = -Phi_t``."""
        self.set_time(t)
        out = np.zeros(self.n)
        if not self.rheonomic:
            return out
        q = np.asarray(q, dtype=float)
        r, e = _split(q, self.nb)
        val, _, _ = self._slots(r, e, _FlexState(self, q).s)
        X = val[:, 0] + val[:, 1]
        Y = val[:, 2] + val[:, 3]
        (Xt, Yt), _, _ = self._time_terms(r, e, np.zeros_like(e))
        out[: self.np] = np.einsum("pi,pi->p", Xt, Y) + np.einsum("pi,pi->p", X, Yt) - self.target_t
        return out

    def gamma(self, q, qd, t=0.0):
        """Acceleration right-hand side ``gamma`` with ``Phi_q qdd = gamma`` (n,)."""
        self.set_time(t)
        q = np.asarray(q, dtype=float)
        qd = np.asarray(qd, dtype=float)
        r, e = _split(q, self.nb)
        rd, ed = _split(qd, self.nb)
        fl = _FlexState(self, q)
        val, dA, _ = self._slots(r, e, fl.s)
        live = self.live
        bb = np.where(live, self.b, 0)
        X = val[:, 0] + val[:, 1]
        Y = val[:, 2] + val[:, 3]
        edb = np.where(live[..., None], ed[bb], 0.0)
        rdb = np.where(live[..., None], rd[bb], 0.0)
        vel = (self.sg * self.pt)[..., None] * rdb + np.einsum("pkij,pkj->pki", dA, edb)
        conv = 2.0 * self.sg[..., None] * np.einsum("pkij,pkj->pki", Apoly(edb), fl.s)
        conv = np.where(live[..., None], conv, 0.0)
        for fs, _y, Yq, Hy in fl.items:
            # y(q_f) moves: d/dt (A y) = dAs(e, y) de + A y',  y' = Yq dq_f;
            # d2/dt2 adds 2 dAs(e, y') de + A y'' (y'' = theta'^T Hy theta' for directions)
            b, p, k = fs.b, fs.p, fs.k
            sg = self.sg[p, k]
            Ab = Apoly(e[b])
            yd = Yq @ qd[fs.col0 : fs.col0 + fs.n]
            vel[p, k] += sg * (Ab @ yd)
            c = 2.0 * dAs(e[b], yd) @ ed[b]
            if Hy is not None:
                th = fs.X @ qd[fs.col0 : fs.col0 + fs.n]
                c = c + Ab @ np.einsum("ijk,j,k->i", Hy, th, th)
            conv[p, k] += sg * c
        Xd, Yd = vel[:, 0] + vel[:, 1], vel[:, 2] + vel[:, 3]
        Xc, Yc = conv[:, 0] + conv[:, 1], conv[:, 2] + conv[:, 3]
        g = -(
            2.0 * np.einsum("pi,pi->p", Xd, Yd)
            + np.einsum("pi,pi->p", Xc, Y)
            + np.einsum("pi,pi->p", X, Yc)
        )
        if self.rheonomic:
            (Xt, Yt), (Xtt, Ytt), (Xtq, Ytq) = self._time_terms(r, e, ed)
            dot = lambda a, b: np.einsum("pi,pi->p", a, b)
            phi_tt = dot(Xtt, Y) + 2.0 * dot(Xt, Yt) + dot(X, Ytt) - self.target_tt
            phi_tq = dot(Xtq, Y) + dot(Xt, Yd) + dot(Xd, Yt) + dot(X, Ytq)
            g = g - phi_tt - 2.0 * phi_tq
        cg = self._coords(q, qd)[2] if self.ncr else np.zeros(0)
        return np.concatenate([g, cg, -np.einsum("bi,bi->b", ed, ed)])

    # -- reactions --------------------------------------------------------------------
    def reactions(self, q, lam, t=0.0):
        """Reaction wrench of every joint (n_joints, 6): parent on child, child frame, [n; f].

        A driver's equation counts for its joint: the drive force/torque is the
        motion-direction part of that joint's reaction.
        """
        self.set_time(t)
        q = np.asarray(q, dtype=float)
        r, e = _split(q, self.nb)
        R = normalized_rot(e)
        live = self.live
        bb = np.where(live, self.b, 0)
        Rb = np.where(live[..., None, None], R[bb], np.eye(3))
        As = np.einsum("pkij,pkj->pki", Rb, _FlexState(self, q).s)
        val = self.sg[..., None] * (As + self.pt[..., None] * np.where(live[..., None], r[bb], 0.0))
        X = val[:, 0] + val[:, 1]
        Y = val[:, 2] + val[:, 3]
        other = np.stack([Y, Y, X, X], axis=1)
        # dPhi/dphi of a slot: sign (A s) x other; dPhi/dr: sign * is_point * other
        drot = self.sg[..., None] * cross_b(As, other)
        dtr = (self.sg * self.pt)[..., None] * other
        jr = self.reaction_map
        side = jr["side"]  # (np,) body index on which the wrench is taken
        mask = (self.b == side[:, None]) & live
        lamp = lam[: self.np] * jr["sgn"]
        n = -np.einsum("p,pk,pki->pi", lamp, mask, drot)
        f = -np.einsum("p,pk,pki->pi", lamp, mask, dtr)
        nj = len(self.joints)
        N = np.zeros((nj, 3))
        F = np.zeros((nj, 3))
        np.add.at(N, jr["joint"], n)
        np.add.at(F, jr["joint"], f)
        jb, sd = jr["child"], jr["side_body"]
        hasc = jb >= 0
        Rc = np.where(hasc[:, None, None], R[np.where(hasc, jb, 0)], np.eye(3))
        rc = np.where(hasc[:, None], r[np.where(hasc, jb, 0)], 0.0)
        CC, sC = jr["CC"], jr["sC"]
        if jr["deforming"]:
            CC, sC = CC.copy(), sC.copy()
            for k, fr, col0, n in jr["deforming"]:
                CC[k], sC[k] = fr.pose(q[col0 : col0 + n])
        FC = Rc @ CC
        pC = rc + np.einsum("jab,jb->ja", Rc, sC)
        origin = np.where((sd >= 0)[:, None], r[np.where(sd >= 0, sd, 0)], 0.0)
        nC = N - cross_b(pC - origin, F)
        out = np.zeros((nj, 6))
        out[:, :3] = np.einsum("jba,jb->ja", FC, nC)
        out[:, 3:] = np.einsum("jba,jb->ja", FC, F)
        # coordinate rows: -lam c dq/dx of each coordinate, a moment (angle) or a force
        # (shift) along the axis at the child joint origin, child joint axes
        for i, row in enumerate(self.coord_rows):
            li = lam[self.np + i]
            for coef, kind, _idx, kk, a, _slot in row.terms:
                out[kk, 3 * (kind == "shift") : 3 * (kind == "shift") + 3] -= li * coef * a
        return out

    def _reaction_data(self, flex_cols=None):
        nj = len(self.joints)
        deforming = []
        joint = np.zeros(self.np, dtype=np.int64)
        side = np.zeros(self.np, dtype=np.int64)
        sgn = np.zeros(self.np)
        child = np.zeros(nj, dtype=np.int64)
        side_body = np.zeros(nj, dtype=np.int64)
        CC = np.zeros((nj, 3, 3))
        sC = np.zeros((nj, 3))
        for k, j in enumerate(self.joints):
            ib, jb = self.joint_ends[k]
            sb, sg = (jb, 1.0) if jb >= 0 else (ib, -1.0)
            sl = self.joint_rows[k]
            joint[sl], side[sl], sgn[sl] = k, sb, sg
            child[k], side_body[k] = jb, sb
            CC[k], sC[k] = j.child_frame.rotation, j.child_frame.position
            cf = j.child_frame
            if jb >= 0 and jb in (flex_cols or {}) and hasattr(cf, "pose") and np.any(cf.modes):
                deforming.append((k, cf, flex_cols[jb], cf.modes.shape[1]))
        for row, k in zip(self.driver_rows, self.driver_joint):
            if row >= self.np:  # a coupling: a coordinate row (see reactions)
                continue
            ib, jb = self.joint_ends[k]
            sb, sg = (jb, 1.0) if jb >= 0 else (ib, -1.0)
            joint[row], side[row], sgn[row] = k, sb, sg
        # reaction_map: per constraint row, the joint, the body the wrench is taken on
        # and its sign, the child frames (read by reactions() and the engine)
        self.reaction_map = {
            "joint": joint,
            "side": side,
            "sgn": sgn,
            "child": child,
            "side_body": side_body,
            "CC": CC,
            "sC": sC,
            "deforming": deforming,
        }


def _split(q, nb):
    q = np.asarray(q, dtype=float)[: 7 * nb].reshape(nb, 7)
    return q[:, :3], q[:, 3:]


# keep the helper visible for tests
_skew = skew_b
