"""A consumer imports only what it uses: what an idle member's resident memory is made of.

Measured one import at a time (Python 3.11): the crc32c package ~5.3 MB (it reads its own
distribution metadata on import), ssl ~5.1 MB, importlib.metadata ~4.6 MB, hashlib ~3.7 MB,
the three codec libraries ~3.2 MB. Each is loaded only when a feature needs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from groupkit.protocol import native
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker  # noqa: F401
from tests.support.broker_data import create_topic

ROOT = Path(__file__).resolve().parent.parent.parent

HEAVY = ["ssl", "hashlib", "hmac", "importlib.metadata", "email", "argparse", "lz4",
         "snappy", "zstandard", "asyncio"]


def _loaded_after(code: str) -> list[str]:
    probe = (f"import sys, json\n{code}\n"
             f"print(json.dumps(sorted(m for m in {HEAVY + ['crc32c']!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60, env={**os.environ})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_plaintext_consumer_and_producer_load_none_of_the_heavy_modules() -> None:
    loaded = _loaded_after("import groupkit.consumer, groupkit.producer, groupkit.group_consumer")
    # Without the C extension the crc32c package is the checksum, so it loads then.
    assert loaded == ([] if native.available else ["crc32c"])


def test_building_a_consumer_with_built_in_assignors_loads_none_of_them() -> None:
    # The config's assignor check once scanned the plugin entry points for every name.
    loaded = _loaded_after(
        "from groupkit.consumer import Consumer\n"
        "Consumer(bootstrap_servers='127.0.0.1:9', group_id='g').close()\n"
        "Consumer(bootstrap_servers='127.0.0.1:9', group_id='g', assignors=['range']).close()\n")
    assert loaded == ([] if native.available else ["crc32c"])


#: What a Producer does not use: the assignors (the sticky ones' machinery too), the group machine
#: and its tables, the hook events, the group and fetch schemas, the record readers, SASL; and
#: the transaction APIs' schemas, which a producer that is not transactional never sends.
NOT_FOR_A_PRODUCER = (
    "groupkit.config.consumer", "groupkit.config.share", "groupkit.config.admin", "assignors", "assignors.sticky", "assignors.sticky_data", "assignors.registry",
    "groupkit.group.machine", "groupkit.group.states", "groupkit.group.consumer_protocol",
    "groupkit.hooks", "groupkit.protocol.messages.group", "groupkit.protocol.messages.fetch",
    "groupkit.protocol.messages.offset_commit", "groupkit.protocol.messages.offset_fetch",
    "groupkit.protocol.messages.list_offsets", "groupkit.protocol.records.reader",
    "groupkit.protocol.records.batch_read", "groupkit.runtime.sasl",
    # What only a transactional producer sends (an idempotent one, the default, does not).
    "groupkit.protocol.messages.txn",
)


@pytest.mark.broker
def test_building_and_using_a_producer_loads_nothing_it_does_not_use(
        kafka_broker: LocalBroker) -> None:  # noqa: F811
    # groupkit.config once imported the assignors (and their sticky machinery) and the group
    # machine, and groupkit.protocol every API's schema: a fifth of a second before a send.
    probe = (
        "import sys, json\n"
        "from groupkit.producer import Producer\n"
        f"with Producer(bootstrap_servers={kafka_broker.bootstrap_servers!r}) as p:\n"
        "    p.send('footprint', b'v').result(30)\n"
        f"print(json.dumps(sorted(m for m in {NOT_FOR_A_PRODUCER!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60, env={**os.environ})
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


#: The other membership protocols and what only they send.
OTHER_PROTOCOLS = ("groupkit.group.kip848", "groupkit.group.kip848.machine",
                   "groupkit.protocol.messages.consumer_group")


def test_a_consumer_builds_no_other_clients_settings() -> None:
    # One config module held every client's settings class, each costly to build at import.
    loaded = _loaded_modules(
        "from groupkit.consumer import Consumer\n"
        "Consumer(bootstrap_servers='127.0.0.1:9', group_id='g').close()\n",
        ("groupkit.config.producer", "groupkit.config.share", "groupkit.config.admin",
         "difflib"))
    assert loaded == []


def test_a_subscribing_consumer_loads_the_pattern_watch_and_the_offset_values_at_use() -> None:
    # A pattern subscription's matcher, and the offset and group-metadata values (commits,
    # transactions), were imported by every consumer before its first request.
    code = ("from groupkit.consumer import Consumer\n"
            "c = Consumer(bootstrap_servers='127.0.0.1:9', group_id='g')\n"
            "c.subscribe(['t'])\n"
            "c.poll(0.05)\n")
    modules = ("groupkit.runtime.pattern_watch", "groupkit.values")
    assert _loaded_modules(code + "c.close(1)\n", modules) == []
    assert _loaded_modules(code + "c.group_metadata()\nc.subscribe(pattern='t.*')\n"
                           "c.close(1)\n", modules) == sorted(modules)


def _loaded_modules(code: str, modules: tuple[str, ...]) -> list[str]:
    probe = (f"import sys, json\n{code}\n"
             f"print(json.dumps(sorted(m for m in {modules!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60, env={**os.environ})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_classic_consumer_loads_no_other_membership_protocol() -> None:
    # The KIP-848 machine was imported by every Consumer, though only
    # group_protocol='consumer' uses it.
    probe = (
        "import sys, json\n"
        "from groupkit.consumer import Consumer\n"
        "from groupkit.group_consumer import GroupConsumer\n"
        "c = Consumer(bootstrap_servers='127.0.0.1:9', group_id='g')\n"
        "c.subscribe(['t'])\n"
        "c.close()\n"
        f"print(json.dumps(sorted(m for m in {OTHER_PROTOCOLS!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60, env={**os.environ})
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_each_feature_loads_its_module_when_used() -> None:
    loaded = _loaded_after(
        "from groupkit.protocol.compression import compress, decompress\n"
        "decompress(3, compress(3, b'x' * 100), max_size=1000)\n"
        "from groupkit.runtime.tls import TlsConfig\n"
        "TlsConfig().context()\n"
        "from groupkit.runtime.sasl import ScramClient\n"
        "ScramClient('SCRAM-SHA-256', 'u', 'p')\n"
        "from assignors.registry import available\n"
        "available()\n")
    assert {"lz4", "ssl", "hashlib", "importlib.metadata"} <= set(loaded)
    assert "snappy" not in loaded and "zstandard" not in loaded


#: What a subscribing member needs only once it has partitions: the fetcher and the offset
#: store, their APIs' schemas and the record readers.
FETCH_SIDE = ("groupkit.runtime.fetcher", "groupkit.runtime.fetch_loop",
              "groupkit.runtime.fetched", "groupkit.runtime.offsets",
              "groupkit.protocol.messages.fetch", "groupkit.protocol.messages.list_offsets",
              "groupkit.protocol.messages.offset_fetch", "groupkit.protocol.messages.offset_commit",
              "groupkit.protocol.records.reader", "groupkit.protocol.records.batch_read")


def _fetch_side_loaded(code: str) -> list[str]:
    probe = (f"import sys, json\n{code}\n"
             f"print(json.dumps(sorted(m for m in {FETCH_SIDE!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60, env={**os.environ})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_consumer_loads_its_fetch_side_at_its_first_assignment() -> None:
    # Built, subscribed and polled (the broker unreachable, so no join): nothing of the fetch
    # side, which was a quarter of the import a member paid before its JoinGroup could go out.
    # The public names are the same: ConsumerRecord still comes from groupkit.consumer.
    assert _fetch_side_loaded(
        "from groupkit.consumer import Consumer\n"
        "c = Consumer(bootstrap_servers='127.0.0.1:9', group_id='g')\n"
        "c.subscribe(['t'])\n"
        "c.poll(0.05)\n"
        "c.close(1)\n") == []
    assert _fetch_side_loaded(
        "from groupkit.consumer import Consumer\n"
        "from assignors import TopicPartition\n"
        "c = Consumer(bootstrap_servers='127.0.0.1:9', group_id='g')\n"
        "c.assign([TopicPartition('t', 0)])\n"
        "c.close(1)\n") == sorted(FETCH_SIDE)
    assert "groupkit.runtime.fetched" in _fetch_side_loaded(
        "from groupkit.consumer import ConsumerRecord\n"
        "import groupkit\n"
        "assert groupkit.ConsumerRecord is ConsumerRecord\n")


def test_a_fetch_side_that_cannot_load_fails_at_its_use_on_the_applications_thread() -> None:
    # The import is deferred, never hidden: the first call that needs it raises the ImportError.
    probe = (
        "import sys\n"
        "sys.modules['groupkit.runtime.fetcher'] = None\n"
        "from groupkit.consumer import Consumer\n"
        "from assignors import TopicPartition\n"
        "c = Consumer(bootstrap_servers='127.0.0.1:9', group_id='g')\n"
        "try:\n"
        "    c.assign([TopicPartition('t', 0)])\n"
        "except ImportError as exc:\n"
        "    print('ImportError', exc)\n"
        "c.close(1)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60, env={**os.environ})
    assert out.stdout.startswith("ImportError")


@pytest.mark.broker
def test_a_new_member_prepares_its_first_fetch_while_the_coordinator_holds_its_join(
        kafka_broker: LocalBroker) -> None:  # noqa: F811
    # Tansu holds a new group's JoinGroup for its initial rebalance delay (seconds); the
    # fetch side loads meanwhile, on the metadata thread the join starts, and the connection
    # of the first OffsetFetch opens (the committed offsets' to the coordinator), so all is in
    # before the JoinGroup's answer (the Joined event, on the runner thread) and the
    # assignment; the leader's fetch connection waits for the assignment, as Java's does.
    topic = f"footprint-{os.getpid()}-{time.monotonic_ns()}"
    create_topic(kafka_broker.bootstrap_servers, topic, 1)
    probe = (
        "import sys, json, threading\n"
        "from groupkit.consumer import Consumer\n"
        "from groupkit.hooks import Joined\n"
        "from groupkit.runtime.cluster import FETCH\n"
        "seen = []\n"
        "joined = threading.Event()\n"
        "def hook(event):\n"
        "    if isinstance(event, Joined) and not joined.is_set():\n"
        f"        seen.extend(m for m in {FETCH_SIDE!r} if m in sys.modules)\n"
        "        from groupkit.runtime.offsets import COMMIT_PURPOSE\n"
        "        cluster = c._cluster\n"
        f"        leader = cluster.metadata.leader_for({topic!r}, 0)\n"
        "        coordinator = cluster.coordinator(group)\n"
        "        seen.append(cluster.connection(leader, FETCH).connected)\n"
        "        seen.append(cluster.connection(coordinator, COMMIT_PURPOSE).connected)\n"
        "        joined.set()\n"
        f"group = 'g-' + {topic!r}\n"
        f"c = Consumer(bootstrap_servers={kafka_broker.bootstrap_servers!r}, group_id=group,\n"
        "             session_timeout_ms=6000, heartbeat_interval_ms=500, hooks=[hook])\n"
        f"c.subscribe([{topic!r}])\n"
        "while not joined.is_set():\n"
        "    c.poll(0.1)\n"
        "    assert not c.assignment() or joined.is_set()\n"
        "c.close(5)\n"
        "print(json.dumps(seen))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60, env={**os.environ})
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [*FETCH_SIDE, False, True]


@pytest.mark.broker
def test_a_member_without_hooks_joins_and_syncs_without_the_hook_events(
        kafka_broker: LocalBroker) -> None:  # noqa: F811
    # The group runner built an event for every state change, rebalance, join, sync and
    # answer whether or not anyone listened, so a fresh member imported all of them (25 attrs
    # classes) before its JoinGroup could go out; built only for hooks, they load with the
    # first hook, or with the fetch side (whose modules import them), which is looked at here
    # as it loads: at the assignment, after the join and the sync (the preload and the
    # connecting ahead, which load it during the join, are off).
    topic = f"footprint-{os.getpid()}-{time.monotonic_ns()}"
    create_topic(kafka_broker.bootstrap_servers, topic, 2)
    probe = (
        "import sys\n"
        "import groupkit.consumer as module\n"
        "seen = []\n"
        "load = module._fetch_side\n"
        "def looked():\n"
        "    seen.append('groupkit.hooks' in sys.modules)\n"
        "    return load()\n"
        "module._fetch_side = looked\n"
        "module._preload_fetch_side = lambda: None\n"
        "module.Consumer._connect_ahead = lambda self: None\n"
        f"c = module.Consumer(bootstrap_servers={kafka_broker.bootstrap_servers!r},\n"
        f"                    group_id='g-' + {topic!r}, session_timeout_ms=6000,\n"
        "                    heartbeat_interval_ms=500)\n"
        f"c.subscribe([{topic!r}])\n"
        "for _ in range(300):\n"
        "    c.poll(0.1)\n"
        "    if c.assignment():\n"
        "        break\n"
        "assert c.assignment(), 'no assignment within 30 s'\n"
        "c.close(5)\n"
        "print(seen[:1])\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60, env={**os.environ})
    assert out.stdout.strip().splitlines()[-1] == "[False]"


@pytest.mark.broker
def test_a_member_finds_its_coordinator_over_the_connection_its_metadata_uses(
        kafka_broker: LocalBroker) -> None:  # noqa: F811
    # Java's NetworkClient keeps one connection per node besides the coordinator's; the
    # runner's FindCoordinator had a pool entry of its own, one more connection (a handshake
    # and two threads) opened just before the JoinGroup, beside the join's metadata refresh.
    topic = f"footprint-{os.getpid()}-{time.monotonic_ns()}"
    create_topic(kafka_broker.bootstrap_servers, topic, 1)
    probe = (
        "from groupkit.consumer import Consumer\n"
        f"c = Consumer(bootstrap_servers={kafka_broker.bootstrap_servers!r},\n"
        f"             group_id='g-' + {topic!r}, session_timeout_ms=6000,\n"
        "             heartbeat_interval_ms=500)\n"
        f"c.subscribe([{topic!r}])\n"
        "for _ in range(300):\n"
        "    c.poll(0.1)\n"
        "    if c.assignment():\n"
        "        break\n"
        "assert c.assignment(), 'no assignment within 30 s'\n"
        "cluster = c._cluster\n"
        "print(c._any_broker() is cluster.connection(cluster.least_loaded_node()),\n"
        "      sorted({purpose for _, purpose in cluster._conns}))\n"
        "c.close(5)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60, env={**os.environ})
    shared, purposes = out.stdout.strip().splitlines()[-1].split(" ", 1)
    assert shared == "True"
    assert "'group'" not in purposes and "'default'" in purposes
