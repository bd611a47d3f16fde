"""The physics model: a parametric Breakout whose every rule is a named field (`params`), one numba kernel over
those fields (`kernel`) and a drawing in ALE's look (`render`)."""
