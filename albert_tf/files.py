"""Files: writes that appear whole or not at all, fingerprints of inputs, glob expansion.

Imports nothing else of albert_tf; every layer may use it.
"""

import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
from typing import Iterator, List, Optional, Sequence, Union

import tensorflow as tf

# Why a write fails that the user can fix: errno, and the words of TensorFlow's messages.
_WRITE_FAILURES = {errno.ENOSPC: "No space left on device", errno.EDQUOT: "Disk quota exceeded",
                   errno.EROFS: "Read-only file system", errno.EACCES: "Permission denied",
                   errno.EPERM: "Operation not permitted"}


def human_bytes(count: float) -> str:
  """1536 -> '1.5 KiB'."""
  for unit in ("bytes", "KiB", "MiB", "GiB"):
    if count < 1024 or unit == "GiB":
      return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
    count /= 1024
  return f"{count:.1f} TiB"


class WriteFailed(Exception):
  """A write that failed for lack of space or permission. Command-line scripts print the
  message (one line) and exit with `exit_code`; every writer here writes to a
  temporary beside its target and renames it, so nothing written before is lost."""
  exit_code = 1

  def __init__(self, path: str, reason: str, needed: Optional[int] = None):
    free = ""
    with contextlib.suppress(OSError):
      existing = path
      while existing and not os.path.exists(existing):
        existing = os.path.dirname(existing)
      free = f", {human_bytes(shutil.disk_usage(existing or '.').free)} free there"
    size = f" (it needs about {human_bytes(needed)}{free})" if needed else (
        f" ({free[2:]})" if free and "space" in reason else "")
    fix = ("free some space" if "space" in reason or "quota" in reason
           else "make it writable")
    super().__init__(f"cannot write {path}: {reason}{size}; nothing written before is lost: "
                     f"{fix} and rerun the same command to continue")
    self.path, self.reason, self.needed = path, reason, needed


def write_failure(error: BaseException, path: str,
                  needed: Optional[int] = None) -> Optional[WriteFailed]:
  """The WriteFailed an OSError or TensorFlow error from writing `path` means, or None
  (other errors are not the user's disk or permissions)."""
  if isinstance(error, OSError) and error.errno in _WRITE_FAILURES:
    return WriteFailed(error.filename or path, _WRITE_FAILURES[error.errno], needed)
  if isinstance(error, tf.errors.OpError):
    for reason in _WRITE_FAILURES.values():
      if reason.lower() in error.message.lower():
        return WriteFailed(path, reason, needed)
  return None


@contextlib.contextmanager
def writing(path: str, needed: Optional[int] = None) -> Iterator[None]:
  """Turns a write in the block that fails for lack of space or permission into a
  WriteFailed naming `path` (and `needed` bytes, where the caller knows them)."""
  try:
    yield
  except (OSError, tf.errors.OpError) as e:
    failure = write_failure(e, path, needed)
    if failure is None:
      raise
    raise failure from None


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
  """Yields a temporary path beside `path` to write; renamed to `path` when the block
  succeeds, removed when it fails, so `path` never holds a partial file."""
  tmp = f"{path}.tmp-{os.getpid()}"
  try:
    with writing(path):
      yield tmp
      os.replace(tmp, path)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "w", **kwargs):
  """`open(path, mode)` whose content appears at `path` only once the block succeeds."""
  with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as f:
    yield f


@contextlib.contextmanager
def atomic_checkpoint(prefix: str) -> Iterator[str]:
  """Yields a temporary prefix to write a TF checkpoint to; when the block succeeds its
  files replace any checkpoint at `prefix`, data files before the index (a reader only
  looks for a checkpoint once its .index exists), so `prefix` never holds a partial one."""
  directory = os.path.dirname(os.path.abspath(prefix))
  with writing(directory):
    os.makedirs(directory, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".ckpt_", dir=directory)
  try:
    with writing(prefix):
      yield os.path.join(tmp, "ckpt")
      old = set(tf.io.gfile.glob(prefix + ".*"))
      for path in old:
        if path.endswith(".index"):
          os.remove(path)
      for name in sorted(os.listdir(tmp), key=lambda f: f.endswith(".index")):
        target = prefix + name[len("ckpt"):]
        os.replace(os.path.join(tmp, name), target)
        old.discard(target)
      for path in old:
        if os.path.exists(path):
          os.remove(path)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def atomic_directory(path: str, what: str = "output directory") -> Iterator[str]:
  """Yields a temporary directory beside `path` to fill; renamed to `path` when the block
  succeeds, removed when it fails. `path` must not exist, or be an empty directory:
  nothing already there is replaced."""
  path = os.path.abspath(path)
  if os.path.exists(path) and not (os.path.isdir(path) and not os.listdir(path)):
    raise FileExistsError(f"{what} {path} already exists and is not empty; nothing was "
                          "written (choose a new directory)")
  parent = os.path.dirname(path)
  with writing(path):
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.tmp-", dir=parent)
  try:
    with writing(path):
      yield tmp
      if os.path.isdir(path):
        os.rmdir(path)     # empty, checked above; fails if something appeared meanwhile
      os.replace(tmp, path)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


def read_json_object(path: str) -> dict:
  """The JSON object in `path`; a ValueError naming the file if it is not one."""
  try:
    with open(path, encoding="utf-8") as f:
      data = json.load(f)
  except json.JSONDecodeError as e:
    raise ValueError(f"{path}: not valid JSON ({e})") from None
  if not isinstance(data, dict):
    raise ValueError(f"{path}: expected a JSON object")
  return data


def write_json(path: str, content, **kwargs) -> None:
  """Atomic `json.dump` (numpy scalars written as numbers), UTF-8, with a final newline."""
  def default(value):
    if hasattr(value, "item"):
      return value.item()
    raise TypeError(type(value).__name__)

  with atomic_open(path, encoding="utf-8") as f:
    json.dump(content, f, default=default, **kwargs)
    f.write("\n")


def write_results(path: str, results: dict) -> None:
  """`key = value` lines, as the original eval_results.txt; atomic."""
  with atomic_open(path) as f:
    for k, v in results.items():
      f.write(f"{k} = {v}\n")


def fingerprint(*settings, files: Sequence[str] = (), length: int = 10) -> str:
  """A hex digest of the contents of `files` and the reprs of `settings`: what a
  cached file was built from, so changed inputs never reuse stale features."""
  digest = hashlib.sha1()
  for path in files:
    with open(path, "rb") as f:
      for block in iter(lambda: f.read(1 << 20), b""):
        digest.update(block)
  digest.update(repr(settings).encode())
  return digest.hexdigest()[:length]


def expand_files(patterns: Union[str, Sequence[str]], flag: str = "input_file") -> List[str]:
  """Comma-separated (or listed) paths and globs -> files, each pattern's matches sorted,
  duplicates dropped; an error names `--flag` and the pattern that matched nothing."""
  items = patterns.split(",") if isinstance(patterns, str) else list(patterns)
  files = []
  for pattern in [p.strip() for p in items if p and p.strip()]:
    matched = sorted(tf.io.gfile.glob(pattern))
    if not matched:
      raise FileNotFoundError(f"--{flag}: no file matches {pattern}")
    files.extend(m for m in matched if m not in files)
  if not files:
    raise ValueError(f"--{flag} is empty")
  return files


LOCK_NAME = ".albert_tf.lock"
_held_locks = set()


def lock_directory(directory: str, flag: str = "output_dir") -> str:
  """Takes `directory` for this process until it exits: creates `directory/.albert_tf.lock`
  (pid and host) atomically, so a second run on the same directory stops at once.

  A lock left by a process that no longer runs on this host is taken over (with a
  message); one of a live process, or of another host, is an error naming it. This
  process taking its own lock again is a no-op. Returns the lock file's path.
  """
  import atexit  # pylint: disable=g-import-not-at-top
  import socket  # pylint: disable=g-import-not-at-top
  os.makedirs(directory, exist_ok=True)
  path = os.path.join(os.path.abspath(directory), LOCK_NAME)
  me = dict(pid=os.getpid(), host=socket.gethostname())
  for _ in range(3):
    try:
      fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
      try:
        with open(path) as f:
          owner = json.load(f)
        pid, host = int(owner["pid"]), str(owner["host"])
      except FileNotFoundError:
        continue                       # released in between: try again
      except (ValueError, KeyError, TypeError):
        pid, host = None, None         # half-written by a process killed while locking
      if (pid, host) == (me["pid"], me["host"]):
        return path
      if host not in (None, me["host"]):
        raise FileExistsError(f"--{flag}={directory} is in use by process {pid} on host {host} "
                              f"({path}); wait for it, or delete {path} if it has stopped")
      if pid is not None and process_alive(pid):
        raise FileExistsError(f"--{flag}={directory} is in use by process {pid} (still running; "
                              f"{path}): wait for it or stop it, or use another --{flag}")
      print(f"Taking over {path}: its process {pid} no longer runs")
      with contextlib.suppress(FileNotFoundError):
        os.remove(path)
      continue
    with os.fdopen(fd, "w") as f:
      json.dump(me, f)
    _held_locks.add(path)
    if len(_held_locks) == 1:
      atexit.register(_release_locks)
    return path
  raise FileExistsError(f"--{flag}={directory}: could not take {path}")


def unlock_directory(directory: str) -> None:
  """Releases this process's lock on `directory` (if it holds one)."""
  path = os.path.join(os.path.abspath(directory), LOCK_NAME)
  if path in _held_locks:
    _held_locks.discard(path)
    with contextlib.suppress(FileNotFoundError):
      os.remove(path)


def _release_locks() -> None:
  for path in list(_held_locks):
    unlock_directory(os.path.dirname(path))


def process_alive(pid: int) -> bool:
  """Whether process `pid` runs on this host (a zombie does not)."""
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  try:                               # a killed process its parent has not reaped yet
    with open(f"/proc/{pid}/stat") as f:
      return f.read().rsplit(")", 1)[1].split()[0] != "Z"
  except (OSError, IndexError):
    return True


def read_text(path: str) -> str:
  """A UTF-8 text file's content; a file that is not UTF-8 is a ValueError naming the
  file, line and column of the first bad byte."""
  with open(path, "rb") as f:
    data = f.read()
  try:
    return data.decode("utf-8")
  except UnicodeDecodeError as e:
    line = data.count(b"\n", 0, e.start) + 1
    column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
    raise ValueError(f"{path}:{line}:{column}: not UTF-8 (byte 0x{data[e.start]:02x}); save "
                     "the file as UTF-8") from None


def text_lines(path: str) -> Iterator[str]:
  """A UTF-8 text file's lines (with their endings), read one at a time; a line that is not
  UTF-8 is a ValueError naming the file, line and column of the first bad byte (as
  `read_text`)."""
  with open(path, "rb") as f:
    for number, data in enumerate(f, 1):
      try:
        yield data.decode("utf-8")
      except UnicodeDecodeError as e:
        raise ValueError(f"{path}:{number}:{e.start + 1}: not UTF-8 (byte "
                         f"0x{data[e.start]:02x}); save the file as UTF-8") from None


@contextlib.contextmanager
def reading_checkpoint(prefix: str) -> Iterator[None]:
  """Turns the errors of reading a damaged checkpoint (a truncated .data file raises
  IndexError, a corrupt one DataLossError) into a ValueError naming its files."""
  try:
    yield
  except (IndexError, tf.errors.DataLossError, tf.errors.OutOfRangeError,
          tf.errors.InvalidArgumentError) as e:
    names = ", ".join(sorted(tf.io.gfile.glob(prefix + ".*"))) or prefix
    detail = getattr(e, "message", None) or str(e)
    raise ValueError(f"checkpoint {prefix} cannot be read ({type(e).__name__}: "
                     f"{detail.splitlines()[0] if detail else ''}); its files may be truncated "
                     f"or corrupt: {names}") from None


def find_corrupt_record(paths: Sequence[str]) -> Optional[str]:
  """The first of `paths` whose TFRecords do not read back whole, with what is wrong
  ("path: detail"), or None. Reads every record: for after a DataLossError."""
  for path in paths:
    try:
      for _ in tf.data.TFRecordDataset(path):
        pass
    except (tf.errors.DataLossError, tf.errors.OutOfRangeError) as e:
      return f"{path}: {e.message.splitlines()[0] if e.message else type(e).__name__}"
  return None
