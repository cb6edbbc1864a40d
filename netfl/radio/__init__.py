"""Radio access network: geometry, shared media and ``transfer`` processes."""

from netfl.radio.fixed_rate_radio import FixedRateRadio
from netfl.radio.geometry import distance_m, drop_uniform_disc
from netfl.radio.radio import Radio, direction_of
from netfl.radio.sharing import ProcessorSharing, SharedMedium, max_min_fair

__all__ = [
    "FixedRateRadio",
    "ProcessorSharing",
    "Radio",
    "SharedMedium",
    "direction_of",
    "distance_m",
    "drop_uniform_disc",
    "max_min_fair",
]
