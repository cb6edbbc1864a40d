"""FedZKT's learning pieces: losses (3)-(5), the generator, (9), Algorithm 3 and its FLOPs."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from netfl.compute.flops import measure_flops, measure_input_grad_flops
from netfl.learning.models import MODELS
from netfl.learning.train import TrainConfig, train_local
from netfl.learning.zkt import (
    Generator,
    PassFlops,
    ZKTServerConfig,
    disagreement,
    kl_global_to_device,
    proximal_loss,
    server_update,
    server_update_flops,
)


def _softmax_row(v):
    e = [math.exp(x) for x in v]
    return [x / sum(e) for x in e]


def test_sl_loss_matches_hand_computation():
    g = torch.tensor([[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    d1 = torch.tensor([[1.0, 1.0, 0.0], [3.0, 0.0, 0.0]])
    d2 = torch.tensor([[0.0, 2.0, 0.0], [0.0, 3.0, 0.0]])
    expected = 0.0
    for i in range(2):
        p = _softmax_row(g[i].tolist())
        rows = (_softmax_row(d1[i].tolist()), _softmax_row(d2[i].tolist()))
        ens = [(a + b) / 2 for a, b in zip(*rows, strict=True)]
        expected += sum(abs(a - b) for a, b in zip(p, ens, strict=True))
    expected /= 2
    assert disagreement(g, [d1, d2], "sl").item() == pytest.approx(expected, rel=1e-6)


def test_kl_3_as_the_paper_writes_it_and_its_reverse_by_hand_on_three_classes():
    """(3): Σ F·log(F / f_ens) — KL(F ‖ f_ens), F the global softmax; ``kl_ens`` is
    KL(f_ens ‖ F). Different numbers on an asymmetric example, both ≥ 0."""
    g = torch.tensor([[1.0, -1.0, 0.5]])
    d1, d2 = torch.tensor([[0.0, 0.0, 0.0]]), torch.tensor([[2.0, 0.0, -3.0]])
    f = _softmax_row([1.0, -1.0, 0.5])
    ens = [
        (a + b) / 2
        for a, b in zip(_softmax_row([0.0, 0.0, 0.0]), _softmax_row([2.0, 0.0, -3.0]), strict=True)
    ]
    paper = sum(p * math.log(p / e) for p, e in zip(f, ens, strict=True))
    reverse = sum(e * math.log(e / p) for p, e in zip(f, ens, strict=True))
    assert disagreement(g, [d1, d2], "kl").item() == pytest.approx(paper, rel=1e-6)
    assert disagreement(g, [d1, d2], "kl_ens").item() == pytest.approx(reverse, rel=1e-6)
    assert paper > 0 and reverse > 0 and abs(paper - reverse) > 1e-3


def test_l1_and_transfer_losses_match_hand_computation():
    g = torch.tensor([[1.0, -1.0]])
    d1, d2 = torch.tensor([[0.0, 0.0]]), torch.tensor([[2.0, 0.0]])
    # ℓ1 on logits: |1 − 1| + |−1 − 0|
    assert disagreement(g, [d1, d2], "l1").item() == pytest.approx(1.0)
    # (8): KL(F ‖ f_k) is zero for identical logits and positive otherwise
    assert kl_global_to_device(g, g).item() == pytest.approx(0.0, abs=1e-7)
    assert kl_global_to_device(g, d1).item() > 0


@pytest.mark.parametrize("kind", ["sl", "kl", "kl_ens", "l1"])
def test_disagreement_gradients_are_finite_even_for_saturated_logits(kind):
    g = torch.tensor([[80.0, -80.0, 0.0], [0.0, 0.0, 0.0]], requires_grad=True)
    devs = [torch.tensor([[-90.0, 90.0, 0.0], [1e3, 0.0, -1e3]]), torch.zeros(2, 3)]
    loss = disagreement(g, devs, kind)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(g.grad).all()
    assert g.grad.abs().sum() > 0


@pytest.mark.parametrize("shape", [(1, 28, 28), (3, 32, 32), (1, 8, 8), (2, 7, 9)])
def test_generator_output_shape_and_range(shape):
    c = shape[0]
    lo, hi = -torch.arange(1, c + 1).float(), torch.arange(1, c + 1).float() * 2
    gen = Generator(16, shape, (lo, hi), width=8)
    x = gen(torch.randn(64, 16) * 5)
    assert x.shape == (64, *shape)
    for ch in range(c):
        assert x[:, ch].min() >= lo[ch] - 1e-5 and x[:, ch].max() <= hi[ch] + 1e-5
    # the range is used, not a constant image
    assert x.std() > 0


def test_proximal_term_is_lambda_times_squared_distance_and_pulls_back():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    anchor = {k: v.detach().clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        model.weight.add_(0.5)
    term = proximal_loss(2.0, anchor)(model, None, None, None)
    assert term.item() == pytest.approx(2.0 * 0.25 * 6, rel=1e-6)
    # with a huge λ, training stays near the anchor; with λ = 0 it moves away
    x, y = torch.randn(64, 3), torch.randint(0, 2, (64,))
    cfg = TrainConfig(lr=0.05, batch_size=8, epochs=3)
    ce = torch.nn.CrossEntropyLoss()
    free = train_local(model, anchor, x, y, cfg, 1, ce)
    pulled = train_local(model, anchor, x, y, cfg, 1, ce, extra_loss=proximal_loss(5.0, anchor))

    def dist(s):
        return sum(((s[k] - anchor[k]) ** 2).sum() for k in anchor).item()

    assert dist(pulled.state) < 0.2 * dist(free.state)


def _setup(shape=(1, 8, 8), names=("logreg", "fcn", "lenet")):
    torch.manual_seed(0)
    lo, hi = torch.full((shape[0],), -1.0), torch.full((shape[0],), 2.0)
    gen = Generator(8, shape, (lo, hi), width=4)
    glob = MODELS["fcn"].build(shape, 5)
    devices = [(MODELS[n].build(shape, 5), MODELS[n].build(shape, 5).state_dict()) for n in names]
    return gen, glob, devices


def _agreement(gen_state, gen, glob_state, glob, dev_model, dev_state):
    gen.load_state_dict(gen_state)
    glob.load_state_dict(glob_state)
    dev_model.load_state_dict(dev_state)
    gen.eval(), glob.eval(), dev_model.eval()
    with torch.no_grad():
        x = gen(torch.randn(512, 8, generator=torch.Generator().manual_seed(99)))
        return kl_global_to_device(glob(x), dev_model(x)).item()


def test_server_distillation_brings_device_models_closer_to_the_global_model():
    gen, glob, devices = _setup()
    # sharpen the device models so that they start far from F (random nets are near-uniform)
    devices = [(m, {k: 3.0 * v for k, v in s.items()}) for m, s in devices]
    gen_state = {k: v.clone() for k, v in gen.state_dict().items()}
    glob_state = {k: v.clone() for k, v in glob.state_dict().items()}
    cfg = ZKTServerConfig(
        iterations=40, batch_size=32, noise_dim=8, generator_width=4, model_lr=0.05
    )
    before_states = [{k: v.clone() for k, v in s.items()} for _, s in devices]
    out = server_update(glob, glob_state, gen, gen_state, devices, cfg, seed=5)
    probe = [MODELS[n].build((1, 8, 8), 5) for n in ("logreg", "fcn", "lenet")]
    for model, before, after in zip(probe, before_states, out.device_states, strict=True):
        kl_before = _agreement(out.generator_state, gen, out.global_state, glob, model, before)
        kl_after = _agreement(out.generator_state, gen, out.global_state, glob, model, after)
        assert kl_after < 0.5 * kl_before
    # the generator and the global model were trained
    assert any(not torch.equal(gen_state[k], out.generator_state[k]) for k in gen_state)
    assert any(not torch.equal(glob_state[k], out.global_state[k]) for k in glob_state)
    assert all(math.isfinite(v) for v in (out.generator_loss, out.global_loss, out.transfer_loss))


def test_server_update_is_deterministic_and_rejects_shared_modules():
    gen, glob, devices = _setup()
    states = tuple({k: v.clone() for k, v in m.state_dict().items()} for m in (gen, glob))
    cfg = ZKTServerConfig(iterations=3, batch_size=8, noise_dim=8, generator_width=4)
    a = server_update(glob, {**states[1]}, gen, states[0], devices, cfg, seed=1)
    b = server_update(glob, {**states[1]}, gen, states[0], devices, cfg, seed=1)
    assert all(torch.equal(a.global_state[k], b.global_state[k]) for k in a.global_state)
    shared = [(devices[0][0], devices[0][1]), (devices[0][0], devices[0][1])]
    with pytest.raises(ValueError, match="one module instance"):
        server_update(glob, states[1], gen, states[0], shared, cfg, seed=1)


def test_server_update_flops_equal_what_torch_counts():
    """The analytic count (from per-model measured passes) equals FlopCounterMode
    around the real Algorithm 3 run."""
    shape, names = (1, 8, 8), ("logreg", "fcn", "lenet")
    gen, glob, devices = _setup(shape, names)
    cfg = ZKTServerConfig(iterations=4, batch_size=8, noise_dim=8, generator_width=4)

    def passes(name):
        spec = MODELS[name]
        key = ("zkt-test", name, shape)
        f = measure_flops(key, lambda: spec.build(shape, 5), shape, spec.loss_fn(), 5)
        ig = measure_input_grad_flops(key, lambda: spec.build(shape, 5), shape)
        return PassFlops(f.inference_per_sample, ig, f.train_per_sample)

    def gen_build():
        return Generator(8, shape, (torch.zeros(1), torch.ones(1)), width=4)

    g = measure_flops(("zkt-test-gen",), gen_build, (8,), lambda o, _y: o.mean(), 1)
    expected = server_update_flops(
        cfg,
        PassFlops(g.inference_per_sample, math.nan, g.train_per_sample),
        passes("fcn"),
        [passes(n) for n in names],
    )
    with FlopCounterMode(display=False) as counter:
        server_update(glob, glob.state_dict(), gen, gen.state_dict(), devices, cfg, seed=0)
    assert counter.get_total_flops() == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    "name", ["lenet_wide", "lenet_deep", "shufflenet_v2_x0_5", "mobilenet_v2_x0_5"]
)
@pytest.mark.parametrize("shape", [(1, 28, 28), (3, 32, 32)])
def test_heterogeneous_model_zoo_maps_images_to_logits(name, shape):
    model = MODELS[name].build(shape, 10)
    out = model(torch.randn(2, *shape))
    assert out.shape == (2, 10)
    loss = F.cross_entropy(out, torch.tensor([1, 2]))
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def _bn_net() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 8 * 8, 5),
    )


@pytest.mark.parametrize("device_bn", ["frozen", "update"])
def test_device_batchnorm_statistics_are_left_to_real_data_unless_asked(device_bn):
    """Distilling F into a device model on generated images: with ``frozen`` its
    BatchNorm running mean/variance (learnt from the device's real data) come back
    unchanged while its weights (BN affine ones included) learn; ``update``
    re-estimates them on the generated images."""
    gen, glob, _ = _setup()
    torch.manual_seed(3)
    net = _bn_net()
    with torch.no_grad():  # statistics "from real data", not those of what G produces
        net[1].running_mean.fill_(0.3)
        net[1].running_var.fill_(2.0)
    state = {k: v.clone() for k, v in net.state_dict().items()}
    cfg = ZKTServerConfig(
        iterations=4, batch_size=16, noise_dim=8, generator_width=4, device_bn=device_bn
    )
    out = server_update(glob, glob.state_dict(), gen, gen.state_dict(), [(net, state)], cfg, seed=2)
    after = out.device_states[0]
    stats = ("1.running_mean", "1.running_var")
    unchanged = all(torch.equal(after[k], state[k]) for k in stats)
    assert unchanged == (device_bn == "frozen")
    assert not torch.equal(after["1.weight"], state["1.weight"])  # affine weights learn
    assert not torch.equal(after["0.weight"], state["0.weight"])
