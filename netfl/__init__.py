"""netfl: a discrete-event simulator of federated learning over wireless networks.

Public API::

    from netfl import load_scenario, run, write_run
    scenario = load_scenario("scenarios/quickstart.yaml", ["training.rounds=3"])
    result = run(scenario)          # RunResult with pandas tables
    write_run(result, "runs/demo")  # the run directory

The names below are imported on first use: ``import netfl`` itself is light (no
torch), so the command line's light verbs start fast.
"""

from typing import TYPE_CHECKING

from netfl._lazy import lazy_exports
from netfl.core.threads import use_passive_wait
from netfl.version import __version__

use_passive_wait()  # before torch is imported: idle OpenMP threads sleep (netfl.core.threads)

_EXPORTS = {
    "ALGORITHMS": "netfl.algorithms",
    "Algorithm": "netfl.algorithms",
    "FedAvg": "netfl.algorithms",
    "RoundSummary": "netfl.algorithms",
    "RoundContext": "netfl.algorithms",
    "register": "netfl.algorithms",
    "register_model": "netfl.scenario.registries",
    "register_dataset": "netfl.scenario.registries",
    "register_partition": "netfl.scenario.registries",
    "register_compute_profile": "netfl.scenario.registries",
    "register_link_profile": "netfl.scenario.registries",
    "register_scheduler": "netfl.scenario.registries",
    "register_pathloss": "netfl.scenario.registries",
    "register_mobility": "netfl.scenario.registries",
    "register_fading": "netfl.scenario.registries",
    "register_availability": "netfl.scenario.registries",
    "register_policy": "netfl.scenario.registries",
    "register_codec": "netfl.scenario.registries",
    "UpdateCodec": "netfl.codecs",
    "CodecConfig": "netfl.codecs",
    "ResourcePolicy": "netfl.policies",
    "PolicyConfig": "netfl.policies",
    "Decision": "netfl.policies",
    "Allocation": "netfl.policies",
    "RoundWork": "netfl.policies",
    "DeviceStates": "netfl.policies",
    "AvailabilityModel": "netfl.core.availability",
    "BlockFading": "channel_models.fading",
    "MobilityModel": "netfl.radio.mobility_models",
    "PathLoss": "channel_models.pathloss",
    "Scheduler": "netfl.radio.schedulers",
    "Demands": "netfl.radio.schedulers",
    "SchedulerConfig": "netfl.radio.schedulers",
    "ScenarioError": "netfl.errors",
    "UserError": "netfl.errors",
    "WorkerLost": "netfl.errors",
    "write_run": "netfl.output.rundir",
    "cost_to_target": "netfl.output.figures",
    "read_run": "netfl.output.rundir",
    "RunDirectory": "netfl.output.run_directory",
    "RunResult": "netfl.sim.result",
    "run": "netfl.sim.runner",
    "Scenario": "netfl.scenario.schema",
    "load_scenario": "netfl.loading.scenarios",
    "parse_scenario": "netfl.loading.scenarios",
    "World": "netfl.sim.world",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # what type checkers and editors see
    from channel_models.fading import BlockFading
    from channel_models.pathloss import PathLoss
    from netfl.algorithms import ALGORITHMS, Algorithm, FedAvg, RoundContext, RoundSummary, register
    from netfl.codecs import CodecConfig, UpdateCodec
    from netfl.core.availability import AvailabilityModel
    from netfl.errors import ScenarioError, UserError, WorkerLost
    from netfl.loading.scenarios import load_scenario, parse_scenario
    from netfl.output.figures import cost_to_target
    from netfl.output.run_directory import RunDirectory
    from netfl.output.rundir import read_run, write_run
    from netfl.policies import (
        Allocation,
        Decision,
        DeviceStates,
        PolicyConfig,
        ResourcePolicy,
        RoundWork,
    )
    from netfl.radio.mobility_models import MobilityModel
    from netfl.radio.schedulers import Demands, Scheduler, SchedulerConfig
    from netfl.scenario.registries import (
        register_availability,
        register_codec,
        register_compute_profile,
        register_dataset,
        register_fading,
        register_link_profile,
        register_mobility,
        register_model,
        register_partition,
        register_pathloss,
        register_policy,
        register_scheduler,
    )
    from netfl.scenario.schema import Scenario
    from netfl.sim.result import RunResult
    from netfl.sim.runner import run
    from netfl.sim.world import World

__all__ = ["__version__", *_EXPORTS]
