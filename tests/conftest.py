"""Suite-wide settings: hypothesis sized for a 2-core CI machine, no per-example deadline."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "groupkit", max_examples=60, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("groupkit")
