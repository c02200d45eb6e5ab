package tools

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// Executor runs one bridged tool call in the owner. ctx is cancelled when
// the caller aborts (the pane's Pi closed the connection) or the server
// closes; Execute must then return soon, since [Server.Close] waits for it.
// update sends a partial result (a ToolResult-shaped JSON object) to the
// caller; it may be called from any goroutine until Execute returns and is
// ignored afterwards. The result is the tool's ToolResult (an object with a
// content array); an error becomes the call's error message.
type Executor interface {
	Execute(ctx context.Context, call Call, update func(partial json.RawMessage)) (json.RawMessage, error)
}

// ExecutorFunc adapts a function to [Executor].
type ExecutorFunc func(ctx context.Context, call Call, update func(json.RawMessage)) (json.RawMessage, error)

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, call Call, update func(json.RawMessage)) (json.RawMessage, error) {
	return f(ctx, call, update)
}

// Call is one tool call from the pane's Pi.
type Call struct {
	ToolCallID string
	Name       string
	// Params is the tool's arguments, a JSON object Pi validated against
	// the tool's schema.
	Params json.RawMessage
	// PID is the caller's process, as the kernel recorded it.
	PID int
}

// Config says where the bridge listens, what it offers and who runs calls.
type Config struct {
	// Dir is a private directory (0700, ours) with a short path: the
	// wrapper's run directory. The socket and the client extension go
	// there.
	Dir      string
	Tools    []Spec
	Executor Executor
	// Logf receives diagnostics (rejected peers, bad requests, aborted
	// calls). Never the terminal.
	Logf func(format string, args ...any)

	// RequestTimeout bounds how long a connection may take to send its
	// request line (default 10s); WriteTimeout bounds each line written
	// to a caller (default 30s; a caller that stops reading aborts its
	// call). MaxConns bounds open connections, that is tool calls in
	// flight (default 32).
	RequestTimeout time.Duration
	WriteTimeout   time.Duration
	MaxConns       int

	// awaitingRequest, when set, is called as a connection starts waiting
	// for its request line (tests only).
	awaitingRequest func()
}

// maxSocketPath is the longest unix socket path Linux takes (sun_path is
// 108 bytes with its terminating NUL).
const maxSocketPath = 107

// Server is a running tool bridge for one handoff. It owns its accept
// goroutine and, per connection, one goroutine plus one watching for the
// caller's abort; Close cancels calls in flight and waits for all of them.
type Server struct {
	cfg    Config
	uid    int // callers must be ours
	token  string
	path   string // socket
	client string // client extension, once written
	tools  map[string]bool

	ln     *net.UnixListener
	ctx    context.Context // cancelled by Close: every call's parent
	cancel context.CancelFunc

	mu     sync.Mutex
	conns  map[*net.UnixConn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Serve creates the socket (mode 0600) in cfg.Dir with a fresh token and
// starts serving.
func Serve(cfg Config) (*Server, error) {
	if cfg.Executor == nil {
		return nil, errors.New("tools: Serve needs an executor")
	}
	specs, err := normalizeSpecs(cfg.Tools)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	cfg.Tools = specs
	if err := control.CheckPrivateDir(cfg.Dir); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	id, err := randomHex(4)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	path := filepath.Join(cfg.Dir, "tools-"+id+".sock")
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("tools: socket path %s is %d bytes, the limit is %d: use a private directory with a shorter path", path, len(path), maxSocketPath)
	}
	token, err := randomHex(32)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 32
	}
	ln, err := control.ListenPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	s := &Server{cfg: cfg, uid: os.Getuid(), token: token, path: path, tools: map[string]bool{}, ln: ln, conns: map[*net.UnixConn]struct{}{}}
	for _, t := range specs {
		s.tools[t.Name] = true
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// As the control socket's: a panic ends the accepting or that one
	// call's connection (closed by serve's deferred untrack), never the
	// wrapper.
	guard.Go(&s.wg, cfg.Logf, "tools: the accept loop", "no new tool call is taken for this handoff", s.accept)
	return s, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Path is the socket path.
func (s *Server) Path() string { return s.path }

// Token is the handoff's secret every request must carry.
func (s *Server) Token() string { return s.token }

// Tools is the normalised tool set the bridge serves.
func (s *Server) Tools() []Spec { return append([]Spec(nil), s.cfg.Tools...) }

// WriteClient writes the pane's client extension ([ClientExtension] for
// this server's tools, socket and token) into the server's directory as a
// 0600 file and returns its path, for Pi's --extension. Close removes it.
func (s *Server) WriteClient() (string, error) {
	src, err := ClientExtension(s.cfg.Tools, s.path, s.token)
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(s.path, ".sock") + ".mjs"
	if err := control.WriteNewFile(path, src); err != nil {
		return "", fmt.Errorf("tools: write client extension: %w", err)
	}
	s.mu.Lock()
	s.client = path
	s.mu.Unlock()
	return path, nil
}

// Close stops accepting, cancels the calls in flight (their callers get an
// error saying the bridge closed), waits for every goroutine, and removes
// the socket and the client extension. Safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	// Cancel first: the accept loop reads a closed listener as the end
	// only once the context says so.
	s.cancel()
	err := s.ln.Close()
	// Wake connections still reading (a request line, or a caller's
	// abort): they end without waiting for their timeout.
	for c := range s.conns {
		_ = c.SetReadDeadline(time.Now())
	}
	client := s.client
	s.mu.Unlock()
	s.wg.Wait()
	_ = os.Remove(s.path) // in case the listener did not unlink it
	if client != "" {
		_ = os.Remove(client)
	}
	return err
}

func (s *Server) accept() {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			// Out of descriptors and the like: log, breathe, go on.
			s.cfg.Logf("tools: accept: %v", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err := s.track(c); err != nil {
			if s.ours(c) {
				s.reply(c, message{Type: TypeError, Error: err.Error()})
			}
			_ = c.Close()
			continue
		}
		guard.Go(&s.wg, s.cfg.Logf, "tools: a call's connection", "that call gets no answer; the others go on", func() { s.serve(c) })
	}
}

func (s *Server) track(c *net.UnixConn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("the tool bridge is closing (the handoff ended)")
	}
	if len(s.conns) >= s.cfg.MaxConns {
		s.cfg.Logf("tools: refused a connection: %d tool calls already open", len(s.conns))
		return fmt.Errorf("busy: %d tool calls are already open", len(s.conns))
	}
	s.conns[c] = struct{}{}
	return nil
}

func (s *Server) untrack(c *net.UnixConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	_ = c.Close()
}

// ours reports whether the peer has the uid callers must have.
func (s *Server) ours(c *net.UnixConn) bool {
	cred, err := control.PeerCred(c)
	return err == nil && int(cred.Uid) == s.uid
}

// serve owns one connection, from the peer check to its close: it reads
// and checks the request, then runs the call.
func (s *Server) serve(c *net.UnixConn) {
	defer s.untrack(c)
	cred, err := control.PeerCred(c)
	if err != nil {
		s.cfg.Logf("tools: rejected a connection: cannot read peer credentials: %v", err)
		return
	}
	if int(cred.Uid) != s.uid {
		// No answer: another user learns nothing, not even the protocol.
		s.cfg.Logf("tools: rejected a connection from uid %d (pid %d): only uid %d may call tools", cred.Uid, cred.Pid, s.uid)
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(s.cfg.RequestTimeout))
	if s.ctx.Err() != nil {
		// Close may have woken this connection before the deadline above
		// replaced its wake-up.
		return
	}
	if s.cfg.awaitingRequest != nil {
		s.cfg.awaitingRequest()
	}
	r := bufio.NewReader(c)
	line, err := readLine(r, MaxRequestLine)
	if err != nil {
		if errors.Is(err, ErrRequestTooLong) {
			s.cfg.Logf("tools: pid %d: %v; closing", cred.Pid, err)
			s.reply(c, message{Type: TypeError, Error: "bad request: " + err.Error()})
		} else if s.ctx.Err() == nil && (len(line) > 0 || !isEOF(err)) {
			s.cfg.Logf("tools: pid %d: no request line: %v", cred.Pid, err)
		}
		return
	}
	req, err := DecodeRequest(line)
	if err != nil {
		s.cfg.Logf("tools: pid %d: bad request: %v", cred.Pid, err)
		s.reply(c, message{Type: TypeError, Error: "bad request: " + err.Error()})
		return
	}
	if subtle.ConstantTimeCompare([]byte(req.Token), []byte(s.token)) != 1 {
		s.cfg.Logf("tools: rejected pid %d: wrong token (tool %q not run)", cred.Pid, control.Clip(req.Name))
		s.reply(c, message{Type: TypeError, Error: "wrong token"})
		return
	}
	if !s.tools[req.Name] {
		s.cfg.Logf("tools: pid %d: unknown tool %q", cred.Pid, control.Clip(req.Name))
		s.reply(c, message{Type: TypeError, Error: fmt.Sprintf("unknown tool: %s (this bridge serves: %s)", control.Clip(req.Name), s.toolNames())})
		return
	}
	if r.Buffered() > 0 {
		s.cfg.Logf("tools: pid %d: data after the request line; closing", cred.Pid)
		s.reply(c, message{Type: TypeError, Error: "bad request: nothing may follow the request line"})
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	s.run(c, Call{ToolCallID: req.ToolCallID, Name: req.Name, Params: req.Params, PID: int(cred.Pid)})
}

func (s *Server) toolNames() string {
	names := make([]string, 0, len(s.cfg.Tools))
	for _, t := range s.cfg.Tools {
		names = append(names, t.Name)
	}
	return strings.Join(names, ", ")
}

// run executes one call and answers it. A second goroutine, owned here and
// joined before run returns, reads the connection: the caller sends
// nothing after its request, so any read returning (a close, a reset, a
// stray byte) means the caller is gone and the call is cancelled.
func (s *Server) run(c *net.UnixConn, call Call) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	var gone atomic.Bool
	watched := make(chan struct{})
	go func() { // a read, a log line and a cancel: nothing here panics
		defer close(watched)
		var b [1]byte
		n, err := c.Read(b[:])
		if s.ctx.Err() != nil {
			return // woken by Close, not by the caller
		}
		if n > 0 {
			s.cfg.Logf("tools: pid %d: data after the request line; aborting %s", call.PID, call.Name)
		} else if !isEOF(err) && !errors.Is(err, os.ErrDeadlineExceeded) {
			s.cfg.Logf("tools: pid %d: read: %v", call.PID, err)
		}
		gone.Store(true)
		cancel()
	}()
	defer func() {
		// Wake the watcher if the caller is still there, and join it.
		_ = c.SetReadDeadline(time.Now())
		<-watched
	}()

	var mu sync.Mutex // orders updates and the final line
	done := false
	update := func(v json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		if done || ctx.Err() != nil {
			return
		}
		if err := checkToolResult(v); err != nil {
			s.cfg.Logf("tools: %s: update dropped: %v", call.Name, err)
			return
		}
		if !s.send(c, message{Type: TypeUpdate, Value: v}) {
			cancel()
		}
	}
	res, err := s.execute(ctx, call, update)
	mu.Lock()
	done = true
	mu.Unlock()

	switch {
	case gone.Load():
		s.cfg.Logf("tools: %s (%s) aborted by the caller", call.Name, control.Clip(call.ToolCallID))
	case s.ctx.Err() != nil:
		s.send(c, message{Type: TypeError, Error: fmt.Sprintf("%s was cancelled: the tool bridge closed (the handoff ended)", call.Name)})
	case err != nil:
		s.send(c, message{Type: TypeError, Error: err.Error()})
	default:
		if cerr := checkToolResult(res); cerr != nil {
			s.cfg.Logf("tools: %s: malformed result: %v", call.Name, cerr)
			s.send(c, message{Type: TypeError, Error: fmt.Sprintf("%s returned a malformed result (%v)", call.Name, cerr)})
			return
		}
		s.send(c, message{Type: TypeResult, Value: res})
	}
}

// execute calls the executor; a panic in it becomes the call's error
// instead of taking the owner down.
func (s *Server) execute(ctx context.Context, call Call, update func(json.RawMessage)) (res json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logf("tools: %s: executor panicked: %v", call.Name, r)
			res, err = nil, fmt.Errorf("%s failed inside herdr-pi (see its log)", call.Name)
		}
	}()
	return s.cfg.Executor.Execute(ctx, call, update)
}

// send writes one line within WriteTimeout and reports whether it went.
func (s *Server) send(c *net.UnixConn, m message) bool {
	b, err := encode(m)
	if err != nil {
		s.cfg.Logf("tools: encode %s line: %v", m.Type, err)
		return false
	}
	_ = c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if _, err := c.Write(b); err != nil {
		if !isEOF(err) && !errors.Is(err, unix.EPIPE) {
			s.cfg.Logf("tools: write %s line: %v", m.Type, err)
		}
		return false
	}
	return true
}

// reply sends a refusal; a refused peer may be gone already.
func (s *Server) reply(c *net.UnixConn, m message) { _ = s.send(c, m) }

// readLine reads one line of at most max bytes (newline included). Memory
// grows with what arrives, not with max.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, ErrRequestTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return line, err
		}
	}
}

// isEOF is true for the ways a peer ends a connection: a plain close, or
// a reset when it goes away with our reply unread.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, unix.ECONNRESET)
}
