package notify

import (
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/notify/board"
	"github.com/herdr-pi/herdr-pi/notify/osc"
)

// ownRoom is how much of Herdr's 240-code-point body a question's own
// words keep when its toast names other panes' questions too.
const ownRoom = 110

// heldOn is the Herdr channel's part of the [Board]: the question of this
// pane Herdr has held back, or the end of its run, if any. The channel's
// goroutine uses it, and [Notifier.Unblocked] drops it.
type heldOn struct {
	board Board
	// isAnswered says a question is answered: it is not put on the board.
	isAnswered func(Message) bool

	mu    sync.Mutex
	entry string
	// seq is the message the entry stands for; asking says it is a
	// question (else a run's end).
	seq    uint64
	asking bool
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
// A run's end is not: it is news for as long as a toast is offered
// (herdrRetryFor), and comes off the board when its own is given up.
func (h *heldOn) holds(m Message) bool {
	if h.board == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.entry != "" && h.seq == m.seq && h.asking
}

// gaveUp takes m off the board when the channel gave its toast up.
func (h *heldOn) gaveUp(m Message) {
	if h.board == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seq == m.seq {
		h.dropLocked()
	}
}

// nameOthers adds to the toast of a question or a run's end what other
// panes hold on the board, as many as fit, and returns their entries; any
// that do not fit are counted. A hook's toast is its own words alone, and
// a run's end names no question: under a "finished" title and its sound, a
// question named in passing is easily waved away, and its pane would send
// no toast of its own; it waits for a toast of its kind, its own or
// another question's.
func (h *heldOn) nameOthers(m Message, t *HerdrToast) []string {
	if h.board == nil || m.kind == 0 {
		return nil
	}
	others := h.board.Others()
	if !m.blocking {
		others = slices.DeleteFunc(others, func(o board.Held) bool { return o.Kind == board.Asking })
	}
	if len(others) == 0 {
		return nil
	}
	body, named := withOthers(m.screenBody(ownRoom), others, herdrBodyMax)
	t.Body = body
	return named
}

// answered keeps the board in step with Herdr's answer: shown, the others
// named are told and this pane's entry is off the board; "not now", the
// question or the run's end goes (or stays) on it; anything else, it
// comes off.
func (h *heldOn) answered(m Message, reason string, named []string) {
	if h.board == nil {
		return
	}
	if reason == ReasonShown {
		h.board.Told(named)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	kind, ok := boardKind(m)
	switch {
	case retryable(reason) && ok && !h.isAnswered(m):
		if h.entry != "" && h.seq == m.seq {
			return
		}
		h.dropLocked()
		h.entry, h.seq, h.asking = h.board.HoldNews(kind, m.place), m.seq, kind == board.Asking
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

// boardKind is what m is on the board: a question, a run that finished,
// or one that failed; not ok for anything else (a hook's words).
func boardKind(m Message) (board.Kind, bool) {
	switch {
	case m.blocking:
		return board.Asking, true
	case m.kind == Finished:
		return board.Finished, true
	case m.kind == Failed:
		return board.Failed, true
	}
	return 0, false
}

// sections are the kinds a toast names others by, in the order it names
// them: a question first, since that pane waits for the person, then a
// run that failed, then one that finished.
var sections = []struct {
	kind board.Kind
	word string
}{
	{board.Asking, "asking"},
	{board.Failed, "failed"},
	{board.Finished, "finished"},
}

// withOthers is own followed by the places of the others, by kind (see
// sections) and oldest first, within limit code points: "… · also asking:
// docs, api ×3 · failed: web · finished: cli, +4 more". Panes of one place
// are counted, not repeated. What does not fit is counted, and nothing
// after it named, so a finished run is never named over a question left
// out. It returns the body and the entries it named.
func withOthers(own string, others []board.Held, limit int) (string, []string) {
	type group struct {
		place   string
		entries []string
	}
	var groups [][]*group // by section
	for _, sec := range sections {
		var gs []*group
		byPlace := map[string]*group{}
		for _, o := range others {
			if o.Kind != sec.kind {
				continue
			}
			p := osc.Truncate(osc.CleanLabel(o.Place), labelLimit)
			if p == "" {
				p = "another pane"
			}
			g := byPlace[p]
			if g == nil {
				g = &group{place: p}
				byPlace[p] = g
				gs = append(gs, g)
			}
			g.entries = append(g.entries, o.Entry)
		}
		groups = append(groups, gs)
	}
	body := own
	var named []string
fill:
	for i, gs := range groups {
		for j, g := range gs {
			sep := ", "
			if j == 0 {
				sep = sections[i].word + ": "
				if len(named) == 0 {
					sep = "also " + sep
				}
				if body != "" {
					sep = partSep + sep
				}
			}
			item := g.place
			if len(g.entries) > 1 {
				item += fmt.Sprintf(" ×%d", len(g.entries))
			}
			tail := ""
			if rest := len(others) - len(named) - len(g.entries); rest > 0 {
				tail = fmt.Sprintf(", +%d more", rest)
			}
			if utf8.RuneCountInString(body+sep+item+tail) > limit {
				break fill
			}
			body += sep + item
			named = append(named, g.entries...)
		}
	}
	if left := len(others) - len(named); left > 0 {
		if len(named) == 0 {
			what := "+%d more panes"
			if len(groups[0]) == len(others) {
				what += " asking" // all of them questions
			}
			return fitWithMore(own, fmt.Sprintf(what, left), limit), nil
		}
		body += fmt.Sprintf(", +%d more", left)
	}
	return body, named
}
