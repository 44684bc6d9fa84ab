"""Every message of every API, built from its defaults alone, encodes at every version it has
and decodes back: no field's default is one a version cannot carry (which would make a caller
that sets nothing fail with FieldVersionError against an older broker)."""

from __future__ import annotations

import pytest

from groupkit.protocol.registry import load_all
from groupkit.protocol.schema import Message

CASES = [(cls, version) for request in sorted(load_all().values(), key=lambda c: c.API_KEY)
         for cls in (request, request.Response)
         for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)]


@pytest.mark.parametrize("cls,version", CASES,
                         ids=[f"{c.__name__}-v{v}" for c, v in CASES])
def test_a_message_of_defaults_encodes_at_every_version(cls: type[Message], version: int) -> None:
    message = cls()
    assert cls.decode(message.encode(version), version) == message.for_version(version)
