"""Safe writing: refuse to overwrite unless forced, write each file atomically, one writer at a time.

All targets are checked before anything is written, so a refused run leaves the folder as it
was; a dangling symbolic link counts as an existing file. A run holds an exclusive lock on the
output folder itself (fcntl.flock on the folder) while it checks and writes, so two runs into one
folder cannot mix their files: the second waits, then finds the first's files and refuses
without --force. Each file goes to a temporary file in the same folder and is moved into place:
without --force by os.link, which fails if the name exists, so nothing is overwritten even by a
writer outside planner; with --force by os.replace. A reader never sees half a file.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from planner.errors import PlannerError

Files = dict[str, tuple[str, bool]]  # relative path -> (text, executable)


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def check_targets(out_dir: Path, files: Files, force: bool) -> None:
    if _exists(out_dir) and not out_dir.is_dir():
        raise PlannerError(f"{out_dir}: exists and is not a folder")
    for rel in files:
        target = out_dir / rel
        if target.is_dir():
            raise PlannerError(f"{target}: is a folder, cannot write a file there")
    existing = [str(out_dir / rel) for rel in files if _exists(out_dir / rel)]
    if existing and not force:
        raise PlannerError(f"refusing to overwrite {', '.join(existing)} (pass --force)")


@contextmanager
def folder_lock(out_dir: Path):
    """An exclusive lock on `out_dir` for the duration of one run's writes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(out_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def write_atomic(target: Path, text: str, executable: bool, force: bool = True) -> None:
    """Write `text` to `target` through a temporary file; without `force`, fail if `target` exists."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o755 if executable else 0o644)
        if force:
            os.replace(tmp, target)
        else:
            os.link(tmp, target)  # FileExistsError when another writer got there first
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_files(out_dir: Path, files: Files, force: bool = False) -> list[Path]:
    """Write every file under out_dir; return the paths written."""
    if _exists(out_dir) and not out_dir.is_dir():
        raise PlannerError(f"{out_dir}: exists and is not a folder")
    written = []
    try:
        with folder_lock(out_dir):
            check_targets(out_dir, files, force)
            for rel, (text, executable) in files.items():
                write_atomic(out_dir / rel, text, executable, force)
                written.append(out_dir / rel)
    except FileExistsError as exc:
        raise PlannerError(f"refusing to overwrite {exc.filename} (it appeared while writing; pass --force)") from None
    except OSError as exc:
        raise PlannerError(f"cannot write {exc.filename or out_dir}: {exc.strerror}") from None
    return written
