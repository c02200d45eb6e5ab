// Package signals translates what the agent's side says — the probe's
// events and the `herdr-pi waiting` and `status` requests (bridge/control),
// the session file (pane/session) and Pi's own status reports (read off the
// output by pane/observe) — into the inputs of the one state machine
// (pane/state), and answers `status` from the machine.
//
// It decides nothing: it names the reasons, and keeps the counts and
// correlations their sources need (herdr:blocked and dialog stacks,
// permission prompts by request id). Signals combine in the machine; this
// package never reports, notifies or reads a file itself.
package signals

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/permissions"
	"github.com/herdr-pi/herdr-pi/pane/session"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// SentinelKey is the key of the one reason the :input_needed: marker opens.
const SentinelKey = "sentinel"

// Watcher is the part of the session file watcher the signals steer: the
// probe names the session file and its Pi's leaf in it, and a run's end
// asks for a fresh look.
type Watcher interface {
	Follow(path string)
	// Pin names the leaf of this pane's Pi and whether it runs (see
	// session.Watcher.Pin).
	Pin(leaf string, running bool)
	// Unpin returns to the file's last line: the probe that named the
	// leaf is gone, and its Pi may run on without it.
	Unpin()
	Poke()
}

// Config sets up [Signals].
type Config struct {
	// Machine receives the signals.
	Machine *state.Machine
	// Agent is the agent id `status` shows.
	Agent string
	// HerdrHealth says how Herdr takes the reports, for `status`; nil when
	// not in Herdr.
	HerdrHealth func() string
	// Logf gets a line for each session Pi starts (nil: none).
	Logf func(format string, args ...any)
	// SessionName hears the session's display name (Pi's /name, "" for
	// none) each time the probe says it — as a session starts and as each
	// run ends — before the event it came with reaches the machine, so a
	// notification that event causes already names it (nil: not heard).
	SessionName func(name string)
	// SessionStarted hears the session file of each session_start that
	// names one, before `status` shows it (nil: not heard).
	SessionStarted func(file string)
}

// Signals implements control.EventSink, control.Requests and session.Sink.
// Control calls it one at a time; the session watcher calls from its own
// goroutine, so its bookkeeping sits behind mu.
type Signals struct {
	m           *state.Machine
	agent       string
	herdrHealth func() string
	logf        func(format string, args ...any)
	sessionName func(string)
	started     func(string)
	childPID    atomic.Int64

	mu      sync.Mutex
	watcher Watcher
	// settles is false for a Pi without agent_settled (0.73.1): its
	// agent_end is the end of the run.
	settles     bool
	sessionFile string
	// running: the probe said a run started and it has not settled. The
	// file's word on the sentinel waits for the settle meanwhile (a reply
	// read before the run settles may not be its last); heldOpen says the
	// file said open then, held what it said.
	running      bool
	heldOpen     bool
	held         session.Sentinel
	perms        permissions.Tracker
	herdrBlocked []string       // open herdr:blocked reasons, oldest first
	uiPrompts    []state.Reason // Pi's open dialogs, oldest first
	// orphans are Pi's dialogs that were open when the probe lost its
	// connection, oldest first: the machine holds them open (HoldOpen)
	// until the probe, connected again, repeats those still open.
	orphans []state.Reason
	// awayWaits are the channel waits open when the probe lost its
	// connection; lapsed are the dialogs of orphans whose hold ended
	// before it came back, which its repeats may name (see SessionStart).
	awayWaits []state.Reason
	lapsed    []state.Reason
	// probePID is the pid of the latest probe connection; sessionPID and
	// sessionSeq say which Pi process started the session the wrapper
	// knows, and its count of sessions (control.SessionStart.SessionSeq).
	// A resync that repeats both is the same session of the same Pi: the
	// dialogs and channel waits it had open stay (see sameSession).
	probePID, sessionPID, sessionSeq int
	// probeConn is the latest probe connection (control.ProbeConnected.Conn).
	probeConn uint64
	seq       int
	// lastStop and lastAborted say how the last run ended, for `status`
	// (a live handoff asks the pane's wrapper whether its turn was cut).
	lastStop    string
	lastAborted bool
	runs        int
	// ended counts the runs of the session known here that the probe said
	// ended (control.RunEnd.Ended): a repeat that counts more says how one
	// ended while it could not.
	ended int
	// name is the session's display name as the probe last said it, for
	// `status`.
	name string
	// holders are the pids holding `waiting start --pid` waits, by reason
	// key, for `status` (the control server follows the processes).
	holders map[string]int
}

// New returns Signals feeding cfg.Machine.
func New(cfg Config) *Signals {
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	sessionName := cfg.SessionName
	if sessionName == nil {
		sessionName = func(string) {}
	}
	return &Signals{m: cfg.Machine, agent: cfg.Agent, herdrHealth: cfg.HerdrHealth, logf: logf, sessionName: sessionName, started: cfg.SessionStarted}
}

// SetWatcher hands over the session file watcher, once it runs.
func (s *Signals) SetWatcher(w Watcher) {
	s.mu.Lock()
	s.watcher = w
	s.mu.Unlock()
}

// SetChildPID records the agent's pid for `status`.
func (s *Signals) SetChildPID(pid int) { s.childPID.Store(int64(pid)) }

// AgentExited says the agent's process is gone (the pty saw its exit):
// the machine lets nothing come due from then on that only its absence
// explains (state.Machine.AgentExited) — its probe that never comes back,
// its screen gone still. It only takes a lock: the pty's copy loop calls
// it.
func (s *Signals) AgentExited() { s.m.AgentExited() }

func (s *Signals) next(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s#%d", prefix, s.seq)
}

// sentinel is the sentinel as the probe says it: the question, and the
// reply that asks by its entry id when the probe names it ("" when not).
func sentinel(question, entry string) state.Reason {
	return state.Reason{Key: SentinelKey, Kind: state.KindSentinel, Question: question, Entry: entry}
}

// fileSentinel is the sentinel as the session file says it: the reply that
// asks, by its entry id (the machine tells another reply's for a new
// question), and whether Pi wrote it while watched (news, see
// state.Reason.Live) or before (history, state.Reason.Old), without its
// text.
func fileSentinel(x session.Sentinel) state.Reason {
	r := sentinel("", x.EntryID)
	r.Live, r.Old = x.Live, x.Old
	return r
}

// ProbeEvent implements control.EventSink.
func (s *Signals) ProbeEvent(ev control.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.(type) {
	case control.UIPromptStart, control.AgentStart, control.CompactionStart:
	default:
		// The repeats of a return are over: a dialog now is a new one.
		s.lapsed = nil
	}
	switch e := ev.(type) {
	case control.ProbeConnected:
		s.probePID, s.probeConn = e.PID, e.Conn
		// Told first: a dialog already on screen is weighed with it.
		s.m.ProbeTellsDialogs(e.Dialogs)
		s.m.ProbeConnected(true)
	case control.ProbeDisconnected:
		if e.Conn != s.probeConn {
			// A connection the probe replaced, ending after its new one
			// spoke: what that one repeated stands.
			s.logf("probe: the end of replaced connection %d (pid %d) changes nothing", e.Conn, e.PID)
			return
		}
		// Pi is gone or lost its socket: nothing it opened can be closed by
		// it any more. The sentinel stays (the session file says it), and
		// what the file said during an unsettled run now counts.
		if s.running && s.heldOpen {
			s.m.Open(fileSentinel(s.held))
		}
		s.m.ProbeConnected(false)
		s.forgetProbeReasons()
		// Nothing names this Pi's leaf any more, and its Pi may run on:
		// the file's last line counts again, as without the probe.
		if s.watcher != nil {
			s.watcher.Unpin()
		}
	case control.SessionStart:
		s.logf("probe: session_start (%s, %s), session file %q, input needed %v", e.Reason, e.Mode, e.SessionFile, e.InputNeeded)
		s.settles = !e.ModeInferred // Pi 0.73.1: no ctx.mode, no agent_settled
		s.heardName(e.SessionName)
		if e.SessionFile != "" && s.started != nil {
			s.started(e.SessionFile)
		}
		s.sessionFile = e.SessionFile
		// A resync on the connection the probe has (it fell behind) finds
		// the dialogs still in uiPrompts: they are repeated all the same.
		orphans := append(s.orphans, s.uiPrompts...)
		s.orphans = nil
		awayWaits := s.awayWaits
		s.awayWaits = nil
		perms, herdrBlocked := s.perms.Pending(), s.herdrBlocked
		s.resetBookkeeping()
		var restore []state.Reason
		if e.InputNeeded {
			restore = append(restore, sentinel(e.Question, e.QuestionEntry))
		}
		same := s.sameSession(e)
		var late []state.Reason
		if same {
			// The same session, on a new connection: the dialogs it had
			// open stay so, and the repeat that follows this event takes
			// them over (no news); those it does not repeat closed while
			// the probe was away and close in a moment. The channel waits
			// stay as they are: the events the probe kept while away
			// follow and close those that closed meanwhile. Any other
			// session_start closes them all here: they were the old
			// session's, and what the new one has open it says.
			//
			// A probe back later than the hold (ProbeReturnGrace) finds
			// them closed: its repeats of a dialog it still has open
			// open it again (lapsed), and the channel waits open when it
			// left open again a moment after its return, unless the
			// events it kept close them first. The person was told of
			// them: no second notification.
			open := s.m.Snapshot().Reasons
			s.orphans = stillOurs(open, orphans) // their titles as the probe gave them
			s.lapsed = notOpen(open, orphans)
			kept := channelWaitsOf(open)
			late = notOpen(open, awayWaits)
			restore = append(append(restore, stillOpen(open, orphans)...), kept...)
			s.keepChannelBookkeeping(append(kept, late...), perms, herdrBlocked)
		}
		if same {
			// The same session: what the probe says it asks that the
			// wrapper never had open was asked while the probe was away,
			// and is news, and so is a run that ended meanwhile. Mid-run,
			// the run goes on (its agent_start follows), and the pane
			// stays working.
			s.m.SessionRepeated(e.Running, s.endedAway(e), restore...)
		} else if s.startedAway(e) {
			// Another session of the same Pi, one the wrapper never
			// heard start (a /new while the probe was away), in which a
			// run ended meanwhile: the question it asks was asked then,
			// not restored from its history.
			s.m.SessionStartedAway(restore...)
		} else {
			s.m.SessionStart(restore...)
		}
		s.ended = 0
		if e.LastRun != nil {
			s.ended = e.LastRun.Ended
		}
		s.sessionPID, s.sessionSeq = s.probePID, e.SessionSeq
		if len(s.orphans) > 0 {
			s.m.HoldOpen(keys(s.orphans), ReplayGrace)
		}
		if len(late) > 0 {
			s.m.OpenLater(late, ReplayGrace)
		}
		if s.watcher != nil && e.SessionFile != "" {
			s.watcher.Follow(e.SessionFile)
		}
		// A resync mid-run (running) has its agent_start follow, which
		// pins again.
		s.pin(e.LeafID)
	case control.SessionShutdown:
		if e.Reason == "quit" || e.Reason == "" {
			s.resetBookkeeping()
			s.m.SessionShutdown()
		} else {
			// reload, new, resume, fork: a session_start follows in this
			// Pi; the machine holds the old reasons until it comes. Its
			// dialogs are the probe's to close should the probe be lost
			// first (forgetProbeReasons): no session follows then.
			s.orphans = append(s.orphans, s.uiPrompts...)
			s.resetBookkeeping()
			s.m.SessionReplaced()
		}
	case control.AgentStart:
		s.running, s.heldOpen = true, false
		s.lastStop, s.lastAborted = "", false
		s.pin(e.LeafID)
		s.m.AgentStart()
	case control.SessionTree:
		// The person moved to another entry (/tree): the file read from
		// there says whether the question was left behind.
		s.pin(e.LeafID)
	case control.AgentEnd:
		s.heardName(e.SessionName)
		s.lastStop = e.StopReason
		s.lastAborted = s.lastAborted || e.StopReason == "aborted"
		s.m.AgentEnd(e.StopReason, e.ErrorMessage)
		if !s.settles {
			s.settle(e.InputNeeded, e.Question, e.QuestionEntry)
		}
		// After the settle of a Pi that does not settle later: its run is
		// over, and nothing more in the file is its.
		s.pin(e.LeafID)
		if s.watcher != nil {
			s.watcher.Poke()
		}
	case control.AgentSettled:
		s.heardName(e.SessionName)
		// A retry or a compaction the person cancelled is their abort
		// too, though Pi ends the run with the failed reply's stop reason,
		// error: the person pressed Escape and must not be told the run
		// failed.
		cancelled := e.Aborted || e.RetryCancelled || e.CompactionCancelled
		s.lastAborted = s.lastAborted || cancelled
		if cancelled {
			s.m.RunCancelled()
		}
		s.settle(e.InputNeeded, e.Question, e.QuestionEntry)
		s.pin(e.LeafID)
	case control.ChannelEventsLost:
		// The probe dropped channel events it kept for us: any channel
		// wait open now may have closed meanwhile. Closing them all is
		// what a lost probe did before it kept events; those still open
		// are on Pi's screen.
		s.logf("probe: %d channel events lost; closing the channel waits", e.Dropped)
		s.closeChannelWaits()
	case control.CompactionStart:
		s.m.Compaction(true)
	case control.CompactionEnd:
		s.m.Compaction(false)
	case control.UIPromptStart:
		// The title as Pi's status channel would report it, which may
		// come first or next and name the same dialog (see
		// state.ReportedTitle).
		title := state.ReportedTitle(e.Title)
		r := state.Reason{Key: s.next("ui_prompt"), Kind: state.KindUIPrompt, Label: "waiting for your answer", Question: title}
		if i := slices.IndexFunc(s.orphans, func(o state.Reason) bool { return o.Question == title }); i >= 0 {
			// The reconnected probe repeats a dialog that is open
			// still: the held one of its title, as the probe gave it
			// (Pi's status channel may have named it otherwise since).
			// Opening it again keeps it as it is. A title no held
			// dialog has is a dialog Pi opened while the probe was away
			// (another may have been answered meanwhile): news.
			r = s.orphans[i]
			s.orphans = slices.Delete(s.orphans, i, i+1)
		} else if i := slices.IndexFunc(s.lapsed, func(o state.Reason) bool { return o.Question == title }); i >= 0 {
			// The repeat of a dialog whose hold ended before the probe
			// came back: open again, told already.
			r = s.lapsed[i]
			r.Restored = true
			s.lapsed = slices.Delete(s.lapsed, i, i+1)
		}
		s.uiPrompts = append(s.uiPrompts, r)
		s.m.Open(r)
	case control.UIPromptEnd:
		if n := len(s.uiPrompts); n > 0 {
			s.m.Close(s.uiPrompts[n-1].Key)
			s.uiPrompts = s.uiPrompts[:n-1]
		}
	case control.WaitingForInput:
		key := "wait:" + e.Key()
		if e.Waiting {
			s.m.Open(state.Reason{Key: key, Kind: state.KindWait, Label: state.SentinelMessage})
		} else {
			s.m.Close(key)
		}
	case control.HerdrBlocked:
		// Herdr's own consumer counts: each active opens one, anything else
		// closes one (notifications-and-sentinel.md §8, §21).
		if e.Active {
			key := s.next("herdr:blocked")
			s.herdrBlocked = append(s.herdrBlocked, key)
			s.m.Open(state.Reason{Key: key, Kind: state.KindHerdrBlocked, Label: e.Label, Question: blockedQuestion(e.Label)})
		} else if n := len(s.herdrBlocked); n > 0 {
			s.m.Close(s.herdrBlocked[n-1])
			s.herdrBlocked = s.herdrBlocked[:n-1]
		}
	case control.AskStarted:
		s.m.Open(state.Reason{Key: "ask:" + e.FlowID, Kind: state.KindAsk, Label: e.Label(), Question: e.Label()})
	case control.AskCompleted:
		s.m.Close("ask:" + e.FlowID)
	case control.PermissionPrompt:
		if s.perms.Track(e.Prompt) {
			s.m.Open(state.Reason{Key: "permission:" + e.RequestID, Kind: state.KindPermission, Label: e.Label(), Question: e.Label()})
		}
	case control.PermissionDecision:
		if id, ok := s.perms.ResolveDecision(e.Decision); ok {
			s.m.Close("permission:" + id)
		}
	case control.PermissionForwarded:
		if id, ok := s.perms.ResolveForwarded(e.ForwardedDecision); ok {
			s.m.Close("permission:" + id)
		}
	}
}

// pin hands the probe's word on its Pi's leaf to the watcher, with
// whether that Pi runs now: another Pi continuing the same session file
// writes there too, and only this one's entries speak for this pane. A
// probe that names no leaf (nil) leaves the watcher as it is: on the
// file's last line, unless a leaf was named before in the same file.
func (s *Signals) pin(leaf control.Leaf) {
	if s.watcher != nil && leaf != nil {
		s.watcher.Pin(*leaf, s.running)
	}
}

// heardName takes the session's name the probe says: kept for `status`,
// and passed on to the notifications.
func (s *Signals) heardName(name string) {
	s.name = name
	s.sessionName(name)
}

// settle ends a run; a reply that asks for input opens the sentinel first,
// so the run's end already finds the agent blocked. The probe names the
// reply that asks (entry), and the machine keeps it: a reply told once is
// not told again when the branch comes back to it, and another reply is
// another question. From a probe that does not name it, the file's word
// held during the run names it (the watcher says it only once); it only
// names: the probe's word decides what is told, should the file's be out
// of date.
func (s *Signals) settle(inputNeeded bool, question, entry string) {
	held, heldOpen := s.held, s.heldOpen
	s.running, s.heldOpen = false, false
	s.runs++
	s.ended++
	if inputNeeded {
		s.m.Open(sentinel(question, entry))
		if heldOpen && entry == "" {
			s.m.Open(fileSentinel(held))
		}
	}
	s.m.AgentSettled()
}

// endedAway is how the session's latest run ended when the repeated
// session e says one ended that the wrapper did not hear end (nil
// otherwise), and `status` takes it as the last run. A repeat mid-run says
// nothing of a run that ended before it: the one under way goes on.
func (s *Signals) endedAway(e control.SessionStart) *state.RunEnd {
	end := e.LastRun
	if e.Running || end == nil || end.Ended <= s.ended {
		return nil
	}
	s.runs++
	s.lastStop = end.StopReason
	cancelled := end.Aborted || end.RetryCancelled || end.CompactionCancelled
	s.lastAborted = cancelled || end.StopReason == "aborted"
	return &state.RunEnd{StopReason: end.StopReason, Error: end.ErrorMessage, Cancelled: cancelled, Ago: endedAgo(end.EndedMsAgo)}
}

// endedAgo is the probe's word on how long before its return the run
// ended; 0 (at the return) when it says nothing usable. A day bounds it:
// the wrapper clamps the end to the run's start anyway.
func endedAgo(ms *float64) time.Duration {
	if ms == nil || math.IsNaN(*ms) || *ms <= 0 {
		return 0
	}
	return time.Duration(min(*ms, float64(24*time.Hour/time.Millisecond)) * float64(time.Millisecond))
}

// forgetProbeReasons holds open a while what only the probe could close:
// it comes back within a second. Pi's dialogs and the channel waits stay
// when it comes back as the same Pi in the same session (see sameSession):
// it then repeats the dialogs still open (see orphans) and sends what it
// heard on the channels while away. Whatever it does not come back for
// closes after ProbeReturnGrace, or at the session_start that says it is
// another.
func (s *Signals) forgetProbeReasons() {
	s.orphans = append(s.orphans, s.uiPrompts...)
	s.uiPrompts = nil
	s.awayWaits = channelWaitsOf(s.m.Snapshot().Reasons)
	held := append(keys(s.orphans), keys(s.awayWaits)...)
	if len(held) > 0 {
		s.m.HoldOpen(held, ProbeReturnGrace)
	}
	// The channel bookkeeping (herdr:blocked counts, permission prompts)
	// stays for the events the probe kept; the next session_start keeps
	// it or drops it.
	s.running, s.heldOpen = false, false
}

// channelKinds are the reasons other extensions open on Pi's bus, which
// only the probe hears closing.
var channelKinds = []state.Kind{state.KindWait, state.KindHerdrBlocked, state.KindAsk, state.KindPermission}

func channelWaitsOf(rs []state.Reason) []state.Reason {
	var out []state.Reason
	for _, r := range rs {
		if slices.Contains(channelKinds, r.Kind) {
			out = append(out, r)
		}
	}
	return out
}

// sameSession says whether a session_start is a resync (reason reconnect)
// of the session the wrapper knows, by the same Pi process: the one that
// started it (a new Pi has a new pid even in the same session) with the
// same count of sessions (a /new, /resume or /reload while the probe was
// away counts one more). Only then do Pi's dialogs and the channel waits
// open before it stay open. A probe that does not say its count (0)
// cannot say it is the same session, and keeps nothing: the probe the
// wrapper writes always counts, and taking an unknown session for the same
// one would keep a gone session's waits open, where the other mistake
// costs a dialog still open a close and a reopen.
func (s *Signals) sameSession(e control.SessionStart) bool {
	return e.Reason == control.ReasonReconnect && e.SessionSeq != 0 && e.SessionSeq == s.sessionSeq && s.probePID == s.sessionPID
}

// startedAway says whether a session_start is a resync (reason
// reconnect) by the Pi process the wrapper knows of a session it never
// heard start, where a run ended before the return (the probe's lastRun
// counts the runs of the current session only). A resync of a session
// another Pi started says nothing the wrapper can take as live.
func (s *Signals) startedAway(e control.SessionStart) bool {
	return e.Reason == control.ReasonReconnect && s.sessionPID != 0 && s.probePID == s.sessionPID &&
		!s.sameSession(e) && e.LastRun != nil && e.LastRun.Ended > 0
}

// keepChannelBookkeeping keeps the herdr:blocked count and the permission
// prompts of the channel waits kept open, so the events that follow close
// them as they would have.
func (s *Signals) keepChannelBookkeeping(kept []state.Reason, perms []permissions.Prompt, herdrBlocked []string) {
	isKept := func(key string) bool {
		return slices.ContainsFunc(kept, func(r state.Reason) bool { return r.Key == key })
	}
	for _, k := range herdrBlocked {
		if isKept(k) {
			s.herdrBlocked = append(s.herdrBlocked, k)
		}
	}
	for _, p := range perms {
		if isKept("permission:" + p.RequestID) {
			s.perms.Track(p)
		}
	}
}

// closeChannelWaits closes every channel wait and forgets its bookkeeping.
func (s *Signals) closeChannelWaits() {
	for _, k := range channelKinds {
		s.m.CloseKind(k)
	}
	s.perms = permissions.Tracker{}
	s.herdrBlocked = nil
}

// ProbeReturnGrace bounds how long Pi's dialogs and the channel waits stay
// open after the probe lost its connection without coming back (it redials within a second;
// the wrapper waits up to 10 s for a slow one's hello, and this is the
// machine's wait for a replaced session). ReplayGrace bounds how long
// they wait, once it is back, for it to repeat them: it does so right
// after its session_start, in the same write.
const (
	ProbeReturnGrace = state.DefaultReplaceGrace
	ReplayGrace      = state.AnswerGrace
)

func keys(rs []state.Reason) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Key
	}
	return out
}

// notOpen keeps the reasons of rs that open does not have (by key), in
// rs's order.
func notOpen(open, rs []state.Reason) []state.Reason {
	var out []state.Reason
	for _, r := range rs {
		if !slices.ContainsFunc(open, func(o state.Reason) bool { return o.Key == r.Key }) {
			out = append(out, r)
		}
	}
	return out
}

// stillOurs keeps the reasons of rs that open has too (by key), as rs
// has them, in rs's order.
func stillOurs(open, rs []state.Reason) []state.Reason {
	return slices.DeleteFunc(slices.Clone(rs), func(r state.Reason) bool {
		return !slices.ContainsFunc(open, func(o state.Reason) bool { return o.Key == r.Key })
	})
}

// stillOpen keeps the reasons of rs that open has (by key), in rs's order.
func stillOpen(open, rs []state.Reason) []state.Reason {
	var out []state.Reason
	for _, r := range rs {
		if i := slices.IndexFunc(open, func(o state.Reason) bool { return o.Key == r.Key }); i >= 0 {
			out = append(out, open[i])
		}
	}
	return out
}

func (s *Signals) resetBookkeeping() {
	s.running, s.heldOpen = false, false
	s.perms.Shutdown()
	s.perms = permissions.Tracker{}
	s.herdrBlocked, s.uiPrompts = nil, nil
}

// SessionFileRead records, for `status`, the session file the watcher
// found Pi writing when Pi runs without the probe (with the probe, its
// session_start names the file, and says Pi runs).
func (s *Signals) SessionFileRead(path string) {
	s.mu.Lock()
	s.sessionFile = path
	s.mu.Unlock()
}

// SessionSentinel implements session.Sink: the file says whether the last
// reply still waits for an answer. It agrees with the probe when both
// speak, and is the only word when Pi runs without the probe. While the
// probe's run has not settled, an open file waits for the settle, which
// says the same with the question (or for the probe to leave).
func (s *Signals) SessionSentinel(x session.Sentinel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case x.Open && s.running:
		s.heldOpen, s.held = true, x
	case x.Open:
		s.m.Open(fileSentinel(x))
	default:
		// The reply was answered (or the session moved to another
		// branch): the machine closes the sentinel when the agent is seen
		// working on the answer, so the pane goes from blocked straight to
		// working whichever of the file and the probe speaks first.
		s.heldOpen = false
		s.m.Answered(SentinelKey)
	}
}

// SessionRetryPending implements session.Sink: the file says whether the
// branch ends in a retry Pi left pending. Pi's status channel reports a
// retry the person cancelled on its countdown as error; the machine ends
// such a run as cancelled instead, while the probe is away (with it, the
// probe's agent_settled says retryCancelled, read off the same branch).
// ProgramStatus asks the watcher for a look at the run's end, so the word
// comes within the debounce the run's end is held.
func (s *Signals) SessionRetryPending(pending bool) {
	s.m.RetryPending(pending)
}

// ProgramStatus takes a report of Pi's own status channel (OSC 7501). How
// it ranks among the other signals is the machine's business (state's
// activityLocked); here, a report that may end a run — done, error, idle —
// also asks the session watcher for a look now: Pi wrote the reply before
// it settled, and the machine holds the run's idle for the debounce only,
// so a reply that asks for input must not wait for the watcher's next
// poll to turn the pane blocked.
func (s *Signals) ProgramStatus(p state.ProgramStatus) {
	s.m.ProgramStatus(p)
	switch p.State {
	case "done", "error", "idle":
		s.mu.Lock()
		w := s.watcher
		s.mu.Unlock()
		if w != nil {
			w.Poke()
		}
	}
}

// Wait implements control.Requests for `herdr-pi waiting start|stop`.
func (s *Signals) Wait(w control.WaitRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := "hook:" + w.Key()
	if w.Action == control.WaitStart {
		label := w.Label
		if label == "" {
			label = "waiting for " + w.Source
		}
		// The label given is what the script asks the person: its
		// notification names it, as a reply's names its question.
		s.m.Open(state.Reason{Key: key, Kind: state.KindHook, Label: label, Question: w.Label})
		s.setHolder(key, w.PID)
		return nil
	}
	s.m.Close(key)
	s.setHolder(key, 0)
	return nil
}

// setHolder records who holds the wait key: the latest start says (none
// without --pid), a stop clears it.
func (s *Signals) setHolder(key string, pid int) {
	if pid == 0 {
		delete(s.holders, key)
		return
	}
	if s.holders == nil {
		s.holders = map[string]int{}
	}
	s.holders[key] = pid
}

// Status implements control.Requests for `herdr-pi status`.
func (s *Signals) Status() control.Status {
	snap := s.m.Snapshot()
	s.mu.Lock()
	file, lastStop, lastAborted, runs, name := s.sessionFile, s.lastStop, s.lastAborted, s.runs, s.name
	holders := maps.Clone(s.holders)
	s.mu.Unlock()
	st := control.Status{
		Agent: s.agent, State: string(snap.State), Message: snap.Message, Since: snap.Since,
		SessionFile: file, ChildPID: int(s.childPID.Load()),
		LastStopReason: lastStop, LastAborted: lastAborted, Runs: runs, SessionName: name,
		Reasons: make([]control.Reason, 0, len(snap.Reasons)),
	}
	for _, r := range snap.Reasons {
		reason := control.Reason{Kind: statusKind(r.Kind), Key: r.Key, Label: r.Message(), Since: r.Since, Reported: r.Key == snap.Reported}
		if r.Kind == state.KindHook {
			reason.HolderPID = holders[r.Key]
		}
		st.Reasons = append(st.Reasons, reason)
	}
	if s.herdrHealth != nil {
		st.Herdr = s.herdrHealth()
	}
	return st
}

// blockedQuestion is what a herdr:blocked's notification names: its label,
// but for the sentinel integration's "input needed" (pi-herdr-integration
// mirrors a reply's question with it), which says nothing the title ("Pi
// needs your input") does not.
func blockedQuestion(label string) string {
	if label == state.SentinelMessage {
		return ""
	}
	return label
}

// statusKind names reason kinds the way `herdr-pi status` documents them.
func statusKind(k state.Kind) string {
	switch k {
	case state.KindHook:
		return "wait"
	case state.KindHerdrBlocked:
		return "herdr-blocked"
	case state.KindUIPrompt:
		return "ui-prompt"
	}
	return strings.ReplaceAll(string(k), "_", "-")
}
