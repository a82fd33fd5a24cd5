"""Location of the shared Abaqus rotor export (../shared/data beside the repository)."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def rotor_dir():
    """The abaqus_rotor directory: ``../shared/data`` next to the clone (CI), or
    ``$FLEXMBD_SHARED/data`` (a worktree elsewhere); skip when neither exists."""
    candidates = [ROOT / ".." / "shared" / "data" / "abaqus_rotor"]
    if os.environ.get("FLEXMBD_SHARED"):
        candidates.insert(0, Path(os.environ["FLEXMBD_SHARED"]) / "data" / "abaqus_rotor")
    for c in candidates:
        if (c / "rotorDiscTest.inp").exists():
            return c.resolve()
    pytest.skip("shared Abaqus rotor data not found (../shared/data/abaqus_rotor beside the "
                "repository, or set FLEXMBD_SHARED)")
