"""What the benchmarks share: a vocabulary trained here, a preset config, the mean
throughput of a run's logged steps, and an ALBERT-base-shaped classifier run."""

import csv
import os
import tempfile

from absl import flags

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from albert_tf import AlbertConfig  # pylint: disable=g-import-not-at-top,wrong-import-position
from albert_tf.data import sample_corpus  # pylint: disable=g-import-not-at-top,wrong-import-position
from albert_tf.text import vocab  # pylint: disable=g-import-not-at-top,wrong-import-position

VOCAB_SIZE = 2000  # only the embedding gather differs from the released 30k vocabulary


def pydoc_vocabulary(vocab_size: int = VOCAB_SIZE, spm_model_file=None,
                     score_step=vocab.SCORE_STEP) -> str:
  """`spm_model_file`, or a SentencePiece model of `vocab_size` trained on the pydoc topics
  (`score_step`: create_vocab.py's rounding of the scores; None, as SentencePiece leaves
  them)."""
  if spm_model_file:
    return spm_model_file
  tmp = tempfile.mkdtemp(prefix="vocab_")
  corpus = sample_corpus.write_pydoc_corpus(os.path.join(tmp, "pydoc.txt"))
  return vocab.train_vocab(corpus, os.path.join(tmp, "pydoc"), vocab_size=vocab_size,
                           score_step=score_step)


def preset_config(preset: str) -> AlbertConfig:
  """"small" (H=128, 4 layers), "tiny" (H=32, 2 layers: a check that a benchmark runs, in
  the tests), or any AlbertConfig preset ("base", "xxlarge_v2", ...)."""
  if preset == "tiny":
    return AlbertConfig(embedding_size=16, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64)
  if preset == "small":
    return AlbertConfig(embedding_size=64, hidden_size=128, num_hidden_layers=4,
                        num_attention_heads=4, intermediate_size=512)
  return AlbertConfig.from_preset(preset)


def plain_step(encoder, mode: str, jit_compile=False, pooled=None):
  """A plain user step, nothing of this project's loop: a tf.function over `encoder`
  + Dense(2) with Keras Adam ("train") or the forward pass ("infer"); (x, y) -> tensor.
  `pooled(x, training)` gives the pooled output (default: an albert_tf encoder's)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras as keras  # pylint: disable=g-import-not-at-top
  pooled = pooled or (lambda x, training: encoder(x, training=training)["pooled_output"])
  head = keras.layers.Dense(2, dtype="float32")
  optimizer = keras.optimizers.Adam(1e-5)
  loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

  @tf.function(jit_compile=jit_compile)
  def train(x, y):
    with tf.GradientTape() as tape:
      loss = loss_fn(y, head(pooled(x, True)))
    variables = encoder.trainable_variables + head.trainable_variables
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss

  @tf.function(jit_compile=jit_compile)
  def infer(x, y):
    del y
    return head(pooled(x, False))

  return train if mode == "train" else infer


def workspace(prefix: str, preset: str):
  """(directory, SentencePiece model, albert_config.json) for a benchmark: ALBERT-base
  ("base") or another `preset_config` ("small", "tiny"), with a pydoc vocabulary."""
  tmp = tempfile.mkdtemp(prefix=prefix)
  corpus = sample_corpus.write_pydoc_corpus(os.path.join(tmp, "pydoc.txt"))
  spm = vocab.train_vocab(corpus, os.path.join(tmp, "pydoc"), vocab_size=VOCAB_SIZE)
  config = preset_config(preset)
  config_file = os.path.join(tmp, "albert_config.json")
  AlbertConfig.from_dict(dict(config.to_dict(), vocab_size=VOCAB_SIZE)).to_json_file(config_file)
  return tmp, spm, config_file


def mean_throughput(output_dir: str, warmup_steps: int) -> float:
  """Mean examples_per_second of train_log.csv after the first `warmup_steps` rows."""
  with open(os.path.join(output_dir, "train_log.csv")) as f:
    rows = list(csv.DictReader(f))[warmup_steps:]
  return sum(float(r["examples_per_second"]) for r in rows) / len(rows)


def print_ratio(results: dict, dtypes) -> None:
  """The second dtype's throughput over the first's, when two were measured."""
  if len(results) == 2:
    a, b = results.values()
    print(f"  ratio {dtypes[1]}/{dtypes[0]}: {b / a:.2f}")


def define_training_flags(seq_length: int, batch_size: int, steps: int,
                          batch_help: str = "Training batch size.") -> None:
  """The flags of a fine-tuning throughput benchmark."""
  flags.DEFINE_enum("preset", "base", ["base", "small"], "base: ALBERT-base; small: H=128, "
                    "4 layers.")
  flags.DEFINE_integer("seq_length", seq_length, "max_seq_length.")
  flags.DEFINE_integer("batch_size", batch_size, batch_help)
  flags.DEFINE_integer("steps", steps, "Training steps per configuration.")
  flags.DEFINE_integer("warmup_steps", 2, "Steps left out of the measurement.")
  flags.DEFINE_list("dtypes", ["float32", "bfloat16"], "Compute dtypes to compare.")
  flags.DEFINE_bool("jit_compile", False, "Compile the training step with XLA.")


def classifier_run(work_dir: str, seq_length: int) -> tuple:
  """A run directory holding an ALBERT-base-shaped MRPC classifier, and MRPC-format data."""
  from albert_tf import AlbertConfig, runs  # pylint: disable=g-import-not-at-top
  from albert_tf.data import sample_corpus  # pylint: disable=g-import-not-at-top
  from albert_tf.modeling.encoder import AlbertEncoder  # pylint: disable=g-import-not-at-top
  from albert_tf.modeling.models import AlbertClassifier  # pylint: disable=g-import-not-at-top
  from albert_tf.text import vocab  # pylint: disable=g-import-not-at-top
  corpus = sample_corpus.write_pydoc_corpus(os.path.join(work_dir, "pydoc.txt"))
  spm = vocab.train_vocab(corpus, os.path.join(work_dir, "pydoc"), vocab_size=2000)
  config = AlbertConfig.from_preset("base")
  pad_vocabulary(spm, config.vocab_size)
  run_dir = runs.write_run(
      os.path.join(work_dir, "run"),
      dict(task="MRPC", model=config.to_dict(), hub=None, spm_model_file=spm,
           do_lower_case=True, max_seq_length=seq_length),
      AlbertClassifier(AlbertEncoder(config), 2))
  data_dir = os.path.join(work_dir, "MRPC")
  sample_corpus.write_paraphrase_task(data_dir, num_train=300, num_dev=100, num_test=10)
  return run_dir, data_dir


def pad_vocabulary(spm_model_file: str, size: int) -> None:
  """Appends pieces no text here spells (fast SentencePiece refuses the UNUSED type) up
  to `size` ids."""
  from sentencepiece import sentencepiece_model_pb2 as model_pb2  # pylint: disable=g-import-not-at-top
  proto = model_pb2.ModelProto()
  with open(spm_model_file, "rb") as f:
    proto.ParseFromString(f.read())
  while len(proto.pieces) < size:
    piece = proto.pieces.add()
    piece.piece, piece.score = f"<unused{len(proto.pieces)}>", -100.0
  with open(spm_model_file, "wb") as f:
    f.write(proto.SerializeToString())


def step_gflop(spec) -> float:
  """Nominal GFLOP of a step of `spec` (preset, batch, seq, mode; matmuls only, what
  transformers' model computes): the embedding projection, L x (Q, K, V, scores, context,
  output projection, FFN), the pooler and the head; training is three times the forward
  (forward, and two matmuls per matmul backward)."""
  c = preset_config(spec["preset"])
  b, s = spec["batch"], spec["seq"]
  t, h, i, e = b * s, c.hidden_size, c.intermediate_size, c.embedding_size
  layer = 2 * t * h * 3 * h + 2 * 2 * b * s * s * h + 2 * t * h * h + 2 * 2 * t * h * i
  forward = 2 * t * e * h + c.num_hidden_layers * layer + 2 * b * h * h + 2 * b * h * 2
  return (3 if spec["mode"] == "train" else 1) * forward / 1e9


def attention_gflop(spec) -> float:
  """The part of `step_gflop` in attention's batched matmuls (scores and context)."""
  c = preset_config(spec["preset"])
  b, s = spec["batch"], spec["seq"]
  forward = c.num_hidden_layers * 2 * 2 * b * s * s * c.hidden_size
  return (3 if spec["mode"] == "train" else 1) * forward / 1e9


def matmul_peak(spec) -> float:
  """GFLOP/s: the matmul peak of this machine in TensorFlow (oneDNN) in `spec`'s dtype at
  the model's own shapes: [T, H] x [H, 3H], [T, H] x [H, H], [T, H] x [H, I], [T, I] x
  [I, H] with T = B * S, FLOP-weighted (total FLOPs / total time), best of several
  repetitions each."""
  import time  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  c = preset_config(spec["preset"])
  t, h, i = spec["batch"] * spec["seq"], c.hidden_size, c.intermediate_size
  dtype = tf.bfloat16 if spec["dtype"] == "bfloat16" else tf.float32
  flops = seconds = 0.0
  for m, k, n in ((t, h, 3 * h), (t, h, h), (t, h, i), (t, i, h)):
    a = tf.cast(tf.random.normal([m, k], dtype=tf.float32), dtype)
    b = tf.cast(tf.random.normal([k, n], dtype=tf.float32), dtype)
    matmul = tf.function(lambda x, y: tf.reduce_sum(tf.cast(tf.matmul(x, y)[:1, :1], tf.float32)))
    for _ in range(3):
      matmul(a, b).numpy()
    best = float("inf")
    for _ in range(7):
      start = time.perf_counter()
      for _ in range(5):
        matmul(a, b).numpy()
      best = min(best, (time.perf_counter() - start) / 5)
    flops += 2.0 * m * k * n
    seconds += best
  return flops / seconds / 1e9
