"""TFRecords of features: one writer and one tf.data reader for every task.

Features are dicts of ints, floats or lists of them, stored as
`tf.train.Example`s under the original scripts' feature names
(`input_ids`, `input_mask`, `segment_ids`, ...). The reader renames those to
the model's input names and casts int64 to int32.
"""

import contextlib
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Union

import tensorflow as tf

from albert_tf.files import atomic_path

# Original feature name -> model input name.
MODEL_NAMES = dict(input_ids="input_word_ids", segment_ids="input_type_ids")
# Model inputs with one entry per token (last axis S), cut together by length bucketing.
SEQUENCE_KEYS = ("input_word_ids", "input_mask", "input_type_ids", "p_mask")
_INT64 = ("unique_ids",)  # SQuAD's ids start at 1e9
Schema = Dict[str, tf.io.FixedLenFeature]


def _feature(values) -> tf.train.Feature:
  if not isinstance(values, (list, tuple)):
    values = [values]
  if values and isinstance(values[0], float):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))
  return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def serialize(features: Dict[str, object]) -> bytes:
  """A `tf.train.Example` of ints / floats / lists of them (floats: FloatList)."""
  return tf.train.Example(features=tf.train.Features(
      feature={k: _feature(v) for k, v in features.items()})).SerializeToString(
      deterministic=True)


def write_records(examples: Iterable[Union[bytes, Dict[str, object]]],
                  paths: Union[str, Sequence[str]], if_none: Optional[str] = None) -> int:
  """Writes features (dicts, or already serialized) round-robin over `paths`; each file
  appears only when all are complete. Returns the number written. With `if_none`, no
  example is a ValueError with that message, and no file is written."""
  paths = [paths] if isinstance(paths, str) else list(paths)
  count = 0
  with contextlib.ExitStack() as stack:  # every file renamed into place, or none
    writers = [tf.io.TFRecordWriter(stack.enter_context(atomic_path(p))) for p in paths]
    try:
      for example in examples:
        writers[count % len(writers)].write(
            example if isinstance(example, bytes) else serialize(example))
        count += 1
    finally:
      for w in writers:
        w.close()
    if not count and if_none:
      raise ValueError(if_none)
  return count


def bucket_lengths(max_seq_length: int) -> List[int]:
  """The sequence lengths batches are cut to when bucketing by length: multiples of
  32 up to 128, of 64 above, and `max_seq_length` itself (10 lengths for 512)."""
  lengths = [n for n in range(32, min(128, max_seq_length) + 1, 32)]
  lengths += [n for n in range(192, max_seq_length + 1, 64)]
  return sorted(set(n for n in lengths if n < max_seq_length) | {max_seq_length})


def cut_to_bucket(batch: Dict[str, tf.Tensor], lengths: Sequence[int],
                  keys: Sequence[str] = SEQUENCE_KEYS) -> Dict[str, tf.Tensor]:
  """Cuts the token axis (the last) of `keys` in a padded batch to the smallest of
  `lengths` that holds its longest `input_mask`; nothing but padding is removed.

  A batch keeps its examples and their order; only its width changes, to one of
  a few lengths, so a tf.function traces at most `len(lengths)` shapes.
  """
  mask = batch["input_mask"]                                               # [..., S]
  positions = tf.range(1, tf.shape(mask)[-1] + 1)                           # [S]
  longest = tf.reduce_max(tf.where(mask > 0, positions, 0))                 # scalar
  bounds = tf.constant(list(lengths), tf.int32)
  index = tf.minimum(tf.searchsorted(bounds, longest[None], side="left")[0], len(lengths) - 1)
  width = bounds[index]
  return {k: v[..., :width] if k in keys else v for k, v in batch.items()}


def read_dataset(files: Union[str, Sequence[str]], schema: Schema, batch_size: int,
                 is_training: bool, seed: int = 0,
                 transform: Optional[Callable[[dict], dict]] = None,
                 bucket_by_length: bool = False,
                 sequence_keys: Sequence[str] = SEQUENCE_KEYS) -> tf.data.Dataset:
  """Batches of features parsed with `schema`, renamed to model inputs, int64 as int32.

  Training repeats and shuffles deterministically for `seed` (files, then
  records), so the iterator's position can be checkpointed, and drops the
  last partial batch; evaluation keeps every record in file order.
  `transform` maps each parsed batch (e.g. reshapes) before prefetching.
  With `bucket_by_length`, each batch is then cut to the smallest of
  `bucket_lengths(S)` its longest example fits (`cut_to_bucket`): the same
  examples in the same order, less padding, a bounded number of shapes; `sequence_keys`
  are the features cut (those with one entry per token).
  """
  files = [files] if isinstance(files, str) else list(files)
  if len(files) == 1:
    ds = tf.data.TFRecordDataset(files[0])
    if is_training:
      ds = ds.repeat()
  else:
    ds = tf.data.Dataset.from_tensor_slices(files)
    if is_training:
      ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(4, len(files)),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  if is_training:
    ds = ds.shuffle(1000, seed=seed, reshuffle_each_iteration=True)
  ds = ds.batch(batch_size, drop_remainder=is_training)

  def parse(serialized):
    parsed = tf.io.parse_example(serialized, schema)
    batch = {MODEL_NAMES.get(k, k):
             tf.cast(v, tf.int32) if v.dtype == tf.int64 and k not in _INT64 else v
             for k, v in parsed.items()}
    batch = transform(batch) if transform else batch
    if bucket_by_length:
      width = batch["input_mask"].shape[-1]
      batch = cut_to_bucket(batch, bucket_lengths(width), sequence_keys)
    return batch

  ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(2)
  return ds.with_options(quick_to_close())


def any_size(element_spec):
  """A dataset's element spec with every dimension unknown (the rank kept): the input
  type of one trace that serves every batch size and bucket width."""
  return tf.nest.map_structure(
      lambda s: tf.TensorSpec([None] * s.shape.rank, s.dtype, s.name)
      if isinstance(s, tf.TensorSpec) else s, element_spec)


def quick_to_close() -> tf.data.Options:
  """tf.data options without its autotuning thread. That thread sleeps longer and longer
  while an iterator is idle (up to a minute), and destroying the iterator waits for the
  sleep to end: an iterator idle for 6 s took 4.2 s to destroy (0.00-0.02 s without
  autotuning), and a training iterator collected while another test ran stalled that
  test for two minutes (docs/testing.md, "Stalls"). The parallel map then uses one call
  per core, at over a thousand batches a second here, far above any training step."""
  options = tf.data.Options()
  options.autotune.enabled = False
  return options


def first_record(path: str) -> Optional[tf.train.Example]:
  """The first Example of a TFRecord file, or None if it holds none."""
  record = next(iter(tf.data.TFRecordDataset([path])), None)
  return None if record is None else tf.train.Example.FromString(record.numpy())
