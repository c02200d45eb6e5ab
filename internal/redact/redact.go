// Package redact hides the secrets a URL may carry before it is shown or
// logged. It only rewrites text; it never validates a URL.
package redact

import (
	"net/url"
	"strings"
)

// mask stands for a hidden password, as in url.URL.Redacted.
const mask = "xxxxx"

// URL is raw with the password of its userinfo replaced by "xxxxx"
// (https://user:xxxxx@ntfy.example.com/), the rest as written: people paste
// doctor output and error messages into issues. In a URL that does not
// parse, everything from the first ':' after "://" up to the last '@' is
// masked, which may hide more than the password but never less.
func URL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	authority := rest
	if u, err := url.Parse(raw); err == nil {
		if _, hasPassword := u.User.Password(); !hasPassword {
			return raw
		}
		// A valid userinfo holds no '/', '?' or '#', while a path may hold '@'.
		if end := strings.IndexAny(rest, "/?#"); end >= 0 {
			authority = rest[:end]
		}
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(authority[:at], ":")
	if !hasPassword {
		return raw
	}
	return scheme + "://" + user + ":" + mask + rest[at:]
}
