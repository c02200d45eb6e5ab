package herdrtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(reportFromPaneEnv) != "" {
		// Re-run inside a real pane by TestRealPaneProcessReportsToTheFake.
		os.Exit(reportFromPane())
	}
	testenv.Main(m)
}

// send writes raw (a newline is added unless it ends with one) on a fresh
// connection and returns the reply line, or "" and false when the server
// closed without one.
func send(t *testing.T, s *Server, raw string) (string, bool) {
	t.Helper()
	c, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !strings.HasSuffix(raw, "\n") {
		raw += "\n"
	}
	if _, err := c.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", false // nothing, or half a line
	}
	return strings.TrimSuffix(line, "\n"), true
}

func call(t *testing.T, s *Server, raw string) map[string]any {
	t.Helper()
	line, ok := send(t, s, raw)
	if !ok {
		t.Fatalf("no reply to %s", raw)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("reply %q: %v", line, err)
	}
	return m
}

func errCode(m map[string]any) (id, code, msg string) {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return "", "", ""
	}
	id, _ = m["id"].(string)
	return id, e["code"].(string), e["message"].(string)
}

func TestSocketIsPrivateAndShort(t *testing.T) {
	s := Start(t)
	fi, err := os.Stat(s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket mode %v, want a 0600 socket", fi.Mode())
	}
	di, _ := os.Stat(s.dir)
	if di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", di.Mode().Perm())
	}
	if len(s.SocketPath()) > 107 {
		t.Errorf("socket path is %d bytes, over the 107-byte limit", len(s.SocketPath()))
	}
	s.Close()
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("Close left %s behind", s.dir)
	}
}

func TestEnvelopeRejections(t *testing.T) {
	s := Start(t)
	s.ExpectInvalidRequests()
	for _, tc := range []struct{ line, want string }{
		{`not json`, "invalid_request"},
		{`{"id":1,"method":"ping","params":{}}`, "invalid_request"},
		{`{"method":"ping","params":{}}`, "invalid_request"},
		{`{"id":"a","method":"pane.foo","params":{}}`, "invalid_request"},
		{`{"id":"a","method":"ping"}`, "invalid_request"},
		{`{"id":"a","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"s","agent":"pi"}}`, "invalid_request"},
		{`{"id":"a","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"s","agent":"pi","state":"done"}}`, "invalid_request"},
		{`{"id":"a","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"s","agent":"pi","state":"idle","seq":-1}}`, "invalid_request"},
		{`{"id":"a","method":"pane.get","params":{"pane_id":7}}`, "invalid_request"},
	} {
		id, code, msg := errCode(call(t, s, tc.line))
		if code != tc.want || id != "" || !strings.HasPrefix(msg, "invalid request: ") {
			t.Errorf("%s\n  got id=%q code=%q msg=%q, want %s with an empty id", tc.line, id, code, msg, tc.want)
		}
	}
	// Unknown extra keys are ignored (§2.1); a known but unimplemented
	// method answers not_implemented with the request id.
	if m := call(t, s, `{"id":"x","method":"ping","params":{"extra":1},"more":true}`); m["result"] == nil {
		t.Errorf("extra keys: %v", m)
	}
	if id, code, _ := errCode(call(t, s, `{"id":"n","method":"session.snapshot","params":{}}`)); code != "not_implemented" || id != "n" {
		t.Errorf("unimplemented method: id=%q code=%q", id, code)
	}
	if ok, _ := s.SchemaChecked(); ok && len(s.Violations()) == 0 {
		t.Error("broken requests were not recorded as schema violations")
	}
}

func TestSchemaRejectsWhatDecodingWouldLetThrough(t *testing.T) {
	s := Start(t)
	if ok, _ := s.SchemaChecked(); !ok {
		t.Fatal("Start returned a fake that does not check the schema")
	}
	s.ExpectInvalidRequests()
	// sound may not be null in the schema, though null reads as absent
	// to a lenient decoder.
	_, code, _ := errCode(call(t, s, `{"id":"z","method":"notification.show","params":{"title":"t","sound":null}}`))
	if code != "invalid_request" {
		t.Errorf("code %q, want invalid_request", code)
	}
	v := s.Violations()
	if len(v) != 1 || !strings.Contains(v[0], "notification.show") {
		t.Errorf("violations %q", v)
	}
	if len(s.FatalViolations()) != 0 {
		t.Errorf("expected request violations must not be fatal: %q", s.FatalViolations())
	}
}

func TestConnectionRules(t *testing.T) {
	s := Start(t, Options{FirstLineTimeout: 200 * time.Millisecond})
	// A blank line gets no reply.
	if line, ok := send(t, s, "   \n"); ok {
		t.Errorf("blank line answered %q", line)
	}
	// One request per connection: the second line is ignored.
	line, ok := send(t, s, `{"id":"1","method":"ping","params":{}}`+"\n"+`{"id":"2","method":"ping","params":{}}`+"\n")
	if !ok || !strings.Contains(line, `"id":"1"`) {
		t.Errorf("first reply %q", line)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests recorded, want 1", n)
	}
	// A connection that sends nothing is dropped after the first-line timeout.
	c, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("idle connection: err %v after %v, want EOF after about 200ms", err, time.Since(start))
	}
	// Over 1 MiB is dropped without a reply. The fake may close while the
	// rest is still being written (it has read enough to know), so the
	// write may fail.
	big := `{"id":"b","method":"notification.show","params":{"title":"` + strings.Repeat("x", maxRequestBytes) + `"}}` + "\n"
	bc, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	_, _ = bc.Write([]byte(big))
	_ = bc.SetReadDeadline(time.Now().Add(3 * time.Second))
	if line, err := bufio.NewReader(bc).ReadString('\n'); err == nil {
		t.Errorf("oversized line answered %q", line[:min(len(line), 80)])
	}
}

func TestIDsAreHerdrShaped(t *testing.T) {
	for n, want := range map[int]string{1: "1", 9: "9", 10: "A", 31: "Z", 32: "0", 33: "11", 64: "10", 65: "21"} {
		if got := idNumber(n); got != want {
			t.Errorf("idNumber(%d) = %q, want %q", n, got, want)
		}
	}
	s := Start(t)
	m := call(t, s, `{"id":"w","method":"workspace.create","params":{"label":"api","cwd":"/repo"}}`)
	res := m["result"].(map[string]any)
	if ws := res["workspace"].(map[string]any); ws["workspace_id"] != "w2" || ws["number"] != 2.0 || ws["pane_count"] != 1.0 || ws["focused"] != false {
		t.Errorf("workspace %v", ws)
	}
	if p := res["root_pane"].(map[string]any); p["pane_id"] != "w2:p1" || p["tab_id"] != "w2:t1" || !strings.HasPrefix(p["terminal_id"].(string), "term_") {
		t.Errorf("root pane %v", p)
	}
	m = call(t, s, `{"id":"s","method":"pane.split","params":{"target_pane_id":"w2:p1","direction":"right"}}`)
	if p := m["result"].(map[string]any)["pane"].(map[string]any); p["pane_id"] != "w2:p2" {
		t.Errorf("split pane %v", p)
	}
	call(t, s, `{"id":"c","method":"pane.close","params":{"pane_id":"w2:p2"}}`)
	m = call(t, s, `{"id":"s","method":"pane.split","params":{"target_pane_id":"w2:p1","direction":"down"}}`)
	if p := m["result"].(map[string]any)["pane"].(map[string]any); p["pane_id"] != "w2:p3" {
		t.Errorf("closed pane ids must not be reused: got %v", p["pane_id"])
	}
	m = call(t, s, `{"id":"t","method":"tab.create","params":{"workspace_id":"w2","label":"review"}}`)
	res = m["result"].(map[string]any)
	if res["tab"].(map[string]any)["tab_id"] != "w2:t2" || res["root_pane"].(map[string]any)["pane_id"] != "w2:p4" {
		t.Errorf("tab.create %v", res)
	}
	if _, code, msg := errCode(call(t, s, `{"id":"t","method":"tab.rename","params":{"tab_id":"w9:t1","label":"x"}}`)); code != "tab_not_found" || msg != "tab w9:t1 not found" {
		t.Errorf("tab.rename unknown: %s %s", code, msg)
	}
	if _, code, _ := errCode(call(t, s, `{"id":"e","method":"workspace.create","params":{"env":{"A=B":"x"}}}`)); code != "invalid_env" {
		t.Errorf("bad env key: %s", code)
	}
	// Closing the last tab closes the workspace.
	call(t, s, `{"id":"c1","method":"tab.close","params":{"tab_id":"w2:t1"}}`)
	call(t, s, `{"id":"c2","method":"tab.close","params":{"tab_id":"w2:t2"}}`)
	m = call(t, s, `{"id":"l","method":"workspace.list","params":{}}`)
	if wss := m["result"].(map[string]any)["workspaces"].([]any); len(wss) != 1 {
		t.Errorf("workspaces after closing w2's tabs: %v", wss)
	}
}

func TestSeqRulesAndAuthority(t *testing.T) {
	s := Start(t)
	rep := func(state string, seq int) {
		t.Helper()
		line := `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":" Pi ","state":"` + state + `"`
		if seq > 0 {
			line += `,"seq":` + strings.TrimSpace(jsonNum(seq))
		}
		if m := call(t, s, line+`}}`); m["result"] == nil {
			t.Fatalf("report: %v", m)
		}
	}
	rep("working", 10)
	rep("idle", 5)    // stale: ok but ignored
	rep("blocked", 0) // unsequenced after a sequenced one: ignored
	if st := s.Pane("w1:p1"); st.Status != "working" || st.Agent != "pi" {
		t.Fatalf("pane state %+v, want working by pi", st)
	}
	calls := s.Reports("w1:p1")
	if len(calls) != 3 || !calls[0].Accepted || calls[1].Accepted || calls[2].Accepted {
		t.Fatalf("accepted flags: %+v", calls)
	}
	m := call(t, s, `{"id":"g","method":"agent.get","params":{"target":"w1:p1"}}`)
	if a := m["result"].(map[string]any)["agent"].(map[string]any); a["agent"] != "pi" || a["agent_status"] != "working" {
		t.Errorf("agent.get %v", a)
	}
	// A release with a lower seq is ignored; a higher one clears.
	call(t, s, `{"id":"x","method":"pane.release_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","seq":9}}`)
	if st := s.Pane("w1:p1"); st.Status != "working" {
		t.Errorf("stale release applied: %+v", st)
	}
	call(t, s, `{"id":"x","method":"pane.release_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","seq":11}}`)
	if st := s.Pane("w1:p1"); st.Status != "unknown" || st.Agent != "" {
		t.Errorf("after release: %+v", st)
	}
	if _, code, _ := errCode(call(t, s, `{"id":"g","method":"agent.get","params":{"target":"w1:p1"}}`)); code != "agent_not_found" {
		t.Errorf("agent.get after release: %s", code)
	}
	// Errors with the request id.
	if id, code, msg := errCode(call(t, s, `{"id":"q","method":"pane.report_agent","params":{"pane_id":"w1:p9","source":"s","agent":"pi","state":"idle"}}`)); id != "q" || code != "pane_not_found" || msg != "pane w1:p9 not found" {
		t.Errorf("unknown pane: %s %s %s", id, code, msg)
	}
	if _, code, _ := errCode(call(t, s, `{"id":"q","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"s","agent":"  ","state":"idle"}}`)); code != "invalid_agent" {
		t.Errorf("empty agent: %s", code)
	}
	// A restart forgets the seq memory (as a handoff does, §9.1).
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	rep("idle", 3)
	if st := s.Pane("w1:p1"); st.Status != "idle" {
		t.Errorf("after restart: %+v", st)
	}
}

func jsonNum(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestNotificationReasonsAndRateLimit(t *testing.T) {
	now := time.Unix(1000, 0)
	s := Start(t, Options{Now: func() time.Time { return now }})
	show := func(title string) (bool, string) {
		m := call(t, s, `{"id":"n","method":"notification.show","params":{"title":`+mustJSON(title)+`,"sound":"request"}}`)
		r, _ := m["result"].(map[string]any)
		if r == nil {
			_, code, _ := errCode(m)
			return false, "error:" + code
		}
		return r["shown"].(bool), r["reason"].(string)
	}
	if _, r := show("hi"); r != "disabled" {
		t.Errorf("default delivery: %s, want disabled", r)
	}
	s.SetDelivery("herdr")
	if shown, r := show("one"); !shown || r != "shown" {
		t.Errorf("first: %v %s", shown, r)
	}
	now = now.Add(500 * time.Millisecond)
	if _, r := show("two"); r != "rate_limited" {
		t.Errorf("within 1s: %s", r)
	}
	now = now.Add(600 * time.Millisecond) // 1.1s after the last shown one
	s.ScriptNotificationReasons("busy")
	if _, r := show("three"); r != "busy" {
		t.Errorf("scripted: %s", r)
	}
	if shown, r := show("four"); !shown || r != "shown" {
		t.Errorf("after the limit: %v %s", shown, r)
	}
	if _, r := show(" \x07 "); r != "error:invalid_params" {
		t.Errorf("blank title: %s", r)
	}
	long := strings.Repeat("é", 100)
	now = now.Add(2 * time.Second)
	show(long)
	ns := s.Notifications()
	if got := []rune(ns[len(ns)-1].Title); len(got) != 80 {
		t.Errorf("title capped at %d characters, want 80", len(got))
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestFaults(t *testing.T) {
	s := Start(t)
	ping := `{"id":"p","method":"ping","params":{}}`
	s.SetFault(Fault{Kind: FaultGarbage, Count: 1})
	if line, _ := send(t, s, ping); json.Valid([]byte(line)) {
		t.Errorf("garbage fault answered valid JSON %q", line)
	}
	s.SetFault(Fault{Kind: FaultClose, Count: 1})
	if _, ok := send(t, s, ping); ok {
		t.Error("close fault answered")
	}
	s.SetFault(Fault{Kind: FaultCloseMidLine, Count: 1})
	if _, ok := send(t, s, ping); ok {
		t.Error("close-mid-line fault sent a whole line")
	}
	s.SetFault(Fault{Kind: FaultSlow, Delay: 150 * time.Millisecond, Methods: []string{"ping"}, Count: 1})
	start := time.Now()
	if _, ok := send(t, s, ping); !ok || time.Since(start) < 150*time.Millisecond {
		t.Errorf("slow fault: answered=%v after %v", ok, time.Since(start))
	}
	s.SetFault(Fault{Kind: FaultReply, Count: 1, Reply: map[string]any{"error": map[string]string{"code": "odd", "message": "\x1b[2Jhi"}}})
	if _, code, msg := errCode(call(t, s, ping)); code != "odd" || msg != "\x1b[2Jhi" {
		t.Errorf("reply fault: code %q message %q", code, msg)
	}
	if m := call(t, s, ping); m["id"] != "p" || m["result"] == nil {
		t.Errorf("a reply fault of count 1 answered twice: %v", m)
	}
	s.SetFault(Fault{Kind: FaultHang})
	c, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte(ping + "\n"))
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("hang fault: %v", err)
	}
	c.Close()
	s.SetFault(Fault{})
	if _, ok := send(t, s, ping); !ok {
		t.Error("no reply after clearing the fault")
	}
	// Crash leaves a dangling socket file: connection refused.
	s.Crash()
	if _, err := os.Stat(s.SocketPath()); err != nil {
		t.Errorf("socket file gone after Crash: %v", err)
	}
	if _, err := net.Dial("unix", s.SocketPath()); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("dial after Crash: %v", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, ok := send(t, s, ping); !ok {
		t.Error("no reply after Restart")
	}
}

type streamReader struct {
	c net.Conn
	r *bufio.Reader
}

func subscribeRaw(t *testing.T, s *Server, subs string) *streamReader {
	t.Helper()
	c, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Write([]byte(`{"id":"sub","method":"events.subscribe","params":{"subscriptions":` + subs + `}}` + "\n"))
	return &streamReader{c: c, r: bufio.NewReader(c)}
}

func (sr *streamReader) next(t *testing.T, d time.Duration) string {
	t.Helper()
	_ = sr.c.SetReadDeadline(time.Now().Add(d))
	l, err := sr.r.ReadString('\n')
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(l, "\n")
}

func TestEvents(t *testing.T) {
	s := Start(t, Options{NoEventPacing: true})
	// An unknown pane in a pane-scoped entry: one error under the probe id.
	bad := subscribeRaw(t, s, `[{"type":"pane.exited"},{"type":"pane.agent_status_changed","pane_id":"w1:p9"}]`)
	if l := bad.next(t, time.Second); !strings.Contains(l, `"id":"sub:sub:1:probe"`) || !strings.Contains(l, "pane_not_found") {
		t.Errorf("probe error %q", l)
	}
	if l := bad.next(t, 300*time.Millisecond); l != "" {
		t.Errorf("stream went on after the probe error: %q", l)
	}

	call(t, s, `{"id":"s","method":"pane.split","params":{"target_pane_id":"w1:p1","direction":"right"}}`)
	s.ExitPane("w1:p2")
	st := subscribeRaw(t, s, `[{"type":"pane.exited"},{"type":"pane.agent_status_changed","pane_id":"w1:p1"}]`)
	if l := st.next(t, time.Second); !strings.Contains(l, "subscription_started") {
		t.Fatalf("ack %q", l)
	}
	// Generic events replay from the ring.
	if l := st.next(t, time.Second); l != `{"data":{"pane_id":"w1:p2","type":"pane_exited","workspace_id":"w1"},"event":"pane_exited"}` {
		t.Errorf("replayed event %q", l)
	}
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"blocked","seq":5}}`)
	if l := st.next(t, time.Second); l != `{"data":{"agent":"pi","agent_status":"blocked","pane_id":"w1:p1","workspace_id":"w1"},"event":"pane.agent_status_changed"}` {
		t.Errorf("status event %q", l)
	}
	// The same state again changes nothing and sends nothing.
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"blocked","seq":6}}`)
	if l := st.next(t, 200*time.Millisecond); l != "" {
		t.Errorf("event without a change: %q", l)
	}
	// A filter that matches already sends one event at once.
	f := subscribeRaw(t, s, `[{"type":"pane.agent_status_changed","pane_id":"w1:p1","agent_status":"blocked"}]`)
	f.next(t, time.Second)
	if l := f.next(t, time.Second); !strings.Contains(l, `"agent_status":"blocked"`) {
		t.Errorf("immediate filtered event %q", l)
	}
	if !s.Await(10*time.Second, func() bool { return s.Streams() == 2 }) {
		t.Errorf("%d streams open, want 2", s.Streams())
	}
	s.DropSubscriptions()
	if l := st.next(t, time.Second); l != "" {
		t.Errorf("stream survived DropSubscriptions: %q", l)
	}
	if !s.Await(10*time.Second, func() bool { return s.Streams() == 0 }) {
		t.Errorf("%d streams open after DropSubscriptions", s.Streams())
	}
}

func TestEventPacing(t *testing.T) {
	s := Start(t)
	for i := 0; i < 3; i++ {
		call(t, s, `{"id":"s","method":"pane.split","params":{"direction":"right"}}`)
	}
	st := subscribeRaw(t, s, `[{"type":"pane.created"}]`)
	st.next(t, time.Second)
	start := time.Now()
	for i := 0; i < 3; i++ {
		if l := st.next(t, time.Second); !strings.Contains(l, "pane_created") {
			t.Fatalf("event %d: %q", i, l)
		}
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("3 paced events came in %v, want one per 100ms tick", d)
	}
}

func TestAgentProcessExitResetsSeqAndDropsThatLabel(t *testing.T) {
	s := Start(t)
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"working","seq":100}}`)
	s.SimulateAgentProcessExit("w1:p1", "pi")
	if st := s.Pane("w1:p1"); st.Status != "unknown" {
		t.Errorf("after the exit: %+v", st)
	}
	// The seq memory is reset: a lower seq is accepted, but a custom report
	// labelled pi is dropped until pi is seen again (§6.2 (c)).
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"blocked","seq":5}}`)
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"herdr-pi","state":"blocked","seq":6}}`)
	rs := s.Reports("w1:p1")
	if !rs[1].Accepted || rs[1].Applied || !rs[2].Applied {
		t.Errorf("reports %+v", rs)
	}
	if st := s.Pane("w1:p1"); st.Agent != "herdr-pi" || st.Status != "blocked" {
		t.Errorf("pane %+v", st)
	}
}

// Two subscribers of one pane's status both get each change; the line the
// fake builds once is theirs to write each (under -race: without a data
// race on the shared line).
func TestOneStatusEventReachesEverySubscriber(t *testing.T) {
	s := Start(t, Options{NoEventPacing: true})
	var subs []*streamReader
	for i := 0; i < 4; i++ {
		sub := subscribeRaw(t, s, `[{"type":"pane.agent_status_changed","pane_id":"w1:p1"}]`)
		if l := sub.next(t, time.Second); !strings.Contains(l, "subscription_started") {
			t.Fatalf("ack %q", l)
		}
		subs = append(subs, sub)
	}
	for seq, state := range []string{"working", "idle", "working", "idle"} {
		call(t, s, fmt.Sprintf(`{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":%q,"seq":%d}}`, state, seq+1))
		for _, sub := range subs {
			if l := sub.next(t, time.Second); !strings.Contains(l, `"agent_status":"`+state+`"`) {
				t.Fatalf("status event %q, want %s", l, state)
			}
		}
	}
}

// A request whose client hung up before the answer (it gave up waiting) is
// still acted on, as Herdr does, and the record says its answer was lost;
// every agent call names the request that carried it.
func TestRequestOfAClientThatGaveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := StartInBubble(t)
		s.SetFault(Fault{Kind: FaultSlow, Delay: time.Second, Count: 1})
		report := func(seq int) net.Conn {
			c, err := s.Dial(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			line := fmt.Sprintf(`{"id":"r%d","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"working","seq":%d}}`+"\n", seq, seq)
			if _, err := c.Write([]byte(line)); err != nil {
				t.Fatal(err)
			}
			return c
		}
		report(5).Close() // read at once, answered a second later: too late
		synctest.Wait()   // the fake holds it (recorded first, the fault used up)
		c := report(6)
		if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || !strings.Contains(line, `"id":"r6"`) {
			t.Fatalf("reply %q, %v", line, err)
		}
		c.Close()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		reqs := s.Requests()
		if len(reqs) != 2 || !reqs[0].Lost || reqs[1].Lost {
			t.Fatalf("requests %+v, want the first one's answer lost", reqs)
		}
		calls := s.AgentCalls(s.PaneID())
		if len(calls) != 2 || calls[0].Seq != 6 || calls[0].Request != 2 || calls[1].Seq != 5 || calls[1].Request != 1 || calls[1].Accepted {
			t.Fatalf("agent calls %+v, want seq 6 (request 2) then the late seq 5 (request 1), ignored", calls)
		}
	})
}

// With in-app delivery a toast already on screen answers busy even within
// the rate limit: Herdr checks busy first (§4.6).
func TestBusyComesBeforeTheRateLimit(t *testing.T) {
	now := time.Unix(1000, 0)
	s := Start(t, Options{Delivery: "herdr", Now: func() time.Time { return now }})
	reason := func() string {
		m := call(t, s, `{"id":"n","method":"notification.show","params":{"title":"t"}}`)
		return m["result"].(map[string]any)["reason"].(string)
	}
	if r := reason(); r != "shown" {
		t.Fatalf("first: %s", r)
	}
	now = now.Add(100 * time.Millisecond)
	s.ScriptNotificationReasons("busy")
	if r := reason(); r != "busy" {
		t.Errorf("a toast on screen within the rate limit: %s, want busy", r)
	}
	if r := reason(); r != "rate_limited" {
		t.Errorf("then: %s, want rate_limited", r)
	}
}

// Display metadata is kept per source, shown in the pane's info while its
// agent guard holds, and refused where the contract refuses it.
func TestPaneMetadata(t *testing.T) {
	s := Start(t)
	pane := func() map[string]any {
		return call(t, s, `{"id":"g","method":"pane.get","params":{"pane_id":"w1:p1"}}`)["result"].(map[string]any)["pane"].(map[string]any)
	}
	m := call(t, s, `{"id":"m","method":"pane.report_metadata","params":{"pane_id":"w1:p1","source":"custom:herdr-pi","agent":"pi","title":" fx #1 fixer\u0007 ","tokens":{"workflow":"fx","attempt":"fixer#1"}}}`)
	if m["error"] != nil {
		t.Fatalf("report_metadata refused: %v", m["error"])
	}
	if p := pane(); p["title"] != nil || p["tokens"] != nil {
		t.Errorf("metadata guarded by agent pi shows while no agent runs: %v", p)
	}
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:herdr-pi","agent":"pi","state":"idle","seq":1}}`)
	p := pane()
	if p["title"] != "fx #1 fixer" {
		t.Errorf("title %q, want it trimmed and without control characters", p["title"])
	}
	if tok, _ := p["tokens"].(map[string]any); tok["workflow"] != "fx" || tok["attempt"] != "fixer#1" {
		t.Errorf("tokens %v", p["tokens"])
	}
	call(t, s, `{"id":"c","method":"pane.report_metadata","params":{"pane_id":"w1:p1","source":"custom:herdr-pi","clear_title":true,"tokens":{"attempt":null}}}`)
	if p := pane(); p["title"] != nil || p["tokens"].(map[string]any)["attempt"] != nil {
		t.Errorf("after clearing: %v", p)
	}
	for _, c := range []struct{ params, code string }{
		{`{"pane_id":"w1:p1","source":"custom:herdr-pi"}`, "invalid_metadata_request"},
		{`{"pane_id":"w1:p1","source":"custom herdr","title":"x"}`, "invalid_metadata_source"},
		{`{"pane_id":"w1:p1","source":"s","state_labels":{"busy":"x"}}`, "invalid_state_label"},
		{`{"pane_id":"w1:p9","source":"s","title":"x"}`, "pane_not_found"},
	} {
		m := call(t, s, `{"id":"e","method":"pane.report_metadata","params":`+c.params+`}`)
		if e, _ := m["error"].(map[string]any); e == nil || e["code"] != c.code {
			t.Errorf("%s: got %v, want error %s", c.params, m, c.code)
		}
	}
}

// Several faults in force at once each hold for their own methods; one
// counted down to nothing leaves the others.
func TestSeveralFaults(t *testing.T) {
	s := Start(t)
	ping := `{"id":"p","method":"ping","params":{}}`
	list := `{"id":"l","method":"workspace.list","params":{}}`
	s.SetFaults(
		Fault{Kind: FaultReply, Methods: []string{"ping"}, Count: 1, Reply: map[string]any{"error": map[string]string{"code": "first", "message": "m"}}},
		Fault{Kind: FaultReply, Methods: []string{"workspace.list"}, Reply: map[string]any{"error": map[string]string{"code": "second", "message": "m"}}},
	)
	if _, code, _ := errCode(call(t, s, ping)); code != "first" {
		t.Errorf("ping: code %q, want the first fault's", code)
	}
	if m := call(t, s, ping); m["result"] == nil {
		t.Errorf("ping after its fault ran out: %v", m)
	}
	for range 2 {
		if _, code, _ := errCode(call(t, s, list)); code != "second" {
			t.Errorf("workspace.list: code %q, want the second fault's", code)
		}
	}
	s.SetFaults()
	if m := call(t, s, list); m["result"] == nil {
		t.Errorf("workspace.list with no fault: %v", m)
	}
}
