"""Rollout machinery shared by every study: the seed scheme, the store, executors."""
