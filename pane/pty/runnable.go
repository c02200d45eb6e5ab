package pty

import (
	"os"
	"strconv"

	"github.com/herdr-pi/herdr-pi/internal/procstat"
	"golang.org/x/sys/unix"
)

// foregroundRunnable reports whether the process in the foreground of the
// pty whose master is mfd may still be writing: whether any thread of the
// foreground process group's leader can run (state R) or waits
// uninterruptibly (D: a page-in on a machine short of memory). The copy
// loop asks only when a notification has waited out its quiet wait inside
// a sequence: an agent the machine starves half-way through a frame is
// then runnable, one that stopped there of its own accord sleeps (S) or is
// stopped (T), and only that one is really quiet.
//
// Every thread is looked at, not just the first: the thread that writes
// need not be the process's first one (a Go program's), and a first
// thread waiting on a futex for the others (a collection in Node) is
// still half-way through. It is the group leader alone, though: a
// foreground job's other processes (a pipeline's later stages) are not
// looked for, which would mean reading every process on the machine. Any
// doubt says "not runnable", the old answer: the notification then goes
// out after the quiet wait as before.
//
// Its cost is one ioctl, a directory read and one small read per thread
// (15–18 µs for a sleeping sh, 35–95 µs for Node's 7 threads on a loaded
// 2-core machine: BenchmarkForegroundRunnable), paid at most once a quiet
// wait (50 ms) while a notification waits inside a sequence; never in the
// loop's passes otherwise.
func foregroundRunnable(mfd int) bool {
	pgid, err := unix.IoctlGetInt(mfd, unix.TIOCGPGRP)
	if err != nil || pgid <= 0 {
		return false
	}
	task := "/proc/" + strconv.Itoa(pgid) + "/task/"
	d, err := os.Open(task)
	if err != nil {
		return false // the group's leader is gone
	}
	tids, err := d.Readdirnames(-1)
	_ = d.Close()
	if err != nil {
		return false
	}
	for _, tid := range tids {
		switch threadState(task + tid + "/stat") {
		case 'R', 'D':
			return true
		}
	}
	return false
}

// threadState is the state letter of /proc/PID/task/TID/stat at path, or
// 0 when it cannot be read (the thread has ended).
func threadState(path string) byte {
	st, err := procstat.ReadPath(path)
	if err != nil {
		return 0
	}
	return st.State
}

// stateAfterName is the state letter in the start of a stat line, 0 when
// the line has none.
func stateAfterName(stat []byte) byte {
	st, _ := procstat.Parse(stat)
	return st.State
}
