"""Helpers shared by the real-browser page tests."""
from __future__ import annotations

import time


def wait_until(pred, timeout, what):
    """Poll ``pred()`` every 0.25 s until it returns something truthy (returned); fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
