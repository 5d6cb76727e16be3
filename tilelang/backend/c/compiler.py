"""Compile generated C into a shared library with the system C compiler.

`compile_source(source, name, ...)` hashes the source, the flags, the
compiler's identity and `tl_cpu.h`; a library with that hash already in the
build directory is reused. Otherwise the compiler writes a temporary file
that is then renamed into place (atomic: concurrent builders never see a
half-written library).

The build directory is `ctx["build_dir"]`, else `$TILELANG_CACHE_DIR/c`, else
`~/.tilelang/cache/c`; with `TILELANG_DISABLE_CACHE=1` a private temporary
directory of this process is used instead. The compiler is `$CC` or `cc`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

from ...errors import TileLangError

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")

# -ffp-contract=off: no fused multiply-add behind the program's back (results
#   match the IR's operation-by-operation rounding); -fno-math-errno and
#   -fno-trapping-math only drop errno / FP-exception bookkeeping, which lets
#   sqrt and guarded loads vectorize without changing any value.
DEFAULT_FLAGS = (
    "-O3",
    "-march=native",
    "-fopenmp",
    "-shared",
    "-fPIC",
    "-std=c11",
    "-ffp-contract=off",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-fvisibility=hidden",
)


class CCompileError(TileLangError):
    """The C compiler rejected generated code (a backend bug or an unsupported construct)."""


def compiler() -> str:
    return os.environ.get("CC") or "cc"


@functools.cache
def compiler_identity(cc: str) -> str:
    path = shutil.which(cc)
    if path is None:
        raise CCompileError(f"C compiler `{cc}` not found", None, "install gcc (apt-get install gcc) or set $CC")
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return f"{path}\n{out.stdout.splitlines()[0] if out.stdout else ''}"


@functools.lru_cache(maxsize=1)
def _header_digest() -> str:
    h = hashlib.sha256()
    for fn in sorted(os.listdir(INCLUDE_DIR)):
        with open(os.path.join(INCLUDE_DIR, fn), "rb") as f:
            h.update(fn.encode() + b"\0" + f.read())
    return h.hexdigest()


_PRIVATE_DIR: str | None = None


def build_dir(ctx: dict | None = None) -> str:
    from ...env import env

    ctx = ctx or {}
    if ctx.get("build_dir"):
        d = str(ctx["build_dir"])
    elif not env.is_cache_enabled():  # TILELANG_DISABLE_CACHE or tilelang.disable_cache()
        global _PRIVATE_DIR
        if _PRIVATE_DIR is None:
            _PRIVATE_DIR = tempfile.mkdtemp(prefix="tilelang-c-")
        d = _PRIVATE_DIR
    else:
        d = os.path.join(env.TILELANG_CACHE_DIR, "c")
    os.makedirs(d, exist_ok=True)
    return d


def flags_for(ctx: dict | None = None) -> list[str]:
    """DEFAULT_FLAGS + `ctx["compile_flags"]` + pass config `tl.device_compile_flags`."""
    ctx = ctx or {}
    extra = list(ctx.get("compile_flags") or ())
    dev = (ctx.get("pass_configs") or {}).get("tl.device_compile_flags") or ()
    extra += [dev] if isinstance(dev, str) else list(dev)
    return list(DEFAULT_FLAGS) + [f for f in extra if isinstance(f, str)]


def compile_source(source: str, name: str, ctx: dict | None = None, line_spans=None) -> str:
    """Compile `source` (kernel `name`) and return the path of the shared library."""
    cc = compiler()
    flags = flags_for(ctx)
    key = hashlib.sha256(
        "\0".join([source, " ".join(flags), compiler_identity(cc), _header_digest()]).encode()
    ).hexdigest()[:40]
    out_dir = build_dir(ctx)
    safe = re.sub(r"[^0-9A-Za-z_]", "_", name)[:40]
    lib = os.path.join(out_dir, f"{safe}-{key}.so")
    if os.path.exists(lib):
        return lib
    src = os.path.join(out_dir, f"{safe}-{key}.c")
    fd, tmp_src = tempfile.mkstemp(suffix=".c", dir=out_dir)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    os.replace(tmp_src, src)
    fd, tmp_lib = tempfile.mkstemp(suffix=".so.tmp", dir=out_dir)
    os.close(fd)
    cmd = [cc, *flags, f"-I{INCLUDE_DIR}", "-o", tmp_lib, src, "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        try:
            os.unlink(tmp_lib)
        except OSError:
            pass
        raise _compile_error(name, source, src, proc.stderr, cmd, line_spans)
    os.replace(tmp_lib, lib)
    return lib


def _compile_error(name: str, source: str, src_path: str, stderr: str, cmd: list, line_spans) -> CCompileError:
    lines = source.splitlines()
    pat = re.compile(re.escape(os.path.basename(src_path)) + r":(\d+):(\d+): (?:fatal )?error: (.*)")
    for raw in stderr.splitlines():
        m = pat.search(raw)
        if not m:
            continue
        ln = int(m.group(1))
        text = lines[ln - 1].strip() if 0 < ln <= len(lines) else ""
        span = None
        if line_spans:
            i = min(ln, len(line_spans)) - 1
            while i >= 0 and line_spans[i] is None:
                i -= 1
            span = line_spans[i] if i >= 0 else None
        return CCompileError(
            f"C compiler failed on kernel `{name}`: {m.group(3)}\n    generated line {ln}: {text}\n    source: {src_path}",
            span,
            "this is a bug in the C backend; please report it with the generated source",
        )
    tail = "\n".join(stderr.strip().splitlines()[-15:])
    return CCompileError(f"C compiler failed on kernel `{name}` ({' '.join(cmd)}):\n{tail}", None)
