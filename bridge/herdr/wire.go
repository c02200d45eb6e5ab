package herdr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Protocol is the socket protocol herdr-pi is written against
// (herdr-socket-api.md §2.4: ping answers with "protocol":20).
const Protocol = 20

// ProtocolResume is Herdr 0.9's protocol (landscape.md §9): reports may
// carry resume_argv, new subscriptions start at the live edge, a slow
// subscriber is told events_lost, and ping's capabilities hold a number.
// herdr-pi speaks it too.
const ProtocolResume = 22

// KnownProtocol reports whether herdr-pi knows protocol n: 20 (Herdr 0.8)
// or 22 (Herdr 0.9).
func KnownProtocol(n int) bool { return n == Protocol || n == ProtocolResume }

// request is one line sent to Herdr. Params is always present, "{}" when a
// method takes none: Herdr rejects a request without it (§2.1).
type request struct {
	ID     string `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params"`
}

// reply is a decoded response line: either Result (with its type tag) or Err.
type reply struct {
	ID         string
	ResultType string
	Result     json.RawMessage
	Err        *Error
}

// errGarbage marks a line that is not a Herdr response at all.
var errGarbage = errors.New("not a Herdr response")

// parseReply decodes one response line (without its newline). It accepts
// unknown fields, as Herdr asks clients to (§2.4), and rejects anything that
// is neither {"id","result":{"type",…}} nor {"id","error":{"code","message"}}.
func parseReply(line []byte) (reply, error) {
	line = bytes.TrimSpace(line)
	var env struct {
		ID     *json.RawMessage `json:"id"`
		Result json.RawMessage  `json:"result"`
		Error  json.RawMessage  `json:"error"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return reply{}, fmt.Errorf("%w: %s", errGarbage, quoteStart(line))
	}
	var r reply
	if env.ID != nil {
		if err := json.Unmarshal(*env.ID, &r.ID); err != nil {
			return reply{}, fmt.Errorf("%w: id is not a string: %s", errGarbage, quoteStart(line))
		}
	}
	hasResult := len(env.Result) > 0 && !bytes.Equal(env.Result, []byte("null"))
	hasError := len(env.Error) > 0 && !bytes.Equal(env.Error, []byte("null"))
	switch {
	case hasResult == hasError:
		return reply{}, fmt.Errorf("%w: want exactly one of result and error: %s", errGarbage, quoteStart(line))
	case hasError:
		var body struct {
			Code    *string `json:"code"`
			Message *string `json:"message"`
		}
		if err := json.Unmarshal(env.Error, &body); err != nil || body.Code == nil || body.Message == nil {
			return reply{}, fmt.Errorf("%w: error without code and message: %s", errGarbage, quoteStart(line))
		}
		r.Err = &Error{Code: *body.Code, Message: *body.Message}
		return r, nil
	}
	var tag struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(env.Result, &tag); err != nil || tag.Type == nil {
		return reply{}, fmt.Errorf("%w: result without a type: %s", errGarbage, quoteStart(line))
	}
	r.ResultType, r.Result = *tag.Type, env.Result
	return r, nil
}

// quoteStart shows the first bytes of a line in an error message, escaped,
// so a binary reply cannot garble a log line.
func quoteStart(b []byte) string {
	const max = 60
	if len(b) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", b[:cut])
	}
	return fmt.Sprintf("%q", b)
}
