package observe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/pane/state"
	"github.com/herdr-pi/herdr-pi/settings"
)

// Trace appends one JSON object per state event to a file (HERDR_PI_TRACE):
// a debugging aid (docs/detect.md), and how the end-to-end tests and the
// demo watch the state machine from outside the process.
//
// A trace left on for days stays bounded: past traceMaxBytes it moves to
// name.1 (replacing the last one) and starts again, keeping the newest
// events, as the log does.
type Trace struct {
	mu    sync.Mutex
	w     io.WriteCloser // nil once the trace could not start again
	path  string
	size  int64 // bytes in the file w writes to
	start time.Time
}

// traceMaxBytes is the size past which the trace starts a new file.
const traceMaxBytes = 16 << 20

// OpenTrace opens (creating, 0600) the trace file for appending. Only a
// regular file (after symlinks) is a trace: opening a FIFO with no reader
// would hold wrap before the agent starts, with the signals that could end
// it held too; a terminal would get the JSON lines drawn over the very
// screen being watched. Anything else is an error that says what the path
// is and how to fix it; the caller runs without a trace. What another
// user put at the path (a symlink, a file) is refused too (see below).
func OpenTrace(path string) (*Trace, error) {
	// Stat first, so a device is never even opened (opening some has side
	// effects); the fstat after the open closes the race with a swap.
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Made by the open below (unless a link to nowhere is in the way,
		// which theirs checks).
	case err != nil:
		return nil, err
	default:
		if reason := notTraceFile(fi.Mode()); reason != "" {
			return nil, fmt.Errorf("%s: %s", path, reason)
		}
	}
	// A symlink leads the trace only when it is ours: in a shared
	// directory (/tmp/trace.jsonl) another user's would lead it into any
	// file of ours, or make one where it points. A path that is no
	// symlink now is opened without following one, so a link put there
	// after this look is refused, not followed.
	flags := unix.O_WRONLY | unix.O_APPEND | unix.O_CREAT | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		if owner := fileOwner(li); owner != os.Getuid() {
			return nil, fmt.Errorf("%s: is a symlink of uid %d, not yours, which herdr-pi does not follow%s", path, owner, notOursFix)
		}
	} else {
		flags |= unix.O_NOFOLLOW
	}
	// O_NONBLOCK: should a FIFO be swapped in after the stat, the open
	// fails at once (ENXIO) instead of waiting for a reader. On a regular
	// file it changes nothing.
	fd, err := unix.Open(path, flags, 0o600)
	if errors.Is(err, unix.ELOOP) && flags&unix.O_NOFOLLOW != 0 {
		return nil, fmt.Errorf("%s: a symlink was put there while herdr-pi opened it, and herdr-pi does not follow it%s", path, notOursFix)
	}
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
	// Another user's file (one open to all, in /tmp) would hand them
	// the trace, the agent's questions included.
	if owner := fileOwner(fi); owner != os.Getuid() {
		f.Close()
		return nil, fmt.Errorf("%s: belongs to uid %d, not to you, who would read the trace%s", path, owner, notOursFix)
	}
	return &Trace{w: f, path: path, size: fi.Size(), start: time.Now()}, nil
}

// notOursFix is the way out of a trace path another user holds: in a
// sticky directory only they (or root) may remove what is there.
const notOursFix = "; name a file in a directory only you can write (it is created), or unset HERDR_PI_TRACE"

// fileOwner is fi's uid; our own when it cannot be read.
func fileOwner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return os.Getuid()
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
	if t.w == nil {
		return
	}
	n, _ := t.w.Write(append(line, '\n'))
	if t.size += int64(n); t.size > traceMaxBytes {
		t.rotate()
	}
}

// rotate moves the full trace to name.1 and opens name anew, with the
// same checks as the first open. Should either fail, the trace stops
// rather than grow on.
func (t *Trace) rotate() {
	_ = t.w.Close()
	t.w = nil
	if os.Rename(t.path, t.path+".1") != nil {
		return
	}
	if next, err := OpenTrace(t.path); err == nil {
		t.w, t.size = next.w, next.size
	}
}

// Close closes the file.
func (t *Trace) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w != nil {
		_ = t.w.Close()
		t.w = nil
	}
}
