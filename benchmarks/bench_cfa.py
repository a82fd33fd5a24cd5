"""Serialized CFA vs Pinocchio: per call, scaling, batched throughput.

Measures, in one run and on one machine, joint accelerations *and all joint
reactions* per call:

* flexmbd serialized CFA, ``system.qdd_and_reactions(q, qd, tau)`` (compiled
  kernels; Python call included);
* Pinocchio ``aba`` + ``rnea`` from Python (rnea at the aba accelerations gives
  the joint forces ``data.f``);

for the space robot of ``examples/space_robot.py`` and revolute chains
N = 5 ... 1000; the scaling exponent of N = 10 ... 1000, with the general (dense)
CFA and a dense mass-matrix method (M by Newton-Euler columns, Cholesky solve)
for contrast (the paper's Table 1); and 10,000 states of a 20-link chain
(one batched call vs Pinocchio looped from Python).

Pinocchio 4.1's ``createData`` allocates memory growing like N^3 (1.8 GB at
N = 300, 4.2 GB at N = 400): it is measured up to ``--pin-max`` (default 300).

With ``--flexible``: the CFA with flexible bodies (:mod:`flexmbd.recursive.flexible`)
on chains of N = 5 ... 200 Craig-Bampton beams with 8 modes each (revolute joints at
the deforming interfaces, gravity): per-call forward dynamics (accelerations and all
reactions) of the serialized kernels, with and without geometric stiffening, the dense
reference, and the absolute formulation's ``forward_dynamics`` on the same model and
state (with the agreement of the two); fitted exponents. It fills its own block of the
cfa section (``<!-- cfa-flex:start -->``), which the rigid run keeps.

Usage: ``python benchmarks/bench_cfa.py [--quick] [--no-cold] [--flexible] [--write]``
(``--write`` replaces the cfa section of benchmarks/RESULTS.md, or with ``--flexible``
its flexible block).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# one BLAS thread: the dense reference methods (general CFA, mass matrix) otherwise jump
# by 10-100x at the sizes where OpenBLAS starts threads on a shared 2-core machine, and
# the compiled kernels and Pinocchio use no BLAS threads either
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from results_file import machine_line, replace_section  # noqa: E402

from tests.recursive.models import chain  # noqa: E402
from tests.recursive.pin_models import (  # noqa: E402
    q_to_pin,
    to_pinocchio,
    v_from_pin,
    v_to_pin,
)

START, END = "<!-- cfa:start -->", "<!-- cfa:end -->"
FSTART, FEND = "<!-- cfa-flex:start -->", "<!-- cfa-flex:end -->"


def best_time(f, budget=0.25, repeats=7):
    """Best per-call CPU time (s) over ``repeats`` batches of ~budget/repeats each.

    CPU time of this process (``time.process_time``): on a shared machine it is
    far less sensitive than wall time to other jobs taking the cores.
    """
    f()
    t0 = time.process_time()
    f()
    one = max(time.process_time() - t0, 1e-6)
    n = max(1, int(budget / repeats / one))
    best = np.inf
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(n):
            f()
        best = min(best, (time.process_time() - t0) / n)
    return best


def load_space_robot():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "space_robot", ROOT / "examples" / "space_robot.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build()


def strip_drives(m):
    """The robot without its JointForce drives (benchmarks pass tau explicitly)."""
    import flexmbd as fm

    for name in ("arm1", "arm2"):
        blk = getattr(m, name)
        if "drive" in blk._components:
            delattr(blk, "drive")
    assert not any(isinstance(f, fm.JointForce) for f in m.forces())
    return m


def case(model, rng, pin_ok=True):
    import pinocchio as pin

    s = model.compile("recursive")
    q = s.normalize(rng.normal(size=s.nq))
    qd, tau = rng.normal(size=s.nv), rng.normal(size=s.nv)
    ours = best_time(lambda: s.qdd_and_reactions(q, qd, tau))
    qdd, reac = s.qdd_and_reactions(q, qd, tau)
    out = {"nv": s.nv, "ours": ours}
    if pin_ok:
        pm, maps = to_pinocchio(model)
        pd = pm.createData()
        qp, vp, tp = q_to_pin(maps, q), v_to_pin(maps, qd), v_to_pin(maps, tau)

        def pinf():
            a = pin.aba(pm, pd, qp, vp, tp)
            pin.rnea(pm, pd, qp, vp, a)

        out["pin"] = best_time(pinf)
        a = pin.aba(pm, pd, qp, vp, tp)
        pin.rnea(pm, pd, qp, vp, a)
        f = np.array(
            [np.concatenate([pd.f[i].angular, pd.f[i].linear]) for i in range(1, pm.njoints)]
        )
        out["err_qdd"] = np.linalg.norm(qdd - v_from_pin(maps, a)) / np.linalg.norm(qdd)
        out["err_f"] = np.linalg.norm(reac - f) / np.linalg.norm(f)
        del pd, pm
    return s, out


def dense_method(s, q, qd, tau):
    """Dense mass-matrix forward dynamics: M by Newton-Euler columns, b, Cholesky."""
    import scipy.linalg as sla

    M = s.mass_matrix(q)
    b = s.inverse_dynamics(q, qd, np.zeros(s.nv))[0]
    return sla.cho_solve(sla.cho_factor(M), tau - b)


def fit_exponent(ns, ts):
    ns, ts = np.asarray(ns, float), np.asarray(ts, float)
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def cold_compile_time():
    """First call in a fresh process with an empty numba cache (full compilation)."""
    code = (
        "import time, sys; sys.path.insert(0, %r);"
        "from tests.recursive.models import chain; import numpy as np;"
        "t = time.perf_counter(); s = chain(3).compile('recursive');"
        "s.qdd_and_reactions(np.zeros(3), np.zeros(3));"
        "s.forward_dynamics_batch(np.zeros((2, 3)), np.zeros((2, 3)));"
        "print(time.perf_counter() - t)"
    ).replace("%r", repr(str(ROOT)))
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d)
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes (smoke test)")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-compile measurement")
    ap.add_argument("--pin-max", type=int, default=300)
    ap.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    ap.add_argument(
        "--flexible",
        action="store_true",
        help="only the flexible-body CFA benchmark (its block of the cfa section)",
    )
    args = ap.parse_args(argv)
    if args.flexible:
        return flexible_main(args)
    import pinocchio as pin

    rng = np.random.default_rng(0)
    lines = []
    t_first = time.perf_counter()
    s3 = chain(3).compile("recursive")
    s3.qdd_and_reactions(np.zeros(3), np.zeros(3))
    s3.forward_dynamics_batch(np.zeros((2, 3)), np.zeros((2, 3)))
    warm = time.perf_counter() - t_first
    cold = None if args.no_cold else cold_compile_time()

    # --- per call
    rows = []
    robot = strip_drives(load_space_robot())
    _, r = case(robot, rng)
    rows.append(("space robot (13 bodies, floating)", r))
    sizes = [5, 10, 20, 50, 100] if args.quick else [5, 10, 20, 50, 100, 200, 500, 1000]
    chains = {}
    for n in sizes:
        s, r = case(chain(n), rng, pin_ok=n <= args.pin_max)
        chains[n] = (s, r)
        rows.append((f"revolute chain N = {n}", r))
        print(
            f"  per call N={n}: ours {r['ours'] * 1e6:.1f} us"
            + (f", pin {r['pin'] * 1e6:.1f} us" if "pin" in r else ""),
            file=sys.stderr,
        )

    # --- scaling: serialized vs general CFA vs dense mass matrix
    gen_sizes = [n for n in sizes if 10 <= n <= (100 if args.quick else 200)]
    dense_sizes = [n for n in sizes if 10 <= n <= (100 if args.quick else 500)]
    t_gen, t_dense = {}, {}
    for n in sorted(set(gen_sizes) | set(dense_sizes)):
        s = chains[n][0]
        q, qd, tau = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
        if n in gen_sizes:
            t_gen[n] = best_time(
                lambda s=s, q=q, qd=qd, tau=tau: s.forward_dynamics(
                    q, qd, tau, algorithm="general"
                ),
                budget=0.5,
                repeats=3,
            )
        if n in dense_sizes:
            t_dense[n] = best_time(
                lambda s=s, q=q, qd=qd, tau=tau: dense_method(s, q, qd, tau), budget=0.5, repeats=3
            )
    ser_ns = [n for n in sizes if n >= 10]
    exp_ser = fit_exponent(ser_ns, [chains[n][1]["ours"] for n in ser_ns])
    exp_gen = fit_exponent(list(t_gen), list(t_gen.values()))
    exp_dense = fit_exponent(list(t_dense), list(t_dense.values()))
    pin_ns = [n for n in ser_ns if "pin" in chains[n][1]]
    exp_pin = fit_exponent(pin_ns, [chains[n][1]["pin"] for n in pin_ns])
    # straight-line fits t = fixed + N * per body over the chains both codes ran: the
    # fixed part is mostly the Python call, the slope the compiled arithmetic
    lin_ns = [n for n in sizes if "pin" in chains[n][1]]
    lin_ours = np.polyfit(lin_ns, [chains[n][1]["ours"] for n in lin_ns], 1)
    lin_pin = np.polyfit(lin_ns, [chains[n][1]["pin"] for n in lin_ns], 1)

    # --- batched: 10,000 states of a 20-link chain
    nb = 2000 if args.quick else 10000
    m20 = chain(20)
    s20 = m20.compile("recursive")
    Q, V, T = (rng.normal(size=(nb, 20)) for _ in range(3))
    s20.forward_dynamics_arrays(Q[:2], V[:2], T[:2])
    t_batch = t_batch2 = np.inf
    s20.forward_dynamics_arrays(Q[:4], V[:4], T[:4], threads=2)
    for _ in range(3):
        t0 = time.process_time()
        qdd_b, reac_b = s20.forward_dynamics_arrays(Q, V, T, threads=1)
        t_batch = min(t_batch, time.process_time() - t0)
        t0 = time.perf_counter()
        s20.forward_dynamics_arrays(Q, V, T, threads=2)
        t_batch2 = min(t_batch2, time.perf_counter() - t0)
    pm, maps = to_pinocchio(m20)
    pd = pm.createData()
    t_pin_loop = np.inf
    for _ in range(3):
        t0 = time.process_time()
        for i in range(nb):
            a = pin.aba(pm, pd, Q[i], V[i], T[i])
            pin.rnea(pm, pd, Q[i], V[i], a)
        t_pin_loop = min(t_pin_loop, time.process_time() - t0)
    err_b = np.abs(a - qdd_b[-1]).max() / np.abs(a).max()
    t_ours_loop = np.inf
    for _ in range(3):
        t0 = time.process_time()
        for i in range(nb):
            s20.qdd_and_reactions(Q[i], V[i], T[i])
        t_ours_loop = min(t_ours_loop, time.process_time() - t0)

    # --- report
    load = os.getloadavg()
    lines += [
        "## CFA tree solver vs Pinocchio",
        "",
        "Joint accelerations **and all joint reactions** per call: flexmbd serialized CFA "
        "(`system.qdd_and_reactions`, numba kernels) vs Pinocchio `aba` + `rnea` from Python "
        "(rnea at the aba accelerations yields the joint forces). Best CPU time of 7 "
        "batches (process time: the machine is shared); numba compilation excluded (warm-up) "
        "and reported below. Ratio = ours / pin (< 1: faster than pin).",
        "",
        f"- Command: `python benchmarks/bench_cfa.py{' --quick' if args.quick else ''} --write`",
        machine_line(f"pin {pin.__version__}", load=load[0], extra="ratios taken in the same run"),
        f"- Numba compile: cold (empty cache) {cold:.1f} s; warm start (cached kernels) "
        f"{warm:.2f} s"
        if cold is not None
        else f"- Numba compile: warm start (cached kernels) {warm:.2f} s (cold not measured)",
        "",
        "| case | nv | flexmbd [us] | pin aba+rnea [us] | ratio | max rel. diff qdd / forces |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, r in rows:
        if "pin" in r:
            lines.append(
                f"| {name} | {r['nv']} | {r['ours'] * 1e6:.1f} | {r['pin'] * 1e6:.1f} | "
                f"{r['ours'] / r['pin']:.2f} | {r['err_qdd']:.1e} / {r['err_f']:.1e} |"
            )
        else:
            lines.append(
                f"| {name} | {r['nv']} | {r['ours'] * 1e6:.1f} | n/a (pin createData "
                "memory ~N^3) | | |"
            )
    lines += [
        "",
        "Scaling (revolute chains, fitted exponent of time vs N):",
        "",
        f"- serialized CFA, N = {ser_ns[0]}..{ser_ns[-1]}: **{exp_ser:.2f}** (target <= 1.1)",
        f"- Pinocchio aba+rnea, N = {pin_ns[0]}..{pin_ns[-1]}: {exp_pin:.2f}",
        f"- general (dense) CFA, eq. 4-29, N = {min(t_gen)}..{max(t_gen)}: {exp_gen:.2f}",
        f"- dense mass-matrix method (M by Newton-Euler columns + Cholesky), "
        f"N = {min(t_dense)}..{max(t_dense)}: {exp_dense:.2f}",
        "",
        f"Straight-line fits, time = fixed + N x per body (chains N = {lin_ns[0]}..{lin_ns[-1]}):"
        f" flexmbd {lin_ours[1] * 1e6:.2f} us + {lin_ours[0] * 1e9:.0f} ns/body; Pinocchio "
        f"aba+rnea {lin_pin[1] * 1e6:.2f} us + {lin_pin[0] * 1e9:.0f} ns/body (the fixed part "
        "is mostly the Python call: wrapper, argument checks, new result arrays).",
        "",
        "| N | serialized CFA [us] | general CFA [us] | dense mass matrix [us] |",
        "|---:|---:|---:|---:|",
    ]
    for n in sorted(set(ser_ns)):
        g = f"{t_gen[n] * 1e6:.0f}" if n in t_gen else "-"
        d = f"{t_dense[n] * 1e6:.0f}" if n in t_dense else "-"
        lines.append(f"| {n} | {chains[n][1]['ours'] * 1e6:.1f} | {g} | {d} |")
    lines += [
        "",
        f"Batched: {nb:,} random states of a 20-link chain (qdd + all reactions)",
        "",
        "Single-threaded rows: best CPU time of 3 runs; the threaded row: best wall time "
        "(CPU time would add both threads).",
        "",
        "| method | total [ms] | per state [us] | throughput vs pin looped |",
        "|---|---:|---:|---:|",
        f"| flexmbd `forward_dynamics_arrays(..., threads=1)` (one compiled loop) | "
        f"{t_batch * 1e3:.1f} | "
        f"{t_batch / nb * 1e6:.2f} | {t_pin_loop / t_batch:.2f}x |",
        f"| flexmbd `forward_dynamics_arrays(..., threads=2)` (2 threads; wall time, the "
        "other core is often busy on this shared machine) | "
        f"{t_batch2 * 1e3:.1f} | {t_batch2 / nb * 1e6:.2f} | {t_pin_loop / t_batch2:.2f}x |",
        f"| flexmbd `qdd_and_reactions` looped from Python | {t_ours_loop * 1e3:.1f} | "
        f"{t_ours_loop / nb * 1e6:.2f} | {t_pin_loop / t_ours_loop:.2f}x |",
        f"| pin aba+rnea looped from Python | {t_pin_loop * 1e3:.1f} | "
        f"{t_pin_loop / nb * 1e6:.2f} | 1.00x |",
        "",
        f"(last batched state: qdd agrees with pin to {err_b:.1e})",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        path = ROOT / "benchmarks" / "RESULTS.md"
        old = path.read_text() if path.exists() else "# Benchmark results\n"
        flex = ""
        if FSTART in old and FEND in old:  # keep the flexible block of an earlier run
            flex = "\n\n" + old[old.index(FSTART) : old.index(FEND) + len(FEND)]
        replace_section(f"{START}\n{text}{flex}\n{END}", START, END, path)
        print(f"wrote {path}", file=sys.stderr)


# ---------------------------------------------------------------- flexible bodies


def flexible_chain(n, stiff=False):
    """N Craig-Bampton beams (8 modes: 2 fixed-interface + 6 constraint modes of the tip
    interface), revolutes about alternating axes at the deforming interfaces, gravity."""
    import flexmbd as fm
    from tests.recursive.test_flexible_cfa import A0, beam

    rb = beam(2, "cb")
    m = fm.Model(f"flex_chain_{n}")
    prev, pf = m.ground, A0
    for i in range(n):
        b = fm.FlexibleBody(rb, geometric_stiffening=stiff)
        setattr(m, f"b{i}", b)
        setattr(
            m,
            f"j{i}",
            fm.Revolute(
                prev,
                b,
                axis=(0, 0, 1) if i % 2 == 0 else (0, 1, 0),
                parent_frame=pf,
                child_frame=b.interface("A"),
            ),
        )
        prev, pf = b, b.interface("B")
    m.g = fm.Gravity((0, -9.81, 0))
    return m


def _flex_state(s, rng):
    q = s.q0() + 0.3 * rng.normal(size=s.nq)
    qd = rng.normal(size=s.nv)
    for sq, sv in s.modal_slices.values():
        q[sq] = 1e-6 * rng.normal(size=sq.stop - sq.start)
        qd[sv] = 1e-4 * rng.normal(size=sv.stop - sv.start)
    return q, qd


def flexible_main(args):

    rng = np.random.default_rng(1)
    sizes = [5, 10, 20, 50] if args.quick else [5, 10, 20, 50, 100, 200]
    abs_max = 50 if args.quick else 200
    gen_max = 20 if args.quick else 50
    t_first = time.perf_counter()
    flexible_chain(2).compile("recursive").qdd_and_reactions(
        *_flex_state(flexible_chain(2).compile("recursive"), rng)
    )
    warm = time.perf_counter() - t_first
    rows = []
    for n in sizes:
        m = flexible_chain(n)
        s = m.compile("recursive")
        q, qd = _flex_state(s, rng)
        r = {"n": n, "nv": s.nv}
        r["ours"] = best_time(lambda s=s, q=q, qd=qd: s.qdd_and_reactions(q, qd))
        st = flexible_chain(n, stiff=True).compile("recursive")
        r["stiff"] = best_time(lambda st=st, q=q, qd=qd: st.qdd_and_reactions(q, qd))
        st.qdd_and_reactions(q, qd)
        r["iters"] = int(st._flex.info[0])
        qdd, reac = s.qdd_and_reactions(q, qd)
        if n <= gen_max:
            sg = m.compile("recursive", algorithm="general")
            r["general"] = best_time(
                lambda sg=sg, q=q, qd=qd: sg.qdd_and_reactions(q, qd), budget=0.5, repeats=3
            )
            qg, rg = sg.qdd_and_reactions(q, qd)
            r["err_gen"] = max(
                np.abs(qg - qdd).max() / np.abs(qdd).max(),
                np.abs(rg - reac).max() / np.abs(reac).max(),
            )
        if n <= abs_max:
            ab = m.compile("absolute")
            Q, QD = ab.state_from_bodies(s.body_states(q, qd))
            for name, (sq, sv) in s.modal_slices.items():
                Q[ab.modal_slices[name].q], QD[ab.modal_slices[name].q] = q[sq], qd[sv]
            r["abs"] = best_time(
                lambda ab=ab, Q=Q, QD=QD: ab.forward_dynamics(Q, QD), budget=1.0, repeats=3
            )
            fa = ab.forward_dynamics(Q, QD)
            ra = np.array([fa.reaction(nm) for nm in s.joint_names])
            qm = np.concatenate([qdd[sv] for _, sv in s.modal_slices.values()])
            qa = np.concatenate([ab.modal(fa.qdd, nm) for nm in s.modal_slices])
            r["err_abs"] = max(
                np.abs(ra - reac).max() / np.abs(reac).max(),
                np.abs(qa - qm).max() / np.abs(qm).max(),
            )
        rows.append(r)
        print(
            f"  flexible chain N={n}: ours {r['ours'] * 1e6:.0f} us, stiffened "
            f"{r['stiff'] * 1e6:.0f} us"
            + (f", absolute {r['abs'] * 1e3:.1f} ms" if "abs" in r else ""),
            file=sys.stderr,
        )
    ns = [r["n"] for r in rows]
    e_ours = fit_exponent(ns, [r["ours"] for r in rows])
    e_stiff = fit_exponent(ns, [r["stiff"] for r in rows])
    na = [r["n"] for r in rows if "abs" in r]
    e_abs = fit_exponent(na, [r["abs"] for r in rows if "abs" in r])
    ng = [r["n"] for r in rows if "general" in r]
    e_gen = fit_exponent(ng, [r["general"] for r in rows if "general" in r])
    load = os.getloadavg()
    lines = [
        FSTART,
        "## CFA with flexible bodies",
        "",
        "Forward dynamics (joint and modal accelerations **and every joint reaction**) of "
        "chains of N flexible bodies, each a Craig-Bampton beam (1.0 x 0.05 x 0.05 m steel, "
        "8 x 2 x 2 hexahedra) with **8 modes** (2 fixed-interface + 6 constraint modes of the "
        "tip interface), revolute joints about alternating axes at the deforming interfaces, "
        "gravity; nv = N (joints) + 8 N (modes). Best CPU time per call "
        "(`qdd_and_reactions`; the absolute formulation's `forward_dynamics` on the same "
        "model and state, sparse KKT solve). Geometric stiffening: current inertia loads and "
        "interface wrenches, fixed point on the right-hand side (iterations in the table).",
        "",
        f"- Command: `python benchmarks/bench_cfa.py --flexible{' --quick' if args.quick else ''}"
        " --write`",
        machine_line(load=load[0], extra=f"warm start (cached kernels) {warm:.2f} s"),
        "",
        "| N | nv | serialized CFA [us] | per body [us] | with stiffening [us] (iterations) | "
        "general CFA [us] | absolute fd [ms] | absolute / CFA | max rel. diff vs absolute |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        g = f"{r['general'] * 1e6:.0f}" if "general" in r else "-"
        a = f"{r['abs'] * 1e3:.1f}" if "abs" in r else "-"
        ratio = f"{r['abs'] / r['ours']:.0f}x" if "abs" in r else "-"
        err = f"{r['err_abs']:.1e}" if "abs" in r else "-"
        lines.append(
            f"| {r['n']} | {r['nv']} | {r['ours'] * 1e6:.0f} | "
            f"{r['ours'] * 1e6 / r['n']:.1f} | {r['stiff'] * 1e6:.0f} ({r['iters']}) | "
            f"{g} | {a} | {ratio} | {err} |"
        )
    lines += [
        "",
        "Fitted exponents of time vs N:",
        "",
        f"- serialized CFA with flexible bodies, N = {ns[0]}..{ns[-1]}: **{e_ours:.2f}** "
        f"(with stiffening {e_stiff:.2f})",
        f"- general (dense) CFA, N = {ng[0]}..{ng[-1]}: {e_gen:.2f} "
        f"(agrees with the serialized kernels to "
        f"{max(r['err_gen'] for r in rows if 'err_gen' in r):.1e})",
        f"- absolute formulation forward dynamics, N = {na[0]}..{na[-1]}: {e_abs:.2f}",
        FEND,
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        path = ROOT / "benchmarks" / "RESULTS.md"
        old = path.read_text()
        if FSTART in old and FEND in old:
            new = old[: old.index(FSTART)] + text + old[old.index(FEND) + len(FEND) :]
        elif END in old:
            new = old[: old.index(END)].rstrip("\n") + "\n\n" + text + "\n" + old[old.index(END) :]
        else:
            new = old.rstrip("\n") + "\n\n" + f"{START}\n{text}\n{END}" + "\n"
        path.write_text(new)
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
