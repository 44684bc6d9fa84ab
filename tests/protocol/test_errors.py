"""The broker error table, error_for_code/check_error, runtime errors, and pickling."""

from __future__ import annotations

import inspect
import pickle
import re

import pytest
from hypothesis import given, strategies as st

import groupkit.errors as errors
from groupkit.errors import (
    BROKER_ERRORS,
    AuthenticationError,
    BrokerError,
    CorruptFrame,
    FencedInstanceIdError,
    FrameTooLarge,
    GroupkitError,
    IllegalStateError,
    KafkaConnectionError,
    MemberIdRequiredError,
    NoBrokersAvailable,
    NotCoordinatorError,
    RebalanceInProgressError,
    RequestTimeoutError,
    SaslAuthenticationFailedError,
    UnknownBrokerError,
    UnknownMemberIdError,
    UnsupportedVersionError,
    check_error,
    error_for_code,
)

# Kafka's own classification (RetriableException subclasses in the Java client, the
# "Retriable" column of the protocol guide's error table).
KAFKA_RETRIABLE = {2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 51, 56, 70, 71, 72, 74, 75, 78,
                   80, 83, 84, 88, 89, 100, 103, 106, 122, 123, 133}


def test_table_covers_minus_one_to_133_without_gaps() -> None:
    assert set(BROKER_ERRORS) == set(range(-1, 134)) - {0}


@pytest.mark.parametrize("code", sorted(BROKER_ERRORS))
def test_every_row_is_complete_and_importable(code: int) -> None:
    cls = BROKER_ERRORS[code]
    assert issubclass(cls, BrokerError)
    assert cls.code == code
    assert re.fullmatch(r"[A-Z][A-Z0-9_]+", cls.name)
    assert cls.description.endswith(".")
    assert cls.hint.endswith(".") and len(cls.hint) > 10
    assert cls.retriable is (code in KAFKA_RETRIABLE)
    assert cls.__name__.endswith("Error")
    assert getattr(errors, cls.__name__) is cls
    assert cls.__name__ in errors.__all__
    assert cls.__module__ == "groupkit.errors"


def test_names_are_unique() -> None:
    names = [cls.name for cls in BROKER_ERRORS.values()]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(("cls", "code", "name", "retriable"), [
    (RebalanceInProgressError, 27, "REBALANCE_IN_PROGRESS", False),
    (UnknownMemberIdError, 25, "UNKNOWN_MEMBER_ID", False),
    (NotCoordinatorError, 16, "NOT_COORDINATOR", True),
    (MemberIdRequiredError, 79, "MEMBER_ID_REQUIRED", False),
    (FencedInstanceIdError, 82, "FENCED_INSTANCE_ID", False),
    (UnsupportedVersionError, 35, "UNSUPPORTED_VERSION", False),
])
def test_named_group_errors(cls: type[BrokerError], code: int, name: str,
                            retriable: bool) -> None:
    assert (cls.code, cls.name, cls.retriable) == (code, name, retriable)
    assert error_for_code(code) is cls


def test_class_names_follow_kafka_names() -> None:
    assert error_for_code(6).__name__ == "NotLeaderOrFollowerError"
    assert error_for_code(13).__name__ == "NetworkError"          # NETWORK_EXCEPTION
    assert error_for_code(17).__name__ == "InvalidTopicError"     # INVALID_TOPIC_EXCEPTION
    assert error_for_code(56).__name__ == "KafkaStorageError"     # KAFKA_STORAGE_ERROR
    assert error_for_code(-1).__name__ == "UnknownServerError"


def test_agrees_with_kafka_python_on_shared_codes() -> None:
    import kafka.errors as kp

    theirs = {c.errno: c for c in vars(kp).values()
              if inspect.isclass(c) and issubclass(c, kp.BrokerResponseError)
              and getattr(c, "errno", None) not in (None, 0)}
    # kafka-python keeps a few pre-rename names and marks CORRUPT_MESSAGE non-retriable;
    # Kafka's Java client (CorruptRecordException is a RetriableException) is the reference.
    renamed = {-1, 6, 10, 17, 39}
    assert set(theirs) <= set(BROKER_ERRORS)
    for code, kp_cls in theirs.items():
        if code not in renamed:
            assert BROKER_ERRORS[code].name == kp_cls.message, code
        if code != 2:
            assert BROKER_ERRORS[code].retriable is bool(kp_cls.retriable), code


def test_message_names_code_and_hint() -> None:
    err = RebalanceInProgressError()
    text = str(err)
    assert text.startswith("REBALANCE_IN_PROGRESS (error 27): The group is rebalancing.")
    assert RebalanceInProgressError.hint in text
    assert err.error_message is None


@pytest.mark.parametrize(("cls", "fix"), [
    (errors.UnreleasedInstanceIdError, "group_instance_id"),
    (errors.UnsupportedAssignorError, "group_remote_assignor"),
    (errors.InvalidRegularExpressionError, "RE2/J"),
    (errors.FencedMemberEpochError, "rejoins by itself"),
    (errors.StaleMemberEpochError, "newer epoch"),
])
def test_consumer_protocol_errors_say_what_to_do(cls: type[BrokerError], fix: str) -> None:
    # groupkit speaks the consumer group protocol (KIP-848): its errors are the member's, with
    # a fix, not a sign of a broker answering the wrong API.
    assert fix in cls.hint and "classic" not in cls.hint


def test_broker_message_is_kept() -> None:
    err = RebalanceInProgressError("group g is rebalancing")
    assert err.error_message == "group g is rebalancing"
    assert "group g is rebalancing" in str(err)
    assert RebalanceInProgressError.hint in str(err)


def test_check_error() -> None:
    check_error(0)
    check_error(0, "ignored")
    with pytest.raises(UnknownMemberIdError, match="member gone") as info:
        check_error(25, "member gone")
    assert info.value.code == 25
    with pytest.raises(NotCoordinatorError) as info2:
        check_error(16)
    assert info2.value.retriable


@pytest.mark.parametrize("code", [134, 999, 32767, -2, -32768])
def test_unknown_codes_give_a_class_carrying_the_code(code: int) -> None:
    cls = error_for_code(code)
    assert issubclass(cls, UnknownBrokerError)
    assert cls.code == code
    assert error_for_code(code) is cls
    with pytest.raises(UnknownBrokerError) as info:
        check_error(code, "new broker says hi")
    assert info.value.code == code
    assert str(code) in str(info.value)
    assert "new broker says hi" in str(info.value)
    assert not info.value.retriable


def test_code_zero_has_no_class() -> None:
    with pytest.raises(ValueError, match="success"):
        error_for_code(0)


@given(st.integers(-(2**15), 2**15 - 1).filter(lambda c: c != 0))
def test_error_for_code_is_total_over_int16(code: int) -> None:
    cls = error_for_code(code)
    assert cls.code == code
    assert isinstance(cls(), GroupkitError)


def test_sasl_failures_are_authentication_errors() -> None:
    for code in (33, 34, 58):
        assert issubclass(error_for_code(code), AuthenticationError)
    assert issubclass(SaslAuthenticationFailedError, BrokerError)
    with pytest.raises(AuthenticationError):
        check_error(58, "Authentication failed during authentication due to invalid credentials")


def test_unsupported_version_is_the_code_35_class_and_usable_locally() -> None:
    err = UnsupportedVersionError("JoinGroupRequest: broker 0-3, groupkit 5-9")
    assert isinstance(err, BrokerError)
    assert err.code == 35
    assert "broker 0-3" in str(err)


def test_runtime_errors() -> None:
    assert KafkaConnectionError.retriable
    assert RequestTimeoutError.retriable
    assert NoBrokersAvailable.retriable
    assert not AuthenticationError.retriable
    assert not IllegalStateError.retriable
    assert issubclass(FrameTooLarge, CorruptFrame)
    for cls in (KafkaConnectionError, RequestTimeoutError, AuthenticationError,
                NoBrokersAvailable, FrameTooLarge, IllegalStateError):
        assert issubclass(cls, GroupkitError)
        assert cls.__doc__


def roundtrip(err: BaseException) -> BaseException:
    return pickle.loads(pickle.dumps(err))


@pytest.mark.parametrize("code", sorted(BROKER_ERRORS))
def test_broker_errors_pickle(code: int) -> None:
    cls = BROKER_ERRORS[code]
    for err in (cls(), cls("broker text")):
        back = roundtrip(err)
        assert type(back) is cls
        assert str(back) == str(err)
        assert back.error_message == err.error_message


def test_unknown_broker_errors_pickle() -> None:
    err = error_for_code(4242)("what is this")
    back = roundtrip(err)
    assert type(back) is error_for_code(4242)
    assert back.code == 4242
    assert str(back) == str(err)


def test_runtime_errors_pickle() -> None:
    for err in (KafkaConnectionError("broker-1:9092 refused"), RequestTimeoutError("30s"),
                NoBrokersAvailable("none"), AuthenticationError("bad"), FrameTooLarge("big"),
                IllegalStateError("closed"), CorruptFrame("short")):
        back = roundtrip(err)
        assert type(back) is type(err)
        assert str(back) == str(err)


def test_errors_cross_a_process_boundary() -> None:
    import concurrent.futures
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        future = pool.submit(check_error, 27, "from a worker")
        with pytest.raises(RebalanceInProgressError, match="from a worker"):
            future.result(timeout=60)
        future = pool.submit(check_error, 5000)
        with pytest.raises(UnknownBrokerError) as info:
            future.result(timeout=60)
        assert info.value.code == 5000


def test_error_code_enum_names_every_row_of_the_error_table() -> None:
    from groupkit.errors import BROKER_ERRORS, ErrorCode

    assert {code: cls.name for code, cls in BROKER_ERRORS.items()} == {
        int(c): c.name for c in ErrorCode if c is not ErrorCode.NONE}


def test_api_key_enum_matches_every_message_class_groupkit_speaks() -> None:
    from groupkit.errors import ApiKey
    from groupkit.protocol.registry import load_all

    for key, cls in load_all().items():
        stem = cls.__name__.removesuffix("Request")
        words = "".join(f"_{ch}" if ch.isupper() else ch.upper() for ch in stem).lstrip("_")
        assert ApiKey(key).name == words, cls.__name__
