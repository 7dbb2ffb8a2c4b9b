"""Shared set-up: the rlstore address comes from RLSTORE_ADDR (the Go test
integrations/TestPython starts rlstore and sets it). Without it the tests
skip, unless CI=true, where a skip would hide a broken set-up."""

import itertools
import os
import time
import unittest

ADDR = os.environ.get("RLSTORE_ADDR", "")
if not ADDR and os.environ.get("CI") == "true":
    raise RuntimeError("RLSTORE_ADDR is not set (CI=true forbids skipping)")

needs_rlstore = unittest.skipUnless(ADDR, "RLSTORE_ADDR is not set: start rlstore and set it to host:port")

URI = "rlstore://" + ADDR

_seq = itertools.count()


def unique(name):
    """A name no other test, nor an earlier run, uses."""
    return "%s-%d-%d-%d" % (name, os.getpid(), time.time_ns(), next(_seq))


def clear_of_window_edge(window=10, margin=0.5):
    """Waits out the last margin seconds of an epoch-aligned window, so a
    fixed-window vector's hits all land in one window. (It orders the test
    against the wall clock, not against another thread.)"""
    left = window - time.time() % window
    if left < margin:
        time.sleep(left)
