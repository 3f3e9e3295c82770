"""Kafka client settings as users copy them from their Java clients, for each client groupscope
drives (streaming/kafka/client_settings.py): JAAS lines, PKCS12 and PEM stores, secrets by
reference, and settings with no equivalent refused by name, never printing a value."""
from __future__ import annotations

import ssl

import pytest
from kafka import KafkaConsumer

from streaming.kafka import client_settings as cs
from streaming.kafka.oauth_tokens import ClientCredentialsTokens, UnsecuredTokens
from tests.support.secured_kafka import STORE_PASSWORD, make_tls

KNOWN = KafkaConsumer.DEFAULT_CONFIG
SCRAM_JAAS = (f'{cs.SCRAM_MODULE} required username="alice" '
              'password="p\\"w;d";')


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls(tmp_path_factory.mktemp("tls"))


def test_a_scram_jaas_line_gives_kafka_python_its_user_and_password():
    config = cs.kafka_python_settings({"security.protocol": "SASL_SSL",
                                       "sasl.mechanism": "SCRAM-SHA-512",
                                       "sasl.jaas.config": SCRAM_JAAS}, KNOWN)
    assert config == {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                      "sasl_plain_username": "alice", "sasl_plain_password": 'p"w;d'}
    assert cs.librdkafka_settings({"sasl.mechanism": "PLAIN", "sasl.jaas.config": SCRAM_JAAS}) == {
        "sasl.mechanisms": "PLAIN", "sasl.username": "alice", "sasl.password": 'p"w;d'}


def test_kafka_python_names_become_the_java_clients():
    java = cs.java_settings({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
                             "sasl.plain.username": "bob", "sasl.plain.password": "s3",
                             "ssl.cafile": "/etc/ca.pem", "ssl.check.hostname": "false"})
    assert java == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
                    "sasl.jaas.config": f'{cs.SCRAM_MODULE} required username="bob" password="s3";',
                    "ssl.truststore.type": "PEM", "ssl.truststore.location": "/etc/ca.pem",
                    "ssl.endpoint.identification.algorithm": ""}
    assert cs.parse_jaas(java["sasl.jaas.config"]) == (cs.SCRAM_MODULE,
                                                        {"username": "bob", "password": "s3"})


def test_secrets_come_from_the_environment_and_files(tmp_path, monkeypatch):
    monkeypatch.setenv("GS_TEST_PASSWORD", "from-env")
    (tmp_path / "secret").write_text("from-file\n")
    (tmp_path / "client.properties").write_text("# a comment\nuser = carol\npassword=from-props\n")
    resolved = cs.resolve_secrets({
        "a": "${env:GS_TEST_PASSWORD}",
        "b": f"${{file:{tmp_path / 'secret'}}}",
        "c": f'x password="${{file:{tmp_path / "client.properties"}:password}}";'})
    assert resolved == {"a": "from-env", "b": "from-file", "c": 'x password="from-props";'}
    with pytest.raises(cs.SettingError, match="kafka.a: environment variable GS_NOPE is not set"):
        cs.resolve_secrets({"a": "${env:GS_NOPE}"})
    with pytest.raises(cs.SettingError, match="has no key nope"):
        cs.resolve_secrets({"a": f"${{file:{tmp_path / 'client.properties'}:nope}}"})


def test_pkcs12_stores_become_an_ssl_context_python_can_use(tls):
    config = cs.kafka_python_settings({
        "security.protocol": "SSL",
        "ssl.truststore.location": str(tls.truststore), "ssl.truststore.password": STORE_PASSWORD,
        "ssl.keystore.location": str(tls.keystore), "ssl.keystore.password": STORE_PASSWORD,
        "ssl.endpoint.identification.algorithm": "https"}, KNOWN)
    context = config["ssl_context"]
    assert context.check_hostname is True and context.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("commonName", "groupscope-test-ca"),),)]
    assert not any(k in config for k in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"))
    # A PEM key store (Kafka's: key and chain in one file) is used as it is.
    pem = cs.kafka_python_settings({"ssl.keystore.type": "PEM",
                                    "ssl.keystore.location": str(tls.client_cert)}, KNOWN)
    assert pem == {"ssl_certfile": str(tls.client_cert), "ssl_keyfile": str(tls.client_cert)}


def test_stores_that_cannot_be_used_say_what_to_do(tls, tmp_path):
    jks = tmp_path / "trust.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 60)
    with pytest.raises(cs.SettingError, match="cannot open the JKS store"):
        cs.kafka_python_settings({"ssl.truststore.location": str(jks)}, KNOWN)
    with pytest.raises(cs.SettingError) as wrong:
        cs.kafka_python_settings({"ssl.truststore.location": str(tls.truststore),
                                  "ssl.truststore.password": "not-it"}, KNOWN)
    assert "ssl.truststore.password" in str(wrong.value) and "not-it" not in str(wrong.value)


def test_a_java_clients_producer_and_dns_settings_change_nothing_here():
    assert cs.kafka_python_settings({"client.dns.lookup": "use_all_dns_ips", "acks": "all",
                                     "session.timeout.ms": "45000"}, KNOWN) == {
        "session_timeout_ms": 45000}


def test_settings_without_an_equivalent_are_refused_by_name_without_their_value():
    with pytest.raises(cs.SettingError, match="kafka.sasl.login.callback.handler.class: no "
                                              "equivalent.*source.type kafka"):
        cs.kafka_python_settings({"sasl.login.callback.handler.class": "com.example.Secret"}, KNOWN)
    with pytest.raises(cs.SettingError) as kerberos:
        cs.kafka_python_settings({"sasl.jaas.config": 'com.sun.security.auth.module.Krb5LoginModule '
                                  'required keyTab="/k" principal="p@R";'}, KNOWN)
    assert "Krb5LoginModule" in str(kerberos.value) and "/k" not in str(kerberos.value)
    with pytest.raises(cs.SettingError, match="expected '<LoginModule class> required"):
        cs.kafka_python_settings({"sasl.jaas.config": "password=hunter2"}, KNOWN)
    with pytest.raises(cs.SettingError, match="OAUTHBEARER needs kafka.sasl.jaas.config"):
        cs.kafka_python_settings({"sasl.mechanism": "OAUTHBEARER"}, KNOWN)


def test_oauthbearer_settings_choose_the_token_provider():
    unsecured = cs.kafka_python_settings({
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": f'{cs.OAUTH_MODULE} required unsecuredLoginStringClaim_sub="dave";'},
        KNOWN)["sasl_oauth_token_provider"]
    assert isinstance(unsecured, UnsecuredTokens) and unsecured.subject == "dave"
    token = unsecured.token()
    assert token.count(".") == 2 and token.endswith(".") and unsecured.token() == token
    credentials = cs.kafka_python_settings({
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "sasl.jaas.config": f'{cs.OAUTH_MODULE} required clientId="gs" clientSecret="s" scope="kafka";'},
        KNOWN)["sasl_oauth_token_provider"]
    assert isinstance(credentials, ClientCredentialsTokens)
    assert (credentials.endpoint, credentials.client_id, credentials.scope) == (
        "https://idp.example/token", "gs", "kafka")
