"""Planar four-bar of the QR paper (section 3.1) in the paper's three absolute angles.

Dense mass matrix and the paper's eq. 32 constraints; and the independent
one-degree-of-freedom reference (the parallelogram motion theta1 = theta3,
theta2 = 0) with closed-form cut-joint forces. Shared by the projection tests.
"""

import numpy as np
from scipy.integrate import solve_ivp

from flexmbd.constraints.projection import Constraints, Projector

m = L = 1.0
g = 9.81
Q0 = np.array([np.pi / 4, 0.0, np.pi / 4])


def mass(q):
    t1, t2, _ = q
    c = m * L * L / 2 * np.cos(t1 - t2)
    return np.array([[4 * m * L * L / 3, c, 0], [c, m * L * L / 3, 0], [0, 0, m * L * L / 3]])


def force(q, v):
    t1, t2, t3 = q
    s = m * L * L / 2 * np.sin(t1 - t2)
    return np.array(
        [
            -s * v[1] ** 2 - 1.5 * m * g * L * np.cos(t1),
            s * v[0] ** 2 - 0.5 * m * g * L * np.cos(t2),
            -0.5 * m * g * L * np.cos(t3),
        ]
    )


def energy(q, v):
    return 0.5 * v @ mass(q) @ v + m * g * L * (
        1.5 * np.sin(q[0]) + 0.5 * np.sin(q[1]) + 0.5 * np.sin(q[2])
    )


def phi(q, t):
    return L * np.array(
        [
            np.cos(q[0]) + np.cos(q[1]) - np.cos(q[2]) - 1.0,
            np.sin(q[0]) + np.sin(q[1]) - np.sin(q[2]),
        ]
    )


def jac(q, t):
    s, c = np.sin(q), np.cos(q)
    return L * np.array([[-s[0], -s[1], s[2]], [c[0], c[1], -c[2]]])


def gamma(q, v, t):
    s, c = np.sin(q), np.cos(q)
    w2 = v**2 * np.array([1.0, 1.0, -1.0])
    return L * np.array([c @ w2, s @ w2])


CONSTRAINTS = Constraints(phi, jac, gamma=gamma, names=["x", "y"])


def simulate(t_end=1.0, dt=1e-3, **projector_options):
    """RK4 with projection after every step; returns t, q, v, vdot, lam, rank arrays."""
    P = Projector(CONSTRAINTS, **projector_options)

    def acc(q, v, t):
        Mq = mass(q)
        vf = np.linalg.solve(Mq, force(q, v))
        return P.accelerations(q, v, t, vf, lambda X: np.linalg.solve(Mq, X))

    n = int(round(t_end / dt))
    q, v = Q0.copy(), np.zeros(3)
    T, Qs, Vs, As, Ls, Rk = [], [], [], [], [], []
    for k in range(n + 1):
        t = k * dt
        a, lam = acc(q, v, t)
        T.append(t), Qs.append(q), Vs.append(v), As.append(a), Ls.append(lam)
        Rk.append(P.info.rank)
        if k == n:
            break
        k1v = a
        k2q = v + dt / 2 * k1v
        k2v = acc(q + dt / 2 * v, k2q, t + dt / 2)[0]
        k3q = v + dt / 2 * k2v
        k3v = acc(q + dt / 2 * k2q, k3q, t + dt / 2)[0]
        k4q = v + dt * k3v
        k4v = acc(q + dt * k3q, k4q, t + dt)[0]
        q = q + dt / 6 * (v + 2 * k2q + 2 * k3q + k4q)
        v = v + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        q, v = P.correct(q, v, t + dt)
    return tuple(np.array(x) for x in (T, Qs, Vs, As, Ls, Rk))


def reference(t, theta0=np.pi / 4):
    """theta(t), theta_dot(t), theta_ddot(t) and the cut-joint force on bar 2 (x, y).

    One degree of freedom: (5/3) m L^2 theta'' = -2 m g L cos(theta). Bar 2 translates;
    the force G of bar 2 on bar 3 at their joint follows from bar 2's and bar 3's
    equations of motion: G_y = m (6/5 g c^2 + L theta'^2 s - g) / 2,
    G_x = m c (L theta'^2 - 6/5 g s) / 2. The paper's multipliers are the force on
    bar 2 (the cut joint's child side in eq. 32), i.e. -G.
    """
    sol = solve_ivp(
        lambda _, y: [y[1], -1.2 * g / L * np.cos(y[0])],
        (0.0, float(t[-1])),
        [theta0, 0.0],
        t_eval=t,
        method="DOP853",
        rtol=1e-13,
        atol=1e-14,
    )
    th, thd = sol.y
    s, c = np.sin(th), np.cos(th)
    thdd = -1.2 * g / L * c
    gx = 0.5 * m * c * (L * thd**2 - 1.2 * g * s)
    gy = 0.5 * m * (1.2 * g * c**2 + L * thd**2 * s - g)
    return th, thd, thdd, np.column_stack([-gx, -gy])
