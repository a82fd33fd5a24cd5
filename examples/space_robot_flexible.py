"""Space robot with flexible arm links: the CFA example (Liu, Hu, Zhang 2016, section 4)
with the second and third links of arm 1 made flexible, and their reaction forces.

The free-floating two-arm robot of ``space_robot.py`` (same base, joint axes, torque
profile), except that links 2 and 3 of arm 1 (0.8 m each) are finite-element beams:

* a 0.8 x 0.05 x 0.05 m solid square bar (16 x 2 x 2 linear hexahedra generated with
  scikit-fem), rho = 7850 kg/m^3 (15.7 kg, close to the 15 kg of the rigid links, so the
  torque profile moves the arm as in the rigid example) and a deliberately soft
  E = 21 GPa (a tenth of steel), nu = 0.3 -- values ours: the paper gives no arm data;
  2 % modal damping;
* reduced with Craig-Bampton: the inboard end face A is the reference interface (body
  frame, joint to the previous link), 4 fixed-interface modes (the first two bending
  pairs, about 20 Hz and 130 Hz); the outboard end face B is a read-out interface
  that carries the next joint and moves with the modes.

The recursive formulation keeps the modal coordinates as body-internal degrees of
freedom and solves the tree with the Constraint Force Algorithm extended to
flexible bodies (:mod:`flexmbd.recursive.flexible`): O(N) per evaluation, and every
joint reaction -- here the wrench on the first link of arm 1 (paper Fig. 10) -- at
each sample. The rigid reference has the same links with the flexible bars' rigid
inertia, so the difference is the flexibility alone.

Run: ``python examples/space_robot_flexible.py`` (writes PNG plots to ``examples/out/``).

CPU time at defaults: 9.6 s; with ``--quick`` (the tests' small settings, ``QUICK``):
2.8 s (process CPU of ``python examples/space_robot_flexible.py``, compiled-kernel cache
warm; 2-core machine, load average 1-5, 29 November 2026).
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import space_robot as sr  # noqa: E402

import flexmbd as fm  # noqa: E402
from flexmbd.example_args import quick_settings  # noqa: E402

FLEX_LINKS = (1, 2)  # arm-1 links made flexible (0-based: links 2 and 3)
SECTION = 0.05  # m, square bar
MATERIAL = dict(E=2.1e10, nu=0.3, rho=7850.0)
N_MODES = 4
ZETA = 0.02


def reduced_link(length=0.8, nx=16, n_modes=N_MODES):
    """The flexible bar: a scikit-fem hexahedral mesh reduced with Craig-Bampton."""
    import skfem

    h = SECTION / 2
    mesh = skfem.MeshHex1.init_tensor(
        np.linspace(0.0, length, nx + 1), np.linspace(-h, h, 3), np.linspace(-h, h, 3)
    )
    strategy = fm.CraigBampton(n_modes, interfaces={"A": fm.fem.Plane((0, 0, 0), (1, 0, 0))})
    return fm.fem.reduce(
        mesh,
        fm.Material(**MATERIAL),
        strategy,
        name="flex_link",
        interfaces={"B": fm.fem.Plane((length, 0, 0), (1, 0, 0))},
        zeta=np.full(n_modes, ZETA),
        geometric=False,
    )


def arm(b, mount, sign=1.0, flexible=(), rb=None):
    """One six-link arm; the links in ``flexible`` are FlexibleBody bars (or, with
    ``rb`` given and ``flexible`` empty, rigid bodies with the bar's inertia)."""
    links = []
    for i in range(6):
        if i in flexible:
            links.append(fm.FlexibleBody(rb, geometric_stiffening=False))
        elif rb is not None and i in FLEX_LINKS and sign > 0:
            links.append(fm.RigidBody(rb.mass, rb.inertia_com, com=rb.com))
        else:
            links.append(
                fm.RigidBody.rod(sr.MASSES[i], sr.LENGTHS[i], axis="x", radius=0.05, origin="end")
            )
    for i, body in enumerate(links):  # rigid and flexible: one component each
        setattr(b, f"link{i}", body)

    def frames(i):
        """(parent frame on link i - 1, child frame on link i) of joint i."""
        child = links[i].interface("A") if isinstance(links[i], fm.FlexibleBody) else None
        if i == 0:
            return mount, child
        prev = links[i - 1]
        if isinstance(prev, fm.FlexibleBody):
            return prev.interface("B"), child
        return (sr.LENGTHS[i - 1], 0.0, 0.0), child

    def joint(blk, i):
        pf, cf = frames(i)
        parent = mount.body if i == 0 else links[i - 1]
        kw = {} if cf is None else {"child_frame": cf}
        return fm.Revolute(parent, links[i], axis=sr.AXES[i], parent_frame=pf, **kw)

    b.joint = fm.Revolute(range(6), rule=joint)
    b.drive = fm.JointForce(
        range(6),
        rule=lambda blk, i: fm.JointForce.of_time(
            blk.joint[i], sr.torque((sign if i == 0 else 1.0) * sr.AMPLITUDES[i])
        ),
    )


def build(flexible=True, rb=None):
    """The space robot; ``flexible``: links 2-3 of arm 1 are flexible bars, otherwise rigid
    bodies with the same inertia."""
    rb = reduced_link() if rb is None else rb
    m = fm.Model("space_robot_flexible" if flexible else "space_robot_rigid_bars")
    m.base = fm.RigidBody.hexagonal_prism(400.0, side=0.8, length=1.2, axis="z")
    m.float = fm.Free(m.ground, m.base)
    m.mount1 = m.base.frame((0.7, 0.0, 0.0))
    m.mount2 = m.base.frame((-0.7, 0.0, 0.0), rotation=(0.0, 0.0, np.pi))
    m.arm1 = fm.Block(
        rule=lambda b, mount: arm(b, mount, 1.0, FLEX_LINKS if flexible else (), rb), mount=m.mount1
    )
    m.arm2 = fm.Block(rule=arm, mount=m.mount2, sign=-1.0)
    return m


def tip_deflection(res, name, rb):
    """Displacement (m) of the bar's outboard interface B relative to its rigid position,
    body axes (nt, 3)."""
    body = fm.FlexibleBody(rb)
    U = body.interface_modes("B")[3:]
    return res.body(name).modal @ U.T


def plot(flex, rigid, rb, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    t = flex.t
    rf, rr = flex.reaction("arm1.joint[0]"), rigid.reaction("arm1.joint[0]")
    fig, axs = plt.subplots(2, 2, figsize=(11, 6.5), sharex=True)
    for i, lab in enumerate(("x", "y", "z")):
        c = f"C{i}"
        axs[0, 0].plot(t, rr[:, 3 + i], c, lw=1.0, ls="--", label=f"f{lab} rigid")
        axs[0, 0].plot(t, rf[:, 3 + i], c, lw=0.8, label=f"f{lab} flexible")
        axs[1, 0].plot(t, rr[:, i], c, lw=1.0, ls="--", label=f"n{lab} rigid")
        axs[1, 0].plot(t, rf[:, i], c, lw=0.8, label=f"n{lab} flexible")
        axs[0, 1].plot(t, rf[:, 3 + i] - rr[:, 3 + i], c, lw=0.8, label=f"f{lab}")
        axs[1, 1].plot(t, rf[:, i] - rr[:, i], c, lw=0.8, label=f"n{lab}")
    axs[0, 0].set(ylabel="force (N)", title="Reaction on arm-1 link 1 (joint frame)")
    axs[1, 0].set(xlabel="t (s)", ylabel="moment (N m)")
    axs[0, 1].set(ylabel="force (N)", title="flexible - rigid")
    axs[1, 1].set(xlabel="t (s)", ylabel="moment (N m)")
    for a in axs.ravel():
        a.legend(ncol=2, fontsize=7)
        a.grid(True)
    fig.tight_layout()
    files.append(out / "space_robot_flexible_reaction.png")
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)

    fig, axs = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for j, i in enumerate(FLEX_LINKS):
        d = tip_deflection(flex, f"arm1.link{i}", rb)
        for c, lab in enumerate(("x", "y", "z")):
            axs[j].plot(t, 1e3 * d[:, c], f"C{c}", lw=0.8, label=f"u{lab}")
        axs[j].set(ylabel="mm", title=f"Tip deflection of flexible link {i + 1} (body axes)")
        axs[j].legend(ncol=3)
        axs[j].grid(True)
    axs[-1].set(xlabel="t (s)")
    fig.tight_layout()
    files.append(out / "space_robot_flexible_tip_deflection.png")
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    for i in range(6):
        a_f = np.degrees(flex.joint(f"arm1.joint[{i}]").q[:, 0])
        a_r = np.degrees(rigid.joint(f"arm1.joint[{i}]").q[:, 0])
        ax.plot(t, a_r, f"C{i}", ls="--", lw=1.0)
        ax.plot(t, a_f, f"C{i}", lw=0.8, label=f"joint {i + 1}")
    ax.set(
        xlabel="t (s)",
        ylabel="angle (deg)",
        title="Arm-1 joint angles (solid: flexible links, dashed: rigid)",
    )
    ax.legend(ncol=3)
    ax.grid(True)
    fig.tight_layout()
    files.append(out / "space_robot_flexible_arm1_angles.png")
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)
    return files


def main(t_end=10.0, dt=2e-3, substeps=4, out="examples/out", show=True):
    """Build both robots, simulate with RK4 (step dt / substeps) and the serialized CFA,
    compare the reactions on arm-1 link 1, check momentum, plot."""
    rb = reduced_link()
    flex_model = build(True, rb)
    rigid_model = build(False, rb)
    if show:
        flex_model.pprint()
    sf = flex_model.compile("recursive")
    sr_ = rigid_model.compile("recursive")
    wmax = sf.max_modal_frequency()
    print(
        f"flexible links: {rb.n_modes} Craig-Bampton modes, {rb.mass:.3f} kg each, modal "
        f"frequencies {np.round(rb.frequencies, 1).tolist()} Hz; RK4 step {dt / substeps:.2g} s"
        f" (stability limit {2.8 / wmax:.2g} s)"
    )
    res_f = sf.simulate(t_end, dt=dt, integrator="rk4", substeps=substeps)
    res_r = sr_.simulate(t_end, dt=dt, integrator="rk4", substeps=substeps)
    rf, rr = res_f.reaction("arm1.joint[0]"), res_r.reaction("arm1.joint[0]")
    scale = np.abs(rr).max(axis=0)
    diff = np.abs(rf - rr).max(axis=0)
    print(
        f"simulated {t_end} s: flexible {res_f.meta['wall_time']:.2f} s, rigid "
        f"{res_r.meta['wall_time']:.2f} s wall time ({len(res_f.t) - 1} samples, "
        f"{substeps} RK4 steps each)"
    )
    print(
        "reaction on arm-1 link 1, max |flexible - rigid| / max |rigid| per component "
        "[nx ny nz fx fy fz]: " + " ".join(f"{x:.3g}" for x in diff / scale)
    )
    for i in FLEX_LINKS:
        d = tip_deflection(res_f, f"arm1.link{i}", rb)
        print(f"flexible link {i + 1}: max tip deflection {1e3 * np.abs(d).max():.3f} mm")
    lin, ang = res_f.extra["momentum_linear"], res_f.extra["momentum_angular"]
    print(
        f"momentum check (zero at rest, no external load): max |p| = {np.abs(lin).max():.3e} "
        f"kg m/s, max |h_O| = {np.abs(ang).max():.3e} kg m^2/s"
    )
    files = plot(res_f, res_r, rb, out) if out is not None else []
    for f in files:
        print(f"wrote {f}")
    return res_f, res_r


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(t_end=0.1)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
