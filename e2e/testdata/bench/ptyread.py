#!/usr/bin/env python3
"""An independent throughput reader for BENCHMARKS.md (make bench).

Runs ARGV under a new pty (pty.fork) with a 200x50 window, reads the master
with 64 KiB os.read calls until the child's side is gone, waits for the
child, and prints "SECONDS BYTES STATUS". Nothing else: it is the baseline
a Python user would write, not tuned for any wrapper.

    python3 ptyread.py ARGV...
"""
import fcntl
import os
import pty
import struct
import sys
import termios
import time


def main(argv):
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        os.execvp(argv[0], argv)
    n = 0
    while True:
        try:
            b = os.read(fd, 65536)
        except OSError:  # EIO: every slave fd is closed
            break
        if not b:
            break
        n += len(b)
    _, status = os.waitpid(pid, 0)
    print(f"{time.perf_counter() - t0:.6f} {n} {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    main(sys.argv[1:])
