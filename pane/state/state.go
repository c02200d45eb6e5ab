// Package state is herdr-pi's one state machine: every signal about the
// wrapped agent (screen verdicts, the probe's lifecycle events, open
// reasons to wait for the user) comes in here, and one honest state —
// idle, working or blocked — goes out, as transitions only.
//
// It never reads the screen, a socket or a file itself, and it never
// decides how a transition is reported; callers feed it and consume its
// events.
package state

import (
	"cmp"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// State is what the agent is doing, as reported.
type State string

// The reported states.
const (
	Idle    State = "idle"
	Working State = "working"
	Blocked State = "blocked"
	// Unknown is the state before anything is known (the startup grace),
	// and a screen verdict with no opinion; the machine never transitions
	// to it.
	Unknown State = "unknown"
)

// Kind says where a reason to wait for the user comes from.
type Kind string

// The kinds of reasons. Blocked is the OR of all open reasons, whatever
// their kind.
const (
	// KindSentinel: the last reply ended with the :input_needed: marker.
	// It closes by itself when the next agent run starts.
	KindSentinel Kind = "sentinel"
	// KindWait: a wait announced inside the agent, keyed "source:id"
	// (pi:waiting-for-user-input). Cleared with the session, as the
	// sentinel integration clears its runtime waits.
	KindWait Kind = "wait"
	// KindHook: a wait announced from outside the agent (herdr-pi waiting
	// start|stop, from a pane hook or a script). Nothing inside the agent
	// can close it, so it survives session starts and shutdowns; only its
	// own stop closes it.
	KindHook Kind = "hook"
	// KindHerdrBlocked: a balanced herdr:blocked from another extension.
	KindHerdrBlocked Kind = "herdr:blocked"
	// KindAsk: an open @eko24ive/pi-ask flow.
	KindAsk Kind = "pi-ask"
	// KindPermission: an open permissions:ui_prompt (by requestId).
	KindPermission Kind = "permission"
	// KindUIPrompt: one of Pi's own blocking UI prompts (ui_prompt_start).
	KindUIPrompt Kind = "ui_prompt"
	// KindScreen: a detection rule sees a blocking prompt on the screen.
	KindScreen Kind = "screen"
	// KindProgramStatus: the agent's own status channel (OSC 7501) says it
	// waits for the person: a dialog, a confirmation, a login.
	KindProgramStatus Kind = "program_status"
)

// SentinelMessage is the blocked message for the sentinel.
const SentinelMessage = "input needed"

// defaultBlockedMessage is used for a reason opened without a label.
const defaultBlockedMessage = "waiting for input"

// Reason is one open reason the agent waits for the user.
type Reason struct {
	// Key identifies the reason among the open ones; opening a key that is
	// open already changes nothing, but for a hook wait's label, which
	// the latest open decides (see Machine.Open).
	Key   string
	Kind  Kind
	Label string
	// Question is what the agent asks, as far as it is known: the line
	// of the reply that ended with the sentinel that asks (the probe picks
	// it), a pi-ask title, a permission label; for a hook wait or a
	// herdr:blocked, the label its opener gave (none: "").
	// Reports never carry it (Message does not use it); notifications may
	// show its first line.
	Question string `json:",omitempty"`
	// Entry is, for a sentinel read from the session file, the id of the
	// reply that asks: a sentinel opened again with another entry is
	// another question (see Machine.Open). "" when not known (the probe's).
	Entry string `json:",omitempty"`
	// Live says, for a sentinel read from the session file, that the agent
	// wrote the reply that asks while the file was watched (the file's own
	// time for it says so, session.Sentinel.Live): news, though nothing
	// else may have seen the run — without the probe and Pi's status
	// channel, a run quicker than the screen's debounce is never seen
	// working. False for a reply from the session's history.
	Live bool `json:",omitempty"`
	// Old says, for a sentinel read from the session file, that the file's
	// own time for the reply that asks is from before the file was watched
	// (session.Sentinel.Old): the session's history, told when it was
	// asked, whenever it shows again — a /tree back to it, say. Neither Old
	// nor Live when the reply has no time.
	Old bool `json:",omitempty"`
	// Restored is set by the machine for a reason that comes from the
	// history of a session rather than from something the agent did in this
	// one: restored by SessionStart, or a sentinel found before the agent
	// was seen working in the session — unless, while the probe is away,
	// the file says the reply was written live. The person has been told
	// already.
	Restored bool `json:",omitempty"`
	// Since is when it was opened (set by the machine).
	Since time.Time
	// order counts the reasons the machine opened, this one's place among
	// them: of two opened in the same instant, the first is older.
	order uint64
}

// Message is what the reason says when it opens the blocked state.
func (r Reason) Message() string {
	if r.Kind == KindSentinel {
		return SentinelMessage
	}
	if r.Label == "" {
		return defaultBlockedMessage
	}
	return r.Label
}

// Outcome is how an agent run ended.
type Outcome string

// Run outcomes (notifications-and-sentinel.md §7.2, agent run tracker).
const (
	Completed Outcome = "completed"
	Errored   Outcome = "error"
	Aborted   Outcome = "aborted"
)

// OutcomeOf classifies a stop reason: error and length are errors, aborted
// is aborted, anything else (unknown values too) completed.
func OutcomeOf(stopReason string) Outcome {
	switch stopReason {
	case "error", "length":
		return Errored
	case "aborted":
		return Aborted
	}
	return Completed
}

// EventKind tells transitions from finished runs.
type EventKind string

// Event kinds.
const (
	EventTransition  EventKind = "transition"
	EventRunFinished EventKind = "run_finished"
	// EventOpened and EventClosed say that one reason opened or closed,
	// whether or not the state changed with it (a second reason opening
	// while blocked changes nothing visible). A reason closed and reopened
	// in the same step — a reload restoring what it had — is neither.
	EventOpened EventKind = "reason_opened"
	EventClosed EventKind = "reason_closed"
	// EventRelabelled says the blocked state's message changed while it
	// stays blocked: the reason it is reported with took a new label (a
	// hook wait started again), or closed while others stay open and the
	// report moved to the oldest of them (Reason). The state is reported
	// again with the message; it is not news to notify.
	EventRelabelled EventKind = "relabelled"
	// EventAsked says that an open reason asks something else now: Pi
	// shows another dialog over the one the reason opened with, or the
	// sentinel stands for another reply that asks (Reason carries the new
	// question).
	EventAsked EventKind = "reason_asked"
)

// Event is one thing the machine tells its sink.
type Event struct {
	Kind EventKind `json:"kind"`
	At   time.Time `json:"at"`

	// Transition.
	From    State  `json:"from,omitempty"`
	To      State  `json:"to,omitempty"`
	Message string `json:"message,omitempty"`
	// Reason is the reason that opened the blocked state (To == Blocked),
	// or the reason an EventOpened or EventClosed is about.
	Reason *Reason `json:"reason,omitempty"`
	// Cause names the signal that decided it, e.g. "screen:busy_row",
	// "probe:agent_start", "open:wait:hook:1"; for a run finished, the
	// status channel's report that ended it ("program-status:done") when
	// the channel told it, "" when the probe did.
	Cause string `json:"cause,omitempty"`

	// Run finished.
	Outcome    Outcome `json:"outcome,omitempty"`
	StopReason string  `json:"stop_reason,omitempty"`
	// Error is what the agent said went wrong when the run's last reply
	// failed (Pi's error message, raw; "" when it said nothing). Traces
	// leave it out: it may echo a key or URL the provider was given, and
	// notify hides those before showing it (notify.ErrorLine).
	Error string `json:"-"`
	// Duration is how long the run took, from its agent start to its
	// settle.
	Duration time.Duration `json:"duration,omitempty"`
}

// Verdict is what detection says one screen shows.
type Verdict struct {
	State State
	// Rule is the winning rule's id, "" for a fallback.
	Rule string
	// Skip: the winning rule asks to keep the previous state.
	Skip bool
}

// Clock is the time source; tests run the machine in a synctest bubble or
// with a fake.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// RealClock is the system clock.
func RealClock() Clock { return realClock{} }

// Config sets up a Machine.
type Config struct {
	// Debounce is how long a screen verdict must hold before it is
	// reported, and how long the screen must stay unchanged before idle is.
	Debounce time.Duration
	// StartupGrace is how long after New screen verdicts are not reported
	// (the agent is idle meanwhile).
	StartupGrace time.Duration
	// ReplaceGrace bounds how long the reasons of a session that is being
	// replaced (SessionReplaced) wait for the next SessionStart before they
	// close anyway; DefaultReplaceGrace when zero.
	ReplaceGrace time.Duration
	// Output, when set, counts the bytes of output written to the
	// terminal so far (the tap's committed count), and ScreenSeen tells
	// how many of them the screen has looked at. A screen verdict that
	// comes due while the screen is behind waits for the screen to look
	// at what was written by then: what the screen showed may already be
	// overdrawn by bytes it has not taken (on a loaded machine its
	// goroutine can wait longer than the debounce for a core). Nil: a
	// verdict is confirmed when due.
	Output func() uint64
	// Clock defaults to RealClock.
	Clock Clock
	// Sink receives events in order, one at a time, without the machine's
	// lock held. It must not block for long and must not call the
	// machine's input methods itself (Snapshot is fine).
	Sink func(Event)
	// Logf hears of a panic on a debounce timer's goroutine (the machine's
	// own or the Sink's), which is recovered there: nothing else would
	// catch it before it killed the process. Nil: not told.
	Logf func(format string, args ...any)
}

// DefaultReplaceGrace is the default [Config.ReplaceGrace]. Pi loads a
// reloaded or switched session in a few hundred milliseconds; a session
// that never comes after this long is taken as gone.
const DefaultReplaceGrace = 5 * time.Second

// Machine is the state machine. Its methods are safe for concurrent use.
type Machine struct {
	cfg   Config
	clock Clock

	mu       sync.Mutex
	stopped  bool
	graceEnd time.Time
	timer    Timer
	timerAt  time.Time
	timerGen uint64
	out      []Event
	emitMu   sync.Mutex
	reported State
	since    time.Time
	message  string
	opener   *Reason
	reasons  []Reason
	// after holds events to queue behind this update's transition.
	after []Event
	// relabelled: this update gave the opener a new label (relabelLocked),
	// which recompute reports when the state stays blocked.
	relabelled bool
	// opened counts the reasons opened (Reason.order).
	opened uint64

	// Screen: the latest raw verdict, when it began and when the screen
	// last changed; the confirmed activity.
	rawScreen       Verdict
	rawSince        time.Time
	lastChange      time.Time
	screenSeen      bool
	screenActivity  State
	screenBlocked   bool
	screenBlockRule string
	// Screen progress (Config.Output): the output the screen has looked
	// at (ScreenSeen); the due the last check was for, and the output
	// written then that the screen must look at before a verdict due
	// then is confirmed; screenWaiting: a verdict waits for it.
	screenLooked  uint64
	screenWaitDue time.Time
	screenWaitFor uint64
	screenWaiting bool

	// Probe: connected, its activity (Idle until the first lifecycle
	// event), and the run tracker.
	probe         bool
	probeActivity State
	runActive     bool
	runStart      time.Time
	candidate     string
	// candidateError is what the agent said went wrong with the
	// candidate's reply, when it failed.
	candidateError string
	// cancelled: the person cut the active run short (RunCancelled).
	cancelled bool
	// probeGoneUntil: the probe's connection ended while it said the
	// agent works (ProbeConnected), and its word stands until then unless
	// the status channel speaks or a probe connects (zero: no such hold).
	probeGoneUntil time.Time
	// probeMissesDialogs: the probe cannot report the agent's dialogs
	// (ProbeTellsDialogs), so the screen's dialog does not defer to it.
	probeMissesDialogs bool

	// Program status (the agent's own OSC 7501 reports): the activity the
	// last report gave — Unknown before the first and after the channel was
	// forgotten — and that report. programIdleAt: a run ended, and its idle
	// counts from then on (zero: nothing pending).
	programActivity State
	program         ProgramStatus
	programIdleAt   time.Time
	// The channel's run tracker, while the probe is away (the probe's own
	// tracks runs otherwise): programRun is a run the channel reported
	// beginning (working that is not a compaction) at programRunStart and
	// not yet over; programEnd, the report that ended it (done, error or
	// idle) at programEndAt, told once its idle is committed.
	programRun      bool
	programRunStart time.Time
	programEnd      ProgramStatus
	programEndAt    time.Time
	// programCompacted: the channel reported a compaction inside the run
	// (see RetryPending). retryPending is the session file's word that
	// the branch ends in a retry Pi left pending.
	programCompacted bool
	retryPending     bool

	// worked: the agent was seen working since the session started (or
	// since New); a sentinel found before that is history, not news.
	worked bool
	// replacing: the session ended and the next one is on its way (until
	// replaceEnd); its reasons stay open until it arrives.
	replacing  bool
	replaceEnd time.Time
	// held: reasons only a probe that lost its connection could close,
	// by key, with when they close unless opened again first (HoldOpen).
	held map[string]time.Time
	// lapsed: reasons whose hold ended before the probe came back, which
	// its return says may still be open; each opens again (Restored) when
	// its time comes unless closed first (OpenLater).
	lapsed map[string]lapsedReason
	// quit: the agent said its session ended for good (SessionShutdown:
	// Pi quits) and no run, session or probe came after. Only its exit
	// follows, so it is idle until then: the screen may still be drawing
	// frames from before the quit (it lags on a loaded machine), and its
	// stale "working", or a dialog already gone, must not reach Herdr as
	// the probe's socket closes, moments before the pane is released.
	quit bool
	// compacting: the probe said Pi compacts the session's context (a
	// model call outside any run, seconds long) and not yet that it is
	// over. The probe hears no run then, so the screen and Pi's status
	// channel, which both show it, decide meanwhile (see activityLocked).
	compacting bool
	// answered: reasons the person answered, by key, with when they close
	// at the latest; they close as soon as the agent is seen working.
	answered map[string]time.Time
	// toldEntries are the replies that asked (a sentinel's Entry) which
	// this machine has had open: a reply that shows again — a /tree or
	// /resume back to it — was told when it first did. Never cleared: a
	// reply's id names it in its session for good.
	toldEntries map[string]bool
	// exited: the agent's process is gone (AgentExited), seen at
	// exitedAt. The wrapper runs on until the pane's release; what would
	// come due meanwhile only because nothing more comes from the agent
	// stays as it is.
	exited   bool
	exitedAt time.Time
	// paused: without the probe, the sentinel a run closed as it began
	// (runBeganLocked) while the session file still says its reply asks:
	// an extension's own message, which only a user message would answer,
	// started the run. It opens again, as told already, when the run ends
	// idle and nothing answered it or asked anew meanwhile (settlePaused).
	paused *Reason
}

// New starts a machine. Its state is unknown until something is known: the
// startup grace has ended and the screen held still for the debounce (an
// agent that draws nothing busy is idle then), or the probe or a reason
// spoke first. The first transition is from unknown; no transition is ever
// to unknown.
func New(cfg Config) *Machine {
	if cfg.Clock == nil {
		cfg.Clock = RealClock()
	}
	if cfg.Sink == nil {
		cfg.Sink = func(Event) {}
	}
	if cfg.ReplaceGrace <= 0 {
		cfg.ReplaceGrace = DefaultReplaceGrace
	}
	now := cfg.Clock.Now()
	m := &Machine{
		cfg: cfg, clock: cfg.Clock,
		graceEnd:        now.Add(cfg.StartupGrace),
		reported:        Unknown,
		since:           now,
		screenActivity:  Unknown,
		probeActivity:   Idle,
		programActivity: Unknown,
		// An empty screen shows nothing busy: the known-agent fallback.
		rawScreen:  Verdict{State: Idle},
		rawSince:   now,
		lastChange: now,
		screenSeen: true,
	}
	m.mu.Lock()
	m.arm(later(now.Add(cfg.Debounce), m.graceEnd))
	m.mu.Unlock()
	return m
}

// Stop cancels the pending timer; no event is emitted afterwards.
func (m *Machine) Stop() {
	m.mu.Lock()
	m.stopped = true
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	m.mu.Unlock()
}

// AgentExited says the agent's process has exited (the pty saw it). The
// wrapper goes on for a while before it releases the pane — live handoffs
// end first, which takes as long as Herdr takes, the output drains, the
// session watcher and the control socket stop — and until then the machine
// runs. From now on it lets nothing come due that only the agent's absence
// explains, since no agent is left to prove it wrong:
//
//   - a gone probe's working (ProbeConnected) is held until the release:
//     a run cut short by a kill or a crash is never told finished;
//   - reasons only the probe could close (HoldOpen) stay open, and those
//     only its return would open again (OpenLater) stay closed;
//   - a session being replaced (SessionReplaced) keeps its reasons: the
//     next session never comes, which is no news;
//   - a screen verdict that would come due after the exit is not
//     confirmed, nor a run's start the screen would see then: the screen
//     can only go still now, which is how idle looks, and the drain's last
//     frames would hold for the debounce only because nothing follows them.
//
// What the agent said before it went still counts, however late it is read
// (the probe's last events, a status report in the drain), and so does what
// it said that comes due after: a run Pi reported ended is told finished
// once its debounce is over, since it really finished. So does a screen
// verdict that held for its debounce before the exit was seen, when the
// screen, lagging behind the output, confirms it only after. It only takes
// the lock, so the pty's copy loop may call it: it delivers nothing. A
// second call changes nothing: the exit was seen at the first.
func (m *Machine) AgentExited() {
	m.mu.Lock()
	if !m.exited {
		m.exited, m.exitedAt = true, m.clock.Now()
	}
	m.mu.Unlock()
}

// update runs f under the lock, recomputes the state, and delivers the
// events it produced.
func (m *Machine) update(cause string, f func(now time.Time)) {
	if m.step(cause, f) {
		m.flush()
	}
}

// step is update's part under the lock, released by a defer: a panic in
// it (or in f) that a caller recovers must not leave the machine locked,
// or every later input and Stop would wait for ever. It reports whether
// the machine still runs.
func (m *Machine) step(cause string, f func(now time.Time)) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return false
	}
	now := m.clock.Now()
	before := slices.Clone(m.reasons)
	f(now)
	next := earliest(m.settleScreen(now), m.settleProgram(now))
	next = earliest(next, m.settleScreenRun(now))
	next = earliest(next, m.settleAnswered(now))
	if m.replacing && !m.exited { // see AgentExited
		if now.Before(m.replaceEnd) {
			next = earliest(next, m.replaceEnd)
		} else {
			// The next session never came: what the old one waited
			// for is over.
			m.replacing = false
			m.clearSessionLocked()
		}
	}
	next = earliest(next, m.settleProbeGone(now))
	next = earliest(next, m.settleHeld(now))
	next = earliest(next, m.settleLapsed(now))
	if !next.IsZero() {
		m.arm(next)
	}
	m.settlePaused(now)
	// Oldest first: a session start puts the script's waits it keeps
	// before what it restores, and a reply that asks anew is asked now;
	// `status` lists the reasons as they are kept, and the report moves
	// to the first of them (reopenLocked).
	slices.SortStableFunc(m.reasons, olderFirst)
	m.reasonEvents(now, before)
	m.recompute(now, cause)
	m.out = append(m.out, m.after...)
	m.after = nil
	return true
}

// reasonEvents queues one event per reason that opened or closed in this
// step, closed first. A reason closed and reopened within the step did
// neither.
func (m *Machine) reasonEvents(now time.Time, before []Reason) {
	has := func(rs []Reason, key string) bool {
		return slices.ContainsFunc(rs, func(o Reason) bool { return o.Key == key })
	}
	for _, r := range before {
		if !has(m.reasons, r.Key) {
			m.out = append(m.out, Event{Kind: EventClosed, At: now, Reason: &r})
		}
	}
	for _, r := range m.reasons {
		if !has(before, r.Key) {
			m.out = append(m.out, Event{Kind: EventOpened, At: now, Reason: &r})
		}
	}
}

// earliest is the earlier of two deadlines; zero means none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// flush delivers queued events in the order they were produced: whoever
// holds emitMu drains the queue, so two goroutines cannot reorder them.
func (m *Machine) flush() {
	m.emitMu.Lock()
	defer m.emitMu.Unlock()
	for {
		m.mu.Lock()
		evs := m.out
		m.out = nil
		m.mu.Unlock()
		if len(evs) == 0 {
			return
		}
		for _, e := range evs {
			m.cfg.Sink(e)
		}
	}
}

// Screen takes the verdict on a screen that changed. Verdicts are
// confirmed only after they held for the debounce (idle: after the screen
// also stopped changing for the debounce) and not before the startup grace
// ended, so a spinner, a redraw or a flicker never reaches the sink.
func (m *Machine) Screen(v Verdict) {
	m.update("", func(now time.Time) {
		m.lastChange = now
		if v.Skip || v.State == Unknown || v.State == "" {
			// No opinion: the raw verdict stays, but the screen moved.
			return
		}
		if !m.screenSeen || v.State != m.rawScreen.State {
			m.rawSince = now
		}
		m.rawScreen = v
		m.screenSeen = true
	})
}

// settleScreen confirms the raw screen verdict when it is due, or returns
// when it will be (zero while nothing is pending).
func (m *Machine) settleScreen(now time.Time) time.Time {
	m.screenWaiting = false // until screenBehindLocked says otherwise
	if !m.screenSeen || m.quit {
		return time.Time{}
	}
	v := m.rawScreen
	if m.screenConfirmed(v) {
		return time.Time{}
	}
	due := m.rawSince.Add(m.cfg.Debounce)
	if v.State == Idle {
		due = later(due, m.lastChange.Add(m.cfg.Debounce))
	}
	due = later(due, m.graceEnd)
	if m.exited && due.After(m.exitedAt) {
		return time.Time{} // it held only once the agent was gone (AgentExited)
	}
	if now.Before(due) {
		return due
	}
	if m.screenBehindLocked(due) {
		return time.Time{} // ScreenSeen steps the machine again
	}
	switch v.State {
	case Blocked:
		if (m.probe && !m.probeMissesDialogs) || m.programActivity != Unknown {
			// The probe and Pi's status channel tell the agent's dialogs
			// themselves, and one dialog must not open two reasons (the
			// screen's would outlive the answer by a debounce, relabelled
			// "blocked on screen"). The screen tells a dialog neither can:
			// one opened before the probe connects, without either, or
			// in a Pi too old to tell its probe (ProbeTellsDialogs), which
			// has no status channel either.
			return time.Time{}
		}
		m.screenBlocked, m.screenBlockRule = true, v.Rule
		m.openLocked(now, Reason{Key: "screen", Kind: KindScreen, Label: screenLabel(v.Rule)})
	case Working, Idle:
		m.screenActivity = v.State
		if v.State == Working {
			m.worked = true
		}
		if m.screenBlocked {
			m.screenBlocked = false
			m.closeLocked("screen")
		}
	}
	return time.Time{}
}

// settleScreenRun is the screen's word on a run that begins while the
// sentinel is open, when the screen decides (no probe, no status channel):
// its busy indicator, shown since after the sentinel opened and held for
// the debounce, is a run the question did not see — an extension's
// follow-up (runBeganLocked). Not the run that wrote the question, whose
// frames began before it was read (the screen may confirm them late), and
// whether or not the screen confirmed an idle in between: a follow-up
// sent as the last run settles is busy again before the idle could hold.
// It returns when the indicator will have held (zero: nothing pending).
func (m *Machine) settleScreenRun(now time.Time) time.Time {
	if m.probe || m.quit || m.programActivity != Unknown || !m.screenSeen || m.rawScreen.State != Working {
		return time.Time{}
	}
	i := m.newestLocked(KindSentinel)
	if i < 0 || !m.reasons[i].Since.Before(m.rawSince) {
		return time.Time{}
	}
	due := later(m.rawSince.Add(m.cfg.Debounce), m.graceEnd)
	if m.exited && due.After(m.exitedAt) {
		return time.Time{} // as for settleScreen (AgentExited)
	}
	if now.Before(due) {
		return due
	}
	if m.screenBehindLocked(due) {
		return time.Time{} // ScreenSeen steps the machine again
	}
	m.runBeganLocked(m.rawSince)
	return time.Time{}
}

// screenBehindLocked says whether the verdict due at due must wait for
// the screen: whether the screen has not yet looked at all the output
// written when the verdict first came due. What was written later does
// not hold it back, so an agent that keeps printing while its screen
// says the same is confirmed at the screen's next look, not never.
// Every screen verdict waits alike: a stale working or blocked is as
// false as a stale idle (a spinner already replaced by the idle editor).
func (m *Machine) screenBehindLocked(due time.Time) bool {
	if m.cfg.Output == nil {
		return false
	}
	if !m.screenWaitDue.Equal(due) {
		// A new due (the verdict or the screen changed since the last
		// check): what counts is the output written by now.
		m.screenWaitDue, m.screenWaitFor = due, m.cfg.Output()
	}
	m.screenWaiting = m.screenLooked < m.screenWaitFor
	return m.screenWaiting
}

// ScreenSeen says the screen has looked at the first n bytes of output
// (see Config.Output), whether or not what it shows changed: Screen hears
// only changes, and a verdict waiting for the screen to catch up is
// confirmed at the look that took the bytes, when that look still says
// the same. It is called after the look's Screen, on every look, so it
// costs one lock unless a verdict waits for it.
func (m *Machine) ScreenSeen(n uint64) {
	m.mu.Lock()
	m.screenLooked = max(m.screenLooked, n)
	due := m.screenWaiting && m.screenLooked >= m.screenWaitFor
	m.mu.Unlock()
	if due {
		m.update("", func(time.Time) {})
	}
}

func screenLabel(rule string) string {
	if rule == "" {
		return "blocked on screen"
	}
	return "blocked on screen (" + rule + ")"
}

func (m *Machine) screenConfirmed(v Verdict) bool {
	switch v.State {
	case Blocked:
		return m.screenBlocked
	case Working, Idle:
		return m.screenActivity == v.State && !m.screenBlocked
	}
	return true
}

// handOverLocked is called when Pi's status channel, which decided working
// and idle, goes quiet on purpose (clear) and the screen decides next. The
// screen's confirmed activity may be older than Pi's last report: it lags
// behind the output on a loaded machine, and Pi clears as it exits, moments
// before the pane is released. So the last report stands until the
// screen's own verdict has held for a debounce from now, as any change of
// the screen's must. (A report lost in a flood is another matter: the
// channel's word is what is in doubt then, and the screen decides at once.
// So is the probe leaving: after a quit the agent is idle anyway, see
// Machine.quit, and otherwise the screen is all there is.)
func (m *Machine) handOverLocked(now time.Time, last State) {
	if (last != Working && last != Idle) || m.screenBlocked || m.screenActivity == last {
		return
	}
	m.screenActivity = last
	if m.rawScreen.State != last {
		m.rawSince = now
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (m *Machine) arm(at time.Time) {
	if m.timer != nil && m.timerAt.Equal(at) {
		return
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerGen++
	gen := m.timerGen
	m.timerAt = at
	// The timer's goroutine is the runtime's: a panic in the step it
	// fires (or in the Sink) would end the process there. Guarded, it
	// costs this step; the next input moves the machine again.
	m.timer = m.clock.AfterFunc(at.Sub(m.clock.Now()),
		guard.Func(m.cfg.Logf, "state: a debounce timer's step", "the state it would settle waits for the next input", func() { m.fire(gen) }))
}

func (m *Machine) fire(gen uint64) {
	m.mu.Lock()
	if m.stopped || gen != m.timerGen {
		m.mu.Unlock()
		return
	}
	m.timer = nil
	m.mu.Unlock()
	m.update("", func(time.Time) {})
}

// Open adds a reason to wait for the user. The first open reason turns the
// state blocked, with that reason's message; more reasons change nothing
// visible while it stays open. When it closes first, the message moves to
// the oldest reason still open (EventRelabelled); the state turns back
// when the last one closes.
func (m *Machine) Open(r Reason) {
	m.update("open:"+r.Key, func(now time.Time) { m.openLocked(now, r) })
}

// Close removes the reason with key; unknown keys are ignored.
func (m *Machine) Close(key string) {
	m.update("close:"+key, func(time.Time) { m.closeLocked(key) })
}

// AnswerGrace bounds how long a reason the person answered (see
// [Machine.Answered]) waits for the agent to be seen working. Pi starts the
// run in the same moment it stores the answer; the screen needs the
// debounce to confirm it, so this leaves room for that on a loaded machine.
const AnswerGrace = time.Second

// Answered says the person answered what the reason waited for, as the
// session file tells (a user message after the sentinel's reply). The
// agent starts working on the answer at the same moment, but the file and
// the signals that say "working" (the probe's socket, the pty) travel
// apart and either may arrive first; closing the reason at once could
// report a blip of idle between blocked and working. So the reason closes
// as soon as the agent is seen working, or after AnswerGrace when it never
// is (the person moved the session to another branch without a run).
// Unknown keys are ignored.
func (m *Machine) Answered(key string) {
	m.update("answered:"+key, func(now time.Time) {
		if m.paused != nil && m.paused.Key == key {
			m.paused = nil // the run's question was answered after all
		}
		if !slices.ContainsFunc(m.reasons, func(o Reason) bool { return o.Key == key }) {
			return
		}
		if m.answered == nil {
			m.answered = map[string]time.Time{}
		}
		if _, ok := m.answered[key]; !ok {
			m.answered[key] = now.Add(AnswerGrace)
		}
	})
}

// settleAnswered closes the answered reasons once the agent works or their
// grace is over, and returns when the next grace ends (zero: none left).
// The activity it reads is the one settled in this same step, so the
// reason and the idle underneath it go in one transition, to working.
func (m *Machine) settleAnswered(now time.Time) time.Time {
	var next time.Time
	for key, due := range m.answered {
		open := slices.ContainsFunc(m.reasons, func(o Reason) bool { return o.Key == key })
		if activity, _ := m.activityLocked(); !open || activity == Working || !now.Before(due) {
			delete(m.answered, key)
			if open {
				m.closeLocked(key)
			}
			continue
		}
		next = earliest(next, due)
	}
	return next
}

// CloseKind removes every open reason of a kind.
func (m *Machine) CloseKind(k Kind) {
	m.update("close:"+string(k), func(time.Time) { m.closeKindLocked(k) })
}

// HoldOpen keeps the open reasons with keys open until d from now, then
// closes those not opened again (or restored by SessionStart) meanwhile.
// It is for what only the agent's probe can close when the probe lost its
// connection: it comes back within a second and repeats what is still open
// (Pi's dialogs) or says what closed meanwhile (the channel waits), so
// closing them at once would report a blip of idle, and the repeat a
// second "needs your input" for a dialog the person was told of. A probe
// that never comes back closes them after d, as it would have at once.
func (m *Machine) HoldOpen(keys []string, d time.Duration) {
	m.update("hold", func(now time.Time) {
		for _, k := range keys {
			if !slices.ContainsFunc(m.reasons, func(o Reason) bool { return o.Key == k }) {
				continue
			}
			if m.held == nil {
				m.held = map[string]time.Time{}
			}
			m.held[k] = now.Add(d)
		}
	})
}

// lapsedReason is a reason OpenLater opens at the latest at.
type lapsedReason struct {
	r  Reason
	at time.Time
}

// OpenLater opens the reasons rs after d from now — as Restored: the
// person was told of them — unless they are closed (Close, CloseKind, a
// session start) or opened meanwhile. It is for what a probe that came
// back too late for its hold (HoldOpen) had open when it left and may
// have still: it comes back with the events it kept while away, right
// after its return, and those close what closed meanwhile. Opening them
// at once would turn an idle pane blocked for a moment for a reason the
// next event closes.
func (m *Machine) OpenLater(rs []Reason, d time.Duration) {
	m.update("open-later", func(now time.Time) {
		for _, r := range rs {
			if slices.ContainsFunc(m.reasons, func(o Reason) bool { return o.Key == r.Key }) {
				continue
			}
			if m.lapsed == nil {
				m.lapsed = map[string]lapsedReason{}
			}
			r.Restored = true
			m.lapsed[r.Key] = lapsedReason{r, now.Add(d)}
		}
	})
}

// settleLapsed opens the lapsed reasons that are due, and returns when the
// next one will be (zero while none waits).
func (m *Machine) settleLapsed(now time.Time) time.Time {
	if m.exited {
		return time.Time{} // no probe will say what closed (AgentExited)
	}
	var next time.Time
	for k, l := range m.lapsed {
		if now.Before(l.at) {
			next = earliest(next, l.at)
			continue
		}
		delete(m.lapsed, k)
		m.openLocked(now, l.r)
	}
	return next
}

// settleHeld closes the held reasons that are due, and returns when the
// next one will be (zero while none is held).
func (m *Machine) settleHeld(now time.Time) time.Time {
	if m.exited {
		return time.Time{} // held until the release (AgentExited)
	}
	var next time.Time
	for k, end := range m.held {
		switch {
		case !slices.ContainsFunc(m.reasons, func(o Reason) bool { return o.Key == k }):
			delete(m.held, k) // closed meanwhile
		case !now.Before(end):
			delete(m.held, k)
			m.closeLocked(k)
		default:
			next = earliest(next, end)
		}
	}
	return next
}

// ClearReasons removes every open reason.
func (m *Machine) ClearReasons() {
	m.update("clear", func(time.Time) { m.clearLocked() })
}

func (m *Machine) openLocked(now time.Time, r Reason) { m.openAsLocked(now, r, false) }

// openAsLocked is openLocked; asked says the sentinel r is the agent's own
// word that the branch asks now, in a session the machine has followed
// all along (SessionRepeated): whether it is news is then only whether the
// machine had its reply open before (toldEntries), not the history rules.
func (m *Machine) openAsLocked(now time.Time, r Reason, asked bool) {
	delete(m.held, r.Key)
	delete(m.lapsed, r.Key)
	// Opened again after it was answered (Answered) and before that closed
	// it: the agent asks anew (a short reply to the answer, read from the
	// file before the run was seen), and that answer is not this one's.
	delete(m.answered, r.Key)
	if r.Kind == KindSentinel && m.paused != nil {
		// The file's newest word on it: the paused question again (told
		// already), or another.
		if r.Entry != "" && r.Entry == m.paused.Entry {
			r.Restored = true
		}
		m.paused = nil
	}
	if i := slices.IndexFunc(m.reasons, func(o Reason) bool { return o.Key == r.Key }); i >= 0 {
		if r.Kind == KindSentinel && m.reasons[i].Kind == KindSentinel {
			m.reaskLocked(now, i, r)
			return
		}
		m.relabelLocked(i, r)
		return
	}
	if title := m.dialogTitleLocked(); r.Kind == KindUIPrompt && title != "" {
		// Pi's status report of the dialog came first (it goes through the
		// pty, the probe's event through a socket), and it names the
		// dialog on screen: the probe names the first of dialogs opened
		// over one another.
		r.Question = title
	}
	r.Since = now
	m.opened++
	r.order = m.opened
	if r.Kind == KindSentinel && m.toldLocked(r, asked) {
		r.Restored = true
	}
	m.noteEntryLocked(r)
	m.reasons = append(m.reasons, r)
	if len(m.reasons) == 1 {
		op := r
		m.opener = &op
	}
}

// historyLocked says whether the sentinel r is the session's history,
// told before, rather than a question the agent asks now: found before
// the agent was seen working in the session, unless the session file says
// the reply was written while it was watched (Reason.Live). That word
// counts only while the probe is away: with it, the probe's runs say what
// is news, and a reply it did not see written is not its Pi's (another Pi
// writing the same file).
//
// A reply the file says was written before it was watched (Reason.Old)
// is history whenever it shows, also after the agent worked: the person
// moved back to it (/tree, or a branch summary hung off it), and it was
// told when it was asked.
func (m *Machine) historyLocked(r Reason) bool {
	if r.Old {
		return true
	}
	return !m.worked && !(r.Live && !m.probe)
}

// toldLocked says whether the person was told of the sentinel r already
// (or it is history, never news): a reply this machine had open before,
// or, unless asked (see openAsLocked), one the history rules
// (historyLocked) call the session's past. An asked sentinel that does not
// name its reply cannot be told from one the machine had: it counts as
// told, so that nothing is told twice.
func (m *Machine) toldLocked(r Reason, asked bool) bool {
	if asked {
		return r.Entry == "" || r.Old || m.toldEntries[r.Entry]
	}
	return m.historyLocked(r) || m.toldEntries[r.Entry]
}

// noteEntryLocked keeps the reply a sentinel stands for among those told
// (see toldEntries).
func (m *Machine) noteEntryLocked(r Reason) {
	if r.Kind != KindSentinel || r.Entry == "" {
		return
	}
	if m.toldEntries == nil {
		m.toldEntries = map[string]bool{}
	}
	m.toldEntries[r.Entry] = true
}

// relabelLocked gives the open reason i the label of r, a later open of
// the same hook wait: `waiting start` again with a new --label, which
// decides the label as it decides the wait's holder. It stays open since
// it first opened; when it opened the blocked state, recompute reports the
// new message. Other kinds keep what they opened with.
func (m *Machine) relabelLocked(i int, r Reason) {
	if r.Kind != KindHook || m.reasons[i].Kind != KindHook {
		return
	}
	m.reasons[i].Label, m.reasons[i].Question = r.Label, r.Question
	if m.opener != nil && m.opener.Key == r.Key {
		m.opener.Label, m.opener.Question = r.Label, r.Question
		m.relabelled = true
	}
}

// reaskLocked takes a sentinel opened again while the sentinel is open:
// when it stands for another reply of the session file (its Entry), the
// agent asks another question — the pane was blocked on the last one
// through a run nothing else saw (quicker than the screen's debounce, no
// status channel), or the file was read before the run's start was heard
// — and the reason asks it now: an EventAsked, which is news. The same
// reply, or the probe's sentinel (no entry) read off the file, changes
// nothing but what the reason knows; so does any other reply while the
// probe is connected.
func (m *Machine) reaskLocked(now time.Time, i int, r Reason) {
	old := m.reasons[i]
	if r.Entry == "" || r.Entry == old.Entry {
		return
	}
	if old.Entry == "" {
		m.reasons[i].Entry = r.Entry
		if m.opener != nil && m.opener.Key == r.Key {
			m.opener.Entry = r.Entry
		}
		m.noteEntryLocked(r)
		return
	}
	if m.probe {
		// While the probe is connected its own run's settle says what
		// it asks (its agent start closed the last question): another
		// reply in the file is not its Pi's news — a second Pi writing
		// the same session file, say.
		return
	}
	m.askAnewLocked(now, i, r, false)
}

// askAnewLocked makes the open sentinel i stand for r, another reply that
// asks (see reaskLocked; asked: see openAsLocked), and says so with an
// EventAsked.
func (m *Machine) askAnewLocked(now time.Time, i int, r Reason, asked bool) {
	r.Since = now
	m.opened++
	r.order = m.opened
	if m.toldLocked(r, asked) {
		r.Restored = true
	}
	m.noteEntryLocked(r)
	m.reasons[i] = r
	if m.opener != nil && m.opener.Key == r.Key {
		op := r
		m.opener = &op
	}
	m.out = append(m.out, Event{Kind: EventAsked, At: now, Reason: &r})
}

// runBeganLocked is a run's start seen without the probe (its AgentStart
// closes the sentinel itself): Pi's status channel says a run begins, or
// the screen, when it decides, confirms one that began at since. As at the
// probe's agent start the sentinel closes — here only one opened before
// since (zero: any) — so the pane shows the run; a run started by an
// extension's own message leaves the file still asking, and the question
// is held (paused) for the run's end. The session file says what the run
// asks next.
func (m *Machine) runBeganLocked(since time.Time) {
	i := m.newestLocked(KindSentinel)
	if i < 0 || (!since.IsZero() && !m.reasons[i].Since.Before(since)) {
		return
	}
	r := m.reasons[i]
	m.closeLocked(r.Key)
	if _, ok := m.answered[r.Key]; ok {
		// The person's answer started it.
		delete(m.answered, r.Key)
		return
	}
	m.paused = &r
}

// settlePaused opens the paused sentinel again once the run that closed it
// has ended (the activity is idle, the probe still away) and the session
// file has not said otherwise meanwhile: no answer, no new question. The
// file still ends with that question, as the reference reads a branch when
// a run settles; the person was told of it, so it is Restored.
func (m *Machine) settlePaused(now time.Time) {
	if m.paused == nil || m.probe {
		return
	}
	if a, _ := m.activityLocked(); a != Idle {
		return
	}
	r := *m.paused
	m.paused = nil
	if m.newestLocked(KindSentinel) >= 0 {
		return
	}
	r.Restored = true
	m.openLocked(now, r)
}

func (m *Machine) closeLocked(key string) {
	delete(m.lapsed, key)
	m.reasons = slices.DeleteFunc(m.reasons, func(o Reason) bool { return o.Key == key })
	if key == "screen" {
		m.screenBlocked = false
	}
}

func (m *Machine) closeKindLocked(k Kind) {
	maps.DeleteFunc(m.lapsed, func(_ string, l lapsedReason) bool { return l.r.Kind == k })
	m.reasons = slices.DeleteFunc(m.reasons, func(o Reason) bool { return o.Kind == k })
	if k == KindScreen {
		m.screenBlocked = false
	}
}

func (m *Machine) clearLocked() {
	m.lapsed = nil
	m.reasons = nil
	m.screenBlocked = false
}

// clearSessionLocked closes what belonged to the agent's session: every
// reason except hook waits.
func (m *Machine) clearSessionLocked() {
	m.lapsed = nil // what the next session has open it says
	m.reasons = slices.DeleteFunc(m.reasons, func(o Reason) bool { return o.Kind != KindHook })
	m.screenBlocked = false
	m.answered = nil // what a restored reason waits for is not answered yet
	m.paused = nil
}

// ProbeConnected says whether the in-agent probe is connected. While it is,
// its lifecycle events decide working and idle; the screen decides
// otherwise.
func (m *Machine) ProbeConnected(on bool) {
	m.update("probe:connected", func(now time.Time) {
		if on && !m.probe {
			// Until the probe says otherwise (its session_start follows
			// at once), the activity stays what the screen or the status
			// channel said: a probe that connects again mid-run must not
			// make a working pane idle for a moment.
			a, _ := m.activityLocked() // a gone probe's held working counts
			m.probeActivity = Idle
			if a == Working && !m.quit {
				m.probeActivity = Working
			}
			m.quit = false // a new agent process
			// The probe tells runs from now on. A run the channel tracks
			// stays tracked: the probe repeats its agent_start when the
			// run goes on, and AgentStart takes the run over then; a
			// probe that says nothing of it came back after its end,
			// which the channel tells.
		}
		m.compacting = false
		if on {
			// The new connection's probe decides from here, starting from
			// the held working (its session_start follows at once and
			// says whether a run goes on).
			m.probeGoneUntil = time.Time{}
		} else if m.probe && m.probeActivity == Working && !m.quit {
			// The connection ends mid-run. Its end is no word on the
			// run: an agent killed or crashed closes it a moment before
			// its exit is seen, and a probe that lost its socket is back
			// within a second and repeats the run's start. Falling to the
			// screen at once would report idle after working — Herdr's
			// "finished" — whenever the screen shows nothing busy (a run
			// younger than the debounce, a working indicator an
			// extension hid). The run stays working for the hold, long
			// enough for a probe's return or for the agent's exit to be
			// seen; a probe back says what goes on. Once the exit is seen
			// (AgentExited) the hold no longer runs out: it lasts until
			// the pane's release, however long the wrapper's way out
			// takes (live handoffs ending with a slow Herdr, the drain).
			m.probeGoneUntil = now.Add(ProbeGoneGrace)
		}
		if !on && m.probe && m.runActive && m.programActivity == Working && m.programIdleAt.IsZero() {
			// The probe leaves mid-run (it crashed, or lost the socket)
			// and may never come back: the channel, which says the run
			// goes on, tracks it from the probe's start and tells its
			// end. Its bookkeeping goes, so that it is told once.
			m.programRun, m.programRunStart, m.programCompacted = true, m.runStart, false
			m.programEnd = ProgramStatus{}
			m.forgetRunLocked()
		}
		if !on {
			// The agent is gone mid-replacement: no session follows.
			// What the file says (the sentinel) stays until it says
			// otherwise; the caller closes what only the agent could.
			m.replacing = false
		}
		m.probe = on
	})
}

// ProbeTellsDialogs says whether the probe that connects next, or is
// connected, reports the agent's own dialogs (Pi tells its extensions of
// them since 0.84.4). One that cannot leaves them to the screen, as if
// there were no probe: a question waiting on an older Pi must read
// blocked. Until told otherwise a probe is taken to report them.
func (m *Machine) ProbeTellsDialogs(tells bool) {
	m.update("probe:dialogs", func(time.Time) {
		m.probeMissesDialogs = !tells
	})
}

// ProbeGoneGrace is how long a run the probe said was under way stays
// working after the probe's connection ended while the agent runs on (see
// ProbeConnected): as long as what only the probe could close stays open
// (signals.ProbeReturnGrace). After the agent's exit the hold lasts until
// the release (AgentExited).
const ProbeGoneGrace = DefaultReplaceGrace

// settleProbeGone ends the hold of a gone probe's working once it is
// over, or returns when it will be (zero while nothing is held).
func (m *Machine) settleProbeGone(now time.Time) time.Time {
	if m.probeGoneUntil.IsZero() || m.exited {
		// After the agent's exit the hold lasts until the release
		// (AgentExited): that the probe never came back says nothing of
		// the run.
		return time.Time{}
	}
	if now.Before(m.probeGoneUntil) {
		return m.probeGoneUntil
	}
	m.probeGoneUntil = time.Time{}
	return time.Time{}
}

// AgentStart: a run began; the agent works now. The sentinel reason from
// the previous reply closes (the person answered it).
func (m *Machine) AgentStart() {
	m.update("probe:agent_start", func(now time.Time) {
		m.probeActivity = Working
		m.quit = false // it did not quit after all
		m.compacting = false
		// A run the channel tracked while the probe was away and saw end
		// is over, this one new: it is told now, not at its idle (a new
		// run means the person has answered it).
		m.tellProgramRunLocked(now)
		if !m.runActive {
			m.runStart = now
			if m.programRun {
				// The run the channel tracked while the probe was away
				// (a resync mid-run repeats the agent_start): it counts
				// from the channel's start.
				m.runStart = m.programRunStart
			}
		}
		// The probe tells the run's end; the channel must not tell it a
		// second time.
		m.forgetProgramRunLocked()
		m.runActive = true
		m.worked = true
		m.candidate, m.candidateError = "", ""
		m.closeKindLocked(KindSentinel)
		m.paused = nil
	})
}

// Compaction says Pi began (on) or ended compacting the session's
// context. Between the two, while no run is under way, the probe does not
// decide working and idle: Pi's status channel or the screen ("Compacting
// context...") does, and either one ends the spell by itself should the
// end never be told (Pi before 1.x says nothing of a compaction that
// failed or was cancelled). A run, a session or a probe that starts
// clears it.
func (m *Machine) Compaction(on bool) {
	m.update("probe:compaction", func(time.Time) { m.compacting = on })
}

// AgentEnd records how the run's last model turn stopped, and for a turn
// that failed what the agent said went wrong (errorMessage; "" for none);
// retries within one run overwrite both, so only the final settle counts.
func (m *Machine) AgentEnd(stopReason, errorMessage string) {
	m.update("probe:agent_end", func(time.Time) { m.candidate, m.candidateError = stopReason, errorMessage })
}

// RunCancelled says the person cut the active run short, however its last
// model turn stopped: its outcome is Aborted when it settles. Pi's own
// stop reason may say error then — a retry cancelled on its countdown ends
// with the failed reply's — and the run-finished event keeps it.
func (m *Machine) RunCancelled() {
	m.update("probe:run_cancelled", func(time.Time) {
		if m.runActive {
			m.cancelled = true
		}
	})
}

// AgentSettled: the run is over; the agent is idle, and when a run was
// active a run-finished event carries its outcome.
func (m *Machine) AgentSettled() {
	m.update("probe:agent_settled", func(now time.Time) {
		m.probeActivity = Idle
		if !m.runActive {
			return
		}
		m.settleRunLocked(now)
	})
}

// settleRunLocked tells the active run finished, with what its last model
// turn said, and ends its bookkeeping.
func (m *Machine) settleRunLocked(now time.Time) { m.settleRunEndedLocked(now, now) }

// settleRunEndedLocked is settleRunLocked for a run told at now that
// ended at end: its length counts to end.
func (m *Machine) settleRunEndedLocked(now, end time.Time) {
	stop := m.candidate
	if stop == "" {
		stop = string(Completed)
	}
	outcome := OutcomeOf(stop)
	if m.cancelled {
		outcome = Aborted
	}
	m.after = append(m.after, Event{Kind: EventRunFinished, At: now, Outcome: outcome, StopReason: stop,
		Error: m.candidateError, Duration: end.Sub(m.runStart)})
	m.forgetRunLocked()
}

// SessionStart: a new, reloaded or resumed session; every reason but hook
// waits and the run tracker start over. restore reopens, in the same step,
// what the new session already waits for (an unanswered sentinel found in
// its history); such reasons are Restored. A reason the old session had
// open and the new one restores stays as it was (same Since, no event), so
// a /reload of a blocked session, announced by SessionReplaced, reports
// nothing at all. Restoring a reason held open (HoldOpen) opens it again:
// it no longer closes when the hold ends.
func (m *Machine) SessionStart(restore ...Reason) {
	m.update("probe:session_start", func(now time.Time) { m.sessionStartLocked(now, false, false, false, nil, restore) })
}

// SessionStartedAway is SessionStart for a session the agent process
// started while its probe was away (a /new during the outage) and in
// which a run ended before the probe came back. What that session
// restores is not its history: the run asked it, unheard, so a sentinel
// the machine never had open is news, told once, as SessionRepeated tells
// one asked while the probe was away.
func (m *Machine) SessionStartedAway(restore ...Reason) {
	m.update("probe:session_start", func(now time.Time) { m.sessionStartLocked(now, false, true, false, nil, restore) })
}

// SessionRepeated is SessionStart for the session the agent had, repeated
// by the same agent process on its probe's return (a resync: a new
// connection, or the probe fell behind and dropped events). Nothing of
// the session is history to the machine, which followed it all along:
// what the probe could not say meanwhile is what it repeats now. So a
// sentinel restored for a reply the machine never had open was asked
// while the probe was away, and is news; one standing for another reply
// than the open sentinel's asks anew (EventAsked); one the machine had is
// not told again. With running, a run of it is under way (its agent_start
// follows): the run goes on — working, counted from its real start —
// where SessionStart would begin idle and the pane would be idle for a
// moment.
//
// ended, when not nil, is how the run the machine saw start ended while the
// probe could not say (its agent_settled went down with the connection, or
// was dropped while the wrapper fell behind): the run is told finished as
// at AgentSettled, after what the session restores — a run that ended
// asking is told as blocked. Its length counts to its end (see RunEnd.Ago),
// so a short run is not told finished for the outage's length.
func (m *Machine) SessionRepeated(running bool, ended *RunEnd, restore ...Reason) {
	m.update("probe:session_start", func(now time.Time) { m.sessionStartLocked(now, true, false, running, ended, restore) })
}

// RunEnd is how a run ended, for SessionRepeated: its last model turn's
// stop reason and error, and whether the person cut it short.
type RunEnd struct {
	StopReason string
	Error      string
	Cancelled  bool
	// Ago is how long before the return the run ended, as the agent
	// says; 0 when it does not, and the run is taken to end at the return,
	// the latest it can have. Its length counts to its end, never before
	// its start.
	Ago time.Duration
}

// asked says the restored reasons were asked while the probe was away in
// a session it did not see start (SessionStartedAway): news, as in a
// repeat, though the session is a new one.
func (m *Machine) sessionStartLocked(now time.Time, repeat, asked, midRun bool, ended *RunEnd, restore []Reason) {
	old := slices.Clone(m.reasons)
	m.replacing, m.quit, m.compacting = false, false, false
	m.clearSessionLocked()
	for _, r := range restore {
		delete(m.held, r.Key)
		open := func(o Reason) bool { return o.Key == r.Key }
		if i := slices.IndexFunc(old, open); i >= 0 && !slices.ContainsFunc(m.reasons, open) {
			m.reasons = append(m.reasons, old[i])
			if len(m.reasons) == 1 {
				op := old[i]
				m.opener = &op
			}
			if (repeat || asked) && r.Kind == KindSentinel && old[i].Kind == KindSentinel && r.Entry != "" && old[i].Entry != "" && r.Entry != old[i].Entry {
				// Answered and asked again while the probe was away.
				m.askAnewLocked(now, len(m.reasons)-1, r, true)
			}
			continue
		}
		if !repeat && !asked {
			r.Restored = true
		}
		m.openAsLocked(now, r, repeat || asked)
	}
	if midRun {
		m.probeActivity = Working
		return
	}
	if ended != nil && m.runActive {
		m.candidate, m.candidateError = ended.StopReason, ended.Error
		m.cancelled = m.cancelled || ended.Cancelled
		end := now
		if ended.Ago > 0 {
			end = now.Add(-ended.Ago)
		}
		if end.Before(m.runStart) {
			end = m.runStart
		}
		m.settleRunEndedLocked(now, end)
	}
	m.forgetRunLocked()
	m.probeActivity = Idle
	if !repeat {
		// A session started while away had a run: the agent worked in it.
		m.worked = asked
	}
}

// SessionShutdown: the session ends for good (the agent quits); every
// reason but hook waits closes and no run is active.
func (m *Machine) SessionShutdown() {
	m.update("probe:session_shutdown", func(time.Time) {
		m.replacing, m.compacting = false, false
		m.quit = true
		m.endSessionLocked()
		m.clearSessionLocked()
	})
}

// SessionReplaced: the session ends and the agent starts another in the
// same process right away (Pi's /reload, /new, /resume, /fork). No run is
// active any more, but the old session's reasons stay open until the next
// SessionStart decides what the new one waits for, or until
// Config.ReplaceGrace passes without one: closing them now would report a
// blip of idle between a blocked session and its own reload.
func (m *Machine) SessionReplaced() {
	m.update("probe:session_shutdown", func(now time.Time) {
		m.endSessionLocked()
		m.replacing = true
		m.replaceEnd = now.Add(m.cfg.ReplaceGrace)
	})
}

// forgetRunLocked ends the run's bookkeeping: no run active, nothing
// recorded of how it stopped or that it was cancelled.
func (m *Machine) forgetRunLocked() {
	m.runActive, m.cancelled = false, false
	m.candidate, m.candidateError = "", ""
}

func (m *Machine) endSessionLocked() {
	m.forgetRunLocked()
	m.probeActivity = Idle
}

// ProgramStatus is one report of the agent's own status channel: Pi ≥ 1.1
// writes OSC 7501 reports into its output (pi-agent.md §10), and
// pane/observe reads them off the output stream.
type ProgramStatus struct {
	// State is working, blocked, done, error or idle, or clear: the agent
	// stopped reporting (it exits or is suspended).
	State string `json:"state"`
	// App names the program (Pi says "pi").
	App string `json:"app,omitempty"`
	// Kind is what a blocked agent waits for: permission, question or auth.
	Kind string `json:"kind,omitempty"`
	// Message is the report's text (a dialog's title, the session name, an
	// error's first line), control characters replaced.
	Message string `json:"message,omitempty"`
}

// programStatusKey is the key of the one reason the status channel opens.
const programStatusKey = "program-status"

// ProgramStatus takes a report of the agent's status channel. working,
// done, error and idle decide the activity while the probe is away (see
// activityLocked) and close what the channel opened — the end of a run
// (working, then done, error or idle) only after the debounce, while the
// session file may still say the reply waits for an answer; blocked opens one
// reason — while the probe is connected only for a login (kind auth),
// because the probe reports Pi's dialogs itself (ui_prompt) and one dialog
// must not open two reasons that race to name it; clear forgets the
// channel. Unknown states (a later revision of the protocol) are ignored.
//
// While the probe is away the channel also tracks runs, as the probe's
// AgentStart and AgentSettled do: working that is not a compaction begins
// one, and the report that ends it — done, error or idle — is told as an
// EventRunFinished (Completed, Errored with Pi's first line of the error,
// Aborted) when the run's idle is committed after the debounce, so a reply
// that asks for input is blocked by then and told as blocked.
func (m *Machine) ProgramStatus(p ProgramStatus) {
	m.update("program-status:"+p.State, func(now time.Time) {
		switch p.State {
		case "working":
			if !m.probe && p.Message != compactingMessage && !(m.programRun && m.programEnd.State == "") {
				// A run begins (not a compaction, nor a run under
				// way that goes on after a dialog or a compaction).
				m.runBeganLocked(time.Time{})
			}
			m.programActivity = Working
			m.programIdleAt = time.Time{}
			m.worked = true
			m.closeLocked(programStatusKey)
			// Working again before the last run's end was committed:
			// that run goes on.
			m.programEnd = ProgramStatus{}
			if !m.probe && !m.programRun && p.Message != compactingMessage {
				m.programRun, m.programRunStart = true, now
			}
			if m.programRun && p.Message == compactingMessage {
				m.programCompacted = true
			}
		case "done", "error", "idle":
			if m.programRun && m.programEnd.State == "" {
				m.programEnd, m.programEndAt = p, now
			}
			if m.programActivity == Working {
				// A run ended. Its reply is in the session file already
				// (Pi writes it before it settles), but the file is read
				// apart from the output: a reply that asks for input must
				// get the debounce to open its reason, or the pane would
				// show idle between working and blocked.
				if m.programIdleAt.IsZero() {
					m.programIdleAt = now.Add(m.cfg.Debounce)
				}
			} else {
				m.programActivity = Idle
			}
			m.closeLocked(programStatusKey)
		case "blocked":
			if !m.probe || p.Kind == "auth" {
				m.openLocked(now, Reason{Key: programStatusKey, Kind: KindProgramStatus,
					Label: programStatusLabel(p.Kind), Question: p.Message})
				m.askLocked(now, programStatusKey, p.Message)
			} else if i := m.newestLocked(KindUIPrompt); i >= 0 {
				m.askLocked(now, m.reasons[i].Key, p.Message)
			}
		case "clear":
			// Pi stops reporting as it exits (or is suspended): the
			// screen decides next, but not with a frame older than
			// Pi's last report.
			if !m.probe && !m.quit {
				last := m.programActivity
				if !m.programIdleAt.IsZero() {
					last = Idle // the run ended; only its idle was held
				}
				m.handOverLocked(now, last)
			}
			m.forgetProgramLocked()
		default:
			return
		}
		m.program = p
	})
}

// ProgramStatusLost says output was dropped before it was read, so a
// report may be among the lost bytes: what the channel said last may be
// out of date, and the screen decides until the next report.
func (m *Machine) ProgramStatusLost() {
	m.update("program-status:lost", func(time.Time) {
		if m.programActivity != Unknown || m.program.State != "" {
			m.forgetProgramLocked()
		}
	})
}

// dialogTitleLocked is the title of the dialog on screen as Pi's status
// channel last reported it ("" when it does not say one is open, or names
// a login, which the probe does not report as a dialog).
func (m *Machine) dialogTitleLocked() string {
	if m.program.State != "blocked" || m.program.Kind == "auth" {
		return ""
	}
	return m.program.Message
}

// newestLocked is the index of the newest open reason of kind k, or -1.
func (m *Machine) newestLocked(k Kind) int {
	for i := len(m.reasons) - 1; i >= 0; i-- {
		if m.reasons[i].Kind == k {
			return i
		}
	}
	return -1
}

// askLocked gives the open reason key a new question, when q is one:
// Pi's status channel names the newest of its dialogs, so a dialog opened
// over another (two tool calls asking at once, a confirm from inside a
// dialog) changes what the person is asked. The reason stays open; an
// EventAsked says what it asks now.
func (m *Machine) askLocked(now time.Time, key, q string) {
	i := slices.IndexFunc(m.reasons, func(o Reason) bool { return o.Key == key })
	if q == "" || i < 0 || m.reasons[i].Question == q {
		return
	}
	m.reasons[i].Question = q
	if m.opener != nil && m.opener.Key == key {
		m.opener.Question = q
	}
	r := m.reasons[i]
	m.out = append(m.out, Event{Kind: EventAsked, At: now, Reason: &r})
}

func (m *Machine) forgetProgramLocked() {
	m.programActivity = Unknown
	m.programIdleAt = time.Time{}
	m.forgetProgramRunLocked()
	m.program = ProgramStatus{}
	m.closeLocked(programStatusKey)
}

// settleProgram lets a run's end count once its hold is over, or returns
// when it will (zero while nothing is pending).
func (m *Machine) settleProgram(now time.Time) time.Time {
	if m.programIdleAt.IsZero() {
		return time.Time{}
	}
	if now.Before(m.programIdleAt) {
		return m.programIdleAt
	}
	m.programActivity = Idle
	m.programIdleAt = time.Time{}
	// The run's end is told now, when its idle counts, not at Pi's
	// report: a reply that asks for input (the sentinel, read off the
	// session file meanwhile) made the pane blocked first, and a run that
	// ends waiting for the person is told as blocked.
	m.tellProgramRunLocked(now)
	return time.Time{}
}

// tellProgramRunLocked tells the end of the run the channel tracked, when
// it has seen one, and ends the tracker.
func (m *Machine) tellProgramRunLocked(now time.Time) {
	if !m.programRun || m.programEnd.State == "" {
		return
	}
	end := m.programEnd
	outcome := programOutcome(end.State)
	if outcome == Errored && m.retryPending && !m.programCompacted {
		outcome = Aborted // see RetryPending
	}
	m.after = append(m.after, Event{Kind: EventRunFinished, At: now, Outcome: outcome,
		Error: programError(end), Cause: "program-status:" + end.State, Duration: m.programEndAt.Sub(m.programRunStart)})
	m.forgetProgramRunLocked()
}

// compactingMessage is the text Pi's status channel gives the working it
// reports while it compacts the session's context (Pi 1.6.0's
// program-status-reporter.js); a run's working carries the session's name,
// if any. A compaction outside a run — /compact, or the one Pi makes before
// a prompt when the context is over its threshold — is no run: its end is
// not told.
const compactingMessage = "Compacting context"

// forgetProgramRunLocked ends the channel's run tracker: no run, nothing
// pending to tell.
func (m *Machine) forgetProgramRunLocked() {
	m.programRun, m.programCompacted = false, false
	m.programEnd = ProgramStatus{}
}

// RetryPending takes the session file's word on whether the branch ends in
// a retry Pi left pending: a failed reply it left out of what the model
// sees again, to retry it, and no retry after it (session.Tree.RetryPending).
// A run the channel tracks (no probe) that ends in error while the file
// says so, when its idle is committed, is a retry the person cancelled on
// its countdown ("Retrying (1/3) in 2s... (escape to cancel)"): Pi reports
// it as error, and the channel cannot tell it from a failure. It ends
// Aborted, as the probe's RunCancelled ends it, keeping Pi's error. Not a
// run that compacted inside: Pi leaves out a reply that overflowed the
// context too, before it compacts, and a compaction that failed ends the
// run in error with the same file (the probe's rule: no compaction since
// the failed reply; the channel cannot say which reply came last, so a
// retry cancelled after such a compaction is told as failed).
func (m *Machine) RetryPending(pending bool) {
	m.update("session:retry_pending", func(time.Time) { m.retryPending = pending })
}

// programOutcome is how a run ended, by the channel's report of its end:
// done completed; error failed (Pi reports it for an error that was not
// retried, and also for a retry cancelled on its countdown, which the
// channel cannot tell apart: the session file does, see RetryPending);
// idle, which Pi reports after a cancelled run, was aborted.
func programOutcome(state string) Outcome {
	switch state {
	case "error":
		return Errored
	case "idle":
		return Aborted
	}
	return Completed
}

// programError is what went wrong with a run the channel reports failed:
// the first line of Pi's error.
func programError(p ProgramStatus) string {
	if p.State != "error" {
		return ""
	}
	return p.Message
}

// programStatusLabel is the blocked message for what the agent waits for;
// the report's own text (an extension's dialog title) goes to Question,
// like the probe's dialogs, so reports to Herdr stay short and ours.
func programStatusLabel(kind string) string {
	switch kind {
	case "permission":
		return "waiting for your permission"
	case "question":
		return "waiting for your answer"
	case "auth":
		return "waiting for you to log in"
	}
	return defaultBlockedMessage
}

// recompute derives the reported state and queues a transition when it
// changed.
func (m *Machine) recompute(now time.Time, cause string) {
	relabelled := m.relabelled
	m.relabelled = false
	activity, source := m.activityLocked()
	to := activity
	if len(m.reasons) > 0 {
		to = Blocked
		relabelled = m.reopenLocked() || relabelled
	} else {
		m.opener = nil
	}
	if to == Unknown {
		if m.reported == Unknown {
			return
		}
		// The last reason closed before the activity was known: nothing
		// says busy.
		to = Idle
	}
	if to == m.reported {
		if to == Blocked && relabelled && m.opener.Message() != m.message {
			op := *m.opener
			m.message = op.Message()
			m.out = append(m.out, Event{Kind: EventRelabelled, At: now, To: Blocked, Message: m.message, Reason: &op, Cause: cause})
		}
		return
	}
	e := Event{Kind: EventTransition, At: now, From: m.reported, To: to, Cause: cause}
	if to == Blocked {
		op := *m.opener
		e.Reason = &op
		e.Message = op.Message()
		if e.Cause == "" {
			e.Cause = "open:" + op.Key
		}
	}
	if e.Cause == "" {
		e.Cause = source
	}
	m.reported, m.since, m.message = to, now, e.Message
	m.out = append(m.out, e)
}

// reopenLocked keeps the opener (the reason the blocked state is reported
// with) among the open reasons: when it closed while others stay open, the
// pane waits for those now, and the report names the oldest of them — the
// one the person has waited on longest, and the one that would have opened
// the state had the closed one never come. It says whether the opener
// moved; recompute reports the new message then, as for a relabel: the
// pane stays blocked, so it is no new transition and nothing to notify.
func (m *Machine) reopenLocked() bool {
	if m.opener != nil && slices.ContainsFunc(m.reasons, func(o Reason) bool { return o.Key == m.opener.Key }) {
		return false
	}
	op := m.reasons[0] // kept oldest first (step)
	m.opener = &op
	return true
}

// olderFirst orders reasons by when they opened, and of two opened in the
// same instant the first opened first.
func olderFirst(a, b Reason) int {
	if c := a.Since.Compare(b.Since); c != 0 {
		return c
	}
	return cmp.Compare(a.order, b.order)
}

// activityLocked ranks the signals that say working or idle; the first
// that knows decides, and the others only wait their turn:
//
//   - the probe, while connected: it is ours, it hears the agent's
//     lifecycle events themselves (Pi 0.73 too), and it knows what the
//     screen and the status channel cannot — the run's stop reason and the
//     sentinel's question. Pi derives its OSC 7501 reports from the same
//     events, so the two agree; letting one decide avoids two sources
//     racing over the same edge (the probe speaks over a socket, the
//     reports through the pty);
//   - Pi's own status channel (OSC 7501), once it reported: an explicit
//     event from the agent, immediate (a run's end alone waits for the
//     debounce, see ProgramStatus) and independent of how the screen is
//     drawn, so it beats guessing from the screen. It sends
//     reports only on change and some may be lost under an output flood,
//     so it is forgotten when bytes were dropped or Pi stopped reporting;
//   - the screen, always there as the fallback.
//
// While Pi compacts its context outside a run (Compaction), the probe
// hears nothing and steps aside for the others.
//
// An agent that quit (SessionShutdown) is idle until it exits, or starts
// a run, a session or a new probe: none of these decides then (see
// Machine.quit).
//
// The session file and the other reasons do not rank here: they open and
// close reasons, and any open reason makes the state blocked whatever the
// activity (a sentinel reply reads "done" on Pi's channel, and is blocked).
func (m *Machine) activityLocked() (State, string) {
	if m.probe && (!m.compacting || m.probeActivity == Working) {
		return m.probeActivity, "probe"
	}
	if m.quit {
		return Idle, "probe:session_shutdown"
	}
	if m.programActivity != Unknown {
		return m.programActivity, "program-status:" + m.program.State
	}
	if !m.probeGoneUntil.IsZero() {
		return m.probeActivity, "probe:gone"
	}
	if m.rawScreen.Rule != "" && m.screenActivity == m.rawScreen.State {
		return m.screenActivity, "screen:" + m.rawScreen.Rule
	}
	return m.screenActivity, "screen"
}

// Snapshot is the machine's state for `herdr-pi status`.
type Snapshot struct {
	State State `json:"state"`
	// Message is what the state is reported with: while blocked, the
	// message of the reason Reported names.
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since"`
	// Reported is, while blocked, the key of the open reason the report
	// names: the one that opened the blocked state, or once that closed,
	// the oldest still open. "" otherwise.
	Reported string `json:"reported,omitempty"`
	// Reasons are the open reasons, oldest first.
	Reasons []Reason `json:"reasons"`
	// Activity is working or idle regardless of reasons, and who decided it.
	Activity       State  `json:"activity"`
	ActivitySource string `json:"activity_source"`
	// Screen is the latest screen verdict, confirmed or not.
	Screen         Verdict `json:"screen"`
	ProbeConnected bool    `json:"probe_connected"`
	RunActive      bool    `json:"run_active"`
	// ProgramStatus is the agent's last report on its status channel, while
	// it counts.
	ProgramStatus *ProgramStatus `json:"program_status,omitempty"`
}

// Snapshot returns the current state.
func (m *Machine) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	activity, source := m.activityLocked()
	snap := Snapshot{
		State: m.reported, Message: m.message, Since: m.since,
		Reasons:  slices.Clone(m.reasons),
		Activity: activity, ActivitySource: source,
		Screen: m.rawScreen, ProbeConnected: m.probe, RunActive: m.runActive,
	}
	if m.reported == Blocked && m.opener != nil {
		snap.Reported = m.opener.Key
	}
	if m.program.State != "" {
		p := m.program
		snap.ProgramStatus = &p
	}
	return snap
}
