package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// The demo needs no Herdr, Pi or network, and no short TMPDIR either: its
// stand-in for Herdr listens on a unix socket, whose path Linux caps at 107
// bytes, so under a long TMPDIR it listens in /tmp instead.
func TestStandInListensUnderALongTMPDIR(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("x", 100))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	h, err := startHerdrStandIn(func(string, json.RawMessage) {})
	if err != nil {
		t.Fatalf("stand-in under a %d-byte TMPDIR: %v", len(long), err)
	}
	defer h.close()
	if len(h.socket) > 107 {
		t.Errorf("socket path %d bytes: %s", len(h.socket), h.socket)
	}
}

// A TMPDIR the demo cannot use is named, with the way out, before anything
// starts.
func TestRunNamesAnUnusableTMPDIR(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	t.Setenv("TMPDIR", missing)
	err := Run(context.Background(), Options{Out: &bytes.Buffer{}, Wrap: []string{"/bin/false"}})
	if err == nil || !strings.Contains(err.Error(), "TMPDIR="+missing) || !strings.Contains(err.Error(), "writable directory") {
		t.Fatalf("got %v", err)
	}
}

// Under a relative TMPDIR the paths the demo hands its wrapper (the
// stand-in's socket, the temporary home) are still absolute: the wrapper
// runs in the demo project, not where the demo was started.
func TestStandInSocketIsAbsoluteUnderARelativeTMPDIR(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("rel", 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", "rel")
	h, err := startHerdrStandIn(func(string, json.RawMessage) {})
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	if !filepath.IsAbs(h.socket) {
		t.Errorf("socket %q is relative", h.socket)
	}
	if root := tempBase(); !filepath.IsAbs(root) {
		t.Errorf("temporary base %q is relative", root)
	}
}

// A TMPDIR others may write and that is not sticky is refused before
// anything is made there, with the way out: the demo's wrapper would refuse
// its runtime directory in it (anyone could swap it for theirs), so its
// agent would wait the whole timeout for a control socket it never gets.
func TestRunRefusesATMPDIROthersMayWrite(t *testing.T) {
	testenv.PermissiveUmask(t)
	top, err := os.MkdirTemp("/tmp", "hpdemo-top")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	open := filepath.Join(top, "open")
	if err := os.Chmod(top, 0o755); err != nil { // others reach what is below
		t.Fatal(err)
	}
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", open)
	err = Run(context.Background(), Options{Out: &bytes.Buffer{}, Wrap: []string{"/bin/false"}})
	for _, want := range []string{"TMPDIR=" + open, "not sticky", "chmod +t " + open} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to say %q", err, want)
		}
	}
	if left, _ := os.ReadDir(open); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}
