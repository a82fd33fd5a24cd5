#!/usr/bin/env bash
# Install the system libraries flexmbd uses and that pip cannot provide (Debian/Ubuntu):
#  * an OpenGL implementation for off-screen PyVista/VTK rendering: VTK links no GL library
#    and loads one at run time; with none present it segfaults (FACTS.md). Mesa's EGL + DRI
#    drivers and OSMesa are installed when neither EGL nor OSMesa is found;
#  * SuiteSparse headers and OpenBLAS, so that pip can build scikit-sparse (CHOLMOD,
#    supernodal with OpenBLAS: the fast sparse Cholesky of the FEM reductions). Without
#    them flexmbd falls back to cholespy (slower, still correct);
#  * Ipopt and the AMPL solver library for the optional flexmbd.pyomo (cyipopt builds
#    against coinor-libipopt-dev; python -m flexmbd.pyomo.build_asl against libamplsolver).
# Idempotent; installs only what is missing. Never fails the set-up: flexmbd runs without
# either (viz raises a clear error; the FEM uses the fallback solver).
set -uo pipefail

have_lib() { ldconfig -p 2>/dev/null | grep -q "$1"; }

missing=()
if ! have_lib "libEGL.so.1" && ! have_lib "libOSMesa.so"; then
    missing+=(libegl1 libgl1-mesa-dri libosmesa6)
fi
if [ ! -f /usr/include/suitesparse/cholmod.h ]; then
    missing+=(libsuitesparse-dev)
fi
if ! dpkg -s libopenblas0-pthread >/dev/null 2>&1; then
    missing+=(libopenblas0-pthread)
fi
for pkg in coinor-libipopt-dev libamplsolver-dev pkg-config g++; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install_system_deps: GL, SuiteSparse, OpenBLAS and Ipopt are present"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_system_deps: missing ${missing[*]} and no apt-get; install the equivalents" \
         "with your package manager (rendering and the fast FEM solver need them)" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
echo "install_system_deps: installing ${missing[*]}"
$SUDO apt-get update -qq || true
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null || echo "install_system_deps: apt-get failed; continuing" >&2
exit 0
