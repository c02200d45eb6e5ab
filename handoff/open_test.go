package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// params decodes the params of the n-th request of a method.
func params(t *testing.T, s *herdrtest.Server, method string, n int) map[string]any {
	t.Helper()
	for _, r := range s.Requests() {
		if r.Method != method {
			continue
		}
		if n--; n == 0 {
			var p map[string]any
			if err := json.Unmarshal(r.Params, &p); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no such %s request; requests: %q", method, s.Methods())
	return nil
}

func privateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func opener(t *testing.T, s *herdrtest.Server) Opener {
	return Opener{Herdr: herdr.NewClient(s.SocketPath()), Self: "/opt/herdr-pi", Pi: []string{"pi"}, FileDir: privateDir(t)}
}

func inspection() Inspection {
	return Inspection{Title: "run 3f0c9a2e review: reviewer#1", SessionFile: "/s/it's a session.jsonl", Model: "fake/fake-model:high", Cwd: "/repo"}
}

// The caller's pane decides the split: wider than tall goes right, equal
// or taller goes down, never taking the focus; the command is typed into
// the new pane and nothing else is called.
func TestSplitFollowsTheCallersGeometry(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	for _, c := range []struct {
		name   string
		before int // splits made first: the fake lays panes side by side in 200x50
		want   string
	}{
		{"wide", 0, "right"},
		{"square", 3, "down"},
		{"tall", 4, "down"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := herdrtest.Start(t)
			c0 := herdr.NewClient(s.SocketPath())
			for range c.before {
				if _, err := c0.PaneSplit(t.Context(), herdr.Split{TargetPaneID: s.PaneID(), Direction: "right"}); err != nil {
					t.Fatal(err)
				}
			}
			s.ClearRecords()
			o := opener(t, s)
			l := o.InspectLaunch(inspection())
			got, err := o.Open(t.Context(), l, Placement{Mode: ModeSplit, CallerPane: s.PaneID(), Cwd: "/repo"})
			if err != nil {
				t.Fatal(err)
			}
			if m := strings.Join(s.Methods(), " "); m != "pane.layout pane.split pane.send_input" {
				t.Fatalf("calls %q", m)
			}
			if p := params(t, s, "pane.layout", 1); p["pane_id"] != s.PaneID() {
				t.Fatalf("layout of %v", p)
			}
			split := params(t, s, "pane.split", 1)
			if split["target_pane_id"] != s.PaneID() || split["direction"] != c.want || split["focus"] == true || split["cwd"] != "/repo" {
				t.Fatalf("split %v, want %s without focus", split, c.want)
			}
			in := params(t, s, "pane.send_input", 1)
			if in["pane_id"] != got.PaneID || !slices.Equal(toStrings(in["keys"]), []string{"Enter"}) {
				t.Fatalf("input %v into %s", in, got.PaneID)
			}
			text := in["text"].(string)
			file := strings.Trim(strings.TrimPrefix(text, "exec sh "), "'")
			script, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("typed %q: %v", text, err)
			}
			if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
				t.Fatalf("command file mode %v", fi.Mode())
			}
			want := `'/opt/herdr-pi' 'wrap' '--agent' 'pi' '--no-resume' '--' 'pi' '--fork' '/s/it'\''s a session.jsonl' '--tools' 'read,grep,find,ls' '--model' 'fake/fake-model:high'`
			if !strings.Contains(string(script), "\n"+want+"\n") || !strings.Contains(string(script), "cd -- '/repo'") {
				t.Fatalf("command file:\n%s\nwant the line\n%s", script, want)
			}
			if got.Direction != c.want || len(got.Created) != 1 || got.Created[0] != "pane "+got.PaneID {
				t.Fatalf("opened %+v", got)
			}
		})
	}
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// A pane that cannot be given its command is closed again, the command
// file removed, and the first error reported.
func TestFailedSendInputClosesTheNewPane(t *testing.T) {
	s := herdrtest.Start(t)
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultClose, Methods: []string{"pane.send_input"}})
	o := opener(t, s)
	_, err := o.Open(t.Context(), o.InspectLaunch(inspection()), Placement{CallerPane: s.PaneID()})
	if err == nil || !strings.Contains(err.Error(), "starting the command in pane w1:p2") {
		t.Fatalf("error %v", err)
	}
	// pane.get: the pane is still the one split (its terminal), not a
	// namesake of a Herdr started afresh.
	if m := strings.Join(s.Methods(), " "); !strings.HasSuffix(m, "pane.split pane.send_input pane.get pane.close") {
		t.Fatalf("calls %q", m)
	}
	if p := params(t, s, "pane.close", 1); p["pane_id"] != "w1:p2" {
		t.Fatalf("closed %v", p)
	}
	if left, _ := os.ReadDir(o.FileDir); len(left) != 0 {
		t.Fatalf("left in the private dir: %v", left)
	}
}

// Fully inspectable placement: one workspace per run, labelled, its root
// tab renamed to the same label, a tab per attempt; a second open of the
// same attempt reuses its tab and starts nothing, another attempt gets a
// tab of its own in the same workspace.
func TestWorkspacePlacementIsReused(t *testing.T) {
	s := herdrtest.Start(t)
	o := opener(t, s)
	place := func(tab string) Placement {
		return Placement{Mode: ModeWorkspace, CallerPane: s.PaneID(), WorkspaceLabel: "workflow review", TabLabel: tab, Cwd: "/repo"}
	}
	first, err := o.Open(t.Context(), o.InspectLaunch(inspection()), place("#1 reviewer"))
	if err != nil {
		t.Fatal(err)
	}
	if m := strings.Join(s.Methods(), " "); m != "workspace.list workspace.create tab.rename tab.create pane.send_input" {
		t.Fatalf("first open: %q", m)
	}
	ws := params(t, s, "workspace.create", 1)
	if ws["label"] != "workflow review" || ws["cwd"] != "/repo" || ws["focus"] == true {
		t.Fatalf("workspace.create %v", ws)
	}
	if r := params(t, s, "tab.rename", 1); r["label"] != "workflow review" || r["tab_id"] != first.WorkspaceID+":t1" {
		t.Fatalf("tab.rename %v", r)
	}
	if c := params(t, s, "tab.create", 1); c["label"] != "#1 reviewer" || c["workspace_id"] != first.WorkspaceID {
		t.Fatalf("tab.create %v", c)
	}

	s.ClearRecords()
	again, err := o.Open(t.Context(), o.InspectLaunch(inspection()), place("#1 reviewer"))
	if err != nil {
		t.Fatal(err)
	}
	if m := strings.Join(s.Methods(), " "); m != "workspace.list tab.list pane.list" || !again.Reused ||
		again.TabID != first.TabID || again.PaneID != first.PaneID || len(again.Created) != 0 {
		t.Fatalf("second open: %q %+v (first %+v)", m, again, first)
	}

	s.ClearRecords()
	second, err := o.Open(t.Context(), o.InspectLaunch(inspection()), place("#2 reviewer"))
	if err != nil {
		t.Fatal(err)
	}
	if m := strings.Join(s.Methods(), " "); m != "workspace.list tab.list tab.create pane.send_input" ||
		second.WorkspaceID != first.WorkspaceID || second.TabID == first.TabID {
		t.Fatalf("other attempt: %q %+v", m, second)
	}
}

// A failure after the workspace was created closes the workspace (and
// with it what is inside), once.
func TestFailureClosesExactlyWhatWasCreated(t *testing.T) {
	s := herdrtest.Start(t)
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultClose, Methods: []string{"tab.create"}})
	o := opener(t, s)
	_, err := o.Open(t.Context(), o.InspectLaunch(inspection()),
		Placement{Mode: ModeWorkspace, CallerPane: s.PaneID(), WorkspaceLabel: "workflow review", TabLabel: "#1 reviewer"})
	if err == nil {
		t.Fatal("no error")
	}
	// pane.list: the workspace still holds its root pane's terminal.
	if m := strings.Join(s.Methods(), " "); m != "workspace.list workspace.create tab.rename tab.create pane.list workspace.close" {
		t.Fatalf("calls %q", m)
	}
	if p := params(t, s, "workspace.close", 1); p["workspace_id"] != "w2" {
		t.Fatalf("closed %v", p)
	}
}

// In a real pane the command file runs, removes itself, and the pane
// ends with the command; WaitEnded hears it from Herdr's events. The
// command is over before the wait subscribes: Herdr 0.8 replays the
// pane's end, Herdr 0.9 replays nothing and the pane is read back.
func TestCommandRunsInARealPaneAndItsEndIsHeard(t *testing.T) {
	for _, c := range []struct {
		protocol int
		want     Ended
	}{{20, PaneExited}, {herdrtest.Protocol22, PaneClosed}} {
		t.Run(fmt.Sprint("protocol ", c.protocol), func(t *testing.T) {
			s := herdrtest.Start(t, herdrtest.Options{RealPanes: &herdrtest.RealPanes{}, NoEventPacing: true, Protocol: c.protocol})
			o := opener(t, s)
			cwd := t.TempDir()
			l := Launch{Argv: []string{"sh", "-c", `echo "in $(pwd) with $GREETING"`}, Env: []string{"GREETING=it's me"}, Dir: cwd, Title: "test"}
			opened, err := o.Open(t.Context(), l, Placement{CallerPane: s.PaneID()})
			if err != nil {
				t.Fatal(err)
			}
			exit := s.WaitExited(t, opened.PaneID, 10*time.Second)
			if exit.Code != 0 || !strings.Contains(exit.Output, "in "+cwd+" with it's me") {
				t.Fatalf("exit %+v", exit)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c0 := herdr.NewClient(s.SocketPath())
			how, err := WaitEnded(ctx, WatcherEvents(c0), c0.PaneGet, opened.Placed)
			if err != nil || how != c.want {
				t.Fatalf("ended %q, %v; want %q", how, err, c.want)
			}
			if _, err := os.Lstat(opened.CommandFile); !os.IsNotExist(err) {
				t.Fatalf("the command file is still there: %v", err)
			}
			// The command ended well: the watch file is the caller's to remove.
			if _, err := os.Lstat(opened.WatchFile); err != nil {
				t.Fatalf("the watch file after a command that ended well: %v", err)
			}
		})
	}
}

// A command that fails removes the watch file and holds the pane with its
// error until Enter; then the pane ends with the command's status.
func TestFailedCommandRemovesTheWatchFileAndHoldsThePane(t *testing.T) {
	s := herdrtest.Start(t, herdrtest.Options{RealPanes: &herdrtest.RealPanes{}, NoEventPacing: true})
	o := opener(t, s)
	for _, c := range []struct {
		name   string
		launch Launch
		says   string
		code   int
	}{
		{"status", Launch{Argv: []string{"sh", "-c", "echo broken >&2; exit 3"}, Title: "test"}, "the command ended with status 3", 3},
		{"cwd gone", Launch{Argv: []string{"true"}, Dir: "/nonexistent/dir", Title: "test"}, "cannot enter /nonexistent/dir", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			opened, err := o.Open(t.Context(), c.launch, Placement{CallerPane: s.PaneID()})
			if err != nil {
				t.Fatal(err)
			}
			if !s.Await(30*time.Second, func() bool { _, err := os.Lstat(opened.WatchFile); return os.IsNotExist(err) }) {
				t.Fatalf("the watch file stays after a failed command")
			}
			s.WaitForText(t, opened.PaneID, c.says, 10*time.Second)
			s.WaitForText(t, opened.PaneID, "press Enter to close this pane", 10*time.Second)
			if _, ended := s.Exited(opened.PaneID); ended {
				t.Fatal("the pane did not wait for Enter")
			}
			if err := herdr.NewClient(s.SocketPath()).PaneSendInput(t.Context(), opened.PaneID, "", "Enter"); err != nil {
				t.Fatal(err)
			}
			if ex := s.WaitExited(t, opened.PaneID, 10*time.Second); ex.Closed || ex.Code != c.code {
				t.Fatalf("the pane ended %+v, want status %d", ex, c.code)
			}
			if left, _ := os.ReadDir(o.FileDir); len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
	}
}

// UndoJoined closes a workspace the placement created only while nothing
// but its root tab and the placement's tab are in it; a tab someone added
// since, or a Herdr that cannot say what the workspace holds, keeps it and
// closes only the placement's own tab.
func TestUndoJoinedClosesOnlyWhatNobodyJoined(t *testing.T) {
	for _, c := range []struct {
		name       string
		join, fail bool
		kept       bool
		closes     string
	}{
		{"alone", false, false, false, "workspace.close"},
		{"joined", true, false, true, "tab.close"},
		{"herdr cannot say", false, true, true, "tab.close"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := herdrtest.Start(t)
			o := opener(t, s)
			place := Placement{Mode: ModeWorkspace, Dedicated: true, CallerPane: s.PaneID(), WorkspaceLabel: "workflow review", TabLabel: "#1 reviewer"}
			first, err := o.Open(t.Context(), o.InspectLaunch(inspection()), place)
			if err != nil {
				t.Fatal(err)
			}
			if c.join {
				place.WorkspaceID, place.TabLabel = first.WorkspaceID, "#2 fixer"
				if _, err := o.Open(t.Context(), o.InspectLaunch(inspection()), place); err != nil {
					t.Fatal(err)
				}
			}
			if c.fail {
				s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultClose, Methods: []string{"tab.list"}})
			}
			before := len(s.Methods())
			kept, err := first.UndoJoined(t.Context(), o.Herdr)
			if err != nil || kept != c.kept {
				t.Fatalf("kept %v, %v; want kept %v", kept, err, c.kept)
			}
			calls := s.Methods()[before:]
			if last := calls[len(calls)-1]; last != c.closes || (c.closes == "tab.close" && params(t, s, "tab.close", 1)["tab_id"] != first.TabID) {
				t.Fatalf("calls %v, want the last one %s of %s", calls, c.closes, first.Created)
			}
		})
	}
}

// A labelled placement names the attempt beside its new pane, guarded by
// agent "pi" so the name shows only while Pi runs there; a Herdr that
// refuses the metadata still gets its pane and command. A reused tab is
// not labelled again.
func TestLabelledPaneShowsItsAttemptWhilePiRuns(t *testing.T) {
	s := herdrtest.Start(t)
	o := opener(t, s)
	p := Placement{Mode: ModeSplit, CallerPane: s.PaneID(), Cwd: "/repo"}
	p.Label("fx-retry", "3f0c9a2e", "fixer", 2, 3, true)
	opened, err := o.Open(t.Context(), o.InspectLaunch(inspection()), p)
	if err != nil {
		t.Fatal(err)
	}
	if m := strings.Join(s.Methods(), " "); m != "pane.layout pane.split pane.report_metadata pane.send_input" {
		t.Fatalf("methods %q", m)
	}
	md := params(t, s, "pane.report_metadata", 1)
	tokens, _ := md["tokens"].(map[string]any)
	if md["pane_id"] != opened.PaneID || md["source"] != MetadataSource || md["agent"] != "pi" ||
		md["title"] != "fx-retry #2 fixer (inspect)" ||
		tokens["workflow"] != "fx-retry" || tokens["attempt"] != "fixer#3" || tokens["run"] != "3f0c9a2e" {
		t.Fatalf("pane.report_metadata %v", md)
	}
	c := herdr.NewClient(s.SocketPath())
	if info, err := c.PaneGet(t.Context(), opened.PaneID); err != nil || info.Title != "" {
		t.Fatalf("before Pi reports, the pane shows title %q (%v)", info.Title, err)
	}
	if err := c.ReportAgent(t.Context(), herdr.AgentReport{PaneID: opened.PaneID, Source: "custom:herdr-pi", Agent: "pi", State: "idle", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if info, err := c.PaneGet(t.Context(), opened.PaneID); err != nil || info.Title != "fx-retry #2 fixer (inspect)" || info.Tokens["attempt"] != "fixer#3" {
		t.Fatalf("with Pi reporting, the pane shows %+v (%v)", info, err)
	}

	s.ClearRecords()
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.report_metadata"},
		Reply: map[string]any{"error": map[string]any{"code": "invalid_metadata_request", "message": "refused"}}})
	if _, err := o.Open(t.Context(), o.InspectLaunch(inspection()), p); err != nil {
		t.Fatalf("refused metadata failed the open: %v", err)
	}
	if m := strings.Join(s.Methods(), " "); !strings.HasSuffix(m, "pane.report_metadata pane.send_input") {
		t.Fatalf("after refused metadata: %q", m)
	}
}

// When closing what a failed open made fails too, the error names what
// stays open (a *LeftOpenError), for the caller's ledger; Herdr saying it
// is gone already leaves nothing open.
func TestAFailedCloseNamesWhatStaysOpen(t *testing.T) {
	for _, c := range []struct {
		code string
		left []string
	}{{"internal_error", []string{"workspace w2"}}, {"workspace_not_found", nil}} {
		t.Run(c.code, func(t *testing.T) {
			s := herdrtest.Start(t)
			s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"tab.create", "workspace.close"},
				Reply: map[string]any{"error": map[string]any{"code": c.code, "message": "no"}}})
			o := opener(t, s)
			_, err := o.Open(t.Context(), o.InspectLaunch(inspection()),
				Placement{Mode: ModeWorkspace, CallerPane: s.PaneID(), WorkspaceLabel: "workflow review", TabLabel: "#1 reviewer"})
			var left *LeftOpenError
			if err == nil || errors.As(err, &left) != (c.left != nil) || (left != nil && !slices.Equal(left.Left, c.left)) {
				t.Fatalf("error %v (left open: %+v), want %v left open", err, left, c.left)
			}
			recs, lerr := Ledger{Dir: filepath.Join(privateDir(t), "opened")}.AddLeftOpen("r1", s.SocketPath(), err)
			if lerr != nil || len(recs) != len(c.left) {
				t.Fatalf("recorded %+v, %v", recs, lerr)
			}
			// The record tells the workspace by its root pane's terminal,
			// as close needs once Herdr may have started afresh.
			for _, r := range recs {
				info, err := herdr.NewClient(s.SocketPath()).PaneGet(t.Context(), r.Pane)
				if r.Pane == "" || r.Terminal == "" || err != nil || info.TerminalID != r.Terminal {
					t.Fatalf("%s recorded with pane %q terminal %q, Herdr says %+v (%v): close cannot tell it from a namesake", r.Thing(), r.Pane, r.Terminal, info, err)
				}
			}
		})
	}
}
