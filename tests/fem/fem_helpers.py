"""Shared helpers of the FEM tests (beam meshes, beam-theory references)."""

import numpy as np
import skfem

import flexmbd.fem as F

E, NU, RHO = 2.1e11, 0.3, 7850.0
L, H = 1.0, 0.05


def beam_hex1(nx=20, ny=2):
    return skfem.MeshHex1.init_tensor(
        np.linspace(0, L, nx + 1), np.linspace(0, H, ny + 1), np.linspace(0, H, ny + 1)
    )


def beam_hex2(nx=20, ny=2):
    return skfem.MeshHex2.from_mesh(beam_hex1(nx, ny))


def end(x):
    return F.Plane((x, 0, 0), (1, 0, 0))


def eb_cantilever_hz(mode=1):
    beta = [1.875104069, 4.694091133][mode - 1]
    I, A = H**4 / 12, H * H
    return beta**2 / (2 * np.pi) * np.sqrt(E * I / (RHO * A)) / L**2


def eb_free_hz():
    beta = 4.730040745
    I, A = H**4 / 12, H * H
    return beta**2 / (2 * np.pi) * np.sqrt(E * I / (RHO * A)) / L**2
