"""Reports: JSON first; HTML rendered from the JSON; charts (PNG), video (mp4), browser checks."""
