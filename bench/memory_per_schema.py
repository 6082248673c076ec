"""Memory per schema, and how it moves while the registry serves id reads.

For each count of schemas (default 0, 10,000 and 100,000) the embedded log is filled
directly (`registry_process.prefill`: one ~600-byte Avro record per subject), a
registry started through its CLI, and its RSS (supervisor + worker) taken once
`/ready`; then wrk reads `GET /schemas/ids/{id}` for random ids in rounds of
`--seconds`, and the RSS is taken after each round. Reference, in the same run: the
same registry with no schema at all, so that "per schema" is the difference divided by
the count, and the text every schema holds (its bytes in the log), so that the ratio
says how much of a schema's cost is its text.

With `--one-id` every read asks for the same id: what serving costs by itself, apart
from what each id read for the first time leaves behind.

Usage: python bench/memory_per_schema.py [--counts 0,10000,100000] [--rounds 3] [--seconds 5] [--one-id]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_process import avro_record, prefill, registry, rss_kib  # noqa: E402

WRK_IDS = """
request = function()
  return wrk.format("GET", "/schemas/ids/" .. tostring(math.random({bottom}, {top})))
end
"""


def measure(count: int, rounds: int, seconds: int, one_id: bool = False) -> list[int]:
    """RSS in KiB once ready, then after each round of id reads."""
    with tempfile.TemporaryDirectory() as data:
        path = Path(data)
        if count:
            prefill(path, count)
        script = path / "ids.lua"
        top = max(count, 1)
        script.write_text(WRK_IDS.replace("{top}", str(top)).replace("{bottom}", str(top if one_id else 1)))
        with registry(path, ready_timeout=180) as (url, pid):
            sizes = [rss_kib(pid)]
            for _ in range(rounds if count else 0):
                subprocess.run(["wrk", "-t2", "-c10", f"-d{seconds}s", "-s", str(script), url],
                               capture_output=True, check=True)
                sizes.append(rss_kib(pid))
            return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="0,10000,100000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--one-id", action="store_true",
                        help="read one id over and over: the growth that serving itself costs")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    if 0 not in counts:
        counts.insert(0, 0)
    results = {count: measure(count, args.rounds, args.seconds, args.one_id) for count in counts}
    empty = results[0][0]
    text = len(avro_record(12345).encode())
    print(f"RSS (supervisor + worker), MiB; reads: wrk, 10 connections, {args.seconds} s rounds of "
          f"{'one id' if args.one_id else 'random ids'}")
    print(f"{'schemas':>8} {'ready':>7} " + " ".join(f"{'read ' + str(i + 1):>7}" for i in range(args.rounds))
          + f" {'KiB/schema ready':>17} {'after reads':>12}")
    for count, sizes in results.items():
        rounds = " ".join(f"{s / 1024:7.0f}" for s in sizes[1:]) or " " * 7
        per_ready = (sizes[0] - empty) / count if count else 0.0
        per_read = (sizes[-1] - empty) / count if count else 0.0
        print(f"{count:8d} {sizes[0] / 1024:7.0f} {rounds} {per_ready:17.2f} {per_read:12.2f}")
    print(f"reference: one schema's text is {text} bytes ({text / 1024:.2f} KiB); "
          f"an empty registry holds {empty / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
