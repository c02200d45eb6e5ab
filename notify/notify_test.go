package notify

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/notify/osc"
	"github.com/herdr-pi/herdr-pi/notify/tmux"
)

func TestComposeUsesOwnWordsAndOnlyLabelAndProject(t *testing.T) {
	m := compose(Event{Kind: PermissionNeeded, Label: "rel\x1b]0;x\x07ease\u202e"}, "", "my\nproject", "", "w1:p2")
	if m.Title != "Pi needs permission" || m.Body != "rel ]0;x ease · my project" || m.ID != "pi-permission-w1-p2" {
		t.Fatalf("%+v", m)
	}
	if got := compose(Event{Kind: InputNeeded}, "Claude\x1b]", "api", "", "").Title; got != "Claude ] needs your input" {
		t.Fatalf("agent name in the title: %q", got)
	}
	m = compose(Event{Kind: Finished}, "", "", "", "")
	if m.Title != "Pi finished" || m.Body != "" || m.ID != "pi" {
		t.Fatalf("%+v", m)
	}
	// One OSC 99 id per kind (notifications-and-sentinel.md §3.2): a newer
	// notification replaces an older one of its kind under kitty's
	// update-by-id, never one of another kind — a question must not wipe
	// out "finished".
	for kind, id := range map[Kind]string{Finished: "pi", Failed: "pi", InputNeeded: "pi-ask", AskStarted: "pi-ask", PermissionNeeded: "pi-permission"} {
		if got := compose(Event{Kind: kind}, "", "", "", "").ID; got != id {
			t.Errorf("%s: id %q, want %q", kind, got, id)
		}
	}
	m = compose(Event{Kind: AskStarted, Label: strings.Repeat("x", 500)}, "", "p", "", "")
	if l := utf8.RuneCountInString(strings.TrimSuffix(m.Body, " · p")); l != labelLimit {
		t.Fatalf("label of %d code points", l)
	}
}

func TestTargetSequence(t *testing.T) {
	m := Message{Title: "Pi needs your input", Body: "api", ID: "pi-ask"}
	cases := []struct {
		target Target
		want   string
	}{
		{Target{Protocol: osc.OSC777}, "\x1b]777;notify;Pi needs your input;api\x1b\\"},
		{Target{Protocol: osc.OSC9}, "\x1b]9;Pi needs your input · api\x1b\\"},
		{Target{Protocol: osc.OSC99}, "\x1b]99;i=pi-ask:p=body;Pi needs your input · api\x1b\\"},
		{Target{Protocol: osc.OSC9, TmuxLevels: 1}, "\x1bPtmux;\x1b\x1b]9;Pi needs your input · api\x1b\x1b\\\x1b\\"},
	}
	for _, c := range cases {
		if got := c.target.Sequence(m); string(got) != c.want {
			t.Errorf("%+v:\n got  %q\n      %s\n want %q\n      %s", c.target, got, hex.EncodeToString(got), c.want, hex.EncodeToString([]byte(c.want)))
		}
	}
	if got := (Target{Protocol: osc.OSC9}).Sequence(Message{Title: "Only"}); string(got) != "\x1b]9;Only\x1b\\" {
		t.Errorf("title only: %q", got)
	}
	// A body that fills the sequence still ends with how many were merged,
	// behind an ellipsis, with the title folded in front of it too: the
	// count must survive the cut, in every protocol.
	long := Message{Title: "Pi needs your input", Question: strings.Repeat("q", 120), Body: strings.Repeat("p", 200), Merged: 3}
	for _, p := range osc.Protocols {
		got := string((Target{Protocol: p}).Sequence(long))
		if !strings.HasSuffix(got, "… · +3 more\x1b\\") || !strings.Contains(got, "Pi needs your input") {
			t.Errorf("%s, a full body: %q", p, got)
		}
	}
	// A title that fills the sequence on its own (a hook's) is cut behind
	// an ellipsis where it is folded in, so the body is still read, cut
	// to its room at most.
	hook := Message{Title: strings.Repeat("t", 300), Body: "api"}
	for _, p := range []osc.Protocol{osc.OSC9, osc.OSC99} {
		got := string((Target{Protocol: p}).Sequence(hook))
		if !strings.HasSuffix(got, "t… · api\x1b\\") {
			t.Errorf("%s, a title that fills the sequence: the body is lost: %q", p, got)
		}
	}
	hook.Body = strings.Repeat("b", 300)
	for _, p := range []osc.Protocol{osc.OSC9, osc.OSC99} {
		got := string((Target{Protocol: p}).Sequence(hook))
		_, text, _ := strings.Cut(got, "body;")
		if p == osc.OSC9 {
			text = strings.TrimPrefix(got, "\x1b]9;")
		}
		text = strings.TrimSuffix(text, "\x1b\\")
		if !strings.Contains(text, "t… · bbb") || !strings.HasSuffix(text, "b…") || utf8.RuneCountInString(text) > osc.MaxCodePoints {
			t.Errorf("%s, a title and a body that each fill the sequence: %q", p, got)
		}
	}
	// Nothing to say but how many were merged: no separator before it.
	if got := (Target{Protocol: osc.OSC777}).Sequence(Message{Title: "Pi finished", Merged: 2}); string(got) != "\x1b]777;notify;Pi finished;+2 more\x1b\\" {
		t.Errorf("merged only: %q", got)
	}
}

type fakeProbe struct {
	levels []tmux.Level
	outer  string
	pass   map[string]string
	hidden map[string]bool // servers whose pane is not on show
}

func (f fakeProbe) Levels(context.Context, func(string) string) []tmux.Level { return f.levels }
func (f fakeProbe) OuterTermProgram(context.Context, tmux.Level) string      { return f.outer }
func (f fakeProbe) OnShow(_ context.Context, l tmux.Level) (bool, error) {
	if f.hidden[l.Socket] {
		return false, nil
	}
	return true, nil
}
func (f fakeProbe) Passthrough(_ context.Context, l tmux.Level) (string, error) {
	if v, ok := f.pass[l.Socket]; ok {
		if v == "old" {
			return "", tmux.ErrNoPassthrough
		}
		return v, nil
	}
	return "", errors.New("no server")
}

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestResolveTarget(t *testing.T) {
	ctx := context.Background()
	table := osc.DefaultTable()
	two := fakeProbe{levels: []tmux.Level{{Socket: "/in"}, {Socket: "/out"}}, outer: "WarpTerminal"}
	// The user's own entry for tmux (seed 003: termPrograms override the
	// built-ins) is their answer: the outer terminal is not asked, and the
	// sequence is still wrapped for tmux.
	mine := table.Overlay("", map[string]osc.Protocol{"TMUX": osc.OSC777})
	inITerm := fakeProbe{levels: []tmux.Level{{Socket: "/in"}}, outer: "iTerm.app"}
	cases := []struct {
		name   string
		env    func(string) string
		probe  TmuxProbe
		proto  osc.Protocol
		levels int
		from   string
		table  *osc.Table // nil: the built-in table
	}{
		{"plain", envOf("TERM_PROGRAM", "WarpTerminal"), nil, osc.OSC777, 0, "environment", nil},
		// KITTY_WINDOW_ID leaks into whatever a kitty shell starts: a known
		// TERM_PROGRAM still decides (seed 003), kitty only an unknown one.
		{"known program with a kitty window id", envOf("TERM_PROGRAM", "WarpTerminal", "KITTY_WINDOW_ID", "3"), nil, osc.OSC777, 0, "environment", nil},
		{"kitty without TERM_PROGRAM", envOf("KITTY_WINDOW_ID", "3"), nil, osc.OSC99, 0, "environment", nil},
		{"tmux started in kitty, attached from iTerm2", envOf("TMUX", "/in,1,0", "TERM_PROGRAM", "tmux", "KITTY_WINDOW_ID", "3"),
			fakeProbe{levels: []tmux.Level{{Socket: "/in"}}, outer: "iTerm.app"}, osc.OSC9, 1, "tmux global environment", nil},
		{"tmux hides the terminal", envOf("TMUX", "/in,1,0", "TERM_PROGRAM", "tmux"), two, osc.OSC777, 2, "tmux global environment", nil},
		{"tmux without a probe", envOf("TMUX", "/in,1,0", "TERM_PROGRAM", "tmux"), nil, osc.OSC99, 1, "environment", nil},
		{"override", envOf("TMUX", "/in,1,0", "TERM_PROGRAM", "ghostty", LevelsOverride, "3"), two, osc.OSC9, 3, "environment", nil},
		{"probe finds nothing", envOf("TMUX", "/in,1,0"), fakeProbe{}, osc.OSC99, 1, "environment", nil},
		// The override is 0 to 8 (docs/troubleshooting.md); anything else is
		// a mistake, and the levels found are used.
		{"override out of range", envOf("TMUX", "/in,1,0", "TERM_PROGRAM", "ghostty", LevelsOverride, "9"), two, osc.OSC9, 2, "environment", nil},
		{"override zero", envOf("TMUX", "/in,1,0", "TERM_PROGRAM", "ghostty", LevelsOverride, "0"), two, osc.OSC9, 0, "environment", nil},
		{"the user maps tmux", envOf("TMUX", "/in,1,0", "TERM_PROGRAM", "tmux"), inITerm, osc.OSC777, 1, "environment", &mine},
		{"no TERM_PROGRAM at all", envOf("TMUX", "/in,1,0"), inITerm, osc.OSC9, 1, "tmux global environment", &mine},
	}
	for _, c := range cases {
		tab := table
		if c.table != nil {
			tab = *c.table
		}
		got := ResolveTarget(ctx, c.env, tab, c.probe)
		if got.Protocol != c.proto || got.TmuxLevels != c.levels || got.From != c.from {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

func TestHerdrToastIsSanitisedAndSized(t *testing.T) {
	toast := herdrToast(Message{Title: strings.Repeat("é", 100) + "\x1b", Body: strings.Repeat("b", 300)}, "")
	if utf8.RuneCountInString(toast.Title) != 80 || !strings.HasSuffix(toast.Title, "…") {
		t.Errorf("title %d code points", utf8.RuneCountInString(toast.Title))
	}
	if utf8.RuneCountInString(toast.Body) != 240 || toast.Sound != "none" {
		t.Errorf("body %d code points, sound %q", utf8.RuneCountInString(toast.Body), toast.Sound)
	}
	if got := herdrToast(Message{Title: "\x07\u200b"}, "request"); got.Title != "Pi" || got.Sound != "request" {
		t.Errorf("empty title: %+v", got)
	}
}

// pacedHerdr is a Herdr that enforces notification.show's rule: one shown
// per second, measured from the last one shown (herdr-socket-api.md §4.6).
type pacedHerdr struct {
	mu        sync.Mutex
	lastShown time.Time
	calls     []HerdrToast
	results   []HerdrResult
	// before, when set, answers instead of the rule while it returns a
	// non-empty reason.
	before func(call int) string
}

func (h *pacedHerdr) ShowNotification(_ context.Context, t HerdrToast) (HerdrResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, t)
	var r HerdrResult
	switch {
	case h.before != nil && h.before(len(h.calls)) != "":
		r = HerdrResult{Reason: h.before(len(h.calls))}
	case !h.lastShown.IsZero() && time.Since(h.lastShown) < time.Second:
		r = HerdrResult{Reason: ReasonRateLimited}
	default:
		h.lastShown = time.Now()
		r = HerdrResult{Shown: true, Reason: ReasonShown}
	}
	h.results = append(h.results, r)
	return r, nil
}

func (h *pacedHerdr) snapshot() ([]HerdrToast, []HerdrResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HerdrToast(nil), h.calls...), append([]HerdrResult(nil), h.results...)
}

// Issue 6: blocked → one notification.show with the sanitised title and
// body.
func TestHerdrBlockedShowsOneSanitisedToast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &pacedHerdr{}
		n := Start(Options{Herdr: h, Project: "my\x1b[31mproject", Instance: "w1:p1"})
		n.Notify(Event{Kind: InputNeeded, Key: "sentinel", Label: "release\u202e\x07"})
		n.Notify(Event{Kind: InputNeeded, Key: "sentinel", Label: "release"}) // the same wait again
		time.Sleep(5 * time.Second)
		n.Close(context.Background())
		calls, _ := h.snapshot()
		want := HerdrToast{Title: "Pi needs your input", Body: "release · my [31mproject", Sound: "none"}
		if len(calls) != 1 || calls[0] != want {
			t.Fatalf("calls %+v, want exactly %+v", calls, want)
		}
	})
}

// The pane's label (wrap --label, the title herdr-pi open gives a pane)
// leads the body of every event without a label of its own: Herdr's toast
// does not say which pane it came from, and three workflow agents in one
// project would otherwise all say "needs your input · api". The session's
// name (Pi's /name), once heard, ends it, in pi-notify's order.
func TestPaneLabelNamesTheAgentInTheBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &pacedHerdr{}
		n := Start(Options{Herdr: h, Project: "api", Label: "fx-retry #2 fixer\x1b[2J", Instance: "w1:p1"})
		n.Notify(Event{Kind: InputNeeded, Key: "blocked#1"})
		time.Sleep(5 * time.Second)
		n.SetSessionName("auth\u202e refactor")
		n.Notify(Event{Kind: PermissionNeeded, Key: "permission:1", Label: "deploy"})
		time.Sleep(5 * time.Second)
		n.SetSessionName("")
		n.Notify(Event{Kind: Failed, Key: "run#2"})
		time.Sleep(5 * time.Second)
		n.Close(context.Background())
		calls, _ := h.snapshot()
		want := []HerdrToast{
			{Title: "Pi needs your input", Body: "fx-retry #2 fixer [2J · api", Sound: "none"},
			{Title: "Pi needs permission", Body: "deploy · api · auth refactor", Sound: "none"},
			{Title: "Pi stopped with an error", Body: "fx-retry #2 fixer [2J · api", Sound: "none"},
		}
		if !slices.Equal(calls, want) {
			t.Fatalf("calls %+v, want %+v", calls, want)
		}
	})
}

// Issue 6: five blocked events within one second → no more toasts than the
// limit allows, none refused for the rate, and the last one delivered.
func TestHerdrCoalescesBurstsAndDeliversTheLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &pacedHerdr{}
		n := Start(Options{Herdr: h, Project: "api"})
		begin := time.Now()
		for i := range 5 {
			n.Notify(Event{Kind: InputNeeded, Key: fmt.Sprint(i), Label: fmt.Sprintf("wait %d", i)})
			time.Sleep(190 * time.Millisecond)
		}
		if time.Since(begin) >= time.Second {
			t.Fatal("the burst took a second or more")
		}
		time.Sleep(3 * time.Second)
		n.Close(context.Background())
		calls, results := h.snapshot()
		for i, r := range results {
			if !r.Shown {
				t.Errorf("call %d refused: %s", i, r.Reason)
			}
		}
		if len(calls) != 2 {
			t.Fatalf("%d calls for a burst inside one second plus one: %+v", len(calls), calls)
		}
		// The three that waited out the pace behind the last are merged
		// into it and counted.
		if calls[0].Body != "wait 0 · api" || calls[1].Body != "wait 4 · api · +3 more" {
			t.Fatalf("first and last expected, got %q then %q", calls[0].Body, calls[1].Body)
		}
		st := n.Status()
		if len(st) != 1 || st[0].Sent != 2 || st[0].Last != ReasonShown {
			t.Fatalf("status %+v", st)
		}
	})
}

// Another agent's toast took the second: the notification is offered again
// a second later instead of being lost, a bounded number of times.
func TestHerdrRetriesNotNowAndGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &pacedHerdr{before: func(call int) string {
			if call == 1 {
				return ReasonRateLimited
			}
			return ""
		}}
		n := Start(Options{Herdr: h})
		n.Notify(Event{Kind: PermissionNeeded})
		time.Sleep(5 * time.Second)
		n.Close(context.Background())
		_, results := h.snapshot()
		if len(results) != 2 || results[1].Reason != ReasonShown {
			t.Fatalf("results %+v", results)
		}

		// A toast on screen for a long while: offered once a pace until
		// herdrRetryFor has passed, then given up.
		busy := &pacedHerdr{before: func(int) string { return ReasonBusy }}
		n = Start(Options{Herdr: busy})
		n.Notify(Event{Kind: PermissionNeeded})
		time.Sleep(2 * herdrRetryFor)
		n.Close(context.Background())
		if calls, _ := busy.snapshot(); len(calls) != int(herdrRetryFor/herdrPace)+1 {
			t.Fatalf("%d calls while busy, want one a second for %v", len(calls), herdrRetryFor)
		}

		var logs []string
		off := &pacedHerdr{before: func(int) string { return ReasonDisabled }}
		n = Start(Options{Herdr: off, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
		n.Notify(Event{Kind: Finished})
		time.Sleep(5 * time.Second)
		n.Notify(Event{Kind: Finished})
		time.Sleep(5 * time.Second)
		n.Close(context.Background())
		if calls, _ := off.snapshot(); len(calls) != 2 {
			t.Fatalf("disabled is final: %d calls", len(calls))
		}
		if len(logs) != 1 || !strings.Contains(logs[0], "delivery") {
			t.Fatalf("logs %q", logs)
		}
	})
}

// stuckHerdr never answers until its context ends.
type stuckHerdr struct{ calls chan struct{} }

func (s stuckHerdr) ShowNotification(ctx context.Context, _ HerdrToast) (HerdrResult, error) {
	s.calls <- struct{}{}
	<-ctx.Done()
	return HerdrResult{}, ctx.Err()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// A channel that hangs holds up neither the caller nor another channel,
// and Close still returns once its deadline passes.
func TestHungChannelBlocksNothingElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := stuckHerdr{calls: make(chan struct{}, 10)}
		var term lockedBuffer
		n := Start(Options{Herdr: stuck, Terminal: &Terminal{W: &term, Target: Target{Protocol: osc.OSC777}}, Project: "p"})
		for i := range 100 {
			n.Notify(Event{Kind: Finished, Key: fmt.Sprint(i)})
		}
		synctest.Wait()
		// The 100 came faster than the terminal took them: what it wrote
		// accounts for every one, shown or counted as merged.
		told := 0
		for _, seq := range strings.SplitAfter(term.String(), "\x1b\\") {
			if seq == "" {
				continue
			}
			told++
			if _, more, ok := strings.Cut(seq, " · +"); ok {
				n, _ := strconv.Atoi(strings.TrimSuffix(more, " more\x1b\\"))
				told += n
			}
			if !strings.HasPrefix(seq, "\x1b]777;notify;Pi finished;p") {
				t.Fatalf("terminal got %q", seq)
			}
		}
		if told != 100 {
			t.Fatalf("terminal accounts for %d of 100: %q", told, term.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n.Close(ctx)
		n.Notify(Event{Kind: Failed}) // after Close: dropped, no panic
		n.Close(context.Background())
	})
}

func TestDuplicatesAreDroppedUntilResolved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var term lockedBuffer
		n := Start(Options{Terminal: &Terminal{W: &term, Target: Target{Protocol: osc.OSC9}}})
		ask := Event{Kind: AskStarted, Key: "flow-1"}
		n.Notify(ask)
		synctest.Wait()
		n.Notify(ask)
		synctest.Wait()
		n.Notify(Event{Kind: PermissionNeeded, Key: "flow-1"}) // another kind, same key
		synctest.Wait()
		n.Resolved(ask)
		n.Notify(ask)
		synctest.Wait()
		n.Close(context.Background())
		if got := strings.Count(term.String(), "\x1b]9;"); got != 3 {
			t.Fatalf("%d sequences: %q", got, term.String())
		}
		if st := n.Status(); st[0].Sent != 3 || st[0].Channel != "terminal" {
			t.Fatalf("%+v", st)
		}
	})
}

func TestChoose(t *testing.T) {
	on := Config{Enabled: true, Channel: "auto"}
	cases := []struct {
		cfg     Config
		inHerdr bool
		route   Route
		problem bool
	}{
		{on, true, RouteHerdr, false},
		{on, false, RouteTerminal, false},
		{Config{Enabled: false, Channel: "auto"}, true, RouteNone, false},
		{Config{Enabled: true, Channel: "off"}, false, RouteNone, false},
		{Config{Enabled: true, Channel: "herdr"}, false, RouteNone, true},
		{Config{Enabled: true, Channel: "herdr"}, true, RouteHerdr, false},
		{Config{Enabled: true, Channel: "terminal"}, true, RouteTerminal, true},
		{Config{Enabled: true, Channel: "terminal"}, false, RouteTerminal, false},
	}
	for i, c := range cases {
		got := Choose(c.cfg, c.inHerdr)
		if got.Route != c.route || (got.Problem != "") != c.problem || got.Why == "" {
			t.Errorf("case %d: %+v", i, got)
		}
	}
}

func TestSetupOptions(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Enabled: true, Channel: "auto", Table: osc.DefaultTable(), Ntfy: NtfyConfig{Enabled: true, Server: "https://ntfy.sh", Topic: "t"}}
	var term lockedBuffer
	h := &pacedHerdr{}
	o, c := Setup{Config: cfg, Getenv: envOf(), InHerdr: true, Herdr: h, TUI: true, Terminal: &term}.Options(ctx)
	if c.Route != RouteHerdr || o.Herdr == nil || o.Terminal != nil || o.Ntfy == nil {
		t.Fatalf("inside Herdr: %+v", o)
	}
	o, _ = Setup{Config: cfg, Getenv: envOf("TERM_PROGRAM", "WarpTerminal"), TUI: true, Terminal: &term}.Options(ctx)
	if o.Herdr != nil || o.Terminal == nil || o.Terminal.Target.Protocol != osc.OSC777 {
		t.Fatalf("outside Herdr: %+v", o)
	}
	o, _ = Setup{Config: cfg, Getenv: envOf(), TUI: false, Terminal: &term}.Options(ctx)
	if o.Terminal != nil {
		t.Fatal("print/json/rpc mode must not write to the terminal")
	}
	cfg.Enabled = false
	if o, _ = (Setup{Config: cfg, Getenv: envOf(), InHerdr: true, Herdr: h}).Options(ctx); o.Herdr != nil || o.Ntfy != nil {
		t.Fatalf("disabled: %+v", o)
	}
}

func TestMain(m *testing.M) {
	if tmuxHelper() {
		return
	}
	testenv.Main(m)
}

func TestDoctorRows(t *testing.T) {
	ctx := context.Background()
	probe := fakeProbe{pass: map[string]string{"/a": "old", "/b": "all"}}
	checks := TmuxPassthrough(ctx, probe, []tmux.Level{{Socket: "/a", Pane: "%1"}, {Socket: "/b"}, {Socket: "/gone"}})
	if len(checks) != 3 || checks[0].Status != CheckOK || !strings.Contains(checks[0].Detail, "older than 3.3") || !strings.Contains(checks[0].Detail, "while the pane is visible") ||
		checks[1].Status != CheckOK || checks[2].Status != CheckWarn || checks[0].Name != "tmux passthrough (level 1 of 3)" {
		t.Fatalf("%+v", checks)
	}
	cfg := Config{Enabled: true, Channel: "auto", Table: osc.DefaultTable(),
		Ntfy: NtfyConfig{Enabled: true, Server: "http://ntfy.lan", Topic: "t", Token: "k", Priority: 3}}
	rows := Doctor(ctx, DoctorInput{Config: cfg, Getenv: envOf("KITTY_WINDOW_ID", "7")})
	byName := map[string]Check{}
	for _, c := range rows {
		byName[c.Name] = c
	}
	if c := byName["ntfy"]; c.Status != CheckWarn || !strings.Contains(c.Detail, "plain text") {
		t.Errorf("ntfy: %+v", c)
	}
	if c := byName["terminal protocol"]; !strings.Contains(c.Detail, "osc99, for kitty") {
		t.Errorf("protocol: %+v", c)
	}
	rows = Doctor(ctx, DoctorInput{Config: Config{Enabled: true, Channel: "terminal"}, Getenv: envOf(), InHerdr: true})
	if rows[0].Status != CheckFail || !strings.Contains(rows[0].Detail, "Herdr does not pass OSC") {
		t.Errorf("terminal inside Herdr: %+v", rows[0])
	}
}

// Doctor names what chose the protocol: a TERM_PROGRAM the table knows wins
// over an inherited KITTY_WINDOW_ID, which wins over the fallback.
func TestDoctorSaysWhatChoseTheProtocol(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Enabled: true, Channel: "terminal", Table: osc.DefaultTable().Overlay(osc.OSC777, map[string]osc.Protocol{"MyTerminal": osc.OSC9})}
	cases := []struct {
		name string
		env  func(string) string
		want string
	}{
		{"table", envOf("TERM_PROGRAM", "WarpTerminal", "KITTY_WINDOW_ID", "7"), `osc777, for TERM_PROGRAM="WarpTerminal" (environment)`},
		{"user table", envOf("TERM_PROGRAM", "myterminal", "KITTY_WINDOW_ID", "7"), `osc9, for TERM_PROGRAM="myterminal" (environment)`},
		{"kitty, unknown program", envOf("TERM_PROGRAM", "Other", "KITTY_WINDOW_ID", "7"), `osc99, for kitty: KITTY_WINDOW_ID is set and TERM_PROGRAM="Other" (environment) is not in the table`},
		{"kitty, no program", envOf("KITTY_WINDOW_ID", "7"), "osc99, for kitty: KITTY_WINDOW_ID is set and TERM_PROGRAM is not"},
		{"fallback, unknown program", envOf("TERM_PROGRAM", "Other"), `osc777, the fallback: TERM_PROGRAM="Other" (environment) is not in the table`},
		{"fallback, no program", envOf(), "osc777, the fallback: TERM_PROGRAM is not set"},
	}
	for _, c := range cases {
		var got string
		for _, row := range Doctor(ctx, DoctorInput{Config: cfg, Getenv: c.env}) {
			if row.Name == "terminal protocol" {
				got = row.Detail
			}
		}
		if got != c.want {
			t.Errorf("%s: terminal protocol %q, want %q", c.name, got, c.want)
		}
	}
}

// Issue 10: the blocked toast says the question's first line, sanitised
// and cut to 120 code points, on the on-screen channels; ntfy, which
// leaves the machine, keeps to the label and project.
func TestToastsSayTheQuestionOnScreenOnly(t *testing.T) {
	q := "\n  \nWhich file should I \x1b[31medit\u202e?\nmain.go or util.go\n:input_needed:"
	m := compose(Event{Kind: InputNeeded, Question: q}, "", "api", "", "w1")
	if m.Question != "Which file should I [31medit ?" {
		t.Fatalf("question %q", m.Question)
	}
	if got := herdrToast(m, "").Body; got != "Which file should I [31medit ? · api" {
		t.Errorf("Herdr body %q", got)
	}
	if got := string((Target{Protocol: osc.OSC777}).Sequence(m)); got != "\x1b]777;notify;Pi needs your input;Which file should I [31medit ? · api\x1b\\" {
		t.Errorf("terminal %q", got)
	}
	srv := newNtfyServer(t)
	ny := &Ntfy{Client: srv.Client(), Server: srv.URL, Topic: "t"}
	if err := ny.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if reqs := srv.seen(); len(reqs) != 1 || reqs[0].Body != "api" {
		t.Errorf("ntfy %+v", reqs)
	}

	long := compose(Event{Kind: InputNeeded, Question: strings.Repeat("é", 300)}, "", "", "", "")
	if n := utf8.RuneCountInString(long.Question); n != questionLimit || !strings.HasSuffix(long.Question, "…") {
		t.Errorf("long question: %d code points %q", n, long.Question)
	}
	// Merged toasts are counted even when the body is cut to Herdr's size.
	long.Body, long.Merged = strings.Repeat("b", 300), 2
	if body := herdrToast(long, "").Body; utf8.RuneCountInString(body) != herdrBodyMax || !strings.HasSuffix(body, "… · +2 more") {
		t.Errorf("cut body %q", body)
	}
}

func FuzzQuestionLine(f *testing.F) {
	for _, s := range []string{"Which file?\n:input_needed:", "\n\n\x1b]0;x\x07 hi", strings.Repeat("ab\u200b", 100), "\r\n\t", "What’s next — “main.go”…?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := QuestionLine(s)
		if utf8.RuneCountInString(q) > questionLimit || !utf8.ValidString(q) && utf8.ValidString(s) {
			t.Fatalf("QuestionLine(%q) = %q", s, q)
		}
		for _, r := range strings.TrimSuffix(q, "…") { // the cut's own mark
			// Whatever the label rule blanks — controls, the invisible
			// characters — must not be left; typographic punctuation stays.
			if r != ' ' && osc.CleanLabel(string(r)) == "" {
				t.Fatalf("QuestionLine(%q) keeps %U", s, r)
			}
		}
	})
}

// orderLog records what happened, in order.
type orderLog struct {
	mu  sync.Mutex
	got []string
}

func (l *orderLog) add(s string) {
	l.mu.Lock()
	l.got = append(l.got, s)
	l.mu.Unlock()
}

func (l *orderLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.got, " ")
}

// fakeBarrier returns from Reported once delivered is closed (the report
// reached Herdr), or when ctx ends.
type fakeBarrier struct {
	log       *orderLog
	delivered chan struct{}
}

func (b *fakeBarrier) Reported(ctx context.Context) error {
	select {
	case <-b.delivered:
		b.log.add("reported")
		return nil
	case <-ctx.Done():
		b.log.add("barrier gave up")
		return ctx.Err()
	}
}

type loggingHerdr struct{ log *orderLog }

func (h loggingHerdr) ShowNotification(_ context.Context, t HerdrToast) (HerdrResult, error) {
	h.log.add("toast:" + t.Title)
	return HerdrResult{Shown: true, Reason: ReasonShown}, nil
}

// Issue 10: report first, then toast. The toast waits for the state report
// to reach Herdr, and goes anyway, a bounded while later, when it never
// does.
func TestHerdrToastWaitsForTheStateReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &orderLog{}
		b := &fakeBarrier{log: log, delivered: make(chan struct{})}
		n := Start(Options{Herdr: loggingHerdr{log}, Barrier: b})
		n.Notify(Event{Kind: InputNeeded})
		time.Sleep(95 * time.Millisecond)
		log.add("report delivered")
		close(b.delivered)
		synctest.Wait()
		n.Close(context.Background())
		if got := log.String(); got != "report delivered reported toast:Pi needs your input" {
			t.Fatalf("order %q", got)
		}

		log = &orderLog{}
		var logs []string
		stuck := &fakeBarrier{log: log, delivered: make(chan struct{})}
		n = Start(Options{Herdr: loggingHerdr{log}, Barrier: stuck, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
		start := time.Now()
		n.Notify(Event{Kind: InputNeeded})
		time.Sleep(barrierWait - time.Millisecond)
		if got := log.String(); got != "" {
			t.Fatalf("before the bound: %q", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		n.Close(context.Background())
		if got := log.String(); got != "barrier gave up toast:Pi needs your input" || time.Since(start) != barrierWait {
			t.Fatalf("order %q after %v", got, time.Since(start))
		}
		if len(logs) != 1 || !strings.Contains(logs[0], "before the state report") {
			t.Fatalf("logs %q", logs)
		}
	})
}

// Issue 10: a toast Herdr answered "not now" and a newer one that arrives
// before it is offered again: the newer one goes, counting the other.
func TestHerdrRetriedToastIsCountedWhenReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &pacedHerdr{before: func(call int) string {
			if call == 1 {
				return ReasonBusy
			}
			return ""
		}}
		n := Start(Options{Herdr: h, Project: "api"})
		n.Notify(Event{Kind: InputNeeded, Key: "a", Label: "first"})
		synctest.Wait() // answered busy: offered again after the pace
		time.Sleep(500 * time.Millisecond)
		n.Unblocked() // answered; the next run finished
		n.Notify(Event{Kind: Finished, Key: "b"})
		time.Sleep(3 * time.Second)
		n.Close(context.Background())
		calls, results := h.snapshot()
		if len(calls) != 2 || results[1].Reason != ReasonShown || calls[1].Title != "Pi finished" || calls[1].Body != "api · +1 more" {
			t.Fatalf("calls %+v results %+v", calls, results)
		}
	})
}

// A newer toast that arrives while Herdr is still answering "not now" to
// the older one: the older is not offered again, and the newer says it
// replaced it.
func TestHerdrToastArrivingDuringANotNowCountsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n *Notifier
		h := &pacedHerdr{before: func(call int) string {
			if call == 1 {
				n.Notify(Event{Kind: Finished, Key: "b"}) // during the send
				return ReasonBusy
			}
			return ""
		}}
		n = Start(Options{Herdr: h, Project: "api"})
		// News both (a question would keep its place: TestNewsWaitsBehindAQuestionStillOpen).
		n.Notify(Event{Kind: Finished, Key: "a", Label: "first"})
		time.Sleep(3 * time.Second)
		n.Close(context.Background())
		calls, results := h.snapshot()
		if len(calls) != 2 || results[1].Reason != ReasonShown || calls[1].Title != "Pi finished" || calls[1].Body != "api · +1 more" {
			t.Fatalf("calls %+v results %+v", calls, results)
		}
	})
}

// News that comes while a question Herdr held back is still open (a run
// that ends while a script's wait keeps the pane blocked, a hook's post)
// does not take the question's place: the question is shown first, the
// news after it, and neither is left to "+1 more". It makes no difference
// whether the news came while the question waited or while it was out.
func TestNewsWaitsBehindAQuestionStillOpen(t *testing.T) {
	for _, during := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var n *Notifier
			h := &pacedHerdr{before: func(call int) string {
				if call == 1 {
					if during {
						n.Notify(Event{Kind: Finished, Key: "b"})
					}
					return ReasonBusy
				}
				return ""
			}}
			n = Start(Options{Herdr: h, Project: "api"})
			n.Notify(Event{Kind: InputNeeded, Key: "a", Question: "Which database?"})
			if !during {
				synctest.Wait() // answered busy: offered again after the pace
				time.Sleep(500 * time.Millisecond)
				n.Notify(Event{Kind: Finished, Key: "b"})
			}
			time.Sleep(5 * time.Second)
			n.Close(context.Background())
			calls, _ := h.snapshot()
			var shown []string
			for _, c := range calls {
				shown = append(shown, c.Title+": "+c.Body)
			}
			want := []string{"Pi needs your input: Which database? · api", "Pi needs your input: Which database? · api", "Pi finished: api"}
			if !slices.Equal(shown, want) {
				t.Fatalf("news during the send %v: toasts %q\nwant %q", during, shown, want)
			}
		})
	}
}

// A reason notify does not know is Herdr's word, shown quoted with its
// escapes written out: it may come from a socket that is not Herdr's.
func TestHerdrHintQuotesAnUnknownReason(t *testing.T) {
	if got, want := HerdrHint("disabled\x1b]0;PWNED\a\u202e"), `Herdr answered "disabled\x1b]0;PWNED\a\u202e"`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := HerdrHint(ReasonBusy); got != "another Herdr toast was on screen" {
		t.Errorf("a known reason: %q", got)
	}
}

// `herdr-pi notify --body` passes on whatever a hook gave it; the toast
// Herdr draws in its terminal carries none of it that a terminal would
// act on or that reorders the line. (The title is fixed words and the
// agent's name, cleaned where it is composed.)
func TestHerdrToastBodyIsCleaned(t *testing.T) {
	const evil = "PWNED\x1b]0;x\a\x1b[2J\u009b1m\u202e\u200bend"
	toast := herdrToast(Message{Title: "t", Body: evil}, "")
	if !strings.Contains(toast.Body, "PWNED") || !strings.Contains(toast.Body, "end") {
		t.Fatalf("body %q: the text did not reach the toast, so this proves nothing", toast.Body)
	}
	if strings.ContainsAny(toast.Body, "\x1b\a\u009b\u202e\u200b") {
		t.Errorf("body %q keeps a control or invisible character", toast.Body)
	}
}

// FuzzTargetSequence: whatever a hook or an agent puts in a title and a
// body, each protocol writes one sequence that nothing inside can end or
// escape (one ESC, one ST, no BEL or C1, valid UTF-8), of at most
// osc.MaxCodePoints code points of text, and a body left after cleaning is
// never lost beside a title folded in front of it.
func FuzzTargetSequence(f *testing.F) {
	f.Add("Pi needs your input", "api", 0)
	f.Add(strings.Repeat("t", 300), "api", 2)
	f.Add("T\x1b]9;x\x07", "b\u009c;c", 1)
	f.Fuzz(func(t *testing.T, title, body string, merged int) {
		m := Message{Title: title, Body: body, ID: "pi-ask", Merged: int(uint(merged) % 5)}
		for _, p := range osc.Protocols {
			seq := string((Target{Protocol: p}).Sequence(m))
			if seq == "" {
				continue
			}
			inner, ok := strings.CutSuffix(strings.TrimPrefix(seq, "\x1b]"), "\x1b\\")
			if !ok || !strings.HasPrefix(seq, "\x1b]") || !utf8.ValidString(seq) || strings.ContainsAny(inner, "\x1b\x07\u009c\u009d") {
				t.Fatalf("%s: %q is not one closed sequence", p, seq)
			}
			text := inner[strings.LastIndexByte(inner, ';')+1:]
			if utf8.RuneCountInString(text) > osc.MaxCodePoints {
				t.Fatalf("%s: %d code points of text: %q", p, utf8.RuneCountInString(text), seq)
			}
			if p != osc.OSC777 && osc.Sanitize(title) != "" && osc.Sanitize(m.screenBody(osc.MaxCodePoints)) != "" && !strings.Contains(text, partSep) {
				t.Fatalf("%s: the body was lost beside the title: %q", p, seq)
			}
		}
	})
}

// Under tmux, each notification asks every level whether it lets the
// sequence out. Where one does not (allow-passthrough off, or a tmux too
// old to have it) the pane's bell is rung instead, and the channel's
// status and the log (once a streak) name that tmux and the fix. A level
// that cannot be asked leaves the sequence as it was, and a level set on
// meanwhile gets the sequence from the next notification.
func TestATmuxThatDropsTheSequenceGetsTheBell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		levels := []tmux.Level{{Socket: "/inner", Pane: "%1"}, {Socket: "/outer", Pane: "%4"}}
		pass := map[string]string{"/inner": "on", "/outer": "off"}
		hidden := map[string]bool{}
		var term, logs lockedBuffer
		o, _ := Setup{
			Config: Config{Enabled: true, Channel: "auto", Table: osc.DefaultTable()},
			Getenv: envOf("TMUX", "/inner,1,0", "TMUX_PANE", "%1"), TUI: true, Terminal: &term,
			Tmux: fakeProbe{levels: levels, outer: "WarpTerminal", pass: pass, hidden: hidden},
			Logf: func(f string, args ...any) { fmt.Fprintf(&logs, f+"\n", args...) },
		}.Options(context.Background())
		n := Start(o)
		defer n.Close(context.Background())
		key := 0
		send := func() string {
			t.Helper()
			key++
			before := term.String()
			n.Notify(Event{Kind: AskStarted, Key: strconv.Itoa(key)})
			synctest.Wait()
			return strings.TrimPrefix(term.String(), before)
		}
		status := func() ChannelStatus { return n.Status()[0] }

		for range 2 {
			if got := send(); got != "\a" {
				t.Fatalf("the outer tmux drops the sequence: wrote %q, want the bell", got)
			}
		}
		if st := status(); st.Last != OutcomeBell || st.Failing || !strings.HasPrefix(st.Hint, "tmux server /outer, pane %4: allow-passthrough is off") || !strings.Contains(st.Hint, "set -g allow-passthrough on") {
			t.Fatalf("status %+v", st)
		}
		if got := strings.Count(logs.String(), "allow-passthrough is off"); got != 1 {
			t.Fatalf("the log says it %d times, want once:\n%s", got, logs.String())
		}

		pass["/outer"] = "on"
		if got := send(); !strings.HasPrefix(got, "\x1bPtmux;\x1b\x1bPtmux;") || !strings.Contains(got, "777;notify;") {
			t.Fatalf("both levels let it out: wrote %q, want the sequence wrapped twice", got)
		}
		if st := status(); st.Last != OutcomeWritten || st.Hint != "" {
			t.Fatalf("status %+v", st)
		}

		// "on" lets it out of a pane on show only; "all" of every pane.
		hidden["/outer"] = true
		if got := send(); got != "\a" {
			t.Fatalf("the outer pane is not on show: wrote %q, want the bell", got)
		}
		if st := status(); !strings.HasPrefix(st.Hint, "tmux server /outer, pane %4: the pane is not on show") || !strings.Contains(st.Hint, "allow-passthrough all") {
			t.Fatalf("status %+v", st)
		}
		pass["/outer"] = "all"
		if got := send(); !strings.Contains(got, "777;notify;") {
			t.Fatalf("allow-passthrough all: wrote %q, want the sequence", got)
		}

		// A tmux before 3.3 has no allow-passthrough: it lets every
		// sequence out of a pane on show (tmux's CHANGES for 3.3: the
		// option, default off, was added to control what had always
		// passed), so it acts as "on".
		pass["/inner"] = "old"
		if got := send(); !strings.Contains(got, "777;notify;") {
			t.Fatalf("a tmux older than the option, pane on show: wrote %q, want the sequence", got)
		}
		if st := status(); st.Last != OutcomeWritten || st.Hint != "" {
			t.Fatalf("status %+v", st)
		}
		hidden["/inner"] = true
		if got := send(); got != "\a" {
			t.Fatalf("a tmux older than the option, pane not on show: wrote %q, want the bell", got)
		}
		if st := status(); !strings.HasPrefix(st.Hint, "tmux server /inner, pane %1: the pane is not on show") || !strings.Contains(st.Hint, "upgrade tmux") {
			t.Fatalf("status %+v", st)
		}
		hidden["/inner"] = false

		delete(pass, "/inner") // cannot be asked
		if got := send(); !strings.Contains(got, "777;notify;") {
			t.Fatalf("a tmux that cannot be asked: wrote %q, want the sequence", got)
		}
	})
}
