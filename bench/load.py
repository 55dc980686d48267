"""HTTP load benchmark: ``python bench/load.py [--clients N] [--seconds S] [--url URL]``.

The logic lives in :mod:`agent.bench_load` (importable, so tests/test_load.py runs a short
version); this is ``quire bench load``.
"""

import sys

from api.cli import app

if __name__ == "__main__":
    app(["bench", "load", *sys.argv[1:]])
