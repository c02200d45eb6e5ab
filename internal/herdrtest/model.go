package herdrtest

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// idAlphabet is Herdr's bijective base-32 digit set for ids
// (herdr-socket-api.md §3.4): w1…w9, wA…, w0 (32), w11 (33).
const idAlphabet = "123456789ABCDEFGHJKMNPQRSTVWXYZ0"

func idNumber(n int) string {
	var b []byte
	for n > 0 {
		n--
		b = append([]byte{idAlphabet[n%32]}, b...)
		n /= 32
	}
	return string(b)
}

type workspace struct {
	id      string
	tmux    string // the tmux session ($n) behind it, real-pane mode only
	label   string
	cwd     string
	env     map[string]string
	tabs    []*tab
	active  *tab
	tabSeq  int
	paneSeq int
}

type tab struct {
	id      string
	tmux    string // the tmux window (@n) behind it, real-pane mode only
	ws      *workspace
	label   string
	panes   []*pane
	focused *pane
}

type authority struct{ source, agent, state, message string }

type pane struct {
	id       string
	term     string
	tab      *tab
	cwd      string
	env      map[string]string
	revision uint64
	auth     *authority
	// detected is Herdr's own detection holding the pane (LocalDetection);
	// it wins over auth while set.
	detected *authority
	// seqs is the last accepted seq per source (§6.3).
	seqs map[string]uint64
	// exitedAgents are agent labels whose process "exited" in this pane;
	// custom reports with them are dropped (§6.2 (c)).
	exitedAgents map[string]bool
	process      *ProcessInfo
	stateSeq     uint64
	// unseen says the pane finished (working or blocked to idle) out of
	// sight, so its idle reads done until its tab is focused (§9.3).
	unseen bool
	// tmux is the tmux pane (%n) behind a real pane, root the supervisor
	// that tmux started in it and shell the shell that runs under it (found
	// on first use); all empty in data-only mode.
	tmux        string
	root, shell int
	// meta is the display metadata each source reported (§4.4
	// pane.report_metadata): display only, never the state.
	meta map[string]*paneMeta
}

// paneMeta is one source's display metadata for a pane. agent, when set,
// is the guard: the metadata shows only while the pane's agent is that one.
type paneMeta struct {
	agent, title string
	tokens       map[string]string
}

// world is the fake's topology: workspaces, tabs and panes with Herdr's id
// rules (never reused; per-workspace counters).
type world struct {
	workspaces []*workspace
	activeWS   *workspace
	wsSeq      int
	termSeq    int
	panes      map[string]*pane
}

func (w *world) init() {
	w.panes = map[string]*pane{}
	ws := w.newWorkspace("1", "", nil)
	w.activeWS = ws
}

func (w *world) newWorkspace(label, cwd string, env map[string]string) *workspace {
	w.wsSeq++
	ws := &workspace{id: "w" + idNumber(w.wsSeq), label: label, cwd: cwd, env: env}
	if ws.label == "" {
		ws.label = idNumber(w.wsSeq)
	}
	w.workspaces = append(w.workspaces, ws)
	t := w.newTab(ws, "", cwd, env)
	ws.active = t
	return ws
}

func (w *world) newTab(ws *workspace, label, cwd string, env map[string]string) *tab {
	ws.tabSeq++
	t := &tab{id: ws.id + ":t" + idNumber(ws.tabSeq), ws: ws, label: label}
	ws.tabs = append(ws.tabs, t)
	if t.label == "" {
		t.label = idNumber(len(ws.tabs))
	}
	t.focused = w.newPane(t, cwd, env)
	return t
}

func (w *world) newPane(t *tab, cwd string, env map[string]string) *pane {
	t.ws.paneSeq++
	w.termSeq++
	p := &pane{
		id:   t.ws.id + ":p" + idNumber(t.ws.paneSeq),
		term: fmt.Sprintf("term_%x%x", time.Now().UnixMicro(), w.termSeq),
		tab:  t, cwd: cwd, env: env,
		seqs: map[string]uint64{}, exitedAgents: map[string]bool{},
	}
	t.panes = append(t.panes, p)
	w.panes[p.id] = p
	return p
}

// forgetAuthority drops what a live handoff loses: reported states and seq
// memory (§9.1).
func (w *world) forgetAuthority() {
	for _, p := range w.panes {
		p.auth, p.detected, p.unseen = nil, nil, false
		p.seqs = map[string]uint64{}
	}
}

func (w *world) wsByID(id string) *workspace {
	for _, ws := range w.workspaces {
		if ws.id == id {
			return ws
		}
	}
	return nil
}

func (w *world) tabByID(id string) *tab {
	for _, ws := range w.workspaces {
		for _, t := range ws.tabs {
			if t.id == id {
				return t
			}
		}
	}
	return nil
}

// activePane is the active workspace's focused pane.
func (w *world) activePane() *pane {
	if w.activeWS == nil || w.activeWS.active == nil {
		return nil
	}
	return w.activeWS.active.focused
}

// removePane takes a pane out of its tab, and the tab (and workspace) out
// when it was the last; it reports what else went.
func (w *world) removePane(p *pane) (tabGone, wsGone bool) {
	t := p.tab
	delete(w.panes, p.id)
	t.panes = remove(t.panes, p)
	if t.focused == p && len(t.panes) > 0 {
		t.focused = t.panes[0]
	}
	if len(t.panes) > 0 {
		return false, false
	}
	return true, w.removeTab(t)
}

func (w *world) removeTab(t *tab) (wsGone bool) {
	ws := t.ws
	for _, p := range t.panes {
		delete(w.panes, p.id)
	}
	ws.tabs = remove(ws.tabs, t)
	if ws.active == t && len(ws.tabs) > 0 {
		ws.active = ws.tabs[0]
	}
	if len(ws.tabs) > 0 {
		return false
	}
	w.removeWorkspace(ws)
	return true
}

func (w *world) removeWorkspace(ws *workspace) {
	for _, t := range ws.tabs {
		for _, p := range t.panes {
			delete(w.panes, p.id)
		}
	}
	w.workspaces = remove(w.workspaces, ws)
	if w.activeWS == ws {
		w.activeWS = nil
		if len(w.workspaces) > 0 {
			w.activeWS = w.workspaces[0]
		}
	}
}

func remove[T comparable](s []T, v T) []T {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

func (p *pane) status() string {
	st := p.rawStatus()
	if st == "idle" && p.unseen {
		return "done"
	}
	return st
}

// rawStatus is the effective state as reported or detected, before done
// is derived from it.
func (p *pane) rawStatus() string {
	if a := p.effective(); a != nil {
		return a.state
	}
	return "unknown"
}

// inFocusedTab reports whether p is in the active tab of the active
// workspace, where Herdr takes a finish as seen (§9.3).
func (w *world) inFocusedTab(p *pane) bool {
	return w.activeWS == p.tab.ws && p.tab.ws.active == p.tab
}

func (p *pane) agent() string {
	if a := p.effective(); a != nil {
		return a.agent
	}
	return ""
}

// effective is what decides the pane's agent and status: Herdr's own
// detection while it holds the pane, else the hook authority.
func (p *pane) effective() *authority {
	if p.detected != nil {
		return p.detected
	}
	return p.auth
}

// acceptSeq applies Herdr's seq rule for one source (§6.3): with a seq it
// must be above the last accepted one; without, none may have been accepted.
func (p *pane) acceptSeq(source string, seq uint64, has bool) bool {
	last, set := p.seqs[source]
	if !has {
		return !set
	}
	if set && seq <= last {
		return false
	}
	p.seqs[source] = seq
	return true
}

var statusRank = map[string]int{"unknown": 0, "idle": 1, "done": 2, "working": 3, "blocked": 4}

func rollup(ps []*pane) string {
	best := "unknown"
	for _, p := range ps {
		if statusRank[p.status()] > statusRank[best] {
			best = p.status()
		}
	}
	return best
}

func (w *world) paneInfo(p *pane) map[string]any {
	m := map[string]any{
		"pane_id": p.id, "terminal_id": p.term, "workspace_id": p.tab.ws.id, "tab_id": p.tab.id,
		"focused": p.tab.focused == p, "agent_status": p.status(), "revision": p.revision,
	}
	if p.cwd != "" {
		m["cwd"] = p.cwd
	}
	if a := p.agent(); a != "" {
		m["agent"] = a
	}
	p.addMeta(m)
	return m
}

// addMeta shows the display metadata whose guard holds: a title (the
// newest source's, in source order — the fake keeps no clock for it) and
// the tokens of every source.
func (p *pane) addMeta(m map[string]any) {
	sources := make([]string, 0, len(p.meta))
	for src := range p.meta {
		sources = append(sources, src)
	}
	sort.Strings(sources)
	tokens := map[string]any{}
	for _, src := range sources {
		md := p.meta[src]
		if md.agent != "" && md.agent != p.agent() {
			continue
		}
		if md.title != "" {
			m["title"] = md.title
		}
		for k, v := range md.tokens {
			tokens[k] = v
		}
	}
	if len(tokens) > 0 {
		m["tokens"] = tokens
	}
}

// title is the title the pane shows (addMeta's), "" when none.
func (p *pane) title() string {
	m := map[string]any{}
	p.addMeta(m)
	t, _ := m["title"].(string)
	return t
}

func (w *world) agentInfo(p *pane) map[string]any {
	m := map[string]any{
		"pane_id": p.id, "terminal_id": p.term, "workspace_id": p.tab.ws.id, "tab_id": p.tab.id,
		"focused": p.tab.focused == p, "agent_status": p.status(), "revision": p.revision,
		"state_change_seq": p.stateSeq,
	}
	if p.cwd != "" {
		m["cwd"] = p.cwd
	}
	if a := p.agent(); a != "" {
		m["agent"] = a
	}
	return m
}

func (w *world) tabInfo(t *tab) map[string]any {
	num := 0
	for i, x := range t.ws.tabs {
		if x == t {
			num = i + 1
		}
	}
	return map[string]any{
		"tab_id": t.id, "workspace_id": t.ws.id, "number": num, "label": t.label,
		"focused": t.ws.active == t, "pane_count": len(t.panes), "agent_status": rollup(t.panes),
	}
}

func (w *world) workspaceInfo(ws *workspace) map[string]any {
	num := 0
	for i, x := range w.workspaces {
		if x == ws {
			num = i + 1
		}
	}
	var all []*pane
	for _, t := range ws.tabs {
		all = append(all, t.panes...)
	}
	active := ""
	if ws.active != nil {
		active = ws.active.id
	}
	return map[string]any{
		"workspace_id": ws.id, "number": num, "label": ws.label, "focused": w.activeWS == ws,
		"pane_count": len(all), "tab_count": len(ws.tabs), "active_tab_id": active,
		"agent_status": rollup(all),
	}
}

// layout lays a tab's panes side by side in a 200x50 area; the fake has no
// real geometry, only a well-formed snapshot.
func (w *world) layout(t *tab) map[string]any {
	const width, height = 200, 50
	panes := []any{}
	n := len(t.panes)
	for i, p := range t.panes {
		x := width * i / max(n, 1)
		panes = append(panes, map[string]any{
			"pane_id": p.id, "focused": t.focused == p,
			"rect": map[string]any{"x": x, "y": 0, "width": width*(i+1)/max(n, 1) - x, "height": height},
		})
	}
	focused := ""
	if t.focused != nil {
		focused = t.focused.id
	}
	return map[string]any{
		"workspace_id": t.ws.id, "tab_id": t.id, "zoomed": false,
		"area":            map[string]any{"x": 0, "y": 0, "width": width, "height": height},
		"focused_pane_id": focused, "panes": panes, "splits": []any{},
	}
}

// canonicalAgent trims a label and folds known agents' spellings to their
// canonical names, as Herdr does (§4.2).
func canonicalAgent(a string) string {
	a = strings.TrimSpace(a)
	switch l := strings.ToLower(a); l {
	case "pi", "claude", "codex", "omp", "opencode", "droid", "copilot", "cursor", "grok", "kimi", "kilo", "hermes":
		return l
	case "claude-code":
		return "claude"
	}
	return a
}
