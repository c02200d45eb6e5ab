package procstat

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A real line from a shell, cut short at each place a caller cares about,
// and names built to mislead a parser that looks for the first ')'.
func TestParse(t *testing.T) {
	full := Stat{State: 'S', PPID: 1, PGRP: 12, Session: 12, TTYNr: 0x8801, TPGID: 40, Start: 4321, Fields: 20}
	for _, c := range []struct {
		name string
		line string
		want Stat
		ok   bool
	}{
		{"whole", "12 (sh) S 1 12 12 34817 40 4194560 1 2 3 4 5 6 7 8 20 0 1 0 4321 123 45\n", full, true},
		{"name with ) and spaces", "12 (a) S 9 9 9 0 -1 (b)) S 1 12 12 34817 40 4194560 1 2 3 4 5 6 7 8 20 0 1 0 4321 0\n", full, true},
		{"name is ) ", "7 () ) R 2 7 7 0 -1\n", Stat{State: 'R', PPID: 2, PGRP: 7, Session: 7, TPGID: -1, Fields: 6}, true},
		{"zombie", "99 (pi) Z 12 99 12 0 -1 4227084 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n", Stat{State: 'Z', PPID: 12, PGRP: 99, Session: 12, TPGID: -1, Start: 777, Fields: 20}, true},
		{"stopped by tracing", "5 (x) t 4", Stat{State: 't', PPID: 4, Fields: 2}, true},
		{"cut after the state", "12 (sh) S", Stat{State: 'S', Fields: 1}, true},
		{"cut after the name", "12 (sh) ", Stat{}, true},
		{"name only", "12 (sh)", Stat{}, true},
		{"cut before start", "12 (sh) S 1 12 12 34817 40 4194560 1 2 3 4 5 6 7 8 20 0 1 0", Stat{State: 'S', PPID: 1, PGRP: 12, Session: 12, TTYNr: 0x8801, TPGID: 40, Fields: 19}, true},
		{"a field that is no number stops the read", "12 (sh) S 1 x 12", Stat{State: 'S', PPID: 1, Fields: 2}, true},
		{"no end to the name", "12 (sh S 1", Stat{}, false},
		{"empty", "", Stat{}, false},
	} {
		got, ok := Parse([]byte(c.line))
		if got != c.want || ok != c.ok {
			t.Errorf("%s: Parse(%q) = %+v, %v; want %+v, %v", c.name, c.line, got, ok, c.want, c.ok)
		}
	}
}

// Parse is what every reader of /proc goes through: whatever the bytes,
// it neither panics nor reads fields before the name's end.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"12 (sh) S 1 12 12 34817 40 4194560 1 2 3 4 5 6 7 8 20 0 1 0 4321 123 45\n",
		"12 (a) S 9 9 9 0 -1 (b)) S 1 12 12", "12 (sh) ", ")", "(", "", ") \n\t", "1 (x) Z 99999999999999999999",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		st, ok := Parse(line)
		if !ok && st != (Stat{}) {
			t.Fatalf("not ok, yet %+v", st)
		}
		if st.Fields < 0 || st.Fields > 20 {
			t.Fatalf("Fields %d", st.Fields)
		}
		if st.Fields == 0 && st.State != 0 {
			t.Fatalf("a state without its field: %+v", st)
		}
	})
}

// Read sees this process as the kernel does, a stopped child as stopped,
// and a thread through its task directory; a pid that is gone is an error.
func TestRead(t *testing.T) {
	self, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self.PPID != os.Getppid() || self.PGRP != unix.Getpgrp() || self.Fields != 20 || self.Start == 0 {
		t.Fatalf("Read(self) = %+v; ppid %d, pgrp %d", self, os.Getppid(), unix.Getpgrp())
	}
	if sid, _ := unix.Getsid(0); self.Session != sid {
		t.Fatalf("Read(self).Session = %d, want %d", self.Session, sid)
	}
	task, err := ReadTask(os.Getpid(), unix.Gettid())
	if err != nil || task.PPID != self.PPID || task.State != 'R' {
		t.Fatalf("ReadTask(self) = %+v, %v", task, err)
	}

	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// A stop is not immediate: waitid with WSTOPPED returns once it is.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	child, err := Read(cmd.Process.Pid)
	if err != nil || child.State != 'T' || child.PPID != os.Getpid() || child.Start < self.Start {
		t.Fatalf("Read(stopped child) = %+v, %v", child, err)
	}

	if _, err := Read(1 << 30); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Read(no such pid): %v, want ENOENT", err)
	}
}

// What one read costs: pane/pty reads a thread's line on the copy loop's
// forced path. The line's buffer is on the stack; the one allocation is
// the path made into a C string by the open.
func BenchmarkReadPath(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadPath("/proc/self/stat"); err != nil {
			b.Fatal(err)
		}
	}
}
