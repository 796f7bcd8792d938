"""A dependency-free progress bar for the command line.

On a terminal it redraws one line (``[#####-----] 12/40 0:07 label``); elsewhere (a pipe, a CI
log) it draws nothing and only the lines passed to :meth:`Progress.log` are printed.

Examples:
    >>> import io
    >>> out = io.StringIO()
    >>> bar = Progress(3, stream=out, enabled=True)
    >>> bar.tick("a"); bar.tick("b")
    >>> "2/3" in out.getvalue()
    True
    >>> bar.close()
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """A progress bar over ``total`` units of work.

    Args:
        total: the number of :meth:`tick` calls expected.
        stream: where to draw (default: standard error).
        enabled: draw the bar (default: when ``stream`` is a terminal).
        width: characters of the bar itself.

    Examples:
        >>> import io
        >>> bar = Progress(2, stream=io.StringIO(), enabled=False)
        >>> bar.tick("x"); bar.done
        1
    """

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool | None = None, width: int = 24) -> None:
        self.total = max(0, int(total))
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) if enabled is None else enabled
        self.width = width
        self.done = 0
        self._start = time.perf_counter()
        self._drawn = 0

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def tick(self, label: str = "") -> None:
        """Advances by one unit and redraws the bar with ``label``.

        Examples:
            >>> import io
            >>> out = io.StringIO()
            >>> bar = Progress(4, stream=out, enabled=True, width=8)
            >>> bar.tick("CartPole-v1")
            >>> out.getvalue().startswith("[##------] 1/4 ")
            True
        """
        self.done += 1
        if not self.enabled:
            return
        frac = min(1.0, self.done / self.total) if self.total else 1.0
        full = int(round(frac * self.width))
        elapsed = int(time.perf_counter() - self._start)
        line = f"[{'#' * full}{'-' * (self.width - full)}] {self.done}/{self.total} {elapsed // 60}:{elapsed % 60:02d} {label}"
        self._clear()
        self.stream.write(line)
        self.stream.flush()
        self._drawn = len(line)

    def log(self, line: str) -> None:
        """Prints ``line`` above the bar.

        Examples:
            >>> import io
            >>> out = io.StringIO()
            >>> bar = Progress(2, stream=out, enabled=False)
            >>> bar.log("batch 16: done")
            >>> out.getvalue().splitlines()
            ['batch 16: done']
        """
        self._clear()
        self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Erases the bar.

        Examples:
            >>> import io
            >>> out = io.StringIO()
            >>> bar = Progress(2, stream=out, enabled=True, width=4)
            >>> bar.tick()
            >>> bar.close()
            >>> out.getvalue().rsplit(chr(13), 1)[-1]  # nothing after the last carriage return
            ''
        """
        if self.enabled:
            self._clear()
            self.stream.flush()
