"""Creates ALBERT pretraining TFRecords: n-gram masking and sentence-order pairs.

  python create_pretraining_data.py --input_file='corpus/*.txt' \
      --output_file=data/train-0.tfrecord,data/train-1.tfrecord \
      --spm_model_file=30k-clean.model --max_seq_length=512 --max_predictions_per_seq=20 \
      --dupe_factor=40 --num_workers=8

Input: one sentence per line, a blank line between documents. The output has
the original tool's features (input_ids, input_mask, segment_ids,
token_boundary, masked_lm_*, next_sentence_labels).
"""

import time

from absl import app, flags

from albert_tf.data import pretraining_data as pd

flags.DEFINE_string("input_file", None, "Input text files: comma-separated paths or globs.")
flags.DEFINE_string("output_file", None, "Output TFRecord files, comma-separated (shards).")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model of the vocabulary.")
flags.DEFINE_string("vocab_file", None, "Unused; accepted for the original's command lines.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input text.")
flags.DEFINE_bool("do_whole_word_mask", True, "Mask whole words (SentencePiece word starts).")
flags.DEFINE_bool("do_permutation", False, "Also permute spans (the original's extra task).")
flags.DEFINE_bool("favor_shorter_ngram", True, "p(n) proportional to 1/n; false reverses it.")
flags.DEFINE_bool("random_next_sentence", False, "NSP (B from another document) instead of SOP.")
flags.DEFINE_integer("max_seq_length", 512, "Maximum sequence length.")
flags.DEFINE_integer("ngram", 3, "Maximum n-gram length to mask.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum masked-LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Seed: the output is deterministic for a seed.")
flags.DEFINE_integer("dupe_factor", 40, "Times to duplicate the input with different masks.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked-LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter-than-maximum sequence.")
flags.DEFINE_integer("num_workers", 1, "Processes working on input files in parallel.")
flags.DEFINE_bool("overwrite", False, "Replace existing output files.")
flags.mark_flags_as_required(["input_file", "output_file", "spm_model_file"])
FLAGS = flags.FLAGS


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  opts = pd.DataOptions(
      max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
      masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob,
      dupe_factor=FLAGS.dupe_factor, ngram=FLAGS.ngram, do_whole_word_mask=FLAGS.do_whole_word_mask,
      do_permutation=FLAGS.do_permutation, favor_shorter_ngram=FLAGS.favor_shorter_ngram,
      random_next_sentence=FLAGS.random_next_sentence, random_seed=FLAGS.random_seed)
  outputs = [f.strip() for f in FLAGS.output_file.split(",") if f.strip()]
  start = time.time()
  try:
    inputs = pd.expand_files(FLAGS.input_file)
    stats = pd.write_pretraining_data(inputs, outputs, FLAGS.spm_model_file, opts,
                                      do_lower_case=FLAGS.do_lower_case,
                                      num_workers=FLAGS.num_workers, overwrite=FLAGS.overwrite)
  except (FileNotFoundError, FileExistsError, ValueError) as e:
    raise app.UsageError(str(e)) from None
  seconds = time.time() - start
  print(f"Wrote {stats.get('instances', 0)} examples from {stats['files']} files "
        f"({stats.get('documents', 0)} documents) to {len(outputs)} files in {seconds:.1f} s; "
        f"masked {stats.get('masked', 0)} of {stats.get('tokens', 0)} tokens")


if __name__ == "__main__":
  app.run(main)
