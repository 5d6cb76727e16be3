"""One kernel-cache entry on disk: its format, how it is checked, written and replaced.

An entry is the directory `<cache dir>/kernels/<key[:2]>/<key>` holding
- `kernel-<sha16><suffix>`: the compiled library (`.so` / `.cubin`), named by its content,
  so a process that loaded one never mistakes a rebuilt library for it;
- `kernel.<ext>`: the generated source;
- `meta.json`: `{"format", "key", "lib_name", "lib_sha256", "source_sha256",
  "backend_meta", "anchors", "digest"}` (`anchors`: what the source's `// file:line` markers
  refer to, cache/markers.py); `digest` is the sha256 of all the other fields
  (canonical JSON), so the metadata, the library and the source are bound to each
  other and to the entry's own key.

Requires: paths under the cache root (`kernel_cache.cache_root`).
Guarantees (`read_entry`): an entry is used only if every directory from the cache
root down to it and every file in it passes `trust` (owner, mode, regular file), the
metadata has the current format and the entry's key, every field has the expected
type (the backend checks its own `backend_meta` with `check_meta`), the library name
is a bare file name, and the digest and both checksums match. Anything else — a
malformed, mismatched, unreadable, foreign or non-regular entry — is a miss (None),
logged with the reason; reading never follows a link, never blocks on a FIFO and
never reads more than a size limit. `write_entry` builds a complete entry in a
private temporary directory and renames it into place: readers see the old entry or
the new one, never a mix.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..backend.registry import BuiltKernel
from . import trust
from .markers import check_anchors

CACHE_FORMAT = 3  # bump when the entry layout or the metadata's meaning changes: old entries rebuild
META_LIMIT = 4 << 20
SOURCE_LIMIT = 256 << 20
LIB_LIMIT = 1 << 30
_BARE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_SHA = re.compile(r"[0-9a-f]{64}")

log = logging.getLogger("tilelang")


class Rejected(Exception):
    """Why an entry is not used (a miss, never an error the user sees)."""


def _root() -> Path:
    from .kernel_cache import cache_root

    return cache_root()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(fields: dict) -> str:
    """The sha256 that binds an entry's fields together (every field but `digest`)."""
    body = {k: v for k, v in fields.items() if k != "digest"}
    return _sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode())


def is_bare_name(name: Any) -> bool:
    return type(name) is str and name not in (".", "..") and _BARE_NAME.fullmatch(name) is not None


def _check_meta(meta: Any, key: str, backend: Any) -> None:
    if type(meta) is not dict:
        raise Rejected("meta.json is not a JSON object")
    if meta.get("format") != CACHE_FORMAT:
        raise Rejected(f"format {meta.get('format')!r}, not {CACHE_FORMAT}")
    if meta.get("key") != key:
        raise Rejected("meta.json belongs to another entry")
    if type(meta.get("digest")) is not str or meta["digest"] != digest(meta):
        raise Rejected("digest does not match the metadata")
    if not _SHA.fullmatch(str(meta.get("source_sha256"))):
        raise Rejected("source_sha256 is not a sha256")
    lib_name = meta.get("lib_name")
    if lib_name is not None:
        if not is_bare_name(lib_name):
            raise Rejected(f"lib_name {lib_name!r:.80} is not a bare file name")
        if not _SHA.fullmatch(str(meta.get("lib_sha256"))):
            raise Rejected("lib_sha256 is not a sha256")
    if type(meta.get("backend_meta")) is not dict:
        raise Rejected("backend_meta is not a JSON object")
    try:
        check_anchors(meta.get("anchors"))
    except ValueError as err:
        raise Rejected(str(err)) from None
    check = getattr(backend, "check_meta", None)
    if check is not None:
        try:
            check(meta["backend_meta"])
        except (ValueError, TypeError, KeyError) as err:
            raise Rejected(str(err)) from None


def check_entry(entry: Path, source_ext: str, backend: Any = None) -> BuiltKernel:
    """The entry as a BuiltKernel, or `Rejected` / OSError saying why it is not usable.
    (The directories above it are `read_entry`'s to check.)"""
    trust.check_dir(entry)
    try:
        meta = json.loads(trust.read_file(entry / "meta.json", META_LIMIT))
    except (ValueError, UnicodeDecodeError) as err:
        raise Rejected(f"meta.json is not JSON ({err})") from None
    _check_meta(meta, entry.name, backend)
    lib_path = None
    if meta.get("lib_name") is not None:
        lib_path = entry / meta["lib_name"]
        if _sha256(trust.read_file(lib_path, LIB_LIMIT)) != meta["lib_sha256"]:
            raise Rejected("the library does not match its checksum")
    raw = trust.read_file(entry / f"kernel.{source_ext}", SOURCE_LIMIT)
    if _sha256(raw) != meta["source_sha256"]:
        raise Rejected("the source does not match its checksum")
    try:
        source = raw.decode()
    except UnicodeDecodeError:
        raise Rejected("the source is not UTF-8") from None
    return BuiltKernel(
        source, str(lib_path) if lib_path else None, meta["backend_meta"], anchors=check_anchors(meta["anchors"])
    )


def read_entry(entry: Path, source_ext: str, backend: Any = None) -> BuiltKernel | None:
    """The cached kernel in `entry`, or None (a miss) when it is absent or not usable."""
    from .kernel_cache import warn_unusable

    try:
        trust.check_chain(_root(), entry.parent)
    except FileNotFoundError:
        return None
    except OSError as err:  # the whole cache is unusable: said once, not per entry
        warn_unusable(err)
        return None
    try:
        return check_entry(entry, source_ext, backend)
    except FileNotFoundError:
        return None
    except (Rejected, OSError) as err:
        log.warning("tilelang: kernel cache entry %s is not used (%s); rebuilding it", entry, err)
        return None


def _atomic_write(path: Path, data: bytes) -> None:
    """Write `path` through a temporary file renamed into place (mode `trust.file_mode()`)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, trust.file_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def entry_fields(key: str, built: BuiltKernel, lib_bytes: bytes | None, lib_suffix: str) -> tuple[dict, str | None]:
    """`meta.json` of an entry for `built` (and the library's file name)."""
    meta: dict[str, Any] = {
        "format": CACHE_FORMAT,
        "key": key,
        "backend_meta": json.loads(json.dumps(built.meta, allow_nan=False)),  # exactly what is read back
        "source_sha256": _sha256(built.kernel_source.encode()),
        "anchors": [list(a) for a in built.anchors],
    }
    lib_name = None
    if lib_bytes is not None:
        sha = _sha256(lib_bytes)
        lib_name = f"kernel-{sha[:16]}{lib_suffix}"
        meta["lib_name"], meta["lib_sha256"] = lib_name, sha
    meta["digest"] = digest(meta)
    return meta, lib_name


def write_entry(entry: Path, built: BuiltKernel, source_ext: str, backend: Any = None) -> BuiltKernel:
    """Store `built` as the entry `entry` (replacing an unusable one; a usable one another
    process wrote meanwhile is kept) and return it as loaded from there. OSError when
    the cache directory cannot be written or is not trusted."""
    parent = entry.parent
    trust.make_dirs(_root(), parent)
    lib_bytes = Path(built.lib_path).read_bytes() if built.lib_path else None
    suffix = Path(built.lib_path).suffix if built.lib_path else ""
    meta, lib_name = entry_fields(entry.name, built, lib_bytes, suffix)
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=".tmp-"))
    try:
        os.chmod(tmp, trust.dir_mode())
        if lib_bytes is not None:
            _atomic_write(tmp / lib_name, lib_bytes)
        _atomic_write(tmp / f"kernel.{source_ext}", built.kernel_source.encode())
        _atomic_write(tmp / "meta.json", json.dumps(meta, indent=1).encode())
        kept = _install(tmp, entry, source_ext, backend)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if kept is not None:
        return BuiltKernel(kept.kernel_source, kept.lib_path, kept.meta, built.lowered, kept.anchors)
    lib_path = str(entry / lib_name) if lib_name else None
    return BuiltKernel(built.kernel_source, lib_path, meta["backend_meta"], built.lowered, built.anchors)


def _install(tmp: Path, entry: Path, source_ext: str, backend: Any) -> BuiltKernel | None:
    """Rename `tmp` to `entry`; None when done, or the usable entry another process wrote first."""
    for _ in range(3):
        try:
            os.rename(tmp, entry)
            return None
        except OSError as err:
            if not entry.exists() and not entry.is_symlink():
                raise err
        try:
            return check_entry(entry, source_ext, backend)  # complete and usable: keep it
        except (Rejected, OSError):
            discard_entry(entry)
    raise OSError(f"could not install the cache entry {entry}")


def discard_entry(entry: Path) -> None:
    """Remove `entry` (moved aside first, so no reader sees it half-deleted)."""
    stale = entry.parent / f".stale-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        os.rename(entry, stale)
    except OSError:
        return
    if stale.is_symlink() or not stale.is_dir():
        stale.unlink(missing_ok=True)
    else:
        shutil.rmtree(stale, ignore_errors=True)
