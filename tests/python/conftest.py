"""Lets the tests of this folder import their helper modules
(onnxio_ctypes, protobuild, datafiles) whatever pytest's import mode and
working directory."""
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
