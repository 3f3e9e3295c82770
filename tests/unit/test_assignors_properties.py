"""Properties of the balancing assignors on random groups: complete, never doubled, balanced
within one for identical subscriptions, and sticky to what members already own."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.assignors import assign
from coordinator.assignors.quality import moved, quality

BALANCING = ["sticky", "cooperative-sticky", "server-uniform"]
SETTINGS = settings(max_examples=80, deadline=None)


@st.composite
def groups(draw, identical: bool):
    topics = {f"t{i}": draw(st.integers(1, 12)) for i in range(draw(st.integers(1, 4)))}
    names = list(topics)
    members = [f"C{i}" for i in range(draw(st.integers(1, 8)))]
    if identical:
        chosen = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        subs = {m: chosen for m in members}
    else:
        subs = {m: draw(st.lists(st.sampled_from(names), min_size=1, unique=True)) for m in members}
    return topics, subs


@st.composite
def rounds(draw, identical: bool):
    """A first round, then a membership change: some members leave, some join."""
    topics, subs = draw(groups(identical))
    members = list(subs)
    leaving = set(draw(st.lists(st.sampled_from(members), max_size=len(members) - 1, unique=True)))
    joining = [f"N{i}" for i in range(draw(st.integers(0, 3)))]
    template = subs[members[0]]
    later = {m: subs[m] for m in members if m not in leaving}
    for m in joining:
        later[m] = template if identical else draw(
            st.lists(st.sampled_from(list(topics)), min_size=1, unique=True))
    return topics, subs, later


def _run(strategy, topics, subs, previous=None, generation=None):
    """A rebalance to completion. Under cooperative-sticky a member that gave partitions up
    rejoins, so follow-up rounds run until one revokes nothing; with differing subscriptions a
    follow-up can itself revoke (and so need another)."""
    generations = None
    if generation is not None:
        generations = {m: (generation if m in (previous or {}) else -1) for m in subs}
    result = assign(strategy, topics, subs, previous=previous, generations=generations)
    rounds = 1
    while strategy == "cooperative-sticky" and (rounds == 1 or _revoked(previous, result)):
        assert rounds < 10, "cooperative rebalance does not settle"
        previous, result = result, assign(
            strategy, topics, subs, previous=result,
            generations={m: (generation or 0) + rounds for m in subs})
        rounds += 1
    return result


def _revoked(before, after) -> bool:
    """Some member lost a partition it owned (so it rejoins for a follow-up round)."""
    return any(set(tps) - set(after.get(member, ())) for member, tps in (before or {}).items()
               if member in after)


def _two_rounds(data, identical: bool):
    strategy = data.draw(st.sampled_from(BALANCING))
    topics, subs, later = data.draw(rounds(identical=identical))
    first = _run(strategy, topics, subs)
    second = _run(strategy, topics, later, previous=first, generation=1)
    return topics, subs, later, first, second


def _check_complete(topics, subs, result):
    assert set(result) == set(subs)
    counts = Counter(tp for tps in result.values() for tp in tps)
    assert all(n == 1 for n in counts.values()), "a partition was assigned twice"
    for member, tps in result.items():
        assert all(t in subs[member] for t, _ in tps), "assigned an unsubscribed topic"
    subscribed = {(t, p) for ts in subs.values() for t in ts for p in range(topics[t])}
    assert set(counts) == subscribed, "a subscribed partition was left out"


def _check_balanced(topics, subs, result):
    q = quality(result, subs, topics)
    assert q.skew <= 1
    assert q.unowned is not None and not any(q.unowned.values())


@pytest.mark.parametrize("identical", [True, False], ids=["identical", "differing"])
@SETTINGS
@given(data=st.data())
def test_complete_never_doubled_and_balanced_when_identical(identical, data):
    topics, subs, later, first, second = _two_rounds(data, identical=identical)
    for members, result in ((subs, first), (later, second)):
        _check_complete(topics, members, result)
        if identical:
            _check_balanced(topics, members, result)


@SETTINGS
@given(data=st.data())
def test_owned_partitions_are_kept_up_to_the_quota(data):
    topics, _, later, first, second = _two_rounds(data, identical=True)
    total = sum(topics[t] for t in next(iter(later.values())))
    quota = total // len(later)
    for member, owned in first.items():
        if member in later:
            kept = set(owned) & set(second[member])
            assert len(kept) >= min(len(owned), quota)


@SETTINGS
@given(data=st.data())
def test_a_balanced_assignment_is_left_alone(data):
    strategy = data.draw(st.sampled_from(BALANCING))
    topics, subs = data.draw(groups(identical=data.draw(st.booleans())))
    first = _run(strategy, topics, subs)
    again = _run(strategy, topics, subs, previous=first, generation=1)
    assert moved(first, again) == []
    assert {m: set(tps) for m, tps in again.items()} == {m: set(tps) for m, tps in first.items()}


@SETTINGS
@given(data=st.data())
def test_cooperative_first_round_only_withholds(data):
    topics, subs, later = data.draw(rounds(identical=data.draw(st.booleans())))
    first = _run("cooperative-sticky", topics, subs)
    generations = {m: (1 if m in first else -1) for m in later}
    raw = assign("cooperative-sticky", topics, later, previous=first, generations=generations)
    eager = assign("sticky", topics, later, previous=first, generations=generations)
    # Same decisions as eager sticky, minus the partitions that still have to be revoked, and
    # each withheld partition is one its new owner did not hold and someone else did.
    for member in later:
        assert set(raw[member]) <= set(eager[member])
        for tp in set(eager[member]) - set(raw[member]):
            assert tp not in first.get(member, ())
            assert any(tp in tps for m, tps in first.items() if m != member)
