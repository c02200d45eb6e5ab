package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Environment variables the wrapper gives its child, so `herdr-pi waiting`
// and the probe inside it find the control socket without the registry.
// A wrapper whose socket could not start gives EnvError instead (its pid
// and why, see the cmd's controlOff), never together with the other two:
// each names the wrapper nearest to the child.
const (
	EnvSocket = "HERDR_PI_CONTROL"
	EnvToken  = "HERDR_PI_CONTROL_TOKEN"
	EnvError  = "HERDR_PI_CONTROL_ERROR"
)

// Endpoint is how to reach one wrapper.
type Endpoint struct {
	Socket string `json:"socket"`
	Token  string `json:"token"`
	PID    int    `json:"pid"`
	// PaneID and HerdrSocket say which Herdr pane the wrapper runs in (for
	// people reading the file; the key already encodes them).
	PaneID      string    `json:"pane_id,omitempty"`
	HerdrSocket string    `json:"herdr_socket,omitempty"`
	Started     time.Time `json:"started,omitzero"`
	// Previous is the pane's entry this one replaced while its wrapper
	// still ran: a wrapper started inside another's agent (herdr-pi wrap
	// bash, then herdr-pi wrap pi in that shell) takes the pane over, and
	// the pane goes back to the outer one when it ends (see Register).
	Previous *Endpoint `json:"previous,omitempty"`
}

// EndpointFromEnv reads the endpoint a wrapper put into its child's
// environment; ok is false outside a wrapped child.
func EndpointFromEnv(get func(string) string) (Endpoint, bool) {
	e := Endpoint{Socket: get(EnvSocket), Token: get(EnvToken)}
	return e, e.Socket != "" && e.Token != ""
}

// Env is the environment entries that carry e to the child.
func (e Endpoint) Env() []string {
	return []string{EnvSocket + "=" + e.Socket, EnvToken + "=" + e.Token}
}

// Registry is the directory of per-pane files (one per running wrapper in
// a Herdr pane). It lives in the private runtime base, so the directory is
// 0700 and every file 0600.
type Registry struct{ Dir string }

// PaneKey names the registry file of a Herdr pane. Pane ids are only unique
// within one Herdr server, so the server's socket path is part of the key;
// hashing keeps the name short and free of path characters.
func PaneKey(herdrSocket, paneID string) string {
	h := sha256.Sum256([]byte(herdrSocket + "\x00" + paneID))
	return "pane-" + hex.EncodeToString(h[:12]) + ".json"
}

// maxPrevious bounds how many wrappers under the newest one an entry
// remembers: wrappers nested deeper than a person would stack them.
const maxPrevious = 8

// Register writes e under key and returns the function that removes it
// again. A wrapper that still runs in the pane is kept in e.Previous, and
// the entry goes back to it (or to the newest still running under it) when
// e unregisters: hooks of the pane then reach the outer wrapper again, not
// "no wrapper". Unregistering takes e out of the entry wherever it is in
// it: a newer wrapper of the pane may have replaced it, and that one must
// not hand the pane back to a wrapper that is gone.
//
// Both read the pane's entry and write it back, and so may other wrappers
// of the pane, in other processes, at the same instant: nested ones start
// one after the other, but they end together when their pane closes (each
// gets its hangup), and a script may start several at once. Each change
// happens under the registry's lock (see lock), so none is lost. A
// wrapper that cannot have the lock within lockWait goes on without it
// rather than hang: it registers or leaves unlocked, where a change of
// another wrapper of the pane at that same instant could be lost (it does
// not sweep then).
func (r Registry) Register(key string, e Endpoint) (unregister func(), err error) {
	for _, d := range []string{filepath.Dir(r.Dir), r.Dir} {
		if err := EnsurePrivateDir(d); err != nil {
			return nil, err
		}
	}
	path := filepath.Join(r.Dir, key)
	e.Previous = nil
	unlock, locked := r.lock(lockWait)
	defer unlock()
	if locked {
		r.sweepLocked()
	}
	if cur, err := r.read(path); err == nil {
		if prev, ok := running(cur, maxPrevious); ok && !prev.same(e) {
			e.Previous = &prev
		}
	}
	if err := r.write(path, e); err != nil {
		return nil, err
	}
	return func() {
		unlock, _ := r.lock(lockWait)
		defer unlock()
		cur, err := r.read(path)
		if err != nil {
			return
		}
		rest, found := without(&cur, e)
		if !found {
			return
		}
		if rest != nil {
			if live, ok := running(*rest, maxPrevious); ok {
				_ = r.write(path, live)
				return
			}
		}
		_ = os.Remove(path)
	}, nil
}

// lockWait bounds how long a wrapper waits for the registry's lock as it
// registers or leaves. A holder keeps it for the read and the write of a
// small file; only a process stopped while holding it (SIGSTOP, a
// debugger) keeps it longer, and a wrapper must not hang on that.
// (A variable, so a test can shorten it.)
var lockWait = 2 * time.Second

// lock takes the registry's lock, within wait, and returns the function
// that lets it go; locked is false when it could not be had (held for
// longer, or the directory cannot be opened), and unlock then does
// nothing. It is a LockDir on the registry's own directory.
func (r Registry) lock(wait time.Duration) (unlock func(), locked bool) {
	return LockDir(context.Background(), r.Dir, wait, 2*time.Millisecond, nil)
}

// without is the chain c with e's entry left out (c itself is not
// changed); found says whether e was in it.
func without(c *Endpoint, e Endpoint) (rest *Endpoint, found bool) {
	if c == nil {
		return nil, false
	}
	if c.same(e) {
		return c.Previous, true
	}
	under, found := without(c.Previous, e)
	if !found {
		return c, false
	}
	kept := *c
	kept.Previous = under
	return &kept, true
}

// same says whether e and o are one wrapper's entry.
func (e Endpoint) same(o Endpoint) bool { return e.PID == o.PID && e.Token == o.Token }

// running is the newest wrapper of e's chain (e, then what it replaced)
// that still runs, with only the running ones under it, at most depth;
// ok is false when none runs.
func running(e Endpoint, depth int) (Endpoint, bool) {
	for {
		if endpointAlive(e) {
			e.Previous = prune(e.Previous, depth-1)
			return e, true
		}
		if e.Previous == nil {
			return Endpoint{}, false
		}
		e = *e.Previous
	}
}

// prune is the part of a chain that still runs, at most depth long.
func prune(prev *Endpoint, depth int) *Endpoint {
	if prev == nil || depth <= 0 {
		return nil
	}
	e, ok := running(*prev, depth)
	if !ok {
		return nil
	}
	return &e
}

// write puts e at path whole: a reader sees the old entry or the new one.
func (r Registry) write(path string, e Endpoint) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	tmp, err := CreateTemp(r.Dir)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	defer tmp.Done()
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	// CreateTemp makes the file 0600; the rename makes it appear whole.
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

func (r Registry) read(path string) (Endpoint, error) {
	b, err := ReadPrivateFile(path, maxEntry)
	if errors.Is(err, fs.ErrNotExist) {
		return Endpoint{}, err
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("registry file %s: %w; remove it, then start the agent of that pane again under herdr-pi wrap (a wrapper writes its entry as a regular file)", path, err)
	}
	var e Endpoint
	if err := json.Unmarshal(b, &e); err != nil {
		return Endpoint{}, fmt.Errorf("registry file %s: %w", path, err)
	}
	return e, nil
}

// ErrStale says the registry named a wrapper that is gone; the entry was
// removed.
var ErrStale = errors.New("the wrapper registered for this pane is gone")

// Lookup returns the endpoint registered under key: the newest wrapper of
// the pane that still runs (one killed on top of another, so unable to
// give the pane back, is passed over and the entry rewritten). A missing
// entry is ErrNoWrapper; an entry none of whose wrappers runs is removed
// and reported as ErrStale (which also matches ErrNoWrapper). The rewrite
// and the removal wait for nothing: see tidy.
func (r Registry) Lookup(key string) (Endpoint, error) {
	if err := checkPrivate(r.Dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Endpoint{}, ErrNoWrapper
		}
		return Endpoint{}, err
	}
	path := filepath.Join(r.Dir, key)
	e, err := r.read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Endpoint{}, ErrNoWrapper
	}
	if err != nil {
		return Endpoint{}, err
	}
	live, ok := running(e, maxPrevious)
	if !ok || !live.same(e) {
		r.tidy(path)
	}
	if !ok {
		return Endpoint{}, fmt.Errorf("%w (pid %d): %w", ErrStale, e.PID, ErrNoWrapper)
	}
	return live, nil
}

// tidy rewrites the entry at path to its newest wrapper that still runs,
// or removes it when none does. It is read again under the registry's
// lock, so a wrapper that registered since the caller read it is kept;
// when the lock is busy the entry is left as it is, for the next look:
// someone is changing it right now.
func (r Registry) tidy(path string) {
	unlock, locked := r.lock(0)
	defer unlock()
	if !locked {
		return
	}
	e, err := r.read(path)
	if err != nil {
		return
	}
	live, ok := running(e, maxPrevious)
	switch {
	case !ok:
		_ = os.Remove(path)
	case !live.same(e):
		_ = r.write(path, live)
	}
}

// Entry is one registry file as found on disk.
type Entry struct {
	// File is the entry's path.
	File string
	// Endpoint is the newest of the entry's wrappers that still runs (see
	// Lookup), else the newest.
	Endpoint Endpoint
	// Alive says whether one of the entry's wrappers still runs (by its
	// run directory, see endpointAlive); when none does, it is stale.
	Alive bool
	// Err says why the file could not be read; Endpoint is then empty.
	Err error
}

// Entries lists every registry file, sorted by name. A missing registry
// directory has none; one that is not private is an error, as for Lookup.
func (r Registry) Entries() ([]Entry, error) {
	if err := checkPrivate(r.Dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(r.Dir, "pane-*.json"))
	if err != nil {
		return nil, err
	}
	entries := make([]Entry, 0, len(files))
	for _, f := range files {
		e, err := r.read(f)
		entry := Entry{File: f, Endpoint: e, Err: err}
		if live, ok := running(e, maxPrevious); err == nil && ok {
			entry.Endpoint, entry.Alive = live, true
		}
		entries = append(entries, entry)
	}
	return entries, nil
}

// endpointAlive says whether the wrapper of a registry entry still runs:
// by its run directory (the one holding its socket), as the run
// directories' sweep judges it, so an entry lives as long as its run
// directory and a wrapper in another pid namespace keeps its entry. A run
// directory that is gone was removed by its wrapper or swept as dead; only
// a socket outside any run directory goes by the entry's pid.
func endpointAlive(e Endpoint) bool { return WrapperAlive(filepath.Dir(e.Socket), e.PID) }

// WrapperAlive says whether the wrapper with pid, whose files are in dir,
// still runs: by dir's lock when dir is a run directory, as the sweep
// judges it (a pid alone may be another process's once a killed wrapper's
// pid is reused); gone when a run directory named dir no longer exists;
// else (dir "" or not a run directory) by the pid.
func WrapperAlive(dir string, pid int) bool {
	if dir != "" {
		if rd, ok := ReadRunDir(dir); ok {
			return rd.Alive
		}
		if _, named := runDirPID(filepath.Base(dir)); named {
			if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
				return false
			}
		}
	}
	return pid > 0 && ProcessAlive(pid)
}

// sweep removes the entries of wrappers that are gone (killed with
// SIGKILL, say, so they could not unregister). Every wrapper that
// registers sweeps, so stale entries live until the next wrapper starts in
// any pane, or until a lookup for their own pane. It happens under the
// registry's lock, and not at all when that is busy for longer than
// lockWait: an entry is read and removed while no wrapper registers.
func (r Registry) sweep() {
	unlock, locked := r.lock(lockWait)
	defer unlock()
	if locked {
		r.sweepLocked()
	}
}

// sweepLocked is sweep, with the registry's lock held. It also removes
// the temporary files of writers killed before their rename (see
// [SweepTemp]).
func (r Registry) sweepLocked() {
	SweepTemp(r.Dir, TempPattern)
	entries, _ := r.Entries()
	for _, e := range entries {
		if e.Err == nil && !e.Alive {
			_ = os.Remove(e.File)
		}
	}
}

// maxEntry bounds a registry entry: an endpoint and the short chain of
// the wrappers under it are well under a KiB.
const maxEntry = 64 << 10

// ReadPrivateFile reads the regular file at path, of at most max bytes,
// in one of herdr-pi's private directories (the pane registry, the
// ledger of what open opened), the way settings and session files are
// read: only a regular file, and never waiting on whatever stands there
// instead. A named pipe or a device put there by mistake is refused
// before it is opened; should one be swapped in after that look, the
// open (O_NONBLOCK) returns at once and fstat refuses it. A symlink is
// not followed: herdr-pi writes none there. The errors for those say
// what stands there without the path, which callers name; one for a
// missing file matches fs.ErrNotExist.
//
// A read leaves the file's access time as it was (O_NOATIME, where the
// kernel allows it: the file is ours): looking at a record is not using
// it. Cleaners of /tmp judge age by that time, and what herdr-pi keeps
// young it touches on purpose (fresh.go); a wrapper's hourly look at the
// ledger would otherwise keep every record in it young, those of panes
// long gone included.
func ReadPrivateFile(path string, max int64) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegularError(fi.Mode())
	}
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_CLOEXEC
	fd, err := unix.Open(path, flags|unix.O_NOATIME, 0)
	if errors.Is(err, unix.EPERM) {
		// Not our file after all (O_NOATIME is the owner's): read it as
		// any file, and the checks below say what it is.
		fd, err = unix.Open(path, flags, 0)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegularError(fi.Mode())
	}
	// The file may grow after the fstat: read one byte past the cap to see.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max || fi.Size() > max {
		return nil, fmt.Errorf("it is larger than the %d bytes such a file of herdr-pi's holds", max)
	}
	return b, nil
}

// notRegularError says what stands where a file herdr-pi wrote should be.
func notRegularError(m fs.FileMode) error {
	kind := "an unusual file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	case m&fs.ModeSymlink != 0:
		kind = "a symlink"
	}
	return errors.New("it is " + kind + ", not a regular file")
}
