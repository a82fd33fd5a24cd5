"""Flagship demo: a flexible slider-crank, from a mesh to an animated GIF.

A rigid crank turns at a prescribed 150 rad/s and drives an elastic steel connecting
rod that pushes a slider along a guide (B. Simeon's flexible slider-crank benchmark:
crank 0.15 m, rod 0.30 m with an 8 mm x 8 mm section, no gravity). The rod is a
finite-element mesh (``meshes/rod_simeon_hex27.vtu``, 30 quadratic hexahedra)
reduced to 10 Craig-Bampton modes (the end faces are rigid interfaces ``A`` and
``B``, where the joints attach), with geometric stiffening; the default body frame
(``frame="auto"``) is mean axes because the stiffened rod's reference interface A is
pinned by a spherical joint (``pprint`` says so); the closed loop
is found and cut automatically; the absolute formulation integrates it with
generalized-alpha in the compiled Newton engine. Validation of this very model (the
published Test Set solution, a geometrically exact rigid-segment reference) is in
``examples/flexible_slider_crank.py``.

Run ``python examples/flagship.py``: prints the model summary with its topology and
one result line, and writes ``examples/out/flagship.gif`` (one crank revolution from
the rigid-body start, the rod coloured by its elastic displacement, the deformation
drawn magnified) and a still ``examples/out/flagship.png`` (the README's picture is a
copy in ``docs/``). Works headless (off-screen rendering, see ``flexmbd.viz``).

CPU time at defaults: 3.3 s; with ``--quick`` (the tests' small settings, ``QUICK``):
2.9 s (process CPU of ``python examples/flagship.py``, compiled-kernel cache warm; 2-core
machine, load average 1-5, 29 November 2026).
"""

import time
from pathlib import Path

import numpy as np

import flexmbd as fm
from flexmbd.constraints import JointDriver
from flexmbd.example_args import quick_settings
from flexmbd.spatial import rotation_matrix

HERE = Path(__file__).resolve().parent
MESH = HERE.parent / "meshes" / "rod_simeon_hex27.vtu"
OMEGA = 150.0  # crank speed (rad/s)
L1, L2 = 0.15, 0.30  # crank and rod length (m)


def build(fixed_modes=4):
    """The slider-crank as an ``fm.Model`` (SI units; the mechanism moves in the xy plane).

    ``fixed_modes``: the rod's fixed-interface Craig-Bampton modes (its constraint modes of
    the two pins come on top; 4 gives the flagship's 10 rod modes).
    """
    ends = {
        "A": fm.fem.Plane((0.0, 0.0, 0.0), (1.0, 0.0, 0.0)),  # crank pin
        "B": fm.fem.Plane((L2, 0.0, 0.0), (1.0, 0.0, 0.0)),
    }  # slider pin
    steel = fm.Material(E=2.0e11, nu=0.3, rho=7870.0, name="steel")
    m = fm.Model("flexible_slider_crank")
    m.crank = fm.RigidBody.rod(0.36, L1, origin="end", radius=0.006)
    m.rod = fm.FlexibleBody.from_mesh(
        str(MESH),
        steel,
        # frame "auto": mean axes (stiffened, A pinned)
        fm.CraigBampton(fixed_modes, interfaces=ends),
        reduce_options={"interfaces": ends, "stress_modes": False},
    )
    m.slider = fm.RigidBody.box(0.075552, (0.03, 0.02, 0.02))
    w_rod = -OMEGA * L1 / L2  # rod angular speed at the start (rigid-body motion)
    m.j_crank = fm.Revolute(m.ground, m.crank, axis=(0, 0, 1), qd0=[OMEGA])
    m.j_a = fm.Spherical(
        m.crank,
        m.rod,
        parent_frame=(L1, 0.0, 0.0),
        child_frame=m.rod.interface("A"),
        q0=rotation_matrix((0, 0, 1), 0.0),
        qd0=[0.0, 0.0, w_rod - OMEGA],
    )
    m.j_b = fm.Universal(
        m.rod,
        m.slider,
        axis1=(0, 0, 1),
        axis2=(0, 1, 0),
        parent_frame=m.rod.interface("B"),
        qd0=[-w_rod, 0.0],
    )
    m.j_guide = fm.Prismatic(m.ground, m.slider, axis=(1, 0, 0), q0=[L1 + L2])
    m.drive = JointDriver.constant_speed(m.j_crank, OMEGA)
    return m


def midpoint_deflection(m, res):
    """Lateral deflection (nt,) of the rod's midpoint from the chord through the pins (m)."""
    a = m.rod.interface("A").trajectory(res)
    b = m.rod.interface("B").trajectory(res)
    mid = m.rod.point((L2 / 2, 0.0, 0.0)).trajectory(res)
    chord = (b - a) / np.linalg.norm(b - a, axis=1, keepdims=True)
    return np.einsum("ti,ti->t", mid - a, np.cross([0.0, 0.0, 1.0], chord))


def main(t_end=2 * np.pi / OMEGA, dt=5e-5, frames=42, scale=30.0, gif=None, png=None, render=True):
    """Build, print, simulate ``t_end`` (s; default one crank revolution) and render.

    Returns a dict: ``model``, ``results``, ``deflection`` (midpoint, m), ``cpu`` (s of
    the simulation), ``gif``/``png`` paths and ``frames`` written.
    """
    out_dir = HERE / "out"
    gif = Path(gif) if gif is not None else out_dir / "flagship.gif"
    png = Path(png) if png is not None else out_dir / "flagship.png"
    m = build()
    rb = m.rod.reduced  # mesh -> modes now: pprint lists them
    m.pprint()
    cpu = time.process_time()
    res = m.simulate(t_end, dt=dt, integrator="generalized-alpha", rho_inf=0.9, energy=False)
    cpu = time.process_time() - cpu
    d = midpoint_deflection(m, res)

    print(
        f"\n{rb.n_modes} rod modes ({rb.frequencies[0]:.0f}-{rb.frequencies[-1]:.0f} Hz); "
        f"{len(res.t) - 1} generalized-alpha steps to t = {res.t[-1]:.4f} s in {cpu:.2f} s "
        f"CPU; peak rod midpoint deflection {np.abs(d).max() * 1e3:.3f} mm"
    )
    out = {
        "model": m,
        "results": res,
        "deflection": d,
        "cpu": cpu,
        "gif": gif,
        "png": png,
        "frames": 0,
    }
    if render:
        gif.parent.mkdir(parents=True, exist_ok=True)
        png.parent.mkdir(parents=True, exist_ok=True)
        look = dict(scale=scale, view="xy", zoom=1.8, window_size=(640, 400))
        out["frames"] = fm.viz.animate(res, gif, max_frames=frames, fps=15, **look)
        k = int(np.argmax(np.abs(d)))  # the still: the largest deflection
        fm.viz.show(res, t=res.t[k], file=png, model=m, joints=False, **look)
        print(f"wrote {gif} ({out['frames']} frames, deformation drawn x {scale:g}) and {png}")
    return out


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(t_end=0.012, frames=8)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
