"""Waiting on the executor's futures without blocking Ctrl-C."""

from __future__ import annotations

from concurrent.futures import wait

WAIT_STEP = 0.25  # the main thread never blocks longer than this (Ctrl-C is handled between waits)


def wait_for(future):
    """A future's value, waited for in short steps so that Ctrl-C is seen between them."""
    while not future.done():
        wait([future], timeout=WAIT_STEP)
    return future.result()
