import pytest
from torch import nn

from netfl.compute import ComputeEngine, compute_profiles
from netfl.compute.flops import measure_flops
from netfl.learning import get_model_spec
from tests.conftest import make_node


def test_compute_time_is_flops_over_rate_and_energy_is_power_times_time(env, recorder):
    engine = ComputeEngine(env, recorder)
    node = make_node("ue0")
    flops = 7.5e9
    out = []

    def job():
        rec = yield engine.run(node, flops, "train")
        out.append((rec, env.now))

    env.process(job())
    env.run()
    rec, t = out[0]
    expected = flops / node.compute.effective_flops_per_s
    assert t == expected and rec.duration_s == expected
    assert rec.energy_j == node.compute.busy_power_w * expected
    assert node.energy.compute_j == rec.energy_j and node.energy.compute_s == expected


def test_steps_on_one_node_queue(env, recorder):
    """parallel_jobs=1: a second step starts when the first ends."""
    engine = ComputeEngine(env, recorder)
    node = make_node("ue0")
    rate = node.compute.effective_flops_per_s
    engine.run(node, 3 * rate, "a")
    engine.run(node, 2 * rate, "b")
    env.run()
    assert [(r.kind, r.start_s, r.end_s) for r in recorder.computes] == [
        ("a", 0.0, 3.0),
        ("b", 3.0, 5.0),
    ]


def test_every_profile_value_has_a_source():
    for p in compute_profiles().values():
        for key in (
            "effective_flops_per_s",
            "busy_power_w",
            "idle_power_w",
            "tx_power_w",
            "rx_power_w",
        ):
            assert p.sources.get(key), f"{p.name}.{key} has no source"
        assert p.busy_power_w >= p.idle_power_w > 0


def test_profile_overrides_are_marked():
    p = compute_profiles()["raspberry_pi_4"].with_overrides(busy_power_w=5.0, idle_power_w=None)
    assert p.busy_power_w == 5.0 and p.sources["busy_power_w"] == "scenario override"
    assert p.idle_power_w == compute_profiles()["raspberry_pi_4"].idle_power_w


def test_linear_flops_match_formula():
    """One linear layer in→out: 2·in·out forward; backward needs only the weight
    gradient (the input needs none), another 2·in·out."""
    fl = measure_flops(
        ("linear-test", 20, 7), lambda: nn.Linear(20, 7), (20,), nn.CrossEntropyLoss(), 7
    )
    assert fl.inference_per_sample == 2 * 20 * 7
    assert fl.train_per_sample == 4 * 20 * 7


def test_lstm_flops_counted_by_custom_formula():
    spec = get_model_spec("lstm")
    fl = measure_flops(
        ("lstm-test",), lambda: spec.build((1, 28, 28), 10), (1, 28, 28), spec.loss_fn(), 10
    )
    hidden, steps, feat = 128, 28, 28
    layer1 = 2 * steps * 4 * hidden * (feat + hidden)
    layer2 = 2 * steps * 4 * hidden * (hidden + hidden)
    head = 2 * hidden * 10
    assert fl.inference_per_sample == layer1 + layer2 + head
    assert fl.train_per_sample > 2 * fl.inference_per_sample


def test_cnn_flops_match_hand_count():
    spec = get_model_spec("cnn")
    fl = measure_flops(
        ("cnn-test",), lambda: spec.build((1, 28, 28), 10), (1, 28, 28), spec.loss_fn(), 10
    )
    conv1 = 2 * 28 * 28 * 32 * 1 * 25
    conv2 = 2 * 14 * 14 * 64 * 32 * 25
    fc = 2 * (7 * 7 * 64 * 512 + 512 * 10)
    assert fl.inference_per_sample == pytest.approx(conv1 + conv2 + fc)


@pytest.mark.parametrize("groups", [1, 4, 16])
def test_grouped_convolution_backward_is_counted_per_group(groups):
    """A 3×3 convolution of 16 channels on 8×8 (padding 1) in g groups: forward
    2·H·W·C_out·(C_in/g)·9 per sample; training adds the weight gradient, the same
    count (the input needs no gradient): 2× forward whatever g (torch's own formula
    counts the weight gradient g× too high), and the input gradient of a layer
    behind it, once more."""
    conv = 2 * 8 * 8 * 16 * (16 // groups) * 9
    one = measure_flops(
        ("grouped-conv", groups),
        lambda: nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=groups), nn.Flatten()),
        (16, 8, 8),
        lambda out, y: out.sum(),
        2,
    )
    assert one.inference_per_sample == conv
    assert one.train_per_sample == 2 * conv
    two = measure_flops(
        ("grouped-conv-2", groups),
        lambda: nn.Sequential(
            nn.Conv2d(16, 16, 1),
            nn.Conv2d(16, 16, 3, padding=1, groups=groups),
            nn.Flatten(),
        ),
        (16, 8, 8),
        lambda out, y: out.sum(),
        2,
    )
    first = 2 * 8 * 8 * 16 * 16
    assert two.train_per_sample == 2 * first + 3 * conv
