"""Viz tests render real images; they run only where off-screen rendering works.

The probe runs once per session in a child process (VTK segfaults instead of
raising when no GL library is present); the rendering tests are skipped only if
that probe fails.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def gl():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gl_probe.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        pytest.skip(
            f"off-screen rendering unavailable (probe exit {out.returncode}): "
            f"{out.stdout.strip()[-300:]}"
        )
    # children of this process (and flexmbd.viz.headless here) trust this probe
    import os

    os.environ["FLEXMBD_GL_PROBED"] = "ok:" + out.stdout.split("ok", 1)[-1].strip()
    return out.stdout.strip()


@pytest.fixture(autouse=True)
def _private_gl_cache(tmp_path, monkeypatch):
    """Each test gets its own (empty) cache of GL probe verdicts."""
    monkeypatch.setenv("FLEXMBD_CACHE_DIR", str(tmp_path / "flexmbd-cache"))
