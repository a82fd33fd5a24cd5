"""`reduce`: mesh + material + strategy -> `ReducedBody`."""

from __future__ import annotations

import os
import time
import warnings
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as sla

from ..errors import MeshError, UnitsWarning
from ..progress import progress as _progress
from ._threads import with_fem_threads
from .eigen import check_backend
from .from_matrices import hz as _hz
from .from_matrices import interface_fields, modal_damping
from .geometric import unit_geometric_stiffness
from .invariants import inertia_invariants
from .model import FEModel
from .reduced import ReducedBody
from .strategies import as_strategy, rayleigh_ritz, resolve_auto_frame

if TYPE_CHECKING:
    from typing import Any

    from .._typing import ArrayLike
    from .material import Material

__all__ = ["reduce", "finish_modeset"]


# Largest plausible extent of one flexible body with a steel-like material (m): beyond
# it a mesh in millimetres (1000x too large) is the likelier explanation.
MAX_PLAUSIBLE_SIZE = 100.0


def check_units(fe, material):
    """Warn (`UnitsWarning`) if the mesh size and the SI material do not go together.

    flexmbd works in SI (m, kg, s, Pa).  A mesh whose bounding box exceeds
    `MAX_PLAUSIBLE_SIZE` metres with a solid's SI density (> 100 kg/m^3) is most
    likely in millimetres: its frequencies come out 1000x too low.  The check warns
    and goes on; scale such a mesh first (``meshio_mesh.points *= 1e-3``, or
    ``skfem_mesh.scaled(1e-3)``).
    """
    lo, hi = fe.bounding_box()
    extent = float(np.max(hi - lo))
    if extent > MAX_PLAUSIBLE_SIZE and material.rho > 100.0:
        warnings.warn(
            f"mesh {fe.source!r} is {extent:.4g} m across (bounding box "
            f"{np.round(lo, 4).tolist()} .. {np.round(hi, 4).tolist()}) with material "
            f"{material.name!r} (rho={material.rho:g} kg/m^3, E={material.E:g} Pa) in SI "
            "units; if the mesh is in millimetres its frequencies come out 1000x too low: "
            "scale the coordinates to metres first (meshio: mesh.points *= 1e-3; scikit-fem: "
            "mesh.scaled(1e-3))",
            UnitsWarning,
            stacklevel=3,
        )


def _check_damping(zeta, rayleigh):
    """Validated (zeta array or None, rayleigh (2,) or None); MeshError naming the input."""
    if zeta is not None:
        try:
            z = np.asarray(zeta, float)
        except (TypeError, ValueError):
            raise MeshError(f"reduce: zeta={zeta!r} must be damping ratios (numbers)") from None
        if z.ndim > 1 or z.size == 0 or not np.isfinite(z).all() or (z < 0).any():
            raise MeshError(
                f"reduce: zeta={zeta!r} must be finite damping ratios >= 0 (one "
                "for all modes or one per mode), e.g. zeta=0.02"
            )
        zeta = z
    if rayleigh is not None:
        try:
            r = np.asarray(rayleigh, float)
        except (TypeError, ValueError):
            r = np.zeros(0)
        if r.shape != (2,) or not np.isfinite(r).all() or (r < 0).any():
            raise MeshError(
                f"reduce: rayleigh={rayleigh!r} must be (alpha, beta), finite and "
                ">= 0: D = alpha M + beta K (alpha in 1/s, beta in s)"
            )
        rayleigh = r
    return zeta, rayleigh


def finish_modeset(model: FEModel, ms: Any, orthonormalize: bool) -> Any:
    """Optionally M-orthonormalize and re-diagonalize a mode set in place (review eq. 4-6)."""
    if not orthonormalize:
        return ms
    groups = list(dict.fromkeys(ms.kinds))
    Mr = ms.Phi.T @ (model.M @ ms.Phi)
    lam, Phi, X = rayleigh_ritz(ms.Phi, model.K, model.M)
    # composition: M-weighted share of each original kind in each new mode
    share = X * (Mr @ X)  # (old, new), columns sum to 1
    kinds, mix = [], []
    for j in range(X.shape[1]):
        parts = {
            g: float(sum(share[i, j] for i in range(len(ms.kinds)) if ms.kinds[i] == g))
            for g in groups
        }
        g = max(parts, key=lambda k: parts[k])
        kinds.append(g)
        mix.append(
            ", ".join(f"{k} {100 * v:.0f}%" for k, v in parts.items() if abs(v) >= 0.005)
            if len(groups) > 1
            else ""
        )
    ms.Phi = Phi
    ms.kinds = kinds
    ms.labels = [f"mode {j + 1}" for j in range(Phi.shape[1])]
    ms.mix = mix
    ms.notes.append(
        "orthonormalized: modes M-orthonormal and re-diagonalized by the reduced "
        "eigenproblem (review eq. 4-6)"
    )
    return ms


@with_fem_threads
def reduce(
    mesh: Any,
    material: Material | None = None,
    strategy: Any | None = None,
    *,
    interfaces: Any | None = None,
    interface_kind: str = "rigid",
    orthonormalize: bool | None = None,
    lumped: bool = False,
    rayleigh: tuple[float, float] | None = None,
    zeta: float | ArrayLike | None = None,
    stress_modes: bool = True,
    geometric: bool = True,
    name: str | None = None,
    backend: str | None = "auto",
    model: FEModel | None = None,
    progress: bool | None = None,
    M: Any | None = None,
    K: Any | None = None,
) -> ReducedBody:
    """Reduce a finite-element body to a few modes.

    Parameters
    ----------
    mesh : path | meshio.Mesh | skfem mesh | FEMesh
    material : Material or (M, K)
        The material flexmbd assembles the matrices with, or the mass (kg) and
        stiffness (N/m) matrices themselves (sparse, 3n x 3n, node-interleaved
        order of the mesh nodes), e.g. read from another FE code; see also ``M``, ``K``.
    strategy : NormalModes | StaticCorrection | CraigBampton | RitzVectors
        A Craig-Bampton ``frame="auto"`` (its default) becomes mean axes when
        ``geometric`` stiffness is computed and the interface frame otherwise
        (`flexmbd.fem.strategies.resolve_auto_frame`; the reason is in the notes).
    M, K : sparse (3n, 3n), optional
        Given mass and stiffness (instead of assembling them); ``material`` may
        then still be given for stress modes and geometric stiffness, which are
        skipped without it (the matrices do not define stresses).  Invariants
        come from the given M (`FEModel.from_matrices`).
    interfaces : dict name -> selector, optional
        Interfaces for mode shapes at frames and unit interface loads (Craig-Bampton
        brings its own; these are added).
    interface_kind : "rigid" | "distributing" | "nodes"
        Kind of the extra ``interfaces`` (frame-motion read-out uses the
        least-squares rigid fit for all kinds).
    orthonormalize : bool, optional
        Mass-normalize and re-diagonalize the basis; default from the strategy.
    lumped : bool
        Use the HRZ-lumped mass.
    rayleigh : (alpha, beta), optional
        Modal damping ``D_ff = alpha M_ff + beta K_ff``.
    zeta : float or (m,), optional
        Modal damping ratios of the reduced eigenmodes (overrides ``rayleigh``).
    stress_modes, geometric : bool
        Compute stress modes and unit geometric-stiffness matrices.
    model : FEModel, optional
        Reuse an assembled model (mesh and material are then ignored).
    progress : bool or None
        Progress bar over the stages (assembly, modes, invariants, stress modes,
        geometric stiffness); None: automatic (:mod:`flexmbd.progress`; on a terminal,
        once the reduction lasts a second; ``FLEXMBD_PROGRESS=0`` silences it).

    Returns
    -------
    ReducedBody
    """
    if strategy is None:
        raise MeshError("reduce: no strategy given; e.g. strategy=fm.NormalModes(8)")
    strategy = as_strategy(strategy)
    zeta, rayleigh = _check_damping(zeta, rayleigh)
    check_backend(backend)
    label = name or (
        os.path.basename(os.fspath(mesh)) if isinstance(mesh, (str, os.PathLike)) else "body"
    )
    auto = progress is None and os.environ.get("FLEXMBD_PROGRESS") is None
    with _progress(
        total=5, desc=f"reduce {label}", enabled=progress, unit="stage", delay=1.0 if auto else 0.0
    ) as bar:
        bar.set_description(f"reduce {label}: assembly")
        if isinstance(material, (tuple, list)) and len(material) == 2 and M is None:
            (M, K), material = material, None
        if (M is None) != (K is None):
            raise MeshError("reduce: give both M and K (mass and stiffness matrices)")
        if model is None and M is not None:
            model = FEModel.from_matrices(mesh, M, K, material=material, backend=backend)
        elif model is None:
            model = FEModel(mesh, material, lumped=lumped, backend=backend)
        if model.assembler is None and (stress_modes or geometric):
            stress_modes = geometric = False
            skipped = (
                "stress modes and geometric stiffness skipped: the body was reduced "
                "from given matrices without a material"
            )
        else:
            skipped = None
        if model.material is not None:
            check_units(model.fe, model.material)
        bar.update(1)
        bar.set_description(f"reduce {label}: modes")
        timings = dict(model.timings)
        t0 = time.perf_counter()
        extra = model.interfaces(interfaces, interface_kind) if interfaces else {}
        strategy = resolve_auto_frame(strategy, geometric)
        ms = strategy.build(model, extra)
        ortho = strategy.orthonormalize if orthonormalize is None else orthonormalize
        finish_modeset(model, ms, ortho)
        timings["modes"] = time.perf_counter() - t0
        timings.update({f"modes.{k}": v for k, v in getattr(ms, "timings", {}).items()})
        Phi = ms.Phi
        bar.update(1)
        bar.set_description(f"reduce {label}: invariants")
        t0 = time.perf_counter()
        inv = inertia_invariants(model.Ms, model.K, model.fe.nodes, Phi)
        M_ff, K_ff = inv["M_ff"], inv["K_ff"]
        lam_r = sla.eigh(K_ff, M_ff, eigvals_only=True)
        mode_f = _hz(np.diag(K_ff) / np.diag(M_ff))
        m = Phi.shape[1]
        if zeta is not None and zeta.size not in (1, m):
            raise MeshError(
                f"reduce: zeta has {zeta.size} damping ratios; the body has {m} "
                "modes: give one ratio for all or one per mode"
            )
        D_ff, damping, zeta_arr = modal_damping(M_ff, K_ff, rayleigh, zeta)
        itf_fields = interface_fields(ms.interfaces, Phi)
        timings["invariants"] = time.perf_counter() - t0
        bar.update(1)
        bar.set_description(f"reduce {label}: stress modes")
        t0 = time.perf_counter()
        stress = model.assembler.nodal_stress(Phi) if stress_modes else np.zeros((0, 6, m))
        timings["stress_modes"] = time.perf_counter() - t0
        bar.update(1)
        bar.set_description(f"reduce {label}: geometric stiffness")
        t0 = time.perf_counter()
        if geometric:
            kg_tim = {}
            kg, kg_names, _ = unit_geometric_stiffness(model, ms, kg_tim)
            timings.update({f"geometric.{k}": v for k, v in kg_tim.items()})
            conv = (
                "clamped at the body frame's support (reference interface or fixed nodes); "
                "reference-interface wrenches are its reactions"
                if ms.support == "clamped"
                else "inertia relief on the free body (exact for loads in equilibrium)"
            )
        else:
            kg, kg_names, conv = np.zeros((0, m, m)), [], ""
        timings["geometric"] = time.perf_counter() - t0
        bar.update(1)
        mat = model.material
        fe = model.fe
        notes = list(ms.notes) + ([skipped] if skipped else [])
        if mat is None:
            mat_name, mat_vals = "given matrices", [np.nan, np.nan, np.nan]
        else:
            mat_name, mat_vals = mat.name, [mat.E, mat.nu, mat.rho]
        # contract: ReducedBody's keyword fields (as from_matrices fills them, from the
        # FE model here)
        return ReducedBody(
            name=name or str(fe.source),
            strategy=ms.strategy,
            mode_count=ms.description,
            frame=ms.frame,
            support=ms.support,
            reference=ms.reference or "",
            cell_type=fe.cell_type,
            material_name=mat_name,
            kg_convention=conv,
            material=mat_vals,
            nodes=fe.nodes.copy(),
            cells=fe.meshio_cells(),
            modes=Phi,
            mode_kind=ms.kinds,
            mode_label=ms.labels,
            mode_mix=ms.mix,
            frequencies=_hz(lam_r),
            mode_frequencies=mode_f,
            mass=inv["mass"],
            first_moment=inv["first_moment"],
            second_moment=inv["second_moment"],
            inertia_origin=inv["inertia_origin"],
            com=inv["com"],
            inertia_com=inv["inertia_com"],
            St=inv["St"],
            Sij=inv["Sij"],
            Pij=inv["Pij"],
            M_ff=M_ff,
            K_ff=K_ff,
            D_ff=D_ff,
            damping=damping,
            zeta=zeta_arr,
            **itf_fields,
            stress_modes=stress,
            kg_unit=kg,
            kg_names=kg_names,
            notes=notes,
            timings=timings,
        )
