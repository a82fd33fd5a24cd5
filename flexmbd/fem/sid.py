"""Export a `ReducedBody` as FEMBS standard input data (SID) text.

The SID (O. Wallrapp, *Standard Input Data of Flexible Members in Multibody
Systems*, Advanced Multibody System Dynamics, 1993, 445-450; R. Schwertassek and
O. Wallrapp, *Dynamik flexibler Mehrkörpersysteme*, Vieweg 1999, ch. 6) stores a
flexible body as Taylor expansions ``M(q) = M0 + sum_k M1[:, :, k] q_k`` of its
modal terms, in a nested text file (``part / new modal / refmod / new frame /
new node = i / ... / end modal / end part``); each expansion is written as
``order nrow ncol nq nqn structure`` (structure 0 zero, 1 diagonal, 2 symmetric
with one triangle written, 3 full) and its entries ``m0( i, j)`` and
``m1( i, j, k)`` (1-based).

Subset written (SI units, body frame of the `ReducedBody`, ``E_k`` the
alternating symbol, ``S_j = Sij[:, :, j]``, ``P`` = ``Pij``):

==========  ======  ==========================================================
term        order   content
==========  ======  ==========================================================
refmod      --      mass (kg), nelastq, ielastq (mode labels)
node        0/1     one node per interface (and per node of ``nodes=``):
                    origin (m) with M1 = translation per mode, phi = translation
                    modes (3 x m), psi = rotation modes (3 x m), AP = I3 with
                    M1 = skew(psi_k); ``rframe = body ref``
mdCM        1       M0 = first moment ``int rho x``; M1[:, 0, k] = ``St[:, k]``
J           1       inertia about the body origin; M1 = ``2 tr(S_k) I - S_k -
                    S_k^T`` (its derivative), symmetric
Ct          0       ``St^T`` (m x 3)
Cr          1       M0[k, i] = ``(int rho x cross phi_k)_i``; M1[k, i, l] =
                    ``E_iab P[a, b, l, k]`` (``int rho phi_l cross phi_k``)
Me, Ke, De  0       ``M_ff``, ``K_ff``, ``D_ff`` (symmetric)
Gr          0       3 x 3m, block k = ``-2 (S_k^T - tr(S_k) I)``
Ge          0       m x 3m, ``Ge[l, 3 k + i] = 2 E_iab P[a, b, l, k]``
Oe          1       m x 6 over ``(w1^2, w2^2, w3^2, w1 w2, w2 w3, w1 w3)``:
                    ``int rho phi_k . w x (w x (x + u))`` per product
ksigma      0       zero (no reference stress)
==========  ======  ==========================================================

Not written: geometric stiffening (the M1 parts of Ct, Oe, phi from unit K_G),
second-order terms, stress modes. The sign conventions are this module's
reading of the public description and have not been checked against Simpack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import MeshError
from .geometric import omega_matrices

if TYPE_CHECKING:
    from typing import Any

    from .._typing import ArrayLike, StrPath
    from .reduced import ReducedBody

__all__ = ["write_sid", "read_sid", "sid_terms"]

_EPS = np.zeros((3, 3, 3))
_EPS[0, 1, 2] = _EPS[1, 2, 0] = _EPS[2, 0, 1] = 1.0
_EPS[0, 2, 1] = _EPS[2, 1, 0] = _EPS[1, 0, 2] = -1.0


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def sid_terms(rb: ReducedBody, nodes: ArrayLike | None = ()) -> dict[str, Any]:
    """The SID Taylor expansions of ``rb`` as a dict name -> (M0, M1 or None, structure),
    plus ``"nodes"``: list of (label, {origin, phi, psi, AP}) (see the module table)."""
    m = rb.n_modes
    S, P, St = np.asarray(rb.Sij), np.asarray(rb.Pij), np.asarray(rb.St)
    trS = np.einsum("iik->k", S)
    I3 = np.eye(3)
    J1 = np.stack([2 * trS[k] * I3 - S[:, :, k] - S[:, :, k].T for k in range(m)], -1)
    cross_xphi = np.einsum("iab,abk->ki", _EPS, S)  # (m, 3)
    cross_pp = np.einsum("iab,ablk->kil", _EPS, P)  # [k, i, l] = int phi_l x phi_k
    Gr = np.hstack([-2 * (S[:, :, k].T - trS[k] * I3) for k in range(m)])
    Ge = np.zeros((m, 3 * m))
    for k in range(m):
        Ge[:, 3 * k : 3 * k + 3] = 2 * np.einsum("iab,abl->li", _EPS, P[:, :, :, k])
    C = omega_matrices()
    Oe0 = np.stack([np.einsum("ab,bak->k", Ck, S) for Ck in C], -1)  # (m, 6)
    Oe1 = np.stack([np.einsum("ab,abkl->kl", Ck, P) for Ck in C], 1)  # (m, 6, m)
    t = {
        "mdCM": (np.asarray(rb.first_moment).reshape(3, 1), St[:, None, :], 3),
        "J": (np.asarray(rb.inertia_origin), J1, 2),
        "Ct": (St.T.copy(), None, 3),
        "Cr": (cross_xphi, cross_pp, 3),
        "Me": (np.asarray(rb.M_ff), None, 2),
        "Gr": (Gr, None, 3),
        "Ge": (Ge, None, 3),
        "Oe": (Oe0, Oe1, 3),
        "ksigma": (np.zeros((m, 1)), None, 0),
        "Ke": (np.asarray(rb.K_ff), None, 2),
        "De": (np.asarray(rb.D_ff), None, 2),
    }
    frames = []
    for k, name in enumerate(rb.interface_names):
        modes = np.asarray(rb.interface_modes[k])
        frames.append((name, np.asarray(rb.interface_origins[k]), modes[3:], modes[:3]))
    Phi = np.asarray(rb.modes).reshape(rb.n_nodes, 3, m)
    for i in nodes:
        frames.append(
            (f"node {int(i)}", np.asarray(rb.nodes[int(i)]), Phi[int(i)], np.zeros((3, m)))
        )
    t["nodes"] = [
        (
            name,
            {
                "origin": (o.reshape(3, 1), ph[:, None, :], 3),
                "phi": (ph, None, 3),
                "psi": (ps, None, 3),
                "AP": (I3, np.stack([_skew(ps[:, j]) for j in range(m)], -1), 3),
            },
        )
        for name, o, ph, ps in frames
    ]
    return t


def _taylor(name, M0, M1, structure, m):
    nrow, ncol = M0.shape
    out = [
        name,
        f"    order        = {0 if M1 is None else 1}",
        f"    nrow         = {nrow}",
        f"    ncol         = {ncol}",
        f"    nq           = {m}",
        "    nqn          = 0",
        f"    structure    = {structure}",
    ]
    if structure:
        for i in range(nrow):
            for j in range(ncol):
                if structure == 2 and j > i:
                    continue
                out.append(f"    m0( {i + 1}, {j + 1}) = {M0[i, j]:.17g}")
    if M1 is not None:
        for i in range(nrow):
            for j in range(ncol):
                for k in range(m):
                    out.append(f"    m1( {i + 1}, {j + 1}, {k + 1}) = {M1[i, j, k]:.17g}")
    out.append(f"end {name}")
    return out


def write_sid(rb: ReducedBody, path: StrPath, nodes: ArrayLike | None = ()) -> None:
    """Write ``rb`` as a FEMBS SID text file (subset and conventions: module docstring).

    Parameters
    ----------
    rb : ReducedBody
    path : str or Path
    nodes : iterable of int
        Mesh nodes written as extra SID nodes (translation modes only), after the
        interfaces.
    """
    if rb.n_modes == 0:
        raise MeshError(f"write_sid: body {rb.name!r} has no modes")
    m = rb.n_modes
    t = sid_terms(rb, nodes)
    out = [
        "part",
        "new modal",
        "refmod",
        f"    mass           = {rb.mass:.17g}",
        f"    nelastq        = {m}",
    ]
    out += [
        f"    ielastq({k + 1}) = {rb.mode_label[k] if k < len(rb.mode_label) else k + 1}"
        for k in range(m)
    ]
    out += ["end refmod", "new frame"]
    for k, (name, node) in enumerate(t.pop("nodes")):
        out += [f"new node = {k + 1}", "rframe = body ref", f"$ {name}"]
        for key in ("origin", "phi", "psi", "AP"):
            out += _taylor(key, *node[key], m)
        out.append("end node")
    out.append("end frame")
    for key, (M0, M1, st) in t.items():
        out += _taylor(
            key, np.asarray(M0, float), None if M1 is None else np.asarray(M1, float), st, m
        )
    out += ["end modal", "end part"]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def read_sid(path: StrPath) -> dict[str, Any]:
    """Parse a SID text file written by `write_sid`: dict with ``mass``, ``labels``,
    each Taylor term name -> (M0, M1 or None) and ``nodes`` (list of such dicts).
    Symmetric terms are filled from their triangle."""
    out, nodes, cur, node = {"labels": []}, [], None, None
    for ln, raw in enumerate(open(path), start=1):
        s = raw.strip()
        if not s or s.startswith("$"):
            continue
        if s.startswith("new node"):
            node = {}
            continue
        if s == "end node":
            nodes.append(node)
            node = None
            continue
        if cur is None:
            if s.startswith("mass"):
                out["mass"] = float(s.split("=")[1])
            elif s.startswith("ielastq("):
                out["labels"].append(s.split("=", 1)[1].strip())
            elif s in (
                "origin",
                "phi",
                "psi",
                "AP",
                "mdCM",
                "J",
                "Ct",
                "Cr",
                "Me",
                "Gr",
                "Ge",
                "Oe",
                "ksigma",
                "Ke",
                "De",
            ):
                cur, hdr, M0, M1 = s, {}, None, None
            continue
        if s == f"end {cur}":
            if M0 is not None and hdr["structure"] == 2:
                M0 = np.tril(M0) + np.tril(M0, -1).T
            (node if node is not None else out)[cur] = (M0, M1)
            cur = None
            continue
        key, val = (x.strip() for x in s.split("=", 1))
        if key in ("order", "nrow", "ncol", "nq", "nqn", "structure"):
            hdr[key] = int(val)
            if key == "structure":
                M0 = np.zeros((hdr["nrow"], hdr["ncol"]))
                M1 = np.zeros((hdr["nrow"], hdr["ncol"], hdr["nq"])) if hdr["order"] else None
            continue
        idx = [int(x) - 1 for x in key[key.index("(") + 1 : key.index(")")].split(",")]
        try:
            (M0 if key.startswith("m0") else M1)[tuple(idx)] = float(val)
        except (TypeError, IndexError, ValueError):
            raise MeshError(f"{path}, line {ln}: bad SID entry {s!r}") from None
    out["nodes"] = nodes
    return out
