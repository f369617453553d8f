"""proflink-otel as a package: a pure-Python wheel whose entry point the SDK loads, and
transparent where proflink is absent or disabled."""
import os
import subprocess
import sys
import zipfile

from conftest import LIB, ROOT

PKG = os.path.join(ROOT, "integrations", "python")


def run_py(code, env=None, preload=False):
    e = dict(os.environ, OTEL_PYTHON_CONTEXT="proflink")
    e.pop("LD_PRELOAD", None)
    if preload:
        e["LD_PRELOAD"] = LIB
    e.update(env or {})
    r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_a_pure_python_wheel_whose_entry_point_the_sdk_loads(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path / "dist"), PKG], check=True, capture_output=True, timeout=300)
    (whl,) = os.listdir(tmp_path / "dist")
    assert whl == "proflink_otel-0.1.0-py3-none-any.whl"
    names = zipfile.ZipFile(tmp_path / "dist" / whl).namelist()
    assert not [n for n in names if n.endswith((".so", ".c", ".pyd"))], names
    entry = zipfile.ZipFile(tmp_path / "dist" / whl).read(
        "proflink_otel-0.1.0.dist-info/entry_points.txt").decode()
    assert "[opentelemetry_context]" in entry
    assert "proflink = proflink_otel.context:ProflinkRuntimeContext" in entry
    # installed from the wheel (ahead of the tree's editable install on the path)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(tmp_path / "site"), str(tmp_path / "dist" / whl)], check=True,
                   capture_output=True, timeout=300)
    out = run_py("import opentelemetry.context as c, proflink_otel as p; "
                 "print(type(c._RUNTIME_CONTEXT).__name__, p.__file__, p.active)",
                 env={"PYTHONPATH": str(tmp_path / "site")}, preload=True)
    assert out[0] == "ProflinkRuntimeContext"
    assert out[1].startswith(str(tmp_path / "site")) and out[2] == "True"


TRANSPARENT = """
import asyncio.events, concurrent.futures.thread, contextvars
run, work = asyncio.events.Handle._run, concurrent.futures.thread._WorkItem.run
import opentelemetry.context as c
import proflink_otel
rc = c._RUNTIME_CONTEXT
var = rc._current_context
print(type(rc).__name__, proflink_otel.active, proflink_otel.instrument(),
      rc.attach == var.set and rc.detach == var.reset and rc.get_current == var.get,
      asyncio.events.Handle._run is run and concurrent.futures.thread._WorkItem.run is work)
"""


def test_transparent_without_the_library_or_when_disabled():
    # not preloaded: the SDK's context-variable calls themselves, nothing hooked
    assert run_py(TRANSPARENT) == ["ProflinkRuntimeContext", "False", "False", "True", "True"]
    # preloaded but disabled
    off = {"ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED": "false"}
    assert run_py(TRANSPARENT, env=off, preload=True) == \
        ["ProflinkRuntimeContext", "False", "False", "True", "True"]
    # preloaded and active: the hooks are in place
    assert run_py(TRANSPARENT, preload=True) == \
        ["ProflinkRuntimeContext", "True", "True", "False", "False"]

