#!/usr/bin/env bash
# Install the system libraries flexmbd needs at run time and that pip cannot provide:
# an OpenGL implementation for off-screen PyVista/VTK rendering. VTK links no GL library
# and loads one at run time; with none present it segfaults (FACTS.md). On Debian/Ubuntu
# we install Mesa's EGL + DRI drivers and OSMesa when neither EGL nor OSMesa is found.
# Idempotent; does nothing when the libraries are already there.
set -euo pipefail

have_lib() { ldconfig -p 2>/dev/null | grep -q "$1"; }

if have_lib "libEGL.so.1" || have_lib "libOSMesa.so"; then
    echo "install_system_deps: an off-screen GL library is present (EGL or OSMesa)"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_system_deps: no EGL/OSMesa library found and no apt-get;" \
         "install Mesa's libEGL or libOSMesa with your package manager for 3D rendering" >&2
    exit 0   # flexmbd works without rendering; viz raises a clear error
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
echo "install_system_deps: installing libegl1 libgl1-mesa-dri libosmesa6"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    libegl1 libgl1-mesa-dri libosmesa6 >/dev/null
