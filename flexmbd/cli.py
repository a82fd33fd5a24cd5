"""Command line: flexmbd reduce | compare-modes | info | simulate | render | probe-gl.

Examples:

    flexmbd reduce meshes/beam_hex.msh --strategy craig-bampton --modes 8 \\
        --interface A=A --interface B=B -o beam.npz
    flexmbd reduce rotor.inp --mass rotorMASS1.mtx --stiffness rotorSTIF1.mtx \\
        --strategy normal --modes 8 -o rotor.npz     # Abaqus deck and matrices
    flexmbd info beam.npz                      # mode table, frequencies, interfaces
    flexmbd compare-modes meshes/beam_hex.msh --modes 8 --fixed A --load B:0,1000,0 \\
        --strategies normal,craig-bampton,ritz -o table.csv
    flexmbd simulate my_model.py -o run.h5 --t-end 1 --dt 1e-3 --checkpoint cp.h5
    flexmbd simulate my_model.py -o run.h5 --resume cp.h5   # after an interruption
    flexmbd render run.h5 -o run.mp4 --scale 50 --field von_mises
    flexmbd probe-gl                            # can this machine render off-screen?

Node selectors (--interface NAME=SEL, --fixed SEL, --load SEL:fx,fy,fz):
a node-set name from the mesh file (gmsh physical group, Abaqus set), or
plane:x,y,z:nx,ny,nz, box:x0,y0,z0:x1,y1,z1, sphere:x,y,z:r, nearest:x,y,z.

Every failure prints one line "flexmbd COMMAND: error: ..." on standard error and
exits with status 2 (set FLEXMBD_TRACEBACK=1 to see the Python traceback).
"""

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np

from .errors import FileError, FlexmbdError, SolverError

__all__ = ["main", "build_parser", "parse_selector"]

STRATEGIES = ("normal", "static-correction", "craig-bampton", "ritz")
MATERIALS = {
    "steel": (2.1e11, 0.3, 7850.0),
    "aluminium": (7.0e10, 0.33, 2700.0),
    "aluminum": (7.0e10, 0.33, 2700.0),
    "titanium": (1.1e11, 0.34, 4500.0),
}


# -- argument types (argparse converters: a plain message, exit status 2) ----------------
def positive_int(text):
    """An integer >= 1 (``--modes``, ``--fps``, ``--stride``, ...)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return v


def finite_float(text):
    """A finite number (no nan, inf)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return v


def positive_float(text):
    """A finite number > 0 (times, steps)."""
    v = finite_float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return v


# -- files: checked before any work -----------------------------------------------------
RESULT_SUFFIXES = (".h5", ".hdf5", ".hdf", ".npz")
MOVIE_SUFFIXES = (".gif", ".mp4", ".mov", ".avi", ".mkv")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp")


def _input(path, what):
    """``path`` if it is a readable file, else a :class:`FileError` naming it."""
    from .fileio import check_readable

    return check_readable(path, what)


def _output(path, suffixes, what, option="-o"):
    """``Path(path)`` if it has one of ``suffixes`` and its directory takes a new file."""
    from .fileio import check_writable

    path = Path(path)
    if suffixes and path.suffix.lower() not in suffixes:
        raise FileError(
            f"{option} {str(path)!r}: the {what} must end in "
            f"{', '.join(suffixes)} (got {path.suffix or 'no extension'!r})"
        )
    return check_writable(path, what)


# -- argument helpers ---------------------------------------------------------------------
def _floats(text, n, what):
    try:
        v = [float(x) for x in text.split(",")]
    except ValueError:
        v = []
    if len(v) != n:
        raise FlexmbdError(f"{what}: expected {n} comma-separated numbers, got {text!r}")
    return v


def parse_selector(text):
    """A :mod:`flexmbd.fem` node selector from its command-line form (see module doc)."""
    import flexmbd.fem as F

    kind, _, rest = text.partition(":")
    parts = rest.split(":") if rest else []
    if kind == "plane" and len(parts) == 2:
        return F.Plane(_floats(parts[0], 3, text), _floats(parts[1], 3, text))
    if kind == "box" and len(parts) == 2:
        return F.Box(_floats(parts[0], 3, text), _floats(parts[1], 3, text))
    if kind == "sphere" and len(parts) == 2:
        return F.Sphere(_floats(parts[0], 3, text), float(parts[1]))
    if kind == "nearest" and len(parts) == 1:
        return F.Nearest(_floats(parts[0], 3, text))
    if kind in ("plane", "box", "sphere", "nearest"):
        raise FlexmbdError(f"selector {text!r}: see `flexmbd reduce --help` for the forms")
    return F.NodeSet(text)


def _interfaces(items):
    out = {}
    for item in items or []:
        name, eq, sel = item.partition("=")
        if not eq or not name:
            raise FlexmbdError(
                f"--interface {item!r}: write NAME=SELECTOR (e.g. "
                f"A=plane:0,0,0:1,0,0 or A=A for the mesh's node set A)"
            )
        out[name] = parse_selector(sel)
    return out


def _load(text):
    import flexmbd.fem as F

    sel, _, vec = text.rpartition(":")
    if not sel:
        raise FlexmbdError(f"--load {text!r}: write SELECTOR:fx,fy,fz")
    return F.PointLoad(parse_selector(sel), force=_floats(vec, 3, "--load force"))


def _material(args):
    import flexmbd.fem as F

    if args.material not in MATERIALS:
        raise FlexmbdError(
            f"unknown material {args.material!r}; use one of {sorted(MATERIALS)} "
            f"or give --E --nu --rho"
        )
    E, nu, rho = MATERIALS[args.material]
    given = {k: v for k, v in (("E", args.E), ("nu", args.nu), ("rho", args.rho)) if v is not None}
    name = args.material + "".join(f", {k}={v:g}" for k, v in given.items())
    return F.Material(
        E=given.get("E", E), nu=given.get("nu", nu), rho=given.get("rho", rho), name=name
    )


def _strategy(name, n, interfaces, fixed, load, kind, frame="auto"):
    """The strategy of ``--strategy name`` with ``--modes n`` modes in total (``frame``:
    the Craig-Bampton frame, ``--frame``)."""
    import flexmbd.fem as F

    if name == "normal":
        return F.NormalModes(n_modes=n, fixed=fixed)
    if name == "craig-bampton":
        if not interfaces:
            raise FlexmbdError("craig-bampton needs interfaces: --interface NAME=SELECTOR")
        return F.CraigBampton(n_total=n, interfaces=interfaces, interface_kind=kind, frame=frame)
    if name == "static-correction":
        loads = list(interfaces) or ([load] if load is not None else None)
        if not loads:
            raise FlexmbdError("static-correction needs --interface or --load for its loads")
        return F.StaticCorrection(n_total=n, loads=loads, fixed=fixed)
    if name == "ritz":
        if load is None:
            raise FlexmbdError("ritz needs a load: --load SELECTOR:fx,fy,fz")
        return F.RitzVectors(n_vectors=n, load=load, fixed=fixed)
    raise FlexmbdError(f"unknown strategy {name!r}; use one of {', '.join(STRATEGIES)}")


# -- commands -------------------------------------------------------------------------------
def cmd_reduce(args):
    import flexmbd.fem as F

    _input(args.mesh, "mesh file")
    for option, path in (("--mass", args.mass), ("--stiffness", args.stiffness)):
        if path:
            _input(path, f"{option} matrix file")
    _output(args.output, (".npz", ".h5", ".hdf5"), "reduced body file")
    interfaces = _interfaces(args.interface)
    fixed = parse_selector(args.fixed) if args.fixed else None
    load = _load(args.load) if args.load else None
    strategy = _strategy(
        args.strategy, args.modes, interfaces, fixed, load, args.interface_kind, args.frame
    )
    extra = None if args.strategy == "craig-bampton" else (interfaces or None)
    mesh, material, M, K = _reduce_inputs(args)
    body = F.reduce(
        mesh,
        material,
        strategy,
        interfaces=extra,
        M=M,
        K=K,
        interface_kind=args.interface_kind,
        stress_modes=not args.no_stress,
        geometric=not args.no_geometric,
        name=args.name or Path(args.mesh).stem,
    )
    out = Path(args.output)
    from .fileio import atomic_write

    with atomic_write(out, "reduced body file") as tmp:  # the old file stays until done
        body.save(tmp)
    body.info()
    print(f"wrote {out}")
    return 0


def _reduce_inputs(args):
    """(mesh, material, M, K) of `flexmbd reduce`: an Abaqus deck (.inp) or Nastran bulk
    data (.bdf, .nas) brings its mesh, sets and material (``--E/--nu/--rho`` override it),
    ``--mass/--stiffness`` an Abaqus deck's .mtx matrices."""
    import flexmbd.fem as F

    mats = (args.mass, args.stiffness)
    suffix = Path(args.mesh).suffix.lower()
    if suffix not in (".inp", ".bdf", ".nas"):
        if any(mats):
            raise FlexmbdError(
                "--mass/--stiffness (.mtx) need the Abaqus deck (.inp) they belong to as the mesh"
            )
        return args.mesh, _material(args), None, None
    if suffix != ".inp":  # Nastran bulk data: mesh, sets and MAT1
        if any(mats):
            raise FlexmbdError(
                "--mass/--stiffness are Abaqus .mtx files; for Nastran "
                "matrices use fm.fem.nastran.read_op4/read_dmig in Python"
            )
        deck = F.nastran.read_bdf(args.mesh)
    else:
        deck = F.read_abaqus(args.mesh, units=args.units)
    try:
        mat = deck.material
        if mat is None:
            raise FlexmbdError(f"{args.mesh}: no material in the deck")
        pick = lambda given, deck_value: deck_value if given is None else given
        material = F.Material(
            E=pick(args.E, mat.E),
            nu=pick(args.nu, mat.nu),
            rho=pick(args.rho, mat.rho),
            name=mat.name,
        )
    except FlexmbdError:
        given = any(v is not None for v in (args.E, args.nu, args.rho))
        material = _material(args) if given else None
    if any(mats) and not all(mats):
        raise FlexmbdError("give both --mass and --stiffness (.mtx), or neither")
    if not any(mats):
        if material is None:
            raise FlexmbdError(f"{args.mesh}: no single material in the deck; give --E --nu --rho")
        return deck.mesh, material, None, None
    M = F.read_mtx(args.mass, deck, kind="mass")
    K = F.read_mtx(args.stiffness, deck, kind="stiffness")
    return deck.mesh, material, M, K


def cmd_compare(args):
    import flexmbd.fem as F
    from flexmbd.fem.compare import LoadCase

    _input(args.mesh, "mesh file")
    if args.output:
        _output(args.output, (".csv",), "table file")
    if args.figure:
        _output(
            args.figure,
            (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps"),
            "figure file",
            "--figure",
        )
    if not args.fixed or not args.load:
        raise FlexmbdError(
            "compare-modes needs the reference clamp and load: --fixed SEL --load SEL:fx,fy,fz"
        )
    interfaces = _interfaces(args.interface)
    fixed = parse_selector(args.fixed)
    load = _load(args.load)
    names = [s.strip() for s in args.strategies.split(",") if s.strip()]
    strategies = {}
    for name in names:
        if name == "craig-bampton":  # interfaces at the clamp and the load by default
            itf, fx = interfaces or {"clamp": fixed, "load": load.selector}, None
        else:
            itf, fx = interfaces, fixed
        strategies[f"{name}({args.modes})"] = _strategy(
            name, args.modes, itf, fx, load, args.interface_kind
        )
    lc = LoadCase(fixed=fixed, load=load, n_steps=args.steps, interfaces=interfaces or None)
    out = F.compare_modes(
        args.mesh, _material(args), strategies, lc, n_freq=args.n_freq, figure=bool(args.figure)
    )
    table, fig = out if args.figure else (out, None)
    if hasattr(table, "to_string"):
        scalar = [
            c
            for c in table.columns
            if not isinstance(table[c].iloc[0], (list, tuple, np.ndarray, str)) or c == "strategy"
        ]
        print(table[scalar].to_string(index=False))
    else:
        for row in table:
            print(row)
    if args.output:
        if not hasattr(table, "to_csv"):
            raise FlexmbdError("writing the table needs pandas: pip install 'flexmbd[io]'")
        from .fileio import atomic_write

        with atomic_write(args.output, "table file") as tmp:
            table.to_csv(tmp, index=False)
        print(f"wrote {args.output}")
    if fig is not None:
        from .fileio import atomic_write

        with atomic_write(args.figure, "figure file") as tmp:
            fig.savefig(tmp, dpi=110)
        print(f"wrote {args.figure}")
    return 0


def _is_reduced_body(path):
    import zipfile

    from .fileio import sniff

    if sniff(path) == "hdf5":
        try:
            import h5py

            with h5py.File(path, "r") as f:
                return str(f.attrs.get("schema", "")).startswith("flexmbd.reduced")
        except (ImportError, OSError):
            return False
    try:
        with np.load(path, allow_pickle=False) as z:
            return "schema" in z.files and str(z["schema"]).startswith("flexmbd.reduced")
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return False


def results_summary(res):
    """A few lines describing a Results object (used by ``flexmbd info``)."""
    lines = [repr(res)]
    if res.meta:
        lines.append("  meta: " + ", ".join(f"{k}={v}" for k, v in res.meta.items()))
    lines.append(
        f"  coordinates ({len(res.coordinates)}): "
        + ", ".join(f"{o}:{lab}" for o, lab in res.coordinates[:12])
        + (" ..." if len(res.coordinates) > 12 else "")
    )
    if res.joint_names:
        lines.append(f"  joints with reactions: {', '.join(res.joint_names)}")
    if res.energy:
        lines.append(
            "  energy: "
            + ", ".join(f"{k} {v[0]:.6g} -> {v[-1]:.6g}" for k, v in res.energy.items() if len(v))
        )
    if res.stats:
        lines.append("  stats: " + ", ".join(res.stats))
    if res.body_series:
        lines.append(
            "  bodies: "
            + ", ".join(f"{b} ({', '.join(s.arrays())})" for b, s in res.body_series.items())
        )
    if res.joint_series:
        lines.append("  joint histories: " + ", ".join(res.joint_series))
    if res.extra:
        lines.append("  extra: " + ", ".join(res.extra))
    if res.geometry:

        def describe(g):
            modes = f", {g['modes'].shape[1]} modes" if "modes" in g else ""
            return f"{len(g['nodes'])} nodes{modes}"

        lines.append(
            "  geometry: " + ", ".join(f"{b} ({describe(g)})" for b, g in res.geometry.items())
        )
    return "\n".join(lines)


def cmd_info(args):
    path = _input(args.file, "file")
    if _is_reduced_body(path):
        from flexmbd.fem import ReducedBody

        ReducedBody.load(path).info()
        return 0
    from .results import Results

    print(results_summary(Results.load(path)))
    return 0


def _load_script(path):
    import runpy

    path = _input(path, "script")
    sys.path.insert(0, str(path.resolve().parent))
    try:
        return runpy.run_path(str(path), run_name="__flexmbd__")
    except (FlexmbdError, KeyboardInterrupt):
        raise
    except BaseException as err:  # noqa: BLE001 - the script's own error, in one line
        if isinstance(err, SystemExit) and not err.code:
            raise FlexmbdError(f"script {str(path)!r} exited before defining a model") from err
        raise FlexmbdError(
            f"script {str(path)!r} failed: {_where(err, path)}{type(err).__name__}: {err}"
        ) from err
    finally:
        sys.path.pop(0)


def _where(err, path):
    """``"line N: "`` of the deepest frame of ``err`` in the script file."""
    import traceback

    line = None
    for frame in traceback.extract_tb(err.__traceback__):
        if Path(frame.filename).resolve() == Path(path).resolve():
            line = frame.lineno
    if line is None and isinstance(err, SyntaxError):
        line = err.lineno
    return f"line {line}: " if line else ""


def _check_simulate_files(args):
    """Every file of ``simulate`` checked before the script runs."""
    from .checkpoint import check_checkpoint

    out = _output(args.output, RESULT_SUFFIXES, "results file")
    cp = args.checkpoint
    if args.resume:
        _input(args.resume, "checkpoint file")
        if cp and Path(cp).resolve() != Path(args.resume).resolve():
            raise FileError(
                "--checkpoint and --resume name different files: a resumed run "
                "continues its own checkpoint file (give only --resume)"
            )
        cp = args.resume
    elif cp:
        check_checkpoint(cp, overwrite=args.overwrite)
    if cp and out.resolve() == Path(cp).resolve():
        raise FileError(
            f"-o {str(out)!r} is also the checkpoint file: writing the results "
            f"there would replace the saved integrator state; choose another -o"
        )


def cmd_simulate(args):
    """Run a script; save the Results it makes, or simulate the Model it builds."""
    from .model import Model
    from .results import Results, attach_geometry

    _input(args.script, "script")
    _check_simulate_files(args)
    ns = _load_script(args.script)
    res = ns.get("results")
    model = ns.get("model")
    for fn in ("main", "build", "make_model"):
        if res is None and model is None and callable(ns.get(fn)):
            out = ns[fn]()
            res = out if isinstance(out, Results) else None
            model = out if isinstance(out, Model) else None
    if res is None:
        if not isinstance(model, Model):
            raise FlexmbdError(
                f"{args.script}: define `results` (a flexmbd Results), `model` (a Model), or a "
                f"function main()/build() returning one of them"
            )
        if args.t_end is None and not args.resume:
            raise FlexmbdError("simulating a model needs --t-end (and usually --dt)")
        opts = {}
        if args.integrator:
            opts["integrator"] = args.integrator
        if args.formulation:
            opts["formulation"] = args.formulation
        if args.checkpoint and not args.resume:
            opts.update(checkpoint=args.checkpoint, every=args.every, overwrite=args.overwrite)
        try:
            if args.resume:
                from .checkpoint import resume

                res = resume(
                    args.resume,
                    model=model,
                    t_end=args.t_end,
                    allow_model_change=args.allow_model_change,
                )
            else:
                res = model.simulate(args.t_end, dt=args.dt, **opts)
        except SolverError as err:  # keep what was computed, then report the failure
            if err.partial is not None:
                path = err.partial.save(args.output)
                print(
                    f"partial results up to t = {err.partial.t[-1]:.6g} s written to {path}",
                    file=sys.stderr,
                )
            raise
    if not isinstance(res, Results):
        raise FlexmbdError(f"{args.script}: `results` is a {type(res).__name__}, not Results")
    if model is not None and not res.geometry and not args.no_geometry:
        try:
            attach_geometry(res, model)
        except FlexmbdError as err:  # drawing data is a convenience: keep the run
            print(f"note: no geometry stored ({err})", file=sys.stderr)
    if model is not None and not res.has_poses(res.geometry):
        _attach_poses(res, model)
    path = res.save(args.output)
    print(results_summary(res))
    print(f"wrote {path}")
    return 0


def _attach_poses(res, model):
    """Body poses for rendering: tree kinematics of joint coordinates, else the System."""
    from .results import attach_body_poses, attach_tree_poses

    joints = {j.name for j in model.joints()}
    try:
        if res.coordinates and all(owner in joints for owner, _ in res.coordinates):
            attach_tree_poses(res, model)
        else:
            attach_body_poses(res, model.compile(res.meta.get("formulation", "recursive")))
    except Exception as err:  # noqa: BLE001 - poses are a convenience: keep the run
        print(f"note: no body poses stored ({type(err).__name__}: {err})", file=sys.stderr)


def _size(text):
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise FlexmbdError(f"--size {text!r}: write WIDTHxHEIGHT, e.g. 640x480") from None
    if not (0 < w <= 16384 and 0 < h <= 16384):
        raise FlexmbdError(f"--size {text!r}: width and height must be 1..16384 pixels")
    return w, h


def cmd_render(args):
    from . import viz
    from .results import Results

    _input(args.results, "results file")
    out = _output(args.output, IMAGE_SUFFIXES + MOVIE_SUFFIXES, "picture or animation file")
    size = _size(args.size)
    res = Results.load(args.results)
    field = None if args.field == "none" else args.field
    if out.suffix.lower() in IMAGE_SUFFIXES:
        viz.show(
            res,
            t=args.time,
            file=out,
            field=field,
            scale=args.scale,
            view=args.view,
            window_size=size,
        )
        print(f"wrote {out}")
        return 0
    n = viz.animate(
        res,
        out,
        scale=args.scale,
        field=field,
        fps=args.fps,
        stride=args.stride,
        max_frames=args.max_frames,
        view=args.view,
        window_size=size,
    )
    print(f"wrote {out} ({n} frames)")
    return 0


def cmd_probe(args):
    from .viz.headless import configure

    print(f"off-screen rendering works ({configure()})")
    return 0


# -- parser ---------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``flexmbd simulate: error: ...``), status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


_RAW = argparse.RawDescriptionHelpFormatter
_SELECTORS = """Node selectors (--interface NAME=SEL, --fixed SEL, --load SEL:fx,fy,fz):
a node-set name from the mesh file (gmsh physical group, Abaqus set), or
plane:x,y,z:nx,ny,nz, box:x0,y0,z0:x1,y1,z1, sphere:x,y,z:r, nearest:x,y,z."""

REDUCE_HELP = f"""Reduce a finite-element mesh to a flexible body and write it (.npz or .h5).

The mesh (gmsh .msh, or any format meshio reads) is assembled with the material
(--material, or --E/--nu/--rho); an Abaqus deck (.inp) brings its mesh, node sets
and material, and with --mass/--stiffness its exported matrices (.mtx). It is
reduced with the mode strategy and saved with its modes, modal invariants, stress
modes and geometric stiffness. `flexmbd info` prints the mode table of the written
file.

Strategies: normal (free-free or --fixed normal modes), static-correction (normal
modes plus the static response to the interface or --load loads), craig-bampton
(constraint modes of the interfaces plus fixed-interface modes), ritz
(load-dependent Ritz vectors of --load).

--modes N is the total number of modes for every strategy, as in the API's
describe(): craig-bampton gets N minus its constraint modes as fixed-interface
modes (6 per rigid/distributing interface besides the first, the body frame;
3 per node of a nodes interface, the first one minus 6), i.e.
CraigBampton(n_total=N, ...); static-correction gets N minus its static modes
(6 per interface, 1 for --load) as normal modes, StaticCorrection(n_total=N, ...).
An N below the constraint or static modes is refused with the number needed.

--frame (craig-bampton): interface (the body frame clamped at the first
interface), mean-axis, or auto (default): mean axes when geometric stiffness is
computed (the joints are not known here; a frame clamped at an interface that a
joint lets rotate is stiffened right to second order only), the interface frame
with --no-geometric. The choice and its reason are printed as a note.

{_SELECTORS}
"""

COMPARE_HELP = f"""Compare mode sets with the full finite-element model.

Every strategy is judged on the same clamped structure: the nodes --fixed are
clamped in the full model and in each reduced model, and the point load --load
acts on it. One row per strategy plus the full model ("full FE (reference)").
Columns (relative errors are fractions, 0.01 = 1 %):

  n_modes        number of modes of the strategy (of free DOFs for the reference)
  freq_err_max   largest relative error of the first --n-freq eigenfrequencies of
                 the clamped structure
  static_err     relative error of the static deflection under the load
                 (Euclidean norm over all DOFs)
  trunc_load     share of the load the modes cannot represent: the part of F
                 outside the span of M*Phi, relative, in the inverse-mass norm
                 (first term of the truncation error, eq. 8 of the review cited in
                 flexmbd.fem.compare)
  trunc_static   residual flexibility: the static deflection the modes miss,
                 relative, in the energy norm (second term of Eq. 8); 0 when the
                 modes contain the exact static response
  transient_err  largest displacement error over a Newmark run (average
                 acceleration, --steps steps over 4 first periods) under a half-sine
                 pulse of the load lasting half the first period, relative to the
                 largest full-model displacement
  time_s         wall time to build the mode set (s)
  frame          the frame of the modes (clamped at an interface, or mean axes)

Small trunc_load and trunc_static mean the modes can carry the load; freq_err_max
judges the dynamics. -o writes the table as CSV (per-frequency errors included),
--figure a plot of it.

{_SELECTORS}
"""

INFO_HELP = """Describe a flexmbd file.

A reduced body (.npz written by `flexmbd reduce`): its modes (kind, label,
frequency), frame convention and interfaces. Results (.h5 or .npz written by
`flexmbd simulate`, Results.save, or a checkpoint file): time span, samples,
coordinates, joints, energies and stored geometry.
"""

SIMULATE_HELP = """Run a model script and save its results (.h5 or .npz).

The script is a Python file run as a module named "__flexmbd__" (code under
`if __name__ == "__main__":` does not run). It must define one of:

  results             a flexmbd Results object: it is saved as it is;
  model               a flexmbd Model: it is simulated with --t-end, --dt,
                      --integrator and --formulation;
  main(), build() or make_model()
                      a function without arguments returning a Model or a
                      Results (the first of these names found is called).

A simulated model's results also store the bodies' meshes and poses (unless
--no-geometry), so `flexmbd render` can draw them without the script.

Checkpoints: --checkpoint FILE.h5 saves the results and the integrator's state every
--every steps; after an interruption, run the same script with --resume FILE.h5 to
continue bit-identically. An existing checkpoint file is never replaced unless
--overwrite is given, and a checkpoint file in use by another run is refused. A
resumed model whose parameters differ from the checkpointed run's is refused unless
--allow-model-change. A failed run saves its partial results to -o and exits with
status 2.
"""

RENDER_HELP = """Render saved results to an animation (.gif, .mp4) or a picture (.png, .jpg).

The results must hold geometry (written by `flexmbd simulate`, or
flexmbd.results.attach_geometry). --scale magnifies the elastic deformation (not
the rigid motion); --field colours the bodies by displacement magnitude or von Mises
stress (bodies reduced with stress modes). Needs PyVista and off-screen rendering
(check with `flexmbd probe-gl`).
"""

PROBE_HELP = """Check that off-screen 3-D rendering (PyVista/VTK) works on this machine.

Prints the rendering back end that works, or fails with advice (e.g. install
OSMesa or run under xvfb).
"""


def _fem_options(p):
    p.add_argument(
        "--interface",
        action="append",
        metavar="NAME=SEL",
        help="interface NAME selected by SEL (repeatable)",
    )
    p.add_argument(
        "--interface-kind",
        default="rigid",
        choices=("rigid", "distributing", "nodes"),
        help="how an interface moves: rigid (RBE2-like), distributing "
        "(RBE3-like) or nodes (every node's DOFs); default rigid",
    )
    p.add_argument("--fixed", metavar="SEL", help="clamped nodes")
    p.add_argument(
        "--load",
        metavar="SEL:fx,fy,fz",
        help="point load (N) on the selected "
        "nodes (Ritz vectors, static correction, compare-modes)",
    )
    p.add_argument(
        "--modes",
        type=positive_int,
        default=8,
        metavar="N",
        help="total number of modes, at least 1 (default 8); for craig-bampton "
        "and static-correction it includes the constraint / static modes",
    )
    p.add_argument(
        "--material", default="steel", help=f"one of {sorted(set(MATERIALS))} (default steel)"
    )
    p.add_argument("--E", type=finite_float, help="Young's modulus (Pa), overrides --material")
    p.add_argument("--nu", type=finite_float, help="Poisson's ratio, overrides --material")
    p.add_argument("--rho", type=finite_float, help="density (kg/m^3), overrides --material")


def _command(sub, name, func, help, description):
    """The sub-parser of command ``name`` (raw-formatted ``description``; ``func`` runs it)."""
    p = sub.add_parser(name, help=help, description=description, formatter_class=_RAW)
    p.set_defaults(func=func)
    return p


def build_parser():
    """The ``argparse`` parser of the ``flexmbd`` command (one sub-parser per command)."""
    p = _Parser(
        prog="flexmbd",
        description="flexmbd: flexible multibody dynamics",
        epilog=(__doc__ or "").split("Node selectors")[0].partition("\n")[2].strip(),
        formatter_class=_RAW,
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = _command(sub, "reduce", cmd_reduce, "reduce a mesh to a flexible body (.npz)", REDUCE_HELP)
    r.add_argument("mesh", help="mesh file (gmsh .msh, Abaqus .inp or another meshio format)")
    r.add_argument(
        "--strategy",
        default="craig-bampton",
        choices=STRATEGIES,
        help="mode strategy (default craig-bampton)",
    )
    _fem_options(r)
    r.add_argument("--mass", metavar="MTX", help="Abaqus mass matrix (.mtx) of the .inp deck")
    r.add_argument("--stiffness", metavar="MTX", help="Abaqus stiffness matrix (.mtx)")
    r.add_argument(
        "--units",
        default="SI",
        help="unit system of an .inp deck and its .mtx "
        "files: SI, mm-t-s, mm-kg-ms, mm-kg-s (converted to SI)",
    )
    r.add_argument(
        "--frame",
        default="auto",
        choices=("auto", "interface", "mean-axis"),
        help="craig-bampton body frame (default auto: mean axes with geometric stiffness)",
    )
    r.add_argument("--no-stress", action="store_true", help="skip stress modes")
    r.add_argument("--no-geometric", action="store_true", help="skip geometric stiffness")
    r.add_argument("--name", help="body name (default: mesh file stem)")
    r.add_argument("-o", "--output", required=True, help="output file (.npz, or .h5 for HDF5)")

    c = _command(
        sub, "compare-modes", cmd_compare, "compare mode sets with the full FE model", COMPARE_HELP
    )
    c.add_argument("mesh", help="mesh file (gmsh .msh or another meshio format)")
    c.add_argument(
        "--strategies",
        default="normal,craig-bampton,ritz",
        help=f"comma-separated subset of {', '.join(STRATEGIES)}",
    )
    _fem_options(c)
    c.add_argument(
        "--n-freq",
        type=positive_int,
        default=6,
        metavar="N",
        help="clamped eigenfrequencies compared (default 6)",
    )
    c.add_argument(
        "--steps",
        type=positive_int,
        default=200,
        metavar="N",
        help="Newmark steps of the transient comparison (default 200)",
    )
    c.add_argument("-o", "--output", help="table as CSV (.csv)")
    c.add_argument("--figure", help="figure file (.png, .pdf, .svg)")

    i = _command(
        sub, "info", cmd_info, "describe a reduced body (.npz) or results (.h5/.npz)", INFO_HELP
    )
    i.add_argument("file", help="a reduced body, results or checkpoint file")

    s = _command(
        sub, "simulate", cmd_simulate, "run a model script and save its results", SIMULATE_HELP
    )
    s.add_argument(
        "script",
        help="Python file defining results, model, or main()/build()/make_model() (see above)",
    )
    s.add_argument(
        "-o",
        "--output",
        default="results.h5",
        help="results file, .h5 or .npz (default results.h5; replaced when the run is complete)",
    )
    s.add_argument(
        "--t-end",
        type=positive_float,
        metavar="SECONDS",
        help="end time (s) when the script gives a model",
    )
    s.add_argument(
        "--dt", type=positive_float, metavar="SECONDS", help="time step or output interval (s)"
    )
    s.add_argument(
        "--integrator",
        help="rk4, rk45, dop853 (recursive formulation); newmark, "
        "hht, generalized-alpha (absolute formulation)",
    )
    s.add_argument(
        "--formulation",
        choices=("recursive", "absolute"),
        help="default: recursive for explicit, absolute for implicit integrators",
    )
    s.add_argument("--no-geometry", action="store_true", help="do not store body meshes")
    s.add_argument(
        "--checkpoint",
        metavar="FILE.h5",
        help="HDF5 checkpoint file written during the run (continue it with --resume FILE.h5)",
    )
    s.add_argument(
        "--every",
        type=positive_int,
        default=100,
        metavar="N",
        help="checkpoint every N steps (default 100)",
    )
    s.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --checkpoint file (default: refuse)",
    )
    s.add_argument(
        "--resume",
        metavar="CHECKPOINT",
        help="continue an interrupted run of this script's model from its "
        "checkpoint file (bit-identical to an uninterrupted run)",
    )
    s.add_argument(
        "--allow-model-change",
        action="store_true",
        help="with --resume: continue although the model's parameters differ "
        "from the checkpointed run's",
    )

    v = _command(
        sub, "render", cmd_render, "render results to .gif/.mp4 (or a .png snapshot)", RENDER_HELP
    )
    v.add_argument("results", help="results file (.h5 or .npz) with geometry")
    v.add_argument(
        "-o", "--output", required=True, help="animation (.gif, .mp4) or picture (.png, .jpg)"
    )
    v.add_argument(
        "--scale", type=finite_float, default=1.0, help="deformation magnification (default 1)"
    )
    v.add_argument(
        "--field",
        default="displacement",
        choices=("displacement", "von_mises", "none"),
        help="colour field",
    )
    v.add_argument("--fps", type=positive_int, default=20, help="frames per second")
    v.add_argument("--stride", type=positive_int, help="use every n-th sample")
    v.add_argument(
        "--max-frames",
        type=positive_int,
        default=200,
        help="at most this many frames (default 200)",
    )
    v.add_argument("--view", default="auto", help="auto (up = -gravity), iso, xy, xz, yz, ...")
    v.add_argument("--size", default="640x480", help="WIDTHxHEIGHT in pixels")
    v.add_argument("--time", type=finite_float, help="snapshot time for image outputs (s)")

    _command(
        sub, "probe-gl", cmd_probe, "check that off-screen 3D rendering works here", PROBE_HELP
    )
    return p


def main(argv=None):
    """Entry point of the ``flexmbd`` command; returns the exit status.

    0 on success; 2 on any failure, with one line ``flexmbd COMMAND: error: ...`` on
    standard error (``FLEXMBD_TRACEBACK=1`` re-raises unexpected errors to show the
    traceback); 130 when interrupted (Ctrl-C).
    """
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad argument (2)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return args.func(args)
    except FlexmbdError as err:
        print(f"flexmbd {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"flexmbd {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - one line, never a traceback
        if os.environ.get("FLEXMBD_TRACEBACK"):
            raise
        print(
            f"flexmbd {args.command}: error: {type(err).__name__}: {err} (an unexpected "
            f"error: please report it; FLEXMBD_TRACEBACK=1 shows where it happened)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
