"""Bricard's mechanism (IFToMM multibody benchmark A04): redundant and still mobile.

Five rods (1 m, 1 kg, square section 0.1 m) and the ground close a loop of six
revolute joints. Grübler's count gives 6*5 - 5*6 = 0 degrees of freedom, but the
joint axes are arranged so that the mechanism moves with one: one of the
constraint equations is always redundant (the benchmark's point). Here it is the
orthogonal Bricard linkage (equal link lengths, consecutive axes perpendicular,
zero offsets) assembled along six edges of a unit cube::

    V0 (0,0,0) --rod1--> V1 (1,0,0) --rod2--> V2 (1,1,0) --rod3--> V3 (1,1,1)
       --rod4--> V4 (0,1,1) --rod5--> V5 (0,0,1) --ground--> V0

with every joint axis perpendicular to the two edges meeting at its vertex
(y, z, x, y, z, x at V0..V5). Released from rest under gravity (-y), it swings
for 10 s; no dissipation, so the total energy must stay constant.

The loop is cut at the last joint (rod5 - ground, 5 equations on the tree's 5
joint angles): the QR projection finds rank 4 and discards one equation, by
itself, at every step -- the real mobility is 5 - 4 = 1.

Run: ``python examples/bricard.py`` (10 s; plot in examples/out/).

CPU time at defaults: 2.7 s; with ``--quick`` (the tests' small settings, ``QUICK``):
2.7 s (process CPU of ``python examples/bricard.py``, compiled-kernel cache warm; 2-core
machine, load average 1-5, 29 November 2026).
"""

import time
from pathlib import Path

import numpy as np

import flexmbd as fm
from flexmbd.example_args import quick_settings

VERTICES = np.array([(0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1), (0, 1, 1), (0, 0, 1)], float)
AXES = np.array([(0, 1, 0), (0, 0, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 0)], float)


def _frame_along(u):
    """Rotation whose x axis is the unit vector ``u`` (a rod's body frame)."""
    u = np.asarray(u, float)
    k = int(np.argmin(np.abs(u)))
    e = np.zeros(3)
    e[k] = 1.0
    y = np.cross(e, u)
    y /= np.linalg.norm(y)
    return np.column_stack([u, y, np.cross(u, y)])


def build(L=1.0, m=1.0, b=0.1):
    """The mechanism as a Model: rods ``rod1..rod5``, joints ``j1..j6`` (j6 is cut)."""
    M = fm.Model("bricard")
    Jt = m * (L * L + b * b) / 12.0
    Ja = m * (2 * b * b) / 12.0
    V = VERTICES * L
    R = []
    for i in range(5):
        u = V[i + 1] - V[i]
        R.append(_frame_along(u / np.linalg.norm(u)))
        setattr(M, f"rod{i + 1}", fm.RigidBody(mass=m, inertia=(Ja, Jt, Jt), com=(L / 2, 0, 0)))
    rods = [getattr(M, f"rod{i + 1}") for i in range(5)]

    # joint k at vertex V_k: its frame is aligned with the world axes (axis given in
    # world = joint-frame coordinates); on a rod the frame is placed in body axes
    def on(i, k):  # frame of vertex k on rod i (rod i spans V_i..V_i+1)
        Ri = R[i]
        return (Ri.T @ (V[k] - V[i]), Ri.T)

    M.j1 = fm.Revolute(
        M.ground, rods[0], axis=AXES[0], parent_frame=(V[0], np.eye(3)), child_frame=on(0, 0)
    )
    for k in range(1, 5):
        setattr(
            M,
            f"j{k + 1}",
            fm.Revolute(
                rods[k - 1], rods[k], axis=AXES[k], parent_frame=on(k - 1, k), child_frame=on(k, k)
            ),
        )
    M.j6 = fm.Revolute(
        rods[4],
        M.ground,
        axis=AXES[5],
        parent_frame=on(4, 5),
        child_frame=(V[5], np.eye(3)),
        cut=True,
    )
    M.g = fm.Gravity((0.0, -9.81, 0.0))
    return M


def simulate(t_end=10.0, dt=2e-3, **options):
    system = build().compile("recursive", **options)
    return system.simulate(t_end, dt=dt, integrator="rk4")


def main(t_end=10.0, dt=2e-3, outdir=None, plot=True):
    tic = time.perf_counter()
    res = simulate(t_end, dt)
    wall = time.perf_counter() - tic
    E = res.energy["total"]
    drift = np.abs(E - E[0]).max()
    p3 = None
    print(f"Bricard mechanism, {t_end:g} s, RK4 dt={dt:g}, {wall:.1f} s wall")
    print(
        f"  rank of the 5 cut equations: {sorted(set(res.stats['rank'].tolist()))} "
        f"(discarded per step: {sorted(set(res.stats['discarded'].sum(axis=1).tolist()))}); "
        f"mobility 5 - rank = 1 while Grübler gives 0"
    )
    print(
        f"  energy: initial {E[0]:.6f} J, max |E - E0| = {drift:.2e} J; kinetic energy "
        f"reached {res.energy['kinetic'].max():.3f} J"
    )
    print(
        f"  constraint violation: position {res.stats['position_violation'].max():.1e}, "
        f"velocity {res.stats['velocity_violation'].max():.1e}"
    )
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from flexmbd.results import attach_tree_poses

        attach_tree_poses(res, build())
        # point P3 = V3 end of rod 3: rod3 origin + R (L, 0, 0)
        pos = res.body("rod3").position
        Rm = res.body("rod3").rotation
        p3 = pos + Rm[:, :, 0]
        path = Path(outdir or Path(__file__).parent / "out")
        path.mkdir(parents=True, exist_ok=True)
        fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
        for k, lab in enumerate("xyz"):
            axes[0].plot(res.t, p3[:, k], label=f"P3 {lab}")
        axes[0].set_ylabel("P3 [m]")
        axes[0].legend(fontsize="small")
        axes[1].plot(res.t, E - E[0])
        axes[1].set_ylabel("E - E0 [J]")
        axes[1].set_xlabel("t [s]")
        fig.suptitle("Bricard's mechanism (IFToMM A04)")
        fig.tight_layout()
        fig.savefig(path / "bricard.png", dpi=110)
        plt.close(fig)
    return res, drift


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(t_end=0.6, dt=2e-3)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
