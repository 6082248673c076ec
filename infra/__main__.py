"""``python3 -m infra fetch|up|down|status``: see `infra.cli`."""

import sys

from infra.cli import main

sys.exit(main())
