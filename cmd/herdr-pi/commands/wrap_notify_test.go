package commands

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/logfile"
	"github.com/herdr-pi/herdr-pi/settings"
)

// A [notify] channel that cannot work in this place — the terminal's
// sequence inside Herdr, which swallows it; Herdr's toast outside Herdr —
// is said in the log with the fix, as doctor says it, not only as the
// setting's name: the person who wonders why nothing shows finds the
// reason there.
func TestWrapLogsAChannelThatCannotWorkHere(t *testing.T) {
	for _, c := range []struct {
		channel string
		inHerdr bool
		want    string
	}{
		{"terminal", true, `notify.channel = "terminal": Herdr does not pass OSC notifications from a pane to your terminal, so these will not show; set notify.channel to "auto"`},
		{"herdr", false, `notify.channel = "herdr": notify.channel is "herdr" but this is not a complete Herdr pane`},
	} {
		dir := t.TempDir()
		log := logfile.Open(logfile.Options{Dir: dir, Tag: "wrap"})
		cfg := settings.Defaults()
		cfg.Notify.Channel = c.channel
		h := settings.Herdr{SocketPath: filepath.Join(dir, "none.sock"), PaneID: "w1:p1"}
		paths := settings.Paths{}
		n := startWrapNotifier(context.Background(), settings.EnvFrom(nil), paths, cfg, h, c.inHerdr, false, nil, notifyNames{Cwd: dir, Agent: "pi"}, nil, log)
		n.close()
		log.Close()
		b, _ := os.ReadFile(log.Path())
		if !strings.Contains(string(b), c.want) {
			t.Errorf("channel %q, in Herdr %v: the log says\n%s\nwant %q", c.channel, c.inHerdr, b, c.want)
		}
	}
}
