"""Gallery: a Craig-Bampton steel beam, its modes, and a swinging, bending animation.

1. Reduce the shipped hexahedral beam (``meshes/beam_hex.msh``, 1 m x 50 mm x 50 mm)
   with 4 fixed-interface modes and the constraint modes of interface ``B`` (the far
   end); interface ``A`` is the body frame.
2. Draw modes 1-3 with their frequencies (PNG) and animate mode 1 (GIF).
3. Swing the beam about the z axis through ``A`` while a tip load at ``B`` bends it
   quasi-statically (modal coordinates ``q = K_ff^-1 Phi^T F(t)``): prescribed motion,
   not a dynamic simulation; it shows the deformed full mesh coloured by von Mises
   stress moving with its frame, with a time label (GIF, and a ParaView series).

Run ``python examples/gallery_flexible_beam.py``; files go to ``examples/out/``.
``main(small=True)`` makes tiny images quickly (used by the tests).

CPU time at defaults: 3.7 s; with ``--quick`` (the tests' small settings, ``QUICK``):
2.2 s (process CPU of ``python examples/gallery_flexible_beam.py``, compiled-kernel cache
warm; 2-core machine, load average 1-5, 29 November 2026).
"""

from pathlib import Path

import numpy as np

from flexmbd.example_args import quick_settings

HERE = Path(__file__).resolve().parent
MESH = HERE.parent / "meshes" / "beam_hex.msh"


def reduce_beam():
    import flexmbd.fem as F

    steel = F.Material(E=2.1e11, nu=0.3, rho=7850.0, name="steel")
    return F.reduce(
        str(MESH),
        steel,
        F.CraigBampton(4, {"A": F.NodeSet("A"), "B": F.NodeSet("B")}),
        geometric=False,
        name="beam",
    )


def swing(body, nt=40, t_end=1.0, tip_force=2.0e3):
    """Results of the beam swinging +-0.5 rad about z while a tip load bends it."""
    from flexmbd.results import BodySeries, Results, attach_geometry, rot_to_quat_batch
    from flexmbd.spatial import rotation_matrix

    t = np.linspace(0.0, t_end, nt)
    theta = 0.5 * np.sin(2 * np.pi * t / t_end)
    R = np.array([rotation_matrix(np.array([0.0, 0.0, 1.0]), a) for a in theta])
    _, _, tip_nodes, _ = body.interface("B")
    F = np.zeros(3 * body.n_nodes)
    F[3 * tip_nodes + 1] = tip_force / len(tip_nodes)  # lateral (y) load at B
    q_unit = np.linalg.solve(body.K_ff, body.modes.T @ F)  # quasi-static response
    modal = np.outer(-np.sin(2 * np.pi * t / t_end), q_unit)  # load lags the swing
    res = Results(
        t,
        theta[:, None],
        np.gradient(theta, t)[:, None],
        coordinates=[("hinge", "angle")],
        speeds=[("hinge", "rate")],
        bodies={
            "beam": BodySeries(
                position=np.zeros((nt, 3)), orientation=rot_to_quat_batch(R), modal=modal
            )
        },
        meta={"model": "swinging_beam", "prescribed": True},
    )
    return attach_geometry(res, {"beam": body})


def main(small=False, out=HERE / "out"):
    import flexmbd as fm

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    size = (240, 180) if small else (800, 600)
    body = reduce_beam()
    body.info()
    written = []
    for k in (1, 2, 3):
        fm.viz.plot_mode(body, k, file=out / f"beam_mode{k}.png", window_size=size)
        written.append(out / f"beam_mode{k}.png")
    fm.viz.animate_mode(
        body, 1, out / "beam_mode1.gif", n_frames=8 if small else 24, window_size=size
    )
    res = swing(body, nt=8 if small else 40)
    fm.viz.animate(
        res, out / "beam_swing.gif", scale=20.0, field="von_mises", view="xy", window_size=size
    )
    res.to_vtk(out / "beam_swing" / "beam_swing.pvd", stride=4 if small else 1)
    written += [out / "beam_mode1.gif", out / "beam_swing.gif"]
    for p in written:
        print(f"wrote {p}")
    return res, written


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(small=True)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
