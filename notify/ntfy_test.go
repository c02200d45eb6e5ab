package notify

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordedRequest is what the loopback ntfy server saw.
type recordedRequest struct {
	Line   string
	Header http.Header
	Body   string
}

type ntfyServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recordedRequest
	status   []int  // answers in order; 200 once they run out
	answer   string // the body of an answer that is not 2xx
	hang     bool   // never answer until the client gives up
}

func newNtfyServer(t *testing.T) *ntfyServer {
	s := &ntfyServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, recordedRequest{Line: fmt.Sprintf("%s %s %s", r.Method, r.URL.RequestURI(), r.Proto), Header: r.Header.Clone(), Body: string(body)})
		code := http.StatusOK
		if len(s.status) > 0 {
			code, s.status = s.status[0], s.status[1:]
		}
		hang, answer := s.hang, s.answer
		s.mu.Unlock()
		if hang {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(code)
		if code/100 != 2 {
			io.WriteString(w, answer)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *ntfyServer) seen() []recordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recordedRequest(nil), s.requests...)
}

// Issue 6: the request line, headers and body ntfy gets
// (notifications-and-sentinel.md §11).
func TestNtfyRequest(t *testing.T) {
	srv := newNtfyServer(t)
	ny := &Ntfy{Client: srv.Client(), Server: srv.URL + "/", Topic: "my-topic", Token: "tok123", Priority: 4, Timeout: 5 * time.Second}
	m := compose(Event{Kind: PermissionNeeded, Label: "release;\x1b[2J\nnow"}, "", "my-project", "", "")
	if err := ny.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	reqs := srv.seen()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Line != "POST /my-topic HTTP/1.1" {
		t.Errorf("request line %q", r.Line)
	}
	want := map[string]string{
		"Title":         "Pi needs permission",
		"Priority":      "4",
		"Authorization": "Bearer tok123",
		"Content-Type":  "text/plain; charset=utf-8",
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	// The label rule keeps ';' (ntfy is no terminal) and drops the escape.
	if r.Body != "release; [2J now · my-project" {
		t.Errorf("body %q", r.Body)
	}

	// No token, no Authorization header; a server path is kept.
	ny = &Ntfy{Client: srv.Client(), Server: srv.URL + "/ntfy", Topic: "t", Priority: 3}
	if err := ny.Send(context.Background(), Message{Title: "Pi finished"}); err != nil {
		t.Fatal(err)
	}
	r = srv.seen()[1]
	if r.Line != "POST /ntfy/t HTTP/1.1" || r.Header.Get("Authorization") != "" || r.Body != "Pi finished" || r.Header.Get("Priority") != "3" {
		t.Errorf("second request %+v", r)
	}

	// Priority 0 is unset: ntfy's own default, no header (it takes 1 to 5).
	ny = &Ntfy{Client: srv.Client(), Server: srv.URL, Topic: "t"}
	if err := ny.Send(context.Background(), Message{Title: "Pi finished"}); err != nil {
		t.Fatal(err)
	}
	if r = srv.seen()[2]; r.Header.Get("Priority") != "" {
		t.Errorf("priority 0 sent as %q", r.Header.Get("Priority"))
	}
}

// Only a 2xx answer is delivered: a redirect the client did not follow
// (a proxy in the way) left the notification undelivered.
func TestNtfyNon2xxIsAFailure(t *testing.T) {
	srv := newNtfyServer(t)
	srv.status = []int{http.StatusMultipleChoices, http.StatusNotModified, http.StatusBadRequest}
	ny := &Ntfy{Client: srv.Client(), Server: srv.URL, Topic: "t"}
	for _, want := range []string{"http 300", "http 304", "http 400"} {
		if err := ny.Send(context.Background(), Message{Title: "Pi finished"}); err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	}
}

// notifications-and-sentinel.md D2.6: URL building and the plain-text
// warning.
func TestNtfyURLAndWarning(t *testing.T) {
	cases := []struct{ server, topic, want string }{
		{"https://ntfy.sh/", "topic", "https://ntfy.sh/topic"},
		{"https://host.example/ntfy", "topic", "https://host.example/ntfy/topic"},
	}
	for _, c := range cases {
		if got, err := (&Ntfy{Server: c.server, Topic: c.topic}).URL(); err != nil || got != c.want {
			t.Errorf("URL(%q, %q) = %q %v", c.server, c.topic, got, err)
		}
	}
	for _, bad := range []string{"ftp://x.example", "not a url", ""} {
		if _, err := (&Ntfy{Server: bad, Topic: "t"}).URL(); err == nil || !strings.Contains(err.Error(), "invalid ntfy server url") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for _, server := range []string{"http://x", "HTTP://x"} { // schemes are case-insensitive
		if w := (&Ntfy{Server: server, Token: "k"}).PlainTextWarning(); !strings.Contains(w, "plain text") {
			t.Errorf("%s with a token must warn", server)
		}
	}
	if (&Ntfy{Server: "http://x"}).PlainTextWarning() != "" || (&Ntfy{Server: "https://x", Token: "k"}).PlainTextWarning() != "" {
		t.Error("only http with a token warns")
	}
}

// A password in the server URL never shows: not in doctor's row, not in
// the error of a URL that does not parse; over http:// it is warned about
// like a token, since it goes out as Basic authentication.
func TestNtfyServerPasswordIsMasked(t *testing.T) {
	ok := ntfyCheck(Config{Enabled: true, Ntfy: NtfyConfig{Enabled: true, Server: "https://user:hunter2@ntfy.example.com/", Topic: "t", Priority: 3}})
	if ok.Status != CheckOK || ok.Detail != "posting to https://user:xxxxx@ntfy.example.com/ (topic set, no token, priority 3)" {
		t.Errorf("doctor row: %+v", ok)
	}
	_, err := (&Ntfy{Server: "ftp://user:hunter2@ntfy.example.com/", Topic: "t"}).URL()
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "user:xxxxx@") {
		t.Errorf("URL error: %v", err)
	}
	plain := ntfyCheck(Config{Enabled: true, Ntfy: NtfyConfig{Enabled: true, Server: "http://user:hunter2@ntfy.lan", Topic: "t", Priority: 3}})
	if plain.Status != CheckWarn || !strings.Contains(plain.Detail, "password") || strings.Contains(plain.Detail, "hunter2") {
		t.Errorf("http with a password: %+v", plain)
	}
}

// Issue 6: a 500 or a timeout is reported once and never retried in a loop;
// the next success is reported as a recovery.
func TestNtfyFailuresReportedOnceNoRetry(t *testing.T) {
	srv := newNtfyServer(t)
	srv.status = []int{500, 500, 500}
	var mu sync.Mutex
	var logs []string
	logf := func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(f, a...))
	}
	n := Start(Options{Ntfy: &Ntfy{Client: srv.Client(), Server: srv.URL, Topic: "t", Priority: 3}, Project: "p", Logf: logf})
	for i := range 3 {
		n.Notify(Event{Kind: Failed, Key: fmt.Sprint(i)})
		waitFor(t, func() bool { return len(srv.seen()) == i+1 })
	}
	time.Sleep(100 * time.Millisecond) // room for a retry loop to show itself
	if got := len(srv.seen()); got != 3 {
		t.Fatalf("%d requests for 3 notifications", got)
	}
	n.Notify(Event{Kind: Finished, Key: "ok"})
	waitFor(t, func() bool { return len(srv.seen()) == 4 })
	n.Close(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 2 || !strings.HasPrefix(logs[0], "notify: ntfy channel failed: http 500 (the ntfy server failed") || logs[1] != "notify: ntfy channel recovered" {
		t.Fatalf("logs %q", logs)
	}
	if st := n.Status()[0]; st.Failed != 3 || st.Sent != 1 {
		t.Fatalf("status %+v", st)
	}
}

// A refusal says what ntfy said and what to change: the person reading
// the log, status or notify's error learns which [notify.ntfy] key to
// look at, not just a status code. ntfy's own reason is cleaned (it comes
// from the network) and an answer that is not ntfy's JSON adds nothing.
func TestNtfyRefusalNamesTheFix(t *testing.T) {
	cases := []struct {
		status       int
		answer       string
		msg, hintHas string
	}{
		{401, `{"code":40101,"http":401,"error":"unauthorized","link":"https://ntfy.sh/docs/publish/#authentication"}`, "http 401: unauthorized", "[notify.ntfy] token"},
		{403, `{"code":40301,"http":403,"error":"forbidden"}`, "http 403: forbidden", "[notify.ntfy] token"},
		{404, `<html>not found</html>`, "http 404", "[notify.ntfy] server"},
		{429, "{\"error\":\"limit reached: too many requests\\u001b[2J\"}", "http 429: limit reached: too many requests [2J", "rate limit"},
		{502, ``, "http 502", "server failed on its side"},
		{400, `{"code":40010,"error":"invalid request: topic invalid"}`, "http 400: invalid request: topic invalid", "[notify.ntfy] server and topic"},
	}
	for _, c := range cases {
		srv := newNtfyServer(t)
		srv.status, srv.answer = []int{c.status}, c.answer
		err := (&Ntfy{Client: srv.Client(), Server: srv.URL, Topic: "t"}).Send(context.Background(), Message{Title: "x"})
		if err == nil || err.Error() != c.msg || !strings.Contains(hintOf(err), c.hintHas) {
			t.Errorf("http %d: error %q, hint %q; want %q and a hint with %q", c.status, err, hintOf(err), c.msg, c.hintHas)
		}
	}
}

// A channel's status says whether it is failing now and why, and a
// success clears both: what `herdr-pi status` shows a person.
func TestChannelStatusSaysFailingAndWhy(t *testing.T) {
	srv := newNtfyServer(t)
	srv.status, srv.answer = []int{401}, `{"error":"unauthorized"}`
	n := Start(Options{Ntfy: &Ntfy{Client: srv.Client(), Server: srv.URL, Topic: "t"}, Project: "p"})
	defer n.Close(context.Background())
	n.Notify(Event{Kind: Failed, Key: "1"})
	waitFor(t, func() bool { return n.Status()[0].Failed == 1 })
	if st := n.Status()[0]; !st.Failing || st.Last != "http 401: unauthorized" || !strings.Contains(st.Hint, "[notify.ntfy] token") {
		t.Fatalf("after a refusal: %+v", st)
	}
	n.Notify(Event{Kind: Failed, Key: "2"})
	waitFor(t, func() bool { return n.Status()[0].Sent == 1 })
	if st := n.Status()[0]; st.Failing || st.Last != "posted" || st.Hint != "" {
		t.Fatalf("after a success: %+v", st)
	}
}

func TestNtfyTimeout(t *testing.T) {
	srv := newNtfyServer(t)
	srv.hang = true
	ny := &Ntfy{Client: srv.Client(), Server: srv.URL, Topic: "t", Timeout: 150 * time.Millisecond}
	err := ny.Send(context.Background(), Message{Title: "x"})
	if err == nil || err.Error() != "timeout after 150ms" || !strings.Contains(hintOf(err), "[notify.ntfy] timeout") {
		t.Fatalf("got %v (hint %q)", err, hintOf(err))
	}
	if got := len(srv.seen()); got != 1 {
		t.Fatalf("%d requests", got)
	}
	// A refused connection is a network error, and names no URL (the topic
	// is a secret on public servers).
	srv.Close()
	err = (&Ntfy{Server: srv.URL, Topic: "secret-topic"}).Send(context.Background(), Message{Title: "x"})
	if err == nil || !strings.HasPrefix(err.Error(), "network error") || strings.Contains(err.Error()+hintOf(err), "secret-topic") ||
		!strings.Contains(hintOf(err), "[notify.ntfy] server") {
		t.Fatalf("got %v (hint %q)", err, hintOf(err))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
