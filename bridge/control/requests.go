package control

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/termtext"
)

// WaitRequest is one `herdr-pi waiting start|stop`: open or close the wait
// "source:id". Label is what the pane shows while it is open.
type WaitRequest struct {
	Action string `json:"action"` // "start" or "stop"
	Source string `json:"source"`
	ID     string `json:"id"`
	Label  string `json:"label,omitempty"`
	// PID, on a start, is the process that holds the wait (`--pid`): the
	// wrapper closes the wait when it exits. Zero: no holder, the wait
	// stays open until its stop.
	PID int `json:"pid,omitempty"`
	// CallerPID is the pid of the process asking, as it sees itself:
	// when the wrapper's kernel credentials name it otherwise, the two
	// see pids in different namespaces and PID cannot be trusted.
	CallerPID int `json:"caller_pid,omitempty"`
}

// Wait actions.
const (
	WaitStart = "start"
	WaitStop  = "stop"
)

// Limits for wait fields: they become Herdr messages and status lines.
const (
	maxWaitKey   = 128
	maxWaitLabel = 200
)

// Key identifies the wait: "source:id", as for pi:waiting-for-user-input
// (see [WaitKey]).
func (w WaitRequest) Key() string { return WaitKey(w.Source, w.ID) }

// WaitKey names the wait (source, id) unambiguously as "source:id": a colon
// or percent sign in id is percent-escaped, so the last colon always starts
// the id and "a:b"+"c" never meets "a"+"b:c". Sources often hold a colon
// ("plan-md:request_user_input") and ids rarely do, so the usual keys read
// as they always did.
func WaitKey(source, id string) string {
	if strings.ContainsAny(id, ":%") {
		id = strings.NewReplacer("%", "%25", ":", "%3A").Replace(id)
	}
	return source + ":" + id
}

// Normalize trims the fields and checks them: a known action, a source and
// an id without control characters, a label that is printable after
// control characters are turned into spaces and cut to 200 characters, a
// holder pid only on a start and above 1 (pid 1 never exits).
// Its errors name the field only: the command, or the server's method,
// says where.
func (w WaitRequest) Normalize() (WaitRequest, error) {
	w.Action = strings.TrimSpace(w.Action)
	w.Source = strings.TrimSpace(w.Source)
	w.ID = strings.TrimSpace(w.ID)
	if w.Action != WaitStart && w.Action != WaitStop {
		return w, fmt.Errorf("action %q is neither start nor stop", Clip(w.Action))
	}
	for _, f := range []struct{ name, v string }{{"--source", w.Source}, {"--id", w.ID}} {
		switch {
		case f.v == "":
			return w, fmt.Errorf("%s is empty: give a short name for what waits (example: --source deploy-hook --id 42)", f.name)
		case len(f.v) > maxWaitKey:
			return w, fmt.Errorf("%s is longer than %d bytes: give a shorter one", f.name, maxWaitKey)
		case !utf8.ValidString(f.v) || !Printable(f.v):
			return w, fmt.Errorf("%s contains control characters or bidi controls: use printable text", f.name)
		}
	}
	switch {
	case w.PID != 0 && w.Action != WaitStart:
		return w, fmt.Errorf("--pid is for start only: a stop closes the wait whoever holds it")
	case w.PID < 0 || w.PID == 1:
		return w, badHolder(w.PID)
	}
	w.Label = cleanLabel(w.Label)
	return w, nil
}

// cleanLabel makes label safe to show: what may not reach a terminal
// ([termtext.Harmful]: control characters, invalid UTF-8, bidi controls)
// becomes spaces, runs of space collapse, the ends are trimmed, and it is
// cut to maxWaitLabel characters.
func cleanLabel(label string) string {
	var b strings.Builder
	n := 0
	space := false
	for _, r := range strings.ToValidUTF8(label, " ") {
		if termtext.Harmful(r) || unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		if n >= maxWaitLabel {
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Status is what `herdr-pi status` shows. The wrapper's state machine fills
// State and Reasons; the server adds WrapperPID, ProbeConnected, Build and
// Goroutines.
type Status struct {
	Agent string `json:"agent,omitempty"`
	// Label, Cwd and SessionName say which agent this is among the
	// person's others, as the wrapper's notifications name it: the pane's
	// label (`wrap --label`, or the title `herdr-pi open` gave it), the
	// wrapper's working directory (its base name is the project), and
	// the session's name (Pi's /name) as the probe last said it.
	// `herdr-pi notify` in the pane names the pane with them.
	Label       string `json:"label,omitempty"`
	Cwd         string `json:"cwd,omitempty"`
	SessionName string `json:"session_name,omitempty"`
	State       string `json:"state"` // idle | working | blocked | unknown
	// Message is what the state is reported to Herdr with: while blocked,
	// the label of the reason marked Reported.
	Message     string    `json:"message,omitempty"`
	Since       time.Time `json:"since,omitzero"`
	Reasons     []Reason  `json:"reasons"`
	SessionFile string    `json:"session_file,omitempty"`
	// ChildPID is the wrapped agent's pid.
	ChildPID int `json:"child_pid,omitempty"`
	// LastStopReason is how the agent's last reply ended (stop, length,
	// toolUse, error, aborted), and LastAborted whether its last run was
	// aborted (Escape), as the probe heard them; both clear when a run
	// starts. A live handoff reads them to tell the owner whether the
	// pane's turn was cut.
	LastStopReason string `json:"last_stop_reason,omitempty"`
	LastAborted    bool   `json:"last_aborted,omitempty"`
	// Runs counts the agent runs that settled since the wrapper started:
	// a run shorter than Herdr's report pacing never shows as working
	// there, and a live handoff still knows the pane's Pi worked.
	Runs           int  `json:"runs,omitempty"`
	WrapperPID     int  `json:"wrapper_pid"`
	ProbeConnected bool `json:"probe_connected"`
	// Build is the herdr-pi build the wrapper runs ([Build]): after an
	// upgrade, `status` tells a wrapper still running the old one.
	// Absent from wrappers older than the field.
	Build string `json:"build,omitempty"`
	// Goroutines is how many goroutines the wrapper runs: flat over a
	// long run (the soak test watches it), growing means a leak.
	Goroutines int `json:"goroutines,omitempty"`
	// HeapLiveKiB is the Go heap the last GC found reachable: with
	// Goroutines, what tells a leak from the runtime keeping memory it
	// freed (resident memory rises to the heap's peak and falls slowly).
	HeapLiveKiB int64 `json:"heap_live_kib,omitempty"`
	// Herdr says in a sentence how Herdr takes the wrapper's reports
	// (empty outside Herdr).
	Herdr string `json:"herdr,omitempty"`
	// HerdrReasserts counts the times Herdr dropped or cleared the
	// wrapper's report (its own detection, herdr#4020) and the wrapper
	// claimed the pane again.
	HerdrReasserts int `json:"herdr_reasserts,omitempty"`
	// Notifications says what each notification channel did so far, so a
	// channel that fails (an ntfy token refused, Herdr's toasts off) is
	// seen without reading the log; absent when notifications are off.
	Notifications []NotifyChannel `json:"notifications,omitempty"`
}

// NotifyChannel is one notification channel's record in [Status].
type NotifyChannel struct {
	// Channel is herdr, terminal or ntfy.
	Channel string `json:"channel"`
	// Sent counts sends that reached the channel (for Herdr, whatever it
	// answered), Failed the ones that did not.
	Sent   int `json:"sent"`
	Failed int `json:"failed"`
	// Last is the latest outcome: Herdr's reason, "written", "posted", or
	// the error; empty before the first send.
	Last string `json:"last,omitempty"`
	// Failing says the latest send failed.
	Failing bool `json:"failing,omitempty"`
	// Hint says why the latest notification did not reach the person and
	// what to change, when that is known.
	Hint string `json:"hint,omitempty"`
}

// Reason is one open reason the agent is blocked.
type Reason struct {
	// Kind says where it came from: sentinel, wait (herdr-pi waiting or
	// pi:waiting-for-user-input), herdr-blocked, pi-ask, permission,
	// ui-prompt.
	Kind  string    `json:"kind"`
	Key   string    `json:"key"`
	Label string    `json:"label,omitempty"`
	Since time.Time `json:"since,omitzero"`
	// HolderPID is the process that holds a wait opened with `waiting
	// start --pid`: the wait closes when it exits.
	HolderPID int `json:"holder_pid,omitempty"`
	// Reported marks, while blocked, the reason the report to Herdr names:
	// the one that opened the blocked state, or once that closed, the
	// oldest still open.
	Reported bool `json:"reported,omitempty"`
}

// ErrNoWrapper says no herdr-pi wrapper serves this pane.
var ErrNoWrapper = errors.New("no herdr-pi wrapper is running in this pane")
