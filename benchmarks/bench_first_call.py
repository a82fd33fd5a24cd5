"""Time to first result: a fresh Python process, flexmbd vs Exudyn (issue 13 item 6).

The flexible pendulum of ``examples/flexible_pendulum.py`` (steel beam 1.0 x 0.05 x
0.05 m, the shipped 40 x 4 x 4 hex mesh, 8 Craig-Bampton modes with the x = 0 face a
rigid interface, revolute about z there, gravity -9.81 y, 1 s at dt = 1e-3,
generalized-alpha rho_inf = 0.8, geometric stiffening off because Exudyn has none) as
one short script per code, each run as ``python <script>`` in a fresh process:

* **same script** (``--child flexmbd`` / ``--child exudyn``): import the code, load
  the same full mass and stiffness matrices, nodes and mode shapes from an ``.npz``
  (made once by this benchmark with flexmbd's reduction), build the body, the joint
  and gravity, simulate 1 s, print the tip position.  flexmbd:
  ``ReducedBody.from_matrices`` + ``Model`` + ``compile("absolute")`` + ``simulate``;
  Exudyn: ``FEMinterface`` + ``ObjectFFRFreducedOrderInterface`` (``gravity=``) +
  ``MarkerSuperElementRigid`` on the 25 interface nodes + ``GenericJoint`` +
  ``SolveDynamic`` (the ``marker`` variant of ``benchmarks/bench_flexible.py``).
* **eager** (``--child eager``): the flexmbd script with each cached kernel's LLVM
  bitcode parsed at its load, as numba does (the behaviour before
  `flexmbd._jit._LazyLinkLibrary` deferred the parse to a later compilation that links
  the kernel): the same-run reference for that change.
* **refresh** (``--child refresh``): the flexmbd script with numba's own cache load,
  which also refreshes numba's target context first (the behaviour before
  `flexmbd._jit.KernelCache` skipped the refresh): the same-run reference.
* **example script** (``--child example``): flexmbd only, the whole user path of
  ``examples/flexible_pendulum.py`` from the mesh (scikit-fem assembly + reduction).

Measured per script: wall and CPU time of the whole process as ``time python
script.py`` reports them (parent-side ``perf_counter`` and ``RUSAGE_CHILDREN``),
and in-process phases with ``perf_counter`` (import, build, first ``simulate``, a
second ``simulate`` of the same system).  Warm cache: the project's numba cache as
installed (one priming run first); cold cache: an empty temporary
``NUMBA_CACHE_DIR``, so every kernel the script uses is compiled in that run (under a
``numba:compile`` event listener, ``--child compile-times``: exclusive compile CPU per
kernel).  ``--cold-examples`` also runs ``examples/flagship.py --quick`` and
``examples/abaqus_rotor.py --quick`` in an empty ``NUMBA_CACHE_DIR`` each (every kernel
they use compiled in that run; minutes), then once more with that cache warm; a
``--write`` without it keeps the cold-example rows last written.
Bytecode caching is on in the children (``PYTHONDONTWRITEBYTECODE`` removed), as in a
normal install.  ``--write`` replaces the ``first-call`` section of
``benchmarks/RESULTS.md``.

Command: ``python benchmarks/bench_first_call.py --cold-examples --write``
(``--no-cold`` skips the cold-cache pendulum run, which compiles for minutes).
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import machine_line

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
START, END = "<!-- first-call:start -->", "<!-- first-call:end -->"
COLD_START, COLD_END = "<!-- first-call-cold:start -->", "<!-- first-call-cold:end -->"
# (script, CPU s, wall s) of examples run cold: ``python examples/<script> --quick``
COLD_EXAMPLES = ("flagship.py", "abaqus_rotor.py")
T_END, DT, RHO_INF, N_MODES = 1.0, 1e-3, 0.8, 8
A0 = (0.0, 0.025, 0.025)  # hinge: centre of the x = 0 face
TIP = (1.0, 0.025, 0.025)


# ---------------------------------------------------------------- the child scripts
def _stamp(t, key):
    """Record wall (perf_counter) and CPU (process_time) time stamps under ``key``."""
    t[key] = time.perf_counter()
    t[key + "_cpu"] = time.process_time()


def child_flexmbd(data, second):
    """The flexmbd script: returns its phase times (s)."""
    t = {}
    _stamp(t, "start")
    import numpy as np
    import scipy.sparse as sp

    import flexmbd as fm

    _stamp(t, "import")
    d = np.load(data)
    M = sp.csr_matrix((d["M_data"], d["M_indices"], d["M_indptr"]))
    K = sp.csr_matrix((d["K_data"], d["K_indices"], d["K_indptr"]))
    rb = fm.fem.ReducedBody.from_matrices(
        d["nodes"], d["modes"], M, K, interfaces={"A": d["iface"]}, interface_kind="rigid"
    )
    m = fm.Model("flexible_pendulum")
    m.beam = fm.FlexibleBody(rb, geometric_stiffening=False)
    m.hinge = fm.Revolute(
        m.ground, m.beam, axis=(0, 0, 1), parent_frame=A0, child_frame=m.beam.interface("A")
    )
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    s = m.compile("absolute")
    _stamp(t, "build")
    kw = dict(dt=DT, integrator="generalized-alpha", rho_inf=RHO_INF)
    res = s.simulate(T_END, **kw)
    tip = m.beam.point(TIP).trajectory(res)[-1]
    _stamp(t, "simulate")
    print("tip", tip.tolist())
    if second:
        s.simulate(T_END, **kw)
        _stamp(t, "second")
    return t


def child_exudyn(data, second):
    """The Exudyn script (same data, same model): returns its phase times (s)."""
    t = {}
    _stamp(t, "start")
    import exudyn as exu
    import exudyn.FEM as FEM
    import numpy as np
    import scipy.sparse as sp
    from exudyn.itemInterface import (
        GenericJoint,
        MarkerBodyRigid,
        MarkerSuperElementRigid,
        ObjectGround,
        SensorSuperElement,
    )

    _stamp(t, "import")
    d = np.load(data)
    fem = FEM.FEMinterface()
    fem.nodes = {"Position": d["nodes"]}
    fem.massMatrix = sp.csr_matrix((d["M_data"], d["M_indices"], d["M_indptr"]))
    fem.stiffnessMatrix = sp.csr_matrix((d["K_data"], d["K_indices"], d["K_indptr"]))
    fem.modeBasis = {"matrix": d["modes"], "type": "HCBmodes"}
    fem.surface = []
    cms = FEM.ObjectFFRFreducedOrderInterface(fem)

    def run():
        SC = exu.SystemContainer()
        mbs = SC.AddSystem()
        obj = cms.AddObjectFFRFreducedOrder(mbs, positionRef=[0, 0, 0], gravity=[0, -9.81, 0])
        body = obj["oFFRFreducedOrder"]
        ground = mbs.AddObject(ObjectGround(referencePosition=[0, 0, 0]))
        mG = mbs.AddMarker(MarkerBodyRigid(bodyNumber=ground, localPosition=list(A0)))
        nA = d["iface"]
        mA = mbs.AddMarker(
            MarkerSuperElementRigid(
                bodyNumber=body,
                meshNodeNumbers=nA,
                weightingFactors=np.ones(len(nA)) / len(nA),
                offset=[0, 0, 0],
            )
        )
        mbs.AddObject(GenericJoint(markerNumbers=[mG, mA], constrainedAxes=[1, 1, 1, 1, 1, 0]))
        sens = mbs.AddSensor(
            SensorSuperElement(
                bodyNumber=body,
                meshNodeNumber=int(d["tip"]),
                storeInternal=True,
                outputVariableType=exu.OutputVariableType.Position,
            )
        )
        mbs.Assemble()
        sim = exu.SimulationSettings()
        ti = sim.timeIntegration
        ti.numberOfSteps = int(round(T_END / DT))
        ti.endTime = T_END
        ti.generalizedAlpha.spectralRadius = RHO_INF
        ti.generalizedAlpha.computeInitialAccelerations = True
        ti.newton.useModifiedNewton = False
        ti.newton.relativeTolerance = 1e-10
        ti.newton.absoluteTolerance = 1e-10
        ti.verboseMode = 0
        sim.solution.sensors.writePeriod = DT
        sim.solution.file.write = False
        sim.show.computationTime = False
        if "build" not in t:
            _stamp(t, "build")
        mbs.SolveDynamic(sim)
        return mbs.GetSensorStoredData(sens)[-1, 1:4]

    tip = run()
    _stamp(t, "simulate")
    print("tip", tip.tolist())
    if second:
        run()
        _stamp(t, "second")
    return t


def child_example(data, second):
    """``examples/flexible_pendulum.py``'s path from the mesh (flexmbd only)."""
    t = {}
    _stamp(t, "start")
    sys.path.insert(0, str(ROOT / "examples"))
    import flexible_pendulum as fp  # imports flexmbd

    _stamp(t, "import")
    m = fp.build(fp.reduced_beam(N_MODES), stiffening=False)
    s = m.compile("absolute")
    _stamp(t, "build")
    kw = dict(dt=DT, integrator="generalized-alpha", rho_inf=RHO_INF)
    res = s.simulate(T_END, **kw)
    print("tip", m.beam.point(TIP).trajectory(res)[-1].tolist())
    _stamp(t, "simulate")
    if second:
        s.simulate(T_END, **kw)
        _stamp(t, "second")
    return t


def child_breakdown(data, second):
    """The flexmbd script with numba's cache loading timed (CPU s) during the first
    ``simulate``: numba's target-context refresh (its lazy import and registration of
    its implementation modules; `flexmbd._jit.KernelCache` loads without it, so it is
    zero unless something compiles), loading each cached kernel (`KernelCache`'s
    ``load_overload``: unpickling, unserializing the object code and bitcode), and the
    rest (typing the arguments, dispatch, Python)."""
    import llvmlite.binding as ll
    from numba.core import base
    from numba.core.runtime import rtsys

    from flexmbd._jit import KernelCache

    acc = {"refresh": 0.0, "load": 0.0, "parse": 0.0, "nrt": 0.0, "kernels": {}}
    initialize = rtsys.initialize

    def timed_initialize(ctx):
        c = time.process_time()
        try:
            return initialize(ctx)
        finally:
            acc["nrt"] += time.process_time() - c

    rtsys.initialize = timed_initialize
    parse = ll.parse_bitcode

    def timed_parse(data):
        c = time.process_time()
        try:
            return parse(data)
        finally:
            acc["parse"] += time.process_time() - c

    ll.parse_bitcode = timed_parse
    refresh, load = base.BaseContext.refresh, KernelCache.load_overload
    depth = [0]

    def timed_refresh(self):
        depth[0] += 1
        c = time.process_time()
        try:
            return refresh(self)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                acc["refresh"] += time.process_time() - c

    def timed_load(self, sig, ctx):
        c = time.process_time()
        out = load(self, sig, ctx)
        dt = time.process_time() - c
        acc["load"] += dt
        name = self._name.split()[1]  # "<function name at 0x...>"
        acc["kernels"][name] = acc["kernels"].get(name, 0.0) + dt
        return out

    base.BaseContext.refresh, KernelCache.load_overload = timed_refresh, timed_load
    t = child_flexmbd(data, second=True)
    t["breakdown"] = acc
    return t


def _numba_rebuild():
    """numba's rebuild of a cached compile result (the bitcode parsed at the load), after
    the object code of the callees a flexmbd entry records (`flexmbd._jit`'s call
    linking: such an entry cannot load without its callees' code)."""
    from numba.core import caching

    from flexmbd import _jit

    def rebuild(self, target_context, payload):
        if isinstance(payload, tuple) and payload and payload[0] == _jit._CALL_DEPS:
            _, deps, payload = payload
            _jit._load_call_deps(target_context.codegen(), deps)
        return caching.CompileResultCacheImpl.rebuild(self, target_context, payload)

    return rebuild


def child_eager(data, second):
    """The flexmbd script with the cached kernels' bitcode parsed at their load (numba's
    rebuild of a compile result), as before `flexmbd._jit._LazyLinkLibrary` deferred it:
    the same-run reference for that change."""
    from flexmbd import _jit

    _jit._KernelCacheImpl.rebuild = _numba_rebuild()
    return child_flexmbd(data, second)


def child_refresh(data, second):
    """The flexmbd script with numba's own cache load (a target-context refresh before
    the first load, the bitcode parsed at the load), as before `flexmbd._jit.KernelCache`
    skipped the refresh: the same-run reference for both changes."""
    from numba.core import caching

    from flexmbd import _jit

    _jit.KernelCache.load_overload = caching.Cache.load_overload
    _jit._KernelCacheImpl.rebuild = _numba_rebuild()
    return child_flexmbd(data, second)


def compile_listener():
    """A numba ``numba:compile`` event listener: exclusive compile CPU time (s) per
    kernel (a kernel's own time without the callees it compiles), in ``.times``."""
    from numba.core import event

    class Exclusive(event.Listener):
        def __init__(self):
            self.stack, self.times = [], {}

        def on_start(self, ev):
            self.stack.append([time.process_time(), 0.0])

        def on_end(self, ev):
            t0, callees = self.stack.pop()
            total = time.process_time() - t0
            name = ev.data["dispatcher"].py_func.__qualname__
            self.times[name] = self.times.get(name, 0.0) + total - callees
            if self.stack:
                self.stack[-1][1] += total

    listener = Exclusive()
    event.register("numba:compile", listener)
    return listener


def llvm_listener():
    """A numba ``numba:llvm_lock`` event listener: CPU time (s) inside LLVM (numba holds
    its LLVM lock around every call into llvmlite's library: parsing the IR numba
    generated, optimisation passes, machine-code emission), in ``.total``."""
    from numba.core import event

    class Inside(event.Listener):
        def __init__(self):
            self.total, self.t0 = 0.0, None

        def on_start(self, ev):
            self.t0 = time.process_time()

        def on_end(self, ev):
            self.total += time.process_time() - self.t0

    listener = Inside()
    event.register("numba:llvm_lock", listener)
    return listener


def llvm_stage_timer():
    """CPU time (s) of numba's LLVM stages per code library, in ``.times[stage][library]``.

    Stages (methods of numba's ``CPUCodeLibrary``, wrapped for this child process only):
    ``function`` = per-function optimisation of each IR module as it is added
    (``_optimize_functions``), ``module`` = the module optimisation of a library's final
    module with its callees' code linked in (``_optimize_final_module``), ``emit`` =
    machine-code emission of that module (``JITCodeLibrary._finalize_specific``). A
    library is named after its kernel (numba's mangled name, last component).
    """
    from numba.core import codegen

    stages = {"function": {}, "module": {}, "emit": {}}

    def wrap(cls, method, stage):
        inner = getattr(cls, method)

        def timed(self, *args, **kwargs):
            t0 = time.process_time()
            try:
                return inner(self, *args, **kwargs)
            finally:
                name = self.name.split(".")[-1]
                d = stages[stage]
                d[name] = d.get(name, 0.0) + time.process_time() - t0

        setattr(cls, method, timed)

    wrap(codegen.CPUCodeLibrary, "_optimize_functions", "function")
    wrap(codegen.CPUCodeLibrary, "_optimize_final_module", "module")
    wrap(codegen.JITCodeLibrary, "_finalize_specific", "emit")

    class Stages:
        times = stages

    return Stages


def child_compile_times(data, second):
    """The flexmbd script (cold cache) with each kernel's exclusive compile time and the
    share of the compile spent inside LLVM."""
    listener, llvm, stages = compile_listener(), llvm_listener(), llvm_stage_timer()
    t = child_flexmbd(data, second)
    t["compile"] = listener.times
    t["llvm"] = llvm.total
    t["stages"] = stages.times
    return t


CHILDREN = {
    "flexmbd": child_flexmbd,
    "eager": child_eager,
    "refresh": child_refresh,
    "exudyn": child_exudyn,
    "example": child_example,
}


# ---------------------------------------------------------------- the parent
def make_data(path):
    """The shared input: full M, K (CSR), nodes, 8 Craig-Bampton modes, interface and tip."""
    import numpy as np

    sys.path.insert(0, str(ROOT / "examples"))
    import flexible_pendulum as fp

    from flexmbd.fem import FEModel, read_mesh

    model = FEModel(read_mesh(fp.MESH), __import__("flexmbd").Material(**fp.STEEL))
    rb = fp.reduced_beam(N_MODES)
    nodes = np.asarray(rb.nodes, float)
    M, K = model.M.tocsr(), model.K.tocsr()
    np.savez(
        path,
        nodes=nodes,
        modes=np.asarray(rb.modes, float),
        iface=np.asarray(rb.interface("A")[2], np.int64),
        tip=int(np.argmin(((nodes - np.array(TIP)) ** 2).sum(axis=1))),
        **{f"{n}_{k}": getattr(A, k) for n, A in (("M", M), ("K", K)) for k in _CSR},
    )


_CSR = ("data", "indices", "indptr")


def child_env(cache_dir=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    return env


def run_process(args, env, cwd=None):
    """Run ``python args`` fresh: (wall s, CPU s user + sys, stdout)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    tic = time.perf_counter()
    p = subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - tic
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise RuntimeError(f"{args} failed:\n{p.stdout}\n{p.stderr}")
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, p.stdout


def run_child(name, data, env, second=False):
    """One fresh process of script ``name``: whole-process wall/CPU and phase times."""
    args = [__file__, "--child", name, "--data", str(data)] + (["--second"] if second else [])
    wall, cpu, out = run_process(args, env)
    phases = json.loads(out.strip().splitlines()[-1])
    return {"wall": wall, "cpu": cpu, **phases}


def phases(t):
    """Phase durations (s) from the child's time stamps: wall and CPU (``*_cpu``)."""
    keys = ["start", "import", "build", "simulate"] + (["second"] if "second" in t else [])
    out = {}
    for a, b in zip(keys[:-1], keys[1:]):
        out[b] = t[b] - t[a]
        out[b + "_cpu"] = t[b + "_cpu"] - t[a + "_cpu"]
    return out


def median_runs(names, data, env, repeat):
    """Median over ``repeat`` fresh processes of each script in ``names`` (without and
    with a second ``simulate``: ``name`` and ``name + "+second"``) of the whole-process
    and phase times; the scripts take turns in each round, so a change of the machine's
    load during the runs falls on all of them alike."""
    ph = {}
    for _ in range(repeat):
        for name in names:
            for key, second in ((name, False), (name + "+second", True)):
                r = run_child(name, data, env, second)
                ph.setdefault(key, []).append(dict(wall=r["wall"], cpu=r["cpu"], **phases(r)))
    return {key: {k: statistics.median(p[k] for p in v) for k in v[0]} for key, v in ph.items()}


def cold_examples():
    """Each of `COLD_EXAMPLES` as ``python examples/<script> --quick`` in a fresh process
    with an empty ``NUMBA_CACHE_DIR`` (every kernel compiled), then once more with that
    cache: CPU s (user + sys), wall s and the load average at the start of each."""
    rows = {}
    for script in COLD_EXAMPLES:
        cache = Path(tempfile.mkdtemp(prefix="flexmbd_cold_example_"))
        try:
            args = [str(ROOT / "examples" / script), "--quick"]
            load, start = os.getloadavg()[0], time.strftime("%Y-%m-%d %H:%M")
            wall, cpu, _ = run_process(args, child_env(cache), cwd=cache)
            load2 = os.getloadavg()[0]
            wall2, cpu2, _ = run_process(args, child_env(cache), cwd=cache)
            rows[script] = dict(
                cpu=cpu, wall=wall, load=load, start=start, cpu2=cpu2, wall2=wall2, load2=load2
            )
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    return rows


def measure(repeat, cold):
    tmp = Path(tempfile.mkdtemp(prefix="flexmbd_first_call_"))
    try:
        data = tmp / "pendulum.npz"
        make_data(data)
        env = child_env()
        for name in CHILDREN:  # prime: bytecode and the installed numba cache
            run_child(name, data, env)
        rows = {}
        bd = [run_child("breakdown", data, env) for _ in range(repeat)]
        rows["breakdown"] = {
            k: statistics.median(r["breakdown"][k] for r in bd)
            for k in ("refresh", "load", "parse", "nrt")
        }
        rows["breakdown"]["kernels"] = {
            k: statistics.median(r["breakdown"]["kernels"].get(k, 0.0) for r in bd)
            for k in bd[0]["breakdown"]["kernels"]
        }
        rows["breakdown"].update(
            {k: statistics.median(phases(r)[k] for r in bd) for k in ("simulate_cpu", "second_cpu")}
        )
        rows.update(median_runs(list(CHILDREN), data, env, repeat))
        if cold:
            r = run_child("compile-times", data, child_env(tmp / "cache_flexmbd"), second=True)
            rows["flexmbd cold"] = dict(wall=r["wall"], cpu=r["cpu"], **phases(r))
            rows["compile"] = r["compile"]
            rows["llvm"] = r["llvm"]
            rows["stages"] = r["stages"]
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# Hand measurements of earlier code states (kept when the section is regenerated).
EARLIER = (
    "Earlier measurements (by hand; CPU = user + sys; cold = "
    "`NUMBA_CACHE_DIR=$(mktemp -d) /usr/bin/time -v python examples/<script> --quick`, one "
    "run per cell; the load average matters: the machine is shared). Cold `flagship.py "
    "--quick`: 106.9-108.8 s at d721090 -> 80.5 s with the force kernels compiled only for "
    "models with force elements (load 2-4.5) -> 69.1 s with the call linking "
    "(`flexmbd._jit._CallLinkLibrary`; its base 86.1 s, load 5-7) -> 53.2 s for the merged "
    "tree on the idle machine (load < 1; 94b53b0 65.5 s). Cold `abaqus_rotor.py --quick`: "
    "121-137 s at d721090 (load 2-4.5), 121.7 s with the call linking (base 127.6 s, load "
    "7-11), 82.8 s merged on the idle machine (94b53b0 105.4 s). Cold pendulum same script: "
    "114 -> 73.5 s CPU with `flexmbd._jit.njit` (one version per plain argument type), "
    "103.0 s later at load 3-4 (106 kernels, 58.1 s inside LLVM; `NUMBA_OPT=1`: no gain). "
    "Warm first - second `simulate` of the same script: 0.37 s (numba's own load) -> 0.26 s "
    "(no target-context refresh) -> 0.11-0.12 s (bitcode parsed only when linked). Warm "
    "whole process after the call linking: 0.78-0.82 s CPU vs Exudyn 0.77-0.81 (94b53b0: "
    "0.72-0.79; lead, load ~2)."
    " Dense/sparse solve chosen on the LU's type (2026-11-28; CPU inside the process "
    "of `examples/flagship.py --quick` in an empty cache; this VM ran d6f51af (the "
    "code of the 56.6 s of 2026-11-27) at 86.7 s that day, and the same code 81-106 s "
    "within two hours, so only runs side by side compare): the change vs its base "
    "side by side 59.2 vs 80.9 s (load 1.5-2.5; 74 kernels vs 86; `_run` 19.5 -> 9.4 "
    "s, `_newton` 10.6 -> 5.2 s of exclusive compile), the merged tree and the change "
    "alone side by side 69.0 / 68.0 s (load ~1). LLVM's per-function passes at level "
    "1 instead of 3 for package kernels (tried, not kept): 105.6 vs 106.7 s side by "
    "side."
)


def cold_examples_text(rows, old):
    """The cold-example table (between its markers): measured ``rows`` of
    `cold_examples`, else ``old`` (the block last written), else a note."""
    if rows is None:
        body = old or (
            "Cold examples: not measured yet (`python benchmarks/bench_first_call.py "
            "--cold-examples --write`).\n"
        )
        return f"{COLD_START}\n{body.strip()}\n{COLD_END}"
    lines = [
        f"Cold examples (started {next(iter(rows.values()))['start']} UTC; "
        "`NUMBA_CACHE_DIR=<empty dir> python examples/<script> --quick`, every kernel the "
        "example uses compiled in that run; then the same command with that cache warm; "
        "CPU = user + sys of the process, one run each):",
        "",
        "| example | cold CPU [s] | cold wall [s] | load average at start | warm CPU [s] "
        "| warm wall [s] |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for script, r in rows.items():
        lines.append(
            f"| `{script} --quick` | {r['cpu']:.1f} | {r['wall']:.1f} | {r['load']:.1f} | "
            f"{r['cpu2']:.1f} | {r['wall2']:.1f} |"
        )
    return "\n".join([COLD_START, *lines, COLD_END])


def table(rows, args, load, old_cold=None):

    try:
        import exudyn

        exv = exudyn.__version__
    except ImportError:  # pragma: no cover
        exv = "absent"
    f = "{:.2f}".format
    lines = [
        "## Time to first result (issue 13 item 6)",
        "",
        "A fresh `python script.py` of the flexible pendulum (8 Craig-Bampton modes, 1 s at "
        "dt = 1e-3, generalized-alpha rho_inf = 0.8, stiffening off): *same script* = both "
        "codes load the same full M, K, nodes and mode shapes from an `.npz`, build body + "
        "revolute + gravity, simulate, print the tip; *example* = flexmbd's whole path of "
        "`examples/flexible_pendulum.py` from the mesh (scikit-fem assembly and reduction "
        "included). wall / CPU = the whole process as `time python script.py` reports it "
        f"(median of {args.repeat}); phases from `perf_counter` inside the script. Warm = "
        "the installed numba cache; cold = an empty `NUMBA_CACHE_DIR` (every kernel compiled "
        "in that run, one run).",
        "",
        f"- Command: `python benchmarks/bench_first_call.py --repeat {args.repeat}"
        + (" --no-cold" if args.no_cold else "")
        + (" --cold-examples" if args.cold_examples else "")
        + " --write`",
        machine_line(f"exudyn {exv}", load=load),
        "",
        "Phases are CPU s (wall s in brackets); whole process = `time python script.py` "
        "(real / user + sys).",
        "",
        "| script | cache | whole process wall [s] | whole process CPU [s] | import | build "
        "| first simulate | second simulate | first - second |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    label = {"flexmbd": "flexmbd, same script", "exudyn": "Exudyn, same script"}
    label["example"] = "flexmbd, example (from the mesh)"
    label["eager"] = "flexmbd, same script, bitcode parsed on load (before)"
    label["refresh"] = "flexmbd, same script, numba's own load: refresh + parse (before)"

    def both(r, k):
        return f"{r[k + '_cpu']:.2f} ({r[k]:.2f})"

    for name in CHILDREN:
        for key, cache in ((name, "warm"), (name + " cold", "cold")):
            if key not in rows:
                continue
            r = rows[key]
            sec = rows[name + "+second"] if cache == "warm" else r
            d = {k: sec["simulate" + k] - sec["second" + k] for k in ("", "_cpu")}
            lines.append(
                f"| {label[name]} | {cache} | {f(r['wall'])} | {f(r['cpu'])} | "
                f"{both(r, 'import')} | {both(r, 'build')} | {both(sec, 'simulate')} | "
                f"{both(sec, 'second')} | {d['_cpu']:.2f} ({d['']:.2f}) |"
            )
    fx, ex, sec = rows["flexmbd"], rows["exudyn"], rows["flexmbd+second"]
    lines += [
        "",
        "The two *before* rows run the same script with one load change of "
        "`flexmbd._jit` reverted each, as same-run references: *bitcode parsed on load* "
        "(numba's rebuild of a cache entry) and *numba's own load* (also refreshing the "
        "target context first). Targets (issue 13 item 6), this run: whole process "
        f"flexmbd / Exudyn = {fx['cpu']:.2f} / {ex['cpu']:.2f} s CPU = "
        f"{fx['cpu'] / ex['cpu']:.2f} (wall {fx['wall'] / ex['wall']:.2f}); warm first - "
        f"second `simulate` {sec['simulate_cpu'] - sec['second_cpu']:.2f} s CPU (<= 0.2).",
    ]
    b = rows["breakdown"]
    lines += [
        "",
        f"Where the warm first `simulate` of the flexmbd script spends its extra CPU time "
        f"(median of {args.repeat}; first {f(b['simulate_cpu'])} s vs second "
        f"{f(b['second_cpu'])} s): numba's target-context refresh {f(b['refresh'])} s "
        "(`flexmbd._jit.KernelCache` loads a cached kernel without it: it imports and "
        "registers numba's implementation modules for typing and lowering, 0.17-0.26 s "
        "CPU per process, which a cache load does not use); loading the "
        f"{len(b['kernels'])} cached entry kernels {f(b['load'])} s ("
        + ", ".join(f"{k} {v:.3f}" for k, v in b["kernels"].items())
        + f"; the first load initialises numba's runtime, {b['nrt']:.3f} s: NRT compiles "
        "its atomic helpers; then unpickling, with the environments of numba's "
        "implementation modules restored without importing them, and loading the object "
        "code of each kernel and of the large kernels it calls), of which parsing LLVM "
        "bitcode "
        f"{b['parse']:.3f} s (`flexmbd._jit._LazyLinkLibrary` defers it to a later "
        "compilation that links the kernel; numba parses the bitcode of each entry "
        "kernel and all its callees at the load); the rest is Python (imports of the "
        "integrator and engine modules, the first step's set-up).",
    ]
    if "compile" in rows:
        top = sorted(rows["compile"].items(), key=lambda kv: -kv[1])
        lines += [
            "",
            f"Cold flexmbd script: {len(top)} kernels compiled, "
            f"{sum(v for _, v in top):.1f} s CPU in numba's compiler, of which "
            f"{rows['llvm']:.1f} s inside LLVM (the rest: numba's typing and lowering in "
            "Python); the largest (exclusive "
            "CPU s, without the callees they compile; every callee library is optimised and "
            "code-generated again inside each caller's): "
            + ", ".join(f"{k} {v:.1f}" for k, v in top[:10])
            + ".",
        ]
    if "stages" in rows:
        st = rows["stages"]
        libs = sorted(st["module"], key=lambda k: -(st["module"][k] + st["emit"].get(k, 0.0)))
        lines += [
            "",
            "Inside LLVM, by stage (CPU s): per-function optimisation "
            f"{sum(st['function'].values()):.1f}, module optimisation of each library with "
            f"its callees linked in {sum(st['module'].values()):.1f}, machine-code emission "
            f"{sum(st['emit'].values()):.1f}; the largest libraries (module + emission): "
            + ", ".join(
                f"{k} {st['module'][k]:.1f} + {st['emit'].get(k, 0.0):.1f}" for k in libs[:6]
            )
            + ".",
        ]
    lines += ["", cold_examples_text(rows.get("cold examples"), old_cold), "", EARLIER]
    return "\n".join(lines) + "\n"


def old_cold_examples(results):
    """The cold-example table last written into ``results`` (RESULTS.md text), or None."""
    if COLD_START not in results:
        return None
    a = results.index(COLD_START) + len(COLD_START)
    return results[a : results.index(COLD_END, a)]


def place(old, text):
    block = f"{START}\n{text}{END}"
    if START in old:
        a, b = old.index(START), old.index(END) + len(END)
        return old[:a] + block + old[b:]
    return old.rstrip("\n") + "\n\n" + block + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--child", choices=sorted(CHILDREN) + ["breakdown", "compile-times"])
    ap.add_argument("--data")
    ap.add_argument("--second", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-cold", action="store_true")
    ap.add_argument("--cold-examples", action="store_true", help="cold --quick examples (minutes)")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    if args.child:
        extra = {"breakdown": child_breakdown, "compile-times": child_compile_times}
        child = extra.get(args.child) or CHILDREN[args.child]
        t = child(args.data, args.second)
        print(json.dumps(t))
        return
    load0 = os.getloadavg()[0]
    rows = measure(args.repeat, cold=not args.no_cold)
    if args.cold_examples:
        rows["cold examples"] = cold_examples()
    res = HERE / "RESULTS.md"
    text = table(rows, args, (load0, os.getloadavg()[0]), old_cold_examples(res.read_text()))
    print(text)
    if args.write:
        res.write_text(place(res.read_text(), text))


if __name__ == "__main__":
    main()
