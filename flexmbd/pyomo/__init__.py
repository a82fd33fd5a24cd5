"""flexmbd inside Pyomo: parameter identification, optimal control and design.

Submodules without Pyomo: :mod:`.parameters` (free/fixed model parameters with units),
:mod:`.inputs` (JointInput, ViscousBearing), :mod:`.residual` (index-3 residuals at time
nodes with exact sparse Jacobians), :mod:`.shooting` (simulated trajectories with forward
sensitivities for scipy.optimize). With Pyomo (``pip install "flexmbd[pyomo]"``):
:mod:`.greybox` (the ExternalGreyBoxModel) and :mod:`.collocation` (a whole trajectory as
one NLP for IPOPT).
"""

from .inputs import JointInput, ViscousBearing
from .parameters import Parameter, ParameterSet, parameters
from .residual import NodeResiduals

__all__ = [
    "JointInput",
    "ViscousBearing",
    "Parameter",
    "ParameterSet",
    "parameters",
    "NodeResiduals",
    "require_pyomo",
]


def require_pyomo():
    """Import Pyomo and check that cyipopt and PyNumero's ASL library are there.

    Raises :class:`~flexmbd.errors.FlexmbdError` naming the extra and the set-up step.
    """
    from ..errors import FlexmbdError

    try:
        import pyomo.environ as pe
        from pyomo.contrib.pynumero.asl import AmplInterface
    except ImportError:
        raise FlexmbdError(
            'flexmbd.pyomo needs Pyomo: pip install "flexmbd[pyomo]" (and run '
            "scripts/install_system_deps.sh for Ipopt)"
        ) from None
    if not AmplInterface.available():
        raise FlexmbdError(
            "flexmbd.pyomo: PyNumero's ASL library is missing; run "
            "scripts/install_pynumero.sh (builds it against the system "
            "libamplsolver from scripts/install_system_deps.sh)"
        )
    if not pe.SolverFactory("cyipopt").available(exception_flag=False):
        raise FlexmbdError(
            'flexmbd.pyomo: cyipopt is missing: pip install "flexmbd[pyomo]" '
            "after scripts/install_system_deps.sh (coinor-libipopt-dev)"
        )
    return pe
