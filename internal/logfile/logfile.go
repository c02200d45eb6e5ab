// Package logfile is herdr-pi's diagnostic log: one file in the private
// state directory that every herdr-pi process (a wrapper in every pane, the
// short commands) appends to and rotates. It never writes anywhere else: a
// log that cannot be opened drops its lines, so nothing it is told ever
// reaches the wrapped agent's screen.
//
// Lines are one write(2) each with O_APPEND, so processes never interleave
// within a line. Rotation is coordinated through flock(2) on a lock file
// beside the log: writers hold it shared while they check that their file is
// still the current one and append; the rotator holds it exclusively while
// it renames. So no line ever lands in a file after a newer one has
// started, and only generations beyond Keep are ever dropped.
package logfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Defaults for [Options].
const (
	DefaultName     = "herdr-pi.log"
	DefaultMaxBytes = 4 << 20
	DefaultKeep     = 1
	// MaxLineBytes bounds one line; the rest is cut and counted.
	MaxLineBytes = 16 << 10
)

// Options say where the log is and how it behaves.
type Options struct {
	// Dir holds the log (the XDG state directory); it is created 0700.
	Dir string
	// Name is the file name in Dir (default herdr-pi.log).
	Name string
	// Tag names the command in every line ("wrap", "notify").
	Tag string
	// Debug lets Debugf lines through.
	Debug bool
	// MaxBytes is the size past which the file is rotated (default 4 MiB).
	MaxBytes int64
	// Keep is how many rotated generations (name.1 … name.Keep) are kept
	// (default 1).
	Keep int
}

// Logger appends lines to the log. Its methods are safe for concurrent use
// and on a nil *Logger (they do nothing).
type Logger struct {
	opts Options
	path string

	mu sync.Mutex
	// on is set while the log is open; lines are dropped otherwise.
	on bool
	// f is the file we append to; nil while it cannot be reopened after a
	// rotation (each line tries again).
	f    *os.File
	lock *os.File // the lock file; nil when it could not be opened
}

// Open opens (creating it 0600 in a 0700 directory) the log. It never
// fails: a log that cannot be opened, or that is not a regular file (a
// symlink to a terminal, a FIFO), makes a Logger that drops every line.
func Open(opts Options) *Logger {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	l := &Logger{opts: opts, path: filepath.Join(opts.Dir, opts.Name)}
	if opts.Dir == "" || os.MkdirAll(opts.Dir, 0o700) != nil {
		return l
	}
	if fd, err := unix.Open(l.path+".lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600); err == nil {
		l.lock = os.NewFile(uintptr(fd), l.path+".lock")
	}
	l.f = openLog(l.path)
	l.on = l.f != nil
	return l
}

// openLog opens the log for appending. O_NOFOLLOW and the regular-file
// check keep a symlink or device put in its place (/dev/tty, say) from
// ever receiving a line; O_NONBLOCK keeps a FIFO from blocking the open.
func openLog(path string) *os.File {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0o600)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil
	}
	if fi.Mode().Perm() != 0o600 {
		_ = f.Chmod(0o600) // a file we made looser earlier, or restored from a backup
	}
	return f
}

// Path is the log file's path ("" for a nil Logger or one without a
// directory).
func (l *Logger) Path() string {
	if l == nil || l.opts.Dir == "" {
		return ""
	}
	return l.path
}

// Printf logs one line.
func (l *Logger) Printf(format string, args ...any) { l.write("info", format, args...) }

// Debugf logs one line when debug logging is on.
func (l *Logger) Debugf(format string, args ...any) {
	if l != nil && l.opts.Debug {
		l.write("debug", format, args...)
	}
}

// Close closes the files. Later lines are dropped.
func (l *Logger) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
	if l.lock != nil {
		_ = l.lock.Close()
		l.lock = nil
	}
}

func (l *Logger) write(level, format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.on {
		return
	}
	// The message is escaped whole: values from the environment, flags and
	// agents (a pane id with ESC or a newline) can neither forge a line nor
	// put terminal controls into a file people cat.
	line := fmt.Sprintf("%s %s pid=%d %s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), level, os.Getpid(),
		Escape(clip(l.opts.Tag+": "+fmt.Sprintf(format, args...))))

	// Without the shared lock (another process holds the exclusive one
	// too long: stopped with Ctrl-Z mid-rotation, say) the line is written
	// anyway. That is still safe: while that lock is held nobody else can
	// rotate, so the line lands in a file that is kept.
	locked := l.flock(unix.LOCK_SH)
	size := l.followRotation()
	if l.f != nil {
		n, _ := l.f.WriteString(line)
		size += int64(n) // others may have appended too: the rotation re-checks
	}
	if locked {
		l.flock(unix.LOCK_UN)
	}
	if size > l.opts.MaxBytes {
		l.rotate()
	}
}

// followRotation reopens the log when the file at its path is no longer
// the one we hold (another process rotated it), and returns the size of the
// file it holds then. Called with the lock held (shared or exclusive), so
// no rotation can happen until the write is done.
func (l *Logger) followRotation() int64 {
	cur, err := os.Stat(l.path)
	if err == nil && l.f != nil {
		if held, err := l.f.Stat(); err == nil && os.SameFile(cur, held) {
			return held.Size()
		}
	}
	if l.f != nil {
		_ = l.f.Close()
	}
	l.f = openLog(l.path)
	if l.f != nil {
		if fi, err := l.f.Stat(); err == nil {
			return fi.Size()
		}
	}
	return 0
}

// rotate renames the log to name.1 (shifting older generations up, the
// oldest beyond Keep dropped) unless another process already did, and
// starts a new file.
func (l *Logger) rotate() {
	if l.lock != nil && !l.flock(unix.LOCK_EX) {
		return // busy for too long: the next line over the limit tries again
	}
	defer l.flock(unix.LOCK_UN)
	// Re-check under the exclusive lock: the file over the limit may have
	// been rotated by another process between our write and now.
	if fi, err := os.Lstat(l.path); err == nil && fi.Size() > l.opts.MaxBytes {
		for k := l.opts.Keep - 1; k >= 1; k-- {
			_ = os.Rename(l.generation(k), l.generation(k+1))
		}
		_ = os.Rename(l.path, l.generation(1))
	}
	l.followRotation()
}

func (l *Logger) generation(k int) string { return l.path + "." + strconv.Itoa(k) }

// Locking waits at most about lockWait: a process stopped while it holds
// the lock (Ctrl-Z stops the wrapper with its agent) must not stall the
// logging of every other wrapper.
const (
	lockWait  = 20 * time.Millisecond
	lockPause = 200 * time.Microsecond
)

// flock takes (LOCK_SH, LOCK_EX) or releases (LOCK_UN) the lock file and
// reports whether it holds it now. Without a lock file (it could not be
// created) this process still rotates correctly on its own.
func (l *Logger) flock(how int) bool {
	if l.lock == nil {
		return false
	}
	fd := int(l.lock.Fd())
	if how == unix.LOCK_UN {
		_ = unix.Flock(fd, how)
		return false
	}
	for waited := time.Duration(0); ; waited += lockPause {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		switch {
		case err == nil:
			return true
		case err == syscall.EINTR:
			continue
		case err != unix.EWOULDBLOCK || waited >= lockWait:
			return false
		}
		time.Sleep(lockPause)
	}
}

// clip cuts a message longer than MaxLineBytes, saying how much was cut.
func clip(s string) string {
	if len(s) <= MaxLineBytes {
		return s
	}
	n := MaxLineBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // cut before a character, not inside one
	}
	return fmt.Sprintf("%s… (%d more bytes cut)", s[:n], len(s)-n)
}

// Escape makes text safe to be one line of a log: every byte that is not a
// printable character (control characters, invalid UTF-8) and every
// non-printing rune (bidirectional overrides, line separators) is written
// as a Go escape (\n, \x1b, \u202e). Backslashes stay as they are.
func Escape(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = fmt.Appendf(b, `\x%02x`, s[i])
		case r == ' ' || unicode.IsPrint(r):
			b = append(b, s[i:i+n]...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r < 0x100:
			b = fmt.Appendf(b, `\x%02x`, r)
		case r <= 0xffff:
			b = fmt.Appendf(b, `\u%04x`, r)
		default:
			b = fmt.Appendf(b, `\U%08x`, r)
		}
		i += n
	}
	return string(b)
}
