"""Where the benchmarks find the repository and the shared data (books, SciFact, PDFs).

Only :mod:`pathlib`: the model benchmark's child process imports it too.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The repository (the API is started from here; the answers data set is under it)."""
SHARED_DATA = ROOT.parent / "shared" / "data"
ALICE = SHARED_DATA / "books" / "alice-in-wonderland.txt"
PRIDE = SHARED_DATA / "books" / "pride-and-prejudice.txt"
