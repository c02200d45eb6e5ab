package herdr

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// reassertGap is the least time between two re-asserts. Herdr's detection
// may clear a custom pi report each time it looks again (herdr#4020); the
// gap keeps herdr-pi from answering every clear at once, for ever.
const reassertGap = 5 * time.Second

// claimState is what a Presence knows of its claim on the pane, guarded by
// Presence.mu.
type claimState struct {
	protocol int // Herdr's, as ping last said
	// held: Herdr shows another agent, or another state, than the one it
	// acknowledged (its own detection or another integration holds the
	// pane). ignored: the pane shows no agent even after a re-assert.
	held, ignored bool
	reasserts     int
	lastReassert  time.Time   // the last re-assert that took
	lastTry       time.Time   // the last re-assert, taken or not
	retry         *time.Timer // a re-assert waiting out reassertGap
	// aside is the wrapper of the pane this one stands aside for (see
	// sharing.go), nil while this one holds the pane; lastReclaim is
	// when this one last took the pane back from an older one's report.
	aside       *Wrapper
	lastReclaim time.Time
}

// Reasserts says how many times Herdr dropped or cleared herdr-pi's report
// and herdr-pi claimed the pane again (with success), and when last; 0 for
// a nil Presence and before the first.
func (p *Presence) Reasserts() (n int, last time.Time) {
	if p == nil {
		return 0, time.Time{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.claim.reasserts, p.claim.lastReassert
}

// onEvent reviews the claim when an event shows the pane otherwise than
// Herdr acknowledged. One that agrees costs nothing.
func (p *Presence) onEvent(ctx context.Context, ev Event) {
	if ev.Name != "pane.agent_status_changed" || ev.PaneID != p.cfg.PaneID {
		return
	}
	if acked, ok := p.r.acknowledged(); ok && p.ours(ev.Agent, ev.AgentStatus, acked) {
		p.regained()
		return
	}
	p.review(ctx)
}

// ours reports whether Herdr shows the pane as herdr-pi reported it: its
// label, and the acknowledged state (idle reads done until the pane is
// seen, §9.3).
func (p *Presence) ours(agent, status, acked string) bool {
	if !strings.EqualFold(strings.TrimSpace(agent), strings.TrimSpace(p.cfg.Agent)) {
		return false
	}
	return status == acked || acked == StateIdle && status == "done"
}

// review reads the pane back once the reports in flight have landed and
// acts on what Herdr shows: the claim (nothing to do), no agent (Herdr
// dropped or cleared the report: claim the pane again), or something else
// (it is held: wait until it shows no agent). Events can trail the
// replies, so only the read-back decides. Herdr answers ok even when it
// ignores a report, so this is the only way to know.
//
// Another herdr-pi wrapper of the pane is asked about first: while one
// holds the pane this one stands aside, whatever Herdr shows; and once
// it is gone this one's state goes again, which is not a re-assert.
func (p *Presence) review(ctx context.Context) {
	p.reviewMu.Lock()
	defer p.reviewMu.Unlock()
	w := p.others()
	if w.Holder != nil {
		p.standAside(*w.Holder)
		return
	}
	if p.leaveAside() {
		p.r.Resync()
		return
	}
	pane, ok := p.readBack(ctx)
	if !ok {
		return
	}
	acked, _ := p.r.acknowledged()
	ours := p.ours(pane.Agent, pane.AgentStatus, acked)
	if !ours {
		// Asked again: a wrapper that took the pane over while the
		// read-back waited is what it shows now.
		if w = p.others(); w.Holder != nil {
			p.standAside(*w.Holder)
			return
		}
	}
	switch {
	case ours:
		p.regained()
	case strings.TrimSpace(pane.Agent) == "":
		p.reassert(ctx)
	case w.Older != nil && p.reclaim(ctx, pane, *w.Older):
	default:
		p.heldBy(pane)
	}
}

// readBack waits for the reports in flight and reads the pane; ok is false
// when there is nothing to judge (no report landed, Herdr does not answer,
// or the Presence is closing).
func (p *Presence) readBack(ctx context.Context) (PaneInfo, bool) {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := p.r.Reported(wctx)
	cancel()
	if err != nil || ctx.Err() != nil || p.r.Stats().Sent == 0 {
		return PaneInfo{}, false
	}
	if _, ok := p.r.acknowledged(); !ok {
		return PaneInfo{}, false
	}
	gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	pane, err := p.cfg.Client.PaneGet(gctx, p.cfg.PaneID)
	return pane, err == nil
}

// regained: Herdr shows the claim. Health goes back to saying how the
// reports are taken.
func (p *Presence) regained() {
	p.mu.Lock()
	if p.claim.aside != nil {
		// The holder's report happens to match this one's: the pane is
		// still the holder's.
		p.mu.Unlock()
		return
	}
	was := p.claim.held || p.claim.ignored
	p.claim.held, p.claim.ignored = false, false
	p.note.Store(p.baseNoteLocked())
	p.mu.Unlock()
	if was {
		p.logf("herdr: pane %s shows herdr-pi's report again", p.cfg.PaneID)
	}
}

// reassert claims the pane again: Herdr shows no agent, so its detection
// let go or cleared the report (herdr#4020) and nothing else holds it. Once
// per drop: a re-assert that does not take means Herdr ignores the claim
// (§6.2), and nothing is sent again until the pane changes. Within
// reassertGap of the last one it waits out the gap.
func (p *Presence) reassert(ctx context.Context) {
	p.mu.Lock()
	if p.closed || p.claim.ignored {
		p.mu.Unlock()
		return
	}
	if wait := reassertGap - time.Since(p.claim.lastTry); !p.claim.lastTry.IsZero() && wait > 0 {
		if p.claim.retry == nil {
			// On the timer's goroutine: a panic there would end the
			// process, and review's locks are released by defers.
			p.claim.retry = time.AfterFunc(wait, guard.Func(p.logf, "herdr: a delayed review of the claim", "this re-assert is skipped; the next event reviews the pane again", p.delayedReview))
		}
		p.mu.Unlock()
		return
	}
	p.claim.lastTry = time.Now()
	p.mu.Unlock()

	p.logf("herdr: pane %s shows no agent: Herdr dropped or cleared herdr-pi's report (its own detection, herdr#4020); reporting the state again", p.cfg.PaneID)
	p.r.Resync()
	pane, ok := p.readBack(ctx)
	if !ok {
		return
	}
	acked, _ := p.r.acknowledged()
	if !p.ours(pane.Agent, pane.AgentStatus, acked) {
		p.ignoredBy(pane)
		return
	}
	p.mu.Lock()
	p.claim.reasserts++
	p.claim.lastReassert = time.Now()
	p.claim.held, p.claim.ignored = false, false
	n := p.claim.reasserts
	p.note.Store(p.baseNoteLocked())
	p.mu.Unlock()
	p.logf("herdr: pane %s shows herdr-pi's report again (re-asserted %d times)", p.cfg.PaneID, n)
}

// delayedReview runs a review that waited out reassertGap, on the timer's
// goroutine; Close stops the timer and waits for a review that started.
func (p *Presence) delayedReview() {
	p.mu.Lock()
	p.claim.retry = nil
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	p.review(p.ctx)
}

// heldBy: Herdr shows another agent, or its own idea of the state.
func (p *Presence) heldBy(pane PaneInfo) {
	p.flag(&p.claim.held, fmt.Sprintf("Herdr shows pane %s as %s (status %s), not herdr-pi's report: its own detection (herdr#4020) "+
		"or another integration holds the pane; herdr-pi reports again once the pane shows no agent",
		p.cfg.PaneID, shownAgent(pane), pane.AgentStatus))
}

// ignoredBy: the claim does not take even on a clear pane.
func (p *Presence) ignoredBy(pane PaneInfo) {
	p.flag(&p.claim.ignored, fmt.Sprintf("Herdr ignores herdr-pi's reports for pane %s: it shows %s (status %s), not %q. "+
		"Another integration may own the pane, or a plain %s exited in it earlier (Herdr then drops reports "+
		"labelled %q until it sees a new one); open a new pane, or see docs/herdr-setup.md §5",
		p.cfg.PaneID, shownAgent(pane), pane.AgentStatus, p.cfg.Agent, p.cfg.Agent, p.cfg.Agent))
}

// flag sets one of the claim's flags (f points into p.claim) and makes
// Health say note, logging it the first time the flag goes up.
func (p *Presence) flag(f *bool, note string) {
	p.mu.Lock()
	was := *f
	*f = true
	p.note.Store(note)
	p.mu.Unlock()
	if !was {
		p.logf("herdr: %s", note)
	}
}

func shownAgent(pane PaneInfo) string {
	if pane.Agent == "" {
		return "no agent"
	}
	return fmt.Sprintf("agent %q", pane.Agent)
}

// baseNoteLocked is what Health says while Herdr shows the claim. The
// note is stored under p.mu with the claim it describes: a review that
// read the count before a re-assert raised it would otherwise store its
// older sentence after the re-assert's.
func (p *Presence) baseNoteLocked() string {
	s := fmt.Sprintf("reporting to pane %s as %s (agent %q)", p.cfg.PaneID, p.cfg.Source, p.cfg.Agent)
	n, last := p.claim.reasserts, p.claim.lastReassert
	switch n {
	case 0:
		return s
	case 1:
		return s + fmt.Sprintf("; Herdr dropped the report once (its own detection, herdr#4020) and herdr-pi re-asserted it at %s", last.Format(time.TimeOnly))
	}
	return s + fmt.Sprintf("; Herdr dropped the report %d times (its own detection, herdr#4020) and herdr-pi re-asserted it, last at %s", n, last.Format(time.TimeOnly))
}
