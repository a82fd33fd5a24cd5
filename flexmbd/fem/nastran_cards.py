"""Nastran bulk-data text: cards from small-field, large-field and free-field lines.

A card is its name, its data fields (strings, field 2 onwards, continuations
appended: 8 per small-field line, 4 per large-field line, up to 8 per free-field
line) and the file line where it starts, so every error can name file and line.
Numbers follow Nastran's conventions: ``1.-3`` and ``7.85-9`` have an implied
``E``, ``D`` is a double-precision exponent.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MeshError

if TYPE_CHECKING:
    import builtins
    from typing import Any

    from .._typing import StrPath

__all__ = ["Card", "read_cards", "nastran_float", "nastran_int"]

_IMPLIED_EXP = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))([+-]\d+)$")


class Card:
    """One bulk-data card: ``name``, ``fields`` (strings), ``source`` and ``line`` (1-based)."""

    __slots__ = ("name", "fields", "source", "line")

    def __init__(self, name: str, fields: list[str], source: str, line: int) -> None:
        self.name, self.fields, self.source, self.line = name, fields, source, line

    def where(self) -> str:
        return f"{self.source}, line {self.line} ({self.name})"

    def field(self, i: int) -> str:
        """Field ``i`` in Nastran numbering (2 = first data field), stripped; '' if absent."""
        k = i - 2
        return self.fields[k].strip() if 0 <= k < len(self.fields) else ""

    def int(self, i: builtins.int, default: builtins.int | None = None) -> builtins.int | None:
        s = self.field(i)
        if not s:
            if default is None:
                raise MeshError(f"{self.where()}: field {i} is blank; an integer is required")
            return default
        return nastran_int(s, self)

    def float(
        self, i: builtins.int, default: builtins.float | None = None
    ) -> builtins.float | None:
        s = self.field(i)
        if not s:
            if default is None:
                raise MeshError(f"{self.where()}: field {i} is blank; a real number is required")
            return default
        return nastran_float(s, self)


def nastran_int(s: str, card: Card | None = None) -> int:
    try:
        return int(s)
    except ValueError:
        where = card.where() if card is not None else "Nastran field"
        raise MeshError(f"{where}: {s!r} is not an integer") from None


def nastran_float(s: str, card: Card | None = None) -> float:
    t = s.strip().upper().replace("D", "E")
    try:
        return float(t)
    except ValueError:
        m = _IMPLIED_EXP.match(t)
        if m:
            return float(f"{m.group(1)}E{m.group(2)}")
    where = card.where() if card is not None else "Nastran field"
    raise MeshError(f"{where}: {s!r} is not a real number")


def _split(line):
    """(first field, data fields, large?) of one physical line."""
    if "," in line:  # free field: a line longer than one card line continues itself
        parts = line.split(",")
        head = parts[0].strip()
        large = head.endswith("*")
        count = 4 if large else 8
        data, rest = parts[1 : 1 + count], parts[1 + count :]
        if rest and rest[0].strip()[:1] in ("+", "*"):  # an explicit continuation marker
            rest = rest[1:]
        return head, data + [""] * (count - len(data)) + rest, large
    head = line[:8].strip()
    large = head.endswith("*")
    width, count = (16, 4) if large else (8, 8)
    return head, [line[8 + width * i : 8 + width * (i + 1)] for i in range(count)], large


def read_cards(path: StrPath, section: str = "bulk") -> list[Any]:
    """Cards of a Nastran input file (list of `Card`).

    ``section="bulk"``: the bulk data (after ``BEGIN BULK`` if present, else
    the whole file, up to ``ENDDATA``); ``"case"``: the raw case-control lines
    (between ``CEND`` and ``BEGIN BULK``) as ``(line number, text)`` pairs.
    """
    path = Path(path)
    if not path.exists():
        raise MeshError(f"Nastran file {str(path)!r} does not exist")
    text = path.read_text(errors="replace").splitlines()
    begin = next(
        (
            i
            for i, s in enumerate(text)
            if s.strip().upper().startswith("BEGIN") and "BULK" in s.upper()
        ),
        None,
    )
    if section == "case":
        cend = next((i for i, s in enumerate(text) if s.strip().upper() == "CEND"), -1)
        stop = begin if begin is not None else cend + 1
        return [(i + 1, text[i]) for i in range(cend + 1, stop)]
    start = 0 if begin is None else begin + 1
    cards, cur = [], None
    for i in range(start, len(text)):
        raw = text[i].split("$", 1)[0].rstrip("\n").expandtabs(8)
        if not raw.strip():
            continue
        if raw.strip().upper().startswith("ENDDATA"):
            break
        head, data, _ = _split(raw)
        if head[:1].isalpha():
            name = head.rstrip("*").upper()
            cur = Card(name, list(data), str(path), i + 1)
            cards.append(cur)
        elif cur is not None and (head == "" or head[:1] in "+*"):
            cur.fields.extend(data)
        else:
            raise MeshError(
                f"{path}, line {i + 1}: cannot read {raw.strip()[:40]!r} (not a card "
                "name and no card to continue)"
            )
    return cards
