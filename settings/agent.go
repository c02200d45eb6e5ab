package settings

import (
	"fmt"
	"strings"

	"github.com/herdr-pi/herdr-pi/internal/lazyre"
)

// agentRe is what an agent id may be. It picks a detection manifest and
// goes as the agent label into every report to Herdr, every status line
// and the log, so it stays a short identifier: no control characters, no
// spaces, nothing a terminal or a log reader could take for structure.
var agentRe = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// AgentRule says in words what [CheckAgent] accepts.
const AgentRule = `use 1 to 64 characters from A-Z a-z 0-9 . _ - :, starting with a letter or digit (e.g. "pi", "claude")`

// AgentIDOf makes a command's name an agent id that [CheckAgent] accepts:
// leading bytes other than letters and digits go, each other byte the
// rule does not allow becomes '_', and it is cut to 64 bytes; a name with
// nothing left is herdr-pi's.
func AgentIDOf(name string) string {
	id := []byte(strings.TrimLeftFunc(name, func(r rune) bool { return !isAlnum(r) }))
	for i, b := range id {
		if !isAlnum(rune(b)) && !strings.ContainsRune("._:-", rune(b)) {
			id[i] = '_'
		}
	}
	if len(id) > 64 {
		id = id[:64]
	}
	if len(id) == 0 {
		return "herdr-pi"
	}
	return string(id)
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// CheckAgent validates an agent id (`wrap --agent`, `[herdr] agent`,
// `[detect] agent`). The error quotes the value safely (escaped, clipped)
// and says what is allowed.
func CheckAgent(agent string) error {
	if len(agent) <= 64 && agentRe().MatchString(agent) {
		return nil
	}
	return fmt.Errorf("agent %s is not a valid agent id: %s", QuoteClipped(agent, 40), AgentRule)
}

// QuoteClipped quotes s for a message: escaped like %q, and cut to max
// bytes (on a character boundary) with its full length added, so a
// 50 MiB value makes a one-line error.
func QuoteClipped(s string, max int) string {
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	cut := strings.ToValidUTF8(s[:max], "")
	return fmt.Sprintf("%q… (%d bytes)", cut, len(s))
}
