package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/redact"
	"github.com/herdr-pi/herdr-pi/notify/osc"
)

// Ntfy posts notifications to an ntfy server (notifications-and-sentinel.md
// §11): one POST per notification, never retried.
type Ntfy struct {
	// Client sends the request; http.DefaultClient when nil.
	Client *http.Client
	// Server is the base URL, such as https://ntfy.sh.
	Server string
	Topic  string
	// Token, when set, is sent as a Bearer token.
	Token string
	// Priority is 1 to 5.
	Priority int
	// Timeout bounds the whole request (5 s when zero).
	Timeout time.Duration
}

// ntfyBodyMax is ntfy's message limit in UTF-8 bytes
// (notifications-and-sentinel.md §4.4).
const ntfyBodyMax = 4000

// URL is <server without trailing "/">/<topic>.
func (n *Ntfy) URL() (string, error) {
	u, err := url.Parse(n.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("invalid ntfy server url %q", redact.URL(n.Server))
	}
	return strings.TrimRight(n.Server, "/") + "/" + url.PathEscape(n.Topic), nil
}

// Send posts m. Errors read "timeout after 5s", "network error: …" or
// "http 500".
func (n *Ntfy) Send(ctx context.Context, m Message) error {
	target, err := n.URL()
	if err != nil {
		return err
	}
	timeout := n.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	title := osc.Truncate(osc.CleanLabel(m.Title), osc.MaxCodePoints)
	// The question and the agent's error stay on this machine (either can
	// hold what the person or the model wrote): ntfy sends the error's
	// HTTP status, in fixed words, and the body.
	body := osc.TruncateBytes(joinParts(m.ErrorStatus, osc.CleanLabel(m.Body), m.more()), ntfyBodyMax)
	if body == "" {
		body = title
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("Title", title)
	if n.Priority >= 1 && n.Priority <= 5 {
		req.Header.Set("Priority", strconv.Itoa(n.Priority))
	}
	if n.Token != "" {
		req.Header.Set("Authorization", "Bearer "+n.Token)
	}
	client := n.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &NtfyError{msg: fmt.Sprintf("timeout after %v", timeout),
				fix: fmt.Sprintf("check that %s answers, or raise [notify.ntfy] timeout", redact.URL(n.Server))}
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			return fmt.Errorf("cancelled: %w", context.Canceled)
		}
		return &NtfyError{msg: fmt.Sprintf("network error: %v", redactURL(err)),
			fix: fmt.Sprintf("check [notify.ntfy] server = %q and that this machine reaches it", redact.URL(n.Server))}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("http %d", resp.StatusCode)
		if why := ntfyReason(resp.Body); why != "" {
			msg += ": " + why
		}
		return &NtfyError{msg: msg, fix: ntfyFix(resp.StatusCode)}
	}
	return nil
}

// NtfyError is a post that did not deliver: what happened, as the seed
// words it ("http 500", "timeout after 5s", "network error: …"), and what
// the person can change about it.
type NtfyError struct{ msg, fix string }

func (e *NtfyError) Error() string { return e.msg }

// Hint says what to check or change, naming the [notify.ntfy] key.
func (e *NtfyError) Hint() string { return e.fix }

// ntfyReasonMax bounds how much of an error answer is read: ntfy's are a
// line of JSON, and a server that is not ntfy may answer with a page.
const ntfyReasonMax = 4 << 10

// ntfyReason is the "error" of ntfy's JSON error answer
// ({"code":40101,"http":401,"error":"unauthorized",…}), cleaned and cut
// short; empty for any other answer.
func ntfyReason(body io.Reader) string {
	var answer struct {
		Error string `json:"error"`
	}
	if json.NewDecoder(io.LimitReader(body, ntfyReasonMax)).Decode(&answer) != nil {
		return ""
	}
	return osc.Truncate(osc.CleanLabel(answer.Error), 120)
}

// ntfyFix names what to change for an answer the server refused.
func ntfyFix(status int) string {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "the server refused access to the topic: check [notify.ntfy] token, or the user:password in server, and that it may publish to this topic"
	case status == http.StatusNotFound:
		return "check [notify.ntfy] server: it must be the ntfy server's base URL, the topic is added to it"
	case status == http.StatusTooManyRequests:
		return "the server's rate limit for this client or topic was reached; later notifications go out once it passes (your own server, or a token with a higher limit, avoids it)"
	case status >= 500:
		return "the ntfy server failed on its side; if it persists, look at the server's status page or log"
	}
	return "check [notify.ntfy] server and topic"
}

// redactURL keeps the reason of a transport error but not the URL, whose
// topic is a shared secret on public ntfy servers.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// PlainTextWarning is the warning for a token or a password sent over
// http: (notifications-and-sentinel.md §11); empty when there is nothing to
// warn about. A password in the server URL goes out as Basic
// authentication, as readable as a token.
func (n *Ntfy) PlainTextWarning() string {
	if !strings.HasPrefix(strings.ToLower(n.Server), "http://") {
		return ""
	}
	if n.Token != "" {
		return "ntfy uses http:// with a token: the token is sent in plain text; use https://"
	}
	if u, err := url.Parse(n.Server); err == nil {
		if _, ok := u.User.Password(); ok {
			return "ntfy uses http:// with a password in the server URL: the password is sent in plain text; use https://"
		}
	}
	return ""
}
