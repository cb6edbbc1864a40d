"""Split-training math: EcoFed's frozen device part and replay, local-loss DPFL, SplitFed."""

from __future__ import annotations

import copy

import torch
from torch import nn

from netfl.learning import TrainConfig, load_dataset, train_local
from netfl.learning.split_model import (
    ReplayBuffer,
    dequantize_activations,
    quantize_activations,
    split_model,
)
from netfl.learning.split_train import (
    aux_head,
    device_activations,
    train_local_loss,
    train_server_part,
)

CFG = TrainConfig(lr=0.05, momentum=0.9, batch_size=16, epochs=1)
CE = nn.CrossEntropyLoss()


def _data(n=96):
    ds = load_dataset("digits", seed=0)
    return ds.train_x[:n], ds.train_y[:n], ds.input_shape


def _small(shape) -> nn.Sequential:
    """A small splittable CNN (BatchNorm with running statistics on the device side)."""
    return nn.Sequential(
        nn.Conv2d(shape[0], 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(16 * (shape[1] // 2) * (shape[2] // 2), 10),
    )


def _split(shape, seed):
    torch.manual_seed(seed)
    model = _small(shape)
    return model, split_model(model, "small", 4, shape)


def _state(m: nn.Module) -> dict:
    return {k: v.detach().clone() for k, v in m.state_dict().items()}


def test_frozen_device_part_never_changes_and_replay_equals_fresh_activations():
    """ρ = 1 and no quantisation: training the server part on the buffer's activations
    is training on freshly computed ones, step for step; the device part is untouched."""
    x, y, shape = _data()
    model, split = _split(shape, 0)
    dev0, srv0 = _state(split.device), _state(split.server)

    buf = ReplayBuffer()
    buf.put(0, device_activations(split.device, dev0, x), y)
    acts, labels = buf.get(0)
    replayed = train_server_part(copy.deepcopy(split.server), srv0, acts, labels, CFG, 7, CE)

    # reference: the whole model with its device part frozen (no grad, eval mode)
    whole = nn.Sequential(copy.deepcopy(split.device), copy.deepcopy(split.server))
    whole[0].load_state_dict(dev0)
    whole[1].load_state_dict(srv0)
    whole[0].requires_grad_(False)

    class Frozen(nn.Module):
        def __init__(self):
            super().__init__()
            self.dev, self.srv = whole[0], whole[1]

        def forward(self, xb):
            self.dev.eval()
            return self.srv(self.dev(xb))

    ref = Frozen()
    ref_state = _state(ref)
    fresh = train_local(ref, ref_state, x, y, CFG, 7, CE)
    for k, v in replayed.state.items():
        assert torch.allclose(v, fresh.state[f"srv.{k}"], atol=1e-6), k
    for k, v in dev0.items():  # frozen: identical after training
        assert torch.equal(fresh.state[f"dev.{k}"], v)
        assert torch.equal(split.device.state_dict()[k], v)


def test_quantised_replay_stays_close_to_fresh():
    x, y, shape = _data()
    _, split = _split(shape, 1)
    acts = device_activations(split.device, _state(split.device), x)
    q = quantize_activations(acts)
    back = dequantize_activations(q)
    assert (back - acts).abs().max() <= float(q.scales.max()) / 2 * (1 + 1e-5)
    a = train_server_part(copy.deepcopy(split.server), _state(split.server), acts, y, CFG, 3, CE)
    b = train_server_part(copy.deepcopy(split.server), _state(split.server), back, y, CFG, 3, CE)
    assert abs(a.mean_loss - b.mean_loss) < 0.05


def test_local_loss_dpfl_trains_both_sides_without_a_gradient_across_the_cut():
    x, y, shape = _data()
    _, split = _split(shape, 2)
    aux = aux_head(split.activation_shape, 10)
    dev0, aux0, srv0 = _state(split.device), _state(aux), _state(split.server)
    res = train_local_loss(
        copy.deepcopy(split.device),
        copy.deepcopy(aux),
        copy.deepcopy(split.server),
        dev0,
        aux0,
        srv0,
        x,
        y,
        CFG,
        5,
        CE,
    )
    assert res.num_steps == 6 and res.num_samples == 96
    assert any(not torch.equal(res.device_state[k], dev0[k]) for k in dev0)
    assert any(not torch.equal(res.aux_state[k], aux0[k]) for k in aux0)
    assert any(not torch.equal(res.server_state[k], srv0[k]) for k in srv0)
    # no gradient crosses the cut: the device side does not depend on the server's weights
    other = {
        k: v + 0.1 * torch.randn_like(v) if v.is_floating_point() else v for k, v in srv0.items()
    }
    res2 = train_local_loss(
        copy.deepcopy(split.device),
        copy.deepcopy(aux),
        copy.deepcopy(split.server),
        dev0,
        aux0,
        other,
        x,
        y,
        CFG,
        5,
        CE,
    )
    for k in dev0:
        assert torch.equal(res.device_state[k], res2.device_state[k]), k
    assert res.mean_server_loss != res2.mean_server_loss


def test_vanilla_dpfl_is_whole_model_sgd():
    """SplitFed's per-batch exchange computes the whole model's gradient: one device
    round of split training equals whole-model SGD on its data."""
    x, y, shape = _data()
    model, split = _split(shape, 3)
    state = _state(model)
    whole = train_local(copy.deepcopy(model), state, x, y, CFG, 11, CE)
    # manual SplitFed: activations forward, gradient of the cut backward, per batch
    dev, srv = copy.deepcopy(split.device), copy.deepcopy(split.server)
    opt_d = torch.optim.SGD(dev.parameters(), lr=CFG.lr, momentum=CFG.momentum)
    opt_s = torch.optim.SGD(srv.parameters(), lr=CFG.lr, momentum=CFG.momentum)
    gen = torch.Generator().manual_seed(11)
    perm = torch.randperm(len(y), generator=gen)
    dev.train(), srv.train()
    for s in range(0, len(y), CFG.batch_size):
        idx = perm[s : s + CFG.batch_size]
        opt_d.zero_grad(), opt_s.zero_grad()
        a = dev(x[idx])
        sent = a.detach().requires_grad_(True)  # what crosses the cut
        CE(srv(sent), y[idx]).backward()
        a.backward(sent.grad)  # the gradient sent back
        opt_d.step(), opt_s.step()
    for k, v in dev.state_dict().items():  # device part = the model's first 4 layers
        assert torch.allclose(v.float(), whole.state[k].float(), atol=1e-5), k
    ref = copy.deepcopy(model)
    ref.load_state_dict(whole.state)
    n_dev = len(list(dev.parameters()))
    for got, want in zip(srv.parameters(), list(ref.parameters())[n_dev:], strict=True):
        assert torch.allclose(got, want, atol=1e-5)
