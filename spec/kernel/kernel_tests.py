"""jupyter_kernel_test's conformance suite (Debian python3-jupyter-kernel-test)
on the gshell kernel: every reply and iopub message is checked against the
protocol's schemas. For spec/kernel_spec.lua:
    python3 kernel_tests.py GSHELL OUT.lua"""
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402


def suite_class():
    import jupyter_kernel_test as jkt

    class GshellKernelTests(jkt.KernelTests):
        kernel_name = "gshell"
        language_name = "lua"
        file_extension = ".lua"
        code_hello_world = 'print("hello, world")'
        code_stderr = 'io.stderr:write("oops\\n")'
        completion_samples = [
            {"text": "torch.zeros_l", "matches": {"torch.zeros_like"}},
            {"text": "math.ab", "matches": {"math.abs"}},
        ]
        complete_code_samples = ["x = 1", "print(1)", "%who", "for i = 1, 2 do end"]
        incomplete_code_samples = ["for i = 1, 2 do", "function f(", "x = {"]
        invalid_code_samples = ["x = )", "end end"]
        code_generate_error = 'error("boom")'
        code_execute_result = [
            {"code": "1 + 2", "result": "3"},
            {"code": "torch.ones(2)", "result": "tensor([1., 1.])"},
            {"code": "'a', 2", "result": "a\t2"},
        ]
        code_history_pattern = "1*"
        supported_history_operations = ("tail", "range", "search")
        code_inspect_sample = "torch.ones"

    return GshellKernelTests


def kernel_tests(gshell, out):
    U.install_kernelspec(gshell, sim_gpus="0")
    stream = io.StringIO()
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(suite_class())
    result = unittest.TextTestRunner(stream=stream, verbosity=2).run(suite)
    U.write_lua(out, {
        "run": result.testsRun,
        "failures": [t.id() + "\n" + tb for t, tb in result.failures + result.errors],
        "skipped": [t.id() + ": " + why for t, why in result.skipped],
        "log": stream.getvalue(),
    })


if __name__ == "__main__":
    U.main_guard(kernel_tests)
