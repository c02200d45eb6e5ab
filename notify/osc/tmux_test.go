package osc

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// golden compares got with testdata/<test name>.golden, one strconv-quoted
// line per sequence so control bytes diff readably; -update rewrites it.
func golden(t *testing.T, got string) {
	t.Helper()
	path := filepath.Join("testdata", t.Name()+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("%s line %d:\n got  %s\n want %s", path, i+1, g, w)
			}
		}
	}
}

func TestEncodingsGolden(t *testing.T) {
	n := Notification{Title: "Pi needs your input", Body: "Pi needs your input · herdr-pi", ID: "pi-ask-w1-p2"}
	var b strings.Builder
	for _, p := range Protocols {
		for levels := range 3 {
			fmt.Fprintf(&b, "%s tmux=%d %s\n", p, levels, strconv.Quote(string(WrapTmux(Encode(p, n), levels))))
		}
	}
	golden(t, b.String())
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
