package live

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// ErrGivenUpByClose is the cause of a handoff's end when `herdr-pi close`
// gave it up before its pane opened.
var ErrGivenUpByClose = errors.New("herdr-pi close gave the handoff up before its pane opened")

// pendingNote is a handoff in the ledger as ordered, or as asked for and
// waiting for the attempt's last handoff to be handed back
// (handoff.Pending), so that `herdr-pi close` knows of it before its pane
// opens. Its watch of close's cancel mark ends given (cause
// ErrGivenUpByClose): whoever holds the note then gives the handoff up —
// the order is withdrawn, or never sent — and no pane opens. forget ends
// the watch, waits for it and removes the file.
type pendingNote struct {
	p      handoff.Pending
	ledger handoff.Ledger
	logf   func(string, ...any)
	// given ends when close asks for the handoff to be given up.
	given         context.Context
	stop, watched chan struct{}
}

// notePending writes the note of handoff id of run and starts its watch;
// nil (logged) when its file cannot be written: close then only finds the
// handoff's pane, once it opens. The note shows its wrapper runs by the
// wrapper's own run directory, whose lock it holds until it exits, as a pid
// alone cannot once the wrapper is killed and its pid reused: close then
// forgets the entry instead of waiting for it. Until the directory is known
// (SetRunDir) the pid has to do. Not to be called with s.mu held.
func (s *Service) notePending(run, id string) *pendingNote {
	s.mu.Lock()
	p := handoff.Pending{Run: run, Handoff: id, WrapperPID: os.Getpid(), RunDir: s.runDir}
	s.mu.Unlock()
	p, err := s.cfg.Ledger.AddPending(p)
	if err != nil {
		s.cfg.Logf("live: handoff %s: %v", id, err)
		return nil
	}
	given, give := context.WithCancelCause(context.Background())
	n := &pendingNote{p: p, ledger: s.cfg.Ledger, logf: s.cfg.Logf, given: given, stop: make(chan struct{}), watched: make(chan struct{})}
	go func() {
		defer close(n.watched)
		guard.Run(s.cfg.Logf, "live: the close watch of handoff "+id, "herdr-pi close cannot give this handoff up before its pane opens", func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-n.stop:
					return
				case <-tick.C:
					if p.Cancelled() {
						s.cfg.Logf("live: handoff %s: herdr-pi close gives it up", id)
						give(ErrGivenUpByClose)
						return
					}
				}
			}
		})
	}()
	return n
}

// forget: see pendingNote. Safe on nil and more than once, from the one
// goroutine that holds the note.
func (n *pendingNote) forget() {
	if n == nil || n.stop == nil {
		return
	}
	close(n.stop)
	<-n.watched
	n.stop = nil
	if err := n.ledger.RemovePending(n.p); err != nil {
		n.logf("live: handoff %s: %v", n.p.Handoff, err)
	}
}

// givenUp is closed once close gave the handoff up (never for nil).
func (n *pendingNote) givenUp() <-chan struct{} {
	if n == nil {
		return nil
	}
	return n.given.Done()
}

// isGivenUp says whether close gave the handoff up (never for nil).
func (n *pendingNote) isGivenUp() bool { return n != nil && n.given.Err() != nil }
