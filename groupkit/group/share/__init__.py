"""The share-group membership machine (KIP-932): its states, error table and machine."""

from groupkit.group.share.error_actions import ShareAction, heartbeat_action
from groupkit.group.share.machine import (
    SHARE_PROTOCOL,
    ShareGroupMachine,
    ShareSubscription,
    ShareUnit,
    new_member_id,
)
from groupkit.group.share.states import ShareMemberState, ShareTrigger

__all__ = [
    "SHARE_PROTOCOL",
    "ShareAction",
    "ShareGroupMachine",
    "ShareMemberState",
    "ShareSubscription",
    "ShareTrigger",
    "ShareUnit",
    "heartbeat_action",
    "new_member_id",
]
