"""The Kafka and ZooKeeper fixtures live in tests/conftest.py, shared with tests/cluster.

`infra` is re-exported for modules that import it from here; no fixture is defined
here, so none is registered twice.
"""
from tests.conftest import infra  # noqa: F401
