package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/state"
)

// Event is one line of the timeline.
type Event struct {
	// T is seconds since the demo started.
	T float64 `json:"t"`
	// Source is "herdr" (a request herdr-pi sent to Herdr), "state" (a
	// decision of the state machine) or "you" (keys typed for you).
	Source string `json:"source"`
	Text   string `json:"text"`
	// Herdr requests.
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	// State events.
	Kind    string `json:"kind,omitempty"`
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Message string `json:"message,omitempty"`
	Cause   string `json:"cause,omitempty"`
	Outcome string `json:"outcome,omitempty"`

	at time.Time
}

// timeline collects events from three goroutines (the stand-in, the
// scripted person, the trace reader) and keeps them in time order: a state
// decision read from the trace file a moment late still lands before the
// report it caused.
type timeline struct {
	start time.Time
	mu    sync.Mutex
	ev    []Event
}

func (t *timeline) add(e Event) {
	if e.at.IsZero() {
		e.at = time.Now()
	}
	e.T = float64(e.at.Sub(t.start).Milliseconds()) / 1000
	t.mu.Lock()
	defer t.mu.Unlock()
	i := sort.Search(len(t.ev), func(i int) bool { return t.ev[i].at.After(e.at) })
	t.ev = append(t.ev, Event{})
	copy(t.ev[i+1:], t.ev[i:])
	t.ev[i] = e
}

func (t *timeline) events() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Event(nil), t.ev...)
}

// reached reports whether the state machine has reported `to`, n times.
func (t *timeline) reached(to string, n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.ev {
		if e.Source == "state" && e.To == to {
			if n--; n == 0 {
				return true
			}
		}
	}
	return false
}

// traceReader follows the HERDR_PI_TRACE file the wrapper writes: one JSON
// state event per line, appended as they happen. It is how the demo sees
// the wrapper's decisions without reaching into it.
type traceReader struct {
	path    string
	f       *os.File
	partial []byte
}

// read hands every complete line written since the last call to add; a
// line still being written waits for the next call.
func (r *traceReader) read(add func(state.Event)) {
	if r.f == nil {
		f, err := os.Open(r.path)
		if err != nil {
			return // the wrapper has not written anything yet
		}
		r.f = f
	}
	data, _ := io.ReadAll(r.f)
	r.partial = append(r.partial, data...)
	for {
		line, rest, ok := bytes.Cut(r.partial, []byte("\n"))
		if !ok {
			return
		}
		r.partial = rest
		var e state.Event
		if json.Unmarshal(line, &e) == nil {
			add(e)
		}
	}
}

func (r *traceReader) close() {
	if r.f != nil {
		r.f.Close()
	}
}

func herdrEvent(method string, params json.RawMessage) Event {
	var p map[string]any
	_ = json.Unmarshal(params, &p)
	e := Event{Source: "herdr", Method: method, Params: params}
	str := func(k string) string { s, _ := p[k].(string); return s }
	switch method {
	case "pane.report_agent":
		e.Text = fmt.Sprintf("report %s", str("state"))
		if m := str("message"); m != "" {
			e.Text += fmt.Sprintf(" (%q)", m)
		}
	case "pane.release_agent":
		e.Text = "release the pane"
	case "pane.get":
		e.Text = "read the pane back (did Herdr take the report?)"
	case "events.subscribe":
		e.Text = "follow the pane (to report again if Herdr restarts)"
	case "notification.show":
		e.Text = fmt.Sprintf("toast %q", str("title"))
		if b := str("body"); b != "" {
			e.Text += " · " + b
		}
	default:
		e.Text = method
	}
	return e
}

func stateEvent(se state.Event) Event {
	e := Event{Source: "state", Kind: string(se.Kind), From: string(se.From), To: string(se.To),
		Message: se.Message, Cause: se.Cause, Outcome: string(se.Outcome), at: se.At}
	switch se.Kind {
	case state.EventRunFinished:
		e.Text = fmt.Sprintf("run finished: %s", se.Outcome)
		return e
	case state.EventOpened, state.EventClosed, state.EventAsked:
		// A reason has no from and to: it is what a transition may follow.
		verb := "opened"
		switch se.Kind {
		case state.EventClosed:
			verb = "closed"
		case state.EventAsked:
			verb = "asks anew"
		}
		e.Text = "reason " + verb
		if r := se.Reason; r != nil {
			e.Text += " " + r.Key
			if r.Label != "" {
				e.Text += fmt.Sprintf(" (%q)", r.Label)
			}
		}
		return e
	case state.EventRelabelled:
		e.Text = fmt.Sprintf("still %s, relabelled (%q)  · %s", se.To, se.Message, se.Cause)
		return e
	}
	e.Text = fmt.Sprintf("%s → %s", se.From, se.To)
	if se.Message != "" {
		e.Text += fmt.Sprintf(" (%q)", se.Message)
	}
	e.Text += "  · " + se.Cause
	return e
}
