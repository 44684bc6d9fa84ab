"""ApiVersions (key 18): which APIs and versions a broker speaks."""

from __future__ import annotations

from groupkit.errors import ApiKey
from groupkit.protocol.schema import (
    BOOL,
    INT16,
    INT32,
    INT64,
    STRING,
    Array,
    Request,
    Response,
    Struct,
    f,
    message,
    pair,
    struct,
)


@message(api_key=ApiKey.API_VERSIONS, versions="0-4", flexible="3+")
class ApiVersionsRequest(Request):
    client_software_name: str = f(STRING, versions="3+", default="groupkit", ignorable=True)
    client_software_version: str = f(STRING, versions="3+", default="0", ignorable=True)


@struct
class ApiVersion(Struct):
    api_key: int = f(INT16)
    min_version: int = f(INT16)
    max_version: int = f(INT16)


@struct
class SupportedFeatureKey(Struct):
    name: str = f(STRING)
    min_version: int = f(INT16)
    max_version: int = f(INT16)


@struct
class FinalizedFeatureKey(Struct):
    name: str = f(STRING)
    max_version_level: int = f(INT16)
    min_version_level: int = f(INT16)


@message(api_key=ApiKey.API_VERSIONS, versions="0-4", flexible="3+")
class ApiVersionsResponse(Response):
    error_code: int = f(INT16)
    api_keys: list[ApiVersion] = f(Array(ApiVersion))
    throttle_time_ms: int = f(INT32, versions="1+")
    supported_features: list[SupportedFeatureKey] = f(
        Array(SupportedFeatureKey), versions="3+", tag=0)
    finalized_features_epoch: int = f(INT64, versions="3+", tag=1, default=-1)
    finalized_features: list[FinalizedFeatureKey] = f(
        Array(FinalizedFeatureKey), versions="3+", tag=2)
    zk_migration_ready: bool = f(BOOL, versions="3+", tag=3)


pair(ApiVersionsRequest, ApiVersionsResponse)
