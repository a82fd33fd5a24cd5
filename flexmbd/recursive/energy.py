"""Energy histories of a run in joint coordinates (recursive formulation).

The fields and definitions of :class:`flexmbd.absolute.energy.EnergyMeter`, so that the
two formulations report the same numbers for the same motion: ``kinetic``; ``gravity``
(uniform gravity); ``spring`` (force elements' potentials, e.g. SDA springs
``k (l - l0)^2 / 2``, plus the strain energy ``q_f^T K q_f / 2`` of flexible bodies);
``potential = gravity + spring``; ``total = kinetic + potential``; the works of dampers,
actuators (SDA actuators, JointForce elements, applied joint forces ``tau``) and other
loads accumulated by the trapezoidal rule over the samples, and the balance's remainder
``numerical_dissipation`` (as the absolute integrators do over their steps). With force
elements on flexible bodies the works are not computed (``None`` in
:class:`flexmbd.results.Energies`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._typing import Array

__all__ = ["energy_histories"]

_POWERS = ("p_damper", "p_actuator", "p_external")


def energy_histories(
    system: Any, t: Array, q: Array, qd: Array, tau: Array | None = None, rows: Any = None
) -> dict[str, Array]:
    """Energies (J) and works (J, from ``t[0]``) of the samples ``t`` (nt,), ``q``
    (nt, nq), ``qd`` (nt, nv), applied joint forces ``tau`` (nt, nv) or None.

    ``system`` gives ``kinetic_energy(q, qd)``, ``potential_energies(q, t)`` and
    ``powers(q, qd, t, tau)`` (a :class:`~flexmbd.recursive.system.RecursiveSystem` or a
    closed-loop system over one; ``energy_samples(t, q, qd, tau)``, when the system
    has it and it does not return None, gives all of them at once; ``rows``: the
    samples' energies the compiled RK4 steps wrote, passed on to it). Returns
    ``kinetic``, ``gravity``, ``spring``, ``potential``, ``total`` and, when the powers
    are known, ``damper_work``, ``actuator_work``, ``external_work`` (trapezoidal rule
    over the samples) and
    ``numerical_dissipation = E(0) + W_actuator + W_external - W_damper - E(t)``.
    """
    nt = len(t)
    batch = getattr(system, "energy_samples", None)
    if batch is not None and nt:
        batch = batch(t, q, qd, tau) if rows is None else batch(t, q, qd, tau, rows=rows)
    else:
        batch = None
    if batch is not None:  # one kinematics pass per sample for all of them
        ke, grav, spring = batch["kinetic"], batch["gravity"], batch["spring"]
    else:
        ke = np.array([system.kinetic_energy(q[i], qd[i]) for i in range(nt)], dtype=float)
        parts = [system.potential_energies(q[i], t[i]) for i in range(nt)]
        grav = np.array([p["gravity"] for p in parts], dtype=float)
        spring = np.array([p["spring"] for p in parts], dtype=float)
    pe = grav + spring
    out = {"kinetic": ke, "gravity": grav, "spring": spring, "potential": pe, "total": ke + pe}
    if not nt or not hasattr(system, "powers"):
        return out
    if batch is None:
        each = [
            system.powers(q[i], qd[i], t[i], None if tau is None else tau[i]) for i in range(nt)
        ]
        if any(p is None for p in each):
            return out
        batch = {k: np.array([p[k] for p in each], dtype=float) for k in _POWERS}
    h = np.diff(np.asarray(t, float))
    with np.errstate(invalid="ignore", over="ignore"):  # NaN samples of a failed run
        for key, name in zip(_POWERS, ("damper_work", "actuator_work", "external_work")):
            p = batch[key]
            out[name] = np.concatenate([[0.0], np.cumsum(0.5 * h * (p[1:] + p[:-1]))])
        out["numerical_dissipation"] = (
            out["total"][0]
            + out["actuator_work"]
            + out["external_work"]
            - out["damper_work"]
            - out["total"]
        )
    return out
