"""Update codecs (issue 52): sizes by hand, decode error bounds, QSGD's unbiasedness,
error feedback's conservation, bits on air as recorded, the majority vote, a plugin, a
resume with error-feedback memory, and scenarios refused in one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from scipy import stats

from netfl.cli.app import main
from netfl.codecs import CODECS, build_codec, encode_state, nominal_bits
from netfl.codecs.update_codec import elias_omega_bits
from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run
from tests.conftest import tiny_scenario
from tests.test_plugins import clean_registry  # noqa: F401  (the fixture: autouse there)

X = torch.tensor([0.5, -2.0, 0.0, 1.0, -0.25, 3.0, 0.125, -1.5, 0.75, 2.5])


def _enc(name, **options):
    return build_codec(name, options)


def test_elias_omega_lengths_by_hand():
    # 1 → "0"; 2 → "10 0"; 3 → "11 0"; 4 → "10 100 0"; 16 → "10 100 10000 0"
    assert elias_omega_bits(np.array([1, 2, 3, 4, 7, 8, 16])).tolist() == [1, 3, 3, 6, 6, 7, 11]


@pytest.mark.parametrize(
    ("name", "options", "bits"),
    [
        ("fp16", {}, 16 * 10),
        ("bf16", {}, 16 * 10),
        ("uniform", {"bits": 4}, 4 * 10 + 64),  # b bits each, min and max
        ("uniform", {"bits": 4, "block": 4}, 4 * 10 + 64 * 3),  # ⌈10/4⌉ scales
        ("qsgd", {"levels": 3}, 32 + 10 * (1 + 2)),  # norm; sign + ⌈log2 4⌉ per value
        ("qsgd", {"levels": 7, "bucket": 4}, 3 * 32 + 10 * (1 + 3)),
        ("topk", {"fraction": 0.2}, 2 * 32 + min(2 * 4, 10)),  # k values, ⌈log2 10⌉ each
        ("topk", {"fraction": 0.5}, 5 * 32 + 10),  # a 10-bit map beats 5·4 bits
        ("randk", {"fraction": 0.3}, 3 * 32 + 64),  # k values, one 64-bit seed
        ("sign", {}, 10 + 32),  # a bit each and the mean magnitude
    ],
)
def test_each_codecs_size_by_hand(name, options, bits):
    codec = _enc(name, **options)
    _, got = codec.encode(X.clone(), np.random.default_rng(0))
    got += codec.update_header_bits
    assert got == bits
    assert nominal_bits(codec, [(10, True, 32)]) == bits
    assert encode_state(codec, {"w": X}, np.random.default_rng(0)).bits == bits


def test_qsgd_with_elias_counts_what_the_encoding_produced():
    """Levels (0, 2, 0, 0, 1) after the draw: positions 1 and 4 are sent, gaps 2 and 3,
    levels 2 and 1: 32 + ω(2) + 1 + ω(2) + ω(3) + 1 + ω(1) = 32 + 3+1+3 + 3+1+1."""
    codec = _enc("qsgd", levels=2, bucket=None, elias=True)
    x = torch.tensor([0.0, 0.8, 0.0, 0.0, 0.6])  # ‖x‖ = 1: r = (0, 1.6, 0, 0, 1.2)
    for seed in range(20):
        out, bits = codec.encode(x, np.random.default_rng(seed))
        levels = (out.abs() * 2).round().to(torch.int64).numpy()
        nz = np.flatnonzero(levels)
        gaps = np.diff(nz, prepend=-1)
        want = 32 + elias_omega_bits(gaps).sum() + len(nz) + elias_omega_bits(levels[nz]).sum()
        assert bits == want
    assert codec.nominal_bits(5) is None and codec.value_dependent


def test_decode_error_bounds():
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.normal(size=1000).astype(np.float32))
    half, _ = _enc("fp16").encode(x, rng)
    assert torch.all((half - x).abs() <= x.abs() * 2**-11)
    bf, _ = _enc("bf16").encode(x, rng)
    assert torch.all((bf - x).abs() <= x.abs() * 2**-8)
    for block in (None, 64):
        u = _enc("uniform", bits=6, block=block)
        out, _ = u.encode(x, rng)
        size = block or 1000
        for a in range(0, 1000, size):
            seg = x[a : a + size]
            step = (seg.max() - seg.min()) / 63
            assert torch.all((out[a : a + size] - seg).abs() <= step / 2 + 1e-6)
    q = _enc("qsgd", levels=8, bucket=100)
    out, _ = q.encode(x, rng)
    norms = torch.linalg.vector_norm(x.reshape(10, 100), dim=1).repeat_interleave(100)
    assert torch.all((out - x).abs() <= norms / 8 + 1e-6)  # (one level at most)
    k = _enc("topk", fraction=0.05)
    out, _ = k.encode(x, rng)
    kept = out != 0
    assert kept.sum() == 50 and x.abs()[kept].min() >= x.abs()[~kept].max()
    assert torch.equal(out[kept], x[kept])
    s, _ = _enc("sign").encode(x, rng)
    assert torch.allclose(s, x.abs().mean() * torch.sign(x))


def test_qsgd_and_stochastic_uniform_are_unbiased():
    """The mean of 4000 encodings of one vector is the vector: per coordinate a
    one-sample t-test, none below 0.001 / d (Bonferroni)."""
    x = torch.tensor([0.3, -1.2, 0.05, 2.0, -0.7, 0.0, 1.1, -0.01])
    for codec in (_enc("qsgd", levels=2, bucket=None), _enc("uniform", bits=2, stochastic=True)):
        rng = np.random.default_rng(7)
        draws = torch.stack([codec.encode(x, rng)[0] for _ in range(4000)]).numpy()
        varying = draws.std(axis=0) > 1e-4
        p = stats.ttest_1samp(draws[:, varying], x.numpy()[varying]).pvalue
        assert p.min() > 0.001 / len(x), (codec.name, p)
        assert np.allclose(draws[:, ~varying], x.numpy()[~varying], atol=1e-5)


@pytest.mark.parametrize("name", ["topk", "randk", "sign"])
def test_error_feedback_conserves_the_updates(name):
    """Σ transmitted + memory = Σ true updates, after every step (Stich et al.)."""
    codec = _enc(name, error_feedback=True) if name == "sign" else _enc(name, fraction=0.1)
    rng = np.random.default_rng(3)
    memory, sent, true = None, torch.zeros(200), torch.zeros(200)
    for _ in range(12):
        g = torch.from_numpy(rng.normal(size=200).astype(np.float32))
        enc = encode_state(codec, {"w": g}, rng, memory)
        memory = enc.memory
        sent += enc.decoded["w"]
        true += g
        torch.testing.assert_close(sent + memory["w"], true, atol=1e-4, rtol=0)


def test_integer_tensors_go_as_they_are():
    state = {"w": X, "n": torch.tensor(7, dtype=torch.int64)}
    enc = encode_state(_enc("fp16"), state, np.random.default_rng(0))
    assert enc.bits == 160 + 64 and enc.decoded["n"].item() == 7


def test_the_majority_vote_by_hand():
    from netfl.codecs.sign_sgd import MajorityVote

    base = {"w": torch.zeros(3), "n": torch.tensor(1)}
    vote = MajorityVote(base)
    vote.add(0, {"w": torch.tensor([0.1, -0.1, 0.1]), "n": torch.tensor(2)})
    vote.add(1, {"w": torch.tensor([0.3, 0.3, -0.3]), "n": torch.tensor(2)})
    vote.drop(2)
    vote.add(3, {"w": torch.tensor([-0.2, -0.2, -0.2]), "n": torch.tensor(2)})
    out = vote.result()
    a = (0.1 + 0.3 + 0.2) / 3  # (the mean magnitude)
    torch.testing.assert_close(out["w"], torch.tensor([a, -a, -a]))
    assert out["n"].item() == 2


def _learn(**algorithm):
    return tiny_scenario(
        algorithm={"name": "fedavg", **algorithm},
        learning={"mode": "learn"},
        training={"rounds": 3, "batch_size": 16},
    )


def test_the_bits_on_air_are_the_encodings(monkeypatch):
    """Every upload's record is the size its payload's encoding counted (QSGD with Elias
    coding: a different size per device), every download the model's encoding."""
    from netfl.algorithms.fedavg import FedAvg

    sizes = []
    original = FedAvg.payload

    def spy(self, r, device, result):
        got = original(self, r, device, result)
        sizes.append(((r, device.name), got.bits))
        return got

    monkeypatch.setattr(FedAvg, "payload", spy)
    result = run(
        parse_scenario(
            _learn(
                uplink_codec={"name": "qsgd", "options": {"levels": 4, "elias": True}},
                downlink_codec={"name": "uniform", "options": {"bits": 8}},
            )
        )
    )
    t = result.transfers
    up = t[t.kind == "model_up"]
    assert dict(zip(zip(up["round"], up.src, strict=True), up.size_bits, strict=True)) == dict(
        sizes
    )
    assert up.size_bits.nunique() > 1
    # logistic regression on the 8×8 digits: a 64×10 weight and 10 biases at 8 bits
    assert (t[t.kind == "model_down"].size_bits == 8 * 650 + 64 * 2).all()


def test_none_is_no_codec_and_a_codec_changes_what_is_learned():
    plain = run(parse_scenario(_learn()))
    named = run(parse_scenario(_learn(uplink_codec={"name": "none"})))
    pd.testing.assert_frame_equal(plain.transfers, named.transfers)
    assert plain.rounds["accuracy"].tolist() == named.rounds["accuracy"].tolist()
    coarse = run(parse_scenario(_learn(uplink_codec={"name": "uniform", "options": {"bits": 1}})))
    assert coarse.rounds["accuracy"].tolist() != plain.rounds["accuracy"].tolist()


def test_timing_mode_sizes_from_the_shapes():
    result = run(
        parse_scenario(
            tiny_scenario(algorithm={"name": "fedavg", "uplink_codec": {"name": "sign"}})
        )
    )
    ups = result.transfers[result.transfers.kind == "model_up"]
    assert (ups.size_bits == (640 + 32) + (10 + 32)).all()


def test_resume_with_error_feedback_memory_is_byte_identical(tmp_path):
    from netfl.output.rundir import write_run
    from netfl.sim.checkpoint import load_checkpoint

    class Killed(Exception):
        pass

    def kill_after_1(row):
        if row["round"] == 1:
            raise Killed()

    data = _learn(uplink_codec={"name": "topk", "options": {"fraction": 0.05}}, fraction=0.5)
    data["training"]["rounds"] = 4
    data["outputs"] = {"checkpoint_every": 1, "figures": False, "progress": False}
    scenario = parse_scenario(data)
    whole = write_run(run(scenario), tmp_path / "whole", figures=False)
    run_dir = tmp_path / "killed"
    run_dir.mkdir()
    with pytest.raises(Killed):
        run(scenario, on_round=kill_after_1, run_dir=run_dir)
    saved = load_checkpoint(run_dir)["algorithm"]["codec_memory"]
    assert saved and all(any(t.abs().sum() > 0 for t in m.values()) for m in saved.values())
    resumed = write_run(run(scenario, run_dir=run_dir, resume=True), tmp_path / "r", figures=False)
    for name in ("transfers", "computes"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(resumed / f"{name}.parquet"), pd.read_parquet(whole / f"{name}.parquet")
        )
    cols = ["round", "accuracy", "loss", "train_loss", "uplink_bits"]
    pd.testing.assert_frame_equal(
        pd.read_csv(resumed / "rounds.csv")[cols], pd.read_csv(whole / "rounds.csv")[cols]
    )


HALVES = """
import netfl
import torch


@netfl.register_codec
class Halves(netfl.UpdateCodec):
    name = "halves"
    description = "every other value, at 32 bits"

    def encode(self, x, rng):
        out = torch.zeros_like(x)
        out[::2] = x[::2]
        return out, 32.0 * len(x[::2])

    def nominal_bits(self, numel):
        return 32.0 * ((numel + 1) // 2)
"""


def test_a_codec_plugin_from_a_file(tmp_path):
    (tmp_path / "lab.py").write_text(HALVES)
    data = tiny_scenario(
        plugins=[str(tmp_path / "lab.py")],
        algorithm={"name": "fedavg", "uplink_codec": {"name": "halves"}},
    )
    result = run(parse_scenario(data))
    ups = result.transfers[result.transfers.kind == "model_up"]
    assert (ups.size_bits == 32 * (320 + 5)).all()
    assert "halves" in CODECS


@pytest.mark.parametrize(
    ("algorithm", "extra", "key", "words"),
    [
        ({"downlink_codec": {"name": "topk"}}, {}, "downlink_codec", "compresses an update"),
        ({"uplink_codec": {"name": "nope"}}, {}, "uplink_codec.name", "qsgd"),
        (
            {"uplink_codec": {"name": "qsgd", "options": {"levels": 0}}},
            {},
            "uplink_codec",
            "levels",
        ),
        (
            {"uplink_codec": {"name": "qsgd", "options": {"elias": True}}},
            {},
            "algorithm.uplink_codec.name",
            "needs learning.mode: learn",
        ),
        (
            {"name": "feddif", "uplink_codec": {"name": "fp16"}},
            {"cell": {"link": {"mode": "ofdma", "channel_profile": "feddif"}}},
            "algorithm.uplink_codec.name",
            "does not apply",
        ),
    ],
)
def test_bad_codec_sections_are_one_line(tmp_path, capsys, algorithm, extra, key, words):
    path = tmp_path / "s.yaml"
    path.write_text(
        yaml.safe_dump(tiny_scenario(algorithm={"name": "fedavg", **algorithm}, **extra))
    )
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0] and words in err[0], err


def test_fedasync_and_fedbuff_encode_both_directions():
    """Timing mode: every upload fp16's size, every download 8-bit uniform's."""
    for name in ("fedasync", "fedbuff"):
        result = run(
            parse_scenario(
                tiny_scenario(
                    algorithm={
                        "name": name,
                        "uplink_codec": {"name": "fp16"},
                        "downlink_codec": {"name": "uniform", "options": {"bits": 8}},
                    },
                    training={"rounds": 4},
                )
            )
        )
        t = result.transfers
        assert (t[t.kind == "model_up"].size_bits == 16 * 650).all()
        assert (t[t.kind == "model_down"].size_bits == 8 * 650 + 64 * 2).all()


@pytest.mark.parametrize("name", ["fedasync", "fedbuff"])
def test_an_async_run_with_error_feedback_resumes_as_it_ran(name, tmp_path):
    """Killed after an update and resumed: the devices in flight train from the decoded
    versions and the memories come back from the checkpoint; every row is the
    uninterrupted one."""
    from tests.algorithms.test_async import _learning
    from tests.test_checkpoint import _interrupted_and_resumed

    options = {"name": name, "uplink_codec": {"name": "topk", "options": {"fraction": 0.2}}}
    options |= {"downlink_codec": {"name": "fp16"}}
    if name == "fedbuff":
        options["buffer_size"] = 2
    sc = _learning(
        options, rounds=5, outputs={"figures": False, "progress": False, "checkpoint_every": 1}
    )
    whole = run(sc)
    resumed, _ = _interrupted_and_resumed(sc, tmp_path, 2)
    cols = ["round", "sim_time_s", "accuracy", "loss", "train_loss", "uplink_bits"]
    pd.testing.assert_frame_equal(resumed.rounds[cols], whole.rounds[cols])
    plain = run(_learning({k: v for k, v in options.items() if "codec" not in k}, rounds=5))
    assert plain.rounds["accuracy"].tolist() != whole.rounds["accuracy"].tolist()


def test_dfl_encodes_the_model_and_fd_the_soft_targets():
    """Timing mode, 10 classes: DFL's transfers are the model's encoding plus 10²
    soft-target values at 32 bits; FD's are the soft targets' encoding alone."""
    codecs = {
        "uplink_codec": {"name": "fp16"},
        "downlink_codec": {"name": "uniform", "options": {"bits": 8}},
    }
    soft = 100 * 32
    t = run(parse_scenario(tiny_scenario(algorithm={"name": "dfl", **codecs}))).transfers
    assert (t[t.kind == "model_up"].size_bits == 16 * 650 + soft).all()
    assert (t[t.kind == "model_down"].size_bits == 8 * 650 + 64 * 2 + soft).all()
    t = run(parse_scenario(tiny_scenario(algorithm={"name": "fd", **codecs}))).transfers
    assert (t[t.kind == "soft_targets_up"].size_bits == 16 * 100).all()
    assert (t[t.kind == "soft_targets_down"].size_bits == 8 * 100 + 64).all()


@pytest.mark.parametrize(
    ("name", "codec"),
    [("dfl", {"name": "sign"}), ("fd", {"name": "uniform", "options": {"bits": 4}})],
)
def test_dfl_and_fd_learn_from_what_is_decoded(name, codec):
    plain = run(parse_scenario(_learn(name=name)))
    coded = run(parse_scenario(_learn(name=name, uplink_codec=codec)))
    assert np.isfinite(coded.rounds["accuracy"]).all()
    assert coded.rounds["accuracy"].tolist() != plain.rounds["accuracy"].tolist()


def test_buffers_go_as_they_are_and_a_diverged_update_spares_the_memory():
    """A model's BatchNorm statistics are sent as fp32 and decoded exactly (a sign or a
    QSGD step could make a variance negative); a non-finite update is passed on as it
    is (the server drops it) and leaves the device's memory untouched."""
    from netfl.algorithms.update_coding import UpdateCoding
    from netfl.scenario.codec_section import CodecSection
    from netfl.sim.world import World

    scenario = parse_scenario(
        tiny_scenario(
            data={
                "dataset": "synthetic",
                "synthetic": {"shape": [3, 32, 32], "num_samples": 40, "num_classes": 4},
                "partition": {"scheme": "iid"},
            },
            model={"name": "vgg11"},  # (BatchNorm with running statistics)
        )
    )
    world = World(scenario)
    up = CodecSection(name="sign", options={"error_feedback": True})
    coding = UpdateCoding(world, up, None, lambda d: world.model.size_bits)
    raw = coding.raw_keys()
    assert raw and all(k.endswith(("running_mean", "running_var")) for k in raw)
    base = world.init_model_state()
    trained = {k: v + 0.5 if v.is_floating_point() else v for k, v in base.items()}
    var = next(k for k in raw if k.endswith("running_var"))
    trained[var] = torch.full_like(base[var], 0.05)
    device = world.devices[0]
    bits, state = coding.upload((0, 0), device, trained, base, base)
    torch.testing.assert_close(state[var], trained[var])
    assert (state[var] > 0).all()
    assert not (set(coding.memory[device.name]) & raw)
    memory = {k: v.clone() for k, v in coding.memory[device.name].items()}
    bad = dict(trained)
    w = next(k for k in trained if k not in raw and trained[k].is_floating_point())
    bad[w] = torch.full_like(trained[w], float("nan"))
    _, passed = coding.upload((1, 0), device, bad, base, base)
    assert passed is bad
    for k, v in memory.items():
        assert torch.equal(coding.memory[device.name][k], v)
    world.close()


def test_topk_by_k_and_all_values_need_no_positions():
    codec = _enc("topk", k=3)
    out, bits = codec.encode(X.clone(), np.random.default_rng(0))
    assert (out != 0).sum() == 3 and bits == 3 * 32 + min(3 * 4, 10)  # (a 10-bit map)
    assert _enc("topk", fraction=1.0).nominal_bits(10) == 320
    assert _enc("topk", k=50).nominal_bits(10) == 320


def test_a_plugin_codec_whose_size_is_not_its_nominal_one_is_named(tmp_path, capsys):
    (tmp_path / "lab.py").write_text(
        HALVES.replace("return 32.0 * ((numel + 1) // 2)", "return 1.0")
    )
    data = tiny_scenario(
        plugins=[str(tmp_path / "lab.py")],
        algorithm={"name": "fedavg", "uplink_codec": {"name": "halves"}},
        learning={"mode": "learn"},
        training={"rounds": 1, "batch_size": 16},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lab.py" in err[0] and "nominal_bits" in err[0], err


def test_sign_vote_needs_an_algorithm_that_votes(tmp_path, capsys):
    for algorithm, code in (
        ({"name": "fedasync", "uplink_codec": {"name": "sign"}}, 2),
        ({"name": "fedasync", "uplink_codec": {"name": "sign", "options": {"vote": False}}}, 0),
    ):
        path = tmp_path / "s.yaml"
        path.write_text(yaml.safe_dump(tiny_scenario(algorithm=algorithm)))
        assert main(["validate", str(path)]) == code
    assert "has no majority vote" in capsys.readouterr().err


def test_a_device_that_leaves_during_a_multicast_is_dropped():
    """Multicast downloads under Markov on/off availability: a client cut before its own
    part began (it left during the broadcast) is dropped from the aggregate."""
    result = run(
        parse_scenario(
            tiny_scenario(
                devices={
                    "count": 4,
                    "availability": {"model": "markov", "mean_on_s": 0.004, "mean_off_s": 0.002},
                },
                algorithm={
                    "name": "fedavg",
                    "downlink": "multicast",
                    "uplink_codec": {"name": "fp16"},
                },
                learning={"mode": "learn"},
                training={"rounds": 4, "batch_size": 16},
            )
        )
    )
    assert result.rounds["clients_left"].sum() > 0
    assert np.isfinite(result.rounds["accuracy"]).all()


def test_fd_with_error_feedback_keeps_its_soft_targets_a_distribution():
    """FD encodes each device's change of the soft targets against what it decoded, so
    an error-feedback memory carries a change, not a whole distribution: after five
    rounds of top-k the global targets are still rows of probabilities."""
    from netfl.algorithms import ALGORITHMS
    from netfl.loading.scenarios import algorithm_config
    from netfl.sim.runner import simulate_round
    from netfl.sim.world import World

    s = parse_scenario(
        _learn(name="fd", uplink_codec={"name": "topk", "options": {"fraction": 0.3}})
    )
    world = World(s)
    alg = ALGORITHMS["fd"](world, algorithm_config(s))
    for r in range(5):
        simulate_round(world, alg, r)
    soft = alg.soft
    assert soft.min() >= -1e-6 and soft.max() <= 1 + 1e-6
    torch.testing.assert_close(soft.sum(dim=1), torch.ones(soft.shape[0]), atol=1e-4, rtol=0)
    world.close()
