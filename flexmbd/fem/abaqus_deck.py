"""Abaqus input decks (``.inp``): keyword blocks with file and line numbers.

The lexical layer of the Abaqus reader: comment lines (``**``) and blank lines
are dropped, ``*INCLUDE, INPUT=...`` is expanded, a keyword line ending in a
comma continues on the next line, and every data row keeps the file and line
it came from so that errors can point at it.  Keywords are upper-cased with
single spaces (``*Solid Section`` -> ``SOLID SECTION``); parameter names are
upper-cased, values keep their case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MeshError

if TYPE_CHECKING:
    from .._typing import StrPath

__all__ = ["Block", "read_blocks", "where"]


@dataclass
class Block:
    """One keyword with its parameters and data rows."""

    keyword: str
    params: dict
    file: str
    line: int
    rows: list = field(default_factory=list)  # list of list[str] (fields, stripped)
    row_lines: list = field(default_factory=list)  # (file, line) of each row

    def param(self, name: str, default: str | None = None) -> str | None:
        return self.params.get(name.upper(), default)

    def flag(self, name: str) -> bool:
        return name.upper() in self.params

    def where(self, i: int | None = None) -> str:
        """'file:line' of the keyword or of data row ``i``."""
        if i is None:
            return where(self.file, self.line)
        return where(*self.row_lines[i])


def where(file: StrPath, line: int) -> str:
    return f"{file}:{line}"


def _read_lines(path, depth=0):
    path = Path(path)
    if depth > 10:
        raise MeshError(f"{path}: *INCLUDE nested more than 10 levels (a file includes itself?)")
    if not path.exists():
        raise MeshError(
            f"Abaqus input {str(path)!r} does not exist; check the path "
            f"(working directory: {Path.cwd()})"
        )
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise MeshError(f"Abaqus input {str(path)!r} cannot be read ({exc})") from exc
    for no, raw in enumerate(text.splitlines(), start=1):
        yield str(path), no, raw


def _params(text, file, line):
    parts = [p.strip() for p in text.split(",")]
    keyword = " ".join(parts[0].lstrip("*").upper().split())
    params = {}
    for p in parts[1:]:
        if not p:
            continue
        key, eq, value = p.partition("=")
        key = " ".join(key.upper().split())
        if eq and not value.strip():
            raise MeshError(f"{where(file, line)}: parameter {key}= has no value")
        params[key] = value.strip().strip('"') if eq else True
    if not keyword:
        raise MeshError(f"{where(file, line)}: '*' without a keyword")
    return keyword, params


def read_blocks(path: StrPath) -> list[Block]:
    """Keyword `Block` list of the deck at ``path`` (includes expanded)."""
    blocks = []
    stack = [iter(_read_lines(path))]
    pending = None  # a keyword line continued with a trailing comma
    while stack:
        try:
            file, no, raw = next(stack[-1])
        except StopIteration:
            stack.pop()
            continue
        s = raw.strip()
        if not s or s.startswith("**"):
            continue
        if pending is not None:
            text, pf, pl = pending
            text += s
            if s.endswith(","):
                pending = (text, pf, pl)
                continue
            pending = None
            s, file, no = text, pf, pl
        elif s.startswith("*"):
            if s.endswith(",") and "=" in s:
                pending = (s, file, no)
                continue
        else:
            if not blocks:
                raise MeshError(
                    f"{where(file, no)}: data line before any keyword: {s[:40]!r}; "
                    "an Abaqus deck starts with *HEADING or another keyword"
                )
            b = blocks[-1]
            b.rows.append([f.strip() for f in s.rstrip(",").split(",")] if s != "," else [])
            b.row_lines.append((file, no))
            continue
        kw, params = _params(s, file, no)
        if kw == "INCLUDE":
            inc = params.get("INPUT")
            if not isinstance(inc, str):
                raise MeshError(f"{where(file, no)}: *INCLUDE needs INPUT=file")
            p = Path(inc)
            if not p.is_absolute():
                p = Path(file).parent / p
            if not p.exists():
                raise MeshError(f"{where(file, no)}: *INCLUDE file {str(p)!r} does not exist")
            stack.append(iter(_read_lines(p, len(stack))))
            continue
        blocks.append(Block(kw, params, file, no))
    if pending is not None:
        raise MeshError(
            f"{where(pending[1], pending[2])}: keyword line ends with ',' at the "
            "end of the file (truncated deck?)"
        )
    return blocks
