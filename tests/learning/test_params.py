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
