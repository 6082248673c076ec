"""The Kafka and ZooKeeper fixtures live in tests/conftest.py, shared with tests/cluster.

No fixture is defined here, so none is registered twice.
"""
