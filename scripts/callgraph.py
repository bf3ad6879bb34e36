#!/usr/bin/env python3
"""The static call graph of the C sources, read with libclang.

    python scripts/callgraph.py circles [--under DIR]... [--json] [--root DIR]
    python scripts/callgraph.py walk FUNCTION PARAM [--to NAME] [--under DIR]... [--json] [--root DIR]

Every .c file under src/, cli/ and python/ext/ (or under the --under
folders) is parsed as CMakeLists.txt compiles it: -std=c11, its
target's definitions (_GNU_SOURCE; ONNXIO_BUILDING for src/) and
include folders (include/ and the generated one everywhere; src/ and
third_party/ for src/, cli/ for cli/, python/ext/ and Python's headers
for python/ext/). The generated folder (onnxio/schema.def, status.def,
options.def and limits.h) is written into a temporary folder from
src/*.def as CMakeLists.txt writes it, so that no build is needed and a
stale build/ cannot mislead. Clang's built-in headers (stddef.h, ...)
are those of the clang (else gcc) on PATH. A file that does not parse
(any error diagnostic, a missing header included) fails the tool with
its diagnostics, exit status 2.

Functions. A function belongs to the file that holds its definition: a
.c file, or a header for a static inline function defined there. A
function of internal linkage is named by its file and name, one of
external linkage by its name. A function without a definition in the
parsed files (libc, CPython, third_party/) is outside code.

circles
    The file-level call graph: a node per file, a header and the .c file
    of the same name in its folder (save.h, save.c) being one node, named
    by the .c file. File A -> file B when a function of A calls or names
    (takes the address of) a function of B; a file-scope initializer of A
    that names a function of B (a method table) counts too. Prints every
    strongly connected component of more than one node, a circle between
    source files, with each of its edges and one example of it (the
    caller -> callee of the first reference, in the caller's file order),
    and exits 1 when there is one; 0 when there is none.

walk FUNCTION PARAM
    Follows the value of the parameter PARAM of FUNCTION (a name, or
    FILE:NAME where several files define one) through the calls it is
    passed to: a depth-first walk, in source order, through the files
    parsed (--under restricts them as for circles).
    - What carries the value: a tainted variable; a read of a tainted
      struct member (s.name, s->name: the field, in any struct of its
      type); a call's result that is a char * when one of its arguments
      carries it (dirname(path); not a uint8_t * into a struct's bytes);
      an expression made of those
      (&s, *p, p + 1, a[i], c ? p : q). A member read of a field not
      tainted carries nothing, even from a tainted struct (s->count).
      A type that can hold the value is a pointer, an array, a struct or
      a union; a number, an enum or a bool (a status, a length, a
      descriptor) never carries it.
    - Within a function, to a fixed point (flow-insensitive: every
      statement of the body counts, wherever it stands), from its
      tainted parameters: a variable of a type that can hold the value
      is tainted by an initialization or assignment from what carries
      it (p = path, a[i] = path, *p = path); a store into a struct
      member from what carries it (s.name = path, s->name = path, or
      the initializer {.name = path}) taints the field, for the rest of
      the walk, and the variable s.
    - Every call of the body (in the order of their start in the source,
      a call before the calls in its arguments) with an argument that
      carries the value and whose type can hold it is followed, before
      the next call: the callee's parameters at those positions are
      tainted, and its body is walked. A value passed in a variadic
      position reaches the callee but taints none of its parameters.
    - A call through a function pointer is reported, not followed,
      unless the pointer is a local variable every initializer and
      assignment of which names a function (fn = a, fn = c ? a : b), or
      a struct member (w->plan(...)) that file-scope designated
      initializers set to functions (.plan = dir_plan): then each of
      those functions is followed.
    - A function is a stop once, the first time the walk reaches it;
      outside code is never one. A function reached again with a
      parameter tainted that was not before is walked again (its calls
      can add stops), and yields no second stop.
    Prints the stops in order, `N  FILE  FUNCTION`, then how many stops,
    how many distinct files (a header with its own .c file counting as
    that file, as in circles) and how many returns: the steps from one
    stop to the next that go to a different file, one of the earlier
    stops' files; each return is listed. With --to NAME, every call in
    the walk that passes the value to the function NAME (outside code
    too: --to fopen), with the stop that makes it.

--json prints the same as JSON. Exit status: 0; 1 when circles finds
one; 2 for a parse error or a usage error.
"""
import argparse
import ctypes
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections import defaultdict
from pathlib import Path



def fail(message):
    """A usage or setup error: exit status 2, as argparse's (1 is circles')."""
    print(f"callgraph: {message}", file=sys.stderr)
    sys.exit(2)


try:
    import clang.cindex as ci
except ImportError:
    fail("the libclang package is missing: pip install -r requirements.txt")

SCOPES = ("src", "cli", "python/ext")
# Folders whose headers hold project functions (static inline ones).
PROJECT_DIRS = ("src", "cli", "python/ext", "include")
GENERATED_DEFS = ("schema.def", "status.def", "options.def")
CONSTANT_ROW = re.compile(r'^ONNXIO_CONSTANT\(([A-Z0-9_]+), ([^"]+), "(.*)"\)$')

K = ci.CursorKind
VARS = (K.VAR_DECL, K.PARM_DECL)
# What stands between an expression and the variable it stores into or
# calls through.
WRAPPERS = (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CSTYLE_CAST_EXPR)
LVALUE_STEPS = WRAPPERS + (K.MEMBER_REF_EXPR, K.ARRAY_SUBSCRIPT_EXPR, K.UNARY_OPERATOR)


# ---- the compile ------------------------------------------------------------

def generate_includes(root, into):
    """The folder CMakeLists.txt generates (build/include): the .def files
    of src/ under onnxio/, and onnxio/limits.h from options.def's
    ONNXIO_CONSTANT rows. Only what src/ has the sources of."""
    out = into / "onnxio"
    out.mkdir(parents=True)
    for name in GENERATED_DEFS:
        if (root / "src" / name).is_file():
            shutil.copyfile(root / "src" / name, out / name)
    options = root / "src" / "options.def"
    if options.is_file():
        text = ["/* Generated by CMake from src/options.def (ONNXIO_CONSTANT rows): edit that. */",
                "#ifndef ONNXIO_LIMITS_H", "#define ONNXIO_LIMITS_H"]
        for row in options.read_text().splitlines():
            if row.startswith("ONNXIO_CONSTANT("):
                m = CONSTANT_ROW.match(row)
                if not m:
                    fail(f"src/options.def: cannot read the row: {row}")
                text += [f"/* {m.group(3)} */", f"#define ONNXIO_{m.group(1)} {m.group(2)}"]
        text.append("#endif")
        (out / "limits.h").write_text("\n".join(text) + "\n")


def builtin_includes():
    """Clang's built-in headers: the resource folder of the clang on PATH
    (the libclang wheel ships none), else gcc's equivalent."""
    for cmd, sub in ((["clang", "-print-resource-dir"], "include"), (["gcc", "-print-file-name=include"], "")):
        if shutil.which(cmd[0]):
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
            except (OSError, subprocess.CalledProcessError):
                continue
            d = Path(out) / sub if sub else Path(out)
            if (d / "stddef.h").is_file():
                return d
    return None


def compile_args(root, rel, generated, builtin):
    """The flags of CMakeLists.txt's target for the file `rel`."""
    args = ["-x", "c", "-std=c11", "-D_GNU_SOURCE", f"-I{root / 'include'}", f"-I{generated}"]
    if rel.startswith("src/"):
        # ONNXIO_NO_SIMD: digest.c without its x86 intrinsics, whose headers
        # (clang's, found on PATH) need not match the libclang wheel's builtins
        args += ["-DONNXIO_BUILDING", "-DONNXIO_NO_SIMD", f"-I{root / 'src'}", f"-I{root / 'third_party'}",
                 # ONNXIO_BUNDLED=AUTO: the system's libdeflate, else the copy
                 f"-idirafter{root / 'third_party' / 'libdeflate'}"]
    elif rel.startswith("cli/"):
        args.append(f"-I{root / 'cli'}")
    elif rel.startswith("python/ext/"):
        args += [f"-I{root / 'python' / 'ext'}", f"-I{sysconfig.get_paths()['include']}"]
    if builtin:
        args += ["-isystem", str(builtin)]
    return args


def sources(root, under, required):
    """The .c files under the folders `under`, relative to root; a folder
    that is missing is an error when `required` (named by --under)."""
    out = []
    for d in under:
        base = root / d
        if not base.is_dir():
            if required:
                fail(f"{d}: no such folder under {root}")
            continue
        for f in sorted(base.rglob("*.c")):
            rel = f.relative_to(root).as_posix()
            if rel not in out:
                out.append(rel)
    return out


# ---- what each translation unit says --------------------------------------

class Extractor:
    """The functions defined in one translation unit's project files, with
    the facts the two commands need: their references to functions, and
    for the walk their assignments and calls."""

    def __init__(self, root, tu, functions, file_refs, field_fns):
        self.field_fns = field_fns   # field USR -> {function keys} (designated initializers)
        self.root = root
        self.tu = tu
        self.functions = functions   # key -> record, shared by the units
        self.file_refs = file_refs   # [(file, variable, callee key, callee name, line)]
        self._rel = {}
        self.assign_kinds = _assign_kinds()

    def fields(self, c):
        field_values(c, self, self.field_fns)

    def rel(self, f):
        """The path of a file under the root's project folders, else None."""
        if f is None:
            return None
        name = f.name
        r = self._rel.get(name, False)
        if r is False:
            try:
                r = Path(os.path.abspath(name)).relative_to(self.root).as_posix()
            except ValueError:
                r = None
            if r is not None and not any(r.startswith(d + "/") for d in PROJECT_DIRS):
                r = None
            self._rel[name] = r
        return r

    def fkey(self, fn):
        """A function's name in the graph: FILE:NAME for internal linkage,
        NAME for external."""
        if fn.linkage == ci.LinkageKind.INTERNAL:
            d = fn.get_definition() or fn
            f = d.location.file
            return f"{self.rel(f) or (f.name if f else '?')}:{fn.spelling}"
        return fn.spelling

    def run(self):
        for top in self.tu.cursor.get_children():
            # the kind and is_definition first: most of a unit is the
            # declarations of the system's and Python's headers
            k = top.kind
            if k not in (K.FUNCTION_DECL, K.VAR_DECL) or not top.is_definition():
                continue
            rel = self.rel(top.location.file)
            if rel is None:
                continue
            if k == K.FUNCTION_DECL:
                key = self.fkey(top)
                if key not in self.functions:
                    self.functions[key] = self.function(top, key, rel)
            else:
                self.initializer(top, rel)

    def initializer(self, var, rel):
        state = {"refs": [], "assigns": [], "calls": [], "fnvals": {}, "impure": set(), "flows": []}
        for c in var.get_children():
            self.visit(c, state)
            self.fields(c)
        for key, name, line in state["refs"]:
            self.file_refs.append((rel, var.spelling, key, name, line))

    def function(self, fn, key, rel):
        params = [p.get_usr() for p in fn.get_arguments()]
        names = [p.spelling for p in fn.get_arguments()]
        state = {"refs": [], "assigns": [], "calls": [], "fnvals": {}, "impure": set(), "flows": []}
        for c in fn.get_children():
            if c.kind == K.COMPOUND_STMT:
                self.visit(c, state)
        return {
            "key": key, "name": fn.spelling, "file": rel, "line": fn.location.line,
            "params": params, "param_names": names,
            "refs": state["refs"], "assigns": state["assigns"], "calls": state["calls"], "flows": state["flows"],
            "fnvals": {v: sorted(t) for v, t in state["fnvals"].items()}, "impure": sorted(state["impure"]),
        }

    def visit(self, c, st):
        """The variables `c` mentions; records on the way its references
        to functions, its stores and its calls."""
        k = c.kind
        if k == K.DECL_REF_EXPR:
            r = c.referenced
            if r is None:
                return frozenset()
            if r.kind in VARS:
                return frozenset((r.get_usr(),))
            if r.kind == K.FUNCTION_DECL:
                st["refs"].append((self.fkey(r), r.spelling, c.location.line))
            return frozenset()
        if k == K.CALL_EXPR:
            # recorded before the calls of its arguments: source order
            slot = len(st["calls"])
            st["calls"].append(None)
            children = list(c.get_children())  # the callee, then the arguments
            if not children:
                return frozenset()
            target = strip(children[0], WRAPPERS)
            direct = via = field = None
            mentioned = set(self.visit(children[0], st))
            if target.kind == K.MEMBER_REF_EXPR and target.referenced is not None and \
                    target.referenced.kind == K.FIELD_DECL:
                field = target.referenced.get_usr()
            if target.kind == K.DECL_REF_EXPR and target.referenced is not None:
                r = target.referenced
                if r.kind == K.FUNCTION_DECL:
                    direct = (self.fkey(r), r.spelling)
                elif r.kind in VARS:
                    via = r.get_usr()
            args = []
            argx, argcarry = [], []
            for a in children[1:]:
                m = self.visit(a, st)
                args.append(sorted(m))
                argx.append(expr_of(a))
                argcarry.append(carries(a.type))
                mentioned |= m
            text = direct[1] if direct else "".join(t.spelling for t in children[0].get_tokens()) or "?"
            st["calls"][slot] = {"line": c.location.line, "callee": direct[0] if direct else None,
                                 "name": direct[1] if direct else text, "via": via, "field": field,
                                 "args": args, "argx": argx, "argcarry": argcarry}
            return frozenset(mentioned)
        if k == K.BINARY_OPERATOR or k == K.COMPOUND_ASSIGNMENT_OPERATOR:
            children = list(c.get_children())
            if len(children) == 2 and (k == K.COMPOUND_ASSIGNMENT_OPERATOR or
                                       _binary_kind(c) in self.assign_kinds):
                lhs = self.visit(children[0], st)
                rhs = self.visit(children[1], st)
                base = strip(children[0], LVALUE_STEPS)
                if base.kind == K.DECL_REF_EXPR and base.referenced is not None and base.referenced.kind in VARS:
                    self.store(st, base.referenced.get_usr(), rhs, children[1])
                flow_of_store(children[0], children[1], st["flows"])
                return lhs | rhs
            return self.union(children, st)
        if k == K.VAR_DECL:
            children = list(c.get_children())
            m = self.union(children, st)
            usr = c.get_usr()
            inits = [x for x in children if x.kind.is_expression()]
            if inits:
                self.store(st, usr, m, inits[-1])
                init = strip(inits[-1], WRAPPERS)
                if init.kind == K.INIT_LIST_EXPR:
                    flows_of_init_list(init, usr, st["flows"])
                elif carries(c.type):
                    st["flows"].append((("v", usr, None), expr_of(inits[-1])))
            return frozenset()
        return self.union(c.get_children(), st)

    def union(self, children, st):
        m = frozenset()
        for x in children:
            s = self.visit(x, st)
            if s:
                m = m | s
        return m

    def store(self, st, var, rhs, expr):
        """`var` = `expr`, which mentions the variables `rhs`."""
        if rhs:
            st["assigns"].append((var, sorted(rhs)))
        targets = designators(expr, self)
        if targets is None:
            st["impure"].add(var)
        else:
            st["fnvals"].setdefault(var, set()).update(targets)


CARRIERS = None


def carries(t):
    """Whether a value of type `t` can hold the walked value: a pointer, an
    array, a struct or a union (never a number, an enum or a bool)."""
    global CARRIERS
    if CARRIERS is None:
        TK = ci.TypeKind
        CARRIERS = {TK.POINTER, TK.CONSTANTARRAY, TK.INCOMPLETEARRAY, TK.VARIABLEARRAY, TK.RECORD}
    return t.get_canonical().kind in CARRIERS


# ---- what carries the walked value ------------------------------------------
#
# An expression's shape for the walk, built once and judged as the walk
# learns what is tainted: ("v", var) a variable; ("f", field) a struct
# member read (s.name, s->name: the field, whatever the struct);
# ("c", [arguments], result is a string) a call, whose result carries the
# value when an argument does and it is a char * (dirname(path), not a
# pointer into the bytes of a struct passed in);
# ("a", [parts]) anything carried by one of its parts (p + 1, c ? a : b,
# &s, *p, a[i]); None: nothing (a constant, a number's arithmetic).

def expr_of(c):
    k = c.kind
    if k in WRAPPERS or k == K.UNARY_OPERATOR:
        kids = list(c.get_children())
        return expr_of(kids[0]) if len(kids) == 1 else None
    if k == K.DECL_REF_EXPR:
        r = c.referenced
        return ("v", r.get_usr()) if r is not None and r.kind in VARS else None
    if k == K.MEMBER_REF_EXPR:
        r = c.referenced
        return ("f", r.get_usr()) if r is not None and r.kind == K.FIELD_DECL else None
    if k == K.ARRAY_SUBSCRIPT_EXPR:
        kids = list(c.get_children())
        return ("a", [expr_of(kids[0])]) if kids else None
    if k == K.CALL_EXPR:
        kids = list(c.get_children())
        return ("c", [expr_of(a) for a in kids[1:]], is_string(c.type))
    if k in (K.CONDITIONAL_OPERATOR, K.BINARY_OPERATOR) and carries(c.type):
        kids = list(c.get_children())
        return ("a", [expr_of(x) for x in kids[-2:]])
    return None


def flow_of_store(lhs, rhs, flows):
    """lhs = rhs: a variable that can hold the value (p = path), or a
    struct member (s.name = path, s->name = path: the field, and the
    variable s that holds it)."""
    target = strip(lhs, WRAPPERS)
    if target.kind == K.DECL_REF_EXPR and target.referenced is not None and target.referenced.kind in VARS:
        if carries(target.referenced.type):
            flows.append((("v", target.referenced.get_usr(), None), expr_of(rhs)))
        return
    if target.kind == K.MEMBER_REF_EXPR and target.referenced is not None and target.referenced.kind == K.FIELD_DECL:
        base = strip(target, LVALUE_STEPS)
        holder = base.referenced.get_usr() if base.kind == K.DECL_REF_EXPR and base.referenced is not None and \
            base.referenced.kind in VARS else None
        flows.append((("f", target.referenced.get_usr(), holder), expr_of(rhs)))
        return
    base = strip(target, LVALUE_STEPS)  # a[i] = path, *p = path
    if base.kind == K.DECL_REF_EXPR and base.referenced is not None and base.referenced.kind in VARS:
        flows.append((("v", base.referenced.get_usr(), None), expr_of(rhs)))


def flows_of_init_list(init, var, flows):
    """The designated initializers of `var` (struct s v = {.name = path})."""
    for x in init.get_children():
        if x.kind == K.UNEXPOSED_EXPR:
            kids = list(x.get_children())
            if len(kids) == 2 and kids[0].kind == K.MEMBER_REF and kids[0].referenced is not None:
                flows.append((("f", kids[0].referenced.get_usr(), var), expr_of(kids[1])))


def carried(e, t, fields):
    """Whether the expression shape `e` carries the value, with the
    variables `t` and the fields `fields` tainted."""
    if e is None:
        return False
    k = e[0]
    if k == "v":
        return e[1] in t
    if k == "f":
        return e[1] in fields
    if k == "c":
        return e[2] and any(carried(x, t, fields) for x in e[1])
    return any(carried(x, t, fields) for x in e[1])


def field_values(c, ex, out):
    """Records, from the designated initializers under `c` (.f = fn), the
    functions each struct field is set to: out[field USR] = {keys}."""
    for x in c.get_children():
        if x.kind == K.UNEXPOSED_EXPR:
            kids = list(x.get_children())
            if len(kids) == 2 and kids[0].kind == K.MEMBER_REF and kids[0].referenced is not None:
                names = designators(kids[1], ex)
                if names:
                    out.setdefault(kids[0].referenced.get_usr(), set()).update(names)
                    continue
        field_values(x, ex, out)


def is_string(t):
    """A pointer to char (not to unsigned char: bytes are not a path)."""
    t = t.get_canonical()
    return t.kind == ci.TypeKind.POINTER and t.get_pointee().get_canonical().kind in (ci.TypeKind.CHAR_S,
                                                                                     ci.TypeKind.CHAR_U)


def strip(c, kinds):
    """`c` seen through the cursors of `kinds`, first child first."""
    while c.kind in kinds:
        children = list(c.get_children())
        if not children:
            break
        c = children[0]
    return c


def designators(expr, ex):
    """The functions an expression names when it is nothing but function
    names (f, &f, (T)f, c ? f : g), else None."""
    e = strip(expr, WRAPPERS)
    if e.kind == K.UNARY_OPERATOR:
        children = list(e.get_children())
        if len(children) == 1:
            e = strip(children[0], WRAPPERS)
    if e.kind == K.DECL_REF_EXPR and e.referenced is not None and e.referenced.kind == K.FUNCTION_DECL:
        return {ex.fkey(e.referenced)}
    if e.kind == K.CONDITIONAL_OPERATOR:
        children = list(e.get_children())
        if len(children) == 3:
            a, b = designators(children[1], ex), designators(children[2], ex)
            if a is not None and b is not None:
                return a | b
    return None


_BINARY = None


def _binary_kind(c):
    global _BINARY
    if _BINARY is None:
        f = ci.conf.lib.clang_getCursorBinaryOperatorKind
        f.argtypes = [ci.Cursor]
        f.restype = ctypes.c_int
        _BINARY = f
    return _BINARY(c)


@functools.lru_cache(maxsize=None)
def _assign_kinds():
    """The CXBinaryOperatorKind of `=` (clang 17's C API: 1 to 33, the
    compound assignments having a cursor kind of their own), found by its
    spelling."""
    f = ci.conf.lib.clang_getBinaryOperatorKindSpelling
    f.argtypes = [ctypes.c_int]
    f.restype = ci._CXString
    f.errcheck = ci._CXString.from_result
    kinds = {k for k in range(1, 34) if f(k) in ("=", b"=")}
    if not kinds:
        fail("this libclang does not name its binary operators (libclang 17 or later needed)")
    return kinds


class Project:
    """The parsed files: functions by key, file-scope references."""

    def __init__(self, root, under, required=False):
        self.root = root
        self.files = sources(root, under, required)
        if not self.files:
            fail(f"no .c files under {', '.join(under)}")
        self.functions = {}
        self.file_refs = []
        self.field_fns = {}
        self.errors = []
        builtin = builtin_includes()
        index = ci.Index.create()
        with tempfile.TemporaryDirectory(prefix="callgraph-") as tmp:
            generated = Path(tmp)
            generate_includes(root, generated)
            for rel in self.files:
                try:
                    tu = index.parse(str(root / rel), args=compile_args(root, rel, generated, builtin))
                except ci.TranslationUnitLoadError as e:
                    self.errors.append(f"{rel}: libclang could not parse it ({e})")
                    continue
                bad = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
                for d in bad:
                    loc = d.location
                    where = f"{loc.file.name}:{loc.line}:{loc.column}" if loc.file else rel
                    self.errors.append(f"{where}: error: {d.spelling} (parsing {rel})")
                if bad:
                    continue
                Extractor(root, tu, self.functions, self.file_refs, self.field_fns).run()
        self.c_files = set(self.files)

    def unit(self, f):
        """A file's node: a header with its own .c file is that file."""
        if f.endswith(".h") and f[:-2] + ".c" in self.c_files:
            return f[:-2] + ".c"
        return f


# ---- circles -------------------------------------------------------------------

def file_graph(project):
    """{(A, B): [(caller, callee, file, line)]}, in the order met."""
    edges = defaultdict(list)
    fns = project.functions
    for fn in fns.values():
        a = project.unit(fn["file"])
        for key, name, line in fn["refs"]:
            callee = fns.get(key)
            if callee is None:
                continue
            b = project.unit(callee["file"])
            if a != b:
                edges[(a, b)].append((fn["name"], name, fn["file"], line))
    for rel, var, key, name, line in project.file_refs:
        callee = fns.get(key)
        if callee is None:
            continue
        a, b = project.unit(rel), project.unit(callee["file"])
        if a != b:
            edges[(a, b)].append((f"{var} (initializer)", name, rel, line))
    return edges


def components(nodes, edges):
    """Tarjan's strongly connected components, iteratively."""
    succ = defaultdict(list)
    for a, b in edges:
        succ[a].append(b)
    for a in succ:
        succ[a].sort()
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(succ[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ[w])))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def circles(project):
    edges = file_graph(project)
    nodes = {project.unit(fn["file"]) for fn in project.functions.values()} | {n for e in edges for n in e}
    result = []
    for comp in components(nodes, edges):
        if len(comp) < 2:
            continue
        members = set(comp)
        inside = []
        for (a, b), refs in sorted(edges.items()):
            if a in members and b in members:
                first = min(refs, key=lambda r: (r[2], r[3]))
                inside.append({"from": a, "to": b, "caller": first[0], "callee": first[1],
                               "at": f"{first[2]}:{first[3]}", "references": len(refs)})
        result.append({"files": comp, "edges": inside})
    result.sort(key=lambda c: c["files"])
    return result


def print_circles(result):
    for i, c in enumerate(result, 1):
        print(f"circle {i}: {len(c['files'])} files: {', '.join(c['files'])}")
        for e in c["edges"]:
            print(f"  {e['from']} -> {e['to']}: {e['caller']} -> {e['callee']} ({e['at']}; "
                  f"{e['references']} reference{'s' if e['references'] != 1 else ''})")
    if result:
        print(f"circles between source files: {len(result)}")
    else:
        print("circles between source files: none")


# ---- walk -------------------------------------------------------------------------

def find_function(project, spec):
    fns = project.functions
    if ":" in spec:
        f, name = spec.rsplit(":", 1)
        found = [fn for fn in fns.values() if fn["name"] == name and fn["file"] == f]
    else:
        found = [fn for fn in fns.values() if fn["name"] == spec]
    if not found:
        fail(f"no definition of {spec} in the parsed files")
    if len(found) > 1:
        fail(f"{spec} is defined in several files, name one as FILE:NAME: "
             + ", ".join(f"{fn['file']}:{fn['name']}" for fn in found))
    return found[0]


def tainted(fn, positions, fields):
    """The variables of `fn` tainted when its parameters at `positions`
    are, and the fields tainted (`fields`, grown here: a struct member
    stored a tainted value): the fixed point of its flows."""
    t = {fn["params"][i] for i in positions}
    changed = True
    while changed:
        changed = False
        for (kind, name, holder), e in fn["flows"]:
            if not carried(e, t, fields):
                continue
            if kind == "v" and name not in t:
                t.add(name)
                changed = True
            elif kind == "f":
                if name not in fields:
                    fields.add(name)
                    changed = True
                if holder is not None and holder not in t:
                    t.add(holder)
                    changed = True
    return t


def walk(project, start, param, to=None):
    """The walk of the module's docstring from the parameter `param` of
    the function record `start`, as a dict (what --json prints)."""
    fns = project.functions
    if param not in start["param_names"]:
        fail(f"{start['name']} has no parameter {param} "
             f"(its parameters: {', '.join(start['param_names']) or 'none'})")
    stops, number = [], {}
    entered = {}
    fields = set()
    passes, seen_passes = [], set()
    pointers, seen_pointers = [], set()

    def enter(key, positions):
        fn = fns[key]
        if key not in entered:
            stops.append(key)
            number[key] = len(stops)
            entered[key] = set()
        entered[key] |= positions
        t = tainted(fn, entered[key], fields)
        params = set(fn["params"])
        for call in fn["calls"]:
            if call is None:
                continue
            at = [i for i, (e, c) in enumerate(zip(call["argx"], call["argcarry"])) if c and carried(e, t, fields)]
            if not at:
                continue
            targets = []
            if call["callee"] is not None:
                targets = [(call["callee"], call["name"], "")]
            else:
                via = call["via"]
                resolved = fn["fnvals"].get(via) if via and via not in params and via not in fn["impure"] else None
                if not resolved and call.get("field"):
                    resolved = sorted(project.field_fns.get(call["field"], ()))
                if resolved:
                    targets = [(k, fns[k]["name"] if k in fns else k.rsplit(":", 1)[-1], call["name"])
                               for k in resolved]
                else:
                    mark = (key, call["line"], call["name"])
                    if mark not in seen_pointers:
                        seen_pointers.add(mark)
                        pointers.append({"stop": number[key], "function": fn["name"],
                                         "at": f"{fn['file']}:{call['line']}", "callee": call["name"],
                                         "arguments": [i + 1 for i in at]})
                    continue
            for ckey, cname, through in targets:
                mark = (key, ckey, call["line"])
                if mark not in seen_passes:
                    seen_passes.add(mark)
                    passes.append({"stop": number[key], "caller": fn["name"], "file": fn["file"],
                                   "at": f"{fn['file']}:{call['line']}", "callee": cname, "callee_key": ckey,
                                   "through": through, "arguments": [i + 1 for i in at]})
                callee = fns.get(ckey)
                if callee is None:
                    continue
                pos = {i for i in at if i < len(callee["params"])}
                if ckey not in entered or pos - entered[ckey]:
                    enter(ckey, pos)

    enter(start["key"], {start["param_names"].index(param)})
    out_stops = [{"n": i, "file": fns[k]["file"], "function": fns[k]["name"], "line": fns[k]["line"]}
                 for i, k in enumerate(stops, 1)]
    units = [project.unit(s["file"]) for s in out_stops]
    returns = []
    for i in range(1, len(units)):
        if units[i] != units[i - 1] and units[i] in units[:i]:
            returns.append({"n": i + 1, "from": units[i - 1], "to": units[i]})
    result = {"function": start["name"], "file": start["file"], "param": param, "stops": out_stops,
              "files": len(set(units)), "returns": len(returns), "return_steps": returns,
              "function_pointer_calls": pointers}
    if to is not None:
        callers = [p for p in passes if p["callee"] == to or p["callee_key"] == to]
        callers.sort(key=lambda p: (p["stop"], int(p["at"].rsplit(":", 1)[1])))
        result["to"] = {"name": to, "callers": callers}
    return result


def print_walk(r):
    print(f"walk: {r['param']} of {r['function']} ({r['file']})")
    width = len(str(len(r["stops"])))
    for s in r["stops"]:
        print(f"{s['n']:>{width}}  {s['file']}  {s['function']}")
    print(f"stops: {len(r['stops'])}")
    print(f"files: {r['files']}")
    print(f"returns: {r['returns']}")
    for ret in r["return_steps"]:
        print(f"  {ret['n']:>{width}}: {ret['from']} -> {ret['to']}")
    fp = r["function_pointer_calls"]
    print(f"calls through function pointers, not followed: {len(fp)}")
    for p in fp:
        args = ", ".join(map(str, p["arguments"]))
        print(f"  {p['stop']:>{width}}  {p['at']}  {p['function']}: {p['callee']}(...) argument {args}")
    if "to" in r:
        callers = r["to"]["callers"]
        print(f"passed to {r['to']['name']} by: {len(callers)}")
        for p in callers:
            args = ", ".join(map(str, p["arguments"]))
            through = f" through {p['through']}" if p["through"] else ""
            print(f"  {p['stop']:>{width}}  {p['file']}  {p['caller']}  ({p['at']}, argument {args}{through})")


# ---- the command ------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]),
                    help="the source tree (default: this script's)")
    sub = ap.add_subparsers(dest="command", required=True)
    for name, what in (("circles", "the circles between source files (exit 1 when there is one)"),
                       ("walk", "follow the value of a parameter through the calls it is passed to")):
        p = sub.add_parser(name, help=what, description=what)
        p.add_argument("--under", action="append", metavar="DIR",
                       help="parse the .c files under DIR only (repeatable; default: " + ", ".join(SCOPES) + ")")
        p.add_argument("--json", action="store_true", help="print JSON")
        if name == "walk":
            p.add_argument("function", help="NAME, or FILE:NAME")
            p.add_argument("param")
            p.add_argument("--to", metavar="NAME", help="list the calls that pass the value to NAME")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    under = [d.rstrip("/") for d in args.under] if args.under else list(SCOPES)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    project = Project(root, under, required=bool(args.under))
    if project.errors:
        for e in project.errors:
            print(e, file=sys.stderr)
        print(f"callgraph: {len(project.errors)} parse error(s): the call graph would be incomplete", file=sys.stderr)
        return 2
    if args.command == "circles":
        result = circles(project)
        if args.json:
            print(json.dumps({"circles": result}, indent=1))
        else:
            print_circles(result)
        return 1 if result else 0
    r = walk(project, find_function(project, args.function), args.param, args.to)
    if args.json:
        print(json.dumps(r, indent=1))
    else:
        print_walk(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
