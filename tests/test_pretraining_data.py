"""create_pretraining_data: statistics of the masking and the sentence-order pairs, format, files."""

import collections
import random

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.text import packing, tokenization
from albert_tf.commands import create_pretraining_data as creation
from albert_tf.files import expand_files
from albert_tf.data import pretraining as pd
from albert_tf.data import sample_corpus


@pytest.fixture(scope="module")
def tokenizer(spm_model):
  return tokenization.FullTokenizer(spm_model_file=spm_model)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
  return sample_corpus.write_pydoc_corpus(str(tmp_path_factory.mktemp("corpus") / "pydoc.txt"))


def _instances(tokenizer, corpus, opts, seed=0):
  documents = pd.read_documents(corpus, tokenizer)
  rng, nprng = random.Random(seed), np.random.default_rng(seed)
  out = []
  for i in range(len(documents)):
    out.extend(pd.create_instances_from_document(documents, i, opts, tokenizer,
                                                 tokenizer.vocab_size, rng, nprng))
  return documents, out


def test_ngram_lengths_follow_one_over_n():
  for favor_shorter, expected in ((True, [6 / 11, 3 / 11, 2 / 11]), (False, [2 / 11, 3 / 11, 6 / 11])):
    opts = pd.DataOptions(favor_shorter_ngram=favor_shorter)
    np.testing.assert_allclose(pd.ngram_probabilities(opts), expected)
    # Three one-piece words from the start: the span length is n.
    words = [[0], [1], [2]]
    nprng = np.random.default_rng(0)
    lengths = collections.Counter(len(pd._choose_span(words, 0, pd.ngram_cdf(opts), 10,
                                                      set(), nprng)) for _ in range(20000))
    freq = np.array([lengths[n] for n in (1, 2, 3)]) / 20000
    np.testing.assert_allclose(freq, expected, atol=0.015)


def test_masking_statistics(tokenizer, corpus):
  opts = pd.DataOptions(max_seq_length=128, max_predictions_per_seq=40, masked_lm_prob=0.15,
                        short_seq_prob=0.0)
  _, instances = _instances(tokenizer, corpus, opts)
  assert len(instances) > 300
  tokens = sum(len(x.tokens) for x in instances)
  masked = sum(len(x.masked_lm_positions) for x in instances)
  assert abs(masked / tokens - 0.15) < 0.01, masked / tokens
  replaced = collections.Counter()
  for x in instances:
    assert x.masked_lm_positions == sorted(set(x.masked_lm_positions))
    assert len(x.masked_lm_positions) <= max(1, round(len(x.tokens) * 0.15))
    for pos, label in zip(x.masked_lm_positions, x.masked_lm_labels):
      assert label not in ("[CLS]", "[SEP]")  # (a random replacement may be any piece)
      out = x.tokens[pos]
      replaced["mask" if out == "[MASK]" else "same" if out == label else "random"] += 1
    # Whole words: a masked piece inside a word has its word's previous piece masked too
    # (pieces right after [CLS]/[SEP], cut by truncation, start candidates as in the original).
    for pos in x.masked_lm_positions:
      if x.token_boundary[pos] == 0 and x.tokens[pos - 1] not in ("[CLS]", "[SEP]"):
        assert pos - 1 in x.masked_lm_positions, (pos, x.tokens)
  total = sum(replaced.values())
  assert abs(replaced["mask"] / total - 0.8) < 0.02
  assert abs(replaced["same"] / total - 0.1) < 0.02    # (random pieces rarely equal the original)
  assert abs(replaced["random"] / total - 0.1) < 0.02


def test_sentence_order_pairs(tokenizer, corpus):
  opts = pd.DataOptions(max_seq_length=96, max_predictions_per_seq=15, masked_lm_prob=0.0,
                        short_seq_prob=0.0)
  documents, instances = _instances(tokenizer, corpus, opts)
  texts = [" " + " ".join(" ".join(s) for s in doc) + " " for doc in documents]

  def order(first, second):
    """'in order' / 'reversed' if both occur in one document (truncation may cut their ends)."""
    f, g = " " + " ".join(first) + " ", " " + " ".join(second) + " "
    found = set()
    for t in texts:
      if f in t and g in t:  # texts can repeat: compare the extreme occurrences
        if t.find(f) < t.rfind(g):
          found.add("in order")
        if t.rfind(f) > t.find(g):
          found.add("reversed")
    return found

  labels = [x.is_random_next for x in instances]
  assert abs(np.mean(labels) - 0.5) < 0.06, np.mean(labels)
  checked = collections.Counter()
  for x in instances:
    sep = x.tokens.index("[SEP]")
    a, b = x.tokens[1:sep], x.tokens[sep + 1:-1]
    assert x.segment_ids == [0] * (sep + 1) + [1] * (len(b) + 1)
    assert len(x.tokens) <= opts.max_seq_length
    found = order(a, b)
    if not x.is_random_next:
      assert "in order" in found, (a, b)  # a positive: A then B, from one document
      checked["positive"] += 1
    elif found == {"reversed"}:
      checked["swapped"] += 1             # a negative whose B really precedes A
    else:
      checked["other"] += 1               # one-sentence chunks take B from another document
  assert checked["positive"] > 100 and checked["swapped"] > 100
  assert checked["other"] < 0.3 * checked["swapped"]


def test_truncation_keeps_both_segments():
  rng = random.Random(0)
  a, b = list("abcdefghij"), list("xyz")
  packing.truncate_seq_pair(a, b, 8, rng)
  assert len(a) + len(b) == 8 and b == list("xyz") and "".join(a) in "abcdefghij"
  # Without an rng, the original fine-tuning rule: from the end of the longer (ties: b).
  a, b = list("abcde"), list("wxyz")
  packing.truncate_seq_pair(a, b, 6)
  assert a == list("abc") and b == list("wxy")


def test_files_format_determinism_and_errors(tmp_path, spm_model, corpus):
  opts = pd.DataOptions(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2)
  inputs = [corpus, str(tmp_path / "small.txt")]
  with open(inputs[1], "w") as f:
    f.write("First sentence of one.\nSecond sentence, 1,000 words.\n\nAnother document here.\nIt ends.\n")
  outs = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
  stats = pd.write_pretraining_data(inputs, outs, spm_model, opts, progress=False)
  records = [r.numpy() for r in tf.data.TFRecordDataset(outs)]
  assert len(records) == stats["instances"] > 0
  example = tf.train.Example.FromString(records[0]).features.feature
  assert sorted(example) == sorted(pd.FEATURE_NAMES)
  lengths = {k: len(v.int64_list.value) or len(v.float_list.value) for k, v in example.items()}
  assert lengths == dict(input_ids=64, input_mask=64, segment_ids=64, token_boundary=64,
                         masked_lm_positions=10, masked_lm_ids=10, masked_lm_weights=10,
                         next_sentence_labels=1)
  assert example["masked_lm_weights"].float_list.value[0] == 1.0
  parsed = tf.io.parse_single_example(records[0], pd.feature_spec(64, 10))
  assert parsed["input_ids"][0] == 2  # [CLS]

  with pytest.raises(FileExistsError, match="a.tfrecord"):
    pd.write_pretraining_data(inputs, outs, spm_model, opts, progress=False)
  again = [str(tmp_path / "c.tfrecord"), str(tmp_path / "d.tfrecord")]
  pd.write_pretraining_data(inputs, again, spm_model, opts, num_workers=2, progress=False)
  assert [r.numpy() for r in tf.data.TFRecordDataset(again)] == records  # same seed, 2 workers
  other = [str(tmp_path / "e.tfrecord")]
  pd.write_pretraining_data(inputs, other, spm_model, pd.DataOptions(
      max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2, random_seed=7),
      progress=False)
  assert sorted(r.numpy() for r in tf.data.TFRecordDataset(other)) != sorted(records)

  with pytest.raises(FileNotFoundError, match="no file matches .*missing"):
    expand_files(f"{corpus},{tmp_path}/missing*.txt")
  with pytest.raises(ValueError, match="--masked_lm_prob"):
    pd.DataOptions(masked_lm_prob=1.5)


def test_a_wordpiece_vocabulary_writes_pretraining_data(tmp_path):
  """create_pretraining_data.py --vocab_file: WordPiece ids, [CLS]/[SEP]/[MASK] of the
  vocabulary, and (the original's whole-word rule) every CJK character a word of its own."""
  from common import write_wordpiece_vocab  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(0)
  chars = [chr(c) for c in range(0x4E00, 0x4E40)]
  lines = ["".join(rng.choice(chars, rng.integers(8, 20))) + " module data" for _ in range(60)]
  text = tmp_path / "zh.txt"
  text.write_text("\n".join(lines[:30]) + "\n\n" + "\n".join(lines[30:]) + "\n", encoding="utf-8")
  vocab_file = write_wordpiece_vocab(tmp_path / "vocab_chinese.txt", lines)
  tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file)
  out = tmp_path / "zh.tfrecord"
  opts = creation.CreationOptions(input_file=str(text), output_file=str(out), vocab_file=vocab_file,
                            max_seq_length=48, max_predictions_per_seq=8, dupe_factor=2,
                            progress=False)
  stats = creation.create(opts)
  assert stats["instances"] > 0
  words = 0
  for record in tf.data.TFRecordDataset([str(out)]):
    example = tf.io.parse_single_example(record, pd.feature_spec(48, 8))
    ids = [int(i) for i, m in zip(example["input_ids"], example["input_mask"]) if m]
    assert ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id
    masked = {int(p) for p, w in zip(example["masked_lm_positions"],
                                     example["masked_lm_weights"]) if w}
    tokens = [t for i, t in enumerate(tokenizer.convert_ids_to_tokens(ids)) if i not in masked]
    boundary = [b for i, b in enumerate(example["token_boundary"].numpy()) if i not in masked]
    cjk = [b for t, b in zip(tokens, boundary) if "\u4e00" <= t <= "\u9fff"]
    assert all(b == 1 for b in cjk)
    words += len(cjk)
    assert tokenizer.mask_id in ids or not int(example["masked_lm_weights"].numpy().sum())
  assert words > 100
  with pytest.raises(ValueError, match="exactly one of --spm_model_file .* and --vocab_file"):
    creation.create(creation.CreationOptions(input_file=str(text), output_file=str(tmp_path / "x"),
                                 progress=False))
