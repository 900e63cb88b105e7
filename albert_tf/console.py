"""What a command prints: its own lines (progress, metrics, where things went, errors),
not TensorFlow's C++ start-up lines (the cuInit "error" of every machine without a GPU
among them) nor absl's INFO lines, which go to `<output_dir>/log.txt` instead.

A user who asks for the logs gets them as TensorFlow and absl print them: `--verbosity`
(or `-v`) on the command line, or `TF_CPP_MIN_LOG_LEVEL` in the environment.

  hide_start_up()   before TensorFlow is imported (albert_tf.commands.table does it); its
                    C++ lines that ignore TF_CPP_MIN_LOG_LEVEL (XLA's, through absl)
                    are filtered out of standard error
  keep_logs()       once the flags are parsed: absl's lines into a buffer
  write_log(dir)    when a command owns its output directory: the buffer, then every
                    later line, into dir/log.txt
  error_line(e)     a TensorFlow error in one line, its cause (the traceback: log.txt)

This module imports no TensorFlow.
"""

import atexit
import io
import logging
import os
import re
import sys
import threading
from typing import Optional, Sequence

LOG_NAME = "log.txt"
_state = dict(quiet=False, stream=None, path=None, early=[])
# Lines of TensorFlow's C++ logging (TSL's format, and absl's: XLA logs through it, and
# before absl::InitializeLog it writes to stderr whatever TF_CPP_MIN_LOG_LEVEL says).
CPP_LOG = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] |[IWEF]\d{4} [\d:.]+ +\d+ "
                     r"\S+:\d+\] |WARNING: All log messages before absl::InitializeLog\(\) is "
                     r"called|INFO: )")   # (the last: TFLite's own INFO, "INFO: Created ...")


def asks_for_logs(argv: Sequence[str]) -> bool:
  """Whether the user asked for TensorFlow's and absl's own lines."""
  return "TF_CPP_MIN_LOG_LEVEL" in os.environ or any(
      a in ("-v", "--verbosity") or a.startswith(("-v=", "--verbosity=")) for a in argv[1:])


def hide_start_up(argv: Optional[Sequence[str]] = None) -> None:
  """Before TensorFlow is imported: hides its C++ log lines, unless the user asked."""
  if asks_for_logs(sys.argv if argv is None else argv):
    return
  os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
  _state["quiet"] = True
  _filter_stderr()


def _filter_stderr() -> None:
  """File descriptor 2, where TensorFlow's C++ code writes, through a pipe: its log lines
  go to log.txt (`_keep`), every other line to the console. Python's `sys.stderr` (the
  command's own lines, progress bars, tracebacks) writes to the console directly, and
  still says whether it is a terminal."""
  try:
    sys.stderr.flush()
    console = os.dup(2)
    read, write = os.pipe()
    os.dup2(write, 2)
    os.close(write)
  except (OSError, AttributeError, ValueError):   # (no file descriptor 2: nothing to filter)
    return
  encoding = getattr(sys.stderr, "encoding", None)
  sys.stderr = open(console, "w", buffering=1, encoding=encoding,  # pylint: disable=consider-using-with
                    errors="backslashreplace", closefd=False)

  def pump():
    with os.fdopen(read, "rb") as pipe:
      for line in pipe:
        if CPP_LOG.match(line.decode("utf-8", "replace")):
          _keep(line.decode("utf-8", "replace"))
        else:
          os.write(console, line)

  thread = threading.Thread(target=pump, name="albert_tf-stderr", daemon=True)
  thread.start()

  def restore():
    sys.stderr.flush()
    os.dup2(console, 2)   # (the pipe's last writer closes: the pump reads to its end)
    thread.join(timeout=5)
  atexit.register(restore)


def _keep(line: str) -> None:
  """A C++ log line, into log.txt (or its buffer, or the list before there is one)."""
  stream = _state["stream"]
  if stream is None:
    _state["early"].append(line)
  else:
    stream.write(line)


def quiet() -> bool:
  return _state["quiet"]


def keep_logs() -> None:
  """Once absl has parsed the flags: its handler writes INFO and above into a buffer
  (log.txt's start), not to the console; so do Python's warnings."""
  if not _state["quiet"]:
    return
  from absl import logging as absl_logging  # pylint: disable=g-import-not-at-top
  absl_logging.set_verbosity(absl_logging.INFO)
  _state["stream"] = io.StringIO("".join(_state["early"]))
  _state["stream"].seek(0, io.SEEK_END)
  absl_logging.get_absl_handler().python_handler.stream = _state["stream"]
  logging.captureWarnings(True)
  # TensorFlow gives its logger a console handler of its own when it first logs before
  # absl's handler is on the root ("INFO:tensorflow:Assets written to: ..." on a save):
  # removed, its lines reach the root's, and log.txt, as every other logger's do.
  tf_logger = logging.getLogger("tensorflow")
  for handler in list(tf_logger.handlers):
    if getattr(handler, "stream", None) in (sys.stderr, sys.stdout, sys.__stderr__):
      tf_logger.removeHandler(handler)


def write_log(directory: str) -> Optional[str]:
  """Everything logged so far and from now on goes to `directory`/log.txt (appended:
  a resumed run keeps its earlier log). Returns its path, or None when not quiet."""
  stream = _state["stream"]
  if stream is None or not os.path.isdir(directory):
    return None
  from absl import logging as absl_logging  # pylint: disable=g-import-not-at-top
  path = os.path.join(directory, LOG_NAME)
  if _state["path"] == path:
    return path
  f = open(path, "a", encoding="utf-8")  # pylint: disable=consider-using-with
  if isinstance(stream, io.StringIO):
    f.write(stream.getvalue())
  f.flush()
  absl_logging.get_absl_handler().python_handler.stream = f
  _state.update(stream=f, path=path)
  return path


def log_path() -> Optional[str]:
  return _state["path"]


def error_line(error: BaseException) -> str:
  """`Type: the message's first line` of an error, and where its traceback went."""
  first = (str(error).strip().splitlines() or [""])[0]
  where = f" (the traceback: {_state['path']})" if _state["path"] else ""
  return f"{type(error).__name__}: {first}{where}"
