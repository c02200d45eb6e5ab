package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

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

func (l *logs) waitFor(t *testing.T, substr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if l.has(substr) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Fatalf("no log line containing %q; got:\n%s", substr, strings.Join(l.lines, "\n"))
}

func (l *logs) has(substr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, substr) {
			return true
		}
	}
	return false
}

// shortDir is a private directory with a short path (socket paths are
// limited to 107 bytes; t.TempDir can be longer).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "hpt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// recorder is the owner in these tests: it records calls and runs the
// test's function for each.
type recorder struct {
	mu    sync.Mutex
	calls []Call
	fn    func(ctx context.Context, call Call, update func(json.RawMessage)) (json.RawMessage, error)
}

func (r *recorder) Execute(ctx context.Context, call Call, update func(json.RawMessage)) (json.RawMessage, error) {
	r.mu.Lock()
	r.calls = append(r.calls, call)
	fn := r.fn
	r.mu.Unlock()
	return fn(ctx, call, update)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

var testSpecs = []Spec{
	{Name: "echo", Description: "Echo text.", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
	{Name: "slow", Description: "Wait until cancelled."},
}

type fixture struct {
	srv  *Server
	exec *recorder
	logs *logs
}

func start(t *testing.T, fn func(ctx context.Context, call Call, update func(json.RawMessage)) (json.RawMessage, error), mut ...func(*Config)) *fixture {
	t.Helper()
	f := &fixture{exec: &recorder{fn: fn}, logs: &logs{}}
	cfg := Config{Dir: shortDir(t), Tools: testSpecs, Executor: f.exec, Logf: f.logs.Logf}
	for _, m := range mut {
		m(&cfg)
	}
	var err error
	f.srv, err = Serve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.srv.Close() })
	return f
}

// conn is a hand-driven connection.
type conn struct {
	net.Conn
	r *bufio.Reader
}

func (f *fixture) dial(t *testing.T) *conn {
	t.Helper()
	c, err := net.Dial("unix", f.srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &conn{Conn: c, r: bufio.NewReader(c)}
}

func (c *conn) send(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
}

// request sends a well-formed request line.
func (f *fixture) request(t *testing.T, name, params string) *conn {
	t.Helper()
	c := f.dial(t)
	c.send(t, fmt.Sprintf(`{"token":%q,"toolCallId":"call-1","name":%q,"params":%s}`+"\n", f.srv.Token(), name, params))
	return c
}

// lines reads the lines up to the server's close (a reset, when the server
// closed with our request unread, is a close too: the lines before it
// arrive first).
func (c *conn) lines(t *testing.T) []string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var out []string
	for {
		s, err := c.r.ReadString('\n')
		if err != nil {
			if s != "" || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
				t.Fatalf("read after %q: %v (partial %q)", out, err, s)
			}
			return out
		}
		out = append(out, strings.TrimSuffix(s, "\n"))
	}
}

func wantLines(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n got %q\nwant %q", got, want)
	}
}

const okResult = `{"content":[{"type":"text","text":"echo: hi"}],"details":{"n":1}}`

func TestUpdateThenResult(t *testing.T) {
	f := start(t, func(ctx context.Context, call Call, update func(json.RawMessage)) (json.RawMessage, error) {
		update(json.RawMessage(`{"content":[{"type":"text","text":"working"}]}`))
		return json.RawMessage(okResult), nil
	})
	c := f.request(t, "echo", `{"text":"hi"}`)
	wantLines(t, c.lines(t),
		`{"type":"update","value":{"content":[{"type":"text","text":"working"}]}}`,
		`{"type":"result","value":`+okResult+`}`)
	got := f.exec.calls[0]
	if got.ToolCallID != "call-1" || got.Name != "echo" || string(got.Params) != `{"text":"hi"}` || got.PID != os.Getpid() {
		t.Fatalf("call %+v", got)
	}
}

func TestExecutorErrorBecomesTheCallsError(t *testing.T) {
	f := start(t, func(context.Context, Call, func(json.RawMessage)) (json.RawMessage, error) {
		return nil, errors.New("echo: the text is empty")
	})
	wantLines(t, f.request(t, "echo", `{}`).lines(t), `{"type":"error","error":"echo: the text is empty"}`)
}

// The result and every update must be a ToolResult-shaped object: a
// malformed update is dropped, a malformed result becomes an error.
func TestMalformedResultsNeverReachThePane(t *testing.T) {
	f := start(t, func(ctx context.Context, call Call, update func(json.RawMessage)) (json.RawMessage, error) {
		update(json.RawMessage(`"just text"`))
		update(json.RawMessage(`{"content":[]}`))
		if call.Name == "slow" {
			return json.RawMessage(`not json`), nil
		}
		return json.RawMessage(`{"details":{}}`), nil
	})
	wantLines(t, f.request(t, "echo", `{}`).lines(t),
		`{"type":"update","value":{"content":[]}}`,
		`{"type":"error","error":"echo returned a malformed result (no content array)"}`)
	lines := f.request(t, "slow", `{}`).lines(t)
	if len(lines) != 2 || !strings.HasPrefix(lines[1], `{"type":"error","error":"slow returned a malformed result (not a JSON object`) {
		t.Fatalf("invalid JSON result: %q", lines)
	}
	f.logs.waitFor(t, "update dropped")
}

func TestAPanickingExecutorFailsOnlyItsCall(t *testing.T) {
	f := start(t, func(context.Context, Call, func(json.RawMessage)) (json.RawMessage, error) { panic("boom") })
	wantLines(t, f.request(t, "echo", `{}`).lines(t), `{"type":"error","error":"echo failed inside herdr-pi (see its log)"}`)
	f.logs.waitFor(t, "executor panicked: boom")
	wantLines(t, f.request(t, "echo", `{}`).lines(t), `{"type":"error","error":"echo failed inside herdr-pi (see its log)"}`)
}

func TestUnknownToolIsRefusedAndNotRun(t *testing.T) {
	f := start(t, func(context.Context, Call, func(json.RawMessage)) (json.RawMessage, error) {
		return json.RawMessage(okResult), nil
	})
	wantLines(t, f.request(t, "rm_rf", `{}`).lines(t), `{"type":"error","error":"unknown tool: rm_rf (this bridge serves: echo, slow)"}`)
	if n := f.exec.count(); n != 0 {
		t.Fatalf("executor ran %d times", n)
	}
	f.logs.waitFor(t, `unknown tool "rm_rf"`)
}

func TestWrongTokenIsRejectedLoggedAndNeverRun(t *testing.T) {
	f := start(t, func(context.Context, Call, func(json.RawMessage)) (json.RawMessage, error) {
		return json.RawMessage(okResult), nil
	})
	c := f.dial(t)
	c.send(t, `{"token":"0123","toolCallId":"x","name":"echo","params":{}}`+"\n")
	wantLines(t, c.lines(t), `{"type":"error","error":"wrong token"}`)
	f.logs.waitFor(t, fmt.Sprintf("rejected pid %d: wrong token (tool \"echo\" not run)", os.Getpid()))
	// The right token with one byte changed is as wrong.
	tok := []byte(f.srv.Token())
	tok[len(tok)-1] ^= 1
	c = f.dial(t)
	c.send(t, fmt.Sprintf(`{"token":%q,"toolCallId":"x","name":"echo","params":{}}`+"\n", tok))
	wantLines(t, c.lines(t), `{"type":"error","error":"wrong token"}`)
	if n := f.exec.count(); n != 0 {
		t.Fatalf("executor ran %d times", n)
	}
}

func TestBadRequestsAreRefusedAndNotRun(t *testing.T) {
	f := start(t, func(context.Context, Call, func(json.RawMessage)) (json.RawMessage, error) {
		return json.RawMessage(okResult), nil
	})
	tok := f.srv.Token()
	for _, tc := range []struct{ line, want string }{
		{`hello` + "\n", "bad request: not a request object: invalid character 'h' looking for beginning of value"},
		{`{"toolCallId":"x","name":"echo","params":{}}` + "\n", "bad request: no token"},
		{fmt.Sprintf(`{"token":%q,"toolCallId":"x","params":{}}`, tok) + "\n", "bad request: no tool name"},
		{fmt.Sprintf(`{"token":%q,"name":"echo","params":{}}`, tok) + "\n", "bad request: no toolCallId"},
		{fmt.Sprintf(`{"token":%q,"toolCallId":"x","name":"echo","params":[1]}`, tok) + "\n", "bad request: params must be a JSON object"},
		{fmt.Sprintf(`{"token":%q,"toolCallId":"x","name":"echo"}`, tok) + "\n", "bad request: params must be a JSON object"},
		{fmt.Sprintf(`{"token":%q,"toolCallId":"x","name":"echo","params":{},"cwd":"/"}`, tok) + "\n", `bad request: not a request object: json: unknown field "cwd"`},
		{fmt.Sprintf(`{"token":%q,"toolCallId":"x","name":"echo","params":{}} {}`, tok) + "\n", "bad request: more than one JSON value on the line"},
		{fmt.Sprintf(`{"token":%q,"toolCallId":"x","name":"echo","params":{}}}}`, tok) + "\n", "bad request: more than one JSON value on the line"},
		{fmt.Sprintf(`{"token":%q,"toolCallId":"x","name":"ec\u0007ho","params":{}}`, tok) + "\n", `bad request: malformed tool name "ec?ho"`},
		{"{\"token\":\"\xff\"}\n", "bad request: not UTF-8"},
		{fmt.Sprintf(`{"token":%q,"toolCallId":"x","name":"echo","params":{}}`, tok) + "\nmore\n", "bad request: nothing may follow the request line"},
	} {
		c := f.dial(t)
		c.send(t, tc.line)
		want, _ := json.Marshal(message{Type: TypeError, Error: tc.want})
		wantLines(t, c.lines(t), string(want))
	}
	if n := f.exec.count(); n != 0 {
		t.Fatalf("executor ran %d times", n)
	}
}

// A request line may be MaxRequestLine bytes long, newline included; one
// byte more is refused (and logged) without waiting for the rest.
func TestRequestLineBound(t *testing.T) {
	f := start(t, func(_ context.Context, call Call, _ func(json.RawMessage)) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprintf(`{"content":[],"details":{"params":%d}}`, len(call.Params))), nil
	})
	line := func(size int) string {
		head := fmt.Sprintf(`{"token":%q,"toolCallId":"x","name":"echo","params":{"text":"`, f.srv.Token())
		tail := `"}}` + "\n"
		return head + strings.Repeat("a", size-len(head)-len(tail)) + tail
	}
	c := f.dial(t)
	c.send(t, line(MaxRequestLine))
	got := c.lines(t)
	if len(got) != 1 || !strings.HasPrefix(got[0], `{"type":"result"`) {
		t.Fatalf("a line of exactly %d bytes: %.200q", MaxRequestLine, got)
	}

	c = f.dial(t)
	go func() {
		// The server stops reading at the bound; the rest may fail.
		_, _ = io.WriteString(c, line(MaxRequestLine+1)+strings.Repeat("b", 1<<20))
	}()
	wantLines(t, c.lines(t), fmt.Sprintf(`{"type":"error","error":"bad request: request line longer than %d bytes"}`, MaxRequestLine))
	f.logs.waitFor(t, "request line longer than")
	if n := f.exec.count(); n != 1 {
		t.Fatalf("executor ran %d times, want 1", n)
	}
}

// blocker is an executor that reports each call's start and then waits for
// its context, reporting why it ended.
type blocker struct {
	started chan Call
	ended   chan error
}

func newBlocker() *blocker { return &blocker{started: make(chan Call, 4), ended: make(chan error, 4)} }

func (b *blocker) run(ctx context.Context, call Call, update func(json.RawMessage)) (json.RawMessage, error) {
	update(json.RawMessage(`{"content":[{"type":"text","text":"waiting"}]}`))
	b.started <- call
	<-ctx.Done()
	b.ended <- ctx.Err()
	return nil, ctx.Err()
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30s", what)
		var zero T
		return zero
	}
}

func TestClosingTheConnectionCancelsTheCall(t *testing.T) {
	b := newBlocker()
	f := start(t, b.run)
	c := f.request(t, "slow", `{}`)
	receive(t, b.started, "call")
	if s, err := c.r.ReadString('\n'); err != nil || !strings.Contains(s, `"waiting"`) {
		t.Fatalf("update: %q %v", s, err)
	}
	c.Close()
	if err := receive(t, b.ended, "cancellation"); !errors.Is(err, context.Canceled) {
		t.Fatalf("executor's context ended with %v", err)
	}
	f.logs.waitFor(t, "slow (call-1) aborted by the caller")
}

// A caller that sends anything after its request has broken the protocol:
// the call is cancelled as if it had gone.
func TestBytesAfterTheRequestCancelTheCall(t *testing.T) {
	b := newBlocker()
	f := start(t, b.run)
	c := f.request(t, "slow", `{}`)
	receive(t, b.started, "call")
	c.send(t, "x")
	if err := receive(t, b.ended, "cancellation"); !errors.Is(err, context.Canceled) {
		t.Fatalf("executor's context ended with %v", err)
	}
	f.logs.waitFor(t, "data after the request line; aborting slow")
}

func TestCloseCancelsCallsInFlightAndCleansUp(t *testing.T) {
	b := newBlocker()
	// Close must wake a connection still owing its request, not wait out
	// its timeout: an hour here turns a regression into a hang.
	awaiting := make(chan struct{}, 4)
	f := start(t, b.run, func(c *Config) {
		c.RequestTimeout = time.Hour
		c.awaitingRequest = func() { awaiting <- struct{}{} }
	})
	client, err := f.srv.WriteClient()
	if err != nil {
		t.Fatal(err)
	}
	c := f.request(t, "slow", `{}`)
	receive(t, b.started, "call")
	receive(t, awaiting, "the call's connection")
	f.dial(t) // connected, no request yet: Close must not wait for its timeout
	receive(t, awaiting, "the idle connection")
	if err := f.srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := receive(t, b.ended, "cancellation"); !errors.Is(err, context.Canceled) {
		t.Fatalf("executor's context ended with %v", err)
	}
	wantLines(t, c.lines(t),
		`{"type":"update","value":{"content":[{"type":"text","text":"waiting"}]}}`,
		`{"type":"error","error":"slow was cancelled: the tool bridge closed (the handoff ended)"}`)
	for _, p := range []string{f.srv.Path(), client} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
	if _, err := net.Dial("unix", f.srv.Path()); err == nil {
		t.Error("the socket still accepts after Close")
	}
	if err := f.srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if f.logs.has("accept:") || f.logs.has("no request line") {
		t.Fatalf("Close read as a failure: %q", f.logs.lines)
	}
}

func TestTooManyCallsAreRefusedWithAReason(t *testing.T) {
	b := newBlocker()
	f := start(t, b.run, func(c *Config) { c.MaxConns = 1 })
	f.request(t, "slow", `{}`)
	receive(t, b.started, "call")
	// Refused at once: the request may not even be written.
	c := f.dial(t)
	_, _ = io.WriteString(c, fmt.Sprintf(`{"token":%q,"toolCallId":"c2","name":"echo","params":{}}`+"\n", f.srv.Token()))
	wantLines(t, c.lines(t), `{"type":"error","error":"busy: 1 tool calls are already open"}`)
}

func TestSocketIsPrivateWithAShortPath(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	f := start(t, func(context.Context, Call, func(json.RawMessage)) (json.RawMessage, error) { return nil, nil })
	fi, err := os.Lstat(f.srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v", fi.Mode())
	}
	if len(f.srv.Token()) != 64 {
		t.Fatalf("token %q is not 256 bits of hex", f.srv.Token())
	}

	exec := ExecutorFunc(func(context.Context, Call, func(json.RawMessage)) (json.RawMessage, error) { return nil, nil })
	open := shortDir(t)
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Serve(Config{Dir: open, Tools: testSpecs, Executor: exec}); err == nil || !strings.Contains(err.Error(), "mode 0755") {
		t.Fatalf("Serve in a 0755 directory: %v", err)
	}
	long := filepath.Join(shortDir(t), strings.Repeat("d", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Serve(Config{Dir: long, Tools: testSpecs, Executor: exec}); err == nil || !strings.Contains(err.Error(), "the limit is 107: use a private directory with a shorter path") {
		t.Fatalf("Serve in a long directory: %v", err)
	}
	if entries, _ := os.ReadDir(long); len(entries) != 0 {
		t.Fatalf("a refused Serve left %v", entries)
	}
}

func TestServeChecksItsTools(t *testing.T) {
	exec := ExecutorFunc(func(context.Context, Call, func(json.RawMessage)) (json.RawMessage, error) { return nil, nil })
	dir := shortDir(t)
	for _, tc := range []struct {
		tools []Spec
		want  string
	}{
		{nil, "tools: no tools to bridge"},
		{[]Spec{{Name: "a"}, {Name: "a"}}, `tools: tool "a" is listed twice`},
		{[]Spec{{Name: ""}}, "tools: a bridged tool has no name"},
		{[]Spec{{Name: "a\nb"}}, `tools: tool "a?b": the name must be at most 128 printable bytes`},
		{[]Spec{{Name: "a", Parameters: json.RawMessage(`[]`)}}, `tools: tool "a": parameters must be a JSON schema object`},
		{[]Spec{{Name: "a", OutputSchema: json.RawMessage(`true`)}}, `tools: tool "a": outputSchema must be a JSON schema object`},
		{[]Spec{{Name: "a", RenderShell: "fancy"}}, `tools: tool "a": renderShell "fancy" is not "default" or "self"`},
		{[]Spec{{Name: "a", ExecutionMode: "eager"}}, `tools: tool "a": executionMode "eager" is not "sequential" or "parallel"`},
	} {
		if _, err := Serve(Config{Dir: dir, Tools: tc.tools, Executor: exec}); err == nil || err.Error() != tc.want {
			t.Errorf("Serve with %+v: %v, want %q", tc.tools, err, tc.want)
		}
	}
	if _, err := Serve(Config{Dir: dir, Tools: testSpecs}); err == nil || !strings.Contains(err.Error(), "needs an executor") {
		t.Errorf("Serve without an executor: %v", err)
	}
	s, err := Serve(Config{Dir: dir, Tools: []Spec{{Name: "a"}}, Executor: exec})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Tools()[0]; got.Label != "a" || string(got.Parameters) != string(noParameters) {
		t.Fatalf("defaults not filled: %+v", got)
	}
}

const nobody = testenv.Nobody

// runAsNobody dials path as uid 65534 with the first line a client sends.
func runAsNobody(t *testing.T, path, token string) string {
	t.Helper()
	return testenv.DialAsNobody(t, path, `{"token":"`+token+`","toolCallId":"c1","name":"echo","params":{}}`)
}

// Another user cannot reach the socket: the 0700 directory stops it.
func TestOtherUIDCannotReachTheSocket(t *testing.T) {
	f := start(t, func(context.Context, Call, func(json.RawMessage)) (json.RawMessage, error) {
		return json.RawMessage(okResult), nil
	})
	out := runAsNobody(t, f.srv.Path(), f.srv.Token())
	if !strings.Contains(out, "permission denied") {
		t.Fatalf("uid %d reached the socket: %s", nobody, out)
	}
}

// Even with the directory and socket opened up (a mistake, or a process
// that got a descriptor), the kernel's peer credentials stop another uid,
// right token or not, and it gets no answer at all.
func TestOtherUIDIsRejectedByPeerCredentials(t *testing.T) {
	f := start(t, func(context.Context, Call, func(json.RawMessage)) (json.RawMessage, error) {
		return json.RawMessage(okResult), nil
	})
	if err := os.Chmod(filepath.Dir(f.srv.Path()), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.srv.Path(), 0o666); err != nil {
		t.Fatal(err)
	}
	out := runAsNobody(t, f.srv.Path(), f.srv.Token())
	if !strings.Contains(out, `reply: ""`) || strings.Contains(out, "err: <nil>") {
		t.Fatalf("uid %d got a reply: %s", nobody, out)
	}
	f.logs.waitFor(t, fmt.Sprintf("rejected a connection from uid %d", nobody))
	if n := f.exec.count(); n != 0 {
		t.Fatalf("executor ran %d times", n)
	}
}

// A busy bridge tells only its own user why it refuses: another uid that
// reaches an opened-up socket then gets no answer either, not even that a
// call is running.
func TestABusyBridgeSaysNothingToAnotherUID(t *testing.T) {
	b := newBlocker()
	f := start(t, b.run, func(c *Config) { c.MaxConns = 1 })
	f.request(t, "slow", `{}`)
	receive(t, b.started, "call")
	if err := os.Chmod(filepath.Dir(f.srv.Path()), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.srv.Path(), 0o666); err != nil {
		t.Fatal(err)
	}
	out := runAsNobody(t, f.srv.Path(), f.srv.Token())
	if !strings.Contains(out, `reply: ""`) || strings.Contains(out, "busy") {
		t.Fatalf("uid %d was told: %s", nobody, out)
	}
}

// A caller that connects and never sends its request line holds its place
// only for RequestTimeout: then the bridge hangs up, and a flood of such
// callers can keep the tools busy for that long at most.
func TestASilentCallerIsClosedAfterTheRequestTimeout(t *testing.T) {
	f := start(t, nil, func(c *Config) { c.RequestTimeout = 300 * time.Millisecond })
	c := f.dial(t)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(c.r); err != nil && !errors.Is(err, syscall.ECONNRESET) || len(b) > 0 {
		t.Fatalf("a silent caller: read %q, %v; want the bridge to hang up without a word", b, err)
	}
	f.logs.waitFor(t, "no request line")
	if n := f.exec.count(); n != 0 {
		t.Fatalf("%d calls ran for a caller that sent nothing", n)
	}
}
