"""Client settings, named as the Java client names them (in snake_case), with its defaults.

Every setting is checked when the client is built: a bad value, an unknown name or a
contradiction between two settings raises :class:`~groupkit.errors.ConfigError` naming it.

One module per client (``client`` has what they share), each loaded on first use of its names
(PEP 562): a config class is one of the costlier attrs classes to build at import (its
``__init__`` checks every setting), and a Consumer does not build the Producer's, nor a
Producer the Consumer's. No config module loads the assignors or the group machine (only the
back-off, which ``groupkit.group`` gives without loading the rest): a ConsumerConfig's checks
import them when one is built, so a Producer or an Admin does not pay for them
(tests/runtime/test_import_footprint.py holds it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupkit._lazy import lazy_exports

if TYPE_CHECKING:
    from groupkit.config.admin import AdminConfig as AdminConfig
    from groupkit.config.client import (
        SASL_MECHANISMS as SASL_MECHANISMS,
        SECURITY_PROTOCOLS as SECURITY_PROTOCOLS,
        ClientConfig as ClientConfig,
        parse_bootstrap as parse_bootstrap,
    )
    from groupkit.config.consumer import ConsumerConfig as ConsumerConfig
    from groupkit.config.producer import (
        COMPRESSION_TYPES as COMPRESSION_TYPES,
        ProducerConfig as ProducerConfig,
    )
    from groupkit.config.share import ShareConsumerConfig as ShareConsumerConfig

#: Home module -> the names it provides (the ``TYPE_CHECKING`` imports repeat them).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "groupkit.config.client": ("ClientConfig", "SASL_MECHANISMS", "SECURITY_PROTOCOLS",
                               "parse_bootstrap"),
    "groupkit.config.admin": ("AdminConfig",),
    "groupkit.config.consumer": ("ConsumerConfig",),
    "groupkit.config.producer": ("COMPRESSION_TYPES", "ProducerConfig"),
    "groupkit.config.share": ("ShareConsumerConfig",),
}
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(globals(), _HOMES)
