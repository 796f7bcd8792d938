"""The docstring examples of the Triton modules, run in Triton's interpreter.

``pytest --doctest-modules gpusim`` skips their kernel launches (``+SKIP``): the interpreter must
be chosen before the modules are imported, and that run imports them without it. This process
has it (``conftest.py``), so the examples run here, ``+SKIP`` ignored, outputs compared.
"""

from __future__ import annotations

import doctest
import importlib
import io

import pytest

from tests.kernels._marks import INTERPRETED

MODULES = [
    "gpusim.kernels.cat_frames_triton",
    "gpusim.kernels.masked_merge_triton",
    "gpusim.kernels.vecnorm_triton",
]


@pytest.mark.parametrize("name", MODULES)
def test_triton_docstring_examples_run_interpreted(name: str):
    if not INTERPRETED:
        pytest.skip("interpreter tests run in the default mode (GPUSIM_KERNEL_TESTS unset)")
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder().find(module, name, globs=dict(vars(module)))
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = io.StringIO()
    skipped = 0
    for test in tests:
        for example in test.examples:
            if example.options.get(doctest.SKIP):
                example.options[doctest.SKIP] = False
                skipped += 1
        runner.run(test, out=report.write)
    assert skipped > 0, f"{name} has no skipped kernel example left to run here"
    assert runner.failures == 0, report.getvalue()
