package demo

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// herdrStandIn is the demo's Herdr: a unix socket that answers the requests
// herdr-pi sends (one request per connection, as Herdr does) and hands each
// one to the timeline. It keeps no state and checks little: the strict fake
// Herdr of the test suite is what holds herdr-pi to the contract.
type herdrStandIn struct {
	dir, socket string
	ln          net.Listener
	onRequest   func(method string, params json.RawMessage)
	wg          sync.WaitGroup
	// slots holds a token for each connection being served, at most
	// maxStandInConns.
	slots chan struct{}

	mu    sync.Mutex
	conns map[net.Conn]bool // event streams held open
	// agent and status are the pane's, as the last report set them.
	agent, status string
	// failed is the first panic recovered in the stand-in, "" when none.
	failed string
}

// maxStandInConns bounds the connections the stand-in serves at once. The
// demo's wrapper holds one event stream and sends one request at a time;
// past the bound a connection is closed at once, unanswered (its sender
// sees Herdr fail, as with a Herdr that went away), so that no amount of
// connections makes the demo take more goroutines or descriptors.
const maxStandInConns = 16

// startHerdrStandIn listens in a new private directory. close stops it,
// waits for its goroutines (it owns them) and removes the directory.
func startHerdrStandIn(onRequest func(method string, params json.RawMessage)) (*herdrStandIn, error) {
	// A unix socket path holds at most 107 bytes: under a longer TMPDIR
	// the stand-in listens in /tmp (MkdirTemp adds up to 10 digits).
	base := tempBase()
	if len(base)+len("/hpdemo0123456789/herdr.sock") > 107 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "hpdemo")
	if err != nil {
		return nil, err
	}
	h := &herdrStandIn{dir: dir, socket: filepath.Join(dir, "herdr.sock"), onRequest: onRequest,
		slots: make(chan struct{}, maxStandInConns), conns: map[net.Conn]bool{}}
	if h.ln, err = control.ListenPrivate(h.socket); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	guard.Go(&h.wg, h.logf, "demo: the Herdr stand-in's accept loop", "it takes no more connections; the wrapper's reports fail", h.accept)
	return h, nil
}

func (h *herdrStandIn) accept() {
	for {
		conn, err := h.ln.Accept()
		if err != nil {
			return
		}
		select {
		case h.slots <- struct{}{}:
		default:
			conn.Close() // past maxStandInConns: refused, unanswered
			continue
		}
		guard.Go(&h.wg, h.logf, "demo: a Herdr stand-in connection", "that request goes unanswered; the others are served", func() {
			defer func() { <-h.slots }()
			h.serve(conn)
		})
	}
}

// logf keeps the first panic guard recovered, for failure: the demo draws
// on the terminal, so nothing is printed while it runs.
func (h *herdrStandIn) logf(format string, args ...any) {
	line, _, _ := strings.Cut(fmt.Sprintf(format, args...), "\n") // not the stack
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed == "" {
		h.failed = line
	}
}

// failure is the first panic in the stand-in, nil when there was none: a
// herdr-pi bug, which makes the demo fail once it has ended.
func (h *herdrStandIn) failure() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed == "" {
		return nil
	}
	return errors.New(h.failed)
}

func (h *herdrStandIn) serve(conn net.Conn) {
	defer conn.Close()
	// Only our own uid may report to it, as to every socket herdr-pi
	// serves: the 0700 directory keeps others out, and the kernel's peer
	// credentials do so even if the directory were opened up. Another
	// uid gets no answer at all.
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return
	}
	if cred, err := control.PeerCred(uc); err != nil || int(cred.Uid) != os.Getuid() {
		return
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	// One line of at most control.MaxLine, as every socket herdr-pi
	// serves reads: a longer one (ErrBufferFull) ends the connection
	// unanswered rather than grow a buffer to whatever size is sent.
	line, err := bufio.NewReaderSize(conn, control.MaxLine).ReadSlice('\n')
	if err != nil {
		return
	}
	var req struct {
		ID     string          `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &req) != nil {
		return
	}
	h.onRequest(req.Method, req.Params)
	result := map[string]any{"type": "ok"}
	var p struct {
		Agent string `json:"agent"`
		State string `json:"state"`
	}
	_ = json.Unmarshal(req.Params, &p)
	switch req.Method {
	case "pane.report_agent":
		h.mu.Lock()
		h.agent, h.status = p.Agent, p.State
		h.mu.Unlock()
	case "pane.release_agent":
		h.mu.Lock()
		h.agent, h.status = "", "unknown"
		h.mu.Unlock()
	case "pane.get":
		h.mu.Lock()
		result = map[string]any{"type": "pane_info", "pane": map[string]any{
			"pane_id": "w1:p1", "terminal_id": "term_demo", "workspace_id": "w1", "tab_id": "w1:t1",
			"focused": true, "agent_status": h.status, "revision": 0, "agent": h.agent}}
		h.mu.Unlock()
	case "events.subscribe":
		// Acknowledge and hold the stream open, sending nothing, until the
		// wrapper goes (or the stand-in closes).
		ack, _ := json.Marshal(map[string]any{"id": req.ID, "result": map[string]any{"type": "subscription_started"}})
		if _, err := conn.Write(append(ack, '\n')); err != nil {
			return
		}
		_ = conn.SetDeadline(time.Time{})
		h.mu.Lock()
		h.conns[conn] = true
		h.mu.Unlock()
		_, _ = io.Copy(io.Discard, conn)
		h.mu.Lock()
		delete(h.conns, conn)
		h.mu.Unlock()
		return
	case "ping":
		result = map[string]any{"type": "pong", "version": "0.8.0", "protocol": 20,
			"capabilities": map[string]any{"live_handoff": false, "detached_server_daemon": false}}
	case "notification.show":
		result = map[string]any{"type": "notification_show", "shown": true, "reason": "shown"}
	}
	reply, _ := json.Marshal(map[string]any{"id": req.ID, "result": result})
	_, _ = conn.Write(append(reply, '\n'))
}

func (h *herdrStandIn) close() {
	h.ln.Close()
	h.mu.Lock()
	for c := range h.conns {
		c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
	os.RemoveAll(h.dir)
}

// tempBase is where the demo makes its temporary directories: TMPDIR made
// absolute, since the paths in them go to a wrapper that runs elsewhere
// (in the demo project).
func tempBase() string {
	base := os.TempDir()
	if abs, err := filepath.Abs(base); err == nil {
		return abs
	}
	return base
}
