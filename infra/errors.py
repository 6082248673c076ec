"""The one error the infrastructure raises."""


class InfraError(RuntimeError):
    """A server could not be fetched, started, probed or stopped."""
