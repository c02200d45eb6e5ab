package commands

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/herdr-pi/herdr-pi/settings"
)

// logMaxBytes is where the log file rotates to herdr-pi.log.1.
const logMaxBytes = 4 << 20

// logger writes diagnostics to a private file in the XDG state directory.
// Nothing it writes may reach the agent's screen: when the file cannot be
// opened, lines are dropped, never sent to stderr.
type logger struct {
	mu    sync.Mutex
	w     io.WriteCloser
	path  string
	size  int64
	debug bool
	tag   string
}

// openLog opens (creating 0700/0600) the log file. level is "info" or
// "debug"; HERDR_PI_LOG=debug in env raises it.
func openLog(paths settings.Paths, env settings.Env, level, tag string) *logger {
	l := &logger{tag: tag, debug: level == "debug" || strings.EqualFold(env.Get("HERDR_PI_LOG"), "debug")}
	if strings.EqualFold(env.Get("HERDR_PI_LOG"), "off") {
		return l
	}
	if err := os.MkdirAll(paths.StateDir, 0o700); err != nil {
		return l
	}
	l.path = filepath.Join(paths.StateDir, "herdr-pi.log")
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return l
	}
	if fi, err := f.Stat(); err == nil {
		l.size = fi.Size()
	}
	l.w = f
	return l
}

// Printf logs one line.
func (l *logger) Printf(format string, args ...any) { l.write("info", format, args...) }

// Debugf logs one line when debug logging is on.
func (l *logger) Debugf(format string, args ...any) {
	if l.debug {
		l.write("debug", format, args...)
	}
}

func (l *logger) write(level, format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return
	}
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	line := fmt.Sprintf("%s %s pid=%d %s: %s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), level, os.Getpid(), l.tag, msg)
	n, _ := io.WriteString(l.w, line)
	l.size += int64(n)
	if l.size > logMaxBytes {
		l.rotateLocked()
	}
}

func (l *logger) rotateLocked() {
	_ = l.w.Close()
	l.w = nil
	_ = os.Rename(l.path, l.path+".1")
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		l.w, l.size = f, 0
	}
}

// Close flushes and closes the file.
func (l *logger) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != nil {
		_ = l.w.Close()
		l.w = nil
	}
}
