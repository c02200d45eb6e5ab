package observe

import (
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/state"
)

// Trace appends one JSON object per state event to a file (HERDR_PI_TRACE):
// a debugging aid (docs/detect.md), and how the end-to-end tests and the
// demo watch the state machine from outside the process.
type Trace struct {
	mu    sync.Mutex
	w     io.WriteCloser
	start time.Time
}

// OpenTrace opens (creating, 0600) the trace file for appending.
func OpenTrace(path string) (*Trace, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &Trace{w: f, start: time.Now()}, nil
}

// TraceLine is one line of the trace: the event and its time since the
// trace opened.
type TraceLine struct {
	state.Event
	ElapsedMs float64 `json:"elapsed_ms"`
}

// Write appends e; it is a sink.
func (t *Trace) Write(e state.Event) {
	line, err := json.Marshal(TraceLine{Event: e, ElapsedMs: float64(e.At.Sub(t.start).Microseconds()) / 1000})
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = t.w.Write(append(line, '\n'))
}

// Close closes the file.
func (t *Trace) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = t.w.Close()
}
