"""Files: writes that appear whole or not at all, fingerprints of inputs, glob expansion.

Imports nothing else of albert_tf; every layer may use it.
"""

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from typing import Iterator, List, Sequence, Union

import tensorflow as tf


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
  """Yields a temporary path beside `path` to write; renamed to `path` when the block
  succeeds, removed when it fails, so `path` never holds a partial file."""
  tmp = f"{path}.tmp-{os.getpid()}"
  try:
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
  os.makedirs(directory, exist_ok=True)
  tmp = tempfile.mkdtemp(prefix=".ckpt_", dir=directory)
  try:
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
