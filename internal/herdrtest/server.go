package herdrtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Limits of Herdr's request reading (herdr-socket-api.md §1.4).
const (
	maxRequestBytes  = 1 << 20
	firstLineTimeout = 5 * time.Second
	writeTimeout     = 5 * time.Second
	eventTick        = 100 * time.Millisecond
)

// Options tune a fake. The zero value is a protocol-20 Herdr 0.8.0 with
// toasts off (Herdr's default), paced event delivery and the real clock.
type Options struct {
	// Protocol and Version are what ping answers (default 20 and "0.8.0";
	// "0.9.3" for protocol 22). The protocol also picks the rules: from
	// Protocol22 on, the fake behaves as Herdr 0.9 does (see [Protocol22]).
	Protocol int
	Version  string
	// Capabilities replaces what ping answers under "capabilities", for
	// tests of a client's tolerance (a number where a boolean was, say).
	// Such a pong is not checked against the protocol-20 schema.
	Capabilities map[string]any
	// Delivery is Herdr's [ui.toast] delivery: off (default), herdr,
	// terminal or system (§4.6).
	Delivery string
	// FirstLineTimeout replaces Herdr's 5 s limit for the request line.
	FirstLineTimeout time.Duration
	// NoEventPacing delivers generic events at once instead of one per
	// subscription per 100 ms tick.
	NoEventPacing bool
	// Now is the clock for the notification rate limit; nil is time.Now.
	Now func() time.Time
	// Logf receives the fake's own diagnostics; nil discards.
	Logf func(format string, args ...any)
	// RealPanes, when set, makes every pane a real shell in a real pty
	// (a private tmux server); nil keeps panes as data only.
	RealPanes *RealPanes
}

// FaultKind is a way the fake misbehaves on purpose.
type FaultKind string

const (
	FaultNone FaultKind = ""
	// FaultSlow waits Fault.Delay, then handles the request normally.
	FaultSlow FaultKind = "slow"
	// FaultHang reads the request and never answers; the connection stays
	// open until the client gives up or the fake stops. Nothing is applied.
	FaultHang FaultKind = "hang"
	// FaultClose reads the request and closes without a reply. Nothing is
	// applied.
	FaultClose FaultKind = "close"
	// FaultGarbage answers with a line that is not JSON. Nothing is applied.
	FaultGarbage FaultKind = "garbage"
	// FaultCloseMidLine handles the request and closes after half of the
	// reply line.
	FaultCloseMidLine FaultKind = "close-mid-line"
	// FaultReply answers with Fault.Reply under the request's id instead of
	// handling it. Nothing is applied. It is how a test puts words in
	// Herdr's mouth that the fake would never say: an error message or a
	// pane label full of terminal controls, a reason only a newer Herdr
	// gives. The line is not checked against the schema, on purpose.
	FaultReply FaultKind = "reply"
)

// Fault says how to misbehave, and for which requests.
type Fault struct {
	Kind  FaultKind
	Delay time.Duration // for FaultSlow
	// Reply is the reply's body for FaultReply: {"result": {…}} or
	// {"error": {"code": …, "message": …}}; the fake adds the id.
	Reply map[string]any
	// Methods limits the fault to these methods; empty means all.
	Methods []string
	// Count limits the fault to the next Count matching requests; 0 means
	// until changed.
	Count int
}

// Request is one request line as the fake received it.
type Request struct {
	N      int // arrival order, from 1
	At     time.Time
	ID     string
	Method string
	Params json.RawMessage
	Line   string
	Fault  FaultKind
	// Reply is the line written back, "" when none was.
	Reply string
	// Lost says the reply could not be written: the client had hung up,
	// having given up waiting (a request read late, on a loaded machine or
	// behind a fault). Herdr acts on such a request all the same.
	Lost bool
}

// Server is a running fake Herdr. All methods are safe for concurrent use.
type Server struct {
	opts     Options
	dir      string
	sock     string
	val      *validator
	valErr   error
	closing  chan struct{}
	closeErr error

	lnMu sync.Mutex
	ln   *net.UnixListener
	wg   sync.WaitGroup // accept loop and socket connection handlers
	// pipes counts the handlers of in-memory connections (Dial), guarded by
	// mu. It is a plain counter because they may run inside a
	// testing/synctest bubble, where a WaitGroup or Cond touched from both
	// sides of the bubble is an error.
	pipes int

	mu            sync.Mutex
	faults        []Fault // in force, the first that fits a method wins
	protocol      int
	delivery      string
	reasons       []string // scripted notification reasons
	lastShown     time.Time
	requests      []Request
	agentCalls    []AgentCall
	notifications []NotificationCall
	inputs        []InputCall
	violations    []string
	allowInvalid  bool
	stalled       bool // StallEvents: nothing is delivered until LoseEvents
	conns         map[net.Conn]bool
	subs          map[*subscriber]bool
	closed        bool
	world
	hub
	// real is the tmux side in real-pane mode, nil otherwise; exits says
	// how each real pane ended.
	real  *realPanes
	exits map[string]PaneExit
}

// New starts a fake on a fresh socket in a private 0700 directory with a
// short path (unix socket paths are limited to 107 bytes).
func New(opts Options) (*Server, error) {
	if opts.Protocol == 0 {
		opts.Protocol = 20
	}
	if opts.Version == "" {
		opts.Version = "0.8.0"
		if opts.Protocol >= Protocol22 {
			opts.Version = "0.9.3"
		}
	}
	if opts.Delivery == "" {
		opts.Delivery = "off"
	}
	if opts.FirstLineTimeout <= 0 {
		opts.FirstLineTimeout = firstLineTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	dir, err := os.MkdirTemp("", "hp")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{
		opts: opts, dir: dir, sock: filepath.Join(dir, "herdr.sock"),
		closing:  make(chan struct{}),
		protocol: opts.Protocol, delivery: opts.Delivery,
		conns: map[net.Conn]bool{}, subs: map[*subscriber]bool{},
	}
	s.val, s.valErr = loadValidator()
	s.world.init()
	if opts.RealPanes != nil {
		if err := s.startRealPanes(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.listen(); err != nil {
		s.stopRealPanes()
		s.wg.Wait()
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Start starts a fake for a test and stops it at cleanup, failing the test
// if any request herdr-pi sent (or any line the fake wrote) broke the
// schema. opts may be omitted.
func Start(t testing.TB, opts ...Options) *Server {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	s, err := New(o)
	if errors.Is(err, ErrNoTmux) {
		testenv.Missing(t, "tmux (for the fake Herdr's real panes)", "apt-get install tmux")
	}
	if err != nil {
		t.Fatalf("herdrtest: %v", err)
	}
	if s.real != nil {
		t.Logf("herdrtest: real panes run in a private tmux server: tmux -S %s attach", s.real.sock)
	}
	if s.val == nil {
		if s.valErr != nil {
			t.Fatalf("herdrtest: the Herdr schema is present but does not compile: %v", s.valErr)
		}
		// The fake is strict or it is nothing: without the schema it would
		// let through what Herdr rejects.
		s.Close()
		testenv.Missing(t, "Herdr's schema ("+schemaRel+")", "check out shared/ beside the repository or set "+SchemaEnv)
	}
	t.Cleanup(func() {
		s.Close()
		for _, v := range s.FatalViolations() {
			t.Errorf("herdrtest: %s", v)
		}
	})
	return s
}

// SchemaChecked reports whether requests are validated against the schema,
// and the schema's path.
func (s *Server) SchemaChecked() (bool, string) {
	if s.val == nil {
		return false, ""
	}
	return true, s.val.path
}

// SocketPath is the socket to put in HERDR_SOCKET_PATH.
func (s *Server) SocketPath() string { return s.sock }

// PaneID is the pane the client under test runs in ("w1:p1").
func (s *Server) PaneID() string { return "w1:p1" }

// Env is the pane environment Herdr gives the process under test
// (herdr-socket-api.md §3.1), as KEY=VALUE pairs.
func (s *Server) Env() []string {
	return []string{
		"HERDR_ENV=1",
		"HERDR_SOCKET_PATH=" + s.sock,
		"HERDR_PANE_ID=w1:p1",
		"HERDR_TAB_ID=w1:t1",
		"HERDR_WORKSPACE_ID=w1",
	}
}

func (s *Server) listen() error {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: s.sock, Net: "unix"})
	if err != nil {
		return err
	}
	// A crashed Herdr leaves its socket file behind; Crash imitates that.
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(s.sock, 0o600); err != nil {
		ln.Close()
		return err
	}
	s.lnMu.Lock()
	s.ln = ln
	s.lnMu.Unlock()
	s.wg.Add(1)
	go s.acceptLoop(ln)
	return nil
}

// acceptLoop is owned by the Server; it ends when its listener closes, and
// Close waits for it and for every connection handler it started.
func (s *Server) acceptLoop(ln *net.UnixListener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serve(c)
		}()
	}
}

// Crash stops answering the way a killed Herdr does: the listener closes,
// every connection (subscriptions too) drops, and the socket file stays
// behind, so clients get "connection refused". Restart brings it back.
func (s *Server) Crash() {
	s.lnMu.Lock()
	ln := s.ln
	s.ln = nil
	s.lnMu.Unlock()
	if ln != nil {
		ln.Close()
	}
	s.dropConns()
}

// Restart imitates Herdr coming back after a restart or a live handoff:
// connections and subscriptions drop, the socket is served again at the
// same path, and the panes keep their ids but lose their reported agent
// state and seq memory, which do not survive a handoff (§9.1). The new
// process's event hub starts empty (nothing from before is replayed, §5.4)
// and it has shown no toast yet (the rate limit starts afresh, §4.6).
func (s *Server) Restart() error {
	s.Crash()
	s.mu.Lock()
	s.world.forgetAuthority()
	s.ring = nil
	s.lastShown = time.Time{}
	s.mu.Unlock()
	_ = os.Remove(s.sock)
	return s.listen()
}

// RestartCold imitates Herdr started afresh (quit and run again, not a
// live handoff): every pane, tab and workspace is new, and their ids count
// from the start again, so an id a client kept may name a pane it never
// opened, in a new terminal (a new terminal_id). Only without real panes:
// those would outlive the world they belong to.
func (s *Server) RestartCold() error {
	if s.real != nil {
		return errors.New("herdrtest: RestartCold needs a fake without real panes")
	}
	s.Crash()
	s.mu.Lock()
	terms := s.world.termSeq
	s.world = world{}
	s.world.init()
	// Terminals are never reused, even by a new Herdr.
	s.world.termSeq += terms
	s.ring = nil
	s.lastShown = time.Time{}
	s.mu.Unlock()
	_ = os.Remove(s.sock)
	return s.listen()
}

// RestartRestored imitates Herdr quit and started again the usual way
// (herdr-socket-api.md §9.2: a server restart restores the layout and the
// working directories; the processes are gone): every workspace, tab and
// pane keeps its id and label, but each pane runs a new shell in a new
// terminal (a new terminal_id), with no agent and nothing reported. Only
// without real panes, whose processes would outlive the restart.
func (s *Server) RestartRestored() error {
	if s.real != nil {
		return errors.New("herdrtest: RestartRestored needs a fake without real panes")
	}
	s.Crash()
	s.mu.Lock()
	s.world.forgetAuthority()
	for _, p := range s.world.panes {
		s.world.termSeq++
		p.term = fmt.Sprintf("term_%x%x", time.Now().UnixMicro(), s.world.termSeq)
		p.exitedAgents, p.process = map[string]bool{}, nil
	}
	s.ring = nil
	s.lastShown = time.Time{}
	s.mu.Unlock()
	_ = os.Remove(s.sock)
	return s.listen()
}

// Streams returns how many event streams are open whose acknowledgement
// was written: ended by DropSubscriptions, each is one the client saw
// start, so it reconnects rather than retrying a first subscribe.
func (s *Server) Streams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for sub := range s.subs {
		if sub.started {
			n++
		}
	}
	return n
}

// DropSubscriptions ends every open event stream, as a live handoff does.
func (s *Server) DropSubscriptions() {
	s.mu.Lock()
	var cs []net.Conn
	for sub := range s.subs {
		if sub.conn != nil {
			cs = append(cs, sub.conn)
		}
	}
	s.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

func (s *Server) dropConns() {
	s.mu.Lock()
	var cs []net.Conn
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// Close stops the fake, waits for all its goroutines and removes its
// socket and directory. With real panes it first ends the tmux server and
// every process that ran in its panes.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	s.stopRealPanes()
	s.Crash()
	s.wg.Wait()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := s.pipes
		s.mu.Unlock()
		if n == 0 {
			break
		}
	}
	os.RemoveAll(s.dir)
}

// SetFault makes the fake misbehave from now on; Fault{} makes it behave.
func (s *Server) SetFault(f Fault) { s.SetFaults(f) }

// SetFaults puts several faults in force at once, each for its methods
// (one Herdr that takes a command without running it and refuses the
// close after, say); for a request, the first that fits wins. None makes
// the fake behave.
func (s *Server) SetFaults(fs ...Fault) {
	s.mu.Lock()
	s.faults = slices.DeleteFunc(slices.Clone(fs), func(f Fault) bool { return f.Kind == FaultNone })
	s.mu.Unlock()
}

// SetProtocol changes the protocol ping reports and the rules the fake
// follows from now on (a Restart after it imitates an upgrade of Herdr).
func (s *Server) SetProtocol(n int) {
	s.mu.Lock()
	s.protocol = n
	s.mu.Unlock()
}

// newer reports whether the fake follows protocol 22's rules now.
func (s *Server) newer() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.protocol >= Protocol22
}

// ExpectInvalidRequests is for tests of the fake itself that send broken
// requests on purpose: schema violations of requests are still recorded
// but no longer fail the test at cleanup.
func (s *Server) ExpectInvalidRequests() {
	s.mu.Lock()
	s.allowInvalid = true
	s.mu.Unlock()
}

// Violations lists every request that broke the schema and every line the
// fake wrote that did (the latter is a bug in the fake).
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

// FatalViolations is Violations without request violations when they were
// expected.
func (s *Server) FatalViolations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, v := range s.violations {
		if s.allowInvalid && strings.HasPrefix(v, "request ") {
			continue
		}
		out = append(out, v)
	}
	return out
}

// Requests returns every request received, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Methods returns the method of every request received, in order.
func (s *Server) Methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.requests))
	for i, r := range s.requests {
		out[i] = r.Method
	}
	return out
}

// WaitFor polls cond until it holds, failing t after timeout with what.
func (s *Server) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !s.Await(timeout, cond) {
		t.Fatalf("herdrtest: no %s within %v; requests: %s", what, timeout, strings.Join(s.Methods(), " "))
	}
}

// Await polls cond until it holds or timeout passes, and says which.
func (s *Server) Await(timeout time.Duration, cond func() bool) bool {
	return awaitEvery(timeout, 2*time.Millisecond, cond)
}

func awaitEvery(timeout, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf("herdrtest: "+format, args...)
	}
}

// takeFault returns the fault for a request of method, counting it down.
func (s *Server) takeFault(method string) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.faults, func(f Fault) bool {
		return len(f.Methods) == 0 || slices.Contains(f.Methods, method)
	})
	if i < 0 {
		return Fault{}
	}
	f := s.faults[i]
	if f.Count > 0 {
		s.faults[i].Count--
		if s.faults[i].Count == 0 {
			s.faults = slices.Delete(s.faults, i, i+1)
		}
	}
	return f
}

// serve handles one connection: one request line, one reply, close
// (§1.3). It runs on a goroutine owned by the Server, which waits for it in
// Close.
func (s *Server) serve(c net.Conn) {
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	_ = c.SetReadDeadline(time.Now().Add(s.opts.FirstLineTimeout))
	line, ok := readRequestLine(bufio.NewReader(c))
	if !ok {
		return // timeout, EOF, or over 1 MiB: dropped without a reply
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return // a blank line gets no reply
	}
	_ = c.SetReadDeadline(time.Time{})

	var head struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	_ = json.Unmarshal(line, &head)
	id, _ := head.ID.(string)
	f := s.takeFault(head.Method)
	n, invalid := s.record(line, id, head.Method, f.Kind)

	switch f.Kind {
	case FaultHang:
		s.holdUntilGone(c)
		return
	case FaultClose:
		return
	case FaultGarbage:
		s.write(c, n, []byte("<html>this is not herdr</html>\n"), "")
		return
	case FaultReply:
		reply := map[string]any{"id": id}
		maps.Copy(reply, f.Reply)
		b, err := json.Marshal(reply)
		if err != nil {
			b = s.errorLine(id, "internal_error", "herdrtest: FaultReply: "+err.Error())
		}
		s.write(c, n, append(b, '\n'), "")
		return
	case FaultSlow:
		select {
		case <-time.After(f.Delay):
		case <-s.closing:
			return
		}
	}

	out, kind, sub := s.handle(n, line, invalid)
	if sub != nil {
		s.mu.Lock()
		sub.conn = c
		s.mu.Unlock()
		defer s.unsubscribe(sub)
	}
	if f.Kind == FaultCloseMidLine {
		s.write(c, n, out[:len(out)/2], "")
		return
	}
	if !s.write(c, n, out, kind) || sub == nil {
		return
	}
	s.mu.Lock()
	sub.started = true
	s.mu.Unlock()
	s.stream(c, sub)
}

func (s *Server) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	delete(s.subs, sub)
	s.mu.Unlock()
}

// holdUntilGone keeps a connection open without answering until the client
// closes it or the fake stops.
func (s *Server) holdUntilGone(c net.Conn) {
	gone := make(chan struct{})
	go func() { // owned by holdUntilGone, which waits for it
		defer close(gone)
		_, _ = io.Copy(io.Discard, c)
	}()
	select {
	case <-gone:
	case <-s.closing:
		c.Close()
		<-gone
	}
}

// readRequestLine reads the first line, enforcing the 1 MiB limit.
func readRequestLine(r *bufio.Reader) ([]byte, bool) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(bytes.TrimSuffix(buf, []byte("\n"))) > maxRequestBytes {
			return nil, false
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(buf, []byte("\n")), true
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, false
		}
	}
}

// record stores a request and validates it; invalid is the complaint,
// "" when it passed.
func (s *Server) record(line []byte, id, method string, f FaultKind) (n int, invalid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Request{N: len(s.requests) + 1, At: time.Now(), ID: id, Method: method, Line: string(line), Fault: f}
	var env struct {
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &env) == nil {
		r.Params = env.Params
	}
	s.requests = append(s.requests, r)
	// Herdr refuses what its decoding refuses, which is more than the
	// schema says (wireCheck), and so is a violation too.
	broken := "breaks the wire rules"
	invalid = wireCheck(line, s.paramKeys)
	if invalid == "" && s.val != nil {
		broken, invalid = "breaks the schema", s.val.checkRequest(line)
	}
	if invalid != "" {
		s.violations = append(s.violations, fmt.Sprintf("request %d (%s) %s: %s\n  line: %s", r.N, method, broken, invalid, clip(line)))
	}
	return r.N, invalid
}

// paramKeys are the params fields the schema gives method, plus those
// the current protocol adds (resume_argv of pane.report_agent from
// protocol 22: Herdr 0.9 decodes it, so it refuses it twice too); nil
// (all count) without a schema. Called with s.mu held.
func (s *Server) paramKeys(method string) map[string]bool {
	if s.val == nil {
		return nil
	}
	keys := s.val.paramKeys[method]
	if method == "pane.report_agent" && s.protocol >= Protocol22 {
		keys = maps.Clone(keys)
		keys["resume_argv"] = true
	}
	return keys
}

// write sends one line (adding the newline if missing), records it as the
// reply of request n, and checks it against the schema when kind is set.
func (s *Server) write(c net.Conn, n int, line []byte, kind string) bool {
	if kind != "" {
		s.checkOutput(kind, line)
	}
	s.mu.Lock()
	if n > 0 && n <= len(s.requests) {
		s.requests[n-1].Reply = string(line)
	}
	s.mu.Unlock()
	if kind != "" && !bytes.HasSuffix(line, []byte("\n")) {
		// A copy: one event's line is queued to every subscriber, and
		// appending in place would write into the others' bytes.
		line = append(line[:len(line):len(line)], '\n')
	}
	_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := c.Write(line)
	if err != nil && n > 0 {
		s.mu.Lock()
		if n <= len(s.requests) {
			s.requests[n-1].Lost = true
		}
		s.mu.Unlock()
	}
	return err == nil
}

func (s *Server) checkOutput(kind string, line []byte) {
	var msg string
	switch {
	case kind == kindEventsLost:
		msg = checkEventsLost(line)
	case kind == kindUnchecked || s.val == nil:
		return
	default:
		msg = s.val.checkOutput(kind, line)
	}
	if msg != "" {
		s.mu.Lock()
		s.violations = append(s.violations, fmt.Sprintf("fake wrote a %s line that breaks the schema (a bug in herdrfake): %s\n  line: %s", kind, msg, clip(line)))
		s.mu.Unlock()
	}
}

func clip(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

// Dial connects to the fake through an in-memory pipe instead of the
// socket. It fits herdr.Client's Dial field, for tests that run under
// testing/synctest, where time only moves while every goroutine waits on
// something in-process. It fails like a dead socket after Crash.
func (s *Server) Dial(ctx context.Context, _ string) (net.Conn, error) {
	s.lnMu.Lock()
	up := s.ln != nil
	s.lnMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !up || s.closed {
		return nil, &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	client, server := net.Pipe()
	s.conns[server] = true
	s.pipes++
	go func() {
		defer func() {
			s.mu.Lock()
			s.pipes--
			s.mu.Unlock()
		}()
		s.serve(server)
	}()
	return client, nil
}
