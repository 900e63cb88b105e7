"""Progress for long work: a tqdm bar on a terminal, a plain line every 10% in a log file.

`progress_bar(...)` takes tqdm's arguments. When stderr is not a terminal (output
redirected to a file, a batch system's log), tqdm's redraws would pile up as
one endless line; there it logs `desc: 30% (300/1000 step, 12 s, 25.0 step/s)`
each time another tenth is done, with the bar's postfix (the loss) appended.

Imports nothing else of albert_tf; every layer may use it.
"""

import sys
import time
from typing import Iterable, Optional


def progress_bar(iterable: Optional[Iterable] = None, *, total: Optional[int] = None,
             desc: str = "", unit: str = "it", disable: bool = False, initial: int = 0,
             every_percent: int = 10, **tqdm_kwargs):
  """A tqdm bar, or in a non-terminal a `_LogLines` with the same interface."""
  if not disable and not _is_terminal():
    return _LogLines(iterable, total, desc, unit, initial, every_percent)
  from tqdm import tqdm  # pylint: disable=g-import-not-at-top
  return tqdm(iterable, total=total, desc=desc, unit=unit, disable=disable, initial=initial,
              **tqdm_kwargs)


def _is_terminal() -> bool:
  try:
    return sys.stderr.isatty()
  except (AttributeError, ValueError):
    return False


class _LogLines:
  """What the code uses of tqdm (iterate, update, set_postfix, clear, refresh, close),
  written as one line per `every_percent` of `total`."""

  def __init__(self, iterable, total, desc, unit, initial, every_percent):
    self.iterable, self.desc, self.unit = iterable, desc, unit
    if total is None and hasattr(iterable, "__len__"):
      total = len(iterable)
    self.total, self.n, self.every = total, initial, max(1, every_percent)
    self.started, self.start_n, self.postfix = time.time(), initial, ""
    self._next = self._threshold_after(initial)

  def _threshold_after(self, n) -> Optional[float]:
    if not self.total:
      return None
    step = self.total * self.every / 100
    return (int(n / step) + 1) * step

  def __iter__(self):
    for item in self.iterable:
      yield item
      self.update(1)
    self.close()

  def update(self, n: int = 1) -> None:
    self.n += n
    if self._next is not None and self.n >= min(self._next, self.total):
      self._write()
      self._next = self._threshold_after(self.n)

  def set_postfix(self, values=None, **kwargs) -> None:
    values = dict(values or {}, **kwargs)
    self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

  def _write(self) -> None:
    elapsed = time.time() - self.started
    rate = (self.n - self.start_n) / elapsed if elapsed > 0 else 0.0
    line = (f"{self.desc}: {100 * self.n / self.total:.0f}% ({self.n}/{self.total} {self.unit}, "
            f"{elapsed:.0f} s, {rate:.3g} {self.unit}/s)")
    print(line + (f" {self.postfix}" if self.postfix else ""), file=sys.stderr, flush=True)

  def clear(self) -> None:
    pass

  def refresh(self) -> None:
    pass

  def close(self) -> None:
    self._next = None
