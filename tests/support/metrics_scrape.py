"""Scraping a groupkit metrics server over real HTTP: samples by name and labels, /healthz."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples:
    """Every sample of ``/metrics``, parsed with prometheus-client's own text parser."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        return samples_of(reply.read().decode())


def samples_of(text: str) -> Samples:
    """Every sample of a Prometheus text exposition (a scrape, or ``generate_latest``)."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def values(samples: Samples, name: str, **labels: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples named ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return {k: v for (n, k), v in samples.items() if n == name and want <= set(k)}


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """The one sample matching, None when there is none (two or more is a test error)."""
    found = values(samples, name, **labels)
    assert len(found) <= 1, f"{name} {labels} matches {sorted(found)}"
    return next(iter(found.values()), None)


def healthz(port: int) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON body) of ``/healthz``."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
