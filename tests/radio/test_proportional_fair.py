import numpy as np
import pytest

from netfl.radio.proportional_fair import pf_average, pf_shares


def test_pf_shares_serve_best_ratio_first_up_to_caps():
    rate = np.array([10.0, 30.0, 20.0])
    avg = np.array([1.0, 10.0, 2.0])  # ratios 10, 3, 10: ties broken by arrival
    shares = pf_shares(8.0, rate, avg, np.array([5.0, np.inf, np.inf]), np.array([2, 0, 1]))
    # flow 2 (ratio 10, arrived first among the tie) takes all 8 RBs
    np.testing.assert_array_equal(shares, [0.0, 0.0, 8.0])
    shares = pf_shares(8.0, rate, avg, np.array([5.0, np.inf, 3.0]), np.array([0, 1, 2]))
    np.testing.assert_array_equal(shares, [5.0, 0.0, 3.0])


def test_pf_average_is_the_blockwise_ewma():
    beta, avg = 0.1, np.array([100.0])
    served = np.array([[50.0], [0.0], [200.0]])
    step = avg.copy()
    for s in served:
        step = (1 - beta) * step + beta * s
    assert pf_average(avg, served, beta, 3)[0] == pytest.approx(step[0])
    # two idle blocks before the served ones only decay the average
    step2 = (1 - beta) ** 2 * avg
    for s in served:
        step2 = (1 - beta) * step2 + beta * s
    assert pf_average(avg, served, beta, 5)[0] == pytest.approx(step2[0])
