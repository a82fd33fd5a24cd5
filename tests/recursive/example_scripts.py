"""The repository's example scripts (``examples/NAME.py``) loaded as modules."""

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(name):
    """The module of ``examples/<name>.py``, loaded anew (its ``build()`` and settings;
    the script's ``__main__`` part does not run)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
