"""The default partitioner must put keyed records where Java (and kafka-python) producers do."""

from hypothesis import given, strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from groupkit.partitioner import StickyPartitioner, murmur2, partition_for_key


def test_known_java_values():
    # Values from the Java client's own partitioner tests (Utils.murmur2).
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


@given(st.binary(max_size=64))
def test_matches_kafka_python(key):
    assert murmur2(key) & 0x7FFFFFFF == kafka_python_murmur2(key) & 0x7FFFFFFF


@given(st.binary(max_size=32), st.integers(1, 1000))
def test_partition_in_range(key, n):
    assert 0 <= partition_for_key(key, n) < n


def test_sticky_stays_until_batch_sent():
    picks = iter([1, 0])
    sticky = StickyPartitioner(choose=lambda n: next(picks))
    assert sticky.pick("t", [0, 1, 2]) == 1
    assert sticky.pick("t", [0, 1, 2]) == 1
    sticky.next_batch("t", 1)
    assert sticky.pick("t", [0, 1, 2]) == 0


def test_sticky_moves_off_a_partition_without_leader():
    sticky = StickyPartitioner(choose=lambda n: 0)
    assert sticky.pick("t", [3, 4]) == 3
    assert sticky.pick("t", [4]) == 4
