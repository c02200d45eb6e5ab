package notify

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/herdr-pi/herdr-pi/internal/lazyre"
	"github.com/herdr-pi/herdr-pi/internal/redact"
	"github.com/herdr-pi/herdr-pi/notify/osc"
)

// errorLimit is how much of an agent's error a notification shows, as
// much as of a question.
const errorLimit = questionLimit

// ErrorLine is what a failed run's notification says of why it stopped,
// from the agent's error message: the first non-empty line, with an HTTP
// error's JSON body (Pi writes "429: {…}" or "429 {"error":{…}}") read down
// to its message and led by the status in words ("429 Too Many Requests:
// Rate limit reached"), sanitised for a terminal or Herdr, with whatever
// looks like a secret hidden (a provider's error can echo the key or URL it
// was given), and cut to 120 code points with an ellipsis. The secret goes
// before the cut, so no part of one is left at the edge.
func ErrorLine(msg string) string {
	line, _ := describeError(msg)
	return line
}

// describeError is [ErrorLine] of msg and the HTTP error status it starts
// with, in words ("429 Too Many Requests", "" for none), from one reading
// of it.
func describeError(msg string) (line, status string) {
	code, words, text := httpError(msg)
	for l := range strings.Lines(text) {
		if line = osc.CleanLabel(l); line != "" {
			break
		}
	}
	line = redact.Text(line)
	if code != "" {
		status = code + " " + words
	}
	switch {
	case code == "":
	case line == "":
		line = status
	case strings.HasPrefix(strings.ToLower(line), strings.ToLower(words)):
		line = code + " " + line // "503 Service Unavailable", said once
	default:
		line = status + ": " + line
	}
	return osc.Truncate(line, errorLimit), status
}

// statusPrefix is an HTTP error status at the head of a message, as Pi's
// providers put it: "401: …", "401 …", "401".
var statusPrefix = lazyre.New(`^\s*([45][0-9][0-9])(?::\s*|\s+|$)`)

// httpError splits msg into the HTTP error status it starts with — its
// code and its words, both "" when it names none Go knows — and the text
// to show: the message of a JSON error body, or the rest as written.
func httpError(msg string) (code, words, text string) {
	m := statusPrefix().FindStringSubmatchIndex(msg)
	if m == nil {
		return "", "", msg
	}
	code = msg[m[2]:m[3]]
	n, _ := strconv.Atoi(code)
	if words = http.StatusText(n); words == "" {
		return "", "", msg
	}
	text = msg[m[1]:]
	if said, ok := jsonErrorMessage(text); ok {
		text = said
	}
	return code, words, text
}

// jsonErrorMessage is the message of a JSON error body: {"message": …},
// {"error": "…"} or {"error": {"message": …}}. ok is false for text that is
// no JSON object; an object that says no message gives "".
func jsonErrorMessage(body string) (string, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &obj); err != nil {
		return "", false
	}
	var s string
	if json.Unmarshal(obj["message"], &s) == nil && s != "" {
		return s, true
	}
	if json.Unmarshal(obj["error"], &s) == nil {
		return s, true
	}
	var inner struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(obj["error"], &inner)
	return inner.Message, true
}
