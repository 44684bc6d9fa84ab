"""One scriptable fake Kafka broker for the tests that need what a real broker will not do on
demand: silence, wrong correlation ids, old ApiVersions, SASL exchanges, or an API the local
broker lacks.

``FakeBroker`` listens on a loopback port, reads real request frames and hands each one, by API
key, to the handler scripted for that key (else to ``fallback``); ApiVersions is answered with
``versions`` unless scripted. A handler gets the socket, the decoded header and request, and
answers with ``reply`` (our encoder) or ``reply_body`` (bytes the test wrote out), or not at
all. Every request is kept, with its raw frame, in ``requests``. ``FakeCluster`` is a broker that
also answers Metadata and FindCoordinator as a one-node cluster, so Admin can be pointed at it.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from groupkit.errors import ApiKey, ErrorCode
from groupkit.protocol.framing import FrameDecoder
from groupkit.protocol.headers import (
    RequestHeader,
    decode_request_frame,
    encode_response_frame,
    response_header_version,
)
from groupkit.protocol.messages.api_versions import ApiVersion, ApiVersionsResponse
from groupkit.protocol.messages.find_coordinator import (
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)
from groupkit.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from groupkit.protocol.primitives import NULL_UUID
from groupkit.protocol.schema import Request, Response
from groupkit.protocol.versions import CLIENT_VERSIONS
from tests.support.wire_bytes import arr, i16, i32, s

#: (socket, request header, decoded request): answers, stays silent or misbehaves.
Handler = Callable[[socket.socket, RequestHeader, Request], None]


def reply(sock: socket.socket, header: RequestHeader, response: Response,
          correlation_id: int | None = None) -> None:
    """Answer ``header`` with ``response`` encoded in the version asked for."""
    cid = header.correlation_id if correlation_id is None else correlation_id
    sock.sendall(encode_response_frame(response, header.api_version, cid))


def reply_body(sock: socket.socket, header: RequestHeader, body: bytes) -> None:
    """Answer with a response body written out by the test, behind the response header the
    request's version calls for (the correlation id, then no tags in flexible versions)."""
    head = struct.pack(">i", header.correlation_id)
    if response_header_version(header.api_key, header.api_version):
        head += b"\x00"
    sock.sendall(struct.pack(">i", len(head) + len(body)) + head + body)


def accept_forever(server: socket.socket,
                   serve: Callable[[socket.socket], None]) -> threading.Thread:
    """Serve every connection ``server`` accepts on a thread of its own, until ``shut``; the
    accepting thread."""
    def accept() -> None:
        while True:
            try:
                sock, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(sock,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    return thread


def shut(sock: socket.socket) -> None:
    """Shut ``sock`` down both ways, then close it: a thread blocked on it wakes at once. A
    listening socket closed alone keeps the thread blocked in ``accept``, and with it the
    socket listening, until one more connection comes, which it then serves, on a port the
    system may since have handed to another server of the test run."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # a blocked accept or recv returns (EINVAL, or b"")
    sock.close()


class FakeBroker:
    """Serves on a loopback port (a free one unless ``port`` is given) until ``close()``."""

    def __init__(self, fallback: Handler | None = None, *,
                 script: Mapping[int, Handler] | None = None,
                 versions: Mapping[int, tuple[int, int]] | None = None, port: int = 0) -> None:
        self.fallback = fallback
        self.script: dict[int, Handler] = {ApiKey.API_VERSIONS: self.api_versions,
                                           **(script or {})}
        self.versions = dict(CLIENT_VERSIONS if versions is None else versions)
        self.requests: list[tuple[RequestHeader, bytes]] = []
        self.connections = 0
        self._lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", port))
        self.port: int = self.server.getsockname()[1]
        self.acceptor = accept_forever(self.server, self._serve)

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def received(self) -> list[RequestHeader]:
        """The header of every request, in the order they arrived."""
        return [header for header, _ in self.requests]

    def frame_of(self, header: RequestHeader) -> bytes:
        """The raw frame (without its size prefix) of the request with this header."""
        return next(frame for h, frame in reversed(self.requests) if h is header)

    def _serve(self, sock: socket.socket) -> None:
        with self._lock:
            self.connections += 1
        decoder = FrameDecoder()
        with sock, contextlib.suppress(OSError):
            while data := sock.recv(65536):
                for frame in decoder.feed(data):
                    header, request = decode_request_frame(frame)
                    self.requests.append((header, bytes(frame)))
                    handler = self.script.get(header.api_key, self.fallback)
                    if handler is None:
                        return  # nothing scripted: the client sees the connection close
                    handler(sock, header, request)

    def api_versions(self, sock: socket.socket, header: RequestHeader, request: Request) -> None:
        reply(sock, header, ApiVersionsResponse(error_code=0, api_keys=[
            ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(self.versions.items())]))

    def close(self) -> None:
        shut(self.server)

    def __enter__(self) -> FakeBroker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


#: (request header, the whole request frame without its size prefix) -> response body bytes.
Answer = Callable[[RequestHeader, bytes], bytes]


class FakeCluster(FakeBroker):
    """A one-node cluster: Metadata names this broker leader of every partition of ``topics``
    (with the ids ``topic_ids`` gives, for clients that go by topic id) and FindCoordinator
    names it coordinator; a request ``script`` has a handler for goes to it, and every other
    request frame to ``answer(header, frame)``, whose response body bytes the test wrote out, so
    what the client decodes are real bytes and not our own encoder's output. ``scripted`` holds
    the requests of both.
    """

    OWN = (ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.FIND_COORDINATOR)

    def __init__(self, answer: Answer, topics: Mapping[str, int],
                 versions: Mapping[int, tuple[int, int]] | None = None, *,
                 script: Mapping[int, Handler] | None = None,
                 topic_ids: Mapping[str, uuid.UUID] | None = None) -> None:
        self.answer = answer
        self.topics = dict(topics)
        self.topic_ids = dict(topic_ids or {})
        super().__init__(self._answer_scripted, versions=versions, script={
            ApiKey.METADATA: self._metadata, ApiKey.FIND_COORDINATOR: self._find_coordinator,
            **(script or {})})

    @property
    def scripted(self) -> list[tuple[RequestHeader, bytes]]:
        """The requests ``answer`` was asked for, with their frames."""
        return [(h, frame) for h, frame in self.requests if h.api_key not in self.OWN]

    def _answer_scripted(self, sock: socket.socket, header: RequestHeader,
                         request: Request) -> None:
        reply_body(sock, header, self.answer(header, self.frame_of(header)))

    def _metadata(self, sock: socket.socket, header: RequestHeader, request: Any) -> None:
        asked = [t.name for t in request.topics] if request.topics is not None else None
        # As Kafka without auto-creation: a topic asked for by name that does not exist
        # comes back with UNKNOWN_TOPIC_OR_PARTITION.
        reply(sock, header, MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=0, host="127.0.0.1", port=self.port)],
            controller_id=0,
            topics=[MetadataResponseTopic(
                error_code=0, name=name, topic_id=self.topic_ids.get(name, NULL_UUID),
                partitions=[MetadataResponsePartition(
                    error_code=0, partition_index=i, leader_id=0, replica_nodes=[0],
                    isr_nodes=[0]) for i in range(count)])
                for name, count in self.topics.items() if asked is None or name in asked]
            + [MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                     name=name, partitions=[])
               for name in asked or () if name not in self.topics]))

    def _find_coordinator(self, sock: socket.socket, header: RequestHeader,
                          request: Any) -> None:
        if header.api_version < 4:
            reply(sock, header, FindCoordinatorResponse(error_code=0, node_id=0,
                                                        host="127.0.0.1", port=self.port))
            return
        reply(sock, header, FindCoordinatorResponse(coordinators=[
            FindCoordinatorResponseCoordinator(key=k, node_id=0, host="127.0.0.1",
                                               port=self.port, error_code=0)
            for k in request.coordinator_keys]))


def offset_delete_answer(top: int, topics: list[tuple[str, list[tuple[int, int]]]]) -> bytes:
    """An OffsetDeleteResponse v0 body written out field by field: error code, throttle time,
    then each topic's name and its (partition, error code) pairs."""
    return i16(top) + i32(0) + arr([
        s(name) + arr([i32(partition) + i16(code) for partition, code in parts])
        for name, parts in topics])


def not_a_share_group(header: RequestHeader, request: Any) -> bytes:
    """A ShareGroupDescribe (77) answer as Kafka 4.1 gives it for groups that are not share
    groups (GROUP_ID_NOT_FOUND), for fakes of a broker that has the API but no share group."""
    from groupkit.protocol.messages.share_group import (
        ShareGroupDescribeGroup,
        ShareGroupDescribeResponse,
    )

    return ShareGroupDescribeResponse(groups=[ShareGroupDescribeGroup(
        error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"Group {g} is not a share"
        " group.", group_id=g, group_state="", group_epoch=0, assignment_epoch=0,
        assignor_name="") for g in request.group_ids]).encode(header.api_version)
