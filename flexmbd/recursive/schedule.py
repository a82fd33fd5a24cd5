"""Elimination schedule of the serialized CFA (Liu, Hu, Zhang 2016, section 3).

The constraint-force matrix ``A`` of a tree couples the unknowns ``F_S`` of two
joints when they share a body: a joint with its parent joint (the blocks ``B``
of the chains, eq. 30-32) and, at a *node* (a body with several outboard
bodies), the node's joint with every child joint and the child joints with each
other (eq. 33-36).

*Node-related* joints are the joint of a node body and the joints of its
children. Every other joint lies on a *chain*: a path of single-child bodies,
whose ``A`` is block tridiagonal, bounded above and below by at most one
node-related joint. Each chain (with its boundaries) is reduced by block
odd-even (cyclic) reduction: at every level the unknowns at odd positions of the
current sequence are eliminated in terms of their two neighbours, which halves
the sequence; boundaries are never eliminated. This is the paper's odd-even
elimination (eq. 39-40) restricted to the rows that survive each level, so its
serial cost is linear in the chain length (the paper's all-rows variant costs
N log N serially and suits N processors). What survives -- node-related joints
and the last unknown of a chain with no node -- is the small dense system
``Ā_node F_S,node = X̄_node`` of eq. (41-44); the chain unknowns follow by back
substitution (eq. 44, second line).

With ``order="sequential"`` each chain is instead eliminated one joint after the
other from a free end (a leaf, or the root when only the root end is free; top
down between two boundaries): a joint then has one neighbour left when it is
eliminated -- half the work of odd-even reduction, no fill coupling -- except
between two boundaries, where the coupling to the upper boundary moves along. A
chain free at both ends (an unbranched tree) is eliminated from both ends at once
towards a middle joint, which survives: two independent sequences, alternated.
The dependency chain is as long as the chain (odd-even: log2 of it), which the
lockstep batch kernels hide by working on many states at once.

The schedule depends on the topology only and is computed once per System.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["Schedule", "build_schedule"]


@dataclass(frozen=True)
class Schedule:
    """Elimination order of a tree (arrays indexed by regular labels).

    Attributes
    ----------
    steps : ndarray (n_steps, 3)
        ``(i, l, r)``: eliminate joint ``i`` whose current neighbours are ``l``
        and ``r`` (-1 for none), in this order; back substitution runs in reverse.
    dense : ndarray
        Joints of the dense node system, grouped by the ground's subtree that holds
        them (``blocks``), ascending within each group.
    blocks : ndarray (n_blocks + 1,)
        Offsets in ``dense`` of its groups: joints of different subtrees of the ground
        never share a body (the ground does not move), so the node system is block
        diagonal with one block per group, factored block by block.
    links : ndarray (n, 2)
        Chain couplings ``(k, r)`` left between two dense joints after reduction.
    node_children : ndarray
        Children of node bodies (the node's joint couples with each).
    siblings : ndarray (n, 2)
        Pairs of children of the same node (coupled through the node's inertia).
    onechild : ndarray
        ``onechild[k]`` = the only child of body k, or -1.
    levels : int
        Number of odd-even levels of the longest chain.
    """

    steps: np.ndarray
    dense: np.ndarray
    blocks: np.ndarray
    links: np.ndarray
    node_children: np.ndarray
    siblings: np.ndarray
    onechild: np.ndarray
    levels: int


def build_schedule(parent, order="odd-even"):
    """Schedule for the tree given by ``parent`` (labels, ``parent[k] < k``, ``parent[0] = -1``).

    ``order``: ``"odd-even"`` (the paper's reduction of the chains) or ``"sequential"``
    (see the module docstring).
    """
    if order not in ("odd-even", "sequential"):
        raise ValueError(f"order must be 'odd-even' or 'sequential', got {order!r}")
    parent = np.asarray(parent, dtype=np.int64)
    n = parent.size - 1
    children = [[] for _ in range(n + 1)]
    for k in range(1, n + 1):
        children[parent[k]].append(k)
    nchild = [len(c) for c in children]
    is_node = [False] + [nchild[k] >= 2 for k in range(1, n + 1)]
    related = [False] * (n + 1)
    for k in range(1, n + 1):
        if is_node[k] or (parent[k] > 0 and is_node[parent[k]]):
            related[k] = True
    onechild = np.full(n + 1, -1, dtype=np.int64)
    for k in range(1, n + 1):
        if nchild[k] == 1:
            onechild[k] = children[k][0]

    steps, links = [], []
    dense = [k for k in range(1, n + 1) if related[k]]
    levels = 0
    for k in range(1, n + 1):
        if related[k]:
            # direct link between two dense joints (single child, both node-related)
            c = onechild[k]
            if c > 0 and related[c]:
                links.append((k, int(c)))
            continue
        p = int(parent[k])
        if p > 0 and not related[p]:
            continue  # not a chain head
        seq = [p] if p > 0 else []
        protected = set(seq)
        cur = k
        while True:
            seq.append(cur)
            c = int(onechild[cur])
            if c < 0:
                break
            if related[c]:
                seq.append(c)
                protected.add(c)
                break
            cur = c
        lev = 0
        if order == "sequential":
            top, bottom = bool(protected) and seq[0] in protected, seq[-1] in protected
            inner = seq[int(top) : len(seq) - int(bottom)]
            if not (top or bottom) and len(inner) >= 3:
                # both ends free (an unbranched tree): from both ends towards a middle
                # joint m, which survives; the two sequences of steps alternate, so
                # that their dependency chains (each step waits for the previous one's
                # update of its neighbour) overlap on an out-of-order core -- the same
                # work, half the chain
                m = (len(inner) - 1) // 2
                down = [(inner[t], -1, inner[t + 1]) for t in range(m)]
                up = [(inner[b], inner[b - 1], -1) for b in range(len(inner) - 1, m, -1)]
                for t in range(len(up)):
                    steps.append(up[t])
                    if t < len(down):
                        steps.append(down[t])
                dense.append(inner[m])
                levels = max(levels, len(up))
                continue
            if not bottom:
                # from the leaf up: the left neighbour (or the upper boundary) remains
                for i in range(len(inner) - 1, 0 if not top else -1, -1):
                    steps.append((inner[i], inner[i - 1] if i > 0 else seq[0], -1))
                seq = [seq[0]]
            else:
                # top down: the upper boundary (if any) and the next joint remain
                nxt = inner[1:] + [seq[-1]]
                for i, k_ in enumerate(inner):
                    steps.append((k_, seq[0] if top else -1, nxt[i]))
                seq = ([seq[0]] if top else []) + [seq[-1]]
            lev = len(inner) - (0 if (top or bottom) else 1)
            if len(seq) == 1 and not (top or bottom):
                dense.append(seq[0])  # the root joint survives a chain without nodes
            levels = max(levels, lev)
            for a, b in zip(seq[:-1], seq[1:], strict=False):
                links.append((a, b))
            continue
        while True:
            free = [x for x in seq if x not in protected]
            if not free:
                break
            if len(seq) == 1:
                dense.append(seq[0])  # last survivor of a chain without nodes
                break
            elim = [i for i in range(1, len(seq), 2) if seq[i] not in protected]
            if not elim:
                elim = [0]  # only the head is left unprotected in front of a boundary
            lev += 1
            for i in elim:
                left = seq[i - 1] if i > 0 else -1
                right = seq[i + 1] if i + 1 < len(seq) else -1
                steps.append((seq[i], left, right))
            drop = set(elim)
            seq = [x for i, x in enumerate(seq) if i not in drop]
        levels = max(levels, lev)
        for a, b in zip(seq[:-1], seq[1:], strict=False):
            links.append((a, b))
    node_children, siblings = [], []
    for b in range(1, n + 1):
        if is_node[b]:
            ch = children[b]
            node_children.extend(ch)
            for i in range(len(ch)):
                for j in range(i + 1, len(ch)):
                    siblings.append((ch[i], ch[j]))
    as2 = lambda x: np.asarray(x, dtype=np.int64).reshape(-1, 2)
    dense, blocks = _blocks(parent, dense)
    return Schedule(
        steps=np.asarray(steps, dtype=np.int64).reshape(-1, 3),
        dense=dense,
        blocks=blocks,
        links=as2(links),
        node_children=np.asarray(node_children, dtype=np.int64),
        siblings=as2(siblings),
        onechild=onechild,
        levels=levels,
    )


def _blocks(parent, dense):
    """``(dense, blocks)``: the dense joints grouped by the child of the ground whose
    subtree holds them (groups in the order of those children, joints ascending within
    a group) and the groups' offsets. Every coupling of the node system (chain links,
    node-child and sibling blocks) joins joints that share a body other than the
    ground, hence joints of one subtree: the groups are its diagonal blocks."""
    root = np.arange(parent.size)
    for k in range(1, parent.size):  # labels are regular: parent[k] < k
        if parent[k] > 0:
            root[k] = root[parent[k]]
    order = sorted(dense, key=lambda k: (root[k], k))
    starts = [i for i in range(len(order)) if i == 0 or root[order[i]] != root[order[i - 1]]]
    return np.asarray(order, dtype=np.int64), np.asarray(starts + [len(order)], dtype=np.int64)
