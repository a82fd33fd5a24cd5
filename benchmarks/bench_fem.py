"""FEM reduction benchmark: flexmbd vs Exudyn's FEMinterface on the same matrices.

Cases: clamped-free hex8 beams 80x8x8 (19,683 DOF) and 140x14x14 (95,175 DOF),
interfaces A (x=0, the body frame) and B (x=L), both rigid (RBE2).

flexmbd, timed per stage from one ``FEModel`` + one ``reduce`` call:
assembly (K, M), 8 Craig-Bampton modes (+6 constraint modes of B; split into
partition / factorization of K_ii / constraint modes / eigen solve),
invariants, stress modes, and the unit geometric-stiffness set (24 load cases:
static solves / K_G assembly / projection).  The symbolic-analysis cache is
cleared before every repeat, so every repeat pays the full factorization.
Also ``NormalModes(8)`` free-free (its own factorization of K - sigma M).

Exudyn (peer): ``ComputeHurtyCraigBamptonModes`` (RBE2, 8 eigenmodes, sparse)
and ``ComputeEigenmodes`` (free-free, 8 modes) fed the same scipy CSR K and M
(assembly not included for the peer).  At the large size the peer runs in a
subprocess with a time limit (``--peer-timeout``).  Frequencies of the reduced
models are compared.  Peak memory is the process's max RSS after the flexmbd runs.

The machine is shared (2 cores): the load average is recorded with every run,
and the small case is repeated (``--repeats``, best of 3 reported).

Run: ``python benchmarks/bench_fem.py [--small] [--write]``; ``--write``
replaces the fem section of benchmarks/RESULTS.md.
"""

import argparse
import gc
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.linalg as sla
import scipy.sparse as sp
import skfem

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from results_file import replace_section  # noqa: E402

import flexmbd.fem as F  # noqa: E402
from flexmbd.fem import _threads  # noqa: E402
from flexmbd.fem.eigen import SYMBOLIC_CACHE, available_backends  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
START, END = "<!-- fem:start -->", "<!-- fem:end -->"
STEEL = F.Material(2.1e11, 0.3, 7850, name="steel")

BEFORE = """Before this round (commit 2b4e057: cholespy backend = simplicial CHOLMOD with reference
BLAS, ARPACK, skfem `CellBasis` assembly, K_G assembled and projected load by load; load 3-5):
19,683 DOF: assembly 0.95 s, CB 8 + invariants + stress 7.46 s (2.9 s idle, of which
factorization 1.5 s), unit K_G set 4.35 s, NormalModes 8 7.31 s, Exudyn HCB 7.93 s; 95,175 DOF:
assembly 6.44 s, CB 8 + invariants + stress 119.6 s (factorization of K_ii 45-96 s), unit K_G set
13.3 s, NormalModes 8 79.5 s, 2.15 GiB."""


def peak_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def beam(nx, ny):
    return skfem.MeshHex1.init_tensor(
        np.linspace(0, 1.0, nx + 1), np.linspace(0, 0.05, ny + 1), np.linspace(0, 0.05, ny + 1)
    )


def interfaces():
    return {"A": F.Plane((0, 0, 0), (1, 0, 0)), "B": F.Plane((1, 0, 0), (1, 0, 0))}


def run_flexmbd(mesh):
    """One full run: assembly, CB 8 + invariants + stress modes + unit K_G set."""
    SYMBOLIC_CACHE.clear()
    gc.collect()
    load0 = os.getloadavg()[0]
    c0, t0 = time.process_time(), time.perf_counter()
    model = F.FEModel(mesh, STEEL)
    t_asm = time.perf_counter() - t0
    rb = F.reduce(
        None,
        strategy=F.CraigBampton(8, interfaces(), frame="interface"),
        model=model,
        geometric=True,
    )
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    tm = dict(rb.timings)
    core = t_asm + tm["modes"] + tm["invariants"]
    row = {
        "asm": t_asm,
        "modes": tm["modes"],
        "inv": tm["invariants"],
        "stress": tm["stress_modes"],
        "kg": tm["geometric"],
        "core": core,
        "total": wall,
        "cpu": cpu,
        "load": (load0 + os.getloadavg()[0]) / 2,
        "factor": tm.get("modes.factor", np.nan),
        "eigen": tm.get("modes.eigen", np.nan),
        "kg_static": tm.get("geometric.static", np.nan),
        "kg_assemble": tm.get("geometric.assemble", np.nan),
        "kg_project": tm.get("geometric.project", np.nan),
        "f_cb": np.sort(rb.frequencies)[:4],
        "n_kg": rb.kg_unit.shape[0],
    }
    return model, rb, row


def run_normal(model):
    SYMBOLIC_CACHE.clear()
    model.forget_factorizations()
    t0 = time.perf_counter()
    rb = F.reduce(None, strategy=F.NormalModes(8), model=model, geometric=False, stress_modes=False)
    return time.perf_counter() - t0, rb.frequencies


def exudyn_cb(nodes, K, M, nodesA, nodesB):
    from exudyn.FEM import FEMinterface

    fem = FEMinterface()
    fem.nodes = {"Position": np.asarray(nodes).copy()}
    fem.massMatrix = M.tocsr()
    fem.stiffnessMatrix = K.tocsr()
    t0 = time.perf_counter()
    fem.ComputeHurtyCraigBamptonModes(
        boundaryNodesList=[list(nodesA), list(nodesB)], nEigenModes=8, useSparseSolver=True
    )
    t_cb = time.perf_counter() - t0
    Phi = np.asarray(fem.modeBasis["matrix"])
    Kr, Mr = Phi.T @ (K @ Phi), Phi.T @ (M @ Phi)
    f_cb = np.sqrt(np.abs(sla.eigh(Kr, Mr, eigvals_only=True))) / (2 * np.pi)
    return t_cb, np.sort(f_cb)[:4]


def exudyn_eig(nodes, K, M):
    from exudyn.FEM import FEMinterface

    fem = FEMinterface()
    fem.nodes = {"Position": np.asarray(nodes).copy()}
    fem.massMatrix, fem.stiffnessMatrix = M.tocsr(), K.tocsr()
    t0 = time.perf_counter()
    fem.ComputeEigenmodes(8, excludeRigidBodyModes=6, useSparseSolver=True)
    return time.perf_counter() - t0, np.asarray(fem.GetEigenFrequenciesHz())[:4]


def peer_worker(path):
    """Subprocess entry: Exudyn HCB on matrices stored in ``path`` (npz)."""
    z = np.load(path)
    K = sp.csr_matrix((z["K_data"], z["K_indices"], z["K_indptr"]), shape=tuple(z["shape"]))
    M = sp.csr_matrix((z["M_data"], z["M_indices"], z["M_indptr"]), shape=tuple(z["shape"]))
    t, f = exudyn_cb(z["nodes"], K, M, z["nodesA"], z["nodesB"])
    print(f"RESULT {t:.3f} " + " ".join(f"{x:.6f}" for x in f), flush=True)


def run_peer_subprocess(model, nodesA, nodesB, timeout):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "km.npz"
        K, M = model.K.tocsr(), model.M.tocsr()
        np.savez(
            path,
            K_data=K.data,
            K_indices=K.indices,
            K_indptr=K.indptr,
            M_data=M.data,
            M_indices=M.indices,
            M_indptr=M.indptr,
            shape=np.array(K.shape),
            nodes=model.fe.nodes,
            nodesA=nodesA,
            nodesB=nodesB,
        )
        t0 = time.perf_counter()
        try:
            r = subprocess.run(
                [sys.executable, __file__, "--peer-worker", str(path)],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {"peer_stopped": time.perf_counter() - t0}
        for line in r.stdout.splitlines():
            if line.startswith("RESULT"):
                v = [float(x) for x in line.split()[1:]]
                return {"peer_cb": v[0], "peer_f_cb": np.array(v[1:])}
        return {"peer_error": (r.stderr or r.stdout)[-300:]}


def machine_info():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import sksparse

        sks = getattr(sksparse, "__version__", None)
        if sks is None:
            from importlib.metadata import version

            sks = version("scikit-sparse")
    except Exception:
        sks = "not installed"
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    pools = sorted({Path(p).name for p in _threads.openblas_pools()})
    return (
        f"{platform.machine()} {cpu}, {os.cpu_count()} cores, {mem:.0f} GiB; Python "
        f"{platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"scikit-fem {skfem.__version__}, scikit-sparse {sks}; factorization backend "
        f"`{available_backends()[0]}` (auto order: {' > '.join(available_backends())}); "
        f"OpenBLAS pools {', '.join(pools)} limited to {_threads.FEM_THREADS} thread(s) "
        f"inside flexmbd.fem"
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="only the 19,683-DOF case")
    ap.add_argument("--write", action="store_true", help="write benchmarks/RESULTS.md section")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the small case")
    ap.add_argument("--repeats-large", type=int, default=1)
    ap.add_argument(
        "--peer-timeout",
        type=float,
        default=300.0,
        help="time limit (s) of the Exudyn run at the large size",
    )
    ap.add_argument("--peer-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer_worker:
        return peer_worker(args.peer_worker)
    cases = [(80, 8)] if args.small else [(80, 8), (140, 14)]
    rows = []
    for nx, ny in cases:
        mesh = beam(nx, ny)
        small = nx == 80
        reps = args.repeats if small else args.repeats_large
        runs = []
        for _ in range(reps):
            model, rb, row = run_flexmbd(mesh)
            runs.append(row)
            print(
                f"flexmbd {model.n_dofs} DOF: "
                + ", ".join(f"{k} {v:.3f}" for k, v in row.items() if np.isscalar(v)),
                flush=True,
            )
        best = dict(min(runs, key=lambda r: r["total"]))
        best["totals"] = [r["total"] for r in runs]
        best["loads"] = [r["load"] for r in runs]
        best["dof"] = model.n_dofs
        nm = [run_normal(model) for _ in range(reps)]
        best["nm"] = min(t for t, _ in nm)
        best["f_nm"] = nm[0][1][:4]
        best["mem"] = peak_gib()
        fA = F.Plane((0, 0, 0), (1, 0, 0))(model.fe)
        fB = F.Plane((1, 0, 0), (1, 0, 0))(model.fe)
        if not args.no_peer:
            if small:
                peer = [exudyn_cb(model.fe.nodes, model.K, model.M, fA, fB) for _ in range(reps)]
                best["peer_cb"] = min(t for t, _ in peer)
                best["peer_f_cb"] = peer[0][1]
                eig = [exudyn_eig(model.fe.nodes, model.K, model.M) for _ in range(reps)]
                best["peer_eig"] = min(t for t, _ in eig)
                best["peer_f_eig"] = eig[0][1]
            else:
                best.update(run_peer_subprocess(model, fA, fB, args.peer_timeout))
        rows.append(best)
        print(f"done {model.n_dofs} DOF", flush=True)
        del model, rb
    text = table(rows, args)
    print(text)
    if args.write:
        write_section(text)


def _f(x, nd=2):
    return "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{nd}f}"


def table(rows, args):
    cmd = "python benchmarks/bench_fem.py" + (" --small" if args.small else "") + " --write"
    lines = [
        f"Machine: {machine_info()}.",
        f"Command: `{cmd}`.  Times are wall-clock seconds; the machine is shared with other "
        "sessions (2 cores), the load average of each run is listed.  Small case: best of "
        f"{args.repeats} complete runs (all totals listed); large case: "
        f"{args.repeats_large} run(s).",
        "",
        "| DOF | assembly | CB 8 modes (factor K_ii / eigen) | invariants | **assembly + CB + "
        "invariants** | stress modes | unit K_G set (static / assemble / project) | **total** "
        "(CPU) | Exudyn HCB | NormalModes 8 | Exudyn eigenmodes 8 | peak RSS (GiB) | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "peer_cb" in r:
            peer = _f(r["peer_cb"])
        elif "peer_stopped" in r:
            peer = f"stopped after {r['peer_stopped']:.0f} s"
        elif "peer_error" in r:
            peer = "failed"
        else:
            peer = "not run"
        lines.append(
            f"| {r['dof']:,} | {_f(r['asm'])} | {_f(r['modes'])} ({_f(r['factor'])} / "
            f"{_f(r['eigen'])}) | {_f(r['inv'], 3)} | **{_f(r['core'])}** | {_f(r['stress'])} | "
            f"{_f(r['kg'])} ({_f(r['kg_static'])} / {_f(r['kg_assemble'])} / "
            f"{_f(r['kg_project'])}) | **{_f(r['total'])}** ({_f(r['cpu'])}) | {peer} | "
            f"{_f(r['nm'])} | {_f(r.get('peer_eig'))} | {r['mem']:.2f} | "
            f"{', '.join(f'{x:.1f}' for x in r['loads'])} |"
        )
    lines.append("")
    for r in rows:
        if len(r["totals"]) > 1:
            lines.append(
                f"- {r['dof']:,} DOF: totals of the {len(r['totals'])} runs "
                f"{', '.join(f'{x:.2f}' for x in r['totals'])} s."
            )
    lines.append("")
    lines.append("Frequencies (Hz) of the reduced models, first four:")
    lines.append("")
    for r in rows:
        s = f"- {r['dof']:,} DOF: CB flexmbd {np.round(r['f_cb'], 4).tolist()}"
        if "peer_f_cb" in r:
            s += f", Exudyn HCB {np.round(r['peer_f_cb'], 4).tolist()}"
        s += f"; free-free normal modes flexmbd {np.round(r['f_nm'], 4).tolist()}"
        if "peer_f_eig" in r:
            s += f", Exudyn {np.round(r['peer_f_eig'], 4).tolist()}"
        lines.append(s)
    lines += ["", BEFORE]
    return "\n".join(lines)


def write_section(text):
    replace_section(f"## FEM reduction (flexmbd.fem vs Exudyn FEMinterface)\n\n{text}", START, END)


if __name__ == "__main__":
    main()
