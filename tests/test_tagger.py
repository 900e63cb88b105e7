"""The tagger export's graph against `albert_tf.data.ner`'s Python: the same windows, the
same word predicted in the same window position, the same entities in every scheme."""

import random

import numpy as np
import tensorflow as tf

from albert_tf.data import ner
from albert_tf.export import tagger
from albert_tf.text.preprocessing import word_spans


class _Ids:
  cls_id, sep_id, pad_id = 2, 3, 0


def _ragged(rows, dtype):
  flat = [x for row in rows for x in row]
  return tf.RaggedTensor.from_row_lengths(tf.constant(flat, dtype, shape=[len(flat)]),
                                          tf.constant([len(r) for r in rows], tf.int64))


def test_windows_and_the_window_each_word_is_predicted_in_are_ner_windows():
  """Random sentences of multi-piece words, short windows and strides (several windows a
  sentence, empty sentences, empty batches): the graph packs the windows `ner.windows`
  makes, and reads each word's tag where `ner.windows` labels it. The fake model's arg-max
  at (window k, position p) is k * S + p, so a wrong window or position shows."""
  rng = random.Random(0)
  for trial in range(40):
    length, stride = rng.randint(3, 12), rng.randint(1, 12)
    sentences = [[[rng.randint(5, 50) for _ in range(rng.randint(1, 3))]
                  for _ in range(rng.randint(0, 15))] for _ in range(rng.randint(0, 4))]
    windows = [list(ner.windows(s, words, list(range(len(words))), _Ids, length, stride))
               for s, words in enumerate(sentences)]
    packed = []

    def logits_fn(inputs):
      packed.append(inputs["input_word_ids"].numpy())
      count = tf.shape(inputs["input_word_ids"])[0]
      return tf.one_hot(tf.range(count)[:, None] * length + tf.range(length)[None],
                        tf.maximum(count * length, 1))

    pieces = _ragged([[p for w in words for p in w] for words in sentences], tf.int32)
    first = _ragged([list(np.cumsum([0] + [len(w) for w in words])[:-1]) for words in sentences],
                    tf.int64)
    got = tagger.predict_first_pieces(logits_fn, pieces, first, length, stride,
                                      _Ids.cls_id, _Ids.sep_id, _Ids.pad_id).to_list()
    expected, k = [], 0
    for s, sentence_windows in enumerate(windows):
      row = [None] * len(sentences[s])
      for window in sentence_windows:
        for position, w in enumerate(window.word_index):
          if w >= 0:
            row[w] = k * length + position
        k += 1
      expected.append(row)
    assert got == expected, (trial, length, stride)
    flat_windows = [w.input_ids for ws in windows for w in ws]
    if flat_windows:
      np.testing.assert_array_equal(packed[0], np.array(flat_windows))


def test_entities_are_ner_entities_in_every_scheme():
  """Random tag rows, well-formed or not (I- after O, E- of another type, B- B-): the graph's
  entities are `ner.entities`' for IOB2, IOB1 and BIOES."""
  rng = random.Random(1)
  labels = ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC"]
  rows = [[rng.randrange(len(labels)) for _ in range(rng.randint(0, 8))] for _ in range(400)]
  for scheme in ner.SCHEMES:
    kinds, first, last, types = tagger.entity_spans(_ragged(rows, tf.int32), labels, scheme)
    got = [[(types[k], a, b) for k, a, b in zip(*row)]
           for row in zip(kinds.to_list(), first.to_list(), last.to_list())]
    assert got == [ner.entities([labels[i] for i in row], scheme) for row in rows], scheme


def test_word_spans_and_character_offsets():
  """BasicTokenizer's word boundaries with their spans on the text as given; code point
  offsets such that Python's slicing gives each word back."""
  texts = ["Jordan, who  lives in Zürich.", "我爱北京 ok", ""]
  words, begin, end = word_spans(tf.constant(texts))
  chars, stops = [r.to_list() for r in tagger.char_offsets(tf.constant(texts), begin, end)]
  assert [[w.decode() for w in row] for row in words.to_list()] == [
      ["Jordan", ",", "who", "lives", "in", "Zürich", "."], ["我", "爱", "北", "京", "ok"], []]
  for text, row, a, b in zip(texts, words.to_list(), chars, stops):
    assert [text[i:j] for i, j in zip(a, b)] == [w.decode() for w in row]
  per_char, _, _ = word_spans(tf.constant(["北京 ok"]), per_character=True)
  assert [w.decode() for w in per_char.to_list()[0]] == ["北", "京", "o", "k"]
