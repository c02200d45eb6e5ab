package commands

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/logfile"
	"github.com/herdr-pi/herdr-pi/settings"
)

// The log's directory is private by the runtime directory's rule: made
// 0700 when missing; refused, not repaired, when others may enter it, and
// then nothing is written there.
func TestLogDirectoryIsPrivateOrUnused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		premade os.FileMode // 0: the directory does not exist yet
		written bool
		mode    os.FileMode // the directory's mode afterwards
	}{
		{"missing", 0, true, 0o700},
		{"ours and 0700", 0o700, true, 0o700},
		{"open to others", 0o755, false, 0o755},
		{"writable by others", 0o777, false, 0o777},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			paths := settings.Resolve(settings.Env{"HOME": home, "XDG_STATE_HOME": filepath.Join(home, "state")})
			if tc.premade != 0 {
				if err := os.MkdirAll(paths.StateDir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(paths.StateDir, tc.premade); err != nil {
					t.Fatal(err)
				}
			}
			l := openLog(paths, settings.Env{}, "info", "test")
			l.Printf("a line")
			l.Close()
			fi, err := os.Stat(filepath.Join(paths.StateDir, logfile.DefaultName))
			if written := err == nil; written != tc.written {
				t.Errorf("log written: %v, want %v", written, tc.written)
			} else if written && fi.Mode().Perm() != 0o600 {
				t.Errorf("log file mode %v, want 0600", fi.Mode().Perm())
			}
			if di, err := os.Stat(paths.StateDir); err != nil || di.Mode().Perm() != tc.mode {
				t.Errorf("directory mode %v (%v), want %v", di.Mode().Perm(), err, tc.mode)
			}
		})
	}
}
