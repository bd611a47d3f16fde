"""Environments: one module per environment, explicit params and seeds, vectorized where it pays."""
