"""What scripts/onnx_suite/run.py and scripts/clients/run.py share: the
pytest command line of a run with the real onnx ("native") or with
`import onnx` resolved to onnxio ("onnxio", the onnx_as_onnxio plugin
beside this file), the outcomes of a run read back from its junit file,
and failure causes normalized for grouping.
"""
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

PLUGIN_DIR = Path(__file__).resolve().parent
MODES = ("native", "onnxio")


def pytest_command(python, mode, xml, tb="line", extra=()):
    """(argv, env) of a pytest run whose outcomes go to `xml`; in mode
    "onnxio" the plugin is loaded first (-p onnx_as_onnxio, PYTHONPATH), so
    every `import onnx` of the run gets onnxio as `import onnxio as onnx`
    would give it."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    args = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", f"--tb={tb}",
            "--continue-on-collection-errors", f"--junitxml={xml}", "-W", "ignore", *extra]
    env = dict(os.environ)
    if mode == "onnxio":
        args += ["-p", "onnx_as_onnxio"]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGIN_DIR), env.get("PYTHONPATH")]))
    return args, env


def outcomes(xml, details=False):
    """{test id: (outcome, message)} from a junit file, outcome one of
    passed, failed, error, skipped; message the first line of the failure
    (with details=True a third item: the failure's full text)."""
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        tid = f"{case.get('classname')}::{case.get('name')}"
        result, message, text = "passed", "", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                result = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                text = child.text or ""
                message = (child.get("message") or text).strip().splitlines()[0:1]
                message = message[0][:200] if message else ""
                break
        out[tid] = (result, message, text) if details else (result, message)
    return out


_EXC_LINE = re.compile(r"^E\s+((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Warning|Interrupt)\b.*)$")
_SETUP = re.compile(r'^failed on (?:setup|teardown) with "(.*)"$', re.S)


def cause(message, text=""):
    """The cause of a failure, normalized for grouping: the exception type
    and the first line of its message, with addresses, numbers, paths and
    long quotes abstracted. A generic message (collection failure, a bare
    assertion) is replaced by the last `E   Type: ...` line of the text."""
    m = _SETUP.match(message)
    if m:
        message = m.group(1)
    if not re.match(r"^[\w.]+(Error|Exception|Exit)\b", message) or message.startswith("AssertionError"):
        for line in reversed(text.splitlines()):
            e = _EXC_LINE.match(line)
            if e:
                message = e.group(1)
                break
    message = message.strip().splitlines()[0] if message.strip() else "(no message)"
    message = re.sub(r"0x[0-9a-fA-F]+", "0x…", message)
    message = re.sub(r"(/[\w.@+-]+){2,}", "<path>", message)
    message = re.sub(r"'[^']{60,}'", "'…'", message)
    message = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e-?\d+)?(?![\w])", "N", message)
    return message[:160]


def key_lines(text, n=6):
    """The lines of a failure's traceback that say where and what: the
    `file:line` frames and the `E` lines, the last n of them."""
    keep = [line.rstrip() for line in text.splitlines()
            if line.startswith("E ") or re.match(r"^\S.*:\d+: ", line) or re.match(r"^\s*File \"", line)]
    return keep[-n:]
