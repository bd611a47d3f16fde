"""The Breakout sim-to-real study, by idea: `episodes`, `audit`, `search`, `learn` and `fidelity`
(docs/breakout.md, "Module notes"); `requests` holds one request model per command."""
