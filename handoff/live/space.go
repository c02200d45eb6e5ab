package live

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// The workspace of a fully inspectable run. Its first turn opens it (one
// placement at a time, so the run's turns find it rather than each
// opening one); every turn of the run then opens a tab in it. It belongs
// to the run, not to a turn: a turn that fails closes only its tab, and
// the workspace closes when the run reaches a terminal state (the owner's
// run_ended), when its owner goes, or when the wrapper quits — after the
// run's turns have given their attempts back.

// turnPlacement is where a turn's tab goes: the run's workspace, labelled
// "workflow <name>", and a tab "#<n> <label>" (the breadcrumb when the
// dashboard index is unknown).
func (s *Service) turnPlacement(r *run, l control.Launch) handoff.Placement {
	p := s.basePlacement(r, l)
	// Only the workspace this wrapper opened for the run's turns: it
	// closes it when the run ends.
	p.Dedicated, p.WorkspaceID = true, s.spaceOf(l.RunID, r.opts.socket)
	p.TabLabel = TabLabel(l)
	return p
}

// TabLabel is a fully inspectable attempt's tab label: "#1 reviewer" when
// the run's dashboard numbers the agent, else its breadcrumb, else its
// label and attempt.
func TabLabel(l control.Launch) string {
	switch {
	case l.TUIIndex > 0 && strings.TrimSpace(l.Label) != "":
		return fmt.Sprintf("#%d %s", l.TUIIndex, l.Label)
	case strings.TrimSpace(l.Breadcrumb) != "":
		return l.Breadcrumb
	case l.Attempt > 0:
		return fmt.Sprintf("%s #%d", l.Label, l.Attempt)
	}
	return l.Label
}

// keepSpace remembers the workspace a turn's placement opened as its
// run's, with its ledger record.
func (s *Service) keepSpace(r *run, o handoff.Opened, records []handoff.Record) {
	if len(o.Created) == 0 || !strings.HasPrefix(o.Created[0], "workspace ") {
		return
	}
	sp := &space{run: r.order.RunID, socket: r.opts.socket, workspaceID: o.WorkspaceID, link: r.link}
	for _, rec := range records {
		if rec.Kind == "workspace" && rec.ID == o.WorkspaceID {
			sp.record = rec
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spaces[r.order.RunID] = sp
}

// endSpaceLocked ends a fully inspectable run: its turns are given back
// (each closes its tab), then its workspace closes. Called with s.mu held.
func (s *Service) endSpaceLocked(runID string, cause error) {
	sp := s.spaces[runID]
	if sp == nil {
		return
	}
	delete(s.spaces, runID)
	var turns []*run
	for _, r := range s.running {
		if r.opts.turn && r.order.RunID == runID {
			r.cancel(cause)
			turns = append(turns, r)
		}
	}
	guard.Go(&s.wg, s.cfg.Logf, "live: closing workspace "+sp.workspaceID, "it stays open with its ledger record: herdr-pi close can close it", func() {
		for _, r := range turns {
			<-r.done
		}
		s.cfg.Logf("live: closing workspace %s of run %s: %v", sp.workspaceID, runID, cause)
		s.closeSpace(sp)
	})
}

// closeSpace closes a run's workspace (once: the caller took it out of
// s.spaces) and removes its ledger record. A workspace whose id Herdr
// gave to another since is left open, and its record goes all the same.
func (s *Service) closeSpace(sp *space) {
	ctx, cancel := context.WithTimeout(context.Background(), handoff.CloseBudget)
	defer cancel()
	h := s.cfg.Herdr(sp.socket)
	// Its turns' tabs are closed by now: its root pane is what tells it
	// from a workspace a Herdr started afresh gave the same id.
	if why := handoff.Foreign(ctx, h, "workspace", sp.workspaceID, sp.record.Pane, sp.record.Terminal); why != "" {
		s.cfg.Logf("live: leaving workspace %s open (run %s): %s", sp.workspaceID, sp.run, why)
		if handoff.Restarted(why) {
			s.tellLeftOpen(sp)
		}
	} else if err := h.WorkspaceClose(ctx, sp.workspaceID); err != nil && !notFound(err) {
		s.cfg.Logf("live: closing workspace %s of run %s: %v", sp.workspaceID, sp.run, err)
		return // the record stays: herdr-pi close can try again
	}
	if sp.record.File != "" {
		if err := s.cfg.Ledger.Remove(sp.record); err != nil {
			s.cfg.Logf("live: %v", err)
		}
	}
}

// tellLeftOpen tells the run's owner, in its notice area, that the run's
// workspace was left open because Herdr restarted since it was opened: a
// Herdr restarted the usual way restores it (new shells, the same id and
// labels), and nothing Herdr says tells that from the same id given to
// someone else, so herdr-pi may not close it. The person, who sees the
// workspace stay, hears why and the command that closes it, not only the
// log. The owner takes a refusal of a request it never made as a notice;
// an owner that has gone hears nothing, and the log has it.
func (s *Service) tellLeftOpen(sp *space) {
	if sp.link == nil {
		return
	}
	select {
	case <-sp.link.Done():
		return
	default:
	}
	// Short: the notice area shows about 240 characters, the command last.
	msg := fmt.Sprintf("left workspace %s of run %s open: Herdr restarted since herdr-pi opened it, and its restored copy cannot be told "+
		"from an id given to something else. If it is the run's, close it with: %s",
		sp.workspaceID, shortRun(sp.run), handoff.CloseCommand("workspace", sp.workspaceID))
	if err := sp.link.Refuse("workspace "+sp.workspaceID, errors.New(msg)); err != nil {
		s.cfg.Logf("live: telling the owner that workspace %s stays open: %v", sp.workspaceID, err)
	}
}

// shortRun is a run id as notices show it: its first 8 characters.
func shortRun(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// Kept lists the ledger files this wrapper keeps young for cleaners of
// /tmp (its control run's RunConfig.Keep): those the ledger says follow
// it (handoff.Ledger.KeptByThisProcess), and the records of its fully
// inspectable runs' workspaces. Between two turns no record in such a
// workspace names this wrapper, yet the workspace is its own until the
// run ends (endSpaceLocked), however long the run rests: weeks, when its
// owner waits on a person.
func (s *Service) Kept() []string {
	kept := s.cfg.Ledger.KeptByThisProcess()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range s.spaces {
		if sp.record.File != "" {
			kept = append(kept, sp.record.File)
		}
	}
	return kept
}
