"""netfl: a discrete-event simulator of federated learning over wireless networks.

Public API::

    from netfl import load_scenario, run, write_run
    scenario = load_scenario("scenarios/quickstart.yaml", ["training.rounds=3"])
    result = run(scenario)          # RunResult with pandas tables
    write_run(result, "runs/demo")  # the run directory
"""

from netfl.algorithms import ALGORITHMS, Algorithm, FedAvg, RoundSummary, register  # noqa: E402
from netfl.errors import ScenarioError, UserError, WorkerLost  # noqa: E402
from netfl.report import write_run  # noqa: E402
from netfl.results import read_run  # noqa: E402
from netfl.run_result import RunResult  # noqa: E402
from netfl.runner import run  # noqa: E402
from netfl.scenario import Scenario  # noqa: E402
from netfl.scenario_io import load_scenario, parse_scenario  # noqa: E402
from netfl.version import __version__  # noqa: E402
from netfl.world import World  # noqa: E402

__all__ = [
    "__version__",
    "ALGORITHMS",
    "Algorithm",
    "FedAvg",
    "RoundSummary",
    "register",
    "ScenarioError",
    "UserError",
    "WorkerLost",
    "read_run",
    "write_run",
    "RunResult",
    "run",
    "Scenario",
    "load_scenario",
    "parse_scenario",
    "World",
]
