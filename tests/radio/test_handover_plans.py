"""A moving device's measurements ahead of the clock (issue 34, item 4): evaluated in
aligned segments, so their values do not depend on which instants are asked for first
or how the path is cut into calls; plans that grow geometrically; the A3 rule run ahead
once, answering every later question as a fresh run would."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from channel_models.mobility import a3_handovers
from netfl import World
from netfl.loading.scenarios import parse_scenario
from netfl.radio.handover import FIRST_PLAN_SAMPLES, PLAN_SAMPLES, SEGMENT
from tests.conftest import tiny_scenario


def _world(seed: int = 11) -> World:
    return World(
        parse_scenario(
            tiny_scenario(
                seed=seed,
                cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
                network={"sites": 7, "sectors": 3, "isd_m": 200, "indoor_fraction": 0.3},
                devices={
                    "count": 3,
                    "mobility": {"model": "random_waypoint", "v_min_kmh": 3, "v_max_kmh": 60},
                },
            )
        )
    )


@pytest.mark.parametrize(
    "asks",
    [
        [(0, 20), (150, 160), (5, 300)],  # (a jump ahead, then back)
        [(0, 3), (4, 40), (41, 41), (42, 300)],  # (contiguous, ragged)
        [(100, 110), (0, 300)],  # (the middle first)
        [(7, 7), (250, 260), (3, 120), (121, 300)],
    ],
)
def test_path_measurements_do_not_depend_on_the_order_they_are_asked_in(asks):
    """Every UE's coupling losses at instants 0-300, asked for in one go in one world and
    piece by piece, out of order, in another: equal to the last bit (rays drawn once per
    site and state, correlated with the shadowing where the path starts; fields and
    gain anchors per aligned segment)."""
    whole, pieces = _world(), _world()
    for ue, other in zip(whole.all_devices, pieces.all_devices, strict=True):
        want = whole.radio.handover.measured(ue, 0, 300).copy()
        for lo, hi in asks:
            got = pieces.radio.handover.measured(other, lo, hi)
            np.testing.assert_array_equal(got, want[lo : hi + 1])
        np.testing.assert_array_equal(pieces.radio.handover.measured(other, 0, 300), want)


def test_a_plan_grows_geometrically_in_whole_segments():
    """One instant asked for evaluates the first plan (FIRST_PLAN_SAMPLES instants);
    each extension evaluates twice as many, up to PLAN_SAMPLES, always whole segments
    from a multiple of SEGMENT."""
    world = _world()
    handover, geometry = world.radio.handover, world.radio.geometry
    ue = world.all_devices[0]
    sizes = []
    along = geometry.coupling_along

    def counting(u, xy, segment=None, k0=None, positions=None):
        sizes.append(len(xy))
        assert segment == SEGMENT and k0 % SEGMENT == 0
        return along(u, xy, segment, k0, positions)

    geometry.coupling_along = counting
    k = 1000  # (well past what the drop evaluated: a plan afresh, from a segment start)
    handover.measured(ue, k, k)
    end = k - k % SEGMENT
    for _ in range(5):
        end += sizes[-1]
        handover.measured(ue, end, end)  # (one past the plan: the next extension)
    want = [FIRST_PLAN_SAMPLES]
    while len(want) < 6:
        want.append(min(2 * want[-1], PLAN_SAMPLES))
    assert sizes == want
    assert all(s % SEGMENT == 0 for s in sizes)


def test_the_a3_rule_run_ahead_answers_as_a_fresh_run():
    """The clock brought along in steps, each UE's next handover asked for over windows
    that overlap what was asked before: every answer equals the rule run afresh over the
    window from a reference A3 state kept by the test (the rule on the same
    measurements from the start), and the clock applies every handover predicted before
    it gets there."""
    world = _world(seed=4)
    radio, handover = world.radio, world.radio.handover
    s = handover.settings
    step = s["sample_s"]

    def rule(k0, k1, serving, state):
        return a3_handovers(
            np.arange(k0, k1 + 1) * step,
            -handover.measured(ue, k0, k1),
            serving,
            s["hysteresis_db"],
            s["ttt_s"],
            state,
            s["filter_k"],
        )

    predicted, checked = set(), 0
    for ue in world.all_devices:
        t, ref_state, ref_serving, ref_k = 0.0, {}, radio.serving[ue.name], 1
        for window in (16, 64, 40, 128, 200, 90, 128, 300, 64, 128):
            k_from = int(round(t / step)) + 1
            k_to = k_from + window
            for _, _, dst in rule(ref_k, k_from - 1, ref_serving, ref_state):
                ref_serving = dst  # (the reference brought to k_from - 1)
            ref_k = k_from
            fresh = rule(k_from, k_to, ref_serving, copy.deepcopy(ref_state))
            got = handover.predict(ue, k_from, k_to)
            assert got == (fresh[0][0] if fresh else None)
            checked += 1
            t_next = (k_from - 1 + int(0.6 * window)) * step
            if got is not None and got <= t_next:
                predicted.add((round(got, 9), ue.name))
            radio.track(ue, t, t_next)
            t = t_next
    applied = {(round(when, 9), name) for when, name, *_ in handover.handovers}
    assert predicted and predicted <= applied
    assert checked == 30


def test_a_new_drop_forgets_what_the_rule_ran_ahead():
    """Serving cells set from outside the A3 rule (a drop's association, the handover
    control's :meth:`associate`) void what the rule ran ahead: the next answer is the
    fresh run's from the new serving cell — also after the network's attach puts the
    device back. The association is read only outside the handover control."""
    world = _world(seed=4)
    radio, handover = world.radio, world.radio.handover
    ue = world.all_devices[0]
    s = handover.settings

    def fresh(cell: int) -> float | None:
        events = a3_handovers(
            np.arange(1, 301) * s["sample_s"],
            -handover.measured(ue, 1, 300),
            cell,
            s["hysteresis_db"],
            s["ttt_s"],
            {},
            s["filter_k"],
        )
        return events[0][0] if events else None

    home = radio.serving[ue.name]
    first = handover.predict(ue, 1, 300)
    assert first == fresh(home)
    other = (home + 1) % len(radio.cells)
    handover.associate({**radio.serving, ue.name: other})
    assert radio.serving[ue.name] == other
    assert fresh(other) is not None  # (a UE put on another cell hands over)
    assert fresh(other) != first
    assert handover.predict(ue, 1, 300) == fresh(other)
    radio.attach(world.all_devices)  # (back on its best cell: forgotten again)
    assert radio.serving[ue.name] == home
    assert handover.predict(ue, 1, 300) == first
    with pytest.raises(TypeError):  # (read only: only the handover control sets it)
        radio.serving[ue.name] = other  # type: ignore[index]


def test_a_first_plan_anywhere_starts_on_the_segment_grid():
    """Paths followed anew (their plans forgotten), a UE first asked about instants 1-100
    gets the values of a UE first asked about 0-200: the plan starts at a segment."""
    fresh, whole = _world(), _world()
    fresh.radio.handover.follow(fresh.radio.handover.paths)
    for ue, other in zip(fresh.all_devices, whole.all_devices, strict=True):
        got = fresh.radio.handover.measured(ue, 1, 100)
        np.testing.assert_array_equal(got, whole.radio.handover.measured(other, 0, 200)[1:101])


def test_a_prediction_asked_again_from_earlier_is_the_fresh_one():
    """Asked for the next handover from instant 1, then from past it, then from 1 again
    (the A3 state untouched in between): the third answer is the first."""
    world = _world(seed=4)
    handover = world.radio.handover
    for ue in world.all_devices:
        first = handover.predict(ue, 1, 300)
        if first is None:
            continue
        k = int(round(first / handover.settings["sample_s"]))
        handover.predict(ue, k + 1, 300)
        assert handover.predict(ue, 1, 300) == first
        return
    pytest.fail("no UE hands over within 12 s")
