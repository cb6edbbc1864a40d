"""FL algorithms as SimPy processes behind one protocol, and their registry.

A new built-in algorithm is one module plus one import line here; a researcher's own
is a plugin (a ``.py`` file or module named by a scenario's ``plugins`` key, or an
installed package's ``netfl.algorithms`` entry point: :mod:`netfl.loading.plugins`,
``examples/fedprox/``).
"""

from netfl.algorithms.algorithm import (
    ALGORITHMS,
    Algorithm,
    AlgorithmConfig,
    RegistrationError,
    RoundSummary,
    get_algorithm,
    honours,
    register,
)
from netfl.algorithms.context import ModelInfo, RoundContext
from netfl.algorithms.dfl import DFL, FD, DFLConfig, FDConfig
from netfl.algorithms.ecofed import EcoFed, EcoFedConfig
from netfl.algorithms.fedasync import FedAsync, FedAsyncConfig
from netfl.algorithms.fedavg import FedAvg, FedAvgConfig
from netfl.algorithms.fedbuff import FedBuff, FedBuffConfig
from netfl.algorithms.feddif import FedDif
from netfl.algorithms.feddif_config import FedDifConfig
from netfl.algorithms.fedmd import FedMD, FedMDConfig
from netfl.algorithms.fedswap import FedSwap
from netfl.algorithms.fedzkt import FedZKT, FedZKTConfig
from netfl.algorithms.flower_bridge import Flower, FlowerConfig
from netfl.algorithms.hierfavg import HierFAVG, HierFAVGConfig
from netfl.algorithms.hooks import Aggregator, ClientConfig, Payload
from netfl.algorithms.link_probe import TransferTest, TransferTestConfig
from netfl.algorithms.split_fl import LocalLossDPFL, SplitConfig, VanillaDPFL

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "AlgorithmConfig",
    "RegistrationError",
    "RoundSummary",
    "get_algorithm",
    "honours",
    "register",
    "Aggregator",
    "ClientConfig",
    "Payload",
    "RoundContext",
    "ModelInfo",
    "FedAvg",
    "FedAvgConfig",
    "FedAsync",
    "FedAsyncConfig",
    "FedBuff",
    "FedBuffConfig",
    "DFL",
    "DFLConfig",
    "FD",
    "FDConfig",
    "FedDif",
    "HierFAVG",
    "HierFAVGConfig",
    "FedDifConfig",
    "FedSwap",
    "FedZKT",
    "FedMD",
    "FedMDConfig",
    "FedZKTConfig",
    "Flower",
    "FlowerConfig",
    "EcoFed",
    "EcoFedConfig",
    "LocalLossDPFL",
    "SplitConfig",
    "VanillaDPFL",
    "TransferTest",
    "TransferTestConfig",
]
