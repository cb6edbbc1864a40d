"""The options of the ``flower`` algorithm (:mod:`netfl.algorithms.flower_bridge`), apart
from the bridge so that its engine (:mod:`netfl.algorithms.flower_grid`) reads them
without importing the algorithm that builds it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictStr

from netfl.algorithms.algorithm import AlgorithmConfig

__all__ = ["APP_REFERENCE", "FlowerConfig"]

#: ``package.module:attribute`` (Flower's own app reference)
APP_REFERENCE = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_.]*$"
_Int = Annotated[int, Field(strict=True, ge=-(2**53), le=2**53)]
_Float = Annotated[float, Field(strict=True, ge=-1e300, le=1e300)]
_Str = Annotated[StrictStr, Field(max_length=1000)]
_Key = Annotated[str, Field(min_length=1, max_length=100)]


class FlowerConfig(AlgorithmConfig):
    server_app: str = Field(
        ...,
        pattern=APP_REFERENCE,
        max_length=300,
        description="the flwr ServerApp, as 'package.module:attribute'",
    )
    client_app: str = Field(
        ...,
        pattern=APP_REFERENCE,
        max_length=300,
        description="the flwr ClientApp, as 'package.module:attribute'",
    )
    app_dir: str | None = Field(
        None,
        max_length=4096,
        description="folder put first on sys.path to import the apps (relative to the "
        "scenario file; default: the scenario file's folder)",
    )
    run_config: dict[_Key, StrictBool | _Int | _Float | _Str] = Field(
        default_factory=dict,
        max_length=200,
        description="Flower's run config (context.run_config of the ServerApp and of every "
        "ClientApp), e.g. num-server-rounds",
    )
    accuracy_key: _Key = Field(
        "eval_acc", description="evaluation-reply metric written as rounds.csv's accuracy"
    )
    loss_key: _Key = Field("eval_loss", description="evaluation-reply metric written as loss")
    weight_key: _Key = Field(
        "num-examples", description="reply metric that weights the aggregation of metrics"
    )
    compute: Literal["counted", "model"] = Field(
        "counted",
        description="a handler's cost on the device: the FLOPs it performed (counted), or the "
        "scenario model's FLOPs per sample x the reply's weight_key (x run_config[epochs_key] "
        "when training; no counting overhead)",
    )
    epochs_key: _Key = Field(
        "local-epochs", description="run_config key of the local epochs (compute: model)"
    )
