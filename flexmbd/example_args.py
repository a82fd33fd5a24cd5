"""Command-line settings of the example scripts (``examples/``, the documentation gallery).

Every example takes ``--quick``: the small settings ``QUICK`` (keyword arguments of its
``main``) that the tests run; a mistyped option is refused (argparse exits).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["quick_parser", "quick_settings"]


def quick_parser(doc: str | None, quick: dict[str, Any]) -> argparse.ArgumentParser:
    """Argument parser with ``--quick`` described by the first line of ``doc`` (a script's
    ``__doc__``); add further options before parsing."""
    first = (doc or "").strip().splitlines()
    ap = argparse.ArgumentParser(description=first[0] if first else None)
    ap.add_argument("--quick", action="store_true", help=f"small settings {quick}")
    return ap


def quick_settings(
    doc: str | None, quick: dict[str, Any], argv: list[str] | None = None
) -> dict[str, Any]:
    """Keyword arguments of a script's ``main`` from the command line ``argv`` (default
    ``sys.argv[1:]``): a copy of ``quick`` with ``--quick``, else none (the defaults)."""
    return dict(quick) if quick_parser(doc, quick).parse_args(argv).quick else {}
