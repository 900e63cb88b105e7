"""Pretrains ALBERT (masked LM + sentence order) on TFRecords from create_pretraining_data.py.

  python run_pretraining.py --input_file='data/train-*.tfrecord' --output_dir=out \
      --albert_config_file=albert_config.json --do_train --do_eval \
      --train_batch_size=4096 --max_seq_length=512 --max_predictions_per_seq=20 \
      --optimizer=lamb --learning_rate=.00176 --num_train_steps=125000 --num_warmup_steps=3125 \
      --distribution_strategy=mirrored --dtype=auto

Rerunning the same command after a crash resumes from the latest checkpoint in
--output_dir. TensorBoard: `tensorboard --logdir out`.
"""

from absl import app

from albert_tf.commands import table

main = table.main("run_pretraining")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
