"""Blocks: named containers of components, reusable as sub-assemblies.

``Block.__setattr__`` registers any component assigned as an attribute (it learns
its name and owner; declaration order is kept). ``fm.Block(rule=f, **kw)`` calls
``f(block, **kw)`` when the block is assigned, so one function can build the same
arm twice: ``m.left = fm.Block(rule=arm, mount=m.f1)``; an indexed block
``fm.Block(range(2), rule=f)`` calls ``f(block, i)`` for each index.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..errors import ModelError
from .component import Component, IndexedComponent, call_rule

__all__ = ["Block"]


class Block(Component):
    """A container of components (bodies, frames, joints, forces, sub-blocks)."""

    kind = "block"

    def __init__(
        self,
        *,
        rule: Callable[..., Any] | None = None,
        name: str | None = None,
        doc: str | None = None,
        **rule_kwargs: Any,
    ) -> None:
        object.__setattr__(self, "_components", {})
        object.__setattr__(self, "_members", [])
        super().__init__(name=name, doc=doc)
        if rule is not None and not callable(rule):
            raise ModelError(
                f"Block(rule=...): rule must be a function rule(block, **kw), got "
                f"{type(rule).__name__}"
            )
        object.__setattr__(self, "_rule", rule)
        object.__setattr__(self, "_rule_kwargs", rule_kwargs)

    def __new__(cls, *args, rule=None, **kwargs):
        if args:  # indexed block: Block(range(n), rule=f)
            if rule is None:
                raise ModelError("Block(index, rule=f): an indexed block needs a rule")
            return IndexedComponent(cls, args[0], _IndexedBlockRule(rule), kwargs)
        return object.__new__(cls)

    # -- registration -----------------------------------------------------------------
    def __setattr__(self, key, value):
        if isinstance(value, (Component, IndexedComponent)) and not key.startswith("_"):
            self._add(key, value)
        else:
            if key in self.__dict__.get("_components", {}):
                self._remove(key)
            super().__setattr__(key, value)

    def __delattr__(self, key):
        if key in self._components:
            self._remove(key)
            self.mark_changed()
        object.__delattr__(self, key)

    def _add(self, key, value):
        if key in self._components:
            old = self._components[key]
            warnings.warn(
                f"{self.name or 'model'}: replacing component {key!r} ({type(old).__name__})",
                stacklevel=3,
            )
            self._remove(key)
        value.register_in(self, key)
        self._components[key] = value
        object.__setattr__(self, key, value)
        if isinstance(value, IndexedComponent):
            value.construct(self)
        else:
            self.add_member(value)
            value.apply_rule(f"rule of block {key!r}")
        self.mark_changed()

    def add_member(self, comp: Component) -> None:
        """Append ``comp`` to the declaration-ordered members (registration plumbing)."""
        self._members.append(comp)

    def apply_rule(self, where: str) -> None:
        """Call ``rule(block, **kw)`` given at construction, if any (done on assignment);
        ``where`` names the rule in errors."""
        if self._rule is not None:
            call_rule(self._rule, (self,), self._rule_kwargs, where)

    def _remove(self, key):
        old = self._components.pop(key)
        members = list(old) if isinstance(old, IndexedComponent) else [old]
        ids = {id(c) for c in members}
        object.__setattr__(self, "_members", [c for c in self._members if id(c) not in ids])
        for c in members:
            c.unregister()
        old.unregister()

    def mark_changed(self, component: Any = None, attribute: str | None = None) -> None:
        """Tell the owning model that a component or parameter changed (bumps its
        revision, so compiled systems re-read their parameters): ``attribute`` of
        ``component`` was written, or (None) the structure changed."""
        if self.parent_block() is not None:
            self.model().mark_changed(component, attribute)

    # -- queries ----------------------------------------------------------------------
    def component_objects(self, ctype: type = Component, descend_into: bool = True) -> list[Any]:
        """Components of class ``ctype`` in declaration order (sub-blocks included)."""
        out = []
        for c in self._members:
            if isinstance(c, ctype):
                out.append(c)
            if descend_into and isinstance(c, Block):
                out.extend(c.component_objects(ctype, True))
        return out

    def find(self, name: str) -> Component:
        """Component with the full dotted ``name`` (e.g. ``"left.link[2]"``)."""
        for c in self.component_objects(Component):
            if c.name == name:
                return c
        raise ModelError(f"no component named {name!r}")

    def summary(self) -> str:
        return f"Block ({len(self._members)} components)"


class _IndexedBlockRule:
    """Adapter: member ``i`` of an indexed block is a Block populated by ``rule(b, i, **kw)``."""

    def __init__(self, rule):
        self.rule = rule

    def __call__(self, parent, i, **kw):
        return Block(rule=lambda blk: self.rule(blk, i, **kw))
