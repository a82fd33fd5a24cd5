#!/usr/bin/env python
"""Tell whether off-screen 3D rendering works here; exits 0 if it does.

Run it in its own process: without a GL library VTK segfaults instead of raising,
which this script reports through its exit status. Usage:
``python scripts/gl_probe.py`` (prints ``flexmbd-gl-probe ok <window class>``).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flexmbd.viz._probe import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
