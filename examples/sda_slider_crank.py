"""Slider-crank with a spring-damper-actuator: Newton iterations with and without its Jacobian.

Reproduces example 1 of Kan, Peng & Chen (2017), *Rigid body system dynamic with
the accurate Jacobian matrix of spring-damper-actuator* (docs/theory/sda.rst):

* crank and connecting rod: 2 m, 50 kg, transverse inertia 15 kg m^2, axial
  0.02 kg m^2; slider 1 kg, inertia 1 kg m^2; revolute joints crank-ground,
  rod-crank, slider-rod and a prismatic joint slider-ground (a closed loop: in
  absolute coordinates every joint is a set of constraints);
* 1 kN horizontal force on the slider, an SDA between the centres of mass of the
  two links, no gravity, start at rest. The rod is joined to the crank by a
  spherical joint and to the slider by a universal joint (axes z and the slider's
  y): a planar loop of four revolute/prismatic joints in 3-D has three redundant
  equations, which the absolute formulation (with a direct sparse solver) needs
  removed; this non-redundant spatial modelling has the same planar motion. The
  paper does not give the initial crank
  angle; we use 45 degrees (the SDA's free length is its initial length,
  ``2 cos 45 deg`` = 1.414 m);
* Newmark alpha = 0.25, delta = 0.5 (our beta, gamma), dt = 0.01 s, 100 steps,
  Newton tolerance 1e-7 on the 2-norm of the (scaled) residual, initial guess =
  the previous step's accelerations and multipliers.

Studies: mean Newton iterations per step for k = 1e2 ... 1e6 N/m (c = 0) and for
c = 1e1 ... 1e4 N s/m at k = 2e4 N/m, with the SDA Jacobian (exact) and without it;
static equilibrium with and without the SDA Jacobian. ``main()`` writes the
tables (Markdown) and a plot to ``examples/out/``.

Run: ``python examples/sda_slider_crank.py``.

CPU time at defaults: 3.2 s; with ``--quick`` (the tests' small settings, ``QUICK``):
2.7 s (process CPU of ``python examples/sda_slider_crank.py``, compiled-kernel cache warm;
2-core machine, load average 1-5, 29 November 2026).
"""

import os
import time

import numpy as np

import flexmbd as fm
from flexmbd.example_args import quick_settings
from flexmbd.spatial import rotation_matrix

THETA0 = np.pi / 4


def build(k=2e4, c=0.0, fa=0.0, exact_jacobian=True, theta0=THETA0):
    """The seed's slider-crank model with an SDA between the link centres of mass."""
    m = fm.Model("sda_slider_crank")
    link = dict(mass=50.0, inertia=(0.02, 15.0, 15.0))  # x = link axis
    m.crank = fm.RigidBody(**link)
    m.rod = fm.RigidBody(**link)
    m.slider = fm.RigidBody(1.0, (1.0, 1.0, 1.0))
    m.j_crank = fm.Revolute(m.ground, m.crank, child_frame=(-1.0, 0, 0), q0=[theta0])
    # spherical + universal on the rod: a planar loop of revolutes in 3-D has 3 redundant
    # equations; this classical spatial modelling has none and the same motion
    m.j_rod = fm.Spherical(
        m.crank,
        m.rod,
        parent_frame=(1.0, 0, 0),
        child_frame=(-1.0, 0, 0),
        q0=rotation_matrix((0, 0, 1), -2 * theta0),
    )
    m.j_slider = fm.Universal(
        m.rod,
        m.slider,
        axis1=(0, 0, 1),
        axis2=(0, 1, 0),
        parent_frame=(1.0, 0, 0),
        q0=[theta0, 0.0],
    )
    m.j_guide = fm.Prismatic(m.ground, m.slider, axis=(1, 0, 0), q0=[4 * np.cos(theta0)])
    m.push = fm.PointForce(m.slider, (0, 0, 0), (1000.0, 0, 0))
    m.sda = fm.SpringDamperActuator(
        m.crank, (0, 0, 0), m.rod, (0, 0, 0), k=k, c=c, fa=fa, exact_jacobian=exact_jacobian
    )
    return m


def run(k, c, exact_jacobian, steps=100, dt=0.01, tol=1e-7, max_iter=100):
    """One dynamic run; returns a dict with the iteration counts (or the failure time)."""
    m = build(k, c, exact_jacobian=exact_jacobian)
    s = m.compile("absolute")
    tic = time.perf_counter()
    try:
        res = s.simulate(
            steps * dt,
            dt=dt,
            integrator="newmark",
            beta=0.25,
            gamma=0.5,
            tol=tol,
            max_iter=max_iter,
            energy=False,
        )
        failed = None
    except fm.ConvergenceError as err:
        res, failed = err.partial, err.time
    wall = time.perf_counter() - tic
    it = res.stats["newton_iterations"][1:]
    return {
        "k": k,
        "c": c,
        "exact": exact_jacobian,
        "iterations": it,
        "mean": float(it.mean()) if len(it) else float("nan"),
        "max": int(it.max()) if len(it) else 0,
        "failed_at": failed,
        "wall": wall,
        "steps": len(it),
    }


def static(k, exact_jacobian, max_iter=50):
    """Static equilibrium from the initial configuration; dict with convergence data."""
    m = build(k, 0.0, exact_jacobian=exact_jacobian)
    s = m.compile("absolute")
    r = s.static_equilibrium(max_iter=max_iter, tol=1e-7, raise_on_failure=False)
    l = m.sda.length(fm.absolute.forces.BodyState(s.index, r.q, np.zeros(s.n)))
    return {
        "k": k,
        "exact": exact_jacobian,
        "converged": r.converged,
        "iterations": r.iterations,
        "residual": r.residual,
        "length": l,
        "theory": m.sda.l0 + 2000.0 / k,
        "reason": r.reason,
    }


def _cell(r):
    if r["failed_at"] is not None:
        return f"{r['mean']:.2f} (fails at t={r['failed_at']:.2f} s)"
    return f"{r['mean']:.2f} (max {r['max']})"


def main(
    out_dir=None,
    k_values=(1e2, 1e3, 1e4, 1e5, 1e6),
    c_values=(1e1, 1e2, 1e3, 1e4),
    steps=100,
    static_k=(2e4, 1e5),
    plot=True,
):
    """Run the studies; write ``sda_slider_crank.md`` (and ``.png``) to ``out_dir``; return data."""
    out_dir = out_dir or os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
    os.makedirs(out_dir, exist_ok=True)
    k_runs = [(run(k, 0.0, True, steps), run(k, 0.0, False, steps)) for k in k_values]
    c_runs = [(run(2e4, c, True, steps), run(2e4, c, False, steps)) for c in c_values]
    statics = [(static(k, True), static(k, False)) for k in static_k]
    lines = [
        "# Slider-crank with an SDA: mean Newton iterations per step",
        "",
        f"Newmark beta=0.25 gamma=0.5, dt=0.01 s, {steps} steps, tol 1e-7 (residual 2-norm).",
        "Iterations = Newton corrections (linear solves) per step; counting residual",
        "evaluations (the paper's convention, apparently) adds one to every entry.",
        "",
        "| k (N/m), c = 0 | with SDA Jacobian | without | wall with / without (s) |",
        "|---|---|---|---|",
    ]
    for a, b in k_runs:
        lines.append(
            f"| {a['k']:.0e} | {_cell(a)} | {_cell(b)} | {a['wall']:.2f} / {b['wall']:.2f} |"
        )
    lines += [
        "",
        "| c (N s/m), k = 2e4 | with SDA Jacobian | without | wall with / without (s) |",
        "|---|---|---|---|",
    ]
    for a, b in c_runs:
        lines.append(
            f"| {a['c']:.0e} | {_cell(a)} | {_cell(b)} | {a['wall']:.2f} / {b['wall']:.2f} |"
        )
    lines += [
        "",
        "Static equilibrium (Newton from the initial configuration, tol 1e-7):",
        "",
        "| k (N/m) | with SDA Jacobian | without | SDA length / theory l0 + 2F/k (m) |",
        "|---|---|---|---|",
    ]
    for a, b in statics:
        fa_ = f"converged in {a['iterations']}" if a["converged"] else "no convergence"
        fb_ = (
            f"converged in {b['iterations']}"
            if b["converged"]
            else f"no convergence: {b['reason']} (residual {b['residual']:.1e})"
        )
        lines.append(f"| {a['k']:.0e} | {fa_} | {fb_} | {a['length']:.6f} / {a['theory']:.6f} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "sda_slider_crank.md"), "w") as fh:
        fh.write(text)
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, runs, key, lab in ((axes[0], k_runs, "k", "k"), (axes[1], c_runs, "c", "c")):
            for i, (a, b) in enumerate(runs):
                ax.plot(b["iterations"], "--", color=f"C{i}", label=f"{lab}={a[key]:.0e} without")
                ax.plot(a["iterations"], "-", color=f"C{i}", label=f"{lab}={a[key]:.0e} exact")
            ax.set_xlabel("time step")
            ax.set_ylabel("Newton iterations")
            ax.set_yscale("log")
            ax.legend(fontsize=6, ncol=2)
        axes[0].set_title("c = 0, varying k")
        axes[1].set_title("k = 2e4, varying c")
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "sda_slider_crank.png"), dpi=120)
        plt.close(fig)
    return {"k": k_runs, "c": c_runs, "static": statics, "table": text}


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(k_values=(1e2, 1e4, 1e6), c_values=(1e1, 1e4), steps=15, static_k=(2e4,))


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    print(main(**settings())["table"])
