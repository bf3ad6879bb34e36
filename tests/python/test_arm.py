"""The Arm SHA instructions' code (SHA-1 and SHA-256, src/base/digest.c)
against hashlib, built for 64-bit Arm and run under qemu-user.

The library is cross-compiled with Debian's gcc-aarch64-linux-gnu
(cmake/aarch64-linux-gnu.cmake, structure only: no tests, no Python) and
linked into tests/cross/sha_files.c, which prints each file's SHA-1 and
SHA-256 with the hardware engine and with the portable code. qemu-aarch64
emulates a CPU with the SHA extensions, so the hardware engine is Arm's:
every digest of both must be hashlib's, at every block and padding
boundary.
"""
import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from conftest import needs

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
LENGTHS = [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 1000, 4096, 65536 + 7, (1 << 20) + 17]


def test_arm_sha_instructions_against_hashlib(tmp_path):
    gcc = needs("aarch64-linux-gnu-gcc")
    qemu = needs("qemu-aarch64")
    cmake = needs("cmake")
    build = tmp_path / "build-arm"
    env = dict(os.environ, CFLAGS="")
    subprocess.run([cmake, "-S", REPO, "-B", build, f"-DCMAKE_TOOLCHAIN_FILE={REPO / 'cmake' / 'aarch64-linux-gnu.cmake'}",
                    "-DONNXIO_BUNDLED=ON", "-DONNXIO_TESTS=OFF", "-DONNXIO_PYTHON=OFF", "-DCMAKE_BUILD_TYPE=Release"],
                   check=True, capture_output=True, env=env)
    subprocess.run([cmake, "--build", build, "-j2", "--target", "onnxio_static"], check=True, capture_output=True)
    program = tmp_path / "sha_files"
    subprocess.run([gcc, "-O2", "-std=c11", "-D_GNU_SOURCE", f"-I{REPO / 'src'}", f"-I{REPO / 'include'}",
                    f"-I{build / 'include'}", REPO / "tests" / "cross" / "sha_files.c", build / "libonnxio.a",
                    "-lpthread", "-ldl", "-lm", "-o", program], check=True)
    rng = __import__("random").Random(5)
    files = []
    for n in LENGTHS:
        p = tmp_path / f"d{n}.bin"
        p.write_bytes(rng.randbytes(n))
        files.append(p)
    out = subprocess.run([qemu, "-L", "/usr/aarch64-linux-gnu", program, *files], check=True, capture_output=True,
                         text=True, timeout=600).stdout.splitlines()
    assert out[-1] == "engine ARMv8 SHA"
    seen = {}
    for line in out[:-1]:
        engine, sha1, sha256, path = line.split(" ")
        data = Path(path).read_bytes()
        assert (sha1, sha256) == (hashlib.sha1(data).hexdigest(), hashlib.sha256(data).hexdigest()), (engine, path)
        seen.setdefault(engine, 0)
        seen[engine] += 1
    assert seen == {"hardware": len(LENGTHS), "portable": len(LENGTHS)}
