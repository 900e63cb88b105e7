"""Converts an ALBERT model between the layouts: Hugging Face <-> released TF1, heads included.

  python convert_checkpoint.py --model=albert-base-v2 --output_format=tf1 \
      --output_dir=albert_base_tf1
  python convert_checkpoint.py --model=out/MRPC --output_format=hf --output_dir=hf/albert-mrpc

--input is a Hugging Face directory, a released TF1 one (albert_config.json,
model.ckpt-best), an output directory of run_classifier.py / run_race.py /
run_squad.py / run_pretraining.py, or an encoder SavedModel of
hub_export/export.py. TF-Hub SavedModels are written by hub_export/export.py
(which takes any of these directories as --albert_directory).
"""

import os
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # TF imports tf_keras, not Keras 3 (1.7 s)

from absl import app

from albert_tf import cli
from albert_tf.commands import convert

cli.define_flags(convert.ConvertOptions)


def main(argv):
  cli.run_with_flags(argv, convert.ConvertOptions, convert.run)


if __name__ == "__main__":
  app.run(main)
