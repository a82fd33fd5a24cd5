"""Form-finding of a two-stage class-1 tensegrity by dynamic relaxation (SDA cables).

Example 2 of Kan, Peng & Chen (2017) (docs/theory/sda.rst): 6 bars (rigid bodies, 0.3 kg,
transverse inertia 0.1 kg m^2, axial 0.01 kg m^2), 21 cables modelled as
spring-damper-actuators (k = 200 N/m, c = 10 N s/m, no actuator force), no
supports; Newmark alpha = 0.3, delta = 0.6 (our beta, gamma), dt = 0.01 s.

Geometry (the original node data are not public; this one is documented here)
------------------------------------------------------------------------------
Bars of length 2 m (consistent with 0.3 kg and 0.1 kg m^2 = m L^2/12). Two
three-bar prisms (stages) of radius ``R = 0.8`` m stacked with an overlap:

* stage 1: bottom nodes ``B_i`` at angle ``120 i`` deg, ``z = 0``; bar ``i`` goes
  to the top node ``A_i`` at angle ``120 i + 150`` deg, ``z = h`` (``h`` from the bar
  length);
* stage 2: bottom nodes ``C_i`` at angle ``120 i + 210`` deg, ``z = h - 0.45``; bar
  ``3 + i`` goes to ``D_i`` at angle ``120 i + 360`` deg, ``z = 2 h - 0.45``.

Cables (21): bottom triangle ``B_i B_{i+1}`` (3), top triangle ``D_i D_{i+1}``
(3), lower side cables ``B_i A_{i-1}`` (3), upper side cables ``C_i D_{i-1}`` (3),
saddle cables ``A_i C_i`` and ``A_i C_{i-1}`` (6) and diagonals ``B_i C_{i-1}`` (3).
No two bars share a node (class 1). Free lengths are ``kappa = 0.98`` times the
initial lengths, so the initial configuration is out of balance and the
structure moves; the cable dampers dissipate the energy and it settles
(dynamic relaxation).

Supports and rigid-body drift
-----------------------------
No supports: every bar is attached to the ground by a :class:`~flexmbd.Free`
joint, which in the absolute formulation adds no equation (each bar keeps only its
Euler-parameter normalization). All forces are internal and the structure starts
at rest, so its linear momentum stays exactly zero (the Newmark update is linear
and the cable forces come in equal and opposite pairs) and its angular momentum
stays zero up to the integrator's error: the centroid does not drift (checked).
The final static Newton polish (the same residual without inertia, exact
Jacobian) has a Jacobian that is singular along the six rigid-body motions; a
Levenberg-Marquardt term ``mu I`` handles them without moving the solution.

Checks (``main`` returns them; the test asserts them): static residual (body
wrench imbalance) <= 1e-8 after the polish, every bar in compression, every cable
in tension; a table of cable forces and the energy curves (kinetic + elastic,
damper work, algorithmic dissipation) are written to ``examples/out/``.

Run: ``python examples/tensegrity.py``.

CPU time at defaults: 2.9 s; with ``--quick`` (the tests' small settings, ``QUICK``):
3.0 s (process CPU of ``python examples/tensegrity.py``, compiled-kernel cache warm;
2-core machine, load average 1-5, 29 November 2026).
"""

import os
import time

import numpy as np

import flexmbd as fm
from flexmbd.absolute.forces import BodyState
from flexmbd.example_args import quick_settings
from flexmbd.spatial import rot_to_quat

BAR_LENGTH = 2.0
RADIUS = 0.8
TWIST = 150.0
STAGE_ROTATION = 60.0
OVERLAP = 0.45
KAPPA = 0.98


def _frame_along(u):
    """Rotation whose x axis is ``u``."""
    u = u / np.linalg.norm(u)
    k = int(np.argmin(np.abs(u)))
    e = np.zeros(3)
    e[k] = 1.0
    y = np.cross(u, e)
    y /= np.linalg.norm(y)
    return np.column_stack([u, y, np.cross(u, y)])


def geometry(R=RADIUS, L=BAR_LENGTH, twist=TWIST, rot2=STAGE_ROTATION, overlap=OVERLAP):
    """Bar end points ``[(P, Q), ...]`` of the six bars (stage 1: bars 0-2, stage 2: 3-5)."""
    chord = 2 * R * np.sin(np.deg2rad(twist) / 2)
    h = np.sqrt(L * L - chord * chord)

    def node(deg, z):
        a = np.deg2rad(deg)
        return np.array([R * np.cos(a), R * np.sin(a), z])

    z2 = h - overlap
    bars = [(node(120 * i, 0.0), node(120 * i + twist, h)) for i in range(3)]
    bars += [
        (node(120 * i + twist + rot2, z2), node(120 * i + 2 * twist + rot2, z2 + h))
        for i in range(3)
    ]
    return bars


def cable_layout():
    """``[(group, (bar, end), (bar, end)), ...]``: end 0 = bar start (B or C), 1 = end (A or D)."""
    B = lambda i: (i % 3, 0)
    A = lambda i: (i % 3, 1)
    C = lambda i: (3 + i % 3, 0)
    D = lambda i: (3 + i % 3, 1)
    out = [("bottom", B(i), B(i + 1)) for i in range(3)]
    out += [("top", D(i), D(i + 1)) for i in range(3)]
    out += [("lower side", B(i), A(i - 1)) for i in range(3)]
    out += [("upper side", C(i), D(i - 1)) for i in range(3)]
    out += [("saddle", A(i), C(i)) for i in range(3)]
    out += [("saddle", A(i), C(i - 1)) for i in range(3)]
    out += [("diagonal", B(i), C(i - 1)) for i in range(3)]
    return out


def build(k=200.0, c=10.0, kappa=KAPPA, exact_jacobian=True):
    """The tensegrity model: 6 free bars, 21 SDA cables with free length kappa * initial."""
    bars = geometry()
    m = fm.Model("tensegrity")
    for i, (P, Q) in enumerate(bars):
        setattr(m, f"bar{i}", fm.RigidBody(0.3, (0.01, 0.1, 0.1)))  # x = bar axis
        pose = np.concatenate([(P + Q) / 2, rot_to_quat(_frame_along(Q - P))])
        setattr(m, f"free{i}", fm.Free(m.ground, getattr(m, f"bar{i}"), q0=pose))
    bodies = m.bodies()

    def end(n):
        half = 0.5 * np.linalg.norm(bars[n[0]][1] - bars[n[0]][0])
        return np.array([half if n[1] else -half, 0.0, 0.0])

    for j, (_, n1, n2) in enumerate(cable_layout()):
        p1, p2 = bars[n1[0]][n1[1]], bars[n2[0]][n2[1]]
        setattr(
            m,
            f"cable{j}",
            fm.SpringDamperActuator(
                bodies[n1[0]],
                end(n1),
                bodies[n2[0]],
                end(n2),
                k=k,
                c=c,
                l0=kappa * np.linalg.norm(p2 - p1),
                exact_jacobian=exact_jacobian,
            ),
        )
    return m


def member_forces(system, model, q):
    """Cable tensions (N, static) and bar compressions (N) at configuration ``q``."""
    st = BodyState(system.index, q, np.zeros(system.n))
    cables = [f for f in model.forces() if isinstance(f, fm.SpringDamperActuator)]
    tension = np.array([f.tension(0.0, st) for f in cables])
    # bar compression: net cable force at the bar's start end, along the bar towards its end
    comp = np.zeros(6)
    bodies = model.bodies()
    for f, T in zip(cables, tension):
        for body, pt, other, opt in (
            (f.body_i, f.point_i, f.body_j, f.point_j),
            (f.body_j, f.point_j, f.body_i, f.point_i),
        ):
            b = bodies.index(body)
            if pt[0] > 0:
                continue  # only the start end (x < 0)
            R, r = st.pose(body)
            Ro, ro = st.pose(other)
            P, O = r + R @ pt, ro + Ro @ opt
            u_bar = R[:, 0]
            comp[b] += T * (O - P) / np.linalg.norm(O - P) @ u_bar
    return tension, comp


def newton_table(k=200.0, c=10.0, steps=100):
    """Mean Newton corrections over the first ``steps`` steps with and without the SDA Jacobians."""
    out = {}
    for exact in (True, False):
        s = build(k, c, exact_jacobian=exact).compile("absolute")
        tic = time.perf_counter()
        failed = None
        with np.errstate(all="ignore"):
            try:
                res = s.simulate(
                    steps * 0.01,
                    dt=0.01,
                    integrator="newmark",
                    beta=0.3,
                    gamma=0.6,
                    tol=1e-7,
                    max_iter=200,
                    energy=False,
                )
                it = res.stats["newton_iterations"][1:]
            except fm.ConvergenceError as err:
                it = err.partial.stats["newton_iterations"][1:]
                failed = err.time
        mean = float(it.mean()) if len(it) else float("nan")
        out[exact] = (mean, time.perf_counter() - tic, failed)
    return out


def main(out_dir=None, t_end=20.0, dt=0.01, plot=True, table_steps=100):
    """Dynamic relaxation, static polish, checks; writes ``tensegrity.md`` and ``.png``."""
    out_dir = out_dir or os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
    os.makedirs(out_dir, exist_ok=True)
    m = build()
    s = m.compile("absolute")
    tic = time.perf_counter()
    res = s.simulate(t_end, dt=dt, integrator="newmark", beta=0.3, gamma=0.6, tol=1e-7)
    wall = time.perf_counter() - tic
    q_dr = res.q[-1]
    r_dr = fm.absolute.static_residual(s, q_dr)
    centroid = res.q[:, :].reshape(len(res.t), -1, 7)[:, :, :3].mean(axis=1)
    drift = float(np.abs(centroid - centroid[0]).max())
    st = s.static_equilibrium(q_dr, tol=1e-10, regularization=1e-6)
    r_final = fm.absolute.static_residual(s, st.q)
    tension, compression = member_forces(s, m, st.q)
    layout = cable_layout()
    iters = newton_table(steps=table_steps) if table_steps else {}
    lines = [
        "# Two-stage class-1 tensegrity: form-finding by dynamic relaxation",
        "",
        f"Newmark beta=0.3 gamma=0.6, dt={dt} s, {len(res.t) - 1} steps "
        f"({wall:.1f} s wall, mean {res.stats['newton_iterations'][1:].mean():.2f} "
        f"Newton corrections per step); k=200 N/m, c=10 N s/m, free length = "
        f"{KAPPA} x initial length.",
        "",
        f"- kinetic energy at the end of the relaxation: {res.energy['kinetic'][-1]:.3e} J",
        f"- static residual after the relaxation: {r_dr:.3e}; after the static Newton "
        f"polish ({st.iterations} iterations): {r_final:.3e}",
        f"- centroid drift during the relaxation: {drift:.2e} m",
        f"- algorithmic dissipation / damper work at the end: "
        f"{res.energy['numerical_dissipation'][-1]:.4f} J / "
        f"{res.energy['damper_work'][-1]:.4f} J",
        "",
    ]
    if iters:

        def cell(v):
            if v[2] is not None and not np.isfinite(v[0]):
                return "Newton diverges in the first step"
            if v[2] is not None:
                return f"Newton diverges at t = {v[2]:.2f} s ({v[0]:.2f} before)"
            return f"{v[0]:.2f}"

        lines += [
            f"Mean Newton corrections, first {table_steps} steps (tol 1e-7, at most 200):",
            "",
            "| Jacobian | mean iterations | wall (s) |",
            "|---|---|---|",
            f"| exact (with SDA dQ/dq, dQ/dqd) | {cell(iters[True])} | {iters[True][1]:.2f} |",
            f"| without SDA Jacobians | {cell(iters[False])} | {iters[False][1]:.2f} |",
            "",
        ]
    lines += ["| cable | group | ends (bar, end) | tension (N) |", "|---|---|---|---|"]
    for j, ((grp, n1, n2), T) in enumerate(zip(layout, tension)):
        lines.append(f"| {j} | {grp} | {n1} - {n2} | {T:.4f} |")
    lines += ["", "| bar | compression (N) |", "|---|---|"]
    lines += [f"| {b} | {c:.4f} |" for b, c in enumerate(compression)]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "tensegrity.md"), "w") as fh:
        fh.write(text)
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        e = res.energy
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        early = min(len(res.t), int(round(0.3 / dt)) + 1)
        for ax, stop in ((axes[0], early), (axes[1], len(res.t))):
            t = res.t[:stop]
            ax.plot(t, (e["kinetic"] + e["spring"])[:stop], label="kinetic + elastic (residual)")
            ax.plot(t, e["damper_work"][:stop], label="SDA damper work")
            ax.plot(t, e["numerical_dissipation"][:stop], label="algorithmic dissipation")
            ax.set_xlabel("t (s)")
            ax.set_ylabel("energy (J)")
            ax.legend(fontsize=8)
        axes[0].set_title("0 - 0.3 s")
        axes[1].set_title("whole relaxation")
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "tensegrity.png"), dpi=120)
        plt.close(fig)
    return {
        "results": res,
        "static": st,
        "residual_relaxation": r_dr,
        "residual": r_final,
        "tension": tension,
        "compression": compression,
        "centroid_drift": drift,
        "iterations": iters,
        "table": text,
    }


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(t_end=1.0, table_steps=5)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    print(main(**settings())["table"])
