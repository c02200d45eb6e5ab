package control

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/termtext"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) {
	runDirHelper()     // started by startWrapperLike: hold a run directory until killed
	tempWriterHelper() // started by startTempWriter: hold a temporary file until killed
	testenv.Main(m)
}

// recorder is the wrapper side in these tests: it records events and
// answers requests from a canned status.
type recorder struct {
	mu     sync.Mutex
	events []Event
	waits  []WaitRequest
	status Status
	ch     chan Event
}

func newRecorder() *recorder { return &recorder{ch: make(chan Event, 100)} }

func (r *recorder) ProbeEvent(ev Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	r.ch <- ev
}

func (r *recorder) Wait(w WaitRequest) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.Source == "refuse" {
		return fmt.Errorf("refused %s", w.Key())
	}
	if w.Source == "refuse-at-length" {
		return errors.New(longRefusal)
	}
	r.waits = append(r.waits, w)
	return nil
}

func (r *recorder) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

func (r *recorder) next(t testing.TB) Event {
	t.Helper()
	select {
	case ev := <-r.ch:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return nil
	}
}

// logs collects the server's diagnostics.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// waitForAny waits for a log line containing any of substrs.
func (l *logs) waitForAny(t testing.TB, substrs ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		for _, s := range l.lines {
			for _, sub := range substrs {
				if strings.Contains(s, sub) {
					l.mu.Unlock()
					return
				}
			}
		}
		l.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Fatalf("no log line containing any of %q; got:\n%s", substrs, strings.Join(l.lines, "\n"))
}

// waitFor waits for a log line containing substr.
func (l *logs) waitFor(t testing.TB, substr string) {
	t.Helper()
	l.waitForAny(t, substr)
}

// shortDir is a private directory with a short path (socket paths are
// limited to 107 bytes; t.TempDir can be longer).
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "hpc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

type fixture struct {
	srv  *Server
	rec  *recorder
	logs *logs
	path string
	tok  string
}

func start(t testing.TB, mut ...func(*Config)) *fixture {
	t.Helper()
	dir := shortDir(t)
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{rec: newRecorder(), logs: &logs{}, path: filepath.Join(dir, "c.sock"), tok: tok}
	cfg := Config{Path: f.path, Token: tok, Events: f.rec, Requests: f.rec, Logf: f.logs.Logf}
	for _, m := range mut {
		m(&cfg)
	}
	f.srv, err = Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.srv.Close() })
	return f
}

// raw is a hand-driven connection for sending arbitrary bytes.
type raw struct {
	net.Conn
	r *bufio.Reader
}

func (f *fixture) raw(t testing.TB) *raw {
	t.Helper()
	c, err := net.Dial("unix", f.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &raw{Conn: c, r: bufio.NewReader(c)}
}

func (c *raw) line(t testing.TB, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (c *raw) hello(t testing.TB, token, role string) {
	t.Helper()
	c.line(t, fmt.Sprintf(`{"type":"hello","token":%q,"role":%q,"version":1}`, token, role))
	got := c.read(t)
	if got != `{"type":"hello","version":1,"ok":true,"herdr_pi":"`+Build()+`"}` {
		t.Fatalf("hello reply %q", got)
	}
}

func (c *raw) read(t testing.TB) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	s, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v (got %q)", err, s)
	}
	return strings.TrimSuffix(s, "\n")
}

// closed asserts the server hung up on us.
func (c *raw) closed(t *testing.T) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	// A reset is a close too: the server hung up with our bytes unread.
	if _, err := io.ReadAll(c.r); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("want the server to close the connection, got %v", err)
	}
}

// The probe numbers its channel events and writes those it kept again on
// its next connection when it did not hear the server's answer on the one
// that carried them: a number delivered already from that Pi process is
// not delivered again, an event without a number (a probe before the
// numbers) always is, and a session_start other than a resync begins the
// count afresh (a new Pi with the pid of an old one counts from 1).
func TestANumberedChannelEventIsDeliveredOnce(t *testing.T) {
	f := start(t)
	const (
		startup    = `{"type":"event","name":"session_start","data":{"reason":"startup","sessionSeq":1}}`
		reconnect  = `{"type":"event","name":"session_start","data":{"reason":"reconnect","sessionSeq":1}}`
		blocked1   = `{"type":"event","name":"herdr:blocked","seq":1,"data":{"active":true,"label":"deploy"}}`
		asked2     = `{"type":"event","name":"@eko24ive/pi-ask:started","seq":2,"data":{"flowId":"f1"}}`
		closed3    = `{"type":"event","name":"herdr:blocked","seq":3,"data":{"active":false}}`
		unnumbered = `{"type":"event","name":"herdr:blocked","data":{"active":true,"label":"old"}}`
	)
	events := func(lines ...string) []Event {
		t.Helper()
		c := f.raw(t)
		c.hello(t, f.tok, RoleProbe)
		for _, l := range lines {
			c.line(t, l)
		}
		c.Close()
		var got []Event
		for {
			switch ev := f.rec.next(t).(type) {
			case ProbeConnected:
			case ProbeDisconnected:
				return got
			default:
				got = append(got, ev)
			}
		}
	}
	got := events(startup, blocked1, asked2)
	got = append(got, events(reconnect, blocked1, asked2, closed3, unnumbered, unnumbered)...)
	got = append(got, events(startup, blocked1)...)
	want := []Event{
		SessionStart{Reason: "startup", SessionSeq: 1}, HerdrBlocked{Active: true, Label: "deploy"}, AskStarted{FlowID: "f1"},
		// the repeats of 1 and 2 are dropped
		SessionStart{Reason: "reconnect", SessionSeq: 1}, HerdrBlocked{}, HerdrBlocked{Active: true, Label: "old"}, HerdrBlocked{Active: true, Label: "old"},
		// another Pi, or another session: 1 is new
		SessionStart{Reason: "startup", SessionSeq: 1}, HerdrBlocked{Active: true, Label: "deploy"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n got %#v\nwant %#v", got, want)
	}
	f.logs.waitFor(t, "channel event 2 (@eko24ive/pi-ask:started) was delivered already")
}

// A probe's hello says whether its Pi tells it of its own dialogs (Pi
// before 0.84.4 does not): the pane leaves such a Pi's dialogs to the
// screen. A hello that does not say is a probe that cannot.
func TestProbeHelloSaysWhetherItReportsDialogs(t *testing.T) {
	for _, field := range []string{`,"dialogs":true`, `,"dialogs":false`, ``} {
		f := start(t)
		c := f.raw(t)
		c.line(t, fmt.Sprintf(`{"type":"hello","token":%q,"role":"probe","version":1%s}`, f.tok, field))
		c.read(t)
		want := ProbeConnected{PID: os.Getpid(), Conn: 1, Dialogs: field == `,"dialogs":true`}
		if ev := f.rec.next(t); !reflect.DeepEqual(ev, want) {
			t.Fatalf("hello with %q: first event %#v, want %#v", field, ev, want)
		}
	}
}

func TestEventsArriveTypedAndInOrder(t *testing.T) {
	f := start(t)
	c := f.raw(t)
	c.hello(t, f.tok, RoleProbe)
	if ev := f.rec.next(t); !reflect.DeepEqual(ev, ProbeConnected{PID: os.Getpid(), Conn: 1}) {
		t.Fatalf("first event %#v, want ProbeConnected with our pid, the first probe connection", ev)
	}
	lines := []string{
		`{"type":"event","name":"session_start","data":{"reason":"startup","sessionFile":"/s/a.jsonl","mode":"tui","hasUI":true}}`,
		`{"type":"event","name":"agent_start"}`,
		`{"type":"event","name":"pi:waiting-for-user-input","data":{"source":" plan-md ","id":"call-1","waiting":true}}`,
		`{"type":"event","name":"pi:waiting-for-user-input","data":{"source":"plan-md","waiting":true}}`,
		`{"type":"event","name":"herdr:blocked","data":{"active":1,"label":"deploy"}}`,
		`{"type":"event","name":"herdr:blocked","data":{}}`,
		`{"type":"event","name":"@eko24ive/pi-ask:started","data":{"flowId":"ask-1","title":" Choose "}}`,
		`{"type":"event","name":"@eko24ive/pi-ask:completed","data":{"flowId":"ask-1"}}`,
		`{"type":"event","name":"permissions:ui_prompt","data":{"requestId":"r1","forwarding":{"requesterAgentName":"Worker"}}}`,
		`{"type":"event","name":"permissions:decision","data":{"resolution":"user_approved","surface":"bash","value":"ls"}}`,
		`{"type":"event","name":"permissions:forwarded_decision","data":{"forwarding":{},"requestId":"r1","responderSessionId":"p","respondedAt":1,"resolution":"user_approved","result":"deny"}}`,
		`{"type":"event","name":"ui_prompt_start","data":{"reason":"ui_prompt","kind":"confirm","title":"Delete?"}}`,
		`{"type":"event","name":"ui_prompt_end","data":{"kind":"confirm","title":"Delete?"}}`,
		`{"type":"event","name":"no_such_event"}`,
		`{"type":"event","name":"agent_end","data":{"stopReason":"stop","inputNeeded":true}}`,
		`{"type":"event","name":"agent_settled","data":{"aborted":false,"idle":true,"inputNeeded":true}}`,
		`{"type":"event","name":"session_shutdown","data":{"reason":"quit"}}`,
	}
	for _, l := range lines {
		c.line(t, l)
	}
	c.Close()
	var got []Event
	for {
		ev := f.rec.next(t)
		got = append(got, ev)
		if _, ok := ev.(ProbeDisconnected); ok {
			break
		}
	}
	want := []Event{
		SessionStart{Reason: "startup", SessionFile: "/s/a.jsonl", Mode: "tui", HasUI: true},
		AgentStart{},
		WaitingForInput{Source: "plan-md", ID: "call-1", Waiting: true},
		HerdrBlocked{Active: true, Label: "deploy"},
		HerdrBlocked{Active: false},
		AskStarted{FlowID: "ask-1", Title: "Choose"},
		AskCompleted{FlowID: "ask-1"},
		got[7], // checked below: a forwarded permission prompt
		got[8],
		got[9],
		UIPromptStart{Kind: "confirm", Title: "Delete?"},
		UIPromptEnd{Kind: "confirm", Title: "Delete?"},
		AgentEnd{StopReason: "stop", InputNeeded: true},
		AgentSettled{Idle: true, InputNeeded: true},
		SessionShutdown{Reason: "quit"},
		ProbeDisconnected{PID: os.Getpid(), Conn: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n got %#v\nwant %#v", got, want)
	}
	if p, ok := got[7].(PermissionPrompt); !ok || p.RequestID != "r1" || !p.Forwarded || p.Label() != "Permission required by Worker" {
		t.Errorf("permission prompt decoded as %#v", got[7])
	}
	if d, ok := got[8].(PermissionDecision); !ok || d.Surface != "bash" {
		t.Errorf("decision decoded as %#v", got[8])
	}
	if d, ok := got[9].(PermissionForwarded); !ok || d.RequestID != "r1" || d.Result != "deny" {
		t.Errorf("forwarded decision decoded as %#v", got[9])
	}
	f.logs.waitFor(t, `unknown event "no_such_event"`)
	f.logs.waitFor(t, "pi:waiting-for-user-input: payload ignored")
}

func TestRequestsAreAnswered(t *testing.T) {
	f := start(t)
	f.rec.status = Status{Agent: "pi", State: "blocked", Reasons: []Reason{{Kind: "sentinel", Key: "sentinel", Label: "input needed"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, f.path, f.tok)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Wait(ctx, WaitRequest{Action: "start", Source: " hook ", ID: "42", Label: "approve\x1b]0;evil\x07 deploy"}); err != nil {
		t.Fatal(err)
	}
	err = c.Wait(ctx, WaitRequest{Action: "start", Source: "refuse", ID: "1"})
	if err == nil || err.Error() != "refused refuse:1" {
		t.Fatalf("handler error not passed back: %v", err)
	}
	for _, bad := range []WaitRequest{{Action: "pause", Source: "s", ID: "i"}, {Action: "stop", Source: "", ID: "i"}, {Action: "stop", Source: "s", ID: "a\nb"}, {Action: "stop", Source: strings.Repeat("s", 200), ID: "i"}} {
		if err := c.Wait(ctx, bad); err == nil || !strings.HasPrefix(err.Error(), "waiting: ") || strings.Count(err.Error(), "waiting: ") != 1 {
			t.Errorf("wait %+v: %v, want a refusal that names the method once", bad, err)
		}
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "blocked" || len(st.Reasons) != 1 || st.Reasons[0].Label != "input needed" || st.WrapperPID != os.Getpid() || st.ProbeConnected {
		t.Fatalf("status %+v", st)
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	want := []WaitRequest{{Action: "start", Source: "hook", ID: "42", Label: "approve ]0;evil deploy"}}
	if !reflect.DeepEqual(f.rec.waits, want) {
		t.Fatalf("waits %+v, want %+v", f.rec.waits, want)
	}
}

// longRefusal is a refusal longer than a log line, with a character that
// straddles byte 80 and control characters in it.
var longRefusal = "waiting: " + strings.Repeat("x", 70) + "é the rest of the reason, which names the fix:\x1b]0;title\x07 run `herdr-pi doctor` and read what it says\n" + strings.Repeat("y", 2000)

// The caller of `waiting` or `status` is a person or a script: what the
// wrapper says back arrives whole, up to the protocol's bound, made safe
// for a terminal, never cut in the middle of a character.
func TestARefusalReachesTheCallerWhole(t *testing.T) {
	f := start(t)
	c, ctx := f.client(t)
	err := c.Wait(ctx, WaitRequest{Action: WaitStart, Source: "refuse-at-length", ID: "1"})
	if err == nil {
		t.Fatal("the refusal was not passed back")
	}
	got := err.Error()
	want := strings.NewReplacer("\x1b", "?", "\x07", "?", "\n", "?").Replace(longRefusal)[:maxError]
	if got != want {
		t.Fatalf("refusal\n got %q\nwant %q", got, want)
	}
	if !utf8.ValidString(got) || !Printable(got) {
		t.Errorf("refusal %q is not printable text", got)
	}
}

func TestClipCutsWholeCharacters(t *testing.T) {
	s := strings.Repeat("x", 79) + "é and more"
	if got, want := Clip(s), strings.Repeat("x", 79)+"…"; got != want {
		t.Errorf("Clip(%q) = %q, want %q", s, got, want)
	}
	if got := Clip("a\x1bb"); got != "a?b" {
		t.Errorf("Clip keeps a control character: %q", got)
	}
}

func TestStatusSaysWhetherAProbeIsConnected(t *testing.T) {
	f := start(t)
	p := f.raw(t)
	p.hello(t, f.tok, RoleProbe)
	f.rec.next(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, f.path, f.tok)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil || !st.ProbeConnected {
		t.Fatalf("status %+v, %v: want probe_connected", st, err)
	}
}

// Every kind of bad input ends that connection with a log line; the server
// goes on serving the next, well-behaved client.
func TestBadInputIsRejectedAndLogged(t *testing.T) {
	f := start(t, func(c *Config) { c.HelloTimeout = 300 * time.Millisecond })
	cases := []struct {
		name, log string
		send      func(t *testing.T, c *raw)
	}{
		{"garbage before hello", "bad line", func(t *testing.T, c *raw) { c.line(t, "\x00\xff garbage {") }},
		{"wrong token", "wrong token", func(t *testing.T, c *raw) {
			c.line(t, `{"type":"hello","token":"nope","role":"client"}`)
			if got := c.read(t); got != `{"type":"error","error":"wrong token"}` {
				t.Fatalf("reply %q", got)
			}
		}},
		{"event before hello", "not a hello", func(t *testing.T, c *raw) { c.line(t, `{"type":"event","name":"agent_start"}`) }},
		{"silence", "i/o timeout", func(t *testing.T, c *raw) {}},
		{"huge line", "line longer than", func(t *testing.T, c *raw) {
			c.hello(t, f.tok, RoleProbe)
			// The server hangs up after MaxLine bytes, so the write fails.
			_, _ = c.Write([]byte(`{"type":"event","name":"x","data":"` + strings.Repeat("A", 2*MaxLine) + "\"}\n"))
		}},
		{"garbage after hello", "bad line", func(t *testing.T, c *raw) {
			c.hello(t, f.tok, RoleClient)
			c.line(t, `{"type":"request","id":"1","method":"status"}{"type":"x"}`)
		}},
		{"response from a client", "unexpected", func(t *testing.T, c *raw) {
			c.hello(t, f.tok, RoleClient)
			c.line(t, `{"type":"response","id":"1","ok":true}`)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := f.raw(t)
			tc.send(t, c)
			c.closed(t)
			f.logs.waitFor(t, tc.log)
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, f.path, f.tok)
	if err != nil {
		t.Fatalf("server stopped serving after bad input: %v", err)
	}
	defer c.Close()
	if _, err := c.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(ctx, f.path, "wrong"); err != ErrUnauthorized {
		t.Fatalf("Dial with a wrong token: %v, want ErrUnauthorized", err)
	}
}

// With every place taken, a newcomer takes the place of the client idle
// the longest; the others keep theirs.
func TestTheLongestIdleClientMakesRoom(t *testing.T) {
	f := start(t, func(c *Config) { c.MaxConns = 2 })
	a, b := f.raw(t), f.raw(t)
	a.hello(t, f.tok, RoleClient)
	b.hello(t, f.tok, RoleClient)
	c := f.raw(t)
	c.hello(t, f.tok, RoleClient)
	a.closed(t)
	f.logs.waitFor(t, "2 connections open; closed an idle client to make room")
	for _, k := range []*raw{b, c} {
		k.line(t, `{"type":"request","id":"1","method":"status"}`)
		if got := k.read(t); !strings.Contains(got, `"ok":true`) {
			t.Fatalf("status on a kept connection: %q", got)
		}
	}
}

func TestAPanickingConsumerDoesNotStopTheServer(t *testing.T) {
	f := start(t, func(c *Config) { c.Events = panicker{} })
	c := f.raw(t)
	c.hello(t, f.tok, RoleProbe)
	c.line(t, `{"type":"event","name":"agent_start"}`)
	f.logs.waitFor(t, "consumer panicked")
	c.line(t, `{"type":"request","id":"7","method":"status"}`)
	if got := c.read(t); !strings.Contains(got, `"id":"7","ok":true`) {
		t.Fatalf("status after a panic: %q", got)
	}
}

type panicker struct{}

func (panicker) ProbeEvent(Event) { panic("boom") }

func TestSocketIsPrivateAndRemovedOnClose(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	f := start(t)
	fi, err := os.Stat(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a 0600 socket", fi.Mode())
	}
	c := f.raw(t)
	c.hello(t, f.tok, RoleProbe)
	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}
	c.closed(t)
	if _, err := os.Lstat(f.path); !os.IsNotExist(err) {
		t.Fatalf("socket still there after Close: %v", err)
	}
	if err := f.srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestListenRefusesAnOpenDirectoryAndLongPaths(t *testing.T) {
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	_, err := Listen(Config{Path: filepath.Join(dir, "c.sock"), Token: "t", Events: rec, Requests: rec})
	if err == nil || !strings.Contains(err.Error(), "mode 0755") {
		t.Fatalf("Listen in a 0755 directory: %v", err)
	}
	_, err = Listen(Config{Path: "/tmp/" + strings.Repeat("x", 120), Token: "t", Events: rec, Requests: rec})
	if err == nil || !strings.Contains(err.Error(), "limit is 107") {
		t.Fatalf("Listen on a long path: %v", err)
	}
}

const nobody = testenv.Nobody

// runAsNobody dials path as uid 65534 with the first line a client sends.
func runAsNobody(t *testing.T, path, token string) string {
	t.Helper()
	return testenv.DialAsNobody(t, path, `{"type":"hello","token":"`+token+`","role":"client"}`)
}

// Another user cannot reach the socket: the 0700 directory stops it.
func TestOtherUIDCannotReachTheSocket(t *testing.T) {
	f := start(t)
	out := runAsNobody(t, f.path, f.tok)
	if !strings.Contains(out, "permission denied") {
		t.Fatalf("uid %d reached the socket: %s", nobody, out)
	}
}

// Even with the directory and socket opened up (a mistake, or a process
// that got a descriptor), the kernel's peer credentials stop another uid,
// token or not.
func TestOtherUIDIsRejectedByPeerCredentials(t *testing.T) {
	f := start(t)
	if err := os.Chmod(filepath.Dir(f.path), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.path, 0o666); err != nil {
		t.Fatal(err)
	}
	out := runAsNobody(t, f.path, f.tok)
	if !strings.Contains(out, `reply: ""`) || strings.Contains(out, "err: <nil>") {
		t.Fatalf("uid %d got a reply: %s", nobody, out)
	}
	f.logs.waitFor(t, fmt.Sprintf("rejected a connection from uid %d", nobody))
	if len(f.rec.ch) != 0 {
		t.Fatalf("a rejected peer produced events")
	}
}

// A client that said hello, or was answered, and then says nothing is
// closed once IdleTimeout has passed: a stuck or hostile client of our own
// uid holds a place only that long, whether or not anyone else is waiting
// for one. (The probe, quiet for hours while Pi waits, has no such bound.)
func TestASilentClientIsClosedAfterTheIdleTimeout(t *testing.T) {
	f := start(t, func(c *Config) { c.HelloTimeout, c.IdleTimeout = time.Hour, 300*time.Millisecond })
	for _, tc := range []struct {
		name string
		send func(t *testing.T, c *raw)
	}{
		{"after its hello", func(t *testing.T, c *raw) { c.hello(t, f.tok, RoleClient) }},
		{"after an answer", func(t *testing.T, c *raw) {
			c.hello(t, f.tok, RoleClient)
			c.line(t, `{"type":"request","id":"1","method":"status"}`)
			if got := c.read(t); !strings.Contains(got, `"id":"1","ok":true`) {
				t.Fatalf("status reply %q", got)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.raw(t)
			tc.send(t, c)
			c.closed(t)
			f.logs.waitFor(t, "i/o timeout")
		})
	}
}

// Clip's text goes into log lines and error messages that a person reads
// on a terminal: it makes harmless exactly what the project's rule for a
// terminal (internal/termtext) does — controls, invalid bytes and the
// bidi controls that make the rest of a line read backwards — marking
// each with '?', and leaves every other character as it is.
func TestClipAgreesWithTheTerminalRule(t *testing.T) {
	if got, want := Clip("run\u202eexe.sh\u2066x\u2069\u200e\u200f\u061c\xff"), "run?exe.sh?x?????"; got != want {
		t.Errorf("Clip = %q, want %q", got, want)
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue // surrogates are not characters; Go writes them as U+FFFD
		}
		s := string(r)
		harmful := termtext.Clean(s) != s
		if clipped := Clip(s); (clipped != s) != harmful || harmful && clipped != "?" {
			t.Errorf("Clip(%U) = %q; termtext finds it harmful: %v", r, clipped, harmful)
		}
	}
}
