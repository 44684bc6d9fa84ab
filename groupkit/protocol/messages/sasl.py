"""SaslHandshake (key 17) and SaslAuthenticate (key 36): SASL mechanism choice and exchange.

SaslHandshake v0 is followed by raw SASL tokens on the socket; v1 says the tokens travel in
SaslAuthenticate requests instead. SaslAuthenticate v1 adds the session lifetime (KIP-368), after
which the client must re-authenticate; v2 is its first flexible version.
"""

from __future__ import annotations

from groupkit.errors import ApiKey
from groupkit.protocol.schema import (
    BYTES,
    INT16,
    INT64,
    STRING,
    Array,
    Request,
    Response,
    f,
    message,
    pair,
)


@message(api_key=ApiKey.SASL_HANDSHAKE, versions="0-1", flexible=None)
class SaslHandshakeRequest(Request):
    mechanism: str = f(STRING)


@message(api_key=ApiKey.SASL_HANDSHAKE, versions="0-1", flexible=None)
class SaslHandshakeResponse(Response):
    error_code: int = f(INT16)
    mechanisms: list[str] = f(Array(STRING))


pair(SaslHandshakeRequest, SaslHandshakeResponse)


@message(api_key=ApiKey.SASL_AUTHENTICATE, versions="0-2", flexible="2+")
class SaslAuthenticateRequest(Request):
    auth_bytes: bytes = f(BYTES)


@message(api_key=ApiKey.SASL_AUTHENTICATE, versions="0-2", flexible="2+")
class SaslAuthenticateResponse(Response):
    error_code: int = f(INT16)
    error_message: str | None = f(STRING, nullable="0+", default="")
    auth_bytes: bytes = f(BYTES)
    session_lifetime_ms: int = f(INT64, versions="1+", default=0, ignorable=True)


pair(SaslAuthenticateRequest, SaslAuthenticateResponse)
