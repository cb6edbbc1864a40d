"""Learning: data sets, partitioners, models, local training, parameter arithmetic.

Pure torch: nothing here imports SimPy or the radio. The names below are imported on
first use, so the torch-free parts (task types, partitioners, the catalogues of data
sets and models) can be used without importing torch.
"""

from typing import TYPE_CHECKING

from netfl._lazy import lazy_exports

# torch-free, and imported eagerly: the function ``partition`` must shadow its submodule
from netfl.learning.partition import PARTITIONERS, PartitionError, partition

_EXPORTS = {
    "DATASETS": "netfl.learning.datasets",
    "Dataset": "netfl.learning.datasets",
    "DataRootError": "netfl.learning.datasets",
    "load_dataset": "netfl.learning.datasets",
    "LearningContext": "netfl.learning.executor",
    "SerialExecutor": "netfl.learning.executor",
    "TrainTask": "netfl.learning.tasks",
    "SplitTask": "netfl.learning.tasks",
    "DistillTask": "netfl.learning.tasks",
    "EvalTask": "netfl.learning.tasks",
    "TrainConfig": "netfl.learning.tasks",
    "MODELS": "netfl.learning.models",
    "ModelSpec": "netfl.learning.models",
    "get_model_spec": "netfl.learning.models",
    "num_parameters": "netfl.learning.models",
    "clone_state": "netfl.learning.params",
    "state_numel": "netfl.learning.params",
    "weighted_average": "netfl.learning.params",
    "TrainResult": "netfl.learning.train",
    "combine_scores": "netfl.learning.train",
    "evaluate": "netfl.learning.train",
    "resolve_device": "netfl.learning.train",
    "train_local": "netfl.learning.train",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from netfl.learning.datasets import DATASETS, DataRootError, Dataset, load_dataset
    from netfl.learning.executor import LearningContext, SerialExecutor
    from netfl.learning.models import MODELS, ModelSpec, get_model_spec, num_parameters
    from netfl.learning.params import clone_state, state_numel, weighted_average
    from netfl.learning.tasks import DistillTask, EvalTask, SplitTask, TrainConfig, TrainTask
    from netfl.learning.train import (
        TrainResult,
        combine_scores,
        evaluate,
        resolve_device,
        train_local,
    )

__all__ = ["PARTITIONERS", "PartitionError", "partition", *_EXPORTS]
