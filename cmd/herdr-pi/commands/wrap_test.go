package commands

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/settings"
)

func TestOutsideHerdrNothingIsSent(t *testing.T) {
	s := herdrtest.Start(t)
	for _, env := range [][]string{
		nil,
		{"HERDR_SOCKET_PATH=" + s.SocketPath(), "HERDR_PANE_ID=w1:p1"}, // HERDR_ENV missing
		{"HERDR_ENV=1", "HERDR_SOCKET_PATH=" + s.SocketPath()},         // pane missing
		{"HERDR_ENV=true", "HERDR_SOCKET_PATH=" + s.SocketPath(), "HERDR_PANE_ID=w1:p1"},
	} {
		var logs []string
		p := newPresence(settings.EnvFrom(env), settings.Paths{}, settings.Defaults(), "", nil, func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
		if p != nil {
			t.Errorf("env %q: a Presence outside Herdr", env)
		}
		p.Report("working", "")
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("env %q: Close: %v", env, err)
		}
		if n := len(s.Requests()); n != 0 {
			t.Errorf("env %q: %d requests sent", env, n)
		}
		if len(env) > 0 && len(logs) != 1 {
			t.Errorf("env %q: log %q, want one line saying what is missing", env, logs)
		}
	}
}

func TestPresenceUsesTheConfig(t *testing.T) {
	s := herdrtest.Start(t)
	cfg := settings.Defaults()
	cfg.Herdr.Source = "custom:team"
	p := newPresence(settings.EnvFrom(s.Env()), settings.Paths{RuntimeBase: t.TempDir()}, cfg, reportLabel("", "pi", cfg), nil, t.Logf)
	defer p.Close(context.Background())
	p.Start()
	p.Report("blocked", "approve")
	s.WaitFor(t, time.Second, "blocked", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
	if st := s.Pane(s.PaneID()); st.Source != "custom:team" || st.Agent != "pi" {
		t.Errorf("pane %+v", st)
	}
}
