package fakellm

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// post sends a chat request and returns the streamed content pieces and
// the tool call arguments.
func post(t *testing.T, s *Server, body string) (pieces []string, tool string) {
	t.Helper()
	resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct{ Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				pieces = append(pieces, ch.Delta.Content)
			}
			for _, tc := range ch.Delta.ToolCalls {
				tool += tc.Function.Arguments
			}
		}
	}
	if !done {
		t.Fatal("stream did not end with [DONE]")
	}
	return pieces, tool
}

func TestStreamsScriptedRepliesAndRecordsRequests(t *testing.T) {
	s := Start(ByKeyword("Which file?\n:input_needed:", 50*time.Millisecond, "echo hi"))
	defer s.Close()
	if !strings.HasPrefix(s.BaseURL(), "http://127.0.0.1:") {
		t.Fatalf("base URL %s is not loopback", s.BaseURL())
	}
	p, _ := post(t, s, `{"model":"m","messages":[{"role":"system","content":"SYS"},{"role":"user","content":[{"type":"text","text":"hello"}]}]}`)
	if strings.Join(p, "") != "Which file?\n:input_needed:" || len(p) != 1 {
		t.Fatalf("one-chunk reply: %q", p)
	}
	// The pause between the words is measured over the whole exchange:
	// when each piece is read says when the reader was scheduled, and a
	// reader held up past the pause reads both pieces at once. The server
	// cannot end the stream before it paused.
	start := time.Now()
	p, _ = post(t, s, `{"messages":[{"role":"user","content":"be SLOW now"}]}`)
	if strings.Join(p, "") != "Which file?\n:input_needed:" || len(p) != 2 {
		t.Fatalf("slow reply pieces %q", p)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("the slow reply took %v, want ≥ 50ms (a pause between its two words)", took)
	}
	_, tool := post(t, s, `{"messages":[{"role":"user","content":"RUNTOOL"}]}`)
	if tool != `{"command":"echo hi"}` {
		t.Fatalf("tool arguments %q", tool)
	}
	p, tool = post(t, s, `{"messages":[{"role":"user","content":"RUNTOOL"},{"role":"assistant","content":""},{"role":"tool","content":"hi"}]}`)
	if tool != "" || strings.Join(p, "") == "" {
		t.Fatalf("after the tool result: text %q tool %q", p, tool)
	}
	reqs, err := s.WaitRequests(4, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if reqs[0].System() != "SYS" || reqs[0].LastUser() != "hello" || reqs[1].System() != "" {
		t.Fatalf("recorded %+v", reqs[:2])
	}
}

func TestNamedToolCallsErrorsAndHangs(t *testing.T) {
	s := Start(func(req Request) Reply {
		switch req.LastUser() {
		case "tool":
			return Reply{Tool: &ToolCall{Name: "workflow", Args: map[string]any{"name": "w", "foreground": true}}}
		case "refuse":
			return Reply{Status: 400, Text: "no thanks"}
		}
		return Reply{Hang: true}
	})
	_, tool := post(t, s, `{"messages":[{"role":"user","content":"tool"}]}`)
	if tool != `{"foreground":true,"name":"w"}` {
		t.Fatalf("tool arguments %q", tool)
	}

	resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"refuse"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct{ Message string } `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 400 || body.Error.Message != "no thanks" {
		t.Fatalf("status %d, error %q", resp.StatusCode, body.Error.Message)
	}

	// A hanging request is released by Close, which must not wait for it.
	hung := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"wait"}]}`))
		if err == nil {
			resp.Body.Close()
		}
		hung <- err
	}()
	if _, err := s.WaitRequests(3, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// A whole exchange after it: an answered request would have returned
	// by now.
	post(t, s, `{"messages":[{"role":"user","content":"tool"}]}`)
	select {
	case err := <-hung:
		t.Fatalf("the hanging request returned early: %v", err)
	default:
	}
	s.Close()
	<-hung
	s.Close() // twice is fine (a defer and a cleanup may both close)
}

func TestAnswersWithAnyToolCall(t *testing.T) {
	s := Start(Fixed(Reply{Tool: &ToolCall{ID: "call_7", Name: "lookup", Args: map[string]any{"q": "x"}}, ToolCommand: "ignored"}))
	defer s.Close()
	resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"go"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var id, name, args, finish string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						ID       string                           `json:"id"`
						Function struct{ Name, Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				Finish *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				id += tc.ID
				name += tc.Function.Name
				args += tc.Function.Arguments
			}
			if ch.Finish != nil {
				finish = *ch.Finish
			}
		}
	}
	if id != "call_7" || name != "lookup" || args != `{"q":"x"}` || finish != "tool_calls" {
		t.Fatalf("tool call id %q name %q args %q finish %q", id, name, args, finish)
	}
}

// A held answer (an error one too) leaves only once its gate opens, and a
// gate that never opens does not keep Close waiting.
func TestAnswersWaitForTheirGate(t *testing.T) {
	var open atomic.Bool
	s := Start(func(req Request) Reply {
		switch req.LastUser() {
		case "never":
			return Reply{Text: "late", Until: func() bool { return false }}
		case "free":
			return Reply{Text: "free"}
		}
		return Reply{Text: "held", Until: open.Load}
	})
	defer s.Close()
	// The held exchange runs on its own goroutine, so it reads the raw
	// stream (post may stop the test, which only the test's goroutine may).
	answered := make(chan string, 1)
	go func() {
		resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			answered <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- string(b)
	}()
	if _, err := s.WaitRequests(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// A whole exchange with the gate shut: an answer not held would have
	// come by now.
	other := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"never"}]}`))
		if err == nil {
			resp.Body.Close()
		}
		other <- err
	}()
	if _, err := s.WaitRequests(2, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if p, _ := post(t, s, `{"messages":[{"role":"user","content":"free"}]}`); strings.Join(p, "") != "free" {
		t.Fatalf("an answer without a gate: %q", p)
	}
	select {
	case p := <-answered:
		t.Fatalf("answered %q with the gate shut", p)
	default:
	}
	open.Store(true)
	if b := <-answered; !strings.Contains(b, `"content":"held"`) || !strings.Contains(b, "[DONE]") {
		t.Fatalf("after the gate opened: %q", b)
	}
	s.Close()
	<-other
}
