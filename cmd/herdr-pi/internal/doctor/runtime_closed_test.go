package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// `su` (without -l) keeps XDG_RUNTIME_DIR, and XDG_STATE_HOME when set: the
// new user's herdr-pi is pointed into the old user's /run/user/<uid>, mode
// 0700, which it may not even look into. wrap then runs the agent without
// its control socket and says "`herdr-pi doctor runtime` says why and what
// to do"; doctor must name the directory that is closed and the variable to
// change, not "check that you can read <a directory that does not exist>".
func TestDoctorRuntimeRowsNameTheDirectoryClosedToUs(t *testing.T) {
	w := doctortest.New(t)
	// Open down to the home, as /run/user is; closed below it.
	if err := os.Chmod(filepath.Dir(w.Home), 0o755); err != nil {
		t.Fatal(err)
	}
	closed := filepath.Join(w.Home, "run-of-another")
	state := filepath.Join(w.Home, "state-of-another")
	for _, d := range []string{closed, state} {
		mkdir(t, d, 0o700)
	}
	w.Set("XDG_RUNTIME_DIR="+closed, "XDG_STATE_HOME="+state)
	rows := map[string]Row{}
	testenv.AsUnprivileged(t, closed, func() {
		for _, r := range runtimeChecks(t.Context(), input(w, time.Second)) {
			rows[r.Name] = r
		}
	})
	if len(rows) == 0 {
		return // AsUnprivileged ended the test
	}
	for name, want := range map[string]string{
		"directory": "fail|" + closed + " is closed to you|point XDG_RUNTIME_DIR at a directory of yours",
		"registry":  "fail|" + closed + " is closed to you|point XDG_RUNTIME_DIR at a directory of yours",
		"log":       "warn|" + state + " is closed to you|point XDG_STATE_HOME at a directory of yours",
	} {
		checkRowWant(t, rows[name], want)
		if r := rows[name]; strings.Contains(r.Fix, "check that you can read") {
			t.Errorf("%s: fix %q offers no way out", name, r.Fix)
		}
	}
}

// The log's directory is not the runtime directory: when it is someone
// else's, the way out is XDG_STATE_HOME. XDG_RUNTIME_DIR moves the sockets,
// never the log.
func TestDoctorLogRowOfSomeoneElsesDirectoryNamesXDGStateHome(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Missing(t, "root", "run the tests as root to give a directory to another uid (CI runs as root)")
	}
	w := doctortest.New(t)
	dir := w.Paths().StateDir
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	mkdir(t, dir, 0o700)
	if err := os.Chown(dir, testenv.Nobody, testenv.Nobody); err != nil {
		t.Fatal(err)
	}
	r := logRow(input(w, time.Second))
	checkRowWant(t, r, "warn|the log private directory "+dir+" belongs to uid 65534, not to us (uid 0)|remove "+dir+" (it belongs to uid 65534: ask its owner or root), or point XDG_STATE_HOME at a directory of your own")
	if strings.Contains(r.Detail+r.Fix, "XDG_RUNTIME_DIR") {
		t.Errorf("the log row sends the person to XDG_RUNTIME_DIR, which does not move the log:\n  %s\n  fix: %s", r.Detail, r.Fix)
	}
}
