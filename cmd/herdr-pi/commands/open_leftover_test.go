package commands

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/settings"
)

// An open that fails after it made something in Herdr closes it again;
// when Herdr refuses that close too, what stays open is in the ledger, so
// herdr-pi close <run> can close it once Herdr answers, and the error says
// so. Nothing herdr-pi opened is left unknown. Herdr refuses the step that
// fails the open (typing the command; opening the attempt's tab) and the
// close after it.
func TestAFailedOpenWhoseCloseHerdrRefusesIsInTheLedger(t *testing.T) {
	refuse := func(methods ...string) herdrtest.Fault {
		return herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: methods,
			Reply: map[string]any{"error": map[string]any{"code": "internal_error", "message": "Herdr says no"}}}
	}
	for _, c := range []struct {
		name, place string
		fault       herdrtest.Fault
		left        string
		menu        bool
	}{
		{"split", "split", refuse("pane.send_input", "pane.close"), "pane w1:p2", false},
		{"workspace", "workspace", refuse("tab.create", "workspace.close"), "workspace w2", false},
		{"menu inspection", "", refuse("pane.send_input", "pane.close"), "pane w1:p2", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, s, run, _, errb := openWorld(t, "exec sleep 600")
			s.SetFault(c.fault)
			var err error
			if c.menu {
				a, ferr := store.New(f.Paths().Home, f.IO.Dir).Find(run, "api")
				if ferr != nil {
					t.Fatal(ferr)
				}
				h := settings.Herdr{SocketPath: s.SocketPath(), PaneID: s.PaneID()}
				err = inspectFromMenu(t.Context(), f, h, true, f.IO.Dir, control.InspectRequest{RunID: run, SessionID: a.Record.Session.SessionID}, t.Logf)
			} else {
				err = openRun(t.Context(), f, &openOptions{Run: run, Attempt: "api", Place: c.place, StartTimeout: time.Minute, ForkTimeout: time.Minute})
			}
			recs, _ := handoff.LedgerAt(f.Paths().RuntimeBase).List()
			var kept []string
			for _, r := range recs {
				kept = append(kept, r.Run+" "+r.Thing())
			}
			if strings.Join(kept, ",") != run+" "+c.left {
				t.Fatalf("the ledger holds %q, want %q: Herdr kept it open and herdr-pi close cannot find it (open: %v; calls %v)", kept, c.left, err, s.Methods())
			}
			if err == nil || !strings.Contains(err.Error(), "herdr-pi close") {
				t.Fatalf("open: %v, want it to say herdr-pi close closes what stayed\n%s", err, errb)
			}
			s.SetFault(herdrtest.Fault{})
			closed, failed := handoff.CloseRun(t.Context(), handoff.LedgerAt(f.Paths().RuntimeBase),
				func(socket string) handoff.Herdr { return herdr.NewClient(socket) }, recs, time.Second)
			if len(failed) != 0 || len(closed) != 1 || closed[0].How != "closed" {
				t.Fatalf("herdr-pi close: closed %+v, failed %+v", closed, failed)
			}
		})
	}
}

// What open made and then closes because its pane did not start, or
// because the person pressed Ctrl-C, stays in Herdr when Herdr refuses
// that close: it stays in the ledger too (before the pane ran, it goes in
// then), and the person is told herdr-pi close <run> closes it.
func TestWhatOpenCannotCloseAfterAFailedStartOrCtrlCIsInTheLedger(t *testing.T) {
	refuse := herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.close", "tab.close", "workspace.close"},
		Reply: map[string]any{"error": map[string]any{"code": "internal_error", "message": "Herdr says no"}}}
	for _, c := range []struct {
		name, place string
		// interrupt: Ctrl-C once the pane is open (records: once open
		// has written its records).
		interrupt, records bool
		left               string
	}{
		{"not started", "split", false, false, "pane w1:p2"},
		{"interrupted before the records", "split", true, false, "pane w1:p2"},
		{"interrupted after the records", "workspace", true, true, "workspace w2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, s, run, _, errb := openWorld(t, "exec sleep 600")
			ledger := handoff.LedgerAt(f.Paths().RuntimeBase)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			opts := &openOptions{Run: run, Attempt: "api", Place: c.place, StartTimeout: time.Minute, ForkTimeout: time.Hour}
			if !c.interrupt {
				// Herdr takes the command but the pane never runs it:
				// the wait for its start ends (at once), and the close
				// after it is refused.
				s.SetFaults(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.send_input"},
					Reply: map[string]any{"result": map[string]any{"type": "ok"}}}, refuse)
				opts.StartTimeout = time.Nanosecond
			}
			if c.records {
				opts.Wait, opts.ForkTimeout = true, time.Millisecond
			}
			done := make(chan error, 1)
			go func() { done <- openRun(ctx, f, opts) }()
			if c.interrupt {
				s.WaitFor(t, time.Minute, "the pane's command", func() bool {
					if c.records {
						recs, _ := ledger.List()
						return len(recs) > 0
					}
					// Open has returned: open watches the pane's end.
					return slices.Contains(s.Methods(), "events.subscribe")
				})
				s.SetFault(refuse)
				cancel()
			}
			err := <-done
			recs, _ := ledger.List()
			var kept []string
			for _, r := range recs {
				kept = append(kept, r.Run+" "+r.Thing())
			}
			if !slices.Contains(kept, run+" "+c.left) {
				t.Fatalf("the ledger holds %q, want %q: Herdr kept it open and herdr-pi close cannot find it (open: %v; calls %v)\n%s", kept, c.left, err, s.Methods(), errb)
			}
			said := errb.String()
			if err != nil {
				said += err.Error()
			}
			if !strings.Contains(said, "herdr-pi close "+run[:8]) {
				t.Fatalf("open: %v, stderr %q: want it to say herdr-pi close closes what stayed", err, errb)
			}
			s.SetFault(herdrtest.Fault{})
			closed, failed := handoff.CloseRun(t.Context(), ledger,
				func(socket string) handoff.Herdr { return herdr.NewClient(socket) }, recs, time.Second)
			if len(failed) != 0 || len(closed) == 0 || closed[0].How != "closed" {
				t.Fatalf("herdr-pi close: closed %+v, failed %+v", closed, failed)
			}
		})
	}
}
