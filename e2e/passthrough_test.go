package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// randomTerminalBytes makes n bytes of printable text mixed with newlines,
// carriage returns, escape sequences (24-bit colour, the alternate screen,
// synchronized output, OSC 8 hyperlinks, an OSC 52 clipboard write), UTF-8
// (wide, combining, emoji joined by ZWJ) and invalid UTF-8 (a stray
// continuation byte, a cut character, an overlong form, 0xff), from a fixed
// seed. The pty cuts all of it across reads wherever it likes.
func randomTerminalBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pieces := [][]byte{
		[]byte("\x1b[31m"), []byte("\x1b[0m"), []byte("\x1b[2K"), []byte("\x1b[?2026h"), []byte("\x1b[?2026l"),
		[]byte("\x1b]0;title\x07"), []byte("\x1b[10;5H"), []byte("\r\n"), []byte("\n"), []byte("\r"),
		[]byte("─"), []byte("⠋"), []byte("状"), []byte("😀"), []byte("\t"), []byte("\x1b"),
		[]byte("\x1b[38;2;255;128;0m"), []byte("\x1b[48;2;30;30;46m"), []byte("\x1b[?1049h"), []byte("\x1b[?1049l"),
		[]byte("\x1b]8;;https://example.com/a?b=c\x1b\\"), []byte("\x1b]8;;\x1b\\"),
		[]byte("\x1b]52;c;aGVyZHItcGkgY2xpcGJvYXJk\x07"), []byte("e\u0301"), []byte("👩\u200d💻"), []byte("🇫🇷"),
		[]byte("\x80"), []byte("\xe7\x8a"), []byte("\xc0\xaf"), []byte("\xff"),
	}
	out := make([]byte, 0, n)
	for len(out) < n {
		if r.IntN(8) == 0 {
			out = append(out, pieces[r.IntN(len(pieces))]...)
			continue
		}
		out = append(out, byte(0x20+r.IntN(0x5f)))
	}
	return out[:n]
}

// TestPassthroughIsByteIdentical: what `cat FILE` draws through herdr-pi
// wrap is exactly what the same cat draws under a bare pty.
func TestPassthroughIsByteIdentical(t *testing.T) {
	size := 50 << 20
	if testing.Short() {
		size = 4 << 20
	}
	file := filepath.Join(t.TempDir(), "screenful.bin")
	if err := os.WriteFile(file, randomTerminalBytes(size, 42), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(argv ...string) (sum [32]byte, n int64) {
		t.Helper()
		h := sha256.New()
		r, err := startOuter(outerOptions{Argv: argv, OnBytes: func(p []byte) { h.Write(p) }})
		if err != nil {
			t.Fatal(err)
		}
		status, err := r.wait(2 * time.Minute)
		if err != nil || status != 0 {
			t.Fatalf("%q: status %d, %v", argv, status, err)
		}
		copy(sum[:], h.Sum(nil))
		return sum, r.count()
	}
	bare, bareN := run("cat", file)
	wrapped, wrappedN := run("herdr-pi", "wrap", "--", "cat", file)
	if bareN < int64(size) {
		t.Fatalf("bare pty delivered only %d of %d bytes", bareN, size)
	}
	if bare != wrapped || bareN != wrappedN {
		t.Fatalf("output differs: bare %d bytes sha256 %x, wrapped %d bytes sha256 %x", bareN, bare, wrappedN, wrapped)
	}
	t.Logf("%d bytes in, %d bytes out, identical (sha256 %x)", size, bareN, bare[:8])
}

// TestPassthroughSmallPieces: a child that writes in tiny pieces with pauses
// arrives intact and in order.
func TestPassthroughSmallPieces(t *testing.T) {
	script := filepath.Join(t.TempDir(), "pieces")
	if err := os.WriteFile(script, []byte("print a\nsleep 5ms\nprint \\e[3;b\nsleep 5ms\nprint 1mc\\e[0m\nprint 状\nsleep 5ms\nprint done\\r\\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := startOuter(outerOptions{Keep: true, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", script}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d %v", status, err)
	}
	if got := r.bytes(); !bytes.Equal(got, []byte("a\x1b[3;b1mc\x1b[0m状done\r\r\n")) {
		t.Fatalf("got %q", got)
	}
}

// TestWrapPassesTheEnvironmentUntouched: the child sees the environment
// the wrapper was given — CI unset, set but empty, or set — whatever the
// wrapper's own initialisers did to it for their own sake.
func TestWrapPassesTheEnvironmentUntouched(t *testing.T) {
	for _, tc := range []struct {
		name string
		ci   []string // CI's entry in the environment, if any
		want string
	}{
		{"unset", nil, "[unset]"},
		{"empty", []string{"CI="}, "[]"},
		{"set", []string{"CI=true"}, "[true]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "CI=") {
					env = append(env, kv)
				}
			}
			env = append(env, tc.ci...)
			r, err := startOuter(outerOptions{Keep: true, Env: env, Argv: []string{"herdr-pi", "wrap", "--", "sh", "-c", `printf '[%s]' "${CI-unset}"`}})
			if err != nil {
				t.Fatal(err)
			}
			if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
				t.Fatalf("status %d, %v", status, err)
			}
			if got := string(r.bytes()); !strings.Contains(got, tc.want) {
				t.Fatalf("the child saw %q, want %s", got, tc.want)
			}
		})
	}
}

// TestWrapInAHugeWindow: a terminal that claims 65535x65535 gets a wrapper
// that starts, runs the child and exits like any other; its shadow screen
// is bounded (pane/screen MaxRows, MaxCols), not the size claimed.
func TestWrapInAHugeWindow(t *testing.T) {
	r, err := startOuter(outerOptions{Keep: true, Rows: 65535, Cols: 65535, Argv: []string{"herdr-pi", "wrap", "--", "sh", "-c", "stty size"}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(time.Minute); err != nil || status != 0 {
		t.Fatalf("status %d, %v (output %q)", status, err, r.bytes())
	}
	if got := string(r.bytes()); !strings.Contains(got, "65535 65535") {
		t.Fatalf("the child saw the size %q, want the terminal's own 65535 65535", got)
	}
}

// TestWrapKeepsTheSignalsItWasStartedWithIgnored: a signal the person's
// shell left ignored for the agent (nohup, `trap "" INT`, a job started
// with & by a script) is ignored in the agent under wrap as in the bare
// agent. Go keeps an inherited ignore of SIGHUP and SIGINT only until the
// program asks for the signal; the others its runtime takes over at start
// (docs/herdr-setup.md, "What the agent inherits from wrap").
func TestWrapKeepsTheSignalsItWasStartedWithIgnored(t *testing.T) {
	r, err := startOuter(outerOptions{Keep: true, Argv: []string{"sh", "-c",
		`trap "" INT HUP; exec herdr-pi wrap -- grep SigIgn /proc/self/status`}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v; screen %q", status, err, r.bytes())
	}
	out := string(r.bytes())
	_, rest, ok := strings.Cut(out, "SigIgn:")
	var mask uint64
	if !ok {
		t.Fatalf("no SigIgn on the screen %q", out)
	}
	if _, err := fmt.Sscanf(rest, "%x", &mask); err != nil {
		t.Fatalf("SigIgn on the screen %q: %v", out, err)
	}
	for _, s := range []unix.Signal{unix.SIGINT, unix.SIGHUP} {
		if mask&(1<<(s-1)) == 0 {
			t.Errorf("%v is not ignored in the agent (SigIgn %x), though wrap was started with it ignored", s, mask)
		}
	}
}
