// Package procstat reads the few fields herdr-pi needs from a Linux
// process's /proc/<pid>/stat line (or a thread's). It is the one parser of
// that line: the command name sits in parentheses and may itself hold
// spaces and ") ", so the fields are counted from the last ')' and only
// from there, a rule easy to get wrong in each copy. It reads; it never
// scans /proc.
package procstat

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Stat holds the fields of a stat line that herdr-pi uses (proc(5) names
// them state, ppid, pgrp, session, tty_nr, tpgid and starttime).
type Stat struct {
	State   byte   // 'R', 'S', 'D', 'T', 't', 'Z', …
	PPID    int    // the parent
	PGRP    int    // the process group
	Session int    // the session
	TTYNr   uint64 // the controlling terminal, in the kernel's encoding; 0 for none
	TPGID   int    // the terminal's foreground group; -1 for none
	Start   uint64 // clock ticks after boot: with the pid, one process, never its reuse
	// Fields counts the fields after the name that were read, the state
	// being the first: a line cut short, or one whose field does not
	// parse, stops there, and the fields from there on are zero. A
	// caller checks Fields before it trusts a zero (Start needs 20).
	Fields int
}

// Field positions after the name, the state being 0.
const (
	fieldState = iota
	fieldPPID
	fieldPGRP
	fieldSession
	fieldTTYNr
	fieldTPGID
	fieldStart = 19
)

// Parse reads a stat line. ok is false when the line has no ')' to end
// a name; a line that ends early leaves the later fields zero (see
// Fields). It never keeps line.
func Parse(line []byte) (st Stat, ok bool) {
	i := bytes.LastIndexByte(line, ')')
	if i < 0 {
		return Stat{}, false
	}
	rest := line[i+1:]
	for n := 0; n <= fieldStart; n++ {
		var f []byte
		if f, rest = nextField(rest); f == nil {
			break
		}
		var err error
		switch n {
		case fieldState:
			st.State = f[0]
		case fieldPPID:
			st.PPID, err = strconv.Atoi(string(f))
		case fieldPGRP:
			st.PGRP, err = strconv.Atoi(string(f))
		case fieldSession:
			st.Session, err = strconv.Atoi(string(f))
		case fieldTTYNr:
			st.TTYNr, err = strconv.ParseUint(string(f), 10, 32)
		case fieldTPGID:
			st.TPGID, err = strconv.Atoi(string(f))
		case fieldStart:
			st.Start, err = strconv.ParseUint(string(f), 10, 64)
		}
		if err != nil {
			break
		}
		st.Fields = n + 1
	}
	return st, true
}

// nextField is the first field of b, split on ASCII white space, and
// what follows it; nil when b holds none.
func nextField(b []byte) (field, rest []byte) {
	start := 0
	for start < len(b) && isSpace(b[start]) {
		start++
	}
	if start == len(b) {
		return nil, nil
	}
	end := start
	for end < len(b) && !isSpace(b[end]) {
		end++
	}
	return b[start:end], b[end:]
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// ErrMalformed is Read's error for a stat line without a name's ')'.
var ErrMalformed = errors.New("malformed stat line")

// Read reads /proc/<pid>/stat; the error is the open's or read's (a
// process that is gone: ENOENT or ESRCH), or ErrMalformed.
func Read(pid int) (Stat, error) {
	return ReadPath("/proc/" + strconv.Itoa(pid) + "/stat")
}

// ReadTask reads /proc/<pid>/task/<tid>/stat, one thread's line.
func ReadTask(pid, tid int) (Stat, error) {
	return ReadPath("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/stat")
}

// pathError copies path: the error is the rare case, and a path that
// stays on the caller's stack (a thread's, built per read) then need not
// go to the heap on every read.
func pathError(op, path string, err error) error {
	return &os.PathError{Op: op, Path: strings.Clone(path), Err: err}
}

// ReadPath reads the stat line at path: a caller that already holds the
// path (a thread found by its task directory's name) saves building it.
// The line is read into a buffer on the stack, large enough for a whole
// line (52 fields of at most 20 digits and a name of at most 64 bytes),
// so the line costs no allocation.
func ReadPath(path string) (Stat, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Stat{}, pathError("open", path, err)
	}
	defer unix.Close(fd)
	var buf [2048]byte
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return Stat{}, pathError("read", path, err)
		}
		if m <= 0 {
			break
		}
		n += m
		if buf[n-1] == '\n' {
			break // the whole line: the kernel writes it in one read, so no read for the end
		}
	}
	st, ok := Parse(buf[:n])
	if !ok {
		return Stat{}, ErrMalformed
	}
	return st, nil
}
