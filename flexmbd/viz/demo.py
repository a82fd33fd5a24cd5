"""Small synthetic data for trying the viewers and exporters without a solver.

:func:`beam_geometry` is a hexahedral cantilever beam mesh with two analytic
"modes" (a quadratic bending shape and a uniform stretch) and the matching
Euler-Bernoulli stress modes; :func:`swinging_beam_results` moves it as a
pendulum whose bending grows with time, next to a rigid box. These are made-up
kinematics (prescribed, not simulated): they exercise drawing, animation,
files and round trips, nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..geometry import BodyGeometry, box_geometry

if TYPE_CHECKING:
    from ..results import Results

__all__ = ["beam_geometry", "swinging_beam_results"]


def beam_geometry(
    length: float = 1.0,
    height: float = 0.1,
    width: float = 0.1,
    n: tuple[int, int, int] = (12, 2, 2),
    E: float = 2.1e11,
) -> BodyGeometry:
    """Hexahedral beam along x (from 0 to ``length``) with two modes and stress modes.

    Mode 0: bending ``u_y = 0.1 L (x / L)^2`` (curvature ``0.2 / L``), stress
    ``sigma_xx = -E y 0.2 / L``. Mode 1: stretch ``u_x = 0.05 x``, stress
    ``sigma_xx = 0.05 E``. Frequencies are placeholders (10 and 100 Hz).
    """
    nx, ny, nz = n
    xs = np.linspace(0.0, length, nx + 1)
    ys = np.linspace(-height / 2, height / 2, ny + 1)
    zs = np.linspace(-width / 2, width / 2, nz + 1)
    X, Y, Z = np.meshgrid(xs, ys, zs, indexing="ij")
    nodes = np.column_stack([X.ravel(), Y.ravel(), Z.ravel()])
    idx = np.arange(len(nodes)).reshape(nx + 1, ny + 1, nz + 1)
    cells = []
    for i in range(nx):
        for j in range(ny):
            for k in range(nz):
                cells.append(
                    [
                        idx[i, j, k],
                        idx[i + 1, j, k],
                        idx[i + 1, j + 1, k],
                        idx[i, j + 1, k],
                        idx[i, j, k + 1],
                        idx[i + 1, j, k + 1],
                        idx[i + 1, j + 1, k + 1],
                        idx[i, j + 1, k + 1],
                    ]
                )
    x, y = nodes[:, 0], nodes[:, 1]
    modes = np.zeros((3 * len(nodes), 2))
    modes[1::3, 0] = 0.1 * length * (x / length) ** 2
    modes[0::3, 1] = 0.05 * x
    stress = np.zeros((6 * len(nodes), 2))
    stress[0::6, 0] = -E * y * 0.2 / length
    stress[0::6, 1] = 0.05 * E
    return BodyGeometry(
        nodes, {"hexahedron": np.array(cells)}, modes, stress, frequencies=np.array([10.0, 100.0])
    )


def swinging_beam_results(nt: int = 16, t_end: float = 1.0, amplitude: float = 0.6) -> Results:
    """Results of the beam swinging about z at the origin, bending more and more.

    Body ``beam``: angle ``amplitude sin(2 pi t / t_end)``, modal coordinates
    ``[t / t_end, 0]``; body ``box``: a rigid cube sliding along x below it.
    Joint coordinates ``hinge`` and ``slide``; poses, modal coordinates and
    geometry are stored, so the results can be drawn and exported as they are.
    """
    from ..results import BodySeries, Results, rot_to_quat_batch

    t = np.linspace(0.0, t_end, nt)
    th = amplitude * np.sin(2 * np.pi * t / t_end)
    thd = amplitude * 2 * np.pi / t_end * np.cos(2 * np.pi * t / t_end)
    s = 0.5 + 0.3 * t / t_end
    c, sn = np.cos(th), np.sin(th)
    R = np.zeros((nt, 3, 3))
    R[:, 0, 0], R[:, 0, 1], R[:, 1, 0], R[:, 1, 1], R[:, 2, 2] = c, -sn, sn, c, 1.0
    q = np.column_stack([th, s])
    qd = np.column_stack([thd, np.full(nt, 0.3 / t_end)])
    box = box_geometry(np.full(3, 0.1))
    return Results(
        t,
        q,
        qd,
        np.zeros_like(qd),
        coordinates=[("hinge", "angle"), ("slide", "x")],
        speeds=[("hinge", "rate"), ("slide", "v")],
        joint_names=["hinge", "slide"],
        reactions=np.zeros((nt, 2, 6)),
        energy={"kinetic": 0.5 * thd**2},
        stats={"newton_iterations": np.full(nt, 2, dtype=np.int64)},
        bodies={
            "beam": BodySeries(
                position=np.zeros((nt, 3)),
                orientation=rot_to_quat_batch(R),
                modal=np.column_stack([t / t_end, np.zeros(nt)]),
            ),
            "box": BodySeries(
                position=np.column_stack([s, np.full(nt, -0.5), np.zeros(nt)]),
                orientation=np.tile([1.0, 0.0, 0.0, 0.0], (nt, 1)),
            ),
        },
        meta={"model": "swinging_beam", "synthetic": True},
        geometry={"beam": beam_geometry().to_arrays(), "box": box.to_arrays()},
    )
