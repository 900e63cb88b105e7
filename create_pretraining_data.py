"""Creates ALBERT pretraining TFRecords: n-gram masking and sentence-order pairs.

  python create_pretraining_data.py --input_file='corpus/*.txt' \
      --output_file=data/train-0.tfrecord,data/train-1.tfrecord \
      --spm_model_file=30k-clean.model --max_seq_length=512 --max_predictions_per_seq=20 \
      --dupe_factor=40 --num_workers=8

The same as an Apache Beam pipeline (pip install 'albert_tf[beam]'), the same bytes:

  python create_pretraining_data.py ... --output_file=data/train.tfrecord \
      --num_output_shards=64 --runner=DirectRunner --direct_num_workers=2

(--runner=DataflowRunner and others with --beam_pipeline_options; docs/pretraining.md).
A WordPiece vocabulary (the Chinese releases' vocab_chinese.txt) goes in
--vocab_file instead of --spm_model_file. Input: one sentence per line, a
blank line between documents. The output has
the original tool's features (input_ids, input_mask, segment_ids,
token_boundary, masked_lm_*, next_sentence_labels).
"""

from absl import app

from albert_tf.commands import table

main = table.main("create_pretraining_data")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
