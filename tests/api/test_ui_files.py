"""`/ui` serves the web UI's static files, and nothing beyond them, whatever a browser accepts."""
from __future__ import annotations

import requests

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_ui_files_are_served_to_a_browser(registry):
    page = requests.get(f"{registry.url}/ui", headers={"Accept": BROWSER_ACCEPT}, timeout=10)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html"), \
        "the page is served as HTML to a browser's Accept header"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"], "the page may not be framed"
    script = requests.get(f"{registry.url}/ui/app.js", headers={"Accept": "*/*"}, timeout=10)
    assert script.status_code == 200 and "javascript" in script.headers["Content-Type"], "its script is served"
    trailing = requests.get(f"{registry.url}/ui/", headers={"Accept": BROWSER_ACCEPT}, timeout=10)
    assert trailing.status_code == 200, "/ui/ is /ui"


def test_ui_serves_nothing_outside_its_directory(registry):
    for path in ("/ui/%2e%2e/routes/ui.py", "/ui/..%2fapp.py", "/ui/no-such-file.js"):
        answer = requests.get(f"{registry.url}{path}", timeout=10)
        assert answer.status_code == 404 and answer.json()["error_code"] == 404, \
            f"{path} is not a file of the UI: a 404 in Confluent's error body"
