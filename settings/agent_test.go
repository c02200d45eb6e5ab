package settings

import (
	"strings"
	"testing"
)

// Whatever a command is called, AgentIDOf makes an id CheckAgent takes.
func TestAgentIDOfFollowsTheRule(t *testing.T) {
	for _, name := range []string{"bash", "python3.12", "-x", "..", "", "pï", "a b\tc", strings.Repeat("z", 100), "日本"} {
		if id := AgentIDOf(name); CheckAgent(id) != nil {
			t.Errorf("AgentIDOf(%q) = %q, which CheckAgent refuses", name, id)
		}
	}
}
