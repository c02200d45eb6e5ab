package control

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// RunConfig is what [Start] needs: where private runs live, which pane
// this is (for the registry), and who receives events and requests.
type RunConfig struct {
	// RuntimeBase is the parent of private per-run directories
	// (settings.Paths.RuntimeBase).
	RuntimeBase string
	// PaneID and HerdrSocket name the Herdr pane; with PaneID empty (not in
	// a complete Herdr environment) nothing is registered and only the
	// child's environment leads to the socket.
	PaneID      string
	HerdrSocket string
	Events      EventSink
	Requests    Requests
	Owner       OwnerSink // optional
	Handoffs    Handoffs  // optional
	Logf        func(format string, args ...any)
	// Keep, when set, names at every freshening pass (see fresh.go) more
	// files this run keeps young for cleaners of /tmp besides its own
	// directory and registry entry: the ledger records of what Herdr
	// holds open for this wrapper, whose format is not this package's.
	// It is called from the freshener's goroutine, an hour apart.
	Keep func() []string
}

// Run is one wrapper's control endpoint: its private directory (where the
// probe is written too), the socket, the token and the registry entry.
type Run struct {
	// Dir is the private 0700 directory of this run.
	Dir      string
	Endpoint Endpoint

	// Sharing is the wrapper that ran in the pane already when this one
	// registered, nil when none did: this one is nested in its agent
	// (herdr-pi wrap bash, then herdr-pi wrap pi), or both run in one
	// pane by mistake (tmux inside it).
	Sharing *Endpoint

	held       *HeldRunDir
	server     *Server
	unregister func()
	fresh      *freshener
}

// Unix socket paths are limited to 107 bytes (sun_path holds 108 with its
// NUL). A run directory is "<base>/run-<pid>-<random>" and holds
// control.sock: with pids of at most 7 digits (Linux caps pid_max at 2^22)
// and MkdirTemp's random part of at most 10, that adds at most
// runSuffixMax bytes to the base.
const (
	maxSocketPath = 107
	socketName    = "control.sock"
	runSuffixMax  = len("/"+runDirPrefix) + 7 + len("-") + 10 + len("/"+socketName)
)

// shortRoot holds the fallback socket base; tests point it elsewhere.
var shortRoot = "/tmp"

// SocketBase is where the run directories (and so the sockets) of wrappers
// using runtimeBase live: runtimeBase itself when every socket path under
// it fits, else /tmp/herdr-pi-<uid>, which always does. A long
// XDG_RUNTIME_DIR and a 10-digit uid must not turn the control socket off.
// The fallback is checked like any private directory (ours, 0700, not a
// symlink) before anything is put in it.
func SocketBase(runtimeBase string) string {
	if len(runtimeBase)+runSuffixMax <= maxSocketPath {
		return runtimeBase
	}
	return filepath.Join(shortRoot, fmt.Sprintf("herdr-pi-%d", os.Getuid()))
}

// Start creates the run directory, listens, and registers the pane. Close
// undoes all of it; call it on every exit path. The registry stays under
// cfg.RuntimeBase; only the run directory moves to [SocketBase].
func Start(cfg RunConfig) (*Run, error) {
	held, err := NewRunDir(SocketBase(cfg.RuntimeBase))
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	dir := held.Path
	if cfg.Logf != nil {
		for _, d := range held.Swept {
			cfg.Logf("control: removed %s, left by the wrapper pid %d, which was killed (it holds the lock of its run directory until it ends, and nobody held it)", d.Path, d.PID)
		}
	}
	token, err := NewToken()
	if err != nil {
		_ = held.Remove()
		return nil, fmt.Errorf("control: token: %w", err)
	}
	srv, err := Listen(Config{
		Path: filepath.Join(dir, socketName), Token: token,
		Events: cfg.Events, Requests: cfg.Requests, Owner: cfg.Owner, Handoffs: cfg.Handoffs, Logf: cfg.Logf,
	})
	if err != nil {
		_ = held.Remove()
		return nil, err
	}
	r := &Run{Dir: dir, held: held, server: srv, unregister: func() {}, Endpoint: Endpoint{
		Socket: srv.Path(), Token: token, PID: os.Getpid(),
		PaneID: cfg.PaneID, HerdrSocket: cfg.HerdrSocket, Started: time.Now().UTC(),
	}}
	reg := PaneRegistry(cfg.RuntimeBase)
	if cfg.PaneID == "" {
		// Not registering (outside Herdr), but still the one to clean up
		// after wrappers that were killed, as NewRunDir does for run dirs.
		reg.sweep()
	} else {
		if prev, err := reg.Lookup(PaneKey(cfg.HerdrSocket, cfg.PaneID)); err == nil {
			r.Sharing = &prev
		}
		un, err := reg.Register(PaneKey(cfg.HerdrSocket, cfg.PaneID), r.Endpoint)
		if err != nil {
			_ = r.Close()
			return nil, err
		}
		r.unregister = un
	}
	// Keep what this run has under the runtime base young for cleaners
	// of /tmp (see fresh.go): the run directory and everything in it, the
	// directories above it (the socket base; the runtime base and the
	// registry, made by us, where they differ), and the pane's entry.
	fr := &freshener{dir: dir, logf: cfg.Logf, above: []string{filepath.Dir(dir)}, also: cfg.Keep}
	if fr.logf == nil {
		fr.logf = func(string, ...any) {}
	}
	if cfg.RuntimeBase != filepath.Dir(dir) {
		fr.above = append(fr.above, cfg.RuntimeBase)
	}
	if cfg.PaneID != "" {
		fr.above = append(fr.above, reg.Dir)
		fr.entry = filepath.Join(reg.Dir, PaneKey(cfg.HerdrSocket, cfg.PaneID))
	}
	r.fresh = startFreshener(fr)
	return r, nil
}

// Freshen touches what this run keeps at once, as the hourly pass does
// (see fresh.go): a test that has aged it makes it young again without
// waiting an hour.
func (r *Run) Freshen() {
	if r.fresh != nil {
		r.fresh.pass()
	}
}

// Env is what the child's environment gets so the probe and `herdr-pi
// waiting` inside it reach this run.
func (r *Run) Env() []string { return r.Endpoint.Env() }

// Close stops the server, removes the registry entry and the run
// directory with everything in it. Safe to call more than once.
func (r *Run) Close() error {
	if r.fresh != nil {
		r.fresh.stop()
		r.fresh = nil
	}
	err := r.server.Close()
	r.unregister()
	r.unregister = func() {}
	if rmErr := r.held.Remove(); err == nil {
		err = rmErr
	}
	return err
}

// PaneRegistry is the registry under runtimeBase.
func PaneRegistry(runtimeBase string) Registry {
	return Registry{Dir: filepath.Join(runtimeBase, "panes")}
}

// sessionClaim is the file in a run directory that names the session file
// the wrapper's Pi writes, as its probe said.
const sessionClaim = "session"

// ClaimSession records that this run's Pi writes the session file path
// (its probe named it), so that the wrapper of another Pi in the same
// project, which has no probe to say which file is its own, passes it
// over (SessionTaken). The claim goes with the run directory.
func (r *Run) ClaimSession(path string) error {
	// A wrapper killed before the rename leaves the temporary file in
	// its run directory, which goes as a whole (see sweepRunDirs).
	tmp, err := CreateTemp(r.Dir)
	if err != nil {
		return err
	}
	defer tmp.Done()
	_, err = tmp.WriteString(filepath.Clean(path))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(r.Dir, sessionClaim))
	}
	return err
}

// SessionTaken says whether another running wrapper's Pi writes the
// session file path, as its claim says (see ClaimSession). Only wrappers
// whose run directories share this one's base are seen: those of the same
// user and runtime directory, as every wrapper on the machine is unless
// told otherwise.
func (r *Run) SessionTaken(path string) bool {
	path = filepath.Clean(path)
	for _, d := range RunDirs(filepath.Dir(r.Dir)) {
		if d.Path == r.Dir || !d.Alive {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(d.Path, sessionClaim)); err == nil && string(b) == path {
			return true
		}
	}
	return false
}
