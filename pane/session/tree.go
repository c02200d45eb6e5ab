package session

import "time"

// Tree holds a session's entries as Pi would load them: the leaf is the
// last entry line of the file (pi-agent.md §5.1), the branch is the path
// from it to the root through parentId — until [Tree.Pin] names the leaf
// of the one Pi the pane runs.
type Tree struct {
	Cwd     string // from the header
	byID    map[string]Entry
	leaf    string
	entries int
	// pinned: the leaf is the one the probe named for its own Pi, and
	// moves only as follow allows (see Pin).
	pinned, follow bool
	lastLine       string // the last entry line's id, the leaf unpinned
	// watching is set once entries are added as Pi writes them (see
	// [Tree.Watching]); pastHandOvers holds the replies added before that
	// which end with the marker and handed over to tools.
	watching      bool
	pastHandOvers map[string]bool
}

// NewTree returns an empty tree.
func NewTree() *Tree { return &Tree{byID: map[string]Entry{}} }

// Add records one parsed line; unpinned, the last one added is the leaf.
// Pinned, an entry becomes the leaf only while following and when its
// parent is the leaf: the next link of this Pi's chain. Any other entry is
// kept (a later pin may name it) but leaves the leaf where it is.
func (t *Tree) Add(e Entry) {
	if e.Type == "session" {
		t.Cwd = e.Cwd
		return
	}
	t.byID[e.ID] = e
	t.lastLine = e.ID
	if !t.pinned || (t.follow && e.ParentID == t.leaf) {
		t.leaf = e.ID
	}
	t.entries++
	if !t.watching && e.Role == "assistant" && e.Marker && e.StopReason == "toolUse" {
		if t.pastHandOvers == nil {
			t.pastHandOvers = map[string]bool{}
		}
		t.pastHandOvers[e.ID] = true
	}
}

// Watching says that the entries added from now on are read as Pi writes
// them, so the run that wrote one may still go on. Before it, entries are
// the file as an earlier Pi (or session) left it: its runs are over.
func (t *Tree) Watching() { t.watching = true }

// WrittenSince says whether Pi made the entry id at since or later, by
// the entry's own time: what Pi writes while it is watched, as opposed to
// the history it had, and copies along when it starts a session from
// another (a fork, a clone, an import writes old entries to a new file).
// An entry without a time is taken as history. mtimeSlack allows for the
// coarse clock the times may come from.
func (t *Tree) WrittenSince(id string, since time.Time) bool {
	e, ok := t.byID[id]
	return ok && !e.Time.IsZero() && !e.Time.Before(since.Add(-mtimeSlack))
}

// WrittenBefore says whether Pi made the entry id before since, by the
// entry's own time (see WrittenSince): history. An entry without a time
// is not known to be either.
func (t *Tree) WrittenBefore(id string, since time.Time) bool {
	e, ok := t.byID[id]
	return ok && !e.Time.IsZero() && e.Time.Before(since.Add(-mtimeSlack))
}

// Pin makes leaf the leaf, whatever the file's last line: the leaf of the
// Pi this pane runs, as its probe says it (Pi does not lock the file, and
// another Pi continuing the same session appends its own entries from its
// own leaf; pi-agent.md §5.1). "" is an empty session's root. With follow
// (this Pi runs, so it writes), each entry added whose parent is the leaf
// moves the leaf on; without it (this Pi is idle and writes nothing that
// asks or answers), nothing added moves it: two Pis idle on one leaf give
// the next entry hanging off it to whichever runs first, and only the
// probe knows which. A pin stays until the next one.
func (t *Tree) Pin(leaf string, follow bool) {
	t.pinned, t.leaf, t.follow = true, leaf, follow
}

// Unpin returns to the last-line rule.
func (t *Tree) Unpin() { t.pinned, t.follow, t.leaf = false, false, t.lastLine }

// Len is the number of entries added (header excluded).
func (t *Tree) Len() int { return t.entries }

// Branch returns the current branch from the leaf back to the root. A
// missing parent ends it; a cycle (a broken file) is cut where it closes.
func (t *Tree) Branch() []Entry {
	var branch []Entry
	seen := map[string]bool{}
	for id := t.leaf; id != "" && !seen[id]; {
		e, ok := t.byID[id]
		if !ok {
			break
		}
		seen[id] = true
		branch = append(branch, e)
		id = e.ParentID
	}
	return branch
}

// decidedWithin says whether the sentinel and retry rules decide on the
// entries the tree has, read from a file's end (see tail.readBack): the
// branch walked back from the leaf comes to a user or assistant message
// (both rules decide by then) or to its root, not to an entry the tree
// lacks. A tree without entries has not read the file's last line.
func (t *Tree) decidedWithin() bool {
	if t.entries == 0 && !(t.pinned && t.leaf == "") {
		return false
	}
	seen := map[string]bool{}
	for id := t.leaf; id != "" && !seen[id]; {
		e, ok := t.byID[id]
		if !ok {
			return false
		}
		if e.Type == "message" && (e.Role == "user" || e.Role == "assistant") {
			return true
		}
		seen[id] = true
		id = e.ParentID
	}
	return true
}

// Blocked applies the sentinel rule to the branch (§16, §20): walking back
// from the leaf, a user message means answered (not blocked); other roles
// (tool results, bash runs, custom messages, Pi's system entries) are
// passed over; the first assistant message decides by its marker, whatever
// its stop reason. So a session that Pi left — killed, or aborted while a
// tool ran — right after a reply that ends with the marker and hands over
// to tools (stopReason "toolUse") is restored as blocked, as the reference
// and the probe restore it.
//
// The one exception is ours, because the reference never reads a branch
// while a run goes on (only at session start and once the run settles)
// and we do: a hand-over added after [Tree.Watching] is the middle of a
// run, its tools about to answer, and must not turn the pane red early.
func (t *Tree) Blocked() (blocked bool, entryID string) {
	for _, e := range t.Branch() {
		if e.Type != "message" {
			continue
		}
		switch e.Role {
		case "user":
			return false, ""
		case "assistant":
			if e.Marker && (e.StopReason != "toolUse" || t.pastHandOvers[e.ID]) {
				return true, e.ID
			}
			return false, ""
		}
	}
	return false, ""
}

// RetryPending says whether the branch ends in a retry Pi left pending: its
// last message is a reply that failed (stop reason error), and an entry
// after it leaves that reply out of what the model sees again — what Pi
// 1.6.0 writes as it schedules a retry ("Retrying (1/3) in 2s... (escape
// to cancel)") — and no retry's reply came after. Read as a run ends, that
// is a retry the person cancelled on its countdown: Pi then ends the run
// with the failed reply's stop reason, and says no more. Retries that ran
// out ("Retry failed after 3 attempts") end with a reply that is not left
// out; a failure Pi does not retry is not left out either. Pi also leaves
// out a reply that overflowed the context, before it compacts: telling
// that apart is the reader's business (a compaction within the run).
func (t *Tree) RetryPending() (pending bool, entryID string) {
	omitted := map[string]bool{}
	for _, e := range t.Branch() {
		if e.Omits != "" {
			omitted[e.Omits] = true
			continue
		}
		if e.Type != "message" {
			continue
		}
		if e.Role == "assistant" && e.StopReason == "error" && omitted[e.ID] {
			return true, e.ID
		}
		return false, ""
	}
	return false, ""
}
