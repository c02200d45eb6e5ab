package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
	"github.com/herdr-pi/herdr-pi/settings"
)

// Herdr's config is a settings file like any other herdr-pi reads: only a
// regular file, at most 1 MiB. doctor read HERDR_CONFIG_PATH with a plain
// read: a named pipe there hung doctor for good (its 8 s budget and Ctrl-C
// alike wait for the check), /dev/zero would grow it without end (not
// tried here: the old read never stops), and a directory got the fix "fix
// the file".
func TestDoctorToastRowReadsOnlyARegularHerdrConfig(t *testing.T) {
	w := doctortest.New(t)
	fifo := filepath.Join(w.Home, "herdr.toml")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "warn|cannot read Herdr's config ~/herdr.toml: is a named pipe (FIFO), not a regular file|point HERDR_CONFIG_PATH at Herdr's config file"},
		{w.Home, "warn|cannot read Herdr's config ~: is a directory, not a file|point HERDR_CONFIG_PATH at Herdr's config file"},
	} {
		env := settings.EnvFrom(append(w.Env(), "HERDR_CONFIG_PATH="+tc.path))
		got := make(chan Row, 1)
		go func() { // owned by this test: it ends once the row is read, or once the pipe is opened below
			got <- toastRow(env, func(name, status, detail, fix string) Row {
				return Row{Name: name, Status: status, Detail: detail, Fix: fix}
			})
		}()
		select {
		case r := <-got:
			checkRowWant(t, r, tc.want)
			if strings.Contains(r.Fix, "fix the file") {
				t.Errorf("%s: fix %q for what is no file", tc.path, r.Fix)
			}
		case <-time.After(10 * time.Second):
			// Let the stuck read go (a writer opens and closes the
			// pipe) so the test can end.
			if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
				unix.Close(fd)
			}
			<-got
			t.Errorf("HERDR_CONFIG_PATH=%s: the toasts row did not come back within 10 s", tc.path)
		}
	}
	_ = os.Remove(fifo)
}

// A mistake in Herdr's config is said in the file's terms, on its line:
// not in Go's ("type mismatch for struct { Delivery *string … }",
// "destination has type string"), and an unclosed table header on its
// own line, not the next.
func TestDoctorToastRowSaysHerdrConfigMistakesInTheFilesTerms(t *testing.T) {
	w := doctortest.New(t)
	file := filepath.Join(w.Home, "herdr.toml")
	env := settings.EnvFrom(append(w.Env(), "HERDR_CONFIG_PATH="+file))
	for _, tc := range []struct{ data, want string }{
		{"[ui.toast\n", "warn|cannot read Herdr's config ~/herdr.toml:1: expected '.' or ']' to end table name|fix the mistake in ~/herdr.toml"},
		{"[ui]\ntoast = \"x\"\n", "warn|~/herdr.toml:2: [ui] toast must be a table, not a string|fix the mistake in ~/herdr.toml"},
		{"ui = 3\n", "warn|~/herdr.toml:1: ui must be a table, not a number|fix the mistake in ~/herdr.toml"},
		{"[ui.toast]\ndelivery = 1\n", "warn|~/herdr.toml:2: [ui.toast] delivery = 1 must be a string: \"off\", \"herdr\", \"terminal\" or \"system\"|fix the mistake in ~/herdr.toml"},
	} {
		if err := os.WriteFile(file, []byte(tc.data), 0o600); err != nil {
			t.Fatal(err)
		}
		r := toastRow(env, func(name, status, detail, fix string) Row {
			return Row{Name: name, Status: status, Detail: detail, Fix: fix}
		})
		checkRowWant(t, r, tc.want)
		if strings.Contains(r.Detail, "struct") || strings.Contains(r.Detail, "destination") || strings.Contains(r.Detail, "toml: line") {
			t.Errorf("%q: Go's words in %q", tc.data, r.Detail)
		}
	}
}
