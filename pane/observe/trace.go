package observe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/pane/state"
	"github.com/herdr-pi/herdr-pi/settings"
)

// Trace appends one JSON object per state event to a file (HERDR_PI_TRACE):
// a debugging aid (docs/detect.md), and how the end-to-end tests and the
// demo watch the state machine from outside the process.
type Trace struct {
	mu    sync.Mutex
	w     io.WriteCloser
	start time.Time
}

// OpenTrace opens (creating, 0600) the trace file for appending. Only a
// regular file (after symlinks) is a trace: opening a FIFO with no reader
// would hold wrap before the agent starts, with the signals that could end
// it held too; a terminal would get the JSON lines drawn over the very
// screen being watched. Anything else is an error that says what the path
// is and how to fix it; the caller runs without a trace.
func OpenTrace(path string) (*Trace, error) {
	// Stat first, so a device is never even opened (opening some has side
	// effects); the fstat after the open closes the race with a swap.
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Made by the open below.
	case err != nil:
		return nil, err
	default:
		if reason := notTraceFile(fi.Mode()); reason != "" {
			return nil, fmt.Errorf("%s: %s", path, reason)
		}
	}
	// O_NONBLOCK: should a FIFO be swapped in after the stat, the open
	// fails at once (ENXIO) instead of waiting for a reader. On a regular
	// file it changes nothing.
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if reason := notTraceFile(fi.Mode()); reason != "" {
		f.Close()
		return nil, fmt.Errorf("%s: %s", path, reason)
	}
	return &Trace{w: f, start: time.Now()}, nil
}

// notTraceFile says why a file of mode m cannot take the trace, "" when it
// can (a regular file).
func notTraceFile(m fs.FileMode) string {
	const fix = "; the trace goes only to a regular file: name a file (it is created) or unset HERDR_PI_TRACE"
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "is a directory, not a file" + fix
	case m&fs.ModeCharDevice != 0:
		return "is a character device (a terminal would show the trace over the agent's screen), not a regular file" + fix
	}
	return "is " + settings.FileKind(m) + ", not a regular file" + fix
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
