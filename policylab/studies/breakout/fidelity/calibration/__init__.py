"""Calibrating the shadow Breakout against frame-level ALE traces (`policylab breakout calibrate`).

Imports run one way: metrics <- identify <- fit <- calibrate -> report (report needs only metrics)."""
