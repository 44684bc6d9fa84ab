"""--command-config reaches the connection: SASL/SCRAM settings in Java's property names are
used against a broker that requires authentication (Tansu here cannot hold users, so what is
visible is its refusal, reported in one line without the password)."""

from __future__ import annotations

from pathlib import Path

from groupkit.testing import LocalBroker
from tests.support.cli_groups import run_cli


def test_sasl_settings_from_a_properties_file_are_used(tmp_path: Path, capsys) -> None:
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        "    username=\"nobody\" password=\"no-such-password\";\n")
    with LocalBroker(authentication=True) as broker:
        status, out, err = run_cli(capsys, "groups", "list", "--bootstrap-server",
                                   broker.bootstrap_servers, "--command-config", str(config))
        plain, _, plain_err = run_cli(capsys, "groups", "list", "--bootstrap-server",
                                      broker.bootstrap_servers)
    assert status == 1 and out == ""
    assert "unknown-user" in err and err.count("\n") == 1
    assert "no-such-password" not in err
    # Without the file the same broker turns the connection away for want of SASL.
    assert plain == 1 and "unknown-user" not in plain_err
    assert plain_err.count("\n") == 1 and plain_err.startswith("groupkit: error:")
