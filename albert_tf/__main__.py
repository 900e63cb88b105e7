"""`python -m albert_tf <command> [--flags]`: any command of `albert_tf.commands.table`,
as its root script or console entry point runs it (`python -m albert_tf run_classifier
--helpfull`). A task kind added to `albert_tf.runs.KINDS` runs this way with no script."""

import sys


def main() -> None:
  from albert_tf.commands import table  # pylint: disable=g-import-not-at-top
  if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
    sys.exit("usage: python -m albert_tf <command> [--flags]; the commands: "
             + ", ".join(table.COMMANDS))
  name = sys.argv.pop(1)
  try:
    command_main = table.main(name)
  except ValueError as e:
    sys.exit(str(e))
  from absl import app  # pylint: disable=g-import-not-at-top
  app.run(command_main)


if __name__ == "__main__":
  main()
