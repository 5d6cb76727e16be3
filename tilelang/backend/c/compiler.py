"""Compile generated C into a shared library with the system C compiler.

`compile_source(source, name, ...)` hashes the source, the flags, the
compiler's identity and `tl_cpu.h`; a library with that hash already in the
build directory is reused. Otherwise the compiler writes a temporary file
that is then renamed into place (atomic: concurrent builders never see a
half-written library).

The build directory is `ctx.build_dir`, else `$TILELANG_CACHE_DIR/c`, else
`~/.tilelang/cache/c` (owner-only; an existing library there is reused only if it
passes the cache's ownership checks); with `TILELANG_DISABLE_CACHE=1`, or when that
directory is not trusted, this process's scratch directory (removed at exit). The
compiler is `$CC` or `cc`, run with the compile timeout (`backend.toolrun`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import tempfile

from ...errors import TileLangError
from ...transform.context import CompileContext
from ..toolrun import QUERY_TIMEOUT, run_tool

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


_IDENTITY: dict[str, str] = {}


def compiler_identity(cc: str) -> str:
    """Path and `--version` line of C compiler `cc` (asked once per process; bounded by
    the query timeout: a compiler that hangs here is a ToolTimeoutError)."""
    hit = _IDENTITY.get(cc)
    if hit is not None:
        return hit
    path = shutil.which(cc)
    if path is None:
        raise CCompileError(f"C compiler `{cc}` not found", None, "install gcc (apt-get install gcc) or set $CC")
    out = run_tool([path, "--version"], f"`{cc} --version`", timeout=QUERY_TIMEOUT)
    ident = _IDENTITY[cc] = f"{path}\n{out.stdout.splitlines()[0] if out.stdout else ''}"
    return ident


@functools.lru_cache(maxsize=1)
def _header_digest() -> str:
    h = hashlib.sha256()
    for fn in sorted(os.listdir(INCLUDE_DIR)):
        with open(os.path.join(INCLUDE_DIR, fn), "rb") as f:
            h.update(fn.encode() + b"\0" + f.read())
    return h.hexdigest()


_PRIVATE_DIR: str | None = None


def build_dir(ctx: CompileContext | None = None) -> str:
    """Where libraries go: `ctx.build_dir`, else `<cache root>/c` when the cache is on and
    that directory is trusted (`cache.trust`), else this process's scratch directory."""
    from ...cache import scratch, trust
    from ...cache.kernel_cache import cache_root, is_cache_enabled, warn_unusable

    ctx = CompileContext.of(ctx)
    if ctx.build_dir:
        d = ctx.build_dir
        os.makedirs(d, exist_ok=True)
        return d
    if is_cache_enabled():
        root = cache_root()
        try:
            trust.make_dirs(root, root / "c")
            return str(root / "c")
        except OSError as err:
            warn_unusable(err)
    global _PRIVATE_DIR
    if _PRIVATE_DIR is None or not os.path.isdir(_PRIVATE_DIR):
        _PRIVATE_DIR = scratch.keep_dir("c-")
    return _PRIVATE_DIR


def flags_for(ctx: CompileContext | None = None) -> list[str]:
    """DEFAULT_FLAGS + `ctx.compile_flags` + pass config `tl.device_compile_flags`."""
    ctx = CompileContext.of(ctx)
    extra = ctx.compile_flags
    dev = ctx.pass_configs.get("tl.device_compile_flags") or ()
    extra += [dev] if isinstance(dev, str) else list(dev)
    return list(DEFAULT_FLAGS) + [f for f in extra if isinstance(f, str)]


def compile_source(source: str, name: str, ctx: CompileContext | None = None, line_spans=None) -> str:
    """Compile `source` (kernel `name`) and return the path of the shared library."""
    cc = compiler()
    flags = flags_for(ctx)
    key = hashlib.sha256(
        "\0".join([source, " ".join(flags), compiler_identity(cc), _header_digest()]).encode()
    ).hexdigest()[:40]
    out_dir = build_dir(ctx)
    safe = re.sub(r"[^0-9A-Za-z_]", "_", name)[:40]
    lib = os.path.join(out_dir, f"{safe}-{key}.so")
    if trust_lib(lib):  # only a library we wrote (regular, ours, not writable by others)
        return lib
    src = os.path.join(out_dir, f"{safe}-{key}.c")
    fd, tmp_src = tempfile.mkstemp(suffix=".c", dir=out_dir)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    os.replace(tmp_src, src)
    fd, tmp_lib = tempfile.mkstemp(suffix=".so.tmp", dir=out_dir)
    os.close(fd)
    cmd = [cc, *flags, f"-I{INCLUDE_DIR}", "-o", tmp_lib, src, "-lm"]
    try:
        proc = run_tool(cmd, f"the C compiler `{cc}`", name)
    except TileLangError:
        _unlink(tmp_lib)
        raise
    if proc.returncode != 0:
        _unlink(tmp_lib)
        raise _compile_error(name, source, src, proc.stderr, cmd, line_spans)
    from ...cache.trust import file_mode

    os.chmod(tmp_lib, file_mode())  # the linker creates its output with the umask's mode
    os.replace(tmp_lib, lib)
    return lib


def trust_lib(path: str) -> bool:
    from ...cache.trust import trusted_file

    return trusted_file(path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


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
