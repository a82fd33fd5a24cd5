"""Warm flexmbd's numba cache: run every example with its ``--quick`` settings.

Each example runs in its own process with the tests' small settings, so every kernel
signature the examples use is compiled once and written to the cache next to the
sources (``__pycache__``; ``NUMBA_CACHE_DIR`` moves it). Later runs of the examples, and
user scripts of the same kinds of model, load the kernels instead of compiling them.
``scripts/setup.sh`` runs this after the install. An example that fails (e.g. the Pyomo
ones without the ``pyomo`` extra) is reported and skipped; the exit status is 0 unless
``--strict``.

Run: ``python scripts/warm_cache.py [--strict] [names ...]``
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def quick_examples():
    """The example scripts that take ``--quick`` (sorted by name)."""
    return sorted(p for p in EXAMPLES.glob("*.py") if "--quick" in p.read_text())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("names", nargs="*", help="example names (default: all with --quick)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if an example fails")
    args = ap.parse_args(argv)
    paths = quick_examples()
    if args.names:
        paths = [p for p in paths if p.stem in args.names]
    env = dict(os.environ, MPLBACKEND="Agg")
    failed = []
    t0 = time.perf_counter()
    for p in paths:
        tic = time.perf_counter()
        r = subprocess.run(
            [sys.executable, str(p), "--quick"], cwd=ROOT, env=env, capture_output=True, text=True
        )
        dt = time.perf_counter() - tic
        status = "ok" if r.returncode == 0 else f"FAILED (exit {r.returncode})"
        print(f"warm_cache: {p.stem:28s} {dt:6.1f} s  {status}", flush=True)
        if r.returncode:
            failed.append(p.stem)
            tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
            print("    " + "\n    ".join(tail), file=sys.stderr)
    print(
        f"warm_cache: {len(paths) - len(failed)} of {len(paths)} examples in "
        f"{time.perf_counter() - t0:.0f} s" + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
