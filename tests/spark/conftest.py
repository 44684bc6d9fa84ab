"""One local[2] SparkSession for every Spark test of the run (it takes 6-8 s to start).

Spark needs Java 17+: when ``java`` is missing the session fixture fails (never skips) with how
to get it. Under pytest-xdist every Spark test is in the xdist group "spark", so one worker runs
them all and one JVM starts.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator

import pytest

from groupkit import Admin
from tests.support.spark_topics import write

JAVA_HELP = ("Spark tests need Java 17 or newer: install it (Debian/Ubuntu: apt-get install"
             " openjdk-17-jre-headless) or set JAVA_HOME to a JDK 17 installation")


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail(JAVA_HELP, pytrace=False)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import groupkit.spark

    session = (SparkSession.builder.master("local[2]").appName("groupkit-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    groupkit.spark.register(session)
    yield session
    session.stop()


@pytest.fixture
def topic_with_batches(kafka_broker: object, unique_name: Callable[[str], str]
                       ) -> Callable[..., str]:
    """Make a topic and write ``batches`` batches of ``per_batch`` records to each partition;
    values are ``b"<partition>-<n>"`` with n counting per partition from ``first``."""
    servers = kafka_broker.bootstrap_servers  # type: ignore[attr-defined]

    def make(partitions: int = 4, batches: int = 5, per_batch: int = 20,
             name: str | None = None, first: int = 0) -> str:
        topic = name or unique_name("spark")
        if name is None:
            with Admin(bootstrap_servers=servers) as admin:
                admin.create_topics([topic], num_partitions=partitions)
        write(servers, topic, partitions, batches, per_batch, first)
        return topic

    return make

