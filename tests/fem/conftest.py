import pytest
from fem_helpers import NU, RHO, E

import flexmbd.fem as F


@pytest.fixture(scope="session")
def steel():
    return F.Material(E=E, nu=NU, rho=RHO, name="steel")
