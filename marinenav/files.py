"""Every file marinenav writes goes through here: a temporary file beside the target, flushed
to disk, then renamed over it (``os.replace``, atomic on one file system), so a crash, a full
disk or a lost write at any moment leaves either the old file or the new one, never a torn one.

:func:`atomic_path` is the one mechanism (a context manager that yields the temporary path for
any writer: ``torch.save``, ``torch.jit.save``, ONNX, matplotlib, Pillow); :func:`write_text`,
:func:`write_bytes`, :func:`write_with`, :func:`append_line` and :func:`save_figure` (a
matplotlib figure) are its everyday uses. A failed write removes the
temporary file and raises :class:`FileWriteError` (an ``OSError``) whose one-line message names
the target and the reason (``No space left on device``, ``Permission denied``), found in the
writer's exception chain where a C++ writer reports it as something else (torch's
``unexpected pos``). :func:`check_writable` refuses a target before any work is done.

Temporary names are ``.<name>.<random>.tmp<suffix>`` (hidden, unique, and with the target's
suffix, which writers such as matplotlib read the format from); :func:`remove_leftovers` removes
the ones a killed process left behind. The written file gets the permissions a plain write
would give it.

Not written here: ``run.lock`` (a lock record written in place while its ``flock`` is held; a
torn record reads as none), the files of the metric loggers (TorchRL's CSV and TensorBoard
writers append; a resume cuts the CSV logs back to the checkpoint) and Hydra's ``train.log``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

TEMP_SUFFIX = ".tmp"  # the temporary files' names: .<name>.<random>.tmp<suffix>


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# what open(path, "w") would give a new file (mkstemp makes its files 0600)
NEW_FILE_MODE = 0o666 & ~_umask()


class FileWriteError(OSError):
    """A file could not be written; the message names it and why, in one line. The target is
    unchanged (its previous content, or no file)."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def _os_error(error: BaseException) -> OSError | None:
    """The first ``OSError`` in ``error``'s chain (itself, its cause or its context)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OSError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def describe(error: BaseException) -> str:
    """Why a write failed, in a few words: the OS's reason where the chain holds one, else the
    first line of the error."""
    found = _os_error(error)
    if found is not None and found.strerror:
        return found.strerror
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Write ``path`` atomically: yields a temporary path in the same directory (created with
    its parents) for the caller to write; when the block ends without an error, the file is
    flushed to disk and renamed over ``path``. On an error the temporary file is removed and
    ``path`` is left as it was; an I/O failure (an ``OSError`` in the error's chain) is raised
    as :class:`FileWriteError` from the error, anything else (a bug, Ctrl-C) as it is."""
    path = Path(path)
    blocked = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocked is not None:  # mkdir would say "File exists"
        raise FileWriteError(errno.ENOTDIR, f"cannot write {path}: {blocked} is a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.", suffix=f"{TEMP_SUFFIX}{path.suffix}"
        )
        os.close(fd)
    except OSError as error:
        raise FileWriteError(error.errno, f"cannot write {path}: {describe(error)}") from error
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as f:  # what the writer wrote reaches the disk before the rename
            os.fsync(f.fileno())
        # the permissions a plain write would leave: the old file's, or a new file's
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.is_file() else NEW_FILE_MODE)
        os.replace(tmp, path)
    except BaseException as error:
        tmp.unlink(missing_ok=True)
        found = _os_error(error)
        if found is None or isinstance(error, FileWriteError):
            raise  # not an I/O failure (a bug, Ctrl-C), or already said
        raise FileWriteError(found.errno, f"cannot write {path}: {describe(error)}") from error
    _fsync_directory(path.parent)


def write_with(path: str | Path, writer: Callable[[BinaryIO], object]) -> Path:
    """Write ``path`` atomically by calling ``writer`` with the temporary file open for binary
    writing (``lambda f: torch.save(state, f)``: torch's writer then reports a full disk as
    the ``OSError`` it is). Returns ``path``."""
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        writer(f)
        f.flush()
    return path


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns ``path``."""
    return write_with(path, lambda f: f.write(data))


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns ``path``."""
    return write_bytes(path, text.encode("utf-8"))


def append_line(path: str | Path, line: str) -> Path:
    """Add ``line`` (a newline is added) to the text file ``path`` by rewriting it atomically:
    for small records (``resumes.jsonl``), so that a crash never leaves half a line."""
    path = Path(path)
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    if old and not old.endswith("\n"):
        old += "\n"
    return write_text(path, f"{old}{line}\n")


def save_figure(figure, path: str | Path, **options) -> Path:
    """``figure.savefig(path, **options)`` (a matplotlib figure), written atomically. The
    format is the suffix's; a path without one gets matplotlib's default format and its
    suffix, as ``savefig`` itself does. Returns the path written."""
    path = Path(path)
    if not path.suffix:
        from matplotlib import rcParams

        path = path.with_name(f"{path.name}.{rcParams['savefig.format']}")
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format=path.suffix[1:], **options)
    return path


def check_writable(path: str | Path, what: str) -> None:
    """Refuse, before any work, a file target that cannot be written: ``ValueError`` in one
    line naming ``what`` (``--out``) when ``path`` is a directory, lies under a file, or no file
    can be made in its nearest existing directory (tried: permissions, a read-only or full
    file system)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {path} is a directory, not a file")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{what} {path} is under {parent}, which is a file")
            try:  # the one sure test: make (and remove) a file there
                fd, probe = tempfile.mkstemp(dir=parent, prefix=".write-probe.")
            except OSError as error:
                raise ValueError(f"{what} {path}: cannot write in {parent} "
                                 f"({describe(error)})") from None  # fmt: skip
            os.close(fd)
            os.unlink(probe)
            return


def remove_leftovers(directory: str | Path, name: str = "*") -> None:
    """Remove the temporary files of ``name`` (default: of any file) in ``directory`` that a
    killed writer left (``.<name>.*.tmp*``)."""
    for leftover in Path(directory).glob(f".{name}.*{TEMP_SUFFIX}*"):
        leftover.unlink(missing_ok=True)
