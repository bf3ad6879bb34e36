"""torch's ONNX exporter (torch.onnx.export(..., dynamo=True): torch.export,
onnxscript's function library and optimizer, onnx_ir) with `import onnx`
resolved to onnxio, as scripts/onnx_suite/onnx_as_onnxio.py resolves it
for the third-party suites: the model and data files it writes are the
bytes the same export writes on the onnx package, and onnxio and onnx
load them to the same message.

Each export runs in its own process (the mapping of `onnx` cannot be
undone), with torch's random generator seeded so that both exports hold
the same weights.
"""
import subprocess
import sys
import textwrap
from pathlib import Path

import onnx
import pytest

import onnxio
from conftest import needs

REPO = Path(__file__).resolve().parents[2]

EXPORT = textwrap.dedent('''
    import sys
    out, mode = sys.argv[1], sys.argv[2]
    if mode == "onnxio":
        sys.path.insert(0, sys.argv[3])
        import onnx_as_onnxio  # noqa: F401  (import onnx gives onnxio from here on)
    import torch

    torch.manual_seed(0)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(16, 8)
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.norm = torch.nn.LayerNorm(8)

        def forward(self, x, image):
            return self.norm(self.linear(x).relu() + 1), self.conv(image).mean(dim=(2, 3))

    program = torch.onnx.export(Model(), (torch.randn(2, 16), torch.randn(1, 3, 8, 8)), out, dynamo=True,
                                verbose=False)
    print("model_proto:", type(program.model_proto).__module__)
''')


@pytest.mark.slow
def test_dynamo_export_on_onnxio_writes_what_it_writes_on_onnx(tmp_path):
    needs("torch")
    needs("onnxscript")
    outs, said = {}, {}
    for mode in ("onnx", "onnxio"):
        d = tmp_path / mode
        d.mkdir()
        r = subprocess.run([sys.executable, "-c", EXPORT, str(d / "model.onnx"), mode,
                            str(REPO / "scripts" / "onnx_suite")], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        said[mode] = r.stdout
        outs[mode] = {p.name: p.read_bytes() for p in sorted(d.iterdir())}
    # The mapping was in force: the exporter built onnxio's messages.
    assert "model_proto: onnxio" in said["onnxio"] and "model_proto: onnxio" not in said["onnx"], said
    assert sorted(outs["onnx"]) == sorted(outs["onnxio"]) and "model.onnx" in outs["onnx"], outs.keys()
    for name in outs["onnx"]:
        assert outs["onnxio"][name] == outs["onnx"][name], name
    path = tmp_path / "onnxio" / "model.onnx"
    assert onnxio.load(str(path)).SerializeToString() == onnx.load(str(path)).SerializeToString()
