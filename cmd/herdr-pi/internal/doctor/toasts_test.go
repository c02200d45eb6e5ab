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
