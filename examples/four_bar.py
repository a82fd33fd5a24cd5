"""Planar four-bar through its singular configuration (Wang et al. 2025, section 3.1).

Three equal bars (L = 1 m, 1 kg) hinged to the ground at x = 0 and x = L, the
coupler hinged to both; the loop is cut at the coupler-rocker joint ``j4``. Start
at rest with theta1 = theta3 = pi/4, theta2 = 0 (the paper's absolute angles);
under gravity the parallelogram swings through theta = 0 and theta = -pi, where
all bars are collinear: the horizontal cut equation vanishes (rank 2 -> 1) and the
mechanism could branch (bars 2 and 3 folding together).

Independent reference: the one-degree-of-freedom model of the parallelogram
motion theta1 = theta3 = theta, theta2 = 0. With T = (5/6) m L^2 theta'^2 and
V = 2 m g L sin(theta): ``theta'' = -(6/5) (g/L) cos(theta)``. The coupler
translates, so its moment balance gives equal vertical forces at its two ends,
and the force G of the coupler on the rocker at the cut joint is::

    G_y = m (6/5 g cos^2 + L theta'^2 sin - g) / 2
    G_x = m cos (L theta'^2 - 6/5 g sin) / 2

(the second from the rocker's moment balance about its pivot, divided by sin and
simplified: it stays finite through the singular configuration).

The example prints the error of the cut-joint force (the multipliers) against the
reference, and repeats the run without the tangent-space projection of the
accelerations to show the paper's Fig. 5: the accelerations drift after the
singular configuration while the constraints stay satisfied. The rank threshold
(``rtol = 3e-2``, a wide singular window) is exact here because the
parallelogram's constraint manifold is straight: the projection removes no true
acceleration.

Accuracy near the singular configuration is limited by the configuration itself:
at distance theta from it the horizontal cut equation is ~theta times the
coupler's deviation along the folding branch, so round-off in the constraint
values (~1e-16) leaves that deviation undetermined to ~1e-16/theta, and the
horizontal cut force depends on it like ~1/theta^2: the force error grows like
~3e-16/theta^3 (1e-8 N at theta ~ 3e-3). Exactly at theta = 0 the horizontal
force is statically indeterminate. Away from it (|sin theta| >= 1e-2) the error is
~1e-10 N over 10 s.

Spatial four-bar (section 3.2 of the paper)
-------------------------------------------
:func:`build_spatial`: the same parallelogram (L = 0.5 m, 1 kg bars) modelled in
space with two universal joints (first axis z, second axis along the bar:
"the inboard frame's first axis is the cross's first axis, the outboard frame's
second axis the cross's second axis") and a revolute cut joint at the second
ground pivot D (5 cut equations). The crank is driven at 124.8 rad/s by a
:class:`~flexmbd.constraints.JointDriver`; no gravity. Coordinates follow the
paper's eq. 33: alpha1 = pi/2 - w t, alpha2 = -pi/2 + w t, alpha3 = alpha5 = 0,
alpha4 = -3 pi/2 - w t. The analytic cut-joint reaction follows from the bars'
equations of motion: the rocker turns about D at constant speed and the coupler
translates on a circle, so the coupler pushes the rocker along its axis with
m L w^2 / 2 and the ground pulls it back with ``m L w^2`` along the rocker's axis:
in the rocker's axes the reaction is the constant ``[0, 0, 0, m L w^2, 0, 0]``
(7787.5 N), and the drive torque is zero (constant kinetic energy). Of the 5 cut
equations plus the drive, 5 of 6 are independent in regular configurations (the
planar redundancy) and 3 at the flat configurations, where "5 cut equations of
which 3 redundant" holds.

Run: ``python examples/four_bar.py`` (10 s, plots in examples/out/).

CPU time at defaults: 7.3 s; with ``--quick`` (the tests' small settings, ``QUICK``):
3.6 s (process CPU of ``python examples/four_bar.py``, compiled-kernel cache warm; 2-core
machine, load average 1-5, 29 November 2026).
"""

import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import flexmbd as fm
from flexmbd.example_args import quick_settings

G = 9.81


def build(L=1.0, m=1.0, theta0=np.pi / 4):
    """The four-bar: joints j1 (ground-bar1), j2 (bar1-bar2), j3 (ground-bar3), j4 (cut)."""
    M = fm.Model("four_bar")
    inertia = (1e-6, m * L * L / 12, m * L * L / 12)  # slender bars; only Izz matters
    M.bar1 = fm.RigidBody(mass=m, inertia=inertia, com=(L / 2, 0, 0))
    M.bar2 = fm.RigidBody(mass=m, inertia=inertia, com=(L / 2, 0, 0))
    M.bar3 = fm.RigidBody(mass=m, inertia=inertia, com=(L / 2, 0, 0))
    M.j1 = fm.Revolute(M.ground, M.bar1, q0=[theta0])
    M.j2 = fm.Revolute(M.bar1, M.bar2, parent_frame=(L, 0, 0), q0=[-theta0])
    M.j3 = fm.Revolute(M.ground, M.bar3, parent_frame=(L, 0, 0), q0=[theta0])
    M.j4 = fm.Revolute(M.bar2, M.bar3, parent_frame=(L, 0, 0), child_frame=(L, 0, 0), cut=True)
    M.g = fm.Gravity((0, -G, 0))
    return M


def reference(t, L=1.0, m=1.0, theta0=np.pi / 4):
    """One-degree-of-freedom reference: theta, theta', theta'' and G (world, N) at times ``t``."""
    t = np.asarray(t, dtype=float)
    sol = solve_ivp(
        lambda _, y: [y[1], -1.2 * G / L * np.cos(y[0])],
        (0.0, float(t[-1])),
        [theta0, 0.0],
        t_eval=t,
        method="DOP853",
        rtol=1e-13,
        atol=1e-14,
    )
    th, thd = sol.y
    s, c = np.sin(th), np.cos(th)
    gy = 0.5 * m * (1.2 * G * c**2 + L * thd**2 * s - G)
    gx = 0.5 * m * c * (L * thd**2 - 1.2 * G * s)
    return th, thd, -1.2 * G / L * c, np.column_stack([gx, gy])


def cut_force(res):
    """Force of the coupler on the rocker at the cut joint, world axes (nt, 2)."""
    F = res.reaction("j4")[:, 3:5]  # rocker (bar3) axes
    a = res.joint("j3").q[:, 0]
    c, s = np.cos(a), np.sin(a)
    return np.column_stack([c * F[:, 0] - s * F[:, 1], s * F[:, 0] + c * F[:, 1]])


def simulate(t_end=10.0, dt=1e-3, rtol=3e-2, tangent_projection=True, **kw):
    M = build(**kw)
    system = M.compile("recursive", rtol=rtol, tangent_projection=tangent_projection)
    return system.simulate(t_end, dt=dt, integrator="rk4")


def errors(res, window=1e-2):
    """Max force error (all samples; samples with |sin theta| >= window), angle and acceleration."""
    th, thd, thdd, g_ref = reference(res.t)
    err = np.abs(cut_force(res) - g_ref).max(axis=1)
    far = np.abs(np.sin(th)) >= window
    qdd = res.qdd
    a_ref = np.column_stack([thdd, -thdd, thdd])  # j1, j2 (relative), j3
    return dict(
        force=err.max(),
        force_regular=err[far].max(),
        angle=np.abs(res.joint("j1").q[:, 0] - th).max(),
        coupler=np.abs(res.joint("j1").q[:, 0] + res.joint("j2").q[:, 0]).max(),
        acceleration=np.abs(qdd - a_ref).max(),
        position_violation=res.stats["position_violation"].max(),
        velocity_violation=res.stats["velocity_violation"].max(),
        singular_samples=int(np.count_nonzero(res.stats["rank"] < 2)),
        error_history=err,
        t=res.t,
        theta=th,
    )


OMEGA = 124.8


def build_spatial(L=0.5, m=1.0, w=OMEGA):
    """Spatial parallelogram with two universal joints and a driven crank (paper's Fig. 7)."""
    from flexmbd.constraints import JointDriver

    M = fm.Model("spatial_four_bar")
    inertia = (1e-6, m * L * L / 12, m * L * L / 12)
    for name in ("bar1", "bar2", "bar3"):
        setattr(M, name, fm.RigidBody(mass=m, inertia=inertia, com=(L / 2, 0, 0)))
    z, x = (0, 0, 1), (1, 0, 0)
    flip = np.diag([-1.0, -1.0, 1.0])  # Rz(pi)
    M.j1 = fm.Revolute(M.ground, M.bar1, axis=z, q0=[np.pi / 2])
    M.j2 = fm.Universal(
        M.bar1, M.bar2, axis1=z, axis2=x, parent_frame=(L, 0, 0), q0=[-np.pi / 2, 0.0]
    )
    # bar3's body x axis points from the coupler down to D; the joint's child frame is
    # turned by pi about z so that alpha4 is the paper's angle
    M.j3 = fm.Universal(
        M.bar2,
        M.bar3,
        axis1=z,
        axis2=x,
        parent_frame=(L, 0, 0),
        child_frame=((0, 0, 0), flip),
        q0=[-1.5 * np.pi, 0.0],
    )
    M.j4 = fm.Revolute(
        M.ground, M.bar3, axis=z, parent_frame=(L, 0, 0), child_frame=(L, 0, 0), cut=True
    )
    M.drive = JointDriver.constant_speed(M.j1, -w)
    return M


def spatial_reference(t, L=0.5, m=1.0, w=OMEGA):
    """Eq. 33 coordinates (nt, 5) and the analytic cut reaction [n; f] in the rocker's axes."""
    t = np.asarray(t, dtype=float)
    a1 = np.pi / 2 - w * t
    alpha = np.column_stack([a1, -np.pi / 2 + w * t, 0 * t, -1.5 * np.pi - w * t, 0 * t])
    reaction = np.zeros((len(t), 6))
    reaction[:, 3] = m * L * w * w
    return alpha, reaction


def simulate_spatial(t_end=0.1, dt=1e-4, rtol=3e-2, **kw):
    system = build_spatial(**kw).compile("recursive", rtol=rtol)
    return system.simulate(t_end, dt=dt, integrator="rk4")


def spatial_errors(res, window=1e-2):
    alpha, reac = spatial_reference(res.t)
    a1 = res.joint("j1").q[:, 0]
    flat = np.abs(np.cos(a1)) < window  # |sin theta| < window (theta = a1 - pi/2)
    err = np.abs(res.reaction("j4") - reac).max(axis=1)
    return dict(
        coordinates=np.abs(res.q - alpha).max(),
        reaction=err[~flat].max(),
        reaction_all=err.max(),
        drive_torque=np.abs(res.extra["driver:drive"]).max(),
        ranks=sorted(set(res.stats["rank"].tolist())),
        redundant_cut=sorted(set((5 - (res.stats["rank"] - 1)).tolist())),
        position_violation=res.stats["position_violation"].max(),
    )


def main(t_end=10.0, dt=1e-3, rtol=3e-2, outdir=None, plot=True, spatial_t_end=0.1):
    if spatial_t_end:
        tic = time.perf_counter()
        res = simulate_spatial(spatial_t_end)
        e = spatial_errors(res)
        print(
            f"spatial four-bar, crank at {OMEGA} rad/s, {spatial_t_end} s "
            f"({time.perf_counter() - tic:.1f} s wall):"
        )
        print(
            f"  coordinates vs eq. 33: {e['coordinates']:.2e} rad; cut reaction vs analytic "
            f"(m L w^2 = {0.5 * OMEGA**2:.2f} N): {e['reaction']:.2e} N away from the flat "
            f"configurations, {e['reaction_all']:.2e} N overall; drive torque "
            f"{e['drive_torque']:.1e} N m"
        )
        print(
            f"  rank of the 5 cut + 1 drive equations: {e['ranks']} "
            f"(redundant cut equations: {e['redundant_cut']})"
        )
    out = {}
    for tp in (True, False):
        tic = time.perf_counter()
        res = simulate(t_end, dt, rtol, tangent_projection=tp)
        e = errors(res)
        e["wall"] = time.perf_counter() - tic
        e["res"] = res
        out[tp] = e
        label = "with" if tp else "WITHOUT"
        print(
            f"{label} tangent projection (rtol={rtol:g}, RK4 dt={dt:g}, {t_end:g} s, "
            f"{e['wall']:.1f} s wall):"
        )
        print(
            f"  cut-joint force error vs 1-dof reference: {e['force_regular']:.2e} N "
            f"(|sin theta| >= 1e-2), {e['force']:.2e} N (all samples)"
        )
        print(
            f"  angle error {e['angle']:.2e} rad, coupler rotation {e['coupler']:.2e} rad, "
            f"acceleration error {e['acceleration']:.2e} rad/s^2"
        )
        print(
            f"  constraint violation: position {e['position_violation']:.1e}, velocity "
            f"{e['velocity_violation']:.1e}; samples in the singular window: "
            f"{e['singular_samples']}"
        )
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        path = Path(outdir or Path(__file__).parent / "out")
        path.mkdir(parents=True, exist_ok=True)
        fig, axes = plt.subplots(3, 1, figsize=(7, 8), sharex=True)
        th, thd, thdd, g_ref = reference(out[True]["t"])
        for tp, style in ((True, "-"), (False, "--")):
            F = cut_force(out[tp]["res"])
            lab = "tangent projection" if tp else "no tangent projection"
            axes[0].plot(out[tp]["t"], F[:, 0], style, label=lab)
            axes[1].plot(out[tp]["t"], F[:, 1], style, label=lab)
            axes[2].semilogy(
                out[tp]["t"], np.maximum(out[tp]["error_history"], 1e-16), style, label=lab
            )
        axes[0].plot(out[True]["t"], g_ref[:, 0], ":k", label="1-dof reference")
        axes[1].plot(out[True]["t"], g_ref[:, 1], ":k")
        axes[0].set_ylabel("G_x [N]")
        axes[1].set_ylabel("G_y [N]")
        axes[2].set_ylabel("|G - G_ref| [N]")
        axes[2].set_xlabel("t [s]")
        axes[0].legend(fontsize="small")
        fig.suptitle("Planar four-bar: cut-joint force (paper's Fig. 5/6)")
        fig.tight_layout()
        fig.savefig(path / "four_bar_multipliers.png", dpi=110)
        plt.close(fig)
    return out


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(t_end=0.6, spatial_t_end=0)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
