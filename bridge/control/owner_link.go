package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// OwnerSink receives what an owner link says without being asked (engine
// status, live attempts, menu requests, cancellations, late resumes) and
// the link's connection brackets ([OwnerConnected], [OwnerDisconnected]).
// Calls are serialised with [EventSink] and [Requests] calls and must
// return quickly: the link reads nothing meanwhile, so a method of
// [OwnerLink] that waits for an answer must run in another goroutine.
type OwnerSink interface {
	OwnerEvent(link *OwnerLink, msg OwnerMessage)
}

// OwnerConnected and OwnerDisconnected bracket one owner link.
type OwnerConnected struct{ PID int }

// OwnerDisconnected: the owner's Pi quit or died; every handoff it had is
// over (the wrapper closes what it opened for them).
type OwnerDisconnected struct{ PID int }

func (OwnerConnected) ownerType() string    { return "owner_connected" }
func (OwnerDisconnected) ownerType() string { return "owner_disconnected" }

// ErrOwnerGone is returned by [OwnerLink] methods once the link is closed.
var ErrOwnerGone = errors.New("the workflow owner's Pi is gone (its link to the wrapper closed)")

// HandoffRefused is the owner's handoff_error as an error.
type HandoffRefused struct {
	Code, Message string
}

func (e *HandoffRefused) Error() string {
	return "the workflow owner refused the handoff: " + e.Message
}

// HandoffCancelled is returned by [OwnerLink.Handoff] when the owner gave
// the handoff up before describing the launch.
type HandoffCancelled struct {
	Reason string
	// SessionEnding: the owner's session is going (see [HandoffCancel]).
	SessionEnding bool
}

func (e *HandoffCancelled) Error() string {
	return "the workflow owner cancelled the handoff: " + e.Reason
}

// ToolFailed is a bridged tool's error, as the owner reported it.
type ToolFailed struct{ Message string }

func (e *ToolFailed) Error() string { return e.Message }

// OwnerLink is the wrapper's end of one owner link. Its methods may be
// called from any goroutine; each waits for its own answer.
type OwnerLink struct {
	conn *net.UnixConn
	pid  int
	logf func(string, ...any)

	wmu sync.Mutex // one line at a time

	mu       sync.Mutex
	launches map[string]chan OwnerMessage // handoff id → Launch | HandoffError | HandoffCancel
	resumes  map[string]chan Resumed      // handoff id
	calls    map[string]*pendingCall      // tool call id
	nextCall int
	done     chan struct{}
}

type pendingCall struct {
	msgs chan OwnerMessage // ToolUpdate*, then ToolResult | ToolError
	quit chan struct{}     // closed when CallTool returns: later lines are dropped
}

// PID is the owner Pi's process id, as the kernel recorded it.
func (l *OwnerLink) PID() int { return l.pid }

// Done is closed when the link ends.
func (l *OwnerLink) Done() <-chan struct{} { return l.done }

func (l *OwnerLink) send(typ, id string, data any) error {
	m := Message{Type: typ, ID: id}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("owner link: %s: %w", typ, err)
		}
		m.Data = b
	}
	b, err := EncodeOwner(m)
	if err != nil {
		return fmt.Errorf("owner link: %s: %w", typ, err)
	}
	select {
	case <-l.done:
		return ErrOwnerGone
	default:
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	_ = l.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := l.conn.Write(b); err != nil {
		return fmt.Errorf("owner link: %s: %w", typ, err)
	}
	return nil
}

// Handoff orders the owner to hand off the live attempt of order.SessionID
// at its next turn boundary and returns the launch once the owner has cut
// the turn and suspended its session. order.ID names the handoff in every
// later message.
//
// When ctx ends first, Handoff returns its error: the order still stands
// until [OwnerLink.Handback] withdraws it, which the caller must do.
func (l *OwnerLink) Handoff(ctx context.Context, order HandoffOrder) (Launch, error) {
	if err := checkID("handoff id", order.ID, true); err != nil {
		return Launch{}, err
	}
	ch := make(chan OwnerMessage, 1)
	l.mu.Lock()
	if _, dup := l.launches[order.ID]; dup {
		l.mu.Unlock()
		return Launch{}, fmt.Errorf("owner link: handoff %s is already waiting for its launch", order.ID)
	}
	l.launches[order.ID] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.launches, order.ID)
		l.mu.Unlock()
	}()
	if err := l.send(TypeHandoff, order.ID, order); err != nil {
		return Launch{}, err
	}
	select {
	case m := <-ch:
		switch m := m.(type) {
		case Launch:
			return m, nil
		case HandoffError:
			return Launch{}, &HandoffRefused{Code: m.Code, Message: m.Error}
		case HandoffCancel:
			return Launch{}, &HandoffCancelled{Reason: m.Reason, SessionEnding: m.SessionEnding}
		}
		return Launch{}, fmt.Errorf("owner link: unexpected %s", m.ownerType())
	case <-l.done:
		return Launch{}, ErrOwnerGone
	case <-ctx.Done():
		return Launch{}, ctx.Err()
	}
}

// Refuse answers a menu request (handoff_request, inspect_request) the
// wrapper will not carry out; the owner shows the error.
func (l *OwnerLink) Refuse(requestID string, err error) error {
	return l.send(TypeRequestRefused, requestID, struct {
		Error string `json:"error"`
	}{clipLong(err.Error(), maxError)})
}

// PaneState tells the owner how the pane of handoff id is doing (one of the
// Pane* states), for its status line.
func (l *OwnerLink) PaneState(id, state string) error {
	return l.send(TypePaneState, id, struct {
		State string `json:"state"`
	}{state})
}

// Handback returns ownership of handoff id to the owner (or withdraws an
// order that has not reached its turn boundary) and waits until the owner
// has its local session back.
func (l *OwnerLink) Handback(ctx context.Context, id string, hb Handback) (Resumed, error) {
	ch := make(chan Resumed, 1)
	l.mu.Lock()
	l.resumes[id] = ch
	// An order still waiting for its launch is withdrawn: its Handoff call
	// ends now.
	if w, ok := l.launches[id]; ok {
		delete(l.launches, id)
		w <- HandoffCancel{ID: id, Reason: "withdrawn by the wrapper"}
	}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.resumes, id)
		l.mu.Unlock()
	}()
	hb.Error = clipLong(hb.Error, maxError)
	if err := l.send(TypeHandback, id, hb); err != nil {
		return Resumed{}, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-l.done:
		return Resumed{}, ErrOwnerGone
	case <-ctx.Done():
		return Resumed{}, ctx.Err()
	}
}

// CallTool runs one bridged tool call of handoff handoffID in the owner:
// update receives each partial result in order, then the result (or the
// tool's error as a [*ToolFailed]) is returned. When ctx ends first the
// tool's signal is aborted and CallTool returns ctx's error at once; the
// owner's late answer is dropped.
func (l *OwnerLink) CallTool(ctx context.Context, handoffID string, call ToolCall, update func(json.RawMessage)) (json.RawMessage, error) {
	if len(call.Params) == 0 {
		call.Params = json.RawMessage("{}")
	}
	p := &pendingCall{msgs: make(chan OwnerMessage, 16), quit: make(chan struct{})}
	l.mu.Lock()
	l.nextCall++
	id := "c" + strconv.Itoa(l.nextCall)
	l.calls[id] = p
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.calls, id)
		l.mu.Unlock()
		close(p.quit)
	}()
	if err := l.send(TypeToolCall, id, struct {
		Handoff string `json:"handoff"`
		ToolCall
	}{handoffID, call}); err != nil {
		return nil, err
	}
	for {
		select {
		case m := <-p.msgs:
			switch m := m.(type) {
			case ToolUpdate:
				if update != nil {
					update(m.Value)
				}
			case ToolResult:
				return m.Value, nil
			case ToolError:
				return nil, &ToolFailed{Message: m.Error}
			}
		case <-l.done:
			return nil, ErrOwnerGone
		case <-ctx.Done():
			_ = l.send(TypeToolAbort, id, nil)
			return nil, ctx.Err()
		}
	}
}

// serveOwner runs one owner link, from its hello answer to its end.
func (s *Server) serveOwner(c *net.UnixConn, r *bufio.Reader, hello Message, cred *unix.Ucred) {
	if s.cfg.Owner == nil {
		s.cfg.Logf("control: refused an owner link from pid %d: this wrapper takes none", cred.Pid)
		s.write(c, Message{Type: TypeError, Error: "this wrapper does not take an owner link"})
		return
	}
	if hello.Version != OwnerVersion {
		s.cfg.Logf("control: refused an owner link from pid %d: version %d, want %d", cred.Pid, hello.Version, OwnerVersion)
		s.write(c, Message{Type: TypeError, Error: fmt.Sprintf("owner link version %d is not %d: the probe and the wrapper are from different herdr-pi builds", hello.Version, OwnerVersion)})
		return
	}
	if !s.write(c, Message{Type: TypeHello, OK: true, Version: OwnerVersion}) {
		return
	}
	_ = c.SetReadDeadline(time.Time{}) // lives as long as the owner's Pi
	l := &OwnerLink{conn: c, pid: int(cred.Pid), logf: s.cfg.Logf,
		launches: map[string]chan OwnerMessage{}, resumes: map[string]chan Resumed{}, calls: map[string]*pendingCall{},
		done: make(chan struct{})}
	deliver := func(m OwnerMessage) { s.call(func() { s.cfg.Owner.OwnerEvent(l, m) }) }
	deliver(OwnerConnected{PID: l.pid})
	defer func() {
		close(l.done)
		deliver(OwnerDisconnected{PID: l.pid})
	}()
	for {
		line, err := readLongLine(r, MaxOwnerLine)
		if err != nil {
			if !isEOF(err) {
				s.cfg.Logf("control: owner pid %d: %v; closing its link", l.pid, err)
			}
			return
		}
		m, err := DecodeOwner(line)
		if err == nil && !ownerTypes[m.Type].fromOwner {
			err = fmt.Errorf("%s travels from the wrapper to the owner, not back", m.Type)
		}
		var msg OwnerMessage
		if err == nil {
			msg, err = ParseOwnerMessage(m)
		}
		if err != nil {
			s.cfg.Logf("control: owner pid %d: bad line (%v); closing its link", l.pid, err)
			return
		}
		if !l.route(m.ID, msg) {
			deliver(msg)
		}
	}
}

// route hands an answer to the method waiting for it; false means nobody
// waits and the sink gets it.
func (l *OwnerLink) route(id string, msg OwnerMessage) bool {
	l.mu.Lock()
	switch msg.(type) {
	case Launch, HandoffError:
		ch, ok := l.launches[id]
		delete(l.launches, id)
		l.mu.Unlock()
		if !ok {
			l.logf("control: owner pid %d: %s for handoff %s, which nobody waits for; dropped", l.pid, msg.ownerType(), id)
			return true
		}
		ch <- msg // buffered, one answer per waiter
		return true
	case HandoffCancel:
		ch, ok := l.launches[id]
		delete(l.launches, id)
		l.mu.Unlock()
		if ok {
			ch <- msg
		}
		return false // the sink hears of it either way: it must close the pane
	case Resumed:
		ch, ok := l.resumes[id]
		delete(l.resumes, id)
		l.mu.Unlock()
		if ok {
			ch <- msg.(Resumed)
		}
		return ok
	case ToolUpdate, ToolResult, ToolError:
		p, ok := l.calls[id]
		l.mu.Unlock()
		if ok {
			select {
			case p.msgs <- msg:
			case <-p.quit:
			}
		}
		return true
	}
	l.mu.Unlock()
	return false
}

// readLongLine reads one line of at most limit bytes through a reader whose
// buffer may be smaller, so a link that allows long lines does not hold a
// buffer that large.
func readLongLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit {
			return nil, ErrLineTooLong
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return line, nil
	}
}

// clipLong cuts s to at most n bytes on a rune boundary.
func clipLong(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
