"""Identification: modal damping ratios and bearing friction of a flexible pendulum with IPOPT.

A thin steel strip (1.0 x 0.005 x 0.02 m, E = 2.1e11 Pa, rho = 7850 kg/m^3; a scikit-fem
quadratic hexahedral mesh reduced to 2 Craig-Bampton modes: mode 1 bends the strip in
the swing plane (4.2 Hz clamped), mode 2 across it (16.8 Hz, the wide direction)) swings
on a revolute joint (axis z) with viscous bearing friction ``c`` under gravity, released
from rest in the horizontal position with its tip plucked 10 mm out of the swing plane
(an initial modal displacement of mode 2). True values ``zeta_1 = 0.02``,
``zeta_2 = 0.01``, ``c = 0.05 N m s/rad``. The "measurement" is simulated with flexmbd's
Newmark integrator (trapezoidal, index 3) and sampled every ``dt``: what a test rig
records, the tip's world position (x, y, z; a camera) and a two-axis strain gauge at the
root (bending strain at the strip's surfaces over the first 0.1 m, in and across the
swing plane), each with Gaussian noise of 1 % of its RMS. The estimator is the trajectory
NLP of :class:`flexmbd.pyomo.collocation.Trajectory` (the grey-box block with exact
Jacobians, collocated with the same Newmark rule) solved by IPOPT from ``zeta_1 = zeta_2
= 0.05``, ``c = 0.2``, minimizing the weighted squared output error.

Why the pluck: released in the plane, the strip never moves out of it, so mode 2 carries
no motion and no signal depends on ``zeta_2``. :func:`fisher` computes the Fisher
information of the relative parameters from exact shooting sensitivities
(:class:`flexmbd.pyomo.shooting.Shooting`) for both experiments with the same sensors;
the planar release's matrix has rank 2 of 3 (``zeta_2`` column zero to round-off), the
plucked one rank 3 with Cramer-Rao standard deviations well below the 2 % target.

Prints the Fisher analysis, the recovered values and their errors, IPOPT's iterations
and CPU time; writes ``out/pyomo_identification.png`` (measured and fitted strains).

Run: ``python examples/pyomo_identification.py`` (``--quick``: the tests' settings).

CPU time at defaults (0.6 s, dt = 2.5 ms = 24 samples per mode-2 period, 7923 NLP
variables): 6 IPOPT iterations (Gauss-Newton Hessian), 1.7 s CPU in the solve (2-core
machine shared by other jobs, load 8, November 2026; 3.2 s in the same conditions with
four engine calls per grey-box node instead of one call for all nodes, 10.5 s before the
bearing became a compiled law and the nodes took the compiled engine); recovered
zeta_1 +0.64 %, zeta_2 -0.15 %, c -0.05 %; Fisher rank 2 (planar) vs 3 (plucked,
Cramer-Rao 0.52 %, 0.15 %, 0.08 %). With ``--quick`` (0.3 s, dt = 5 ms): 5 iterations,
0.45 s CPU (0.75 s with four engine calls per node, 2.2 s on the Python terms); -0.36 %,
-1.75 %, -0.90 %. Needs
``pip install "flexmbd[pyomo]"`` and the system Ipopt (README, Install).
"""

import time
from pathlib import Path

import numpy as np

import flexmbd as fm
from flexmbd.example_args import quick_settings

HERE = Path(__file__).resolve().parent
STEEL = dict(E=2.1e11, nu=0.3, rho=7850.0)
L, H, W = 1.0, 0.005, 0.02
TRUE = {"zeta1": 0.02, "zeta2": 0.01, "c": 0.05}
GUESS = {"zeta1": 0.05, "zeta2": 0.05, "c": 0.2}
PLUCK = 0.010  # initial out-of-plane tip deflection (m)
GAUGE = (0.0, 0.05, 0.1)  # strain gauge: curvature from the deflections at these x (m)


def reduced_strip(n_modes=2, nx=10):
    """The strip, reduced (interface A = the x = 0 face, rigid)."""
    import skfem

    mesh = skfem.MeshHex2.from_mesh(
        skfem.MeshHex1.init_tensor(
            np.linspace(0.0, L, nx + 1),
            np.linspace(-H / 2, H / 2, 2),
            np.linspace(-W / 2, W / 2, 2),
        )
    )
    strategy = fm.CraigBampton(n_modes, interfaces={"A": fm.fem.Plane((0, 0, 0), (1, 0, 0))})
    return fm.fem.reduce(
        mesh, fm.Material(**STEEL), strategy, name="strip", geometric=False, zeta=0.0
    )


def build(rb, pluck=PLUCK):
    """The pendulum with a ViscousBearing ``m.bearing`` and its parameters ``P``.

    ``pluck``: initial out-of-plane tip deflection (m) as a displacement of mode 2.
    """
    import flexmbd.pyomo as fmo

    q0 = np.zeros(rb.n_modes)
    q0[1] = pluck / float(np.asarray(fm.FlexibleBody(rb).point((L, 0, 0)).modes, float)[5, 1])
    m = fm.Model("flexible_pendulum_id")
    m.beam = fm.FlexibleBody(rb, geometric_stiffening=False, q0=q0)
    m.hinge = fm.Revolute(m.ground, m.beam, axis=(0, 0, 1), child_frame=m.beam.interface("A"))
    m.bearing = fmo.ViscousBearing(m.hinge, TRUE["c"])
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    P = fmo.parameters(m)
    P.beam.zeta[0].value = TRUE["zeta1"]
    P.beam.zeta[1].value = TRUE["zeta2"]
    return m, P


class Sensors:
    """The rig's signals: tip world position (m) and root bending strains (-).

    ``strain`` (2, n_modes): the surface strains ``-(H/2) w_y''`` (bending in the swing
    plane) and ``-(W/2) w_z''`` (across it) per modal coordinate, ``w''`` the second
    difference of the body-axis deflections at ``GAUGE`` (exact for the quadratic
    elements of the first 0.1 m).
    """

    def __init__(self, m, s):
        self.tip = m.beam.point((L, 0.0, 0.0))
        self.phi = np.asarray(self.tip.modes, float)[3:]
        d = [np.asarray(m.beam.point((x, 0.0, 0.0)).modes, float)[3:] for x in GAUGE]
        curv = (d[0] - 2 * d[1] + d[2]) / (GAUGE[1] - GAUGE[0]) ** 2
        self.strain = np.array([-H / 2 * curv[1], -W / 2 * curv[2]])
        self.sl = s.modal_slices["beam"].q
        self.bi = [b.name for b in s.bodies].index("beam")

    def of_result(self, res):
        """(N+1, 5) signals of a flexmbd simulation result."""
        p = self.tip.trajectory(res)
        return np.column_stack([p, res.body("beam").modal @ self.strain.T])

    def of_q(self, q):
        """(5,) signals at absolute coordinates ``q`` (Euler parameters)."""
        r, (e0, e1, e2, e3) = q[7 * self.bi : 7 * self.bi + 3], q[7 * self.bi + 3 : 7 * self.bi + 7]
        E = np.array([[-e1, e0, -e3, e2], [-e2, e3, e0, -e1], [-e3, -e2, e1, e0]])
        G = np.array([[-e1, e0, e3, -e2], [-e2, -e3, e0, e1], [-e3, e2, -e1, e0]])
        qf = q[self.sl]
        x = np.asarray(self.tip.position, float) + self.phi @ qf
        return np.r_[r + E @ G.T @ x, self.strain @ qf]

    def jacobian(self, q, eps=1e-7):
        """(5, n) d(signals)/dq by central differences of :meth:`of_q` (polynomial in q)."""
        J = np.empty((5, len(q)))
        for i in range(len(q)):
            dq = np.zeros(len(q))
            dq[i] = eps
            J[:, i] = (self.of_q(q + dq) - self.of_q(q - dq)) / (2 * eps)
        return J


def measure(m, s, sensors, t_end, dt, noise, seed=0):
    """The simulated signals (N+1, 5), their noisy copy and the noise levels (5,)."""
    res = s.simulate(
        t_end,
        dt=dt,
        integrator="newmark",
        beta=0.25,
        gamma=0.5,
        project_velocities=False,
        gauge=False,
        tol=1e-12,
        progress=False,
    )
    y = sensors.of_result(res)
    rng = np.random.default_rng(seed)
    sigma = noise * np.sqrt((y**2).mean(axis=0))
    return res, y, y + sigma * rng.standard_normal(y.shape), sigma


def fisher(rb, pluck, t_end, dt, sigma):
    """Fisher information of the relative parameters (zeta_1, zeta_2, c) of one experiment.

    Exact forward sensitivities of a Newmark simulation (:class:`Shooting`) times the
    sensors' Jacobian, weighted by the noise levels ``sigma`` (5,):
    ``F = sum_k S_k^T S_k`` with ``S_k = diag(1/sigma) dy_k/dq dq_k/dp diag(p)``.
    Returns ``(F, crb)``, ``crb`` the Cramer-Rao relative standard deviations
    (``inf`` where ``F`` is singular).
    """
    from flexmbd.pyomo.shooting import Shooting

    m, P = build(rb, pluck)
    s = m.compile("absolute")
    sensors = Sensors(m, s)
    free = [P.beam.zeta[0], P.beam.zeta[1], P.bearing.c]
    for p in free:
        p.free()
    p0 = np.array([TRUE["zeta1"], TRUE["zeta2"], TRUE["c"]])
    r = Shooting(s, t_end, dt, free).simulate(p0)
    S = np.concatenate(
        [(sensors.jacobian(r.q[k]) @ r.dq[k]) / sigma[:, None] * p0 for k in range(1, len(r.t))]
    )
    F = S.T @ S
    w = np.linalg.eigvalsh(F)
    crb = np.sqrt(np.diag(np.linalg.inv(F))) if w[0] > 1e-10 * w[-1] else np.full(3, np.inf)
    return F, crb


def main(t_end=0.6, dt=0.0025, noise=0.01, plot=True, outdir=None, tee=False, options=None):
    import pyomo.environ as pe

    from flexmbd.pyomo.collocation import Trajectory

    rb = reduced_strip(2)
    m, P = build(rb)
    s = m.compile("absolute")
    sensors = Sensors(m, s)
    res, y_true, y_meas, sigma = measure(m, s, sensors, t_end, dt, noise)
    print(
        f"flexible pendulum identification: {rb.n_modes} modes (f = "
        f"{', '.join(f'{f:.1f}' for f in rb.frequencies)} Hz clamped), "
        f"{round(t_end / dt)} samples of {dt:g} s, noise {noise * 100:g} % RMS"
    )
    # identifiability of the two experiments with the same sensors (noise levels)
    fim = {}
    for name, pluck in (("planar release", 0.0), (f"plucked {PLUCK * 1e3:g} mm", PLUCK)):
        F, crb = fisher(rb, pluck, t_end, dt, sigma)
        w = np.linalg.eigvalsh(F)
        rank = int(np.sum(w > 1e-10 * w[-1]))
        fim[name] = {"F": F, "crb": crb, "rank": rank}
        print(
            f"  Fisher information, {name}: eigenvalues {', '.join(f'{x:.3g}' for x in w)}; "
            f"rank {rank} of 3; zeta_2 column norm {np.sqrt(F[1, 1]):.3g}; Cramer-Rao std "
            + ", ".join(f"{x * 100:.2f} %" for x in crb)
        )
    # start the estimator from wrong parameters
    z1, z2, c = P.beam.zeta[0], P.beam.zeta[1], P.bearing.c
    z1.free(bounds=(0.0, 0.5), value=GUESS["zeta1"])
    z2.free(bounds=(0.0, 0.5), value=GUESS["zeta2"])
    c.free(bounds=(0.0, 2.0), value=GUESS["c"])
    tr = Trajectory(
        s, t_end, dt, params=[z1, z2, c], initial=(res.q, res.qd, res.qdd, res.extra["lambda"])
    )
    sl = sensors.sl
    obj = 0
    for k in range(1, tr.N + 1):
        qf = tr.q(k)[sl]
        strains = [
            sum(float(sensors.strain[i, j]) * qf[j] for j in range(len(qf))) for i in range(2)
        ]
        for i, val in enumerate([*tr.point(k, sensors.tip), *strains]):
            obj += ((val - float(y_meas[k, i])) / float(sigma[i])) ** 2
    tr.m.obj = pe.Objective(expr=obj / tr.N)
    wall = time.perf_counter()
    tr.solve(tee=tee, options=options)
    wall = time.perf_counter() - wall
    est = {"zeta1": z1.value, "zeta2": z2.value, "c": c.value}
    err = {k: (est[k] - TRUE[k]) / TRUE[k] for k in TRUE}
    for k, unit in (("zeta1", ""), ("zeta2", ""), ("c", " (N m s/rad)")):
        print(
            f"  {k:6s}: true {TRUE[k]:.4f}  start {GUESS[k]:.4f}  "
            f"estimate {est[k]:.5f}  error {err[k] * 100:+.2f} %{unit}"
        )
    print(
        f"  IPOPT: {tr.iterations} iterations, {tr.cpu:.1f} s CPU ({wall:.1f} s wall), "
        f"{tr.m.gb.get_external_model().n_evaluations} grey-box Jacobians; "
        f"NLP {tr.res.N * tr.res.nx + tr.res.np} variables"
    )
    _, qs, *_ = tr.values()
    fit = qs[:, sl] @ sensors.strain.T
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        out = Path(outdir or HERE / "out")
        out.mkdir(parents=True, exist_ok=True)
        fig, axs = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
        for i, (ax, lab) in enumerate(zip(axs, ("in the swing plane", "across it"))):
            ax.plot(tr.times, y_meas[:, 3 + i] * 1e6, ".", ms=2, label="measured (1 % noise)")
            ax.plot(tr.times, fit[:, i] * 1e6, lw=1, label="fitted")
            ax.set_ylabel(f"root strain {lab} [1e-6]")
        axs[0].legend(loc="upper right")
        axs[0].set_title(
            f"zeta_1 = {est['zeta1']:.4f}, zeta_2 = {est['zeta2']:.4f}, c = {est['c']:.4f}"
        )
        axs[1].set_xlabel("t [s]")
        fig.tight_layout()
        fig.savefig(out / "pyomo_identification.png", dpi=110)
        plt.close(fig)
    return {
        "estimate": est,
        "error": err,
        "iterations": tr.iterations,
        "cpu": tr.cpu,
        "fisher": fim,
        "trajectory": tr,
        "measured": y_meas,
        "true_signals": y_true,
    }


# --quick: the small settings the tests use
QUICK = dict(t_end=0.3, dt=0.005)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
