"""FEM reduction benchmark: flexmbd vs Exudyn's FEMinterface on the same matrices.

Cases: clamped-free hex8 beams 80x8x8 (19,683 DOF) and 140x14x14 (95,175 DOF),
interfaces A (x=0, the body frame) and B (x=L), both rigid (RBE2).

flexmbd, timed: assembly (K, M), 8 Craig-Bampton modes (+6 constraint modes of
B), invariants, stress modes; the unit geometric-stiffness set (18 + 12 load
cases) separately.  Exudyn (peer), timed: ``ComputeHurtyCraigBamptonModes`` (RBE2,
8 eigenmodes, sparse) fed the same scipy CSR K and M, and ``ComputeEigenmodes``
(free-free, 8 modes) — assembly not included for the peer.  Frequencies of the
reduced models are compared.  Peak memory is the process's max RSS.

Run: ``python benchmarks/bench_fem.py [--small] [--write]``; ``--write``
replaces the fem section of benchmarks/RESULTS.md.
"""

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg as sla
import skfem

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import flexmbd.fem as F  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
START, END = "<!-- fem:start -->", "<!-- fem:end -->"


def peak_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def beam(nx, ny):
    return skfem.MeshHex1.init_tensor(np.linspace(0, 1.0, nx + 1), np.linspace(0, 0.05, ny + 1),
                                      np.linspace(0, 0.05, ny + 1))


def run_flexmbd(mesh, steel):
    A, B = F.Plane((0, 0, 0), (1, 0, 0)), F.Plane((1, 0, 0), (1, 0, 0))
    t0 = time.perf_counter()
    model = F.FEModel(mesh, steel)
    t_asm = time.perf_counter() - t0
    t0 = time.perf_counter()
    rb = F.reduce(None, strategy=F.CraigBampton(8, {"A": A, "B": B}), model=model,
                  geometric=False)
    t_red = time.perf_counter() - t0
    t0 = time.perf_counter()
    rbg = F.reduce(None, strategy=F.CraigBampton(8, {"A": A, "B": B}), model=model,
                   geometric=True, stress_modes=False)
    t_kg = time.perf_counter() - t0 - (rbg.timings["modes"] + rbg.timings["invariants"])
    return model, rb, t_asm, t_red, t_kg, rbg.timings


def run_exudyn(model, nodesA, nodesB):
    from exudyn.FEM import FEMinterface
    fem = FEMinterface()
    fem.nodes = {"Position": model.fe.nodes.copy()}
    fem.massMatrix = model.M.tocsr()
    fem.stiffnessMatrix = model.K.tocsr()
    t0 = time.perf_counter()
    fem.ComputeHurtyCraigBamptonModes(boundaryNodesList=[list(nodesA), list(nodesB)],
                                      nEigenModes=8, useSparseSolver=True)
    t_cb = time.perf_counter() - t0
    # reduced frequencies from the peer's modes and the same matrices
    Phi = np.asarray(fem.modeBasis["matrix"])
    Kr, Mr = Phi.T @ (model.K @ Phi), Phi.T @ (model.M @ Phi)
    f_cb = np.sqrt(np.abs(sla.eigh(Kr, Mr, eigvals_only=True))) / (2 * np.pi)
    fem2 = FEMinterface()
    fem2.nodes = fem.nodes
    fem2.massMatrix, fem2.stiffnessMatrix = fem.massMatrix, fem.stiffnessMatrix
    t0 = time.perf_counter()
    fem2.ComputeEigenmodes(8, excludeRigidBodyModes=6, useSparseSolver=True)
    t_eig = time.perf_counter() - t0
    return t_cb, f_cb, t_eig, np.asarray(fem2.GetEigenFrequenciesHz())


def run_normal(model):
    t0 = time.perf_counter()
    rb = F.reduce(None, strategy=F.NormalModes(8), model=model, geometric=False,
                  stress_modes=False)
    return time.perf_counter() - t0, rb.frequencies


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="only the 19,683-DOF case")
    ap.add_argument("--write", action="store_true", help="write benchmarks/RESULTS.md section")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--peer-large", action="store_true",
                    help="also run Exudyn at 95k DOF (its HCB eigen step alone took 291 s here)")
    args = ap.parse_args()
    steel = F.Material(2.1e11, 0.3, 7850, name="steel")
    cases = [(80, 8)] if args.small else [(80, 8), (140, 14)]
    rows = []
    for nx, ny in cases:
        mesh = beam(nx, ny)
        model, rb, t_asm, t_red, t_kg, tim = run_flexmbd(mesh, steel)
        ndof = model.n_dofs
        fA = F.Plane((0, 0, 0), (1, 0, 0))(model.fe)
        fB = F.Plane((1, 0, 0), (1, 0, 0))(model.fe)
        t_nm, f_nm = run_normal(model)
        mem_ours = peak_gib()
        row = {"dof": ndof, "asm": t_asm, "cb": t_red, "kg": t_kg, "nm": t_nm,
               "f_cb": np.sort(rb.frequencies)[:4], "f_nm": f_nm[:4], "mem": mem_ours,
               "t_modes": tim["modes"]}
        print(f"flexmbd {ndof} DOF: {row}", flush=True)
        if not args.no_peer and (ndof < 30000 or args.peer_large):
            t_cb, f_cb, t_eig, f_eig = run_exudyn(model, fA, fB)
            row.update(peer_cb=t_cb, peer_f_cb=np.sort(f_cb)[:4], peer_eig=t_eig,
                       peer_f_eig=f_eig[:4])
        rows.append(row)
        print(f"done {ndof} DOF", flush=True)
    text = table(rows, args)
    print(text)
    if args.write:
        write_section(text)


def table(rows, args):
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}, scikit-fem {skfem.__version__}; "
        f"factorization backend cholespy (CHOLMOD, simplicial, reference BLAS). "
        f"Command: `python benchmarks/bench_fem.py{' --small' if args.small else ''} --write`.",
        "",
        "| DOF | flexmbd assembly (s) | flexmbd CB 8 + invariants + stress (s) | "
        "flexmbd unit K_G set (s) | Exudyn HCB (s) | flexmbd NormalModes 8 (s) | "
        "Exudyn eigenmodes 8 (s) | peak RSS (GiB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dof']:,} | {r['asm']:.2f} | {r['cb']:.2f} | {r['kg']:.2f} | "
            f"{r.get('peer_cb', float('nan')):.2f} | {r['nm']:.2f} | "
            f"{r.get('peer_eig', float('nan')):.2f} | {r['mem']:.2f} |")
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
    return "\n".join(lines)


def write_section(text):
    old = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    block = f"{START}\n## FEM reduction (flexmbd.fem vs Exudyn FEMinterface)\n\n{text}\n{END}"
    if START in old and END in old:
        new = old[:old.index(START)] + block + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(new)


if __name__ == "__main__":
    main()
