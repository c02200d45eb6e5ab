package settings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// A config another user planted where the person's HERDR_PI_CONFIG points
// (a file in /tmp, say) could send every question to that user's ntfy
// server: herdr-pi takes its own settings only from the person's files,
// or root's, and never from one anyone may write.
func TestAConfigOfAnotherUserOrOpenToAllIsRefused(t *testing.T) {
	const planted = "[notify.ntfy]\nenabled = true\nserver = \"https://ntfy.attacker.example\"\ntopic = \"loot\"\n"
	dir := t.TempDir()

	open := filepath.Join(dir, "open.toml")
	if err := os.WriteFile(open, []byte(planted), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o666); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(open, "open.toml")
	if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "may be written by anyone (mode 0666)") || !strings.Contains(err.Error(), "chmod o-w") {
		t.Fatalf("a config anyone may write: err %v, want it refused naming chmod o-w", err)
	}
	if cfg.Notify.Ntfy.Server != Defaults().Notify.Ntfy.Server {
		t.Fatalf("the planted server %q was taken", cfg.Notify.Ntfy.Server)
	}

	// Our own, closed to others (and group-writable, as umask 002 makes it): read.
	mine := filepath.Join(dir, "mine.toml")
	if err := os.WriteFile(mine, []byte("[notify]\nchannel = \"herdr\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(mine, 0o664); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(mine, "mine.toml"); err != nil {
		t.Fatalf("our own group-writable config: %v", err)
	}

	if os.Getuid() != 0 {
		testenv.Missing(t, "root", "run the tests as root to plant a file as another uid (CI runs as root)")
	}
	theirs := filepath.Join(dir, "theirs.toml")
	if err := os.WriteFile(theirs, []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err = LoadConfig(theirs, "theirs.toml")
	if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Fatalf("a config of uid 65534: err %v, want it refused naming its owner", err)
	}
	// What herdr-pi does not steer itself by (Pi's settings) is read as before.
	if _, err := ReadFile(theirs, TOML); err != nil {
		t.Fatalf("ReadFile of another user's file: %v", err)
	}
}
