"""Length bucketing: batches lose padding and nothing else."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, AlbertEncoder
from albert_tf.data import pretraining, records

from common import TINY, assert_close


def test_bucket_lengths_are_few_and_end_at_the_sequence_length():
  assert records.bucket_lengths(512) == [32, 64, 96, 128, 192, 256, 320, 384, 448, 512]
  assert records.bucket_lengths(384)[-3:] == [256, 320, 384]
  assert records.bucket_lengths(128) == [32, 64, 96, 128]
  assert records.bucket_lengths(100) == [32, 64, 96, 100]
  assert records.bucket_lengths(20) == [20]


def test_cut_to_bucket_keeps_every_token_and_the_other_features():
  mask = np.zeros([2, 4, 64], np.int32)
  mask[0, 2, :33] = 1   # the longest choice of the batch: 33 tokens fit in 48
  mask[1, 0, :5] = 1
  batch = dict(input_mask=tf.constant(mask), input_word_ids=tf.constant(mask * 7),
               label_ids=tf.constant([1, 2]), masked_lm_positions=tf.constant([[40], [3]]))
  cut = records.cut_to_bucket(batch, [32, 48, 64])
  assert cut["input_mask"].shape == (2, 4, 48) and cut["input_word_ids"].shape == (2, 4, 48)
  np.testing.assert_array_equal(cut["input_mask"], mask[..., :48])
  np.testing.assert_array_equal(cut["label_ids"], [1, 2])
  np.testing.assert_array_equal(cut["masked_lm_positions"], [[40], [3]])
  full = dict(input_mask=tf.ones([1, 64], tf.int32))
  assert records.cut_to_bucket(full, [32, 64])["input_mask"].shape == (1, 64)
  empty = dict(input_mask=tf.zeros([1, 64], tf.int32))
  assert records.cut_to_bucket(empty, [32, 64])["input_mask"].shape == (1, 32)


@pytest.fixture(scope="module")
def short_records(tmp_path_factory):
  """Pretraining-format records of 128 positions whose lengths are drawn like MRPC pairs
  (scaled), with masked positions inside each example."""
  rng = np.random.default_rng(0)
  path = str(tmp_path_factory.mktemp("bucketing") / "short.tf_record")
  examples = []
  for _ in range(40):
    n = int(np.clip(rng.lognormal(np.log(30), 0.5), 4, 128))
    ids = rng.integers(5, TINY["vocab_size"], n).tolist()
    positions = sorted(rng.choice(np.arange(1, n), size=min(3, n - 1), replace=False).tolist())
    examples.append(dict(
        input_ids=ids + [0] * (128 - n), input_mask=[1] * n + [0] * (128 - n),
        segment_ids=[0] * (n // 2) + [1] * (n - n // 2) + [0] * (128 - n),
        token_boundary=[1] * 128,
        masked_lm_positions=positions + [0] * (4 - len(positions)),
        masked_lm_ids=[ids[p] for p in positions] + [0] * (4 - len(positions)),
        masked_lm_weights=[1.0] * len(positions) + [0.0] * (4 - len(positions)),
        next_sentence_labels=[int(rng.integers(2))]))
  records.write_records(examples, path)
  return path


def test_bucketed_batches_give_the_fixed_padding_outputs_with_few_traces(short_records):
  cfg = dict(TINY, max_position_embeddings=128)
  encoder = AlbertEncoder(AlbertConfig.from_dict(cfg))
  run = tf.function(lambda b: encoder({k: b[k] for k in ("input_word_ids", "input_mask",
                                                         "input_type_ids")})["sequence_output"])
  fixed = list(pretraining.dataset([short_records], 4, 128, 4, is_training=False))
  cut = list(pretraining.dataset([short_records], 4, 128, 4, is_training=False,
                                 bucket_by_length=True))
  widths = [int(b["input_word_ids"].shape[1]) for b in cut]
  assert set(widths) <= set(records.bucket_lengths(128)) and len(set(widths)) >= 2, widths
  assert sum(widths) < 0.7 * 128 * len(widths)  # the point: much less padding
  outputs_fixed = [run(f).numpy() for f in fixed]
  traced = run.experimental_get_tracing_count()  # variables made on the first call: 2 traces
  for f, out_fixed, c in zip(fixed, outputs_fixed, cut):
    lengths = f["input_mask"].numpy().sum(-1)
    assert int(c["input_word_ids"].shape[1]) >= lengths.max()
    for key in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
                "next_sentence_labels"):
      np.testing.assert_array_equal(f[key], c[key])
    out_cut = run(c).numpy()
    for i, n in enumerate(lengths):  # every real token's output; padding is masked out
      assert_close(out_cut[i, :n], out_fixed[i, :n], 1e-5)
  assert run.experimental_get_tracing_count() - traced == len(set(widths))  # one per length


@pytest.mark.parametrize("is_training", [True, False])
def test_input_pipelines_have_no_autotuning_thread_and_close_at_once(short_records, is_training):
  """Every task's input pipeline (all go through records.read_dataset) runs without tf.data's
  autotuning thread, whose ever longer sleeps while an iterator is idle made destroying the
  iterator wait for seconds, up to a minute (docs/testing.md, "Stalls"); it still yields
  every batch."""
  data = pretraining.dataset([short_records], 4, 128, 4, is_training=is_training,
                             bucket_by_length=True)
  assert data.options().autotune.enabled is False
  iterator = iter(data)
  batches = [next(iterator) for _ in range(3)]
  assert all(int(b["input_word_ids"].shape[0]) == 4 for b in batches)
