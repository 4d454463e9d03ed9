"""Benchmarks: `make bench` (python -m bench). Not part of `make test`.

The benchmarks drive the same loopback fakes and kits as the tests (`tests/fakes`,
`tests/kit`), which import each other as top-level modules (`import kit`): pytest puts
the tests folder on `sys.path` for the tests, and this does the same for the benchmarks.
"""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent.parent / "tests")
if _TESTS not in sys.path:
    sys.path.append(_TESTS)
