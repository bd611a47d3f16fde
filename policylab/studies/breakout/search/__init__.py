"""`breakout train`: search the v3 policy family in a search env, screen and validate the pick on ALE."""
