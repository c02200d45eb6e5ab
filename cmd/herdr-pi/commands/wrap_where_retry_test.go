package commands

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/logfile"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/settings"
)

// While another pane has this one's name, a toast says where the pane is,
// which takes two questions to Herdr (pane.get, tab.list). A toast Herdr
// holds back ("busy": another is on screen) is offered again a second
// later, and it asked them again each time: a Herdr busy with thirty
// panes' toasts got sixty more requests a second. Where a message's pane
// is is asked once; its retries say the same.
func TestAToastRetriedAsksWhereThePaneIsOnce(t *testing.T) {
	s := herdrtest.Start(t, herdrtest.Options{Delivery: "herdr"})
	dir := t.TempDir()
	paths := settings.Paths{RuntimeBase: filepath.Join(dir, "rt")}
	h := settings.Herdr{SocketPath: s.SocketPath(), PaneID: s.PaneID()}
	cwd := filepath.Join(dir, "api")
	// A namesake: another wrapper of this Herdr in a project named api.
	namesake, err := openBoard(paths, settings.Herdr{SocketPath: s.SocketPath(), PaneID: "w1:p9"})
	if err != nil {
		t.Fatal(err)
	}
	if err := namesake.Present(notify.PaneName("", "api")); err != nil {
		t.Fatal(err)
	}
	defer namesake.Close()
	log := logfile.Open(logfile.Options{Dir: dir, Tag: "wrap"})
	defer log.Close()
	cfg := settings.Defaults()
	s.ScriptNotificationReasons(notify.ReasonBusy, notify.ReasonBusy)
	s.ClearRecords()
	n := startWrapNotifier(context.Background(), settings.EnvFrom(nil), paths, cfg, h, true, false, nil,
		notifyNames{Cwd: cwd, Agent: "pi"}, nil, log)
	defer n.close()
	n.n.Post(notify.Message{Title: "Pi finished"})
	deadline := time.Now().Add(30 * time.Second)
	for !slices.ContainsFunc(s.Notifications(), func(c herdrtest.NotificationCall) bool { return c.Shown }) {
		if time.Now().After(deadline) {
			t.Fatalf("the toast was never shown: %+v", s.Notifications())
		}
		time.Sleep(20 * time.Millisecond)
	}
	calls := s.Notifications()
	if len(calls) != 3 || !strings.HasSuffix(calls[2].Body, "tab 1") {
		t.Fatalf("toasts %+v, want two held back and then one that says the pane is in tab 1", calls)
	}
	count := map[string]int{}
	for _, m := range s.Methods() {
		count[m]++
	}
	if count["pane.get"] != 1 || count["tab.list"] != 1 {
		t.Fatalf("for one toast offered three times Herdr was asked pane.get %d times and tab.list %d times, want once each (requests: %q)",
			count["pane.get"], count["tab.list"], s.Methods())
	}
}
