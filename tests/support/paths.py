"""Where the repository, the shared test data and the sample books are."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
ALICE = SHARED / "data" / "books" / "alice-in-wonderland.txt"
PRIDE = SHARED / "data" / "books" / "pride-and-prejudice.txt"
DATA = ROOT / "tests" / "data"
