"""Early exit on ALBERT's shared block, measured against fixed-depth students (issue 84).

PABEE (Zhou et al., 2020) puts a classifier after every layer, trains them all (the loss
of layer i weighted by i) and at inference stops at the first layer whose answer has not
changed for `patience` layers; its code answers one row at a time. Here the exits are
batched: after each pass, the rows that are sure leave the batch and the rest go on.

What this measures, on a `make demo` output directory (its MRPC run, the teacher):

1. a multi-exit model: the teacher's weights, the run's pooler and head after every pass,
   fine-tuned as the demo's students are (300 steps of 32, AdamW at 2e-4 decaying to 0, the
   teacher's soft labels at T=2 mixed half and half with the true labels), each pass's
   loss weighted by its index as PABEE weighs them;
2. dev accuracy and model pairs/s (tokenized beforehand, batches of 64 sorted by length:
   the model alone, the same for every row) of that model exiting by confidence (the
   largest probability at least --thresholds) and by patience (--patience), and of the
   same model and of the taught fixed-depth students of tools/lite_table.py at each
   depth, with no exit.

  python tools/early_exit.py --demo_dir=/tmp/demo --lite_dir=/tmp/lite --seeds=0,1,2,3
"""

import os
import sys
import time

from absl import app, flags
import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)

flags.DEFINE_string("demo_dir", None, "A `python demo.py --output_dir` directory.")
flags.DEFINE_string("lite_dir", None, "tools/lite_table.py's --output_dir (its taught "
                    "students are measured beside the exits).")
flags.DEFINE_list("seeds", ["0"], "Seeds of the multi-exit fine-tuning.")
flags.DEFINE_list("thresholds", ["0.8", "0.9", "0.95", "0.99"], "Confidence exits.")
flags.DEFINE_list("patience", ["1", "2"], "Patience exits (PABEE's).")
flags.DEFINE_integer("train_step", 300, "Steps of the multi-exit fine-tuning.")
flags.DEFINE_integer("rounds", 3, "Timed passes over dev (the best is kept).")
flags.mark_flag_as_required("demo_dir")
FLAGS = flags.FLAGS
BATCH = 64


def packed(run, split):
  """([N, S] ids, mask, type ids, labels) of the demo's MRPC split."""
  from albert_tf.data import glue  # pylint: disable=g-import-not-at-top
  from albert_tf.text.packing import pack_texts  # pylint: disable=g-import-not-at-top
  tokenizer = run.tokenizer()
  examples = glue.read_examples(os.path.join(FLAGS.demo_dir, "glue_data", "MRPC"),
                                glue.get_task("MRPC"), split)
  rows = [pack_texts(tokenizer, [e.text_a, e.text_b], run.max_seq_length) for e in examples]
  arrays = [np.array([r[k] for r in rows], np.int32)
            for k in ("input_word_ids", "input_mask", "input_type_ids")]
  return arrays + [np.array([run.labels.index(e.label) for e in examples], np.int32)]


class Exits:
  """A classifier run's encoder applied pass by pass, its pooler and head after each."""

  def __init__(self, model):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from albert_tf.modeling.encoder import attention_bias_from_mask  # pylint: disable=g-import-not-at-top
    self.model, enc = model, model.encoder
    self.depth = enc.config.num_hidden_layers
    assert enc.config.num_hidden_groups == 1 and enc.config.inner_group_num == 1
    block, hidden = enc.groups[0][0], enc.config.hidden_size

    def embed(ids, mask, types):
      x = enc.embeddings(ids, types)                                          # [B, S, E]
      if enc.embedding_projection is not None:
        x = enc.embedding_projection(x)                                       # [B, S, H]
      return x, attention_bias_from_mask(mask)                                # [B,1,1,S]

    def one_pass(x, bias, training=False):
      x = block(x, bias, training=training, weights=block.read_weights(training=training))
      logits = model.classifier(enc.pooler(x[:, 0]), training=training)      # [B, C]
      return x, logits

    spec = tf.TensorSpec([None, None], tf.int32)
    self.embed = tf.function(embed, input_signature=[spec] * 3)
    self.one_pass = tf.function(one_pass, input_signature=[
        tf.TensorSpec([None, None, hidden], tf.float32),
        tf.TensorSpec([None, 1, 1, None], tf.float32)])
    self.train_pass = one_pass

  def all_logits(self, ids, mask, types, training=False):
    """Every pass's logits [L, B, C] (training: differentiable)."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    x, bias = (self.embed.python_function if training else self.embed)(ids, mask, types)
    out = []
    for _ in range(self.depth):
      x, logits = self.train_pass(x, bias, training) if training else self.one_pass(x, bias)
      out.append(logits)
    return tf.stack(out)

  def answer(self, ids, mask, types, rule):
    """(logits [B, C], passes [B]) exiting by `rule`: ("confidence", p), ("patience", k)
    or ("depth", d), the rows that exit leaving the batch."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    kind, value = rule
    x, bias = self.embed(ids, mask, types)
    rows = np.arange(len(ids))
    out = np.zeros([len(ids), self.model.num_classes], np.float32)
    passes = np.zeros(len(ids), np.int32)
    last, same = None, np.zeros(len(ids), np.int32)
    depth = value if kind == "depth" else self.depth
    for i in range(depth):
      x, logits = self.one_pass(x, bias)
      logits = logits.numpy()
      if i == depth - 1:
        done = np.ones(len(rows), bool)
      elif kind == "confidence":
        z = np.exp(logits - logits.max(-1, keepdims=True))
        done = (z / z.sum(-1, keepdims=True)).max(-1) >= value
      elif kind == "patience":
        answer = logits.argmax(-1)
        same = np.where(answer == last, same + 1, 0) if last is not None else same
        done, last = same >= value, answer
      else:
        done = np.zeros(len(rows), bool)
      out[rows[done]], passes[rows[done]] = logits[done], i + 1
      if done.all():
        break
      if done.any():
        keep = np.flatnonzero(~done)
        x, bias = tf.gather(x, keep), tf.gather(bias, keep)
        rows = rows[keep]
        if kind == "patience":
          same, last = same[keep], last[keep]
    return out, passes


def batches(data):
  """Batches of 64 sorted by length, cut to their longest row: (rows, ids, mask, types)."""
  ids, mask, types = data[:3]
  order = np.argsort(mask.sum(-1), kind="stable")
  for start in range(0, len(order), BATCH):
    rows = order[start:start + BATCH]
    width = int(mask[rows].sum(-1).max())
    yield rows, ids[rows, :width], mask[rows, :width], types[rows, :width]


def measure(exits, data, rule):
  """(accuracy, pairs/s of the best round, mean passes)."""
  best, labels = 0.0, data[3]
  for _ in range(FLAGS.rounds + 1):   # (the first round traces)
    logits = np.zeros([len(labels), exits.model.num_classes], np.float32)
    passes = np.zeros(len(labels), np.int32)
    started = time.perf_counter()
    for rows, ids, mask, types in batches(data):
      logits[rows], passes[rows] = exits.answer(ids, mask, types, rule)
    best = max(best, len(labels) / (time.perf_counter() - started))
  return float((logits.argmax(-1) == labels).mean()), best, float(passes.mean())


def train_exits(teacher, data, seed):
  """The teacher's weights with an exit after every pass, fine-tuned as above."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras as keras  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(seed)
  teacher_model, model = teacher.model(), teacher.model()
  exits = Exits(model)
  depth = exits.depth
  weights = tf.constant([i + 1 for i in range(depth)], tf.float32) / (depth * (depth + 1) / 2)
  optimizer = keras.optimizers.AdamW(
      keras.optimizers.schedules.PolynomialDecay(2e-4, FLAGS.train_step, 0.0),
      weight_decay=0.01)
  ids, mask, types, labels = data
  rng = np.random.default_rng(seed)

  @tf.function
  def step(ids, mask, types, labels):
    soft = tf.nn.softmax(teacher_model(dict(input_word_ids=ids, input_mask=mask,
                                             input_type_ids=types)) / 2.0)     # [B, C]
    with tf.GradientTape() as tape:
      logits = exits.all_logits(ids, mask, types, training=True)              # [L, B, C]
      hard = tf.nn.sparse_softmax_cross_entropy_with_logits(
          tf.broadcast_to(labels, tf.shape(logits)[:2]), logits)              # [L, B]
      kl = 4.0 * tf.reduce_sum(soft * (tf.math.log(soft + 1e-9)
                                       - tf.nn.log_softmax(logits / 2.0)), -1)  # [L, B]
      loss = tf.reduce_sum(weights * tf.reduce_mean(0.5 * hard + 0.5 * kl, -1))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

  for _ in range(FLAGS.train_step):
    rows = rng.choice(len(labels), 32, replace=False)
    step(ids[rows], mask[rows], types[rows], labels[rows])
  return exits


def main(argv):
  del argv
  from albert_tf import runs  # pylint: disable=g-import-not-at-top
  teacher = runs.Run.read(os.path.join(FLAGS.demo_dir, "mrpc"), "--demo_dir")
  train, dev = packed(teacher, "train"), packed(teacher, "dev")
  depth = teacher.config.num_hidden_layers
  print("| model | exit | dev accuracy | pairs/s | x teacher | mean passes |")
  print("|---|---|---|---|---|---|")
  full = measure(Exits(teacher.model()), dev, ("depth", depth))
  show = lambda name, rule, r: print(f"| {name} | {rule} | {r[0]:.4f} | {r[1]:.0f} | "
                                     f"{r[1] / full[1]:.2f} | {r[2]:.2f} |")
  show(f"teacher ({depth} passes)", "none", full)
  if FLAGS.lite_dir:
    for d in range(depth - 1, 0, -1):
      for seed in FLAGS.seeds:
        path = os.path.join(FLAGS.lite_dir, f"taught@{d}", f"seed{seed}")
        if runs.Run.exists(path):
          student = runs.Run.read(path)
          show(f"taught student, seed {seed}", f"none ({d} passes)",
               measure(Exits(student.model()), dev, ("depth", d)))
  for seed in FLAGS.seeds:
    exits = train_exits(teacher, train, int(seed))
    for d in range(1, depth + 1):
      show(f"multi-exit, seed {seed}", f"at pass {d}", measure(exits, dev, ("depth", d)))
    for t in FLAGS.thresholds:
      show(f"multi-exit, seed {seed}", f"confidence >= {t}",
           measure(exits, dev, ("confidence", float(t))))
    for p in FLAGS.patience:
      show(f"multi-exit, seed {seed}", f"patience {p}", measure(exits, dev, ("patience", int(p))))


if __name__ == "__main__":
  app.run(main)
