package osc

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/golden"
)

func TestEncodingsGolden(t *testing.T) {
	n := Notification{Title: "Pi needs your input", Body: "Pi needs your input · herdr-pi", ID: "pi-ask-w1-p2"}
	var b strings.Builder
	for _, p := range Protocols {
		for levels := range 3 {
			fmt.Fprintf(&b, "%s tmux=%d %s\n", p, levels, strconv.Quote(string(WrapTmux(Encode(p, n), levels))))
		}
	}
	golden.Check(t, golden.Path(t), b.String())
}

// The DCS form of notifications-and-sentinel.md §26: the reference's OSC 9
// example with ST instead of BEL.
func TestWrapTmux(t *testing.T) {
	seq := Encode(OSC9, Notification{Body: "hello"})
	hexDiff(t, "level 0", WrapTmux(seq, 0), seq)
	hexDiff(t, "level 1", WrapTmux(seq, 1), []byte("\x1bPtmux;\x1b\x1b]9;hello\x1b\x1b\\\x1b\\"))
	two := WrapTmux(seq, 2)
	hexDiff(t, "level 2", two, []byte("\x1bPtmux;\x1b\x1bPtmux;\x1b\x1b\x1b\x1b]9;hello\x1b\x1b\x1b\x1b\\\x1b\x1b\\\x1b\\"))
	// Unwrapping as tmux does, one level at a time, gives the sequence back.
	inner, ok := unwrapDCS(two)
	if !ok {
		t.Fatal("level 2 does not unwrap")
	}
	inner, ok = unwrapDCS(inner)
	if !ok || !bytes.Equal(inner, seq) {
		t.Fatalf("unwrapped twice: %q", inner)
	}
}
