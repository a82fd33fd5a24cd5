"""Design: the slider-crank SDA's spring constant and damping for the least peak bearing load.

The seed 002 slider-crank (``examples/sda_slider_crank.py``: two 2 m, 50 kg links, 1 kg
slider, 1 kN push on the slider from rest at 45 degrees, a spring-damper-actuator between
the links' centres of mass with its free length at the start) is simulated over the seed's
load case (1 s, Newmark trapezoidal, dt = 0.01 s). The design variables are the SDA's
spring constant ``k`` (N/m) and damping ``c`` (N s/m); the objective is the peak over the
time nodes of the force the crank bearing (revolute joint crank-ground) carries, its
norm from the joint's multipliers in the absolute formulation. The min-max is made smooth
with a bound variable ``t``: minimize ``t`` subject to ``|F(t_m)|^2 <= t`` at every node,
solved with scipy's SLSQP; the gradients are exact forward sensitivities of the simulation
(:class:`flexmbd.pyomo.shooting.Shooting`).

Why shooting and not the grey-box NLP: two design variables over a fixed load case is the
shooting route's home ground (every iterate is a simulated, physical motion; the NLP has 3
variables instead of ~2000), and IPOPT with the grey-box's quasi-Newton Hessian stalled on
the slew problem. Why this load case and not "one revolution": the seed's crank and rod
have the same length (2 m), so a driven full revolution passes the singular positions at
90 and 270 degrees, where the slider cannot be kept on its guide without unbounded forces
(123 kN at the 270 degree position at 1 rev/s even without the SDA); in the seed's load
case the crank swings instead of revolving.

Prints the optimum, the peak bearing force at the seed's values (k = 2e4 N/m, c = 0) and
at the optimum, SLSQP's iterations and the CPU time; writes ``out/pyomo_design.png``
(bearing force history at the seed's values and at the optimum).

CPU time at defaults: 34 s (2-core machine shared by other jobs, November 2026). Results:
at defaults the optimum is
``k = 0``, ``c = 5000 N s/m`` (the upper bound): peak bearing force 2040.7 N (seed) ->
1008.4 N (-50.6 %), 14 SLSQP iterations, 17 simulations with sensitivities, 34 s CPU. The
damper makes the swing quasi-static, the spring only adds load; the remaining peak is the
1 kN push transmitted to the bearing. With ``--quick`` (0.5 s, dt = 0.02 s): ``k = 0``,
``c = 4835 N s/m`` (interior), 2039.2 N -> 1007.4 N (-50.6 %), 17 iterations, 9.6 s CPU.

Run: ``python examples/pyomo_design.py`` (``--quick``: the tests' settings; no Pyomo needed).
"""

import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

import flexmbd.pyomo as fmo
from flexmbd.example_args import quick_settings
from flexmbd.pyomo.shooting import Shooting

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SEED = {"k": 2e4, "c": 0.0}
BOUNDS = {"k": (0.0, 1e5), "c": (0.0, 5e3)}
SCALE = np.array([1e4, 1e3])  # k in 1e4 N/m, c in 1e3 N s/m
FSCALE = 1e6  # |F|^2 in 1e6 N^2


def peak_problem(t_end=1.0, dt=0.01):
    """The seed model and its :class:`Shooting` with the SDA's ``k`` and ``c`` free."""
    from sda_slider_crank import build

    m = build(k=SEED["k"], c=SEED["c"])
    P = fmo.parameters(m)
    P.sda.k.free(bounds=BOUNDS["k"])
    P.sda.c.free(bounds=BOUNDS["c"])
    return Shooting(m.compile("absolute"), t_end, dt, P.free_parameters())


def bearing_force(sh, p, sensitivities=True):
    """Crank-bearing force history (N+1, 3) N, world, and its derivative w.r.t. (k, c)."""
    res = sh.simulate(p, sensitivities=sensitivities)
    return sh.joint_force(res, "j_crank")


def main(t_end=1.0, dt=0.01, outdir=None, plot=True, maxiter=50):
    """Optimize (k, c); return a dict with the optimum, the peaks, iterations and CPU."""
    sh = peak_problem(t_end, dt)
    cache = {}

    def forces(x):
        key = tuple(np.round(x, 14))
        if key not in cache:
            cache.clear()
            cache[key] = bearing_force(sh, x[:2] * SCALE)
        return cache[key]

    def cons(x):
        F, _ = forces(x)
        return x[2] - np.einsum("ij,ij->i", F, F) / FSCALE

    def cons_jac(x):
        F, dF = forces(x)
        g = -2 * np.einsum("ij,ijk->ik", F, dF) * SCALE / FSCALE
        return np.hstack([g, np.ones((len(F), 1))])

    F0, _ = bearing_force(sh, np.array([SEED["k"], SEED["c"]]), sensitivities=False)
    peak0 = float(np.linalg.norm(F0, axis=1).max())
    x0 = np.array([SEED["k"], SEED["c"]]) / SCALE
    x0 = np.r_[x0, 1.01 * peak0**2 / FSCALE]
    bounds = [(lo / s, hi / s) for (lo, hi), s in zip(BOUNDS.values(), SCALE)] + [(0, None)]
    tic = time.process_time()
    sol = minimize(
        lambda x: x[2],
        x0,
        jac=lambda x: np.r_[0.0, 0.0, 1.0],
        method="SLSQP",
        bounds=bounds,
        constraints=[{"type": "ineq", "fun": cons, "jac": cons_jac}],
        options={"maxiter": maxiter, "ftol": 1e-9},
    )
    cpu = time.process_time() - tic
    p_opt = sol.x[:2] * SCALE
    F1, _ = bearing_force(sh, p_opt, sensitivities=False)
    peak1 = float(np.linalg.norm(F1, axis=1).max())
    out = {
        "k": float(p_opt[0]),
        "c": float(p_opt[1]),
        "peak_seed": peak0,
        "peak_opt": peak1,
        "reduction": 1 - peak1 / peak0,
        "iterations": int(sol.nit),
        "success": bool(sol.success),
        "message": sol.message,
        "cpu": cpu,
        "t": sh.t,
        "F_seed": F0,
        "F_opt": F1,
    }
    print(f"optimum k = {p_opt[0]:.6g} N/m, c = {p_opt[1]:.6g} N s/m ({sol.message})")
    print(
        f"peak crank-bearing force: seed {peak0:.1f} N -> optimum {peak1:.1f} N "
        f"({100 * out['reduction']:.1f} % lower); {sol.nit} SLSQP iterations, "
        f"{sol.nfev} simulations with sensitivities, {cpu:.1f} s CPU"
    )
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        od = Path(outdir or HERE / "out")
        od.mkdir(parents=True, exist_ok=True)
        fig, ax = plt.subplots(figsize=(8, 3.8))
        ax.plot(
            sh.t,
            np.linalg.norm(F0, axis=1),
            label=f"seed: k = {SEED['k']:.0f} N/m, c = {SEED['c']:.0f} N s/m",
        )
        ax.plot(
            sh.t,
            np.linalg.norm(F1, axis=1),
            label=f"optimum: k = {p_opt[0]:.0f} N/m, c = {p_opt[1]:.0f} N s/m",
        )
        ax.set_xlabel("t [s]")
        ax.set_ylabel("crank bearing force |F| [N]")
        ax.legend()
        fig.tight_layout()
        fig.savefig(od / "pyomo_design.png", dpi=110)
        plt.close(fig)
    return out


# --quick: the small settings the tests use
QUICK = dict(t_end=0.5, dt=0.02)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
