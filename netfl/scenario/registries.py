"""What a plugin may add besides algorithms: models, data sets, partitions and
compute/link profiles.

A plugin module (a scenario's ``plugins:`` entry, or an installed package's module
that an entry point loads) calls these at import, before the scenario is validated;
the names then work everywhere a built-in's does — in scenario files, sweeps, resumes
and ``netfl list`` (which says which plugin each came from). A name that is taken,
or an entry of the wrong type, raises :class:`~netfl.errors.RegistrationError`, which
the plugin loader turns into one line naming ``plugins[i]``.

- :func:`register_model` — ``builder(input_shape, num_classes) -> torch.nn.Module``;
- :func:`register_dataset` — ``loader(root, test_fraction, seed, **options) ->``
  :class:`netfl.learning.datasets.Dataset` (``root`` is ``data.root`` or None);
- :func:`register_partition` — ``split(labels, num_devices, rng, **params) ->`` one
  index array per device (disjoint, within the training set: checked when it runs);
  its parameters come from ``data.partition.options``;
- :func:`register_compute_profile`, :func:`register_link_profile` — a
  :class:`~netfl.compute.profiles.ComputeProfile` or
  :class:`~channel_models.LinkProfile`;
- :func:`register_scheduler` — a :class:`~netfl.radio.schedulers.Scheduler` subclass
  (``cell.link.scheduler``; its options ``cell.link.scheduler_options``);
- :func:`register_pathloss` — a :class:`~channel_models.pathloss.PathLoss` subclass
  (``pathloss: {model: NAME, ...}`` of ``cell.link`` or a channel profile);
- :func:`register_fading` — a :class:`~channel_models.fading.BlockFading` subclass (a
  channel profile's ``fading: {model: NAME, ...}``; ``cell.link.fading``);
- :func:`register_availability` — a :class:`~netfl.core.availability.AvailabilityModel`
  subclass (``devices.availability.model``; its options ``devices.availability.options``);
- :func:`register_mobility` — a :class:`~netfl.radio.mobility_models.MobilityModel`
  subclass (``devices.mobility.model``; its options ``devices.mobility.options``).

Registering imports no torch: the model's builder is paired with its loss when first
built (:func:`netfl.learning.models.get_model_spec`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from netfl.core.usercode import UserCallable, current_label
from netfl.errors import RegistrationError

__all__ = [
    "register_model",
    "register_dataset",
    "register_partition",
    "register_compute_profile",
    "register_link_profile",
    "register_scheduler",
    "register_pathloss",
    "register_mobility",
    "register_fading",
    "register_availability",
    "registries",
]

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
#: losses a model may be trained with (:class:`netfl.learning.models.ModelSpec`)
LOSSES = ("cross_entropy", "multi_margin")


def registries() -> dict[str, dict[str, Any]]:
    """Every registry a plugin may add to but the algorithms', by kind (the plugin
    loader, :mod:`netfl.loading.plugins`, snapshots them and the algorithm registry to
    know what a plugin added, and takes it back out if the plugin fails)."""
    from channel_models.fading import FADING_MODELS
    from channel_models.link_profiles import link_profiles
    from channel_models.pathloss_laws import PATHLOSS_MODELS
    from netfl.codecs import CODECS
    from netfl.compute.profiles import compute_profiles
    from netfl.core.availability import AVAILABILITY_MODELS
    from netfl.learning.catalog import MODEL_CATALOG
    from netfl.learning.datasets import DATASETS
    from netfl.learning.partition import PARTITIONERS
    from netfl.policies import POLICIES
    from netfl.radio.mobility_models import MOBILITY_MODELS
    from netfl.radio.schedulers import SCHEDULERS

    return {
        "model": MODEL_CATALOG,
        "data set": DATASETS,
        "partition": PARTITIONERS,
        "compute profile": compute_profiles(),
        "link profile": link_profiles(),
        "scheduler": SCHEDULERS,
        "path-loss law": PATHLOSS_MODELS,
        "mobility model": MOBILITY_MODELS,
        "fading model": FADING_MODELS,
        "availability model": AVAILABILITY_MODELS,
        "resource policy": POLICIES,
        "update codec": CODECS,
    }


def forget(kind: str, name: str) -> None:
    """Take ``name`` out of the registry of ``kind`` (a plugin that failed half-way)."""
    from netfl.learning.catalog import MODEL_BUILDERS
    from netfl.learning.datasets import DATASET_INFO
    from netfl.learning.partition import PARTITION_PARAMS

    registries()[kind].pop(name, None)
    extra = {
        "model": MODEL_BUILDERS,
        "data set": DATASET_INFO,
        "partition": PARTITION_PARAMS,
    }.get(kind)
    if extra is not None:
        extra.pop(name, None)
    if kind == "model":
        import sys

        models = sys.modules.get("netfl.learning.models")
        if models is not None:
            models.MODELS.pop(name, None)


def _claim(kind: str, name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise RegistrationError(
            f"a {kind} name must be lower-case letters, digits and _ (got {name!r})"
        )
    if name in registries()[kind]:
        raise RegistrationError(f"{kind} {name!r} registered twice")
    return name


def _callable(kind: str, name: str, value: Any, what: str) -> None:
    if not callable(value):
        raise RegistrationError(f"{kind} {name!r}: {what} must be callable")


def register_model(
    name: str,
    builder: Callable[..., Any],
    *,
    loss: str = "cross_entropy",
    description: str = "",
) -> None:
    """A model ``name`` built by ``builder(input_shape, num_classes)``, trained with
    ``loss`` (``cross_entropy`` or ``multi_margin``)."""
    from netfl.learning.catalog import MODEL_BUILDERS, MODEL_CATALOG

    _claim("model", name)
    _callable("model", name, builder, "its builder")
    if loss not in LOSSES:
        raise RegistrationError(f"model {name!r}: loss must be one of {', '.join(LOSSES)}")
    MODEL_CATALOG[name] = (loss, description or "(plugin model)")
    MODEL_BUILDERS[name] = _user(builder, f"model {name!r} builder", _model_problem)


def register_dataset(name: str, loader: Callable[..., Any], *, description: str = "") -> None:
    """A data set ``name`` read by ``loader(root, test_fraction, seed, **options)``."""
    from netfl.learning.datasets import DATASET_INFO, DATASETS

    _claim("data set", name)
    _callable("data set", name, loader, "its loader")
    DATASETS[name] = _user(loader, f"data set {name!r} loader", _dataset_problem)
    DATASET_INFO[name] = description or "(plugin data set)"


def register_partition(
    name: str, split: Callable[..., Any], *, params: tuple[str, ...] = ()
) -> None:
    """A partition scheme ``name``: ``split(labels, num_devices, rng, **params)``;
    ``params`` names the numbers it takes from ``data.partition.options``."""
    from netfl.learning.partition import PARTITION_PARAMS, PARTITIONERS

    _claim("partition", name)
    _callable("partition", name, split, "its split")
    if not all(isinstance(p, str) and _NAME.match(p) for p in params):
        raise RegistrationError(f"partition {name!r}: params must be names, got {params!r}")
    PARTITIONERS[name] = _user(split, f"partition {name!r} split", _partition_problem)
    PARTITION_PARAMS[name] = set(params)


def register_compute_profile(profile: Any) -> None:
    """A device or server compute profile (a :class:`~netfl.compute.profiles.ComputeProfile`)."""
    from netfl.compute.profiles import ComputeProfile, compute_profiles

    if not isinstance(profile, ComputeProfile):
        raise RegistrationError(f"{profile!r} is no netfl.compute.profiles.ComputeProfile")
    name = _claim("compute profile", profile.name)
    _positive("compute profile", name, profile, ("effective_flops_per_s",))
    _non_negative(
        "compute profile",
        name,
        profile,
        ("busy_power_w", "idle_power_w", "tx_power_w", "rx_power_w", "radio_wait_power_w")
        + (
            "rrc_tail_power_w",
            "rrc_tail_s",
            "tx_power_per_mbps_w",
            "rx_power_per_mbps_w",
            "tx_power_per_w",
        )
        + ("rrc_promotion_power_w", "rrc_promotion_s"),
    )
    if not (isinstance(profile.parallel_jobs, int) and profile.parallel_jobs >= 1):
        raise RegistrationError(f"compute profile {name!r}: parallel_jobs must be an integer ≥ 1")
    problem = dvfs_problem(profile)
    if problem is not None:
        raise RegistrationError(f"compute profile {name!r}: {problem[0]} {problem[1]}")
    compute_profiles()[name] = profile


#: a compute profile's DVFS keys and their largest values (a scenario's
#: ``compute_overrides`` has the same bounds)
DVFS_BOUNDS = {
    "min_frequency_hz": 1e11,
    "max_frequency_hz": 1e11,
    "capacitance": 1e-20,
    "cycles_per_flop": 1e12,
    "cycles_per_sample": 1e12,
}


def dvfs_problem(profile: Any) -> tuple[str, str] | None:
    """The first fault of a compute profile's DVFS values as ``(key, message)``, or
    None: each a number in [0, bound]; with DVFS (``max_frequency_hz`` > 0)
    ``min_frequency_hz`` ≤ ``max_frequency_hz`` and ``capacitance`` > 0; without it
    the other DVFS keys 0 (they would be ignored)."""
    for key, bound in DVFS_BOUNDS.items():
        v = getattr(profile, key)
        if not (_finite(v) and 0 <= v <= bound):
            return key, f"must be a number in [0, {bound:g}] (got {v!r})"
    f_min, f_max, kappa = profile.min_frequency_hz, profile.max_frequency_hz, profile.capacitance
    if f_max == 0:
        for key in DVFS_BOUNDS:
            if getattr(profile, key) != 0:
                return key, "applies only with DVFS: give max_frequency_hz > 0 as well"
        return None
    if f_min > f_max:
        return "min_frequency_hz", f"{f_min:g} Hz exceeds max_frequency_hz {f_max:g} Hz"
    if not kappa > 0:
        return "capacitance", (
            f"must be > 0 with DVFS (max_frequency_hz {f_max:g} Hz): a CPU cycle at f costs "
            "capacitance·f² J"
        )
    return None


def register_link_profile(profile: Any) -> None:
    """A fixed-rate access link profile (a :class:`~channel_models.LinkProfile`)."""
    from channel_models.link_profiles import LinkProfile, link_profiles

    if not isinstance(profile, LinkProfile):
        raise RegistrationError(f"{profile!r} is no channel_models.LinkProfile")
    name = _claim("link profile", profile.name)
    _positive("link profile", name, profile, ("uplink_bps", "downlink_bps"))
    link_profiles()[name] = profile


def register_scheduler(scheduler: Any) -> Any:
    """An RB scheduler: a :class:`~netfl.radio.schedulers.Scheduler` subclass with a
    ``name``, implementing ``allocate(demands) -> (shares, sessions_total)`` (usable as
    a class decorator; returns the class)."""
    from netfl.radio.schedulers import register_scheduler as add

    _claim("scheduler", vars(scheduler).get("name") if isinstance(scheduler, type) else None)
    return add(scheduler)


def register_pathloss(law: Any) -> Any:
    """A path-loss law: a :class:`~channel_models.pathloss.PathLoss` subclass with a
    ``name`` whose constructor's keyword arguments are its parameters (heights,
    ``shadowing_std_db`` and ``carrier_hz`` if ``uses_carrier_hz``), implementing
    ``mean_loss_db(distance_2d_m)`` [dB] (usable as a class decorator)."""
    from channel_models.pathloss_laws import register_pathloss as add

    _claim("path-loss law", vars(law).get("name") if isinstance(law, type) else None)
    try:
        return add(law)
    except ValueError as err:
        raise RegistrationError(str(err)) from None


def register_fading(law: Any) -> Any:
    """A block-fading law: a :class:`~channel_models.fading.BlockFading` subclass with a
    ``name``, implementing ``sample``, ``mean``, ``variance``, ``ppf`` and
    ``peak_gain`` (usable as a class decorator)."""
    from channel_models.fading import register_fading as add

    _claim("fading model", vars(law).get("name") if isinstance(law, type) else None)
    try:
        return add(law)
    except ValueError as err:
        raise RegistrationError(str(err)) from None


def register_availability(model: Any) -> Any:
    """An availability model: an :class:`~netfl.core.availability.AvailabilityModel`
    subclass with a ``name``, an optional pydantic ``Config``
    (``devices.availability.options``) and a classmethod ``process(settings,
    device_index, device_name, rng)`` returning an object with ``is_on(t)``,
    ``next_off(t)`` and ``next_on(t)`` — or ``round_probability(settings)`` for a
    per-round model (usable as a class decorator)."""
    from netfl.core.availability import register_availability as add

    _claim("availability model", vars(model).get("name") if isinstance(model, type) else None)
    return add(model)


def register_mobility(model: Any) -> Any:
    """A mobility model: a :class:`~netfl.radio.mobility_models.MobilityModel` subclass
    with a ``name``, an optional pydantic ``Config`` (``devices.mobility.options``) and a
    classmethod ``trajectory(start_m, heading_rad, settings, rng, region)`` returning an
    object with ``positions(t_s) -> (n, 2)`` [m] and ``speed_mps(t_s)`` (usable as a
    class decorator)."""
    from netfl.radio.mobility_models import register_mobility as add

    _claim("mobility model", vars(model).get("name") if isinstance(model, type) else None)
    return add(model)


def register_policy(policy: Any) -> Any:
    """A resource policy: a :class:`~netfl.policies.ResourcePolicy` subclass with a
    ``name``, an optional ``Config`` (a :class:`~netfl.policies.PolicyConfig`:
    ``policy.options``) and ``decide(r, candidates, count, work) -> Decision`` (usable as
    a class decorator; docs/policies.md)."""
    from netfl.policies.resource_policy import register_policy as add

    _claim("resource policy", vars(policy).get("name") if isinstance(policy, type) else None)
    return add(policy)


def register_codec(codec: Any) -> Any:
    """An update codec: a :class:`~netfl.codecs.UpdateCodec` subclass with a ``name``, an
    optional ``Config`` (a :class:`~netfl.codecs.CodecConfig`: the codec section's
    ``options``), ``encode(x, rng) -> (decoded, bits)`` and ``nominal_bits(numel)``
    (usable as a class decorator; docs/codecs.md)."""
    from netfl.codecs.update_codec import register_codec as add

    _claim("update codec", vars(codec).get("name") if isinstance(codec, type) else None)
    return add(codec)


def _user(fn: Callable[..., Any], what: str, check: Any = None) -> UserCallable:
    """``fn`` called as user code: what it raises, and a result ``check`` finds wrong,
    is one line naming the plugin that registered it (:mod:`netfl.core.usercode`)."""
    return UserCallable(fn, current_label("user code"), what, check)


def _model_problem(model: Any, input_shape: Any = None, num_classes: Any = None) -> str:
    """What is wrong with what a model builder returned ("" if nothing)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return f"{_shown(model)}, not a torch.nn.Module"
    if not any(True for _ in model.parameters()):
        return "a model with no parameters (nothing to train or to send)"
    return ""


def _dataset_problem(data: Any, *args: Any, **kwargs: Any) -> str:
    """What is wrong with what a data-set loader returned ("" if nothing)."""
    import numpy as np

    from netfl.learning.datasets import Dataset

    if not isinstance(data, Dataset):
        return f"{_shown(data)}, not a netfl.learning.datasets.Dataset"
    for part in ("train", "test"):
        x, y = getattr(data, f"{part}_x_np"), getattr(data, f"{part}_y_np")
        if not isinstance(x, np.ndarray) or not isinstance(y, np.ndarray):
            return f"{part} arrays that are no numpy arrays"
        if len(x) != len(y):
            return f"{len(x)} {part} samples but {len(y)} {part} labels"
        if len(y) and (y.min() < 0 or y.max() >= data.num_classes):
            return f"{part} labels outside 0..{data.num_classes - 1} (num_classes)"
    if not len(data.train_y_np):
        return "no training samples"
    return ""


def _partition_problem(parts: Any, labels: Any, num_devices: int, *args: Any, **kw: Any) -> str:
    """What is wrong with what a partition returned ("" if nothing; the indices
    themselves are checked by :func:`netfl.learning.partition.partition`)."""
    if not isinstance(parts, (list, tuple)) or len(parts) != num_devices:
        return f"{_shown(parts)}, not a list of {num_devices} index arrays (one per device)"
    return ""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"a {type(value).__name__}"


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive(kind: str, name: str, profile: Any, keys: tuple[str, ...]) -> None:
    for key in keys:
        v = getattr(profile, key)
        if not (_finite(v) and 0 < v <= 1e18):
            raise RegistrationError(f"{kind} {name!r}: {key} must be a positive number (got {v!r})")


def _non_negative(kind: str, name: str, profile: Any, keys: tuple[str, ...]) -> None:
    for key in keys:
        v = getattr(profile, key)
        if not (_finite(v) and 0 <= v <= 1e9):
            raise RegistrationError(f"{kind} {name!r}: {key} must be a number ≥ 0 (got {v!r})")
