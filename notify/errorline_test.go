package notify

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/notify/osc"
)

// A failed run's notification says why, as Pi said it: the first line of
// its error, an HTTP error's JSON body read down to its message and named
// by its status, secrets hidden, sanitised and cut to 120 code points.
// The errors are what real Pi 1.6.0 wrote against a model server that
// answered so.
func TestErrorLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`401: {"message":"Incorrect API key provided: sk-proj-****cdef. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":null}`,
			"401 Unauthorized: Incorrect API key provided: xxxxx. You can find your API key at https://platform.openai.com/account/a…"},
		{`429: {"message":"Rate limit reached for requests","type":"invalid_request_error","code":null}`,
			"429 Too Many Requests: Rate limit reached for requests"},
		{`500 {"error":{"message":"internal server error","type":"invalid_request_error","code":null}}`,
			"500 internal server error"}, // the status is said once
		{`503 {"message":"","type":"invalid_request_error","code":null}`, "503 Service Unavailable"},
		{`400: {"message":"This model's maximum context length is 32000 tokens. However, your messages resulted in 40000 tokens.","type":"invalid_request_error","code":null}`,
			"400 Bad Request: This model's maximum context length is 32000 tokens. However, your messages resulted in 40000 tokens."},
		{"Connection error.: connect ECONNREFUSED 127.0.0.1:9", "Connection error.: connect ECONNREFUSED 127.0.0.1:9"},
		{"Connection error.: Request cannot be constructed from a URL that includes credentials: http://user:pass123@127.0.0.1/v1/chat/completions",
			"Connection error.: Request cannot be constructed from a URL that includes credentials: http://xxxxx@127.0.0.1/v1/chat/c…"},
		// Anthropic's and Google's shapes of the body.
		{`429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			"429 Too Many Requests: Number of request tokens has exceeded your per-minute rate limit"},
		{`503 {"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`,
			"503 Service Unavailable: The model is overloaded. Please try again later."},
		// A body written over several lines is read whole.
		{"400 {\n  \"error\": {\n    \"type\": \"invalid_request_error\",\n    \"message\": \"prompt is too long: 210000 tokens > 200000 maximum\"\n  }\n}",
			"400 Bad Request: prompt is too long: 210000 tokens > 200000 maximum"},
		// A status Pi leaves in words, or a body that is not JSON.
		{"503 Service Unavailable", "503 Service Unavailable"},
		{"502 <html><body>Bad gateway</body></html>", "502 Bad Gateway: <html><body>Bad gateway</body></html>"},
		// Only the first line, cleaned as every label is; a number that is
		// no HTTP error status stays as it is.
		{"\n \nfailed \x1b[31mhard\u202e\nsecond line", "failed [31mhard"},
		{"200 requests in flight", "200 requests in flight"},
		// A secret is hidden before the cut, so no part of it shows.
		{strings.Repeat("a", 100) + " Bearer abcdefghijklmnopqrstuvwxyz", strings.Repeat("a", 100) + " Bearer xxxxx"},
		{"", ""},
		{"  \n\t", ""},
	} {
		if got := ErrorLine(tc.in); got != tc.want {
			t.Errorf("ErrorLine(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// The reason shows on Herdr's toast and the terminal's notification
// before where it happened. ntfy, whose posts leave the machine, gets the
// HTTP status only: a provider's message can echo what was sent.
func TestFailedToastsSayWhy(t *testing.T) {
	m := compose(Event{Kind: Failed, Error: `429: {"message":"Rate limit reached for requests","type":"x","code":null}`}, "", "api", "", "w1")
	if m.Title != "Pi stopped with an error" || m.Error != "429 Too Many Requests: Rate limit reached for requests" {
		t.Fatalf("message %+v", m)
	}
	if got := herdrToast(m, "").Body; got != "429 Too Many Requests: Rate limit reached for requests · api" {
		t.Errorf("Herdr body %q", got)
	}
	if got := string((Target{Protocol: osc.OSC777}).Sequence(m)); got != "\x1b]777;notify;Pi stopped with an error;429 Too Many Requests: Rate limit reached for requests · api\x1b\\" {
		t.Errorf("terminal %q", got)
	}
	srv := newNtfyServer(t)
	ny := &Ntfy{Client: srv.Client(), Server: srv.URL, Topic: "t"}
	if err := ny.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	conn := compose(Event{Kind: Failed, Error: "Connection error.: connect ECONNREFUSED 10.0.0.7:443"}, "", "api", "", "w1")
	if err := ny.Send(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	if reqs := srv.seen(); len(reqs) != 2 || reqs[0].Body != "429 Too Many Requests · api" || reqs[1].Body != "api" {
		t.Errorf("ntfy %+v", reqs)
	}
	// Nothing said: today's toast.
	if m := compose(Event{Kind: Failed}, "", "api", "", "w1"); herdrToast(m, "").Body != "api" {
		t.Errorf("no error: %+v", m)
	}
}

func FuzzErrorLine(f *testing.F) {
	for _, s := range []string{`401: {"message":"Incorrect API key provided: sk-proj-****cdef."}`, `500 {"error":{"message":"x"}}`, "503 {\n\"message\": \"\"}", "Connection error.: http://u:p@h/", "\n\x1b]0;x\x07 é", "999 {}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := ErrorLine(s)
		if utf8.RuneCountInString(e) > errorLimit || !utf8.ValidString(e) {
			t.Fatalf("ErrorLine(%q) = %q", s, e)
		}
		for _, r := range strings.TrimSuffix(e, "…") {
			if r != ' ' && osc.CleanLabel(string(r)) == "" {
				t.Fatalf("ErrorLine(%q) keeps %U", s, r)
			}
		}
		if planted := ErrorLine(s + " sk-ant-api03-PLANTED"); strings.Contains(planted, "PLANTED") && !strings.Contains(s, "PLANTED") {
			t.Fatalf("ErrorLine(%q) = %q keeps the key", s+" sk-ant-api03-PLANTED", planted)
		}
	})
}
