"""Calibrating the shadow Breakout against frame-level ALE traces (`policylab breakout calibrate`).

- `identify.py`: what the traces pin down (paddle controller, ball logic, bricks, serve), measured, not tuned;
- `metrics.py`: the replay agreement and the closed-loop objective that judge a preset;
- `fit.py`: the greedy fit, its stages declared as data (`STAGES`);
- `calibrate.py`: the command (`run`);
- `report.py`: calibration.html.

Imports run one way: metrics <- identify <- fit <- calibrate -> report (report needs only metrics).
"""
