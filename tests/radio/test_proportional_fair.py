import numpy as np
import pytest
import simpy

from netfl.radio.schedulers.proportional_fair import pf_average, pf_shares


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


class _Stepping(simpy.Environment):
    """A SimPy environment that notes the instant of every event it processes."""

    def __init__(self):
        super().__init__()
        self.stepped: list[float] = []

    def step(self) -> None:
        self.stepped.append(self.peek())
        super().step()


def test_the_schedulers_registry_is_the_schemas_choices_and_drives_the_carrier():
    """``cell.link.scheduler`` offers exactly the registry's names; a carrier holds the
    registry's object; only a per-block scheduler wakes the carrier at block boundaries."""

    from channel_models.fading import RayleighBlockFading
    from channel_models.link_budget import shannon_efficiency
    from netfl.loading.scenarios import scenario_schema
    from netfl.radio.ofdma import OfdmaCarrier
    from netfl.radio.schedulers import SCHEDULERS

    cell = scenario_schema()["$defs"]["LinkSection"]["properties"]["scheduler"]
    assert cell["enum"] == list(SCHEDULERS)
    for name, scheduler in SCHEDULERS.items():
        env = _Stepping()
        carrier = OfdmaCarrier(
            env, "ul", 10, 180e3, RayleighBlockFading(1e-3), shannon_efficiency, scheduler=name
        )
        assert type(carrier.scheduler) is scheduler
        rng = np.random.default_rng(0)
        for _ in range(2):
            carrier.send(1e6, 10.0, rng)
        env.run(until=1e-6)  # (the instant's re-allocation)
        # a per-block scheduler wakes at the blocks' ends; the others not before the
        # flows' completion, ~0.3 s on
        env.stepped.clear()
        env.run(until=5.5e-3)
        woke = [t for t in env.stepped if 1e-6 < t < 5.5e-3]
        assert woke == ([1e-3, 2e-3, 3e-3, 4e-3, 5e-3] if scheduler.per_block else []), name


@pytest.mark.parametrize("capped", [False, True])
def test_pf_with_equal_constant_rates_gives_equal_time_shares(capped):
    """Without fading and at equal SNRs, r/R̄ falls for the UE just served (its average
    is credited with what it was served, the others' decay), so PF alternates: equal
    uploads get equal time shares and end one block after another, the last when round
    robin ends them all — not one after the other as a queue. (Capped flows take the
    carrier's other allocation path; both credit the shares of the blocks gone.)"""

    from channel_models.fading import NoFading
    from channel_models.link_budget import shannon_efficiency
    from netfl.radio.ofdma import OfdmaCarrier

    block, n = 1e-3, 4

    def ends(scheduler):
        env = _Stepping()
        carrier = OfdmaCarrier(
            env, "ul", 100, 180e3, NoFading(block), shannon_efficiency, scheduler
        )
        done = {}

        def upload(i):
            f = carrier.send(
                3.2e6, 100.0, np.random.default_rng(i), cap_rbs=1000.0 if capped else np.inf
            )
            yield f.done
            done[i] = env.now

        for i in range(n):
            env.process(upload(i))
        env.run()
        return np.array([done[i] for i in range(n)])

    rr, pf = ends("round_robin"), ends("proportional_fair")
    assert np.ptp(rr) < 1e-9  # (round robin: together)
    assert pf.max() == pytest.approx(rr.max(), rel=1e-9)  # (no capacity lost)
    gaps = np.diff(np.sort(pf))
    assert np.all(gaps <= block + 1e-9) and pf.min() >= rr.max() - (n - 1) * block - 1e-9
