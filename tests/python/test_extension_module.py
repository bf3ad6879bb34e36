"""The extension module onnxio._onnxio as CPython sees it: multi-phase init
(PEP 489) with its classes, exceptions and class registry in the module's
state, one module object per process (PEP 630), and a teardown that frees
that state only after the last object of its classes.

Each check runs in a fresh interpreter, since what it does to the module
cannot be undone in the test process.
"""
import subprocess
import sys
import textwrap

import pytest


def run(code, *flags):
    proc = subprocess.run([sys.executable, *flags, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)
    return proc


def test_multi_phase_init_with_module_state():
    """PyInit returns a module definition (not a module), whose state has a
    size: importlib's extension loader is what creates and executes it."""
    proc = run("""
        import importlib.machinery, importlib.util, sys
        import onnxio._onnxio as ext
        spec = ext.__spec__
        assert isinstance(spec.loader, importlib.machinery.ExtensionFileLoader), spec.loader
        # The raw init function, called by hand: a PyModuleDef, not a module.
        import ctypes
        lib = ctypes.PyDLL(spec.origin)
        lib.PyInit__onnxio.restype = ctypes.c_void_p  # a borrowed pointer to a static object
        d = ctypes.cast(lib.PyInit__onnxio(), ctypes.py_object).value
        assert type(d).__name__ == "moduledef", type(d)
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_a_second_module_object_is_refused():
    """A second module object from the same file, made while the first
    exists, raises ImportError: it would otherwise make a second set of
    classes that the C side could not tell from the first."""
    proc = run("""
        import importlib.util
        import onnxio
        from onnxio import _onnxio as first
        spec = importlib.util.spec_from_file_location("onnxio._onnxio", first.__file__)
        try:
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
        except ImportError as e:
            assert "loaded twice" in str(e), e
            print("refused")
        m = onnxio.ModelProto.FromString(bytes.fromhex("0807"))
        assert m.ir_version == 7 and type(m) is first.ModelProto
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "refused", proc.stdout + proc.stderr


def test_gc_sees_the_module_state():
    """The module's GC traverse reports the classes and exceptions its
    state holds (gc.get_referents walks tp_traverse)."""
    proc = run("""
        import gc
        import onnxio._onnxio as ext
        refs = gc.get_referents(ext)
        for obj in (ext.Message, ext.ModelProto, ext.TensorProto, ext.DecodeError, ext.ArchiveError,
                    ext.RepeatedScalarContainer, ext.RepeatedCompositeContainer):
            assert any(r is obj for r in refs), obj
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


@pytest.mark.parametrize("how", ["exit", "collect"])
def test_teardown_with_live_objects(how):
    """Objects of the extension's classes alive when the interpreter ends
    (in module globals, in a cycle, as payload views), or the module
    dropped from sys.modules and collected while they live: no crash, and
    the objects stay usable while they are reachable."""
    code = """
        import gc, sys
        import numpy as np
        import onnxio
        from onnxio import helper, numpy_helper
        t = numpy_helper.from_array(np.arange(4096, dtype=np.float32), "w")
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", 1, [4096])],
                              [helper.make_tensor_value_info("y", 1, [4096])], initializer=[t])
        model = onnxio.ModelProto.FromString(helper.make_model(g).SerializeToString())
        view = numpy_helper.to_array(model.graph.initializer[0])
        cycle = [model.graph.node, model.graph.initializer]
        cycle.append(cycle)
        lazy = onnxio.TypeProto().sequence_type.elem_type.sequence_type
        err = None
        try:
            onnxio.ModelProto.FromString(b"\\xff")
        except onnxio.DecodeError as e:
            err = e
    """
    if how == "collect":
        code += """
        for name in [n for n in sys.modules if n == "onnxio" or n.startswith("onnxio.")]:
            del sys.modules[name]
        del onnxio, helper, numpy_helper
        gc.collect()
        assert view.sum() == np.arange(4096, dtype=np.float32).sum()
        assert model.graph.node[0].op_type == "Relu" and err is not None
        model = cycle = lazy = view = None
        gc.collect()
        print("ok")
    """
    else:
        code += """
        print("ok")
    """
    proc = run(code, "-X", "dev")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


SUBINTERPRETER_CODE = """
import sys
try:
    import onnxio
except ImportError as e:
    assert "sub-interpreter" in str(e), e
    print("refused:", e, flush=True)
else:
    m = onnxio.ModelProto.FromString(bytes([0x08, 0x07, 0x1a, 0xfc, 0x07]) + b"x" * 1020)
    del m
    print("imported", flush=True)
"""

SUBINTERPRETER = f"""
import sys
try:
    import _interpreters as interpreters          # 3.13 on
except ImportError:
    import _xxsubinterpreters as interpreters     # 3.9 to 3.12
# A legacy sub-interpreter, as mod_wsgi and Py_NewInterpreter make: one
# that does not refuse single-interpreter extensions itself.
try:
    interp = interpreters.create("legacy")
except TypeError:
    interp = interpreters.create(isolated=False) if sys.version_info >= (3, 12) else interpreters.create()
run = getattr(interpreters, "run_string", None) or getattr(interpreters, "exec")
run(interp, {SUBINTERPRETER_CODE!r})
interpreters.destroy(interp)
print("destroyed", flush=True)
"""


@pytest.mark.parametrize("main_first", [False, True], ids=["fresh", "main-imported"])
def test_sub_interpreter_refused_never_hangs(main_first):
    """A sub-interpreter (mod_wsgi's default, Py_NewInterpreter) cannot
    import the extension: its payload release takes the GIL with
    PyGILState_Ensure, which knows only the main interpreter, so a message
    freed there would wait for the GIL its own thread holds. The import
    raises ImportError naming the sub-interpreter, whether or not the main
    interpreter imported onnxio first; nothing hangs, at teardown neither."""
    proc = subprocess.run([sys.executable, "-c", ("import onnxio\n" if main_first else "") + SUBINTERPRETER], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "refused:" in proc.stdout and "destroyed" in proc.stdout, proc.stdout + proc.stderr
