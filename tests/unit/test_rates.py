"""Rates from counters: a counter that fell or a recreated device drops the sample."""

from __future__ import annotations

from zsn.rates import CounterRates, RateTracker


def test_rates_between_two_readings() -> None:
    rates = CounterRates()
    assert rates.update(("eth0", 2), 10.0, (1000, 10)) is None
    assert rates.update(("eth0", 2), 12.0, (3000, 10)) == (1000.0, 0.0)
    assert rates.update(("eth0", 2), 13.0, (3000, 10)) == (0.0, 0.0)


def test_a_counter_that_fell_drops_the_sample_and_starts_afresh() -> None:
    rates = CounterRates()
    rates.update("k", 1.0, (500, 5))
    assert rates.update("k", 2.0, (100, 6)) is None
    assert rates.update("k", 3.0, (300, 6)) == (200.0, 0.0)


def test_a_recreated_device_is_a_new_key() -> None:
    rates = CounterRates()
    rates.update(("bond0", 7), 1.0, (500,))
    assert rates.update(("bond0", 9), 2.0, (900,)) is None  # new ifindex: no rate
    rates.forget_except({("bond0", 9)})
    assert rates.update(("bond0", 7), 3.0, (999,)) is None


def test_rate_tracker_keeps_its_interface() -> None:
    tracker = RateTracker()
    assert tracker.update("p", 0.0, 10, 20) == (None, None)
    assert tracker.update("p", 2.0, 30, 20) == (10.0, 0.0)
    assert tracker.update("p", 3.0, 0, 20) == (None, None)
