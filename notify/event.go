package notify

import "fmt"

// Kind is what happened, as far as a notification cares.
type Kind int

// The kinds of event that notify.
const (
	// Finished: a run settled normally.
	Finished Kind = iota + 1
	// Failed: a run settled with an error or ran out of length.
	Failed
	// InputNeeded: the agent waits for the person (the :input_needed:
	// sentinel, a wait announced by a hook or another extension).
	InputNeeded
	// PermissionNeeded: a permission prompt waits for a decision.
	PermissionNeeded
	// AskStarted: a pi-ask flow waits for an answer.
	AskStarted
)

func (k Kind) String() string {
	switch k {
	case Finished:
		return "finished"
	case Failed:
		return "failed"
	case InputNeeded:
		return "input-needed"
	case PermissionNeeded:
		return "permission-needed"
	case AskStarted:
		return "ask-started"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Blocking reports whether the kind means the agent waits for the person.
func (k Kind) Blocking() bool { return k == InputNeeded || k == PermissionNeeded || k == AskStarted }

// Event is one thing to tell the person.
type Event struct {
	Kind Kind
	// Key identifies what the event is about — a run, a pi-ask flowId, a
	// permission requestId, a wait's source and id — so the same thing is
	// announced once (see [Notifier.Notify]). Empty: never de-duplicated.
	Key string
	// Label is an optional short name the person chose, such as the session
	// or a subagent name. Never put prompt, question, permission or command
	// text here: notifications leave the machine (ntfy) and show on screens
	// other people see.
	Label string
	// Question is what the agent asks (for the sentinel, the line of the
	// reply that asks, as the probe picks it; a pi-ask title, a permission
	// label). Its first line,
	// sanitised and cut to 120 code points, is shown by the on-screen
	// channels — Herdr's toast and the terminal — as the best peers do;
	// ntfy, which leaves the machine, never sends it.
	Question string
	// Error is, for Failed, why the run stopped as the agent said it
	// (raw: Pi's error message; empty when it said nothing). See
	// [ErrorLine] for what of it the channels show.
	Error string
}
