"""CPU and wall time of ``fm.viz.animate`` from a fresh process: this tree vs an older one.

The case is the README's flexible pendulum (the shipped 40 x 4 x 4 hex beam, 8
Craig-Bampton modes, revolute joint at face A, gravity -9.81 y, 0.5 s at dt = 1e-3
with generalized-alpha: 501 samples) animated with ``scale=50`` and the default
``max_frames=200`` (stride 3: 167 frames, 640 x 480 GIF). Each tree runs in its own
child process (``PYTHONPATH`` = the tree): the child builds and simulates the model,
then times the ``animate`` call alone -- set-up included (importing VTK, or PyVista
for the old tree, the GL probe, building the scene) -- as CPU time of the process plus
its children
(``resource.getrusage``) and wall time. The numba kernels of the simulation are
compiled (and cached) by a warm-up child first.

Run: ``python benchmarks/bench_viz.py --base /tmp/base`` with ``/tmp/base`` a
copy of the old commit (``mkdir /tmp/base && git archive 562cc95 | tar -x -C /tmp/base``,
or a worktree); ``--write`` puts the table into ``benchmarks/RESULTS.md``.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import machine_line, markers, replace_section  # noqa: E402

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
BASELINE = "562cc95"


def _cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def child(tree, out, t_end=0.5, scale=50.0):
    """Simulate the README pendulum with the flexmbd of ``tree``; time ``animate``."""
    import flexmbd as fm

    steel = fm.Material(E=2.1e11, nu=0.3, rho=7850.0)
    beam = fm.fem.reduce(
        str(Path(tree) / "meshes" / "beam_hex.msh"),
        steel,
        fm.CraigBampton(8, interfaces={"A": "A"}, frame="interface"),
        name="beam",
    )
    p = fm.Model("flexible_pendulum")
    p.beam = fm.FlexibleBody(beam)
    p.hinge = fm.Revolute(
        p.ground,
        p.beam,
        axis=(0, 0, 1),
        parent_frame=(0, 0.025, 0.025),
        child_frame=p.beam.interface("A"),
    )
    p.g = fm.Gravity((0, -9.81, 0))
    run = p.simulate(t_end=t_end, dt=1e-3, integrator="generalized-alpha")
    loaded = sorted(m for m in ("pyvista", "vtk", "vtkmodules", "matplotlib") if m in sys.modules)
    cpu, wall = _cpu(), time.perf_counter()
    n = fm.viz.animate(run, out, scale=scale)
    cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    return {
        "frames": int(n),
        "cpu": cpu,
        "wall": wall,
        "bytes": Path(out).stat().st_size,
        "preloaded": loaded,
        "file": fm.__file__,
    }


def run_child(tree, out):
    env = {k: v for k, v in os.environ.items() if k not in ("FLEXMBD_GL_PROBED", "PYTHONPATH")}
    env["PYTHONPATH"] = str(tree)
    env["FLEXMBD_PROGRESS"] = "0"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(tree), "--out", out]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("bench-viz ")]
    if r.returncode or not lines:
        raise SystemExit(f"child for {tree} failed:\n{r.stdout}\n{r.stderr}")
    return json.loads(lines[-1][len("bench-viz ") :])


def _load():
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover
        return float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help=f"worktree of the old commit (e.g. {BASELINE})")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per tree (best kept)")
    ap.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print("bench-viz " + json.dumps(child(a.child, a.out)), flush=True)
        return
    trees = [("now", TREE)] + ([("before", Path(a.base))] if a.base else [])
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, tree in trees:
            run_child(tree, str(Path(tmp) / f"warm_{name}.gif"))  # numba caches
        for k in range(a.repeat):
            for name, tree in trees:  # interleaved: both see the same load
                r = run_child(tree, str(Path(tmp) / f"{name}_{k}.gif"))
                r["load"] = _load()
                rows.setdefault(name, []).append(r)
                print(
                    f"{name:6s} run {k}: {r['frames']} frames, CPU {r['cpu']:.2f} s, "
                    f"wall {r['wall']:.2f} s, {r['bytes'] / 1e6:.2f} MB, "
                    f"load {r['load']:.1f}",
                    flush=True,
                )
    best = {n: min(rs, key=lambda r: r["cpu"]) for n, rs in rows.items()}
    for n, b in best.items():
        print(
            f"best {n}: CPU {b['cpu']:.2f} s, wall {b['wall']:.2f} s "
            f"({1000 * b['cpu'] / b['frames']:.1f} ms CPU per frame incl. set-up)"
        )
    if "before" in best:
        print(
            f"speed-up (CPU): {best['before']['cpu'] / best['now']['cpu']:.1f}x, "
            f"(wall): {best['before']['wall'] / best['now']['wall']:.1f}x"
        )
    if a.write:
        write(rows, best, a)


def write(rows, best, a):

    lines = [
        "## Animation: `fm.viz.animate` before and after",
        "",
        "The README's flexible pendulum (0.5 s, 501 samples, 8 Craig-Bampton modes on the "
        "1,025-node hex beam) animated with `scale=50` and the defaults (`max_frames=200`: "
        "167 frames, 640 x 480 GIF, colour = displacement). Each tree runs in a fresh "
        "process; the time is that of the `animate` call alone, set-up included (VTK "
        'import -- PyVista with matplotlib for "before" --, GL probe -- "now" finds '
        "its verdict and the colour table in the user cache after the first run, "
        '"before" runs the probe child every time --, scene), CPU of the '
        "process and its children. Best of "
        f"{a.repeat} interleaved runs (all listed).",
        "",
        f"- Command: `python benchmarks/bench_viz.py --base /tmp/base --write` "
        f"(`/tmp/base`: `git archive {BASELINE} | tar -x -C /tmp/base`)",
        machine_line(),
        "",
        "| tree | frames | CPU best [s] | wall at best [s] | CPU per frame [ms] | "
        "all CPU [s] | GIF [MB] |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for n, b in best.items():
        runs = ", ".join(format(r["cpu"], ".2f") for r in rows[n])
        label = f"before ({BASELINE})" if n == "before" else "now"
        lines.append(
            f"| {label} | {b['frames']} | {b['cpu']:.2f} | {b['wall']:.2f} | "
            f"{1000 * b['cpu'] / b['frames']:.1f} | "
            f"{runs} | "
            f"{b['bytes'] / 1e6:.2f} |"
        )
    if "before" in best:
        lines += [
            "",
            f"Speed-up: **{best['before']['cpu'] / best['now']['cpu']:.1f}x** CPU, "
            f"{best['before']['wall'] / best['now']['wall']:.1f}x wall.",
        ]
    path = replace_section("\n".join(lines), *markers("viz"))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
