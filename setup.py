"""Build gpumem._core: cuda/*.cu through nvcc, csrc/**/*.c through the C compiler,
linked against the static CUDA runtime.

Environment:
  CUDA_HOME / CUDA_PATH   toolkit root (else nvcc from PATH)
  GPUMEM_CUDA_ARCHS       e.g. "90" or "75;80;86;89;90;100;120"; default: every
                          real target of this nvcc from sm_75 up, plus PTX of
                          the newest (so newer GPUs still run it)
  GPUMEM_CUDA_OBJDIR      where the CUDA objects go (default: the build's temp
                          folder); they do not depend on Python, so builds for
                          several Pythons can share one (tools/build-wheels)
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def find_nvcc():
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root and os.path.isfile(os.path.join(root, "bin", "nvcc")):
            return os.path.join(root, "bin", "nvcc")
    return shutil.which("nvcc")


def cuda_root(nvcc):
    return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))


def gencode_flags(nvcc):
    env = os.environ.get("GPUMEM_CUDA_ARCHS", "").strip()
    if env:
        archs = sorted({int(a) for a in re.split(r"[;,\s]+", env) if a})
    else:
        out = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, check=True)
        archs = sorted({int(m) for m in re.findall(r"compute_(\d+)", out.stdout) if int(m) >= 75})
    if not archs:
        sys.exit("gpumem: GPUMEM_CUDA_ARCHS names no architecture")
    flags = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    newest = archs[-1]
    flags.append(f"-gencode=arch=compute_{newest},code=compute_{newest}")
    return flags


class BuildExt(build_ext):
    """Compile the CUDA launchers with nvcc, then the C extension around them."""

    def run(self):
        nvcc = find_nvcc()
        if nvcc is None:
            sys.exit(
                "gpumem: nvcc not found -- install the CUDA toolkit (12.x or 13.x) and put its "
                "bin/ on PATH, or set CUDA_HOME"
            )
        self.nvcc = nvcc
        self.cuda = cuda_root(nvcc)
        import numpy

        for ext in self.extensions:
            ext.include_dirs += [numpy.get_include(), os.path.join(self.cuda, "include"),
                                 os.path.join(HERE, "cuda"), os.path.join(HERE, "csrc")]
            # CUPTI headers (profile.c loads libcupti at run time: no link), and
            # csrc/profiler/cupti_c, whose empty `string` lets C include cupti_profiler_host.h.
            cupti_inc = os.path.join(self.cuda, "extras", "CUPTI", "include")
            ext.include_dirs += ([cupti_inc] if os.path.isdir(cupti_inc) else []) + [
                os.path.join(HERE, "csrc", "profiler", "cupti_c")]
            for libdir in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib"),
                           os.path.join("targets", "sbsa-linux", "lib")):
                path = os.path.join(self.cuda, libdir)
                if os.path.isfile(os.path.join(path, "libcudart_static.a")):
                    ext.library_dirs.append(path)
                    break
            ext.extra_objects += self.compile_cuda()
        super().run()

    def compile_cuda(self):
        flags = ["-O3", "-std=c++17", "--threads", "0", "-Xcompiler", "-fPIC",
                 "-Xcompiler", "-fvisibility=hidden", "-I", os.path.join(HERE, "cuda")]
        flags += gencode_flags(self.nvcc)
        out_dir = os.environ.get("GPUMEM_CUDA_OBJDIR") or os.path.join(self.build_temp, "cuda")
        os.makedirs(out_dir, exist_ok=True)
        headers = glob.glob(os.path.join(HERE, "cuda", "*.h")) + glob.glob(
            os.path.join(HERE, "cuda", "*.cuh"))
        newest_header = max((os.path.getmtime(h) for h in headers), default=0)
        stamp = os.path.join(out_dir, "flags.json")
        same_flags = os.path.isfile(stamp) and json.load(open(stamp)) == flags
        objects = []
        for src in sorted(glob.glob(os.path.join(HERE, "cuda", "*.cu"))):
            obj = os.path.join(out_dir, os.path.basename(src)[:-3] + ".o")
            objects.append(obj)
            if (same_flags and os.path.isfile(obj)
                    and os.path.getmtime(obj) > max(os.path.getmtime(src), newest_header)):
                continue
            cmd = [self.nvcc, "-c", src, "-o", obj] + flags
            print(" ".join(cmd), flush=True)
            subprocess.run(cmd, check=True)
        with open(stamp, "w") as f:
            json.dump(flags, f)
        return objects


core = Extension(
    "gpumem._core",
    # csrc/core.c (the module) and the rooms of its layers: runtime/, profiler/, lessons/
    sources=sorted(os.path.relpath(p, HERE)
                   for p in glob.glob(os.path.join(HERE, "csrc", "**", "*.c"), recursive=True)),
    depends=sorted(glob.glob("csrc/**/*.h", recursive=True) + glob.glob("cuda/*.h")
                   + glob.glob("cuda/*.cu")),
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wno-missing-field-initializers"],
    libraries=["cudart_static", "stdc++", "dl", "rt", "pthread"],
)

setup(ext_modules=[core], cmdclass={"build_ext": BuildExt})
