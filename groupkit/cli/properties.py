"""``--command-config FILE``: Java-style client properties turned into groupkit settings.

The file format is java.util.Properties' (``key=value``, ``key: value`` or ``key value``; ``#``
and ``!`` comments; a trailing backslash continues a line; ``\\t``, ``\\n``, ``\\uXXXX``
escapes). Keys are those of the Java client (and librdkafka's names for the same things).
TLS material must be PEM files: Java key stores (JKS, PKCS12) are refused with a way out.
Keys that mean nothing to an admin client (a consumer's group.id, say) are ignored with a
warning, as Java's AdminClient does.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from groupkit.errors import ConfigError

log = logging.getLogger("groupkit.cli")

#: Java/librdkafka property -> ClientConfig setting, for values taken as they are.
_DIRECT = {
    "bootstrap.servers": "bootstrap_servers",
    "client.id": "client_id",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    # Not a Java client property (Java has no pin): groupkit's api_version, dotted.
    "api.version": "api_version",
}
_INTEGERS = {
    "request.timeout.ms": "request_timeout_ms",
    "default.api.timeout.ms": "default_api_timeout_ms",
    "socket.connection.setup.timeout.ms": "socket_connection_setup_timeout_ms",
    "retry.backoff.ms": "retry_backoff_ms",
}
#: Key stores: their location, type key, and the setting a PEM one fills.
_STORES = {
    "ssl.truststore.location": ("ssl.truststore.type", "ssl_cafile"),
    "ssl.keystore.location": ("ssl.keystore.type", "ssl_certfile"),
}
_KNOWN_ELSEWHERE = {"ssl.truststore.type", "ssl.keystore.type", "sasl.jaas.config",
                    "ssl.endpoint.identification.algorithm", "ssl.truststore.password",
                    "ssl.keystore.password"}
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def read_properties(path: str) -> dict[str, str]:
    """Parse a Java properties file; a missing or unreadable file raises ConfigError."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ConfigError(f"cannot read --command-config {path}: {exc.strerror}; give a"
                          " readable properties file") from exc
    return parse_properties(text)


def parse_properties(text: str) -> dict[str, str]:
    """The key/value pairs of properties ``text`` (later keys win, as in Java)."""
    found: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if _continues(line):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        key, value = _split(line)
        found[_unescape(key)] = _unescape(value)
    if pending:
        key, value = _split(pending)
        found[_unescape(key)] = _unescape(value)
    return found


def _continues(line: str) -> bool:
    """Whether ``line`` ends in an odd number of backslashes."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """Split at the first unescaped ``=``, ``:`` or whitespace."""
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t":
            rest = line[i:].lstrip(" \t")
            if rest[:1] in ("=", ":"):
                rest = rest[1:]
            return line[:i], rest.lstrip(" \t")
        i += 1
    return line, ""


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
            out.append(chr(int(text[i + 2:i + 6], 16)))
            i += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        i += 2
    return "".join(out)


def client_settings(props: dict[str, str], source: str) -> dict[str, Any]:
    """ClientConfig settings from Java client properties; ConfigError naming what is wrong."""
    settings: dict[str, Any] = {}
    for key, value in props.items():
        if key in _DIRECT:
            settings[_DIRECT[key]] = value
        elif key in _INTEGERS:
            try:
                settings[_INTEGERS[key]] = int(value)
            except ValueError:
                raise ConfigError(f"{key} in {source} must be a whole number of milliseconds,"
                                  f" not {value!r}") from None
        elif key in _STORES:
            type_key, setting = _STORES[key]
            kind = props.get(type_key, "JKS").upper()
            if kind != "PEM":
                raise ConfigError(
                    f"{key} in {source} is a {kind} key store; groupkit reads PEM files: set"
                    f" {type_key}=PEM with a PEM file (openssl or keytool can convert it)")
            settings[setting] = value
        elif key == "sasl.jaas.config":
            settings.update(_jaas(value, source))
        elif key == "ssl.endpoint.identification.algorithm":
            settings["ssl_check_hostname"] = value.strip().lower() == "https"
        elif key not in _KNOWN_ELSEWHERE:
            log.warning("%s: %s is not an admin client setting groupkit knows; ignored",
                        source, key)
    if "security_protocol" in settings:
        settings["security_protocol"] = settings["security_protocol"].upper()
    if "sasl_mechanism" in settings:
        settings["sasl_mechanism"] = settings["sasl_mechanism"].upper()
    return settings


def _jaas(value: str, source: str) -> dict[str, str]:
    """username and password from a PlainLoginModule or ScramLoginModule line."""
    options = {k: _unescape(v) for k, v in _JAAS_OPTION.findall(value)}
    if "username" not in options or "password" not in options:
        raise ConfigError(f"sasl.jaas.config in {source} must give username=\"...\" and"
                          " password=\"...\" (PlainLoginModule or ScramLoginModule)")
    return {"sasl_plain_username": options["username"],
            "sasl_plain_password": options["password"]}
