package demo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// The stand-in's socket follows the rule of every socket herdr-pi serves:
// it is 0600 in a 0700 directory, and another uid is turned away by the
// kernel's peer credentials before a byte is read or answered, even when
// the directory and socket were opened up (a mistake, or a process that
// got a descriptor). The demo's wrapper reports to it, and what it is
// told feeds the timeline on the screen.
func TestStandInSocketIsPrivateAndRefusesAnotherUID(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	requests := make(chan string, 4)
	h, err := startHerdrStandIn(func(method string, _ json.RawMessage) { requests <- method })
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	for path, want := range map[string]os.FileMode{filepath.Dir(h.socket): 0o700 | os.ModeDir, h.socket: 0o600 | os.ModeSocket} {
		if fi, err := os.Lstat(path); err != nil || fi.Mode() != want {
			t.Fatalf("%s: %v (%v), want %v", path, fi.Mode(), err, want)
		}
	}
	if err := os.Chmod(filepath.Dir(h.socket), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	out := testenv.DialAsNobody(t, h.socket, `{"id":"1","method":"ping","params":{}}`)
	if !strings.Contains(out, `reply: ""`) || strings.Contains(out, "err: <nil>") {
		t.Fatalf("uid %d got an answer from the stand-in: %s", testenv.Nobody, out)
	}
	select {
	case m := <-requests:
		t.Fatalf("a request of uid %d reached the timeline: %s", testenv.Nobody, m)
	default:
	}
}
