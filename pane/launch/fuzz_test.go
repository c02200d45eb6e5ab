package launch

import (
	"slices"
	"strings"
	"testing"
)

// Parse never panics, and always splits argv itself: Launch is a prefix of
// argv and Args the rest (Opaque: Launch is argv, Args all but argv[0]).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"pi\x00-c", "node\x00--inspect\x00cli.js", "npx\x00-w\x00x\x00pi", "npx\x00--no\x00-d",
		"env\x00-C\x00\x00node", "bun\x00x\x00--\x00", "deno\x00run", "npm\x00exec\x00--", "node\x00--\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Split(s, "\x00")
		if len(argv) > 64 {
			return
		}
		c := Parse(argv, "/nonexistent")
		if c.Shape == Opaque {
			if !slices.Equal(c.Launch, argv) || !slices.Equal(c.Args, argv[1:]) || c.Why == "" {
				t.Fatalf("opaque %+v for %q", c, argv)
			}
			return
		}
		n := len(c.Launch)
		if n == 0 || n > len(argv) || !slices.Equal(c.Launch, argv[:n]) || !slices.Equal(c.Args, argv[n:]) || c.Agent != argv[n-1] {
			t.Fatalf("%+v does not split %q", c, argv)
		}
	})
}

// ResumeHint never panics; a hint it finds is written out printable, and
// parses back the same.
func FuzzResumeHint(f *testing.F) {
	for _, s := range []string{
		"\x1b[2mTo resume this session:\x1b[22m\r\npi --session " + id + "\r\n",
		"To resume this session:\npi --session-dir '/a b'\\''c' --session x\n",
		"To resume this session:\npi --session-dir '' --session x\n",
		"To resume this session:\n\x1b]0;\npi --session x",
		"To resume this session:\x1b[\npi --session x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		r, ok := ResumeHint(out)
		if !ok {
			return
		}
		line, ok := Parse([]string{r.Program}, "").ResumeCommand([]string{"herdr-pi", "wrap"}, r)
		if !ok || !printable(line) {
			t.Fatalf("hint %+v from %q written as %q %v", r, out, line, ok)
		}
		back, ok := ResumeHint([]byte(resumeLabel + "\n" + strings.TrimPrefix(line, "herdr-pi wrap ") + "\n"))
		if !ok || back.Program != r.Program || !slices.Equal(back.Args, r.Args) {
			t.Fatalf("%q parsed back as %+v %v, was %+v", line, back, ok, r)
		}
	})
}
