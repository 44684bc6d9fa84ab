"""TLS settings for broker connections, turned into an ``ssl.SSLContext``.

The ssl module loads only when a context is made (it maps OpenSSL, about 5 MB of resident
memory a plaintext client does not need); the TLS socket lives in tls_socket.py for the same
reason.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import attrs

from groupkit.errors import ConfigError

if TYPE_CHECKING:
    import ssl


@attrs.frozen
class TlsConfig:
    """Where the CA and the client certificate live. The key password never appears in repr.

    ``cafile=None`` trusts the system's CAs. ``check_hostname`` is on by default, as it must be
    unless the broker's certificate does not name the address clients use.
    """

    cafile: str | os.PathLike[str] | None = None
    certfile: str | os.PathLike[str] | None = None
    keyfile: str | os.PathLike[str] | None = None
    password: str | None = attrs.field(default=None, repr=False)
    check_hostname: bool = True

    def context(self) -> ssl.SSLContext:
        """A client SSLContext for these settings; ConfigError if a file cannot be used."""
        import ssl

        try:
            ctx = ssl.create_default_context(cafile=self.cafile)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"tls cafile {self.cafile!s} cannot be loaded ({exc}); "
                              "give a PEM file of CA certificates") from None
        ctx.check_hostname = self.check_hostname
        if self.certfile is not None:
            try:
                ctx.load_cert_chain(self.certfile, self.keyfile, password=self.password)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(
                    f"tls certfile {self.certfile!s} / keyfile {self.keyfile!s} cannot be loaded "
                    f"({type(exc).__name__}: {exc.args[-1] if exc.args else ''}); check the "
                    "files and the key password") from None
        elif self.keyfile is not None:
            raise ConfigError("tls keyfile is set without certfile; give both or neither")
        return ctx
