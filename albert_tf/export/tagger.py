"""The end-to-end tagger SavedModel: raw sentences in, entities with character offsets out.

What run_ner.py's `--export_dir` writes. Everything `albert_tf.data.ner` does in
Python for a file of words happens in the graph for raw text:

1. words and their spans (`preprocessing.word_spans`: BasicTokenizer's boundaries,
   or every character for a character-tagged set);
2. each word's pieces, alone (a word without any gets [UNK]), as `ner.word_pieces`;
3. a sentence's pieces in windows of `seq_length`, `stride` pieces apart, as
   `ner.windows`; each word predicted in the window where its first piece has the
   most context (`squad.max_context_windows`: the first window on ties);
4. the model's arg-max tag at each word's first piece;
5. entities from the tags with `ner.entities`' rules for the run's scheme, and their
   character offsets in the given sentence.

`serving_default(sentences)` takes string [B] and returns, padded per sentence (""
or -1): `entity_types`, `entity_texts` [B, E] strings, `entity_starts`,
`entity_ends` [B, E] int32 (code points, end exclusive: Python's
`sentence[start:end]` is the entity's text), `num_entities` [B]; and `words`,
`tags` [B, W], `word_starts`, `word_ends` [B, W], `num_words` [B].
"""

import os
from typing import Dict, Sequence

import tensorflow as tf

from albert_tf.data import ner
from albert_tf.export.loading import TAGGER
from albert_tf.export.serving import save_serving
from albert_tf.export.tf_hub import atomic_export
from albert_tf.modeling.layers.dropout import random_generators
from albert_tf.text.preprocessing import AlbertTokenizer, pack_segments, word_spans
from albert_tf.text.tokenization import FullTokenizer

_PREFIXES = ("O", "B", "I", "E", "S")


def _flat_index(ragged: tf.RaggedTensor) -> tf.Tensor:
  """Each value's position within its row: [N] int64."""
  return tf.range(tf.shape(ragged.values, out_type=tf.int64)[0]) - tf.gather(
      ragged.row_splits, ragged.value_rowids())


def word_first_pieces(tokenizer: AlbertTokenizer, words: tf.RaggedTensor, unk_id: int):
  """Words [B, (W)] -> every sentence's pieces [B, (T)] int32, and the index of each
  word's first piece in its sentence's pieces [B, (W)] int64."""
  pieces = tokenizer(words.values)                                         # [N, (P)]
  empty = tf.cast(tf.equal(pieces.row_lengths(), 0), pieces.row_splits.dtype)   # [N]
  unk = tf.RaggedTensor.from_row_lengths(
      tf.fill([tf.reduce_sum(empty)], tf.constant(unk_id, pieces.dtype)), empty)
  pieces = tf.concat([pieces, unk], axis=1)                                 # [UNK] if none
  counts = pieces.row_lengths()                                             # [N]
  sentences = tf.RaggedTensor.from_row_splits(pieces, words.row_splits)     # [B, (W), (P)]
  # A word's first piece: the pieces before it in its sentence.
  before = tf.cumsum(counts, exclusive=True)                                # [N] in the batch
  first = before - tf.gather(before, tf.gather(words.row_splits, words.value_rowids()))
  return sentences.merge_dims(1, 2), words.with_values(first)


def predict_first_pieces(logits_fn, pieces: tf.RaggedTensor, first: tf.RaggedTensor,
                         seq_length: int, stride: int, cls_id: int, sep_id: int,
                         pad_id: int) -> tf.RaggedTensor:
  """The arg-max label of each word's first piece [B, (W)] int32, predicted in windows as
  `ner.windows` cuts them: `logits_fn(inputs)` -> [windows, seq_length, C]."""
  room = seq_length - 2
  step = min(stride, room)
  n = tf.cast(pieces.row_lengths(), tf.int64)                               # [B]
  count = 1 + tf.maximum(tf.zeros_like(n), (n - room + step - 1) // step)   # windows [B]
  window = tf.ragged.range(count)                                           # [B, (K)]
  k, sentence = window.values, window.value_rowids()                        # [K'], [K']
  start = k * step                                                          # [K']
  length = tf.clip_by_value(tf.gather(n, sentence) - start, 0, room)        # [K']
  begin = tf.gather(pieces.row_splits, sentence) + start                    # [K'] in values
  taken = tf.ragged.range(begin, begin + length)                            # [K', (L)]
  inputs = pack_segments([tf.gather(pieces.values, taken)], seq_length, cls_id, sep_id,
                         pad_id)
  predicted = tf.argmax(logits_fn(inputs), -1, output_type=tf.int32)        # [K', S]
  # Each piece's window of most context: the largest min(left, right) + 0.01 * length
  # (float64, as Python computes it), the first window on ties.
  j = _flat_index(taken)                                                    # [M]
  span = tf.gather(length, taken.value_rowids())
  score = tf.cast(tf.minimum(j, span - 1 - j), tf.float64) + 0.01 * tf.cast(span, tf.float64)
  total = tf.shape(pieces.values, out_type=tf.int64)[0]
  best = tf.math.unsorted_segment_max(score, taken.values, total)           # [T']
  windows = tf.cast(taken.value_rowids(), tf.int64)
  winner = tf.math.unsorted_segment_min(
      tf.where(score == tf.gather(best, taken.values), windows, tf.int64.max),
      taken.values, total)                                                  # [T']
  at = tf.gather(pieces.row_splits, first.value_rowids()) + first.values    # [N] in values
  w = tf.gather(winner, at)                                                 # [N]
  position = at - tf.gather(begin, w) + 1                                   # after [CLS]
  return first.with_values(tf.gather_nd(predicted, tf.stack([w, position], -1)))


def entity_spans(tag_ids: tf.RaggedTensor, labels: Sequence[str], scheme: str):
  """`ner.entities` on every row of tag ids [B, (W)]: each entity's type id (the index of
  its type in `types`), first and last word [B, (E)] int64, and `types`."""
  if scheme not in ner.SCHEMES:
    raise ValueError(f"unknown tag scheme {scheme!r}; one of {', '.join(ner.SCHEMES)}")
  split = [ner.split_tag(t) for t in labels]
  types = sorted({kind for _, kind in split if kind})
  prefix = tf.constant([_PREFIXES.index(p) if p else 0 for p, _ in split], tf.int32)
  kind = tf.constant([types.index(k) if k else -1 for _, k in split], tf.int32)
  ids = tag_ids.values
  p, t = tf.gather(prefix, ids), tf.gather(kind, ids)                       # [N]
  j = _flat_index(tag_ids)
  has_next = j + 1 < tf.gather(tag_ids.row_lengths(), tag_ids.value_rowids())
  closes = (p == 3) | (p == 4) if scheme == "BIOES" else tf.zeros_like(p, tf.bool)
  # An entity stays open after a word unless the word is O (or, in BIOES, E- or S-).
  open_after = (p != 0) & ~closes
  previous_open = tf.roll(open_after, 1, 0) & (j > 0)     # (rolled: empty batches too)
  continues = previous_open & (t == tf.roll(t, 1, 0)) & ((p == 2) | (p == 3))
  next_continues = tf.roll(continues, -1, 0) & has_next
  starts = (p != 0) & ~continues
  ends = (p != 0) & (closes | ~next_continues)
  first = tag_ids.with_values(j)
  return (tf.ragged.boolean_mask(tag_ids.with_values(tf.cast(t, tf.int64)),
                                 tag_ids.with_values(starts)),
          tf.ragged.boolean_mask(first, tag_ids.with_values(starts)),
          tf.ragged.boolean_mask(first, tag_ids.with_values(ends)), types)


def char_offsets(sentences: tf.Tensor, *byte_offsets: tf.RaggedTensor):
  """Byte offsets [B, (X)] into `sentences` [B] -> code point offsets, for each argument
  (the sentences decoded once)."""
  _, starts = tf.strings.unicode_decode_with_offsets(sentences, "UTF-8", errors="replace")
  shift = tf.constant(2 ** 32, tf.int64)
  keys = tf.cast(starts.value_rowids(), tf.int64) * shift + starts.values    # increasing
  rows = [tf.cast(r.value_rowids(), tf.int64) for r in byte_offsets]
  queries = tf.concat([row * shift + r.values for row, r in zip(rows, byte_offsets)], 0)
  index = tf.searchsorted(keys, queries, side="left", out_type=tf.int64)
  index -= tf.gather(starts.row_splits, tf.concat(rows, 0))
  parts = tf.split(index, [tf.shape(r.values, out_type=tf.int64)[0] for r in byte_offsets])
  return [r.with_values(part) for r, part in zip(byte_offsets, parts)]


class _ServingTagger(tf.Module):
  """Raw sentences -> words -> windows -> the token classifier -> tags -> entities."""

  def __init__(self, model, tokenizer: AlbertTokenizer, seq_length: int, stride: int,
               labels: Sequence[str], scheme: str, per_character: bool, unk_id: int):
    super().__init__(name="albert_tagger")
    # Saved: what `tag` reads, not the Keras model (see export._ServingClassifier).
    self.model_variables = list(model.variables)
    self.random_generators = random_generators(model)
    self.text_tokenizers = tokenizer.text_tokenizers
    # (Closures, so that the Keras model and tokenizer are not saved themselves.)
    self._model = lambda inputs: model(inputs, training=False)
    self._pieces = lambda words: word_first_pieces(tokenizer, words, unk_id)
    self._special = (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    self._seq_length, self._stride = seq_length, stride
    self._labels, self._scheme, self._per_character = tuple(labels), scheme, per_character

  def tag(self, sentences: tf.Tensor) -> Dict[str, tf.Tensor]:
    words, begin, end = word_spans(sentences, self._per_character)          # [B, (W)]
    pieces, first = self._pieces(words)                                     # [B, (T)], [B, (W)]
    tag_ids = predict_first_pieces(self._model, pieces, first, self._seq_length, self._stride,
                                   *self._special)                          # [B, (W)]
    kinds, first_word, last_word, types = entity_spans(tag_ids, self._labels, self._scheme)
    type_names = tf.constant(types or [""])
    rows = tf.cast(kinds.value_rowids(), tf.int64)
    byte_start = tf.gather(begin.values, tf.gather(begin.row_splits, rows) + first_word.values)
    byte_end = tf.gather(end.values, tf.gather(end.row_splits, rows) + last_word.values)
    texts = tf.strings.substr(tf.gather(sentences, rows), byte_start, byte_end - byte_start)
    starts, ends, word_begin, word_end = char_offsets(
        sentences, kinds.with_values(byte_start), kinds.with_values(byte_end), begin, end)
    dense = lambda r, fill: r.to_tensor(fill)
    return dict(
        entity_types=dense(kinds.with_values(tf.gather(type_names, kinds.values)), ""),
        entity_texts=dense(kinds.with_values(texts), ""),
        entity_starts=tf.cast(dense(starts, -1), tf.int32),
        entity_ends=tf.cast(dense(ends, -1), tf.int32),
        num_entities=tf.cast(kinds.row_lengths(), tf.int32),
        words=dense(words, ""),
        tags=dense(tag_ids.with_values(tf.gather(tf.constant(self._labels), tag_ids.values)), ""),
        word_starts=tf.cast(dense(word_begin, -1), tf.int32),
        word_ends=tf.cast(dense(word_end, -1), tf.int32),
        num_words=tf.cast(words.row_lengths(), tf.int32))


def tagger_module(model, tokenizer: FullTokenizer, seq_length: int, stride: int,
                  labels: Sequence[str], scheme: str, per_character: bool) -> tf.Module:
  """The module whose `__call__` attribute, a tf.function of sentences (string [B]), gives
  what the exported tagger's signature gives (the module docstring): the SavedModel's root,
  and `albert_tf.Predictor`'s tagger."""
  root = _ServingTagger(model, AlbertTokenizer(tokenizer.spm_model_file, tokenizer.do_lower_case,
                                               tokenizer.vocab_file),
                        seq_length, stride, labels, scheme, per_character, tokenizer.unk_id)
  root.__call__ = tf.function(root.tag, autograph=False,
                              input_signature=[tf.TensorSpec([None], tf.string, "sentences")])
  return root


def export_tagger(model, export_path: str, tokenizer: FullTokenizer, seq_length: int,
                  stride: int, labels: Sequence[str], scheme: str, per_character: bool,
                  overwrite: bool = False, record: dict = None) -> str:
  """Writes the end-to-end tagger SavedModel of an `AlbertTokenClassifier` (see the module
  docstring); `record` is written beside saved_model.pb as albert_tf_export.json.
  Loading it needs `import tensorflow_text`."""
  export_path = os.path.abspath(export_path)
  with atomic_export(export_path, overwrite) as (saved, staging):
    root = tagger_module(model, tokenizer, seq_length, stride, labels, scheme, per_character)
    save_serving(root, saved, staging, tokenizer,
                 dict(kind=TAGGER, labels=list(labels), tag_scheme=scheme,
                      per_character=per_character, **(record or {})))
  return export_path
