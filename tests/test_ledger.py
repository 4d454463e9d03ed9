"""The step's ledger (docs/inputs.md)."""

from __future__ import annotations

import threading

import pytest

from orkeon_run.errors import BudgetExhausted
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits


def test_charges_add_up_by_kind():
    ledger = Ledger(BudgetLimits(seconds=10))
    ledger.charge("model", 1.5)
    ledger.charge("tool", 0.25)
    ledger.charge("hook", 0.25)
    snap = ledger.snapshot()
    assert snap["used_seconds"] == 2.0
    assert (snap["model_seconds"], snap["tool_seconds"], snap["hook_seconds"]) == (1.5, 0.25, 0.25)
    assert ledger.remaining_seconds() == 8.0
    assert ledger.cap(60) == 8.0 and ledger.cap(3) == 3


@pytest.mark.parametrize(
    ("limits", "spend", "which"),
    [
        ({"seconds": 1}, lambda lg: lg.charge("hook", 1.0), "seconds"),
        ({"turns": 2}, lambda lg: [lg.add_turn(), lg.add_turn()], "turns"),
        ({"tokens": 100}, lambda lg: lg.add_turn(60, 40), "tokens"),
        ({"usd": 0.5}, lambda lg: lg.add_turn(usd=0.5), "usd"),
    ],
)
def test_a_reached_limit_stops_new_work_and_then_counts_as_exhausted(limits, spend, which):
    ledger = Ledger(BudgetLimits(**{"seconds": None, **limits}))
    spend(ledger)
    assert ledger.spent() == which
    assert ledger.snapshot()["exhausted"] is None  # reached, but nothing was stopped yet
    with pytest.raises(BudgetExhausted) as exc:
        ledger.check()
    assert exc.value.which == which
    assert ledger.snapshot()["exhausted"] == which


def test_unknown_price_makes_usd_null():
    ledger = Ledger(BudgetLimits())
    ledger.add_turn(10, 10, usd=0.01)
    ledger.add_turn(10, 10, usd=None)
    assert ledger.snapshot()["usd"] is None


def test_concurrent_charges_are_not_lost():
    ledger = Ledger(BudgetLimits(seconds=None))

    def work():
        for _ in range(10000):
            ledger.charge("hook", 0.001)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.hook_seconds == pytest.approx(40.0)


def test_a_seeded_ledger_counts_the_earlier_attempts_and_not_their_exhausted():
    """docs/inputs.md, "budget": the budget spans attempts; a limit the earlier attempts
    reached is reached again, and exhausted only when it stops work of this attempt."""
    first = Ledger(BudgetLimits(turns=3))
    first.add_turn(10, 5, 0.25)
    first.add_turn(10, 5, 0.25)
    first.refuse()  # nothing reached yet
    earlier = first.snapshot()
    assert (earlier["attempts"], earlier["attempt"]["turns"]) == (1, 2)
    second = Ledger(BudgetLimits(turns=3))
    second.seed({**earlier, "exhausted": "turns"})
    assert second.spent() is None and second.exhausted is None
    second.add_turn(10, 5, 0.25)
    snap = second.snapshot()
    assert (snap["turns"], snap["tokens_in"], snap["usd"], snap["attempts"]) == (3, 30, 0.75, 2)
    assert snap["attempt"] == {"used_seconds": 0.0, "turns": 1, "tokens_in": 10,
                               "tokens_out": 5, "usd": 0.25}  # fmt: skip
    assert second.spent() == "turns" and snap["exhausted"] is None
    assert second.earlier_spent() == {"seconds": 0.0, "turns": 2, "tokens": 30, "usd": 0.5}


def test_overshoot_is_how_far_past_each_limit_the_run_went():
    ledger = Ledger(BudgetLimits(turns=2, usd=0.3))
    assert ledger.snapshot()["overshoot"] is None
    for _ in range(3):  # three answers that were in flight together
        ledger.add_turn(12, 5, 0.17)
    assert ledger.snapshot()["overshoot"] == {"turns": 1, "tokens": 0, "usd": 0.21}
