"""On-disk kernel cache (`~/.tilelang/cache`, `TILELANG_CACHE_DIR`; off with
`TILELANG_DISABLE_CACHE=1`).

Key = sha256(tilelang version, the kernel's printed IR, target, options,
backend salt). An entry is a directory holding the generated source, the
compiled library and `meta.json` (written last; it records the library's
sha256). Writes go to temporary files renamed into place, so concurrent
processes never see a torn file; an entry whose library does not match its
recorded checksum is treated as a miss and rebuilt.
"""

from .kernel_cache import cache_dir, clear_cache, disable_cache, enable_cache, is_cache_enabled, load_or_build

__all__ = ["cache_dir", "clear_cache", "disable_cache", "enable_cache", "is_cache_enabled", "load_or_build"]
