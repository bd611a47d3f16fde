"""Environments, by family (`breakout/`, `robots/`): explicit params and seeds, vectorized where it pays."""
