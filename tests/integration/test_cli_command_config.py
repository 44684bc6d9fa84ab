"""--command-config reaches the connection: SASL/SCRAM settings in Java's property names are
used against a broker that requires authentication (Tansu here cannot hold users, so what is
visible is its refusal, reported in one line without the password), and TLS settings against a
TLS terminator in front of the broker whose certificate another CA signed."""

from __future__ import annotations

import ssl
from pathlib import Path

import trustme

from groupkit.testing import LocalBroker
from tests.support.cli_groups import run_cli
from tests.support.tls_terminator import TlsTerminator


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


def test_tls_settings_from_a_properties_file_are_used(kafka_broker, tmp_path: Path,
                                                      capsys) -> None:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    terminator = TlsTerminator(context, (kafka_broker.host, kafka_broker.port))
    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    config = tmp_path / "tls.properties"
    config.write_text(f"security.protocol=SSL\nssl.truststore.location={other_ca}\n"
                      "ssl.truststore.type=PEM\n")
    try:
        status, out, err = run_cli(capsys, "groups", "list", "--bootstrap-server",
                                   f"127.0.0.1:{terminator.port}", "--command-config",
                                   str(config))
    finally:
        terminator.close()
    assert status == 1 and out == ""
    assert "CERTIFICATE_VERIFY_FAILED" in err and err.count("\n") == 1
