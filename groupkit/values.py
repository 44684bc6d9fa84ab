"""Value types of the public API that several layers share."""

from __future__ import annotations

import attrs


@attrs.frozen
class OffsetAndMetadata:
    """A committed position: the next offset to read, with the commit's metadata string and the
    leader epoch of the last record read (-1 when unknown), as Java's OffsetAndMetadata."""

    offset: int
    metadata: str | None = ""
    leader_epoch: int = -1
