#!/usr/bin/env python3
"""An independent throughput reader for BENCHMARKS.md (make bench).

Runs ARGV under a new pty (pty.fork) with a 200x50 window, reads the master
with 64 KiB os.read calls until the child's side is gone, waits for the
child, and prints "SECONDS BYTES STATUS CPU", CPU being the user and system
seconds of the child and the descendants it waited for (this reader's own
time not counted). Nothing else: it is the baseline a Python user would
write, not tuned for any wrapper.

    python3 ptyread.py ARGV...
"""
import fcntl
import os
import pty
import resource
import struct
import sys
import termios
import time


def main(argv):
    # Children waited for before this point (an interpreter's own start-up
    # may have some) are not the child's: count from here.
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
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
    took = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime
    print(f"{took:.6f} {n} {os.waitstatus_to_exitcode(status)} {cpu:.6f}")


if __name__ == "__main__":
    main(sys.argv[1:])
