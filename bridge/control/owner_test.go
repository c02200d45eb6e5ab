package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// ownerRec is the wrapper's owner sink in these tests.
type ownerRec struct {
	mu   sync.Mutex
	link *OwnerLink
	ch   chan OwnerMessage
}

func (o *ownerRec) OwnerEvent(l *OwnerLink, m OwnerMessage) {
	o.mu.Lock()
	if _, ok := m.(OwnerConnected); ok {
		o.link = l
	}
	o.mu.Unlock()
	o.ch <- m
}

func (o *ownerRec) next(t *testing.T) OwnerMessage {
	t.Helper()
	select {
	case m := <-o.ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no owner message within 5s")
		return nil
	}
}

// ownerFixture: a server with an owner sink and a raw owner connection
// that has said hello.
func ownerFixture(t *testing.T) (*fixture, *ownerRec, *raw, *OwnerLink) {
	t.Helper()
	rec := &ownerRec{ch: make(chan OwnerMessage, 64)}
	f := start(t, func(c *Config) { c.Owner = rec })
	c := f.raw(t)
	c.line(t, fmt.Sprintf(`{"type":"hello","token":%q,"role":"owner","pid":1,"version":2}`, f.tok))
	if got := c.read(t); got != `{"type":"hello","version":2,"ok":true}` {
		t.Fatalf("owner hello reply %q", got)
	}
	if _, ok := rec.next(t).(OwnerConnected); !ok {
		t.Fatal("no OwnerConnected first")
	}
	return f, rec, c, rec.link
}

// frame reads one wrapper → owner line.
func frame(t *testing.T, c *raw) Message {
	t.Helper()
	m, err := DecodeOwner([]byte(c.read(t)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const okLaunch = `{"runId":"r1","sessionId":"s1","sessionFile":"/a/s.jsonl","label":"finder","model":"fake/m:off","toolNames":["read","lookup"],` +
	`"executable":"/usr/bin/node","entrypoint":"/pi/cli.js","argv":["/usr/bin/node","/pi/cli.js","--session","/a/s.jsonl",` +
	`"--system-prompt",{"file":"system-prompt.md"},"--extension",{"toolBridge":true},"go on"],` +
	`"env":{"PI_CODING_AGENT_DIR":"/agent"},"cwd":"/proj","files":[{"name":"system-prompt.md","content":"be brief"}],` +
	`"tools":[{"name":"lookup","description":"looks up","parameters":{"type":"object"}}],"needsContinue":true,"lastStopReason":"toolUse"}`

func TestOwnerLinkCarriesAHandoff(t *testing.T) {
	_, rec, c, link := ownerFixture(t)
	ctx := context.Background()

	// Unasked: engine status and a live attempt reach the sink.
	c.line(t, `{"type":"engine","data":{"registered":true,"upstream":true,"hidden":["openSession","openLiveSession"],"fullyInspectable":false}}`)
	c.line(t, `{"type":"attempt","data":{"runId":"r1","sessionId":"s1","sessionFile":"/a/s.jsonl","label":"finder","attempt":1,"live":true}}`)
	if e, ok := rec.next(t).(EngineStatus); !ok || !e.Registered || len(e.Hidden) != 2 {
		t.Fatalf("engine status %+v", e)
	}
	if a, ok := rec.next(t).(Attempt); !ok || !a.Live || a.SessionFile != "/a/s.jsonl" {
		t.Fatalf("attempt %+v", a)
	}

	// The order goes out; the launch comes back typed.
	got := make(chan Launch, 1)
	go func() {
		l, err := link.Handoff(ctx, HandoffOrder{ID: "h1", RunID: "r1", SessionID: "s1", Request: "r7"})
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	m := frame(t, c)
	if m.Type != TypeHandoff || m.ID != "h1" || string(m.Data) != `{"runId":"r1","sessionId":"s1","request":"r7"}` {
		t.Fatalf("order line %+v %s", m, m.Data)
	}
	c.line(t, `{"type":"launch","id":"h1","data":`+okLaunch+`}`)
	l := <-got
	if l.ID != "h1" || len(l.Argv) != 9 || l.Argv[5].File != "system-prompt.md" || !l.Argv[7].ToolBridge || l.Argv[8].Text != "go on" || l.Tools[0].Name != "lookup" || !l.NeedsContinue {
		t.Fatalf("launch %+v", l)
	}

	// A tool call: one update, then its result.
	var updates []string
	res := make(chan string, 1)
	go func() {
		v, err := link.CallTool(ctx, "h1", ToolCall{ToolCallID: "tc1", Name: "lookup", Params: json.RawMessage(`{"q":"x"}`)}, func(u json.RawMessage) { updates = append(updates, string(u)) })
		if err != nil {
			t.Error(err)
		}
		res <- string(v)
	}()
	m = frame(t, c)
	if m.Type != TypeToolCall || string(m.Data) != `{"handoff":"h1","toolCallId":"tc1","name":"lookup","params":{"q":"x"}}` {
		t.Fatalf("tool call line %+v %s", m, m.Data)
	}
	c.line(t, fmt.Sprintf(`{"type":"tool_update","id":%q,"data":{"value":{"step":1}}}`, m.ID))
	c.line(t, fmt.Sprintf(`{"type":"tool_result","id":%q,"data":{"value":{"content":[]}}}`, m.ID))
	if v := <-res; v != `{"content":[]}` || len(updates) != 1 || updates[0] != `{"step":1}` {
		t.Fatalf("result %s, updates %q", v, updates)
	}

	// A tool error comes back as ToolFailed.
	fail := make(chan error, 1)
	go func() {
		_, err := link.CallTool(ctx, "h1", ToolCall{ToolCallID: "tc2", Name: "lookup"}, nil)
		fail <- err
	}()
	m = frame(t, c)
	c.line(t, fmt.Sprintf(`{"type":"tool_error","id":%q,"data":{"error":"no such word"}}`, m.ID))
	var tf *ToolFailed
	if err := <-fail; !errors.As(err, &tf) || tf.Message != "no such word" {
		t.Fatalf("tool error: %v", err)
	}

	// An abandoned call aborts the tool; the owner's late answer is dropped
	// without holding the link up.
	actx, cancel := context.WithCancel(ctx)
	aborted := make(chan error, 1)
	go func() {
		_, err := link.CallTool(actx, "h1", ToolCall{ToolCallID: "tc3", Name: "lookup"}, nil)
		aborted <- err
	}()
	call := frame(t, c)
	cancel()
	if m := frame(t, c); m.Type != TypeToolAbort || m.ID != call.ID {
		t.Fatalf("after cancel the owner got %+v, want tool_abort %s", m, call.ID)
	}
	if err := <-aborted; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned call: %v", err)
	}
	for i := 0; i < 40; i++ { // more than the call's buffer
		c.line(t, fmt.Sprintf(`{"type":"tool_update","id":%q,"data":{"value":%d}}`, call.ID, i))
	}
	c.line(t, fmt.Sprintf(`{"type":"tool_error","id":%q,"data":{"error":"aborted"}}`, call.ID))

	// The pane's state, then the handback and the owner's resume.
	if err := link.PaneState("h1", PaneWorking); err != nil {
		t.Fatal(err)
	}
	if m := frame(t, c); m.Type != TypePaneState || string(m.Data) != `{"state":"working"}` {
		t.Fatalf("pane state line %+v", m)
	}
	resumed := make(chan Resumed, 1)
	go func() {
		r, err := link.Handback(ctx, "h1", Handback{Reason: HandbackIdle, Transferred: true, LastStopReason: "stop"})
		if err != nil {
			t.Error(err)
		}
		resumed <- r
	}()
	m = frame(t, c)
	if m.Type != TypeHandback || string(m.Data) != `{"reason":"idle","transferred":true,"needsContinue":false,"lastStopReason":"stop"}` {
		t.Fatalf("handback line %+v %s", m, m.Data)
	}
	c.line(t, `{"type":"resumed","id":"h1","data":{"transferred":true,"continued":false}}`)
	if r := <-resumed; r.ID != "h1" || !r.Transferred || r.Continued {
		t.Fatalf("resumed %+v", r)
	}

	// Menu requests and a refusal.
	c.line(t, `{"type":"handoff_request","id":"r8","data":{"runId":"r1","agentId":"r1:1","attempt":1,"sessionId":"s1","label":"finder"}}`)
	if r, ok := rec.next(t).(HandoffRequest); !ok || r.ID != "r8" || r.AgentID != "r1:1" {
		t.Fatalf("handoff request %+v", r)
	}
	if err := link.Refuse("r8", errors.New("not inside Herdr")); err != nil {
		t.Fatal(err)
	}
	if m := frame(t, c); m.Type != TypeRequestRefused || m.ID != "r8" || string(m.Data) != `{"error":"not inside Herdr"}` {
		t.Fatalf("refusal line %+v", m)
	}

	// Fully inspectable mode: a prompt's turn asked to run in Herdr, and
	// the end of its run.
	c.line(t, `{"type":"handoff_request","id":"r9","data":{"runId":"r1","attempt":1,"sessionId":"s1","label":"finder","turn":true}}`)
	if r, ok := rec.next(t).(HandoffRequest); !ok || r.ID != "r9" || !r.Turn {
		t.Fatalf("turn request %+v", r)
	}
	c.line(t, `{"type":"run_ended","data":{"runId":"r1","state":"completed"}}`)
	if e, ok := rec.next(t).(RunEnded); !ok || e.RunID != "r1" || e.State != "completed" {
		t.Fatalf("run ended %+v", e)
	}
}

func TestOwnerLinkEndsWaitsOnRefusalCancelAndGoneOwner(t *testing.T) {
	_, rec, c, link := ownerFixture(t)
	ctx := context.Background()

	errs := make(chan error, 1)
	order := func(id string) {
		go func() {
			_, err := link.Handoff(ctx, HandoffOrder{ID: id, RunID: "r1", SessionID: "s1"})
			errs <- err
		}()
		frame(t, c)
	}

	order("h1")
	c.line(t, `{"type":"handoff_error","id":"h1","data":{"code":"busy","error":"a handoff is under way"}}`)
	var refused *HandoffRefused
	if err := <-errs; !errors.As(err, &refused) || refused.Code != HandoffErrBusy {
		t.Fatalf("refused order: %v", err)
	}

	order("h2")
	c.line(t, `{"type":"handoff_cancel","id":"h2","data":{"reason":"the run was stopped"}}`)
	var cancelled *HandoffCancelled
	if err := <-errs; !errors.As(err, &cancelled) || cancelled.Reason != "the run was stopped" {
		t.Fatalf("cancelled order: %v", err)
	}
	if m, ok := rec.next(t).(HandoffCancel); !ok || m.ID != "h2" {
		t.Fatalf("the sink did not hear the cancel: %+v", m)
	}

	// A handback withdraws an order still waiting for its launch.
	order("h3")
	go func() { _, _ = link.Handback(ctx, "h3", Handback{Reason: HandbackAborted}) }()
	if err := <-errs; !errors.As(err, &cancelled) {
		t.Fatalf("withdrawn order: %v", err)
	}
	frame(t, c) // the handback line

	// The owner goes: everything waiting ends.
	order("h4")
	c.Close()
	if err := <-errs; !errors.Is(err, ErrOwnerGone) {
		t.Fatalf("order with the owner gone: %v", err)
	}
	for {
		if _, ok := rec.next(t).(OwnerDisconnected); ok {
			break
		}
	}
	if _, err := link.CallTool(ctx, "h4", ToolCall{Name: "x"}, nil); !errors.Is(err, ErrOwnerGone) {
		t.Fatalf("tool call with the owner gone: %v", err)
	}
	select {
	case <-link.Done():
	default:
		t.Fatal("Done is open after the link ended")
	}
}

func TestOwnerLinkRefusesWhatItMustNot(t *testing.T) {
	t.Run("no owner sink", func(t *testing.T) {
		f := start(t)
		c := f.raw(t)
		c.line(t, fmt.Sprintf(`{"type":"hello","token":%q,"role":"owner","version":2}`, f.tok))
		if got := c.read(t); !strings.Contains(got, `"type":"error"`) {
			t.Fatalf("reply %q", got)
		}
		c.closed(t)
	})
	t.Run("old version", func(t *testing.T) {
		rec := &ownerRec{ch: make(chan OwnerMessage, 8)}
		f := start(t, func(c *Config) { c.Owner = rec })
		c := f.raw(t)
		c.line(t, fmt.Sprintf(`{"type":"hello","token":%q,"role":"owner","version":1}`, f.tok))
		if got := c.read(t); !strings.Contains(got, "different herdr-pi builds") {
			t.Fatalf("reply %q", got)
		}
		c.closed(t)
	})
	for _, tc := range []struct{ name, line, log string }{
		{"wrapper-bound type", `{"type":"handoff","id":"h1","data":{"runId":"r","sessionId":"s"}}`, "travels from the wrapper"},
		{"unknown field", `{"type":"attempt","data":{"runId":"r","sessionId":"s","live":true,"extra":1}}`, "unknown field"},
		{"launch naming a missing file", `{"type":"launch","id":"h1","data":` + strings.Replace(okLaunch, `"files":[{"name":"system-prompt.md","content":"be brief"}]`, `"files":[]`, 1) + `}`, "does not carry"},
		{"event on the owner link", `{"type":"event","name":"agent_start"}`, "not an owner link message"},
		{"no id", `{"type":"tool_result","data":{"value":1}}`, "malformed id"},
		{"run end without a run", `{"type":"run_ended","data":{"state":"completed"}}`, "runId is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, rec, c, _ := ownerFixture(t)
			c.line(t, tc.line)
			f.logs.waitFor(t, tc.log)
			c.closed(t)
			for {
				if _, ok := rec.next(t).(OwnerDisconnected); ok {
					break
				}
			}
		})
	}
}

func TestOwnerLinkTakesLongLinesUpToItsLimit(t *testing.T) {
	f, _, c, link := ownerFixture(t)
	got := make(chan error, 1)
	go func() {
		l, err := link.Handoff(context.Background(), HandoffOrder{ID: "h1", RunID: "r1", SessionID: "s1"})
		if err == nil && len(l.Files[0].Content) != 4<<20 {
			err = fmt.Errorf("system prompt of %d bytes", len(l.Files[0].Content))
		}
		got <- err
	}()
	frame(t, c)
	big := strings.Replace(okLaunch, `"be brief"`, `"`+strings.Repeat("x", 4<<20)+`"`, 1)
	c.line(t, `{"type":"launch","id":"h1","data":`+big+`}`)
	if err := <-got; err != nil {
		t.Fatalf("a 4 MiB launch: %v", err)
	}
	huge := `{"type":"engine","data":{"error":"` + strings.Repeat("y", MaxOwnerLine) + `"}}`
	c.line(t, huge)
	f.logs.waitFor(t, "line too long")
	c.closed(t)
}

func TestLaunchChecks(t *testing.T) {
	var base Launch
	if err := strictUnmarshal([]byte(okLaunch), &base); err != nil {
		t.Fatal(err)
	}
	if err := base.check(); err != nil {
		t.Fatalf("the good launch: %v", err)
	}
	for _, tc := range []struct {
		name string
		mut  func(*Launch)
		want string
	}{
		{"relative cwd", func(l *Launch) { l.Cwd = "proj" }, "not absolute"},
		{"argv not starting with the executable", func(l *Launch) { l.Argv[0] = Arg{Text: "pi"} }, "does not start with the executable"},
		{"bridge without tools", func(l *Launch) { l.Tools = nil }, "tool bridge"},
		{"tools without bridge", func(l *Launch) { l.Argv = l.Argv[:7] }, "tool bridge"},
		{"file name with a slash", func(l *Launch) { l.Files[0].Name = "../x"; l.Argv[5].File = "../x" }, "plain name"},
		{"unused file", func(l *Launch) { l.Files = append(l.Files, LaunchFile{Name: "extra.md"}) }, "not used"},
		{"NUL in a word", func(l *Launch) { l.Argv[8].Text = "a\x00b" }, "NUL"},
		{"bad env name", func(l *Launch) { l.Env = map[string]string{"A=B": "c"} }, "NAME=value"},
		{"duplicate tool", func(l *Launch) { l.Tools = append(l.Tools, l.Tools[0]) }, "twice"},
		// Two files of one name: the second would overwrite the first.
		{"duplicate file", func(l *Launch) { l.Files = append(l.Files, l.Files[0]) }, "listed twice"},
		{"parameters not an object", func(l *Launch) { l.Tools[0].Parameters = json.RawMessage(`[1]`) }, "JSON schema object"},
		{"no model", func(l *Launch) { l.Model = "" }, "model"},
		{"session id with a newline", func(l *Launch) { l.SessionID = "a\nb" }, "sessionId"},
		{"too many notes", func(l *Launch) { l.Notes = make([]string, maxNotes+1) }, "notes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Launch
			if err := strictUnmarshal([]byte(okLaunch), &l); err != nil {
				t.Fatal(err)
			}
			tc.mut(&l)
			if err := l.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// A note goes to the wrapper's log and never stops a handoff: one with
// control characters, or too long, is cleaned and cut, not refused.
func TestLaunchNotesAreCleanedNotRefused(t *testing.T) {
	var l Launch
	if err := strictUnmarshal([]byte(okLaunch), &l); err != nil {
		t.Fatal(err)
	}
	l.Notes = []string{"untimed:\x1b[2J\nsee why", strings.Repeat("n", 3*maxError)}
	if err := l.check(); err != nil {
		t.Fatalf("check: %v", err)
	}
	if l.Notes[0] != "untimed:?[2J?see why" || len(l.Notes[1]) > maxError {
		t.Fatalf("notes %q (%d bytes)", l.Notes[0], len(l.Notes[1]))
	}
}

func TestArgJSON(t *testing.T) {
	for _, tc := range []struct {
		arg  Arg
		json string
	}{
		{Arg{Text: "--session"}, `"--session"`},
		{Arg{Text: ""}, `""`},
		{Arg{File: "p.md"}, `{"file":"p.md"}`},
		{Arg{File: "p.md", Prefix: "@"}, `{"file":"p.md","prefix":"@"}`},
		{Arg{ToolBridge: true}, `{"toolBridge":true}`},
	} {
		b, err := json.Marshal(tc.arg)
		if err != nil || string(b) != tc.json {
			t.Errorf("marshal %+v = %s %v, want %s", tc.arg, b, err, tc.json)
		}
		var back Arg
		if err := json.Unmarshal([]byte(tc.json), &back); err != nil || back != tc.arg {
			t.Errorf("unmarshal %s = %+v %v", tc.json, back, err)
		}
	}
	for _, bad := range []string{`{}`, `{"file":""}`, `{"file":"a","toolBridge":true}`, `{"toolBridge":true,"prefix":"@"}`, `{"text":"x"}`, `1`, `null`} {
		var a Arg
		if err := json.Unmarshal([]byte(bad), &a); err == nil {
			t.Errorf("unmarshal %s accepted as %+v", bad, a)
		}
	}
}

// The owner link's pid is the kernel's word for the peer, not the pid its
// hello claims (the fixture's says 1): a handoff goes only to the wrapper
// whose owner is the run's lease pid, so a claim must not pass for it.
func TestOwnerLinkPIDIsThePeersOwn(t *testing.T) {
	_, _, _, l := ownerFixture(t)
	if l.PID() != os.Getpid() {
		t.Fatalf("owner link pid %d, want the peer's %d", l.PID(), os.Getpid())
	}
}

// An agent, a session or a breadcrumb named in right-to-left text carries
// bidi marks: the launch is taken (the places that show a label clean
// them), while an id holding one is still refused.
func TestLaunchTakesRightToLeftLabels(t *testing.T) {
	var l Launch
	if err := strictUnmarshal([]byte(okLaunch), &l); err != nil {
		t.Fatal(err)
	}
	l.Label, l.SessionLabel, l.Breadcrumb = "\u200fבודק קוד", "مراجعة\u061c", "\u2067review\u2069"
	if err := l.check(); err != nil {
		t.Fatalf("a launch with right-to-left labels: %v", err)
	}
	l.SessionID = "s\u202e1"
	if err := l.check(); err == nil || !strings.Contains(err.Error(), "sessionId") {
		t.Fatalf("a session id with a bidi override: %v, want refused", err)
	}
	l.SessionID, l.Label = "s1", "a\x1b[2Jb"
	if err := l.check(); err == nil || !strings.Contains(err.Error(), "label") {
		t.Fatalf("a label with an escape: %v, want refused", err)
	}
}
