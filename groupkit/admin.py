"""Admin: create and delete topics, inspect and delete groups, look up offsets.

Each call routes itself: topic changes to the controller, group calls to each group's
coordinator (found with FindCoordinator and retried while it moves or loads), offset lookups to
partition leaders. Broker errors raise the matching ``groupkit.errors`` exception.

Over 600 lines because it is the whole of the Java AdminClient that groupkit offers, one method
per call with the routing, retries and version choices that call needs; the values it returns
live in ``admin_values``.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from assignors import TopicPartition
from groupkit.admin_values import (
    CONSUMER_PROTOCOL_TYPE,
    SHARE_PROTOCOL_TYPE,
    CreatedTopic,
    GroupDescription,
    GroupListing,
    ListedOffset,
    MemberDescription,
    Node,
)
from groupkit.config import AdminConfig
from groupkit.errors import (
    ApiKey,
    BrokerError,
    ConfigError,
    ErrorCode,
    GroupkitError,
    KafkaConnectionError,
    RequestTimeoutError,
    UnsupportedVersionError,
    check_error,
    error_for_code,
)
from groupkit.protocol.messages.consumer_group import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupkit.protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestConfig,
    CreateTopicsRequestTopic,
)
from groupkit.protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from groupkit.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsRequestTopic
from groupkit.protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupkit.protocol.messages.fetch import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
)
from groupkit.protocol.messages.list_groups import ListGroupsRequest
from groupkit.protocol.messages.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
)
from groupkit.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupkit.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
)
from groupkit.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from groupkit.protocol.messages.share_group import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from groupkit.protocol.primitives import NULL_UUID
from groupkit.protocol.schema import Request, Response
from groupkit.runtime.cluster import COORDINATOR, Cluster
from groupkit.runtime.metadata import BrokerInfo
from groupkit.values import OffsetAndMetadata

__all__ = ["Admin"]

#: Fetch names topics by id from this version.
_FETCH_TOPIC_IDS = 13
_TOPICS_BY_ID_VERSION = 6
_GROUPS_ARRAY_VERSION = 8
#: Codes after which a group request goes to a freshly looked-up coordinator.
_COORDINATOR_MOVED = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR)
_SPECS = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP}

_Answer = TypeVar("_Answer", bound=Response)
#: (error code, the group's part of a response) per group id.
Split = Callable[[_Answer, list[str]], dict[str, tuple[int, Any]]]


class Admin:
    """Administrative calls on one cluster; a context manager (or call ``close()``).

    Settings are those of :class:`~groupkit.config.AdminConfig`. Connects at once;
    NoBrokersAvailable if no bootstrap server answers. Every call returns or raises
    RequestTimeoutError within its ``timeout`` (seconds; default ``default_api_timeout_ms``),
    connecting, coordinator lookups, metadata and retries included, as Java's AdminClient
    bounds each call by its timeout while each request keeps ``request_timeout_ms``.
    """

    def __init__(self, **settings: Any) -> None:
        self.config = AdminConfig.from_kwargs(settings)
        self._cluster = Cluster(self.config)
        self._cluster.bootstrap()

    def _deadline(self, timeout: float | None) -> float:
        """The ``time.monotonic()`` by which a call given ``timeout`` must be done."""
        if timeout is None:
            timeout = self.config.default_api_timeout_ms / 1000
        elif isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigError(f"timeout must be a number of seconds > 0, not {timeout!r}")
        return time.monotonic() + timeout

    def _controller(self, deadline: float) -> int:
        controller = self._cluster.metadata.controller_id
        return controller if controller in self._cluster.metadata.brokers \
            else self._cluster.least_loaded_node(deadline)

    # --- topics --------------------------------------------------------------------------------

    def create_topics(self, names: Iterable[str], num_partitions: int = 1,
                      replication_factor: int = 1,
                      configs: Mapping[str, str] | None = None,
                      timeout: float | None = None) -> list[CreatedTopic]:
        """Create topics and wait until metadata lists them; raises the first topic's error."""
        deadline = self._deadline(timeout)
        names = list(names)
        if not names:
            raise ConfigError("create_topics needs at least one topic name")
        request = CreateTopicsRequest(
            topics=[CreateTopicsRequestTopic(
                name=name, num_partitions=num_partitions, replication_factor=replication_factor,
                assignments=[],
                configs=[CreateTopicsRequestConfig(name=k, value=v)
                         for k, v in (configs or {}).items()]) for name in names],
            timeout_ms=self.config.request_timeout_ms)
        response = self._cluster.call(self._controller(deadline), request, deadline=deadline)
        created = []
        for topic in response.topics:
            _check(topic.error_code, f"topic {topic.name!r}", topic.error_message)
            created.append(CreatedTopic(topic.name, topic.topic_id, topic.num_partitions,
                                        topic.replication_factor))
        self._wait_for_topics(names, True, deadline)
        return created

    def delete_topics(self, names: Iterable[str], timeout: float | None = None) -> None:
        """Delete topics and wait until metadata no longer lists them."""
        deadline = self._deadline(timeout)
        names = list(names)
        if not names:
            raise ConfigError("delete_topics needs at least one topic name")
        node = self._controller(deadline)
        version = self._cluster.require_version(node, ApiKey.DELETE_TOPICS, deadline)
        if version >= _TOPICS_BY_ID_VERSION:
            request = DeleteTopicsRequest(topics=[DeleteTopicsRequestTopic(name=n) for n in names],
                                          timeout_ms=self.config.request_timeout_ms)
        else:
            request = DeleteTopicsRequest(topic_names=names,
                                          timeout_ms=self.config.request_timeout_ms)
        response = self._cluster.call(node, request, version=version, deadline=deadline)
        for topic in response.responses:
            _check(topic.error_code, f"topic {topic.name!r}", topic.error_message)
        self._wait_for_topics(names, False, deadline)

    def _wait_for_topics(self, names: list[str], present: bool, deadline: float) -> None:
        retries = self.config.retry_backoff()
        attempt = 0
        while True:
            metadata = self._cluster.refresh(names, deadline=deadline)
            waiting = [n for n in names if (metadata.topic(n) is None
                       or not all(p.leader >= 0 for p in metadata.topics[n].partitions.values()))
                       == present]
            if not waiting:
                return
            attempt += 1
            backoff = retries.delay(attempt)
            if time.monotonic() + backoff > deadline:
                raise RequestTimeoutError(
                    f"topics {', '.join(waiting)} did not {'appear in' if present else 'leave'}"
                    " the metadata within the call's timeout; check the controller's health,"
                    " or pass a longer timeout")
            time.sleep(backoff)

    def list_topics(self, timeout: float | None = None) -> dict[str, int]:
        """Every topic and its partition count."""
        metadata = self._cluster.refresh(all_topics=True, deadline=self._deadline(timeout))
        return {name: info.partition_count for name, info in metadata.topics.items()}

    # --- groups --------------------------------------------------------------------------------

    def list_groups(self, timeout: float | None = None, types: Iterable[str] | None = None
                    ) -> list[GroupListing]:
        """The groups every broker coordinates, sorted by id; ``types`` keeps those of the
        types named ("classic", "consumer", "share", "streams"), which needs ListGroups v5
        (Kafka 4.0+) on every broker: UnsupportedVersionError names one that lacks it."""
        deadline = self._deadline(timeout)
        wanted = sorted(set(types)) if types is not None else []
        nodes = list(self._cluster.refresh(deadline=deadline).brokers)
        if wanted:
            for node in nodes:
                version = self._cluster.api_version(node, ApiKey.LIST_GROUPS, deadline)
                if version is None or version < 5:
                    broker = self._cluster.metadata.broker(node)
                    raise UnsupportedVersionError(
                        f"the broker {broker.address if broker else node} (node {node}) speaks"
                        f" ListGroups {'not at all' if version is None else f'up to v{version}'}"
                        f"; listing groups by type ({', '.join(wanted)}) needs v5 (Kafka 4.0+)")
        futures = {node: self._cluster.send(node, ListGroupsRequest(types_filter=wanted),
                                            deadline=deadline)
                   for node in nodes}
        listings: dict[str, GroupListing] = {}
        for node, future in futures.items():
            response = self._cluster.answer(future, deadline, f"ListGroups to node {node}")
            check_error(response.error_code)
            for g in response.groups:
                listings[g.group_id] = GroupListing(g.group_id, g.protocol_type,
                                                    g.group_state or None, g.group_type or None)
        return [listings[k] for k in sorted(listings)]

    def brokers_offering(self, api_key: int, timeout: float | None = None) -> list[str]:
        """The addresses of the brokers that offer ``api_key`` (any version), e.g. to tell
        whether the cluster has share groups (ShareGroupHeartbeat, API 76)."""
        deadline = self._deadline(timeout)
        metadata = self._cluster.refresh(deadline=deadline)
        return [b.address for node, b in sorted(metadata.brokers.items())
                if self._cluster.api_version(node, api_key, deadline) is not None]

    def describe_share_groups(self, group_ids: Iterable[str], timeout: float | None = None
                              ) -> dict[str, GroupDescription]:
        """Describe share groups (KIP-932) with ShareGroupDescribe (API 77, Kafka 4.1+), as
        Java's AdminClient.describeShareGroups: members with their subscriptions and
        assignments (topics by name), the group epoch and the assignor. A group that is not a
        share group comes back "Dead" with no members. UnsupportedVersionError names a
        coordinator without the API (Tansu and confluent-kafka's mock cluster have none)."""
        deadline = self._deadline(timeout)
        ids = list(dict.fromkeys(group_ids))
        coordinators = self._cluster.coordinators(ids, deadline=deadline)
        for group_id in ids:
            node = coordinators[group_id]
            if self._cluster.api_version(node, ApiKey.SHARE_GROUP_DESCRIBE, deadline) is None:
                broker = self._cluster.metadata.broker(node)
                where = f"{broker.host}:{broker.port} (node {node})" if broker else f"node {node}"
                raise UnsupportedVersionError(
                    f"the coordinator of group {group_id!r}, {where}, does not offer"
                    " ShareGroupDescribe (API 77, share groups, Kafka 4.1+): it cannot describe"
                    " share groups")

        def split(response: ShareGroupDescribeResponse, groups: list[str]
                  ) -> dict[str, tuple[int, Any]]:
            return {g.group_id: (g.error_code, g) for g in response.groups}

        answers = self._by_coordinator(
            ids, lambda groups: ShareGroupDescribeRequest(group_ids=groups), split, deadline)
        described: dict[str, GroupDescription] = {}
        for group_id, (code, group) in answers.items():
            coordinator = _node(self._cluster.metadata.broker(coordinators[group_id]))
            if code == ErrorCode.GROUP_ID_NOT_FOUND:
                described[group_id] = GroupDescription(group_id, "Dead", SHARE_PROTOCOL_TYPE,
                                                       "", (), coordinator)
                continue
            _check(code, f"share group {group_id!r}", group.error_message)
            described[group_id] = GroupDescription(
                group.group_id, group.group_state, SHARE_PROTOCOL_TYPE, group.assignor_name,
                tuple(MemberDescription.from_share_group(m) for m in group.members),
                coordinator, group.group_epoch)
        return {g: described[g] for g in ids}

    def describe_groups(self, group_ids: Iterable[str], timeout: float | None = None
                        ) -> dict[str, GroupDescription]:
        """Describe groups; consumer-protocol members get their topics and partitions decoded.

        As Java's AdminClient does since KIP-848: a group whose coordinator has
        ConsumerGroupDescribe (API 69) is asked with it first, and with DescribeGroups when it
        is not a consumer-protocol group (GROUP_ID_NOT_FOUND). An answer with group epoch -1
        counts as "not one" too: Kafka never gives that for a group it describes, and Tansu
        answers so for groups it cannot host as consumer-protocol groups (classic ones
        included, which it calls Stable with no members).
        """
        deadline = self._deadline(timeout)
        ids = list(dict.fromkeys(group_ids))
        coordinators = self._cluster.coordinators(ids, deadline=deadline)
        newer = [g for g in ids if self._cluster.api_version(
            coordinators[g], ApiKey.CONSUMER_GROUP_DESCRIBE, deadline) is not None]
        described: dict[str, GroupDescription] = {}
        if newer:
            def split_new(response: ConsumerGroupDescribeResponse, groups: list[str]
                          ) -> dict[str, tuple[int, Any]]:
                return {g.group_id: (g.error_code, g) for g in response.groups}

            answers = self._by_coordinator(
                newer, lambda groups: ConsumerGroupDescribeRequest(group_ids=groups), split_new,
                deadline)
            for group_id, (code, group) in answers.items():
                if code == ErrorCode.GROUP_ID_NOT_FOUND or (not code and group.group_epoch < 0):
                    continue
                _check(code, f"group {group_id!r}")
                described[group_id] = GroupDescription(
                    group.group_id, group.group_state, CONSUMER_PROTOCOL_TYPE,
                    group.assignor_name, tuple(MemberDescription.from_consumer_group(m)
                                               for m in group.members),
                    _node(self._cluster.metadata.broker(coordinators[group_id])),
                    group.group_epoch)
        classic = [g for g in ids if g not in described]
        if classic:
            described.update(self._describe_classic(classic, coordinators, deadline))
        return {g: described[g] for g in ids}

    def _describe_classic(self, group_ids: list[str], coordinators: Mapping[str, int],
                          deadline: float) -> dict[str, GroupDescription]:
        for group_id in group_ids:
            node = coordinators[group_id]
            if self._cluster.api_version(node, ApiKey.DESCRIBE_GROUPS, deadline) is None:
                broker = self._cluster.metadata.broker(node)
                where = f"{broker.host}:{broker.port} (node {node})" if broker else f"node {node}"
                raise UnsupportedVersionError(
                    f"the coordinator of group {group_id!r}, {where}, offers neither"
                    " ConsumerGroupDescribe (API 69, consumer-protocol groups, Kafka 4.0+) nor"
                    " DescribeGroups (API 15, classic groups): it cannot describe the group"
                    " (confluent-kafka's mock cluster has neither)")

        def split(response: DescribeGroupsResponse, groups: list[str]
                  ) -> dict[str, tuple[int, Any]]:
            return {g.group_id: (g.error_code, g) for g in response.groups}

        answers = self._by_coordinator(
            group_ids, lambda groups: DescribeGroupsRequest(groups=groups), split, deadline)
        described = {}
        for group_id, (code, group) in answers.items():
            _check(code, f"group {group_id!r}")
            described[group_id] = GroupDescription(
                group.group_id, group.group_state, group.protocol_type, group.protocol_data,
                tuple(MemberDescription.from_wire(m, group.protocol_type)
                      for m in group.members),
                _node(self._cluster.metadata.broker(coordinators[group_id])))
        return described

    def delete_groups(self, group_ids: Iterable[str], timeout: float | None = None) -> None:
        """Delete empty groups and their committed offsets."""
        deadline = self._deadline(timeout)

        def split(response: DeleteGroupsResponse, groups: list[str]
                  ) -> dict[str, tuple[int, Any]]:
            return {r.group_id: (r.error_code, None) for r in response.results}

        answers = self._by_coordinator(
            group_ids, lambda groups: DeleteGroupsRequest(groups_names=groups), split, deadline)
        for group_id, (code, _) in answers.items():
            _check(code, f"group {group_id!r}")

    def list_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None = None,
                           timeout: float | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        """A group's committed offsets: of ``partitions``, or of every partition it committed."""
        deadline = self._deadline(timeout)
        wanted: dict[str, list[int]] | None = None
        if partitions is not None:
            wanted = collections.defaultdict(list)
            for tp in partitions:
                wanted[tp.topic].append(tp.partition)
        node = self._cluster.coordinator(group_id, deadline=deadline)
        version = self._cluster.require_version(node, ApiKey.OFFSET_FETCH, deadline)
        if version >= _GROUPS_ARRAY_VERSION:
            def build(groups: list[str]) -> Request:
                topics = None if wanted is None else [
                    OffsetFetchRequestTopics(name=t, partition_indexes=p)
                    for t, p in wanted.items()]
                return OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
                    group_id=group_id, topics=topics)])

            def split(response: OffsetFetchResponse, groups: list[str]
                      ) -> dict[str, tuple[int, Any]]:
                return {g.group_id: (g.error_code, g.topics) for g in response.groups}
        else:
            def build(groups: list[str]) -> Request:
                topics = None if wanted is None else [
                    OffsetFetchRequestTopic(name=t, partition_indexes=p)
                    for t, p in wanted.items()]
                return OffsetFetchRequest(group_id=group_id, topics=topics)

            def split(response: OffsetFetchResponse, groups: list[str]
                      ) -> dict[str, tuple[int, Any]]:
                return {group_id: (response.error_code, response.topics)}

        code, topics = self._by_coordinator([group_id], build, split, deadline,
                                            version)[group_id]
        _check(code, f"group {group_id!r}")
        offsets = {}
        for topic in topics:
            for p in topic.partitions:
                _check(p.error_code, f"{topic.name}-{p.partition_index}")
                found = OffsetAndMetadata.from_wire(p.committed_offset, p.metadata,
                                                    p.committed_leader_epoch)
                if found is not None:
                    offsets[TopicPartition(topic.name, p.partition_index)] = found
        return offsets

    def alter_consumer_group_offsets(
            self, group_id: str, offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
            timeout: float | None = None) -> None:
        """Set a group's committed offsets, as Java's ``alterConsumerGroupOffsets`` does.

        Commits as a non-member (generation -1, no member id), so the coordinator accepts it
        only while the group has no active members (Kafka answers UNKNOWN_MEMBER_ID otherwise).
        Raises the first partition's error, its message naming every partition that failed.
        """
        deadline = self._deadline(timeout)
        if not offsets:
            raise ConfigError("alter_consumer_group_offsets needs at least one partition")
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = collections.defaultdict(list)
        for tp, value in offsets.items():
            if not isinstance(value, OffsetAndMetadata) and value < 0:
                raise ConfigError(f"offset for {tp[0]}-{tp[1]} must be >= 0, not {value}")
            stored = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
            by_topic[tp[0]].append(OffsetCommitRequestPartition(
                partition_index=tp[1], committed_offset=stored.offset,
                committed_leader_epoch=stored.wire_leader_epoch,
                committed_metadata=stored.metadata))
        request = OffsetCommitRequest(
            group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
            topics=[OffsetCommitRequestTopic(name=t, partitions=p) for t, p in by_topic.items()])

        def split(response: OffsetCommitResponse, groups: list[str]
                  ) -> dict[str, tuple[int, Any]]:
            return {group_id: (_retry_code(response.topics), response.topics)}

        code, topics = self._by_coordinator([group_id], lambda groups: request, split,
                                            deadline)[group_id]
        _check(code, f"group {group_id!r}")
        _check_partitions(topics, f"group {group_id!r}")

    def delete_consumer_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition],
                                      timeout: float | None = None) -> None:
        """Delete a group's committed offsets for ``partitions`` (OffsetDelete, API 47), as
        Java's ``deleteConsumerGroupOffsets`` does.

        The coordinator refuses partitions of topics the group's members still subscribe to
        (GroupSubscribedToTopicError). Brokers without the API (before Kafka 2.4) raise
        FeatureUnsupportedError.
        """
        deadline = self._deadline(timeout)
        by_topic: dict[str, list[OffsetDeleteRequestPartition]] = collections.defaultdict(list)
        for tp in partitions:
            by_topic[tp[0]].append(OffsetDeleteRequestPartition(partition_index=tp[1]))
        if not by_topic:
            raise ConfigError("delete_consumer_group_offsets needs at least one partition")
        request = OffsetDeleteRequest(
            group_id=group_id,
            topics=[OffsetDeleteRequestTopic(name=t, partitions=p) for t, p in by_topic.items()])

        def split(response: OffsetDeleteResponse, groups: list[str]
                  ) -> dict[str, tuple[int, Any]]:
            return {group_id: (response.error_code or _retry_code(response.topics),
                               response.topics)}

        code, topics = self._by_coordinator([group_id], lambda groups: request, split,
                                            deadline)[group_id]
        _check(code, f"group {group_id!r}")
        _check_partitions(topics, f"group {group_id!r}")

    def _by_coordinator(self, group_ids: Iterable[str], build: Callable[[list[str]], Request],
                        split: Split[_Answer], deadline: float, version: int | None = None
                        ) -> dict[str, tuple[int, Any]]:
        """Send ``build(groups)`` to each coordinator for its groups, retrying groups whose
        coordinator moved or is loading; returns each group's (error code, answer part)."""
        pending = list(dict.fromkeys(group_ids))
        answers: dict[str, tuple[int, Any]] = {}
        retries = self.config.retry_backoff()
        attempt = 0
        last: BaseException | None = None
        while pending:
            coordinators = self._cluster.coordinators(pending, deadline=deadline)
            by_node: dict[int, list[str]] = collections.defaultdict(list)
            for group_id in pending:
                by_node[coordinators[group_id]].append(group_id)
            futures = {node: self._cluster.send(node, build(groups), COORDINATOR, version,
                                                deadline=deadline)
                       for node, groups in by_node.items()}
            retry: list[str] = []
            for node, future in futures.items():
                groups = by_node[node]
                try:
                    response = self._cluster.answer(future, deadline, f"the coordinator (node {node})")
                except (KafkaConnectionError, RequestTimeoutError) as exc:
                    last = exc
                    retry += groups
                    for group_id in groups:
                        self._cluster.invalidate_coordinator(group_id)
                    continue
                for group_id, (code, part) in split(response, groups).items():
                    if code in _COORDINATOR_MOVED or code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                        last = error_for_code(code)()
                        retry.append(group_id)
                        if code in _COORDINATOR_MOVED:
                            self._cluster.invalidate_coordinator(group_id)
                    else:
                        answers[group_id] = (code, part)
            pending = retry
            if pending:
                attempt += 1
                backoff = retries.delay(attempt)
                if time.monotonic() + backoff > deadline:
                    raise RequestTimeoutError(
                        f"groups {', '.join(pending)} got no answer from their coordinator "
                        f"within the call's timeout (last error: {last}); check the brokers,"
                        " or pass a longer timeout")
                time.sleep(backoff)
        return answers

    # --- offsets -------------------------------------------------------------------------------

    def list_offsets(self, specs: Mapping[TopicPartition, str | int],
                     timeout: float | None = None) -> dict[TopicPartition, ListedOffset]:
        """Offsets per partition for a spec: "earliest", "latest" or a timestamp in ms
        (the first offset whose timestamp is at least it; -1 if none)."""
        return self._list_offsets(specs, self._deadline(timeout))

    def _list_offsets(self, specs: Mapping[TopicPartition, str | int], deadline: float
                      ) -> dict[TopicPartition, ListedOffset]:
        wanted: dict[TopicPartition, int] = {}
        for tp, spec in specs.items():
            if isinstance(spec, str) and spec in _SPECS:
                wanted[TopicPartition(*tp)] = _SPECS[spec]
            elif isinstance(spec, int) and not isinstance(spec, bool) and spec >= 0:
                wanted[TopicPartition(*tp)] = spec
            else:
                raise ConfigError(f"offset spec for {tp} must be 'earliest', 'latest' or a "
                                  f"timestamp in ms >= 0, not {spec!r}")
        self._cluster.refresh({tp.topic for tp in wanted}, deadline=deadline)
        results: dict[TopicPartition, ListedOffset] = {}
        retries = self.config.retry_backoff()
        attempt = 0
        while wanted:
            retry, last = self._list_offsets_once(wanted, results, deadline)
            wanted = {tp: wanted[tp] for tp in retry}
            if wanted:
                attempt += 1
                backoff = retries.delay(attempt)
                if time.monotonic() + backoff > deadline:
                    raise last
                time.sleep(backoff)
                self._cluster.refresh(deadline=deadline)
        return results

    def log_end_offsets(self, partitions: Iterable[TopicPartition],
                        timeout: float | None = None) -> dict[TopicPartition, int]:
        """Each partition's log end: the high watermark, where a consumer that read everything
        stands. Lag is measured against it.

        On Apache Kafka ListOffsets "latest" answers the high watermark. Some brokers answer
        less there (Tansu 0.6 gives the base offset of the last batch plus one once a partition
        holds several batches), so the answer is checked with a Fetch from that offset: every
        broker reports the true high watermark on Fetch, and the larger figure wins.
        """
        deadline = self._deadline(timeout)
        wanted = list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))
        listed = self._list_offsets({tp: "latest" for tp in wanted}, deadline)
        ends = {tp: listed[tp].offset for tp in wanted}
        metadata = self._cluster.metadata
        by_leader: dict[int, dict[str, list[FetchRequestPartition]]] = \
            collections.defaultdict(lambda: collections.defaultdict(list))
        for tp in wanted:
            leader = metadata.leader_for(tp.topic, tp.partition)
            if leader is not None:
                by_leader[leader][tp.topic].append(FetchRequestPartition(
                    partition=tp.partition, fetch_offset=max(0, ends[tp]),
                    partition_max_bytes=1))
        futures = {}
        for node, topics in by_leader.items():
            version = self._cluster.api_version(node, ApiKey.FETCH, deadline)
            if version is None:
                continue
            ids = {t: (info.topic_id if (info := metadata.topic(t)) else NULL_UUID)
                   for t in topics}
            if version >= _FETCH_TOPIC_IDS and NULL_UUID in ids.values():
                version = _FETCH_TOPIC_IDS - 1
            names = {(ids[t] if version >= _FETCH_TOPIC_IDS else t): t for t in topics}
            # min_bytes 0: Kafka answers at once. Tansu 0.6 answers max_wait_ms 0 with no
            # partitions at all, so the fetch may wait a token 10 ms.
            request = FetchRequest(
                max_wait_ms=10, min_bytes=0, max_bytes=1, session_id=0, session_epoch=-1,
                topics=[FetchRequestTopic(topic=t, topic_id=ids[t], partitions=p)
                        for t, p in topics.items()], forgotten_topics_data=[])
            futures[node] = (names, version, self._cluster.send(node, request, version=version,
                                                                deadline=deadline))
        for node, (names, version, future) in futures.items():
            response: FetchResponse = self._cluster.answer(future, deadline, f"Fetch to node {node}")
            check_error(response.error_code)
            for topic in response.responses:
                name = names.get(topic.topic_id if version >= _FETCH_TOPIC_IDS else topic.topic)
                for p in topic.partitions:
                    tp = TopicPartition(name or "", p.partition_index)
                    # A partition error (e.g. the log moved on) leaves ListOffsets' answer.
                    if tp in ends and not p.error_code:
                        ends[tp] = max(ends[tp], p.high_watermark)
        return ends

    def _list_offsets_once(self, wanted: dict[TopicPartition, int],
                           results: dict[TopicPartition, ListedOffset], deadline: float
                           ) -> tuple[list[TopicPartition], GroupkitError]:
        metadata = self._cluster.metadata
        by_leader: dict[int, dict[str, list[ListOffsetsRequestPartition]]] = \
            collections.defaultdict(lambda: collections.defaultdict(list))
        retry: list[TopicPartition] = []
        last: GroupkitError = RequestTimeoutError("no leader answered ListOffsets in time")
        for tp, timestamp in wanted.items():
            leader = metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                code = metadata.topic_errors.get(tp.topic, ErrorCode.LEADER_NOT_AVAILABLE)
                last = _error(code, f"{tp.topic}-{tp.partition}")
                if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or not last.retriable:
                    raise last
                retry.append(tp)
                continue
            by_leader[leader][tp.topic].append(ListOffsetsRequestPartition(
                partition_index=tp.partition, timestamp=timestamp))
        futures = {}
        for node, topics in by_leader.items():
            request = ListOffsetsRequest(replica_id=-1, topics=[
                ListOffsetsRequestTopic(name=t, partitions=p) for t, p in topics.items()])
            try:
                version = self._cluster.require_version(node, ApiKey.LIST_OFFSETS, deadline)
            except (KafkaConnectionError, RequestTimeoutError) as exc:
                last = exc
                retry += [TopicPartition(t, p.partition_index)
                          for t, parts in topics.items() for p in parts]
                continue
            request.check_timestamps(version)
            futures[node] = self._cluster.send(node, request, version=version,
                                               deadline=deadline)
        for node, future in futures.items():
            try:
                response = self._cluster.answer(future, deadline, f"ListOffsets to node {node}")
            except (KafkaConnectionError, RequestTimeoutError) as exc:
                last = exc
                retry += [TopicPartition(t, p.partition_index)
                          for t, parts in by_leader[node].items() for p in parts]
                continue
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    if p.error_code:
                        error = _error(p.error_code, f"{tp.topic}-{tp.partition}")
                        self._cluster.observe(error)
                        if not error.retriable:
                            raise error
                        last = error
                        retry.append(tp)
                        continue
                    offset = p.old_style_offsets[0] if p.old_style_offsets else p.offset
                    results[tp] = ListedOffset(offset, p.timestamp, p.leader_epoch)
        return retry, last

    # --- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection."""
        self._cluster.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _error(code: int, where: str, detail: str | None = None) -> BrokerError:
    """The exception of ``code``, its message naming what it is about."""
    cls = error_for_code(code)
    return cls(f"{where}: {detail or cls.description}")


def _check(code: int, where: str, detail: str | None = None) -> None:
    if code:
        raise _error(code, where, detail)


def _node(broker: BrokerInfo | None) -> Node | None:
    return None if broker is None else Node(broker.node_id, broker.host, broker.port)


def _retry_code(topics: Iterable[Any]) -> int:
    """A partition code after which the whole group request goes to the coordinator again."""
    for topic in topics:
        for p in topic.partitions:
            if p.error_code in _COORDINATOR_MOVED or p.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                return int(p.error_code)
    return 0


def _check_partitions(topics: Iterable[Any], where: str) -> None:
    """Raise the first failed partition's error, naming every partition that failed."""
    failed = [(f"{topic.name}-{p.partition_index}", p.error_code)
              for topic in topics for p in topic.partitions if p.error_code]
    if failed:
        cls = error_for_code(failed[0][1])
        listed = ", ".join(f"{name} ({error_for_code(code).name})" for name, code in failed)
        raise cls(f"{where}: {cls.description} Failed partitions: {listed}.")
