"""A `ReducedBody` from a reduced model given directly (matrices and mode shapes).

For modal data made elsewhere (another FE code's reduction, a hand-derived
beam model, a Craig-Bampton superelement): mode shapes at the nodes, the
mass and stiffness (full on the node DOFs, or already reduced), interfaces as
node lists, optional damping and optional floating-frame invariants.

Units: SI throughout (m, kg, N, s; mass matrices in kg, stiffness in N/m,
frequencies in Hz).  Convert a deck in mm-t-s first (lengths x 1e-3, masses
x 1e3, stiffness x 1e3 N/m per N/mm).

What is computed from what
--------------------------
- ``M`` full (3n x 3n, translational DOFs, node-interleaved): it must be a
  scalar mass times ``I3`` (solid elements); every invariant of
  `flexmbd.fem.invariants` follows exactly, and ``M_ff = Phi^T M Phi``.
- ``M`` reduced (m x m): it is ``M_ff``; the inertia invariants (mass,
  first and second moment, ``St``, ``Sij``, ``Pij``) must come from
  ``invariants=`` or from ``nodal_mass=`` (point masses at the nodes, the
  lumped-mass approximation).  Given invariants always win over computed ones.
- ``K`` full (3n x 3n) or reduced (m x m, then it is ``K_ff``).
- Damping: a modal matrix ``damping`` (m x m), Rayleigh ``(alpha, beta)`` or
  modal ratios ``zeta`` of the reduced eigenmodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..errors import ModelError
from .interfaces import Interface
from .invariants import inertia_invariants

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from .._typing import Array, ArrayLike
    from .material import Material
    from .reduced import ReducedBody

__all__ = ["reduced_from_matrices", "modal_damping", "hz", "interface_fields"]

_INERTIA_KEYS = ("mass", "first_moment", "second_moment", "St", "Sij", "Pij")
_INVARIANT_KEYS = _INERTIA_KEYS + ("M_ff", "K_ff", "D_ff")


def hz(lam: ArrayLike) -> Array:
    """Frequencies (Hz) of eigenvalues ``lam`` (rad^2/s^2); negative ones keep their sign."""
    lam = np.asarray(lam, float)
    return np.sign(lam) * np.sqrt(np.abs(lam)) / (2 * np.pi)


def interface_fields(itfs: dict[str, Interface], Phi: Array) -> dict[str, Any]:
    """The interface fields of a :class:`ReducedBody` from its interfaces (by name) and
    its mode shapes ``Phi`` (3 n x m): names, kinds, origins (m), the concatenated node
    numbers with their offsets, and each interface frame's modal motion (k, 6, m)."""
    names = list(itfs)
    m = Phi.shape[1]
    return {
        "interface_names": names,
        "interface_kinds": [itfs[k].kind for k in names],
        "interface_origins": np.array([itfs[k].origin for k in names]).reshape(-1, 3),
        "interface_nodes": (
            np.concatenate([itfs[k].nodes for k in names]) if names else np.zeros(0, int)
        ),
        "interface_offsets": np.concatenate(
            [[0], np.cumsum([len(itfs[k].nodes) for k in names])]
        ).astype(int),
        "interface_modes": (
            np.stack([itfs[k].frame_motion(Phi) for k in names]) if names else np.zeros((0, 6, m))
        ),
    }


def modal_damping(
    M_ff: Array,
    K_ff: Array,
    rayleigh: tuple[float, float] | None = None,
    zeta: float | ArrayLike | None = None,
) -> tuple[Array, Array, Array]:
    """Modal damping ``(D_ff, rayleigh (2,), zeta (m,) or empty)``.

    ``zeta`` (scalar or per reduced eigenmode) gives ``D = M X diag(2 zeta w) X^T M``
    with ``X`` the M-orthonormal eigenvectors of ``(K_ff, M_ff)``; otherwise
    ``rayleigh = (alpha, beta)`` gives ``D = alpha M_ff + beta K_ff``; neither: zero.
    """
    m = M_ff.shape[0]
    if zeta is not None:
        lam, X = sla.eigh(K_ff, M_ff)
        z = np.broadcast_to(np.asarray(zeta, float), (m,)).copy()
        Y = M_ff @ X
        return Y @ np.diag(2 * z * np.sqrt(np.maximum(lam, 0))) @ Y.T, np.zeros(2), z
    if rayleigh is not None:
        ab = np.asarray(rayleigh, float)
        return ab[0] * M_ff + ab[1] * K_ff, ab, np.zeros((0,))
    return np.zeros((m, m)), np.zeros(2), np.zeros((0,))


def _dense(A):
    return A.toarray() if sp.issparse(A) else np.asarray(A, float)


def _check_symmetric(name, A, owner):
    """Raise unless A (dense or sparse) is symmetric to 1e-8 of its largest entry."""
    D = A - A.T
    big = abs(A).max() if A.shape[0] else 0.0
    asym = abs(D).max() if D.shape[0] else 0.0
    if not np.isfinite(big):
        raise ModelError(f"{owner}: {name} has non-finite entries")
    if asym > 1e-8 * max(big, 1e-300):
        raise ModelError(
            f"{owner}: {name} is not symmetric (max |{name} - {name}^T| = "
            f"{asym:.3g} against max |{name}| = {big:.3g}); give the full symmetric "
            "matrix (both triangles) in consistent units"
        )


def _matrix(name, A, n_full, m, owner):
    """(A, 'full' | 'reduced') after shape and symmetry checks."""
    if A is None:
        return None, None
    if not sp.issparse(A):
        A = np.asarray(A, float)
        if A.ndim != 2:
            raise ModelError(f"{owner}: {name} must be a matrix, got shape {A.shape}")
    else:
        A = sp.csr_matrix(A, dtype=float)
    if A.shape == (n_full, n_full):
        kind = "full"
    elif A.shape == (m, m):
        kind = "reduced"
    else:
        raise ModelError(
            f"{owner}: {name} has shape {A.shape}; expected ({n_full}, {n_full}) "
            f"(3 translational DOFs per node, node-interleaved) or ({m}, {m}) "
            "(reduced on the modes)"
        )
    _check_symmetric(name, A, owner)
    return A, kind


def _scalar_mass(M, owner):
    """Scalar mass ``M_s`` with ``M = M_s (x) I3``; raises if M couples components."""
    M = sp.csr_matrix(M)
    Ms = M[0::3, 0::3]
    scale = abs(M).max()
    for a in range(3):
        for b in range(3):
            blk = M[a::3, b::3] - (Ms if a == b else 0 * Ms)
            if blk.nnz and abs(blk).max() > 1e-8 * scale:
                raise ModelError(
                    f"{owner}: the full mass matrix M is not a scalar mass times I3 (component "
                    f"block ({a}, {b}) differs); give M reduced on the modes together with "
                    "invariants= or nodal_mass="
                )
    return Ms


def _check_pd(name, A, owner, semi=False):
    w = np.linalg.eigvalsh(A) if A.shape[0] else np.zeros(0)
    top = max(np.abs(w).max() if w.size else 0.0, 1e-300)
    bad = (w[0] < -1e-8 * top) if semi else (w[0] <= 1e-12 * top)
    if w.size and bad:
        what = "positive semi-definite" if semi else "positive definite"
        raise ModelError(
            f"{owner}: {name} is not {what} (smallest eigenvalue {w[0]:.3g}, "
            f"largest {w[-1]:.3g}); check the units, the sign and that the modes are "
            "independent"
        )


def _as_modes(modes, n, owner):
    Phi = np.asarray(modes, float)
    if Phi.ndim == 3:
        if Phi.shape[:2] != (n, 3):
            raise ModelError(
                f"{owner}: modes of shape {Phi.shape} do not fit {n} nodes; "
                "expected (n_nodes, 3, n_modes) or (3 n_nodes, n_modes)"
            )
        Phi = Phi.reshape(3 * n, -1)
    if Phi.ndim != 2 or Phi.shape[0] != 3 * n:
        raise ModelError(
            f"{owner}: modes of shape {Phi.shape} do not fit {n} nodes; expected "
            f"({3 * n}, n_modes) node-interleaved (x, y, z per node) or "
            f"({n}, 3, n_modes)"
        )
    if Phi.shape[1] == 0:
        raise ModelError(f"{owner}: modes has no columns; give at least one mode")
    if not np.isfinite(Phi).all():
        raise ModelError(f"{owner}: modes has non-finite entries")
    return Phi


def _invariants(Phi, nodes, M, mkind, K, kkind, invariants, nodal_mass, owner):
    """Inertia invariants and M_ff, K_ff from whatever was given."""
    n = len(nodes)
    given = dict(invariants or {})
    unknown = sorted(set(given) - set(_INVARIANT_KEYS))
    if unknown:
        raise ModelError(
            f"{owner}: invariants has unknown keys {unknown}; known: {list(_INVARIANT_KEYS)}"
        )
    inv = {}
    if mkind == "full":
        Ms = _scalar_mass(M, owner)
        inv = inertia_invariants(Ms, sp.csr_matrix((3 * n, 3 * n)), nodes, Phi)
    elif nodal_mass is not None:
        w = np.asarray(nodal_mass, float)
        if w.shape != (n,) or (w < 0).any() or not w.sum() > 0:
            raise ModelError(
                f"{owner}: nodal_mass must be {n} non-negative point masses (kg) "
                f"with a positive sum, got shape {w.shape}"
            )
        inv = inertia_invariants(sp.diags(w), sp.csr_matrix((3 * n, 3 * n)), nodes, Phi)
        del inv["M_ff"]  # the reduced M given is the modal mass
    elif not all(k in given for k in _INERTIA_KEYS):
        missing = [k for k in _INERTIA_KEYS if k not in given]
        raise ModelError(
            f"{owner}: with M reduced on the modes (or no M) the inertia invariants cannot be "
            f"computed; give the full mass matrix, nodal_mass= (lumped point masses) or "
            f"invariants= with {missing}"
        )
    inv.pop("K_ff", None)
    inv.update(given)
    m = Phi.shape[1]
    if mkind == "full":
        inv["M_ff"] = 0.5 * (inv["M_ff"] + inv["M_ff"].T)
    elif mkind == "reduced":
        inv["M_ff"] = _dense(M)
    elif "M_ff" not in inv:
        P = np.asarray(inv["Pij"], float)
        inv["M_ff"] = P[0, 0] + P[1, 1] + P[2, 2]
    if kkind == "full":
        Kf = Phi.T @ (K @ Phi)
        inv["K_ff"] = 0.5 * (Kf + Kf.T)
    elif kkind == "reduced":
        inv["K_ff"] = _dense(K)
    elif "K_ff" not in inv:
        raise ModelError(f"{owner}: no stiffness; give K (full or reduced) or invariants['K_ff']")
    shapes = {
        "mass": (),
        "first_moment": (3,),
        "second_moment": (3, 3),
        "St": (3, m),
        "Sij": (3, 3, m),
        "Pij": (3, 3, m, m),
        "M_ff": (m, m),
        "K_ff": (m, m),
        "D_ff": (m, m),
    }
    for k in list(inv):
        if k in shapes:
            inv[k] = np.asarray(inv[k], float)
            if inv[k].shape != shapes[k]:
                raise ModelError(
                    f"{owner}: invariant {k!r} has shape {inv[k].shape}, expected "
                    f"{shapes[k]} for {m} modes"
                )
            if not np.isfinite(inv[k]).all():
                raise ModelError(f"{owner}: invariant {k!r} has non-finite entries")
    if not inv["mass"] > 0:
        raise ModelError(f"{owner}: the mass must be positive, got {float(inv['mass']):.6g} kg")
    J0 = inv["second_moment"]
    _check_symmetric("second_moment", J0, owner)
    if "Pij" in given and mkind is not None:  # M_ff must be the trace of P
        P = inv["Pij"]
        tr = P[0, 0] + P[1, 1] + P[2, 2]
        if np.abs(tr - inv["M_ff"]).max() > 1e-8 * max(np.abs(tr).max(), 1e-300):
            raise ModelError(
                f"{owner}: the reduced mass M and invariants['Pij'] disagree "
                "(M_ff must equal P_xx + P_yy + P_zz); check the units"
            )
    return inv


def reduced_from_matrices(
    cls: type[ReducedBody],
    nodes: ArrayLike,
    modes: ArrayLike,
    M: Any | None = None,
    K: Any | None = None,
    *,
    interfaces: Any | None = None,
    interface_kind: str = "nodes",
    origins: Mapping[str, ArrayLike] | None = None,
    damping: ArrayLike | None = None,
    rayleigh: tuple[float, float] | None = None,
    zeta: float | ArrayLike | None = None,
    invariants: Mapping[str, Any] | None = None,
    nodal_mass: ArrayLike | None = None,
    stress_modes: ArrayLike | None = None,
    cells: Any | None = None,
    cell_type: str = "",
    name: str = "body",
    strategy: str = "given matrices",
    frame: str = "",
    support: str = "free",
    reference: str = "",
    mode_kind: str | Sequence[str] | None = None,
    mode_label: str | Sequence[str] | None = None,
    material: Material | None = None,
    material_name: str = "",
    notes: Sequence[str] = (),
) -> ReducedBody:
    """Build a ``cls`` (`ReducedBody`) from a reduced model given directly (SI units);
    called by `ReducedBody.from_matrices`.

    Parameters
    ----------
    cls : type
        The class built (`ReducedBody`).
    nodes : (n, 3)
        Undeformed node coordinates in the body frame (m).
    modes : (3n, m) or (n, 3, m)
        Mode shapes at the nodes (m per unit modal coordinate), node-interleaved
        ``(x, y, z)`` per node, body axes.
    M : (3n, 3n) or (m, m), dense or sparse, optional
        Mass matrix (kg): full on the translational node DOFs (then it must be
        ``M_s (x) I3`` and every invariant is computed) or reduced ``Phi^T M Phi``
        (then give ``invariants`` or ``nodal_mass`` for the inertia invariants).
    K : (3n, 3n) or (m, m), optional
        Stiffness (N/m), full or reduced. Required unless ``invariants['K_ff']``.
    interfaces : dict name -> node numbers, optional
        Interface node sets (0-based rows of ``nodes``), in order.
    interface_kind : "nodes" | "rigid" | "distributing" or dict name -> kind
        Coupling of each interface (`flexmbd.fem.Interface`); its frame motion per
        mode (``interface_modes``, ``[rotation; translation]``) is the least-squares
        rigid fit at its nodes ("nodes": a single node's translation, zero rotation).
    origins : dict name -> (3,), optional
        Interface frame origins (m, body axes); default the centroid of the nodes.
    damping : (m, m), optional
        Modal damping matrix ``D_ff`` (N s/m per modal coordinate).
    rayleigh : (alpha, beta), optional
        ``D_ff = alpha M_ff + beta K_ff``.
    zeta : float or (m,), optional
        Modal damping ratios of the reduced eigenmodes (overrides ``rayleigh``).
    invariants : dict, optional
        Any of ``mass`` (kg), ``first_moment`` (kg m, (3,)), ``second_moment``
        (kg m^2, ``int rho x0 x0^T dV``), ``St``, ``Sij``, ``Pij``, ``M_ff``,
        ``K_ff``, ``D_ff`` (definitions in `flexmbd.fem.invariants`); given ones
        replace computed ones.
    nodal_mass : (n,), optional
        Point masses at the nodes (kg): lumped-mass invariants when ``M`` is reduced.
    stress_modes : (n, 6, m), optional
        Voigt stress per unit mode (Pa), order xx, yy, zz, yz, xz, xy.
    cells, cell_type : optional
        Connectivity (meshio order) and meshio cell type, for viewing.
    name, strategy, frame, support, reference, notes : str
        Descriptions stored with the body (``support``: "free" or "clamped";
        ``reference``: the interface carrying the body frame, if any).
    mode_kind, mode_label : list of str, optional
        Per-mode kind and label (default "given", "mode k").
    material : (E, nu, rho), optional
        Pa, -, kg/m^3; stored for reference.

    Returns
    -------
    ReducedBody

    Raises
    ------
    ModelError
        Shapes that do not fit, non-symmetric matrices, ``M_ff`` not positive
        definite, ``K_ff`` not positive semi-definite, missing invariants; the
        message names the argument.
    MeshError
        Interfaces that do not fix a frame.

    Examples
    --------
    Two point masses on a spring, one mode:

    >>> import numpy as np
    >>> from flexmbd.fem import ReducedBody
    >>> x = [[0.0, 0, 0], [1.0, 0, 0]]
    >>> phi = np.array([[-0.5, 0, 0, 0.5, 0, 0]]).T      # stretch mode
    >>> M = np.kron(np.eye(2), np.eye(3))                 # 1 kg per node
    >>> K = 1e4 * np.kron([[1, -1], [-1, 1]], np.diag([1.0, 0, 0]))
    >>> rb = ReducedBody.from_matrices(x, phi, M, K, interfaces={"A": [0], "B": [1]})
    >>> round(float(rb.frequencies[0]), 4)                # sqrt(2 k / m) / 2 pi
    22.5079
    """
    owner = f"ReducedBody.from_matrices({name!r})"
    x = np.asarray(nodes, float)
    if x.ndim != 2 or x.shape[1] != 3 or len(x) == 0:
        raise ModelError(f"{owner}: nodes must have shape (n_nodes, 3), got {x.shape}")
    if not np.isfinite(x).all():
        raise ModelError(f"{owner}: nodes has non-finite coordinates")
    n = len(x)
    Phi = _as_modes(modes, n, owner)
    m = Phi.shape[1]
    M, mkind = _matrix("M", M, 3 * n, m, owner)
    K, kkind = _matrix("K", K, 3 * n, m, owner)
    inv = _invariants(Phi, x, M, mkind, K, kkind, invariants, nodal_mass, owner)
    M_ff, K_ff = inv["M_ff"], inv["K_ff"]
    _check_symmetric("M_ff", M_ff, owner)
    _check_symmetric("K_ff", K_ff, owner)
    _check_pd("the reduced mass M_ff", M_ff, owner)
    _check_pd("the reduced stiffness K_ff", K_ff, owner, semi=True)
    if damping is not None:
        D_ff = np.asarray(damping, float)
        if D_ff.shape != (m, m):
            raise ModelError(f"{owner}: damping has shape {D_ff.shape}, expected ({m}, {m})")
        _check_symmetric("damping", D_ff, owner)
        ab, z = np.zeros(2), np.zeros((0,))
    else:
        D_ff, ab, z = modal_damping(M_ff, K_ff, rayleigh, zeta)
    if "D_ff" in inv and damping is None and rayleigh is None and zeta is None:
        D_ff = inv["D_ff"]
    mass, c, J0 = float(inv["mass"]), inv["first_moment"], inv["second_moment"]
    I_o = np.trace(J0) * np.eye(3) - J0
    com = c / mass
    I_c = I_o - mass * (com @ com * np.eye(3) - np.outer(com, com))
    lam = sla.eigh(K_ff, M_ff, eigvals_only=True)
    # interfaces
    itfs = {}
    for nm, sel in (interfaces or {}).items():
        idx = np.asarray(sel, dtype=np.int64).ravel()
        if idx.size == 0 or idx.min() < 0 or idx.max() >= n:
            raise ModelError(f"{owner}: interface {nm!r} has node numbers outside 0..{n - 1}")
        kind = interface_kind[nm] if isinstance(interface_kind, dict) else interface_kind
        itfs[nm] = Interface(nm, idx, kind, x[idx], (origins or {}).get(nm))
    names = list(itfs)
    if reference and reference not in itfs:
        raise ModelError(
            f"{owner}: reference {reference!r} is not an interface; interfaces: {names}"
        )
    stress = np.zeros((0, 6, m)) if stress_modes is None else np.asarray(stress_modes, float)
    if stress.shape[0] and stress.shape != (n, 6, m):
        raise ModelError(f"{owner}: stress_modes has shape {stress.shape}, expected ({n}, 6, {m})")
    kinds = list(mode_kind) if mode_kind is not None else ["given"] * m
    labels = list(mode_label) if mode_label is not None else [f"mode {k + 1}" for k in range(m)]
    if len(kinds) != m or len(labels) != m:
        raise ModelError(f"{owner}: mode_kind and mode_label need {m} entries each")
    mat = np.asarray(material if material is not None else [np.nan] * 3, float)
    if mat.shape != (3,):
        raise ModelError(f"{owner}: material must be (E, nu, rho), got shape {mat.shape}")
    # contract: ReducedBody's keyword fields (as fem.reduce fills them, from the given
    # matrices here)
    return cls(
        name=name,
        strategy=strategy,
        frame=frame,
        support=support,
        reference=reference,
        cell_type=cell_type,
        material_name=material_name,
        material=mat,
        kg_convention="",
        nodes=x.copy(),
        cells=np.zeros((0,), int) if cells is None else np.asarray(cells),
        modes=Phi,
        mode_kind=kinds,
        mode_label=labels,
        mode_mix=[""] * m,
        frequencies=hz(lam),
        mode_frequencies=hz(np.diag(K_ff) / np.diag(M_ff)),
        mass=mass,
        first_moment=c,
        second_moment=J0,
        inertia_origin=I_o,
        com=com,
        inertia_com=I_c,
        St=inv["St"],
        Sij=inv["Sij"],
        Pij=inv["Pij"],
        M_ff=M_ff,
        K_ff=K_ff,
        D_ff=D_ff,
        damping=ab,
        zeta=z,
        **interface_fields(itfs, Phi),
        stress_modes=stress,
        kg_unit=np.zeros((0, m, m)),
        kg_names=[],
        notes=list(notes),
    )
