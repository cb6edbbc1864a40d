"""Update codecs: how an update (or the model) goes on air, and its exact size.

:mod:`netfl.codecs.update_codec` (the protocol, the registry, a whole update encoded
with error feedback) and one module per built-in: ``fp16``/``bf16``
(:mod:`~netfl.codecs.float_cast`), ``uniform`` (:mod:`~netfl.codecs.uniform_quant`),
``qsgd`` (:mod:`~netfl.codecs.qsgd`), ``topk``/``randk``
(:mod:`~netfl.codecs.sparsify`), ``sign`` (:mod:`~netfl.codecs.sign_sgd`);
``none`` is no codec. docs/codecs.md is the guide.
"""

from netfl.codecs import (  # noqa: F401
    float_cast,
    identity_codec,
    qsgd,
    sign_sgd,
    sparsify,
    uniform_quant,
)
from netfl.codecs.update_codec import (
    CODECS,
    CodecConfig,
    Encoded,
    UpdateCodec,
    build_codec,
    encode_state,
    nominal_bits,
    register_codec,
)

__all__ = [
    "CODECS",
    "CodecConfig",
    "Encoded",
    "UpdateCodec",
    "build_codec",
    "encode_state",
    "nominal_bits",
    "register_codec",
]
