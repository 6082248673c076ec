"""A schema registry that speaks Confluent Schema Registry's REST API."""

__version__ = "0.1.0"
