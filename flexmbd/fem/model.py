"""The full finite-element model of one body: mesh, material, K, M and cached solvers."""

import time

import numpy as np

from ._threads import with_fem_threads
from .assembly import Assembler, check_node_coverage
from .eigen import RelievedSolver, SPDFactor, add_on_pattern, check_backend, free_shift, rigid_modes
from .interfaces import make_interfaces
from .material import check_material
from .mesh import FEMesh, check_connected, read_mesh

__all__ = ["FEModel"]


class FEModel:
    """Assembled full model; expensive pieces are computed once and cached.

    Parameters
    ----------
    mesh : path, meshio.Mesh, skfem mesh or FEMesh
    material : Material
    lumped : bool
        HRZ-lumped mass instead of the consistent mass.
    backend : str
        Sparse factorization backend (see `flexmbd.fem.eigen.SPDFactor`).
    """

    @with_fem_threads
    def __init__(self, mesh, material, lumped=False, backend="auto"):
        t0 = time.perf_counter()
        self.fe = mesh if isinstance(mesh, FEMesh) else read_mesh(mesh)
        self.material = check_material(material, f"mesh {self.fe.source!r}")
        check_node_coverage(self.fe)
        check_connected(self.fe)
        self.lumped, self.backend = lumped, check_backend(backend)
        self.assembler = Assembler(self.fe, self.material)
        t1 = time.perf_counter()
        self.K = self.assembler.stiffness()
        self.Ms = self.assembler.scalar_mass(lumped=lumped)
        self.M = Assembler.vector_mass(self.Ms)
        self.timings = {"read": t1 - t0, "assemble": time.perf_counter() - t1}
        self._free = None
        self._R = None

    @property
    def n_dofs(self):
        return self.K.shape[0]

    @property
    def R(self):
        """Rigid-body modes about the mesh origin, [rotations; translations]."""
        if self._R is None:
            self._R = rigid_modes(self.fe.nodes)
        return self._R

    def free_solver(self):
        """(sigma, factor of K - sigma M, RelievedSolver) for free-free problems (cached)."""
        if self._free is None:
            t0 = time.perf_counter()
            sigma = free_shift(self.K, self.M)
            factor = SPDFactor(add_on_pattern(self.K, self.M, 1.0, -sigma), self.backend,
                               name=f"K - sigma M of mesh {self.fe.source!r}")
            self._free = (sigma, factor, RelievedSolver(self.K, self.M, self.R, factor,
                                                        name=f"mesh {self.fe.source!r}"))
            self.timings["factor_free"] = time.perf_counter() - t0
        return self._free

    def interfaces(self, spec, kind="rigid", origins=None):
        return make_interfaces(self.fe, spec, kind, origins)

    def dofs_of(self, nodes):
        nodes = np.asarray(nodes, dtype=np.int64)
        return (3 * nodes[:, None] + np.arange(3)).ravel()
