"""One local[2] SparkSession for every Spark test of the run (it takes 6-8 s to start).

Spark needs Java 17+: when ``java`` is missing the session fixture fails (never skips) with how
to get it. Under pytest-xdist every Spark test is in the xdist group "spark", so one worker runs
them all and one JVM starts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from groupkit import Admin
from tests.support.spark_topics import write

JAVA_HELP = ("Spark tests need Java 17 or newer: install it (Debian/Ubuntu: apt-get install"
             " openjdk-17-jre-headless) or set JAVA_HOME to a JDK 17 installation")


def _java_major() -> int | None:
    """The major version of the java Spark will start (JAVA_HOME's, else the PATH's)."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if java is None or not os.path.exists(java):
        return None
    shown = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
    found = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    major = _java_major()
    if major is None or major < 17:
        found = "none found" if major is None else f"found Java {major}"
        pytest.fail(f"{JAVA_HELP} ({found})", pytrace=False)
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

