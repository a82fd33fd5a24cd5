"""A rotor from Abaqus spinning on two bearing springs (Exudyn's perfObjectFFRFreducedOrder).

The model of Exudyn's performance test, built from the real Abaqus/CAE 2019 export in
``fm.data.abaqus_rotor()`` (shipped with flexmbd; input deck and the ``*MATRIX GENERATE``
mass and stiffness files):

- the rotor (shaft 0.1 x 0.1 x 0.5 m, disc of radius 0.196 m at z = 0.1 .. 0.15 m;
  48 C3D8, steel, 78.0 kg) read with `fm.fem.read_abaqus`, its Abaqus matrices with
  `fm.fem.read_mtx`; the stiffness scaled by 1e-2 (larger deformations, as in the
  Exudyn test) and an unbalance point mass of 0.1 kg added to the mass matrix at the
  disc rim node (0, 0.196, 0.15);
- 8 free-free normal modes of (M, K) (`fm.fem.reduce(mesh, (M, K), fm.NormalModes(8))`:
  104.6, 104.6, 187.8, 212.3, ... Hz after the scaling);
- two bearings: the mean displacement of the end faces z = 0 (left) and z = 0.5 m
  (right; node sets ``BCleft`` / ``BCright`` are their centre nodes) tied to the
  ground by spring-dampers k = 2e8 N/m, d = 0.01 k, in x, y and z (left) and in x, y
  (right, axially free) — Exudyn's CartesianSpringDamper, here one
  `fm.SpringDamperActuator` per direction from a ground point 1 m away along that
  direction (its transverse stiffness, tension/length, is zero at rest and of relative
  order (deflection / 1 m)^2 otherwise);
- initial spin 50 Hz about z, no gravity; generalized-alpha with rho_inf = 0.5,
  h = 1e-4 s, 20,000 steps (2 s).

Measured (2-core machine shared with other jobs): 8 modes 104.38, 104.62 (the unbalance
splits the pair), 187.8, 212.3, 224.2, 237.8, 284.0, 284.2 Hz; the absolute formulation
takes 2 Newton iterations per step in the compiled engine (the flexible-end
spring-dampers are compiled force elements, :mod:`flexmbd.absolute.force_kernels`):
CPU time at defaults: 1.0 s for the 20,000 steps, against 4.2 s for Exudyn's own model's
``SolveDynamic`` in the same run (the generic path before took 12-17 s per 1,000 steps);
the bearing faces' radial motion agrees with Exudyn's within 0.34 % of its peak. In the first
0.1 s the bearing forces peak at 4.3 kN (left) and
2.1 kN (right) — the start transient around the rotating unbalance force m e w^2 =
1.93 kN — and the rim deflects up to 0.50 mm (centrifugal growth of the softened disc
plus bending).

Plots (``examples/out/abaqus_rotor.png``): bearing forces and the elastic deflection
of the disc (rim node, unbalance side) and of the shaft middle (z = 0.25 m, Exudyn's
sensor) in the rotating body frame; prints the CPU time.
Run: ``python examples/abaqus_rotor.py [--quick] [--data DIR]``.
"""

import time
from pathlib import Path

import numpy as np

import flexmbd as fm
from flexmbd.example_args import quick_parser

HERE = Path(__file__).resolve().parent
K_BEARING = 2e8  # N/m
D_BEARING = 0.01 * K_BEARING  # N s/m
SPIN = 50.0 * 2 * np.pi  # rad/s
UNBALANCE = 0.1  # kg
RIM = (0.0, 0.19598444, 0.15)  # m, disc rim node of the unbalance
MIDDLE = (0.0, 0.0, 0.25)  # m, shaft middle
ARM = 1.0  # m, distance of each spring's ground point


def data_dir(path=None):
    """The abaqus_rotor directory: ``path`` if given, else the copy shipped with flexmbd
    (``fm.data.abaqus_rotor()``)."""
    if path:
        c = Path(path)
        if not (c / "rotorDiscTest.inp").exists():
            raise fm.MeshError(
                f"Abaqus rotor data not found in {str(c)!r}: --data must be "
                "the directory with rotorDiscTest.inp and the .mtx files"
            )
        return c.resolve()
    return Path(fm.data.abaqus_rotor()["inp"]).parent


def reduced_rotor(directory=None, n_modes=8, stiffness_scale=1e-2, unbalance=UNBALANCE):
    """The rotor as a `ReducedBody`: Abaqus deck and matrices, scaled K, unbalance mass."""
    d = data_dir(directory)
    deck = fm.fem.read_abaqus(d / "rotorDiscTest.inp", units="SI")
    K = fm.fem.read_mtx(d / "rotorDiscTestSTIF1.mtx", deck, kind="stiffness")
    M = fm.fem.read_mtx(d / "rotorDiscTestMASS1.mtx", deck, kind="mass").tolil()
    x = deck.mesh.nodes
    i = int(np.argmin(np.linalg.norm(x - np.asarray(RIM), axis=1)))
    for k in range(3):  # a point mass moves with the node in every direction
        M[3 * i + k, 3 * i + k] += unbalance
    bearings = {
        "left": fm.fem.Plane((0, 0, 0), (0, 0, 1)),
        "right": fm.fem.Plane((0, 0, 0.5), (0, 0, 1)),
    }
    return fm.fem.reduce(
        deck.mesh,
        (M.tocsr(), stiffness_scale * K),
        fm.NormalModes(n_modes),
        interfaces=bearings,
        interface_kind="distributing",
        name="rotor",
    )


def build(rotor):
    """The spinning rotor on two bearings (absolute formulation)."""
    m = fm.Model("abaqus_rotor")
    m.rotor = fm.FlexibleBody(rotor, geometric_stiffening=False)  # Exudyn's model: linear
    m.float = fm.Free(m.ground, m.rotor, qd0=[0, 0, SPIN, 0, 0, 0])
    axes = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}
    for side, dirs in (("left", "xyz"), ("right", "xy")):
        itf = m.rotor.interface(side)
        origin = np.asarray(itf.position, float)
        for a in dirs:
            ground_point = origin + ARM * np.asarray(axes[a], float)
            setattr(
                m,
                f"{side}_{a}",
                fm.SpringDamperActuator(
                    m.ground, ground_point, m.rotor, itf, k=K_BEARING, c=D_BEARING, l0=ARM
                ),
            )
    return m


def bearing_forces(model, res, side):
    """Force (nt, 3) of the bearing springs on the rotor (N, world axes)."""
    p = model.rotor.interface(side).trajectory(res)
    v = np.gradient(p, res.t, axis=0)
    x0 = np.asarray(model.rotor.interface(side).position, float)
    f = -K_BEARING * (p - x0) - D_BEARING * v
    if side == "right":
        f[:, 2] = 0.0
    return f


def deflection(rotor, res, xyz):
    """Elastic displacement (nt, 3) of the node nearest ``xyz`` in body axes (m)."""
    i = int(np.argmin(np.linalg.norm(rotor.nodes - np.asarray(xyz), axis=1)))
    q = res.body("rotor").modal
    return q @ rotor.modes[3 * i : 3 * i + 3].T


def main(steps=20000, h=1e-4, directory=None, plot=True):
    """Run the model; returns (model, results, reduced rotor, CPU seconds)."""
    rotor = reduced_rotor(directory)
    model = build(rotor)
    cpu = time.process_time()
    # Newton tolerance relative to the applied forces (kN): the 2e8 N/m bearing springs,
    # 1 m long, carry a force round-off of k eps L ~ 4e-8 N, above the default absolute
    # tol of 1e-8 N
    res = model.simulate(
        t_end=steps * h, dt=h, integrator="generalized-alpha", rho_inf=0.5, rtol=1e-10
    )
    cpu = time.process_time() - cpu
    if plot:
        _plot(model, rotor, res)
    return model, res, rotor, cpu


def _plot(model, rotor, res):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = HERE / "out"
    out.mkdir(exist_ok=True)
    fig, ax = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for side, ls in (("left", "-"), ("right", "--")):
        f = bearing_forces(model, res, side)
        ax[0].plot(res.t, f[:, 0], ls, label=f"{side} x")
        ax[0].plot(res.t, f[:, 1], ls, label=f"{side} y")
    ax[0].set_ylabel("bearing force on rotor (N)")
    ax[0].legend(ncol=2)
    for name, xyz in (("disc rim (unbalance)", RIM), ("shaft middle", MIDDLE)):
        u = deflection(rotor, res, xyz)
        ax[1].plot(res.t, 1e6 * np.linalg.norm(u, axis=1), label=name)
    ax[1].set_ylabel("elastic deflection |u| (um, body axes)")
    ax[1].set_xlabel("t (s)")
    ax[1].legend()
    fig.suptitle("Abaqus rotor, 50 Hz, unbalance 0.1 kg, 8 free-free modes")
    fig.tight_layout()
    fig.savefig(out / "abaqus_rotor.png", dpi=110)
    plt.close(fig)
    print(f"wrote {out / 'abaqus_rotor.png'}")


QUICK = dict(steps=200)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    ap = quick_parser(__doc__, QUICK)
    ap.add_argument("--data", help="directory with rotorDiscTest.inp and the .mtx files")
    args = ap.parse_args(argv)
    out = dict(QUICK) if args.quick else {}
    if args.data:
        out["directory"] = args.data
    return out


if __name__ == "__main__":
    model, res, rotor, cpu = main(**settings())
    print("free-free frequencies (Hz):", np.round(rotor.frequencies, 2))
    fl, fr = bearing_forces(model, res, "left"), bearing_forces(model, res, "right")
    print(
        f"{len(res.t) - 1} steps: CPU {cpu:.2f} s; peak bearing force left "
        f"{np.abs(fl[:, :2]).max():.4g} N, right {np.abs(fr[:, :2]).max():.4g} N"
    )
