"""Components and indexed components: the Pyomo-style registration machinery.

A component learns its name when it is assigned as an attribute of a
:class:`~flexmbd.model.block.Block` (``m.crank = fm.RigidBody(...)`` names it
``"crank"``). Passing an index set and a ``rule`` to any component class builds an
:class:`IndexedComponent` whose members are made by ``rule(block, i)`` when the
component is assigned (``m.links = fm.RigidBody(range(6), rule=f)``).
"""

from __future__ import annotations

import weakref
from collections.abc import ItemsView, KeysView, ValuesView
from typing import TYPE_CHECKING, Any

from ..errors import FlexmbdError, ModelError

if TYPE_CHECKING:
    from .block import Block
    from .model import Model

__all__ = ["Component", "IndexedComponent", "as_floats", "is_real"]


def as_floats(value):
    """``np.asarray(value, float)``, or a NaN scalar when ``value`` is not numeric.

    Validators then refuse it with their own message naming the input, instead of
    numpy's "could not convert string to float". Booleans are not numbers here.
    """
    import numpy as np

    if isinstance(value, (bool, np.bool_, str, bytes)):
        return np.array(np.nan)
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return np.array(np.nan)
    if a.dtype == object:
        return np.array(np.nan)
    return a


def is_real(value):
    """True for a finite real scalar (int or float, numpy included; not bool)."""
    import numpy as np

    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        return False
    return bool(np.isfinite(value))


_NO_RULE = object()  # sentinel: no rule= keyword given


class Component:
    """Base class of everything a model holds: bodies, frames, joints, forces, blocks.

    Numeric attributes of a registered component are *mutable parameters*: setting
    one (``m.crank.mass = 2.0``) bumps the owning model's revision, and compiled
    systems re-read their parameters before the next evaluation. The attributes in
    :attr:`parameter_attributes` set values without changing the model's structure:
    compiled systems that know them update what depends on them in place (any other
    write rebuilds them).
    """

    kind = "component"
    #: attributes whose writes change values only, not the model's structure
    parameter_attributes: tuple[str, ...] = ()
    _frozen_attrs = ("_name", "_parent_ref", "_index")

    def __new__(cls, *args, rule=_NO_RULE, **kwargs):
        if rule is None:
            raise ModelError(
                f"{cls.__name__}(..., rule=None): give the rule function "
                "rule(block, i) of an indexed component, or leave rule out"
            )
        if rule is not _NO_RULE:
            if len(args) != 1:
                raise ModelError(
                    f"{cls.__name__}(index, rule=...): give exactly one index set "
                    f"(e.g. range(6)) and the rule; got {len(args)} positional arguments"
                )
            return IndexedComponent(cls, args[0], rule, kwargs)
        return super().__new__(cls)

    def __init__(self, *, name: str | None = None, doc: str | None = None) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_parent_ref", None)
        object.__setattr__(self, "_index", None)
        object.__setattr__(self, "doc", doc)

    # -- naming -----------------------------------------------------------------------
    @property
    def local_name(self) -> str:
        """Name inside the owning block (``"link[2]"``), or a placeholder if unnamed."""
        return self._name if self._name is not None else f"<unnamed {type(self).__name__}>"

    @property
    def name(self) -> str:
        """Full dotted name from the model root (``"left_arm.link[2]"``)."""
        parent = self.parent_block()
        if parent is None or parent.parent_block() is None:
            return self.local_name
        return f"{parent.name}.{self.local_name}"

    def parent_block(self) -> Block | None:
        """The block (or model) this component is registered in, or None."""
        ref = self._parent_ref
        return ref() if ref is not None else None

    def model(self) -> Model | None:
        """The root :class:`~flexmbd.model.model.Model`, or None when unregistered."""
        b = self.parent_block()
        while b is not None and b.parent_block() is not None:
            b = b.parent_block()
        return b

    @property
    def has_name(self) -> bool:
        """True once the component has a name (given as ``name=`` or on assignment)."""
        return self._name is not None

    def register_in(self, parent: Block, name: str, index: Any = None) -> None:
        """Make ``parent`` the owner of this component under the local ``name``.

        Called by :class:`~flexmbd.model.block.Block` when the component is assigned
        (``index`` is the member's index in an indexed component); a component has one
        owner.
        """
        if self._parent_ref is not None and self.parent_block() is not None:
            raise ModelError(
                f"component {self.name!r} already belongs to {self.parent_block().name!r}; "
                f"a component has one owner: create a new one for {name!r}"
            )
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_parent_ref", weakref.ref(parent))
        object.__setattr__(self, "_index", index)

    def unregister(self) -> None:
        """Forget the owner (the component was removed from its block)."""
        object.__setattr__(self, "_parent_ref", None)

    # -- mutable parameters -----------------------------------------------------------
    def __setattr__(self, key, value):
        object.__setattr__(self, key, value)
        if not key.startswith("_") and getattr(self, "_parent_ref", None) is not None:
            root = self.model()
            if root is not None:
                root.mark_changed(self, key)

    def summary(self) -> str:
        """One-line description used by ``pprint``."""
        return type(self).__name__

    def apply_rule(self, where: str) -> None:
        """Populate the component from its construction rule (none here; see
        :meth:`flexmbd.model.block.Block.apply_rule`); ``where`` names it in errors."""

    def __repr__(self):
        return f"<{type(self).__name__} {self.local_name}>"


def call_rule(rule, args, kwargs, where):
    """``rule(*args, **kwargs)``; an exception other than a flexmbd error becomes a
    ModelError naming ``where`` (the original stays chained as its cause)."""
    try:
        return rule(*args, **kwargs)
    except FlexmbdError:
        raise
    except Exception as exc:
        raise ModelError(f"{where} failed: {type(exc).__name__}: {exc}") from exc


class IndexedComponent:
    """A family of components of one class indexed by a set, built by a rule.

    ``rule(block, i)`` must return a component of the declared class (or None to
    leave index ``i`` out). Members are named ``"links[i]"`` and reachable as
    ``m.links[i]``; iteration yields the members in index order.
    """

    kind = "indexed"

    def __init__(self, cls, index, rule, kwargs):
        self.ctype = cls
        try:
            self.index_set = list(index)
        except TypeError:
            raise ModelError(
                f"{cls.__name__}(index, rule=...): the index set must be iterable "
                f"(e.g. range(6) or a list of labels), got {index!r}"
            ) from None
        seen = set()
        for i in self.index_set:
            try:
                dup = i in seen
                seen.add(i)
            except TypeError:
                raise ModelError(
                    f"{cls.__name__}(index, rule=...): index {i!r} is not hashable; "
                    "use numbers, strings or tuples"
                ) from None
            if dup:
                raise ModelError(
                    f"{cls.__name__}(index, rule=...): index {i!r} appears twice in "
                    f"the index set {self.index_set!r}; indices must be unique"
                )
        if not callable(rule):
            raise ModelError(
                f"{cls.__name__}(index, rule=...): rule must be a function "
                f"rule(block, i), got {type(rule).__name__}"
            )
        self.rule = rule
        self.rule_kwargs = kwargs
        self._data = {}
        self._name = None
        self._parent_ref = None

    @property
    def name(self):
        parent = self.parent_block()
        if parent is None or parent.parent_block() is None:
            return self._name
        return f"{parent.name}.{self._name}"

    def parent_block(self):
        return self._parent_ref() if self._parent_ref is not None else None

    def register_in(self, parent: Block, name: str, index: Any = None) -> None:
        """Make ``parent`` the owner of this indexed component under ``name``."""
        if self._parent_ref is not None:
            raise ModelError(f"indexed component {self.name!r} already belongs to a block")
        self._name = name
        self._parent_ref = weakref.ref(parent)

    def unregister(self) -> None:
        """Forget the owner (the component was removed from its block)."""
        self._parent_ref = None

    def construct(self, block: Block) -> None:
        """Call the rule for every index (done by the block at assignment)."""
        for i in self.index_set:
            member = call_rule(
                self.rule, (block, i), self.rule_kwargs, f"rule of {self._name!r} for index {i!r}"
            )
            if member is None:
                continue
            if not isinstance(member, self.ctype):
                raise ModelError(
                    f"rule of {self._name!r} returned {type(member).__name__} for index {i!r}; "
                    f"it must return a {self.ctype.__name__} (or None to skip the index)"
                )
            member.register_in(block, f"{self._name}[{i}]", index=i)
            self._data[i] = member
            block.add_member(member)
            member.apply_rule(f"rule of {self._name!r} for index {i!r}")  # an indexed Block

    def __getitem__(self, i):
        try:
            return self._data[i]
        except KeyError:
            raise ModelError(
                f"{self._name!r} has no member {i!r}; its indices are {list(self._data)}"
            ) from None

    def __iter__(self):
        return iter(self._data.values())

    def __len__(self):
        return len(self._data)

    def keys(self) -> KeysView[Any]:
        return self._data.keys()

    def values(self) -> ValuesView[Component]:
        return self._data.values()

    def items(self) -> ItemsView[Any, Component]:
        return self._data.items()

    def __repr__(self):
        return f"<Indexed {self.ctype.__name__} {self._name} ({len(self)} members)>"
