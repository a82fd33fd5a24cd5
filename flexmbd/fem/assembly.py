"""Stiffness, mass and geometric-stiffness assembly on scikit-fem meshes.

Shape functions, reference gradients and quadrature rules are scikit-fem's
(``elem.lbasis``, ``get_quadrature``); the isoparametric geometry (Jacobians,
their determinants and inverses by cofactors), the tensor contraction of the
lean isotropic form

    a(u, v) = lam div(u) div(v) + 2 mu eps(u) : eps(v)

and the scatter into the global matrix are done here with batched numpy
products over chunks of elements.  This gives the same matrices as ``skfem.asm``
of the lean `BilinearForm`s below (checked in the tests) at a fraction of the
time and with bounded memory.

Global matrices share one *node pattern* (every node pair that shares an
element): the scalar mass ``M_s`` lives on it, K on its 3x3 blocks.  Element
entries are summed into that pattern with a sparse scatter matrix (one entry
per column: a CSC product, no sorting) built per chunk.

Degrees of freedom are scikit-fem's node-interleaved order: dof ``3*i + k`` is
component ``k`` of node ``i``.  The mass is ``M = M_s (x) I3`` with ``M_s`` the
scalar consistent mass ``int rho N_a N_b dV``.

Quadrature orders (exact for affine elements): tet4 2, tet10 4, hex8 3 (2x2x2
Gauss), hex27 5 (3x3x3 Gauss).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..errors import MeshError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from numpy.typing import NDArray

    from .._typing import Array
    from .material import Material
    from .mesh import FEMesh

__all__ = [
    "Assembler",
    "INTORDER",
    "elasticity_form",
    "mass_form",
    "geometric_form",
    "reference_basis",
    "element_geometry",
]

INTORDER = {"tetra": 2, "tetra10": 4, "hexahedron": 3, "hexahedron27": 5}
_VOIGT = ((0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1))  # xx yy zz yz xz xy
_VOIGT_OF = ((0, 5, 4), (5, 1, 3), (4, 3, 2))  # Voigt index of (i, j)


def elasticity_form(lam: float, mu: float) -> Any:
    """The lean scikit-fem BilinearForm of isotropic elasticity (reference path)."""
    from skfem import BilinearForm
    from skfem.helpers import ddot, div, sym_grad

    @BilinearForm
    def a(u, v, w):
        return 2.0 * mu * ddot(sym_grad(u), sym_grad(v)) + lam * div(u) * div(v)

    return a


def mass_form(rho: float) -> Any:
    """Scalar consistent-mass BilinearForm (reference path)."""
    from skfem import BilinearForm

    @BilinearForm
    def m(u, v, w):
        return rho * u * v

    return m


def geometric_form(sigma: Array) -> Any:
    """Scalar geometric-stiffness form ``sigma_ij d_i u d_j v`` for a constant stress (3x3)."""
    from skfem import BilinearForm

    s = np.asarray(sigma, float)

    @BilinearForm
    def g(u, v, w):
        gu, gv = u.grad, v.grad
        return sum(s[i, j] * gu[i] * gv[j] for i in range(3) for j in range(3))

    return g


def reference_basis(elem: Any, X: Array) -> tuple[Array, Array]:
    """Values (nloc, nq) and reference gradients (nloc, 3, nq) of ``elem`` at points X (3, nq)."""
    vals, grads = [], []
    for a in range(elem.doflocs.shape[0]):
        phi, dphi = elem.lbasis(X, a)
        vals.append(phi)
        grads.append(dphi)
    return np.array(vals, float), np.array(grads, float)


def element_geometry(xe: Array, dN: Array) -> tuple[Array, Array]:
    """Isoparametric geometry of a batch of elements.

    Parameters
    ----------
    xe : (ne, nloc, 3) element node coordinates
    dN : (nloc, 3, nq) reference gradients

    Returns
    -------
    det : (ne, nq) Jacobian determinants (signed)
    G : (ne, nq, nloc, 3) physical gradients dN_a/dx_i
    """
    ne, nl, _ = xe.shape
    nq = dN.shape[2]
    # J[e, i, d, q] = sum_a x[e, a, i] dN[a, d, q]
    J = (xe.transpose(0, 2, 1).reshape(ne * 3, nl) @ dN.reshape(nl, 3 * nq)).reshape(ne, 3, 3, nq)
    a, b, c = J[:, 0, 0], J[:, 0, 1], J[:, 0, 2]
    d, e, f = J[:, 1, 0], J[:, 1, 1], J[:, 1, 2]
    g, h, k = J[:, 2, 0], J[:, 2, 1], J[:, 2, 2]
    c00, c01, c02 = e * k - f * h, c * h - b * k, b * f - c * e
    c10, c11, c12 = f * g - d * k, a * k - c * g, c * d - a * f
    c20, c21, c22 = d * h - e * g, b * g - a * h, a * e - b * d
    det = a * c00 + b * c10 + c * c20
    with np.errstate(divide="ignore", invalid="ignore"):
        r = 1.0 / det
    # invJ[d, i] = dxi_d/dx_i = adj[d, i] / det
    inv = (
        np.stack([np.stack([c00, c01, c02]), np.stack([c10, c11, c12]), np.stack([c20, c21, c22])])
        * r
    )  # (3d, 3i, ne, nq)
    # G[e, q, a, i] = sum_d dN[a, d, q] invJ[d, i, e, q]
    G = np.ascontiguousarray(np.einsum("adq,dieq->eqai", dN, inv, optimize=True))
    return det, G


class Assembler:
    """Element-chunked assembly on one `FEMesh` and `Material`.

    Parameters
    ----------
    fe : FEMesh
    material : Material
    chunk : int
        Element-matrix entries (elements x nloc^2 x 9) per chunk; bounds memory.
    """

    def __init__(self, fe: FEMesh, material: Material, chunk: int = 1_000_000) -> None:
        self.fe = fe
        self.material = material
        self.mesh = fe.mesh
        self.elem = fe.mesh.elem()
        self.intorder = INTORDER[fe.cell_type]
        self.chunk = int(chunk)
        self.edofs = np.ascontiguousarray(fe.mesh.dofs.element_dofs)  # (nloc, nel) node numbers
        self.nloc, self.nel = self.edofs.shape
        self.elements = np.ascontiguousarray(self.edofs.T)  # (nel, nloc)
        self.x = np.ascontiguousarray(fe.nodes, dtype=float)
        self.n_nodes = fe.n_nodes
        self._pattern = None
        self._ref = {}
        self.elements_per_chunk = max(1, self.chunk // (self.nloc * self.nloc * 9))

    # -- quadrature and basis ---------------------------------------------------------------
    def _quadrature(self):
        from skfem.quadrature import get_quadrature

        return get_quadrature(self.mesh.refdom, self.intorder)

    def _reference(self, quadrature=None):
        key = "default" if quadrature is None else id(quadrature)
        if key not in self._ref:
            X, w = self._quadrature() if quadrature is None else quadrature
            N, dN = reference_basis(self.elem, np.asarray(X, float))
            self._ref[key] = (np.asarray(w, float), N, dN)
        return self._ref[key]

    def ranges(self, per_chunk: int | None = None) -> Iterator[tuple[int, int]]:
        step = per_chunk or self.elements_per_chunk
        for start in range(0, self.nel, step):
            yield start, min(start + step, self.nel)

    def geometry(
        self, start: int, stop: int, quadrature: Any | None = None
    ) -> tuple[Array, Array, Array]:
        """(wdet (ne, nq), G (ne, nq, nloc, 3), N (nloc, nq)) for elements start:stop."""
        w, N, dN = self._reference(quadrature)
        det, G = element_geometry(self.x[self.elements[start:stop]], dN)
        return np.abs(det) * w, G, N

    def chunks(self, quadrature: Any | None = None) -> Iterator[Any]:
        """Yield (elements, G, N, w): gradients (nloc,3,ne,nq), values (nloc,ne,nq), weights.

        The layout of scikit-fem's ``CellBasis`` (kept for callers of the old interface).
        """
        for a, b in self.ranges():
            wd, G, N = self.geometry(a, b, quadrature)
            ne = b - a
            yield (
                np.arange(a, b),
                G.transpose(2, 3, 0, 1),
                np.broadcast_to(N[:, None, :], (self.nloc, ne, N.shape[1])),
                wd,
            )

    # -- global pattern ---------------------------------------------------------------------
    def pattern(self) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int32]]:
        """(indptr, indices, pos): scalar CSR pattern and element-entry positions in it.

        ``pos[e, a * nloc + b]`` is the position of the (node a, node b) entry of
        element e in the pattern's data array.
        """
        if self._pattern is None:
            T = self.elements.astype(np.int64)  # (nel, nloc)
            n = self.n_nodes
            key = (np.repeat(T, self.nloc, axis=1) * n + np.tile(T, (1, self.nloc))).ravel()
            uk, pos = np.unique(key, return_inverse=True)
            indptr = np.searchsorted(uk // n, np.arange(n + 1)).astype(np.int64)
            indices = (uk % n).astype(np.int32)
            self._pattern = (indptr, indices, pos.astype(np.int32).reshape(self.nel, -1))
        return self._pattern

    def scatter_add(self, out: Array, start: int, stop: int, X: Array) -> Array:
        """out[pattern] += element entries X (ne * nloc^2, ...) of elements start:stop.

        Only the window of pattern positions the chunk touches is updated (with a
        sparse scatter matrix: one entry per column, no sorting).
        """
        _, _, pos = self.pattern()
        p = pos[start:stop].ravel()
        lo, hi = int(p.min()), int(p.max()) + 1
        S = sp.csc_matrix((np.ones(len(p)), p - lo, np.arange(len(p) + 1)), shape=(hi - lo, len(p)))
        out[lo:hi] += (S @ X.reshape(len(p), -1)).reshape((hi - lo,) + out.shape[1:])
        return out

    def _scalar_csr(self, data):
        indptr, indices, _ = self.pattern()
        return sp.csr_matrix((data, indices, indptr), shape=(self.n_nodes, self.n_nodes))

    def _block_layout(self):
        """Positions of the 3x3 block entries of the node pattern in the 3n x 3n CSR."""
        indptr, indices, _ = self.pattern()
        deg = np.diff(indptr)
        row = np.repeat(np.arange(self.n_nodes), deg)
        s = np.arange(len(indices))
        base = 9 * indptr[row] + 3 * (s - indptr[row])
        kptr = np.empty(3 * self.n_nodes + 1, np.int64)
        kptr[:-1] = (9 * indptr[:-1, None] + 3 * deg[:, None] * np.arange(3)).ravel()
        kptr[-1] = 9 * len(indices)
        return base, deg[row], kptr

    def _block_csr(self, blocks):
        """3n x 3n CSR from node-pattern blocks (nnz_s, 3, 3) (sorted indices, zeros kept)."""
        indptr, indices, _ = self.pattern()
        base, d, kptr = self._block_layout()
        nnz = 9 * len(indices)
        ij = np.arange(3)
        t = (
            base[:, None, None] + 3 * d[:, None, None] * ij[None, :, None] + ij[None, None, :]
        ).ravel()
        data = np.empty(nnz)
        data[t] = blocks.ravel()
        cols = np.empty(nnz, np.int32)
        cols[t] = np.broadcast_to(
            (3 * indices)[:, None, None] + ij[None, None, :], (len(indices), 3, 3)
        ).ravel()
        K = sp.csr_matrix((data, cols, kptr), shape=(3 * self.n_nodes,) * 2)
        K.has_sorted_indices = True
        return K

    # -- matrices ---------------------------------------------------------------------------
    def stiffness(self, bbar: bool = False) -> sp.csr_matrix:
        """Global stiffness K (3n x 3n, CSR, sorted indices, full 3x3 node blocks).

        ``bbar=True``: mean-dilatation B-bar (Hughes 1980) for linear cells — the
        volumetric strain is replaced by its element average, ``K = K_dev +
        kappa V g g^T`` with ``g_a = (1/V) int grad N_a dV`` and ``kappa = lam +
        2 mu / 3``; the deviatoric part is fully integrated.  This is Abaqus' C3D8
        ("selectively reduced integration") and cures volumetric locking; on
        linear tetrahedra it equals the standard matrix.
        """
        lam, mu = self.material.lam, self.material.mu
        if bbar and self.fe.cell_type not in ("hexahedron", "tetra"):
            raise MeshError(
                f"mesh {self.fe.source!r}: B-bar (mean dilatation) is for linear "
                f"cells (C3D8, C3D4), not {self.fe.cell_type}"
            )
        kappa = lam + 2.0 * mu / 3.0
        _, indices, _ = self.pattern()
        blocks = np.zeros((len(indices), 3, 3))
        for a, b in self.ranges():
            wd, G, _ = self.geometry(a, b)
            # H[e, a, b, i, j] = sum_q w |J| dN_a/dx_i dN_b/dx_j
            H = np.einsum("eqai,eqbj->eabij", G, G * wd[:, :, None, None], optimize=True)
            if bbar:  # lam div div -> -2mu/3 div div (deviatoric) + kappa V g g^T (mean)
                gV = np.einsum("eq,eqai->eai", wd, G)  # V g_a
                gV /= np.sqrt(wd.sum(axis=1))[:, None, None]  # sqrt(V) g_a
                Ke = (lam - kappa) * H
                Ke += kappa * np.einsum("eai,ebj->eabij", gV, gV)
            else:
                Ke = lam * H
            Ke += mu * H.swapaxes(-1, -2)
            tr = np.einsum("eabii->eab", H)
            for i in range(3):
                Ke[..., i, i] += mu * tr
            self.scatter_add(blocks, a, b, Ke.reshape(-1, 9))
        return self._block_csr(blocks)

    def scalar_mass(self, lumped: bool = False) -> sp.csr_matrix:
        """Scalar mass M_s (n x n): consistent, or a lumped diagonal.

        ``lumped``: False (consistent), True or ``"hrz"`` (HRZ: element diagonal
        scaled to the element mass), ``"row-sum"`` (``int rho N_a dV``; Abaqus'
        lumping of linear elements; not for quadratic cells, whose corner masses
        it makes negative).
        """
        if lumped not in (False, True, "hrz", "row-sum"):
            raise MeshError(f"lumped={lumped!r}: use False, True / 'hrz' or 'row-sum'")
        if lumped == "row-sum":
            return sp.diags(np.asarray(self.scalar_mass(False).sum(axis=1)).ravel()).tocsr()
        rho = self.material.rho
        _, indices, _ = self.pattern()
        data = np.zeros(len(indices))
        diag = np.zeros(self.n_nodes)
        nl = self.nloc
        w, N, _ = self._reference()
        NN = (N[:, None, :] * N[None, :, :]).reshape(nl * nl, -1)  # ((a,b), q)
        for a, b in self.ranges():
            wd, _, _ = self.geometry(a, b)
            Me = rho * (wd @ NN.T)  # (ne, nl*nl)
            if lumped:  # HRZ: diagonal scaled to the element mass (positive for quadratic cells)
                Me = Me.reshape(-1, nl, nl)
                d = np.einsum("eaa->ea", Me)
                d = d * (Me.sum(axis=(1, 2)) / d.sum(axis=1))[:, None]
                diag += np.bincount(
                    self.elements[a:b].ravel(), weights=d.ravel(), minlength=self.n_nodes
                )
            else:
                self.scatter_add(data, a, b, Me.ravel())
        if lumped:
            return sp.diags(diag).tocsr()
        return self._scalar_csr(data)

    @staticmethod
    def vector_mass(Ms: sp.spmatrix) -> sp.csr_matrix:
        """M = M_s (x) I3 in node-interleaved order (CSR, sorted indices)."""
        Ms = sp.csr_matrix(Ms)
        Ms.sort_indices()
        n = Ms.shape[0]
        deg = np.diff(Ms.indptr)
        row = np.repeat(np.arange(n), deg)
        ptr = np.empty(3 * n + 1, np.int64)
        ptr[:-1] = (3 * Ms.indptr[:-1, None] + deg[:, None] * np.arange(3)).ravel()
        ptr[-1] = 3 * Ms.nnz
        s = np.arange(Ms.nnz)
        data = np.empty(3 * Ms.nnz)
        cols = np.empty(3 * Ms.nnz, np.int32)
        for i in range(3):
            t = 3 * Ms.indptr[row] + i * deg[row] + (s - Ms.indptr[row])
            data[t] = Ms.data
            cols[t] = 3 * Ms.indices + i
        M = sp.csr_matrix((data, cols, ptr), shape=(3 * n, 3 * n))
        M.has_sorted_indices = True
        return M

    # -- strains, stresses and geometric stiffness ------------------------------------------
    def _grad(self, U, a, b, G):
        """Displacement gradients (ne, nq, 3 dir, 3 comp, k) of columns U (3n, k)."""
        k = U.shape[1]
        Ue = U.reshape(self.n_nodes, 3 * k)[self.elements[a:b]]  # (ne, nloc, 3k)
        ne, nq, nl, _ = G.shape
        Gt = G.transpose(0, 1, 3, 2).reshape(ne, nq * 3, nl)
        return np.matmul(Gt, Ue).reshape(ne, nq, 3, 3, k)

    def _stress_voigt(self, gu):
        """Voigt stress (ne, nq, 6, k) from displacement gradients (ne, nq, dir, comp, k)."""
        lam, mu = self.material.lam, self.material.mu
        tr = gu[:, :, 0, 0] + gu[:, :, 1, 1] + gu[:, :, 2, 2]
        out = np.empty(gu.shape[:2] + (6,) + gu.shape[4:])
        for c, (i, j) in enumerate(_VOIGT):
            if i == j:
                out[:, :, c] = 2.0 * mu * gu[:, :, i, i] + lam * tr
            else:
                out[:, :, c] = mu * (gu[:, :, i, j] + gu[:, :, j, i])
        return out

    def stress_at_points(self, U: Array, idx: NDArray[np.int64], G: Array) -> Array:
        """Cauchy stress (k, ne, nq, 3, 3) of displacement columns U (3n, k) on a chunk.

        ``G`` in the ``chunks()`` layout (nloc, 3, ne, nq); ``idx`` consecutive elements.
        """
        U = np.asarray(U, float).reshape(3 * self.n_nodes, -1)
        gu = self._grad(U, idx[0], idx[-1] + 1, G.transpose(2, 3, 0, 1))
        sv = self._stress_voigt(gu)  # (ne, nq, 6, k)
        sig = np.empty((U.shape[1],) + gu.shape[:2] + (3, 3))
        for c, (i, j) in enumerate(_VOIGT):
            sig[:, :, :, i, j] = sig[:, :, :, j, i] = np.moveaxis(sv[:, :, c], -1, 0)
        return sig

    def geometric_element_data(self, U: Array, a: int, b: int) -> Array:
        """Element geometric stiffness entries (ne * nloc^2, k) of the stress states of U.

        ``Kg_e[a, b] = sum_q w |J| sigma_ij dN_a/dx_i dN_b/dx_j`` for elements a:b,
        rows ordered (element, a, b) like the pattern positions.  Written as
        ``Kg_e = sum_{q, c} sigma_c B_c`` with the load-independent products
        ``B_c[a, b] = dN_a/dx_i dN_b/dx_j (+ swapped for shear)`` so that all load
        cases go through one batched matrix product.
        """
        wd, G, _ = self.geometry(a, b)
        k = U.shape[1]
        ne, nq, nl, _ = G.shape
        sv = self._stress_voigt(self._grad(U, a, b, G)) * wd[:, :, None, None]  # (ne,nq,6,k)
        Gc = [np.ascontiguousarray(G[..., i]) for i in range(3)]  # (ne, nq, nl) each
        B = np.empty((ne, nq, 6, nl, nl))
        for c, (i, j) in enumerate(_VOIGT):
            np.multiply(Gc[i][..., :, None], Gc[j][..., None, :], out=B[:, :, c])
            if i != j:
                B[:, :, c] += Gc[j][..., :, None] * Gc[i][..., None, :]
        Kg = np.matmul(
            sv.reshape(ne, nq * 6, k).transpose(0, 2, 1), B.reshape(ne, nq * 6, nl * nl)
        )  # (ne, k, (a, b))
        return Kg.transpose(0, 2, 1).reshape(ne * nl * nl, k)

    def geometric_data(self, U: Array) -> Array:
        """Scalar geometric-stiffness data (nnz_s, k) on the node pattern for columns U.

        Columns of U that are exactly zero (loads carried by the support) are skipped.
        """
        U = np.asarray(U, float)
        if U.ndim == 1:
            U = U[:, None]
        _, indices, _ = self.pattern()
        data = np.zeros((len(indices), U.shape[1]))
        live = np.nonzero(np.any(U != 0.0, axis=0))[0]
        if len(live) == 0:
            return data
        Ul = np.ascontiguousarray(U[:, live])
        out = np.zeros((len(indices), len(live)))
        nq = len(self._reference()[0])
        per = max(1, self.chunk // (nq * 6 * max(self.nloc**2, len(live))))
        for a, b in self.ranges(per):
            self.scatter_add(out, a, b, self.geometric_element_data(Ul, a, b))
        data[:, live] = out
        return data

    def geometric_scalar(self, U: Array) -> list[sp.csr_matrix]:
        """Scalar geometric stiffness (n x n) of the stress states of displacement columns U.

        ``K_G = K_g (x) I3`` with ``K_g[a, b] = int sigma_ij dN_a/dx_i dN_b/dx_j dV``.
        Returns a list of CSR matrices, one per column of U.
        """
        data = self.geometric_data(U)
        return [self._scalar_csr(np.ascontiguousarray(data[:, k])) for k in range(data.shape[1])]

    def geometric_scalar_from_stress(self, sigma: Array) -> sp.csr_matrix:
        """Scalar K_g for a constant (3x3) Cauchy stress on the whole mesh."""
        s = np.asarray(sigma, float)
        _, indices, _ = self.pattern()
        data = np.zeros(len(indices))
        for a, b in self.ranges():
            wd, G, _ = self.geometry(a, b)
            Ke = np.einsum("eqai,ij,eqbj,eq->eab", G, s, G, wd, optimize=True)
            self.scatter_add(data, a, b, Ke.ravel())
        return self._scalar_csr(data)

    def nodal_stress(self, U: Array) -> Array:
        """Stress modes: Voigt stress (xx, yy, zz, yz, xz, xy) at nodes, shape (n_nodes, 6, k).

        Evaluated at the element nodes and averaged over the elements sharing a node.
        """
        U = np.asarray(U, float)
        if U.ndim == 1:
            U = U[:, None]
        k = U.shape[1]
        if not hasattr(self, "_node_quad"):
            ref = np.ascontiguousarray(self.elem.doflocs.T)  # (3, nloc) reference node coordinates
            self._node_quad = (ref, np.ones(ref.shape[1]))
        out = np.zeros((self.n_nodes, 6 * k))
        count = np.bincount(self.edofs.ravel(), minlength=self.n_nodes).astype(float)
        per = max(1, self.chunk // (self.nloc * 18 * k))
        for a, b in self.ranges(per):
            _, G, _ = self.geometry(a, b, self._node_quad)
            sv = self._stress_voigt(self._grad(U, a, b, G))  # (ne, nloc points, 6, k)
            nodes = self.elements[a:b].ravel()  # point q of element e is node elements[e, q]
            S = sp.csc_matrix(
                (np.ones(len(nodes)), nodes, np.arange(len(nodes) + 1)),
                shape=(self.n_nodes, len(nodes)),
            )
            out += S @ sv.reshape(len(nodes), 6 * k)
        return (out / np.maximum(count, 1)[:, None]).reshape(self.n_nodes, 6, k)

    def volume(self) -> float:
        return float(sum(self.geometry(a, b)[0].sum() for a, b in self.ranges()))


def check_node_coverage(fe):
    """MeshError if some nodes belong to no element (they would make K singular)."""
    used = np.zeros(fe.n_nodes, bool)
    used[np.asarray(fe.mesh.dofs.element_dofs).ravel()] = True
    if not used.all():
        raise MeshError(
            f"mesh {fe.source!r}: {int((~used).sum())} node(s) belong to no element; "
            "remove orphan nodes"
        )
