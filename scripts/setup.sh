#!/usr/bin/env bash
# One command for a fresh machine: system GL libraries, flexmbd with every extra
# (tests, peers, viz, io), then the flagship demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_system_deps.sh
python -m pip install -q -e ".[all]"
python examples/flagship.py
