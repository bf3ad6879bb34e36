#!/usr/bin/env python3
"""Checks the library's layers against docs/design.md's "Layers" table.

    python3 scripts/check_layers.py [--root DIR]

The table lists, bottom to top, each layer's folder under src/ and its
files. The check fails (exit 1, one line per finding) when:
- a .c or .h file lies directly in src/, or in a folder no layer names;
- a .c file the table lists is missing, or a .c file is not listed;
- a file includes a private header of a higher layer;
- private headers include each other in a circle.
"""
import argparse
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


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
    print("check_layers: every file in its layer, no include up or in a circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
