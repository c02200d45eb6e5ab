package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// LeaseFile is the owner lease's name inside a session's runs directory.
const LeaseFile = "owner.json"

// Lease is the owner.json lease of a parent Pi session: the process that
// owns every run of that session. It proves an owner is alive; it names no
// run and offers no channel to it.
type Lease struct {
	Path      string
	PID       int
	Token     string
	StartedAt float64 // ms; on Linux the ctime of /proc/<pid> when taken
}

// ReadLease reads <runsDir>/owner.json. A missing file is (nil, nil): the
// owner exited cleanly or never existed. Content the engine would reject
// (pid not a positive integer, empty token, startedAt not a finite
// number) is a *FileError.
func ReadLease(runsDir string) (*Lease, error) {
	path := filepath.Join(runsDir, LeaseFile)
	data, err := readRegular(path, maxLeaseSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l, err := DecodeLease(data)
	if err != nil {
		return nil, &FileError{Path: path, Problem: "invalid owner lease (" + err.Error() + "): cannot tell whether the Pi that owns these runs still runs; `--inspect` opens a fork of the attempt regardless", Err: err}
	}
	l.Path = path
	return l, nil
}

// DecodeLease checks a lease the way the engine's decoder does
// (reference §1.3).
func DecodeLease(data []byte) (*Lease, error) {
	// Raw values: json.Number would also take a quoted "7", which the
	// engine rejects.
	var raw struct {
		PID       json.RawMessage `json:"pid"`
		Token     *string         `json:"token"`
		StartedAt json.RawMessage `json:"startedAt"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, describeJSONError(err)
	}
	if isAbsent(raw.PID) {
		return nil, errors.New("no pid")
	}
	pid, err := strconv.Atoi(string(raw.PID))
	if err != nil || pid <= 0 {
		return nil, fmt.Errorf("pid %s is not a positive integer", raw.PID)
	}
	if raw.Token == nil || *raw.Token == "" {
		return nil, errors.New("no token")
	}
	if isAbsent(raw.StartedAt) {
		return nil, errors.New("no startedAt")
	}
	started, err := strconv.ParseFloat(string(raw.StartedAt), 64)
	if raw.StartedAt[0] == '"' || err != nil || math.IsInf(started, 0) || math.IsNaN(started) {
		return nil, fmt.Errorf("startedAt %s is not a finite number", raw.StartedAt)
	}
	return &Lease{PID: pid, Token: *raw.Token, StartedAt: started}, nil
}

func isAbsent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// Alive tests the owner exactly as the engine does (reference §1.3):
// kill(pid, 0) failing with ESRCH means dead, any other outcome goes on;
// on Linux /proc/<pid> must exist and its ctime must not be later than
// startedAt, else the pid was reused by another process.
func (l *Lease) Alive() bool {
	if l == nil {
		return false
	}
	if err := unix.Kill(l.PID, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	if runtime.GOOS != "linux" {
		return true
	}
	ctime, err := procCtimeMs(l.PID)
	if err != nil {
		// Only ENOENT means dead to the engine; anything else keeps the
		// owner alive, as a lease that cannot be disproved still holds.
		return !errors.Is(err, fs.ErrNotExist)
	}
	return !(ctime > l.StartedAt)
}

// procCtimeMs is /proc/<pid>'s ctime in ms, computed as Node computes
// ctimeMs (seconds·1e3 + nanoseconds/1e6 in float64), so a lease written
// by the same process compares equal.
func procCtimeMs(pid int) (float64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid), &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: "/proc/" + strconv.Itoa(pid), Err: err}
	}
	return float64(st.Ctim.Sec)*1e3 + float64(st.Ctim.Nsec)/1e6, nil
}
