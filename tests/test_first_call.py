"""Time to first result (issue 13 item 6): what a fresh process pays before its first step.

Guards of ``benchmarks/bench_first_call.py``'s findings that a test can check without
timing: importing flexmbd compiles (or loads) no numba kernel, every kernel goes through
the project's decorators (one compiled version per plain argument type, so a constant
argument at a call site does not compile and cache a second copy), and the simulate path
of a rigid model imports neither the FEM nor the viewers.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from flexmbd._jit import njit, njit_signature

ROOT = Path(__file__).resolve().parents[1]

KERNEL_MODULES = (
    "flexmbd._nbjoints",
    "flexmbd._nbrotation",
    "flexmbd.flexible.rotation",
    "flexmbd.constraints._nbloop",
    "flexmbd.integrators.convergence",
    "flexmbd.absolute.engine",
    "flexmbd.absolute.force_kernels",
    "flexmbd.recursive._kernels",
    "flexmbd.recursive._flexkernels",
)


def run_fresh(code, timeout=600, **env):
    """Run ``code`` in a fresh interpreter with this checkout first on the path (and the
    environment variables ``env`` set)."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_import_compiles_no_kernel_and_every_kernel_uses_the_project_decorators():
    """After importing flexmbd, both formulations and every kernel module, no numba
    dispatcher holds a compiled (or cache-loaded) version; each one is made by
    flexmbd._jit (its compile step unliterals the argument types, or it compiles its
    fixed signature on the first call)."""
    out = run_fresh(
        f"""
        import importlib, sys
        import flexmbd, flexmbd.absolute, flexmbd.recursive
        from numba.core.registry import CPUDispatcher
        for name in {KERNEL_MODULES!r}:
            importlib.import_module(name)
        n = 0
        for name, mod in sorted(sys.modules.items()):
            if not name.startswith("flexmbd"):
                continue
            for attr, d in vars(mod).items():
                if isinstance(d, CPUDispatcher) and d.py_func.__module__ == name:
                    n += 1
                    if d.overloads:
                        print("COMPILED", name, attr)
                    if "compile" not in vars(d) and "_compile_for_args" not in vars(d):
                        print("PLAIN", name, attr)
        print("kernels", n)
        """
    )
    assert "COMPILED" not in out and "PLAIN" not in out, out
    assert int(out.split("kernels")[-1]) > 100  # the kernel modules were all seen


def test_constant_arguments_share_the_plain_version():
    """A kernel called from other kernels with constant arguments (numba types them
    Literal[int](-1), Literal[bool](True)) and from Python compiles one version, and
    every call site computes the right value."""

    @njit
    def pick(x, k, flip):
        return -x[k] if flip else x[k]

    @njit
    def caller(x):
        return pick(x, -1, True) + 10.0 * pick(x, 0, False)

    x = np.array([2.0, 3.0, 5.0])
    assert caller(x) == -5.0 + 20.0
    assert pick(x, 1, False) == 3.0
    assert len(pick.signatures) == 1
    assert [str(t) for t in pick.signatures[0][1:]] == ["int64", "bool"]


def test_njit_signature_compiles_on_first_call_and_rejects_other_types():
    """The fixed-signature decorator compiles nothing at definition, one version at the
    first call, and raises TypeError (numba's own) for other argument types, before and
    after the first call, instead of compiling for them."""

    @njit_signature("float64(float64[::1], int64)")
    def weighted(x, k):
        return x.sum() * k

    assert not weighted.overloads
    with pytest.raises(TypeError):
        weighted(np.arange(3), 2)  # int64 array: no matching definition
    assert weighted(np.arange(3.0), 2) == 6.0
    with pytest.raises(TypeError):
        weighted(np.arange(6.0)[::2], 2)  # strided
    assert len(weighted.overloads) == 1


def test_callee_only_kernel_has_no_python_entry():
    """A kernel compiled with ``callee_only`` (no numba Python or C wrapper) serves the
    kernels that call it, with one compiled version, and refuses a Python call with a
    flexmbd error naming the entry to use (numba would jump to a missing wrapper: a crash)
    instead of compiling; the engine's step kernels are such kernels."""
    from flexmbd.absolute import engine
    from flexmbd.errors import FlexmbdError

    @njit(callee_only="twice")
    def inner(x, k):
        return x[k] + 1.0

    @njit
    def twice(x):
        return 2.0 * inner(x, 0) + inner(x, 1)

    x = np.array([2.0, 3.0])
    assert twice(x) == 2.0 * 3.0 + 4.0
    assert len(inner.overloads) == 1
    with pytest.raises(FlexmbdError, match="twice"):
        inner(x, 0)
    assert len(inner.overloads) == 1 and twice(x) == 10.0
    for kernel, entry in ((engine._system_terms, "system_terms"), (engine._newton, "newton")):
        before = list(kernel.overloads)
        with pytest.raises(TypeError, match=entry):  # before typing or compiling anything
            kernel(*[None] * kernel.py_func.__code__.co_argcount)
        assert list(kernel.overloads) == before


def test_any_layout_kernel_compiles_one_version_for_every_layout():
    """``njit(any_layout=True)``: called with C- and F-contiguous arrays and strided views,
    directly and from another kernel, the kernel compiles one version (arrays typed with
    layout 'A') and computes what its Python function computes; the rotation helpers of
    the absolute engine and the flexible block's ``_out_into`` are such kernels."""
    from flexmbd import _nbrotation as R
    from flexmbd.flexible import _nbbody

    @njit(any_layout=True)
    def scaled_sums(X, c, out):
        for i in range(X.shape[0]):
            v = 0.0
            for j in range(X.shape[1]):
                v += X[i, j]
            out[i] = c * v

    @njit
    def caller(X, out):
        scaled_sums(X, 2.0, out)
        scaled_sums(X[:, ::2], -1.0, out[1:])

    X = np.arange(12.0).reshape(3, 4) ** 1.5
    for M in (X, np.asfortranarray(X), X[:, 1:], X[::-1]):
        out, ref = np.zeros(3), np.zeros(3)
        scaled_sums(M, 0.5, out)
        scaled_sums.py_func(M, 0.5, ref)
        assert np.array_equal(out, ref) and out[0] == 0.5 * sum(M[0])
    out = np.zeros(4)
    caller(X, out)
    assert out[0] == 2.0 * sum(X[0]) and out[1] == -(X[0, 0] + X[0, 2])
    assert len(scaled_sums.signatures) == 1
    assert [a.layout for a in scaled_sums.signatures[0] if hasattr(a, "layout")] == ["A", "A"]
    e = np.array([0.9, 0.1, -0.3, 0.2])
    A = np.zeros((4, 4))
    R.Apoly_to(e, A[1:, 1:])  # a strided view
    assert np.array_equal(A[1:, 1:], R.Apoly(e))
    for kernel in (R.Apoly_to, R.Gmat_to, R.dAtr_to, R.dAs_to, R.TG_add, _nbbody._out_into):
        for sig in kernel.signatures:
            assert all(a.layout == "A" for a in sig if hasattr(a, "layout")), kernel


def _function_attributes(kernel):
    """{LLVM function name: its attributes} of the functions a compiled kernel defines."""
    import llvmlite.binding as ll

    (cres,) = kernel.overloads.values()
    module = ll.parse_assembly(cres.library.get_llvm_str())
    return {f.name: b" ".join(f.attributes) for f in module.functions if not f.is_declaration}


def test_package_kernels_python_wrapper_is_not_optimised():
    """numba's Python (CPython) wrapper of a package kernel is marked ``optnone`` (LLVM
    does not optimise it: seconds of compile for kernels with many array arguments), the
    kernel itself is optimised as before and the call returns its values; a kernel
    outside the package keeps numba's optimised wrapper."""
    from flexmbd import _nbrotation as R

    fresh = njit(R.Apoly_to.py_func)  # the package kernel compiled here (no cache)
    e = np.array([0.9, 0.1, -0.3, 0.2])
    A = np.zeros((3, 3))
    fresh(e, A)
    assert np.array_equal(A, R.Apoly(e))
    attrs = _function_attributes(fresh)
    (wrapper,) = [a for name, a in attrs.items() if name.startswith("_ZN7cpython7flexmbd")]
    (kernel,) = [a for name, a in attrs.items() if name.startswith("_ZN7flexmbd11_nbrotation")]
    assert b"optnone" in wrapper and b"noinline" in wrapper
    assert b"optnone" not in kernel and b"noinline" not in kernel

    @njit
    def user_kernel(x):
        return 2.0 * x[1]

    assert user_kernel(e) == 0.2
    (user_wrapper,) = [a for n, a in _function_attributes(user_kernel).items() if "cpython" in n]
    assert b"optnone" not in user_wrapper


def test_rigid_simulate_path_imports_no_fem_mesh_or_viewer():
    """A rigid pendulum built, compiled and simulated in both formulations imports none
    of scikit-fem, meshio, PyVista/VTK or matplotlib (they cost seconds of import and
    belong to meshes and pictures), and both formulations swing it the same way."""
    out = run_fresh(
        """
        import json, sys
        import flexmbd as fm
        m = fm.Model("pendulum")
        m.rod = fm.RigidBody.rod(1.0, 1.0, origin="end", radius=0.01)
        m.hinge = fm.Revolute(m.ground, m.rod, axis=(0, 0, 1), q0=[0.3])
        m.g = fm.Gravity((0.0, -9.81, 0.0))
        end = []
        for f in ("absolute", "recursive"):
            res = m.compile(f).simulate(0.2, dt=1e-3)
            end.append(float(res.joint("hinge").q[-1, 0]))
        heavy = {"skfem", "meshio", "pyvista", "vtk", "vtkmodules", "matplotlib"}
        print(json.dumps([sorted(heavy & {k.split(".")[0] for k in sys.modules}), end]))
        """
    )
    loaded, (a, r) = json.loads(out.strip().splitlines()[-1])
    assert loaded == [], out
    assert 0.0 < a < 0.3 and abs(a - r) < 1e-4, out  # falling from 0.3 rad, both agree


DATR = """
import json
import numpy as np
from flexmbd._nbrotation import dAtr
e, x = np.array([0.9, 0.1, -0.3, 0.2]), np.array([0.4, -1.2, 0.7])
value = float(dAtr(e, x).sum())
print(json.dumps([value, sum(dAtr.stats.cache_hits.values())]))
"""


def test_cached_kernel_follows_an_edit_of_a_kernel_it_calls(tmp_path):
    """numba stamps a cache entry with its own file only; flexmbd's kernels are stamped
    with every kernel module too, so editing a callee in another module (``mm`` in
    ``_nbalgebra``, called by ``dAtr`` in ``_nbrotation``) recompiles the caller instead
    of running the old callee's code from the cache."""
    import shutil

    pkg = tmp_path / "pkg"
    shutil.copytree(ROOT / "flexmbd", pkg / "flexmbd", ignore=shutil.ignore_patterns("__pycache__"))

    def run(cache):
        out = subprocess.run(
            [sys.executable, "-c", DATR],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(pkg), "NUMBA_CACHE_DIR": str(cache)},
            timeout=600,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    cache = tmp_path / "cache"
    first, hits = run(cache)
    assert hits == 0
    again, hits = run(cache)
    assert (again, hits) == (first, 1)  # unchanged sources: loaded from the cache
    algebra = pkg / "flexmbd" / "_nbalgebra.py"
    text = algebra.read_text()
    assert text.count("    return C\n") == 1
    algebra.write_text(text.replace("    return C\n", "    return 2.0 * C\n"))
    edited, hits = run(cache)
    fresh, _ = run(tmp_path / "fresh-cache")
    assert hits == 0 and edited == fresh and edited != first


def test_cache_stamp_covers_callees_and_not_unrelated_kernels(tmp_path):
    """A kernel's cache stamp changes with the kernel modules it calls (transitively) and
    the constants they import, and not with an unrelated kernel module: editing the
    recursive loop kernels keeps the absolute engine's cache (no recompilation of every
    kernel after each edit)."""
    import shutil

    from flexmbd._jit import kernel_sources_digest

    pkg = tmp_path / "flexmbd"
    shutil.copytree(ROOT / "flexmbd", pkg, ignore=shutil.ignore_patterns("__pycache__"))

    def stamps():
        kernel_sources_digest.cache_clear()
        return {
            name: kernel_sources_digest(pkg / name, root=pkg)
            for name in ("absolute/engine.py", "recursive/_nbloops.py", "_nbrotation.py")
        }

    before = stamps()
    loops = pkg / "recursive" / "_nbloops.py"
    loops.write_text(loops.read_text() + "\n# edited\n")
    after_loops = stamps()
    assert after_loops["absolute/engine.py"] == before["absolute/engine.py"]
    assert after_loops["_nbrotation.py"] == before["_nbrotation.py"]
    assert after_loops["recursive/_nbloops.py"] != before["recursive/_nbloops.py"]
    algebra = pkg / "_nbalgebra.py"  # called by every one of them
    algebra.write_text(algebra.read_text() + "\n# edited\n")
    after_algebra = stamps()
    assert all(after_algebra[k] != after_loops[k] for k in before)
    joint_types = pkg / "joint_types.py"  # constants (joint codes) read by the kernels
    joint_types.write_text(joint_types.read_text() + "\n# edited\n")
    assert stamps()["recursive/_nbloops.py"] != after_algebra["recursive/_nbloops.py"]
    kernel_sources_digest.cache_clear()


LEAN_KERNEL = '''
import numpy as np
from numba import prange
from flexmbd._jit import njit


@njit(cache=True)
def spread(x, k):
    """A kernel that allocates (NRT) and calls a numpy implementation."""
    y = np.zeros(k * x.shape[0])
    for i in range(k):
        y[i * x.shape[0] : (i + 1) * x.shape[0]] = np.cumsum(x) * (i + 1)
    return y


@njit(cache=True, parallel=True)
def squares(n):
    """A parallel kernel (its cache entry re-launches numba's thread pool on load)."""
    out = np.empty(n)
    for i in prange(n):
        out[i] = float(i * i)
    return out
'''

LEAN_LOAD = """
import json, sys
import numpy as np
from numba.core import base
calls = []
refresh = base.BaseContext.refresh
base.BaseContext.refresh = lambda self: (calls.append(1), refresh(self))[1]
from flexmbd import _leanmod as leanmod
y = leanmod.spread(np.array([1.0, 2.0, 4.0]), 2)
y = y.tolist() + leanmod.squares(4).tolist()
hits = sum(sum(k.stats.cache_hits.values()) for k in (leanmod.spread, leanmod.squares))
loaded = [calls.count(1)] + [
    m in sys.modules for m in ("numba.np.polynomial.polynomial_core", "numba.np.arrayobj")
]
libs = [cr.library for k in (leanmod.spread, leanmod.squares) for cr in k.overloads.values()]
unparsed = [type(lib).__name__ == "_LazyLinkLibrary" and lib._shared_module is None for lib in libs]
from numba import njit
@njit
def solve(a, b):
    return np.linalg.solve(a, b) + leanmod.spread(a[0], 1)
x = solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([1.0, 1.0]))
linked = libs[0]._shared_module is not None
print(json.dumps([y, hits, loaded, calls.count(1) > 0, x.tolist(), unparsed, linked]))
"""


def _package_runner(tmp_path, module, source, script):
    """``run(prefix="")``: ``script`` (after ``prefix``) in a fresh process with a copy of
    the package holding ``flexmbd/<module>.py`` = ``source`` (so the kernel module gets
    the package's cache stamp) and its own numba cache; the JSON of its last line."""
    import shutil

    pkg = tmp_path / "pkg"
    shutil.copytree(ROOT / "flexmbd", pkg / "flexmbd", ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "flexmbd" / f"{module}.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": str(pkg), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def run(prefix=""):
        out = subprocess.run(
            [sys.executable, "-c", prefix + script],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=600,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    return run


def test_cached_kernel_loads_without_numba_refresh_and_compiling_still_works(tmp_path):
    """A flexmbd kernel loaded from the cache in a fresh process skips numba's
    target-context refresh (0.2-0.3 s CPU of imports per process: the implementation
    modules the kernel does not use, e.g. numba.np.polynomial, stay unimported), the
    parse of its LLVM bitcode and the import of the numba modules whose helpers it
    links (``np.zeros``, ``np.empty``: numba.np.arrayobj, whose environments are restored
    without their module), and still runs NRT allocations, numpy implementations and
    a parallel loop; a compilation later in the same process refreshes the context
    itself, compiles a numpy.linalg call and links the loaded kernel into it."""
    run = _package_runner(tmp_path, "_leanmod", LEAN_KERNEL, LEAN_LOAD)

    expected = [1.0, 3.0, 7.0, 2.0, 6.0, 14.0, 0.0, 1.0, 4.0, 9.0]
    y, hits, (refreshes, unused, arrays), later, x, unparsed, _ = run()  # fills the cache
    assert (y, hits, x, arrays) == (expected, 0, [2.5, 2.25], True)
    assert refreshes > 0 and unparsed == [False, False]  # compiled here: numba's library
    y, hits, (refreshes, unused, arrays), later, x, unparsed, linked = run()
    assert (y, hits, refreshes, unused, arrays) == (expected, 2, 0, False, False)
    assert unparsed == [True, True]  # loaded: object code only, the bitcode deferred
    # the later compilation links the loaded `spread` (parsing its bitcode then):
    # x = solve + cumsum([2, 0]) = [0.5 + 2, 0.25 + 2]
    assert later and linked and x == [2.5, 2.25]
    # a numba whose code library lacks what the lazy load uses: numba's own load
    y, hits, _, _, x, unparsed, _ = run(BROKEN_LAZY_LOAD)
    assert (y, hits, x, unparsed) == (expected, 2, [2.5, 2.25], [False, False])


BROKEN_LAZY_LOAD = """
from flexmbd import _jit
def _missing(cls, codegen, state):
    raise AttributeError("a numba internal this numba does not have")
_jit._LazyLinkLibrary._unserialize = classmethod(_missing)
"""


CALL_KERNELS = """
from flexmbd._jit import njit


@njit(cache=True)
def inner(x):
    s = 0.0
    for v in x:
        s += v * v
    return s


@njit(cache=True)
def middle(x):
    return inner(x) + 1.0


@njit(cache=True)
def outer(x):
    return middle(x) * 2.0 + inner(x)
"""

CALL_RUN = """
import json
import numpy as np
from flexmbd import _jit
_jit.CALL_LINK_MIN_OBJECT = 0  # every package kernel is called by its emitted code
from flexmbd import _callmod as cm
x = np.array([1.0, 2.0, 0.5])
y = [cm.outer(x)]
hits = [sum(k.stats.cache_hits.values()) for k in (cm.outer, cm.middle, cm.inner)]
compiled = [len(k.overloads) for k in (cm.outer, cm.middle, cm.inner)]
lib = next(iter(cm.outer.overloads.values())).library
deps = len(getattr(lib, "call_deps", tuple)())
y.append(cm.middle(x))  # its own entry: code already loaded as outer's callee
from numba import njit
@njit
def user(x):  # not a package kernel: links everything (numba's way)
    return cm.outer(x) - 1.0
y.append(user(x))
print(json.dumps([y, hits, compiled, deps]))
"""


def test_kernel_calls_large_kernels_code_and_its_cache_entry_loads_them(tmp_path):
    """A package kernel calls large package kernels by their emitted code (threshold 0
    here: every one) instead of optimising and emitting a copy of their code again;
    its cache entry records the callees' object code (callees first), so a fresh process
    loads ``outer`` without loading or compiling ``middle``/``inner`` entries, the
    callees' own entries load later, and a user kernel (numba's linking) still calls
    it. The values are exact: ``outer = 2 (|x|^2 + 1) + |x|^2`` for ``|x|^2 = 5.25``."""
    run = _package_runner(tmp_path, "_callmod", CALL_KERNELS, CALL_RUN)

    expected = [2 * 6.25 + 5.25, 6.25, 2 * 6.25 + 5.25 - 1.0]
    y, hits, compiled, deps = run()  # compiles, fills the cache
    assert (y, hits, compiled, deps) == (expected, [0, 0, 0], [1, 1, 1], 2)
    y, hits, compiled, deps = run()  # fresh process: outer's entry loads its callees
    assert (y, hits, compiled, deps) == (expected, [1, 0, 0], [1, 0, 0], 2)
    # a numba where the library class cannot be installed: entries that record callees
    # are compiled again (numba's way), the others load; the same values
    y, hits, compiled, deps = run(NO_CALL_LINK)
    assert (y, hits, compiled, deps) == (expected, [0, 0, 1], [1, 1, 1], 0)


NO_CALL_LINK = """
from flexmbd import _jit
_jit._install = lambda codegen: False
"""


def test_import_flexmbd_imports_no_numba_scipy_linalg_fem_or_viewer():
    """``import flexmbd`` loads none of numba, scipy.linalg, scikit-fem, meshio, PyVista
    or matplotlib: a model pays for them only when it uses them."""
    out = run_fresh(
        """
        import json, sys
        import flexmbd
        heavy = ("numba", "scipy.linalg", "scipy.sparse.linalg", "skfem", "meshio",
                 "pyvista", "vtk", "matplotlib", "flexmbd.fem", "flexmbd.absolute")
        print(json.dumps(sorted(h for h in heavy if h in sys.modules)))
        """
    )
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_fem_names_load_on_first_use_and_keep_their_functions():
    """``flexmbd.fem`` imports a name's module on first use: a script that builds a
    `ReducedBody` from matrices does not import the mesh readers, the Abaqus and Nastran
    front ends or the mode-set strategies; ``fm.fem.reduce`` and ``fm.fem.stress_history``
    stay the functions after their same-named submodules are imported (by ``compare``,
    ``reduced``), and every name of ``__all__`` resolves."""
    out = run_fresh(
        """
        import json, sys, types
        import flexmbd as fm
        fm.fem.ReducedBody, fm.fem.Interface
        front = ("nastran", "abaqus", "strategies", "compare", "reduce", "meshfile", "model")
        early = sorted(m for m in front if f"flexmbd.fem.{m}" in sys.modules)
        import flexmbd.fem.compare  # imports the submodule flexmbd.fem.reduce
        kinds = [type(fm.fem.reduce).__name__, type(fm.fem.stress_history).__name__,
                 type(fm.fem.nastran).__name__, fm.fem.reduce.__module__]
        from flexmbd.fem import reduce, stress_history
        missing = [n for n in fm.fem.__all__ if getattr(fm.fem, n, None) is None]
        print(json.dumps([early, kinds, reduce is fm.fem.reduce, missing]))
        """
    )
    early, kinds, same, missing = json.loads(out.strip().splitlines()[-1])
    assert early == [], out
    assert kinds == ["function", "function", "module", "flexmbd.fem.reduce"], out
    assert same and missing == [], out


@pytest.mark.slow
def test_model_without_force_elements_compiles_no_force_kernel(tmp_path):
    """From an empty numba cache, the absolute engine of a gravity pendulum (no force
    element: ``Forces.active`` is None) compiles its step loop without the SDA, point-load,
    joint-force and interface-force kernels (about a quarter of the flagship's cold
    compile), and still swings as the recursive formulation does."""
    code = """
        import json
        import flexmbd as fm
        from flexmbd.absolute import engine, force_kernels
        m = fm.Model("pendulum")
        m.rod = fm.RigidBody.rod(1.0, 1.0, origin="end", radius=0.01)
        m.hinge = fm.Revolute(m.ground, m.rod, axis=(0, 0, 1), q0=[0.3])
        m.g = fm.Gravity((0.0, -9.81, 0.0))
        from numba.core import event
        names = set()
        class Names(event.Listener):
            def on_start(self, ev):
                f = ev.data["dispatcher"].py_func
                names.add(f.__module__ + "." + f.__qualname__)
            def on_end(self, ev):
                pass
        event.register("numba:compile", Names())
        s = m.compile("absolute")
        end = [float(s.simulate(0.2, dt=1e-3).joint("hinge").q[-1, 0])]
        engine_names = sorted(names)
        end.append(float(m.compile("recursive").simulate(0.2, dt=1e-3).joint("hinge").q[-1, 0]))
        kernels = (
            engine._run, engine._system_terms, force_kernels.forces_add_into,
            force_kernels.joint_forces_add_into, engine._interface_force_loads,
        )
        print(json.dumps([end, [len(k.overloads) for k in kernels], engine_names]))
        """
    out = run_fresh(code, timeout=900, NUMBA_CACHE_DIR=str(tmp_path))
    (a, r), compiled, names = json.loads(out.strip().splitlines()[-1])
    assert compiled == [1, 1, 0, 0, 0], out  # the loop and its terms only
    assert 0.0 < a < 0.3 and abs(a - r) < 1e-4, out
    # the step loop's reactions, row copies and dense solve compile none of numba's shape
    # error formatting (a unicode library) nor its generic np.linalg.solve
    engine_kernels = {n.rsplit(".", 1)[-1] for n in names if n.startswith("flexmbd.absolute.")}
    assert {"_dense_solve", "_reactions", "_energies"} <= engine_kernels, names
    numba_kinds = ("numba.np.arrayobj.ol_raise_with_shape_context", "numba.np.linalg.solve_impl")
    generic = [n for n in names if n.startswith((*numba_kinds, "numba.cpython.unicode."))]
    assert generic == [], names
