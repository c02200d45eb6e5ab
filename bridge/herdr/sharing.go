package herdr

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// One pane, several wrappers: a herdr-pi wrap started inside another's
// agent (herdr-pi wrap bash, then herdr-pi wrap pi in that shell), or in a
// second terminal that carries the pane's HERDR_PANE_ID (tmux inside the
// pane, a copied environment). All report with the same source, so Herdr
// would show whichever changed last, and each would take the other's
// report for Herdr's own detection. The newest holds the pane, as the
// pane's hooks reach it (the pane registry says so); the others keep
// their state to themselves until it ends, and say why.

// Wrapper is another herdr-pi wrapper of the pane.
type Wrapper struct {
	PID int
	// Nested says one of the two runs inside the other's agent: the
	// holder inside this wrapper's (under it in the process tree, or on
	// its agent's terminal), or this wrapper inside the older's (under
	// it, or started with its control socket in the environment).
	Nested bool
}

// PaneWrappers are the other herdr-pi wrappers of a pane that matter to
// one of them.
type PaneWrappers struct {
	// Holder is the wrapper that holds the pane instead of this one (the
	// newest of the pane, started after this one); nil when this one is
	// the newest.
	Holder *Wrapper
	// Older is the newest of the wrappers that started in the pane
	// before this one and stand aside for it; nil when none runs.
	Older *Wrapper
}

// others asks PresenceConfig.Others.
func (p *Presence) others() PaneWrappers {
	if p.cfg.Others == nil {
		return PaneWrappers{}
	}
	return p.cfg.Others()
}

// holder is the wrapper that holds the pane instead of this one, if any.
func (p *Presence) holder() (Wrapper, bool) {
	if w := p.others(); w.Holder != nil {
		return *w.Holder, true
	}
	return Wrapper{}, false
}

// HeldFromWithin says whether the wrapper holding the pane instead of this
// one runs inside this one's agent (herdr-pi wrap pi started in a wrapped
// shell), and which it is; asked afresh from the pane's registry at each
// call. That wrapper reads its agent closer than this one can and tells
// the person of it; this one sees the same agent on its own screen, so
// anything it would say of it meanwhile would be said twice. A holder in
// another terminal of the pane is not inside: its agent is another one.
// false for a nil Presence.
func (p *Presence) HeldFromWithin() (pid int, ok bool) {
	if p == nil {
		return 0, false
	}
	if h, held := p.holder(); held && h.Nested {
		return h.PID, true
	}
	return 0, false
}

// yield is the Reporter's Yield: another wrapper holds the pane, so this
// one's state stays here. A wrapper that stood aside and finds the pane
// its own again goes on (its caller is about to send).
func (p *Presence) yield() bool {
	if h, ok := p.holder(); ok {
		p.standAside(h)
		return true
	}
	p.leaveAside()
	return false
}

// standAside records that h holds the pane: Health says so, the log once
// per holder, and h's end is awaited so that this wrapper's state goes
// back to the pane then.
func (p *Presence) standAside(h Wrapper) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	was := p.claim.aside
	p.claim.aside = &h
	p.claim.held, p.claim.ignored = false, false
	note := p.asideNote(h)
	p.note.Store(note)
	fresh := was == nil || was.PID != h.PID
	if fresh && p.cfg.AwaitEnd != nil {
		guard.Go(&p.wg, p.logf, "herdr: waiting for the wrapper holding the pane", "this wrapper reports again only at the pane's next change or its own", func() {
			p.cfg.AwaitEnd(p.ctx, h.PID)
			if p.ctx.Err() == nil {
				p.holderEnded()
			}
		})
	}
	p.mu.Unlock()
	if fresh {
		p.logf("herdr: %s", note)
	}
}

// holderEnded runs once the wrapper this one stood aside for has ended:
// unless another holds the pane now, this one's state goes to it again.
// It holds reviewMu as review does: the holder's release empties the
// pane, and a review of that event run between leaveAside and Resync
// would find no report in flight, the pane empty and this one no longer
// aside, and take the holder's release for Herdr's detection (a
// re-assert counted and blamed on herdr#4020).
func (p *Presence) holderEnded() {
	p.reviewMu.Lock()
	defer p.reviewMu.Unlock()
	if h, ok := p.holder(); ok {
		p.standAside(h)
		return
	}
	if p.leaveAside() {
		p.r.Resync()
	}
}

// leaveAside ends standing aside; it says whether this wrapper stood
// aside (the caller then sends its state).
func (p *Presence) leaveAside() bool {
	p.mu.Lock()
	h := p.claim.aside
	p.claim.aside = nil
	if h != nil {
		p.note.Store(p.baseNoteLocked())
	}
	p.mu.Unlock()
	if h != nil {
		p.logf("herdr: the herdr-pi wrapper pid %d no longer holds pane %s: reporting this one's state to it again", h.PID, p.cfg.PaneID)
	}
	return h != nil
}

// asideNote is what Health says while h holds the pane.
func (p *Presence) asideNote(h Wrapper) string {
	if h.Nested {
		return fmt.Sprintf("pane %s is held by the herdr-pi wrapper pid %d, started inside this one's agent: Herdr shows that agent's state, "+
			"and this one's again when it ends (this one reports nothing meanwhile, nor notifies: that wrapper tells of what both screens show)", p.cfg.PaneID, h.PID)
	}
	return fmt.Sprintf("pane %s is held by the herdr-pi wrapper pid %d, started in the pane after this one but not inside it "+
		"(a second terminal in the pane, or a copied HERDR_PANE_ID): Herdr shows that agent's state, and this one's again when it ends "+
		"(this one reports nothing meanwhile); give each agent a pane of its own", p.cfg.PaneID, h.PID)
}

// reclaim: Herdr shows another agent while an older wrapper of the pane
// stands aside for this one. It may be that wrapper's report, sent as this
// one took the pane over (it stands aside from then on), or Herdr's own
// detection of this one's agent (herdr#4020: the Pi inside a wrapped
// shell is what Herdr detects), which nothing here tells apart. So this
// one's state goes again, once per reassertGap (not a re-assert, and not
// counted as one), and the pane is read back: the older one's report gives
// way to it, Herdr's detection does not, and the pane is then held as
// without an older wrapper (heldBy). false: within reassertGap of the last
// reclaim, nothing was done and the pane counts as held.
func (p *Presence) reclaim(ctx context.Context, pane PaneInfo, older Wrapper) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return true
	}
	if !p.claim.lastReclaim.IsZero() && time.Since(p.claim.lastReclaim) < reassertGap {
		p.mu.Unlock()
		return false
	}
	p.claim.lastReclaim = time.Now()
	p.mu.Unlock()
	how := "in a second terminal of the pane"
	if older.Nested {
		how = "around this one"
	}
	p.logf("herdr: Herdr shows pane %s as %s (status %s): the last report of the herdr-pi wrapper pid %d, which runs %s and leaves the pane to this one, "+
		"or Herdr's own detection; reporting this one's state again",
		p.cfg.PaneID, shownAgent(pane), pane.AgentStatus, older.PID, how)
	p.r.Resync()
	back, ok := p.readBack(ctx)
	if !ok {
		return true
	}
	acked, _ := p.r.acknowledged()
	switch {
	case p.ours(back.Agent, back.AgentStatus, acked):
		p.regained()
	case strings.TrimSpace(back.Agent) != "":
		p.heldBy(back)
	}
	// No agent: the pane changed meanwhile, and its event reviews it.
	return true
}
