#!/usr/bin/env python3
"""Checks the library's layers against docs/design.md's "Layers" table,
and what the proto layer and the command may not hold.

    python3 scripts/check_layers.py [--root DIR]

The table lists, bottom to top, each layer's folder under src/ and its
files. The check fails (exit 1, one line per finding) when:
- a .c or .h file lies directly in src/, or in a folder no layer names;
- a .c file the table lists is missing, or a .c file is not listed;
- a file includes a private header of a higher layer;
- private headers include each other in a circle;
- src/proto/ (rules on bytes in memory) opens, reads or writes a file or
  holds a file descriptor, uses the thread pool, or takes a path apart
  (the io layer's);
- cli/ holds a table of file extensions (a string literal that is an
  extension: ".json") or takes a path apart (dirname, basename, a '/'
  character): the library's onnxio_path_extension, onnxio_model_dir and
  onnxio_path_file_name are their one home.
Comments and the text of string literals are not code here: help texts
may name ".onnxz" files and the strrchr(path, '/') they do not call.
"""
import argparse
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# What src/proto/ may not hold, each with why (POOL_INCLUDE on the lines
# as written, the others on the code without comments and strings).
POOL_INCLUDE = re.compile(r'^\s*#\s*include\s+"pool/pool\.h"')
PROTO_RULES = [
    (re.compile(r"\b(open|openat|read|pread|write|pwrite|close|lseek|fstat|stat|fopen|fwrite|fputs|fflush|fclose)\s*\("),
     "a file opened, read or written (the io layer's)"),
    (re.compile(r"\bonnxio__(open_\w+|read_at|read_into|write_all|close|sys_\w+|map_file|map_fd)\b"),
     "a file opened, read or written (the io layer's)"),
    (re.compile(r"\bint\s+\**\w*fd\b|(->|\.)\s*fd\b"), "a file descriptor (the io layer's)"),
    (re.compile(r"\bonnxio__(pool|job)\w*|\bONNXIO__JOB_\w+"), "the thread pool (the io layer's)"),
    (re.compile(r"\b(dirname|basename|realpath)\s*\(|\bonnxio__(dirname|basename|path_join|model_dir)\b|"
                r"\bonnxio_(model_dir|path_file_name|path_extension)\b|\b(strrchr|memrchr)\s*\([^;]*'/'"),
     "path handling (the io layer's: file.c)"),
]

# What cli/ may not hold, each with why. EXTENSION is matched against the
# content of each string literal, the others against the code.
EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9_]*")
CLI_PATH = ("path handling (the model's directory and file names are the library's: onnxio_model_dir, "
            "onnxio_path_file_name)")
CLI_RULES = [(re.compile(r"\b(dirname|basename)\s*\(|'/'"), CLI_PATH)]
CLI_EXTENSION = ("a file extension literal (the extension table is the library's: onnxio_path_extension, "
                 "onnxio_file_extension_at)")

# The encoder's sink (src/proto/encode.c, codec.h) still writes files on
# the pool: these lines of it, exactly as written (less a trailing
# comment), pass the proto rules until the sink leaves the proto layer.
# An entry whose line is gone is a finding itself, so that the entries go
# with the lines.
def c_code(text: str):
    """`text` (C) as (code, literals): code with comments blanked and the
    content of string literals blanked (their quotes kept; line breaks
    kept everywhere), and [(line, content)] of the string literals."""
    out, literals = [], []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            chunk = text[i:j]
            out.append("".join("\n" if ch == "\n" else " " for ch in chunk))
            line += chunk.count("\n")
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            body = text[i + 1:j]
            if c == '"':
                literals.append((line, body))
                out.append('"' + " " * len(body) + '"')
            else:
                out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            line += c == "\n"
            i += 1
    return "".join(out), literals


def check_rules(root: Path):
    """The proto layer's and the command's rules: one finding per line."""
    problems = []
    for f in sorted((root / "src" / "proto").glob("*.[ch]")):
        rel = f.relative_to(root).as_posix()
        text = f.read_text()
        code, _ = c_code(text)
        raw_lines = text.splitlines()
        for no, line in enumerate(code.splitlines(), 1):
            found = [(m.group(0).strip(), why) for rule, why in PROTO_RULES for m in [rule.search(line)] if m]
            if POOL_INCLUDE.match(raw_lines[no - 1]):
                found.append(('#include "pool/pool.h"', "the thread pool (the io layer's)"))
            if found:
                what, why = found[0]
                problems.append(f"{rel}:{no}: {why}: {what}")
    cli = root / "cli"
    for f in sorted(list(cli.glob("*.c")) + list(cli.glob("*.h"))):
        rel = f.relative_to(root).as_posix()
        code, literals = c_code(f.read_text())
        found = []
        for no, body in literals:
            if EXTENSION.fullmatch(body):
                found.append((no, f'{CLI_EXTENSION}: "{body}"'))
            elif body == "/":
                found.append((no, f'{CLI_PATH}: "/"'))
        for no, line in enumerate(code.splitlines(), 1):
            for rule, why in CLI_RULES:
                m = rule.search(line)
                if m:
                    found.append((no, f"{why}: {m.group(0).strip()}"))
        problems += [f"{rel}:{no}: {what}" for no, what in sorted(found, key=lambda x: x[0])]
    return problems


def layers_of(design: str):
    """[(name, folder, [files])] from the "Layers" section's table."""
    section = design.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not cells[1].startswith("`src/"):
            continue
        folder = cells[1].strip("`")
        files = re.findall(r"`([a-z_]+\.c)`", cells[3])
        rows.append((cells[0], folder, files))
    return rows


def check(root: Path):
    problems = []
    design = (root / "docs" / "design.md").read_text()
    rows = layers_of(design)
    if not rows:
        return ["docs/design.md: no layer table found under \"## Layers\""]
    rank = {folder: i for i, (_, folder, _) in enumerate(rows)}
    src = root / "src"
    for f in sorted(src.glob("*.[ch]")):
        problems.append(f"{f.relative_to(root)}: a source file directly in src/ (each belongs to a layer's folder)")
    listed = {f"{folder}/{name}" for _, folder, files in rows for name in files}
    present = set()
    for f in sorted(src.rglob("*.[ch]")):
        rel = f.relative_to(root).as_posix()
        folder = rel.rsplit("/", 1)[0]
        if folder == "src":
            continue
        if folder not in rank:
            problems.append(f"{rel}: in {folder}/, which no layer of docs/design.md names")
            continue
        if f.suffix == ".c":
            present.add(rel)
            if rel not in listed:
                problems.append(f"{rel}: not in its layer's row of docs/design.md")
    for missing in sorted(listed - present):
        problems.append(f"{missing}: listed in docs/design.md but missing")
    # Includes: each quoted include is resolved against src/ (the library's
    # include directory) or the including file's folder.
    graph = {}
    for f in sorted(src.rglob("*.[ch]")):
        rel = f.relative_to(root).as_posix()
        folder = rel.rsplit("/", 1)[0]
        if folder not in rank:
            continue
        for inc in INCLUDE.findall(f.read_text()):
            if inc.startswith("onnxio/"):
                continue  # the public headers
            target = None
            for cand in (src / inc, f.parent / inc):
                if cand.exists():
                    target = cand.relative_to(root).as_posix()
                    break
            if target is None:
                problems.append(f"{rel}: includes \"{inc}\", which is not in src/")
                continue
            tfolder = target.rsplit("/", 1)[0]
            if tfolder in rank and rank[tfolder] > rank[folder]:
                problems.append(f"{rel}: includes {target}, of a higher layer ({tfolder} above {folder})")
            if f.suffix == ".h":
                graph.setdefault(rel, set()).add(target)
    # Circles among private headers.
    state = {}

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
                problems.append("include circle: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    problems += check_rules(root)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    args = ap.parse_args()
    problems = check(Path(args.root))
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("check_layers: every file in its layer, no include up or in a circle; no file, pool or path in "
          "src/proto, no extension table or path handling in cli/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
