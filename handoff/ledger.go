package handoff

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	RunDir string    `json:"run_dir,omitempty"`
	Opened time.Time `json:"opened"`

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

// Ledger is the directory of records (one 0600 file each, in the private
// runtime directory): each writer adds and removes its own files, so
// wrappers and `open`s never share a file or need a lock.
type Ledger struct{ Dir string }

// LedgerAt is the ledger under runtimeBase.
func LedgerAt(runtimeBase string) Ledger { return Ledger{Dir: filepath.Join(runtimeBase, "opened")} }

// maxRecord bounds a record file: it is ours, but read like any input.
const maxRecord = 16 << 10

// Add writes r and returns it with its File set.
func (l Ledger) Add(r Record) (Record, error) {
	for _, d := range []string{filepath.Dir(l.Dir), l.Dir} {
		if err := control.EnsurePrivateDir(d); err != nil {
			return r, fmt.Errorf("the ledger of what herdr-pi opened: %w", err)
		}
	}
	if r.Opened.IsZero() {
		r.Opened = time.Now().UTC()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return r, err
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return r, err
	}
	r.File = filepath.Join(l.Dir, "rec-"+hex.EncodeToString(rnd[:])+".json")
	tmp := r.File + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		os.Remove(tmp)
		return r, fmt.Errorf("the ledger of what herdr-pi opened: %w", err)
	}
	// The rename makes it appear whole to a `close` listing meanwhile.
	if err := os.Rename(tmp, r.File); err != nil {
		os.Remove(tmp)
		return r, fmt.Errorf("the ledger of what herdr-pi opened: %w", err)
	}
	return r, nil
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

// List returns every record, oldest first. A missing ledger has none; an
// unreadable record is skipped (and named in the error).
func (l Ledger) List() ([]Record, error) {
	if err := control.CheckPrivateDir(l.Dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(l.Dir, "rec-*.json"))
	if err != nil {
		return nil, err
	}
	var out []Record
	var bad []string
	for _, f := range files {
		r, err := readRecord(f)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", f, err))
			continue
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Opened.Before(out[j].Opened) })
	if len(bad) > 0 {
		return out, fmt.Errorf("unreadable ledger records (remove them): %s", strings.Join(bad, "; "))
	}
	return out, nil
}

func readRecord(path string) (Record, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Record{}, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxRecord {
		return Record{}, errors.New("not a small regular file")
	}
	b, err := os.ReadFile(path)
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
