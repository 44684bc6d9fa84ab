"""The consumer group protocol of KIP-848: the member machine, its states and error table."""

from groupkit.group.kip848.heartbeat import Subscription, SubscriptionHolder
from groupkit.group.kip848.machine import ConsumerGroupMachine
from groupkit.group.kip848.states import MemberState, Trigger

__all__ = ["ConsumerGroupMachine", "MemberState", "Subscription", "SubscriptionHolder", "Trigger"]
