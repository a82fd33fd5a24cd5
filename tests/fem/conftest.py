import pytest

import flexmbd.fem as F
from fem_helpers import E, NU, RHO


@pytest.fixture(scope="session")
def steel():
    return F.Material(E=E, nu=NU, rho=RHO, name="steel")
