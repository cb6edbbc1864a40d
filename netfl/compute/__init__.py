"""Device and server compute: profiles, FLOP counting, timed compute steps, energy."""

from netfl.compute.engine import ComputeEngine
from netfl.compute.profiles import ComputeProfile, compute_profiles, get_compute_profile
from netfl.core.meter import EnergyMeter

__all__ = [
    "ComputeEngine",
    "ComputeProfile",
    "EnergyMeter",
    "compute_profiles",
    "get_compute_profile",
]
