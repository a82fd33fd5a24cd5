"""Build PyNumero's ASL interface (``libpynumero_ASL.so``) against the system AMPL library.

Pyomo's grey-box NLPs (PyNumero) need a small compiled library that Pyomo itself fetches
from the internet (``pyomo download-extensions``). This module compiles Pyomo's own
``AmplInterface.cpp`` with the system compiler against Debian's ``libamplsolver-dev``
(installed by ``scripts/install_system_deps.sh``) into ``PYOMO_CONFIG_DIR/lib``
(``~/.pyomo/lib``), where Pyomo looks for it. Run: ``python -m flexmbd.pyomo.build_asl``
(``scripts/setup.sh`` does). Idempotent; exits 0 when the library already loads.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ASL_INCLUDE = "/usr/include/ampl-netlib-solvers"


def build(force: bool = False) -> Path | None:
    """Compile the library; returns its path, or None (with a message) when it cannot."""
    try:
        import pyomo.contrib.pynumero as pn
        from pyomo.common.envvar import PYOMO_CONFIG_DIR
        from pyomo.contrib.pynumero.asl import AmplInterface
    except ImportError:
        print('build_asl: Pyomo is not installed (pip install "flexmbd[pyomo]")', file=sys.stderr)
        return None
    if AmplInterface.available() and not force:
        print(f"build_asl: PyNumero ASL interface present ({AmplInterface.libname})")
        return Path(AmplInterface.libname)
    src = Path(pn.__file__).parent / "src" / "AmplInterface.cpp"
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None or not Path(ASL_INCLUDE, "asl.h").exists() or not src.exists():
        print(
            "build_asl: needs g++ and libamplsolver-dev (scripts/install_system_deps.sh) "
            f"and Pyomo's {src.name}",
            file=sys.stderr,
        )
        return None
    out = Path(PYOMO_CONFIG_DIR) / "lib" / "libpynumero_ASL.so"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        cxx,
        "-O2",
        "-shared",
        "-fPIC",
        "-DBUILDING_PYNUMERO_ASL",
        f"-I{ASL_INCLUDE}",
        str(src),
        "-o",
        str(out),
        "-lamplsolver",
        "-ldl",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"build_asl: compilation failed:\n{r.stderr}", file=sys.stderr)
        return None
    print(f"build_asl: built {out}")
    return out


if __name__ == "__main__":
    sys.exit(0 if build(force="--force" in sys.argv) is not None else 1)
