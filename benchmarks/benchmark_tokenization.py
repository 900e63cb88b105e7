"""Tokenization throughput: Python FullTokenizer against the in-graph AlbertTokenizer.

Trains a small vocabulary on the pydoc topics (or uses --spm_model_file), then
tokenizes and packs --num_sentences sentences both ways and prints sentences/s.
With --wordpiece the same vocabulary is rewritten as a WordPiece one ("▁word"
-> "word", other pieces -> "##piece"; or pass --vocab_file) and tokenized as
the Chinese releases' vocab_chinese.txt is.

  python benchmarks/benchmark_tokenization.py --num_sentences=10000
  python benchmarks/benchmark_tokenization.py --num_sentences=10000 --wordpiece
"""

import itertools
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags
import tensorflow as tf

from albert_tf.text import packing, preprocessing, tokenization
from albert_tf.data import sample_corpus
from benchmarking import pydoc_vocabulary

flags.DEFINE_string("spm_model_file", None, "SentencePiece model; default: train one on pydoc.")
flags.DEFINE_string("vocab_file", None, "A WordPiece vocabulary to use instead.")
flags.DEFINE_bool("wordpiece", False, "Tokenize with WordPiece: --vocab_file, or the "
                  "SentencePiece vocabulary rewritten as WordPiece.")
flags.DEFINE_integer("vocab_size", 3000, "Size of the vocabulary trained when none is given.")
flags.DEFINE_integer("num_sentences", 10000, "Sentences to tokenize.")
flags.DEFINE_integer("batch_size", 256, "In-graph batch size.")
flags.DEFINE_integer("seq_length", 128, "Packed length.")
FLAGS = flags.FLAGS


def wordpiece_from_sentencepiece(spm_model_file: str) -> str:
  """A WordPiece vocabulary with the SentencePiece model's pieces, beside it."""
  sp = tokenization.FullTokenizer(spm_model_file=spm_model_file)
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  for piece in sp.vocab:
    if piece.startswith(tokenization.SPIECE_UNDERLINE) and len(piece) > 1:
      tokens.append(piece[1:])
    elif not piece.startswith(("<", "[", tokenization.SPIECE_UNDERLINE)):
      tokens += [piece, "##" + piece] if len(piece) == 1 else ["##" + piece]
  path = os.path.splitext(spm_model_file)[0] + "_wordpiece.txt"
  with open(path, "w", encoding="utf-8") as f:
    f.writelines(t + "\n" for t in dict.fromkeys(tokens))
  return path


def main(_):
  model = pydoc_vocabulary(FLAGS.vocab_size, FLAGS.spm_model_file)
  vocab_file = FLAGS.vocab_file or (wordpiece_from_sentencepiece(model) if FLAGS.wordpiece
                                    else None)
  if vocab_file:
    model = None
  sentences = [s for d in sample_corpus.pydoc_documents() for s in d]
  sentences = list(itertools.islice(itertools.cycle(sentences), FLAGS.num_sentences))
  n = len(sentences)
  print(f"{n} sentences, mean {sum(map(len, sentences)) / n:.0f} characters, "
        f"vocabulary {model or vocab_file}")

  tok = tokenization.FullTokenizer(vocab_file=vocab_file, spm_model_file=model)
  start = time.perf_counter()
  python_ids = [tok.encode(s) for s in sentences]
  t_tok = time.perf_counter() - start
  for ids in python_ids:
    packing.pack_inputs(ids, None, FLAGS.seq_length, tok.cls_id, tok.sep_id, tok.pad_id)
  t_pack = time.perf_counter() - start
  print(f"Python FullTokenizer:          {n / t_tok:9.0f} sentences/s tokenize, "
        f"{n / t_pack:9.0f} tokenize+pack")

  layer = preprocessing.AlbertTokenizer(model, vocab_file=vocab_file)
  packer = preprocessing.AlbertPacker(FLAGS.seq_length, tok.cls_id, tok.sep_id, tok.pad_id)
  for label, fn in (("tokenize", lambda x: layer(x)),
                    ("tokenize+pack", lambda x: packer([layer(x)]))):
    ds = tf.data.Dataset.from_tensor_slices(sentences).batch(FLAGS.batch_size).map(
        fn, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    for _ in ds.take(1):
      pass  # trace once
    start = time.perf_counter()
    count = sum(1 for _ in ds)
    elapsed = time.perf_counter() - start
    print(f"in-graph (tf.data, parallel):  {n / elapsed:9.0f} sentences/s {label} "
          f"({count} batches of {FLAGS.batch_size})")
  graph_ids = [r for b in tf.data.Dataset.from_tensor_slices(sentences).batch(
      FLAGS.batch_size).map(layer) for r in b.to_list()]
  same = sum(g == p for g, p in zip(graph_ids, python_ids))
  print(f"sentences with identical ids: {same} of {n}; [UNK] "
        f"{sum(i == tok.unk_id for ids in python_ids for i in ids)} of "
        f"{sum(map(len, python_ids))} tokens")


if __name__ == "__main__":
  app.run(main)
