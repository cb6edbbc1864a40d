"""Unmodified Flower apps on the simulated network (``algorithm: {name: flower}``).

A researcher's Flower 1.38 ``ServerApp`` (any strategy of ``flwr.serverapp.strategy``,
or a ``main`` of their own) and ``ClientApp`` run on the scenario's cell: netfl
implements Flower's ``Grid``, so each message to a node is a downlink transfer of its
serialised size, the node's ``ClientApp`` handler is the device's compute step (the
FLOPs it performed, on the device's compute profile) and the reply is an uplink
transfer of its serialised size; ``send_and_receive`` returns when the replies arrive in
simulated time. The strategy's sampling, aggregation and evaluation run unchanged.
How: :mod:`netfl.algorithms.flower_grid`; the ClientApp's side:
:mod:`netfl.learning.flower_client`; the data a ClientApp may ask netfl for:
:mod:`netfl.flower`. Needs ``pip install 'netfl[flower]'`` (``flwr==1.38.0`` without
Flower's simulation extra: netfl is the runtime).

``rounds.csv``: a row per Flower round (the messages of one ``group_id``), with the
replies' metrics aggregated as Flower's strategies aggregate them
(``flower_train_<key>``, ``flower_evaluate_<key>``, weighted by ``weight_key``), the
counts of messages, error replies and replies that came after the strategy's timeout
(``flower_messages``, ``flower_errors``, ``flower_late``), and netfl's time, bits and
energy. ``accuracy``/``loss`` are the evaluation replies' ``accuracy_key``/``loss_key``
(with every node evaluating and :func:`netfl.flower.node_data`'s test shares: the
global model's accuracy on the whole test set). The run ends when the ServerApp returns
(or after ``training.rounds`` rounds).

Not available: ``learning.mode: timing`` (a ClientApp's replies are its real work),
checkpoints and ``--resume`` (the ServerApp's state lives in its own code), ``bernoulli``
availability (drawn at netfl's round starts; a Flower round starts when the ServerApp
sends), and the training keys the ClientApp's own code replaces
(:data:`APP_TRAINING_KEYS`, ``learning.eval_batch_size``: refused, not ignored).
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import simpy

from netfl.algorithms.algorithm import Algorithm, RoundSummary, register
from netfl.algorithms.flower_config import FlowerConfig
from netfl.core.usercode import add_user_code
from netfl.scenario.strict import beside

if TYPE_CHECKING:
    from netfl.algorithms.context import RoundContext
    from netfl.algorithms.flower_grid import FlowerBridge

__all__ = ["APP_TRAINING_KEYS", "Flower", "FlowerConfig"]

#: the training keys a ClientApp's own code replaces (refused, not silently ignored)
APP_TRAINING_KEYS = (
    "local_epochs",
    "batch_size",
    "lr",
    "momentum",
    "weight_decay",
    "augment",
    "on_nonfinite",
)


@register
class Flower(Algorithm):
    """An unmodified Flower ServerApp and ClientApp on the simulated network."""

    name = "flower"
    Config = FlowerConfig
    config: FlowerConfig
    #: get_node_ids lists the devices available now (``devices.availability``)
    supports_availability: ClassVar[bool] = True

    def __init__(self, world: RoundContext, config: FlowerConfig):
        super().__init__(world, config)
        from netfl.algorithms.flower_grid import FlowerBridge

        self.bridge: FlowerBridge = FlowerBridge(world, config, world.source)

    @classmethod
    def resolve_options(cls, options: dict[str, Any], base_dir: Path) -> dict[str, Any]:
        """``app_dir`` as an absolute folder (relative to the scenario file's folder), so a
        run directory's resolved scenario imports the same apps from anywhere."""
        app_dir = options.get("app_dir")
        if app_dir is None:
            return {**options, "app_dir": str(base_dir.resolve())}
        if isinstance(app_dir, str):
            return {**options, "app_dir": beside(app_dir, base_dir)}
        return options

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        problems = []
        try:
            import flwr  # noqa: F401
        except ImportError:
            return [
                ("algorithm.name", "flower needs flwr: pip install 'netfl[flower]' (flwr==1.38.0)")
            ]
        from netfl.learning.flower_client import load_flower_app

        config = FlowerConfig(**scenario.algorithm.options())
        if not Path(str(config.app_dir)).is_dir():
            return [("algorithm.app_dir", f"no folder {config.app_dir} (the Flower app's folder)")]
        add_user_code(str(config.app_dir), f"Flower app {config.app_dir}")
        for kind in ("server_app", "client_app"):  # (imported now: validate says so)
            try:
                load_flower_app(getattr(config, kind), str(config.app_dir), kind)
            except ValueError as err:
                problems.append((f"algorithm.{kind}", str(err)))
        if scenario.learning.mode != "learn":
            problems.append(
                ("learning.mode", "flower runs the ClientApp's real work: mode must be 'learn'")
            )
        own = "flower: the ClientApp trains and evaluates as its own code says (its settings "
        for key in scenario.training.given(set(APP_TRAINING_KEYS)):
            problems.append((f"training.{key}", own + "travel in algorithm.run_config)"))
        for key in scenario.learning.given({"eval_batch_size"}):
            problems.append((f"learning.{key}", own + "travel in algorithm.run_config)"))
        if any(a.model == "bernoulli" for a in scenario.devices.availability_of()):
            problems.append(
                (
                    "devices.availability.model",
                    "flower: bernoulli draws the devices at each netfl round's start, but a "
                    "Flower round starts when the ServerApp sends; use markov or trace",
                )
            )
        if scenario.outputs.checkpoint_every:
            problems.append(
                (
                    "outputs.checkpoint_every",
                    "flower: a ServerApp's state lives in its own code, so a run cannot be "
                    "checkpointed or resumed; set 0",
                )
            )
        return problems

    @property
    def finished(self) -> bool:
        return self.bridge.finished

    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        return (yield from self.bridge.round(r))

    def evaluate(self) -> tuple[float, float]:
        return self.bridge.accuracy_loss()

    def info(self) -> dict[str, Any]:
        import flwr

        return {
            "flwr_version": flwr.__version__ if hasattr(flwr, "__version__") else "",
            "server_app": self.config.server_app,
            "client_app": self.config.client_app,
        }

    def close(self) -> None:
        self.bridge.close()

    def state_dict(self) -> dict[str, Any]:
        return self.bridge.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.bridge.load_state_dict(state)
