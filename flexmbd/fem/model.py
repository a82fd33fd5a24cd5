"""The full finite-element model of one body: mesh, material, K, M and cached solvers."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MeshError
from ._threads import with_fem_threads
from .assembly import Assembler, check_node_coverage
from .eigen import RelievedSolver, SPDFactor, add_on_pattern, check_backend, free_shift, rigid_modes
from .interfaces import make_interfaces
from .material import check_material
from .mesh import FEMesh, check_connected
from .meshfile import read_mesh

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from numpy.typing import NDArray

    from .._typing import Array, ArrayLike
    from .interfaces import Interface
    from .material import Material

__all__ = ["FEModel"]


class FEModel:
    """Assembled full model; expensive pieces are computed once and cached.

    Parameters
    ----------
    mesh : path, meshio.Mesh, skfem mesh or FEMesh
    material : Material
    lumped : bool or str
        Lumped mass instead of the consistent mass: True / "hrz" (HRZ) or
        "row-sum" (see `Assembler.scalar_mass`).
    backend : str
        Sparse factorization backend (see `flexmbd.fem.eigen.SPDFactor`).
    bbar : bool
        Mean-dilatation B-bar stiffness for linear hexahedra (Abaqus C3D8's
        default; see `Assembler.stiffness`).

    `FEModel.from_matrices` builds the model from given M and K instead.
    """

    @with_fem_threads
    def __init__(
        self,
        mesh: Any,
        material: Material,
        lumped: bool = False,
        backend: str | None = "auto",
        bbar: bool = False,
    ) -> None:
        t0 = time.perf_counter()
        self.fe = mesh if isinstance(mesh, FEMesh) else read_mesh(mesh)
        self.material = check_material(material, f"mesh {self.fe.source!r}")
        check_node_coverage(self.fe)
        check_connected(self.fe)
        self.lumped, self.backend = lumped, check_backend(backend)
        self.assembler = Assembler(self.fe, self.material)
        t1 = time.perf_counter()
        self.K = self.assembler.stiffness(bbar=bbar)
        self.Ms = self.assembler.scalar_mass(lumped=lumped)
        self.M = Assembler.vector_mass(self.Ms)
        self.timings = {"read": t1 - t0, "assemble": time.perf_counter() - t1}
        self._free = None
        self._R = None

    @classmethod
    def from_matrices(
        cls,
        mesh: Any,
        M: Any,
        K: Any,
        material: Material | None = None,
        backend: str | None = "auto",
    ) -> FEModel:
        """A model whose mass and stiffness come from elsewhere (another FE code).

        Parameters
        ----------
        mesh : path, meshio.Mesh, skfem mesh or FEMesh
            The mesh the matrices belong to: node coordinates (m) for the invariants
            and the interfaces, named node sets.
        M, K : sparse or dense (3n, 3n)
            Mass (kg) and stiffness (N/m), symmetric, in node-interleaved order
            ``3*i + k`` of the mesh nodes (`flexmbd.fem.abaqus_mtx.read_mtx` gives
            this order).
        material : Material, optional
            Needed only for stress modes and geometric stiffness (the matrices do
            not define stresses); without it those are skipped.

        The floating-frame invariants use the scalar mass ``M_s`` of the given M
        (``M = M_s (x) I3``, exact for consistent and lumped solid masses, with
        point masses added equally to the three directions); if M couples
        directions, ``M_s`` is the mean of its three direction blocks and a
        warning says so.
        """
        import warnings

        import scipy.sparse as sp

        self = cls.__new__(cls)
        t0 = time.perf_counter()
        self.fe = mesh if isinstance(mesh, FEMesh) else read_mesh(mesh)
        src = self.fe.source
        n = self.fe.n_dofs
        mats = {}
        for what, A in (("mass", M), ("stiffness", K)):
            try:
                A = sp.csr_matrix(A, dtype=float)
            except (TypeError, ValueError) as exc:
                raise MeshError(f"{what} matrix for mesh {src!r} is not a matrix ({exc})") from None
            if A.shape != (n, n):
                raise MeshError(
                    f"{what} matrix is {A.shape[0]} x {A.shape[1]} but mesh {src!r} has "
                    f"{self.fe.n_nodes} nodes ({n} DOFs, 3 per node); give the matrices of "
                    "this mesh in node-interleaved order"
                )
            if not np.isfinite(A.data).all():
                raise MeshError(f"{what} matrix for mesh {src!r} has non-finite entries")
            asym = abs(A - A.T)
            ref = abs(A).max() if A.nnz else 0.0
            if ref == 0.0:
                raise MeshError(f"{what} matrix for mesh {src!r} is zero")
            if asym.nnz and asym.max() > 1e-6 * ref:
                raise MeshError(
                    f"{what} matrix for mesh {src!r} is not symmetric (max "
                    f"|A - A^T| = {asym.max():.3g} of max |A| = {ref:.3g})"
                )
            A = (0.5 * (A + A.T)).tocsr()
            A.sort_indices()
            mats[what] = A
        self.M, self.K = mats["mass"], mats["stiffness"]
        blocks = [self.M[i::3, i::3] for i in range(3)]
        self.Ms = ((blocks[0] + blocks[1] + blocks[2]) / 3.0).tocsr()
        dev = abs(self.M - Assembler.vector_mass(self.Ms))
        if dev.nnz and dev.max() > 1e-9 * abs(self.M).max():
            warnings.warn(
                f"mass matrix for mesh {src!r} couples directions or differs between "
                "them (max deviation from M_s (x) I3: "
                f"{dev.max() / abs(self.M).max():.2g} relative); the inertia "
                "invariants use the mean of its three direction blocks",
                stacklevel=3,
            )
        if (self.Ms.diagonal() < 0).any() or self.Ms.sum() <= 0:
            raise MeshError(
                f"mass matrix for mesh {src!r} has negative diagonal entries or a "
                "non-positive total mass"
            )
        self.material = None if material is None else check_material(material, f"mesh {src!r}")
        self.assembler = None if material is None else Assembler(self.fe, self.material)
        self.lumped, self.backend = None, backend
        self.timings = {"read": time.perf_counter() - t0, "assemble": 0.0}
        self._free = None
        self._R = None
        return self

    @property
    def n_dofs(self) -> int:
        return self.K.shape[0]

    @property
    def R(self) -> Array:
        """Rigid-body modes about the mesh origin, [rotations; translations]."""
        if self._R is None:
            self._R = rigid_modes(self.fe.nodes)
        return self._R

    def forget_factorizations(self) -> None:
        """Drop the cached free-free factorization, so the next :meth:`free_solver`
        call factors again (a strategy comparison charges each strategy its own)."""
        self._free = None

    def free_solver(self) -> Any:
        """(sigma, factor of K - sigma M, RelievedSolver) for free-free problems (cached)."""
        if self._free is None:
            t0 = time.perf_counter()
            sigma = free_shift(self.K, self.M)
            factor = SPDFactor(
                add_on_pattern(self.K, self.M, 1.0, -sigma),
                self.backend,
                name=f"K - sigma M of mesh {self.fe.source!r}",
            )
            self._free = (
                sigma,
                factor,
                RelievedSolver(self.K, self.M, self.R, factor, name=f"mesh {self.fe.source!r}"),
            )
            self.timings["factor_free"] = time.perf_counter() - t0
        return self._free

    def interfaces(
        self, spec: Any, kind: str = "rigid", origins: Mapping[str, ArrayLike] | None = None
    ) -> dict[str, Interface]:
        return make_interfaces(self.fe, spec, kind, origins)

    def dofs_of(self, nodes: ArrayLike) -> NDArray[np.int64]:
        nodes = np.asarray(nodes, dtype=np.int64)
        return (3 * nodes[:, None] + np.arange(3)).ravel()
