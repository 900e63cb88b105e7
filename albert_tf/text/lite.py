"""ALBERT tokenization and packing in ops that TFLite (LiteRT) can run, for one example.

`AlbertTokenizer` (preprocessing.py) matches `FullTokenizer` with regular
expressions and Unicode ops that TFLite has no kernels for. Here the same ids
come from tensorflow-text's TFLite-convertible tokenizers:

* SentencePiece: ALBERT's normalization compiled into the model
  (`albert_tf.text.standalone.albert_sentencepiece_model`), so
  `FastSentencepieceTokenizer` applies it and the model's own in one pass over the raw
  text; the digit-comma rule is a table from the ids of the pieces it splits to the ids
  it gives.
* Packing `[CLS] A [SEP] (B [SEP])` with the original truncation is plain
  slicing and concatenation at batch 1.

Known differences from `FullTokenizer` (tests name each): a capital sigma
that ends a word lower-cases to σ here and to ς in Python (`str.lower` looks
at the neighbouring letters; a character map cannot), and the text must be
valid UTF-8.
"""

from typing import Dict, Sequence

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.text import tokenization
from albert_tf.text.standalone import albert_sentencepiece_model, digit_comma_table


class LiteTokenizer(tf.Module):
  """A string [1] -> int32 ids [T], FullTokenizer's, in TFLite-convertible ops.

  Args:
    tokenizer: the FullTokenizer to reproduce (SentencePiece).
  """

  def __init__(self, tokenizer: tokenization.FullTokenizer, name: str = "lite_tokenizer"):
    super().__init__(name=name)
    if not tokenizer.spm_model_file:
      raise ValueError("LiteTokenizer needs a SentencePiece model (spm_model_file)")
    with open(tokenizer.spm_model_file, "rb") as f:
      model = albert_sentencepiece_model(f.read(), tokenizer.do_lower_case)
    self._sp = tf_text.FastSentencepieceTokenizer(model)
    keys, values = digit_comma_table(tokenizer)
    self._num_split = len(keys)
    if keys:
      width = max(len(v) for v in values)
      self._split_ids = tf.constant(keys, tf.int32)                               # [M]
      self._split_into = tf.constant([v + [0] * (width - len(v)) for v in values],
                                     tf.int32)                                    # [M, K]
      self._split_lengths = tf.constant([len(v) for v in values], tf.int32)      # [M]

  def __call__(self, text: tf.Tensor) -> tf.Tensor:
    ids = tf.cast(self._sp.tokenize(text).flat_values, tf.int32)                 # [T]
    return self._split_digit_commas(ids) if self._num_split else ids

  def _split_digit_commas(self, ids: tf.Tensor) -> tf.Tensor:
    """[T] ids -> [T'] with each split piece replaced by its pieces and a comma."""
    hits = tf.equal(ids[:, None], self._split_ids[None, :])                     # [T, M]
    found = tf.reduce_any(hits, axis=1)                                          # [T]
    row = tf.argmax(tf.cast(hits, tf.int32), axis=1, output_type=tf.int32)       # [T]
    width = self._split_into.shape[1]
    own = tf.pad(ids[:, None], [[0, 0], [0, width - 1]])                         # [T, K]
    into = tf.where(found[:, None], tf.gather(self._split_into, row), own)       # [T, K]
    lengths = tf.where(found, tf.gather(self._split_lengths, row), 1)            # [T]
    keep = tf.range(width)[None, :] < lengths[:, None]                           # [T, K]
    return tf.gather(tf.reshape(into, [-1]), tf.where(tf.reshape(keep, [-1]))[:, 0])


def pack_one(segments: Sequence[tf.Tensor], seq_length: int, cls_id: int, sep_id: int,
             pad_id: int = 0) -> Dict[str, tf.Tensor]:
  """`[CLS] A [SEP] (B [SEP])` of one example's id segments [T] -> int32 [1, seq_length].

  Truncation as the original `_truncate_seq_pair`: drop from the end of the
  longer segment, the second one on ties (the closed form of `pack_segments`).
  """
  if len(segments) == 1:
    kept = [segments[0][:seq_length - 2]]
  else:
    a, b = segments
    budget = seq_length - 3
    la, lb = tf.size(a), tf.size(b)
    over = la + lb > budget
    keep_a = tf.where(over, tf.minimum(la, tf.maximum(budget - lb, (budget + 1) // 2)), la)
    keep_b = tf.where(over, budget - keep_a, lb)
    kept = [a[:keep_a], b[:keep_b]]
  cls, sep = tf.constant([cls_id], tf.int32), tf.constant([sep_id], tf.int32)
  pieces, types = [cls], [tf.zeros([1], tf.int32)]
  for index, segment in enumerate(kept):
    pieces += [segment, sep]
    types.append(tf.fill([tf.size(segment) + 1], index))
  word_ids, type_ids = tf.concat(pieces, 0), tf.concat(types, 0)                 # [n]
  padding = [[0, seq_length - tf.size(word_ids)]]
  mask = tf.pad(tf.ones_like(word_ids), padding)
  word_ids = tf.pad(word_ids, padding, constant_values=pad_id)
  type_ids = tf.pad(type_ids, padding)
  return {k: tf.reshape(v, [1, seq_length]) for k, v in
          dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids).items()}
