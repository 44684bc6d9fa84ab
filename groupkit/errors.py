"""Every failure a groupkit user can meet, as a named exception with a sentence of what to do."""

from __future__ import annotations


class GroupkitError(Exception):
    """Base of every groupkit exception. ``retriable`` says whether trying again may succeed."""

    retriable: bool = False


class CorruptFrame(GroupkitError, ValueError):
    """Bytes from the network could not be decoded; the connection that carried them is unusable."""


class CorruptRecordError(CorruptFrame):
    """A record batch failed its CRC or framing check."""


class ConfigError(GroupkitError, ValueError):
    """A setting has a value groupkit cannot use; the message names the setting."""


class FieldVersionError(GroupkitError, ValueError):
    """A message field was set to a non-default value that the chosen API version cannot carry."""


class UnsupportedVersionError(GroupkitError):
    """The broker and groupkit share no version of an API that is needed."""
