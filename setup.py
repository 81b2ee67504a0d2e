"""The dplace Python package for pip: the pure-Python modules of python/dplace and the C++
extension dplace._dplace, built by CMake in the README's build tree (build/release, configured
by `cmake --preset release` when it is not yet; DPLACE_BUILD_DIR names another tree). The
dependencies are the README's (`make deps` installs them). Offline, with Debian's setuptools:

    pip install --no-build-isolation .

(in a venv made with --system-site-packages, so that Debian's torch is seen by dplace.torch).
"""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

SOURCE = os.path.dirname(os.path.abspath(__file__))
os.makedirs(os.path.join(SOURCE, "build"), exist_ok=True)  # egg_base and build_base live there


def progress():
    """Where build progress goes: the terminal pip runs in (pip keeps a build's own output to
    itself unless -v), else stderr."""
    try:
        return open("/dev/tty", "w", buffering=1)
    except OSError:
        return sys.stderr


def run_showing_progress(command, cwd=None):
    """Runs `command`, its lines (ninja's "[k/n] Building ...") shown as they come; the whole
    output is printed again when it fails."""
    out = progress()
    lines = []
    with subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc:
        for line in proc.stdout:
            lines.append(line)
            out.write("dplace build: " + line)
            out.flush()
    if proc.returncode != 0:
        sys.stderr.write("".join(lines))
        raise SystemExit(f"{' '.join(command)} failed (exit {proc.returncode})")


class BuildWithCMake(build_py):
    """Builds the extension and the command-line program with CMake (only they and the
    libraries they link: no tests, no benchmarks) and copies the assembled package
    (build/<preset>/python/dplace: the extension and the .py/.pyi files) and the program
    (dplace/bin/dplace, run by the `dplace` command) into the wheel."""

    def run(self):
        build = os.environ.get("DPLACE_BUILD_DIR") or os.path.join(SOURCE, "build", "release")
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            if os.environ.get("DPLACE_BUILD_DIR"):
                raise SystemExit(f"DPLACE_BUILD_DIR={build}: no CMake build tree there")
            run_showing_progress(["cmake", "--preset", "release"], cwd=SOURCE)
        run_showing_progress(["cmake", "--build", build, "--target", "_dplace", "dplace"])
        out = os.path.join(self.build_lib, "dplace")
        os.makedirs(os.path.join(out, "bin"), exist_ok=True)
        built = glob.glob(os.path.join(build, "python", "dplace", "*"))
        if not any(os.path.basename(f).startswith("_dplace.") for f in built):
            raise SystemExit(f"{build}/python/dplace: the extension _dplace was not built")
        for f in built:
            if os.path.isfile(f):
                shutil.copy2(f, out)
        shutil.copy2(os.path.join(build, "dplace"), os.path.join(out, "bin", "dplace"))


class BinaryDistribution(Distribution):
    """A wheel for this platform and Python (it carries a compiled extension)."""

    def has_ext_modules(self):
        return True


setup(
    packages=["dplace"],
    package_dir={"dplace": "python/dplace"},
    cmdclass={"build_py": BuildWithCMake},
    distclass=BinaryDistribution,
    options={"build": {"build_base": "build/pip"}, "egg_info": {"egg_base": "build"}},
    zip_safe=False,
)
