package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
