package live

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// sequence is what the fake Herdr was asked that opens or closes tabs and
// workspaces, in order.
func (r *rig) sequence() []string {
	var out []string
	for _, q := range r.s.Requests() {
		p := map[string]any{}
		_ = json.Unmarshal(q.Params, &p)
		switch q.Method {
		case "workspace.create", "tab.create":
			out = append(out, fmt.Sprintf("%s %v", q.Method, p["label"]))
		case "tab.rename":
			out = append(out, fmt.Sprintf("%s %v", q.Method, p["label"]))
		case "tab.close":
			out = append(out, fmt.Sprintf("%s %v", q.Method, p["tab_id"]))
		case "workspace.close":
			out = append(out, fmt.Sprintf("%s %v", q.Method, p["workspace_id"]))
		case "pane.close":
			out = append(out, q.Method)
		}
	}
	return out
}

func (r *rig) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(long)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("no %s within %v; Herdr saw %q", what, long, r.sequence())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// turn asks for a turn as the owner's fully inspectable transport does and
// returns the pane it runs in, its wrapper started.
func (r *rig) turn(request, session string) (string, *paneWrapper) {
	r.t.Helper()
	n := len(r.s.Inputs())
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: request, RunID: "r1", SessionID: session, Label: "finder", Turn: true})
	r.s.WaitFor(r.t, long, "the turn's command", func() bool { return len(r.s.Inputs()) == n+1 })
	pane := r.s.Inputs()[n].PaneID
	return pane, r.startPaneWrapper(pane)
}

func tabIDs(s *herdrtest.Server) []string {
	var ids []string
	for _, q := range s.Requests() {
		if q.Method != "tab.create" {
			continue
		}
		var rep struct {
			Result struct {
				Tab struct {
					TabID string `json:"tab_id"`
				} `json:"tab"`
			} `json:"result"`
		}
		_ = json.Unmarshal([]byte(q.Reply), &rep)
		ids = append(ids, rep.Result.Tab.TabID)
	}
	return ids
}

// A run's turns share its workspace: the first opens "workflow review"
// (its root tab renamed alike) with a tab "#1 finder"; a turn whose run
// settled too fast for Herdr to see it working still hands back (the pane
// wrapper says it ran); a second turn opens a tab in the same workspace;
// the run's end gives that turn back, closes its tab, then the workspace,
// once; nothing is left behind.
func TestTurnsShareTheRunsWorkspaceUntilTheRunEnds(t *testing.T) {
	r := newRig(t)
	r.o.launch.TUIIndex = 1
	_, w := r.turn("r1", "s1")
	w.set(func(st *control.Status) { st.Runs, st.LastStopReason = 1, "stop" })
	r.waitFor("the first turn's handback", func() bool { return len(r.o.handbacksSoFar()) == 1 })
	if hb := r.o.handbacksSoFar()[0]; hb.Reason != control.HandbackIdle || !hb.Transferred {
		t.Fatalf("first handback %+v", hb)
	}
	r.turn("r2", "s2")
	r.waitFor("the second turn to launch", func() bool {
		r.o.mu.Lock()
		defer r.o.mu.Unlock()
		return strings.Count(strings.Join(r.o.states, " "), "launched") == 2
	})
	r.svc.ownerEvent(r.o, control.RunEnded{RunID: "r1", State: "completed"})
	r.waitFor("the workspace to close", func() bool { return slices.Contains(r.s.Methods(), "workspace.close") })
	if hb := r.o.handbacksSoFar(); len(hb) != 2 || hb[1].Reason != control.HandbackAborted || !strings.Contains(hb[1].Error, "run r1 ended (completed)") {
		t.Fatalf("handbacks %+v", hb)
	}
	tabs := tabIDs(r.s)
	var ws struct {
		Result struct {
			Workspace struct {
				WorkspaceID string `json:"workspace_id"`
			} `json:"workspace"`
		} `json:"result"`
	}
	for _, q := range r.s.Requests() {
		if q.Method == "workspace.create" {
			_ = json.Unmarshal([]byte(q.Reply), &ws)
		}
	}
	want := []string{"workspace.create workflow review", "tab.rename workflow review", "tab.create #1 finder", "tab.close " + tabs[0],
		"tab.create #1 finder", "tab.close " + tabs[1], "workspace.close " + ws.Result.Workspace.WorkspaceID}
	if got := r.sequence(); !slices.Equal(got, want) {
		t.Fatalf("Herdr saw %q\nwant %q", got, want)
	}
	// Both tabs in the run's workspace.
	for _, q := range r.s.Requests() {
		if q.Method == "tab.create" && !strings.Contains(string(q.Params), ws.Result.Workspace.WorkspaceID) {
			t.Fatalf("a tab outside the run's workspace: %s", q.Params)
		}
	}
	r.svc.Close()
	if n := len(slices.DeleteFunc(r.s.Methods(), func(m string) bool { return m != "workspace.close" })); n != 1 {
		t.Fatalf("workspace.close %d times", n)
	}
	r.nothingLeft()
}

// The owner going away, or the wrapper quitting, closes the workspaces of
// its runs.
func TestTheOwnersEndClosesItsRunsWorkspaces(t *testing.T) {
	for _, how := range []string{"owner gone", "wrapper quits"} {
		t.Run(how, func(t *testing.T) {
			r := newRig(t)
			r.turn("r1", "s1")
			r.waitFor("the turn to launch", func() bool {
				r.o.mu.Lock()
				defer r.o.mu.Unlock()
				return slices.Contains(r.o.states, control.PaneLaunched)
			})
			if how == "owner gone" {
				close(r.o.done)
				r.svc.ownerEvent(r.o, control.OwnerDisconnected{PID: r.o.pid})
				r.waitFor("the workspace to close", func() bool { return slices.Contains(r.s.Methods(), "workspace.close") })
			} else {
				r.svc.Close()
			}
			got := r.sequence()
			if len(got) != 5 || got[3] != "tab.close "+tabIDs(r.s)[0] || !strings.HasPrefix(got[4], "workspace.close ") {
				t.Fatalf("Herdr saw %q", got)
			}
			r.svc.Close()
			r.nothingLeft()
		})
	}
}

// A turn asked while the attempt's previous turn is still being handed
// back starts once that one is over (it is not dropped).
func TestATurnWaitsForThePreviousOne(t *testing.T) {
	r := newRig(t)
	_, w := r.turn("r1", "s1")
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "r2", RunID: "r1", SessionID: "s1", Label: "finder", Turn: true})
	w.set(func(st *control.Status) { st.Runs = 1 })
	r.s.WaitFor(t, long, "the second turn's command", func() bool { return len(r.s.Inputs()) == 2 })
	if hb := r.o.handbacksSoFar(); len(hb) != 1 {
		t.Fatalf("handbacks before the second turn %+v", hb)
	}
}

func TestTabLabel(t *testing.T) {
	for _, c := range []struct {
		l    control.Launch
		want string
	}{
		{control.Launch{Label: "reviewer", TUIIndex: 2, Attempt: 3, Breadcrumb: "a > b #3"}, "#2 reviewer"},
		{control.Launch{Label: "reviewer", Attempt: 3, Breadcrumb: "review > nested > reviewLoop > function:agent/foo #3"}, "review > nested > reviewLoop > function:agent/foo #3"},
		{control.Launch{Label: "reviewer", Attempt: 2}, "reviewer #2"},
	} {
		if got := TabLabel(c.l); got != c.want {
			t.Errorf("%+v: %q, want %q", c.l, got, c.want)
		}
	}
}

// `herdr-pi open` on an attempt whose turn runs in its tab focuses that tab
// and hands nothing off.
func TestOpenFocusesATurnsTab(t *testing.T) {
	r := newRig(t)
	pane, _ := r.turn("r1", "s1")
	r.waitFor("the turn to launch", func() bool {
		r.o.mu.Lock()
		defer r.o.mu.Unlock()
		return slices.Contains(r.o.states, control.PaneLaunched)
	})
	p, err := r.svc.Handoff(context.Background(), control.HandoffAsk{RunID: "r1", SessionID: "s1", OwnerPID: r.o.pid}, nil)
	tab := tabIDs(r.s)[0]
	if err != nil || p.Event != control.ProgressFocused || p.TabID != tab || p.PaneID != pane || p.Handoff != "h1" {
		t.Fatalf("open got %+v, %v", p, err)
	}
	var focused []string
	for _, q := range r.s.Requests() {
		if q.Method == "tab.focus" {
			focused = append(focused, string(q.Params))
		}
	}
	if len(focused) != 1 || !strings.Contains(focused[0], tab) {
		t.Fatalf("tab.focus calls %q", focused)
	}
	if hb := r.o.handbacksSoFar(); len(hb) != 0 {
		t.Fatalf("handed back %+v", hb)
	}
}

// A handoff asked into the run's workspace (open --workspace) goes to the
// run's own: the workspace of another run of the same workflow carries the
// same label, "workflow review", and is not the run's.
func TestAHandoffToTheWorkspaceAvoidsAnotherRunsOfTheWorkflow(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	other, err := r.client.WorkspaceCreate(ctx, herdr.NewPlace{Label: "workflow review"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.cfg.Ledger.Add(handoff.Record{Run: "r0", Kind: "workspace", ID: other.Workspace.WorkspaceID, HerdrSocket: r.s.SocketPath()}); err != nil {
		t.Fatal(err)
	}
	x := r.ask(control.HandoffAsk{RunID: "r1", SessionID: "s1", OwnerPID: r.o.pid, Place: string(handoff.ModeWorkspace)})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	r.startPaneWrapper(r.s.Inputs()[0].PaneID)
	l := x.next(t, control.ProgressLaunched)
	if l.WorkspaceID == other.Workspace.WorkspaceID {
		t.Fatalf("run r1's handoff opened tab %s in workspace %s, run r0's", l.TabID, l.WorkspaceID)
	}
	x.cancel()
	x.wait(t)
}

// A run's workspace that Herdr fails to close stays in the ledger, so
// herdr-pi close can close it later; only one that closed (or was gone
// already) is forgotten.
func TestAWorkspaceThatDidNotCloseStaysInTheLedger(t *testing.T) {
	r := newRig(t)
	r.turn("r1", "s1")
	r.waitFor("the turn to launch", func() bool {
		r.o.mu.Lock()
		defer r.o.mu.Unlock()
		return slices.Contains(r.o.states, control.PaneLaunched)
	})
	r.s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultClose, Methods: []string{"workspace.close"}})
	r.svc.Close()
	if !slices.Contains(r.s.Methods(), "workspace.close") {
		t.Fatalf("the workspace was not asked to close: %q", r.s.Methods())
	}
	recs, err := handoff.LedgerAt(r.runtime).List()
	if err != nil || len(recs) != 1 || recs[0].Kind != "workspace" || recs[0].Run != "r1" {
		t.Fatalf("records after a failed close: %+v, %v", recs, err)
	}
}

// A run's end gives back that run's turns only, and only its owner can
// say it ended: another run's turn in the same wrapper goes on until it
// is over (here, until the wrapper quits).
func TestARunsEndEndsOnlyItsOwnTurns(t *testing.T) {
	r := newRig(t)
	r.turn("r1", "s1")
	n := len(r.s.Inputs())
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "q2", RunID: "r2", SessionID: "s2", Label: "other", Turn: true})
	r.s.WaitFor(t, long, "run r2's turn", func() bool { return len(r.s.Inputs()) == n+1 })
	r.startPaneWrapper(r.s.Inputs()[n].PaneID)
	r.waitFor("both turns to launch", func() bool {
		r.o.mu.Lock()
		defer r.o.mu.Unlock()
		return strings.Count(strings.Join(r.o.states, " "), "launched") == 2
	})
	stranger := &fakeOwner{pid: 5151, done: make(chan struct{})}
	r.svc.ownerEvent(stranger, control.RunEnded{RunID: "r1", State: "failed"})
	r.svc.ownerEvent(r.o, control.RunEnded{RunID: "r1", State: "completed"})
	r.waitFor("run r1's turn to be given back", func() bool { return len(r.o.handbacksSoFar()) >= 1 })
	r.svc.Close()
	hb := r.o.handbacksSoFar()
	var byRun []string
	for _, h := range hb {
		byRun = append(byRun, h.Error)
	}
	if len(hb) != 2 || !strings.Contains(hb[0].Error, "run r1 ended (completed)") || !strings.Contains(hb[1].Error, ErrClosing.Error()) {
		t.Fatalf("handbacks: %q; want run r1's turn given back for its run's end (completed), then run r2's when the wrapper quits", byRun)
	}
}

// `herdr-pi open --hold` (or --split, --tab) on an agent whose turn runs in
// its tab cannot have what it asks: the turn's tab is where the engine's
// fully inspectable mode put it, and it closes when the turn ends, the
// next turn opening another. Such an open is refused, naming the flag, the
// tab and the ways on, as the same flags are refused while the tab is
// still opening — not answered "focused" with the flag dropped without a
// word. Without a flag, or with --workspace (where the tab is), open
// focuses the tab.
func TestOpenWithAFlagATurnCannotHaveIsRefused(t *testing.T) {
	r := newRig(t)
	pane, _ := r.turn("r1", "s1")
	r.waitFor("the turn to launch", func() bool {
		r.o.mu.Lock()
		defer r.o.mu.Unlock()
		return slices.Contains(r.o.states, control.PaneLaunched)
	})
	tab := tabIDs(r.s)[0]
	for _, c := range []struct {
		flag string
		ask  control.HandoffAsk
	}{
		{"--hold", control.HandoffAsk{Hold: true}},
		{"--split", control.HandoffAsk{Place: string(handoff.ModeSplit)}},
		{"--tab", control.HandoffAsk{Place: string(handoff.ModeTab)}},
	} {
		ask := c.ask
		ask.RunID, ask.SessionID, ask.OwnerPID = "r1", "s1", r.o.pid
		p, err := r.svc.Handoff(context.Background(), ask, nil)
		if err == nil {
			t.Fatalf("open %s on the turn's tab %s got %+v: its %s was dropped without a word", c.flag, tab, p, c.flag)
		}
		for _, want := range []string{"fully inspectable", "tab " + tab, "this open cannot have " + c.flag, "open it without " + c.flag + " to focus that tab", "--inspect"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("open %s on the turn's tab was refused with %q; want it to say %q", c.flag, err, want)
			}
		}
		if strings.Contains(err.Error(), "once it is back") {
			t.Errorf("open %s: %q sends the person back for a handoff the mode never gives", c.flag, err)
		}
	}
	if slices.Contains(r.s.Methods(), "tab.focus") {
		t.Fatalf("a refused open focused the tab: %q", r.s.Methods())
	}
	for _, place := range []string{"", string(handoff.ModeWorkspace)} {
		p, err := r.svc.Handoff(context.Background(), control.HandoffAsk{RunID: "r1", SessionID: "s1", OwnerPID: r.o.pid, Place: place}, nil)
		if err != nil || p.Event != control.ProgressFocused || p.TabID != tab || p.PaneID != pane {
			t.Fatalf("open (place %q) on the turn's tab got %+v, %v; want it focused", place, p, err)
		}
	}
	if hb := r.o.handbacksSoFar(); len(hb) != 0 {
		t.Fatalf("handed back %+v", hb)
	}
}

// The same flags while the turn's tab is still opening (the owner holds
// the order to the end of its local turn) are refused in the same words:
// the mode's tab closes with its turn, so "again once it is back" would
// send the person after a handoff the mode never gives.
func TestOpenWithAFlagATurnCannotHaveIsRefusedBeforeItsTabOpens(t *testing.T) {
	r := newRig(t)
	r.o.waitBoundary = true
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "q1", RunID: "r1", SessionID: "s1", Label: "finder", Turn: true})
	r.waitFor("the turn's order", func() bool {
		r.svc.mu.Lock()
		defer r.svc.mu.Unlock()
		return r.svc.running["s1"] != nil
	})
	for _, c := range []struct {
		flag string
		ask  control.HandoffAsk
	}{
		{"--hold", control.HandoffAsk{Hold: true}},
		{"--tab", control.HandoffAsk{Place: string(handoff.ModeTab)}},
	} {
		ask := c.ask
		ask.RunID, ask.SessionID, ask.OwnerPID = "r1", "s1", r.o.pid
		_, err := r.svc.Handoff(context.Background(), ask, nil)
		if err == nil {
			t.Fatalf("open %s while the turn's tab opens was not refused", c.flag)
		}
		for _, want := range []string{"fully inspectable", "its tab is opening", "this open cannot have " + c.flag, "open it without " + c.flag, "--inspect"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("open %s while the turn's tab opens was refused with %q; want it to say %q", c.flag, err, want)
			}
		}
		if strings.Contains(err.Error(), "once it is back") {
			t.Errorf("open %s: %q sends the person back for a handoff the mode never gives", c.flag, err)
		}
	}
	close(r.o.boundary)
}
