package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/settings"
)

// detect --json, on a screen a rule decides, one no rule does, a raw
// stream and a manifest of the person's own, matches docs/detect.schema.json,
// as does the example in docs/detect.md; and the schema is no formality: a
// verdict without its format, or with a priority but no rule, fails it.
func TestDetectJSONMatchesItsDocumentedSchema(t *testing.T) {
	schema := compileSchema(t, "detect")
	dir := t.TempDir()
	file := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	working := file("working.txt", " ⠸ Working...\n\n────\n\n────\n~/proj\n")
	idle := file("idle.txt", " The row shows Working... while busy\n\n────\n\n────\n")
	raw := file("raw.bin", "\x1b]0;π - proj\x07── ⠼ Working ───\r\n")
	mine := file("mine.toml", `id = "mine"
version = "1"
min_engine_version = 3
[[rules]]
id = "hold"
state = "unknown"
skip_state_update = true
region = "whole_recent"
contains = ["hold on"]
[[rules]]
id = "done"
state = "idle"
visible_idle = true
region = "whole_recent"
contains = ["done"]
`)
	screen := file("hold.txt", "hold on, done\n")
	var outs []string
	for _, args := range [][]string{
		{working}, {idle}, {"--raw", "--size", "6x40", raw}, {"--manifest", mine, screen},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), append([]string{"herdr-pi", "detect", "--json"}, args...),
			IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HERDR_PI_LOG=off"}})
		if code != 0 {
			t.Fatalf("detect %q: exit %d: %s", args, code, errb.String())
		}
		validate(t, schema, out.String())
		var v struct {
			Format string `json:"format"`
		}
		if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.Format != "herdr-pi.detect/1" {
			t.Errorf("detect %q: format %q (%v)", args, v.Format, err)
		}
		outs = append(outs, out.String())
	}
	for i, want := range []string{`"rule": "busy_row"`, `"fallback": "default_known_agent_idle_fallback"`, `"title": "π - proj"`, `"skip_state_update": true`} {
		if !strings.Contains(outs[i], want) {
			t.Errorf("output %d lacks %s:\n%s", i, want, outs[i])
		}
	}
	t.Run("the documented example", func(t *testing.T) { validate(t, schema, docExample(t, "detect")) })
	for name, broken := range map[string]string{
		"no format":             strings.Replace(outs[0], `"format": "herdr-pi.detect/1",`, "", 1),
		"a priority, no rule":   strings.Replace(outs[1], `"priority": null`, `"priority": 3`, 1),
		"a rule and a fallback": strings.Replace(outs[0], `"rule": "busy_row",`, `"rule": "busy_row", "fallback": "default_known_agent_idle_fallback",`, 1),
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(broken))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if schema.Validate(inst) == nil {
			t.Errorf("%s: validates", name)
		}
	}
}

// --agent takes an agent id as wrap --agent does: one that can name no
// manifest (control characters, a path, 100 kB) is a usage mistake, said in
// one short line, and an empty --agent or --manifest is not taken for none.
func TestDetectAgentIsCheckedLikeWraps(t *testing.T) {
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HERDR_PI_LOG=off"}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--agent", "\x1b[31m"}, `herdr-pi detect: --agent: agent "\x1b[31m" is not a valid agent id`},
		{[]string{"--agent", "a/../../x"}, `herdr-pi detect: --agent: agent "a/../../x" is not a valid agent id`},
		{[]string{"--agent", strings.Repeat("a", 100_000)}, `herdr-pi detect: --agent: agent "aaaa`},
		{[]string{"--agent", ""}, "herdr-pi detect: --agent is empty"},
		{[]string{"--manifest", ""}, "herdr-pi detect: --manifest is empty"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), append([]string{"herdr-pi", "detect"}, tc.args...),
			IO{In: strings.NewReader("x\n"), Out: &out, Err: &errb, Env: env})
		first, _, _ := strings.Cut(errb.String(), "\n")
		if code != 2 || !strings.HasPrefix(first, tc.says) || len(first) > 400 || out.Len() != 0 {
			t.Errorf("detect %.40q: exit %d, stdout %d bytes, stderr %.300q; want 2 and %q", tc.args, code, out.Len(), errb.String(), tc.says)
		}
	}
}

// detect --json that fails still prints one object on stdout, in the
// verdict's format with an error object instead of the verdict
// (docs/detect.md), so a script piping it to jq reads why; stderr says it
// in words as without --json, and the exit status stays 1 (2 for a usage
// mistake). The schema is no formality: an error with a code it does not
// list fails it.
func TestDetectJSONFailuresPrintTheFailureObject(t *testing.T) {
	schema := compileSchema(t, "detect")
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HERDR_PI_LOG=off"}
	broken := filepath.Join(dir, "broken.toml")
	if err := os.WriteFile(broken, []byte("id = \"broken\"\n[[rules]]\nstate = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		exit int
		code string
	}{
		{[]string{"--json", "--agent", "nosuch"}, 1, "no_manifest"},
		{[]string{"--json", empty}, 1, "unreadable_input"},
		{[]string{"--json", "--manifest", dir}, 1, "unreadable_manifest"},
		{[]string{"--json", "--manifest", broken}, 1, "unreadable_manifest"},
		{[]string{"--json", filepath.Join(dir, "no-such-screen")}, 1, "unreadable_input"},
		{[]string{"--json", dir}, 1, "unreadable_input"},
		{[]string{"--json", "--size", "40x120"}, 2, "usage"},
		{[]string{"--json", "a", "b"}, 2, "usage"},
	} {
		var out, errb bytes.Buffer
		exit := Main(context.Background(), append([]string{"herdr-pi", "detect"}, tc.args...),
			IO{In: strings.NewReader("x\n"), Out: &out, Err: &errb, Env: env})
		if exit != tc.exit || !strings.HasPrefix(errb.String(), "herdr-pi") {
			t.Errorf("detect %q: exit %d, stderr %q; want %d and why on stderr", tc.args, exit, errb.String(), tc.exit)
		}
		validate(t, schema, out.String())
		var got struct {
			Format string
			Error  struct{ Code, Message string }
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Format != render.DetectFormat || got.Error.Code != tc.code || got.Error.Message == "" {
			t.Errorf("detect %q: stdout %q (%v); want format %s and code %s", tc.args, out.String(), err, render.DetectFormat, tc.code)
		}
	}
	for _, doc := range docExamples(t, "detect") {
		validate(t, schema, doc)
	}
	unknown := `{"format": "herdr-pi.detect/1", "error": {"code": "no_run", "message": "x"}}`
	if inst, err := jsonschema.UnmarshalJSON(strings.NewReader(unknown)); err != nil || schema.Validate(inst) == nil {
		t.Errorf("a failure with code no_run validates (%v)", err)
	}
}

// --size is the shadow screen --raw input is drawn on; without --raw it
// would be ignored, silently, so it is a usage mistake that names --raw.
// With --raw it works, before or after FILE.
func TestDetectSizeWithoutRawIsAMistake(t *testing.T) {
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HERDR_PI_LOG=off"}
	for _, args := range [][]string{{"--size", "40x120", "-"}, {"-", "--size", "40x120"}} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), append([]string{"herdr-pi", "detect"}, args...),
			IO{In: strings.NewReader("x\n"), Out: &out, Err: &errb, Env: env})
		if code != 2 || out.Len() != 0 || !strings.HasPrefix(errb.String(), "herdr-pi detect: --size is the shadow screen for --raw input: add --raw") {
			t.Errorf("detect %q: exit %d, stdout %q, stderr %q; want 2 and a message naming --raw", args, code, out.String(), errb.String())
		}
	}
	for _, args := range [][]string{{"--raw", "--size", "40x120", "-"}, {"-", "--size", "40x120", "--raw"}} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), append([]string{"herdr-pi", "detect"}, args...),
			IO{In: strings.NewReader("x\r\n"), Out: &out, Err: &errb, Env: env})
		if code != 0 || !strings.HasPrefix(out.String(), "state: ") {
			t.Errorf("detect %q: exit %d, stdout %q, stderr %q; want a verdict", args, code, out.String(), errb.String())
		}
	}
}

// A file detect cannot read is named in the error, once, clipped when its
// path is long (one may be 4 KiB), so the reason stays in view on one line.
func TestDetectNamesAFileItCannotReadInOneLine(t *testing.T) {
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HERDR_PI_LOG=off"}
	long := filepath.Join(dir, strings.Repeat("x", 200), strings.Repeat("y", 200), "screen.txt")
	for link, target := range map[string]string{"loop": "loop", "nowhere": "gone.txt"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{long}, []string{"herdr-pi detect: " + dir, "… (", " bytes): no such file: give the file that holds the screen"}},
		{[]string{"--manifest", long, "-"}, []string{"herdr-pi detect: " + dir, "… (", " bytes): does not exist"}},
		// A directory is named once, with what to give instead.
		{[]string{dir}, []string{"herdr-pi detect: " + dir + " is a directory: give a screen file\n"}},
		// Each way a path can fail says what to do about it.
		{[]string{filepath.Join(dir, "pi")}, []string{"pi: no such file: give the file that holds the screen, or pipe the screen in", "--agent, not FILE, names the agent"}},
		{[]string{filepath.Join(dir, "loop")}, []string{"loop: too many levels of symbolic links; a symlink on the way leads back to itself"}},
		{[]string{filepath.Join(dir, "plain", "screen.txt")}, []string{"screen.txt: cannot read: " + dir + "/plain is a file, not a directory; move it away or rename it"}},
		{[]string{filepath.Join(dir, "nowhere")}, []string{"nowhere: is a symlink to gone.txt, which does not exist; point it at the screen file"}},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), append([]string{"herdr-pi", "detect"}, tc.args...),
			IO{In: strings.NewReader("x\n"), Out: &out, Err: &errb, Env: env})
		msg := errb.String()
		if code != 1 || strings.Count(msg, "\n") != 1 || len(msg) > 300 || out.Len() != 0 {
			t.Errorf("detect %.60q: exit %d, stdout %d bytes, stderr %q; want 1 and one short line", tc.args, code, out.Len(), msg)
		}
		for _, want := range tc.says {
			if !strings.Contains(msg, want) {
				t.Errorf("detect %.60q: stderr %q lacks %q", tc.args, msg, want)
			}
		}
		path := tc.args[0]
		if path == "--manifest" {
			path = tc.args[1]
		}
		if n := strings.Count(msg, fmt.Sprint(clipArg(path))); n != 1 {
			t.Errorf("detect %.60q: stderr %q names the path %d times", tc.args, msg, n)
		}
	}
}

// terminalStdin stands in for a terminal on stdin: whatever reads it would
// wait for a person to type, so it counts the reads instead, and gives
// what the person typed (typed, then Ctrl-D).
type terminalStdin struct {
	reads int
	typed string
}

func (t *terminalStdin) Read(p []byte) (int, error) {
	t.reads++
	n := copy(p, t.typed)
	t.typed = t.typed[n:]
	if n > 0 {
		return n, nil
	}
	return 0, io.EOF
}
func (t *terminalStdin) IsTerminal() bool { return true }
func (t *terminalStdin) Size() (int, int) { return 24, 80 }

// detect with no FILE on a terminal would wait, saying nothing, for a
// screen nobody knows to type; it is a usage mistake that says how to give
// one, and stdin is never read (with --json, the failure object says it on
// stdout too). "-" is asking for the terminal, and reads it.
func TestDetectWithoutInputOnATerminalSaysSoInsteadOfWaiting(t *testing.T) {
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HERDR_PI_LOG=off"}
	for _, args := range [][]string{{}, {"--json"}} {
		in := &terminalStdin{}
		var out, errb bytes.Buffer
		code := Main(context.Background(), append([]string{"herdr-pi", "detect"}, args...),
			IO{In: in, Out: &out, Err: &errb, Env: env})
		wantOut := ""
		if len(args) > 0 {
			wantOut = "{\n  \"format\": \"herdr-pi.detect/1\",\n  \"error\": {\n    \"code\": \"usage\",\n    \"message\": \"no screen to read: give a FILE, or pipe one in"
		}
		if code != 2 || in.reads != 0 || !strings.HasPrefix(out.String(), wantOut) || (wantOut == "" && out.Len() != 0) ||
			!strings.HasPrefix(errb.String(), "herdr-pi detect: no screen to read: give a FILE, or pipe one in") {
			t.Errorf("detect %q on a terminal: exit %d, %d reads, stdout %q, stderr %q; want 2, no read and the way out",
				args, code, in.reads, out.String(), errb.String())
		}
	}
	in := &terminalStdin{typed: " The row shows Working... while busy\n"}
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"herdr-pi", "detect", "-"}, IO{In: in, Out: &out, Err: &errb, Env: env})
	if code != 0 || in.reads == 0 || !strings.HasPrefix(out.String(), "state: ") {
		t.Errorf("detect - on a terminal: exit %d, %d reads, stdout %q, stderr %q; want it read", code, in.reads, out.String(), errb.String())
	}
}

// Every example in detect --help runs as written, given the files it
// names: a person copies them, and one that names a manifest nobody has
// (claude is not built in) fails on first try.
func TestDetectHelpExamplesRunAsWritten(t *testing.T) {
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HERDR_PI_LOG=off"}
	screenText := " ⠸ Working...\n\n────\n\n────\n~/proj\n"
	pi, err := os.ReadFile(filepath.Join("..", "..", "..", "pane", "detect", "manifests", "pi.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// The names the examples use, as the files a person would have.
	files := map[string]string{
		"screen.txt":  screenText,
		"./mine.toml": strings.Replace(string(pi), `id = "pi"`, `id = "mine"`, 1),
		"session.raw": "\x1b]0;π - proj\x07── ⠼ Working ───\r\n",
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.Base(name))
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	var help bytes.Buffer
	Main(context.Background(), []string{"herdr-pi", "detect", "--help"}, IO{In: strings.NewReader(""), Out: &help, Err: &help, Env: env})
	_, examples, ok := strings.Cut(help.String(), "Examples:\n")
	if !ok {
		t.Fatalf("detect --help has no examples:\n%s", help.String())
	}
	examples, _, _ = strings.Cut(examples, "\n\n")
	ran := 0
	for line := range strings.Lines(examples) {
		line = strings.TrimSpace(line)
		stdin := ""
		if producer, cmd, piped := strings.Cut(line, " | "); piped {
			if producer != "tmux capture-pane -p" {
				t.Fatalf("example %q: unknown producer %q", line, producer)
			}
			line, stdin = cmd, screenText
		}
		words := shellWords(t, line)
		if len(words) < 2 || words[0] != "herdr-pi" || words[1] != "detect" {
			t.Fatalf("example %q is not a detect command", line)
		}
		for i, w := range words {
			if p, ok := files[w]; ok {
				words[i] = p
			}
		}
		var out, errb bytes.Buffer
		code := Main(context.Background(), words, IO{In: strings.NewReader(stdin), Out: &out, Err: &errb, Env: env})
		if code != 0 || !strings.Contains(out.String(), "state") || errb.Len() != 0 {
			t.Errorf("example %q: exit %d, stdout %q, stderr %q; want a verdict", line, code, out.String(), errb.String())
		}
		ran++
	}
	if ran < 3 {
		t.Fatalf("only %d examples found in:\n%s", ran, examples)
	}
}

// shellWords splits an example command line as sh would, for the plain
// words and single quotes examples use.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("\"\\$`", r):
			t.Fatalf("example %q: %q is more shell than this test reads", line, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("example %q: unclosed quote", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// docs/detect.md's examples are what detect prints for the command the
// text example shows: the text byte for byte, and the JSON (without the
// screen --raw adds). A pattern shows as pi.toml writes it, backslashes
// once, in the text and (JSON-escaped once) in the JSON.
func TestDetectDocExamplesAreWhatItPrints(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "detect.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(md), "```\n$ herdr-pi detect ")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/detect.md has no text example")
	}
	cmdline, want, _ := strings.Cut(block, "\n")
	args := strings.Fields(cmdline)
	for i, a := range args {
		if strings.HasPrefix(a, "e2e/") {
			args[i] = filepath.Join("..", "..", "..", a)
		}
	}
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HERDR_PI_LOG=off"}
	detect := func(extra ...string) string {
		var out, errb bytes.Buffer
		argv := append(append([]string{"herdr-pi", "detect"}, extra...), args...)
		if code := Main(context.Background(), argv, IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: env}); code != 0 {
			t.Fatalf("%q: exit %d: %s", argv, code, errb.String())
		}
		return out.String()
	}
	if got := detect(); got != want {
		t.Errorf("detect %s prints\n%s\ndocs/detect.md shows\n%s", cmdline, got, want)
	}
	if !strings.Contains(want, `line_regex '^─+ [\x{2801}-\x{28FF}] \S'`) {
		t.Errorf("the text example no longer shows busy_border's pattern as pi.toml writes it:\n%s", want)
	}
	var got, doc map[string]any
	if err := json.Unmarshal([]byte(detect("--json")), &got); err != nil {
		t.Fatal(err)
	}
	delete(got, "screen")
	if err := json.Unmarshal([]byte(docExample(t, "detect")), &doc); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, doc) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("detect --json %s prints (without screen)\n%s\ndocs/detect.md shows\n%s", cmdline, g, docExample(t, "detect"))
	}
}

// A path the person named (HERDR_PI_CONFIG, detect --manifest) that is a
// directory or a FIFO is theirs, not herdr-pi's to have removed: the way
// out is to name a file instead. "put a file there, or remove it" sent
// them to remove /tmp for HERDR_PI_CONFIG=/tmp.
func TestANamedSettingsPathThatIsNoFileIsNotToBeRemoved(t *testing.T) {
	dir := t.TempDir()
	screen := filepath.Join(dir, "screen.txt")
	if err := os.WriteFile(screen, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, named := range []string{dir, fifo} {
		e := newCmdEnv(t)
		code, _, errOut := run(t, e.env, "detect", "--manifest", named, screen)
		if code != 1 || strings.Contains(errOut, "remove it") || !strings.Contains(errOut, named+": ") || !strings.Contains(errOut, "name a regular file in --manifest instead") {
			t.Errorf("detect --manifest %s: exit %d, %q; want 1, naming it, and the way out: name a regular file in --manifest instead", named, code, errOut)
		}
		e = newCmdEnv(t, "HERDR_PI_CONFIG="+named)
		code, _, errOut = run(t, e.env, "detect", screen)
		if code != 0 || strings.Contains(errOut, "remove it") || !strings.Contains(errOut, named+": ") || !strings.Contains(errOut, "point HERDR_PI_CONFIG at your config file") {
			t.Errorf("HERDR_PI_CONFIG=%s detect: exit %d, %q; want 0, naming it, and the way out: point HERDR_PI_CONFIG at your config file", named, code, errOut)
		}
	}
}

// A user manifest with problems under a name no manifest is built in as
// (claude.toml) has nothing to fall back on: detect must not claim the
// built-in one is used, nor tell the person to add the file they have.
func TestDetectBrokenManifestWithoutABuiltIn(t *testing.T) {
	e := newCmdEnv(t)
	dir := filepath.Join(settings.Resolve(settings.EnvFrom(e.env)).ManifestDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "claude.toml"), []byte("id = \"claude\"\n[[rules]]\nid = \"x\"\nstate = \"sleepy\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, e.env, "detect", "--agent", "claude")
	for _, bad := range []string{"using the built-in manifest", "add "} {
		if strings.Contains(errOut, bad) {
			t.Errorf("stderr says %q:\n%s", bad, errOut)
		}
	}
	for _, want := range []string{"manifest problems, ignoring these files (no manifest is built in as claude):",
		"claude.toml:4:", "no manifest for agent \"claude\": fix ~/config/herdr-pi/manifests/claude.toml (its problems are above)"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, errOut)
		}
	}
}

// A --manifest file that is not there is a path mistyped, or a file in
// another directory: the error says where it looked and the way out, not
// only "does not exist".
func TestDetectMissingManifestSaysTheWayOut(t *testing.T) {
	e := newCmdEnv(t)
	code, _, errOut := run(t, e.env, "detect", "--manifest", "nope.toml")
	cwd, _ := os.Getwd()
	want := "herdr-pi detect: nope.toml: does not exist (looked in " + cwd + "): give the path of a manifest file, or leave --manifest out to use the installed manifests\n"
	if code != 1 || errOut != want {
		t.Errorf("exit %d, stderr\n%q\nwant 1 and\n%q", code, errOut, want)
	}
}

// Input past detect's limit (/dev/zero, a log given for a screen) is
// refused with the way out, not only the limit: a screen capture is a few
// KiB, so the person gave the wrong thing.
func TestDetectInputTooLargeSaysWhatToGive(t *testing.T) {
	_, err := readAllLimited(strings.NewReader(strings.Repeat("x", 2<<20+1)), 2<<20)
	if err == nil || !strings.Contains(err.Error(), "larger than 2 MiB") || !strings.Contains(err.Error(), "tmux capture-pane -p") {
		t.Fatalf("err %v, want the limit and what to give instead", err)
	}
}
