"""Helpers shared by several test modules (imported as `tests.support.<module>`); no tests here."""
