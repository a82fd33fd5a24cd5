"""Model parameters as optimization variables, declared like Pyomo ``Var`` objects.

``P = parameters(model)`` lists the parameters every component of ``model`` offers,
by component name and attribute; a parameter reads and writes the model (so a
compiled system sees the new value after ``system.refresh()``), and ``free`` /
``fix`` declare whether an optimization may change it::

    P = fmo.parameters(m)
    P.beam.zeta[0].free(bounds=(0.0, 0.2))     # modal damping ratio of mode 1 (-)
    P.bearing.c.free(bounds=(0.0, 1.0))         # viscous bearing friction (N m s/rad)
    P.free_parameters()                         # [beam.zeta[0], bearing.c]

Parameters offered (value, SI units):

=========================  =====================  =========================================
component                  attribute              meaning
=========================  =====================  =========================================
RigidBody                  ``mass`` (kg)          mass (centre of mass and inertia about it
                                                  kept)
FlexibleBody               ``zeta[i]`` (-)        modal damping ratio of reduced eigenmode i
                                                  (at the nominal stiffness)
FlexibleBody               ``stiffness_scale``    factor on the modal stiffness ``K_ff``
SpringDamperActuator       ``k`` (N/m), ``c``     spring constant, damping coefficient
                           (N s/m)
ViscousBearing             ``c`` (N m s/rad)      bearing friction coefficient
=========================  =====================  =========================================

Every one of these enters the equations of motion affinely (the residual is a linear
function of each one with the others held), which the grey-box block uses to form exact
parameter derivatives (:mod:`flexmbd.pyomo.residual`). :meth:`ParameterSet.add` declares
any other numeric attribute (``affine=False`` makes its derivative a finite difference).

This module does not import Pyomo.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import ModelError

__all__ = ["Parameter", "ParameterSet", "parameters"]


class Parameter:
    """One scalar model parameter: value, units, bounds and whether it is free.

    Parameters
    ----------
    name : str
        ``"component.attribute"`` (``"beam.zeta[0]"``).
    get, set : callables
        Read the value from the model, write it into the model.
    units : str
        SI units of the value (``"kg"``, ``"N/m"``, ``"1"``).
    affine : bool
        Whether the equations of motion are affine in this parameter (derivatives are
        then exact from one extra evaluation; otherwise a central finite difference).
    """

    def __init__(
        self,
        name: str,
        get: Callable[[], float],
        set: Callable[[float], None],
        units: str = "1",
        affine: bool = True,
    ) -> None:
        self.name = name
        self._get, self._set = get, set
        self.units = units
        self.affine = bool(affine)
        self.is_free = False
        self.lb: float | None = None
        self.ub: float | None = None
        self.nominal = float(get())

    @property
    def value(self) -> float:
        """Current value in the model (SI units)."""
        return float(self._get())

    @value.setter
    def value(self, v: float) -> None:
        try:
            x = float(v)
        except (TypeError, ValueError):
            x = float("nan")
        if not np.isfinite(x):
            raise ModelError(
                f"parameter {self.name}: value {v!r} must be a finite number ({self.units})"
            )
        self._set(x)

    def free(
        self, bounds: tuple[float | None, float | None] | None = None, value: float | None = None
    ) -> Parameter:
        """Let an optimization change this parameter, within ``bounds`` (lb, ub; None = open).

        Reads like Pyomo's ``Var.unfix()`` with ``setlb``/``setub``; returns the parameter.
        """
        if bounds is not None:
            try:
                lb, ub = bounds
            except (TypeError, ValueError):
                raise ModelError(
                    f"parameter {self.name}: bounds={bounds!r} must be a pair "
                    "(lb, ub); use None for an open side"
                ) from None
            lb = None if lb is None else float(lb)
            ub = None if ub is None else float(ub)
            if lb is not None and ub is not None and not lb <= ub:
                raise ModelError(
                    f"parameter {self.name}: bounds ({lb}, {ub}) are empty; give lb <= ub"
                )
            self.lb, self.ub = lb, ub
        if value is not None:
            self.value = value
        self.is_free = True
        return self

    def fix(self, value: float | None = None) -> Parameter:
        """Hold this parameter at its current value (or at ``value``), like ``Var.fix``."""
        if value is not None:
            self.value = value
        self.is_free = False
        return self

    def __repr__(self):
        state = "free" if self.is_free else "fixed"
        return (
            f"Parameter({self.name} = {self.value:.6g} {self.units}, {state}, "
            f"bounds=({self.lb}, {self.ub}))"
        )


class _ComponentParameters:
    """Attribute access to one component's parameters (``P.beam.zeta[0]``)."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_items", {})

    def __getattr__(self, key):
        items = object.__getattribute__(self, "_items")
        if key in items:
            return items[key]
        raise ModelError(
            f"component {self._name!r} has no parameter {key!r}; it offers "
            f"{sorted(items)} (add others with ParameterSet.add)"
        )


class _Modal:
    """Modal damping ratios and stiffness factor of a flexible body, written into the
    body's modal invariants (``D = sum_i zeta_i D_i`` at the nominal frequencies,
    ``K = s K_ff``)."""

    def __init__(self, body):
        import scipy.linalg as sla

        self.body = body
        rb = body.reduced
        M, K = np.asarray(rb.M_ff, float), np.asarray(rb.K_ff, float)
        lam, X = sla.eigh(K, M)
        Y = M @ X
        w = np.sqrt(np.maximum(lam, 0.0))
        self.Di = [2.0 * w[i] * np.outer(Y[:, i], Y[:, i]) for i in range(len(w))]
        z = np.asarray(getattr(rb, "zeta", np.zeros(0)), float)
        if z.size == len(w):
            self.zeta = z.copy()
        else:  # Rayleigh or no damping: the ratios of the eigenmodes' diagonal
            D = np.asarray(rb.D_ff, float)
            self.zeta = np.array(
                [
                    float(Y[:, i] @ np.linalg.solve(M, D) @ X[:, i]) / (2 * wi) if wi > 0 else 0.0
                    for i, wi in enumerate(w)
                ]
            )
        self.K0 = K
        self.scale = 1.0

    def apply(self):
        D = sum((z * Di for z, Di in zip(self.zeta, self.Di)), np.zeros_like(self.K0))
        self.body.set_modal_matrices(K=self.scale * self.K0, D=D)

    def set_zeta(self, i, v):
        self.zeta[i] = v
        self.apply()

    def set_scale(self, v):
        self.scale = v
        self.apply()


class ParameterSet:
    """The parameters of a model's components (see the module docstring), by name."""

    def __init__(self, model) -> None:
        self.model = model
        self._by_comp: dict[str, _ComponentParameters] = {}
        self._all: dict[str, Parameter] = {}
        self._modal: dict[str, _Modal] = {}
        self._discover()

    def _comp(self, name):
        if name not in self._by_comp:
            self._by_comp[name] = _ComponentParameters(name)
        return self._by_comp[name]

    def _register(self, comp_name, attr, p, index=None):
        items = object.__getattribute__(self._comp(comp_name), "_items")
        if index is None:
            items[attr] = p
        else:
            items.setdefault(attr, []).append(p)
        self._all[p.name] = p

    def _discover(self):
        from ..model.bodies import RigidBody
        from ..model.flexible import FlexibleBody
        from ..model.sda import SpringDamperActuator
        from .inputs import ViscousBearing

        for b in self.model.bodies():
            if isinstance(b, RigidBody):
                self.add(b, "mass", units="kg")
            elif isinstance(b, FlexibleBody):
                mod = _Modal(b)
                self._modal[b.name] = mod
                for i in range(len(mod.zeta)):
                    p = Parameter(
                        f"{b.name}.zeta[{i}]",
                        (lambda i=i, mod=mod: mod.zeta[i]),
                        (lambda v, i=i, mod=mod: mod.set_zeta(i, v)),
                        units="1",
                    )
                    self._register(b.name, "zeta", p, index=i)
                p = Parameter(
                    f"{b.name}.stiffness_scale", lambda mod=mod: mod.scale, mod.set_scale, units="1"
                )
                self._register(b.name, "stiffness_scale", p)
        for f in self.model.forces():
            if type(f) is SpringDamperActuator:
                self.add(f, "k", units="N/m")
                self.add(f, "c", units="N s/m")
            elif isinstance(f, ViscousBearing):
                self.add(f, "c", units="N m s/rad")

    def add(self, component, attr: str, units: str = "1", affine: bool = True) -> Parameter:
        """Declare the numeric attribute ``attr`` of ``component`` a parameter."""
        val = getattr(component, attr, None)
        try:
            float(val)
        except (TypeError, ValueError):
            raise ModelError(
                f"{component.name}.{attr}: not a numeric attribute ({val!r}); "
                "only scalar numbers can be parameters"
            ) from None
        p = Parameter(
            f"{component.name}.{attr}",
            lambda: getattr(component, attr),
            lambda v: setattr(component, attr, v),
            units=units,
            affine=affine,
        )
        self._register(component.name, attr, p)
        return p

    def __getattr__(self, key):
        if key.startswith("_"):
            raise AttributeError(key)
        by = self.__dict__.get("_by_comp", {})
        if key in by:
            return by[key]
        raise ModelError(f"no component {key!r} with parameters; components: {sorted(by)}")

    def __getitem__(self, name: str) -> Parameter:
        try:
            return self._all[name]
        except KeyError:
            raise ModelError(f"no parameter {name!r}; parameters: {list(self._all)}") from None

    def __iter__(self):
        return iter(self._all.values())

    def free_parameters(self) -> list[Parameter]:
        """The free parameters, in declaration order."""
        return [p for p in self._all.values() if p.is_free]

    def pprint(self) -> None:
        """Print every parameter: value, units, free/fixed, bounds."""
        for p in self._all.values():
            print(repr(p))


def parameters(model) -> ParameterSet:
    """The :class:`ParameterSet` of ``model`` (one per call; keep it with the model)."""
    return ParameterSet(model)
