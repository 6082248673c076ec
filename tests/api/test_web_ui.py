"""The web UI at /ui, driven in Debian's Chromium (headless) by Playwright, against a real
registry process: browse and page subjects, read a schema with its references, diff two
versions, check compatibility, edit config and mode, see the node's status.

Playwright comes from PyPI without its own browsers: it launches /usr/bin/chromium
(`make test` installs Debian's `chromium` when it is missing and we are root).
Screenshots of every step land in artifacts/ui/ (ignored by git).
"""
from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from tests.api.support import ok_json, path_of, register

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "ui"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Every path the page may call: the public REST API, and its own files.
PUBLIC_API = ("/subjects", "/schemas/", "/config", "/mode", "/compatibility/", "/leader", "/ready",
              "/v1/metadata/", "/metrics", "/ui")

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is not installed")
expect = sync_api.expect

V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "string"}]}
V2 = {"type": "record", "name": "Order", "namespace": "shop",
      "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int", "default": 1}]}
BAD = {"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "int"}]}


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: `apt-get install -y chromium` (make test does it as root)")
    with sync_api.sync_playwright() as playwright:
        # --no-sandbox: Chromium's sandbox refuses to run as root, which test machines are.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser, request) -> Iterator[object]:
    """A fresh page; fails the test on a script error or a call outside the public API,
    and saves a screenshot of where it ended as artifacts/ui/<test>.png."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda exc: problems.append(f"script error: {exc}"))
    opened.on("request", lambda r: None if urlsplit(r.url).path.startswith(PUBLIC_API)
              else problems.append(f"not the public API: {r.method} {r.url}"))
    opened.set_default_timeout(15_000)
    try:
        yield opened
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        try:
            opened.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
        finally:
            context.close()
    assert not problems, f"the page behaved: {problems}"


def snap(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def catalog(registry) -> dict[str, str]:
    """A subject with two versions, one referencing it, and 120 more under one prefix."""
    tag = "t" + uuid.uuid4().hex[:8]  # also an Avro namespace: starts with a letter
    names = {"orders": f"ui-{tag}-orders", "money": f"ui-{tag}-money", "price": f"ui-{tag}-price",
             "bulk": f"ui-{tag}-bulk-"}
    register(registry, names["orders"], json.dumps(V1))
    register(registry, names["orders"], json.dumps(V2))
    register(registry, names["money"], json.dumps({"type": "record", "name": "Money", "namespace": tag,
                                                   "fields": [{"name": "cents", "type": "long"}]}))
    register(registry, names["price"], json.dumps({"type": "record", "name": "Price", "namespace": tag,
                                                   "fields": [{"name": "m", "type": f"{tag}.Money"}]}),
             references=[{"name": f"{tag}.Money", "subject": names["money"], "version": 1}])
    for n in range(120):
        register(registry, f"{names['bulk']}{n:03d}", json.dumps({"type": "enum", "name": f"E{n}",
                                                                   "symbols": ["A"]}))
    return names


def test_browse_subjects_by_prefix_and_page(page, registry, catalog):
    page.goto(f"{registry.url}/ui")
    page.wait_for_selector("#subjects")
    page.fill("#subject-search", catalog["bulk"])
    expect(page.locator("#subject-count")).to_have_text("120 subjects")
    assert page.locator("#subjects tr").count() == 50, "one page shows 50 subjects, not all 120"
    assert page.inner_text("#page-info") == "1–50 of 120", "the pager says where we are"
    snap(page, "browse-page-1")
    page.click("#next-page")
    expect(page.locator("#page-info")).to_have_text("51–100 of 120")
    assert page.locator("#subjects tr").first.inner_text() == f"{catalog['bulk']}050", \
        "the second page starts with the 51st subject, in order"
    page.click(f"text={catalog['bulk']}051")
    page.wait_for_selector("#schema-id")
    assert page.locator("h1").inner_text() == f"{catalog['bulk']}051", "a subject opens its latest schema"


def test_schema_view_highlights_and_links_references(page, registry, catalog):
    page.goto(f"{registry.url}/ui#/subject/{path_of(catalog['orders'])}")
    page.wait_for_selector("#schema-id")
    assert page.inner_text("#schema-version") == "2", "the latest version is shown first"
    assert page.locator("pre.code .tok-key").count() > 0, "the schema is highlighted (keys marked)"
    assert page.locator("#versions a").all_inner_texts() == ["v1", "v2"], "every version is listed"
    page.click("#versions >> text=v1")
    expect(page.locator("#schema-version")).to_have_text("1")
    assert "qty" not in page.inner_text("pre.code"), "version 1 shows version 1's schema"
    page.goto(f"{registry.url}/ui#/subject/{path_of(catalog['money'])}")
    expect(page.locator("#referenced-by")).to_contain_text("price")
    assert f"{catalog['price']} v1" in page.inner_text("#referenced-by"), "referencedby names the referrer"
    page.click(f"#referenced-by >> text={catalog['price']} v1")
    expect(page.locator("#references")).to_contain_text("money")
    assert f"{catalog['money']} v1" in page.inner_text("#references"), "the referrer links what it references"


def test_diff_between_two_versions(page, registry, catalog):
    page.goto(f"{registry.url}/ui#/subject/{path_of(catalog['orders'])}/diff")
    page.wait_for_selector("#diff")
    added = page.locator("#diff .add").all_inner_texts()
    assert any('"qty"' in line for line in added), f"the added field is marked as added: {added}"
    assert page.locator("#diff .del").count() == 0, "adding a field removes no line"
    assert page.locator("#diff .same").count() > 0, "unchanged lines are shown too"
    page.select_option("#diff-b", "1")
    expect(page.locator("#diff-summary")).to_have_text("no differences")
    assert page.locator("#diff .add").count() == 0, "a version against itself has no added lines"


def test_compatibility_check_with_reasons(page, registry, catalog):
    page.goto(f"{registry.url}/ui#/subject/{path_of(catalog['orders'])}/check")
    page.wait_for_selector("#check-schema")
    assert page.inner_text("#check-level") == "BACKWARD", "the level in effect is shown"
    page.fill("#check-schema", json.dumps(BAD, indent=2))
    page.click("#check-run")
    page.wait_for_selector("#check-result.incompatible")
    reasons = page.locator("#check-result li").all_inner_texts()
    assert any("int" in r and "string" in r for r in reasons), f"the verbose reason names the types: {reasons}"
    snap(page, "check-incompatible")
    page.fill("#check-schema", json.dumps(V2))
    page.click("#check-run")
    page.wait_for_selector("#check-result.compatible")
    page.fill("#check-schema", "{not json")
    page.click("#check-run")
    page.wait_for_selector("#check-result.incompatible")
    assert page.inner_text("#check-result").strip(), "an invalid schema is reported, not swallowed"


def test_edit_config_and_mode_of_a_subject(page, registry, catalog):
    subject = catalog["orders"]
    page.goto(f"{registry.url}/ui#/subject/{path_of(subject)}/settings")
    page.wait_for_selector("#config-select")
    assert page.inner_text("#config-source") == "inherited (global)", "no level of its own yet"
    page.select_option("#config-select", "FULL_TRANSITIVE")
    page.click("#config-save")
    expect(page.locator("#config-source")).to_have_text("set on this subject")
    assert ok_json(registry.get(f"/config/{path_of(subject)}"), "GET config")["compatibilityLevel"] == \
        "FULL_TRANSITIVE", "Save stored the subject's level through the REST API"
    page.select_option("#mode-select", "READONLY")
    page.click("#mode-save")
    expect(page.locator("#mode-source")).to_have_text("set on this subject")
    assert ok_json(registry.get(f"/mode/{path_of(subject)}"), "GET mode")["mode"] == "READONLY", \
        "Save stored the subject's mode"
    snap(page, "settings-edited")
    page.click("#config-delete")
    expect(page.locator("#config-source")).to_have_text("inherited (global)")
    page.click("#mode-delete")
    expect(page.locator("#mode-source")).to_have_text("inherited (global)")
    assert registry.get(f"/config/{path_of(subject)}").status_code == 404, "Delete removed the level"
    assert registry.get(f"/mode/{path_of(subject)}").status_code == 404, "Delete removed the mode"


def test_status_shows_leader_and_errors_show_the_code(page, registry):
    page.goto(f"{registry.url}/ui#/status")
    page.wait_for_selector("#status-leader")
    leader = ok_json(registry.get("/leader"), "GET /leader")
    assert page.inner_text("#status-ready") == "yes", "a ready node says so"
    assert page.inner_text("#status-leader") == (leader["leader"] or "none known"), "the leader /leader names"
    assert page.locator("#metrics").count() == 1, "metrics, or a note that there are none"
    page.click("#global-settings")
    expect(page.locator("#config-source")).to_have_text("set globally")
    assert page.locator("#config-select").input_value() == "BACKWARD", "the global level is the one selected"
    page.goto(f"{registry.url}/ui#/subject/no-such-subject-{uuid.uuid4().hex[:6]}")
    page.wait_for_selector("#error:not([hidden])")
    assert "40401" in page.inner_text("#error"), "a REST error is shown with Confluent's code"


def prefilled(data_dir: Path, subjects: int) -> Path:
    """A data dir whose embedded log already holds `subjects` one-version subjects, written
    in one transaction (registering 10,000 over HTTP would cost a durable commit each)."""
    from store.records import SchemaKey, SchemaValue, encode_key, encode_value
    from store.sqlite_log import SqliteLog

    data_dir.mkdir(parents=True)
    path = data_dir / "schemas.sqlite"
    SqliteLog(str(path)).close()  # creates the tables
    schema = json.dumps({"type": "enum", "name": "E", "symbols": ["A"]})
    rows = [(n, encode_key(SchemaKey(f"many-{n:05d}", 1)),
             encode_value(SchemaValue(f"many-{n:05d}", 1, 1, schema))) for n in range(subjects)]
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany("INSERT INTO log(offset, key, value) VALUES (?, ?, ?)", rows)
        conn.execute("UPDATE next_offset SET value = ?", (len(rows),))
    conn.close()
    return data_dir


def test_ten_thousand_subjects_are_paged(page, start_registry, tmp_path):
    server = start_registry(data_dir=prefilled(tmp_path / "many", 10_000))
    page.goto(f"{server.url}/ui")
    expect(page.locator("#subject-count")).to_have_text("10,000 subjects")
    assert page.locator("#subjects tr").count() == 50, "10,000 subjects show 50 at a time, not one giant list"
    assert page.inner_text("#page-info") == "1–50 of 10,000", "the pager counts all of them"
    page.goto(f"{server.url}/ui#/?prefix=&page=199")
    expect(page.locator("#page-info")).to_have_text("9,951–10,000 of 10,000")
    assert page.locator("#subjects tr").last.inner_text() == "many-09999", "the last page ends with the last subject"
    page.fill("#subject-search", "many-0420")
    expect(page.locator("#subject-count")).to_have_text("10 subjects")
    snap(page, "ten-thousand-subjects-search")


def test_the_page_works_with_the_browsers_credentials(browser, start_registry, tmp_path):
    """With HTTP Basic and authorization rules on, the browser's credentials open the page
    and are sent with every API call it makes; a listing shows only what the user may read;
    without credentials nothing is served."""
    from tests.api.test_security_clients import users_line

    users = tmp_path / "users.properties"
    users.write_text(users_line("viewer", "viewer-pw") + "\n" + users_line("admin", "admin-pw") + "\n")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [
        {"principal": "admin", "operations": ["*"], "subject_regex": ".*", "global": True},
        {"principal": "viewer", "operations": ["read"], "subject_prefix": "team-a."}]}))
    server = start_registry(start=False, env={"SCHEMA_REGISTRY_AUTHENTICATION_METHOD": "BASIC",
                                              "SCHEMA_REGISTRY_AUTHENTICATION_USERS_FILE": str(users),
                                              "SCHEMA_REGISTRY_AUTHORIZATION_RULES_FILE": str(rules)})
    server.session.auth = ("admin", "admin-pw")
    server.start()
    register(server, "team-a.orders", json.dumps(V1))
    register(server, "team-b.secret", json.dumps(V2))

    # (A headless browser meeting a 401 without credentials fails the navigation itself.)
    refused = requests.get(f"{server.url}/ui", timeout=10)
    assert refused.status_code == 401 and "Basic" in refused.headers.get("WWW-Authenticate", ""), \
        "no credentials, no page: the challenge makes a browser ask for them"

    context = browser.new_context(http_credentials={"username": "viewer", "password": "viewer-pw"})
    seen: list[tuple[str, int]] = []
    try:
        opened = context.new_page()
        opened.set_default_timeout(15_000)
        opened.on("response", lambda r: seen.append((urlsplit(r.url).path, r.status)))
        opened.goto(f"{server.url}/ui")
        opened.wait_for_selector("#subjects")
        expect(opened.locator("#subjects")).to_contain_text("team-a.orders")
        assert "team-b.secret" not in opened.inner_text("#subjects"), "only what the viewer may read is listed"
        opened.click("text=team-a.orders")
        opened.wait_for_selector("#schema-id")
        snap(opened, "authenticated-viewer")
    finally:
        context.close()
    api_calls = [(path, status) for path, status in seen if not path.startswith("/ui")]
    assert any(path == "/subjects" and status == 200 for path, status in api_calls), api_calls
    assert not [c for c in api_calls if c[1] == 401], f"every API call carried the credentials: {api_calls}"
