"""Every albert_tf command, in one table: what each runs and where its flags come from.

The root scripts (`run_classifier.py`, `hub_export/export.py`, ...), `demo.py` and the
console entry points `pip install albert_tf` puts on PATH (named as the scripts are; the
TF-Hub exporter, `hub_export/export.py`, as `export_tf_hub`) all read it:

    from albert_tf.commands import table
    main = table.main("run_classifier")        # defines the flags now, as a script does
    app.run(main)

A command's module holds its options dataclass (whose fields are the flags) and the
function that runs it; the module is imported when the command is, so one command does
not import the others' libraries. The training commands are the task kinds'
(`albert_tf.runs.KINDS`, each kind's `command`): a new kind's command is listed here with
no line of its own, and runs as `python -m albert_tf <command>` before it has a root script.
"""

import dataclasses
import importlib
import os
from typing import Callable, Dict, Optional

from albert_tf import console

console.hide_start_up()   # before TensorFlow is imported (runs imports it)

from albert_tf import runs  # pylint: disable=g-import-not-at-top,wrong-import-position


@dataclasses.dataclass(frozen=True)
class Command:
  """script: the root script (from the repository root). module: where the options and
  the function live. options, run: their names. original: the module's table of the
  original script's flags (cli.Original), if it stands for one."""
  script: str
  module: str
  options: str
  run: str = "run"
  original: Optional[str] = None

  def load(self):
    """(options class, run function, original flags or None), importing the module."""
    module = importlib.import_module(self.module)
    return (getattr(module, self.options), getattr(module, self.run),
            getattr(module, self.original) if self.original else None)


def _training_commands() -> Dict[str, Command]:
  """Each task kind's training command (`runs.Kind.command`), named as its script."""
  return {kind.script[:-len(".py")]: Command(kind.script, module, options, original=original)
          for kind in runs.KINDS.values() if kind.command
          for module, options, original in [kind.command]}


COMMANDS: Dict[str, Command] = {
    "create_vocab": Command("create_vocab.py", "albert_tf.commands.create_vocab",
                            "VocabOptions"),
    "create_pretraining_data": Command("create_pretraining_data.py",
                                       "albert_tf.commands.create_pretraining_data",
                                       "CreationOptions", "create", "ORIGINAL_FLAGS"),
    **_training_commands(),
    "predict": Command("predict.py", "albert_tf.commands.predict", "PredictOptions"),
    "convert_checkpoint": Command("convert_checkpoint.py", "albert_tf.commands.convert",
                                  "ConvertOptions"),
    "export_tf_hub": Command("hub_export/export.py", "albert_tf.commands.export_tf_hub",
                             "ExportOptions", original="ORIGINAL_FLAGS"),
    "export_tflite": Command("hub_export/export_tflite.py", "albert_tf.commands.export_tflite",
                             "TFLiteOptions"),
    "export_onnx": Command("hub_export/export_onnx.py", "albert_tf.commands.export_onnx",
                           "OnnxOptions"),
}
BY_SCRIPT = {command.script: name for name, command in COMMANDS.items()}


def command(name: str) -> Command:
  """Command `name`: one of COMMANDS, or the training command of a kind added to
  `runs.KINDS` since this module was imported."""
  found = COMMANDS.get(name) or _training_commands().get(name)
  if found is None:
    raise ValueError(f"unknown command {name!r}; the commands are "
                     + ", ".join(sorted(set(COMMANDS) | set(_training_commands()))))
  return found


def main(name: str) -> Callable:
  """Defines command `name`'s flags and returns its absl `main(argv)`."""
  os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # TF imports tf_keras, not Keras 3
  from albert_tf import cli  # pylint: disable=g-import-not-at-top
  options, run, original = command(name).load()
  cli.define_flags(options, original=original)

  def command_main(argv):
    cli.run_with_flags(argv, options, run)
  return command_main


def _entry_point(name: str) -> Callable[[], None]:
  def entry():
    from absl import app  # pylint: disable=g-import-not-at-top
    app.run(main(name))
  entry.__name__ = name
  entry.__doc__ = f"The `{name}` command ({COMMANDS[name].script})."
  return entry


# The console entry points ([project.scripts] in pyproject.toml): one function a command.
globals().update({name: _entry_point(name) for name in COMMANDS})
