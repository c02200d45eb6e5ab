package pty

import (
	"testing"
)

// A small Tail nobody reads during the run ends up holding the last bytes
// the child wrote, after they reached the terminal.
func TestTailKeepsTheLastOutput(t *testing.T) {
	o := newOuter(t, 24, 80)
	tail := NewTap(16)
	_, done := start(t, Options{Argv: []string{"sh", "-c", `printf 'a long beginning, then the end'`}, Stdin: o.tty, Stdout: o.tty, Tail: tail})
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	o.waitFor("then the end")
	var got []byte
	for _, s := range tail.Take().Segments {
		got = append(got, s.Data...)
	}
	if string(got) != "ng, then the end" {
		t.Fatalf("tail %q", got)
	}
}
