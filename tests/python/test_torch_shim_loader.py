"""The optional torch shim's loader (python/src/torch_shim_loader.cc, tilec/kernel.py), without
torch: fake shims compiled here are refused for each reason the loader checks, nothing is loaded
by a refused shim, and the knob and the missing-library cases set TORCH_SHIM_STATUS. (The real
shim needs torch and a GPU: bench/bench_call_path.py measures it, tests/gpu use it.)"""
import os
import shutil
import subprocess
import sys

import pytest

_tilec = pytest.importorskip("tilec._tilec")
import tilec.kernel as K  # noqa: E402

FAKE = r'''
#include <stddef.h>
#define EXPORT __attribute__((visibility("default")))
EXPORT int tilec_torch_shim_abi(void) { return ABI; }
EXPORT const char* tilec_torch_shim_torch_version(void) { return "2.11.0+fake"; }
#if FULL
EXPORT void* tilec_torch_shim_empty(const long* s, int r, void* d, int dev) { return NULL; }
EXPORT int tilec_torch_shim_current_stream(int dev, void** s) { return 0; }
EXPORT int tilec_torch_shim_read(void* t, void* out) { return 0; }
#endif
'''


def fake_shim(tmp_path, abi=2, full=True):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "shim.c"
    src.write_text(FAKE)
    out = tmp_path / f"libshim_{abi}_{int(full)}.so"
    subprocess.run([cc, "-shared", "-fPIC", f"-DABI={abi}", f"-DFULL={int(full)}", str(src), "-o", str(out)],
                   check=True)
    return str(out)


def _subdir(tmp_path, name):
    (tmp_path / name).mkdir()
    return tmp_path / name


def test_missing_library_is_refused():
    why = _tilec._load_torch_shim("/nonexistent/libtilec_torch_shim.so", "2.11.0")
    assert why.startswith("cannot load /nonexistent/libtilec_torch_shim.so")


def test_library_without_the_functions_is_refused(tmp_path):
    why = _tilec._load_torch_shim(fake_shim(tmp_path, full=False), "2.11.0+fake")
    assert "lacks the shim's functions" in why


def test_other_abi_is_refused(tmp_path):
    why = _tilec._load_torch_shim(fake_shim(tmp_path, abi=1), "2.11.0+fake")
    assert "speaks shim ABI 1, this tilec 2" in why


def test_other_torch_version_is_refused(tmp_path):
    why = _tilec._load_torch_shim(fake_shim(tmp_path), "2.12.0")
    assert "was built against torch 2.11.0+fake, this process runs torch 2.12.0 (rebuild tilec" in why


def test_a_refusal_changes_nothing(tmp_path):
    # Whether or not this process has loaded the real shim (it has when tilec was built where
    # torch imports and an earlier test imported torch), a refused one leaves the state as it was.
    before = _tilec._torch_shim_loaded_from()
    was_active = _tilec._set_torch_shim_active(True)
    _tilec._set_torch_shim_active(was_active)
    _tilec._load_torch_shim(fake_shim(tmp_path), "2.12.0")
    assert _tilec._torch_shim_loaded_from() == before
    assert _tilec._set_torch_shim_active(was_active) is was_active
    if not before:
        assert _tilec._set_torch_shim_active(True) is False
        assert _tilec._set_torch_shim_active(False) is False  # could not be turned on: not loaded


def test_a_second_shim_is_refused_once_one_is_loaded(tmp_path):
    before = _tilec._torch_shim_loaded_from()
    if not before:  # loading the fake one here would leave it loaded: test_second_shim_in_a_child
        pytest.skip("no torch shim loaded in this process")
    fake = fake_shim(tmp_path)
    why = _tilec._load_torch_shim(fake, "2.11.0+fake")
    assert why == f"{fake} not loaded: a torch shim is already loaded from {before}"
    assert _tilec._load_torch_shim(before, "ignored when the path is the loaded one") == ""


def test_second_shim_in_a_child(tmp_path):
    first, second = fake_shim(tmp_path, abi=2), fake_shim(_subdir(tmp_path, "other"), abi=2)
    code = (
        "import tilec._tilec as t\n"
        f"assert t._load_torch_shim({first!r}, '2.11.0+fake') == ''\n"
        f"assert t._torch_shim_loaded_from() == {first!r}\n"
        f"assert t._load_torch_shim({first!r}, 'x') == ''\n"
        f"print(t._load_torch_shim({second!r}, '2.11.0+fake'))\n"
        "assert t._set_torch_shim_active(False) is True\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{second} not loaded: a torch shim is already loaded from {first}"


class _FakeTorch:
    __version__ = "2.11.0+fake"


def test_knob_turns_it_off(monkeypatch):
    monkeypatch.setenv("TILEC_TORCH_SHIM", "0")
    K._load_torch_shim(_FakeTorch())
    assert K.TORCH_SHIM_STATUS == "turned off by TILEC_TORCH_SHIM=0"


def test_status_when_not_built(monkeypatch):
    monkeypatch.delenv("TILEC_TORCH_SHIM", raising=False)
    here = os.path.dirname(os.path.realpath(_tilec.__file__))
    if os.path.exists(os.path.join(here, "libtilec_torch_shim.so")) or \
            os.path.exists(os.path.join(os.path.dirname(_tilec.__file__), "libtilec_torch_shim.so")):
        pytest.skip("this build has the torch shim")
    K._load_torch_shim(_FakeTorch())
    assert K.TORCH_SHIM_STATUS.startswith("not built")
