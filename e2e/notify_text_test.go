package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/golden"
)

// Seed 003: "All payload text is stripped of terminal control characters,
// OSC separators, and excessive whitespace before it is written", and a
// title or body keeps at most 256 code points. `herdr-pi notify` is given
// text that tries to end the sequence early, start another, hide itself
// with bidi controls or run long; every byte its terminal gets is compared,
// for each protocol, with
// testdata/TestNotifyTextIsCleanedAndCutByteForByte.golden (-update
// rewrites it).
func TestNotifyTextIsCleanedAndCutByteForByte(t *testing.T) {
	long := strings.Repeat("ab ", 150) + "END" // 453 code points
	texts := []struct{ name, title, body string }{
		{"hostile", "Deploy\x1b]777;notify;pwned\x07 now", "line1\nline2\t\t end;\u009c\u009d\u202eevil\u200b\x7f."},
		{"long body", "Build finished", long},
		{"long title", long, "api"},
		{"title only", "Tests passed", ""},
		{"nothing left", "\x1b\x07\n", " \t"},
	}
	terminals := []string{"WarpTerminal", "iTerm.app", "kitty"}
	var seen []string
	for _, term := range terminals {
		for _, x := range texts {
			dir := t.TempDir()
			var env []string
			for _, kv := range withoutHerdr(os.Environ()) {
				if name, _, _ := strings.Cut(kv, "="); name != "TERM_PROGRAM" && name != "KITTY_WINDOW_ID" && name != "TMUX" {
					env = append(env, kv)
				}
			}
			env = append(env, "TERM_PROGRAM="+term, "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir,
				"XDG_RUNTIME_DIR="+dir, "PI_CODING_AGENT_DIR="+dir)
			r, err := startOuter(outerOptions{Keep: true, Env: env,
				Argv: []string{"herdr-pi", "notify", "--title", x.title, "--body", x.body}})
			if err != nil {
				t.Fatal(err)
			}
			status, err := r.wait(30 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			raw := pidInID.ReplaceAllString(string(r.bytes()), "${1}<PID>")
			seen = append(seen, fmt.Sprintf("%s, %s: exit %d: %s", term, x.name, status, strconv.Quote(raw)))
		}
	}
	golden.Check(t, golden.Path(t), strings.Join(seen, "\n")+"\n")
}
