"""The Breakout sim-to-real study, by idea: `episodes` (playing a policy in either environment, one
record per episode; `breakout eval`), `audit` (shadow vs ALE on the same seeds), `search` (the
training loop), `learn` (a network learned in the shadow and validated on ALE; `breakout transfer`),
`fidelity` (frame-level traces, the lockstep harness and the calibration). `requests` holds one
request model per command; `options` the plan checks several commands share; `sizes` what a record
weighs."""
