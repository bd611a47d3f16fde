"""The repository's root, for tests that read committed files (docs, results, benchmarks)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
