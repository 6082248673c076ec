"""Without the compiled modules (a platform no wheel is built for, an install without
Rust) the Python fallbacks run, and each says so once (issue 50, item 3).

A child process hides store._replay_native and registry.serde._avro_native from the
import system, as an install without them would, then builds caches and decoders.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent('''
    import importlib.abc, json, logging, sys

    class Hide(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name in ("store._replay_native", "registry.serde._avro_native"):
                raise ModuleNotFoundError(name)
            return None

    sys.meta_path.insert(0, Hide())
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.basicConfig(level=logging.INFO, handlers=[handler])

    from registry.serde import avro_codec, avro_program
    from store.cache import Cache

    caches = [Cache(), Cache(), Cache(native=False)]
    print(json.dumps({
        "lines": [(r.name, r.levelname, r.getMessage()) for r in records],
        "plain_run": [c.plain_run is not None for c in caches],
        "native_decoder": avro_program.AVAILABLE,
    }))
''')


def test_the_fallbacks_run_and_each_says_so_once() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["plain_run"] == [False, False, False] and result["native_decoder"] is False, \
        "without the compiled modules every cache replays in Python and fastavro decodes"
    replay = [line for line in result["lines"] if line[0] == "store.cache"]
    avro = [line for line in result["lines"] if line[0] == "registry.serde.avro_program"]
    assert len(replay) == 1 and replay[0][1] == "WARNING" and replay[0][2].startswith("replay: Python"), \
        f"the replay's fallback is logged once, however many caches: {replay}"
    assert len(avro) == 1 and avro[0][1] == "WARNING" and "fastavro" in avro[0][2], \
        f"the Avro decoder's fallback is logged once, at import: {avro}"
