"""A record's provenance names the libraries and the CPU features that can change a user's ONNX result."""

import os
import subprocess
import sys

from policylab import provenance
from tests.support.paths import ROOT


def test_provenance_names_versions_and_cpu_features():
    rec = provenance.record()
    assert rec["onnxruntime"] != "absent" and rec["numpy"] != "absent"
    cpu = rec["cpu"]
    assert cpu["machine"] in ("x86_64", "aarch64") and set(cpu) == {"machine", "features", "npy_disabled"}
    assert set(cpu["features"].split()) <= set(provenance._FEATURES.get(cpu["machine"], ()))


def test_provenance_names_features_numpy_was_told_to_leave():
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
    out = subprocess.run(
        [sys.executable, "-c", "from policylab import provenance; print(provenance.cpu()['npy_disabled'])"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    assert out.strip() == "X86_V4 AVX512_ICL AVX512_SPR"
