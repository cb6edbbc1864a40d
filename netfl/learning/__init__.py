"""Learning: data sets, partitioners, models, local training, parameter arithmetic.

Pure torch: nothing here imports SimPy or the radio.
"""

from netfl.learning.datasets import DATASETS, DataRootError, Dataset, load_dataset
from netfl.learning.executor import (
    DistillTask,
    EvalTask,
    LearningContext,
    SerialExecutor,
    SplitTask,
    TrainTask,
)
from netfl.learning.models import MODELS, ModelSpec, get_model_spec, num_parameters
from netfl.learning.params import clone_state, state_numel, weighted_average
from netfl.learning.partition import PARTITIONERS, PartitionError, partition
from netfl.learning.train import (
    TrainConfig,
    TrainResult,
    combine_scores,
    evaluate,
    resolve_device,
    train_local,
)

__all__ = [
    "DATASETS",
    "Dataset",
    "DataRootError",
    "load_dataset",
    "LearningContext",
    "SerialExecutor",
    "TrainTask",
    "SplitTask",
    "DistillTask",
    "EvalTask",
    "MODELS",
    "ModelSpec",
    "get_model_spec",
    "num_parameters",
    "clone_state",
    "state_numel",
    "weighted_average",
    "PARTITIONERS",
    "PartitionError",
    "partition",
    "TrainConfig",
    "TrainResult",
    "evaluate",
    "combine_scores",
    "resolve_device",
    "train_local",
]
