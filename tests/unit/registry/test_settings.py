"""Configuration: `.properties` files read exactly as Confluent reads them, and the
environment and overrides on top.

Every expected value in ``JAVA_READS`` was produced by running ``java.util.Properties``
itself (OpenJDK 17, ``new Properties().load(new FileInputStream(file))``, as Confluent's
``SchemaRegistryConfig`` loads its file) on the exact bytes of each case; none was
worked out by hand. Only ``unicode_surrogate_pair`` is restated: Java's answer is the
UTF-16 pair of the character Python holds as one code point.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from registry.settings import ConfigError, load_settings, parse_properties

JAVA_READS = [
    pytest.param(b'a=b\n', {"a": "b"}, id='equals'),
    pytest.param(b'a:b\n', {"a": "b"}, id='colon'),
    pytest.param(b'a b\n', {"a": "b"}, id='space'),
    pytest.param(b'a\tb\n', {"a": "b"}, id='tab'),
    pytest.param(b'a\x0cb\n', {"a": "b"}, id='formfeed_separator'),
    pytest.param(b'a = b\n', {"a": "b"}, id='spaces_around_equals'),
    pytest.param(b'a : b\n', {"a": "b"}, id='spaces_around_colon'),
    pytest.param(b'a    b\n', {"a": "b"}, id='many_spaces'),
    pytest.param(b'a\t=\tb\n', {"a": "b"}, id='tabs_around_equals'),
    pytest.param(b'a = = b\n', {"a": "= b"}, id='space_then_equals_then_equals'),
    pytest.param(b'a=b=c\n', {"a": "b=c"}, id='value_contains_equals'),
    pytest.param(b'url: http://h:8081\n', {"url": "http://h:8081"}, id='value_contains_colon'),
    pytest.param(b'a b:c\n', {"a": "b:c"}, id='space_separator_then_colon_in_value'),
    pytest.param(b'# hash comment\n! bang comment\na=1\n', {"a": "1"}, id='comments'),
    pytest.param(b'   # indented\n\t! tabbed\na=1\n', {"a": "1"}, id='indented_comment'),
    pytest.param(b'a=1 # not a comment\n', {"a": "1 # not a comment"}, id='comment_marker_mid_line'),
    pytest.param(b'#:\na=1\n', {"a": "1"}, id='hash_colon_comment'),
    pytest.param(b'#: x=y\na=1\n', {"a": "1"}, id='hash_colon_key_comment'),
    pytest.param(b'!:x\na=1\n', {"a": "1"}, id='bang_colon_comment'),
    pytest.param(b'# comment \\\na=1\n', {"a": "1"}, id='comment_ending_in_backslash'),
    pytest.param(b'a=b\\\n  c\n', {"a": "bc"}, id='continuation'),
    pytest.param(b'a=b \\\n   c\n', {"a": "b c"}, id='continuation_keeps_space_before_backslash'),
    pytest.param(b'a=b\\\n\t\x0c c\n', {"a": "bc"}, id='continuation_tabs_and_formfeed'),
    pytest.param(b'a=1,\\\n  2,\\\n  3\nb=4\n', {"a": "1,2,3", "b": "4"}, id='continuation_chain'),
    pytest.param(b'a=b\\\n  #c\n', {"a": "b#c"}, id='continuation_line_starting_with_hash'),
    pytest.param(b'a=b\\\n\nc=d\n', {"a": "b", "c": "d"}, id='continuation_onto_empty_line'),
    pytest.param(b'a=b\\\n   \nc=d\n', {"a": "b", "c": "d"}, id='continuation_onto_blank_line'),
    pytest.param(b'ke\\\n  y=v\n', {"key": "v"}, id='continuation_in_key'),
    pytest.param(b'key\\\n  =v\n', {"key": "v"}, id='continuation_before_separator'),
    pytest.param(b'key=\\\n  v\n', {"key": "v"}, id='continuation_after_separator'),
    pytest.param(b'a=b\\', {"a": "b"}, id='trailing_backslash_at_eof'),
    pytest.param(b'a=b\\\n', {"a": "b"}, id='trailing_backslash_newline_at_eof'),
    pytest.param(b'a=b\\\\\nc=d\n', {"a": "b\\", "c": "d"}, id='even_backslashes_do_not_continue'),
    pytest.param(b'a=b\\\\\\\nc=d\n', {"a": "b\\c=d"}, id='odd_backslashes_continue'),
    pytest.param(b'a=caf\\u00e9\n', {"a": "caf\u00e9"}, id='unicode_escape'),
    pytest.param(b'a=caf\\u00E9\n', {"a": "caf\u00e9"}, id='unicode_escape_upper'),
    pytest.param(b'caf\\u00e9=x\n', {"caf\u00e9": "x"}, id='unicode_escape_in_key'),
    # Java answers with the UTF-16 pair "\ud83d\ude00": the same character.
    pytest.param(b'a=\\uD83D\\uDE00\n', {"a": "\U0001f600"}, id='unicode_surrogate_pair'),
    pytest.param(b'a\\u003db=c\n', {"a=b": "c"}, id='unicode_escape_of_separator'),
    pytest.param(b'a\\=b=c\n', {"a=b": "c"}, id='escaped_equals_in_key'),
    pytest.param(b'a\\:b:c\n', {"a:b": "c"}, id='escaped_colon_in_key'),
    pytest.param(b'a\\ b c\n', {"a b": "c"}, id='escaped_space_in_key'),
    pytest.param(b'\\#not-a-comment=1\n', {"#not-a-comment": "1"}, id='escaped_hash_key'),
    pytest.param(b'\\!not-a-comment=1\n', {"!not-a-comment": "1"}, id='escaped_bang_key'),
    pytest.param(b'a=\\t|\\n|\\r|\\f\n', {"a": "\t|\n|\r|\f"}, id='escapes_in_value'),
    pytest.param(b'a=\\b\\q\\\'\\"\n', {"a": "bq'\""}, id='unknown_escapes_drop_backslash'),
    pytest.param(b'path=C:\\\\dir\\\\file\n', {"path": "C:\\dir\\file"}, id='escaped_backslash'),
    pytest.param(b'a=\\  b\n', {"a": "  b"}, id='escaped_leading_space_in_value'),
    pytest.param(b'a=\\=b\n', {"a": "=b"}, id='escaped_equals_in_value'),
    pytest.param(b'a=\n', {"a": ""}, id='empty_value_equals'),
    pytest.param(b'a:\n', {"a": ""}, id='empty_value_colon'),
    pytest.param(b'a =   \n', {"a": ""}, id='empty_value_spaces'),
    pytest.param(b'a\n', {"a": ""}, id='key_without_value'),
    pytest.param(b'a   \n', {"a": ""}, id='key_without_value_trailing_space'),
    pytest.param(b'=v\n', {"": "v"}, id='empty_key'),
    pytest.param(b':v\n', {"": "v"}, id='empty_key_colon'),
    pytest.param(b'a=1\na=2\n', {"a": "2"}, id='duplicate_last_wins'),
    pytest.param(b'a=1\r\nb=2\r\n', {"a": "1", "b": "2"}, id='crlf'),
    pytest.param(b'a=b\\\r\n  c\r\nd=e\r\n', {"a": "bc", "d": "e"}, id='crlf_continuation'),
    pytest.param(b'a=1\rb=2\r', {"a": "1", "b": "2"}, id='cr_only'),
    pytest.param(b'a=1\nb=2\r\nc=3\rd=4', {"a": "1", "b": "2", "c": "3", "d": "4"}, id='mixed_line_endings'),
    pytest.param(b'a=1\nb=2', {"a": "1", "b": "2"}, id='no_trailing_newline'),
    pytest.param(b'   a=1\n\t\x0cb=2\n', {"a": "1", "b": "2"}, id='leading_whitespace_on_line'),
    pytest.param(b'a=1  \t\n', {"a": "1  \t"}, id='trailing_whitespace_kept_in_value'),
    pytest.param(b'\n\n   \n\t\na=1\n\n', {"a": "1"}, id='blank_lines'),
    pytest.param(b'a=caf\xc3\xa9\n', {"a": "caf\u00c3\u00a9"}, id='utf8_bytes_read_as_latin1'),
    pytest.param(b'a=caf\xe9\n', {"a": "caf\u00e9"}, id='latin1_byte'),
    pytest.param(
        b'# Schema Registry\nlisteners=http://0.0.0.0:8081\n'
        b'kafkastore.bootstrap.servers=PLAINTEXT://k1:9092,\\\n    PLAINTEXT://k2:9092\n'
        b'kafkastore.topic=_schemas\ndebug=false\n',
        {"debug": "false", "kafkastore.bootstrap.servers": "PLAINTEXT://k1:9092,PLAINTEXT://k2:9092",
         "kafkastore.topic": "_schemas", "listeners": "http://0.0.0.0:8081"},
        id='confluent_style'),
    pytest.param(b'a=\\U00e9\n', {"a": "U00e9"}, id='uppercase_U_is_not_an_escape'),
    pytest.param(b'a=b\\\n  \\\n  c\n', {"a": "bc"}, id='continuation_onto_backslash_only_line'),
    pytest.param(b'\\\na=b\n', {"a": "b"}, id='line_that_is_only_a_continuation'),
    pytest.param(b'#::::::\n#:=x\n#: \na=1\n', {"a": "1"}, id='hash_colon_separator_comment'),
    pytest.param(b'#: k=v\\\na=1\n', {"a": "1"}, id='hash_colon_continuation_comment'),
    pytest.param(b'a=x\x00y\x7fz\n', {"a": "x\u0000y\u007fz"}, id='control_characters_kept'),
]


@pytest.mark.parametrize(("data", "java"), JAVA_READS)
def test_properties_read_as_java_util_properties_reads_them(data: bytes, java: dict[str, str]) -> None:
    assert parse_properties(data) == java, "the file must mean to us exactly what it means to Confluent"


@pytest.mark.parametrize("data", [
    pytest.param(b"a=\\u00g9\n", id="not_hex"),
    pytest.param(b"a=\\u00", id="truncated_at_eof"),
    pytest.param(b"a=\\u-0e9\n", id="signed"),
])
def test_a_malformed_unicode_escape_is_a_config_error_naming_the_file(data: bytes) -> None:
    # Java refuses these too: IllegalArgumentException("Malformed \\uxxxx encoding.").
    with pytest.raises(ConfigError, match=r"^server\.properties(, line 1)?: .+"):
        parse_properties(data, source="server.properties")


@pytest.mark.parametrize("data", [
    pytest.param(b"a=\\uD83D\n", id="lone_high"),
    pytest.param(b"a=\\uDE00\n", id="lone_low"),
    pytest.param(b"a=\\uD83D\\u0041\n", id="high_then_not_low"),
])
def test_an_unpaired_surrogate_escape_is_refused(data: bytes) -> None:
    # Deliberately stricter than Java, which keeps the lone UTF-16 unit: no setting can
    # use one, and Python could not even encode it back to UTF-8.
    with pytest.raises(ConfigError, match="line 1"):
        parse_properties(data)


def test_load_settings_reads_the_file_then_the_environment_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "schema-registry.properties"
    path.write_bytes(
        b"# as Confluent ships it\r\n"
        b"listeners = http://127.0.0.1:18081\r\n"
        b"kafkastore.topic=_schemas_from_file\r\n"
        b"schema.compatibility.level: full\r\n"
        b"host.name=node\\u00e9\r\n"
    )
    settings = load_settings(
        str(path),
        environ={"SCHEMA_REGISTRY_KAFKASTORE_TOPIC": "_schemas_from_env", "OTHER": "ignored"},
        overrides={"schema.compatibility.level": "none"},
    )
    assert settings.listener == ("http", "127.0.0.1", 18081), "the file's listener is used"
    assert settings.get("host.name") == "node\u00e9", "escapes in the file are decoded"
    assert settings.get("kafkastore.topic") == "_schemas_from_env", "the environment overrides the file"
    assert settings.compatibility_level == "NONE", "overrides win over the file"


def test_load_settings_names_the_file_it_cannot_read_or_parse(tmp_path: Path) -> None:
    missing = tmp_path / "missing.properties"
    with pytest.raises(ConfigError, match="cannot read .*missing.properties"):
        load_settings(str(missing), environ={})
    bad = tmp_path / "bad.properties"
    bad.write_bytes(b"listeners=http://127.0.0.1:8081\nhost.name=\\uZZZZ\n")
    with pytest.raises(ConfigError, match=r"bad\.properties, line 2"):
        load_settings(str(bad), environ={})


def test_group_commit_is_on_for_both_stores_unless_set_off() -> None:
    assert load_settings(environ={}).group_commit
    kafka = {"SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS": "localhost:9092"}
    assert load_settings(environ=kafka).group_commit
    assert not load_settings(environ={**kafka, "SCHEMA_REGISTRY_GROUP_COMMIT_ENABLE": "false"}).group_commit
    assert not load_settings(environ={"SCHEMA_REGISTRY_GROUP_COMMIT_ENABLE": "FALSE"}).group_commit
    with pytest.raises(ConfigError, match="group.commit.enable"):
        _ = load_settings(environ={"SCHEMA_REGISTRY_GROUP_COMMIT_ENABLE": "yes"}).group_commit
