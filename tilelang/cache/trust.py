"""Who may have written a cache file, and reading one without following links or blocking.

Why: a cached library is loaded into the process (a shared library's constructors run
at `dlopen`), so whoever can write an entry can run code as the next user of it. The
rule is ssh's for its keys: a directory or file is used only if it is owned by the
current user (or root) and writable by nobody else; files are regular files opened without
following a final symlink and without waiting on FIFOs, and reads are bounded.

Shared caches (`TILELANG_CACHE_TRUST_GROUP=1`): files and directories owned by another
user are accepted when their group is one of ours, and group-writable ones when that
group is ours; world-writable ones never. New directories are then created 2770
(setgid: entries keep the directory's group) and files 0660, instead of 0700 / 0600.

Requires: a POSIX system (ownership and modes). Guarantees: every check failure is an
`UntrustedPath` (an OSError, so callers that treat unreadable entries as misses need
no extra case), naming the path and the reason.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

TRUST_GROUP_ENV = "TILELANG_CACHE_TRUST_GROUP"


class UntrustedPath(OSError):
    """A cache path that another user could have written, or that is not a plain file/dir."""


def trust_group() -> bool:
    return os.environ.get(TRUST_GROUP_ENV, "0").lower() in ("1", "true", "yes", "on")


def current_uid() -> int:
    """The user whose files are trusted (a function, so tests can pretend to be another)."""
    return os.geteuid()


def owner_of(st: os.stat_result, path: str | Path) -> int:
    """The uid that owns `path` (a function, so tests can pretend a file is someone else's)."""
    return st.st_uid


def _our_groups() -> set[int]:
    return {os.getegid(), *os.getgroups()}


def dir_mode() -> int:
    return 0o2770 if trust_group() else 0o700


def file_mode() -> int:
    return 0o660 if trust_group() else 0o600


def check_stat(st: os.stat_result, path: str | Path) -> None:
    """Raise UntrustedPath unless `st` (of `path`) is owned and writable only as the rules allow."""
    shared = trust_group() and st.st_gid in _our_groups()
    owner = owner_of(st, path)
    if owner not in (current_uid(), 0) and not shared:  # root could change anything anyway
        hint = "" if trust_group() else f" (a cache shared with your group needs {TRUST_GROUP_ENV}=1)"
        raise UntrustedPath(f"{path} is owned by uid {owner}, not by you{hint}")
    if st.st_mode & stat.S_IWOTH:
        raise UntrustedPath(f"{path} is world-writable (mode {stat.S_IMODE(st.st_mode):o})")
    if st.st_mode & stat.S_IWGRP and not shared:
        raise UntrustedPath(
            f"{path} is group-writable (mode {stat.S_IMODE(st.st_mode):o}): run `chmod g-w {path}`, or set "
            f"{TRUST_GROUP_ENV}=1 for a cache shared with your group"
        )


def check_dir(path: str | Path, follow: bool = False) -> None:
    """`path` is a trusted directory (a symlink only where `follow`: the cache root itself)."""
    st = os.stat(path) if follow else os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UntrustedPath(f"{path} is not a directory")
    check_stat(st, path)


def _chain(root: Path, path: Path) -> list[Path]:
    """`root` and every directory below it down to `path` (just `path` if it is not under root)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return [path]
    out = [root]
    for part in rel.parts:
        out.append(out[-1] / part)
    return out


def check_chain(root: Path, path: Path) -> None:
    """Every directory from the cache `root` down to `path` is trusted: nobody else can
    rename or replace anything below the root between our checks and our use."""
    for i, d in enumerate(_chain(root, path)):
        check_dir(d, follow=i == 0)


def make_dirs(root: Path, path: Path) -> None:
    """Check the directories from `root` down to `path`, creating the missing ones
    owner-only (umask cannot widen them); nothing is created below an untrusted one."""
    for i, d in enumerate(_chain(root, path)):
        try:
            check_dir(d, follow=i == 0)
            continue
        except FileNotFoundError:
            pass
        try:
            os.mkdir(d, dir_mode())
        except FileExistsError:  # made meanwhile by another process: check what it made
            pass
        except FileNotFoundError:  # the root's parents, which are the user's
            os.makedirs(d, dir_mode(), exist_ok=True)
        else:
            os.chmod(d, dir_mode())
        check_dir(d, follow=i == 0)


def trusted_file(path: str | Path) -> bool:
    """`path` exists, is a regular file (not a link) and passes `check_stat`."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    try:
        check_stat(st, path)
    except UntrustedPath:
        return False
    return True


def read_file(path: str | Path, limit: int) -> bytes:
    """The bytes of a trusted regular file of at most `limit` bytes. A symlink, FIFO,
    device or socket is refused without blocking (O_NOFOLLOW | O_NONBLOCK, then fstat
    on the opened file), as is a file that is too large or grows past `limit`."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if os.path.islink(path):
            raise UntrustedPath(f"{path} is a symbolic link") from None
        raise err
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UntrustedPath(f"{path} is not a regular file")
        check_stat(st, path)
        if st.st_size > limit:
            raise UntrustedPath(f"{path} is larger than {limit} bytes")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise UntrustedPath(f"{path} grew past {limit} bytes while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)
