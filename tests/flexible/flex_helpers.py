"""Small reduced beams and finite-difference helpers for the flexible-body tests."""

import functools
import sys
from pathlib import Path

import numpy as np
import skfem

import flexmbd as fm
import flexmbd.fem as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "absolute"))
from abs_helpers import central_jacobian, rel_err  # noqa: E402,F401

STEEL = dict(E=2.1e11, nu=0.3, rho=7850.0)
L, H = 1.0, 0.05


def beam_mesh(nx=10, ny=2, hex2=False, length=L, h=H):
    m = skfem.MeshHex1.init_tensor(
        np.linspace(0, length, nx + 1), np.linspace(0, h, ny + 1), np.linspace(0, h, ny + 1)
    )
    return skfem.MeshHex2.from_mesh(m) if hex2 else m


def end(x):
    return F.Plane((x, 0, 0), (1, 0, 0))


@functools.cache
def small_beam(
    n_modes=3, kind="cb", nx=8, ny=2, tip="rigid", hex2=False, rayleigh=None, E=STEEL["E"]
):
    """A reduced steel beam 1.0 x 0.05 x 0.05 (interfaces A at x=0, B at x=L)."""
    mesh = beam_mesh(nx, ny, hex2)
    mat = fm.Material(E=E, nu=STEEL["nu"], rho=STEEL["rho"])
    if kind == "cb":
        strat = fm.CraigBampton(
            n_modes,
            interfaces={"A": end(0.0), "B": end(L)},
            interface_kind={"A": "rigid", "B": tip},
            frame="interface",
        )
        return F.reduce(mesh, mat, strat, rayleigh=rayleigh, name="beam")
    if kind == "cbA":
        strat = fm.CraigBampton(n_modes, interfaces={"A": end(0.0)}, frame="interface")
        return F.reduce(mesh, mat, strat, interfaces={"B": end(L)}, rayleigh=rayleigh, name="beam")
    strat = fm.NormalModes(n_modes)
    return F.reduce(
        mesh, mat, strat, interfaces={"A": end(0.0), "B": end(L)}, rayleigh=rayleigh, name="beam"
    )
