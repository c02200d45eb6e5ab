package herdr

import "context"

// Job control: Ctrl-Z stops the agent and then its wrapper, and the shell
// that started them is in front again. A stopped agent works on nothing
// and asks nothing until fg, so the pane is shown idle meanwhile, with
// why, instead of the state it was stopped in (working for as long as it
// stays stopped, say); fg brings that state back. The wrapper keeps the
// pane: an outer wrapper of the pane goes on standing aside, as the
// stopped agent's screen is still what its own screen shows.

// Suspend shows the pane idle with message, for the stop the caller is
// about to make, and waits until Herdr has it or ctx ends. The agent's
// states reported meanwhile are kept for Resume. Nothing is done before
// the first state, before Start, while another wrapper holds the pane, or
// when already suspended.
func (p *Presence) Suspend(ctx context.Context, message string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	want, ok := p.r.wanted()
	// A wrapper standing aside shows nothing to be undone.
	if !p.started || p.closed || p.held != nil || p.claim.aside != nil || !ok {
		p.mu.Unlock()
		return
	}
	p.held = &want
	p.r.Report(StateIdle, message)
	p.mu.Unlock()
	if err := p.r.Reported(ctx); err != nil {
		p.logf("herdr: pane %s may still show the state this wrapper was stopped in: %v", p.cfg.PaneID, err)
	}
}

// Resume shows the agent's state again once the wrapper runs again (fg);
// it never waits.
func (p *Presence) Resume() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		return
	}
	p.r.Report(p.held.state, p.held.message)
	p.held = nil
}
