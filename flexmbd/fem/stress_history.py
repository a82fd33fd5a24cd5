"""Modal stress recovery over a run: stress/strain histories, envelopes, files for fatigue work.

``sigma(t) = Psi q(t)``: the body's stress modes ``Psi`` (nodal Voigt stress per
unit modal coordinate, `ReducedBody.stress_modes`) times the modal coordinate
history of a `flexmbd.results.Results`. Stresses are in the body frame (Pa),
Voigt order ``xx, yy, zz, yz, xz, xy``; strains follow from the body's linear
isotropic material, ``eps = ((1 + nu) sigma - nu tr(sigma) I) / E`` with
engineering shear strains ``gamma = tau / G`` (same order). Element values are
the mean of the element's nodal values (the stress modes are nodal, averaged over
the elements sharing a node).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MeshError

if TYPE_CHECKING:
    from typing import Any

    from .._typing import Array, ArrayLike, StrPath
    from ..results import Results

__all__ = ["stress_history", "StressHistory", "von_mises"]

COMPONENTS = ("sxx", "syy", "szz", "syz", "sxz", "sxy")
STRAINS = ("exx", "eyy", "ezz", "gyz", "gxz", "gxy")


def von_mises(s: ArrayLike) -> Array:
    """Von Mises equivalent stress of Voigt stresses ``s`` (..., 6) (normal components first)."""
    s = np.asarray(s, float)
    return np.sqrt(
        0.5
        * (
            (s[..., 0] - s[..., 1]) ** 2
            + (s[..., 1] - s[..., 2]) ** 2
            + (s[..., 2] - s[..., 0]) ** 2
        )
        + 3 * (s[..., 3:] ** 2).sum(-1)
    )


def _strain(s, E, nu):
    tr = s[..., :3].sum(-1, keepdims=True)
    e = np.empty_like(s)
    e[..., :3] = ((1 + nu) * s[..., :3] - nu * tr) / E
    e[..., 3:] = 2 * (1 + nu) / E * s[..., 3:]
    return e


class StressHistory:
    """Stress and strain histories at chosen locations of one flexible body.

    Attributes
    ----------
    t : (nt,) s
    locations : list of str
        ``"node 12"`` or ``"element 7"``.
    stress, strain : (nt, k, 6)
        Voigt stress (Pa) and strain (-, engineering shear) in body axes.
    von_mises : (nt, k) Pa
    modal : (nt, m)
        The modal coordinates used.
    """

    def __init__(
        self,
        t: Array,
        locations: list[Any],
        stress: Array,
        strain: Array | None,
        modal: Array,
        body: Any,
    ) -> None:
        self.t, self.locations = t, locations
        self.stress, self.strain, self.modal, self.body = stress, strain, modal, body
        self.von_mises = von_mises(stress)

    def __repr__(self):
        return (
            f"StressHistory({self.body.name!r}, {len(self.locations)} locations, "
            f"{len(self.t)} samples)"
        )

    def envelope(self) -> dict[str, dict[str, Any]]:
        """Per location and quantity (the six stresses and von Mises): max, min and when.

        Returns a dict ``quantity -> dict(max, t_max, min, t_min)`` of (k,) arrays
        (Pa and s; the first time of the extreme).
        """
        out = {}
        for name, v in list(zip(COMPONENTS, np.moveaxis(self.stress, 2, 0))) + [
            ("von_mises", self.von_mises)
        ]:
            imax, imin = v.argmax(0), v.argmin(0)
            k = np.arange(v.shape[1])
            out[name] = {
                "max": v[imax, k],
                "t_max": self.t[imax],
                "min": v[imin, k],
                "t_min": self.t[imin],
            }
        return out

    def table(self, strain: bool = True) -> tuple[list[str], Array]:
        """(header, data (nt, columns)): ``t`` then, per location, stresses, von Mises and
        (with ``strain``) strains."""
        cols, data = ["t"], [self.t[:, None]]
        for j, loc in enumerate(self.locations):
            tag = loc.replace(" ", "")
            cols += [f"{tag}.{c}" for c in COMPONENTS] + [f"{tag}.von_mises"]
            data += [self.stress[:, j], self.von_mises[:, j, None]]
            if strain:
                cols += [f"{tag}.{c}" for c in STRAINS]
                data.append(self.strain[:, j])
        return cols, np.hstack(data)

    def to_csv(self, path: StrPath, strain: bool = True) -> Path:
        """Write the histories as CSV (one row per sample; header from `table`); full precision.
        Returns the path."""
        cols, data = self.table(strain)
        np.savetxt(path, data, delimiter=",", header=",".join(cols), comments="", fmt="%.17g")
        return Path(path)

    def to_hdf5(self, path: StrPath) -> Path:
        """Write ``t, locations, stress, strain, von_mises, modal`` and ``envelope/<quantity>/
        {max,t_max,min,t_min}`` to an HDF5 file (needs h5py). Returns the path."""
        try:
            import h5py
        except ImportError as err:  # pragma: no cover - optional extra
            raise MeshError("HDF5 files need h5py: pip install 'flexmbd[io]'") from err
        with h5py.File(path, "w") as f:
            f.attrs["body"] = self.body.name
            f.attrs["units"] = "stress Pa, strain -, time s; Voigt xx yy zz yz xz xy, body axes"
            for k in ("t", "stress", "strain", "von_mises", "modal"):
                f.create_dataset(k, data=getattr(self, k))
            f.create_dataset(
                "locations", data=np.array(self.locations, dtype=object), dtype=h5py.string_dtype()
            )
            g = f.create_group("envelope")
            for q, d in self.envelope().items():
                gq = g.create_group(q)
                for k, v in d.items():
                    gq.create_dataset(k, data=v)
        return Path(path)

    def to_vtk(self, prefix: StrPath, stride: int = 1) -> list[Path]:
        """Point fields on the whole mesh: ``PREFIX_0000.vtu`` ... (``stress`` (n, 6) and
        ``von_mises``, every ``stride``-th sample), a ``PREFIX.pvd`` collection with the
        times, and ``PREFIX_envelope.vtu`` (max / min von Mises and the time of the
        maximum at every node, whole run). Returns the list of files written."""
        import meshio

        rb = self.body
        if rb.cells.size == 0 or not rb.cell_type or rb.cell_type == "beam":
            raise MeshError(
                f"body {rb.name!r} has no volume mesh to write VTK fields on; use to_csv or to_hdf5"
            )
        prefix = Path(prefix)
        prefix.parent.mkdir(parents=True, exist_ok=True)
        cells = [(rb.cell_type, np.asarray(rb.cells))]
        S = np.asarray(rb.stress_modes, float)
        files, entries = [], []
        vmax = np.full(rb.n_nodes, -np.inf)
        vmin = np.full(rb.n_nodes, np.inf)
        tmax = np.zeros(rb.n_nodes)
        for i in range(len(self.t)):
            s = S @ self.modal[i]
            vm = von_mises(s)
            up = vm > vmax
            vmax[up], tmax[up] = vm[up], self.t[i]
            vmin = np.minimum(vmin, vm)
            if i % stride:
                continue
            name = prefix.with_name(f"{prefix.name}_{len(files):04d}.vtu")
            meshio.write(
                name, meshio.Mesh(rb.nodes, cells, point_data={"stress": s, "von_mises": vm})
            )
            files.append(name)
            entries.append(f'    <DataSet timestep="{self.t[i]:.17g}" file="{name.name}"/>')
        env = prefix.with_name(f"{prefix.name}_envelope.vtu")
        meshio.write(
            env,
            meshio.Mesh(
                rb.nodes,
                cells,
                point_data={"von_mises_max": vmax, "von_mises_min": vmin, "t_von_mises_max": tmax},
            ),
        )
        pvd = prefix.with_name(f"{prefix.name}.pvd")
        pvd.write_text(
            '<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1">\n'
            "  <Collection>\n" + "\n".join(entries) + "\n  </Collection>\n"
            "</VTKFile>\n"
        )
        return files + [env, pvd]


def stress_history(
    results: Results,
    body: Any,
    nodes: ArrayLike | None = None,
    elements: ArrayLike | None = None,
    name: str | None = None,
) -> StressHistory:
    """Stress/strain histories of a flexible body over a run (modal stress recovery).

    Parameters
    ----------
    results : flexmbd.results.Results
        A run holding the body's modal coordinates (``results.body(name).modal``).
    body : ReducedBody or FlexibleBody
        The body (its ``reduced`` body is used for a model component); it must have
        stress modes.
    nodes, elements : iterable of int, optional
        Node numbers and/or element numbers (rows of ``cells``) to report; default
        every node.
    name : str, optional
        The body's name in ``results`` (default the component's or the reduced
        body's name).

    Returns
    -------
    StressHistory
        ``.stress``/``.strain``/``.von_mises`` histories, ``.envelope()``,
        ``.to_csv()``, ``.to_hdf5()``, ``.to_vtk()``.
    """
    rb = getattr(body, "reduced", body)
    label = name or getattr(body, "name", None) or rb.name
    if np.asarray(rb.stress_modes).shape[0] == 0:
        raise MeshError(f"body {label!r} has no stress modes; reduce with stress_modes=True")
    try:
        Q = np.asarray(results.body(label).modal, float)
    except Exception as exc:
        raise MeshError(
            f"stress_history: the results hold no modal coordinates of body "
            f"{label!r} ({exc}); pass name= with the body's name in the model"
        ) from None
    if Q.ndim != 2 or Q.shape[1] != rb.n_modes:
        raise MeshError(
            f"stress_history: body {label!r} has {rb.n_modes} modes but the results "
            f"hold {Q.shape[-1]} modal coordinates"
        )
    S = np.asarray(rb.stress_modes, float)
    locs, rows = [], []
    if nodes is None and elements is None:
        nodes = range(rb.n_nodes)
    for i in [] if nodes is None else np.asarray(list(nodes), dtype=np.int64):
        if not 0 <= i < rb.n_nodes:
            raise MeshError(
                f"stress_history: node {i} is not a node of body {label!r} (0..{rb.n_nodes - 1})"
            )
        locs.append(f"node {i}")
        rows.append(S[i])
    cells = np.asarray(rb.cells)
    for e in [] if elements is None else np.asarray(list(elements), dtype=np.int64):
        if cells.ndim != 2 or not 0 <= e < len(cells):
            raise MeshError(
                f"stress_history: element {e} is not an element of body {label!r} "
                f"({len(cells) if cells.ndim == 2 else 0} elements)"
            )
        locs.append(f"element {e}")
        rows.append(S[cells[e]].mean(axis=0))
    Sk = np.stack(rows)  # (k, 6, m)
    stress = np.einsum("kcm,tm->tkc", Sk, Q)
    E, nu = float(rb.material[0]), float(rb.material[1])
    strain = _strain(stress, E, nu) if np.isfinite(E) and E > 0 else np.full_like(stress, np.nan)
    rb_named = rb if rb.name == label else _Named(rb, label)
    return StressHistory(np.asarray(results.t, float), locs, stress, strain, Q, rb_named)


class _Named:
    """A reduced body seen under the name it has in the results."""

    def __init__(self, rb, name):
        self._rb, self.name = rb, name

    def __getattr__(self, k):
        return getattr(self._rb, k)
