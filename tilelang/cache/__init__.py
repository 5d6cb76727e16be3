"""On-disk kernel cache (`~/.tilelang/cache`, `TILELANG_CACHE_DIR`; off with
`TILELANG_DISABLE_CACHE=1`; shared with your group only with `TILELANG_CACHE_TRUST_GROUP=1`).

Key = sha256(entry format, tilelang version, the compiler's own source, the kernel's
printed IR, target, options, backend salt). An entry (`entry.py`) is a directory
holding the generated source, the compiled library and `meta.json`, whose digest
binds the metadata, both checksums and the entry's key together.

Nothing from an entry is ever `eval`'d (launch grids are data: `ir.int_tree`). The
cache's directories are created 0700 and its files 0600; an entry is used only if it,
its files and every directory up to the cache root are owned by you and writable by
nobody else, the files are regular files, and its metadata passes the schema and the
checksums (`trust.py`, `entry.py`). Anything else is rebuilt, never a crash or a hang;
a cache whose directories are not trusted is not used at all (one warning), and
kernels are then built in this process's scratch directory (`scratch.py`, removed at
exit) — as they are with the cache disabled. Writes build a whole entry in a private
temporary directory and rename it into place.
"""

from .kernel_cache import (
    cache_dir,
    clear_cache,
    disable_cache,
    enable_cache,
    is_cache_enabled,
    load_kernel,
    load_or_build,
)

__all__ = [
    "cache_dir",
    "clear_cache",
    "disable_cache",
    "enable_cache",
    "is_cache_enabled",
    "load_kernel",
    "load_or_build",
]
