"""FedZKT's server-side zero-shot knowledge transfer (pure torch).

L. Zhang, D. Wu, X. Yuan, "FedZKT: Zero-Shot Knowledge Transfer towards
Resource-Constrained Federated Learning with Heterogeneous On-Device Models",
ICDCS 2022 (arXiv 2109.03775), Algorithm 3 and Sec. III-B.

- :class:`Generator`: the paper gives no architecture; this is the usual
  data-free distillation generator (DFAD / ZSKT): z ∈ R^{n_z} → linear →
  BN → reshape to 2·w × ⌈H/4⌉ × ⌈W/4⌉ → upsample → conv3×3 2w→2w, BN, LeakyReLU
  → upsample to H × W → conv3×3 2w→w, BN, LeakyReLU → conv3×3 w→C → tanh,
  mapped per channel onto the data's value range [lo_c, hi_c].
- :func:`disagreement`: the loss L between the global model F and the
  ensemble of device models, per sample summed over classes and averaged
  over the batch: SL (5) ‖softmax F(x) − mean_k softmax f_k(x)‖₁ (default),
  KL (3) as the paper writes it, Σ F·log(F / f_ens) = KL(F ‖ f_ens) with F the
  global softmax (``kl``), or the other direction KL(f_ens ‖ F) (``kl_ens``, the
  usual distillation direction), ℓ1 on logits (4) ‖F(x) − mean_k f_k(x)‖₁.
- :func:`server_update`: n_D iterations of a generator step (maximise L)
  and a global-model step (minimise L on fresh noise), then n_D iterations
  distilling F into every device model with KL(F(x) ‖ f_k(x)) (8). Adam for
  the generator, SGD for the models; learning rates × ``lr_decay`` at 1/2
  and 3/4 of the iterations. The device models' BatchNorm layers stay in
  evaluation mode while they learn from generated images (``device_bn: frozen``):
  their running statistics are those of the device's real data, which the
  device keeps using; ``device_bn: update`` re-estimates them on generated images.
- :func:`server_update_flops`: the FLOPs of exactly those steps.
- :func:`proximal_loss`: the ℓ2 pull λ‖w_k − w_k^{last}‖² of the device update (9).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import ceil

import torch
import torch.nn.functional as F
from torch import nn

from netfl.learning.tasks import DisagreementLoss, ZKTServerConfig
from netfl.learning.train import CPU, State, cpu_state

__all__ = [
    "Generator",
    "DisagreementLoss",
    "disagreement",
    "proximal_loss",
    "ZKTServerConfig",
    "ZKTServerResult",
    "server_update",
    "server_update_flops",
]


class Generator(nn.Module):
    """Noise ``(N, noise_dim)`` → images ``(N, C, H, W)`` in ``[lo_c, hi_c]`` per channel.

    Parameters
    ----------
    noise_dim : int
        n_z, the length of z ~ N(0, I).
    shape : tuple
        ``(C, H, W)`` of the data.
    value_range : tuple of tensors
        ``(lo, hi)``, each ``(C,)``: the range of the (standardised) data per channel.
    width : int
        w: channels of the last hidden block (the first has 2·w).
    """

    def __init__(
        self,
        noise_dim: int,
        shape: tuple[int, ...],
        value_range: tuple[torch.Tensor, torch.Tensor],
        width: int = 64,
    ):
        super().__init__()
        c, h, w = shape
        self.shape = (c, h, w)
        self.init_hw = (ceil(h / 4), ceil(w / 4))
        self.project = nn.Linear(noise_dim, 2 * width * self.init_hw[0] * self.init_hw[1])
        self.bn0 = nn.BatchNorm2d(2 * width)
        self.block1 = nn.Sequential(
            nn.Conv2d(2 * width, 2 * width, 3, padding=1),
            nn.BatchNorm2d(2 * width),
            nn.LeakyReLU(0.2),
        )
        self.block2 = nn.Sequential(
            nn.Conv2d(2 * width, width, 3, padding=1),
            nn.BatchNorm2d(width),
            nn.LeakyReLU(0.2),
            nn.Conv2d(width, c, 3, padding=1),
            nn.Tanh(),
        )
        lo, hi = (torch.as_tensor(v, dtype=torch.float32).reshape(1, c, 1, 1) for v in value_range)
        self.register_buffer("lo", lo)
        self.register_buffer("hi", hi)
        self.noise_dim = noise_dim

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        x = self.project(z).reshape(len(z), -1, *self.init_hw)
        x = self.bn0(x)
        x = F.interpolate(x, scale_factor=2)
        x = self.block1(x)
        x = F.interpolate(x, size=self.shape[1:])
        t = self.block2(x)
        return self.lo + (self.hi - self.lo) * (t + 1.0) / 2.0


def disagreement(
    global_logits: torch.Tensor, device_logits: list[torch.Tensor], kind: DisagreementLoss = "sl"
) -> torch.Tensor:
    """L(F(x), f_ens(x)) of FedZKT, per sample summed over classes, mean over the batch.

    ``sl`` (5): ‖softmax F − f_ens‖₁ with f_ens the mean device softmax;
    ``kl`` (3) as written in the paper: Σ F·log(F / f_ens) = KL(softmax F ‖ f_ens);
    ``kl_ens``: the other direction, KL(f_ens ‖ softmax F);
    ``l1`` (4): ‖F − mean_k f_k‖₁ on logits.
    """
    if kind == "l1":
        ens_logits = torch.stack(device_logits).mean(dim=0)
        return (global_logits - ens_logits).abs().sum(dim=1).mean()
    ens = torch.stack([F.softmax(lg, dim=1) for lg in device_logits]).mean(dim=0)
    if kind == "sl":
        return (F.softmax(global_logits, dim=1) - ens).abs().sum(dim=1).mean()
    log_f = F.log_softmax(global_logits, dim=1)
    log_ens = ens.clamp_min(1e-12).log()
    if kind == "kl":
        return (log_f.exp() * (log_f - log_ens)).sum(dim=1).mean()
    if kind == "kl_ens":
        return (ens * (log_ens - log_f)).sum(dim=1).mean()
    raise ValueError(f"unknown disagreement loss {kind!r} (valid: sl, kl, kl_ens, l1)")


def kl_global_to_device(global_logits: torch.Tensor, device_logits: torch.Tensor) -> torch.Tensor:
    """(8): KL(softmax F(x) ‖ softmax f_k(x)), mean over the batch (F is the target)."""
    log_p = F.log_softmax(global_logits, dim=1)
    log_q = F.log_softmax(device_logits, dim=1)
    return (log_p.exp() * (log_p - log_q)).sum(dim=1).mean()


def proximal_loss(
    weight: float, anchor: State
) -> Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
    """The ℓ2 term of (9), ``weight · Σ ‖w − w^{last}‖²`` over the trainable parameters,
    as an ``extra_loss`` of :func:`netfl.learning.train.train_local` (whose CE is a batch
    mean: pass ``λ/|D_k|`` for the balance of (9), see :class:`FedZKTConfig`)."""
    cache: dict[torch.device, dict[str, torch.Tensor]] = {}

    def extra(model: nn.Module, _xb, _yb, _logits) -> torch.Tensor:
        dev = next(model.parameters()).device
        if dev not in cache:
            cache[dev] = {k: v.detach().to(dev) for k, v in anchor.items()}
        ref = cache[dev]
        total = sum(((p - ref[n]) ** 2).sum() for n, p in model.named_parameters())
        return weight * total  # type: ignore[return-value]

    return extra


@dataclass
class ZKTServerResult:
    """Updated global model, generator and device models (CPU states), and mean losses."""

    global_state: State
    generator_state: State
    device_states: list[State]
    generator_loss: float
    global_loss: float
    transfer_loss: float


def _freeze_batchnorm(model: nn.Module) -> None:
    """Put ``model``'s BatchNorm layers in evaluation mode: they normalise with their
    running statistics (the device's real data) and do not update them; their affine
    weights still learn."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.eval()


def _milestones(n: int) -> list[int]:
    return [n // 2, (3 * n) // 4]


def server_update(
    global_model: nn.Module,
    global_state: State,
    generator: Generator,
    generator_state: State,
    device_models: list[tuple[nn.Module, State]],
    config: ZKTServerConfig,
    seed: int,
    device: torch.device = CPU,
) -> ZKTServerResult:
    """Algorithm 3: adversarial zero-shot distillation of the device ensemble into F, then
    of F into every device model.

    ``device_models`` pairs a distinct module (autograd keeps references to each
    teacher's weights through the generator step) with the state to load into it.
    Noise is drawn from ``torch.Generator().manual_seed(seed)``.
    """
    if len({id(m) for m, _ in device_models}) != len(device_models):
        raise ValueError("server_update needs one module instance per device model")
    gen = torch.Generator(device=device).manual_seed(seed)
    b, n = config.batch_size, config.iterations

    def noise() -> torch.Tensor:
        return torch.randn(b, config.noise_dim, generator=gen, device=device)

    generator.load_state_dict(generator_state)
    generator.to(device).train()
    global_model.load_state_dict(global_state)
    global_model.to(device).train()
    devices = []
    for model, state in device_models:
        model.load_state_dict(state)
        devices.append(model.to(device))

    def ensemble(x: torch.Tensor) -> list[torch.Tensor]:
        return [m(x) for m in devices]

    opt_g = torch.optim.Adam(generator.parameters(), lr=config.generator_lr)
    opt_f = torch.optim.SGD(
        global_model.parameters(), lr=config.model_lr, momentum=config.model_momentum
    )
    opts = [opt_g, opt_f]
    for m in devices:
        m.eval()  # teachers: batch statistics learnt from real data stay as they are
        m.requires_grad_(False)
    g_loss = f_loss = torch.zeros((), device=device)
    scheds = [
        torch.optim.lr_scheduler.MultiStepLR(o, _milestones(n), config.lr_decay) for o in opts
    ]
    for _ in range(n):
        # generator step: maximise the disagreement (F frozen for this step)
        global_model.requires_grad_(False)
        x = generator(noise())
        loss_g = -disagreement(global_model(x), ensemble(x), config.loss)
        opt_g.zero_grad(set_to_none=True)
        loss_g.backward()
        opt_g.step()
        global_model.requires_grad_(True)
        # global-model step on fresh noise: minimise it
        with torch.no_grad():
            x = generator(noise())
            targets = ensemble(x)
        loss_f = disagreement(global_model(x), targets, config.loss)
        opt_f.zero_grad(set_to_none=True)
        loss_f.backward()
        opt_f.step()
        for s in scheds:
            s.step()
        g_loss, f_loss = g_loss - loss_g.detach(), f_loss + loss_f.detach()

    # distil F into every device model (8)
    global_model.eval()
    opts = []
    for m in devices:
        m.requires_grad_(True)
        m.train()
        if config.device_bn == "frozen":
            _freeze_batchnorm(m)
        opts.append(
            torch.optim.SGD(m.parameters(), lr=config.model_lr, momentum=config.model_momentum)
        )
    scheds = [
        torch.optim.lr_scheduler.MultiStepLR(o, _milestones(n), config.lr_decay) for o in opts
    ]
    t_loss = torch.zeros((), device=device)
    for _ in range(n):
        with torch.no_grad():
            x = generator(noise())
            target = global_model(x)
        for model, opt, sched in zip(devices, opts, scheds, strict=True):
            loss = kl_global_to_device(target, model(x))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            t_loss += loss.detach()
    return ZKTServerResult(
        global_state=cpu_state(global_model),
        generator_state=cpu_state(generator),
        device_states=[cpu_state(m) for m in devices],
        generator_loss=float(g_loss) / max(n, 1),
        global_loss=float(f_loss) / max(n, 1),
        transfer_loss=float(t_loss) / max(n * len(devices), 1),
    )


@dataclass(frozen=True)
class PassFlops:
    """Per-sample FLOPs of one network: forward, forward + backward to the input only,
    and forward + backward for training (parameter and input gradients as measured)."""

    inference: float
    input_grad: float
    train: float


def server_update_flops(
    config: ZKTServerConfig, generator: PassFlops, global_model: PassFlops, devices: list[PassFlops]
) -> float:
    """FLOPs of :func:`server_update` (matrix products and convolutions, as
    ``torch.utils.flop_counter`` counts them), per iteration with batch B:

    - generator step: B·(G.train + F.input_grad + Σ_k f_k.input_grad)
    - global step:    B·(G.inference + Σ_k f_k.inference + F.train)
    - transfer step:  B·(G.inference + F.inference + Σ_k f_k.train)
    """
    ens_inf = sum(d.inference for d in devices)
    ens_in = sum(d.input_grad for d in devices)
    ens_train = sum(d.train for d in devices)
    per_iter = (
        generator.train
        + global_model.input_grad
        + ens_in
        + generator.inference
        + ens_inf
        + global_model.train
        + generator.inference
        + global_model.inference
        + ens_train
    )
    return float(config.iterations * config.batch_size * per_iter)
