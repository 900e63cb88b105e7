"""A text corpus as chunks of whole documents, and shards that shuffle it globally.

Pretraining data is made from chunks (`albert_tf.data.pipeline.document_chunks`): runs
of whole documents (one sentence per line, blank lines between documents) of about
`chunk_bytes` of one input file. A chunk is the unit of work of both the local path and
the Beam pipeline, so memory is bounded by one chunk whatever the size of a file or of the
corpus, and a huge file is split by documents rather than loaded whole.

Every example gets a 64-bit key, a seeded hash of (seed, file, chunk, index in
the chunk). The key picks the output shard (`shard_of`) and orders the
examples inside it, so a shard's bytes depend on the seed and the corpus only:
not on the runner, the number of workers, bundles or retries (tensorflow_datasets'
BeamWriter does the same). Sorting by a uniform hash is one global shuffle of
the whole corpus, as the original's in-memory shuffle was.
"""

import collections
import hashlib
import os
import struct
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple

import tensorflow as tf

from albert_tf.data.pipeline import Chunk
from albert_tf.files import atomic_path

# How many lines with a problem a report names (the rest are counted).
REPORTED_LINES = 5


class Report(collections.Counter):
  """Counts of a run (documents, instances, tokens, masked, lines with a problem) and
  where the first few problems were: `problems[kind]` lists "path:line" strings."""

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    self.problems: Dict[str, List[Tuple[int, int, str]]] = collections.defaultdict(list)

  def problem(self, kind: str, chunk: Chunk, line: int) -> None:
    self[kind] += 1
    if len(self.problems[kind]) < REPORTED_LINES:
      self.problems[kind].append((chunk.file_index, line, f"{chunk.path}:{line}"))

  def merge(self, other: "Report") -> "Report":
    self.update(other)
    for kind, places in other.problems.items():
      self.problems[kind] = sorted(self.problems[kind] + places)[:REPORTED_LINES]
    return self

  def to_dict(self) -> dict:
    return dict(counts=dict(self), problems={k: v for k, v in self.problems.items()})

  @classmethod
  def from_dict(cls, d: dict) -> "Report":
    report = cls(d["counts"])
    for kind, places in d["problems"].items():
      report.problems[kind] = [tuple(p) for p in places]
    return report

  def describe_problems(self) -> List[str]:
    """One line per kind of problem: how many, and where the first ones were."""
    lines = []
    for kind, what in (("invalid_utf8", "lines with bytes that are not UTF-8 (those bytes "
                        "were dropped)"),
                       ("empty_lines", "lines that tokenize to nothing (skipped)")):
      if self[kind]:
        places = ", ".join(p for _, _, p in self.problems[kind])
        more = ", ..." if self[kind] > len(self.problems[kind]) else ""
        lines.append(f"{self[kind]} {what}: {places}{more}")
    return lines


# ----------------------------------------------------------------------------- keys, shards

def example_key(seed: int, file_index: int, chunk_index: int, index: int) -> int:
  """The 64-bit key of the `index`-th example of a chunk."""
  digest = hashlib.blake2b(f"{seed}:{file_index}:{chunk_index}:{index}".encode(),
                           digest_size=8).digest()
  return int.from_bytes(digest, "big")


def shard_of(key: int, num_shards: int) -> int:
  """The shard of a key: its place in [0, 2**64) cut into `num_shards` equal parts."""
  return (key * num_shards) >> 64


def shard_names(output_file: str, num_output_shards: int) -> List[str]:
  """`--output_file` as a list of shards: its comma-separated files, or with
  `num_output_shards` N, `<output_file>-0000k-of-0000N` (Beam's and TFDS's names)."""
  outputs = [f.strip() for f in output_file.split(",") if f.strip()]
  if not num_output_shards:
    return outputs
  if len(outputs) != 1:
    raise ValueError(f"--num_output_shards={num_output_shards} names the shards of one "
                     f"--output_file; got {len(outputs)} files ({output_file})")
  return [f"{outputs[0]}-{k:05d}-of-{num_output_shards:05d}" for k in range(num_output_shards)]


def write_shard(path: str, keyed: Iterable[Tuple[int, bytes]]) -> int:
  """Writes one shard: its (key, serialized example) pairs sorted by key, atomically."""
  records = sorted(keyed)
  with atomic_path(path) as temporary:
    with tf.io.TFRecordWriter(temporary) as writer:
      for _, serialized in records:
        writer.write(serialized)
  return len(records)


# ----------------------------------------------------------------------------- local spill

_HEADER = struct.Struct(">QI")  # key, length


class Spill:
  """Per-shard files of (key, example) of one process, appended in buffered batches, so
  the local path needs no more memory than one chunk while it works, and one shard
  while it writes."""

  def __init__(self, directory: str, name: str, num_shards: int, buffer_bytes: int = 32 << 20):
    self.directory, self.name, self.num_shards = directory, name, num_shards
    self.buffer_bytes = buffer_bytes
    self.buffers: Dict[int, List[bytes]] = collections.defaultdict(list)
    self.buffered = 0

  def add(self, key: int, serialized: bytes) -> None:
    self.buffers[shard_of(key, self.num_shards)].append(
        _HEADER.pack(key, len(serialized)) + serialized)
    self.buffered += len(serialized) + _HEADER.size
    if self.buffered >= self.buffer_bytes:
      self.flush()

  def flush(self) -> None:
    for shard, items in self.buffers.items():
      with open(os.path.join(self.directory, f"{shard:05d}.{self.name}"), "ab") as f:
        f.write(b"".join(items))
    self.buffers.clear()
    self.buffered = 0


def read_spills(directory: str, shard: int) -> Iterator[Tuple[int, bytes]]:
  """Every (key, example) that any process spilled for `shard`."""
  prefix = f"{shard:05d}."
  for name in sorted(os.listdir(directory)):
    if not name.startswith(prefix):
      continue
    with open(os.path.join(directory, name), "rb") as f:
      data = f.read()
    offset = 0
    while offset < len(data):
      key, length = _HEADER.unpack_from(data, offset)
      offset += _HEADER.size
      yield key, data[offset:offset + length]
      offset += length


def check_inputs(paths: Sequence[str]) -> None:
  """Names a missing or unreadable input file before any work is done."""
  for path in paths:
    if tf.io.gfile.isdir(path):
      raise IsADirectoryError(f"--input_file {path} is a directory; pass its files "
                              f"(e.g. '{path.rstrip('/')}/*.txt')")
    try:
      with tf.io.gfile.GFile(path, "rb") as f:
        f.read(1)
    except (OSError, tf.errors.OpError) as e:
      message = getattr(e, "message", None) or e.strerror or str(e)
      raise OSError(f"--input_file {path} cannot be read: {message}") from None
