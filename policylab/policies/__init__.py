"""Policies as pure functions: (observation batch, params) -> action batch."""
