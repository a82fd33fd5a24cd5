"""N four-bar mechanisms in series (IFToMM multibody benchmark A02), N = 40.

N + 1 cranks of length L are hinged to the ground at x = 0, L, ..., N L and their
tips are joined by N couplers of length L: N parallelograms sharing their cranks
(2N + 1 bodies, 3N + 1 revolute joints, N loops). All bars are 1 m, 1 kg;
gravity -y. The cranks start vertical with the first crank turning at 1 rad/s
(the others follow through the couplers). Whenever the cranks pass the
horizontal, every loop is singular at once: the horizontal cut equations vanish
and the rank of the cut equations drops from 2N to N.

The topology cuts one joint per loop (the coupler-crank joints); with spatial
revolutes that is 5N cut equations on 2N + 1 tree coordinates, of which 2N are
independent (3N discarded by the QR projection in regular configurations).

Independent reference: all cranks share one angle theta(t) (parallelogram
motion) and the couplers translate, so
``[(N + 1) m L^2 / 3 + N m L^2] theta'' = -[(N + 1) m g L / 2 + N m g L] cos(theta)``.

Run: ``python examples/n_four_bar.py`` (N = 40, 20 s; plot in examples/out/).

CPU time at defaults: 176 s (more than 445 s before the CFA's node system was factored
block by block, one block per crank: see ``benchmarks/bench_ground_star.py``; what is left
is the loop closure, one tree solve per independent cut equation, 80 of them, and the
Python QR path through the 20 singular passes); with ``--quick`` (the tests' small
settings, ``QUICK``): 3.1 s (process CPU of ``python examples/n_four_bar.py``,
compiled-kernel cache warm; 2-core machine, load average 1-5, 29 November 2026).
"""

import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import flexmbd as fm
from flexmbd.example_args import quick_settings

G = 9.81


def build(N=40, L=1.0, m=1.0, w0=1.0):
    """The mechanism: cranks ``crank[0..N]``, couplers ``coupler[1..N]``."""
    M = fm.Model(f"n_four_bar_{N}")
    inertia = (1e-6, m * L * L / 12, m * L * L / 12)
    M.crank = fm.RigidBody(
        range(N + 1), rule=lambda b, i: fm.RigidBody(mass=m, inertia=inertia, com=(L / 2, 0, 0))
    )
    M.coupler = fm.RigidBody(
        range(1, N + 1), rule=lambda b, i: fm.RigidBody(mass=m, inertia=inertia, com=(L / 2, 0, 0))
    )
    M.pivot = fm.Revolute(
        range(N + 1),
        rule=lambda b, i: fm.Revolute(
            b.ground, b.crank[i], parent_frame=(i * L, 0, 0), q0=[np.pi / 2], qd0=[w0]
        ),
    )
    # coupler i hangs from the tip of crank i-1 (tree) and closes the loop at crank i
    M.left = fm.Revolute(
        range(1, N + 1),
        rule=lambda b, i: fm.Revolute(
            b.crank[i - 1], b.coupler[i], parent_frame=(L, 0, 0), q0=[-np.pi / 2], qd0=[-w0]
        ),
    )
    M.right = fm.Revolute(
        range(1, N + 1),
        rule=lambda b, i: fm.Revolute(
            b.coupler[i], b.crank[i], parent_frame=(L, 0, 0), child_frame=(L, 0, 0), cut=True
        ),
    )
    M.g = fm.Gravity((0.0, -G, 0.0))
    return M


def reference(t, N=40, L=1.0, m=1.0, w0=1.0):
    """theta(t), theta'(t) of the cranks from the one-degree-of-freedom model."""
    Meff = (N + 1) * m * L * L / 3 + N * m * L * L
    K = ((N + 1) * m * G * L / 2 + N * m * G * L) / Meff
    sol = solve_ivp(
        lambda _, y: [y[1], -K * np.cos(y[0])],
        (0.0, float(np.max(t))),
        [np.pi / 2, w0],
        t_eval=t,
        method="DOP853",
        rtol=1e-12,
        atol=1e-13,
    )
    return sol.y[0], sol.y[1]


def simulate(N=40, t_end=20.0, dt=2e-3, **options):
    options.setdefault("rtol", 3e-2)
    system = build(N).compile("recursive", **options)
    return system.simulate(t_end, dt=dt, integrator="rk4")


def errors(res, N):
    th, thd = reference(res.t, N)
    cr = np.column_stack([res.joint(f"pivot[{i}]").q[:, 0] for i in range(N + 1)])
    E = res.energy["total"]
    return dict(
        angle=np.abs(cr - th[:, None]).max(),
        energy=np.abs(E - E[0]).max(),
        ranks=sorted(set(res.stats["rank"].tolist())),
        discarded=sorted(set(res.stats["discarded"].sum(axis=1).tolist())),
        position_violation=res.stats["position_violation"].max(),
        crossings=int(np.count_nonzero(np.diff(np.sign(np.cos(th[res.t > 0.01]))))),
    )


def main(N=40, t_end=20.0, dt=2e-3, outdir=None, plot=True):
    tic = time.perf_counter()
    res = simulate(N, t_end, dt)
    wall = time.perf_counter() - tic
    e = errors(res, N)
    print(
        f"N-four-bar, N = {N} ({2 * N + 1} bodies, {N} cut joints, {5 * N} cut equations), "
        f"{t_end:g} s, RK4 dt={dt:g}: {wall:.1f} s wall"
    )
    print(
        f"  crank angle error vs 1-dof reference: {e['angle']:.2e} rad; energy drift "
        f"{e['energy']:.2e} J; {e['crossings']} passes through the singular (horizontal) "
        f"configuration"
    )
    print(
        f"  rank: {e['ranks']} (discarded equations per sample: {e['discarded']}); "
        f"position violation {e['position_violation']:.1e}"
    )
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        th, _ = reference(res.t, N)
        path = Path(outdir or Path(__file__).parent / "out")
        path.mkdir(parents=True, exist_ok=True)
        fig, axes = plt.subplots(3, 1, figsize=(7, 7), sharex=True)
        axes[0].plot(res.t, res.joint("pivot[0]").q[:, 0], label="crank 0")
        axes[0].plot(res.t, th, ":k", label="1-dof reference")
        axes[0].set_ylabel("theta [rad]")
        axes[0].legend(fontsize="small")
        axes[1].plot(res.t, res.energy["total"] - res.energy["total"][0])
        axes[1].set_ylabel("E - E0 [J]")
        axes[2].plot(res.t, res.stats["rank"])
        axes[2].set_ylabel("rank")
        axes[2].set_xlabel("t [s]")
        fig.suptitle(f"N-four-bar mechanism, N = {N} (IFToMM A02)")
        fig.tight_layout()
        fig.savefig(path / "n_four_bar.png", dpi=110)
        plt.close(fig)
    return res, e


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(N=4, t_end=1.1)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
