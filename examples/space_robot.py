"""Free-floating space robot with two 6-link arms (Liu, Hu, Zhang 2016, section 4).

The paper's example: a free-floating base (a hexagonal prism 1.2 m long with a
0.8 m hexagon side, body frame at its centre of mass) carrying two identical
six-link arms driven by joint torques, simulated for 10 s at a 0.002 s step with
the Constraint Force Algorithm, which returns the joint reactions together with
the accelerations. The paper's figures of the arm data are not in its text; the
values below are ours:

* base: 400 kg, uniform hexagonal prism along z;
* arm links (identical arms): lengths 0.5, 0.8, 0.8, 0.3, 0.2, 0.2 m, masses
  20, 15, 15, 5, 4, 3 kg, solid rods of radius 0.05 m along their local x axis
  (frame at the inboard end);
* joint axes in the link frames: z, y, y, x, y, x (a common 6R arrangement);
  arm 1 is mounted on the +x face (0.7 m from the centre), arm 2 on the -x face,
  rotated half a turn about z;
* torques: one period ``tau_i(t) = A_i sin(2 pi t / 5)`` on each joint for the
  first 5 s, then zero (zero net impulse: each joint swings out and slows down);
  amplitudes 20, 15, 2.5, 0.002, 0.04, 0.0005 N m, sized to the inertia each
  joint drives (about half a radian of motion); arm 2 has the opposite sign on
  its first joint.

No external load acts, so the linear and angular momentum (zero at rest) must
stay zero; the script prints how well the integration kept them.

Run: ``python examples/space_robot.py`` (writes PNG plots to ``examples/out/``).

CPU time at defaults: 2.4 s; with ``--quick`` (the tests' small settings, ``QUICK``):
3.7 s (process CPU of ``python examples/space_robot.py``, compiled-kernel cache warm;
2-core machine, load average 1-5, 29 November 2026). Without the plots
(``main(out=None)``) 1.7 s, of which 0.45-0.63 s of RK4 in compiled blocks (the drives are
functions of time, ``JointForce.of_time``; 5.0 s and 4.2 s with them as laws ``f(t, q,
qd)``, which kept RK4 in Python: measured 28 November 2026).
"""

from pathlib import Path

import numpy as np

import flexmbd as fm
from flexmbd.example_args import quick_settings

LENGTHS = (0.5, 0.8, 0.8, 0.3, 0.2, 0.2)
MASSES = (20.0, 15.0, 15.0, 5.0, 4.0, 3.0)
AXES = ((0, 0, 1), (0, 1, 0), (0, 1, 0), (1, 0, 0), (0, 1, 0), (1, 0, 0))
AMPLITUDES = (20.0, 15.0, 2.5, 0.002, 0.04, 0.0005)
T_DRIVE = 5.0


def torque(amplitude):
    """One sine period of the given amplitude (N m) over the first T_DRIVE seconds, a
    function of time only (``JointForce.of_time``: the compiled RK4 tabulates it)."""

    def f(t):
        return amplitude * np.sin(2.0 * np.pi * t / T_DRIVE) if t < T_DRIVE else 0.0

    return f


def arm(b, mount, sign=1.0):
    """Rule of one six-link arm hanging off the frame ``mount`` (a Block rule)."""
    b.link = fm.RigidBody(
        range(6),
        rule=lambda blk, i: fm.RigidBody.rod(
            MASSES[i], LENGTHS[i], axis="x", radius=0.05, origin="end"
        ),
    )

    def joint(blk, i):
        if i == 0:
            return fm.Revolute(mount.body, blk.link[0], axis=AXES[0], parent_frame=mount)
        return fm.Revolute(
            blk.link[i - 1], blk.link[i], axis=AXES[i], parent_frame=(LENGTHS[i - 1], 0.0, 0.0)
        )

    b.joint = fm.Revolute(range(6), rule=joint)
    b.drive = fm.JointForce(
        range(6),
        rule=lambda blk, i: fm.JointForce.of_time(
            blk.joint[i], torque((sign if i == 0 else 1.0) * AMPLITUDES[i])
        ),
    )


def build():
    """The space robot model: 13 bodies, 13 joints (one Free, twelve Revolute)."""
    m = fm.Model("space_robot")
    m.base = fm.RigidBody.hexagonal_prism(400.0, side=0.8, length=1.2, axis="z")
    m.float = fm.Free(m.ground, m.base)
    m.mount1 = m.base.frame((0.7, 0.0, 0.0))
    m.mount2 = m.base.frame((-0.7, 0.0, 0.0), rotation=(0.0, 0.0, np.pi))
    m.arm1 = fm.Block(rule=arm, mount=m.mount1)
    m.arm2 = fm.Block(rule=arm, mount=m.mount2, sign=-1.0)
    return m


def euler_zyx(e):
    """Yaw-pitch-roll (rad) of Euler parameters (n, 4)."""
    e0, e1, e2, e3 = np.moveaxis(np.asarray(e), -1, 0)
    roll = np.arctan2(2 * (e0 * e1 + e2 * e3), 1 - 2 * (e1**2 + e2**2))
    pitch = np.arcsin(np.clip(2 * (e0 * e2 - e3 * e1), -1, 1))
    yaw = np.arctan2(2 * (e0 * e3 + e1 * e2), 1 - 2 * (e2**2 + e3**2))
    return np.stack([roll, pitch, yaw], axis=-1)


def plot(res, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t = res.t
    files = []
    att = np.degrees(euler_zyx(res.joint("float").q[:, 3:]))
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, lab in enumerate(("roll", "pitch", "yaw")):
        ax.plot(t, att[:, i], label=lab)
    ax.set(xlabel="t (s)", ylabel="angle (deg)", title="Base attitude (paper Fig. 8)")
    ax.legend()
    ax.grid(True)
    files.append(out / "space_robot_base_attitude.png")
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    for i in range(6):
        ax.plot(t, np.degrees(res.joint(f"arm1.joint[{i}]").q[:, 0]), label=f"joint {i + 1}")
    ax.set(xlabel="t (s)", ylabel="angle (deg)", title="Arm 1 joint angles (paper Fig. 9)")
    ax.legend(ncol=3)
    ax.grid(True)
    files.append(out / "space_robot_arm1_angles.png")
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)

    r = res.reaction("arm1.joint[0]")
    fig, axs = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for i, lab in enumerate(("x", "y", "z")):
        axs[0].plot(t, r[:, 3 + i], label=f"f{lab}")
        axs[1].plot(t, r[:, i], label=f"n{lab}")
    axs[0].set(ylabel="force (N)", title="Reaction on arm-1 link 1, joint frame (paper Fig. 10)")
    axs[1].set(xlabel="t (s)", ylabel="moment (N m)")
    for a in axs:
        a.legend(ncol=3)
        a.grid(True)
    files.append(out / "space_robot_arm1_link1_reaction.png")
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)
    return files


def main(t_end=10.0, dt=0.002, out="examples/out", show=True):
    """Build, print, simulate with RK4 and the serialized CFA, plot and check momentum."""
    m = build()
    m.pprint()
    system = m.compile("recursive")
    res = system.simulate(t_end, dt=dt, integrator="rk4")
    lin = res.extra["momentum_linear"]
    ang = res.extra["momentum_angular"]
    # scales: the momentum one arm alone carries (it is cancelled by the base)
    states = [system.body_states(q, qd) for q, qd in zip(res.q[::50], res.qd[::50])]
    arm = [b for b in m.bodies() if b.name.startswith("arm1")]
    p_arm = max(
        np.linalg.norm(
            sum(
                b.mass * (st[b.name][3] + np.cross(st[b.name][2], st[b.name][0] @ b.com_vector))
                for b in arm
            )
        )
        for st in states
    )
    print(
        f"simulated {t_end} s at dt = {dt} s in {res.meta['wall_time']:.2f} s "
        f"({len(res.t) - 1} RK4 steps, 4 CFA evaluations each)"
    )
    print(
        f"momentum check (zero at rest, no external load): max |p| = "
        f"{np.abs(lin).max():.3e} kg m/s (arm 1 alone carries up to {p_arm:.3g} kg m/s), "
        f"max |h_O| = {np.abs(ang).max():.3e} kg m^2/s"
    )
    files = plot(res, out) if out is not None else []
    for f in files:
        print(f"wrote {f}")
    return res


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(t_end=0.2)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
