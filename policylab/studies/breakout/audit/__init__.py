"""`breakout audit`: a policy on both environments on the same seeds, its gaps classified."""
