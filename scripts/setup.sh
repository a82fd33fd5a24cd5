#!/usr/bin/env bash
# One command for a fresh machine: system libraries, flexmbd with every extra
# (tests, peers, viz, io, dask), the fast CHOLMOD solver when it builds, the compiled
# numba kernels of every example (scripts/warm_cache.py: each example once with its
# --quick settings), then the flagship demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_system_deps.sh
python -m pip install -q -e ".[all]"
# scikit-sparse is a source build against the system SuiteSparse: optional, with the
# cholespy wheel as fallback (pyproject extra "fast").
python -m pip install -q -e ".[fast]" \
    || echo "setup: scikit-sparse did not build; the FEM uses cholespy instead" >&2
# flexmbd.pyomo (extra "pyomo"): Pyomo, cyipopt (a source build against the system Ipopt) and
# PyNumero's ASL library compiled against the system libamplsolver; optional like "fast"
{ python -m pip install -q -e ".[pyomo]" && python -m flexmbd.pyomo.build_asl; } \
    || echo "setup: the pyomo extra did not install; flexmbd.pyomo is unavailable" >&2
python scripts/warm_cache.py
python examples/flagship.py
