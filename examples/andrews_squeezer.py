"""Andrews' squeezing mechanism (the seven-body mechanism) with the model API.

The benchmark of Hairer & Wanner (Solving ODEs II, section VII.7) and of the
Test Set for IVP Solvers (problem ``andrews``): seven rigid bodies in a plane,
revolute joints, a spring between the fixed point C and body 3, and a constant
drive torque on body 1. The Test Set's coordinates are the seven angles::

    beta   body 1 (crank) about O, absolute
    theta  body 2 relative to body 1            (the book's Theta)
    gamma  body 3 about B, absolute
    phi    body 4 relative to body 5            (the book's Phi)
    delta  body 5 about A, absolute
    Omega  body 6 relative to body 7            (the book's Omega)
    epsilon body 7 about A, absolute

They are exactly the tree-joint coordinates of this model, because the geometry
below is read off the book's constraint equations and centre-of-mass positions
(every body frame has its x axis along the angle that defines it):

* body 1: origin O, point F (joint with body 2) at ``(rr, 0)``, centre ``(ra, 0)``;
* body 2: origin F, the common point E (joint with bodies 3, 4, 6) at ``(-d, 0)``,
  centre ``(-da, 0)``;
* body 3: origin B, E at ``(0, -ss)``, spring point D at ``(sd, -sc)``, centre
  ``(sb, -sa)``;
* body 5: origin A, joint with body 4 at ``(zt, 0)``, centre ``(ta, tb)``;
* body 4: origin at that joint, E at ``(0, -e)``, centre ``(0, -(e - ea))``;
* body 7: origin A, joint with body 6 at ``(0, -u)``, centre ``(-ub, -ua)``;
* body 6: origin at that joint, E at ``(zf, 0)``, centre ``(zf - fa, 0)``.

The loop closures at E (bodies 3, 4 and 6 meet body 2) are three cut revolute
joints: 15 cut equations in space, of which 6 are independent (the planar
ones); the QR projection discards the other 9 by itself.

Reference (Test Set, t = 0.03 s) and the result are printed digit by digit.

Run: ``python examples/andrews_squeezer.py``.

The constant drive torque and the spring are compiled force elements, so the whole
DOP853 step runs in compiled code (``flexmbd.recursive._nbloops.loop_dop853_step``).
CPU time of a run (model, compile, integration, 30 output samples) in a process whose
kernels are loaded: 0.075 s with ``--quick`` (the tests' settings, ``QUICK``, 9.35
digits), 0.14 s at the defaults (rtol 1e-12, 9.57 digits); the same ``--quick`` run with
the drive as a Python function (``build(drive_function=True)``, the Python path) takes
1.1 s (``benchmarks/bench_loops.py``, RESULTS.md; 2-core machine shared by other jobs,
November 2026). This script's first run in a fresh process also loads the cached
compiled kernels (about 1.3 s).
"""

import time
from pathlib import Path

import numpy as np

import flexmbd as fm
from flexmbd.example_args import quick_settings

# data (Hairer & Wanner II, VII.7; Test Set "andrews")
M = dict(m1=0.04325, m2=0.00365, m3=0.02373, m4=0.00706, m5=0.07050, m6=0.00706, m7=0.05498)
I = dict(i1=2.194e-6, i2=4.410e-7, i3=5.255e-6, i4=5.667e-7, i5=1.169e-5, i6=5.667e-7, i7=1.912e-5)
xa, ya, xb, yb, xc, yc = -0.06934, -0.00227, -0.03635, 0.03273, 0.014, 0.072
d, da, e, ea, rr, ra = 28e-3, 115e-4, 2e-2, 1421e-5, 7e-3, 92e-5
ss, sa, sb, sc, sd = 35e-3, 1874e-5, 1043e-5, 18e-3, 2e-2
ta, tb, u, ua, ub = 2308e-5, 916e-5, 4e-2, 1228e-5, 449e-5
zf, zt, fa = 2e-2, 4e-2, 1421e-5
mom, c0, lo = 0.033, 4530.0, 0.07785

ANGLES = ("beta", "theta", "gamma", "phi", "delta", "Omega", "epsilon")
Q0 = dict(
    beta=-0.0617138900142764496358948458001,
    theta=0.0,
    gamma=0.455279819163070380255912382449,
    phi=0.222668390165885884674473185609,
    delta=0.487364979543842550225598953530,
    Omega=-0.222668390165885884674473185609,
    epsilon=1.23054744454982119249735015568,
)
#: Test Set reference solution at t = 0.03 s
REFERENCE = dict(
    beta=0.1581077119629904e2,
    theta=-0.1575637105984298e2,
    gamma=0.4082224013073101e-1,
    phi=-0.5347301163226948,
    delta=0.5244099658805304,
    Omega=0.5347301163226948,
    epsilon=0.1048080741042263e1,
)


def _body(k, com):
    Izz = I[f"i{k}"]
    # planar body: only Izz matters; the other two moments keep the spatial inertia regular
    return fm.RigidBody(mass=M[f"m{k}"], inertia=(Izz, Izz, Izz), com=(com[0], com[1], 0.0))


def build(drive_function=False):
    """The squeezer as a Model; joints named after the Test Set angles.

    ``drive_function``: the drive torque as a Python function ``f(t, q, qd)`` (a user
    force law) instead of a constant, which keeps the run on the Python path of the
    recursive formulation (for comparison: the same equations, about 10x the CPU time).
    """
    m = fm.Model("andrews_squeezer")
    m.K1 = _body(1, (ra, 0))
    m.K2 = _body(2, (-da, 0))
    m.K3 = _body(3, (sb, -sa))
    m.K4 = _body(4, (0, -(e - ea)))
    m.K5 = _body(5, (ta, tb))
    m.K6 = _body(6, (zf - fa, 0))
    m.K7 = _body(7, (-ub, -ua))
    z = (0.0, 0.0, 1.0)
    m.beta = fm.Revolute(m.ground, m.K1, axis=z, q0=[Q0["beta"]])
    m.theta = fm.Revolute(m.K1, m.K2, axis=z, parent_frame=(rr, 0, 0), q0=[Q0["theta"]])
    m.gamma = fm.Revolute(m.ground, m.K3, axis=z, parent_frame=(xb, yb, 0), q0=[Q0["gamma"]])
    m.delta = fm.Revolute(m.ground, m.K5, axis=z, parent_frame=(xa, ya, 0), q0=[Q0["delta"]])
    m.phi = fm.Revolute(m.K5, m.K4, axis=z, parent_frame=(zt, 0, 0), q0=[Q0["phi"]])
    m.epsilon = fm.Revolute(m.ground, m.K7, axis=z, parent_frame=(xa, ya, 0), q0=[Q0["epsilon"]])
    m.Omega = fm.Revolute(m.K7, m.K6, axis=z, parent_frame=(0, -u, 0), q0=[Q0["Omega"]])
    # the common point E closes three loops
    m.E3 = fm.Revolute(
        m.K2, m.K3, axis=z, parent_frame=(-d, 0, 0), child_frame=(0, -ss, 0), cut=True
    )
    m.E4 = fm.Revolute(
        m.K2, m.K4, axis=z, parent_frame=(-d, 0, 0), child_frame=(0, -e, 0), cut=True
    )
    m.E6 = fm.Revolute(
        m.K2, m.K6, axis=z, parent_frame=(-d, 0, 0), child_frame=(zf, 0, 0), cut=True
    )
    m.spring = fm.SpringDamperActuator(m.ground, (xc, yc, 0.0), m.K3, (sd, -sc, 0.0), k=c0, l0=lo)
    m.drive = fm.JointForce(m.beta, (lambda t, q, qd: [mom]) if drive_function else [mom])
    return m


def simulate(
    t_end=0.03, rtol=1e-12, atol=1e-14, n_out=30, integrator="dop853", drive_function=False,
    **options,
):  # fmt: skip
    """Integrate from the Test Set's initial state; returns Results."""
    m = build(drive_function)
    system = m.compile("recursive", **options)
    return system.simulate(t_end, dt=t_end / n_out, integrator=integrator, rtol=rtol, atol=atol)


def angles(res, i=-1):
    """The seven Test Set angles at sample ``i``."""
    return {a: float(res.joint(a).q[i, 0]) for a in ANGLES}


def digits(value, ref):
    """Number of matching significant digits, -log10 of the relative error."""
    err = abs(value - ref) / abs(ref)
    return np.inf if err == 0 else -np.log10(err)


def main(t_end=0.03, rtol=1e-12, atol=1e-14, outdir=None, plot=True):
    tic = time.process_time()
    res = simulate(t_end, rtol=rtol, atol=atol)
    cpu = time.process_time() - tic
    got = angles(res)
    print(
        f"Andrews' squeezer, t = {t_end} s, DOP853 rtol={rtol:g}, "
        f"{res.meta.get('steps')} steps, {cpu:.3f} s CPU (model, compile, run, output)"
    )
    print(
        f"rank of the 15 cut equations: {sorted(set(res.stats['rank'].tolist()))} "
        f"(discarded {int(res.stats['discarded'][-1].sum())})"
    )
    worst = np.inf
    if abs(t_end - 0.03) < 1e-15:
        print(f"{'angle':>8} {'flexmbd':>22} {'Test Set reference':>22} {'digits':>7}")
        for a in ANGLES:
            dg = digits(got[a], REFERENCE[a])
            worst = min(worst, dg)
            print(f"{a:>8} {got[a]:22.15e} {REFERENCE[a]:22.15e} {dg:7.2f}")
        print(f"matching significant digits (worst angle): {worst:.2f}")
    print(
        f"max position violation {res.stats['position_violation'].max():.2e}, "
        f"velocity violation {res.stats['velocity_violation'].max():.2e}"
    )
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        out = Path(outdir or Path(__file__).parent / "out")
        out.mkdir(parents=True, exist_ok=True)
        fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
        for a in ANGLES:
            q = res.joint(a).q[:, 0]
            axes[0].plot(res.t * 1e3, np.mod(q + np.pi, 2 * np.pi) - np.pi, label=a)
        axes[0].set_ylabel("angle mod 2 pi [rad]")
        axes[0].legend(fontsize="small", ncol=4)
        axes[1].plot(res.t * 1e3, res.joint("beta").qd[:, 0], label="beta'")
        axes[1].set_ylabel("crank rate [rad/s]")
        axes[1].set_xlabel("t [ms]")
        fig.tight_layout()
        fig.savefig(out / "andrews_squeezer.png", dpi=110)
        plt.close(fig)
    return res, got, worst


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(rtol=1e-9, atol=1e-11)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
