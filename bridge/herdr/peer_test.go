package herdr

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Herdr served by another user gets nothing: only our own uid or root
// may serve the socket, unless we are root (sudo in a person's pane).
func TestAllowedPeer(t *testing.T) {
	for _, c := range []struct {
		me, peer int
		ok       bool
	}{
		{1000, 1000, true},
		{1000, 0, true},
		{1000, 1001, false},
		{1000, 65534, false},
		{0, 1000, true},
		{0, 0, true},
	} {
		if got := allowedPeer(c.me, c.peer); got != c.ok {
			t.Errorf("uid %d talking to a socket served by uid %d: allowed %v, want %v", c.me, c.peer, got, c.ok)
		}
	}
}

// checkPeer reads the serving process's credentials from a real unix
// socket: our own listener passes, and a refusal is the foreign kind.
func TestCheckPeerOnARealSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "hp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // owned by the test: ends when ln closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c := NewClient(sock)
	conn, err := c.dial(t.Context())
	if err != nil {
		t.Fatalf("our own listener: %v", err)
	}
	conn.Close()
	foreign := &TransportError{Kind: c.dialKind(errForeignPeer), Socket: sock, Err: errForeignPeer}
	if foreign.Kind != FailForeign {
		t.Fatalf("kind %q, want %q", foreign.Kind, FailForeign)
	}
	for _, w := range []string{sock, "another user", "HERDR_SOCKET_PATH"} {
		if !strings.Contains(foreign.Error(), w) {
			t.Errorf("%q lacks %q", foreign, w)
		}
	}
}
