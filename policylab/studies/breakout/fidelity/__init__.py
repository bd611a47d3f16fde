"""How faithful the shadow is: frame-level ALE traces (`breakout trace`), the frame-by-frame
lockstep harness (`breakout lockstep`) and the calibration fitted to the traces (`breakout calibrate`)."""
