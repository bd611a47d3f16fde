"""`breakout learn` (PPO in the shadow, on `policylab.learning`) and `breakout transfer` (a network
validated on ALE against v3 and the search pick)."""
