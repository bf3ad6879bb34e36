"""The public ABI of libonnxio.so.0 against the 0.2 baseline, with abidiff
(libabigail): tests/abi/onnxio-0.2.abi, made by scripts/abi_dump.sh from
the commit that pinned the 0.2 option layouts, compared with build/'s
library through the public headers. Functions may be added, and an option
struct may grow at its end (tests/abi/suppressions.ini); anything else that
abidiff reports (a function removed, a type changed) fails.

The check itself is tested on baselines edited to plant a change: a
function the library lacks, a member moved, a struct the library grew at
its end (refused, unless it is an option struct)."""
import platform
import re
import subprocess
from pathlib import Path

import pytest

from conftest import needs

REPO = Path(__file__).resolve().parents[2]
BASELINE = REPO / "tests" / "abi" / "onnxio-0.2.abi"
SUPPRESSIONS = REPO / "tests" / "abi" / "suppressions.ini"

# abidiff's exit status bits (libabigail's abidiff_status).
ABI_CHANGE = 4
ABI_INCOMPATIBLE_CHANGE = 8


@pytest.fixture(scope="module")
def library():
    if platform.machine() != "x86_64":
        pytest.skip("the 0.2 baseline is x86-64's (tests/abi/README.md)")
    needs("build tree")
    lib = REPO / "build" / "libonnxio.so"
    if not lib.exists():
        pytest.fail(f"{lib} is missing: make builds it")
    return lib.resolve()


def abidiff(baseline, library):
    tool = needs("abidiff")
    r = subprocess.run([str(tool), "--no-added-syms", "--suppressions", str(SUPPRESSIONS),
                        "--headers-dir2", str(REPO / "include" / "onnxio"),
                        "--headers-dir2", str(REPO / "build" / "include" / "onnxio"),
                        str(baseline), str(library)], capture_output=True, text=True, timeout=300)
    assert not r.returncode & 3, f"abidiff failed to run: {r.stdout}{r.stderr}"
    return r


def planted(tmp_path, edit):
    text = BASELINE.read_text()
    edited = edit(text)
    assert edited != text, "the plant changed nothing in the baseline"
    out = tmp_path / "planted.abi"
    out.write_text(edited)
    return out


def struct_without_last_member(text, name):
    """The baseline with struct `name` one member shorter: to abidiff, the
    library then added a member at the end."""
    m = re.search(rf"<class-decl name='{name}' size-in-bits='(\d+)'.*?</class-decl>", text, re.S)
    members = list(re.finditer(r"\s*<data-member access='public' layout-offset-in-bits='(\d+)'>.*?</data-member>",
                               m.group(0), re.S))
    last = members[-1]
    decl = m.group(0)
    shorter = decl[:last.start()] + decl[last.end():]
    shorter = shorter.replace(f"size-in-bits='{m.group(1)}'", f"size-in-bits='{last.group(1)}'", 1)
    return text[:m.start()] + shorter + text[m.end():]


def test_the_library_keeps_the_0_2_abi(library):
    r = abidiff(BASELINE, library)
    assert r.returncode == 0, f"an ABI change against 0.2 (abidiff {r.returncode}):\n{r.stdout}"


def test_the_soname_is_the_baselines(library):
    # Every 0.x release keeps 0.2's ABI (CMakeLists.txt): one SONAME.
    out = subprocess.run(["objdump", "-p", str(library)], capture_output=True, text=True, check=True).stdout
    assert re.search(r"SONAME\s+libonnxio\.so\.0\n", out), out
    assert "<abi-corpus version='2.1' architecture='elf-amd-x86_64' soname='libonnxio.so.0'>" in BASELINE.read_text()


def test_a_removed_function_fails(library, tmp_path):
    # The baseline names a function the library does not have.
    def edit(text):
        text = text.replace("<elf-symbol name='onnxio_version' ", "<elf-symbol name='onnxio_version_gone' ", 1)
        return text.replace("<function-decl name='onnxio_version' mangled-name='onnxio_version'",
                            "<function-decl name='onnxio_version_gone' mangled-name='onnxio_version_gone'", 1) \
                   .replace("elf-symbol-id='onnxio_version'>", "elf-symbol-id='onnxio_version_gone'>", 1)
    r = abidiff(planted(tmp_path, edit), library)
    assert r.returncode & ABI_INCOMPATIBLE_CHANGE, r.stdout
    assert "onnxio_version_gone" in r.stdout


def test_a_moved_member_fails(library, tmp_path):
    # onnxio_span's owner at another offset in the baseline.
    def edit(text):
        return re.sub(r"(<class-decl name='onnxio_span' size-in-bits=')192('.*?layout-offset-in-bits=')128(')",
                      r"\g<1>256\g<2>192\g<3>", text, count=1, flags=re.S)
    r = abidiff(planted(tmp_path, edit), library)
    assert r.returncode & ABI_CHANGE, r.stdout
    assert "onnxio_span" in r.stdout


def test_a_struct_grown_at_its_end_fails(library, tmp_path):
    r = abidiff(planted(tmp_path, lambda text: struct_without_last_member(text, "onnxio_span")), library)
    assert r.returncode & ABI_CHANGE, r.stdout
    assert "onnxio_span" in r.stdout


def test_an_option_struct_may_grow_at_its_end(library, tmp_path):
    r = abidiff(planted(tmp_path, lambda text: struct_without_last_member(text, "onnxio_parse_options")), library)
    assert r.returncode == 0, r.stdout


def test_options_def_lists_every_member_of_every_option_struct(library, tmp_path):
    # The members of each option struct as the library's debug information
    # has them (abidw), against src/options.def's rows: tests/c/test_abi.c
    # checks the rows' types and offsets, which cannot see a member missing
    # where padding would have been.
    abidw = Path(needs("abidiff")).with_name("abidw")
    dump = subprocess.run([str(abidw), "--headers-dir", str(REPO / "include" / "onnxio"), str(library)],
                          capture_output=True, text=True, timeout=300, check=True).stdout
    structs = {}
    for m in re.finditer(r"<class-decl name='onnxio_(\w+)_options' size-in-bits='\d+'[^>]*>(.*?)</class-decl>", dump,
                         re.S):
        structs[m.group(1)] = re.findall(r"<var-decl name='(\w+)'", m.group(2))
    rows = {}
    for m in re.finditer(r"^ONNXIO_OPTION\((\w+), (\w+),", (REPO / "src" / "options.def").read_text(), re.M):
        rows.setdefault(m.group(1), []).append(m.group(2))
    assert rows == structs
