"""The ``data`` section of a scenario (:mod:`netfl.scenario.schema`): the data set, its
split and the partition of its training set over the devices."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    Field,
    PositiveFloat,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from netfl.learning.datasets import BUNDLED_DATASETS, DATASETS, TORCHVISION_DATASETS
from netfl.learning.partition import BUILTIN_SCHEMES, PARTITION_PARAMS, PARTITIONERS
from netfl.scenario.strict import _check_name, _Strict, beside, refuse

__all__ = ["MAX_SYNTHETIC_BYTES", "DataSection", "PartitionSection", "SyntheticSection"]

#: a side of a synthetic image (channels, height, width)
_Side = Annotated[int, Field(ge=1, le=4096)]
#: bounds that keep a valid-looking scenario from exhausting memory
MAX_SYNTHETIC_BYTES = 4 << 30

_BUILTIN_PARAMS = {"alpha", "min_samples", "shards_per_device", "fraction", "classes"}
#: a plugin partition's parameter (``data.partition.options``)
_OptionValue = Annotated[int | float, Field(ge=-1e12, le=1e12)]


class PartitionSection(_Strict):
    scheme: str = Field(
        "iid",
        description="iid, dirichlet, shards, dominant_label, classes_per_device, or a "
        "plugin's scheme (netfl.register_partition)",
        max_length=64,
    )
    alpha: PositiveFloat | None = Field(None, le=1e6)
    min_samples: PositiveInt | None = Field(None, le=1_000_000)
    shards_per_device: PositiveInt | None = Field(None, le=10_000)
    fraction: float | None = Field(None, ge=0.0, le=1.0)
    classes: PositiveInt | None = Field(None, le=100_000)
    options: dict[str, _OptionValue] = Field(
        default_factory=dict,
        description="the parameters of a plugin's scheme (numbers, by the names it declares)",
        max_length=64,
    )

    _vs = field_validator("scheme")(lambda v: _check_name("partition scheme", v, PARTITIONERS))

    @model_validator(mode="after")
    def _params_match_scheme(self) -> PartitionSection:
        own = PARTITION_PARAMS[self.scheme]
        plugin = self.scheme not in BUILTIN_SCHEMES
        given = {k for k in _BUILTIN_PARAMS if getattr(self, k) is not None}
        extra = given - (set() if plugin else own)
        if extra:
            allowed = ", ".join(sorted(own)) or "none"
            raise ValueError(
                f"{', '.join(sorted(extra))} does not apply to scheme {self.scheme!r} "
                f"(its parameters: {allowed}{' under options' if plugin else ''})"
            )
        if self.options and not plugin:
            raise ValueError(f"options are for a plugin's scheme, not {self.scheme!r}")
        unknown = set(self.options) - own
        if unknown:
            raise ValueError(
                f"options {', '.join(sorted(unknown))} do not apply to scheme "
                f"{self.scheme!r} (its parameters: {', '.join(sorted(own)) or 'none'})"
            )
        return self

    def params(self) -> dict[str, Any]:
        if self.scheme not in BUILTIN_SCHEMES:
            return dict(self.options)
        own = PARTITION_PARAMS[self.scheme]
        return {k: getattr(self, k) for k in own if getattr(self, k) is not None}


class SyntheticSection(_Strict):
    num_samples: PositiveInt = Field(2000, le=10_000_000)
    num_classes: int = Field(10, ge=2, le=100_000)
    shape: tuple[_Side, _Side, _Side] = (1, 28, 28)
    noise: PositiveFloat = Field(1.0, le=1e3)

    @model_validator(mode="after")
    def _fits_memory(self) -> SyntheticSection:
        c, h, w = self.shape
        size = self.num_samples * c * h * w * 4
        if size > MAX_SYNTHETIC_BYTES:
            raise ValueError(
                f"num_samples × shape needs {size / 2**30:,.1f} GiB of float32 images; "
                f"at most {MAX_SYNTHETIC_BYTES >> 30} GiB"
            )
        return self


class DataSection(_Strict):
    dataset: str = "mnist5k"
    root: str | None = Field(
        None,
        description="local folder of torchvision data sets (relative to the scenario file)",
    )
    test_fraction: float = Field(0.2, gt=0.0, lt=1.0)
    partition: PartitionSection = PartitionSection()
    synthetic: SyntheticSection = SyntheticSection()

    _vd = field_validator("dataset")(lambda v: _check_name("data set", v, DATASETS))

    @field_validator("root")
    @classmethod
    def _root_beside_the_scenario(cls, value: str | None, info: ValidationInfo) -> str | None:
        base_dir = (info.context or {}).get("base_dir")
        return value if value is None or base_dir is None else beside(value, base_dir)

    @model_validator(mode="after")
    def _keys_of_dataset(self) -> DataSection:
        if self.dataset != "synthetic":
            stray = [
                f"synthetic.{k}" for k in self.synthetic.given(set(SyntheticSection.model_fields))
            ]
            refuse(stray, f"to dataset {self.dataset!r}")
        if self.dataset in BUNDLED_DATASETS:
            refuse(self.given({"root"}), f"to dataset {self.dataset!r} (it ships with a package)")
        elif self.dataset in TORCHVISION_DATASETS:
            refuse(self.given({"test_fraction"}), f"to dataset {self.dataset!r} (its own test set)")
        return self
