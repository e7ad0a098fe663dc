"""Stage-by-stage progress of a long command on stderr: one line per stage when it starts and
when it ends (with its time) and, on a terminal, a tqdm bar over the stages naming the current one."""
from __future__ import annotations

import sys
import time


class StageBar:
    """``StageBar(total, prog)``: call :meth:`stage` with each stage's description as it starts,
    :meth:`close` at the end (the last stage's line). Disabled: every call does nothing."""

    def __init__(self, total: int, prog: str = "depthcert", enabled: bool = True, file=None):
        self.file = sys.stderr if file is None else file
        self.prog, self.total, self.done, self.current, self.t0 = prog, total, 0, None, time.perf_counter()
        self.enabled, self.bar = enabled, None
        if enabled and getattr(self.file, "isatty", lambda: False)():
            from tqdm import tqdm   # text bars (tqdm.auto warns in a notebook without ipywidgets)

            self.bar = tqdm(total=total, desc=prog, unit="stage", file=self.file, leave=False,
                            bar_format="{desc} {n_fmt}/{total_fmt} stages [{elapsed}]")

    def _say(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=self.file)
        else:
            print(line, file=self.file, flush=True)

    def stage(self, text: str) -> None:
        """Stage ``text`` starts (the one before it is finished)."""
        if not self.enabled:
            return
        self._finish()
        self.current, self.t0 = text, time.perf_counter()
        if self.bar is not None:
            self.bar.set_description_str(f"{self.prog} [{self.done + 1}/{self.total}] {text}")
        else:
            self._say(f"{self.prog} [{self.done + 1}/{self.total}] {text} ...")

    def _finish(self) -> None:
        if self.current is not None:
            self.done += 1
            self._say(f"{self.prog} [{self.done}/{self.total}] {self.current}: {time.perf_counter() - self.t0:.1f} s")
            if self.bar is not None:
                self.bar.update(1)
            self.current = None

    def close(self) -> None:
        """The last stage is finished; the bar goes (the stage lines stay)."""
        if self.enabled:
            self._finish()
        if self.bar is not None:
            self.bar.close()
