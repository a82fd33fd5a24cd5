"""Consistent unit systems of imported finite-element data, converted to SI.

Abaqus, Nastran and friends have no units: a deck is written in one consistent
system chosen by the engineer.  ``mm-t-s`` (mm, tonne, s; N, MPa, t/mm^3) is
the usual choice for mechanical parts, SI (m, kg, s; N, Pa, kg/m^3) the
other.  Every importer takes ``units=`` explicitly and converts to SI; a
material whose SI density, modulus or wave speed is outside the range of
engineering solids raises one `UnitsWarning` (:func:`check_magnitudes`, the
check `Material` runs too) that names the file and the likely system.

==========  ======  ======  =====  ========  ========  ===========
system      length  mass    time   force     stress    density
==========  ======  ======  =====  ========  ========  ===========
SI          m       kg      s      N         Pa        kg/m^3
mm-t-s      mm      t       s      N         MPa       t/mm^3
mm-kg-ms    mm      kg      ms     kN        GPa       kg/mm^3
mm-kg-s     mm      kg      s      mN        kPa       kg/mm^3
==========  ======  ======  =====  ========  ========  ===========
"""

from __future__ import annotations

import math
import warnings
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import MeshError, UnitsWarning

if TYPE_CHECKING:
    pass

__all__ = [
    "UnitSystem",
    "UnitsWarning",
    "unit_system",
    "UNIT_SYSTEMS",
    "check_magnitudes",
    "MAX_WAVE_SPEED",
]


@dataclass(frozen=True)
class UnitSystem:
    """A consistent unit system: SI value of one unit of length, mass and time."""

    name: str
    length: float  # m
    mass: float  # kg
    time: float  # s

    @property
    def force(self) -> float:
        """SI value (N) of one force unit."""
        return self.mass * self.length / self.time**2

    @property
    def stress(self) -> float:
        """SI value (Pa) of one stress unit."""
        return self.force / self.length**2

    @property
    def density(self) -> float:
        """SI value (kg/m^3) of one density unit."""
        return self.mass / self.length**3

    @property
    def stiffness(self) -> float:
        """SI value (N/m) of one translational stiffness-matrix unit (force/length)."""
        return self.force / self.length


UNIT_SYSTEMS = {
    "SI": UnitSystem("SI", 1.0, 1.0, 1.0),
    "mm-t-s": UnitSystem("mm-t-s", 1e-3, 1e3, 1.0),
    "mm-kg-ms": UnitSystem("mm-kg-ms", 1e-3, 1.0, 1e-3),
    "mm-kg-s": UnitSystem("mm-kg-s", 1e-3, 1.0, 1.0),
}
_ALIASES = {
    "si": "SI",
    "m-kg-s": "SI",
    "mks": "SI",
    "mm-t-s": "mm-t-s",
    "mm-ton-s": "mm-t-s",
    "n-mm-t": "mm-t-s",
    "mm-kg-ms": "mm-kg-ms",
    "mm-kg-s": "mm-kg-s",
}

# SI ranges of engineering solids (foams ... tungsten; gels ... diamond)
RHO_RANGE = (5.0, 2.5e4)  # kg/m^3
E_RANGE = (1e4, 1.5e12)  # Pa
# sqrt(E/rho) of the stiffest light solids (beryllium, diamond) is 1.2-1.3e4 m/s
MAX_WAVE_SPEED = 2.0e4  # m/s


def unit_system(units: str | UnitSystem, where: str = "import") -> UnitSystem:
    """The `UnitSystem` named ``units`` (or ``units`` itself); MeshError if unknown."""
    if isinstance(units, UnitSystem):
        return units
    key = _ALIASES.get(str(units).strip().lower().replace("_", "-").replace(" ", ""))
    if key is None:
        raise MeshError(
            f"{where}: unknown unit system {units!r}; use one of "
            f"{sorted(UNIT_SYSTEMS)} (the system the file was written in)"
        )
    return UNIT_SYSTEMS[key]


def _likely(rho_raw, E_raw):
    """Name of the unit system in which raw (file) values look like a real solid."""
    for name, us in UNIT_SYSTEMS.items():
        rho, E = rho_raw * us.density, E_raw * us.stress
        if RHO_RANGE[0] <= rho <= RHO_RANGE[1] and E_RANGE[0] <= E <= E_RANGE[1]:
            return name
    return None


def check_magnitudes(
    where: str, name: str, rho_si: float | None, E_si: float | None, units: str | UnitSystem = "SI"
) -> bool:
    """Warn (`UnitsWarning`) once if a material does not look like an engineering solid.

    The one plausibility check of material data, called by
    :class:`flexmbd.fem.Material` and (through
    :func:`~flexmbd.fem.material.material_from_file`) by every importer. Implausible:
    SI density outside `RHO_RANGE`, modulus outside `E_RANGE` or a wave speed
    ``sqrt(E/rho)`` above `MAX_WAVE_SPEED`.

    Parameters
    ----------
    where : str
        File (and line) or component the values come from, for the message.
    name : str
        Material name.
    rho_si, E_si : float
        Density (kg/m^3) and Young's modulus (Pa) after conversion; None if absent.
    units : str | UnitSystem
        The declared system the raw values were written in (``"SI"`` for values
        given directly); used to name the system the values fit instead.

    Returns
    -------
    bool
        True if the values look plausible (or were checked already, see
        :func:`~flexmbd.fem.material.material_from_file`).
    """
    if _CHECKED.get():
        return True
    units = unit_system(units, where)
    bad = []
    if rho_si is not None and not RHO_RANGE[0] <= rho_si <= RHO_RANGE[1]:
        bad.append(f"density {rho_si:.4g} kg/m^3")
    if E_si is not None and not E_RANGE[0] <= E_si <= E_RANGE[1]:
        bad.append(f"Young's modulus {E_si:.4g} Pa")
    c = (
        math.sqrt(E_si / rho_si)
        if rho_si is not None and E_si is not None and rho_si > 0 and E_si > 0
        else None
    )
    if c is not None and c > MAX_WAVE_SPEED:
        bad.append(f"wave speed sqrt(E/rho) {c:.4g} m/s (solids: at most about {MAX_WAVE_SPEED:g})")
    if not bad:
        return True
    hint = ""
    if c is not None:
        guess = _likely(rho_si / units.density, E_si / units.stress)
        if guess is not None and guess != units.name:
            hint = f"; the values fit units={guess!r} (E in {_STRESS[guess]})"
        if not any(b.startswith("wave speed") for b in bad):
            bad.append(f"wave speed sqrt(E/rho) {c:.4g} m/s (solids: ~50..18000)")
    warnings.warn(
        f"{where}: material {name!r} read with units={units.name!r} has "
        f"{', '.join(bad)}, outside the range of engineering solids{hint}; "
        "flexmbd works in SI (steel: E=2.1e11 Pa, rho=7850 kg/m^3): pass the "
        "unit system the values were written in",
        UnitsWarning,
        stacklevel=3,
    )
    return False


_STRESS = {"SI": "Pa", "mm-t-s": "MPa", "mm-kg-ms": "GPa", "mm-kg-s": "kPa"}
_CHECKED: ContextVar[bool] = ContextVar("flexmbd_units_checked", default=False)
