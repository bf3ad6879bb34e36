"""Lets the tests of this folder import their helper modules
(onnxio_ctypes, protobuild, datafiles) whatever pytest's import mode and
working directory."""
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


# When pytest itself dies (a crash in the library under test), CI shows only
# the tail of the output, where the faulthandler stack is cut off. The
# Makefile names $ONNXIO_PYTEST_CURRENT here and prints the test that was
# running when the process died.
_CURRENT = __import__("os").environ.get("ONNXIO_PYTEST_CURRENT")


def pytest_runtest_logstart(nodeid, location):
    if _CURRENT:
        with open(_CURRENT, "w") as f:
            f.write(nodeid + "\n")


def pytest_configure(config):
    # A helper named like a test is collected and its return value warned
    # about: an error here, so that such a helper is renamed.
    config.addinivalue_line("filterwarnings", "error::pytest.PytestReturnNotNoneWarning")
