"""Isotropic linear-elastic material with density (SI units)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MeshError
from .units import _CHECKED, MAX_WAVE_SPEED, UnitSystem, check_magnitudes, unit_system  # noqa: F401

if TYPE_CHECKING:
    from typing import Any

    from .._typing import Array

__all__ = ["Material", "material_from_file"]


@dataclass(frozen=True)
class Material:
    """Isotropic linear-elastic material.

    Parameters
    ----------
    E : float
        Young's modulus in Pa (> 0).
    nu : float
        Poisson's ratio, -1 < nu < 0.5.
    rho : float
        Density in kg/m^3 (> 0).
    name : str
        Label used in messages and in saved files.

    Examples
    --------
    >>> steel = Material(E=2.1e11, nu=0.3, rho=7850, name="steel")
    >>> round(steel.mu / 1e9, 2)
    80.77
    """

    E: float
    nu: float
    rho: float
    name: str = "material"

    def __post_init__(self):
        for key in ("E", "nu", "rho"):
            value = getattr(self, key)
            if isinstance(value, (bool, np.bool_)):
                raise MeshError(f"Material {self.name!r}: {key}={value!r} is not a number")
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise MeshError(
                    f"Material {self.name!r}: {key}={value!r} is not a number; "
                    "give E in Pa, nu dimensionless and rho in kg/m^3"
                ) from None
            if not np.isfinite(value):
                raise MeshError(f"Material {self.name!r}: {key}={value} is not finite")
            object.__setattr__(self, key, value)
        if self.E <= 0:
            raise MeshError(f"Material {self.name!r}: Young's modulus E={self.E} must be > 0 (Pa)")
        if not -1.0 < self.nu < 0.5:
            raise MeshError(
                f"Material {self.name!r}: Poisson's ratio nu={self.nu} must satisfy -1 < nu < 0.5 "
                "(0.5 is incompressible and makes the stiffness singular)"
            )
        if self.rho <= 0:
            raise MeshError(
                f"Material {self.name!r}: density rho={self.rho} must be > 0 (kg/m^3); "
                "did you give it in t/mm^3 or g/cm^3?"
            )
        check_magnitudes(f"Material {self.name!r}", self.name, self.rho, self.E)

    @property
    def lam(self) -> float:
        """First Lamé parameter (Pa)."""
        return self.E * self.nu / ((1.0 + self.nu) * (1.0 - 2.0 * self.nu))

    @property
    def mu(self) -> float:
        """Shear modulus (Pa)."""
        return self.E / (2.0 * (1.0 + self.nu))

    def elasticity_matrix(self) -> Array:
        """6x6 Voigt matrix, order (xx, yy, zz, yz, xz, xy), engineering shear strains."""
        lam, mu = self.lam, self.mu
        C = np.zeros((6, 6))
        C[:3, :3] = lam
        C[[0, 1, 2], [0, 1, 2]] += 2 * mu
        C[[3, 4, 5], [3, 4, 5]] = mu
        return C

    def to_dict(self) -> dict[str, Any]:
        return {"E": self.E, "nu": self.nu, "rho": self.rho, "name": self.name}


def check_material(material, where="reduce"):
    """Return ``material`` or raise a MeshError naming the call that needs one."""
    if material is None:
        raise MeshError(
            f"{where}: no material given; pass material=fm.Material(E=..., nu=..., rho=...)"
        )
    if not isinstance(material, Material):
        raise MeshError(
            f"{where}: material must be a flexmbd Material, got {type(material).__name__}; "
            "use fm.Material(E=2.1e11, nu=0.3, rho=7850)"
        )
    return material


def material_from_file(
    where: str, name: str, E_raw: float, nu: float, rho_raw: float, units: str | UnitSystem = "SI"
) -> Material:
    """The `Material` of raw file values (``units``) converted to SI, checked once.

    Every importer builds its materials here: :func:`check_magnitudes` runs once,
    naming the file and line (``where``) and the unit system the values fit, and the
    `Material` constructor does not repeat the check, so a deck in wrong units gives
    one `UnitsWarning` per material.

    Parameters
    ----------
    where : str
        ``path:line`` of the material definition.
    name : str
        Material name.
    E_raw, nu, rho_raw : float
        Young's modulus (stress unit of ``units``), Poisson's ratio and density
        (density unit of ``units``) as written in the file.
    units : str | UnitSystem
        The system the file is written in.
    """
    us = unit_system(units, where)
    E, rho = E_raw * us.stress, rho_raw * us.density
    check_magnitudes(where, name, rho, E, us)
    token = _CHECKED.set(True)
    try:
        return Material(E=E, nu=nu, rho=rho, name=name)
    finally:
        _CHECKED.reset(token)
