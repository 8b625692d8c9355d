"""Safe writing: refuse to overwrite unless forced, and write each file atomically.

All targets are checked before anything is written, so a refused run leaves the folder as it
was. Each file goes to a temporary file in the same folder and is renamed over the target with
os.replace, so a reader never sees half a file.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from planner.errors import PlannerError

Files = dict[str, tuple[str, bool]]  # relative path -> (text, executable)


def check_targets(out_dir: Path, files: Files, force: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise PlannerError(f"--out {out_dir}: exists and is not a folder")
    for rel in files:
        target = out_dir / rel
        if target.exists() and target.is_dir():
            raise PlannerError(f"{target}: is a folder, cannot write a file there")
    existing = [str(out_dir / rel) for rel in files if (out_dir / rel).exists()]
    if existing and not force:
        raise PlannerError(f"refusing to overwrite {', '.join(existing)} (pass --force)")


def write_atomic(target: Path, text: str, executable: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o755 if executable else 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_files(out_dir: Path, files: Files, force: bool = False) -> list[Path]:
    """Write every file under out_dir; return the paths written."""
    check_targets(out_dir, files, force)
    written = []
    try:
        for rel, (text, executable) in files.items():
            write_atomic(out_dir / rel, text, executable)
            written.append(out_dir / rel)
    except OSError as exc:
        raise PlannerError(f"cannot write {exc.filename or out_dir}: {exc.strerror}") from None
    return written
