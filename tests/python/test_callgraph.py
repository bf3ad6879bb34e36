"""scripts/callgraph.py on small C trees written here: `circles` finds a
circle between source files (through a call, through a function's
address, through a header's static inline function) and nothing in a
chain; `walk` follows a value through an assignment and a store into a
struct member, in source order, and counts its returns; a file that does
not parse fails the tool."""
import json
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO, needs

TOOL = REPO / "scripts" / "callgraph.py"


@pytest.fixture(autouse=True)
def _libclang():
    needs("clang.cindex")


def write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip())


def run(root, *args):
    return subprocess.run([sys.executable, str(TOOL), "--root", str(root), *args],
                          capture_output=True, text=True, timeout=120)


def circles_json(root, *args):
    r = run(root, "circles", "--json", *args)
    assert r.returncode in (0, 1), r.stderr
    found = json.loads(r.stdout)["circles"]
    assert r.returncode == (1 if found else 0)
    return found


# a.c -> b.c -> a.c, and c.c -> a.c outside the circle
CIRCLE = {
    "src/a.c": """
        void b_mid(void);
        void a_back(void) {}
        void a_start(void)
        {
            b_mid();
        }
    """,
    "src/b.c": """
        void a_back(void);
        void b_mid(void) { a_back(); }
    """,
    "src/c.c": """
        void a_start(void);
        void c_top(void) { a_start(); }
    """,
}


def test_circle_found_and_reported(tmp_path):
    write(tmp_path, CIRCLE)
    r = run(tmp_path, "circles")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "circle 1: 2 files: src/a.c, src/b.c\n" in r.stdout
    assert "  src/a.c -> src/b.c: a_start -> b_mid (src/a.c:5; 1 reference)\n" in r.stdout
    assert "  src/b.c -> src/a.c: b_mid -> a_back (src/b.c:2; 1 reference)\n" in r.stdout
    assert "src/c.c" not in r.stdout
    assert r.stdout.endswith("circles between source files: 1\n")


def test_chain_has_no_circle(tmp_path):
    write(tmp_path, {
        "src/a.c": "void b_mid(void);\nvoid a_start(void) { b_mid(); }\n",
        "src/b.c": "void c_end(void);\nvoid b_mid(void) { c_end(); }\n",
        "src/c.c": "void c_end(void) {}\nvoid c_more(void) { c_end(); }\n",
    })
    r = run(tmp_path, "circles")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "circles between source files: none\n"


def test_address_taken_closes_a_circle(tmp_path):
    write(tmp_path, {
        "src/a.c": "void b_mid(void);\nvoid a_back(void) {}\nvoid a_start(void) { b_mid(); }\n",
        "src/b.c": "void a_back(void);\nvoid (*hook)(void);\nvoid b_mid(void) { hook = a_back; }\n",
    })
    found = circles_json(tmp_path)
    assert [c["files"] for c in found] == [["src/a.c", "src/b.c"]]
    back = [e for e in found[0]["edges"] if e["from"] == "src/b.c"]
    assert back == [{"from": "src/b.c", "to": "src/a.c", "caller": "b_mid", "callee": "a_back",
                     "at": "src/b.c:3", "references": 1}]


def test_header_belongs_to_its_own_c_file(tmp_path):
    # a.h's inline function is a.c's node: a.c(+a.h) <-> b.c is a circle;
    # h.h has no h.c, so its inline function is a node of its own, and
    # h.h -> b.c -> ... does not return to it.
    write(tmp_path, {
        "src/a.h": "void b_mid(void);\nstatic inline void a_inline(void) { b_mid(); }\n",
        "src/a.c": '#include "a.h"\nvoid a_back(void) {}\nvoid a_use(void) { a_inline(); }\n',
        "src/b.c": "void a_back(void);\nvoid b_mid(void) { a_back(); }\n",
        "src/h.h": "void b_mid(void);\nstatic inline void h_inline(void) { b_mid(); }\n",
        "src/d.c": '#include "h.h"\nvoid d_use(void) { h_inline(); }\n',
    })
    found = circles_json(tmp_path)
    assert [c["files"] for c in found] == [["src/a.c", "src/b.c"]]
    edges = {(e["from"], e["to"]): (e["caller"], e["callee"]) for e in found[0]["edges"]}
    assert edges == {("src/a.c", "src/b.c"): ("a_inline", "b_mid"), ("src/b.c", "src/a.c"): ("b_mid", "a_back")}


def test_under_restricts_the_graph(tmp_path):
    write(tmp_path, {
        "src/lib.c": "void cli_hook(void);\nvoid lib_run(void) { cli_hook(); }\n",
        "cli/main.c": "void lib_run(void);\nvoid cli_hook(void) {}\nint main(void) { lib_run(); return 0; }\n",
    })
    assert [c["files"] for c in circles_json(tmp_path)] == [["cli/main.c", "src/lib.c"]]
    assert circles_json(tmp_path, "--under", "src") == []


def test_parse_error_fails_the_tool(tmp_path):
    write(tmp_path, {
        "src/a.c": "void a(void) {}\n",
        "src/bad.c": "void b(void) { undeclared_variable = 1; }\n",
    })
    for command in (["circles"], ["walk", "a", "x"]):
        r = run(tmp_path, *command)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "bad.c:1:" in r.stderr and "undeclared_variable" in r.stderr
        assert "1 parse error" in r.stderr
    write(tmp_path, {"src/bad.c": '#include "missing.h"\nvoid b(void) {}\n'})
    r = run(tmp_path, "circles")
    assert r.returncode == 2 and "missing.h" in r.stderr


WALK = {
    "src/req.h": """
        struct req { const char *name; int flags; };
    """,
    # start: `path` reaches lib_open through the assignment p = path, and
    # lib_use through the store r.name = path; n reaches nothing.
    "src/main.c": """
        #include "req.h"
        void lib_open(const char *p);
        void lib_use(struct req *r);
        void lib_a(const char *s);
        void lib_b(const char *s);
        void unrelated(int n);
        void main_helper(const char *q) { (void)q; }
        void start(const char *path, int n, void (*cb)(const char *), int c)
        {
            const char *p;
            struct req r;
            unrelated(n);
            p = path;
            lib_open(p);
            r.flags = n;
            r.name = path;
            lib_use(&r);
            lib_open(r.name);
            cb(path);
            void (*g)(const char *) = c ? lib_b : lib_a;
            g(p);
        }
    """,
    "src/lib.c": """
        #include "req.h"
        void main_helper(const char *q);
        void deep(const char *s, int k);
        void lib_open(const char *p) { main_helper(p); }
        void lib_use(struct req *r) { deep(0, 1); deep(r->name, r->flags); }
        void lib_a(const char *s) { (void)s; }
        void lib_b(const char *s) { (void)s; }
    """,
    "src/deep.c": """
        void deep(const char *s, int k) { (void)s; (void)k; }
    """,
    "src/other.c": """
        void unrelated(int n) { (void)n; }
    """,
}


def test_walk_through_assignment_and_member_store(tmp_path):
    write(tmp_path, WALK)
    r = run(tmp_path, "walk", "start", "path", "--json", "--to", "deep")
    assert r.returncode == 0, r.stdout + r.stderr
    w = json.loads(r.stdout)
    assert [(s["file"], s["function"]) for s in w["stops"]] == [
        ("src/main.c", "start"),
        ("src/lib.c", "lib_open"),
        ("src/main.c", "main_helper"),  # back in main.c: a return
        ("src/lib.c", "lib_use"),       # back in lib.c: a return
        ("src/deep.c", "deep"),
        ("src/lib.c", "lib_a"),         # g: c ? lib_b : lib_a, in name order; a return
        ("src/lib.c", "lib_b"),
    ]
    assert w["files"] == 3
    assert w["returns"] == 3
    assert w["return_steps"] == [{"n": 3, "from": "src/lib.c", "to": "src/main.c"},
                                 {"n": 4, "from": "src/main.c", "to": "src/lib.c"},
                                 {"n": 6, "from": "src/deep.c", "to": "src/lib.c"}]
    assert w["function_pointer_calls"] == [{"stop": 1, "function": "start", "at": "src/main.c:19",
                                            "callee": "cb", "arguments": [1]}]
    # deep(0, 1) passes nothing tainted; in deep(r->name, r->flags) the
    # field name carries the value (r.name = path), flags (an int) does not
    assert [(c["stop"], c["caller"], c["at"], c["arguments"]) for c in w["to"]["callers"]] == [
        (4, "lib_use", "src/lib.c:5", [1])]


def test_walk_text_output(tmp_path):
    write(tmp_path, WALK)
    r = run(tmp_path, "walk", "start", "path", "--to", "lib_open")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[:8] == [
        "walk: path of start (src/main.c)",
        "1  src/main.c  start",
        "2  src/lib.c  lib_open",
        "3  src/main.c  main_helper",
        "4  src/lib.c  lib_use",
        "5  src/deep.c  deep",
        "6  src/lib.c  lib_a",
        "7  src/lib.c  lib_b",
    ]
    assert "stops: 7" in lines and "files: 3" in lines and "returns: 3" in lines
    # both calls of lib_open in start pass the value (p, then r.name)
    i = lines.index("passed to lib_open by: 2")
    assert lines[i + 1:i + 3] == ["  1  src/main.c  start  (src/main.c:14, argument 1)",
                                  "  1  src/main.c  start  (src/main.c:18, argument 1)"]


def test_walk_from_an_untainting_parameter(tmp_path):
    write(tmp_path, WALK)
    w = json.loads(run(tmp_path, "walk", "start", "n", "--json").stdout)
    # n, an int, is passed to no call (unrelated(n): a number carries
    # nothing); r.flags = n taints r, so lib_use(&r) is followed, but in it
    # neither r->name (a field n never reached) nor r->flags (an int)
    # carries n further
    assert [s["function"] for s in w["stops"]] == ["start", "lib_use"]
    r = run(tmp_path, "walk", "start", "nope")
    assert r.returncode != 0 and "has no parameter nope" in r.stderr


def test_walk_through_a_writer_table_and_derived_values(tmp_path):
    # w->plan(&st) is followed to every function a designated initializer
    # sets `plan` to; st->count (a field the value never reached) carries
    # nothing; dir_of(path) (a char * from the value) carries it, strlen
    # (a number) does not.
    write(tmp_path, {
        "src/w.h": """
            struct state { const char *path; int *count; };
            struct writer { int (*plan)(struct state *); };
        """,
        "src/w.c": """
            #include "w.h"
            void sink(const char *p);
            void counted(int *c);
            static int plan_a(struct state *st) { counted(st->count); sink(st->path); return 0; }
            static int plan_b(struct state *st) { (void)st; return 0; }
            const struct writer WA = {.plan = plan_a};
            const struct writer WB = {.plan = plan_b};
        """,
        "src/main.c": """
            #include "w.h"
            unsigned long len_of(const char *p);
            const char *dir_of(const char *p);
            void use_len(unsigned long n);
            void use_dir(const char *d);
            void start(const char *path, const struct writer *w, int *count)
            {
                struct state st = {.path = path, .count = count};
                use_len(len_of(path));
                use_dir(dir_of(path));
                w->plan(&st);
            }
        """,
        "src/lib.c": """
            void sink(const char *p) { (void)p; }
            void counted(int *c) { (void)c; }
            unsigned long len_of(const char *p) { return p != 0; }
            const char *dir_of(const char *p) { return p; }
            void use_len(unsigned long n) { (void)n; }
            void use_dir(const char *d) { (void)d; }
        """,
    })
    r = run(tmp_path, "walk", "start", "path", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    w = json.loads(r.stdout)
    assert [s["function"] for s in w["stops"]] == ["start", "len_of", "use_dir", "dir_of", "plan_a", "sink",
                                                   "plan_b"]
    assert w["function_pointer_calls"] == []


def test_the_repository():
    """The tree itself: no circle of calls between the source files of
    src/, cli/ and python/ext/; the path of onnxio_save_model reaches
    the transaction from one place, in at most 40 stops and 25 returns;
    the path of the command's load never comes back into cli/ once in
    the library (cli/ adds only its progress display)."""
    r = subprocess.run([sys.executable, str(TOOL), "circles", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["circles"] == []

    r = subprocess.run([sys.executable, str(TOOL), "walk", "onnxio_save_model", "path", "--json",
                        "--to", "onnxio__txn_begin"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    w = json.loads(r.stdout)
    assert len(w["stops"]) <= 40 and w["returns"] <= 25, (len(w["stops"]), w["returns"])
    assert [c["caller"] for c in w["to"]["callers"]] == ["onnxio__save"]

    r = subprocess.run([sys.executable, str(TOOL), "walk", "cli_load", "path", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    files = [s["file"] for s in json.loads(r.stdout)["stops"]]
    first_lib = next(i for i, f in enumerate(files) if f.startswith("src/"))
    assert all(f.startswith("cli/") for f in files[:first_lib])
    assert not any(f.startswith("cli/") for f in files[first_lib:]), files
