"""Device and server compute: profiles, FLOP counting, timed compute steps, energy."""

from netfl.compute.engine import ComputeEngine
from netfl.compute.meter import EnergyMeter
from netfl.compute.profiles import ComputeProfile, compute_profiles, get_compute_profile

__all__ = [
    "ComputeEngine",
    "ComputeProfile",
    "EnergyMeter",
    "compute_profiles",
    "get_compute_profile",
]
