"""Design: the slider-crank SDA's spring constant and damping for the least peak bearing load.

Main case, one driven revolution: the seed 002 slider-crank's bodies (two 50 kg links,
transverse inertia 15 kg m^2, axial 0.02 kg m^2; 1 kg slider), its SDA between the
links' centres of mass (free length = its length at the start, crank at 45 degrees) and
its load (1 kN push on the slider), with a non-singular geometry: crank radius 1 m, half
the 2 m rod (the seed's crank and rod are both 2 m, so a driven revolution passes two
singular positions where the bearing force is unbounded). A driver turns the crank at a
constant ``omega = 1 rad/s`` from 45 degrees; after a start-up quarter revolution the
objective is the peak over one full revolution of the force the crank bearing
(revolute crank-ground) carries, its norm from the joint's multipliers. Design variables
the SDA's ``k`` in [0, 1e5] N/m and ``c`` in [0, 5e3] N s/m; baseline the seed's values
``k = 2e4 N/m``, ``c = 0``. The min-max is made smooth with a bound variable ``t``:
minimize ``t`` subject to ``|F(t_m)|^2 <= t`` at every node of the revolution, solved
with scipy's SLSQP on exact forward sensitivities (:class:`flexmbd.pyomo.shooting.Shooting`);
the reported peak is the simulated one at the optimum (not the bound variable).

Integrator: Newmark with ``gamma = 0.6``, ``beta = (gamma + 1/2)^2 / 4`` (numerically
damped), 200 steps per revolution. With the trapezoidal rule the index-3 multipliers of
this driven (fully prescribed, one degree of freedom) motion oscillate undamped from step
to step (about +-300 N at 1 rev/s, so the bearing force is not periodic); the damped rule
lets that start-up oscillation die out within the start-up quarter revolution (the
revolution's forces repeat to 1e-3 N).

Why 1 rad/s: the driven motion is prescribed, so the SDA changes only the constraint
forces, and its line of action (between the two centres of mass, always horizontal)
changes only the vertical part of the bearing force (through the guide's normal force),
with a lever arm proportional to ``sin(theta)``. At 3 rad/s and faster the peak is the
inertial load at the in-line position ``theta = 0`` (1801 N at 3 rad/s), which no SDA
setting changes; at 1 rad/s the peak is the transmitted push near 74 degrees, where the
SDA acts.

Second case (``case="seed"``, ``--seed-case``): the seed's own model and load case (2 m
crank, 1 kN push from rest at 45 degrees, 1 s, trapezoidal rule, dt = 0.01 s), where the
crank swings instead of revolving.

Prints the optimum, the peak bearing force at the baseline and at the optimum, SLSQP's
iterations and the CPU time; writes ``out/pyomo_design.png`` (bearing force at the
baseline and at the optimum).

CPU time and results at defaults (2-core machine shared by other jobs, November 2026):
revolution: optimum ``k = 0``, ``c = 0`` (both lower bounds; d(peak)/dk = 0.031 N per
N/m, d(peak)/dc = 0.067 N per N s/m there), peak 3691.4 N (seed SDA) -> 1129.7 N
(-69.4 %), 7 SLSQP iterations, 2.0 s CPU (compiled shooting path, load 8: a step's
Newton iterations and the joint force's ``Phi_q`` blocks in one compiled call each; 4.6 s
in the same conditions with one engine call per iteration and a SciPy matrix per
``Phi_q``, 5.2 s earlier at a lower load); the SDA at its free
length's configuration is compressed and shortening at the peak (72 degrees), so any
spring or damper adds load.
``--quick`` (60 steps per revolution): 3689.7 N -> 1130.2 N, 7 iterations, 0.8 s CPU
(1.65 s before, median of 4 interleaved runs each at load 8).
Seed load case: ``k = 0``, ``c = 5000 N s/m`` (upper bound), 2040.7 N -> 1008.4 N
(-50.6 %), 12 iterations, 3.0 s CPU.

Run: ``python examples/pyomo_design.py`` (``--quick``: the tests' settings,
``--seed-case``: the seed's load case; no Pyomo needed).
"""

import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

import flexmbd as fm
import flexmbd.pyomo as fmo
from flexmbd.example_args import quick_parser
from flexmbd.pyomo.shooting import Shooting
from flexmbd.spatial import rotation_matrix

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SEED = {"k": 2e4, "c": 0.0}
BOUNDS = {"k": (0.0, 1e5), "c": (0.0, 5e3)}
SCALE = np.array([1e4, 1e3])  # k in 1e4 N/m, c in 1e3 N s/m
FSCALE = 1e6  # |F|^2 in 1e6 N^2
R_CRANK, L_ROD = 1.0, 2.0  # m (revolving case)
THETA0 = np.pi / 4  # start crank angle (rad)
OMEGA = 1.0  # crank speed (rad/s)
GAMMA = 0.6  # Newmark gamma of the revolving case (beta = (gamma + 1/2)^2 / 4)


def build_revolving(k=SEED["k"], c=SEED["c"], omega=OMEGA, push=1000.0):
    """The seed's bodies, SDA and push with a 1 m crank and a constant-speed driver."""
    m = fm.Model("revolving_slider_crank")
    link = dict(mass=50.0, inertia=(0.02, 15.0, 15.0))  # x = link axis
    m.crank = fm.RigidBody(**link)
    m.rod = fm.RigidBody(**link)
    m.slider = fm.RigidBody(1.0, (1.0, 1.0, 1.0))
    psi = -np.arcsin(R_CRANK * np.sin(THETA0) / L_ROD)  # rod angle (rad)
    x_slider = R_CRANK * np.cos(THETA0) + L_ROD * np.cos(psi)
    m.j_crank = fm.Revolute(
        m.ground, m.crank, child_frame=(-R_CRANK / 2, 0, 0), q0=[THETA0], qd0=[omega]
    )
    m.j_rod = fm.Spherical(
        m.crank,
        m.rod,
        parent_frame=(R_CRANK / 2, 0, 0),
        child_frame=(-L_ROD / 2, 0, 0),
        q0=rotation_matrix((0, 0, 1), psi - THETA0),
    )
    m.j_slider = fm.Universal(
        m.rod,
        m.slider,
        axis1=(0, 0, 1),
        axis2=(0, 1, 0),
        parent_frame=(L_ROD / 2, 0, 0),
        q0=[-psi, 0.0],
    )
    m.j_guide = fm.Prismatic(m.ground, m.slider, axis=(1, 0, 0), q0=[x_slider])
    m.push = fm.PointForce(m.slider, (0, 0, 0), (push, 0, 0))
    m.sda = fm.SpringDamperActuator(m.crank, (0, 0, 0), m.rod, (0, 0, 0), k=k, c=c)
    m.drive = fm.JointDriver.constant_speed(m.j_crank, omega)
    return m


def peak_problem(
    case="revolution", omega=OMEGA, steps_per_rev=200, startup=0.25, t_end=1.0, dt=0.01
):
    """``(Shooting, first)``: the case's simulation with the SDA's ``k``, ``c`` free and the
    first node of the objective's window (``"revolution"``: after ``startup``
    revolutions, one revolution of ``steps_per_rev`` steps; ``"seed"``: the seed's model
    over ``t_end`` with step ``dt``, every node)."""
    if case == "seed":
        from sda_slider_crank import build

        m = build(k=SEED["k"], c=SEED["c"])
    elif case == "revolution":
        m = build_revolving(omega=omega)
    else:
        raise ValueError(f"pyomo_design: case={case!r}; use 'revolution' or 'seed'")
    P = fmo.parameters(m)
    P.sda.k.free(bounds=BOUNDS["k"])
    P.sda.c.free(bounds=BOUNDS["c"])
    s = m.compile("absolute")
    if case == "seed":
        return Shooting(s, t_end, dt, P.free_parameters()), 0
    period = 2 * np.pi / omega
    first = int(round(startup * steps_per_rev))
    sh = Shooting(
        s,
        (first + steps_per_rev) * period / steps_per_rev,
        period / steps_per_rev,
        P.free_parameters(),
        beta=(GAMMA + 0.5) ** 2 / 4,
        gamma=GAMMA,
    )
    return sh, first


def bearing_force(sh, p, sensitivities=True):
    """Crank-bearing force history (N+1, 3) N, world, and its derivative w.r.t. (k, c)."""
    res = sh.simulate(p, sensitivities=sensitivities)
    return sh.joint_force(res, "j_crank")


def minimize_peak(sh, first, p0, maxiter=50):
    """SLSQP on ``min t s.t. |F_m|^2 <= t`` (nodes ``m >= first``) from ``p0`` = (k, c)."""
    cache = {}

    def forces(x):
        key = tuple(np.round(x, 14))
        if key not in cache:
            cache.clear()
            F, dF = bearing_force(sh, x[:2] * SCALE)
            cache[key] = (F[first:], dF[first:])
        return cache[key]

    def cons(x):
        F, _ = forces(x)
        return x[2] - np.einsum("ij,ij->i", F, F) / FSCALE

    def cons_jac(x):
        F, dF = forces(x)
        g = -2 * np.einsum("ij,ijk->ik", F, dF) * SCALE / FSCALE
        return np.hstack([g, np.ones((len(F), 1))])

    F0, _ = bearing_force(sh, np.asarray(p0, float), sensitivities=False)
    x0 = np.r_[
        np.asarray(p0, float) / SCALE,
        1.01 * (np.linalg.norm(F0[first:], axis=1).max() ** 2) / FSCALE,
    ]
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
    return sol, time.process_time() - tic


def main(
    case="revolution",
    omega=OMEGA,
    steps_per_rev=200,
    t_end=1.0,
    dt=0.01,
    outdir=None,
    plot=True,
    maxiter=50,
):
    """Optimize (k, c); return a dict with the optimum, the peaks, iterations and CPU."""
    sh, first = peak_problem(case, omega, steps_per_rev, t_end=t_end, dt=dt)
    p_seed = np.array([SEED["k"], SEED["c"]])
    sol, cpu = minimize_peak(sh, first, p_seed, maxiter)
    p_opt = np.clip(
        sol.x[:2] * SCALE, [b[0] for b in BOUNDS.values()], [b[1] for b in BOUNDS.values()]
    )
    peaks = {}
    hist = {}
    for name, p in (("seed", p_seed), ("none", np.zeros(2)), ("opt", p_opt)):
        F, _ = bearing_force(sh, p, sensitivities=False)
        hist[name] = np.linalg.norm(F, axis=1)
        peaks[name] = float(hist[name][first:].max())
    # the peak's gradient at the optimum (N per N/m, N per N s/m): at a bound optimum its
    # components point out of the feasible box
    F, dF = bearing_force(sh, p_opt)
    j = first + int(np.argmax(np.linalg.norm(F[first:], axis=1)))
    grad = F[j] @ dF[j] / np.linalg.norm(F[j])
    active = [
        f"{n} at its {'lower' if np.isclose(v, lo, atol=1e-6 * (hi - lo)) else 'upper'} bound"
        for (n, (lo, hi)), v in zip(BOUNDS.items(), p_opt)
        if np.isclose(v, lo, atol=1e-6 * (hi - lo)) or np.isclose(v, hi, atol=1e-6 * (hi - lo))
    ]
    t = sh.t
    theta = np.degrees(THETA0 + omega * t[first + np.argmax(hist["opt"][first:])]) % 360
    out = {
        "case": case,
        "k": float(p_opt[0]),
        "c": float(p_opt[1]),
        "peak_seed": peaks["seed"],
        "peak_none": peaks["none"],
        "peak_opt": peaks["opt"],
        "reduction": 1 - peaks["opt"] / peaks["seed"],
        "active_bounds": active,
        "gradient": grad,
        "iterations": int(sol.nit),
        "simulations": int(sol.nfev),
        "success": bool(sol.success),
        "message": sol.message,
        "cpu": cpu,
        "t": t,
        "first": first,
        "F_seed": hist["seed"],
        "F_opt": hist["opt"],
    }
    where = f", crank at {theta:.1f} deg" if case == "revolution" else ""
    print(
        f"case {case!r}: optimum k = {p_opt[0]:.6g} N/m, c = {p_opt[1]:.6g} N s/m "
        f"({', '.join(active) or 'interior'}; {sol.message})"
    )
    print(
        f"peak crank-bearing force: seed SDA {peaks['seed']:.1f} N -> optimum {peaks['opt']:.1f} N "
        f"({100 * out['reduction']:.1f} % lower{where}); without SDA {peaks['none']:.1f} N; "
        f"{sol.nit} SLSQP iterations, {sol.nfev} simulations with sensitivities, {cpu:.1f} s CPU"
    )
    print(
        f"d(peak)/dk = {grad[0]:.4g} N/(N/m), d(peak)/dc = {grad[1]:.4g} N/(N s/m) at the optimum"
    )
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        od = Path(outdir or HERE / "out")
        od.mkdir(parents=True, exist_ok=True)
        fig, ax = plt.subplots(figsize=(8, 3.8))
        x = np.degrees(THETA0 + omega * t) if case == "revolution" else t
        sl = slice(first, None)
        ax.plot(
            x[sl],
            hist["seed"][sl],
            label=f"seed SDA: k = {SEED['k']:.0f} N/m, c = {SEED['c']:.0f} N s/m",
        )
        ax.plot(
            x[sl],
            hist["opt"][sl],
            label=f"optimum: k = {p_opt[0]:.0f} N/m, c = {p_opt[1]:.0f} N s/m",
        )
        ax.set_xlabel("crank angle [deg]" if case == "revolution" else "t [s]")
        ax.set_ylabel("crank bearing force |F| [N]")
        ax.legend()
        fig.tight_layout()
        fig.savefig(od / "pyomo_design.png", dpi=110)
        plt.close(fig)
    return out


# --quick: the small settings the tests use
QUICK = dict(steps_per_rev=60)
QUICK_SEED = dict(case="seed", t_end=0.5, dt=0.02)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    ap = quick_parser(__doc__, QUICK)
    ap.add_argument("--seed-case", action="store_true", help="the seed's load case")
    a = ap.parse_args(argv)
    if a.seed_case:
        return dict(QUICK_SEED) if a.quick else {"case": "seed"}
    return dict(QUICK) if a.quick else {}


if __name__ == "__main__":
    main(**settings())
