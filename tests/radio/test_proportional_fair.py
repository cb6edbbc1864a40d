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


def test_the_schedulers_registry_is_the_schemas_choices_and_drives_the_carrier():
    """``cell.link.scheduler`` offers exactly the registry's names; a carrier holds the
    registry's object; only a per-block scheduler wakes the carrier at block boundaries."""
    import simpy

    from channel_models.fading import RayleighBlockFading
    from channel_models.link_budget import shannon_efficiency
    from netfl.radio.ofdma import OfdmaCarrier
    from netfl.radio.schedulers import SCHEDULERS
    from netfl.scenario.files import scenario_schema

    cell = scenario_schema()["$defs"]["LinkSection"]["properties"]["scheduler"]
    assert cell["enum"] == list(SCHEDULERS)
    for name, scheduler in SCHEDULERS.items():
        env = simpy.Environment()
        carrier = OfdmaCarrier(
            env, "ul", 10, 180e3, RayleighBlockFading(1e-3), shannon_efficiency, scheduler=name
        )
        assert carrier.scheduler is scheduler
        rng = np.random.default_rng(0)
        for _ in range(2):
            carrier.send(1e6, 10.0, rng)
        env.run(until=1e-9)  # (the instant's re-allocation)
        wakes = carrier._next_change_s() < np.inf
        assert wakes == scheduler.per_block, name
