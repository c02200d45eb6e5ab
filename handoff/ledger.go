package handoff

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// Record is one thing herdr-pi opened in Herdr for a workflow run: a pane,
// a tab or a workspace, and the tool bridge that serves it when a live
// handoff runs there. `herdr-pi close <run>` closes what the records name.
type Record struct {
	Run         string `json:"run"`
	Kind        string `json:"kind"` // pane | tab | workspace
	ID          string `json:"id"`
	HerdrSocket string `json:"herdr_socket"`
	// WrapperPID is the wrapper whose live handoff runs there (0: none,
	// as for a run's workspace): it removes the record when the handoff
	// ends, after closing the pane and its bridge.
	WrapperPID int    `json:"wrapper_pid,omitempty"`
	Handoff    string `json:"handoff,omitempty"`
	// Bridge is that handoff's tool bridge socket ("" without tools).
	Bridge string `json:"bridge,omitempty"`
	// PaneWrapperPID is the herdr-pi wrap running in an inspection's pane
	// (`herdr-pi open` on a finished attempt): the pane is ours while it
	// runs. Once it is gone so is the pane (its command ended), and the id
	// may name someone else's pane after Herdr restarted: close leaves it.
	PaneWrapperPID int `json:"pane_wrapper_pid,omitempty"`
	// RunDir is the private run directory of the wrapper that WrapperPID
	// or PaneWrapperPID names, when it is known: that wrapper runs while
	// the directory's lock is held. A pid alone is not enough once the
	// wrapper is gone (killed, so it could not tidy up): the kernel hands
	// its pid to the next process sooner or later.
	RunDir string `json:"run_dir,omitempty"`
	// Pane is the pane herdr-pi opened (in the tab, for a tab; the root
	// pane Herdr opened with it, for a workspace) and Terminal its
	// terminal_id: close leaves a pane, tab or workspace whose id Herdr
	// gave to another since ([Foreign]). Empty in records from before,
	// which close the old way: nothing tells them apart, and leaving them
	// would strand what an older herdr-pi opened.
	Pane     string    `json:"pane,omitempty"`
	Terminal string    `json:"terminal,omitempty"`
	Opened   time.Time `json:"opened"`

	// File is the record's own file.
	File string `json:"-"`
}

// Thing is the record's Herdr object as Placed.Created names it
// ("pane w1:p2").
func (r Record) Thing() string { return r.Kind + " " + r.ID }

// CreatedRecords are the records of what a placement created
// (Placed.Created, outermost first) for run in the Herdr at socket.
func CreatedRecords(run, socket string, created []string) []Record {
	out := make([]Record, 0, len(created))
	for _, c := range created {
		kind, id, _ := strings.Cut(c, " ")
		out = append(out, Record{Run: run, Kind: kind, ID: id, HerdrSocket: socket})
	}
	return out
}

// Records are the records of what p created for run in the Herdr at
// socket, the pane it opened and its tab naming that pane and its
// terminal, a workspace it opened its root pane and that one's terminal.
func (p Placed) Records(run, socket string) []Record {
	recs := CreatedRecords(run, socket, p.Created)
	for i := range recs {
		switch r := &recs[i]; {
		case r.Kind == "pane" && r.ID == p.PaneID || r.Kind == "tab" && r.ID == p.TabID:
			r.Pane, r.Terminal = p.PaneID, p.Terminal
		case r.Kind == "workspace" && r.ID == p.WorkspaceID:
			r.Pane, r.Terminal = p.RootPane, p.RootTerminal
		}
	}
	return recs
}

// Ledger is the directory of records (one 0600 file each, in the private
// runtime directory): each writer adds and removes its own files, so
// wrappers and `open`s never share a file or need a lock to write one.
// Placing a pane in a run's workspace is another matter: that lookup and
// the record it leads to happen under the run's LockPlacement, whose lock
// file lives here too while it is held.
type Ledger struct{ Dir string }

// LedgerAt is the ledger under runtimeBase.
func LedgerAt(runtimeBase string) Ledger { return Ledger{Dir: filepath.Join(runtimeBase, "opened")} }

// maxRecord bounds a record file: it is ours, but read like any input.
const maxRecord = 16 << 10

// renameRecord puts a record file in place; a test makes it fail, which
// nothing in a private directory of ours provokes.
var renameRecord = os.Rename

// Add writes r and returns it with its File set.
func (l Ledger) Add(r Record) (Record, error) {
	if r.Opened.IsZero() {
		r.Opened = time.Now().UTC()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return r, err
	}
	r.File, err = l.write("rec-", b)
	return r, err
}

// write puts b in a new file of the ledger named prefix + random + ".json",
// whole (a listing never sees it half written), and returns its path.
func (l Ledger) write(prefix string, b []byte) (string, error) {
	// The ledger's directory, and the runtime base above it, made private
	// here if they are not yet (and refused if not ours).
	for _, d := range []string{filepath.Dir(l.Dir), l.Dir} {
		if err := control.EnsurePrivateDir(d); err != nil {
			return "", fmt.Errorf("the ledger of what herdr-pi opened: %w", err)
		}
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	file := filepath.Join(l.Dir, prefix+hex.EncodeToString(rnd[:])+".json")
	l.sweepTemp()
	tmp, err := control.CreateTemp(l.Dir)
	if err != nil {
		return "", fmt.Errorf("the ledger of what herdr-pi opened: %w", err)
	}
	defer tmp.Done()
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	// The rename makes it appear whole to a `close` listing meanwhile.
	if err == nil {
		err = renameRecord(tmp.Name(), file)
	}
	if err != nil {
		return "", fmt.Errorf("the ledger of what herdr-pi opened: %w", err)
	}
	return file, nil
}

// sweepTemp removes the temporary files of writers killed before they
// renamed their record into place (see control.SweepTemp), and those
// older herdr-pi versions left as "rec-….json.tmp": each Add sweeps, so
// none stays longer than until the next record is written.
func (l Ledger) sweepTemp() {
	control.SweepTemp(l.Dir, control.TempPattern)
	control.SweepTemp(l.Dir, "rec-*.json.tmp")
}

// AddAll adds recs in order and returns those written; one that cannot be
// written is left out, and the error says why.
func (l Ledger) AddAll(recs []Record) ([]Record, error) {
	var out []Record
	var errs []error
	for _, r := range recs {
		r, err := l.Add(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// AddLeftOpen records for run, in the Herdr at socket, what a failed Open
// or Place left open when err is a *LeftOpenError (see there), so that
// herdr-pi close finds it; any other err leaves nothing to record. It
// returns the records written, and why any could not be.
func (l Ledger) AddLeftOpen(run, socket string, err error) ([]Record, error) {
	var left *LeftOpenError
	if !errors.As(err, &left) || len(left.Left) == 0 {
		return nil, nil
	}
	p := left.Placed
	p.Created = left.Left
	return l.AddAll(p.Records(run, socket))
}

// Remove deletes r's file (gone already is fine).
func (l Ledger) Remove(r Record) error {
	if r.File == "" {
		return nil
	}
	if err := os.Remove(r.File); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// files lists the ledger's files that match pattern; a missing ledger has
// none, one that is not private is an error.
func (l Ledger) files(pattern string) ([]string, error) {
	if err := control.CheckPrivateDir(l.Dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return filepath.Glob(filepath.Join(l.Dir, pattern))
}

// List returns every record, oldest first. A missing ledger has none; an
// unreadable record is skipped and named in an *UnreadableRecordsError,
// with what it may have tracked: it may be all that knows of a pane that
// is still open.
func (l Ledger) List() ([]Record, error) {
	files, err := l.files("rec-*.json")
	if err != nil {
		return nil, err
	}
	var out []Record
	var bad []Unreadable
	for _, f := range files {
		r, err := readRecord(f)
		if err != nil {
			bad = append(bad, Unreadable{File: f, Problem: err.Error(), Guess: salvageRecord(f)})
			continue
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Opened.Before(out[j].Opened) })
	if len(bad) > 0 {
		return out, &UnreadableRecordsError{Records: bad}
	}
	return out, nil
}

// Unreadable is a ledger record List could not read.
type Unreadable struct {
	File    string
	Problem string
	// Guess is what could still be made out of the file (any field may
	// be empty): enough, with luck, to find the pane in Herdr.
	Guess Record
}

// MayBeOf tells whether the record may have been run's: its run cannot be
// made out, or it starts with run (a prefix, as close takes it).
func (u Unreadable) MayBeOf(run string) bool {
	return u.Guess.Run == "" || strings.HasPrefix(u.Guess.Run, run)
}

// Tracked says what the record may have tracked, "" when nothing of it
// can be made out.
func (u Unreadable) Tracked() string {
	g := u.Guess
	var s string
	switch {
	case g.Kind != "" && g.ID != "":
		s = g.Thing()
	case g.ID != "":
		s = "a pane, tab or workspace " + g.ID
	case g.Kind != "":
		s = "a " + g.Kind
	default:
		return ""
	}
	if g.Run != "" {
		s += " of run " + g.Run
	}
	if g.HerdrSocket != "" {
		s += " in the Herdr at " + g.HerdrSocket
	}
	return s
}

// Advice is what to do about the record without losing what it tracked:
// removing it first would leave an open pane that no close knows of.
func (u Unreadable) Advice() string {
	if t := u.Tracked(); t != "" {
		return "it may have tracked " + t + ", which may still be open: check in Herdr and close it there if so, then remove " + u.File
	}
	return "what it tracked cannot be made out: check in Herdr for a pane, tab or workspace herdr-pi opened that is still open and close it there, then remove " + u.File
}

// UnreadableRecordsError names the ledger records List could not read.
type UnreadableRecordsError struct{ Records []Unreadable }

func (e *UnreadableRecordsError) Error() string {
	parts := make([]string, 0, len(e.Records))
	for _, u := range e.Records {
		parts = append(parts, fmt.Sprintf("%s: %s; %s", u.File, u.Problem, u.Advice()))
	}
	return "unreadable ledger records: " + strings.Join(parts, "; ")
}

func readRecord(path string) (Record, error) {
	// Never waiting on a named pipe or a device planted in its place.
	b, err := control.ReadPrivateFile(path, maxRecord)
	if err != nil {
		return Record{}, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, err
	}
	switch r.Kind {
	case "pane", "tab", "workspace":
	default:
		return Record{}, fmt.Errorf("unknown kind %q", control.Clip(r.Kind))
	}
	if r.Run == "" || r.ID == "" || !control.Printable(r.ID) {
		return Record{}, errors.New("no run or id")
	}
	r.File = path
	return r, nil
}

// recordField is a string field of a record as it appears in the file,
// for salvageRecord.
var recordField = regexp.MustCompile(`"(run|kind|id|herdr_socket)"\s*:\s*"([^"\\\x00-\x1f]+)"`)

// salvageRecord makes out what it can of an unreadable record: the string
// fields that survive in a file cut short or garbled. Only a regular file
// of at most maxRecord bytes is read (a symlink may point anywhere), as
// readRecord reads it; a value that would not print is left out, as it
// would be shown.
func salvageRecord(path string) Record {
	var g Record
	b, err := control.ReadPrivateFile(path, maxRecord)
	if err != nil {
		return g
	}
	for _, m := range recordField.FindAllSubmatch(b, -1) {
		v := string(m[2])
		if !control.Printable(v) || len(v) > 1024 {
			continue
		}
		switch string(m[1]) {
		case "run":
			g.Run = v
		case "kind":
			if v == "pane" || v == "tab" || v == "workspace" {
				g.Kind = v
			}
		case "id":
			g.ID = v
		case "herdr_socket":
			g.HerdrSocket = v
		}
	}
	return g
}

// Workspace is the run's workspace in the Herdr at socket, as the ledger
// knows it: the newest workspace record of run there ("" when there is
// none). Its label ("workflow <name>") cannot say which run it is: every
// run of a workflow carries the same one.
func (l Ledger) Workspace(run, socket string) string {
	recs, _ := l.List() // an unreadable record is another's problem here
	id := ""
	for _, r := range recs {
		if r.Kind == "workspace" && r.Run == run && r.HerdrSocket == socket {
			id = r.ID
		}
	}
	return id
}

// PlacementWait bounds how long LockPlacement waits for another
// placement of the run: an open holds the lock until its Pi has started,
// which takes seconds, or as long as a Pi that is slow to start makes it;
// a menu inspection until its pane's wrapper has said which fork it
// writes (under a minute); a live handoff only while it places its pane and records it.
const PlacementWait = 2 * time.Minute

// LockPlacement takes run's placement lock and returns the function that
// lets it go (call it once the records are written; a second call does
// nothing). Whatever may create a run's workspace — an open, a live
// handoff or a menu inspection in its owner's wrapper — holds it from
// looking the workspace up until the workspace is in the ledger, so two
// placements of one run at once make one "workflow <name>", as two one
// after the other do, not two of the same name. The lock is the run's
// own: placements of other runs, which can never share its workspace, do
// not wait for it. waiting (nil for none) is called once when the lock is
// busy, before the wait. The wait ends with ctx or after PlacementWait;
// then the caller goes on without the lock: a second workspace is better
// than no pane. The lock is the kernel's (control.LockFile: flock on a
// file of the ledger's directory, named by placementLockName and removed
// by its last holder), and a process that dies lets go of it; the file it
// leaves is removed by the next LockPlacement of any run.
func (l Ledger) LockPlacement(ctx context.Context, run string, waiting func()) (unlock func()) {
	for _, d := range []string{filepath.Dir(l.Dir), l.Dir} {
		if control.EnsurePrivateDir(d) != nil {
			return func() {}
		}
	}
	// A herdr-pi killed while it placed left its lock: free, but a file
	// nothing else would remove.
	if left, err := filepath.Glob(filepath.Join(l.Dir, placementLockGlob)); err == nil {
		for _, f := range left {
			control.RemoveFreeLockFile(f)
		}
	}
	unlock, _ = control.LockFile(ctx, filepath.Join(l.Dir, placementLockName(run)), PlacementWait, 50*time.Millisecond, waiting)
	return unlock
}

// placementLockGlob matches every run's placement lock file.
const placementLockGlob = "place-*.lock"

// placementLockName is the name of run's placement lock file: a hash of
// the run id, so no id (whatever it holds, however long) is ever part of a
// path, and never a record's name (List reads only "rec-*.json").
func placementLockName(run string) string {
	sum := sha256.Sum256([]byte(run))
	return "place-" + hex.EncodeToString(sum[:16]) + ".lock"
}
