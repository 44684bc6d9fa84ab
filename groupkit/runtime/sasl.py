"""SASL for broker connections: PLAIN and SCRAM-SHA-256/512 (RFC 5802) client sides.

The mechanisms are pure: ``ScramClient`` turns server messages into client messages and checks
the server's signature. ``authenticate`` drives SaslHandshake v1 + SaslAuthenticate through an
``exchange`` callable that the connection provides, so this module never touches a socket.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from types import ModuleType
from typing import Literal

import attrs

from groupkit.errors import AuthenticationError, ConfigError, ErrorCode, check_error
from groupkit.protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from groupkit.protocol.schema import Request, Response

Mechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
MECHANISMS: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def _secrets() -> ModuleType:
    """The secrets module, loaded with hashlib and hmac only when SCRAM is used: they load
    OpenSSL's libcrypto, several MB of resident memory a plain consumer does not need."""
    import secrets

    return secrets


#: Sends one request at an explicit version and returns its decoded response.
Exchange = Callable[[Request, int], Response]


def _check_mechanism(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if value not in MECHANISMS:
        raise ConfigError(f"sasl mechanism must be one of {', '.join(MECHANISMS)}, not {value!r}")


@attrs.frozen
class SaslCredentials:
    """Who to log in as. The password never appears in repr, logs or exceptions."""

    mechanism: str = attrs.field(validator=_check_mechanism)
    username: str
    password: str = attrs.field(repr=False)


def plain_message(username: str, password: str) -> bytes:
    """The single PLAIN message (RFC 4616): empty authzid, NUL, username, NUL, password."""
    return b"\0" + username.encode() + b"\0" + password.encode()


def _saslname(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def _parse(message: bytes) -> dict[str, str]:
    try:
        text = message.decode()
    except UnicodeDecodeError:
        raise AuthenticationError("the broker's SCRAM message is not UTF-8") from None
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            fields[key] = value
    return fields


@attrs.define
class ScramClient:
    """The client side of one SCRAM exchange (RFC 5802, without channel binding).

    Call ``first_message()``, then ``final_message(server_first)``, then
    ``verify_server_final(server_final)``, which raises AuthenticationError unless the server
    proved it knows the password too.
    """

    mechanism: str
    username: str
    password: str = attrs.field(repr=False)
    nonce: str = attrs.field(factory=lambda: _secrets().token_urlsafe(24), repr=False)
    _first_bare: str = attrs.field(default="", init=False, repr=False)
    _server_signature: bytes = attrs.field(default=b"", init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.mechanism not in _HASHES:
            raise ConfigError(f"SCRAM mechanism must be one of {', '.join(_HASHES)}, "
                              f"not {self.mechanism!r}")

    def _hmac(self, key: bytes, data: bytes) -> bytes:
        import hmac

        return hmac.new(key, data, _HASHES[self.mechanism]).digest()

    def first_message(self) -> bytes:
        """client-first-message: GS2 header ``n,,`` then ``n=user,r=nonce``."""
        self._first_bare = f"n={_saslname(self.username)},r={self.nonce}"
        return f"n,,{self._first_bare}".encode()

    def final_message(self, server_first: bytes) -> bytes:
        """client-final-message with the proof, computed from the server's salt and iterations."""
        fields = _parse(server_first)
        if "e" in fields:
            raise AuthenticationError(f"the broker refused the SCRAM login: {fields['e']}")
        try:
            server_nonce = fields["r"]
            salt = base64.b64decode(fields["s"], validate=True)
            iterations = int(fields["i"])
        except (KeyError, ValueError):
            raise AuthenticationError("the broker's SCRAM server-first message is malformed; "
                                      "check that the mechanism matches the listener") from None
        if not server_nonce.startswith(self.nonce) or iterations < 1:
            raise AuthenticationError("the broker's SCRAM nonce or iteration count is invalid; "
                                      "the server may not be who it claims")
        import hashlib

        name = _HASHES[self.mechanism]
        salted = hashlib.pbkdf2_hmac(name, self.password.encode(), salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(name, client_key).digest()
        without_proof = f"c=biws,r={server_nonce}"
        auth_message = f"{self._first_bare},{server_first.decode()},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify_server_final(self, server_final: bytes) -> None:
        """Check the server's ``v=`` signature; raise AuthenticationError if it is wrong."""
        fields = _parse(server_final)
        if "e" in fields:
            raise AuthenticationError(f"the broker refused the SCRAM login: {fields['e']}")
        try:
            signature = base64.b64decode(fields["v"], validate=True)
        except (KeyError, ValueError):
            raise AuthenticationError("the broker's SCRAM server-final message is malformed") \
                from None
        import hmac

        if not self._server_signature or not hmac.compare_digest(signature,
                                                                 self._server_signature):
            raise AuthenticationError("the broker's SCRAM server signature is wrong: it does not "
                                      "know this user's credentials; do not trust this server")


def _authenticate_step(exchange: Exchange, version: int, token: bytes) -> bytes:
    response = exchange(SaslAuthenticateRequest(auth_bytes=token), version)
    assert isinstance(response, SaslAuthenticateResponse)
    check_error(response.error_code, response.error_message)
    return response.auth_bytes


def authenticate(exchange: Exchange, credentials: SaslCredentials,
                 authenticate_version: int) -> None:
    """Log in with SaslHandshake v1 then SaslAuthenticate; AuthenticationError on refusal."""
    handshake = exchange(SaslHandshakeRequest(mechanism=credentials.mechanism), 1)
    assert isinstance(handshake, SaslHandshakeResponse)
    if handshake.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
        offered = ", ".join(handshake.mechanisms) or "none"
        raise AuthenticationError(
            f"the broker does not offer SASL {credentials.mechanism} on this listener (it offers "
            f"{offered}); set the mechanism to one it offers")
    check_error(handshake.error_code)
    if credentials.mechanism == "PLAIN":
        _authenticate_step(exchange, authenticate_version,
                           plain_message(credentials.username, credentials.password))
        return
    scram = ScramClient(credentials.mechanism, credentials.username, credentials.password)
    server_first = _authenticate_step(exchange, authenticate_version, scram.first_message())
    server_final = _authenticate_step(exchange, authenticate_version,
                                      scram.final_message(server_first))
    scram.verify_server_final(server_final)
