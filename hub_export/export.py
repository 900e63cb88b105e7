"""Exports ALBERT as TF-Hub SavedModels: the encoder and/or the text preprocessor.

From a released model directory (albert_config.json, 30k-clean.model, model.ckpt-best):

  python hub_export/export.py --albert_directory=albert_base \
      --export_path=hub/albert_base --export_preprocessing_path=hub/albert_preprocess

or from explicit files (original TF1 checkpoints and albert_tf's own both load):

  python hub_export/export.py --albert_config_file=out/albert_config.json \
      --init_checkpoint=out/model.ckpt-best --spm_model_file=30k-clean.model \
      --export_path=hub/albert_mine
"""

from absl import app, flags

from albert_tf import export

flags.DEFINE_string("albert_directory", None,
                    "A released model directory: albert_config.json, 30k-clean.model and the "
                    "checkpoint named by --checkpoint_name. Explicit file flags take precedence.")
flags.DEFINE_string("checkpoint_name", "model.ckpt-best", "Checkpoint prefix in --albert_directory.")
flags.DEFINE_string("albert_config_file", None, "albert_config.json of the model.")
flags.DEFINE_string("init_checkpoint", None,
                    "Checkpoint (prefix or directory), original TF1 names or albert_tf's own; "
                    "'none' exports freshly initialized weights.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model of the vocabulary.")
flags.DEFINE_string("export_path", None, "Directory for the encoder SavedModel.")
flags.DEFINE_string("export_preprocessing_path", None, "Directory for the preprocessor SavedModel.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input text (the released models do).")
flags.DEFINE_integer("default_seq_length", 128, "Sequence length of the preprocessor's root call.")
flags.DEFINE_bool("overwrite", False, "Replace existing, non-empty export directories.")
FLAGS = flags.FLAGS


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  try:
    written = export.export_from_sources(
        FLAGS.export_path, FLAGS.export_preprocessing_path,
        albert_directory=FLAGS.albert_directory, albert_config_file=FLAGS.albert_config_file,
        init_checkpoint=FLAGS.init_checkpoint, spm_model_file=FLAGS.spm_model_file,
        checkpoint_name=FLAGS.checkpoint_name, do_lower_case=FLAGS.do_lower_case,
        default_seq_length=FLAGS.default_seq_length, overwrite=FLAGS.overwrite)
  except (FileNotFoundError, FileExistsError, ValueError) as e:
    raise app.UsageError(str(e)) from None
  for kind, path in written.items():
    print(f"{kind} SavedModel: {path}")


if __name__ == "__main__":
  app.run(main)
