"""Location of the Abaqus rotor export used by the tests: the copy shipped with flexmbd
(``fm.data.abaqus_rotor()``), byte-identical to ``../shared/data/abaqus_rotor``."""

from pathlib import Path

import flexmbd as fm


def rotor_dir():
    """The directory holding rotorDiscTest.inp and its two .mtx files."""
    return Path(fm.data.abaqus_rotor()["inp"]).parent
