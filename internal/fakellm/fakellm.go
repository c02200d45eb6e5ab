// Package fakellm is a scripted, OpenAI-compatible model server for tests
// that drive a real Pi offline: streaming /v1/chat/completions (SSE) on
// 127.0.0.1, replies chosen per request, every request body recorded (so a
// test can read the system prompt Pi sent).
//
// It speaks only what Pi's "openai-completions" provider needs (reference
// pi-agent.md §9.3) and binds only the loopback interface.
package fakellm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Reply is what the server answers one request with.
type Reply struct {
	// Text is the assistant text.
	Text string
	// WordDelay, when set, streams Text word by word with this pause
	// between words (keeps Pi visibly working); otherwise Text goes out in
	// one chunk.
	WordDelay time.Duration
	// Chunks, when set, replaces Text: these pieces are streamed in order,
	// WordDelay apart (to split the marker itself across chunks, say).
	Chunks []string
	// ToolCommand, when set, makes the answer a `bash` tool call running
	// this command instead of text.
	ToolCommand string
	// Tool, when set, makes the answer a call of any tool instead of text
	// (it wins over ToolCommand): how a test makes Pi call an extension's
	// tool, the workflow engine's `workflow` say.
	Tool *ToolCall
	// Status, when ≥ 400, answers with this HTTP status and an
	// OpenAI-shaped error body instead of a stream (Pi then ends the turn
	// with a provider error; 4xx other than 429 are not retried by Pi).
	Status int
	// Hang sends nothing and holds the request until the client goes away
	// or the server closes: a model that never answers, so a test can kill
	// Pi mid-turn at a known point.
	Hang bool
	// Until, when set, holds the answer (whatever it is) until Until
	// reports true, asked every few milliseconds; a client that goes away
	// or the server closing ends the wait with no answer. It is the gate a
	// test keeps shut until it has seen what the run must show while it
	// lasts (Herdr told "working", say), so that no run is shorter than
	// what watches it, on any machine.
	Until func() bool
}

// ToolCall is one tool call the model makes.
type ToolCall struct {
	// ID is the call's id (a fresh "call_fake_<n>" of this server when
	// empty).
	ID   string
	Name string
	// Args is marshalled to the call's JSON arguments.
	Args any
}

// Message is one chat message of a request, with its text flattened.
type Message struct {
	Role string
	Text string
}

// Request is one recorded chat completion request.
type Request struct {
	Path     string
	Auth     string
	Body     []byte
	Messages []Message
}

// System is the request's system prompt ("" when there is none).
func (r Request) System() string {
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			return m.Text
		}
	}
	return ""
}

// LastUser is the text of the last user message.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// AnsweredTool is true when a tool result follows the last user message:
// the tool call was made, now the text is due.
func (r Request) AnsweredTool() bool {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		switch r.Messages[i].Role {
		case "tool":
			return true
		case "user":
			return false
		}
	}
	return false
}

// Responder chooses the reply to a request.
type Responder func(Request) Reply

// Fixed always answers with r.
func Fixed(r Reply) Responder { return func(Request) Reply { return r } }

// ByKeyword mimics shared/tools/fakellm.py: the reply text is text; a last
// user message containing SLOW streams it word by word (delay apart);
// RUNTOOL first answers with a bash tool call running toolCmd.
func ByKeyword(text string, delay time.Duration, toolCmd string) Responder {
	return func(req Request) Reply {
		r := Reply{Text: text}
		u := req.LastUser()
		if strings.Contains(u, "SLOW") {
			r.WordDelay = delay
		}
		if strings.Contains(u, "RUNTOOL") && !req.AnsweredTool() {
			r.ToolCommand = toolCmd
		}
		return r
	}
}

// Server is a running fake. Close it when done.
type Server struct {
	srv *httptest.Server

	mu        sync.Mutex
	respond   Responder
	requests  []Request
	arrived   chan struct{}
	closing   chan struct{} // closed by Close: releases hanging requests
	closeOnce sync.Once
	calls     atomic.Int64 // numbers tool call ids, unique per server
}

// Start listens on 127.0.0.1 on a free port.
func Start(respond Responder) *Server {
	s := &Server{respond: respond, arrived: make(chan struct{}, 1), closing: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// BaseURL is the value for models.json's baseUrl (…/v1).
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// Close stops the server and waits for running streams (which stop early
// when their client goes away; hanging ones are released first).
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.srv.Close()
}

// SetResponder replaces how later requests are answered.
func (s *Server) SetResponder(r Responder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = r
}

// Requests returns every chat request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// WaitRequests waits until at least n requests arrived, or timeout.
func (s *Server) WaitRequests(n int, timeout time.Duration) ([]Request, error) {
	deadline := time.After(timeout)
	for {
		if r := s.Requests(); len(r) >= n {
			return r, nil
		}
		select {
		case <-s.arrived:
		case <-deadline:
			return s.Requests(), fmt.Errorf("fakellm: %d requests after %v, want %d", len(s.Requests()), timeout, n)
		}
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"fake-model","object":"model"}]}`)
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var parsed struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &parsed); err != nil {
		http.Error(w, "bad json: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body}
	for _, m := range parsed.Messages {
		req.Messages = append(req.Messages, Message{Role: m.Role, Text: textOf(m.Content)})
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	respond := s.respond
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	reply := respond(req)
	if reply.Until != nil && !s.held(r, reply.Until) {
		return
	}
	switch {
	case reply.Hang:
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	case reply.Status >= 400:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		msg := reply.Text
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": nil}})
		w.Write(b)
		return
	}
	s.stream(w, r, parsed.Model, parsed.StreamOptions.IncludeUsage, reply)
}

// held waits until open reports true (true) or the client goes away or
// the server closes (false).
func (s *Server) held(r *http.Request, open func() bool) bool {
	for !open() {
		select {
		case <-time.After(5 * time.Millisecond):
		case <-r.Context().Done():
			return false
		case <-s.closing:
			return false
		}
	}
	return true
}

// textOf flattens OpenAI message content: a string, or parts with text.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, model string, usage bool, reply Reply) {
	if model == "" {
		model = "fake-model"
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	created := time.Now().Unix()
	send := func(choices any, extra map[string]any) bool {
		chunk := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": model, "choices": choices}
		for k, v := range extra {
			chunk[k] = v
		}
		b, _ := json.Marshal(chunk)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return r.Context().Err() == nil
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	if !send(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil) {
		return
	}
	call := reply.Tool
	if call == nil && reply.ToolCommand != "" {
		call = &ToolCall{Name: "bash", Args: map[string]string{"command": reply.ToolCommand}}
	}
	if call != nil {
		id := call.ID
		if id == "" {
			id = fmt.Sprintf("call_fake_%d", s.calls.Add(1))
		}
		args, _ := json.Marshal(call.Args)
		send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": id, "type": "function",
			"function": map[string]any{"name": call.Name, "arguments": ""}}}}, nil), nil)
		send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(args)}}}}, nil), nil)
		send(delta(map[string]any{}, "tool_calls"), nil)
	} else {
		chunks := reply.Chunks
		if chunks == nil {
			chunks = pieces(reply.Text, reply.WordDelay > 0)
		}
		for _, piece := range chunks {
			if !send(delta(map[string]any{"content": piece}, nil), nil) {
				return
			}
			if reply.WordDelay > 0 {
				select {
				case <-time.After(reply.WordDelay):
				case <-r.Context().Done():
					return
				}
			}
		}
		send(delta(map[string]any{}, "stop"), nil)
	}
	if usage {
		send([]any{}, map[string]any{"usage": map[string]int{"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// pieces splits text into words that keep their following space (and
// newlines inside them), so the streamed pieces concatenate to text.
func pieces(text string, slow bool) []string {
	if !slow {
		return []string{text}
	}
	words := strings.Split(text, " ")
	for i := range words[:len(words)-1] {
		words[i] += " "
	}
	return words
}
