package session

// Tree holds a session's entries as Pi would load them: the leaf is the
// last entry line of the file (pi-agent.md §5.1), the branch is the path
// from it to the root through parentId.
type Tree struct {
	Cwd     string // from the header
	byID    map[string]Entry
	leaf    string
	entries int
}

// NewTree returns an empty tree.
func NewTree() *Tree { return &Tree{byID: map[string]Entry{}} }

// Add records one parsed line; the last one added is the leaf.
func (t *Tree) Add(e Entry) {
	if e.Type == "session" {
		t.Cwd = e.Cwd
		return
	}
	t.byID[e.ID] = e
	t.leaf = e.ID
	t.entries++
}

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

// Blocked applies the sentinel rule to the branch (§16, §20): walking back
// from the leaf, a user message means answered (not blocked); other roles
// (tool results, bash runs, custom messages, Pi's system entries) are
// passed over; the first assistant message decides by its marker. An
// assistant message that handed over to tools (stopReason "toolUse") is
// not the end of a run, so its marker does not block: the rule is
// evaluated by the extensions only once the run settles, and a file read
// mid-run must not turn the pane red early.
func (t *Tree) Blocked() (blocked bool, entryID string) {
	for _, e := range t.Branch() {
		if e.Type != "message" {
			continue
		}
		switch e.Role {
		case "user":
			return false, ""
		case "assistant":
			if e.Marker && e.StopReason != "toolUse" {
				return true, e.ID
			}
			return false, ""
		}
	}
	return false, ""
}
