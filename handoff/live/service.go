package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/guard"
	"github.com/herdr-pi/herdr-pi/internal/shellword"
)

// Owner is the owner link as a handoff uses it; *control.OwnerLink is one.
type Owner interface {
	PID() int
	Done() <-chan struct{}
	Handoff(ctx context.Context, order control.HandoffOrder) (control.Launch, error)
	CallTool(ctx context.Context, handoffID string, call control.ToolCall, update func(json.RawMessage)) (json.RawMessage, error)
	PaneState(id, state string) error
	Handback(ctx context.Context, id string, hb control.Handback) (control.Resumed, error)
	Refuse(requestID string, err error) error
}

// Config is what a wrapper's Service needs.
type Config struct {
	// Self is herdr-pi's own executable: the pane runs the attempt under
	// its wrap.
	Self string
	// RunBase is where private run directories go (control.SocketBase of
	// the runtime directory, short enough for sockets): each handoff
	// writes its launch files, command file and tool bridge socket into
	// one of its own, removed when it ends.
	RunBase string
	// RuntimeBase is where the pane's wrapper registers (its pane
	// registry); PaneEnv goes into the pane's command so it registers
	// there (XDG_RUNTIME_DIR), after the launch's own environment.
	RuntimeBase string
	PaneEnv     []string
	// HerdrSocket and OwnerPane are the wrapper's own Herdr pane ("" when
	// the wrapper does not run in Herdr: then only `open` can ask, and its
	// pane is used).
	HerdrSocket string
	OwnerPane   string
	// Herdr returns a client for a Herdr socket (default: Client).
	Herdr func(socket string) Herdr
	// Ledger records what is opened, for `herdr-pi close`.
	Ledger handoff.Ledger
	// Place is where a handoff asked with no place goes: a split, or the
	// run's workspace in the engine's fully inspectable mode. It is asked
	// at each handoff, before the owner is, since the person may change
	// the engine's settings while the owner runs; its error (a settings
	// file that cannot say) refuses the handoff. nil is always a split.
	Place func() (handoff.Mode, error)
	// Inspect opens a settled attempt for inspection (the menu's "Open
	// session in Herdr pane"); nil refuses it.
	Inspect func(ctx context.Context, req control.InspectRequest) error
	// StartTimeout bounds how long a pane may take to start Pi (default
	// 60s); HandbackTimeout how long the owner may take to resume its
	// session (default 60s).
	StartTimeout, HandbackTimeout time.Duration
	Logf                          func(format string, args ...any)
}

// Service is a wrapper's live handoffs: it implements control.OwnerSink
// (menu requests, cancellations, the owner's going away) and
// control.Handoffs (`herdr-pi open`). It owns one goroutine per handoff
// and per inspection; Close ends them and waits.
type Service struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelCauseFunc

	placing sync.Mutex // held while a pane is placed

	mu      sync.Mutex
	link    Owner
	running map[string]*run // by session id
	// spaces are the workspaces of fully inspectable runs, by run id: a
	// run's turns open their tabs there, and the workspace is closed when
	// the run ends, its owner goes, or the wrapper quits.
	spaces map[string]*space
	next   int
	wg     sync.WaitGroup
	// runDir is the wrapper's own run directory (SetRunDir), "" until
	// it is known.
	runDir string
}

// space is the workspace of a fully inspectable run.
type space struct {
	run         string
	socket      string
	workspaceID string
	link        Owner
	record      handoff.Record // its ledger record (zero when writing it failed)
}

// New returns a Service with nothing running.
func New(cfg Config) *Service {
	if cfg.Herdr == nil {
		cfg.Herdr = func(socket string) Herdr { return Client{herdr.NewClient(socket)} }
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.HandbackTimeout <= 0 {
		cfg.HandbackTimeout = 60 * time.Second
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Service{cfg: cfg, ctx: ctx, cancel: cancel, running: map[string]*run{}, spaces: map[string]*space{}}
}

// ErrClosing is the cause of every handoff's end when the wrapper quits.
var ErrClosing = errors.New("the owner's herdr-pi wrap is quitting")

// errPanicked is what a handoff or an inspection that panicked in the
// owner's wrapper answers (the panic and its stack are in that log).
var errPanicked = errors.New("it failed inside the owner's herdr-pi wrap (a bug; the panic is in the wrapper's log)")

// Close gives every handoff back (closing its pane), waits for them, and
// closes the workspaces of fully inspectable runs. Safe to call more than
// once.
func (s *Service) Close() {
	// Under mu: every goroutine is added under mu after checking ctx, so
	// none is added once Wait may run.
	s.mu.Lock()
	s.cancel(ErrClosing)
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	left := make([]*space, 0, len(s.spaces))
	for id, sp := range s.spaces {
		left = append(left, sp)
		delete(s.spaces, id)
	}
	s.mu.Unlock()
	for _, sp := range left {
		s.closeSpace(sp)
	}
}

// SetRunDir names the wrapper's own private run directory (control.Run's
// Dir), whose lock the wrapper holds until it exits: a pending handoff
// shows by it that its wrapper runs (see notePending). The wrapper starts
// its control run after the Service (the run needs it) and closes it after
// Close, so the lock outlives every handoff.
func (s *Service) SetRunDir(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runDir = dir
}

// OwnerEvent implements control.OwnerSink. It returns at once: anything
// that waits runs on a goroutine of the Service.
func (s *Service) OwnerEvent(l *control.OwnerLink, m control.OwnerMessage) { s.ownerEvent(l, m) }

func (s *Service) ownerEvent(l Owner, m control.OwnerMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m := m.(type) {
	case control.OwnerConnected:
		s.link = l
	case control.OwnerDisconnected:
		if s.link == l {
			s.link = nil
		}
		// Every handoff of that owner is over: their panes close. (Each
		// run also watches its link's Done.) So are its fully inspectable
		// runs: their workspaces close.
		for _, r := range s.running {
			if r.link == l {
				r.cancel(control.ErrOwnerGone)
			}
		}
		for id, sp := range s.spaces {
			if sp.link == l {
				s.endSpaceLocked(id, control.ErrOwnerGone)
			}
		}
	case control.RunEnded:
		if sp := s.spaces[m.RunID]; sp != nil && sp.link == l {
			s.endSpaceLocked(m.RunID, fmt.Errorf("workflow run %s ended (%s)", m.RunID, m.State))
		}
	case control.EngineStatus:
		// Its fully inspectable mode is the settings at the owner's
		// start: a handoff reads them anew (Config.Place).
	case control.HandoffRequest:
		s.requestLocked(l, m, "", nil)
	case control.InspectRequest:
		if s.ctx.Err() != nil {
			_ = l.Refuse(m.ID, ErrClosing)
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			err := errors.New("this wrapper cannot open inspections")
			// The owner's menu waits for an answer: a panic opening the
			// inspection is one, not silence (nor the wrapper's end).
			if s.cfg.Inspect != nil && guard.Run(s.cfg.Logf, "live: an inspection from the menu", "it is refused; the wrapper goes on", func() { err = s.cfg.Inspect(s.ctx, m) }) {
				err = errPanicked
			}
			if err != nil {
				s.cfg.Logf("live: inspection of run %s, session %s: %v", m.RunID, m.SessionID, err)
				_ = l.Refuse(m.ID, err)
			}
		}()
	case control.HandoffCancel:
		for _, r := range s.running {
			if r.id == m.ID && r.link == l {
				r.cancel(&control.HandoffCancelled{Reason: m.Reason, SessionEnding: m.SessionEnding})
			}
		}
	}
}

// requestLocked answers the owner's request for a handoff (its menu's, or
// a turn's in fully inspectable mode). id and note belong to a request
// that waited for the attempt's last handoff (waitLocked): its handoff id,
// reserved, and its pending note, which the handoff takes over when it
// starts, or which is forgotten here when it does not.
func (s *Service) requestLocked(l Owner, m control.HandoffRequest, id string, note *pendingNote) {
	if s.ctx.Err() != nil {
		note.forget()
		_ = l.Refuse(m.ID, ErrClosing)
		return
	}
	if old, busy := s.running[m.SessionID]; busy {
		if m.Turn || old.isEnding() {
			// The attempt's previous turn (or handoff) is still being
			// handed back: this one starts when that is over.
			s.waitLocked(l, m, old, id, note)
			return
		}
		note.forget()
		// One launch per attempt: nothing new starts, but the person who
		// chose the action hears where the attempt is.
		_ = l.Refuse(m.ID, old.underWay())
		return
	}
	ask := control.HandoffAsk{}
	if m.Turn {
		ask.Place = string(handoff.ModeWorkspace)
	}
	opts, err := s.optionsLocked(ask)
	if err != nil {
		note.forget()
		_ = l.Refuse(m.ID, err)
		return
	}
	opts.turn = m.Turn
	s.startLocked(l, control.HandoffOrder{RunID: m.RunID, SessionID: m.SessionID, Request: m.ID, ID: id}, m.Label, opts, note)
}

// waitLocked holds the owner's request m until old, the attempt's last
// handoff, is over, then answers it anew. A menu's request waits in the
// ledger as a pending handoff (its id reserved now), so that `herdr-pi
// close` meanwhile finds it and gives it up: the request is refused and
// nothing opens once old is back. A turn's request (fully inspectable
// mode) does not: refused, the turn would be asked for again at once, and
// the mode opens each prompt's tab whatever close closed before
// (docs/inspectable.md).
func (s *Service) waitLocked(l Owner, m control.HandoffRequest, old *run, id string, note *pendingNote) {
	if !m.Turn && id == "" {
		s.next++
		id = fmt.Sprintf("h%d", s.next)
	}
	guard.Go(&s.wg, s.cfg.Logf, "live: a request waiting for the attempt's last handoff", "this request is not handed off; the owner may ask again", func() {
		if note == nil && !m.Turn {
			note = s.notePending(m.RunID, id)
		}
		select {
		case <-old.done:
			if !note.isGivenUp() {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.requestLocked(l, m, id, note)
				return
			}
			// Given up just as old ended: close it is.
			_ = l.Refuse(m.ID, ErrGivenUpByClose)
			note.forget()
		case <-note.givenUp():
			// Refused first: by the time close sees the entry gone, the
			// owner has heard.
			_ = l.Refuse(m.ID, ErrGivenUpByClose)
			note.forget()
		case <-s.ctx.Done():
			note.forget()
			_ = l.Refuse(m.ID, ErrClosing)
		}
	})
}

// options is how one handoff places and watches its pane.
type options struct {
	hold   bool
	mode   handoff.Mode
	socket string // Herdr's socket
	pane   string // the pane to split, and whose workspace a tab joins
	// turn: a prompt of a fully inspectable attempt, which runs in a tab
	// of its run's workspace (the workspace is the run's, not the turn's).
	turn bool
}

func (s *Service) optionsLocked(ask control.HandoffAsk) (options, error) {
	o := options{hold: ask.Hold, mode: handoff.Mode(ask.Place), socket: s.cfg.HerdrSocket, pane: s.cfg.OwnerPane}
	if o.socket == "" {
		o.socket, o.pane = ask.HerdrSocket, ask.CallerPane
	}
	if o.socket == "" {
		return o, errors.New("neither the owner's herdr-pi wrap nor herdr-pi open runs inside a Herdr pane: there is no Herdr to open a pane in")
	}
	// The wrapper itself goes on from the kernel's copy of its binary, but
	// the pane is another process that needs the path.
	if err := handoff.CheckSelf(s.cfg.Self, "restart the owner's Pi under the herdr-pi installed now (quit it and run 'herdr-pi wrap pi' again)"); err != nil {
		return o, err
	}
	if o.mode == "" {
		o.mode = handoff.ModeSplit
		if s.cfg.Place != nil {
			m, err := s.cfg.Place()
			if err != nil {
				return o, err
			}
			o.mode = m
		}
	}
	return o, nil
}

// Handoff implements control.Handoffs: `herdr-pi open` asks for a handoff
// of a live attempt of this wrapper's owner and follows it to the
// handback. A second ask for an attempt under way shares its launch.
func (s *Service) Handoff(ctx context.Context, ask control.HandoffAsk, progress func(control.Progress)) (control.Progress, error) {
	return s.handoff(ctx, ask, progress, "", nil)
}

// handoff is Handoff; id and note belong to an ask that waited for the
// attempt's last handoff to be handed back: its handoff id, reserved, and
// its pending note, which the new handoff takes over (or which is
// forgotten when the ask ends otherwise).
func (s *Service) handoff(ctx context.Context, ask control.HandoffAsk, progress func(control.Progress), id string, note *pendingNote) (control.Progress, error) {
	handedOver := false
	defer func() {
		if !handedOver {
			note.forget()
		}
	}()
	s.mu.Lock()
	// Released by the defer only when a panic leaves it held (the control
	// server recovers a panic in Handoff): a Service left locked would
	// hang every later request and Close.
	locked := true
	unlock := func() { locked = false; s.mu.Unlock() }
	defer func() {
		if locked {
			s.mu.Unlock()
		}
	}()
	l := s.link
	switch {
	case s.ctx.Err() != nil:
		unlock()
		return control.Progress{}, ErrClosing
	case l == nil:
		unlock()
		return control.Progress{}, fmt.Errorf("this herdr-pi wrap has no workflow owner link: its Pi has not loaded the workflow engine with herdr-pi's probe, or the probe could not register with it (herdr-pi doctor says why); add --inspect to open a read-only fork instead")
	case l.PID() != ask.OwnerPID:
		unlock()
		return control.Progress{}, fmt.Errorf("this herdr-pi wrap's workflow owner is pid %d, not the run's owner pid %d", l.PID(), ask.OwnerPID)
	}
	if r := s.running[ask.SessionID]; r != nil {
		if at, ok := r.tab(); ok && r.opts.turn {
			// Fully inspectable mode: the attempt works in its tab, which
			// open focuses — unless it asks for what that tab is not.
			unlock()
			if err := r.cannotGive(ask); err != nil {
				return control.Progress{}, err
			}
			return s.focus(ctx, r, at)
		}
		if r.isEnding() {
			// Its pane is closing and the attempt on its way back: this
			// ask is a new handoff, once that one is over — not a
			// follower of one that ends without handing anything off.
			// Meanwhile it is in the ledger as pending, so that close
			// finds it and can give it up.
			if id == "" {
				s.next++
				id = fmt.Sprintf("h%d", s.next)
			}
			unlock()
			if note == nil {
				note = s.notePending(ask.RunID, id)
			}
			select {
			case <-r.done:
				if note.isGivenUp() {
					return control.Progress{}, givenUpWaiting(id, r.id)
				}
			case <-note.givenUp():
				return control.Progress{}, givenUpWaiting(id, r.id)
			case <-ctx.Done():
				return control.Progress{}, fmt.Errorf("stopped waiting for the attempt's last handoff (%s) to be handed back, after which a new one was to be asked for: nothing was handed off", r.id)
			}
			handedOver = true
			return s.handoff(ctx, ask, progress, id, note)
		}
		if err := r.cannotGive(ask); err != nil {
			unlock()
			return control.Progress{}, err
		}
		// Shared: this asker follows; leaving gives nothing up.
		unsubscribe := r.subscribe(progress)
		defer unsubscribe()
		unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			return control.Progress{}, r.leftFollowing()
		}
		return r.final, r.err
	}
	opts, err := s.optionsLocked(ask)
	if err != nil {
		unlock()
		return control.Progress{}, err
	}
	handedOver = true
	r := s.startLocked(l, control.HandoffOrder{RunID: ask.RunID, SessionID: ask.SessionID, ID: id}, "", opts, note, progress)
	r.askedBy = ask.Label
	unlock()
	// The asker going away gives the attempt back: the pane was its.
	stop := context.AfterFunc(ctx, func() { r.cancel(context.Cause(ctx)) })
	defer stop()
	<-r.done
	return r.final, r.err
}

// givenUpWaiting is what an open hears whose ask close gave up while it
// waited for the attempt's last handoff (last) to be handed back.
func givenUpWaiting(id, last string) error {
	return fmt.Errorf("herdr-pi close gave handoff %s up while it waited for the attempt's last handoff (%s) to be handed back: nothing was handed off", id, last)
}

// startLocked starts one handoff on its own goroutine. order.ID and note
// are a waiting ask's (see requestLocked); a handoff without an id gets
// the next one, and carry writes its note.
func (s *Service) startLocked(l Owner, order control.HandoffOrder, label string, opts options, note *pendingNote, subs ...func(control.Progress)) *run {
	if order.ID == "" {
		s.next++
		order.ID = fmt.Sprintf("h%d", s.next)
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	r := &run{id: order.ID, order: order, label: label, opts: opts, link: l, ctx: ctx, cancel: cancel, done: make(chan struct{}), pending: note}
	for _, f := range subs {
		r.subscribe(f)
	}
	s.running[order.SessionID] = r
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// The owner's going away ends the handoff even before the sink
		// hears of it.
		watched := make(chan struct{})
		go func() { // nothing in it can panic: a select and a cancel
			defer close(watched)
			select {
			case <-l.Done():
				r.cancel(control.ErrOwnerGone)
			case <-ctx.Done():
			}
		}()
		// carry's own defers close the pane and forget its records while
		// a panic unwinds; recovered here, the rest of this goroutine
		// still runs, so r.done closes and every asker hears the refusal
		// rather than waiting for ever.
		if guard.Run(s.cfg.Logf, "live: handoff "+r.id, "it is given back as failed; the wrapper goes on", func() { s.carry(r) }) {
			r.err = errPanicked
		}
		cancel(nil)
		<-watched
		if r.err != nil && order.Request != "" {
			// Asked from the menu: the owner shows why.
			_ = l.Refuse(order.Request, r.err)
		}
		s.mu.Lock()
		if s.running[order.SessionID] == r {
			delete(s.running, order.SessionID)
		}
		s.mu.Unlock()
		close(r.done)
	}()
	return r
}

// run is one handoff: its order, who follows it, and how it ended.
type run struct {
	id    string
	order control.HandoffOrder
	label string
	// askedBy names who asked first, when an open did ("herdr-pi open
	// (pid 42)"): its end gives the attempt back, a follower's does not.
	askedBy string
	opts    options
	link    Owner
	ctx     context.Context
	cancel  context.CancelCauseFunc

	mu      sync.Mutex
	placed  handoff.Placed // where its pane is, once placed
	subs    []func(control.Progress)
	history []control.Progress
	since   time.Time // when the latest change in history came
	done    chan struct{}
	// ending is set once the handoff's end is decided (its pane closing,
	// the handback under way): nobody joins it then.
	ending bool
	final  control.Progress // set before done closes
	err    error            // the order was refused: nothing was handed off

	// pending is the handoff in the ledger as ordered, until its pane is
	// (nil when its file could not be written). A request that waited for
	// the attempt's last handoff hands its note over when it starts;
	// otherwise carry writes it. From then on carry's goroutine alone
	// touches it.
	pending *pendingNote
}

// underWay is the answer to a menu's request for an attempt this handoff
// holds already: who asked for it and where its pane is, or that it is
// opening.
func (r *run) underWay() error {
	r.mu.Lock()
	pane := r.placed.PaneID
	r.mu.Unlock()
	by := ""
	if r.askedBy != "" {
		by = ", asked by " + r.askedBy
	}
	if pane == "" {
		return fmt.Errorf("a handoff of it is under way already (%s%s): its Herdr pane is opening", r.id, by)
	}
	return fmt.Errorf("it is handed off already (%s%s) and runs in Herdr pane %s: closing that pane hands it back", r.id, by, pane)
}

// cannotGive says why an ask that finds this handoff under way cannot
// follow it: it asks for what the handoff does not do (--hold, or another
// place), which following it would drop without a word — a pane the
// person meant to keep would close at the turn's end. nil when following
// gives the ask what it wants.
func (r *run) cannotGive(ask control.HandoffAsk) error {
	if r.opts.turn {
		return r.turnCannotGive(ask)
	}
	var differs, flags []string
	if ask.Hold && !r.opts.hold {
		differs = append(differs, "without --hold (its pane hands the attempt back when its turn ends)")
		flags = append(flags, "--hold")
	}
	if place := handoff.Mode(ask.Place); place != "" && place != r.opts.mode {
		differs = append(differs, fmt.Sprintf("placed as a %s, not a %s", r.opts.mode, place))
		flags = append(flags, "--"+ask.Place)
	}
	if len(differs) == 0 {
		return nil
	}
	r.mu.Lock()
	pane := r.placed.PaneID
	r.mu.Unlock()
	where, back := "its Herdr pane is opening", ""
	if pane != "" {
		where, back = "it runs in Herdr pane "+pane, " (closing that pane hands it back now)"
	}
	by := ""
	if r.askedBy != "" {
		by = ", asked by " + r.askedBy
	}
	f := strings.Join(flags, " ")
	return fmt.Errorf("it is handed off already (%s%s) %s; %s: this open cannot have %s; open it without %s to follow that handoff, or again with %s once it is back%s",
		r.id, by, strings.Join(differs, ", "), where, f, f, f, back)
}

// turnCannotGive is cannotGive for a turn of fully inspectable mode. The
// engine's mode decides where a turn runs, a tab of the run's workspace,
// and the tab closes when the turn ends, the next turn opening another:
// neither --hold nor another place can be had, now or at a later turn,
// so the way on is the tab as it is, or a read-only fork.
func (r *run) turnCannotGive(ask control.HandoffAsk) error {
	var differs, flags []string
	if ask.Hold {
		differs = append(differs, "the tab of each turn closes when the turn ends, the next turn opening another")
		flags = append(flags, "--hold")
	}
	if place := handoff.Mode(ask.Place); place != "" && place != handoff.ModeWorkspace {
		differs = append(differs, fmt.Sprintf("its turns run in tabs of the run's workspace, not in a %s", place))
		flags = append(flags, "--"+ask.Place)
	}
	if len(differs) == 0 {
		return nil
	}
	where, then := "its tab is opening", "follow the turn"
	if at, ok := r.tab(); ok {
		where, then = "it works in tab "+at.TabID, "focus that tab"
	}
	f := strings.Join(flags, " ")
	return fmt.Errorf("it runs in Herdr in the engine's fully inspectable mode (%s: %s): %s; this open cannot have %s: open it without %s to %s, or with --inspect instead, for a read-only fork of it",
		r.id, where, strings.Join(differs, "; "), f, f, then)
}

// tab is where the handoff's pane was placed, once it was.
func (r *run) tab() (handoff.Placed, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.placed, r.placed.TabID != ""
}

// end marks the handoff as ending: see run.ending.
func (r *run) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ending = true
}

func (r *run) isEnding() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ending
}

// leftFollowing is what a follower of the handoff (an ask that found it
// under way) hears when it leaves: nothing is given back, since the
// handoff is whoever asked first's, and it says so — where the attempt
// runs, and how to give it back anyway.
func (r *run) leftFollowing() error {
	who := r.askedWho()
	where := "no pane has opened yet"
	if at, ok := r.where(); ok {
		where = "pane " + at.PaneID + " runs the attempt"
	}
	return fmt.Errorf("stopped following handoff %s, which goes on for %s that asked for it first (%s); herdr-pi close %s gives the attempt back now",
		r.id, who, where, shellword.Word(r.order.RunID))
}

// askedWho names who asked for the handoff first.
func (r *run) askedWho() string {
	switch {
	case r.opts.turn:
		return "the engine's fully inspectable mode"
	case r.order.Request != "":
		return "the owner's /workflow menu"
	case r.askedBy != "":
		return r.askedBy
	}
	return "the herdr-pi open"
}

// where is the handoff's pane, once placed.
func (r *run) where() (handoff.Placed, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.placed, r.placed.PaneID != ""
}

// focus brings a turn's tab to the front for `herdr-pi open`.
func (s *Service) focus(ctx context.Context, r *run, at handoff.Placed) (control.Progress, error) {
	ctx, cancel := context.WithTimeout(ctx, handoff.CloseBudget)
	defer cancel()
	if _, err := s.cfg.Herdr(r.opts.socket).TabFocus(ctx, at.TabID); err != nil {
		return control.Progress{}, fmt.Errorf("%s runs in tab %s of its run's workspace (fully inspectable mode), which could not be focused: %w", r.label, at.TabID, err)
	}
	return r.stamp(control.Progress{Event: control.ProgressFocused, PaneID: at.PaneID, TabID: at.TabID, WorkspaceID: at.WorkspaceID}), nil
}

// subscribe adds a follower and returns what removes it. One that joins
// the handoff under way first hears where it stands (joinedLocked), then
// each change.
func (r *run) subscribe(f func(control.Progress)) (unsubscribe func()) {
	if f == nil {
		return func() {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.history) > 0 {
		f(r.joinedLocked())
	}
	id := len(r.subs)
	r.subs = append(r.subs, f)
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.subs[id] = nil
	}
}

// joinedLocked is where the handoff stands, for an ask that joins it: its
// latest change, with where its pane is and what it runs once launched,
// when that change came and who asked for the handoff. One line, not the
// history replayed: a follower's "handing off … at the end of its current
// turn" for an attempt long in its pane read as the handoff starting now.
func (r *run) joinedLocked() control.Progress {
	p := r.history[len(r.history)-1]
	for _, h := range r.history {
		if h.Event == control.ProgressLaunched {
			p.PaneID, p.TabID, p.WorkspaceID = h.PaneID, h.TabID, h.WorkspaceID
			p.Command, p.Env, p.Cwd, p.CommandOmitted = h.Command, h.Env, h.Cwd, h.CommandOmitted
			if p.AgentPID == 0 {
				p.AgentPID = h.AgentPID
			}
		}
	}
	p.Joined, p.Since, p.AskedBy = true, r.since, r.askedWho()
	return p
}

// stamp names the handoff in p.
func (r *run) stamp(p control.Progress) control.Progress {
	p.Handoff = r.id
	if p.RunID == "" {
		p.RunID = r.order.RunID
	}
	if p.Label == "" {
		p.Label = r.label
	}
	return p
}

// emit tells every follower of a change (the handback is not one: it is
// the answer, r.final).
func (r *run) emit(p control.Progress) {
	p = r.stamp(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history, r.since = append(r.history, p), time.Now()
	for _, f := range r.subs {
		if f != nil {
			f(p)
		}
	}
}
