package pty

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The command's terminal starts in the mode the person's terminal is in,
// as under util-linux script and as for the bare command: a person's stty
// settings (an erase key of ^H, flow control off, UTF-8 aware erasing)
// hold for the agent too, not the kernel's defaults for a new pty.
func TestTheCommandsTerminalStartsInThePersonsMode(t *testing.T) {
	o := newOuter(t, 24, 80)
	mode := o.termios()
	mode.Cc[unix.VERASE] = 0x08 // ^H
	mode.Cc[unix.VINTR] = 0x0b  // ^K
	mode.Iflag &^= unix.IXON
	mode.Iflag |= unix.IUTF8
	mode.Lflag &^= unix.ECHOCTL
	if err := unix.IoctlSetTermios(int(o.tty.Fd()), unix.TCSETS, &mode); err != nil {
		t.Fatal(err)
	}
	before := o.termios()
	// The command prints its terminal's mode as numbers, and once more
	// on stty's words for what a person would look at.
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `stty -g | tr : ' ' | sed 's/^/mode:/;s/$/:end/'; stty -a | tr '\n' ' ' | sed 's/^/words:/;s/$/:end/'`},
		Stdin: o.tty, Stdout: o.tty,
	})
	if got := statusOfErr(t, wait(t, done)); got != 0 {
		t.Fatalf("exit status %d; screen %q", got, o.output())
	}
	o.waitCount(":end", 2) // both lines have reached the screen
	out := o.output()
	words := between(out, "words:", ":end")
	for _, w := range []string{"erase = ^H", "intr = ^K", "-ixon", " iutf8", "-echoctl"} {
		if !strings.Contains(words, w) {
			t.Errorf("the command's terminal lacks %q of the person's mode; stty -a there: %s", w, words)
		}
	}
	var iflag, oflag, cflag, lflag uint32
	if _, err := fmt.Sscanf(between(out, "mode:", ":end"), "%x %x %x %x", &iflag, &oflag, &cflag, &lflag); err != nil {
		t.Fatalf("no stty -g mode on the screen %q: %v", out, err)
	}
	if iflag != before.Iflag || oflag != before.Oflag || cflag != before.Cflag || lflag != before.Lflag {
		t.Errorf("the command's terminal flags are %x %x %x %x, the person's %x %x %x %x",
			iflag, oflag, cflag, lflag, before.Iflag, before.Oflag, before.Cflag, before.Lflag)
	}
	if after := o.termios(); after != before {
		t.Fatalf("terminal mode not restored:\nbefore %+v\nafter  %+v", before, after)
	}
}

// between is the text of s after the first from and before the next to.
func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	got, _, _ := strings.Cut(rest, to)
	return got
}
