"""Confluent's `kafkastore.*` properties, translated for librdkafka (no broker needed)."""
from __future__ import annotations

import pytest

from store.kafka_config import KafkaLogConfig
from store.log import LogMisconfigured


def config(**properties: str) -> KafkaLogConfig:
    return KafkaLogConfig.from_kafkastore({"bootstrap.servers": "PLAINTEXT://b1:9092, b2:9092",
                                           **{k.replace("_", "."): v for k, v in properties.items()}})


def test_own_settings_are_read_and_never_passed_to_the_client():
    cfg = config(topic="_s", topic_replication_factor="1", timeout_ms="2500", init_timeout_ms="7000",
                 topic_min_insync_replicas="2", group_id="ignored", topic_skip_validation="true")
    assert (cfg.topic, cfg.replication_factor, cfg.timeout, cfg.init_timeout) == ("_s", 1, 2.5, 7.0)
    assert cfg.min_insync_replicas == 2 and cfg.skip_validation
    assert cfg.bootstrap_servers == "b1:9092,b2:9092", "librdkafka takes host:port, not PLAINTEXT://"
    assert cfg.client == {"bootstrap.servers": "b1:9092,b2:9092"}, "only client settings reach librdkafka"


def test_defaults_follow_confluent():
    cfg = config()
    assert (cfg.topic, cfg.replication_factor, cfg.min_insync_replicas) == ("_schemas", 3, None)


def test_security_settings_pass_through_with_the_prefix_stripped():
    cfg = config(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                 ssl_ca_location="/ca.pem", ssl_endpoint_identification_algorithm="")
    assert cfg.client["security.protocol"] == "sasl_ssl"
    assert cfg.client["sasl.mechanism"] == "SCRAM-SHA-512"
    assert cfg.client["ssl.ca.location"] == "/ca.pem"
    assert cfg.client["ssl.endpoint.identification.algorithm"] == "none", "Java's empty value means off"


def test_jaas_lines_become_librdkafka_credentials():
    cfg = config(sasl_jaas_config='org.apache.kafka.common.security.plain.PlainLoginModule required '
                                  'username="alice" password="s3cr\\"et";')
    assert (cfg.client["sasl.username"], cfg.client["sasl.password"]) == ("alice", 's3cr"et')
    assert "sasl.jaas.config" not in cfg.client, "librdkafka has no JAAS"
    with pytest.raises(LogMisconfigured, match="sasl.jaas.config"):
        config(sasl_jaas_config="com.example.CustomLoginModule required;")


def test_pem_stores_are_translated_and_java_stores_refused_by_name():
    cfg = config(ssl_truststore_type="PEM", ssl_truststore_location="/trust.pem",
                 ssl_keystore_type="PKCS12", ssl_keystore_location="/me.p12", ssl_keystore_password="pw")
    assert cfg.client["ssl.ca.location"] == "/trust.pem"
    assert (cfg.client["ssl.keystore.location"], cfg.client["ssl.keystore.password"]) == ("/me.p12", "pw")
    assert "ssl.truststore.location" not in cfg.client
    with pytest.raises(LogMisconfigured, match="ssl.truststore.location"):
        config(ssl_truststore_location="/trust.jks")
    with pytest.raises(LogMisconfigured, match="ssl.keystore.location"):
        config(ssl_keystore_location="/me.jks", ssl_keystore_type="JKS")


def test_jvm_only_settings_are_dropped():
    cfg = config(ssl_enabled_protocols="TLSv1.3", ssl_keymanager_algorithm="SunX509")
    assert cfg.client == {"bootstrap.servers": "b1:9092,b2:9092"}


@pytest.mark.parametrize("name, value", [("timeout.ms", "soon"), ("topic.replication.factor", "0")])
def test_bad_numbers_are_refused_by_name(name, value):
    with pytest.raises(LogMisconfigured, match=name):
        KafkaLogConfig.from_kafkastore({"bootstrap.servers": "b:9092", name: value})
