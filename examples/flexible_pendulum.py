"""Flexible pendulum: a steel beam swinging on a revolute joint under gravity.

Steel beam 1.0 x 0.05 x 0.05 m (E = 2.1e11 Pa, nu = 0.3, rho = 7850 kg/m^3), the
shipped 40 x 4 x 4 hexahedral mesh (``meshes/beam_hex.msh``, 1025 nodes), reduced
to 8 Craig-Bampton modes with the x = 0 face as a rigid interface ``A`` (the body
frame sits on it). A revolute joint about z joins the centre of that face to the
ground; gravity -9.81 y; released from rest in the horizontal position. One second
with generalized-alpha (rho_inf = 0.8) at dt = 1e-3 in the absolute formulation
(compiled Newton engine).

Prints the Newton iteration statistics, the energy balance, the tip deflection
relative to the rigid-body position and the largest von Mises stress of the run
(reconstructed from the modal coordinates); writes ``out/flexible_pendulum.png``
(tip trajectory and deflection). ``benchmarks/bench_flexible.py`` runs the same
model against Exudyn.

Run: ``python examples/flexible_pendulum.py`` (``main(t_end=0.05, n_modes=4)`` is the
small setting the tests use).

CPU time at defaults: 4.1 s; with ``--quick`` (the tests' small settings, ``QUICK``):
2.1 s (process CPU of ``python examples/flexible_pendulum.py``, compiled-kernel cache
warm; 2-core machine, load average 1-5, 29 November 2026).
"""

import time
from pathlib import Path

import numpy as np

import flexmbd as fm
from flexmbd.example_args import quick_settings

HERE = Path(__file__).resolve().parent
MESH = HERE.parent / "meshes" / "beam_hex.msh"
STEEL = dict(E=2.1e11, nu=0.3, rho=7850.0)
A0 = (0.0, 0.025, 0.025)  # centre of the x = 0 face
TIP = (1.0, 0.025, 0.025)  # centre of the x = L face (a mesh node)


def reduced_beam(n_modes=8, mesh=MESH):
    """The reduced beam (Craig-Bampton, interface A = the x = 0 face, rigid)."""
    strategy = fm.CraigBampton(n_modes, interfaces={"A": "A"}, frame="interface")
    return fm.fem.reduce(mesh, fm.Material(**STEEL), strategy, name="beam")


def build(reduced, stiffening=True):
    m = fm.Model("flexible_pendulum")
    m.beam = fm.FlexibleBody(reduced, geometric_stiffening=stiffening)
    m.hinge = fm.Revolute(
        m.ground, m.beam, axis=(0, 0, 1), parent_frame=A0, child_frame=m.beam.interface("A")
    )
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    return m


def tip_trajectory(model, res):
    """World position of the tip node (nt, 3) and its deflection from the rigid position."""
    tip = model.beam.point(TIP)
    p = tip.trajectory(res)
    R = fm.results.quat_to_rot_batch(res.body("beam").orientation)
    rigid = res.body("beam").position + R @ tip.position
    return p, p - rigid


def main(t_end=1.0, dt=1e-3, n_modes=8, rho_inf=0.8, plot=True, outdir=None, mesh=MESH):
    tic = time.perf_counter()
    rb = reduced_beam(n_modes, mesh)
    t_red = time.perf_counter() - tic
    m = build(rb)
    s = m.compile("absolute")
    tic = time.perf_counter()
    cpu = time.process_time()
    res = s.simulate(t_end, dt=dt, integrator="generalized-alpha", rho_inf=rho_inf)
    wall, cpu = time.perf_counter() - tic, time.process_time() - cpu
    p, defl = tip_trajectory(m, res)
    it = res.stats["newton_iterations"][1:]
    E = res.energy
    every = max(1, len(res.t) // 50)
    vm = max(float(rb.von_mises(q).max()) for q in res.body("beam").modal[::every])
    print(
        f"flexible pendulum: {rb.n_modes} Craig-Bampton modes (f1 = {rb.frequencies[0]:.2f} Hz), "
        f"{len(res.t) - 1} steps of {dt:g} s, reduction {t_red:.2f} s, simulation {wall:.2f} s "
        f"wall / {cpu:.2f} s CPU"
    )
    print(
        f"Newton corrections per step: mean {it.mean():.2f}, max {it.max()} "
        f"(generalized-alpha rho_inf = {rho_inf})"
    )
    print(
        f"tip at t = {res.t[-1]:.3f} s: {np.round(p[-1], 6).tolist()} m; largest tip deflection "
        f"{np.abs(defl).max() * 1e3:.3f} mm; largest von Mises stress {vm / 1e6:.2f} MPa"
    )
    print(
        f"energy: total {E['total'][0]:.6f} -> {E['total'][-1]:.6f} J, numerical dissipation "
        f"{E['numerical_dissipation'][-1]:.3e} J; max constraint violation "
        f"{res.stats['constraint_violation'].max():.1e}"
    )
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        out = Path(outdir or HERE / "out")
        out.mkdir(parents=True, exist_ok=True)
        fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
        ax[0].plot(p[:, 0], p[:, 1])
        ax[0].set_aspect("equal")
        ax[0].set_xlabel("tip x [m]")
        ax[0].set_ylabel("tip y [m]")
        ax[0].set_title("tip trajectory")
        R = fm.results.quat_to_rot_batch(res.body("beam").orientation)
        local = np.einsum("tji,tj->ti", R, defl)  # body axes
        ax[1].plot(res.t, local[:, 1] * 1e3, label="transverse (body y)")
        ax[1].plot(res.t, local[:, 0] * 1e3, label="axial (body x)")
        ax[1].set_xlabel("t [s]")
        ax[1].set_ylabel("tip deflection [mm]")
        ax[1].legend()
        fig.tight_layout()
        fig.savefig(out / "flexible_pendulum.png", dpi=110)
        plt.close(fig)
    return {
        "model": m,
        "system": s,
        "results": res,
        "tip": p,
        "deflection": defl,
        "wall": wall,
        "cpu": cpu,
        "reduced": rb,
    }


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(t_end=0.05, n_modes=4)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
