"""Nastran matrix exports: OP4 text files (OUTPUT4) and DMIG cards in punch files.

OP4 text (per matrix)
---------------------
Header ``NCOL NROW NF NTYPE`` (4I8), the name (A8) and a Fortran format such as
``1P,3E23.16`` (values per line and field width).  NROW < 0 marks the sparse
"bigmat" form.  Columns (1-based):

- dense: ``ICOL IROW NW`` (3I8), then NW values starting at row IROW;
- sparse: ``ICOL 0 NW`` then strings, each a header and its values: bigmat
  ``L+1 IROW`` (2I8), non-bigmat one integer ``IS = 65536 (L+1) + IROW``, where L
  counts words (two per double-precision value, NTYPE 2);

the matrix ends with a column record ``NCOL+1 1 1`` and one dummy value.  Real
matrices (NTYPE 1, 2) only; ``D`` exponents are read.

DMIG (punch ``.pch`` or bulk data)
----------------------------------
``DMIG NAME 0 IFO TIN TOUT POLAR NCOL`` then one card per column,
``DMIG NAME GJ CJ , G1 C1 A1, G2 C2 A2, ...`` (grid, component 1-6 or 0 for a
scalar point, value); small or large field.  IFO 6 (symmetric) gives one
triangle: it is mirrored (both triangles must then agree).  Rows and columns are
labelled by (grid, component) and sorted by grid then component.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..errors import MeshError
from .nastran_cards import nastran_float, nastran_int, read_cards

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from numpy.typing import NDArray

    from .._typing import ArrayLike, StrPath

__all__ = ["read_op4", "write_op4", "read_dmig", "write_dmig", "DMIGMatrix"]

_FMT = re.compile(r"(\d+)\s*[EDG]\s*(\d+)\.(\d+)", re.I)


def _err(path, line, what):
    return MeshError(f"{path}, line {line}: {what}")


def _values(lines, k, n, perline, width, path, name):
    """n values from lines k.. of a column; returns (values, next line index)."""
    nl = (n + perline - 1) // perline
    if k + nl > len(lines):
        raise _err(path, len(lines), f"matrix {name!r}: file ends inside a column")
    s = "".join(ln[: perline * width].ljust(perline * width) for ln in lines[k : k + nl])
    try:
        v = [
            float(s[j * width : (j + 1) * width].replace("D", "E").replace("d", "e"))
            for j in range(n)
        ]
    except ValueError:
        raise _err(path, k + 1, f"matrix {name!r}: malformed value") from None
    return v, k + nl


def read_op4(path: StrPath) -> dict[str, Any]:
    """Matrices of a text OP4 file: dict name -> scipy CSC matrix (float64), in file order.

    Raises
    ------
    MeshError
        Naming file and line for binary files, complex types, malformed records
        and row/column numbers outside the declared size.
    """
    path = Path(path)
    if not path.exists():
        raise MeshError(f"OP4 file {str(path)!r} does not exist")
    raw = path.read_bytes()
    if b"\x00" in raw[:64]:
        raise MeshError(
            f"{path}: binary OP4 is not supported; write it with OUTPUT4 ... FORMATTED (text)"
        )
    lines = raw.decode(errors="replace").splitlines()
    out, i = {}, 0

    def ints(k, n):
        s = lines[k]
        try:
            return [int(s[8 * j : 8 * j + 8]) for j in range(n)]
        except ValueError:
            raise _err(
                path, k + 1, f"expected {n} integers in 8-character fields, got {s[: 8 * n]!r}"
            ) from None

    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        ncol, nrow, form, ntype = ints(i, 4)
        head = lines[i]
        name = head[32:40].strip()
        m = _FMT.search(head[40:])
        if m is None or ntype not in (1, 2):
            raise _err(
                path,
                i + 1,
                f"matrix {name!r}: unsupported header (type {ntype}, format "
                f"{head[40:].strip()!r}); real matrices with an E/D format only",
            )
        perline, width = int(m.group(1)), int(m.group(2))
        wper = 2 if ntype == 2 else 1
        bigmat = nrow < 0
        nrow = abs(nrow)
        rows, cols, vals = [], [], []
        i += 1

        def values(k, n, perline=perline, width=width, name=name):
            return _values(lines, k, n, perline, width, f"{path}", name)

        while True:
            if i >= len(lines):
                raise _err(path, len(lines), f"matrix {name!r}: no end record (column {ncol + 1})")
            icol, irow, nw = ints(i, 3)
            if icol > ncol:
                _, i = values(i + 1, 1) if nw else (None, i + 1)
                break
            if icol < 1:
                raise _err(path, i + 1, f"matrix {name!r}: column {icol} outside 1..{ncol}")
            start, first = i + 1, len(rows)
            if irow > 0:
                v, i = values(i + 1, nw)
                rows.extend(range(irow - 1, irow - 1 + nw))
                cols.extend([icol - 1] * nw)
                vals.extend(v)
            else:
                k, left = i + 1, nw
                while left > 0:
                    if bigmat:
                        L1, r0 = ints(k, 2)
                        L, left = L1 - 1, left - (L1 + 1)
                    else:
                        try:
                            IS = int(lines[k].strip())
                        except ValueError:
                            raise _err(path, k + 1, "expected a string header") from None
                        L = IS // 65536 - 1
                        r0, left = IS - 65536 * (L + 1), left - (L + 1)
                    n = L // wper
                    v, k = values(k + 1, n)
                    rows.extend(range(r0 - 1, r0 - 1 + n))
                    cols.extend([icol - 1] * n)
                    vals.extend(v)
                i = k
            new = rows[first:]  # this column's rows: checking all rows so far is quadratic
            if new and (max(new) >= nrow or min(new) < 0):
                raise _err(path, start, f"matrix {name!r}: row {max(new) + 1} outside 1..{nrow}")
        out[name] = sp.csc_matrix((vals, (rows, cols)), shape=(nrow, ncol))
    return out


def write_op4(
    path: StrPath, matrices: Mapping[str, Any], sparse: bool = False, digits: int = 16
) -> None:
    """Write real matrices (dict name -> dense or sparse) to a text OP4 file.

    ``sparse=False``: dense columns (zero runs at the ends trimmed);
    ``"bigmat"`` or ``True``: bigmat strings; ``"nonbigmat"``: packed string headers.
    Double precision (NTYPE 2), ``1P,3E{digits+7}.{digits}``; form 6 when symmetric.
    """
    width = digits + 7
    lines = []

    def vals(v):
        for k in range(0, len(v), 3):
            lines.append("".join(f"{x:{width}.{digits}E}" for x in v[k : k + 3]))

    for name, A in matrices.items():
        A = sp.csc_matrix(A, dtype=float)
        nrow, ncol = A.shape
        sym = nrow == ncol and abs(A - A.T).max() == 0 if A.nnz else nrow == ncol
        form = 6 if sym else (1 if nrow == ncol else 2)
        big = sparse in (True, "bigmat")
        lines.append(
            f"{ncol:8d}{-nrow if big else nrow:8d}{form:8d}{2:8d}{name[:8]:8s}1P,3E{width}.{digits}"
        )
        for j in range(ncol):
            col = A[:, j].toarray().ravel()
            nz = np.nonzero(col)[0]
            if not len(nz):
                continue
            if not sparse:
                lines.append(f"{j + 1:8d}{nz[0] + 1:8d}{nz[-1] - nz[0] + 1:8d}")
                vals(col[nz[0] : nz[-1] + 1])
                continue
            runs = np.split(nz, np.nonzero(np.diff(nz) > 1)[0] + 1)
            per = 2 if big else 1
            nw = sum(2 * len(r) + per for r in runs)
            lines.append(f"{j + 1:8d}{0:8d}{nw:8d}")
            for r in runs:
                L = 2 * len(r)
                lines.append(
                    f"{L + 1:8d}{r[0] + 1:8d}" if big else f"{65536 * (L + 1) + r[0] + 1:12d}"
                )
                vals(col[r])
        lines.append(f"{ncol + 1:8d}{1:8d}{1:8d}")
        vals([1.0])
    Path(path).write_text("\n".join(lines) + "\n")


class DMIGMatrix:
    """A DMIG matrix: ``matrix`` (CSC), ``rows``/``cols`` (k, 2) (grid, component) labels,
    ``form`` (1 square, 2 rectangular, 6 symmetric) and ``name``."""

    def __init__(
        self,
        name: str,
        matrix: Any,
        rows: NDArray[np.int64],
        cols: NDArray[np.int64],
        form: int | None,
    ) -> None:
        self.name, self.matrix, self.rows, self.cols, self.form = name, matrix, rows, cols, form

    def __repr__(self):
        return f"DMIGMatrix({self.name!r}, {self.matrix.shape}, form={self.form})"


def read_dmig(path: StrPath) -> dict[str, DMIGMatrix]:
    """DMIG matrices of a punch or bulk-data file: dict name -> `DMIGMatrix`.

    Square and symmetric matrices share one sorted (grid, component) labelling
    for rows and columns. Raises `MeshError` naming file and line for malformed
    cards, complex matrices, columns without a header and conflicting triangles.
    """
    heads, entries = {}, {}
    for c in read_cards(path):
        if c.name != "DMIG":
            continue
        name = c.field(2)
        if c.field(3) == "0":  # header: NAME 0 IFO TIN TOUT POLAR - NCOL
            tin = c.int(5, 1)
            if tin not in (1, 2):
                raise MeshError(
                    f"{c.where()}: DMIG {name} is complex (TIN {tin}); real matrices only"
                )
            heads[name] = (c.int(4), c)
            entries[name] = []
            continue
        if name not in heads:
            raise MeshError(f"{c.where()}: DMIG {name} column before its header card")
        gj, cj = c.int(3), c.int(4, 0)
        data = [f.strip() for f in c.fields[4:]]  # (G, C, A, B) from field 6 on
        for k in range(0, len(data), 4):
            g, ci, a = (data[k : k + 3] + ["", ""])[:3]
            if not g:
                continue
            if not a:
                raise MeshError(f"{c.where()}: DMIG {name}: row ({g}, {ci}) has no value")
            entries[name].append(
                (nastran_int(g, c), nastran_int(ci or "0", c), gj, cj, nastran_float(a, c), c)
            )
    out = {}
    for name, (form, hc) in heads.items():
        ent = entries[name]
        if not ent:
            raise MeshError(f"{hc.where()}: DMIG {name} has no columns")
        rl = sorted({(e[0], e[1]) for e in ent})
        cl = sorted({(e[2], e[3]) for e in ent})
        if form in (1, 6):
            rl = cl = sorted(set(rl) | set(cl))
        ri = {k: i for i, k in enumerate(rl)}
        ci = {k: i for i, k in enumerate(cl)}
        vals = {}
        for g, c_, gj, cj, a, card in ent:
            key = (ri[(g, c_)], ci[(gj, cj)])
            if key in vals and vals[key][0] != a:
                raise MeshError(
                    f"{card.where()}: DMIG {name}: entry ({g},{c_}),({gj},{cj}) "
                    "given twice with different values"
                )
            vals[key] = (a, card)
        if form == 6:
            for (r, c_), (a, card) in list(vals.items()):
                if (c_, r) in vals:
                    if vals[(c_, r)][0] != a:
                        raise MeshError(
                            f"{card.where()}: DMIG {name} is symmetric (IFO 6) but "
                            "its two triangles differ"
                        )
                else:
                    vals[(c_, r)] = (a, card)
        r = np.array([k[0] for k in vals], dtype=np.int64)
        c_ = np.array([k[1] for k in vals], dtype=np.int64)
        v = np.array([x[0] for x in vals.values()])
        out[name] = DMIGMatrix(
            name,
            sp.csc_matrix((v, (r, c_)), shape=(len(rl), len(cl))),
            np.array(rl, dtype=np.int64).reshape(-1, 2),
            np.array(cl, dtype=np.int64).reshape(-1, 2),
            form,
        )
    return out


def write_dmig(
    path: StrPath,
    name: str,
    matrix: Any,
    labels: ArrayLike,
    col_labels: ArrayLike | None = None,
    symmetric: bool | None = None,
    mode: str = "w",
) -> None:
    """Write one real matrix as DMIG cards (large field, double precision, as in a punch file).

    ``labels`` (k, 2): (grid, component) of each row; ``col_labels`` defaults to
    ``labels``. A symmetric matrix (IFO 6) is written as its upper triangle.
    ``mode="a"`` appends to an existing file.
    """
    A = sp.csc_matrix(matrix, dtype=float)
    rl = np.asarray(labels, dtype=np.int64).reshape(-1, 2)
    cl = rl if col_labels is None else np.asarray(col_labels, dtype=np.int64).reshape(-1, 2)
    if A.shape != (len(rl), len(cl)):
        raise MeshError(
            f"write_dmig {name}: matrix {A.shape} does not fit {len(rl)} row and "
            f"{len(cl)} column labels"
        )
    if symmetric is None:
        symmetric = A.shape[0] == A.shape[1] and (abs(A - A.T).max() == 0 if A.nnz else True)
    form = 6 if symmetric else (1 if A.shape[0] == A.shape[1] else 9)

    def f16(x):
        return f"{x:16d}" if isinstance(x, (int, np.integer)) else f"{x:16.9E}".replace("E", "D")

    out = [
        f"DMIG    {name:8s}{0:8d}{form:8d}{2:8d}{0:8d}{'':8s}{'':8s}"
        f"{A.shape[1] if form == 9 else 0:8d}"
    ]
    for j in range(A.shape[1]):
        col = A[:, j].toarray().ravel()
        nz = np.nonzero(col)[0]
        if symmetric:
            nz = nz[nz <= j]
        if not len(nz):
            continue
        out.append(f"DMIG*   {name:16s}{cl[j, 0]:16d}{cl[j, 1]:16d}")
        for i in nz:
            out.append(f"*       {rl[i, 0]:16d}{rl[i, 1]:16d}{f16(float(col[i]))}")
    with open(path, mode) as f:
        f.write("\n".join(out) + "\n")
