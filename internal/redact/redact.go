// Package redact hides the secrets a URL, or text that comes from
// elsewhere (a model provider's error), may carry before it is shown or
// logged. It only rewrites text; it never validates a URL.
package redact

import (
	"net/url"
	"strings"

	"github.com/herdr-pi/herdr-pi/internal/lazyre"
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

// Text is s with what looks like a secret replaced by "xxxxx", for text
// that comes from elsewhere and is shown where others may see it: a model
// provider's error message can echo the key it refused, the URL it was
// given (credentials and all) or a request header. It hides, in order:
//   - in a URL, all of its userinfo and every query value;
//   - the credentials after "Bearer" or "Basic";
//   - the value given to a name such as api_key, token, secret, password
//     or authorization (as name=value, name: value or JSON);
//   - keys by their published shapes (sk-…, AIza…, ghp_…, AKIA…, a JWT…);
//   - any other long run of letters and digits that changes between upper
//     case, lower case and digits as often as random text does, which
//     model names and words do not.
//
// It errs on the side of hiding: a word that only looks like a key goes
// too. The words around a secret stay, so the message still says what went
// wrong.
func Text(s string) string {
	return runPattern().ReplaceAllStringFunc(marked(s), func(run string) string {
		if looksRandom(run) {
			return mask
		}
		return run
	})
}

// marked is s with the secrets that say what they are hidden: those in a
// URL, after Bearer or Basic, given to a secret's name, or in a key's
// published shape. Text adds the random-looking runs to these.
func marked(s string) string {
	s = urlPattern().ReplaceAllStringFunc(s, hideInURL)
	s = schemePattern().ReplaceAllString(s, "${1}${2}"+mask)
	s = assignmentPattern().ReplaceAllString(s, "${1}${2}"+mask)
	return keyPattern().ReplaceAllStringFunc(s, func(k string) string {
		trimmed := strings.TrimRight(k, ".")
		return mask + k[len(trimmed):]
	})
}

// Argv is a command line as the log may keep it: the value of an option
// named for a secret (--api-key KEY, --token=T), an environment assignment
// of such a name (ANTHROPIC_API_KEY=…, as env(1) or a shell takes it) and
// what Text hides by its shape become "xxxxx". Random-looking runs stay:
// in a command line they are mostly session ids and paths, which the log
// needs. argv itself is not changed.
func Argv(argv []string) []string {
	out := make([]string, len(argv))
	for i := 0; i < len(argv); i++ {
		w := argv[i]
		name, value, assigned := strings.Cut(w, "=")
		switch {
		case assigned && secretName(name) && !strings.ContainsAny(value, " \t\n"):
			out[i] = name + "=" + mask
		case strings.HasPrefix(w, "-") && !assigned && secretName(w) && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-"):
			out[i], out[i+1] = w, mask
			i++
		default:
			out[i] = marked(hideInScript(w))
		}
	}
	return out
}

// hideInScript hides, in a word that is a script (sh -c '…'), the values
// the script gives to a secret's name: an environment assignment
// (OPENAI_API_KEY=…, export GITHUB_TOKEN=…) or an option of a command it
// runs (--api-key …, --openai-key=…). Text's patterns miss these: they
// want the name to begin a word, and OPENAI_API_KEY holds API_KEY inside.
func hideInScript(w string) string {
	hide := func(m []string) string {
		// m: the match, what came before the name, the name, how the value
		// follows it, the value.
		if !secretName(m[2]) {
			return m[0]
		}
		return m[1] + m[2] + m[3] + mask
	}
	w = scriptAssignmentPattern().ReplaceAllStringFunc(w, func(s string) string {
		return hide(scriptAssignmentPattern().FindStringSubmatch(s))
	})
	return scriptOptionPattern().ReplaceAllStringFunc(w, func(s string) string {
		return hide(scriptOptionPattern().FindStringSubmatch(s))
	})
}

// secretName says whether an option or variable name says it holds a
// secret: --api-key, --token, OPENAI_API_KEY, DB_PASSWORD, AWS_SECRET_ACCESS_KEY.
func secretName(name string) bool {
	if strings.Trim(name, "-") == "" || strings.ContainsFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.')
	}) {
		return false // not a name: a script, a prompt, a path
	}
	n := strings.ToLower(strings.NewReplacer("-", "", "_", "", ".", "").Replace(name))
	if strings.HasSuffix(n, "key") || strings.HasSuffix(n, "keys") {
		return true
	}
	for _, word := range []string{"token", "secret", "password", "passwd", "passphrase", "credential", "authorization"} {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}

var (
	// urlPattern is a URL in running text, up to a space or a quote.
	urlPattern = lazyre.New(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)
	// schemePattern is an Authorization header's credentials. Basic takes
	// base64 only, so "Basic tier" is prose.
	schemePattern = lazyre.New(`\b((?:(?:[Bb]earer|BEARER)\s+)+)[^\s"',;]+|\b(Basic\s+)[A-Za-z0-9+/]{8,}={0,2}`)
	// assignmentPattern is a value given to a name that holds a secret.
	assignmentPattern = lazyre.New(`(?i)\b((?:x-)?api[-_]?key|(?:access|refresh|auth|id)[-_]?token|token|(?:client[-_]?)?secret|password|passwd|authorization)("?\s*[:=]\s*"?(?:(?:bearer|basic)\s+)?)[^\s"',;&]+`)
	// keyPattern is a key by the prefix its issuer gives it: OpenAI and
	// Anthropic (sk-), Stripe-like (sk_, rk_), Google (AIza), GitHub,
	// GitLab, Slack, Hugging Face, npm, AWS access key ids, JWTs.
	keyPattern = lazyre.New(`\b(?:sk-|sk_|rk_|AIza|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abposr]-|hf_|npm_|AKIA|ASIA|eyJ)[A-Za-z0-9_*.+/=-]{4,}`)
	// scriptAssignmentPattern is a name given a value in a script, at
	// the start of a shell word: an environment assignment or an option
	// written --name=value. The value is one shell word, quoted or not.
	scriptAssignmentPattern = lazyre.New(`(^|[\s;&|(])([A-Za-z_][A-Za-z0-9_]*|--?[A-Za-z][A-Za-z0-9_.-]*)(=)('[^']*'|"[^"]*"|[^\s;&|()'"]+)`)
	// scriptOptionPattern is an option of a script's command and the word
	// after it, unless that word is an option too.
	scriptOptionPattern = lazyre.New(`(^|[\s;&|(])(--?[A-Za-z][A-Za-z0-9_.-]*)([ \t]+)('[^']*'|"[^"]*"|[^\s;&|()'"-][^\s;&|()'"]*)`)
	// runPattern is a run of the characters keys are written in.
	runPattern = lazyre.New(`[A-Za-z0-9_+/=-]{20,}`)
)

// hideInURL masks u's userinfo (user names can be tokens too) and the
// values of its query.
func hideInURL(u string) string {
	scheme, rest, _ := strings.Cut(u, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		rest = mask + rest[at:]
	}
	path, query, hasQuery := strings.Cut(rest, "?")
	if !hasQuery {
		return scheme + "://" + rest
	}
	query, fragment, hasFragment := strings.Cut(query, "#")
	pairs := strings.Split(query, "&")
	for i, p := range pairs {
		if name, _, ok := strings.Cut(p, "="); ok {
			pairs[i] = name + "=" + mask
		}
	}
	out := scheme + "://" + path + "?" + strings.Join(pairs, "&")
	if hasFragment {
		out += "#" + fragment
	}
	return out
}

// looksRandom says whether a run switches between upper case, lower case
// and digits on at least a third of its steps: random letters and digits
// switch on about three steps in five (hex on about one in two), while
// names such as "Meta-Llama-3-70B-Instruct" or "claude-3-5-sonnet-20241022"
// switch far less.
func looksRandom(run string) bool {
	class := func(r rune) int {
		switch {
		case r >= 'a' && r <= 'z':
			return 1
		case r >= 'A' && r <= 'Z':
			return 2
		case r >= '0' && r <= '9':
			return 3
		}
		return 0
	}
	steps, switches, prev := 0, 0, 0
	for _, r := range run {
		c := class(r)
		if c == 0 {
			continue // separators do not count
		}
		if prev != 0 {
			steps++
			if c != prev {
				switches++
			}
		}
		prev = c
	}
	return steps >= 19 && switches*3 >= steps
}
