"""Energy bookkeeping: kinetic and potential energies, work of dampers, actuators, loads.

Instantaneous quantities at a state (:meth:`EnergyMeter.state`):

* ``kinetic``: sum over bodies of ``m |v_c|^2 / 2 + w'^T J_c w' / 2`` (flexible bodies:
  ``u^T M(q_f) u / 2`` with their body-frame speeds);
* ``gravity``: potential of :class:`~flexmbd.Gravity` elements;
* ``spring``: potential of every other element (SDA springs ``k (l - l0)^2 / 2``) plus
  the strain energy ``q_f^T K q_f / 2`` of the flexible bodies;
* powers: ``damper`` (dissipated by SDA dampers, ``c ldot^2 >= 0``, and by modal damping
  ``dq_f^T D dq_f``), ``actuator``
  (delivered by SDA actuators ``-f_a ldot`` and by joint forces ``tau . v``) and
  ``external`` (delivered by point forces/torques and any other element:
  ``sum_b F_b . V_b``).

The integrators accumulate the works with the trapezoidal rule over each step and
close the balance with the integrator's own numerical dissipation::

    numerical_dissipation(t) = E(0) + W_actuator + W_external - W_damper - E(t),
    E = kinetic + gravity + spring

(it also contains the O(h^2) quadrature error of the works, which vanishes for
undamped, unforced systems; for Newmark ``beta = 1/4, gamma = 1/2`` on linear
problems it is zero).
"""

import numpy as np

from ..model.forces import Gravity
from .forces import BodyState

__all__ = ["EnergyMeter"]


class EnergyMeter:
    """Evaluates energies and powers of an :class:`~flexmbd.absolute.system.AbsoluteSystem`."""

    KEYS = (
        "kinetic",
        "gravity",
        "spring",
        "potential",
        "total",
        "damper_work",
        "actuator_work",
        "external_work",
        "numerical_dissipation",
    )

    def __init__(self, system):
        self.system = system

    def state(self, q, qd, t):
        """Dict of energies (J) and powers (W) at one state."""
        s = self.system
        ft = s.force_terms
        st = BodyState(s.index, q, qd)
        out = {
            "kinetic": s.kinetic_energy(q, qd),
            "gravity": 0.0,
            "spring": 0.0,
            "p_damper": 0.0,
            "p_actuator": 0.0,
            "p_external": 0.0,
        }
        if ft.gravity is not None:
            out["gravity"] += ft.gravity.potential(st)
        fl = s.flexible
        if fl.flex:
            q = np.asarray(q, float)
            qd = np.asarray(qd, float)
            if ft.gravity_elements:
                out["gravity"] += fl.gravity_potential(q, s.gravity_vector())
            out["spring"] += fl.strain_energy(q)
            out["p_damper"] += fl.damping_power(qd)
        if ft.sda_batch is not None:
            sp_, pd, pa = ft.sda_batch.energies(t, st)
            out["spring"] += sp_
            out["p_damper"] += pd
            out["p_actuator"] += pa
        for fs in ft.flex_sda:
            sp_, pd, pa = fs.energies(t, np.asarray(q, float), np.asarray(qd, float))
            out["spring"] += sp_
            out["p_damper"] += pd
            out["p_actuator"] += pa
        for f in ft.other:
            if isinstance(f, Gravity):
                out["gravity"] += f.potential(t, st)
            elif hasattr(f, "damper_power"):
                out["spring"] += f.potential(t, st)
                out["p_damper"] += f.damper_power(t, st)
                out["p_actuator"] += f.actuator_power(t, st)
            else:
                out["spring"] += f.potential(t, st)
                for body, F in f.wrenches(t, st):
                    w, v = st.twist(body)
                    out["p_external"] += float(F[:3] @ w + F[3:] @ v)
        for jm in ft.joint_forces:
            out["p_actuator"] += jm.power(t, st)
        for fp in ft.flex_point_forces:
            out["p_external"] += fp.power(t, np.asarray(q, float), np.asarray(qd, float))
        out["potential"] = out["gravity"] + out["spring"]
        out["total"] = out["kinetic"] + out["potential"]
        return out


class EnergyAccumulator:
    """Trapezoidal accumulation of works over a simulation, into (nt,) arrays."""

    def __init__(self, meter, nt):
        self.meter = meter
        self.arr = {k: np.zeros(nt) for k in EnergyMeter.KEYS}
        self.prev = None
        self.E0 = None
        self.W = {"damper_work": 0.0, "actuator_work": 0.0, "external_work": 0.0}

    def record(self, i, q, qd, t, dt):
        s = self.meter.state(q, qd, t)
        if self.prev is not None:
            p = self.prev
            self.W["damper_work"] += 0.5 * dt * (p["p_damper"] + s["p_damper"])
            self.W["actuator_work"] += 0.5 * dt * (p["p_actuator"] + s["p_actuator"])
            self.W["external_work"] += 0.5 * dt * (p["p_external"] + s["p_external"])
        else:
            self.E0 = s["total"]
        self.prev = s
        a = self.arr
        for k in ("kinetic", "gravity", "spring", "potential", "total"):
            a[k][i] = s[k]
        for k, v in self.W.items():
            a[k][i] = v
        a["numerical_dissipation"][i] = (
            self.E0
            + self.W["actuator_work"]
            + self.W["external_work"]
            - self.W["damper_work"]
            - s["total"]
        )
