"""Tests of flexmbd.topology against Qi, Huang, Shao (cut joints, regular labeling).

Oracles: the paper's worked examples (section 1, eq. 3-4; section 2, eq. 7-10;
section 3), a literal re-implementation of the paper's procedure (dense
connectivity matrices, occurrence counting) compared on random graphs, and
structural properties of spanning trees and regular labels.
"""

import dataclasses
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flexmbd.errors import TopologyError
from flexmbd.topology import Topology, analyze, connectivity_history

# Section 3, Fig. 4(a): joints 1..8 connect these bodies.
PAPER = [[3, 3, 2, 0, 0, 3, 1, 5], [4, 1, 4, 4, 3, 5, 2, 1]]
# Section 1, Fig. 2(d) with eq. (4).
FIG2D = [[0, 3, 2, 3, 1], [3, 1, 4, 4, 2]]

REVOLUTE, SPHERICAL = 5, 3  # constraint equations


def block(n, bodies):
    """(n+1) x (n+1) matrix with ones on the rows/columns of ``bodies``."""
    s = np.zeros((n + 1, n + 1), dtype=int)
    s[np.ix_(bodies, bodies)] = 1
    return s


# --- the paper's worked example (section 3) ------------------------------------------------


def test_paper_example_cut_joints_and_maps():
    topo = analyze(PAPER)
    assert isinstance(topo, Topology)
    assert (topo.n_bodies, topo.n_joints) == (5, 8)
    assert topo.cut_joints == (5, 7, 8)
    assert topo.body_map.tolist() == [3, 4, 2, 1, 5]  # I_B
    assert topo.joint_map.tolist() == [2, 3, 4, 1, 6, 5, 7, 8]  # I_J


def test_paper_example_relabeled_incidence():
    topo = analyze(PAPER)
    assert topo.incidence.tolist() == [
        [0, 1, 2, 1, 2, 0, 3, 3],
        [1, 2, 3, 4, 5, 2, 4, 5],
        [1, 2, 3, 4, 5, 6, 7, 8],
    ]
    # Before reorientation the paper prints [[2 2 4 0 0 2 3 5], [1 3 1 1 2 5 4 3]]:
    # joints 1, 3 and 8 are flipped.
    assert np.flatnonzero(topo.reversed).tolist() == [0, 2, 7]


def test_paper_example_tree_arrays():
    topo = analyze(PAPER)
    assert topo.original_body.tolist() == [0, 4, 3, 1, 2, 5]
    assert topo.parent.tolist() == [-1, 0, 1, 2, 1, 2]
    assert topo.children == ((1,), (2, 4), (3, 5), (), (), ())
    assert topo.tree_joint.tolist() == [0, 4, 1, 2, 3, 6]
    assert topo.depth.tolist() == [0, 1, 2, 3, 2, 3]
    assert topo.leaves.tolist() == [3, 4, 5]


def test_paper_example_connectivity_matrices():
    history = connectivity_history(PAPER)
    assert len(history) == 8
    assert history[0].tolist() == block(5, [3, 4]).tolist()  # S_1 as printed
    assert history[3].tolist() == block(5, [0, 1, 2, 3, 4]).tolist()  # S_4 as printed
    assert history[4].tolist() == history[3].tolist()  # S_5 = S_4 (joint 5 is cut)
    for s in history[5:]:  # S_6 = S_7 = S_8: all ones
        assert s.tolist() == np.ones((6, 6), dtype=int).tolist()


def test_paper_example_s2_s3_follow_eq2_not_the_printed_copy():
    """The paper prints S_2 = S_3 = S_1 (only the 3-4 block), a misprint.

    Joint 2 joins bodies 3 and 1 (pattern (b)), so S_2 must connect 1, 3, 4, and joint
    3 joins 2 and 4, so S_3 connects 1..4. The printed S_4 (bodies 0..4) confirms
    it: from the printed S_3, joint 4 = (0, 4) would connect only 0, 3, 4.
    """
    history = connectivity_history(PAPER)
    assert history[1].tolist() == block(5, [1, 3, 4]).tolist()
    assert history[2].tolist() == block(5, [1, 2, 3, 4]).tolist()
    from_printed_s3 = connectivity_history([[3, 0], [4, 4]])[-1]
    assert from_printed_s3[:5, :5].tolist() != history[3][:5, :5].tolist()


def test_paper_example_pprint(capsys):
    analyze(PAPER).pprint()
    text = capsys.readouterr().out
    assert "cut joints (original numbers): 5, 7, 8" in text
    assert "3, 4, 2, 1, 5" in text and "2, 3, 4, 1, 6, 5, 7, 8" in text
    assert "[1 2 3 4 5 2 4 5]" in text
    assert str(analyze(PAPER)) == text.rstrip("\n")


# --- the small example of Fig. 2(d) (eq. 3, 4, 7, 8, 10) -----------------------------------


def test_fig2d_connectivity_matrices_eq3():
    history = connectivity_history(FIG2D)
    assert history[0].tolist() == block(4, [0, 3]).tolist()
    assert history[1].tolist() == block(4, [0, 1, 3]).tolist()
    assert history[2].tolist() == (block(4, [0, 1, 3]) + block(4, [2, 4])).tolist()
    assert history[3].tolist() == np.ones((5, 5), dtype=int).tolist()
    assert history[4].tolist() == history[3].tolist()  # joint 5: pattern (d)


def test_fig2d_cut_joint_eq4():
    topo = analyze(FIG2D)
    assert topo.cut_joints == (5,)
    third_row = [0 if j in topo.cut_joints else j for j in range(1, 6)]
    assert third_row == [1, 2, 3, 4, 0]  # eq. (4)


def test_fig2d_labels_eq7_to_10():
    topo = analyze(FIG2D)
    # eq. (7)-(8): leaves 1, 2 with joints 2, 3 -> I_B(1)=3, I_B(2)=4, I_J(2)=3, I_J(3)=4;
    # eq. (10): then body 4 (joint 4), then body 3 (joint 1).
    assert topo.body_map.tolist() == [3, 4, 1, 2]
    assert topo.joint_map.tolist() == [1, 3, 4, 2, 5]


# --- weights and forced cuts ---------------------------------------------------------------


def four_bar(spherical_position):
    """Four-bar loop ground-1-2-3-ground; joint ``spherical_position`` is spherical."""
    incidence = [[0, 1, 2, 3], [1, 2, 3, 0]]
    weights = [REVOLUTE] * 4
    weights[spherical_position - 1] = SPHERICAL
    return incidence, weights


@pytest.mark.parametrize("position", [1, 2, 3, 4])
def test_weights_cut_the_spherical_joint(position):
    incidence, weights = four_bar(position)
    assert analyze(incidence, weights=weights).cut_joints == (position,)


def test_without_weights_the_last_loop_joint_is_cut():
    incidence, _ = four_bar(1)
    assert analyze(incidence).cut_joints == (4,)


def test_equal_weights_match_no_weights():
    a, b = analyze(PAPER), analyze(PAPER, weights=[5] * 8)
    assert a.cut_joints == b.cut_joints
    assert a.body_map.tolist() == b.body_map.tolist()
    assert a.joint_map.tolist() == b.joint_map.tolist()


def test_forced_cuts_are_honored():
    topo = analyze(PAPER, forced_cuts=[1, 2])
    assert {1, 2} <= set(topo.cut_joints)
    assert len(topo.cut_joints) == 3
    assert 1 not in topo.tree_joint and 2 not in topo.tree_joint


def test_forced_cut_that_isolates_a_body_raises():
    # Body 2 hangs from body 1 by joint 2 only: cutting joint 2 isolates it.
    with pytest.raises(TopologyError, match=r"joint 2 cannot be cut because body 2 would be"):
        analyze([[0, 1, 0], [1, 2, 1]], forced_cuts=[2])


def test_two_forced_cuts_that_together_isolate_a_body():
    with pytest.raises(TopologyError, match=r"joints 2, 3 cannot be cut .* body 2 would be"):
        analyze([[0, 1, 0], [1, 2, 2]], forced_cuts=[2, 3])


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("incidence", "kwargs", "message"),
    [
        ([[0, 1, 3], [1, 2, 4]], {}, r"1 isolated branch .*: bodies 3, 4\."),
        ([[0, 1, 3, 5], [1, 2, 4, 6]], {}, r"2 isolated branches .*: bodies 3, 4; bodies 5, 6"),
        ([[1, 2], [2, 3]], {}, r"bodies 1, 2, 3\. Add a joint"),  # nothing touches ground
        ([[0, 1], [1, 4]], {}, r"contiguous 1\.\.4 .* bodies 2, 3 are in no joint"),
        ([[0, 1], [1, 1]], {}, r"joint 2 connects body 1 to itself"),
        ([[0, -1], [1, 2]], {}, r"joint 2 has a negative body number"),
        ([[0, 1.5], [1, 2]], {}, r"joint 2 has a non-integer body number"),
        ([[0, np.nan], [1, 2]], {}, r"finite integer body numbers"),
        ([[False, True], [True, False]], {}, r"finite integer body numbers; got bool"),
        ([[0, 1, 2]], {}, r"2 x n_j array .* shape \(1, 3\)"),
        ([[0, 1], [1, 2], [2, 3]], {}, r"shape \(3, 2\)\. It looks like n_j x 2"),
        ([[0, 1], [1, 2]], {"weights": [5]}, r"one number per joint \(2\)"),
        ([[0, 1], [1, 2]], {"weights": [5, np.nan]}, r"finite numbers; not so for joint 2$"),
        ([[0, 1], [1, 2]], {"forced_cuts": [3]}, r"forced cut joint 3 does not exist"),
        ([[0, 1], [1, 2]], {"forced_cuts": [0]}, r"joints are numbered 1\.\.2"),
        ([[0, 1], [1, 2]], {"forced_cuts": ["a"]}, r"forced cut joint 'a' does not exist"),
    ],
)
def test_bad_input_raises_topology_error(incidence, kwargs, message):
    with pytest.raises(TopologyError, match=message):
        analyze(incidence, **kwargs)


def test_topology_is_frozen():
    topo = analyze(PAPER)
    with pytest.raises(dataclasses.FrozenInstanceError):
        topo.cut_joints = ()
    with pytest.raises(ValueError):
        topo.body_map[0] = 7


def test_empty_system():
    topo = analyze(np.zeros((2, 0), dtype=int))
    assert (topo.n_bodies, topo.n_joints, topo.cut_joints) == (0, 0, ())
    assert topo.parent.tolist() == [-1] and topo.children == ((),)


def test_long_chain_labels_in_order():
    n = 2000  # deep enough to exercise pointer-doubling depth
    topo = analyze([np.arange(n), np.arange(1, n + 1)])
    assert topo.body_map.tolist() == list(range(1, n + 1))
    assert topo.depth.tolist() == list(range(n + 1))
    assert topo.leaves.tolist() == [n]


# --- a literal implementation of the paper, for comparison ---------------------------------


def paper_procedure(incidence):
    """Cut joints by the connectivity matrices, labels by counting occurrences in J."""
    incidence = np.asarray(incidence)
    n_bodies, n_joints = int(incidence.max()), incidence.shape[1]
    previous = [np.zeros((n_bodies + 1, n_bodies + 1), dtype=int)]
    previous += connectivity_history(incidence)[:-1]
    cut = [j + 1 for j in range(n_joints) if previous[j][incidence[0, j], incidence[1, j]]]
    columns = [(*incidence[:, j].tolist(), j + 1) for j in range(n_joints) if j + 1 not in cut]
    body_map, joint_map = [0] * n_bodies, [0] * n_joints
    n_remaining = n_bodies
    while columns:
        counts = Counter(b for a, b, _ in columns) + Counter(a for a, b, _ in columns)
        leaves = sorted(b for b, c in counts.items() if b != 0 and c == 1)
        for label, leaf in enumerate(leaves, start=n_remaining - len(leaves) + 1):
            body_map[leaf - 1] = label
            joint_map[next(j for a, b, j in columns if leaf in (a, b)) - 1] = label
        columns = [col for col in columns if not set(col[:2]) & set(leaves)]
        n_remaining -= len(leaves)
    for label, j in enumerate(cut, start=n_bodies + 1):
        joint_map[j - 1] = label
    return tuple(cut), body_map, joint_map


def test_paper_procedure_reproduces_the_worked_example():
    assert paper_procedure(PAPER) == ((5, 7, 8), [3, 4, 2, 1, 5], [2, 3, 4, 1, 6, 5, 7, 8])


# --- properties on random connected graphs -------------------------------------------------


@st.composite
def connected_systems(draw, max_bodies=60, max_loops=20):
    """Random spanning tree + extra loop joints, random numbering, order and direction."""
    n_bodies = draw(st.integers(1, max_bodies))
    numbering = [0, *draw(st.permutations(range(1, n_bodies + 1)))]
    joints = []
    for k in range(1, n_bodies + 1):  # body k attaches to an earlier body
        joints.append((draw(st.integers(0, k - 1)), k))
    bodies = st.integers(0, n_bodies)
    extra = draw(st.lists(st.tuples(bodies, bodies), max_size=max_loops))
    joints += [(a, b) for a, b in extra if a != b]
    order = draw(st.permutations(range(len(joints))))
    flips = draw(st.lists(st.booleans(), min_size=len(joints), max_size=len(joints)))
    columns = []
    for j, flip in zip(order, flips, strict=True):
        a, b = numbering[joints[j][0]], numbering[joints[j][1]]
        columns.append((b, a) if flip else (a, b))
    return np.array(columns, dtype=np.int64).T


def full_body_map(topo):
    """Label of every original body, ground included."""
    return np.concatenate([[0], topo.body_map])


def tree_path_joints(topo, a, b):
    """Original numbers of the tree joints between labels a and b."""
    joints = []
    while a != b:
        if a < b:
            a, b = b, a
        joints.append(int(topo.tree_joint[a]))
        a = int(topo.parent[a])
    return joints


def tree_degree(incidence, topo):
    tree = [j for j in range(topo.n_joints) if j + 1 not in topo.cut_joints]
    return np.bincount(incidence[:, tree].ravel(), minlength=topo.n_bodies + 1)


@settings(max_examples=100, deadline=None)
@given(connected_systems())
def test_spanning_tree_and_cut_joints(incidence):
    topo = analyze(incidence)
    n_bodies, n_joints = int(incidence.max()), incidence.shape[1]
    assert (topo.n_bodies, topo.n_joints) == (n_bodies, n_joints)
    assert len(topo.cut_joints) == n_joints - n_bodies  # the tree has exactly n_b joints
    assert list(topo.cut_joints) == sorted(topo.cut_joints)
    assert sorted(topo.tree_joint[1:].tolist() + list(topo.cut_joints)) == list(
        range(1, n_joints + 1)
    )
    labels = full_body_map(topo)
    for j in topo.cut_joints:  # every cut joint closes a loop of tree joints
        path = tree_path_joints(topo, *labels[incidence[:, j - 1]])
        assert path and j not in path


@settings(max_examples=100, deadline=None)
@given(connected_systems())
def test_regular_labels(incidence):
    topo = analyze(incidence)
    n = topo.n_bodies
    assert sorted(topo.body_map.tolist()) == list(range(1, n + 1))
    assert sorted(topo.joint_map.tolist()) == list(range(1, topo.n_joints + 1))
    assert topo.parent[0] == -1 and np.all(topo.parent[1:] < np.arange(1, n + 1))
    assert np.all(topo.parent[1:] >= 0)
    assert np.all(topo.incidence[0] < topo.incidence[1])
    assert topo.incidence[2].tolist() == list(range(1, topo.n_joints + 1))
    # first-round leaves get the highest labels, in ascending original number
    degree = tree_degree(incidence, topo)
    leaves = np.flatnonzero(degree[1:] == 1) + 1
    assert topo.body_map[leaves - 1].tolist() == list(range(n - leaves.size + 1, n + 1))
    assert set(leaves.tolist()) <= set(topo.original_body[topo.leaves].tolist())


@settings(max_examples=100, deadline=None)
@given(connected_systems())
def test_mapping_consistency(incidence):
    topo = analyze(incidence)
    labels = full_body_map(topo)
    ends = labels[incidence]
    expected = np.empty_like(topo.incidence)
    expected[:2, topo.joint_map - 1] = np.sort(ends, axis=0)
    expected[2] = np.arange(1, topo.n_joints + 1)
    assert topo.incidence.tolist() == expected.tolist()
    assert topo.reversed.tolist() == (ends[0] > ends[1]).tolist()
    assert topo.original_body[labels].tolist() == list(range(topo.n_bodies + 1))
    for k in range(1, topo.n_bodies + 1):  # tree joint k joins body k to its parent
        j = topo.tree_joint[k]
        assert topo.joint_map[j - 1] == k
        assert sorted(labels[incidence[:, j - 1]]) == [topo.parent[k], k]
        assert k in topo.children[topo.parent[k]]
        assert topo.depth[k] == topo.depth[topo.parent[k]] + 1
    assert all(list(c) == sorted(c) for c in topo.children)


@settings(max_examples=60, deadline=None)
@given(connected_systems(max_bodies=25, max_loops=10))
def test_matches_the_papers_literal_procedure(incidence):
    topo = analyze(incidence)
    cut, body_map, joint_map = paper_procedure(incidence)
    assert topo.cut_joints == cut
    assert topo.body_map.tolist() == body_map
    assert topo.joint_map.tolist() == joint_map
    assert connectivity_history(incidence)[-1].all()  # no zeros: no isolated branch


@settings(max_examples=100, deadline=None)
@given(connected_systems(), st.data())
def test_weights_cut_the_lightest_joint_of_each_loop(incidence, data):
    n_joints = incidence.shape[1]
    weights = data.draw(st.lists(st.integers(0, 5), min_size=n_joints, max_size=n_joints))
    topo = analyze(incidence, weights=weights)
    assert len(topo.cut_joints) == n_joints - topo.n_bodies
    labels = full_body_map(topo)

    def rank(j):  # assembly order: decreasing weight, then joint number
        return (-weights[j - 1], j)

    for c in topo.cut_joints:  # every tree joint of c's loop was assembled before c
        for t in tree_path_joints(topo, *labels[incidence[:, c - 1]]):
            assert rank(t) < rank(c)


def connected_without(incidence, removed):
    """Whether every body reaches ground without the joints in ``removed``."""
    n_bodies = int(incidence.max())
    reached, frontier = {0}, [0]
    keep = [j for j in range(incidence.shape[1]) if j + 1 not in removed]
    while frontier:
        body = frontier.pop()
        for j in keep:
            a, b = incidence[:, j].tolist()
            other = b if a == body else a if b == body else None
            if other is not None and other not in reached:
                reached.add(other)
                frontier.append(other)
    return len(reached) == n_bodies + 1


@settings(max_examples=100, deadline=None)
@given(connected_systems(max_bodies=30), st.data())
def test_forced_cuts(incidence, data):
    n_joints = incidence.shape[1]
    forced = data.draw(st.sets(st.integers(1, n_joints), max_size=4))
    if connected_without(incidence, forced):
        topo = analyze(incidence, forced_cuts=sorted(forced))
        assert forced <= set(topo.cut_joints)
        assert len(topo.cut_joints) == n_joints - topo.n_bodies
    else:
        with pytest.raises(TopologyError, match="cannot be cut because bod"):
            analyze(incidence, forced_cuts=sorted(forced))


@settings(max_examples=100, deadline=None)
@given(connected_systems(max_bodies=30), st.integers(1, 5), st.data())
def test_isolated_branch_is_named(incidence, size, data):
    n_bodies = int(incidence.max())
    branch = list(range(n_bodies + 1, n_bodies + size + 1))
    joints = [(data.draw(st.sampled_from(branch[:k])), branch[k]) for k in range(1, size)]
    if size == 1:  # a lone body needs some joint to exist: join it to a second new body
        branch.append(n_bodies + 2)
        joints = [(branch[0], branch[1])]
    extra = np.array(joints, dtype=np.int64).reshape(-1, 2).T
    listed = ", ".join(map(str, branch))
    with pytest.raises(TopologyError, match=f"1 isolated branch .*: bodies {listed}\\. "):
        analyze(np.concatenate([incidence, extra], axis=1))
