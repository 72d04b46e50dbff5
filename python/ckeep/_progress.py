"""Progress of long calls (``progress=True``): a tqdm bar when tqdm is installed, else one
line on stderr rewritten at most five times a second."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Optional, Union

Progress = Union[bool, Callable[[str, int, int], Any], None]


class _StderrLine:
    """``stage: done/total`` on one stderr line, ended when a stage completes."""

    def __init__(self) -> None:
        self._stage: str | None = None
        self._shown = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        finished = total > 0 and done >= total
        if stage == self._stage and not finished and now - self._shown < 0.2:
            return
        self._stage, self._shown = stage, now
        of = f"/{total}" if total else ""
        sys.stderr.write(f"\r{stage}: {done}{of}" + ("\n" if finished else ""))
        sys.stderr.flush()


class _Tqdm:
    """One tqdm bar per stage."""

    def __init__(self, tqdm: Any) -> None:
        self._tqdm = tqdm
        self._bar: Any = None
        self._stage: str | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self._stage:
            if self._bar is not None:
                self._bar.close()
            self._stage = stage
            self._bar = self._tqdm(total=total or None, desc=stage)
        self._bar.update(done - self._bar.n)
        if total and done >= total:
            self._bar.close()


def callback(progress: Progress) -> Optional[Callable[[str, int, int], Any]]:
    """The callable to hand to the engine for ``progress``: ``None``/``False`` for none,
    ``True`` for a bar, or the caller's own ``f(stage, done, total)``."""
    if progress is None or progress is False:
        return None
    if progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return _StderrLine()
        return _Tqdm(tqdm)
    if callable(progress):
        return progress
    raise TypeError("progress must be a bool or a callable f(stage, done, total)")
