"""Settings of an Admin client."""

from __future__ import annotations

import attrs

from groupkit.config.client import ClientConfig, _at_least


@attrs.frozen(kw_only=True)
class AdminConfig(ClientConfig):
    """Settings of an Admin client: Java's AdminClient bounds each call by
    ``default.api.timeout.ms`` unless the call is given its own timeout."""

    default_api_timeout_ms: int = attrs.field(default=60000, validator=_at_least(1))
