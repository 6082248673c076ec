"""Where the infrastructure keeps its files: everything under ``<repo>/.infra``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INFRA_DIR = ROOT / ".infra"
JARS_DIR = INFRA_DIR / "jars"  # .infra/jars/<component>/*.jar (see infra.fetch)
RUN_DIR = INFRA_DIR / "run"  # the servers of `python3 -m infra up`
