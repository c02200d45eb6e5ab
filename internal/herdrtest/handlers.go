package herdrtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// AgentCall is one pane.report_agent, pane.release_agent or
// pane.clear_agent_authority as the fake judged it.
type AgentCall struct {
	Method  string // the full method name
	PaneID  string
	Source  string
	Agent   string
	State   string // report_agent only
	Message string
	Seq     uint64
	HasSeq  bool
	// ResumeArgv is report_agent's resume_argv as a protocol-22 fake read
	// it; nil when absent and always under protocol 20, which ignores it.
	ResumeArgv []string
	// Accepted means the seq rules let it through (§6.3); Herdr answers ok
	// either way. Applied means it changed the pane's authority.
	Accepted bool
	Applied  bool
	At       time.Time
	// Request is the arrival number of the request that carried it
	// (Request.N in Requests).
	Request int
}

// NotificationCall is one notification.show and what the fake answered.
type NotificationCall struct {
	Title, Body, Sound, Position string
	Shown                        bool
	Reason                       string
	At                           time.Time
}

// InputCall is one pane.send_input.
type InputCall struct {
	PaneID string
	Text   string // as sent
	Keys   []string
	// Typed is the part of Text that reaches the pane, Truncated whether
	// that is less (MaxTypedInput).
	Typed     string
	Truncated bool
}

// ProcessInfo is what pane.process_info answers for a pane.
type ProcessInfo struct {
	ShellPID                 *int
	ForegroundProcessGroupID *int
	Processes                []Process
}

// Process is one foreground process in ProcessInfo.
type Process struct {
	PID  int
	Name string
	Argv []string
	Cwd  string
}

// PaneState is the fake's view of a pane.
type PaneState struct {
	Exists bool
	Status string // effective agent status
	Agent  string // effective agent label, "" when none
	Source string // the authority's source, "" when none
}

// AgentCalls returns the agent reports, releases and clears for a pane, in
// order of arrival.
func (s *Server) AgentCalls(pane string) []AgentCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []AgentCall
	for _, c := range s.agentCalls {
		if c.PaneID == pane {
			out = append(out, c)
		}
	}
	return out
}

func (s *Server) agentCallsOf(pane, method string) []AgentCall {
	var out []AgentCall
	for _, c := range s.AgentCalls(pane) {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Reports returns the pane.report_agent calls for a pane.
func (s *Server) Reports(pane string) []AgentCall { return s.agentCallsOf(pane, "pane.report_agent") }

// Releases returns the pane.release_agent calls for a pane.
func (s *Server) Releases(pane string) []AgentCall {
	return s.agentCallsOf(pane, "pane.release_agent")
}

// Notifications returns every notification.show with its answer.
func (s *Server) Notifications() []NotificationCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]NotificationCall(nil), s.notifications...)
}

// Inputs returns every pane.send_input.
func (s *Server) Inputs() []InputCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]InputCall(nil), s.inputs...)
}

// Pane returns the fake's view of a pane.
func (s *Server) Pane(id string) PaneState {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.panes[id]
	if p == nil {
		return PaneState{}
	}
	st := PaneState{Exists: true, Status: p.status(), Agent: p.agent()}
	if a := p.effective(); a != nil {
		st.Source = a.source
	}
	return st
}

// SetDelivery sets Herdr's toast delivery: off, herdr, terminal or system.
func (s *Server) SetDelivery(d string) {
	s.mu.Lock()
	s.delivery = d
	s.mu.Unlock()
}

// ScriptNotificationReasons makes the next notifications that would be
// shown answer these reasons instead (busy, no_foreground_client), in order.
// Under herdr delivery a busy comes before the rate limit, as in Herdr.
func (s *Server) ScriptNotificationReasons(reasons ...string) {
	s.mu.Lock()
	s.reasons = append(s.reasons, reasons...)
	s.mu.Unlock()
}

// SetProcessInfo scripts what pane.process_info answers for a pane.
func (s *Server) SetProcessInfo(paneID string, pi ProcessInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.panes[paneID]; p != nil {
		p.process = &pi
	}
}

// ExitPane makes the pane's process die: pane.exited, then the pane is
// gone (and layout.updated for its tab, if the tab remains). A real pane's
// shell is killed (SIGKILL) and ExitPane returns once the fake has seen it.
func (s *Server) ExitPane(paneID string) {
	s.mu.Lock()
	p := s.panes[paneID]
	if p == nil {
		s.mu.Unlock()
		return
	}
	if pid := s.shellPID(p); pid > 0 {
		s.mu.Unlock()
		_ = syscall.Kill(pid, syscall.SIGKILL)
		s.Await(10*time.Second, func() bool { _, ok := s.Exited(paneID); return ok })
		return
	}
	defer s.mu.Unlock()
	s.paneExited(p, PaneExit{})
}

// SimulateAgentProcessExit imitates Herdr seeing the process of agent exit
// in a pane: the pane's seq memory resets (§6.3), a matching authority is
// cleared, and custom reports labelled agent are dropped from then on
// (§6.2 (c)).
func (s *Server) SimulateAgentProcessExit(paneID, agent string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.panes[paneID]
	if p == nil {
		return
	}
	p.seqs = map[string]uint64{}
	p.exitedAgents[canonicalAgent(agent)] = true
	if p.auth != nil && p.auth.agent == canonicalAgent(agent) {
		s.setAuthority(p, nil)
	}
}

type apiError struct {
	code, message string
	id            *string // replaces the request id when set
}

func errf(code, format string, args ...any) *apiError {
	return &apiError{code: code, message: fmt.Sprintf(format, args...)}
}

func ok() map[string]any { return map[string]any{"type": "ok"} }

// handle answers one request line; sub is set when the connection turns
// into an event stream. invalid is the schema's complaint about the line:
// Herdr's typed decoding rejects what the schema rejects, so the fake does
// too.
func (s *Server) handle(n int, line []byte, invalid string) (out []byte, kind string, sub *subscriber) {
	// Protocol 20 answers a request it cannot read under the id "";
	// protocol 22 keeps the id when there is one to keep.
	var badID string
	if s.newer() {
		var head struct {
			ID any `json:"id"`
		}
		_ = json.Unmarshal(line, &head)
		badID, _ = head.ID.(string)
	}
	bad := func(msg string) ([]byte, string, *subscriber) {
		return s.errorLine(badID, "invalid_request", "invalid request: "+msg), "error", nil
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(line, &env); err != nil || env == nil {
		return bad("expected a JSON object")
	}
	var id, method string
	if raw, ok := env["id"]; !ok {
		return bad("missing field `id`")
	} else if json.Unmarshal(raw, &id) != nil {
		return bad("invalid type for `id`, expected a string")
	}
	if raw, ok := env["method"]; !ok {
		return bad("missing field `method`")
	} else if json.Unmarshal(raw, &method) != nil {
		return bad("invalid type for `method`, expected a string")
	}
	if !knownMethods[method] {
		return bad(fmt.Sprintf("unknown variant `%s`", method))
	}
	rawParams, has := env["params"]
	if !has {
		return bad("missing field `params`")
	}
	if invalid != "" {
		return bad(invalid)
	}
	p := newParams(rawParams)
	if p.err != "" {
		return bad(p.err)
	}
	p.req = n

	s.mu.Lock()
	res, aerr, sub := s.dispatch(id, method, p)
	s.mu.Unlock()
	if p.err != "" {
		return bad(p.err)
	}
	if aerr != nil {
		rid := id
		if aerr.id != nil {
			rid = *aerr.id
		}
		return s.errorLine(rid, aerr.code, aerr.message), "error", nil
	}
	b, err := json.Marshal(map[string]any{"id": id, "result": res})
	if err != nil {
		return s.errorLine(id, "internal_error", err.Error()), "error", nil
	}
	if method == "ping" && s.opts.Capabilities != nil {
		return b, kindUnchecked, nil // a test's own capabilities, on purpose off the schema
	}
	return b, "success", sub
}

func (s *Server) errorLine(id, code, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "error": map[string]string{"code": code, "message": msg}})
	return b
}

// dispatch runs one method under s.mu. Handlers decode params first; a
// decoding failure (p.err) turns into invalid_request in handle.
func (s *Server) dispatch(id, method string, p *params) (map[string]any, *apiError, *subscriber) {
	switch method {
	case "ping":
		return map[string]any{"type": "pong", "version": s.opts.Version, "protocol": s.protocol,
			"capabilities": s.capabilities()}, nil, nil
	case "pane.report_agent":
		return s.reportAgent(p)
	case "pane.release_agent":
		return s.releaseAgent(p)
	case "pane.clear_agent_authority":
		return s.clearAuthority(p)
	case "pane.report_metadata":
		return s.reportMetadata(p)
	case "notification.show":
		return s.showNotification(p)
	case "workspace.create":
		return s.workspaceCreate(p)
	case "workspace.list":
		list := []any{}
		for _, ws := range s.workspaces {
			list = append(list, s.workspaceInfo(ws))
		}
		return map[string]any{"type": "workspace_list", "workspaces": list}, nil, nil
	case "tab.list", "pane.list":
		return s.listTabsOrPanes(method, p)
	case "workspace.get":
		wid := p.str("workspace_id")
		ws := s.wsByID(wid)
		if p.err != "" {
			return nil, nil, nil
		}
		if ws == nil {
			return nil, errf("workspace_not_found", "workspace %s not found", wid), nil
		}
		return map[string]any{"type": "workspace_info", "workspace": s.workspaceInfo(ws)}, nil, nil
	case "workspace.close":
		return s.workspaceClose(p)
	case "tab.create":
		return s.tabCreate(p)
	case "tab.rename":
		return s.tabRename(p)
	case "tab.focus":
		return s.tabFocus(p)
	case "tab.close":
		return s.tabClose(p)
	case "pane.split":
		return s.paneSplit(p)
	case "pane.send_input":
		return s.sendInput(p)
	case "pane.close":
		return s.paneClose(p)
	case "pane.get":
		pid := p.str("pane_id")
		if p.err != "" {
			return nil, nil, nil
		}
		pn := s.panes[pid]
		if pn == nil {
			return nil, errf("pane_not_found", "pane %s not found", pid), nil
		}
		return map[string]any{"type": "pane_info", "pane": s.paneInfo(pn)}, nil, nil
	case "pane.process_info":
		return s.processInfo(p)
	case "pane.layout":
		pn, aerr := s.targetPane(p)
		if pn == nil {
			return nil, aerr, nil
		}
		if pn.tab.tmux == "" {
			return map[string]any{"type": "pane_layout", "layout": s.layout(pn.tab)}, nil, nil
		}
		l, err := s.realLayout(pn.tab)
		if err != nil {
			return nil, errf("pane_layout_unavailable", "pane %s: %v", pn.id, err), nil
		}
		return map[string]any{"type": "pane_layout", "layout": l}, nil, nil
	case "agent.get":
		target := p.str("target")
		if p.err != "" {
			return nil, nil, nil
		}
		pn := s.panes[target]
		if pn == nil || pn.effective() == nil {
			return nil, errf("agent_not_found", "agent target %s not found", target), nil
		}
		return map[string]any{"type": "agent_info", "agent": s.agentInfo(pn)}, nil, nil
	case "events.subscribe":
		return s.subscribe(id, p)
	}
	return nil, errf("not_implemented", "method not implemented yet"), nil
}

func (s *Server) paneFor(p *params, pid string) (*pane, *apiError) {
	if p.err != "" {
		return nil, nil
	}
	pn := s.panes[pid]
	if pn == nil {
		return nil, errf("pane_not_found", "pane %s not found", pid)
	}
	return pn, nil
}

// officialSources are Herdr's own integrations (herdr-socket-api.md §6.2):
// full-lifecycle ones, whose reports count only while Herdr detects the
// agent's process and the session is anchored; session-only ones, whose
// state is ignored; and two whose state reports are dropped. The fake
// never detects an agent process, so for all of them reports and releases
// do nothing. Any other source, herdr:-prefixed or not, is custom.
var officialSources = map[string]bool{}

func init() {
	for _, a := range []string{
		"pi", "omp", "mastracode", "opencode", "kilo", "kimi", // full lifecycle
		"claude", "codex", "copilot", "devin", "droid", "qodercli", "cursor", "grok", // session only
		"hermes", "antigravity_cli", // state dropped
	} {
		officialSources["herdr:"+a] = true
	}
}

func official(source string) bool { return officialSources[source] }

func (s *Server) reportAgent(p *params) (map[string]any, *apiError, *subscriber) {
	pid, source, agent, state := p.str("pane_id"), p.str("source"), p.str("agent"), p.str("state")
	p.enum("state", state, p.err == "", "idle", "working", "blocked", "unknown")
	msg, _ := p.optStr("message")
	seq, hasSeq := p.optU64("seq")
	p.optStr("agent_session_id")
	p.optStr("agent_session_path")
	resume := s.resumeArgv(p)
	pn, aerr := s.paneFor(p, pid)
	if pn == nil {
		return nil, aerr, nil
	}
	label := canonicalAgent(agent)
	if label == "" {
		return nil, errf("invalid_agent", "agent label must not be empty"), nil
	}
	call := AgentCall{Request: p.req, Method: "pane.report_agent", PaneID: pid, Source: source, Agent: label, State: state,
		Message: msg, Seq: seq, HasSeq: hasSeq, ResumeArgv: resume, At: time.Now()}
	call.Accepted = pn.acceptSeq(source, seq, hasSeq)
	if call.Accepted && !official(source) && !pn.exitedAgents[label] && !pn.heldByDetection(label) {
		s.setAuthority(pn, &authority{source: source, agent: label, state: state, message: msg})
		call.Applied = true
	}
	s.agentCalls = append(s.agentCalls, call)
	return ok(), nil, nil
}

func (s *Server) releaseAgent(p *params) (map[string]any, *apiError, *subscriber) {
	pid, source, agent := p.str("pane_id"), p.str("source"), p.str("agent")
	seq, hasSeq := p.optU64("seq")
	pn, aerr := s.paneFor(p, pid)
	if pn == nil {
		return nil, aerr, nil
	}
	label := canonicalAgent(agent)
	if label == "" {
		return nil, errf("invalid_agent", "agent label must not be empty"), nil
	}
	call := AgentCall{Request: p.req, Method: "pane.release_agent", PaneID: pid, Source: source, Agent: label,
		Seq: seq, HasSeq: hasSeq, At: time.Now()}
	call.Accepted = pn.acceptSeq(source, seq, hasSeq)
	// Herdr clears only its own authority, and only while the pane shows
	// that agent: a detection holding the pane under another label keeps
	// the release from touching it (§4.2).
	if call.Accepted && !official(source) && pn.auth != nil && pn.auth.source == source && pn.auth.agent == label && pn.agent() == label {
		s.setAuthority(pn, nil)
		s.emit("pane.agent_detected", map[string]any{"pane_id": pn.id, "workspace_id": pn.tab.ws.id,
			"released": true, "final_status": "unknown"})
		call.Applied = true
	}
	s.agentCalls = append(s.agentCalls, call)
	return ok(), nil, nil
}

func (s *Server) clearAuthority(p *params) (map[string]any, *apiError, *subscriber) {
	pid := p.str("pane_id")
	source, hasSource := p.optStr("source")
	seq, hasSeq := p.optU64("seq")
	pn, aerr := s.paneFor(p, pid)
	if pn == nil {
		return nil, aerr, nil
	}
	call := AgentCall{Request: p.req, Method: "pane.clear_agent_authority", PaneID: pid, Source: source, Seq: seq, HasSeq: hasSeq, At: time.Now()}
	call.Accepted = pn.acceptSeq(source, seq, hasSeq)
	// A source given ("" too) must be the authority's; none clears any.
	if call.Accepted && pn.auth != nil && (!hasSource || pn.auth.source == source) {
		s.setAuthority(pn, nil)
		call.Applied = true
	}
	s.agentCalls = append(s.agentCalls, call)
	return ok(), nil, nil
}

// setAuthority changes a pane's hook authority and tells status
// subscribers when the effective status or label changed.
func (s *Server) setAuthority(pn *pane, a *authority) {
	before := pn.status() + "\x00" + pn.agent()
	pn.auth = a
	s.changed(pn, before)
}

// changed tells status subscribers when the pane's effective status or
// label differs from before (status NUL agent), and, as Herdr does, every
// generic subscriber with pane.agent_detected (its agent, no released)
// when the pane's agent label became another one. Called with s.mu held.
func (s *Server) changed(pn *pane, before string) {
	// A finish out of sight reads done until the tab is focused (§9.3).
	switch prev, _, _ := strings.Cut(before, "\x00"); {
	case pn.rawStatus() != "idle":
		pn.unseen = false
	case prev == "working" || prev == "blocked":
		pn.unseen = !s.inFocusedTab(pn)
	}
	if pn.status()+"\x00"+pn.agent() != before {
		pn.stateSeq++
		pn.revision++
		s.emitStatus(pn)
	}
	if _, was, _ := strings.Cut(before, "\x00"); pn.agent() != "" && pn.agent() != was {
		s.emit("pane.agent_detected", map[string]any{"pane_id": pn.id, "workspace_id": pn.tab.ws.id, "agent": pn.agent()})
	}
}

func (s *Server) reportMetadata(p *params) (map[string]any, *apiError, *subscriber) {
	pid, source := p.str("pane_id"), p.str("source")
	title, hasTitle := p.optStr("title")
	_, hasDisplay := p.optStr("display_agent")
	labels := p.optStrMap("state_labels")
	var tokens map[string]*string
	p.decode("tokens", &tokens, "a map of strings or nulls")
	clearTitle := p.optBool("clear_title")
	clears := clearTitle || p.optBool("clear_display_agent") || p.optBool("clear_state_labels")
	guard, _ := p.optStr("agent")
	if applies, has := p.optStr("applies_to_source"); has && !validMetaSource(applies) {
		return nil, errf("invalid_metadata_source", "invalid metadata source %s", applies), nil
	}
	p.optU64("seq")
	if ttl, has := p.optU64("ttl_ms"); has && (ttl < 1 || ttl > 86_400_000) {
		return nil, errf("invalid_metadata_ttl", "ttl_ms must be between 1 and 86400000"), nil
	}
	pn, aerr := s.paneFor(p, pid)
	if pn == nil {
		return nil, aerr, nil
	}
	if !hasTitle && !hasDisplay && labels == nil && tokens == nil && !clears {
		return nil, errf("invalid_metadata_request", "metadata request sets or clears nothing"), nil
	}
	if !validMetaSource(source) {
		return nil, errf("invalid_metadata_source", "invalid metadata source %s", source), nil
	}
	for k := range labels {
		if !slices.Contains([]string{"idle", "working", "blocked", "done", "unknown"}, k) {
			return nil, errf("invalid_state_label", "invalid state label %s", k), nil
		}
	}
	if len(tokens) > 16 {
		return nil, errf("metadata_token_limit", "at most 16 tokens per request"), nil
	}
	for k := range tokens {
		if !metaTokenName.MatchString(k) {
			return nil, errf("invalid_metadata_token", "invalid metadata token name %s", k), nil
		}
	}
	shown := pn.title()
	// Worked on a copy: a request refused below changes nothing.
	md := &paneMeta{tokens: map[string]string{}}
	if old := pn.meta[source]; old != nil {
		md.title, md.tokens = old.title, maps.Clone(old.tokens)
	}
	md.agent = strings.TrimSpace(guard)
	if hasTitle {
		md.title = sanitize(title, 80)
	}
	if clearTitle {
		md.title = ""
	}
	for k, v := range tokens {
		if v == nil {
			delete(md.tokens, k)
		} else {
			md.tokens[k] = sanitize(*v, 80)
		}
	}
	if n := pn.tokenCount(source) + len(md.tokens); n > 32 {
		return nil, errf("metadata_token_limit", "at most 32 tokens per pane"), nil
	}
	if pn.meta == nil {
		pn.meta = map[string]*paneMeta{}
	}
	pn.meta[source] = md
	// A change of presentation alone is a status event too (§5.4).
	if pn.title() != shown {
		s.emitStatus(pn)
	}
	return ok(), nil, nil
}

// metaTokenName is what a metadata token's name may be (§4.4).
var metaTokenName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// validMetaSource: at most 80 characters from [A-Za-z0-9:._-].
func validMetaSource(source string) bool {
	return len(source) <= 80 && strings.IndexFunc(source, func(r rune) bool {
		return !(r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(":._-", r)))
	}) < 0
}

// tokenCount is how many tokens the pane holds from sources other than
// except.
func (pn *pane) tokenCount(except string) int {
	n := 0
	for src, md := range pn.meta {
		if src != except {
			n += len(md.tokens)
		}
	}
	return n
}

// sanitize drops control characters, trims, and caps the text at n
// characters, as Herdr does for toasts (§4.6).
func sanitize(text string, n int) string {
	text = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, text)
	text = strings.TrimSpace(text)
	if utf8.RuneCountInString(text) > n {
		text = string([]rune(text)[:n])
	}
	return text
}

func (s *Server) showNotification(p *params) (map[string]any, *apiError, *subscriber) {
	title := p.str("title")
	body, _ := p.optStr("body")
	sound, hasSound := p.optStr("sound")
	p.enum("sound", sound, hasSound, "none", "done", "request")
	pos, hasPos := p.optStr("position")
	p.enum("position", pos, hasPos, "top-left", "top-right", "bottom-left", "bottom-right")
	if p.err != "" {
		return nil, nil, nil
	}
	call := NotificationCall{Title: sanitize(title, 80), Body: sanitize(body, 240), Sound: sound, Position: pos, At: s.opts.Now()}
	if call.Title == "" {
		return nil, errf("invalid_params", "notification title is empty"), nil
	}
	now := call.At
	recent := !s.lastShown.IsZero() && now.Sub(s.lastShown) < time.Second
	switch {
	case s.delivery == "off":
		call.Reason = "disabled"
	case s.delivery == "herdr" && len(s.reasons) > 0 && s.reasons[0] == "busy":
		// In-app delivery checks for a toast on screen before the rate
		// limit (§4.6).
		call.Reason, s.reasons = s.reasons[0], s.reasons[1:]
	case recent:
		// Measured from the last notification that was shown; rejected
		// ones do not reset it (§4.6).
		call.Reason = "rate_limited"
	case len(s.reasons) > 0:
		call.Reason, s.reasons = s.reasons[0], s.reasons[1:]
	default:
		call.Reason = "shown"
	}
	call.Shown = call.Reason == "shown"
	if call.Shown {
		s.lastShown = now
	}
	s.notifications = append(s.notifications, call)
	return map[string]any{"type": "notification_show", "shown": call.Shown, "reason": call.Reason}, nil, nil
}

// checkEnv applies Herdr's env rules (§2.3 invalid_env).
func checkEnv(env map[string]string) *apiError {
	for k, v := range env {
		switch {
		case k == "":
			return errf("invalid_env", "env key must not be empty")
		case strings.Contains(k, "="):
			return errf("invalid_env", "env key %s must not contain '='", k)
		case strings.Contains(k, "\x00"):
			return errf("invalid_env", "env key must not contain NUL bytes")
		case strings.Contains(v, "\x00"):
			return errf("invalid_env", "env value for %s must not contain NUL bytes", k)
		}
	}
	return nil
}

func (s *Server) workspaceCreate(p *params) (map[string]any, *apiError, *subscriber) {
	cwd, _ := p.optStr("cwd")
	label, _ := p.optStr("label")
	focus := p.optBool("focus")
	env := p.optStrMap("env")
	if p.err != "" {
		return nil, nil, nil
	}
	if e := checkEnv(env); e != nil {
		return nil, e, nil
	}
	ws := s.newWorkspace(label, cwd, env)
	if s.real != nil {
		if err := s.spawnWorkspace(ws); err != nil {
			s.removeWorkspace(ws)
			return nil, errf("workspace_create_failed", "%v", err), nil
		}
	}
	if focus || s.activeWS == nil {
		s.activeWS = ws
	}
	s.emit("workspace.created", map[string]any{"workspace": s.workspaceInfo(ws)})
	t := ws.tabs[0]
	return map[string]any{"type": "workspace_created", "workspace": s.workspaceInfo(ws),
		"tab": s.tabInfo(t), "root_pane": s.paneInfo(t.panes[0])}, nil, nil
}

func (s *Server) workspaceClose(p *params) (map[string]any, *apiError, *subscriber) {
	wid := p.str("workspace_id")
	if p.err != "" {
		return nil, nil, nil
	}
	ws := s.wsByID(wid)
	if ws == nil {
		return nil, errf("workspace_not_found", "workspace %s not found", wid), nil
	}
	info := s.workspaceInfo(ws)
	for _, t := range ws.tabs {
		s.finishPanes(t)
	}
	s.removeWorkspace(ws)
	s.emit("workspace.closed", map[string]any{"workspace_id": wid, "workspace": info})
	return ok(), nil, nil
}

func (s *Server) tabCreate(p *params) (map[string]any, *apiError, *subscriber) {
	wid, hasWS := p.optStr("workspace_id")
	cwd, _ := p.optStr("cwd")
	label, _ := p.optStr("label")
	focus := p.optBool("focus")
	env := p.optStrMap("env")
	if p.err != "" {
		return nil, nil, nil
	}
	ws := s.activeWS
	if hasWS {
		if ws = s.wsByID(wid); ws == nil {
			return nil, errf("workspace_not_found", "workspace %s not found", wid), nil
		}
	} else if ws == nil {
		return nil, errf("workspace_not_found", "no active workspace"), nil
	}
	if e := checkEnv(env); e != nil {
		return nil, e, nil
	}
	t := s.newTab(ws, label, cwd, env)
	if s.real != nil {
		if cwd == "" {
			cwd = ws.cwd
		}
		if err := s.spawnTab(t, cwd, focus); err != nil {
			s.removeTab(t)
			return nil, errf("tab_create_failed", "%v", err), nil
		}
	}
	if focus {
		ws.active = t
	}
	s.emit("tab.created", map[string]any{"tab": s.tabInfo(t)})
	return map[string]any{"type": "tab_created", "tab": s.tabInfo(t), "root_pane": s.paneInfo(t.panes[0])}, nil, nil
}

func (s *Server) tabRename(p *params) (map[string]any, *apiError, *subscriber) {
	tid, label := p.str("tab_id"), p.str("label")
	if p.err != "" {
		return nil, nil, nil
	}
	t := s.tabByID(tid)
	if t == nil {
		return nil, errf("tab_not_found", "tab %s not found", tid), nil
	}
	t.label = label
	s.emit("tab.renamed", map[string]any{"tab_id": t.id, "workspace_id": t.ws.id, "label": label})
	return map[string]any{"type": "tab_info", "tab": s.tabInfo(t)}, nil, nil
}

// tabFocus makes the tab its workspace's active tab and the workspace the
// active one.
func (s *Server) tabFocus(p *params) (map[string]any, *apiError, *subscriber) {
	tid := p.str("tab_id")
	if p.err != "" {
		return nil, nil, nil
	}
	t := s.tabByID(tid)
	if t == nil {
		return nil, errf("tab_not_found", "tab %s not found", tid), nil
	}
	t.ws.active, s.activeWS = t, t.ws
	// Focusing the tab is what marks its finished panes seen (§9.3).
	for _, pn := range t.panes {
		if pn.unseen {
			before := pn.status() + "\x00" + pn.agent()
			pn.unseen = false
			s.changed(pn, before)
		}
	}
	s.emit("tab.focused", map[string]any{"tab_id": t.id, "workspace_id": t.ws.id})
	return map[string]any{"type": "tab_info", "tab": s.tabInfo(t)}, nil, nil
}

func (s *Server) tabClose(p *params) (map[string]any, *apiError, *subscriber) {
	tid := p.str("tab_id")
	if p.err != "" {
		return nil, nil, nil
	}
	t := s.tabByID(tid)
	if t == nil {
		return nil, errf("tab_not_found", "tab %s not found", tid), nil
	}
	ws := t.ws
	s.finishPanes(t)
	wsGone := s.removeTab(t)
	s.emit("tab.closed", map[string]any{"tab_id": tid, "workspace_id": ws.id})
	if wsGone {
		s.emit("workspace.closed", map[string]any{"workspace_id": ws.id})
	}
	return ok(), nil, nil
}

func (s *Server) paneSplit(p *params) (map[string]any, *apiError, *subscriber) {
	dir := p.str("direction")
	p.enum("direction", dir, p.err == "", "right", "down")
	target, hasTarget := p.optStr("target_pane_id")
	wid, hasWS := p.optStr("workspace_id")
	ratio, hasRatio := p.optF64("ratio")
	cwd, _ := p.optStr("cwd")
	focus := p.optBool("focus")
	rc, hasRC := p.optStr("right_click")
	p.enum("right_click", rc, hasRC, "herdr", "pane")
	env := p.optStrMap("env")
	if p.err != "" {
		return nil, nil, nil
	}
	var at *pane
	switch {
	case hasTarget:
		at = s.panes[target]
	case hasWS:
		if ws := s.wsByID(wid); ws != nil && ws.active != nil {
			at = ws.active.focused
		}
	default:
		at = s.activePane()
	}
	if at == nil {
		return nil, errf("pane_not_found", "pane not found"), nil
	}
	if e := checkEnv(env); e != nil {
		return nil, e, nil
	}
	np := s.newPane(at.tab, cwd, env)
	if s.real != nil {
		if err := s.spawnSplit(np, at, dir, ratio, hasRatio, cwd, focus); err != nil {
			s.removePane(np)
			return nil, errf("pane_split_failed", "%v", err), nil
		}
	}
	if focus {
		at.tab.focused = np
	}
	s.emit("pane.created", map[string]any{"pane": s.paneInfo(np)})
	s.emit("layout.updated", map[string]any{"layout": s.layoutForEvent(at.tab)})
	return map[string]any{"type": "pane_info", "pane": s.paneInfo(np)}, nil, nil
}

// keyNames are the key names the fake accepts in pane.send_input.
var keyNames = map[string]bool{}

func init() {
	for _, k := range []string{"enter", "tab", "esc", "escape", "backspace", "space", "up", "down", "left", "right",
		"home", "end", "pageup", "pagedown", "delete", "insert", "f1", "f2", "f3", "f4", "f5", "f6", "f7",
		"f8", "f9", "f10", "f11", "f12", "minus", "shift+tab"} {
		keyNames[k] = true
	}
}

func validKey(k string) bool {
	l := strings.ToLower(k)
	if keyNames[l] {
		return true
	}
	for _, pre := range []string{"ctrl+", "c-", "alt+", "m-"} {
		if rest, ok := strings.CutPrefix(l, pre); ok && (utf8.RuneCountInString(rest) == 1 || keyNames[rest]) {
			return true
		}
	}
	return false
}

func (s *Server) sendInput(p *params) (map[string]any, *apiError, *subscriber) {
	pid := p.str("pane_id")
	text, _ := p.optStr("text")
	keys := p.optStrSlice("keys")
	pn, aerr := s.paneFor(p, pid)
	if pn == nil {
		return nil, aerr, nil
	}
	for _, k := range keys {
		if !validKey(k) {
			return nil, errf("invalid_key", "unsupported key %s", k), nil
		}
	}
	typed, cut := truncateTyped(text)
	s.inputs = append(s.inputs, InputCall{PaneID: pid, Text: text, Keys: keys, Typed: typed, Truncated: cut})
	if s.real != nil {
		if err := s.typeInto(pn, typed, keys); err != nil {
			return nil, errf("pane_send_failed", "pane %s: %v", pid, err), nil
		}
	}
	return ok(), nil, nil
}

func (s *Server) paneClose(p *params) (map[string]any, *apiError, *subscriber) {
	pid := p.str("pane_id")
	pn, aerr := s.paneFor(p, pid)
	if pn == nil {
		return nil, aerr, nil
	}
	ws, t := pn.tab.ws, pn.tab
	s.finishPane(pn, PaneExit{Closed: true, Code: -1})
	tabGone, wsGone := s.removePane(pn)
	if !tabGone {
		s.syncFocus(t)
	}
	s.emit("pane.closed", map[string]any{"pane_id": pid, "workspace_id": ws.id})
	if wsGone {
		s.emit("workspace.closed", map[string]any{"workspace_id": ws.id})
	}
	return ok(), nil, nil
}

// targetPane resolves an optional pane_id: the pane named, else the active
// focused one. A nil pane with a nil error means the params were invalid
// (p.err says how).
func (s *Server) targetPane(p *params) (*pane, *apiError) {
	pid, has := p.optStr("pane_id")
	if p.err != "" {
		return nil, nil
	}
	pn := s.activePane()
	if has {
		pn = s.panes[pid]
	}
	if pn == nil {
		return nil, errf("pane_not_found", "pane not found")
	}
	return pn, nil
}

func (s *Server) processInfo(p *params) (map[string]any, *apiError, *subscriber) {
	pn, aerr := s.targetPane(p)
	if pn == nil {
		return nil, aerr, nil
	}
	info := map[string]any{"pane_id": pn.id, "shell_pid": nil, "foreground_process_group_id": nil,
		"tty": nil, "foreground_processes": []any{}}
	if pn.process == nil && pn.root > 0 {
		return map[string]any{"type": "pane_process_info", "process_info": realProcessInfo(pn.id, pn.root, s.shellPID(pn))}, nil, nil
	}
	if pi := pn.process; pi != nil {
		if pi.ShellPID != nil {
			info["shell_pid"] = *pi.ShellPID
		}
		if pi.ForegroundProcessGroupID != nil {
			info["foreground_process_group_id"] = *pi.ForegroundProcessGroupID
		}
		procs := []any{}
		for _, pr := range pi.Processes {
			m := map[string]any{"pid": pr.PID, "name": pr.Name, "argv0": nil, "argv": nil, "cmdline": nil, "cwd": nil}
			if len(pr.Argv) > 0 {
				m["argv0"], m["argv"], m["cmdline"] = pr.Argv[0], pr.Argv, strings.Join(pr.Argv, " ")
			}
			if pr.Cwd != "" {
				m["cwd"] = pr.Cwd
			}
			procs = append(procs, m)
		}
		info["foreground_processes"] = procs
	}
	return map[string]any{"type": "pane_process_info", "process_info": info}, nil, nil
}

// ClearRecords forgets the recorded requests, agent calls, notifications
// and inputs, keeping everything Herdr itself would keep (panes, reported
// states, seq memory), so one test can look at several runs one at a time.
func (s *Server) ClearRecords() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.agentCalls, s.notifications, s.inputs = nil, nil, nil, nil
}

// listTabsOrPanes answers tab.list and pane.list: every tab or pane, or
// those of one workspace (an unknown workspace, "" too, is
// workspace_not_found).
func (s *Server) listTabsOrPanes(method string, p *params) (map[string]any, *apiError, *subscriber) {
	wid, given := p.optStr("workspace_id")
	if p.err != "" {
		return nil, nil, nil
	}
	wss := s.workspaces
	if given {
		ws := s.wsByID(wid)
		if ws == nil {
			return nil, errf("workspace_not_found", "workspace %s not found", wid), nil
		}
		wss = []*workspace{ws}
	}
	list := []any{}
	for _, ws := range wss {
		for _, t := range ws.tabs {
			if method == "tab.list" {
				list = append(list, s.tabInfo(t))
				continue
			}
			for _, pn := range t.panes {
				list = append(list, s.paneInfo(pn))
			}
		}
	}
	if method == "tab.list" {
		return map[string]any{"type": "tab_list", "tabs": list}, nil, nil
	}
	return map[string]any{"type": "pane_list", "panes": list}, nil, nil
}
