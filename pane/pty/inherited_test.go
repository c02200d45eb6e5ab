package pty

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/herdr-pi/herdr-pi/pane/pty/leader"
)

// Descriptors the wrapper was started with (a jobserver's, `3>log` on the
// command line) reach the command as they reach the bare command, fd 3
// among them, which the leader's start report must not take.
func TestInheritedDescriptorsReachTheCommand(t *testing.T) {
	dir := t.TempDir()
	var files []*os.File
	for _, name := range []string{"three", "four"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	o := newOuter(t, 24, 80)
	w := wrapperCommand(t, "sh", "-c", `echo to-three >&3 && echo to-four >&4`)
	w.Stdin, w.Stdout, w.Stderr = o.tty, o.tty, o.tty
	w.ExtraFiles = files // fds 3 and 4 of the wrapper
	if err := w.Run(); err != nil {
		t.Errorf("wrapper: %v; screen: %q", err, o.output())
	}
	for name, want := range map[string]string{"three": "to-three\n", "four": "to-four\n"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want {
			t.Errorf("the command's write to the wrapper's inherited %s descriptor left %q in its file, want %q; screen: %q", name, b, want, o.output())
		}
	}
}

// The command's parent, the session leader, goes by its own name where
// ps, top and pstree show a process's short name, not by "exe", the
// name of the /proc/self/exe it was started through.
func TestTheLeaderIsNamedInPs(t *testing.T) {
	o := newOuter(t, 24, 80)
	_, done := start(t, Options{Argv: []string{"sh", "-c", `printf 'parent:%s:end' "$(cat /proc/$PPID/comm)"`}, Stdin: o.tty, Stdout: o.tty})
	if got := statusOfErr(t, wait(t, done)); got != 0 {
		t.Fatalf("exit status %d; screen %q", got, o.output())
	}
	o.waitFor(":end")
	if got := between(o.output(), "parent:", ":end"); got != leader.Arg0 {
		t.Fatalf("the command's parent is named %q, want %q", got, leader.Arg0)
	}
}
