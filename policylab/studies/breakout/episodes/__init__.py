"""Episodes of a policy in either Breakout environment: the runner (one store record per episode),
the fused shadow loop, per-episode features, and `breakout eval` with its report and video."""
