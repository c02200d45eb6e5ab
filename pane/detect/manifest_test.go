package detect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

const okRule = "\n[[rules]]\nid = \"r\"\nstate = \"working\"\ncontains = [\"x\"]\n"

func TestParseRejects(t *testing.T) {
	deep := "any = [" + strings.Repeat("{ any = [", 8) + "{ contains = [\"x\"] }" + strings.Repeat("] }", 8) + "]"
	okDepth := "any = [" + strings.Repeat("{ any = [", 7) + "{ contains = [\"x\"] }" + strings.Repeat("] }", 7) + "]"
	_ = okDepth
	many := func(n int) string {
		var b strings.Builder
		b.WriteString("id = \"a\"\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "[[rules]]\nid = \"r%d\"\nstate = \"idle\"\ncontains = [\"x\"]\n", i)
		}
		return b.String()
	}
	cases := []struct {
		name, toml, want string
		line             int
	}{
		{"unknown top field", "id = \"a\"\ncolour = 1\n" + okRule, `unknown field "colour"`, 2},
		{"unknown rule field", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\ncontains = [\"x\"]\nweight = 3\n", `unknown field "weight"`, 6},
		{"unknown gate field", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\ncontains = [\"x\"]\nany = [{ contains = [\"z\"], contain = [\"y\"] }]\n", `unknown field "contain" in a gate`, 6},
		{"no rules", "id = \"a\"\n", "at least one", 1},
		{"a key twice", "id = \"a\"\nid = \"b\"\n" + okRule, `"id" is set twice (lines 1 and 2); keep one`, 2},
		{"129 rules", many(129), "at most 128", 514},
		{"blank rule id", "id = \"a\"\n[[rules]]\nid = \" \"\nstate = \"idle\"\ncontains = [\"x\"]\n", "id must not be blank", 3},
		{"missing state", "id = \"a\"\n[[rules]]\nid = \"r\"\ncontains = [\"x\"]\n", `missing field "state"`, 2},
		{"bad state", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"busy\"\ncontains = [\"x\"]\n", `state = "busy"`, 4},
		{"skip needs unknown", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\nskip_state_update = true\ncontains = [\"x\"]\n", "skip_state_update", 5},
		{"skip with visible", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"unknown\"\nvisible_idle = true\nskip_state_update = true\ncontains = [\"x\"]\n", "no visible_*", 6},
		{"bad region", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\nregion = \"top\"\ncontains = [\"x\"]\n",
			`unknown region "top"; the regions are whole_recent, bottom_lines(N), bottom_non_empty_lines(N), top_non_empty_lines(N), after_last_horizontal_rule, ` +
				`prompt_box_body, above_prompt_box, last_non_empty_above_prompt_box, after_last_prompt_marker, before_current_prompt_marker, ` +
				`whole_recent_without_current_prompt_marker, current_prompt_block_marker, after_current_prompt_block_marker, osc_title, osc_progress`, 5},
		{"leading zero", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\nregion = \"bottom_lines(05)\"\ncontains = [\"x\"]\n", "leading zero", 5},
		{"signed count", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\nregion = \"bottom_lines(+5)\"\ncontains = [\"x\"]\n", "1 to 65535", 5},
		{"zero lines", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\nregion = \"top_non_empty_lines(0)\"\ncontains = [\"x\"]\n", "1 to 65535", 5},
		{"too many lines", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\nregion = \"top_non_empty_lines(65536)\"\ncontains = [\"x\"]\n", "1 to 65535", 5},
		{"top lines old engine", "id = \"a\"\nmin_engine_version = 2\n[[rules]]\nid = \"r\"\nstate = \"idle\"\nregion = \"top_non_empty_lines(2)\"\ncontains = [\"x\"]\n", "needs min_engine_version 3", 6},
		{"newer engine", "id = \"a\"\nmin_engine_version = 4\n" + okRule, "newer detection engine", 2},
		{"no positive matcher", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\nnot = [{ contains = [\"x\"] }]\n", "needs a positive matcher", 2},
		{"empty any gate", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\nany = [{ not = [{ contains = [\"x\"] }] }]\n", "an any gate needs a positive matcher", 2},
		{"empty not gate", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\ncontains = [\"x\"]\nnot = [{}]\n", "a not gate needs at least one matcher", 6},
		{"too deep", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\ncontains = [\"x\"]\n" + deep + "\n", "deeper than 8", 6},
		{"33 matchers", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\ncontains = [" + strings.Repeat("\"x\",", 33) + "]\n", "33 matchers in one gate", 5},
		{"long matcher", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\ncontains = [\"" + strings.Repeat("⠋", 513) + "\"]\n", "513 characters", 5},
		{"bad regex", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\nregex = ['\\p{Greek}']\n", `regex '\p{Greek}' does not compile`, 5},
		{"bad line_regex in gate", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\ncontains = [\"x\"]\nany = [\n  { line_regex = ['a{,2}'] },\n]\n", "does not compile", 7},
		{"bad version", "id = \"a\"\nversion = \"v1\"\n" + okRule, "dotted numbers", 2},
		{"bad priority", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\npriority = \"high\"\ncontains = [\"x\"]\n", "priority must be", 5},
		{"priority overflow", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\npriority = 3000000000\ncontains = [\"x\"]\n", "32-bit", 5},
		{"toml syntax", "id = \"a\n", "", 1},
		// The parser puts the newline that ends an unclosed header on the
		// next line.
		{"unclosed header", "id = \"a\"\n[[rules\nid = \"r\"\n", "", 2},
		{"missing id", okRule, `missing field "id"`, 1},
		{"contains not a list", "id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\ncontains = \"x\"\n", "list of strings", 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.toml), "m.toml")
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("got %v, want a *ManifestError", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
			found := false
			for _, p := range me.Problems {
				if strings.Contains(p.Msg, c.want) && p.Line == c.line {
					found = true
				}
			}
			if !found {
				t.Fatalf("want %q at line %d, got %+v", c.want, c.line, me.Problems)
			}
			if !strings.HasPrefix(err.Error(), "m.toml:") {
				t.Fatalf("error %q does not name the file", err)
			}
		})
	}
}

func TestParseAcceptsLimits(t *testing.T) {
	okDepth := "any = [" + strings.Repeat("{ any = [", 7) + "{ contains = [\"x\"] }" + strings.Repeat("] }", 7) + "]"
	src := "id = \"a\"\nversion = \"1.2\"\nmin_engine_version = 3\nupdated_at = \"x\"\naliases = [\"b\"]\n" +
		"[[rules]]\nid = \"r\"\nstate = \"unknown\"\npriority = -5\nregion = \"top_non_empty_lines(65535)\"\nskip_state_update = true\n" +
		"contains = [" + strings.Repeat("\"x\",", 32) + "]\n" + okDepth + "\n" +
		"[[rules]]\nid = \"s\"\nstate = \"idle\"\nregion = \"bottom_lines(1)\"\ncontains = [\"" + strings.Repeat("⠋", 512) + "\"]\nnot = [{ not = [{ contains = [\"y\"] }] }]\n"
	m, err := Parse([]byte(src), "m.toml")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "a" || len(m.Rules) != 2 || m.Rules[0].Priority != -5 || !m.Rules[0].SkipStateUpdate ||
		m.Rules[0].Region != (Region{TopNonEmptyLines, 65535}) || m.Rules[1].Line != 14 {
		t.Fatalf("parsed %+v", m)
	}
}

// Every manifest Herdr ships parses.
func TestHerdrManifestsParse(t *testing.T) {
	files := herdrManifests(t)
	for _, f := range files {
		if _, err := LoadFile(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func herdrManifests(t testing.TB) []string {
	dir := testenv.Shared(t, "reference/herdr/manifests")
	files, _ := filepath.Glob(filepath.Join(dir, "*.toml"))
	if len(files) == 0 {
		t.Fatalf("no Herdr manifests in %s", dir)
	}
	return files
}

func TestLoadOverlaysUserManifests(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("pi.toml", "id = \"pi\"\n[[rules]]\nid = \"r\"\nstate = \"working\"\nregex = ['(']\n")
	write("claude.toml", "id = \"claude\"\naliases = [\"cc\"]\n[[rules]]\nid = \"r\"\nstate = \"working\"\ncontains = [\"esc to interrupt\"]\n")
	write("copilot-file.toml", "id = \"copilot\"\n[[rules]]\nid = \"r\"\nstate = \"working\"\ncontains = [\"esc\"]\n")
	set, problems := Load(dir)
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "pi.toml:5:") {
		t.Fatalf("problems %v, want one for pi.toml line 5", problems)
	}
	pi, _ := set.Lookup("pi")
	if pi != mustLookup(t, Embedded(), "pi") {
		t.Fatal("an invalid user pi.toml replaced the embedded manifest")
	}
	for _, name := range []string{"claude", "cc", "copilot", "copilot-file"} {
		if _, ok := set.Lookup(name); !ok {
			t.Errorf("no manifest for %q", name)
		}
	}
	write("pi.toml", "id = \"pi\"\n[[rules]]\nid = \"mine\"\nstate = \"working\"\ncontains = [\"busy\"]\n")
	set, problems = Load(dir)
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	if m := mustLookup(t, set, "pi"); m.Rules[0].ID != "mine" {
		t.Fatal("a valid user pi.toml did not override the embedded one")
	}
	if _, problems := Load(filepath.Join(dir, "missing")); len(problems) != 0 {
		t.Fatalf("a missing directory is not a problem: %v", problems)
	}
}

func mustLookup(t *testing.T, s *Set, name string) *Manifest {
	t.Helper()
	m, ok := s.Lookup(name)
	if !ok {
		t.Fatalf("no manifest %q", name)
	}
	return m
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("id = \"a\"\n" + okRule))
	f.Add([]byte("id = \"a\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\nregion = \"bottom_non_empty_lines(3)\"\nline_regex = ['^\\s*❯']\nnot = [{ contains = [\"esc\"] }]\nany = [{ all = [{ regex = ['\\bx\\b'] }] }]\n"))
	if data, err := embeddedFS.ReadFile("manifests/pi.toml"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		m, err := Parse(data, "fuzz.toml")
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) || len(me.Problems) == 0 {
				t.Fatalf("error of the wrong shape: %T %v", err, err)
			}
			return
		}
		if len(m.Rules) == 0 || len(m.Rules) > maxRules {
			t.Fatalf("accepted %d rules", len(m.Rules))
		}
		v := m.Evaluate(Input{Text: "a\n── ⠋ Working ──\n›  x\n• y", Title: "t", Progress: "4;3;"})
		if v.State == "" {
			t.Fatal("empty state")
		}
	})
}

// A user manifest that is not a regular file, too big or nested too deep is
// a problem of that file (the embedded manifest stays in use); none of them
// may hang or exhaust the wrapper before the agent starts.
func TestLoadRefusesManifestsThatAreNotSettingsFiles(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "pi.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.toml")); err != nil {
		t.Fatal(err)
	}
	deep := "id = \"deep\"\n[[rules]]\nid = \"r\"\nstate = \"working\"\ncontains = [\"x\"]\nany = " +
		strings.Repeat("[{any = ", 8000) + "1" + strings.Repeat("}]", 8000) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "deep.toml"), []byte(deep), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.toml"), []byte("# "+strings.Repeat("x", 1<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	set, problems := Load(dir)
	var got []string
	for _, p := range problems {
		var me *ManifestError
		if !errors.As(p, &me) {
			t.Fatalf("problem of the wrong shape: %T %v", p, p)
		}
		got = append(got, p.Error())
	}
	want := []string{
		filepath.Join(dir, "big.toml") + ": is 1048578 bytes, over the 1048576-byte (1 MiB) limit",
		filepath.Join(dir, "deep.toml") + ":6: TOML nests deeper than 32 levels",
		filepath.Join(dir, "pi.toml") + ": is a named pipe (FIFO), not a regular file",
		filepath.Join(dir, "zero.toml") + ": is a device, not a regular file",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
	if pi, _ := set.Lookup("pi"); pi != mustLookup(t, Embedded(), "pi") {
		t.Fatal("the embedded pi manifest is not in use")
	}
	if _, err := LoadFile(filepath.Join(dir, "pi.toml")); err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("LoadFile of a FIFO: %v", err)
	}
	if _, err := Parse([]byte(deep), "deep.toml"); err == nil || !strings.Contains(err.Error(), "deep.toml:6: TOML nests deeper") {
		t.Fatalf("Parse of deep text: %v", err)
	}
}
