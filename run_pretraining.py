"""Pretrains ALBERT (masked LM + sentence order) on TFRecords from create_pretraining_data.py.

  python run_pretraining.py --input_file='data/train-*.tfrecord' --output_dir=out \
      --albert_config_file=albert_config.json --do_train --do_eval \
      --train_batch_size=4096 --max_seq_length=512 --max_predictions_per_seq=20 \
      --optimizer=lamb --learning_rate=.00176 --num_train_steps=125000 --num_warmup_steps=3125 \
      --distribution_strategy=mirrored --dtype=bfloat16

Rerunning the same command after a crash resumes from the latest checkpoint in
--output_dir. TensorBoard: `tensorboard --logdir out`.
"""

from absl import app, flags

from albert_tf import cli, pretraining

flags.DEFINE_string("input_file", None, "Pretraining TFRecords: comma-separated paths or globs.")
flags.DEFINE_string("output_dir", None, "Checkpoints, summaries and results go here.")
flags.DEFINE_string("init_checkpoint", None, "Initial weights: original TF1 or albert_tf checkpoint.")
flags.DEFINE_string("albert_config_file", None, "albert_config.json of the model to train.")
flags.DEFINE_bool("do_train", False, "Train.")
flags.DEFINE_bool("do_eval", False, "Evaluate on --input_file after training.")
flags.DEFINE_integer("train_batch_size", 4096, "Global training batch size.")
flags.DEFINE_integer("eval_batch_size", 64, "Global evaluation batch size.")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the data.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked-LM predictions per sequence in the data.")
flags.DEFINE_enum("optimizer", "lamb", ["lamb", "adamw"], "Optimizer.")
flags.DEFINE_float("learning_rate", 0.00176, "Peak learning rate.")
flags.DEFINE_float("poly_power", 1.0, "Power of the polynomial decay.")
flags.DEFINE_integer("num_train_steps", 125000, "Training steps.")
flags.DEFINE_integer("num_warmup_steps", 3125, "Linear warmup steps.")
flags.DEFINE_integer("start_warmup_step", 0, "Step at which the warmup starts.")
flags.DEFINE_integer("save_checkpoints_steps", 5000, "Steps between checkpoints.")
flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints to keep.")
flags.DEFINE_integer("max_eval_steps", 100, "Evaluation batches.")
flags.DEFINE_enum("distribution_strategy", "one_device",
                  ["one_device", "mirrored", "multi_worker_mirrored", "tpu"], "tf.distribute strategy.")
flags.DEFINE_string("tpu", None, "TPU address for --distribution_strategy=tpu.")
flags.DEFINE_enum("dtype", "float32", ["float32", "bfloat16", "float16"],
                  "Compute dtype (variables stay float32; float16 uses loss scaling).")
flags.DEFINE_bool("jit_compile", False, "Compile the training step with XLA.")
flags.DEFINE_integer("seed", 12345, "Seed of the initialization and the data order.")
flags.DEFINE_integer("log_steps", 100, "Steps between summaries.")
flags.DEFINE_bool("export_original_checkpoint", True,
                  "Also write the final weights as model.ckpt-<step> in the original TF1 names.")
flags.mark_flags_as_required(["input_file", "output_dir", "albert_config_file"])
FLAGS = flags.FLAGS


def main(argv):
  cli.run_with_flags(argv, pretraining.PretrainingOptions, pretraining.run)


if __name__ == "__main__":
  app.run(main)
