"""Time flexmbd.topology.analyze on large random systems and a long chain.

Run ``python benchmarks/bench_topology.py``. Prints a markdown table and
rewrites the "Topology (seed 001)" section of benchmarks/RESULTS.md (between the
``<!-- topology:start -->`` and ``<!-- topology:end -->`` lines; the rest of the
file is left untouched). No peer implements this algorithm, so the times are
absolute; the target is 100,000 joints in under 1 s.
"""

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # time this working tree
from results_file import machine_line, replace_section  # noqa: E402

from flexmbd.topology import analyze  # noqa: E402

RESULTS = Path(__file__).with_name("RESULTS.md")
START, END = "<!-- topology:start -->", "<!-- topology:end -->"
COMMAND = "python benchmarks/bench_topology.py"
TARGET_JOINTS, TARGET_SECONDS = 100_000, 1.0
REPEATS = 5


def random_system(n_joints, loop_fraction=0.1, seed=1):
    """Random tree with ``loop_fraction`` extra loop joints; random numbering, order, direction."""
    rng = np.random.default_rng(seed)
    n_loops = int(round(loop_fraction * n_joints))
    n_bodies = n_joints - n_loops
    k = np.arange(1, n_bodies + 1)
    tree = np.stack([(rng.random(n_bodies) * k).astype(np.int64), k])  # k hangs on 0..k-1
    loops = rng.integers(0, n_bodies + 1, size=(2, n_loops))
    same = loops[0] == loops[1]
    loops[1, same] = (loops[0, same] + 1) % (n_bodies + 1)  # no joint from a body to itself
    numbering = np.concatenate([[0], rng.permutation(n_bodies) + 1])
    incidence = numbering[np.concatenate([tree, loops], axis=1)]
    incidence = incidence[:, rng.permutation(n_joints)]
    flip = rng.random(n_joints) < 0.5
    incidence[:, flip] = incidence[::-1, flip]
    return incidence


def chain(n_bodies):
    """Serial chain ground-1-2-...-n: n leaf-peeling rounds."""
    return np.stack([np.arange(n_bodies), np.arange(1, n_bodies + 1)])


def time_case(incidence, **kwargs):
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        topo = analyze(incidence, **kwargs)
        times.append(time.perf_counter() - start)
    return topo, min(times), statistics.median(times)


def cases():
    for n in (1_000, 10_000, 100_000):
        yield f"random, {n:,} joints, 10% loops", random_system(n), {}
    weights = np.random.default_rng(2).integers(0, 6, size=100_000)
    yield "random, 100,000 joints, 10% loops, weights", random_system(100_000), {"weights": weights}
    yield "chain, 100,000 bodies", chain(100_000), {}


def table():
    rows = [
        "| case | bodies | joints | cut joints | best [s] | median [s] |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    worst_at_target = 0.0
    for name, incidence, kwargs in cases():
        topo, best, median = time_case(incidence, **kwargs)
        rows.append(
            f"| {name} | {topo.n_bodies:,} | {topo.n_joints:,} | {len(topo.cut_joints):,} "
            f"| {best:.4f} | {median:.4f} |"
        )
        if topo.n_joints >= TARGET_JOINTS:
            worst_at_target = max(worst_at_target, median)
    return "\n".join(rows), worst_at_target


def section(rows, worst):
    verdict = "met" if worst < TARGET_SECONDS else "NOT met"
    return "\n".join(
        [
            START,
            "## Topology (seed 001)",
            "",
            "`flexmbd.topology.analyze`: cut joints by union-find, regular labels by leaf "
            "peeling (Qi, Huang, Shao). No peer implements it: absolute times, best and median "
            f"of {REPEATS} runs.",
            "",
            f"- Target: 100,000 joints < {TARGET_SECONDS:g} s -- {verdict} "
            f"(slowest median at 100,000 joints: {worst:.3f} s).",
            f"- Command: `{COMMAND}`",
            machine_line(),
            "",
            rows,
            END,
        ]
    )


def update_results(text):
    """Replace our section of RESULTS.md (or append it); keep everything else."""
    replace_section(text, START, END)


def main():
    rows, worst = table()
    print(rows)
    print(f"\ntarget 100,000 joints < {TARGET_SECONDS:g} s: slowest median {worst:.3f} s")
    update_results(section(rows, worst))
    print(f"updated {RESULTS}")
    return 0 if worst < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
