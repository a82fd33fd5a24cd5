"""Safe files: writable-path checks, atomic writes, one run per checkpoint file, and
read errors that name the file.

No path of flexmbd may lose a file the user already has:

* :func:`check_writable` refuses, before any work, a path whose directory is
  missing, not a directory or not writable, and a path that is a directory;
* :func:`atomic_write` writes to a temporary file in the target's directory and
  moves it over the target with :func:`os.replace` only once it is complete, so an
  interrupted or failed write leaves the old file (or none) and never half a file;
* :class:`FileLock` holds ``<path>.lock`` (``fcntl.flock``) for the whole of a
  checkpointed run: a second run on the same checkpoint file is refused before it
  touches the file. The operating system releases the lock when the process ends,
  even when it is killed, so a stale lock never blocks a later run;
* :func:`read_failure` turns the exceptions of h5py, numpy and zipfile on a
  truncated, empty, foreign or garbage file into a :class:`~flexmbd.errors.FileError`
  that names the file, says what it is (:func:`sniff`) and what to do.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import uuid
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import FileError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ._typing import StrPath

__all__ = [
    "check_writable",
    "check_readable",
    "atomic_write",
    "FileLock",
    "sniff",
    "read_failure",
    "READ_ERRORS",
]

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"

#: exceptions that reading a damaged or foreign file can raise (turned into FileError)
READ_ERRORS = (
    OSError,
    EOFError,
    KeyError,
    ValueError,
    TypeError,
    IndexError,
    zipfile.BadZipFile,
    json.JSONDecodeError,
    UnicodeDecodeError,
    AttributeError,
)


def _q(path):
    return repr(str(path))


def check_writable(path: StrPath, what: str = "output file") -> Path:
    """Refuse (:class:`FileError`) a ``path`` that cannot be created or replaced.

    The directory must exist, be a directory and accept a new file (tried by creating
    and removing an empty temporary file, which also works for root and read-only
    file systems); ``path`` must not be a directory. Returns ``Path(path)``.
    """
    path = Path(path)
    if path.is_dir():
        raise FileError(
            f"the {what} {_q(path)} is a directory; give a file name (e.g. {_q(path / 'run.h5')})"
        )
    parent = path.parent
    if not parent.exists():
        raise FileError(
            f"cannot write the {what} {_q(path)}: directory {_q(parent)} does "
            f"not exist; create it first (mkdir -p) or choose another path"
        )
    if not parent.is_dir():
        raise FileError(
            f"cannot write the {what} {_q(path)}: {_q(parent)} is a file, not "
            f"a directory; choose another path"
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".flexmbd-probe-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise FileError(
            f"cannot write the {what} {_q(path)}: directory {_q(parent)} is not "
            f"writable ({err.strerror or err}); choose another directory or "
            f"change its permissions"
        ) from None
    return path


def check_readable(path: StrPath, what: str = "file") -> Path:
    """Refuse (:class:`FileError`) a missing ``path``, a directory, an unreadable file."""
    path = Path(path)
    if not path.exists():
        raise FileError(
            f"the {what} {_q(path)} does not exist (check the path and the "
            f"working directory {_q(Path.cwd())})"
        )
    if path.is_dir():
        raise FileError(f"the {what} {_q(path)} is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise FileError(f"the {what} {_q(path)} is not readable (permissions)")
    return path


@contextlib.contextmanager
def atomic_write(path: StrPath, what: str = "output file") -> Iterator[Path]:
    """Context manager: yield a temporary path next to ``path``; move it over ``path``
    when the block ends without error (the old file stays until then), delete it
    otherwise. The temporary file has ``path``'s suffix (numpy does not rename it).
    An :class:`OSError` of the write (disk full...) becomes a :class:`FileError`.
    """
    path = check_writable(path, what)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp{path.suffix}")
    try:  # created like any new file (mode 0o666 less the umask), never an old one
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except OSError as err:
        raise FileError(f"cannot write the {what} {_q(path)}: {err}") from None
    try:
        yield tmp
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)  # keep the old file's mode
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except FileError:
        _remove(tmp)
        raise
    except OSError as err:
        _remove(tmp)
        raise FileError(
            f"cannot write the {what} {_q(path)}: {err}; check the free disk "
            f"space and the directory (the previous file, if any, is "
            f"unchanged)"
        ) from err
    except BaseException:
        _remove(tmp)
        raise


def _remove(path):
    with contextlib.suppress(OSError):
        os.unlink(path)


def sniff(path: StrPath) -> str:
    """``"hdf5"``, ``"npz"``, ``"empty"``, ``"directory"``, ``"missing"`` or
    ``"unknown"``: what the file is, from its first bytes."""
    path = Path(path)
    if not path.exists():
        return "missing"
    if path.is_dir():
        return "directory"
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return "unknown"
    if not head:
        return "empty"
    if head == HDF5_MAGIC:
        return "hdf5"
    if head[:2] == b"PK":
        return "npz"
    return "unknown"


_KIND = {
    "hdf5": "an HDF5 file",
    "npz": "an npz (zip) archive",
    "empty": "empty (0 bytes)",
    "unknown": "neither HDF5 nor npz",
    "directory": "a directory",
    "missing": "missing",
}


def read_failure(path: StrPath, what: str, err: BaseException, hint: str) -> FileError:
    """A :class:`FileError` for ``err`` raised while reading ``path`` as ``what``.

    ``hint`` says how to get a good file (e.g. "write it with Results.save").
    """
    kind = sniff(path)
    text = str(err)
    if isinstance(err, KeyError):
        reason = f"entry {err.args[0]!r} is missing: it was not written by flexmbd as a {what}"
    elif isinstance(err, ValueError) and text in _KIND:
        reason = f"it is {_KIND[kind]}, not the format of a {what}"
    elif isinstance(err, ValueError) and "pickle" in text.lower():
        reason = "it holds pickled Python objects, which flexmbd never writes (and never loads)"
    elif isinstance(err, (EOFError, zipfile.BadZipFile)) or "truncat" in text.lower():
        reason = "the file is truncated or damaged (an interrupted copy or download?)"
    elif kind in ("empty", "unknown", "directory"):
        reason = f"the file is {_KIND[kind]}"
    elif kind == "hdf5" and isinstance(err, OSError) and "lock" in text.lower():
        reason = (
            "another process has it open for writing (HDF5 file lock): try again "
            "when that write is done"
        )
    elif kind == "hdf5" and isinstance(err, OSError):
        reason = f"the HDF5 structure is damaged or truncated (h5py: {text})"
    else:
        reason = f"{type(err).__name__}: {text}"
    return FileError(f"cannot read {_q(path)} as a {what} ({_KIND[kind]}): {reason}; {hint}")


class FileLock:
    """Exclusive lock of ``path`` for this process: ``<path>.lock`` locked with
    :func:`fcntl.flock` (re-entrant within a process).

    ``acquire`` raises :class:`FileError` naming the process that holds it. The lock
    dies with its process (even ``kill -9``), so a stale lock file left behind is
    taken over. Without ``fcntl`` (Windows) the lock file is created exclusively and
    holds the owner's PID.
    """

    _held = {}  # lock path -> [file descriptor, depth]

    def __init__(self, path: StrPath, what: str = "checkpoint file") -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.what = what

    def _key(self):
        return str(self.lock_path.resolve())

    def acquire(self) -> FileLock:
        key = self._key()
        if key in FileLock._held:
            FileLock._held[key][1] += 1
            return self
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            fd = self._acquire_exclusive()
        else:
            fd = self._acquire_flock(fcntl)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        FileLock._held[key] = [fd, 1]
        return self

    def _busy(self):
        try:
            pid = self.lock_path.read_text().strip() or "?"
        except OSError:
            pid = "?"
        return FileError(
            f"the {self.what} {_q(self.path)} is in use by another run (process {pid}, lock "
            f"{_q(self.lock_path)}): wait for that run to end, or choose another path; its "
            f"file is left untouched"
        )

    def _acquire_flock(self, fcntl):
        for _ in range(10):
            try:
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as err:
                raise FileError(
                    f"cannot create the lock file {_q(self.lock_path)} of the {self.what}: {err}"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise self._busy() from None
            # the holder before us may have removed the file after we opened it
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.lock_path))
            except OSError:
                same = False
            if same:
                return fd
            os.close(fd)
        raise self._busy()  # pragma: no cover - a race ten times over

    def _acquire_exclusive(self):  # pragma: no cover - Windows
        try:
            return os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise self._busy() from None

    def release(self) -> None:
        key = self._key()
        entry = FileLock._held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del FileLock._held[key]
        _remove(self.lock_path)  # first remove, then unlock (see acquire)
        os.close(entry[0])

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
