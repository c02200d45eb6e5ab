package notify

import (
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/notify/board"
	"github.com/herdr-pi/herdr-pi/notify/osc"
)

// ownRoom is how much of Herdr's 240-code-point body a question's own
// words keep when its toast names other panes' questions too.
const ownRoom = 110

// heldOn is the Herdr channel's part of the [Board]: the question of this
// pane Herdr has held back, if any. The channel's goroutine uses it, and
// [Notifier.Unblocked] drops it.
type heldOn struct {
	board Board
	// isAnswered says a question is answered: it is not put on the board.
	isAnswered func(Message) bool

	mu    sync.Mutex
	entry string
	// seq is the message the entry stands for.
	seq uint64
}

// taken reports whether another pane's toast named m while Herdr held it
// back: m is told, and needs no toast of its own.
func (h *heldOn) taken(m Message) bool {
	if h.board == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entry == "" || !h.board.Taken(h.entry) {
		return false
	}
	h.entry = ""
	// A newer message replaced the one named: it is news of its own.
	return h.seq == m.seq
}

// holds reports whether m is the question this pane has on the board: it
// is offered to Herdr for as long as it is, named by no other toast yet.
func (h *heldOn) holds(m Message) bool {
	if h.board == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.entry != "" && h.seq == m.seq
}

// nameOthers adds to the toast of a question the questions other panes
// hold on the board, as many as fit, and returns their entries; any that
// do not fit are counted.
func (h *heldOn) nameOthers(m Message, t *HerdrToast) []string {
	if h.board == nil || !m.blocking {
		return nil
	}
	others := h.board.Others()
	if len(others) == 0 {
		return nil
	}
	body, named := withOthers(m.screenBody(ownRoom), others, herdrBodyMax)
	t.Body = body
	return named
}

// answered keeps the board in step with Herdr's answer: shown, the others
// named are told and this pane's question is off the board; "not now",
// the question goes (or stays) on it; anything else, it comes off.
func (h *heldOn) answered(m Message, reason string, named []string) {
	if h.board == nil {
		return
	}
	if reason == ReasonShown {
		h.board.Told(named)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case retryable(reason) && m.blocking && !h.isAnswered(m):
		if h.entry != "" && h.seq == m.seq {
			return
		}
		h.dropLocked()
		h.entry, h.seq = h.board.Hold(m.place), m.seq
	default:
		h.dropLocked()
	}
}

// drop takes this pane's question off the board.
func (h *heldOn) drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked()
}

func (h *heldOn) dropLocked() {
	if h.board != nil && h.entry != "" {
		h.board.Drop(h.entry)
	}
	h.entry = ""
}

// withOthers is own followed by the places of the others, oldest first,
// within limit code points: "… · also asking: docs, api ×3, +4 more".
// Panes of one place are counted, not repeated. It returns the body and
// the entries it named.
func withOthers(own string, others []board.Held, limit int) (string, []string) {
	type group struct {
		place   string
		entries []string
	}
	var groups []*group
	byPlace := map[string]*group{}
	for _, o := range others {
		p := osc.Truncate(osc.CleanLabel(o.Place), labelLimit)
		if p == "" {
			p = "another pane"
		}
		g := byPlace[p]
		if g == nil {
			g = &group{place: p}
			byPlace[p] = g
			groups = append(groups, g)
		}
		g.entries = append(g.entries, o.Entry)
	}
	lead := "also asking: "
	if own != "" {
		lead = own + partSep + lead
	}
	body, sep := lead, ""
	var named []string
	for i, g := range groups {
		item := g.place
		if len(g.entries) > 1 {
			item += fmt.Sprintf(" ×%d", len(g.entries))
		}
		rest := 0
		for _, later := range groups[i+1:] {
			rest += len(later.entries)
		}
		tail := ""
		if rest > 0 {
			tail = fmt.Sprintf(", +%d more", rest)
		}
		if utf8.RuneCountInString(body+sep+item+tail) > limit {
			break
		}
		body += sep + item
		sep = ", "
		named = append(named, g.entries...)
	}
	if left := len(others) - len(named); left > 0 {
		if len(named) == 0 {
			return fitWithMore(own, fmt.Sprintf("+%d more panes asking", left), limit), nil
		}
		body += fmt.Sprintf(", +%d more", left)
	}
	return body, named
}
