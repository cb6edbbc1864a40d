"""EcoFed's partitioning pieces: models, split points, 8-bit activations, replay, Table I."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.learning import get_model_spec
from netfl.learning.split_model import (
    PARTITION_POINTS,
    ReplayBuffer,
    activation_switch,
    dequantize_activations,
    quantize_activations,
    quantized_bits,
    round_bytes,
    split_model,
)

CIFAR = (3, 32, 32)
#: EcoFed Sec. 4.1: activation shape per 32×32 sample at PP1–PP4
SHAPES = {
    "vgg11": {"PP1": (64, 16, 16), "PP2": (128, 8, 8), "PP3": (256, 8, 8), "PP4": (256, 4, 4)},
    "resnet9": {"PP1": (64, 16, 16), "PP2": (128, 8, 8), "PP3": (256, 4, 4), "PP4": (512, 2, 2)},
}


def _trainable(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def test_parameter_counts_match_ecofed():
    assert _trainable(get_model_spec("vgg11").build(CIFAR, 10)) == 34_440_970
    assert _trainable(get_model_spec("resnet9").build(CIFAR, 10)) == 9_395_722


@pytest.mark.parametrize("name", sorted(PARTITION_POINTS))
@pytest.mark.parametrize("point", ["PP1", "PP2", "PP3", "PP4"])
def test_split_points_give_the_papers_activations_and_compose(name, point):
    torch.manual_seed(0)
    model = get_model_spec(name).build(CIFAR, 10).eval()
    split = split_model(model, name, point, CIFAR)
    assert split.activation_shape == SHAPES[name][point]
    x = torch.randn(4, *CIFAR)
    with torch.no_grad():
        assert torch.allclose(split.server(split.device(x)), model(x), atol=1e-5)
    assert _trainable(split.device) + _trainable(split.server) == _trainable(model)


def test_vgg11_pp2_device_part_is_76032_parameters():
    split = split_model(get_model_spec("vgg11").build(CIFAR, 10), "vgg11", "PP2", CIFAR)
    assert _trainable(split.device) == 76_032 and split.activation_values == 128 * 8 * 8


def test_unknown_points_are_named():
    model = get_model_spec("resnet9").build(CIFAR, 10)
    with pytest.raises(KeyError, match="valid: PP1, PP2, PP3, PP4"):
        split_model(model, "resnet9", "PP9", CIFAR)
    with pytest.raises(KeyError, match="splittable model"):
        split_model(get_model_spec("cnn").build(CIFAR, 10), "cnn", "PP1", CIFAR)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(1e-3, 1e3))
def test_quantisation_error_is_at_most_half_a_step(seed, peak):
    g = torch.Generator().manual_seed(seed)
    x = torch.relu(torch.randn(3, 8, 4, 4, generator=g)) * peak
    q = quantize_activations(x)
    scale = float(q.scales[0])
    assert torch.equal(q.scales, torch.full((3,), scale))  # one tensor: one scale
    assert q.codes.dtype == torch.int8 and int(q.codes.min()) >= 0
    assert scale == pytest.approx(float(x.max()) / 127 if x.max() > 0 else 1.0)
    err = (dequantize_activations(q) - x).abs().max()
    assert err <= scale / 2 * (1 + 1e-5)
    assert q.codes.element_size() == 1  # 1 byte per value on the wire


def test_one_scale_per_charged_batch():
    """Batches of 4, 4 and 2 samples: each quantised with max|batch|/127, the scale every
    sample of the batch carries; a batch with small values keeps its resolution."""
    g = torch.Generator().manual_seed(1)
    x = torch.relu(torch.randn(10, 2, 3, 3, generator=g))
    x[4:8] *= 100.0
    q = quantize_activations(x, [4, 4, 2])
    for lo, hi in ((0, 4), (4, 8), (8, 10)):
        want = float(x[lo:hi].max()) / 127
        assert torch.allclose(q.scales[lo:hi], torch.full((hi - lo,), want))
        err = (dequantize_activations(q[lo:hi]) - x[lo:hi]).abs().max()
        assert err <= want / 2 * (1 + 1e-5)
    one = quantize_activations(x)
    assert (dequantize_activations(q) - x)[:4].abs().max() < (dequantize_activations(one) - x)[
        :4
    ].abs().max()
    with pytest.raises(ValueError, match="sum to 9"):
        quantize_activations(x, [4, 5])


def test_eight_bit_activations_are_four_times_smaller():
    n = 128 * 8 * 8 * 50
    assert (32.0 * n) / quantized_bits(n, num_tensors=1) == pytest.approx(4.0, rel=1e-5)


@pytest.mark.parametrize("rho", [1, 2, 3, 5])
def test_activation_switch_uploads_every_rho_rounds(rho):
    sends = [t for t in range(30) if activation_switch(t, rho)]
    assert sends == list(range(0, 30, rho))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 50),
    st.lists(st.tuples(st.integers(0, 6), st.integers(1, 40)), min_size=1, max_size=30),
)
def test_replay_buffer_never_exceeds_its_capacity(capacity, uploads):
    buf = ReplayBuffer(capacity)
    for device, n in uploads:
        buf.put(device, torch.zeros(n, 2), torch.arange(n))
        assert len(buf) <= capacity
        got = buf.get(device)
        assert got is not None and len(got[1]) == min(n, capacity)  # the newest upload stays
        if n <= capacity:
            assert torch.equal(got[1], torch.arange(n))


def test_replay_buffer_evicts_oldest_first_and_replaces_a_devices_entry():
    buf = ReplayBuffer(10)
    buf.put(1, torch.zeros(4, 1), torch.zeros(4))
    buf.put(2, torch.zeros(4, 1), torch.zeros(4))
    buf.put(1, torch.zeros(3, 1), torch.ones(3))  # replaces device 1's entry (now newest)
    assert buf.devices() == [2, 1] and len(buf) == 7
    buf.put(3, torch.zeros(5, 1), torch.zeros(5))  # 12 > 10: device 2 (oldest) goes
    assert buf.devices() == [1, 3] and len(buf) == 8


def test_round_bytes_are_table_i():
    w, wc, d, a, aux = 34_440_970 * 32.0, 76_032 * 32.0, 500, 128 * 8 * 8, 8192 * 10 * 32.0
    acts = d * a * 32.0
    assert round_bytes("classic_fl", w, wc, d, a) == {"up": w, "down": w}
    assert round_bytes("vanilla_dpfl", w, wc, d, a) == {"up": wc + acts, "down": wc + acts}
    assert round_bytes("local_loss_dpfl", w, wc, d, a, aux_bits=aux) == {
        "up": wc + aux + acts,
        "down": wc + aux,
    }
    on = round_bytes("ecofed", w, wc, d, a, num_batches=50, first_round=True)
    assert on == {"up": d * a * 8.0 + 50 * 32.0, "down": wc}
    off = round_bytes("ecofed", w, wc, d, a, upload_activations=False)
    assert off == {"up": 0.0, "down": 0.0}
    raw = round_bytes("ecofed", w, wc, d, a, quantized=False)
    assert raw["up"] == acts
    with pytest.raises(KeyError, match="valid: classic_fl"):
        round_bytes("fedsgd", w, wc, d, a)


def test_replay_buffer_state_is_plain_tensors_and_reads_the_earlier_format():
    """Its state holds tensors only (quantised activations as codes and scales; a
    checkpoint loads it with ``weights_only``), round-trips, and an earlier
    checkpoint's ``(device, (activations, labels))`` entries still load."""
    import io

    import torch

    from netfl.learning.split_model import QuantizedActivations, quantize_activations

    buf = ReplayBuffer()
    labels = torch.arange(4)
    buf.put(0, quantize_activations(torch.rand(4, 3), [2, 2]), labels)
    buf.put(1, torch.rand(4, 3), labels)
    raw = io.BytesIO()
    torch.save(buf.state_dict(), raw)
    raw.seek(0)
    again = ReplayBuffer()
    again.load_state_dict(torch.load(raw, weights_only=True))
    (q, y0), (a, y1) = again.get(0), again.get(1)
    assert isinstance(q, QuantizedActivations) and torch.equal(q.codes, buf.get(0)[0].codes)
    assert torch.equal(q.scales, buf.get(0)[0].scales) and torch.equal(y0, labels)
    assert torch.equal(a, buf.get(1)[0]) and torch.equal(y1, labels)
    earlier = ReplayBuffer()
    earlier.load_state_dict({"capacity": None, "entries": [(1, (a, labels))]})
    assert torch.equal(earlier.get(1)[0], a) and earlier.devices() == [1]
