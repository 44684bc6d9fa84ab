"""Every failure a groupkit user can meet, as a named exception with a sentence of what to do.

Broker error codes are one table (the ``_code`` calls below): each gives a ``BrokerError``
subclass named after Kafka's error name (REBALANCE_IN_PROGRESS -> RebalanceInProgressError)
with its code, Kafka's retriable classification, a short description and a hint. The table is
why this module is over 600 lines: one row per Kafka error code, kept together so a code's
behaviour is read in one place. The codes' names are ``ErrorCode`` in ``codes.py``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from groupkit.errors.codes import ApiKey, ErrorCode


class GroupkitError(Exception):
    """Base of every groupkit exception. ``retriable`` says whether trying again may succeed."""

    retriable: bool = False


class CorruptFrame(GroupkitError, ValueError):
    """Bytes from the network could not be decoded; the connection that carried them is unusable."""


class CorruptRecordError(CorruptFrame):
    """A record batch failed its CRC or framing check."""


class NegotiationError(CorruptFrame):
    """A broker's reply during the connection handshake (ApiVersions, SASL) could not be read.

    The message names the API and the version sent; the broker speaks something groupkit cannot
    parse there, so check that the address is a Kafka listener of a supported version.
    """


class ConfigError(GroupkitError, ValueError):
    """A setting has a value groupkit cannot use; the message names the setting."""


class FieldVersionError(GroupkitError, ValueError):
    """A message field was set to a non-default value that the chosen API version cannot carry.

    ``feature`` names what the field is for when its schema says (then encoding raises
    FeatureUnsupportedError instead, naming the release that has it), and ``since`` is the
    lowest version that carries it."""

    def __init__(self, message: str, *, feature: str | None = None,
                 since: int | None = None) -> None:
        super().__init__(message)
        self.feature = feature
        self.since = since


class FrameTooLarge(CorruptFrame):
    """A size prefix claims more bytes than the configured maximum frame size allows."""


class IllegalStateError(GroupkitError):
    """An operation was called in a state that does not allow it (e.g. after close)."""


class KafkaConnectionError(GroupkitError):
    """A connection to a broker failed or was closed; another attempt may succeed."""

    retriable = True


class RequestTimeoutError(GroupkitError):
    """A request got no response within its timeout; the connection is closed and retried."""

    retriable = True


class NoBrokersAvailable(GroupkitError):
    """None of the bootstrap servers could be reached; check bootstrap_servers and the network."""

    retriable = True


class AuthenticationError(GroupkitError):
    """SASL or TLS authentication failed; check the credentials and mechanism, then reconnect."""


class CommitFailedError(GroupkitError):
    """The group rebalanced, so this commit was refused; the member rejoins on its own.

    Process the records of the new assignment; the partitions you were committing for may
    belong to another member now, which starts from the last committed offset.
    """


class NoOffsetForPartitionError(GroupkitError):
    """A partition has no committed offset (or its offset is out of range) and
    auto_offset_reset is "none"; seek() to an offset first, or set auto_offset_reset to
    "earliest" or "latest"."""


class OffsetCommitError(GroupkitError):
    """Some partitions of a commit failed. ``errors`` maps each to its error, ``committed``
    holds the partitions that were stored; commit the failed ones again."""

    def __init__(self, message: str, errors: dict[Any, GroupkitError] | None = None,
                 committed: set[Any] | frozenset[Any] | None = None) -> None:
        super().__init__(message)
        self.errors = dict(errors or {})
        self.committed = frozenset(committed or ())


class WakeupError(GroupkitError):
    """``Consumer.wakeup()`` ended a ``poll`` (or the next one, if none was waiting): the call
    that wants the consumer's thread back, usually a stop, was made on purpose."""


class AbortableTransactionError(GroupkitError):
    """The open transaction cannot commit (its cause says why): call ``abort_transaction()``,
    then begin a new transaction; the producer stays usable (Java's abortable errors)."""


class FatalTransactionError(GroupkitError):
    """The producer can do no more transactional work (its cause says why): close it and create
    a new one (Java's fatal errors; a fenced producer raises ProducerFencedError instead)."""


class TransactionAbortedError(GroupkitError):
    """The record's transaction was aborted before the record was written; send it again in a
    new transaction if it is still wanted."""


class InvalidAssignmentError(GroupkitError):
    """The leader's assignor gave a member no assignment, empty bytes, or named a stranger;
    fix the assignor so every member gets a real assignment."""


class RejectRecord(GroupkitError):
    """Raise it from a ShareWorker's ``process`` (or ``process_batch``) to REJECT the record:
    it is never delivered again, to any member (a record that cannot be processed). Any other
    exception RELEASEs the record for another try, with its delivery count one higher."""


# --- broker error codes ------------------------------------------------------------------------


class BrokerError(GroupkitError):
    """An error code a broker returned. ``str()`` gives name, code, what happened and what to do.

    The instance message is the broker's own ``error_message`` when it sent one, else the
    table's description.
    """

    code: ClassVar[int]
    name: ClassVar[str]
    description: ClassVar[str]
    hint: ClassVar[str]

    def __init__(self, message: str | None = None) -> None:
        super().__init__(*(() if message is None else (message,)))
        self.error_message = message

    def __str__(self) -> str:
        return f"{self.name} (error {self.code}): {self.error_message or self.description} " \
               f"{self.hint}"


_BY_CODE: dict[int, type[BrokerError]] = {}


def _class_name(kafka_name: str) -> str:
    stem = kafka_name.removesuffix("_EXCEPTION").removesuffix("_ERROR")
    return "".join(part.capitalize() for part in stem.split("_")) + "Error"


def _code(code: ErrorCode, retriable: bool, description: str, hint: str,
          base: type[GroupkitError] | None = None) -> type[BrokerError]:
    """Make and register the BrokerError subclass of one error code (one row of the table)."""
    name, number = code.name, int(code)
    bases: tuple[type, ...] = (BrokerError,) if base is None else (BrokerError, base)
    cls = type(_class_name(name), bases, {
        "__module__": __name__,
        "__doc__": f"{name} ({number}): {description} {hint}",
        "code": number, "name": name, "retriable": retriable,
        "description": description, "hint": hint,
    })
    _BY_CODE[number] = cls
    return cls


_RETRY = "groupkit retries it after a backoff; if it persists, check the broker's health and logs."
_METADATA = "groupkit refreshes metadata and retries; if it persists, check the topic and brokers."
_COORDINATOR = "groupkit looks up the group coordinator again and retries."
_FIX_REQUEST = "The request was rejected as invalid: check the setting named in the message."
_ADMIN = "An admin operation failed; fix the request or the cluster state it names."
_INTERNAL = ("An error between brokers or controllers that a consumer should not receive; report"
             " it with the broker logs.")
_PRODUCER = ("A producer or transaction error: the idempotent or transactional producer acts on"
             " it as the Java client does; if it reaches you, the message says what to do.")
_ACL = "Grant the principal the ACL the message names, or use credentials that have it."
_TOKEN = "A delegation-token error: check the token, its owner and the listener it is used on."
_SHARE_SESSION = ("The broker lost or refused this member's share session; the ShareConsumer"
                  " opens a new one on its next fetch (the records it held were released).")
_STREAMS = "An error of Kafka Streams groups (KIP-1071), which groupkit does not use."


UnknownServerError = _code(
    ErrorCode.UNKNOWN_SERVER_ERROR, False, "The broker hit an unexpected error handling the request.",
    "Check the broker logs at this time; retrying may or may not help.")
OffsetOutOfRangeError = _code(
    ErrorCode.OFFSET_OUT_OF_RANGE, False, "The offset is outside the range the broker holds.",
    "The position was deleted by retention or never existed: reset it (auto_offset_reset).")
CorruptMessageError = _code(
    ErrorCode.CORRUPT_MESSAGE, True, "A message failed its CRC, exceeded the size limit or is corrupt.",
    "Retry the request; if it repeats, the data or the producer is at fault.")
UnknownTopicOrPartitionError = _code(
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True, "This broker does not host the topic-partition.",
    "Check the topic exists and is spelled right; " + _METADATA)
InvalidFetchSizeError = _code(
    ErrorCode.INVALID_FETCH_SIZE, False, "The fetch size is invalid.",
    "Set fetch_max_bytes and max_partition_fetch_bytes to positive values.")
LeaderNotAvailableError = _code(
    ErrorCode.LEADER_NOT_AVAILABLE, True, "The partition has no leader; an election is under way.",
    _METADATA)
NotLeaderOrFollowerError = _code(
    ErrorCode.NOT_LEADER_OR_FOLLOWER, True, "This broker is not the leader (or a replica) of the"
    " partition.", _METADATA)
RequestTimedOutError = _code(
    ErrorCode.REQUEST_TIMED_OUT, True, "The broker timed out handling the request.", _RETRY)
BrokerNotAvailableError = _code(
    ErrorCode.BROKER_NOT_AVAILABLE, False, "The broker is not available.",
    "Check that the broker is running and reachable from this host.")
ReplicaNotAvailableError = _code(
    ErrorCode.REPLICA_NOT_AVAILABLE, True, "The replica is not available for the partition.", _METADATA)
MessageTooLargeError = _code(
    ErrorCode.MESSAGE_TOO_LARGE, False, "A message is larger than the broker accepts.",
    "Send smaller messages or raise the broker's message.max.bytes.")
StaleControllerEpochError = _code(
    ErrorCode.STALE_CONTROLLER_EPOCH, False, "The controller moved to another broker.", _INTERNAL)
OffsetMetadataTooLargeError = _code(
    ErrorCode.OFFSET_METADATA_TOO_LARGE, False, "The metadata string of an offset commit is too large.",
    "Commit shorter metadata or raise the broker's offset.metadata.max.bytes.")
NetworkError = _code(
    ErrorCode.NETWORK_EXCEPTION, True, "The broker disconnected before it answered.", _RETRY)
CoordinatorLoadInProgressError = _code(
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, True, "The coordinator is still loading the group's state.",
    "groupkit retries after a backoff; loading finishes on its own.")
CoordinatorNotAvailableError = _code(
    ErrorCode.COORDINATOR_NOT_AVAILABLE, True, "The coordinator is not available.",
    _COORDINATOR + " If it persists, check the __consumer_offsets topic.")
NotCoordinatorError = _code(
    ErrorCode.NOT_COORDINATOR, True, "This broker is not the coordinator of the group.", _COORDINATOR)
InvalidTopicError = _code(
    ErrorCode.INVALID_TOPIC_EXCEPTION, False, "The topic name is invalid or the topic is internal.",
    "Use a legal topic name (letters, digits, '.', '_', '-'; at most 249 characters).")
RecordListTooLargeError = _code(
    ErrorCode.RECORD_LIST_TOO_LARGE, False, "A record batch is larger than the segment size.",
    "Send smaller batches or raise the topic's segment.bytes.")
NotEnoughReplicasError = _code(
    ErrorCode.NOT_ENOUGH_REPLICAS, True, "Fewer in-sync replicas than min.insync.replicas.", _RETRY)
NotEnoughReplicasAfterAppendError = _code(
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, True, "Written, but to fewer in-sync replicas than"
    " required.", _RETRY)
InvalidRequiredAcksError = _code(
    ErrorCode.INVALID_REQUIRED_ACKS, False, "The produce request's acks value is invalid.",
    "Use acks 0, 1 or -1 (all).")
IllegalGenerationError = _code(
    ErrorCode.ILLEGAL_GENERATION, False, "The generation id is not the group's current one.",
    "The group rebalanced without this member: groupkit rejoins; commit again after the rejoin.")
InconsistentGroupProtocolError = _code(
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL, False, "The member's protocols do not match the group's.",
    "Give every member of the group a common assignor (and protocol type 'consumer').")
InvalidGroupIdError = _code(
    ErrorCode.INVALID_GROUP_ID, False, "The group id is invalid.", "Set a non-empty group_id.")
UnknownMemberIdError = _code(
    ErrorCode.UNKNOWN_MEMBER_ID, False, "The coordinator does not know this member id.",
    "The session expired or the member was removed: groupkit rejoins with an empty member id.")
InvalidSessionTimeoutError = _code(
    ErrorCode.INVALID_SESSION_TIMEOUT, False, "The session timeout is outside the broker's range.",
    "Set session_timeout_ms between the broker's group.min.session.timeout.ms and"
    " group.max.session.timeout.ms.")
RebalanceInProgressError = _code(
    ErrorCode.REBALANCE_IN_PROGRESS, False, "The group is rebalancing.",
    "groupkit rejoins the group; offsets committed meanwhile may be refused and must wait.")
InvalidCommitOffsetSizeError = _code(
    ErrorCode.INVALID_COMMIT_OFFSET_SIZE, False, "The offset commit's data size is invalid.",
    "Commit fewer partitions or shorter metadata per request.")
TopicAuthorizationFailedError = _code(
    ErrorCode.TOPIC_AUTHORIZATION_FAILED, False, "Not authorized to access the topic.", _ACL)
GroupAuthorizationFailedError = _code(
    ErrorCode.GROUP_AUTHORIZATION_FAILED, False, "Not authorized to access the group.", _ACL)
ClusterAuthorizationFailedError = _code(
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED, False, "Not authorized for this cluster operation.", _ACL)
InvalidTimestampError = _code(
    ErrorCode.INVALID_TIMESTAMP, False, "A message timestamp is outside the accepted range.",
    "Check the producer's clock and the topic's message.timestamp.*.ms settings.")
UnsupportedSaslMechanismError = _code(
    ErrorCode.UNSUPPORTED_SASL_MECHANISM, False, "The broker does not offer this SASL mechanism.",
    "Set sasl_mechanism to one the listener enables (sasl.enabled.mechanisms).",
    base=AuthenticationError)
IllegalSaslStateError = _code(
    ErrorCode.ILLEGAL_SASL_STATE, False, "The request is not valid in the current SASL state.",
    "Reconnect; the SASL handshake and authenticate steps ran out of order.",
    base=AuthenticationError)


class UnsupportedVersionError(BrokerError):
    """UNSUPPORTED_VERSION (35): the broker and groupkit share no version of an API.

    Raised both for the broker's error code and by groupkit itself when negotiation or a
    message schema finds no usable version.
    """

    code = int(ErrorCode.UNSUPPORTED_VERSION)
    name = "UNSUPPORTED_VERSION"
    retriable = False
    description = "The API version is not supported."
    hint = ("Use a broker and a groupkit version that share this API version; see the versions"
            " in the message.")


_BY_CODE[35] = UnsupportedVersionError


class FeatureUnsupportedError(UnsupportedVersionError):
    """The broker (or the release ``api_version`` pins) is too old for a feature asked for:
    the message names the feature and the first Kafka release that has it. ``feature`` and
    ``release`` hold the same (``release`` None: no release has it)."""

    hint = ("Use a broker of that release or newer (and an api_version pin no older), or do"
            " without the feature.")

    def __init__(self, message: str | None = None, *, feature: str = "",
                 release: str | None = None) -> None:
        super().__init__(message)
        self.feature = feature
        self.release = release


class RequestDroppedError(UnsupportedVersionError):
    """A broker closed the connection right after the same request at the same version, time
    after time, though it lists that version in ApiVersions: it cannot serve it (a broker that
    advertises versions it cannot parse). The message names the request, the version and the
    ``api_version`` pin that avoids it."""

    hint = ("Set api_version to the broker's Kafka release so groupkit sends only the versions"
            " that release speaks.")

TopicAlreadyExistsError = _code(
    ErrorCode.TOPIC_ALREADY_EXISTS, False, "A topic with this name already exists.",
    "Use the existing topic or choose another name.")
InvalidPartitionsError = _code(
    ErrorCode.INVALID_PARTITIONS, False, "The number of partitions is invalid.",
    "Ask for at least one partition (and no fewer than the topic has).")
InvalidReplicationFactorError = _code(
    ErrorCode.INVALID_REPLICATION_FACTOR, False, "The replication factor is invalid.",
    "Use a replication factor between 1 and the number of brokers.")
InvalidReplicaAssignmentError = _code(
    ErrorCode.INVALID_REPLICA_ASSIGNMENT, False, "The replica assignment is invalid.", _ADMIN)
InvalidConfigError = _code(
    ErrorCode.INVALID_CONFIG, False, "A configuration value is invalid.", _ADMIN)
NotControllerError = _code(
    ErrorCode.NOT_CONTROLLER, True, "This broker is not the controller.", _METADATA)
InvalidRequestError = _code(
    ErrorCode.INVALID_REQUEST, False, "The broker found the request malformed or inapplicable.",
    "Check the broker logs; report a groupkit bug if groupkit built the request.")
UnsupportedForMessageFormatError = _code(
    ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, False, "The broker's message format does not support"
    " the request.", "Upgrade the topic's message format (message.format.version).")
PolicyViolationError = _code(
    ErrorCode.POLICY_VIOLATION, False, "The request breaks a policy configured on the broker.", _ADMIN)
OutOfOrderSequenceNumberError = _code(
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, False, "The broker got an out-of-order sequence number.",
    _PRODUCER)
DuplicateSequenceNumberError = _code(
    ErrorCode.DUPLICATE_SEQUENCE_NUMBER, False, "The broker got a duplicate sequence number.",
    _PRODUCER)
InvalidProducerEpochError = _code(
    ErrorCode.INVALID_PRODUCER_EPOCH, False, "The producer's epoch is old.", _PRODUCER)
InvalidTxnStateError = _code(
    ErrorCode.INVALID_TXN_STATE, False, "The transactional operation is invalid in this state.",
    _PRODUCER)
InvalidProducerIdMappingError = _code(
    ErrorCode.INVALID_PRODUCER_ID_MAPPING, False, "The producer id is not assigned to this"
    " transactional id.", _PRODUCER)
InvalidTransactionTimeoutError = _code(
    ErrorCode.INVALID_TRANSACTION_TIMEOUT, False, "The transaction timeout exceeds the broker's"
    " transaction.max.timeout.ms.", _PRODUCER)
ConcurrentTransactionsError = _code(
    ErrorCode.CONCURRENT_TRANSACTIONS, True, "Another operation on the same transaction is ongoing.",
    _RETRY)
TransactionCoordinatorFencedError = _code(
    ErrorCode.TRANSACTION_COORDINATOR_FENCED, False, "The transaction coordinator is no longer"
    " current.", _INTERNAL)
TransactionalIdAuthorizationFailedError = _code(
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, False, "Not authorized for the transactional id.",
    _ACL)
SecurityDisabledError = _code(
    ErrorCode.SECURITY_DISABLED, False, "Security features are disabled on the broker.",
    "Enable an authorizer on the broker, or do not send security requests.")
OperationNotAttemptedError = _code(
    ErrorCode.OPERATION_NOT_ATTEMPTED, False, "The broker skipped this operation because another in"
    " the same request failed.", "Fix the failed operation and send again.")
KafkaStorageError = _code(
    ErrorCode.KAFKA_STORAGE_ERROR, True, "The broker hit a disk error reading or writing the log.",
    _METADATA)
LogDirNotFoundError = _code(
    ErrorCode.LOG_DIR_NOT_FOUND, False, "The log directory is not in the broker's config.", _ADMIN)
SaslAuthenticationFailedError = _code(
    ErrorCode.SASL_AUTHENTICATION_FAILED, False, "SASL authentication failed.",
    "Check the username, password and mechanism for this listener.", base=AuthenticationError)
UnknownProducerIdError = _code(
    ErrorCode.UNKNOWN_PRODUCER_ID, False, "The broker has no state for the producer id.", _PRODUCER)
ReassignmentInProgressError = _code(
    ErrorCode.REASSIGNMENT_IN_PROGRESS, False, "A partition reassignment is in progress.",
    "Wait for the reassignment to finish, then try again.")
DelegationTokenAuthDisabledError = _code(
    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, False, "Delegation tokens are not enabled.", _TOKEN)
DelegationTokenNotFoundError = _code(
    ErrorCode.DELEGATION_TOKEN_NOT_FOUND, False, "The delegation token does not exist.", _TOKEN)
DelegationTokenOwnerMismatchError = _code(
    ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, False, "The principal does not own or renew the token.",
    _TOKEN)
DelegationTokenRequestNotAllowedError = _code(
    ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, False, "Token requests are not allowed on this"
    " channel.", _TOKEN)
DelegationTokenAuthorizationFailedError = _code(
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, False, "Not authorized for the delegation token.",
    _ACL)
DelegationTokenExpiredError = _code(
    ErrorCode.DELEGATION_TOKEN_EXPIRED, False, "The delegation token has expired.", _TOKEN)
InvalidPrincipalTypeError = _code(
    ErrorCode.INVALID_PRINCIPAL_TYPE, False, "The principal type is not supported.", _ADMIN)
NonEmptyGroupError = _code(
    ErrorCode.NON_EMPTY_GROUP, False, "The group still has members.",
    "Stop the group's consumers before deleting it.")
GroupIdNotFoundError = _code(
    ErrorCode.GROUP_ID_NOT_FOUND, False, "The group does not exist.", "Check the group id.")
FetchSessionIdNotFoundError = _code(
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND, True, "The fetch session was not found.",
    "groupkit starts a new fetch session and retries.")
InvalidFetchSessionEpochError = _code(
    ErrorCode.INVALID_FETCH_SESSION_EPOCH, True, "The fetch session epoch is invalid.",
    "groupkit starts a new fetch session and retries.")
ListenerNotFoundError = _code(
    ErrorCode.LISTENER_NOT_FOUND, True, "The leader has no listener matching the one used here.",
    _METADATA + " Also check that every broker defines the same listeners.")
TopicDeletionDisabledError = _code(
    ErrorCode.TOPIC_DELETION_DISABLED, False, "Topic deletion is disabled.",
    "Enable delete.topic.enable on the brokers to delete topics.")
FencedLeaderEpochError = _code(
    ErrorCode.FENCED_LEADER_EPOCH, True, "The request's leader epoch is older than the broker's.",
    _METADATA)
UnknownLeaderEpochError = _code(
    ErrorCode.UNKNOWN_LEADER_EPOCH, True, "The request's leader epoch is newer than the broker's.",
    _METADATA)
UnsupportedCompressionTypeError = _code(
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, False, "The client cannot read the partition's"
    " compression type at this API version.", "Upgrade the client or change the topic's"
    " compression.type.")
StaleBrokerEpochError = _code(
    ErrorCode.STALE_BROKER_EPOCH, False, "The broker epoch has changed.", _INTERNAL)
OffsetNotAvailableError = _code(
    ErrorCode.OFFSET_NOT_AVAILABLE, True, "The leader's high watermark has not caught up after an"
    " election.", _RETRY)
MemberIdRequiredError = _code(
    ErrorCode.MEMBER_ID_REQUIRED, False, "A new member must rejoin with the member id it was given.",
    "groupkit rejoins at once with the member id from the response; no action needed.")
PreferredLeaderNotAvailableError = _code(
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, True, "The preferred leader is not available.",
    _METADATA)
GroupMaxSizeReachedError = _code(
    ErrorCode.GROUP_MAX_SIZE_REACHED, False, "The group has reached its maximum size.",
    "Run fewer consumers in the group or raise the broker's group.max.size.")
FencedInstanceIdError = _code(
    ErrorCode.FENCED_INSTANCE_ID, False, "Another member registered with the same group.instance.id.",
    "Give every static member a unique group_instance_id; this member must stop.")
EligibleLeadersNotAvailableError = _code(
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, True, "No eligible leader is available for the"
    " partition.", _METADATA)
ElectionNotNeededError = _code(
    ErrorCode.ELECTION_NOT_NEEDED, True, "The partition does not need a leader election.", _METADATA)
NoReassignmentInProgressError = _code(
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, False, "No partition reassignment is in progress.", _ADMIN)
GroupSubscribedToTopicError = _code(
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, False, "The group is subscribed to the topic whose offsets"
    " would be deleted.", "Stop the group's subscription to the topic first.")
InvalidRecordError = _code(
    ErrorCode.INVALID_RECORD, False, "The broker rejected a record that failed validation.",
    "Fix the record (for example a null key on a compacted topic).")
UnstableOffsetCommitError = _code(
    ErrorCode.UNSTABLE_OFFSET_COMMIT, True, "Offsets of an open transaction are pending.",
    "groupkit retries the offset fetch after a backoff until the transaction completes.")
ThrottlingQuotaExceededError = _code(
    ErrorCode.THROTTLING_QUOTA_EXCEEDED, True, "The throttling quota was exceeded.", _RETRY)
ProducerFencedError = _code(
    ErrorCode.PRODUCER_FENCED, False, "A newer producer with the same transactional id fenced this one.",
    _PRODUCER)
ResourceNotFoundError = _code(
    ErrorCode.RESOURCE_NOT_FOUND, False, "The request refers to a resource that does not exist.",
    _ADMIN)
DuplicateResourceError = _code(
    ErrorCode.DUPLICATE_RESOURCE, False, "The request names the same resource twice.", _ADMIN)
UnacceptableCredentialError = _code(
    ErrorCode.UNACCEPTABLE_CREDENTIAL, False, "The credential does not meet the broker's criteria.",
    _ADMIN)
InconsistentVoterSetError = _code(
    ErrorCode.INCONSISTENT_VOTER_SET, False, "A voter-only request came from or went to a non-voter.",
    _INTERNAL)
InvalidUpdateVersionError = _code(
    ErrorCode.INVALID_UPDATE_VERSION, False, "The update version is invalid.", _ADMIN)
FeatureUpdateFailedError = _code(
    ErrorCode.FEATURE_UPDATE_FAILED, False, "Finalized features could not be updated.", _ADMIN)
PrincipalDeserializationFailureError = _code(
    ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE, False, "A forwarded request's principal could not be"
    " read.", _INTERNAL)
SnapshotNotFoundError = _code(
    ErrorCode.SNAPSHOT_NOT_FOUND, False, "The snapshot was not found.", _INTERNAL)
PositionOutOfRangeError = _code(
    ErrorCode.POSITION_OUT_OF_RANGE, False, "The snapshot position is out of range.", _INTERNAL)
UnknownTopicIdError = _code(
    ErrorCode.UNKNOWN_TOPIC_ID, True, "This broker does not host the topic id.", _METADATA)
DuplicateBrokerRegistrationError = _code(
    ErrorCode.DUPLICATE_BROKER_REGISTRATION, False, "The broker id is already in use.", _INTERNAL)
BrokerIdNotRegisteredError = _code(
    ErrorCode.BROKER_ID_NOT_REGISTERED, False, "The broker id was not registered.", _INTERNAL)
InconsistentTopicIdError = _code(
    ErrorCode.INCONSISTENT_TOPIC_ID, True, "The log's topic id does not match the request's.",
    _METADATA)
InconsistentClusterIdError = _code(
    ErrorCode.INCONSISTENT_CLUSTER_ID, False, "The cluster id does not match the server's.",
    _INTERNAL)
TransactionalIdNotFoundError = _code(
    ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, False, "The transactional id was not found.", _PRODUCER)
FetchSessionTopicIdError = _code(
    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, True, "The fetch session used topic ids inconsistently.",
    "groupkit starts a new fetch session and retries.")
IneligibleReplicaError = _code(
    ErrorCode.INELIGIBLE_REPLICA, False, "The new ISR has an ineligible replica.", _INTERNAL)
NewLeaderElectedError = _code(
    ErrorCode.NEW_LEADER_ELECTED, False, "The partition state was updated but the leader changed.",
    _INTERNAL)
OffsetMovedToTieredStorageError = _code(
    ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE, False, "The offset has moved to tiered storage.",
    "Fetch from a broker version that serves tiered storage to this client, or reset the offset.")
FencedMemberEpochError = _code(
    ErrorCode.FENCED_MEMBER_EPOCH, False, "The coordinator fenced the member epoch.",
    "The member rejoins by itself with epoch 0 and reports its partitions lost; seen often,"
    " its heartbeats or polls are too slow for the broker's session"
    " (group.consumer.session.timeout.ms) or max_poll_interval_ms.")
UnreleasedInstanceIdError = _code(
    ErrorCode.UNRELEASED_INSTANCE_ID, False, "Another member still holds the instance id.",
    "A static member that crashed holds its group_instance_id until its session ends (the"
    " broker's group.consumer.session.timeout.ms): start again after that, or give each running"
    " member an instance id of its own.")
UnsupportedAssignorError = _code(
    ErrorCode.UNSUPPORTED_ASSIGNOR, False, "The group does not support the assignor.",
    "Set group_remote_assignor to one of the broker's group.consumer.assignors (e.g. 'uniform'"
    " or 'range'), or leave it None for the broker's default.")
StaleMemberEpochError = _code(
    ErrorCode.STALE_MEMBER_EPOCH, False, "The member epoch is stale.",
    "The member's epoch moved on while the request was in flight; commits and offset reads"
    " are retried with the newer epoch while the member holds one, so seen here it had left"
    " or been fenced: try again once it is back in the group.")
MismatchedEndpointTypeError = _code(
    ErrorCode.MISMATCHED_ENDPOINT_TYPE, False, "The request went to an endpoint of the wrong type.",
    "Point bootstrap_servers at broker listeners, not controller listeners.")
UnsupportedEndpointTypeError = _code(
    ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, False, "This endpoint type is not supported.", _INTERNAL)
UnknownControllerIdError = _code(
    ErrorCode.UNKNOWN_CONTROLLER_ID, False, "The controller id is not known.", _INTERNAL)
UnknownSubscriptionIdError = _code(
    ErrorCode.UNKNOWN_SUBSCRIPTION_ID, False, "The telemetry subscription id is invalid or outdated.",
    "Client telemetry (KIP-714) is not used by groupkit; report where the request came from.")
TelemetryTooLargeError = _code(
    ErrorCode.TELEMETRY_TOO_LARGE, False, "The telemetry push is larger than the broker accepts.",
    "Client telemetry (KIP-714) is not used by groupkit; report where the request came from.")
InvalidRegistrationError = _code(
    ErrorCode.INVALID_REGISTRATION, False, "The controller found the broker registration invalid.",
    _INTERNAL)
TransactionAbortableError = _code(
    ErrorCode.TRANSACTION_ABORTABLE, False, "The transaction failed but can be aborted.", _PRODUCER)
InvalidRecordStateError = _code(
    ErrorCode.INVALID_RECORD_STATE, False, "The record state is invalid for acknowledgement:"
    " it is no longer acquired by this member (its acquisition lock expired, or another member"
    " holds it now).", "The broker will deliver it again (or already has); make processing"
    " idempotent, or acknowledge well within the lock (group.share.record.lock.duration.ms).")
ShareSessionNotFoundError = _code(
    ErrorCode.SHARE_SESSION_NOT_FOUND, True, "The share session was not found.", _SHARE_SESSION)
InvalidShareSessionEpochError = _code(
    ErrorCode.INVALID_SHARE_SESSION_EPOCH, True, "The share session epoch is invalid.",
    _SHARE_SESSION)
FencedStateEpochError = _code(
    ErrorCode.FENCED_STATE_EPOCH, False, "The share-group state epoch did not match.",
    _INTERNAL)
InvalidVoterKeyError = _code(
    ErrorCode.INVALID_VOTER_KEY, False, "The voter key does not match the replica's.", _INTERNAL)
DuplicateVoterError = _code(
    ErrorCode.DUPLICATE_VOTER, False, "The voter is already in the voter set.", _INTERNAL)
VoterNotFoundError = _code(
    ErrorCode.VOTER_NOT_FOUND, False, "The voter is not in the voter set.", _INTERNAL)
InvalidRegularExpressionError = _code(
    ErrorCode.INVALID_REGULAR_EXPRESSION, False, "The subscription regular expression is invalid.",
    "Fix the subscription pattern: under group_protocol='consumer' the broker compiles it (RE2/J"
    " syntax) and matches whole topic names.")
RebootstrapRequiredError = _code(
    ErrorCode.REBOOTSTRAP_REQUIRED, False, "The client's metadata is stale beyond repair.",
    "Reconnect through bootstrap_servers and fetch metadata afresh.")
StreamsInvalidTopologyError = _code(
    ErrorCode.STREAMS_INVALID_TOPOLOGY, False, "The Streams topology is invalid.", _STREAMS)
StreamsInvalidTopologyEpochError = _code(
    ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH, False, "The Streams topology epoch is invalid.",
    _STREAMS)
StreamsTopologyFencedError = _code(
    ErrorCode.STREAMS_TOPOLOGY_FENCED, False, "The Streams topology epoch is outdated.", _STREAMS)
ShareSessionLimitReachedError = _code(
    ErrorCode.SHARE_SESSION_LIMIT_REACHED, True, "The broker's share-session limit is reached.",
    "The ShareConsumer retries after a back-off; run fewer share consumers per broker or raise"
    " the broker's group.share.max.share.sessions.")


class UnknownBrokerError(BrokerError):
    """An error code groupkit's table does not know (a broker newer than groupkit).

    ``error_for_code`` makes one subclass per unknown code so ``code`` is still a class
    attribute; instances pickle by code, since those classes are not module attributes.
    """

    name = "UNKNOWN_ERROR_CODE"
    retriable = False
    description = "The broker returned an error code groupkit does not know."
    hint = "Upgrade groupkit, or look the code up in the broker version's protocol guide."

    def __reduce__(self) -> tuple[Any, ...]:
        return _unknown_instance, (self.code, self.error_message)


_UNKNOWN: dict[int, type[UnknownBrokerError]] = {}


def _unknown_instance(code: int, message: str | None) -> BrokerError:
    return error_for_code(code)(message)


def error_for_code(code: int) -> type[BrokerError]:
    """The exception class of a broker error code; unknown codes get an UnknownBrokerError."""
    known = _BY_CODE.get(code)
    if known is not None:
        return known
    if code == 0:
        raise ValueError("error code 0 (NONE) means success and has no exception class")
    cls = _UNKNOWN.get(code)
    if cls is None:
        cls = _UNKNOWN[code] = type(f"UnknownBrokerError{code}", (UnknownBrokerError,), {
            "__module__": __name__, "code": code})
    return cls


def check_error(code: int, message: str | None = None) -> None:
    """Raise the exception of a non-zero broker error code, carrying the broker's message."""
    if code:
        raise error_for_code(code)(message)


#: Every broker error class by code (code 0, NONE, has none).
BROKER_ERRORS: dict[int, type[BrokerError]] = dict(sorted(_BY_CODE.items()))

__all__ = [
    "AbortableTransactionError",
    "ApiKey",
    "AuthenticationError",
    "BROKER_ERRORS",
    "BrokerError",
    "ConfigError",
    "CorruptFrame",
    "CorruptRecordError",
    "ErrorCode",
    "FatalTransactionError",
    "FieldVersionError",
    "FrameTooLarge",
    "GroupkitError",
    "IllegalStateError",
    "KafkaConnectionError",
    "NoBrokersAvailable",
    "RequestTimeoutError",
    "TransactionAbortedError",
    "UnknownBrokerError",
    "WakeupError",
    "check_error",
    "error_for_code",
    *sorted(cls.__name__ for cls in BROKER_ERRORS.values()),
]
