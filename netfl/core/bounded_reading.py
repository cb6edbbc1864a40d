"""Reading a file a user names, bounded: only a regular file (a FIFO nobody writes, a
device such as ``/dev/zero`` or a directory is refused before it is opened), at most a
size limit of bytes, text as UTF-8; and loaders cached per file and modification time.
Every problem is a ``ValueError`` in words to follow the path."""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["cached_per_file", "read_bytes_bounded", "read_text_bounded"]


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n:,} bytes"


def read_bytes_bounded(path: str | Path, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``); ``ValueError`` says
    why not, in words to follow the path: missing, not a regular file (a directory, a
    FIFO, a device), too large, unreadable. The file type is checked before the file
    is opened, so a FIFO that nobody writes cannot block the read."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ValueError("file not found") from None
    except OSError as err:
        raise ValueError(f"cannot read ({err.strerror or err})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError("is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("is not a regular file (a FIFO, socket or device)")
    if st.st_size > limit:
        raise ValueError(f"file is {st.st_size:,} bytes; a {what} is at most {_size(limit)}")
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as err:
        raise ValueError(f"cannot read ({err.strerror or err})") from None
    if len(raw) > limit:  # (it grew since stat)
        raise ValueError(f"file is over {_size(limit)}; a {what} is at most {_size(limit)}")
    return raw


def read_text_bounded(path: str | Path, limit: int, what: str = "file") -> str:
    """:func:`read_bytes_bounded` decoded as UTF-8 text (a byte-order mark, as
    spreadsheets write it, is dropped); NUL bytes and other encodings are refused."""
    raw = read_bytes_bounded(path, limit, what)
    if b"\x00" in raw:
        raise ValueError("binary file, not text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"not UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start})"
        ) from None


def cached_per_file(loader: Callable[[str], Any], maxsize: int = 16) -> Callable[[str], Any]:
    """``loader(path)`` cached per file and modification time (a file edited between two
    runs in one process is read again); a file that cannot be stat'ed is a
    ``ValueError``."""
    cached = functools.lru_cache(maxsize=maxsize)(lambda path, _stamp: loader(path))

    @functools.wraps(loader)
    def read(path: str) -> Any:
        try:
            stamp = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            raise ValueError(f"{path}: file not found") from None
        except OSError as err:
            raise ValueError(f"{path}: cannot read ({err.strerror or err})") from None
        return cached(path, stamp)

    return read
