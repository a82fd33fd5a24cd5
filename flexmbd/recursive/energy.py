"""Energy histories of a run in joint coordinates (recursive formulation).

The fields and definitions of :class:`flexmbd.absolute.energy.EnergyMeter`, so that the
two formulations report the same numbers for the same motion: ``kinetic``; ``gravity``
(uniform gravity); ``spring`` (force elements' potentials, e.g. SDA springs
``k (l - l0)^2 / 2``, plus the strain energy ``q_f^T K q_f / 2`` of flexible bodies);
``potential = gravity + spring``; ``total = kinetic + potential``. The works of dampers,
actuators and external loads are not accumulated in this formulation (``None`` in
:class:`flexmbd.results.Energies`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._typing import Array

__all__ = ["energy_histories"]


def energy_histories(system: Any, t: Array, q: Array, qd: Array) -> dict[str, Array]:
    """Energies (J) of the samples ``t`` (nt,), ``q`` (nt, nq), ``qd`` (nt, nv).

    ``system`` gives ``kinetic_energy(q, qd)`` and ``potential_energies(q, t)`` (a
    :class:`~flexmbd.recursive.system.RecursiveSystem` or a closed-loop system over
    one). Returns ``{"kinetic", "gravity", "spring", "potential", "total"}`` of (nt,)
    arrays.
    """
    nt = len(t)
    ke = np.array([system.kinetic_energy(q[i], qd[i]) for i in range(nt)], dtype=float)
    parts = [system.potential_energies(q[i], t[i]) for i in range(nt)]
    grav = np.array([p["gravity"] for p in parts], dtype=float)
    spring = np.array([p["spring"] for p in parts], dtype=float)
    pe = grav + spring
    return {"kinetic": ke, "gravity": grav, "spring": spring, "potential": pe,
            "total": ke + pe}
