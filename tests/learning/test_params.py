import pytest
import torch

from netfl.learning import weighted_average


def test_weighted_average_hand_computed():
    a = {"w": torch.tensor([1.0, 2.0]), "b": torch.tensor(0.0), "n": torch.tensor(2)}
    b = {"w": torch.tensor([3.0, 6.0]), "b": torch.tensor(4.0), "n": torch.tensor(4)}
    out = weighted_average([a, b], [1, 3])  # weights 1/4 and 3/4
    torch.testing.assert_close(out["w"], torch.tensor([2.5, 5.0]))
    torch.testing.assert_close(out["b"], torch.tensor(3.0))
    assert out["n"].dtype == torch.int64 and int(out["n"]) == 4  # round(3.5) → 4 (half to even)


def test_equal_weights_is_mean_and_inputs_untouched():
    states = [{"w": torch.full((3,), float(i))} for i in range(4)]
    out = weighted_average(states, [5, 5, 5, 5])
    torch.testing.assert_close(out["w"], torch.full((3,), 1.5))
    assert float(states[0]["w"][0]) == 0.0


def test_rejects_bad_weights():
    with pytest.raises(ValueError):
        weighted_average([{"w": torch.zeros(1)}], [0])
    with pytest.raises(ValueError):
        weighted_average([{"w": torch.zeros(1)}], [1, 2])


def test_ordered_average_is_bit_identical_to_weighted_average_in_any_arrival_order():
    import random

    from netfl.learning.params import OrderedAverage

    gen = torch.Generator().manual_seed(0)
    states = [{"w": torch.randn(7, generator=gen), "n": torch.tensor(3 * i + 1)} for i in range(8)]
    weights = [3, 1, 4, 1, 5, 9, 2, 6]
    want = weighted_average(states, weights)
    for seed in range(5):
        order = list(range(8))
        random.Random(seed).shuffle(order)
        agg = OrderedAverage(weights)
        for i in order:
            agg.add(i, states[i])
        got = agg.result()
        assert torch.equal(got["w"], want["w"]) and torch.equal(got["n"], want["n"])
    # a dropped state: the average of the others (rescaled, equal to float precision)
    agg = OrderedAverage(weights)
    for i in [0, 1, 2]:
        agg.add(i, states[i])
    agg.drop(3)
    for i in range(4, 8):
        agg.add(i, states[i])
    keep = [i for i in range(8) if i != 3]
    ref = weighted_average([states[i] for i in keep], [weights[i] for i in keep])
    assert torch.allclose(agg.result()["w"], ref["w"], rtol=1e-6)
