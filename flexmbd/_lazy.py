"""Names of a package that import their module on first use (PEP 562)."""

import importlib
import sys


def lazy_names(package: str, table: dict[str, tuple[str, str | None]]):
    """``(__getattr__, __dir__)`` for the package ``package`` (its ``__name__``).

    ``table`` maps an exported name to ``(module, attribute)``: the module's name,
    relative to the package if it starts with ``.``, and the attribute to export
    (``None``: the module itself). The first access imports the module and binds the
    value in the package's namespace, so that later accesses are plain lookups."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name):
        try:
            module, attr = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        mod = importlib.import_module(module, package)
        value = mod if attr is None else getattr(mod, attr)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(list(namespace) + list(table))

    return __getattr__, __dir__
