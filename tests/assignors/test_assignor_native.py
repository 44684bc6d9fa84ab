"""The sticky assignors' C loops (assignors._native) give the Python loops' results on the same
inputs, loop by loop and whole assignments, and GROUPKIT_NO_NATIVE=1 selects the Python ones."""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from assignors import (
    ClusterView,
    MemberSubscription,
    TopicPartition,
    lookup,
    sticky_loops,
)
from assignors.sticky_data import encode_sticky_user_data, layouts
from tests.assignors.assignor_groups import groups

ROOT = Path(__file__).resolve().parents[2]
needs_native = pytest.mark.skipif(
    sticky_loops.NATIVE is None, reason="the assignors C extension is not built"
)
pytestmark = needs_native
NATIVE = sticky_loops.NATIVE
PYTHON = sticky_loops.PYTHON
TOPICS = ["a", "b", "c", "é", "d" * 40]
COUNTS = [3, 0, 7, 2, 5]


@contextmanager
def loops(which: sticky_loops.Loops | None) -> Iterator[None]:
    saved = sticky_loops.active
    sticky_loops.active = which  # type: ignore[assignment]
    try:
        yield
    finally:
        sticky_loops.active = saved


def both(name: str, cluster: ClusterView, members: dict) -> tuple[dict, dict]:
    with loops(PYTHON):
        python = lookup(name).assign(cluster, members)
    with loops(NATIVE):
        native = lookup(name).assign(cluster, members)
    return python, native


def numberings():
    return (
        PYTHON.numbering(TOPICS, COUNTS, TopicPartition),
        NATIVE.numbering(TOPICS, COUNTS, TopicPartition),
    )


pairs = st.lists(
    st.tuples(st.sampled_from([*TOPICS, "zz", ""]), st.integers(-3, 9) | st.integers(2**31, 2**70)),
    max_size=30,
)


@given(owned=pairs)
def test_owned_numbers_match(owned):
    tps = [TopicPartition(t, p) for t, p in owned]
    python, native = numberings()
    assert native.owned(tps) == python.owned(tps)


@given(owned=pairs, first=pairs)
def test_marks_match(owned, first):
    # Marking after some are taken: the same bytes set, and the same count of newly taken
    # (each partition of the layout once, however often it is given).
    python, native = numberings()
    results = []
    for numbering in (python, native):
        taken = bytearray(sum(COUNTS))
        numbering.mark([TopicPartition(t, p) for t, p in first], taken)
        results.append((numbering.mark([TopicPartition(t, p) for t, p in owned], taken), taken))
    assert results[0] == results[1]
    fresh = set(python.owned([TopicPartition(t, p) for t, p in owned]))
    assert results[0][0] == len(fresh - set(python.owned([TopicPartition(t, p) for t, p in first])))


def test_marking_needs_room_for_every_partition():
    for numbering in numberings():
        with pytest.raises(ValueError, match="shorter"):
            numbering.mark([TopicPartition("a", 0)], bytearray(sum(COUNTS) - 1))


@given(
    by_topic=st.lists(
        st.tuples(st.sampled_from([*TOPICS, "zz"]), st.lists(st.integers(-2**31, 2**31 - 1) | st.integers(-2, 9))),
        max_size=6,
    ),
    generation=st.integers(-1, 2**31 - 1),
    version=st.sampled_from([0, 1]),
    prefix=st.booleans(),
    cut=st.integers(0, 40),
    flip=st.none() | st.tuples(st.integers(0, 200), st.integers(0, 255)),
)
def test_sticky_user_data_reads_match(by_topic, generation, version, prefix, cut, flip):
    # Valid user data in every layout, then cut short or with one byte changed: C and Python
    # read the same numbers, or both find the bytes do not fit.
    data = encode_sticky_user_data(
        [TopicPartition(t, p) for t, ps in by_topic for p in ps], generation, version
    )
    if prefix:
        data = struct.pack(">h", version) + data
    if cut:
        data = data[: max(0, len(data) - cut)]
    if flip is not None and data:
        at, value = flip
        data = data[: at % len(data)] + bytes([value]) + data[at % len(data) + 1 :]
    python, native = numberings()
    for start, with_generation in [*layouts(data), (0, True), (2, False), (7, True)]:
        assert native.sticky(data, start, with_generation) == python.sticky(
            data, start, with_generation
        )


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00\x00\x00\x01\x00\x02\xc3\x28\x00\x00\x00\x00",  # topic name not UTF-8
        b"\x00\x00\x00\x01\x00\x02\xc3\xa9\x00\x00\x00\x01\x00\x00\x00\x01",  # "é", partition 1
        b"\x00\x00\x00\x01\xff\xff",  # negative name length
        b"\x7f\xff\xff\xff",  # topic count that cannot fit
    ],
)
def test_sticky_user_data_edge_cases_match(data):
    python, native = numberings()
    for with_generation in (True, False):
        assert native.sticky(data, 0, with_generation) == python.sticky(data, 0, with_generation)


@given(numbers=st.lists(st.integers(0, sum(COUNTS) - 1), max_size=40))
def test_partitions_match(numbers):
    python, native = numberings()
    made = native.partitions(numbers)
    assert made == python.partitions(numbers)
    assert all(type(tp) is TopicPartition for tp in made)


claim_sets = st.integers(1, 40).flatmap(
    lambda total: st.tuples(
        st.just(total),
        st.lists(st.lists(st.integers(0, total - 1), max_size=total + 3), min_size=1, max_size=8),
    )
)


@given(claims=claim_sets, data=st.data())
def test_resolve_and_fill_uniform_match(claims, data):
    total, claimed = claims
    generations = data.draw(st.lists(st.integers(-1, 3), min_size=len(claimed), max_size=len(claimed)))
    python_claims = [list(c) for c in claimed]
    native_claims = [list(c) for c in claimed]
    py_owner, py_owned = PYTHON.resolve(python_claims, generations, total)
    c_owner, c_owned = NATIVE.resolve(native_claims, generations, total)
    assert (c_owner, c_owned) == (py_owner, py_owned)
    # The same lists come back as the same objects: the assignor reuses a member's tuple then.
    assert [a is b for a, b in zip(c_owned, native_claims, strict=True)] == [
        a is b for a, b in zip(py_owned, python_claims, strict=True)
    ]
    py_filled = PYTHON.fill_uniform(py_owned, total)
    c_filled = NATIVE.fill_uniform(c_owned, total)
    assert c_filled == py_filled
    assert [a is b for a, b in zip(c_filled, c_owned, strict=True)] == [
        a is b for a, b in zip(py_filled, py_owned, strict=True)
    ]
    assert sorted(i for part in c_filled for i in part) == list(range(total))


@given(
    subscribed=st.lists(st.lists(st.integers(0, 9), unique=True).map(sorted), max_size=12),
    data=st.data(),
)
def test_eligible_lists_and_placement_match(subscribed, data):
    # The general path's loops: a topic's members, then its free partitions given out over a
    # few rounds of placement (counts carry over, some members already hold partitions).
    assert NATIVE.eligible(subscribed, 10) == PYTHON.eligible(subscribed, 10)
    eligible = PYTHON.eligible(subscribed, 10)
    members = len(subscribed)
    counts = data.draw(st.lists(st.integers(0, 6), min_size=members, max_size=members))
    held = {m: [1000 + m] for m in range(members) if data.draw(st.booleans())}
    python = (list(counts), {m: list(p) for m, p in held.items()})
    native = (list(counts), {m: list(p) for m, p in held.items()})
    for k in range(10):
        if not eligible[k]:
            continue
        free = list(range(100 * k, 100 * k + data.draw(st.integers(1, 25))))
        PYTHON.place(eligible[k], python[0], free, python[1])
        NATIVE.place(eligible[k], native[0], free, native[1])
        assert native == python
        assert sum(python[0]) == sum(counts) + sum(
            len(p) for p in python[1].values()
        ) - sum(len(p) for p in held.values())


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
@given(group=groups())
def test_whole_assignments_match(name, group):
    cluster, members = group
    python, native = both(name, cluster, members)
    assert native == python


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
@given(group=groups(with_history=False), data=st.data())
def test_assignments_from_sticky_user_data_match(name, group, data):
    # Members rejoin with the user data of a first assignment, some of it cut short.
    cluster, members = group
    first = lookup(name).assign(cluster, members)
    rejoined = {}
    for m, sub in members.items():
        user_data = encode_sticky_user_data(first[m].partitions, data.draw(st.integers(-1, 3)))
        user_data = user_data[: len(user_data) - data.draw(st.sampled_from([0, 0, 1, 5]))]
        rejoined[m] = MemberSubscription(sub.topics, user_data=user_data,
                                         group_instance_id=sub.group_instance_id)
    python, native = both(name, cluster, rejoined)
    assert native == python


def mid_size_group(seed: int) -> tuple[ClusterView, dict[str, list[str]]]:
    """120 members, each on 5 to 40 of 60 topics of 1 to 12 partitions."""
    rng = random.Random(seed)
    names = [f"t{i:02d}" for i in range(60)]
    cluster = ClusterView({t: rng.randint(1, 12) for t in names})
    return cluster, {f"m{i:03d}": rng.sample(names, rng.randint(5, 40)) for i in range(120)}


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_mid_size_unequal_group_and_a_leave_match(name):
    cluster, topics = mid_size_group(7)
    members = {m: MemberSubscription(t) for m, t in topics.items()}
    python, native = both(name, cluster, members)
    assert native == python
    del topics["m000"]
    rejoined = {
        m: MemberSubscription(t, owned_partitions=native[m].partitions, generation=1,
                              user_data=encode_sticky_user_data(native[m].partitions, 1))
        for m, t in topics.items()
    }
    python, native = both(name, cluster, rejoined)
    assert native == python


def test_no_native_selects_the_python_loops():
    script = "from assignors import sticky_loops; print(sticky_loops.active.name)"
    env = {**os.environ, "GROUPKIT_NO_NATIVE": "1"}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "python"
    env.pop("GROUPKIT_NO_NATIVE")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "c"
