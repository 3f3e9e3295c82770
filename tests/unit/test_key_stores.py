"""Trust and key stores read into memory for the Python clients (streaming/kafka/key_stores.py):
JKS stores made by the JDK's keytool are read, and nothing converted is left on disk."""
from __future__ import annotations

import shutil
import ssl
import subprocess
import tempfile

import pytest
from kafka import KafkaConsumer

from streaming.kafka import client_settings as cs
from tests.support.secured_kafka import STORE_PASSWORD, make_tls

KNOWN = KafkaConsumer.DEFAULT_CONFIG


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    """A temp folder of the test's own, where groupscope-tls-* folders would show."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _keytool(*args: str) -> None:
    subprocess.run(["keytool", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def jks(tls, tmp_path_factory):
    """(trust store, key store) made by keytool as JKS, with the test stores' password."""
    if shutil.which("keytool") is None:
        pytest.skip("no JDK keytool")
    folder = tmp_path_factory.mktemp("jks")
    trust, keys = folder / "truststore.jks", folder / "keystore.jks"
    _keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(tls.ca), "-keystore",
             str(trust), "-storetype", "JKS", "-storepass", STORE_PASSWORD)
    _keytool("-importkeystore", "-srckeystore", str(tls.keystore), "-srcstoretype", "PKCS12",
             "-srcstorepass", STORE_PASSWORD, "-destkeystore", str(keys), "-deststoretype",
             "JKS", "-deststorepass", STORE_PASSWORD, "-destkeypass", STORE_PASSWORD)
    assert trust.read_bytes()[:4] == b"\xfe\xed\xfe\xed"
    return trust, keys


def _stores(trust, keys, password=STORE_PASSWORD) -> dict[str, str]:
    return {"security.protocol": "SSL", "ssl.truststore.location": str(trust),
            "ssl.truststore.password": password, "ssl.keystore.location": str(keys),
            "ssl.keystore.password": password}


def test_jks_stores_made_by_keytool_are_read(jks):
    config = cs.kafka_python_settings(_stores(*jks), KNOWN)
    context = config["ssl_context"]
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("commonName", "groupscope-test-ca"),),)]
    librdkafka = cs.librdkafka_settings(_stores(*jks))
    assert librdkafka["ssl.ca.pem"].startswith("-----BEGIN CERTIFICATE-----")
    assert "ENCRYPTED PRIVATE KEY" in librdkafka["ssl.key.pem"]
    ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=librdkafka["ssl.ca.pem"])
    with pytest.raises(cs.SettingError) as wrong:
        cs.kafka_python_settings(_stores(*jks, password="not-it"), KNOWN)
    assert "ssl.truststore.password" in str(wrong.value) and "not-it" not in str(wrong.value)
    # a truststore without its password is read as Java reads it: without the integrity check
    assert cs.kafka_python_settings({"ssl.truststore.location": str(jks[0])}, KNOWN)[
        "ssl_context"].get_ca_certs()


def test_converted_stores_leave_nothing_on_disk(tls, jks, own_tmp):
    for trust, keys in ((tls.truststore, tls.keystore), jks):
        cs.kafka_python_settings(_stores(trust, keys), KNOWN)
        cs.librdkafka_settings(_stores(trust, keys))
    assert list(own_tmp.iterdir()) == []  # no groupscope-tls-* folder left behind
