package control

import (
	"bufio"
	"bytes"
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
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// EventSink receives every event the probe forwards, decoded, in arrival
// order. Calls never overlap (with each other or with [Requests] calls),
// and must return quickly: the connection waits meanwhile.
type EventSink interface {
	ProbeEvent(Event)
}

// Requests answers `herdr-pi waiting` and `herdr-pi status`. Calls are
// serialised with [EventSink] calls.
type Requests interface {
	Wait(WaitRequest) error
	Status() Status
}

// Config says where the server listens and to whom it delivers.
type Config struct {
	// Path is the socket path. Its directory must be private (see
	// [EnsurePrivateDir]); unix socket paths are limited to 107 bytes.
	Path string
	// Token is the per-run secret every connection must present.
	Token    string
	Events   EventSink
	Requests Requests
	// Owner receives what owner links say (optional: without it, owner
	// hellos are refused).
	Owner OwnerSink
	// Handoffs carries out `herdr-pi open`'s handoff requests (optional:
	// without it they are refused).
	Handoffs Handoffs
	// Build names the wrapper's build in its hello and its refusals
	// (default: [Build]; tests name others).
	Build string
	// Logf receives diagnostics (rejected peers, bad lines). Never the
	// terminal.
	Logf func(format string, args ...any)

	// HelloTimeout bounds how long a new connection may take to
	// authenticate (default 10s: Pi's probe writes its hello from Node's
	// event loop, which Pi can hold for seconds while it loads extensions
	// on a loaded machine, and a probe dropped then loses the events it
	// queued behind the hello; a flood of silent clients is the place
	// limit's to handle, below); IdleTimeout closes a client (not probe)
	// connection that sends nothing (default 30s). MaxConns bounds open
	// connections (default 32): when they are all open, a newcomer takes
	// the place of the client idle the longest, once idle for HelloGrace
	// (default 25ms: a real client writes its request as soon as it has
	// read the answer, and its hello as it connects; one cut while off its
	// core asks again, see Client.Call); only when no client is idle, of
	// the connection that never said hello silent the longest, once silent
	// for HelloGrace. Probes, owner links, requests in progress and a
	// handoff's asker from its hello on (Message.Handoff) keep theirs.
	// Until a place is free, newcomers wait in the kernel's listen queue
	// (see track and silentest). A client may write requests before it
	// reads the answers; while maxUnread of them wait unread, its next
	// request waits unread too, and the client counts as idle (see
	// awaitReader).
	HelloTimeout time.Duration
	IdleTimeout  time.Duration
	MaxConns     int
	HelloGrace   time.Duration

	// peerUID, when set, replaces our own uid as the one peers must have
	// (tests only).
	peerUID *int
	// helloRead, when set, runs as soon as a connection's hello has been
	// read (tests only: a goroutine off its core there).
	helloRead func(Message)
}

// Server is a running control socket. It owns its accept goroutine and one
// goroutine per connection; Close stops and waits for all of them.
type Server struct {
	cfg Config
	ln  *net.UnixListener

	deliver sync.Mutex // serialises calls into Events and Requests

	mu    sync.Mutex
	conns map[net.Conn]*connState
	// cut counts the connections in conns that were cut to make room and
	// have not ended yet: they hold no place (see track).
	cut int
	// cuts counts the cuts of each phase, for their log lines: a flood
	// is logged once a second, not once a connection.
	cuts   [phaseHeld]tally
	room   *sync.Cond // signalled (under mu) when a connection ends or may be dropped
	probes int
	// probeConns numbers the probe connections (ProbeConnected.Conn).
	probeConns uint64
	closed     bool
	wg         sync.WaitGroup
	// streams are the handoff streams still to give their answer, each
	// closed when it has (see Close).
	streams map[chan struct{}]struct{}
	// holders are the processes holding open waits (`waiting start
	// --pid`), by wait key (see holders.go).
	holders map[string]*holder
	// channelPID is the Pi process whose numbered channel event was
	// delivered last, channelSeq its number (see deliverProbeEvent).
	// Guarded by deliver.
	channelPID int32
	channelSeq int64
}

// connPhase is what a connection is doing, for choosing whom to drop when
// every place is taken.
type connPhase int

const (
	// phaseHello: accepted, no hello read yet. A real client sends its
	// hello at once, so one silent here is the first to go.
	phaseHello connPhase = iota
	// phaseIdle: an authenticated client between requests.
	phaseIdle
	// phaseStalled: an idle client whose answers wait unread, up to
	// maxUnread: what it wrote since waits unread too (awaitReader), and
	// is no sign that it is about to speak.
	phaseStalled
	// phaseGreeting: its hello has come in whole and is being read and
	// answered; a client is idle a moment later, a probe, an owner link
	// or a handoff's asker held. Never dropped, and, like words waiting
	// unread, a sign that an idle client is on its way (silentest).
	phaseGreeting
	// phaseHeld: a probe, an owner link, or a request being answered;
	// never dropped to make room.
	phaseHeld
)

type connState struct {
	phase connPhase
	since time.Time // of the last phase change
	// cut: its read deadline was set in the past to make room; its
	// goroutine ends it at its next read, unless that read had already
	// brought a line (see mark).
	cut bool
}

// NewToken returns a fresh random token (256 bits, hex).
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Listen creates the socket (mode 0600) and starts serving.
func Listen(cfg Config) (*Server, error) {
	if cfg.Token == "" || cfg.Events == nil || cfg.Requests == nil {
		return nil, errors.New("control: Listen needs a token, an event sink and a request handler")
	}
	if len(cfg.Path) > maxSocketPath {
		return nil, fmt.Errorf("control: socket path %s is %d bytes, the limit is 107: use a shorter runtime directory", cfg.Path, len(cfg.Path))
	}
	if err := checkPrivate(filepath.Dir(cfg.Path)); err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.HelloTimeout <= 0 {
		cfg.HelloTimeout = 10 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 32
	}
	if cfg.HelloGrace <= 0 {
		cfg.HelloGrace = 25 * time.Millisecond
	}
	if cfg.peerUID == nil {
		uid := os.Getuid()
		cfg.peerUID = &uid
	}
	ln, err := ListenPrivate(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	s := &Server{cfg: cfg, ln: ln, conns: map[net.Conn]*connState{}, holders: map[string]*holder{}}
	s.room = sync.NewCond(&s.mu)
	// A panic serving the socket ends the accepting or that one
	// connection (its deferred untrack closes it), never the wrapper: the
	// agent runs on without `status`, or without that client.
	guard.Go(&s.wg, cfg.Logf, "control: the accept loop", "no new connection is taken in this run; the agent runs on", s.accept)
	return s, nil
}

// Path is the socket path.
func (s *Server) Path() string { return s.cfg.Path }

// Close stops accepting, closes every connection, waits for their
// goroutines and removes the socket file. Safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.room.Broadcast()
	err := s.ln.Close()
	streams := make([]chan struct{}, 0, len(s.streams))
	for ch := range s.streams {
		streams = append(streams, ch)
	}
	s.mu.Unlock()
	// The wrapper ends its handoffs before it closes this socket
	// (wrapShutdown): a handback given just now is still on its way to
	// the asking open. Closed under it, open would read EOF and tell the
	// person the owner's wrapper died with the pane still running. A
	// stream whose handoff still runs is not waited for past the bound.
	// One bound for all: its channel fires once, so the wait ends there
	// rather than going on to the next stream with nothing to stop it.
	bound := time.NewTimer(streamAnswerWait)
wait:
	for _, ch := range streams {
		select {
		case <-ch:
		case <-bound.C:
			break wait
		}
	}
	bound.Stop()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.releaseHolders()
	s.mu.Unlock()
	s.wg.Wait()
	_ = os.Remove(s.cfg.Path) // in case the listener did not unlink it
	return err
}

// streamAnswerWait bounds how long Close waits for handoff streams to give
// their answers.
const streamAnswerWait = 2 * time.Second

// streamStarts registers a handoff stream; false once the server closes.
func (s *Server) streamStarts() (answered chan struct{}, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	if s.streams == nil {
		s.streams = map[chan struct{}]struct{}{}
	}
	answered = make(chan struct{})
	s.streams[answered] = struct{}{}
	return answered, true
}

// streamEnds says a handoff stream gave its answer (or gave up).
func (s *Server) streamEnds(answered chan struct{}) {
	s.mu.Lock()
	delete(s.streams, answered)
	s.mu.Unlock()
	close(answered)
}

func (s *Server) accept() {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if s.isClosed() {
				return
			}
			// Out of descriptors and the like: log, breathe, go on.
			s.cfg.Logf("control: accept: %v", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if !s.track(c) {
			_ = c.Close()
			continue
		}
		guard.Go(&s.wg, s.cfg.Logf, "control: a connection", "that connection is closed; the others go on", func() { s.serve(c) })
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// track gives c a place among the open connections and arms its hello
// deadline (before its goroutine runs, so that goroutine cannot undo a cut).
//
// When all MaxConns places are taken, the newcomer takes the place of a
// silent connection (silentest says which); one whose words wait unread
// is never taken (pending), unless it is we who leave them unread until
// the client reads our answers (phaseStalled). With none yet, the newcomer waits in the
// kernel's listen backlog until one ends or has been silent long enough,
// rather than being turned away. Waiting half a second for each silent
// connection, as this did, let them go 32 every half second, so a few
// hundred of them queued ahead of `herdr-pi status` outlasted its 5 s; at
// HelloGrace a thousand go in a second or so. The same held for clients
// that said hello with the run's token and then said nothing, whether
// they read the answer (400 of them kept status waiting past its 5 s) or
// never did (320).
//
// A connection is cut, not closed: its read deadline is set in the past,
// so its goroutine ends it at once, and a line that goroutine had read
// already is still served (mark). Cut connections hold no place; with the
// rest they are bounded at twice MaxConns, so a flood faster than their
// goroutines end waits in the backlog too.
func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	waited := false
	for !s.closed && (len(s.conns)-s.cut >= s.cfg.MaxConns || len(s.conns) >= 2*s.cfg.MaxConns) {
		wake := time.Duration(0)
		if len(s.conns)-s.cut >= s.cfg.MaxConns {
			var victim net.Conn
			var st *connState
			if victim, st, wake = s.silentest(time.Now()); victim != nil {
				s.cutOne(victim, st)
				continue
			}
			if !waited && wake == 0 {
				s.cfg.Logf("control: all %d connections are busy; a newcomer waits for a place", len(s.conns)-s.cut)
				waited = true
			}
		}
		// Else the connections cut are still ending: a moment.
		if wake > 0 {
			// A connection will have been silent long enough by then.
			t := time.AfterFunc(wake, func() {
				s.mu.Lock()
				s.room.Broadcast()
				s.mu.Unlock()
			})
			s.room.Wait()
			t.Stop()
		} else {
			s.room.Wait()
		}
	}
	if s.closed {
		return false
	}
	s.conns[c] = &connState{phase: phaseHello, since: time.Now()}
	_ = c.SetReadDeadline(time.Now().Add(s.cfg.HelloTimeout))
	return true
}

// cutOne cuts c to make room (see track). Called under mu.
func (s *Server) cutOne(c net.Conn, st *connState) {
	st.cut = true
	s.cut++
	_ = c.SetReadDeadline(time.Unix(1, 0))
	if st.phase == phaseStalled {
		// It waits for its client to read (await), not to be read from.
		_ = c.SetWriteDeadline(time.Unix(1, 0))
	}
	if n, ok := s.cuts[st.phase].add(time.Now()); ok {
		what := "a connection that never said hello"
		switch st.phase {
		case phaseIdle:
			what = "an idle client"
		case phaseStalled:
			what = "a client that does not read its answers"
		}
		s.cfg.Logf("control: %d connections open; closed %s to make room%s", len(s.conns)-s.cut+1, what, suchInAll(n))
	}
}

// tally counts one kind of event for its log line, which is written at
// most once a second.
type tally struct {
	since  int       // events since the last line
	logged time.Time // when that line was written
}

// add counts one event at now; log says to write its line now, n how
// many events the line stands for.
func (t *tally) add(now time.Time) (n int, log bool) {
	t.since++
	if now.Sub(t.logged) < time.Second {
		return 0, false
	}
	n = t.since
	t.since, t.logged = 0, now
	return n, true
}

// suchInAll is how a log line written for n events says it stands for
// more than one.
func suchInAll(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf(" (%d such in all since the last such line)", n)
}

// silentest is the connection to cut for a newcomer, among those with no
// words waiting unread (but stalled clients, whose words wait for them to
// read): the client idle the longest, once idle for
// HelloGrace, first; only when no client is idle nor about to be (words
// wait unread), the oldest connection without a hello silent for
// HelloGrace. Without one, wake is how soon one may be (zero when none
// will). Called under mu.
//
// An idle client has said hello with the run's token. A live one writes
// its request as soon as it has read our answer, or hangs up after the
// last; one silent for HelloGrace is stuck, or off its core on a loaded
// machine. Cut, the second loses nothing: an answer we wrote stays there
// for it to read, and a request it had not written yet it asks again on
// a new connection (Client.Call). Whether it has read our answer does
// not tell the two apart: one that never reads (a script, a hook stopped
// after asking) kept its place half a second longer than one that had,
// and 320 of them kept status waiting 5 s. Idle
// clients go before connections without a hello, and a newcomer waits
// for one to be silent long enough rather than take a hello's place: a
// probe whose hello is slow (Pi's event loop busy) is not told apart from
// a silent connection until it speaks, and would lose its place to a
// flood of stuck clients after 25 ms (it dials again, and was cut again).
func (s *Server) silentest(now time.Time) (victim net.Conn, best *connState, wake time.Duration) {
	var idle, hello struct {
		victim net.Conn
		st     *connState
		wake   time.Duration
		any    bool
	}
	// soon: a connection has words waiting unread; once read, it is held
	// or an idle client a moment later.
	soon := false
	for c, st := range s.conns {
		if st.cut || st.phase == phaseHeld {
			continue
		}
		if st.phase == phaseGreeting || st.phase != phaseStalled && pending(c) {
			// A hello or a request is on its way, not silence.
			soon = true
			continue
		}
		pick := &hello
		if st.phase != phaseHello {
			pick = &idle
		}
		pick.any = true
		if left := st.since.Add(s.cfg.HelloGrace).Sub(now); left > 0 {
			if pick.wake == 0 || left < pick.wake {
				pick.wake = left
			}
			continue
		}
		if pick.st == nil || st.since.Before(pick.st.since) {
			pick.victim, pick.st = c, st
		}
	}
	switch {
	case idle.victim != nil:
		return idle.victim, idle.st, 0
	case idle.any:
		return nil, nil, idle.wake
	case soon:
		// Look again in a moment rather than take a hello's place.
		return nil, nil, s.cfg.HelloGrace
	}
	return hello.victim, hello.st, hello.wake
}

// queued is the byte count the socket ioctl req (SIOCINQ, SIOCOUTQ)
// gives for c; false when it cannot be had.
func queued(c net.Conn, req uint) (int, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	n, qerr := 0, error(nil)
	if cerr := rc.Control(func(fd uintptr) { n, qerr = unix.IoctlGetInt(int(fd), req) }); cerr != nil {
		return 0, false
	}
	return n, qerr == nil
}

// mark records c's phase; a connection that may now be dropped may let a
// waiting newcomer in. A cut connection whose read brought a line before
// its deadline passed is taken back as it is held: its peer spoke and is
// served, and its deadline is cleared for whatever reads next to set.
func (s *Server) mark(c net.Conn, phase connPhase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.conns[c]
	if !ok {
		return
	}
	if st.cut && phase >= phaseGreeting {
		st.cut = false
		s.cut--
		_ = c.SetReadDeadline(time.Time{})
	}
	if st.phase == phase {
		return
	}
	st.phase, st.since = phase, time.Now()
	if phase < phaseGreeting {
		s.room.Broadcast()
	}
}

// wasCut reports whether err is the end of a read on c cut to make room.
func (s *Server) wasCut(c net.Conn, err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.conns[c]
	return ok && st.cut
}

// arm sets c's read deadline for its next read, unless c was cut meanwhile:
// a cut's deadline has passed and stays so.
func (s *Server) arm(c net.Conn, deadline time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.conns[c]; ok && st.cut {
		return
	}
	_ = c.SetReadDeadline(deadline)
}

// pending reports whether c has bytes the server has not read yet.
func pending(c net.Conn) bool {
	n, ok := queued(c, unix.SIOCINQ)
	return ok && n > 0
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	if st, ok := s.conns[c]; ok && st.cut {
		s.cut--
	}
	delete(s.conns, c)
	s.room.Broadcast()
	s.mu.Unlock()
	_ = c.Close()
}

// PeerCred returns the credentials the kernel recorded when the peer
// connected; they cannot be forged by the peer.
func PeerCred(c *net.UnixConn) (*unix.Ucred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

// serve owns one connection, from the peer check to its close.
func (s *Server) serve(c *net.UnixConn) {
	defer s.untrack(c)
	cred, err := PeerCred(c)
	if err != nil {
		s.cfg.Logf("control: rejected a connection: cannot read peer credentials: %v", err)
		return
	}
	if int(cred.Uid) != *s.cfg.peerUID {
		s.cfg.Logf("control: rejected a connection from uid %d (pid %d): only uid %d may connect", cred.Uid, cred.Pid, *s.cfg.peerUID)
		return
	}
	// The hello deadline was set by track.
	hr := &helloReader{s: s, c: c}
	r := bufio.NewReaderSize(hr, MaxLine)
	hello, err := s.readMessage(c, r, cred.Pid)
	if err != nil {
		return
	}
	if s.cfg.helloRead != nil {
		s.cfg.helloRead(hello)
	}
	// It spoke: no longer a silent one to drop. It stays greeting (or
	// is held) until its answer is ready and reply marks it idle.
	s.mark(c, phaseGreeting)
	if hello.Type != TypeHello || hello.Token == "" {
		s.cfg.Logf("control: rejected pid %d: first line is %q, not a hello", cred.Pid, hello.Type)
		return
	}
	if subtle.ConstantTimeCompare([]byte(hello.Token), []byte(s.cfg.Token)) != 1 {
		s.cfg.Logf("control: rejected pid %d: wrong token", cred.Pid)
		s.answerClient(c, Message{Type: TypeError, Error: "wrong token"})
		return
	}
	if hello.Role == RoleOwner {
		s.mark(c, phaseHeld)
		s.serveOwner(c, r, hello, cred)
		return
	}
	probe := hello.Role == RoleProbe
	if probe || hello.Handoff {
		s.mark(c, phaseHeld)
	}
	if hello.Version > ProtocolVersion {
		// A newer build changed the protocol so that this one would
		// misread it: refused in words (an owner link has its own).
		s.cfg.Logf("control: refused pid %d: protocol version %d, this wrapper speaks %d (%s)", cred.Pid, hello.Version, ProtocolVersion, Clip(hello.HerdrPi))
		s.answerClient(c, Message{Type: TypeError, Error: printableLong(fmt.Sprintf("protocol version %d is newer than this wrapper's %d; %s",
			hello.Version, ProtocolVersion, s.skewWords(hello.HerdrPi)))})
		return
	}
	// asking: a client that said it will ask for a handoff, until it has
	// asked. It keeps its place meanwhile, held, as its handoff will: cut
	// as an idle client while off its core between our hello and its ask
	// (a moment on a loaded machine, on a socket crowded by a flood), it
	// would lose the handoff, which, unlike status, is not asked again.
	// IdleTimeout still bounds its silence.
	asking := !probe && hello.Handoff
	// reply answers the peer. A client is idle from the moment its answer
	// is ready, not from when the goroutine gets round to marking it after
	// the write: by the time a client reads its answer it already counts as
	// idle, so "the longest idle" follows the order clients were served.
	reply := func(m Message) bool {
		if !probe && !asking {
			s.mark(c, phaseIdle)
		}
		return s.answerClient(c, m)
	}
	if !reply(Message{Type: TypeHello, OK: true, Version: ProtocolVersion, HerdrPi: s.build()}) {
		return
	}
	if probe {
		s.mark(c, phaseHeld)
		s.mu.Lock()
		s.probes++
		s.probeConns++
		conn := s.probeConns
		s.mu.Unlock()
		s.deliverEvent(ProbeConnected{PID: int(cred.Pid), Conn: conn, Dialogs: hello.Dialogs})
		defer func() {
			s.mu.Lock()
			s.probes--
			s.mu.Unlock()
			s.deliverEvent(ProbeDisconnected{PID: int(cred.Pid), Conn: conn})
		}()
	}
	for {
		// A probe lives as long as Pi and may be quiet for hours; a
		// client that goes quiet is stuck.
		deadline := time.Time{}
		if !probe {
			deadline = time.Now().Add(s.cfg.IdleTimeout)
			if !asking {
				s.mark(c, phaseIdle)
			}
		}
		s.arm(c, deadline)
		if !s.awaitReader(c, deadline, cred.Pid) {
			return
		}
		m, err := s.readMessage(c, r, cred.Pid)
		asking = false
		if ut := (*unknownTypeError)(nil); errors.As(err, &ut) {
			// A newer command's message: it hears why before the hang-up.
			s.answerClient(c, Message{Type: TypeError, Error: printableLong(fmt.Sprintf("%v; %s", err, s.skewWords(hello.HerdrPi)))})
			return
		}
		if err != nil {
			return
		}
		if !probe {
			s.mark(c, phaseHeld)
		}
		switch m.Type {
		case TypeEvent:
			ev, err := ParseEvent(m.Name, m.Data)
			if err != nil {
				s.cfg.Logf("control: pid %d: event dropped: %v", cred.Pid, err)
				continue
			}
			s.deliverProbeEvent(ev, cred.Pid, m.Seq)
		case TypeRequest:
			if m.Method == MethodHandoff && !probe {
				// One stream per connection: it ends with the handback.
				answered, ok := s.streamStarts()
				if !ok {
					return
				}
				defer s.streamEnds(answered)
				s.streamHandoff(c, func() (Message, error) { return s.readStreamed(r, cred.Pid) }, m, hello.HerdrPi)
				return
			}
			if !reply(s.answer(m, int(cred.Pid), hello.HerdrPi)) {
				return
			}
		default:
			s.cfg.Logf("control: pid %d: unexpected %q message; closing", cred.Pid, m.Type)
			return
		}
	}
}

// helloReader is a connection's reader until its first line has come in
// whole: it looks at the bytes waiting (MSG_PEEK) before it takes them,
// and marks the connection greeting while they are still in the kernel's
// queue. Taken first, a hello read but not yet marked would look, to a
// newcomer's silentest, like silence (no words waiting, still in
// phaseHello); with every other place in that state, a flood of clients
// whose hellos were being read got a slow probe's place (it had been
// silent longest). From the first line on, it only reads.
type helloReader struct {
	s    *Server
	c    *net.UnixConn
	seen bool // the first line has come in whole
}

func (h *helloReader) Read(p []byte) (int, error) {
	if !h.seen && len(p) > 0 {
		if line, err := h.peek(p); err != nil {
			return 0, err
		} else if line {
			h.seen = true
			h.s.mark(h.c, phaseGreeting)
		}
	}
	return h.c.Read(p)
}

// peek waits, within the read deadline, for bytes (or the end) and says
// whether a whole line is among those waiting; it copies them into p
// without taking them.
func (h *helloReader) peek(p []byte) (line bool, err error) {
	rc, err := h.c.SyscallConn()
	if err != nil {
		return false, nil // the read says what is wrong
	}
	rerr := rc.Read(func(fd uintptr) bool {
		for {
			n, _, err := unix.Recvfrom(int(fd), p, unix.MSG_PEEK|unix.MSG_DONTWAIT)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false
			case err == nil && n > 0:
				line = bytes.IndexByte(p[:n], '\n') >= 0
			}
			return true // the end or an error: the read says which
		}
	})
	if rerr != nil {
		return false, rerr // the deadline (a cut), or the connection closed
	}
	return line, nil
}

// readMessage reads and decodes one line from c. Any failure is logged
// (except a plain close, and the end of a connection cut to make room,
// which track logs once for a flood) and ends the connection.
func (s *Server) readMessage(c net.Conn, r *bufio.Reader, pid int32) (Message, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.cfg.Logf("control: pid %d: line longer than %d bytes; closing", pid, MaxLine)
		return Message{}, ErrLineTooLong
	}
	if err != nil {
		if (len(line) > 0 || !isEOF(err)) && !s.wasCut(c, err) {
			s.cfg.Logf("control: pid %d: read: %v", pid, err)
		}
		return Message{}, err
	}
	m, err := Decode(line)
	if err != nil {
		s.cfg.Logf("control: pid %d: bad line (%v); closing", pid, err)
		return Message{}, err
	}
	return m, nil
}

// readStreamed is readMessage for a handoff stream's watcher, whose read
// ends by a deadline the server sets itself: that end is not logged.
func (s *Server) readStreamed(r *bufio.Reader, pid int32) (Message, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			s.cfg.Logf("control: pid %d: line longer than %d bytes during a handoff; cancelling it", pid, MaxLine)
		}
		return Message{}, err
	}
	m, err := Decode(line)
	if err != nil {
		s.cfg.Logf("control: pid %d: bad line during a handoff (%v); cancelling it", pid, err)
	}
	return m, err
}

// isEOF is true for the ways a peer ends a connection: a plain close, or
// a reset when it exits with our last reply unread.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET)
}

// write writes m to a peer that reads as it goes (a handoff's asker, an
// owner link), waiting up to 5 s for room.
func (s *Server) write(c net.Conn, m Message) bool {
	b, err := Encode(m)
	if err != nil {
		s.cfg.Logf("control: encode reply: %v", err)
		return false
	}
	return writeWithin(c, b)
}

// writeWithin writes b, waiting up to 5 s for room.
func writeWithin(c net.Conn, b []byte) bool {
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	defer c.SetWriteDeadline(time.Time{})
	_, err := c.Write(b)
	return err == nil
}

// answerClient writes m to a client of serve (a hello's answer, a
// request's, a refusal): false when the connection is to end.
//
// The answer goes in whole at once: awaitReader took the request only
// with few earlier answers unread, and a socket takes far more than one
// answer beside them. Only one larger than the room left (a socket buffer
// made small by the system) waits for the client to read. While none of
// it has gone in, it waits through await: a client between requests
// counts as idle meanwhile (its place may go to a newcomer; it is closed
// after IdleTimeout), anyone else is waited on up to 5 s. Once part of it
// is in the client's socket, the rest follows within 5 s whatever
// happens to the client's place: cut there, the client would read half a
// line and then the hang-up (a short answer goes in whole or not at all,
// so only a long one is ever split).
func (s *Server) answerClient(c net.Conn, m Message) bool {
	b, err := Encode(m)
	if err != nil {
		s.cfg.Logf("control: encode reply: %v", err)
		return false
	}
	n, err := writeNow(c, b)
	if err != nil {
		return false
	}
	if n == 0 {
		wait := 5 * time.Second
		s.mu.Lock()
		if st, ok := s.conns[c]; ok && st.phase == phaseIdle {
			wait = s.cfg.IdleTimeout
		}
		s.mu.Unlock()
		var werr error
		_ = s.await(c, time.Now().Add(wait), func(fd uintptr) bool {
			n, werr = writeFD(fd, b)
			return werr != nil || n > 0
		})
		// Once part of the line is out, the wait's end does not count: a
		// cut that came just after it (await's errConnCut) still lets the
		// rest follow.
		if werr != nil || n == 0 {
			return false
		}
	}
	if n == len(b) {
		return true
	}
	// A cut of the client while this waits only ends its reading (a
	// client that is not stalled keeps its write deadline): the
	// connection ends at its next read, after the whole line.
	return writeWithin(c, b[n:])
}

// awaitReader holds back c's next request while maxUnread of our answers
// or more wait unread in its socket, until its client reads them (or the
// deadline passes): false when the connection is to end.
//
// A client may write its requests before it reads any answer (a script
// piping a batch through socat): it gets them all, in order, as it reads.
// One that never reads costs the answers that fill maxUnread and no more,
// and holds nothing meanwhile: it is an idle client, not one about to
// speak (the requests it wrote wait unread), so its place goes to a
// newcomer as an idle one's does. Such clients were closed at maxUnread,
// which cut a pipelining client off after a few answers; waiting on them
// instead, as the server once did, kept status behind 320 of them past
// its 5 s.
func (s *Server) awaitReader(c net.Conn, deadline time.Time, pid int32) bool {
	if unread, ok := queued(c, unix.SIOCOUTQ); !ok || unread < maxUnread {
		return true
	}
	err := s.await(c, deadline, func(fd uintptr) bool {
		unread, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		return err != nil || unread < maxUnread
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.cfg.Logf("control: pid %d: closed a client that left its answers unread past the idle limit (%v)", pid, s.cfg.IdleTimeout)
	}
	return err == nil
}

// await waits until ready, run on c's descriptor whenever the kernel
// says the socket has room, says so; or until deadline (zero: none), or a
// cut. A client idle until now is stalled meanwhile: its place may go to
// a newcomer, as an idle one's may. The error is the wait's; errConnCut
// when c was cut to make room.
//
// No timer looks again: Linux wakes a unix socket's writers each time
// its peer reads while under a quarter of the send buffer is in use (52
// KiB by default, far above maxUnread), so ready runs as the client
// reads. With a buffer made smaller the wake comes later, once the
// client has read more (all of it at the latest), never not at all.
func (s *Server) await(c net.Conn, deadline time.Time, ready func(fd uintptr) bool) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errors.New("not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	s.mu.Lock()
	st, ok := s.conns[c]
	if !ok || st.cut {
		s.mu.Unlock()
		return errConnCut
	}
	if st.phase == phaseIdle {
		// Still idle since its last answer: since stays.
		st.phase = phaseStalled
		s.room.Broadcast()
	}
	_ = c.SetWriteDeadline(deadline)
	s.mu.Unlock()

	err = rc.Write(ready)

	s.mu.Lock()
	defer s.mu.Unlock()
	if st.phase == phaseStalled {
		st.phase = phaseIdle
	}
	if st.cut {
		return errConnCut
	}
	_ = c.SetWriteDeadline(time.Time{})
	return err
}

// errConnCut ends a wait of a connection cut to make room.
var errConnCut = errors.New("cut to make room")

// maxUnread is how much of our answers may wait unread in a client's
// socket before the server reads its next request (SIOCOUTQ counts what
// the kernel holds for them: a short status answer weighs about 1.3 KiB).
// A client that reads as it goes leaves at most one there; one that
// writes a batch first gets its answers in turns of this much as it
// reads. Each answer more that a client which never reads asks for is
// work the wrapper does for nobody (filling the socket's 208 KiB took
// some 170 answers a client: 300 such clients kept status waiting 3.8 s,
// 11 s under the race detector).
const maxUnread = 8 << 10

// writeNow writes what of b c's socket takes at once, and no more: it
// never waits for the peer to read.
func writeNow(c net.Conn, b []byte) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, errors.New("not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	n, werr := 0, error(nil)
	// Returning true keeps Go's poller from waiting for room.
	if err := rc.Write(func(fd uintptr) bool {
		n, werr = writeFD(fd, b)
		return true
	}); err != nil {
		return n, err
	}
	return n, werr
}

// writeFD writes what of b the socket fd takes now: n bytes, with no
// error when it is merely full.
//
// The descriptor is non-blocking (Go's net), so a full socket says
// EAGAIN. syscall.Write, as net's own writes: under the race detector
// what a reader does after reading our answer then follows what we did
// before writing it (x/sys/unix's Write marks another hand-off).
func writeFD(fd uintptr, b []byte) (n int, err error) {
	for n < len(b) {
		k, err := syscall.Write(int(fd), b[n:])
		if k > 0 {
			n += k
		}
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return n, nil
		case err != nil:
			return n, err
		case k == 0:
			return n, io.ErrShortWrite // never from a socket; no endless loop if it were
		}
	}
	return n, nil
}

// answer answers one request of the peer peerPID (as this process sees
// pids).
func (s *Server) answer(m Message, peerPID int, peerBuild string) Message {
	reply := Message{Type: TypeResponse, ID: m.ID}
	// The refusal is for whoever asked (a person at `herdr-pi waiting`, a
	// script): whole, within the protocol's bound, and printable.
	fail := func(err error) Message {
		reply.Error = printableLong(err.Error())
		return reply
	}
	var result any
	switch m.Method {
	case MethodStatus:
		var st Status
		s.call(func() { st = s.cfg.Requests.Status() })
		s.mu.Lock()
		st.ProbeConnected = s.probes > 0
		s.mu.Unlock()
		st.WrapperPID = os.Getpid()
		st.Build = s.build()
		st.Goroutines = runtime.NumGoroutine()
		st.HeapLiveKiB = heapLiveKiB()
		result = st
	case MethodWaiting:
		var w WaitRequest
		if err := json.Unmarshal(m.Params, &w); err != nil {
			return fail(fmt.Errorf("waiting: bad parameters: %v", err))
		}
		w, err := w.Normalize()
		if err != nil {
			return fail(fmt.Errorf("waiting: %w", err))
		}
		if err := s.wait(w, peerPID); err != nil {
			return fail(err)
		}
		result = struct{}{}
	default:
		return fail(fmt.Errorf(unknownMethod+"%q; %s", Clip(m.Method), s.skewWords(peerBuild)))
	}
	b, err := json.Marshal(result)
	if err != nil {
		return fail(err)
	}
	reply.OK, reply.Result = true, b
	return reply
}

// wait carries out a normalized waiting request: a start with a pid pins
// that process first (a pid that cannot hold the wait refuses the start),
// and the wait's holder changes with the request, in the same delivery as
// the request itself, so a holder's exit never closes a wait a later
// request reopened.
func (s *Server) wait(w WaitRequest, peerPID int) error {
	var h *holder
	if w.Action == WaitStart && w.PID > 0 {
		if w.CallerPID != 0 && w.CallerPID != peerPID {
			// The caller's pids are not ours: its --pid would name
			// another process here.
			return fmt.Errorf("waiting: --pid %d: the wrapper runs in another pid namespace, where that pid is another process: "+
				"leave --pid out and stop the wait from a trap instead, e.g. trap 'herdr-pi waiting stop --source %s --id %s' EXIT",
				w.PID, plainWord(w.Source, "SOURCE"), plainWord(w.ID, "ID"))
		}
		var err error
		if h, err = pinHolder(w, *s.cfg.peerUID); err != nil {
			return fmt.Errorf("waiting: %w", err)
		}
	}
	key := w.Key()
	var err error
	s.call(func() {
		if err = s.hold(key, h); err != nil {
			h.release()
			err = fmt.Errorf("waiting: %w", err)
			return
		}
		if err = s.cfg.Requests.Wait(w); err != nil && h != nil {
			s.letGo(key, h)
		}
	})
	return err
}

// plainWord is s when it can stand in a shell command line quoted in
// single quotes as it is, else the placeholder: an example to copy must
// not break on a quote in a caller's id.
func plainWord(s, placeholder string) string {
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '.' || r == ':' || r == '/' || r == '@' || r == '+' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return placeholder
		}
	}
	return s
}

func (s *Server) deliverEvent(ev Event) {
	s.call(func() { s.cfg.Events.ProbeEvent(ev) })
}

// deliverProbeEvent delivers an event a probe sent, a numbered channel
// event only once. The probe keeps each channel event until a connection
// whose answer it heard has carried it, and writes the kept ones again on
// its next connection; but a connection can fail after the server read
// what it carried and before the probe heard the answer, and a repeat
// handled again would count twice (a herdr:blocked would keep the pane
// blocked after its one close). A probe numbers its channel events in the
// order it sends them, per Pi process (pid, from the kernel): one numbered
// at or below the last delivered from that process was delivered already,
// or is older than one that was. An event without a number (a probe
// before the numbers) is delivered as it comes. A session_start other than
// a resync (reason reconnect) begins the count afresh: the probe forgets
// what it kept then, so nothing from before is written again, and a new
// Pi that got an old one's pid counts from 1.
func (s *Server) deliverProbeEvent(ev Event, pid int32, seq int64) {
	s.call(func() {
		if st, ok := ev.(SessionStart); ok && st.Reason != ReasonReconnect {
			s.channelSeq = 0
		}
		if seq > 0 {
			if pid == s.channelPID && seq <= s.channelSeq {
				s.cfg.Logf("control: pid %d: channel event %d (%s) was delivered already; its repeat is dropped", pid, seq, ev.EventName())
				return
			}
			s.channelPID, s.channelSeq = pid, seq
		}
		s.cfg.Events.ProbeEvent(ev)
	})
}

// call runs one consumer call under the delivery lock, released by a
// defer. A panic in the consumer costs that call, not the connection or
// the server.
func (s *Server) call(f func()) {
	s.deliver.Lock()
	defer s.deliver.Unlock()
	guard.Run(s.cfg.Logf, "control: a consumer", "this call is lost; the server goes on", f)
}

// heapLiveKiB reads the live heap as of the last GC (runtime/metrics: no
// stop-the-world, unlike runtime.ReadMemStats).
func heapLiveKiB() int64 {
	m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(m[0].Value.Uint64() / 1024)
}
