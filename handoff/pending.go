package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// Pending is a live handoff its owner's wrapper has ordered and not yet
// placed: the owner holds the order until the attempt's turn ends, which
// may take minutes, and no pane is open yet. The wrapper writes it when
// it orders the handoff and removes it once the handoff's pane is in the
// ledger (or the handoff ended without one), so `herdr-pi close` knows of
// a handoff from its order on, not only once its pane opens later. Its
// file is "pending-….json" in the ledger's directory: List (and so every
// older herdr-pi's close) reads only "rec-*.json".
type Pending struct {
	Run     string `json:"run"`
	Handoff string `json:"handoff"`
	// WrapperPID is the wrapper whose handoff it is: it watches for the
	// file's cancel mark (see CancelPending).
	WrapperPID int `json:"wrapper_pid"`
	// RunDir is the wrapper's own private run directory, whose lock it
	// holds until it exits (as Record.RunDir): whether it still runs is
	// judged by that lock, not by a pid the kernel may have handed on.
	// Empty when the wrapper did not know it yet: the pid has to do.
	RunDir  string    `json:"run_dir,omitempty"`
	Ordered time.Time `json:"ordered"`

	// File is its own file.
	File string `json:"-"`
}

// cancelMark is the file whose presence asks p's wrapper to give p up.
func (p Pending) cancelMark() string { return p.File + ".cancel" }

// Cancelled says whether `herdr-pi close` asked for p to be given up.
func (p Pending) Cancelled() bool {
	_, err := os.Lstat(p.cancelMark())
	return err == nil
}

// AddPending writes p and returns it with its File set.
func (l Ledger) AddPending(p Pending) (Pending, error) {
	if p.Ordered.IsZero() {
		p.Ordered = time.Now().UTC()
	}
	b, err := json.Marshal(p)
	if err != nil {
		return p, err
	}
	p.File, err = l.write("pending-", b)
	return p, err
}

// RemovePending removes p's file and its cancel mark (gone already is
// fine).
func (l Ledger) RemovePending(p Pending) error {
	if p.File == "" {
		return nil
	}
	var errs []error
	for _, f := range []string{p.File, p.cancelMark()} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Pendings lists the handoffs ordered and not yet placed, of every run,
// oldest first; a file that cannot be read is skipped (it names no pane).
func (l Ledger) Pendings() ([]Pending, error) {
	files, err := l.files("pending-*.json")
	if err != nil {
		return nil, err
	}
	var out []Pending
	for _, f := range files {
		b, err := control.ReadPrivateFile(f, maxRecord)
		if err != nil {
			continue
		}
		var p Pending
		if json.Unmarshal(b, &p) != nil || p.Run == "" || p.WrapperPID <= 0 || !control.Printable(p.Handoff) {
			continue
		}
		p.File = f
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Ordered.Before(out[j].Ordered) })
	return out, nil
}

// CancelPending asks the wrappers of pending handoffs to give them up —
// the order is withdrawn and no pane opens — and waits, up to wait, for
// each to be over (its file gone). A handoff whose wrapper is gone is
// only forgotten. A handoff placed meanwhile is over here too: its pane
// is in the ledger by then, for the caller to close (list again).
func CancelPending(ctx context.Context, ledger Ledger, pending []Pending, wait time.Duration) (out []Closed, failures []Failed) {
	deadline := time.Now().Add(wait)
	var asked []Pending
	for _, p := range pending {
		if !control.WrapperAlive(p.RunDir, p.WrapperPID) {
			if err := ledger.RemovePending(p); err != nil {
				failures = append(failures, Failed{Kind: "record", ID: p.File, Code: FailLedger, Why: fmt.Sprintf("handoff %s of a wrapper that is gone could not be forgotten (%v): remove the file", p.Handoff, err)})
				continue
			}
			out = append(out, Closed{Kind: "handoff", ID: p.Handoff, How: "removed"})
			continue
		}
		if err := os.WriteFile(p.cancelMark(), nil, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			failures = append(failures, Failed{Kind: "handoff", ID: p.Handoff, File: p.File, Code: FailNotGivenUp,
				Why: fmt.Sprintf("its wrapper (pid %d) could not be asked to give it up (%v); it may still open a pane: close again", p.WrapperPID, err)})
			continue
		}
		if _, err := os.Lstat(p.File); errors.Is(err, fs.ErrNotExist) {
			// Over meanwhile (its wrapper removed the file, then its
			// mark): the mark would outlive it.
			os.Remove(p.cancelMark())
		}
		asked = append(asked, p)
	}
	for _, p := range asked {
		if !waitGone(ctx, p.File, deadline) {
			failures = append(failures, Failed{Kind: "handoff", ID: p.Handoff, File: p.File, Code: FailNotGivenUp,
				Why: fmt.Sprintf("its wrapper (pid %d) did not give it up within %v; it may still open a pane: close again", p.WrapperPID, wait)})
			continue
		}
		out = append(out, Closed{Kind: "handoff", ID: p.Handoff, How: "given back"})
	}
	return out, failures
}
