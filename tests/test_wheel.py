"""The wheel as a user installs it (issue 13): `pip install` of the wheel `make wheel` builds, into
a fresh virtualenv of each Python from 3.9 to 3.13, gives the package and the `neurogc` command.

The wheel's tests are slow: CI runs them after `make test` (`make test-slow` builds the wheel
first). The wheel is $NEUROGC_WHEEL, else the one in dist/. A Python that pyenv does not provide
is skipped, saying so. The typed stub's check against the extension is quick and runs everywhere.
"""

from __future__ import annotations

import ast
import email
import inspect
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

slow = pytest.mark.slow
PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13"]
# manylinux2014: what the extension and the bundled binary may ask of glibc.
GLIBC_MAX = (2, 17)
SUBCOMMANDS = ["run", "collect", "bench", "report", "dashboard", "train", "suite", "demo", "load"]


@pytest.fixture(scope="module")
def wheel() -> Path:
    explicit = os.environ.get("NEUROGC_WHEEL")
    found = [Path(explicit)] if explicit else sorted((REPO / "dist").glob("neurogc-*.whl"))
    if len(found) != 1 or not found[0].is_file():
        pytest.fail(f"want one wheel, found {found or 'none'} in dist/: run `make wheel`")
    return found[0]


def version_of(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def max_glibc(elf: bytes) -> tuple[int, ...]:
    """The newest GLIBC_x.y symbol version an ELF file names (its version needs)."""
    found = re.findall(rb"GLIBC_(\d+(?:\.\d+)+)", elf)
    assert found, "no GLIBC symbol versions: not a dynamically linked glibc binary?"
    return max(tuple(int(p) for p in v.split(b".")) for v in found)


@slow
def test_the_wheel_is_manylinux2014_and_carries_the_command(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = z.getinfo("neurogc/bin/neurogc")
        tags = [
            line.split(":", 1)[1].strip()
            for line in z.read(f"neurogc-{version_of(wheel)}.dist-info/WHEEL").decode().splitlines()
            if line.startswith("Tag:")
        ]
        binary = z.read("neurogc/bin/neurogc")
        native = z.read("neurogc/_native.abi3.so")
        entry_points = z.read(f"neurogc-{version_of(wheel)}.dist-info/entry_points.txt").decode()
    assert "cp39-abi3-manylinux_2_17_x86_64" in tags, tags
    assert "cp39-abi3-manylinux2014_x86_64" in tags, tags
    assert {"neurogc/py.typed", "neurogc/_native.pyi", "neurogc/__main__.py"} <= names
    assert info.external_attr >> 16 & 0o111, "the binary is not executable in the wheel"
    assert binary[:4] == b"\x7fELF"
    assert "neurogc=neurogc._cli:main" in entry_points.replace(" ", "")
    assert max_glibc(binary) <= GLIBC_MAX, f"binary: {max_glibc(binary)}"
    assert max_glibc(native) <= GLIBC_MAX, f"extension: {max_glibc(native)}"


@slow
def test_the_metadata_is_a_pypi_page(wheel):
    with zipfile.ZipFile(wheel) as z:
        meta = email.message_from_bytes(z.read(f"neurogc-{version_of(wheel)}.dist-info/METADATA"))
    classifiers = meta.get_all("Classifier")
    for v in PYTHONS:
        assert f"Programming Language :: Python :: {v}" in classifiers
    assert "Operating System :: POSIX :: Linux" in classifiers
    assert "License :: OSI Approved :: MIT License" in classifiers
    assert "Typing :: Typed" in classifiers
    assert meta["Requires-Python"] == ">=3.9"
    assert meta["Description-Content-Type"] == "text/markdown"
    # The page starts with how to install: its title, then `pip install neurogc`.
    lines = [line for line in meta.get_payload().splitlines() if line.strip()]
    assert lines[0] == "# NeuroGC" and lines[1:3] == ["```sh", "pip install neurogc"], lines[:3]


def pyenv_python(version: str) -> Path | None:
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(
        root.glob(f"{version}.*/bin/python{version}"),
        key=lambda p: [int(x) for x in re.findall(r"\d+", p.parent.parent.name)],
    )
    return found[-1] if found else None


def user_env(venv: Path) -> dict[str, str]:
    """What an activated virtualenv gives a user's shell: nothing of this checkout or its .venv."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NEUROGC_", "PYTHON", "PIP_")) and k != "VIRTUAL_ENV"
    }
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and not p.startswith(str(REPO))]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    env["VIRTUAL_ENV"] = str(venv)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module", params=PYTHONS, ids=[f"py{v}" for v in PYTHONS])
def installed(request, wheel, tmp_path_factory):
    """A fresh virtualenv of this Python with the wheel pip-installed; (venv, env, cwd)."""
    python = pyenv_python(request.param)
    if python is None:
        pytest.skip(f"Python {request.param} not found under pyenv")
    home = tmp_path_factory.mktemp(f"py{request.param}")
    venv = home / "venv"
    subprocess.run([str(python), "-m", "venv", str(venv)], check=True, timeout=120)
    env = user_env(venv)
    r = subprocess.run(
        ["pip", "install", str(wheel)], env=env, cwd=home, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    return venv, env, home


def sh(installed, *argv: str) -> subprocess.CompletedProcess:
    venv, env, cwd = installed
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


@slow
def test_neurogc_version(installed, wheel):
    venv, env, _ = installed
    assert shutil.which("neurogc", path=env["PATH"]) == str(venv / "bin" / "neurogc")
    r = sh(installed, "neurogc", "--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"neurogc {version_of(wheel)}"


@slow
def test_neurogc_runs_the_bundled_binary(installed):
    venv, _, _ = installed
    r = sh(installed, "python", "-c", "from neurogc._cli import find_binary; print(find_binary())")
    assert r.returncode == 0, r.stderr
    binary = Path(r.stdout.strip())
    assert binary.parts[-3:] == ("neurogc", "bin", "neurogc"), binary
    assert binary.is_relative_to(venv.resolve()), binary


@slow
def test_neurogc_run_injects_the_agent(installed):
    r = sh(installed, "neurogc", "run", "--", "python", "-c",
           "import neurogc; print(neurogc.current().policy)")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["default"], r.stdout + r.stderr
    # ... and the package it imported is the wheel's, in this virtualenv.
    venv, _, _ = installed
    r = sh(installed, "neurogc", "run", "--policy", "freeze", "--", "python", "-c",
           "import neurogc, neurogc._native as n; print(neurogc.current().policy); print(n.__file__)")  # fmt: skip
    assert r.returncode == 0, r.stderr
    policy, native = r.stdout.split()
    assert policy == "freeze"
    assert Path(native).resolve().is_relative_to(venv.resolve()), native


@slow
def test_python_m_neurogc(installed):
    r = sh(installed, "python", "-m", "neurogc", "--help")
    assert r.returncode == 0, r.stderr
    listed = re.findall(r"^  (\S+)", r.stdout, re.M)
    assert set(SUBCOMMANDS) <= set(listed), r.stdout
    # Arguments and exit code are the binary's own: a usage error is clap's exit code 2.
    for argv in (["python", "-m", "neurogc"], ["neurogc"]):
        r = sh(installed, *argv, "report", "--no-such-flag")
        assert r.returncode == 2, (argv, r.returncode, r.stderr)
        assert "--no-such-flag" in r.stderr


def stub_signatures() -> dict[str, list[str] | None]:
    """What python/neurogc/_native.pyi declares: name -> parameter names (None: a constant, a
    class, a property)."""
    tree = ast.parse((REPO / "python" / "neurogc" / "_native.pyi").read_text())
    found: dict[str, list[str] | None] = {}

    def params(f: ast.FunctionDef) -> list[str]:
        names = [a.arg for a in [*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs]]
        return [n for n in names if n not in ("self", "cls")]

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = params(node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = None
        elif isinstance(node, ast.ClassDef):
            found[node.name] = None
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    is_property = any(
                        isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list
                    )
                    key = f"{node.name}.{'__init__' if item.name == '__new__' else item.name}"
                    found[key] = None if is_property else params(item)
    return found


def test_the_native_stub_declares_what_the_extension_has():
    """_native.pyi against the built module, name by name and parameter by parameter (mypy's
    stubtest does the same with types; this needs nothing installed)."""
    from neurogc import _native

    runtime: dict[str, list[str] | None] = {}
    for name in _native.__all__:
        value = getattr(_native, name)
        is_function = callable(value) and not isinstance(value, type)
        runtime[name] = list(inspect.signature(value).parameters) if is_function else None
    for name, value in vars(_native.NativeAgent).items():
        if name.startswith("__"):
            continue
        is_method = callable(value)
        runtime[f"NativeAgent.{name}"] = (
            [p for p in inspect.signature(value).parameters if p != "self"] if is_method else None
        )
    stub = stub_signatures()
    try:
        runtime["NativeAgent.__init__"] = list(inspect.signature(_native.NativeAgent).parameters)
    except ValueError:
        # The abi3 extension on Python 3.9 has no class text signature: the methods are checked.
        del stub["NativeAgent.__init__"]
    assert stub == runtime
