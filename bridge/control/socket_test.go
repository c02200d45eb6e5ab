package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Every socket herdr-pi serves is made by ListenPrivate: 0600 whatever the
// umask, never stolen from a listener already there, and gone once closed.
func TestListenPrivateMakesA0600SocketItRemovesOnClose(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	path := filepath.Join(shortDir(t), "p.sock")
	ln, err := ListenPrivate(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a 0600 socket", fi.Mode())
	}
	if _, err := ListenPrivate(path); err == nil || !strings.HasPrefix(err.Error(), "listen on "+path+": ") {
		t.Fatalf("a second ListenPrivate on %s: %v, want a listen error naming it", path, err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the refused second listen took the first one's socket: %v", err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("socket still there after Close: %v", err)
	}
}
