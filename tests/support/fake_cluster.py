"""A one-broker fake Kafka cluster for Admin calls the local broker cannot answer.

It answers ApiVersions (the versions groupkit knows, plus or minus chosen APIs), Metadata (itself
as node 0, leader of every partition of the topics it is given) and FindCoordinator (itself) on
its own; every other request frame goes to ``answer(header, raw_frame)``, which returns the
response *body* as bytes written out by the test, so what the client decodes are real bytes and
not our own encoder's output. Requests are kept as raw frames for the test to check.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Mapping

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
from groupkit.protocol.schema import Request, Response
from groupkit.protocol.versions import CLIENT_VERSIONS

#: (request header, the whole request frame without its size prefix) -> response body bytes.
Answer = Callable[[RequestHeader, bytes], bytes]



class FakeCluster:
    """Serves on a free loopback port until ``close()``; ``requests`` holds what it was sent."""

    def __init__(self, answer: Answer, topics: Mapping[str, int],
                 versions: Mapping[int, tuple[int, int]] | None = None) -> None:
        self.answer = answer
        self.topics = dict(topics)
        self.versions = dict(CLIENT_VERSIONS if versions is None else versions)
        self.requests: list[tuple[RequestHeader, bytes]] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        decoder = FrameDecoder()
        with sock:
            while data := _recv(sock):
                for frame in decoder.feed(data):
                    header, request = decode_request_frame(frame)
                    own = self._own_answer(header, request)
                    if own is not None:
                        sock.sendall(encode_response_frame(own, header.api_version,
                                                           header.correlation_id))
                        continue
                    self.requests.append((header, bytes(frame)))
                    body = self.answer(header, bytes(frame))
                    # Response header: the correlation id, then (flexible versions) no tags.
                    head = struct.pack(">i", header.correlation_id)
                    if response_header_version(header.api_key, header.api_version):
                        head += b"\x00"
                    sock.sendall(struct.pack(">i", len(head) + len(body)) + head + body)

    def _own_answer(self, header: RequestHeader, request: Request) -> Response | None:
        if header.api_key == ApiKey.API_VERSIONS:
            return ApiVersionsResponse(error_code=0, api_keys=[
                ApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in sorted(self.versions.items())])
        if header.api_key == ApiKey.METADATA:
            asked = [t.name for t in request.topics] if request.topics is not None else None
            # As Kafka without auto-creation: a topic asked for by name that does not exist
            # comes back with UNKNOWN_TOPIC_OR_PARTITION.
            return MetadataResponse(
                brokers=[MetadataResponseBroker(node_id=0, host="127.0.0.1", port=self.port)],
                controller_id=0,
                topics=[MetadataResponseTopic(
                    error_code=0, name=name, partitions=[MetadataResponsePartition(
                        error_code=0, partition_index=i, leader_id=0, replica_nodes=[0],
                        isr_nodes=[0]) for i in range(count)])
                    for name, count in self.topics.items() if asked is None or name in asked]
                + [MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                         name=name, partitions=[])
                   for name in asked or () if name not in self.topics])
        if header.api_key == ApiKey.FIND_COORDINATOR:
            if header.api_version < 4:
                return FindCoordinatorResponse(error_code=0, node_id=0, host="127.0.0.1",
                                               port=self.port)
            return FindCoordinatorResponse(coordinators=[FindCoordinatorResponseCoordinator(
                key=k, node_id=0, host="127.0.0.1", port=self.port, error_code=0)
                for k in request.coordinator_keys])
        return None

    def close(self) -> None:
        self._server.close()


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def offset_delete_answer(top: int, topics: list[tuple[str, list[tuple[int, int]]]]) -> bytes:
    """An OffsetDeleteResponse v0 body written out field by field: error code, throttle time,
    then each topic's name and its (partition, error code) pairs."""
    body = struct.pack(">hii", top, 0, len(topics))
    for name, parts in topics:
        body += struct.pack(">h", len(name)) + name.encode() + struct.pack(">i", len(parts))
        for partition, code in parts:
            body += struct.pack(">ih", partition, code)
    return body
