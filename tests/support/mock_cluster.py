"""confluent-kafka's mock cluster (librdkafka's, in this process), with its group timing set.

``confluent_kafka.Producer({"test.mock.num.brokers": 3, ...})`` starts the same mock, but only
librdkafka's C API can set how long a KIP-848 member's session lasts there (30 s by default:
a SIGKILLed member's partitions would wait that long) and how often members heartbeat (3 s).
``MockCluster`` makes the handle through that C API (``ctypes`` on the librdkafka bundled in the
confluent-kafka wheel: ``rd_kafka_new`` with ``test.mock.num.brokers``, then
``rd_kafka_mock_set_group_consumer_session_timeout_ms`` / ``_heartbeat_interval_ms`` on its mock
cluster, before any group exists) and creates topics directly (``rd_kafka_mock_topic_create``).
It lives until ``stop()`` (or the ``with`` block ends).

Share groups (KIP-932) there: ``share_*`` settings set the mock's share-group heartbeat
interval (5 s by default), session timeout (45 s) and acquisition lock (30 s) the same way;
``share_assign`` sets a share group's assignment by hand (the mock's own assignor gives each
partition to one member; Kafka's shares a partition among members, which a hand-made
assignment shows); ``produce`` writes records with a confluent-kafka producer and
``share_consumer`` makes a confluent-kafka ShareConsumer peer. A new share group starts at the
latest offset of each partition when the partition is first fetched (as in Kafka), so records
produced before that are not delivered; ``share_auto_offset_reset="earliest"`` (Kafka's group
config share.auto.offset.reset) makes tests independent of when that first fetch happens. Mock facts the share tests live with (librdkafka 2.16): any client connection
that closes on a mock broker closes every member's share sessions on that broker (their locks
are released); no ShareGroupDescribe (77), and ListGroups does not list share groups.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

import attrs

_PRODUCER = 0
_ERRSTR = 512


def _library() -> ctypes.CDLL:
    import confluent_kafka

    libs = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)),
                        "confluent_kafka.libs")
    found = sorted(glob.glob(os.path.join(libs, "librdkafka*.so*")))
    lib = ctypes.CDLL(found[0] if found else "librdkafka.so.1")
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_size_t]
    lib.rd_kafka_handle_mock_cluster.restype = ctypes.c_void_p
    lib.rd_kafka_handle_mock_cluster.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    for name in ("rd_kafka_mock_set_group_consumer_session_timeout_ms",
                 "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int]
    for name in ("rd_kafka_mock_sharegroup_set_heartbeat_interval",
                 "rd_kafka_mock_sharegroup_set_session_timeout",
                 "rd_kafka_mock_sharegroup_set_record_lock_duration",
                 "rd_kafka_mock_sharegroup_set_max_delivery_attempts",
                 "rd_kafka_mock_sharegroup_set_auto_offset_reset"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_topic_partition_list_new.restype = ctypes.c_void_p
    lib.rd_kafka_topic_partition_list_new.argtypes = [ctypes.c_int]
    lib.rd_kafka_topic_partition_list_add.restype = ctypes.c_void_p
    lib.rd_kafka_topic_partition_list_add.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                                      ctypes.c_int32]
    lib.rd_kafka_topic_partition_list_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_sharegroup_target_assignment.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
        ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    lib.rd_kafka_mock_sharegroup_get_member_ids.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)),
        ctypes.POINTER(ctypes.c_size_t)]
    lib.rd_kafka_mem_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                               ctypes.c_int]
    lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    return lib


@attrs.define
class MockCluster:
    """``brokers`` mock brokers; KIP-848 groups get ``session_timeout_ms`` and
    ``heartbeat_interval_ms`` (the mock's defaults are 30000 and 3000)."""

    brokers: int = 3
    session_timeout_ms: int = 30_000
    heartbeat_interval_ms: int = 3_000
    #: Share groups: None keeps the mock's default.
    share_heartbeat_interval_ms: int | None = None
    share_session_timeout_ms: int | None = None
    share_record_lock_duration_ms: int | None = None
    #: Deliveries of a record before the mock archives it (Kafka's
    #: group.share.delivery.count.limit).
    share_max_delivery_attempts: int | None = None
    #: "earliest" or "latest" (the default): where a share group starts reading a partition
    #: it fetches for the first time (Kafka's group config share.auto.offset.reset).
    share_auto_offset_reset: str | None = None
    bootstrap_servers: str = attrs.field(default="", init=False)
    _lib: ctypes.CDLL | None = attrs.field(default=None, init=False, repr=False)
    _handle: int | None = attrs.field(default=None, init=False, repr=False)
    _cluster: int | None = attrs.field(default=None, init=False, repr=False)
    _producer: Any = attrs.field(default=None, init=False, repr=False)

    def start(self) -> MockCluster:
        lib = self._lib = _library()
        errstr = ctypes.create_string_buffer(_ERRSTR)
        conf = lib.rd_kafka_conf_new()
        for name, value in (("test.mock.num.brokers", str(self.brokers)),
                            ("log_level", "3")):
            if lib.rd_kafka_conf_set(conf, name.encode(), value.encode(), errstr, _ERRSTR):
                raise RuntimeError(f"librdkafka refused {name}: {errstr.value.decode()}")
        handle = lib.rd_kafka_new(_PRODUCER, conf, errstr, _ERRSTR)
        if not handle:
            raise RuntimeError(f"librdkafka could not start its mock: {errstr.value.decode()}")
        self._handle = handle
        cluster = self._cluster = lib.rd_kafka_handle_mock_cluster(handle)
        lib.rd_kafka_mock_set_group_consumer_session_timeout_ms(cluster, self.session_timeout_ms)
        lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(cluster,
                                                                   self.heartbeat_interval_ms)
        for name, value in (
                ("heartbeat_interval", self.share_heartbeat_interval_ms),
                ("session_timeout", self.share_session_timeout_ms),
                ("record_lock_duration", self.share_record_lock_duration_ms),
                ("max_delivery_attempts", self.share_max_delivery_attempts)):
            if value is not None:
                getattr(lib, f"rd_kafka_mock_sharegroup_set_{name}")(cluster, value)
        if self.share_auto_offset_reset is not None:
            lib.rd_kafka_mock_sharegroup_set_auto_offset_reset(
                cluster, {"latest": 0, "earliest": 1}[self.share_auto_offset_reset])
        self.bootstrap_servers = lib.rd_kafka_mock_cluster_bootstraps(cluster).decode()
        return self

    def create_topic(self, name: str, partitions: int = 4) -> None:
        """A topic of ``partitions`` partitions (replication factor 1)."""
        assert self._lib is not None and self._cluster is not None, "start() first"
        code = self._lib.rd_kafka_mock_topic_create(self._cluster, name.encode(), partitions, 1)
        if code:
            raise RuntimeError(f"the mock refused to create topic {name}: error {code}")

    def share_assign(self, group_id: str, assignment: Mapping[str, Iterable[tuple[str, int]]]
                     ) -> None:
        """Give each member (by member id) of share group ``group_id`` the (topic, partition)
        pairs listed, from now on (the mock then assigns by hand only; members hear of it at
        their next heartbeat). A partition may go to several members, as Kafka's assignor
        does when a share group has more members than partitions."""
        lib, cluster = self._lib, self._cluster
        assert lib is not None and cluster is not None, "start() first"
        ids = list(assignment)
        lists = []
        for member in ids:
            parts = list(assignment[member])
            handle = lib.rd_kafka_topic_partition_list_new(max(1, len(parts)))
            for topic, partition in parts:
                lib.rd_kafka_topic_partition_list_add(handle, topic.encode(), partition)
            lists.append(handle)
        try:
            lib.rd_kafka_mock_sharegroup_target_assignment(
                cluster, group_id.encode(), (ctypes.c_char_p * len(ids))(
                    *[i.encode() for i in ids]), (ctypes.c_void_p * len(ids))(*lists), len(ids))
        finally:
            for handle in lists:
                lib.rd_kafka_topic_partition_list_destroy(handle)

    def share_members(self, group_id: str) -> list[str]:
        """The member ids of share group ``group_id`` as the mock's coordinator knows them."""
        lib, cluster = self._lib, self._cluster
        assert lib is not None and cluster is not None, "start() first"
        ids = ctypes.POINTER(ctypes.c_char_p)()
        count = ctypes.c_size_t()
        if lib.rd_kafka_mock_sharegroup_get_member_ids(cluster, group_id.encode(),
                                                       ctypes.byref(ids), ctypes.byref(count)):
            return []
        try:
            return [ids[i].decode() for i in range(count.value)]
        finally:
            raw = ctypes.cast(ids, ctypes.POINTER(ctypes.c_void_p))
            for i in range(count.value):
                lib.rd_kafka_mem_free(None, raw[i])
            lib.rd_kafka_mem_free(None, raw)

    def produce(self, topic: str, values: Iterable[bytes], partitions: int = 4) -> int:
        """Write ``values`` round-robin over ``partitions`` partitions; how many."""
        producer = self.warm_producer()
        count = 0
        for count, value in enumerate(values, 1):
            producer.produce(topic, value=value, partition=count % partitions)
        if producer.flush(30):
            raise TimeoutError("the mock cluster did not take every record")
        return count

    def warm_producer(self, **config: Any) -> Any:
        """The one producer ``produce`` uses, started and settled (with librdkafka ``config``
        on top of the defaults, used when it is first made). Start it before any share
        member joins: a librdkafka client closes its bootstrap connections once it knows the
        brokers, and on the mock a closing connection ends every share session on that
        broker (the quirk above); so does a producer that goes away."""
        import confluent_kafka

        if self._producer is not None and config:
            raise ValueError("the warm producer is made already; give its settings to the"
                             " first warm_producer() call")
        if self._producer is None:
            producer = confluent_kafka.Producer({"bootstrap.servers": self.bootstrap_servers,
                                                 "linger.ms": 5, **config})
            self.create_topic("warm-up", 1)
            producer.produce("warm-up", value=b"warm-up")
            if producer.flush(10):
                raise TimeoutError("the mock cluster did not take the warm-up record")
            self._producer = producer
        return self._producer

    def share_consumer(self, group_id: str, client_id: str, **config: Any) -> Any:
        """A confluent-kafka ShareConsumer on this cluster."""
        import confluent_kafka

        return confluent_kafka.ShareConsumer({
            "bootstrap.servers": self.bootstrap_servers, "group.id": group_id,
            "client.id": client_id, **config})

    def stop(self) -> None:
        if self._producer is not None:
            self._producer.flush(5)
            self._producer = None
        if self._lib is not None and self._handle is not None:
            self._lib.rd_kafka_destroy(self._handle)
        self._handle = self._cluster = None

    def __enter__(self) -> MockCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
